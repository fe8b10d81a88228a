//! The real world of the attempt loop: the child in its own process group, its stdin and
//! stdout, the clock and signals, all waited for in one `ppoll`.

use std::borrow::Cow;
use std::ffi::{CStr, CString, c_char};
use std::io;
use std::os::fd::AsFd;
use std::os::fd::AsRawFd;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::ExitStatusExt;
use std::process::ExitStatus;
use std::time::{Duration, Instant, SystemTime};

use nix::errno::Errno;
use nix::fcntl::OFlag;
use nix::libc::{WNOHANG, WUNTRACED};
use nix::poll::{PollFd, PollFlags};
use nix::spawn::{PosixSpawnAttr, PosixSpawnFileActions, PosixSpawnFlags, posix_spawnp};
use nix::sys::signal::{SigSet, Signal, killpg};
use nix::sys::stat::Mode;
use nix::unistd::Pid;

use super::child_fd::ChildFd;
use super::group::{group_alive, reaps_orphans};
use super::hint_dir::HintDir;
use super::output::Stream;
use super::signals::Signals;
use super::status::status_of;
use super::stdin::{Input, Need};
use super::terminal::Terminal;
use super::transcript::Transcript;
use super::watcher::Watcher;
use super::world::{AttemptEnv, Event, SpawnError, World};
use crate::env;
use crate::exit::Exit;
use crate::policy::judgement::{Findings, Unstarted};
use crate::policy::output_rules::Rules;
use crate::policy::status::Status;
use crate::policy::{Policy, StdoutMode};

/// Runs the command for real.
pub struct Process {
    program: CString,
    /// The arguments, the program's name first.
    argv: Vec<CString>,
    /// retry's environment less any `RETRY_*` of a retry above (its own entries, not
    /// copies), with this run's idempotency key and depth; each attempt's own variables go on
    /// the end while it starts.
    envp: Vec<Cow<'static, CStr>>,
    attr: PosixSpawnAttr,
    /// The run's own variables, the same for every attempt and hook.
    run_vars: Vec<(String, String)>,
    start: Instant,
    signals: Signals,
    input: Input,
    stdout: Stream,
    stderr: Stream,
    rules: Rules,
    /// The attempts' hint files, with `--hints`.
    hints: Option<HintDir>,
    /// Why there is no hint folder, said once with the first attempt's findings.
    hints_lost: Option<String>,
    attempt: u32,
    child: Option<Pid>,
    /// The attempt's process group, until it is known to be empty.
    group: Option<Pid>,
    terminal: Option<Terminal>,
    /// The running attempt was given the terminal.
    holds_terminal: bool,
    /// The watcher in the group of the attempt that holds the terminal: it tells a Ctrl-C
    /// typed there, which reaches the attempt and not retry.
    watcher: Option<Watcher>,
    /// A Ctrl-C (or Ctrl-\) the watcher saw and the loop was not told of yet.
    typed: Option<i32>,
    /// An exit held back while the Ctrl-C that caused it is reported first.
    exited: Option<Status>,
    /// `--output-on-failure`: where each attempt's output is held, marked by attempt.
    transcript: Option<Transcript>,
    /// Orphans are reparented to retry (PID 1, a subreaper): it reaps them.
    reaper: bool,
    /// The attempt's wait status, when reaping orphans took it first.
    child_end: Option<i32>,
}

impl Process {
    /// The world of a run of `p`; `start` is when the run began.
    pub fn new(
        p: &Policy,
        signals: Signals,
        start: Instant,
        transcript: Option<&Transcript>,
    ) -> io::Result<Process> {
        let inherited = |name| std::env::var(name).ok().filter(|v| !v.is_empty());
        let key =
            inherited(env::IDEMPOTENCY_KEY).unwrap_or_else(|| uuid::Uuid::new_v4().to_string());
        let depth = p.nesting.level;
        let mut envp: Vec<Cow<'static, CStr>> = inherited_environment()
            .filter(|entry| {
                let name = entry.to_bytes().split(|b| *b == b'=').next();
                !env::GIVEN.iter().any(|own| Some(own.as_bytes()) == name)
            })
            .map(Cow::Borrowed)
            .collect();
        let run_vars = vec![
            (env::IDEMPOTENCY_KEY.to_string(), key),
            (env::DEPTH.to_string(), depth.to_string()),
        ];
        for (name, value) in &run_vars {
            envp.push(Cow::Owned(entry(name.as_bytes(), value.as_bytes())?));
        }
        let argv = p
            .command
            .iter()
            .map(|a| CString::new(a.as_bytes()))
            .collect::<Result<Vec<_>, _>>()?;
        let program = argv
            .first()
            .cloned()
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "no command given"))?;
        let hold = p.stdout == StdoutMode::Hold;
        // A TMPDIR that is missing or unusable costs the hints, never the run.
        let (hints, hints_lost) = match p.hints.then(HintDir::new) {
            None => (None, None),
            Some(Ok(dir)) => (Some(dir), None),
            Some(Err(e)) => (
                None,
                Some(format!(
                    "warning: --hints: cannot make a private folder in {}: {}; going on without hints",
                    crate::quote::quoted(&std::env::temp_dir()),
                    super::files::why(&e)
                )),
            ),
        };
        Ok(Process {
            program,
            argv,
            envp,
            attr: spawn_attributes(signals.inherited_mask())?,
            run_vars,
            start,
            signals,
            input: Input::new(p.stdin),
            stdout: Stream::new(true, hold, p.output_rules.reads(true)).recording(transcript),
            stderr: Stream::new(false, false, p.output_rules.reads(false)).recording(transcript),
            transcript: transcript.cloned(),
            rules: p.output_rules.clone(),
            hints,
            hints_lost,
            attempt: 0,
            child: None,
            group: None,
            terminal: Terminal::detect(),
            holds_terminal: false,
            watcher: None,
            typed: None,
            exited: None,
            reaper: reaps_orphans(),
            child_end: None,
        })
    }

    /// Starts the attempt with posix_spawn: the environment is built once per run and only
    /// the `RETRY_*` entries change, where std's `Command` would copy and sort the whole
    /// environment again for every attempt.
    fn start(&mut self, attempt: &AttemptEnv) -> nix::Result<Pid> {
        let optional = |v: Option<String>| v.unwrap_or_default();
        let per_attempt = [
            (env::ATTEMPT, attempt.attempt.to_string()),
            (
                env::MAX_ATTEMPTS,
                optional(attempt.max_attempts.map(|n| n.to_string())),
            ),
            (
                env::PREVIOUS_EXIT,
                optional(attempt.previous.map(|n| n.to_string())),
            ),
            (
                env::REMAINING_MS,
                optional(attempt.remaining.map(|d| d.as_millis().to_string())),
            ),
        ];
        let base = self.envp.len();
        for (name, value) in per_attempt {
            self.envp
                .push(Cow::Owned(entry(name.as_bytes(), value.as_bytes())?));
        }
        let mut argv = None;
        if let Some(hints) = &self.hints {
            let file = hints.path(attempt.attempt);
            self.envp.push(Cow::Owned(entry(
                env::HINT_FILE.as_bytes(),
                file.as_os_str().as_bytes(),
            )?));
            argv = Some(
                self.argv
                    .iter()
                    .map(|a| with_hint_file(a.as_bytes(), file.as_os_str().as_bytes()))
                    .collect::<nix::Result<Vec<CString>>>()?,
            );
        }
        self.attempt = attempt.attempt;
        if let Some(held) = &self.transcript {
            let of = attempt
                .max_attempts
                .map(|m| format!("/{m}"))
                .unwrap_or_default();
            let mark = format!("retry: --- output of attempt {}{of} ---\n", attempt.attempt);
            held.attempt(mark.as_bytes());
        }
        let stdio = [
            self.input.for_attempt(),
            self.stdout.for_attempt(),
            self.stderr.for_attempt(),
        ];
        let argv = argv.as_deref().unwrap_or(&self.argv);
        let spawned = launch(&self.program, &self.attr, argv, &self.envp, stdio);
        self.envp.truncate(base);
        spawned
    }

    /// Reaps the child if it has ended; if it was stopped, gives it the terminal it asked for,
    /// or (Ctrl-Z) stops retry too, as a shell expects of its job.
    fn reap(&mut self) -> Option<Status> {
        let pid = self.child?;
        let mut raw = 0;
        let got = match self.child_end.take() {
            Some(end) => {
                raw = end;
                pid.as_raw()
            }
            // nix's waitpid fails on a child killed by a real-time signal (its `Signal` names
            // none), which an attempt may well be: libc's is called directly.
            // SAFETY: waitpid on our own child with a valid pointer to an int.
            None => unsafe { nix::libc::waitpid(pid.as_raw(), &mut raw, WNOHANG | WUNTRACED) },
        };
        if got == 0 || (got < 0 && Errno::last() == Errno::EINTR) {
            return None;
        }
        let status = ExitStatus::from_raw(raw);
        if got > 0
            && let Some(signal) = status.stopped_signal()
        {
            self.on_stop(pid, signal);
            return None;
        }
        self.child = None;
        self.stop_watching(None);
        if let Some(replay) = self.input.replay() {
            replay.stop();
        }
        // (Whether the attempt held the terminal stays known until the next one starts: how
        // it ended may be a Ctrl-C typed there.)
        if self.holds_terminal
            && let Some(terminal) = &self.terminal
        {
            terminal.take_back(pid);
        }
        // Only a child that is not ours fails to be waited for: report it as retry's own
        // failure rather than wait forever.
        Some(if got < 0 {
            Status::Code(Exit::FAILURE.status())
        } else {
            status_of(status)
        })
    }

    /// The attempt's group stopped. One that read or set the terminal while retry's job holds
    /// it (a command in a pipeline, which does not get the terminal at once) gets it now.
    /// Otherwise it was stopped by Ctrl-Z, or it needs the terminal while retry's job is in
    /// the background: retry's whole job stops with the same signal, as the terminal would
    /// have stopped the command alone, so the shell shows it Stopped; when continued (`fg`,
    /// `bg`), the attempt goes on too, with the terminal if `fg` gave it to retry's job.
    fn on_stop(&mut self, group: Pid, signal: i32) {
        let Some(terminal) = &self.terminal else {
            // No terminal: the child waits for a SIGCONT from whoever stopped it.
            return;
        };
        let asks = [Signal::SIGTTIN as i32, Signal::SIGTTOU as i32].contains(&signal);
        if asks && terminal.foreground() {
            self.hand_over(group);
            return;
        }
        if !terminal.job_can_stop() {
            // An orphaned job (retry leads its session, under script(1) or a terminal
            // emulator, or its shell is gone): no shell is left to show it Stopped or to
            // continue it, and the kernel discards a Ctrl-Z sent to such a job, which goes on.
            // So does the attempt. One that needs the terminal would have been told EIO
            // instead; retry cannot do that, and it stays stopped until a timeout ends it.
            if signal == Signal::SIGTSTP as i32 {
                let _ = killpg(group, Signal::SIGCONT);
            }
            return;
        }
        let wanted = asks || self.holds_terminal || terminal.alone();
        if std::mem::take(&mut self.holds_terminal) {
            terminal.take_back(group);
        }
        let Ok(signal) = Signal::try_from(signal) else {
            return;
        };
        super::signals::stop(signal, true);
        // Continued: by `fg` (the terminal is retry's job's again) or by `bg`.
        let foreground = self.terminal.as_ref().is_some_and(Terminal::foreground);
        if wanted && foreground {
            self.hand_over(group);
        } else {
            let _ = killpg(group, Signal::SIGCONT);
        }
    }

    /// Hands the terminal, which retry's job holds, to the attempt's `group` and lets it go
    /// on, with a watcher in the group first so that a Ctrl-C typed the moment after reaches
    /// it too; the watcher goes if the terminal could not be given.
    fn hand_over(&mut self, group: Pid) {
        let Some(terminal) = &self.terminal else {
            return;
        };
        if self.watcher.is_none() && terminal.interruptible() {
            self.watcher = Watcher::start(group);
        }
        self.holds_terminal = terminal.give(group);
        if !self.holds_terminal {
            self.stop_watching(None);
        }
    }

    /// Ctrl-Z reached retry's own group (the attempt did not hold the terminal, or none ran):
    /// the attempt is stopped too, then retry, as the terminal would have stopped the command
    /// alone; when continued, the attempt goes on, with the terminal if it held it before and
    /// `fg` gave it back to retry's job.
    fn stop_with_the_job(&mut self) {
        let group = self.child.and(self.group);
        if let Some(group) = group {
            let _ = killpg(group, Signal::SIGTSTP);
        }
        let held = std::mem::take(&mut self.holds_terminal);
        if let (true, Some(terminal), Some(group)) = (held, &self.terminal, group) {
            terminal.take_back(group);
        }
        // Only retry: the rest of its job had the terminal's SIGTSTP too.
        super::signals::stop(Signal::SIGTSTP, false);
        if let Some(group) = group {
            let foreground = self.terminal.as_ref().is_some_and(Terminal::foreground);
            if held && foreground {
                self.hand_over(group);
            } else {
                let _ = killpg(group, Signal::SIGCONT);
            }
        }
    }

    /// With orphans reparented to retry (PID 1, a subreaper): reaps every process that ended
    /// but the attempt's first one, whose status is kept for [`Process::reap`] if it comes
    /// up here first.
    fn reap_orphans(&mut self) {
        if !self.reaper {
            return;
        }
        loop {
            let mut raw = 0;
            // SAFETY: waitpid on any child with a valid pointer to an int; without WUNTRACED
            // it reports only processes that ended, which are then gone.
            let got = unsafe { nix::libc::waitpid(-1, &mut raw, WNOHANG) };
            if got <= 0 {
                return;
            }
            if self.child.is_some_and(|c| c.as_raw() == got) {
                self.child_end = Some(raw);
            } else if let Some(watcher) = self.watcher.as_mut().filter(|w| w.pid().as_raw() == got)
            {
                watcher.reaped();
            }
        }
    }

    /// Ends the attempt's watcher, keeping what it saw.
    fn stop_watching(&mut self, passing_on: Option<i32>) {
        if let Some(watcher) = self.watcher.take() {
            // The one Ctrl-C that reached retry too, as it can in the moment the attempt gets
            // the terminal, is not a second one: retry passes it on now.
            let seen = watcher.stop().filter(|sig| Some(*sig) != passing_on);
            self.typed = self.typed.or(seen);
        }
    }

    /// A Ctrl-C or Ctrl-\ typed at the terminal reaches only the attempt that holds it, not
    /// retry; an attempt that died of it (or exited 130 or 131 from a trap) is a cancellation.
    fn terminal_cancel(&self, status: Status) -> Option<i32> {
        if !self.holds_terminal {
            return None;
        }
        let (int, quit) = (Signal::SIGINT as i32, Signal::SIGQUIT as i32);
        match status.number() - 128 {
            n if n == int || n == quit => Some(n),
            _ => None,
        }
    }
}

/// Whether retry's stdout or stderr is a pipe or socket whose reader went away. A closed
/// descriptor (`>&-`) is not: its owner chose to drop that output.
fn output_has_no_reader() -> bool {
    let (out, err) = (io::stdout(), io::stderr());
    let mut fds = [
        PollFd::new(out.as_fd(), PollFlags::POLLOUT),
        PollFd::new(err.as_fd(), PollFlags::POLLOUT),
    ];
    nix::poll::poll(&mut fds, nix::poll::PollTimeout::ZERO).is_ok()
        && fds
            .iter()
            .any(|fd| fd.revents().is_some_and(|r| r.contains(PollFlags::POLLERR)))
}

/// posix_spawn with the attempt's standard streams in place.
fn launch(
    program: &CString,
    attr: &PosixSpawnAttr,
    argv: &[CString],
    envp: &[Cow<'static, CStr>],
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
fn entry(name: &[u8], value: &[u8]) -> nix::Result<CString> {
    // Room for the NUL too, which CString::new adds.
    let mut bytes = Vec::with_capacity(name.len() + value.len() + 2);
    bytes.extend_from_slice(name);
    bytes.push(b'=');
    bytes.extend_from_slice(value);
    CString::new(bytes).map_err(|_| Errno::EINVAL)
}

/// The environment retry was started with, each entry as the process holds it (`NAME=value`,
/// usually), borrowed rather than copied: std's `vars_os` makes two strings of every entry,
/// which a run then joined into a third, a tenth of what a run of `retry -- true` did.
fn inherited_environment() -> impl Iterator<Item = &'static CStr> {
    unsafe extern "C" {
        /// The C library's environment: a null-terminated array of C strings.
        static environ: *const *const c_char;
    }
    // SAFETY: `environ` is the C library's, set before `main`; retry never changes its own
    // environment (no setenv, putenv or std::env::set_var anywhere in it), so the array and
    // its strings stay as they are, where they are, for the life of the process.
    let mut next = unsafe { environ };
    std::iter::from_fn(move || {
        if next.is_null() {
            return None;
        }
        // SAFETY: `next` points into the null-terminated array (see above), not past its end.
        let entry = unsafe { *next };
        if entry.is_null() {
            return None;
        }
        // SAFETY: a non-null entry is a NUL-terminated string that lives as long as the
        // process; the next pointer is still within the array, whose end is the null one.
        unsafe {
            next = next.add(1);
            Some(CStr::from_ptr(entry))
        }
    })
}

/// How every attempt starts: in a process group of its own (so that a timeout or a forwarded
/// signal reaches every process it starts), with the signal mask retry was started with (as if
/// retry were not there), and SIGPIPE back to its default, which Rust programs ignore and an
/// exec would otherwise keep ignored.
fn spawn_attributes(mask: &SigSet) -> nix::Result<PosixSpawnAttr> {
    let mut attr = PosixSpawnAttr::init()?;
    attr.set_flags(
        PosixSpawnFlags::POSIX_SPAWN_SETPGROUP
            | PosixSpawnFlags::POSIX_SPAWN_SETSIGMASK
            | PosixSpawnFlags::POSIX_SPAWN_SETSIGDEF,
    )?;
    attr.set_pgroup(Pid::from_raw(0))?;
    attr.set_sigmask(mask)?;
    let mut default = SigSet::empty();
    default.add(Signal::SIGPIPE);
    attr.set_sigdefault(&default)?;
    Ok(attr)
}

/// An argument with `{hints}` replaced by the attempt's hint file.
fn with_hint_file(arg: &[u8], path: &[u8]) -> nix::Result<CString> {
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

impl World for Process {
    fn elapsed(&self) -> Duration {
        self.start.elapsed()
    }

    fn spawn(&mut self, env: &AttemptEnv) -> Result<(), SpawnError> {
        match self.start(env) {
            Ok(pid) => {
                self.group = Some(pid);
                self.child = Some(pid);
                self.child_end = None;
                self.holds_terminal = false;
                if self
                    .terminal
                    .as_ref()
                    .is_some_and(|t| t.alone() && t.foreground())
                {
                    self.hand_over(pid);
                }
                Ok(())
            }
            Err(errno) => {
                if let Some(replay) = self.input.replay() {
                    replay.stop();
                }
                // Shown escaped: a program name cannot end or hide a line.
                let program =
                    crate::quote::quoted(std::ffi::OsStr::from_bytes(self.program.as_bytes()));
                let (why, message) = match errno {
                    Errno::ENOENT | Errno::ENOTDIR => (Unstarted::NotFound, None),
                    // The system, not the command: bash says "fork: retry" and tries again.
                    Errno::EAGAIN | Errno::ENOMEM | Errno::EMFILE | Errno::ENFILE => {
                        let lack = match errno {
                            Errno::EAGAIN => "too many processes",
                            Errno::ENOMEM => "out of memory",
                            Errno::EMFILE => "too many open files in retry",
                            _ => "too many open files in the system",
                        };
                        (
                            Unstarted::NoResources,
                            Some(format!(
                                "cannot start {program} for lack of resources ({lack}: {}); \
                                 the system may have room again later",
                                errno.desc()
                            )),
                        )
                    }
                    _ => (Unstarted::CannotExecute, None),
                };
                let message = message.unwrap_or_else(|| {
                    format!(
                        "cannot run {program}: {}",
                        spawn_failure(std::ffi::OsStr::from_bytes(self.program.as_bytes()), errno)
                    )
                });
                Err(SpawnError {
                    status: why.status(),
                    why,
                    message,
                })
            }
        }
    }

    fn cancel_pending(&mut self) -> Option<i32> {
        if !self.signals.cancel_pending() {
            return None;
        }
        // Signals before it had no attempt to go to.
        std::iter::from_fn(|| self.signals.take()).find(|sig| crate::policy::status::cancels(*sig))
    }

    fn wait(&mut self, until: Option<Duration>) -> Event {
        loop {
            // The self-pipe only wakes ppoll: it is emptied after each wake, not before each
            // look, so that a wait that need not block makes no system call for it. A byte
            // left from before makes one spurious turn, never a lost wake-up, because every
            // handler raises its count before it writes.
            if let Some(signal) = self.signals.take() {
                if signal == Signal::SIGTSTP as i32 {
                    return Event::Suspend;
                }
                return Event::Signal(signal);
            }
            let typed = self.watcher.as_mut().and_then(Watcher::typed);
            if let Some(signal) = self.typed.take().or(typed) {
                self.signals.cancelled_at_the_terminal();
                return Event::Typed(signal);
            }
            if let Some(status) = self.exited.take() {
                return Event::Exited(status);
            }
            self.reap_orphans();
            if let Some(status) = self.reap() {
                if self.typed.is_some() {
                    // What the watcher saw comes first: the attempt ended after it.
                    self.exited = Some(status);
                    continue;
                }
                if let Some(signal) = self.terminal_cancel(status) {
                    self.signals.cancelled_at_the_terminal();
                    self.exited = Some(status);
                    return Event::Interrupted(signal);
                }
                return Event::Exited(status);
            }
            let timeout = match until {
                Some(until) => match until.checked_sub(self.elapsed()) {
                    Some(left) if !left.is_zero() => Some(left),
                    _ => return Event::Timer,
                },
                None => None,
            };
            let stdin = super::child_fd::stdin();
            let (need, pipe) = match self.input.replay() {
                Some(replay) => replay.need(),
                None => (Need::Nothing, None),
            };
            let timeout = match need {
                Need::Drain(after) => Some(timeout.map_or(after, |t| t.min(after))),
                _ => timeout,
            };
            let mut fds = vec![PollFd::new(self.signals.fd(), PollFlags::POLLIN)];
            match (need, pipe) {
                (Need::Room, Some(pipe)) => fds.push(PollFd::new(pipe, PollFlags::POLLOUT)),
                (Need::Input, _) => fds.push(PollFd::new(stdin, PollFlags::POLLIN)),
                _ => {}
            }
            let output_at = fds.len();
            // Each stream waits either for the attempt's output or, while what it read waits
            // to be passed on, for room downstream.
            for stream in [&self.stdout, &self.stderr] {
                if let Some(fd) = stream.fd() {
                    fds.push(PollFd::new(fd, PollFlags::POLLIN));
                } else if let Some(fd) = stream.out_fd() {
                    fds.push(PollFd::new(fd, PollFlags::POLLOUT));
                }
            }
            let watcher_at = fds.len();
            if let Some(watcher) = &self.watcher {
                fds.push(PollFd::new(watcher.fd(), PollFlags::POLLIN));
            }
            // EINTR is a signal arriving, which the next turn of the loop picks up.
            let polled = super::pipe::wait(&mut fds, timeout);
            let ready = |fd: &PollFd| fd.revents().is_some_and(|r| !r.is_empty());
            let io_ready = fds.get(1).is_some_and(|fd| ready(fd) && output_at > 1);
            let output_ready = fds[output_at..watcher_at].iter().any(ready);
            drop(fds);
            self.signals.drain();
            if polled.is_err() {
                continue;
            }
            if io_ready && let Some(replay) = self.input.replay() {
                match need {
                    Need::Room => replay.on_room(),
                    Need::Input => replay.on_input(),
                    Need::Nothing | Need::Drain(_) => {}
                }
            }
            if let Need::Drain(_) = need
                && let Some(replay) = self.input.replay()
            {
                replay.on_drain();
            }
            if output_ready {
                // Each stream passes on what it can and reads until its pipe is empty, so
                // looking at both costs nothing.
                self.stdout.on_room(&self.rules);
                self.stderr.on_room(&self.rules);
            }
        }
    }

    fn kill(&mut self, signal: i32) {
        // Once retry stops or cancels the attempt itself, a signal the watcher saw would be
        // retry's own: it ends first, keeping what the terminal sent before.
        if [
            Signal::SIGINT,
            Signal::SIGQUIT,
            Signal::SIGTERM,
            Signal::SIGHUP,
            Signal::SIGKILL,
        ]
        .iter()
        .any(|s| *s as i32 == signal)
        {
            self.stop_watching(Some(signal));
        }
        // Only while the group is known to exist: the leader's pid, and so the group's id,
        // cannot be taken by another process until the group is empty.
        if let (Some(group), Ok(signal)) = (self.group, Signal::try_from(signal)) {
            let _ = killpg(group, signal);
        }
    }

    fn suspend(&mut self) {
        self.stop_with_the_job();
    }

    fn typed_handled(&mut self) {
        self.signals.not_cancelled_after_all();
    }

    fn group_alive(&mut self) -> bool {
        let alive = self.group.is_some_and(group_alive);
        if !alive {
            self.group = None;
        }
        alive
    }

    fn findings(&mut self) -> Findings {
        let stdout = self.stdout.finish(&self.rules, &mut self.signals);
        let stderr = self.stderr.finish(&self.rules, &mut self.signals);
        let output = match (stdout, stderr) {
            (Some(a), b) => Some(a.or(b)),
            (None, b) => b,
        };
        let taken = self.hints.as_ref().map(|h| h.take(self.attempt));
        let (hint, warning) = match taken {
            Some(t) => (t.hint, t.warning),
            None => (None, self.hints_lost.take()),
        };
        Findings {
            output,
            http_status: hint.as_ref().and_then(|h| h.http_status),
            retry_after: hint
                .as_ref()
                .and_then(|h| h.retry_after)
                .map(|ra| ra.wait(SystemTime::now())),
            stop: hint.is_some_and(|h| h.stop),
            warning,
        }
    }

    fn hook(
        &mut self,
        command: &str,
        mut vars: Vec<(String, String)>,
        timeout: Duration,
    ) -> Result<Status, String> {
        vars.extend(self.run_vars.iter().cloned());
        super::hooks::run(command, &vars, timeout, &mut self.signals)
    }

    fn output_gone(&self) -> bool {
        output_has_no_reader()
    }

    fn unrepeatable(&self) -> Option<String> {
        self.input.unrepeatable()
    }

    fn finish(&mut self, last: bool) -> Result<(), String> {
        let stdout = self.stdout.release(last, &mut self.signals);
        let stderr = self.stderr.release(last, &mut self.signals);
        stdout.and(stderr)
    }
}

/// Why `program` could not be started, in a shell's words: `command not found` for a name
/// not on PATH, `Is a directory` for a directory, else the system's words for `errno`.
fn spawn_failure(program: &std::ffi::OsStr, errno: Errno) -> String {
    let path = std::path::Path::new(program);
    let named_by_path = program.as_encoded_bytes().contains(&b'/');
    match errno {
        Errno::ENOENT if !named_by_path => "command not found (no such file on PATH)".into(),
        Errno::EACCES if named_by_path && path.is_dir() => "Is a directory".into(),
        _ => errno.desc().into(),
    }
}
