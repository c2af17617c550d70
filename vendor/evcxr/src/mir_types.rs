// tensorbook patch (vendor/README.md, patch 8): variable types from the MIR that the cell's own
// rustc run writes.
//
// Upstream asks rust-analyzer for the type of every new variable before the cell compiles. On a
// fresh session that query waits for rust-analyzer to analyse std and every dependency (seconds
// on two cores), and on later cells it still costs tens of milliseconds. The compile that runs
// the cell knows the types anyway: each new variable is stored through a generic call whose type
// rustc infers, next to a `&mut` borrow named `_evcxr_type_NAME`, and `--emit=mir` prints that
// borrow's declaration with the full, visible path of its type (`let _7: &mut
// std::vec::Vec<f32>;` plus `debug _evcxr_type_v => _7;`). What is parsed is pinned by a test
// that runs the real rustc.

use std::collections::HashMap;

/// Prefix of the binding whose declared type names a stored variable's type.
pub(crate) const TYPE_BINDING_PREFIX: &str = "_evcxr_type_";

/// What rustc's MIR says about a variable's type.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum MirType {
    /// A type that later cells can write, as rustc printed it.
    Nameable(String),
    /// A closure (or a type holding one), which no later cell can name.
    Closure(String),
    /// Printed in a form that cannot be written back (a fn item, an opaque `impl Trait`, ...).
    Unnameable(String),
}

/// The types of the `_evcxr_type_NAME` bindings in `mir`, by `NAME`.
pub(crate) fn variable_types(mir: &str) -> HashMap<String, MirType> {
    let mut found = HashMap::new();
    // Locals are numbered per function body, so declarations and debug lines are matched
    // within one body at a time.
    let mut declared: HashMap<&str, &str> = HashMap::new();
    let mut wanted: Vec<(&str, &str)> = Vec::new();
    let mut finish = |declared: &mut HashMap<&str, &str>, wanted: &mut Vec<(&str, &str)>| {
        for (name, local) in wanted.drain(..) {
            if let Some(ty) = declared.get(local) {
                found.insert(name.to_owned(), classify(ty));
            }
        }
        declared.clear();
    };
    for line in mir.lines() {
        if !line.starts_with(' ') && !line.is_empty() {
            finish(&mut declared, &mut wanted);
            continue;
        }
        let line = line.trim();
        if let Some(rest) = line.strip_prefix("debug ") {
            let Some((name, place)) = rest.strip_suffix(';').and_then(|r| r.split_once(" => "))
            else {
                continue;
            };
            if let Some(name) = name.strip_prefix(TYPE_BINDING_PREFIX)
                && is_local(place)
            {
                wanted.push((name, place));
            }
        } else if let Some(rest) = line.strip_prefix("let ") {
            let rest = rest.strip_prefix("mut ").unwrap_or(rest);
            if let Some((local, ty)) = rest.strip_suffix(';').and_then(|r| r.split_once(": "))
                && is_local(local)
            {
                declared.insert(local, ty);
            }
        }
    }
    finish(&mut declared, &mut wanted);
    found
}

/// The standard prelude's types, which MIR prints by full path.
pub(crate) const PRELUDE_TYPES: [(&str, &str); 5] = [
    ("std::option::Option", "Option"),
    ("std::result::Result", "Result"),
    ("std::string::String", "String"),
    ("std::vec::Vec", "Vec"),
    ("std::boxed::Box", "Box"),
];

/// `ty` with each `(path, name)` of `names` written by its name, as rust-analyzer (and a
/// person) would write it: the prelude's types and the session's imports.
pub(crate) fn shorten_paths(ty: &str, names: &[(String, String)]) -> String {
    let mut ty = ty.to_owned();
    for (path, name) in names {
        let mut from = 0;
        while let Some(found) = ty[from..].find(path.as_str()) {
            let start = from + found;
            let end = start + path.len();
            let ident = |c: char| c.is_alphanumeric() || c == '_' || c == ':';
            let starts_path = !ty[..start].ends_with(ident);
            let ends_path = !ty[end..].starts_with(ident);
            if starts_path && ends_path {
                ty.replace_range(start..end, name);
                from = start + name.len();
            } else {
                from = end;
            }
        }
    }
    ty
}

/// The `(path, name)` pairs of `use path;` and `use path as name;` statements.
pub(crate) fn imported_names<'a>(
    uses: impl Iterator<Item = (&'a str, String)>,
) -> Vec<(String, String)> {
    uses.filter_map(|(name, code)| {
        let path = code.trim().strip_prefix("use ")?.strip_suffix(';')?.trim();
        let path = match path.split_once(" as ") {
            Some((path, alias)) if alias.trim() == name => path.trim(),
            Some(_) => return None,
            None if path.rsplit("::").next() == Some(name) => path,
            None => return None,
        };
        let path = path.strip_prefix("::").unwrap_or(path);
        path.contains("::")
            .then(|| (path.to_owned(), name.to_owned()))
    })
    .collect()
}

/// `_12`, a plain local (not a field of a coroutine's state or a constant).
fn is_local(place: &str) -> bool {
    place
        .strip_prefix('_')
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

fn classify(borrow_type: &str) -> MirType {
    let Some(ty) = borrow_type.strip_prefix("&mut ") else {
        return MirType::Unnameable(borrow_type.to_owned());
    };
    let ty = ty.to_owned();
    if ty.contains("{closure@") {
        MirType::Closure(ty)
    } else if ty.contains('{') || ty.contains("impl ") || ty.contains('\'') {
        // `{...}` is how MIR prints fn items, coroutines and constants; rustc prints opaque
        // types as `impl Trait` and named lifetimes only where a type cannot be written with
        // them erased.
        MirType::Unnameable(ty)
    } else {
        MirType::Nameable(ty)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_types_per_function_body() {
        let mir = "\
fn f() -> () {
    let mut _0: ();
    scope 1 {
        let _3: &mut std::vec::Vec<f32>;
        scope 2 {
            debug _evcxr_type_v => _3;
            let mut _4: &mut &str;
            debug _evcxr_type_s => _4;
        }
    }
}

fn g() -> () {
    let _3: &mut {closure@src/lib.rs:3:5: 3:10};
    debug _evcxr_type_c => _3;
    debug _evcxr_type_k => const 5_i32;
    let _5: &mut fn(i32) {std::mem::drop::<i32>};
    debug _evcxr_type_d => _5;
    debug _evcxr_type_x => (((*_1) as variant#3).0: &mut i32);
}
";
        let types = variable_types(mir);
        assert_eq!(
            types.get("v"),
            Some(&MirType::Nameable("std::vec::Vec<f32>".into()))
        );
        assert_eq!(types.get("s"), Some(&MirType::Nameable("&str".into())));
        assert!(matches!(types.get("c"), Some(MirType::Closure(_))));
        assert!(matches!(types.get("d"), Some(MirType::Unnameable(_))));
        assert_eq!(types.get("k"), None);
        assert_eq!(types.get("x"), None);
        assert_eq!(types.len(), 4);
    }

    #[test]
    fn prelude_types_and_imports_read_as_written() {
        let mut names: Vec<(String, String)> = PRELUDE_TYPES
            .iter()
            .filter(|(_, name)| *name != "String")
            .map(|(path, name)| (path.to_string(), name.to_string()))
            .collect();
        names.extend(imported_names(
            [
                ("Jit", "use tensorbook::Jit;".to_owned()),
                ("Map", "use std::collections::HashMap as Map;".to_owned()),
                ("String", "use other::String;".to_owned()),
                ("Bad", "use tensorbook::Jit as Other;".to_owned()),
            ]
            .into_iter(),
        ));
        let ty = "std::option::Option<std::vec::Vec<std::string::String>>";
        assert_eq!(
            shorten_paths(ty, &names),
            "Option<Vec<std::string::String>>"
        );
        assert_eq!(shorten_paths("tensorbook::Jit", &names), "Jit");
        assert_eq!(
            shorten_paths("std::collections::HashMap<u8, other::String>", &names),
            "Map<u8, String>"
        );
        let other = "my::std::vec::Vec<i32>, std::vec::VecDeque<i32>, tensorbook::Jitter";
        assert_eq!(shorten_paths(other, &names), other);
    }

    /// Pins the MIR format against the rustc that builds cells: compiles bindings the way
    /// generated cells write them and reads their types back.
    #[test]
    fn reads_what_the_real_rustc_prints() {
        let dir = tempfile::tempdir().unwrap();
        let source = dir.path().join("lib.rs");
        let mir = dir.path().join("out.mir");
        std::fs::write(
            &source,
            r#"
use std::collections::HashMap;
pub struct Local { pub a: i32 }
pub mod m { pub struct Unit; }
pub fn cell() {
    let _ = std::panic::catch_unwind(move || {
        let a = 1;
        let s = "text";
        let h: HashMap<String, Vec<u8>> = HashMap::new();
        let l = Local { a: 3 };
        let u = m::Unit;
        let c = |x: i32| x + 1;
        let t = (1u8, String::new());
        let r = Ok::<i32, std::io::Error>(1);
        let b: Box<dyn Fn(i32) -> i32> = Box::new(c);
        let mut _evcxr_stored_a = a; let _evcxr_type_a = &mut _evcxr_stored_a;
        let mut _evcxr_stored_s = s; let _evcxr_type_s = &mut _evcxr_stored_s;
        let mut _evcxr_stored_h = h; let _evcxr_type_h = &mut _evcxr_stored_h;
        let mut _evcxr_stored_l = l; let _evcxr_type_l = &mut _evcxr_stored_l;
        let mut _evcxr_stored_u = u; let _evcxr_type_u = &mut _evcxr_stored_u;
        let mut _evcxr_stored_c = c; let _evcxr_type_c = &mut _evcxr_stored_c;
        let mut _evcxr_stored_t = t; let _evcxr_type_t = &mut _evcxr_stored_t;
        let mut _evcxr_stored_r = r; let _evcxr_type_r = &mut _evcxr_stored_r;
        let mut _evcxr_stored_b = b; let _evcxr_type_b = &mut _evcxr_stored_b;
    });
}
"#,
        )
        .unwrap();
        let output = std::process::Command::new("rustc")
            .args(["--edition", "2024", "--crate-type", "lib", "--emit"])
            .arg(format!("mir={}", mir.display()))
            .arg("--out-dir")
            .arg(dir.path())
            .arg(&source)
            .output()
            .unwrap();
        assert!(
            output.status.success(),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
        let types = variable_types(&std::fs::read_to_string(&mir).unwrap());
        let named = |name: &str| match types.get(name) {
            Some(MirType::Nameable(ty)) => ty.clone(),
            other => panic!("{name}: {other:?}"),
        };
        assert_eq!(named("a"), "i32");
        assert_eq!(named("s"), "&str");
        assert_eq!(
            named("h"),
            "std::collections::HashMap<std::string::String, std::vec::Vec<u8>>"
        );
        assert_eq!(named("l"), "Local");
        assert_eq!(named("u"), "m::Unit");
        assert_eq!(named("t"), "(u8, std::string::String)");
        assert_eq!(named("r"), "std::result::Result<i32, std::io::Error>");
        assert_eq!(named("b"), "std::boxed::Box<dyn std::ops::Fn(i32) -> i32>");
        assert!(matches!(types.get("c"), Some(MirType::Closure(_))));
    }
}
