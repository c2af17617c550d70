#!/usr/bin/env bash
# Sets everything up and runs the main job. Today that is the blog's matmul comparison
# ({10000,784} x {784,10} on binary and host) in the terminal, after listing the clients this
# machine has; the notebooks and the Jupyter kernel join it as their issues land.
set -euo pipefail
cd "$(dirname "$0")/.."

cargo build --release --locked -p tensorbook-kernel -p tensorbook --examples
./target/release/tensorbook clients
./target/release/examples/blog_matmul
