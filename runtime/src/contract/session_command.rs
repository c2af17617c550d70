//! How the kernel's session commands (`:client`, `:clients`) are answered where the session's
//! state lives, in the evaluation process: whatever a cell set there (the simulated
//! accelerator, virtual host devices, the default) is what they see and change.
//!
//! The kernel writes the command to the request file ([`super::env::SESSION_COMMAND`], in its
//! state directory) and calls the runtime's `tensorbook_session_command` in the evaluation
//! process, compiling nothing; that prints one marker line ([`super::markers::SESSION_COMMAND`])
//! with the answer as JSON, `{"ok": text}` or `{"error": text}`.

use std::path::Path;

use serde_json::{json, Value};

use super::markers::SESSION_COMMAND;

/// The request file's name in the kernel's state directory.
pub const FILE_NAME: &str = "session-command";

/// Points this process and the ones it starts at `path` for requests.
pub fn use_file(path: &Path) {
    super::env::set(super::env::SESSION_COMMAND, path);
}

/// Writes the command for the evaluation process to read.
pub fn write_request(command: &str) -> std::io::Result<()> {
    let path = super::env::path(super::env::SESSION_COMMAND)
        .ok_or_else(|| std::io::Error::other("no session command file is set"))?;
    std::fs::write(path, command)
}

/// The command the kernel wrote, if any.
pub fn read_request() -> Option<String> {
    std::fs::read_to_string(super::env::path(super::env::SESSION_COMMAND)?).ok()
}

/// The answer line (no newline).
pub fn answer_line(answer: &Result<String, String>) -> String {
    let body = match answer {
        Ok(text) => json!({ "ok": text }),
        Err(text) => json!({ "error": text }),
    };
    format!("{SESSION_COMMAND}{body}")
}

/// Reads an answer line; None for any other line.
pub fn from_line(line: &str) -> Option<Result<String, String>> {
    let body: Value = serde_json::from_str(line.strip_prefix(SESSION_COMMAND)?).ok()?;
    if let Some(text) = body.get("ok").and_then(Value::as_str) {
        return Some(Ok(text.to_string()));
    }
    Some(Err(body
        .get("error")
        .and_then(Value::as_str)
        .unwrap_or("the session command gave no answer")
        .to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_read_back_as_written() {
        for answer in [
            Ok("host:0\nline two".to_string()),
            Err("no such client".into()),
        ] {
            assert_eq!(from_line(&answer_line(&answer)), Some(answer));
        }
        assert_eq!(from_line("session default: host:0"), None);
    }
}
