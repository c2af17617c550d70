#!/usr/bin/env bash
# Sets everything up and runs the main job: builds tensorbook (release), creates the project's
# Python environment (.venv: JupyterLab, notebook, nbconvert, jupyter_client, pinned in
# install/requirements.txt), installs the "Rust (tensorbook)" kernelspec into that venv, shows
# the clients this machine has, and starts JupyterLab on notebooks/.
#   ./install/run.sh              JupyterLab on http://127.0.0.1:8888 (token printed)
#   ./install/run.sh --console    a terminal session with the kernel instead
#   ./install/run.sh --blog       the blog's matmul comparison in the terminal, then exit
set -euo pipefail
cd "$(dirname "$0")/.."

cargo build --release --locked -p tensorbook-kernel -p tensorbook --examples
bash install/python-env.sh
TENSORBOOK_PYTHON="$PWD/.venv/bin/python" ./target/release/tensorbook kernel install --sys-prefix
./target/release/tensorbook clients
export PATH="$PWD/.venv/bin:$PATH"
case "${1:-}" in
  --console) exec jupyter console --kernel tensorbook ;;
  --blog) exec ./target/release/examples/blog_matmul ;;
  *) exec jupyter lab --no-browser --ip 127.0.0.1 --notebook-dir notebooks ;;
esac
