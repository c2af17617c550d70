//! The request handlers: what the kernel answers to each shell and control message, by the
//! messaging spec. Cells, completion and inspection go to the [`Engine`]; everything here is
//! Jupyter's side of it (execution counts, busy/idle, stop_on_error, history, cursor offsets).

use std::sync::{Arc, Mutex};

use serde_json::{json, Value};
use tensorbook::contract::display::bundle_json;
use tokio::sync::{mpsc, oneshot};

use super::comms::Comms;
use super::completeness::{is_complete, Completeness};
use super::failure::jupyter_error;
use super::history::History;
use super::wire::{Message, Signer, PROTOCOL_VERSION};
use crate::engine::{AnalysisError, Engine, InputReader, Output, OutputSink};

/// Everything the request handlers share.
pub(super) struct Kernel {
    pub(super) signer: Arc<Signer>,
    pub(super) session: String,
    pub(super) iopub: mpsc::UnboundedSender<Message>,
    pub(super) engine: Engine,
    pub(super) execution_count: Mutex<u64>,
    pub(super) history: Mutex<History>,
    /// The request whose output is streaming now (None when silent or idle).
    pub(super) parent: Arc<Mutex<Option<Message>>>,
    /// input_requests for the stdin task, each with where its answer goes.
    pub(super) stdin: mpsc::UnboundedSender<(Message, oneshot::Sender<String>)>,
    /// Wakes the stdin task from a pending input_request when the cell is interrupted.
    pub(super) stdin_cancel: Arc<tokio::sync::Notify>,
    /// The open comms (widgets), shared with the display socket's listener.
    pub(super) comms: Arc<Comms>,
}

/// What the shell loop must do after a request.
pub(super) enum After {
    Continue,
    AbortQueued,
    Exit,
}

/// Queues an iopub message answering `parent` (its topic is the message type, as ipykernel's).
pub(super) fn publish(
    iopub: &mpsc::UnboundedSender<Message>,
    session: &str,
    parent: &Message,
    msg_type: &str,
    content: Value,
) {
    let mut msg = Message::reply_to(parent, session, msg_type, content);
    msg.identities = vec![msg_type.as_bytes().to_vec()];
    let _ = iopub.send(msg);
}

/// Where the engine's output goes: stream and display_data messages of the request whose
/// output streams now (`parent`); nothing while there is none (silent requests, idle).
pub(super) fn output_sink(
    iopub: mpsc::UnboundedSender<Message>,
    session: String,
    parent: Arc<Mutex<Option<Message>>>,
) -> OutputSink {
    Arc::new(move |output: Output| {
        let guard = parent.lock().unwrap_or_else(|e| e.into_inner());
        let Some(p) = guard.as_ref() else { return };
        let (msg_type, content) = match output {
            Output::Text(stream, text) => {
                ("stream", json!({ "name": stream.name(), "text": text }))
            }
            Output::Display { mime, content } => (
                "display_data",
                json!({ "data": { mime: content }, "metadata": {}, "transient": {} }),
            ),
        };
        publish(&iopub, &session, p, msg_type, content);
    })
}

pub(super) fn log(what: &str) {
    eprintln!("[tensorbook kernel] {what}");
}

impl Kernel {
    fn publish(&self, parent: &Message, msg_type: &str, content: Value) {
        publish(&self.iopub, &self.session, parent, msg_type, content);
    }

    pub(super) fn status(&self, parent: &Message, state: &str) {
        self.publish(parent, "status", json!({ "execution_state": state }));
    }

    pub(super) fn reply(&self, parent: &Message, content: Value) -> Message {
        let reply_type = parent.msg_type().replace("_request", "_reply");
        Message::reply_to(parent, &self.session, &reply_type, content)
    }

    fn kernel_info(&self) -> Value {
        json!({
            "status": "ok",
            "protocol_version": PROTOCOL_VERSION,
            "implementation": "tensorbook",
            "implementation_version": env!("CARGO_PKG_VERSION"),
            "language_info": {
                "name": "rust",
                "version": "2021",
                "mimetype": "text/rust",
                "file_extension": ".rs",
                "pygments_lexer": "rust",
                "codemirror_mode": "rust",
            },
            "banner": format!(
                "tensorbook {}: Rust cells (evcxr) with tensors that know where they live. Session default: {}. Type :help.",
                env!("CARGO_PKG_VERSION"),
                tensorbook::default_device()
            ),
            "help_links": [],
            "debugger": false,
            "supported_features": [],
        })
    }

    /// Handles one request; returns the reply to send on the same socket (if any).
    pub(super) async fn handle(&self, msg: &Message) -> (Option<Message>, After) {
        let content = &msg.content;
        match msg.msg_type() {
            "kernel_info_request" => (Some(self.reply(msg, self.kernel_info())), After::Continue),
            "execute_request" => {
                let (reply, failed) = self.execute(msg).await;
                let stop = content["stop_on_error"].as_bool().unwrap_or(true);
                let silent = content["silent"].as_bool().unwrap_or(false);
                let after = if failed && stop && !silent {
                    After::AbortQueued
                } else {
                    After::Continue
                };
                (Some(reply), after)
            }
            "is_complete_request" => {
                let code = content["code"].as_str().unwrap_or("");
                let answer = match is_complete(code) {
                    Completeness::Complete => json!({ "status": "complete" }),
                    Completeness::Incomplete(indent) => {
                        json!({ "status": "incomplete", "indent": indent })
                    }
                    Completeness::Invalid => json!({ "status": "invalid" }),
                };
                (Some(self.reply(msg, answer)), After::Continue)
            }
            "complete_request" => (
                Some(self.reply(msg, self.complete(content).await)),
                After::Continue,
            ),
            "inspect_request" => (
                Some(self.reply(msg, self.inspect(content).await)),
                After::Continue,
            ),
            "history_request" => {
                let answer = self
                    .history
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .reply(content);
                (Some(self.reply(msg, answer)), After::Continue)
            }
            "comm_info_request" => {
                let info = self.comms.info(content["target_name"].as_str());
                (Some(self.reply(msg, info)), After::Continue)
            }
            "comm_open" | "comm_msg" | "comm_close" => {
                self.comms.relay_from_frontend(msg);
                (None, After::Continue)
            }
            "interrupt_request" => {
                self.stdin_cancel.notify_waiters();
                let stopped = self.engine.interrupt();
                log(&format!(
                    "interrupt: {}",
                    if stopped {
                        "stopped the running cell"
                    } else {
                        "nothing to stop"
                    }
                ));
                (
                    Some(self.reply(msg, json!({ "status": "ok" }))),
                    After::Continue,
                )
            }
            "shutdown_request" => {
                let restart = content["restart"].as_bool().unwrap_or(false);
                (
                    Some(self.reply(msg, json!({ "status": "ok", "restart": restart }))),
                    After::Exit,
                )
            }
            other => {
                log(&format!("unknown message type {other:?}: ignored"));
                (None, After::Continue)
            }
        }
    }

    async fn execute(&self, msg: &Message) -> (Message, bool) {
        let content = &msg.content;
        let code = content["code"].as_str().unwrap_or("").to_string();
        let silent = content["silent"].as_bool().unwrap_or(false);
        let store = content["store_history"].as_bool().unwrap_or(true) && !silent;
        let count = {
            let mut c = self
                .execution_count
                .lock()
                .unwrap_or_else(|e| e.into_inner());
            if store {
                *c += 1;
            }
            (*c).max(1)
        };
        if !silent {
            self.publish(
                msg,
                "execute_input",
                json!({ "code": code, "execution_count": count }),
            );
        }
        *self.parent.lock().unwrap_or_else(|e| e.into_inner()) = (!silent).then(|| msg.clone());
        let input = content["allow_stdin"]
            .as_bool()
            .unwrap_or(false)
            .then(|| self.input_reader(msg));
        let result = self.engine.execute(code.clone(), input).await;
        let mut user_expressions = serde_json::Map::new();
        if let Some(exprs) = content["user_expressions"].as_object() {
            for (name, expr) in exprs {
                let value = match self
                    .engine
                    .execute(expr.as_str().unwrap_or("").to_string(), None)
                    .await
                {
                    Ok(data) => {
                        json!({ "status": "ok", "data": bundle_json(&data), "metadata": {} })
                    }
                    Err(e) => {
                        let mut error = jupyter_error(&e).to_json();
                        error["status"] = json!("error");
                        error
                    }
                };
                user_expressions.insert(name.clone(), value);
            }
        }
        *self.parent.lock().unwrap_or_else(|e| e.into_inner()) = None;
        if store {
            let output = result.as_ref().ok().and_then(|data| {
                data.iter()
                    .find(|(mime, _)| mime == "text/plain")
                    .map(|(_, text)| text.clone())
            });
            self.history
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .record(count, &code, output);
        }
        match result {
            Ok(data) => {
                if !silent && !data.is_empty() {
                    self.publish(
                        msg,
                        "execute_result",
                        json!({ "execution_count": count, "data": bundle_json(&data), "metadata": {} }),
                    );
                }
                let reply = json!({
                    "status": "ok",
                    "execution_count": count,
                    "user_expressions": user_expressions,
                    "payload": [],
                });
                (self.reply(msg, reply), false)
            }
            Err(e) => {
                let error = jupyter_error(&e).to_json();
                if !silent {
                    self.publish(msg, "error", error.clone());
                }
                let mut reply = error;
                reply["status"] = json!("error");
                reply["execution_count"] = json!(count);
                reply["user_expressions"] = Value::Object(user_expressions);
                reply["payload"] = json!([]);
                (self.reply(msg, reply), true)
            }
        }
    }

    /// Answers a cell's requests for input with input_request / input_reply on the stdin
    /// channel, addressed to the front end that sent `parent`.
    fn input_reader(&self, parent: &Message) -> InputReader {
        let parent = parent.clone();
        let session = self.session.clone();
        let stdin = self.stdin.clone();
        Arc::new(move |prompt: String, password: bool| {
            let request = Message::reply_to(
                &parent,
                &session,
                "input_request",
                json!({ "prompt": prompt, "password": password }),
            );
            let (tx, rx) = oneshot::channel();
            if stdin.send((request, tx)).is_err() {
                return String::new();
            }
            rx.blocking_recv().unwrap_or_default()
        })
    }

    async fn complete(&self, content: &Value) -> Value {
        let code = content["code"].as_str().unwrap_or("").to_string();
        let cursor = content["cursor_pos"].as_u64().unwrap_or(0) as usize;
        let byte = byte_offset(&code, cursor);
        match self.engine.complete(code.clone(), byte).await {
            Ok(answer) => {
                let (start, end) = (
                    char_offset(&code, answer.start),
                    char_offset(&code, answer.end),
                );
                // JupyterLab's completer shows each candidate's type and signature from here.
                let types: Vec<Value> = answer
                    .matches
                    .iter()
                    .zip(&answer.types)
                    .map(|(text, (kind, signature))| {
                        json!({ "start": start, "end": end, "text": text, "type": kind, "signature": signature })
                    })
                    .collect();
                json!({
                    "status": "ok",
                    "matches": answer.matches,
                    "cursor_start": start,
                    "cursor_end": end,
                    "metadata": { "_jupyter_types_experimental": types },
                })
            }
            Err(e) => {
                log(&format!("completion failed: {}: {}", e.ename, e.evalue));
                analysis_error(&e)
            }
        }
    }

    async fn inspect(&self, content: &Value) -> Value {
        let code = content["code"].as_str().unwrap_or("").to_string();
        let cursor = content["cursor_pos"].as_u64().unwrap_or(0) as usize;
        // Inspect the whole identifier under the cursor, as IPython does; right after a call
        // (`t.sum([0])|`, what JupyterLab asks when a completion is picked), the function called.
        let end = called_function_end(&code, identifier_end(&code, byte_offset(&code, cursor)));
        match self.engine.inspect(code, end).await {
            Ok((plain, html)) if !plain.trim().is_empty() => json!({
                "status": "ok",
                "found": true,
                "data": { "text/plain": plain, "text/html": html },
                "metadata": {},
            }),
            Ok(_) => json!({ "status": "ok", "found": false, "data": {}, "metadata": {} }),
            Err(e) => {
                log(&format!("inspection failed: {}: {}", e.ename, e.evalue));
                analysis_error(&e)
            }
        }
    }
}

/// A complete or inspect reply that says why there is no answer (the messaging spec's error
/// content).
fn analysis_error(e: &AnalysisError) -> Value {
    json!({
        "status": "error",
        "ename": e.ename,
        "evalue": e.evalue,
        "traceback": [e.evalue],
    })
}

/// Where the identifier under `byte` ends (IPython inspects the whole word).
pub(crate) fn identifier_end(code: &str, byte: usize) -> usize {
    code[byte..]
        .find(|c: char| !(c.is_alphanumeric() || c == '_'))
        .map(|i| byte + i)
        .unwrap_or(code.len())
}

/// Where a hover finds the function called just before `byte`: when the text there ends with
/// a call's closing `)`, the offset just past its opening `(` (evcxr hovers the name before a
/// trailing `(`); otherwise `byte` itself. JupyterLab's completer asks for the documentation of
/// a picked candidate at the end of its inserted text (`sum(axes)`), after the `)`.
pub(crate) fn called_function_end(code: &str, byte: usize) -> usize {
    let before = &code[..byte];
    if !before.ends_with(')') {
        return byte;
    }
    let mut depth = 0usize;
    for (i, c) in before.char_indices().rev() {
        match c {
            ')' | ']' | '}' => depth += 1,
            '(' | '[' | '{' => {
                depth = match depth.checked_sub(1) {
                    Some(d) => d,
                    None => return byte,
                };
                if depth == 0 {
                    let named = before[..i].ends_with(|c: char| c.is_alphanumeric() || c == '_');
                    return if c == '(' && named { i + 1 } else { byte };
                }
            }
            _ => {}
        }
    }
    byte
}

/// Jupyter counts cursor positions in Unicode code points; Rust slices in bytes.
pub(crate) fn byte_offset(code: &str, chars: usize) -> usize {
    code.char_indices()
        .nth(chars)
        .map(|(b, _)| b)
        .unwrap_or(code.len())
}

pub(crate) fn char_offset(code: &str, byte: usize) -> usize {
    code[..byte.min(code.len())].chars().count()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursor_offsets_count_code_points() {
        let code = "let é = \"ü\"; é.";
        let chars = code.chars().count();
        assert_eq!(byte_offset(code, chars), code.len());
        assert_eq!(char_offset(code, code.len()), chars);
        // 'é' is two bytes: the seventh character starts at byte 7.
        let at = byte_offset(code, 6);
        assert_eq!((at, &code[at..at + 1]), (7, "="));
        assert_eq!(char_offset(code, at), 6);
        assert_eq!(byte_offset(code, 10_000), code.len());
        assert_eq!(char_offset(code, 10_000), chars);
    }

    #[test]
    fn after_a_call_the_called_function_is_inspected() {
        let code = "let s = t.sum([0, 1]);";
        let after_call = code.find(';').unwrap();
        assert_eq!(
            called_function_end(code, after_call),
            code.find('[').unwrap()
        );
        assert_eq!(called_function_end("f(g(x))", 7), 2);
        assert_eq!(called_function_end("f(g(x))", 6), 4);
        // Not a call: a tuple, an unbalanced text, no parenthesis at all.
        assert_eq!(called_function_end("(1, 2)", 6), 6);
        assert_eq!(called_function_end("x)", 2), 2);
        assert_eq!(called_function_end("t.sum", 5), 5);
    }

    #[test]
    fn output_goes_to_the_streaming_request_only() {
        let (tx, mut rx) = mpsc::unbounded_channel();
        let parent: Arc<Mutex<Option<Message>>> = Arc::default();
        let sink = output_sink(tx, "s".into(), Arc::clone(&parent));
        sink(Output::Text(crate::engine::Stream::Stdout, "lost\n".into()));
        assert!(rx.try_recv().is_err());
        let request = Message {
            identities: Vec::new(),
            header: super::super::wire::new_header("client", "execute_request"),
            parent_header: json!({}),
            metadata: json!({}),
            content: json!({}),
            buffers: Vec::new(),
        };
        *parent.lock().unwrap() = Some(request);
        sink(Output::Display {
            mime: "image/svg+xml".into(),
            content: "<svg/>".into(),
        });
        let msg = rx.try_recv().unwrap();
        assert_eq!(msg.msg_type(), "display_data");
        assert_eq!(msg.content["data"]["image/svg+xml"], "<svg/>");
        assert_eq!(msg.identities, vec![b"display_data".to_vec()]);
    }
}
