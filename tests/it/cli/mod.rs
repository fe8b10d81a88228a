//! The command line against real processes: every flag of the policy (SPEC §1–3), every exit
//! status (§5), argv and environment given to the child (§4), the logs (§6) and `--explain` (§7).
//! Each test has its own temporary directory; delays are a few milliseconds at most, except
//! where the test is about a long delay not being slept.

use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStringExt;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::{Duration, Instant};

use assert_cmd::Command;
use predicates::prelude::*;
use serde_json::Value;
use tempfile::TempDir;

use crate::support;

/// Only turns a hang into a failure; no test comes near it.
const PATIENCE: Duration = Duration::from_secs(60);

/// [`support::retry`], the built binary in an environment free of any retry that runs the
/// test suite itself and of the user's own config file, as an assert_cmd command that is
/// killed after `PATIENCE`.
fn retry() -> Command {
    let mut cmd = support::cmd();
    cmd.timeout(PATIENCE);
    cmd
}

/// One finished run of retry.
struct Run {
    out: Output,
    took: Duration,
}

impl Run {
    fn code(&self) -> Option<i32> {
        self.out.status.code()
    }

    fn stdout(&self) -> String {
        String::from_utf8_lossy(&self.out.stdout).into_owned()
    }

    fn stderr(&self) -> String {
        String::from_utf8_lossy(&self.out.stderr).into_owned()
    }

    /// retry's own text log lines on stderr.
    fn log(&self) -> Vec<String> {
        self.stderr()
            .lines()
            .filter(|l| l.starts_with("retry:"))
            .map(str::to_owned)
            .collect()
    }

    /// stdout, one entry per line.
    fn lines(&self) -> Vec<String> {
        self.stdout().lines().map(str::to_owned).collect()
    }

    /// Every stderr line parsed as JSON (for runs with `--log-format json`).
    fn json(&self) -> Vec<Value> {
        json_lines(&self.stderr())
    }

    /// The delay_ms of every failure that was followed by a retry.
    fn delays(&self) -> Vec<u64> {
        self.json()
            .iter()
            .filter(|v| v["event"] == "failure")
            .filter_map(|v| v["delay_ms"].as_u64())
            .collect()
    }

    /// How many attempts failed, from the JSON log.
    fn failures(&self) -> usize {
        self.json()
            .iter()
            .filter(|v| v["event"] == "failure")
            .count()
    }

    /// Everything, for assertion messages.
    fn show(&self) -> String {
        format!(
            "status {:?}, took {:?}\n--- stdout\n{}--- stderr\n{}",
            self.out.status,
            self.took,
            self.stdout(),
            self.stderr()
        )
    }
}

fn json_lines(text: &str) -> Vec<Value> {
    text.lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not a JSON line ({e}): {l:?}")))
        .collect()
}

fn run_cmd(mut cmd: Command) -> Run {
    let start = Instant::now();
    let out = cmd.output().expect("run retry");
    Run {
        out,
        took: start.elapsed(),
    }
}

fn run<S: AsRef<OsStr>>(args: &[S]) -> Run {
    let mut cmd = retry();
    cmd.args(args);
    run_cmd(cmd)
}

/// `retry ARGS -- sh -c SCRIPT`.
fn run_sh(args: &[&str], script: &str) -> Run {
    let mut all: Vec<&str> = args.to_vec();
    all.extend(["--", "sh", "-c", script]);
    run(&all)
}

/// `retry ARGS --log-format json -- sh -c SCRIPT`.
fn run_json(args: &[&str], script: &str) -> Run {
    let mut all: Vec<&str> = args.to_vec();
    all.extend(["--log-format", "json"]);
    run_sh(&all, script)
}

fn explain(args: &[&str]) -> String {
    let mut all = vec!["--explain"];
    all.extend(args);
    let r = run(&all);
    assert_eq!(r.code(), Some(0), "{}", r.show());
    r.stdout()
}

/// The row of the policy `--explain` shows for a setting; empty when there is none.
fn row<'a>(text: &'a str, name: &str) -> &'a str {
    text.lines()
        .find(|l| l.trim_start().starts_with(&format!("{name} ")))
        .unwrap_or_default()
}

fn dur(s: &str) -> Duration {
    humantime::parse_duration(s).unwrap_or_else(|e| panic!("{s:?}: {e}"))
}

/// One row of the explained schedule: the retry, its min and max, and the exact delay.
#[derive(Debug)]
struct Row {
    min: Duration,
    max: Duration,
    exact: Option<Duration>,
}

/// The rows of the schedule table of `--explain` (all delays under a minute).
fn schedule(text: &str) -> Vec<Row> {
    let mut rows = Vec::new();
    let mut inside = false;
    for line in text.lines() {
        if line.starts_with("Schedule") {
            inside = true;
            continue;
        }
        if !inside {
            continue;
        }
        let words: Vec<&str> = line.split_whitespace().collect();
        let Some(k) = words.first().and_then(|w| w.parse::<usize>().ok()) else {
            if !rows.is_empty() {
                break;
            }
            continue;
        };
        assert_eq!(k, rows.len() + 1, "rows in order: {text}");
        rows.push(Row {
            min: dur(words[1]),
            max: dur(words[2]),
            exact: words.get(3).map(|w| dur(w)),
        });
    }
    assert!(!rows.is_empty(), "no schedule rows in:\n{text}");
    rows
}

/// The (min, max) of each row, in milliseconds.
fn bounds_ms(text: &str) -> Vec<(u128, u128)> {
    schedule(text)
        .iter()
        .map(|r| (r.min.as_millis(), r.max.as_millis()))
        .collect()
}

/// The lines of the Warnings section of `--explain`.
fn warnings(text: &str) -> Vec<String> {
    text.lines()
        .skip_while(|l| !l.starts_with("Warnings"))
        .skip(1)
        .take_while(|l| !l.trim().is_empty())
        .map(str::to_owned)
        .collect()
}

/// "at most X, expected about Y" from `--explain`.
fn totals(text: &str) -> (Duration, Duration) {
    let line = text
        .lines()
        .find(|l| l.contains("at most"))
        .unwrap_or_else(|| panic!("no totals in:\n{text}"));
    let rest = line.split("at most ").nth(1).expect("worst case");
    let (worst, expected) = rest
        .split_once(", expected about ")
        .expect("expected total");
    (dur(worst.trim()), dur(expected.trim()))
}

/// A command that would leave a mark in `dir` if it ran.
fn marker(dir: &TempDir) -> (PathBuf, Vec<String>) {
    let path = dir.path().join("ran");
    let cmd = vec!["touch".to_string(), path.display().to_string()];
    (path, cmd)
}

/// Runs retry with `args` and a command that would create a file; asserts a usage error that
/// names `needle`, with nothing run and nothing on stdout.
fn assert_usage_error(args: &[&str], needle: &str) {
    let dir = TempDir::new().expect("temp dir");
    let (mark, cmd) = marker(&dir);
    let mut all: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    all.push("--".into());
    all.extend(cmd);
    let r = run(&all);
    assert_eq!(r.code(), Some(125), "{args:?}: {}", r.show());
    assert!(
        r.stderr().contains(needle),
        "{args:?}: the message should name {needle:?}: {}",
        r.show()
    );
    assert!(r.out.stdout.is_empty(), "{args:?}: {}", r.show());
    assert!(!mark.exists(), "{args:?}: the command ran");
}

fn write_file(path: &Path, text: &str, mode: u32) {
    std::fs::write(path, text).expect("write file");
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).expect("chmod");
}

// ---------------------------------------------------------------------------------------------
// §1 When to stop

#[test]
fn attempts_and_its_short_alias_n_limit_the_runs_first_included() {
    for flag in ["--attempts", "-n"] {
        let r = run_sh(&[flag, "3", "-d", "0"], "echo run; exit 3");
        assert_eq!(r.lines(), ["run"; 3], "{flag}: {}", r.show());
        assert_eq!(r.code(), Some(3), "{flag}: {}", r.show());
    }
}

#[test]
fn one_attempt_means_no_retry() {
    let r = run_sh(&["-n", "1", "-d", "0"], "echo run; exit 1");
    assert_eq!(r.lines(), ["run"], "{}", r.show());
    assert_eq!(r.code(), Some(1));
}

#[test]
fn the_default_is_five_attempts() {
    let r = run_sh(&["-d", "0"], "echo run; exit 1");
    assert_eq!(r.lines(), ["run"; 5], "{}", r.show());
    assert_eq!(r.code(), Some(1));
}

#[test]
fn retries_n_means_n_plus_one_attempts() {
    let r = run_sh(&["--retries", "2", "-d", "0"], "echo run; exit 1");
    assert_eq!(r.lines(), ["run"; 3], "{}", r.show());
    let r = run_sh(&["--retries", "0", "-d", "0"], "echo run; exit 1");
    assert_eq!(r.lines(), ["run"], "{}", r.show());
}

#[test]
fn retries_tells_the_child_the_attempt_limit() {
    let r = run_sh(
        &["--retries", "2", "-d", "0"],
        r#"echo "$RETRY_MAX_ATTEMPTS""#,
    );
    assert_eq!(r.lines(), ["3"], "{}", r.show());
}

#[test]
fn forever_keeps_retrying_until_the_command_succeeds() {
    let dir = TempDir::new().expect("temp dir");
    let counter = dir.path().join("count");
    // More attempts than the default limit of 5, counted by the command itself.
    let script =
        r#"n=$(cat "$1" 2>/dev/null || echo 0); n=$((n + 1)); echo "$n" > "$1"; [ "$n" -ge 8 ]"#;
    let r = run(&[
        "--forever",
        "-d",
        "0",
        "--",
        "sh",
        "-c",
        script,
        "sh",
        counter.to_str().expect("UTF-8 path"),
    ]);
    assert_eq!(r.code(), Some(0), "{}", r.show());
    let count = std::fs::read_to_string(&counter).expect("counter");
    assert_eq!(count.trim(), "8", "{}", r.show());
}

#[test]
fn forever_is_stopped_by_max_time_with_the_last_status() {
    // Attempts at 0 and ~0.6 s; the third would start past 1 s, so the run stops between
    // attempts and ends with the last attempt's status, not 124.
    let r = run_sh(
        &[
            "--forever",
            "-d",
            "600ms",
            "-b",
            "constant",
            "--jitter",
            "none",
            "--max-time",
            "1s",
        ],
        "echo run; exit 4",
    );
    assert_eq!(r.code(), Some(4), "{}", r.show());
    assert_eq!(r.lines(), ["run"; 2], "{}", r.show());
    assert!(r.took < Duration::from_secs(3), "{}", r.show());
    let give_up = r.log().last().cloned().unwrap_or_default();
    assert!(give_up.contains("--max-time"), "{}", r.show());
}

#[test]
fn max_time_never_starts_a_sleep_that_would_end_past_the_deadline() {
    let r = run_sh(
        &["-d", "10s", "--jitter", "none", "--max-time", "3s"],
        "exit 3",
    );
    assert_eq!(r.code(), Some(3), "{}", r.show());
    assert!(
        r.took < Duration::from_secs(2),
        "neither the 10 s sleep nor a wait for the deadline: {}",
        r.show()
    );
    let give_up = r.log().last().cloned().unwrap_or_default();
    assert!(give_up.contains("giving up"), "{}", r.show());
    assert!(give_up.contains("--max-time"), "{}", r.show());
}

#[test]
fn max_time_stops_a_running_attempt_with_124() {
    let r = run(&["--max-time", "300ms", "--", "sleep", "10"]);
    assert_eq!(r.code(), Some(124), "{}", r.show());
    assert!(r.took < Duration::from_secs(5), "{}", r.show());
    let log = r.log().join("\n");
    assert!(log.contains("--max-time"), "{}", r.show());
}

#[test]
fn max_time_accepts_humantime_durations() {
    let text = explain(&["--max-time", "1h 30m"]);
    assert!(row(&text, "max-time").contains("1h 30m"), "{text}");
    let text = explain(&["-t", "90"]);
    assert!(row(&text, "max-time").contains("1m 30s"), "{text}");
}

#[test]
fn attempt_timeout_ends_an_attempt_with_124_and_retries_it() {
    let r = run_sh(
        &["--attempt-timeout", "200ms", "-n", "3", "-d", "0"],
        r#"echo "attempt $RETRY_ATTEMPT previous $RETRY_PREVIOUS_EXIT"; exec sleep 10"#,
    );
    assert_eq!(r.code(), Some(124), "{}", r.show());
    assert_eq!(
        r.lines(),
        [
            "attempt 1 previous ",
            "attempt 2 previous 124",
            "attempt 3 previous 124"
        ],
        "{}",
        r.show()
    );
    assert!(r.took < Duration::from_secs(5), "{}", r.show());
}

#[test]
fn an_attempt_after_a_timed_out_one_can_succeed() {
    let r = run_sh(
        &["--attempt-timeout", "200ms", "-n", "3", "-d", "0"],
        r#"if [ "$RETRY_ATTEMPT" = 1 ]; then exec sleep 10; fi; echo done"#,
    );
    assert_eq!(r.code(), Some(0), "{}", r.show());
    assert_eq!(r.lines(), ["done"], "{}", r.show());
    assert!(r.took < Duration::from_secs(5), "{}", r.show());
}

#[test]
fn attempts_that_time_out_are_retried_until_max_time_ends_the_run_with_124() {
    let r = run_json(
        &[
            "--forever",
            "--attempt-timeout",
            "100ms",
            "--max-time",
            "1s",
            "-d",
            "0",
        ],
        "exec sleep 10",
    );
    assert_eq!(r.code(), Some(124), "{}", r.show());
    assert!(r.failures() >= 3, "{}", r.show());
    assert!(r.took < Duration::from_secs(4), "{}", r.show());
}

#[test]
fn a_deadline_before_the_attempt_timeout_stops_the_attempt_with_124() {
    let r = run(&[
        "--attempt-timeout",
        "10s",
        "--max-time",
        "300ms",
        "--",
        "sleep",
        "10",
    ]);
    assert_eq!(r.code(), Some(124), "{}", r.show());
    assert!(r.took < Duration::from_secs(5), "{}", r.show());
    let give_up = r.log().last().cloned().unwrap_or_default();
    assert!(give_up.contains("--max-time"), "{}", r.show());
}

#[test]
fn the_give_up_line_of_a_timed_out_attempt_names_status_124() {
    // The attempt counts as 124 (SPEC §1) and retry exits 124 (§5): the log says so too.
    let r = run(&["-n", "1", "--attempt-timeout", "100ms", "--", "sleep", "10"]);
    assert_eq!(r.code(), Some(124), "{}", r.show());
    let give_up = r.log().last().cloned().unwrap_or_default();
    assert!(give_up.contains("giving up"), "{}", r.show());
    assert!(give_up.contains("124"), "{}", r.show());
    assert!(!give_up.contains("status 143"), "{}", r.show());
}

#[test]
fn a_timed_out_attempt_is_fatal_when_fatal_on_names_124() {
    let r = run_sh(
        &[
            "--attempt-timeout",
            "200ms",
            "-n",
            "3",
            "-d",
            "0",
            "--fatal-on",
            "124",
        ],
        "echo run; exec sleep 10",
    );
    assert_eq!(r.code(), Some(124), "{}", r.show());
    assert_eq!(r.lines(), ["run"], "{}", r.show());
}

#[test]
fn kill_signal_is_what_a_timed_out_attempt_receives() {
    let script = r#"trap 'echo got INT; exit 7' INT; trap 'echo got TERM; exit 7' TERM
        while :; do sleep 0.05; done"#;
    let r = run_sh(
        &[
            "--attempt-timeout",
            "200ms",
            "--kill-signal",
            "INT",
            "--kill-after",
            "5s",
            "-n",
            "1",
        ],
        script,
    );
    assert_eq!(r.code(), Some(124), "{}", r.show());
    assert_eq!(r.lines(), ["got INT"], "{}", r.show());
}

#[test]
fn the_default_kill_signal_is_term() {
    let script = r#"trap 'echo got INT; exit 7' INT; trap 'echo got TERM; exit 7' TERM
        while :; do sleep 0.05; done"#;
    let r = run_sh(&["--attempt-timeout", "200ms", "-n", "1"], script);
    assert_eq!(r.code(), Some(124), "{}", r.show());
    assert_eq!(r.lines(), ["got TERM"], "{}", r.show());
}

#[test]
fn kill_after_sends_sigkill_to_an_attempt_that_ignores_the_kill_signal() {
    // The ignored TERM is inherited by sleep: only SIGKILL ends it.
    let r = run_sh(
        &[
            "--attempt-timeout",
            "100ms",
            "--kill-after",
            "200ms",
            "-n",
            "1",
        ],
        "trap '' TERM; sleep 20",
    );
    assert_eq!(r.code(), Some(124), "{}", r.show());
    assert!(r.took < Duration::from_secs(10), "{}", r.show());
}

#[test]
fn kill_signal_and_kill_after_take_names_numbers_and_durations() {
    for (signal, shown) in [
        ("INT", "SIGINT"),
        ("sigkill", "SIGKILL"),
        ("9", "SIGKILL"),
        ("SIGHUP", "SIGHUP"),
    ] {
        let text = explain(&["--kill-signal", signal, "--kill-after", "1.5s"]);
        let row = text
            .lines()
            .find(|l| l.trim_start().starts_with("on timeout"))
            .unwrap_or_else(|| panic!("no timeout row: {text}"));
        assert!(row.contains(shown), "{signal}: {row}");
        assert!(row.contains("1.5s"), "{signal}: {row}");
    }
    let r = run(&[
        "--kill-signal",
        "USR1",
        "--kill-after",
        "0.1",
        "-n",
        "1",
        "--",
        "true",
    ]);
    assert_eq!(r.code(), Some(0), "{}", r.show());
}

#[test]
fn a_bad_kill_signal_is_a_usage_error() {
    assert_usage_error(&["--kill-signal", "SIGBOGUS"], "SIGBOGUS");
}

#[test]
fn a_bad_kill_after_is_a_usage_error() {
    assert_usage_error(&["--kill-after", "soonish"], "soonish");
}

// ---------------------------------------------------------------------------------------------
// §2 How long to wait

#[test]
fn delay_is_the_wait_before_the_first_retry() {
    let r = run_json(&["-d", "200ms", "--jitter", "none", "-n", "2"], "exit 1");
    assert_eq!(r.delays(), [200], "{}", r.show());
    assert!(r.took >= Duration::from_millis(200), "{}", r.show());
    let r = run_json(
        &["--delay", "30ms", "--jitter", "none", "-n", "2"],
        "exit 1",
    );
    assert_eq!(r.delays(), [30], "{}", r.show());
}

#[test]
fn delay_accepts_bare_and_fractional_seconds() {
    let r = run_json(&["-d", "0.05", "--jitter", "none", "-n", "2"], "exit 1");
    assert_eq!(r.delays(), [50], "{}", r.show());
    let text = explain(&["-d", "1.5", "--jitter", "none", "-n", "2"]);
    assert_eq!(
        schedule(&text)[0].max,
        Duration::from_millis(1500),
        "{text}"
    );
}

#[test]
fn delay_zero_retries_at_once() {
    let r = run_json(&["-d", "0", "-n", "4"], "exit 1");
    assert_eq!(r.delays(), [0, 0, 0], "{}", r.show());
}

#[test]
fn each_backoff_kind_follows_its_formula_in_explain() {
    let secs = |v: &[u64]| -> Vec<(u128, u128)> {
        v.iter()
            .map(|s| (u128::from(*s) * 1000, u128::from(*s) * 1000))
            .collect()
    };
    for (kind, want) in [
        ("exponential", [1, 2, 4, 8, 16, 32]),
        ("linear", [1, 2, 3, 4, 5, 6]),
        ("constant", [1, 1, 1, 1, 1, 1]),
        ("fibonacci", [1, 2, 3, 5, 8, 13]),
    ] {
        let text = explain(&["-b", kind, "-d", "1s", "-n", "7", "--jitter", "none"]);
        assert_eq!(bounds_ms(&text), secs(&want), "{kind}: {text}");
    }
}

#[test]
fn the_default_backoff_is_exponential_with_factor_2() {
    let text = explain(&["-d", "1s", "-n", "5", "--jitter", "none"]);
    assert_eq!(
        bounds_ms(&text),
        [(1000, 1000), (2000, 2000), (4000, 4000), (8000, 8000)],
        "{text}"
    );
}

#[test]
fn each_backoff_kind_is_what_the_loop_sleeps() {
    for (kind, want) in [
        ("exponential", vec![10, 20, 40, 80]),
        ("linear", vec![10, 20, 30, 40]),
        ("constant", vec![10, 10, 10, 10]),
        ("fibonacci", vec![10, 20, 30, 50]),
    ] {
        let r = run_json(
            &[
                "--backoff",
                kind,
                "-d",
                "10ms",
                "--jitter",
                "none",
                "-n",
                "5",
            ],
            "exit 1",
        );
        assert_eq!(r.delays(), want, "{kind}: {}", r.show());
    }
}

#[test]
fn factor_multiplies_exponential_backoff_fractions_included() {
    let text = explain(&["--factor", "3", "-d", "1s", "-n", "5", "--jitter", "none"]);
    assert_eq!(
        bounds_ms(&text),
        [(1000, 1000), (3000, 3000), (9000, 9000), (27000, 27000)],
        "{text}"
    );
    let text = explain(&["--factor", "1.5", "-d", "2s", "-n", "5", "--jitter", "none"]);
    assert_eq!(
        bounds_ms(&text),
        [(2000, 2000), (3000, 3000), (4500, 4500), (6750, 6750)],
        "{text}"
    );
    let text = explain(&["--factor", "1", "-d", "2s", "-n", "4", "--jitter", "none"]);
    assert_eq!(
        bounds_ms(&text),
        [(2000, 2000), (2000, 2000), (2000, 2000)],
        "{text}"
    );
    let r = run_json(
        &[
            "--factor", "1.5", "-d", "20ms", "--jitter", "none", "-n", "4",
        ],
        "exit 1",
    );
    assert_eq!(r.delays(), [20, 30, 45], "{}", r.show());
}

#[test]
fn max_delay_caps_every_delay() {
    let text = explain(&[
        "-d",
        "1s",
        "--max-delay",
        "5s",
        "-n",
        "7",
        "--jitter",
        "none",
    ]);
    let want: Vec<(u128, u128)> = [1000, 2000, 4000, 5000, 5000, 5000]
        .iter()
        .map(|ms| (*ms, *ms))
        .collect();
    assert_eq!(bounds_ms(&text), want, "{text}");
    let r = run_json(
        &[
            "-d",
            "10ms",
            "--max-delay",
            "25ms",
            "--jitter",
            "none",
            "-n",
            "5",
        ],
        "exit 1",
    );
    assert_eq!(r.delays(), [10, 20, 25, 25], "{}", r.show());
}

#[test]
fn max_delay_caps_jittered_delays_too() {
    for jitter in ["full", "equal", "decorrelated", "50%"] {
        let text = explain(&[
            "-d",
            "1s",
            "--max-delay",
            "3s",
            "-n",
            "8",
            "--jitter",
            jitter,
        ]);
        for row in schedule(&text) {
            assert!(row.max <= Duration::from_secs(3), "{jitter}: {text}");
            assert!(row.min <= row.max, "{jitter}: {text}");
        }
        let r = run_json(
            &[
                "-d",
                "10ms",
                "--max-delay",
                "15ms",
                "-n",
                "6",
                "--jitter",
                jitter,
            ],
            "exit 1",
        );
        let delays = r.delays();
        assert_eq!(delays.len(), 5, "{jitter}: {}", r.show());
        assert!(delays.iter().all(|d| *d <= 15), "{jitter}: {delays:?}");
    }
}

#[test]
fn delays_list_replaces_backoff_and_its_last_value_repeats() {
    let r = run_json(
        &["--delays", "10ms,30ms", "--jitter", "none", "-n", "5"],
        "exit 1",
    );
    assert_eq!(r.delays(), [10, 30, 30, 30], "{}", r.show());
    let text = explain(&["--delays", "1s,5s,30s", "--jitter", "none", "-n", "6"]);
    assert_eq!(
        bounds_ms(&text),
        [
            (1000, 1000),
            (5000, 5000),
            (30000, 30000),
            (30000, 30000),
            (30000, 30000)
        ],
        "{text}"
    );
}

#[test]
fn delays_list_is_jittered_like_any_schedule() {
    let text = explain(&["--delays", "1s,4s", "--jitter", "full", "-n", "4"]);
    assert_eq!(
        bounds_ms(&text),
        [(0, 1000), (0, 4000), (0, 4000)],
        "{text}"
    );
}

/// Delays of one run with `-b constant -d 40ms` and this jitter, five retries.
fn constant_40ms(jitter: &str, extra: &[&str]) -> (Vec<u64>, Run) {
    let mut args = vec!["-b", "constant", "-d", "40ms", "-n", "6", "-j", jitter];
    args.extend(extra);
    let r = run_json(&args, "exit 1");
    let delays = r.delays();
    assert_eq!(delays.len(), 5, "{}", r.show());
    (delays, r)
}

#[test]
fn no_jitter_sleeps_the_exact_backoff() {
    let (delays, r) = constant_40ms("none", &[]);
    assert_eq!(delays, [40; 5], "{}", r.show());
}

#[test]
fn full_jitter_stays_between_zero_and_the_delay() {
    let (delays, r) = constant_40ms("full", &[]);
    assert!(delays.iter().all(|d| *d <= 40), "{delays:?} {}", r.show());
    let (delays, _) = constant_40ms("full", &["--seed", "5"]);
    assert!(
        delays.iter().any(|d| *d != delays[0]),
        "full jitter spreads: {delays:?}"
    );
}

#[test]
fn the_default_jitter_is_full() {
    let text = explain(&["-d", "1s", "-n", "4"]);
    assert_eq!(
        bounds_ms(&text),
        [(0, 1000), (0, 2000), (0, 4000)],
        "{text}"
    );
}

#[test]
fn equal_jitter_stays_between_half_the_delay_and_the_delay() {
    let (delays, r) = constant_40ms("equal", &[]);
    assert!(
        delays.iter().all(|d| (20..=40).contains(d)),
        "{delays:?} {}",
        r.show()
    );
    let text = explain(&["-d", "1s", "-n", "4", "--jitter", "equal"]);
    assert_eq!(
        bounds_ms(&text),
        [(500, 1000), (1000, 2000), (2000, 4000)],
        "{text}"
    );
}

#[test]
fn proportional_jitter_stays_within_n_percent_of_the_delay() {
    let (delays, r) = constant_40ms("25%", &[]);
    assert!(
        delays.iter().all(|d| (30..=50).contains(d)),
        "{delays:?} {}",
        r.show()
    );
    let text = explain(&["-d", "1s", "-n", "3", "--jitter", "20%"]);
    assert_eq!(bounds_ms(&text), [(800, 1200), (1600, 2400)], "{text}");
}

#[test]
fn proportional_jitter_at_the_cap_stays_below_it_and_spread() {
    let (delays, r) = constant_40ms("20%", &["--max-delay", "40ms", "--seed", "3"]);
    assert!(delays.iter().all(|d| *d <= 40), "{delays:?} {}", r.show());
    assert!(
        delays.iter().any(|d| *d != delays[0]),
        "delays at the cap stay spread: {delays:?}"
    );
}

#[test]
fn decorrelated_jitter_grows_from_the_previous_delay_within_the_cap() {
    let r = run_json(
        &[
            "-d",
            "10ms",
            "--max-delay",
            "60ms",
            "-n",
            "7",
            "--jitter",
            "decorrelated",
        ],
        "exit 1",
    );
    let delays = r.delays();
    assert_eq!(delays.len(), 6, "{}", r.show());
    let mut prev = 10u64;
    for d in &delays {
        assert!(*d >= 10, "at least --delay: {delays:?}");
        assert!(*d <= 60, "at most --max-delay: {delays:?}");
        // prev was floored to whole milliseconds: allow for it.
        assert!(*d <= prev * 3 + 3, "at most 3 × the previous: {delays:?}");
        prev = *d;
    }
}

#[test]
fn decorrelated_jitter_in_explain_starts_at_delay_and_grows_by_three() {
    let text = explain(&["-d", "1s", "-n", "4", "--jitter", "decorrelated"]);
    let rows = bounds_ms(&text);
    assert_eq!(rows[0], (1000, 3000), "{text}");
    assert!(rows.iter().all(|(lo, _)| *lo == 1000), "{text}");
    assert!(rows.windows(2).all(|w| w[1].1 >= w[0].1), "{text}");
}

#[test]
fn the_same_seed_gives_the_same_delays() {
    let args = ["-d", "30ms", "-n", "5", "--seed", "42"];
    let a = run_json(&args, "exit 1").delays();
    let b = run_json(&args, "exit 1").delays();
    assert_eq!(a.len(), 4);
    assert_eq!(a, b, "the same seed, the same delays");
    let c = run_json(&["-d", "30ms", "-n", "5", "--seed", "43"], "exit 1").delays();
    assert_ne!(a, c, "another seed, other delays");
}

#[test]
fn the_same_seed_gives_the_same_decorrelated_delays() {
    let args = [
        "-d",
        "5ms",
        "-n",
        "5",
        "--seed",
        "7",
        "--jitter",
        "decorrelated",
    ];
    let a = run_json(&args, "exit 1").delays();
    let b = run_json(&args, "exit 1").delays();
    assert_eq!(a, b);
}

#[test]
fn explain_with_a_seed_shows_the_delays_the_run_sleeps() {
    let args = [
        "-d", "40ms", "-n", "5", "--seed", "1234", "--jitter", "equal",
    ];
    let text = explain(&args);
    let shown: Vec<u64> = schedule(&text)
        .iter()
        .map(|r| r.exact.expect("an exact delay with --seed").as_millis() as u64)
        .collect();
    let r = run_json(&args, "exit 1");
    assert_eq!(shown, r.delays(), "{text}\n{}", r.show());
}

// ---------------------------------------------------------------------------------------------
// §3 Which results are retried

#[test]
fn success_on_replaces_zero_as_success() {
    let r = run_sh(
        &["--success-on", "3", "-n", "3", "-d", "0"],
        "echo run; exit 3",
    );
    assert_eq!(r.lines(), ["run"], "{}", r.show());
    assert_eq!(r.code(), Some(3), "the last attempt's status: {}", r.show());
    let r = run_sh(
        &["--success-on", "3", "-n", "2", "-d", "0"],
        "echo run; exit 0",
    );
    assert_eq!(
        r.lines(),
        ["run"; 2],
        "0 is no longer success: {}",
        r.show()
    );
    assert_eq!(r.code(), Some(1), "a give-up never exits 0: {}", r.show());
}

#[test]
fn a_run_that_gives_up_never_exits_zero() {
    let dir = TempDir::new().expect("temp dir");
    let summary = dir.path().join("summary.json");
    let summary = summary.to_str().expect("UTF-8 path");
    let r = run(&[
        "--success-on",
        "3",
        "-n",
        "2",
        "-d",
        "0",
        "--summary",
        summary,
        "--",
        "true",
    ]);
    assert_eq!(r.code(), Some(1), "{}", r.show());
    let s: Value =
        serde_json::from_str(&std::fs::read_to_string(summary).expect("summary")).expect("JSON");
    assert_eq!(
        (&s["outcome"], &s["exit"]),
        (&"failure".into(), &1.into()),
        "{s}"
    );
    // A fatal 0 gives up at once, and still does not exit 0.
    let r = run(&["--success-on", "3", "--fatal-on", "0", "--", "true"]);
    assert_eq!(r.code(), Some(1), "{}", r.show());
    assert!(r.stderr().contains("exit status 0"), "{}", r.show());
}

#[test]
fn explain_warns_when_zero_is_no_longer_a_success() {
    let w = warnings(&explain(&["--success-on", "3"]));
    assert!(
        w.iter()
            .any(|l| l.contains("--success-on") && l.contains("exits 1")),
        "{w:?}"
    );
    assert!(warnings(&explain(&["--success-on", "0,3"])).is_empty());
}

#[test]
fn success_on_accepts_lists_and_ranges() {
    for code in ["0", "2", "4", "9"] {
        let r = run_sh(
            &["--success-on", "0,2-4,9", "-n", "3", "-d", "0"],
            &format!("echo run; exit {code}"),
        );
        assert_eq!(r.lines(), ["run"], "exit {code}: {}", r.show());
    }
    let r = run_sh(
        &["--success-on", "0,2-4,9", "-n", "3", "-d", "0"],
        "echo run; exit 5",
    );
    assert_eq!(r.lines(), ["run"; 3], "{}", r.show());
}

#[test]
fn retry_on_retries_only_the_listed_statuses() {
    let r = run_sh(
        &["--retry-on", "75", "-n", "3", "-d", "0"],
        "echo run; exit 75",
    );
    assert_eq!(r.lines(), ["run"; 3], "{}", r.show());
    assert_eq!(r.code(), Some(75));
    let r = run_sh(
        &["--retry-on", "75", "-n", "3", "-d", "0"],
        "echo run; exit 1",
    );
    assert_eq!(r.lines(), ["run"], "not listed: fatal: {}", r.show());
    assert_eq!(r.code(), Some(1));
}

#[test]
fn retry_on_accepts_inclusive_ranges() {
    for (code, runs) in [(4, 1), (5, 3), (6, 3), (7, 3), (8, 1)] {
        let r = run_sh(
            &["--retry-on", "1,5-7", "-n", "3", "-d", "0"],
            &format!("echo run; exit {code}"),
        );
        assert_eq!(r.lines().len(), runs, "exit {code}: {}", r.show());
        assert_eq!(r.code(), Some(code));
    }
}

#[test]
fn retry_on_accepts_signal_names() {
    let r = run_sh(
        &["--retry-on", "SIGTERM", "-n", "3", "-d", "0"],
        "echo run; kill -TERM $$",
    );
    assert_eq!(r.lines(), ["run"; 3], "{}", r.show());
    assert_eq!(r.out.status.signal(), Some(15), "{}", r.show());
    let r = run_sh(
        &["--retry-on", "TERM", "-n", "3", "-d", "0"],
        "echo run; kill -KILL $$",
    );
    assert_eq!(r.lines(), ["run"], "SIGKILL is not listed: {}", r.show());
}

#[test]
fn fatal_status_is_not_retried() {
    let r = run_sh(
        &["--fatal-on", "2", "-n", "5", "-d", "0"],
        "echo run; exit 2",
    );
    assert_eq!(r.lines(), ["run"], "{}", r.show());
    assert_eq!(r.code(), Some(2));
    let log = r.log().join("\n");
    assert!(log.contains("--fatal-on"), "the reason: {}", r.show());
}

#[test]
fn fatal_on_accepts_lists_and_ranges() {
    for (code, runs) in [(2, 1), (3, 1), (5, 1), (6, 3), (9, 1)] {
        let r = run_sh(
            &["--fatal-on", "2,3-5,9", "-n", "3", "-d", "0"],
            &format!("echo run; exit {code}"),
        );
        assert_eq!(r.lines().len(), runs, "exit {code}: {}", r.show());
        assert_eq!(r.code(), Some(code));
    }
}

#[test]
fn fatal_on_wins_over_retry_on() {
    let r = run_sh(
        &[
            "--retry-on",
            "1-10",
            "--fatal-on",
            "5",
            "-n",
            "3",
            "-d",
            "0",
        ],
        "echo run; exit 5",
    );
    assert_eq!(r.lines(), ["run"], "{}", r.show());
    assert_eq!(r.code(), Some(5));
}

#[test]
fn success_wins_over_fatal_on() {
    let r = run_sh(
        &[
            "--success-on",
            "0,2",
            "--fatal-on",
            "2",
            "-n",
            "3",
            "-d",
            "0",
        ],
        "echo run; exit 2",
    );
    assert_eq!(r.lines(), ["run"], "{}", r.show());
    assert_eq!(r.code(), Some(2));
    assert!(
        r.log().is_empty(),
        "a success logs no give-up: {}",
        r.show()
    );
}

#[test]
fn fatal_on_names_signals_as_128_plus_n() {
    for list in ["SIGKILL", "KILL", "137", "kill"] {
        let r = run_sh(
            &["--fatal-on", list, "-n", "3", "-d", "0"],
            "echo run; kill -KILL $$",
        );
        assert_eq!(r.lines(), ["run"], "--fatal-on {list}: {}", r.show());
        assert_eq!(r.out.status.signal(), Some(9), "{list}: {}", r.show());
    }
}

#[test]
fn a_child_killed_by_a_signal_is_retried_by_default_and_seen_as_128_plus_n() {
    let r = run_sh(
        &["-n", "3", "-d", "0"],
        r#"echo "previous $RETRY_PREVIOUS_EXIT"; kill -KILL $$"#,
    );
    assert_eq!(
        r.lines(),
        ["previous ", "previous 137", "previous 137"],
        "{}",
        r.show()
    );
}

/// `retry ARGS -n 3 -d 0 --log-format json -- PATH`, PATH a command that does not exist.
fn run_missing(args: &[&str]) -> Run {
    let dir = TempDir::new().expect("temp dir");
    let missing = dir.path().join("no-such-command");
    let mut all: Vec<&OsStr> = args.iter().map(OsStr::new).collect();
    all.extend(["-n", "3", "-d", "0", "--log-format", "json", "--"].map(OsStr::new));
    all.push(missing.as_os_str());
    run(&all)
}

#[test]
fn a_missing_command_is_fatal_by_default() {
    let r = run_missing(&[]);
    assert_eq!(r.code(), Some(127), "{}", r.show());
    assert_eq!(r.failures(), 1, "not retried: {}", r.show());
}

#[test]
fn a_command_not_on_path_exits_127() {
    let r = run(&["-n", "3", "-d", "0", "--", "retry-test-no-such-command-zz9"]);
    assert_eq!(r.code(), Some(127), "{}", r.show());
    assert!(r.out.stdout.is_empty(), "{}", r.show());
    let log = r.log().join("\n");
    assert!(
        log.contains("retry-test-no-such-command-zz9"),
        "{}",
        r.show()
    );
    assert!(log.contains("1 attempt"), "{}", r.show());
}

#[test]
fn retry_on_127_retries_a_missing_command() {
    let r = run_missing(&["--retry-on", "127"]);
    assert_eq!(r.code(), Some(127), "{}", r.show());
    assert_eq!(r.failures(), 3, "{}", r.show());
}

#[test]
fn a_status_of_126_or_127_from_the_command_itself_is_fatal_by_default() {
    for code in [126, 127] {
        let r = run_sh(&["-n", "3", "-d", "0"], &format!("echo run; exit {code}"));
        assert_eq!(r.lines(), ["run"], "exit {code}: {}", r.show());
        assert_eq!(r.code(), Some(code));
        let r = run_sh(
            &["--retry-on", &code.to_string(), "-n", "3", "-d", "0"],
            &format!("echo run; exit {code}"),
        );
        assert_eq!(r.lines(), ["run"; 3], "--retry-on {code}: {}", r.show());
    }
}

#[test]
fn retry_on_naming_127_leaves_126_fatal() {
    let r = run_sh(
        &["--retry-on", "1,127", "-n", "3", "-d", "0"],
        "echo run; exit 126",
    );
    assert_eq!(r.lines(), ["run"], "{}", r.show());
}

// ---------------------------------------------------------------------------------------------
// §5 Exit status of retry

#[test]
fn success_exits_zero() {
    retry()
        .args(["-n", "3", "--", "true"])
        .assert()
        .success()
        .stdout("")
        .stderr("");
}

#[test]
fn success_after_retries_exits_zero() {
    let r = run_sh(&["-n", "5", "-d", "0"], r#"[ "$RETRY_ATTEMPT" -ge 3 ]"#);
    assert_eq!(r.code(), Some(0), "{}", r.show());
}

#[test]
fn attempts_used_up_exits_with_the_last_attempts_status() {
    let r = run_sh(&["-n", "3", "-d", "0"], r#"exit $((10 + RETRY_ATTEMPT))"#);
    assert_eq!(r.code(), Some(13), "{}", r.show());
}

#[test]
fn a_fatal_status_is_retrys_exit_status() {
    let r = run_sh(&["--fatal-on", "42", "-d", "0"], "exit 42");
    assert_eq!(r.code(), Some(42), "{}", r.show());
}

#[test]
fn a_non_executable_file_exits_126_without_retrying() {
    let dir = TempDir::new().expect("temp dir");
    let script = dir.path().join("script.sh");
    write_file(&script, "#!/bin/sh\necho ran\n", 0o644);
    let r = run(&[
        OsStr::new("-n"),
        OsStr::new("3"),
        OsStr::new("-d"),
        OsStr::new("0"),
        OsStr::new("--log-format"),
        OsStr::new("json"),
        OsStr::new("--"),
        script.as_os_str(),
    ]);
    assert_eq!(r.code(), Some(126), "{}", r.show());
    assert!(r.out.stdout.is_empty(), "{}", r.show());
    assert_eq!(r.failures(), 1, "{}", r.show());
}

#[test]
fn a_directory_as_command_exits_126() {
    let dir = TempDir::new().expect("temp dir");
    let r = run(&[
        OsStr::new("-n"),
        OsStr::new("2"),
        OsStr::new("-d"),
        OsStr::new("0"),
        OsStr::new("--"),
        dir.path().as_os_str(),
    ]);
    assert_eq!(r.code(), Some(126), "{}", r.show());
}

#[test]
fn a_child_killed_by_a_signal_makes_retry_end_by_the_same_signal() {
    let r = run_sh(&["-n", "1"], "kill -KILL $$");
    assert_eq!(r.out.status.signal(), Some(9), "{}", r.show());
    assert_eq!(r.code(), None);
    assert!(!r.out.status.core_dumped(), "{}", r.show());
}

#[test]
fn a_child_killed_by_a_real_time_signal_makes_retry_end_by_it_too() {
    let rt = nix::libc::SIGRTMIN() + 1;
    let r = run_sh(&["-n", "1"], &format!("kill -{rt} $$"));
    assert_eq!(r.out.status.signal(), Some(rt), "{}", r.show());
    assert!(
        r.stderr()
            .contains(&format!("killed by SIGRTMIN+1 (status {})", 128 + rt)),
        "{}",
        r.show()
    );
}

#[test]
fn a_signal_that_dumps_core_is_reraised_without_a_core_dump() {
    let dir = TempDir::new().expect("temp dir");
    let mut cmd = retry();
    cmd.current_dir(dir.path())
        .args(["-n", "1", "--", "sh", "-c", "ulimit -c 0; kill -ABRT $$"]);
    let r = run_cmd(cmd);
    assert_eq!(r.out.status.signal(), Some(6), "{}", r.show());
    assert!(!r.out.status.core_dumped(), "{}", r.show());
}

#[test]
fn attempts_used_up_by_signals_end_by_the_last_signal() {
    let r = run_sh(&["-n", "2", "-d", "0"], "kill -TERM $$");
    assert_eq!(r.out.status.signal(), Some(15), "{}", r.show());
}

// ---------------------------------------------------------------------------------------------
// Usage errors: 125, the bad value named, nothing run

#[test]
fn the_adaptive_delay_without_a_key_or_with_decorrelated_jitter_is_a_usage_error() {
    assert_usage_error(&["--backoff", "adaptive"], "--backoff adaptive needs --key");
    assert_usage_error(
        &[
            "--backoff",
            "adaptive",
            "--key",
            "k",
            "--jitter",
            "decorrelated",
        ],
        "--jitter decorrelated and --backoff adaptive",
    );
}

#[test]
fn a_bad_duration_is_a_usage_error() {
    assert_usage_error(&["-d", "5parsecs"], "5parsecs");
}

#[test]
fn a_negative_duration_is_a_usage_error() {
    assert_usage_error(&["--max-time=-1"], "-1");
}

#[test]
fn a_bad_item_in_a_delays_list_is_a_usage_error() {
    assert_usage_error(&["--delays", "1s,xyz,3s"], "xyz");
}

#[test]
fn a_bad_item_in_a_status_list_is_a_usage_error() {
    assert_usage_error(&["--retry-on", "1,abc"], "abc");
    assert_usage_error(&["--fatal-on", "SIGNOPE"], "SIGNOPE");
    assert_usage_error(&["--success-on", "256"], "256");
}

#[test]
fn a_backwards_range_is_a_usage_error() {
    assert_usage_error(&["--retry-on", "7-5"], "7-5");
}

#[test]
fn a_bad_jitter_is_a_usage_error() {
    assert_usage_error(&["--jitter", "sideways"], "sideways");
    assert_usage_error(&["--jitter", "150%"], "150%");
}

#[test]
fn a_bad_backoff_is_a_usage_error() {
    assert_usage_error(&["--backoff", "quadratic"], "quadratic");
}

#[test]
fn zero_attempts_is_a_usage_error() {
    assert_usage_error(&["--attempts", "0"], "0");
    assert_usage_error(&["--attempts", "0"], "--attempts");
}

#[test]
fn attempts_and_retries_together_are_a_usage_error() {
    assert_usage_error(&["--attempts", "3", "--retries", "2"], "--retries");
}

#[test]
fn the_default_cap_rises_to_the_longest_delay_asked_for() {
    let text = explain(&["-d", "2m", "-n", "3"]);
    assert_eq!(bounds_ms(&text), [(0, 120_000), (0, 120_000)], "{text}");
    assert!(warnings(&text).is_empty(), "{text}");
    let text = explain(&["--delays", "1s,5s,2m", "-n", "5", "--jitter", "none"]);
    let rows = bounds_ms(&text);
    assert_eq!(rows.last(), Some(&(120_000, 120_000)), "{text}");
    let r = run(&["-d", "2m", "-n", "1", "--", "true"]);
    assert_eq!(r.code(), Some(0), "one attempt, no wait: {}", r.show());
}

#[test]
fn an_explicit_max_delay_caps_a_longer_delay_and_explain_warns() {
    let text = explain(&[
        "-d",
        "10s",
        "--max-delay",
        "5s",
        "--jitter",
        "none",
        "-n",
        "2",
    ]);
    assert_eq!(bounds_ms(&text), [(5000, 5000)], "{text}");
    let w = warnings(&text);
    assert!(
        w.iter()
            .any(|l| l.contains("--max-delay 5s") && l.contains("--delay 10s")),
        "{w:?}"
    );
    let r = run_json(
        &[
            "-d",
            "300ms",
            "--max-delay",
            "20ms",
            "--jitter",
            "none",
            "-n",
            "2",
        ],
        "exit 1",
    );
    assert_eq!(r.delays(), [20], "{}", r.show());
}

#[test]
fn a_factor_below_one_is_a_usage_error() {
    assert_usage_error(&["--factor", "0.5"], "0.5");
}

#[test]
fn a_non_numeric_factor_is_a_usage_error() {
    assert_usage_error(&["--factor", "twice"], "twice");
}

#[test]
fn a_bad_seed_is_a_usage_error() {
    assert_usage_error(&["--seed", "lucky"], "lucky");
}

#[test]
fn an_unknown_flag_is_a_usage_error() {
    assert_usage_error(&["--frobnicate"], "--frobnicate");
}

#[test]
fn a_missing_command_is_a_usage_error() {
    for args in [&["-n", "2"][..], &["-n", "2", "--"][..], &[][..]] {
        let r = run(args);
        assert_eq!(r.code(), Some(125), "{args:?}: {}", r.show());
        assert!(r.out.stdout.is_empty(), "{args:?}: {}", r.show());
        assert!(
            r.stderr().contains("COMMAND"),
            "{args:?}: the message says what is missing: {}",
            r.show()
        );
    }
}

// ---------------------------------------------------------------------------------------------
// argv, byte for byte

fn nul_separated(args: &[OsString]) -> Vec<u8> {
    let mut want = Vec::new();
    for a in args {
        want.extend_from_slice(a.as_encoded_bytes());
        want.push(0);
    }
    want
}

#[test]
fn arguments_reach_the_command_byte_for_byte() {
    let args: Vec<OsString> = vec![
        "two words".into(),
        "  padded  ".into(),
        "it's".into(),
        "\"double\"".into(),
        "".into(),
        "-x".into(),
        "--attempts".into(),
        "--".into(),
        "*".into(),
        "$HOME".into(),
        "line\nbreak".into(),
        "tab\there".into(),
        "é ✓".into(),
        OsString::from_vec(vec![0xff, 0xfe, b'a', 0x80]),
        "".into(),
    ];
    let mut cmd = retry();
    cmd.args(["-n", "1", "--", "printf", "%s\\0"]).args(&args);
    let r = run_cmd(cmd);
    assert_eq!(r.code(), Some(0), "{}", r.show());
    assert_eq!(r.out.stdout, nul_separated(&args), "{}", r.show());
}

#[test]
fn arguments_are_the_same_on_every_attempt() {
    let args: Vec<OsString> = vec![
        "a b".into(),
        "".into(),
        "-n".into(),
        OsString::from_vec(vec![0xc3, 0x28]),
    ];
    let mut cmd = retry();
    cmd.args([
        "-n",
        "2",
        "-d",
        "0",
        "--",
        "sh",
        "-c",
        r#"printf '%s\0' "$@"; exit 1"#,
        "sh",
    ])
    .args(&args);
    let r = run_cmd(cmd);
    let once = nul_separated(&args);
    assert_eq!(r.out.stdout, [once.clone(), once].concat(), "{}", r.show());
}

#[test]
fn flags_after_the_command_belong_to_the_command() {
    let r = run(&[
        "-n", "1", "printf", "%s\\n", "-n", "5", "-v", "--help", "--", "-d",
    ]);
    assert_eq!(r.code(), Some(0), "{}", r.show());
    assert_eq!(
        r.lines(),
        ["-n", "5", "-v", "--help", "--", "-d"],
        "{}",
        r.show()
    );
    assert!(r.log().is_empty(), "-v was not retry's: {}", r.show());
}

// ---------------------------------------------------------------------------------------------
// No sleep after the last attempt

#[test]
fn there_is_no_sleep_after_the_last_attempt() {
    let r = run(&["-n", "2", "-d", "3s", "--jitter", "none", "--", "false"]);
    assert_eq!(r.code(), Some(1), "{}", r.show());
    assert!(
        r.took > Duration::from_millis(2500),
        "the one delay was slept: {}",
        r.show()
    );
    assert!(
        r.took < Duration::from_millis(5500),
        "only one delay was slept: {}",
        r.show()
    );
}

#[test]
fn a_single_attempt_returns_at_once_whatever_the_delay() {
    let r = run(&["-n", "1", "-d", "10s", "--jitter", "none", "--", "false"]);
    assert_eq!(r.code(), Some(1), "{}", r.show());
    assert!(r.took < Duration::from_secs(5), "{}", r.show());
}

#[test]
fn a_fatal_status_returns_at_once_whatever_the_delay() {
    let r = run(&[
        "-d",
        "10s",
        "--jitter",
        "none",
        "--fatal-on",
        "1",
        "--",
        "false",
    ]);
    assert_eq!(r.code(), Some(1), "{}", r.show());
    assert!(r.took < Duration::from_secs(5), "{}", r.show());
}

// ---------------------------------------------------------------------------------------------
// §4 The child's environment

#[test]
fn retry_attempt_counts_from_one_and_max_attempts_is_the_limit() {
    let r = run_sh(
        &["-n", "3", "-d", "0"],
        r#"echo "$RETRY_ATTEMPT/$RETRY_MAX_ATTEMPTS"; exit 1"#,
    );
    assert_eq!(r.lines(), ["1/3", "2/3", "3/3"], "{}", r.show());
}

#[test]
fn retry_max_attempts_is_empty_with_forever() {
    let r = run_sh(
        &["--forever", "-d", "0"],
        r#"echo "[${RETRY_MAX_ATTEMPTS-unset}] $RETRY_ATTEMPT"; [ "$RETRY_ATTEMPT" -ge 2 ]"#,
    );
    assert_eq!(r.code(), Some(0), "{}", r.show());
    assert_eq!(r.lines(), ["[] 1", "[] 2"], "{}", r.show());
}

#[test]
fn retry_previous_exit_is_empty_at_first_then_the_previous_status() {
    let r = run_sh(
        &["-n", "3", "-d", "0"],
        r#"echo "[${RETRY_PREVIOUS_EXIT-unset}]"; exit $((RETRY_ATTEMPT + 20))"#,
    );
    assert_eq!(r.lines(), ["[]", "[21]", "[22]"], "{}", r.show());
}

#[test]
fn retry_remaining_ms_is_empty_without_max_time() {
    let r = run_sh(
        &["-n", "2", "-d", "0"],
        r#"echo "[${RETRY_REMAINING_MS-unset}]"; exit 1"#,
    );
    assert_eq!(r.lines(), ["[]", "[]"], "{}", r.show());
}

#[test]
fn retry_remaining_ms_is_the_time_left_before_max_time() {
    let r = run_sh(
        &[
            "-n",
            "3",
            "-d",
            "50ms",
            "--jitter",
            "none",
            "--max-time",
            "10s",
        ],
        r#"echo "$RETRY_REMAINING_MS"; exit 1"#,
    );
    let left: Vec<u64> = r
        .lines()
        .iter()
        .map(|l| {
            l.parse()
                .unwrap_or_else(|_| panic!("a number: {}", r.show()))
        })
        .collect();
    assert_eq!(left.len(), 3, "{}", r.show());
    assert!(left.iter().all(|ms| *ms <= 10_000), "{left:?}");
    assert!(
        left[0] >= 5_000,
        "most of the time is left at first: {left:?}"
    );
    assert!(
        left.windows(2).all(|w| w[1] + 50 <= w[0]),
        "it counts down, the delays included: {left:?}"
    );
}

fn is_uuid(s: &str) -> bool {
    uuid::Uuid::parse_str(s).is_ok() && s.len() == 36
}

#[test]
fn the_idempotency_key_is_one_uuid_for_every_attempt_of_a_run() {
    let r = run_sh(
        &["-n", "3", "-d", "0"],
        r#"echo "$RETRY_IDEMPOTENCY_KEY"; exit 1"#,
    );
    let keys = r.lines();
    assert_eq!(keys.len(), 3, "{}", r.show());
    assert!(is_uuid(&keys[0]), "{}", r.show());
    assert!(keys.iter().all(|k| *k == keys[0]), "{keys:?}");
}

#[test]
fn the_idempotency_key_differs_between_runs() {
    let key = || {
        let r = run_sh(&["-n", "1"], r#"echo "$RETRY_IDEMPOTENCY_KEY""#);
        r.lines().first().cloned().unwrap_or_default()
    };
    let (a, b) = (key(), key());
    assert!(is_uuid(&a) && is_uuid(&b), "{a:?} {b:?}");
    assert_ne!(a, b);
}

#[test]
fn an_inherited_idempotency_key_is_kept() {
    let mut cmd = retry();
    cmd.env("RETRY_IDEMPOTENCY_KEY", "order-1234").args([
        "-n",
        "2",
        "-d",
        "0",
        "--",
        "sh",
        "-c",
        r#"echo "$RETRY_IDEMPOTENCY_KEY"; exit 1"#,
    ]);
    let r = run_cmd(cmd);
    assert_eq!(r.lines(), ["order-1234"; 2], "{}", r.show());
}

#[test]
fn retry_depth_is_1_and_2_inside_a_nested_retry() {
    let script = r#"echo "outer $RETRY_DEPTH $RETRY_IDEMPOTENCY_KEY"
        "$1" -n 1 -- sh -c 'echo "inner $RETRY_DEPTH $RETRY_IDEMPOTENCY_KEY"'"#;
    let r = run(&[
        OsStr::new("-n"),
        OsStr::new("1"),
        OsStr::new("--"),
        OsStr::new("sh"),
        OsStr::new("-c"),
        OsStr::new(script),
        OsStr::new("sh"),
        support::bin().as_os_str(),
    ]);
    assert_eq!(r.code(), Some(0), "{}", r.show());
    let lines = r.lines();
    assert_eq!(lines.len(), 2, "{}", r.show());
    let outer: Vec<&str> = lines[0].split(' ').collect();
    let inner: Vec<&str> = lines[1].split(' ').collect();
    assert_eq!(outer[..2], ["outer", "1"], "{}", r.show());
    assert_eq!(inner[..2], ["inner", "2"], "{}", r.show());
    assert_eq!(outer[2], inner[2], "the nested run keeps the key");
}

#[test]
fn the_childs_own_environment_is_passed_through() {
    let mut cmd = retry();
    cmd.env("RETRY_TEST_VALUE", "kept as is").args([
        "-n",
        "1",
        "--",
        "sh",
        "-c",
        r#"echo "$RETRY_TEST_VALUE""#,
    ]);
    let r = run_cmd(cmd);
    assert_eq!(r.lines(), ["kept as is"], "{}", r.show());
}

// ---------------------------------------------------------------------------------------------
// §6 Logs

#[test]
fn stdout_carries_only_the_commands_output() {
    for extra in [&["-v"][..], &["-v", "--log-format", "json"][..], &[][..]] {
        let mut args = vec!["-n", "3", "-d", "0"];
        args.extend(extra);
        let r = run_sh(
            &args,
            r#"echo "out $RETRY_ATTEMPT"; echo "err $RETRY_ATTEMPT" >&2; exit 1"#,
        );
        assert_eq!(
            r.stdout(),
            "out 1\nout 2\nout 3\n",
            "{extra:?}: {}",
            r.show()
        );
        assert!(!r.stderr().is_empty(), "{}", r.show());
    }
}

#[test]
fn the_childs_stderr_is_not_altered() {
    let r = run_sh(
        &["-n", "2", "-d", "0"],
        r#"printf 'no newline' >&2; printf ' tail\n' >&2; exit 1"#,
    );
    let stderr = r.stderr();
    let childs: Vec<&str> = stderr
        .lines()
        .filter(|l| !l.starts_with("retry:"))
        .collect();
    assert_eq!(childs, ["no newline tail"; 2], "{}", r.show());
}

#[test]
fn a_first_time_success_logs_nothing() {
    let r = run_sh(&["-n", "3"], "echo fine");
    assert_eq!(r.stdout(), "fine\n");
    assert_eq!(r.stderr(), "", "{}", r.show());
}

#[test]
fn each_failed_attempt_logs_status_time_reason_and_next_delay() {
    let r = run_sh(
        &["-n", "3", "-d", "20ms", "--jitter", "none"],
        r#"[ "$RETRY_ATTEMPT" -ge 3 ] || exit 7"#,
    );
    assert_eq!(r.code(), Some(0), "{}", r.show());
    let log = r.log();
    assert_eq!(log.len(), 3, "two failures and a success: {}", r.show());
    for (i, line) in log[..2].iter().enumerate() {
        assert!(line.contains(&format!("attempt {}/3", i + 1)), "{line}");
        assert!(line.contains("status 7"), "the status: {line}");
        assert!(line.contains("ms"), "how long it ran: {line}");
        assert!(line.contains("retryable"), "the reason: {line}");
        assert!(
            line.contains(&format!("{}ms", 20 << i)),
            "the delay: {line}"
        );
    }
    assert!(log[2].contains("succeeded"), "{}", r.show());
    assert!(log[2].contains("attempt 3/3"), "{}", r.show());
}

#[test]
fn a_fatal_failure_logs_why_it_is_not_retried_and_gives_up() {
    let r = run_sh(&["--fatal-on", "9", "-d", "0"], "exit 9");
    let log = r.log();
    assert_eq!(log.len(), 2, "{}", r.show());
    assert!(log[0].contains("status 9"), "{}", r.show());
    assert!(log[0].contains("fatal"), "{}", r.show());
    assert!(!log[0].contains("retrying"), "{}", r.show());
    assert!(log[1].contains("giving up"), "{}", r.show());
}

#[test]
fn a_killed_attempt_is_logged_with_its_signal() {
    let r = run_sh(&["-n", "2", "-d", "0"], "kill -KILL $$");
    let log = r.log().join("\n");
    assert!(log.contains("SIGKILL"), "{}", r.show());
    assert!(log.contains("137"), "{}", r.show());
}

#[test]
fn the_give_up_line_says_why_how_many_attempts_and_how_long() {
    let r = run_sh(&["-n", "3", "-d", "0"], "exit 1");
    let log = r.log();
    let last = log.last().cloned().unwrap_or_default();
    assert!(last.starts_with("retry: "), "{}", r.show());
    assert!(last.contains("giving up"), "{}", r.show());
    assert!(last.contains("3 attempts"), "{}", r.show());
    assert!(last.contains("attempts used up"), "{}", r.show());
    // "... after 3 attempts in 12ms: ...": the total time, as a duration.
    let total = last
        .split(" in ")
        .nth(1)
        .and_then(|rest| rest.split(':').next())
        .unwrap_or_else(|| panic!("no total time: {last}"));
    assert!(humantime::parse_duration(total).is_ok(), "{last}");
    assert_eq!(log.len(), 4, "three failures and the give-up: {}", r.show());
}

#[test]
fn verbose_adds_the_policy_and_each_start() {
    let r = run_sh(&["-v", "-n", "2", "-d", "0"], "exit 1");
    let log = r.log();
    assert!(log[0].contains("policy"), "{}", r.show());
    assert!(log[0].contains("attempts=2"), "{}", r.show());
    let starts = log.iter().filter(|l| l.contains("starting")).count();
    assert_eq!(starts, 2, "{}", r.show());
    assert_eq!(log.len(), 1 + 2 + 2 + 1, "{}", r.show());
    let quiet = run_sh(&["-n", "2", "-d", "0"], "exit 1");
    assert!(
        quiet.log().iter().all(|l| !l.contains("starting")),
        "{}",
        quiet.show()
    );
}

#[test]
fn quiet_keeps_only_the_give_up_line() {
    let r = run_sh(&["-q", "-n", "3", "-d", "0"], "echo err >&2; exit 1");
    let log = r.log();
    assert_eq!(log.len(), 1, "{}", r.show());
    assert!(log[0].contains("giving up"), "{}", r.show());
    assert_eq!(
        r.stderr().matches("err\n").count(),
        3,
        "the child's stderr stays: {}",
        r.show()
    );
    let r = run_sh(&["-q", "-n", "3", "-d", "0"], r#"[ "$RETRY_ATTEMPT" = 2 ]"#);
    assert_eq!(r.code(), Some(0));
    assert_eq!(r.stderr(), "", "no give-up, no line: {}", r.show());
}

#[test]
fn double_quiet_prints_nothing() {
    for args in [&["-qq"][..], &["-q", "-q"][..], &["--quiet", "--quiet"][..]] {
        let mut all = args.to_vec();
        all.extend(["-n", "2", "-d", "0"]);
        let r = run_sh(&all, "exit 1");
        assert_eq!(r.code(), Some(1));
        assert_eq!(r.stderr(), "", "{args:?}: {}", r.show());
    }
}

const FIELDS: [&str; 10] = [
    "event",
    "attempt",
    "max_attempts",
    "status",
    "signal",
    "duration_ms",
    "delay_ms",
    "reason",
    "elapsed_ms",
    "timestamp",
];

#[test]
fn json_log_lines_carry_the_spec_fields() {
    let r = run_json(&["-n", "3", "-d", "10ms", "--jitter", "none"], "exit 3");
    let events = r.json();
    assert!(!events.is_empty(), "{}", r.show());
    for e in &events {
        for field in FIELDS {
            assert!(e.get(field).is_some(), "{field} missing in {e}");
        }
        assert!(
            humantime::parse_rfc3339_weak(e["timestamp"].as_str().expect("a string")).is_ok(),
            "{e}"
        );
        assert!(e["elapsed_ms"].is_u64(), "{e}");
    }
    let failures: Vec<&Value> = events.iter().filter(|e| e["event"] == "failure").collect();
    assert_eq!(failures.len(), 3, "{}", r.show());
    for (i, f) in failures.iter().enumerate() {
        assert_eq!(f["attempt"], i as u64 + 1, "{f}");
        assert_eq!(f["max_attempts"], 3, "{f}");
        assert_eq!(f["status"], 3, "{f}");
        assert!(f["signal"].is_null(), "{f}");
        assert!(f["duration_ms"].is_u64(), "{f}");
        assert!(f["reason"].is_string(), "{f}");
    }
    assert_eq!(failures[0]["delay_ms"], 10);
    assert_eq!(failures[1]["delay_ms"], 20);
    assert!(failures[2]["delay_ms"].is_null(), "no delay after the last");
    let last = events.last().expect("events");
    assert_eq!(last["event"], "give_up", "{last}");
    assert!(last["reason"].is_string(), "{last}");
    let elapsed: Vec<u64> = events
        .iter()
        .map(|e| e["elapsed_ms"].as_u64().expect("elapsed"))
        .collect();
    assert!(elapsed.windows(2).all(|w| w[0] <= w[1]), "{elapsed:?}");
    assert!(*elapsed.last().expect("elapsed") >= 30, "{elapsed:?}");
}

#[test]
fn json_log_names_the_signal_of_a_killed_attempt() {
    let r = run_json(&["-n", "2", "-d", "0"], "kill -KILL $$");
    let failure = r
        .json()
        .into_iter()
        .find(|e| e["event"] == "failure")
        .unwrap_or_else(|| panic!("a failure: {}", r.show()));
    assert_eq!(failure["status"], 137, "{failure}");
    assert_eq!(failure["signal"], "SIGKILL", "{failure}");
}

#[test]
fn json_log_reports_a_timed_out_attempt_as_124() {
    let r = run_json(&["-n", "1", "--attempt-timeout", "100ms"], "exec sleep 10");
    let failure = r
        .json()
        .into_iter()
        .find(|e| e["event"] == "failure")
        .unwrap_or_else(|| panic!("a failure: {}", r.show()));
    assert_eq!(failure["status"], 124, "{failure}");
}

#[test]
fn json_log_of_a_success_after_retries() {
    let r = run_json(&["-n", "3", "-d", "0"], r#"[ "$RETRY_ATTEMPT" = 2 ]"#);
    let events: Vec<String> = r
        .json()
        .iter()
        .map(|e| e["event"].as_str().unwrap_or("").to_owned())
        .collect();
    assert_eq!(events, ["failure", "success"], "{}", r.show());
}

#[test]
fn json_log_with_verbose_has_policy_and_start_events() {
    let r = run_json(&["-v", "-n", "2", "-d", "0"], "exit 1");
    let events: Vec<String> = r
        .json()
        .iter()
        .map(|e| e["event"].as_str().unwrap_or("").to_owned())
        .collect();
    assert_eq!(
        events,
        ["policy", "start", "failure", "start", "failure", "give_up"],
        "{}",
        r.show()
    );
}

#[test]
fn log_file_takes_the_log_and_stderr_keeps_only_the_childs_lines() {
    let dir = TempDir::new().expect("temp dir");
    let path = dir.path().join("retry.log");
    let r = run(&[
        "--log-file",
        path.to_str().expect("UTF-8"),
        "-v",
        "-n",
        "2",
        "-d",
        "0",
        "--",
        "sh",
        "-c",
        "echo child-err >&2; echo child-out; exit 1",
    ]);
    assert_eq!(r.code(), Some(1), "{}", r.show());
    assert_eq!(r.stderr(), "child-err\nchild-err\n", "{}", r.show());
    assert_eq!(r.stdout(), "child-out\nchild-out\n", "{}", r.show());
    let log = std::fs::read_to_string(&path).expect("the log file");
    assert!(!log.is_empty());
    // Each line after its local time.
    assert!(
        log.lines().all(|l| l
            .split_once(' ')
            .is_some_and(|(_, l)| l.starts_with("retry:"))),
        "{log}"
    );
    assert!(log.contains("giving up"), "{log}");
    assert!(log.contains("starting"), "{log}");
}

#[test]
fn log_file_can_hold_json_lines() {
    let dir = TempDir::new().expect("temp dir");
    let path = dir.path().join("retry.jsonl");
    let r = run(&[
        "--log-file",
        path.to_str().expect("UTF-8"),
        "--log-format",
        "json",
        "-n",
        "2",
        "-d",
        "0",
        "--",
        "false",
    ]);
    assert_eq!(r.code(), Some(1));
    assert_eq!(r.stderr(), "", "{}", r.show());
    let events = json_lines(&std::fs::read_to_string(&path).expect("log file"));
    assert_eq!(events.len(), 3, "{events:?}");
    assert_eq!(events[2]["event"], "give_up");
}

#[test]
fn an_unwritable_log_file_is_retrys_own_failure_and_nothing_runs() {
    let dir = TempDir::new().expect("temp dir");
    let (mark, cmd) = marker(&dir);
    let log = dir.path().join("no-such-dir").join("retry.log");
    let mut args = vec![
        "--log-file".to_string(),
        log.display().to_string(),
        "--".into(),
    ];
    args.extend(cmd);
    let r = run(&args);
    assert_eq!(r.code(), Some(125), "{}", r.show());
    assert!(!mark.exists(), "{}", r.show());
}

// ---------------------------------------------------------------------------------------------
// §7 Explain

#[test]
fn explain_runs_nothing_and_exits_zero() {
    let dir = TempDir::new().expect("temp dir");
    let (mark, cmd) = marker(&dir);
    let mut args = vec![
        "--explain".to_string(),
        "-n".into(),
        "3".into(),
        "--".into(),
    ];
    args.extend(cmd);
    let r = run(&args);
    assert_eq!(r.code(), Some(0), "{}", r.show());
    assert!(!mark.exists(), "the command ran");
    assert!(r.stdout().contains("Schedule"), "{}", r.show());
    assert!(
        r.stdout().contains("touch"),
        "it names the command: {}",
        r.show()
    );
}

#[test]
fn explain_needs_no_command() {
    let text = explain(&["-n", "3"]);
    assert!(text.contains("Policy"), "{text}");
    assert_eq!(schedule(&text).len(), 2, "{text}");
}

#[test]
fn explain_exits_zero_even_for_a_command_that_would_fail() {
    let r = run(&["--explain", "--", "false"]);
    assert_eq!(r.code(), Some(0), "{}", r.show());
    let r = run(&["--explain", "--", "retry-test-no-such-command-zz9"]);
    assert_eq!(r.code(), Some(0), "{}", r.show());
}

#[test]
fn explain_shows_the_resolved_policy() {
    let text = explain(&[
        "--retries",
        "3",
        "-d",
        "250ms",
        "--retry-on",
        "1,75",
        "--fatal-on",
        "SIGKILL",
        "--success-on",
        "0,3",
    ]);
    let row = |name: &str| {
        text.lines()
            .find(|l| l.trim_start().starts_with(name))
            .unwrap_or_else(|| panic!("no {name} row: {text}"))
            .to_owned()
    };
    assert!(row("attempts").contains('4'), "{text}");
    assert!(row("delay").contains("250ms"), "{text}");
    assert!(row("retry-on").contains("75"), "{text}");
    assert!(row("fatal-on").contains("137"), "{text}");
    assert!(row("fatal-on").contains("126"), "{text}");
    assert!(row("success-on").contains('3'), "{text}");
}

#[test]
fn explain_shows_one_row_per_retry_with_min_and_max() {
    let text = explain(&["-n", "5", "-d", "1s"]);
    assert_eq!(
        bounds_ms(&text),
        [(0, 1000), (0, 2000), (0, 4000), (0, 8000)],
        "{text}"
    );
    let text = explain(&["-n", "1"]);
    assert!(!text.contains("at most"), "one attempt: no waiting: {text}");
}

#[test]
fn explain_shows_exact_delays_with_a_seed_and_the_same_each_time() {
    let args = ["-n", "6", "-d", "1s", "--seed", "99"];
    let text = explain(&args);
    let rows = schedule(&text);
    assert_eq!(rows.len(), 5, "{text}");
    for row in &rows {
        let exact = row.exact.unwrap_or_else(|| panic!("exact delays: {text}"));
        assert!(row.min <= exact && exact <= row.max, "{row:?}");
    }
    assert_eq!(text, explain(&args), "the same seed, the same schedule");
    let other = explain(&["-n", "6", "-d", "1s", "--seed", "100"]);
    assert_ne!(text, other, "another seed, another schedule");
    let unseeded = explain(&["-n", "6", "-d", "1s"]);
    assert!(schedule(&unseeded).iter().all(|r| r.exact.is_none()));
}

#[test]
fn explain_gives_the_worst_case_and_expected_totals() {
    let (worst, expected) = totals(&explain(&["-n", "4", "-d", "1s", "--jitter", "none"]));
    assert_eq!(worst, Duration::from_secs(7));
    assert_eq!(expected, Duration::from_secs(7));
    // Full jitter: the worst case is the sum of the caps, the mean about half of it.
    let (worst, expected) = totals(&explain(&["-n", "4", "-d", "1s"]));
    assert_eq!(worst, Duration::from_secs(7));
    assert!(
        expected > Duration::from_millis(3000) && expected < Duration::from_millis(4000),
        "{expected:?}"
    );
    // Equal jitter: three quarters of the caps.
    let (worst, expected) = totals(&explain(&["-n", "4", "-d", "1s", "--jitter", "equal"]));
    assert_eq!(worst, Duration::from_secs(7));
    assert!(
        expected > Duration::from_millis(4900) && expected < Duration::from_millis(5600),
        "{expected:?}"
    );
}

#[test]
fn explain_totals_respect_max_delay_over_many_retries() {
    let (worst, _) = totals(&explain(&[
        "-n",
        "101",
        "-d",
        "1s",
        "--max-delay",
        "2s",
        "--jitter",
        "none",
    ]));
    // 1 s, then 99 retries at the 2 s cap.
    assert_eq!(worst, Duration::from_secs(199));
}

#[test]
fn explain_warns_about_no_jitter() {
    let w = warnings(&explain(&["--jitter", "none"]));
    assert!(w.iter().any(|l| l.contains("--jitter none")), "{w:?}");
}

#[test]
fn explain_warns_about_zero_percent_jitter_as_no_jitter() {
    // ±0% is no jitter at all: the same lockstep risk as --jitter none (SPEC §7).
    let text = explain(&["--jitter", "0%", "-n", "3"]);
    assert_eq!(bounds_ms(&text), [(1000, 1000), (2000, 2000)], "{text}");
    let w = warnings(&text);
    assert!(
        !w.is_empty(),
        "no warning for a schedule without jitter:\n{text}"
    );
}

#[test]
fn explain_warns_about_forever_without_max_time() {
    let w = warnings(&explain(&["--forever"]));
    assert!(w.iter().any(|l| l.contains("--forever")), "{w:?}");
    let w = warnings(&explain(&["--forever", "--max-time", "1h"]));
    assert!(!w.iter().any(|l| l.contains("--forever")), "{w:?}");
}

#[test]
fn explain_warns_about_retrying_126_and_127() {
    let w = warnings(&explain(&["--retry-on", "127"]));
    assert!(w.iter().any(|l| l.contains("127")), "{w:?}");
    let w = warnings(&explain(&["--retry-on", "1,126"]));
    assert!(w.iter().any(|l| l.contains("126")), "{w:?}");
}

#[test]
fn explain_warns_about_a_schedule_that_cannot_fit_max_time() {
    // Even the shortest equal-jitter waits (0.5 + 1 + 2 + 4 s) pass 5 s.
    let w = warnings(&explain(&[
        "-n",
        "10",
        "-d",
        "1s",
        "--jitter",
        "equal",
        "--max-time",
        "5s",
    ]));
    assert!(w.iter().any(|l| l.contains("--max-time")), "{w:?}");
    let w = warnings(&explain(&["-n", "3", "-d", "1s", "--max-time", "1h"]));
    assert!(!w.iter().any(|l| l.contains("--max-time")), "{w:?}");
}

#[test]
fn explain_has_no_warnings_for_the_defaults() {
    let text = explain(&[]);
    assert!(warnings(&text).is_empty(), "{text}");
    assert!(!text.contains("Warnings"), "{text}");
}

#[test]
fn explain_reports_usage_errors_like_a_run() {
    let r = run(&["--explain", "--factor", "0.5"]);
    assert_eq!(r.code(), Some(125), "{}", r.show());
    assert!(r.stderr().contains("0.5"), "{}", r.show());
}

#[test]
fn explain_prints_to_stdout_only() {
    retry()
        .args(["--explain", "--jitter", "none", "--forever"])
        .assert()
        .success()
        .stdout(predicate::str::contains("Warnings"))
        .stderr("");
}

#[test]
fn a_duration_too_long_to_hold_says_so() {
    let out = retry()
        .args(["-d", "18446744073709551616", "--", "true"])
        .output()
        .expect("run retry");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(125));
    assert!(stderr.contains("too long"), "{stderr}");
}

#[test]
fn explain_keeps_its_columns_apart_for_very_long_delays() {
    let out = retry()
        .args([
            "--explain",
            "-n",
            "3",
            "-d",
            "100000h",
            "--max-delay",
            "200000h",
            "-j",
            "none",
        ])
        .output()
        .expect("run retry");
    let text = String::from_utf8_lossy(&out.stdout);
    let rows: Vec<&str> = text
        .lines()
        .skip_while(|l| !l.starts_with("Schedule"))
        .skip(2)
        .take(2)
        .collect();
    assert_eq!(rows.len(), 2, "{text}");
    for row in rows {
        let columns: Vec<&str> = row
            .split("  ")
            .map(str::trim)
            .filter(|c| !c.is_empty())
            .collect();
        assert_eq!(columns.len(), 3, "{row:?}");
    }
}

// ---------------------------------------------------------------------------------------------
// Error messages: one style, `retry: error: <what>: <the bad value>; <how to fix>`

/// Asserts that `args` is a usage error of one line in the house style that names `bad` and
/// leaks none of `hidden`.
fn assert_one_line_error(args: &[&str], bad: &str, hidden: &[&str]) -> String {
    let dir = TempDir::new().expect("temp dir");
    let (mark, cmd) = marker(&dir);
    let mut all: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    all.push("--".into());
    all.extend(cmd);
    let r = run(&all);
    assert_eq!(r.code(), Some(125), "{args:?}: {}", r.show());
    assert!(!mark.exists(), "{args:?}: the command ran");
    let err = r.stderr();
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 1, "{args:?}: one line: {err}");
    let line = lines[0];
    assert!(line.starts_with("retry: error: "), "{args:?}: {line}");
    assert!(
        line.contains(&format!(": {bad}; ")),
        "{args:?}: names {bad:?}: {line}"
    );
    for h in hidden {
        assert!(!line.contains(h), "{args:?}: leaks {h:?}: {line}");
    }
    line.to_string()
}

#[test]
fn parser_errors_have_the_prefix_name_the_value_and_leak_no_internals() {
    assert_one_line_error(&["-n", "0"], "0", &["4294967295", "1..="]);
    assert_one_line_error(&["-d", "abc"], "abc", &["expected number", "at 0"]);
    assert_one_line_error(&["-d", "5parsecs"], "5parsecs", &["nsec", "usec", "msec"]);
    assert_one_line_error(&["--seed", "lucky"], "lucky", &["invalid digit"]);
    assert_one_line_error(&["--factor", "twice"], "twice", &["float"]);
    assert_one_line_error(&["--backoff", "quadratic"], "quadratic", &["[possible"]);
    assert_one_line_error(&["--retry-on", "1,abc"], "abc", &[]);
    assert_one_line_error(&["--frobnicate"], "--frobnicate", &["Usage:", "tip:"]);
    assert_one_line_error(
        &["--attempts", "3", "--retries", "2"],
        "--attempts and --retries",
        &["Usage:"],
    );
}

#[test]
fn flags_spelled_as_other_tools_spell_them_suggest_retrys_own() {
    let line = assert_one_line_error(&["--timeout", "5s"], "--timeout", &["--hook-timeout"]);
    assert!(
        line.contains("--attempt-timeout") && line.contains("--max-time"),
        "{line}"
    );
    let line = assert_one_line_error(&["--retry", "2"], "--retry", &["--on-retry"]);
    assert!(line.contains("--retries"), "{line}");
}

// ---------------------------------------------------------------------------------------------
// Zero as "no limit"

#[test]
fn max_time_and_attempt_timeout_of_zero_mean_no_limit_as_in_timeout() {
    let r = run_sh(
        &[
            "--max-time",
            "0",
            "--attempt-timeout",
            "0",
            "-n",
            "2",
            "-d",
            "0",
        ],
        "echo run; exit 1",
    );
    assert_eq!(r.code(), Some(1), "{}", r.show());
    assert_eq!(r.lines(), ["run"; 2], "{}", r.show());
    let text = explain(&["--max-time", "0", "--attempt-timeout", "0"]);
    assert!(row(&text, "max-time").contains("none"), "{text}");
    assert!(row(&text, "attempt-timeout").contains("none"), "{text}");
}

// ---------------------------------------------------------------------------------------------
// Logs a new user reads

#[test]
fn the_last_attempt_is_not_called_retryable() {
    let r = run_sh(&["-n", "2", "-d", "0"], "exit 1");
    let log = r.log();
    assert!(log[0].contains("(retryable)"), "{}", r.show());
    assert!(
        log[1].starts_with("retry: attempt 2/2 failed"),
        "{}",
        r.show()
    );
    assert!(!log[1].contains("retryable"), "{}", r.show());
}

#[test]
fn log_file_lines_start_with_a_local_timestamp_and_the_give_up_names_the_command() {
    let dir = TempDir::new().expect("temp dir");
    let file = dir.path().join("retry.log");
    let mut cmd = retry();
    // POSIX TZ: three hours east of UTC.
    cmd.env("TZ", "XYZ-3").args([
        OsStr::new("-n"),
        OsStr::new("2"),
        OsStr::new("-d"),
        OsStr::new("0"),
        OsStr::new("--log-file"),
        file.as_os_str(),
        OsStr::new("--"),
        OsStr::new("sh"),
        OsStr::new("-c"),
        OsStr::new("exit 4"),
    ]);
    let r = run_cmd(cmd);
    assert_eq!(r.code(), Some(4), "{}", r.show());
    let log = std::fs::read_to_string(&file).expect("log file");
    let lines: Vec<&str> = log.lines().collect();
    assert_eq!(lines.len(), 3, "{log}");
    for line in &lines {
        let (stamp, rest) = line.split_once(' ').expect("a timestamp, then the line");
        assert!(rest.starts_with("retry: "), "{line}");
        assert!(stamp.ends_with("+03:00"), "the local offset: {line}");
        assert!(
            humantime::parse_rfc3339_weak(&stamp[..stamp.len() - 6]).is_ok(),
            "{line}"
        );
        assert_eq!(stamp.as_bytes()[10], b'T', "{line}");
    }
    assert!(
        lines[2].contains("giving up") && lines[2].contains("sh -c 'exit 4'"),
        "{log}"
    );
}

// ---------------------------------------------------------------------------------------------
// JSON log events

#[test]
fn json_log_gives_a_failing_hook_its_own_event() {
    let r = run_json(&["-n", "2", "-d", "0", "--on-retry", "exit 3"], "exit 1");
    let events = r.json();
    assert!(
        events.iter().all(|e| e["event"] != "signal"),
        "{}",
        r.show()
    );
    let hook = events
        .iter()
        .find(|e| e["event"] == "hook")
        .unwrap_or_else(|| panic!("no hook event: {}", r.show()));
    assert_eq!(hook["status"], 3, "{hook}");
    assert!(
        hook["reason"]
            .as_str()
            .is_some_and(|s| s.contains("--on-retry")),
        "{hook}"
    );
}

#[test]
fn json_log_of_a_success_has_its_status_and_duration() {
    let r = run_json(&["-n", "3", "-d", "0"], r#"[ "$RETRY_ATTEMPT" = 2 ]"#);
    let success = r
        .json()
        .into_iter()
        .find(|e| e["event"] == "success")
        .unwrap_or_else(|| panic!("no success event: {}", r.show()));
    assert_eq!(success["status"], 0, "{success}");
    assert!(success["duration_ms"].is_u64(), "{success}");
}

#[test]
fn json_log_with_verbose_has_the_policy_in_fields() {
    let r = run_json(
        &[
            "-v",
            "-n",
            "2",
            "-d",
            "250ms",
            "--max-delay",
            "3s",
            "--fatal-on",
            "9",
        ],
        "exit 9",
    );
    let policy = r
        .json()
        .into_iter()
        .find(|e| e["event"] == "policy")
        .unwrap_or_else(|| panic!("no policy event: {}", r.show()));
    let p = &policy["policy"];
    assert_eq!(p["attempts"], 2, "{policy}");
    assert_eq!(p["delay_ms"], 250, "{policy}");
    assert_eq!(p["max_delay_ms"], 3000, "{policy}");
    assert_eq!(p["backoff"], "exponential", "{policy}");
    assert!(
        p["fatal_on"].as_str().is_some_and(|s| s.contains('9')),
        "{policy}"
    );
}

#[test]
fn the_readme_documents_every_json_event_and_field() {
    let readme = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md"))
        .expect("README.md");
    let r = run_json(
        &[
            "-v",
            "-n",
            "3",
            "-d",
            "0",
            "--on-retry",
            "exit 3",
            "--on-giveup",
            "exit 4",
        ],
        r#"[ "$RETRY_ATTEMPT" = 9 ]"#,
    );
    let ok = run_json(&["-n", "2", "-d", "0"], r#"[ "$RETRY_ATTEMPT" = 2 ]"#);
    let mut names = std::collections::BTreeSet::new();
    for e in r.json().iter().chain(&ok.json()) {
        names.insert(e["event"].as_str().expect("an event name").to_string());
        for (field, value) in e.as_object().expect("an object") {
            names.insert(field.clone());
            if let Some(inner) = value.as_object() {
                names.extend(inner.keys().cloned());
            }
        }
    }
    for name in names {
        assert!(
            readme.contains(&format!("| `{name}` |")),
            "README has no table row for `{name}`"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// A retry inside a retry

/// retry as the command of an outer `retry -n OUTER` would start it.
fn nested(outer: &str, args: &[&str]) -> Run {
    let mut cmd = retry();
    cmd.env("RETRY_DEPTH", "1")
        .env("RETRY_MAX_ATTEMPTS", outer)
        .args(args);
    run_cmd(cmd)
}

#[test]
fn a_nested_retry_warns_once_that_attempts_multiply_and_says_its_level() {
    let r = nested("3", &["-n", "3", "-d", "0", "--", "false"]);
    assert_eq!(r.code(), Some(1), "{}", r.show());
    let log = r.log();
    let warned: Vec<&String> = log.iter().filter(|l| l.contains("multiply")).collect();
    assert_eq!(warned.len(), 1, "{}", r.show());
    assert!(warned[0].contains("3 × 3 = 9"), "{}", r.show());
    assert!(
        log.iter().all(|l| l.starts_with("retry: level 2: ")),
        "{}",
        r.show()
    );
    let quiet = nested("3", &["-q", "-n", "3", "-d", "0", "--", "false"]);
    assert!(
        quiet.log().iter().all(|l| !l.contains("multiply")),
        "{}",
        quiet.show()
    );
    let unlimited = nested("", &["-n", "2", "-d", "0", "--", "false"]);
    assert!(
        unlimited.stderr().contains("multiply"),
        "{}",
        unlimited.show()
    );
}

#[test]
fn explain_shows_that_a_nested_retry_multiplies_attempts() {
    let r = nested("4", &["--explain", "-n", "2"]);
    assert_eq!(r.code(), Some(0), "{}", r.show());
    let w = warnings(&r.stdout());
    assert!(w.iter().any(|l| l.contains("4 × 2 = 8")), "{}", r.show());
}

#[test]
fn a_top_level_retry_does_not_warn_about_nesting() {
    let r = run_sh(&["-n", "2", "-d", "0"], "exit 1");
    assert!(
        r.log()
            .iter()
            .all(|l| !l.contains("multiply") && !l.contains("level")),
        "{}",
        r.show()
    );
}
