//! Directories that a killed kernel could not remove.
//!
//! A kernel stopped with SIGKILL (Jupyter's last resort, `shutdown_kernel(now=True)`) leaves
//! its session crate (hundreds of MB under the cache) and its state directory (in the system's
//! temporary directory) behind. Each such directory is named `<prefix><pid>-<anything>` after
//! the kernel that owns it, so the next kernel can tell which ones no process will come back
//! for and remove them.

use std::fs;
use std::path::Path;

/// The name of a directory owned by this process: `<prefix><pid>-`, to be completed by a
/// random suffix (tempfile's).
pub fn owned_prefix(prefix: &str) -> String {
    format!("{prefix}{}-", std::process::id())
}

/// Removes the entries of `dir` named `<prefix><pid>-...` (for one of `prefixes`) whose process
/// no longer exists. Without `/proc` nothing can be told apart, so nothing is removed.
pub fn remove_orphans(dir: &Path, prefixes: &[&str]) {
    if !Path::new("/proc/self").exists() {
        return;
    }
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(pid) = owner(&name, prefixes) else {
            continue;
        };
        if pid != std::process::id() && !Path::new("/proc").join(pid.to_string()).exists() {
            let _ = fs::remove_dir_all(entry.path());
        }
    }
}

/// The pid in `<prefix><pid>-...`, for the first prefix that matches.
fn owner(name: &str, prefixes: &[&str]) -> Option<u32> {
    prefixes
        .iter()
        .find_map(|prefix| name.strip_prefix(prefix))
        .and_then(|rest| rest.split_once('-'))
        .and_then(|(pid, _)| pid.parse().ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_owner_is_read_from_the_name() {
        let prefixes = ["session-", "tensorbook-kernel-"];
        assert_eq!(owner("session-42-abc", &prefixes), Some(42));
        assert_eq!(owner("tensorbook-kernel-7-x", &prefixes), Some(7));
        assert_eq!(owner("session-42", &prefixes), None);
        assert_eq!(owner("template-42-abc", &prefixes), None);
        assert_eq!(owner("session-abc-42", &prefixes), None);
    }

    #[test]
    fn orphans_are_removed_and_live_or_foreign_entries_kept() {
        let root = tempfile::tempdir().unwrap();
        // pid 0 is never a user process, so its directories are orphans.
        let orphan = root.path().join("session-0-abc");
        let other_orphan = root.path().join("tensorbook-kernel-0-def");
        let live = root.path().join(format!("{}abc", owned_prefix("session-")));
        let foreign = root.path().join("unrelated-0-abc");
        for dir in [&orphan, &other_orphan, &live, &foreign] {
            fs::create_dir_all(dir).unwrap();
        }
        remove_orphans(root.path(), &["session-", "tensorbook-kernel-"]);
        if Path::new("/proc/self").exists() {
            assert!(!orphan.exists());
            assert!(!other_orphan.exists());
        }
        assert!(live.exists());
        assert!(foreign.exists());
    }
}
