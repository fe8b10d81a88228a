//! Hooks: shell commands run before each wait (`--on-retry`) and after the last failure
//! (`--on-giveup`), time-limited, whose failure is logged and changes nothing else.

use std::ffi::OsString;
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use nix::poll::{PollFd, PollFlags};
use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;

use super::group::group_alive;
use super::signals::Signals;
use super::status::status_of;
use super::world::HookLimits;
use crate::env;
use crate::policy::escalation::{Escalation, STRAGGLER_POLL};
use crate::policy::status::Status;

/// Between SIGTERM and SIGKILL to a hook's process group.
const GRACE: Duration = Duration::from_secs(1);

/// Runs `command` through `sh -c` with `vars` added to the environment, in a process group of
/// its own, stdout to retry's stderr (stdout belongs to the command being retried). After
/// the first of its `limits`, or as soon as a signal that cancels the run arrives (left
/// pending for the loop), the group gets SIGTERM, and a second later SIGKILL if anything of it
/// is left: the [`Escalation`] of an attempt, with a grace of its own.
pub fn run(
    command: &str,
    vars: &[(OsString, OsString)],
    limits: HookLimits,
    signals: &mut Signals,
) -> Result<Status, String> {
    // The hook's end wakes the wait below by SIGCHLD, watched before the hook starts so that
    // an end cannot come before it is.
    signals
        .watch_children()
        .map_err(|e| format!("cannot watch for its end: {e}"))?;
    let child = spawn(command, vars)?;
    watch(child, limits, signals)
}

/// Starts `sh -c command` in a process group of its own, with `vars` and without an attempt's
/// own variables, stdin from /dev/null and stdout to retry's stderr.
fn spawn(command: &str, vars: &[(OsString, OsString)]) -> Result<Child, String> {
    let mut sh = Command::new("sh");
    for name in env::ATTEMPT_ONLY {
        sh.env_remove(name);
    }
    // std puts SIGPIPE back to its default in the child; SIGXFSZ, which retry ignores, is put
    // back here, as an attempt's is: a hook under `ulimit -f` meets the limit as it would alone.
    if super::signals::defaults_for_child().contains(Signal::SIGXFSZ) {
        // SAFETY: between fork and exec the closure makes one async-signal-safe call,
        // signal(2) with SIG_DFL, which allocates nothing and takes no lock.
        unsafe {
            sh.pre_exec(|| {
                nix::libc::signal(nix::libc::SIGXFSZ, nix::libc::SIG_DFL);
                Ok(())
            });
        }
    }
    sh.arg("-c")
        .arg(command)
        .envs(vars.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::null())
        .stdout(std::io::stderr())
        .process_group(0)
        .spawn()
        .map_err(|e| format!("cannot start sh: {e}"))
}

/// Waits for the hook's end, stopping its group at `timeout` or when the run is cancelled,
/// and waiting for what is left of the group once it was asked to stop.
fn watch(mut child: Child, limits: HookLimits, signals: &mut Signals) -> Result<Status, String> {
    let group = Pid::from_raw(child.id() as i32);
    let started = Instant::now();
    let mut escalation = Escalation::default();
    // Why the hook was asked to stop, once it was.
    let mut stopped: Option<String> = None;
    // When SIGKILL went to the group: past a grace more, retry waits no longer.
    let mut killed_at: Option<Duration> = None;
    let mut ended = None;
    loop {
        if ended.is_none() {
            ended = match child.try_wait() {
                Ok(status) => status.map(status_of),
                Err(e) => return Err(format!("cannot wait for it: {e}")),
            };
        }
        match (ended, &stopped) {
            (Some(status), None) => return Ok(status),
            (Some(_), Some(why)) if !group_alive(group) => return Err(why.clone()),
            _ => {}
        }
        let now = started.elapsed();
        if let Some(why) = &stopped {
            if escalation.due(now) {
                let _ = killpg(group, Signal::SIGKILL);
                escalation.killed();
                killed_at = Some(now);
            } else if killed_at.is_some_and(|at| now >= at + GRACE) {
                // SIGKILL ends any process but one stuck in the kernel: wait no longer.
                return Err(format!("{why}; some of its processes outlived SIGKILL"));
            }
        } else if let Some(why) = reason_to_stop(signals, now, limits) {
            let _ = killpg(group, Signal::SIGTERM);
            escalation.ask(now, GRACE);
            stopped = Some(why);
        }
        let wake = [
            escalation.wake(now, ended.is_some()),
            killed_at.map(|at| at + GRACE),
            killed_at.map(|_| now + STRAGGLER_POLL),
            limits.timeout.filter(|_| stopped.is_none()),
            limits.deadline.filter(|_| stopped.is_none()),
        ]
        .into_iter()
        .flatten()
        .min();
        let left = wake.map(|wake| wake.saturating_sub(now).max(Duration::from_millis(1)));
        let mut fds = [PollFd::new(signals.fd(), PollFlags::POLLIN)];
        // The hook's end (SIGCHLD) or a signal wakes this; EINTR is one of them.
        let _ = super::pipe::wait(&mut fds, left);
        signals.drain();
    }
}

/// Why the hook is to be stopped now, if it is: the run was cancelled, or its time is up.
fn reason_to_stop(signals: &Signals, now: Duration, limits: HookLimits) -> Option<String> {
    if signals.cancel_pending() {
        return Some("stopped: the run was cancelled".to_string());
    }
    let human = crate::policy::duration::human;
    match (limits.timeout, limits.deadline) {
        (Some(timeout), _) if now >= timeout => Some(format!("timed out after {}", human(timeout))),
        (_, Some(deadline)) if now >= deadline => Some(format!(
            "stopped after {}: --max-time reached",
            human(deadline)
        )),
        _ => None,
    }
}
