"""What keeping tensors through a restart costs (run by hand, not in CI).

    .venv/bin/python install/keep_overhead.py [--rounds 2] [--filter ""]

Runs `tensorbook::bench::ops` inside notebook cells, where tensors are allocated the way a
session allocates them, in two kernels: one with large host tensors in shared memory (the
default, what lets the kernel keep them) and one with TENSORBOOK_SHARED_HOST_MEMORY=0 (heap
memory, nothing kept). Rounds alternate between the two; each op's figure is its best median.
Also times a cell that binds a fresh 100 MB tensor, where the allocation itself shows.
"""
import argparse
import json
import os
import statistics
import time

from jupyter_client.manager import start_new_kernel

BENCH = """let report = tensorbook::bench::ops::run(&[Device::parse("host:0")?], {filter}, tensorbook::bench::Runs {{ warmup: 2, timed: 9 }}, Err("-".into()), &mut tensorbook::bench::Silent)?;
println!("OPS {{}}", report.to_json());"""
BIND = "let r = Tensor::full(1.0, DType::F32, &[25_000_000])?;"


def run(kc, code, timeout=1800):
    msg_id = kc.execute(code)
    out = []
    while True:
        msg = kc.get_iopub_msg(timeout=timeout)
        if msg["parent_header"].get("msg_id") != msg_id:
            continue
        if msg["msg_type"] == "stream":
            out.append(msg["content"]["text"])
        if msg["msg_type"] == "error":
            raise RuntimeError(msg["content"])
        if msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle":
            return "".join(out)


def measure(shared, filter_):
    env = dict(os.environ, TENSORBOOK_SHARED_HOST_MEMORY="1" if shared else "0")
    km, kc = start_new_kernel(kernel_name="tensorbook", startup_timeout=120, env=env)
    try:
        run(kc, "let warm = 1;")
        text = run(kc, BENCH.format(filter=json.dumps(filter_)))
        line = next(l for l in text.splitlines() if l.startswith("OPS "))
        ops = {row["op"]: row["seconds"][0] for row in json.loads(line[4:])["rows"]}
        binds = []
        for _ in range(10):
            t = time.monotonic()
            run(kc, BIND)
            binds.append(time.monotonic() - t)
        ops["cell binding a new 100 MB tensor (wall)"] = statistics.median(binds)
        return ops
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--filter", default="")
    args = parser.parse_args()
    best = {True: {}, False: {}}
    for _ in range(args.rounds):
        for shared in (False, True):
            for op, secs in measure(shared, args.filter).items():
                if isinstance(secs, float):
                    best[shared][op] = min(secs, best[shared].get(op, secs))
    print(f"{'op':<45} {'heap ms':>10} {'shared ms':>10} {'shared/heap':>12}")
    for op, heap in best[False].items():
        shared = best[True].get(op)
        if shared is None:
            continue
        print(f"{op:<45} {heap * 1e3:>10.2f} {shared * 1e3:>10.2f} {shared / heap:>12.3f}")


if __name__ == "__main__":
    main()
