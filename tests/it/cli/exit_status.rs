//! retry's own exit status: the last attempt's status, 126 for a command that cannot
//! be run, and the signal that killed the command raised again.

use super::*;
use crate::support::PredicateBooleanExt;

#[test]
fn success_exits_zero() {
    run(&["-n", "3", "--", "true"])
        .assert()
        .code(0)
        .stdout("")
        .stderr("");
}

#[test]
fn success_after_retries_exits_zero() {
    run_sh(&["-n", "5", "-d", "0"], r#"[ "$RETRY_ATTEMPT" -ge 3 ]"#)
        .assert()
        .code(0);
}

#[test]
fn attempts_used_up_exits_with_the_last_attempts_status() {
    run_sh(&["-n", "3", "-d", "0"], r#"exit $((10 + RETRY_ATTEMPT))"#)
        .assert()
        .code(13);
}

#[test]
fn a_fatal_status_is_retrys_exit_status() {
    run_sh(&["--fatal-on", "42", "-d", "0"], "exit 42")
        .assert()
        .code(42);
}

#[test]
fn a_non_executable_file_exits_126_without_retrying() {
    let dir = TempDir::new().expect("temp dir");
    let script = dir.path().join("script.sh");
    write_file(&script, "#!/bin/sh\necho ran\n", 0o644);
    let r = run(&[
        OsStr::new("-n"),
        OsStr::new("3"),
        OsStr::new("-d"),
        OsStr::new("0"),
        OsStr::new("--log-format"),
        OsStr::new("json"),
        OsStr::new("--"),
        script.as_os_str(),
    ]);
    r.assert().code(126).stdout("");
    assert_eq!(r.failures(), 1, "{}", r.show());
}

#[test]
fn a_directory_as_command_exits_126() {
    let dir = TempDir::new().expect("temp dir");
    let r = run(&[
        OsStr::new("-n"),
        OsStr::new("2"),
        OsStr::new("-d"),
        OsStr::new("0"),
        OsStr::new("--"),
        dir.path().as_os_str(),
    ]);
    r.assert().code(126);
}

#[test]
fn a_child_killed_by_a_signal_makes_retry_end_by_the_same_signal() {
    let r = run_sh(&["-n", "1"], "kill -KILL $$");
    assert_eq!(r.out.status.signal(), Some(9), "{}", r.show());
    assert_eq!(r.code(), None);
    assert!(!r.out.status.core_dumped(), "{}", r.show());
}

#[test]
fn a_child_killed_by_a_real_time_signal_makes_retry_end_by_it_too() {
    let rt = nix::libc::SIGRTMIN() + 1;
    let r = run_sh(&["-n", "1"], &format!("kill -{rt} $$"));
    assert_eq!(r.out.status.signal(), Some(rt), "{}", r.show());
    r.assert().stderr(predicate::str::contains(format!(
        "killed by SIGRTMIN+1 (status {})",
        128 + rt
    )));
}

#[test]
fn a_signal_that_dumps_core_is_reraised_without_a_core_dump() {
    let dir = TempDir::new().expect("temp dir");
    let mut cmd = retry();
    cmd.current_dir(dir.path())
        .args(["-n", "1", "--", "sh", "-c", "ulimit -c 0; kill -ABRT $$"]);
    let r = cmd.run();
    assert_eq!(r.out.status.signal(), Some(6), "{}", r.show());
    assert!(!r.out.status.core_dumped(), "{}", r.show());
}

#[test]
fn attempts_used_up_by_signals_end_by_the_last_signal() {
    let r = run_sh(&["-n", "2", "-d", "0"], "kill -TERM $$");
    assert_eq!(r.out.status.signal(), Some(15), "{}", r.show());
}

/// The shell prints "Segmentation fault  retry …" after retry ends by the command's signal:
/// retry's last line says first that the command died by it, so nobody reads it as retry's
/// crash.
#[test]
fn the_give_up_line_says_retry_ends_by_the_commands_signal() {
    let r = run_sh(&["-n", "2", "-d", "0"], "kill -SEGV $$");
    assert_eq!(r.out.status.signal(), Some(11), "{}", r.show());
    let last = r.log().last().cloned().unwrap_or_default();
    assert!(
        last.contains("last killed by SIGSEGV")
            && last.contains("retry ends by SIGSEGV too, as the command did"),
        "{}",
        r.show()
    );
    // Not after a cancel, nor for SIGINT, of which a shell says nothing.
    run_sh(&["-n", "1"], "kill -INT $$")
        .assert()
        .stderr(predicate::str::contains("retry ends by").not());
}
