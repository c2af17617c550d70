"""The kernel driven through jupyter_client and raw ZeroMQ: every request type, errors,
signatures, replays and garbage frames, and tensorbook's session commands."""
import json
import time
import uuid

import pytest
import zmq
from jupyter_client.manager import start_new_kernel

from conftest import (
    TIMEOUT, iopub_until_idle, run_cell, shell_replies, shell_reply, standard_library_source, stdout_of,
)


def test_kernel_info_is_answered_before_evcxr_is_ready():
    km, kc = start_new_kernel(kernel_name="tensorbook", startup_timeout=60)
    try:
        t = time.monotonic()
        msg_id = kc.kernel_info()
        reply = shell_reply(kc, msg_id, timeout=10)
        print(f"kernel_info round trip on a fresh kernel: {(time.monotonic() - t) * 1e3:.1f} ms")
        content = reply["content"]
        assert content["status"] == "ok"
        assert content["language_info"]["name"] == "rust"
        assert content["language_info"]["pygments_lexer"] == "rust"
        assert content["implementation"] == "tensorbook"
        assert content["protocol_version"].startswith("5.")
        # Control answers too.
        control_id = kc.session.msg("kernel_info_request", {})
        kc.control_channel.send(control_id)
        reply = kc.get_control_msg(timeout=10)
        assert reply["msg_type"] == "kernel_info_reply"
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)


def test_execution_count_output_and_result(kernel):
    _, kc = kernel
    reply, outputs = run_cell(kc, 'println!("hello from rust"); eprintln!("to stderr"); 40 + 2')
    content = reply["content"]
    assert content["status"] == "ok", content
    assert content["execution_count"] >= 1
    types = [m["msg_type"] for m in outputs]
    assert types[0] == "status" and types[-1] == "status"
    assert "execute_input" in types
    assert "hello from rust\n" in stdout_of(outputs)
    assert any(m["msg_type"] == "stream" and m["content"]["name"] == "stderr" for m in outputs)
    result = [m for m in outputs if m["msg_type"] == "execute_result"]
    assert result and result[0]["content"]["data"]["text/plain"] == "42"
    assert result[0]["content"]["execution_count"] == content["execution_count"]


def test_silent_and_store_history(kernel):
    _, kc = kernel
    first, _ = run_cell(kc, "1")
    n = first["content"]["execution_count"]
    silent, outputs = run_cell(kc, 'println!("quiet")', silent=True)
    assert silent["content"]["status"] == "ok"
    assert not [m for m in outputs if m["msg_type"] in ("stream", "execute_input", "execute_result")]
    unstored, _ = run_cell(kc, "2", store_history=False)
    assert unstored["content"]["execution_count"] == n
    stored, _ = run_cell(kc, "3")
    assert stored["content"]["execution_count"] == n + 1


def test_errors_carry_ename_evalue_traceback_and_state_survives(kernel):
    _, kc = kernel
    run_cell(kc, "let kept = 7;")
    reply, outputs = run_cell(kc, "let y: i32 = \"not a number\";")
    content = reply["content"]
    assert content["status"] == "error"
    assert content["ename"] == "CompilationError" and content["evalue"] and content["traceback"]
    errors = [m for m in outputs if m["msg_type"] == "error"]
    assert errors and errors[0]["content"]["ename"] == "CompilationError"
    reply, outputs = run_cell(kc, "kept * 6")
    assert reply["content"]["status"] == "ok"
    assert [m for m in outputs if m["msg_type"] == "execute_result"][0]["content"]["data"]["text/plain"] == "42"


def test_stop_on_error_aborts_queued_cells(kernel):
    _, kc = kernel
    bad = kc.execute("this is not rust")
    queued = kc.execute('println!("must not run")')
    bad_reply, queued_reply = shell_replies(kc, [bad, queued])
    assert bad_reply["content"]["status"] == "error"
    assert queued_reply["content"]["status"] == "aborted"
    ok = kc.execute("1 + 1")
    assert shell_reply(kc, ok)["content"]["status"] == "ok"


def test_user_expressions(kernel):
    _, kc = kernel
    reply, _ = run_cell(kc, "let ue = 5;", user_expressions={"double": "ue * 2"})
    value = reply["content"]["user_expressions"]["double"]
    assert value["status"] == "ok" and value["data"]["text/plain"] == "10"


@pytest.mark.parametrize(
    "code,status",
    [("let x = 1;", "complete"), ("fn f() {", "incomplete"), ("let x = );", "invalid"), ("let s = \"open", "incomplete")],
)
def test_is_complete(kernel, code, status):
    _, kc = kernel
    reply = shell_reply(kc, kc.is_complete(code))
    assert reply["content"]["status"] == status
    if status == "incomplete" and "{" in code:
        assert reply["content"]["indent"] == "    "


def test_history_tail_range_search(kernel):
    _, kc = kernel
    run_cell(kc, "let history_marker = 1;")
    tail = shell_reply(kc, kc.history(hist_access_type="tail", n=3, output=False, raw=True))["content"]
    assert tail["status"] == "ok" and tail["history"][-1][2] == "let history_marker = 1;"
    session, line = tail["history"][-1][0], tail["history"][-1][1]
    rng = shell_reply(kc, kc.history(hist_access_type="range", session=session, start=line, stop=line + 1, output=False, raw=True))
    assert [h[2] for h in rng["content"]["history"]] == ["let history_marker = 1;"]
    found = shell_reply(kc, kc.history(hist_access_type="search", pattern="let history_*", n=5, output=False, raw=True))
    assert any(h[2] == "let history_marker = 1;" for h in found["content"]["history"])


def test_completion_and_inspection_use_code_points(kernel):
    _, kc = kernel
    run_cell(kc, "let résumé_value = 3u64;")
    code = "résumé_val"
    reply = shell_reply(kc, kc.complete(code, len(code)), timeout=300)["content"]
    assert reply["status"] == "ok"
    assert "résumé_value" in reply["matches"], reply
    assert reply["cursor_end"] == len(code) and reply["cursor_start"] == 0
    reply = shell_reply(kc, kc.inspect("résumé_value", 3), timeout=300)["content"]
    assert reply["status"] == "ok"
    if reply["found"]:
        assert "u64" in reply["data"]["text/plain"]


def test_completion_knows_the_standard_library_and_the_runtime(kernel):
    if standard_library_source() is None:
        pytest.skip("the toolchain has no rust-src (install/rust-src.sh could not add it): "
                    "rust-analyzer has no standard library to complete from")
    _, kc = kernel
    run_cell(kc, "let tab_vec: Vec<u8> = vec![1, 2];\nlet tab_tensor = Tensor::iota(DType::F32, &[3], None)?;")
    for code, expected in [("tab_vec.", {"push", "len", "iter"}), ("tab_tensor.", {"sum", "reshape", "dot"})]:
        reply = shell_reply(kc, kc.complete(code, len(code)), timeout=300)["content"]
        assert reply["status"] == "ok"
        # A method's match is the call as it is inserted (`push(value)`).
        names = {match.split("(")[0] for match in reply["matches"]}
        assert expected <= names, (code, sorted(reply["matches"])[:40])
        assert reply["cursor_start"] == len(code) and reply["cursor_end"] == len(code)


def test_comms_are_answered_per_spec(kernel):
    _, kc = kernel
    msg = kc.session.msg("comm_info_request", {})
    kc.shell_channel.send(msg)
    reply = shell_reply(kc, msg["header"]["msg_id"])
    assert reply["content"] == {"status": "ok", "comms": {}}
    comm_id = uuid.uuid4().hex
    msg = kc.session.msg("comm_open", {"comm_id": comm_id, "target_name": "nope", "data": {}})
    kc.shell_channel.send(msg)
    deadline = time.monotonic() + TIMEOUT
    while time.monotonic() < deadline:
        m = kc.get_iopub_msg(timeout=TIMEOUT)
        if m["msg_type"] == "comm_close" and m["content"]["comm_id"] == comm_id:
            break
    else:
        pytest.fail("no comm_close for an unknown comm target")


def test_session_commands(kernel):
    _, kc = kernel
    reply, outputs = run_cell(kc, ":clients")
    text = stdout_of(outputs)
    assert reply["content"]["status"] == "ok"
    assert "host:0, host:1" in text and "cuda" in text and "session default" in text
    reply, outputs = run_cell(kc, ":client host:1")
    assert "host:1" in stdout_of(outputs)
    reply, outputs = run_cell(kc, "let shown = Tensor::iota(DType::F32, &[2, 3], None)?;\nshown")
    assert reply["content"]["status"] == "ok", reply["content"]
    data = [m for m in outputs if m["msg_type"] == "execute_result"][0]["content"]["data"]
    assert "Backend<host:1>" in data["text/plain"]
    assert "f32[2][3]" in data["text/html"] and "Backend&lt;host:1&gt;" in data["text/html"]
    reply, outputs = run_cell(kc, ":client cuda")
    assert reply["content"]["status"] == "error" and "cuda" in reply["content"]["evalue"]
    run_cell(kc, ":client host")
    reply, outputs = run_cell(kc, ":client")
    assert "host:0" in stdout_of(outputs)
    run_cell(kc, "let listed_var = 5u8;")
    _, outputs = run_cell(kc, ":vars")
    assert "listed_var" in stdout_of(outputs) and "u8" in stdout_of(outputs)
    _, outputs = run_cell(kc, ":help")
    assert ":clients" in stdout_of(outputs)


def test_timing_reports_each_cell_after_its_output(kernel):
    """`:timing` (evcxr's command, which `:help` names) shows a cell's time and evcxr's phases
    after the cell's own output, until it is turned off again; the command itself shows none."""
    _, kc = kernel

    def answer(outputs):
        results = [m for m in outputs if m["msg_type"] == "execute_result"]
        return stdout_of(outputs) + "".join(m["content"]["data"]["text/plain"] for m in results)

    reply, outputs = run_cell(kc, ":timing")
    try:
        assert reply["content"]["status"] == "ok" and "Timing: true" in answer(outputs)
        assert "Took " not in answer(outputs), answer(outputs)
        reply, outputs = run_cell(kc, 'println!("timed output");')
        text = stdout_of(outputs)
        assert reply["content"]["status"] == "ok", reply["content"]
        assert "timed output" in text and "Took " in text and "Final compile: " in text, text
        assert text.index("timed output") < text.index("Took "), text
    finally:
        _, outputs = run_cell(kc, ":timing")
    assert "Timing: false" in answer(outputs)
    _, outputs = run_cell(kc, 'println!("untimed");')
    assert "Took " not in answer(outputs)


def test_session_commands_see_what_cells_set(kernel):
    """`:client` and `:clients` are answered in the evaluation process: a simulated accelerator
    a cell turned on is there for them, as the README says."""
    _, kc = kernel
    reply, _ = run_cell(kc, "tensorbook::set_sim_device_count(2);")
    assert reply["content"]["status"] == "ok", reply["content"]
    reply, outputs = run_cell(kc, ":clients")
    assert reply["content"]["status"] == "ok", reply["content"]
    assert "sim:0, sim:1" in stdout_of(outputs), stdout_of(outputs)
    reply, outputs = run_cell(kc, ":client sim:0")
    assert reply["content"]["status"] == "ok", reply["content"]
    assert "sim:0" in stdout_of(outputs)
    reply, outputs = run_cell(kc, "Tensor::iota(DType::F32, &[2], None)?")
    data = [m for m in outputs if m["msg_type"] == "execute_result"][0]["content"]["data"]
    assert "Backend<sim:0>" in data["text/plain"], data
    run_cell(kc, ":client host")
    reply, outputs = run_cell(kc, ":client")
    assert "host:0" in stdout_of(outputs)


def test_mixed_devices_are_a_readable_error(kernel):
    _, kc = kernel
    run_cell(kc, "let a = on(Device::host(0)).ones(DType::F32, &[2])?;\nlet b = on(Device::host(1)).ones(DType::F32, &[2])?;")
    reply, outputs = run_cell(kc, "let c = a.add(&b)?;")
    # An Err returned through `?` is the cell's error; the message names both placements and
    # the fix.
    content = reply["content"]
    assert content["status"] == "error" and content["ename"] == "Error", content
    report = "\n".join(content["traceback"])
    assert "f32[2] on host:0" in report and "f32[2] on host:1" in report, report
    assert "backend_transfer" in report
    assert [m for m in outputs if m["msg_type"] == "error"], "no error output for a `?` error"
    reply, _ = run_cell(kc, "a.to_vec::<f32>()?")
    assert reply["content"]["status"] == "ok", "the session lost its tensors after an error"


def _raw_shell(km):
    ctx = zmq.Context.instance()
    sock = ctx.socket(zmq.DEALER)
    sock.setsockopt(zmq.LINGER, 0)
    sock.connect(f"{km.transport}://{km.ip}:{km.shell_port}")
    return sock


def _reply_within(sock, seconds):
    if sock.poll(int(seconds * 1000)):
        return sock.recv_multipart()
    return None


def test_bad_signatures_replays_and_garbage_are_dropped(kernel):
    km, kc = kernel
    sock = _raw_shell(km)
    try:
        session = kc.session
        msg = session.msg("kernel_info_request", {})
        frames = session.serialize(msg)
        good = list(frames)
        bad = list(frames)
        bad[1] = b"0" * 64
        sock.send_multipart(bad)
        assert _reply_within(sock, 1.5) is None, "a badly signed message was answered"
        unsigned = list(frames)
        unsigned[1] = b""
        sock.send_multipart(unsigned)
        assert _reply_within(sock, 1.5) is None, "an unsigned message was answered"
        for garbage in ([b"junk"], [b"<IDS|MSG>", b"sig"], [b"<IDS|MSG>"] + [b"{not json"] * 5):
            sock.send_multipart(garbage)
        sock.send_multipart(good)
        reply = _reply_within(sock, 10)
        assert reply is not None, "the kernel stopped serving after garbage"
        assert json.loads(reply[reply.index(b"<IDS|MSG>") + 2])["msg_type"] == "kernel_info_reply"
        sock.send_multipart(good)
        assert _reply_within(sock, 1.5) is None, "a replayed message was answered"
        unknown = session.serialize(session.msg("frobnicate_request", {}))
        sock.send_multipart(unknown)
        assert _reply_within(sock, 1.5) is None
        fresh = session.serialize(session.msg("kernel_info_request", {}))
        sock.send_multipart(fresh)
        assert _reply_within(sock, 10) is not None, "the kernel stopped serving after an unknown type"
    finally:
        sock.close()


def test_interrupt_and_shutdown_on_control():
    km, kc = start_new_kernel(kernel_name="tensorbook", startup_timeout=60)
    try:
        msg = kc.session.msg("interrupt_request", {})
        kc.control_channel.send(msg)
        reply = kc.get_control_msg(timeout=30)
        assert reply["msg_type"] == "interrupt_reply" and reply["content"]["status"] == "ok"
        msg = kc.session.msg("shutdown_request", {"restart": False})
        kc.control_channel.send(msg)
        reply = kc.get_control_msg(timeout=30)
        assert reply["content"] == {"status": "ok", "restart": False}
        deadline = time.monotonic() + 30
        while km.is_alive() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not km.is_alive(), "the kernel did not exit after shutdown"
    finally:
        kc.stop_channels()
        if km.is_alive():
            km.shutdown_kernel(now=True)


def test_input_request_and_reply_on_stdin(kernel):
    _, kc = kernel
    msg_id = kc.execute('let name = tensorbook::input("Your name: ")?;\nprintln!("hello {name}");', allow_stdin=True)
    request = kc.get_stdin_msg(timeout=TIMEOUT)
    assert request["msg_type"] == "input_request", request
    assert request["parent_header"]["msg_id"] == msg_id
    assert request["content"]["prompt"].startswith("Your name") and request["content"]["password"] is False
    kc.input("Ada")
    reply = shell_reply(kc, msg_id)
    assert reply["content"]["status"] == "ok", reply["content"]
    assert "hello Ada\n" in stdout_of(iopub_until_idle(kc, msg_id))
    # Without allow_stdin the cell gets an empty line instead of hanging.
    reply, outputs = run_cell(kc, 'let nobody = tensorbook::input("Name: ")?;\nprintln!("got [{nobody}]");', allow_stdin=False)
    assert reply["content"]["status"] == "ok" and "got []" in stdout_of(outputs)


def test_evcxr_content_blocks_are_display_data_in_order(kernel):
    """evcxr's display convention (plotters' evcxr feature, any crate that prints
    EVCXR_BEGIN_CONTENT blocks): each block printed while a cell runs is one display_data at
    its place among the stdout, and the final expression stays the execute_result."""
    _, kc = kernel
    code = "\n".join([
        'println!("before");',
        'println!("EVCXR_BEGIN_CONTENT text/html\\n<b>first</b>\\nEVCXR_END_CONTENT");',
        'println!("between");',
        'println!("EVCXR_BEGIN_CONTENT image/svg+xml\\n<svg>second</svg>\\nEVCXR_END_CONTENT");',
        'println!("after");',
        'Tensor::iota(DType::S32, &[2], None)?',
    ])
    reply, outputs = run_cell(kc, code)
    assert reply["content"]["status"] == "ok", reply["content"]
    shown = []
    for m in outputs:
        if m["msg_type"] == "stream":
            shown.extend(("text", line) for line in m["content"]["text"].splitlines())
        elif m["msg_type"] in ("display_data", "execute_result"):
            shown.append((m["msg_type"], m["content"]["data"]))
    assert shown[:5] == [
        ("text", "before"),
        ("display_data", {"text/html": "<b>first</b>"}),
        ("text", "between"),
        ("display_data", {"image/svg+xml": "<svg>second</svg>"}),
        ("text", "after"),
    ], shown
    assert shown[5][0] == "execute_result" and "Backend<" in shown[5][1]["text/plain"], shown
    assert len(shown) == 6, shown
