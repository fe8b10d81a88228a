//! Scenario B, the seed paper's load spike: tasks arrive (open loop, Poisson) or are run by a
//! set of workers (closed loop), each retried by a policy, against a server that a +30% or +50%
//! spike pushes to or past its capacity. The claim to test: an adaptive delay lowers the mean
//! completion time E[T] by 12–18% against exponential backoff.
//!
//! Two servers: a loss server (c slots, exponential service time, a small base failure rate; a
//! request that finds every slot busy fails at once), and a collapse model (latency grows with
//! the requests in flight, clients time out, and the server keeps working on what they gave up
//! on, so failures rise with load). Delays come from retry's own [`Backoff`] and
//! [`adaptive`](retry::policy::adaptive) code (with the rules tried beside it, in
//! [`rules`](crate::rules)), the budget from its [`Shared`] handle.

use std::time::Duration;

use rand::RngExt;
use rand_distr::{Distribution, Exp};

use retry::policy::adaptive::History;
use retry::policy::backoff::{Backoff, Schedule};
use retry::policy::breaker::Attempt;
use retry::policy::shared::KeyRules;
use retry::sim::{Component, Nanos, Queue, nanos, stream};
use retry::state::Shared;
use retry::state::memory::MemoryStore;

use crate::rules::{Adaptive, Rule};

/// The server.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Server {
    Loss {
        slots: usize,
        service: Duration,
        failure: f64,
    },
    Collapse {
        slots: usize,
        service: Duration,
        timeout: Duration,
    },
}

/// How the delay before a retry is chosen.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Delay {
    /// One attempt only.
    NoRetry,
    /// The backoff's own schedule (its shape and jitter).
    Backoff,
    /// An adaptive delay, jittered by the backoff's jitter.
    Adaptive(Rule),
}

/// The load.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Load {
    /// Tasks per second (open loop), or workers (closed loop), before and after the spike.
    pub base: f64,
    /// The spike multiplies the load by this.
    pub spike: f64,
    pub spike_at: Duration,
    pub spike_for: Duration,
    pub horizon: Duration,
    /// Workers that run tasks back to back, instead of Poisson arrivals.
    pub closed: bool,
}

/// One simulated policy.
#[derive(Clone, Debug)]
pub struct Setup {
    pub attempts: u32,
    pub backoff: Backoff,
    pub delay: Delay,
    /// A shared retry budget (breaker off) for every task.
    pub budget: Option<KeyRules>,
    pub server: Server,
    pub load: Load,
    pub seed: u64,
}

/// What the tasks went through.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Report {
    pub tasks: u64,
    pub succeeded: u64,
    pub gave_up: u64,
    /// Completion times of the tasks that succeeded, in seconds, sorted.
    pub times: Vec<f64>,
    pub attempts: u64,
    /// The most attempts in one second.
    pub peak_rate: u64,
    /// From the spike's end until the attempt rate is back within 10% of its rate before the
    /// spike (10-second means); `None` if it is not by the end.
    pub back_to_baseline: Option<Duration>,
}

impl Report {
    /// E[T] over the tasks that succeeded.
    pub fn mean(&self) -> f64 {
        self.times.iter().sum::<f64>() / self.times.len().max(1) as f64
    }

    /// The share of all tasks that succeeded within `threshold` seconds.
    pub fn within(&self, threshold: f64) -> f64 {
        let fast = self.times.partition_point(|t| *t < threshold);
        fast as f64 / self.tasks.max(1) as f64
    }

    /// The q-quantile of the successful tasks' times.
    pub fn quantile(&self, q: f64) -> f64 {
        if self.times.is_empty() {
            return f64::NAN;
        }
        let i = ((self.times.len() - 1) as f64 * q).round() as usize;
        self.times[i.min(self.times.len() - 1)]
    }
}

struct Task<'a> {
    arrived: Nanos,
    attempt: u32,
    /// The task's own schedule, as a run of retry has.
    schedule: Schedule<'a>,
    /// The adaptive delay's own state.
    adaptive: Option<Adaptive>,
    shared: Option<Shared>,
    worker: Option<usize>,
}

enum Event {
    /// The next open-loop arrival.
    Arrival,
    /// A worker starts a task.
    Worker(usize),
    /// A task's attempt reaches the server.
    Attempt(usize),
    /// The attempt's answer reaches the client.
    Answer(usize, bool),
    /// The server finishes a request (the collapse model, whose work outlives timeouts).
    Release,
}

/// A task that starts at `now`: a run of retry with the setup's policy.
fn task<'a>(s: &'a Setup, store: &MemoryStore, now: Nanos, worker: Option<usize>) -> Task<'a> {
    let shared = s.budget.as_ref().map(|b| {
        let mut h = Shared::new("spike".into(), b.clone(), Box::new(store.clone()));
        store.now.set(now / 1_000_000);
        // The breaker is off: every task is let in.
        let _ = h.admit();
        h
    });
    Task {
        arrived: now,
        attempt: 0,
        schedule: s.backoff.schedule(),
        adaptive: match s.delay {
            Delay::Adaptive(rule) => Some(Adaptive::new(rule, &s.backoff)),
            _ => None,
        },
        shared,
        worker,
    }
}

/// Runs the scenario once.
pub fn run(s: &Setup) -> Report {
    let mut arrivals = stream(s.seed, Component::Arrivals);
    let mut server_rng = stream(s.seed, Component::Server);
    let mut rng = stream(s.seed, Component::Policy);
    let horizon = nanos(s.load.horizon);
    let (spike_at, spike_end) = (
        nanos(s.load.spike_at),
        nanos(s.load.spike_at + s.load.spike_for),
    );
    let load_at = |t: Nanos| {
        if (spike_at..spike_end).contains(&t) {
            s.load.base * s.load.spike
        } else {
            s.load.base
        }
    };
    let store = MemoryStore::default();
    let mut history = History::default();
    let mut queue = Queue::default();
    let mut tasks: Vec<Task> = Vec::new();
    let mut busy = 0usize;
    let mut per_second = vec![0u64; usize::try_from(horizon / 1_000_000_000 + 1).unwrap_or(1)];
    let mut report = Report::default();
    // Workers of the closed loop: the base number, and more during the spike.
    let workers = |t: Nanos| load_at(t).round() as usize;
    if s.load.closed {
        for w in 0..workers(spike_at) {
            let start = if w < workers(0) { 0 } else { spike_at };
            queue.at(start, Event::Worker(w));
        }
    } else {
        queue.at(0, Event::Arrival);
    }
    let service_time = |rng: &mut _, mean: Duration| -> Nanos {
        // A positive rate: always a valid distribution.
        let exp = Exp::new(1.0 / mean.as_secs_f64().max(1e-9)).unwrap_or_else(|_| unreachable!());
        (exp.sample(rng) * 1e9) as Nanos
    };

    while let Some(event) = queue.pop() {
        let now = queue.now();
        match event {
            Event::Arrival => {
                if now >= horizon {
                    continue;
                }
                tasks.push(task(s, &store, now, None));
                queue.at(now, Event::Attempt(tasks.len() - 1));
                let rate = load_at(now).max(1e-9);
                let gap = Exp::new(rate).map_or(1.0, |e| e.sample(&mut arrivals));
                let next = now.saturating_add((gap * 1e9) as Nanos);
                // Memoryless: an arrival that would cross a change of rate starts again there.
                let boundary = [spike_at, spike_end]
                    .into_iter()
                    .find(|b| now < *b && next > *b);
                match boundary {
                    Some(b) => {
                        let gap =
                            Exp::new(load_at(b).max(1e-9)).map_or(1.0, |e| e.sample(&mut arrivals));
                        queue.at(b.saturating_add((gap * 1e9) as Nanos), Event::Arrival);
                    }
                    None => queue.at(next, Event::Arrival),
                }
            }
            Event::Worker(w) => {
                let active = w < workers(now);
                if now < horizon && active {
                    tasks.push(task(s, &store, now, Some(w)));
                    queue.at(now, Event::Attempt(tasks.len() - 1));
                }
            }
            Event::Attempt(id) => {
                let task = &mut tasks[id];
                task.attempt += 1;
                report.attempts += 1;
                if let Some(c) =
                    per_second.get_mut(usize::try_from(now / 1_000_000_000).unwrap_or(usize::MAX))
                {
                    *c += 1;
                }
                match s.server {
                    Server::Loss {
                        slots,
                        service,
                        failure,
                    } => {
                        if busy >= slots {
                            queue.after(1_000_000, Event::Answer(id, false));
                        } else {
                            busy += 1;
                            let ok = server_rng.random::<f64>() >= failure;
                            let t = service_time(&mut server_rng, service);
                            queue.after(t, Event::Release);
                            queue.after(t, Event::Answer(id, ok));
                        }
                    }
                    Server::Collapse {
                        slots,
                        service,
                        timeout,
                    } => {
                        busy += 1;
                        let slow = (busy as f64 / slots as f64).max(1.0);
                        let t = (service_time(&mut server_rng, service) as f64 * slow) as Nanos;
                        queue.after(t, Event::Release);
                        let limit = nanos(timeout);
                        queue.after(t.min(limit), Event::Answer(id, t <= limit));
                    }
                }
            }
            Event::Release => busy = busy.saturating_sub(1),
            Event::Answer(id, ok) => {
                let now_ms = now / 1_000_000;
                history.record(now_ms, ok);
                let task = &mut tasks[id];
                let more = !ok && task.attempt < s.attempts && s.delay != Delay::NoRetry;
                let mut retry = more;
                if let Some(shared) = &mut task.shared {
                    store.now.set(now_ms);
                    let counted = if ok {
                        Attempt::Success
                    } else {
                        Attempt::Failure
                    };
                    if let Ok((_, Some(_))) = shared.after_attempt(counted, more, 0.0) {
                        retry = false;
                    }
                }
                if retry {
                    let delay = match &mut task.adaptive {
                        Some(adaptive) => {
                            adaptive.jittered(&s.backoff, task.attempt, &history, now_ms, &mut rng)
                        }
                        None => task.schedule.next_delay(&mut rng),
                    };
                    queue.after(nanos(delay), Event::Attempt(id));
                    continue;
                }
                report.tasks += 1;
                if ok {
                    report.succeeded += 1;
                    report
                        .times
                        .push(now.saturating_sub(task.arrived) as f64 / 1e9);
                } else {
                    report.gave_up += 1;
                }
                if let Some(w) = task.worker {
                    queue.at(now, Event::Worker(w));
                }
            }
        }
    }
    report.times.sort_by(f64::total_cmp);
    report.peak_rate = per_second.iter().copied().max().unwrap_or(0);
    report.back_to_baseline = back_to_baseline(&per_second, spike_at, spike_end);
    report
}

/// From the spike's end, the first second at which the 10-second mean attempt rate is within
/// 10% of its mean over the minute before the spike.
fn back_to_baseline(per_second: &[u64], spike_at: Nanos, spike_end: Nanos) -> Option<Duration> {
    let at = usize::try_from(spike_at / 1_000_000_000).ok()?;
    let end = usize::try_from(spike_end / 1_000_000_000).ok()?;
    let before = &per_second[at.saturating_sub(60)..at];
    let baseline = before.iter().sum::<u64>() as f64 / before.len().max(1) as f64;
    (end..per_second.len().saturating_sub(10))
        .find(|&t| {
            let mean = per_second[t..t + 10].iter().sum::<u64>() as f64 / 10.0;
            mean <= baseline * 1.1
        })
        .map(|t| Duration::from_secs((t - end) as u64))
}
