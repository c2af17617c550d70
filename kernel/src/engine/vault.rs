//! The vault: what the kernel keeps of the session's variables so that they outlive the
//! evaluation process (`tensorbook::keep`, `tensorbook::contract::keep`).
//!
//! Cells send each variable they store over the keep socket; the vault holds the latest record
//! under each name, and for a host tensor a descriptor of its shared memory, so its bytes stay
//! when the process dies. After each cell the vault forgets the names evcxr no longer has
//! (dropped, or a `:clear`): their memory goes once the process drops it too. After a restart
//! [`restore_code`] writes the cell that binds every kept variable again; the new process takes
//! each record back over the same socket.

use std::collections::HashMap;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tensorbook::contract::env;
use tensorbook::contract::keep::{self as socket, Kept, LineStream, Request, Value};

use super::keeper::{self, Keeper};
use super::log_line;

/// One kept variable.
struct Entry {
    kept: Kept,
    /// The tensor's shared memory.
    memory: Option<OwnedFd>,
    /// When it was kept (a counter), so that the keeper is sent only what changed.
    generation: u64,
}

/// The session's kept variables, by name.
#[derive(Default)]
pub struct Vault {
    entries: Mutex<HashMap<String, Entry>>,
    generations: std::sync::atomic::AtomicU64,
    /// The session keeper (see [`keeper`]) and what it holds: name -> generation.
    keeper: Mutex<Option<(Keeper, HashMap<String, u64>)>>,
}

impl Vault {
    /// Binds the keep socket at `path`, names it to the evaluation process and serves it.
    pub fn start(path: &Path) -> Result<Arc<Vault>, String> {
        let listener = UnixListener::bind(path)
            .map_err(|e| format!("cannot listen on {}: {e}", path.display()))?;
        env::set(env::KEEP_SOCKET, path);
        let vault = Arc::new(Vault::default());
        let served = Arc::clone(&vault);
        std::thread::Builder::new()
            .name("keep-socket".into())
            .spawn(move || {
                for stream in listener.incoming().flatten() {
                    let vault = Arc::clone(&served);
                    // One thread per connection: a cell that stalls holds up nobody else.
                    let _ = std::thread::Builder::new()
                        .name("keep-connection".into())
                        .spawn(move || vault.serve(stream));
                }
            })
            .map_err(|e| format!("cannot start the keep socket's thread: {e}"))?;
        Ok(vault)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Entry>> {
        self.entries.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn serve(&self, stream: UnixStream) {
        let _ = stream.set_read_timeout(Some(Duration::from_secs(60)));
        let mut lines = LineStream::new(stream);
        loop {
            let line = match lines.receive() {
                Ok(Some(line)) => line,
                Ok(None) => return,
                Err(e) => return log_line(&format!("keep socket: {e}")),
            };
            match Request::parse(&line) {
                Ok(Request::Keep(kept)) => {
                    let memory = if kept.has_memory() {
                        match lines.take_fd() {
                            Some(fd) => Some(fd),
                            None => {
                                log_line(&format!(
                                    "keep socket: no memory came with {}",
                                    kept.name
                                ));
                                continue;
                            }
                        }
                    } else {
                        None
                    };
                    self.insert(kept, memory);
                }
                Ok(Request::Done) => {
                    if lines.send(socket::DONE, None).is_err() {
                        return;
                    }
                }
                Ok(Request::Take { name }) => {
                    let entries = self.lock();
                    let entry = entries.get(&name);
                    let answer = socket::take_answer(entry.map(|e| &e.kept));
                    let fd = entry.and_then(|e| e.memory.as_ref()).map(AsFd::as_fd);
                    if lines.send(&answer, fd).is_err() {
                        return;
                    }
                }
                Err(e) => log_line(&format!("keep socket: ignored a malformed message: {e}")),
            }
        }
    }

    fn insert(&self, kept: Kept, memory: Option<OwnedFd>) {
        let generation = self
            .generations
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        self.lock().insert(
            kept.name.clone(),
            Entry {
                kept,
                memory,
                generation,
            },
        );
    }

    /// Takes over what a session keeper held for a kernel that died, as if its cells had
    /// kept it here.
    pub fn adopt(&self, records: impl IntoIterator<Item = keeper::Record>) {
        for record in records {
            self.insert(record.kept, record.memory);
        }
    }

    /// Mirrors the vault to `keeper` from now on (see [`Vault::mirror`]).
    pub fn set_keeper(&self, keeper: Keeper) {
        *self.keeper.lock().unwrap_or_else(|e| e.into_inner()) = Some((keeper, HashMap::new()));
    }

    /// Sends the keeper what changed since the last call: records kept or replaced, names
    /// forgotten, the session's variables and default client. Without a keeper, nothing.
    pub fn mirror(&self, variables: &[Variable], default_client: Option<String>) {
        let mut slot = self.keeper.lock().unwrap_or_else(|e| e.into_inner());
        let Some((keeper, held)) = slot.as_mut() else {
            return;
        };
        let entries = self.lock();
        let result = (|| {
            let gone: Vec<String> = held
                .keys()
                .filter(|name| !entries.contains_key(*name))
                .cloned()
                .collect();
            for name in gone {
                keeper.forget(&name)?;
                held.remove(&name);
            }
            for (name, entry) in entries.iter() {
                if held.get(name) != Some(&entry.generation) {
                    keeper.put(&entry.kept, entry.memory.as_ref())?;
                    held.insert(name.clone(), entry.generation);
                }
            }
            keeper.session(variables, default_client)
        })();
        drop(entries);
        if result.is_err() {
            // One report, then the session goes on without surviving its kernel.
            *slot = None;
        }
        keeper::report(result);
    }

    /// Ends the session at the keeper: it lets go of everything before this returns.
    pub fn end_session(&self) {
        let taken = self.keeper.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some((keeper, _)) = taken {
            keeper.end();
        }
    }

    /// Forgets every variable whose name `keep` refuses.
    pub fn retain(&self, keep: impl Fn(&str) -> bool) {
        self.lock().retain(|name, _| keep(name));
    }

    /// What is kept under `name`.
    pub fn get(&self, name: &str) -> Option<Kept> {
        self.lock().get(name).map(|e| e.kept.clone())
    }

    /// The number of variables kept, and how many of them hold shared memory.
    #[cfg(test)]
    pub fn counts(&self) -> (usize, usize) {
        let entries = self.lock();
        let memory = entries.values().filter(|e| e.memory.is_some()).count();
        (entries.len(), memory)
    }
}

/// A session variable as evcxr knew it before the process died.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Variable {
    /// Its name.
    pub name: String,
    /// Its type as evcxr writes it.
    pub ty: String,
    /// Declared `mut`.
    pub is_mut: bool,
}

/// What becomes of each variable after a restart.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Plan {
    /// The restore cell's code (empty when nothing can be restored).
    pub code: String,
    /// `name (type)` of each variable the code restores.
    pub restored: Vec<String>,
    /// `name (type): why` of each variable that is lost.
    pub lost: Vec<String>,
}

/// The cell that binds again every variable of `before` that the vault keeps.
pub fn restore_code(vault: &Vault, before: &[Variable]) -> Plan {
    let mut plan = Plan::default();
    let mut before = before.to_vec();
    before.sort_by(|a, b| a.name.cmp(&b.name));
    for var in before {
        let mutability = if var.is_mut { "mut " } else { "" };
        let call = match vault.get(&var.name).map(|k| k.value) {
            Some(Value::Tensor {
                dtype,
                shape,
                device,
                names,
                ..
            }) => {
                let dims: String = shape
                    .iter()
                    .enumerate()
                    .map(|(i, d)| match names.get(i) {
                        Some(Some(name)) => format!("[{name}: {d}]"),
                        _ => format!("[{d}]"),
                    })
                    .collect();
                plan.restored
                    .push(format!("{} ({dtype}{dims} on {device})", var.name));
                "restore_tensor"
            }
            Some(Value::Plain { .. }) => {
                plan.restored.push(format!("{} ({})", var.name, var.ty));
                "restore_value"
            }
            Some(Value::Lost { why }) => {
                plan.lost.push(format!("{} ({}): {why}", var.name, var.ty));
                continue;
            }
            None => {
                plan.lost.push(format!(
                    "{} ({}): not kept by the cell that defined it",
                    var.name, var.ty
                ));
                continue;
            }
        };
        plan.code.push_str(&format!(
            "let {mutability}{}: {} = tensorbook::keep::{call}({:?})?;\n",
            var.name, var.ty, var.name
        ));
    }
    plan
}

#[cfg(test)]
mod tests {
    use super::*;

    fn var(name: &str, ty: &str, is_mut: bool) -> Variable {
        Variable {
            name: name.into(),
            ty: ty.into(),
            is_mut,
        }
    }

    fn kept(vault: &Vault, name: &str, value: Value) {
        vault.insert(
            Kept {
                name: name.into(),
                type_name: "x".into(),
                value,
            },
            None,
        );
    }

    /// The whole path a restart takes, in one process: a cell's hook sends its variables over
    /// the keep socket, the vault holds them, and restoring takes each back (a tensor on the
    /// very memory it was kept in).
    #[test]
    fn kept_variables_come_back_through_the_socket() {
        use tensorbook::{DType, Tensor};
        let dir = tempfile::tempdir().unwrap();
        let vault = Vault::start(&dir.path().join("keep.sock")).unwrap();
        tensorbook::set_shared_host_memory(true);
        let big = Tensor::iota(DType::F32, &[1 << 19], None).unwrap();
        let small = Tensor::iota(DType::S64, &[3], None).unwrap();
        let n: i64 = -7;
        let name = String::from("kept");
        let file = std::fs::File::open("/dev/null").unwrap();
        tensorbook::keep_variables!(
            ("big", &big),
            ("small", &small),
            ("n", &n),
            ("name", &name),
            ("file", &file)
        );
        assert_eq!(vault.counts(), (5, 2));
        let again = tensorbook::keep::restore_tensor("big").unwrap();
        assert_eq!(again.shape(), &[1 << 19]);
        assert_eq!(again.to_vec::<f32>().unwrap(), big.to_vec::<f32>().unwrap());
        let small_again = tensorbook::keep::restore_tensor("small").unwrap();
        assert_eq!(small_again.to_vec::<i64>().unwrap(), vec![0, 1, 2]);
        assert_eq!(tensorbook::keep::restore_value::<i64>("n").unwrap(), -7);
        assert_eq!(
            tensorbook::keep::restore_value::<String>("name").unwrap(),
            "kept"
        );
        let wrong_type = tensorbook::keep::restore_value::<u8>("n").unwrap_err();
        assert!(
            wrong_type.to_string().contains("kept as i64"),
            "{wrong_type}"
        );
        let plan = restore_code(
            &vault,
            &[var("file", "File", false), var("big", "Tensor", false)],
        );
        assert_eq!(plan.restored, vec!["big (f32[524288] on host:0)"]);
        assert!(plan.lost[0].contains("only tensors"), "{:?}", plan.lost);
        vault.retain(|name| name != "big");
        assert!(tensorbook::keep::restore_tensor("big").is_err());
    }

    #[test]
    fn the_plan_restores_what_is_kept_and_names_the_rest() {
        let vault = Vault::default();
        kept(
            &vault,
            "t",
            Value::Tensor {
                dtype: "f32".into(),
                shape: vec![2, 3],
                device: "host:0".into(),
                len: 6,
                names: Vec::new(),
            },
        );
        kept(&vault, "n", Value::Plain { text: "4".into() });
        kept(
            &vault,
            "f",
            Value::Lost {
                why: "a closure".into(),
            },
        );
        let plan = restore_code(
            &vault,
            &[
                var("t", "Tensor", false),
                var("n", "i32", true),
                var("f", "Box<dyn Fn()>", false),
                var("gone", "u8", false),
            ],
        );
        assert_eq!(
            plan.code,
            "let mut n: i32 = tensorbook::keep::restore_value(\"n\")?;\n\
             let t: Tensor = tensorbook::keep::restore_tensor(\"t\")?;\n"
        );
        assert_eq!(plan.restored, vec!["n (i32)", "t (f32[2][3] on host:0)"]);
        assert_eq!(plan.lost.len(), 2);
        assert!(plan.lost[0].starts_with("f (Box<dyn Fn()>): a closure"));
        assert!(plan.lost[1].starts_with("gone (u8): not kept"));
        vault.retain(|name| name == "t");
        assert_eq!(vault.counts(), (1, 0));
    }
}
