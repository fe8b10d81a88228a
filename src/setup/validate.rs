//! Builds the [`Policy`] from the parsed command line: checks how the flags relate to each
//! other, and fills in what follows from them (a preset's lists, the job's name).

use std::path::PathBuf;
use std::time::Duration;

use super::cli::{BackoffKind, Cli};
use super::minfrin;
use crate::env;
use crate::policy::backoff::{Backoff, Jitter, Shape};
use crate::policy::breaker::BreakerSettings;
use crate::policy::budget::BudgetSettings;
use crate::policy::duration::human;
use crate::policy::key::{Remote, Secret, StoreUrl};
use crate::policy::rules::Rules;
use crate::policy::shared::KeyRules;
use crate::policy::{
    Hooks, HttpRules, KeySettings, LogSettings, Nesting, Policy, UsageError, output_rules,
};
use crate::policy::{adaptive, defaults};

impl TryFrom<Cli> for Policy {
    type Error = UsageError;

    fn try_from(cli: Cli) -> Result<Self, Self::Error> {
        build(cli).map(|(policy, _)| policy)
    }
}

/// The policy of the command line, and with `--list-keys` the place whose keys it lists.
pub(super) fn build(cli: Cli) -> Result<(Policy, Option<KeySettings>), UsageError> {
    let usage = |msg: String| Err(UsageError(msg));
    // The flags that have a default, as given or else their default: the command line a run
    // parses holds none (cli::parsing_command).
    let set = cli.with_defaults();
    let delay = set.delay;
    let backoff = set.backoff;
    let jitter = set.jitter;

    if let Some(message) = minfrin::times_with_a_bare_delay(
        cli.stop.times,
        cli.wait.delay,
        cli.wait.backoff.is_some() || cli.wait.jitter.is_some() || cli.wait.delays.is_some(),
    ) {
        return usage(message);
    }

    // The cap is applied, never refused: a default cap rises to the longest delay
    // the user asked for, and an explicit one caps it (--explain warns).
    let asked = cli
        .wait
        .delays
        .iter()
        .flatten()
        .chain([&delay])
        .max()
        .copied()
        .unwrap_or(delay);
    let max_delay = cli.wait.max_delay.unwrap_or(defaults::MAX_DELAY.max(asked));
    // 0 is no limit, as timeout(1) reads it.
    let limit = |d: Option<Duration>| d.filter(|d| !d.is_zero());
    let adaptive = match backoff {
        BackoffKind::Adaptive if cli.shared.key.is_none() => {
            return usage(
                "--backoff adaptive needs --key: the delay is learned from the recent \
                 outcomes of the runs that share the key"
                    .into(),
            );
        }
        BackoffKind::Adaptive if jitter == Jitter::Decorrelated => {
            return usage(
                "flags that exclude each other: --jitter decorrelated and --backoff \
                 adaptive; decorrelated jitter makes its own schedule, so choose another \
                 jitter"
                    .into(),
            );
        }
        BackoffKind::Adaptive => Some(adaptive::RULE),
        _ => None,
    };
    let shape = match cli.wait.delays {
        Some(list) => {
            if jitter == Jitter::Decorrelated {
                return usage(
                    "flags that exclude each other: --jitter decorrelated and --delays; \
                     decorrelated jitter makes its own schedule, so choose another jitter"
                        .into(),
                );
            }
            Shape::List(list)
        }
        None => match backoff {
            // The adaptive delay is blended with, and falls back on, the exponential one.
            BackoffKind::Exponential | BackoffKind::Adaptive => {
                Shape::Exponential { factor: set.factor }
            }
            BackoffKind::Linear => Shape::Linear,
            BackoffKind::Constant => Shape::Constant,
            BackoffKind::Fibonacci => Shape::Fibonacci,
        },
    };
    let attempts = match (
        cli.stop.forever,
        cli.stop.attempts.or(cli.stop.times),
        cli.stop.retries,
    ) {
        (true, _, _) => None,
        (false, Some(n), _) => Some(n),
        // The parser keeps --retries below u32::MAX.
        (false, None, Some(r)) => Some(r.saturating_add(1)),
        (false, None, None) => Some(defaults::ATTEMPTS),
    };
    let splay = set.splay;
    let max_time = limit(cli.stop.max_time);
    // The splay counts within --max-time, as every wait does, so it must leave the command
    // time to run. A longer one is refused rather than cut: cut at the deadline, it would
    // start an attempt with no time left (or none at all), every run, and cut shorter, it
    // would no longer spread the runs over what was asked; the user chooses which to change.
    if let Some(max) = max_time.filter(|max| splay >= *max) {
        return usage(format!(
            "--splay {} is not shorter than --max-time {}: the wait before the first attempt \
             counts within --max-time and would leave the command no time; give a shorter \
             --splay or a longer --max-time",
            human(splay),
            human(max)
        ));
    }
    let level = 1i16 + i16::from(cli.logging.verbose) - i16::from(cli.logging.quiet);
    let unkeyed_store =
        cli.shared.state_url.is_some() && cli.shared.key.is_none() && !cli.shared.list_keys;
    let store = match store_url(
        cli.shared.state_url.as_deref(),
        cli.shared.key.is_some() || cli.shared.list_keys,
    )? {
        Some(url) => Some(Remote {
            url,
            timeout: set.state_timeout,
            fail: set.state_fail,
        }),
        None => None,
    };
    let shared = KeyRules {
        breaker: BreakerSettings {
            failures: set.breaker_failures,
            window: set.breaker_window,
            open: set.breaker_open,
            open_max: set.breaker_open_max,
        },
        budget: BudgetSettings {
            burst: set.budget_burst,
            ratio: set.budget_ratio,
            refill: set.budget_refill,
        },
        // `--attempt-timeout 0` is no timeout: the probe's lease is then the default,
        // never 0 ms, which would let every run probe.
        lease: limit(cli.stop.attempt_timeout).unwrap_or(defaults::LEASE),
        history: adaptive.is_some(),
    };
    let dir = cli.shared.state_dir.or_else(state_dir);
    let list_keys = cli.shared.list_keys.then(|| KeySettings {
        key: String::new(),
        store: store.clone(),
        dir: dir.clone(),
        rules: shared.clone(),
    });
    let state = cli.shared.key.map(|key| KeySettings {
        key,
        store,
        dir,
        rules: shared,
    });
    let nesting = nesting();
    let policy = Policy {
        command: cli.command.clone(),
        attempts,
        reset_after: cli.stop.reset_after,
        max_time,
        attempt_timeout: limit(cli.stop.attempt_timeout),
        backoff: Backoff {
            shape,
            delay,
            max_delay,
            jitter,
        },
        splay,
        seed: cli.wait.seed,
        rules: match cli.results.preset {
            Some(preset) => {
                let fatal = match &cli.results.retry_on {
                    Some(retried) => preset.fatal_on_except(retried),
                    None => preset.fatal_on(),
                };
                Rules::new(
                    cli.results.success_on,
                    cli.results.retry_on.or_else(|| Some(preset.retry_on())),
                    Some(
                        cli.results
                            .fatal_on
                            .map_or(fatal.clone(), |f| f.union(&fatal)),
                    ),
                )
            }
            None => Rules::new(
                cli.results.success_on,
                cli.results.retry_on,
                cli.results.fatal_on,
            ),
        },
        kill_signal: set.kill_signal,
        kill_after: set.kill_after,
        stdin: set.stdin,
        stdout: set.stdout,
        output_on_failure: cli.child.output_on_failure,
        stop_with_parent: stop_with_parent(
            cli.child.stop_with_parent,
            cli.child.no_stop_with_parent,
        )?,
        output_rules: output_rules::Rules {
            retry: with_preset(
                cli.results.retry_if_output,
                cli.results.preset.map(|p| p.retry_if_output),
            )?,
            fatal: with_preset(
                cli.results.fatal_if_output,
                cli.results.preset.map(|p| p.fatal_if_output),
            )?,
            stream: set.match_stream,
        },
        http: HttpRules {
            retry: set.retry_on_http,
            given: cli.http.retry_on_http.is_some() || cli.http.fatal_on_http.is_some(),
            fatal: cli.http.fatal_on_http,
        },
        retry_after_max: set.retry_after_max,
        // A `{hints}` in the arguments asks for a hint file as plainly as --hints does;
        // passed on as it is, it would make curl write a file named `{hints}`.
        hints: cli.http.hints
            || cli.command.iter().skip(1).any(|a| {
                a.as_encoded_bytes()
                    .windows(env::HINTS.len())
                    .any(|w| w == env::HINTS.as_bytes())
            }),
        preset: cli.results.preset.map(|p| p.name),
        hooks: Hooks {
            on_retry: cli.reports.on_retry,
            on_giveup: cli.reports.on_giveup,
            timeout: set.hook_timeout,
        },
        named: cli.reports.name.is_some(),
        summary: cli.reports.summary,
        metrics: cli.reports.metrics,
        name: cli.reports.name.unwrap_or_else(|| {
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
            depth: nesting.level,
            format: set.log_format,
            time: cli.logging.log_time || level >= 2 || cli.logging.log_file.is_some(),
            file: cli.logging.log_file,
            color: set.color,
        },
        state,
        unkeyed_store,
        adaptive,
        nesting,
    };
    Ok((policy, list_keys))
}

/// The state directory when --state-dir is not given: $RETRY_STATE_DIR, else
/// $XDG_STATE_HOME/retry, else ~/.local/state/retry.
fn state_dir() -> Option<PathBuf> {
    let var = |name| {
        std::env::var_os(name)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    var(env::STATE_DIR)
        .or_else(|| {
            // The XDG spec says a relative path is invalid and to be ignored.
            var("XDG_STATE_HOME")
                .filter(|p| p.is_absolute())
                .map(|p| p.join("retry"))
        })
        .or_else(|| var("HOME").map(|home| home.join(".local/state/retry")))
}

/// The `--state` URL, else `$RETRY_STATE_URL` (read only with `--key`: a variable set for a
/// whole host must not break its runs without one), with the password from `$REDISCLI_AUTH`
/// when the URL has none. Checked even without `--key`, so that a typo is never silent.
fn store_url(flag: Option<&str>, keyed: bool) -> Result<Option<StoreUrl>, UsageError> {
    let (text, name) = match flag {
        Some(text) => (text.to_string(), "--state"),
        None if keyed => match super::env_text(
            env::STATE_URL,
            "set it in UTF-8 (percent-encode other bytes), or unset it",
        )? {
            Some(text) if !text.is_empty() => (text, "$RETRY_STATE_URL"),
            _ => return Ok(None),
        },
        None => return Ok(None),
    };
    let mut url = crate::state::url::parse(&text).map_err(|why| {
        UsageError(format!(
            "not a store URL for {name}: {}; {why}",
            crate::quote::clean(&crate::state::url::redact(&text))
        ))
    })?;
    if url.place.tls() && !cfg!(feature = "tls") {
        return Err(UsageError(format!(
            "a TLS store for {name}: {}; this retry was built without TLS \
             (--no-default-features): build it with the default features, or use redis://",
            url.redacted()
        )));
    }
    if url.password.is_none()
        && let Some(password) = redis_password()?.filter(|p| !p.is_empty())
    {
        url.password = Some(Secret::new(password));
    }
    Ok(Some(url))
}

/// `--stop-with-parent` or `--no-stop-with-parent`, whichever came last (the config file's
/// come before the command line's), else `$RETRY_STOP_WITH_PARENT`, as the other variables
/// retry reads stand below the flags: 1 is on, 0 (or empty) off. Another value is refused,
/// not read as either: a job that meant to turn it on must not run without it unawares.
fn stop_with_parent(on: bool, off: bool) -> Result<bool, UsageError> {
    if on || off {
        return Ok(on);
    }
    match std::env::var_os(env::STOP_WITH_PARENT) {
        None => Ok(false),
        Some(value) => match value.as_encoded_bytes() {
            b"1" => Ok(true),
            b"0" | b"" => Ok(false),
            _ => Err(UsageError(format!(
                "not 1 or 0: ${}={}; write 1 to stop with retry's parent, 0 not to",
                env::STOP_WITH_PARENT,
                crate::quote::shown(&value)
            ))),
        },
    }
}

/// `$REDISCLI_AUTH`, as redis-cli reads it. Not UTF-8, it is refused as any variable retry
/// reads as text is, but its value is never shown: it is a password.
fn redis_password() -> Result<Option<String>, UsageError> {
    match std::env::var_os("REDISCLI_AUTH") {
        None => Ok(None),
        Some(value) => value.into_string().map(Some).map_err(|_| {
            UsageError(
                "$REDISCLI_AUTH needs UTF-8 (its value is not shown: it is a password); set it \
                 in UTF-8, or unset it"
                    .into(),
            )
        }),
    }
}

/// Where this retry runs, from what a retry above it gave its attempt: `RETRY_DEPTH`,
/// `RETRY_MAX_ATTEMPTS` (empty when that retry has no limit) and `RETRY_ATTEMPT`.
fn nesting() -> Nesting {
    let inherited = std::env::var(env::DEPTH)
        .ok()
        .and_then(|d| d.parse::<u32>().ok())
        .unwrap_or(0);
    let outer_attempts = (inherited > 0)
        .then(|| std::env::var(env::MAX_ATTEMPTS).ok())
        .flatten()
        .and_then(|v| match v.as_str() {
            "" => Some(None),
            n => n.parse().ok().map(Some),
        });
    let outer_attempt = (inherited > 0)
        .then(|| std::env::var(env::ATTEMPT).ok())
        .flatten()
        .and_then(|n| n.parse().ok());
    Nesting {
        level: inherited.saturating_add(1),
        outer_attempts,
        outer_attempt,
    }
}

/// The user's output rules and a preset's, together.
fn with_preset(
    mut rules: Vec<regex::bytes::Regex>,
    preset: Option<&[&str]>,
) -> Result<Vec<regex::bytes::Regex>, UsageError> {
    for pattern in preset.unwrap_or_default() {
        let re = crate::policy::output_rules::compile(pattern).map_err(|e| {
            UsageError(format!(
                "a preset's pattern is not a regular expression: {pattern}; report it ({e})"
            ))
        })?;
        rules.push(re);
    }
    Ok(rules)
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
        let err = policy(&["--delays", "1s", "--jitter", "decorrelated"]).expect_err("conflict");
        assert!(err.0.contains("decorrelated"), "{err}");
    }

    #[test]
    fn the_cap_is_applied_never_refused() {
        let cap = |args: &[&str]| policy(args).expect("valid").backoff.max_delay;
        assert_eq!(cap(&["--delay", "2m"]), Duration::from_secs(120));
        assert_eq!(cap(&["--delays", "1s,2h"]), Duration::from_secs(7200));
        assert_eq!(cap(&["--delay", "2s"]), Duration::from_secs(60));
        assert_eq!(
            cap(&["--delay", "10s", "--max-delay", "5s"]),
            Duration::from_secs(5)
        );
    }

    #[test]
    fn zero_time_limits_mean_none() {
        let p = policy(&["--max-time", "0", "--attempt-timeout", "0"]).expect("valid");
        assert_eq!((p.max_time, p.attempt_timeout), (None, None));
    }

    #[test]
    fn a_probe_holds_its_lease_for_the_attempt_timeout_else_the_default_never_for_0ms() {
        let lease = |args: &[&str]| {
            let p = policy(&[&["--key", "k"], args].concat()).expect("valid");
            p.state.expect("--key").rules.lease
        };
        assert_eq!(lease(&["--attempt-timeout", "5s"]), Duration::from_secs(5));
        assert_eq!(lease(&[]), defaults::LEASE);
        assert_eq!(lease(&["--attempt-timeout", "0"]), defaults::LEASE);
    }

    #[test]
    fn a_splay_must_be_shorter_than_max_time_which_it_counts_within() {
        assert_eq!(policy(&[]).expect("valid").splay, Duration::ZERO);
        let p = policy(&["--splay", "30s", "--max-time", "31s"]).expect("valid");
        assert_eq!(
            (p.splay, p.max_time),
            (Duration::from_secs(30), Some(Duration::from_secs(31)))
        );
        for max in ["30s", "10s"] {
            let err = policy(&["--splay", "30s", "--max-time", max]).expect_err("refused");
            assert!(
                err.0
                    .contains(&format!("--splay 30s is not shorter than --max-time {max}")),
                "{err}"
            );
        }
        // --max-time 0 is no deadline: any splay fits.
        assert!(policy(&["--splay", "1h", "--max-time", "0"]).is_ok());
    }

    #[test]
    fn verbosity_counts_up_and_down() {
        assert_eq!(policy(&["-v"]).expect("valid").log.level, 2);
        assert_eq!(policy(&["-q"]).expect("valid").log.level, 0);
        assert_eq!(policy(&["-qq"]).expect("valid").log.level, -1);
    }
}
