//! Session commands the kernel answers itself, without compiling: `:client`, `:clients`,
//! `:vars`, `:help`. Other `:` commands (`:dep`, `:opt`, ...) go to evcxr.

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

const HELP: &str = "tensorbook session commands (answered by the kernel, no compilation):
  :client                 show the session default client and device
  :client auto|host|cuda|binary|host:1
                          set it (auto = first available of cuda, host); existing tensors stay put
  :clients                list clients, their devices and why any is unavailable
  :vars                   list variables and their types
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
    let mut vars = engine.vars().await;
    if vars.is_empty() {
        return "no variables yet".into();
    }
    vars.sort();
    let width = vars.iter().map(|(n, _)| n.len()).max().unwrap_or(4).max(4);
    let mut out = format!("{:<width$}  type\n", "name");
    for (name, ty) in vars {
        out.push_str(&format!("{name:<width$}  {ty}\n"));
    }
    out.trim_end().to_string()
}
