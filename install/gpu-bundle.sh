#!/usr/bin/env bash
# Builds the GPU check bundle: the cuda test suites as stripped, gzipped release binaries, the program
# that performs notebook 02's and 04's GPU steps and the benchmark rows (runtime/examples/
# gpu_check.rs), torch's reference script and run.sh, which runs it all on a machine with a GPU
# and no Rust toolchain and writes one report folder (docs/gpu-check.md).
# Usage: bash install/gpu-bundle.sh [DIR]   (default: target/gpu-bundle; must stay under 64 MiB)
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-target/gpu-bundle}
limit=$((64 * 1024 * 1024))

suites=$(awk 'NF { print $1 }' install/gpu-check/suites.txt)
args=()
for suite in $suites; do args+=(--test "$suite"); done
log=$(mktemp)
trap 'rm -f "$log"' EXIT
cargo test --release --locked -p tensorbook --no-run "${args[@]}" 2>&1 | tee "$log" | grep -v '^ *Executable' || true
cargo build --release --locked -p tensorbook --example gpu_check

rm -rf "$dir"
mkdir -p "$dir/bin"
for suite in $suites; do
    # cargo names each test binary: `Executable tests/<suite>.rs (target/release/deps/<suite>-<hash>)`.
    exe=$(sed -n "s|^ *Executable tests/$suite\.rs (\(.*\))\$|\1|p" "$log" | tail -1)
    [ -n "$exe" ] && [ -x "$exe" ] || { echo "gpu-bundle: no test binary for $suite" >&2; exit 1; }
    cp "$exe" "$dir/bin/$suite"
done
cp target/release/examples/gpu_check "$dir/bin/gpu_check"
strip "$dir"/bin/*
# Packed: each binary carries the whole runtime (the op set's loops for every dtype), so the
# sixteen of them are 340 MB; xz takes each to about a seventh (gzip -9 to a quarter: 70 MiB,
# over the limit, once c64/c128 joined the loops), two at a time. run.sh unpacks them. Preset 1,
# not 6: on grad's 21.5 MB binary 0.66 s instead of 5.6 s for 3.52 MB instead of 3.19 (the
# bundle about 10% larger, its packing over half a minute shorter on two cores).
if command -v xz > /dev/null; then
    printf '%s\0' "$dir"/bin/* | xargs -0 -n1 -P2 xz -1 -T1
else
    for f in "$dir"/bin/*; do
        python3 -c 'import lzma, os, sys; open(sys.argv[1] + ".xz", "wb").write(lzma.compress(open(sys.argv[1], "rb").read(), preset=1)); os.remove(sys.argv[1])' "$f"
    done
fi
cp install/gpu-check/run.sh install/gpu-check/torch_reference.py install/gpu-check/suites.txt "$dir/"

size=$(du -sb "$dir" | cut -f1)
echo "gpu-bundle: $dir, $((size / 1024 / 1024)) MiB ($size bytes; the limit is $limit)"
if [ "$size" -ge "$limit" ]; then
    echo "gpu-bundle: over 64 MiB" >&2
    exit 1
fi
