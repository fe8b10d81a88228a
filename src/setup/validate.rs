//! Builds the [`Policy`] from the parsed command line: checks how the flags relate to each
//! other, and fills in what follows from them (a preset's lists, the job's name).

use std::path::PathBuf;
use std::time::Duration;

use super::cli::{self, BackoffKind, Cli, WithDefaults};
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
/// Each help heading's flags become their part of the policy in a function of its own
/// (`setup/cli/` has a struct for each heading); the checks run in a fixed order, so that of
/// several mistakes the same one is told first.
pub(super) fn build(cli: Cli) -> Result<(Policy, Option<KeySettings>), UsageError> {
    // The flags that have a default, as given or else their default: the command line a run
    // parses holds none (cli::parsing_command).
    let set = cli.with_defaults();
    if let Some(message) = minfrin::times_with_a_bare_delay(
        cli.stop.times,
        cli.wait.delay,
        cli.wait.backoff.is_some() || cli.wait.jitter.is_some() || cli.wait.delays.is_some(),
    ) {
        return Err(UsageError(message));
    }
    let wait = wait(&cli.wait, &set, cli.shared.key.is_some())?;
    let stop = stop(&cli.stop);
    // The splay counts within --max-time, as every wait does, so it must leave the command
    // time to run. A longer one is refused rather than cut: cut at the deadline, it would
    // start an attempt with no time left (or none at all), every run, and cut shorter, it
    // would no longer spread the runs over what was asked; the user chooses which to change.
    if let Some(max) = stop.max_time.filter(|max| wait.splay >= *max) {
        return Err(UsageError(format!(
            "--splay {} is not shorter than --max-time {}: the wait before the first attempt \
             counts within --max-time and would leave the command no time; give a shorter \
             --splay or a longer --max-time",
            human(wait.splay),
            human(max)
        )));
    }
    // `--attempt-timeout 0` is no timeout: the probe's lease is then the default, never 0 ms,
    // which would let every run probe.
    let lease = stop.attempt_timeout.unwrap_or(defaults::LEASE);
    let keyed = shared(cli.shared, &set, lease, wait.adaptive.is_some())?;
    let stop_with_parent =
        stop_with_parent(cli.child.stop_with_parent, cli.child.no_stop_with_parent)?;
    let results = results(cli.results, &set)?;
    let hints = hints(cli.http.hints, &cli.command);
    let nesting = nesting();
    let log = log(&cli.logging, &set, nesting.level);
    let policy = Policy {
        name: name(cli.reports.name.as_deref(), &cli.command),
        command: cli.command,
        attempts: stop.attempts,
        reset_after: stop.reset_after,
        max_time: stop.max_time,
        attempt_timeout: stop.attempt_timeout,
        backoff: wait.backoff,
        splay: wait.splay,
        seed: wait.seed,
        adaptive: wait.adaptive,
        rules: results.rules,
        output_rules: results.output_rules,
        preset: results.preset,
        kill_signal: set.kill_signal,
        kill_after: set.kill_after,
        stdin: set.stdin,
        stdout: set.stdout,
        output_on_failure: cli.child.output_on_failure,
        stop_with_parent,
        http: HttpRules {
            retry: set.retry_on_http,
            given: cli.http.retry_on_http.is_some() || cli.http.fatal_on_http.is_some(),
            fatal: cli.http.fatal_on_http,
        },
        retry_after_max: set.retry_after_max,
        hints,
        hooks: Hooks {
            on_retry: cli.reports.on_retry,
            on_giveup: cli.reports.on_giveup,
            timeout: limit(Some(set.hook_timeout)),
        },
        named: cli.reports.name.is_some(),
        summary: cli.reports.summary,
        metrics: cli.reports.metrics,
        log,
        state: keyed.state,
        unkeyed_store: keyed.unkeyed_store,
        nesting,
    };
    Ok((policy, keyed.list_keys))
}

/// 0 is no limit, as timeout(1) reads it.
fn limit(d: Option<Duration>) -> Option<Duration> {
    d.filter(|d| !d.is_zero())
}

/// The policy's part from the flags under "Stop": when the run ends.
struct Stopping {
    attempts: Option<u32>,
    reset_after: Option<Duration>,
    max_time: Option<Duration>,
    attempt_timeout: Option<Duration>,
}

fn stop(stop: &cli::Stop) -> Stopping {
    let attempts = match (stop.forever, stop.attempts.or(stop.times), stop.retries) {
        (true, _, _) => None,
        (false, Some(n), _) => Some(n),
        // The parser keeps --retries below u32::MAX.
        (false, None, Some(r)) => Some(r.saturating_add(1)),
        (false, None, None) => Some(defaults::ATTEMPTS),
    };
    Stopping {
        attempts,
        reset_after: stop.reset_after,
        max_time: limit(stop.max_time),
        attempt_timeout: limit(stop.attempt_timeout),
    }
}

/// The policy's part from the flags under "Wait": the delays between attempts.
struct Waiting {
    backoff: Backoff,
    adaptive: Option<adaptive::Params>,
    splay: Duration,
    seed: Option<u64>,
}

fn wait(wait: &cli::Wait, set: &WithDefaults, keyed: bool) -> Result<Waiting, UsageError> {
    let (delay, jitter) = (set.delay, set.jitter);
    // The cap is applied, never refused: a default cap rises to the longest delay the user
    // asked for, and an explicit one caps it (--explain warns).
    let asked = wait
        .delays
        .iter()
        .flatten()
        .chain([&delay])
        .max()
        .copied()
        .unwrap_or(delay);
    let max_delay = wait.max_delay.unwrap_or(defaults::MAX_DELAY.max(asked));
    let adaptive = match set.backoff {
        BackoffKind::Adaptive if !keyed => {
            return Err(UsageError(
                "--backoff adaptive needs --key: the delay is learned from the recent \
                 outcomes of the runs that share the key"
                    .into(),
            ));
        }
        BackoffKind::Adaptive if jitter == Jitter::Decorrelated => {
            return Err(UsageError(
                "flags that exclude each other: --jitter decorrelated and --backoff \
                 adaptive; decorrelated jitter makes its own schedule, so choose another \
                 jitter"
                    .into(),
            ));
        }
        BackoffKind::Adaptive => Some(adaptive::RULE),
        _ => None,
    };
    let shape = match &wait.delays {
        Some(_) if jitter == Jitter::Decorrelated => {
            return Err(UsageError(
                "flags that exclude each other: --jitter decorrelated and --delays; \
                 decorrelated jitter makes its own schedule, so choose another jitter"
                    .into(),
            ));
        }
        Some(list) => Shape::List(list.clone()),
        None => match set.backoff {
            // The adaptive delay is blended with, and falls back on, the exponential one.
            BackoffKind::Exponential | BackoffKind::Adaptive => {
                Shape::Exponential { factor: set.factor }
            }
            BackoffKind::Linear => Shape::Linear,
            BackoffKind::Constant => Shape::Constant,
            BackoffKind::Fibonacci => Shape::Fibonacci,
        },
    };
    Ok(Waiting {
        backoff: Backoff {
            shape,
            delay,
            max_delay,
            jitter,
        },
        adaptive,
        splay: set.splay,
        seed: wait.seed,
    })
}

/// The policy's part from the flags under "Results": what counts as success, retryable or
/// fatal, a preset's lists joined to the user's.
struct Judging {
    rules: Rules,
    output_rules: output_rules::Rules,
    preset: Option<&'static str>,
}

fn results(results: cli::Results, set: &WithDefaults) -> Result<Judging, UsageError> {
    let preset = results.preset;
    let rules = match preset {
        Some(preset) => {
            let fatal = match &results.retry_on {
                Some(retried) => preset.fatal_on_except(retried),
                None => preset.fatal_on(),
            };
            Rules::new(
                results.success_on,
                results.retry_on.or_else(|| Some(preset.retry_on())),
                Some(results.fatal_on.map_or(fatal.clone(), |f| f.union(&fatal))),
            )
        }
        None => Rules::new(results.success_on, results.retry_on, results.fatal_on),
    };
    let own = (results.retry_if_output.len(), results.fatal_if_output.len());
    let output_rules = output_rules::Rules {
        retry: with_preset(results.retry_if_output, preset.map(|p| p.retry_if_output))?,
        fatal: with_preset(results.fatal_if_output, preset.map(|p| p.fatal_if_output))?,
        own,
        stream: set.match_stream,
    };
    Ok(Judging {
        rules,
        output_rules,
        preset: preset.map(|p| p.name),
    })
}

/// `--hints`, or a `{hints}` in the arguments, which asks for a hint file as plainly: passed
/// on as it is, it would make curl write a file named `{hints}`.
fn hints(flag: bool, command: &[std::ffi::OsString]) -> bool {
    flag || command.iter().skip(1).any(|a| {
        a.as_encoded_bytes()
            .windows(env::HINTS.len())
            .any(|w| w == env::HINTS.as_bytes())
    })
}

/// The flags under "Logging", at this depth of retries within retries.
fn log(logging: &cli::Logging, set: &WithDefaults, depth: u32) -> LogSettings {
    let level = 1i16 + i16::from(logging.verbose) - i16::from(logging.quiet);
    LogSettings {
        level: level.clamp(-1, 2) as i8,
        depth,
        format: set.log_format,
        time: logging.log_time || level >= 2 || logging.log_file.is_some(),
        file: logging.log_file.clone(),
        color: set.color,
    }
}

/// The job's name (`--name`, under "Reports"), else the command's file name.
fn name(flag: Option<&str>, command: &[std::ffi::OsString]) -> String {
    match (flag, command.first()) {
        (Some(name), _) => name.to_string(),
        (None, Some(c)) => std::path::Path::new(c)
            .file_name()
            .unwrap_or(c)
            .to_string_lossy()
            .into_owned(),
        (None, None) => "retry".into(),
    }
}

/// The policy's part from the flags under "Shared state": the key, where it is kept, and
/// with `--list-keys` the place whose keys are listed.
struct Keyed {
    state: Option<KeySettings>,
    list_keys: Option<KeySettings>,
    unkeyed_store: bool,
}

fn shared(
    shared: cli::Shared,
    set: &WithDefaults,
    lease: Duration,
    history: bool,
) -> Result<Keyed, UsageError> {
    let unkeyed_store = shared.state_url.is_some() && shared.key.is_none() && !shared.list_keys;
    let store = store_url(
        shared.state_url.as_deref(),
        shared.key.is_some() || shared.list_keys,
    )?
    .map(|url| Remote {
        url,
        timeout: set.state_timeout,
        fail: set.state_fail,
    });
    let rules = KeyRules {
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
        lease,
        history,
    };
    let dir = shared.state_dir.or_else(state_dir);
    let list_keys = shared.list_keys.then(|| KeySettings {
        key: String::new(),
        store: store.clone(),
        dir: dir.clone(),
        rules: rules.clone(),
    });
    let state = shared.key.map(|key| KeySettings {
        key,
        store,
        dir,
        rules,
    });
    Ok(Keyed {
        state,
        list_keys,
        unkeyed_store,
    })
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
