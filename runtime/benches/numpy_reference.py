"""numpy's figures for the shapes of `cargo bench -p tensorbook`, to be run in the same session.

    python3 -m venv /tmp/np && /tmp/np/bin/pip install numpy
    /tmp/np/bin/python runtime/benches/numpy_reference.py

Prints the median and the best of N runs, as milliseconds and as GFLOP/s (dot) or Gelem/s
(add, sum): criterion's estimate is a mean over its samples, so compare it with the median.
"""
import time

import numpy as np


def timings(f, runs):
    f()
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        f()
        times.append(time.perf_counter() - t)
    times.sort()
    return times[len(times) // 2], times[0]


def report(label, f, runs, work, unit):
    median, best = timings(f, runs)
    print(
        f"numpy {label}: median {median * 1e3:.3f} ms ({work / median / 1e9:.2f} {unit}), "
        f"best {best * 1e3:.3f} ms ({work / best / 1e9:.2f} {unit})"
    )


rng = np.random.default_rng(0)
for m, k, n, runs in [(10000, 784, 10, 50), (1024, 1024, 1024, 10), (2048, 2048, 2048, 5)]:
    a = rng.uniform(-1, 1, (m, k)).astype(np.float32)
    b = rng.uniform(-1, 1, (k, n)).astype(np.float32)
    report(f"dot_f32 {m}x{k}.{k}x{n}", lambda: a @ b, runs, 2 * m * n * k, "GFLOP/s")
x = rng.uniform(-1, 1, 10_000_000).astype(np.float32)
y = rng.uniform(-1, 1, 10_000_000).astype(np.float32)
report("add 10M f32", lambda: x + y, 20, 1e7, "Gelem/s")
report("sum 10M f32", lambda: x.sum(), 20, 1e7, "Gelem/s")
