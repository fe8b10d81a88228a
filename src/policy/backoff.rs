//! The delay before each retry: backoff shapes, jitter and the cap. Pure: randomness comes from
//! the caller's random source, so `--explain`, the benchmarks and the tests use the same code
//! that sleeps.

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use rand::{Rng, RngExt, SeedableRng};

use super::BadValue;

/// The generator `--seed` seeds, for a run's waits, `--explain`'s schedule and the fleet
/// simulator alike: ChaCha8, one of rand's named generators, whose stream rand documents as
/// fixed across its releases and platforms. Its standard generator's is not: rand may change
/// that algorithm in any release, and with it every seeded schedule (issue 48).
pub type SeededRng = rand::rngs::ChaCha8Rng;

/// The generator of `--seed N`.
pub fn seeded(seed: u64) -> SeededRng {
    SeededRng::seed_from_u64(seed)
}

/// The generator of a run's jitter: seeded from `--seed`, or else from the system. Unseeded,
/// it is the same generator: nothing needs its stream to be fixed, and one type keeps a seeded
/// and an unseeded run on the same code. Made when the run starts, as every other part of it:
/// made on first use instead, a run that never waits was about 2 µs (0.2%) faster, within the
/// noise (issue 46), for a type of its own.
pub fn jitter_rng(seed: Option<u64>) -> SeededRng {
    match seed {
        Some(seed) => seeded(seed),
        // From the system directly, not through the thread's generator, which makes a block
        // of output at once.
        None => {
            SeededRng::try_from_rng(&mut rand::rngs::SysRng).unwrap_or_else(|_| rand::make_rng())
        }
    }
}

/// How the delay grows from one retry to the next, before jitter and the cap.
#[derive(Clone, Debug, PartialEq)]
pub enum Shape {
    /// delay · factor^(k−1)
    Exponential { factor: f64 },
    /// delay · k
    Linear,
    /// delay
    Constant,
    /// delay · 1, 2, 3, 5, 8, …
    Fibonacci,
    /// An explicit schedule; its last value repeats.
    List(Vec<Duration>),
}

/// How the delay is spread, so that clients that failed together do not retry together.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Jitter {
    /// Exactly the backoff delay.
    None,
    /// U(0, d).
    Full,
    /// d/2 + U(0, d/2).
    Equal,
    /// U(delay, min(max_delay, prev · 3)): each delay grows from the previous one. After AWS
    /// (2015), whose min(max_delay, U(delay, prev · 3)) piles the delays at the cap on it.
    Decorrelated,
    /// d · U(1−p, 1+p), for p in 0..=1 (given as a percentage).
    Proportional(f64),
}

/// The complete rule for the delay before retry k = 1, 2, …
#[derive(Clone, Debug, PartialEq)]
pub struct Backoff {
    pub shape: Shape,
    /// The base delay before the first retry.
    pub delay: Duration,
    /// No delay ever exceeds this, jitter included.
    pub max_delay: Duration,
    pub jitter: Jitter,
}

impl Backoff {
    /// d = min(max_delay, backoff(k)): the delay for retry k before jitter.
    pub fn base(&self, k: u32) -> Duration {
        let k = k.max(1);
        let raw = match &self.shape {
            // A zero delay stays zero: 0 · ∞ would be NaN once the power overflows.
            Shape::Exponential { .. } if self.delay.is_zero() => Duration::ZERO,
            Shape::Exponential { factor } => {
                // powi, not powf: the power is whole, and powf is the one call that would
                // make retry load the math library at every start.
                let power = factor.powi(i32::try_from(k - 1).unwrap_or(i32::MAX));
                let secs = self.delay.as_secs_f64() * power;
                Duration::try_from_secs_f64(secs).unwrap_or(Duration::MAX)
            }
            Shape::Linear => self.delay.saturating_mul(k),
            Shape::Constant => self.delay,
            Shape::Fibonacci => self.delay.saturating_mul(fibonacci(k)),
            Shape::List(list) => list
                .get(k as usize - 1)
                .or(list.last())
                .copied()
                .unwrap_or(self.delay),
        };
        raw.min(self.max_delay)
    }

    /// The range retry k's delay is drawn from, uniformly, given the previous delay (which only
    /// decorrelated jitter uses). Both ends lie within `max_delay`.
    pub fn range(&self, k: u32, prev: Duration) -> (Duration, Duration) {
        self.spread(self.base(k), prev)
    }

    /// The range the jitter spreads a delay of `d` over (`d` already capped), given the
    /// previous delay. Decorrelated jitter makes its own schedule and ignores `d`.
    pub fn spread(&self, d: Duration, prev: Duration) -> (Duration, Duration) {
        let d = d.min(self.max_delay);
        match self.jitter {
            Jitter::None => (d, d),
            Jitter::Full => (Duration::ZERO, d),
            Jitter::Equal => (d / 2, d),
            Jitter::Proportional(p) => {
                // Jitter goes inside the cap: a delay whose band would reach past max_delay is
                // moved down until the band fits, so that delays at the cap stay spread
                // instead of piling up on max_delay.
                let d = d
                    .as_secs_f64()
                    .min(self.max_delay.as_secs_f64() / (1.0 + p));
                (secs(d * (1.0 - p)), secs(d * (1.0 + p)).min(self.max_delay))
            }
            Jitter::Decorrelated => {
                // U(delay, min(cap, prev·3)) rather than min(cap, U(delay, prev·3)): the same
                // bounds, but delays at the cap stay spread instead of piling up on it.
                let hi = prev.max(self.delay).saturating_mul(3).min(self.max_delay);
                (self.delay.min(hi), hi)
            }
        }
    }

    /// A delay of `d`, jittered and capped as every delay is.
    pub fn jitter<R: Rng + ?Sized>(&self, d: Duration, prev: Duration, rng: &mut R) -> Duration {
        let (lo, hi) = self.spread(d, prev);
        uniform(rng, lo, hi)
    }

    /// The widest range retry k's delay can come from, whatever the delays before it were.
    pub fn envelope(&self, k: u32) -> (Duration, Duration) {
        match self.jitter {
            Jitter::Decorrelated => {
                let hi = secs(
                    self.delay.as_secs_f64()
                        * 3f64.powi(i32::try_from(k.max(1)).unwrap_or(i32::MAX)),
                )
                .min(self.max_delay);
                // A cap below --delay caps the lower end too.
                (self.delay.min(hi), hi)
            }
            _ => self.range(k, Duration::ZERO),
        }
    }

    /// The delays of one run, drawn one after another.
    pub fn schedule(&self) -> Schedule<'_> {
        Schedule {
            backoff: self,
            retry: 0,
            prev: self.delay,
        }
    }
}

/// The delays of one run, in order; decorrelated jitter needs the one before.
pub struct Schedule<'a> {
    backoff: &'a Backoff,
    retry: u32,
    prev: Duration,
}

impl Schedule<'_> {
    /// The delay before the next retry.
    pub fn next_delay<R: Rng + ?Sized>(&mut self, rng: &mut R) -> Duration {
        self.retry = self.retry.saturating_add(1);
        let (lo, hi) = self.backoff.range(self.retry, self.prev);
        let delay = uniform(rng, lo, hi);
        self.prev = delay;
        delay
    }
}

/// A duration drawn uniformly from [lo, hi], to the nanosecond.
fn uniform<R: Rng + ?Sized>(rng: &mut R, lo: Duration, hi: Duration) -> Duration {
    if hi <= lo {
        return lo;
    }
    let nanos = |d: Duration| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
    Duration::from_nanos(rng.random_range(nanos(lo)..=nanos(hi)))
}

fn secs(s: f64) -> Duration {
    Duration::try_from_secs_f64(s.max(0.0)).unwrap_or(Duration::MAX)
}

/// 1, 2, 3, 5, 8, … for k = 1, 2, …: each step grows, so no two delays in a row repeat.
fn fibonacci(k: u32) -> u32 {
    let (mut a, mut b) = (1u32, 2u32);
    for _ in 1..k {
        (a, b) = (b, a.saturating_add(b));
        if a == u32::MAX {
            break;
        }
    }
    a
}

impl FromStr for Jitter {
    type Err = BadValue;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "none" => Ok(Jitter::None),
            "full" => Ok(Jitter::Full),
            "equal" => Ok(Jitter::Equal),
            "decorrelated" => Ok(Jitter::Decorrelated),
            _ => {
                let pct = s
                    .strip_suffix('%')
                    .and_then(|n| n.trim().parse::<f64>().ok())
                    .ok_or_else(|| {
                        BadValue::new(
                            "not a kind of jitter",
                            s,
                            "use none, full, equal, decorrelated or a proportion as 20%",
                        )
                    })?;
                if !(0.0..=100.0).contains(&pct) {
                    return Err(BadValue::new(
                        "a jitter proportion out of range",
                        s,
                        "use 0% to 100%",
                    ));
                }
                Ok(Jitter::Proportional(pct / 100.0))
            }
        }
    }
}

impl fmt::Display for Jitter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Jitter::None => f.write_str("none"),
            Jitter::Full => f.write_str("full"),
            Jitter::Equal => f.write_str("equal"),
            Jitter::Decorrelated => f.write_str("decorrelated"),
            Jitter::Proportional(p) => write!(f, "{}%", p * 100.0),
        }
    }
}

impl fmt::Display for Shape {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Shape::Exponential { factor } => write!(f, "exponential (factor {factor})"),
            Shape::Linear => f.write_str("linear"),
            Shape::Constant => f.write_str("constant"),
            Shape::Fibonacci => f.write_str("fibonacci"),
            Shape::List(list) => {
                f.write_str("list ")?;
                for (i, d) in list.iter().enumerate() {
                    let sep = if i == 0 { "" } else { "," };
                    write!(f, "{sep}{}", humantime::format_duration(*d))?;
                }
                Ok(())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: Duration = Duration::from_secs(1);

    #[test]
    fn a_runs_generator_is_seeded_by_seed_or_else_by_the_system() {
        let drawn = |mut rng: SeededRng| (0..4).map(|_| rng.next_u64()).collect::<Vec<_>>();
        assert_eq!(drawn(jitter_rng(Some(42))), drawn(seeded(42)));
        assert_ne!(drawn(jitter_rng(None)), drawn(jitter_rng(None)));
    }

    fn backoff(shape: Shape, jitter: Jitter) -> Backoff {
        Backoff {
            shape,
            delay: S,
            max_delay: Duration::from_secs(60),
            jitter,
        }
    }

    fn bases(b: &Backoff, n: u32) -> Vec<u64> {
        (1..=n).map(|k| b.base(k).as_secs()).collect()
    }

    #[test]
    fn shapes_grow_as_documented() {
        let exp = backoff(Shape::Exponential { factor: 2.0 }, Jitter::None);
        assert_eq!(bases(&exp, 8), [1, 2, 4, 8, 16, 32, 60, 60]);
        assert_eq!(
            bases(&backoff(Shape::Linear, Jitter::None), 4),
            [1, 2, 3, 4]
        );
        assert_eq!(bases(&backoff(Shape::Constant, Jitter::None), 3), [1, 1, 1]);
        assert_eq!(
            bases(&backoff(Shape::Fibonacci, Jitter::None), 6),
            [1, 2, 3, 5, 8, 13]
        );
        let list = Shape::List(vec![S, 5 * S, 30 * S]);
        assert_eq!(bases(&backoff(list, Jitter::None), 5), [1, 5, 30, 30, 30]);
    }

    #[test]
    fn fractional_factor_grows_slowly() {
        let b = backoff(Shape::Exponential { factor: 1.5 }, Jitter::None);
        assert_eq!(b.base(3), Duration::from_millis(2250));
    }

    #[test]
    fn huge_retry_numbers_saturate_at_the_cap() {
        for shape in [
            Shape::Exponential { factor: 10.0 },
            Shape::Linear,
            Shape::Fibonacci,
        ] {
            let b = backoff(shape, Jitter::None);
            assert_eq!(b.base(u32::MAX), b.max_delay);
            assert_eq!(b.base(1_000_000), b.max_delay);
        }
        let d = backoff(Shape::Constant, Jitter::Decorrelated);
        assert_eq!(d.envelope(u32::MAX).1, d.max_delay);
    }

    /// Draws `n` first-to-`k`th delays over many seeds and checks every one against its range.
    fn sample(b: &Backoff, retries: u32, seeds: u64) -> Vec<Vec<Duration>> {
        (0..seeds)
            .map(|seed| {
                let mut rng = seeded(seed);
                let mut s = b.schedule();
                (0..retries).map(|_| s.next_delay(&mut rng)).collect()
            })
            .collect()
    }

    fn mean_of(runs: &[Vec<Duration>], k: usize) -> f64 {
        runs.iter().map(|r| r[k].as_secs_f64()).sum::<f64>() / runs.len() as f64
    }

    #[test]
    fn full_jitter_stays_in_zero_to_d_with_mean_d_over_2() {
        let b = backoff(Shape::Exponential { factor: 2.0 }, Jitter::Full);
        let runs = sample(&b, 8, 4000);
        for run in &runs {
            for (k, d) in run.iter().enumerate() {
                assert!(
                    *d <= b.base(k as u32 + 1),
                    "{d:?} past d at retry {}",
                    k + 1
                );
            }
        }
        // Retry 3: d = 4s, mean 2s; retry 8 sits at the 60s cap: mean 30s, still spread.
        assert!(
            (mean_of(&runs, 2) - 2.0).abs() < 0.1,
            "{}",
            mean_of(&runs, 2)
        );
        assert!(
            (mean_of(&runs, 7) - 30.0).abs() < 1.5,
            "{}",
            mean_of(&runs, 7)
        );
    }

    /// `--seed` promises the same waits from one release to the next: a change of generator,
    /// or of how rand draws from a range, changes these and must be a deliberate one (and a
    /// line in the changelog).
    #[test]
    fn a_seed_gives_the_same_delays_in_every_release() {
        let full = backoff(Shape::Exponential { factor: 2.0 }, Jitter::Full);
        let decorrelated = backoff(Shape::Constant, Jitter::Decorrelated);
        let nanos = |b: &Backoff, seed| -> Vec<u128> {
            let mut rng = seeded(seed);
            let mut s = b.schedule();
            (0..5).map(|_| s.next_delay(&mut rng).as_nanos()).collect()
        };
        assert_eq!(
            nanos(&full, 1),
            [402485664, 160767417, 2386240724, 1754596644, 4539049461]
        );
        assert_eq!(
            nanos(&decorrelated, 42),
            [2363792385, 6788485910, 9279050828, 17836569970, 16153980875]
        );
        // The stream itself, before any range is drawn from it.
        let mut rng = seeded(0);
        let words: Vec<u64> = (0..3).map(|_| rng.next_u64()).collect();
        assert_eq!(
            words,
            [
                13080132717333068652,
                8594738769458413623,
                12896916468484187878
            ]
        );
    }

    #[test]
    fn equal_jitter_stays_in_half_d_to_d_with_mean_three_quarters() {
        let b = backoff(Shape::Constant, Jitter::Equal);
        let runs = sample(&b, 1, 4000);
        for run in &runs {
            assert!(run[0] >= S / 2 && run[0] <= S, "{:?}", run[0]);
        }
        assert!(
            (mean_of(&runs, 0) - 0.75).abs() < 0.02,
            "{}",
            mean_of(&runs, 0)
        );
    }

    #[test]
    fn proportional_jitter_spreads_around_d_and_fits_inside_the_cap() {
        let b = backoff(
            Shape::Exponential { factor: 2.0 },
            "20%".parse().expect("valid"),
        );
        let runs = sample(&b, 8, 4000);
        for run in &runs {
            // Retry 2: d = 2s, band [1.6s, 2.4s].
            assert!(run[1] >= Duration::from_millis(1600) && run[1] <= Duration::from_millis(2400));
            // Retry 8: d = 60s at the cap; the band moves down to [40s, 60s] and stays spread.
            assert!(
                run[7] <= b.max_delay && run[7] >= Duration::from_secs(40),
                "{:?}",
                run[7]
            );
        }
        assert!(
            (mean_of(&runs, 1) - 2.0).abs() < 0.03,
            "{}",
            mean_of(&runs, 1)
        );
        let at_cap = runs.iter().filter(|r| r[7] == b.max_delay).count();
        assert!(at_cap < 10, "{at_cap} delays piled up on the cap");
    }

    #[test]
    fn decorrelated_jitter_stays_between_delay_and_cap_and_grows_from_prev() {
        let b = Backoff {
            max_delay: Duration::from_secs(20),
            ..backoff(Shape::Constant, Jitter::Decorrelated)
        };
        let runs = sample(&b, 12, 2000);
        for run in &runs {
            let mut prev = b.delay;
            for d in run {
                assert!(*d >= b.delay && *d <= b.max_delay, "{d:?}");
                assert!(*d <= prev * 3, "{d:?} more than 3x {prev:?}");
                prev = *d;
            }
        }
        // First retry: U(1s, 3s), mean 2s.
        assert!(
            (mean_of(&runs, 0) - 2.0).abs() < 0.05,
            "{}",
            mean_of(&runs, 0)
        );
        let at_cap = runs.iter().filter(|r| r[11] == b.max_delay).count();
        assert!(at_cap < 10, "{at_cap} delays piled up on the cap");
    }

    #[test]
    fn no_jitter_gives_the_base_delay() {
        let b = backoff(Shape::Linear, Jitter::None);
        let runs = sample(&b, 3, 5);
        for run in runs {
            assert_eq!(run, [S, 2 * S, 3 * S]);
        }
    }

    #[test]
    fn the_same_seed_gives_the_same_schedule_and_others_differ() {
        let b = backoff(Shape::Exponential { factor: 2.0 }, Jitter::Full);
        let one = sample(&b, 6, 3);
        let two = sample(&b, 6, 3);
        assert_eq!(one, two);
        assert_ne!(one[0], one[1]);
    }

    #[test]
    fn zero_delay_stays_zero_however_many_retries() {
        let b = Backoff {
            delay: Duration::ZERO,
            ..backoff(Shape::Exponential { factor: 10.0 }, Jitter::Full)
        };
        assert_eq!(b.base(5000), Duration::ZERO);
        assert_eq!(b.base(u32::MAX), Duration::ZERO);
    }

    #[test]
    fn zero_delay_stays_zero() {
        let b = Backoff {
            delay: Duration::ZERO,
            ..backoff(Shape::Exponential { factor: 2.0 }, Jitter::Decorrelated)
        };
        for run in sample(&b, 4, 10) {
            assert!(run.iter().all(|d| d.is_zero()));
        }
    }

    #[test]
    fn jitter_parses_kinds_and_percentages() {
        assert_eq!("full".parse::<Jitter>(), Ok(Jitter::Full));
        assert_eq!("25%".parse::<Jitter>(), Ok(Jitter::Proportional(0.25)));
        assert!(
            "150%"
                .parse::<Jitter>()
                .expect_err("too big")
                .to_string()
                .contains("150%")
        );
        assert!(
            "wobbly"
                .parse::<Jitter>()
                .expect_err("bad")
                .to_string()
                .contains("wobbly")
        );
    }
}
