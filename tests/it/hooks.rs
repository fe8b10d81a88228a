//! `--on-retry` and `--on-giveup` through the built binary: what a hook is told, when it runs
//! and when not, and that a hook that fails or hangs changes nothing but a log line.
//!
//! Hooks and the command find the test's private folder in `$OUT`, an environment variable
//! given to retry, which both inherit.

use std::fs;
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use serde_json::Value;
use snapbox::str;
use tempfile::TempDir;

use crate::support;
use crate::support::{Launch, Lines, Run, assert_output, wait};

/// A wide margin: a hung hook would take 30 s, a working one well under a second or two.
const QUICK: Duration = Duration::from_secs(10);

/// retry with `$OUT` set to `dir`.
fn retry_in(dir: &TempDir) -> Command {
    let mut command = support::retry();
    command.env("OUT", dir.path());
    command
}

/// Runs retry with `$OUT` set to `dir`.
fn run(dir: &TempDir, args: &[&str]) -> Run {
    retry_in(dir).args(args).run()
}

/// `retry -n ATTEMPTS -d 0 FLAGS -- sh -c SCRIPT`, with `$OUT` set to `dir`.
fn run_hooked(dir: &TempDir, attempts: &str, flags: &[&str], script: &str) -> Run {
    let mut args = vec!["-n", attempts, "-d", "0"];
    args.extend(flags);
    args.extend(["--", "sh", "-c", script]);
    run(dir, &args)
}

/// Starts retry with `$OUT` set to `dir`; its stdout and stderr read line by line.
fn start(dir: &TempDir, args: &[&str]) -> (support::Started, Lines, Lines) {
    retry_in(dir).args(args).start()
}

/// A file's text; empty when it does not exist.
fn read(path: impl AsRef<Path>) -> String {
    fs::read_to_string(path).unwrap_or_default()
}

/// The value of `name` in the output of `env`.
fn var<'a>(env: &'a str, name: &str) -> Option<&'a str> {
    let prefix = format!("{name}=");
    env.lines().find_map(|l| l.strip_prefix(prefix.as_str()))
}

/// The files in `dir` whose names start with `prefix`, sorted.
fn files(dir: &TempDir, prefix: &str) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(dir.path())
        .expect("read the temp dir")
        .map(|e| {
            e.expect("an entry")
                .file_name()
                .to_string_lossy()
                .into_owned()
        })
        .filter(|n| n.starts_with(prefix))
        .collect();
    names.sort();
    names
}

fn summary(dir: &TempDir) -> Value {
    let text = read(dir.path().join("summary.json"));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("summary {text:?}: {e}"))
}

/// Waits up to `limit` for the process to be gone; whether it is.
fn gone_within(pid: i32, limit: Duration) -> bool {
    support::within(limit, || !support::running(pid))
}

/// Kills a `sleep` the test left behind, if it is still there, so that a failing test does
/// not leave it running.
struct Reap(Option<i32>);

impl Drop for Reap {
    fn drop(&mut self) {
        if let Some(pid) = self.0
            && read(format!("/proc/{pid}/cmdline")).starts_with("sleep")
        {
            let _ = kill(Pid::from_raw(pid), Signal::SIGKILL);
        }
    }
}

// --- what a hook is told ---

#[test]
fn on_retry_gets_the_attempt_its_status_the_next_delay_and_the_run_variables() {
    let dir = TempDir::new().expect("temp dir");
    let r = run(
        &dir,
        &[
            "-n",
            "3",
            "-d",
            "20ms",
            "-j",
            "none",
            "--on-retry",
            r#"env > "$OUT/retry.$RETRY_ATTEMPT""#,
            "--",
            "sh",
            "-c",
            r#"env > "$OUT/cmd.$RETRY_ATTEMPT"; exit 3"#,
        ],
    );
    r.assert().code(3);
    assert_eq!(files(&dir, "retry."), ["retry.1", "retry.2"]);
    let first = read(dir.path().join("retry.1"));
    let second = read(dir.path().join("retry.2"));
    let command = read(dir.path().join("cmd.1"));
    assert_eq!(
        var(&first, "RETRY_ATTEMPT"),
        Some("1"),
        "the attempt that failed"
    );
    assert_eq!(var(&second, "RETRY_ATTEMPT"), Some("2"));
    assert_eq!(var(&first, "RETRY_MAX_ATTEMPTS"), Some("3"));
    assert_eq!(var(&first, "RETRY_STATUS"), Some("3"));
    assert_eq!(var(&first, "RETRY_NEXT_DELAY_MS"), Some("20"));
    assert_eq!(
        var(&second, "RETRY_NEXT_DELAY_MS"),
        Some("40"),
        "exponential, no jitter"
    );
    assert_eq!(var(&first, "RETRY_REASON"), None);
    let key = var(&command, "RETRY_IDEMPOTENCY_KEY").expect("the command has a key");
    assert_eq!(key.len(), 36, "a UUID: {key}");
    assert_eq!(var(&first, "RETRY_IDEMPOTENCY_KEY"), Some(key));
    assert_eq!(var(&second, "RETRY_IDEMPOTENCY_KEY"), Some(key));
    assert_eq!(
        var(&first, "RETRY_DEPTH"),
        var(&command, "RETRY_DEPTH"),
        "the same depth as the command's"
    );
    assert_eq!(var(&first, "RETRY_DEPTH"), Some("1"));
}

#[test]
fn an_inherited_idempotency_key_reaches_the_hooks_too() {
    let dir = TempDir::new().expect("temp dir");
    let out = retry_in(&dir)
        .env("RETRY_IDEMPOTENCY_KEY", "key-from-outside")
        .args([
            "-n",
            "2",
            "-d",
            "0",
            "--on-retry",
            r#"env > "$OUT/retry""#,
            "--on-giveup",
            r#"env > "$OUT/giveup""#,
            "--",
            "false",
        ])
        .run();
    out.assert().code(1);
    for hook in ["retry", "giveup"] {
        let env = read(dir.path().join(hook));
        assert_eq!(
            var(&env, "RETRY_IDEMPOTENCY_KEY"),
            Some("key-from-outside"),
            "{hook}"
        );
    }
}

#[test]
fn on_giveup_gets_the_last_status_and_the_reason() {
    let dir = TempDir::new().expect("temp dir");
    let r = run_hooked(
        &dir,
        "2",
        &["--on-giveup", r#"env > "$OUT/giveup""#],
        "exit 4",
    );
    r.assert().code(4);
    let env = read(dir.path().join("giveup"));
    assert_eq!(var(&env, "RETRY_ATTEMPT"), Some("2"));
    assert_eq!(var(&env, "RETRY_MAX_ATTEMPTS"), Some("2"));
    assert_eq!(var(&env, "RETRY_STATUS"), Some("4"));
    assert_eq!(var(&env, "RETRY_REASON"), Some("attempts used up"));
    assert_eq!(
        var(&env, "RETRY_NEXT_DELAY_MS"),
        None,
        "there is no next delay"
    );
    assert!(var(&env, "RETRY_IDEMPOTENCY_KEY").is_some());
}

#[test]
fn on_giveup_runs_on_a_fatal_status_with_its_reason() {
    let dir = TempDir::new().expect("temp dir");
    let r = run_hooked(
        &dir,
        "5",
        &[
            "--fatal-on",
            "9",
            "--on-retry",
            r#"echo x >> "$OUT/retries""#,
            "--on-giveup",
            r#"env > "$OUT/giveup""#,
        ],
        "exit 9",
    );
    r.assert().code(9);
    assert_eq!(read(dir.path().join("retries")), "", "nothing was retried");
    let env = read(dir.path().join("giveup"));
    assert_eq!(var(&env, "RETRY_ATTEMPT"), Some("1"));
    assert_eq!(var(&env, "RETRY_STATUS"), Some("9"));
    let reason = var(&env, "RETRY_REASON").expect("a reason");
    assert!(
        !reason.is_empty() && reason != "attempts used up",
        "{reason}"
    );
}

#[test]
fn a_timed_out_attempt_is_status_124_for_the_hooks() {
    let dir = TempDir::new().expect("temp dir");
    let r = run(
        &dir,
        &[
            "-n",
            "2",
            "-d",
            "0",
            "--attempt-timeout",
            "100ms",
            "--on-retry",
            r#"echo "$RETRY_STATUS" > "$OUT/retry""#,
            "--on-giveup",
            r#"echo "$RETRY_STATUS" > "$OUT/giveup""#,
            "--",
            "sleep",
            "30",
        ],
    );
    r.assert().code(124);
    assert_eq!(read(dir.path().join("retry")), "124\n");
    assert_eq!(read(dir.path().join("giveup")), "124\n");
}

// --- when a hook runs ---

#[test]
fn on_retry_runs_once_per_wait_and_never_after_the_last_attempt() {
    let dir = TempDir::new().expect("temp dir");
    let r = run_hooked(
        &dir,
        "4",
        &[
            "--on-retry",
            r#"echo "retry $RETRY_ATTEMPT" >> "$OUT/log""#,
            "--on-giveup",
            r#"echo "giveup $RETRY_ATTEMPT" >> "$OUT/log""#,
        ],
        r#"echo "attempt $RETRY_ATTEMPT" >> "$OUT/log"; exit 1"#,
    );
    r.assert().code(1);
    assert_eq!(
        read(dir.path().join("log")),
        "attempt 1\nretry 1\nattempt 2\nretry 2\nattempt 3\nretry 3\nattempt 4\ngiveup 4\n"
    );
}

#[test]
fn on_retry_runs_before_the_retry_that_then_succeeds_and_on_giveup_does_not_run() {
    let dir = TempDir::new().expect("temp dir");
    let r = run_hooked(
        &dir,
        "5",
        &[
            "--on-retry",
            r#"echo "retry $RETRY_ATTEMPT" >> "$OUT/log""#,
            "--on-giveup",
            r#"echo giveup >> "$OUT/log""#,
        ],
        r#"echo "attempt $RETRY_ATTEMPT" >> "$OUT/log"; [ "$RETRY_ATTEMPT" = 2 ]"#,
    );
    r.assert().code(0);
    assert_eq!(
        read(dir.path().join("log")),
        "attempt 1\nretry 1\nattempt 2\n"
    );
}

#[test]
fn no_hook_runs_when_the_first_attempt_succeeds() {
    let dir = TempDir::new().expect("temp dir");
    let r = run(
        &dir,
        &[
            "-d",
            "0",
            "--on-retry",
            r#"touch "$OUT/retry""#,
            "--on-giveup",
            r#"touch "$OUT/giveup""#,
            "--",
            "true",
        ],
    );
    r.assert().code(0);
    assert!(files(&dir, "").is_empty(), "{:?}", files(&dir, ""));
}

#[test]
fn on_giveup_does_not_run_when_the_run_is_cancelled_during_an_attempt() {
    let dir = TempDir::new().expect("temp dir");
    let (mut child, out, _err) = start(
        &dir,
        &[
            "-n",
            "5",
            "-d",
            "0",
            "--on-retry",
            r#"touch "$OUT/retry""#,
            "--on-giveup",
            r#"touch "$OUT/giveup""#,
            "--summary",
            &dir.path().join("summary.json").to_string_lossy(),
            "--",
            "sh",
            "-c",
            "echo ready; while :; do sleep 0.05; done",
        ],
    );
    out.until("ready");
    kill(Pid::from_raw(child.id() as i32), Signal::SIGTERM).expect("signal retry");
    let status = wait(&mut child);
    assert_eq!(status.signal(), Some(Signal::SIGTERM as i32), "{status:?}");
    assert_eq!(files(&dir, "retry"), Vec::<String>::new());
    assert_eq!(files(&dir, "giveup"), Vec::<String>::new());
    assert_eq!(summary(&dir)["outcome"], "cancelled");
}

#[test]
fn on_giveup_does_not_run_when_the_run_is_cancelled_during_a_wait() {
    let dir = TempDir::new().expect("temp dir");
    let (mut child, _out, err) = start(
        &dir,
        &[
            "-n",
            "5",
            "-d",
            "30s",
            "-j",
            "none",
            "--on-giveup",
            r#"touch "$OUT/giveup""#,
            "--",
            "false",
        ],
    );
    err.until("retrying in");
    kill(Pid::from_raw(child.id() as i32), Signal::SIGTERM).expect("signal retry");
    let status = wait(&mut child);
    assert_eq!(status.signal(), Some(Signal::SIGTERM as i32), "{status:?}");
    assert_eq!(files(&dir, "giveup"), Vec::<String>::new());
}

// --- a hook's output, failure and hang ---

#[test]
fn hook_stdout_goes_to_stderr_not_to_retrys_stdout() {
    let dir = TempDir::new().expect("temp dir");
    let r = run_hooked(
        &dir,
        "2",
        &[
            "--on-retry",
            "echo from-on-retry",
            "--on-giveup",
            "echo from-on-giveup; echo err-from-on-giveup >&2",
        ],
        "echo from-command; exit 1",
    );
    r.assert().code(1);
    assert_eq!(r.stdout(), "from-command\nfrom-command\n");
    assert_output(
        r.stderr(),
        str![[r#"
retry: attempt 1/2 failed: exit status 1 after [ELAPSED] (retryable); retrying in 0ms
from-on-retry
retry: attempt 2/2 failed: exit status 1 after [ELAPSED] (not retried: attempts used up)
retry: giving up after 2 attempts in [ELAPSED]: attempts used up; last exit status 1; command: sh -c 'echo from-command; exit 1'
from-on-giveup
err-from-on-giveup

"#]],
    );
}

#[test]
fn a_failing_on_retry_hook_is_logged_and_changes_nothing() {
    let dir = TempDir::new().expect("temp dir");
    let r = run_hooked(
        &dir,
        "3",
        &["--on-retry", "exit 7"],
        r#"echo x >> "$OUT/runs"; [ "$RETRY_ATTEMPT" = 3 ]"#,
    );
    assert_eq!(r.code(), Some(0), "the run still succeeds: {}", r.stderr());
    assert_eq!(
        read(dir.path().join("runs")),
        "x\nx\nx\n",
        "every attempt ran"
    );
    assert_output(
        r.stderr(),
        str![[r#"
retry: attempt 1/3 failed: exit status 1 after [ELAPSED] (retryable); retrying in 0ms
retry: --on-retry hook failed: exit status 7
retry: attempt 2/3 failed: exit status 1 after [ELAPSED] (retryable); retrying in 0ms
retry: --on-retry hook failed: exit status 7
retry: attempt 3/3 succeeded after 2 attempts failed; [ELAPSED] in all; command: sh -c 'echo x >> "$OUT/runs"; [ "$RETRY_ATTEMPT" = 3 ]'

"#]],
    );
}

#[test]
fn a_failing_on_giveup_hook_is_logged_and_the_exit_status_is_the_commands() {
    let dir = TempDir::new().expect("temp dir");
    let r = run_hooked(&dir, "2", &["--on-giveup", "exit 1"], "exit 5");
    r.assert().code(5);
    assert_output(
        r.stderr(),
        str![[r#"
retry: attempt 1/2 failed: exit status 5 after [ELAPSED] (retryable); retrying in 0ms
retry: attempt 2/2 failed: exit status 5 after [ELAPSED] (not retried: attempts used up)
retry: giving up after 2 attempts in [ELAPSED]: attempts used up; last exit status 5; command: sh -c 'exit 5'
retry: --on-giveup hook failed: exit status 1

"#]],
    );
}

#[test]
fn a_hook_killed_by_a_signal_is_logged_as_a_failure() {
    let dir = TempDir::new().expect("temp dir");
    let r = run_hooked(
        &dir,
        "2",
        &["--on-retry", "kill -KILL $$"],
        r#"[ "$RETRY_ATTEMPT" = 2 ]"#,
    );
    r.assert().code(0);
    assert_output(
        r.stderr(),
        str![[r#"
retry: attempt 1/2 failed: exit status 1 after [ELAPSED] (retryable); retrying in 0ms
retry: --on-retry hook failed: killed by SIGKILL (status 137)
retry: attempt 2/2 succeeded after 1 attempt failed; [ELAPSED] in all; command: sh -c '[ "$RETRY_ATTEMPT" = 2 ]'

"#]],
    );
}

#[test]
fn a_hook_that_cannot_be_run_is_logged_and_changes_nothing() {
    let dir = TempDir::new().expect("temp dir");
    let r = run_hooked(
        &dir,
        "2",
        &["--on-giveup", "/nonexistent/retry-test-hook"],
        "exit 6",
    );
    r.assert().code(6);
    assert_output(
        r.stderr(),
        str![[r#"
retry: attempt 1/2 failed: exit status 6 after [ELAPSED] (retryable); retrying in 0ms
retry: attempt 2/2 failed: exit status 6 after [ELAPSED] (not retried: attempts used up)
retry: giving up after 2 attempts in [ELAPSED]: attempts used up; last exit status 6; command: sh -c 'exit 6'
sh: [..]/nonexistent/retry-test-hook: [..]
retry: --on-giveup hook failed: exit status 127

"#]],
    );
}

#[test]
fn a_hanging_hook_is_stopped_by_hook_timeout_and_the_run_goes_on() {
    let dir = TempDir::new().expect("temp dir");
    let r = run_hooked(
        &dir,
        "3",
        &[
            "--hook-timeout",
            "200ms",
            "--on-retry",
            "sleep 30",
            "--on-giveup",
            "sleep 30",
        ],
        r#"echo x >> "$OUT/runs"; exit 2"#,
    );
    assert!(r.took < QUICK, "took {:?}", r.took);
    r.assert().code(2);
    assert_eq!(read(dir.path().join("runs")), "x\nx\nx\n");
    assert_output(
        r.stderr(),
        str![[r#"
retry: attempt 1/3 failed: exit status 2 after [ELAPSED] (retryable); retrying in 0ms
retry: --on-retry hook failed: timed out after 200ms
retry: attempt 2/3 failed: exit status 2 after [ELAPSED] (retryable); retrying in 0ms
retry: --on-retry hook failed: timed out after 200ms
retry: attempt 3/3 failed: exit status 2 after [ELAPSED] (not retried: attempts used up)
retry: giving up after 3 attempts in [ELAPSED]: attempts used up; last exit status 2; command: sh -c 'echo x >> "$OUT/runs"; exit 2'
retry: --on-giveup hook failed: timed out after 200ms

"#]],
    );
}

#[test]
fn max_time_stops_an_on_retry_hook_as_it_stops_the_wait_and_on_giveup_still_runs() {
    let dir = TempDir::new().expect("temp dir");
    let r = run_hooked(
        &dir,
        "3",
        &[
            "--max-time",
            "500ms",
            "--on-retry",
            "sleep 30",
            "--on-giveup",
            r#"echo "$RETRY_REASON" > "$OUT/reason""#,
        ],
        "exit 2",
    );
    assert!(r.took < QUICK, "took {:?}", r.took);
    r.assert().code(2);
    assert_output(
        r.stderr(),
        str![[r#"
retry: attempt 1/3 failed: exit status 2 after [ELAPSED] (retryable); retrying in 0ms
retry: --on-retry hook failed: stopped after [..]: --max-time reached
retry: giving up after 1 attempt in [ELAPSED]: --max-time reached while waiting; last exit status 2; command: sh -c 'exit 2'

"#]],
    );
    assert_eq!(
        read(dir.path().join("reason")),
        "--max-time reached while waiting\n"
    );
}

#[test]
fn hook_timeout_0_lets_a_hook_run_to_its_end() {
    let dir = TempDir::new().expect("temp dir");
    let r = run_hooked(
        &dir,
        "2",
        &[
            "--hook-timeout",
            "0",
            "--on-retry",
            "sleep 0.3; echo hook done",
        ],
        r#"[ "$RETRY_ATTEMPT" = 2 ]"#,
    );
    r.assert().code(0);
    assert!(r.stderr().contains("hook done"), "{}", r.stderr());
    assert!(!r.stderr().contains("hook failed"), "{}", r.stderr());
}

#[test]
fn a_hook_that_ignores_term_is_killed_a_second_later() {
    let dir = TempDir::new().expect("temp dir");
    let r = run_hooked(
        &dir,
        "2",
        &[
            "--hook-timeout",
            "200ms",
            "--on-retry",
            "trap '' TERM; sleep 30",
        ],
        r#"[ "$RETRY_ATTEMPT" = 2 ]"#,
    );
    // The output is read to its end: nothing of the hook holds retry's stderr open.
    assert!(r.took < QUICK, "took {:?}", r.took);
    r.assert().code(0);
    // After the SIGKILL, the hook's sleep may still be a zombie its new parent has not reaped;
    // where retry cannot look in /proc (the portable build) it then adds "some of its
    // processes outlived SIGKILL", which is what it can see.
    assert_output(
        r.stderr(),
        str![[r#"
retry: attempt 1/2 failed: exit status 1 after [ELAPSED] (retryable); retrying in 0ms
retry: --on-retry hook failed: timed out after 200ms[..]
retry: attempt 2/2 succeeded after 1 attempt failed; [ELAPSED] in all; command: sh -c '[ "$RETRY_ATTEMPT" = 2 ]'

"#]],
    );
}

/// The hook's shell dies of TERM, but a process it started ignores TERM: the hook's process
/// group is to get SIGKILL a second later all the same.
#[test]
fn a_hook_process_that_ignores_term_is_killed_even_when_the_hook_shell_is_gone() {
    let dir = TempDir::new().expect("temp dir");
    let pid_file = dir.path().join("inner.pid");
    // stderr to a file: a leftover hook process holding a pipe open would block the test.
    let log = fs::File::create(dir.path().join("stderr")).expect("log file");
    let started = Instant::now();
    let status = support::retry()
        .env("OUT", dir.path())
        .args([
            "-n",
            "2",
            "-d",
            "0",
            "--hook-timeout",
            "500ms",
            "--on-retry",
            r#"sh -c 'trap "" TERM; echo $$ > "$OUT/inner.pid"; exec sleep 30'; echo after"#,
            "--",
            "sh",
            "-c",
            r#"[ "$RETRY_ATTEMPT" = 2 ]"#,
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(log)
        .status()
        .expect("run retry");
    assert!(started.elapsed() < QUICK, "took {:?}", started.elapsed());
    assert_eq!(status.code(), Some(0));
    let pid: i32 = read(&pid_file)
        .trim()
        .parse()
        .expect("the inner hook process wrote its pid");
    let _reap = Reap(Some(pid));
    assert!(
        gone_within(pid, Duration::from_secs(5)),
        "the hook's TERM-proof sleep (pid {pid}) is still running after retry ended; log: {}",
        read(dir.path().join("stderr"))
    );
}

/// The hook runs within the wait, so a hook that outlasts `--max-time` ends the run between
/// attempts: no attempt is started past the deadline, and retry exits with the last attempt's
/// status, not 124.
#[test]
fn no_attempt_starts_after_an_on_retry_hook_outlasts_max_time() {
    let dir = TempDir::new().expect("temp dir");
    let r = run(
        &dir,
        &[
            "-n",
            "5",
            "--max-time",
            "500ms",
            "-d",
            "10ms",
            "-j",
            "none",
            "--on-retry",
            "sleep 1",
            "--summary",
            &dir.path().join("summary.json").to_string_lossy(),
            "--",
            "sh",
            "-c",
            r#"echo "attempt $RETRY_ATTEMPT" >> "$OUT/runs"; exit 1"#,
        ],
    );
    assert!(r.took < QUICK, "took {:?}", r.took);
    let s = summary(&dir);
    assert_eq!(
        s["attempts"].as_array().map(Vec::len),
        Some(1),
        "no attempt after the deadline: {s}\n{}",
        r.stderr()
    );
    assert_eq!(read(dir.path().join("runs")), "attempt 1\n");
    assert_eq!(
        r.code(),
        Some(1),
        "the last attempt's status: {}",
        r.stderr()
    );
}

/// "A signal during a wait ends the run at once", and the on-retry hook runs within the wait.
#[test]
fn sigterm_while_the_on_retry_hook_runs_ends_the_run_at_once() {
    let dir = TempDir::new().expect("temp dir");
    let summary_path = dir.path().join("summary.json");
    let started = Instant::now();
    let (mut child, _out, err) = start(
        &dir,
        &[
            "-n",
            "3",
            "-d",
            "10ms",
            "--hook-timeout",
            "12s",
            "--on-retry",
            "echo hook-running; exec sleep 30",
            "--summary",
            &summary_path.to_string_lossy(),
            "--",
            "sh",
            "-c",
            r#"echo "attempt $RETRY_ATTEMPT" >> "$OUT/runs"; exit 1"#,
        ],
    );
    err.until("hook-running");
    let sent = Instant::now();
    kill(Pid::from_raw(child.id() as i32), Signal::SIGTERM).expect("signal retry");
    let status = wait(&mut child);
    let log = err.rest().join("\n");
    assert!(
        sent.elapsed() < QUICK,
        "took {:?} after SIGTERM ({:?} in all); log: {log}",
        sent.elapsed(),
        started.elapsed()
    );
    assert_eq!(
        read(dir.path().join("runs")),
        "attempt 1\n",
        "no attempt is started after the run was cancelled; log: {log}"
    );
    assert!(
        status.code() == Some(128 + 15) || status.signal() == Some(Signal::SIGTERM as i32),
        "{status:?}"
    );
    assert_eq!(summary(&dir)["outcome"], "cancelled");
}
