//! An attempt that runs too long: `--attempt-timeout`, the deadline of `--max-time`
//! during an attempt, `--kill-signal` and `--kill-after`, and zero as "no limit".

use super::*;

#[test]
fn attempt_timeout_ends_an_attempt_with_124_and_retries_it() {
    let r = run_sh(
        &["--attempt-timeout", "200ms", "-n", "3", "-d", "0"],
        r#"echo "attempt $RETRY_ATTEMPT previous $RETRY_PREVIOUS_EXIT"; exec sleep 10"#,
    );
    r.assert().code(124);
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
    r.assert().code(0);
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
    r.assert().code(124);
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
    r.assert().code(124);
    assert!(r.took < Duration::from_secs(5), "{}", r.show());
    let give_up = r.log().last().cloned().unwrap_or_default();
    assert!(give_up.contains("--max-time"), "{}", r.show());
}

#[test]
fn the_give_up_line_of_a_timed_out_attempt_names_status_124() {
    // The attempt counts as 124 and retry exits 124: the log says so too.
    let r = run(&["-n", "1", "--attempt-timeout", "100ms", "--", "sleep", "10"]);
    r.assert().code(124);
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
    r.assert().code(124);
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
    r.assert().code(124);
    assert_eq!(r.lines(), ["got INT"], "{}", r.show());
}

#[test]
fn the_default_kill_signal_is_term() {
    let script = r#"trap 'echo got INT; exit 7' INT; trap 'echo got TERM; exit 7' TERM
        while :; do sleep 0.05; done"#;
    let r = run_sh(&["--attempt-timeout", "200ms", "-n", "1"], script);
    r.assert().code(124);
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
    r.assert().code(124);
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
    r.assert().code(0);
}

#[test]
fn a_bad_kill_signal_is_a_usage_error() {
    assert_usage_error(
        &["--kill-signal", "SIGBOGUS"],
        str![[r#"
retry: error: not a signal for --kill-signal: SIGBOGUS; give a name or a number, as TERM, SIGINT or 9

"#]],
    );
}

#[test]
fn a_bad_kill_after_is_a_usage_error() {
    assert_usage_error(
        &["--kill-after", "soonish"],
        str![[r#"
retry: error: not a duration for --kill-after: soonish; write 250ms, 1.5s, 2m or 1h 30m; a bare number means seconds

"#]],
    );
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
    r.assert().code(1);
    assert_eq!(r.lines(), ["run"; 2], "{}", r.show());
    let text = explain(&["--max-time", "0", "--attempt-timeout", "0"]);
    assert!(row(&text, "max-time").contains("none"), "{text}");
    assert!(row(&text, "attempt-timeout").contains("none"), "{text}");
}
