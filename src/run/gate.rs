//! The key gate: where a run meets the state it shares with the other runs of its key
//! (`--key`). It has three places, each one method: [`Gate::begin`] before the first attempt,
//! [`Gate::after`] after each attempt's judgement, and [`Gate::before_retry`] after each wait.
//! A state problem is a warning: the gate drops the key and the run goes on without it; but a
//! key whose state cannot be read in time (its lock is busy) stays, unknown, and refuses every
//! retry its breaker or budget would have had to allow (`Shared` decides which).

use std::time::Duration;

use rand::{Rng, RngExt};

use crate::policy::adaptive::Estimates;
use crate::policy::breaker::{Attempt, Change};
use crate::policy::shared::Refused;
use crate::report::log::KeyFields;
use crate::report::reporter::Reporter;
use crate::report::words::OpenedBy;
use crate::state::{self, Shared};

/// What the key says of a run that wants to start.
pub enum Admission {
    Run,
    Refused(Refused),
    /// The `--state` store failed, and `--state-fail` is closed: why.
    StoreClosed(String),
}

/// A run's handle on its key's breaker and budget; empty without a key, or once the state
/// failed.
pub struct Gate {
    shared: Option<Shared>,
    /// When the key's store last answered, on the run's clock: the store's time is its time
    /// then plus what has passed since.
    heard_at: Duration,
    /// Failures in a row that open the breaker, for the log.
    opens_after: u32,
    /// The run's `--max-time`: no wait for the key outlasts it.
    max_time: Option<Duration>,
}

impl Gate {
    pub fn new(shared: Option<Shared>, opens_after: u32, max_time: Option<Duration>) -> Gate {
        Gate {
            shared,
            heard_at: Duration::ZERO,
            opens_after,
            max_time,
        }
    }

    /// The key's handle, told how long its next operation may wait at `now`.
    fn shared(&mut self, now: Duration) -> Option<&mut Shared> {
        self.shared_for(self.max_time.map(|max| max.saturating_sub(now)))
    }

    /// The key's handle, told its next operation may wait at most `left`.
    fn shared_for(&mut self, left: Option<Duration>) -> Option<&mut Shared> {
        let shared = self.shared.as_mut()?;
        shared.wait_at_most(left);
        Some(shared)
    }

    /// Before the first attempt: whether the key lets the run start. The reporter learns the
    /// key's state, so that every line after this one carries it.
    pub fn begin(&mut self, now: Duration, rep: &mut Reporter) -> Admission {
        // Half of what --max-time leaves at most: the command keeps the rest, rather than start
        // at the deadline (and be stopped at once) behind a store that was slow to answer.
        let left = self.max_time.map(|max| max.saturating_sub(now) / 2);
        let Some(shared) = self.shared_for(left) else {
            return Admission::Run;
        };
        let admitted = shared.admit();
        self.heard(now, rep);
        match admitted {
            Ok(None) => Admission::Run,
            Ok(Some(refused)) => Admission::Refused(refused),
            Err(e) if self.shared.as_ref().is_some_and(Shared::fails_closed) => {
                Admission::StoreClosed(e.to_string())
            }
            Err(e) => {
                self.lost(now, e, rep);
                Admission::Run
            }
        }
    }

    /// This run probes the key's half-open breaker.
    pub fn probing(&self) -> bool {
        self.shared.as_ref().is_some_and(Shared::probing)
    }

    /// When a run that has not called its key's store since `since` lets go of the store's
    /// connection: [`state::IDLE_GRACE`] later. `None` without a key.
    pub fn idle_at(&self, since: Duration) -> Option<Duration> {
        self.shared
            .as_ref()
            .map(|_| since.saturating_add(state::IDLE_GRACE))
    }

    /// Whether a wait of `delay`, with no call to the store, outlasts the grace: the store's
    /// connection is let go at its start then, since its end is known.
    pub fn idles_through(&self, delay: Duration) -> bool {
        self.shared.is_some() && delay > state::IDLE_GRACE
    }

    /// The run will not call the key's store for a while: it lets go of its connection.
    pub fn idle(&mut self) {
        if let Some(shared) = self.shared.as_mut() {
            shared.idle();
        }
    }

    /// After an attempt's judgement: counts the attempt and, when the run `wants_retry`, asks
    /// for one. Returns the key's refusal of that retry.
    pub fn after<R: Rng + ?Sized>(
        &mut self,
        counted: Attempt,
        wants_retry: bool,
        rng: &mut R,
        now: Duration,
        rep: &mut Reporter,
    ) -> Option<Refused> {
        let shared = self.shared(now)?;
        let was_probe = shared.probing();
        let u = rng.random::<f64>();
        let answer = shared.after_attempt(counted, wants_retry, u);
        self.heard(now, rep);
        let (change, refused) = match answer {
            Ok(answer) => answer,
            Err(e) => {
                self.lost(now, e, rep);
                return None;
            }
        };
        match change {
            Change::Opened { until } => {
                let store_now = self.shared.as_ref().map_or(until, Shared::now);
                let open = Duration::from_millis(until.saturating_sub(store_now));
                let by = if was_probe {
                    OpenedBy::Probe
                } else {
                    OpenedBy::Failures(self.opens_after)
                };
                rep.opened(open, by);
            }
            Change::Closed => rep.closed(),
            Change::None | Change::Released => {}
        }
        if let Some(refused) = refused {
            rep.refused_by(refused);
        }
        rep.key_summary();
        refused
    }

    /// After the wait, before a retry: the key's refusal, if the breaker left the state the run
    /// was let in under meanwhile.
    pub fn before_retry(&mut self, now: Duration, rep: &mut Reporter) -> Option<Refused> {
        let answer = self.shared(now)?.before_retry();
        self.heard(now, rep);
        match answer {
            Ok(Some(refused)) => {
                rep.refused_by(refused);
                Some(refused)
            }
            Ok(None) => {
                rep.key_summary();
                None
            }
            Err(e) => {
                self.lost(now, e, rep);
                None
            }
        }
    }

    /// What the key's recent outcomes say, for the adaptive delay: the history of the store's
    /// last answer with this attempt's failure added (a delay is only asked for after one), at
    /// the store's time now. `None` once the state is gone.
    pub fn estimates(&self, now: Duration, base: Duration) -> Option<Estimates> {
        let shared = self.shared.as_ref()?;
        let passed = u64::try_from(now.saturating_sub(self.heard_at).as_millis()).unwrap_or(0);
        let store_now = shared.now().saturating_add(passed);
        let view = shared.view.as_ref()?;
        Some(view.history.estimate_after_failure(store_now, base))
    }

    /// The store answered (or failed) at `now`: the reporter learns the key's state, the
    /// store's errors, and any warning it left.
    fn heard(&mut self, now: Duration, rep: &mut Reporter) {
        self.heard_at = now;
        rep.key = self.fields();
        let Some(shared) = self.shared.as_mut() else {
            return;
        };
        rep.store_errors(shared.errors);
        if let Some(warning) = shared.warning.take() {
            rep.state_warning(now, &warning);
        }
        if let Some(e) = shared.lock_lost.take() {
            rep.state_unknown(now, &e.to_string(), shared.retries_refused());
        }
    }

    /// A state problem: one warning, and the run goes on without the key.
    fn lost(&mut self, now: Duration, e: state::Error, rep: &mut Reporter) {
        if self.shared.take().is_some() {
            rep.key = None;
            rep.state_lost(now, &e.to_string());
        }
    }

    /// The key's state as the run last saw it, for the log.
    fn fields(&self) -> Option<KeyFields> {
        let shared = self.shared.as_ref()?;
        let view = shared.view.as_ref()?;
        Some(KeyFields {
            key: shared.key.clone(),
            breaker: view.breaker,
            probe: shared.probing(),
            tokens: view.tokens,
        })
    }
}
