//! retry's logs: stdout left to the command, the text and JSON log lines, `-v`, `-q`
//! and `--log-file`.

use super::*;

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
    r.assert().code(0);
    assert_output(
        r.stderr(),
        str![[r#"
retry: attempt 1/3 failed: exit status 7 after [ELAPSED] (retryable); retrying in 20ms
retry: attempt 2/3 failed: exit status 7 after [ELAPSED] (retryable); retrying in 40ms
retry: attempt 3/3 succeeded after 2 attempts failed; [ELAPSED] in all; command: sh -c '[ "$RETRY_ATTEMPT" -ge 3 ] || exit 7'

"#]],
    );
}

#[test]
fn a_fatal_failure_logs_why_it_is_not_retried_and_gives_up() {
    let r = run_sh(&["--fatal-on", "9", "-d", "0"], "exit 9");
    assert_output(
        r.stderr(),
        str![[r#"
retry: attempt 1/5 failed: exit status 9 after [ELAPSED] (fatal: in --fatal-on)
retry: giving up after 1 attempt in [ELAPSED]: status 9 is fatal: in --fatal-on; command: sh -c 'exit 9'

"#]],
    );
}

#[test]
fn a_killed_attempt_is_logged_with_its_signal() {
    let r = run_sh(&["-n", "2", "-d", "0"], "kill -KILL $$");
    assert_output(
        r.stderr(),
        str![[r#"
retry: attempt 1/2 failed: killed by SIGKILL (status 137) after [ELAPSED] (retryable); retrying in 0ms
retry: attempt 2/2 failed: killed by SIGKILL (status 137) after [ELAPSED] (not retried: attempts used up)
retry: giving up after 2 attempts in [ELAPSED]: attempts used up; last killed by SIGKILL (status 137); retry ends by SIGKILL too, as the command did; command: sh -c 'kill -KILL $$'

"#]],
    );
}

#[test]
fn the_give_up_line_says_why_how_many_attempts_and_how_long() {
    let r = run_sh(&["-n", "3", "-d", "0"], "exit 1");
    // "... after 3 attempts in 12ms: ...": the total time, as a duration.
    let last = r.log().last().cloned().unwrap_or_default();
    let total = last
        .split(" in ")
        .nth(1)
        .and_then(|rest| rest.split(':').next())
        .unwrap_or_else(|| panic!("no total time: {last}"));
    assert!(humantime::parse_duration(total).is_ok(), "{last}");
    assert_output(
        r.stderr(),
        str![[r#"
retry: attempt 1/3 failed: exit status 1 after [ELAPSED] (retryable); retrying in 0ms
retry: attempt 2/3 failed: exit status 1 after [ELAPSED] (retryable); retrying in 0ms
retry: attempt 3/3 failed: exit status 1 after [ELAPSED] (not retried: attempts used up)
retry: giving up after 3 attempts in [ELAPSED]: attempts used up; last exit status 1; command: sh -c 'exit 1'

"#]],
    );
}

#[test]
fn verbose_adds_the_policy_and_each_start() {
    let r = run_sh(&["-v", "-n", "2", "-d", "0"], "exit 1");
    // With -v every line begins with the time.
    assert_output(
        r.stderr(),
        str![[r#"
[TIME] retry: policy: attempts=2 backoff=exponential (factor 2) delay=0ms max-delay=1m jitter=full max-time=none attempt-timeout=none success-on=0 retry-on=any fatal-on=126,127
[TIME] retry: attempt 1/2: starting
[TIME] retry: attempt 1/2 failed: exit status 1 after [ELAPSED] (retryable); retrying in 0ms
[TIME] retry: attempt 2/2: starting
[TIME] retry: attempt 2/2 failed: exit status 1 after [ELAPSED] (not retried: attempts used up)
[TIME] retry: giving up after 2 attempts in [ELAPSED]: attempts used up; last exit status 1; command: sh -c 'exit 1'

"#]],
    );
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
    // The child's stderr stays.
    assert_output(
        r.stderr(),
        str![[r#"
err
err
err
retry: giving up after 3 attempts in [ELAPSED]: attempts used up; last exit status 1; command: sh -c 'echo err >&2; exit 1'

"#]],
    );
    let r = run_sh(&["-q", "-n", "3", "-d", "0"], r#"[ "$RETRY_ATTEMPT" = 2 ]"#);
    r.assert().code(0);
    assert_eq!(r.stderr(), "", "no give-up, no line: {}", r.show());
}

#[test]
fn double_quiet_prints_nothing() {
    for args in [&["-qq"][..], &["-q", "-q"][..], &["--quiet", "--quiet"][..]] {
        let mut all = args.to_vec();
        all.extend(["-n", "2", "-d", "0"]);
        let r = run_sh(&all, "exit 1");
        r.assert().code(1);
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
    let r = run_sh(
        &[
            "--log-file",
            path.to_str().expect("UTF-8"),
            "-v",
            "-n",
            "2",
            "-d",
            "0",
        ],
        "echo child-err >&2; echo child-out; exit 1",
    );
    r.assert().code(1);
    assert_eq!(r.stderr(), "child-err\nchild-err\n", "{}", r.show());
    assert_eq!(r.stdout(), "child-out\nchild-out\n", "{}", r.show());
    // Each line after its local time.
    let log = std::fs::read_to_string(&path).expect("the log file");
    assert_output(
        log,
        str![[r#"
[TIME] retry: policy: attempts=2 backoff=exponential (factor 2) delay=0ms max-delay=1m jitter=full max-time=none attempt-timeout=none success-on=0 retry-on=any fatal-on=126,127
[TIME] retry: attempt 1/2: starting
[TIME] retry: attempt 1/2 failed: exit status 1 after [ELAPSED] (retryable); retrying in 0ms
[TIME] retry: attempt 2/2: starting
[TIME] retry: attempt 2/2 failed: exit status 1 after [ELAPSED] (not retried: attempts used up)
[TIME] retry: giving up after 2 attempts in [ELAPSED]: attempts used up; last exit status 1; command: sh -c 'echo child-err >&2; echo child-out; exit 1'

"#]],
    );
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
    r.assert().code(1);
    assert_eq!(r.stderr(), "", "{}", r.show());
    let events = json_lines(&std::fs::read_to_string(&path).expect("log file"));
    assert_eq!(events.len(), 3, "{events:?}");
    assert_eq!(events[2]["event"], "give_up");
}

/// A log file answers "did the 14:36 run happen?": a run that succeeds at once leaves its
/// line there (not on stderr, where a first-try success stays silent), under -q too; -qq
/// asks for nothing.
#[test]
fn a_log_file_records_a_run_that_succeeds_at_once() {
    let dir = TempDir::new().expect("temp dir");
    let path = dir.path().join("cron.log");
    let file = path.to_str().expect("UTF-8");
    for quiet in [&[][..], &["-q"]] {
        let mut args = quiet.to_vec();
        args.extend(["--log-file", file, "--", "true"]);
        let r = run(&args);
        r.assert().code(0);
        assert_eq!(r.stderr(), "", "{}", r.show());
    }
    let log = std::fs::read_to_string(&path).expect("the log file");
    let lines: Vec<&str> = log.lines().collect();
    assert_eq!(lines.len(), 2, "{log}");
    for line in &lines {
        let (time, said) = line.split_once(' ').expect("a stamped line");
        assert!(is_local_time(time), "{line}");
        assert!(
            said.starts_with("retry: attempt 1/5 succeeded in ")
                && said.ends_with("; command: true"),
            "{line}"
        );
    }
    let r = run(&["-qq", "--log-file", file, "--", "true"]);
    r.assert().code(0);
    assert_eq!(
        std::fs::read_to_string(&path).expect("log").lines().count(),
        2
    );
    // JSON lines too, and with --output-on-failure, which prints nothing for a success.
    let json = dir.path().join("cron.jsonl");
    let json_file = json.to_str().expect("UTF-8");
    let r = run(&[
        "--output-on-failure",
        "--log-format",
        "json",
        "--log-file",
        json_file,
        "--",
        "true",
    ]);
    r.assert().code(0);
    assert_eq!((r.stdout(), r.stderr()), (String::new(), String::new()));
    let events = json_lines(&std::fs::read_to_string(&json).expect("log file"));
    assert_eq!(events.len(), 1, "{events:?}");
    assert_eq!(events[0]["event"], "success");
    assert_eq!(events[0]["attempt"], 1);
    // Without a log file, a first-try success says nothing, as before.
    let r = run(&["--", "true"]);
    assert_eq!(r.stderr(), "", "{}", r.show());
}

#[test]
fn a_log_file_that_cannot_be_opened_is_one_warning_and_the_job_runs_logging_to_stderr() {
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
    r.assert().code(0);
    assert!(mark.exists(), "the command ran: {}", r.show());
    let warned: Vec<String> = r
        .log()
        .into_iter()
        .filter(|l| l.starts_with("retry: warning: cannot open --log-file"))
        .collect();
    assert_eq!(warned.len(), 1, "{}", r.show());
    assert!(
        warned[0].contains(&log.display().to_string()) && warned[0].contains("No such file"),
        "names the path and the reason: {}",
        r.show()
    );
    // The log itself goes to stderr instead.
    let failing = run(&[
        "--log-file",
        &log.display().to_string(),
        "-n",
        "2",
        "-d",
        "0",
        "--",
        "false",
    ]);
    failing.assert().code(1);
    failing
        .assert()
        .stderr(predicate::str::contains("giving up after 2 attempts"));
}

/// A FIFO that no process reads would block the open for ever: it is refused at once, as any
/// log file that cannot be opened is, and the command runs.
#[test]
fn a_log_file_that_is_a_fifo_nobody_reads_is_a_warning_and_never_hangs_the_job() {
    let dir = TempDir::new().expect("temp dir");
    let (mark, cmd) = marker(&dir);
    let fifo = dir.path().join("log.fifo");
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o600)).expect("mkfifo");
    let mut args = vec![
        "--log-file".to_string(),
        fifo.display().to_string(),
        "--".into(),
    ];
    args.extend(cmd);
    // run() gives up within the tests' patience: a hang fails, it does not stall the suite.
    let r = run(&args);
    r.assert().code(0);
    assert!(mark.exists(), "the command ran: {}", r.show());
    let warning = format!(
        "retry: warning: cannot open --log-file '{}': it is a FIFO that no process reads; \
         logging to stderr instead",
        fifo.display()
    );
    assert!(r.log().contains(&warning), "{}", r.show());
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
    let r = cmd.run();
    r.assert().code(4);
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
fn the_guide_documents_every_json_event_and_field() {
    let readme =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/logs.md"))
            .expect("docs/logs.md");
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

#[test]
fn a_breaker_open_time_past_its_longest_is_warned_of_once_and_changes_nothing() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let state = dir.path().to_str().expect("a UTF-8 path");
    let keyed = ["--key", "api", "--state-dir", state];
    let r = run_sh(&[&keyed[..], &["--breaker-open", "1h"]].concat(), "exit 0");
    r.assert().code(0);
    let warned: Vec<String> = r
        .log()
        .into_iter()
        .filter(|l| l.contains("--breaker-open 1h is longer than --breaker-open-max 15m"))
        .collect();
    assert_eq!(warned.len(), 1, "{}", r.show());
    assert!(warned[0].contains("stays open 15m at most"), "{}", r.show());
    // Within the longest, or with the breaker off, there is nothing to say.
    for args in [
        &["--breaker-open", "10m"][..],
        &["--breaker-open", "1h", "--breaker-failures", "0"],
    ] {
        let r = run_sh(&[&keyed[..], args].concat(), "exit 0");
        assert!(r.log().is_empty(), "{args:?}: {}", r.show());
    }
}

#[test]
fn success_lines_name_the_job_and_a_first_try_success_is_said_with_v_only() {
    let dir = TempDir::new().expect("temp dir");
    let flag = dir.path().join("flag").display().to_string();
    let script = format!("[ -e {flag} ] || {{ touch {flag}; exit 1; }}");
    let r = run_sh(&["-d", "0"], &script);
    r.assert().code(0);
    let last = r.log().last().cloned().unwrap_or_default();
    assert!(
        last.contains("attempt 2/5 succeeded")
            && last.ends_with(&format!("; command: sh -c '{script}'")),
        "{}",
        r.show()
    );
    // --name names the job, on the success line as on the give-up line.
    std::fs::remove_file(&flag).expect("remove flag");
    let r = run_sh(&["-d", "0", "--name", "nightly"], &script);
    let last = r.log().last().cloned().unwrap_or_default();
    assert!(last.contains("; job nightly: sh -c"), "{}", r.show());
    let r = run_sh(&["-n", "1", "--name", "nightly"], "exit 3");
    let last = r.log().last().cloned().unwrap_or_default();
    assert!(
        last.contains("giving up") && last.contains("; job nightly: sh -c"),
        "{}",
        r.show()
    );
    // A first-try success says nothing by default, one line with -v.
    let r = run(&["--", "true"]);
    assert!(r.stderr().is_empty(), "{}", r.show());
    let r = run(&["-v", "--", "true"]);
    let last = r.log().last().cloned().unwrap_or_default();
    assert!(
        last.contains("attempt 1/5 succeeded in") && last.ends_with("; command: true"),
        "{}",
        r.show()
    );
}

#[test]
fn log_time_stamps_text_lines_on_stderr_and_json_is_left_alone() {
    let r = run(&["--log-time", "-n", "1", "--", "false"]);
    let lines: Vec<&str> = r
        .out
        .stderr
        .split(|b| *b == b'\n')
        .filter(|l| !l.is_empty())
        .map(|l| std::str::from_utf8(l).expect("utf-8"))
        .collect();
    assert_eq!(lines.len(), 2, "{}", r.show());
    for line in lines {
        let (time, rest) = line.split_once(' ').expect("a time and a line");
        assert!(is_local_time(time) && rest.starts_with("retry: "), "{line}");
    }
    let r = run(&["-n", "1", "--", "false"]);
    assert!(
        r.stderr().starts_with("retry: "),
        "no time by default: {}",
        r.show()
    );
    let r = run(&[
        "--log-time",
        "--log-format",
        "json",
        "-n",
        "1",
        "--",
        "false",
    ]);
    assert_eq!(r.json().len(), 2, "{}", r.show());
}

/// What looks like a credential in the command (a URL's password, curl's `-u USER:PASSWORD`,
/// an `Authorization` header, a `*_TOKEN=` variable) is `***` wherever retry shows the
/// command (the give-up line, the JSON log, `--explain`); the command gets it unchanged.
#[test]
fn credentials_in_the_command_are_masked_in_the_log_and_reach_the_command() {
    let secrets = ["hunter2", "s3cr3t", "t0ken", "ghp_abc"];
    let command = [
        "sh",
        "-c",
        r#"printf '%s\n' "$@"; exit 3"#,
        "sh",
        "-u",
        "ann:hunter2",
        "https://bob:s3cr3t@example.com/x?access_token=t0ken&page=2",
        "-H",
        "Authorization: Bearer ghp_abc",
        "GITHUB_TOKEN=ghp_abc",
    ];
    for format in ["text", "json"] {
        let mut args = vec!["-n", "1", "--log-format", format, "--"];
        args.extend(command);
        let r = run(&args);
        r.assert().code(3);
        // The command had every argument as given.
        assert_eq!(
            r.stdout(),
            command[4..].join("\n") + "\n",
            "{format}: {}",
            r.show()
        );
        let log = r.stderr();
        for secret in secrets {
            assert!(!log.contains(secret), "{format}: {secret} shown: {log}");
        }
        for masked in [
            "ann:***",
            "https://bob:***@example.com/x?access_token=***&page=2",
            "Authorization: ***",
            "GITHUB_TOKEN=***",
        ] {
            assert!(log.contains(masked), "{format}: no {masked:?} in {log}");
        }
    }
    let mut args = vec![
        "--explain",
        "--on-giveup",
        "curl -fsS -u ann:hunter2 https://h/",
        "--",
    ];
    args.extend(command);
    let explained = run(&args);
    explained.assert().code(0);
    let text = explained.stdout();
    assert!(text.contains("ann:***"), "{text}");
    assert!(
        text.contains("sh -c 'curl -fsS -u ann:*** https://h/'"),
        "the hook's line: {text}"
    );
    for secret in secrets {
        assert!(!text.contains(secret), "{secret} shown: {text}");
    }
}
