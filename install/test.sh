#!/usr/bin/env bash
# Runs every check and test of the project: formatting, clippy with warnings as errors, and the
# whole cargo test suite (unit, conformance, placement, API, doc tests). One cargo profile (dev,
# with optimised dependencies, see Cargo.toml) is built once and reused by every step.
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== cargo fmt --check"
cargo fmt --all -- --check
echo "== cargo clippy (warnings are errors)"
cargo clippy --workspace --all-targets --locked -- -D warnings
echo "== cargo test"
cargo test --workspace --locked
