//! What a process needs before retry's own code runs, done by retry itself: its entry point is
//! the C library's `main` (src/main.rs), not std's runtime start, which on Linux also reads
//! /proc/self/maps through `pthread_getattr_np` (sscanf over every mapping, an eighth of the
//! instructions of a run of `retry -- /bin/true`; docs/performance.md) and maps an alternate signal stack, only to
//! print "has overflowed its stack" before a stack overflow's SIGSEGV.
//!
//! Of std's start, retry relies on two things, done here as std does them (tests/it/cli/child.rs
//! checks each): SIGPIPE is ignored, and descriptors 0, 1 and 2 are open.

use std::os::fd::{IntoRawFd, RawFd};

use nix::libc;
use nix::sys::signal::{SigHandler, Signal, signal};

/// Does what std's runtime start would have done for retry. Harmless where it already has.
pub fn as_std_would() {
    ignore_broken_pipe();
    open_standard_descriptors();
}

/// A write to a pipe whose reader has gone is then an error retry handles (EPIPE), not the
/// end of retry; the command and the hooks start with SIGPIPE's default action
/// (`signals::defaults_for_child`), as std's own `Command` gives it.
fn ignore_broken_pipe() {
    // SAFETY: SIG_IGN installs no handler code; no other thread exists yet.
    let _ = unsafe { signal(Signal::SIGPIPE, SigHandler::SigIgn) };
}

/// Opens /dev/null on each of descriptors 0, 1 and 2 that is closed, so that no pipe or file
/// retry opens takes its number: a log file opened as descriptor 1 would be the command's
/// stdout. As std does, a process that cannot have them is aborted.
fn open_standard_descriptors() {
    for fd in 0..3 {
        // SAFETY: F_GETFD only reads the descriptor's flags, and fails with EBADF on a
        // number that is not open; nix asks for a descriptor known to be open.
        let closed = unsafe { libc::fcntl(fd, libc::F_GETFD) } == -1;
        if closed && open_dev_null() != Some(fd) {
            std::process::abort();
        }
    }
}

/// /dev/null, opened for reading and writing and kept open for the life of the process: its
/// descriptor, the lowest free one.
fn open_dev_null() -> Option<RawFd> {
    std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/null")
        .ok()
        .map(IntoRawFd::into_raw_fd)
}
