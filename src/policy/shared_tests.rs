//! The rules' tests: each operation, and what a success left unrecorded cannot change.

use rand::RngExt;

use crate::policy::backoff::{SeededRng, seeded};

use super::*;

/// Settings small enough to move through every state in a few steps; the state module's
/// tests use them too.
pub(crate) fn settings() -> KeyRules {
    KeyRules {
        breaker: BreakerSettings {
            failures: 2,
            window: Duration::from_secs(3600),
            open: Duration::from_secs(60),
            open_max: Duration::from_secs(900),
        },
        budget: BudgetSettings {
            burst: 3,
            ratio: 0.5,
            refill: Duration::from_secs(60),
        },
        lease: Duration::from_secs(10),
        history: false,
    }
}

fn run(admit: Admit) -> Ticket {
    match admit {
        Admit::Run(t) => t,
        Admit::Refused(r) => panic!("refused: {r:?}"),
    }
}

#[test]
fn a_run_whose_failure_opens_the_breaker_is_refused_its_retry() {
    let s = settings();
    let mut k = KeyState::new(&s, 0);
    let t = run(k.admit(&s, 0));
    let a = k.after_attempt(&s, 1, t, Attempt::Failure, true, 0.0);
    assert_eq!((a.change, a.refusal), (Change::None, None));
    let a = k.after_attempt(&s, 2, a.ticket, Attempt::Failure, true, 0.0);
    assert_eq!(a.change, Change::Opened { until: 60_002 });
    assert_eq!(a.refusal, Some(Refusal::Open { until: 60_002 }));
    assert_eq!(k.generation, 1);
    assert_eq!(
        k.admit(&s, 3),
        Admit::Refused(Refusal::Open { until: 60_002 })
    );
}

#[test]
fn a_run_going_on_stops_at_its_next_retry_once_another_opened_it() {
    let s = settings();
    let mut k = KeyState::new(&s, 0);
    let mine = run(k.admit(&s, 0));
    let other = run(k.admit(&s, 0));
    let a = k.after_attempt(&s, 1, other, Attempt::Failure, true, 0.0);
    k.after_attempt(&s, 2, a.ticket, Attempt::Failure, false, 0.0);
    let mut ticket = mine;
    assert_eq!(
        k.before_retry(&s, &mut ticket),
        Some(Refusal::Open { until: 60_002 })
    );
    // Its own late failure counts for nothing and does not reopen or double anything.
    let before = k.clone();
    let a = k.after_attempt(&s, 3, mine, Attempt::Failure, true, 0.0);
    assert_eq!(a.change, Change::None);
    assert_eq!(k.breaker, before.breaker);
}

#[test]
fn the_probe_that_succeeds_closes_the_breaker_and_its_run_goes_on() {
    let s = settings();
    let mut k = KeyState::new(&s, 0);
    k.breaker = Breaker::Open {
        until: 100,
        open_for: 100,
        failures: Vec::new(),
    };
    let probe = run(k.admit(&s, 100));
    assert!(probe.probe);
    // The 10 s lease, and the clock's remainder of its fifth: 100 ms more.
    assert_eq!(
        k.admit(&s, 101),
        Admit::Refused(Refusal::Probing {
            lease_until: 10_200
        })
    );
    let a = k.after_attempt(&s, 150, probe, Attempt::Success, false, 0.0);
    assert_eq!(a.change, Change::Closed);
    assert!(!a.ticket.probe);
    assert_eq!(a.ticket.generation, k.generation);
    assert!(matches!(k.admit(&s, 151), Admit::Run(t) if !t.probe));
}

#[test]
fn a_retry_costs_a_token_and_a_spent_budget_refuses_it() {
    let s = settings();
    let mut k = KeyState::new(&s, 0);
    let mut t = run(k.admit(&s, 0));
    for _ in 0..3 {
        let a = k.after_attempt(&s, 0, t, Attempt::Uncounted, true, 0.0);
        assert_eq!(a.refusal, None);
        t = a.ticket;
    }
    let a = k.after_attempt(&s, 0, t, Attempt::Uncounted, true, 0.0);
    assert_eq!(a.refusal, Some(Refusal::Budget));
    // A first attempt is always allowed.
    assert!(matches!(k.admit(&s, 0), Admit::Run(_)));
    // A success adds half a token; two buy a retry.
    k.after_attempt(&s, 0, t, Attempt::Success, false, 0.0);
    let a = k.after_attempt(&s, 0, t, Attempt::Success, true, 0.0);
    assert_eq!(a.refusal, None);
}

#[test]
fn a_run_let_in_under_an_older_closed_state_counts_again_from_its_next_attempt() {
    let s = settings();
    let mut k = KeyState::new(&s, 0);
    let old = Ticket {
        generation: 0,
        probe: false,
    };
    k.generation = 4;
    let a = k.after_attempt(&s, 5, old, Attempt::Failure, true, 0.0);
    assert_eq!(k.breaker.failures(&s.breaker, 5), 0, "late: not counted");
    assert_eq!(
        a.ticket.generation, 4,
        "its retry starts under the current state"
    );
    k.after_attempt(&s, 6, a.ticket, Attempt::Failure, false, 0.0);
    assert_eq!(k.breaker.failures(&s.breaker, 6), 1);
}

#[test]
fn a_state_moved_to_a_new_timeline_keeps_its_times_relative() {
    let s = settings();
    let mut k = KeyState::new(&s, 1_000);
    k.breaker = Breaker::Open {
        until: 61_000,
        open_for: 60_000,
        failures: Vec::new(),
    };
    k.shift(1_000, 500_000);
    assert_eq!(k.budget.at, 500_000);
    assert_eq!(
        k.admit(&s, 559_999),
        Admit::Refused(Refusal::Open { until: 560_000 })
    );
    k.shift(500_000, 10);
    assert_eq!(k.budget.at, 10);
}

/// Any state: any breaker, a bucket full or not, times from two hours before `now` to two
/// hours after.
fn any_state(rng: &mut SeededRng, s: &KeyRules, now: u64) -> KeyState {
    let mut t = || now - 7_200_000 + rng.random_range(0..14_400_000);
    let breaker = match t() % 4 {
        0 => Breaker::default(),
        1 => Breaker::Closed {
            failures: vec![t()],
        },
        2 => Breaker::Open {
            until: t(),
            open_for: 60_000,
            failures: Vec::new(),
        },
        _ => Breaker::HalfOpen {
            lease_until: t(),
            open_for: 60_000,
            failures: Vec::new(),
        },
    };
    let at = t();
    let milli = match t() % 3 {
        0 => at % s.budget.burst_milli().max(1),
        _ => s.budget.burst_milli(),
    };
    let mut history = History::default();
    if t() % 2 == 0 {
        history.record(t(), t() % 2 == 0);
    }
    KeyState {
        generation: at % 3,
        breaker,
        budget: Budget { milli, at },
        history,
    }
}

#[test]
fn a_moot_success_left_unrecorded_changes_nothing_any_later_operation_can_tell() {
    let mut rng = seeded(13);
    let now = 100_000_000;
    let mut moot = [0; 4];
    for case in 0..4000 {
        let mut s = settings();
        match case % 4 {
            1 => s.breaker.failures = 0,
            2 => s.budget.burst = 0,
            3 => s.history = true,
            _ => {}
        }
        let mut start = any_state(&mut rng, &s, now);
        start.clamp(&s, now);
        let Admit::Run(ticket) = start.admit(&s, now) else {
            continue;
        };
        if !start.view(&s, now).success_is_moot(ticket) {
            continue;
        }
        moot[case % 4] += 1;
        // One copy records the success when its attempt ends; the other does not.
        let mut recorded = start.clone();
        let ended = now + rng.random_range(0..100_000);
        let a = recorded.after_attempt(&s, ended, ticket, Attempt::Success, false, 0.5);
        assert_eq!(
            (a.ticket, a.change, a.refusal),
            (ticket, Change::None, None)
        );
        let mut skipped = start;
        // Then other runs use the key, at any time: a store's clock may go back.
        for step in 0..30 {
            let t = now - 7_200_000 + rng.random_range(0..14_400_000);
            let what = format!("case {case}, step {step}, at {t}");
            recorded.clamp(&s, t);
            skipped.clamp(&s, t);
            let ticket = Ticket {
                generation: rng.random_range(0..4),
                probe: rng.random_bool(0.3),
            };
            let attempt =
                [Attempt::Success, Attempt::Failure, Attempt::Uncounted][rng.random_range(0..3)];
            let (retry, u) = (rng.random_bool(0.7), rng.random::<f64>());
            match rng.random_range(0..3) {
                0 => assert_eq!(recorded.admit(&s, t), skipped.admit(&s, t), "{what}"),
                1 => assert_eq!(
                    recorded.after_attempt(&s, t, ticket, attempt, retry, u),
                    skipped.after_attempt(&s, t, ticket, attempt, retry, u),
                    "{what}"
                ),
                _ => {
                    let (mut a, mut b) = (ticket, ticket);
                    assert_eq!(
                        recorded.before_retry(&s, &mut a),
                        skipped.before_retry(&s, &mut b),
                        "{what}"
                    );
                    assert_eq!(a, b, "{what}");
                }
            }
            assert_eq!(recorded.view(&s, t), skipped.view(&s, t), "{what}");
        }
    }
    assert!(moot[..3].iter().all(|&n| n > 100), "{moot:?}");
    assert_eq!(
        moot[3], 0,
        "a success is never moot where the history is kept"
    );
}

#[test]
fn a_success_is_recorded_when_failures_are_kept_the_bucket_is_not_full_or_the_run_probes() {
    let s = settings();
    let closed = Ticket {
        generation: 0,
        probe: false,
    };
    let mut k = KeyState::new(&s, 0);
    assert!(k.view(&s, 0).success_is_moot(closed));
    // A failure kept, even one too old to count now: a clock set back would count it.
    k.breaker = Breaker::Closed { failures: vec![0] };
    assert!(!k.view(&s, 0).success_is_moot(closed));
    assert!(!k.view(&s, 7_200_000).success_is_moot(closed));
    // A bucket short of its burst, even one that time has refilled.
    let mut k = KeyState::new(&s, 0);
    k.budget.milli -= 1;
    assert!(!k.view(&s, 0).success_is_moot(closed));
    assert!(!k.view(&s, 3_600_000).success_is_moot(closed));
    // A probe: its success closes the breaker.
    let mut k = KeyState::new(&s, 0);
    k.breaker = Breaker::Open {
        until: 10,
        open_for: 10,
        failures: Vec::new(),
    };
    let probe = run(k.admit(&s, 10));
    assert!(probe.probe);
    assert!(!k.view(&s, 10).success_is_moot(probe));
    // Where the history is kept, for the adaptive delay: every success is recorded.
    let mut adaptive = settings();
    adaptive.history = true;
    assert!(
        !KeyState::new(&s, 0)
            .view(&adaptive, 0)
            .success_is_moot(closed)
    );
    // With the breaker and the budget off, every success but a probe's is moot.
    let mut off = settings();
    off.breaker.failures = 0;
    off.budget.burst = 0;
    let mut k = KeyState::new(&s, 0);
    k.breaker = Breaker::Closed { failures: vec![0] };
    k.budget.milli = 0;
    assert!(k.view(&off, 0).success_is_moot(closed));
}

#[test]
fn outcomes_are_kept_only_when_the_settings_ask_and_never_for_an_uncounted_attempt() {
    let mut s = settings();
    let mut k = KeyState::new(&s, 0);
    let t = run(k.admit(&s, 0));
    let a = k.after_attempt(&s, 1, t, Attempt::Failure, true, 0.0);
    assert!(
        k.history.is_empty(),
        "without --backoff adaptive nothing is kept"
    );
    s.history = true;
    let a = k.after_attempt(&s, 2, a.ticket, Attempt::Failure, true, 0.0);
    let a = k.after_attempt(&s, 3, a.ticket, Attempt::Uncounted, false, 0.0);
    k.after_attempt(&s, 4, a.ticket, Attempt::Success, false, 0.0);
    let kept: Vec<(u64, bool)> = k.history.outcomes().map(|o| (o.at, o.success)).collect();
    assert_eq!(kept, [(2, false), (4, true)]);
    assert_eq!(k.view(&s, 5).history, k.history);
    // A file from a clock ahead of this one: its times are brought back to now.
    k.clamp(&s, 3);
    let times: Vec<u64> = k.history.outcomes().map(|o| o.at).collect();
    assert_eq!(times, [2, 3]);
    k.shift(3, 1003);
    let times: Vec<u64> = k.history.outcomes().map(|o| o.at).collect();
    assert_eq!(times, [1002, 1003]);
}

#[test]
fn the_view_reports_without_changing_anything() {
    let s = settings();
    let mut k = KeyState::new(&s, 0);
    let t = run(k.admit(&s, 0));
    k.after_attempt(&s, 1, t, Attempt::Failure, true, 0.0);
    let before = k.clone();
    let v = k.view(&s, 30_001);
    assert_eq!(k, before);
    assert_eq!((v.breaker, v.failures), (State::Closed, 1));
    assert_eq!(v.tokens, 2.5);
    assert_eq!((v.open_until, v.lease_until), (None, None));
}
