#!/usr/bin/env bash
# Builds the GPU check bundle: the cuda test suites as stripped, xz-packed binaries, the program
# that performs notebook 02's and 04's GPU steps and the benchmark rows (runtime/examples/
# gpu_check.rs), torch's reference script and run.sh, which runs it all on a machine with a GPU
# and no Rust toolchain and writes one report folder (docs/gpu-check.md).
#
# Usage: bash install/gpu-bundle.sh [DIR]   (default: target/gpu-bundle; must stay under 64 MiB)
#
# The binaries are the dev profile's, the very ones `cargo test --workspace` built and ran (the
# runtime at opt-level 2, the `gemm` crate at 3, overflow checks on): install/test.sh packs them
# without building anything, where a release build of their own cost the test command five
# minutes on two cores. The cuda rows in `figures.txt` are the GPU's whichever profile drives it;
# its host rows are a dev build's.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-target/gpu-bundle}
limit=$((64 * 1024 * 1024))

suites=$(awk 'NF { print $1 }' install/gpu-check/suites.txt)
log=$(mktemp)
trap 'rm -f "$log"' EXIT
# The same command line as install/test.sh's build, so cargo finds everything fresh (`-p
# tensorbook` alone would resolve other features for shared dependencies and rebuild them); the
# JSON messages name each executable.
cargo test --workspace --locked --no-run --message-format=json > "$log"
# Each suite's test binary and the gpu_check example, as `name<TAB>path`.
executables=$(python3 -c '
import json, sys
for line in open(sys.argv[1]):
    if not line.startswith("{"):
        continue
    m = json.loads(line)
    target = m.get("target") or {}
    if m.get("reason") != "compiler-artifact" or not m.get("executable"):
        continue
    if not m.get("manifest_path", "").endswith("/runtime/Cargo.toml"):
        continue
    kinds = target.get("kind", [])
    if "test" in kinds or (kinds == ["example"] and target["name"] == "gpu_check"):
        print(target["name"] + "\t" + m["executable"])
' "$log")

rm -rf "$dir"
mkdir -p "$dir/bin"
for name in $suites gpu_check; do
    exe=$(printf '%s\n' "$executables" | awk -F'\t' -v n="$name" '$1 == n { print $2 }' | tail -1)
    [ -n "$exe" ] && [ -x "$exe" ] || { echo "gpu-bundle: no executable for $name" >&2; exit 1; }
    cp "$exe" "$dir/bin/$name"
done
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
