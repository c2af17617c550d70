//! Directories only this user can use. Anything the kernel trusts by its path (the keeper's
//! socket, the runtime build that cells link) lives in one: created with mode 0700, and before
//! each use checked to be a real directory (not a link), owned by this user, with no access
//! for group or others. A directory another user made first at the same path fails the check
//! with a reason, instead of being used.

use std::os::unix::fs::{DirBuilderExt, MetadataExt};
use std::path::Path;

/// This process's user.
pub fn uid() -> u32 {
    // SAFETY: getuid cannot fail and touches no memory.
    unsafe { libc::getuid() }
}

/// Checks that `dir` is this user's private directory.
pub fn check(dir: &Path) -> Result<(), String> {
    check_mode(dir, 0o077, "others could write or read it")
}

/// Checks that `dir` is this user's and that nobody else can write it (others may read).
pub fn check_unwritable(dir: &Path) -> Result<(), String> {
    check_mode(dir, 0o022, "others could write it")
}

fn check_mode(dir: &Path, forbidden: u32, why: &str) -> Result<(), String> {
    let meta = std::fs::symlink_metadata(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    if !meta.file_type().is_dir() {
        return Err(format!("{} is not a directory", dir.display()));
    }
    if meta.uid() != uid() {
        return Err(format!(
            "{} belongs to uid {}, not to this user (uid {})",
            dir.display(),
            meta.uid(),
            uid()
        ));
    }
    let mode = meta.mode() & 0o777;
    if mode & forbidden != 0 {
        return Err(format!("{} has mode {mode:o}: {why}", dir.display()));
    }
    Ok(())
}

/// Creates `dir` (and its missing parents) private to this user, or checks the one that is
/// there.
pub fn ensure(dir: &Path) -> Result<(), String> {
    match std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
    {
        Ok(()) => check(dir),
        Err(e) => Err(format!("cannot create {}: {e}", dir.display())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn a_private_directory_passes_and_an_open_one_or_a_link_does_not() {
        let base = tempfile::tempdir().unwrap();
        let dir = base.path().join("a/b");
        ensure(&dir).unwrap();
        check(&dir).unwrap();
        ensure(&dir).unwrap();
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
        let why = check(&dir).unwrap_err();
        assert!(why.contains("mode 755"), "{why}");
        let link = base.path().join("link");
        std::os::unix::fs::symlink(base.path(), &link).unwrap();
        assert!(check(&link).unwrap_err().contains("not a directory"));
        assert!(check(&base.path().join("absent")).is_err());
        // Readable by others is fine where only writing matters (the build cache).
        check_unwritable(&dir).unwrap();
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).unwrap();
        assert!(check_unwritable(&dir).unwrap_err().contains("could write"));
    }

    /// As root, a directory handed to another user is refused (elsewhere the chown fails,
    /// and the owner check is the one a foreign directory would meet).
    #[test]
    fn a_directory_of_another_user_is_refused() {
        let base = tempfile::tempdir().unwrap();
        let dir = base.path().join("theirs");
        ensure(&dir).unwrap();
        if std::os::unix::fs::chown(&dir, Some(65534), Some(65534)).is_ok() {
            let why = ensure(&dir).unwrap_err();
            assert!(why.contains("uid 65534"), "{why}");
        }
    }
}
