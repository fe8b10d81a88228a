//! The command line: every flag defined once, with its help. Parses types (durations, lists,
//! signals); how flags relate to each other is checked when the policy is built.

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

use clap::{ArgAction, CommandFactory, Parser, ValueEnum};

use crate::policy::backoff::Jitter;
use crate::policy::codes::CodeSet;
use crate::policy::key::FailMode;
use crate::policy::output_rules::MatchStream;
use crate::policy::status::{NAMES, signal_number};
use crate::policy::{BadValue, LogFormat, StdinMode, StdoutMode};
use crate::policy::{defaults, duration};
use crate::setup::minfrin;
use crate::setup::presets::{self, Preset};

/// Run a command again until it succeeds, with backoff and jitter.
///
/// retry runs COMMAND (directly, not through a shell) until it succeeds, fails in a way that
/// will not get better, or a limit is reached. Between attempts it waits with exponential
/// backoff and full jitter by default. It exits with the last attempt's status.
#[derive(Debug, Parser)]
#[command(
    name = "retry",
    version,
    override_usage = USAGE,
    before_help = QUICK,
    help_template = "{about-with-newline}\n{usage-heading} {usage}\n\n{before-help}{all-args}{after-help}",
    after_help = SHORT_HELP_END
)]
pub struct Cli {
    /// Total attempts, the first included (at least 1) [default: 5].
    #[arg(allow_hyphen_values = true, short = 'n', long, value_name = "N", value_parser = attempts,
          conflicts_with_all = ["retries", "forever"], help_heading = "When to stop")]
    pub attempts: Option<u32>,

    /// Retries after the first attempt: the same as --attempts N+1.
    #[arg(
        allow_hyphen_values = true,
        long,
        value_name = "N",
        value_parser = retries,
        conflicts_with = "forever",
        help_heading = "When to stop"
    )]
    pub retries: Option<u32>,

    /// No limit on attempts (--max-time and fatal statuses still end the run).
    #[arg(long, help_heading = "When to stop")]
    pub forever: bool,

    /// The same as --attempts N: minfrin's retry's spelling, kept for its scripts.
    #[arg(allow_hyphen_values = true, short = 't', long, value_name = "N", value_parser = minfrin::times,
          conflicts_with_all = ["attempts", "retries", "forever"], help_heading = "When to stop")]
    pub times: Option<u32>,

    /// Deadline for the whole run, attempts and waits together; 0 means none, as in timeout(1).
    #[arg(allow_hyphen_values = true, long, value_name = "DUR", value_parser = duration::parse, help_heading = "When to stop")]
    pub max_time: Option<Duration>,

    /// An attempt that ran at least DUR before it failed starts afresh: the next delay is
    /// --delay again, and --attempts counts from it (a worker that ran well for an hour does
    /// not inherit the backoff of its last crash). Attempt numbers keep counting.
    #[arg(allow_hyphen_values = true, long, value_name = "DUR", value_parser = span, help_heading = "When to stop")]
    pub reset_after: Option<Duration>,

    /// Limit for one attempt; a timed-out attempt counts as status 124 (retryable). 0 means
    /// none.
    #[arg(allow_hyphen_values = true, long, value_name = "DUR", value_parser = duration::parse, help_heading = "When to stop")]
    pub attempt_timeout: Option<Duration>,

    /// Base delay before the first retry.
    #[arg(allow_hyphen_values = true, short = 'd', long, value_name = "DUR", value_parser = minfrin::delay, help_heading = "How long to wait")]
    pub delay: Option<Duration>,

    /// How the delay grows from retry to retry.
    #[arg(
        allow_hyphen_values = true,
        short = 'b',
        long,
        value_name = "KIND",
        value_enum,
        conflicts_with = "delays",
        help_heading = "How long to wait"
    )]
    pub backoff: Option<BackoffKind>,

    /// Multiplier for exponential backoff (at least 1; fractions allowed).
    #[arg(
        allow_hyphen_values = true,
        long,
        value_name = "F",
        value_parser = factor,
        help_heading = "How long to wait"
    )]
    pub factor: Option<f64>,

    /// Cap on any single delay, jitter included [default: 1m, or the longest delay asked for
    /// by --delay or --delays]. A smaller cap than --delay caps it.
    #[arg(allow_hyphen_values = true, long, value_name = "DUR", value_parser = duration::parse,
          help_heading = "How long to wait")]
    pub max_delay: Option<Duration>,

    /// Explicit schedule, e.g. 1s,5s,30s; the last value repeats. Replaces --backoff.
    #[arg(allow_hyphen_values = true, long, value_name = "LIST", value_delimiter = ',', value_parser = duration::parse,
          help_heading = "How long to wait")]
    pub delays: Option<Vec<Duration>>,

    /// Jitter: none, full, equal, decorrelated, or N% (+/-N% around the delay).
    #[arg(allow_hyphen_values = true, short = 'j', long, value_name = "KIND",
          value_parser = Offered::new(jitter, || vec!["none", "full", "equal", "decorrelated", "10%"]),
          hide_possible_values = true,
          help_heading = "How long to wait")]
    pub jitter: Option<Jitter>,

    /// Seed for the random source, for a reproducible schedule.
    #[arg(allow_hyphen_values = true, long, value_name = "N", value_parser = seed, help_heading = "How long to wait")]
    pub seed: Option<u64>,

    /// Statuses that count as success, e.g. 0,3 (replaces the default 0).
    #[arg(allow_hyphen_values = true, long, value_name = "LIST", value_parser = code_list, help_heading = "Which results are retried")]
    pub success_on: Option<CodeSet>,

    /// Retry only these failing statuses, e.g. 1,5-7,SIGKILL; all others are fatal.
    #[arg(allow_hyphen_values = true, long, value_name = "LIST", value_parser = code_list, help_heading = "Which results are retried")]
    pub retry_on: Option<CodeSet>,

    /// Never retry these statuses (added to 126 and 127; wins over --retry-on).
    #[arg(allow_hyphen_values = true, long, value_name = "LIST", value_parser = code_list, help_heading = "Which results are retried")]
    pub fatal_on: Option<CodeSet>,

    /// Built-in lists of retryable and fatal statuses for a well-known command: curl, sysexits,
    /// ssh, git, apt. --retry-on replaces the preset's retryable list; --fatal-on adds to its
    /// fatal one.
    #[arg(allow_hyphen_values = true, long, value_name = "NAME", value_parser = Offered::new(preset, presets::names),
          hide_possible_values = true, help_heading = "Which results are retried")]
    pub preset: Option<&'static Preset>,

    /// Retry when a line of output matches REGEX, even after exit status 0 (repeatable).
    #[arg(allow_hyphen_values = true, long, value_name = "REGEX", value_parser = regex, action = ArgAction::Append,
          help_heading = "Which results are retried")]
    pub retry_if_output: Vec<regex::bytes::Regex>,

    /// Never retry when a line of output matches REGEX; wins over every retry rule (repeatable).
    #[arg(allow_hyphen_values = true, long, value_name = "REGEX", value_parser = regex, action = ArgAction::Append,
          help_heading = "Which results are retried")]
    pub fatal_if_output: Vec<regex::bytes::Regex>,

    /// The output streams the output rules read.
    #[arg(
        allow_hyphen_values = true,
        long,
        value_name = "STREAM",
        value_enum,
        help_heading = "Which results are retried"
    )]
    pub match_stream: Option<MatchStream>,

    /// HTTP statuses, from a header dump in the hint file, that are retried.
    #[arg(allow_hyphen_values = true, long, value_name = "LIST", value_parser = CodeSet::http, help_heading = "HTTP and hints")]
    pub retry_on_http: Option<CodeSet>,

    /// HTTP statuses that are never retried; wins over --retry-on-http [default: every other 4xx].
    #[arg(allow_hyphen_values = true, long, value_name = "LIST", value_parser = CodeSet::http, help_heading = "HTTP and hints")]
    pub fatal_on_http: Option<CodeSet>,

    /// Longest wait a Retry-After header (or a retry-after= hint) can ask for.
    #[arg(allow_hyphen_values = true, long, value_name = "DUR", value_parser = duration::parse,
          help_heading = "HTTP and hints")]
    pub retry_after_max: Option<Duration>,

    /// Give each attempt a private hint file, its path in RETRY_HINT_FILE and in place of any
    /// `{hints}` in the arguments: `retry --hints -- curl -fsS -D {hints} URL`. A `{hints}` in
    /// the arguments turns this on by itself.
    #[arg(long, help_heading = "HTTP and hints")]
    pub hints: bool,

    /// Signal sent to the attempt's process group when it times out.
    #[arg(allow_hyphen_values = true, long, value_name = "SIG", value_parser = Offered::new(signal, || NAMES.to_vec()),
          hide_possible_values = true,
          help_heading = "The child process")]
    pub kill_signal: Option<i32>,

    /// After --kill-signal, wait this long before sending SIGKILL.
    #[arg(allow_hyphen_values = true, long, value_name = "DUR", value_parser = duration::parse,
          help_heading = "The child process")]
    pub kill_after: Option<Duration>,

    /// What each attempt reads: auto rewinds a regular file, replays a pipe or socket and
    /// passes a terminal through; replay, pass and null force a mode.
    #[arg(
        allow_hyphen_values = true,
        long,
        value_name = "MODE",
        value_enum,
        help_heading = "The child process"
    )]
    pub stdin: Option<StdinMode>,

    /// pass streams each attempt's stdout; hold keeps it and writes only the attempt that ends
    /// the run to stdout (retried attempts' output goes to stderr).
    #[arg(
        allow_hyphen_values = true,
        long,
        value_name = "MODE",
        value_enum,
        help_heading = "The child process"
    )]
    pub stdout: Option<StdoutMode>,

    /// Hold every attempt's stdout and stderr and retry's own log, and print them, in order
    /// and marked by attempt, only if the run fails: a run that succeeds prints nothing
    /// (chronic's behaviour, for cron, which mails whatever a job prints).
    #[arg(long, conflicts_with = "stdout", help_heading = "The child process")]
    pub output_on_failure: bool,

    /// More log lines, each with the time: the resolved policy, each attempt's start, and a
    /// success at the first attempt (said only with -v, or in a --log-file).
    #[arg(short = 'v', long, action = ArgAction::Count, help_heading = "Logging")]
    pub verbose: u8,

    /// Fewer log lines: -q only the give-up line, -qq nothing.
    #[arg(short = 'q', long, action = ArgAction::Count, conflicts_with = "verbose",
          help_heading = "Logging")]
    pub quiet: u8,

    /// Log as text lines or as JSON lines.
    #[arg(
        allow_hyphen_values = true,
        long,
        value_name = "FORMAT",
        value_enum,
        help_heading = "Logging"
    )]
    pub log_format: Option<LogFormat>,

    /// Write the log to this file (appending) instead of stderr.
    #[arg(
        allow_hyphen_values = true,
        long,
        value_name = "PATH",
        help_heading = "Logging"
    )]
    pub log_file: Option<PathBuf>,

    /// Begin each text log line with the local time, for CI logs that have none (always in
    /// a --log-file, and with -v).
    #[arg(long, help_heading = "Logging")]
    pub log_time: bool,

    /// Run CMD through `sh -c` before each wait, with the RETRY_* environment, RETRY_STATUS
    /// (the failed attempt's status) and RETRY_NEXT_DELAY_MS. Its failure is only logged.
    #[arg(
        allow_hyphen_values = true,
        long,
        value_name = "CMD",
        help_heading = "Hooks and reports"
    )]
    pub on_retry: Option<String>,

    /// Run CMD through `sh -c` when retry gives up, with the RETRY_* environment, RETRY_STATUS
    /// and RETRY_REASON. Its failure is only logged.
    #[arg(
        allow_hyphen_values = true,
        long,
        value_name = "CMD",
        help_heading = "Hooks and reports"
    )]
    pub on_giveup: Option<String>,

    /// Longest a hook may run before its process group is stopped.
    #[arg(allow_hyphen_values = true, long, value_name = "DUR", value_parser = duration::parse,
          help_heading = "Hooks and reports")]
    pub hook_timeout: Option<Duration>,

    /// Write a JSON summary of the run to FILE at the end (attempts, statuses, time running
    /// and waiting, outcome, reason).
    #[arg(
        allow_hyphen_values = true,
        long,
        value_name = "FILE",
        help_heading = "Hooks and reports"
    )]
    pub summary: Option<PathBuf>,

    /// Write Prometheus metrics to FILE at the end, atomically, for node_exporter's textfile
    /// collector; counters carry on from the file's previous version.
    #[arg(
        allow_hyphen_values = true,
        long,
        value_name = "FILE",
        help_heading = "Hooks and reports"
    )]
    pub metrics: Option<PathBuf>,

    /// The job's name in the summary and the metrics' `name` label [default: the command's
    /// file name].
    #[arg(
        allow_hyphen_values = true,
        long,
        value_name = "NAME",
        help_heading = "Hooks and reports"
    )]
    pub name: Option<String>,

    /// Share a circuit breaker and a retry budget with every run that uses this key: name the
    /// target (a host or an API), not "everything".
    #[arg(allow_hyphen_values = true, long, value_name = "NAME", value_parser = key, help_heading = "Shared state (--key)")]
    pub key: Option<String>,

    /// Where the keys' state lives [default: $RETRY_STATE_DIR, else $XDG_STATE_HOME/retry,
    /// else ~/.local/state/retry].
    #[arg(
        allow_hyphen_values = true,
        long,
        value_name = "DIR",
        help_heading = "Shared state (--key)"
    )]
    pub state_dir: Option<PathBuf>,

    /// Consecutive failed attempts (0 to 1000), of any runs on the key, that open the breaker;
    /// 0 turns it off.
    #[arg(allow_hyphen_values = true, long, value_name = "N",
          value_parser = breaker_failures,
          help_heading = "Shared state (--key)")]
    pub breaker_failures: Option<u32>,

    /// Failures older than this do not count towards opening the breaker.
    #[arg(allow_hyphen_values = true, long, value_name = "DUR", value_parser = span,
          help_heading = "Shared state (--key)")]
    pub breaker_window: Option<Duration>,

    /// How long the breaker stays open the first time: runs exit 75 without running the
    /// command; then one run probes. Doubles after each failed probe.
    #[arg(allow_hyphen_values = true, long, value_name = "DUR", value_parser = span,
          help_heading = "Shared state (--key)")]
    pub breaker_open: Option<Duration>,

    /// The longest the breaker stays open.
    #[arg(allow_hyphen_values = true, long, value_name = "DUR", value_parser = duration::parse,
          help_heading = "Shared state (--key)")]
    pub breaker_open_max: Option<Duration>,

    /// Tokens in a full retry budget (0 to 100000); a retry costs one, a first attempt none; 0
    /// turns the budget off.
    #[arg(
        allow_hyphen_values = true,
        long,
        value_name = "N",
        value_parser = tokens,
        help_heading = "Shared state (--key)"
    )]
    pub budget_burst: Option<u32>,

    /// Tokens a successful attempt adds to the budget.
    #[arg(
        allow_hyphen_values = true,
        long,
        value_name = "F",
        value_parser = ratio,
        help_heading = "Shared state (--key)"
    )]
    pub budget_ratio: Option<f64>,

    /// One token comes back to the budget every DUR, whatever happens.
    #[arg(allow_hyphen_values = true, long, value_name = "DUR", value_parser = span,
          help_heading = "Shared state (--key)")]
    pub budget_refill: Option<Duration>,

    /// Keep the keys' state in Redis, shared by every host that uses it:
    /// redis://[USER:PASSWORD@]HOST[:PORT][/DB], rediss://... for TLS, redis+unix:///PATH,
    /// redis-sentinel://S1[,S2...]/DB?sentinelMasterId=NAME, or redis+cluster://N1[,N2...]
    /// [default: $RETRY_STATE_URL, else the state directory]. A password may come from
    /// $REDISCLI_AUTH instead.
    #[arg(
        allow_hyphen_values = true,
        long = "state",
        value_name = "URL",
        help_heading = "Shared state (--key)"
    )]
    pub state_url: Option<String>,

    /// The longest a run waits for the --state store, all its calls together.
    #[arg(allow_hyphen_values = true, long, value_name = "DUR", value_parser = span,
          help_heading = "Shared state (--key)")]
    pub state_timeout: Option<Duration>,

    /// When the --state store cannot be reached in time before the command starts: open runs
    /// with this host's local state and warns; closed exits 75 without running the command.
    #[arg(
        allow_hyphen_values = true,
        long,
        value_name = "MODE",
        value_enum,
        help_heading = "Shared state (--key)"
    )]
    pub state_fail: Option<FailMode>,

    /// List every key with state in the state directory, or in the --state store: its
    /// breaker, failures counted, tokens left and last change. Changes nothing, runs nothing.
    #[arg(long, conflicts_with_all = ["key", "explain"], help_heading = "Shared state (--key)")]
    pub list_keys: bool,

    /// Forget the key's breaker and budget, run nothing, and exit.
    #[arg(long, requires = "key", help_heading = "Shared state (--key)")]
    pub reset_state: bool,

    /// Read settings from this config file instead of $RETRY_CONFIG or
    /// ~/.config/retry/config.toml.
    #[arg(
        allow_hyphen_values = true,
        long,
        value_name = "PATH",
        help_heading = "Configuration"
    )]
    pub config: Option<PathBuf>,

    /// Read no config file at all, not even $RETRY_CONFIG: what a script that must not depend
    /// on a user's settings gives, and the way past a config file that is broken.
    #[arg(long, conflicts_with = "config", help_heading = "Configuration")]
    pub no_config: bool,

    /// Use this profile of the config file, or a built-in preset of that name.
    #[arg(allow_hyphen_values = true, short = 'p', long, value_name = "NAME", help_heading = "Configuration",
          value_parser = Offered::new(|s: &str| Ok(s.to_string()), presets::names),
          hide_possible_values = true)]
    pub profile: Option<String>,

    /// Print the man page or a shell's completion script, and exit (for packagers).
    #[arg(
        allow_hyphen_values = true,
        long,
        value_name = "KIND",
        value_enum,
        exclusive = true
    )]
    pub generate: Option<Generate>,

    /// Print the resolved policy, where each value came from, and the schedule it implies;
    /// run nothing, and exit.
    #[arg(long)]
    pub explain: bool,

    /// With --explain: simulate N processes (1 to 100000) running this policy against one
    /// service that is down for --outage, and print what they do to it (calls, peaks, calls
    /// per job, goodput, time to recover) and what it assumed, beside the same policy without
    /// jitter and without shared state; with --log-format json, as one JSON object per line.
    #[arg(allow_hyphen_values = true, long, value_name = "N", requires = "explain", value_parser = processes,
          help_heading = "Explain a fleet")]
    pub fleet: Option<u32>,

    /// With --fleet: how long the service is down.
    #[arg(allow_hyphen_values = true, long, value_name = "DUR", value_parser = duration::parse,
          help_heading = "Explain a fleet")]
    pub outage: Option<Duration>,

    /// With --fleet: how often each process runs the job (a cron interval).
    #[arg(allow_hyphen_values = true, long, value_name = "DUR", value_parser = duration::parse,
          help_heading = "Explain a fleet")]
    pub every: Option<Duration>,

    /// With --fleet: the N processes are spread over H hosts; with --key and no --state, the
    /// processes on one host share that host's state [default: N, one process a host].
    #[arg(allow_hyphen_values = true, long, value_name = "H", value_parser = processes,
          help_heading = "Explain a fleet")]
    pub hosts: Option<u32>,

    /// With --fleet: each process runs at its own random offset within DUR of the cron tick;
    /// 0 starts every process at the same instant, as cron fires a fleet at the same second
    /// [default: --every, runs spread over it].
    #[arg(allow_hyphen_values = true, long, value_name = "DUR", value_parser = duration::parse,
          help_heading = "Explain a fleet")]
    pub splay: Option<Duration>,

    /// With --fleet: how long one call of the job takes, failed or not.
    #[arg(allow_hyphen_values = true, long, value_name = "DUR", value_parser = duration::parse,
          help_heading = "Explain a fleet")]
    pub call_time: Option<Duration>,

    /// minfrin's retry's --until: refused, naming the --success-on that says it here.
    #[arg(allow_hyphen_values = true, short = 'u', long, value_name = "CRITERIA", hide = true,
          value_parser = minfrin::until)]
    pub until: Option<String>,

    /// minfrin's retry's --while: refused, naming the --retry-on that says it here.
    #[arg(allow_hyphen_values = true, short = 'w', long = "while", value_name = "CRITERIA",
          hide = true, value_parser = minfrin::while_)]
    pub while_: Option<String>,

    /// minfrin's retry's --message: refused, naming --name.
    #[arg(allow_hyphen_values = true, short = 'm', long, value_name = "TEXT", hide = true,
          value_parser = minfrin::message)]
    pub message: Option<String>,

    /// The command to run and its arguments, passed on byte for byte: run directly, not
    /// through a shell (`retry -- sh -c '...'` asks for one). Put `--` before it when it
    /// begins with a dash.
    #[arg(value_name = "COMMAND", trailing_var_arg = true, num_args = 1.., help_heading = "Command",
          value_hint = clap::ValueHint::CommandWithArguments,
          value_parser = clap::value_parser!(OsString), required_unless_present_any = ["explain", "reset_state", "fleet", "list_keys", "generate"])]
    pub command: Vec<OsString>,
}

/// How retry is called, for the help and the man page's synopsis.
pub const USAGE: &str = "retry [OPTIONS] [--] COMMAND [ARG]...";

/// The answers to the common questions, on the first screen of `retry -h`; each line fits in
/// 80 columns.
const QUICK: &str = "\
Example:     retry -n 3 -d 2s -- curl -fsS https://example.com/health
DUR:         250ms, 1.5s, 2m, 1h 30m, or a bare number of seconds (at most 1y)
LIST:        exit statuses, ranges and signals, as 1,5-7,75,SIGKILL
Exit status: the last attempt's, or the signal that killed it: retry ends by it
             too; 124 timed out; 125 bad usage or retry's own failure; 126/127
             cannot run / not found; 75 refused, the --key's breaker being open;
             cancelled by a signal (Ctrl-C, TERM): retry ends by that signal
Presets:     curl, sysexits, ssh, git, apt (--preset NAME, or -p NAME)
minfrin's:   -t N is --attempts N; see man retry, MINFRIN'S RETRY";

/// The end of `retry -h`: where the rest is.
const SHORT_HELP_END: &str = "\
This is not the full help: retry --help lists every flag, and man retry says
more. Use `retry -- sh -c '...'` to run a shell pipeline.";

/// The flags `retry -h` shows, what a first run needs, each with its help in a few words;
/// `--help` shows every flag with its whole help.
const SHORT_HELP: [(&str, &str); 19] = [
    (
        "attempts",
        "Total attempts, the first included [default: 5]",
    ),
    ("times", "The same as --attempts (minfrin's retry's -t)"),
    ("forever", "No limit on attempts"),
    (
        "max_time",
        "Deadline for the whole run, attempts and waits together",
    ),
    (
        "attempt_timeout",
        "Limit for one attempt (status 124 when it passes)",
    ),
    ("delay", "Base delay before the first retry [default: 1s]"),
    (
        "backoff",
        "How delays grow: exponential (default), linear, constant, fibonacci",
    ),
    (
        "jitter",
        "Jitter: full (default), none, equal, decorrelated, or N%",
    ),
    (
        "retry_on",
        "Retry only these failing statuses; others are fatal",
    ),
    (
        "fatal_on",
        "Never retry these statuses (added to 126 and 127)",
    ),
    ("preset", "Status lists for curl, sysexits, ssh, git or apt"),
    (
        "output_on_failure",
        "Print output and log only if the run fails (cron)",
    ),
    (
        "verbose",
        "More log lines: the policy, each start, a first-try success",
    ),
    (
        "quiet",
        "Fewer log lines: -q only the give-up line, -qq nothing",
    ),
    (
        "log_file",
        "Write the log to this file (appending), not stderr",
    ),
    (
        "key",
        "Share a breaker and a retry budget with every run on this key",
    ),
    ("explain", "Show the policy and its schedule; run nothing"),
    (
        "command",
        "The command and its arguments, run directly (no shell)",
    ),
    ("help", "Print this help (-h), or every flag (--help)"),
];

/// The end of `--help`, and the man page's sections after the options: one source for both.
pub const SECTIONS: [(&str, &[(&str, &str)]); 7] = [
    (
        "EXIT STATUS",
        &[
            (
                "the last attempt's status",
                "success, a fatal status, or attempts used up",
            ),
            (
                "124",
                "the last attempt was stopped by --attempt-timeout or --max-time",
            ),
            (
                "125",
                "usage error (nothing was run), or retry itself failed",
            ),
            (
                "126, 127",
                "the command could not be executed, or was not found",
            ),
            (
                "killed by signal N",
                "the last attempt was killed by N: retry ends by N too (without a core dump), so a shell sees what it would have seen without retry",
            ),
            (
                "cancelled by signal N",
                "retry was cancelled by INT (a Ctrl-C), TERM, HUP or QUIT, during an attempt or a wait: it ends by that signal, re-raised, so a script or a shell loop around it stops too",
            ),
            (
                "128+N",
                "a shell's $? for a run that ended by signal N; retry exits 128+N itself only where the signal cannot end it (as PID 1 in a container)",
            ),
            (
                "75",
                "the run was refused without running the command: the --key's breaker is open, or its --state store cannot be reached and --state-fail is closed",
            ),
            (
                "22, 1",
                "the HTTP status (22) or an output rule (1) failed an attempt that exited 0",
            ),
            (
                "1",
                "the run gave up on a status 0 that --success-on left out: a give-up never exits 0",
            ),
        ],
    ),
    (
        "ENVIRONMENT",
        &[
            ("RETRY_ATTEMPT", "given to each attempt: its number, from 1"),
            (
                "RETRY_MAX_ATTEMPTS",
                "given to each attempt: the limit; empty with --forever",
            ),
            (
                "RETRY_PREVIOUS_EXIT",
                "given to each attempt: the previous status; empty at first",
            ),
            (
                "RETRY_REMAINING_MS",
                "given to each attempt: time left before --max-time; empty without it",
            ),
            (
                "RETRY_IDEMPOTENCY_KEY",
                "given to each attempt: one UUID for the run; an inherited one is kept",
            ),
            (
                "RETRY_DEPTH",
                "given to each attempt: 1 under a top-level retry, 2 inside a nested one",
            ),
            (
                "RETRY_HINT_FILE",
                "given to each attempt with --hints: its private hint file",
            ),
            (
                "RETRY_STATUS, RETRY_NEXT_DELAY_MS, RETRY_REASON",
                "given to hooks",
            ),
            (
                "RETRY_CONFIG",
                "read: the config file, when --config is not given",
            ),
            ("XDG_CONFIG_HOME", "read: where the default config file is"),
            (
                "RETRY_STATE_DIR",
                "read: where --key keeps its state, when --state-dir is not given",
            ),
            (
                "XDG_STATE_HOME",
                "read: the state is in $XDG_STATE_HOME/retry otherwise",
            ),
            (
                "RETRY_STATE_URL",
                "read: the Redis store of --key's state, when --state is not given",
            ),
            (
                "REDISCLI_AUTH",
                "read: the Redis password, when the --state URL has none",
            ),
            (
                "NO_COLOR",
                "read: when set, the log on a terminal has no colour",
            ),
        ],
    ),
    (
        "FILES",
        &[
            (
                "$XDG_CONFIG_HOME/retry/config.toml",
                "the default config file (else ~/.config/retry/config.toml): defaults, and [profiles.NAME] tables, keyed by long flag names",
            ),
            (
                "$XDG_STATE_HOME/retry/KEY.json",
                "the breaker and budget of --key KEY (else ~/.local/state/retry), beside KEY.lock",
            ),
        ],
    ),
    (
        "HINT FILES",
        &[
            (
                "HTTP/1.1 503 Service Unavailable ... Retry-After: 30",
                "a header dump, as curl -D {hints} writes it: the last response's status is judged by --retry-on-http and --fatal-on-http, and Retry-After sets the next wait (up to --retry-after-max)",
            ),
            (
                "retry-after=30s",
                "a line any command may write to $RETRY_HINT_FILE: wait this long before the next attempt",
            ),
            (
                "stop",
                "a line that asks not to be retried: the run ends with the attempt's status",
            ),
        ],
    ),
    (
        "MINFRIN'S RETRY",
        &[
            (
                "-t N, --times N",
                "the number of attempts, as in minfrin's retry: the same as --attempts N (a deadline is --max-time, which has no short form); -t 0 is refused, -t -1 names --forever",
            ),
            (
                "-d N",
                "N seconds before the first retry; minfrin's list -d 1,2,5 is refused, naming --delays 1s,2s,5s",
            ),
            (
                "-u, --until; -w, --while; -m, --message; -j SECONDS; -v alone",
                "refused with exit 125, each naming what says it here (--success-on, --retry-on, --name, -j full, --version)",
            ),
            (
                "retry COMMAND",
                "minfrin's bare form tries forever, 10s apart, holding stdout; here it makes 5 attempts with backoff and jitter, streaming stdout. minfrin's is retry --forever -d 10 -b constant -j none --stdout hold -- COMMAND",
            ),
        ],
    ),
    (
        "EXAMPLES",
        &[
            (
                "retry -- curl -fsS https://example.com/health",
                "up to 5 attempts, exponential backoff from 1s, full jitter",
            ),
            (
                "retry -n 10 -d 500ms --max-time 2m -- make test",
                "ten attempts, at most two minutes in all",
            ),
            (
                "retry --preset curl --hints -- curl -fsS -D {hints} URL",
                "judge by the HTTP status, follow Retry-After",
            ),
            (
                "retry -p ci -- ./deploy.sh",
                "the policy of the profile ci of the config file",
            ),
            (
                "retry --key api.example.com -- curl -fsS URL",
                "share a breaker and a retry budget with every run on the key",
            ),
            (
                "retry --explain -n 6 --seed 1",
                "show the schedule, run nothing",
            ),
        ],
    ),
    (
        "SEE ALSO",
        &[
            (
                "timeout(1)",
                "one attempt with a time limit; retry reads its exit statuses and 0 as it does",
            ),
            (
                "curl(1)",
                "--retry, and the exit statuses of the curl preset",
            ),
            (
                "systemd.service(5)",
                "Restart= and RestartSec= for services that systemd keeps running",
            ),
        ],
    ),
];

/// The sections, as text for the end of `--help`.
fn after_long_help() -> String {
    let mut out = String::new();
    for (title, items) in SECTIONS {
        out.push_str(&format!(
            "{}:\n",
            title[..1].to_string() + &title[1..].to_lowercase()
        ));
        for (term, text) in items {
            out.push_str(&format!("  {term}\n      {text}\n"));
        }
        out.push('\n');
    }
    out.trim_end().to_string()
}

/// What `--generate` writes: the man page, or a shell's completion script.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Generate {
    Man,
    Bash,
    Zsh,
    Fish,
    Elvish,
    Powershell,
}

/// How the delay grows between retries.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, ValueEnum)]
pub enum BackoffKind {
    /// delay * factor^(k-1)
    #[default]
    Exponential,
    /// delay * k
    Linear,
    /// always delay
    Constant,
    /// delay * 1, 2, 3, 5, 8, ...
    Fibonacci,
    /// learned from the key's recent outcomes (needs --key; experimental)
    Adaptive,
}

/// The clap definition, for completions and the man page.
///
/// A flag's value may begin with a dash (each is marked `allow_hyphen_values`): `-n -1` is a bad
/// number of attempts, said as such, not an unknown flag `-1`; and `--retry-if-output '-ERR'`
/// works.
pub fn command() -> clap::Command {
    let shown = shown_defaults();
    parsing_command()
        .after_long_help(after_long_help())
        .mut_args(|arg| {
            match shown.iter().find(|(id, _)| arg.get_id() == *id) {
                // Made once, for the help or a generated file, and kept until retry exits.
                Some((_, value)) => arg.default_value(&*value.clone().leak()),
                None => arg,
            }
        })
}

/// A flag's help in the few words `retry -h` gives it, if it shows the flag.
pub fn short_help(id: &str) -> Option<&'static str> {
    SHORT_HELP
        .iter()
        .find(|(shown, _)| *shown == id)
        .map(|(_, help)| *help)
}

/// The definition `retry -h` is shown from: the flags of [`SHORT_HELP`], each with its few
/// words, and no defaults or possible values beside them (the words say them).
pub fn short_help_command() -> clap::Command {
    parsing_command()
        .disable_help_flag(true)
        .arg(
            clap::Arg::new("help")
                .short('h')
                .long("help")
                .action(ArgAction::Help),
        )
        .mut_args(|arg| {
            let id = arg.get_id().as_str();
            match SHORT_HELP.iter().find(|(shown, _)| *shown == id) {
                Some((_, help)) => {
                    let values = arg.get_action().takes_values();
                    arg.help(*help).hide_possible_values(values)
                }
                None => arg.hide_short_help(true),
            }
        })
}

/// [`command`] without what only `--help`, the man page and the completions show: the long
/// help's sections, and the flags' defaults. What every run parses its flags with: given
/// defaults, clap would parse each one's text into a value at every start, the largest part
/// of what a run of `retry -- true` did (a third of its instructions); a run takes the defaults
/// of the flags it was not given typed from `policy::defaults` (`setup::validate`).
pub fn parsing_command() -> clap::Command {
    Cli::command()
}

/// The flags' defaults as `--help` and the man page show them, each made from its constant
/// in `policy::defaults`.
pub fn shown_defaults() -> [(&'static str, String); 25] {
    let named = |value: Option<clap::builder::PossibleValue>| {
        value.map_or_else(String::new, |v| v.get_name().to_string())
    };
    let human = duration::human;
    let codes = defaults::RETRY_ON_HTTP
        .map(|code| code.to_string())
        .join(",");
    let signal = crate::policy::status::signal_name(defaults::KILL_SIGNAL);
    [
        ("delay", human(defaults::DELAY)),
        ("backoff", named(BackoffKind::default().to_possible_value())),
        ("factor", defaults::FACTOR.to_string()),
        ("jitter", defaults::JITTER.to_string()),
        (
            "match_stream",
            named(defaults::MATCH_STREAM.to_possible_value()),
        ),
        ("retry_on_http", codes),
        ("retry_after_max", human(defaults::RETRY_AFTER_MAX)),
        ("kill_signal", signal.trim_start_matches("SIG").to_string()),
        ("kill_after", human(defaults::KILL_AFTER)),
        ("stdin", named(defaults::STDIN.to_possible_value())),
        ("stdout", named(defaults::STDOUT.to_possible_value())),
        (
            "log_format",
            named(defaults::LOG_FORMAT.to_possible_value()),
        ),
        ("hook_timeout", human(defaults::HOOK_TIMEOUT)),
        ("breaker_failures", defaults::BREAKER_FAILURES.to_string()),
        ("breaker_window", human(defaults::BREAKER_WINDOW)),
        ("breaker_open", human(defaults::BREAKER_OPEN)),
        ("breaker_open_max", human(defaults::BREAKER_OPEN_MAX)),
        ("budget_burst", defaults::BUDGET_BURST.to_string()),
        ("budget_ratio", defaults::BUDGET_RATIO.to_string()),
        ("budget_refill", human(defaults::BUDGET_REFILL)),
        ("state_timeout", human(defaults::STATE_TIMEOUT)),
        (
            "state_fail",
            named(defaults::STATE_FAIL.to_possible_value()),
        ),
        ("outage", human(defaults::OUTAGE)),
        ("every", human(defaults::EVERY)),
        ("call_time", human(defaults::CALL_TIME)),
    ]
}

/// A value parser that offers names to the shells' completions: retry's own parser `parse`,
/// and `names`, what a completion lists (a preset's name, a signal's).
#[derive(Clone)]
struct Offered<T> {
    parse: fn(&str) -> Result<T, BadValue>,
    names: fn() -> Vec<&'static str>,
}

impl<T> Offered<T> {
    fn new(parse: fn(&str) -> Result<T, BadValue>, names: fn() -> Vec<&'static str>) -> Self {
        Offered { parse, names }
    }
}

impl<T: Clone + Send + Sync + 'static> clap::builder::TypedValueParser for Offered<T> {
    type Value = T;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &std::ffi::OsStr,
    ) -> Result<T, clap::Error> {
        self.parse.parse_ref(cmd, arg, value)
    }

    fn possible_values(
        &self,
    ) -> Option<Box<dyn Iterator<Item = clap::builder::PossibleValue> + '_>> {
        Some(Box::new(
            (self.names)()
                .into_iter()
                .map(clap::builder::PossibleValue::new),
        ))
    }
}

/// A state key: a name of printable characters.
fn key(s: &str) -> Result<String, BadValue> {
    if s.is_empty() || s.len() > 200 || s.chars().any(char::is_control) {
        return Err(BadValue::new(
            "not a key",
            s.escape_debug().to_string(),
            "use 1 to 200 printable characters, such as api.example.com",
        ));
    }
    Ok(s.to_string())
}

fn preset(s: &str) -> Result<&'static Preset, BadValue> {
    presets::find(s).ok_or_else(|| {
        let names = presets::names();
        BadValue::new(
            "no such preset",
            s,
            format!("the presets are {}", names.join(", ")),
        )
    })
}

fn regex(s: &str) -> Result<regex::bytes::Regex, BadValue> {
    regex::bytes::Regex::new(s).map_err(|e| {
        // The regex crate's message spans lines, with a caret under the fault; its last line
        // says what is wrong.
        let why = e.to_string();
        let why = why
            .lines()
            .last()
            .unwrap_or_default()
            .trim_start_matches("error: ");
        BadValue::new(
            "not a regular expression",
            s,
            format!("{why} (escape a literal ( [ . * + ? {{ with a backslash)"),
        )
    })
}

fn jitter(s: &str) -> Result<Jitter, BadValue> {
    s.parse().map_err(|mut bad: BadValue| {
        if let Some(hint) = minfrin::jitter_hint(s) {
            bad.fix = hint;
        }
        bad
    })
}

fn code_list(s: &str) -> Result<CodeSet, BadValue> {
    s.parse()
}

fn signal(s: &str) -> Result<i32, BadValue> {
    signal_number(s).ok_or_else(|| {
        BadValue::new(
            "not a signal",
            s,
            "give a name or a number, as TERM, SIGINT or 9",
        )
    })
}

fn attempts(s: &str) -> Result<u32, BadValue> {
    match s.trim().parse::<u32>() {
        Ok(n) if n >= 1 => Ok(n),
        _ => Err(BadValue::new(
            "not a number of attempts",
            s,
            "give a whole number of at least 1, or --forever for no limit",
        )),
    }
}

fn retries(s: &str) -> Result<u32, BadValue> {
    match s.trim().parse::<u32>() {
        Ok(n) if n < u32::MAX => Ok(n),
        _ => Err(BadValue::new(
            "not a number of retries",
            s,
            "give a whole number (0 for none), or --forever for no limit",
        )),
    }
}

fn factor(s: &str) -> Result<f64, BadValue> {
    match s.trim().parse::<f64>() {
        Ok(f) if f.is_finite() && f >= 1.0 => Ok(f),
        _ => Err(BadValue::new(
            "not a backoff factor",
            s,
            "give a number of at least 1, as 2 or 1.5",
        )),
    }
}

fn breaker_failures(s: &str) -> Result<u32, BadValue> {
    match s.trim().parse::<u32>() {
        Ok(n) if n <= 1000 => Ok(n),
        _ => Err(BadValue::new(
            "not a number of failures",
            s,
            "give a whole number from 0 (no breaker) to 1000",
        )),
    }
}

fn tokens(s: &str) -> Result<u32, BadValue> {
    match s.trim().parse::<u32>() {
        Ok(n) if n <= defaults::MOST_TOKENS => Ok(n),
        _ => Err(BadValue::new(
            "not a number of tokens",
            s,
            format!(
                "give a whole number from 0 (no budget) to {}",
                defaults::MOST_TOKENS
            ),
        )),
    }
}

fn processes(s: &str) -> Result<u32, BadValue> {
    match s.trim().parse::<u32>() {
        Ok(n) if (1..=defaults::MOST_PROCESSES).contains(&n) => Ok(n),
        _ => Err(BadValue::new(
            "not a number of processes",
            s,
            format!("give a whole number from 1 to {}", defaults::MOST_PROCESSES),
        )),
    }
}

fn ratio(s: &str) -> Result<f64, BadValue> {
    match s.trim().parse::<f64>() {
        Ok(f) if f.is_finite() && f >= 0.0 => Ok(f),
        _ => Err(BadValue::new(
            "not a ratio",
            s,
            "give a number of 0 or more, as 0.1",
        )),
    }
}

/// A duration that must be longer than zero: a window or a period.
fn span(s: &str) -> Result<Duration, BadValue> {
    match duration::parse(s)? {
        d if d.is_zero() => Err(BadValue::new(
            "not a length of time",
            s,
            "give a duration longer than 0, as 1m",
        )),
        d => Ok(d),
    }
}

fn seed(s: &str) -> Result<u64, BadValue> {
    s.trim().parse().map_err(|_| {
        BadValue::new(
            "not a seed",
            s,
            format!("give a whole number from 0 to {}", u64::MAX),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_clap_definition_is_consistent() {
        command().debug_assert();
        short_help_command().debug_assert();
    }

    /// `retry -h` shows the flags of SHORT_HELP, each known to the definition.
    #[test]
    fn the_short_help_names_flags_that_exist() {
        let cmd = command();
        for (id, _) in SHORT_HELP {
            assert!(
                id == "help" || cmd.get_arguments().any(|a| a.get_id() == id),
                "{id}"
            );
        }
    }

    /// A flag's value may begin with a dash (`-n -1` is a bad number, `--retry-if-output
    /// -ERR` a pattern): every flag that takes a value says so.
    #[test]
    fn every_flag_that_takes_a_value_takes_one_that_begins_with_a_dash() {
        for arg in command().get_arguments() {
            if arg.get_action().takes_values() && !arg.is_positional() {
                assert!(
                    arg.is_allow_hyphen_values_set(),
                    "--{} needs allow_hyphen_values",
                    arg.get_id()
                );
            }
        }
    }

    /// The defaults as the help shows them, given as flags, make the policy (and the fleet)
    /// that giving no flag makes; and the two the help writes out by hand say what the
    /// constants say.
    #[test]
    fn the_defaults_shown_are_the_defaults_used() {
        // With a key and a store, so that the breaker's, the budget's and the store's
        // settings are in the policy.
        let base = ["retry", "--key", "k", "--state", "redis://127.0.0.1:1"].map(String::from);
        let mut shown = base.to_vec();
        for (id, value) in shown_defaults() {
            shown.extend([format!("--{}", id.replace('_', "-")), value]);
        }
        let tail = ["--", "true"].map(String::from);
        let parse = |args: Vec<String>| Cli::try_parse_from(args).expect("the flags parse");
        let given = parse([shown, tail.to_vec()].concat());
        let none = parse([base.to_vec(), tail.to_vec()].concat());
        assert!(given.delay.is_some() && none.delay.is_none());
        let fleets = [&given, &none].map(|cli| super::super::fleet(cli, 10).expect("a fleet"));
        assert_eq!(fleets[0], fleets[1]);
        let [given, none] = [given, none].map(|cli| {
            let policy = crate::policy::Policy::try_from(cli).expect("a policy");
            format!("{policy:?}")
        });
        assert_eq!(given, none);
        let help = |name: &str| {
            let cmd = command();
            let arg = cmd.get_arguments().find(|a| a.get_id() == name);
            arg.and_then(|a| a.get_help()).map(ToString::to_string)
        };
        let attempts = help("attempts").expect("--attempts has help");
        assert!(
            attempts.contains(&format!("[default: {}]", defaults::ATTEMPTS)),
            "{attempts}"
        );
        let max_delay = help("max_delay").expect("--max-delay has help");
        assert!(
            max_delay.contains(&format!(
                "[default: {},",
                duration::human(defaults::MAX_DELAY)
            )),
            "{max_delay}"
        );
    }
}
