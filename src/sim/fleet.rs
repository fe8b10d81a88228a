//! Scenario C, and `retry --explain --fleet N`: a fleet of processes spread over hosts, each
//! running a job every period (cron: every process at the period's tick, or at its own offset
//! within a splay), against one service that is down for a while and then recovers. Each run is retry's policy: its attempts, its backoff and jitter drawn by
//! [`Backoff::schedule`](crate::policy::backoff::Backoff::schedule), its `--max-time`, and with a
//! key its breaker and budget through the same [`Shared`] handle a real run uses, over an
//! in-memory store: one for the whole fleet (a shared store), or one per host, shared by the
//! processes on it (local state, or a shared store that is down and every host falls back to
//! its own).

use std::sync::atomic::AtomicU64;
use std::time::Duration;

use rand::RngExt;

use super::apart::Apart;
use super::group::{Group, Plan};
use super::tally::{Tally, window_end, window_of};
use super::{Component, Nanos, group_stream, nanos, stream};
use crate::policy::backoff::Shape;
use crate::policy::pacing::Pacing;
use crate::policy::shared::KeyRules;
use crate::policy::{Policy, defaults};

/// `--breaker-open-max`'s default: the simulated time covers at least this after the outage.
const DEFAULT_OPEN_MAX: Duration = defaults::BREAKER_OPEN_MAX;

/// Where the hosts keep the key's state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sharing {
    /// No key: every run starts from nothing.
    None,
    /// Each host its own state, shared by its processes (`--key` without `--state`, or a
    /// shared store that is down).
    PerHost,
    /// One state for the fleet (`--key` with `--state redis://…`).
    Fleet,
}

/// The world the fleet runs in.
#[derive(Clone, Debug)]
pub struct World {
    /// Processes running the job.
    pub processes: usize,
    /// The hosts they are spread over (process i on host i mod hosts); with local state, the
    /// processes of a host share its state file.
    pub hosts: usize,
    /// How often each process's job runs: cron's ticks, at 0, `every`, 2·`every`, …
    pub every: Duration,
    /// Each process runs at its own random offset within this of each tick (at most
    /// `every`): a splay. Zero starts them all at the tick, as cron fires a fleet at the same
    /// second.
    pub splay: Duration,
    /// Each process runs the job again every `every`; else once.
    pub repeat: bool,
    /// The service fails every call from time 0 to this, then answers every call.
    pub outage: Duration,
    /// How long a call takes, failed or not.
    pub call: Duration,
    pub seed: u64,
}

impl World {
    /// `hosts` cron jobs every `every`, one process a host, their first runs spread over it,
    /// against a service down for `outage` whose calls take [`CALL`].
    pub fn cron(hosts: usize, every: Duration, outage: Duration, seed: u64) -> World {
        World {
            processes: hosts,
            hosts,
            every,
            splay: every,
            repeat: true,
            outage,
            call: CALL,
            seed,
        }
    }
}

/// How long one call to the service takes, failed or not, unless a world says otherwise:
/// `--call-time`'s default.
pub const CALL: Duration = defaults::CALL_TIME;

/// What the fleet did.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Report {
    /// Runs of the job started, refused ones included: the unique requests.
    pub jobs: u64,
    /// Calls that succeeded: one per run that did.
    pub successes: u64,
    /// Calls that reached the service while it was down.
    pub calls_during: u64,
    /// Calls after it recovered, to the end of the simulated time.
    pub calls_after: u64,
    /// Runs the breaker refused (exit 75).
    pub refused: u64,
    /// Runs that were a breaker's probe.
    pub probes: u64,
    /// Runs that gave up without success.
    pub gave_up: u64,
    /// The most calls in one second.
    pub peak_per_second: u64,
    /// The most retries (calls after a run's first) in one second: what jitter spreads.
    pub peak_retries_per_second: u64,
    /// From the recovery to the first success in the fleet.
    pub first_success: Option<Duration>,
    /// From the recovery to the time every process had succeeded once: the time to recover.
    /// `None` when some process had not by the end of the simulated time.
    pub last_success: Option<Duration>,
    /// Calls in each bucket of `bucket`, from time 0.
    pub timeline: Vec<u64>,
    pub bucket: Duration,
    /// The simulated time.
    pub horizon: Duration,
}

impl Report {
    /// Calls made per run of the job (unique request): what retrying multiplies the load by.
    pub fn amplification(&self) -> f64 {
        (self.calls_during + self.calls_after) as f64 / self.jobs.max(1) as f64
    }

    /// The share of calls that succeeded: the part of the load on the service that did work.
    pub fn goodput(&self) -> f64 {
        self.successes as f64 / (self.calls_during + self.calls_after).max(1) as f64
    }
}

/// The simulated time, the same for every variant of a policy, so that they are compared over
/// the same time: long enough for a breaker open for its longest to let a probe through after
/// the outage, and for every host to run again.
pub(super) fn horizon(policy: &Policy, state: Option<&KeyRules>, world: &World) -> Nanos {
    let every = nanos(world.every).max(1);
    let open_max = state.map_or(0, |s| nanos(s.breaker.open_max));
    nanos(world.outage)
        .saturating_add(open_max.max(nanos(DEFAULT_OPEN_MAX)))
        .saturating_add(policy.max_time.map_or(every, nanos).max(every))
        .saturating_add(every.saturating_mul(2))
}

/// How many runs of the job [`simulate`] starts: every host, every `every`, over the
/// simulated time. The time a simulation takes grows with it.
pub fn runs(policy: &Policy, state: Option<&KeyRules>, world: &World) -> u128 {
    let every = nanos(world.every).max(1);
    let per_host = if world.repeat {
        horizon(policy, state, world) / every + 1
    } else {
        1
    };
    u128::from(per_host) * world.processes as u128
}

/// Attempts of a run [`calls`] follows one by one; past them, the last step repeats.
const FOLLOWED: u32 = 10_000;

/// About how many calls the fleet makes without a key: each run of the job that starts in
/// the outage fails attempt after attempt (each delay the middle of its range) until its
/// attempts, its `--max-time` or the outage run out, and every run makes one call that
/// succeeds. What stepping a variant that shares nothing costs; its figure is not this.
pub fn calls(policy: &Policy, world: &World) -> u128 {
    let outage = u128::from(nanos(world.outage));
    let every = u128::from(nanos(world.every).max(1));
    let call = nanos(world.call).max(1);
    let pacing = Pacing::of(policy, false);
    // For each attempt of a run, the time the runs it is made by start over in the outage:
    // divided by the period, the attempts of a process in the outage.
    let (mut span, mut t, mut prev) = (0u128, 0u128, policy.backoff.delay);
    let mut attempt = 1u32;
    while t < outage {
        span += outage - t;
        if !pacing.attempts_left(attempt) {
            break;
        }
        let (lo, hi) = policy.backoff.range(attempt, prev);
        let delay = lo + (hi - lo) / 2;
        let elapsed = Duration::from_nanos(u64::try_from(t).unwrap_or(u64::MAX)) + world.call;
        if pacing.fits(elapsed, delay).is_err() {
            break;
        }
        let step = u128::from(call) + u128::from(nanos(delay));
        t += step;
        prev = delay;
        attempt += 1;
        if attempt > FOLLOWED {
            // The rest, a step apart, as many as the attempts left and the outage allow: the
            // time each leaves in the outage, summed as the area of a triangle.
            let left = outage.saturating_sub(t).div_ceil(step);
            let left = pacing.max_attempts().map_or(left, |max| {
                left.min(u128::from(max.saturating_sub(attempt) + 1))
            });
            span += left * outage.saturating_sub(t) / 2;
            break;
        }
    }
    // And one call a run that starts after the outage.
    let per_process = runs(policy, None, world) / world.processes.max(1) as u128;
    (span / every + per_process.saturating_sub(outage / every))
        .saturating_mul(world.processes as u128)
}

/// Processes (or hosts, with a store each) in a group that shares nothing with the rest of
/// the fleet: a fleet of at most this many, starting at most [`QUEUED_RUNS`] runs of the job,
/// is one group, stepped as one queue.
pub const GROUP: usize = 1024;

/// Whether some variant of `policy` on `world` is stepped in more than one group, and so
/// draws other numbers than one queue would.
pub fn in_groups(policy: &Policy, world: &World) -> bool {
    world.processes > GROUP || runs(policy, None, world) > QUEUED_RUNS
}

/// The most runs of the job a fleet of one group starts.
pub const QUEUED_RUNS: u128 = 1_000_000;

/// Runs the fleet through the outage. `state` is the key's rules when `sharing` is not
/// [`Sharing::None`].
pub fn simulate(
    policy: &Policy,
    sharing: Sharing,
    state: Option<&KeyRules>,
    world: &World,
) -> Report {
    simulate_counting(policy, sharing, state, world, &AtomicU64::new(0))
}

/// [`simulate`], adding each run of the job it starts to `started` as it goes.
///
/// The processes are stepped in groups that share nothing: the whole fleet when it has one
/// store or is small ([`GROUP`]), else blocks of hosts each with its own store, or blocks of
/// processes without one. A group is stepped event by event in time order, its events at the
/// same time in the order scheduled, as one queue for the whole fleet had them; groups draw
/// from streams of their own (the first from the stream the whole fleet would), so a fleet
/// of more than one group draws other numbers than one queue would, from the same
/// distribution. Runs that share nothing are stepped each to its end ([`super::apart`]).
pub fn simulate_counting(
    policy: &Policy,
    sharing: Sharing,
    state: Option<&KeyRules>,
    world: &World,
    started: &AtomicU64,
) -> Report {
    simulate_in_groups(policy, sharing, state, world, started, GROUP)
}

/// [`simulate_counting`] with groups of `group` processes (or hosts).
fn simulate_in_groups(
    policy: &Policy,
    sharing: Sharing,
    state: Option<&KeyRules>,
    world: &World,
    started: &AtomicU64,
    group: usize,
) -> Report {
    let every = nanos(world.every).max(1);
    let horizon = horizon(policy, state, world);
    let bucket = (horizon / 60).max(1_000_000_000);
    let state = state.filter(|_| sharing != Sharing::None);
    let phases = phases(world);
    let tabled = tabled(policy);
    let plan = Plan {
        policy: tabled.as_ref().unwrap_or(policy),
        state,
        outage: nanos(world.outage),
        every,
        call: nanos(world.call),
        call_time: world.call,
        horizon,
        repeat: world.repeat,
        phases: &phases,
        started,
    };
    let mut tally = Tally::new(
        world.processes,
        plan.outage,
        bucket,
        usize::try_from(horizon / bucket + 1).unwrap_or(1),
    );
    let mut groups = groups(&plan, sharing, world, group.max(1));
    while let Some(next) = groups.iter_mut().filter_map(Stepper::next_at).min() {
        let window = window_of(next);
        tally.begin(window);
        let end = window_end(window);
        // A group with nothing left to do lets go of its runs and its stores at once.
        groups.retain_mut(|group| {
            group.advance(end, &mut tally);
            group.next_at().is_some()
        });
    }
    tally.report(horizon)
}

/// The most delays [`tabled`] works out in advance.
const TABLED: u32 = 4096;

/// The policy with its exponential backoff's delays before jitter worked out once, as the
/// list of them that gives the same delay for every retry (`Shape::List`, whose last delay
/// repeats): `factor.powi(k)` for every delay of every run was most of the time a fleet took.
/// `None` unless the backoff is exponential and levels off within [`TABLED`] delays: at
/// `--max-delay`, or at once with a factor of 1 or no delay, after which a factor of at
/// least 1 keeps it there.
fn tabled(policy: &Policy) -> Option<Policy> {
    let backoff = &policy.backoff;
    let Shape::Exponential { factor } = backoff.shape else {
        return None;
    };
    if factor < 1.0 {
        return None;
    }
    let level = factor == 1.0 || backoff.delay.is_zero();
    let mut list: Vec<Duration> = Vec::new();
    for k in 1..=TABLED {
        let delay = backoff.base(k);
        list.push(delay);
        if level || delay == backoff.max_delay {
            let mut tabled = policy.clone();
            tabled.backoff.shape = Shape::List(list);
            return Some(tabled);
        }
    }
    None
}

/// Each process's first start: within the splay of time 0, drawn in the order of their
/// numbers from the arrivals' stream.
fn phases(world: &World) -> Vec<Nanos> {
    let mut draw = stream(world.seed, Component::Arrivals);
    let splay = if world.repeat {
        nanos(world.splay).min(nanos(world.every).max(1))
    } else {
        nanos(world.splay)
    };
    (0..world.processes)
        .map(|_| {
            if splay == 0 {
                0
            } else {
                draw.random_range(0..splay)
            }
        })
        .collect()
}

/// A group of processes, stepped event by event or run by run.
enum Stepper<'a> {
    Queue(Group<'a>),
    Apart(Apart<'a>),
}

impl Stepper<'_> {
    fn next_at(&mut self) -> Option<Nanos> {
        match self {
            Stepper::Queue(g) => g.next_at(),
            Stepper::Apart(a) => a.next_at(),
        }
    }

    fn advance(&mut self, until: Nanos, tally: &mut Tally) {
        match self {
            Stepper::Queue(g) => g.advance(until, tally),
            Stepper::Apart(a) => a.advance(until, tally),
        }
    }
}

/// The fleet's processes in groups that share nothing, each with its own random stream.
fn groups<'a>(
    plan: &'a Plan<'a>,
    sharing: Sharing,
    world: &World,
    group: usize,
) -> Vec<Stepper<'a>> {
    let processes = world.processes;
    let hosts = world.hosts.clamp(1, processes.max(1));
    let number = |p: usize| u32::try_from(p).unwrap_or(u32::MAX);
    let rng = |group: usize| group_stream(world.seed, Component::Policy, group as u64);
    // A key whose breaker and budget are off and whose outcomes are not kept: no run can
    // change what another does.
    let inert = plan.state.is_none_or(|s| {
        !s.breaker.enabled() && !s.budget.enabled() && !s.history && plan.policy.adaptive.is_none()
    });
    // One group steps as the single queue did, draw for draw, but each of its events goes
    // through a queue: a small fleet with many runs of the job is stepped in groups too.
    let one = processes <= group && runs(plan.policy, plan.state, world) <= QUEUED_RUNS;
    match sharing {
        _ if one || (sharing == Sharing::Fleet && !inert) => {
            let stores = if sharing == Sharing::PerHost {
                hosts
            } else {
                1
            };
            let all = (0..processes).map(number).collect();
            vec![Stepper::Queue(Group::new(
                plan,
                all,
                stores,
                if sharing == Sharing::PerHost {
                    hosts
                } else {
                    1
                },
                0,
                rng(0),
            ))]
        }
        _ if inert => (0..processes)
            .step_by(GROUP)
            .enumerate()
            .map(|(g, first)| {
                let block = (first..(first + GROUP).min(processes))
                    .map(number)
                    .collect();
                Stepper::Apart(Apart::new(plan, block, rng(g)))
            })
            .collect(),
        _ => {
            // Blocks of whole hosts, each with its own store, about `group` processes a block.
            let per_host = processes.div_ceil(hosts);
            let block = (group / per_host).max(1);
            (0..hosts)
                .step_by(block)
                .enumerate()
                .map(|(g, first)| {
                    let last = (first + block).min(hosts);
                    let members = (first..last)
                        .flat_map(|h| (h..processes).step_by(hosts))
                        .map(number)
                        .collect();
                    Stepper::Queue(Group::new(
                        plan,
                        members,
                        last - first,
                        hosts,
                        first,
                        rng(g),
                    ))
                })
                .collect()
        }
    }
}

/// The shared-state rules with the breaker or the budget turned off.
pub fn only(s: &KeyRules, breaker: bool, budget: bool) -> KeyRules {
    let mut s = s.clone();
    if !breaker {
        s.breaker.failures = 0;
    }
    if !budget {
        s.budget.burst = 0;
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

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
                (lo..=hi).contains(&mean)
                    && fast.iter().all(|f| (lo - width..=hi + width).contains(f)),
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
}
