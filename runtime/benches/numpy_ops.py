"""numpy's side of `tensorbook bench ops` and `bench jit`, run by the tensorbook binary (which
carries this file) with the project's Python. The same work as the Rust side: operands drawn
once, one warm-up run, then timed runs; `sigmoid` written as numpy users write it.

Run with `--serve`: prints {"numpy": version} and answers commands on stdin, one per line, so
that numpy times each row when the Rust side asks (bench ops: right after its own runs of the
row): `case NAME` draws the operands and makes the warm-up run, answering `ready` (or
`unknown`); `run` times one run and answers its seconds."""
import json
import sys
import time

import numpy as np

M = 10_000_000
rng = np.random.default_rng(0)


def uniform(shape, lo, hi, dtype=np.float32):
    return rng.uniform(lo, hi, shape).astype(dtype)


def dot(m, k, n, dtype=np.float32):
    a, b = uniform((m, k), -1, 1, dtype), uniform((k, n), -1, 1, dtype)
    return lambda: a @ b


def binary(op, dtype=np.float32):
    x, y = uniform(M, -1, 1, dtype), uniform(M, 0.5, 2, dtype)
    return lambda: op(x, y)


def unary(op, lo, hi):
    x = uniform(M, lo, hi)
    return lambda: op(x)


def unary_2d(op, shape):
    x = uniform(shape, -1, 1)
    return lambda: op(x)


def bfloat16():
    """ml_dtypes' bfloat16 (what JAX computes bf16 in on a CPU, as a numpy dtype)."""
    import ml_dtypes

    return ml_dtypes.bfloat16


def logsumexp(x):
    """scipy's logsumexp where scipy is installed (it is in the project's environment), else
    the same max-shifted formula in numpy."""
    try:
        from scipy.special import logsumexp as scipy_logsumexp
    except ImportError:
        m = np.max(x)
        return m + np.log(np.sum(np.exp(x - m)))
    return scipy_logsumexp(x)


def erf(x):
    from scipy.special import erf as scipy_erf

    return scipy_erf(x)


CASES = {
    "dot f32 {10000,784}x{784,10}": lambda: dot(10000, 784, 10),
    "dot f32 1024^3": lambda: dot(1024, 1024, 1024),
    "dot f32 2048^3": lambda: dot(2048, 2048, 2048),
    "dot f64 1024^3": lambda: dot(1024, 1024, 1024, np.float64),
    "stream {10000,784} f32 once (sum)": lambda: unary_2d(np.sum, (10000, 784)),
    "add f32 10M": lambda: binary(np.add),
    "multiply f32 10M": lambda: binary(np.multiply),
    "divide f32 10M": lambda: binary(np.divide),
    "add f64 10M": lambda: binary(np.add, np.float64),
    "exp f32 10M": lambda: unary(np.exp, -10, 10),
    "log f32 10M": lambda: unary(np.log, 1e-3, 1e3),
    "tanh f32 10M": lambda: unary(np.tanh, -5, 5),
    "sigmoid f32 10M": lambda: unary(lambda x: 1 / (1 + np.exp(-x)), -10, 10),
    "sum f32 10M": lambda: unary(np.sum, -1, 1),
    "reduce_max f32 10M": lambda: unary(np.max, -1, 1),
    "argmax f32 10M": lambda: unary(np.argmax, -1, 1),
    "as_type f32->f64 10M": lambda: unary(lambda x: x.astype(np.float64), -1, 1),
    "cumulative_sum f32 10M": lambda: unary(np.cumsum, -1, 1),
    "logsumexp f32 10M": lambda: unary(logsumexp, -10, 10),
    "erf f32 10M (scipy)": lambda: unary(erf, -3, 3),
    "sort f32 10M": lambda: unary(np.sort, -1, 1),
    "argsort f32 10M (stable)": lambda: unary(lambda x: np.argsort(x, kind="stable"), -1, 1),
    "sort f32 {10000,784} axis 1": lambda: unary_2d(lambda x: np.sort(x, axis=1), (10000, 784)),
    "take_along_axis f32 10M": lambda: (lambda x, i: lambda: np.take_along_axis(x, i, 0))(
        uniform(M, -1, 1), np.argsort(uniform(M, -1, 1), kind="stable")
    ),
    # indexed_add's numpy spelling: np.add.at (unbuffered, repeated positions add up).
    "indexed_add f32 10M into 1000 bins": lambda: (
        lambda bins, ones: lambda: np.add.at(np.zeros(1000, np.float32), bins, ones)
    )(np.floor(uniform(M, 0, 1000)).astype(np.int64), np.ones(M, np.float32)),
    # bench jit's chain: sigmoid(x * y + 0.5) * 2 - y, as numpy users write it.
    "chain5 f32 10M": lambda: (lambda x, y: lambda: (1 / (1 + np.exp(-(x * y + 0.5)))) * 2 - y)(
        uniform(M, -1, 1), uniform(M, 0.5, 2)
    ),
    # Half precision: numpy's float16 and ml_dtypes' bfloat16 (each computes through f32).
    "dot f16 512^3": lambda: dot(512, 512, 512, np.float16),
    "dot bf16 512^3 (ml_dtypes)": lambda: dot(512, 512, 512, bfloat16()),
    "add f16 10M": lambda: binary(np.add, np.float16),
    "add bf16 10M (ml_dtypes)": lambda: binary(np.add, bfloat16()),
    "exp f16 10M": lambda: (lambda x: lambda: np.exp(x))(uniform(M, -10, 10, np.float16)),
    "sum f16 10M": lambda: (lambda x: lambda: np.sum(x))(uniform(M, -1, 1, np.float16)),
    "as_type f32->f16 10M": lambda: unary(lambda x: x.astype(np.float16), -1, 1),
    "as_type f32->bf16 10M (ml_dtypes)": lambda: unary(lambda x: x.astype(bfloat16()), -1, 1),
    "transpose f32 10000x10000": lambda: (lambda a: lambda: np.ascontiguousarray(a.T))(
        uniform((10000, 10000), -1, 1)
    ),
}


def serve():
    print(json.dumps({"numpy": np.__version__}), flush=True)
    f = None
    for line in sys.stdin:
        command, _, name = line.rstrip("\n").partition(" ")
        if command == "case":
            f = None  # the previous case's operands go before the next one's are drawn
            if name in CASES:
                f = CASES[name]()
                f()
                print("ready", flush=True)
            else:
                print("unknown", flush=True)
        elif command == "run" and f is not None:
            start = time.perf_counter()
            f()
            print(repr(time.perf_counter() - start), flush=True)
        else:
            print("error: " + line.strip(), flush=True)


if __name__ == "__main__":
    if sys.argv[1:] != ["--serve"]:
        sys.exit("usage: numpy_ops.py --serve")
    serve()
