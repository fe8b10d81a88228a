//! Processes an attempt or a hook leaves behind when its first process dies become zombies of
//! whoever adopts orphans. In a container started without an init, that is a PID 1 that never
//! reaps them. This test process plays that PID 1: it is a child subreaper, so the orphans of
//! the retry it starts are reparented to it, and it never waits for them. A process group that
//! holds only zombies must count as gone.
//!
//! The subreaper setting is on a whole process, and this test binary runs every area's tests in
//! threads of one process: so each test here runs again in a process of its own (this binary,
//! given the test's own name), which becomes the reaper; nothing in it reaps with
//! `waitpid(-1)`, so each zombie stays. The other areas' orphans are never reparented to it.

// The portable build runs only the hook test here (see the two attempts' tests below).
#![cfg_attr(retry_portable, allow(unused_imports))]
use std::process::Stdio;
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

use crate::support::{Launch, retry, start, wait};

/// Makes this process the reaper of its descendants' orphans, and never reap them.
fn become_a_reaper_that_never_reaps() {
    nix::sys::prctl::set_child_subreaper(true).expect("PR_SET_CHILD_SUBREAPER");
}

/// Set in the process of its own that a test here runs in.
const ALONE: &str = "RETRY_TEST_ZOMBIES_ALONE";

/// Runs the test `name` of this module as the reaper that never reaps: in this process when it
/// is the test's own (`ALONE` set), else by starting this test binary again for that one test
/// and asserting that it ran and passed.
fn as_a_reaper_that_never_reaps(name: &str, test: impl FnOnce()) {
    if std::env::var_os(ALONE).is_some() {
        become_a_reaper_that_never_reaps();
        test();
        return;
    }
    let module = module_path!()
        .split_once("::")
        .map_or(module_path!(), |(_, m)| m);
    let exact = format!("{module}::{name}");
    let out = std::process::Command::new(std::env::current_exe().expect("this test binary"))
        .args([
            exact.as_str(),
            "--exact",
            "--nocapture",
            "--test-threads",
            "1",
        ])
        .env(ALONE, "1")
        .stdin(Stdio::null())
        .output()
        .expect("run the test in a process of its own");
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.status.success() && said.contains("test result: ok. 1 passed"),
        "{exact}, in a process of its own: {:?}\n{said}",
        out.status
    );
}

/// Well under the 10 s of the default `--kill-after`, which a zombie group used to wait out.
const PROMPT: Duration = Duration::from_secs(7);

// Linux only: elsewhere (and in the portable build) no /proc tells a group of zombies from a
// live one, and the run waits for them until --kill-after has passed (docs/child.md).
#[cfg(all(target_os = "linux", not(retry_portable)))]
#[test]
fn max_time_ends_a_run_whose_command_leaves_only_zombies_without_waiting_for_kill_after() {
    as_a_reaper_that_never_reaps(
        "max_time_ends_a_run_whose_command_leaves_only_zombies_without_waiting_for_kill_after",
        || {
            let started = Instant::now();
            let out = retry()
                .args(["--max-time", "1s", "--", "sh", "-c", "sleep 30 & sleep 30"])
                .run();
            let took = started.elapsed();
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(124), "{stderr}");
            assert!(took < PROMPT, "took {took:?}: {stderr}");
            assert!(
                !stderr.contains("outlived"),
                "no SIGKILL was needed: {stderr}"
            );
        },
    );
}

// Linux only: elsewhere (and in the portable build) no /proc tells a group of zombies from a
// live one, and the run waits for them until --kill-after has passed (docs/child.md).
#[cfg(all(target_os = "linux", not(retry_portable)))]
#[test]
fn sigterm_ends_a_run_whose_command_leaves_only_zombies_at_once() {
    as_a_reaper_that_never_reaps(
        "sigterm_ends_a_run_whose_command_leaves_only_zombies_at_once",
        || {
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
        },
    );
}

#[test]
fn a_hook_whose_background_child_becomes_a_zombie_does_not_hold_the_run() {
    as_a_reaper_that_never_reaps(
        "a_hook_whose_background_child_becomes_a_zombie_does_not_hold_the_run",
        || {
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
        },
    );
}

/// Counts the zombies whose parent is `$1` (awk over /proc: each status file gives Name, then
/// State, then PPid), then exits 3: the last attempt of the reaping tests. The files go
/// through cat, which passes over a process that ended after the glob was expanded; awk
/// would stop at it.
const COUNT_ZOMBIES: &str = r#"cat /proc/[0-9]*/status 2>/dev/null | awk -v p="$1" '
/^Name:/ { s = "" } /^State:/ { s = $2 }
/^PPid:/ { if ($2 == p && s == "Z") n++ } END { print "zombies " n + 0 }'"#;

/// Counts the processes whose parent is `$1` but this attempt (`$$`), zombies or not: the
/// orphans of the earlier attempts that retry has not reaped yet.
const COUNT_ORPHANS: &str = r#"cat /proc/[0-9]*/status 2>/dev/null | awk -v p="$1" -v me="$$" '
/^Pid:/ { pid = $2 } /^PPid:/ { if ($2 == p && pid != me) n++ } END { print n + 0 }'"#;

/// The attempts of the reaping tests: each of the first 29 leaves two orphans, which end at
/// once, and fails with 1; the 30th waits (20 s at most) until the last orphans have ended and
/// been reaped, so that it waits on what it checks and not on a guessed time, then counts the
/// zombies left to retry (`$PPID`), and exits 3. A retry that never reaps leaves them there:
/// the wait runs out and the count is not 0.
fn orphaning_attempts(parent: &str) -> String {
    format!(
        r#"if [ "$RETRY_ATTEMPT" -lt 30 ]; then true & true & exit 1; fi
set -- {parent}; i=0
while [ "$i" -lt 400 ] && [ "$({COUNT_ORPHANS})" != 0 ]; do sleep 0.05; i=$((i + 1)); done
{COUNT_ZOMBIES}; exit 3"#
    )
}

/// What a reaping retry must show: the last attempt saw no zombie, and every attempt's own
/// status was kept (29 times 1, then 3), none taken by the reaping.
fn assert_reaped_and_statuses_kept(out: &std::process::Output) {
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(stdout.trim(), "zombies 0", "{stderr}");
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    let ones = stderr.matches("failed: exit status 1 ").count();
    assert_eq!(ones, 29, "{stderr}");
}

/// As a container's PID 1 (here, of a PID namespace of its own), retry reaps the orphans of
/// its attempts, as tini and dumb-init do: no zombies pile up under --forever.
#[test]
fn as_pid_1_retry_reaps_the_orphans_of_its_attempts_and_keeps_their_statuses() {
    if !crate::support::have("unshare", "apt-get install util-linux") {
        return;
    }
    if !nix::unistd::geteuid().is_root() {
        assert!(
            std::env::var_os("CI").is_none(),
            "a PID namespace needs root here, and CI must run every test"
        );
        crate::support::skipped("needs root for a PID namespace (unshare --pid)");
        return;
    }
    let out = crate::support::hermetic(&mut std::process::Command::new("unshare"))
        .args(["--pid", "--fork", "--mount-proc"])
        .arg(crate::support::bin())
        .args(["--forever", "-d", "0", "--fatal-on", "3", "--", "sh", "-c"])
        .arg(orphaning_attempts("1"))
        .env_remove("RETRY_DEPTH")
        .stdin(Stdio::null())
        .output()
        .expect("run unshare");
    assert_reaped_and_statuses_kept(&out);
}

/// A child subreaper (set by whoever started retry, and kept across exec) adopts orphans as
/// PID 1 does: retry reaps them too. Linux only: elsewhere only PID 1 adopts orphans.
#[cfg(all(target_os = "linux", not(retry_portable)))]
#[test]
fn as_a_subreaper_retry_reaps_the_orphans_of_its_attempts() {
    use std::os::unix::process::CommandExt;
    let mut command = retry();
    // SAFETY: prctl is async-signal-safe, as the child side of fork requires.
    unsafe {
        command.pre_exec(|| {
            nix::sys::prctl::set_child_subreaper(true)?;
            Ok(())
        });
    }
    let out = command
        .args(["-n", "30", "-d", "0", "--fatal-on", "3", "--", "sh", "-c"])
        .arg(orphaning_attempts("$PPID"))
        .stdin(Stdio::null())
        .output()
        .expect("run retry");
    assert_reaped_and_statuses_kept(&out);
}
