//! The real world of the attempt loop: the child process in its own process group, the clock,
//! and signals, all waited for in one `ppoll`.

use std::ffi::OsString;
use std::os::unix::process::CommandExt;
use std::process::{Child, Command};
use std::time::{Duration, Instant};

use nix::errno::Errno;
use nix::poll::{PollFd, PollFlags, ppoll};
use nix::sys::signal::{Signal, killpg};
use nix::sys::time::TimeSpec;
use nix::unistd::Pid;

use crate::attempt::{AttemptEnv, Event, SpawnError, World};
use crate::signals::Signals;
use crate::status::Status;

/// Runs the command for real.
pub struct Process {
    command: Vec<OsString>,
    /// Variables that are the same for every attempt.
    fixed_env: Vec<(&'static str, String)>,
    start: Instant,
    signals: Signals,
    child: Option<Child>,
}

impl Process {
    /// `start` is when the run began; the idempotency key and depth are the run's own.
    pub fn new(command: Vec<OsString>, signals: Signals, start: Instant) -> Process {
        let inherited = |name| std::env::var(name).ok().filter(|v| !v.is_empty());
        let key =
            inherited("RETRY_IDEMPOTENCY_KEY").unwrap_or_else(|| uuid::Uuid::new_v4().to_string());
        let depth = inherited("RETRY_DEPTH")
            .and_then(|d| d.parse::<u32>().ok())
            .unwrap_or(0)
            .saturating_add(1);
        Process {
            command,
            fixed_env: vec![
                ("RETRY_IDEMPOTENCY_KEY", key),
                ("RETRY_DEPTH", depth.to_string()),
            ],
            start,
            signals,
            child: None,
        }
    }
}

impl World for Process {
    fn elapsed(&self) -> Duration {
        self.start.elapsed()
    }

    fn spawn(&mut self, env: &AttemptEnv) -> Result<(), SpawnError> {
        let (program, args) = self.command.split_first().ok_or_else(|| SpawnError {
            status: 127,
            message: "no command given".into(),
        })?;
        let mut command = Command::new(program);
        let optional = |v: Option<String>| v.unwrap_or_default();
        command
            .args(args)
            // Its own process group, so that a timeout or a forwarded signal reaches every
            // process the attempt started, not only the first.
            .process_group(0)
            .envs(self.fixed_env.iter().map(|(k, v)| (k, v)))
            .env("RETRY_ATTEMPT", env.attempt.to_string())
            .env(
                "RETRY_MAX_ATTEMPTS",
                optional(env.max_attempts.map(|n| n.to_string())),
            )
            .env(
                "RETRY_PREVIOUS_EXIT",
                optional(env.previous.map(|n| n.to_string())),
            )
            .env(
                "RETRY_REMAINING_MS",
                optional(env.remaining.map(|d| d.as_millis().to_string())),
            );
        match command.spawn() {
            Ok(child) => {
                self.child = Some(child);
                Ok(())
            }
            Err(e) => {
                let errno = e.raw_os_error().map(Errno::from_raw);
                let status = if e.kind() == std::io::ErrorKind::NotFound {
                    127
                } else {
                    126
                };
                let why = errno.map_or_else(|| e.to_string(), |n| n.desc().to_string());
                Err(SpawnError {
                    status,
                    message: format!("cannot run '{}': {why}", program.to_string_lossy()),
                })
            }
        }
    }

    fn wait(&mut self, until: Option<Duration>) -> Event {
        loop {
            self.signals.drain();
            if let Some(signal) = self.signals.take() {
                return Event::Signal(signal);
            }
            if let Some(child) = self.child.as_mut() {
                match child.try_wait() {
                    Ok(Some(status)) => {
                        self.child = None;
                        return Event::Exited(status.into());
                    }
                    Ok(None) => {}
                    // Only a child that is not ours fails to be waited for; treat it as gone.
                    Err(_) => {
                        self.child = None;
                        return Event::Exited(Status::Code(125));
                    }
                }
            }
            let timeout = match until {
                Some(until) => match until.checked_sub(self.elapsed()) {
                    Some(left) if !left.is_zero() => Some(TimeSpec::from_duration(left)),
                    _ => return Event::Timer,
                },
                None => None,
            };
            let mut fds = [PollFd::new(self.signals.fd(), PollFlags::POLLIN)];
            // EINTR is a signal arriving, which the next turn of the loop picks up.
            let _ = ppoll(&mut fds, timeout, None);
        }
    }

    fn kill(&mut self, signal: i32) {
        // Only while the child is not yet reaped: until then its pid, and so its process
        // group's id, cannot be taken by another process.
        let (Some(child), Ok(signal)) = (&self.child, Signal::try_from(signal)) else {
            return;
        };
        let _ = killpg(Pid::from_raw(child.id() as i32), signal);
    }
}
