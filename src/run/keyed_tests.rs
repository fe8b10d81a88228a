//! The loop's tests with a key: its breaker, budget and adaptive delay, in a world with a fake
//! clock and an in-memory store.

use super::fake::*;
use crate::exit::Exit;
use crate::policy::adaptive::{self, Adaptive, History};
use crate::policy::breaker::Attempt;
use crate::policy::shared::{Admit, After, KeyRules, Refusal, Ticket};
use crate::report::summary::{Outcome, RefusedBy};
use crate::state::memory::MemoryStore;
use crate::state::watched::Watched;
use crate::state::{self, Reply, Store};

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
        Some(RefusedBy::Breaker)
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
        Some(RefusedBy::Budget)
    );
    assert_eq!(r.summary.key.as_ref().map(|k| k.seen.tokens), Some(0.0));
}

/// A store that cannot be reached.
struct Broken;

impl Store for Broken {
    fn admit(&mut self, _: &KeyRules) -> Result<Reply<Admit>, state::Error> {
        Err(state::Error::NoDirectory)
    }
    fn after_attempt(
        &mut self,
        _: &KeyRules,
        _: Ticket,
        _: Attempt,
        _: bool,
        _: f64,
    ) -> Result<Reply<After>, state::Error> {
        panic!("a store that failed once is not asked again")
    }
    fn before_retry(
        &mut self,
        _: &KeyRules,
        _: Ticket,
    ) -> Result<Reply<(Option<Refusal>, Ticket)>, state::Error> {
        panic!("a store that failed once is not asked again")
    }
    fn view(&mut self, _: &KeyRules) -> Result<Reply<()>, state::Error> {
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

/// A worker that ran well for longer than --reset-after before it failed is a success for the
/// breaker: three failures with a long one between them do not open a breaker of two.
#[test]
fn a_long_healthy_attempt_is_a_success_for_the_breaker() {
    let attempts = [exits(1, 10), exits(1, 700_000), exits(1, 10), exits(0, 10)];
    let r = run_shared(
        &keyed(&["-n", "5", "-d", "0", "--reset-after", "10m"]),
        Fake::new(attempts),
        Some(Box::new(MemoryStore::default())),
    );
    assert_eq!(r.exit, Exit::Code(0), "{}", r.log);
    assert!(!r.log.contains("the breaker opened"), "{}", r.log);
    // The same attempts without --reset-after: the third failure in a row opens it.
    let r = run_shared(
        &keyed(&["-n", "5", "-d", "0"]),
        Fake::new(attempts),
        Some(Box::new(MemoryStore::default())),
    );
    assert!(r.log.contains("the breaker opened"), "{}", r.log);
}

/// A key whose lock other runs keep busy from the store's `busy_from`-th operation on (the
/// first is 1), and the count of its operations.
fn busy(busy_from: u32) -> (Watched, std::rc::Rc<std::cell::Cell<u32>>) {
    let ops = std::rc::Rc::new(std::cell::Cell::new(0));
    let counted = ops.clone();
    let store = Watched::new(move |op| {
        if op == "idle" {
            return Ok(());
        }
        counted.set(counted.get() + 1);
        if counted.get() < busy_from {
            return Ok(());
        }
        Err(state::Error::Locked(state::Locked {
            path: "/state/api.lock".into(),
            waited: ms(5000),
            why: state::LockWait::Contended { turns: 312 },
        }))
    });
    (store, ops)
}

#[test]
fn a_key_whose_lock_stays_busy_runs_the_first_attempt_and_makes_no_retry() {
    // Busy at the admission, or at the token for the first retry.
    for busy_from in [1, 2] {
        let (store, ops) = busy(busy_from);
        let r = run_shared(
            &keyed(&["-n", "3", "--jitter", "none"]),
            Fake::new([exits(1, 10); 3]),
            Some(Box::new(store.clone())),
        );
        assert_eq!(r.exit, Exit::Code(1), "the command's outcome: {}", r.log);
        assert_eq!(r.world.envs.len(), 1, "{}", r.log);
        assert!(r.world.slept.is_empty(), "{}", r.log);
        assert_eq!(r.log.matches("warning").count(), 1, "{}", r.log);
        assert!(
            r.log.contains(
                "warning: key 'api': the lock '/state/api.lock' kept changing hands for 5s (312 times), never to this run: other runs are using the key at once; this run makes no retry its breaker or budget would have had to allow"
            ),
            "{}",
            r.log
        );
        assert!(
            r.log.contains(
                "the state of key 'api' is unknown to this run, and no retry is made without its breaker and budget"
            ),
            "{}",
            r.log
        );
        assert!(!r.log.contains("going on without"), "{}", r.log);
        // The store is not asked again: each call would wait as long.
        assert_eq!(ops.get(), busy_from, "{}", r.log);
        if busy_from == 2 {
            assert_eq!(
                r.summary.key.as_ref().and_then(|k| k.refused),
                Some(RefusedBy::Unknown)
            );
        }
    }
}

#[test]
fn with_breaker_and_budget_off_a_busy_lock_refuses_no_retry() {
    // Only the adaptive delay's outcomes are kept: nothing could refuse a retry.
    let args = [
        "--key",
        "api",
        "--breaker-failures",
        "0",
        "--budget-burst",
        "0",
        "--backoff",
        "adaptive",
        "-n",
        "3",
    ];
    let (store, ops) = busy(2);
    let r = run_shared(
        &args,
        Fake::new([exits(1, 10), exits(1, 10), exits(0, 10)]),
        Some(Box::new(store.clone())),
    );
    assert_eq!(r.exit, Exit::Code(0), "{}", r.log);
    assert_eq!(r.world.envs.len(), 3, "{}", r.log);
    assert_eq!(r.log.matches("warning").count(), 1, "{}", r.log);
    assert!(
        r.log
            .contains("its breaker and budget are off: the run goes on without it"),
        "{}",
        r.log
    );
    assert_eq!(ops.get(), 2, "not asked again");
}

#[test]
fn no_wait_for_the_key_outlasts_max_time() {
    let (store, _) = busy(u32::MAX);
    let r = run_shared(
        &keyed(&["--max-time", "10s", "-n", "2", "-d", "0"]),
        Fake::new([exits(1, 4000), exits(1, 10)]),
        Some(Box::new(store.clone())),
    );
    assert_eq!(r.exit, Exit::Code(1), "{}", r.log);
    // At the start (half of what --max-time leaves: the command keeps the rest), after the
    // first attempt, before the retry, after the second.
    assert_eq!(
        *store.waits.borrow(),
        [
            Some(ms(5_000)),
            Some(ms(6000)),
            Some(ms(6000)),
            Some(ms(5990))
        ]
    );
    // Without --max-time: no bound but the store's own.
    let (store, _) = busy(u32::MAX);
    run_shared(
        &keyed(&["-n", "1"]),
        Fake::new([exits(0, 10)]),
        Some(Box::new(store.clone())),
    );
    assert!(store.waits.borrow().iter().all(Option::is_none));
}

/// The splay spreads the key's store load too: a run asks its key only once the splay is over.
#[test]
fn the_splay_comes_before_the_key_is_first_asked() {
    // The fake run's source is seeded with 7: the splay's wait is its first draw.
    let drawn = crate::policy::pacing::splay(ms(10_000), &mut crate::policy::backoff::seeded(7));
    let world = Fake::new([exits(0, 5)]).signal_at(drawn / 2, TERM);
    let r = run_shared(
        &keyed(&["--splay", "10s"]),
        world,
        Some(Box::new(Watched::new(|op| {
            panic!("the key was asked ({op}) during the splay")
        }))),
    );
    // Cancelled during the splay, the store never asked.
    assert_eq!(r.exit, Exit::Signal(TERM), "{}", r.log);
    assert!(r.world.envs.is_empty());
    // Let through, the run's first line with the key's state comes after the splay: the store
    // was asked then.
    let r = run_shared(
        &keyed(&["-v", "--splay", "10s", "--log-format", "json"]),
        Fake::new([exits(0, 5)]),
        Some(Box::new(MemoryStore::default())),
    );
    assert_eq!(r.exit, Exit::Code(0), "{}", r.log);
    let lines: Vec<serde_json::Value> = r
        .log
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect();
    let events: Vec<&str> = lines.iter().filter_map(|l| l["event"].as_str()).collect();
    assert_eq!(events, ["policy", "splay", "start", "success"], "{}", r.log);
    let waited = lines[1]["delay_ms"].as_u64().expect("the splay's wait");
    assert_eq!(u128::from(waited), r.world.slept[0].as_millis());
    assert!(lines[1].get("key").is_none(), "{}", r.log);
    assert_eq!(lines[2]["key"], "api", "{}", r.log);
    assert_eq!(lines[2]["elapsed_ms"].as_u64(), Some(waited), "{}", r.log);
}

#[test]
fn the_store_is_let_go_only_past_the_grace_of_an_attempt_or_in_a_longer_wait() {
    // Each call written down, and each time the connection is let go.
    let seen = std::rc::Rc::new(std::cell::RefCell::new(Vec::new()));
    let store = Watched::new({
        let seen = seen.clone();
        move |op| {
            seen.borrow_mut().push(op);
            Ok(())
        }
    });
    let args = [
        "--key",
        "api",
        "--breaker-failures",
        "0",
        "-n",
        "4",
        "--jitter",
        "none",
    ];
    // Attempts of 10 ms, 5 s, 10 ms and 10 ms; waits of 1 s, 2 s and 4 s.
    let script = [exits(1, 10), exits(1, 5000), exits(1, 10), exits(0, 10)];
    let r = run_shared(&args, Fake::new(script), Some(Box::new(store.clone())));
    assert_eq!(r.exit, Exit::Code(0), "{}", r.log);
    assert_eq!(r.world.slept, [ms(1000), ms(2000), ms(4000)]);
    // Fast attempts and short waits keep the connection from one call to the next; the long
    // attempt lets it go at its grace, and the 4 s wait at its start.
    assert_eq!(
        *seen.borrow(),
        [
            "admit", "after", "before", "idle", "after", "before", "after", "idle", "before",
            "after"
        ]
    );
}
