//! The session keeper: what lets a session outlive its kernel.
//!
//! The vault holds the session's variables through the death of the evaluation process; the
//! kernel holds the vault. When the kernel itself is killed (the OOM killer, `kill -9`), Jupyter
//! starts a new one on the same connection file. So each kernel starts, or finds, a keeper: a
//! small process of the same binary (`tensorbook kernel keep`), in a process session of its own
//! so that the signal Jupyter sends the kernel's process group does not reach it, listening on
//! a Unix socket named after the connection file (its path and key). The kernel mirrors the
//! vault there after every cell: each kept variable's record with its shared-memory descriptor
//! (the same memory, not a copy), the session's variables with their types, and the default
//! client. A kernel that finds a keeper takes all of it back and binds the variables again.
//!
//! The keeper holds descriptors, not names: when it exits, however it exits, the memory is
//! freed by the system; nothing is left in `/dev/shm`. It exits when the kernel ends the
//! session (a shutdown request, with or without restart: a restart asked for is a fresh
//! session), or when no kernel has come back [`grace`] after the last one went.

use std::collections::BTreeMap;
use std::io::ErrorKind;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::{json, Value as Json};
use sha2::{Digest, Sha256};
use tensorbook::contract::env;
use tensorbook::contract::keep::{Kept, LineStream};

use super::log_line;
use super::private_dir;
use super::vault::Variable;

/// How long a keeper waits for a kernel to come back; `TENSORBOOK_SESSION_GRACE` (seconds)
/// overrides it.
pub fn grace() -> Duration {
    env::session_grace().unwrap_or(Duration::from_secs(120))
}

/// One kept variable as the keeper holds it.
pub struct Record {
    /// What the vault keeps of it.
    pub kept: Kept,
    /// Its shared memory, for a tensor.
    pub memory: Option<OwnedFd>,
}

/// Everything a keeper held for a kernel that is gone.
#[derive(Default)]
pub struct Snapshot {
    /// The vault's records, by name.
    pub records: BTreeMap<String, Record>,
    /// The session's variables as evcxr knew them.
    pub variables: Vec<Variable>,
    /// The session default (`host:0`), if one was set.
    pub default_client: Option<String>,
}

/// Where keepers' directories go: the user's runtime directory (`XDG_RUNTIME_DIR`) when it
/// is set and private, else the system's temporary directory. Either way each session's
/// socket is in a directory of its own, private to this user and named after the connection
/// file and its key, so no other user can predict the path and make it first.
fn sockets_root() -> PathBuf {
    env::path(env::XDG_RUNTIME_DIR)
        .filter(|dir| private_dir::check(dir).is_ok())
        .unwrap_or_else(std::env::temp_dir)
}

fn digest(connection_file: &Path, key: &str, purpose: &[u8]) -> String {
    let path = connection_file
        .canonicalize()
        .unwrap_or_else(|_| connection_file.to_path_buf());
    let mut hash = Sha256::new();
    hash.update(purpose);
    hash.update([0]);
    hash.update(path.as_os_str().as_encoded_bytes());
    hash.update([0]);
    hash.update(key.as_bytes());
    hex::encode(hash.finalize())
}

/// The keeper socket of the session a connection file describes: its canonical path and its
/// key, so that the kernel Jupyter starts again on the same file finds it, and no other does.
pub fn socket_path(connection_file: &Path, key: &str) -> PathBuf {
    let name = digest(connection_file, key, b"socket");
    sockets_root()
        .join(format!("tensorbook-keeper-{}", &name[..24]))
        .join("keeper.sock")
}

/// The secret a kernel proves it knows when it attaches: derived from the connection file's
/// key (which only the session's kernels have), and not from anything the socket's name shows.
pub fn secret(connection_file: &Path, key: &str) -> String {
    digest(connection_file, key, b"attach")
}

/// The HMAC-SHA256 of `nonce` under `secret`: its hex is the proof of knowing the secret.
fn proof_mac(secret: &str, nonce: &str) -> hmac::Hmac<Sha256> {
    use hmac::Mac;
    let mut mac = <hmac::Hmac<Sha256> as Mac>::new_from_slice(secret.as_bytes())
        .expect("HMAC takes a key of any length");
    mac.update(nonce.as_bytes());
    mac
}

/// The proof of knowing `secret` for one `nonce`, as hex.
fn proof(secret: &str, nonce: &str) -> String {
    use hmac::Mac;
    hex::encode(proof_mac(secret, nonce).finalize().into_bytes())
}

/// Whether `offered` is the proof for `nonce`: hmac's own constant-time comparison, as the
/// wire's signatures are checked (`protocol/wire.rs`).
fn proof_holds(secret: &str, nonce: &str, offered: &str) -> bool {
    use hmac::Mac;
    hex::decode(offered).is_ok_and(|raw| proof_mac(secret, nonce).verify_slice(&raw).is_ok())
}

/// The kernel's connection to its keeper.
pub struct Keeper {
    lines: LineStream,
    /// What was last sent, so that a cell that changed nothing sends nothing.
    sent_variables: Vec<Variable>,
    sent_default: Option<String>,
}

impl Keeper {
    /// Connects to the session's keeper, starting one if none answers; a keeper that held a
    /// session for a kernel that died hands it over (the snapshot). The socket's directory
    /// must be this user's private one and the keeper a process of this user; the kernel
    /// answers the keeper's challenge with a proof of `secret` ([`secret`]).
    pub fn attach(socket: &Path, secret: &str) -> Result<(Keeper, Option<Snapshot>), String> {
        let dir = socket.parent().ok_or("a keeper socket has a directory")?;
        let stream = match private_dir::check(dir).map(|()| UnixStream::connect(socket)) {
            Ok(Ok(stream)) => stream,
            // No keeper answers (or there is no directory yet): start one.
            _ => start(socket, secret)?,
        };
        if !same_user(&stream) {
            return Err(format!(
                "{} is served by a process of another user: not used",
                socket.display()
            ));
        }
        let _ = stream.set_read_timeout(Some(Duration::from_secs(10)));
        let mut lines = LineStream::new(stream);
        let challenge = lines
            .receive()
            .map_err(|e| format!("the session keeper did not answer: {e}"))?
            .ok_or("the session keeper closed the connection")?;
        let challenge: Json =
            serde_json::from_str(&challenge).map_err(|e| format!("keeper: not JSON ({e})"))?;
        let nonce = match (challenge["type"].as_str(), challenge["nonce"].as_str()) {
            (Some("challenge"), Some(nonce)) => nonce.to_string(),
            _ => return Err(format!("keeper: expected a challenge, got {challenge}")),
        };
        let attach = json!({ "type": "attach", "proof": proof(secret, &nonce) });
        lines
            .send(&attach.to_string(), None)
            .map_err(|e| format!("the session keeper did not answer: {e}"))?;
        let snapshot = read_snapshot(&mut lines)?;
        let _ = lines
            .stream()
            .set_read_timeout(Some(Duration::from_secs(2)));
        // A keeper that stops reading (stopped, swapped out) must not hold up a cell: a send
        // that cannot finish in time fails, and the session goes on without its keeper.
        let _ = lines
            .stream()
            .set_write_timeout(Some(Duration::from_secs(2)));
        Ok((
            Keeper {
                lines,
                sent_variables: Vec::new(),
                sent_default: None,
            },
            snapshot,
        ))
    }

    /// Holds `kept` (and its memory) under its name, replacing what was there.
    pub fn put(&mut self, kept: &Kept, memory: Option<&OwnedFd>) -> Result<(), String> {
        let line = json!({ "type": "put", "kept": kept.to_json() }).to_string();
        self.send(&line, memory)
    }

    /// Lets go of what is held under `name`.
    pub fn forget(&mut self, name: &str) -> Result<(), String> {
        self.send(&json!({ "type": "forget", "name": name }).to_string(), None)
    }

    /// The session's variables and default client as they are after a cell.
    pub fn session(
        &mut self,
        variables: &[Variable],
        default_client: Option<String>,
    ) -> Result<(), String> {
        if variables != self.sent_variables.as_slice() {
            let list: Vec<Json> = variables
                .iter()
                .map(|v| json!({ "name": v.name, "ty": v.ty, "mut": v.is_mut }))
                .collect();
            self.send(
                &json!({ "type": "variables", "variables": list }).to_string(),
                None,
            )?;
            self.sent_variables = variables.to_vec();
        }
        if default_client.is_some() && default_client != self.sent_default {
            self.send(
                &json!({ "type": "default", "client": default_client }).to_string(),
                None,
            )?;
            self.sent_default = default_client;
        }
        Ok(())
    }

    /// Ends the session: the keeper lets go of everything and exits before this returns.
    pub fn end(mut self) {
        if self
            .send(&json!({ "type": "end" }).to_string(), None)
            .is_ok()
        {
            // Its answer means its descriptors are closed; its end of file means it is gone.
            let _ = self.lines.receive();
        }
    }

    fn send(&mut self, line: &str, memory: Option<&OwnedFd>) -> Result<(), String> {
        self.lines
            .send(line, memory.map(AsFd::as_fd))
            .map_err(|e| format!("the session keeper is gone: {e}"))
    }
}

/// Binds the socket in its private directory and starts a keeper process on it, which knows
/// the session's `secret` (through its environment, which only this user can read).
fn start(socket: &Path, secret: &str) -> Result<UnixStream, String> {
    let dir = socket.parent().ok_or("a keeper socket has a directory")?;
    private_dir::ensure(dir)?;
    // Nobody answers on it: a keeper that was killed left it behind.
    let _ = std::fs::remove_file(socket);
    let listener = UnixListener::bind(socket)
        .map_err(|e| format!("cannot listen on {}: {e}", socket.display()))?;
    let exe = std::env::current_exe().map_err(|e| format!("cannot find this program: {e}"))?;
    let mut command = std::process::Command::new(exe);
    command
        .args(["kernel", "keep", "--socket"])
        .arg(socket)
        .arg("--grace-ms")
        .arg(grace().as_millis().to_string())
        .env(env::KEEPER_SECRET, secret)
        .stdin(std::process::Stdio::from(OwnedFd::from(listener)))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    {
        use std::os::unix::process::CommandExt;
        // SAFETY: setsid is async-signal-safe; nothing else runs between fork and exec.
        unsafe {
            command.pre_exec(|| {
                if libc::setsid() < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
    }
    let child = command
        .spawn()
        .map_err(|e| format!("cannot start the session keeper: {e}"))?;
    // The keeper outlives this kernel by design; a thread reaps it if it ends first.
    std::thread::Builder::new()
        .name("keeper-reaper".into())
        .spawn(move || {
            let mut child = child;
            let _ = child.wait();
        })
        .map_err(|e| format!("cannot watch the session keeper: {e}"))?;
    UnixStream::connect(socket).map_err(|e| format!("the session keeper did not start: {e}"))
}

fn read_snapshot(lines: &mut LineStream) -> Result<Option<Snapshot>, String> {
    let mut snapshot = Snapshot::default();
    let mut revived = false;
    loop {
        let line = lines
            .receive()
            .map_err(|e| format!("the session keeper did not answer: {e}"))?
            .ok_or("the session keeper closed the connection")?;
        let message: Json =
            serde_json::from_str(&line).map_err(|e| format!("keeper: not JSON ({e})"))?;
        match message["type"].as_str() {
            Some("record") => {
                let kept = Kept::from_json(&message["kept"])?;
                let memory = if kept.has_memory() {
                    Some(
                        lines
                            .take_fd()
                            .ok_or("keeper: a tensor came without its memory")?,
                    )
                } else {
                    None
                };
                snapshot
                    .records
                    .insert(kept.name.clone(), Record { kept, memory });
            }
            Some("variables") => snapshot.variables = variables_of(&message["variables"]),
            Some("default") => {
                snapshot.default_client = message["client"].as_str().map(str::to_string)
            }
            Some("revived") => revived = true,
            Some("attached") => return Ok(revived.then_some(snapshot)),
            Some("refused") => {
                return Err("the session keeper refused this kernel's proof of the key".into())
            }
            other => return Err(format!("keeper: unexpected message {other:?}")),
        }
    }
}

fn variables_of(list: &Json) -> Vec<Variable> {
    list.as_array()
        .map(|list| {
            list.iter()
                .filter_map(|v| {
                    Some(Variable {
                        name: v["name"].as_str()?.to_string(),
                        ty: v["ty"].as_str()?.to_string(),
                        is_mut: v["mut"].as_bool().unwrap_or(false),
                    })
                })
                .collect()
        })
        .unwrap_or_default()
}

/// The keeper process: serves the listening socket on its standard input until the session
/// ends or no kernel comes back within `grace` after the last one went.
pub fn serve(socket: &Path, grace: Duration) -> Result<(), String> {
    use std::os::fd::FromRawFd;
    // SAFETY: the kernel started this process with the bound listener as its standard input,
    // which nothing else in this process owns.
    let listener = unsafe { UnixListener::from_raw_fd(0) };
    listener
        .set_nonblocking(true)
        .map_err(|e| format!("keeper: {e}"))?;
    let secret = env::text(env::KEEPER_SECRET)
        .ok_or("keeper: started without the session's secret; nobody could attach")?;
    // The kernel made the directory; the keeper does not serve from one it cannot trust.
    let dir = socket.parent().ok_or("keeper: a socket has a directory")?;
    private_dir::check(dir).map_err(|e| format!("keeper: {e}"))?;
    // Nothing this process starts needs it.
    env::remove(env::KEEPER_SECRET);
    let mut held = Held::default();
    // Until the first kernel attaches, the one that started it counts as just gone.
    let mut alone_since = Some(Instant::now());
    let mut owner: Option<LineStream> = None;
    let mut ever_owned = false;
    loop {
        match listener.accept() {
            Ok((stream, _)) if same_user(&stream) => {
                let _ = stream.set_nonblocking(false);
                let mut lines = LineStream::new(stream);
                let _ = lines
                    .stream()
                    .set_read_timeout(Some(Duration::from_secs(5)));
                let attached = proves_the_secret(&mut lines, &secret)
                    && held.hand_over(&lines, ever_owned).is_ok();
                if attached {
                    let _ = lines
                        .stream()
                        .set_read_timeout(Some(Duration::from_millis(50)));
                    // A newer kernel of the session replaces an older one.
                    owner = Some(lines);
                    ever_owned = true;
                    alone_since = None;
                }
            }
            Ok(_) => {}
            Err(e) if e.kind() == ErrorKind::WouldBlock => {}
            Err(_) => std::thread::sleep(Duration::from_millis(50)),
        }
        if let Some(lines) = owner.as_mut() {
            match held.serve_one(lines) {
                Served::More => continue,
                Served::Idle => {}
                Served::Gone => {
                    owner = None;
                    alone_since = Some(Instant::now());
                }
                Served::End => break,
            }
        } else {
            std::thread::sleep(Duration::from_millis(50));
        }
        if alone_since.is_some_and(|since| since.elapsed() >= grace) {
            break;
        }
    }
    let _ = std::fs::remove_file(socket);
    // The directory goes with the last keeper (removing one that is not empty fails).
    if let Some(dir) = socket.parent() {
        let _ = std::fs::remove_dir(dir);
    }
    Ok(())
}

/// Challenges a process that connected: it attaches only with the proof of the session's
/// secret for a fresh nonce. Anything else is refused, and whoever holds the session now
/// keeps it.
fn proves_the_secret(lines: &mut LineStream, secret: &str) -> bool {
    let nonce = format!(
        "{}{}",
        uuid::Uuid::new_v4().simple(),
        uuid::Uuid::new_v4().simple()
    );
    let challenge = json!({ "type": "challenge", "nonce": nonce });
    if lines.send(&challenge.to_string(), None).is_err() {
        return false;
    }
    let Ok(Some(line)) = lines.receive() else {
        return false;
    };
    let message: Json = serde_json::from_str(&line).unwrap_or_default();
    let proven = message["type"] == "attach"
        && message["proof"]
            .as_str()
            .is_some_and(|offered| proof_holds(secret, &nonce, offered));
    if !proven {
        let _ = lines.send(&json!({ "type": "refused" }).to_string(), None);
    }
    proven
}

/// Whether the process at the other end runs as this user (the socket's directory is private
/// too; this also holds if someone made it readable).
fn same_user(stream: &UnixStream) -> bool {
    use std::os::fd::AsRawFd;
    let mut cred = libc::ucred {
        pid: 0,
        uid: u32::MAX,
        gid: 0,
    };
    let mut len = std::mem::size_of::<libc::ucred>() as libc::socklen_t;
    // SAFETY: the buffer is a ucred of the length passed; the descriptor is the live stream's.
    let got = unsafe {
        libc::getsockopt(
            stream.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_PEERCRED,
            (&mut cred as *mut libc::ucred).cast(),
            &mut len,
        )
    };
    // SAFETY: getuid cannot fail and touches no memory.
    got == 0 && cred.uid == unsafe { libc::getuid() }
}

/// What the keeper holds.
#[derive(Default)]
struct Held {
    records: BTreeMap<String, Record>,
    variables: Json,
    default_client: Option<String>,
}

enum Served {
    More,
    Idle,
    Gone,
    End,
}

impl Held {
    /// Sends everything to a kernel that attached; `revived` when an earlier kernel had it.
    fn hand_over(&self, lines: &LineStream, revived: bool) -> std::io::Result<()> {
        if revived {
            for record in self.records.values() {
                let line = json!({ "type": "record", "kept": record.kept.to_json() });
                lines.send(&line.to_string(), record.memory.as_ref().map(AsFd::as_fd))?;
            }
            lines.send(
                &json!({ "type": "variables", "variables": self.variables }).to_string(),
                None,
            )?;
            if let Some(client) = &self.default_client {
                lines.send(
                    &json!({ "type": "default", "client": client }).to_string(),
                    None,
                )?;
            }
            lines.send(&json!({ "type": "revived" }).to_string(), None)?;
        }
        lines.send(&json!({ "type": "attached" }).to_string(), None)
    }

    fn serve_one(&mut self, lines: &mut LineStream) -> Served {
        let line = match lines.receive() {
            Ok(Some(line)) => line,
            Ok(None) => return Served::Gone,
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                return Served::Idle
            }
            Err(_) => return Served::Gone,
        };
        let Ok(message) = serde_json::from_str::<Json>(&line) else {
            return Served::More;
        };
        match message["type"].as_str() {
            Some("put") => {
                if let Ok(kept) = Kept::from_json(&message["kept"]) {
                    let memory = if kept.has_memory() {
                        lines.take_fd()
                    } else {
                        None
                    };
                    self.records
                        .insert(kept.name.clone(), Record { kept, memory });
                }
            }
            Some("forget") => {
                if let Some(name) = message["name"].as_str() {
                    self.records.remove(name);
                }
            }
            Some("variables") => self.variables = message["variables"].clone(),
            Some("default") => self.default_client = message["client"].as_str().map(str::to_string),
            Some("end") => {
                self.records.clear();
                let _ = lines.send(&json!({ "type": "ended" }).to_string(), None);
                return Served::End;
            }
            _ => {}
        }
        Served::More
    }
}

/// Mirrors the vault to the keeper (see `Vault::mirror`); failures are logged once, and the
/// session goes on without surviving its kernel.
pub fn report(result: Result<(), String>) {
    if let Err(e) = result {
        log_line(&format!("the session will not survive the kernel: {e}"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_proof_for_this_nonce_and_secret_holds() {
        let good = proof("secret", "nonce");
        assert!(proof_holds("secret", "nonce", &good));
        assert!(!proof_holds("secret", "another nonce", &good));
        assert!(!proof_holds("other secret", "nonce", &good));
        assert!(!proof_holds("secret", "nonce", &"00".repeat(32)));
        assert!(!proof_holds("secret", "nonce", "not hex"));
        assert!(!proof_holds("secret", "nonce", ""));
    }
}
