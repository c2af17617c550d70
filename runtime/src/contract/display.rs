//! The display socket: how `tensorbook::display`, `DisplayHandle::update`, `clear_output` and
//! the widgets' comm messages reach the kernel while a cell runs, and how the frontend's widget
//! messages reach the running cell.
//!
//! The kernel listens on a Unix socket in its state directory ([`SOCKET_FILE`], named to the
//! evaluation process by [`super::env::DISPLAY_SOCKET`]). A cell connects, writes one JSON
//! line ([`Message::to_line`]) and waits for the one byte [`ACK`]: the kernel sends it once the
//! message is queued on iopub, so it precedes anything the cell does next.
//!
//! The way back is one connection the evaluation process opens with [`Message::Listen`] and
//! keeps: after the [`ACK`] the kernel writes an [`Inbound`] line on it for every comm message
//! from the frontend (a slider moved, a button clicked), whether or not a cell runs. Its end of
//! file tells the kernel the evaluation process is gone.

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
    /// Open a comm from the kernel side (comm_open), e.g. a widget's model.
    CommOpen {
        /// The comm's id (a widget's model id).
        comm_id: String,
        /// The target the frontend opens it on (`jupyter.widget`).
        target_name: String,
        /// The comm_open's data (a widget's `state` and `buffer_paths`).
        data: Value,
        /// The comm_open's metadata (the widget protocol's `version`).
        metadata: Value,
    },
    /// A message on an open comm (comm_msg), e.g. a widget's `update`.
    CommMsg {
        /// The comm.
        comm_id: String,
        /// The message's data.
        data: Value,
    },
    /// Close a comm (comm_close).
    CommClose {
        /// The comm.
        comm_id: String,
    },
    /// Keep this connection open: the kernel writes [`Inbound`] lines on it from now on.
    Listen,
}

/// One message from the frontend to the evaluation process, on its [`Message::Listen`]
/// connection.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Inbound {
    /// A comm_msg from the frontend (a widget's `update`, or `custom` for a button's click).
    CommMsg {
        /// The comm.
        comm_id: String,
        /// The message's data.
        data: Value,
    },
    /// The frontend closed the comm.
    CommClose {
        /// The comm.
        comm_id: String,
    },
}

impl Inbound {
    /// The JSON line sent on the listening connection (no newline).
    pub fn to_line(&self) -> String {
        match self {
            Inbound::CommMsg { comm_id, data } => {
                json!({ "type": "comm_msg", "comm_id": comm_id, "data": data })
            }
            Inbound::CommClose { comm_id } => json!({ "type": "comm_close", "comm_id": comm_id }),
        }
        .to_string()
    }

    /// Reads one line; the error says what is wrong with it.
    pub fn parse(line: &str) -> Result<Inbound, String> {
        let value: Value =
            serde_json::from_str(line).map_err(|e| format!("not JSON ({e}): {}", line.trim()))?;
        let comm_id = value["comm_id"]
            .as_str()
            .map(str::to_string)
            .ok_or_else(|| format!("no comm_id: {}", line.trim()))?;
        match value["type"].as_str() {
            Some("comm_msg") => Ok(Inbound::CommMsg {
                comm_id,
                data: value["data"].clone(),
            }),
            Some("comm_close") => Ok(Inbound::CommClose { comm_id }),
            _ => Err(format!("unknown message type: {}", line.trim())),
        }
    }
}

/// Whether `mime` carries JSON (`application/json`, `...+json`): Jupyter sends those as
/// objects, not as strings.
pub fn is_json_mime(mime: &str) -> bool {
    mime == "application/json" || mime.ends_with("+json")
}

/// A mime bundle as the JSON object Jupyter messages carry (`{"text/plain": "...", ...}`).
/// JSON mime types (a widget's view among them) go as the JSON they hold, when they parse.
pub fn bundle_json(data: &[(String, String)]) -> Value {
    Value::Object(
        data.iter()
            .map(|(k, v)| {
                let parsed = is_json_mime(k)
                    .then(|| serde_json::from_str::<Value>(v).ok())
                    .flatten();
                (
                    k.clone(),
                    parsed.unwrap_or_else(|| Value::String(v.clone())),
                )
            })
            .collect::<Map<_, _>>(),
    )
}

fn bundle_from(value: &Value) -> Option<Bundle> {
    value
        .as_object()?
        .iter()
        .map(|(k, v)| match v {
            Value::String(s) => Some((k.clone(), s.clone())),
            other if is_json_mime(k) => Some((k.clone(), other.to_string())),
            _ => None,
        })
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
            Message::CommOpen {
                comm_id,
                target_name,
                data,
                metadata,
            } => json!({
                "type": "comm_open",
                "comm_id": comm_id,
                "target_name": target_name,
                "data": data,
                "metadata": metadata,
            }),
            Message::CommMsg { comm_id, data } => {
                json!({ "type": "comm_msg", "comm_id": comm_id, "data": data })
            }
            Message::CommClose { comm_id } => json!({ "type": "comm_close", "comm_id": comm_id }),
            Message::Listen => json!({ "type": "listen" }),
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
        let comm_id = || {
            value["comm_id"]
                .as_str()
                .map(str::to_string)
                .ok_or_else(|| format!("no comm_id: {}", line.trim()))
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
            Some("comm_open") => Ok(Message::CommOpen {
                comm_id: comm_id()?,
                target_name: value["target_name"]
                    .as_str()
                    .map(str::to_string)
                    .ok_or_else(|| format!("no target_name: {}", line.trim()))?,
                data: value["data"].clone(),
                metadata: value["metadata"].clone(),
            }),
            Some("comm_msg") => Ok(Message::CommMsg {
                comm_id: comm_id()?,
                data: value["data"].clone(),
            }),
            Some("comm_close") => Ok(Message::CommClose {
                comm_id: comm_id()?,
            }),
            Some("listen") => Ok(Message::Listen),
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
            Message::CommOpen {
                comm_id: "c".into(),
                target_name: "jupyter.widget".into(),
                data: json!({ "state": { "value": 3 }, "buffer_paths": [] }),
                metadata: json!({ "version": "2.1.0" }),
            },
            Message::CommMsg {
                comm_id: "c".into(),
                data: json!({ "method": "update", "state": { "value": 4 } }),
            },
            Message::CommClose {
                comm_id: "c".into(),
            },
            Message::Listen,
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
    fn inbound_messages_round_trip_and_refuse_garbage() {
        for message in [
            Inbound::CommMsg {
                comm_id: "c".into(),
                data: json!({ "method": "custom", "content": { "event": "click" } }),
            },
            Inbound::CommClose {
                comm_id: "c".into(),
            },
        ] {
            assert_eq!(Inbound::parse(&message.to_line()).unwrap(), message);
        }
        assert!(Inbound::parse("{").unwrap_err().contains("not JSON"));
        assert!(Inbound::parse(r#"{"type":"comm_msg"}"#)
            .unwrap_err()
            .contains("comm_id"));
        assert!(Inbound::parse(r#"{"type":"boom","comm_id":"c"}"#)
            .unwrap_err()
            .contains("unknown"));
    }

    #[test]
    fn json_mime_types_travel_as_json() {
        let view = r#"{"model_id":"m","version_major":2,"version_minor":0}"#;
        let b = bundle_json(&[
            (
                "application/vnd.jupyter.widget-view+json".into(),
                view.into(),
            ),
            ("application/json".into(), "not json".into()),
        ]);
        assert_eq!(
            b["application/vnd.jupyter.widget-view+json"]["model_id"],
            "m"
        );
        assert_eq!(b["application/json"], "not json");
        let line = Message::Display {
            display_id: "d".into(),
            data: vec![(
                "application/vnd.jupyter.widget-view+json".into(),
                view.into(),
            )],
        }
        .to_line();
        let Message::Display { data, .. } = Message::parse(&line).unwrap() else {
            panic!("not a display")
        };
        assert_eq!(
            bundle_json(&data),
            json!({ "application/vnd.jupyter.widget-view+json": serde_json::from_str::<Value>(view).unwrap() })
        );
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
