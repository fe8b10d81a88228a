//! The pace of one run: the delay before each retry (the backoff's schedule, or the adaptive
//! delay learned from the key's outcomes), whether attempts are left, and whether the next
//! attempt fits the run's deadline. The attempt loop and the fleet simulator both step a run
//! through this one piece, so that what the simulator shows is what a run does. Before all
//! that, the splay: the random wait before the first attempt.

use std::time::Duration;

use rand::{Rng, RngExt};

use super::Policy;
use super::adaptive::{Adaptive, Estimates, Params};
use super::backoff::{Backoff, Schedule};

/// What stops a retryable failure from being retried.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Limit {
    AttemptsUsedUp,
    /// `--max-time` stopped the attempt.
    Deadline,
    /// The command asked to be called again only after the deadline.
    ComeBackAfterDeadline {
        asked: Duration,
        left: Duration,
    },
    /// The wait would end after the deadline.
    NextAfterDeadline {
        delay: Duration,
        left: Duration,
    },
}

/// The wait before the first attempt (`--splay`): drawn uniformly in [0, `splay`), so that
/// runs started at the same second (cron on a fleet) spread their first calls over it; none
/// for a zero splay, and then nothing is drawn.
pub fn splay<R: Rng + ?Sized>(splay: Duration, rng: &mut R) -> Duration {
    // A splay is at most a year (the parser's limit): its nanoseconds fit in a u64.
    let nanos = u64::try_from(splay.as_nanos()).unwrap_or(u64::MAX);
    if nanos == 0 {
        return Duration::ZERO;
    }
    Duration::from_nanos(rng.random_range(0..nanos))
}

/// One run's pacing state, carried from one attempt to the next.
pub struct Pacing<'a> {
    backoff: &'a Backoff,
    attempts: Option<u32>,
    max_time: Option<Duration>,
    schedule: Schedule<'a>,
    /// `--backoff adaptive`'s own state; `None` without it.
    adaptive: Option<Adaptive>,
    /// `--reset-after`: an attempt that ran this long starts afresh.
    reset_after: Option<Duration>,
    /// Attempts before the one the limit counts from: 0, or the attempt before the last reset.
    base: u32,
}

impl<'a> Pacing<'a> {
    /// The pace of a new run of `policy`. `learns` says whether the run has a key's outcomes to
    /// learn from: without them the adaptive delay falls back on the backoff's schedule.
    pub fn of(policy: &'a Policy, learns: bool) -> Pacing<'a> {
        let adaptive = policy.adaptive.filter(|_| learns);
        let mut pacing = Pacing::new(&policy.backoff, policy.attempts, policy.max_time, adaptive);
        pacing.reset_after = policy.reset_after;
        pacing
    }

    /// The pace of a run with these limits (`--attempts`, `--max-time`) and delays.
    pub fn new(
        backoff: &'a Backoff,
        attempts: Option<u32>,
        max_time: Option<Duration>,
        adaptive: Option<Params>,
    ) -> Pacing<'a> {
        Pacing {
            backoff,
            attempts,
            max_time,
            schedule: backoff.schedule(),
            adaptive: adaptive.map(|rule| Adaptive::new(rule, backoff)),
            reset_after: None,
            base: 0,
        }
    }

    /// Attempt `attempt` ran for `ran`: when that is at least `--reset-after`, the schedule
    /// starts afresh (the next delay is the first one) and the attempt limit counts from this
    /// attempt. Returns whether it did.
    pub fn ran(&mut self, attempt: u32, ran: Duration) -> bool {
        let reset = self.reset_after.is_some_and(|after| ran >= after);
        if reset {
            self.schedule = self.backoff.schedule();
            self.base = attempt.saturating_sub(1);
        }
        reset
    }

    /// The number of the last attempt the limit allows, as it stands after the resets so far.
    pub fn max_attempts(&self) -> Option<u32> {
        self.attempts.map(|max| max.saturating_add(self.base))
    }

    /// Whether the delay is learned from the key's outcomes, so that [`Pacing::next_delay`]
    /// wants their estimates.
    pub fn learns(&self) -> bool {
        self.adaptive.is_some()
    }

    /// Whether another attempt may follow attempt `attempt` (1-based).
    pub fn attempts_left(&self, attempt: u32) -> bool {
        self.max_attempts().is_none_or(|max| attempt < max)
    }

    /// The wait before the retry that follows attempt `attempt`: the adaptive delay when it
    /// has the key's estimates, else the backoff's schedule; jittered either way.
    pub fn next_delay<R: Rng + ?Sized>(
        &mut self,
        attempt: u32,
        estimates: Option<&Estimates>,
        rng: &mut R,
    ) -> Duration {
        match (self.adaptive.as_mut(), estimates) {
            (Some(adaptive), Some(e)) => {
                adaptive.jittered(self.backoff, attempt.saturating_sub(self.base), e, rng)
            }
            _ => self.schedule.next_delay(rng),
        }
    }

    /// Whether an attempt that starts `after` from `elapsed` (time since the run began) starts
    /// before the `--max-time` deadline; `Err` holds the time left before it.
    pub fn fits(&self, elapsed: Duration, after: Duration) -> Result<(), Duration> {
        match self.max_time {
            Some(max) if elapsed.saturating_add(after) >= max => Err(max.saturating_sub(elapsed)),
            _ => Ok(()),
        }
    }

    /// After a retryable failure of attempt `attempt`, `elapsed` into the run: the wait before
    /// the next attempt, or the limit that ends the run. The loop's judgement takes the same
    /// steps, with the command's own requests (its output, its `Retry-After`) between them.
    pub fn after_failure<R: Rng + ?Sized>(
        &mut self,
        attempt: u32,
        elapsed: Duration,
        estimates: Option<&Estimates>,
        rng: &mut R,
    ) -> Result<Duration, Limit> {
        if !self.attempts_left(attempt) {
            return Err(Limit::AttemptsUsedUp);
        }
        let delay = self.next_delay(attempt, estimates, rng);
        match self.fits(elapsed, delay) {
            Ok(()) => Ok(delay),
            Err(left) => Err(Limit::NextAfterDeadline { delay, left }),
        }
    }

    /// Whether the `--max-time` deadline has come at `elapsed`.
    pub fn past_deadline(&self, elapsed: Duration) -> bool {
        self.fits(elapsed, Duration::ZERO).is_err()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::adaptive::RULE;
    use crate::policy::backoff::{Jitter, Shape, seeded};

    const S: Duration = Duration::from_secs(1);

    fn backoff() -> Backoff {
        Backoff {
            shape: Shape::Exponential { factor: 2.0 },
            delay: S,
            max_delay: 60 * S,
            jitter: Jitter::None,
        }
    }

    #[test]
    fn attempts_are_left_below_the_limit_and_always_without_one() {
        let b = backoff();
        let pacing = Pacing::new(&b, Some(3), None, None);
        assert!(pacing.attempts_left(2));
        assert!(!pacing.attempts_left(3));
        assert!(Pacing::new(&b, None, None, None).attempts_left(u32::MAX - 1));
    }

    #[test]
    fn an_attempt_fits_only_when_it_starts_before_the_deadline() {
        let b = backoff();
        let pacing = Pacing::new(&b, None, Some(10 * S), None);
        assert_eq!(pacing.fits(4 * S, 5 * S), Ok(()));
        assert_eq!(pacing.fits(4 * S, 6 * S), Err(6 * S));
        assert!(pacing.past_deadline(10 * S));
        assert!(!Pacing::new(&b, None, None, None).past_deadline(S * 1_000_000));
    }

    #[test]
    fn an_attempt_that_ran_reset_after_starts_the_schedule_and_the_limit_afresh() {
        let b = backoff();
        let mut rng = seeded(1);
        let mut pacing = Pacing::new(&b, Some(3), None, None);
        pacing.reset_after = Some(600 * S);
        assert!(!pacing.ran(1, 599 * S));
        assert_eq!(pacing.next_delay(1, None, &mut rng), S);
        assert_eq!(pacing.next_delay(2, None, &mut rng), 2 * S);
        assert!(!pacing.attempts_left(3));
        // Attempt 3 ran ten minutes: it is the first of three again.
        assert!(pacing.ran(3, 600 * S));
        assert_eq!(pacing.max_attempts(), Some(5));
        assert!(pacing.attempts_left(4) && !pacing.attempts_left(5));
        assert_eq!(pacing.next_delay(3, None, &mut rng), S);
        // Without --reset-after, nothing resets.
        let mut plain = Pacing::new(&b, Some(3), None, None);
        assert!(!plain.ran(1, 1_000_000 * S));
        assert_eq!(plain.max_attempts(), Some(3));
    }

    #[test]
    fn a_splay_is_drawn_in_zero_to_its_length_spread_over_it() {
        let splay = 10 * S;
        let draws: Vec<Duration> = (0..2000)
            .map(|seed| super::splay(splay, &mut seeded(seed)))
            .collect();
        assert!(draws.iter().all(|d| *d < splay), "never the splay itself");
        let mean = draws.iter().sum::<Duration>() / 2000;
        assert!(mean > 4 * S && mean < 6 * S, "{mean:?}");
        // Each tenth of the splay gets about a tenth of the draws: spread, not bunched.
        let mut tenths = [0u32; 10];
        for d in &draws {
            tenths[(d.as_secs_f64() / splay.as_secs_f64() * 10.0) as usize] += 1;
        }
        assert!(tenths.iter().all(|n| (140..=260).contains(n)), "{tenths:?}");
        assert_eq!(super::splay(Duration::ZERO, &mut seeded(1)), Duration::ZERO);
    }

    #[test]
    fn without_estimates_the_adaptive_delay_falls_back_on_the_schedule() {
        let b = backoff();
        let mut rng = seeded(1);
        let mut pacing = Pacing::new(&b, None, None, Some(RULE));
        assert!(pacing.learns());
        let delays: Vec<Duration> = (1..=3)
            .map(|k| pacing.next_delay(k, None, &mut rng))
            .collect();
        assert_eq!(delays, [S, 2 * S, 4 * S]);
        assert!(!Pacing::new(&b, None, None, None).learns());
    }
}
