//! The handle's tests: a run's calls to its key, through a store in memory that counts them.

use std::cell::Cell;
use std::rc::Rc;

use super::*;
use crate::policy::breaker::Breaker;
use crate::policy::shared::KeyState;
use crate::policy::shared::tests::settings;
use crate::state::watched::Watched;

/// A store in memory that counts the calls made to it, and the attempts it is told of.
#[derive(Clone)]
struct Counted {
    store: Watched,
    told: Rc<Cell<u32>>,
    calls: Rc<Cell<u32>>,
}

impl Default for Counted {
    fn default() -> Counted {
        let (told, calls) = (Rc::new(Cell::new(0)), Rc::new(Cell::new(0)));
        let (t, c) = (told.clone(), calls.clone());
        let store = Watched::new(move |op| {
            if op != "idle" {
                c.set(c.get() + 1);
            }
            if op == "after" {
                t.set(t.get() + 1);
            }
            Ok(())
        });
        Counted { store, told, calls }
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
    store.store.memory.now.set(t);
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
    Store::reset(&mut store.store.memory.clone()).expect("reset");
    at(&store, &memo, 59_999);
    assert_eq!(admitted(&store, &memo).1, 0);
    at(&store, &memo, 60_000);
    assert_eq!(admitted(&store, &memo), (None, 1));
    assert_eq!(memo.kept.get(), None, "forgotten: the store said closed");
    // --reset-state here forgets both.
    opened(&store, &memo, 100_000);
    assert_eq!(host(&store, &memo).forget().expect("forgot"), Forgot::State);
    assert_eq!((memo.kept.get(), store.store.memory.state()), (None, None));
    assert_eq!(admitted(&store, &memo), (None, 1));
    // Only the memory had something: still something forgotten.
    memo.kept.set(Some((200_000, 3.0)));
    assert_eq!(host(&store, &memo).forget().expect("forgot"), Forgot::State);
}

#[test]
fn a_shorter_open_time_set_elsewhere_is_kept_to_the_remembered_end_a_longer_one_learned_there() {
    let (store, memo) = (Counted::default(), Remembers::default());
    opened(&store, &memo, 0);
    // Another host resets the store and reopens it with a shorter --breaker-open, 10 s:
    // this host keeps to its own end, 60 s, and makes no call before it.
    let other = Remembers::default();
    Store::reset(&mut store.store.memory.clone()).expect("reset");
    opened_for(&store, &other, 20_000, 10_000);
    at(&store, &memo, 59_999);
    assert_eq!(admitted(&store, &memo).1, 0);
    // Another reopens it for longer: until 100 s. At its end this host asks, and learns
    // the store's verdict, which it keeps to without a call.
    Store::reset(&mut store.store.memory.clone()).expect("reset");
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
    let mut shared = Shared::new("api".into(), settings(), Box::new(store.store.clone()));
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
    assert_eq!(
        store.store.memory.state(),
        Some(KeyState::new(&settings(), 0))
    );
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
        store.store.memory.state().map(|k| k.breaker),
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
    assert_eq!(off.store.memory.state().map(|k| k.budget.milli), Some(2500));
    // The bucket is still short: the next run's success is told too, and fills it.
    assert_eq!(told(&off, &[Attempt::Success]), 1);
    // Two failures open the breaker; after its open time the probe's success closes it.
    let store = Counted::default();
    told(&store, &[Attempt::Failure, Attempt::Failure]);
    store.store.memory.now.set(60_000);
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
