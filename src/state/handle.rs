//! A run's handle on its key ([`Shared`]): the store it was given, the ticket of its admission,
//! and the view of the key it last heard; the one place that decides which of a run's
//! outcomes are told to the store, that falls back on the local state when a `--state`
//! store fails at the start, and that keeps a run whose key's state cannot be read in time
//! (its lock) from the retries its breaker or budget would have had to allow; and, with a
//! `--state` store, the one place that remembers on this host an open breaker the store told
//! of, and refuses runs from that memory, without a call, until its open time is over.

use std::time::Duration;

use super::{Error, Forgot, Memo, Reply, Store, Verdict};
use crate::policy::adaptive::History;
use crate::policy::breaker::{Attempt, Change, State};
use crate::policy::key::FailMode;
use crate::policy::shared::{Admit, KeyRules, Refusal, Refused, Ticket, View};

/// How long a run holds its connection to the store while it does not call it (an attempt
/// that runs, a wait before a retry): a failing run, whose attempts end fast, makes all its
/// calls over one connection; a fleet of hosts whose attempts or waits last minutes holds no
/// connection each meanwhile (a Redis server takes 10,000 clients by default).
pub const IDLE_GRACE: Duration = Duration::from_secs(2);

/// What a run with a `--state` store does when it cannot be reached before the run starts.
pub struct Fallback {
    pub fail: FailMode,
    /// The key's state in this host's state directory.
    pub local: Box<dyn Store>,
}

/// The fallback's warning `went_on`, and after it the one the local state's answer left.
fn before(went_on: String, then: Option<String>) -> String {
    match then {
        Some(w) => format!("{went_on}; {w}"),
        None => went_on,
    }
}

/// A run's handle on its key: the store, and the run's ticket.
pub struct Shared {
    pub key: String,
    rules: KeyRules,
    store: Box<dyn Store>,
    /// With a `--state` store: what to do if it fails, at the start or mid-run. Taken when
    /// the run falls back on it.
    pub fallback: Option<Fallback>,
    /// The store's errors in this run.
    pub errors: u32,
    ticket: Option<Ticket>,
    /// The key's state as the store last answered.
    pub view: Option<View>,
    /// A warning the last operation left, for the log.
    pub warning: Option<String>,
    now: u64,
    /// `view` is the state the current attempt started under (the answer to the admission or
    /// to the check before a retry), not one given after it.
    at_start: bool,
    /// The key's lock could not be had in time: the run does not know the key's state, and
    /// asks the store nothing more (each call would wait as long again).
    unknown: bool,
    /// Why the key's state became unknown, for the run to tell once.
    pub lock_lost: Option<Error>,
    /// Leave unrecorded the successes that change nothing (see `Shared::skips_success`).
    /// On for a real run's handle ([`open`]); off by default, so that the simulator sees
    /// every outcome.
    pub skip_moot_successes: bool,
    /// With a `--state` store: where this host remembers an open breaker the store told of
    /// (see [`Shared::recall`]). Dropped when the run falls back on its local state.
    pub memo: Option<Box<dyn Memo>>,
    /// A remembered verdict was found over: forgotten once the store says the breaker is no
    /// longer open.
    stale: bool,
}

impl Shared {
    pub fn new(key: String, rules: KeyRules, store: Box<dyn Store>) -> Shared {
        Shared {
            key,
            rules,
            store,
            fallback: None,
            errors: 0,
            ticket: None,
            view: None,
            warning: None,
            now: 0,
            at_start: false,
            unknown: false,
            lock_lost: None,
            skip_moot_successes: false,
            memo: None,
            stale: false,
        }
    }

    /// The store's time at its last answer.
    pub fn now(&self) -> u64 {
        self.now
    }

    /// The run must not start: its `--state` store failed and `--state-fail` is closed.
    pub fn fails_closed(&self) -> bool {
        self.fallback
            .as_ref()
            .is_some_and(|f| f.fail == FailMode::Closed)
    }

    /// This run probes the half-open breaker.
    pub fn probing(&self) -> bool {
        self.ticket.is_some_and(|t| t.probe)
    }

    /// Remembers what a reply says of the key; and, on this host, an open breaker it tells of.
    fn heard<T>(&mut self, reply: Reply<T>) -> (T, u64) {
        self.at_start = false;
        self.warning = reply.warning;
        self.now = reply.now;
        self.note(&reply.view, reply.now);
        self.view = Some(reply.view);
        (reply.value, reply.now)
    }

    /// The store's answer shows its breaker open until a time to come: this host remembers
    /// it, as time left on its own clock (never past `--breaker-open-max`), so that its next
    /// runs are refused without a call. One that shows it no longer open forgets a verdict
    /// found over. A problem with the memory is a warning; without a state directory there
    /// is nowhere to keep it, and nothing is said.
    fn note(&mut self, view: &View, now: u64) {
        let Some(memo) = self.memo.as_mut() else {
            return;
        };
        let done = match view.open_until.filter(|&until| until > now) {
            Some(until) => {
                self.stale = false;
                let left = Duration::from_millis(until - now).min(self.rules.breaker.open_max);
                memo.remember(Verdict {
                    left,
                    tokens: view.tokens,
                })
            }
            None if std::mem::take(&mut self.stale) => memo.forget().map(|_| ()),
            None => Ok(()),
        };
        self.memo_failed(done);
    }

    fn memo_failed(&mut self, done: Result<(), Error>) {
        match done {
            Ok(()) | Err(Error::NoDirectory) => {}
            Err(e) => {
                let w = format!(
                    "key '{}': this host cannot remember what the store said of the breaker: {e}",
                    self.key
                );
                self.warning = Some(match self.warning.take() {
                    Some(first) => format!("{first}; {w}"),
                    None => w,
                });
            }
        }
    }

    /// The open breaker this host remembers from the store, with its time left; `None` when it
    /// remembers none, the time is over (then noted, to be forgotten once the store says the
    /// breaker is no longer open), or it is longer than `--breaker-open-max`.
    pub fn remembered(&mut self) -> Option<Verdict> {
        if !self.rules.breaker.enabled() {
            return None;
        }
        let recalled = self.memo.as_mut()?.recall();
        let verdict = match recalled {
            Ok(verdict) => verdict?,
            Err(e) => {
                self.memo_failed(Err(e));
                return None;
            }
        };
        if verdict.left.is_zero() {
            self.stale = true;
            return None;
        }
        // Longer than this run's --breaker-open-max: not believed. The run asks the store,
        // which cuts the open time to it for the whole fleet, once and for all, and this host
        // remembers that. Cut here alone, each later call would cut it afresh from its own
        // time, and the breaker would stay open for as long as first told.
        (verdict.left <= self.rules.breaker.open_max).then_some(verdict)
    }

    /// The refusal of a run, or of its retry, from the open breaker this host remembers: no
    /// call is made. The view is the breaker open, with the tokens the store last told.
    fn recall(&mut self) -> Option<Refused> {
        let verdict = self.remembered()?;
        self.view = Some(View {
            breaker: State::Open,
            failures: 0,
            opened_by: 0,
            open_until: None,
            lease_until: None,
            tokens: verdict.tokens,
            history: History::default(),
            settled: false,
        });
        Some(Refused {
            refusal: Refusal::Remembered,
            left: verdict.left,
        })
    }

    /// The next operations may wait for the key at most `most` (what is left before the
    /// run's deadline).
    pub fn wait_at_most(&mut self, most: Option<Duration>) {
        self.store.wait_at_most(most);
        if let Some(fallback) = self.fallback.as_mut() {
            fallback.local.wait_at_most(most);
        }
    }

    /// Whether the run knows nothing of its key's state, which the store did not give in time.
    pub fn unknown(&self) -> bool {
        self.unknown
    }

    /// Whether a run whose key's state is unknown makes no retry: whether its breaker or
    /// budget would have had to allow one.
    pub fn retries_refused(&self) -> bool {
        self.rules.may_refuse_retries()
    }

    /// The key's refusal of a retry the run wants while its state is unknown: every retry the
    /// breaker or the budget would have had to allow.
    fn unknown_refusal(&self, wants_retry: bool) -> Option<Refused> {
        (wants_retry && self.retries_refused()).then_some(Refused {
            refusal: Refusal::Unknown,
            left: Duration::ZERO,
        })
    }

    /// A store's error: counted; one that leaves the key's state unknown
    /// ([`Error::leaves_state_unknown`]: a lock not had in time, a state that cannot be
    /// written) makes the run go on under that (`Ok`), with [`Shared::lock_lost`] saying why;
    /// any other error, or one after a cancel, is returned.
    fn failed(&mut self, e: Error) -> Result<(), Error> {
        self.errors += 1;
        // A call a cancel cut short: the run is ending by the signal, which must not be taken
        // for the key's refusal of a retry.
        if !e.leaves_state_unknown() || crate::platform::signals::cancelling_arrived() {
            return Err(e);
        }
        self.unknown = true;
        self.at_start = false;
        self.ticket = None;
        self.lock_lost = Some(e);
        Ok(())
    }

    /// Before the first attempt: `Some` when the run may not start. A `--state` store that
    /// fails here is replaced by the local state with `--state-fail open` (and the reply's
    /// warning says so); with `closed` the error is returned, and [`Shared::fails_closed`]
    /// says the run must not start. When the key's state cannot be read in time, the run
    /// starts: the command's first attempt is not the state's to refuse.
    ///
    /// An open breaker this host remembers from the store refuses the run before any call.
    pub fn admit(&mut self) -> Result<Option<Refused>, Error> {
        if let Some(refused) = self.recall() {
            return Ok(Some(refused));
        }
        let fallback = self.fallback.take();
        let mut went_on = None;
        let answer = match (self.store.admit(&self.rules), fallback) {
            (Err(e @ Error::Store { .. }), Some(fallback)) => {
                self.errors += 1;
                if fallback.fail == FailMode::Closed {
                    self.fallback = Some(fallback);
                    return Err(e);
                }
                self.store = fallback.local;
                // The local state's answers are not the store's: nothing is remembered of them.
                self.memo = None;
                went_on = Some(format!(
                    "key '{}': {e}; going on with this host's local state (--state-fail open)",
                    self.key
                ));
                self.store.admit(&self.rules)
            }
            (answer, fallback) => {
                // Kept for a store that fails mid-run.
                self.fallback = fallback;
                answer
            }
        };
        let mut reply = match answer {
            Ok(reply) => reply,
            Err(e) => {
                self.warning = went_on;
                return self.failed(e).map(|()| None);
            }
        };
        if let Some(went_on) = went_on {
            reply.warning = Some(before(went_on, reply.warning.take()));
        }
        match self.heard(reply) {
            (Admit::Run(ticket), _) => {
                self.ticket = Some(ticket);
                self.at_start = true;
                Ok(None)
            }
            (Admit::Refused(refusal), now) => Ok(Some(refused(refusal, now))),
        }
    }

    /// A `--state` store that failed mid-run, with `--state-fail open`: the run goes on with
    /// this host's local state, as a run whose store failed at its start does (one warning
    /// says so), admitted there afresh: `Ok(None)` with the new ticket, or the local state's
    /// refusal. Any other error, or the store's with `closed`, is given back.
    fn fall_back(&mut self, e: Error) -> Result<Option<Refused>, Error> {
        let open = self
            .fallback
            .as_ref()
            .is_some_and(|f| f.fail == FailMode::Open);
        if !matches!(e, Error::Store { .. }) || !open {
            return Err(e);
        }
        let Some(fallback) = self.fallback.take() else {
            return Err(e);
        };
        self.store = fallback.local;
        self.memo = None;
        let went_on = format!(
            "key '{}': {e}; going on with this host's local state (--state-fail open)",
            self.key
        );
        let reply = match self.store.admit(&self.rules) {
            Ok(reply) => reply,
            Err(e) => {
                self.warning = Some(went_on);
                return Err(e);
            }
        };
        let (admitted, now) = self.heard(reply);
        self.warning = Some(before(went_on, self.warning.take()));
        match admitted {
            Admit::Run(ticket) => {
                self.ticket = Some(ticket);
                Ok(None)
            }
            Admit::Refused(refusal) => {
                self.ticket = None;
                Ok(Some(refused(refusal, now)))
            }
        }
    }

    /// After an attempt's verdict: counts it, and when the run wants a retry, asks for one.
    /// Returns the breaker's move and, when the retry is refused, why.
    pub fn after_attempt(
        &mut self,
        attempt: Attempt,
        wants_retry: bool,
        u: f64,
    ) -> Result<(Change, Option<Refused>), Error> {
        if self.unknown {
            return Ok((Change::None, self.unknown_refusal(wants_retry)));
        }
        let Some(ticket) = self.ticket else {
            return Ok((Change::None, None));
        };
        if !self.records(attempt, wants_retry) {
            // The ticket, and the view the run reports, stay those of the attempt's start.
            self.at_start = false;
            return Ok((Change::None, None));
        }
        let mut answer = self
            .store
            .after_attempt(&self.rules, ticket, attempt, wants_retry, u);
        // The fallback's warning, said with the local state's answer.
        let mut went_on = None;
        if let Err(e) = answer {
            answer = match self.fall_back(e) {
                // Admitted there: the attempt is told to this host's state.
                Ok(None) => match self.ticket {
                    Some(ticket) => {
                        went_on = self.warning.take();
                        self.store
                            .after_attempt(&self.rules, ticket, attempt, wants_retry, u)
                    }
                    None => return Ok((Change::None, None)),
                },
                Ok(Some(refused)) => return Ok((Change::None, wants_retry.then_some(refused))),
                Err(e) => Err(e),
            };
        }
        let reply = match answer {
            Ok(reply) => reply,
            Err(e) => {
                self.warning = went_on;
                self.failed(e)?;
                return Ok((Change::None, self.unknown_refusal(wants_retry)));
            }
        };
        let (after, now) = self.heard(reply);
        if let Some(went_on) = went_on {
            self.warning = Some(before(went_on, self.warning.take()));
        }
        self.ticket = Some(after.ticket);
        Ok((after.change, after.refusal.map(|r| refused(r, now))))
    }

    /// Whether the attempt that ended is told to the store.
    fn records(&self, attempt: Attempt, wants_retry: bool) -> bool {
        !(attempt == Attempt::Success && !wants_retry && self.skips_success())
    }

    /// Whether the success of the attempt now running would not be told to the store: the one
    /// place where that is decided. It is not, when the state the attempt started under shows
    /// that recording it would change nothing ([`View::success_is_moot`]): a breaker closed
    /// with no failure kept, a full bucket, no probe. That saves the store a call (a round
    /// trip to Redis, a read of the state file) in the commonest run of all, one that succeeds
    /// at once. The success then counts as of the attempt's start, when its evidence was
    /// gathered: failures other runs record during the attempt are not cleared by it, and its
    /// `--budget-ratio` credit to a bucket that was full is not given. No success is moot on
    /// a key that keeps its outcomes (`--backoff adaptive`), and none is skipped without
    /// `skip_moot_successes`.
    fn skips_success(&self) -> bool {
        self.skip_moot_successes
            && self.at_start
            && self
                .ticket
                .zip(self.view.as_ref())
                .is_some_and(|(ticket, view)| view.success_is_moot(ticket))
    }

    /// The run will not call the store for a while (an attempt has run for [`IDLE_GRACE`],
    /// or a wait longer than that begins): the store lets go of its connection, and the next
    /// call, if any, connects again.
    pub fn idle(&mut self) {
        self.store.idle();
    }

    /// Just before a retry starts, after its wait: has the breaker opened since? An open
    /// breaker this host remembers (another run here heard of it meanwhile) refuses the retry
    /// without a call.
    pub fn before_retry(&mut self) -> Result<Option<Refused>, Error> {
        if self.unknown {
            return Ok(self.unknown_refusal(true));
        }
        let Some(ticket) = self.ticket else {
            return Ok(None);
        };
        if !ticket.probe
            && let Some(refused) = self.recall()
        {
            return Ok(Some(refused));
        }
        let reply = match self.store.before_retry(&self.rules, ticket) {
            Ok(reply) => reply,
            // Admitted by this host's state, or refused by it: that is the answer.
            Err(e) => match self.fall_back(e) {
                Ok(refused) => return Ok(refused),
                Err(e) => {
                    self.failed(e)?;
                    return Ok(self.unknown_refusal(true));
                }
            },
        };
        let ((refusal, ticket), now) = self.heard(reply);
        self.ticket = Some(ticket);
        self.at_start = refusal.is_none();
        Ok(refusal.map(|r| refused(r, now)))
    }

    /// The key's state, for `--explain`, changing nothing: not even what this host remembers.
    pub fn view(&mut self) -> Result<View, Error> {
        let reply = self.store.view(&self.rules)?;
        self.warning = reply.warning;
        self.now = reply.now;
        self.view = Some(reply.view.clone());
        Ok(reply.view)
    }

    /// Forgets the key's state.
    pub fn reset(&mut self) -> Result<(), Error> {
        self.store.reset()
    }

    /// Forgets the key's state, and says whether it had any: the store's, and the open
    /// breaker this host remembers from it (first: a store that cannot be reached leaves this
    /// host's memory forgotten all the same).
    pub fn forget(&mut self) -> Result<Forgot, Error> {
        let remembered = match self.memo.as_mut() {
            Some(memo) => match memo.forget() {
                Err(Error::NoDirectory) => false,
                forgot => forgot?,
            },
            None => false,
        };
        match self.store.forget()? {
            Forgot::Nothing if !remembered => Ok(Forgot::Nothing),
            _ => Ok(Forgot::State),
        }
    }

    /// Where the key's state is kept.
    pub fn describe(&self) -> String {
        self.store.describe()
    }
}

fn refused(refusal: Refusal, now: u64) -> Refused {
    let until = match refusal {
        Refusal::Open { until } => until,
        Refusal::Probing { lease_until } => lease_until,
        Refusal::Budget | Refusal::Unknown | Refusal::Remembered => now,
    };
    Refused {
        refusal,
        left: Duration::from_millis(until.saturating_sub(now)),
    }
}

#[cfg(test)]
#[path = "handle_tests.rs"]
mod tests;
