//! Oracle: "Fixing retries with token buckets and circuit breakers" (Marc Brooker, 2022), the
//! model of its simulator (mbrooker/simulator_example, `retry_sim/`): clients each start
//! calls at a Poisson rate, without a limit on calls in flight; every one-way message takes an
//! exponential time of mean 10 ms; the server fails each call with probability f, whatever
//! the load. A failed call is retried at once (no backoff) while the strategy allows it. New
//! calls stop after 10 s and the calls under way finish. Load amplification is calls made /
//! calls started (unique requests).
//!
//! His strategies, as his code has them: 3 retries; his token bucket (per client, 5 tokens,
//! each new call adds 0.1, a retry takes one while more than one is left); his breaker (per
//! client: no retry while failures / calls > 10%). Beside them, retry's own budget and
//! breaker, per client (`--key` on each host) or shared (`--key --state`), each run one call
//! of the model with `-n 4`.

use std::time::Duration;

use rand::RngExt;
use rand_distr::{Distribution, Exp};

use retry::policy::shared::KeyRules;
use retry::sim::{Component, Nanos, Queue, nanos, stream};
use retry::state::Shared;

use super::keyed::{Keyed, Scope};

/// Who decides whether a failed call is retried.
#[derive(Clone, Debug)]
pub enum Strategy {
    /// N retries, no more.
    Retries(u32),
    /// His token bucket: per client, `size` tokens, each new call adds `fill`.
    Bucket { fill: f64, size: f64 },
    /// His breaker: per client, no retry while failures / calls exceeds `rate`; else N retries.
    Breaker { rate: f64, retries: u32 },
    /// retry's breaker and budget (`settings`), with `-n retries+1`.
    Retry {
        settings: KeyRules,
        scope: Scope,
        retries: u32,
    },
}

/// The world: clients, their rate, the failure probability, how long new calls start.
#[derive(Clone, Copy, Debug)]
pub struct World {
    pub clients: usize,
    pub rate: f64,
    pub failure: f64,
    pub duration: Duration,
    pub seed: u64,
}

/// What the clients did.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Report {
    /// Calls started by the clients: unique requests.
    pub unique: u64,
    /// Calls that reached the server, retries included.
    pub total: u64,
    pub successes: u64,
    /// Calls retry's breaker refused before their first attempt.
    pub refused: u64,
}

impl Report {
    /// Calls made per unique request.
    pub fn amplification(&self) -> f64 {
        self.total as f64 / self.unique.max(1) as f64
    }

    /// The share of unique requests that succeeded.
    pub fn goodput(&self) -> f64 {
        self.successes as f64 / self.unique.max(1) as f64
    }
}

/// A call under way.
struct Call {
    client: usize,
    tries: u32,
    shared: Option<Shared>,
}

enum Event {
    /// A client starts its next call.
    Start(usize),
    /// A call's attempt reaches the server.
    Server(usize),
    /// The answer reaches the client.
    Answer(usize, bool),
}

/// Per-client state of his strategies.
#[derive(Clone, Copy, Default)]
struct Client {
    bucket: f64,
    calls: f64,
    failures: f64,
}

pub fn run(strategy: &Strategy, w: &World) -> Report {
    let mut arrivals = stream(w.seed, Component::Arrivals);
    let mut net = stream(w.seed, Component::Network);
    let mut server = stream(w.seed, Component::Server);
    let mut policy = stream(w.seed, Component::Policy);
    // A positive rate: always a valid distribution.
    let gap = Exp::new(w.rate.max(1e-9)).unwrap_or_else(|_| unreachable!());
    let rtt = Exp::new(100.0).unwrap_or_else(|_| unreachable!());
    let secs = |x: f64| (x * 1e9) as Nanos;
    let end = nanos(w.duration);
    let keyed = match strategy {
        Strategy::Retry {
            settings, scope, ..
        } => Some(Keyed::new(settings.clone(), *scope, w.clients)),
        _ => None,
    };
    let mut clients = vec![
        Client {
            bucket: match strategy {
                Strategy::Bucket { size, .. } => *size,
                _ => 0.0,
            },
            ..Client::default()
        };
        w.clients
    ];
    let mut calls: Vec<Call> = Vec::new();
    let mut queue = Queue::default();
    let mut report = Report::default();
    for c in 0..w.clients {
        queue.at(secs(rtt.sample(&mut net)), Event::Start(c));
    }
    while let Some(event) = queue.pop() {
        let now = queue.now();
        match event {
            Event::Start(c) => {
                if now > end {
                    continue;
                }
                queue.after(secs(gap.sample(&mut arrivals)), Event::Start(c));
                report.unique += 1;
                let client = &mut clients[c];
                match strategy {
                    Strategy::Bucket { fill, size } => {
                        client.bucket = (client.bucket + fill).min(*size);
                    }
                    Strategy::Breaker { .. } => client.calls += 1.0,
                    _ => {}
                }
                let shared = match &keyed {
                    Some(k) => match k.begin(c, now) {
                        Some(s) => Some(s),
                        None => {
                            report.refused += 1;
                            continue;
                        }
                    },
                    None => None,
                };
                calls.push(Call {
                    client: c,
                    tries: 0,
                    shared,
                });
                queue.after(secs(rtt.sample(&mut net)), Event::Server(calls.len() - 1));
            }
            Event::Server(id) => {
                report.total += 1;
                calls[id].tries += 1;
                let ok = server.random::<f64>() >= w.failure;
                queue.after(secs(rtt.sample(&mut net)), Event::Answer(id, ok));
            }
            Event::Answer(id, ok) => {
                let call = &mut calls[id];
                let c = call.client;
                let client = &mut clients[c];
                let retries_made = call.tries - 1;
                let retry = match strategy {
                    _ if ok => false,
                    Strategy::Retries(n) => retries_made < *n,
                    Strategy::Bucket { .. } => {
                        let take = client.bucket > 1.0;
                        if take {
                            client.bucket -= 1.0;
                        }
                        take
                    }
                    Strategy::Breaker { rate, retries } => {
                        client.failures += 1.0;
                        client.failures / client.calls <= *rate && retries_made < *retries
                    }
                    Strategy::Retry { retries, .. } => retries_made < *retries,
                };
                let retry = match (&keyed, call.shared.as_mut()) {
                    (Some(k), Some(shared)) => {
                        k.after(shared, c, now, ok, retry, &mut policy)
                            && k.before_retry(shared, c, now)
                    }
                    _ => retry,
                };
                if ok {
                    report.successes += 1;
                } else if retry {
                    queue.after(secs(rtt.sample(&mut net)), Event::Server(id));
                }
            }
        }
    }
    report
}

/// Mean amplification and goodput over `seeds` runs.
pub fn mean(strategy: &Strategy, w: &World, seeds: std::ops::Range<u64>) -> (f64, f64, f64) {
    let reports: Vec<Report> = seeds
        .map(|seed| run(strategy, &World { seed, ..*w }))
        .collect();
    let n = reports.len().max(1) as f64;
    (
        reports.iter().map(Report::amplification).sum::<f64>() / n,
        reports.iter().map(Report::goodput).sum::<f64>() / n,
        reports
            .iter()
            .map(|r| r.refused as f64 / r.unique.max(1) as f64)
            .sum::<f64>()
            / n,
    )
}

/// Three retries amplify load by 1 + f + f² + f³ = (1 − f⁴) / (1 − f).
pub fn three_retries(f: f64) -> f64 {
    1.0 + f + f * f + f * f * f
}

#[cfg(test)]
mod tests {
    use super::*;

    fn world(clients: usize, rate: f64, failure: f64) -> World {
        World {
            clients,
            rate,
            failure,
            duration: Duration::from_secs(2),
            seed: 1,
        }
    }

    fn settings(args: &[&str]) -> KeyRules {
        let p = retry::setup::from_flags(&[&["--key", "k"], args].concat()).expect("a policy");
        p.state.expect("--key").rules
    }

    #[test]
    fn three_retries_amplify_as_the_formula_says() {
        for f in [0.0, 0.5, 1.0] {
            let (a, _, _) = mean(&Strategy::Retries(3), &world(20, 10.0, f), 0..4);
            let want = three_retries(f);
            assert!((a / want - 1.0).abs() < 0.03, "f {f}: {a} against {want}");
        }
    }

    #[test]
    fn his_bucket_and_breaker_stop_most_retries_when_everything_fails() {
        let w = World {
            duration: Duration::from_secs(10),
            ..world(20, 10.0, 1.0)
        };
        let (bucket, _, _) = mean(
            &Strategy::Bucket {
                fill: 0.1,
                size: 5.0,
            },
            &w,
            0..2,
        );
        let (breaker, _, _) = mean(
            &Strategy::Breaker {
                rate: 0.1,
                retries: 3,
            },
            &w,
            0..2,
        );
        assert!((1.08..1.2).contains(&bucket), "{bucket}");
        assert!((1.0..1.02).contains(&breaker), "{breaker}");
    }

    #[test]
    fn a_shared_budget_stops_retries_that_a_budget_per_client_lets_through() {
        let budget = settings(&["--breaker-failures", "0"]);
        let w = world(50, 10.0, 1.0);
        let strategy = |scope| Strategy::Retry {
            settings: budget.clone(),
            scope,
            retries: 3,
        };
        let (per_client, _, _) = mean(&strategy(Scope::PerClient), &w, 0..2);
        let (shared, _, _) = mean(&strategy(Scope::Shared), &w, 0..2);
        // 10 tokens each against about 20 calls each: half of them retried, 3 times or less.
        assert!(per_client > 1.3, "{per_client}");
        // 10 tokens for the thousand calls of the fleet.
        assert!(shared < 1.02, "{shared}");
    }

    #[test]
    fn retrys_breaker_refuses_calls_once_it_opens() {
        let breaker = settings(&["--budget-burst", "0"]);
        let w = world(20, 10.0, 1.0);
        let r = run(
            &Strategy::Retry {
                settings: breaker,
                scope: Scope::Shared,
                retries: 3,
            },
            &w,
        );
        // Five failures in a row open it: the calls under way then, and no other.
        assert!(r.total <= 20, "{r:?}");
        assert!(r.refused as f64 > 0.9 * r.unique as f64, "{r:?}");
        assert!(r.amplification() < 0.1, "{r:?}");
    }
}
