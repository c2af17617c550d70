//! Session commands the kernel recognises: `:client`, `:clients` and `:vars`, answered in the
//! evaluation process without compiling (the runtime's `tensorbook_session_command` and
//! `tensorbook_describe_variables`), where what cells set is; `:help` and `:quit` here. Other
//! `:` commands (`:dep`, `:opt`, ...) go to evcxr.

/// One of the kernel's own commands.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Command {
    /// `:client [spec]`: show or set the session default.
    Client(String),
    /// `:clients`: the table of clients.
    Clients,
    /// `:vars`: the session's variables.
    Vars,
    /// `:help`.
    Help,
    /// `:quit`, which evcxr answers by ending the process: here that would be the kernel,
    /// with the session it holds, so the kernel refuses it.
    Quit,
}

/// The command in `cell`, if the cell is one line naming one of the kernel's commands.
pub fn parse(cell: &str) -> Option<Command> {
    let line = cell.trim();
    if line.contains('\n') {
        return None;
    }
    let (name, arg) = match line.split_once(char::is_whitespace) {
        Some((n, a)) => (n, a.trim()),
        None => (line, ""),
    };
    Some(match name {
        ":client" => Command::Client(arg.to_string()),
        ":clients" => Command::Clients,
        ":vars" => Command::Vars,
        ":help" => Command::Help,
        ":quit" => Command::Quit,
        _ => return None,
    })
}

/// `:help`'s text.
pub const HELP: &str =
    "tensorbook session commands (answered by the kernel, no compilation but :vars):
  :client                 show the session default client and device
  :client auto|host|cuda|binary|host:1
                          set it (auto = first available of cuda, host); existing tensors stay put
  :clients                list clients, their devices and why any is unavailable
  :vars                   list variables, their types, and each tensor's dtype, shape,
                          placement and bytes (tensors are described by one small hidden
                          cell, so the first :vars after a cell takes a compile)
  :help                   this list
evcxr commands also work, e.g. :dep NAME = \"VERSION\", :opt LEVEL, :timing, :explain";

/// The answer to `:quit`.
pub const QUIT: &str = "`:quit` would end the kernel process and the session it holds; shut the \
kernel down from the frontend instead (JupyterLab: Kernel > Shut Down Kernel)";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_are_one_line_and_known() {
        assert_eq!(
            parse(" :client host:1 "),
            Some(Command::Client("host:1".into()))
        );
        assert_eq!(parse(":client"), Some(Command::Client(String::new())));
        assert_eq!(parse(":vars"), Some(Command::Vars));
        assert_eq!(parse(":clients"), Some(Command::Clients));
        assert_eq!(parse(":help"), Some(Command::Help));
        assert_eq!(parse(":quit"), Some(Command::Quit));
        assert_eq!(parse(":dep foo = \"1\""), None);
        assert_eq!(parse(":vars\nlet x = 1;"), None);
        assert_eq!(parse("let x = 1;"), None);
    }

    #[test]
    fn a_bad_client_names_the_choices_and_changes_nothing() {
        let before = tensorbook::default_device();
        let err = tensorbook::notebook::session_command("client tpu:0").unwrap_err();
        assert!(err.contains("tpu"), "{err}");
        assert!(err.contains("auto"), "{err}");
        assert_eq!(tensorbook::default_device(), before);
        let shown = tensorbook::notebook::session_command("client").unwrap();
        assert!(shown.contains(&before.to_string()));
    }
}
