//! Logging: how much retry says, in which format, and where.

use std::path::PathBuf;

use clap::ArgAction;
use clap::Args;

use crate::policy::{ColorChoice, LogFormat};

/// Logging.
#[derive(Debug, Args)]
#[group(skip)]
#[command(next_help_heading = "Logging")]
pub struct Logging {
    /// More log lines, each with the time: the resolved policy, each attempt's start, and a
    /// success at the first attempt (said only with -v, or in a --log-file).
    #[arg(short = 'v', long, action = ArgAction::Count)]
    pub verbose: u8,

    /// Fewer log lines: -q only the give-up line, -qq nothing.
    #[arg(short = 'q', long, action = ArgAction::Count, conflicts_with = "verbose")]
    pub quiet: u8,

    /// Log as text lines or as JSON lines.
    #[arg(long, value_name = "FORMAT", value_enum, allow_hyphen_values = true)]
    pub log_format: Option<LogFormat>,

    /// Write the log to this file (appending) instead of stderr.
    #[arg(long, value_name = "PATH", allow_hyphen_values = true)]
    pub log_file: Option<PathBuf>,

    /// Begin each text log line with the local time, for CI logs that have none (always in
    /// a --log-file, and with -v).
    #[arg(long)]
    pub log_time: bool,

    /// When the text log on stderr colours its verdict words, and --explain --fleet its chart
    /// on stdout. auto: NO_COLOR set and not empty means no colour, else CLICOLOR_FORCE set and
    /// not 0 means colour, else colour on a terminal. always and never win over both. A
    /// --log-file has none.
    #[arg(long, value_name = "WHEN", value_enum, allow_hyphen_values = true)]
    pub color: Option<ColorChoice>,
}
