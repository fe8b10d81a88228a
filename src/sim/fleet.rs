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
pub use super::group::StoreModel;
use super::group::{Group, Plan};
pub use super::tally::Report;
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
    /// The shared store's rate, when [`Sharing::Fleet`]'s store answers at one; `None`: at
    /// once, however many call.
    pub store: Option<StoreModel>,
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
            store: None,
        }
    }
}

/// How long one call to the service takes, failed or not, unless a world says otherwise:
/// `--call-time`'s default.
pub const CALL: Duration = defaults::CALL_TIME;

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
        store: world
            .store
            .filter(|_| sharing == Sharing::Fleet && state.is_some()),
        hosts: world.hosts.clamp(1, world.processes.max(1)),
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
    // change what another does. Unless its store answers at a rate: each run's calls then
    // wait behind every other's.
    let inert = plan.store.is_none()
        && plan.state.is_none_or(|s| {
            !s.breaker.enabled()
                && !s.budget.enabled()
                && !s.history
                && plan.policy.adaptive.is_none()
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
#[path = "fleet_tests.rs"]
mod tests;
