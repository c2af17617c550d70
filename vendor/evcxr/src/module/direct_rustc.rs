// tensorbook patch (vendor/README.md, patch 3): replaying cargo's rustc command for the
// session crate.
//
// A trivial cell spent about as long in cargo (start-up, the lock file, fingerprints of every
// dependency) as in rustc. Between two cells, nothing that cargo decides on changes but
// src/lib.rs, so the rustc command that cargo ran for the session crate last time is run again
// as it was. Whenever something else may have changed (the cargo command or its environment,
// Cargo.toml, .cargo/config.toml, a source file of a path dependency), the cell goes through
// cargo, which records the command anew.

use std::fs;
use std::path::Path;
use std::path::PathBuf;
use std::process::Command;
use std::time::SystemTime;

/// The rustc command cargo ran for the session crate, and what it depended on.
pub(crate) struct RecordedRustc {
    key: String,
    program: PathBuf,
    args: Vec<String>,
    envs: Vec<(String, String)>,
    cwd: PathBuf,
    /// Source files of path dependencies (which cargo would rebuild when they change), with
    /// their modification times when the command was recorded.
    sources: Vec<(PathBuf, Option<SystemTime>)>,
}

/// What the recorded command is only valid for: the cargo command that would run instead (its
/// program, arguments and environment) and the manifests cargo reads.
pub(crate) fn key(cargo: &Command, crate_dir: &Path) -> String {
    let read = |name: &str| fs::read_to_string(crate_dir.join(name)).unwrap_or_default();
    format!(
        "{cargo:?}\n{}\n{}",
        read("Cargo.toml"),
        read(".cargo/config.toml")
    )
}

/// Whether a recording may replace `cargo`: not when a wrapper stands between cargo and rustc
/// (evcxr's cache or sccache) or around cargo (mold), since those would be left out.
pub(crate) fn can_record(cargo: &Command, cargo_path: &Path) -> bool {
    cargo.get_program() == cargo_path.as_os_str()
        && !cargo
            .get_envs()
            .any(|(name, value)| name == "RUSTC_WRAPPER" && value.is_some())
}

impl RecordedRustc {
    /// Reads the command from the stderr of `cargo build -vv`, which prints every command it
    /// runs with the environment it adds, in shell syntax.
    pub(crate) fn from_cargo_stderr(
        stderr: &str,
        crate_name: &str,
        key: String,
        crate_dir: &Path,
    ) -> Option<RecordedRustc> {
        let marker = format!(" --crate-name {crate_name} ");
        let line = stderr
            .lines()
            .rev()
            .map(str::trim)
            .find(|line| line.starts_with("Running `") && line.contains(&marker))?;
        let quoted = line.strip_prefix("Running `")?.strip_suffix('`')?;
        let mut words = shlex::split(quoted)?.into_iter().peekable();
        let mut envs = Vec::new();
        while let Some(word) = words.next_if(|word| is_assignment(word)) {
            let (name, value) = word.split_once('=')?;
            envs.push((name.to_owned(), value.to_owned()));
        }
        let program = PathBuf::from(words.next()?);
        let args: Vec<String> = words.collect();
        let sources = path_dependency_sources(&args, crate_dir)
            .into_iter()
            .map(|path| {
                let modified = modified(&path);
                (path, modified)
            })
            .collect();
        Some(RecordedRustc {
            key,
            program,
            args,
            envs,
            cwd: crate_dir.to_owned(),
            sources,
        })
    }

    /// Whether the command still builds what cargo would build.
    pub(crate) fn is_valid_for(&self, key: &str) -> bool {
        self.key == key
            && self
                .sources
                .iter()
                .all(|(path, then)| modified(path) == *then)
    }

    /// The recorded command, ready to run, with the arguments that `keep` accepts.
    pub(crate) fn command(&self, keep: impl Fn(&str) -> bool) -> Command {
        let mut command = Command::new(&self.program);
        command
            .args(self.args.iter().filter(|arg| keep(arg)))
            .envs(self.envs.iter().map(|(name, value)| (name, value)))
            .current_dir(&self.cwd);
        command
    }
}

fn is_assignment(word: &str) -> bool {
    word.split_once('=').is_some_and(|(name, _)| {
        !name.is_empty()
            && name
                .chars()
                .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
    })
}

fn modified(path: &Path) -> Option<SystemTime> {
    fs::metadata(path).and_then(|m| m.modified()).ok()
}

/// Source files named by the dep-info files (`*.d`) in the command's dependency directories,
/// except files of registry or git packages (never edited in place) and of the session crate
/// itself (its own build outputs included).
fn path_dependency_sources(args: &[String], crate_dir: &Path) -> Vec<PathBuf> {
    let mut sources: Vec<PathBuf> = Vec::new();
    let dependency_dirs = args
        .iter()
        .filter_map(|arg| arg.strip_prefix("dependency="))
        .map(PathBuf::from);
    for dir in dependency_dirs {
        let Ok(entries) = fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.extension().is_none_or(|ext| ext != "d") {
                continue;
            }
            let Ok(text) = fs::read_to_string(&path) else {
                continue;
            };
            sources.extend(
                dep_info_files(&text)
                    .into_iter()
                    .filter(|file| file.is_absolute() && !file.starts_with(crate_dir))
                    .filter(|file| {
                        let text = file.to_string_lossy();
                        !text.contains("/registry/src/") && !text.contains("/git/checkouts/")
                    }),
            );
        }
    }
    sources.sort();
    sources.dedup();
    sources
}

/// The prerequisites in a Makefile-style dep-info file (`target: a b`, spaces in names
/// escaped with a backslash).
fn dep_info_files(text: &str) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for line in text.lines() {
        let Some((_, prerequisites)) = line.split_once(": ") else {
            continue;
        };
        let mut current = String::new();
        let mut chars = prerequisites.chars();
        while let Some(c) = chars.next() {
            match c {
                '\\' => current.extend(chars.next()),
                ' ' => {
                    if !current.is_empty() {
                        files.push(PathBuf::from(std::mem::take(&mut current)));
                    }
                }
                c => current.push(c),
            }
        }
        if !current.is_empty() {
            files.push(PathBuf::from(current));
        }
    }
    files
}

#[cfg(test)]
mod tests {
    use super::*;

    const STDERR: &str = "       Fresh libc v0.2.0
   Compiling ctx v1.0.0 (/s)
     Running `CARGO=/c/cargo CARGO_CRATE_NAME=ctx CARGO_PKG_AUTHORS='' LD_LIBRARY_PATH='/s/target/debug/deps:/t/lib' /t/bin/rustc --crate-name ctx --edition=2024 src/lib.rs --check-cfg 'cfg(docsrs,test)' -L dependency=/nowhere --extern a=/s/x.rlib`
    Finished `dev` profile";

    #[test]
    fn the_command_and_its_environment_are_read_back() {
        let recorded =
            RecordedRustc::from_cargo_stderr(STDERR, "ctx", "k".into(), Path::new("/s")).unwrap();
        assert_eq!(recorded.program, PathBuf::from("/t/bin/rustc"));
        assert_eq!(
            recorded.args,
            [
                "--crate-name",
                "ctx",
                "--edition=2024",
                "src/lib.rs",
                "--check-cfg",
                "cfg(docsrs,test)",
                "-L",
                "dependency=/nowhere",
                "--extern",
                "a=/s/x.rlib"
            ]
        );
        assert!(
            recorded
                .envs
                .contains(&("CARGO_PKG_AUTHORS".into(), String::new()))
        );
        assert!(recorded.envs.contains(&(
            "LD_LIBRARY_PATH".into(),
            "/s/target/debug/deps:/t/lib".into()
        )));
        assert!(recorded.is_valid_for("k"));
        assert!(!recorded.is_valid_for("other"));
        assert!(
            RecordedRustc::from_cargo_stderr(STDERR, "other", "k".into(), Path::new("/s"))
                .is_none()
        );
    }

    #[test]
    fn an_edited_path_dependency_invalidates_the_recording() {
        let dir = tempfile::tempdir().unwrap();
        let deps = dir.path().join("deps");
        fs::create_dir(&deps).unwrap();
        let source = dir.path().join("my lib.rs");
        fs::write(&source, "pub fn a() {}").unwrap();
        let escaped = source.to_string_lossy().replace(' ', "\\ ");
        fs::write(
            deps.join("mylib-1.d"),
            format!(
                "{0}/deps/libmylib-1.rlib: {escaped} /r/registry/src/x/lib.rs\n\n{escaped}:\n",
                dir.path().display()
            ),
        )
        .unwrap();
        let stderr = format!(
            "Running `/t/rustc --crate-name ctx src/lib.rs -L dependency={}`",
            deps.display()
        );
        let recorded =
            RecordedRustc::from_cargo_stderr(&stderr, "ctx", "k".into(), Path::new("/session"))
                .unwrap();
        assert_eq!(recorded.sources.len(), 1, "{:?}", recorded.sources);
        assert!(recorded.is_valid_for("k"));
        let later = SystemTime::now() + std::time::Duration::from_secs(5);
        fs::File::options()
            .write(true)
            .open(&source)
            .unwrap()
            .set_modified(later)
            .unwrap();
        assert!(!recorded.is_valid_for("k"));
    }
}
