//! `:vars`: the session's variables with their types, and for tensors what only the
//! evaluation process knows — dtype, shape, placement, bytes — asked of the runtime there
//! (see `tensorbook::contract::variables`).

use std::path::Path;
use std::sync::Mutex;

use tensorbook::contract::variables::TensorDescription;

use super::log_line;
use super::output::CellReport;

/// A variable of the session, as `:vars` lists it.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Variable {
    /// Its name.
    pub name: String,
    /// Its Rust type, as evcxr infers it.
    pub ty: String,
    /// For a tensor: `f32[2][3] on host:0, 24 bytes` (or why it is unknown).
    pub tensor: Option<String>,
}

/// Types whose values `:vars` describes beyond the type: tensors, and the compiler's compiled
/// functions, streams, servings and data-parallel functions (named bare or through a `tensorbook` path, generics aside).
fn is_tensor_type(ty: &str) -> bool {
    let base = ty.split('<').next().unwrap_or(ty).trim();
    let last = base.rsplit("::").next().unwrap_or(base);
    let ours = !base.contains("::") || base.starts_with("tensorbook::");
    ours && matches!(
        last,
        "Tensor" | "Jit" | "Stream" | "Serving" | "DataParallel"
    )
}

/// The hidden cell that describes the tensors among `vars`, if there are any.
fn describe_code(vars: &[Variable]) -> Option<String> {
    let args: Vec<String> = vars
        .iter()
        .filter(|v| is_tensor_type(&v.ty))
        .map(|v| {
            format!(
                "({:?}, &{} as &dyn tensorbook::notebook::Describe)",
                v.name, v.name
            )
        })
        .collect();
    (!args.is_empty()).then(|| {
        format!(
            "tensorbook::notebook::describe_variables(&[{}]);",
            args.join(", ")
        )
    })
}

/// Runs `describe_in_process` and returns the descriptions it printed, if it printed any.
fn described_by(
    report: &Mutex<CellReport>,
    flush: &dyn Fn(),
    describe_in_process: impl FnOnce() -> Result<(), evcxr::Error>,
) -> Option<Vec<TensorDescription>> {
    report.lock().unwrap_or_else(|e| e.into_inner()).variables = None;
    let ran = describe_in_process();
    flush();
    let answer = report
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .variables
        .take();
    if let Err(e) = ran {
        log_line(&format!(":vars could not describe the tensors: {e}"));
        return None;
    }
    answer
}

/// Gives each tensor variable its description (or says it has none).
fn attach(vars: &mut [Variable], described: &[TensorDescription]) {
    for var in vars.iter_mut().filter(|v| is_tensor_type(&v.ty)) {
        var.tensor = Some(match described.iter().find(|d| d.name == var.name) {
            Some(d) => d.summary(),
            None => "(could not be described)".into(),
        });
    }
}

/// `:vars`' table.
pub fn table(vars: &[Variable]) -> String {
    if vars.is_empty() {
        return "no variables yet".into();
    }
    let width = vars.iter().map(|v| v.name.len()).max().unwrap_or(4).max(4);
    let type_width = vars.iter().map(|v| v.ty.len()).max().unwrap_or(4).max(4);
    let any_tensor = vars.iter().any(|v| v.tensor.is_some());
    let mut out = format!("{:<width$}  {:<type_width$}", "name", "type");
    if any_tensor {
        out.push_str("  tensor");
    }
    out.push('\n');
    for v in vars {
        let line = format!(
            "{:<width$}  {:<type_width$}  {}",
            v.name,
            v.ty,
            v.tensor.as_deref().unwrap_or_default()
        );
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out.trim_end().to_string()
}

/// The session's variables. The answer is kept until the next cell runs (`cells_run`), so
/// repeated `:vars` cost nothing. Tensors and the like are described by the runtime's
/// `tensorbook_describe_variables`, called in the evaluation process from `runtime_dylib` (the
/// runtime's shared library, which the cells link), which compiles nothing; without it, or if
/// that fails, by a hidden cell that names them (~100 ms of rustc).
pub(crate) fn describe(
    ctx: &mut evcxr::CommandContext,
    report: &Mutex<CellReport>,
    flush: &dyn Fn(),
    described: &mut Option<(u64, Vec<Variable>)>,
    cells_run: u64,
    runtime_dylib: Option<&Path>,
) -> Vec<Variable> {
    if let Some((at, vars)) = described.as_ref() {
        if *at == cells_run {
            return vars.clone();
        }
    }
    let mut vars: Vec<Variable> = ctx
        .variables_and_types()
        .map(|(name, ty)| Variable {
            name: name.to_string(),
            ty: ty.to_string(),
            tensor: None,
        })
        .collect();
    vars.sort();
    let Some(code) = describe_code(&vars) else {
        return vars;
    };
    let mut answer = None;
    if let Some(dylib) = runtime_dylib {
        answer = described_by(report, flush, || {
            ctx.call_function(dylib, "tensorbook_describe_variables")
                .map(drop)
        });
    }
    if answer.is_none() {
        answer = described_by(report, flush, || ctx.execute(&code).map(drop));
    }
    attach(&mut vars, &answer.unwrap_or_default());
    *described = Some((cells_run, vars.clone()));
    vars
}

#[cfg(test)]
mod tests {
    use super::*;

    fn var(name: &str, ty: &str) -> Variable {
        Variable {
            name: name.into(),
            ty: ty.into(),
            tensor: None,
        }
    }

    #[test]
    fn only_tensors_are_described_by_the_hidden_cell() {
        assert_eq!(describe_code(&[var("n", "i32")]), None);
        let code = describe_code(&[var("n", "i32"), var("t", "tensorbook::Tensor")]).unwrap();
        assert_eq!(
            code,
            "tensorbook::notebook::describe_variables(&[(\"t\", &t as &dyn tensorbook::notebook::Describe)]);"
        );
    }

    #[test]
    fn the_table_shows_descriptions_and_missing_ones() {
        let mut vars = vec![var("n", "i32"), var("t", "Tensor"), var("u", "Tensor")];
        let t = TensorDescription {
            name: "t".into(),
            dtype: "f32".into(),
            shape: vec![2, 3],
            device: "host:0".into(),
            bytes: 24,
            deallocated: false,
            other: None,
        };
        attach(&mut vars, &[t]);
        let table = table(&vars);
        assert!(
            table.contains("t     Tensor  f32[2][3] on host:0, 24 bytes"),
            "{table}"
        );
        assert!(
            table.contains("u     Tensor  (could not be described)"),
            "{table}"
        );
        assert!(table.lines().any(|l| l == "n     i32"), "{table}");
        assert_eq!(super::table(&[]), "no variables yet");
        assert!(is_tensor_type(
            "tensorbook::jit::Jit<tensorbook::tensor::Tensor>"
        ));
        assert!(is_tensor_type("Jit<(Tensor, Tensor)>"));
        assert!(is_tensor_type("Stream"));
        assert!(is_tensor_type("tensorbook::DataParallel<Vec<Tensor>>"));
        assert!(!is_tensor_type("std::io::Stream"));
        assert!(!is_tensor_type("Vec<Tensor>"));
    }
}
