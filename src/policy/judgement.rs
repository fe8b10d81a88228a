//! How an attempt ended ([`Ended`]), the policy's judgement of it ([`Judgement`]: success,
//! fatal (and why), retried after a delay, or retryable but stopped by a limit), the decision
//! that adds what overrules it ([`Decision`]), and the run's next step ([`Next`]). [`judge`]
//! is a pure function of the policy, how the attempt ended and the run's pace; the words for
//! each are made in `report/words.rs`.

use std::time::Duration;

use rand::{Rng, RngExt};

use super::adaptive::Estimates;
use super::breaker::Attempt;
use super::output_rules::{Found, Seen};
pub use super::pacing::Limit;
use super::pacing::Pacing;
use super::rules::{Class, Reason};
use super::shared::Refused;
use super::status::{SIGPIPE, Status};
use super::{HttpClass, Policy};
use crate::exit::Exit;

/// What the attempt said besides its exit status: its output, and its hint file.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Findings {
    /// What the output rules found.
    pub output: Seen,
    /// The status of the last HTTP response in a header dump.
    pub http_status: Option<u16>,
    /// The wait asked for by `Retry-After` or a `retry-after=` hint.
    pub retry_after: Option<Duration>,
    /// The command asked not to be retried.
    pub stop: bool,
    /// Something retry could not use, to be logged as a warning (a FIFO where the hint file
    /// should be, a TMPDIR where no hint folder can be made); it changes no judgement.
    pub warning: Option<String>,
}

/// Why retry stopped a running attempt.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stop {
    AttemptTimeout,
    Deadline,
}

/// Why an attempt could not be started.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unstarted {
    /// Status 127.
    NotFound,
    /// Status 126.
    CannotExecute,
    /// The system lacked the resources to start it (EAGAIN: too many processes, ENOMEM,
    /// EMFILE, ENFILE): status 125, retry's own failure, and retried whatever the lists say,
    /// since it says nothing of the command.
    NoResources,
}

impl Unstarted {
    /// The status the attempt counts as.
    pub fn status(self) -> i32 {
        match self {
            Unstarted::NotFound => Exit::NOT_FOUND.status(),
            Unstarted::CannotExecute => Exit::CANNOT_EXECUTE.status(),
            Unstarted::NoResources => Exit::FAILURE.status(),
        }
    }
}

/// How one attempt ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ended {
    pub status: Status,
    /// Set when retry stopped the attempt for running out of time.
    pub stopped: Option<Stop>,
    /// The first cancelling signal passed on to the attempt.
    pub cancelled: Option<i32>,
    /// Set when the attempt could not be started.
    pub unstarted: Option<Unstarted>,
    pub findings: Findings,
    /// How long it ran.
    pub ran: Duration,
}

impl Ended {
    /// An attempt that ended by itself with `status`, having said nothing else.
    pub fn with(status: Status) -> Ended {
        Ended {
            status,
            stopped: None,
            cancelled: None,
            unstarted: None,
            findings: Findings::default(),
            ran: Duration::ZERO,
        }
    }

    /// The status the outcome lists judge: 124 when retry stopped the attempt, as timeout(1).
    pub fn number(&self) -> i32 {
        if self.stopped.is_some() {
            Exit::TIMED_OUT.status()
        } else {
            self.status.number()
        }
    }
}

/// Why an attempt ends the run whatever limits are left.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Fatal {
    /// The command asked not to be retried (a `stop` hint).
    Stop,
    /// A `--fatal-if-output` pattern matched.
    Output(String),
    /// A fatal HTTP status.
    Http(u16),
    /// The exit status is not retried, by this rule; `unstarted` when the command could not
    /// even be started.
    Status {
        status: i32,
        reason: Reason,
        unstarted: Option<Unstarted>,
    },
}

/// Why a failure is retried.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Retryable {
    /// A retryable HTTP status.
    Http(u16),
    /// A `--retry-if-output` pattern matched.
    Output(String),
    /// The exit status, by this rule.
    Status(Reason),
    /// The system lacked the resources to start the command.
    NoResources,
}

/// A `Retry-After` the wait follows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Following {
    pub asked: Duration,
    /// `--retry-after-max` cut it.
    pub capped: bool,
}

/// The judgement of an ended attempt.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Judgement {
    Success,
    /// A cancelling signal reached the attempt.
    Cancelled(i32),
    Fatal(Fatal),
    /// Nothing reads retry's output any more: a further attempt's output would go nowhere.
    OutputGone,
    /// The attempt died of SIGPIPE and nothing reads retry's output any more: the writer of a
    /// pipeline whose reader is done (`retry -- yes | head -1`). A shell reports nothing for
    /// it, and retry says it only with -v.
    PipeClosed,
    /// A retryable failure, but a limit ends the run.
    Spent {
        because: Retryable,
        following: Option<Following>,
        limit: Limit,
    },
    /// Try again after `delay`.
    Retry {
        because: Retryable,
        following: Option<Following>,
        delay: Duration,
    },
}

/// What said an attempt failed though its exit status counts as success.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SaidFailed {
    /// Its HTTP status.
    Http,
    /// Its output.
    Output,
}

impl Judgement {
    /// A retryable failure with nothing after it that overrules it: a retry after the delay
    /// the pacing gave, or the run spent by the limit it met.
    pub fn paced(because: Retryable, paced: Result<Duration, Limit>) -> Judgement {
        match paced {
            Ok(delay) => Judgement::Retry {
                because,
                following: None,
                delay,
            },
            Err(limit) => Judgement::Spent {
                because,
                following: None,
                limit,
            },
        }
    }

    /// How the attempt counts for a key's breaker: a failure that is retried counts, whether
    /// or not the run has attempts or time left; a fatal one does not.
    pub fn counted(&self) -> Attempt {
        match self {
            Judgement::Success => Attempt::Success,
            Judgement::Spent { .. } | Judgement::Retry { .. } => Attempt::Failure,
            _ => Attempt::Uncounted,
        }
    }

    /// The wait before the next attempt, when the judgement is to retry.
    pub fn delay(&self) -> Option<Duration> {
        match self {
            Judgement::Retry { delay, .. } => Some(*delay),
            _ => None,
        }
    }
}

/// Why the run ends after an attempt that its judgement alone would retry or let succeed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Overrule {
    /// The next attempt could not be given what this one had (stdin not recorded).
    Unrepeatable(String),
    /// The key refused the retry.
    Refused(Refused),
    /// Output retry carries for the attempt could not be delivered: retry itself failed.
    Undeliverable(String),
}

/// The decision after an attempt: its judgement, what said it failed though its status counts
/// as success, and what overruled it. [`judge`] makes it; the loop adds what overrules it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Decision {
    pub judgement: Judgement,
    /// Set when the run ends here on an attempt whose status counts as success but whose
    /// HTTP status or output said it failed.
    pub said_failed: Option<SaidFailed>,
    pub overruled: Option<Overrule>,
}

/// The run's next step after an attempt, from its [`Decision`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Next {
    Succeed,
    GiveUp,
    Retry(Duration),
}

impl Decision {
    /// Where the run goes from here: an overruling ends it.
    pub fn next(&self) -> Next {
        match (&self.overruled, &self.judgement) {
            (Some(_), _) => Next::GiveUp,
            (None, Judgement::Success) => Next::Succeed,
            (None, Judgement::Retry { delay, .. }) => Next::Retry(*delay),
            (None, _) => Next::GiveUp,
        }
    }
}

/// Judges an ended attempt: what comes next, and why. Whatever says "fatal" (a `stop` hint,
/// a fatal output rule, a fatal HTTP status, `--fatal-on`, 126/127) wins; then whatever says
/// "retry" (an HTTP status, an output rule), which retries even a status-0 attempt or one that
/// `--retry-on` leaves out; then the exit status alone. An attempt the system lacked the
/// resources to start is retried whatever the lists say. A retryable failure is then paced:
/// attempts left, the deadline, whether anybody still reads the output (`output_gone`, asked
/// only then), the delay and any `Retry-After`. `elapsed` is the time since the run began;
/// `estimates` what the key's outcomes say, for the adaptive delay.
#[allow(clippy::too_many_arguments)]
pub fn judge<R: Rng + ?Sized>(
    p: &Policy,
    end: &Ended,
    attempt: u32,
    pacing: &mut Pacing,
    estimates: Option<&Estimates>,
    elapsed: Duration,
    rng: &mut R,
    output_gone: impl Fn() -> bool,
) -> Decision {
    let plain = |judgement| Decision {
        judgement,
        said_failed: None,
        overruled: None,
    };
    if let Some(sig) = end.cancelled {
        return plain(Judgement::Cancelled(sig));
    }
    // How a pipeline's writer ends once its reader is done, whatever the lists and limits say:
    // nothing failed that anybody can see, and no attempt could deliver more.
    if end.status == Status::Signal(SIGPIPE) && end.stopped.is_none() && output_gone() {
        return plain(Judgement::PipeClosed);
    }
    let (because, said_failed) = if end.unstarted == Some(Unstarted::NoResources) {
        (Retryable::NoResources, None)
    } else {
        match classify(p, end) {
            Ok(classified) => classified,
            Err((judgement, said_failed)) => {
                return Decision {
                    judgement,
                    said_failed,
                    overruled: None,
                };
            }
        }
    };
    let ends = |judgement| Decision {
        judgement,
        said_failed,
        overruled: None,
    };
    // From here on the attempt failed in a way that is retried; only limits stop the run.
    let spent = |because, following, limit| {
        ends(Judgement::Spent {
            because,
            following,
            limit,
        })
    };
    if !pacing.attempts_left(attempt) {
        return spent(because, None, Limit::AttemptsUsedUp);
    }
    if end.stopped == Some(Stop::Deadline) {
        return spent(because, None, Limit::Deadline);
    }
    if output_gone() {
        return ends(Judgement::OutputGone);
    }
    let mut delay = pacing.next_delay(attempt, estimates, rng);
    let mut following = None;
    if let Some(asked) = end.findings.retry_after {
        // Capped first: a wait cut to --retry-after-max may well fit the deadline.
        let wait = follow(asked, p.retry_after_max, rng);
        if let Err(left) = pacing.fits(elapsed, wait) {
            return spent(because, None, Limit::ComeBackAfterDeadline { asked, left });
        }
        delay = delay.max(wait);
        following = Some(Following {
            asked,
            capped: asked > p.retry_after_max,
        });
    }
    if let Err(left) = pacing.fits(elapsed, delay) {
        return spent(because, following, Limit::NextAfterDeadline { delay, left });
    }
    plain(Judgement::Retry {
        because,
        following,
        delay,
    })
}

/// What the exit status and the findings of a started attempt say: why it is retried (and
/// what said it failed, if its status is a success), or the judgement that ends the run.
fn classify(
    p: &Policy,
    end: &Ended,
) -> Result<(Retryable, Option<SaidFailed>), (Judgement, Option<SaidFailed>)> {
    let plain = |judgement| (judgement, None);
    let status = end.number();
    let f = &end.findings;
    let http = f
        .http_status
        .and_then(|code| Some((code, p.http.classify(code)?)));
    let by_status = p.rules.classify(status);
    // A preset's patterns tell why a failing command failed; a success's output is its own.
    let output = f.output.judging(by_status != Class::Success);
    let fatal = if f.stop {
        Some(Fatal::Stop)
    } else if let Some(Found::Fatal(pattern)) = &output {
        Some(Fatal::Output(pattern.clone()))
    } else if let Some((code, HttpClass::Fatal)) = http {
        Some(Fatal::Http(code))
    } else {
        None
    };
    let retry = match (&output, http) {
        (_, Some((code, HttpClass::Retry))) => Some(Retryable::Http(code)),
        (Some(Found::Retry(pattern)), _) => Some(Retryable::Output(pattern.clone())),
        _ => None,
    };
    let said_failed = (by_status == Class::Success && (fatal.is_some() || retry.is_some()))
        .then_some(if http.is_some() {
            SaidFailed::Http
        } else {
            SaidFailed::Output
        })
        .filter(|_| !f.stop);
    let ends = |judgement| (judgement, said_failed);
    if let Some(why) = fatal {
        return Err(ends(Judgement::Fatal(why)));
    }
    let because = match (retry, by_status) {
        // What the command said (its HTTP status, its output) is more specific than a list of
        // exit statuses that merely leaves its status out; only --fatal-on and 126/127 win.
        (Some(why), Class::Success | Class::Retry(_) | Class::Fatal(Reason::NotInRetryOn)) => why,
        (_, Class::Success) => return Err(plain(Judgement::Success)),
        (_, Class::Fatal(reason)) => {
            return Err(ends(Judgement::Fatal(Fatal::Status {
                status,
                reason,
                unstarted: end.unstarted,
            })));
        }
        (None, Class::Retry(reason)) => Retryable::Status(reason),
    };
    Ok((because, said_failed))
}

/// The wait for a `Retry-After` of `asked`: never sooner than asked (up to `cap`), never past
/// `cap`, and spread by up to a tenth so that clients told the same value do not come back in
/// lockstep.
fn follow<R: Rng + ?Sized>(asked: Duration, cap: Duration, rng: &mut R) -> Duration {
    let mut spread = |d: Duration| {
        let nanos = u64::try_from(d.as_nanos() / 10).unwrap_or(u64::MAX);
        Duration::from_nanos(rng.random_range(0..=nanos))
    };
    if asked >= cap {
        cap.saturating_sub(spread(cap))
    } else {
        asked.saturating_add(spread(asked)).min(cap)
    }
}
