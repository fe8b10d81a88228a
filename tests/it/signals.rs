//! Real signals sent to a running retry: they reach the command's whole process group, stop the
//! retrying, and leave nothing running. Each test waits for the child's `ready` line before it
//! signals, so no signal is sent before the trap that should catch it is set.

use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::Command;
use std::time::{Duration, Instant};

use nix::sys::signal::{SigSet, SigmaskHow, Signal, kill, sigprocmask};
use nix::unistd::Pid;

use crate::support::predicate;
use crate::support::{self, Launch, Lines, PATIENCE, Started, retry, wait};

/// What retry waits for while an attempt runs, besides its end and the signals: nothing
/// (then, on Linux, it blocks them and takes them with `sigtimedwait`), or also stdin, which it
/// replays to the attempt (then it watches a process descriptor for the end, in the `ppoll`
/// that serves the replay). Most tests here run both ways ([`both_ways`]).
#[derive(Clone, Copy)]
enum Waits {
    ForTheEndAlone,
    ForStdinToo,
}

impl Waits {
    /// The flags that make retry wait so.
    fn flags(self) -> &'static [&'static str] {
        match self {
            Waits::ForTheEndAlone => &[],
            Waits::ForStdinToo => &["--stdin", "replay"],
        }
    }

    fn start(self, args: &[&str]) -> (Started, Lines, Lines) {
        retry().args(self.flags()).args(args).start()
    }
}

fn send(child: &std::process::Child, signal: Signal) {
    kill(Pid::from_raw(child.id() as i32), signal).expect("signal retry");
}

/// Waits until none of the pids runs any more; false if some still do after `PATIENCE`.
fn all_gone(pids: &[i32]) -> bool {
    support::within(PATIENCE, || pids.iter().all(|p| !support::running(*p)))
}

fn pids(lines: &[String]) -> Vec<i32> {
    lines
        .iter()
        .filter_map(|l| l.strip_prefix("pid "))
        .map(|p| p.trim().parse().expect("a pid"))
        .collect()
}

/// A child that reports its background sleep's pid, traps TERM and INT, and says ready.
const TRAPPING: &str = r#"trap 'echo got-signal; kill $!; exit 1' TERM INT HUP
sleep 1000 & echo "pid $!"; echo ready; wait"#;

fn sigterm_reaches_the_command_and_stops_the_retrying(how: Waits) {
    let (mut child, out, err) = how.start(&["-n", "5", "-d", "0", "--", "sh", "-c", TRAPPING]);
    let lines = out.until("ready");
    send(&child, Signal::SIGTERM);
    let status = wait(&mut child);
    let rest = out.rest();
    // Cancelled: retry ends by the signal it got, whatever the trap made of it, so that a
    // shell's loop or script around it stops too.
    assert_eq!(status.signal(), Some(Signal::SIGTERM as i32), "{status:?}");
    assert!(rest.contains(&"got-signal".to_string()), "{rest:?}");
    assert!(
        !rest.iter().any(|l| l == "ready"),
        "no second attempt: {rest:?}"
    );
    assert!(all_gone(&pids(&lines)), "the background sleep is gone");
    let log = err.rest().join("\n");
    assert!(log.contains("cancelled by SIGTERM"), "{log}");
}

fn a_trapped_sigint_that_exits_130_is_not_retried(how: Waits) {
    let script = "trap 'exit 130' INT; echo ready; while :; do sleep 0.05; done";
    let (mut child, out, _err) = how.start(&["-n", "5", "-d", "0", "--", "sh", "-c", script]);
    out.until("ready");
    send(&child, Signal::SIGINT);
    let status = wait(&mut child);
    assert_eq!(status.signal(), Some(Signal::SIGINT as i32), "{status:?}");
    assert!(out.rest().is_empty(), "no second attempt");
}

fn sighup_kills_an_untrapped_command_and_retry_ends_by_the_same_signal(how: Waits) {
    let script = r#"sleep 1000 & echo "pid $!"; echo ready; wait"#;
    let (mut child, out, _err) = how.start(&["-n", "5", "-d", "0", "--", "sh", "-c", script]);
    let lines = out.until("ready");
    send(&child, Signal::SIGHUP);
    let status = wait(&mut child);
    assert_eq!(status.signal(), Some(Signal::SIGHUP as i32), "{status:?}");
    assert!(!status.core_dumped());
    assert!(all_gone(&pids(&lines)));
}

fn a_signal_during_the_wait_ends_the_run_at_once(how: Waits) {
    let (mut child, _out, err) = how.start(&["-d", "30s", "--jitter", "none", "--", "false"]);
    err.until("retrying in 30s");
    let sent = Instant::now();
    send(&child, Signal::SIGTERM);
    let status = wait(&mut child);
    assert!(
        sent.elapsed() < Duration::from_secs(5),
        "took {:?}",
        sent.elapsed()
    );
    assert_eq!(status.signal(), Some(Signal::SIGTERM as i32), "{status:?}");
    assert!(
        err.rest()
            .join("\n")
            .contains("cancelled by SIGTERM while waiting")
    );
}

fn attempt_timeout_leaves_no_process_of_the_attempt_running(how: Waits) {
    let script = r#"sleep 30 & echo "pid $!"; sleep 30 & echo "pid $!"; echo ready; wait"#;
    let (mut child, out, _err) = how.start(&[
        "-n",
        "1",
        "--attempt-timeout",
        "300ms",
        "--",
        "sh",
        "-c",
        script,
    ]);
    let lines = out.until("ready");
    let status = wait(&mut child);
    assert_eq!(status.code(), Some(124));
    let sleeps = pids(&lines);
    assert_eq!(sleeps.len(), 2);
    assert!(all_gone(&sleeps), "no sleep is left running");
}

fn a_command_that_ignores_term_is_killed_after_kill_after(how: Waits) {
    // Ignored signals stay ignored across exec, so the inner sleeps ignore TERM too.
    let script =
        r#"trap '' TERM; sleep 30 & echo "pid $!"; echo ready; while :; do sleep 0.05; done"#;
    let started = Instant::now();
    let (mut child, out, err) = how.start(&[
        "-n",
        "1",
        "--attempt-timeout",
        "200ms",
        "--kill-after",
        "400ms",
        "--",
        "sh",
        "-c",
        script,
    ]);
    let lines = out.until("ready");
    let status = wait(&mut child);
    assert_eq!(status.code(), Some(124));
    assert!(
        started.elapsed() >= Duration::from_millis(600),
        "{:?}",
        started.elapsed()
    );
    assert!(
        all_gone(&pids(&lines)),
        "the TERM-proof sleep got SIGKILL too"
    );
    assert!(err.rest().join("\n").contains("SIGKILL"));
}

fn a_second_sigint_kills_the_command_at_once(how: Waits) {
    let script = "trap 'echo got-int' INT; echo ready; while :; do sleep 0.05; done";
    let (mut child, out, err) = how.start(&["-n", "5", "--", "sh", "-c", script]);
    out.until("ready");
    send(&child, Signal::SIGINT);
    out.until("got-int");
    send(&child, Signal::SIGINT);
    let status = wait(&mut child);
    // The command got SIGKILL; retry, cancelled, ends by the signal it got.
    assert_eq!(status.signal(), Some(Signal::SIGINT as i32), "{status:?}");
    let log = err.rest().join("\n");
    assert!(log.contains("SIGINT again; killed the command"), "{log}");
}

fn a_sigterm_after_a_sigint_is_named_after_the_first_not_as_again(how: Waits) {
    let script = "trap 'echo got-int' INT; echo ready; while :; do sleep 0.05; done";
    let (mut child, out, err) = how.start(&["-n", "5", "--", "sh", "-c", script]);
    out.until("ready");
    send(&child, Signal::SIGINT);
    out.until("got-int");
    send(&child, Signal::SIGTERM);
    let status = wait(&mut child);
    // Cancelled by the first signal: retry ends by it.
    assert_eq!(status.signal(), Some(Signal::SIGINT as i32), "{status:?}");
    let log = err.rest().join("\n");
    assert!(
        log.contains("retry: SIGTERM after SIGINT; killed the command"),
        "{log}"
    );
    assert!(!log.contains("again"), "{log}");
}

fn usr1_is_passed_on_and_the_run_goes_on(how: Waits) {
    let script = r#"[ "$RETRY_ATTEMPT" = 2 ] && exit 0
trap 'echo got-usr1; exit 3' USR1; echo ready; while :; do sleep 0.05; done"#;
    let (mut child, out, _err) = how.start(&["-n", "2", "-d", "0", "--", "sh", "-c", script]);
    out.until("ready");
    send(&child, Signal::SIGUSR1);
    let status = wait(&mut child);
    assert!(out.rest().contains(&"got-usr1".to_string()));
    assert_eq!(
        status.code(),
        Some(0),
        "the second attempt ran and succeeded"
    );
}

/// retry, started with these signals blocked and no other, as some launchers and thread pools
/// start their children (whatever the test itself was started with: `perf record`, for one,
/// blocks SIGWINCH).
fn retry_blocking(signals: &[Signal]) -> Command {
    let mut set = SigSet::empty();
    for s in signals {
        set.add(*s);
    }
    let mut c = retry();
    // SAFETY: sigprocmask is async-signal-safe, as the child side of fork requires.
    unsafe {
        c.pre_exec(move || {
            sigprocmask(SigmaskHow::SIG_SETMASK, Some(&set), None)?;
            Ok(())
        });
    }
    c
}

/// The `SigBlk:` line of /proc/PID/status for a mask of these signals.
fn sigblk(signals: &[Signal]) -> String {
    let mask: u64 = signals.iter().map(|s| 1u64 << (*s as i32 - 1)).sum();
    format!("SigBlk:\t{mask:016x}")
}

fn started_with_sigchld_blocked_retry_still_sees_its_attempts_end_and_passes_the_mask_on(
    how: Waits,
) {
    let blocked = [Signal::SIGCHLD, Signal::SIGTERM];
    let mut command = retry_blocking(&blocked);
    command.args(how.flags()).args([
        "-n",
        "2",
        "-d",
        "0",
        "--",
        "grep",
        "^SigBlk:",
        "/proc/self/status",
    ]);
    let (mut child, out, _err) = command.start();
    let status = wait(&mut child);
    assert_eq!(status.code(), Some(0));
    assert_eq!(out.rest(), [sigblk(&blocked)]);
}

fn started_with_sigterm_blocked_retry_can_still_be_stopped(how: Waits) {
    let mut command = retry_blocking(&[Signal::SIGCHLD, Signal::SIGTERM]);
    command.args(how.flags()).args([
        "--kill-after",
        "200ms",
        "--",
        "sh",
        "-c",
        "echo ready; exec sleep 1000",
    ]);
    let (mut child, out, err) = command.start();
    out.until("ready");
    kill(Pid::from_raw(child.id() as i32), Signal::SIGTERM).expect("send SIGTERM");
    let status = wait(&mut child);
    assert!(!status.success());
    let lines = err.rest();
    assert!(
        lines.iter().any(|l| l.contains("SIGTERM received")),
        "{lines:?}"
    );
}

/// While an attempt runs, retry holds no process descriptor for it when its end and the
/// signals are all it waits for (it blocks them for the attempt and takes them with
/// `sigtimedwait`); when it also replays stdin, it watches a process descriptor for the end
/// in the `ppoll` that serves the replay. The attempt starts with the mask retry was started
/// with either way. The portable build has no process descriptor: SIGCHLD's handler wakes
/// its `poll`.
fn while_an_attempt_runs_retry_holds_a_process_descriptor_only_when_it_watches_more(how: Waits) {
    let mut command = retry_blocking(&[]);
    command.args(how.flags()).args([
        "--",
        "sh",
        "-c",
        // Once retry sleeps (S), it is in its wait: whatever it opens for it is open.
        r#"until [ "$(cut -d ' ' -f 3 /proc/$PPID/stat)" = S ]; do sleep 0.01; done
echo "process descriptors $(ls -l /proc/$PPID/fd | grep -c pidfd)"
grep ^SigBlk: /proc/self/status"#,
    ]);
    let (mut child, out, _err) = command.start();
    let status = wait(&mut child);
    assert_eq!(status.code(), Some(0));
    let descriptors = match how {
        Waits::ForStdinToo if cfg!(all(target_os = "linux", not(retry_portable))) => 1,
        _ => 0,
    };
    assert_eq!(
        out.rest(),
        [format!("process descriptors {descriptors}"), sigblk(&[])]
    );
}

/// Each of these tests, run with retry waiting for the attempt's end alone, and for stdin
/// too ([`Waits`]).
macro_rules! both_ways {
    ($($name:ident),* $(,)?) => {
        mod for_the_end_alone {
            $(#[test]
            fn $name() {
                super::$name(super::Waits::ForTheEndAlone)
            })*
        }
        mod for_stdin_too {
            $(#[test]
            fn $name() {
                super::$name(super::Waits::ForStdinToo)
            })*
        }
    };
}

both_ways!(
    sigterm_reaches_the_command_and_stops_the_retrying,
    a_trapped_sigint_that_exits_130_is_not_retried,
    sighup_kills_an_untrapped_command_and_retry_ends_by_the_same_signal,
    a_signal_during_the_wait_ends_the_run_at_once,
    attempt_timeout_leaves_no_process_of_the_attempt_running,
    a_command_that_ignores_term_is_killed_after_kill_after,
    a_second_sigint_kills_the_command_at_once,
    a_sigterm_after_a_sigint_is_named_after_the_first_not_as_again,
    usr1_is_passed_on_and_the_run_goes_on,
    started_with_sigchld_blocked_retry_still_sees_its_attempts_end_and_passes_the_mask_on,
    started_with_sigterm_blocked_retry_can_still_be_stopped,
    while_an_attempt_runs_retry_holds_a_process_descriptor_only_when_it_watches_more,
);

/// A CI runner's cancel (GitHub Actions: SIGINT to the step's shell, SIGTERM 7.5 s later) with
/// the README's `exec retry …`: the shell is retry, the signal reaches it, and everything
/// ends within a second, nothing left holding the step's stdout.
#[test]
fn a_ci_cancel_of_a_step_that_execs_retry_ends_everything_within_a_second() {
    let mut bash = Command::new("bash");
    crate::support::hermetic(&mut bash);
    bash.args([
        "-e",
        "-c",
        r#"exec "$0" -n 5 -d 1s -- sh -c 'echo "pid $$"; echo ready; exec sleep 1000'"#,
    ])
    .arg(crate::support::bin());
    let (mut child, out, _err) = bash.start();
    let lines = out.until("ready");
    let sent = Instant::now();
    send(&child, Signal::SIGINT);
    // The step's stdout closes: nothing of the run holds it.
    let rest = out.rest();
    let closed = sent.elapsed();
    let status = wait(&mut child);
    assert!(closed < Duration::from_secs(1), "took {closed:?}: {rest:?}");
    assert_eq!(status.signal(), Some(Signal::SIGINT as i32), "{status:?}");
    assert!(all_gone(&pids(&lines)), "the attempt's sleep is gone");
    assert!(
        !rest.iter().any(|l| l == "ready"),
        "no attempt after the cancel: {rest:?}"
    );
}

/// Starts `retry -n 1 -- sh -c SCRIPT` with `ignored` ignored, as `nohup` or a script's `&`
/// starts it; once the command says `ready`, sends `signal` to retry and to the command's
/// group (as a terminal does) and lets the command read a line. Returns retry's status, the
/// rest of its stdout after `survived`, and its log.
fn survives_an_ignored_signal(
    ignored: &'static [Signal],
    signal: Signal,
    script: &str,
) -> (std::process::ExitStatus, String, String) {
    let mut command = retry();
    // SAFETY: signal(2) is async-signal-safe, as the child side of fork requires.
    unsafe {
        command.pre_exec(move || {
            for sig in ignored {
                nix::sys::signal::signal(*sig, nix::sys::signal::SigHandler::SigIgn)?;
            }
            Ok(())
        });
    }
    command.args(["-n", "1", "--", "sh", "-c", script]);
    let mut child = command
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("start retry");
    let mut keyboard = child.stdin.take().expect("stdin");
    let out = crate::support::Lines::of(child.stdout.take().expect("stdout"));
    let err = crate::support::Lines::of(child.stderr.take().expect("stderr"));
    out.until("ready");
    send(&child, signal);
    let _ = nix::sys::signal::killpg(Pid::from_raw(child.id() as i32), signal);
    use std::io::Write;
    keyboard.write_all(b"go on\n").expect("write stdin");
    drop(keyboard);
    out.until("survived");
    let status = wait(&mut child);
    (status, out.rest().join("\n"), err.rest().join("\n"))
}

/// `nohup retry -- job &`: retry starts with SIGHUP ignored and keeps it so, for itself and
/// for the command: a hang-up passes them by, and the job goes on to its end.
#[test]
fn started_with_sighup_ignored_as_by_nohup_retry_and_the_command_survive_a_hang_up() {
    // The hang-up reaches retry and the command's group, as a terminal's does.
    let (status, _, log) = survives_an_ignored_signal(
        &[Signal::SIGHUP],
        Signal::SIGHUP,
        "echo ready; read line; echo survived",
    );
    assert_eq!(status.code(), Some(0), "{log}");
    assert!(!log.contains("SIGHUP"), "{log}");
}

/// In a script, `retry -- job &` starts with SIGINT and SIGQUIT ignored: they stay ignored,
/// for retry and the command, and are not taken as a cancel.
#[test]
fn started_with_sigint_ignored_as_by_a_scripts_background_job_retry_is_not_cancelled_by_it() {
    let (status, ignored, log) = survives_an_ignored_signal(
        &[Signal::SIGINT, Signal::SIGQUIT],
        Signal::SIGINT,
        "echo ready; read line; echo survived; grep ^SigIgn: /proc/self/status",
    );
    assert_eq!(status.code(), Some(0), "{log}");
    assert!(!log.contains("SIGINT"), "{log}");
    // SIGINT (2) and SIGQUIT (3) are bits 1 and 2 of the mask.
    let mask = ignored
        .trim()
        .strip_prefix("SigIgn:")
        .map(|m| u64::from_str_radix(m.trim(), 16).expect("a mask"))
        .expect("the command's SigIgn line");
    assert_eq!(mask & 0b110, 0b110, "{ignored}");
}

/// The command's SigIgn mask, as /proc/self/status gives it, from a `grep` that retry started.
fn ignored_by_the_command(command: &mut Command) -> u64 {
    let out = command
        .args(["--", "grep", "^SigIgn:", "/proc/self/status"])
        .run();
    out.assert().code(0);
    let line = out.stdout();
    line.trim()
        .strip_prefix("SigIgn:")
        .map(|m| u64::from_str_radix(m.trim(), 16).expect("a mask"))
        .unwrap_or_else(|| panic!("no SigIgn line: {line:?}"))
}

/// SIGXFSZ's bit in a /proc mask: signal n is bit n - 1.
const XFSZ_BIT: u64 = 1 << (Signal::SIGXFSZ as u64 - 1);

/// retry ignores SIGXFSZ (a file size limit is an error to it, not a death), but the command
/// starts with it at its default, as it would without retry: under `ulimit -f` it dies by it.
#[test]
fn the_command_starts_with_sigxfsz_at_its_default_and_dies_by_it_past_a_file_size_limit() {
    assert_eq!(ignored_by_the_command(&mut retry()) & XFSZ_BIT, 0);
    let dir = tempfile::tempdir().expect("temp dir");
    let out = retry()
        .args(["-n1", "--", "sh", "-c"])
        .arg("ulimit -f 1; exec head -c 2048 /dev/zero >\"$1\"")
        .arg("sh")
        .arg(dir.path().join("big"))
        .run();
    // retry ends as the command did.
    assert_eq!(
        out.status.signal(),
        Some(Signal::SIGXFSZ as i32),
        "{}",
        out.show()
    );
    out.assert()
        .stderr(predicate::str::contains("killed by SIGXFSZ"));
}

/// A SIGXFSZ ignored when retry starts stays ignored for the command.
#[test]
fn a_sigxfsz_ignored_when_retry_starts_stays_ignored_for_the_command() {
    let mut command = retry();
    // SAFETY: signal(2) is async-signal-safe, as the child side of fork requires.
    unsafe {
        command.pre_exec(|| {
            nix::sys::signal::signal(Signal::SIGXFSZ, nix::sys::signal::SigHandler::SigIgn)?;
            Ok(())
        });
    }
    assert_eq!(ignored_by_the_command(&mut command) & XFSZ_BIT, XFSZ_BIT);
}

/// Under a file size limit that the key's state file cannot fit, the state write is a warning,
/// said once: the first attempt runs and no retry (the budget cannot be kept, and a crowd of
/// such runs must not spend more than it holds), the exit status is the command's, and the
/// state file is the one written before, whole.
#[test]
fn a_state_file_past_a_file_size_limit_is_a_warning_and_stays_as_it_was() {
    let dir = tempfile::tempdir().expect("temp dir");
    let state = dir.path().join("state");
    let args = |n: &str| {
        [
            "--key",
            "limited",
            "--state-dir",
            state.to_str().expect("a UTF-8 path"),
            "-n",
            n,
            "-d",
            "0",
        ]
        .map(String::from)
    };
    let first = retry().args(args("1")).args(["--", "false"]).run();
    first.assert().code(1);
    let file = state.join("limited.json");
    let before = std::fs::read(&file).expect("the state file");
    let out = support::retry_under_file_limit(0)
        .args(args("3"))
        .args(["--", "sh", "-c", "echo ran; exit 1"])
        .run();
    out.assert().code(1);
    assert_eq!(out.stdout(), "ran\n", "{}", out.show());
    let warnings: Vec<String> = out
        .log()
        .into_iter()
        .filter(|l| l.contains("warning: key 'limited': cannot write"))
        .collect();
    assert_eq!(warnings.len(), 1, "{}", out.show());
    assert!(warnings[0].contains("File too large"), "{}", out.show());
    assert!(out.stderr().contains("retry: giving up after 1 attempt"));
    assert_eq!(std::fs::read(&file).expect("the state file"), before);
    let names: Vec<_> = std::fs::read_dir(&state)
        .expect("the state directory")
        .map(|e| e.expect("an entry").file_name())
        .collect();
    assert!(
        names
            .iter()
            .all(|n| !n.to_string_lossy().starts_with(".retry-")),
        "no temporary file left: {names:?}"
    );
}
