//! The fleet model's tests (`sim::fleet`).

use super::*;
use crate::policy::key::FailMode;

fn policy(args: &[&str]) -> Policy {
    crate::setup::from_flags(args).expect("a valid policy")
}

fn world(hosts: usize, outage_min: u64) -> World {
    World::cron(
        hosts,
        Duration::from_secs(300),
        Duration::from_secs(outage_min * 60),
        1,
    )
}

fn shared(p: &Policy) -> KeyRules {
    p.state.as_ref().expect("--key").rules.clone()
}

#[test]
fn one_cron_job_through_a_47_minute_outage_agrees_with_the_readme() {
    let p = policy(&["-n", "5", "--key", "api"]);
    let w = World {
        // The job's first run at the start of the outage, as in the README's table.
        splay: Duration::ZERO,
        ..world(1, 47)
    };
    let without = simulate(&p, Sharing::None, None, &w);
    let with = simulate(&p, Sharing::PerHost, Some(&shared(&p)), &w);
    // Ten runs fall in 47 minutes, whatever the phase; five attempts each without a key.
    assert_eq!(without.calls_during, 50, "{without:?}");
    assert_eq!(with.calls_during, 10, "{with:?}");
    assert_eq!((with.refused, with.probes), (5, 6), "{with:?}");
    assert!(with.last_success > without.last_success);
}

/// The README's worked example: a cron job every 5 minutes with `-n 5` and the default
/// breaker and budget, through a 47-minute outage: 10 calls instead of 50, and the first
/// success at minute 55, whatever the random cuts of the open times.
#[test]
fn a_cron_job_through_a_47_minute_outage_makes_10_calls_instead_of_50() {
    let p = policy(&["-n", "5", "--key", "api"]);
    for seed in 1..=8 {
        let w = World {
            splay: Duration::ZERO,
            seed,
            ..world(1, 47)
        };
        let r = simulate(&p, Sharing::PerHost, Some(&shared(&p)), &w);
        let minute = r.first_success.map(|d| (d.as_secs() + 47 * 60) / 60);
        assert_eq!((r.calls_during, minute), (10, Some(55)), "seed {seed}");
    }
}

#[test]
fn a_shared_breaker_lets_one_probe_through_for_the_whole_fleet() {
    let p = policy(&["-n", "5", "--key", "api"]);
    let s = shared(&p);
    let w = world(50, 30);
    let local = simulate(&p, Sharing::PerHost, Some(&s), &w);
    let fleet = simulate(&p, Sharing::Fleet, Some(&s), &w);
    let none = simulate(&p, Sharing::None, None, &w);
    assert!(
        fleet.calls_during < local.calls_during,
        "{fleet:?} {local:?}"
    );
    assert!(local.calls_during < none.calls_during, "{local:?} {none:?}");
    assert!(fleet.probes < local.probes);
    assert!(fleet.last_success.is_some() && local.last_success.is_some());
}

#[test]
fn without_jitter_a_fleet_retries_in_step() {
    let jittered = policy(&["-n", "5", "-d", "10s"]);
    let plain = policy(&["-n", "5", "-d", "10s", "--jitter", "none"]);
    let w = World {
        // Every host at the same phase: jobs started by the same cron minute.
        splay: Duration::ZERO,
        ..world(200, 5)
    };
    let j = simulate(&jittered, Sharing::None, None, &w);
    let n = simulate(&plain, Sharing::None, None, &w);
    assert_eq!(n.peak_per_second, 200, "every host starts at once");
    assert_eq!(n.peak_retries_per_second, 200, "and retries in step");
    assert!(j.peak_retries_per_second < 60, "{j:?}");
}

#[test]
fn the_adaptive_delay_learns_from_the_keys_failures_in_the_fleet_model() {
    // One run, no breaker, no budget, no jitter: only the delays differ.
    let flags = [
        "-n",
        "5",
        "-d",
        "1s",
        "--max-delay",
        "1h",
        "--jitter",
        "none",
        "--key",
        "api",
        "--breaker-failures",
        "0",
        "--budget-burst",
        "0",
    ];
    let exponential = policy(&flags);
    let adaptive = policy(&[&flags[..], &["--backoff", "adaptive"]].concat());
    let w = World {
        splay: Duration::ZERO,
        repeat: false,
        ..world(1, 1)
    };
    let e = simulate(
        &exponential,
        Sharing::PerHost,
        Some(&shared(&exponential)),
        &w,
    );
    // Delays of 1, 2, 4 and 8 s: all five attempts fall in the minute's outage.
    assert_eq!(
        (e.calls_during, e.calls_after, e.gave_up),
        (5, 0, 1),
        "{e:?}"
    );
    assert_eq!(e.last_success, None);
    // The key has only failures: the first delay is ½ of the paper's ½·1 s + 100·(1 − ⅓)
    // /(1/s) plus ½ of the exponential 1 s, 34.1 s; the second is longer still, so the
    // third attempt comes after the recovery and succeeds.
    let a = simulate(&adaptive, Sharing::PerHost, Some(&shared(&adaptive)), &w);
    assert_eq!(
        (a.calls_during, a.calls_after, a.gave_up),
        (2, 1, 0),
        "{a:?}"
    );
    assert!(a.last_success.is_some(), "{a:?}");
    // Without a key there is nothing to learn from: the exponential schedule.
    let none = simulate(&adaptive, Sharing::None, None, &w);
    assert_eq!(none.calls_during, 5, "{none:?}");
}

#[test]
fn processes_on_one_host_share_its_state_as_a_fleet_shares_one_store() {
    let p = policy(&["-n", "5", "--key", "api"]);
    let s = shared(&p);
    let one_host = World {
        hosts: 1,
        ..world(40, 30)
    };
    let on_one = simulate(&p, Sharing::PerHost, Some(&s), &one_host);
    let fleet = simulate(&p, Sharing::Fleet, Some(&s), &world(40, 30));
    assert_eq!(on_one, fleet);
    // Four hosts of ten: four breakers, each with its own probes.
    let four = simulate(
        &p,
        Sharing::PerHost,
        Some(&s),
        &World {
            hosts: 4,
            ..world(40, 30)
        },
    );
    let each = simulate(&p, Sharing::PerHost, Some(&s), &world(40, 30));
    assert!(
        fleet.calls_during < four.calls_during && four.calls_during < each.calls_during,
        "{} {} {}",
        fleet.calls_during,
        four.calls_during,
        each.calls_during
    );
}

#[test]
fn the_call_time_moves_every_attempt() {
    // One run: attempts at 0 s, 6 s (a 5 s call, 1 s wait) and 13 s (2 s wait); the
    // service is back at 10 s, so the third succeeds at 18 s, 8 s after the recovery.
    let p = policy(&["-n", "3", "-d", "1s", "--jitter", "none"]);
    let w = World {
        splay: Duration::ZERO,
        repeat: false,
        outage: Duration::from_secs(10),
        call: Duration::from_secs(5),
        ..world(1, 0)
    };
    let r = simulate(&p, Sharing::None, None, &w);
    assert_eq!(
        (r.calls_during, r.calls_after, r.last_success),
        (2, 1, Some(Duration::from_secs(8))),
        "{r:?}"
    );
    assert_eq!((r.jobs, r.successes), (1, 1));
    assert_eq!(r.amplification(), 3.0);
    assert!((r.goodput() - 1.0 / 3.0).abs() < 1e-12);
    // With 100 ms calls, all three fall in the outage and the run gives up.
    let quick = simulate(&p, Sharing::None, None, &World { call: CALL, ..w });
    assert_eq!(
        (quick.calls_during, quick.gave_up, quick.last_success),
        (3, 1, None)
    );
}

/// A thousand hosts on one key in one store through a 10-minute outage: the shared breaker
/// keeps nearly every call off the dead service, and the fleet is served after it. (How
/// long a fleet takes to simulate is measured by benches/simulator.rs, not here.)
#[test]
fn a_thousand_hosts_sharing_one_breaker_spare_the_dead_service_and_recover() {
    let p = policy(&["-n", "5", "--key", "api"]);
    let w = world(1000, 10);
    let fleet = simulate(&p, Sharing::Fleet, Some(&shared(&p)), &w);
    let alone = simulate(&p, Sharing::None, None, &w);
    assert_eq!(fleet.jobs, alone.jobs, "the same runs of the job");
    assert!(fleet.refused > 0, "{fleet:?}");
    // About ten calls against about ten thousand (`--explain --fleet` shows the table).
    assert!(
        fleet.calls_during * 100 < alone.calls_during,
        "{} calls in the outage with one breaker, {} without",
        fleet.calls_during,
        alone.calls_during
    );
    assert!(fleet.last_success.is_some(), "{fleet:?}");
    assert!(fleet.calls_after > 0, "{fleet:?}");
}

/// The variants `--explain --fleet` simulates of a policy: its own key's sharing, none, a
/// state per host and one for the fleet.
fn variants(p: &Policy) -> Vec<(Sharing, Option<KeyRules>)> {
    let keyed = p
        .state
        .as_ref()
        .map_or_else(KeyRules::default, |s| s.rules.clone());
    vec![
        (Sharing::None, None),
        (Sharing::PerHost, Some(keyed.clone())),
        (Sharing::Fleet, Some(keyed)),
    ]
}

#[test]
fn a_fleet_of_one_group_is_stepped_as_the_single_queue_stepped_it() {
    let m = |minutes: u64| Duration::from_secs(minutes * 60);
    let fleets = [
        (vec!["-n", "5"], World::cron(300, m(5), m(20), 3)),
        (
            vec!["-n", "4", "-d", "2s", "--key", "api"],
            World {
                hosts: 40,
                splay: Duration::ZERO,
                ..World::cron(GROUP, m(1), m(10), 7)
            },
        ),
        // Ties everywhere: no jitter, every process at once, calls as long as the period.
        (
            vec![
                "-n",
                "3",
                "-d",
                "1s",
                "--jitter",
                "none",
                "--budget-burst",
                "2",
            ],
            World {
                splay: Duration::ZERO,
                call: Duration::from_secs(10),
                every: Duration::from_secs(10),
                ..World::cron(50, m(1), m(3), 1)
            },
        ),
        (
            vec![
                "--jitter",
                "decorrelated",
                "--factor",
                "1.5",
                "--max-time",
                "40s",
            ],
            World {
                hosts: 3,
                ..World::cron(200, m(1), m(15), 11)
            },
        ),
        (
            vec!["-n", "6", "--key", "api", "--backoff", "adaptive"],
            World {
                hosts: 5,
                repeat: false,
                splay: m(3),
                ..World::cron(400, m(1), m(2), 5)
            },
        ),
    ];
    for (flags, world) in fleets {
        let p = policy(&flags);
        for (sharing, state) in variants(&p) {
            let fast = simulate(&p, sharing, state.as_ref(), &world);
            let single = super::super::exact::simulate(&p, sharing, state.as_ref(), &world);
            assert_eq!(fast, single, "{flags:?} {sharing:?} {world:?}");
            assert!(fast.jobs > 0 && fast.calls_during > 0, "{fast:?}");
        }
    }
}

/// The figures of the table that a fleet of many groups draws differently: calls in the
/// outage and after, the peak calls per second, and the runs refused.
fn figures(r: &Report) -> [u64; 4] {
    [r.calls_during, r.calls_after, r.peak_per_second, r.refused]
}

/// Groups of 64 in the tests: a fleet of a few hundred is many groups, quick to step both
/// ways in a debug build.
const SMALL_GROUP: usize = 64;

/// Simulates `world` over seeds both ways and fails when a figure's mean over the seeds,
/// stepped in groups, leaves the range the single queue's figures span over the same
/// seeds, or one of the seeds' figures lies further from that range than its width.
fn within_the_single_queues_spread(flags: &[&str], sharing: Sharing, world: &World) {
    let p = policy(flags);
    let state = match sharing {
        Sharing::None => None,
        _ => Some(
            p.state
                .as_ref()
                .map_or_else(KeyRules::default, |s| s.rules.clone()),
        ),
    };
    let (mut fast, mut single) = (Vec::new(), Vec::new());
    for seed in 1..=8 {
        let world = World {
            seed,
            ..world.clone()
        };
        let counted = AtomicU64::new(0);
        let grouped =
            simulate_in_groups(&p, sharing, state.as_ref(), &world, &counted, SMALL_GROUP);
        assert_eq!(counted.into_inner(), grouped.jobs);
        fast.push(figures(&grouped));
        single.push(figures(&super::super::exact::simulate(
            &p,
            sharing,
            state.as_ref(),
            &world,
        )));
    }
    let names = [
        "calls in the outage",
        "calls after",
        "peak calls/s",
        "runs refused",
    ];
    for (i, name) in names.iter().enumerate() {
        let values = |runs: &[[u64; 4]]| runs.iter().map(|f| f[i] as f64).collect::<Vec<_>>();
        let (fast, single) = (values(&fast), values(&single));
        let mean = fast.iter().sum::<f64>() / fast.len() as f64;
        let lo = single.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = single.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let width = hi - lo;
        assert!(
            (lo..=hi).contains(&mean) && fast.iter().all(|f| (lo - width..=hi + width).contains(f)),
            "{flags:?} {sharing:?}: {name}: in groups {fast:?} (mean {mean}), one queue \
             {single:?}"
        );
    }
}

/// 400 processes, 7 groups.
fn groups_of(hosts: usize, splay: Duration) -> World {
    World {
        hosts,
        splay,
        ..World::cron(400, Duration::from_secs(120), Duration::from_secs(600), 1)
    }
}

#[test]
fn runs_without_a_key_stepped_apart_stay_within_the_single_queues_spread() {
    let spread = groups_of(400, Duration::from_secs(120));
    within_the_single_queues_spread(&["-n", "4"], Sharing::None, &spread);
    // Every process at the same instant: the peak is the whole fleet and its retries.
    let at_once = groups_of(400, Duration::ZERO);
    within_the_single_queues_spread(&["-n", "3", "-d", "3s"], Sharing::None, &at_once);
}

#[test]
fn a_key_that_shares_nothing_is_stepped_apart_within_the_single_queues_spread() {
    // Its breaker and budget are off: one store for the fleet, and nothing in it.
    let flags = [
        "-n",
        "4",
        "--key",
        "k",
        "--breaker-failures",
        "0",
        "--budget-burst",
        "0",
    ];
    within_the_single_queues_spread(
        &flags,
        Sharing::Fleet,
        &groups_of(400, Duration::from_secs(60)),
    );
}

#[test]
fn hosts_with_a_state_each_stepped_in_groups_stay_within_the_single_queues_spread() {
    let flags = ["-n", "5", "--key", "api"];
    let spread = groups_of(400, Duration::from_secs(120));
    within_the_single_queues_spread(&flags, Sharing::PerHost, &spread);
    // Twenty processes a host share its breaker, cron firing them at once.
    within_the_single_queues_spread(&flags, Sharing::PerHost, &groups_of(20, Duration::ZERO));
}

/// A store answering `rate` calls a second, waited for at most `timeout_ms`.
fn store(rate: u32, timeout_ms: u64, fail: FailMode) -> Option<StoreModel> {
    Some(StoreModel {
        rate,
        timeout: Duration::from_millis(timeout_ms),
        fail,
    })
}

#[test]
fn a_saturated_store_is_stepped_as_the_single_queue_steps_it() {
    let m = |minutes: u64| Duration::from_secs(minutes * 60);
    // 600 runs at once against 1000 calls a second, 200 ms to wait: about 200 answered at
    // the start, the rest lose the store.
    let at_once = World {
        splay: Duration::ZERO,
        store: store(1000, 200, FailMode::Open),
        ..World::cron(600, m(5), m(5), 3)
    };
    let fleets = [
        (vec!["-n", "4", "-d", "1s", "--key", "api"], at_once.clone()),
        (
            vec!["-n", "4", "-d", "1s", "--key", "api"],
            World {
                store: store(1000, 200, FailMode::Closed),
                hosts: 60,
                ..at_once.clone()
            },
        ),
        // A key that keeps nothing still asks the store: one queue, not runs stepped apart.
        (
            vec![
                "-n",
                "3",
                "--key",
                "api",
                "--breaker-failures",
                "0",
                "--budget-burst",
                "0",
            ],
            at_once.clone(),
        ),
        (
            vec!["-n", "5", "--key", "api", "--backoff", "adaptive"],
            World {
                store: store(300, 500, FailMode::Open),
                splay: Duration::from_secs(1),
                ..World::cron(400, m(1), m(3), 5)
            },
        ),
    ];
    for (flags, world) in fleets {
        let p = policy(&flags);
        let rules = shared(&p);
        let fast = simulate(&p, Sharing::Fleet, Some(&rules), &world);
        let single = super::super::exact::simulate(&p, Sharing::Fleet, Some(&rules), &world);
        assert_eq!(fast, single, "{flags:?} {world:?}");
        assert!(fast.lost_store > 0, "{flags:?}: {fast:?}");
    }
}

#[test]
fn runs_that_wait_past_the_state_timeout_lose_the_shared_breaker() {
    let flags = ["-n", "4", "-d", "1s", "--key", "api"];
    let p = policy(&flags);
    let rules = shared(&p);
    // 2000 runs of one cron tick, against 2000 calls a second and half a second to wait.
    let fleet = |splay: u64, store| World {
        splay: Duration::from_secs(splay),
        store,
        repeat: false,
        ..World::cron(2000, Duration::from_secs(300), Duration::from_secs(300), 1)
    };
    let report = |world: &World| simulate(&p, Sharing::Fleet, Some(&rules), world);
    // About 1000 admitted in time, the rest fall back; the admitted ones' failures then
    // queue behind the admissions that timed out, past what is left of their wait.
    let queued = report(&fleet(0, store(2000, 500, FailMode::Open)));
    assert!((1900..=2000).contains(&queued.lost_store), "{queued:?}");
    // Those ran on their hosts' own breakers: many more calls into the outage.
    let instant = report(&fleet(0, None));
    assert_eq!(instant.lost_store, 0);
    assert!(
        queued.calls_during > 2 * instant.calls_during,
        "{queued:?}\n{instant:?}"
    );
    // Closed: the half that lost it before starting did not run at all.
    let closed = report(&fleet(0, store(2000, 500, FailMode::Closed)));
    assert!(closed.calls_during < queued.calls_during, "{closed:?}");
    // Spread over the period, the same store keeps up.
    let spread = report(&fleet(300, store(2000, 500, FailMode::Open)));
    assert_eq!(spread.lost_store, 0, "{spread:?}");
    // A wait longer than the queue: no run loses it.
    let patient = report(&fleet(0, store(2000, 3000, FailMode::Open)));
    assert_eq!(patient.lost_store, 0, "{patient:?}");
}
