//! The words for what the run decided: each judgement of an attempt, each limit, each refusal
//! of a key, made from the typed values `policy` returns. Nothing here decides anything.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::time::{Duration, SystemTime};

use crate::platform::world::OneString;
use crate::policy::duration::human;
use crate::policy::judgement::{
    Decision, Fatal, Following, Judgement, Limit, Overrule, Retryable, Unstarted,
};
use crate::policy::rules::{Reason, Rules};
use crate::policy::shared::{Refusal, Refused};
use crate::policy::status::signal_name;
use crate::policy::{Origin, Policy};
use crate::quote;

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
    d.overruled.is_none()
        && matches!(
            d.judgement,
            Judgement::Fatal(Fatal::Status { .. }) | Judgement::PipeClosed
        )
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
        Judgement::PipeClosed => format!("not retried: {PIPE_CLOSED}"),
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
        Judgement::PipeClosed => PIPE_CLOSED.to_string(),
        Judgement::Spent { limit, .. } => limit_why(*limit),
        Judgement::Success | Judgement::Retry { .. } => String::new(),
    }
}

const OUTPUT_GONE: &str = "nothing reads its output any more";

const PIPE_CLOSED: &str = "nothing reads its output any more: killed by SIGPIPE (status 141), \
                           as the writer of a pipeline is once its reader is done";

/// What to do about a whole command given as one argument (`retry 'curl -fsS URL'`), which
/// names no file: its words apart, or the line given to a shell.
pub fn one_string(how: OneString, name: &OsStr) -> String {
    let line = quote::shown(name);
    match how {
        OneString::Words => {
            let words = name
                .as_bytes()
                .split(u8::is_ascii_whitespace)
                .filter(|w| !w.is_empty())
                .map(|w| quote::shown(OsStr::from_bytes(w)))
                .collect::<Vec<_>>()
                .join(" ");
            format!(
                "a whole command was given as one argument: give its words apart, as retry -- \
                 {words}, or a shell line, as retry -- sh -c {line}"
            )
        }
        OneString::ShellLine => format!(
            "a shell line was given as one argument: give it to a shell, as retry -- sh -c {line}"
        ),
    }
}

/// Why a run ends whose wait before a retry a cancelling signal cut short.
pub fn cancelled_waiting(sig: i32) -> String {
    format!("{} while waiting", cancelled(sig))
}

/// Why a run ends whose hook outlasted the wait and the deadline.
pub const DEADLINE_WHILE_WAITING: &str = "--max-time reached while waiting";

/// `cancelled by SIGINT`; `cancelled: retry's parent ended (--stop-with-parent)` for the
/// SIGTERM that stands for that, which nobody sent.
pub fn cancelled(sig: i32) -> String {
    if crate::platform::signals::from_parent(sig) {
        return "cancelled: retry's parent ended (--stop-with-parent)".into();
    }
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
        Refusal::Remembered => format!(
            "the breaker for key '{key}' is open for another {left} (until {until}): this host knows it from the store, and made no call to it"
        ),
        Refusal::Probing { .. } => format!(
            "the breaker for key '{key}' is half-open and another run is probing it (for up to {left})"
        ),
        Refusal::Budget => format!("the retry budget for key '{key}' is spent"),
        Refusal::Unknown => format!(
            "the state of key '{key}' is unknown to this run, and no retry is made without its breaker and budget"
        ),
    }
}

/// The warning of a run whose key's state could not be read in time (`error` says why): it
/// goes on without knowing it, and makes no retry when `retries_refused`.
pub fn state_unknown(key: &str, error: &str, retries_refused: bool) -> String {
    let then = if retries_refused {
        "this run makes no retry its breaker or budget would have had to allow"
    } else {
        "its breaker and budget are off: the run goes on without it"
    };
    format!("warning: key '{key}': {error}; {then}")
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

// The words about the settings themselves.

/// The warning of a `--state` store given without a key.
pub fn store_warning(p: &Policy) -> Option<String> {
    p.unkeyed_store
        .then(|| "--state is not used without --key: the state is per key; give --key NAME".into())
}

/// The warning of a retry inside another's attempt: their attempts multiply. Said in the outer
/// retry's first attempt only (or where that is not known), so that a nested run says it once,
/// not once an attempt of the outer one. The line's prefix names this retry's level already.
fn nesting_warning(p: &Policy) -> Option<String> {
    let n = &p.nesting;
    if n.level < 2 || n.outer_attempt.is_some_and(|a| a > 1) {
        return None;
    }
    let count = |a: Option<u32>| a.map_or("unlimited".to_string(), |a| a.to_string());
    let here = count(p.attempts);
    let product = match (n.outer_attempts, p.attempts) {
        (Some(Some(outer)), Some(inner)) => format!(
            "{outer} there × {inner} here = {} runs of the command at most",
            u64::from(outer) * u64::from(inner)
        ),
        (Some(outer), _) => format!("{} there × {here} here, without a limit", count(outer)),
        (None, Some(_)) => format!("its attempts × {here} here"),
        (None, None) => format!("its attempts × {here} here, without a limit"),
    };
    Some(format!(
        "this retry runs inside each attempt of the retry at level {}: attempts multiply, \
         {product}; retry in one place only, or give this one -n 1",
        n.level - 1
    ))
}

/// The warning of a breaker's first open time longer than its longest: the longest wins.
fn breaker_cap_warning(p: &Policy) -> Option<String> {
    let b = &p.state.as_ref()?.rules.breaker;
    (b.enabled() && b.open > b.open_max).then(|| {
        format!(
            "--breaker-open {} is longer than --breaker-open-max {}: the breaker stays open \
             {} at most; raise --breaker-open-max to keep it open longer",
            human(b.open),
            human(b.open_max),
            human(b.open_max)
        )
    })
}

/// The warning of `--preset curl`, `--retry-on-http` or `--fatal-on-http` without a header
/// dump: curl's exit 22 says only "HTTP error", so without the status a 404 is retried as a
/// 503 is, and the HTTP lists decide nothing. With hints on, curl given `-D {hints}` has one,
/// and so may any other command (a script that writes to `$RETRY_HINT_FILE`); without them
/// there is no file to write.
fn header_dump_warning(p: &Policy) -> Option<String> {
    let names_the_dump = p.command.iter().skip(1).any(|a| {
        let a = a.to_string_lossy();
        a.contains(crate::env::HINTS) || a.contains(crate::env::HINT_FILE)
    });
    let curl = p
        .command
        .first()
        .and_then(|c| std::path::Path::new(c).file_name())
        .is_some_and(|name| name == "curl");
    let dumped = p.hints && (names_the_dump || !curl);
    let asked = if p.preset == Some("curl") {
        "--preset curl"
    } else if p.http.given {
        "an HTTP status list (--retry-on-http, --fatal-on-http)"
    } else {
        return None;
    };
    (!dumped).then(|| {
        format!(
            "{asked} without a header dump: retry cannot see the HTTP status, and curl's exit \
             22 only says \"HTTP error\", so a 404 is retried as a 503 is; give curl -D \
             {{hints}} (retry then reads the status from it), or have a script write the \
             headers to $RETRY_HINT_FILE"
        )
    })
}

/// Every warning about the settings themselves, said before the first attempt.
pub fn warnings(p: &Policy) -> impl Iterator<Item = String> + use<> {
    nesting_warning(p)
        .into_iter()
        .chain(breaker_cap_warning(p))
        .chain(header_dump_warning(p))
        .chain(seeded_splay_warning(p))
}

/// A `--seed` draws the same `--splay` in every run that has it: a fleet whose settings carry
/// one starts all at once, which the splay was there to prevent.
fn seeded_splay_warning(p: &Policy) -> Option<String> {
    p.seed.filter(|_| !p.splay.is_zero()).map(|seed| {
        format!(
            "--seed {seed} draws the same --splay wait in every run that has it: runs that share \
             the seed start together; leave --seed out of a fleet's settings"
        )
    })
}

/// Every status that is fatal before `--retry-on` is consulted.
pub fn fatal_list(p: &Policy) -> String {
    let all = p.rules.never_better.union(&p.rules.fatal_on);
    if all.is_empty() {
        "none".into()
    } else {
        all.to_string()
    }
}

/// One line: the policy as the -v log shows it.
pub fn policy_line(p: &Policy) -> String {
    let opt = |d: Option<Duration>| d.map_or("none".to_string(), human);
    let b = &p.backoff;
    let attempts = p
        .attempts
        .map_or("unlimited".to_string(), |n| n.to_string());
    format!(
        "attempts={attempts} backoff={}{} delay={} max-delay={} jitter={} max-time={} attempt-timeout={} success-on={} retry-on={} fatal-on={}",
        if p.adaptive.is_some() {
            "adaptive, else "
        } else {
            ""
        },
        b.shape,
        human(b.delay),
        human(b.max_delay),
        b.jitter,
        opt(p.max_time),
        opt(p.attempt_timeout),
        p.rules.success,
        p.rules
            .retry_on
            .as_ref()
            .map_or("any".to_string(), ToString::to_string),
        fatal_list(p),
    )
}

/// Where a setting came from, in the words of `--explain`'s rows: `flag`, `profile ci`, a
/// file's path, `preset curl, by -p curl`.
pub fn came_from(origin: &Origin) -> String {
    match origin {
        Origin::Flag => "flag".into(),
        Origin::Profile(name) => format!("profile {name}"),
        Origin::File(path) => path.display().to_string(),
        Origin::Default => "default".into(),
        Origin::Preset { name, by, own } => {
            let own = own
                .as_ref()
                .map_or(String::new(), |own| format!("{}, and ", came_from(own)));
            let by = match by.as_ref() {
                Origin::Flag => String::new(),
                // -p curl: a preset used as a profile.
                Origin::Profile(profile) if profile == name => format!(", by -p {name}"),
                by => format!(", from {}", came_from(by)),
            };
            format!("{own}preset {name}{by}")
        }
        Origin::HintsInCommand => "{hints} in the command".into(),
    }
}
