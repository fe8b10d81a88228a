//! The adaptive delay (`--backoff adaptive`), after the seed paper on Celery: the delay before a retry is
//! learned from a key's recent outcomes,
//!
//! Δt(n+1) = α·Δt(n) + β·f(p_s, λ),  f = (1 − p_s) / λ,
//!
//! with p_s the recent probability of success and λ the intensity of attempts on the key, then
//! blended with the exponential delay by γ, capped and jittered as every delay is. Pure: the
//! history and the time come from the caller (the key's state), so the simulator and the tests
//! run the same arithmetic as a real run.
//!
//! The paper leaves its estimators open; these are the choices, and why:
//! - p_s: the share of successes among the key's last [`KEPT`] attempts within [`WINDOW`],
//!   with a Beta(1, 1) prior, `(successes + 1) / (attempts + 2)`: a new key, or one quiet for a
//!   while, starts at ½ rather than at a certainty that one lucky or unlucky attempt would set.
//! - λ: attempts per second over the same outcomes, `(n − 1) / (newest − oldest)`; with fewer
//!   than two, or all at one instant, the prior of one attempt per base delay.
//! - Δt(0) is the base delay (`--delay`).

use std::collections::VecDeque;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::backoff::Backoff;

/// Outcomes kept per key: enough for a stable share, few enough for a small state file.
pub const KEPT: usize = 32;
/// Outcomes older than this say nothing about now.
pub const WINDOW: Duration = Duration::from_secs(600);

/// The paper's smoothing parameters.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Params {
    /// Weight of the previous adaptive delay.
    pub alpha: f64,
    /// Weight of f(p_s, λ).
    pub beta: f64,
    /// Weight of the adaptive delay against the exponential one: 1 is adaptive alone, 0 plain
    /// exponential.
    pub gamma: f64,
}

impl Default for Params {
    fn default() -> Self {
        Params {
            alpha: 0.5,
            beta: 1.0,
            gamma: 0.5,
        }
    }
}

/// The parameters `--backoff adaptive` uses. The paper gives no values for α, β or γ; these are
/// chosen in the simulator's scenario B (`cargo bench --bench fleet --features research -- tune`),
/// over a grid of α ∈ {0, ½, 0.9}, β ∈ {1, 3, 10, 30, 100, 300} and γ ∈ {½, 1}, on seeds held out
/// from the ones the bench reports on: the setting with the highest share of all tasks done within
/// 2 s, the mean over its four cases. It is half the paper's recurrence, half the exponential
/// delay. (Plain exponential backoff and equal jitter score as high.)
pub const RULE: Params = Params {
    alpha: 0.5,
    beta: 100.0,
    gamma: 0.5,
};

/// A run's adaptive delay: the paper's recurrence with its parameters, and the previous
/// adaptive delay Δt(n).
#[derive(Clone, Debug, PartialEq)]
pub struct Adaptive {
    pub params: Params,
    previous: Duration,
}

impl Adaptive {
    /// A run's first retry starts from Δt(0) = the base delay.
    pub fn new(params: Params, backoff: &Backoff) -> Adaptive {
        Adaptive {
            params,
            previous: backoff.delay,
        }
    }

    /// The delay before retry `k` from the estimates, capped and jittered as every delay is
    /// (the adaptive delay excludes decorrelated jitter, the one that needs the delay before).
    pub fn jittered<R: rand::Rng + ?Sized>(
        &mut self,
        backoff: &Backoff,
        k: u32,
        e: &Estimates,
        rng: &mut R,
    ) -> Duration {
        backoff.jitter(self.next(backoff, k, e), Duration::ZERO, rng)
    }

    /// The delay before retry `k` from the estimates, capped, before jitter.
    pub fn next(&mut self, backoff: &Backoff, k: u32, e: &Estimates) -> Duration {
        let (adaptive, blended) = next(
            &self.params,
            self.previous,
            e,
            backoff.base(k),
            backoff.max_delay,
        );
        self.previous = adaptive;
        blended
    }
}

/// One attempt on the key: when it ended (ms on the store's clock) and whether it succeeded.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Outcome {
    pub at: u64,
    pub success: bool,
}

/// The key's latest outcomes, oldest first, at most [`KEPT`].
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct History(VecDeque<Outcome>);

impl History {
    pub fn record(&mut self, at: u64, success: bool) {
        self.0.push_back(Outcome { at, success });
        while self.0.len() > KEPT {
            self.0.pop_front();
        }
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The outcomes, oldest first.
    pub fn outcomes(&self) -> impl Iterator<Item = &Outcome> {
        self.0.iter()
    }

    /// Their times, to move them to another timeline.
    pub fn times_mut(&mut self) -> impl Iterator<Item = &mut u64> {
        self.0.iter_mut().map(|o| &mut o.at)
    }

    /// Keeps every time at or before `now`, as a store's clock can only have seen, and the
    /// list at most [`KEPT`] long, whatever a file said.
    pub fn clamp(&mut self, now: u64) {
        for o in &mut self.0 {
            o.at = o.at.min(now);
        }
        while self.0.len() > KEPT {
            self.0.pop_front();
        }
    }

    /// What the outcomes say at `now` once an attempt that just failed is counted too: what a
    /// delay is computed from, since one is only asked for after a failure.
    pub fn estimate_after_failure(&self, now: u64, base: Duration) -> Estimates {
        let mut with = self.clone();
        with.record(now, false);
        with.estimate(now, base)
    }

    /// What the outcomes within [`WINDOW`] of `now` say.
    pub fn estimate(&self, now: u64, base: Duration) -> Estimates {
        let since = now.saturating_sub(u64::try_from(WINDOW.as_millis()).unwrap_or(u64::MAX));
        let recent: Vec<&Outcome> = self.0.iter().filter(|o| o.at >= since).collect();
        let n = recent.len();
        let successes = recent.iter().filter(|o| o.success).count();
        let p_s = (successes as f64 + 1.0) / (n as f64 + 2.0);
        let span = match (recent.first(), recent.last()) {
            (Some(first), Some(last)) => last.at.saturating_sub(first.at) as f64 / 1e3,
            _ => 0.0,
        };
        let lambda = if n >= 2 && span > 0.0 {
            (n - 1) as f64 / span
        } else {
            1.0 / base.as_secs_f64().max(1e-3)
        };
        Estimates {
            p_s,
            lambda,
            attempts: n,
        }
    }
}

/// The estimates a delay is computed from.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Estimates {
    /// Probability of success.
    pub p_s: f64,
    /// Attempts per second on the key.
    pub lambda: f64,
    /// Outcomes they rest on.
    pub attempts: usize,
}

/// f(p_s, λ) = (1 − p_s) / λ, in seconds.
pub fn f(e: &Estimates) -> f64 {
    (1.0 - e.p_s) / e.lambda.max(1e-9)
}

/// The next adaptive delay after `previous`, and the delay to wait: blended by γ with the
/// exponential delay `exponential`, and capped (jitter comes after, as for every delay).
pub fn next(
    p: &Params,
    previous: Duration,
    e: &Estimates,
    exponential: Duration,
    cap: Duration,
) -> (Duration, Duration) {
    let adaptive = p.alpha * previous.as_secs_f64() + p.beta * f(e);
    let blended = p.gamma * adaptive + (1.0 - p.gamma) * exponential.as_secs_f64();
    let secs = |s: f64| {
        Duration::try_from_secs_f64(s.max(0.0))
            .unwrap_or(cap)
            .min(cap)
    };
    (secs(adaptive), secs(blended))
}

#[cfg(test)]
mod tests {
    use super::*;

    const BASE: Duration = Duration::from_secs(1);

    #[test]
    fn a_new_key_starts_from_the_prior() {
        let e = History::default().estimate(1000, BASE);
        assert_eq!((e.p_s, e.lambda, e.attempts), (0.5, 1.0, 0));
        assert_eq!(f(&e), 0.5);
    }

    #[test]
    fn the_share_of_successes_and_the_rate_come_from_the_recent_outcomes() {
        let mut h = History::default();
        for i in 0..8u64 {
            h.record(i * 500, i % 4 == 0);
        }
        let e = h.estimate(4000, BASE);
        assert_eq!(e.attempts, 8);
        assert_eq!(e.p_s, 3.0 / 10.0);
        assert_eq!(e.lambda, 7.0 / 3.5);
        assert!((f(&e) - 0.35).abs() < 1e-12);
    }

    #[test]
    fn old_outcomes_fall_out_of_the_window_and_the_list_is_capped() {
        let mut h = History::default();
        for i in 0..100u64 {
            h.record(i, false);
        }
        assert_eq!(h.0.len(), KEPT);
        let later = 100 + 600_001;
        assert_eq!(h.estimate(later, BASE).attempts, 0);
    }

    #[test]
    fn failures_lengthen_the_delay_and_a_busy_key_shortens_it() {
        let p = Params {
            alpha: 0.0,
            beta: 1.0,
            gamma: 1.0,
        };
        let cap = Duration::from_secs(60);
        let failing = Estimates {
            p_s: 0.1,
            lambda: 1.0,
            attempts: 10,
        };
        let healthy = Estimates {
            p_s: 0.9,
            ..failing
        };
        let busy = Estimates {
            lambda: 10.0,
            ..failing
        };
        let d = |e| next(&p, BASE, &e, BASE, cap).1;
        assert!(d(failing) > d(healthy));
        assert!(d(busy) < d(failing));
    }

    #[test]
    fn gamma_blends_with_the_exponential_delay_and_the_cap_holds() {
        let e = Estimates {
            p_s: 0.0,
            lambda: 0.01,
            attempts: 3,
        };
        let cap = Duration::from_secs(30);
        let exponential = Duration::from_secs(4);
        let plain = Params {
            gamma: 0.0,
            ..Params::default()
        };
        assert_eq!(next(&plain, BASE, &e, exponential, cap).1, exponential);
        let (adaptive, waited) = next(&Params::default(), BASE, &e, exponential, cap);
        assert_eq!(adaptive, cap, "f = 100 s is capped");
        assert_eq!(waited, cap, "blended: 0.5·100.5 + 0.5·4, capped");
    }
}
