//! The validated policy of one run, built from the command line: plain data, no I/O.

use std::ffi::OsString;
use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

use crate::backoff::{Backoff, Jitter, Shape};
use crate::cli::{BackoffKind, Cli, LogFormat};
use crate::codes::CodeSet;
use crate::outcome::Rules;
use crate::output::StdoutMode;
use crate::stdin::StdinMode;
use crate::watch;

/// Everything that decides how a run goes.
#[derive(Clone, Debug)]
pub struct Policy {
    /// The command and its arguments; empty only for `--explain`.
    pub command: Vec<OsString>,
    /// Total attempts; `None` for no limit (`--forever`).
    pub attempts: Option<u32>,
    /// Deadline for the whole run.
    pub max_time: Option<Duration>,
    /// Limit for one attempt.
    pub attempt_timeout: Option<Duration>,
    /// The delay before each retry.
    pub backoff: Backoff,
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
    /// Rules on the command's output.
    pub output_rules: watch::Rules,
    /// How HTTP statuses from a header dump are judged.
    pub http: HttpRules,
    /// Longest wait a Retry-After can ask for.
    pub retry_after_max: Duration,
    /// Give each attempt a hint file, and replace `{hints}` in the arguments with it.
    pub hints: bool,
    /// Hooks run before each wait and when retry gives up.
    pub hooks: Hooks,
    /// Where to write the JSON summary.
    pub summary: Option<PathBuf>,
    /// Where to write the Prometheus metrics.
    pub metrics: Option<PathBuf>,
    /// The job's name in the summary and metrics.
    pub name: String,
    /// Where and how much to log.
    pub log: LogSettings,
}

/// Shell commands run at points of the run.
#[derive(Clone, Debug, Default)]
pub struct Hooks {
    pub on_retry: Option<String>,
    pub on_giveup: Option<String>,
    pub timeout: Duration,
}

/// Which HTTP statuses are retried and which are fatal.
#[derive(Clone, Debug)]
pub struct HttpRules {
    pub retry: CodeSet,
    /// The user's fatal list; without one, every 4xx not in `retry` is fatal.
    pub fatal: Option<CodeSet>,
}

/// What an HTTP status says of an attempt, when it says anything.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HttpVerdict {
    Retry,
    Fatal,
}

impl HttpRules {
    /// Fatal list → retry list → other 4xx fatal; anything else leaves it to the exit status.
    pub fn classify(&self, code: u16) -> Option<HttpVerdict> {
        let code = i32::from(code);
        if self.fatal.as_ref().is_some_and(|f| f.contains(code)) {
            Some(HttpVerdict::Fatal)
        } else if self.retry.contains(code) {
            Some(HttpVerdict::Retry)
        } else if self.fatal.is_none() && (400..500).contains(&code) {
            Some(HttpVerdict::Fatal)
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
    pub format: LogFormat,
    pub file: Option<PathBuf>,
}

/// A combination of flags that cannot work together; reported as a usage error (125).
#[derive(Debug, PartialEq, Eq)]
pub struct UsageError(pub String);

impl fmt::Display for UsageError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl TryFrom<Cli> for Policy {
    type Error = UsageError;

    fn try_from(cli: Cli) -> Result<Self, Self::Error> {
        let usage = |msg: String| Err(UsageError(msg));
        let hd = |d: Duration| humantime::format_duration(d).to_string();

        if !cli.factor.is_finite() || cli.factor < 1.0 {
            return usage(format!(
                "--factor {} must be a number of at least 1",
                cli.factor
            ));
        }
        if cli.delay > cli.max_delay {
            return usage(format!(
                "--delay {} is longer than --max-delay {}; raise --max-delay or lower --delay",
                hd(cli.delay),
                hd(cli.max_delay)
            ));
        }
        for (flag, value) in [
            ("--max-time", cli.max_time),
            ("--attempt-timeout", cli.attempt_timeout),
        ] {
            if value == Some(Duration::ZERO) {
                return usage(format!("{flag} 0 leaves no time to run anything"));
            }
        }
        let shape = match cli.delays {
            Some(list) => {
                if let Some(long) = list.iter().find(|d| **d > cli.max_delay) {
                    return usage(format!(
                        "--delays value {} is longer than --max-delay {}",
                        hd(*long),
                        hd(cli.max_delay)
                    ));
                }
                if cli.jitter == Jitter::Decorrelated {
                    return usage(
                        "--jitter decorrelated makes its own schedule and cannot follow --delays"
                            .into(),
                    );
                }
                Shape::List(list)
            }
            None => match cli.backoff {
                BackoffKind::Exponential => Shape::Exponential { factor: cli.factor },
                BackoffKind::Linear => Shape::Linear,
                BackoffKind::Constant => Shape::Constant,
                BackoffKind::Fibonacci => Shape::Fibonacci,
            },
        };
        let attempts = match (cli.forever, cli.attempts, cli.retries) {
            (true, _, _) => None,
            (false, Some(n), _) => Some(n),
            (false, None, Some(r)) => match r.checked_add(1) {
                Some(n) => Some(n),
                None => return usage(format!("--retries {r} is too many; use --forever")),
            },
            (false, None, None) => Some(5),
        };
        let level = 1i16 + i16::from(cli.verbose) - i16::from(cli.quiet);
        Ok(Policy {
            command: cli.command.clone(),
            attempts,
            max_time: cli.max_time,
            attempt_timeout: cli.attempt_timeout,
            backoff: Backoff {
                shape,
                delay: cli.delay,
                max_delay: cli.max_delay,
                jitter: cli.jitter,
            },
            seed: cli.seed,
            rules: match cli.preset {
                Some(preset) => {
                    let fatal = match &cli.retry_on {
                        Some(retried) => preset.fatal_on_except(retried),
                        None => preset.fatal_on(),
                    };
                    Rules::new(
                        cli.success_on,
                        cli.retry_on.or_else(|| Some(preset.retry_on())),
                        Some(cli.fatal_on.map_or(fatal.clone(), |f| f.union(&fatal))),
                    )
                }
                None => Rules::new(cli.success_on, cli.retry_on, cli.fatal_on),
            },
            kill_signal: cli.kill_signal,
            kill_after: cli.kill_after,
            stdin: cli.stdin,
            stdout: cli.stdout,
            output_rules: watch::Rules {
                retry: with_preset(cli.retry_if_output, cli.preset.map(|p| p.retry_if_output))?,
                fatal: with_preset(cli.fatal_if_output, cli.preset.map(|p| p.fatal_if_output))?,
                stream: cli.match_stream,
            },
            http: HttpRules {
                retry: cli.retry_on_http,
                fatal: cli.fatal_on_http,
            },
            retry_after_max: cli.retry_after_max,
            hints: cli.hints,
            hooks: Hooks {
                on_retry: cli.on_retry,
                on_giveup: cli.on_giveup,
                timeout: cli.hook_timeout,
            },
            summary: cli.summary,
            metrics: cli.metrics,
            name: cli.name.unwrap_or_else(|| {
                cli.command
                    .first()
                    .map(|c| {
                        std::path::Path::new(c)
                            .file_name()
                            .unwrap_or(c)
                            .to_string_lossy()
                            .into_owned()
                    })
                    .unwrap_or_else(|| "retry".into())
            }),
            log: LogSettings {
                level: level.clamp(-1, 2) as i8,
                format: cli.log_format,
                file: cli.log_file,
            },
        })
    }
}

/// The user's output rules and a preset's, together.
fn with_preset(
    mut rules: Vec<regex::bytes::Regex>,
    preset: Option<&[&str]>,
) -> Result<Vec<regex::bytes::Regex>, UsageError> {
    for pattern in preset.unwrap_or_default() {
        let re = regex::bytes::Regex::new(pattern)
            .map_err(|e| UsageError(format!("preset pattern '{pattern}': {e}")))?;
        rules.push(re);
    }
    Ok(rules)
}

impl fmt::Display for Policy {
    /// One line: the policy as the -v log shows it.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let human = crate::log::human;
        let opt = |d: Option<Duration>| d.map_or("none".to_string(), human);
        let b = &self.backoff;
        match self.attempts {
            Some(n) => write!(f, "attempts={n}")?,
            None => f.write_str("attempts=unlimited")?,
        }
        write!(
            f,
            " backoff={} delay={} max-delay={} jitter={} max-time={} attempt-timeout={} success-on={} retry-on={} fatal-on={}",
            b.shape,
            human(b.delay),
            human(b.max_delay),
            b.jitter,
            opt(self.max_time),
            opt(self.attempt_timeout),
            self.rules.success,
            self.rules
                .retry_on
                .as_ref()
                .map_or("any".to_string(), ToString::to_string),
            crate::explain::fatal_list(self),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    fn policy(args: &[&str]) -> Result<Policy, UsageError> {
        let cli = Cli::try_parse_from(["retry"].iter().chain(args).chain(&["--", "true"]))
            .expect("flags parse");
        Policy::try_from(cli)
    }

    #[test]
    fn defaults_follow_the_spec() {
        let p = policy(&[]).expect("valid");
        assert_eq!(p.attempts, Some(5));
        assert_eq!(p.backoff.delay, Duration::from_secs(1));
        assert_eq!(p.backoff.max_delay, Duration::from_secs(60));
        assert_eq!(p.backoff.shape, Shape::Exponential { factor: 2.0 });
        assert_eq!(p.backoff.jitter, Jitter::Full);
        assert_eq!(p.kill_after, Duration::from_secs(10));
        assert_eq!(p.log.level, 1);
    }

    #[test]
    fn retries_means_one_more_attempt_and_forever_none() {
        assert_eq!(
            policy(&["--retries", "3"]).expect("valid").attempts,
            Some(4)
        );
        assert_eq!(policy(&["--forever"]).expect("valid").attempts, None);
    }

    #[test]
    fn relations_between_flags_are_checked() {
        let cases: [(&[&str], &str); 5] = [
            (&["--delay", "2m"], "--delay 2m"),
            (&["--factor", "0.5"], "--factor 0.5"),
            (&["--delays", "1s,2h"], "2h"),
            (
                &["--delays", "1s", "--jitter", "decorrelated"],
                "decorrelated",
            ),
            (&["--max-time", "0"], "--max-time 0"),
        ];
        for (args, word) in cases {
            let err = policy(args).expect_err(word);
            assert!(err.0.contains(word), "{args:?}: {err}");
        }
    }

    #[test]
    fn verbosity_counts_up_and_down() {
        assert_eq!(policy(&["-v"]).expect("valid").log.level, 2);
        assert_eq!(policy(&["-q"]).expect("valid").log.level, 0);
        assert_eq!(policy(&["-qq"]).expect("valid").log.level, -1);
    }
}
