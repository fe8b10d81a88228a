//! The circuit breaker a key's runs share (`--breaker-*`), as pure transitions: closed → open after
//! enough consecutive retryable failures within a window; open → half-open when one process
//! takes the lease for a single probe; half-open → closed on the probe's success, or open again
//! for twice as long on its failure. Times are milliseconds on the store's own clock, given by
//! the caller, so the same code runs against a file, Redis, or the simulator's virtual time.

use std::time::Duration;

use serde::{Deserialize, Serialize};

/// The breaker's flags.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BreakerSettings {
    /// Consecutive failed attempts that open it; 0 turns it off.
    pub failures: u32,
    /// Failures older than this do not count.
    pub window: Duration,
    /// How long it stays open the first time.
    pub open: Duration,
    /// The longest it stays open.
    pub open_max: Duration,
}

impl BreakerSettings {
    pub fn enabled(&self) -> bool {
        self.failures > 0
    }

    /// The first open time, never longer than the longest.
    pub fn first_open(&self) -> u64 {
        ms(self.open.min(self.open_max))
    }
}

/// The breaker's state.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum Breaker {
    /// Commands run. `failures` holds the times of the latest consecutive retryable failures,
    /// oldest first, no more of them than open the breaker.
    Closed { failures: Vec<u64> },
    /// Runs are refused until `until`. `open_for` is this opening's length before it was
    /// shortened at random: the next one doubles it. `failures` holds the times of the
    /// failures that opened it (the failed probe's alone, when a probe reopened it), which
    /// `--list-keys` counts.
    Open {
        until: u64,
        open_for: u64,
        #[serde(default)]
        failures: Vec<u64>,
    },
    /// One process holds the lease to probe until `lease_until`; the others are refused.
    /// `failures` as when it was open.
    HalfOpen {
        lease_until: u64,
        open_for: u64,
        #[serde(default)]
        failures: Vec<u64>,
    },
}

impl Default for Breaker {
    fn default() -> Self {
        Breaker::Closed {
            failures: Vec::new(),
        }
    }
}

/// What the breaker says to a run that wants to start.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Admission {
    /// Run as usual.
    Run,
    /// Run one probe attempt, holding the lease.
    Probe,
    /// Do not run: the breaker is open until then.
    Open { until: u64 },
    /// Do not run: another process is probing, with a lease until then.
    Probing { lease_until: u64 },
}

/// How an attempt ended, as the breaker counts it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Attempt {
    Success,
    /// A status that would be retried, whether or not the run has attempts left.
    Failure,
    /// A fatal status or a cancellation: the breaker does not count it.
    Uncounted,
}

/// The breaker's move after an attempt.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Change {
    /// Nothing changed, or a failure was counted.
    None,
    /// It opened, until then.
    Opened { until: u64 },
    /// The probe succeeded and it closed.
    Closed,
    /// The probe ended neither way (a fatal status, a cancellation): the lease is given back
    /// and the next run to start probes.
    Released,
}

/// When a probe's lease given at `now` ends: `lease` after it, and a part of a fifth of `lease`
/// more, which the store's clock picks (its remainder). A store so busy that it answers a run
/// after the run stopped waiting gives the lease to a run that never hears of it, and every
/// other run is refused until the lease ends. Were leases as long as the period of the cron that
/// starts the runs, each would end in the same busy moment of a later period and go to such a
/// run again, and again; the part more moves the end out of step with any period.
pub fn lease_until(now: u64, lease: Duration) -> u64 {
    let spread = ms(lease) / 5;
    let more = now.checked_rem(spread).unwrap_or(0);
    now.saturating_add(ms(lease)).saturating_add(more)
}

/// The latest a lease given at `now` may end ([`lease_until`]).
fn longest_lease_until(now: u64, lease: Duration) -> u64 {
    now.saturating_add(ms(lease)).saturating_add(ms(lease) / 5)
}

impl Breaker {
    /// A run wants to start at `now`. `lease` is how long a probe may hold the lease.
    pub fn enter(&mut self, s: &BreakerSettings, now: u64, lease: Duration) -> Admission {
        if !s.enabled() {
            return Admission::Run;
        }
        match *self {
            Breaker::Closed { .. } => Admission::Run,
            Breaker::Open { until, .. } if now < until => Admission::Open { until },
            Breaker::HalfOpen { lease_until, .. } if now < lease_until => {
                Admission::Probing { lease_until }
            }
            // Open and its time is up, or the probe's lease expired (its process died).
            Breaker::Open {
                open_for,
                ref mut failures,
                ..
            }
            | Breaker::HalfOpen {
                open_for,
                ref mut failures,
                ..
            } => {
                let failures = std::mem::take(failures);
                *self = Breaker::HalfOpen {
                    lease_until: lease_until(now, lease),
                    open_for,
                    failures,
                };
                Admission::Probe
            }
        }
    }

    /// Counts an attempt that ended at `now`. `probe` says the attempt was the probe of the
    /// current half-open state; `u` in [0, 1) shortens a new open time at random.
    pub fn record(
        &mut self,
        s: &BreakerSettings,
        now: u64,
        probe: bool,
        result: Attempt,
        u: f64,
    ) -> Change {
        if !s.enabled() {
            return Change::None;
        }
        match self {
            Breaker::HalfOpen {
                open_for, failures, ..
            } if probe => {
                let open_for = *open_for;
                match result {
                    Attempt::Success => {
                        *self = Breaker::default();
                        Change::Closed
                    }
                    Attempt::Failure => {
                        let doubled = open_for.saturating_mul(2).min(ms(s.open_max));
                        self.open(now, doubled, u, vec![now])
                    }
                    Attempt::Uncounted => {
                        let failures = std::mem::take(failures);
                        *self = Breaker::Open {
                            until: now,
                            open_for,
                            failures,
                        };
                        Change::Released
                    }
                }
            }
            Breaker::Closed { failures } if !probe => match result {
                Attempt::Success => {
                    failures.clear();
                    Change::None
                }
                Attempt::Failure => {
                    let since = now.saturating_sub(ms(s.window));
                    failures.retain(|&at| at >= since);
                    failures.push(now);
                    let keep = usize::try_from(s.failures).unwrap_or(usize::MAX);
                    if failures.len() > keep {
                        failures.drain(..failures.len() - keep);
                    }
                    if failures.len() >= keep {
                        let failures = std::mem::take(failures);
                        self.open(now, s.first_open(), u, failures)
                    } else {
                        Change::None
                    }
                }
                Attempt::Uncounted => Change::None,
            },
            // The caller checks that the attempt started under the current state; anything else
            // is a late result that must not count twice.
            _ => Change::None,
        }
    }

    /// Opens for `open_for`, shortened at random by up to a fifth, after `failures`.
    fn open(&mut self, now: u64, open_for: u64, u: f64, failures: Vec<u64>) -> Change {
        let cut = (open_for as f64 * 0.2 * u.clamp(0.0, 1.0)) as u64;
        let until = now.saturating_add(open_for - cut.min(open_for));
        *self = Breaker::Open {
            until,
            open_for,
            failures,
        };
        Change::Opened { until }
    }

    /// The failures that opened it, while it is open or half-open.
    pub fn opened_by(&self) -> usize {
        match self {
            Breaker::Closed { .. } => 0,
            Breaker::Open { failures, .. } | Breaker::HalfOpen { failures, .. } => failures.len(),
        }
    }

    /// The times of the failures it keeps, in whichever state.
    pub fn failure_times(&mut self) -> &mut Vec<u64> {
        match self {
            Breaker::Closed { failures }
            | Breaker::Open { failures, .. }
            | Breaker::HalfOpen { failures, .. } => failures,
        }
    }

    /// Failures that still count at `now`.
    pub fn failures(&self, s: &BreakerSettings, now: u64) -> usize {
        match self {
            Breaker::Closed { failures } => {
                let since = now.saturating_sub(ms(s.window));
                failures.iter().filter(|&&at| at >= since).count()
            }
            _ => 0,
        }
    }

    /// Keeps every time read from a store within what the settings allow at `now`, so that no
    /// clock set back or forward keeps the breaker open longer than `--breaker-open-max` (or a
    /// lease longer than `lease`).
    pub fn clamp(&mut self, s: &BreakerSettings, now: u64, lease: Duration) {
        let max = ms(s.open_max);
        for at in self.failure_times() {
            *at = (*at).min(now);
        }
        match self {
            Breaker::Closed { .. } => {}
            Breaker::Open {
                until, open_for, ..
            } => {
                *until = (*until).min(now.saturating_add(max));
                *open_for = (*open_for).min(max);
            }
            Breaker::HalfOpen {
                lease_until,
                open_for,
                ..
            } => {
                *lease_until = (*lease_until).min(longest_lease_until(now, lease));
                *open_for = (*open_for).min(max);
            }
        }
    }

    /// Which of its three states it is in.
    pub fn state(&self) -> State {
        match self {
            Breaker::Closed { .. } => State::Closed,
            Breaker::Open { .. } => State::Open,
            Breaker::HalfOpen { .. } => State::HalfOpen,
        }
    }

    /// The state's name, as logs and metrics show it.
    pub fn name(&self) -> &'static str {
        self.state().name()
    }
}

/// The breaker's state without its times, as the reports show it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum State {
    #[default]
    Closed,
    Open,
    HalfOpen,
}

impl State {
    /// `closed`, `open` or `half-open`.
    pub fn name(self) -> &'static str {
        match self {
            State::Closed => "closed",
            State::Open => "open",
            State::HalfOpen => "half-open",
        }
    }
}

impl std::fmt::Display for State {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// A duration in whole milliseconds.
pub fn ms(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIN: u64 = 60_000;

    fn settings() -> BreakerSettings {
        BreakerSettings {
            failures: 3,
            window: Duration::from_secs(3600),
            open: Duration::from_secs(60),
            open_max: Duration::from_secs(900),
        }
    }

    const LEASE: Duration = Duration::from_secs(60);

    /// A breaker opened at `now` for a minute (not shortened).
    fn opened(now: u64) -> Breaker {
        let s = settings();
        let mut b = Breaker::default();
        for _ in 0..3 {
            b.record(&s, now, false, Attempt::Failure, 0.0);
        }
        b
    }

    #[test]
    fn consecutive_failures_open_it_and_a_success_resets_the_count() {
        let s = settings();
        let mut b = Breaker::default();
        assert_eq!(b.record(&s, 0, false, Attempt::Failure, 0.0), Change::None);
        assert_eq!(b.record(&s, 1, false, Attempt::Failure, 0.0), Change::None);
        assert_eq!(b.record(&s, 2, false, Attempt::Success, 0.0), Change::None);
        assert_eq!(b.failures(&s, 2), 0);
        b.record(&s, 3, false, Attempt::Failure, 0.0);
        b.record(&s, 4, false, Attempt::Failure, 0.0);
        assert_eq!(
            b.record(&s, 5, false, Attempt::Failure, 0.0),
            Change::Opened { until: 5 + MIN }
        );
        assert_eq!(b.enter(&s, 6, LEASE), Admission::Open { until: 5 + MIN });
    }

    #[test]
    fn failures_older_than_the_window_do_not_count() {
        let s = settings();
        let mut b = Breaker::default();
        b.record(&s, 0, false, Attempt::Failure, 0.0);
        b.record(&s, 1, false, Attempt::Failure, 0.0);
        let later = 3600 * 1000 + 2;
        assert_eq!(b.failures(&s, later), 0);
        assert_eq!(
            b.record(&s, later, false, Attempt::Failure, 0.0),
            Change::None
        );
        assert_eq!(b.failures(&s, later), 1);
    }

    #[test]
    fn fatal_statuses_and_cancellations_are_not_counted() {
        let s = settings();
        let mut b = Breaker::default();
        b.record(&s, 0, false, Attempt::Failure, 0.0);
        b.record(&s, 1, false, Attempt::Uncounted, 0.0);
        assert_eq!(b.failures(&s, 1), 1);
        b.record(&s, 2, false, Attempt::Failure, 0.0);
        assert!(matches!(
            b.record(&s, 3, false, Attempt::Failure, 0.0),
            Change::Opened { .. }
        ));
    }

    #[test]
    fn once_its_time_is_up_exactly_one_run_gets_the_probe_lease() {
        let s = settings();
        let mut b = opened(0);
        assert_eq!(b.enter(&s, MIN - 1, LEASE), Admission::Open { until: MIN });
        assert_eq!(b.enter(&s, MIN, LEASE), Admission::Probe);
        let lease_until = MIN + 60_000;
        for now in [MIN, MIN + 1, lease_until - 1] {
            assert_eq!(b.enter(&s, now, LEASE), Admission::Probing { lease_until });
        }
    }

    #[test]
    fn a_lease_ends_a_part_of_its_fifth_later_that_the_clock_picks() {
        // A minute's lease given on the minute ends on the next; given 5 s past, 5 s more.
        assert_eq!(lease_until(MIN, LEASE), 2 * MIN);
        assert_eq!(lease_until(MIN + 5_000, LEASE), 2 * MIN + 10_000);
        assert_eq!(lease_until(MIN + 11_999, LEASE), 2 * MIN + 2 * 11_999);
        assert_eq!(lease_until(MIN + 12_000, LEASE), 2 * MIN + 12_000);
        // A minute's cron whose burst keeps the store busy for 5 s: a lease given 700 ms into
        // one, to a run that never heard of it, and each next one given at the end of the
        // last, end further into the minute each time, out of the burst in a few minutes.
        let mut given = MIN + 700;
        let mut phases = Vec::new();
        for _ in 0..4 {
            given = lease_until(given, LEASE);
            phases.push(given % MIN);
        }
        assert_eq!(phases, [1_400, 2_800, 5_600, 11_200]);
        assert_eq!(lease_until(7, Duration::ZERO), 7);
    }

    #[test]
    fn an_expired_lease_goes_to_the_next_run() {
        let s = settings();
        let mut b = opened(0);
        assert_eq!(b.enter(&s, MIN, LEASE), Admission::Probe);
        // The probe's process died without a word: after the lease, another run probes.
        assert_eq!(b.enter(&s, MIN + 60_000, LEASE), Admission::Probe);
        assert_eq!(
            b.enter(&s, MIN + 60_001, LEASE),
            Admission::Probing {
                lease_until: MIN + 120_000
            }
        );
    }

    #[test]
    fn a_successful_probe_closes_it() {
        let s = settings();
        let mut b = opened(0);
        b.enter(&s, MIN, LEASE);
        assert_eq!(
            b.record(&s, MIN + 5, true, Attempt::Success, 0.0),
            Change::Closed
        );
        assert_eq!(b, Breaker::default());
        assert_eq!(b.enter(&s, MIN + 6, LEASE), Admission::Run);
    }

    #[test]
    fn failed_probes_double_the_open_time_up_to_the_cap() {
        let s = settings();
        let mut b = opened(0);
        let mut now = 0;
        let mut open_for = MIN;
        for expected in [2, 4, 8, 15, 15].map(|m| m * MIN) {
            now += open_for;
            assert_eq!(b.enter(&s, now, LEASE), Admission::Probe);
            assert_eq!(
                b.record(&s, now, true, Attempt::Failure, 0.0),
                Change::Opened {
                    until: now + expected
                }
            );
            open_for = expected;
        }
    }

    #[test]
    fn each_open_time_is_shortened_at_random_by_at_most_a_fifth() {
        let s = settings();
        for u in [0.0, 0.25, 0.5, 0.999_999] {
            let mut b = Breaker::default();
            b.record(&s, 0, false, Attempt::Failure, u);
            b.record(&s, 0, false, Attempt::Failure, u);
            let Change::Opened { until } = b.record(&s, 0, false, Attempt::Failure, u) else {
                panic!("opens");
            };
            assert!((MIN * 4 / 5..=MIN).contains(&until), "{u}: {until}");
            assert_eq!(until, MIN - (MIN as f64 * 0.2 * u) as u64);
        }
    }

    #[test]
    fn a_probe_that_ends_neither_way_gives_the_lease_back() {
        let s = settings();
        let mut b = opened(0);
        b.enter(&s, MIN, LEASE);
        assert_eq!(
            b.record(&s, MIN + 3, true, Attempt::Uncounted, 0.0),
            Change::Released
        );
        assert_eq!(b.enter(&s, MIN + 4, LEASE), Admission::Probe);
    }

    #[test]
    fn a_late_result_from_an_older_state_changes_nothing() {
        let s = settings();
        let mut b = opened(0);
        let before = b.clone();
        // A run admitted while closed reports after the breaker opened.
        assert_eq!(b.record(&s, 10, false, Attempt::Failure, 0.0), Change::None);
        assert_eq!(b.record(&s, 10, false, Attempt::Success, 0.0), Change::None);
        assert_eq!(b, before);
        // A probe's result arriving when the breaker is closed again counts for nothing either.
        let mut closed = Breaker::default();
        assert_eq!(
            closed.record(&s, 10, true, Attempt::Failure, 0.0),
            Change::None
        );
        assert_eq!(closed.failures(&s, 10), 0);
    }

    #[test]
    fn a_breaker_that_is_off_never_refuses() {
        let s = BreakerSettings {
            failures: 0,
            ..settings()
        };
        let mut b = Breaker::default();
        for now in 0..10 {
            assert_eq!(
                b.record(&s, now, false, Attempt::Failure, 0.0),
                Change::None
            );
        }
        assert_eq!(b.enter(&s, 10, LEASE), Admission::Run);
    }

    /// `--list-keys` shows the failures that opened a breaker, not the 0 a closed one would
    /// count: they are kept while it is open and half-open, and a failed probe's alone opens
    /// it again.
    #[test]
    fn an_open_breaker_keeps_the_failures_that_opened_it() {
        let s = settings();
        let mut b = Breaker::default();
        let opening = u64::from(s.failures);
        for now in 0..opening {
            b.record(&s, now, false, Attempt::Failure, 0.0);
        }
        assert_eq!(b.state(), State::Open);
        assert_eq!(b.failure_times(), &(0..opening).collect::<Vec<_>>());
        assert_eq!(
            b.failures(&s, opening),
            0,
            "none counts towards opening it again"
        );
        assert_eq!(b.enter(&s, 2 * MIN, LEASE), Admission::Probe);
        assert_eq!(
            (b.state(), b.opened_by()),
            (State::HalfOpen, opening as usize)
        );
        let Change::Opened { .. } = b.record(&s, 2 * MIN + 1, true, Attempt::Failure, 0.0) else {
            panic!("a failed probe opens it again: {b:?}");
        };
        assert_eq!(b.failure_times(), &vec![2 * MIN + 1]);
        assert_eq!(b.enter(&s, 10 * MIN, LEASE), Admission::Probe);
        assert_eq!(
            b.record(&s, 10 * MIN, true, Attempt::Uncounted, 0.0),
            Change::Released
        );
        assert_eq!((b.state(), b.opened_by()), (State::Open, 1));
        assert_eq!(b.enter(&s, 11 * MIN, LEASE), Admission::Probe);
        assert_eq!(
            b.record(&s, 11 * MIN, true, Attempt::Success, 0.0),
            Change::Closed
        );
        assert_eq!((b.state(), b.opened_by()), (State::Closed, 0));
    }

    #[test]
    fn times_from_a_store_are_clamped_to_what_the_settings_allow() {
        let s = settings();
        let mut b = Breaker::Open {
            until: u64::MAX,
            open_for: u64::MAX,
            failures: Vec::new(),
        };
        b.clamp(&s, 1000, LEASE);
        assert_eq!(
            b,
            Breaker::Open {
                until: 1000 + 15 * MIN,
                open_for: 15 * MIN,
                failures: Vec::new(),
            }
        );
        let mut b = Breaker::HalfOpen {
            lease_until: u64::MAX,
            open_for: MIN,
            failures: Vec::new(),
        };
        b.clamp(&s, 1000, LEASE);
        // The lease and its fifth at most ([`lease_until`]).
        let longest = 1000 + 60_000 + 12_000;
        assert_eq!(
            b.enter(&s, longest - 1, LEASE),
            Admission::Probing {
                lease_until: longest
            }
        );
        assert_eq!(b.enter(&s, longest, LEASE), Admission::Probe);
        let mut b = Breaker::Closed {
            failures: vec![5000, 9000],
        };
        b.clamp(&s, 1000, LEASE);
        assert_eq!(
            b,
            Breaker::Closed {
                failures: vec![1000, 1000]
            }
        );
    }
}
