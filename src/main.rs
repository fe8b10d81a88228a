//! retry's entry point. Not std's: its runtime set-up before `main` (a stack-overflow handler,
//! which reads /proc/self/maps and maps an alternate signal stack) is a tenth of what a run of
//! `retry -- true` costs itself; the two things of it that retry relies on are done here.
#![no_main]

use std::ffi::{CStr, OsString, c_char, c_int};
use std::os::unix::ffi::OsStringExt;

/// Small allocations come from an arena in retry's own data (see `retry::arena`).
#[global_allocator]
static ALLOCATOR: retry::arena::Arena<ARENA> = retry::arena::Arena::new();

/// The arena's size: room for the small pieces of a run's start-up (19 KiB for `retry --
/// true`, 24 KiB for three failing attempts) and then some.
const ARENA: usize = 64 * 1024;

#[unsafe(no_mangle)]
extern "C" fn main(argc: c_int, argv: *const *const c_char) -> c_int {
    startup();
    let count = usize::try_from(argc).unwrap_or(0);
    let args = (0..count).filter_map(|i| {
        // SAFETY: the C runtime passes `argc` pointers in `argv`, each null or a C string that
        // lives as long as the process.
        let arg = unsafe { *argv.add(i) };
        // SAFETY: as above, a non-null `arg` is a NUL-terminated string.
        (!arg.is_null())
            .then(|| OsString::from_vec(unsafe { CStr::from_ptr(arg) }.to_bytes().to_vec()))
    });
    retry::run(args).exit()
}

/// What std's runtime would have done, and retry needs: a write to a closed pipe is an error
/// (EPIPE), not the end of retry; and file descriptors 0, 1 and 2 are open, so that no pipe or
/// file of retry's takes one of their numbers (std opens /dev/null on a closed one, too).
fn startup() {
    use nix::libc;
    // SAFETY: setting a signal's disposition to SIG_IGN installs no handler code.
    unsafe { libc::signal(libc::SIGPIPE, libc::SIG_IGN) };
    let mut fds = [0, 1, 2].map(|fd| libc::pollfd {
        fd,
        events: 0,
        revents: 0,
    });
    // SAFETY: poll on a valid array of three pollfd, with no wait.
    if unsafe { libc::poll(fds.as_mut_ptr(), 3, 0) } < 0 {
        return;
    }
    for fd in fds {
        if fd.revents & libc::POLLNVAL != 0 {
            // SAFETY: opening /dev/null with a NUL-terminated path; the lowest free number,
            // which is this one, is taken and kept for the life of the process.
            unsafe { libc::open(c"/dev/null".as_ptr(), libc::O_RDWR) };
        }
    }
}
