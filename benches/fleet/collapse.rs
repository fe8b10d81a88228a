//! Oracle: Brooker's metastable collapse (mbrooker/simulator_example, `simple_collapse_sim/`).
//! Requests arrive at a Poisson rate; each is a client that sends it, times out after 3 s and
//! tries again, 3 attempts in all. Every one-way message takes an exponential time of mean
//! 100 ms. The server has no queue and no limit: a request takes 1 s + 0.01 s × the requests
//! in its hands (itself included), and it finishes what the client gave up on. Two loads, as
//! his: 40/s with a spike to 80/s from 20 s to 25 s, and a ramp from 40/s up to 80/s at 25 s
//! and down again (back to 40/s at 50 s, nothing at 75 s); 80 s in all, 10 runs each.
//!
//! His clients retry at once ("no backoff") or after U(0, 20 s) and then U(0, 40 s) ("backoff
//! and jitter"). retry's: its own backoff (`-n 3 --attempt-timeout 3s` with `-d 0`, with
//! `-d 20s`, the same delays as his, and with its defaults), and its breaker and budget shared
//! by every client (`--key --state`): a request is one run of retry.

use std::time::Duration;

use rand::RngExt;
use rand::rngs::ChaCha8Rng;
use rand_distr::{Distribution, Exp};

use retry::policy::backoff::{Backoff, Schedule};
use retry::policy::shared::KeyRules;
use retry::sim::{Component, Nanos, Queue, nanos, stream};
use retry::state::Shared;

use super::keyed::{Keyed, Scope};

/// The simulated time, as his.
pub const HORIZON_S: u64 = 80;
const TIMEOUT: f64 = 3.0;
const ATTEMPTS: u32 = 3;

/// The load.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Load {
    /// 40/s, 80/s from 20 s to 25 s.
    Spike,
    /// 40/s rising to 80/s at 25 s, back to 40/s at 50 s, to nothing at 75 s.
    Ramp,
}

impl Load {
    fn rate(self, t: f64) -> f64 {
        match self {
            Load::Spike if (20.0..=25.0).contains(&t) => 80.0,
            Load::Spike => 40.0,
            Load::Ramp => 80.0 - 1.6 * (t - 25.0).abs(),
        }
    }

    /// When the load is back to its base: the trigger's end.
    pub fn trigger_end(self) -> u64 {
        match self {
            Load::Spike => 25,
            Load::Ramp => 50,
        }
    }
}

/// How a client waits before its next attempt.
#[derive(Clone, Debug)]
pub enum Client {
    /// His backoff and jitter: U(0, 20 s), then U(0, 40 s).
    Brooker,
    /// retry's backoff, and with `key` its breaker and budget, shared by every client.
    Retry {
        backoff: Backoff,
        key: Option<KeyRules>,
    },
}

/// Per second of the run.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Report {
    pub arrivals: Vec<u64>,
    pub successes: Vec<u64>,
    /// Attempts that reached the server.
    pub attempts: Vec<u64>,
    /// Requests retry's breaker refused before their first attempt.
    pub refused: u64,
}

impl Report {
    /// Attempts made per request.
    pub fn amplification(&self) -> f64 {
        self.attempts.iter().sum::<u64>() as f64 / self.arrivals.iter().sum::<u64>().max(1) as f64
    }

    /// Successes per second from `from` to the end.
    pub fn goodput(&self, from: u64) -> f64 {
        let tail = &self.successes[(from as usize).min(self.successes.len())..];
        tail.iter().sum::<u64>() as f64 / tail.len().max(1) as f64
    }

    /// Seconds from `from` until the server is back for good: from then to the end, every
    /// ten seconds in a row answer 85% of the requests that arrived in them (answers come a
    /// second or two after their requests, and arrivals are random). `None` if the last ten
    /// seconds do not.
    pub fn recovered(&self, from: u64) -> Option<u64> {
        const WINDOW: usize = 10;
        let end = self.arrivals.len().saturating_sub(WINDOW);
        let good = |s: usize| {
            let ok: u64 = self.successes[s..s + WINDOW].iter().sum();
            let came: u64 = self.arrivals[s..s + WINDOW].iter().sum();
            ok as f64 >= 0.85 * came as f64
        };
        let last_bad = (from as usize..=end).rev().find(|&s| !good(s));
        match last_bad {
            None => Some(0),
            Some(s) if s >= end => None,
            Some(s) => Some(s as u64 + 1 - from),
        }
    }
}

struct Request<'a> {
    try_no: u32,
    schedule: Option<Schedule<'a>>,
    /// His client's backoff.
    backoff_s: f64,
    shared: Option<Shared>,
}

enum Event {
    Arrival,
    /// A request's attempt is sent (after its wait).
    Send(usize),
    /// The attempt reaches the server.
    Start(usize, u32),
    /// The server is done with it.
    End(usize, u32),
    /// The answer reaches the client.
    Reply(usize, u32),
    Timeout(usize, u32),
}

pub fn run(load: Load, client: &Client, seed: u64) -> Report {
    let mut arrivals = stream(seed, Component::Arrivals);
    let mut net = stream(seed, Component::Network);
    let mut rng: ChaCha8Rng = stream(seed, Component::Policy);
    // A positive rate: always a valid distribution.
    let net_delay = Exp::new(10.0).unwrap_or_else(|_| unreachable!());
    let at = |s: f64| (s.max(0.0) * 1e9) as Nanos;
    let keyed = match client {
        Client::Retry { key: Some(s), .. } => Some(Keyed::new(s.clone(), Scope::Shared, 1)),
        _ => None,
    };
    let seconds = HORIZON_S as usize;
    let mut report = Report {
        arrivals: vec![0; seconds],
        successes: vec![0; seconds],
        attempts: vec![0; seconds],
        refused: 0,
    };
    let second = |t: Nanos| ((t / 1_000_000_000) as usize).min(seconds - 1);
    let mut requests: Vec<Request> = Vec::new();
    let mut concurrency = 0u64;
    let mut queue = Queue::default();
    queue.at(at(0.01), Event::Arrival);
    while let Some(event) = queue.pop() {
        let now = queue.now();
        if now >= nanos(Duration::from_secs(HORIZON_S)) {
            break;
        }
        let t = now as f64 / 1e9;
        match event {
            Event::Arrival => {
                let rate = load.rate(t);
                if rate > 0.0 {
                    let gap = Exp::new(rate).map_or(1.0, |e| e.sample(&mut arrivals));
                    queue.at(at(t + gap), Event::Arrival);
                }
                report.arrivals[second(now)] += 1;
                let shared = match &keyed {
                    Some(k) => match k.begin(0, now) {
                        Some(s) => Some(s),
                        None => {
                            report.refused += 1;
                            continue;
                        }
                    },
                    None => None,
                };
                requests.push(Request {
                    try_no: 0,
                    schedule: match client {
                        Client::Retry { backoff, .. } => Some(backoff.schedule()),
                        Client::Brooker => None,
                    },
                    backoff_s: 10.0,
                    shared,
                });
                queue.at(now, Event::Send(requests.len() - 1));
            }
            Event::Send(id) => {
                let r = &mut requests[id];
                if r.try_no > 0
                    && let (Some(k), Some(shared)) = (&keyed, r.shared.as_mut())
                    && !k.before_retry(shared, 0, now)
                {
                    continue;
                }
                queue.at(at(t + TIMEOUT), Event::Timeout(id, r.try_no));
                let reach = at(t + net_delay.sample(&mut net));
                queue.at(reach, Event::Start(id, r.try_no));
            }
            Event::Start(id, try_no) => {
                report.attempts[second(now)] += 1;
                concurrency += 1;
                let took = 1.0 + 0.01 * concurrency as f64;
                queue.at(at(t + took), Event::End(id, try_no));
            }
            Event::End(id, try_no) => {
                concurrency -= 1;
                queue.at(at(t + net_delay.sample(&mut net)), Event::Reply(id, try_no));
            }
            Event::Reply(id, try_no) => {
                let r = &mut requests[id];
                // An answer to an attempt the client gave up on is ignored.
                if try_no != r.try_no {
                    continue;
                }
                r.try_no += 1;
                report.successes[second(now)] += 1;
                if let (Some(k), Some(shared)) = (&keyed, r.shared.as_mut()) {
                    k.after(shared, 0, now, true, false, &mut rng);
                }
            }
            Event::Timeout(id, try_no) => {
                let r = &mut requests[id];
                if try_no != r.try_no {
                    continue;
                }
                r.try_no += 1;
                let mut retry = r.try_no < ATTEMPTS;
                if let (Some(k), Some(shared)) = (&keyed, r.shared.as_mut()) {
                    retry = k.after(shared, 0, now, false, retry, &mut rng);
                }
                if !retry {
                    continue;
                }
                let wait = match &mut r.schedule {
                    Some(schedule) => schedule.next_delay(&mut rng).as_secs_f64(),
                    None => {
                        r.backoff_s *= 2.0;
                        rng.random::<f64>() * r.backoff_s
                    }
                };
                queue.at(at(t + wait), Event::Send(id));
            }
        }
    }
    report
}

#[cfg(test)]
mod tests {
    use super::*;

    fn retry(args: &[&str]) -> Client {
        let p = retry::setup::from_flags(&[&["-n", "3", "--attempt-timeout", "3s"], args].concat())
            .expect("a policy");
        Client::Retry {
            backoff: p.backoff.clone(),
            key: p.state.map(|s| s.rules),
        }
    }

    #[test]
    fn without_backoff_the_spike_leaves_the_server_collapsed_and_with_a_shared_budget_it_recovers()
    {
        let none = run(Load::Spike, &retry(&["-d", "0"]), 1);
        assert_eq!(none.recovered(25), None, "{:?}", none.successes);
        assert!(none.amplification() > 2.0, "{}", none.amplification());
        let budget = run(
            Load::Spike,
            &retry(&["-d", "0", "--key", "k", "--breaker-failures", "0"]),
            1,
        );
        let back = budget.recovered(25);
        assert!(
            back.is_some_and(|s| s < 30),
            "{back:?} {:?}",
            budget.successes
        );
        assert!(budget.amplification() < 1.2, "{}", budget.amplification());
    }

    #[test]
    fn before_the_spike_every_request_is_answered() {
        let r = run(Load::Spike, &Client::Brooker, 2);
        let (ok, came): (u64, u64) = (
            r.successes[5..15].iter().sum(),
            r.arrivals[5..15].iter().sum(),
        );
        assert!(ok as f64 > 0.95 * came as f64, "{ok} of {came}");
    }

    #[test]
    fn the_server_is_back_when_every_later_window_answers_most_requests() {
        let report = |successes: Vec<u64>| Report {
            arrivals: vec![10; successes.len()],
            successes,
            ..Report::default()
        };
        let mut ok = vec![10; 40];
        assert_eq!(report(ok.clone()).recovered(3), Some(0));
        // Nothing answered from 4 to 7: a window that holds two of those seconds answers 80%
        // at most; the last that does starts at 6, so the server is back at 7. One second
        // without answers in ten is not enough to count.
        ok[4..8].fill(0);
        ok[20] = 0;
        assert_eq!(report(ok.clone()).recovered(3), Some(4));
        ok[35..37].fill(0);
        assert_eq!(report(ok).recovered(3), None);
    }
}
