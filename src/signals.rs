//! Signals that reach retry, turned into events of the attempt loop: each handler counts its
//! signal and wakes the loop through a self-pipe, and SIGCHLD wakes it when an attempt ends.

use std::io::{self, Read};
use std::os::fd::{AsFd, BorrowedFd};
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicUsize, Ordering};

use nix::sys::signal::Signal;

/// The signals retry handles: the first four cancel the run, the others are only passed on.
pub const HANDLED: [Signal; 7] = [
    Signal::SIGINT,
    Signal::SIGTERM,
    Signal::SIGHUP,
    Signal::SIGQUIT,
    Signal::SIGUSR1,
    Signal::SIGUSR2,
    Signal::SIGWINCH,
];

/// How many times each of `HANDLED` has arrived. Counting, rather than a flag, is what lets a
/// second Ctrl-C be told from the first even when both arrive before the loop looks.
static ARRIVED: [AtomicUsize; HANDLED.len()] = [const { AtomicUsize::new(0) }; HANDLED.len()];

/// The receiving end of retry's signal handlers.
pub struct Signals {
    wake: UnixStream,
    seen: [usize; HANDLED.len()],
}

impl Signals {
    /// Installs the handlers. From here on, the handled signals no longer end retry: the loop
    /// decides what each one does.
    pub fn install() -> io::Result<Signals> {
        let (wake, write) = UnixStream::pair()?;
        wake.set_nonblocking(true)?;
        for (i, signal) in HANDLED.iter().enumerate() {
            let count = &ARRIVED[i];
            // SAFETY: the action only increments an atomic, which is async-signal-safe. It is
            // registered before the pipe write, and actions run in the order registered, so the
            // loop never wakes to find the count not yet raised.
            unsafe {
                signal_hook::low_level::register(*signal as i32, move || {
                    count.fetch_add(1, Ordering::SeqCst);
                })
            }?;
            signal_hook::low_level::pipe::register(*signal as i32, write.try_clone()?)?;
        }
        signal_hook::low_level::pipe::register(Signal::SIGCHLD as i32, write)?;
        let seen = std::array::from_fn(|i| ARRIVED[i].load(Ordering::SeqCst));
        Ok(Signals { wake, seen })
    }

    /// Readable when a signal may have arrived.
    pub fn fd(&self) -> BorrowedFd<'_> {
        self.wake.as_fd()
    }

    /// Empties the self-pipe; call before looking at what arrived, so no wake-up is lost.
    pub fn drain(&mut self) {
        let mut buf = [0u8; 64];
        while matches!((&self.wake).read(&mut buf), Ok(n) if n > 0) {}
    }

    /// The next signal that arrived and was not yet taken, one arrival at a time.
    pub fn take(&mut self) -> Option<i32> {
        for (i, signal) in HANDLED.iter().enumerate() {
            if ARRIVED[i].load(Ordering::SeqCst) > self.seen[i] {
                self.seen[i] += 1;
                return Some(*signal as i32);
            }
        }
        None
    }
}
