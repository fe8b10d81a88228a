//! `retry --explain --fleet N` through the built binary: it simulates, runs
//! nothing, exits 0, and answers quickly for a thousand processes.

use std::time::{Duration, Instant};

use crate::support;

fn explain(args: &[&str]) -> (std::process::Output, Duration) {
    let mut c = support::retry();
    c.env_remove("RETRY_STATE_DIR")
        .args(["--explain"])
        .args(args);
    let started = Instant::now();
    let out = c.output().expect("retry runs");
    (out, started.elapsed())
}

#[test]
fn a_fleet_of_a_thousand_is_simulated_without_running_anything() {
    let dir = tempfile::tempdir().expect("temporary directory");
    let marker = dir.path().join("ran");
    let touch = format!("touch '{}'", marker.display());
    let (out, took) = explain(&[
        "--fleet", "1000", "--outage", "10m", "-n", "5", "--", "sh", "-c", &touch,
    ]);
    assert_eq!(out.status.code(), Some(0));
    assert!(!marker.exists(), "nothing ran");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("Fleet: 1000 processes"), "{text}");
    for row in [
        "this policy",
        "without jitter",
        "with --key (each host)",
        "with --key --state",
    ] {
        assert!(text.contains(row), "{row}: {text}");
    }
    assert!(text.contains('█'), "a chart: {text}");
    assert!(!text.contains('\x1b'), "no colour off a terminal: {text}");
    assert!(
        text.lines().all(|l| l == l.trim_end()),
        "no blanks at the end of a line: {text:?}"
    );
    // A debug build on a shared machine; the release build takes milliseconds.
    assert!(took < Duration::from_secs(20), "{took:?}");
}

/// The calls a row of the table counts into the outage.
fn calls_in_outage(text: &str, row: &str) -> u64 {
    text.lines()
        .find(|l| l.trim_start().starts_with(row))
        .and_then(|l| {
            l[l.find(row).map_or(0, |i| i + row.len())..]
                .split_whitespace()
                .next()
        })
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no row {row:?} in {text}"))
}

#[test]
fn one_store_for_the_fleet_sends_far_fewer_calls_into_the_outage() {
    let (out, _) = explain(&["--fleet", "200", "--outage", "30m", "--key", "api"]);
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8_lossy(&out.stdout);
    let with = calls_in_outage(&text, "this policy");
    let without = calls_in_outage(&text, "without --key");
    assert!(with * 2 < without, "{with} against {without}: {text}");
}

#[test]
fn the_adaptive_delay_is_simulated_beside_its_exponential_fallback() {
    // No breaker or budget: the delays alone make the difference.
    let (out, _) = explain(&[
        "--fleet",
        "200",
        "--outage",
        "30m",
        "-n",
        "5",
        "--key",
        "api",
        "--breaker-failures",
        "0",
        "--budget-burst",
        "0",
        "--backoff",
        "adaptive",
    ]);
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("retry's own adaptive delay"), "{text}");
    // As the key's failures pile up, each host waits longer than exponential backoff would.
    let adaptive = calls_in_outage(&text, "this policy");
    let exponential = calls_in_outage(&text, "exponential, no --key");
    assert!(
        adaptive < exponential,
        "{adaptive} against {exponential}: {text}"
    );
}

#[test]
fn with_a_shared_store_the_fleet_has_one_breaker() {
    let local = explain(&["--fleet", "200", "--outage", "30m", "--key", "api"]).0;
    let shared = explain(&[
        "--fleet",
        "200",
        "--outage",
        "30m",
        "--key",
        "api",
        "--state",
        "redis://127.0.0.1:1",
    ])
    .0;
    assert_eq!(shared.status.code(), Some(0), "nothing is connected to");
    let (local, shared) = (
        String::from_utf8_lossy(&local.stdout),
        String::from_utf8_lossy(&shared.stdout),
    );
    assert!(
        calls_in_outage(&shared, "this policy") * 10 < calls_in_outage(&local, "this policy"),
        "{shared}\n{local}"
    );
}

#[test]
fn fleet_needs_explain_and_a_sane_interval() {
    let out = support::retry()
        .args(["--fleet", "10", "--", "true"])
        .output()
        .expect("retry runs");
    assert_eq!(out.status.code(), Some(125));
    let (out, _) = explain(&["--fleet", "10", "--every", "10ms"]);
    assert_eq!(out.status.code(), Some(125));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--every"));
    let (out, _) = explain(&["--fleet", "0"]);
    assert_eq!(out.status.code(), Some(125));
}

#[test]
fn a_fleet_too_long_to_simulate_is_refused_at_once_naming_the_limit() {
    // 5,000 processes every 5 minutes through a year: 5e8 runs, which would never end.
    let mut c = support::retry();
    c.args([
        "--explain",
        "--fleet",
        "5000",
        "--outage",
        "1y",
        "--",
        "true",
    ]);
    let started = Instant::now();
    let mut child = c
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("retry runs");
    while child.try_wait().expect("waited").is_none() {
        if started.elapsed() > support::PATIENCE {
            let _ = child.kill();
            panic!("still simulating after {:?}", support::PATIENCE);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output().expect("retry ends");
    assert_eq!(out.status.code(), Some(125));
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(
        said.contains("--fleet 5000") && said.contains("the most is 50000000"),
        "{said}"
    );
    assert!(out.stdout.is_empty());
}
