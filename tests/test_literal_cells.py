"""A cell of literal bindings (`let n = 1000;`) runs without a build (vendored evcxr patch 11):
the variables it defines must be exactly what the compiled cell would have defined, in value
and in type, for later cells, for `:vars` and for a restart of the evaluation process."""
import pytest

from conftest import error_of, run_cell, session_with, stdout_of

# Each is bound once by the literal tier (`let lit_N = E;`) and once by a compiled cell
# (`let cmp_N = { E };`: a block is not a literal, so that cell is built by rustc).
EXPRESSIONS = [
    "3 + 1",
    "-7 / 2",
    "-7 % 2",
    "!5",
    "0xff_u8",
    "1_000_000i64 * 3",
    "b'a'",
    "0.1 + 0.2",
    "0.1f32 * 3.0f32",
    "1e-3 / 7.0",
    "2f64",
    "-0.0",
    "1.0 / 0.0",
    '"tab\\tand \\u{e9}"',
    "'\\u{1F600}'",
    "1 < 2 && !false",
    "2.5 >= 2.5",
]


@pytest.fixture(scope="module")
def session():
    yield from session_with("let warm_up = 1;")


@pytest.fixture
def fresh():
    yield from session_with("let warm_up = 1;")


def described(kc, name):
    reply, outputs = run_cell(kc, f'println!("{{:?}} {{}}", {name}, std::any::type_name_of_val(&{name}));')
    assert reply["content"]["status"] == "ok", reply["content"]
    return stdout_of(outputs).strip()


def var_types(kc):
    reply, outputs = run_cell(kc, ":vars")
    assert reply["content"]["status"] == "ok", reply["content"]
    types = {}
    for line in stdout_of(outputs).splitlines()[1:]:
        name, _, rest = line.partition(" ")
        types[name] = rest.strip()
    return types


def test_literal_bindings_equal_compiled_ones(session):
    _, kc = session
    for i, expr in enumerate(EXPRESSIONS):
        for code in (f"let lit_{i} = {expr};", f"let cmp_{i} = {{ {expr} }};"):
            reply, _ = run_cell(kc, code)
            assert reply["content"]["status"] == "ok", (code, reply["content"])
    types = var_types(kc)
    for i, expr in enumerate(EXPRESSIONS):
        assert described(kc, f"lit_{i}") == described(kc, f"cmp_{i}"), expr
        assert types[f"lit_{i}"] == types[f"cmp_{i}"], (expr, types)


def test_several_bindings_and_mut_in_one_cell(session):
    _, kc = session
    reply, _ = run_cell(kc, "let mut counter = 10;\nlet label = \"steps\";\nlet rate = 0.5f32;")
    assert reply["content"]["status"] == "ok", reply["content"]
    reply, outputs = run_cell(kc, 'counter += 5;\nprintln!("{label} {counter} {rate}");')
    assert reply["content"]["status"] == "ok", reply["content"]
    assert stdout_of(outputs).strip() == "steps 15 0.5"


def test_a_literal_constrained_by_the_cell_is_compiled(session):
    """`x` is a u64 here, not the i32 a lone `let x = 1;` would be."""
    _, kc = session
    reply, _ = run_cell(kc, "let constrained = 1;\nlet wide: u64 = constrained;")
    assert reply["content"]["status"] == "ok", reply["content"]
    assert described(kc, "constrained") == "1 u64"


def test_overflow_is_left_to_rustc(session):
    _, kc = session
    content = error_of(*run_cell(kc, "let too_big = 2147483647 + 1;"))
    assert content["ename"] == "CompilationError", content
    assert "too_big" not in var_types(kc)


def test_literal_variables_come_back_after_the_process_dies(fresh):
    _, kc = fresh
    reply, _ = run_cell(kc, "let survivor = 41 + 1;\nlet ratio = 0.25f32;")
    assert reply["content"]["status"] == "ok", reply["content"]
    content = error_of(*run_cell(kc, "std::process::exit(3);"))
    assert "restarted" in content["evalue"], content
    restored = content["evalue"].partition("variables restored: ")[2].split(";")[0]
    assert "survivor" in restored and "ratio" in restored, content
    assert described(kc, "survivor") == "42 i32"
    assert described(kc, "ratio") == "0.25 f32"
