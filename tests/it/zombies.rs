//! Processes an attempt or a hook leaves behind when its first process dies become zombies of
//! whoever adopts orphans. In a container started without an init, that is a PID 1 that never
//! reaps them. This test process plays that PID 1: it is a child subreaper, so the orphans of
//! the retry it starts are reparented to it, and it never waits for them. A process group that
//! holds only zombies must count as gone.
//!
//! The subreaper setting is on this whole test process (it holds for every test in this file,
//! and they run in threads of it); nothing in it reaps with `waitpid(-1)`, so each zombie stays.

use crate::support;

use std::process::Stdio;
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

use support::{retry, start, wait};

/// Makes this process the reaper of its descendants' orphans, and never reap them.
fn become_a_reaper_that_never_reaps() {
    nix::sys::prctl::set_child_subreaper(true).expect("PR_SET_CHILD_SUBREAPER");
}

/// Well under the 10 s of the default `--kill-after`, which a zombie group used to wait out.
const PROMPT: Duration = Duration::from_secs(7);

#[test]
fn max_time_ends_a_run_whose_command_leaves_only_zombies_without_waiting_for_kill_after() {
    become_a_reaper_that_never_reaps();
    let started = Instant::now();
    let out = retry()
        .args(["--max-time", "1s", "--", "sh", "-c", "sleep 30 & sleep 30"])
        .stdin(Stdio::null())
        .output()
        .expect("run retry");
    let took = started.elapsed();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(124), "{stderr}");
    assert!(took < PROMPT, "took {took:?}: {stderr}");
    assert!(
        !stderr.contains("outlived"),
        "no SIGKILL was needed: {stderr}"
    );
}

#[test]
fn sigterm_ends_a_run_whose_command_leaves_only_zombies_at_once() {
    become_a_reaper_that_never_reaps();
    let (mut child, out, err) =
        start(&["--", "sh", "-c", "sleep 30 & sleep 30 & echo ready; wait"]);
    out.until("ready");
    let sent = Instant::now();
    kill(Pid::from_raw(child.id() as i32), Signal::SIGTERM).expect("send SIGTERM");
    let status = wait(&mut child);
    let took = sent.elapsed();
    let lines = err.rest();
    assert!(!status.success());
    assert!(took < PROMPT, "took {took:?}: {lines:?}");
    assert!(
        !lines.iter().any(|l| l.contains("outlived")),
        "no SIGKILL was needed: {lines:?}"
    );
}

#[test]
fn a_hook_whose_background_child_becomes_a_zombie_does_not_hold_the_run() {
    become_a_reaper_that_never_reaps();
    let started = Instant::now();
    let (mut child, _out, err) = start(&[
        "-n",
        "2",
        "-d",
        "0",
        "--hook-timeout",
        "1s",
        "--on-retry",
        "sleep 30 & sleep 30",
        "--",
        "false",
    ]);
    let status = wait(&mut child);
    let took = started.elapsed();
    let lines = err.rest();
    assert_eq!(status.code(), Some(1), "{lines:?}");
    assert!(took < PROMPT, "took {took:?}: {lines:?}");
    assert!(
        lines.iter().any(|l| l.contains("--on-retry hook failed")),
        "{lines:?}"
    );
}
