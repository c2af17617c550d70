//! What a kernel session owns beyond its sockets, set up by the engine: the state directory
//! (session file, display and keep sockets), the session default, the vault of kept
//! variables, and the keeper that lets the session outlive a killed kernel. The protocol gets
//! the display socket's path to serve, and hands the session back when it shuts down.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::build_cache::SessionDir;
use super::keeper::{self, Keeper};
use super::state_dir::{self, StateDir};
use super::vault::Vault;
use super::{log_line, Engine, OutputSink, Revival};

/// A session set up and not yet evaluating: the protocol starts its display listener on
/// [`Prepared::display_socket`] before [`Prepared::start`], so that nothing a cell displays
/// can arrive before the listener.
pub struct Prepared {
    state_dir: StateDir,
    vault: Option<Arc<Vault>>,
    revival: Option<Revival>,
    /// Said before the first cell: a default client from the kernelspec that is absent.
    notice: Option<String>,
}

/// A running session's state; [`SessionState::end`] ends it (a shutdown, or a restart asked for).
pub struct SessionState {
    state_dir: StateDir,
    vault: Option<Arc<Vault>>,
    cache: Option<Arc<SessionDir>>,
}

impl Prepared {
    /// Creates the state directory, sets the session default, starts the vault and attaches
    /// to the keeper named after the connection file and its key, taking back the session of
    /// a killed kernel of the same connection file when there is one. Without a vault or a
    /// keeper the session still works; the kernel's log says what will not survive.
    pub fn new(connection_file: &Path, key: &str) -> Result<Prepared, String> {
        let state_dir = StateDir::create()?;
        let notice = state_dir::start_session_default().err();
        let vault = Vault::start(&state_dir.keep_socket())
            .map_err(|e| log_line(&format!("variables will not survive a restart: {e}")))
            .ok();
        let revival = vault.as_ref().and_then(|vault| {
            let socket = keeper::socket_path(connection_file, key);
            match Keeper::attach(&socket, &keeper::secret(connection_file, key)) {
                Ok((keeper, snapshot)) => {
                    vault.set_keeper(keeper);
                    snapshot.map(|snapshot| Revival::adopt(vault, snapshot))
                }
                Err(e) => {
                    log_line(&format!("the session will not survive the kernel: {e}"));
                    None
                }
            }
        });
        Ok(Prepared {
            state_dir,
            vault,
            revival,
            notice,
        })
    }

    /// Where the evaluation process sends what cells display.
    pub fn display_socket(&self) -> PathBuf {
        self.state_dir.display_socket()
    }

    /// Starts the engine on this session; `cache` is the session's copy of the runtime build.
    pub fn start(self, sink: OutputSink, cache: Option<Arc<SessionDir>>) -> (Engine, SessionState) {
        let engine = Engine::start(
            sink,
            cache.clone(),
            self.vault.clone(),
            self.revival,
            self.notice,
        );
        let session = SessionState {
            state_dir: self.state_dir,
            vault: self.vault,
            cache,
        };
        (engine, session)
    }
}

impl SessionState {
    /// Ends the session: the keeper lets go, the session's build copy and the state
    /// directory are removed.
    pub fn end(self) {
        if let Some(vault) = &self.vault {
            vault.end_session();
        }
        if let Some(dir) = &self.cache {
            dir.remove();
        }
        drop(self.state_dir);
    }
}
