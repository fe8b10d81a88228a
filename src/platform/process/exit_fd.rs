//! An attempt's end as a descriptor (Linux's pidfd_open, 5.3 and later): readable once the
//! process has ended, so that the loop's one `ppoll` learns of it without SIGCHLD, its
//! handler, the self-pipe's write and read and a `wait4` that finds nothing yet.

use std::os::fd::{FromRawFd, OwnedFd};

use nix::libc;
use nix::unistd::Pid;

/// A descriptor that becomes readable when `pid`, a child of retry's, ends; `None` where the
/// kernel has no pidfd_open (or a sandbox refuses it), and SIGCHLD must tell instead.
pub(super) fn open(pid: Pid) -> Option<OwnedFd> {
    // SAFETY: pidfd_open takes a pid and flags (none) and returns a new descriptor or -1; no
    // memory is passed.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid.as_raw(), 0) };
    let fd = libc::c_int::try_from(fd).ok().filter(|fd| *fd >= 0)?;
    // SAFETY: the descriptor was just made for retry, close-on-exec (as every pidfd is), and
    // nothing else owns it.
    Some(unsafe { OwnedFd::from_raw_fd(fd) })
}
