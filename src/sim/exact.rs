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
use crate::state::memory::{Line, MemoryStore};
use crate::state::{Fallback, Shared};

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
    /// A run's attempt is due: its key is asked, then it calls the service.
    Call(usize),
    /// A run's attempt calls the service, its key asked already.
    Attempt(usize),
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
    // A store that answers at a rate: every run's calls wait in its one line, and a run
    // that waits past its --state-timeout goes on as a real one does.
    let model = world.store.filter(|_| sharing == Sharing::Fleet);
    let fleet_store = match model {
        Some(m) => MemoryStore::queued(Line::new(m.rate, m.timeout)),
        None => MemoryStore::default(),
    };
    let locals: Vec<MemoryStore> = match model {
        Some(_) => (0..world.hosts.clamp(1, world.processes.max(1)))
            .map(|_| MemoryStore::default())
            .collect(),
        None => Vec::new(),
    };
    // Where a run is after its calls to the store from `now`: when it goes on, and whether
    // it waited past its timeout.
    let after = |store: &MemoryStore, now: Nanos| {
        store
            .line()
            .map_or((now, false), |l| (l.went_on(), l.timed_out()))
    };

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
                    (_, Some(s)) => {
                        let mut shared =
                            Shared::new("fleet".into(), s.clone(), Box::new(stores[host].clone()));
                        // As a real run's handle on a --state store.
                        if let Some(m) = model {
                            shared.skip_moot_successes = true;
                            shared.fallback = Some(Fallback {
                                fail: m.fail,
                                local: Box::new(locals[host].clone()),
                            });
                        }
                        Some(shared)
                    }
                };
                let mut went_on = now;
                if let Some(shared) = &mut shared {
                    stores_time(&stores, &locals, host, now);
                    let admitted = shared.admit();
                    let lost;
                    (went_on, lost) = after(&stores[host], now);
                    report.lost_store += u64::from(lost);
                    match admitted {
                        // --state-fail closed: the run does not start.
                        Err(_) => continue,
                        Ok(Some(_)) => {
                            report.refused += 1;
                            continue;
                        }
                        Ok(None) => {}
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
                queue.at(went_on, Event::Call(id));
            }
            Event::Call(id) | Event::Attempt(id) => {
                let Some(run) = runs[id].as_mut() else {
                    continue;
                };
                if matches!(event, Event::Call(_))
                    && run.attempt > 0
                    && let Some(shared) = &mut run.shared
                {
                    stores_time(&stores, &locals, run.host, now);
                    let refused = shared.before_retry();
                    let (went_on, timed_out) = after(&stores[run.host], now);
                    if timed_out {
                        // The run goes on without its key, as a real run whose store failed.
                        run.shared = None;
                        report.lost_store += 1;
                    }
                    if let Ok(Some(_)) = refused {
                        report.gave_up += 1;
                        runs[id] = None;
                        free.push(id);
                        continue;
                    }
                    if went_on > now {
                        queue.at(went_on, Event::Attempt(id));
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
                let mut went_on = now;
                if let Some(shared) = &mut run.shared {
                    stores_time(&stores, &locals, run.host, now);
                    let u = rng.random::<f64>();
                    let told = shared.after_attempt(judgement.counted(), retry.is_some(), u);
                    let timed_out;
                    (went_on, timed_out) = after(&stores[run.host], now);
                    if timed_out {
                        run.shared = None;
                        report.lost_store += 1;
                    }
                    if let Ok((_, Some(_))) = told {
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
                        queue.at(went_on.saturating_add(nanos(delay)), Event::Call(id));
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

/// Sets the clocks of the stores a run on `host` may call at `now`: its key's, and the host's
/// own it goes on with if it loses a fleet's store that answers at a rate.
fn stores_time(stores: &[MemoryStore], locals: &[MemoryStore], host: usize, now: Nanos) {
    stores[host].set_time(now);
    if let Some(local) = locals.get(host) {
        local.set_time(now);
    }
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
