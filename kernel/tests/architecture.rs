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
            ["backend", "ir", "jit", "device", "shape", "ops"]
                .iter()
                .any(|d| rel.starts_with(d))
                || [
                    "allocate.rs",
                    "buffer.rs",
                    "buffer_pool.rs",
                    "client.rs",
                    "create.rs",
                    "display.rs",
                    "dtype.rs",
                    "element.rs",
                    "error.rs",
                    "host_vec.rs",
                    "interrupt.rs",
                    "memory.rs",
                    "nested.rs",
                    "serving.rs",
                    "shared_memory.rs",
                    "special.rs",
                    "tensor.rs",
                ]
                .iter()
                .any(|f| rel == Path::new(f))
        })
        .collect();
    assert!(core.len() > 40, "the runtime's core files were not found");
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

/// The runtime file a module path (`["backend", "cuda", "CudaBuffer"]`) lands in: the longest
/// prefix that is a file.
fn file_of(
    files: &std::collections::BTreeMap<Vec<String>, PathBuf>,
    path: &[String],
) -> Option<PathBuf> {
    (0..=path.len())
        .rev()
        .find_map(|n| files.get(&path[..n]).cloned())
}

/// Inline modules (`mod name { ... }`) of a file: their byte spans and names, so that a
/// `super::` inside one is read from there.
fn inline_modules(code: &str) -> Vec<(usize, usize, String)> {
    let bytes = code.as_bytes();
    let ident = |c: u8| c.is_ascii_alphanumeric() || c == b'_' || c == b'$';
    let mut spans = Vec::new();
    let mut from = 0;
    while let Some(at) = code[from..].find("mod ") {
        let start = from + at;
        from = start + 4;
        if start > 0 && ident(bytes[start - 1]) {
            continue;
        }
        let name: String = code[from..]
            .chars()
            .take_while(|&c| c.is_ascii_alphanumeric() || c == '_' || c == '$')
            .collect();
        let after = code[from + name.len()..].trim_start();
        if name.is_empty() || !after.starts_with('{') {
            continue;
        }
        let open = code.len() - after.len();
        let mut depth = 0usize;
        let mut end = code.len();
        for (i, &c) in bytes.iter().enumerate().skip(open) {
            match c {
                b'{' => depth += 1,
                b'}' => {
                    depth = depth.saturating_sub(1);
                    if depth == 0 {
                        end = i;
                        break;
                    }
                }
                _ => {}
            }
        }
        spans.push((open, end, name));
    }
    spans
}

/// The paths of one `use` tree or inline path after its head: `a::b`, `a::{b, c::d}`.
fn expand(tree: &str) -> Vec<Vec<String>> {
    let tree = tree.trim();
    let (prefix, group) = match tree.find('{') {
        Some(open) => (
            &tree[..open],
            Some(&tree[open + 1..tree.rfind('}').unwrap_or(tree.len())]),
        ),
        None => (tree, None),
    };
    let prefix: Vec<String> = prefix
        .split("::")
        .map(|s| s.split(" as ").next().unwrap_or("").trim())
        .filter(|s| !s.is_empty() && *s != "*")
        .map(str::to_string)
        .collect();
    let Some(group) = group else {
        return vec![prefix];
    };
    let mut items = Vec::new();
    let (mut depth, mut last) = (0usize, 0usize);
    for (i, c) in group.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                items.push(&group[last..i]);
                last = i + 1;
            }
            _ => {}
        }
    }
    items.push(&group[last..]);
    // A group names its items; the prefix itself only when the group holds `self`.
    let mut out = Vec::new();
    if items.iter().any(|i| i.trim() == "self") {
        out.push(prefix.clone());
    }
    for item in items
        .into_iter()
        .filter(|i| !i.trim().is_empty() && i.trim() != "self")
    {
        for tail in expand(item) {
            let mut p = prefix.clone();
            p.extend(tail);
            out.push(p);
        }
    }
    out
}

/// Paths written `crate::a::b`, `super::a`, `self::a` or `child::a` through a module the file
/// declares (groups included) in the code (not comments) of one file, as module paths from the
/// crate root. Declaring a child module is not an import; using or re-exporting its items is.
fn paths_in(module: &[String], text: &str) -> Vec<Vec<String>> {
    let code: String = text
        .lines()
        .map(|l| match l.find("//") {
            Some(i) => &l[..i],
            None => l,
        })
        .collect::<Vec<_>>()
        .join("\n");
    let spans = inline_modules(&code);
    let ident = |c: u8| c.is_ascii_alphanumeric() || c == b'_';
    let bytes = code.as_bytes();
    let mut out = Vec::new();
    let children: Vec<String> = code
        .split(';')
        .filter_map(|s| {
            let s = s.trim_end();
            let at = s.rfind("mod ")?;
            let name = &s[at + 4..];
            (!name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'))
                .then(|| format!("{name}::"))
        })
        .collect();
    let mut heads: Vec<String> = vec!["crate::".into(), "super::".into(), "self::".into()];
    heads.extend(children);
    for head in heads.iter().map(String::as_str) {
        let mut from = 0;
        while let Some(at) = code[from..].find(head) {
            let start = from + at;
            from = start + head.len();
            if start > 0 && (ident(bytes[start - 1]) || bytes[start - 1] == b':') {
                continue;
            }
            // The module the path is written in: the file's, and any inline module around it.
            let mut here = module.to_vec();
            here.extend(
                spans
                    .iter()
                    .filter(|(s, e, _)| *s < start && start < *e)
                    .map(|(_, _, n)| n.clone()),
            );
            let mut tree = String::new();
            let mut depth = 0usize;
            for c in code[from..].chars() {
                match c {
                    '{' => depth += 1,
                    '}' if depth == 0 => break,
                    '}' => depth -= 1,
                    c if depth == 0
                        && !(c.is_ascii_alphanumeric() || c == '_' || c == ':' || c == '*') =>
                    {
                        break
                    }
                    _ => {}
                }
                tree.push(c);
                if c == '}' && depth == 0 {
                    break;
                }
            }
            for tail in expand(&tree) {
                let mut path = match head {
                    "crate::" => Vec::new(),
                    "super::" => here[..here.len().saturating_sub(1)].to_vec(),
                    "self::" => here.clone(),
                    child => {
                        let mut p = here.clone();
                        p.push(child.trim_end_matches("::").to_string());
                        p
                    }
                };
                for seg in tail {
                    if seg == "super" {
                        path.pop();
                    } else {
                        path.push(seg);
                    }
                }
                out.push(path);
            }
        }
    }
    out
}

/// The import graph of the runtime's files: an edge for every path from one file into another.
fn runtime_import_graph() -> std::collections::BTreeMap<PathBuf, std::collections::BTreeSet<PathBuf>>
{
    let root = repo().join("runtime/src");
    let mut files = std::collections::BTreeMap::new();
    let sources = sources(&root);
    for (path, _) in &sources {
        let rel = path.strip_prefix(&root).expect("under runtime/src");
        let mut module: Vec<String> = rel
            .with_extension("")
            .iter()
            .map(|s| s.to_string_lossy().into_owned())
            .collect();
        if module.last().is_some_and(|m| m == "mod" || m == "lib") {
            module.pop();
        }
        files.insert(module, rel.to_path_buf());
    }
    let mut graph = std::collections::BTreeMap::new();
    for (module, rel) in &files {
        let text = std::fs::read_to_string(root.join(rel)).expect("readable source");
        // Unit tests may reach anywhere; the rule is about the code they test.
        let text = match text.find("mod tests {") {
            Some(at) => &text[..at],
            None => &text[..],
        };
        let targets = paths_in(module, text)
            .iter()
            .filter_map(|p| file_of(&files, p))
            .filter(|t| t != rel)
            .collect();
        graph.insert(rel.clone(), targets);
    }
    graph
}

#[test]
fn the_runtime_has_no_import_circle() {
    let graph = runtime_import_graph();
    assert!(graph.len() > 40, "the runtime's files were not found");
    // Depth-first search with colours: a grey node reached again closes a circle.
    #[derive(Clone, Copy, PartialEq)]
    enum Colour {
        White,
        Grey,
        Black,
    }
    let mut colour: std::collections::BTreeMap<&PathBuf, Colour> =
        graph.keys().map(|k| (k, Colour::White)).collect();
    let mut circles = Vec::new();
    for start in graph.keys() {
        if colour[start] != Colour::White {
            continue;
        }
        let mut stack: Vec<(&PathBuf, Vec<&PathBuf>)> =
            vec![(start, graph[start].iter().collect())];
        colour.insert(start, Colour::Grey);
        while let Some((node, todo)) = stack.last_mut() {
            let node = *node;
            match todo.pop() {
                Some(next) => match colour.get(next).copied() {
                    Some(Colour::White) => {
                        colour.insert(next, Colour::Grey);
                        stack.push((next, graph[next].iter().collect()));
                    }
                    Some(Colour::Grey) => {
                        let from = stack.iter().position(|(n, _)| *n == next).unwrap_or(0);
                        let circle: Vec<String> = stack[from..]
                            .iter()
                            .map(|(n, _)| n.display().to_string())
                            .chain([next.display().to_string()])
                            .collect();
                        circles.push(circle.join(" -> "));
                    }
                    _ => {}
                },
                None => {
                    colour.insert(node, Colour::Black);
                    stack.pop();
                }
            }
        }
    }
    assert!(
        circles.is_empty(),
        "the runtime's files import in a circle (`crate::`, `super::`, `self::` or child paths):\n{}",
        circles.join("\n")
    );
}

#[test]
fn the_import_check_sees_a_circle() {
    // The check above is only worth something if it can fail: two files naming each other.
    let a = paths_in(
        &["jit".into(), "trace".into()],
        "use crate::tensor::Tensor;",
    );
    let b = paths_in(
        &["tensor".into()],
        "fn f() { crate::jit::trace::record(); }",
    );
    assert_eq!(a, vec![vec!["tensor".to_string(), "Tensor".to_string()]]);
    assert_eq!(b[0][..2], ["jit".to_string(), "trace".to_string()]);
    let group = paths_in(
        &["jit".into(), "fuse".into()],
        "use super::{graph::Node, program};",
    );
    assert!(group.contains(&vec![
        "jit".to_string(),
        "graph".to_string(),
        "Node".to_string()
    ]));
    assert!(group.contains(&vec!["jit".to_string(), "program".to_string()]));
    let inline = paths_in(&["a".into()], "mod inner { use super::b; }");
    assert_eq!(inline, vec![vec!["a".to_string(), "b".to_string()]]);
    let child = paths_in(&["ir".into()], "pub mod fused;\npub use fused::Fused;");
    assert_eq!(
        child,
        vec![vec![
            "ir".to_string(),
            "fused".to_string(),
            "Fused".to_string()
        ]]
    );
}

#[test]
fn a_backend_never_sees_another_backends_memory() {
    let backend = repo().join("runtime/src/backend");
    let files = sources(&backend);
    assert!(files.len() > 10, "the backends were not found");
    // The enum of every kind of memory, tensors and traces are above the backends.
    let found = offending(
        &files,
        &[
            "crate::memory",
            "Memory::",
            "crate::tensor",
            "Tensor",
            "crate::jit",
            "Placeholder",
        ],
    );
    assert!(
        found.is_empty(),
        "a backend is typed on its own buffer and knows no memory enum, tensor or trace:\n{}",
        found.join("\n")
    );
    // And no backend names another's buffer type.
    for (owner, buffer) in [("cuda", "CudaBuffer"), ("sim.rs", "SimBuffer")] {
        let others: Vec<_> = files
            .iter()
            .filter(|(p, _)| !p.starts_with(backend.join(owner)))
            .cloned()
            .collect();
        let found = offending(&others, &[buffer]);
        assert!(
            found.is_empty(),
            "{buffer} is named outside its backend:\n{}",
            found.join("\n")
        );
    }
}

#[test]
fn the_runtime_is_a_facade_and_its_test_hooks_need_a_feature() {
    let lib = std::fs::read_to_string(repo().join("runtime/src/lib.rs")).expect("lib.rs");
    let lines: Vec<&str> = lib.lines().map(str::trim).collect();
    // The faces towards the kernel and the cells, and the tools; everything else is reached
    // through the re-exports at the root.
    let public = [
        "bench",
        "cell_runtime",
        "contract",
        "data",
        "keep",
        // A namespace as Axon's `Axon.MixedPrecision` (`mixed_precision::Policy::bf16()`).
        "mixed_precision",
        "notebook",
        "prelude",
        // A namespace cells name as Nx's `Nx.Random` (`random::key(1)`), not a layer.
        "random",
        "testing",
        "widgets",
    ];
    for (i, line) in lines.iter().enumerate() {
        if let Some(name) = line.strip_prefix("pub mod ") {
            let name = name.trim_end_matches(';');
            assert!(
                public.contains(&name),
                "lib.rs:{}: `pub mod {name}`: runtime modules are private; re-export what users name",
                i + 1
            );
            if name == "testing" {
                assert_eq!(
                    lines.get(i.wrapping_sub(1)).copied(),
                    Some("#[cfg(feature = \"test-hooks\")]"),
                    "the test hooks are only built with the `test-hooks` feature"
                );
            }
        }
    }
    assert!(
        lines.iter().filter(|l| l.starts_with("mod ")).count() > 20,
        "the runtime's modules were not found private in lib.rs"
    );
}
