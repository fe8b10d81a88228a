//! Explain a fleet: the fleet `--explain --fleet` simulates.

use std::time::Duration;

use clap::Args;

use super::parsers::{processes, store_rate};
use crate::policy::duration;

/// Explain a fleet.
#[derive(Debug, Args)]
#[group(skip)]
#[command(next_help_heading = "Explain a fleet")]
pub struct Simulated {
    /// With --explain: simulate N processes (1 to 100000) running this policy against one
    /// service that is down for --outage, and print what they do to it (calls, peaks, calls
    /// per job, goodput, time to recover) and what it assumed, beside the same policy without
    /// jitter and without shared state; with --log-format json, as one JSON object per line.
    #[arg(
        long,
        value_name = "N",
        requires = "explain",
        value_parser = processes,
        allow_hyphen_values = true,
    )]
    pub fleet: Option<u32>,

    /// With --fleet: how long the service is down.
    #[arg(long, value_name = "DUR", value_parser = duration::parse, allow_hyphen_values = true)]
    pub outage: Option<Duration>,

    /// With --fleet: how often each process runs the job (a cron interval).
    #[arg(long, value_name = "DUR", value_parser = duration::parse, allow_hyphen_values = true)]
    pub every: Option<Duration>,

    /// With --fleet: the N processes are spread over H hosts; with --key and no --state, the
    /// processes on one host share that host's state [default: N, one process a host].
    #[arg(long, value_name = "H", value_parser = processes, allow_hyphen_values = true)]
    pub hosts: Option<u32>,

    /// With --fleet: how long one call of the job takes, failed or not.
    #[arg(long, value_name = "DUR", value_parser = duration::parse, allow_hyphen_values = true)]
    pub call_time: Option<Duration>,

    /// With --fleet and --state: script calls a second the store answers for one key (a key
    /// lives on one Redis thread). A simulated run whose calls would wait in its queue past
    /// --state-timeout loses the shared state, as a real one does: --state-fail open goes on
    /// with its host's state, closed exits 75 without running. The default is the rate
    /// measured for an outage's calls (docs/redis.md).
    #[arg(long, value_name = "N", value_parser = store_rate, allow_hyphen_values = true)]
    pub store_rate: Option<u32>,
}
