//! The attempt loop: one event loop in which "the child exited", "a timer fired" and "a signal
//! arrived" are events. Everything that touches the world comes through [`World`], so the loop
//! is tested with a scripted world and a fake clock, without sleeping.

use std::time::{Duration, SystemTime};

use nix::sys::signal::Signal;
use rand::{Rng, RngExt};

use crate::exit::Exit;
use crate::policy::adaptive::{Adaptive, Estimates};
use crate::policy::backoff::Schedule;
use crate::policy::breaker::{Attempt, Change};
use crate::policy::duration::human;
use crate::policy::outcome::{Reason, Verdict};
use crate::policy::output_rules::Found;
use crate::policy::shared::Refusal;
use crate::policy::status::{Status, cancels, signal_name};
use crate::policy::{HttpVerdict, Policy};
use crate::report::log::{Entry, Event as LogEvent, KeyFields, Log, PolicyFields};
use crate::report::summary::{AttemptSummary, KeySummary, Outcome, StoreSummary, Summary};
use crate::state::{self, Refused, Shared};

use super::world::{AttemptEnv, Event, Findings, World};

/// How one attempt ended.
#[derive(Clone, Debug)]
struct End {
    status: Status,
    /// Set when retry stopped the attempt for running out of time.
    stopped: Option<Stop>,
    /// The first cancelling signal passed on to the attempt.
    cancelled: Option<i32>,
    /// Why the attempt could not be started, if it could not.
    unstarted: Option<&'static str>,
    findings: Findings,
    /// How long it ran.
    ran: Duration,
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
        if self.stopped.is_some() {
            124
        } else {
            self.status.number()
        }
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

/// One run of attempts: what the loop carries from one attempt to the next.
///
/// The run has three points where what other runs did can change its course, each one method:
/// [`begin`](Attempts::begin) before the first attempt, [`judge`](Attempts::judge) after each
/// attempt's verdict, and [`wait`](Attempts::wait) before each retry.
pub struct Attempts<'a, W, R: ?Sized> {
    policy: &'a Policy,
    world: &'a mut W,
    rng: &'a mut R,
    log: &'a mut Log,
    summary: &'a mut Summary,
    schedule: Schedule<'a>,
    /// The attempt running or last run, 1-based; 0 before the first.
    attempt: u32,
    /// The last attempt's status as the outcome lists judge it; `None` before the first.
    previous: Option<i32>,
    /// The breaker and budget shared with other runs (`--key`); dropped after a state error.
    shared: Option<Shared>,
    /// What the key's breaker did after an attempt, logged after that attempt's own line.
    moves: Vec<String>,
    /// The adaptive delay's own state (`--backoff adaptive`).
    adaptive: Option<Adaptive>,
    /// When the key's store last answered, on the run's clock: the store's time is its time
    /// then plus what has passed since.
    heard_at: Duration,
}

/// Runs the attempts the policy allows and returns how retry should exit.
pub fn run<W: World, R: Rng + ?Sized>(
    policy: &Policy,
    world: &mut W,
    rng: &mut R,
    log: &mut Log,
    summary: &mut Summary,
) -> Exit {
    Attempts::new(policy, world, rng, log, summary).run()
}

impl<'a, W: World, R: Rng + ?Sized> Attempts<'a, W, R> {
    pub fn new(
        policy: &'a Policy,
        world: &'a mut W,
        rng: &'a mut R,
        log: &'a mut Log,
        summary: &'a mut Summary,
    ) -> Self {
        Attempts {
            policy,
            world,
            rng,
            log,
            summary,
            schedule: policy.backoff.schedule(),
            attempt: 0,
            previous: None,
            shared: None,
            moves: Vec::new(),
            adaptive: policy
                .adaptive
                .map(|rule| Adaptive::new(rule, &policy.backoff)),
            heard_at: Duration::ZERO,
        }
    }

    /// Shares the run's breaker and budget with other runs through `shared`.
    pub fn with_state(mut self, shared: Option<Shared>) -> Self {
        if let Some(state) = &self.policy.state {
            self.summary.store = Some(StoreSummary {
                key: state.key.clone(),
                backend: state
                    .store
                    .as_ref()
                    .map_or("file".into(), |store| store.url.label()),
                errors: 0,
            });
        }
        self.shared = shared;
        self
    }

    /// Runs attempts until one ends the run, and returns how retry should exit.
    pub fn run(mut self) -> Exit {
        if let Some(refused) = self.begin() {
            return refused;
        }
        loop {
            let end = self.attempt();
            let decision = self.judge(&end);
            match decision.next {
                Next::Succeed => return self.succeed(&end),
                Next::GiveUp(why) => {
                    return self.give_up_after(&end, why, decision.verdict, decision.failed_anyway);
                }
                Next::Retry(delay) => {
                    if let Some(exit) = self.wait(&end, decision.verdict, delay) {
                        return exit;
                    }
                }
            }
        }
    }

    /// A log entry for this attempt, at the current time.
    fn entry(&self, event: LogEvent) -> Entry {
        let mut e = Entry::new(
            event,
            self.attempt,
            self.policy.attempts,
            self.world.elapsed(),
        );
        e.key = self.key_fields();
        e
    }

    /// The key's state as the run last saw it, for the log.
    fn key_fields(&self) -> Option<KeyFields> {
        let shared = self.shared.as_ref()?;
        let view = shared.view.as_ref()?;
        Some(KeyFields {
            key: shared.key.clone(),
            breaker: view.breaker,
            probe: shared.probing(),
            tokens: view.tokens,
        })
    }

    /// Logs a line about the key's state.
    fn state_note(&mut self, msg: String) {
        let mut e = self.entry(LogEvent::State);
        e.reason = Some(msg);
        self.log.write(&e);
    }

    /// Logs the breaker's moves after the attempt that made them.
    fn log_moves(&mut self) {
        for msg in std::mem::take(&mut self.moves) {
            self.state_note(msg);
        }
    }

    /// A state problem is a warning: the run goes on without the key's state.
    fn state_failed(&mut self, e: state::Error) {
        self.store_errors();
        if let Some(shared) = self.shared.take() {
            self.state_note(format!(
                "warning: key '{}': {e}; going on without its breaker and budget",
                shared.key
            ));
        }
    }

    /// Passes on a warning the key's store left.
    fn state_warning(&mut self) {
        self.store_errors();
        if let Some(warning) = self.shared.as_mut().and_then(|s| s.warning.take()) {
            self.state_note(format!("warning: {warning}"));
        }
    }

    /// Logs a note about the attempt: a signal passed on, a command stopped, a hook failed.
    fn note(&mut self, event: LogEvent, msg: String) {
        let mut e = self.entry(event);
        e.reason = Some(msg);
        self.log.write(&e);
    }

    /// Before the first attempt: the policy (-v), a warning when this retry runs inside
    /// another, whose attempts multiply with its own; then the key's breaker may refuse the
    /// run, which then exits 75.
    fn begin(&mut self) -> Option<Exit> {
        if self.log.shows(LogEvent::Policy) {
            let mut e = self.entry(LogEvent::Policy);
            e.reason = Some(self.policy.to_string());
            e.policy = Some(PolicyFields::of(self.policy));
            self.log.write(&e);
        }
        if let Some(warning) = self.policy.nesting_warning() {
            self.note(LogEvent::Warning, warning);
        }
        let admitted = self.shared.as_mut()?.admit();
        self.heard_at = self.world.elapsed();
        self.state_warning();
        match admitted {
            Ok(None) => {
                if let Some(shared) = self.shared.as_ref().filter(|s| s.probing()) {
                    let msg = format!(
                        "key '{}': the breaker is half-open; this run probes with one attempt",
                        shared.key
                    );
                    self.state_note(msg);
                }
                None
            }
            Ok(Some(refused)) => {
                let why = self.refusal_words(refused);
                self.refused_by(refused);
                Some(self.refuse(why))
            }
            Err(e) if self.shared.as_ref().is_some_and(Shared::fails_closed) => {
                let key = self.shared.as_ref().map_or("", |s| s.key.as_str());
                let why = format!("key '{key}': {e}, and --state-fail is closed");
                self.store_errors();
                Some(self.refuse(why))
            }
            Err(e) => {
                self.state_failed(e);
                None
            }
        }
    }

    /// Ends a run that may not start: exit 75, and why.
    fn refuse(&mut self, why: String) -> Exit {
        let mut e = self.entry(LogEvent::Refused);
        e.reason = Some(why.clone());
        self.log.write(&e);
        let exit = Exit::Code(REFUSED);
        let elapsed = self.world.elapsed();
        self.summary
            .end(Outcome::Refused, why, exit.status(), elapsed);
        exit
    }

    /// Counts the store's errors in the summary.
    fn store_errors(&mut self) {
        if let (Some(shared), Some(store)) = (&self.shared, &mut self.summary.store) {
            store.errors = shared.errors;
        }
    }

    /// Why the key refuses, in words.
    fn refusal_words(&self, refused: Refused) -> String {
        let key = self.shared.as_ref().map_or("", |s| s.key.as_str());
        let left = human(refused.left);
        let until = humantime::format_rfc3339_seconds(SystemTime::now() + refused.left);
        match refused.refusal {
            Refusal::Open { .. } => format!(
                "the breaker for key '{key}' is open for another {left} (until {until}): runs on the key kept failing"
            ),
            Refusal::Probing { .. } => format!(
                "the breaker for key '{key}' is half-open and another run is probing it (for up to {left})"
            ),
            Refusal::Budget => format!("the retry budget for key '{key}' is spent"),
        }
    }

    /// Records in the summary that the key stopped the run.
    fn refused_by(&mut self, refused: Refused) {
        self.key_summary();
        if let Some(key) = &mut self.summary.key {
            key.refused = Some(match refused.refusal {
                Refusal::Budget => "budget",
                _ => "breaker",
            });
        }
    }

    /// The key's state in the summary, as the run last saw it.
    fn key_summary(&mut self) {
        if let Some(fields) = self.key_fields() {
            let refused = self.summary.key.as_ref().and_then(|k| k.refused);
            self.summary.key = Some(KeySummary {
                key: fields.key,
                breaker: fields.breaker,
                probe: fields.probe,
                tokens: fields.tokens,
                refused,
            });
        }
    }

    /// Counts the attempt in the key's state and asks for the retry the decision wants; a
    /// refused retry ends the run with the attempt's status.
    fn share(&mut self, decision: &mut Decision) {
        let Some(shared) = self.shared.as_mut() else {
            return;
        };
        let counted = match decision.next {
            Next::Succeed => Attempt::Success,
            _ if decision.retryable => Attempt::Failure,
            _ => Attempt::Uncounted,
        };
        let wants_retry = matches!(decision.next, Next::Retry(_));
        let was_probe = shared.probing();
        let u = self.rng.random::<f64>();
        let answer = shared.after_attempt(counted, wants_retry, u);
        self.heard_at = self.world.elapsed();
        self.state_warning();
        let (change, refused) = match answer {
            Ok(answer) => answer,
            Err(e) => return self.state_failed(e),
        };
        let key = self
            .shared
            .as_ref()
            .map_or(String::new(), |s| s.key.clone());
        match change {
            Change::Opened { until } => {
                let now = self.shared.as_ref().map_or(until, Shared::now);
                let open = human(Duration::from_millis(until.saturating_sub(now)));
                let why = if was_probe {
                    "the probe failed".to_string()
                } else {
                    let n = self
                        .policy
                        .state
                        .as_ref()
                        .map_or(0, |s| s.shared.breaker.failures);
                    format!("{n} failed attempts in a row")
                };
                self.moves
                    .push(format!("key '{key}': the breaker opened for {open}: {why}"));
            }
            Change::Closed => {
                self.moves.push(format!(
                    "key '{key}': the breaker closed: the probe succeeded"
                ));
            }
            Change::None | Change::Released => {}
        }
        if let Some(refused) = refused {
            let why = self.refusal_words(refused);
            decision.next = Next::GiveUp(why.clone());
            decision.verdict = Some(match decision.verdict.take() {
                Some(verdict) => format!("{verdict}; not retried: {why}"),
                None => format!("not retried: {why}"),
            });
            self.refused_by(refused);
        }
        self.key_summary();
    }

    /// Starts the next attempt and watches it until it ends; records it in the summary.
    fn attempt(&mut self) -> End {
        self.attempt += 1;
        let started = self.world.elapsed();
        let env = AttemptEnv {
            attempt: self.attempt,
            max_attempts: self.policy.attempts,
            previous: self.previous,
            remaining: self.policy.max_time.map(|max| max.saturating_sub(started)),
        };
        if self.log.shows(LogEvent::Start) {
            self.log.write(&self.entry(LogEvent::Start));
        }
        let end = match self.world.spawn(&env) {
            Ok(()) => {
                if let Some(shared) = self.shared.as_mut() {
                    shared.attempt_started();
                }
                self.supervise(started)
            }
            Err(e) => {
                self.note(LogEvent::NotStarted, e.message);
                End {
                    status: Status::Code(e.status),
                    stopped: None,
                    cancelled: None,
                    unstarted: Some(if e.status == 127 {
                        "command not found"
                    } else {
                        "cannot execute"
                    }),
                    findings: Findings::default(),
                    ran: Duration::ZERO,
                }
            }
        };
        let end = End {
            ran: self.world.elapsed().saturating_sub(started),
            ..end
        };
        self.previous = Some(end.number());
        self.summary.attempted(
            AttemptSummary {
                status: end.number(),
                signal: end.status.signal_name().filter(|_| end.stopped.is_none()),
                timed_out: end.stopped.is_some(),
                duration_ms: end.ran.as_millis(),
            },
            end.ran,
        );
        end
    }

    /// After the attempt's verdict: what comes next. Held output is released here, to stdout
    /// when the attempt ends the run.
    fn judge(&mut self, end: &End) -> Decision {
        let now = self.world.elapsed();
        let estimates = self.estimates(now);
        let world = &*self.world;
        let (backoff, attempt) = (&self.policy.backoff, self.attempt);
        let (schedule, adaptive) = (&mut self.schedule, &mut self.adaptive);
        let mut next_delay = |rng: &mut R| match (adaptive.as_mut(), &estimates) {
            (Some(adaptive), Some(e)) => adaptive.jittered(backoff, attempt, e, rng),
            _ => schedule.next_delay(rng),
        };
        let mut decision = decide(
            self.policy,
            end,
            self.attempt,
            &mut next_delay,
            self.rng,
            now,
            || world.output_gone(),
        );
        if matches!(decision.next, Next::Retry(_))
            && let Some(why) = self.world.unrepeatable()
        {
            decision.verdict = Some(format!("not retried: {why}"));
            decision.next = Next::GiveUp(why);
        }
        self.share(&mut decision);
        if let Err(why) = self.world.finish(!matches!(decision.next, Next::Retry(_))) {
            // Output retry carries that could not be delivered: retry itself failed.
            decision.verdict = Some(format!("not retried: {why}"));
            decision.next = Next::GiveUp(why);
            decision.failed_anyway = Some(125);
        }
        decision
    }

    /// What the key's recent outcomes say, for the adaptive delay: the history of the store's
    /// last answer with this attempt's failure added (a delay is only asked for after one), at
    /// the store's time now. `None` without the adaptive delay or once the state is gone.
    fn estimates(&self, now: Duration) -> Option<Estimates> {
        self.adaptive.as_ref()?;
        let shared = self.shared.as_ref()?;
        let passed = u64::try_from(now.saturating_sub(self.heard_at).as_millis()).unwrap_or(0);
        let store_now = shared.now().saturating_add(passed);
        let view = shared.view.as_ref()?;
        Some(
            view.history
                .estimate_after_failure(store_now, self.policy.backoff.delay),
        )
    }

    /// The attempt's log line: how it ended and the verdict.
    fn report(&self, end: &End, verdict: Option<String>) -> Entry {
        let mut report = self.entry(LogEvent::Failure);
        report.status = Some(end.status);
        report.timed_out = end.stopped.is_some();
        report.duration = Some(end.ran);
        report.reason = verdict;
        report
    }

    fn succeed(&mut self, end: &End) -> Exit {
        if self.attempt > 1 {
            let mut e = self.entry(LogEvent::Success);
            e.status = Some(end.status);
            e.duration = Some(end.ran);
            self.log.write(&e);
        }
        self.log_moves();
        let exit = end.exit();
        let elapsed = self.world.elapsed();
        self.summary
            .end(Outcome::Success, "succeeded", exit.status(), elapsed);
        exit
    }

    /// Ends the run on the attempt's verdict.
    fn give_up_after(
        &mut self,
        end: &End,
        why: String,
        verdict: Option<String>,
        failed_anyway: Option<u8>,
    ) -> Exit {
        let report = self.report(end, verdict);
        self.log.write(&report);
        self.log_moves();
        let exit = failed_anyway.map_or(end.exit(), Exit::Code);
        let outcome = match end.cancelled {
            Some(_) => Outcome::Cancelled,
            None => Outcome::Failure,
        };
        self.give_up(end, why, outcome, exit)
    }

    /// Before a retry: logs the attempt with its delay, runs `--on-retry` within the wait, and
    /// waits. Returns how to exit when the run ends instead: a cancelling signal during the
    /// wait, or a hook that outlasted the deadline.
    fn wait(&mut self, end: &End, verdict: Option<String>, delay: Duration) -> Option<Exit> {
        let mut report = self.report(end, verdict);
        report.delay = Some(delay);
        self.log.write(&report);
        self.log_moves();
        // The wait counts from the attempt's end: a hook runs within it, not before it.
        let wake = self.world.elapsed().saturating_add(delay);
        let vars = vec![
            ("RETRY_STATUS".to_string(), end.number().to_string()),
            (
                "RETRY_NEXT_DELAY_MS".to_string(),
                delay.as_millis().to_string(),
            ),
        ];
        self.hook(self.policy.hooks.on_retry.as_deref(), "--on-retry", vars);
        let slept_from = self.world.elapsed();
        let woke = self.sleep(wake);
        self.summary
            .slept(self.world.elapsed().saturating_sub(slept_from));
        if let Some(sig) = woke {
            let why = format!("cancelled by {} while waiting", signal_name(sig));
            let exit = Exit::Code(u8::try_from(128 + sig).unwrap_or(u8::MAX));
            return Some(self.give_up(end, why, Outcome::Cancelled, exit));
        }
        if let Some(shared) = self.shared.as_mut() {
            let answer = shared.before_retry();
            self.heard_at = self.world.elapsed();
            self.state_warning();
            match answer {
                Ok(Some(refused)) => {
                    let why = self.refusal_words(refused);
                    self.refused_by(refused);
                    return Some(self.give_up(end, why, Outcome::Failure, end.exit()));
                }
                Ok(None) => self.key_summary(),
                Err(e) => self.state_failed(e),
            }
        }
        if self
            .policy
            .max_time
            .is_some_and(|max| self.world.elapsed() >= max)
        {
            // A hook outlasted the wait and the deadline: no attempt starts after it.
            let why = "--max-time reached while waiting".to_string();
            return Some(self.give_up(end, why, Outcome::Failure, end.exit()));
        }
        None
    }

    /// Ends the run without success: the give-up line, the `--on-giveup` hook (not when the
    /// run was cancelled), and the summary.
    fn give_up(&mut self, end: &End, why: String, outcome: Outcome, exit: Exit) -> Exit {
        let mut e = self.entry(LogEvent::GiveUp);
        e.status = Some(end.status);
        e.timed_out = end.stopped.is_some();
        e.reason = Some(why.clone());
        e.command = Some(self.policy.command_line());
        // A run that gives up never exits 0, even when its last attempt did (--success-on
        // without 0): a caller must not read a failure as a success. 1, as for an output rule.
        let exit = if outcome == Outcome::Failure && exit == Exit::Code(0) {
            e.reason = Some(format!(
                "{why} (exit status 0 is not a success here; retry exits 1)"
            ));
            Exit::Code(1)
        } else {
            exit
        };
        self.log.write(&e);
        if outcome != Outcome::Cancelled {
            let vars = vec![
                ("RETRY_STATUS".to_string(), end.number().to_string()),
                ("RETRY_REASON".to_string(), why.clone()),
            ];
            self.hook(self.policy.hooks.on_giveup.as_deref(), "--on-giveup", vars);
        }
        let elapsed = self.world.elapsed();
        self.summary.end(outcome, why, exit.status(), elapsed);
        exit
    }

    /// Runs a hook, if one is given, with the attempt's variables; logs its failure.
    fn hook(&mut self, command: Option<&str>, flag: &str, mut vars: Vec<(String, String)>) {
        let Some(command) = command else { return };
        vars.push(("RETRY_ATTEMPT".into(), self.attempt.to_string()));
        vars.push((
            "RETRY_MAX_ATTEMPTS".into(),
            self.policy
                .attempts
                .map(|n| n.to_string())
                .unwrap_or_default(),
        ));
        let mut e = self.entry(LogEvent::Hook);
        let failure = match self.world.hook(command, vars, self.policy.hooks.timeout) {
            Ok(Status::Code(0)) => return,
            Ok(status) => {
                e.status = Some(status);
                status.to_string()
            }
            Err(why) => why,
        };
        e.reason = Some(format!("{flag} hook failed: {failure}"));
        self.log.write(&e);
    }

    /// Waits until `until`, counting down on a terminal; returns the cancelling signal that
    /// cut the wait short, if any.
    fn sleep(&mut self, until: Duration) -> Option<i32> {
        let world = &mut *self.world;
        let log = &mut *self.log;
        let counting = log.counts_down() && until.saturating_sub(world.elapsed()) >= COUNTDOWN_FROM;
        let woke = loop {
            // Wait at least once, even when the time has come: a signal that arrived meanwhile
            // (in a hook, say) is seen here and ends the run, rather than after one more
            // attempt.
            let now = world.elapsed();
            let left = until.saturating_sub(now);
            let wake = if counting && !left.is_zero() {
                log.count_down(left);
                // The next whole second of the countdown.
                let step = Duration::from_nanos(u64::from(left.subsec_nanos()))
                    .max(Duration::from_millis(1));
                now.saturating_add(if left.subsec_nanos() == 0 {
                    Duration::from_secs(1)
                } else {
                    step
                })
            } else {
                until
            };
            match world.wait(Some(wake.min(until))) {
                Event::Timer if world.elapsed() >= until => break None,
                Event::Timer => {}
                Event::Signal(sig) if cancels(sig) => break Some(sig),
                // With no attempt running, there is nobody to pass other signals on to.
                Event::Signal(_) | Event::Exited(_) | Event::Interrupted(_) => {}
            }
        };
        log.clear_countdown();
        woke
    }

    /// Watches a running attempt until it ends: stops it when its time is up and passes
    /// signals on. An attempt that retry stopped or cancelled is over only when its whole
    /// process group is gone: whatever is left of it when `--kill-after` has passed gets
    /// SIGKILL.
    fn supervise(&mut self, started: Duration) -> End {
        let p = self.policy;
        let timeout_at = p.attempt_timeout.map(|t| started.saturating_add(t));
        let (limit, why) = match (timeout_at, p.max_time) {
            (Some(t), Some(d)) if d < t => (Some(d), Stop::Deadline),
            (Some(t), _) => (Some(t), Stop::AttemptTimeout),
            (None, d) => (d, Stop::Deadline),
        };
        let mut stopped = None;
        let mut cancelled = None;
        // When SIGKILL goes to the group, once it was asked to stop.
        let mut kill_at: Option<Duration> = None;
        // The first process's status, once it ended.
        let mut ended: Option<Status> = None;
        loop {
            if let Some(status) = ended
                && (kill_at.is_none() || !self.world.group_alive())
            {
                return End {
                    status,
                    stopped,
                    cancelled,
                    unstarted: None,
                    findings: self.world.findings(),
                    ran: Duration::ZERO,
                };
            }
            let poll = ended.map(|_| self.world.elapsed().saturating_add(STRAGGLER_POLL));
            let limit = limit.filter(|_| stopped.is_none());
            let until = [limit, kill_at, poll].into_iter().flatten().min();
            match self.world.wait(until) {
                Event::Exited(status) => ended = Some(status),
                Event::Timer if kill_at.is_some_and(|at| self.world.elapsed() >= at) => {
                    self.world.kill(Signal::SIGKILL as i32);
                    kill_at = None;
                    self.note(
                        LogEvent::Stop,
                        "the command outlived --kill-after; sent SIGKILL".into(),
                    );
                }
                Event::Timer if limit.is_some_and(|at| self.world.elapsed() >= at) => {
                    stopped = Some(why);
                    self.world.kill(p.kill_signal);
                    kill_at = Some(self.world.elapsed().saturating_add(p.kill_after));
                    let what = match why {
                        Stop::AttemptTimeout => "--attempt-timeout",
                        Stop::Deadline => "--max-time",
                    };
                    let sig = signal_name(p.kill_signal);
                    self.note(
                        LogEvent::Stop,
                        format!("{what} reached; sent {sig} to the command"),
                    );
                }
                Event::Timer => {}
                Event::Signal(sig) if cancels(sig) => {
                    let again = cancelled.is_some()
                        && [Signal::SIGINT as i32, Signal::SIGTERM as i32].contains(&sig);
                    let name = signal_name(sig);
                    if again {
                        self.world.kill(Signal::SIGKILL as i32);
                        kill_at = None;
                        self.note(
                            LogEvent::Signal,
                            format!("{name} again; killed the command"),
                        );
                    } else {
                        self.world.kill(sig);
                        kill_at.get_or_insert(self.world.elapsed().saturating_add(p.kill_after));
                        self.note(
                            LogEvent::Signal,
                            format!("{name} received; passed on to the command; no more attempts"),
                        );
                    }
                    cancelled.get_or_insert(sig);
                }
                // A Ctrl-C that reached retry too (typed before the attempt had the terminal)
                // was said already.
                Event::Interrupted(_) if cancelled.is_some() => {}
                Event::Interrupted(sig) => {
                    // retry received nothing: it infers the Ctrl-C from how the attempt ended,
                    // and says so. The rest of the group had the Ctrl-C from the terminal.
                    self.world.kill(sig);
                    kill_at.get_or_insert(self.world.elapsed().saturating_add(p.kill_after));
                    let key = if sig == Signal::SIGQUIT as i32 {
                        "Ctrl-\\"
                    } else {
                        "Ctrl-C"
                    };
                    self.note(
                        LogEvent::TerminalCancel,
                        format!(
                            "the command ended with status {} while it held the terminal, as {key} \
                             ends a command: taken as a {key} typed there; no more attempts",
                            128 + sig
                        ),
                    );
                    cancelled.get_or_insert(sig);
                }
                Event::Signal(sig) => self.world.kill(sig),
            }
        }
    }
}

/// What follows an attempt.
enum Next {
    Succeed,
    /// End the run, for this reason.
    GiveUp(String),
    /// Try again after this delay.
    Retry(Duration),
}

/// The judgement of an ended attempt.
struct Decision {
    next: Next,
    /// The verdict, for the attempt's log line.
    verdict: Option<String>,
    /// retry's exit when the run ends here on an attempt whose status counts as success but
    /// whose HTTP status (22, as `curl --fail` exits) or output (1) said it failed.
    failed_anyway: Option<u8>,
    /// The attempt failed in a way that is retried, whether or not the run has attempts or
    /// time left: what a key's breaker counts as a failure.
    retryable: bool,
}

impl Decision {
    /// The same judgement, but to retry after `delay`.
    fn retry(self, delay: Duration) -> Decision {
        Decision {
            next: Next::Retry(delay),
            failed_anyway: None,
            ..self
        }
    }
}

/// Judges an ended attempt: what comes next, and why. Whatever says "fatal" (a `stop` hint,
/// a fatal output rule, a fatal HTTP status, `--fatal-on`, 126/127) wins; then whatever says
/// "retry" (an HTTP status, an output rule), which retries even a status-0 attempt or one that
/// `--retry-on` leaves out; then the exit status alone. `output_gone` is asked only when the
/// attempt would otherwise be retried.
fn decide<R: Rng + ?Sized>(
    p: &Policy,
    end: &End,
    attempt: u32,
    next_delay: &mut dyn FnMut(&mut R) -> Duration,
    rng: &mut R,
    now: Duration,
    output_gone: impl FnOnce() -> bool,
) -> Decision {
    let decision = |next, verdict: Option<String>| Decision {
        next,
        verdict,
        failed_anyway: None,
        retryable: false,
    };
    if let Some(sig) = end.cancelled {
        let name = signal_name(sig);
        let verdict = format!("not retried: cancelled by {name}");
        return decision(Next::GiveUp(format!("cancelled by {name}")), Some(verdict));
    }
    let status = end.number();
    let f = &end.findings;
    let http = f
        .http_status
        .and_then(|code| Some((code, p.http.classify(code)?)));
    let by_status = p.rules.classify(status);
    let fatal = if f.stop {
        Some("the command asked not to be retried (stop)".to_string())
    } else if let Some(Found::Fatal(pattern)) = &f.output {
        Some(format!("output matched --fatal-if-output '{pattern}'"))
    } else if let Some((code, HttpVerdict::Fatal)) = http {
        Some(format!("HTTP status {code} is fatal"))
    } else {
        None
    };
    let retry = match (&f.output, http) {
        (_, Some((code, HttpVerdict::Retry))) => Some(format!("retryable: HTTP status {code}")),
        (Some(Found::Retry(pattern)), _) => Some(format!(
            "retryable: output matched --retry-if-output '{pattern}'"
        )),
        _ => None,
    };
    let failed_anyway = (by_status == Verdict::Success && (fatal.is_some() || retry.is_some()))
        .then_some(if http.is_some() { 22 } else { 1 })
        .filter(|_| !f.stop);
    let give_up = |why: String, verdict: Option<String>| Decision {
        next: Next::GiveUp(why),
        verdict,
        failed_anyway,
        retryable: false,
    };
    if let Some(why) = fatal {
        return give_up(why.clone(), Some(format!("fatal: {why}")));
    }
    let reason = match (retry, by_status) {
        // What the command said (its HTTP status, its output) is more specific than a list of
        // exit statuses that merely leaves its status out; only --fatal-on and 126/127 win.
        (
            Some(why),
            Verdict::Success | Verdict::Retry(_) | Verdict::Fatal(Reason::NotInRetryOn),
        ) => Some(why),
        (_, Verdict::Success) => return decision(Next::Succeed, None),
        (_, Verdict::Fatal(reason)) => {
            let why = match end.unstarted {
                Some(what) => format!("status {status}: {what}"),
                None => format!("status {status} is {}", p.rules.say(reason)),
            };
            let verdict = match reason {
                Reason::NeverBetter => "fatal: will not get better".to_string(),
                _ => p.rules.say(reason),
            };
            return give_up(why, Some(verdict));
        }
        (None, Verdict::Retry(reason)) => Some(p.rules.say(reason)),
    };
    // From here on the attempt failed in a way that is retried; only limits stop the run. Such
    // a failure says it is not retried: "(retryable)" would mislead.
    let not_retried = |why: &str, reason: Option<String>| {
        let said = reason
            .as_deref()
            .and_then(|r| r.strip_prefix("retryable: "))
            .map(|r| format!("{r}; "))
            .unwrap_or_default();
        Some(format!("{said}not retried: {why}"))
    };
    let out_of = |why: String, verdict: Option<String>| Decision {
        retryable: true,
        ..give_up(why, verdict)
    };
    if p.attempts.is_some_and(|max| attempt >= max) {
        let why = "attempts used up";
        return out_of(why.into(), not_retried(why, reason));
    }
    if end.stopped == Some(Stop::Deadline) {
        let why = "--max-time reached";
        return out_of(why.into(), not_retried(why, reason));
    }
    if output_gone() {
        let why = "nothing reads its output any more";
        return give_up(why.into(), Some(format!("not retried: {why}")));
    }
    let mut delay = next_delay(rng);
    let mut reason = reason;
    if let Some(asked) = f.retry_after {
        if let Some(max) = p.max_time
            && now.saturating_add(asked) >= max
        {
            let why = format!(
                "the command was told to come back in {}, after the --max-time deadline ({} left)",
                human(asked),
                human(max.saturating_sub(now))
            );
            return out_of(why, not_retried("--max-time", reason));
        }
        let wait = follow(asked, p.retry_after_max, rng);
        delay = delay.max(wait);
        let capped = if asked > p.retry_after_max {
            ", capped by --retry-after-max"
        } else {
            ""
        };
        reason = Some(format!(
            "{}; following Retry-After {}{capped}",
            reason.unwrap_or_default(),
            human(asked)
        ));
    }
    if let Some(max) = p.max_time
        && now.saturating_add(delay) >= max
    {
        let why = format!(
            "the next attempt would start after the --max-time deadline (wait {}, {} left)",
            human(delay),
            human(max.saturating_sub(now))
        );
        return out_of(why, not_retried("--max-time", reason));
    }
    out_of(String::new(), reason).retry(delay)
}

/// The wait for a `Retry-After` of `asked`: never sooner than asked (up to `cap`), never past
/// `cap`, and spread by up to a tenth so that clients told the same value do not come back in
/// lockstep.
fn follow<R: Rng + ?Sized>(asked: Duration, cap: Duration, rng: &mut R) -> Duration {
    let mut spread = |d: Duration| {
        let nanos = u64::try_from(d.as_nanos() / 10).unwrap_or(u64::MAX);
        Duration::from_nanos(rng.random_range(0..=nanos))
    };
    if asked >= cap {
        cap.saturating_sub(spread(cap))
    } else {
        asked.saturating_add(spread(asked)).min(cap)
    }
}

/// retry's exit when the key's breaker refuses the run (SPEC §5; EX_TEMPFAIL in sysexits.h).
const REFUSED: u8 = 75;

/// Waits shorter than this are not counted down.
const COUNTDOWN_FROM: Duration = Duration::from_secs(2);

/// How often to look for processes an attempt left behind once its first process ended; they
/// are not retry's children, so nothing wakes the loop when they end.
pub(crate) const STRAGGLER_POLL: Duration = Duration::from_millis(20);

#[cfg(test)]
mod tests {
    use std::collections::VecDeque;
    use std::io::Write;
    use std::sync::{Arc, Mutex};

    use rand::SeedableRng;
    use rand::rngs::StdRng;

    use super::*;
    use crate::policy::adaptive::{self, History};
    use crate::policy::shared::{Admit, After, SharedSettings, Ticket};
    use crate::run::world::SpawnError;
    use crate::state::memory::MemoryStore;
    use crate::state::{Reply, Store};

    const TERM: i32 = Signal::SIGTERM as i32;
    const INT: i32 = Signal::SIGINT as i32;
    const KILL: i32 = Signal::SIGKILL as i32;
    const USR1: i32 = Signal::SIGUSR1 as i32;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    /// One scripted attempt: how it ends and how long it runs unless stopped.
    #[derive(Clone, Copy)]
    struct Script {
        status: Status,
        runs: Duration,
        /// Keeps running when sent these signals (a child that traps TERM).
        ignores_term: bool,
    }

    fn exits(code: i32, runs_ms: u64) -> Script {
        Script {
            status: Status::Code(code),
            runs: ms(runs_ms),
            ignores_term: false,
        }
    }

    /// A world with a fake clock: attempts follow a script, sleeps only move the clock, and
    /// signals arrive at set times.
    #[derive(Default)]
    struct Fake {
        now: Duration,
        script: VecDeque<Script>,
        running: Option<(Script, Duration)>,
        signals: VecDeque<(Duration, i32)>,
        slept: Vec<Duration>,
        killed: Vec<(Duration, i32)>,
        envs: Vec<AttemptEnv>,
        spawn_error: Option<SpawnError>,
        /// Processes of the group that outlive the first one and ignore all but SIGKILL.
        stragglers: bool,
        /// Each attempt's `last`, as the loop finished it.
        finished: Vec<bool>,
        /// What each attempt said besides its status, in order.
        findings: VecDeque<Findings>,
        /// Each hook run.
        hooks: Vec<HookRun>,
        /// Nothing reads retry's output.
        output_gone: bool,
    }

    impl Fake {
        fn new(script: impl IntoIterator<Item = Script>) -> Fake {
            Fake {
                script: script.into_iter().collect(),
                ..Fake::default()
            }
        }

        fn signal_at(mut self, at: Duration, signal: i32) -> Fake {
            self.signals.push_back((at, signal));
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
            if let Some(&(at, sig)) = self.signals.front()
                && next.is_none_or(|n| at <= n)
            {
                self.signals.pop_front();
                self.now = self.now.max(at);
                return Event::Signal(sig);
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
            timeout: Duration,
        ) -> Result<Status, String> {
            self.hooks.push((self.now, command.to_string(), vars));
            self.now += timeout.min(ms(50));
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
    type HookRun = (Duration, String, Vec<(String, String)>);

    /// A sink the test can read after the log is done with it.
    #[derive(Clone, Default)]
    struct Sink(Arc<Mutex<Vec<u8>>>);

    impl Write for Sink {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().expect("sink lock").extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    struct Run {
        exit: Exit,
        world: Fake,
        log: String,
        summary: Summary,
    }

    fn run_with(args: &[&str], world: Fake) -> Run {
        run_shared(args, world, None)
    }

    /// Runs the loop with the key's state in `store`.
    fn run_shared(args: &[&str], mut world: Fake, store: Option<Box<dyn Store>>) -> Run {
        let policy = crate::setup::from_flags(args).expect("a valid policy");
        let sink = Sink::default();
        let mut log = Log::to(&policy.log, Box::new(sink.clone()));
        let mut rng = StdRng::seed_from_u64(7);
        let mut summary = Summary::new(&policy.name);
        let shared = store.map(|store| {
            let settings = policy.state.as_ref().expect("--key");
            let mut shared = Shared::new(settings.key.clone(), settings.shared.clone(), store);
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

    #[test]
    fn retries_until_success_sleeping_the_backoff() {
        let r = run_with(
            &["--jitter", "none"],
            Fake::new([exits(1, 10), exits(1, 10), exits(0, 10)]),
        );
        assert_eq!(r.exit, Exit::Code(0));
        assert_eq!(r.world.slept, [ms(1000), ms(2000)]);
        assert!(r.log.contains("attempt 3/5 succeeded"), "{}", r.log);
    }

    #[test]
    fn there_is_no_sleep_after_the_last_attempt() {
        let r = run_with(
            &["-n", "3", "--jitter", "none"],
            Fake::new([exits(4, 5); 3]),
        );
        assert_eq!(r.exit, Exit::Code(4));
        assert_eq!(r.world.slept, [ms(1000), ms(2000)]);
        assert_eq!(r.world.now, ms(3015));
        assert!(r.log.contains("giving up after 3 attempts"), "{}", r.log);
    }

    #[test]
    fn a_give_up_on_a_status_0_that_is_not_a_success_exits_1() {
        let r = run_with(
            &["--success-on", "3", "-n", "2", "-d", "0"],
            Fake::new([exits(0, 5); 2]),
        );
        assert_eq!(r.exit, Exit::Code(1));
        assert_eq!((r.summary.outcome, r.summary.exit), (Outcome::Failure, 1));
        assert!(r.log.contains("retry exits 1"), "{}", r.log);
    }

    #[test]
    fn a_fatal_status_stops_at_once() {
        let r = run_with(&["--fatal-on", "2"], Fake::new([exits(2, 5)]));
        assert_eq!(r.exit, Exit::Code(2));
        assert!(r.world.slept.is_empty());
        assert!(r.log.contains("in --fatal-on"), "{}", r.log);
    }

    #[test]
    fn a_command_that_cannot_run_is_not_retried() {
        let mut world = Fake::new([]);
        world.spawn_error = Some(SpawnError {
            status: 127,
            message: "cannot run 'x': No such file or directory".into(),
        });
        let r = run_with(&[], world);
        assert_eq!(r.exit, Exit::Code(127));
        assert_eq!(r.world.envs.len(), 1);
        assert!(r.log.contains("command not found"), "{}", r.log);
    }

    #[test]
    fn a_child_killed_by_a_signal_is_judged_as_128_plus_n_and_reraised() {
        let killed = Script {
            status: Status::Signal(KILL),
            runs: ms(5),
            ignores_term: false,
        };
        let r = run_with(&["--fatal-on", "SIGKILL"], Fake::new([killed]));
        assert_eq!(r.exit, Exit::Signal(KILL));
        let r = run_with(&["-n", "2", "-d", "0"], Fake::new([killed, killed]));
        assert_eq!(r.world.envs[1].previous, Some(137));
        assert_eq!(r.exit, Exit::Signal(KILL));
    }

    #[test]
    fn no_sleep_starts_that_would_end_past_max_time() {
        let r = run_with(
            &["--max-time", "2.5s", "--jitter", "none", "--forever"],
            Fake::new([exits(1, 100); 3]),
        );
        // 0.1 run, 1 s sleep, 0.1 run, then a 2 s sleep would end at 3.2 s > 2.5 s.
        assert_eq!(r.exit, Exit::Code(1));
        assert_eq!(r.world.slept, [ms(1000)]);
        assert_eq!(r.world.now, ms(1200));
        assert!(r.log.contains("--max-time deadline"), "{}", r.log);
    }

    #[test]
    fn max_time_stops_a_running_attempt_with_124() {
        let r = run_with(&["--max-time", "1s"], Fake::new([exits(0, 5000)]));
        assert_eq!(r.exit, Exit::TIMED_OUT);
        assert_eq!(r.world.killed, [(ms(1000), TERM)]);
        assert!(r.log.contains("--max-time reached"), "{}", r.log);
    }

    #[test]
    fn a_timed_out_attempt_counts_as_124_and_is_retried() {
        let r = run_with(
            &["--attempt-timeout", "1s", "-d", "0", "-n", "2"],
            Fake::new([exits(0, 5000), exits(0, 10)]),
        );
        assert_eq!(r.exit, Exit::Code(0));
        assert_eq!(r.world.killed, [(ms(1000), TERM)]);
        assert_eq!(r.world.envs[1].previous, Some(124));
        let r = run_with(
            &["--attempt-timeout", "1s", "-n", "1"],
            Fake::new([exits(0, 5000)]),
        );
        assert_eq!(r.exit, Exit::TIMED_OUT);
    }

    #[test]
    fn a_child_that_ignores_the_kill_signal_gets_sigkill_after_kill_after() {
        let stubborn = Script {
            ignores_term: true,
            ..exits(0, 60_000)
        };
        let r = run_with(
            &["--attempt-timeout", "1s", "--kill-after", "3s", "-n", "1"],
            Fake::new([stubborn]),
        );
        assert_eq!(r.world.killed, [(ms(1000), TERM), (ms(4000), KILL)]);
        assert_eq!(r.exit, Exit::TIMED_OUT);
    }

    #[test]
    fn processes_left_by_a_timed_out_attempt_get_sigkill_after_kill_after() {
        let mut world = Fake::new([exits(0, 60_000)]);
        world.stragglers = true;
        let r = run_with(
            &["--attempt-timeout", "1s", "--kill-after", "2s", "-n", "1"],
            world,
        );
        assert_eq!(r.world.killed, [(ms(1000), TERM), (ms(3000), KILL)]);
        assert!(!r.world.stragglers);
        assert_eq!(r.exit, Exit::TIMED_OUT);
    }

    #[test]
    fn processes_left_by_an_attempt_that_ended_by_itself_are_left_alone() {
        let mut world = Fake::new([exits(0, 10)]);
        world.stragglers = true;
        let r = run_with(&[], world);
        assert!(r.world.killed.is_empty());
        assert_eq!(r.exit, Exit::Code(0));
    }

    #[test]
    fn a_cancelled_attempt_that_ignores_the_signal_gets_sigkill_after_kill_after() {
        let stubborn = Script {
            ignores_term: true,
            ..exits(0, 60_000)
        };
        let world = Fake::new([stubborn]).signal_at(ms(100), TERM);
        let r = run_with(&["--kill-after", "1s"], world);
        assert_eq!(r.world.killed, [(ms(100), TERM), (ms(1100), KILL)]);
        assert_eq!(r.exit, Exit::Signal(KILL));
    }

    #[test]
    fn kill_signal_is_what_a_timed_out_attempt_gets() {
        let r = run_with(
            &["--attempt-timeout", "1s", "--kill-signal", "INT", "-n", "1"],
            Fake::new([exits(0, 9000)]),
        );
        assert_eq!(r.world.killed, [(ms(1000), INT)]);
    }

    #[test]
    fn a_cancelling_signal_is_passed_on_and_stops_the_retrying() {
        let world = Fake::new([exits(1, 5000), exits(0, 5)]).signal_at(ms(100), TERM);
        let r = run_with(&[], world);
        assert_eq!(r.world.killed, [(ms(100), TERM)]);
        assert_eq!(
            r.world.envs.len(),
            1,
            "no attempt after a cancelling signal"
        );
        assert_eq!(r.exit, Exit::Signal(TERM));
    }

    #[test]
    fn a_child_that_traps_int_and_exits_130_is_not_retried() {
        let trapping = Script {
            ignores_term: true,
            ..exits(130, 5000)
        };
        let r = run_with(&[], Fake::new([trapping]).signal_at(ms(50), INT));
        assert_eq!(r.exit, Exit::Code(130));
        assert_eq!(r.world.envs.len(), 1);
        assert!(r.log.contains("cancelled by SIGINT"), "{}", r.log);
    }

    #[test]
    fn a_second_int_kills_the_group_at_once() {
        let trapping = Script {
            ignores_term: true,
            ..exits(1, 5000)
        };
        let world = Fake::new([trapping])
            .signal_at(ms(50), INT)
            .signal_at(ms(80), INT);
        let r = run_with(&[], world);
        assert_eq!(r.world.killed, [(ms(50), INT), (ms(80), KILL)]);
        assert_eq!(r.exit, Exit::Signal(KILL));
    }

    #[test]
    fn a_signal_during_a_sleep_ends_the_run_at_once_with_128_plus_n() {
        let world =
            Fake::new([exits(1, 10), exits(0, 10)]).signal_at(ms(300), Signal::SIGHUP as i32);
        let r = run_with(&["--jitter", "none"], world);
        assert_eq!(r.exit, Exit::Code(129));
        assert_eq!(r.world.now, ms(300));
        assert_eq!(r.world.envs.len(), 1);
        assert!(r.world.killed.is_empty());
    }

    #[test]
    fn usr1_is_passed_on_without_stopping_the_run() {
        let world = Fake::new([exits(1, 100), exits(0, 10)]).signal_at(ms(50), USR1);
        let r = run_with(&["-d", "0"], world);
        assert_eq!(r.world.killed, [(ms(50), USR1)]);
        assert_eq!(r.exit, Exit::Code(0));
        assert_eq!(r.world.envs.len(), 2);
    }

    #[test]
    fn the_child_is_told_its_attempt_and_the_time_left() {
        let r = run_with(
            &[
                "-n",
                "3",
                "--max-time",
                "10s",
                "--jitter",
                "none",
                "-d",
                "1s",
            ],
            Fake::new([exits(3, 500), exits(3, 500), exits(0, 1)]),
        );
        let attempts: Vec<_> = r.world.envs.iter().map(|e| e.attempt).collect();
        assert_eq!(attempts, [1, 2, 3]);
        assert!(r.world.envs.iter().all(|e| e.max_attempts == Some(3)));
        assert_eq!(r.world.envs[0].previous, None);
        assert_eq!(r.world.envs[1].previous, Some(3));
        assert_eq!(r.world.envs[0].remaining, Some(ms(10_000)));
        // 0.5 s run + 1 s sleep.
        assert_eq!(r.world.envs[1].remaining, Some(ms(8_500)));
        let r = run_with(&["--forever", "-d", "0"], Fake::new([exits(0, 1)]));
        assert_eq!(r.world.envs[0].max_attempts, None);
        assert_eq!(r.world.envs[0].remaining, None);
    }

    #[test]
    fn jittered_delays_stay_within_their_bounds_in_the_loop() {
        let r = run_with(
            &["-n", "6", "--max-delay", "5s"],
            Fake::new([exits(1, 1); 6]),
        );
        let caps = [1000, 2000, 4000, 5000, 5000].map(ms);
        assert_eq!(r.world.slept.len(), 5);
        for (slept, cap) in r.world.slept.iter().zip(caps) {
            assert!(*slept <= cap, "{slept:?} > {cap:?}");
        }
    }

    #[test]
    fn quiet_levels_keep_only_the_give_up_line_or_nothing() {
        let r = run_with(&["-q", "-n", "2", "-d", "0"], Fake::new([exits(1, 1); 2]));
        assert_eq!(r.log.lines().count(), 1, "{}", r.log);
        assert!(r.log.starts_with("retry: giving up"), "{}", r.log);
        let r = run_with(&["-qq", "-n", "2", "-d", "0"], Fake::new([exits(1, 1); 2]));
        assert_eq!(r.log, "");
    }

    fn with_findings(mut world: Fake, findings: impl IntoIterator<Item = Findings>) -> Fake {
        world.findings = findings.into_iter().collect();
        world
    }

    fn http(code: u16) -> Findings {
        Findings {
            http_status: Some(code),
            ..Findings::default()
        }
    }

    #[test]
    fn an_http_503_is_retried_even_after_status_0_and_gives_up_with_22() {
        let world = with_findings(Fake::new([exits(0, 5); 2]), [http(503), http(503)]);
        let r = run_with(&["-n", "2", "-d", "0"], world);
        assert_eq!(r.world.envs.len(), 2);
        assert_eq!(r.exit, Exit::Code(22));
        assert!(r.log.contains("HTTP status 503"), "{}", r.log);
    }

    #[test]
    fn an_http_404_is_fatal_and_a_redirect_or_success_is_left_to_the_status() {
        let world = with_findings(Fake::new([exits(22, 5)]), [http(404)]);
        let r = run_with(&[], world);
        assert_eq!(r.world.envs.len(), 1);
        assert_eq!(r.exit, Exit::Code(22));
        let world = with_findings(Fake::new([exits(0, 5)]), [http(200)]);
        assert_eq!(run_with(&[], world).exit, Exit::Code(0));
    }

    #[test]
    fn fatal_on_http_and_retry_on_http_change_the_lists() {
        let world = with_findings(Fake::new([exits(0, 5); 2]), [http(404), http(200)]);
        let r = run_with(&["--retry-on-http", "404", "-d", "0"], world);
        assert_eq!(r.world.envs.len(), 2);
        let world = with_findings(Fake::new([exits(22, 5)]), [http(503)]);
        let r = run_with(&["--fatal-on-http", "503"], world);
        assert_eq!(r.world.envs.len(), 1);
    }

    #[test]
    fn retry_after_sets_a_wait_no_shorter_than_asked_and_spread_a_little() {
        let asked = Findings {
            retry_after: Some(ms(30_000)),
            ..http(503)
        };
        let world = with_findings(Fake::new([exits(22, 5), exits(0, 5)]), [asked]);
        let r = run_with(&["-d", "0"], world);
        let slept = r.world.slept[0];
        assert!(slept >= ms(30_000) && slept <= ms(33_000), "{slept:?}");
        assert!(r.log.contains("following Retry-After 30s"), "{}", r.log);
    }

    #[test]
    fn retry_after_is_capped_by_retry_after_max() {
        let asked = Findings {
            retry_after: Some(ms(86_400_000)),
            ..http(503)
        };
        let world = with_findings(Fake::new([exits(22, 5), exits(0, 5)]), [asked]);
        let r = run_with(&["--retry-after-max", "10s"], world);
        let slept = r.world.slept[0];
        assert!(slept <= ms(10_000) && slept >= ms(9_000), "{slept:?}");
        assert!(r.log.contains("capped by --retry-after-max"), "{}", r.log);
    }

    #[test]
    fn retry_after_past_the_deadline_stops_the_run_at_once() {
        let asked = Findings {
            retry_after: Some(ms(120_000)),
            ..http(503)
        };
        let world = with_findings(Fake::new([exits(22, 5); 2]), [asked]);
        let r = run_with(&["--max-time", "1m"], world);
        assert!(r.world.slept.is_empty());
        assert_eq!(r.world.envs.len(), 1);
        assert_eq!(r.exit, Exit::Code(22));
        assert!(r.log.contains("after the --max-time deadline"), "{}", r.log);
    }

    #[test]
    fn a_fatal_output_match_wins_over_a_retryable_http_status() {
        let found = Findings {
            output: Some(Found::Fatal("denied".into())),
            ..http(503)
        };
        let world = with_findings(Fake::new([exits(1, 5)]), [found]);
        let r = run_with(&[], world);
        assert_eq!(r.world.envs.len(), 1);
        assert_eq!(r.exit, Exit::Code(1));
    }

    #[test]
    fn a_retry_output_match_retries_a_status_that_retry_on_leaves_out_but_not_fatal_on() {
        let busy = || Findings {
            output: Some(Found::Retry("lock".into())),
            ..Findings::default()
        };
        let world = with_findings(Fake::new([exits(100, 5), exits(0, 5)]), [busy()]);
        let r = run_with(&["--retry-on", "75", "-d", "0"], world);
        assert_eq!(r.world.envs.len(), 2);
        let world = with_findings(Fake::new([exits(100, 5)]), [busy()]);
        let r = run_with(&["--fatal-on", "100", "-d", "0"], world);
        assert_eq!(r.world.envs.len(), 1);
    }

    #[test]
    fn a_stop_hint_ends_the_run_with_the_attempts_status() {
        let stop = Findings {
            stop: true,
            ..Findings::default()
        };
        let world = with_findings(Fake::new([exits(75, 5)]), [stop]);
        let r = run_with(&[], world);
        assert_eq!(r.exit, Exit::Code(75));
        assert!(r.log.contains("asked not to be retried"), "{}", r.log);
    }

    #[test]
    fn a_failure_whose_output_has_no_reader_is_not_retried_but_a_success_succeeds() {
        let gone = |script| Fake {
            output_gone: true,
            ..Fake::new(script)
        };
        let world = gone(vec![exits(141, 5), exits(0, 5)]);
        let r = run_with(&["-n", "5", "-d", "0"], world);
        assert_eq!(r.world.envs.len(), 1);
        assert_eq!(r.exit, Exit::Code(141));
        assert!(
            r.log.contains("nothing reads its output any more"),
            "{}",
            r.log
        );
        let world = gone(vec![exits(0, 5)]);
        let r = run_with(&["-n", "5", "-d", "0"], world);
        assert_eq!(r.exit, Exit::Code(0));
    }

    #[test]
    fn held_output_is_released_as_last_only_for_the_attempt_that_ends_the_run() {
        let r = run_with(
            &["-n", "3", "-d", "0"],
            Fake::new([exits(1, 5), exits(1, 5), exits(0, 5)]),
        );
        assert_eq!(r.world.finished, [false, false, true]);
    }

    fn var<'a>(hook: &'a HookRun, name: &str) -> Option<&'a str> {
        hook.2
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    #[test]
    fn on_retry_runs_before_each_wait_within_it_and_on_giveup_once_at_the_end() {
        let args = [
            "-n",
            "3",
            "--jitter",
            "none",
            "--on-retry",
            "r",
            "--on-giveup",
            "g",
        ];
        let r = run_with(&args, Fake::new([exits(7, 10); 3]));
        let commands: Vec<_> = r.world.hooks.iter().map(|h| h.1.as_str()).collect();
        assert_eq!(commands, ["r", "r", "g"]);
        assert_eq!(var(&r.world.hooks[0], "RETRY_NEXT_DELAY_MS"), Some("1000"));
        assert_eq!(var(&r.world.hooks[1], "RETRY_ATTEMPT"), Some("2"));
        assert_eq!(var(&r.world.hooks[2], "RETRY_STATUS"), Some("7"));
        assert_eq!(
            var(&r.world.hooks[2], "RETRY_REASON"),
            Some("attempts used up")
        );
        // The 50 ms hook ran within the 1 s wait, not before it.
        assert_eq!(r.world.slept[0], ms(950));
    }

    #[test]
    fn a_failing_hook_is_logged_and_changes_nothing() {
        let r = run_with(
            &["-n", "2", "-d", "0", "--on-retry", "fail"],
            Fake::new([exits(1, 5), exits(0, 5)]),
        );
        assert_eq!(r.exit, Exit::Code(0));
        assert!(
            r.log.contains("--on-retry hook failed: exit status 1"),
            "{}",
            r.log
        );
    }

    #[test]
    fn no_give_up_hook_on_success_or_cancellation() {
        let r = run_with(&["--on-giveup", "g"], Fake::new([exits(0, 5)]));
        assert!(r.world.hooks.is_empty());
        let world = Fake::new([exits(1, 5000)]).signal_at(ms(10), TERM);
        let r = run_with(&["--on-giveup", "g"], world);
        assert!(r.world.hooks.is_empty());
    }

    #[test]
    fn the_summary_sums_short_attempts_before_rounding_to_milliseconds() {
        let quick = Script {
            runs: Duration::from_micros(700),
            ..exits(1, 0)
        };
        let r = run_with(&["-n", "300", "-d", "0"], Fake::new([quick; 300]));
        assert_eq!((r.summary.running_ms, r.summary.elapsed_ms), (210, 210));
    }

    #[test]
    fn the_summary_counts_attempts_running_and_waiting() {
        let r = run_with(
            &["-n", "3", "--jitter", "none"],
            Fake::new([exits(2, 100), exits(2, 100), exits(0, 100)]),
        );
        let s = &r.summary;
        assert_eq!(s.outcome, Outcome::Success);
        assert_eq!(
            s.attempts.iter().map(|a| a.status).collect::<Vec<_>>(),
            [2, 2, 0]
        );
        assert_eq!(
            (s.running_ms, s.sleeping_ms, s.elapsed_ms),
            (300, 3000, 3300)
        );
        assert_eq!(s.exit, 0);
        let r = run_with(
            &["--attempt-timeout", "1s", "-n", "1"],
            Fake::new([exits(0, 9000)]),
        );
        assert!(r.summary.attempts[0].timed_out);
        assert_eq!((r.summary.outcome, r.summary.exit), (Outcome::Failure, 124));
        let world = Fake::new([exits(1, 5), exits(0, 5)]).signal_at(ms(100), TERM);
        let r = run_with(&["--jitter", "none"], world);
        assert_eq!(
            (r.summary.outcome, r.summary.exit),
            (Outcome::Cancelled, 143)
        );
    }

    const KEY: [&str; 4] = ["--key", "api", "--breaker-failures", "2"];

    fn keyed<'a>(more: &[&'a str]) -> Vec<&'a str> {
        KEY.iter().chain(more).copied().collect()
    }

    #[test]
    fn an_open_breaker_refuses_the_run_with_75_and_starts_nothing() {
        let store = MemoryStore::default();
        let r = run_shared(
            &keyed(&["-n", "5", "--jitter", "none"]),
            Fake::new([exits(1, 10); 2]),
            Some(Box::new(store.clone())),
        );
        assert_eq!(r.exit, Exit::Code(1), "{}", r.log);
        assert_eq!(r.world.envs.len(), 2, "stopped at its next retry");
        assert!(r.log.contains("the breaker opened for"), "{}", r.log);
        assert!(
            r.log
                .contains("not retried: the breaker for key 'api' is open")
        );
        let r = run_shared(&keyed(&[]), Fake::new([]), Some(Box::new(store.clone())));
        assert_eq!(r.exit, Exit::Code(75));
        assert!(r.world.envs.is_empty(), "nothing ran");
        assert_eq!(r.summary.outcome, Outcome::Refused);
        assert_eq!(
            r.summary.key.as_ref().and_then(|k| k.refused),
            Some("breaker")
        );
        // Once the open time is over, one run probes and its success closes the breaker.
        store.now.set(store.now.get() + 60_000);
        let r = run_shared(
            &keyed(&[]),
            Fake::new([exits(0, 10)]),
            Some(Box::new(store.clone())),
        );
        assert_eq!(r.exit, Exit::Code(0));
        assert!(
            r.log.contains("this run probes with one attempt"),
            "{}",
            r.log
        );
        assert!(r.log.contains("the breaker closed"), "{}", r.log);
        assert_eq!(store.state().map(|s| s.breaker.name()), Some("closed"));
    }

    #[test]
    fn the_adaptive_delay_learns_from_the_outcomes_of_the_runs_on_the_key() {
        let args = [
            "--key",
            "api",
            "--backoff",
            "adaptive",
            "--jitter",
            "none",
            "--breaker-failures",
            "0",
            "--budget-burst",
            "0",
            "-n",
            "2",
        ];
        // Ten runs a second apart: one key where they succeed, one where they fail.
        let keys = [(MemoryStore::default(), 0), (MemoryStore::default(), 1)];
        for (store, status) in &keys {
            for t in 0..10 {
                store.now.set(t * 1000);
                let script = [exits(*status, 10), exits(*status, 10)];
                run_shared(&args, Fake::new(script), Some(Box::new(store.clone())));
            }
            store.now.set(10_000);
        }
        let first_delay = |store: &MemoryStore| {
            let r = run_shared(
                &args,
                Fake::new([exits(1, 10), exits(0, 10)]),
                Some(Box::new(store.clone())),
            );
            assert_eq!(r.exit, Exit::Code(0), "{}", r.log);
            r.world.slept[0]
        };
        let (healthy, failing) = (first_delay(&keys[0].0), first_delay(&keys[1].0));
        assert!(healthy < failing, "{healthy:?} vs {failing:?}");
        // Each is what the rule makes of the key's history, this run's failure included.
        let kept = keys[0].0.state().expect("a state").history;
        assert_eq!(
            kept.outcomes().count(),
            12,
            "ten successes, then a failure and a success"
        );
        // The store's clock stood still; the run's moved on by the 10 ms attempt.
        let mut before = History::default();
        for o in kept.outcomes().take(10) {
            before.record(o.at, o.success);
        }
        before.record(10_010, false);
        let p = crate::setup::from_flags(&args).expect("a valid policy");
        let mut rule = Adaptive::new(adaptive::RULE, &p.backoff);
        let expected = rule.next(&p.backoff, 1, &before.estimate(10_010, p.backoff.delay));
        assert_eq!(healthy, expected);
        assert_ne!(healthy, p.backoff.base(1), "not the exponential delay");
    }

    #[test]
    fn a_failed_probe_makes_one_attempt_only() {
        let store = MemoryStore::default();
        run_shared(
            &keyed(&["-n", "2"]),
            Fake::new([exits(1, 10); 2]),
            Some(Box::new(store.clone())),
        );
        store.now.set(60_000);
        let r = run_shared(
            &keyed(&["-n", "5"]),
            Fake::new([exits(1, 10)]),
            Some(Box::new(store.clone())),
        );
        assert_eq!(r.exit, Exit::Code(1));
        assert_eq!(r.world.envs.len(), 1);
        assert!(r.log.contains("the probe failed"), "{}", r.log);
    }

    #[test]
    fn a_spent_budget_ends_the_run_with_its_last_status() {
        let store = MemoryStore::default();
        let args = [
            "--key",
            "api",
            "--breaker-failures",
            "0",
            "--budget-burst",
            "2",
            "-n",
            "9",
        ];
        let r = run_shared(
            &args,
            Fake::new([exits(3, 10); 3]),
            Some(Box::new(store.clone())),
        );
        assert_eq!(r.exit, Exit::Code(3));
        assert_eq!(r.world.envs.len(), 3, "two tokens, two retries");
        assert!(
            r.log.contains("the retry budget for key 'api' is spent"),
            "{}",
            r.log
        );
        assert_eq!(
            r.summary.key.as_ref().and_then(|k| k.refused),
            Some("budget")
        );
        assert_eq!(r.summary.key.as_ref().map(|k| k.tokens), Some(0.0));
    }

    /// A store that cannot be reached.
    struct Broken;

    impl Store for Broken {
        fn admit(&mut self, _: &SharedSettings) -> Result<Reply<Admit>, state::Error> {
            Err(state::Error::NoDirectory)
        }
        fn after_attempt(
            &mut self,
            _: &SharedSettings,
            _: Ticket,
            _: Attempt,
            _: bool,
            _: f64,
        ) -> Result<Reply<After>, state::Error> {
            panic!("a store that failed once is not asked again")
        }
        fn before_retry(
            &mut self,
            _: &SharedSettings,
            _: Ticket,
        ) -> Result<Reply<(Option<Refusal>, Ticket)>, state::Error> {
            panic!("a store that failed once is not asked again")
        }
        fn view(&mut self, _: &SharedSettings) -> Result<Reply<()>, state::Error> {
            Err(state::Error::NoDirectory)
        }
        fn reset(&mut self) -> Result<(), state::Error> {
            Err(state::Error::NoDirectory)
        }
        fn describe(&self) -> String {
            "broken".into()
        }
    }

    #[test]
    fn a_state_error_is_one_warning_and_the_run_goes_on_as_without_a_key() {
        let r = run_shared(
            &keyed(&["-n", "4", "--jitter", "none"]),
            Fake::new([exits(1, 10), exits(1, 10), exits(1, 10), exits(0, 10)]),
            Some(Box::new(Broken)),
        );
        assert_eq!(r.exit, Exit::Code(0));
        assert_eq!(r.world.slept, [ms(1000), ms(2000), ms(4000)]);
        assert_eq!(r.log.matches("warning").count(), 1, "{}", r.log);
        assert!(r.log.contains("going on without its breaker and budget"));
        assert!(r.summary.key.is_none());
    }
}
