//! The policy of one run: validated plain data, and the pure decisions made from it (backoff
//! and jitter, which statuses are retried, what output and hint files say). No I/O, no
//! processes; setup builds a [`Policy`], and the run and the reports read it.

pub mod adaptive;
pub mod backoff;
pub mod breaker;
pub mod budget;
pub mod codes;
pub mod defaults;
pub mod duration;
pub mod escalation;
pub mod hints;
pub mod judgement;
pub mod key;
pub mod output_rules;
pub mod pacing;
pub mod rules;
pub mod shared;
pub mod status;

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

use clap::ValueEnum;

use self::backoff::Backoff;
use self::codes::CodeSet;
pub use self::key::KeySettings;
use self::rules::Rules;

/// Everything that decides how a run goes.
#[derive(Clone, Debug)]
pub struct Policy {
    /// The command and its arguments; empty only for `--explain`.
    pub command: Vec<OsString>,
    /// Total attempts; `None` for no limit (`--forever`).
    pub attempts: Option<u32>,
    /// An attempt that ran this long before it failed starts the schedule and the attempt
    /// limit afresh (`--reset-after`).
    pub reset_after: Option<Duration>,
    /// Deadline for the whole run.
    pub max_time: Option<Duration>,
    /// Limit for one attempt.
    pub attempt_timeout: Option<Duration>,
    /// The delay before each retry.
    pub backoff: Backoff,
    /// Before the first attempt, a wait drawn at random in [0, splay), so that runs started
    /// together (cron on a fleet) spread out; zero waits not at all. Within `max_time`.
    pub splay: Duration,
    /// Seed for the random source; `None` seeds it from the operating system.
    pub seed: Option<u64>,
    /// Which statuses are success, retryable or fatal.
    pub rules: Rules,
    /// Signal sent to a timed-out attempt's process group.
    pub kill_signal: i32,
    /// Grace after `kill_signal` before SIGKILL.
    pub kill_after: Duration,
    /// What each attempt reads on stdin.
    pub stdin: StdinMode,
    /// Where each attempt's stdout goes.
    pub stdout: StdoutMode,
    /// Hold all output and the log; print them only if the run fails.
    pub output_on_failure: bool,
    /// The end of retry's parent cancels the run as a SIGTERM would (`--stop-with-parent`),
    /// and the attempt's first process gets SIGKILL if retry is killed.
    pub stop_with_parent: bool,
    /// Rules on the command's output.
    pub output_rules: output_rules::Rules,
    /// How HTTP statuses from a header dump are judged.
    pub http: HttpRules,
    /// Longest wait a Retry-After can ask for.
    pub retry_after_max: Duration,
    /// Give each attempt a hint file, and replace `{hints}` in the arguments with it.
    pub hints: bool,
    /// The preset the lists came from (`--preset`, or a profile that names one).
    pub preset: Option<&'static str>,
    /// Hooks run before each wait and when retry gives up.
    pub hooks: Hooks,
    /// Where to write the JSON summary.
    pub summary: Option<PathBuf>,
    /// Where to write the Prometheus metrics.
    pub metrics: Option<PathBuf>,
    /// The job's name in the summary and metrics.
    pub name: String,
    /// `--name` was given: the log names the job by it too.
    pub named: bool,
    /// Where and how much to log.
    pub log: LogSettings,
    /// State shared with other runs (`--key`); `None` without a key.
    pub state: Option<KeySettings>,
    /// A `--state` store was given without `--key`, without which it is not used.
    pub unkeyed_store: bool,
    /// The adaptive delay (`--backoff adaptive`), which needs the key's history.
    pub adaptive: Option<adaptive::Params>,
    /// Whether this retry runs inside another's attempt.
    pub nesting: Nesting,
}

/// `--fleet N --hosts H --outage DUR --every DUR --splay DUR --call-time DUR`: the fleet
/// `--explain` simulates.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fleet {
    /// Processes running the job.
    pub processes: u32,
    /// Hosts they are spread over; with a key and no `--state`, each host's processes share
    /// its local state.
    pub hosts: u32,
    pub outage: Duration,
    pub every: Duration,
    /// Each process starts at its own offset within this of each tick (`--splay`, as a real
    /// run waits); 0 = all at the tick.
    pub splay: Duration,
    /// How long one call takes.
    pub call: Duration,
    /// Script calls a second the `--state` store answers for the key (`--store-rate`).
    pub store_rate: u32,
}

/// Where a retry runs: at the top, or inside an attempt of another retry (`RETRY_DEPTH`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Nesting {
    /// 1 for a top-level retry, 2 inside another: the `RETRY_DEPTH` its attempts get.
    pub level: u32,
    /// Inside another retry, that retry's attempt limit (`RETRY_MAX_ATTEMPTS`): `Some(None)`
    /// when it has none, `None` when it is not known.
    pub outer_attempts: Option<Option<u32>>,
    /// Inside another retry, which of its attempts this one runs in (`RETRY_ATTEMPT`), when
    /// known: a warning about the nesting is said in the first only, not once an attempt.
    pub outer_attempt: Option<u32>,
}

impl Default for Nesting {
    fn default() -> Self {
        Nesting {
            level: 1,
            outer_attempts: None,
            outer_attempt: None,
        }
    }
}

/// Shell commands run at points of the run.
#[derive(Clone, Debug, Default)]
pub struct Hooks {
    pub on_retry: Option<String>,
    pub on_giveup: Option<String>,
    /// `--hook-timeout`; `None` for 0, no limit.
    pub timeout: Option<Duration>,
}

/// Which HTTP statuses are retried and which are fatal.
#[derive(Clone, Debug)]
pub struct HttpRules {
    pub retry: CodeSet,
    /// The user's fatal list; without one, every 4xx not in `retry` is fatal.
    pub fatal: Option<CodeSet>,
    /// The user gave a list (`--retry-on-http`, `--fatal-on-http`), which only a header dump
    /// can act on.
    pub given: bool,
}

/// What an HTTP status says of an attempt, when it says anything.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HttpClass {
    Retry,
    Fatal,
}

impl HttpRules {
    /// Fatal list → retry list → other 4xx fatal; anything else leaves it to the exit status.
    pub fn classify(&self, code: u16) -> Option<HttpClass> {
        let code = i32::from(code);
        if self.fatal.as_ref().is_some_and(|f| f.contains(code)) {
            Some(HttpClass::Fatal)
        } else if self.retry.contains(code) {
            Some(HttpClass::Retry)
        } else if self.fatal.is_none() && (400..500).contains(&code) {
            Some(HttpClass::Fatal)
        } else {
            None
        }
    }
}

/// Where the log goes and how much of it.
#[derive(Clone, Debug)]
pub struct LogSettings {
    /// 2 with -v, 1 by default, 0 with -q (give-up only), below 0 with -qq (nothing).
    pub level: i8,
    /// The nesting level that each line names, when above 1 (`retry: level 2: ...`).
    pub depth: u32,
    pub format: LogFormat,
    pub file: Option<PathBuf>,
    /// Text lines begin with the local time: `--log-time`, `-v`, or a log file.
    pub time: bool,
    /// `--color`: when the text log's verdict words (and `--explain --fleet`'s chart) are in
    /// colour.
    pub color: ColorChoice,
}

/// `--stdin`: how the attempts get their input.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum StdinMode {
    /// Rewind a regular file, replay a pipe or socket, pass a terminal or device through.
    Auto,
    /// Record what the attempts read and feed it again to the next one.
    Replay,
    /// Every attempt reads retry's own stdin directly; what one read, the next does not see.
    Pass,
    /// Attempts read from /dev/null.
    Null,
}

/// `--stdout`: where each attempt's stdout goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum StdoutMode {
    /// The command writes straight to retry's stdout.
    Pass,
    /// Hold each attempt's stdout; only the attempt that ends the run writes to stdout, the
    /// held output of retried attempts goes to stderr.
    Hold,
}

/// The format of retry's log lines.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum LogFormat {
    /// One line per event, prefixed `retry:`.
    Text,
    /// One JSON object per line.
    Json,
}

/// `--color`: when to colour what retry writes for a person to read.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ColorChoice {
    /// On a terminal; NO_COLOR (not empty) turns it off, CLICOLOR_FORCE (not 0) on anywhere.
    Auto,
    /// Always, whatever the environment says.
    Always,
    /// Never, whatever the environment says.
    Never,
}

/// Where a setting came from: a flag, a profile, a config file, a preset, the command, or the
/// built-in default.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Origin {
    Flag,
    Profile(String),
    File(PathBuf),
    Default,
    /// A preset's list, chosen where `by` says; with `own`, joined to the user's own list.
    Preset {
        name: &'static str,
        by: Box<Origin>,
        own: Option<Box<Origin>>,
    },
    /// A `{hints}` in the command's arguments turns the hints on.
    HintsInCommand,
}

/// Where each setting that was not a built-in default came from, by long flag name.
pub type Origins = BTreeMap<String, Origin>;

/// A value that cannot be used, told as every error of retry is: what is wrong, the value,
/// and how to put it right (`not a duration: 5parsecs; write 250ms, 1.5s, 2m or 1h 30m`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BadValue {
    pub what: String,
    pub value: String,
    pub fix: String,
}

impl BadValue {
    pub fn new(what: impl Into<String>, value: impl Into<String>, fix: impl Into<String>) -> Self {
        BadValue {
            what: what.into(),
            value: value.into(),
            fix: fix.into(),
        }
    }

    /// The value as the message shows it: `""` when it is empty, control characters escaped
    /// (it is what the user typed, or what a config file holds).
    pub fn shown(&self) -> std::borrow::Cow<'_, str> {
        if self.value.is_empty() {
            "\"\"".into()
        } else {
            crate::quote::clean(&self.value)
        }
    }
}

impl fmt::Display for BadValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}; {}", self.what, self.shown(), self.fix)
    }
}

impl std::error::Error for BadValue {}

/// A combination of flags that cannot work together; reported as a usage error (125). The
/// text follows the form of [`BadValue`]: `<what>: <the bad value>; <how to fix>`.
#[derive(Debug, PartialEq, Eq)]
pub struct UsageError(pub String);

impl fmt::Display for UsageError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<BadValue> for UsageError {
    fn from(bad: BadValue) -> Self {
        UsageError(bad.to_string())
    }
}

impl Policy {
    /// The command as a shell would show it: arguments with spaces or quotes in single quotes,
    /// control characters and invalid UTF-8 escaped as `$'…'` writes them, and what looks like a
    /// credential shown as `***` ([`crate::secrets`]).
    pub fn command_line(&self) -> String {
        crate::secrets::shown_command(&self.command)
    }
}
