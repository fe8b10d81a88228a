//! The child process: how it is stopped, what it reads, and where its output goes.

use std::time::Duration;

use clap::Args;

use super::parsers::{Offered, signal};
use crate::policy::StdinMode;
use crate::policy::StdoutMode;
use crate::policy::duration;
use crate::policy::status::NAMES;

/// The child process.
#[derive(Debug, Args)]
#[group(skip)]
#[command(next_help_heading = "The child process")]
pub struct Child {
    /// Signal sent to the attempt's process group when it times out.
    #[arg(
        long,
        value_name = "SIG",
        value_parser = Offered::new(signal, || NAMES.to_vec()),
        hide_possible_values = true,
        allow_hyphen_values = true,
    )]
    pub kill_signal: Option<i32>,

    /// After --kill-signal, wait this long before sending SIGKILL.
    #[arg(long, value_name = "DUR", value_parser = duration::parse, allow_hyphen_values = true)]
    pub kill_after: Option<Duration>,

    /// What each attempt reads: auto rewinds a regular file, replays a pipe or socket and
    /// passes a terminal through; replay, pass and null force a mode.
    #[arg(long, value_name = "MODE", value_enum, allow_hyphen_values = true)]
    pub stdin: Option<StdinMode>,

    /// pass streams each attempt's stdout; hold keeps it and writes only the attempt that ends
    /// the run to stdout (retried attempts' output goes to stderr).
    #[arg(long, value_name = "MODE", value_enum, allow_hyphen_values = true)]
    pub stdout: Option<StdoutMode>,

    /// Hold every attempt's stdout and stderr and retry's own log, and print them, in order
    /// and marked by attempt, only if the run fails: a run that succeeds prints nothing
    /// (chronic's behaviour, for cron, which mails whatever a job prints).
    #[arg(long, conflicts_with = "stdout")]
    pub output_on_failure: bool,

    /// Stop when retry's parent ends, as on a SIGTERM: the attempt's group gets
    /// --kill-signal (SIGKILL after --kill-after), no attempt follows, and retry ends by
    /// SIGTERM. For a CI step that cannot `exec retry`: a runner's cancel reaches the step's
    /// shell, not retry. Where the system has a parent-death signal (Linux), the attempt's
    /// first process also gets SIGKILL if retry itself is killed (kill -9). Off by default:
    /// `nohup retry ... &` and `setsid -f retry ...` lose their parent on purpose. Also
    /// RETRY_STOP_WITH_PARENT=1, or `stop-with-parent = true` in the config file.
    #[arg(long, overrides_with = "no_stop_with_parent")]
    pub stop_with_parent: bool,

    /// Do not stop when retry's parent ends (the default): for one step of a job that sets
    /// --stop-with-parent for all, in the config file or by RETRY_STOP_WITH_PARENT=1.
    #[arg(long, overrides_with = "stop_with_parent")]
    pub no_stop_with_parent: bool,
}
