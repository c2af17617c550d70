"""Kernel latency, measured the way a person feels it (run by hand, not in CI).

    .venv/bin/python install/latency.py [--kernel tensorbook] [--cells 30] [--json] [--only complete]

Measures, each through jupyter_client against an installed kernelspec:
  start      process start -> kernel_info reply
  first      first trivial cell of a session, sent as soon as kernel_info answers
  settled    first trivial cell of a fresh session sent --settle seconds after start (a person
             opening a notebook reads before running; what a kernel does meanwhile counts)
  trivial    p50 / p90 of N trivial cells after that
  tensor     first tensor cell of a fresh session (the runtime must not be rebuilt)
  loaded     p50 of N trivial cells in that session, once the runtime is a dependency (for
             evcxr_jupyter the like-for-like figure: its plain `trivial` cells link nothing)
  command    `:client` round trip (`:vars` for evcxr_jupyter)
  complete   a fresh session's Tab after `v.` (a Vec from the first cell), sent as soon as that
             cell answers: the first completion, the second, and p50 of N warm ones; once with
             the first cell sent at once, once --settle seconds after start
Run it once with `--kernel tensorbook` and once with `--kernel rust` (evcxr_jupyter,
`cargo install evcxr_jupyter && evcxr_jupyter --install`) on the same machine to compare.
"""
import argparse
import json
import pathlib
import statistics
import time

from jupyter_client.manager import KernelManager

RUNTIME = pathlib.Path(__file__).resolve().parent.parent / "runtime"
TENSOR_CELL = {
    "tensorbook": "let t = Tensor::iota(DType::F32, &[2, 3], None).unwrap(); t.to_string()",
    # evcxr_jupyter knows nothing of the runtime: the same cell must first pull it in, which is
    # what a person using evcxr_jupyter with tensorbook's runtime would do.
    "rust": f':dep tensorbook = {{ path = "{RUNTIME}" }}\n'
    "let t = tensorbook::Tensor::iota(tensorbook::DType::F32, &[2, 3], None).unwrap(); t.to_string()",
}
# The kernel command round trip: `:client` here; evcxr_jupyter's nearest is `:vars`.
COMMAND = {"tensorbook": ":client", "rust": ":vars"}


def execute(kc, code, timeout):
    msg_id = kc.execute(code)
    while True:
        reply = kc.get_shell_msg(timeout=timeout)
        if reply["parent_header"].get("msg_id") == msg_id:
            break
    while True:
        msg = kc.get_iopub_msg(timeout=timeout)
        if (
            msg["parent_header"].get("msg_id") == msg_id
            and msg["msg_type"] == "status"
            and msg["content"]["execution_state"] == "idle"
        ):
            break
    if reply["content"]["status"] != "ok":
        raise RuntimeError(f"cell failed: {code!r}: {reply['content']}")


def timed(fn):
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def complete(kc, code, timeout):
    msg_id = kc.complete(code, len(code))
    while True:
        reply = kc.get_shell_msg(timeout=timeout)
        if reply["parent_header"].get("msg_id") == msg_id:
            break
    matches = reply["content"].get("matches", [])
    if reply["content"]["status"] != "ok" or not matches:
        raise RuntimeError(f"no completion for {code!r}: {reply['content']}")


def session(name):
    km = KernelManager(kernel_name=name)
    start = time.perf_counter()
    km.start_kernel()
    kc = km.client()
    kc.start_channels()
    kc.kernel_info()
    kc.get_shell_msg(timeout=600)
    return km, kc, time.perf_counter() - start


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kernel", default="tensorbook")
    parser.add_argument("--cells", type=int, default=30)
    parser.add_argument("--settle", type=float, default=30.0)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--only", choices=["complete"], help="measure only the completions")
    args = parser.parse_args()
    # Any kernelspec but evcxr_jupyter's `rust` is a tensorbook one (`--name` may differ).
    flavour = "rust" if args.kernel == "rust" else "tensorbook"
    tensor_cell = TENSOR_CELL[flavour]

    result = {"kernel": args.kernel}
    if args.only is None:
        km, kc, start = session(args.kernel)
        first = timed(lambda: execute(kc, "let a = 1;", 900))
        trivial = sorted(timed(lambda i=i: execute(kc, f"let x{i} = {i} + 1;", 120)) for i in range(args.cells))
        command = timed(lambda: execute(kc, COMMAND[flavour], 60))
        kc.stop_channels()
        km.shutdown_kernel(now=True)

        # A fresh session whose first cell is a tensor cell.
        km, kc, _ = session(args.kernel)
        tensor = timed(lambda: execute(kc, tensor_cell, 900))
        loaded = sorted(timed(lambda i=i: execute(kc, f"let z{i} = {i} + 1;", 120)) for i in range(args.cells))
        kc.stop_channels()
        km.shutdown_kernel(now=True)

        # A fresh session whose first cell comes after a person's first look at the notebook.
        km, kc, _ = session(args.kernel)
        time.sleep(args.settle)
        settled = timed(lambda: execute(kc, "let a = 1;", 900))
        kc.stop_channels()
        km.shutdown_kernel(now=True)

    # A fresh session: one cell, then Tab at once, as a person who starts typing; first with
    # the cell sent as soon as the kernel answers, then after a first look at the notebook.
    tab = "let n = v."
    for settle in (0.0, args.settle):
        km, kc, _ = session(args.kernel)
        time.sleep(settle)
        execute(kc, "let v = vec![1, 2, 3];", 900)
        first_tab = timed(lambda: complete(kc, tab, 120))
        second_tab = timed(lambda: complete(kc, tab, 120))
        warm_tab = sorted(timed(lambda: complete(kc, tab, 120)) for _ in range(args.cells))
        kc.stop_channels()
        km.shutdown_kernel(now=True)
        when = "first_cell_at_once" if settle == 0 else f"first_cell_after_{settle:g}s"
        result |= {
            f"tab_{when}_first_s": first_tab,
            f"tab_{when}_second_s": second_tab,
            f"tab_{when}_warm_p50_s": statistics.median(warm_tab),
        }

    if args.only is None:
        result |= {
            "start_to_kernel_info_s": start,
            "first_cell_s": first,
            f"first_cell_after_{args.settle:g}s_s": settled,
            "trivial_p50_s": statistics.median(trivial),
            "trivial_p90_s": trivial[int(0.9 * (len(trivial) - 1))],
            "first_tensor_cell_fresh_session_s": tensor,
            "trivial_p50_runtime_loaded_s": statistics.median(loaded),
            "command_round_trip_s": command,
        }
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        for key, value in result.items():
            shown = f"{value * 1000:10.1f} ms" if isinstance(value, float) else value
            print(f"{key:<36} {shown}")


if __name__ == "__main__":
    main()
