//! A run's handle on its key ([`Shared`]): the store it was given, the ticket of its admission,
//! and the view of the key it last heard; the one place that decides which of a run's
//! outcomes are told to the store, that falls back on the local state when a `--state`
//! store fails at the start, and that keeps a run whose key's state cannot be read in time
//! (its lock) from the retries its breaker or budget would have had to allow.

use std::time::Duration;

use super::{Error, Forgot, Reply, Store};
use crate::policy::breaker::{Attempt, Change};
use crate::policy::key::FailMode;
use crate::policy::shared::{Admit, KeyRules, Refusal, Refused, Ticket, View};

/// What a run with a `--state` store does when it cannot be reached before the run starts.
pub struct Fallback {
    pub fail: FailMode,
    /// The key's state in this host's state directory.
    pub local: Box<dyn Store>,
}

/// A run's handle on its key: the store, and the run's ticket.
pub struct Shared {
    pub key: String,
    rules: KeyRules,
    store: Box<dyn Store>,
    /// With a `--state` store: what to do if it fails at the start. Taken when the run starts.
    pub fallback: Option<Fallback>,
    /// The store's errors in this run.
    pub errors: u32,
    ticket: Option<Ticket>,
    /// The key's state as the store last answered.
    pub view: Option<View>,
    /// A warning the last operation left, for the log.
    pub warning: Option<String>,
    now: u64,
    /// `view` is the state the current attempt started under (the answer to the admission or
    /// to the check before a retry), not one given after it.
    at_start: bool,
    /// The key's lock could not be had in time: the run does not know the key's state, and
    /// asks the store nothing more (each call would wait as long again).
    unknown: bool,
    /// Why the key's state became unknown, for the run to tell once.
    pub lock_lost: Option<Error>,
    /// Leave unrecorded the successes that change nothing (see `Shared::skips_success`).
    /// On for a real run's handle ([`open`]); off by default, so that the simulator sees
    /// every outcome.
    pub skip_moot_successes: bool,
}

impl Shared {
    pub fn new(key: String, rules: KeyRules, store: Box<dyn Store>) -> Shared {
        Shared {
            key,
            rules,
            store,
            fallback: None,
            errors: 0,
            ticket: None,
            view: None,
            warning: None,
            now: 0,
            at_start: false,
            unknown: false,
            lock_lost: None,
            skip_moot_successes: false,
        }
    }

    /// The store's time at its last answer.
    pub fn now(&self) -> u64 {
        self.now
    }

    /// The run must not start: its `--state` store failed and `--state-fail` is closed.
    pub fn fails_closed(&self) -> bool {
        self.fallback
            .as_ref()
            .is_some_and(|f| f.fail == FailMode::Closed)
    }

    /// This run probes the half-open breaker.
    pub fn probing(&self) -> bool {
        self.ticket.is_some_and(|t| t.probe)
    }

    /// Remembers what a reply says of the key.
    fn heard<T>(&mut self, reply: Reply<T>) -> (T, u64) {
        self.at_start = false;
        self.view = Some(reply.view);
        self.warning = reply.warning;
        self.now = reply.now;
        (reply.value, reply.now)
    }

    /// The next operations may wait for the key at most `most` (what is left before the
    /// run's deadline).
    pub fn wait_at_most(&mut self, most: Option<Duration>) {
        self.store.wait_at_most(most);
        if let Some(fallback) = self.fallback.as_mut() {
            fallback.local.wait_at_most(most);
        }
    }

    /// Whether the run knows nothing of its key's state, which the store did not give in time.
    pub fn unknown(&self) -> bool {
        self.unknown
    }

    /// Whether a run whose key's state is unknown makes no retry: whether its breaker or
    /// budget would have had to allow one.
    pub fn retries_refused(&self) -> bool {
        self.rules.may_refuse_retries()
    }

    /// The key's refusal of a retry the run wants while its state is unknown: every retry the
    /// breaker or the budget would have had to allow.
    fn unknown_refusal(&self, wants_retry: bool) -> Option<Refused> {
        (wants_retry && self.retries_refused()).then_some(Refused {
            refusal: Refusal::Unknown,
            left: Duration::ZERO,
        })
    }

    /// A store's error: counted; a lock not had in time leaves the key's state unknown, and
    /// the run goes on under that (`Ok`), with [`Shared::lock_lost`] saying why; any other
    /// error is returned.
    fn failed(&mut self, e: Error) -> Result<(), Error> {
        self.errors += 1;
        if !e.leaves_state_unknown() {
            return Err(e);
        }
        self.unknown = true;
        self.at_start = false;
        self.ticket = None;
        self.lock_lost = Some(e);
        Ok(())
    }

    /// Before the first attempt: `Some` when the run may not start. A `--state` store that
    /// fails here is replaced by the local state with `--state-fail open` (and the reply's
    /// warning says so); with `closed` the error is returned, and [`Shared::fails_closed`]
    /// says the run must not start. When the key's state cannot be read in time, the run
    /// starts: the command's first attempt is not the state's to refuse.
    pub fn admit(&mut self) -> Result<Option<Refused>, Error> {
        let fallback = self.fallback.take();
        let mut went_on = None;
        let answer = match (self.store.admit(&self.rules), fallback) {
            (Err(e @ Error::Store { .. }), Some(fallback)) => {
                self.errors += 1;
                if fallback.fail == FailMode::Closed {
                    self.fallback = Some(fallback);
                    return Err(e);
                }
                self.store = fallback.local;
                went_on = Some(format!(
                    "key '{}': {e}; going on with this host's local state (--state-fail open)",
                    self.key
                ));
                self.store.admit(&self.rules)
            }
            (answer, _) => answer,
        };
        let mut reply = match answer {
            Ok(reply) => reply,
            Err(e) => {
                self.warning = went_on;
                return self.failed(e).map(|()| None);
            }
        };
        if let Some(went_on) = went_on {
            reply.warning = Some(match reply.warning.take() {
                Some(w) => format!("{went_on}; {w}"),
                None => went_on,
            });
        }
        match self.heard(reply) {
            (Admit::Run(ticket), _) => {
                self.ticket = Some(ticket);
                self.at_start = true;
                Ok(None)
            }
            (Admit::Refused(refusal), now) => Ok(Some(refused(refusal, now))),
        }
    }

    /// After an attempt's verdict: counts it, and when the run wants a retry, asks for one.
    /// Returns the breaker's move and, when the retry is refused, why.
    pub fn after_attempt(
        &mut self,
        attempt: Attempt,
        wants_retry: bool,
        u: f64,
    ) -> Result<(Change, Option<Refused>), Error> {
        if self.unknown {
            return Ok((Change::None, self.unknown_refusal(wants_retry)));
        }
        let Some(ticket) = self.ticket else {
            return Ok((Change::None, None));
        };
        if !self.records(attempt, wants_retry) {
            // The ticket, and the view the run reports, stay those of the attempt's start.
            self.at_start = false;
            return Ok((Change::None, None));
        }
        let reply = match self
            .store
            .after_attempt(&self.rules, ticket, attempt, wants_retry, u)
        {
            Ok(reply) => reply,
            Err(e) => {
                self.failed(e)?;
                return Ok((Change::None, self.unknown_refusal(wants_retry)));
            }
        };
        let (after, now) = self.heard(reply);
        self.ticket = Some(after.ticket);
        Ok((after.change, after.refusal.map(|r| refused(r, now))))
    }

    /// Whether the attempt that ended is told to the store.
    fn records(&self, attempt: Attempt, wants_retry: bool) -> bool {
        !(attempt == Attempt::Success && !wants_retry && self.skips_success())
    }

    /// Whether the success of the attempt now running would not be told to the store: the one
    /// place where that is decided. It is not, when the state the attempt started under shows
    /// that recording it would change nothing ([`View::success_is_moot`]): a breaker closed
    /// with no failure kept, a full bucket, no probe. That saves the store a call (a round
    /// trip to Redis, a read of the state file) in the commonest run of all, one that succeeds
    /// at once. The success then counts as of the attempt's start, when its evidence was
    /// gathered: failures other runs record during the attempt are not cleared by it, and its
    /// `--budget-ratio` credit to a bucket that was full is not given. No success is moot on
    /// a key that keeps its outcomes (`--backoff adaptive`), and none is skipped without
    /// `skip_moot_successes`.
    fn skips_success(&self) -> bool {
        self.skip_moot_successes
            && self.at_start
            && self
                .ticket
                .zip(self.view.as_ref())
                .is_some_and(|(ticket, view)| view.success_is_moot(ticket))
    }

    /// The attempt's command has started. When its success would not be told to the store,
    /// the store's connection is let go now, while the command runs, rather than at exit:
    /// closing it then costs the run no time, and a long attempt holds no idle connection to
    /// a fleet's server. A failure, which is told, connects again.
    pub fn attempt_started(&mut self) {
        if self.skips_success() {
            self.store.idle();
        }
    }

    /// Just before a retry starts, after its wait: has the breaker opened since?
    pub fn before_retry(&mut self) -> Result<Option<Refused>, Error> {
        if self.unknown {
            return Ok(self.unknown_refusal(true));
        }
        let Some(ticket) = self.ticket else {
            return Ok(None);
        };
        let reply = match self.store.before_retry(&self.rules, ticket) {
            Ok(reply) => reply,
            Err(e) => {
                self.failed(e)?;
                return Ok(self.unknown_refusal(true));
            }
        };
        let ((refusal, ticket), now) = self.heard(reply);
        self.ticket = Some(ticket);
        self.at_start = refusal.is_none();
        Ok(refusal.map(|r| refused(r, now)))
    }

    /// The key's state, for `--explain`, changing nothing.
    pub fn view(&mut self) -> Result<View, Error> {
        let reply = self.store.view(&self.rules)?;
        let view = reply.view.clone();
        self.heard(reply);
        Ok(view)
    }

    /// Forgets the key's state.
    pub fn reset(&mut self) -> Result<(), Error> {
        self.store.reset()
    }

    /// Forgets the key's state, and says whether it had any.
    pub fn forget(&mut self) -> Result<Forgot, Error> {
        self.store.forget()
    }

    /// Where the key's state is kept.
    pub fn describe(&self) -> String {
        self.store.describe()
    }
}

fn refused(refusal: Refusal, now: u64) -> Refused {
    let until = match refusal {
        Refusal::Open { until } => until,
        Refusal::Probing { lease_until } => lease_until,
        Refusal::Budget | Refusal::Unknown => now,
    };
    Refused {
        refusal,
        left: Duration::from_millis(until.saturating_sub(now)),
    }
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;
    use std::rc::Rc;

    use super::*;
    use crate::policy::breaker::Breaker;
    use crate::policy::shared::tests::settings;
    use crate::policy::shared::{After, KeyState};
    use crate::state::memory::MemoryStore;

    /// A store in memory that counts the attempts it is told of, and the times it is let go.
    #[derive(Clone, Default)]
    struct Counted {
        memory: MemoryStore,
        told: Rc<Cell<u32>>,
        idled: Rc<Cell<u32>>,
    }

    impl Store for Counted {
        fn admit(&mut self, s: &KeyRules) -> Result<Reply<Admit>, Error> {
            Store::admit(&mut self.memory, s)
        }
        fn after_attempt(
            &mut self,
            s: &KeyRules,
            ticket: Ticket,
            attempt: Attempt,
            wants_retry: bool,
            u: f64,
        ) -> Result<Reply<After>, Error> {
            self.told.set(self.told.get() + 1);
            Store::after_attempt(&mut self.memory, s, ticket, attempt, wants_retry, u)
        }
        fn before_retry(
            &mut self,
            s: &KeyRules,
            ticket: Ticket,
        ) -> Result<Reply<(Option<Refusal>, Ticket)>, Error> {
            Store::before_retry(&mut self.memory, s, ticket)
        }
        fn view(&mut self, s: &KeyRules) -> Result<Reply<()>, Error> {
            Store::view(&mut self.memory, s)
        }
        fn reset(&mut self) -> Result<(), Error> {
            Store::reset(&mut self.memory)
        }
        fn describe(&self) -> String {
            "counted".into()
        }
        fn idle(&mut self) {
            self.idled.set(self.idled.get() + 1);
        }
    }

    /// A real run's handle on the store.
    fn handle(store: &Counted) -> Shared {
        let mut shared = Shared::new("api".into(), settings(), Box::new(store.clone()));
        shared.skip_moot_successes = true;
        shared
    }

    /// A run whose attempts end as `attempts` say (each retried but the last); how many of
    /// them the store was told of.
    fn told(store: &Counted, attempts: &[Attempt]) -> u32 {
        let before = store.told.get();
        let mut shared = handle(store);
        assert_eq!(shared.admit().expect("admitted"), None);
        for (i, &attempt) in attempts.iter().enumerate() {
            let last = i + 1 == attempts.len();
            shared.attempt_started();
            let (_, refused) = shared.after_attempt(attempt, !last, 0.0).expect("told");
            assert_eq!(refused, None);
            if !last {
                assert_eq!(shared.before_retry().expect("checked"), None);
            }
        }
        store.told.get() - before
    }

    #[test]
    fn a_success_on_a_settled_key_is_not_told_to_the_store() {
        let store = Counted::default();
        assert_eq!(told(&store, &[Attempt::Success]), 0);
        assert_eq!(store.memory.state(), Some(KeyState::new(&settings(), 0)));
        // The run reports the state its attempt started under.
        let mut shared = handle(&store);
        shared.admit().expect("admitted");
        shared
            .after_attempt(Attempt::Success, false, 0.0)
            .expect("ok");
        let view = shared.view.as_ref().expect("a view");
        assert_eq!((view.breaker.name(), view.tokens), ("closed", 3.0));
        // Off: every attempt is told.
        let mut shared = handle(&store);
        shared.skip_moot_successes = false;
        shared.admit().expect("admitted");
        shared
            .after_attempt(Attempt::Success, false, 0.0)
            .expect("ok");
        assert_eq!(store.told.get(), 1);
        // A key that keeps its outcomes, for --backoff adaptive: every success is one.
        let mut shared = handle(&store);
        shared.rules.history = true;
        shared.admit().expect("admitted");
        shared
            .after_attempt(Attempt::Success, false, 0.0)
            .expect("ok");
        assert_eq!(store.told.get(), 2);
    }

    #[test]
    fn a_success_is_told_when_a_failure_is_kept_the_bucket_is_not_full_or_the_run_probes() {
        let store = Counted::default();
        // A failure, then a success that must clear it.
        assert_eq!(told(&store, &[Attempt::Failure]), 1);
        assert_eq!(told(&store, &[Attempt::Success]), 1);
        assert_eq!(
            store.memory.state().map(|k| k.breaker),
            Some(Breaker::default())
        );
        // A retry took a token, with the breaker off so that nothing else is kept: the success
        // after it gives half a token back.
        let off = Counted::default();
        let mut shared = handle(&off);
        shared.rules.breaker.failures = 0;
        shared.admit().expect("admitted");
        shared
            .after_attempt(Attempt::Failure, true, 0.0)
            .expect("ok");
        shared.before_retry().expect("ok");
        shared
            .after_attempt(Attempt::Success, false, 0.0)
            .expect("ok");
        assert_eq!(off.told.get(), 2);
        assert_eq!(off.memory.state().map(|k| k.budget.milli), Some(2500));
        // The bucket is still short: the next run's success is told too, and fills it.
        assert_eq!(told(&off, &[Attempt::Success]), 1);
        // Two failures open the breaker; after its open time the probe's success closes it.
        let store = Counted::default();
        told(&store, &[Attempt::Failure, Attempt::Failure]);
        store.memory.now.set(60_000);
        let mut shared = handle(&store);
        shared.admit().expect("admitted");
        assert!(shared.probing());
        let (change, _) = shared
            .after_attempt(Attempt::Success, false, 0.0)
            .expect("ok");
        assert_eq!(change, Change::Closed);
    }

    #[test]
    fn the_store_is_let_go_while_an_attempt_runs_whose_success_it_would_not_be_told() {
        let store = Counted::default();
        told(&store, &[Attempt::Success]);
        assert_eq!(store.idled.get(), 1);
        // A failure then: the store is told of it, and of the success after it.
        told(&store, &[Attempt::Failure]);
        assert_eq!(store.idled.get(), 2);
        told(&store, &[Attempt::Success]);
        assert_eq!((store.idled.get(), store.told.get()), (2, 2));
        // Not when it would be told: off, as for a policy that learns from every outcome.
        let mut shared = handle(&store);
        shared.skip_moot_successes = false;
        shared.admit().expect("admitted");
        shared.attempt_started();
        assert_eq!(store.idled.get(), 2);
    }

    #[test]
    fn a_success_after_a_retry_is_judged_by_the_state_it_started_under() {
        // Budget off and breaker off: nothing a success could change.
        let store = Counted::default();
        let mut shared = handle(&store);
        shared.rules.breaker.failures = 0;
        shared.rules.budget.burst = 0;
        shared.admit().expect("admitted");
        shared
            .after_attempt(Attempt::Failure, true, 0.0)
            .expect("ok");
        // Without the check before the retry, the view is the one given after the failure.
        let (change, _) = shared
            .after_attempt(Attempt::Success, false, 0.0)
            .expect("ok");
        assert_eq!((change, store.told.get()), (Change::None, 2));
        shared
            .after_attempt(Attempt::Failure, true, 0.0)
            .expect("ok");
        shared.before_retry().expect("ok");
        shared
            .after_attempt(Attempt::Success, false, 0.0)
            .expect("ok");
        assert_eq!(store.told.get(), 3);
    }
}
