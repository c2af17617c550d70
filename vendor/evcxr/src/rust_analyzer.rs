// Copyright 2020 The Evcxr Authors.
//
// Licensed under the Apache License, Version 2.0 <LICENSE or
// https://www.apache.org/licenses/LICENSE-2.0> or the MIT license <LICENSE
// or https://opensource.org/licenses/MIT>, at your option. This file may not be
// copied, modified, or distributed except according to those terms.

use anyhow::Context;
use anyhow::Result;
use anyhow::anyhow;
use anyhow::bail;
use once_cell::sync::Lazy;
use ra_ap_base_db::SourceRoot;
use ra_ap_hir as ra_hir;
use ra_ap_ide as ra_ide;
use ra_ap_ide::CompletionFieldsToResolve;
use ra_ap_ide::FileRange;
use ra_ap_ide::RaFixtureConfig;
use ra_ap_ide::SubstTyLen;
use ra_ap_ide_db::FxHashMap;
use ra_ap_ide_db::SnippetCap;
use ra_ap_ide_db::imports::insert_use::ImportGranularity;
use ra_ap_ide_db::imports::insert_use::InsertUseConfig;
use ra_ap_paths::AbsPathBuf;
use ra_ap_project_model::CargoConfig;
use ra_ap_project_model::Package;
use ra_ap_project_model::ProjectManifest;
use ra_ap_project_model::ProjectWorkspace;
use ra_ap_project_model::ProjectWorkspaceKind;
use ra_ap_project_model::RustLibSource;
use ra_ap_syntax::TextRange;
use ra_ap_syntax::ast::AstNode;
use ra_ap_syntax::ast::{self};
use ra_ap_vfs as ra_vfs;
use ra_ap_vfs::FileId;
use ra_ap_vfs::loader::LoadingProgress;
use ra_ap_vfs_notify as vfs_notify;
use ra_ide::CallableSnippets;
use ra_ide::Edition;
use ra_ide::HoverConfig;
use ra_ide::HoverResult;
use ra_ide::RangeInfo;
use std::collections::HashMap;
use std::collections::HashSet;
use std::convert::TryFrom;
use std::path::Path;

pub(crate) const EDITION: Edition = Edition::Edition2024;

mod project_model_cache;

/// tensorbook patch 29: saves the project model of the crate in `root` beside it, for copies
/// of the directory to load; `Ok(Err(why))` where it is not saved.
pub(crate) fn save_project_model(root: &Path) -> Result<std::result::Result<(), String>> {
    let root = AbsPathBuf::try_from(root.to_str().context("crate directory is not UTF-8")?)
        .map_err(|path| anyhow!("crate directory is not absolute: '{path:?}'"))?;
    project_model_cache::save(&root)
}

/// How a session crate's workspace is loaded (with the standard library unless a test says not).
fn cargo_config(with_sysroot: bool) -> CargoConfig {
    CargoConfig {
        sysroot: with_sysroot.then_some(RustLibSource::Discover),
        ..CargoConfig::default()
    }
}

pub(crate) struct RustAnalyzer {
    with_sysroot: bool,
    root_directory: AbsPathBuf,
    analysis_host: ra_ide::AnalysisHost,
    vfs: ra_vfs::Vfs,
    loader: vfs_notify::NotifyHandle,
    message_receiver: crossbeam_channel::Receiver<ra_vfs::loader::Message>,
    last_cargo_toml: Option<Vec<u8>>,
    /// tensorbook patch 23: for a package named here, the only dependencies of it that the
    /// analysis loads (see `set_analysis_dependencies`).
    analysis_dependencies: HashMap<String, Vec<String>>,
    source_file: AbsPathBuf,
    source_file_id: FileId,
    current_source: String,
}

/// tensorbook patch 8: rust-analyzer behind a lock, kept current by a background thread.
///
/// Cells no longer wait for it (their variables' types come from rustc, `crate::mir_types`):
/// after each cell the session's analysis code goes to a worker thread at the lowest CPU
/// priority, which loads a changed crate graph, primes its caches and infers the code, so
/// that completion and hover, which take the lock, find that work done.
pub(crate) struct SharedAnalyzer {
    analyzer: std::sync::Arc<std::sync::Mutex<RustAnalyzer>>,
    warm: crossbeam_channel::Sender<Warm>,
}

/// Code for the analysis worker to bring the analyzer up to.
struct Warm {
    source: String,
    /// tensorbook patch 24: start without waiting for the evaluations to pause.
    at_once: bool,
}

impl SharedAnalyzer {
    pub(crate) fn new(analyzer: RustAnalyzer) -> SharedAnalyzer {
        let analyzer = std::sync::Arc::new(std::sync::Mutex::new(analyzer));
        let (warm, sources) = crossbeam_channel::unbounded::<Warm>();
        let worker = std::sync::Arc::clone(&analyzer);
        let spawned = std::thread::Builder::new()
            .name("evcxr-analysis".into())
            // tensorbook patch 15: rust-analyzer recurses over the session's syntax trees
            // here; a stack overflow would end the process that holds the session.
            .stack_size(ANALYSIS_STACK)
            .spawn(move || {
                lower_thread_priority();
                while let Ok(mut warm) = sources.recv() {
                    // Only the latest code matters, and a session's first evaluations (a
                    // prelude's `:dep`s rewrite Cargo.toml) follow each other closely: loading
                    // each one's crate graph would be wasted.
                    while !warm.at_once {
                        match sources.recv_timeout(WARM_QUIET) {
                            Ok(newer) => warm = newer,
                            Err(_) => break,
                        }
                    }
                    let source = warm.source;
                    let mut analyzer = worker.lock().unwrap_or_else(|e| e.into_inner());
                    // A failure here shows again, with its message, to the caller that next
                    // takes the lock for a query of its own.
                    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                        let _ = analyzer.warm(source);
                    }));
                }
            });
        if spawned.is_err() {
            // Without the worker, queries do the same work when they take the lock.
            let (dead, _) = crossbeam_channel::unbounded();
            return SharedAnalyzer {
                analyzer,
                warm: dead,
            };
        }
        SharedAnalyzer { analyzer, warm }
    }

    /// Waits for any background work, then gives the analyzer to the caller alone.
    pub(crate) fn lock(&self) -> std::sync::MutexGuard<'_, RustAnalyzer> {
        self.analyzer.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Has the worker bring the analyzer up to `source` (a crate graph, its caches, inference).
    pub(crate) fn warm(&self, source: String) {
        let _ = self.warm.send(Warm {
            source,
            at_once: false,
        });
    }

    /// tensorbook patch 24: as `warm`, starting now (see `EvalContext::warm_analysis`).
    pub(crate) fn warm_at_once(&self, source: String) {
        let _ = self.warm.send(Warm {
            source,
            at_once: true,
        });
    }
}

/// The analysis worker's stack (tensorbook patch 15): as large as that of the thread that
/// calls evcxr in tensorbook's kernel (`text_limits::EVALUATION_STACK`), which admits cells
/// whose syntax trees fit it. Only the pages a deep tree touches are committed.
const ANALYSIS_STACK: usize = 256 << 20;

/// How completions are asked for, by a Tab and by the analysis worker's probe.
fn completion_config() -> ra_ide::CompletionConfig<'static> {
ra_ide::CompletionConfig {
        enable_postfix_completions: true,
        snippet_cap: SnippetCap::new(true),
        enable_imports_on_the_fly: false,
        enable_self_on_the_fly: true,
        enable_private_editable: true,
        prefer_no_std: false,
        full_function_signatures: true,
        snippets: vec![],
        insert_use: InsertUseConfig {
            prefix_kind: ra_hir::PrefixKind::ByCrate,
            group: false,
            granularity: ImportGranularity::Item,
            enforce_granularity: false,
            skip_glob_imports: false,
        },
        callable: Some(CallableSnippets::FillArguments),
        limit: None,
        prefer_prelude: false,
        // tensorbook patch 14: off, as in rust-analyzer's own default
        // (`completion.termSearch.enable`): its search panicked ("failed to unify type
        // owners") on a Tab after `let x = 1; x`, which took the whole engine down.
        enable_term_search: false,
        term_search_fuel: 400,
        prefer_absolute: false,
        add_semicolon_to_unit: true,
        fields_to_resolve: CompletionFieldsToResolve::empty(),
        exclude_flyimport: vec![],
        exclude_traits: &[],
        enable_auto_iter: true,
        enable_auto_await: true,
        ra_fixture: RaFixtureConfig::default(),
        add_colons_to_module: true,
    }
}

/// tensorbook patch: computes every crate's def map and trait impls on all cores, as
/// rust-analyzer's own server does after loading a workspace. Otherwise the first type query
/// computes them one crate at a time on its thread.
fn prime_caches(analysis: &ra_ide::Analysis, crates: &[ra_ap_base_db::Crate]) {
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    // Cancellation cannot happen here: the worker holds the only handle that could change the
    // database, and changes it only after this returns.
    let _ = analysis.parallel_prime_caches(crates, threads, |_| {});
}

/// How long the evaluations must pause before the worker starts on the latest code.
const WARM_QUIET: std::time::Duration = std::time::Duration::from_millis(500);

/// The worker's threads (and those it starts: priming runs on several) yield to the cell's
/// build; on Linux the nice value is per thread and inherited by threads it creates.
fn lower_thread_priority() {
    #[cfg(target_os = "linux")]
    // SAFETY: setpriority on the calling thread's id changes nothing but its scheduling.
    unsafe {
        let tid = libc::gettid();
        libc::setpriority(libc::PRIO_PROCESS, tid as libc::id_t, 19);
    }
}

/// tensorbook patch 23: what the analysis does not load of a workspace.
#[derive(Default)]
struct HiddenPackages {
    /// The packages' directories, which the file loader skips.
    directories: HashSet<AbsPathBuf>,
    /// Their targets' root files, whose crates the crate graph leaves out.
    roots: HashSet<AbsPathBuf>,
    /// tensorbook patch 26: of the standard library, only what a cell can name.
    library: Option<HiddenLibrary>,
}

/// tensorbook patch 26: the standard library's part of `HiddenPackages`. A session's first
/// completion waits for `core`'s def map (nothing else starts before it), and `core::arch`'s
/// intrinsics for every architecture rustc targets are half of `core`'s items (x86's alone
/// are 168k lines, more than the rest of `core`); `libc`, `compiler_builtins`, the unwinders
/// and the test harness's dependencies come next, and none of them has an item a cell names
/// through `std`. rustc still compiles cells against the whole library: only completion and
/// hover do without them (`std::arch::x86_64::_mm256_add_ps` is not offered).
struct HiddenLibrary {
    /// The sysroot's `library/` directory.
    directory: AbsPathBuf,
    /// Inside it, what the file loader skips.
    excluded: Vec<AbsPathBuf>,
    /// The root files of the workspace's own targets: a crate outside both these and the
    /// kept part of `directory` comes from the standard library's dependencies.
    workspace_roots: HashSet<AbsPathBuf>,
    /// The workspace's packages' directories.
    workspace_directories: HashSet<AbsPathBuf>,
}

/// tensorbook patch 26: the directories of `library/` the analysis loads: the crates a cell
/// reaches through the prelude and `extern crate`, and the sources `core` and `std` include
/// by `#[path]` (`stdarch`'s `core_arch`, without its per-architecture modules).
///
/// tensorbook patch 28: not `portable-simd`, which `core` includes as `core::simd`: unstable
/// (a cell on a stable toolchain cannot name it), and its macro-made operator impls for every
/// lane type were a fifth of `core`'s def map and of its trait impls, which a session's first
/// Tab waits for.
const LIBRARY_KEPT: &[&str] = &[
    "core",
    "alloc",
    "std",
    "proc_macro",
    "test",
    "std_detect",
    "stdarch",
];

impl HiddenPackages {
    /// Whether the crate whose root file is `root` stays out of the crate graph.
    fn leaves_out(&self, root: &ra_ap_paths::AbsPath) -> bool {
        if self.roots.contains(root) {
            return true;
        }
        let Some(library) = &self.library else {
            return false;
        };
        if library.workspace_roots.contains(root) {
            return false;
        }
        let kept = root
            .strip_prefix(&library.directory)
            .and_then(|inside| inside.as_utf8_path().components().next())
            .is_some_and(|first| LIBRARY_KEPT.contains(&first.as_str()));
        !kept
    }

    /// The loader's exclusions for a root that includes `include`.
    fn excluded_from(&self, include: &[AbsPathBuf]) -> Vec<AbsPathBuf> {
        match &self.library {
            Some(library) if include.contains(&library.directory) => library.excluded.clone(),
            _ => Vec::new(),
        }
    }
}

impl HiddenLibrary {
    fn new(directory: &ra_ap_paths::AbsPath, workspace: &ProjectWorkspace) -> HiddenLibrary {
        let mut workspace_roots = HashSet::new();
        let mut workspace_directories = HashSet::new();
        if let ProjectWorkspaceKind::Cargo { cargo, .. } = &workspace.kind {
            for package in cargo.packages() {
                workspace_directories.insert(cargo[package].manifest.parent().to_path_buf());
                workspace_roots.extend(
                    cargo[package]
                        .targets
                        .iter()
                        .map(|&target| cargo[target].root.clone()),
                );
            }
        }
        Self::of_directory(directory, workspace_roots, workspace_directories)
    }

    /// What to leave out of the `library/` at `directory`, read from the disk.
    fn of_directory(
        directory: &ra_ap_paths::AbsPath,
        workspace_roots: HashSet<AbsPathBuf>,
        workspace_directories: HashSet<AbsPathBuf>,
    ) -> HiddenLibrary {
        let subdirectories = |dir: &ra_ap_paths::AbsPath| -> Vec<AbsPathBuf> {
            let Ok(entries) = std::fs::read_dir(dir) else {
                return Vec::new();
            };
            entries
                .flatten()
                .filter(|entry| entry.file_type().is_ok_and(|kind| kind.is_dir()))
                .filter_map(|entry| entry.file_name().into_string().ok())
                .map(|name| dir.join(name))
                .collect()
        };
        let mut excluded: Vec<AbsPathBuf> = subdirectories(directory)
            .into_iter()
            .filter(|dir| {
                dir.file_name()
                    .is_none_or(|name| !LIBRARY_KEPT.contains(&name))
            })
            .collect();
        excluded.extend(subdirectories(
            &directory.join("stdarch/crates/core_arch/src"),
        ));
        HiddenLibrary {
            directory: directory.to_path_buf(),
            excluded,
            workspace_roots,
            workspace_directories,
        }
    }
}

#[derive(Debug, PartialEq, Eq)]
pub enum TypeName {
    Named(String),
    Closure,
    Unknown,
}

#[derive(Debug)]
pub(crate) struct VariableInfo {
    /// The variable's type as Rust code, or None if we couldn't determine it.
    pub(crate) type_name: TypeName,
    /// Whether the variable is declared as mutable.
    pub(crate) is_mutable: bool,
}

impl RustAnalyzer {
    pub(crate) fn new(root_directory: &Path) -> Result<RustAnalyzer> {
        use ra_vfs::loader::Handle;
        let (message_sender, message_receiver) = crossbeam_channel::unbounded();
        let mut vfs = ra_vfs::Vfs::default();
        let root_directory = AbsPathBuf::try_from(
            root_directory
                .to_str()
                .context("Root directory is not UTF-8")?,
        )
        .map_err(|path| anyhow!("Evcxr tmpdir is not absolute: '{:?}'", path))?;
        let source_file = root_directory.join("src/lib.rs");
        // We need to write the file to the filesystem even though we subsequently set the file
        // contents via the vfs and change.change_file. This is because the loader checks for the
        // files existence when determining the crate structure.
        let src_dir = root_directory.join("src");
        std::fs::create_dir_all(&src_dir)
            .with_context(|| format!("Failed to create directory `{src_dir:?}`"))?;
        // Pre-allocate an ID for our main source file.
        let vfs_source_file: ra_vfs::VfsPath = source_file.clone().into();
        vfs.set_file_contents(vfs_source_file.clone(), Some(vec![]));
        let (source_file_id, _) = vfs.file_id(&vfs_source_file).unwrap();
        Ok(RustAnalyzer {
            with_sysroot: true,
            root_directory,
            analysis_host: Default::default(),
            vfs,
            loader: vfs_notify::NotifyHandle::spawn(message_sender),
            message_receiver,
            last_cargo_toml: None,
            analysis_dependencies: HashMap::new(),
            source_file,
            source_file_id,
            current_source: String::new(),
        })
    }

    /// tensorbook patch 23: the analysis loads only `dependencies` (package names) of `package`
    /// and what they depend on, not the rest of its dependency tree. For a library whose public
    /// API names the types of few of its dependencies: the crates it uses only inside take
    /// most of a cold analysis (every crate's def map and trait impls are computed before the
    /// first completion), and nothing a cell can name comes from them.
    pub(crate) fn set_analysis_dependencies(&mut self, package: String, dependencies: Vec<String>) {
        self.analysis_dependencies.insert(package, dependencies);
        // The next query loads the crate graph again, without them.
        self.last_cargo_toml = None;
    }

    pub(crate) fn set_source(&mut self, source: String) -> Result<()> {
        if self.apply_source(source)? {
            self.prime_caches();
        }
        Ok(())
    }

    /// Sets the session's code, and loads the crate graph again if Cargo.toml changed; says
    /// whether it did (the caches are then cold).
    fn apply_source(&mut self, source: String) -> Result<bool> {
        self.current_source = source;
        let mut change = ra_hir::ChangeWithProcMacros::default();

        // tensorbook patch 8: the loader only needs the file to exist. Its contents are the
        // compiled cell's, which a build may be reading while this runs on another thread.
        if std::fs::metadata(self.source_file.as_path()).is_err() {
            std::fs::write(self.source_file.as_path(), &*self.current_source)
                .with_context(|| format!("Failed to write {:?}", self.source_file))?;
        }

        // Check to see if we haven't yet loaded Cargo.toml, or if it's changed since we read it.
        let cargo_toml = Some(std::fs::read(self.cargo_toml_filename()).with_context(|| {
            format!(
                "Failed to read Cargo.toml from `{:?}`",
                self.cargo_toml_filename()
            )
        })?);
        let graph_changed = cargo_toml != self.last_cargo_toml;
        if graph_changed {
            self.load_cargo_toml(&mut change)?;
            self.last_cargo_toml = cargo_toml;
        }
        // After the load, whose changes carry the file as it is on disk.
        self.vfs.set_file_contents(
            self.source_file.clone().into(),
            Some(self.current_source.bytes().collect()),
        );
        change.change_file(self.source_file_id, Some(self.current_source.clone()));

        self.analysis_host.apply_change(change);
        Ok(graph_changed)
    }

    /// The analysis worker's job (tensorbook patch 8): brings the analysis up to `source`.
    ///
    /// tensorbook patch 22: with one completion on a probe (`v.` on a `Vec`) appended to the
    /// session's code. A session's first Tab otherwise computes the
    /// method resolution it needs (the impls of std's types and traits, their signatures, the
    /// autoderef chain) while the person waits; these queries depend on the dependencies, not
    /// on the cell, so they stay cached for every later completion.
    ///
    /// tensorbook patch 27: after a new crate graph, the probe runs beside the priming instead
    /// of after it. Priming computes the crates' def maps one dependency level at a time (for
    /// most of it on one thread: `core`, then `alloc`, then `std`, ...); the probe's method
    /// resolution (each crate's impls, lowered) starts on a crate as soon as its def map is
    /// there, so it overlaps the def maps still to come.
    fn warm(&mut self, source: String) -> Result<()> {
        const PROBE: &str = "\nfn evcxr_warm_completion(v: Vec<u8>) { v. }\n";
        let probed = format!("{source}{PROBE}");
        let position = ra_ide::FilePosition {
            file_id: self.source_file_id,
            offset: ((probed.len() - " }\n".len()) as u32).into(),
        };
        let graph_changed = self.apply_source(probed)?;
        let probe = self.analysis_host.analysis();
        std::thread::scope(|scope| {
            if graph_changed {
                // Its own threads do the work; this one (of the default stack) only waits.
                // The probe stays on the worker's thread, whose stack admits the session's
                // syntax trees (patch 15).
                let priming = self.analysis_host.analysis();
                let crates = ra_ap_base_db::all_crates(self.analysis_host.raw_database());
                scope.spawn(move || prime_caches(&priming, &crates));
            }
            let _ = probe.completions(&completion_config(), position, None);
        });
        // The probe stays in the analysis's copy of the code: every query sets its own.
        Ok(())
    }

    fn prime_caches(&self) {
        let crates = ra_ap_base_db::all_crates(self.analysis_host.raw_database());
        prime_caches(&self.analysis_host.analysis(), &crates);
    }

    /// Returns top-level variable names and their types in the specified function.
    pub(crate) fn top_level_variables(&self, function_name: &str) -> HashMap<String, VariableInfo> {
        use ra_ap_syntax::ast::HasModuleItem;
        use ra_ap_syntax::ast::HasName;
        let mut result = HashMap::new();
        let db = self.analysis_host.raw_database();
        let sema = ra_ide::Semantics::new(db);

        let source_file = sema.parse(ra_ap_base_db::EditionedFileId::new(
            db,
            self.source_file_id,
            EDITION,
        ));

        ra_ap_hir::attach_db(db, || {
            for item in source_file.items() {
                if let ast::Item::Fn(function) = item
                    && function
                        .name()
                        .map(|n| n.text() == function_name)
                        .unwrap_or(false)
                {
                    let Some(body) = function.body() else {
                        continue;
                    };
                    // tensorbook patch 8: none while the file is outside the loaded crate
                    // graph (a query racing a reload); there is nothing to report then.
                    let Some(module) = sema.scope(function.syntax()).map(|scope| scope.module())
                    else {
                        continue;
                    };
                    for statement in body.statements() {
                        if let ast::Stmt::LetStmt(let_stmt) = statement
                            && let Some(pat) = let_stmt.pat()
                            && !add_variable_for_pattern(
                                &pat,
                                &sema,
                                let_stmt.ty(),
                                module,
                                &mut result,
                            )
                        {
                            // We didn't add a variable for `pat`, possibly because it's a
                            // more complex pattern that needs destructuring. Try for each
                            // sub pattern. This time, we ignore the explicit type, because
                            // it applies to the whole pattern, not to its parts. Note, this
                            // will attempt `pat` again, but that's OK, since it failed
                            // above, so will fail again.
                            for d in pat.syntax().descendants() {
                                if let Some(sub_pat) = ast::Pat::cast(d) {
                                    add_variable_for_pattern(
                                        &sub_pat,
                                        &sema,
                                        None,
                                        module,
                                        &mut result,
                                    );
                                }
                            }
                        }
                    }
                }
            }
        });

        result
    }

    fn load_cargo_toml(&mut self, change: &mut ra_hir::ChangeWithProcMacros) -> Result<()> {
        // tensorbook patch 29: from the model saved in the session's template, when it was
        // made for this Cargo.toml, without the cargo and rustc processes of a load.
        let saved = if self.with_sysroot {
            project_model_cache::load(&self.root_directory)
        } else {
            None
        };
        let workspace = match saved {
            Some(workspace) => workspace,
            None => {
                let manifest = ProjectManifest::from_manifest_file(self.cargo_toml_filename())?;
                ProjectWorkspace::load(manifest, &cargo_config(self.with_sysroot), &|_| {})?
            }
        };
        let hidden = self.hidden_packages(&workspace);
        let load = workspace
            .to_roots()
            .iter()
            .filter(|root| !root.include.iter().any(|dir| hidden.directories.contains(dir)))
            .map(|root| {
                let mut exclude = root.exclude.clone();
                exclude.extend(hidden.excluded_from(&root.include));
                ra_vfs::loader::Entry::Directories(ra_vfs::loader::Directories {
                    extensions: vec!["rs".to_owned()],
                    include: root.include.clone(),
                    exclude,
                })
            })
            .collect();
        // Note, set_config is what triggers loading and calling the callback that we registered when we created self.loader.
        use ra_vfs::loader::Handle;
        self.loader.set_config(ra_vfs::loader::Config {
            version: 1,
            load,
            watch: vec![],
        });

        for message in &self.message_receiver {
            match message {
                ra_vfs::loader::Message::Progress {
                    n_total: _, n_done, ..
                } => {
                    if n_done == LoadingProgress::Finished {
                        break;
                    }
                }
                ra_vfs::loader::Message::Loaded { files }
                | ra_vfs::loader::Message::Changed { files } => {
                    for (path, contents) in files {
                        let vfs_path: ra_vfs::VfsPath = path.to_path_buf().into();
                        self.vfs
                            .set_file_contents(vfs_path.clone(), contents.clone());
                    }
                }
            }
        }

        for (file_id, changed_file) in self.vfs.take_changes() {
            let mut new_contents = None;
            if let ra_vfs::Change::Create(v, _hash) | ra_vfs::Change::Modify(v, _hash) =
                changed_file.change
                && let Ok(text) = std::str::from_utf8(&v)
            {
                new_contents = Some(text.to_owned());
            }
            change.change_file(file_id, new_contents);
        }
        // tensorbook patch: only the session crate's own directory is local. The standard
        // library and every dependency become a library root, whose files salsa keeps at high
        // durability: a new cell (a change to src/lib.rs only) then no longer makes salsa
        // re-verify every memo of std and of the dependencies, which cost ~100 ms of CPU per
        // cell with tensorbook's runtime loaded. Nothing outside this directory changes while
        // the graph is loaded (the loader watches nothing; a new Cargo.toml reloads it all).
        let mut file_sets = ra_vfs::file_set::FileSetConfig::builder();
        file_sets.add_file_set(vec![self.root_directory.clone().into()]);
        change.set_roots(
            file_sets
                .build()
                .partition(&self.vfs)
                .into_iter()
                .enumerate()
                .map(|(index, file_set)| {
                    if index == 0 {
                        SourceRoot::new_local(file_set)
                    } else {
                        SourceRoot::new_library(file_set)
                    }
                })
                .collect(),
        );
        let (crate_graph, _) = workspace.to_crate_graph(
            &mut |path| {
                // tensorbook patch 23: a crate whose root does not load is left out of the
                // graph, with the edges to it.
                if hidden.leaves_out(path) {
                    return None;
                }
                self.vfs
                    .file_id(&path.to_path_buf().into())
                    .map(|(id, _)| id)
            },
            &FxHashMap::default(),
        );

        change.set_crate_graph(crate_graph);
        Ok(())
    }

    /// What the analysis leaves out of `workspace` and of the standard library (tensorbook
    /// patches 23 and 26).
    fn hidden_packages(&self, workspace: &ProjectWorkspace) -> HiddenPackages {
        let mut hidden = self.hidden_workspace_packages(workspace);
        // tensorbook patch 26.
        if let Some(directory) = workspace.sysroot.rust_lib_src_root() {
            let library = HiddenLibrary::new(directory, workspace);
            // Besides `library/` and the workspace's packages, the roots are the standard
            // library's own dependencies (`libc`, `getopts`, ...).
            for root in workspace.to_roots() {
                for dir in root.include {
                    if dir != library.directory && !library.workspace_directories.contains(&dir)
                    {
                        hidden.directories.insert(dir);
                    }
                }
            }
            hidden.library = Some(library);
        }
        hidden
    }

    /// tensorbook patch 23: the packages of `workspace` that the session's crate reaches only
    /// through dependencies `analysis_dependencies` leaves out.
    fn hidden_workspace_packages(&self, workspace: &ProjectWorkspace) -> HiddenPackages {
        let mut hidden = HiddenPackages::default();
        let ProjectWorkspaceKind::Cargo { cargo, .. } = &workspace.kind else {
            return hidden;
        };
        if self.analysis_dependencies.is_empty() {
            return hidden;
        }
        let mut kept: HashSet<Package> = cargo
            .packages()
            .filter(|&package| cargo[package].is_member)
            .collect();
        let mut pending: Vec<Package> = kept.iter().copied().collect();
        while let Some(package) = pending.pop() {
            let only = self.analysis_dependencies.get(&cargo[package].name);
            for dependency in &cargo[package].dependencies {
                let name = &cargo[dependency.pkg].name;
                if only.is_some_and(|only| !only.contains(name)) {
                    continue;
                }
                if kept.insert(dependency.pkg) {
                    pending.push(dependency.pkg);
                }
            }
        }
        for package in cargo.packages().filter(|package| !kept.contains(package)) {
            hidden
                .directories
                .insert(cargo[package].manifest.parent().to_path_buf());
            hidden.roots.extend(
                cargo[package]
                    .targets
                    .iter()
                    .map(|&target| cargo[target].root.clone()),
            );
        }
        hidden
    }

    fn cargo_toml_filename(&self) -> AbsPathBuf {
        self.root_directory.join("Cargo.toml")
    }

    pub(crate) fn completions(&self, position: usize) -> Result<Completions> {
        let mut completions = Vec::new();
        let mut range = None;
        if let Ok(Some(completion_items)) = self.analysis_host.analysis().completions(
            &completion_config(),
            ra_ide::FilePosition {
                file_id: self.source_file_id,
                offset: (position as u32).into(),
            },
            None,
        ) {
            for item in completion_items {
                use regex::Regex;
                static ARG_PLACEHOLDER: Lazy<Regex> =
                    Lazy::new(|| Regex::new("\\$\\{[0-9]+:([^}]*)\\}").unwrap());
                let mut indels = item.text_edit.iter();
                if let Some(indel) = indels.next() {
                    let text_to_delete = &self.current_source[indel.delete];
                    // Rust analyzer returns all available methods/fields etc. It's up to us to
                    // decide how what we filter and what we keep.
                    if !item.lookup().starts_with(text_to_delete) {
                        continue;
                    }
                    completions.push(Completion {
                        code: ARG_PLACEHOLDER
                            .replace_all(&indel.insert, "$1")
                            .replace("$0", ""),
                        kind: jupyter_kind(item.kind),
                        label: item.label.primary.to_string(),
                        detail: item.detail.clone(),
                        from_trait: item.relevance.trait_.is_some(),
                    });
                    if let Some(previous_range) = range.as_ref() {
                        if *previous_range != indel.delete {
                            bail!(
                                "Different completions wanted to replace different parts of the text"
                            );
                        }
                    } else {
                        range = Some(indel.delete)
                    }
                }
                if indels.next().is_some() {
                    bail!("Completion unexpectedly provided more than one insertion/deletion");
                }
            }
        }
        Ok(Completions {
            completions,
            start_offset: range.map(|range| range.start().into()).unwrap_or(position),
            end_offset: range.map(|range| range.end().into()).unwrap_or(position),
        })
    }

    pub(crate) fn hover(
        &self,
        text_range: TextRange,
        is_mark_down: bool,
    ) -> Result<Option<RangeInfo<HoverResult>>> {
        use ra_ide::HoverDocFormat as hdf;
        let hover_config: HoverConfig = HoverConfig {
            links_in_hover: true,
            memory_layout: None,
            documentation: true,
            keywords: true,
            format: if is_mark_down {
                hdf::Markdown
            } else {
                hdf::PlainText
            },
            max_trait_assoc_items_count: None,
            max_fields_count: Some(5),
            max_enum_variants_count: Some(5),
            max_subst_ty_len: SubstTyLen::Unlimited,
            show_drop_glue: false,
            ra_fixture: RaFixtureConfig::default(),
        };
        let file_range = FileRange {
            file_id: self.source_file_id,
            range: text_range,
        };
        match self
            .analysis_host
            .analysis()
            .hover(&hover_config, file_range)
        {
            Ok(range_info) => Ok(range_info),
            _ => bail!("hover fail"),
        }
    }
}

/// If `pat` represents a variable that is being defined, then record it in `result` and return
/// true.
fn add_variable_for_pattern(
    pat: &ast::Pat,
    sema: &ra_hir::Semantics<ra_ide::RootDatabase>,
    explicit_type: Option<ast::Type>,
    module: ra_hir::Module,
    result: &mut HashMap<String, VariableInfo>,
) -> bool {
    use ra_ap_syntax::ast::HasName;
    if let ast::Pat::IdentPat(ident_pat) = pat
        && let Some(name) = ident_pat.name()
    {
        let type_name = get_type_name(
            explicit_type,
            sema.type_of_pat(pat).map(|info| info.original()),
            sema,
            module,
        );
        result.insert(
            name.text().to_string(),
            VariableInfo {
                type_name,
                is_mutable: ident_pat.mut_token().is_some(),
            },
        );
        return true;
    }
    false
}

fn get_type_name(
    explicit_type: Option<ast::Type>,
    inferred_type: Option<ra_hir::Type>,
    sema: &ra_hir::Semantics<ra_ide::RootDatabase>,
    module: ra_hir::Module,
) -> TypeName {
    use ra_hir::HirDisplay;
    if let Some(explicit_type) = explicit_type {
        let type_name = explicit_type.syntax().text().to_string();
        if is_type_valid(&type_name) {
            return TypeName::Named(type_name);
        }
    }
    if let Some(ty) = inferred_type {
        if ty.is_closure() {
            return TypeName::Closure;
        }
        if let Ok(type_name) = ty.display_source_code(sema.db, module.into(), true)
            && is_type_valid(&type_name)
        {
            return TypeName::Named(type_name);
        }
    }
    TypeName::Unknown
}

/// Completions found in a particular context.
#[derive(Default)]
pub struct Completions {
    pub completions: Vec<Completion>,
    pub start_offset: usize,
    pub end_offset: usize,
}

/// A code completion. We use our own type rather than exposing rust-analyzer's CompletionItem,
/// since rust-analyzer is an internal implementation detail, so we don't want to expose it in a
/// public API.
#[derive(Debug, Eq, PartialEq)]
pub struct Completion {
    pub code: String,
    pub kind: &'static str,
    pub label: String,
    /// tensorbook patch 20: rust-analyzer's detail (a method's signature, a field's type).
    pub detail: Option<String>,
    /// tensorbook patch 20: the item comes from a trait (`into`, `clone`), not the type itself.
    pub from_trait: bool,
}

fn jupyter_kind(kind: ra_ide::CompletionItemKind) -> &'static str {
    use ra_ap_ide_db::SymbolKind;
    use ra_ide::CompletionItemKind as K;
    match kind {
        K::SymbolKind(SymbolKind::Function | SymbolKind::Method) => "function",
        K::SymbolKind(
            SymbolKind::Struct
            | SymbolKind::Enum
            | SymbolKind::Union
            | SymbolKind::Trait
            | SymbolKind::TypeAlias
            | SymbolKind::TypeParam
            | SymbolKind::SelfType,
        ) => "class",
        K::SymbolKind(SymbolKind::Module | SymbolKind::CrateRoot | SymbolKind::ToolModule) => {
            "module"
        }
        K::SymbolKind(
            SymbolKind::Const
            | SymbolKind::Static
            | SymbolKind::ConstParam
            | SymbolKind::Variant
            | SymbolKind::Field
            | SymbolKind::Local
            | SymbolKind::SelfParam
            | SymbolKind::ValueParam
            | SymbolKind::Label,
        )
        | K::Binding
        | K::InferredType => "instance",
        K::SymbolKind(
            SymbolKind::Macro
            | SymbolKind::ProcMacro
            | SymbolKind::Derive
            | SymbolKind::DeriveHelper
            | SymbolKind::Attribute
            | SymbolKind::BuiltinAttr,
        ) => "function",
        K::Keyword => "keyword",
        K::Snippet | K::BuiltinType | K::UnresolvedReference | K::Expression => "instance",
        _ => "instance",
    }
}

/// Returns whether this appears to be a valid type. Rust analyzer, when asked to emit code for some
/// types, produces invalid code. In particular, fixed sized arrays come out without a size. e.g.
/// instead of `[i32, 5]`, we get `[i32, _]`.
pub(crate) fn is_type_valid(type_name: &str) -> bool {
    use ra_ap_syntax::SyntaxKind;
    let wrapped_source = format!("const _: {type_name} = foo();");
    let parsed = ast::SourceFile::parse(&wrapped_source, EDITION);
    if !parsed.errors().is_empty() {
        return false;
    }
    for node in parsed.syntax_node().descendants() {
        if node.kind() == SyntaxKind::ERROR || node.kind() == SyntaxKind::INFER_TYPE {
            return false;
        }
    }
    true
}

#[cfg(test)]
mod test {
    use super::AbsPathBuf;
    use super::HiddenLibrary;
    use super::HiddenPackages;
    use super::RustAnalyzer;
    use super::TypeName;
    use super::is_type_valid;
    use anyhow::Result;

    impl TypeName {
        fn named(name: &str) -> TypeName {
            TypeName::Named(name.to_owned())
        }
    }

    /// tensorbook patch 23: a dependency's dependencies left out of the analysis are not in its
    /// crate graph, and what the dependency re-exports from a kept one still resolves.
    #[test]
    fn analysis_leaves_out_the_dependencies_it_is_told_to() -> Result<()> {
        let tmpdir = tempfile::tempdir()?;
        let package = |name: &str, dependencies: &[&str], code: &str| -> Result<()> {
            let dir = tmpdir.path().join(name);
            std::fs::create_dir_all(dir.join("src"))?;
            let dependencies: String = dependencies
                .iter()
                .map(|d| format!("{d} = {{ path = \"../{d}\" }}\n"))
                .collect();
            std::fs::write(
                dir.join("Cargo.toml"),
                format!(
                    "[package]\nname = \"{name}\"\nversion = \"0.1.0\"\nedition = \"2024\"\n\n[dependencies]\n{dependencies}"
                ),
            )?;
            std::fs::write(dir.join("src/lib.rs"), code)?;
            Ok(())
        };
        package("exposed", &[], "pub struct Exposed;")?;
        package("inner", &[], "pub struct Inner;")?;
        package(
            "outer",
            &["exposed", "inner"],
            "pub use exposed::Exposed;\npub fn inside() -> inner::Inner { inner::Inner }",
        )?;
        package("session", &["outer"], "")?;
        let mut ra = RustAnalyzer::new(&tmpdir.path().join("session"))?;
        ra.with_sysroot = false;
        ra.set_analysis_dependencies("outer".to_owned(), vec!["exposed".to_owned()]);
        ra.set_source("fn f() { let e = outer::Exposed; }".to_owned())?;
        let db = ra.analysis_host.raw_database();
        let mut names: Vec<String> = ra_ap_base_db::all_crates(db)
            .iter()
            .filter_map(|krate| {
                krate
                    .extra_data(db)
                    .display_name
                    .as_ref()
                    .map(|name| name.to_string())
            })
            .collect();
        names.sort();
        assert_eq!(names, ["exposed", "outer", "session"]);
        let var_types = ra.top_level_variables("f");
        assert_eq!(var_types["e"].type_name, TypeName::named("outer::Exposed"));
        Ok(())
    }

    #[test]
    fn get_variable_types() -> Result<()> {
        let tmpdir = tempfile::tempdir()?;
        let mut ra = RustAnalyzer::new(tmpdir.path())?;
        ra.with_sysroot = false;
        std::fs::write(
            ra.cargo_toml_filename().to_path_buf(),
            r#"
            [package]
            name = "foo"
            version = "0.1.0"
            edition = "2024"

            [lib]
            "#,
        )?;

        ra.set_source(
            r#"
            struct Foo<const I: usize> {}
            struct Point {x: u8, y: u8}
            fn foo() {
                let v1 = true;
                let mut v1 = 42i32;
                let v2 = &[false];
                let v3: Foo<10> = Foo::<10> {};
                {
                    let v2 = false;
                    let v100 = true;
                }
                let (v4, ..) = (42u64, 43, 44);
                let p1 = Point {x: 1, y: 2};
                let Point {x, y: y2} = p1;
            }
            fn foo2() {
                let v9 = true;
            }"#
            .to_owned(),
        )?;
        let var_types = ra.top_level_variables("foo");
        assert_eq!(var_types["v1"].type_name, TypeName::named("i32"));
        assert!(var_types["v1"].is_mutable);
        assert_eq!(var_types["v2"].type_name, TypeName::named("&[bool; 1]"));
        assert!(!var_types["v2"].is_mutable);
        assert_eq!(var_types["v3"].type_name, TypeName::named("Foo<10>"));
        assert!(!var_types.contains_key("v100"));
        assert_eq!(var_types["v4"].type_name, TypeName::named("u64"));
        assert_eq!(var_types["x"].type_name, TypeName::named("u8"));
        assert_eq!(var_types["y2"].type_name, TypeName::named("u8"));

        ra.set_source(
            r#"
            fn foo() {
                let v1 = 1u16;
            }"#
            .to_owned(),
        )?;
        let var_types = ra.top_level_variables("foo");
        assert_eq!(var_types["v1"].type_name, TypeName::named("u16"));
        assert!(!var_types.contains_key("v2"));

        Ok(())
    }

    #[test]
    fn test_is_type_valid() {
        assert!(is_type_valid("Vec<String>"));
        assert!(is_type_valid("&[i32]"));
        assert!(!is_type_valid("[i32, _]"));
        assert!(!is_type_valid("Vec<_>"));
        assert!(is_type_valid("Foo<42>"));
    }
    /// tensorbook patch 26: of a `library/` laid out as the sysroot's, the analysis keeps the
    /// crates a cell names and the sources `core` includes, and leaves out the rest, the
    /// per-architecture intrinsics and the crates outside both it and the workspace.
    #[test]
    fn the_analysis_leaves_out_what_no_cell_names_of_the_standard_library() -> Result<()> {
        let tempdir = tempfile::tempdir()?;
        let root = AbsPathBuf::assert_utf8(tempdir.path().to_path_buf());
        let library = root.join("library");
        for dir in [
            "core/src",
            "std/src",
            "compiler-builtins/compiler-builtins/src",
            "stdarch/crates/core_arch/src/x86",
            "stdarch/crates/core_arch/src/aarch64",
            "portable-simd/crates/core_simd/src",
        ] {
            std::fs::create_dir_all(library.join(dir))?;
        }
        std::fs::write(library.join("stdarch/crates/core_arch/src/mod.rs"), "")?;
        let session_root = root.join("session/src/lib.rs");
        let hidden = HiddenPackages {
            library: Some(HiddenLibrary::of_directory(
                &library,
                [session_root.clone()].into_iter().collect(),
                [root.join("session")].into_iter().collect(),
            )),
            ..HiddenPackages::default()
        };
        let mut excluded = hidden.excluded_from(std::slice::from_ref(&library));
        excluded.sort();
        assert_eq!(
            excluded,
            vec![
                library.join("compiler-builtins"),
                library.join("portable-simd"),
                library.join("stdarch/crates/core_arch/src/aarch64"),
                library.join("stdarch/crates/core_arch/src/x86"),
            ]
        );
        assert!(hidden.excluded_from(&[root.join("session")]).is_empty());
        assert!(!hidden.leaves_out(&library.join("core/src/lib.rs")));
        assert!(!hidden.leaves_out(&library.join("std/src/lib.rs")));
        assert!(!hidden.leaves_out(&session_root));
        assert!(hidden.leaves_out(&library.join("compiler-builtins/compiler-builtins/src/lib.rs")));
        // A dependency of the standard library's, from the registry.
        assert!(hidden.leaves_out(&root.join("registry/libc-0.2.178/src/lib.rs")));
        Ok(())
    }
}
