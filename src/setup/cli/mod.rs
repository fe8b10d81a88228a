//! The command line: every flag defined once, with its help, in one struct per help heading
//! (`stop`, `wait`, `results`, `http`, `child`, `logging`, `reports`, `shared`,
//! `configuration`, `simulated`) flattened into [`Cli`]; each default the help shows defined
//! once, in the `defaults!` table. Parses types (durations, lists, signals: `parsers`); how
//! flags relate to each other is checked when the policy is built.

mod child;
mod configuration;
mod http;
mod logging;
mod parsers;
mod reports;
mod results;
mod sections;
mod shared;
mod simulated;
mod stop;
mod wait;

use std::ffi::OsString;
use std::time::Duration;

use clap::{ArgAction, CommandFactory, Parser, ValueEnum};

use crate::policy::codes::CodeSet;
use crate::policy::{defaults, duration};
use crate::setup::minfrin;

pub use self::sections::SECTIONS;
use self::sections::after_long_help;
pub use self::{
    child::Child, configuration::Configuration, http::Http, logging::Logging, reports::Reports,
    results::Results, shared::Shared, simulated::Simulated, stop::Stop, wait::Wait,
};

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
    #[command(flatten)]
    pub stop: Stop,

    #[command(flatten)]
    pub wait: Wait,

    #[command(flatten)]
    pub results: Results,

    #[command(flatten)]
    pub http: Http,

    #[command(flatten)]
    pub child: Child,

    #[command(flatten)]
    pub logging: Logging,

    #[command(flatten)]
    pub reports: Reports,

    #[command(flatten)]
    pub shared: Shared,

    #[command(flatten)]
    pub configuration: Configuration,

    // The flags below without a heading of their own say so: a flattened group's heading
    // carries on to the flags after it.
    /// Print the man page or a shell's completion script, and exit (for packagers).
    #[arg(
        long,
        value_name = "KIND",
        value_enum,
        exclusive = true,
        help_heading = NO_HEADING,
        allow_hyphen_values = true,
    )]
    pub generate: Option<Generate>,

    /// Print the resolved policy, where each value came from, and the schedule it implies;
    /// run nothing, and exit.
    #[arg(long, help_heading = NO_HEADING)]
    pub explain: bool,

    #[command(flatten)]
    pub simulated: Simulated,

    /// minfrin's retry's --until: refused, naming the --success-on that says it here.
    #[arg(
        short = 'u',
        long,
        value_name = "CRITERIA",
        hide = true,
        help_heading = NO_HEADING,
        value_parser = minfrin::until,
        allow_hyphen_values = true,
    )]
    pub until: Option<String>,

    /// minfrin's retry's --while: refused, naming the --retry-on that says it here.
    #[arg(
        short = 'w',
        long = "while",
        value_name = "CRITERIA",
        hide = true,
        help_heading = NO_HEADING,
        value_parser = minfrin::while_,
        allow_hyphen_values = true,
    )]
    pub while_: Option<String>,

    /// minfrin's retry's --message: refused, naming --name.
    #[arg(
        short = 'm',
        long,
        value_name = "TEXT",
        hide = true,
        help_heading = NO_HEADING,
        value_parser = minfrin::message,
        allow_hyphen_values = true,
    )]
    pub message: Option<String>,

    /// The command to run and its arguments, passed on byte for byte: run directly, not
    /// through a shell (`retry -- sh -c '...'` asks for one). Put `--` before it when it
    /// begins with a dash.
    #[arg(
        value_name = "COMMAND",
        help_heading = "Command",
        trailing_var_arg = true,
        num_args = 1..,
        value_hint = clap::ValueHint::CommandWithArguments,
        value_parser = clap::value_parser!(OsString),
        required_unless_present_any = ["explain", "reset_state", "fleet", "list_keys", "generate"],
    )]
    pub command: Vec<OsString>,
}

/// The heading of the flags that have none (clap's "Options").
const NO_HEADING: Option<&str> = None;

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
             cannot run / not found; 75 refused: the --key's breaker is open, or
             its store is down and --state-fail is closed; cancelled by a
             signal (Ctrl-C, TERM): retry ends by that signal
HTTP:        retry --preset curl -- curl -fsS -D {hints} URL: retry reads the
             status from curl's header dump and waits as Retry-After asks
Presets:     curl, sysexits, ssh, git, apt (--preset NAME; -p NAME is a config
             profile, or the preset of that name when the config has none)
minfrin's:   -t N is --attempts N, but -d is no fixed wait; see man retry";

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

/// The clap definition, for the help, the completions and the man page.
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
                // Under "Options", not the last heading the flattened groups left behind.
                .help_heading(NO_HEADING)
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
/// help's sections, and the flags' defaults (see `defaults!`). What every run parses its
/// flags with; a run takes the defaults of the flags it was not given from
/// [`Cli::with_defaults`].
///
/// A flag's value may begin with a dash: `-n -1` is a bad number of attempts, said as such,
/// not an unknown flag `-1`; and `--retry-if-output '-ERR'` works. Each flag that takes a
/// value says so itself (`allow_hyphen_values`, a unit test sees that none is missing): set
/// here for all with `Command::mut_args`, it made clap copy its 80 flags into a new list at
/// every start, 14 of a run's 208 page faults.
pub fn parsing_command() -> clap::Command {
    Cli::command()
}

/// Each default the help shows, defined once: the flag's group and field, its type, its value
/// (most are constants of `policy::defaults`, which the simulator shares) and how the help
/// writes it. This makes [`shown_defaults`], which `--help`, the man page and the completions
/// show, and [`WithDefaults`] ([`Cli::with_defaults`]), each flag's value or else its default,
/// which the policy is built from. The command line a run parses holds no defaults: given
/// some, clap would parse each one's text into a value at every start, the largest part of
/// what a run of `retry -- true` did (a third of its instructions).
macro_rules! defaults {
    ($($group:ident . $field:ident : $ty:ty = $value:expr, shown $shown:expr;)*) => {
        /// The flags that have a default, each as given or else its default.
        #[derive(Clone, Debug)]
        pub struct WithDefaults {
            $(
                #[doc = concat!("`--", stringify!($field), "`.")]
                pub $field: $ty,
            )*
        }

        impl Cli {
            /// The flags that have a default, each as given or else its default.
            pub fn with_defaults(&self) -> WithDefaults {
                WithDefaults {
                    $($field: self.$group.$field.as_ref().cloned().unwrap_or_else(|| $value),)*
                }
            }
        }

        /// The flags' defaults as `--help` and the man page show them.
        pub fn shown_defaults() -> Vec<(&'static str, String)> {
            vec![$((stringify!($field), $shown($value))),*]
        }
    };
}

defaults! {
    wait.delay: Duration = defaults::DELAY, shown duration::human;
    wait.backoff: BackoffKind = BackoffKind::default(), shown named;
    wait.factor: f64 = defaults::FACTOR, shown text;
    wait.jitter: crate::policy::backoff::Jitter = defaults::JITTER, shown text;
    wait.splay: Duration = defaults::SPLAY, shown |d: Duration| {
        if d.is_zero() { "0".to_string() } else { duration::human(d) }
    };
    results.match_stream: crate::policy::output_rules::MatchStream = defaults::MATCH_STREAM,
        shown named;
    http.retry_on_http: CodeSet = CodeSet::of(&defaults::RETRY_ON_HTTP), shown |_| {
        defaults::RETRY_ON_HTTP.map(|code| code.to_string()).join(",")
    };
    http.retry_after_max: Duration = defaults::RETRY_AFTER_MAX, shown duration::human;
    child.kill_signal: i32 = defaults::KILL_SIGNAL, shown |sig| {
        crate::policy::status::signal_name(sig).trim_start_matches("SIG").to_string()
    };
    child.kill_after: Duration = defaults::KILL_AFTER, shown duration::human;
    child.stdin: crate::policy::StdinMode = defaults::STDIN, shown named;
    child.stdout: crate::policy::StdoutMode = defaults::STDOUT, shown named;
    logging.log_format: crate::policy::LogFormat = defaults::LOG_FORMAT, shown named;
    logging.color: crate::policy::ColorChoice = defaults::COLOR, shown named;
    reports.hook_timeout: Duration = defaults::HOOK_TIMEOUT, shown duration::human;
    shared.breaker_failures: u32 = defaults::BREAKER_FAILURES, shown text;
    shared.breaker_window: Duration = defaults::BREAKER_WINDOW, shown duration::human;
    shared.breaker_open: Duration = defaults::BREAKER_OPEN, shown duration::human;
    shared.breaker_open_max: Duration = defaults::BREAKER_OPEN_MAX, shown duration::human;
    shared.budget_burst: u32 = defaults::BUDGET_BURST, shown text;
    shared.budget_ratio: f64 = defaults::BUDGET_RATIO, shown text;
    shared.budget_refill: Duration = defaults::BUDGET_REFILL, shown duration::human;
    shared.state_timeout: Duration = defaults::STATE_TIMEOUT, shown duration::human;
    shared.state_fail: crate::policy::key::FailMode = defaults::STATE_FAIL, shown named;
    simulated.outage: Duration = defaults::OUTAGE, shown duration::human;
    simulated.every: Duration = defaults::EVERY, shown duration::human;
    simulated.call_time: Duration = defaults::CALL_TIME, shown duration::human;
    simulated.store_rate: u32 = defaults::STORE_RATE, shown text;
}

/// A value as the help writes it.
fn text(value: impl std::fmt::Display) -> String {
    value.to_string()
}

/// A value of a list of names as the help writes it: its name.
fn named(value: impl ValueEnum) -> String {
    value
        .to_possible_value()
        .map_or_else(String::new, |v| v.get_name().to_string())
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
        assert!(given.wait.delay.is_some() && none.wait.delay.is_none());
        let fleets = [&given, &none].map(|cli| super::super::fleet(cli, 10).expect("a fleet"));
        assert_eq!(fleets[0], fleets[1]);
        let [given, none] = [given, none].map(|cli| {
            let mut policy = crate::policy::Policy::try_from(cli).expect("a policy");
            // Whether a list was given is not a value: the warning it brings is the test's
            // of the HTTP lists (tests/it/presets.rs).
            policy.http.given = false;
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
