"""torch's figures for the products the GPU check times, on the same GPU in the same run.

The blog's product {10000, 784} x {784, 10} f32 on cuda:0: launch only (until the call
returns), synchronised (until the result is ready, as tensorbook's `bench::measure` times it)
and with the copy back to the host; the same product timed with CUDA events (device time
alone); the five-op chain sigmoid(x * y + 0.5) * 2 - y over 10M f32, eager; and the eager
ops step's sort, argsort, gather and scatter-add rows.

Usage: python3 torch_reference.py OUT.json
"""
import json
import statistics
import sys
import time


def wall(fn, runs, warmup=5):
    import torch

    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(runs):
        torch.cuda.synchronize()
        start = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        times.append(time.perf_counter() - start)
    return times


def launch_only(fn, runs):
    import torch

    times = []
    for _ in range(runs):
        torch.cuda.synchronize()
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
        torch.cuda.synchronize()
    return times


def events(fn, runs):
    import torch

    times = []
    for _ in range(runs):
        begin = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        begin.record()
        fn()
        end.record()
        end.synchronize()
        times.append(begin.elapsed_time(end) / 1e3)
    return times


def row(label, times):
    us = [t * 1e6 for t in times]
    median = statistics.median(us)
    print(f"{label}: median {median:.1f} µs, min {min(us):.1f} µs over {len(us)} runs")
    return {"label": label, "median_us": median, "min_us": min(us), "runs_us": us}


def main(out_file):
    try:
        import torch
    except ImportError as e:
        print(f"no torch here: {e}")
        return 1
    if not torch.cuda.is_available():
        print("torch sees no GPU")
        return 1
    device = torch.device("cuda:0")
    print(f"torch {torch.__version__} (CUDA {torch.version.cuda}) on {torch.cuda.get_device_name(0)}")
    gen = torch.Generator().manual_seed(42)
    x = torch.rand(10000, 784, generator=gen).to(device)
    w = (torch.randn(784, 10, generator=gen) * 0.05).to(device)
    runs = 50
    figures = {
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "device": torch.cuda.get_device_name(0),
        "dot": {
            "launch_only": row("torch dot, launch only", launch_only(lambda: x @ w, runs)),
            "synchronised": row("torch dot, synchronised", wall(lambda: x @ w, runs)),
            "with_copy_back": row("torch dot + copy back", wall(lambda: (x @ w).cpu(), runs)),
            "cuda_events": row("torch dot, CUDA events", events(lambda: x @ w, runs)),
        },
    }
    a = torch.rand(10_000_000, generator=gen).to(device) * 2 - 1
    b = torch.rand(10_000_000, generator=gen).to(device) * 1.5 + 0.5
    chain = lambda: torch.sigmoid(a * b + 0.5) * 2 - b
    figures["chain5_10M_eager"] = row("torch chain5 f32 10M eager, synchronised", wall(chain, 20))
    # The eager ops step's sorting and indexed rows, the same sizes (gpu_check.rs).
    order = torch.argsort(a, stable=True)
    bins = ((a + 1) * 500).floor().long()
    ones = torch.ones_like(a)
    figures["ops"] = {
        "sort_10M": row("torch sort of 10M, one line", wall(lambda: torch.sort(a), 20)),
        "argsort_rows": row(
            "torch argsort [10000][784] axis 1 (stable)",
            wall(lambda: torch.argsort(x, dim=1, stable=True), 20),
        ),
        "gather_10M": row("torch take_along_dim 10M", wall(lambda: torch.take_along_dim(a, order), 20)),
        "scatter_add_10M": row(
            "torch scatter_add 10M into 1000 bins",
            wall(lambda: torch.zeros(1001, device=device).scatter_add_(0, bins, ones), 20),
        ),
    }
    with open(out_file, "w") as f:
        json.dump(figures, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "torch.json"))
