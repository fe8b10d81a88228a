//! Signals that reach retry, turned into events of the attempt loop: each handler, registered
//! with signal-hook, counts its signal and wakes the loop through a self-pipe, and SIGCHLD,
//! where it is watched, wakes it when an attempt ends. On Linux an attempt's end is learned
//! otherwise, and SIGCHLD is watched only where a child's stop or an orphan's end matters too,
//! or a hook runs: when the attempt's end and the signals are all the loop waits for, they are
//! blocked while it runs and taken with `sigtimedwait` ([`Signals::block`]); when it also
//! waits for stdin or the attempt's output, from a process descriptor (process/exit_fd.rs).

use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicUsize, Ordering};

use nix::libc;
use nix::sys::signal::{SigHandler, SigSet, SigmaskHow, Signal, pthread_sigmask};

/// The signals retry handles: the first four cancel the run, the next three are only passed
/// on, and SIGTSTP (Ctrl-Z at the terminal, while retry's group holds it) suspends the run:
/// the attempt, then retry, after the countdown is cleared.
pub const HANDLED: [Signal; 8] = [
    Signal::SIGINT,
    Signal::SIGTERM,
    Signal::SIGHUP,
    Signal::SIGQUIT,
    Signal::SIGUSR1,
    Signal::SIGUSR2,
    Signal::SIGWINCH,
    Signal::SIGTSTP,
];

/// How many times each of `HANDLED` has arrived. Counting, rather than a flag, is what lets a
/// second Ctrl-C be told from the first even when both arrive before the loop looks.
static ARRIVED: [AtomicUsize; HANDLED.len()] = [const { AtomicUsize::new(0) }; HANDLED.len()];

/// Whether a signal that cancels the run has arrived since the handlers were installed (taken
/// or not): what ends a wait that is not the loop's own (the key's lock) at once. Not for a
/// signal handler: it settles the parent's end ([`parent_gone`]).
pub fn cancelling_arrived() -> bool {
    settle_parent();
    cancel_counted()
}

/// How many signals that cancel the run have arrived so far: a wait that began with this many
/// ends once there are more, so that a cancel arriving during it is answered at once, while a
/// call made after the run was cancelled (its state saved at the end) still gets its time.
pub fn cancels_so_far() -> usize {
    settle_parent();
    HANDLED
        .iter()
        .zip(&ARRIVED)
        .filter(|(signal, _)| crate::policy::status::cancels(**signal as i32))
        .map(|(_, count)| count.load(Ordering::SeqCst))
        .sum()
}

/// [`cancelling_arrived`] as the counts stand. Async-signal-safe.
fn cancel_counted() -> bool {
    HANDLED.iter().zip(&ARRIVED).any(|(signal, count)| {
        crate::policy::status::cancels(*signal as i32) && count.load(Ordering::SeqCst) > 0
    })
}

/// The write end of the self-pipe, for the handler; -1 before it exists.
static WAKE: AtomicI32 = AtomicI32::new(-1);

/// What each handler does, run by signal-hook's handler: counts the signal (SIGCHLD is not
/// counted: an ended child is found by waiting for it), then wakes the loop. The count is
/// raised before the wake-up, so the loop never wakes to find it not yet raised. (signal-hook
/// keeps errno intact around it.)
fn on_signal(signal: libc::c_int) {
    count(signal);
    wake();
}

/// Wakes the loop, through the self-pipe. Async-signal-safe.
fn wake() {
    let fd = WAKE.load(Ordering::SeqCst);
    if fd >= 0 {
        // A full pipe already holds a wake-up; what was noted before it is what matters.
        // SAFETY: write(2) of one byte from a static buffer is async-signal-safe.
        let _ = unsafe { libc::write(fd, b"x".as_ptr().cast(), 1) };
    }
}

/// Counts `signal`'s arrival, if it is one of [`HANDLED`]. Async-signal-safe.
fn count(signal: libc::c_int) {
    if let Some(i) = HANDLED.iter().position(|s| *s as libc::c_int == signal) {
        ARRIVED[i].fetch_add(1, Ordering::SeqCst);
    }
}

/// retry's parent has ended, with `--stop-with-parent`: noted, and the loop woken, to count
/// it as a SIGTERM that arrived ([`settle_parent`]), so that the run ends as it ends on one,
/// by the same path, wherever it is (an attempt, a wait, the key's lock). Async-signal-safe:
/// a signal handler calls it.
pub fn parent_gone() {
    PARENT_NOTICE.store(true, Ordering::SeqCst);
    wake();
}

/// The parent's end, noted by [`parent_gone`] and not yet settled.
static PARENT_NOTICE: AtomicBool = AtomicBool::new(false);

/// Counts the parent's end noted by [`parent_gone`] as a SIGTERM, unless a signal that
/// cancels the run reached retry already: then the parent's end is part of that cancel. A
/// SIGTERM to a CI step's process group (GitLab's, systemd's) reaches retry and its shell at
/// once, and the shell's end follows; counted, it would be a SIGTERM *again*, which kills the
/// command at once instead of after `--kill-after`.
///
/// Settled here, outside any handler, because of the order handlers run in: when retry's
/// SIGTERM and the parent's notice are both pending (a loaded machine runs the shell's end
/// before retry's handler), the kernel takes the SIGTERM first but stacks the notice's
/// handler above it, so that the notice's handler runs first. Once code outside the
/// handlers runs, every signal taken with the notice has been counted.
fn settle_parent() {
    if PARENT_NOTICE.swap(false, Ordering::SeqCst) && !cancel_counted() {
        PARENT_GONE.store(true, Ordering::SeqCst);
        count(libc::SIGTERM);
    }
}

/// Set once retry's parent has ended (`--stop-with-parent`) and that end cancelled the run.
static PARENT_GONE: AtomicBool = AtomicBool::new(false);

/// Whether a cancel by `signal` stands for retry's parent having ended (a SIGTERM counted by
/// [`settle_parent`]), so that the log can say so rather than name a signal nobody sent.
pub fn from_parent(signal: i32) -> bool {
    signal == libc::SIGTERM && PARENT_GONE.load(Ordering::SeqCst)
}

/// Whether `signal` was ignored when retry started (`nohup`, or a non-interactive shell's
/// `&`, which ignores SIGINT and SIGQUIT): such a signal stays ignored, for retry and, through
/// exec, for the command, as POSIX asks of a shell's `trap` and as sudo does.
pub fn ignored_at_start(signal: Signal) -> bool {
    number_ignored_at_start(signal as libc::c_int)
}

/// [`ignored_at_start`], for a signal by number (a real-time one, which nix does not name).
pub fn number_ignored_at_start(number: libc::c_int) -> bool {
    let mut old = std::mem::MaybeUninit::<libc::sigaction>::zeroed();
    // SAFETY: a null new action only reads the current one into `old`, which is zeroed
    // memory of the right type.
    let read = unsafe { libc::sigaction(number, std::ptr::null(), old.as_mut_ptr()) };
    // SAFETY: sigaction filled `old` (and it was zeroed before, a valid sigaction too).
    read == 0 && unsafe { old.assume_init() }.sa_sigaction == libc::SIG_IGN
}

/// Whether SIGXFSZ was ignored when retry started, once [`ignore_file_size_limit`] noted it.
static XFSZ_IGNORED_AT_START: std::sync::OnceLock<bool> = std::sync::OnceLock::new();

/// Ignores SIGXFSZ from here on, once its disposition at start is noted. Under a file size
/// limit (`ulimit -f`, systemd's `LimitFSIZE=`) a write past it then fails with EFBIG, which
/// retry handles as the write error it is (a warning; the output passes through, a state
/// file stays as it was), instead of dying by the signal's default action with nothing said.
/// Call it before retry writes any file.
pub fn ignore_file_size_limit() {
    XFSZ_IGNORED_AT_START.get_or_init(|| {
        // The disposition it replaces is the one at start: one sigaction, not a read and then
        // a write.
        // SAFETY: SIG_IGN installs no handler; nothing else in retry sets SIGXFSZ.
        let was = unsafe { nix::sys::signal::signal(Signal::SIGXFSZ, SigHandler::SigIgn) };
        matches!(was, Ok(SigHandler::SigIgn))
    });
}

/// The signals a command (or a hook) starts with at their default action, where retry's own
/// disposition is not the one it found at start: SIGPIPE, which retry ignores as Rust programs
/// do (`platform::start`), and SIGXFSZ, which retry ignores ([`ignore_file_size_limit`]),
/// unless it was already ignored when retry started (an ignored signal stays ignored through
/// exec, as without retry).
pub fn defaults_for_child() -> SigSet {
    let mut default = SigSet::empty();
    default.add(Signal::SIGPIPE);
    let xfsz_ignored = XFSZ_IGNORED_AT_START
        .get()
        .copied()
        .unwrap_or_else(|| ignored_at_start(Signal::SIGXFSZ));
    if !xfsz_ignored {
        default.add(Signal::SIGXFSZ);
    }
    default
}

/// Stops retry as the default action of `signal` stops a process (SIGSTOP instead where retry
/// ignores `signal`), and its whole process group with it when `job`: what the terminal or the
/// kernel would have done to the job had the command run alone in it, so that the shell sees
/// the job Stopped and can `fg` or `bg` it. Returns once retry is continued.
pub fn stop(signal: Signal, job: bool) {
    let signal = if signal != Signal::SIGSTOP && ignored_at_start(signal) {
        Signal::SIGSTOP
    } else {
        signal
    };
    let number = signal as libc::c_int;
    // SAFETY: the actions are plain data (SIG_DFL, or the one sigaction read back), the sets
    // are initialised by sigemptyset before use, and kill and raise take plain integers.
    // While the default action is in place, the signal stops retry, which is what is asked.
    unsafe {
        let mut default = std::mem::MaybeUninit::<libc::sigaction>::zeroed().assume_init();
        default.sa_sigaction = libc::SIG_DFL;
        let mut old = std::mem::MaybeUninit::<libc::sigaction>::zeroed();
        let changed =
            signal != Signal::SIGSTOP && libc::sigaction(number, &default, old.as_mut_ptr()) == 0;
        // SIGTTOU is blocked while retry has a terminal (terminal.rs): unblocked for this.
        let mut set = std::mem::MaybeUninit::<libc::sigset_t>::uninit();
        libc::sigemptyset(set.as_mut_ptr());
        libc::sigaddset(set.as_mut_ptr(), number);
        let mut before = std::mem::MaybeUninit::<libc::sigset_t>::uninit();
        libc::sigemptyset(before.as_mut_ptr());
        libc::pthread_sigmask(libc::SIG_UNBLOCK, set.as_ptr(), before.as_mut_ptr());
        // A signal sent to retry itself is acted on before the call returns: retry stops
        // here, and goes on from here when continued.
        if job {
            libc::kill(0, number);
        } else {
            libc::raise(number);
        }
        libc::pthread_sigmask(libc::SIG_SETMASK, before.as_ptr(), std::ptr::null_mut());
        if changed {
            libc::sigaction(number, old.as_ptr(), std::ptr::null_mut());
        }
    }
}

/// Sends `signal` to the rest of retry's process group, as the terminal sends a Ctrl-C to a
/// job: retry's own copy is discarded, so that retry does not take it for a second signal.
/// For a Ctrl-C typed while an attempt held the terminal, when retry's group is the job of
/// a script, make or npm: without retry between them, the Ctrl-C would have reached them.
pub fn to_the_rest_of_the_group(signal: Signal) {
    let mut only = SigSet::empty();
    only.add(signal);
    let Ok(()) = pthread_sigmask(SigmaskHow::SIG_BLOCK, Some(&only), None) else {
        return;
    };
    let number = signal as libc::c_int;
    // SAFETY: kill(0, …) signals retry's own process group; the signal is blocked in this
    // thread (and every other thread of retry's blocks every signal), so retry's copy stays
    // pending. Setting its action to SIG_IGN discards a pending signal (POSIX), and the action
    // read then, retry's handler, is put back as it was; `old` is zeroed memory of the right
    // type, filled by the first sigaction.
    unsafe {
        libc::kill(0, number);
        let mut ignore = std::mem::MaybeUninit::<libc::sigaction>::zeroed().assume_init();
        ignore.sa_sigaction = libc::SIG_IGN;
        let mut old = std::mem::MaybeUninit::<libc::sigaction>::zeroed();
        if libc::sigaction(number, &ignore, old.as_mut_ptr()) == 0 {
            libc::sigaction(number, old.as_ptr(), std::ptr::null_mut());
        }
    }
    let _ = pthread_sigmask(SigmaskHow::SIG_UNBLOCK, Some(&only), None);
}

/// Runs `spawn`, which starts a thread, with every signal blocked, so that the thread starts
/// with them all blocked and every signal sent to retry goes to the thread that waits for it
/// (which may take them with `sigtimedwait`: [`Signals::block`]), never to a helper.
pub fn without_signals<T>(spawn: impl FnOnce() -> T) -> io::Result<T> {
    let mut before = SigSet::empty();
    pthread_sigmask(
        SigmaskHow::SIG_BLOCK,
        Some(&SigSet::all()),
        Some(&mut before),
    )?;
    let spawned = spawn();
    pthread_sigmask(SigmaskHow::SIG_SETMASK, Some(&before), None)?;
    Ok(spawned)
}

/// The receiving end of retry's signal handlers.
pub struct Signals {
    wake: OwnedFd,
    seen: [usize; HANDLED.len()],
    /// A signal that cancels the run was taken.
    cancelled: bool,
    /// The signal mask retry was started with, which the command gets.
    inherited: SigSet,
    /// SIGCHLD has a handler: a child's end or stop wakes the loop.
    children: bool,
    /// The handled signals that have a handler (those not ignored at start).
    #[cfg(all(target_os = "linux", not(retry_portable)))]
    ours: SigSet,
    /// The mask before [`Signals::block`], while the handled signals and SIGCHLD are blocked.
    #[cfg(all(target_os = "linux", not(retry_portable)))]
    unblocked: Option<SigSet>,
}

/// What [`Signals::wait_blocked`] saw.
#[cfg(all(target_os = "linux", not(retry_portable)))]
#[derive(Debug, PartialEq, Eq)]
pub enum Waited {
    /// A child ended or stopped (SIGCHLD).
    Child,
    /// A handled signal arrived, and was counted as its handler counts it.
    Signal,
    /// The time was up.
    Timeout,
    /// Something else cut the wait short: a signal outside the blocked set that has a
    /// handler, or retry stopped and continued.
    Interrupted,
}

impl Signals {
    /// Installs the handlers (with signal-hook) and unblocks their signals. From here on, the
    /// handled signals no longer end retry: the loop decides what each one does. A signal that
    /// was ignored when retry started gets no handler and stays ignored. SIGCHLD gets one here
    /// in the portable build; on Linux only when [`Signals::watch_children`] asks, and is meanwhile
    /// at its default action (ignored at start, it would leave no child to wait for).
    pub fn install() -> io::Result<Signals> {
        let (wake, write) = super::pipe::pipe(true)?;
        // The write end lives as long as retry: the handler may run until it exits. (A run
        // installs the handlers once.)
        WAKE.store(write.as_raw_fd(), Ordering::SeqCst);
        std::mem::forget(write);
        let mut ours = SigSet::empty();
        for signal in HANDLED {
            if ignored_at_start(signal) {
                continue;
            }
            let number = signal as libc::c_int;
            // SAFETY: the action only increments an atomic and writes one byte to a pipe,
            // both async-signal-safe.
            unsafe { signal_hook::low_level::register(number, move || on_signal(number)) }?;
            ours.add(signal);
        }
        // A launcher may start retry with signals blocked (some Python and Java ones do, and
        // pass the mask on through exec): a blocked SIGTERM could not stop it. GNU timeout
        // unblocks what it relies on in the same way. The command still gets the mask retry
        // was started with.
        let mut inherited = SigSet::empty();
        pthread_sigmask(SigmaskHow::SIG_UNBLOCK, Some(&ours), Some(&mut inherited))?;
        let seen = std::array::from_fn(|i| ARRIVED[i].load(Ordering::SeqCst));
        let signals = Signals {
            wake,
            seen,
            cancelled: false,
            inherited,
            children: false,
            #[cfg(all(target_os = "linux", not(retry_portable)))]
            ours,
            #[cfg(all(target_os = "linux", not(retry_portable)))]
            unblocked: None,
        };
        #[cfg(all(target_os = "linux", not(retry_portable)))]
        // SAFETY: SIG_DFL installs no handler, and nothing else in retry sets SIGCHLD until
        // watch_children; the default action keeps an ended child until it is waited for.
        unsafe { nix::sys::signal::signal(Signal::SIGCHLD, SigHandler::SigDfl) }?;
        #[cfg(not(all(target_os = "linux", not(retry_portable))))]
        let signals = {
            let mut signals = signals;
            signals.watch_children()?;
            signals
        };
        Ok(signals)
    }

    /// From here on SIGCHLD wakes the loop, when a child ends or stops. A child that ended
    /// before is found by the next wait for it, which looks before it sleeps.
    pub fn watch_children(&mut self) -> io::Result<()> {
        if self.children {
            return Ok(());
        }
        let number = libc::SIGCHLD;
        // SAFETY: as in `install`: an atomic and a one-byte write, async-signal-safe.
        unsafe { signal_hook::low_level::register(number, move || on_signal(number)) }?;
        // Unblocked as the others are: blocked, it would never wake the loop.
        let mut set = SigSet::empty();
        set.add(Signal::SIGCHLD);
        pthread_sigmask(SigmaskHow::SIG_UNBLOCK, Some(&set), None)?;
        self.children = true;
        Ok(())
    }

    /// The set [`Signals::block`] blocks: the handled signals and SIGCHLD.
    #[cfg(all(target_os = "linux", not(retry_portable)))]
    fn blocked_set(&self) -> SigSet {
        let mut set = self.ours;
        set.add(Signal::SIGCHLD);
        set
    }

    /// Blocks the handled signals and SIGCHLD, until [`Signals::unblock`]: from here on each
    /// of them stays pending until [`Signals::wait_blocked`] takes it, and none is lost
    /// between a look at what arrived and the wait. For an attempt that is the only thing
    /// the loop waits for, blocked before it starts (so that its end cannot come before it
    /// is watched) and unblocked once it was reaped: one `sigtimedwait` and one `wait4`
    /// learn of its end, where a process descriptor takes four system calls. Only with
    /// SIGCHLD at its default action ([`Signals::watches_children`] false), and only from
    /// the thread that waits: every other thread of retry's blocks every signal.
    #[cfg(all(target_os = "linux", not(retry_portable)))]
    pub fn block(&mut self) -> io::Result<()> {
        if self.unblocked.is_none() {
            let mut before = SigSet::empty();
            pthread_sigmask(
                SigmaskHow::SIG_BLOCK,
                Some(&self.blocked_set()),
                Some(&mut before),
            )?;
            self.unblocked = Some(before);
        }
        Ok(())
    }

    /// Puts back the mask [`Signals::block`] found: a handled signal still pending goes to
    /// its handler now, as if it had just arrived.
    #[cfg(all(target_os = "linux", not(retry_portable)))]
    pub fn unblock(&mut self) {
        if let Some(before) = self.unblocked.take() {
            let _ = pthread_sigmask(SigmaskHow::SIG_SETMASK, Some(&before), None);
        }
    }

    /// Whether the handled signals and SIGCHLD are blocked ([`Signals::block`]).
    #[cfg(all(target_os = "linux", not(retry_portable)))]
    pub fn blocked(&self) -> bool {
        self.unblocked.is_some()
    }

    /// Waits at most `timeout` (`None`: no limit) for SIGCHLD or a handled signal while they
    /// are blocked ([`Signals::block`]), and takes it: a handled signal is counted as its
    /// handler would have counted it, for [`Signals::take`].
    #[cfg(all(target_os = "linux", not(retry_portable)))]
    pub fn wait_blocked(&mut self, timeout: Option<std::time::Duration>) -> Waited {
        let set = self.blocked_set();
        let timeout = timeout.map(|t| libc::timespec {
            tv_sec: libc::time_t::try_from(t.as_secs()).unwrap_or(libc::time_t::MAX),
            // Below a billion: it fits.
            tv_nsec: t.subsec_nanos() as libc::c_long,
        });
        let timeout = timeout.as_ref().map_or(std::ptr::null(), |t| t as *const _);
        // SAFETY: the set is an initialised sigset_t; a null siginfo is allowed, and so is
        // a null timeout (no limit); the timespec, when there is one, outlives the call.
        let got = unsafe { libc::sigtimedwait(set.as_ref(), std::ptr::null_mut(), timeout) };
        match got {
            libc::SIGCHLD => Waited::Child,
            n if n > 0 => {
                count(n);
                Waited::Signal
            }
            _ if nix::errno::Errno::last() == nix::errno::Errno::EAGAIN => Waited::Timeout,
            _ => Waited::Interrupted,
        }
    }

    /// Whether SIGCHLD wakes the loop ([`Signals::watch_children`]). Only Linux's build asks:
    /// elsewhere SIGCHLD always does.
    #[cfg(all(target_os = "linux", not(retry_portable)))]
    pub fn watches_children(&self) -> bool {
        self.children
    }

    /// The signal mask retry was started with.
    pub fn inherited_mask(&self) -> &SigSet {
        &self.inherited
    }

    /// Readable when a signal may have arrived.
    pub fn fd(&self) -> BorrowedFd<'_> {
        self.wake.as_fd()
    }

    /// Empties the self-pipe; call before looking at what arrived, so no wake-up is lost.
    pub fn drain(&mut self) {
        let mut buf = [0u8; 64];
        // A read that does not fill the buffer emptied the pipe: no second read to be told
        // EAGAIN. A wake-up written after it stays in the pipe for the next poll.
        while matches!(nix::unistd::read(&self.wake, &mut buf), Ok(n) if n == buf.len()) {}
    }

    /// Whether a signal that cancels the run has arrived and was not yet taken; it stays for
    /// `take` to report.
    pub fn cancel_pending(&self) -> bool {
        settle_parent();
        (0..HANDLED.len())
            .filter(|i| crate::policy::status::cancels(HANDLED[*i] as i32))
            .any(|i| ARRIVED[i].load(Ordering::SeqCst) > self.seen[i])
    }

    /// Whether the run is cancelled: a signal that cancels it was taken, or waits to be.
    pub fn cancelled(&self) -> bool {
        self.cancelled || self.cancel_pending()
    }

    /// The run was cancelled by a signal that reached the command and not retry: a Ctrl-C
    /// typed at the terminal that the attempt holds.
    pub fn cancelled_at_the_terminal(&mut self) {
        self.cancelled = true;
    }

    /// The command handled the Ctrl-C typed at the terminal and went on (a REPL): the run is
    /// not cancelled after all.
    pub fn not_cancelled_after_all(&mut self) {
        self.cancelled = false;
    }

    /// The next signal that arrived and was not yet taken, one arrival at a time.
    pub fn take(&mut self) -> Option<i32> {
        settle_parent();
        for (i, signal) in HANDLED.iter().enumerate() {
            if ARRIVED[i].load(Ordering::SeqCst) > self.seen[i] {
                self.seen[i] += 1;
                self.cancelled |= crate::policy::status::cancels(*signal as i32);
                return Some(*signal as i32);
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use nix::sys::signal::Signal;

    use crate::policy::status::{SIGRTMAX, SIGRTMIN, Status, signal_name, signal_number};

    /// The policy's signal names, written out, are nix's: every number, every name.
    #[test]
    fn the_policys_signal_table_is_nixs() {
        for sig in -1..=300 {
            let nix = match Signal::try_from(sig) {
                Ok(signal) => signal.as_str().to_string(),
                Err(_) if (nix::libc::SIGRTMIN()..=nix::libc::SIGRTMAX()).contains(&sig) => {
                    format!("SIGRTMIN+{}", sig - nix::libc::SIGRTMIN())
                }
                Err(_) => format!("signal {sig}"),
            };
            assert_eq!(signal_name(sig), nix, "{sig}");
            let number = sig.to_string();
            assert_eq!(
                signal_number(&number),
                Signal::try_from(sig).ok().map(|s| s as i32),
                "{sig}"
            );
        }
        assert_eq!(
            (SIGRTMIN, SIGRTMAX),
            (nix::libc::SIGRTMIN(), nix::libc::SIGRTMAX())
        );
        for signal in Signal::iterator() {
            let name = signal.as_str();
            assert_eq!(signal_number(name), Some(signal as i32), "{name}");
            assert_eq!(signal_number(&name[3..]), Some(signal as i32), "{name}");
            assert_eq!(
                signal_number(&name.to_ascii_lowercase()),
                Some(signal as i32),
                "{name}"
            );
        }
        for cancelling in [
            Signal::SIGINT,
            Signal::SIGTERM,
            Signal::SIGHUP,
            Signal::SIGQUIT,
        ] {
            assert!(crate::policy::status::cancels(cancelling as i32));
        }
        let cancelling = Signal::iterator().filter(|s| crate::policy::status::cancels(*s as i32));
        assert_eq!(cancelling.count(), 4);
    }

    /// A signal by name or number, as nix has it.
    fn signal(name: &str) -> Option<Signal> {
        signal_number(name).and_then(|n| Signal::try_from(n).ok())
    }

    // From policy::codes, where signal names were parsed with nix.
    #[test]
    fn signal_accepts_names_and_numbers() {
        assert_eq!(signal("TERM"), Some(Signal::SIGTERM));
        assert_eq!(signal("sigkill"), Some(Signal::SIGKILL));
        assert_eq!(signal("9"), Some(Signal::SIGKILL));
        assert_eq!(signal("BOGUS"), None);
    }

    // From policy::status, where signals were named with nix.
    #[test]
    fn every_signal_has_a_name() {
        assert_eq!(signal_name(15), "SIGTERM");
        let min = nix::libc::SIGRTMIN();
        assert_eq!(signal_name(min), "SIGRTMIN+0");
        assert_eq!(signal_name(min + 3), "SIGRTMIN+3");
        assert_eq!(signal_name(200), "signal 200");
        assert_eq!(
            Status::Signal(min + 1).to_string(),
            format!("killed by SIGRTMIN+1 (status {})", 128 + min + 1)
        );
    }
}
