//! The adaptive-delay rules scenario B compares: the paper's recurrence, which is retry's own
//! (`--backoff adaptive`, [`retry::policy::adaptive`]), and two rules tried beside it while its
//! parameters were tuned (`cargo bench --bench fleet --features research -- tune`) and not
//! kept in the product: the odds of failure, and how long the key's failures have lasted.

use std::time::Duration;

use rand::Rng;
use retry::policy::adaptive::{self, History, Outcome, Params};
use retry::policy::backoff::Backoff;

/// Which adaptive rule turns a key's history into a delay.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Rule {
    /// The paper's recurrence, blended with the exponential delay by γ: retry's own.
    Paper(Params),
    /// The exponential delay scaled by the odds of failure, (1 − p_s) / p_s, times `scale`,
    /// kept within [`lo`, `hi`] times the exponential delay: rare failures are retried soon,
    /// a key where most attempts fail is given room.
    Odds { scale: f64, lo: f64, hi: f64 },
    /// How long the key's failures have lasted: the median time from a failure to the key's
    /// next success, or how long the current run of failures has lasted if that is longer,
    /// times `scale` and the exponential growth of retry k; the exponential delay until the
    /// history knows anything.
    Recovery { scale: f64, grow: bool },
}

/// A task's adaptive delay: retry's own for the paper's rule, else the rule tried beside it.
#[derive(Clone, Debug, PartialEq)]
pub enum Adaptive {
    Paper(adaptive::Adaptive),
    Other(Rule),
}

impl Adaptive {
    /// A task's first retry starts from the base delay.
    pub fn new(rule: Rule, backoff: &Backoff) -> Adaptive {
        match rule {
            Rule::Paper(params) => Adaptive::Paper(adaptive::Adaptive::new(params, backoff)),
            other => Adaptive::Other(other),
        }
    }

    /// The delay before retry `k` from what the key's history says at `now` (ms), capped and
    /// jittered as every delay is.
    pub fn jittered<R: Rng + ?Sized>(
        &mut self,
        backoff: &Backoff,
        k: u32,
        history: &History,
        now: u64,
        rng: &mut R,
    ) -> Duration {
        let e = history.estimate(now, backoff.delay);
        match self {
            Adaptive::Paper(paper) => paper.jittered(backoff, k, &e, rng),
            Adaptive::Other(rule) => {
                let delay = other(*rule, backoff, k, e.p_s, history, now);
                backoff.jitter(delay, Duration::ZERO, rng)
            }
        }
    }
}

/// The delay before retry `k` by the odds or the recovery rule, capped, before jitter.
fn other(rule: Rule, backoff: &Backoff, k: u32, p_s: f64, history: &History, now: u64) -> Duration {
    let exponential = backoff.base(k);
    match rule {
        Rule::Paper(_) => exponential,
        Rule::Odds { scale, lo, hi } => {
            let odds = (1.0 - p_s) / p_s.max(1e-9);
            let factor = (odds * scale).clamp(lo, hi);
            Duration::try_from_secs_f64(exponential.as_secs_f64() * factor)
                .unwrap_or(backoff.max_delay)
                .min(backoff.max_delay)
        }
        Rule::Recovery { scale, grow } => {
            let (recovery, streak) = recovery(history, now);
            let Some(r) = recovery.max(streak) else {
                return exponential;
            };
            let growth = if grow {
                exponential.as_secs_f64() / backoff.delay.as_secs_f64().max(1e-9)
            } else {
                1.0
            };
            Duration::try_from_secs_f64(r.as_secs_f64() * scale * growth)
                .unwrap_or(backoff.max_delay)
                .min(backoff.max_delay)
        }
    }
}

/// Over the outcomes within [`adaptive::WINDOW`] of `now`: the median time from a failure to
/// the key's next success, and how long the key has been failing (since the first of the
/// failures since its last success).
pub fn recovery(history: &History, now: u64) -> (Option<Duration>, Option<Duration>) {
    let window = u64::try_from(adaptive::WINDOW.as_millis()).unwrap_or(u64::MAX);
    let since = now.saturating_sub(window);
    let recent: Vec<&Outcome> = history.outcomes().filter(|o| o.at >= since).collect();
    // For each failure followed by a success, how long the key took to recover.
    let mut recoveries = Vec::new();
    let mut next_success = None;
    for o in recent.iter().rev() {
        if o.success {
            next_success = Some(o.at);
        } else if let Some(s) = next_success {
            recoveries.push(s.saturating_sub(o.at));
        }
    }
    recoveries.sort_unstable();
    let recovery =
        (!recoveries.is_empty()).then(|| Duration::from_millis(recoveries[recoveries.len() / 2]));
    let streak = recent
        .iter()
        .rev()
        .take_while(|o| !o.success)
        .last()
        .map(|first| Duration::from_millis(now.saturating_sub(first.at)));
    (recovery, streak)
}

#[cfg(test)]
mod tests {
    use super::*;
    use retry::policy::backoff::{Jitter, Shape};

    fn backoff() -> Backoff {
        Backoff {
            shape: Shape::Exponential { factor: 2.0 },
            delay: Duration::from_secs(1),
            max_delay: Duration::from_secs(60),
            jitter: Jitter::None,
        }
    }

    #[test]
    fn recovery_is_the_median_time_to_the_next_success_and_streak_the_current_failures() {
        let mut h = History::default();
        // Failures at 0 and 1 s recovered at 4 s; one at 10 s recovered at 11 s; failing
        // again since 20 s.
        for (at, ok) in [(0, false), (1000, false), (4000, true), (10_000, false)] {
            h.record(at, ok);
        }
        for (at, ok) in [(11_000, true), (20_000, false), (25_000, false)] {
            h.record(at, ok);
        }
        let (recovery, streak) = recovery(&h, 30_000);
        // 4 s, 3 s and 1 s: the median is 3 s.
        assert_eq!(recovery, Some(Duration::from_secs(3)));
        assert_eq!(streak, Some(Duration::from_secs(10)));
        assert_eq!(super::recovery(&History::default(), 30_000), (None, None));
    }

    #[test]
    fn the_odds_rule_gives_a_failing_key_room_and_a_healthy_one_little() {
        let (b, h) = (backoff(), History::default());
        let rule = Rule::Odds {
            scale: 1.0,
            lo: 0.1,
            hi: 10.0,
        };
        // Retry 2's exponential delay is 2 s.
        assert_eq!(other(rule, &b, 2, 0.5, &h, 0), Duration::from_secs(2));
        assert_eq!(other(rule, &b, 2, 0.0, &h, 0), Duration::from_secs(20));
        assert_eq!(other(rule, &b, 2, 1.0, &h, 0), Duration::from_millis(200));
    }

    #[test]
    fn the_recovery_rule_falls_back_on_the_exponential_delay_and_grows_with_k() {
        let b = backoff();
        let rule = Rule::Recovery {
            scale: 1.0,
            grow: true,
        };
        assert_eq!(
            other(rule, &b, 3, 0.5, &History::default(), 0),
            Duration::from_secs(4)
        );
        let mut h = History::default();
        h.record(1000, false);
        h.record(4000, true);
        // Recovered in 3 s, times 2^(3-1).
        assert_eq!(other(rule, &b, 3, 0.5, &h, 5000), Duration::from_secs(12));
    }
}
