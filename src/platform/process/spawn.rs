//! How an attempt is started: posix_spawn with its argument vector and environment, in a
//! process group of its own, its
//! standard streams in place; and why it could not be, in a shell's words.

use std::ffi::CString;
use std::io;
use std::os::fd::AsRawFd;

use nix::errno::Errno;
use nix::fcntl::OFlag;
use nix::spawn::{PosixSpawnAttr, PosixSpawnFileActions, PosixSpawnFlags, posix_spawnp};
use nix::sys::signal::SigSet;
use nix::sys::stat::Mode;
use nix::unistd::Pid;

use crate::env;
use crate::platform::child_fd::ChildFd;
use crate::platform::world::OneString;

/// posix_spawn with the attempt's standard streams in place.
pub(super) fn launch(
    program: &CString,
    attr: &PosixSpawnAttr,
    argv: &[CString],
    envp: &[CString],
    stdio: [io::Result<ChildFd>; 3],
) -> nix::Result<Pid> {
    let mut actions = PosixSpawnFileActions::init()?;
    let mut keep = Vec::new();
    for (target, fd) in (0..).zip(stdio) {
        match fd.map_err(|e| e.raw_os_error().map_or(Errno::EIO, Errno::from_raw))? {
            ChildFd::Inherit => {}
            ChildFd::Null => actions.add_open(target, "/dev/null", OFlag::O_RDWR, Mode::empty())?,
            ChildFd::Pipe(fd) => {
                actions.add_dup2(fd.as_raw_fd(), target)?;
                // The parent's copy closes once the child has its own.
                keep.push(fd);
            }
        }
    }
    posix_spawnp(program, &actions, attr, argv, envp)
}

/// `NAME=value`, as the environment holds it.
pub(super) fn entry(name: &[u8], value: &[u8]) -> nix::Result<CString> {
    // Room for the NUL too, which CString::new adds.
    let mut bytes = Vec::with_capacity(name.len() + value.len() + 2);
    bytes.extend_from_slice(name);
    bytes.push(b'=');
    bytes.extend_from_slice(value);
    CString::new(bytes).map_err(|_| Errno::EINVAL)
}

/// How every attempt starts: in a process group of its own (so that a timeout or a forwarded
/// signal reaches every process it starts), with the signal mask retry was started with (as if
/// retry were not there), and SIGPIPE and SIGXFSZ back to the dispositions retry found at
/// start, which an exec would otherwise keep ignored
/// ([`defaults_for_child`](crate::platform::signals::defaults_for_child)).
pub(super) fn spawn_attributes(mask: &SigSet) -> nix::Result<PosixSpawnAttr> {
    let mut attr = PosixSpawnAttr::init()?;
    attr.set_flags(
        PosixSpawnFlags::POSIX_SPAWN_SETPGROUP
            | PosixSpawnFlags::POSIX_SPAWN_SETSIGMASK
            | PosixSpawnFlags::POSIX_SPAWN_SETSIGDEF,
    )?;
    attr.set_pgroup(Pid::from_raw(0))?;
    attr.set_sigmask(mask)?;
    attr.set_sigdefault(&crate::platform::signals::defaults_for_child())?;
    Ok(attr)
}

/// An argument with `{hints}` replaced by the attempt's hint file.
pub(super) fn with_hint_file(arg: &[u8], path: &[u8]) -> nix::Result<CString> {
    const PLACEHOLDER: &[u8] = env::HINTS.as_bytes();
    let mut out = Vec::with_capacity(arg.len());
    let mut rest = arg;
    while let Some(at) = rest
        .windows(PLACEHOLDER.len())
        .position(|w| w == PLACEHOLDER)
    {
        out.extend_from_slice(&rest[..at]);
        out.extend_from_slice(path);
        rest = &rest[at + PLACEHOLDER.len()..];
    }
    out.extend_from_slice(rest);
    CString::new(out).map_err(|_| Errno::EINVAL)
}

/// Why `program` could not be started, in a shell's words: `command not found` for a name
/// not on PATH, `Is a directory` for a directory, else the system's words for `errno`.
pub(super) fn spawn_failure(program: &std::ffi::OsStr, errno: Errno) -> String {
    let path = std::path::Path::new(program);
    let named_by_path = program.as_encoded_bytes().contains(&b'/');
    match errno {
        Errno::ENOENT if !named_by_path => "command not found (no such file on PATH)".into(),
        Errno::EACCES if named_by_path && path.is_dir() => "Is a directory".into(),
        _ => errno.desc().into(),
    }
}

/// Whether `program`, which could not be started for want of a file (ENOENT), is a whole
/// command given as one argument: a name that holds spaces or shell syntax, and that no file
/// has where posix_spawnp looks (a file so named that exists is a script whose interpreter is
/// missing, which is no command line).
pub(super) fn one_string(program: &std::ffi::OsStr) -> Option<OneString> {
    let bytes = program.as_encoded_bytes();
    let shell = bytes.iter().any(|b| b"|&;<>()$`\\\"'*?[]".contains(b));
    let spaced = bytes.iter().any(u8::is_ascii_whitespace);
    // Spaces alone (`retry ' '`) are no command in one argument: there are no words to give.
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return None;
    }
    let how = match (shell, spaced) {
        (true, _) => OneString::ShellLine,
        (false, true) => OneString::Words,
        (false, false) => return None,
    };
    let exists = |path: &std::path::Path| path.symlink_metadata().is_ok();
    let found = if bytes.contains(&b'/') {
        exists(std::path::Path::new(program))
    } else {
        // As posix_spawnp searches: each folder of PATH, the current one for an empty entry.
        let path = std::env::var_os("PATH").unwrap_or_else(|| "/bin:/usr/bin".into());
        std::env::split_paths(&path).any(|dir| {
            let dir = if dir.as_os_str().is_empty() {
                std::path::PathBuf::from(".")
            } else {
                dir
            };
            exists(&dir.join(program))
        })
    };
    (!found).then_some(how)
}
