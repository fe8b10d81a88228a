//! Oracle: gRPC's retry throttling (proposal A6, "Throttling Retry Attempts and Hedged RPCs"):
//! per server, a `token_count` that starts at `maxTokens`; every failed RPC takes 1, every
//! successful one adds `tokenRatio`; while it is at or below `maxTokens / 2`, no RPC is
//! retried. With maxTokens 10 and tokenRatio 0.1: from a full bucket with every call failing,
//! exactly 4 retries; in the long run, retries stop when more than 1 call in 11 fails (9.09%).
//!
//! Beside it, retry's budget (`--budget-burst 10 --budget-ratio 0.1`, the defaults), run by its
//! own code: a retry takes a token, a success adds the ratio, one comes back every
//! `--budget-refill`, and a retry is made while a whole token is left.

use rand::RngExt;

use retry::policy::shared::KeyRules;
use retry::sim::{Component, Nanos, stream};

use super::keyed::{Keyed, Scope};

/// gRPC's throttle.
#[derive(Clone, Copy, Debug)]
pub struct Throttle {
    pub max_tokens: f64,
    pub ratio: f64,
}

impl Throttle {
    pub const A6: Throttle = Throttle {
        max_tokens: 10.0,
        ratio: 0.1,
    };

    /// The failure share above which retries stop in the long run: a failure takes 1, a
    /// success gives `ratio`.
    pub fn threshold(&self) -> f64 {
        self.ratio / (1.0 + self.ratio)
    }
}

/// What a stream of calls, each with up to `attempts` attempts, got retried.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Outcome {
    /// Retries the calls wanted (failed attempts with attempts left).
    pub wanted: u64,
    /// Retries made.
    pub made: u64,
}

impl Outcome {
    pub fn share(&self) -> f64 {
        self.made as f64 / self.wanted.max(1) as f64
    }
}

/// `calls` calls, `gap` apart, each attempt failing with probability `failure`, under gRPC's
/// throttle.
pub fn grpc(t: Throttle, calls: u64, attempts: u32, failure: f64, seed: u64) -> Outcome {
    let mut rng = stream(seed, Component::Server);
    let mut tokens = t.max_tokens;
    let mut out = Outcome::default();
    for _ in 0..calls {
        for attempt in 1..=attempts {
            let ok = rng.random::<f64>() >= failure;
            if ok {
                tokens = (tokens + t.ratio).min(t.max_tokens);
                break;
            }
            tokens = (tokens - 1.0).max(0.0);
            if attempt == attempts {
                break;
            }
            out.wanted += 1;
            if tokens <= t.max_tokens / 2.0 {
                break;
            }
            out.made += 1;
        }
    }
    out
}

/// The same stream under retry's budget (`settings`, its breaker off), on one key, a call
/// every `gap` of the store's clock.
pub fn retry(
    settings: &KeyRules,
    calls: u64,
    attempts: u32,
    failure: f64,
    gap: Nanos,
    seed: u64,
) -> Outcome {
    let mut rng = stream(seed, Component::Server);
    let mut policy = stream(seed, Component::Policy);
    let keyed = Keyed::new(settings.clone(), Scope::Shared, 1);
    let mut out = Outcome::default();
    for call in 0..calls {
        let now = call.saturating_mul(gap);
        let Some(mut shared) = keyed.begin(0, now) else {
            continue;
        };
        for attempt in 1..=attempts {
            let ok = rng.random::<f64>() >= failure;
            let wants = !ok && attempt < attempts;
            out.wanted += u64::from(wants);
            if !keyed.after(&mut shared, 0, now, ok, wants, &mut policy) {
                break;
            }
            out.made += 1;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn budget() -> KeyRules {
        let p =
            retry::setup::from_flags(&["--key", "k", "--breaker-failures", "0"]).expect("a policy");
        p.state.expect("--key").rules
    }

    #[test]
    fn from_a_full_bucket_grpc_retries_4_times_and_retry_10() {
        // Every attempt fails; calls of many attempts, so only the bucket stops them.
        assert_eq!(grpc(Throttle::A6, 20, 5, 1.0, 1).made, 4);
        assert_eq!(retry(&budget(), 20, 5, 1.0, 0, 1).made, 10);
    }

    #[test]
    fn grpc_throttles_past_one_failure_in_eleven() {
        assert!((Throttle::A6.threshold() - 1.0 / 11.0).abs() < 1e-12);
        let below = grpc(Throttle::A6, 50_000, 2, 0.07, 1);
        let above = grpc(Throttle::A6, 50_000, 2, 0.13, 1);
        assert!(below.share() > 0.75, "{below:?}");
        assert!(above.share() < 0.25, "{above:?}");
    }
}
