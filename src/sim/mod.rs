//! Evidence: a discrete-event simulator that runs retry's own policy code (the backoff and
//! jitter of [`crate::policy::backoff`], the breaker and budget of [`crate::policy::shared`]) in
//! virtual time, so that what the README claims about jitter, breakers and budgets is measured
//! with the code that runs, not with a copy of its formulas.
//!
//! Time is integer nanoseconds; events at the same time run in the order they were scheduled.
//! Every component draws from its own seeded stream, so every policy compared under one seed
//! sees the same arrivals and the same network.
//!
//! Here: the event [`Queue`], the [`stream`]s, [`Estimate`], the fleet model of scenario C and
//! `retry --explain --fleet` ([`fleet`], [`explain`]). Scenarios A (Brooker's 2015 figures) and
//! B (a load spike) are research, not product: they live beside the fleet bench, in
//! `benches/fleet/`, and use this module through the crate's public API.

mod apart;
pub mod exact;
pub(crate) mod explain;
pub mod fleet;
mod group;
mod progress;
mod tally;

use std::cmp::Ordering;
use std::collections::BinaryHeap;
use std::time::Duration;

use crate::policy::backoff::{SeededRng, seeded};

/// Virtual time, in nanoseconds since the start of a run.
pub type Nanos = u64;

/// Nanoseconds in a duration (saturating).
pub fn nanos(d: Duration) -> Nanos {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

/// An event waiting for its time.
struct Scheduled<E> {
    at: Nanos,
    seq: u64,
    event: E,
}

impl<E> PartialEq for Scheduled<E> {
    fn eq(&self, other: &Self) -> bool {
        (self.at, self.seq) == (other.at, other.seq)
    }
}

impl<E> Eq for Scheduled<E> {}

impl<E> PartialOrd for Scheduled<E> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl<E> Ord for Scheduled<E> {
    /// The earliest first (BinaryHeap is a max-heap), ties in the order scheduled.
    fn cmp(&self, other: &Self) -> Ordering {
        (other.at, other.seq).cmp(&(self.at, self.seq))
    }
}

/// The events of a run, in time order.
pub struct Queue<E> {
    heap: BinaryHeap<Scheduled<E>>,
    seq: u64,
    now: Nanos,
}

impl<E> Default for Queue<E> {
    fn default() -> Self {
        Queue {
            heap: BinaryHeap::new(),
            seq: 0,
            now: 0,
        }
    }
}

impl<E> Queue<E> {
    /// The time of the event last taken.
    pub fn now(&self) -> Nanos {
        self.now
    }

    /// Schedules `event` at `at`, never before now.
    pub fn at(&mut self, at: Nanos, event: E) {
        self.seq += 1;
        self.heap.push(Scheduled {
            at: at.max(self.now),
            seq: self.seq,
            event,
        });
    }

    /// Schedules `event` `after` from now.
    pub fn after(&mut self, after: Nanos, event: E) {
        self.at(self.now.saturating_add(after), event);
    }

    /// Takes the next event, moving the time to it.
    pub fn pop(&mut self) -> Option<E> {
        let next = self.heap.pop()?;
        self.now = next.at;
        Some(next.event)
    }
}

/// The parts of a simulated world that draw random numbers; each has its own stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Component {
    Arrivals = 1,
    Network = 2,
    Server = 3,
    Policy = 4,
}

/// The random stream of one component under one seed: `--seed`'s generator, whose output is
/// fixed across versions and platforms, so that a figure can be reproduced.
pub fn stream(seed: u64, component: Component) -> SeededRng {
    let mut rng = seeded(seed);
    rng.set_stream(component as u64);
    rng
}

/// The random stream of one component in one group of a fleet's processes: group 0 draws from
/// the component's own [`stream`], so that a fleet small enough to be one group draws what it
/// always did.
pub fn group_stream(seed: u64, component: Component, group: u64) -> SeededRng {
    let mut rng = seeded(seed);
    rng.set_stream((component as u64).wrapping_add(group << 8));
    rng
}

/// The mean of some samples and the half-width of its 95% confidence interval (Student's t,
/// normal approximation past 30 samples).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Estimate {
    pub mean: f64,
    pub ci95: f64,
    /// The samples' standard deviation (n − 1 in the denominator).
    pub sd: f64,
    pub n: usize,
}

impl Estimate {
    pub fn of(samples: &[f64]) -> Estimate {
        let n = samples.len();
        if n == 0 {
            return Estimate {
                mean: f64::NAN,
                ci95: f64::NAN,
                sd: f64::NAN,
                n,
            };
        }
        let mean = samples.iter().sum::<f64>() / n as f64;
        if n < 2 {
            return Estimate {
                mean,
                ci95: f64::INFINITY,
                sd: f64::NAN,
                n,
            };
        }
        let var = samples.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
        Estimate {
            mean,
            ci95: t95(n - 1) * (var / n as f64).sqrt(),
            sd: var.sqrt(),
            n,
        }
    }

    /// Welch's t test of this mean against another's: whether they differ at the 5% level
    /// (two-sided), with the t statistic and the Welch–Satterthwaite degrees of freedom.
    pub fn welch(&self, other: &Estimate) -> Welch {
        let (va, vb) = (
            self.sd.powi(2) / self.n as f64,
            other.sd.powi(2) / other.n as f64,
        );
        let se = (va + vb).sqrt();
        let t = (self.mean - other.mean) / se;
        let df = (va + vb).powi(2)
            / (va.powi(2) / (self.n as f64 - 1.0) + vb.powi(2) / (other.n as f64 - 1.0));
        // Both without spread: equal means are the same, different ones differ.
        let (t, df) = if se > 0.0 {
            (t, df)
        } else if self.mean == other.mean {
            (0.0, f64::INFINITY)
        } else {
            (f64::INFINITY, f64::INFINITY)
        };
        let critical = if df.is_finite() {
            t95(df.floor().max(1.0) as usize)
        } else {
            1.96
        };
        Welch {
            t,
            df,
            differs: t.abs() > critical,
        }
    }
}

/// The outcome of [`Estimate::welch`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Welch {
    pub t: f64,
    pub df: f64,
    /// The means differ at the 5% level, two-sided.
    pub differs: bool,
}

/// The two-sided 95% quantile of Student's t with `df` degrees of freedom.
fn t95(df: usize) -> f64 {
    const TABLE: [f64; 30] = [
        12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160,
        2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056,
        2.052, 2.048, 2.045, 2.042,
    ];
    TABLE.get(df.wrapping_sub(1)).copied().unwrap_or(1.96)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::RngExt;

    #[test]
    fn events_come_out_in_time_order_and_ties_in_the_order_scheduled() {
        let mut q = Queue::default();
        q.at(30, "c");
        q.at(10, "a");
        q.at(30, "d");
        q.at(20, "b");
        let mut seen = Vec::new();
        while let Some(e) = q.pop() {
            seen.push((q.now(), e));
        }
        assert_eq!(seen, [(10, "a"), (20, "b"), (30, "c"), (30, "d")]);
    }

    #[test]
    fn nothing_is_scheduled_in_the_past() {
        let mut q = Queue::default();
        q.at(100, 1);
        q.pop();
        q.at(50, 2);
        q.after(5, 3);
        assert_eq!(q.pop(), Some(2));
        assert_eq!(q.now(), 100);
        assert_eq!(q.pop(), Some(3));
        assert_eq!(q.now(), 105);
    }

    #[test]
    fn streams_are_reproducible_and_independent() {
        let draw = |seed, c| -> Vec<u64> {
            let mut r = stream(seed, c);
            (0..4).map(|_| r.random()).collect()
        };
        assert_eq!(draw(1, Component::Network), draw(1, Component::Network));
        assert_ne!(draw(1, Component::Network), draw(1, Component::Policy));
        assert_ne!(draw(1, Component::Network), draw(2, Component::Network));
    }

    #[test]
    fn the_confidence_interval_narrows_with_more_samples() {
        let few = Estimate::of(&[1.0, 2.0, 3.0]);
        let many = Estimate::of(&[1.0, 2.0, 3.0].repeat(20));
        assert_eq!(few.mean, 2.0);
        assert_eq!(many.mean, 2.0);
        assert!(many.ci95 < few.ci95);
        assert!((few.ci95 - 4.303 * (1.0f64 / 3.0).sqrt()).abs() < 1e-9);
    }

    #[test]
    fn welchs_test_tells_a_real_difference_from_noise() {
        let a = Estimate::of(&[10.0, 11.0, 9.0, 10.5, 9.5, 10.0]);
        let near = Estimate::of(&[10.2, 10.8, 9.4, 10.1, 9.9, 10.3]);
        let far = Estimate::of(&[12.0, 12.5, 11.5, 12.2, 11.8, 12.1]);
        assert!(!a.welch(&near).differs, "{:?}", a.welch(&near));
        let w = a.welch(&far);
        assert!(w.differs && w.t < 0.0, "{w:?}");
        // Equal variances and sizes: df = 2(n − 1).
        let b = Estimate::of(&[11.0, 12.0, 10.0, 11.5, 10.5, 11.0]);
        assert!((a.welch(&b).df - 10.0).abs() < 1e-9);
        // A test at 5%: a difference of 1.5 standard errors is not one, of 2.5 is.
        assert!(
            !a.welch(&Estimate {
                mean: a.mean + 1.5 * a.sd / 6f64.sqrt() * 2f64.sqrt(),
                ..a
            })
            .differs
        );
        assert!(
            a.welch(&Estimate {
                mean: a.mean + 2.5 * a.sd / 6f64.sqrt() * 2f64.sqrt(),
                ..a
            })
            .differs
        );
    }
}
