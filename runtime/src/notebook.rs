//! Rich output from inside a running notebook cell: `display` sends a mime bundle at once (not
//! at the end of the cell), a [`DisplayHandle`] updates it in place, and [`clear_output`]
//! clears the cell's output — the pieces a progress display is made of.
//!
//! Inside a tensorbook kernel the messages go to the kernel over its display socket (see
//! [`crate::contract::display`]); anywhere else `display` prints the text/plain form to stdout.

use std::io::Write;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::contract::display::{Bundle, Message};
use crate::contract::{env, markers, variables};
use crate::tensor::Tensor;

/// A value that can show itself as a mime bundle.
pub trait Displayable {
    /// `(mime type, content)` pairs; the first should be `text/plain`.
    fn mime_bundle(&self) -> Vec<(&'static str, String)>;
}

impl Displayable for Tensor {
    fn mime_bundle(&self) -> Vec<(&'static str, String)> {
        Tensor::mime_bundle(self)
    }
}

impl Displayable for str {
    fn mime_bundle(&self) -> Vec<(&'static str, String)> {
        vec![("text/plain", self.to_string())]
    }
}

impl Displayable for String {
    fn mime_bundle(&self) -> Vec<(&'static str, String)> {
        self.as_str().mime_bundle()
    }
}

/// HTML to render as such (with its text as the plain fallback).
pub struct Html(pub String);

impl Displayable for Html {
    fn mime_bundle(&self) -> Vec<(&'static str, String)> {
        vec![
            ("text/plain", "[HTML]".to_string()),
            ("text/html", self.0.clone()),
        ]
    }
}

/// SVG to render as an image. Its bundle carries a PNG of it too, for the frontends that draw
/// no SVG (JupyterLab in an untrusted notebook, nbviewer, GitHub).
pub struct Svg(pub String);

impl Svg {
    /// The bundle without the PNG: the in-place redraws of a live chart, many a second, where
    /// drawing each to pixels would slow the loop that feeds it (its last redraw has one).
    pub(crate) fn vector_bundle(&self) -> Vec<(&'static str, String)> {
        vec![
            ("text/plain", "[SVG image]".to_string()),
            ("image/svg+xml", self.0.clone()),
        ]
    }
}

impl Displayable for Svg {
    fn mime_bundle(&self) -> Vec<(&'static str, String)> {
        let mut bundle = self.vector_bundle();
        if let Some(png) = crate::raster::svg_to_png_base64(&self.0) {
            bundle.push(("image/png", png));
        }
        bundle
    }
}

impl std::fmt::Debug for Svg {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Svg({} bytes)", self.0.len())
    }
}

impl std::fmt::Debug for Html {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Html({:?})", self.0)
    }
}

fn owned(bundle: &[(&'static str, String)]) -> Bundle {
    bundle
        .iter()
        .map(|(mime, content)| (mime.to_string(), content.clone()))
        .collect()
}

/// Sends one message to the kernel; false when not inside a tensorbook kernel.
pub(crate) fn send(message: &Message) -> bool {
    #[cfg(unix)]
    {
        exchange(message).is_some()
    }
    #[cfg(not(unix))]
    {
        let _ = message;
        false
    }
}

/// Sends one message and waits for the kernel's acknowledgement; the connection, for a
/// [`Message::Listen`] that keeps it. None when not inside a tensorbook kernel.
#[cfg(unix)]
pub(crate) fn exchange(message: &Message) -> Option<std::os::unix::net::UnixStream> {
    let path = env::path(env::DISPLAY_SOCKET)?;
    let mut stream = std::os::unix::net::UnixStream::connect(path).ok()?;
    let line = format!("{}\n", message.to_line());
    stream.write_all(line.as_bytes()).ok()?;
    // Wait for the kernel to acknowledge: the message is then on its way to the frontend
    // before anything this cell does next (and before the cell's result).
    let _ = stream.set_read_timeout(Some(std::time::Duration::from_secs(5)));
    let mut ack = [0u8; 1];
    // Sent either way: a kernel too slow to acknowledge in time has it already.
    let _ = std::io::Read::read_exact(&mut stream, &mut ack);
    Some(stream)
}

/// A display that can be replaced in place.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DisplayHandle {
    id: String,
}

static NEXT_ID: AtomicU64 = AtomicU64::new(1);

impl DisplayHandle {
    /// The display id Jupyter knows it by.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// Replaces what this display shows.
    pub fn update(&self, value: &(impl Displayable + ?Sized)) {
        let bundle = value.mime_bundle();
        let message = Message::Update {
            display_id: self.id.clone(),
            data: owned(&bundle),
        };
        if !send(&message) {
            print_plain(&bundle);
        }
    }
}

fn print_plain(bundle: &[(&'static str, String)]) {
    if let Some((_, text)) = bundle.iter().find(|(m, _)| *m == "text/plain") {
        println!("{text}");
    }
}

/// Shows `value` now, in the middle of the cell, and returns a handle to update it.
pub fn display(value: &(impl Displayable + ?Sized)) -> DisplayHandle {
    // Each notebook cell may link its own copy of this crate (and of this counter), so the
    // time makes ids unique across cells.
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    let id = format!(
        "tensorbook-{}-{nanos}-{}",
        std::process::id(),
        NEXT_ID.fetch_add(1, Ordering::Relaxed)
    );
    let bundle = value.mime_bundle();
    let message = Message::Display {
        display_id: id.clone(),
        data: owned(&bundle),
    };
    if !send(&message) {
        print_plain(&bundle);
    }
    DisplayHandle { id }
}

/// Clears the cell's output; with `wait`, only once new output arrives (no flicker).
pub fn clear_output(wait: bool) {
    send(&Message::Clear { wait });
}

/// Asks the person at the notebook for a line of text (Jupyter's `input()`): the kernel sends
/// an input_request and the front end shows a text box with `prompt`. Outside a kernel it reads
/// a line from stdin after printing the prompt. An interrupt while waiting is
/// [`Error::Interrupted`](crate::error::Error::Interrupted).
pub fn input(prompt: &str) -> crate::error::Result<String> {
    read_input(prompt, false)
}

/// Like [`input`], with the text hidden as it is typed.
pub fn input_password(prompt: &str) -> crate::error::Result<String> {
    read_input(prompt, true)
}

fn read_input(prompt: &str, password: bool) -> crate::error::Result<String> {
    let mut out = std::io::stdout().lock();
    // Inside evcxr the request is its marker line, which the kernel turns into input_request.
    let written = if env::in_evaluation_process() {
        writeln!(out, "{}", markers::input_request(prompt, password))
    } else {
        write!(out, "{prompt}")
    };
    written
        .and_then(|_| out.flush())
        .map_err(|e| io_error("stdout", e))?;
    drop(out);
    let mut line = String::new();
    std::io::stdin()
        .read_line(&mut line)
        .map_err(|e| io_error("stdin", e))?;
    crate::interrupt::check()?;
    Ok(line.trim_end_matches(['\r', '\n']).to_string())
}

fn io_error(what: &str, e: std::io::Error) -> crate::error::Error {
    crate::error::Error::Io {
        path: what.into(),
        message: e.to_string(),
    }
}

/// How often buffered stdout is pushed out.
const FLUSH_EVERY: std::time::Duration = std::time::Duration::from_millis(50);

/// Starts (once per process) a thread that flushes stdout every 50 ms, so that `print!`
/// without a newline shows while the cell still runs, as in a Python notebook. Rust's stdout
/// holds an unfinished line until its newline; the kernel starts this with the session.
pub fn keep_output_flowing() {
    // Each notebook cell has its own copy of the runtime's statics; the environment is shared.
    if env::is_set(env::OUTPUT_FLUSHER) {
        return;
    }
    env::set(env::OUTPUT_FLUSHER, "1");
    let started = std::thread::Builder::new()
        .name("tensorbook-output-flusher".into())
        .spawn(|| loop {
            std::thread::sleep(FLUSH_EVERY);
            let _ = std::io::stdout().flush();
        });
    if started.is_err() {
        env::remove(env::OUTPUT_FLUSHER);
    }
}

/// For the kernel's `:vars`: prints the marker line with the dtype, shape, placement and bytes
/// of each named tensor (see [`crate::contract::variables`]).
#[doc(hidden)]
pub fn describe_variables(values: &[(&str, &dyn Describe)]) {
    let list: Vec<variables::TensorDescription> =
        values.iter().map(|(name, v)| v.describe(name)).collect();
    println!("{}", variables::to_line(&list));
}

/// Answers a session command (`client`, `client SPEC`, `clients`; the kernel's `:client` and
/// `:clients` without the colon) in this process, where the session's settings and default
/// live, and prints the answer line the kernel reads
/// ([`crate::contract::session_command`]).
pub fn answer_session_command(command: &str) {
    let answer = session_command(command);
    println!("{}", crate::contract::session_command::answer_line(&answer));
}

/// What a session command prints, or why it failed.
pub fn session_command(command: &str) -> Result<String, String> {
    let command = command.trim();
    let (name, arg) = command
        .split_once(char::is_whitespace)
        .map_or((command, ""), |(n, a)| (n, a.trim()));
    match name {
        "clients" => Ok(clients_table()),
        "client" if arg.is_empty() => {
            let d = crate::session::default_device();
            Ok(format!(
                "session default: {d} (new tensors and servings go to {d})"
            ))
        }
        "client" => {
            let device = crate::session::ClientSpec::parse(arg)
                .and_then(crate::session::ClientSpec::apply)
                .map_err(|e| e.to_string())?;
            Ok(format!(
                "session default is now {device}; existing tensors keep their placement"
            ))
        }
        other => Err(format!("unknown session command {other:?}")),
    }
}

/// Every client as a table (state, devices, why not), then the session default: `:clients`
/// and `tensorbook clients`.
pub fn clients_table() -> String {
    let mut out = format!(
        "{:<8} {:<10} {:<24} why not\n",
        "client", "state", "devices"
    );
    for info in &crate::client::clients() {
        let devices = if info.available {
            (0..info.device_count)
                .map(|id| {
                    crate::device::Device {
                        client: info.client,
                        id,
                    }
                    .to_string()
                })
                .collect::<Vec<_>>()
                .join(", ")
        } else {
            "-".into()
        };
        let line = format!(
            "{:<8} {:<10} {:<24} {}",
            info.client.name(),
            if info.available {
                "available"
            } else {
                "absent"
            },
            devices,
            info.reason.as_deref().unwrap_or("")
        );
        out.push_str(&line);
        out.push('\n');
        if info.client == crate::device::Client::Cuda {
            // What was found, so a missing or mismatched part is named, not guessed.
            for detail in crate::client::cuda_report().lines() {
                out.push_str(&format!("{:<8} {detail}\n", ""));
            }
        }
    }
    let all_reduce = match crate::client::nccl_status() {
        Ok(nccl) => format!("through {nccl}"),
        Err(why) => why,
    };
    out.push_str(&format!("cuda all-reduce: {all_reduce}\n"));
    out.push_str(&format!(
        "session default: {}",
        crate::session::default_device()
    ));
    out
}

/// A value `:vars` describes beyond its type: tensors (dtype, shape, placement, bytes),
/// compiled functions (for which devices they were compiled), streams and servings.
pub trait Describe {
    /// The description of the variable `name`.
    fn describe(&self, name: &str) -> variables::TensorDescription;
}

fn other(name: &str, summary: String) -> variables::TensorDescription {
    variables::TensorDescription {
        name: name.to_string(),
        dtype: String::new(),
        shape: Vec::new(),
        device: String::new(),
        bytes: 0,
        deallocated: false,
        other: Some(summary),
    }
}

impl Describe for Tensor {
    fn describe(&self, name: &str) -> variables::TensorDescription {
        variables::TensorDescription {
            name: name.to_string(),
            dtype: self.dtype().to_string(),
            shape: self.shape().to_vec(),
            device: self.device().to_string(),
            bytes: u64::try_from(self.byte_size()).unwrap_or(u64::MAX),
            deallocated: self.is_deallocated(),
            other: None,
        }
    }
}

impl<O: crate::jit::JitOutput> Describe for crate::jit::Jit<O> {
    fn describe(&self, name: &str) -> variables::TensorDescription {
        other(name, self.summary())
    }
}

impl Describe for crate::jit::stream::Stream {
    fn describe(&self, name: &str) -> variables::TensorDescription {
        other(name, self.summary())
    }
}

impl Describe for crate::serving::Serving {
    fn describe(&self, name: &str) -> variables::TensorDescription {
        other(name, self.summary())
    }
}

impl<O: crate::jit::JitOutput> Describe for crate::parallel::data_parallel::DataParallel<O> {
    fn describe(&self, name: &str) -> variables::TensorDescription {
        other(name, self.summary())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outside_a_kernel_display_prints_and_returns_a_handle() {
        let h = display("plain text");
        assert!(h.id().starts_with("tensorbook-"));
        h.update("again");
        clear_output(false);
    }
}
