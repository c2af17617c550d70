"""Nx's everyday functions as a user writes them in a cell of a real kernel: a `tensor!`
literal, select, clip, padding, reversal, bitwise ops and linspace, each printed and read back,
an Nx error (a bitwise op on floats) reported as the cell's error with Nx's words, and
window_reduce with a closure, multivariate_normal, serialize and a scoped default device."""
from conftest import error_of, run_cell, stdout_of


def ok_stdout(kc, code):
    reply, outputs = run_cell(kc, code)
    assert reply["content"]["status"] == "ok", reply["content"]
    return stdout_of(outputs)


def test_a_cell_writes_nx_style_tensor_code(kernel):
    _, kc = kernel
    out = ok_stdout(
        kc,
        "let m = tensor![[1.0, -2.0], [3.0, 4.0]]?;\n"
        "let picked = m.greater(0)?.select(&m, 0.0)?;\n"
        'println!("{:?}", picked.to_vec::<f32>()?);\n'
        'println!("{:?}", m.clip(-1, 2)?.reverse(..)?.to_vec::<f32>()?);\n'
        'println!("{:?}", m.pad(0, &[(1, 0, 0), (0, 0, 1)])?.shape());\n'
        'println!("{:?}", tensor![1, 2, 3]?.pad_outer_with(PadMode::Reflect, &[(2, 0)])?.to_vec::<i32>()?);\n'
        'println!("{:?}", tensor![12, 10]?.bitwise_and(6)?.left_shift(1)?.to_vec::<i32>()?);\n'
        'println!("{:?}", Tensor::linspace(5.0, 8.0, 5)?.to_vec::<f32>()?);',
    )
    assert out.splitlines() == [
        "[1.0, 0.0, 3.0, 4.0]",
        "[2.0, 2.0, -1.0, 1.0]",
        "[3, 3]",
        "[3, 2, 1, 2, 3]",
        "[8, 4]",
        "[5.0, 5.75, 6.5, 7.25, 8.0]",
    ], out


def test_an_nx_error_is_the_cells_error_and_the_session_goes_on(kernel):
    _, kc = kernel
    reply, outputs = run_cell(kc, "let bad = tensor![1.5, 2.5]?.bitwise_and(1)?;")
    err = error_of(reply, outputs)
    assert "bitwise operators expect integer tensors" in err["evalue"], err
    out = ok_stdout(kc, 'println!("{:?}", tensor![7, -7]?.remainder(3)?.to_vec::<i32>()?);')
    assert out.strip() == "[1, -1]", out


def test_a_cell_sorts_indexes_and_uses_operators(kernel):
    _, kc = kernel
    out = ok_stdout(
        kc,
        "let scores = tensor![[0.1, 0.7, 0.2], [0.5, f32::NAN, 0.4]]?;\n"
        "let (best, at) = scores.top_k(2)?;\n"
        'println!("{:?} {:?}", best.to_vec::<f32>()?, at.to_vec::<i32>()?);\n'
        "let order = scores.argsort(1, Direction::Asc)?;\n"
        'println!("{:?}", scores.take_along_axis(&order, 1)?.to_vec::<f32>()?);\n'
        'println!("{:?}", tensor![3, 1, 2, 2]?.sort(0, Direction::Desc)?.to_vec::<i32>()?);\n'
        'println!("{:?}", tensor![1, 2, 2, 3, 5]?.mode(..)?.to_vec::<i32>()?);\n'
        'println!("{:?}", tensor![[1, 2], [3, 4]]?.gather(&tensor![[1, 1], [0, 1]]?, ..)?.to_vec::<i32>()?);\n'
        'println!("{:?}", Tensor::zeros(DType::S32, &[4])?.indexed_add(&tensor![[1], [3], [1]]?, 1, ..)?.to_vec::<i32>()?);\n'
        "let x = tensor![1.0, -2.0, 3.0]?;\n"
        "let b = tensor![0.5]?;\n"
        "let y = (&x * 2.0 + &b)?;\n"
        'println!("{:?} {:?}", y.to_vec::<f32>()?, (1.0 - &y)?.to_vec::<f32>()?);',
    )
    assert out.splitlines() == [
        "[0.7, 0.2, NaN, 0.5] [1, 2, 1, 0]",
        "[0.1, 0.2, 0.7, 0.4, 0.5, NaN]",
        "[3, 2, 2, 1]",
        "[2]",
        "[4, 2]",
        "[0, 2, 0, 1]",
        "[2.5, -3.5, 6.5] [-1.5, 4.5, -5.5]",
    ], out


def test_a_cell_uses_window_reduce_random_draws_serialization_and_a_scoped_default(kernel):
    _, kc = kernel
    out = ok_stdout(
        kc,
        "let t = tensor![[1, 2, 3], [4, 5, 6], [7, 8, 9]]?;\n"
        'let pooled = t.window_reduce(i32::MIN, &[2, 2], Window::new().padding(Padding::Same), |x, acc| x.max(acc))?;\n'
        'println!("{:?}", pooled.to_vec::<i32>()?);\n'
        "let key = random::key(12)?;\n"
        "let (x, _next) = random::multivariate_normal(&key, &tensor![0, 0]?, &tensor![[1, 0], [0, 1]]?, &[], random::Decomposition::Cholesky)?;\n"
        'println!("{:?}", x.shape());\n'
        "let back = Tensor::deserialize(&t.rename(vec![\"row\", \"col\"])?.serialize()?)?;\n"
        'println!("{:?} {:?}", back.to_vec::<i32>()?, back.names());\n'
        "let placed = with_default_device(Device::BINARY, || Tensor::iota(DType::F32, &[2], None))??;\n"
        'println!("{}", placed.device());',
    )
    lines = out.splitlines()
    assert lines[0] == "[5, 6, 6, 8, 9, 9, 8, 9, 9]", out
    assert lines[1] == "[2]", out
    assert lines[2].startswith("[1, 2, 3, 4, 5, 6, 7, 8, 9]") and '"row"' in lines[2] and '"col"' in lines[2], out
    assert lines[3] == "binary", out
