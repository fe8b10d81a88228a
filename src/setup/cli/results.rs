//! Which results are retried: the exit-status lists, a preset's, and the output rules.

use clap::ArgAction;
use clap::Args;

use super::parsers::{Offered, code_list, preset, regex};
use crate::policy::codes::CodeSet;
use crate::policy::output_rules::MatchStream;
use crate::setup::presets;
use crate::setup::presets::Preset;

/// Which results are retried.
#[derive(Debug, Args)]
#[group(skip)]
#[command(next_help_heading = "Which results are retried")]
pub struct Results {
    /// Statuses that count as success, e.g. 0,3 (replaces the default 0).
    #[arg(long, value_name = "LIST", value_parser = code_list, allow_hyphen_values = true)]
    pub success_on: Option<CodeSet>,

    /// Retry only these failing statuses, e.g. 1,5-7,SIGKILL; all others are fatal.
    #[arg(long, value_name = "LIST", value_parser = code_list, allow_hyphen_values = true)]
    pub retry_on: Option<CodeSet>,

    /// Never retry these statuses (added to 126 and 127; wins over --retry-on).
    #[arg(long, value_name = "LIST", value_parser = code_list, allow_hyphen_values = true)]
    pub fatal_on: Option<CodeSet>,

    /// Built-in lists of retryable and fatal statuses for a well-known command: curl, sysexits,
    /// ssh, git, apt. --retry-on replaces the preset's retryable list; --fatal-on adds to its
    /// fatal one. A preset's output patterns judge only an attempt whose status failed.
    #[arg(
        long,
        value_name = "NAME",
        value_parser = Offered::new(preset, presets::names),
        hide_possible_values = true,
        allow_hyphen_values = true,
    )]
    pub preset: Option<&'static Preset>,

    /// Retry when a line of output matches REGEX, even after exit status 0 (repeatable). Output
    /// is matched as bytes, in ASCII mode: \w, \d, \s, [[:alpha:]] and (?i) are ASCII only,
    /// other text matches as written, and a Unicode class (\p{L}, (?u)\w) is refused.
    #[arg(
        long,
        value_name = "REGEX",
        value_parser = regex,
        action = ArgAction::Append,
        allow_hyphen_values = true,
    )]
    pub retry_if_output: Vec<regex::bytes::Regex>,

    /// Never retry when a line of output matches REGEX, and fail an attempt that exited 0 (the
    /// run then exits 1); wins over every retry rule (repeatable).
    #[arg(
        long,
        value_name = "REGEX",
        value_parser = regex,
        action = ArgAction::Append,
        allow_hyphen_values = true,
    )]
    pub fatal_if_output: Vec<regex::bytes::Regex>,

    /// The output streams the output rules read.
    #[arg(long, value_name = "STREAM", value_enum, allow_hyphen_values = true)]
    pub match_stream: Option<MatchStream>,
}
