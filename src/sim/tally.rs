//! What a simulated fleet's calls add up to: the counts of a [`Report`], the calls over time,
//! and the busiest second. The processes are stepped a window of virtual time at a time, each
//! group of them in its own order, so the calls of a window come in any order: each window
//! counts its calls per second, and the busiest second is looked for once it is done. Memory
//! is the report's buckets, one count a process, and a window's seconds, never the simulated
//! time.

use std::time::Duration;

use super::Nanos;

/// What the fleet did.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Report {
    /// Runs of the job started, refused ones included: the unique requests.
    pub jobs: u64,
    /// Calls that succeeded: one per run that did.
    pub successes: u64,
    /// Calls that reached the service while it was down.
    pub calls_during: u64,
    /// Calls after it recovered, to the end of the simulated time.
    pub calls_after: u64,
    /// Runs the breaker refused (exit 75).
    pub refused: u64,
    /// Runs that lost the shared state: a call to a `--state` store that answers at a rate
    /// waited past `--state-timeout`. With `--state-fail open` they went on with their host's
    /// state (from the start) or without the key (after it); with `closed`, those that lost it
    /// before starting did not run (exit 75).
    pub lost_store: u64,
    /// Runs that were a breaker's probe.
    pub probes: u64,
    /// Runs that gave up without success.
    pub gave_up: u64,
    /// The most calls in one second.
    pub peak_per_second: u64,
    /// The most retries (calls after a run's first) in one second: what jitter spreads.
    pub peak_retries_per_second: u64,
    /// From the recovery to the first success in the fleet.
    pub first_success: Option<Duration>,
    /// From the recovery to the time every process had succeeded once: the time to recover.
    /// `None` when some process had not by the end of the simulated time.
    pub last_success: Option<Duration>,
    /// Calls in each bucket of `bucket`, from time 0.
    pub timeline: Vec<u64>,
    pub bucket: Duration,
    /// The simulated time.
    pub horizon: Duration,
}

impl Report {
    /// Calls made per run of the job (unique request): what retrying multiplies the load by.
    pub fn amplification(&self) -> f64 {
        (self.calls_during + self.calls_after) as f64 / self.jobs.max(1) as f64
    }

    /// The share of calls that succeeded: the part of the load on the service that did work.
    pub fn goodput(&self) -> f64 {
        self.successes as f64 / (self.calls_during + self.calls_after).max(1) as f64
    }
}

/// Seconds in a window: its counts take 2 × 256 KiB; a simulated time shorter than 18 hours is
/// one window.
pub const WINDOW_SECONDS: u64 = 1 << 16;

/// Nanoseconds in a second.
const SECOND: Nanos = 1_000_000_000;

/// The window that holds `at`.
pub fn window_of(at: Nanos) -> u64 {
    at / SECOND / WINDOW_SECONDS
}

/// The time a window ends (saturating).
pub fn window_end(window: u64) -> Nanos {
    window
        .saturating_add(1)
        .saturating_mul(WINDOW_SECONDS)
        .saturating_mul(SECOND)
}

/// What one simulated variant of the policy has counted so far.
pub struct Tally {
    /// The counts of the report; its peaks and times are filled in by [`Tally::report`].
    pub report: Report,
    /// When the service comes back.
    outage: Nanos,
    /// The report's bucket, in nanoseconds, and its reciprocal for a quick division.
    bucket: Divisor,
    /// The earliest success after the outage, from its end.
    first_success: Option<Nanos>,
    /// Each process's first success after the outage (`Nanos::MAX`: none yet).
    recovered: Vec<Nanos>,
    /// Calls, and retries, in each second of the window under way.
    window: u64,
    calls: Vec<u32>,
    retries: Vec<u32>,
    /// The window's first second.
    first_second: u64,
    /// The seconds of the window written to, as a range, so that only they are read and
    /// cleared (none when `lowest` > `highest`).
    lowest: usize,
    highest: usize,
    /// The seconds of the window that hold the recovery or the end of a bucket of the
    /// timeline: their calls are put in the outage or after it, and in their bucket, one by
    /// one. Every other second's calls all fall on one side and in one bucket, and are put
    /// there together when the window ends.
    split: Vec<bool>,
    /// Where `split` is set.
    splits: Vec<usize>,
}

impl Tally {
    /// An empty tally of `processes`, over `buckets` buckets of `bucket` for the timeline.
    pub fn new(processes: usize, outage: Nanos, bucket: Nanos, buckets: usize) -> Tally {
        Tally {
            report: Report {
                timeline: vec![0; buckets],
                bucket: Duration::from_nanos(bucket),
                ..Report::default()
            },
            outage,
            bucket: Divisor::new(bucket),
            first_success: None,
            recovered: vec![Nanos::MAX; processes],
            window: 0,
            calls: vec![0; WINDOW_SECONDS as usize],
            retries: vec![0; WINDOW_SECONDS as usize],
            first_second: 0,
            lowest: usize::MAX,
            highest: 0,
            split: vec![false; WINDOW_SECONDS as usize],
            splits: Vec::new(),
        }
    }

    /// Starts counting the calls of `window`; the peaks of the one before are kept.
    pub fn begin(&mut self, window: u64) {
        self.end_window();
        self.window = window;
        self.first_second = window.saturating_mul(WINDOW_SECONDS);
        for i in self.splits.drain(..) {
            self.split[i] = false;
        }
        let buckets = self.report.timeline.len() as u64;
        let ends = (1..=buckets).map(|k| k.saturating_mul(self.bucket.d));
        for at in ends.chain([self.outage]) {
            let second = (at / SECOND).wrapping_sub(self.first_second);
            if let Ok(i) = usize::try_from(second)
                && i < self.split.len()
                && at % SECOND != 0
            {
                self.split[i] = true;
                self.splits.push(i);
            }
        }
    }

    /// A call at `at`, in the window under way; `retry` when it is not its run's first.
    pub fn call(&mut self, at: Nanos, retry: bool) {
        let second = (at / SECOND).wrapping_sub(self.first_second);
        // Only a caller that stepped past the window's end could give a time beyond it.
        let Some(i) = usize::try_from(second)
            .ok()
            .filter(|&i| i < self.calls.len())
        else {
            debug_assert!(false, "a call at {at} outside window {}", self.window);
            return;
        };
        self.calls[i] += 1;
        if retry {
            self.retries[i] += 1;
        }
        if i < self.lowest {
            self.lowest = i;
        }
        if i > self.highest {
            self.highest = i;
        }
        if self.split[i] {
            self.count(at, 1);
        }
    }

    /// Puts `calls` made at `at` in the outage or after it, and in their bucket.
    fn count(&mut self, at: Nanos, calls: u64) {
        if at < self.outage {
            self.report.calls_during += calls;
        } else {
            self.report.calls_after += calls;
        }
        let bucket = usize::try_from(self.bucket.of(at)).unwrap_or(usize::MAX);
        if let Some(slot) = self.report.timeline.get_mut(bucket) {
            *slot += calls;
        }
    }

    /// A success of `process`'s run at `at`.
    pub fn success(&mut self, process: usize, at: Nanos) {
        self.report.successes += 1;
        if at >= self.outage {
            let since = at - self.outage;
            self.first_success = Some(self.first_success.map_or(since, |f| f.min(since)));
            if let Some(first) = self.recovered.get_mut(process) {
                *first = (*first).min(at);
            }
        }
    }

    /// Folds the window under way into the peaks and clears it.
    fn end_window(&mut self) {
        let (lo, hi) = (self.lowest, self.highest);
        (self.lowest, self.highest) = (usize::MAX, 0);
        if lo <= hi {
            for i in lo..=hi {
                if !self.split[i] && self.calls[i] > 0 {
                    let start = (self.first_second + i as u64).saturating_mul(SECOND);
                    self.count(start, u64::from(self.calls[i]));
                }
            }
            let most = |counts: &mut [u32]| {
                let most = counts.iter().copied().max().unwrap_or(0);
                counts.fill(0);
                u64::from(most)
            };
            self.report.peak_per_second = self
                .report
                .peak_per_second
                .max(most(&mut self.calls[lo..=hi]));
            self.report.peak_retries_per_second = self
                .report
                .peak_retries_per_second
                .max(most(&mut self.retries[lo..=hi]));
        }
    }

    /// The report, once every call is in: its peaks, the first success, and the time every
    /// process had succeeded once (when all had).
    pub fn report(mut self, horizon: Nanos) -> Report {
        self.end_window();
        let mut report = self.report;
        report.first_success = self.first_success.map(Duration::from_nanos);
        report.last_success = self
            .recovered
            .iter()
            .copied()
            .try_fold(0, |latest: Nanos, at| {
                (at != Nanos::MAX).then(|| latest.max(at))
            })
            .filter(|_| !self.recovered.is_empty())
            .map(|at| Duration::from_nanos(at - self.outage));
        report.horizon = Duration::from_nanos(horizon);
        // The last bucket runs past the simulated time: it would show a drop that is not there.
        let buckets = horizon / nanos_of(report.bucket);
        report
            .timeline
            .truncate(usize::try_from(buckets).unwrap_or(usize::MAX).max(1));
        report
    }
}

fn nanos_of(d: Duration) -> Nanos {
    super::nanos(d).max(1)
}

/// Division by a number fixed in advance, as a multiplication: every call is put in a bucket
/// of the timeline, and a division by a number known only at run time costs more than all
/// else a call is counted with.
#[derive(Clone, Copy)]
struct Divisor {
    d: u64,
    /// ⌊2⁶⁴ / d⌋, for d ≥ 2.
    m: u64,
}

impl Divisor {
    fn new(d: u64) -> Divisor {
        let d = d.max(1);
        let m = if d == 1 {
            0
        } else {
            u64::try_from((1u128 << 64) / u128::from(d)).unwrap_or(u64::MAX)
        };
        Divisor { d, m }
    }

    /// ⌊n / d⌋: the product's high half falls short of it by at most one.
    fn of(self, n: u64) -> u64 {
        if self.d == 1 {
            return n;
        }
        let q = u64::try_from((u128::from(n) * u128::from(self.m)) >> 64).unwrap_or(u64::MAX);
        if n - q * self.d >= self.d { q + 1 } else { q }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::RngExt;

    use crate::policy::backoff::seeded;

    #[test]
    fn the_quick_division_is_the_division() {
        let mut rng = seeded(1);
        for d in [
            1,
            2,
            3,
            7,
            1_000_000_000,
            40_000_000_000,
            u64::MAX / 3,
            u64::MAX,
        ] {
            let div = Divisor::new(d);
            for n in [0, 1, d - 1, d, d.saturating_add(1), u64::MAX, u64::MAX - 1] {
                assert_eq!(div.of(n), n / d, "{n} / {d}");
            }
            for _ in 0..10_000 {
                let n: u64 = rng.random();
                assert_eq!(div.of(n), n / d, "{n} / {d}");
                let n = n % d.saturating_mul(1000).max(1);
                assert_eq!(div.of(n), n / d, "{n} / {d}");
            }
        }
    }

    #[test]
    fn the_busiest_second_is_found_across_windows_and_in_any_order() {
        let s = SECOND;
        let mut t = Tally::new(2, 10 * s, 60 * s, 10);
        t.begin(0);
        for at in [5 * s + 3, 2 * s, 5 * s, 5 * s + 999_999_999, 2 * s + 1] {
            t.call(at, at > 4 * s);
        }
        let far = window_end(0) + 7 * s;
        t.begin(window_of(far));
        t.call(far, false);
        t.call(far + 1, false);
        t.success(0, 12 * s);
        t.success(1, 11 * s);
        t.success(0, 11 * s);
        let r = t.report(600 * s);
        assert_eq!((r.peak_per_second, r.peak_retries_per_second), (3, 3));
        assert_eq!((r.calls_during, r.calls_after), (5, 2));
        assert_eq!(r.timeline[0], 5);
        assert_eq!(r.first_success, Some(Duration::from_secs(1)));
        // Process 0 first succeeded at 11 s, process 1 at 11 s: all back 1 s after.
        assert_eq!(r.last_success, Some(Duration::from_secs(1)));
        assert_eq!(r.successes, 3);
    }

    #[test]
    fn calls_are_put_in_their_bucket_and_side_of_the_recovery_as_one_by_one() {
        let mut rng = seeded(7);
        // Buckets and a recovery that end within a second, windows that end within a bucket.
        let (outage, bucket) = (3_700_123_456_789, 1_234_567_890_123);
        let buckets = 80;
        let mut t = Tally::new(1, outage, bucket, buckets);
        let mut calls: Vec<Nanos> = (0..50_000)
            .map(|_| rng.random_range(0..bucket * buckets as u64))
            .collect();
        calls.extend([outage - 1, outage, bucket - 1, bucket, 2 * bucket]);
        calls.sort_unstable();
        let mut expected = vec![0u64; buckets];
        for &at in &calls {
            if window_of(at) != t.window || at == calls[0] {
                t.begin(window_of(at));
            }
            t.call(at, false);
            expected[(at / bucket) as usize] += 1;
        }
        let during = calls.iter().filter(|&&at| at < outage).count() as u64;
        let r = t.report(bucket * buckets as u64);
        assert_eq!(r.calls_during, during);
        assert_eq!(r.calls_after, calls.len() as u64 - during);
        assert_eq!(r.timeline, expected);
    }

    #[test]
    fn a_process_that_never_succeeded_leaves_the_fleet_not_back() {
        let s = SECOND;
        let mut t = Tally::new(2, 10 * s, 60 * s, 10);
        t.success(0, 30 * s);
        // Before the recovery: not a recovery.
        t.success(1, 5 * s);
        assert_eq!(t.report(600 * s).last_success, None);
    }
}
