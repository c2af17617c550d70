//! The display socket: how `tensorbook::display`, `DisplayHandle::update` and `clear_output`
//! reach the kernel while a cell runs.
//!
//! The kernel listens on a Unix socket in its state directory ([`SOCKET_FILE`], named to the
//! evaluation process by [`super::env::DISPLAY_SOCKET`]). A cell connects, writes one JSON
//! line ([`Message::to_line`]) and waits for the one byte [`ACK`]: the kernel sends it once the
//! message is queued on iopub, so it precedes anything the cell does next.

use serde_json::{json, Map, Value};

/// The socket's file name in the kernel's state directory.
pub const SOCKET_FILE: &str = "display.sock";

/// The kernel's acknowledgement.
pub const ACK: u8 = b'k';

/// A mime bundle: `(mime type, content)` pairs.
pub type Bundle = Vec<(String, String)>;

/// One message from a cell to the kernel.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Message {
    /// Show `data` now (Jupyter's display_data) under `display_id`.
    Display {
        /// The id later updates name.
        display_id: String,
        /// The bundle.
        data: Bundle,
    },
    /// Replace what `display_id` shows (update_display_data).
    Update {
        /// The display to replace.
        display_id: String,
        /// The new bundle.
        data: Bundle,
    },
    /// Clear the cell's output (clear_output); with `wait`, once new output arrives.
    Clear {
        /// Whether to wait for new output.
        wait: bool,
    },
}

/// A mime bundle as the JSON object Jupyter messages carry (`{"text/plain": "...", ...}`).
pub fn bundle_json(data: &[(String, String)]) -> Value {
    Value::Object(
        data.iter()
            .map(|(k, v)| (k.clone(), Value::String(v.clone())))
            .collect::<Map<_, _>>(),
    )
}

fn bundle_from(value: &Value) -> Option<Bundle> {
    value
        .as_object()?
        .iter()
        .map(|(k, v)| Some((k.clone(), v.as_str()?.to_string())))
        .collect()
}

impl Message {
    /// The JSON line sent on the socket (no newline).
    pub fn to_line(&self) -> String {
        match self {
            Message::Display { display_id, data } => {
                json!({ "type": "display", "display_id": display_id, "data": bundle_json(data) })
            }
            Message::Update { display_id, data } => {
                json!({ "type": "update", "display_id": display_id, "data": bundle_json(data) })
            }
            Message::Clear { wait } => json!({ "type": "clear", "wait": wait }),
        }
        .to_string()
    }

    /// Reads one line; the error says what is wrong with it.
    pub fn parse(line: &str) -> Result<Message, String> {
        let value: Value =
            serde_json::from_str(line).map_err(|e| format!("not JSON ({e}): {}", line.trim()))?;
        let id = || {
            value["display_id"]
                .as_str()
                .map(str::to_string)
                .ok_or_else(|| format!("no display_id: {}", line.trim()))
        };
        let data = || {
            bundle_from(&value["data"])
                .ok_or_else(|| format!("data is not a mime bundle: {}", line.trim()))
        };
        match value["type"].as_str() {
            Some("display") => Ok(Message::Display {
                display_id: id()?,
                data: data()?,
            }),
            Some("update") => Ok(Message::Update {
                display_id: id()?,
                data: data()?,
            }),
            Some("clear") => Ok(Message::Clear {
                wait: value["wait"].as_bool().unwrap_or(false),
            }),
            _ => Err(format!("unknown message type: {}", line.trim())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_round_trip() {
        let data: Bundle = vec![
            ("text/plain".into(), "x\n\"".into()),
            ("text/html".into(), "<b>".into()),
        ];
        for message in [
            Message::Display {
                display_id: "a".into(),
                data: data.clone(),
            },
            Message::Update {
                display_id: "a".into(),
                data,
            },
            Message::Clear { wait: true },
        ] {
            let line = message.to_line();
            assert!(!line.contains('\n'));
            let mut back = Message::parse(&line).unwrap();
            if let (Message::Display { data: a, .. }, Message::Display { data: b, .. }) =
                (&mut back, &message)
            {
                a.sort();
                assert_eq!(a.len(), b.len());
                continue;
            }
            assert_eq!(back.to_line(), line);
        }
    }

    #[test]
    fn bundles_are_mime_objects() {
        let b = bundle_json(&[
            ("text/plain".into(), "x\n\"".into()),
            ("text/html".into(), "<b>".into()),
        ]);
        assert_eq!(b, json!({ "text/plain": "x\n\"", "text/html": "<b>" }));
    }

    #[test]
    fn malformed_messages_are_refused_with_a_reason() {
        assert!(Message::parse("garbage").unwrap_err().contains("not JSON"));
        assert!(Message::parse(r#"{"type":"display","data":{}}"#)
            .unwrap_err()
            .contains("display_id"));
        assert!(
            Message::parse(r#"{"type":"update","display_id":"a","data":[1]}"#)
                .unwrap_err()
                .contains("mime bundle")
        );
        assert!(Message::parse(r#"{"type":"explode"}"#)
            .unwrap_err()
            .contains("unknown"));
    }
}
