//! A widget's model on the cell side: its state (ipywidgets 8's attributes, as JSON), the comm
//! it is kept in step over, and the one thread per evaluation process that applies what the
//! frontend changes while a cell runs.
//!
//! The state lives here, in the evaluation process, so that a running cell reads it without
//! asking anyone: a slider's `value()` is a lock and a map lookup. The kernel mirrors every
//! state it relays (for `comm_info_request`, a reloaded page's `request_state`, and to name the
//! widgets lost when this process goes).

use std::collections::HashMap;
use std::io::BufRead;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use serde_json::{json, Map, Value};

use crate::contract::display::{Inbound, Message};
use crate::notebook::send;

/// The comm target of ipywidgets' models.
pub(crate) const TARGET: &str = "jupyter.widget";
/// The widget message protocol spoken (ipywidgets 8: `echo_update` included).
pub(crate) const PROTOCOL_VERSION: &str = "2.1.0";
/// The JavaScript module of the standard controls, and the version `jupyterlab_widgets` 3
/// registers them under.
const CONTROLS: &str = "@jupyter-widgets/controls";
const CONTROLS_VERSION: &str = "2.0.0";
/// The mime type a widget's view is displayed with.
pub(crate) const VIEW_MIME: &str = "application/vnd.jupyter.widget-view+json";

/// One widget's model: what the frontend shows and the cell reads.
#[derive(Debug)]
pub(crate) struct Model {
    id: String,
    state: Mutex<Map<String, Value>>,
    /// Clicks the frontend reported (a button's `custom` `click` events).
    clicks: AtomicU64,
    /// Clicks already answered by `clicked()`.
    seen: AtomicU64,
    /// Set when the comm is closed, from either side.
    closed: AtomicBool,
}

/// Every open model of this process by id. The runtime is one shared library in the evaluation
/// process, so every cell sees this one map; the frontend's messages name models by id.
fn models() -> &'static Mutex<HashMap<String, Arc<Model>>> {
    static MODELS: OnceLock<Mutex<HashMap<String, Arc<Model>>>> = OnceLock::new();
    MODELS.get_or_init(Mutex::default)
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Model {
    /// Opens a model of the standard controls (`model` is e.g. `IntSlider`): the comm_open goes
    /// to the kernel (acknowledged before this returns), and the frontend's changes to it are
    /// applied from now on.
    pub(crate) fn open(model: &str, view: &str, state: Map<String, Value>) -> Arc<Model> {
        let mut full = Map::new();
        full.insert("_model_name".into(), json!(format!("{model}Model")));
        full.insert("_model_module".into(), json!(CONTROLS));
        full.insert("_model_module_version".into(), json!(CONTROLS_VERSION));
        full.insert("_view_name".into(), json!(format!("{view}View")));
        full.insert("_view_module".into(), json!(CONTROLS));
        full.insert("_view_module_version".into(), json!(CONTROLS_VERSION));
        full.extend(state);
        let id = format!("{:032x}", fastrand::u128(..));
        let model = Arc::new(Model {
            id: id.clone(),
            state: Mutex::new(full.clone()),
            clicks: AtomicU64::new(0),
            seen: AtomicU64::new(0),
            closed: AtomicBool::new(false),
        });
        lock(models()).insert(id.clone(), Arc::clone(&model));
        listen();
        send(&Message::CommOpen {
            comm_id: id,
            target_name: TARGET.into(),
            data: json!({ "state": full, "buffer_paths": [] }),
            metadata: json!({ "version": PROTOCOL_VERSION }),
        });
        model
    }

    /// The model id (the comm's id), which the frontend knows it by.
    pub(crate) fn id(&self) -> &str {
        &self.id
    }

    /// One attribute of the state (`Null` when absent).
    pub(crate) fn get(&self, key: &str) -> Value {
        lock(&self.state).get(key).cloned().unwrap_or(Value::Null)
    }

    /// Changes attributes here and in the frontend (an `update` on the comm).
    pub(crate) fn set(&self, changes: Map<String, Value>) {
        lock(&self.state).extend(changes.clone());
        if !self.is_closed() {
            send(&Message::CommMsg {
                comm_id: self.id.clone(),
                data: json!({ "method": "update", "state": changes, "buffer_paths": [] }),
            });
        }
    }

    /// Applies a comm_msg from the frontend: an `update` of attributes, or a click.
    pub(crate) fn apply(&self, data: &Value) {
        match data["method"].as_str() {
            Some("update") => {
                if let Some(changes) = data["state"].as_object() {
                    lock(&self.state).extend(changes.clone());
                }
            }
            Some("custom") if data["content"]["event"] == "click" => {
                self.clicks.fetch_add(1, Ordering::SeqCst);
            }
            _ => {}
        }
    }

    /// Clicks reported so far.
    pub(crate) fn clicks(&self) -> u64 {
        self.clicks.load(Ordering::SeqCst)
    }

    /// Whether a click came since the last call, which takes them all.
    pub(crate) fn take_clicks(&self) -> bool {
        let now = self.clicks();
        self.seen.swap(now, Ordering::SeqCst) < now
    }

    /// Closes the comm: the frontend removes the widget's views.
    pub(crate) fn close(&self) {
        if !self.closed.swap(true, Ordering::SeqCst) {
            lock(models()).remove(&self.id);
            send(&Message::CommClose {
                comm_id: self.id.clone(),
            });
        }
    }

    /// Whether the comm is closed.
    pub(crate) fn is_closed(&self) -> bool {
        self.closed.load(Ordering::SeqCst)
    }

    /// The bundle that displays a view of this model, with `plain` for frontends without
    /// widgets (nbconvert's text, `jupyter console`).
    pub(crate) fn bundle(&self, plain: String) -> Vec<(&'static str, String)> {
        let view = json!({ "model_id": self.id, "version_major": 2, "version_minor": 0 });
        vec![("text/plain", plain), (VIEW_MIME, view.to_string())]
    }
}

/// Applies one message from the frontend to the model it names (none: a widget already
/// closed here, or of an earlier process).
pub(crate) fn deliver(message: &Inbound) {
    match message {
        Inbound::CommMsg { comm_id, data } => {
            let model = lock(models()).get(comm_id).cloned();
            if let Some(model) = model {
                model.apply(data);
            }
        }
        Inbound::CommClose { comm_id } => {
            if let Some(model) = lock(models()).remove(comm_id) {
                model.closed.store(true, Ordering::SeqCst);
            }
        }
    }
}

/// Opens this process's listening connection to the kernel once, and reads it on a thread of
/// its own: the frontend's changes arrive while a cell runs. Outside a kernel, nothing.
fn listen() {
    static LISTENING: AtomicBool = AtomicBool::new(false);
    if LISTENING.swap(true, Ordering::SeqCst) {
        return;
    }
    #[cfg(unix)]
    {
        let Some(stream) = crate::notebook::exchange(&Message::Listen) else {
            LISTENING.store(false, Ordering::SeqCst);
            return;
        };
        let _ = stream.set_read_timeout(None);
        let reader = std::thread::Builder::new()
            .name("tensorbook-widgets".into())
            .spawn(move || {
                for line in std::io::BufReader::new(stream).lines() {
                    let Ok(line) = line else { break };
                    if let Ok(message) = Inbound::parse(&line) {
                        deliver(&message);
                    }
                }
                // The kernel is gone: the next widget asks again.
                LISTENING.store(false, Ordering::SeqCst);
            });
        if reader.is_err() {
            LISTENING.store(false, Ordering::SeqCst);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_frontend_updates_a_model_and_clicks_are_taken_once() {
        let model = Model::open("IntSlider", "IntSlider", Map::new());
        assert_eq!(model.get("_model_name"), "IntSliderModel");
        assert_eq!(model.get("_view_module_version"), CONTROLS_VERSION);
        deliver(&Inbound::CommMsg {
            comm_id: model.id().into(),
            data: json!({ "method": "update", "state": { "value": 7 }, "buffer_paths": [] }),
        });
        assert_eq!(model.get("value"), 7);
        assert!(!model.take_clicks());
        let click = json!({ "method": "custom", "content": { "event": "click" } });
        for _ in 0..2 {
            deliver(&Inbound::CommMsg {
                comm_id: model.id().into(),
                data: click.clone(),
            });
        }
        assert_eq!(model.clicks(), 2);
        assert!(model.take_clicks());
        assert!(!model.take_clicks());
        deliver(&Inbound::CommClose {
            comm_id: model.id().into(),
        });
        assert!(model.is_closed());
        // A message for a closed or unknown comm changes nothing.
        deliver(&Inbound::CommMsg {
            comm_id: model.id().into(),
            data: click,
        });
        assert_eq!(model.clicks(), 2);
    }

    #[test]
    fn the_view_bundle_names_the_model() {
        let model = Model::open("Button", "Button", Map::new());
        let bundle = model.bundle("Button()".into());
        let view: Value = serde_json::from_str(&bundle[1].1).unwrap();
        assert_eq!(view["model_id"], model.id());
        assert_eq!(view["version_major"], 2);
        model.close();
        assert!(model.is_closed());
    }
}
