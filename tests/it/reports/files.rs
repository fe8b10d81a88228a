//! Where a report is written: through a symlink, into a FIFO or a device, or nowhere (a report
//! that cannot be written is named, and changes no exit status).

use super::*;

/// Runs `retry --summary PATH -- true`; returns its output.
fn summary_to(path: &Path) -> Run {
    retry()
        .arg("--summary")
        .arg(path)
        .args(["--", "true"])
        .run()
}

#[test]
fn a_summary_through_a_symlink_updates_its_target_and_keeps_the_link() {
    let dir = tempfile::tempdir().expect("temp dir");
    let target = dir.path().join("real.json");
    fs::write(&target, "old").expect("write the target");
    let link = dir.path().join("link.json");
    std::os::unix::fs::symlink("real.json", &link).expect("symlink");
    let out = summary_to(&link);
    out.assert().code(0);
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
    let stderr = out.stderr();
    assert_eq!(out.code(), Some(0), "{stderr}");
    // In retry's own words, with no folder to check: the folder is not what is wrong.
    assert!(
        stderr.contains("cannot write the --summary file (it is a FIFO that no process reads): "),
        "{stderr}"
    );
    assert!(!stderr.contains("check that its folder"), "{stderr}");
    assert!(fs::metadata(&fifo).expect("fifo").file_type().is_fifo());
    // A reader: it gets the summary.
    let mut reader = File::options()
        .read(true)
        .custom_flags(nix::libc::O_NONBLOCK)
        .open(&fifo)
        .expect("open the fifo");
    let out = summary_to(&fifo);
    out.assert().code(0);
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
    let stderr = out.stderr();
    assert_eq!(out.code(), Some(0), "{stderr}");
    assert!(stderr.contains("No space left on device"), "{stderr}");
    // No folder to check: the device is full.
    assert!(stderr.contains("; the device it is on is full"), "{stderr}");
    assert!(!stderr.contains("check that its folder"), "{stderr}");
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
        crate::support::skipped(&format!(
            "skips its device-node case: it needs root to mknod ({e})"
        ));
        return;
    }
    for flag in ["--summary", "--metrics"] {
        let out = retry().arg(flag).arg(&node).args(["--", "true"]).run();
        out.assert().code(0);
        assert!(
            fs::metadata(&node)
                .expect("node")
                .file_type()
                .is_char_device(),
            "{flag} replaced the device node"
        );
    }
}

#[test]
fn a_report_that_cannot_be_written_is_named_without_a_temporary_file() {
    let r = run(&[
        "--metrics",
        "/nonexistent/retry-tests/job.prom",
        "--",
        "true",
    ]);
    r.assert().code(0);
    let stderr = r.stderr();
    let line = stderr.trim_end();
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
    r.assert().code(0);
    assert_eq!(r.stderr(), "", "-qq prints nothing");
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
    assert_eq!(r.stderr(), "", "the log file takes it");
    let logged = fs::read_to_string(&log).expect("log file");
    assert!(logged.contains("--summary"), "{logged}");
}

#[test]
fn a_summary_and_metrics_past_a_file_size_limit_are_one_warning_each_and_stay_as_they_were() {
    let dir = TempDir::new().expect("temp dir");
    let summary = dir.path().join("s.json");
    let metrics = dir.path().join("m.prom");
    fs::write(&summary, "old summary\n").expect("write the summary");
    fs::write(&metrics, "old metrics\n").expect("write the metrics");
    // No file may grow at all: each report's temporary file meets the limit at its first byte.
    let r = crate::support::retry_under_file_limit(0)
        .args(["-n2", "-d0", "--summary", &path_arg(&summary)])
        .args(["--metrics", &path_arg(&metrics)])
        .args(["--", "sh", "-c", "echo out; exit 3"])
        .run();
    let stderr = r.stderr();
    // Not killed by SIGXFSZ: the command's status, and its output.
    r.assert().code(3);
    assert_eq!(r.stdout(), "out\nout\n");
    for flag in ["--summary", "--metrics"] {
        let said: Vec<&str> = stderr
            .lines()
            .filter(|l| l.contains(&format!("cannot write the {flag} file")))
            .collect();
        assert_eq!(said.len(), 1, "{stderr}");
        assert!(
            said[0].contains("(File too large (os error 27))")
                && said[0].contains("a file size limit (ulimit -f)")
                && !said[0].contains("check that its folder"),
            "{stderr}"
        );
    }
    assert!(
        stderr.contains("retry: giving up after 2 attempts"),
        "{stderr}"
    );
    // Each file was replaced whole or not at all: nothing half written, nothing left beside.
    assert_eq!(fs::read_to_string(&summary).unwrap(), "old summary\n");
    assert_eq!(fs::read_to_string(&metrics).unwrap(), "old metrics\n");
    assert_eq!(listing(dir.path()), ["m.prom", "m.prom.lock", "s.json"]);
}

#[test]
fn a_log_file_past_a_file_size_limit_warns_once_and_the_log_goes_on_on_stderr() {
    let dir = TempDir::new().expect("temp dir");
    let log = dir.path().join("retry.log");
    // 350 of the 512 bytes the limit allows: room for the first line (about 105 bytes with
    // its time), not for the second.
    fs::write(&log, format!("{}\n", "x".repeat(349))).expect("write the log");
    let r = crate::support::retry_under_file_limit(1)
        .args(["-n3", "-d0", "--log-file", &path_arg(&log)])
        .args(["--", "sh", "-c", "echo out; exit 3"])
        .run();
    let stderr = r.stderr();
    r.assert().code(3);
    assert_eq!(r.stdout(), "out\nout\nout\n");
    let warnings: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains("warning: cannot write --log-file"))
        .collect();
    assert_eq!(
        warnings,
        [format!(
            "retry: warning: cannot write --log-file '{}': File too large; logging to stderr \
             instead",
            log.display()
        )],
        "{stderr}"
    );
    // The line that did not fit, and every one after it, on stderr, the give-up line last.
    let lines: Vec<&str> = stderr.lines().skip(1).collect();
    assert_eq!(lines.len(), 3, "{stderr}");
    assert!(lines[0].contains("retry: attempt 2/3 failed"), "{stderr}");
    assert!(
        lines[2].contains("retry: giving up after 3 attempts"),
        "{stderr}"
    );
    let logged = fs::read_to_string(&log).expect("the log");
    assert!(logged.len() <= 512, "{}", logged.len());
    assert!(
        logged
            .lines()
            .nth(1)
            .is_some_and(|l| l.contains("retry: attempt 1/3 failed")),
        "{logged}"
    );
}
