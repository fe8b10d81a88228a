//! The retry budget a key's runs share (`--budget-*`): a token bucket. A first attempt is always
//! allowed; each retry costs a token; a successful attempt adds a fraction of one; one comes
//! back every refill period; the bucket never holds more than its burst. Pure arithmetic on
//! times the caller gives, in milliseconds on the store's clock.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::breaker::ms;

/// The budget's flags.
#[derive(Clone, Debug, PartialEq)]
pub struct BudgetSettings {
    /// Tokens in a full bucket; 0 turns the budget off.
    pub burst: u32,
    /// Tokens a successful attempt adds.
    pub ratio: f64,
    /// One token comes back every this long.
    pub refill: Duration,
}

impl BudgetSettings {
    pub fn enabled(&self) -> bool {
        self.burst > 0
    }
}

/// Thousandths of a token: whole numbers keep ten successes at 0.1 worth exactly one retry,
/// and are what a Redis script computes with too.
pub const MILLI: u64 = 1000;

impl BudgetSettings {
    /// The burst, in thousandths.
    pub fn burst_milli(&self) -> u64 {
        u64::from(self.burst) * MILLI
    }

    /// What a success adds, in thousandths.
    pub fn ratio_milli(&self) -> u64 {
        (self.ratio * MILLI as f64).round() as u64
    }
}

/// The bucket: its tokens (in thousandths) as of a time.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Budget {
    pub milli: u64,
    /// When `milli` was last brought up to date.
    pub at: u64,
}

impl Budget {
    /// A full bucket, for a key seen for the first time.
    pub fn full(s: &BudgetSettings, now: u64) -> Budget {
        Budget {
            milli: s.burst_milli(),
            at: now,
        }
    }

    /// Brings the tokens up to `now`: what came back since, never more than the burst. Time
    /// that has not yet made a thousandth is kept for the next time.
    pub fn refill(&mut self, s: &BudgetSettings, now: u64) {
        let period = ms(s.refill).max(1);
        let passed = now.saturating_sub(self.at);
        let gained = u128::from(passed) * u128::from(MILLI) / u128::from(period);
        let gained = u64::try_from(gained).unwrap_or(u64::MAX);
        self.milli = self.milli.saturating_add(gained);
        if self.milli >= s.burst_milli() {
            self.milli = s.burst_milli();
            self.at = self.at.max(now);
        } else {
            // Only the time that became thousandths is spent.
            let spent = u128::from(gained) * u128::from(period) / u128::from(MILLI);
            self.at += u64::try_from(spent).unwrap_or(passed).min(passed);
        }
    }

    /// Takes a token for a retry, if there is one.
    pub fn take(&mut self, s: &BudgetSettings, now: u64) -> bool {
        if !s.enabled() {
            return true;
        }
        self.refill(s, now);
        if self.milli >= MILLI {
            self.milli -= MILLI;
            true
        } else {
            false
        }
    }

    /// A successful attempt adds its share.
    pub fn succeeded(&mut self, s: &BudgetSettings, now: u64) {
        if s.enabled() {
            self.refill(s, now);
            self.milli = (self.milli + s.ratio_milli()).min(s.burst_milli());
        }
    }

    /// Tokens there would be at `now`, without changing anything.
    pub fn left(&self, s: &BudgetSettings, now: u64) -> f64 {
        let mut copy = self.clone();
        copy.refill(s, now);
        copy.milli as f64 / MILLI as f64
    }

    /// Keeps what a store holds within the settings: no time in the future, no more than the
    /// burst.
    pub fn clamp(&mut self, s: &BudgetSettings, now: u64) {
        self.at = self.at.min(now);
        self.milli = self.milli.min(s.burst_milli());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings() -> BudgetSettings {
        BudgetSettings {
            burst: 10,
            ratio: 0.1,
            refill: Duration::from_secs(60),
        }
    }

    #[test]
    fn a_full_bucket_allows_burst_retries_then_refuses() {
        let s = settings();
        let mut b = Budget::full(&s, 0);
        for _ in 0..10 {
            assert!(b.take(&s, 0));
        }
        assert!(!b.take(&s, 0));
        assert!(!b.take(&s, 59_999));
        assert!(b.take(&s, 60_000), "one token a minute comes back");
        assert!(!b.take(&s, 60_000));
    }

    #[test]
    fn successes_add_a_tenth_of_a_token_each() {
        let s = settings();
        let mut b = Budget { milli: 0, at: 0 };
        for _ in 0..9 {
            b.succeeded(&s, 0);
        }
        assert!(!b.take(&s, 0), "{}", b.milli);
        b.succeeded(&s, 0);
        assert!(b.take(&s, 0), "ten successes buy a retry");
    }

    #[test]
    fn the_bucket_never_holds_more_than_the_burst() {
        let s = settings();
        let mut b = Budget::full(&s, 0);
        b.succeeded(&s, 0);
        assert_eq!(b.left(&s, 0), 10.0);
        assert_eq!(b.left(&s, 3_600_000), 10.0);
        let small = BudgetSettings { burst: 3, ..s };
        assert_eq!(b.left(&small, 0), 3.0);
    }

    #[test]
    fn refill_is_proportional_to_time_passed() {
        let s = settings();
        let mut b = Budget { milli: 0, at: 1000 };
        assert_eq!(b.left(&s, 1000 + 30_000), 0.5);
        // 59 ms make no thousandth of a token (one comes every 60 ms) but are not lost.
        for t in (1000..=1000 + 90_000).step_by(59) {
            b.refill(&s, t);
        }
        b.refill(&s, 1000 + 90_000);
        assert_eq!(b.milli, 1500);
    }

    #[test]
    fn a_budget_that_is_off_always_allows() {
        let s = BudgetSettings {
            burst: 0,
            ..settings()
        };
        let mut b = Budget { milli: 0, at: 0 };
        assert!(b.take(&s, 0));
    }

    #[test]
    fn times_and_tokens_from_a_store_are_clamped() {
        let s = settings();
        let mut b = Budget {
            milli: u64::MAX,
            at: u64::MAX,
        };
        b.clamp(&s, 500);
        assert_eq!(
            b,
            Budget {
                milli: 10_000,
                at: 500
            }
        );
    }
}
