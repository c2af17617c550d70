#!/usr/bin/env bash
# Installs Debian's OpenBLAS, which host's large f32/f64 products call on CPUs without AVX2+FMA
# (host's own packed GEMM runs elsewhere) and which `tensorbook bench ops` times beside it (the
# runtime opens it at run time; see runtime/src/backend/host/blas.rs). On the project's 2-core
# AVX2 machine it runs 2048^3 f32 at ~180 GFLOP/s where the built-in gemm crate manages ~120.
# Without root and apt the runtime keeps the gemm crate, and says so in `tensorbook bench ops`.
set -euo pipefail
if ldconfig -p 2>/dev/null | grep 'libopenblas\.so\.0' >/dev/null; then
  exit 0
fi
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
  echo "install/blas.sh: cannot install OpenBLAS here (needs root and apt-get); host products use the gemm crate" >&2
  exit 0
fi
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends libopenblas0-pthread >/dev/null
echo "install/blas.sh: $(ldconfig -p | grep -m1 'libopenblas\.so\.0')"
