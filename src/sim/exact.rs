//! The fleet simulated as it first was, and as the faster [`super::fleet::simulate`] must
//! agree with: every process's every event in one queue, in time order, all drawing from one
//! random stream. Kept as the reference that the tests and the fleet bench compare with; it
//! takes about a microsecond a run of the job.

use std::time::Duration;

use rand::RngExt;

use super::fleet::{Report, Sharing, World, horizon};
use super::{Component, Nanos, Queue, nanos, stream};
use crate::policy::Policy;
use crate::policy::judgement::{Judgement, Retryable};
use crate::policy::pacing::Pacing;
use crate::policy::rules::Reason;
use crate::policy::shared::KeyRules;
use crate::state::Shared;
use crate::state::memory::MemoryStore;

/// One run of retry by one process.
struct Run<'a> {
    /// The process, and the host whose store it uses.
    process: usize,
    host: usize,
    started: Nanos,
    attempt: u32,
    /// Its delays and limits, as a real run's; with `--backoff adaptive`, learning from the
    /// key's outcomes in `shared`'s store.
    pacing: Pacing<'a>,
    shared: Option<Shared>,
}

enum Event {
    /// A process's job starts a run.
    Start(usize),
    /// A run's attempt calls the service.
    Call(usize),
    /// The call's answer arrives: success or not.
    Answer(usize, bool),
}

/// Runs the fleet through the outage, event by event. `state` is the key's rules when
/// `sharing` is not [`Sharing::None`].
pub fn simulate(
    policy: &Policy,
    sharing: Sharing,
    state: Option<&KeyRules>,
    world: &World,
) -> Report {
    let backoff = &policy.backoff;
    let outage = nanos(world.outage);
    let every = nanos(world.every).max(1);
    let call = nanos(world.call);
    let horizon = horizon(policy, state, world);
    let bucket = Duration::from_nanos((horizon / 60).max(1_000_000_000));
    let mut timeline = vec![0u64; usize::try_from(horizon / nanos(bucket) + 1).unwrap_or(1)];
    // Calls come in time order: the busiest second is counted as it goes, in constant space.
    let mut per_second = Peak::default();
    let mut retries_per_second = Peak::default();

    let mut phases = stream(world.seed, Component::Arrivals);
    let mut rng = stream(world.seed, Component::Policy);
    let fleet_store = MemoryStore::default();
    let stores: Vec<MemoryStore> = (0..world.hosts.clamp(1, world.processes.max(1)))
        .map(|_| match sharing {
            Sharing::Fleet => fleet_store.clone(),
            _ => MemoryStore::default(),
        })
        .collect();
    let mut queue = Queue::default();
    let splay = if world.repeat {
        nanos(world.splay).min(every)
    } else {
        nanos(world.splay)
    };
    for process in 0..world.processes {
        let phase = if splay == 0 {
            0
        } else {
            phases.random_range(0..splay)
        };
        queue.at(phase, Event::Start(process));
    }
    // The runs under way: a run's place is taken again once it ended, so memory follows the
    // fleet, not the simulated time.
    let mut runs: Vec<Option<Run>> = Vec::new();
    let mut free: Vec<usize> = Vec::new();
    let mut report = Report {
        bucket,
        horizon: Duration::from_nanos(horizon),
        ..Report::default()
    };
    let mut recovered = vec![false; world.processes];
    let mut waiting = world.processes;
    let ms = |t: Nanos| t / 1_000_000;

    while let Some(event) = queue.pop() {
        let now = queue.now();
        match event {
            Event::Start(process) => {
                if world.repeat && now.saturating_add(every) < horizon {
                    queue.after(every, Event::Start(process));
                }
                report.jobs += 1;
                let host = process % stores.len();
                let mut shared = match (sharing, state) {
                    (Sharing::None, _) | (_, None) => None,
                    (_, Some(s)) => Some(Shared::new(
                        "fleet".into(),
                        s.clone(),
                        Box::new(stores[host].clone()),
                    )),
                };
                if let Some(shared) = &mut shared {
                    stores[host].now.set(ms(now));
                    // An in-memory store does not fail.
                    if let Ok(Some(_)) = shared.admit() {
                        report.refused += 1;
                        continue;
                    }
                    report.probes += u64::from(shared.probing());
                }
                // Without a key the adaptive delay has nothing to learn from: the exponential
                // schedule it falls back on, as a real run does when its state is lost.
                let pacing = Pacing::of(policy, shared.is_some());
                let run = Some(Run {
                    process,
                    host,
                    started: now,
                    attempt: 0,
                    pacing,
                    shared,
                });
                let id = match free.pop() {
                    Some(id) => {
                        runs[id] = run;
                        id
                    }
                    None => {
                        runs.push(run);
                        runs.len() - 1
                    }
                };
                queue.at(now, Event::Call(id));
            }
            Event::Call(id) => {
                let Some(run) = runs[id].as_mut() else {
                    continue;
                };
                if run.attempt > 0
                    && let Some(shared) = &mut run.shared
                {
                    stores[run.host].now.set(ms(now));
                    if let Ok(Some(_)) = shared.before_retry() {
                        report.gave_up += 1;
                        runs[id] = None;
                        free.push(id);
                        continue;
                    }
                }
                run.attempt += 1;
                if now < outage {
                    report.calls_during += 1;
                } else {
                    report.calls_after += 1;
                }
                if let Some(slot) =
                    timeline.get_mut(usize::try_from(now / nanos(bucket)).unwrap_or(usize::MAX))
                {
                    *slot += 1;
                }
                per_second.add(now / 1_000_000_000);
                if run.attempt > 1 {
                    retries_per_second.add(now / 1_000_000_000);
                }
                queue.after(call, Event::Answer(id, now >= outage));
            }
            Event::Answer(id, ok) => {
                let Some(mut run) = runs[id].take() else {
                    continue;
                };
                // As a real run: the key's outcomes as the store told them at the attempt's
                // start, with this failure counted, at the store's time now. A failed call is
                // a failure the policy retries.
                let view = run.shared.as_ref().and_then(|s| s.view.as_ref());
                let estimates = view
                    .filter(|_| run.pacing.learns())
                    .map(|v| v.history.estimate_after_failure(ms(now), backoff.delay));
                let judgement = if ok {
                    Judgement::Success
                } else {
                    let elapsed = Duration::from_nanos(now.saturating_sub(run.started));
                    let because = Retryable::Status(Reason::AnyFailure);
                    let paced = run.pacing.after_failure(
                        run.attempt,
                        elapsed,
                        estimates.as_ref(),
                        &mut rng,
                    );
                    Judgement::paced(because, paced)
                };
                let mut retry = judgement.delay();
                if let Some(shared) = &mut run.shared {
                    stores[run.host].now.set(ms(now));
                    let u = rng.random::<f64>();
                    if let Ok((_, Some(_))) =
                        shared.after_attempt(judgement.counted(), retry.is_some(), u)
                    {
                        retry = None;
                    }
                }
                if retry.is_none() {
                    // The run is over: its place is free for the next.
                    free.push(id);
                }
                if ok {
                    report.successes += 1;
                    if now >= outage {
                        let since = Duration::from_nanos(now - outage);
                        report.first_success.get_or_insert(since);
                        if !recovered[run.process] {
                            recovered[run.process] = true;
                            waiting -= 1;
                            if waiting == 0 {
                                report.last_success = Some(since);
                            }
                        }
                    }
                    continue;
                }
                match retry {
                    Some(delay) => {
                        runs[id] = Some(run);
                        queue.after(nanos(delay), Event::Call(id));
                    }
                    None => report.gave_up += 1,
                }
            }
        }
    }
    report.peak_per_second = per_second.most;
    report.peak_retries_per_second = retries_per_second.most;
    // The last bucket runs past the simulated time: it would show a drop that is not there.
    timeline.truncate(
        usize::try_from(horizon / nanos(bucket))
            .unwrap_or(usize::MAX)
            .max(1),
    );
    report.timeline = timeline;
    report
}

/// The most events in one second, counted as they come in time order.
#[derive(Default)]
struct Peak {
    second: u64,
    count: u64,
    most: u64,
}

impl Peak {
    fn add(&mut self, second: u64) {
        if second != self.second {
            (self.second, self.count) = (second, 0);
        }
        self.count += 1;
        self.most = self.most.max(self.count);
    }
}
