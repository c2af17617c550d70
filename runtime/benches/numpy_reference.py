"""numpy's figures for the shapes of `cargo bench -p tensorbook`, to be run in the same session.

    python3 -m venv /tmp/np && /tmp/np/bin/pip install numpy
    /tmp/np/bin/python runtime/benches/numpy_reference.py

Prints the best of N runs as GFLOP/s (dot) or Gelem/s (add, sum), the same units criterion's
throughput reports.
"""
import time

import numpy as np


def best(f, runs):
    f()
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        f()
        times.append(time.perf_counter() - t)
    return min(times)


rng = np.random.default_rng(0)
for m, k, n, runs in [(10000, 784, 10, 50), (1024, 1024, 1024, 10), (2048, 2048, 2048, 5)]:
    a = rng.uniform(-1, 1, (m, k)).astype(np.float32)
    b = rng.uniform(-1, 1, (k, n)).astype(np.float32)
    t = best(lambda: a @ b, runs)
    print(f"numpy dot_f32 {m}x{k}.{k}x{n}: {t * 1e3:.3f} ms, {2 * m * n * k / t / 1e9:.1f} GFLOP/s")
x = rng.uniform(-1, 1, 10_000_000).astype(np.float32)
y = rng.uniform(-1, 1, 10_000_000).astype(np.float32)
t = best(lambda: x + y, 20)
print(f"numpy add 10M f32: {t * 1e3:.3f} ms, {1e7 / t / 1e9:.2f} Gelem/s")
t = best(lambda: x.sum(), 20)
print(f"numpy sum 10M f32: {t * 1e3:.3f} ms, {1e7 / t / 1e9:.2f} Gelem/s")
