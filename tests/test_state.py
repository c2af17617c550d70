"""A session keeps its tensors through mistakes: panics, compile errors, `?` errors and
interrupts (issue: cells that are fast and never lose their tensors)."""
import time

import pytest

from conftest import TIMEOUT, error_of, iopub_until_idle, run_cell, session_with, stdout_of, wait_printed

KEPT = "let kept = Tensor::iota(DType::F32, &[4], None)?;\nuse std::collections::BTreeMap;"


@pytest.fixture(scope="module")
def session():
    yield from session_with(KEPT)


def assert_kept(kc):
    reply, outputs = run_cell(kc, "kept")
    assert reply["content"]["status"] == "ok", reply["content"]
    text = [m for m in outputs if m["msg_type"] == "execute_result"][0]["content"]["data"]["text/plain"]
    assert "[0.0, 1.0, 2.0, 3.0]" in text and "Backend<host" in text, text


def test_a_panicking_cell_that_used_the_tensor(session):
    _, kc = session
    content = error_of(*run_cell(kc, 'let doubled = kept.add(&kept)?;\n  panic!("boom after {}", doubled.signature());'))
    assert content["ename"] == "Panic" and "boom after f32[4]" in content["evalue"], content
    # At the cell's own line and column, with its text, not a line of evcxr's src/lib.rs.
    report = "\n".join(content["traceback"])
    assert 'panicked at cell line 2, column 3: `panic!("boom after {}", doubled.signature());`' in report, report
    assert "src/lib.rs" not in report, report
    assert_kept(kc)


def test_an_unwrap_panic_names_its_cell_line(session):
    _, kc = session
    content = error_of(*run_cell(kc, 'let v = vec![1, 2];\nlet i = std::hint::black_box(5);\nlet picked = v.get(i).copied().unwrap();'))
    report = "\n".join(content["traceback"])
    assert "cell line 3, column" in report and "v.get(i).copied().unwrap()" in report, report
    assert_kept(kc)


CAUGHT = {
    "catch_unwind": 'let caught = std::panic::catch_unwind(|| { panic!("caught here") }).is_err();\n'
                    'println!("caught {caught}");',
    "joined thread": 'let caught = std::thread::spawn(|| { panic!("caught here") }).join().is_err();\n'
                     'println!("caught {caught}");',
}


def stderr_of(outputs):
    return "".join(m["content"]["text"] for m in outputs
                   if m["msg_type"] == "stream" and m["content"]["name"] == "stderr")


@pytest.mark.parametrize("how", list(CAUGHT))
def test_a_panic_the_cell_catches_leaves_it_ok(session, how):
    """The cell's outcome is decided at its boundary: a panic caught inside it is output (the
    panic hook's report, as plain Rust shows it), not the cell's failure."""
    _, kc = session
    reply, outputs = run_cell(kc, CAUGHT[how])
    assert reply["content"]["status"] == "ok", reply["content"]
    assert "caught true" in stdout_of(outputs), outputs
    assert "panicked" in stderr_of(outputs) and "caught here" in stderr_of(outputs), outputs
    assert not [m for m in outputs if m["msg_type"] == "error"], outputs
    assert_kept(kc)


def test_a_panic_after_a_caught_one_is_the_cells_error(session):
    _, kc = session
    code = CAUGHT["catch_unwind"] + '\npanic!("not caught");'
    content = error_of(*run_cell(kc, code))
    assert content["ename"] == "Panic" and "not caught" in content["evalue"], content
    assert "caught here" not in content["evalue"], content
    assert_kept(kc)


def test_a_serving_whose_partition_panics_returns_an_error_the_cell_handles(session):
    """A partition's panic is that device's error (Serving's documented contract); a cell that
    handles the error is ok."""
    _, kc = session
    code = '''tensorbook::set_sim_device_count(2);
let flaky = Serving::new(|x: &Tensor| {
    if x.device() == Device::sim(1) {
        panic!("partition sim:1 fails");
    }
    x.add(1.0)
})
.partitioned_over(&[Device::sim(0), Device::sim(1)])
.batch_size(2);
let input = Tensor::iota(DType::F32, &[4, 1], None)?;
match flaky.run(&input) {
    Ok(_) => println!("no error"),
    Err(e) => println!("handled: {e}"),
}'''
    reply, outputs = run_cell(kc, code)
    assert reply["content"]["status"] == "ok", reply["content"]
    out = stdout_of(outputs)
    assert "handled:" in out and "sim:1" in out, outputs
    assert "partition sim:1 fails" in stderr_of(outputs), outputs
    assert_kept(kc)


def test_a_cell_that_fails_to_compile(session):
    _, kc = session
    content = error_of(*run_cell(kc, "let wrong: i32 = kept;"))
    assert content["ename"] == "CompilationError", content
    assert_kept(kc)


def test_a_cell_that_returns_err_through_question_mark(session):
    _, kc = session
    content = error_of(*run_cell(kc, "let three = Tensor::iota(DType::F32, &[3], None)?;\nlet sum = kept.add(&three)?;"))
    assert content["ename"] == "Error", content
    report = " ".join(content["traceback"])
    assert "[4]" in report and "[3]" in report and "incompatible" in content["evalue"], content
    # The failing call's own line in the cell, where the `?` returned the error.
    assert "at cell line 2, column 11: `let sum = kept.add(&three)?;`" in report, report
    assert_kept(kc)


def test_a_question_mark_error_is_shown_once(session):
    """evcxr prints a `?` error on stderr before the kernel knows it is the cell's error; the
    message must appear as the error only, not also as stderr output."""
    _, kc = session
    reply, outputs = run_cell(kc, 'eprintln!("before the error");\nlet r: Result<i32, String> = Err("no such file: weights.npy".into());\nr?;')
    content = error_of(reply, outputs)
    assert "no such file: weights.npy" in content["evalue"], content
    stderr = "".join(m["content"]["text"] for m in outputs if m["msg_type"] == "stream" and m["content"]["name"] == "stderr")
    assert "before the error" in stderr, outputs
    assert "weights.npy" not in stderr, stderr
    assert_kept(kc)


def assert_partial_line_shows_early(kc):
    """`print!` without a newline, then a 3 s sleep: the text must arrive while the cell sleeps."""
    code = 'print!("loading");\ntensorbook::sleep(std::time::Duration::from_millis(3000))?;\nprintln!(" done");'
    msg_id = kc.execute(code)
    start = time.monotonic()
    seen = None
    outputs = []
    while True:
        msg = kc.get_iopub_msg(timeout=TIMEOUT)
        if msg["parent_header"].get("msg_id") != msg_id:
            continue
        outputs.append(msg)
        if seen is None and "loading" in stdout_of(outputs):
            seen = time.monotonic() - start
        if msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle":
            break
    finished = time.monotonic() - start
    assert seen is not None and stdout_of(outputs) == "loading done\n", outputs
    assert seen < finished - 1.5, (seen, finished)


def test_print_without_newline_shows_while_the_cell_runs(session):
    _, kc = session
    assert_partial_line_shows_early(kc)


def test_vars_lists_tensor_dtype_shape_placement_and_bytes(session):
    _, kc = session
    reply, _ = run_cell(kc, "let grid = on(Device::host(0)).zeros(DType::F64, &[2, 5])?;\nlet count = 3usize;")
    assert reply["content"]["status"] == "ok", reply["content"]
    reply, outputs = run_cell(kc, ":vars")
    assert reply["content"]["status"] == "ok", reply["content"]
    text = stdout_of(outputs)
    lines = {line.split()[0]: line for line in text.splitlines()[1:]}
    assert "f64[2][5] on host:0, 80 bytes" in lines["grid"], text
    assert "f32[4] on host:0, 16 bytes" in lines["kept"], text
    assert "usize" in lines["count"] and "bytes" not in lines["count"], text
    # Asked again without a cell in between: answered from what was described.
    t = time.monotonic()
    reply, outputs = run_cell(kc, ":vars")
    assert stdout_of(outputs) == text and time.monotonic() - t < 1.0


def interrupt_when_printed(km, kc, code, marker, timeout=TIMEOUT):
    """Runs `code`, interrupts once it printed `marker`; returns (reply, outputs, seconds from
    the interrupt to the reply)."""
    msg_id = kc.execute(code)
    outputs = []
    wait_printed(kc, msg_id, marker, outputs, timeout=timeout)
    t = time.monotonic()
    km.interrupt_kernel()
    reply = kc.get_shell_msg(timeout=timeout)
    while reply["parent_header"].get("msg_id") != msg_id:
        reply = kc.get_shell_msg(timeout=timeout)
    elapsed = time.monotonic() - t
    return reply, iopub_until_idle(kc, msg_id, outputs, timeout), elapsed


@pytest.mark.parametrize("what,code", [
    ("a loop calling the runtime", 'println!("started");\nloop { let _ = kept.multiply(&kept)?; }'),
    ("a sleeping loop", 'println!("started");\nloop { tensorbook::sleep(std::time::Duration::from_millis(200))?; }'),
    # A compiled while_loop of no ops at all: the program's loop is its own safe point.
    ("a compiled loop that never ends",
     'let endless = jit(|x: &Tensor| while_loop(x.clone(), |_| Tensor::scalar(1u8), |x| Ok(x.clone())));\n'
     'println!("started");\nendless.call(&kept)?;'),
])
def test_interrupting_keeps_the_session(session, what, code):
    km, kc = session
    reply, outputs, elapsed = interrupt_when_printed(km, kc, code, "started")
    content = error_of(reply, outputs)
    assert content["ename"] == "Interrupted", content
    print(f"{what} stopped {elapsed * 1e3:.0f} ms after the interrupt")
    assert_kept(kc)


def test_a_variable_named_only_inside_a_format_string_is_found(session):
    # The patched evcxr takes out of the store only the variables whose names occur in a cell;
    # inline format arguments name them inside string literals.
    _, kc = session
    reply, outputs = run_cell(kc, 'println!("{kept}");')
    assert reply["content"]["status"] == "ok", reply["content"]
    assert "Backend<host" in stdout_of(outputs)
    assert_kept(kc)


# rustc's const evaluation of this loop takes hours: only an interrupt ends the cell.
ENDLESS_BUILD = (
    "#[allow(long_running_const_eval)]\n"
    "const SLOW: u64 = { let mut i = 0u64; let mut s = 0u64; "
    "while i < 4_000_000_000 { s = s.wrapping_add(i); i += 1; } s };\n"
    'println!("built {SLOW}");'
)


def test_interrupting_a_build_stops_it_and_keeps_the_session(session):
    km, kc = session
    # One cell first, so that the build below is a session's usual one (the patched evcxr runs
    # rustc itself between cells, without cargo).
    reply, _ = run_cell(kc, "let before_build = 1;")
    assert reply["content"]["status"] == "ok", reply["content"]
    msg_id = kc.execute(ENDLESS_BUILD)
    time.sleep(3)
    t = time.monotonic()
    km.interrupt_kernel()
    reply = kc.get_shell_msg(timeout=TIMEOUT)
    while reply["parent_header"].get("msg_id") != msg_id:
        reply = kc.get_shell_msg(timeout=TIMEOUT)
    outputs = iopub_until_idle(kc, msg_id)
    print(f"build stopped {(time.monotonic() - t) * 1e3:.0f} ms after the interrupt")
    content = error_of(reply, outputs)
    assert content["ename"] == "Interrupted", content
    assert "built" not in stdout_of(outputs)
    assert_kept(kc)


def test_a_pure_cpu_loop_restarts_the_process_and_restores_the_variables(session):
    km, kc = session
    run_cell(kc, ":client host")
    reply, outputs, elapsed = interrupt_when_printed(
        km, kc, 'println!("spinning");\nlet mut i: u64 = 0;\nloop { i = std::hint::black_box(i.wrapping_add(1)); }', "spinning")
    content = error_of(reply, outputs)
    assert content["ename"] == "Interrupted", content
    restored = content["evalue"].partition("variables restored: ")[2]
    assert "kept (f32[4] on host:0)" in restored.split(";")[0], content
    print(f"CPU loop ended {elapsed * 1e3:.0f} ms after the interrupt")
    # The kernel keeps serving; what it owns (default client, imports) is still there.
    reply, outputs = run_cell(kc, ":client")
    assert "host:0" in stdout_of(outputs)
    reply, outputs = run_cell(kc, "let mut m: BTreeMap<u8, u8> = BTreeMap::new(); m.insert(1, 2); let again = Tensor::iota(DType::F32, &[2], None)?; again")
    assert reply["content"]["status"] == "ok", reply["content"]
    # The new process flushes unfinished lines too.
    assert_partial_line_shows_early(kc)
    text = [m for m in outputs if m["msg_type"] == "execute_result"][0]["content"]["data"]["text/plain"]
    assert "Backend<host:0>" in text


def test_cells_share_one_runtime(session):
    """Cells link the runtime from one shared library, so a setting made by one cell (a static
    in the runtime) is seen by the next; with the runtime linked into every cell it was not."""
    _, kc = session
    reply, _ = run_cell(kc, "let before = tensorbook::print_limit();\ntensorbook::set_print_limit(3);")
    assert reply["content"]["status"] == "ok", reply["content"]
    reply, outputs = run_cell(kc, "let seen = tensorbook::print_limit();\ntensorbook::set_print_limit(before);\nseen")
    assert reply["content"]["status"] == "ok", reply["content"]
    text = [m for m in outputs if m["msg_type"] == "execute_result"][0]["content"]["data"]["text/plain"]
    assert text.strip() == "3", text
