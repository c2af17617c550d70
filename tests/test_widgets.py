"""Widgets over Jupyter comms, driven as a frontend drives them: the kernel opens a comm per
widget (ipywidgets 8 on `jupyter.widget`), the frontend's `update` reaches a running cell,
a click stops a loop, `comm_info_request` lists the widgets, unknown targets are closed, a
reloaded page gets every state back, and a restart of the evaluation process names the
widgets lost instead of leaving the page waiting."""
import time

import pytest

from conftest import TIMEOUT, error_of, run_cell, session_with, shell_reply, stdout_of, wait_printed

VIEW = "application/vnd.jupyter.widget-view+json"


@pytest.fixture(scope="module")
def session():
    yield from session_with("use std::time::{Duration, Instant};")


def send(kc, msg_type, content):
    msg = kc.session.msg(msg_type, content)
    kc.shell_channel.send(msg)
    return msg["header"]["msg_id"]


def iopub_all_until_idle(kc, msg_id, timeout=TIMEOUT):
    """Every iopub message (any parent) until `msg_id`'s idle."""
    out = []
    while True:
        msg = kc.get_iopub_msg(timeout=timeout)
        out.append(msg)
        if (msg["parent_header"].get("msg_id") == msg_id and msg["msg_type"] == "status"
                and msg["content"]["execution_state"] == "idle"):
            return out


def start_loop(kc, widget, loop, marker):
    """Makes a widget, then starts a cell that prints `marker` and loops; returns (the
    widget's comm id, the cell's msg_id, the cell's messages so far)."""
    opened, _ = make_widget(kc, widget)
    cell = kc.execute(loop)
    seen = []
    wait_printed(kc, cell, marker, seen)
    return opened["comm_id"], cell, seen


def make_widget(kc, code):
    """Runs a cell that ends with a widget; returns (comm_open content, execute_result data)."""
    reply, outputs = run_cell(kc, code)
    assert reply["content"]["status"] == "ok", reply["content"]
    opens = [m["content"] for m in outputs if m["msg_type"] == "comm_open"]
    assert len(opens) == 1, outputs
    # ipywidgets reads the protocol version from the message's metadata, not its content.
    versions = [m["metadata"].get("version") for m in outputs if m["msg_type"] == "comm_open"]
    assert versions == ["2.1.0"], outputs
    results = [m["content"]["data"] for m in outputs if m["msg_type"] == "execute_result"]
    return opens[0], (results[0] if results else None)


def test_a_widget_opens_a_comm_and_shows_its_view(session):
    _, kc = session
    opened, data = make_widget(kc, 'let n = widgets::IntSlider::new("n", 0, 10, 3)?;\nn')
    assert opened["target_name"] == "jupyter.widget"
    state = opened["data"]["state"]
    assert state["_model_name"] == "IntSliderModel" and state["_model_module"] == "@jupyter-widgets/controls"
    assert state["value"] == 3 and state["max"] == 10
    # The view names the model, as a JSON object (not a string), with a text fallback.
    assert data[VIEW]["model_id"] == opened["comm_id"] and data[VIEW]["version_major"] == 2
    assert 'IntSlider(description="n", value=3' in data["text/plain"]


def test_comm_info_lists_the_open_widgets(session):
    _, kc = session
    opened, _ = make_widget(kc, 'let info_box = widgets::Checkbox::new("log", true);\ninfo_box')
    reply = shell_reply(kc, send(kc, "comm_info_request", {"target_name": "jupyter.widget"}))
    comms = reply["content"]["comms"]
    assert comms[opened["comm_id"]] == {"target_name": "jupyter.widget"}, comms
    reply = shell_reply(kc, send(kc, "comm_info_request", {"target_name": "nothing.here"}))
    assert reply["content"]["comms"] == {}


def test_a_browser_update_reaches_the_running_cell(session):
    _, kc = session
    comm, cell, seen = start_loop(
        kc, 'let rate = widgets::FloatSlider::new("rate", 0.0, 1.0, 0.1)?;\nrate',
        'let first = rate.value();\nprintln!("reading");\nlet t0 = Instant::now();\n'
        'while rate.value() == first && t0.elapsed() < Duration::from_secs(30) { tensorbook::sleep(Duration::from_millis(2))?; }\n'
        'println!("saw {}", rate.value());', "reading")
    # The frontend moves the slider while the cell runs: the kernel answers at once.
    update = send(kc, "comm_msg", {"comm_id": comm, "data": {"method": "update", "state": {"value": 0.75}, "buffer_paths": []}})
    others = []
    wait_printed(kc, cell, "saw 0.75", seen, others)
    reply = shell_reply(kc, cell)
    assert reply["content"]["status"] == "ok"
    # The change was echoed to every frontend (ipywidgets 8's echo_update).
    echoes = [m["content"]["data"] for m in others
              if m["parent_header"].get("msg_id") == update and m["msg_type"] == "comm_msg"]
    assert echoes == [{"method": "echo_update", "state": {"value": 0.75}, "buffer_paths": []}], others


def test_a_click_stops_a_loop_within_100_ms_and_keeps_what_it_built(session):
    _, kc = session
    comm, cell, _ = start_loop(
        kc, 'let stop = widgets::Button::new("Stop");\nstop',
        'let mut losses: Vec<f64> = Vec::new();\nprintln!("training");\n'
        'while !stop.clicked() { losses.push(1.0 / (1.0 + losses.len() as f64)); tensorbook::sleep(Duration::from_millis(5))?; }\n'
        'println!("stopped after {} steps", losses.len());', "training")
    time.sleep(0.3)
    clicked = time.monotonic()
    send(kc, "comm_msg", {"comm_id": comm, "data": {"method": "custom", "content": {"event": "click"}}})
    reply = shell_reply(kc, cell)
    took = time.monotonic() - clicked
    print(f"click to the cell's end: {took * 1000:.1f} ms")
    assert reply["content"]["status"] == "ok", reply["content"]
    assert took < 0.1, f"the loop took {took * 1000:.0f} ms to stop"
    reply, outputs = run_cell(kc, 'println!("{} {}", losses.len() > 10, stop.clicks());')
    assert stdout_of(outputs).strip() == "true 1", outputs


def test_rust_sets_a_widget_and_the_frontend_follows(session):
    _, kc = session
    opened, _ = make_widget(kc, 'let bar = widgets::Progress::new("epochs", 0.0, 5.0)?;\nbar')
    reply, outputs = run_cell(kc, "bar.set_value(2.0)?;\nbar.value()")
    updates = [m["content"] for m in outputs if m["msg_type"] == "comm_msg"]
    assert updates and updates[0]["comm_id"] == opened["comm_id"], outputs
    assert updates[0]["data"] == {"method": "update", "state": {"value": 2.0}, "buffer_paths": []}


def test_unknown_targets_are_closed_and_a_reloaded_page_gets_every_state(session):
    _, kc = session
    send(kc, "comm_open", {"comm_id": "no-such", "target_name": "no.such.target", "data": {}})
    while True:
        msg = kc.get_iopub_msg(timeout=TIMEOUT)
        if msg["msg_type"] == "comm_close":
            assert msg["content"]["comm_id"] == "no-such"
            break
    opened, _ = make_widget(kc, 'let pick = widgets::Dropdown::new("opt", &["sgd", "adam"], 1)?;\npick')
    # ipywidgets 8's page load: a control comm asking for every state at once.
    send(kc, "comm_open", {"comm_id": "ctl", "target_name": "jupyter.widget.control", "data": {}})
    ask = send(kc, "comm_msg", {"comm_id": "ctl", "data": {"method": "request_states"}})
    while True:
        msg = kc.get_iopub_msg(timeout=TIMEOUT)
        if msg["parent_header"].get("msg_id") == ask and msg["msg_type"] == "comm_msg":
            break
    data = msg["content"]["data"]
    assert data["method"] == "update_states"
    mine = data["states"][opened["comm_id"]]
    assert mine["model_name"] == "DropdownModel" and mine["state"]["index"] == 1
    assert mine["state"]["_options_labels"] == ["sgd", "adam"]
    # ... or one state at a time.
    ask = send(kc, "comm_msg", {"comm_id": opened["comm_id"], "data": {"method": "request_state"}})
    while True:
        msg = kc.get_iopub_msg(timeout=TIMEOUT)
        if msg["parent_header"].get("msg_id") == ask and msg["msg_type"] == "comm_msg":
            break
    assert msg["content"]["data"]["state"]["index"] == 1


def test_a_live_chart_grows_and_redraws_at_most_every_100_ms(session):
    _, kc = session
    reply, outputs = run_cell(
        kc,
        'let chart = widgets::LiveChart::new("loss", "step", "loss")?;\n'
        'for i in 0..100 { chart.push("train", i as f64, 1.0 / (1.0 + i as f64))?; tensorbook::sleep(Duration::from_millis(10))?; }\n'
        'chart.flush()?;\nchart.points("train")?.len()')
    assert reply["content"]["status"] == "ok", reply["content"]
    shown = [m for m in outputs if m["msg_type"] == "display_data"]
    updates = [m for m in outputs if m["msg_type"] == "update_display_data"]
    assert len(shown) == 1 and "image/svg+xml" in shown[0]["content"]["data"], outputs
    display_id = shown[0]["content"]["transient"]["display_id"]
    assert updates and all(u["content"]["transient"]["display_id"] == display_id for u in updates)
    # About a second of pushes: redrawn in place about ten times, not a hundred.
    assert 3 <= len(updates) <= 20, len(updates)
    last = updates[-1]["content"]["data"]["image/svg+xml"]
    assert last.count(",") > shown[0]["content"]["data"]["image/svg+xml"].count(","), "no new points drawn"


def test_bad_widget_arguments_are_errors_and_the_session_goes_on(session):
    _, kc = session
    content = error_of(*run_cell(kc, 'let bad = widgets::IntSlider::new("n", 10, 0, 3)?;'))
    assert "min..=max" in content["evalue"], content
    content = error_of(*run_cell(kc, 'let bad = widgets::Dropdown::new("d", &[], 0)?;'))
    assert "past the 0 options" in content["evalue"], content


def test_a_restart_of_the_evaluation_process_names_the_widgets_lost(session):
    _, kc = session
    opened, _ = make_widget(kc, 'let doomed = widgets::IntSlider::new("steps", 0, 9, 1)?;\ndoomed')
    cell = kc.execute("std::process::abort();")
    messages = iopub_all_until_idle(kc, cell)
    lost = [m["content"] for m in messages
            if m["msg_type"] == "comm_msg" and m["content"]["comm_id"] == opened["comm_id"]]
    assert lost, messages
    state = lost[0]["data"]["state"]
    assert state["disabled"] is True and state["description"] == "steps (lost)", state
    reply = shell_reply(kc, cell)
    assert "doomed" in reply["content"]["evalue"], reply["content"]
    # The page still gets an answer for it, and the new process makes new widgets.
    ask = send(kc, "comm_msg", {"comm_id": opened["comm_id"], "data": {"method": "request_state"}})
    while True:
        msg = kc.get_iopub_msg(timeout=TIMEOUT)
        if msg["parent_header"].get("msg_id") == ask and msg["msg_type"] == "comm_msg":
            break
    assert msg["content"]["data"]["state"]["disabled"] is True
    opened_again, _ = make_widget(kc, 'let again = widgets::IntSlider::new("steps", 0, 9, 1)?;\nagain')
    assert opened_again["comm_id"] != opened["comm_id"]
    send(kc, "comm_msg", {"comm_id": opened_again["comm_id"], "data": {"method": "update", "state": {"value": 4}, "buffer_paths": []}})
    reply, outputs = run_cell(kc, 'println!("{}", again.value());')
    assert stdout_of(outputs).strip() == "4", outputs
