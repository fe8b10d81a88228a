//! Hooks and reports: commands run on a retry or a give-up, the summary and the metrics.

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

use crate::policy::duration;

/// Hooks and reports.
#[derive(Debug, Args)]
#[group(skip)]
#[command(next_help_heading = "Hooks and reports")]
pub struct Reports {
    /// Run CMD through `sh -c` before each wait, with the RETRY_* environment, RETRY_STATUS
    /// (the failed attempt's status) and RETRY_NEXT_DELAY_MS. Its failure is only logged.
    #[arg(long, value_name = "CMD", allow_hyphen_values = true)]
    pub on_retry: Option<String>,

    /// Run CMD through `sh -c` when retry gives up, with the RETRY_* environment, RETRY_STATUS
    /// and RETRY_REASON. Its failure is only logged.
    #[arg(long, value_name = "CMD", allow_hyphen_values = true)]
    pub on_giveup: Option<String>,

    /// Longest a hook may run before its process group is stopped (0: no limit). --on-retry
    /// is stopped at --max-time too, as the wait it runs in is.
    #[arg(long, value_name = "DUR", value_parser = duration::parse, allow_hyphen_values = true)]
    pub hook_timeout: Option<Duration>,

    /// Write a JSON summary of the run to FILE at the end (attempts, statuses, time running
    /// and waiting, outcome, reason).
    #[arg(long, value_name = "FILE", allow_hyphen_values = true)]
    pub summary: Option<PathBuf>,

    /// Write Prometheus metrics to FILE at the end, atomically, for node_exporter's textfile
    /// collector; counters carry on from the file's previous version.
    #[arg(long, value_name = "FILE", allow_hyphen_values = true)]
    pub metrics: Option<PathBuf>,

    /// The job's name in the summary and the metrics' `name` label [default: the command's
    /// file name].
    #[arg(long, value_name = "NAME", allow_hyphen_values = true)]
    pub name: Option<String>,
}
