//! `--summary`: the JSON summary of a run, parsed back.

use super::*;

/// Runs retry with `--summary` into a fresh folder; the run and the parsed summary.
fn summarised(args: &[&str]) -> (Run, Value) {
    let dir = TempDir::new().expect("temp dir");
    let file = dir.path().join("summary.json");
    let mut all = vec!["--summary", file.to_str().expect("UTF-8")];
    all.extend_from_slice(args);
    let r = run(&all);
    (r, read_summary(&file))
}

/// The summary as a person reads it (pretty JSON), with what differs from run to run set
/// aside: how long things took (`*_ms`) and when the run finished.
fn shown(s: &Value) -> String {
    fn aside(v: &mut Value) {
        match v {
            Value::Object(fields) => {
                for (name, value) in fields.iter_mut() {
                    if name.ends_with("_ms") && value.is_u64() {
                        *value = Value::from("[MS]");
                    } else if name == "finished_at" && value.is_string() {
                        *value = Value::from("[TIME]");
                    } else {
                        aside(value);
                    }
                }
            }
            Value::Array(items) => items.iter_mut().for_each(aside),
            _ => {}
        }
    }
    let mut s = s.clone();
    aside(&mut s);
    serde_json::to_string_pretty(&s).expect("JSON") + "\n"
}

fn statuses(s: &Value) -> Vec<i64> {
    s["attempts"]
        .as_array()
        .expect("attempts")
        .iter()
        .map(|a| a["status"].as_i64().expect("a status"))
        .collect()
}

#[test]
fn the_summary_of_a_failed_run_has_every_field() {
    let (r, s) = summarised(&[
        "-n", "3", "-d", "10ms", "-j", "none", "--", "sh", "-c", "exit 3",
    ]);
    r.assert().code(3);
    // The name is the command's file name by default.
    assert_output(
        shown(&s),
        str![[r#"
{
  "attempt_count": 3,
  "attempts": [
    {
      "duration_ms": "[MS]",
      "signal": null,
      "status": 3,
      "timed_out": false
    },
    {
      "duration_ms": "[MS]",
      "signal": null,
      "status": 3,
      "timed_out": false
    },
    {
      "duration_ms": "[MS]",
      "signal": null,
      "status": 3,
      "timed_out": false
    }
  ],
  "elapsed_ms": "[MS]",
  "exit": 3,
  "finished_at": "[TIME]",
  "name": "sh",
  "outcome": "failure",
  "reason": "attempts used up",
  "running_ms": "[MS]",
  "sleeping_ms": "[MS]"
}

"#]],
    );
    let ms = |f: &str| s[f].as_u64().unwrap_or_else(|| panic!("{f} in {s}"));
    // Two waits of 10 ms and 20 ms.
    assert!(ms("sleeping_ms") >= 30, "{s}");
    assert!(
        ms("elapsed_ms") >= ms("sleeping_ms") + ms("running_ms") - 1,
        "{s}"
    );
    assert!(ms("elapsed_ms") < 10_000, "{s}");
    let finished = s["finished_at"].as_str().expect("finished_at");
    let at = humantime::parse_rfc3339(finished).expect("RFC 3339");
    let age = SystemTime::now()
        .duration_since(at)
        .unwrap_or(Duration::ZERO);
    assert!(age < Duration::from_secs(60), "{finished}");
}

#[test]
fn the_summary_of_a_run_that_succeeds_after_a_retry() {
    let (r, s) = summarised(&[
        "--name",
        "nightly",
        "-n",
        "5",
        "-d",
        "0",
        "--",
        "sh",
        "-c",
        r#"[ "$RETRY_ATTEMPT" = 2 ] || exit 7"#,
    ]);
    r.assert().code(0);
    assert_output(
        shown(&s),
        str![[r#"
{
  "attempt_count": 2,
  "attempts": [
    {
      "duration_ms": "[MS]",
      "signal": null,
      "status": 7,
      "timed_out": false
    },
    {
      "duration_ms": "[MS]",
      "signal": null,
      "status": 0,
      "timed_out": false
    }
  ],
  "elapsed_ms": "[MS]",
  "exit": 0,
  "finished_at": "[TIME]",
  "name": "nightly",
  "outcome": "success",
  "reason": "succeeded",
  "running_ms": "[MS]",
  "sleeping_ms": "[MS]"
}

"#]],
    );
}

#[test]
fn the_default_name_is_the_commands_file_name() {
    let (_, s) = summarised(&["-n", "1", "--", "/bin/true"]);
    assert_eq!(s["name"], "true");
}

#[test]
fn a_timed_out_attempt_is_marked_timed_out_with_status_124() {
    let (r, s) = summarised(&[
        "-n",
        "2",
        "-d",
        "0",
        "--attempt-timeout",
        "100ms",
        "--",
        "sleep",
        "30",
    ]);
    r.assert().code(124);
    assert_eq!(s["outcome"], "failure");
    assert_eq!(s["exit"], 124);
    assert_eq!(statuses(&s), [124, 124]);
    for a in s["attempts"].as_array().expect("attempts") {
        assert_eq!(a["timed_out"], true, "{a}");
        assert_eq!(a["signal"], Value::Null, "{a}");
        assert!(a["duration_ms"].as_u64().expect("duration") >= 100, "{a}");
    }
}

#[test]
fn a_killed_attempt_has_its_signal_name() {
    let (r, s) = summarised(&["-n", "2", "-d", "0", "--", "sh", "-c", "kill -KILL $$"]);
    assert_eq!(
        r.status.signal(),
        Some(Signal::SIGKILL as i32),
        "{:?}",
        r.status
    );
    assert_eq!(s["outcome"], "failure");
    assert_eq!(
        s["exit"],
        128 + 9,
        "retry ends by SIGKILL: 137 as a shell sees it"
    );
    assert_eq!(statuses(&s), [137, 137]);
    for a in s["attempts"].as_array().expect("attempts") {
        assert_eq!(a["signal"], "SIGKILL", "{a}");
        assert_eq!(a["timed_out"], false, "{a}");
    }
}

#[test]
fn a_command_not_found_is_one_attempt_of_status_127() {
    let (r, s) = summarised(&["-n", "3", "--", "/nonexistent/retry-test-command"]);
    r.assert().code(127);
    assert_eq!(s["outcome"], "failure");
    assert_eq!(s["exit"], 127);
    assert_eq!(statuses(&s), [127]);
}

#[test]
fn a_run_stopped_by_sigterm_during_a_wait_is_cancelled() {
    let dir = TempDir::new().expect("temp dir");
    let summary = dir.path().join("summary.json");
    let metrics = dir.path().join("job.prom");
    let (mut child, _out, err) = start(&[
        "--summary",
        &path_arg(&summary),
        "--metrics",
        &path_arg(&metrics),
        "--name",
        "job",
        "-d",
        "30s",
        "-j",
        "none",
        "--",
        "false",
    ]);
    err.until("retrying in");
    kill(Pid::from_raw(child.id() as i32), Signal::SIGTERM).expect("signal retry");
    let status = wait(&mut child);
    assert_eq!(status.signal(), Some(Signal::SIGTERM as i32), "{status:?}");
    let s = read_summary(&summary);
    assert_eq!(s["outcome"], "cancelled");
    assert_eq!(s["exit"], 143);
    assert_eq!(statuses(&s), [1]);
    assert!(
        s["reason"].as_str().expect("reason").contains("SIGTERM"),
        "{s}"
    );
    // The wait was cut short.
    assert!(
        s["sleeping_ms"].as_u64().expect("sleeping_ms") < 30_000,
        "{s}"
    );

    let m = Metrics::read(&metrics);
    assert_eq!(m.get("retry_runs_total", "job", Some("cancelled")), 1.0);
    assert_eq!(m.get("retry_runs_total", "job", Some("failure")), 0.0);
    assert_eq!(m.get("retry_last_outcome", "job", Some("cancelled")), 1.0);
    assert_eq!(m.get("retry_last_outcome", "job", Some("failure")), 0.0);
    assert_eq!(m.get("retry_last_exit_status", "job", None), 143.0);
    assert_eq!(m.get("retry_attempts_total", "job", None), 1.0);
    assert_eq!(m.get("retry_failed_attempts_total", "job", None), 1.0);
}

#[test]
fn a_summary_that_cannot_be_written_is_logged_and_the_exit_status_stands() {
    let r = run_sh(
        &[
            "--summary",
            "/nonexistent/retry-tests/summary.json",
            "-n",
            "2",
            "-d",
            "0",
        ],
        "exit 3",
    );
    r.assert().code(3);
    assert!(
        r.stderr()
            .contains("retry: error: cannot write the --summary file"),
        "{}",
        r.stderr()
    );
}

#[test]
fn the_summary_replaces_an_older_file_whole() {
    let dir = TempDir::new().expect("temp dir");
    let file = dir.path().join("summary.json");
    fs::write(&file, "x".repeat(10_000)).expect("an older, longer file");
    let r = run(&["--summary", &path_arg(&file), "--", "true"]);
    r.assert().code(0);
    assert_eq!(read_summary(&file)["outcome"], "success");
    assert_eq!(listing(dir.path()), ["summary.json"]);
}

/// The summary JSON of a run of `retry ARGS -- false` with `-qq`.
fn summary_of(args: &[&str]) -> serde_json::Value {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("summary.json");
    let out = retry()
        .args(["-qq", "-d", "0", "--summary"])
        .arg(&path)
        .args(args)
        .args(["--", "false"])
        .run();
    out.assert().code(1);
    serde_json::from_slice(&fs::read(&path).expect("summary")).expect("JSON")
}

#[test]
fn the_summary_keeps_the_last_attempts_and_counts_them_all() {
    let s = summary_of(&["-n", "150"]);
    assert_eq!(s["attempt_count"], 150, "{s}");
    let kept = s["attempts"].as_array().expect("attempts");
    assert_eq!(kept.len(), 100, "{s}");
    assert!(kept.iter().all(|a| a["status"] == 1));
}
