//! The display socket's listener: `tensorbook::display`, `DisplayHandle::update` and
//! `clear_output` in a running cell become display_data, update_display_data and clear_output
//! of the request whose output streams now; a widget's comm messages go to [`Comms`], and a
//! `listen` connection becomes the way back to the evaluation process. The messages are
//! `tensorbook::contract::display`'s; each is acknowledged once queued on iopub, so it precedes
//! the cell's result.

use std::io::{BufRead, Write};
use std::path::Path;
use std::sync::{Arc, Mutex};

use serde_json::{json, Value};
use tensorbook::contract::display::{bundle_json, Message as DisplayMessage, ACK};
use tensorbook::contract::env;
use tokio::sync::mpsc;

use super::comms::Comms;
use super::requests::{log, publish};
use super::wire::Message;

/// The iopub message type and content for one display message (comm messages and `listen`
/// are [`Comms`]'s).
fn iopub_message(message: &DisplayMessage) -> Option<(&'static str, Value)> {
    match message {
        DisplayMessage::Display {
            display_id,
            data: d,
        } => Some((
            "display_data",
            json!({ "data": bundle_json(d), "metadata": {}, "transient": { "display_id": display_id } }),
        )),
        DisplayMessage::Update {
            display_id,
            data: d,
        } => Some((
            "update_display_data",
            json!({ "data": bundle_json(d), "metadata": {}, "transient": { "display_id": display_id } }),
        )),
        DisplayMessage::Clear { wait } => Some(("clear_output", json!({ "wait": wait }))),
        DisplayMessage::CommOpen { .. }
        | DisplayMessage::CommMsg { .. }
        | DisplayMessage::CommClose { .. }
        | DisplayMessage::Listen => None,
    }
}

/// Binds the socket at `path`, names it to the evaluation process and serves it on a thread.
pub fn start_listener(
    path: &Path,
    iopub: mpsc::UnboundedSender<Message>,
    session: String,
    parent: Arc<Mutex<Option<Message>>>,
    comms: Arc<Comms>,
) -> Result<(), String> {
    let listener = std::os::unix::net::UnixListener::bind(path)
        .map_err(|e| format!("cannot listen on {}: {e}", path.display()))?;
    env::set(env::DISPLAY_SOCKET, path);
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let mut reader = std::io::BufReader::new(&stream);
            let mut line = String::new();
            if reader.read_line(&mut line).unwrap_or(0) == 0 {
                continue;
            }
            match DisplayMessage::parse(&line) {
                Ok(DisplayMessage::Listen) => {
                    let _ = (&stream).write_all(&[ACK]);
                    comms.listen(stream);
                    continue;
                }
                Ok(message) => {
                    let parent = parent.lock().unwrap_or_else(|e| e.into_inner());
                    match iopub_message(&message) {
                        Some((msg_type, content)) => {
                            if let Some(p) = parent.as_ref() {
                                publish(&iopub, &session, p, msg_type, content);
                            }
                        }
                        // A widget's messages go out between requests too: the frontend's
                        // model must follow whenever a cell's thread changes it.
                        None => comms.relay_from_cell(&message, parent.as_ref()),
                    }
                }
                Err(e) => log(&format!("ignored a malformed display message: {e}")),
            }
            let _ = (&stream).write_all(&[ACK]);
        }
    });
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_messages_map_to_jupyter_messages() {
        let data: tensorbook::contract::display::Bundle = vec![("text/plain".into(), "1".into())];
        let (kind, content) = iopub_message(&DisplayMessage::Display {
            display_id: "d".into(),
            data: data.clone(),
        })
        .unwrap();
        assert_eq!(kind, "display_data");
        assert_eq!(content["transient"]["display_id"], "d");
        assert_eq!(content["data"]["text/plain"], "1");
        let (kind, _) = iopub_message(&DisplayMessage::Update {
            display_id: "d".into(),
            data,
        })
        .unwrap();
        assert_eq!(kind, "update_display_data");
        let (kind, content) = iopub_message(&DisplayMessage::Clear { wait: true }).unwrap();
        assert!(iopub_message(&DisplayMessage::Listen).is_none());
        assert_eq!(kind, "clear_output");
        assert_eq!(content["wait"], true);
    }
}
