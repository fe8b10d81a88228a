//! Hooks: shell commands run before each wait (`--on-retry`) and after the last failure
//! (`--on-giveup`), time-limited, whose failure is logged and changes nothing else.

use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use nix::poll::{PollFd, PollFlags, ppoll};
use nix::sys::signal::{Signal, killpg};
use nix::sys::time::TimeSpec;
use nix::unistd::Pid;

use super::attempt::STRAGGLER_POLL;
use super::process::group_alive;
use super::signals::Signals;
use crate::policy::status::Status;

/// Between SIGTERM and SIGKILL to a hook's process group.
const GRACE: Duration = Duration::from_secs(1);

/// The attempt's own variables, which a hook must not inherit from a retry above this one.
const ATTEMPT_VARIABLES: [&str; 4] = [
    "RETRY_PREVIOUS_EXIT",
    "RETRY_REMAINING_MS",
    "RETRY_HINT_FILE",
    "RETRY_NEXT_DELAY_MS",
];

/// Runs `command` through `sh -c` with `vars` added to the environment, in a process group of
/// its own, stdout to retry's stderr (stdout belongs to the command being retried). After
/// `timeout`, or as soon as a signal that cancels the run arrives (left pending for the loop),
/// the group gets SIGTERM, and a second later SIGKILL if anything of it is left.
pub fn run(
    command: &str,
    vars: &[(String, String)],
    timeout: Duration,
    signals: &mut Signals,
) -> Result<Status, String> {
    let mut sh = Command::new("sh");
    for name in ATTEMPT_VARIABLES {
        sh.env_remove(name);
    }
    let mut child = sh
        .arg("-c")
        .arg(command)
        .envs(vars.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::null())
        .stdout(std::io::stderr())
        .process_group(0)
        .spawn()
        .map_err(|e| format!("cannot start sh: {e}"))?;
    let group = Pid::from_raw(child.id() as i32);
    let started = Instant::now();
    let mut stopped: Option<(Instant, String)> = None;
    let mut killed = false;
    let mut ended = None;
    loop {
        if ended.is_none() {
            ended = match child.try_wait() {
                Ok(status) => status.map(super::process::status_of),
                Err(e) => return Err(format!("cannot wait for it: {e}")),
            };
        }
        let gone = || !group_alive(group);
        match (ended, &stopped) {
            (Some(status), None) => return Ok(status),
            (Some(_), Some((_, why))) if gone() => return Err(why.clone()),
            _ => {}
        }
        let now = Instant::now();
        if stopped.is_none() {
            let why = if signals.cancel_pending() {
                Some("stopped: the run was cancelled".to_string())
            } else if now >= started + timeout {
                Some(format!(
                    "timed out after {}",
                    crate::policy::duration::human(timeout)
                ))
            } else {
                None
            };
            if let Some(why) = why {
                let _ = killpg(group, Signal::SIGTERM);
                stopped = Some((now, why));
            }
        } else if let Some((at, why)) = &stopped
            && now >= *at + GRACE
        {
            if !killed {
                let _ = killpg(group, Signal::SIGKILL);
                killed = true;
            } else if now >= *at + GRACE + GRACE {
                // SIGKILL ends any process but one stuck in the kernel: wait no longer.
                return Err(format!("{why}; some of its processes outlived SIGKILL"));
            }
        }
        let wake = match &stopped {
            Some((at, _)) if killed => (*at + GRACE + GRACE).min(now + STRAGGLER_POLL),
            Some((at, _)) if ended.is_some() => (*at + GRACE).min(now + STRAGGLER_POLL),
            Some((at, _)) => *at + GRACE,
            None => started + timeout,
        };
        let left = wake
            .saturating_duration_since(now)
            .max(Duration::from_millis(1));
        let mut fds = [PollFd::new(signals.fd(), PollFlags::POLLIN)];
        // The hook's end (SIGCHLD) or a signal wakes this; EINTR is one of them.
        let _ = ppoll(&mut fds, Some(TimeSpec::from_duration(left)), None);
        signals.drain();
    }
}
