//! Jupyter comms on the kernel's side: the ones cells open (ipywidgets' models, target
//! `jupyter.widget`), the frontend's `jupyter.widget.control` comm, and what the frontend sends
//! on them.
//!
//! The kernel relays every comm message between the frontend (iopub and shell) and the
//! evaluation process (the display socket, and the connection that process keeps open with
//! `listen`), and keeps a mirror of every widget's state on the way. The mirror answers without
//! the evaluation process, which may be busy in a cell or gone: `comm_info_request`, a page's
//! `request_state` / `request_states` after a reload, and naming the widgets lost (greyed out,
//! "(lost)") when the evaluation process that made them ends. A browser change is echoed back
//! (`echo_update`, ipywidgets 8) so that every open page agrees.

use std::collections::BTreeMap;
use std::io::{BufRead, Write};
use std::os::unix::net::UnixStream;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Map, Value};
use tensorbook::contract::display::{Inbound, Message as CellMessage};
use tokio::sync::mpsc;

use super::requests::log;
use super::wire::{new_header, Message};

/// The target of ipywidgets' models.
pub const WIDGET_TARGET: &str = "jupyter.widget";
/// The target of ipywidgets 8's control comm (all states at once, for a reloaded page).
pub const CONTROL_TARGET: &str = "jupyter.widget.control";

/// One open comm.
#[derive(Debug)]
struct Comm {
    target: String,
    /// A widget's state as last relayed (empty for the control comm).
    state: Map<String, Value>,
    /// Which evaluation process opened it (its `listen` connection's number; 0: the frontend).
    process: u64,
    /// The process that made it has ended: its views are greyed out and nothing reaches it.
    lost: bool,
}

#[derive(Default)]
struct Inner {
    comms: BTreeMap<String, Comm>,
    /// The evaluation process's listening connection, with its number.
    cell: Option<(u64, UnixStream)>,
    listens: u64,
}

/// The comms of one kernel.
pub struct Comms {
    inner: Mutex<Inner>,
    iopub: mpsc::UnboundedSender<Message>,
    session: String,
}

impl Comms {
    /// Comms that publish on `iopub` under `session`.
    pub fn new(iopub: mpsc::UnboundedSender<Message>, session: String) -> Arc<Comms> {
        Arc::new(Comms {
            inner: Mutex::default(),
            iopub,
            session,
        })
    }

    fn inner(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Publishes under `parent`, or under no parent (a widget changed between requests).
    fn publish(&self, parent: Option<&Message>, msg_type: &str, content: Value) {
        self.publish_with(parent, msg_type, content, json!({}));
    }

    /// [`Comms::publish`] with the message's `metadata` (where a comm_open carries the widget
    /// protocol's version: ipywidgets reads it there, not from the content).
    fn publish_with(
        &self,
        parent: Option<&Message>,
        msg_type: &str,
        content: Value,
        metadata: Value,
    ) {
        let mut msg = match parent {
            Some(p) => Message::reply_to(p, &self.session, msg_type, content),
            None => Message {
                identities: Vec::new(),
                header: new_header(&self.session, msg_type),
                parent_header: json!({}),
                metadata: json!({}),
                content,
                buffers: Vec::new(),
            },
        };
        msg.identities = vec![msg_type.as_bytes().to_vec()];
        msg.metadata = metadata;
        let _ = self.iopub.send(msg);
    }

    /// A comm message from the evaluation process: mirrored, then published to the frontend
    /// under `parent` (the request whose output streams now, if any).
    pub fn relay_from_cell(&self, message: &CellMessage, parent: Option<&Message>) {
        match message {
            CellMessage::CommOpen {
                comm_id,
                target_name,
                data,
                metadata,
            } => {
                let mut inner = self.inner();
                let process = inner.cell.as_ref().map_or(0, |(n, _)| *n);
                inner.comms.insert(
                    comm_id.clone(),
                    Comm {
                        target: target_name.clone(),
                        state: data["state"].as_object().cloned().unwrap_or_default(),
                        process,
                        lost: false,
                    },
                );
                drop(inner);
                self.publish_with(
                    parent,
                    "comm_open",
                    json!({ "comm_id": comm_id, "target_name": target_name, "data": data }),
                    metadata.clone(),
                );
            }
            CellMessage::CommMsg { comm_id, data } => {
                if let Some(comm) = self.inner().comms.get_mut(comm_id) {
                    merge_update(&mut comm.state, data);
                }
                self.publish(
                    parent,
                    "comm_msg",
                    json!({ "comm_id": comm_id, "data": data }),
                );
            }
            CellMessage::CommClose { comm_id } => {
                self.inner().comms.remove(comm_id);
                self.publish(
                    parent,
                    "comm_close",
                    json!({ "comm_id": comm_id, "data": {} }),
                );
            }
            _ => {}
        }
    }

    /// Takes the evaluation process's listening connection: the frontend's comm messages go to
    /// it from now on, and its end of file (the process ended) marks that process's widgets
    /// lost.
    pub fn listen(self: &Arc<Comms>, stream: UnixStream) {
        let Ok(watch) = stream.try_clone() else {
            log("widgets: cannot watch the evaluation process's connection");
            return;
        };
        let _ = stream.set_write_timeout(Some(Duration::from_secs(1)));
        let number = {
            let mut inner = self.inner();
            inner.listens += 1;
            let n = inner.listens;
            inner.cell = Some((n, stream));
            n
        };
        let comms = Arc::clone(self);
        let watcher = std::thread::Builder::new()
            .name("tensorbook-comms-watch".into())
            .spawn(move || {
                // The process never writes after `listen`: a read returns only at its end.
                let mut reader = std::io::BufReader::new(watch);
                let mut ignored = String::new();
                while reader.read_line(&mut ignored).is_ok_and(|n| n > 0) {
                    ignored.clear();
                }
                comms.process_ended(number);
            });
        if let Err(e) = watcher {
            log(&format!("widgets: no watcher thread: {e}"));
        }
    }

    /// Names the widgets of listening connection `number` lost, in every open page.
    fn process_ended(&self, number: u64) {
        let mut updates = Vec::new();
        {
            let mut inner = self.inner();
            if inner.cell.as_ref().is_some_and(|(n, _)| *n == number) {
                inner.cell = None;
            }
            for (id, comm) in inner.comms.iter_mut() {
                if comm.process != number || comm.lost || comm.target != WIDGET_TARGET {
                    continue;
                }
                comm.lost = true;
                let mut changes = Map::new();
                changes.insert("disabled".into(), json!(true));
                changes.insert(
                    "tooltip".into(),
                    json!("lost: the evaluation process that made this widget ended"),
                );
                if let Some(d) = comm.state.get("description").and_then(Value::as_str) {
                    changes.insert("description".into(), json!(format!("{d} (lost)")));
                }
                comm.state.extend(changes.clone());
                updates.push((id.clone(), changes));
            }
        }
        if !updates.is_empty() {
            log(&format!(
                "widgets: {} lost with the evaluation process",
                updates.len()
            ));
        }
        for (id, changes) in updates {
            self.publish(
                None,
                "comm_msg",
                json!({ "comm_id": id, "data": { "method": "update", "state": changes, "buffer_paths": [] } }),
            );
        }
    }

    /// Sends `message` to the evaluation process, if it listens; a broken connection is
    /// dropped (its watcher names the widgets lost).
    fn to_cell(&self, message: &Inbound) {
        let mut inner = self.inner();
        let Some((_, stream)) = inner.cell.as_mut() else {
            return;
        };
        let line = format!("{}\n", message.to_line());
        if let Err(e) = stream.write_all(line.as_bytes()) {
            log(&format!(
                "widgets: the evaluation process stopped listening: {e}"
            ));
            inner.cell = None;
        }
    }

    /// Answers `comm_info_request`: the open comms, of `target` only when one is named.
    pub fn info(&self, target: Option<&str>) -> Value {
        let comms: Map<String, Value> = self
            .inner()
            .comms
            .iter()
            .filter(|(_, c)| target.is_none_or(|t| c.target == t))
            .map(|(id, c)| (id.clone(), json!({ "target_name": c.target })))
            .collect();
        json!({ "status": "ok", "comms": comms })
    }

    /// Handles a `comm_open`, `comm_msg` or `comm_close` from the frontend.
    pub fn relay_from_frontend(&self, msg: &Message) {
        let content = &msg.content;
        let Some(id) = content["comm_id"].as_str() else {
            log(&format!("{} without a comm_id: ignored", msg.msg_type()));
            return;
        };
        match msg.msg_type() {
            "comm_open" => {
                let target = content["target_name"].as_str().unwrap_or("");
                if target == CONTROL_TARGET {
                    self.inner().comms.insert(
                        id.to_string(),
                        Comm {
                            target: target.to_string(),
                            state: Map::new(),
                            process: 0,
                            lost: false,
                        },
                    );
                } else {
                    // The spec: a comm whose target is unknown is closed at once. Widgets are
                    // made by cells, never by the frontend.
                    log(&format!("comm_open for target {target:?}: closed"));
                    self.publish(
                        Some(msg),
                        "comm_close",
                        json!({ "comm_id": id, "data": {} }),
                    );
                }
            }
            "comm_msg" => self.comm_msg(msg, id),
            "comm_close" => {
                let removed = self.inner().comms.remove(id);
                if removed.is_some_and(|c| c.target == WIDGET_TARGET && !c.lost) {
                    self.to_cell(&Inbound::CommClose {
                        comm_id: id.to_string(),
                    });
                }
            }
            _ => {}
        }
    }

    fn comm_msg(&self, msg: &Message, id: &str) {
        let data = &msg.content["data"];
        let method = data["method"].as_str().unwrap_or("");
        let reply = |data: Value| {
            self.publish(
                Some(msg),
                "comm_msg",
                json!({ "comm_id": id, "data": data }),
            )
        };
        let mut inner = self.inner();
        let Some(comm) = inner.comms.get_mut(id) else {
            log(&format!("comm_msg for unknown comm {id}: ignored"));
            return;
        };
        if comm.target == CONTROL_TARGET {
            if method != "request_states" {
                return;
            }
            let states: Map<String, Value> = inner
                .comms
                .iter()
                .filter(|(_, c)| c.target == WIDGET_TARGET)
                .map(|(id, c)| {
                    let s = &c.state;
                    (
                        id.clone(),
                        json!({
                            "model_name": s.get("_model_name"),
                            "model_module": s.get("_model_module"),
                            "model_module_version": s.get("_model_module_version"),
                            "state": s,
                        }),
                    )
                })
                .collect();
            drop(inner);
            reply(json!({ "method": "update_states", "states": states, "buffer_paths": {} }));
            return;
        }
        let lost = comm.lost;
        match method {
            "update" => {
                // A lost widget keeps its last state: nothing would read the change.
                if lost {
                    let state = Value::Object(comm.state.clone());
                    drop(inner);
                    reply(json!({ "method": "update", "state": state, "buffer_paths": [] }));
                    return;
                }
                merge_update(&mut comm.state, data);
                drop(inner);
                self.to_cell(&Inbound::CommMsg {
                    comm_id: id.to_string(),
                    data: data.clone(),
                });
                reply(json!({
                    "method": "echo_update",
                    "state": data["state"],
                    "buffer_paths": data.get("buffer_paths").cloned().unwrap_or(json!([])),
                }));
            }
            "request_state" => {
                let state = Value::Object(comm.state.clone());
                drop(inner);
                reply(json!({ "method": "update", "state": state, "buffer_paths": [] }));
            }
            "custom" if !lost => {
                drop(inner);
                self.to_cell(&Inbound::CommMsg {
                    comm_id: id.to_string(),
                    data: data.clone(),
                });
            }
            _ => {}
        }
    }
}

/// Folds an `update` message's state into `state`.
fn merge_update(state: &mut Map<String, Value>, data: &Value) {
    if data["method"] == "update" {
        if let Some(changes) = data["state"].as_object() {
            state.extend(changes.clone());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frontend(msg_type: &str, content: Value) -> Message {
        Message {
            identities: Vec::new(),
            header: new_header("client", msg_type),
            parent_header: json!({}),
            metadata: json!({}),
            content,
            buffers: Vec::new(),
        }
    }

    fn drain(rx: &mut mpsc::UnboundedReceiver<Message>) -> Vec<Message> {
        std::iter::from_fn(|| rx.try_recv().ok()).collect()
    }

    #[test]
    fn widgets_are_mirrored_listed_echoed_and_lost_with_their_process() {
        let (tx, mut rx) = mpsc::unbounded_channel();
        let comms = Comms::new(tx, "s".into());
        let (kernel_end, mut cell_end) = UnixStream::pair().unwrap();
        comms.listen(kernel_end);
        comms.relay_from_cell(
            &CellMessage::CommOpen {
                comm_id: "w".into(),
                target_name: WIDGET_TARGET.into(),
                data: json!({ "state": { "_model_name": "IntSliderModel", "value": 1, "description": "n" }, "buffer_paths": [] }),
                metadata: json!({ "version": "2.1.0" }),
            },
            None,
        );
        let sent = drain(&mut rx);
        assert_eq!(sent[0].msg_type(), "comm_open");
        assert_eq!(sent[0].parent_header, json!({}));
        assert_eq!(sent[0].metadata["version"], "2.1.0");
        assert_eq!(
            comms.info(Some(WIDGET_TARGET))["comms"]["w"]["target_name"],
            WIDGET_TARGET
        );
        assert_eq!(comms.info(Some("other"))["comms"], json!({}));

        // A browser update reaches the cell and is echoed.
        comms.relay_from_frontend(&frontend(
            "comm_msg",
            json!({ "comm_id": "w", "data": { "method": "update", "state": { "value": 5 }, "buffer_paths": [] } }),
        ));
        let mut line = String::new();
        std::io::BufReader::new(&mut cell_end)
            .read_line(&mut line)
            .unwrap();
        assert!(matches!(
            Inbound::parse(&line).unwrap(),
            Inbound::CommMsg { .. }
        ));
        let echo = drain(&mut rx);
        assert_eq!(echo[0].content["data"]["method"], "echo_update");

        // A reloaded page gets every state from the mirror.
        comms.relay_from_frontend(&frontend(
            "comm_open",
            json!({ "comm_id": "ctl", "target_name": CONTROL_TARGET, "data": {} }),
        ));
        comms.relay_from_frontend(&frontend(
            "comm_msg",
            json!({ "comm_id": "ctl", "data": { "method": "request_states" } }),
        ));
        let states = drain(&mut rx);
        let data = &states[0].content["data"];
        assert_eq!(data["method"], "update_states");
        assert_eq!(data["states"]["w"]["state"]["value"], 5);
        assert_eq!(data["states"]["w"]["model_name"], "IntSliderModel");

        // Unknown targets are closed at once.
        comms.relay_from_frontend(&frontend(
            "comm_open",
            json!({ "comm_id": "x", "target_name": "nobody", "data": {} }),
        ));
        let closed = drain(&mut rx);
        assert_eq!(closed[0].msg_type(), "comm_close");
        assert_eq!(closed[0].content["comm_id"], "x");

        // The process ends: its widget is greyed out and named lost.
        drop(cell_end);
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        let lost = loop {
            let got = drain(&mut rx);
            if !got.is_empty() || std::time::Instant::now() > deadline {
                break got;
            }
            std::thread::sleep(Duration::from_millis(10));
        };
        assert_eq!(lost[0].content["data"]["state"]["disabled"], true);
        assert_eq!(lost[0].content["data"]["state"]["description"], "n (lost)");
        comms.relay_from_frontend(&frontend(
            "comm_msg",
            json!({ "comm_id": "w", "data": { "method": "request_state" } }),
        ));
        let state = drain(&mut rx);
        assert_eq!(state[0].content["data"]["state"]["disabled"], true);
    }
}
