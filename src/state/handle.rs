//! A run's handle on its key ([`Shared`]): the store it was given, the ticket of its admission,
//! and the view of the key it last heard; the one place that decides which of a run's
//! outcomes are told to the store, that falls back on the local state when a `--state`
//! store fails at the start, and that keeps a run whose key's state cannot be read in time
//! (its lock) from the retries its breaker or budget would have had to allow; and, with a
//! `--state` store, the one place that remembers on this host an open breaker the store told
//! of, and refuses runs from that memory, without a call, until its open time is over.

use std::time::Duration;

use super::{Error, Forgot, Memo, Reply, Store, Verdict};
use crate::policy::adaptive::History;
use crate::policy::breaker::{Attempt, Change, State};
use crate::policy::key::FailMode;
use crate::policy::shared::{Admit, KeyRules, Refusal, Refused, Ticket, View};

/// How long a run holds its connection to the store while it does not call it (an attempt
/// that runs, a wait before a retry): a failing run, whose attempts end fast, makes all its
/// calls over one connection; a fleet of hosts whose attempts or waits last minutes holds no
/// connection each meanwhile (a Redis server takes 10,000 clients by default).
pub const IDLE_GRACE: Duration = Duration::from_secs(2);

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
    /// With a `--state` store: where this host remembers an open breaker the store told of
    /// (see [`Shared::recall`]). Dropped when the run falls back on its local state.
    pub memo: Option<Box<dyn Memo>>,
    /// A remembered verdict was found over: forgotten once the store says the breaker is no
    /// longer open.
    stale: bool,
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
            memo: None,
            stale: false,
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

    /// Remembers what a reply says of the key; and, on this host, an open breaker it tells of.
    fn heard<T>(&mut self, reply: Reply<T>) -> (T, u64) {
        self.at_start = false;
        self.warning = reply.warning;
        self.now = reply.now;
        self.note(&reply.view, reply.now);
        self.view = Some(reply.view);
        (reply.value, reply.now)
    }

    /// The store's answer shows its breaker open until a time to come: this host remembers
    /// it, as time left on its own clock (never past `--breaker-open-max`), so that its next
    /// runs are refused without a call. One that shows it no longer open forgets a verdict
    /// found over. A problem with the memory is a warning; without a state directory there
    /// is nowhere to keep it, and nothing is said.
    fn note(&mut self, view: &View, now: u64) {
        let Some(memo) = self.memo.as_mut() else {
            return;
        };
        let done = match view.open_until.filter(|&until| until > now) {
            Some(until) => {
                self.stale = false;
                let left = Duration::from_millis(until - now).min(self.rules.breaker.open_max);
                memo.remember(Verdict {
                    left,
                    tokens: view.tokens,
                })
            }
            None if std::mem::take(&mut self.stale) => memo.forget().map(|_| ()),
            None => Ok(()),
        };
        self.memo_failed(done);
    }

    fn memo_failed(&mut self, done: Result<(), Error>) {
        match done {
            Ok(()) | Err(Error::NoDirectory) => {}
            Err(e) => {
                let w = format!(
                    "key '{}': this host cannot remember what the store said of the breaker: {e}",
                    self.key
                );
                self.warning = Some(match self.warning.take() {
                    Some(first) => format!("{first}; {w}"),
                    None => w,
                });
            }
        }
    }

    /// The open breaker this host remembers from the store, with its time left; `None` when it
    /// remembers none, the time is over (then noted, to be forgotten once the store says the
    /// breaker is no longer open), or it is longer than `--breaker-open-max`.
    pub fn remembered(&mut self) -> Option<Verdict> {
        if !self.rules.breaker.enabled() {
            return None;
        }
        let recalled = self.memo.as_mut()?.recall();
        let verdict = match recalled {
            Ok(verdict) => verdict?,
            Err(e) => {
                self.memo_failed(Err(e));
                return None;
            }
        };
        if verdict.left.is_zero() {
            self.stale = true;
            return None;
        }
        // Longer than this run's --breaker-open-max: not believed. The run asks the store,
        // which cuts the open time to it for the whole fleet, once and for all, and this host
        // remembers that. Cut here alone, each later call would cut it afresh from its own
        // time, and the breaker would stay open for as long as first told.
        (verdict.left <= self.rules.breaker.open_max).then_some(verdict)
    }

    /// The refusal of a run, or of its retry, from the open breaker this host remembers: no
    /// call is made. The view is the breaker open, with the tokens the store last told.
    fn recall(&mut self) -> Option<Refused> {
        let verdict = self.remembered()?;
        self.view = Some(View {
            breaker: State::Open,
            failures: 0,
            opened_by: 0,
            open_until: None,
            lease_until: None,
            tokens: verdict.tokens,
            history: History::default(),
            settled: false,
        });
        Some(Refused {
            refusal: Refusal::Remembered,
            left: verdict.left,
        })
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
    ///
    /// An open breaker this host remembers from the store refuses the run before any call.
    pub fn admit(&mut self) -> Result<Option<Refused>, Error> {
        if let Some(refused) = self.recall() {
            return Ok(Some(refused));
        }
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
                // The local state's answers are not the store's: nothing is remembered of them.
                self.memo = None;
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

    /// The run will not call the store for a while (an attempt has run for [`IDLE_GRACE`],
    /// or a wait longer than that begins): the store lets go of its connection, and the next
    /// call, if any, connects again.
    pub fn idle(&mut self) {
        self.store.idle();
    }

    /// Just before a retry starts, after its wait: has the breaker opened since? An open
    /// breaker this host remembers (another run here heard of it meanwhile) refuses the retry
    /// without a call.
    pub fn before_retry(&mut self) -> Result<Option<Refused>, Error> {
        if self.unknown {
            return Ok(self.unknown_refusal(true));
        }
        let Some(ticket) = self.ticket else {
            return Ok(None);
        };
        if !ticket.probe
            && let Some(refused) = self.recall()
        {
            return Ok(Some(refused));
        }
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

    /// The key's state, for `--explain`, changing nothing: not even what this host remembers.
    pub fn view(&mut self) -> Result<View, Error> {
        let reply = self.store.view(&self.rules)?;
        self.warning = reply.warning;
        self.now = reply.now;
        self.view = Some(reply.view.clone());
        Ok(reply.view)
    }

    /// Forgets the key's state.
    pub fn reset(&mut self) -> Result<(), Error> {
        self.store.reset()
    }

    /// Forgets the key's state, and says whether it had any: the store's, and the open
    /// breaker this host remembers from it (first: a store that cannot be reached leaves this
    /// host's memory forgotten all the same).
    pub fn forget(&mut self) -> Result<Forgot, Error> {
        let remembered = match self.memo.as_mut() {
            Some(memo) => match memo.forget() {
                Err(Error::NoDirectory) => false,
                forgot => forgot?,
            },
            None => false,
        };
        match self.store.forget()? {
            Forgot::Nothing if !remembered => Ok(Forgot::Nothing),
            _ => Ok(Forgot::State),
        }
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
        Refusal::Budget | Refusal::Unknown | Refusal::Remembered => now,
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

    /// A store in memory that counts the calls made to it, and the attempts it is told of.
    #[derive(Clone, Default)]
    struct Counted {
        memory: MemoryStore,
        told: Rc<Cell<u32>>,
        calls: Rc<Cell<u32>>,
    }

    impl Store for Counted {
        fn admit(&mut self, s: &KeyRules) -> Result<Reply<Admit>, Error> {
            self.calls.set(self.calls.get() + 1);
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
            self.calls.set(self.calls.get() + 1);
            Store::after_attempt(&mut self.memory, s, ticket, attempt, wants_retry, u)
        }
        fn before_retry(
            &mut self,
            s: &KeyRules,
            ticket: Ticket,
        ) -> Result<Reply<(Option<Refusal>, Ticket)>, Error> {
            self.calls.set(self.calls.get() + 1);
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
    }

    /// A host's memory of verdicts, on the store's clock (one timeline, as in the tests'
    /// clock): the open breaker's end, and its tokens.
    #[derive(Clone, Default)]
    struct Remembers {
        now: Rc<Cell<u64>>,
        kept: Rc<Cell<Option<(u64, f64)>>>,
    }

    impl Memo for Remembers {
        fn recall(&mut self) -> Result<Option<Verdict>, Error> {
            Ok(self.kept.get().map(|(until, tokens)| Verdict {
                left: Duration::from_millis(until.saturating_sub(self.now.get())),
                tokens,
            }))
        }
        fn remember(&mut self, verdict: Verdict) -> Result<(), Error> {
            let left = u64::try_from(verdict.left.as_millis()).unwrap_or(u64::MAX);
            self.kept.set(Some((self.now.get() + left, verdict.tokens)));
            Ok(())
        }
        fn forget(&mut self) -> Result<bool, Error> {
            Ok(self.kept.take().is_some())
        }
    }

    /// A host: its handle on the store, with its memory.
    fn host(store: &Counted, memo: &Remembers) -> Shared {
        let mut shared = handle(store);
        shared.memo = Some(Box::new(memo.clone()));
        shared
    }

    /// Both clocks at `t` ms.
    fn at(store: &Counted, memo: &Remembers, t: u64) {
        store.memory.now.set(t);
        memo.now.set(t);
    }

    /// A host's run that fails twice: the breaker opens for 60 s at `t`.
    fn opened(store: &Counted, memo: &Remembers, t: u64) {
        opened_for(store, memo, t, 60_000);
    }

    /// A host's run that fails twice, with `--breaker-open` `open` ms: it opens at `t`.
    fn opened_for(store: &Counted, memo: &Remembers, t: u64, open: u64) {
        at(store, memo, t);
        let mut shared = host(store, memo);
        shared.rules.breaker.open = Duration::from_millis(open);
        assert_eq!(shared.admit().expect("admitted"), None);
        shared
            .after_attempt(Attempt::Failure, true, 0.0)
            .expect("told");
        assert_eq!(shared.before_retry().expect("checked"), None);
        let (change, refused) = shared
            .after_attempt(Attempt::Failure, true, 0.0)
            .expect("told");
        assert_eq!(change, Change::Opened { until: t + open });
        assert!(refused.is_some());
    }

    /// A run's admission on the host, and the calls it made to the store.
    fn admitted(store: &Counted, memo: &Remembers) -> (Option<Refused>, u32) {
        let before = store.calls.get();
        let refused = host(store, memo).admit().expect("answered");
        (refused, store.calls.get() - before)
    }

    const REMEMBERED: Refusal = Refusal::Remembered;

    #[test]
    fn an_open_breaker_the_store_told_of_refuses_the_hosts_runs_without_a_call_until_its_end() {
        let (store, memo) = (Counted::default(), Remembers::default());
        opened(&store, &memo, 1_000);
        assert_eq!(memo.kept.get().map(|k| k.0), Some(61_000));
        for t in [1_000, 30_000, 60_999] {
            at(&store, &memo, t);
            let (refused, calls) = admitted(&store, &memo);
            assert_eq!(calls, 0, "at {t}");
            assert_eq!(
                refused,
                Some(Refused {
                    refusal: REMEMBERED,
                    left: Duration::from_millis(61_000 - t)
                })
            );
        }
        // Its end: the store is asked, and lets this run probe; the breaker is no longer
        // open, and the host forgets the verdict it found over. Runs ask the store again.
        at(&store, &memo, 61_000);
        let mut shared = host(&store, &memo);
        assert_eq!(shared.admit().expect("admitted"), None);
        assert!(shared.probing());
        assert_eq!(memo.kept.get(), None);
        let (refused, calls) = admitted(&store, &memo);
        assert_eq!(calls, 1);
        assert!(matches!(
            refused.map(|r| r.refusal),
            Some(Refusal::Probing { .. })
        ));
    }

    #[test]
    fn a_retry_is_refused_without_a_call_once_another_run_of_the_host_heard_the_breaker_open() {
        let (store, memo) = (Counted::default(), Remembers::default());
        let mut waiting = host(&store, &memo);
        assert_eq!(waiting.admit().expect("admitted"), None);
        waiting
            .after_attempt(Attempt::Failure, true, 0.0)
            .expect("told");
        // Meanwhile another run of the host fails: the breaker opens.
        at(&store, &memo, 5_000);
        let mut other = host(&store, &memo);
        assert_eq!(other.admit().expect("admitted"), None);
        let (change, _) = other
            .after_attempt(Attempt::Failure, true, 0.0)
            .expect("told");
        assert_eq!(change, Change::Opened { until: 65_000 });
        let before = store.calls.get();
        let refused = waiting.before_retry().expect("answered");
        assert_eq!(refused.map(|r| r.refusal), Some(REMEMBERED));
        assert_eq!(store.calls.get(), before);
    }

    #[test]
    fn a_remembered_verdict_lasts_no_longer_than_breaker_open_max() {
        let (store, memo) = (Counted::default(), Remembers::default());
        // Told under a longer --breaker-open-max (or a wrong clock): an hour. Not believed:
        // the run asks the store, which cuts it to this run's open max.
        memo.kept.set(Some((3_600_000, 1.0)));
        let calls = store.calls.get();
        let mut shared = host(&store, &memo);
        shared.rules.breaker.open_max = Duration::from_secs(300);
        assert_eq!(shared.admit().expect("answered"), None);
        assert_eq!(store.calls.get(), calls + 1);
        let mut shared = host(&store, &memo);
        shared.rules.breaker.open_max = Duration::from_secs(3600);
        let refused = shared.admit().expect("answered").expect("refused");
        assert_eq!(refused.left, Duration::from_secs(3600));
        // What is remembered is capped too.
        let mut shared = host(&store, &memo);
        shared.rules.breaker.open_max = Duration::from_secs(30);
        let mut view = KeyState::new(&settings(), 0).view(&settings(), 0);
        view.open_until = Some(90_000);
        shared.note(&view, 0);
        assert_eq!(memo.kept.get().map(|k| k.0), Some(30_000));
        // With the breaker off, nothing is remembered or recalled.
        let mut shared = host(&store, &memo);
        shared.rules.breaker.failures = 0;
        assert_eq!(shared.admit().expect("answered"), None);
    }

    #[test]
    fn a_reset_of_the_store_elsewhere_is_heard_at_the_remembered_end_and_a_reset_here_at_once() {
        let (store, memo) = (Counted::default(), Remembers::default());
        opened(&store, &memo, 0);
        // Another host resets the store: this one keeps refusing until its end, no later.
        Store::reset(&mut store.memory.clone()).expect("reset");
        at(&store, &memo, 59_999);
        assert_eq!(admitted(&store, &memo).1, 0);
        at(&store, &memo, 60_000);
        assert_eq!(admitted(&store, &memo), (None, 1));
        assert_eq!(memo.kept.get(), None, "forgotten: the store said closed");
        // --reset-state here forgets both.
        opened(&store, &memo, 100_000);
        assert_eq!(host(&store, &memo).forget().expect("forgot"), Forgot::State);
        assert_eq!((memo.kept.get(), store.memory.state()), (None, None));
        assert_eq!(admitted(&store, &memo), (None, 1));
        // Only the memory had something: still something forgotten.
        memo.kept.set(Some((200_000, 3.0)));
        assert_eq!(host(&store, &memo).forget().expect("forgot"), Forgot::State);
    }

    #[test]
    fn a_shorter_open_time_set_elsewhere_is_kept_to_the_remembered_end_a_longer_one_learned_there()
    {
        let (store, memo) = (Counted::default(), Remembers::default());
        opened(&store, &memo, 0);
        // Another host resets the store and reopens it with a shorter --breaker-open, 10 s:
        // this host keeps to its own end, 60 s, and makes no call before it.
        let other = Remembers::default();
        Store::reset(&mut store.memory.clone()).expect("reset");
        opened_for(&store, &other, 20_000, 10_000);
        at(&store, &memo, 59_999);
        assert_eq!(admitted(&store, &memo).1, 0);
        // Another reopens it for longer: until 100 s. At its end this host asks, and learns
        // the store's verdict, which it keeps to without a call.
        Store::reset(&mut store.memory.clone()).expect("reset");
        opened(&store, &other, 40_000);
        at(&store, &memo, 60_000);
        let (refused, calls) = admitted(&store, &memo);
        assert_eq!(calls, 1);
        assert_eq!(
            refused.map(|r| r.refusal),
            Some(Refusal::Open { until: 100_000 })
        );
        assert_eq!(memo.kept.get().map(|k| k.0), Some(100_000));
        at(&store, &memo, 99_999);
        assert_eq!(admitted(&store, &memo).1, 0);
        // A probe that fails doubles the open time: the host that probed remembers 120 s.
        at(&store, &memo, 100_000);
        let mut probe = host(&store, &memo);
        assert_eq!(probe.admit().expect("admitted"), None);
        assert!(probe.probing());
        probe
            .after_attempt(Attempt::Failure, false, 0.0)
            .expect("told");
        assert_eq!(memo.kept.get().map(|k| k.0), Some(220_000));
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
