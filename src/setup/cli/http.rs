//! HTTP and hints: the HTTP status lists, Retry-After, and the hint file.

use std::time::Duration;

use clap::Args;

use crate::policy::codes::CodeSet;
use crate::policy::duration;

/// HTTP and hints.
#[derive(Debug, Args)]
#[group(skip)]
#[command(next_help_heading = "HTTP and hints")]
pub struct Http {
    /// HTTP statuses, from a header dump in the hint file, that are retried.
    #[arg(long, value_name = "LIST", value_parser = CodeSet::http, allow_hyphen_values = true)]
    pub retry_on_http: Option<CodeSet>,

    /// HTTP statuses that are never retried; wins over --retry-on-http [default: every other 4xx].
    #[arg(long, value_name = "LIST", value_parser = CodeSet::http, allow_hyphen_values = true)]
    pub fatal_on_http: Option<CodeSet>,

    /// Longest wait a Retry-After header (or a retry-after= hint) can ask for.
    #[arg(long, value_name = "DUR", value_parser = duration::parse, allow_hyphen_values = true)]
    pub retry_after_max: Option<Duration>,

    /// Give each attempt a private hint file, its path in RETRY_HINT_FILE and in place of any
    /// `{hints}` in the arguments: `retry --hints -- curl -fsS -D {hints} URL`. A `{hints}` in
    /// the arguments turns this on by itself.
    #[arg(long)]
    pub hints: bool,
}
