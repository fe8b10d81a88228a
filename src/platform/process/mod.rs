//! The real world of the attempt loop: the child in its own process group, its stdin and
//! stdout, the clock and signals, all waited for in one `ppoll`. The attempt's end wakes it
//! through a process descriptor on Linux (`exit_fd`), through SIGCHLD elsewhere and wherever
//! a child's stop or an orphan's end must wake it too. On Linux, an attempt whose end and the
//! signals are all the loop waits for is waited for with one `sigtimedwait` instead.

use std::ffi::{CString, OsString};
use std::io::{self, Write};
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::ExitStatusExt;
use std::process::ExitStatus;
use std::time::{Duration, Instant, SystemTime};

use nix::errno::Errno;
use nix::libc::{WNOHANG, WUNTRACED};
use nix::poll::{PollFd, PollFlags};
use nix::spawn::PosixSpawnAttr;
use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;

use super::group::{group_alive, reaps_orphans};
use super::hint_dir::HintDir;
use super::output::Stream;
use super::signals::Signals;
use super::status::status_of;
use super::stdin::Input;
use super::terminal::Terminal;
use super::transcript::Transcript;
use super::watcher::Watcher;
use super::world::{AttemptEnv, Event, HookLimits, SpawnError, World};
use crate::env;
use crate::exit::Exit;
use crate::policy::judgement::{Findings, Unstarted};
use crate::policy::output_rules::Rules;
use crate::policy::status::Status;
use crate::policy::{Policy, StdoutMode};

#[cfg(all(target_os = "linux", not(retry_portable)))]
mod exit_fd;
mod job;
mod spawn;
#[cfg(all(target_os = "linux", not(retry_portable)))]
mod tied;
mod wait;

use self::spawn::{entry, launch, one_string, spawn_attributes, spawn_failure, with_hint_file};

/// Runs the command for real.
pub struct Process {
    program: CString,
    /// The arguments, the program's name first.
    argv: Vec<CString>,
    /// retry's environment less any `RETRY_*` of a retry above, with this run's idempotency
    /// key and depth; each attempt's own variables go on the end while it starts.
    envp: Vec<CString>,
    /// The buffers of an attempt's own variables, kept from one attempt to the next.
    spare: Vec<Vec<u8>>,
    attr: PosixSpawnAttr,
    /// `--stop-with-parent`, where the attempt's first process can be tied to retry's life
    /// (Linux): it is started by fork and exec instead, and gets SIGKILL if retry is killed.
    #[cfg(all(target_os = "linux", not(retry_portable)))]
    tied: Option<tied::Tied>,
    /// The run's own variables, the same for every attempt and hook; an inherited
    /// idempotency key is passed on as its bytes, whatever they are.
    run_vars: Vec<(&'static str, OsString)>,
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
    /// `--output-on-failure`'s printout marks each attempt's part (not under `-qq`).
    marks_attempts: bool,
    /// Orphans are reparented to retry (PID 1, a subreaper): it reaps them.
    reaper: bool,
    /// The attempt's wait status, when reaping orphans took it first.
    child_end: Option<i32>,
    /// The attempt's end as a descriptor (Linux, while SIGCHLD is not watched).
    exit_fd: Option<OwnedFd>,
    /// The last wait found `exit_fd` readable: the attempt has ended.
    exit_ready: bool,
    /// Whether retry's stdout and stderr are still watched for a reader that went away,
    /// beside `exit_fd`: each stops being watched once it reported anything.
    output_watched: [bool; 2],
    /// Whether retry's stdout and stderr can lose their reader at all: a pipe, a socket or a
    /// terminal can; a file or /dev/null cannot, and is never watched or polled for it.
    output_can_go: [bool; 2],
    /// Whether, while an attempt runs, its end and the handled signals are all the loop
    /// waits for (no stdin replayed, no output read, no `--stop-with-parent`, whose notice
    /// comes by a signal of its own or from a thread):
    /// then, where SIGCHLD is at its default action, they are blocked for the attempt and
    /// waited for with one `sigtimedwait` ([`Signals::block`]) instead of a process
    /// descriptor and a `ppoll`; whether retry's output lost its reader is asked with a
    /// `poll` of its own, when a failed attempt is judged.
    #[cfg(all(target_os = "linux", not(retry_portable)))]
    waits_for_the_end_alone: bool,
    /// Whether nobody reads retry's output any more, as the wait that learned of the
    /// attempt's end saw it; `None` when no such wait looked.
    output_gone_at_end: Option<bool>,
}

impl Process {
    /// The world of a run of `p`; `start` is when the run began.
    pub fn new(
        p: &Policy,
        signals: Signals,
        start: Instant,
        transcript: Option<&Transcript>,
    ) -> io::Result<Process> {
        let key = std::env::var_os(env::IDEMPOTENCY_KEY)
            .filter(|v| !v.is_empty())
            .unwrap_or_else(|| uuid::Uuid::new_v4().to_string().into());
        let depth = p.nesting.level;
        let mut envp: Vec<CString> = std::env::vars_os()
            .filter(|(name, _)| !env::GIVEN.iter().any(|own| name == own))
            .map(|(name, value)| entry(name.as_bytes(), value.as_bytes()))
            .collect::<nix::Result<_>>()?;
        let run_vars = vec![
            (env::IDEMPOTENCY_KEY, key),
            (env::DEPTH, depth.to_string().into()),
        ];
        for (name, value) in &run_vars {
            envp.push(entry(name.as_bytes(), value.as_bytes())?);
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
        #[cfg(all(target_os = "linux", not(retry_portable)))]
        let tied = p.stop_with_parent.then(|| tied::Tied::new(&program));
        let terminal = Terminal::detect();
        let reaper = reaps_orphans();
        let mut signals = signals;
        // A process descriptor tells an attempt's end, not its stop (job control, with a
        // terminal), nor the end of an orphan retry reaps: SIGCHLD does.
        if terminal.is_some() || reaper {
            signals.watch_children()?;
        }
        let stdout = Stream::new(true, hold, p.output_rules.reads(true)).recording(transcript);
        let stderr = Stream::new(false, false, p.output_rules.reads(false)).recording(transcript);
        let input = Input::new(p.stdin);
        let output_can_go = [stdout.can_lose_its_reader(), stderr.can_lose_its_reader()];
        #[cfg(all(target_os = "linux", not(retry_portable)))]
        let waits_for_the_end_alone = !p.stop_with_parent
            && !input.replays()
            && stdout.passes_through()
            && stderr.passes_through();
        Ok(Process {
            program,
            argv,
            envp,
            spare: Vec::new(),
            attr: spawn_attributes(signals.inherited_mask())?,
            #[cfg(all(target_os = "linux", not(retry_portable)))]
            tied,
            run_vars,
            start,
            signals,
            input,
            stdout,
            stderr,
            transcript: transcript.cloned(),
            marks_attempts: p.log.level >= 0,
            rules: p.output_rules.clone(),
            hints,
            hints_lost,
            attempt: 0,
            child: None,
            group: None,
            terminal,
            holds_terminal: false,
            watcher: None,
            typed: None,
            exited: None,
            reaper,
            child_end: None,
            exit_fd: None,
            exit_ready: false,
            output_watched: output_can_go,
            output_can_go,
            #[cfg(all(target_os = "linux", not(retry_portable)))]
            waits_for_the_end_alone,
            output_gone_at_end: None,
        })
    }

    /// Starts the attempt with posix_spawn: the environment is built once per run and only
    /// the `RETRY_*` entries change, where std's `Command` would copy and sort the whole
    /// environment again for every attempt.
    fn start(&mut self, attempt: &AttemptEnv) -> nix::Result<Pid> {
        // Each variable is written into a buffer kept from the attempt before: an attempt
        // allocates nothing for them once the first has started.
        let base = self.envp.len();
        let values: [(&str, Option<i128>); 4] = [
            (env::ATTEMPT, Some(attempt.attempt.into())),
            (env::MAX_ATTEMPTS, attempt.max_attempts.map(i128::from)),
            (env::PREVIOUS_EXIT, attempt.previous.map(i128::from)),
            (
                env::REMAINING_MS,
                attempt
                    .remaining
                    .map(|d| i128::try_from(d.as_millis()).unwrap_or(i128::MAX)),
            ),
        ];
        for (name, value) in values {
            let mut bytes = self.spare.pop().unwrap_or_default();
            bytes.clear();
            // Writing into a Vec cannot fail.
            let _ = write!(bytes, "{name}=");
            if let Some(value) = value {
                let _ = write!(bytes, "{value}");
            }
            self.envp
                .push(CString::new(bytes).map_err(|_| nix::errno::Errno::EINVAL)?);
        }
        let mut argv = None;
        if let Some(hints) = &self.hints {
            let file = hints.path(attempt.attempt);
            self.envp.push(entry(
                env::HINT_FILE.as_bytes(),
                file.as_os_str().as_bytes(),
            )?);
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
            // -qq: retry says nothing, not even which attempt printed what.
            let mark = match self.marks_attempts {
                true => format!("retry: --- output of attempt {}{of} ---\n", attempt.attempt),
                false => String::new(),
            };
            held.attempt(attempt.attempt, mark.as_bytes());
        }
        let stdio = [
            self.input.for_attempt(),
            self.stdout.for_attempt(),
            self.stderr.for_attempt(),
        ];
        let argv = argv.as_deref().unwrap_or(&self.argv);
        #[cfg(all(target_os = "linux", not(retry_portable)))]
        let spawned = match &self.tied {
            Some(tied) => tied.launch(self.signals.inherited_mask(), argv, &self.envp, stdio),
            None => launch(&self.program, &self.attr, argv, &self.envp, stdio),
        };
        #[cfg(not(all(target_os = "linux", not(retry_portable))))]
        let spawned = launch(&self.program, &self.attr, argv, &self.envp, stdio);
        // Kept for the next attempt, each for the same variable (taken from the end, so put
        // back last first: a CString is cut to its length, and a buffer that held a longer
        // value would be cut and grown again); RETRY_HINT_FILE's is let go.
        let spare = self.envp.drain(base..).take(values.len());
        self.spare.extend(spare.map(CString::into_bytes).rev());
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
        self.exit_fd = None;
        #[cfg(all(target_os = "linux", not(retry_portable)))]
        self.signals.unblock();
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
}

/// Whether retry's stdout or stderr, of those that `can_go` (`Stream::can_lose_its_reader`),
/// is a pipe or socket whose reader went away. A closed descriptor (`>&-`) is not: its owner
/// chose to drop that output.
fn output_has_no_reader(can_go: [bool; 2]) -> bool {
    let mut fds = [
        PollFd::new(super::child_fd::stdout(), PollFlags::POLLOUT),
        PollFd::new(super::child_fd::stderr(), PollFlags::POLLOUT),
    ];
    let n = match can_go {
        [false, false] => return false,
        [true, true] => 2,
        [false, true] => {
            fds.swap(0, 1);
            1
        }
        [true, false] => 1,
    };
    let fds = &mut fds[..n];
    nix::poll::poll(fds, nix::poll::PollTimeout::ZERO).is_ok()
        && fds
            .iter()
            .any(|fd| fd.revents().is_some_and(|r| r.contains(PollFlags::POLLERR)))
}

impl World for Process {
    fn elapsed(&self) -> Duration {
        self.start.elapsed()
    }

    fn spawn(&mut self, env: &AttemptEnv) -> Result<(), SpawnError> {
        // Blocked before the attempt starts, so that its end cannot come before it is
        // watched; a mask that cannot be set leaves the process descriptor to tell.
        #[cfg(all(target_os = "linux", not(retry_portable)))]
        if self.waits_for_the_end_alone && !self.signals.watches_children() {
            let _ = self.signals.block();
        }
        let started = self.start(env);
        #[cfg(all(target_os = "linux", not(retry_portable)))]
        if started.is_err() {
            self.signals.unblock();
        }
        match started {
            Ok(pid) => {
                self.group = Some(pid);
                self.child = Some(pid);
                self.child_end = None;
                self.holds_terminal = false;
                self.exit_ready = false;
                self.output_gone_at_end = None;
                self.exit_fd = None;
                #[cfg(all(target_os = "linux", not(retry_portable)))]
                if !self.signals.watches_children() && !self.signals.blocked() {
                    self.exit_fd = exit_fd::open(pid);
                    // No process descriptor (a kernel before 5.3, a sandbox): SIGCHLD tells,
                    // and the first wait looks for an end that came before it was watched.
                    if self.exit_fd.is_none() {
                        let _ = self.signals.watch_children();
                    }
                }
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
                let name = std::ffi::OsStr::from_bytes(self.program.as_bytes());
                let one_string = match errno {
                    Errno::ENOENT => one_string(name),
                    _ => None,
                };
                Err(SpawnError {
                    status: why.status(),
                    why,
                    message,
                    one_string,
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
            if let Some(event) = self.ready() {
                return event;
            }
            let timeout = match until {
                Some(until) => match until.checked_sub(self.elapsed()) {
                    Some(left) if !left.is_zero() => Some(left),
                    _ => return Event::Timer,
                },
                None => None,
            };
            let polled = self.poll(timeout);
            if polled.woken {
                self.signals.drain();
            }
            if !polled.interrupted {
                self.serve(&polled);
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
        let output = stdout.or(stderr);
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
        vars: Vec<(String, String)>,
        limits: HookLimits,
    ) -> Result<Status, String> {
        let vars: Vec<(OsString, OsString)> = vars
            .into_iter()
            .map(|(name, value)| (name.into(), value.into()))
            .chain(
                self.run_vars
                    .iter()
                    .map(|(name, value)| ((*name).into(), value.clone())),
            )
            .collect();
        super::hooks::run(command, &vars, limits, &mut self.signals)
    }

    fn output_gone(&self) -> bool {
        self.output_gone_at_end
            .unwrap_or_else(|| output_has_no_reader(self.output_can_go))
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
