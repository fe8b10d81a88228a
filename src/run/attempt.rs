//! The attempt loop: start an attempt, watch it, judge it, and retry it after a wait, until a
//! judgement or a limit ends the run. Everything that touches the world comes through
//! [`World`], what the key's state says through the [`Gate`], and everything the run tells
//! through the [`Reporter`]; the judgement itself is [`judgement::judge`], a pure function. The
//! loop is tested with a scripted world and a fake clock, without sleeping.

use std::time::Duration;

use rand::Rng;

use super::gate::{Admission, Gate};
use super::supervise::supervise;
use crate::env;
use crate::exit::Exit;
use crate::platform::world::{AttemptEnv, Event, HookLimits, World};
use crate::policy::Policy;
use crate::policy::breaker::Attempt;
use crate::policy::judgement::{self, Decision, Ended, Next, Overrule, SaidFailed};
use crate::policy::pacing::{self, Pacing};
use crate::policy::status::{Status, cancels};
use crate::report::log::Log;
use crate::report::reporter::{Count, Reporter};
use crate::report::summary::{Outcome, Summary};
use crate::report::words;
use crate::state::Shared;

/// retry's own exit when `end` is the run's last attempt.
fn exit_of(end: &Ended) -> Exit {
    match end.status {
        _ if end.stopped.is_some() => Exit::TIMED_OUT,
        Status::Code(code) => Exit::Code(u8::try_from(code).unwrap_or(u8::MAX)),
        Status::Signal(sig) => Exit::Signal(sig),
    }
}

/// One run of attempts: what the loop carries from one attempt to the next.
pub struct Attempts<'a, W, R: ?Sized> {
    policy: &'a Policy,
    world: &'a mut W,
    rng: &'a mut R,
    rep: Reporter<'a>,
    pacing: Pacing<'a>,
    /// The attempt running or last run, 1-based; 0 before the first.
    attempt: u32,
    /// The last attempt's status as the outcome lists judge it; `None` before the first.
    previous: Option<i32>,
    /// The breaker and budget shared with other runs (`--key`).
    gate: Gate,
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
            rep: Reporter::new(policy, log, summary),
            // The adaptive delay needs a key, which the command line checks.
            pacing: Pacing::of(policy, true),
            attempt: 0,
            previous: None,
            gate: Gate::new(None, 0, None),
        }
    }

    /// Shares the run's breaker and budget with other runs through `shared`.
    pub fn with_state(mut self, shared: Option<Shared>) -> Self {
        let opens_after = self
            .policy
            .state
            .as_ref()
            .map_or(0, |s| s.rules.breaker.failures);
        self.gate = Gate::new(shared, opens_after, self.policy.max_time);
        self
    }

    /// Runs attempts until one ends the run, and returns how retry should exit.
    pub fn run(mut self) -> Exit {
        if let Some(refused) = self.begin() {
            return refused;
        }
        // A cancelling signal that came while the run waited for its key (a lock, the
        // store): no attempt starts.
        if let Some(sig) = self.world.cancel_pending() {
            return self.rep.cancelled_before(self.world.elapsed(), sig);
        }
        loop {
            let end = self.attempt();
            let decision = self.decide(&end);
            match decision.next() {
                Next::Succeed => return self.succeed(&end),
                Next::GiveUp => return self.give_up_after(&end, &decision),
                Next::Retry(delay) => {
                    if let Some(exit) = self.wait(&end, &decision, delay) {
                        return exit;
                    }
                }
            }
        }
    }

    /// Before the first attempt: the policy (-v), the splay's wait, the key's admission, the
    /// warnings about the settings (with the key's state, as every line after the admission);
    /// then the key may refuse the run, which exits 75. A signal during the splay ends the run
    /// by that signal.
    fn begin(&mut self) -> Option<Exit> {
        self.rep.policy_line(self.world.elapsed());
        if let Some(sig) = self.splay() {
            return Some(self.rep.cancelled_before(self.world.elapsed(), sig));
        }
        let admission = self.gate.begin(self.world.elapsed(), &mut self.rep);
        let now = self.world.elapsed();
        self.rep.warnings(now);
        match admission {
            Admission::Run => {
                if self.gate.probing() {
                    self.rep.probing(now);
                }
                None
            }
            Admission::Refused(refused) => Some(self.rep.refused(now, refused)),
            Admission::StoreClosed(why) => Some(self.rep.closed_store(now, &why)),
        }
    }

    /// The random wait of `--splay`, before the key's store is first asked (so that runs
    /// started together spread its load too) and the first attempt. It is the loop's own wait:
    /// counted down on a terminal, suspended by Ctrl-Z, cut short by a cancelling signal,
    /// which it returns. The command line keeps it shorter than `--max-time`, so that it
    /// always ends before the deadline.
    fn splay(&mut self) -> Option<i32> {
        let wait = pacing::splay(self.policy.splay, self.rng);
        if wait.is_zero() {
            return None;
        }
        let from = self.world.elapsed();
        self.rep.splaying(from, wait);
        let woke = self.sleep(from.saturating_add(wait));
        self.rep.slept(self.world.elapsed().saturating_sub(from));
        woke
    }

    /// Starts the next attempt and watches it until it ends; records it in the summary.
    fn attempt(&mut self) -> Ended {
        self.attempt += 1;
        let started = self.world.elapsed();
        let env = AttemptEnv {
            attempt: self.attempt,
            max_attempts: self.pacing.max_attempts(),
            previous: self.previous,
            remaining: self.policy.max_time.map(|max| max.saturating_sub(started)),
        };
        self.rep.starting(started, self.count());
        let end = match self.world.spawn(&env) {
            Ok(()) => supervise(
                self.policy,
                self.world,
                &mut self.rep,
                &mut self.gate,
                started,
            ),
            Err(e) => {
                let (why, status) = (e.why, e.status);
                self.rep.not_started(self.world.elapsed(), e);
                Ended {
                    unstarted: Some(why),
                    ..Ended::with(Status::Code(status))
                }
            }
        };
        let end = Ended {
            ran: self.world.elapsed().saturating_sub(started),
            ..end
        };
        self.previous = Some(end.number());
        self.rep.ended(self.world.elapsed(), &end);
        end
    }

    /// After the attempt: its judgement, then what may overrule it (stdin that cannot be
    /// given again, the key, output that could not be delivered). Held output is released
    /// here, to stdout when the attempt ends the run.
    fn decide(&mut self, end: &Ended) -> Decision {
        let now = self.world.elapsed();
        // A long attempt starts the schedule and the limit afresh, before the judgement asks
        // them for the next delay.
        let reset = self.pacing.ran(self.attempt, end.ran);
        let estimates = self
            .pacing
            .learns()
            .then(|| self.gate.estimates(now, self.policy.backoff.delay))
            .flatten();
        let world = &*self.world;
        let mut decision = judgement::judge(
            self.policy,
            end,
            self.attempt,
            &mut self.pacing,
            estimates.as_ref(),
            now,
            self.rng,
            || world.output_gone(),
        );
        if matches!(decision.next(), Next::Retry(_))
            && let Some(why) = self.world.unrepeatable()
        {
            decision.overruled = Some(Overrule::Unrepeatable(why));
        }
        let wants_retry = matches!(decision.next(), Next::Retry(_));
        let mut counted = decision.judgement.counted();
        let now = self.world.elapsed();
        if reset && counted == Attempt::Failure {
            // A long healthy attempt is a success for the key's breaker, whatever ended it.
            counted = Attempt::Success;
            self.rep.reset(now, end.ran, self.count());
        }
        if let Some(refused) = self
            .gate
            .after(counted, wants_retry, self.rng, now, &mut self.rep)
        {
            decision.overruled = Some(Overrule::Refused(refused));
        }
        if let Err(why) = self
            .world
            .finish(!matches!(decision.next(), Next::Retry(_)))
        {
            decision.overruled = Some(Overrule::Undeliverable(why));
        }
        decision
    }

    /// Which attempt this is, and the last the limit allows, for the reporter.
    fn count(&self) -> Count {
        Count {
            attempt: self.attempt,
            max_attempts: self.pacing.max_attempts(),
        }
    }

    fn succeed(&mut self, end: &Ended) -> Exit {
        let exit = exit_of(end);
        self.rep.succeeded(self.world.elapsed(), end, exit);
        exit
    }

    /// Ends the run on the attempt's decision.
    fn give_up_after(&mut self, end: &Ended, d: &Decision) -> Exit {
        self.rep.failed(self.world.elapsed(), end, d, None);
        let exit = match (end.cancelled, &d.overruled, d.said_failed) {
            // A cancelled run ends by the signal it got, whatever the command made of it (a
            // trap that exits 1): a shell stops its loop or script only for a child that died
            // by the signal, as `sleep` in the same place would.
            (Some(sig), _, _) => Exit::Signal(sig),
            // Output retry carries that could not be delivered: retry itself failed.
            (None, Some(Overrule::Undeliverable(_)), _) => Exit::FAILURE,
            (None, _, Some(SaidFailed::Http)) => Exit::HTTP_FAILED,
            (None, _, Some(SaidFailed::Output)) => Exit::OUTPUT_FAILED,
            (None, _, None) => exit_of(end),
        };
        let outcome = match end.cancelled {
            Some(_) => Outcome::Cancelled,
            None => Outcome::Failure,
        };
        let why = self.rep.why(d);
        self.give_up(end, why, words::names_status(d), outcome, exit)
    }

    /// Before a retry: logs the attempt with its delay, runs `--on-retry` within the wait, and
    /// waits. Returns how to exit when the run ends instead: a cancelling signal during the
    /// wait, the key's refusal, or a hook that outlasted the deadline.
    fn wait(&mut self, end: &Ended, d: &Decision, delay: Duration) -> Option<Exit> {
        self.rep.failed(self.world.elapsed(), end, d, Some(delay));
        // The wait counts from the attempt's end: a hook runs within it, not before it. The
        // wait's time, all but the hook's, is time slept: at least the delay, without a hook.
        let wait_from = self.world.elapsed();
        let wake = wait_from.saturating_add(delay);
        if self.gate.idles_through(delay) {
            self.gate.idle();
        }
        let hook_from = self.world.elapsed();
        let vars = || env::on_retry(end.number(), delay);
        // Within the run: the deadline stops it as it would the wait.
        let deadline = self
            .policy
            .max_time
            .map(|max| max.saturating_sub(self.world.elapsed()));
        self.hook(
            self.policy.hooks.on_retry.as_deref(),
            "--on-retry",
            deadline,
            vars,
        );
        let hook_ran = self.world.elapsed().saturating_sub(hook_from);
        let woke = self.sleep(wake);
        self.rep.slept(
            self.world
                .elapsed()
                .saturating_sub(wait_from)
                .saturating_sub(hook_ran),
        );
        if let Some(sig) = woke {
            let why = words::cancelled_waiting(sig);
            // Ends by the signal, as a shell's loop or script needs to see to stop too.
            return Some(self.give_up(end, why, false, Outcome::Cancelled, Exit::Signal(sig)));
        }
        if let Some(refused) = self.gate.before_retry(self.world.elapsed(), &mut self.rep) {
            let why = self.rep.refusal(refused);
            return Some(self.give_up(end, why, false, Outcome::Failure, exit_of(end)));
        }
        if self.pacing.past_deadline(self.world.elapsed()) {
            // A hook outlasted the wait and the deadline: no attempt starts after it.
            let why = words::DEADLINE_WHILE_WAITING.to_string();
            return Some(self.give_up(end, why, false, Outcome::Failure, exit_of(end)));
        }
        None
    }

    /// Ends the run without success: the give-up line, the `--on-giveup` hook (not when the
    /// run was cancelled), and the summary.
    fn give_up(
        &mut self,
        end: &Ended,
        why: String,
        names_status: bool,
        outcome: Outcome,
        exit: Exit,
    ) -> Exit {
        let now = self.world.elapsed();
        let exit = self
            .rep
            .giving_up(now, end, &why, names_status, outcome, exit);
        if outcome != Outcome::Cancelled {
            let vars = || env::on_giveup(end.number(), &why);
            // The run is over: the hook has its own --hook-timeout, whatever --max-time left.
            self.hook(
                self.policy.hooks.on_giveup.as_deref(),
                "--on-giveup",
                None,
                vars,
            );
        }
        self.rep.end(self.world.elapsed(), outcome, why, exit);
        exit
    }

    /// Runs a hook, if one is given, with the attempt's variables and its own (`vars`, made only
    /// for a hook), stopped by `--hook-timeout` or the `deadline` left, whichever comes first;
    /// logs its failure.
    fn hook(
        &mut self,
        command: Option<&str>,
        flag: &str,
        deadline: Option<Duration>,
        vars: impl FnOnce() -> Vec<env::Var>,
    ) {
        let Some(command) = command else { return };
        let mut vars = vars();
        vars.extend(env::attempt(self.attempt, self.pacing.max_attempts()));
        let limits = HookLimits {
            timeout: self.policy.hooks.timeout,
            deadline,
        };
        let (status, failure) = match self.world.hook(command, vars, limits) {
            Ok(Status::Code(0)) => return,
            Ok(status) => (Some(status), status.to_string()),
            Err(why) => (None, why),
        };
        self.rep
            .hook_failed(self.world.elapsed(), flag, status, failure);
    }

    /// Waits until `until`, counting down on a terminal; returns the cancelling signal that
    /// cut the wait short, if any.
    fn sleep(&mut self, until: Duration) -> Option<i32> {
        let world = &mut *self.world;
        let rep = &mut self.rep;
        let counting = rep.counts_down() && until.saturating_sub(world.elapsed()) >= COUNTDOWN_FROM;
        let woke = loop {
            // Wait at least once, even when the time has come: a signal that arrived meanwhile
            // (in a hook, say) is seen here and ends the run, rather than after one more
            // attempt.
            let now = world.elapsed();
            let left = until.saturating_sub(now);
            let wake = if counting && !left.is_zero() {
                rep.count_down(left);
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
                Event::Signal(sig) | Event::Typed(sig) if cancels(sig) => break Some(sig),
                // Ctrl-Z: the countdown is cleared before the shell prints Stopped, and shown
                // again once the run is continued.
                Event::Suspend => {
                    rep.clear_countdown();
                    world.suspend();
                }
                // With no attempt running, there is nobody to pass other signals on to.
                Event::Signal(_) | Event::Typed(_) | Event::Exited(_) | Event::Interrupted(_) => {}
            }
        };
        rep.clear_countdown();
        woke
    }
}

/// Waits shorter than this are not counted down.
const COUNTDOWN_FROM: Duration = Duration::from_secs(2);
