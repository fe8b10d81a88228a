//! State shared between runs (`--key`, SPEC §9) through the built binary, with real processes
//! and real files: the breaker opening across runs and refusing with 75 without running the
//! command, one probe among many runs started at once, a probe that dies, the budget across
//! runs, corrupt and unwritable state, `--reset-state` and `--explain`.
//!
//! Each test has its own state directory. Waits for a breaker's open time are real but short
//! (a few hundred milliseconds), and every assertion on them leaves a wide margin.

mod common;

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use serde_json::Value;
use tempfile::TempDir;

/// A state directory and a place for the commands' marks.
struct Setup {
    dir: TempDir,
}

impl Setup {
    fn new() -> Setup {
        Setup {
            dir: tempfile::tempdir().expect("temporary directory"),
        }
    }

    fn state(&self) -> PathBuf {
        self.dir.path().join("state")
    }

    /// A file each run of the command appends a line to: how many times it ran.
    fn marks(&self) -> PathBuf {
        self.dir.path().join("marks")
    }

    fn ran(&self) -> usize {
        fs::read_to_string(self.marks())
            .map(|s| s.lines().count())
            .unwrap_or(0)
    }

    /// retry with this state directory and `args`, before `--`.
    fn retry(&self, args: &[&str]) -> Command {
        let mut c = common::retry();
        c.env_remove("RETRY_STATE_DIR")
            .env_remove("RETRY_DEPTH")
            .arg("--state-dir")
            .arg(self.state())
            .args(args);
        c
    }

    /// A command that marks that it ran, then exits with `code`.
    fn command(&self, code: i32) -> Vec<String> {
        vec![
            "sh".into(),
            "-c".into(),
            format!("echo ran >> '{}'; exit {code}", self.marks().display()),
        ]
    }

    fn run(&self, args: &[&str], code: i32) -> Output {
        let mut c = self.retry(args);
        c.arg("--").args(self.command(code));
        output(c)
    }

    fn file(&self, key: &str) -> PathBuf {
        self.state().join(format!("{key}.json"))
    }
}

fn output(mut c: Command) -> Output {
    let child = c
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("retry starts");
    child.wait_with_output().expect("retry ends")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Flags that open the breaker after 3 failures and keep it open for `open`.
fn breaker(open: &str) -> Vec<&str> {
    vec![
        "--key",
        "api",
        "--breaker-failures",
        "3",
        "--breaker-open",
        open,
        "-d",
        "1ms",
    ]
}

fn with<'a>(base: &[&'a str], more: &[&'a str]) -> Vec<&'a str> {
    base.iter().chain(more).copied().collect()
}

#[test]
fn the_breaker_opens_across_runs_and_refuses_with_75_without_running_the_command() {
    let s = Setup::new();
    let flags = with(&breaker("1h"), &["-n", "1"]);
    for _ in 0..2 {
        assert_eq!(s.run(&flags, 7).status.code(), Some(7));
    }
    assert_eq!(s.ran(), 2);
    let third = s.run(&flags, 7);
    assert_eq!(
        third.status.code(),
        Some(7),
        "the run that opens it keeps its status"
    );
    assert!(
        stderr(&third).contains("the breaker opened for"),
        "{}",
        stderr(&third)
    );
    let refused = s.run(&flags, 0);
    assert_eq!(refused.status.code(), Some(75), "{}", stderr(&refused));
    assert_eq!(s.ran(), 3, "the refused run ran nothing");
    let log = stderr(&refused);
    assert!(
        log.contains("not running") && log.contains("key 'api' is open for another"),
        "{log}"
    );
    // Another key is another failure domain.
    let other = s.run(&["--key", "db", "-n", "1"], 0);
    assert_eq!(other.status.code(), Some(0));
    assert_eq!(s.ran(), 4);
}

#[test]
fn a_run_going_on_stops_at_its_next_retry_with_its_last_status() {
    let s = Setup::new();
    let out = s.run(&with(&breaker("1h"), &["-n", "10"]), 4);
    assert_eq!(out.status.code(), Some(4));
    assert_eq!(s.ran(), 3, "{}", stderr(&out));
    assert!(
        stderr(&out).contains("not retried: the breaker for key 'api' is open"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn fatal_statuses_do_not_open_the_breaker() {
    let s = Setup::new();
    for _ in 0..4 {
        let out = s.run(&with(&breaker("1h"), &["-n", "2", "--fatal-on", "9"]), 9);
        assert_eq!(out.status.code(), Some(9));
    }
    assert_eq!(s.ran(), 4);
    assert_eq!(s.run(&breaker("1h"), 0).status.code(), Some(0));
}

#[test]
fn after_the_open_time_exactly_one_of_30_runs_started_at_once_probes() {
    let s = Setup::new();
    let flags = with(&breaker("300ms"), &["-n", "3"]);
    assert_eq!(s.run(&flags, 1).status.code(), Some(1));
    assert_eq!(s.ran(), 3);
    thread::sleep(Duration::from_millis(400));
    // The probe runs long enough that every other run starts while it holds the lease.
    let mut probe = vec!["sh".to_string(), "-c".to_string()];
    probe.push(format!(
        "echo ran >> '{}'; sleep 2; exit 0",
        s.marks().display()
    ));
    let children: Vec<_> = (0..30)
        .map(|_| {
            let mut c = s.retry(&flags);
            c.arg("--")
                .args(&probe)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::piped());
            c.spawn().expect("retry starts")
        })
        .collect();
    let outputs: Vec<Output> = children
        .into_iter()
        .map(|c| c.wait_with_output().expect("retry ends"))
        .collect();
    let codes: Vec<Option<i32>> = outputs.iter().map(|o| o.status.code()).collect();
    assert_eq!(s.ran(), 4, "one probe among 30: {codes:?}");
    assert_eq!(
        codes.iter().filter(|c| **c == Some(0)).count(),
        1,
        "{codes:?}"
    );
    assert_eq!(
        codes.iter().filter(|c| **c == Some(75)).count(),
        29,
        "{codes:?}"
    );
    let probing = outputs
        .iter()
        .filter(|o| stderr(o).contains("this run probes"))
        .count();
    assert_eq!(probing, 1);
    // The probe succeeded: the breaker is closed for everyone.
    assert_eq!(s.run(&flags, 0).status.code(), Some(0));
}

#[test]
fn a_failed_probe_reopens_the_breaker_for_longer() {
    let s = Setup::new();
    let flags = with(&breaker("300ms"), &["-n", "3"]);
    s.run(&flags, 1);
    thread::sleep(Duration::from_millis(400));
    let probe = s.run(&flags, 1);
    assert_eq!(probe.status.code(), Some(1));
    assert_eq!(s.ran(), 4, "the probe is one attempt: {}", stderr(&probe));
    assert!(
        stderr(&probe).contains("the probe failed"),
        "{}",
        stderr(&probe)
    );
    let state: Value =
        serde_json::from_slice(&fs::read(s.file("api")).expect("state file")).expect("JSON");
    assert_eq!(state["state"]["breaker"]["state"], "open");
    assert_eq!(state["state"]["breaker"]["open_for"], 600, "doubled");
    // 400 ms after the probe the first open time would be over, the doubled one is not.
    thread::sleep(Duration::from_millis(400));
    assert_eq!(s.run(&flags, 0).status.code(), Some(75));
}

#[test]
fn a_probe_killed_with_sigkill_leaves_a_lease_that_expires() {
    let s = Setup::new();
    // The lease is the attempt timeout: 1s.
    let flags = with(&breaker("200ms"), &["-n", "3", "--attempt-timeout", "1s"]);
    s.run(&flags, 1);
    thread::sleep(Duration::from_millis(300));
    let mut c = s.retry(&flags);
    c.arg("--")
        .args([
            "sh",
            "-c",
            &format!(
                "echo ran >> '{}'; echo ready $$; exec sleep 30",
                s.marks().display()
            ),
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    let mut probe = c.spawn().expect("retry starts");
    let lines = common::Lines::of(probe.stdout.take().expect("stdout"));
    let ready = lines.until("ready");
    let killed_at = Instant::now();
    probe.kill().expect("SIGKILL");
    probe.wait().expect("reaped");
    // The attempt, in its own process group, outlives retry: end it too.
    let group = ready
        .last()
        .and_then(|l| l.strip_prefix("ready "))
        .and_then(|pid| pid.trim().parse::<i32>().ok())
        .expect("the attempt's pid");
    let _ = nix::sys::signal::killpg(
        nix::unistd::Pid::from_raw(group),
        nix::sys::signal::Signal::SIGKILL,
    );
    // Its lease holds: the others are refused while it lasts...
    let during = s.run(&flags, 0);
    if killed_at.elapsed() < Duration::from_millis(900) {
        assert_eq!(during.status.code(), Some(75), "{}", stderr(&during));
        assert!(stderr(&during).contains("probing"), "{}", stderr(&during));
    }
    // ...and once it expires, the next run probes, and its success closes the breaker.
    thread::sleep(Duration::from_millis(1100).saturating_sub(killed_at.elapsed()));
    let after = s.run(&flags, 0);
    assert_eq!(after.status.code(), Some(0), "{}", stderr(&after));
    assert!(
        stderr(&after).contains("this run probes"),
        "{}",
        stderr(&after)
    );
    assert!(stderr(&after).contains("closed"), "{}", stderr(&after));
}

#[test]
fn the_budget_is_shared_by_runs_and_a_spent_budget_ends_a_run_with_its_status() {
    let s = Setup::new();
    let flags = [
        "--key",
        "api",
        "--breaker-failures",
        "0",
        "--budget-burst",
        "4",
        "-n",
        "3",
        "-d",
        "1ms",
    ];
    // Two retries each: the first two runs spend all four tokens.
    for _ in 0..2 {
        assert_eq!(s.run(&flags, 5).status.code(), Some(5));
    }
    assert_eq!(s.ran(), 6);
    let third = s.run(&flags, 5);
    assert_eq!(third.status.code(), Some(5), "its last attempt's status");
    assert_eq!(
        s.ran(),
        7,
        "a first attempt is always allowed, a retry is not"
    );
    assert!(
        stderr(&third).contains("the retry budget for key 'api' is spent"),
        "{}",
        stderr(&third)
    );
}

#[test]
fn a_corrupt_state_file_is_moved_aside_and_the_run_goes_on_as_for_a_new_key() {
    let s = Setup::new();
    fs::create_dir_all(s.state()).expect("state dir");
    fs::write(s.file("api"), b"{\"version\":1,\"state\":").expect("write");
    let out = s.run(&["--key", "api", "-n", "2", "-d", "1ms"], 3);
    assert_eq!(out.status.code(), Some(3), "the outcome stands");
    assert_eq!(s.ran(), 2);
    assert!(
        stderr(&out).contains("could not be read"),
        "{}",
        stderr(&out)
    );
    let aside = fs::read(s.state().join("api.json.corrupt")).expect("moved aside");
    assert_eq!(aside, b"{\"version\":1,\"state\":");
    let state: Value =
        serde_json::from_slice(&fs::read(s.file("api")).expect("new state")).expect("JSON");
    assert_eq!(
        state["state"]["breaker"]["failures"]
            .as_array()
            .map(Vec::len),
        Some(2)
    );
}

#[test]
fn an_unwritable_state_directory_is_a_warning_and_changes_no_outcome() {
    // A file where the directory should be: unwritable for root too.
    let s = Setup::new();
    fs::write(s.state(), b"a file where the directory should be").expect("write");
    let out = s.run(&["--key", "api", "-n", "2", "-d", "1ms"], 6);
    assert_eq!(out.status.code(), Some(6));
    assert_eq!(s.ran(), 2, "the run went on without state");
    let log = stderr(&out);
    assert!(
        log.contains("warning: key 'api'") && log.contains("going on without"),
        "{log}"
    );
    assert_eq!(
        log.matches("warning").count(),
        1,
        "one warning, not one per attempt: {log}"
    );
    let ok = s.run(&["--key", "api", "-n", "1"], 0);
    assert_eq!(ok.status.code(), Some(0));
}

fn nix_is_root() -> bool {
    fs::metadata("/proc/self")
        .map(|m| std::os::unix::fs::MetadataExt::uid(&m) == 0)
        .unwrap_or(false)
}

#[test]
fn a_read_only_state_directory_is_a_warning_when_not_root() {
    if nix_is_root() {
        eprintln!("skipped: root can write to a read-only directory");
        return;
    }
    let s = Setup::new();
    fs::create_dir_all(s.state()).expect("state dir");
    fs::set_permissions(s.state(), fs::Permissions::from_mode(0o500)).expect("chmod");
    let out = s.run(&["--key", "api", "-n", "2", "-d", "1ms"], 6);
    assert_eq!(out.status.code(), Some(6));
    assert!(stderr(&out).contains("warning"), "{}", stderr(&out));
}

#[test]
fn reset_state_forgets_the_key_and_runs_nothing() {
    let s = Setup::new();
    s.run(&with(&breaker("1h"), &["-n", "3"]), 1);
    assert_eq!(s.run(&breaker("1h"), 0).status.code(), Some(75));
    let mut c = s.retry(&["--key", "api", "--reset-state", "--", "sh", "-c", "exit 9"]);
    c.env("MARKS", s.marks());
    let reset = output(c);
    assert_eq!(reset.status.code(), Some(0), "{}", stderr(&reset));
    assert!(!s.file("api").exists());
    assert_eq!(s.ran(), 3, "nothing ran");
    assert_eq!(s.run(&breaker("1h"), 0).status.code(), Some(0));
    // Without a command too; and it needs a key.
    assert_eq!(
        output(s.retry(&["--key", "api", "--reset-state"]))
            .status
            .code(),
        Some(0)
    );
    assert_eq!(output(s.retry(&["--reset-state"])).status.code(), Some(125));
}

#[test]
fn explain_shows_the_keys_state_without_changing_it() {
    let s = Setup::new();
    s.run(&with(&breaker("1h"), &["-n", "2"]), 1);
    let before = fs::read(s.file("api")).expect("state");
    let modified = fs::metadata(s.file("api")).and_then(|m| m.modified()).ok();
    let out = output(s.retry(&with(&breaker("1h"), &["--explain"])));
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("Shared state (key 'api'"), "{text}");
    assert!(text.contains("closed, 2 failures counted"), "{text}");
    assert!(text.contains("tokens now       9."), "{text}");
    assert_eq!(fs::read(s.file("api")).expect("state"), before);
    assert_eq!(
        fs::metadata(s.file("api")).and_then(|m| m.modified()).ok(),
        modified
    );
}

#[test]
fn a_key_never_reaches_outside_the_state_directory() {
    let s = Setup::new();
    let out = s.run(&["--key", "../../escape", "-n", "2", "-d", "1ms"], 1);
    assert_eq!(out.status.code(), Some(1));
    let names: Vec<String> = fs::read_dir(s.state())
        .expect("state dir")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    // One name with no slash in it: "../" became "%2E.%2F".
    assert!(
        names.contains(&"%2E.%2F..%2Fescape.json".to_string()),
        "{names:?}"
    );
    assert!(!s.dir.path().join("escape.json").exists());
    assert!(!Path::new(s.dir.path()).join("../escape.json").exists());
}

#[test]
fn the_json_log_summary_and_metrics_carry_the_key() {
    let s = Setup::new();
    let summary = s.dir.path().join("summary.json");
    let metrics = s.dir.path().join("metrics.prom");
    let mut flags = with(&breaker("1h"), &["-n", "4", "--log-format", "json"]);
    let (summary_s, metrics_s) = (summary.display().to_string(), metrics.display().to_string());
    flags.extend(["--summary", &summary_s, "--metrics", &metrics_s]);
    let out = s.run(&flags, 1);
    assert_eq!(out.status.code(), Some(1));
    let lines: Vec<Value> = stderr(&out)
        .lines()
        .map(|l| serde_json::from_str(l).expect("JSON line"))
        .collect();
    let state = lines
        .iter()
        .find(|l| l["event"] == "state")
        .expect("a state event");
    assert_eq!(state["key"], "api");
    assert_eq!(state["breaker"], "open");
    assert_eq!(state["probe"], false);
    assert!(lines.iter().all(|l| l["key"] == "api"), "{lines:?}");
    let sum: Value = serde_json::from_slice(&fs::read(&summary).expect("summary")).expect("JSON");
    assert_eq!(sum["key"]["key"], "api");
    assert_eq!(sum["key"]["breaker"], "open");
    assert_eq!(sum["key"]["refused"], "breaker");
    assert_eq!(sum["key"]["tokens"], 8.0);
    let text = fs::read_to_string(&metrics).expect("metrics");
    assert!(
        text.contains("retry_breaker_open{name=\"sh\",key=\"api\"} 1"),
        "{text}"
    );
    assert!(
        text.contains("retry_budget_tokens{name=\"sh\",key=\"api\"} 8"),
        "{text}"
    );
    assert!(
        text.contains("retry_state_refusals_total{name=\"sh\",key=\"api\",reason=\"breaker\"} 1"),
        "{text}"
    );
    // A refused run is counted as such.
    let refused = s.run(&flags, 0);
    assert_eq!(refused.status.code(), Some(75));
    let text = fs::read_to_string(&metrics).expect("metrics");
    assert!(
        text.contains("retry_runs_total{name=\"sh\",outcome=\"refused\"} 1"),
        "{text}"
    );
    assert!(
        text.contains("retry_state_refusals_total{name=\"sh\",key=\"api\",reason=\"breaker\"} 2"),
        "{text}"
    );
}

#[test]
fn a_profile_in_the_config_file_sets_the_key() {
    let s = Setup::new();
    let config = s.dir.path().join("config.toml");
    fs::write(
        &config,
        "[profiles.api]\nkey = \"api.example.com\"\nbreaker-failures = 2\nattempts = 2\ndelay = \"1ms\"\n",
    )
    .expect("config");
    let config_s = config.display().to_string();
    let flags = ["--config", &config_s, "-p", "api"];
    assert_eq!(s.run(&flags, 1).status.code(), Some(1));
    assert_eq!(s.run(&flags, 0).status.code(), Some(75));
    assert!(s.file("api.example.com").exists());
}

#[test]
fn bad_state_flags_are_usage_errors_naming_the_value() {
    let s = Setup::new();
    for (args, word) in [
        (vec!["--key", ""], "is not a key"),
        (vec!["--key", "a", "--budget-ratio=-1"], "--budget-ratio -1"),
        (
            vec!["--key", "a", "--breaker-open", "0"],
            "--breaker-open 0",
        ),
        (vec!["--key", "a", "--breaker-failures", "5000"], "5000"),
    ] {
        let mut c = s.retry(&args);
        c.args([
            "--",
            "sh",
            "-c",
            &format!("echo ran >> '{}'", s.marks().display()),
        ]);
        let out = output(c);
        assert_eq!(out.status.code(), Some(125), "{args:?}");
        assert!(stderr(&out).contains(word), "{args:?}: {}", stderr(&out));
    }
    assert_eq!(s.ran(), 0);
}

#[test]
fn a_lock_held_too_long_by_another_process_means_going_on_without_state() {
    let s = Setup::new();
    fs::create_dir_all(s.state()).expect("state dir");
    let lock = fs::File::create(s.state().join("api.lock")).expect("lock file");
    lock.lock().expect("held by the test");
    let started = Instant::now();
    let out = s.run(&["--key", "api", "-n", "3", "-d", "1ms"], 2);
    assert_eq!(out.status.code(), Some(2), "the outcome stands");
    assert_eq!(s.ran(), 3, "the run went on without state");
    assert!(
        stderr(&out).contains("stayed locked too long"),
        "{}",
        stderr(&out)
    );
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "it did not wait for the lock"
    );
    drop(lock);
    assert!(
        !s.file("api").exists(),
        "nothing was written without the lock"
    );
}
