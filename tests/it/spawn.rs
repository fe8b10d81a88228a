//! An attempt that cannot be started for lack of resources (EAGAIN from a full process table
//! or RLIMIT_NPROC, ENOMEM, EMFILE, ENFILE) is a retryable failure of that attempt, said in
//! its own words, as bash's "fork: retry" tries again; 126 and 127 stay for a command that
//! cannot be executed or is not found.

use std::io::Read;
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};

use nix::sys::resource::{Resource, setrlimit};
use nix::unistd::{Gid, Uid, setgid, setuid};

use crate::support::{self, Launch, Lines, predicate};

/// A user of this test process's own, `n` telling a test's from another's: RLIMIT_NPROC counts
/// all of a user's processes, so no other process on the machine may be one of them, neither
/// another test of this run nor the same test of another run at the same time (a default and
/// a portable build tested at once). A pid is below 2^22, and no system gives out users near
/// three billion.
fn user(n: u32) -> u32 {
    3_000_000_000 + std::process::id() * 2 + n
}

/// `command`, run as user `uid` with at most `most` processes of that user's. RLIMIT_NPROC
/// counts a user's processes, and root (or CAP_SYS_RESOURCE) is not held to it.
fn as_user(command: &mut Command, uid: u32, most: u64) -> &mut Command {
    // SAFETY: setrlimit, setgid and setuid are async-signal-safe, as the child side of fork
    // requires.
    unsafe {
        command.pre_exec(move || {
            setrlimit(Resource::RLIMIT_NPROC, most, most)?;
            setgid(Gid::from_raw(uid))?;
            setuid(Uid::from_raw(uid))?;
            Ok(())
        })
    }
}

#[test]
fn a_spawn_that_fails_for_lack_of_processes_is_retried_until_there_is_room() {
    if !nix::unistd::geteuid().is_root() {
        assert!(
            std::env::var_os("CI").is_none(),
            "running as another user under RLIMIT_NPROC needs root, and CI must run every test"
        );
        crate::support::skipped("needs root: RLIMIT_NPROC binds only a user that is not root");
        return;
    }
    // Two processes of the user's at most: this one and retry, so that retry cannot start an
    // attempt until it is gone.
    let user = user(0);
    let mut blocker = Command::new("sh");
    as_user(&mut blocker, user, 2)
        .args(["-c", "read line"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null());
    let mut blocker = blocker.spawn().expect("start the blocker");
    let mut retry = support::retry();
    as_user(&mut retry, user, 2)
        .args([
            "-n", "1000", "-d", "20ms", "-b", "constant", "--jitter", "none", "--",
        ])
        .args(["sh", "-c", "echo started"])
        .current_dir("/")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut retry = retry.spawn().expect("start retry");
    let err = Lines::of(retry.stderr.take().expect("stderr"));
    let mut out = retry.stdout.take().expect("stdout");
    let said = err.until("lack of resources");
    // The blocker ends: retry's next attempt has room.
    drop(blocker.stdin.take());
    blocker.wait().expect("the blocker ends");
    let status = support::wait(&mut retry);
    let mut stdout = String::new();
    out.read_to_string(&mut stdout).expect("read stdout");
    let rest = err.rest();
    let log = format!("{}\n{}", said.join("\n"), rest.join("\n"));
    assert_eq!(status.code(), Some(0), "{log}");
    assert_eq!(stdout, "started\n", "{log}");
    assert!(log.contains("too many processes"), "{log}");
    assert!(
        log.contains("retryable: the system lacked the resources to start it"),
        "{log}"
    );
    assert!(!log.contains("cannot execute"), "{log}");
    // Not "cannot execute", 126 (the attempts' own numbers and times may hold "126").
    assert!(!log.contains("status 126"), "{log}");
}

#[test]
fn out_of_processes_to_the_last_attempt_ends_125() {
    if !nix::unistd::geteuid().is_root() {
        assert!(
            std::env::var_os("CI").is_none(),
            "running as another user under RLIMIT_NPROC needs root, and CI must run every test"
        );
        crate::support::skipped("needs root: RLIMIT_NPROC binds only a user that is not root");
        return;
    }
    // One process of the user's at most: retry itself.
    let mut retry = support::retry();
    let out = as_user(&mut retry, user(1), 1)
        .args(["-n", "3", "-d", "0", "--", "true"])
        .current_dir("/")
        .run();
    let log = out.stderr();
    assert_eq!(log.matches("lack of resources").count(), 3, "{log}");
    out.assert()
        .code(125)
        .stderr(predicate::str::contains("giving up after 3 attempts"));
}
