//! `--summary` and `--metrics` through the built binary: the JSON summary parsed back, and the
//! Prometheus text metrics parsed back by a small parser of the text format, across runs.

use crate::support;

use std::collections::BTreeMap;
use std::fs::{self, File};
use std::io::Read;
use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Output, Stdio};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use serde_json::Value;
use support::{Lines, PATIENCE, cmd, dev_full, retry, start, wait};
use tempfile::TempDir;

struct Run {
    status: ExitStatus,
    stderr: String,
}

fn run(args: &[&str]) -> Run {
    let out = cmd()
        .args(args)
        .timeout(PATIENCE)
        .output()
        .expect("run retry");
    Run {
        status: out.status,
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

fn path_arg(p: &Path) -> String {
    p.to_str().expect("a UTF-8 temp path").to_string()
}

fn now_secs() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("after 1970")
        .as_secs_f64()
}

/// Names in `dir`, sorted.
fn listing(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(dir)
        .expect("read dir")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

// --- the summary ---

/// Runs retry with `--summary` into a fresh folder; the run and the parsed summary.
fn summarised(args: &[&str]) -> (Run, Value) {
    let dir = TempDir::new().expect("temp dir");
    let file = dir.path().join("summary.json");
    let mut all = vec!["--summary", file.to_str().expect("UTF-8")];
    all.extend_from_slice(args);
    let r = run(&all);
    (r, read_summary(&file))
}

fn read_summary(file: &Path) -> Value {
    let text = fs::read_to_string(file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    assert!(text.ends_with('\n'), "one line: {text:?}");
    assert_eq!(
        text.lines().count(),
        1,
        "one JSON object on one line: {text:?}"
    );
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{text:?}: {e}"))
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
    assert_eq!(r.status.code(), Some(3), "{}", r.stderr);
    let fields: Vec<&str> = s
        .as_object()
        .expect("an object")
        .keys()
        .map(String::as_str)
        .collect();
    for field in [
        "name",
        "outcome",
        "reason",
        "exit",
        "attempts",
        "running_ms",
        "sleeping_ms",
        "elapsed_ms",
        "finished_at",
    ] {
        assert!(fields.contains(&field), "{field} in {s}");
    }
    assert_eq!(s["name"], "sh", "the command's file name by default");
    assert_eq!(s["outcome"], "failure");
    assert_eq!(s["reason"], "attempts used up");
    assert_eq!(s["exit"], 3);
    assert_eq!(statuses(&s), [3, 3, 3]);
    for a in s["attempts"].as_array().expect("attempts") {
        assert_eq!(a["signal"], Value::Null, "{a}");
        assert_eq!(a["timed_out"], false, "{a}");
        assert!(a["duration_ms"].as_u64().is_some(), "{a}");
    }
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
    assert_eq!(r.status.code(), Some(0), "{}", r.stderr);
    assert_eq!(s["name"], "nightly");
    assert_eq!(s["outcome"], "success");
    assert_eq!(s["exit"], 0);
    assert_eq!(statuses(&s), [7, 0]);
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
    assert_eq!(r.status.code(), Some(124), "{}", r.stderr);
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
    assert_eq!(r.status.code(), Some(127), "{}", r.stderr);
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
    assert_eq!(status.code(), Some(128 + 15));
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
    let r = run(&[
        "--summary",
        "/nonexistent/retry-tests/summary.json",
        "-n",
        "2",
        "-d",
        "0",
        "--",
        "sh",
        "-c",
        "exit 3",
    ]);
    assert_eq!(r.status.code(), Some(3), "{}", r.stderr);
    assert!(
        r.stderr
            .contains("retry: error: cannot write the --summary file"),
        "{}",
        r.stderr
    );
}

#[test]
fn the_summary_replaces_an_older_file_whole() {
    let dir = TempDir::new().expect("temp dir");
    let file = dir.path().join("summary.json");
    fs::write(&file, "x".repeat(10_000)).expect("an older, longer file");
    let r = run(&["--summary", &path_arg(&file), "--", "true"]);
    assert_eq!(r.status.code(), Some(0), "{}", r.stderr);
    assert_eq!(read_summary(&file)["outcome"], "success");
    assert_eq!(listing(dir.path()), ["summary.json"]);
}

// --- the metrics ---

/// One sample of the text format: `name{labels} value`.
#[derive(Debug)]
struct Sample {
    name: String,
    labels: BTreeMap<String, String>,
    value: f64,
}

/// A parsed exposition: the samples, and the `# TYPE` of each metric.
#[derive(Debug)]
struct Metrics {
    samples: Vec<Sample>,
    types: BTreeMap<String, String>,
    text: String,
}

impl Metrics {
    fn read(path: &Path) -> Metrics {
        let text = fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        Metrics::parse(&text)
    }

    fn parse(text: &str) -> Metrics {
        let mut samples = Vec::new();
        let mut types = BTreeMap::new();
        for line in text.lines() {
            if let Some(rest) = line.strip_prefix("# TYPE ") {
                let (name, kind) = rest.split_once(' ').expect("# TYPE name kind");
                types.insert(name.to_string(), kind.to_string());
                continue;
            }
            if line.starts_with('#') || line.trim().is_empty() {
                continue;
            }
            samples.push(sample(line));
        }
        for s in &samples {
            assert!(
                types.contains_key(&s.name),
                "{} has no # TYPE line:\n{text}",
                s.name
            );
        }
        Metrics {
            samples,
            types,
            text: text.to_string(),
        }
    }

    /// The value of `metric{name=job[,outcome=o]}`; fails the test when it is not there once.
    fn get(&self, metric: &str, job: &str, outcome: Option<&str>) -> f64 {
        let found: Vec<&Sample> = self
            .samples
            .iter()
            .filter(|s| {
                s.name == metric
                    && s.labels.get("name").map(String::as_str) == Some(job)
                    && s.labels.get("outcome").map(String::as_str) == outcome
            })
            .collect();
        assert_eq!(
            found.len(),
            1,
            "{metric} name={job:?} outcome={outcome:?} in:\n{}",
            self.text
        );
        found[0].value
    }
}

/// Parses `name{label="value",...} number`, with the text format's escapes in label values.
fn sample(line: &str) -> Sample {
    let open = line
        .find('{')
        .unwrap_or_else(|| panic!("no labels: {line:?}"));
    let name = line[..open].to_string();
    let mut labels = BTreeMap::new();
    let mut chars = line[open + 1..].chars();
    loop {
        let key: String = chars.by_ref().take_while(|c| *c != '=').collect();
        assert_eq!(chars.next(), Some('"'), "a quoted value in {line:?}");
        let mut value = String::new();
        loop {
            match chars.next() {
                Some('\\') => match chars.next() {
                    Some('\\') => value.push('\\'),
                    Some('"') => value.push('"'),
                    Some('n') => value.push('\n'),
                    other => panic!("bad escape {other:?} in {line:?}"),
                },
                Some('"') => break,
                Some(c) => value.push(c),
                None => panic!("unterminated value in {line:?}"),
            }
        }
        assert!(
            labels.insert(key, value).is_none(),
            "a label twice: {line:?}"
        );
        match chars.next() {
            Some(',') => continue,
            Some('}') => break,
            other => panic!("{other:?} after a label value in {line:?}"),
        }
    }
    let rest: String = chars.collect();
    let number = rest
        .strip_prefix(' ')
        .unwrap_or_else(|| panic!("one space before the value: {line:?}"));
    let value = number
        .parse()
        .unwrap_or_else(|e| panic!("value {number:?} in {line:?}: {e}"));
    Sample {
        name,
        labels,
        value,
    }
}

/// A temp folder with a metrics file path in it.
fn metrics_dir() -> (TempDir, PathBuf) {
    let dir = TempDir::new().expect("temp dir");
    let file = dir.path().join("job.prom");
    (dir, file)
}

/// Runs retry writing metrics to `file`, named `job`, with these arguments after.
fn run_metrics(file: &Path, job: &str, args: &[&str]) -> Run {
    let file = path_arg(file);
    let mut all = vec!["--metrics", &file, "--name", job, "-d", "0"];
    all.extend_from_slice(args);
    run(&all)
}

const FAIL_3: &[&str] = &["-n", "3", "--", "sh", "-c", "exit 3"];
const SUCCEED_ON_2: &[&str] = &["-n", "5", "--", "sh", "-c", r#"[ "$RETRY_ATTEMPT" = 2 ]"#];

const METRICS: [(&str, &str); 9] = [
    ("retry_runs_total", "counter"),
    ("retry_attempts_total", "counter"),
    ("retry_failed_attempts_total", "counter"),
    ("retry_last_outcome", "gauge"),
    ("retry_last_attempts", "gauge"),
    ("retry_last_exit_status", "gauge"),
    ("retry_last_duration_seconds", "gauge"),
    ("retry_last_run_timestamp_seconds", "gauge"),
    ("retry_last_success_timestamp_seconds", "gauge"),
];

#[test]
fn metrics_after_one_failing_run() {
    let (_dir, file) = metrics_dir();
    let before = now_secs();
    let r = run_metrics(&file, "job", FAIL_3);
    let after = now_secs();
    assert_eq!(r.status.code(), Some(3), "{}", r.stderr);
    let m = Metrics::read(&file);
    for (metric, kind) in METRICS {
        assert_eq!(
            m.types.get(metric).map(String::as_str),
            Some(kind),
            "{metric}"
        );
        assert!(
            m.text.contains(&format!("# HELP {metric} ")),
            "{metric}:\n{}",
            m.text
        );
    }
    assert_eq!(m.types.len(), METRICS.len(), "{:?}", m.types);
    assert_eq!(m.get("retry_runs_total", "job", Some("failure")), 1.0);
    assert_eq!(m.get("retry_runs_total", "job", Some("success")), 0.0);
    assert_eq!(m.get("retry_runs_total", "job", Some("cancelled")), 0.0);
    assert_eq!(m.get("retry_attempts_total", "job", None), 3.0);
    assert_eq!(m.get("retry_failed_attempts_total", "job", None), 3.0);
    assert_eq!(m.get("retry_last_outcome", "job", Some("failure")), 1.0);
    assert_eq!(m.get("retry_last_outcome", "job", Some("success")), 0.0);
    assert_eq!(m.get("retry_last_outcome", "job", Some("cancelled")), 0.0);
    assert_eq!(m.get("retry_last_attempts", "job", None), 3.0);
    assert_eq!(m.get("retry_last_exit_status", "job", None), 3.0);
    let duration = m.get("retry_last_duration_seconds", "job", None);
    assert!((0.0..10.0).contains(&duration), "{duration}");
    let ran = m.get("retry_last_run_timestamp_seconds", "job", None);
    assert!(
        ran >= before.floor() && ran <= after.ceil(),
        "{before} <= {ran} <= {after}"
    );
    assert_eq!(
        m.get("retry_last_success_timestamp_seconds", "job", None),
        0.0,
        "never succeeded"
    );
    assert_eq!(m.get("retry_runs_total", "job", Some("refused")), 0.0);
    assert_eq!(m.samples.len(), 4 + 1 + 1 + 4 + 5, "{}", m.text);
    let mode = fs::metadata(&file).expect("metadata").permissions().mode();
    assert_eq!(mode & 0o777, 0o644, "{mode:o}");
}

#[test]
fn counters_accumulate_over_runs() {
    let (_dir, file) = metrics_dir();
    let r = run_metrics(&file, "job", FAIL_3);
    assert_eq!(r.status.code(), Some(3), "{}", r.stderr);
    let before = now_secs();
    let r = run_metrics(&file, "job", SUCCEED_ON_2);
    assert_eq!(r.status.code(), Some(0), "{}", r.stderr);
    let m = Metrics::read(&file);
    assert_eq!(m.get("retry_runs_total", "job", Some("failure")), 1.0);
    assert_eq!(m.get("retry_runs_total", "job", Some("success")), 1.0);
    assert_eq!(m.get("retry_runs_total", "job", Some("cancelled")), 0.0);
    assert_eq!(m.get("retry_attempts_total", "job", None), 3.0 + 2.0);
    assert_eq!(
        m.get("retry_failed_attempts_total", "job", None),
        3.0 + 1.0,
        "the successful run's last attempt did not fail"
    );
    assert_eq!(m.get("retry_last_outcome", "job", Some("success")), 1.0);
    assert_eq!(m.get("retry_last_outcome", "job", Some("failure")), 0.0);
    assert_eq!(m.get("retry_last_attempts", "job", None), 2.0);
    assert_eq!(m.get("retry_last_exit_status", "job", None), 0.0);
    let success = m.get("retry_last_success_timestamp_seconds", "job", None);
    assert!(success >= before.floor(), "{success} >= {before}");
    assert_eq!(
        success,
        m.get("retry_last_run_timestamp_seconds", "job", None)
    );

    // A third run, successful at once.
    let r = run_metrics(&file, "job", &["--", "true"]);
    assert_eq!(r.status.code(), Some(0), "{}", r.stderr);
    let m = Metrics::read(&file);
    assert_eq!(m.get("retry_runs_total", "job", Some("success")), 2.0);
    assert_eq!(m.get("retry_attempts_total", "job", None), 6.0);
    assert_eq!(m.get("retry_failed_attempts_total", "job", None), 4.0);
}

#[test]
fn the_last_success_time_is_kept_after_a_failure() {
    let (_dir, file) = metrics_dir();
    let r = run_metrics(&file, "job", &["--", "true"]);
    assert_eq!(r.status.code(), Some(0), "{}", r.stderr);
    let first = Metrics::read(&file);
    let success = first.get("retry_last_success_timestamp_seconds", "job", None);
    assert!(success > 0.0);
    let r = run_metrics(&file, "job", FAIL_3);
    assert_eq!(r.status.code(), Some(3), "{}", r.stderr);
    let m = Metrics::read(&file);
    assert_eq!(
        m.get("retry_last_success_timestamp_seconds", "job", None),
        success,
        "kept from the previous file"
    );
    assert!(m.get("retry_last_run_timestamp_seconds", "job", None) >= success);
    assert_eq!(m.get("retry_last_outcome", "job", Some("failure")), 1.0);
    assert_eq!(m.get("retry_last_exit_status", "job", None), 3.0);
    assert_eq!(m.get("retry_runs_total", "job", Some("success")), 1.0);
    assert_eq!(m.get("retry_runs_total", "job", Some("failure")), 1.0);
}

#[test]
fn the_metrics_file_is_replaced_by_a_new_file_with_no_temporary_file_left() {
    let (dir, file) = metrics_dir();
    let r = run_metrics(&file, "job", FAIL_3);
    assert_eq!(r.status.code(), Some(3), "{}", r.stderr);
    let first = fs::metadata(&file).expect("metadata").ino();
    // A reader holding the old file keeps reading the old contents, whole.
    let held = fs::File::open(&file).expect("open the old file");
    let old_text = fs::read_to_string(&file).expect("old text");
    let r = run_metrics(&file, "job", &["--", "true"]);
    assert_eq!(r.status.code(), Some(0), "{}", r.stderr);
    let second = fs::metadata(&file).expect("metadata").ino();
    assert_ne!(first, second, "renamed into place, not rewritten in place");
    let mut still = String::new();
    std::io::Read::read_to_string(&mut &held, &mut still).expect("read the old file");
    assert_eq!(still, old_text);
    assert_eq!(
        listing(dir.path()),
        ["job.prom", "job.prom.lock"],
        "no .retry-* file is left; the lock's sidecar stays"
    );
    let mode = fs::metadata(&file).expect("metadata").permissions().mode();
    assert_eq!(mode & 0o777, 0o644, "{mode:o}");
}

#[test]
fn a_name_with_a_quote_a_backslash_or_a_newline_is_escaped() {
    let (_dir, file) = metrics_dir();
    let job = "back\\slash \"quoted\"\nnext line";
    for _ in 0..2 {
        let r = run_metrics(&file, job, FAIL_3);
        assert_eq!(r.status.code(), Some(3), "{}", r.stderr);
    }
    let m = Metrics::read(&file);
    assert!(
        m.text
            .contains(r#"retry_last_attempts{name="back\\slash \"quoted\"\nnext line"} 3"#),
        "{}",
        m.text
    );
    assert_eq!(
        m.text.lines().count(),
        9 * 2 + 15,
        "no raw newline:\n{}",
        m.text
    );
    // Read back through the escapes, and the counters found again in the previous file.
    assert_eq!(m.get("retry_runs_total", job, Some("failure")), 2.0);
    assert_eq!(m.get("retry_attempts_total", job, None), 6.0);
}

#[test]
fn the_default_name_label_is_the_commands_file_name() {
    let (_dir, file) = metrics_dir();
    let r = run(&["--metrics", &path_arg(&file), "-n", "1", "--", "/bin/false"]);
    assert_eq!(r.status.code(), Some(1), "{}", r.stderr);
    let m = Metrics::read(&file);
    assert_eq!(m.get("retry_runs_total", "false", Some("failure")), 1.0);
}

#[test]
fn metrics_that_cannot_be_written_are_logged_and_the_exit_status_stands() {
    let dir = TempDir::new().expect("temp dir");
    let file = dir.path().join("no-such-dir").join("job.prom");
    let r = run_metrics(&file, "job", FAIL_3);
    assert_eq!(r.status.code(), Some(3), "{}", r.stderr);
    assert!(
        r.stderr
            .contains("retry: error: cannot write the --metrics file"),
        "{}",
        r.stderr
    );
    let r = run_metrics(&file, "job", &["--", "true"]);
    assert_eq!(r.status.code(), Some(0), "{}", r.stderr);
    assert!(
        r.stderr
            .contains("retry: error: cannot write the --metrics file"),
        "{}",
        r.stderr
    );
    assert!(!file.exists());
    // Both reports asked for: the one that can be written still is.
    let summary = dir.path().join("summary.json");
    let r = run(&[
        "--metrics",
        &path_arg(&file),
        "--summary",
        &path_arg(&summary),
        "--",
        "true",
    ]);
    assert_eq!(r.status.code(), Some(0), "{}", r.stderr);
    assert_eq!(read_summary(&summary)["outcome"], "success");
}

#[test]
fn promtool_accepts_the_metrics_when_it_is_installed() {
    let (_dir, file) = metrics_dir();
    let r = run_metrics(&file, "job \"x\"", FAIL_3);
    assert_eq!(r.status.code(), Some(3), "{}", r.stderr);
    let checked = std::process::Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(fs::File::open(&file).expect("open metrics"))
        .output();
    match checked {
        Ok(out) => assert!(
            out.status.success(),
            "promtool: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
        Err(e) => eprintln!("promtool not run ({e}); the parser above checked the format"),
    }
}

/// Runs `retry --summary PATH -- true`; returns its output.
fn summary_to(path: &Path) -> Output {
    retry()
        .arg("--summary")
        .arg(path)
        .args(["--", "true"])
        .stdin(Stdio::null())
        .output()
        .expect("run retry")
}

#[test]
fn a_summary_through_a_symlink_updates_its_target_and_keeps_the_link() {
    let dir = tempfile::tempdir().expect("temp dir");
    let target = dir.path().join("real.json");
    fs::write(&target, "old").expect("write the target");
    let link = dir.path().join("link.json");
    std::os::unix::fs::symlink("real.json", &link).expect("symlink");
    let out = summary_to(&link);
    assert_eq!(out.status.code(), Some(0));
    assert!(
        fs::symlink_metadata(&link).expect("link").is_symlink(),
        "the link was replaced"
    );
    let json = fs::read_to_string(&target).expect("the target");
    assert!(json.starts_with("{\"name\":\"true\""), "{json}");
    // A link to a file that does not exist yet creates it.
    let dangling = dir.path().join("dangling.json");
    std::os::unix::fs::symlink("new.json", &dangling).expect("symlink");
    assert_eq!(summary_to(&dangling).status.code(), Some(0));
    assert!(fs::symlink_metadata(&dangling).expect("link").is_symlink());
    assert!(
        fs::read_to_string(dir.path().join("new.json")).is_ok_and(|j| j.contains("\"exit\":0"))
    );
}

#[test]
fn a_summary_to_a_fifo_is_written_into_it_or_refused_never_replaced() {
    let dir = tempfile::tempdir().expect("temp dir");
    let fifo = dir.path().join("fifo");
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o600)).expect("mkfifo");
    // Nobody reads it: refused at once, with a message, and the run's status stands.
    let out = summary_to(&fifo);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("cannot write the --summary file"),
        "{stderr}"
    );
    assert!(fs::metadata(&fifo).expect("fifo").file_type().is_fifo());
    // A reader: it gets the summary.
    let mut reader = File::options()
        .read(true)
        .custom_flags(nix::libc::O_NONBLOCK)
        .open(&fifo)
        .expect("open the fifo");
    let out = summary_to(&fifo);
    assert_eq!(out.status.code(), Some(0));
    assert!(fs::metadata(&fifo).expect("fifo").file_type().is_fifo());
    let mut json = String::new();
    reader.read_to_string(&mut json).expect("read the fifo");
    assert!(json.contains("\"outcome\":\"success\""), "{json}");
}

#[test]
fn a_summary_to_a_device_is_written_in_place_and_its_failure_is_reported() {
    let Some(_) = dev_full() else { return };
    let dir = tempfile::tempdir().expect("temp dir");
    let link = dir.path().join("full");
    std::os::unix::fs::symlink("/dev/full", &link).expect("symlink");
    let out = summary_to(&link);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("No space left on device"), "{stderr}");
    assert!(fs::symlink_metadata(&link).expect("link").is_symlink());
    // A device node of its own, where this process may make one (root): never replaced.
    let node = dir.path().join("null");
    let made = nix::sys::stat::mknod(
        &node,
        nix::sys::stat::SFlag::S_IFCHR,
        nix::sys::stat::Mode::from_bits_truncate(0o666),
        nix::sys::stat::makedev(1, 3),
    );
    if let Err(e) = made {
        eprintln!("SKIPPED the device-node case: cannot mknod here ({e}); it needs root");
        return;
    }
    for flag in ["--summary", "--metrics"] {
        let out = retry()
            .arg(flag)
            .arg(&node)
            .args(["--", "true"])
            .output()
            .expect("run retry");
        assert_eq!(out.status.code(), Some(0));
        assert!(
            fs::metadata(&node)
                .expect("node")
                .file_type()
                .is_char_device(),
            "{flag} replaced the device node"
        );
    }
}

/// Runs `count` retries at once, each with the metrics file and the name `name(i)`.
fn at_once(count: usize, metrics: &Path, name: impl Fn(usize) -> String) {
    let mut children: Vec<_> = (0..count)
        .map(|i| {
            retry()
                .arg("--metrics")
                .arg(metrics)
                .args(["--name", &name(i), "--", "true"])
                .stdin(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .expect("start retry")
        })
        .collect();
    for child in &mut children {
        let err = Lines::of(child.stderr.take().expect("stderr"));
        assert!(wait(child).success());
        assert_eq!(err.rest(), Vec::<String>::new());
    }
}

#[test]
fn overlapping_runs_writing_one_metrics_file_lose_no_run() {
    let dir = tempfile::tempdir().expect("temp dir");
    let metrics = dir.path().join("job.prom");
    at_once(50, &metrics, |_| "job".to_string());
    let text = fs::read_to_string(&metrics).expect("metrics");
    assert!(
        text.contains("retry_runs_total{name=\"job\",outcome=\"success\"} 50\n"),
        "{text}"
    );
    assert!(
        text.contains("retry_attempts_total{name=\"job\"} 50\n"),
        "{text}"
    );
}

#[test]
fn overlapping_runs_with_their_own_names_in_one_metrics_file_lose_no_name() {
    let dir = tempfile::tempdir().expect("temp dir");
    let metrics = dir.path().join("jobs.prom");
    at_once(50, &metrics, |i| format!("job{i}"));
    let text = fs::read_to_string(&metrics).expect("metrics");
    for i in 0..50 {
        let line = format!("retry_runs_total{{name=\"job{i}\",outcome=\"success\"}} 1\n");
        assert!(text.contains(&line), "job{i} is missing:\n{text}");
    }
    // Each family is declared once, its samples together.
    assert_eq!(text.matches("# TYPE retry_runs_total counter").count(), 1);
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
        .stdin(Stdio::null())
        .output()
        .expect("run retry");
    assert_eq!(out.status.code(), Some(1));
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

#[test]
fn a_report_that_cannot_be_written_is_named_without_a_temporary_file() {
    let r = run(&[
        "--metrics",
        "/nonexistent/retry-tests/job.prom",
        "--",
        "true",
    ]);
    assert_eq!(r.status.code(), Some(0), "{}", r.stderr);
    let line = r.stderr.trim_end();
    assert!(line.starts_with("retry: error: "), "{line}");
    assert!(
        line.contains(": /nonexistent/retry-tests/job.prom; "),
        "{line}"
    );
    assert!(
        !line.contains(".retry-"),
        "no temporary file's name: {line}"
    );
}

#[test]
fn double_quiet_silences_a_report_error_and_a_log_file_takes_it() {
    let r = run(&[
        "-qq",
        "--summary",
        "/nonexistent/retry-tests/s.json",
        "--",
        "true",
    ]);
    assert_eq!(r.status.code(), Some(0), "{}", r.stderr);
    assert_eq!(r.stderr, "", "-qq prints nothing");
    let dir = TempDir::new().expect("temp dir");
    let log = dir.path().join("retry.log");
    let r = run(&[
        "--log-file",
        &path_arg(&log),
        "--summary",
        "/nonexistent/retry-tests/s.json",
        "--",
        "true",
    ]);
    assert_eq!(r.stderr, "", "the log file takes it");
    let logged = fs::read_to_string(&log).expect("log file");
    assert!(logged.contains("--summary"), "{logged}");
}
