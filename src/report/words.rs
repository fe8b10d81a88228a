//! The words for what the run decided: each judgement of an attempt, each limit, each refusal
//! of a key, made from the typed values `policy` returns. Nothing here decides anything.

use std::time::{Duration, SystemTime};

use crate::policy::duration::human;
use crate::policy::judgement::{
    Decision, Fatal, Following, Judgement, Limit, Overrule, Retryable, Unstarted,
};
use crate::policy::rules::{Reason, Rules};
use crate::policy::shared::{Refusal, Refused};
use crate::policy::status::signal_name;

/// The judgement on the attempt's log line, in its parentheses: `retryable: HTTP status 503`,
/// `fatal: in --fatal-on`, `in --retry-on; not retried: attempts used up`. `None` for a
/// success.
pub fn judgement(d: &Decision, rules: &Rules, key: &str) -> Option<String> {
    let base = judged(&d.judgement, rules);
    match &d.overruled {
        None => base,
        Some(Overrule::Refused(refused)) => {
            let why = refusal(*refused, key);
            Some(match base {
                Some(base) => format!("{base}; not retried: {why}"),
                None => format!("not retried: {why}"),
            })
        }
        Some(Overrule::Unrepeatable(why) | Overrule::Undeliverable(why)) => {
            Some(format!("not retried: {why}"))
        }
    }
}

/// Why the run ends after the attempt, for the give-up line and `RETRY_REASON`.
pub fn why(d: &Decision, rules: &Rules, key: &str) -> String {
    match &d.overruled {
        Some(Overrule::Refused(refused)) => refusal(*refused, key),
        Some(Overrule::Unrepeatable(why) | Overrule::Undeliverable(why)) => why.clone(),
        None => ends(&d.judgement, rules),
    }
}

/// Whether the give-up reason names the attempt's status already, so that the give-up line
/// need not add it.
pub fn names_status(d: &Decision) -> bool {
    d.overruled.is_none() && matches!(d.judgement, Judgement::Fatal(Fatal::Status { .. }))
}

fn judged(j: &Judgement, rules: &Rules) -> Option<String> {
    Some(match j {
        Judgement::Success => return None,
        Judgement::Cancelled(sig) => format!("not retried: {}", cancelled(*sig)),
        Judgement::Fatal(Fatal::Status {
            reason: Reason::NeverBetter,
            ..
        }) => "fatal: will not get better".to_string(),
        Judgement::Fatal(Fatal::Status { reason, .. }) => reason_why(*reason, rules),
        Judgement::Fatal(fatal) => format!("fatal: {}", fatal_why(fatal, rules)),
        Judgement::OutputGone => format!("not retried: {OUTPUT_GONE}"),
        // Such a failure says it is not retried: "(retryable)" would mislead.
        Judgement::Spent {
            because,
            following,
            limit,
        } => match detail(because, rules) {
            Some(said) => format!(
                "{said}{}; not retried: {}",
                follows(*following),
                limit_short(*limit)
            ),
            None => format!("not retried: {}", limit_short(*limit)),
        },
        Judgement::Retry {
            because, following, ..
        } => format!("{}{}", retryable(because, rules), follows(*following)),
    })
}

/// Why the judgement ends the run.
fn ends(j: &Judgement, rules: &Rules) -> String {
    match j {
        Judgement::Cancelled(sig) => cancelled(*sig),
        Judgement::Fatal(fatal) => fatal_why(fatal, rules),
        Judgement::OutputGone => OUTPUT_GONE.to_string(),
        Judgement::Spent { limit, .. } => limit_why(*limit),
        Judgement::Success | Judgement::Retry { .. } => String::new(),
    }
}

const OUTPUT_GONE: &str = "nothing reads its output any more";

/// Why a run ends whose wait before a retry a cancelling signal cut short.
pub fn cancelled_waiting(sig: i32) -> String {
    format!("{} while waiting", cancelled(sig))
}

/// Why a run ends whose hook outlasted the wait and the deadline.
pub const DEADLINE_WHILE_WAITING: &str = "--max-time reached while waiting";

/// `cancelled by SIGINT`.
pub fn cancelled(sig: i32) -> String {
    format!("cancelled by {}", signal_name(sig))
}

fn fatal_why(fatal: &Fatal, rules: &Rules) -> String {
    match fatal {
        Fatal::Stop => "the command asked not to be retried (stop)".to_string(),
        Fatal::Output(pattern) => format!("output matched --fatal-if-output '{pattern}'"),
        Fatal::Http(code) => format!("HTTP status {code} is fatal"),
        Fatal::Status {
            status,
            unstarted: Some(unstarted),
            ..
        } => {
            let what = match unstarted {
                Unstarted::NotFound => "command not found",
                Unstarted::CannotExecute => "cannot execute",
                Unstarted::NoResources => "not started for lack of resources",
            };
            format!("status {status}: {what}")
        }
        Fatal::Status { status, reason, .. } => {
            format!("status {status} is {}", reason_why(*reason, rules))
        }
    }
}

/// Why a status was classed so, naming the list that decided it and where it came from:
/// `retryable: in --retry-on`, `fatal: not in retry-on of profile ci`.
pub fn reason_why(reason: Reason, rules: &Rules) -> String {
    let sources = &rules.sources;
    match reason {
        Reason::RetryOn => format!("retryable: in {}", sources.retry_on),
        Reason::FatalOn => format!("fatal: in {}", sources.fatal_on),
        Reason::NotInRetryOn => format!("fatal: not in {}", sources.retry_on),
        Reason::AnyFailure => "retryable".to_string(),
        Reason::NeverBetter => {
            "fatal: cannot execute or not found; will not get better".to_string()
        }
    }
}

/// `retryable`, `retryable: HTTP status 503`, `retryable: in --retry-on`.
fn retryable(because: &Retryable, rules: &Rules) -> String {
    match detail(because, rules) {
        Some(said) => format!("retryable: {said}"),
        None => "retryable".to_string(),
    }
}

/// What made the failure retryable, when more than "a failure" did.
fn detail(because: &Retryable, rules: &Rules) -> Option<String> {
    match because {
        Retryable::Http(code) => Some(format!("HTTP status {code}")),
        Retryable::Output(pattern) => Some(format!("output matched --retry-if-output '{pattern}'")),
        Retryable::Status(Reason::RetryOn) => Some(format!("in {}", rules.sources.retry_on)),
        Retryable::Status(_) => None,
        Retryable::NoResources => Some("the system lacked the resources to start it".into()),
    }
}

fn follows(following: Option<Following>) -> String {
    match following {
        None => String::new(),
        Some(f) => format!(
            "; following Retry-After {}{}",
            human(f.asked),
            if f.capped {
                ", capped by --retry-after-max"
            } else {
                ""
            }
        ),
    }
}

/// The limit, as the attempt's judgement names it.
fn limit_short(limit: Limit) -> &'static str {
    match limit {
        Limit::AttemptsUsedUp => "attempts used up",
        Limit::Deadline => "--max-time reached",
        Limit::ComeBackAfterDeadline { .. } | Limit::NextAfterDeadline { .. } => "--max-time",
    }
}

/// The limit, as the give-up line tells it.
fn limit_why(limit: Limit) -> String {
    match limit {
        Limit::AttemptsUsedUp | Limit::Deadline => limit_short(limit).to_string(),
        Limit::ComeBackAfterDeadline { asked, left } => format!(
            "the command was told to come back in {}, after the --max-time deadline ({} left)",
            human(asked),
            human(left)
        ),
        Limit::NextAfterDeadline { delay, left } => format!(
            "the next attempt would start after the --max-time deadline (wait {}, {} left)",
            human(delay),
            human(left)
        ),
    }
}

/// Why the key refuses a run or its retry.
pub fn refusal(refused: Refused, key: &str) -> String {
    let left = human(refused.left);
    let until = humantime::format_rfc3339_seconds(SystemTime::now() + refused.left);
    match refused.refusal {
        Refusal::Open { .. } => format!(
            "the breaker for key '{key}' is open for another {left} (until {until}): runs on the key kept failing"
        ),
        Refusal::Probing { .. } => format!(
            "the breaker for key '{key}' is half-open and another run is probing it (for up to {left})"
        ),
        Refusal::Budget => format!("the retry budget for key '{key}' is spent"),
    }
}

/// What opened a key's breaker.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OpenedBy {
    /// The run's probe failed.
    Probe,
    /// This many failed attempts in a row.
    Failures(u32),
}

/// The breaker's move after an attempt.
pub fn opened(key: &str, open: Duration, by: OpenedBy) -> String {
    let why = match by {
        OpenedBy::Probe => "the probe failed".to_string(),
        OpenedBy::Failures(n) => format!("{n} failed attempts in a row"),
    };
    format!("key '{key}': the breaker opened for {}: {why}", human(open))
}

/// The breaker's move after a probe succeeded.
pub fn closed(key: &str) -> String {
    format!("key '{key}': the breaker closed: the probe succeeded")
}
