//! The state that runs sharing a key keep together (`--key`): a breaker, a budget, and a
//! generation number that counts the breaker's moves, so that a result from an attempt that
//! started under an older state counts for nothing. Each function is one atomic operation of a
//! store: the local file store runs it under its lock, and Redis runs the same rules in a
//! script. The settings are `policy/key.rs`'s, the stores `state/`'s (its module doc says which
//! file holds what).

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::adaptive::History;
use super::breaker::{Admission, Attempt, Breaker, BreakerSettings, Change, State};
use super::budget::{Budget, BudgetSettings};

/// The flags of the breaker and the budget, and how long a probe may hold its lease.
#[derive(Clone, Debug, PartialEq)]
pub struct KeyRules {
    pub breaker: BreakerSettings,
    pub budget: BudgetSettings,
    /// How long a probe holds the lease: the attempt timeout, else a minute.
    pub lease: Duration,
    /// Keep the key's recent outcomes, which the adaptive delay learns from (`--backoff adaptive`).
    pub history: bool,
}

impl KeyRules {
    /// Whether the key's breaker or budget could refuse a retry. A run that cannot read the
    /// key's state makes a retry only when they could not: an unknown breaker may be open, as
    /// it is likely to be when a herd of failing runs keeps its lock busy, and an unknown
    /// budget may be spent.
    pub fn may_refuse_retries(&self) -> bool {
        self.breaker.enabled() || self.budget.enabled()
    }
}

/// A key's state.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct KeyState {
    /// Goes up by one at each move of the breaker.
    pub generation: u64,
    pub breaker: Breaker,
    pub budget: Budget,
    /// The latest outcomes of runs that keep them (`--backoff adaptive`); empty otherwise, and
    /// then not written.
    #[serde(default, skip_serializing_if = "History::is_empty")]
    pub history: History,
}

/// A run's standing with its key: the state its current attempt started under.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ticket {
    pub generation: u64,
    /// The attempt is the probe of a half-open breaker.
    pub probe: bool,
}

/// Why a run is not let in, or not let go on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// The breaker is open until then.
    Open { until: u64 },
    /// Another process holds the probe's lease until then.
    Probing { lease_until: u64 },
    /// No token is left for a retry.
    Budget,
    /// The breaker is open, as the `--state` store told this host earlier: the run's host
    /// remembers it until the open time is over, and calls the store no more until then.
    Remembered,
    /// The key's state could not be read in time (its lock was not had): a retry its breaker
    /// or budget would have had to allow is not made.
    Unknown,
}

/// Why a run is refused, and for how long at most, as the log says it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Refused {
    pub refusal: Refusal,
    /// Until the breaker's open time or the probe's lease ends; zero for the budget.
    pub left: Duration,
}

/// What a run that wants to start is told.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Admit {
    /// Run, with this ticket (a probe's, when `ticket.probe`).
    Run(Ticket),
    Refused(Refusal),
}

/// What the store says after an attempt.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct After {
    /// The run's ticket for its next attempt.
    pub ticket: Ticket,
    /// The breaker's move, if this attempt made one.
    pub change: Change,
    /// Set when the run wanted a retry and may not have it.
    pub refusal: Option<Refusal>,
}

/// A key's state as `--explain` and the reports show it.
#[derive(Clone, Debug, PartialEq)]
pub struct View {
    pub breaker: State,
    /// Failures that count towards opening it.
    pub failures: usize,
    /// While it is open or half-open: the failures that opened it (1 when a failed probe
    /// reopened it); 0 while it is closed.
    pub opened_by: usize,
    pub open_until: Option<u64>,
    pub lease_until: Option<u64>,
    pub tokens: f64,
    /// The key's recent outcomes, for the adaptive delay.
    pub history: History,
    /// A success recorded now would change nothing (see [`KeyState::settled`]).
    pub settled: bool,
}

impl View {
    /// Whether the success of an attempt that started under this view, with `ticket`, can go
    /// unrecorded: nothing a later operation can see would differ. The attempt's evidence was
    /// gathered from its start, and its success counts as of then; what it gives up against
    /// being recorded when it ends: failures that other runs record meanwhile are not cleared
    /// by it, and its `--budget-ratio` credit to a bucket that was full is not given.
    pub fn success_is_moot(&self, ticket: Ticket) -> bool {
        self.settled && !ticket.probe
    }
}

impl KeyState {
    /// The state of a key seen for the first time.
    pub fn new(s: &KeyRules, now: u64) -> KeyState {
        KeyState {
            generation: 0,
            breaker: Breaker::default(),
            budget: Budget::full(&s.budget, now),
            history: History::default(),
        }
    }

    /// Keeps every time read from a store within what the settings allow at `now`.
    pub fn clamp(&mut self, s: &KeyRules, now: u64) {
        self.breaker.clamp(&s.breaker, now, s.lease);
        self.budget.clamp(&s.budget, now);
        self.history.clamp(now);
    }

    /// Moves every time from one timeline to another: the moment `from` on the old one is
    /// `to` on the new one. A store whose clock restarted (a reboot) calls this, then `clamp`.
    pub fn shift(&mut self, from: u64, to: u64) {
        let moved = |t: &mut u64| {
            *t = if to >= from {
                t.saturating_add(to - from)
            } else {
                t.saturating_sub(from - to)
            }
        };
        self.breaker.failure_times().iter_mut().for_each(moved);
        match &mut self.breaker {
            Breaker::Closed { .. } => {}
            Breaker::Open { until, .. } => moved(until),
            Breaker::HalfOpen { lease_until, .. } => moved(lease_until),
        }
        moved(&mut self.budget.at);
        self.history.times_mut().for_each(moved);
    }

    /// A run wants to start: run, probe, or be refused.
    pub fn admit(&mut self, s: &KeyRules, now: u64) -> Admit {
        let ticket = |generation, probe| Admit::Run(Ticket { generation, probe });
        match self.breaker.enter(&s.breaker, now, s.lease) {
            Admission::Run => ticket(self.generation, false),
            Admission::Probe => {
                self.generation += 1;
                ticket(self.generation, true)
            }
            Admission::Open { until } => Admit::Refused(Refusal::Open { until }),
            Admission::Probing { lease_until } => Admit::Refused(Refusal::Probing { lease_until }),
        }
    }

    /// Counts an attempt that ended at `now` and, when the run `wants_retry`, asks for one.
    /// `u` in [0, 1) is the random cut of a new open time.
    pub fn after_attempt(
        &mut self,
        s: &KeyRules,
        now: u64,
        mut ticket: Ticket,
        attempt: Attempt,
        wants_retry: bool,
        u: f64,
    ) -> After {
        let mut change = Change::None;
        if ticket.generation == self.generation {
            change = self
                .breaker
                .record(&s.breaker, now, ticket.probe, attempt, u);
            if change != Change::None {
                self.generation += 1;
                if change == Change::Closed {
                    ticket = Ticket {
                        generation: self.generation,
                        probe: false,
                    };
                }
            }
        }
        if attempt == Attempt::Success {
            self.budget.succeeded(&s.budget, now);
        }
        if s.history && attempt != Attempt::Uncounted {
            self.history.record(now, attempt == Attempt::Success);
        }
        let mut refusal = None;
        if wants_retry {
            refusal = self.refusal(s, &mut ticket);
            if refusal.is_none() && !self.budget.take(&s.budget, now) {
                refusal = Some(Refusal::Budget);
            }
        }
        After {
            ticket,
            change,
            refusal,
        }
    }

    /// Checked again just before a retry starts, after the wait: has the breaker left the
    /// state the run was let in under? Reads only.
    pub fn before_retry(&self, s: &KeyRules, ticket: &mut Ticket) -> Option<Refusal> {
        self.refusal(s, ticket)
    }

    /// A retry may go ahead only while the breaker is closed; its attempt then starts under
    /// the current state.
    fn refusal(&self, s: &KeyRules, ticket: &mut Ticket) -> Option<Refusal> {
        if !s.breaker.enabled() {
            return None;
        }
        match self.breaker {
            Breaker::Closed { .. } => {
                *ticket = Ticket {
                    generation: self.generation,
                    probe: false,
                };
                None
            }
            Breaker::Open { until, .. } => Some(Refusal::Open { until }),
            Breaker::HalfOpen { lease_until, .. } => Some(Refusal::Probing { lease_until }),
        }
    }

    /// Whether recording a success now, from a run that is not probing, would change nothing
    /// that any later operation, at any time, can tell: the breaker is off, or closed and
    /// keeping no failure (`record` leaves it as it is); the budget is off, or holds its burst
    /// (`succeeded` then only moves `at`, and a full bucket's `at` counts for nothing: every
    /// operation first clamps it to its own time, and `refill` then sets it to that time);
    /// and no history is kept (`--backoff adaptive` learns from every outcome). The failures
    /// and tokens as stored, not as `view` counts them at `now`: a store's clock may go back,
    /// and bring an old failure or a bucket's old time back into play.
    pub fn settled(&self, s: &KeyRules) -> bool {
        let breaker = !s.breaker.enabled()
            || matches!(&self.breaker, Breaker::Closed { failures } if failures.is_empty());
        let budget = !s.budget.enabled() || self.budget.milli >= s.budget.burst_milli();
        breaker && budget && !s.history
    }

    /// What the state says at `now`, without changing it.
    pub fn view(&self, s: &KeyRules, now: u64) -> View {
        let (open_until, lease_until) = match self.breaker {
            Breaker::Closed { .. } => (None, None),
            Breaker::Open { until, .. } => (Some(until), None),
            Breaker::HalfOpen { lease_until, .. } => (None, Some(lease_until)),
        };
        View {
            breaker: self.breaker.state(),
            failures: self.breaker.failures(&s.breaker, now),
            opened_by: self.breaker.opened_by(),
            open_until,
            lease_until,
            tokens: self.budget.left(&s.budget, now),
            history: self.history.clone(),
            settled: self.settled(s),
        }
    }
}

#[cfg(test)]
#[path = "shared_tests.rs"]
pub(crate) mod tests;
