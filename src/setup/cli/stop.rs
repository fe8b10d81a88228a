//! When to stop: the attempt limit, the deadline, a time limit for each attempt.

use std::time::Duration;

use clap::Args;

use super::parsers::{attempts, retries, span};
use crate::policy::duration;
use crate::setup::minfrin;

/// When to stop.
#[derive(Debug, Args)]
#[group(skip)]
#[command(next_help_heading = "When to stop")]
pub struct Stop {
    /// Total attempts, the first included (at least 1) [default: 5].
    #[arg(
        short = 'n',
        long,
        value_name = "N",
        value_parser = attempts,
        conflicts_with_all = ["retries", "forever"],
        allow_hyphen_values = true,
    )]
    pub attempts: Option<u32>,

    /// Retries after the first attempt: the same as --attempts N+1.
    #[arg(
        long,
        value_name = "N",
        value_parser = retries,
        conflicts_with = "forever",
        allow_hyphen_values = true,
    )]
    pub retries: Option<u32>,

    /// No limit on attempts (--max-time and fatal statuses still end the run).
    #[arg(long)]
    pub forever: bool,

    /// The same as --attempts N: minfrin's retry's spelling, kept for its scripts.
    #[arg(
        short = 't',
        long,
        value_name = "N",
        value_parser = minfrin::times,
        conflicts_with_all = ["attempts", "retries", "forever"],
        allow_hyphen_values = true,
    )]
    pub times: Option<u32>,

    /// Deadline for the whole run, attempts and waits together; 0 means none, as in timeout(1).
    #[arg(long, value_name = "DUR", value_parser = duration::parse, allow_hyphen_values = true)]
    pub max_time: Option<Duration>,

    /// An attempt that ran at least DUR before it failed starts afresh: the next delay is
    /// --delay again, and --attempts counts from it (a worker that ran well for an hour does
    /// not inherit the backoff of its last crash). Attempt numbers keep counting.
    #[arg(long, value_name = "DUR", value_parser = span, allow_hyphen_values = true)]
    pub reset_after: Option<Duration>,

    /// Limit for one attempt; a timed-out attempt counts as status 124 (retryable). 0 means
    /// none.
    #[arg(long, value_name = "DUR", value_parser = duration::parse, allow_hyphen_values = true)]
    pub attempt_timeout: Option<Duration>,
}
