//! One build of the runtime shared by every session.
//!
//! evcxr compiles each session in a crate directory of its own, so every new kernel would
//! rebuild the runtime and its dependencies (minutes on a laptop). Instead the first session
//! that finds no finished build publishes its crate directory, target included, as a
//! *template*; later sessions start from a copy of it and cargo finds everything fresh.
//!
//! Layout under the cache root (`TENSORBOOK_CACHE_DIR`, else the user's cache directory):
//!
//! ```text
//! evcxr/.cargo/config.toml     dependencies (the runtime too) always optimised
//! evcxr/template-<key>/        a finished session directory, copied by new sessions, with
//!                              rust-analyzer's project model of it (evcxr patch 29)
//! evcxr/template-<key>.lock    held while one session builds the template
//! evcxr/session-<pid>-<rand>/  one per running kernel, removed when it exits (or, if it was
//!                              killed, by the next kernel: see `leftovers`)
//! ```
//!
//! Templates and sessions are siblings on purpose: cargo hashes a path dependency's location
//! relative to the workspace, so the copy must sit at the same depth to stay fresh. The key
//! covers everything that changes the build (runtime sources, rustc, evcxr, linker, profile),
//! so an edited runtime gets a new template and the old ones are removed.

use std::fs::{self, File};
use std::io;
use std::path::{Path, PathBuf};
use std::process::Command;

use sha2::{Digest, Sha256};

use tensorbook::contract::env;

use super::leftovers::owned_prefix;
use super::private_dir;

/// Profile settings applied to every dependency of a session's crate: the runtime is
/// optimised however cells are built, and debug assertions in it would only slow tensors down.
const DEPENDENCY_PROFILE: &str = "\
# Written by tensorbook: dependencies of notebook cells (the runtime included) are optimised.
[profile.dev.package.\"*\"]
opt-level = 3
debug-assertions = false
overflow-checks = false
";

/// Opt-level for the cells themselves: cells are small and compile time is what a person waits for.
pub const CELL_OPT_LEVEL: &str = "0";

const READY: &str = ".tensorbook-template-ready";

/// Name prefixes of directories owned by one kernel process (see [`super::leftovers`]): its
/// session crate, a template being published, and a private session in the temporary directory.
const SESSION_PREFIX: &str = "session-";
const PARTIAL_PREFIX: &str = ".partial-";
pub const PRIVATE_SESSION_PREFIX: &str = "tensorbook-session-";

/// The cache root: tensorbook's cache directory (`TENSORBOOK_CACHE_DIR`, else the user's),
/// else this user's own one in the temporary directory. Cells link the libraries built here,
/// so [`SessionDir::create`] uses it only when it is this user's and nobody else can write it.
pub fn root() -> PathBuf {
    env::cache_dir().unwrap_or_else(|| {
        std::env::temp_dir().join(format!("tensorbook-cache-{}", private_dir::uid()))
    })
}

/// The linker evcxr should use: lld when it is installed (several times faster than the
/// system linker on the runtime's large dependency graph).
pub fn linker() -> &'static str {
    let found = env::raw(env::SEARCH_PATH)
        .map(|path| std::env::split_paths(&path).any(|dir| dir.join("ld.lld").is_file()))
        .unwrap_or(false);
    if found {
        "lld"
    } else {
        "system"
    }
}

/// The directory holding the toolchain's `libstd-*.so`, which every cell library links to.
///
/// rustc records it in a cell library's RUNPATH relative to `target/<triple>/debug/deps`, but
/// evcxr loads the copy one directory up, so the relative path is one `..` short of right.
/// That only goes unnoticed while the surplus `..` is swallowed at `/`; with the cache under
/// `$HOME` and rustup in `$HOME/.rustup` (the usual set-up) every cell fails to load with
/// "dlopen failed". Naming the directory in the evaluation process's library path fixes it.
pub fn toolchain_library_dir() -> Option<PathBuf> {
    let sysroot = Command::new("rustc")
        .args(["--print", "sysroot"])
        .output()
        .ok()?;
    let sysroot = PathBuf::from(String::from_utf8(sysroot.stdout).ok()?.trim());
    let dir = sysroot
        .join("lib")
        .join("rustlib")
        .join(host_triple()?)
        .join("lib");
    dir.is_dir().then_some(dir)
}

/// `rustc -vV`, asked once per kernel (both the cache key and the library path need it).
fn rustc_version() -> Option<&'static str> {
    static VERSION: std::sync::OnceLock<Option<String>> = std::sync::OnceLock::new();
    VERSION
        .get_or_init(|| {
            let out = Command::new("rustc").arg("-vV").output().ok()?;
            String::from_utf8(out.stdout).ok()
        })
        .as_deref()
}

/// The host's target triple; evcxr builds cells with `--target` set to it.
fn host_triple() -> Option<&'static str> {
    rustc_version()?
        .lines()
        .find_map(|l| l.strip_prefix("host: "))
        .map(str::trim)
}

/// `LD_LIBRARY_PATH` with `front` ahead of what the environment already has.
pub fn library_path_with(front: &[PathBuf]) -> std::ffi::OsString {
    let mut dirs = front.to_vec();
    if let Some(existing) = env::raw(env::LIBRARY_PATH) {
        dirs.extend(std::env::split_paths(&existing).filter(|d| !front.contains(d)));
    }
    std::env::join_paths(dirs).unwrap_or_default()
}

/// A session's crate directory, removed when the kernel exits.
pub struct SessionDir {
    dir: tempfile::TempDir,
    /// The cache's evcxr directory; `None` for a private session that shares nothing.
    evcxr_root: Option<PathBuf>,
    key: String,
}

/// What [`SessionDir::fill`] found.
pub enum Fill {
    /// The session starts from a copy of the finished template.
    FromTemplate,
    /// No template yet: this session builds it and must [`SessionDir::publish`] it; the lock
    /// keeps other sessions waiting for it instead of building the same thing at once.
    Build(File),
    /// A private session: it builds the runtime for itself alone.
    Alone,
}

impl SessionDir {
    /// Creates an empty session directory in the cache ([`root`]).
    pub fn create(key: String) -> io::Result<SessionDir> {
        Self::create_in(root(), key)
    }

    fn create_in(root: PathBuf, key: String) -> io::Result<SessionDir> {
        let evcxr_root = root.join("evcxr");
        // cargo would take the session crate for a stray member of an enclosing workspace.
        if let Some(manifest) = evcxr_root
            .ancestors()
            .map(|dir| dir.join("Cargo.toml"))
            .find(|manifest| manifest.is_file())
        {
            return Err(io::Error::other(format!(
                "the cache lies inside the cargo project {}; set TENSORBOOK_CACHE_DIR elsewhere",
                manifest.display()
            )));
        }
        // Code built here is loaded into the evaluation process: a directory another user
        // made first, or could write, is not used (the session then builds alone).
        for dir in [&root, &evcxr_root] {
            fs::create_dir_all(dir)?;
            private_dir::check_unwritable(dir).map_err(io::Error::other)?;
        }
        fs::create_dir_all(evcxr_root.join(".cargo"))?;
        let config = evcxr_root.join(".cargo").join("config.toml");
        if fs::read_to_string(&config).ok().as_deref() != Some(DEPENDENCY_PROFILE) {
            fs::write(&config, DEPENDENCY_PROFILE)?;
        }
        let dir = tempfile::Builder::new()
            .prefix(&owned_prefix(SESSION_PREFIX))
            .tempdir_in(&evcxr_root)?;
        Ok(SessionDir {
            dir,
            evcxr_root: Some(evcxr_root),
            key,
        })
    }

    /// A session directory in the system's temporary directory, for when the cache cannot be
    /// used: the session builds the runtime itself (minutes) and shares nothing.
    pub fn private() -> io::Result<SessionDir> {
        let dir = tempfile::Builder::new()
            .prefix(&owned_prefix(PRIVATE_SESSION_PREFIX))
            .tempdir()?;
        Ok(SessionDir {
            dir,
            evcxr_root: None,
            key: String::new(),
        })
    }

    /// Whether this session's build is shared through the cache (not a private session's).
    pub fn is_shared(&self) -> bool {
        self.evcxr_root.is_some()
    }

    /// Where the cells' shared libraries and the runtime's (`libtensorbook_dylib.so`) are
    /// built. Cells are loaded from one directory above, so the runtime must be found through
    /// the evaluation process's library path. `debug` because evcxr always builds with cargo's
    /// dev profile (its opt-level is set inside that profile, never by `--release`).
    pub fn library_dir(&self) -> Option<PathBuf> {
        Some(
            self.path()
                .join("target")
                .join(host_triple()?)
                .join("debug")
                .join("deps"),
        )
    }

    /// Removes the session's directory now. The evaluation thread still holds this value when
    /// the kernel exits (its `Drop` would never run), so shutdown calls this explicitly.
    pub fn remove(&self) {
        let _ = fs::remove_dir_all(self.path());
    }

    /// Where evcxr keeps this session's crate.
    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    fn template(evcxr_root: &Path, key: &str) -> PathBuf {
        evcxr_root.join(format!("template-{key}"))
    }

    /// Removes the directories of kernels that are gone, then copies the template in or claims
    /// the right to build it. Blocks while another session builds it.
    pub fn fill(&self) -> io::Result<Fill> {
        let Some(evcxr_root) = &self.evcxr_root else {
            return Ok(Fill::Alone);
        };
        // Here, off the start-up path: removing a dead session's directory takes a while.
        super::leftovers::remove_orphans(evcxr_root, &[SESSION_PREFIX, PARTIAL_PREFIX]);
        let template = Self::template(evcxr_root, &self.key);
        if template.join(READY).exists() {
            copy_tree(&template, self.path())?;
            return Ok(Fill::FromTemplate);
        }
        let lock = File::create(evcxr_root.join(format!("template-{}.lock", self.key)))?;
        lock.lock()?;
        if template.join(READY).exists() {
            drop(lock);
            copy_tree(&template, self.path())?;
            return Ok(Fill::FromTemplate);
        }
        Ok(Fill::Build(lock))
    }

    /// Publishes this session's directory (the runtime just built) as the template, and
    /// removes templates of other keys (older runtimes or toolchains).
    pub fn publish(&self, lock: File) -> io::Result<()> {
        let Some(evcxr_root) = &self.evcxr_root else {
            return Ok(());
        };
        let template = Self::template(evcxr_root, &self.key);
        let partial = evcxr_root.join(format!("{}{}", owned_prefix(PARTIAL_PREFIX), self.key));
        let _ = fs::remove_dir_all(&partial);
        fs::create_dir_all(&partial)?;
        copy_tree(self.path(), &partial)?;
        fs::write(partial.join(READY), &self.key)?;
        let _ = fs::remove_dir_all(&template);
        fs::rename(&partial, &template)?;
        drop(lock);
        if let Ok(entries) = fs::read_dir(evcxr_root) {
            for entry in entries.flatten() {
                let name = entry.file_name().to_string_lossy().into_owned();
                let stale = name.starts_with("template-")
                    && !name.starts_with(&format!("template-{}", self.key));
                if stale {
                    let path = entry.path();
                    let _ = if path.is_dir() {
                        fs::remove_dir_all(path)
                    } else {
                        fs::remove_file(path)
                    };
                }
            }
        }
        Ok(())
    }
}

/// Copies a session's directory tree for another session, keeping modification times: cargo
/// decides freshness by comparing them, and a copy with new times in the wrong order would
/// rebuild everything. The dependencies' compiled libraries (most of the ~330 MB) are
/// hard-linked, not copied: cargo and rustc never rewrite one in place (a rebuild writes a new
/// file under the same name), and `cp -a` of the whole tree was ~0.7 s of a session's start on
/// two cores. Dependencies' incremental caches are left out: they only serve a rebuild of the
/// runtime, which a change of its sources brings with a new template anyway.
fn copy_tree(from: &Path, to: &Path) -> io::Result<()> {
    fs::create_dir_all(to)?;
    for entry in fs::read_dir(from)? {
        let entry = entry?;
        let kind = entry.file_type()?;
        let source = entry.path();
        let target = to.join(entry.file_name());
        if kind.is_dir() {
            if !is_dependency_incremental_cache(&source) {
                copy_tree(&source, &target)?;
            }
        } else if kind.is_symlink() {
            std::os::unix::fs::symlink(fs::read_link(&source)?, &target)?;
        } else if !(is_dependency_library(&source) && fs::hard_link(&source, &target).is_ok()) {
            copy_file(&source, &target)?;
        }
    }
    Ok(())
}

/// `fs::copy` keeps the permissions; the modification time is set from the source's.
fn copy_file(source: &Path, target: &Path) -> io::Result<()> {
    fs::copy(source, target)?;
    let modified = fs::metadata(source)?.modified()?;
    File::options()
        .write(true)
        .open(target)?
        .set_modified(modified)
}

/// A compiled library of a dependency, in cargo's `deps` directory; not the session crate's
/// (`ctx`, rebuilt by every cell) nor a cell's.
fn is_dependency_library(path: &Path) -> bool {
    let in_deps = path
        .parent()
        .and_then(Path::file_name)
        .is_some_and(|dir| dir == "deps");
    let library = path
        .extension()
        .is_some_and(|ext| ext == "rlib" || ext == "rmeta" || ext == "so");
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    in_deps && library && !name.starts_with("libctx") && !name.starts_with("libcode_")
}

/// `target/.../incremental/CRATE-HASH` of any crate but the session crate.
fn is_dependency_incremental_cache(path: &Path) -> bool {
    let in_incremental = path
        .parent()
        .and_then(Path::file_name)
        .is_some_and(|dir| dir == "incremental");
    in_incremental
        && !path
            .file_name()
            .is_some_and(|name| name.to_string_lossy().starts_with("ctx-"))
}

/// The cache key: a hash of everything that changes what cargo builds for a session.
pub fn key(runtime: &Path, prelude: &str) -> String {
    let mut hasher = Sha256::new();
    hasher.update(prelude.as_bytes());
    hasher.update(DEPENDENCY_PROFILE.as_bytes());
    hasher.update(CELL_OPT_LEVEL.as_bytes());
    hasher.update(linker().as_bytes());
    hasher.update(env!("CARGO_PKG_VERSION").as_bytes());
    if let Some(version) = rustc_version() {
        hasher.update(version.as_bytes());
    }
    let mut files = Vec::new();
    collect_files(runtime, &mut files);
    // The runtime's own tests, examples and benchmarks are not part of the library a session
    // builds: an edited test rebuilt the template (five minutes on two cores) for nothing.
    let unbuilt = ["tests", "examples", "benches"].map(|dir| runtime.join(dir));
    files.retain(|file| !unbuilt.iter().any(|dir| file.starts_with(dir)));
    files.sort();
    for file in files {
        hasher.update(file.to_string_lossy().as_bytes());
        if let Ok(bytes) = fs::read(&file) {
            hasher.update(&bytes);
        }
    }
    hex::encode(&hasher.finalize()[..8])
}

fn collect_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name();
        if name == "target" || name.to_string_lossy().starts_with('.') {
            continue;
        }
        if path.is_dir() {
            collect_files(&path, out);
        } else {
            out.push(path);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_copied_session_shares_dependency_libraries_and_keeps_times() {
        use std::os::unix::fs::MetadataExt;
        let from = tempfile::tempdir().unwrap();
        let deps = from.path().join("target/x/debug/deps");
        let incremental = from.path().join("target/x/debug/incremental");
        for dir in [
            deps.clone(),
            incremental.join("tensorbook-1"),
            incremental.join("ctx-1"),
        ] {
            fs::create_dir_all(dir).unwrap();
        }
        let files = [
            deps.join("libgemm-1.rlib"),
            deps.join("libtensorbook_dylib.so"),
            deps.join("libctx.so"),
            deps.join("gemm-1.d"),
            incremental.join("tensorbook-1/query"),
            incremental.join("ctx-1/query"),
            from.path().join("Cargo.toml"),
        ];
        let old = std::time::SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1_000_000);
        for file in &files {
            fs::write(file, "x").unwrap();
            File::options()
                .write(true)
                .open(file)
                .unwrap()
                .set_modified(old)
                .unwrap();
        }
        let to = tempfile::tempdir().unwrap();
        copy_tree(from.path(), to.path()).unwrap();
        let copied = |file: &Path| to.path().join(file.strip_prefix(from.path()).unwrap());
        let inode = |file: &Path| fs::metadata(file).unwrap().ino();
        for shared in &files[..2] {
            assert_eq!(inode(shared), inode(&copied(shared)), "{shared:?}");
        }
        for own in [&files[2], &files[3], &files[5], &files[6]] {
            assert_ne!(inode(own), inode(&copied(own)), "{own:?}");
            assert_eq!(fs::metadata(copied(own)).unwrap().modified().unwrap(), old);
        }
        assert!(!copied(&files[4]).exists());
    }

    #[test]
    fn the_key_changes_with_the_runtime_sources() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("lib.rs"), "pub fn a() {}").unwrap();
        let before = key(dir.path(), "prelude");
        assert_eq!(before, key(dir.path(), "prelude"));
        fs::write(dir.path().join("lib.rs"), "pub fn b() {}").unwrap();
        assert_ne!(before, key(dir.path(), "prelude"));
        assert_ne!(key(dir.path(), "prelude"), key(dir.path(), "other prelude"));
    }

    #[test]
    fn the_key_ignores_the_runtimes_tests_and_examples() {
        let dir = tempfile::tempdir().unwrap();
        fs::create_dir_all(dir.path().join("src")).unwrap();
        fs::create_dir_all(dir.path().join("tests")).unwrap();
        fs::create_dir_all(dir.path().join("examples")).unwrap();
        fs::write(dir.path().join("src/lib.rs"), "pub fn a() {}").unwrap();
        let before = key(dir.path(), "prelude");
        fs::write(dir.path().join("tests/t.rs"), "#[test] fn t() {}").unwrap();
        fs::write(dir.path().join("examples/e.rs"), "fn main() {}").unwrap();
        assert_eq!(before, key(dir.path(), "prelude"));
        fs::write(dir.path().join("src/tests.rs"), "").unwrap();
        assert_ne!(before, key(dir.path(), "prelude"));
    }

    #[test]
    fn the_toolchain_library_dir_holds_libstd() {
        let dir = toolchain_library_dir().expect("rustc is on PATH in tests");
        let has_std = fs::read_dir(&dir).unwrap().flatten().any(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            name.starts_with("libstd-") && name.ends_with(".so")
        });
        assert!(has_std, "no libstd-*.so in {}", dir.display());
        let path = library_path_with(std::slice::from_ref(&dir));
        assert_eq!(std::env::split_paths(&path).next(), Some(dir));
    }

    /// A cache another user could write (or made first) never holds code cells link.
    #[test]
    fn a_cache_others_can_write_is_refused() {
        use std::os::unix::fs::PermissionsExt;
        let base = tempfile::tempdir().unwrap();
        let root = base.path().join("cache");
        fs::create_dir_all(&root).unwrap();
        fs::set_permissions(&root, fs::Permissions::from_mode(0o777)).unwrap();
        let why = SessionDir::create_in(root.clone(), "k".into())
            .err()
            .expect("refused")
            .to_string();
        assert!(why.contains("could write"), "{why}");
        fs::set_permissions(&root, fs::Permissions::from_mode(0o755)).unwrap();
        let session = SessionDir::create_in(root, "k".into()).unwrap();
        assert!(session.path().starts_with(base.path()));
    }

    #[test]
    fn a_cache_inside_a_cargo_project_is_refused() {
        let project = tempfile::tempdir().unwrap();
        fs::write(project.path().join("Cargo.toml"), "[workspace]\n").unwrap();
        // Only this test sets the variable, and the kernel's other tests do not read it.
        env::set(env::CACHE_DIR, project.path().join("cache"));
        let err = SessionDir::create("k".into()).err().expect("refused");
        env::remove(env::CACHE_DIR);
        assert!(
            err.to_string().contains("inside the cargo project"),
            "{err}"
        );
    }
}
