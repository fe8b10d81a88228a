//! `--stop-with-parent`: the end of retry's parent, taken as a SIGTERM that arrived
//! ([`signals::parent_gone`]), so that the run is cancelled by the path a SIGTERM takes.
//!
//! A parent is gone when retry's parent is no longer the one it had at its start
//! ([`remember`]): the kernel has given retry to init or to a subreaper. On Linux the kernel
//! says so at once, by the parent-death signal (PR_SET_PDEATHSIG); elsewhere, and in the
//! portable build, a thread of retry's own looks every [`POLL`]. Neither exists without the
//! flag.

use std::io;
use std::sync::atomic::{AtomicI32, Ordering};
use std::time::Duration;

use nix::libc;

use super::signals;

/// How often the parent is looked at where no signal tells of its end.
const POLL: Duration = Duration::from_millis(50);

/// retry's parent at its start; 0 before [`remember`].
static PARENT: AtomicI32 = AtomicI32::new(0);

/// Notes retry's parent, as early as retry can: a parent that ends after this is seen to end.
/// One that ended before left retry to init already, and nothing tells it from a parent that
/// let retry go on purpose (`setsid -f`).
pub fn remember() {
    // SAFETY: getppid has no preconditions and cannot fail.
    PARENT.store(unsafe { libc::getppid() }, Ordering::SeqCst);
}

/// Whether the parent retry started with has ended. Async-signal-safe.
fn gone() -> bool {
    // SAFETY: as in `remember`; getppid is async-signal-safe.
    let now = unsafe { libc::getppid() };
    now != PARENT.load(Ordering::SeqCst)
}

/// From now on, the end of retry's parent cancels the run as a SIGTERM does; at once if it
/// has already ended. Call once, after [`signals::Signals::install`].
pub fn watch() -> io::Result<()> {
    #[cfg(all(target_os = "linux", not(retry_portable)))]
    if by_signal()? {
        return Ok(());
    }
    by_polling()
}

/// The signal the kernel sends retry when its parent ends: one retry has no other use for,
/// since the kernel also sends it when the *thread* that started retry ends while its process
/// goes on (a runner written in Java or .NET may start commands from a pool thread), which no
/// SIGTERM could be told from. Its handler looks whether the parent changed.
#[cfg(all(target_os = "linux", not(retry_portable)))]
fn notice() -> libc::c_int {
    libc::SIGRTMIN() + 1
}

/// Asks the kernel for [`notice`] when the parent ends; false (nothing done) where that signal
/// was ignored at retry's start, which a handler would undo for the command too.
#[cfg(all(target_os = "linux", not(retry_portable)))]
fn by_signal() -> io::Result<bool> {
    let notice = notice();
    if signals::number_ignored_at_start(notice) {
        return Ok(false);
    }
    // SAFETY: the action makes one getppid call and, at most, stores a flag and writes a
    // byte to a pipe (`parent_gone`): all async-signal-safe.
    unsafe {
        signal_hook::low_level::register(notice, || {
            if gone() {
                signals::parent_gone();
            }
        })
    }?;
    // SAFETY: PR_SET_PDEATHSIG takes a signal number, and the unused arguments are 0.
    if unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, notice as libc::c_ulong, 0, 0, 0) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // A parent that ended before the kernel was asked sent nothing: looked at once, after.
    if gone() {
        signals::parent_gone();
    }
    Ok(true)
}

/// Looks at the parent every [`POLL`] on a thread of its own, which stops once it has told of
/// its end. The thread starts with every signal blocked, so that the handled signals keep
/// going to the thread that waits for them.
fn by_polling() -> io::Result<()> {
    let spawned = signals::without_signals(|| {
        std::thread::Builder::new()
            .name("parent".into())
            // It calls getppid and sleeps: the least stack std allows is plenty.
            .stack_size(64 * 1024)
            .spawn(|| {
                while !gone() {
                    std::thread::sleep(POLL);
                }
                signals::parent_gone();
            })
    })?;
    spawned.map(drop)
}
