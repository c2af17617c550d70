//! Session commands the kernel answers itself: `:client`, `:clients`, `:help` without compiling;
//! `:vars` compiles one small hidden cell when tensors need describing (see
//! `engine::describe`). Other `:` commands (`:dep`, `:opt`, ...) go to evcxr.

use tensorbook::{default_device, set_default_client, set_default_device, Client, Device};

use crate::engine::Engine;

/// What a session command printed, or why it failed.
pub type CommandResult = Result<String, String>;

/// Runs `cell` if it is one of the kernel's own commands.
pub async fn run(cell: &str, engine: &Engine) -> Option<CommandResult> {
    let line = cell.trim();
    let (name, arg) = match line.split_once(char::is_whitespace) {
        Some((n, a)) => (n, a.trim()),
        None => (line, ""),
    };
    if line.contains('\n') {
        return None;
    }
    Some(match name {
        ":client" => client(arg),
        ":clients" => Ok(crate::clients::table()),
        ":vars" => Ok(vars(engine).await),
        ":help" => Ok(HELP.to_string()),
        _ => return None,
    })
}

const HELP: &str = "tensorbook session commands (answered by the kernel, no compilation but :vars):
  :client                 show the session default client and device
  :client auto|host|cuda|binary|host:1
                          set it (auto = first available of cuda, host); existing tensors stay put
  :clients                list clients, their devices and why any is unavailable
  :vars                   list variables, their types, and each tensor's dtype, shape,
                          placement and bytes (tensors are described by one small hidden
                          cell, so the first :vars after a cell takes a compile)
  :help                   this list
evcxr commands also work, e.g. :dep NAME = \"VERSION\", :opt LEVEL, :timing, :explain";

fn client(arg: &str) -> CommandResult {
    let device = match arg {
        "" => {
            let d = default_device();
            return Ok(format!(
                "session default: {d} (new tensors and servings go to {d})"
            ));
        }
        "auto" => set_default_client(&[Client::Cuda, Client::Host]),
        spec => Device::parse(spec).and_then(set_default_device),
    }
    .map_err(|e| e.to_string())?;
    Ok(format!(
        "session default is now {device}; existing tensors keep their placement"
    ))
}

async fn vars(engine: &Engine) -> String {
    let vars = engine.vars().await;
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
            v.tensor.unwrap_or_default()
        );
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out.trim_end().to_string()
}
