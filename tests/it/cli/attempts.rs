//! When to stop: `--attempts` and `-n`, `--retries`, `--forever`, `--max-time`, and no
//! sleep after the last attempt.

use super::*;

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
    r.assert().code(1);
}

#[test]
fn the_default_is_five_attempts() {
    let r = run_sh(&["-d", "0"], "echo run; exit 1");
    assert_eq!(r.lines(), ["run"; 5], "{}", r.show());
    r.assert().code(1);
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
    r.assert().code(0);
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
    r.assert().code(4);
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
    r.assert().code(3);
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
    r.assert().code(124);
    assert!(r.took < Duration::from_secs(5), "{}", r.show());
    let log = r.log().join("\n");
    assert!(log.contains("--max-time"), "{}", r.show());
}

#[test]
fn max_time_accepts_humantime_durations() {
    let text = explain(&["--max-time", "1h 30m"]);
    assert!(row(&text, "max-time").contains("1h 30m"), "{text}");
    let text = explain(&["--max-time", "90"]);
    assert!(row(&text, "max-time").contains("1m 30s"), "{text}");
}

// ---------------------------------------------------------------------------------------------
// No sleep after the last attempt

/// Each attempt writes the time it started: the one delay lies between the two, and retry
/// ends sooner after the last attempt than a delay would take.
#[test]
fn there_is_no_sleep_after_the_last_attempt() {
    let dir = TempDir::new().expect("temp dir");
    let stamps = dir.path().join("stamps");
    // A delay of 2 s, so that the end of a run without one is told from a run with one on a
    // loaded machine, where the second attempt's end takes up to a second.
    let r = run_sh(
        &["-n", "2", "-d", "2s", "--jitter", "none"],
        &format!("date +%s%N >> '{}'; exit 1", stamps.display()),
    );
    let ended = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("after 1970");
    r.assert().code(1);
    let started: Vec<Duration> = std::fs::read_to_string(&stamps)
        .expect("the attempts' times")
        .lines()
        .map(|l| Duration::from_nanos(l.parse().expect("nanoseconds")))
        .collect();
    assert_eq!(started.len(), 2, "{}", r.show());
    assert!(
        started[1] - started[0] >= Duration::from_secs(2),
        "the one delay was slept: {started:?}"
    );
    assert!(
        ended - started[1] < Duration::from_secs(2),
        "no delay after the last attempt: it started {:?} before retry ended",
        ended - started[1]
    );
}

#[test]
fn a_single_attempt_returns_at_once_whatever_the_delay() {
    let r = run(&["-n", "1", "-d", "10s", "--jitter", "none", "--", "false"]);
    r.assert().code(1);
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
    r.assert().code(1);
    assert!(r.took < Duration::from_secs(5), "{}", r.show());
}

/// A worker that ran longer than --reset-after before it crashed starts afresh: the backoff's
/// first delay again, and the attempt limit counted from it; the attempt numbers go on.
#[test]
fn reset_after_gives_a_long_running_worker_a_fresh_start() {
    let script = r#"echo "attempt $RETRY_ATTEMPT of $RETRY_MAX_ATTEMPTS"
        case $RETRY_ATTEMPT in 1) exit 1;; 2) sleep 0.6; exit 1;; *) exit 0;; esac"#;
    let r = run_sh(
        &[
            "-n",
            "2",
            "-d",
            "10ms",
            "-j",
            "none",
            "--reset-after",
            "500ms",
        ],
        script,
    );
    r.assert().code(0);
    assert_eq!(
        r.lines(),
        ["attempt 1 of 2", "attempt 2 of 2", "attempt 3 of 3"],
        "{}",
        r.show()
    );
    let log = r.log();
    assert!(
        log.iter().any(|l| l.contains("attempt 2 ran")
            && l.contains("(--reset-after 500ms): the backoff starts afresh")),
        "{}",
        r.show()
    );
    // The delay after the long attempt is the first one again, not twice it.
    assert!(
        log.iter()
            .any(|l| l.contains("attempt 2/3 failed") && l.ends_with("retrying in 10ms")),
        "{}",
        r.show()
    );
    // Without it, -n 2 ends at attempt 2.
    let r = run_sh(&["-n", "2", "-d", "10ms", "-j", "none"], script);
    r.assert().code(1);
    assert_usage_error(
        &["--reset-after", "0"],
        str![[r#"
retry: error: not a length of time for --reset-after: 0; give a duration longer than 0, as 1m

"#]],
    );
}
