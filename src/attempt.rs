//! The attempt loop: one event loop in which "the child exited", "a timer fired" and "a signal
//! arrived" are events. Everything that touches the world comes through [`World`], so the loop
//! is tested with a scripted world and a fake clock, without sleeping.

use std::time::Duration;

use nix::sys::signal::Signal;
use rand::Rng;

use crate::exit::Exit;
use crate::log::{Entry, Event as LogEvent, Log};
use crate::outcome::{Reason, Verdict};
use crate::policy::Policy;
use crate::status::{Status, signal_name};

/// What woke the loop.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event {
    /// The running attempt ended.
    Exited(Status),
    /// The time the loop asked to be woken at has come.
    Timer,
    /// A signal reached retry.
    Signal(i32),
}

/// What the loop may ask of the world: processes, time and signals.
pub trait World {
    /// Time since the run began.
    fn elapsed(&self) -> Duration;
    /// Starts an attempt with the given environment.
    fn spawn(&mut self, env: &AttemptEnv) -> Result<(), SpawnError>;
    /// Waits until the running attempt ends, a signal arrives or `until` (time since the run
    /// began) comes, whichever is first. Without an attempt running, only the last two wake it.
    fn wait(&mut self, until: Option<Duration>) -> Event;
    /// Sends a signal to the running attempt's process group.
    fn kill(&mut self, signal: i32);
}

/// What the child is told about its attempt (the `RETRY_*` environment).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AttemptEnv {
    /// 1-based.
    pub attempt: u32,
    /// `None` when there is no limit.
    pub max_attempts: Option<u32>,
    /// The previous attempt's status; `None` on the first.
    pub previous: Option<i32>,
    /// Time left before `--max-time`; `None` without one.
    pub remaining: Option<Duration>,
}

/// An attempt that could not be started.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SpawnError {
    /// 127 when the command was not found, 126 when it could not be executed.
    pub status: i32,
    pub message: String,
}

/// How one attempt ended.
#[derive(Clone, Copy, Debug)]
struct End {
    status: Status,
    /// Set when retry stopped the attempt for running out of time.
    stopped: Option<Stop>,
    /// The first cancelling signal passed on to the attempt.
    cancelled: Option<i32>,
    /// Why the attempt could not be started, if it could not.
    unstarted: Option<&'static str>,
}

/// Why retry stopped a running attempt.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Stop {
    AttemptTimeout,
    Deadline,
}

impl End {
    /// The status the outcome lists judge: 124 when retry stopped the attempt.
    fn number(&self) -> i32 {
        if self.stopped.is_some() { 124 } else { self.status.number() }
    }

    /// retry's own exit when this attempt is the last.
    fn exit(&self) -> Exit {
        match self.status {
            _ if self.stopped.is_some() => Exit::TIMED_OUT,
            Status::Code(code) => Exit::Code(u8::try_from(code).unwrap_or(u8::MAX)),
            Status::Signal(sig) => Exit::Signal(sig),
        }
    }
}

/// Signals that stop the retrying when they reach retry; the others are only passed on.
pub fn cancels(signal: i32) -> bool {
    [Signal::SIGINT, Signal::SIGTERM, Signal::SIGHUP, Signal::SIGQUIT]
        .iter()
        .any(|s| *s as i32 == signal)
}

/// Runs the attempts the policy allows and returns how retry should exit.
pub fn run<W: World, R: Rng + ?Sized>(p: &Policy, world: &mut W, rng: &mut R, log: &mut Log) -> Exit {
    let mut schedule = p.backoff.schedule();
    let mut previous = None;
    let mut attempt = 0u32;
    let entry = |event, attempt, world: &W| Entry::new(event, attempt, p.attempts, world.elapsed());
    if log.shows(LogEvent::Policy) {
        let mut e = entry(LogEvent::Policy, 0, world);
        e.reason = Some(p.to_string());
        log.write(&e);
    }
    loop {
        attempt += 1;
        let started = world.elapsed();
        let env = AttemptEnv {
            attempt,
            max_attempts: p.attempts,
            previous,
            remaining: p.max_time.map(|max| max.saturating_sub(started)),
        };
        if log.shows(LogEvent::Start) {
            log.write(&entry(LogEvent::Start, attempt, world));
        }
        let end = match world.spawn(&env) {
            Ok(()) => supervise(p, world, log, attempt, started),
            Err(e) => {
                let mut failure = entry(LogEvent::Signal, attempt, world);
                failure.reason = Some(e.message);
                log.write(&failure);
                End {
                    status: Status::Code(e.status),
                    stopped: None,
                    cancelled: None,
                    unstarted: Some(if e.status == 127 { "command not found" } else { "cannot execute" }),
                }
            }
        };
        previous = Some(end.number());

        let mut report = entry(LogEvent::Failure, attempt, world);
        report.status = Some(end.status);
        report.timed_out = end.stopped.is_some();
        report.duration = Some(world.elapsed().saturating_sub(started));
        let give_up = |log: &mut Log, reason: String, world: &W| {
            let mut e = entry(LogEvent::GiveUp, attempt, world);
            // A fatal reason names the status already.
            e.status = Some(end.status).filter(|_| !reason.starts_with("status"));
            e.timed_out = end.stopped.is_some();
            e.reason = Some(reason);
            log.write(&e);
            end.exit()
        };

        if let Some(sig) = end.cancelled {
            report.reason = Some(format!("not retried: cancelled by {}", signal_name(sig)));
            log.write(&report);
            return give_up(log, format!("cancelled by {}", signal_name(sig)), world);
        }
        let reason = match p.rules.classify(end.number()) {
            Verdict::Success => {
                if attempt > 1 {
                    log.write(&entry(LogEvent::Success, attempt, world));
                }
                return end.exit();
            }
            Verdict::Fatal(reason) => {
                report.reason = Some(match reason {
                    Reason::NeverBetter => "fatal: will not get better".to_string(),
                    _ => reason.to_string(),
                });
                log.write(&report);
                let why = match end.unstarted {
                    Some(what) => format!("status {}: {what}", end.number()),
                    None => format!("status {} is {reason}", end.number()),
                };
                return give_up(log, why, world);
            }
            Verdict::Retry(reason) => reason,
        };
        report.reason = Some(reason.to_string());
        if p.attempts.is_some_and(|max| attempt >= max) {
            log.write(&report);
            return give_up(log, "attempts used up".into(), world);
        }
        if end.stopped == Some(Stop::Deadline) {
            log.write(&report);
            return give_up(log, "--max-time reached".into(), world);
        }
        let delay = schedule.next_delay(rng);
        let now = world.elapsed();
        if let Some(max) = p.max_time
            && now.saturating_add(delay) >= max
        {
            log.write(&report);
            let why = format!(
                "the next attempt would start after the --max-time deadline (wait {}, {} left)",
                crate::log::human(delay),
                crate::log::human(max.saturating_sub(now))
            );
            return give_up(log, why, world);
        }
        report.delay = Some(delay);
        log.write(&report);
        if let Some(sig) = sleep(world, now.saturating_add(delay)) {
            let mut e = entry(LogEvent::GiveUp, attempt, world);
            e.status = Some(end.status);
            e.reason = Some(format!("cancelled by {} while waiting", signal_name(sig)));
            log.write(&e);
            return Exit::Code(u8::try_from(128 + sig).unwrap_or(u8::MAX));
        }
    }
}

/// Waits until `until`; returns the cancelling signal that cut the wait short, if any.
fn sleep<W: World>(world: &mut W, until: Duration) -> Option<i32> {
    loop {
        match world.wait(Some(until)) {
            Event::Timer => return None,
            Event::Signal(sig) if cancels(sig) => return Some(sig),
            // With no attempt running, there is nobody to pass other signals on to.
            Event::Signal(_) | Event::Exited(_) => {}
        }
    }
}

/// Watches a running attempt until it ends: stops it when its time is up and passes signals on.
fn supervise<W: World>(p: &Policy, world: &mut W, log: &mut Log, attempt: u32, started: Duration) -> End {
    let timeout_at = p.attempt_timeout.map(|t| started.saturating_add(t));
    let (limit, why) = match (timeout_at, p.max_time) {
        (Some(t), Some(d)) if d < t => (Some(d), Stop::Deadline),
        (Some(t), _) => (Some(t), Stop::AttemptTimeout),
        (None, d) => (d, Stop::Deadline),
    };
    let mut stopped = None;
    let mut kill_at = None;
    let mut cancelled = None;
    let note = |world: &W, log: &mut Log, msg: String| {
        let mut e = Entry::new(LogEvent::Signal, attempt, p.attempts, world.elapsed());
        e.reason = Some(msg);
        log.write(&e);
    };
    loop {
        let until = if stopped.is_none() { limit } else { kill_at };
        match world.wait(until) {
            Event::Exited(status) => {
                return End {
                    status,
                    stopped,
                    cancelled,
                    unstarted: None,
                };
            }
            Event::Timer if stopped.is_none() => {
                stopped = Some(why);
                world.kill(p.kill_signal);
                kill_at = Some(world.elapsed().saturating_add(p.kill_after));
                let what = match why {
                    Stop::AttemptTimeout => "--attempt-timeout",
                    Stop::Deadline => "--max-time",
                };
                note(world, log, format!("{what} reached; sending {} to the command", signal_name(p.kill_signal)));
            }
            Event::Timer => {
                world.kill(Signal::SIGKILL as i32);
                kill_at = None;
                note(world, log, format!("the command outlived --kill-after; sending SIGKILL"));
            }
            Event::Signal(sig) if cancels(sig) => {
                let again = cancelled.is_some() && [Signal::SIGINT as i32, Signal::SIGTERM as i32].contains(&sig);
                if again {
                    world.kill(Signal::SIGKILL as i32);
                    note(world, log, format!("{} again; killing the command", signal_name(sig)));
                } else {
                    world.kill(sig);
                    note(world, log, format!("{} received; passed on to the command, no more attempts", signal_name(sig)));
                }
                cancelled.get_or_insert(sig);
            }
            Event::Signal(sig) => world.kill(sig),
        }
    }
}
