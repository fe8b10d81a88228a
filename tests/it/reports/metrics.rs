//! `--metrics`: the Prometheus text metrics, parsed back by a small parser of the text format,
//! across runs, overlapping runs included.

use super::*;

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
    r.assert().code(3);
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
    r.assert().code(3);
    let before = now_secs();
    let r = run_metrics(&file, "job", SUCCEED_ON_2);
    r.assert().code(0);
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
    r.assert().code(0);
    let m = Metrics::read(&file);
    assert_eq!(m.get("retry_runs_total", "job", Some("success")), 2.0);
    assert_eq!(m.get("retry_attempts_total", "job", None), 6.0);
    assert_eq!(m.get("retry_failed_attempts_total", "job", None), 4.0);
}

#[test]
fn the_last_success_time_is_kept_after_a_failure() {
    let (_dir, file) = metrics_dir();
    let r = run_metrics(&file, "job", &["--", "true"]);
    r.assert().code(0);
    let first = Metrics::read(&file);
    let success = first.get("retry_last_success_timestamp_seconds", "job", None);
    assert!(success > 0.0);
    let r = run_metrics(&file, "job", FAIL_3);
    r.assert().code(3);
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
    r.assert().code(3);
    let first = fs::metadata(&file).expect("metadata").ino();
    // A reader holding the old file keeps reading the old contents, whole.
    let held = fs::File::open(&file).expect("open the old file");
    let old_text = fs::read_to_string(&file).expect("old text");
    let r = run_metrics(&file, "job", &["--", "true"]);
    r.assert().code(0);
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
        r.assert().code(3);
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
    r.assert().code(1);
    let m = Metrics::read(&file);
    assert_eq!(m.get("retry_runs_total", "false", Some("failure")), 1.0);
}

#[test]
fn metrics_that_cannot_be_written_are_logged_and_the_exit_status_stands() {
    let dir = TempDir::new().expect("temp dir");
    let file = dir.path().join("no-such-dir").join("job.prom");
    let r = run_metrics(&file, "job", FAIL_3);
    r.assert().code(3);
    // The system's words, as docs/hooks-and-metrics.md shows them, and what to check.
    assert!(
        r.stderr().contains(
            "retry: error: cannot write the --metrics file (No such file or directory (os error \
             2)): "
        ) && r
            .stderr()
            .contains("; check that its folder exists and is writable"),
        "{}",
        r.stderr()
    );
    let r = run_metrics(&file, "job", &["--", "true"]);
    r.assert().code(0);
    assert!(
        r.stderr()
            .contains("retry: error: cannot write the --metrics file"),
        "{}",
        r.stderr()
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
    r.assert().code(0);
    assert_eq!(read_summary(&summary)["outcome"], "success");
}

/// A FIFO or a link planted at the lock's sidecar is refused at once: the open neither waits
/// for a reader nor creates a file where the link points.
#[test]
fn a_fifo_or_a_link_at_the_metrics_lock_is_refused_at_once() {
    let (dir, file) = metrics_dir();
    let lock = dir.path().join("job.prom.lock");
    nix::unistd::mkfifo(&lock, nix::sys::stat::Mode::from_bits_truncate(0o600)).expect("mkfifo");
    // run() gives up within the tests' patience: a hang fails, it does not stall the suite.
    let r = run_metrics(&file, "job", &["--", "true"]);
    r.assert().code(0);
    assert!(
        r.stderr()
            .contains("cannot write the --metrics file (it is not a regular file): "),
        "{}",
        r.stderr()
    );
    fs::remove_file(&lock).expect("remove the fifo");
    let elsewhere = dir.path().join("elsewhere");
    std::os::unix::fs::symlink(&elsewhere, &lock).expect("symlink");
    let r = run_metrics(&file, "job", &["--", "true"]);
    r.assert().code(0);
    assert!(
        r.stderr()
            .contains("(it is a symbolic link, which retry does not follow for a lock)"),
        "{}",
        r.stderr()
    );
    assert!(!elsewhere.exists(), "created through the link");
}

/// A lock on the metrics file is something the run waits on: `--max-time` bounds the wait, and
/// a SIGTERM ends it at once.
#[test]
fn a_held_metrics_lock_waits_no_longer_than_max_time_and_not_past_a_sigterm() {
    let (dir, file) = metrics_dir();
    let lock = fs::File::create(dir.path().join("job.prom.lock")).expect("the lock");
    lock.lock().expect("hold the lock");
    let r = run_metrics(&file, "job", &["--max-time", "1s", "--", "true"]);
    r.assert().code(0);
    // The wait was what --max-time left, about a second, not the 10 s a run without it waits.
    assert!(r.took < Duration::from_secs(5), "took {:?}", r.took);
    assert!(
        r.stderr().contains("(another process held its lock, ") && r.stderr().contains("ms)"),
        "{}",
        r.stderr()
    );
    let (mut child, _out, err) = retry()
        .args(["--metrics", &path_arg(&file), "--", "true"])
        .start();
    let pid = Pid::from_raw(child.id() as i32);
    // The lock is what it waits for now: its one attempt is over.
    std::thread::sleep(Duration::from_millis(500));
    kill(pid, Signal::SIGTERM).expect("SIGTERM");
    let status = wait(&mut child);
    let said = err.rest().join("\n");
    assert_eq!(status.code(), Some(0), "{said}");
    assert!(said.contains("when the run was cancelled"), "{said}");
}

#[test]
fn promtool_accepts_the_metrics() {
    // Prometheus's own check of the format, beside the test's parser. .ci/run unpacks it from
    // Debian's package without installing the server.
    if !crate::support::have(
        "promtool",
        "apt-get download prometheus && dpkg-deb -x prometheus_*.deb DIR; PATH=DIR/usr/bin:$PATH",
    ) {
        return;
    }
    let (_dir, file) = metrics_dir();
    let r = run_metrics(&file, "job \"x\"", FAIL_3);
    r.assert().code(3);
    let out = std::process::Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(fs::File::open(&file).expect("open metrics"))
        .output()
        .expect("promtool runs");
    assert!(
        out.status.success(),
        "promtool: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
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

/// A previous metrics file of more than 16 MiB is no file of retry's: it is neither read whole
/// (its size would be retry's memory) nor replaced, and the run's status stands.
#[test]
fn a_previous_metrics_file_past_16_mib_is_neither_read_nor_replaced() {
    let (_dir, file) = metrics_dir();
    let big = fs::File::create(&file).expect("the file");
    big.set_len(17 << 20).expect("17 MiB");
    let r = run_metrics(&file, "job", &["--", "true"]);
    r.assert().code(0);
    assert!(
        r.stderr().contains(
            "(it holds more than 16 MiB, which retry's metrics never do: neither read nor replaced)"
        ),
        "{}",
        r.stderr()
    );
    assert_eq!(fs::metadata(&file).expect("still there").len(), 17 << 20);
}
