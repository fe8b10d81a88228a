//! How long to wait between attempts: the delay, how it grows, its cap and jitter.

use std::time::Duration;

use clap::Args;

use super::BackoffKind;
use super::parsers::{Offered, factor, jitter, seed};
use crate::policy::backoff::Jitter;
use crate::policy::duration;
use crate::setup::minfrin;

/// How long to wait between attempts.
#[derive(Debug, Args)]
#[group(skip)]
#[command(next_help_heading = "How long to wait")]
pub struct Wait {
    /// Base delay before the first retry.
    #[arg(
        short = 'd',
        long,
        value_name = "DUR",
        value_parser = minfrin::delay,
        allow_hyphen_values = true,
    )]
    pub delay: Option<Duration>,

    /// How the delay grows from retry to retry.
    #[arg(
        short = 'b',
        long,
        value_name = "KIND",
        value_enum,
        conflicts_with = "delays",
        allow_hyphen_values = true
    )]
    pub backoff: Option<BackoffKind>,

    /// Multiplier for exponential backoff (at least 1; fractions allowed).
    #[arg(long, value_name = "F", value_parser = factor, allow_hyphen_values = true)]
    pub factor: Option<f64>,

    /// Cap on any single delay, jitter included [default: 1m, or the longest delay asked for
    /// by --delay or --delays]. A smaller cap than --delay caps it.
    #[arg(long, value_name = "DUR", value_parser = duration::parse, allow_hyphen_values = true)]
    pub max_delay: Option<Duration>,

    /// Explicit schedule, e.g. 1s,5s,30s; the last value repeats. Replaces --backoff.
    #[arg(
        long,
        value_name = "LIST",
        value_delimiter = ',',
        value_parser = duration::parse,
        allow_hyphen_values = true,
    )]
    pub delays: Option<Vec<Duration>>,

    /// Jitter: none, full, equal, decorrelated, or N% (+/-N% around the delay).
    #[arg(
        short = 'j',
        long,
        value_name = "KIND",
        value_parser = Offered::new(jitter, || vec!["none", "full", "equal", "decorrelated", "10%"]),
        hide_possible_values = true,
        allow_hyphen_values = true,
    )]
    pub jitter: Option<Jitter>,

    /// Before the first attempt, wait a random time from 0 to DUR, so that runs that start at
    /// the same second (cron on many hosts) spread their calls, and their --key store's load,
    /// over DUR. The wait counts within --max-time, which must be longer; a signal during it
    /// cancels the run, as during any wait. --explain --fleet simulates processes that start
    /// as this says: all at the same second with 0.
    #[arg(long, value_name = "DUR", value_parser = duration::parse, allow_hyphen_values = true)]
    pub splay: Option<Duration>,

    /// Seed for the random source, for a reproducible schedule.
    #[arg(long, value_name = "N", value_parser = seed, allow_hyphen_values = true)]
    pub seed: Option<u64>,
}
