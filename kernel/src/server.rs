//! The kernel process: binds the five sockets of a connection file, authenticates every
//! message, wraps each request in busy/idle on iopub and answers it by the spec. Evaluation is
//! delegated to the [`Engine`]; the sockets keep answering while a cell compiles.

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes_compat::to_frames;
use jupyter_protocol::ConnectionInfo;
use serde_json::{json, Value};
use tokio::sync::{mpsc, oneshot};
use zeromq::{Socket, SocketRecv, SocketSend, ZmqMessage};

use crate::commands;
use crate::completeness::{is_complete, Completeness};
use crate::engine::{Engine, InputReader, Output, OutputSink};
use crate::history::History;
use crate::wire::{new_header, Message, Signer, PROTOCOL_VERSION};

/// Conversions between zeromq's frames and plain byte vectors.
mod bytes_compat {
    use zeromq::ZmqMessage;

    pub fn from_message(msg: ZmqMessage) -> Vec<Vec<u8>> {
        msg.into_vec().into_iter().map(|b| b.to_vec()).collect()
    }

    pub fn to_frames(frames: Vec<Vec<u8>>) -> Option<ZmqMessage> {
        let parts: Vec<bytes::Bytes> = frames.into_iter().map(bytes::Bytes::from).collect();
        ZmqMessage::try_from(parts).ok()
    }
}

/// Everything the request handlers share.
struct Kernel {
    signer: Arc<Signer>,
    session: String,
    iopub: mpsc::UnboundedSender<Message>,
    engine: Engine,
    execution_count: Mutex<u64>,
    history: Mutex<History>,
    /// The request whose output is streaming now (None when silent or idle).
    parent: Arc<Mutex<Option<Message>>>,
    /// input_requests for the stdin task, each with where its answer goes.
    stdin: mpsc::UnboundedSender<(Message, oneshot::Sender<String>)>,
    /// Wakes the stdin task from a pending input_request when the cell is interrupted.
    stdin_cancel: Arc<tokio::sync::Notify>,
}

/// What the shell loop must do after a request.
enum After {
    Continue,
    AbortQueued,
    Exit,
}

fn log(what: &str) {
    eprintln!("[tensorbook kernel] {what}");
}

impl Kernel {
    fn publish(&self, parent: &Message, msg_type: &str, content: Value) {
        let mut msg = Message::reply_to(parent, &self.session, msg_type, content);
        msg.identities = vec![msg_type.as_bytes().to_vec()];
        let _ = self.iopub.send(msg);
    }

    fn status(&self, parent: &Message, state: &str) {
        self.publish(parent, "status", json!({ "execution_state": state }));
    }

    fn reply(&self, parent: &Message, content: Value) -> Message {
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
    async fn handle(&self, msg: &Message) -> (Option<Message>, After) {
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
            "comm_info_request" => (
                Some(self.reply(msg, json!({ "status": "ok", "comms": {} }))),
                After::Continue,
            ),
            "comm_open" => {
                // No comm targets exist yet: the spec says to close a comm whose target is unknown.
                let id = content["comm_id"].clone();
                self.publish(msg, "comm_close", json!({ "comm_id": id, "data": {} }));
                (None, After::Continue)
            }
            "comm_msg" | "comm_close" => (None, After::Continue),
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
        let code_for_engine = code.clone();
        let result = match commands::run(&code, &self.engine).await {
            Some(Ok(text)) => {
                if !silent {
                    self.publish(
                        msg,
                        "stream",
                        json!({ "name": "stdout", "text": format!("{text}\n") }),
                    );
                }
                Ok(Vec::new())
            }
            Some(Err(e)) => Err(crate::engine::CellError {
                ename: "SessionCommandError".into(),
                evalue: e.clone(),
                traceback: vec![e],
            }),
            None => {
                let input = content["allow_stdin"]
                    .as_bool()
                    .unwrap_or(false)
                    .then(|| self.input_reader(msg));
                self.engine.execute(code_for_engine, input).await
            }
        };
        let mut user_expressions = serde_json::Map::new();
        if let Some(exprs) = content["user_expressions"].as_object() {
            for (name, expr) in exprs {
                let value = match self
                    .engine
                    .execute(expr.as_str().unwrap_or("").to_string(), None)
                    .await
                {
                    Ok(data) => json!({ "status": "ok", "data": bundle(&data), "metadata": {} }),
                    Err(e) => {
                        json!({ "status": "error", "ename": e.ename, "evalue": e.evalue, "traceback": e.traceback })
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
                        json!({ "execution_count": count, "data": bundle(&data), "metadata": {} }),
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
                let error =
                    json!({ "ename": e.ename, "evalue": e.evalue, "traceback": e.traceback });
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
            Ok(answer) => json!({
                "status": "ok",
                "matches": answer.matches,
                "cursor_start": char_offset(&code, answer.start),
                "cursor_end": char_offset(&code, answer.end),
                "metadata": {},
            }),
            Err(e) => {
                log(&format!("completion failed: {e}"));
                json!({ "status": "ok", "matches": [], "cursor_start": cursor, "cursor_end": cursor, "metadata": {} })
            }
        }
    }

    async fn inspect(&self, content: &Value) -> Value {
        let code = content["code"].as_str().unwrap_or("").to_string();
        let cursor = content["cursor_pos"].as_u64().unwrap_or(0) as usize;
        // Inspect the whole identifier under the cursor, as IPython does.
        let byte = byte_offset(&code, cursor);
        let end = code[byte..]
            .find(|c: char| !(c.is_alphanumeric() || c == '_'))
            .map(|i| byte + i)
            .unwrap_or(code.len());
        match self.engine.inspect(code, end).await {
            Ok((plain, html)) if !plain.trim().is_empty() => json!({
                "status": "ok",
                "found": true,
                "data": { "text/plain": plain, "text/html": html },
                "metadata": {},
            }),
            _ => json!({ "status": "ok", "found": false, "data": {}, "metadata": {} }),
        }
    }
}

fn bundle(data: &[(String, String)]) -> Value {
    Value::Object(
        data.iter()
            .map(|(k, v)| (k.clone(), Value::String(v.clone())))
            .collect(),
    )
}

/// Jupyter counts cursor positions in Unicode code points; Rust slices in bytes.
fn byte_offset(code: &str, chars: usize) -> usize {
    code.char_indices()
        .nth(chars)
        .map(|(b, _)| b)
        .unwrap_or(code.len())
}

fn char_offset(code: &str, byte: usize) -> usize {
    code[..byte.min(code.len())].chars().count()
}

async fn bind<S: Socket>(mut socket: S, url: &str) -> Result<S, String> {
    socket
        .bind(url)
        .await
        .map_err(|e| format!("cannot bind {url}: {e}"))?;
    Ok(socket)
}

/// Starts the session default from the kernelspec's `TENSORBOOK_CLIENT` and shares it with the
/// evaluation process through a session file.
fn init_session_default(dir: &Path) {
    let file = dir.join("default-client");
    std::env::set_var(tensorbook::session::SESSION_FILE_ENV, &file);
    let wanted = std::env::var(tensorbook::session::DEFAULT_CLIENT_ENV).unwrap_or_default();
    let chosen = match wanted.trim() {
        "" | "auto" => {
            tensorbook::set_default_client(&[tensorbook::Client::Cuda, tensorbook::Client::Host])
        }
        spec => tensorbook::Device::parse(spec).and_then(tensorbook::set_default_device),
    };
    if let Err(e) = chosen {
        log(&format!(
            "default client {wanted:?} unavailable ({e}); using host"
        ));
        let _ = tensorbook::set_default_device(tensorbook::Device::host(0));
    }
}

/// The kernel's state directory (session default, display socket) in the temporary directory.
const STATE_DIR_PREFIX: &str = "tensorbook-kernel-";

/// Runs the kernel on a connection file until a shutdown request.
pub async fn run(
    connection_file: &Path,
    session_dir: Option<Arc<crate::build_cache::SessionDir>>,
) -> Result<(), String> {
    let text = std::fs::read_to_string(connection_file).map_err(|e| {
        format!(
            "cannot read connection file {}: {e}",
            connection_file.display()
        )
    })?;
    let info: ConnectionInfo = serde_json::from_str(&text)
        .map_err(|e| format!("invalid connection file {}: {e}", connection_file.display()))?;
    if !info.key.is_empty() && info.signature_scheme != "hmac-sha256" {
        return Err(format!(
            "unsupported signature scheme {:?}",
            info.signature_scheme
        ));
    }
    // Off the start-up path: a dead kernel's private session can be large.
    std::thread::spawn(|| {
        crate::leftovers::remove_orphans(
            &std::env::temp_dir(),
            &[STATE_DIR_PREFIX, crate::build_cache::PRIVATE_SESSION_PREFIX],
        )
    });
    let state_dir = tempfile::Builder::new()
        .prefix(&crate::leftovers::owned_prefix(STATE_DIR_PREFIX))
        .tempdir()
        .map_err(|e| format!("cannot create the kernel's state directory: {e}"))?;
    init_session_default(state_dir.path());

    let signer = Arc::new(Signer::new(&info.key));
    let session = uuid::Uuid::new_v4().to_string();
    let shell = bind(zeromq::RouterSocket::new(), &info.shell_url()).await?;
    let control = bind(zeromq::RouterSocket::new(), &info.control_url()).await?;
    let mut iopub = bind(zeromq::PubSocket::new(), &info.iopub_url()).await?;
    let stdin = bind(zeromq::RouterSocket::new(), &info.stdin_url()).await?;
    let (stdin_tx, stdin_rx) = mpsc::unbounded_channel();
    let stdin_cancel = Arc::new(tokio::sync::Notify::new());
    tokio::spawn(serve_stdin(
        stdin,
        Arc::clone(&signer),
        stdin_rx,
        Arc::clone(&stdin_cancel),
    ));
    let mut heartbeat = bind(zeromq::RepSocket::new(), &info.hb_url()).await?;

    let (iopub_tx, mut iopub_rx) = mpsc::unbounded_channel::<Message>();
    let iopub_signer = Arc::clone(&signer);
    tokio::spawn(async move {
        while let Some(msg) = iopub_rx.recv().await {
            if let Some(frames) = to_frames(iopub_signer.encode(&msg)) {
                if let Err(e) = iopub.send(frames).await {
                    log(&format!("iopub send failed: {e}"));
                }
            }
        }
    });
    tokio::spawn(async move {
        while let Ok(ping) = heartbeat.recv().await {
            if heartbeat.send(ping).await.is_err() {
                break;
            }
        }
    });

    let parent: Arc<Mutex<Option<Message>>> = Arc::default();
    let sink_parent = Arc::clone(&parent);
    let sink_tx = iopub_tx.clone();
    let sink_session = session.clone();
    let sink: OutputSink = Arc::new(move |output: Output| {
        if let Some(p) = sink_parent
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .as_ref()
        {
            let (msg_type, content) = match output {
                Output::Text(stream, text) => {
                    ("stream", json!({ "name": stream.name(), "text": text }))
                }
                Output::Display { mime, content } => (
                    "display_data",
                    json!({ "data": { mime: content }, "metadata": {}, "transient": {} }),
                ),
            };
            let mut msg = Message::reply_to(p, &sink_session, msg_type, content);
            msg.identities = vec![msg_type.as_bytes().to_vec()];
            let _ = sink_tx.send(msg);
        }
    });
    start_display_listener(
        state_dir.path(),
        iopub_tx.clone(),
        session.clone(),
        Arc::clone(&parent),
    )?;
    let kernel_name =
        std::env::var("TENSORBOOK_KERNEL_NAME").unwrap_or_else(|_| "tensorbook".into());
    let kernel = Arc::new(Kernel {
        signer: Arc::clone(&signer),
        session: session.clone(),
        iopub: iopub_tx,
        engine: Engine::start(sink, session_dir.clone()),
        execution_count: Mutex::new(0),
        history: Mutex::new(History::open(&kernel_name)),
        parent,
        stdin: stdin_tx,
        stdin_cancel,
    });
    // Tell clients we exist: a starting status on iopub, as ipykernel does.
    let _ = kernel.iopub.send(Message {
        identities: vec![b"status".to_vec()],
        header: new_header(&session, "status"),
        parent_header: json!({}),
        metadata: json!({}),
        content: json!({ "execution_state": "starting" }),
        buffers: Vec::new(),
    });

    let control_task = tokio::spawn(serve(Arc::clone(&kernel), control, "control"));
    let shell_task = tokio::spawn(serve(Arc::clone(&kernel), shell, "shell"));

    tokio::select! {
        _ = control_task => {},
        _ = shell_task => {},
    }
    if let Some(dir) = &session_dir {
        dir.remove();
    }
    // Let iopub flush the last idle before the process goes.
    tokio::time::sleep(Duration::from_millis(100)).await;
    drop(state_dir);
    Ok(())
}

/// Listens for `tensorbook::display` messages from the evaluation process and publishes them
/// as display_data, update_display_data or clear_output of the running cell. Each message is
/// acknowledged after it is queued on iopub, so it precedes the cell's result.
fn start_display_listener(
    dir: &Path,
    iopub: mpsc::UnboundedSender<Message>,
    session: String,
    parent: Arc<Mutex<Option<Message>>>,
) -> Result<(), String> {
    use std::io::{BufRead, Write};
    let path = dir.join("display.sock");
    let listener = std::os::unix::net::UnixListener::bind(&path)
        .map_err(|e| format!("cannot listen on {}: {e}", path.display()))?;
    std::env::set_var(tensorbook::notebook::DISPLAY_SOCKET_ENV, &path);
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let mut reader = std::io::BufReader::new(&stream);
            let mut line = String::new();
            if reader.read_line(&mut line).unwrap_or(0) == 0 {
                continue;
            }
            let request: Value = serde_json::from_str(&line).unwrap_or(Value::Null);
            let transient = json!({ "display_id": request["display_id"] });
            let (msg_type, content) = match request["type"].as_str() {
                Some("display") => (
                    "display_data",
                    json!({ "data": request["data"], "metadata": {}, "transient": transient }),
                ),
                Some("update") => (
                    "update_display_data",
                    json!({ "data": request["data"], "metadata": {}, "transient": transient }),
                ),
                Some("clear") => (
                    "clear_output",
                    json!({ "wait": request["wait"].as_bool().unwrap_or(false) }),
                ),
                _ => {
                    log(&format!(
                        "ignored a malformed display message: {}",
                        line.trim()
                    ));
                    continue;
                }
            };
            if let Some(p) = parent.lock().unwrap_or_else(|e| e.into_inner()).as_ref() {
                let mut msg = Message::reply_to(p, &session, msg_type, content);
                msg.identities = vec![msg_type.as_bytes().to_vec()];
                let _ = iopub.send(msg);
            }
            let _ = (&stream).write_all(b"k");
        }
    });
    Ok(())
}

/// Sends each input_request on the stdin socket and waits for the input_reply to it (replies
/// to anything else are logged and dropped); an interrupt answers the request with "".
async fn serve_stdin(
    mut socket: zeromq::RouterSocket,
    signer: Arc<Signer>,
    mut requests: mpsc::UnboundedReceiver<(Message, oneshot::Sender<String>)>,
    cancel: Arc<tokio::sync::Notify>,
) {
    while let Some((request, answer)) = requests.recv().await {
        let id = request.header["msg_id"].clone();
        let Some(frames) = to_frames(signer.encode(&request)) else {
            let _ = answer.send(String::new());
            continue;
        };
        if socket.send(frames).await.is_err() {
            let _ = answer.send(String::new());
            continue;
        }
        let value = loop {
            tokio::select! {
                raw = socket.recv() => {
                    let Ok(raw) = raw else { break String::new() };
                    let Some(reply) = decode(&signer, raw, "stdin") else { continue };
                    // jupyter_client sends its input_reply without a parent header; one that
                    // names a parent must name this request.
                    let parent = &reply.parent_header["msg_id"];
                    if reply.msg_type() == "input_reply" && (parent.is_null() || *parent == id) {
                        break reply.content["value"].as_str().unwrap_or("").to_string();
                    }
                    log(&format!("stdin: ignored a {} that answers no pending request", reply.msg_type()));
                }
                _ = cancel.notified() => break String::new(),
            }
        };
        let _ = answer.send(value);
    }
}

/// Serves one ROUTER socket (shell or control) until a shutdown request: each request is
/// wrapped in busy/idle and answered on the same socket.
async fn serve(kernel: Arc<Kernel>, mut socket: zeromq::RouterSocket, channel: &'static str) {
    loop {
        let Ok(raw) = socket.recv().await else { return };
        let Some(msg) = decode(&kernel.signer, raw, channel) else {
            continue;
        };
        kernel.status(&msg, "busy");
        let (reply, after) = kernel.handle(&msg).await;
        // Requests queued behind a failed cell are aborted before its reply goes out, so
        // that nothing the client sends after seeing the error is mistaken for them.
        if matches!(after, After::AbortQueued) {
            abort_queued(&kernel, &mut socket).await;
        }
        if let Some(frames) = reply.and_then(|r| to_frames(kernel.signer.encode(&r))) {
            let _ = socket.send(frames).await;
        }
        kernel.status(&msg, "idle");
        if matches!(after, After::Exit) {
            return;
        }
    }
}

fn decode(signer: &Signer, raw: ZmqMessage, channel: &str) -> Option<Message> {
    match signer.decode(bytes_compat::from_message(raw)) {
        Ok(m) => Some(m),
        Err(e) => {
            log(&format!("dropped a {channel} message: {e}"));
            None
        }
    }
}

/// After a failed cell with stop_on_error, execute requests already queued are answered
/// "aborted" without running, as ipykernel does; other requests are served normally.
async fn abort_queued(kernel: &Kernel, shell: &mut zeromq::RouterSocket) {
    while let Ok(Ok(raw)) = tokio::time::timeout(Duration::from_millis(5), shell.recv()).await {
        let Some(msg) = decode(&kernel.signer, raw, "shell") else {
            continue;
        };
        kernel.status(&msg, "busy");
        let reply = if msg.msg_type() == "execute_request" {
            let count = *kernel
                .execution_count
                .lock()
                .unwrap_or_else(|e| e.into_inner());
            Some(kernel.reply(&msg, json!({ "status": "aborted", "execution_count": count.max(1), "user_expressions": {}, "payload": [] })))
        } else {
            kernel.handle(&msg).await.0
        };
        if let Some(frames) = reply.and_then(|r| to_frames(kernel.signer.encode(&r))) {
            let _ = shell.send(frames).await;
        }
        kernel.status(&msg, "idle");
    }
}
