//! The invariants `ARCHITECTURE.md` states about where things may be named and read, checked on
//! the sources of both crates: a change that breaks one fails here with the file and line.

use std::path::{Path, PathBuf};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the kernel crate sits in the workspace")
        .to_path_buf()
}

/// Every `.rs` file under `dir`, with its lines, test modules included.
fn sources(dir: &Path) -> Vec<(PathBuf, Vec<String>)> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(dir) = todo.pop() {
        for entry in std::fs::read_dir(&dir)
            .expect("readable source dir")
            .flatten()
        {
            let path = entry.path();
            if path.is_dir() {
                todo.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let text = std::fs::read_to_string(&path).expect("readable source");
                out.push((path, text.lines().map(str::to_string).collect()));
            }
        }
    }
    out
}

/// Lines of code (not comments) in `files` containing any of `needles`.
fn offending(files: &[(PathBuf, Vec<String>)], needles: &[&str]) -> Vec<String> {
    let mut found = Vec::new();
    for (path, lines) in files {
        for (i, line) in lines.iter().enumerate() {
            let code = line.trim_start();
            if code.starts_with("//") {
                continue;
            }
            if needles.iter().any(|n| code.contains(n)) {
                found.push(format!("{}:{}: {}", path.display(), i + 1, line.trim()));
            }
        }
    }
    found
}

fn all_sources() -> Vec<(PathBuf, Vec<String>)> {
    let repo = repo();
    let mut files = sources(&repo.join("runtime/src"));
    files.extend(sources(&repo.join("runtime/dylib/src")));
    files.extend(sources(&repo.join("kernel/src")));
    files
}

fn outside(files: Vec<(PathBuf, Vec<String>)>, dir: &str) -> Vec<(PathBuf, Vec<String>)> {
    let dir = repo().join(dir);
    files
        .into_iter()
        .filter(|(p, _)| !p.starts_with(&dir))
        .collect()
}

#[test]
fn only_the_contract_names_environment_variables_and_markers() {
    let files = outside(all_sources(), "runtime/src/contract");
    let found = offending(
        &files,
        &[
            "\"TENSORBOOK_",
            "\"EVCXR_",
            "\"JUPYTER_",
            "\"XDG_",
            "\"LD_LIBRARY_PATH",
            "[tensorbook:",
        ],
    );
    assert!(
        found.is_empty(),
        "name these in tensorbook::contract:\n{}",
        found.join("\n")
    );
}

#[test]
fn only_the_contract_reads_or_writes_the_environment() {
    let files = outside(all_sources(), "runtime/src/contract");
    let found = offending(
        &files,
        &[
            "std::env::var(",
            "std::env::var_os(",
            "std::env::vars(",
            "std::env::set_var(",
            "std::env::remove_var(",
            "env::var(",
            "env::var_os(",
        ],
    );
    assert!(
        found.is_empty(),
        "go through tensorbook::contract::env:\n{}",
        found.join("\n")
    );
}

#[test]
fn tensors_ops_and_backends_know_no_environment_and_no_jupyter() {
    let runtime = repo().join("runtime/src");
    let core: Vec<_> = sources(&runtime)
        .into_iter()
        .filter(|(p, _)| {
            let rel = p.strip_prefix(&runtime).expect("under runtime/src");
            rel.starts_with("backend")
                || [
                    "tensor.rs",
                    "ops.rs",
                    "create.rs",
                    "buffer.rs",
                    "memory.rs",
                    "dtype.rs",
                    "shape.rs",
                    "device.rs",
                    "serving.rs",
                ]
                .iter()
                .any(|f| rel == Path::new(f))
        })
        .collect();
    assert!(core.len() > 10, "the runtime's core files were not found");
    let found = offending(
        &core,
        &[
            "contract::env::",
            "env::text(",
            "env::path(",
            "env::set(",
            "notebook::",
            "jupyter",
            "Jupyter",
            "evcxr",
        ],
    );
    assert!(
        found.is_empty(),
        "the runtime's core takes settings from `settings`, and knows no notebook:\n{}",
        found.join("\n")
    );
}

#[test]
fn the_protocol_never_calls_evcxr_and_the_engine_builds_no_jupyter_message() {
    let repo = repo();
    let protocol = sources(&repo.join("kernel/src/protocol"));
    let found = offending(&protocol, &["evcxr::", "use evcxr"]);
    assert!(
        found.is_empty(),
        "the protocol reaches cells through the Engine only:\n{}",
        found.join("\n")
    );
    let engine = sources(&repo.join("kernel/src/engine"));
    let found = offending(
        &engine,
        &[
            "protocol::",
            "wire::",
            "jupyter_protocol",
            "zeromq",
            "msg_type",
        ],
    );
    assert!(
        found.is_empty(),
        "the engine knows no Jupyter message:\n{}",
        found.join("\n")
    );
}

#[test]
fn client_specs_have_one_parser() {
    // Matching on spec text, or parsing devices outside the runtime, is a second parser.
    let files = outside(all_sources(), "runtime/src");
    let found = offending(
        &files,
        &[
            "\"auto\" =>",
            "\"auto\" |",
            "| \"auto\"",
            "Device::parse(",
            "parse::<Device>",
        ],
    );
    assert!(
        found.is_empty(),
        "parse client specs with tensorbook::ClientSpec:\n{}",
        found.join("\n")
    );
}
