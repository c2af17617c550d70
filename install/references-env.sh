#!/usr/bin/env bash
# Optional: creates (or refreshes) .venv-references, the benchmarks' reference libraries pinned
# in install/references-requirements.txt (JAX, PyTorch with its CUDA libraries: about 6 GB).
# `tensorbook bench train` and `bench conv` find it when run from the checkout
# (TENSORBOOK_REFERENCES_PYTHON or --python point them at another). Re-running it is cheap: it
# reinstalls only when the pins change.
set -euo pipefail
cd "$(dirname "$0")/.."

python=${PYTHON:-python3}
venv=.venv-references
stamp=$venv/.requirements.sha
want=$(sha256sum < install/references-requirements.txt | cut -d' ' -f1)
if [ -x "$venv/bin/python" ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
  exit 0
fi
"$python" -m venv "$venv"
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check \
  -r install/references-requirements.txt
echo "$want" > "$stamp"
"$venv/bin/python" -c 'import jax, torch; print("references:", "JAX", jax.__version__, "PyTorch", torch.__version__)'
