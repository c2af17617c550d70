//! Marker lines: how a cell or the evaluation process tells the kernel something in the middle
//! of ordinary output. tensorbook's own start with ESC and a tag, so no printable text can be
//! mistaken for one; evcxr's are its own protocol and spelled as evcxr spells them.

/// Starts the line `describe_variables` prints for `:vars` (JSON follows, see
/// [`super::variables`]).
pub const VARIABLES: &str = "\u{1b}[tensorbook:variables]";
/// Starts the line with a session command's answer (JSON follows, see
/// [`super::session_command`]).
pub const SESSION_COMMAND: &str = "\u{1b}[tensorbook:session-command]";
/// Printed alone on stderr by the evaluation process when a cell returned an `Err` through `?`.
pub const USER_ERROR: &str = "\u{1b}[tensorbook:user-error]";
/// Printed on stdout by the evaluation process just after [`USER_ERROR`] went to stderr. stdout
/// is ordered with the cell's completion and stderr is not (evcxr's end-of-stderr mark comes
/// from another thread and can pass it), so a kernel that sees this waits for `USER_ERROR`.
pub const USER_ERROR_FOLLOWS: &str = "\u{1b}[tensorbook:user-error-follows]";
/// Starts a stdout line that the cell left unfinished: its text is shown as it is, no newline.
pub const PARTIAL_LINE: &str = "\u{1b}[tensorbook:partial]";

/// evcxr: starts a block of rich content (`EVCXR_BEGIN_CONTENT <mime>`).
pub const EVCXR_BEGIN_CONTENT: &str = "EVCXR_BEGIN_CONTENT";
/// evcxr: ends a block of rich content.
pub const EVCXR_END_CONTENT: &str = "EVCXR_END_CONTENT";
/// evcxr: a cell asks for a line of input (`EVCXR_INPUT_REQUEST:<prompt>`).
pub const EVCXR_INPUT_REQUEST: &str = "EVCXR_INPUT_REQUEST";
/// evcxr: a cell asks for a password.
pub const EVCXR_INPUT_REQUEST_PASSWORD: &str = "EVCXR_INPUT_REQUEST_PASSWORD";
/// evcxr: printed on stderr after a cell returned an error through `?`.
pub const EVCXR_ERROR_OCCURRED: &str = "EVCXR_ERROR_OCCURRED";
/// evcxr: printed (with the variable's name after it) when a stored variable's type was
/// redefined.
pub const EVCXR_VARIABLE_CHANGED_TYPE: &str = "EVCXR_VARIABLE_CHANGED_TYPE:";
/// evcxr: printed on stdout when the cell's code unwound out of the cell (a panic nothing in the
/// cell caught); the vendored evcxr passes it on (patch 17). A panic the cell or the runtime
/// caught prints its report on stderr but not this.
pub const EVCXR_PANIC_NOTIFICATION: &str = "EVCXR_PANIC_NOTIFICATION";
/// evcxr: printed on stdout after every cell.
pub const EVCXR_EXECUTION_COMPLETE: &str = "EVCXR_EXECUTION_COMPLETE";

/// One block of rich content in evcxr's convention, newline-terminated.
pub fn content_block(mime: &str, content: &str) -> String {
    format!("{EVCXR_BEGIN_CONTENT} {mime}\n{content}\n{EVCXR_END_CONTENT}\n")
}

/// The line a cell prints to ask for input; evcxr cuts the prompt at its first ':', so a ratio
/// sign (U+2236, which looks the same) stands in for every ':' and newlines become spaces.
pub fn input_request(prompt: &str, password: bool) -> String {
    let kind = if password {
        EVCXR_INPUT_REQUEST_PASSWORD
    } else {
        EVCXR_INPUT_REQUEST
    };
    format!(
        "{kind}:{}",
        prompt.replace('\n', " ").replace(':', "\u{2236}")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markers_cannot_be_printed_text() {
        for marker in [
            VARIABLES,
            SESSION_COMMAND,
            USER_ERROR,
            USER_ERROR_FOLLOWS,
            PARTIAL_LINE,
        ] {
            assert!(marker.starts_with('\u{1b}'));
        }
    }

    #[test]
    fn blocks_and_requests_follow_evcxr() {
        assert_eq!(
            content_block("text/html", "<b>x</b>"),
            "EVCXR_BEGIN_CONTENT text/html\n<b>x</b>\nEVCXR_END_CONTENT\n"
        );
        assert_eq!(
            input_request("name: \nplease", false),
            "EVCXR_INPUT_REQUEST:name\u{2236}  please"
        );
        assert!(input_request("pw", true).starts_with("EVCXR_INPUT_REQUEST_PASSWORD:"));
    }
}
