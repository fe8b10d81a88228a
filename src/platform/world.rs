//! What the attempt loop may ask of the world: processes, time and signals. [`Process`] is the
//! real world; the loop's tests script a fake one with a fake clock.
//!
//! [`Process`]: super::process::Process

use std::time::Duration;

pub use crate::policy::judgement::{Findings, Unstarted};
use crate::policy::status::Status;

/// What woke the loop.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event {
    /// The running attempt ended.
    Exited(Status),
    /// The time the loop asked to be woken at has come.
    Timer,
    /// A signal reached retry.
    Signal(i32),
    /// The attempt that held the terminal ended as a Ctrl-C (or Ctrl-\) typed there ends a
    /// command: by SIGINT or SIGQUIT, or with status 130 or 131 from a trap. retry received no
    /// signal itself; it takes the end as this signal's cancel.
    Interrupted(i32),
    /// A Ctrl-C (or Ctrl-\) was typed at the terminal the attempt holds: the attempt got the
    /// signal from the terminal, retry did not; the run is cancelled unless the attempt
    /// handles it and goes on (a REPL).
    Typed(i32),
    /// Ctrl-Z reached retry (SIGTSTP): the loop clears what it shows on the terminal, then
    /// asks the world to [`World::suspend`] the run.
    Suspend,
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
    /// A signal that cancels the run and has arrived, taken now, without waiting: asked before
    /// the first attempt, after the wait for the key.
    fn cancel_pending(&mut self) -> Option<i32>;
    /// Sends a signal to the running attempt's process group.
    fn kill(&mut self, signal: i32);
    /// Stops the running attempt, if any, and retry with it, as Ctrl-Z stops a job; returns
    /// once continued (`fg`, `bg`), the attempt going on too.
    fn suspend(&mut self) {}
    /// The attempt outlived a Ctrl-C typed at the terminal by `--kill-after`: it handled it
    /// and went on (a REPL), and the run is not cancelled after all.
    fn typed_handled(&mut self) {}
    /// Whether any process of the attempt's group is still there after its first one ended.
    fn group_alive(&mut self) -> bool;
    /// What the attempt that just ended said besides its status.
    fn findings(&mut self) -> Findings;
    /// Nothing reads retry's stdout or stderr any more (a pipe whose reader went away, as when
    /// `less` quits). Asked only before a retry: the run then ends as a shell pipeline would,
    /// since every further attempt's output would have nowhere to go.
    fn output_gone(&self) -> bool;
    /// Runs a hook command with these variables added to the run's environment, stopped at
    /// the first of its `limits`.
    fn hook(
        &mut self,
        command: &str,
        vars: Vec<(String, String)>,
        limits: HookLimits,
    ) -> Result<Status, String>;
    /// Why no further attempt can be given what this one had, if that is so: stdin that could
    /// not be recorded for replay. Asked only before a retry.
    fn unrepeatable(&self) -> Option<String> {
        None
    }
    /// The attempt's judgement is known: `last` when it ends the run (its held output goes to
    /// stdout then, else to stderr). Fails when output that retry carries for the attempt
    /// could not be delivered.
    fn finish(&mut self, last: bool) -> Result<(), String>;
}

/// When a hook is stopped, counted from its start.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HookLimits {
    /// `--hook-timeout`; `None` for none.
    pub timeout: Option<Duration>,
    /// The time left before `--max-time`, for a hook that runs within the run (`--on-retry`);
    /// `None` when nothing bounds the run, or for `--on-giveup`, which runs once it is over.
    pub deadline: Option<Duration>,
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
    /// 127 when the command was not found, 126 when it could not be executed, 125 when the
    /// system lacked the resources to start it.
    pub status: i32,
    /// Why, as the judgement sees it.
    pub why: Unstarted,
    pub message: String,
    /// A name that no file has and that a shell would have read as more than a name: a whole
    /// command given as one argument (`retry 'curl -fsS URL'`).
    pub one_string: Option<OneString>,
}

/// A whole command given as one argument, which names no file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OneString {
    /// Words apart by spaces, and nothing else a shell would read.
    Words,
    /// A shell line: quotes, a pipe, a redirection, a variable, a pattern.
    ShellLine,
}
