"""papermill parameters for tensorbook notebooks, whose cells are Rust.

papermill injects a cell of assignments after the cell tagged `parameters`. For a Rust
notebook each parameter becomes a `let` that shadows the notebook's own binding, written so
that its type is the one a notebook declares for it:

    integers >= 0   let epochs = 3_usize;      (counts and sizes; negative ones are i64)
    floats          let lr = 0.1_f64;
    booleans        let plot = true;
    strings         let name = "a \\"quoted\\" word";    (&'static str)
    None            let limit: Option<()> = None;
    lists           let sizes = vec![784_usize, 50_usize, 10_usize];
    dicts           let opts = std::collections::HashMap::from([("k", 1_usize)]);

So a notebook's parameters cell declares them the same way (`let epochs: usize = 3;`), and the
injected cell keeps every later cell compiling. Registered for the kernel `tensorbook` and the
language `rust` when papermill loads its engines (see pyproject.toml).
"""
import math

from papermill.engines import NBClientEngine
from papermill.translators import Translator, papermill_translators


class RustTranslator(Translator):
    """Python values as Rust literals and `let` bindings."""

    @classmethod
    def translate_escaped_str(cls, str_val):
        out = []
        for ch in str(str_val):
            if ch == "\\":
                out.append("\\\\")
            elif ch == '"':
                out.append('\\"')
            elif ch == "\n":
                out.append("\\n")
            elif ch == "\r":
                out.append("\\r")
            elif ch == "\t":
                out.append("\\t")
            elif ord(ch) < 0x20 or ord(ch) == 0x7F:
                out.append(f"\\u{{{ord(ch):x}}}")
            else:
                out.append(ch)
        return '"' + "".join(out) + '"'

    @classmethod
    def translate_none(cls, val):
        return "None"

    @classmethod
    def translate_int(cls, val):
        return f"{val}_usize" if val >= 0 else f"{val}_i64"

    @classmethod
    def translate_float(cls, val):
        if math.isnan(val):
            return "f64::NAN"
        if math.isinf(val):
            return "f64::INFINITY" if val > 0 else "f64::NEG_INFINITY"
        return f"{val!r}_f64"

    @classmethod
    def translate_bool(cls, val):
        return "true" if val else "false"

    @classmethod
    def translate_list(cls, val):
        return "vec![" + ", ".join(cls.translate(v) for v in val) + "]"

    @classmethod
    def translate_dict(cls, val):
        pairs = ", ".join(f"({cls.translate(k)}, {cls.translate(v)})" for k, v in val.items())
        return f"std::collections::HashMap::from([{pairs}])"

    @classmethod
    def comment(cls, cmt_str):
        return f"// {cmt_str}".strip()

    @classmethod
    def assign(cls, name, str_val):
        if str_val == "None":
            # A bare None has no type Rust could infer.
            return f"let {name}: Option<()> = None;"
        return f"let {name} = {str_val};"


class TensorbookEngine(NBClientEngine):
    """papermill's nbclient engine under the name `tensorbook`; loading it registers the
    translator (the reason this entry point exists)."""


papermill_translators.register("tensorbook", RustTranslator)
papermill_translators.register("rust", RustTranslator)
