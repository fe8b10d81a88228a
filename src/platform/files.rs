//! Files that several runs write: a lock on a sidecar file beside the one that is written, and
//! replacement at once through a temporary file in the same directory, so that readers see the
//! old file or the new, never a part. The state directory and the report files both use them.
//! [`Dir`] does the same within a directory retry keeps for itself (the state directory), where
//! every entry is opened relative to the directory, never through a symbolic link, and never in
//! a way that can block.

use std::fs::{self, File, OpenOptions, Permissions};
use std::io::{self, Read, Write};
use std::os::fd::OwnedFd;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use nix::errno::Errno;
use nix::fcntl::{AtFlags, OFlag};
use nix::sys::stat::{FileStat, Mode, SFlag};
use nix::unistd::UnlinkatFlags;

/// retry's own words for why it does not write a file (a FIFO that no process reads, a
/// directory, a lock held too long), carried in an [`io::Error`] of the kind that fits, so that
/// a message can tell them from the system's. Paths in them are quoted.
#[derive(Debug)]
pub struct Refusal(String);

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Refusal {}

/// An [`io::Error`] of `kind` that carries retry's own `words` ([`Refusal`]).
pub fn refusal(kind: io::ErrorKind, words: impl Into<String>) -> io::Error {
    io::Error::new(kind, Refusal(words.into()))
}

/// Why a lock could not be taken.
#[derive(Debug)]
pub enum LockError {
    /// Another process held it for the whole wait.
    Busy,
    /// Another process held it when a signal that cancels the run arrived: the run answers
    /// the signal rather than wait.
    Cancelled,
    Io(io::Error),
}

/// Opens (creating it with `mode`) the lock file at `path` and takes its exclusive lock,
/// waiting up to `wait` for another process to let it go, and no longer once a signal that
/// cancels the run has arrived; the lock is let go when the file is dropped. Only a regular
/// file is a lock, and never through a link: a FIFO planted there is refused without waiting
/// for a reader, and a link cannot make retry create a file elsewhere. The files retry keeps
/// for itself are locked through [`Dir::lock_file`].
pub fn lock(path: &Path, mode: u32, wait: Duration) -> Result<File, LockError> {
    let file = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(false)
        .mode(mode)
        .custom_flags(nix::libc::O_NONBLOCK | nix::libc::O_NOFOLLOW)
        .open(path)
        .map_err(|e| match e.raw_os_error() {
            Some(nix::libc::ENXIO) => {
                LockError::Io(refusal(io::ErrorKind::Other, "it is not a regular file"))
            }
            Some(nix::libc::ELOOP) => LockError::Io(refusal(
                io::ErrorKind::Other,
                "it is a symbolic link, which retry does not follow for a lock",
            )),
            _ => LockError::Io(e),
        })?;
    if !file.metadata().map_err(LockError::Io)?.is_file() {
        return Err(LockError::Io(refusal(
            io::ErrorKind::Other,
            "it is not a regular file",
        )));
    }
    let deadline = Instant::now() + wait;
    let mut pause = Duration::from_micros(50);
    loop {
        match file.try_lock() {
            Ok(()) => return Ok(file),
            Err(fs::TryLockError::WouldBlock) if super::signals::cancelling_arrived() => {
                return Err(LockError::Cancelled);
            }
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
        .tempfile_in(dir)
        .map_err(untold)?;
    file.write_all(bytes).map_err(untold)?;
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

/// An error of tempfile's as the system gave it: tempfile adds its file's name (which nobody
/// needs to see) and keeps the code to itself, so the code is given back from the kind where
/// the kind has one code, and anything else is the bare kind.
fn untold(e: io::Error) -> io::Error {
    if e.raw_os_error().is_some() {
        return e;
    }
    let code = match e.kind() {
        io::ErrorKind::NotFound => nix::libc::ENOENT,
        io::ErrorKind::PermissionDenied => nix::libc::EACCES,
        io::ErrorKind::NotADirectory => nix::libc::ENOTDIR,
        io::ErrorKind::ReadOnlyFilesystem => nix::libc::EROFS,
        io::ErrorKind::StorageFull => nix::libc::ENOSPC,
        io::ErrorKind::FileTooLarge => nix::libc::EFBIG,
        io::ErrorKind::QuotaExceeded => nix::libc::EDQUOT,
        kind => return kind.into(),
    };
    io::Error::from_raw_os_error(code)
}

/// A directory opened once, whose entries are retry's own: each is named relative to the
/// directory's descriptor, so that what was checked of the directory holds for every entry
/// used in it, and none is opened through a symbolic link or in a way that can block.
pub struct Dir {
    fd: OwnedFd,
    path: PathBuf,
}

/// What an entry of a [`Dir`] holds, for reading.
#[derive(Debug)]
pub enum Entry {
    /// There is none.
    Missing,
    /// A regular file's bytes, up to the limit asked for and one more, and its owner.
    Bytes { bytes: Vec<u8>, owner: u32 },
    /// Something that is not a regular file (its kind, as words), which is never opened.
    Special(&'static str),
}

/// The kind of a file, as words: "a FIFO", "a directory".
pub fn kind(stat: &FileStat) -> &'static str {
    match SFlag::from_bits_truncate(stat.st_mode & SFlag::S_IFMT.bits()) {
        SFlag::S_IFREG => "a regular file",
        SFlag::S_IFDIR => "a directory",
        SFlag::S_IFLNK => "a symbolic link",
        SFlag::S_IFIFO => "a FIFO",
        SFlag::S_IFCHR => "a character device",
        SFlag::S_IFBLK => "a block device",
        SFlag::S_IFSOCK => "a socket",
        _ => "not a regular file",
    }
}

fn is_regular(stat: &FileStat) -> bool {
    stat.st_mode & SFlag::S_IFMT.bits() == SFlag::S_IFREG.bits()
}

impl Dir {
    /// Opens the directory at `path`. A link on the way is followed: the path is the user's
    /// choice, not an entry of a directory that others may write.
    pub fn open(path: &Path) -> io::Result<Dir> {
        let fd = nix::fcntl::open(
            path,
            OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC,
            Mode::empty(),
        )?;
        Ok(Dir {
            fd,
            path: path.to_path_buf(),
        })
    }

    /// The path of the entry `name`, for messages.
    pub fn join(&self, name: &str) -> PathBuf {
        self.path.join(name)
    }

    /// The directory's own status: its owner and mode.
    pub fn stat(&self) -> io::Result<FileStat> {
        Ok(nix::sys::stat::fstat(&self.fd)?)
    }

    /// The status of the entry `name` itself (a link is not followed); `None` when missing.
    pub fn entry(&self, name: &str) -> io::Result<Option<FileStat>> {
        match nix::sys::stat::fstatat(&self.fd, name, AtFlags::AT_SYMLINK_NOFOLLOW) {
            Ok(stat) => Ok(Some(stat)),
            Err(Errno::ENOENT) => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    /// Reads the regular file `name`, at most `limit` bytes and one more (so that a longer
    /// file can be told). Anything else, a link included, is not opened (or, if it was put
    /// there between the look and the opening, not read): a FIFO or a device cannot block.
    pub fn read(&self, name: &str, limit: u64) -> io::Result<Entry> {
        match self.entry(name)? {
            None => return Ok(Entry::Missing),
            Some(stat) if !is_regular(&stat) => return Ok(Entry::Special(kind(&stat))),
            Some(_) => {}
        }
        let flags = OFlag::O_RDONLY
            | OFlag::O_NOFOLLOW
            | OFlag::O_NONBLOCK
            | OFlag::O_NOCTTY
            | OFlag::O_CLOEXEC;
        let fd = match nix::fcntl::openat(&self.fd, name, flags, Mode::empty()) {
            Ok(fd) => fd,
            Err(Errno::ENOENT) => return Ok(Entry::Missing),
            Err(Errno::ELOOP) => return Ok(Entry::Special("a symbolic link")),
            Err(e) => return Err(e.into()),
        };
        let stat = nix::sys::stat::fstat(&fd)?;
        if !is_regular(&stat) {
            return Ok(Entry::Special(kind(&stat)));
        }
        let mut bytes = Vec::new();
        File::from(fd)
            .take(limit.saturating_add(1))
            .read_to_end(&mut bytes)?;
        Ok(Entry::Bytes {
            bytes,
            owner: stat.st_uid,
        })
    }

    /// Opens (creating it with `mode`) the regular file `name`, for reading and writing, to
    /// be locked: a link, a FIFO or a device in its place is refused, and never opened.
    pub fn lock_file(&self, name: &str, mode: u32) -> io::Result<File> {
        if let Some(stat) = self.entry(name)?
            && !is_regular(&stat)
        {
            return Err(not_regular(kind(&stat)));
        }
        let flags = OFlag::O_RDWR
            | OFlag::O_CREAT
            | OFlag::O_NOFOLLOW
            | OFlag::O_NONBLOCK
            | OFlag::O_NOCTTY
            | OFlag::O_CLOEXEC;
        let fd = match nix::fcntl::openat(&self.fd, name, flags, Mode::from_bits_truncate(mode)) {
            Ok(fd) => fd,
            Err(Errno::ELOOP) => return Err(not_regular("a symbolic link")),
            Err(e) => return Err(e.into()),
        };
        let stat = nix::sys::stat::fstat(&fd)?;
        if !is_regular(&stat) {
            return Err(not_regular(kind(&stat)));
        }
        Ok(File::from(fd))
    }

    /// Replaces the entry `name` with `bytes` at once, as [`replace`] does: through a new
    /// temporary file (created exclusively, under a name nobody can guess), renamed over it.
    /// A link in its place is replaced, never written through.
    pub fn replace(&self, name: &str, bytes: &[u8], mode: u32) -> io::Result<()> {
        let flags = OFlag::O_WRONLY
            | OFlag::O_CREAT
            | OFlag::O_EXCL
            | OFlag::O_NOFOLLOW
            | OFlag::O_NOCTTY
            | OFlag::O_CLOEXEC;
        let temp = format!(".retry-{}", uuid::Uuid::new_v4().simple());
        let fd = nix::fcntl::openat(
            &self.fd,
            temp.as_str(),
            flags,
            Mode::from_bits_truncate(mode),
        )?;
        let written = File::from(fd).write_all(bytes).and_then(|()| {
            Ok(nix::fcntl::renameat(
                &self.fd,
                temp.as_str(),
                &self.fd,
                name,
            )?)
        });
        if written.is_err() {
            let _ = nix::unistd::unlinkat(&self.fd, temp.as_str(), UnlinkatFlags::NoRemoveDir);
        }
        written
    }

    /// Renames the entry `from` to `to`, which must not exist: `Err` with
    /// [`io::ErrorKind::AlreadyExists`] if it does. The entry is moved as it is (a link, a
    /// directory), never followed.
    pub fn rename_new(&self, from: &str, to: &str) -> io::Result<()> {
        #[cfg(all(target_os = "linux", not(retry_portable)))]
        {
            use nix::fcntl::RenameFlags;
            match nix::fcntl::renameat2(&self.fd, from, &self.fd, to, RenameFlags::RENAME_NOREPLACE)
            {
                Ok(()) => return Ok(()),
                // A file system without RENAME_NOREPLACE: look first, as below.
                Err(Errno::EINVAL) => {}
                Err(e) => return Err(e.into()),
            }
        }
        // The caller holds a lock that every process renaming here holds too.
        match self.entry(to)? {
            Some(_) => Err(io::ErrorKind::AlreadyExists.into()),
            None => Ok(nix::fcntl::renameat(&self.fd, from, &self.fd, to)?),
        }
    }

    /// Removes the entry `name` (an empty directory too); `false` when there was none.
    pub fn remove(&self, name: &str) -> io::Result<bool> {
        let how = match self.entry(name)? {
            None => return Ok(false),
            Some(stat) if stat.st_mode & SFlag::S_IFMT.bits() == SFlag::S_IFDIR.bits() => {
                UnlinkatFlags::RemoveDir
            }
            Some(_) => UnlinkatFlags::NoRemoveDir,
        };
        match nix::unistd::unlinkat(&self.fd, name, how) {
            Ok(()) => Ok(true),
            Err(Errno::ENOENT) => Ok(false),
            Err(e) => Err(e.into()),
        }
    }
}

fn not_regular(kind: &'static str) -> io::Error {
    refusal(
        io::ErrorKind::Other,
        format!("it is {kind}, not a regular file"),
    )
}

/// The effective user id retry runs as.
pub fn euid() -> u32 {
    nix::unistd::geteuid().as_raw()
}

/// Whether this user may create files in the directory `path` (write and search permission),
/// as the kernel would decide.
pub fn can_enter_and_write(path: &Path) -> io::Result<()> {
    use nix::unistd::{AccessFlags, access};
    access(path, AccessFlags::W_OK | AccessFlags::X_OK).map_err(io::Error::from)
}

/// `path` with its symlinks followed, and whether it is a regular file or none.
pub fn resolve(path: &Path) -> io::Result<(PathBuf, bool)> {
    let mut at = path.to_path_buf();
    // As many links as the kernel follows (MAXSYMLINKS).
    for _ in 0..40 {
        match fs::symlink_metadata(&at) {
            Ok(meta) if meta.file_type().is_symlink() => {
                let to = fs::read_link(&at)?;
                at = match at.parent() {
                    Some(dir) => dir.join(to),
                    None => to,
                };
            }
            Ok(meta) if meta.is_dir() => {
                return Err(refusal(io::ErrorKind::IsADirectory, "it is a directory"));
            }
            Ok(meta) => return Ok((at, meta.is_file())),
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok((at, true)),
            Err(e) => return Err(e),
        }
    }
    Err(io::Error::from_raw_os_error(nix::libc::ELOOP))
}

/// The descriptor a path names that is one of retry's own open descriptors: `/dev/stdin`,
/// `/dev/stdout`, `/dev/stderr`, `/dev/fd/N`, `/proc/self/fd/N`. Reopening such a path would
/// fail for a pipe or a socket (Linux's /proc link names no file), and for a file opened for
/// appending (`2>> cron.log`) would truncate or replace it: the descriptor is written instead.
pub fn descriptor(path: &Path) -> Option<i32> {
    let text = path.to_str()?;
    match text {
        "/dev/stdin" => return Some(0),
        "/dev/stdout" => return Some(1),
        "/dev/stderr" => return Some(2),
        _ => {}
    }
    let n = text
        .strip_prefix("/dev/fd/")
        .or_else(|| text.strip_prefix("/proc/self/fd/"))?;
    if n.is_empty() || !n.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    n.parse().ok()
}

/// Writes `bytes` to retry's open descriptor `fd` where it stands (at the end, for a file
/// opened for appending), waiting for a slow reader; the descriptor stays open.
pub fn write_to_descriptor(fd: i32, bytes: &[u8]) -> io::Result<()> {
    // Checked before it is borrowed: a descriptor that is not open is an error, not a write
    // into whatever retry opens next.
    nix::fcntl::fcntl(
        // SAFETY: only read by fcntl; an fd that is not open makes it fail with EBADF.
        unsafe { std::os::fd::BorrowedFd::borrow_raw(fd) },
        nix::fcntl::FcntlArg::F_GETFD,
    )?;
    // SAFETY: the descriptor is open (F_GETFD succeeded) and stays open while it is written:
    // retry closes none of its own descriptors meanwhile.
    let fd = unsafe { std::os::fd::BorrowedFd::borrow_raw(fd) };
    let mut rest = bytes;
    while !rest.is_empty() {
        match nix::unistd::write(fd, rest) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(n) => rest = &rest[n..],
            Err(nix::errno::Errno::EINTR) => {}
            Err(nix::errno::Errno::EAGAIN) => {
                let mut fds = [nix::poll::PollFd::new(fd, nix::poll::PollFlags::POLLOUT)];
                let _ = nix::poll::poll(&mut fds, nix::poll::PollTimeout::NONE);
            }
            Err(e) => return Err(e.into()),
        }
    }
    Ok(())
}

/// The system's words for an error (`No space left on device`), without the path or the
/// `(os error N)` that std and tempfile add.
pub fn why(e: &io::Error) -> String {
    match e.raw_os_error() {
        Some(code) => nix::errno::Errno::from_raw(code).desc().to_string(),
        None => e.kind().to_string(),
    }
}

/// Writes into a device or a FIFO as it is, without waiting for a FIFO's reader.
pub fn write_in_place(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let mut file = open_without_waiting(fs::OpenOptions::new().write(true), path)?;
    file.write_all(bytes)
}

/// Opens `path` to append to it, creating it (mode 0666 less the umask) if it is not there,
/// without waiting for the reader of a FIFO: one that no process reads is refused (a FIFO
/// that is read is written as a file is).
pub fn open_append(path: &Path) -> io::Result<File> {
    open_without_waiting(OpenOptions::new().create(true).append(true), path)
}

/// Opens `path` as `options` say, for writing, without waiting for a FIFO's reader: one that
/// no process reads is refused in retry's words; the file's writes wait as any file's do.
fn open_without_waiting(options: &mut OpenOptions, path: &Path) -> io::Result<File> {
    let file = options
        .custom_flags(nix::libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| match e.raw_os_error() {
            Some(nix::libc::ENXIO) => {
                refusal(io::ErrorKind::Other, "it is a FIFO that no process reads")
            }
            _ => e,
        })?;
    let flags = nix::fcntl::fcntl(&file, nix::fcntl::FcntlArg::F_GETFL)?;
    let flags = OFlag::from_bits_truncate(flags) - OFlag::O_NONBLOCK;
    nix::fcntl::fcntl(&file, nix::fcntl::FcntlArg::F_SETFL(flags))?;
    Ok(file)
}

/// Makes a FIFO at `path`, readable and writable by its owner: for tests of what retry does
/// when one is planted where it expects a file.
#[cfg(test)]
pub fn make_fifo(path: &Path) -> io::Result<()> {
    Ok(nix::unistd::mkfifo(path, Mode::from_bits_truncate(0o600))?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_replaced_in_a_missing_folder_is_the_systems_error_without_the_temporary_name() {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let e = replace(&dir.path().join("gone").join("f"), b"new", 0o644, false)
            .expect_err("no folder");
        assert_eq!(e.raw_os_error(), Some(nix::libc::ENOENT));
        assert!(!e.to_string().contains(".retry-"), "{e}");
    }

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
        let held = lock(&path, 0o600, Duration::ZERO).expect("locked");
        assert!(matches!(
            lock(&path, 0o600, Duration::from_millis(5)),
            Err(LockError::Busy)
        ));
        drop(held);
        // retry's own lock files, in a directory it opened: a link planted there is refused.
        let target = dir.path().join("target");
        std::os::unix::fs::symlink(&target, dir.path().join("planted.lock")).expect("linked");
        let opened = Dir::open(dir.path()).expect("opened");
        assert!(opened.lock_file("planted.lock", 0o600).is_err());
        // Nor does a lock beside a file the user named (the metrics' sidecar) follow one, or
        // wait for a FIFO's reader.
        assert!(lock(&dir.path().join("planted.lock"), 0o600, Duration::ZERO).is_err());
        assert!(!target.exists(), "nothing is created through the link");
        let fifo = dir.path().join("fifo.lock");
        make_fifo(&fifo).expect("a FIFO");
        assert!(lock(&fifo, 0o600, Duration::ZERO).is_err());
    }
}
