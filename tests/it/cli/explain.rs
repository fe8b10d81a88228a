//! `--explain`: the resolved policy, the schedule, the totals and the warnings, with
//! nothing run.

use super::*;

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
    r.assert().code(0);
    assert!(!mark.exists(), "the command ran");
    r.assert().stdout(predicate::str::contains("Schedule"));
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
    r.assert().code(0);
    let r = run(&["--explain", "--", "retry-test-no-such-command-zz9"]);
    r.assert().code(0);
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
    // The rows the flags set and the schedule they give; every row of the defaults is in
    // explain_shows_the_whole_effective_policy_with_where_each_value_came_from.
    assert_output(
        text,
        str![[r#"
Policy (where each value came from in brackets)
  command          (none given)
  attempts         4 (3 retries)  (flag)
...
  delay            250ms  (flag)
...
  success-on       0,3  (flag)
  retry-on         1,75  (flag)
  fatal-on         126,127,137  (flag)
...
  name             retry  (no command given: retry's own)

Schedule (the wait before each retry)
  retry         min         max
  1             0ms       250ms
  2             0ms       500ms
  3             0ms          1s

  waiting in all: at most 1.75s, expected about 884ms
  the time the attempts themselves take comes on top

"#]],
    );
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

/// `--seed` promises the same schedule from one release to the next: the whole explanation of
/// a seeded policy, its delays to the millisecond, stays as it is. A change of generator fails
/// here (issue 48: rand's standard generator may change in any release of rand).
#[test]
fn explain_with_a_seed_shows_the_same_schedule_in_every_release() {
    assert_output(
        explain(&[
            "-n", "6", "-d", "1s", "--seed", "99", "--", "curl", "-f", "URL",
        ]),
        str![[r#"
Policy (where each value came from in brackets)
  command          curl -f URL
  attempts         6 (5 retries)  (flag)
  reset-after      none  (default)
  max-time         none  (default)
  attempt-timeout  none  (default)
  backoff          exponential (factor 2)  (default)
  delay            1s  (flag)
  max-delay        1m  (default)
  jitter           full  (default)
  seed             99  (flag)
  success-on       0  (default)
  retry-on         every other failure  (default)
  fatal-on         126,127  (default)
  retry-if-output  none  (default)
  fatal-if-output  none  (default)
  on timeout       SIGTERM, then SIGKILL after 10s  (default)
  stop-with-parent no  (default)
  hints            off: no HTTP status or Retry-After is known  (default)
  retry-on-http    408,425,429,500,502-504  (default)
  fatal-on-http    every other 4xx  (default)
  retry-after-max  5m  (default)
  stdin            auto  (default)
  stdout           pass  (default)
  held output      none: the command's output passes as it comes  (default)
  log              text to stderr, a line per failure  (default)
  on-retry         none  (default)
  on-giveup        none  (default)
  hook-timeout     30s  (default)
  summary          none  (default)
  metrics          none  (default)
  name             curl  (the command's name)

Schedule (the wait before each retry)
  retry         min         max   delay with --seed 99
  1             0ms          1s   640ms
  2             0ms          2s   1.7s
  3             0ms          4s   1.39s
  4             0ms          8s   6.21s
  5             0ms         16s   11.03s

  waiting in all: at most 31s, expected about 15.51s
  the time the attempts themselves take comes on top

"#]],
    );
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
    // ±0% is no jitter at all: the same lockstep risk as --jitter none.
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
    r.assert().code(125);
    r.assert().stderr(predicate::str::contains("0.5"));
}

#[test]
fn explain_prints_to_stdout_only() {
    let r = run(&["--explain", "--jitter", "none", "--forever"]);
    r.assert().code(0);
    r.assert().stdout(predicate::str::contains("Warnings"));
    assert_eq!(r.stderr(), "");
}

#[test]
fn a_duration_too_long_to_hold_says_so() {
    let out = run(&["-d", "18446744073709551616", "--", "true"]);
    let stderr = out.stderr();
    out.assert().code(125);
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
            "5000h",
            "--max-delay",
            "8000h",
            "-j",
            "none",
        ])
        .run();
    let text = out.stdout();
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

#[test]
fn explain_shows_the_whole_effective_policy_with_where_each_value_came_from() {
    let dir = TempDir::new().expect("temp dir");
    let log = dir.path().join("log").display().to_string();
    let text = explain(&[
        "--retry-after-max",
        "2m",
        "--stdin",
        "null",
        "--stdout",
        "hold",
        "--log-format",
        "json",
        "--log-file",
        &log,
        "--on-retry",
        "echo again",
        "--summary",
        "/tmp/s.json",
        "--name",
        "health",
        "--fatal-on-http",
        "404",
        "--",
        "curl",
        "-D",
        "{hints}",
        "https://example.com",
    ]);
    for (name, value) in [
        (
            "hints",
            "(RETRY_HINT_FILE, {hints})  ({hints} in the command)",
        ),
        ("retry-on-http", "408,425,429,500,502-504  (default)"),
        ("fatal-on-http", "404  (flag)"),
        ("retry-after-max", "2m  (flag)"),
        ("stdin", "null  (flag)"),
        ("stdout", "hold  (flag)"),
        ("log", &format!("json to {log}, a line per failure  (flag)")),
        ("on-retry", "sh -c 'echo again'  (flag)"),
        ("on-giveup", "none  (default)"),
        ("summary", "/tmp/s.json  (flag)"),
        ("metrics", "none  (default)"),
        ("name", "health  (flag)"),
        ("held output", "retried attempts' goes to stderr  (flag)"),
    ] {
        let row = row(&text, name);
        assert!(row.ends_with(value), "{name}: {row:?} in\n{text}");
    }
    // Nothing given: every row says it is the default, the hints' too (it said "flag", the
    // command being given).
    assert_output(
        explain(&["--", "true"]),
        str![[r#"
Policy (where each value came from in brackets)
  command          true
  attempts         5 (4 retries)  (default)
  reset-after      none  (default)
  max-time         none  (default)
  attempt-timeout  none  (default)
  backoff          exponential (factor 2)  (default)
  delay            1s  (default)
  max-delay        1m  (default)
  jitter           full  (default)
  seed             random  (default)
  success-on       0  (default)
  retry-on         every other failure  (default)
  fatal-on         126,127  (default)
  retry-if-output  none  (default)
  fatal-if-output  none  (default)
  on timeout       SIGTERM, then SIGKILL after 10s  (default)
  stop-with-parent no  (default)
  hints            off: no HTTP status or Retry-After is known  (default)
  retry-on-http    408,425,429,500,502-504  (default)
  fatal-on-http    every other 4xx  (default)
  retry-after-max  5m  (default)
  stdin            auto  (default)
  stdout           pass  (default)
  held output      none: the command's output passes as it comes  (default)
  log              text to stderr, a line per failure  (default)
  on-retry         none  (default)
  on-giveup        none  (default)
  hook-timeout     30s  (default)
  summary          none  (default)
  metrics          none  (default)
  name             true  (the command's name)

Schedule (the wait before each retry)
  retry         min         max
  1             0ms          1s
  2             0ms          2s
  3             0ms          4s
  4             0ms          8s

  waiting in all: at most 15s, expected about 7.52s
  the time the attempts themselves take comes on top

"#]],
    );
}

/// A preset's lists are the preset's (they were marked as flags), joined to the user's own
/// where they add up; --output-on-failure's held output is shown.
#[test]
fn explain_says_a_presets_lists_come_from_the_preset() {
    let text = explain(&["--preset", "curl", "--fatal-on", "7", "--", "curl", "URL"]);
    assert!(
        row(&text, "retry-on").ends_with("  (preset curl)"),
        "{text}"
    );
    assert!(
        row(&text, "fatal-on").ends_with("  (flag, and preset curl)"),
        "{text}"
    );
    assert!(
        row(&text, "retry-if-output").ends_with("none  (default)"),
        "{text}"
    );
    let text = explain(&["--preset", "curl", "--retry-on", "7", "--", "curl", "URL"]);
    assert!(row(&text, "retry-on").ends_with("7  (flag)"), "{text}");
    let text = explain(&["--output-on-failure", "--", "true"]);
    assert!(
        row(&text, "held output").contains("all of it (--output-on-failure)"),
        "{text}"
    );
    assert!(row(&text, "held output").ends_with("(flag)"), "{text}");
    let text = explain(&["-d", "2m", "--", "true"]);
    assert!(
        row(&text, "max-delay").ends_with("2m  (default, raised to the longest delay asked for)"),
        "{text}"
    );
}

#[test]
fn a_status_in_both_lists_is_warned_of_fatal_wins() {
    let text = explain(&["--retry-on", "1-5,22", "--fatal-on", "22", "--", "x"]);
    let w = warnings(&text);
    assert!(
        w.iter()
            .any(|l| l.contains("22 in both --retry-on and --fatal-on: fatal wins")),
        "{text}"
    );
    let text = explain(&[
        "--retry-on-http",
        "503",
        "--fatal-on-http",
        "503,404",
        "--",
        "x",
    ]);
    assert!(
        warnings(&text)
            .iter()
            .any(|l| l.contains("HTTP 503 in both")),
        "{text}"
    );
    let text = explain(&["--retry-on", "1-5", "--fatal-on", "22", "--", "x"]);
    assert!(!text.contains("in both"), "{text}");
}

/// A CI job's `RETRY_STOP_WITH_PARENT` is not on the command line: `--explain` says whether
/// the run stops with its parent, and where that came from.
#[test]
fn explain_says_whether_the_run_stops_with_its_parent_and_why() {
    let job = |value: &str, flags: &[&str]| {
        let out = support::retry()
            .env("RETRY_STOP_WITH_PARENT", value)
            .arg("--explain")
            .args(flags)
            .args(["--", "true"])
            .run();
        out.assert().code(0);
        out.stdout()
            .lines()
            .find(|l| l.trim_start().starts_with("stop-with-parent "))
            .unwrap_or_default()
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
    };
    assert_eq!(
        job("1", &[]),
        "stop-with-parent yes: the run ends when retry's parent does ($RETRY_STOP_WITH_PARENT)"
    );
    assert_eq!(
        job("1", &["--no-stop-with-parent"]),
        "stop-with-parent no (flag)"
    );
    assert_eq!(
        job("0", &[]),
        "stop-with-parent no ($RETRY_STOP_WITH_PARENT)"
    );
}
