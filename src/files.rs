//! Files that several runs write: a lock on a sidecar file beside the one that is written, and
//! replacement at once through a temporary file in the same directory, so that readers see the
//! old file or the new, never a part. The state directory and the report files both use them.

use std::fs::{self, File, OpenOptions, Permissions};
use std::io::{self, Write};
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::Path;
use std::time::{Duration, Instant};

/// Whether the last component of a path may be a symbolic link.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Links {
    /// Follow it, as for a file the user named.
    Follow,
    /// Refuse it: a file retry keeps for itself, in a directory others may write.
    Refuse,
}

/// Why a lock could not be taken.
#[derive(Debug)]
pub enum LockError {
    /// Another process held it for the whole wait.
    Busy,
    Io(io::Error),
}

/// Opens (creating it with `mode`) the lock file at `path` and takes its exclusive lock,
/// waiting up to `wait` for another process to let it go; the lock is let go when the file is
/// dropped. Only a regular file is a lock.
pub fn lock(path: &Path, mode: u32, links: Links, wait: Duration) -> Result<File, LockError> {
    let mut options = OpenOptions::new();
    options.write(true).create(true).truncate(false).mode(mode);
    if links == Links::Refuse {
        options.custom_flags(nix::libc::O_NOFOLLOW | nix::libc::O_NONBLOCK);
    }
    let file = options.open(path).map_err(LockError::Io)?;
    if !file.metadata().map_err(LockError::Io)?.is_file() {
        return Err(LockError::Io(io::Error::other("it is not a regular file")));
    }
    let deadline = Instant::now() + wait;
    let mut pause = Duration::from_micros(50);
    loop {
        match file.try_lock() {
            Ok(()) => return Ok(file),
            Err(fs::TryLockError::WouldBlock) if Instant::now() < deadline => {
                std::thread::sleep(pause);
                pause = (pause * 2).min(Duration::from_millis(2));
            }
            Err(fs::TryLockError::WouldBlock) => return Err(LockError::Busy),
            Err(fs::TryLockError::Error(e)) => return Err(LockError::Io(e)),
        }
    }
}

/// Replaces `path` with `bytes` at once: they are written to a new temporary file beside it
/// (created exclusively, under a name nobody can guess), given `mode`, optionally synced to
/// disk, then renamed over `path`.
pub fn replace(path: &Path, bytes: &[u8], mode: u32, sync: bool) -> io::Result<()> {
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    let mut file = tempfile::Builder::new()
        .prefix(".retry-")
        .tempfile_in(dir)?;
    file.write_all(bytes)?;
    if sync {
        file.as_file().sync_all()?;
    }
    // The temporary file was made 0600; a report may be read by another user (a collector).
    if mode != 0o600 {
        fs::set_permissions(file.path(), Permissions::from_mode(mode))?;
    }
    file.persist(path).map_err(|e| e.error)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_replaced_file_has_the_new_bytes_and_mode_and_nothing_is_left_beside_it() {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let path = dir.path().join("f");
        fs::write(&path, b"old").expect("written");
        replace(&path, b"new", 0o644, false).expect("replaced");
        assert_eq!(fs::read(&path).expect("read"), b"new");
        let mode = fs::metadata(&path).expect("metadata").permissions().mode();
        assert_eq!(mode & 0o777, 0o644);
        assert_eq!(fs::read_dir(dir.path()).expect("listed").count(), 1);
    }

    #[test]
    fn a_lock_is_exclusive_and_a_planted_link_is_refused() {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let path = dir.path().join("k.lock");
        let held = lock(&path, 0o600, Links::Refuse, Duration::ZERO).expect("locked");
        assert!(matches!(
            lock(&path, 0o600, Links::Refuse, Duration::from_millis(5)),
            Err(LockError::Busy)
        ));
        drop(held);
        let target = dir.path().join("target");
        let link = dir.path().join("planted.lock");
        std::os::unix::fs::symlink(&target, &link).expect("linked");
        assert!(matches!(
            lock(&link, 0o600, Links::Refuse, Duration::ZERO),
            Err(LockError::Io(_))
        ));
        assert!(!target.exists(), "nothing is created through the link");
        assert!(lock(&link, 0o600, Links::Follow, Duration::ZERO).is_ok());
    }
}
