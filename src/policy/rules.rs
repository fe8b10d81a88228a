//! The exit-status lists (`--success-on`, `--retry-on`, `--fatal-on`, and 126 and 127) and
//! what they say of a status alone: its [`Class`], success, retryable or fatal, with the
//! [`Reason`]. The judgement of the whole attempt is `judgement::judge`'s; the words for a
//! reason are made in `report/words.rs`.

use super::codes::CodeSet;
use crate::exit::Exit;

/// Statuses that will not get better by trying again: 126 (cannot execute) and 127 (not found).
pub const NEVER_BETTER: [i32; 2] = [Exit::CANNOT_EXECUTE.status(), Exit::NOT_FOUND.status()];

/// Which statuses count as success, which are retried and which are fatal.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rules {
    /// Statuses that count as success (`--success-on`, default 0).
    pub success: CodeSet,
    /// When given, only these failing statuses are retried (`--retry-on`).
    pub retry_on: Option<CodeSet>,
    /// Statuses never retried (`--fatal-on`).
    pub fatal_on: CodeSet,
    /// 126 and 127, fatal unless `--retry-on` names them.
    pub never_better: CodeSet,
    /// Where the lists came from, as the log names them.
    pub sources: Sources,
}

/// Where each list came from, as the log names it: `--fatal-on` for a flag, `fatal-on from
/// ~/.config/retry/config.toml`, `retry-on of profile ci`, `the curl preset's fatal list`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Sources {
    pub retry_on: String,
    pub fatal_on: String,
}

impl Default for Sources {
    fn default() -> Self {
        Sources {
            retry_on: "--retry-on".into(),
            fatal_on: "--fatal-on".into(),
        }
    }
}

/// What the status lists say of an exit status alone.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Class {
    Success,
    Retry(Reason),
    Fatal(Reason),
}

/// Why a status was classed as it was; the log names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reason {
    /// A failure, retried because no `--retry-on` list narrows the retryable ones.
    AnyFailure,
    /// Named by `--retry-on`.
    RetryOn,
    /// Named by `--fatal-on`.
    FatalOn,
    /// 126 or 127, fatal by default.
    NeverBetter,
    /// A failure that `--retry-on` does not name.
    NotInRetryOn,
}

impl Rules {
    /// The rules for the three lists as the user gave them (`None` for a list not given).
    pub fn new(
        success: Option<CodeSet>,
        retry_on: Option<CodeSet>,
        fatal_on: Option<CodeSet>,
    ) -> Self {
        let never_better = CodeSet::of(&NEVER_BETTER);
        // 126 and 127 are retried only when --retry-on names them one by one: a range such as
        // 1-255 means "every failure", and a missing command is not a failure that passes.
        let default_fatal = match &retry_on {
            Some(list) => CodeSet::of(
                &NEVER_BETTER
                    .into_iter()
                    .filter(|s| !list.names(*s))
                    .collect::<Vec<_>>(),
            ),
            None => never_better,
        };
        Rules {
            success: success.unwrap_or_else(|| CodeSet::of(&[0])),
            retry_on,
            fatal_on: fatal_on.unwrap_or_default(),
            never_better: default_fatal,
            sources: Sources::default(),
        }
    }

    /// Classes a status in the order success → fatal → retryable → fatal.
    pub fn classify(&self, status: i32) -> Class {
        if self.success.contains(status) {
            return Class::Success;
        }
        if self.fatal_on.contains(status) {
            return Class::Fatal(Reason::FatalOn);
        }
        if self.never_better.contains(status) {
            return Class::Fatal(Reason::NeverBetter);
        }
        match &self.retry_on {
            None => Class::Retry(Reason::AnyFailure),
            Some(list) if list.contains(status) => Class::Retry(Reason::RetryOn),
            Some(_) => Class::Fatal(Reason::NotInRetryOn),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules(success: Option<&str>, retry: Option<&str>, fatal: Option<&str>) -> Rules {
        let p = |s: Option<&str>| s.map(|s| s.parse::<CodeSet>().expect("valid list"));
        Rules::new(p(success), p(retry), p(fatal))
    }

    #[test]
    fn defaults_retry_every_failure_but_126_and_127() {
        let r = rules(None, None, None);
        assert_eq!(r.classify(0), Class::Success);
        assert_eq!(r.classify(1), Class::Retry(Reason::AnyFailure));
        assert_eq!(r.classify(137), Class::Retry(Reason::AnyFailure));
        assert_eq!(r.classify(126), Class::Fatal(Reason::NeverBetter));
        assert_eq!(r.classify(127), Class::Fatal(Reason::NeverBetter));
    }

    #[test]
    fn success_on_replaces_zero() {
        let r = rules(Some("1,3"), None, None);
        assert_eq!(r.classify(3), Class::Success);
        assert_eq!(r.classify(0), Class::Retry(Reason::AnyFailure));
    }

    #[test]
    fn fatal_wins_over_retry_on() {
        let r = rules(None, Some("1-10"), Some("5"));
        assert_eq!(r.classify(5), Class::Fatal(Reason::FatalOn));
        assert_eq!(r.classify(4), Class::Retry(Reason::RetryOn));
        assert_eq!(r.classify(11), Class::Fatal(Reason::NotInRetryOn));
    }

    #[test]
    fn success_is_judged_before_fatal() {
        let r = rules(Some("0,2"), None, Some("2"));
        assert_eq!(r.classify(2), Class::Success);
    }

    #[test]
    fn fatal_on_adds_to_126_and_127() {
        let r = rules(None, None, Some("SIGKILL"));
        assert_eq!(r.classify(137), Class::Fatal(Reason::FatalOn));
        assert_eq!(r.classify(127), Class::Fatal(Reason::NeverBetter));
    }

    #[test]
    fn retry_on_naming_127_makes_it_retryable() {
        let r = rules(None, Some("127"), None);
        assert_eq!(r.classify(127), Class::Retry(Reason::RetryOn));
        assert_eq!(r.classify(126), Class::Fatal(Reason::NeverBetter));
        // A range that merely covers them does not name them.
        let r = rules(None, Some("100-200"), None);
        assert_eq!(r.classify(126), Class::Fatal(Reason::NeverBetter));
        assert_eq!(r.classify(125), Class::Retry(Reason::RetryOn));
    }

    #[test]
    fn fatal_on_127_wins_even_when_retry_on_names_it() {
        let r = rules(None, Some("127"), Some("127"));
        assert_eq!(r.classify(127), Class::Fatal(Reason::FatalOn));
    }
}
