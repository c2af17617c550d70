#!/usr/bin/env bash
# The GPU check, run where the GPU is (no Rust toolchain needed): the cuda test suites, the
# program that performs notebook 02's and 04's GPU steps and the benchmark rows, and torch's
# figures for the same products on the same GPU in the same run. Everything it finds goes into
# one folder (at most 8 files, 2 levels deep), to bring back:
#   environment.txt  what was found: nvidia-smi, the loader's CUDA libraries, torch, clients
#   summary.txt      one line per suite: passed, failed or skipped (with the reason)
#   suites.log       the suites' own output
#   figures.txt/json the GPU steps and benchmark rows (gpu_check)
#   torch.txt/json   torch's reference figures
# Without a GPU every suite is reported skipped with the reason and the exit status is 0.
# Usage: bash run.sh [REPORT_DIR]   (default: ./gpu-report)
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${1:-$PWD/gpu-report}
mkdir -p "$out"
out=$(cd "$out" && pwd)
python=${PYTHON:-python3}
# The bundle carries its binaries xz-packed (bin/NAME.xz); they are unpacked here for this run,
# by xz or else Python's lzma. A bundle with plain binaries is run as it is.
bin="$here/bin"
if compgen -G "$here/bin/*.xz" > /dev/null; then
    bin=$(mktemp -d)
    trap 'rm -rf "$bin"' EXIT
    for packed in "$here"/bin/*.xz; do
        name=$(basename "$packed" .xz)
        if command -v xz > /dev/null; then
            xz -dc "$packed" > "$bin/$name"
        else
            "$python" -c 'import lzma, shutil, sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2], "wb"))' "$packed" "$bin/$name"
        fi || { echo "run.sh: cannot unpack $packed" >&2; exit 1; }
        chmod +x "$bin/$name"
    done
fi
: > "$out/summary.txt"
: > "$out/suites.log"

{
    echo "== date, host"; date -u; uname -srm
    echo "== nvidia-smi"; nvidia-smi 2>&1 || echo "nvidia-smi: not available"
    echo "== CUDA libraries on the loader's path"
    ldconfig -p 2>/dev/null | grep -E 'libcuda\.so|libcublas|libnvrtc|libnccl' || echo "(none)"
    echo "== python and torch"
    "$python" -c 'import sys; print(sys.executable, sys.version.split()[0])
try:
    import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, "available", torch.cuda.is_available())
except Exception as e:
    print("torch:", e)' 2>&1 || echo "$python: not available"
} > "$out/environment.txt" 2>&1

"$bin/gpu_check" probe > "$out/clients.tmp" 2>&1
gpu=$?
{ echo "== tensorbook clients (as the bundle's binaries see them)"; cat "$out/clients.tmp"; } >> "$out/environment.txt"
reason=$(sed -n 's/^cuda  *absent  *-  *//p' "$out/clients.tmp" | head -1)
rm -f "$out/clients.tmp"

passed=0 failed=0 skipped=0
# record passed|failed|skipped LINE: one line of the summary, counted.
record() {
    case $1 in
        passed) passed=$((passed + 1)) ;;
        failed) failed=$((failed + 1)) ;;
        skipped) skipped=$((skipped + 1)) ;;
    esac
    echo "$2" >> "$out/summary.txt"
}
while read -r suite threads; do
    [ -n "$suite" ] || continue
    if [ "$gpu" -ne 0 ]; then
        record skipped "$suite: skipped (no GPU: ${reason:-cuda is unavailable})"
        continue
    fi
    echo "== $suite" >> "$out/suites.log"
    start=$(date +%s)
    # Each suite's counts come from its own output: a suite that crashes before its summary
    # line says so, instead of showing the previous suite's counts.
    own="$out/suite.tmp"
    timeout -k 10 420 "$bin/$suite" --include-ignored --test-threads="$threads" > "$own" 2>&1
    status=$?
    cat "$own" >> "$out/suites.log"
    result=$(grep '^test result:' "$own" | tail -1)
    rm -f "$own"
    [ -n "$result" ] || result="no test result: the suite ended before its summary"
    took=$(( $(date +%s) - start ))
    if [ "$status" -eq 0 ]; then
        record passed "$suite: passed ($took s; $result)"
    else
        record failed "$suite: failed (exit $status after $took s; $result)"
    fi
done < "$here/suites.txt"

# The GPU steps and the benchmark rows; without a GPU the program says so and exits 0.
if ! "$bin/gpu_check" run "$out/figures.json" > "$out/figures.txt" 2>&1; then
    record failed "gpu_check: failed (figures.txt says where)"
elif [ "$gpu" -eq 0 ]; then
    record passed "gpu_check: passed"
else
    record skipped "gpu_check: skipped (no GPU: ${reason:-cuda is unavailable})"
fi

if [ "$gpu" -eq 0 ]; then
    if "$python" "$here/torch_reference.py" "$out/torch.json" > "$out/torch.txt" 2>&1; then
        echo "torch reference: done" >> "$out/summary.txt"
    else
        echo "torch reference: did not run (torch.txt says why)" >> "$out/summary.txt"
    fi
else
    echo "torch reference: skipped (no GPU)" >> "$out/summary.txt"
fi

echo "$passed passed, $failed failed, $skipped skipped" >> "$out/summary.txt"
cat "$out/summary.txt"
echo "report: $out"
[ "$failed" -eq 0 ]
