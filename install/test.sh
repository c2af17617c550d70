#!/usr/bin/env bash
# Runs every check and test of the project: formatting, clippy with warnings as errors, the
# cargo tests (unit, conformance, placement, API, CLI, doc tests), then the kernel driven through
# a real Jupyter client (pytest + jupyter_client + jupyter_kernel_test) using the binary the
# cargo tests just built. One cargo profile (dev) is built once and reused by every step.
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== cargo fmt --check"
cargo fmt --all -- --check
echo "== cargo clippy (warnings are errors)"
cargo clippy --workspace --all-targets --locked -- -D warnings
echo "== cargo test"
cargo test --workspace --locked
echo "== python environment (.venv from install/requirements.txt)"
bash install/python-env.sh
echo "== kernel tests through jupyter_client"
TENSORBOOK_BIN="$PWD/target/debug/tensorbook" .venv/bin/python -m pytest tests -v -p no:cacheprovider
