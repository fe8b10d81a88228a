//! What the attempt loop tells, as it happens: each event arrives typed, and becomes the log's
//! lines (text or JSON) and the summary's fields here. The loop composes no words.

use std::time::Duration;

use super::log::{Entry, Event, KeyFields, Log, PolicyFields, attempt_label};
use super::summary::{AttemptSummary, KeySummary, Outcome, RefusedBy, StoreSummary, Summary};
use super::words::{self, OpenedBy};
use crate::exit::Exit;
use crate::platform::world::SpawnError;
use crate::policy::Policy;
use crate::policy::duration::human;
use crate::policy::judgement::{Decision, Ended, Judgement, Stop};
use crate::policy::shared::{Refusal, Refused};
use crate::policy::status::{Status, signal_name};

/// How an attempt's time ran out, or how it was cancelled, as the log tells it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stopping {
    /// Its time ran out: the kill signal went to its group.
    TimeUp(Stop),
    /// It outlived `--kill-after`: SIGKILL went to its group.
    Killed,
    /// A cancelling signal reached retry and was passed on.
    Cancel(i32),
    /// A second cancelling signal (`now`), of the same kind as the `first` or not: SIGKILL went
    /// to the group.
    CancelAgain { first: i32, now: i32 },
    /// The attempt that held the terminal ended as a Ctrl-C (or Ctrl-\) typed there ends a
    /// command.
    TerminalCancel(i32),
    /// A Ctrl-C (or Ctrl-\) was typed at the terminal the attempt holds.
    Typed(i32),
}

/// Which attempt a line is about, as the loop counts: the attempt running or last run
/// (1-based; 0 before the first), and the last one the limit allows (`None` without a limit),
/// moved on by `--reset-after`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Count {
    pub attempt: u32,
    pub max_attempts: Option<u32>,
}

/// The reporter of one run: its log, its summary, and the key's state as the run last saw it.
pub struct Reporter<'a> {
    policy: &'a Policy,
    log: &'a mut Log,
    summary: &'a mut Summary,
    /// The attempt the loop last said was starting (or reset), which labels every line
    /// until the next: the loop owns the count, the reporter only repeats it.
    at: Count,
    /// The key's state as the run last saw it, on every log line; `None` without one.
    pub key: Option<KeyFields>,
    /// The key's name, with `--key`.
    key_name: String,
    /// What the key's breaker did after an attempt, logged after that attempt's own line.
    moves: Vec<String>,
    /// How the running attempt was cancelled, held for the give-up line in a text log, where
    /// a cancel is one line.
    held: Option<Stopping>,
    /// The attempt ended as a pipeline's writer does once its reader is done
    /// ([`Judgement::PipeClosed`]): a shell says nothing, and the run says it in its give-up
    /// line alone, only with -v (and in a `--log-file`, which records every run).
    pipe_closed: bool,
}

impl<'a> Reporter<'a> {
    pub fn new(policy: &'a Policy, log: &'a mut Log, summary: &'a mut Summary) -> Self {
        if let Some(state) = &policy.state {
            summary.store = Some(StoreSummary {
                key: state.key.clone(),
                backend: state
                    .store
                    .as_ref()
                    .map_or("file".into(), |store| store.url.label()),
                errors: 0,
            });
        }
        let key_name = policy
            .state
            .as_ref()
            .map_or(String::new(), |s| s.key.clone());
        Reporter {
            policy,
            log,
            summary,
            at: Count {
                attempt: 0,
                max_attempts: policy.attempts,
            },
            key: None,
            key_name,
            moves: Vec::new(),
            held: None,
            pipe_closed: false,
        }
    }

    /// A log entry for this attempt, at `now` (time since the run began).
    fn entry(&self, event: Event, now: Duration) -> Entry {
        let mut e = Entry::new(event, self.at.attempt, self.at.max_attempts, now);
        e.key = self.key.clone();
        e
    }

    fn say(&mut self, event: Event, now: Duration, msg: String) {
        let mut e = self.entry(event, now);
        e.reason = Some(msg);
        self.log.write(&e);
    }

    /// Before the first attempt: the policy (-v).
    pub fn policy_line(&mut self, now: Duration) {
        if self.log.shows(Event::Policy) {
            let mut e = self.entry(Event::Policy, now);
            e.reason = Some(words::policy_line(self.policy));
            e.policy = Some(PolicyFields::of(self.policy));
            self.log.write(&e);
        }
    }

    /// The random wait before the first attempt begins (-v): how long, out of `--splay`.
    pub fn splaying(&mut self, now: Duration, wait: Duration) {
        if self.log.shows(Event::Splay) {
            let mut e = self.entry(Event::Splay, now);
            e.delay = Some(wait);
            e.reason = Some(format!(
                "drawn at random from 0 to --splay {}",
                human(self.policy.splay)
            ));
            self.log.write(&e);
        }
    }

    /// The warnings about the settings: a retry inside another, a breaker's open time past
    /// its longest, a store without a key.
    pub fn warnings(&mut self, now: Duration) {
        for warning in words::warnings(self.policy) {
            self.say(Event::Warning, now, warning);
        }
        if let Some(warning) = words::store_warning(self.policy) {
            self.say(Event::Warning, now, format!("warning: {warning}"));
        }
    }

    /// The run probes the key's half-open breaker.
    pub fn probing(&mut self, now: Duration) {
        let msg = format!(
            "key '{}': the breaker is half-open; this run probes with one attempt",
            self.key_name
        );
        self.say(Event::State, now, msg);
    }

    /// The key's state could not be used: the run goes on without it.
    pub fn state_lost(&mut self, now: Duration, error: &str) {
        let msg = format!(
            "warning: key '{}': {error}; going on without its breaker and budget",
            self.key_name
        );
        self.say(Event::State, now, msg);
    }

    /// The key's state could not be read in time (its lock): the run goes on without knowing
    /// it, and makes no retry when `retries_refused` (its breaker or budget would have had to
    /// allow one).
    pub fn state_unknown(&mut self, now: Duration, error: &str, retries_refused: bool) {
        let msg = words::state_unknown(&self.key_name, error, retries_refused);
        self.say(Event::State, now, msg);
    }

    /// A warning the key's store left, though its operation went through.
    pub fn state_warning(&mut self, now: Duration, warning: &str) {
        self.say(Event::State, now, format!("warning: {warning}"));
    }

    /// The store's errors in this run, for the summary.
    pub fn store_errors(&mut self, errors: u32) {
        if let Some(store) = &mut self.summary.store {
            store.errors = errors;
        }
    }

    /// The key's state, as the run last saw it, goes into the summary.
    pub fn key_summary(&mut self) {
        if let Some(seen) = self.key.clone() {
            let refused = self.summary.key.as_ref().and_then(|k| k.refused);
            self.summary.key = Some(KeySummary { seen, refused });
        }
    }

    /// The key stopped the run: recorded in the summary.
    pub fn refused_by(&mut self, refused: Refused) {
        self.key_summary();
        if let Some(key) = &mut self.summary.key {
            key.refused = Some(match refused.refusal {
                Refusal::Budget => RefusedBy::Budget,
                Refusal::Unknown => RefusedBy::Unknown,
                Refusal::Open { .. } | Refusal::Probing { .. } | Refusal::Remembered => {
                    RefusedBy::Breaker
                }
            });
        }
    }

    /// The key's breaker opened after this attempt, for `open`.
    pub fn opened(&mut self, open: Duration, by: OpenedBy) {
        self.moves.push(words::opened(&self.key_name, open, by));
    }

    /// The key's breaker closed after this attempt: its probe succeeded.
    pub fn closed(&mut self) {
        self.moves.push(words::closed(&self.key_name));
    }

    /// Logs the breaker's moves after the attempt that made them.
    fn log_moves(&mut self, now: Duration) {
        for msg in std::mem::take(&mut self.moves) {
            self.say(Event::State, now, msg);
        }
    }

    /// Ends a run that may not start because the key refuses it: exit 75, and why.
    pub fn refused(&mut self, now: Duration, refused: Refused) -> Exit {
        let why = words::refusal(refused, &self.key_name);
        self.refused_by(refused);
        self.refuse(now, why)
    }

    /// Ends a run that may not start because its `--state` store failed and `--state-fail` is
    /// closed: exit 75, and why.
    pub fn closed_store(&mut self, now: Duration, error: &str) -> Exit {
        let why = format!(
            "key '{}': {error}, and --state-fail is closed",
            self.key_name
        );
        self.refuse(now, why)
    }

    fn refuse(&mut self, now: Duration, why: String) -> Exit {
        self.say(Event::Refused, now, why.clone());
        let exit = Exit::REFUSED;
        self.summary.end(Outcome::Refused, why, exit.status(), now);
        exit
    }

    /// Ends a run that a signal cancelled before its first attempt: it ends by that signal.
    pub fn cancelled_before(&mut self, now: Duration, sig: i32) -> Exit {
        let why = format!("{} before the first attempt", words::cancelled(sig));
        let mut e = self.entry(Event::GiveUp, now);
        e.reason = Some(why.clone());
        self.name_job(&mut e);
        self.log.write(&e);
        let exit = Exit::Signal(sig);
        self.summary
            .end(Outcome::Cancelled, why, exit.status(), now);
        exit
    }

    /// Attempt `at` starts (-v); the lines after this one are about it.
    pub fn starting(&mut self, now: Duration, at: Count) {
        self.at = at;
        if self.log.shows(Event::Start) {
            let e = self.entry(Event::Start, now);
            self.log.write(&e);
        }
    }

    /// The command could not be started.
    pub fn not_started(&mut self, now: Duration, e: SpawnError) {
        let message = match (e.one_string, self.policy.command.first()) {
            (Some(how), Some(name)) => format!("{}; {}", e.message, words::one_string(how, name)),
            _ => e.message,
        };
        self.say(Event::NotStarted, now, message);
    }

    /// retry stopped or cancelled the running attempt. A signal received, or a Ctrl-C typed
    /// at the terminal, is said when it arrives (the person who pressed it sees it was taken,
    /// however long the command takes to end), and the give-up line then says how the
    /// attempt ended. A Ctrl-C inferred from how the attempt ended is known only then: in a
    /// text log, it is said on the give-up line.
    pub fn stopping(&mut self, now: Duration, how: Stopping) {
        if let Stopping::TerminalCancel(_) = how
            && self.hold(how)
        {
            return;
        }
        if let Some(held @ Stopping::TerminalCancel(_)) = self.held {
            // More happens to the cancelled attempt: the cancel, held for the give-up line, is
            // said first, on its own line.
            self.held = None;
            self.stopping_now(now, held);
        }
        self.stopping_now(now, how);
        if let Stopping::Cancel(_) | Stopping::Typed(_) = how {
            // The give-up line says how the attempt ended, not the cancel again.
            self.hold(how);
        }
    }

    /// The attempt outlived the Ctrl-C typed at the terminal by `--kill-after`: it handled
    /// it and went on, and the run goes on as if it had not been typed.
    pub fn went_on(&mut self, now: Duration, sig: i32) {
        self.held = None;
        let msg = format!(
            "the command went on for --kill-after ({}) after the {}: it handled it (a REPL, \
             psql, gdb); its exit will be judged as usual",
            human(self.policy.kill_after),
            keys(sig)
        );
        self.say(Event::TerminalCancel, now, msg);
    }

    fn stopping_now(&mut self, now: Duration, how: Stopping) {
        let (event, msg) = match how {
            Stopping::TimeUp(why) => {
                let what = match why {
                    Stop::AttemptTimeout => "--attempt-timeout",
                    Stop::Deadline => "--max-time",
                };
                let sig = signal_name(self.policy.kill_signal);
                (
                    Event::Stop,
                    format!("{what} reached; sent {sig} to the command"),
                )
            }
            Stopping::Killed => (
                Event::Stop,
                "the command outlived --kill-after; sent SIGKILL".to_string(),
            ),
            Stopping::Cancel(sig) if crate::platform::signals::from_parent(sig) => (
                Event::Signal,
                format!(
                    "retry's parent ended during {} (--stop-with-parent): SIGTERM passed on \
                         to the command, as for a SIGTERM; no more attempts",
                    attempt_label(self.at.attempt, self.at.max_attempts)
                ),
            ),
            Stopping::Cancel(sig) => (
                Event::Signal,
                format!(
                    "{} received during {}; passed on to the command; no more attempts",
                    signal_name(sig),
                    attempt_label(self.at.attempt, self.at.max_attempts)
                ),
            ),
            Stopping::CancelAgain { first, now } => {
                // The first one, held for the give-up line, is said now: this line follows it.
                let which = if first == now {
                    format!("{} again", signal_name(now))
                } else {
                    format!("{} after {}", signal_name(now), signal_name(first))
                };
                (Event::Signal, format!("{which}; killed the command"))
            }
            Stopping::Typed(sig) => (
                Event::TerminalCancel,
                format!(
                    "{} typed at the terminal ({} received) during {}; the command has it; no \
                     more attempts unless it handles it and goes on for --kill-after ({})",
                    keys(sig),
                    signal_name(sig),
                    attempt_label(self.at.attempt, self.at.max_attempts),
                    human(self.policy.kill_after)
                ),
            ),
            Stopping::TerminalCancel(sig) => {
                let key = keys(sig);
                (
                    Event::TerminalCancel,
                    format!(
                        "the command ended with status {} while it held the terminal, as {key} \
                         ends a command: taken as a {key} typed there; no more attempts",
                        Exit::Signal(sig).status()
                    ),
                )
            }
        };
        self.say(event, now, msg);
    }

    /// The attempt ran at least `--reset-after`: the schedule and the limit start afresh.
    /// `at` is the attempt with the limit moved on from it.
    pub fn reset(&mut self, now: Duration, ran: Duration, at: Count) {
        self.at = at;
        let (Some(after), attempt) = (self.policy.reset_after, self.at.attempt) else {
            return;
        };
        let limit = match self.at.max_attempts {
            Some(max) => format!(", up to attempt {max}"),
            None => String::new(),
        };
        let mut e = self.entry(Event::Reset, now);
        e.duration = Some(ran);
        e.reason = Some(format!(
            "attempt {attempt} ran {} (--reset-after {}): the backoff starts afresh from it, and \
             the attempt limit counts from it{limit}",
            human(ran),
            human(after)
        ));
        self.log.write(&e);
    }

    /// Holds how the attempt was cancelled for the give-up line, in a text log; a JSON log
    /// keeps an event for it. Returns whether it was held.
    fn hold(&mut self, how: Stopping) -> bool {
        if self.log.is_text() && self.log.shows(Event::GiveUp) {
            self.held = Some(how);
        }
        self.held.is_some()
    }

    /// How the attempt was cancelled and how it ended, for the one line of a cancelled run.
    fn cancel_line(&self, how: Stopping, end: &Ended) -> String {
        let attempt = attempt_label(self.at.attempt, self.at.max_attempts);
        let ended = format!("{attempt} ended after {}: {}", human(end.ran), end.status);
        match how {
            // Said when it arrived.
            Stopping::Cancel(_) | Stopping::Typed(_) => ended,
            Stopping::TerminalCancel(sig) => {
                let key = keys(sig);
                format!(
                    "{attempt} ended with status {} while it held the terminal, as {key} ends a \
                     command: taken as a {key} typed there",
                    Exit::Signal(sig).status()
                )
            }
            // Not held: they are said as they happen.
            Stopping::TimeUp(_) | Stopping::Killed | Stopping::CancelAgain { .. } => ended,
        }
    }

    /// The attempt ended: counted in the summary.
    pub fn ended(&mut self, now: Duration, end: &Ended) {
        if let Some(warning) = &end.findings.warning {
            self.say(Event::Warning, now, warning.clone());
        }
        self.summary.attempted(
            AttemptSummary {
                status: end.number(),
                signal: end.status.signal_name().filter(|_| end.stopped.is_none()),
                timed_out: end.stopped.is_some(),
                duration_ms: end.ran.as_millis(),
            },
            end.ran,
        );
    }

    /// The attempt's log line with its judgement, and the wait before the next one when there
    /// is one; then the breaker's moves.
    pub fn failed(&mut self, now: Duration, end: &Ended, d: &Decision, delay: Option<Duration>) {
        // A cancelled attempt is said on the give-up line, with how it was cancelled.
        if self.held.is_some() && end.cancelled.is_some() {
            self.log_moves(now);
            return;
        }
        if d.overruled.is_none() && d.judgement == Judgement::PipeClosed {
            self.pipe_closed = true;
            self.log_moves(now);
            return;
        }
        // Its words are made only for a log that shows them: at -q and below, an attempt
        // makes none.
        if self.log.shows(Event::Failure) {
            let mut e = self.entry(Event::Failure, now);
            e.status = Some(end.status);
            e.timed_out = end.stopped.is_some();
            e.duration = Some(end.ran);
            e.reason = words::judgement(d, &self.policy.rules, &self.key_name);
            e.delay = delay;
            self.log.write(&e);
        }
        self.log_moves(now);
    }

    /// The attempt succeeded: said when it was not the first; the run ends.
    /// A success at the first attempt is said only with -v, and in a --log-file.
    pub fn succeeded(&mut self, now: Duration, end: &Ended, exit: Exit) {
        if let Some(held @ Stopping::TerminalCancel(_)) = self.held.take() {
            self.stopping_now(now, held);
        }
        if self.at.attempt > 1 || self.policy.log.level >= 2 || self.log.records_every_run() {
            let mut e = self.entry(Event::Success, now);
            e.status = Some(end.status);
            e.duration = Some(end.ran);
            self.name_job(&mut e);
            self.log.write(&e);
        }
        self.log_moves(now);
        self.summary
            .end(Outcome::Success, "succeeded", exit.status(), now);
    }

    /// Why the key refuses the run or its retry.
    pub fn refusal(&self, refused: Refused) -> String {
        words::refusal(refused, &self.key_name)
    }

    /// The words of the decision that ends the run.
    pub fn why(&self, d: &Decision) -> String {
        words::why(d, &self.policy.rules, &self.key_name)
    }

    /// The command, and the job's `--name` when given, on a line that ends the run.
    fn name_job(&self, e: &mut Entry) {
        e.command = Some(self.policy.command_line());
        e.job = self.policy.named.then(|| self.policy.name.clone());
    }

    /// The give-up line. A run that gives up never exits 0, even when its last attempt did
    /// (`--success-on` without 0): a caller must not read a failure as a success; it exits 1
    /// then, as for an output rule, or 22 for an HTTP status, and the line says so. Returns
    /// the exit.
    pub fn giving_up(
        &mut self,
        now: Duration,
        end: &Ended,
        why: &str,
        names_status: bool,
        outcome: Outcome,
        exit: Exit,
    ) -> Exit {
        if self.pipe_closed && self.policy.log.level < 2 && !self.log.records_every_run() {
            return exit;
        }
        let mut e = self.entry(Event::GiveUp, now);
        e.status = Some(end.status);
        e.timed_out = end.stopped.is_some();
        e.names_status = names_status;
        self.name_job(&mut e);
        if let Some(held) = self.held.take() {
            e.cancelled = Some(self.cancel_line(held, end));
        }
        if let (Exit::Signal(sig), true) = (exit, outcome != Outcome::Cancelled) {
            use crate::policy::status::{SIGINT, SIGPIPE};
            // After SIGINT and SIGPIPE a shell says nothing.
            if sig != SIGINT && sig != SIGPIPE {
                e.reraises = Some(sig);
            }
        }
        // The last attempt's status was a success and still the run failed (`--success-on`
        // without 0, an output rule, an HTTP status): the line says which status retry exits
        // with instead of the command's.
        let instead = match (outcome, end.status) {
            (Outcome::Failure, Status::Code(code)) if end.stopped.is_none() => match exit {
                Exit::Code(0) => Some(Exit::OUTPUT_FAILED),
                Exit::HTTP_FAILED | Exit::OUTPUT_FAILED if exit.status() != code => Some(exit),
                _ => None,
            },
            _ => None,
        };
        e.reason = Some(why.to_string());
        let exit = match instead {
            Some(exit) => {
                e.exits_instead = Some(exit.status());
                exit
            }
            None => exit,
        };
        self.log.write(&e);
        exit
    }

    /// The run ended without success.
    pub fn end(&mut self, now: Duration, outcome: Outcome, why: String, exit: Exit) {
        self.summary.end(outcome, why, exit.status(), now);
    }

    /// A hook failed.
    pub fn hook_failed(&mut self, now: Duration, flag: &str, status: Option<Status>, why: String) {
        let mut e = self.entry(Event::Hook, now);
        e.status = status;
        e.reason = Some(format!("{flag} hook failed: {why}"));
        self.log.write(&e);
    }

    /// Time spent waiting between attempts.
    pub fn slept(&mut self, slept: Duration) {
        self.summary.slept(slept);
    }

    /// Whether waits are counted down on a terminal.
    pub fn counts_down(&self) -> bool {
        self.log.counts_down()
    }

    /// Shows the time left before the next attempt.
    pub fn count_down(&mut self, left: Duration) {
        self.log.count_down(left);
    }

    /// Clears the countdown line.
    pub fn clear_countdown(&mut self) {
        self.log.clear_countdown();
    }
}

/// The keys that send `sig` from a terminal.
fn keys(sig: i32) -> &'static str {
    if sig == crate::policy::status::SIGQUIT {
        "Ctrl-\\"
    } else {
        "Ctrl-C"
    }
}
