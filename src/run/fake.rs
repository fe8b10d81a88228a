//! A world with a fake clock for the loop's tests: attempts follow a script, waits only move
//! the clock, and signals arrive at set times; and the harness that runs the loop in it.

use std::collections::VecDeque;
use std::io::Write;
use std::sync::{Arc, Mutex};

use std::time::Duration;

use crate::policy::status::{SIGINT, SIGKILL, SIGTERM, SIGUSR1};

use super::attempt::Attempts;
use crate::exit::Exit;
use crate::platform::world::{AttemptEnv, Event, Findings, HookLimits, SpawnError, World};
use crate::policy::status::Status;
use crate::report::log::Log;
use crate::report::summary::Summary;
use crate::state::{Shared, Store};

pub const TERM: i32 = SIGTERM;
pub const INT: i32 = SIGINT;
pub const KILL: i32 = SIGKILL;
pub const USR1: i32 = SIGUSR1;

pub fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// One scripted attempt: how it ends and how long it runs unless stopped.
#[derive(Clone, Copy)]
pub struct Script {
    pub status: Status,
    pub runs: Duration,
    /// Keeps running when sent these signals (a child that traps TERM).
    pub ignores_term: bool,
}

pub fn exits(code: i32, runs_ms: u64) -> Script {
    Script {
        status: Status::Code(code),
        runs: ms(runs_ms),
        ignores_term: false,
    }
}

/// A world with a fake clock: attempts follow a script, sleeps only move the clock, and
/// signals arrive at set times.
#[derive(Default)]
pub struct Fake {
    pub now: Duration,
    pub script: VecDeque<Script>,
    pub running: Option<(Script, Duration)>,
    /// What reaches the loop at set times: signals, a Ctrl-C typed at the terminal, Ctrl-Z.
    pub signals: VecDeque<(Duration, Event)>,
    pub slept: Vec<Duration>,
    pub killed: Vec<(Duration, i32)>,
    pub envs: Vec<AttemptEnv>,
    pub spawn_error: Option<SpawnError>,
    /// Processes of the group that outlive the first one and ignore all but SIGKILL.
    pub stragglers: bool,
    /// Each attempt's `last`, as the loop finished it.
    pub finished: Vec<bool>,
    /// What each attempt said besides its status, in order.
    pub findings: VecDeque<Findings>,
    /// Each hook run.
    pub hooks: Vec<HookRun>,
    /// Each hook run's limits.
    pub hook_limits: Vec<HookLimits>,
    /// Nothing reads retry's output.
    pub output_gone: bool,
    /// When the run was suspended (Ctrl-Z).
    pub suspended: Vec<Duration>,
    /// When the loop said the attempt had handled a Ctrl-C typed at the terminal.
    pub handled: Vec<Duration>,
}

impl Fake {
    pub fn new(script: impl IntoIterator<Item = Script>) -> Fake {
        Fake {
            script: script.into_iter().collect(),
            ..Fake::default()
        }
    }

    pub fn signal_at(self, at: Duration, signal: i32) -> Fake {
        self.event_at(at, Event::Signal(signal))
    }

    /// `event` reaches the loop at `at`: a Ctrl-C typed at the terminal (`Event::Typed`),
    /// Ctrl-Z (`Event::Suspend`).
    pub fn event_at(mut self, at: Duration, event: Event) -> Fake {
        self.signals.push_back((at, event));
        self
    }
}

impl World for Fake {
    fn elapsed(&self) -> Duration {
        self.now
    }

    fn spawn(&mut self, env: &AttemptEnv) -> Result<(), SpawnError> {
        self.envs.push(env.clone());
        if let Some(e) = self.spawn_error.clone() {
            return Err(e);
        }
        let script = self
            .script
            .pop_front()
            .expect("the loop ran more attempts than scripted");
        self.running = Some((script, self.now + script.runs));
        Ok(())
    }

    fn wait(&mut self, until: Option<Duration>) -> Event {
        let ends = self.running.map(|(_, at)| at);
        let next = [ends, until].into_iter().flatten().min();
        if let Some(&(at, event)) = self.signals.front()
            && next.is_none_or(|n| at <= n)
        {
            self.signals.pop_front();
            self.now = self.now.max(at);
            return event;
        }
        match (self.running, until) {
            (Some((script, at)), until) if until.is_none_or(|u| at <= u) => {
                self.now = at;
                self.running = None;
                Event::Exited(script.status)
            }
            (running, Some(u)) => {
                if running.is_none() {
                    self.slept.push(u.saturating_sub(self.now));
                }
                self.now = self.now.max(u);
                Event::Timer
            }
            (_, None) => panic!("waiting forever with nothing to wake the loop"),
        }
    }

    fn cancel_pending(&mut self) -> Option<i32> {
        match self.signals.front() {
            Some(&(at, Event::Signal(sig)))
                if at <= self.now && crate::policy::status::cancels(sig) =>
            {
                self.signals.pop_front();
                Some(sig)
            }
            _ => None,
        }
    }

    fn suspend(&mut self) {
        self.suspended.push(self.now);
    }

    fn typed_handled(&mut self) {
        self.handled.push(self.now);
    }

    fn group_alive(&mut self) -> bool {
        self.stragglers
    }

    fn finish(&mut self, last: bool) -> Result<(), String> {
        self.finished.push(last);
        Ok(())
    }

    fn findings(&mut self) -> Findings {
        self.findings.pop_front().unwrap_or_default()
    }

    fn output_gone(&self) -> bool {
        self.output_gone
    }

    fn hook(
        &mut self,
        command: &str,
        vars: Vec<(String, String)>,
        limits: HookLimits,
    ) -> Result<Status, String> {
        self.hooks.push((self.now, command.to_string(), vars));
        self.hook_limits.push(limits);
        let limit = [limits.timeout, limits.deadline]
            .into_iter()
            .flatten()
            .min();
        self.now += limit.map_or(ms(50), |t| t.min(ms(50)));
        Ok(Status::Code(if command == "fail" { 1 } else { 0 }))
    }

    fn kill(&mut self, signal: i32) {
        self.killed.push((self.now, signal));
        if signal == KILL {
            self.stragglers = false;
        }
        if let Some((script, _)) = self.running
            && !(script.ignores_term && signal != KILL)
        {
            // A killed attempt ends at once, by the signal.
            self.running = Some((
                Script {
                    status: Status::Signal(signal),
                    ..script
                },
                self.now,
            ));
        }
    }
}

/// A hook the fake world ran: when, the command, its variables.
pub type HookRun = (Duration, String, Vec<(String, String)>);

/// A sink the test can read after the log is done with it.
#[derive(Clone, Default)]
pub struct Sink(pub Arc<Mutex<Vec<u8>>>);

impl Write for Sink {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().expect("sink lock").extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

pub struct Run {
    pub exit: Exit,
    pub world: Fake,
    pub log: String,
    pub summary: Summary,
}

pub fn run_with(args: &[&str], world: Fake) -> Run {
    run_shared(args, world, None)
}

/// Runs the loop with the key's state in `store`.
pub fn run_shared(args: &[&str], mut world: Fake, store: Option<Box<dyn Store>>) -> Run {
    let policy = crate::setup::from_flags(args).expect("a valid policy");
    let sink = Sink::default();
    let mut log = Log::to(&policy.log, Box::new(sink.clone()));
    let mut rng = crate::policy::backoff::seeded(7);
    let mut summary = Summary::new(&policy.name);
    let shared = store.map(|store| {
        let settings = policy.state.as_ref().expect("--key");
        let mut shared = Shared::new(settings.key.clone(), settings.rules.clone(), store);
        // As a real run's handle is (state::open).
        shared.skip_moot_successes = true;
        shared
    });
    let exit = Attempts::new(&policy, &mut world, &mut rng, &mut log, &mut summary)
        .with_state(shared)
        .run();
    drop(log);
    let log = String::from_utf8(sink.0.lock().expect("sink lock").clone()).expect("UTF-8 log");
    Run {
        exit,
        world,
        log,
        summary,
    }
}
