"""What a cell shows when its last expression is a picture, HTML or a chart, and which names a
cell has without importing them: driven through jupyter_client against a real kernel."""
import base64

import pytest

from conftest import error_of, run_cell, started_kernel, stdout_of


@pytest.fixture(scope="module")
def fresh():
    """A kernel of its own: its first cell with a `?` is the chart, with a `?` in a `let`
    before it too, the case evcxr used to show as Debug text (vendor patches 18 and 21)."""
    yield from started_kernel()


def result_data(kc, code):
    reply, outputs = run_cell(kc, code)
    assert reply["content"]["status"] == "ok", reply["content"]
    results = [m for m in outputs if m["msg_type"] == "execute_result"]
    assert len(results) == 1, outputs
    return results[0]["content"]["data"]


def test_a_chart_as_the_last_value_carries_svg_and_png(fresh):
    _, kc = fresh
    data = result_data(
        kc,
        "let scale = tensor![1.0]?.sum(..)?.to_scalar::<f32>()? as f64;\n"
        "let points: Vec<(f64, f64)> = (0..50).map(|i| (i as f64, scale * (i as f64 / 10.0).sin())).collect();\n"
        'line_chart("a sine", "x", "sin x", &[("sin", &points)])?',
    )
    assert "<svg" in data["image/svg+xml"] and "a sine" in data["image/svg+xml"]
    png = base64.b64decode(data["image/png"])
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = int.from_bytes(png[16:20], "big"), int.from_bytes(png[20:24], "big")
    assert (width, height) == (640, 320), (width, height)


def test_html_and_svg_as_the_last_value_render(fresh):
    _, kc = fresh
    data = result_data(kc, 'Html("<b>bold</b>".to_string())')
    assert data["text/html"] == "<b>bold</b>", data
    data = result_data(
        kc,
        'Svg(r#"<svg xmlns="http://www.w3.org/2000/svg" width="8" height="4"><rect width="8" height="4"/></svg>"#.to_string())',
    )
    assert "rect" in data["image/svg+xml"] and "image/png" in data, data.keys()


def test_a_tensor_as_a_picture_and_a_grid_of_a_batch(fresh):
    """`t.to_image()?` and `show_images(..)?` as a cell's last value are PNG pictures (a grid
    with titles adds its figures as HTML), each with a text fallback."""
    _, kc = fresh
    data = result_data(kc, "Tensor::iota(DType::F32, &[28, 28], None)?.to_image()?")
    png = base64.b64decode(data["image/png"])
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = int.from_bytes(png[16:20], "big"), int.from_bytes(png[20:24], "big")
    assert (width, height) == (84, 84), (width, height)
    assert "mapped from [0, 783]" in data["text/plain"], data["text/plain"]
    data = result_data(
        kc,
        "let digits = Tensor::iota(DType::U8, &[12, 28, 28], None)?;\n"
        'show_images(&digits, &["a", "b", "c<"], 4)?',
    )
    assert "12 images 28x28 in 3 x 4" in data["text/plain"], data["text/plain"]
    assert base64.b64decode(data["image/png"])[:4] == b"\x89PNG"
    assert data["text/html"].count("<figure") == 12 and "c&lt;" in data["text/html"]


def test_the_prelude_names_gradients_devices_and_charts(fresh):
    _, kc = fresh
    reply, outputs = run_cell(
        kc,
        "let f = value_and_grad(|x: &Tensor| x.multiply(x)?.sum(..));\n"
        "let (v, g) = f.call(&tensor![1.0, 2.0]?)?;\n"
        'println!("{:?} {:?}", v.to_scalar::<f32>()?, g[0].to_vec::<f32>()?);\n'
        'println!("{}", devices().len() >= 2);\n'
        'println!("{:?}", tensor![[1, 2], [3, 4]]?.argmax(1)?.argmax_with(.., false, TieBreak::High, DType::S64)?.to_scalar::<i64>()?);',
    )
    assert reply["content"]["status"] == "ok", reply["content"]
    assert stdout_of(outputs).splitlines() == ["5.0 [2.0, 4.0]", "true", "1"], stdout_of(outputs)


def test_random_keys_draw_inside_a_compiled_step_from_cell_to_cell(fresh):
    """`random` is in the prelude; a compiled step kept in a variable draws from the key each
    call passes (JAX's threefry values for key 1701), and the key lives between cells."""
    _, kc = fresh
    reply, _ = run_cell(
        kc,
        "let step = jit(|key: &Tensor| random::uniform(key, 0.0, 1.0, &[2], DType::F32));\n"
        "let mut key = random::key(1701)?;",
    )
    assert reply["content"]["status"] == "ok", reply["content"]
    draws = []
    for _ in range(2):
        reply, outputs = run_cell(
            kc, 'let (x, next) = step.call(&key)?;\nkey = next;\nprintln!("{:?}", x.to_vec::<f32>()?);'
        )
        assert reply["content"]["status"] == "ok", reply["content"]
        draws.append(stdout_of(outputs).strip())
    assert draws == ["[0.9221318, 0.12058222]", "[0.09428537, 0.14075589]"], draws
    assert "u32[2]" in result_data(kc, "key")["text/plain"]


def test_a_cells_own_item_shadows_a_prelude_name(fresh):
    _, kc = fresh
    reply, outputs = run_cell(kc, 'fn grad(x: i32) -> i32 { x + 1 }\nprintln!("{}", grad(41));')
    assert reply["content"]["status"] == "ok", reply["content"]
    assert stdout_of(outputs).strip() == "42"


def test_a_compile_error_is_reported_at_the_cells_own_line(fresh):
    _, kc = fresh
    reply, outputs = run_cell(kc, "let x = 1;\nlet z = y + x;")
    err = error_of(reply, outputs)
    assert err["evalue"].startswith("cell line 2, column 9: cannot find value `y`"), err
    text = "\n".join(err["traceback"])
    assert "--> cell line 2, column 9" in text and "2 | let z = y + x;" in text, text
    assert "src/lib.rs" not in text, text


def test_a_value_is_shown_by_its_own_display_or_its_debug_text_in_one_build(fresh):
    """Vendor patch 25: a number or a `Vec` shows its Debug text, a tensor (also through `&`)
    its own display, each from one build (`:timing` names no "Fallback" phase); a trait of the
    cell's that also names `evcxr_display` and a value without Debug behave as in evcxr."""
    _, kc = fresh
    reply, _ = run_cell(kc, ":timing")
    assert reply["content"]["status"] == "ok", reply["content"]
    try:
        for code, shown in [("let n = 41;\nn + 1", "42"), ("vec![1u8, 2]", "[1, 2]"),
                            ("&tensor![1.0, 2.0]?", "Backend<")]:
            reply, outputs = run_cell(kc, code)
            assert reply["content"]["status"] == "ok", reply["content"]
            data = [m for m in outputs if m["msg_type"] == "execute_result"][0]["content"]["data"]
            assert shown in data["text/plain"], (code, data)
            assert "Final compile" in stdout_of(outputs) and "Fallback" not in stdout_of(outputs), stdout_of(outputs)
        assert "text/html" in data, data
    finally:
        run_cell(kc, ":timing")
    reply, outputs = run_cell(
        kc,
        "trait Show { fn evcxr_display(&self); }\n"
        "impl Show for i64 { fn evcxr_display(&self) { println!(\"shown {self}\"); } }\n"
        "5i64",
    )
    assert reply["content"]["status"] == "ok", reply["content"]
    assert "shown 5" in stdout_of(outputs), outputs
    reply, outputs = run_cell(kc, "struct Opaque;\nOpaque")
    assert "doesn't implement `Debug`" in error_of(reply, outputs)["evalue"]
