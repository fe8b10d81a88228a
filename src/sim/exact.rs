//! The fleet simulated as it first was, and as the faster [`super::fleet::simulate`] must
//! agree with: every process's every event in one queue, in time order, all drawing from one
//! random stream. Kept as the reference that the tests and the fleet bench compare with; it
//! takes about a microsecond a run of the job.

use std::time::Duration;

use rand::RngExt;

use super::fleet::{Report, Sharing, StoreModel, World, horizon};
use super::{Component, Nanos, Queue, nanos, stream};
use crate::policy::Policy;
use crate::policy::backoff::SeededRng;
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
    let mut fleet = Fleet::new(policy, sharing, state, world);
    while let Some(event) = fleet.queue.pop() {
        let now = fleet.queue.now();
        match event {
            Event::Start(process) => fleet.start(process, now),
            Event::Call(id) => fleet.call(id, true, now),
            Event::Attempt(id) => fleet.call(id, false, now),
            Event::Answer(id, ok) => fleet.answer(id, ok, now),
        }
    }
    fleet.finish()
}

/// The fleet under way: its world, its stores, its queue of events, its runs, and the
/// figures counted so far.
struct Fleet<'a> {
    policy: &'a Policy,
    sharing: Sharing,
    state: Option<&'a KeyRules>,
    repeat: bool,
    outage: Nanos,
    every: Nanos,
    call: Nanos,
    horizon: Nanos,
    /// The timeline's buckets.
    bucket: Nanos,
    /// A store that answers at a rate: every run's calls wait in its one line, and a run
    /// that waits past its --state-timeout goes on as a real one does.
    model: Option<StoreModel>,
    /// Each host's store of the key (the fleet's one, shared, with [`Sharing::Fleet`]), and
    /// with a `model`, each host's own it goes on with when it loses the fleet's.
    stores: Vec<MemoryStore>,
    locals: Vec<MemoryStore>,
    queue: Queue<Event>,
    rng: SeededRng,
    /// The runs under way: a run's place is taken again once it ended, so memory follows the
    /// fleet, not the simulated time.
    runs: Vec<Option<Run<'a>>>,
    free: Vec<usize>,
    report: Report,
    timeline: Vec<u64>,
    // Calls come in time order: the busiest second is counted as it goes, in constant space.
    per_second: Peak,
    retries_per_second: Peak,
    /// Which processes have had a success since the outage, and how many have not yet.
    recovered: Vec<bool>,
    waiting: usize,
}

impl<'a> Fleet<'a> {
    /// The fleet before its first event: its stores made, and each process's first run in
    /// the queue at its phase of the splay.
    fn new(
        policy: &'a Policy,
        sharing: Sharing,
        state: Option<&'a KeyRules>,
        world: &World,
    ) -> Fleet<'a> {
        let every = nanos(world.every).max(1);
        let horizon = horizon(policy, state, world);
        let bucket = Duration::from_nanos((horizon / 60).max(1_000_000_000));
        let timeline = vec![0u64; usize::try_from(horizon / nanos(bucket) + 1).unwrap_or(1)];

        let mut phases = stream(world.seed, Component::Arrivals);
        let rng = stream(world.seed, Component::Policy);
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
        Fleet {
            policy,
            sharing,
            state,
            repeat: world.repeat,
            outage: nanos(world.outage),
            every,
            call: nanos(world.call),
            horizon,
            bucket: nanos(bucket),
            model,
            stores,
            locals,
            queue,
            rng,
            runs: Vec::new(),
            free: Vec::new(),
            report: Report {
                bucket,
                horizon: Duration::from_nanos(horizon),
                ..Report::default()
            },
            timeline,
            per_second: Peak::default(),
            retries_per_second: Peak::default(),
            recovered: vec![false; world.processes],
            waiting: world.processes,
        }
    }

    /// A process's job starts a run: the next one is due in `every`, and this one asks its
    /// key to be let in (unless it has none), then calls when its store lets it go on.
    fn start(&mut self, process: usize, now: Nanos) {
        if self.repeat && now.saturating_add(self.every) < self.horizon {
            self.queue.after(self.every, Event::Start(process));
        }
        self.report.jobs += 1;
        let host = process % self.stores.len();
        let mut shared = self.handle(host);
        let mut went_on = now;
        if let Some(shared) = &mut shared {
            stores_time(&self.stores, &self.locals, host, now);
            let admitted = shared.admit();
            let lost;
            (went_on, lost) = after(&self.stores[host], now);
            self.report.lost_store += u64::from(lost);
            match admitted {
                // --state-fail closed: the run does not start.
                Err(_) => return,
                Ok(Some(_)) => {
                    self.report.refused += 1;
                    return;
                }
                Ok(None) => {}
            }
            self.report.probes += u64::from(shared.probing());
        }
        // Without a key the adaptive delay has nothing to learn from: the exponential
        // schedule it falls back on, as a real run does when its state is lost.
        let pacing = Pacing::of(self.policy, shared.is_some());
        let run = Some(Run {
            process,
            host,
            started: now,
            attempt: 0,
            pacing,
            shared,
        });
        let id = match self.free.pop() {
            Some(id) => {
                self.runs[id] = run;
                id
            }
            None => {
                self.runs.push(run);
                self.runs.len() - 1
            }
        };
        self.queue.at(went_on, Event::Call(id));
    }

    /// A run's handle on its key in `host`'s store, as a real run's on a --state store;
    /// `None` when the fleet shares no state.
    fn handle(&self, host: usize) -> Option<Shared> {
        let rules = match (self.sharing, self.state) {
            (Sharing::None, _) | (_, None) => return None,
            (_, Some(rules)) => rules,
        };
        let mut shared = Shared::new(
            "fleet".into(),
            rules.clone(),
            Box::new(self.stores[host].clone()),
        );
        if let Some(m) = self.model {
            shared.skip_moot_successes = true;
            shared.fallback = Some(Fallback {
                fail: m.fail,
                local: Box::new(self.locals[host].clone()),
            });
        }
        Some(shared)
    }

    /// A run's attempt is due: a retry asks its key first (`ask`) and waits for its store,
    /// or gives up if the key refuses; then the attempt calls the service, counted in the
    /// figures, and its answer is due in `call`.
    fn call(&mut self, id: usize, ask: bool, now: Nanos) {
        let Some(run) = self.runs[id].as_mut() else {
            return;
        };
        if ask
            && run.attempt > 0
            && let Some(shared) = &mut run.shared
        {
            stores_time(&self.stores, &self.locals, run.host, now);
            let refused = shared.before_retry();
            let (went_on, timed_out) = after(&self.stores[run.host], now);
            if timed_out {
                // The run goes on without its key, as a real run whose store failed.
                run.shared = None;
                self.report.lost_store += 1;
            }
            if let Ok(Some(_)) = refused {
                self.report.gave_up += 1;
                self.runs[id] = None;
                self.free.push(id);
                return;
            }
            if went_on > now {
                self.queue.at(went_on, Event::Attempt(id));
                return;
            }
        }
        run.attempt += 1;
        let retry = run.attempt > 1;
        self.count_call(retry, now);
        self.queue
            .after(self.call, Event::Answer(id, now >= self.outage));
    }

    /// Counts a call to the service at `now`: in the outage or after, in its bucket of the
    /// timeline, and in the busiest seconds (of calls, and of retries).
    fn count_call(&mut self, retry: bool, now: Nanos) {
        if now < self.outage {
            self.report.calls_during += 1;
        } else {
            self.report.calls_after += 1;
        }
        if let Some(slot) = self
            .timeline
            .get_mut(usize::try_from(now / self.bucket).unwrap_or(usize::MAX))
        {
            *slot += 1;
        }
        self.per_second.add(now / 1_000_000_000);
        if retry {
            self.retries_per_second.add(now / 1_000_000_000);
        }
    }

    /// A call's answer arrives: the policy judges it, the key is told, and the run either
    /// ends (a success, or a failure it does not retry) or calls again after its delay.
    fn answer(&mut self, id: usize, ok: bool, now: Nanos) {
        let Some(mut run) = self.runs[id].take() else {
            return;
        };
        // As a real run: the key's outcomes as the store told them at the attempt's
        // start, with this failure counted, at the store's time now. A failed call is
        // a failure the policy retries.
        let view = run.shared.as_ref().and_then(|s| s.view.as_ref());
        let estimates = view.filter(|_| run.pacing.learns()).map(|v| {
            v.history
                .estimate_after_failure(now / 1_000_000, self.policy.backoff.delay)
        });
        let judgement = if ok {
            Judgement::Success
        } else {
            let elapsed = Duration::from_nanos(now.saturating_sub(run.started));
            let because = Retryable::Status(Reason::AnyFailure);
            let paced =
                run.pacing
                    .after_failure(run.attempt, elapsed, estimates.as_ref(), &mut self.rng);
            Judgement::paced(because, paced)
        };
        let mut retry = judgement.delay();
        let mut went_on = now;
        if let Some(shared) = &mut run.shared {
            stores_time(&self.stores, &self.locals, run.host, now);
            let u = self.rng.random::<f64>();
            let told = shared.after_attempt(judgement.counted(), retry.is_some(), u);
            let timed_out;
            (went_on, timed_out) = after(&self.stores[run.host], now);
            if timed_out {
                run.shared = None;
                self.report.lost_store += 1;
            }
            if let Ok((_, Some(_))) = told {
                retry = None;
            }
        }
        if retry.is_none() {
            // The run is over: its place is free for the next.
            self.free.push(id);
        }
        if ok {
            self.succeeded(run.process, now);
            return;
        }
        match retry {
            Some(delay) => {
                self.runs[id] = Some(run);
                self.queue
                    .at(went_on.saturating_add(nanos(delay)), Event::Call(id));
            }
            None => self.report.gave_up += 1,
        }
    }

    /// Counts a success of `process` at `now`: after the outage, the first success and, once
    /// every process has had one, the last to recover.
    fn succeeded(&mut self, process: usize, now: Nanos) {
        self.report.successes += 1;
        if now < self.outage {
            return;
        }
        let since = Duration::from_nanos(now - self.outage);
        self.report.first_success.get_or_insert(since);
        if !self.recovered[process] {
            self.recovered[process] = true;
            self.waiting -= 1;
            if self.waiting == 0 {
                self.report.last_success = Some(since);
            }
        }
    }

    /// The report, once the queue is empty.
    fn finish(mut self) -> Report {
        self.report.peak_per_second = self.per_second.most;
        self.report.peak_retries_per_second = self.retries_per_second.most;
        // The last bucket runs past the simulated time: it would show a drop that is not there.
        self.timeline.truncate(
            usize::try_from(self.horizon / self.bucket)
                .unwrap_or(usize::MAX)
                .max(1),
        );
        self.report.timeline = self.timeline;
        self.report
    }
}

/// Where a run is after its calls to `store` from `now`: when it goes on, and whether it
/// waited past its timeout.
fn after(store: &MemoryStore, now: Nanos) -> (Nanos, bool) {
    store
        .line()
        .map_or((now, false), |l| (l.went_on(), l.timed_out()))
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
