//! A Ctrl-C typed at the terminal goes to the terminal's foreground process group: while an
//! attempt holds the terminal, that is the attempt's group, not retry's, so retry itself
//! receives nothing, and a command that catches SIGINT and exits 1 would look like an ordinary
//! failure and be retried. The watcher is a small process that retry forks into the attempt's
//! group when it hands it the terminal: the terminal's SIGINT and SIGQUIT reach it with the
//! rest of the group, and it only reports them to retry through a pipe. It does nothing else:
//! it holds no descriptor but that pipe's end, never stops on the terminal's job-control
//! signals, and ends on SIGTERM, SIGHUP or SIGKILL (a timeout's signal reaches it with the
//! group). Only an attempt that holds the terminal gets one: under cron, in CI or in a pipe it
//! costs nothing.

use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};

use nix::libc;
use nix::sys::signal::{SigSet, SigmaskHow, Signal, kill, pthread_sigmask};
use nix::sys::wait::waitpid;
use nix::unistd::{ForkResult, Pid, fork, setpgid};

/// The watcher of one attempt's group.
pub struct Watcher {
    pid: Pid,
    report: OwnedFd,
    /// Already reaped (by a retry that reaps orphans with `waitpid(-1)`): its pid is not to
    /// be signalled or waited for again.
    reaped: bool,
}

/// What the watcher writes for each signal it saw.
const INT: u8 = b'I';
const QUIT: u8 = b'Q';

impl Watcher {
    /// Starts a watcher in `group`, the attempt's process group, which holds the terminal;
    /// `None` when it cannot be started (the run goes on, with only an attempt's end by the
    /// signal to tell a Ctrl-C by).
    pub fn start(group: Pid) -> Option<Watcher> {
        let (report, write) = super::pipe::pipe(true).ok()?;
        // The signals the watcher takes are blocked across the fork, so that the child never
        // runs retry's handlers: one that arrives early waits for its sigwait. retry's own are
        // unblocked again at once, and one that arrived meanwhile is delivered then.
        let mut watched = SigSet::empty();
        for sig in [
            Signal::SIGINT,
            Signal::SIGQUIT,
            Signal::SIGTERM,
            Signal::SIGHUP,
        ] {
            watched.add(sig);
        }
        let mut before = SigSet::empty();
        pthread_sigmask(SigmaskHow::SIG_BLOCK, Some(&watched), Some(&mut before)).ok()?;
        // SAFETY: retry may have other threads here: a store connection's helper, left behind
        // when its name lookup or connect outlived the deadline (state/connect.rs), and
        // --stop-with-parent's polling thread where there is no parent-death signal
        // (platform/parent.rs). The child is a copy of this thread alone, with every lock and
        // allocator state those threads held frozen as it was, so it must take no lock and
        // allocate nothing: from the fork to its _exit it runs only `watch`, whose calls are
        // async-signal-safe or plain system calls, on values of its own stack and this one's.
        let forked = unsafe { fork() };
        if !matches!(forked, Ok(ForkResult::Child)) {
            let _ = pthread_sigmask(SigmaskHow::SIG_SETMASK, Some(&before), None);
        }
        match forked.ok()? {
            ForkResult::Child => watch(group, write.as_raw_fd()),
            ForkResult::Parent { child } => {
                // Both sides set the group, as a shell does: whichever runs first, the
                // watcher is in it before it matters.
                let _ = setpgid(child, group);
                Some(Watcher {
                    pid: child,
                    report,
                    reaped: false,
                })
            }
        }
    }

    /// The pipe that becomes readable when the watcher saw a signal.
    pub fn fd(&self) -> BorrowedFd<'_> {
        self.report.as_fd()
    }

    /// The first signal the watcher saw since last asked: SIGINT or SIGQUIT.
    pub fn typed(&mut self) -> Option<i32> {
        let mut buf = [0u8; 16];
        let mut seen = None;
        while let Ok(n) = nix::unistd::read(&self.report, &mut buf) {
            if n == 0 {
                break;
            }
            seen = seen.or(buf[..n].iter().find_map(|b| match *b {
                INT => Some(Signal::SIGINT as i32),
                QUIT => Some(Signal::SIGQUIT as i32),
                _ => None,
            }));
        }
        seen
    }

    /// The watcher's process.
    pub fn pid(&self) -> Pid {
        self.pid
    }

    /// The watcher was reaped by someone else than [`Watcher::stop`].
    pub fn reaped(&mut self) {
        self.reaped = true;
    }

    /// Ends the watcher and reaps it; returns what it saw that was not asked for yet. A
    /// signal the terminal sent before is reported first: the watcher takes pending signals
    /// lowest first, and SIGINT and SIGQUIT come before SIGTERM.
    pub fn stop(mut self) -> Option<i32> {
        if !self.reaped {
            let _ = kill(self.pid, Signal::SIGTERM);
            let _ = waitpid(self.pid, None);
        }
        self.typed()
    }
}

/// The watcher itself, in the forked child: joins the group, keeps only the pipe's end, and
/// reports each SIGINT and SIGQUIT until SIGTERM or SIGHUP ends it.
fn watch(group: Pid, report: i32) -> ! {
    // SAFETY: this runs in a forked child of a process that may have had other threads
    // (see `Watcher::start`), so it takes no lock and allocates nothing. Its calls are
    // async-signal-safe (setpgid, signal, sigemptyset, sigaddset, sigprocmask, dup2, close,
    // write, _exit), or system calls that POSIX does not list as such but which glibc and
    // musl make as one system call, touching no lock (sigwait, and close_from_1's close_range
    // and sysconf), on values of this function's own stack.
    unsafe {
        libc::setpgid(0, group.as_raw());
        for sig in [libc::SIGTSTP, libc::SIGTTIN, libc::SIGTTOU] {
            libc::signal(sig, libc::SIG_IGN);
        }
        let mut set = std::mem::MaybeUninit::<libc::sigset_t>::uninit();
        libc::sigemptyset(set.as_mut_ptr());
        for sig in [libc::SIGINT, libc::SIGQUIT, libc::SIGTERM, libc::SIGHUP] {
            libc::sigaddset(set.as_mut_ptr(), sig);
        }
        libc::sigprocmask(libc::SIG_BLOCK, set.as_ptr(), std::ptr::null_mut());
        // Nothing of retry's is held open: not the attempt's pipes, not the terminal.
        if libc::dup2(report, 0) == 0 {
            close_from_1();
        } else {
            libc::_exit(1);
        }
        loop {
            let mut sig = 0;
            if libc::sigwait(set.as_ptr(), &mut sig) != 0 {
                continue;
            }
            let byte = match sig {
                libc::SIGINT => INT,
                libc::SIGQUIT => QUIT,
                _ => libc::_exit(0),
            };
            libc::write(0, (&byte as *const u8).cast(), 1);
        }
    }
}

/// Closes every descriptor from 1 up, in the forked watcher: close_range(2) on Linux, else
/// one by one up to the descriptor limit.
fn close_from_1() {
    #[cfg(all(target_os = "linux", not(retry_portable)))]
    // SAFETY: close_range is a system call on integers, async-signal-safe.
    if unsafe { libc::syscall(libc::SYS_close_range, 1u32, u32::MAX, 0u32) } == 0 {
        return;
    }
    // SAFETY: sysconf and close are async-signal-safe and take plain integers.
    let most = unsafe { libc::sysconf(libc::_SC_OPEN_MAX) };
    let most = if most > 0 {
        most.min(65_536) as i32
    } else {
        1024
    };
    for fd in 1..most {
        // SAFETY: as above; closing a descriptor that is not open fails harmlessly.
        unsafe { libc::close(fd) };
    }
}
