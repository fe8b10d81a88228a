//! Shared state (--key): the key, its breaker and budget, and where its state is kept.

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

use super::parsers::{breaker_failures, key, ratio, span, tokens};
use crate::policy::duration;
use crate::policy::key::FailMode;

/// Shared state (--key).
#[derive(Debug, Args)]
#[group(skip)]
#[command(next_help_heading = "Shared state (--key)")]
pub struct Shared {
    /// Share a circuit breaker and a retry budget with every run that uses this key: name the
    /// target (a host or an API), not "everything".
    #[arg(long, value_name = "NAME", value_parser = key, allow_hyphen_values = true)]
    pub key: Option<String>,

    /// Where the keys' state lives [default: $RETRY_STATE_DIR, else $XDG_STATE_HOME/retry,
    /// else ~/.local/state/retry].
    #[arg(long, value_name = "DIR", allow_hyphen_values = true)]
    pub state_dir: Option<PathBuf>,

    /// Consecutive failed attempts (0 to 1000), of any runs on the key, that open the breaker;
    /// 0 turns it off.
    #[arg(long, value_name = "N", value_parser = breaker_failures, allow_hyphen_values = true)]
    pub breaker_failures: Option<u32>,

    /// Failures older than this do not count towards opening the breaker.
    #[arg(long, value_name = "DUR", value_parser = span, allow_hyphen_values = true)]
    pub breaker_window: Option<Duration>,

    /// How long the breaker stays open the first time: runs exit 75 without running the
    /// command; then one run probes. Doubles after each failed probe.
    #[arg(long, value_name = "DUR", value_parser = span, allow_hyphen_values = true)]
    pub breaker_open: Option<Duration>,

    /// The longest the breaker stays open.
    #[arg(long, value_name = "DUR", value_parser = duration::parse, allow_hyphen_values = true)]
    pub breaker_open_max: Option<Duration>,

    /// Tokens in a full retry budget (0 to 100000); a retry costs one, a first attempt none; 0
    /// turns the budget off.
    #[arg(long, value_name = "N", value_parser = tokens, allow_hyphen_values = true)]
    pub budget_burst: Option<u32>,

    /// Tokens a successful attempt adds to the budget.
    #[arg(long, value_name = "F", value_parser = ratio, allow_hyphen_values = true)]
    pub budget_ratio: Option<f64>,

    /// One token comes back to the budget every DUR, whatever happens.
    #[arg(long, value_name = "DUR", value_parser = span, allow_hyphen_values = true)]
    pub budget_refill: Option<Duration>,

    /// Keep the keys' state in Redis, shared by every host that uses it:
    /// redis://[USER:PASSWORD@]HOST[:PORT][/DB], rediss://... for TLS, redis+unix:///PATH,
    /// redis-sentinel://S1[,S2...]/DB?sentinelMasterId=NAME, or redis+cluster://N1[,N2...]
    /// [default: $RETRY_STATE_URL, else the state directory]. A password may come from
    /// $REDISCLI_AUTH instead.
    #[arg(long = "state", value_name = "URL", allow_hyphen_values = true)]
    pub state_url: Option<String>,

    /// The longest a run waits for the --state store, all its calls together.
    #[arg(long, value_name = "DUR", value_parser = span, allow_hyphen_values = true)]
    pub state_timeout: Option<Duration>,

    /// When the --state store cannot be reached in time before the command starts: open runs
    /// with this host's local state and warns; closed exits 75 without running the command.
    #[arg(long, value_name = "MODE", value_enum, allow_hyphen_values = true)]
    pub state_fail: Option<FailMode>,

    /// List every key with state in the state directory, or in the --state store: its
    /// breaker, failures counted, tokens left and last change. Changes nothing, runs nothing.
    #[arg(long, conflicts_with_all = ["key", "explain"])]
    pub list_keys: bool,

    /// Forget the key's breaker and budget, run nothing, and exit.
    #[arg(long, requires = "key")]
    pub reset_state: bool,
}
