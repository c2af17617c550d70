// Copyright 2026 The tensorbook Authors.
//
// Licensed under the Apache License, Version 2.0 <LICENSE or
// https://www.apache.org/licenses/LICENSE-2.0> or the MIT license <LICENSE
// or https://opensource.org/licenses/MIT>, at your option.

//! tensorbook patch 29: the project model of a session crate, kept beside it.
//!
//! `ProjectWorkspace::load` asks about fifteen cargo and rustc processes (the sysroot, the
//! workspace root, cargo's config, the target, the toolchain version, `cargo metadata` of the
//! crate and of the standard library, rustc's cfg and data layout), eight of them one after
//! another; in a fresh session that is 0.4-0.9 s before the crate graph exists, and a session's
//! first completion waits for all of it. Their answers depend only on the crate's manifest and
//! lock file and on the toolchain, so a crate directory that is copied for every session (a
//! template) can carry them: [`save`] writes them once, after checking that they rebuild
//! exactly the workspace rust-analyzer loaded itself, and [`load`] rebuilds that workspace
//! in a copy of the directory without starting a process.

use super::cargo_config;
use anyhow::Context;
use anyhow::Result;
use anyhow::anyhow;
use anyhow::bail;
use ra_ap_base_db::Env;
use ra_ap_base_db::target::Arch;
use ra_ap_base_db::target::TargetData;
use ra_ap_cfg::CfgAtom;
use ra_ap_intern::Symbol;
use ra_ap_paths::AbsPath;
use ra_ap_paths::AbsPathBuf;
use ra_ap_project_model::CargoWorkspace;
use ra_ap_project_model::ManifestPath;
use ra_ap_project_model::Metadata;
use ra_ap_project_model::ProjectManifest;
use ra_ap_project_model::ProjectWorkspace;
use ra_ap_project_model::ProjectWorkspaceKind;
use ra_ap_project_model::RustLibSrcWorkspace;
use ra_ap_project_model::Sysroot;
use serde::Deserialize;
use serde::Serialize;
use serde_json::Value;
use std::process::Command;

/// The file, in the crate's directory.
pub(crate) const FILE: &str = "evcxr-project-model.json";

/// Bumped whenever what is saved, or how it is read back, changes.
const FORMAT: u32 = 1;

#[derive(Serialize, Deserialize)]
struct Saved {
    format: u32,
    /// The crate directory the model was made in. Paths under it name the crate's own files
    /// (its manifest, its sources, its target directory) and are moved to the loading one.
    root: String,
    /// The manifest and lock file it was made from: a model is used only for the same text.
    cargo_toml: String,
    cargo_lock: String,
    /// `cargo locate-project --workspace`.
    workspace_manifest: String,
    /// `cargo metadata` of the crate.
    metadata: Value,
    /// The environment cargo's configuration sets for builds (`[env]`).
    cargo_env: Vec<(String, String)>,
    sysroot: Option<String>,
    sysroot_src: Option<String>,
    /// `cargo metadata` of the standard library, its `rustc-std-workspace-*` stand-ins
    /// replaced by the crates they stand for, as rust-analyzer does.
    sysroot_metadata: Option<Value>,
    /// `rustc --print cfg`: a flag, or a key and its value.
    rustc_cfg: Vec<(String, Option<String>)>,
    toolchain: Option<String>,
    /// The data layout and whether the target is wasm32 / wasm64, or why it is unknown.
    target: std::result::Result<(String, String), String>,
}

/// Writes the model of the crate in `root` beside it, if what [`load`] would rebuild from it is
/// the workspace rust-analyzer loads itself. Says whether it was written, and if not, why.
pub(crate) fn save(root: &AbsPath) -> Result<std::result::Result<(), String>> {
    let config = cargo_config(true);
    let manifest = ProjectManifest::from_manifest_file(root.join("Cargo.toml"))?;
    let loaded = ProjectWorkspace::load(manifest, &config, &|_| {})?;
    let ProjectWorkspaceKind::Cargo { cargo, error, .. } = &loaded.kind else {
        return Ok(Err("not a cargo workspace".into()));
    };
    if error.is_some() || loaded.sysroot.error().is_some() {
        return Ok(Err(format!(
            "rust-analyzer's load reported an error: {:?} {:?}",
            error,
            loaded.sysroot.error()
        )));
    }
    let target_triple = host_triple(&loaded)?;
    let workspace_manifest = cargo.manifest_path().to_string();
    let metadata = cargo_metadata(
        &loaded,
        cargo.workspace_root(),
        &workspace_manifest,
        &target_triple,
        false,
    )?;
    let sysroot_metadata = match loaded.sysroot.rust_lib_src_root() {
        Some(src) => {
            let manifest = src.join("Cargo.toml");
            let mut metadata =
                cargo_metadata(&loaded, src, manifest.as_str(), &target_triple, true)?;
            without_std_workspace_stand_ins(&mut metadata)?;
            Some(metadata)
        }
        None => None,
    };
    let saved = Saved {
        format: FORMAT,
        root: root.to_string(),
        cargo_toml: read_text(&root.join("Cargo.toml"))?,
        cargo_lock: read_text(&root.join("Cargo.lock"))?,
        workspace_manifest,
        metadata,
        cargo_env: cargo
            .env()
            .into_iter()
            .map(|(key, value)| (key.clone(), value.clone()))
            .collect(),
        sysroot: loaded.sysroot.root().map(ToString::to_string),
        sysroot_src: loaded.sysroot.rust_lib_src_root().map(ToString::to_string),
        sysroot_metadata,
        rustc_cfg: loaded
            .rustc_cfg
            .iter()
            .map(|atom| match atom {
                CfgAtom::Flag(flag) => (flag.as_str().to_owned(), None),
                CfgAtom::KeyValue { key, value } => {
                    (key.as_str().to_owned(), Some(value.as_str().to_owned()))
                }
            })
            .collect(),
        toolchain: loaded.toolchain.as_ref().map(ToString::to_string),
        target: match &loaded.target {
            Ok(data) => Ok((
                data.data_layout.to_string(),
                arch_name(data.arch).to_owned(),
            )),
            Err(e) => Err(e.to_string()),
        },
    };
    let text = serde_json::to_string(&saved)?;
    let rebuilt = rebuild(&text, root).context("reading back the model just made")?;
    if !rebuilt.eq_ignore_build_data(&loaded) || rebuilt.to_roots() != loaded.to_roots() {
        return Ok(Err(
            "the saved model does not rebuild the workspace rust-analyzer loaded".into(),
        ));
    }
    let file = root.join(FILE);
    let partial = root.join(format!("{FILE}.partial"));
    std::fs::write(&partial, text).with_context(|| format!("writing {partial}"))?;
    std::fs::rename(&partial, &file).with_context(|| format!("writing {file}"))?;
    Ok(Ok(()))
}

/// The workspace of the crate in `root` from the model saved beside it, without starting a
/// process; `None` where there is none, or it was made for another manifest or lock file, or
/// the standard library it names is gone.
pub(crate) fn load(root: &AbsPath) -> Option<ProjectWorkspace> {
    let text = std::fs::read_to_string(root.join(FILE)).ok()?;
    // The file lies in the session's directory, which a cell can write: rust-analyzer's
    // constructors assert what cargo guarantees (absolute paths, known ids), and a damaged
    // model must cost only the processes it saves.
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| rebuild(&text, root)))
        .ok()?
        .ok()
}

fn rebuild(text: &str, root: &AbsPath) -> Result<ProjectWorkspace> {
    let mut saved: Saved = serde_json::from_str(text)?;
    if saved.format != FORMAT {
        bail!("format {} (this evcxr reads {FORMAT})", saved.format);
    }
    if read_text(&root.join("Cargo.toml"))? != saved.cargo_toml
        || read_text(&root.join("Cargo.lock"))? != saved.cargo_lock
    {
        bail!("made for another Cargo.toml or Cargo.lock");
    }
    let new_root = root.as_str();
    // Cargo writes a path into a package id as a file URL: only where that is the path itself
    // does moving the paths move the ids with them.
    if !plain_path(&saved.root) || !plain_path(new_root) {
        bail!("a crate directory with characters a URL escapes");
    }
    let mut move_path = |text: &mut String| {
        if text.contains(saved.root.as_str()) {
            *text = text.replace(saved.root.as_str(), new_root);
        }
    };
    move_path(&mut saved.workspace_manifest);
    move_paths(&mut saved.metadata, &mut move_path);

    let absolute = |path: String| {
        AbsPathBuf::try_from(path.as_str()).map_err(|path| anyhow!("not absolute: {path}"))
    };
    let manifest = |path: AbsPathBuf| {
        ManifestPath::try_from(path).map_err(|path| anyhow!("not a manifest: {path}"))
    };

    let metadata: Metadata = serde_json::from_value(saved.metadata)?;
    let cargo_env: Env = saved.cargo_env.into_iter().collect();
    let cargo = CargoWorkspace::new(
        metadata,
        manifest(absolute(saved.workspace_manifest)?)?,
        cargo_env,
        false,
    );

    let sysroot_src = saved.sysroot_src.map(absolute).transpose()?;
    if let Some(src) = &sysroot_src
        && !std::fs::exists(src.join("Cargo.toml")).unwrap_or(false)
    {
        bail!("the standard library's sources at {src} are gone");
    }
    let mut sysroot = Sysroot::new(
        saved.sysroot.map(absolute).transpose()?,
        sysroot_src.clone(),
    );
    if let (Some(src), Some(metadata)) = (sysroot_src, saved.sysroot_metadata) {
        let metadata: Metadata = serde_json::from_value(metadata)?;
        sysroot.set_workspace(RustLibSrcWorkspace::Workspace {
            ws: CargoWorkspace::new(
                metadata,
                manifest(src.join("Cargo.toml"))?,
                Env::default(),
                true,
            ),
            metadata_err: None,
        });
    }

    let config = cargo_config(true);
    Ok(ProjectWorkspace {
        kind: ProjectWorkspaceKind::Cargo {
            cargo,
            error: None,
            build_scripts: Default::default(),
            rustc: Err(None),
        },
        sysroot,
        rustc_cfg: saved
            .rustc_cfg
            .iter()
            .map(|(key, value)| match value {
                None => CfgAtom::Flag(Symbol::intern(key)),
                Some(value) => CfgAtom::KeyValue {
                    key: Symbol::intern(key),
                    value: Symbol::intern(value),
                },
            })
            .collect(),
        toolchain: match saved.toolchain {
            Some(version) => Some(version.parse()?),
            None => None,
        },
        target: match saved.target {
            Ok((data_layout, arch)) => Ok(TargetData {
                data_layout: data_layout.into(),
                arch: arch_from_name(&arch)?,
            }),
            Err(e) => Err(e.into()),
        },
        cfg_overrides: config.cfg_overrides.clone(),
        extra_includes: config.extra_includes.clone(),
        set_test: config.set_test,
    })
}

/// Absolute paths of printable ASCII that a file URL spells as they are.
fn plain_path(path: &str) -> bool {
    path.starts_with('/')
        && path
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"/._-+~".contains(&b))
}

fn move_paths(value: &mut Value, move_path: &mut impl FnMut(&mut String)) {
    match value {
        Value::String(text) => move_path(text),
        Value::Array(items) => items
            .iter_mut()
            .for_each(|item| move_paths(item, move_path)),
        Value::Object(fields) => fields
            .values_mut()
            .for_each(|field| move_paths(field, move_path)),
        _ => {}
    }
}

fn read_text(path: &AbsPath) -> Result<String> {
    match std::fs::read_to_string(path) {
        Ok(text) => Ok(text),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(String::new()),
        Err(e) => Err(e).with_context(|| format!("reading {path}")),
    }
}

fn arch_name(arch: Arch) -> &'static str {
    match arch {
        Arch::Wasm32 => "wasm32",
        Arch::Wasm64 => "wasm64",
        Arch::Other => "other",
    }
}

fn arch_from_name(name: &str) -> Result<Arch> {
    match name {
        "wasm32" => Ok(Arch::Wasm32),
        "wasm64" => Ok(Arch::Wasm64),
        "other" => Ok(Arch::Other),
        _ => bail!("unknown architecture {name}"),
    }
}

/// The target `cargo metadata` filters platform-specific dependencies for, as rust-analyzer
/// asks it (the host's, where nothing configures another).
fn host_triple(loaded: &ProjectWorkspace) -> Result<String> {
    use ra_ap_project_model::toolchain_info::QueryConfig;
    use ra_ap_project_model::toolchain_info::target_tuple;
    let ProjectWorkspaceKind::Cargo { cargo, .. } = &loaded.kind else {
        bail!("not a cargo workspace");
    };
    let targets = target_tuple::get(
        QueryConfig::Cargo(&loaded.sysroot, cargo.manifest_path(), &None),
        None,
        &Default::default(),
    )?;
    match targets.as_slice() {
        [target] => Ok(target.clone()),
        _ => bail!("{} targets configured", targets.len()),
    }
}

/// `cargo metadata`, with the options rust-analyzer gives it, run where it runs it; never
/// writing the lock file or going to the network.
fn cargo_metadata(
    loaded: &ProjectWorkspace,
    current_dir: &AbsPath,
    manifest: &str,
    target: &str,
    sysroot: bool,
) -> Result<Value> {
    let mut command = Command::new("cargo");
    command
        .current_dir(current_dir)
        .args(["metadata", "--format-version", "1", "--locked", "--offline"])
        .args(["--manifest-path", manifest, "--filter-platform", target]);
    if let Some(root) = loaded.sysroot.root()
        && std::env::var_os("RUSTUP_TOOLCHAIN").is_none()
    {
        command.env("RUSTUP_TOOLCHAIN", root.as_str());
    }
    if sysroot {
        // The standard library's manifest uses `public-dependency`, which cargo accepts only
        // on a nightly toolchain (rust-analyzer passes the same).
        command.env("__CARGO_TEST_CHANNEL_OVERRIDE_DO_NOT_USE_THIS", "nightly");
    }
    let output = command
        .output()
        .with_context(|| format!("running {command:?}"))?;
    if !output.status.success() {
        bail!(
            "{command:?} failed: {}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
    let stdout = String::from_utf8(output.stdout)?;
    let json = stdout
        .lines()
        .find(|line| line.starts_with('{'))
        .context("cargo metadata printed no JSON")?;
    Ok(serde_json::from_str(json)?)
}

/// The standard library's workspace names `core`, `alloc` and `std` through the stand-in
/// packages `rustc-std-workspace-*`; rust-analyzer points every dependency on a stand-in at the
/// real crate and drops the stand-ins before building its crate graph.
fn without_std_workspace_stand_ins(metadata: &mut Value) -> Result<()> {
    const PREFIX: &str = "rustc-std-workspace-";
    let packages = metadata
        .get("packages")
        .and_then(Value::as_array)
        .context("no packages")?;
    let id_of = |name: &str| {
        packages
            .iter()
            .find(|package| package.get("name").and_then(Value::as_str) == Some(name))
            .and_then(|package| package.get("id").and_then(Value::as_str))
            .map(str::to_owned)
    };
    // stand-in id -> real id
    let mut real_of = Vec::new();
    for name in ["core", "alloc", "std"] {
        if let (Some(stand_in), Some(real)) = (id_of(&format!("{PREFIX}{name}")), id_of(name)) {
            real_of.push((stand_in, real));
        }
    }
    let is_stand_in =
        |id: Option<&str>| id.is_some_and(|id| real_of.iter().any(|(stand_in, _)| stand_in == id));
    if let Some(nodes) = metadata
        .get_mut("resolve")
        .and_then(|resolve| resolve.get_mut("nodes"))
        .and_then(Value::as_array_mut)
    {
        nodes.retain(|node| !is_stand_in(node.get("id").and_then(Value::as_str)));
        for node in nodes.iter_mut() {
            let Some(deps) = node.get_mut("deps").and_then(Value::as_array_mut) else {
                continue;
            };
            for dep in deps {
                let Some(pkg) = dep.get_mut("pkg") else {
                    continue;
                };
                if let Some((_, real)) = real_of
                    .iter()
                    .find(|(stand_in, _)| Some(stand_in.as_str()) == pkg.as_str())
                {
                    *pkg = Value::String(real.clone());
                }
            }
        }
    }
    if let Some(packages) = metadata.get_mut("packages").and_then(Value::as_array_mut) {
        packages.retain(|package| !is_stand_in(package.get("id").and_then(Value::as_str)));
    }
    Ok(())
}

#[cfg(test)]
mod test {
    use super::*;

    fn write(path: &std::path::Path, text: &str) -> Result<()> {
        std::fs::create_dir_all(path.parent().context("no parent")?)?;
        Ok(std::fs::write(path, text)?)
    }

    fn absolute(path: &std::path::Path) -> AbsPathBuf {
        AbsPathBuf::try_from(path.to_str().unwrap()).unwrap()
    }

    /// The model saved in one crate directory, read in a copy of it at another path, is the
    /// workspace rust-analyzer loads there itself (with the standard library and a path
    /// dependency); a changed manifest or a damaged file is not served from it.
    #[test]
    fn a_copy_of_the_crate_loads_the_saved_model_as_rust_analyzer_loads_it() -> Result<()> {
        let tmpdir = tempfile::tempdir()?;
        let dir = tmpdir.path();
        write(
            &dir.join("dep/Cargo.toml"),
            "[package]\nname = \"dep\"\nversion = \"0.1.0\"\nedition = \"2024\"\n",
        )?;
        write(&dir.join("dep/src/lib.rs"), "pub struct Dep;")?;
        let manifest = "[package]\nname = \"ctx\"\nversion = \"1.0.0\"\nedition = \"2024\"\n\n\
                        [dependencies]\ndep = { path = \"../dep\" }\n";
        write(&dir.join("made/Cargo.toml"), manifest)?;
        write(&dir.join("made/src/lib.rs"), "")?;
        let status = Command::new("cargo")
            .args(["generate-lockfile", "--offline"])
            .current_dir(dir.join("made"))
            .status()?;
        assert!(status.success());

        match save(&absolute(&dir.join("made")))? {
            Ok(()) => {}
            // Without the toolchain's `rust-src` rust-analyzer itself loads no `core`.
            Err(why) if why.contains("missing a `core`") => {
                eprintln!("skipped: no rust-src in this toolchain ({why})");
                return Ok(());
            }
            Err(why) => panic!("not saved: {why}"),
        }

        let copy = dir.join("copy");
        for file in ["Cargo.toml", "Cargo.lock", "src/lib.rs", FILE] {
            write(
                &copy.join(file),
                &std::fs::read_to_string(dir.join("made").join(file))?,
            )?;
        }
        let copy = absolute(&copy);
        let cached = load(&copy).expect("the copy loads the saved model");
        let fresh = ProjectWorkspace::load(
            ProjectManifest::from_manifest_file(copy.join("Cargo.toml"))?,
            &cargo_config(true),
            &|_| {},
        )?;
        assert!(cached.eq_ignore_build_data(&fresh));
        assert_eq!(cached.to_roots(), fresh.to_roots());
        let ProjectWorkspaceKind::Cargo { cargo, .. } = &cached.kind else {
            panic!("not a cargo workspace");
        };
        assert_eq!(cargo.workspace_root(), &*copy);

        std::fs::write(copy.join("Cargo.toml"), format!("{manifest}\n# changed\n"))?;
        assert!(load(&copy).is_none(), "served for another Cargo.toml");
        std::fs::write(copy.join("Cargo.toml"), manifest)?;
        assert!(load(&copy).is_some());
        let saved = std::fs::read_to_string(copy.join(FILE))?;
        std::fs::write(copy.join(FILE), &saved[..saved.len() / 2])?;
        assert!(load(&copy).is_none(), "served from a truncated file");
        // Valid JSON that lies: relative paths, which rust-analyzer's constructors assert on.
        let mut lying: Value = serde_json::from_str(&saved)?;
        lying["metadata"]["workspace_root"] = Value::String("relative/path".into());
        std::fs::write(copy.join(FILE), serde_json::to_string(&lying)?)?;
        assert!(load(&copy).is_none(), "served from a lying file");
        Ok(())
    }
}
