//! Ending the process as an [`Exit`] says: with a status, or by a signal re-raised on retry
//! itself.

use std::io::Write;

use nix::libc;
use nix::sys::resource::{Resource, setrlimit};

use crate::exit::Exit;

impl Exit {
    /// Ends retry: by the signal, where it is one (so that a shell sees what it would have
    /// seen without retry), else, or where that is impossible, with the status.
    pub fn exit(self) -> ! {
        if let Exit::Signal(sig) = self {
            let _ = std::io::stdout().flush();
            raise_default(sig);
        }
        // Flushes std's stdout, if anything made it (not `io::stdout()`, which would make its
        // buffer to flush nothing).
        std::process::exit(self.status())
    }
}

/// Dies by `sig` with its default action, without a core dump; returns if that is impossible.
/// Real-time signals are raised too, so libc is called directly: nix names only the others.
fn raise_default(sig: i32) {
    // The core would be retry's, not the child's: the child has already dumped its own.
    let _ = setrlimit(Resource::RLIMIT_CORE, 0, 0);
    // SAFETY: restoring the default disposition installs no handler code, and the set is
    // initialised by sigemptyset before use; the process is about to end by that very signal.
    // An invalid number, or SIGKILL and SIGSTOP, make these calls fail harmlessly.
    unsafe {
        libc::signal(sig, libc::SIG_DFL);
        let mut set = std::mem::MaybeUninit::<libc::sigset_t>::uninit();
        libc::sigemptyset(set.as_mut_ptr());
        libc::sigaddset(set.as_mut_ptr(), sig);
        libc::sigprocmask(libc::SIG_UNBLOCK, set.as_ptr(), std::ptr::null_mut());
        libc::raise(sig);
    }
}
