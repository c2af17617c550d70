//! The kernel process: binds the five sockets of a connection file (tcp or ipc), authenticates
//! every message, serves shell and control (each request wrapped in busy/idle on iopub, answered
//! by [`super::requests`]) and relays input requests on stdin. The sockets keep answering while
//! a cell compiles: evaluation happens on the engine's thread.

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes_compat::to_frames;
use serde_json::json;
use tensorbook::contract::env;
use tokio::sync::{mpsc, oneshot};
use zeromq::{Socket, SocketRecv, SocketSend, ZmqMessage};

use super::comms::Comms;
use super::connection;
use super::display;
use super::history::History;
use super::requests::{log, output_sink, After, Kernel};
use super::wire::{new_header, Message, Signer};
use crate::engine::build_cache::SessionDir;
use crate::engine::session::Prepared;

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

async fn bind<S: Socket>(mut socket: S, url: &str) -> Result<S, String> {
    socket
        .bind(url)
        .await
        .map_err(|e| format!("cannot bind {url}: {e}"))?;
    Ok(socket)
}

/// Runs the kernel on a connection file until a shutdown request.
pub async fn run(
    connection_file: &Path,
    session_dir: Option<Arc<SessionDir>>,
) -> Result<(), String> {
    let info = connection::read(connection_file)?;
    let prepared = Prepared::new(connection_file, &info.key)?;

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
    let sink = output_sink(iopub_tx.clone(), session.clone(), Arc::clone(&parent));
    let comms = Comms::new(iopub_tx.clone(), session.clone());
    display::start_listener(
        &prepared.display_socket(),
        iopub_tx.clone(),
        session.clone(),
        Arc::clone(&parent),
        Arc::clone(&comms),
    )?;
    let (engine, kernel_session) = prepared.start(sink, session_dir);
    let kernel = Arc::new(Kernel {
        signer: Arc::clone(&signer),
        session: session.clone(),
        iopub: iopub_tx,
        engine,
        execution_count: Mutex::new(0),
        history: Mutex::new(History::open(&env::kernel_name())),
        parent,
        stdin: stdin_tx,
        stdin_cancel,
        comms,
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
    // Let iopub flush the last idle before the process goes.
    tokio::time::sleep(Duration::from_millis(100)).await;
    // A shutdown request (a restart asked for too) ends the session: the keeper lets go.
    kernel_session.end();
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

/// Whether a request is answered at once, even while a cell runs: comms are how a widget
/// reaches the running cell (a Stop button must stop it), and none of these wait for the
/// engine.
fn answered_while_a_cell_runs(msg_type: &str) -> bool {
    matches!(
        msg_type,
        "comm_open" | "comm_msg" | "comm_close" | "comm_info_request" | "kernel_info_request"
    )
}

/// Serves one ROUTER socket (shell or control) until a shutdown request: each request is
/// wrapped in busy/idle and answered on the same socket. While a request runs (a cell), the
/// socket is still read: what [`answered_while_a_cell_runs`] is answered at once, the rest
/// waits its turn in arrival order.
async fn serve(kernel: Arc<Kernel>, mut socket: zeromq::RouterSocket, channel: &'static str) {
    let mut waiting: std::collections::VecDeque<Message> = std::collections::VecDeque::new();
    loop {
        let msg = match waiting.pop_front() {
            Some(msg) => msg,
            None => {
                let Ok(raw) = socket.recv().await else { return };
                let Some(msg) = decode(&kernel.signer, raw, channel) else {
                    continue;
                };
                msg
            }
        };
        if answered_while_a_cell_runs(msg.msg_type()) {
            // Quick, and in order: a comm_msg must never overtake the comm_open before it.
            answer_now(&kernel, &mut socket, &msg).await;
            continue;
        }
        kernel.status(&msg, "busy");
        let task = tokio::spawn({
            let kernel = Arc::clone(&kernel);
            let msg = msg.clone();
            async move { handle_contained(&kernel, &msg).await }
        });
        tokio::pin!(task);
        let answer = loop {
            tokio::select! {
                answer = &mut task => break answer,
                raw = socket.recv() => {
                    let Ok(raw) = raw else { break (&mut task).await };
                    let Some(next) = decode(&kernel.signer, raw, channel) else { continue };
                    if answered_while_a_cell_runs(next.msg_type()) {
                        answer_now(&kernel, &mut socket, &next).await;
                    } else {
                        waiting.push_back(next);
                    }
                }
            }
        };
        let (reply, after) = answer.unwrap_or((None, After::Continue));
        // Requests queued behind a failed cell are aborted before its reply goes out, so
        // that nothing the client sends after seeing the error is mistaken for them.
        if matches!(after, After::AbortQueued) {
            for queued in std::mem::take(&mut waiting) {
                if queued.msg_type() == "execute_request" {
                    abort(&kernel, &mut socket, &queued).await;
                } else {
                    waiting.push_back(queued);
                }
            }
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

/// Answers one request at once, wrapped in busy/idle.
async fn answer_now(kernel: &Arc<Kernel>, socket: &mut zeromq::RouterSocket, msg: &Message) {
    kernel.status(msg, "busy");
    let (reply, _) = handle_contained(kernel, msg).await;
    if let Some(frames) = reply.and_then(|r| to_frames(kernel.signer.encode(&r))) {
        let _ = socket.send(frames).await;
    }
    kernel.status(msg, "idle");
}

/// Answers an execute_request "aborted" without running it, as ipykernel does after a failed
/// cell with stop_on_error.
async fn abort(kernel: &Arc<Kernel>, socket: &mut zeromq::RouterSocket, msg: &Message) {
    kernel.status(msg, "busy");
    let count = *kernel
        .execution_count
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    let reply = kernel.reply(
        msg,
        json!({ "status": "aborted", "execution_count": count.max(1), "user_expressions": {}, "payload": [] }),
    );
    if let Some(frames) = to_frames(kernel.signer.encode(&reply)) {
        let _ = socket.send(frames).await;
    }
    kernel.status(msg, "idle");
}

/// Handles one request in a task of its own, so that a panic while answering it (a bug of
/// ours or of a library's) costs that request an error reply, never the socket loop that
/// serves the session.
async fn handle_contained(kernel: &Arc<Kernel>, msg: &Message) -> (Option<Message>, After) {
    let task = tokio::spawn({
        let kernel = Arc::clone(kernel);
        let msg = msg.clone();
        async move { kernel.handle(&msg).await }
    });
    match task.await {
        Ok(answer) => answer,
        Err(e) => {
            let why = if e.is_panic() {
                "a panic in the kernel while answering it"
            } else {
                "the kernel stopped answering it"
            };
            log(&format!("{}: {why}", msg.msg_type()));
            let content = json!({
                "status": "error",
                "ename": "KernelError",
                "evalue": format!("{}: {why}; the session goes on", msg.msg_type()),
                "traceback": [],
            });
            let reply = msg
                .msg_type()
                .ends_with("_request")
                .then(|| kernel.reply(msg, content));
            (reply, After::Continue)
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
async fn abort_queued(kernel: &Arc<Kernel>, shell: &mut zeromq::RouterSocket) {
    while let Ok(Ok(raw)) = tokio::time::timeout(Duration::from_millis(5), shell.recv()).await {
        let Some(msg) = decode(&kernel.signer, raw, "shell") else {
            continue;
        };
        if msg.msg_type() == "execute_request" {
            abort(kernel, shell, &msg).await;
        } else {
            answer_now(kernel, shell, &msg).await;
        }
    }
}
