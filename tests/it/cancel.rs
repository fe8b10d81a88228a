//! A CI runner's cancel of a step that runs retry without `exec`, with `--stop-with-parent`:
//! GitHub Actions signals the step's bash alone (SIGINT, then SIGTERM), GitLab the step's
//! process group (SIGTERM, then SIGKILL). The step is a real bash running a real retry, as a
//! runner would start it; each attempt writes `started PID` (retry's pid) to a log file of the
//! test's own and says `ready` on the step's stdout before it sleeps.

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill, killpg};
use nix::unistd::Pid;
use tempfile::TempDir;

use crate::support::{self, Launch, Lines, Started, bin, hermetic, retry};

/// How soon a cancelled step must be over: generous for a loaded machine, and far below what
/// retry without the setting takes (the rest of a 10 s attempt, then more attempts).
const PROMPTLY: Duration = Duration::from_secs(5);

/// A running CI step: bash, running `PREFIX retry ARGS -- sh -c ATTEMPT`, then `echo done`.
struct Step {
    bash: Started,
    out: Lines,
    err: Lines,
    log: PathBuf,
    _dir: TempDir,
}

/// How a step's retry is asked to stop with its parent: by the flag, the job's variable or
/// the config file; `off` adds the step's own way to turn it off.
#[derive(Clone, Copy, Debug)]
enum Setting {
    Flag,
    Variable,
    Config,
}

/// Starts a step whose attempts run `attempt` (sh, with the log file as `$1`); `prefix` goes
/// before retry on the step's line (a variable for that step alone).
fn step(setting: Setting, prefix: &str, extra: &[&str], attempt: &str, group: bool) -> Step {
    let dir = TempDir::new().expect("temp dir");
    let log = dir.path().join("log");
    let mut bash = Command::new("bash");
    hermetic(&mut bash);
    let mut args: Vec<&str> = Vec::new();
    match setting {
        Setting::Flag => args.push("--stop-with-parent"),
        Setting::Variable => {
            bash.env("RETRY_STOP_WITH_PARENT", "1");
        }
        Setting::Config => {
            let config = dir.path().join("config.toml");
            std::fs::write(&config, "stop-with-parent = true\n").expect("write config");
            bash.env("RETRY_CONFIG", &config);
        }
    }
    args.extend(extra);
    args.extend(["-n", "5", "-d", "1s", "--jitter", "none"]);
    let script = format!("set -euo pipefail; {prefix}\"$@\"; echo done");
    let body = format!("echo \"started $PPID\" >> \"$1\"; {attempt}");
    bash.arg("-c")
        .arg(script)
        .arg("bash")
        .arg(bin())
        .args(&args)
        .args(["--", "sh", "-c", &body, "sh"])
        .arg(&log);
    if group {
        // A runner's step in a process group of its own, as GitLab's is.
        bash.process_group(0);
    }
    let (bash, out, err) = bash.start();
    Step {
        bash,
        out,
        err,
        log,
        _dir: dir,
    }
}

/// retry's pid, from each attempt's line in the log.
fn starts(log: &Path) -> Vec<i32> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.strip_prefix("started "))
        .map(|p| p.trim().parse().expect("a pid"))
        .collect()
}

/// GitHub's cancel: SIGINT to the step's bash alone, then SIGTERM, which ends bash.
fn github_cancel(step: &mut Step) {
    let bash = Pid::from_raw(step.bash.id() as i32);
    kill(bash, Signal::SIGINT).expect("SIGINT to bash");
    // The runner's SIGTERM comes 7.5 s later; the test sends it once bash has taken the SIGINT
    // (it is no longer pending), which is all that the wait gives bash.
    assert!(
        support::within(support::PATIENCE, || !pending(
            step.bash.id(),
            Signal::SIGINT
        )),
        "bash never took the SIGINT"
    );
    kill(bash, Signal::SIGTERM).expect("SIGTERM to bash");
    let status = support::wait(&mut step.bash);
    // bash ends by the SIGTERM, or now and then by the SIGINT already: bash dies of a SIGINT
    // that reaches it while it is not inside its wait for the command (its
    // wait_sigint_handler). Either way the step's shell is gone, which is what retry sees.
    let signal = std::os::unix::process::ExitStatusExt::signal(&status);
    assert!(
        [Signal::SIGTERM as i32, Signal::SIGINT as i32]
            .map(Some)
            .contains(&signal),
        "bash ends by the runner's signals: {status:?}"
    );
}

/// Whether `signal` is pending for process `pid`, sent and not yet taken, as /proc/PID/status
/// tells (`SigPnd` and `ShdPnd`: pending for its main thread, or for the process). Without
/// /proc (macOS), a tenth of a second after it was sent counts as taken.
fn pending(pid: u32, signal: Signal) -> bool {
    let Ok(status) = std::fs::read_to_string(format!("/proc/{pid}/status")) else {
        std::thread::sleep(Duration::from_millis(100));
        return false;
    };
    let bit = 1u64 << (signal as i32 - 1);
    status
        .lines()
        .filter_map(|l| {
            l.strip_prefix("ShdPnd:")
                .or_else(|| l.strip_prefix("SigPnd:"))
        })
        .any(|mask| u64::from_str_radix(mask.trim(), 16).is_ok_and(|m| m & bit != 0))
}

fn cancelled_with_its_shell(setting: Setting) {
    let mut step = step(setting, "", &[], "echo ready; sleep 10; exit 1", false);
    step.out.until("ready");
    github_cancel(&mut step);
    let gone = Instant::now();
    // retry held the step's stdout (its attempts write there): it reaches its end once retry
    // and its attempt are over.
    let rest = step.out.rest();
    let took = gone.elapsed();
    assert!(
        took < PROMPTLY,
        "{setting:?}: the step's output open {took:?} after bash"
    );
    assert!(!rest.iter().any(|l| l == "done"), "{rest:?}");
    let pids = starts(&step.log);
    assert_eq!(
        pids.len(),
        1,
        "{setting:?}: no attempt after the cancel: {pids:?}"
    );
    assert!(
        support::within(PROMPTLY, || !support::running(pids[0])),
        "{setting:?}: retry still runs"
    );
    let said = step.err.rest().join("\n");
    // The log names what happened, not a signal nobody sent retry.
    assert!(
        said.contains("cancelled: retry's parent ended (--stop-with-parent): attempt 1/5"),
        "{setting:?}: {said}"
    );
    assert!(
        said.contains("retry's parent ended during attempt 1/5 (--stop-with-parent)"),
        "{setting:?}: {said}"
    );
    assert!(!said.contains("SIGTERM received"), "{setting:?}: {said}");
}

/// The step's shell ends while retry waits to retry: the run ends, and the log says why in
/// the same words, not "cancelled by SIGTERM", a signal nobody sent.
#[test]
fn a_github_cancel_during_a_wait_ends_the_run_and_says_the_parent_ended() {
    let mut step = step(Setting::Flag, "", &[], "echo ready; exit 1", false);
    step.out.until("ready");
    step.err.until("retrying in 1s");
    github_cancel(&mut step);
    let said = step.err.rest().join("\n");
    assert_eq!(starts(&step.log).len(), 1, "{said}");
    assert!(
        said.contains("cancelled: retry's parent ended (--stop-with-parent) while waiting"),
        "{said}"
    );
    assert!(!said.contains("cancelled by SIGTERM"), "{said}");
}

#[test]
fn a_github_cancel_of_the_steps_bash_stops_retry_with_the_flag() {
    cancelled_with_its_shell(Setting::Flag);
}

#[test]
fn a_github_cancel_of_the_steps_bash_stops_retry_with_the_jobs_variable() {
    cancelled_with_its_shell(Setting::Variable);
}

#[test]
fn a_github_cancel_of_the_steps_bash_stops_retry_with_the_config_key() {
    cancelled_with_its_shell(Setting::Config);
}

/// A step that turns the job's setting off goes on without its shell, as retry always did:
/// the next attempt starts after bash has gone.
fn goes_on_without_its_shell(setting: Setting, prefix: &str, extra: &[&str]) {
    let mut step = step(setting, prefix, extra, "echo ready; sleep 1; exit 1", false);
    step.out.until("ready");
    github_cancel(&mut step);
    let seen = support::within(support::PATIENCE, || starts(&step.log).len() >= 2);
    let pids = starts(&step.log);
    if let Some(retry) = pids.first() {
        // The test's own retry, by its pid: it leaves nothing running.
        let _ = kill(Pid::from_raw(*retry), Signal::SIGTERM);
    }
    assert!(
        seen,
        "{setting:?} {prefix}{extra:?}: a second attempt: {pids:?}"
    );
    assert!(
        support::within(support::PATIENCE, || !support::running(pids[0])),
        "retry ends on its own SIGTERM"
    );
}

#[test]
fn no_stop_with_parent_turns_the_jobs_variable_off_for_one_step() {
    goes_on_without_its_shell(Setting::Variable, "", &["--no-stop-with-parent"]);
}

#[test]
fn no_stop_with_parent_turns_the_config_key_off_for_one_step() {
    goes_on_without_its_shell(Setting::Config, "", &["--no-stop-with-parent"]);
}

#[test]
fn the_steps_own_variable_at_0_turns_the_jobs_off() {
    goes_on_without_its_shell(Setting::Variable, "RETRY_STOP_WITH_PARENT=0 ", &[]);
}

#[test]
fn a_stop_with_parent_variable_that_is_not_1_or_0_is_refused_and_nothing_runs() {
    let dir = TempDir::new().expect("temp dir");
    let mark = dir.path().join("ran");
    let run = retry()
        .env("RETRY_STOP_WITH_PARENT", "yes\x1b[2J")
        .args(["--", "touch"])
        .arg(&mark)
        .run();
    run.assert().code(125);
    assert_eq!(
        run.stderr(),
        "retry: error: not 1 or 0: $RETRY_STOP_WITH_PARENT=$'yes\\033[2J'; write 1 to stop \
         with retry's parent, 0 not to\n"
    );
    assert!(!mark.exists(), "nothing ran");
}

/// Whether this build ties an attempt's first process to retry's life: Linux's, not the
/// portable build (which stands for macOS and the BSDs) nor a build on them (docs/child.md).
fn tied() -> bool {
    if cfg!(any(retry_portable, not(target_os = "linux"))) {
        support::skipped(
            "needs the parent-death signal, which only Linux's build has: elsewhere a retry \
             killed with SIGKILL leaves its attempt running (docs/child.md)",
        );
        return false;
    }
    true
}

/// An attempt that ignores SIGTERM, so that only SIGKILL ends it, and whose first process is
/// the sleep (`exec`): it writes its pid, then says `ready`.
const IGNORES_TERM: &str = "trap '' TERM; echo \"pid $$\" >> \"$1\"; echo ready; exec sleep 47";

fn attempt_pid(log: &Path) -> i32 {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("pid "))
        .map(|p| p.trim().parse().expect("a pid"))
        .expect("the attempt wrote its pid")
}

/// What is left of the attempt after retry was killed: none of it, or the test ends it.
fn assert_attempt_ends(pid: i32) {
    let ended = support::within(PROMPTLY, || !support::running(pid));
    if !ended {
        let _ = kill(Pid::from_raw(pid), Signal::SIGKILL);
    }
    assert!(ended, "the attempt ({pid}) outlived retry's SIGKILL");
}

#[test]
fn a_gitlab_cancel_of_the_steps_group_leaves_no_attempt_running() {
    if !tied() {
        return;
    }
    // A long --kill-after: the attempt ignores the SIGTERM retry passes on, and retry is
    // killed long before it would send SIGKILL itself.
    let mut step = step(
        Setting::Flag,
        "",
        &["--kill-after", "5m"],
        IGNORES_TERM,
        true,
    );
    step.out.until("ready");
    let group = Pid::from_raw(step.bash.id() as i32);
    let attempt = attempt_pid(&step.log);
    killpg(group, Signal::SIGTERM).expect("SIGTERM to the step's group");
    // retry heard it: from the signal, or from its parent's end, whichever it saw first.
    step.err.until("during attempt 1/5");
    killpg(group, Signal::SIGKILL).expect("SIGKILL to the step's group");
    support::wait(&mut step.bash);
    assert_attempt_ends(attempt);
}

/// An attempt that cleans up on SIGTERM, taking half a second, before it ends: it writes
/// `cleaned` to the log once done. It waits in short sleeps, which end with its group's
/// SIGTERM, so that the trap runs at once and nothing of the group outlives it.
const CLEANS_UP_ON_TERM: &str = "trap 'sleep 0.5; echo cleaned >> \"$1\"; exit 143' TERM; \
     echo ready; while :; do sleep 0.1; done";

#[test]
fn a_gitlab_cancel_of_the_steps_group_leaves_the_attempt_its_kill_after_to_clean_up() {
    // GitLab's SIGTERM reaches retry and the step's bash at once, and bash's end follows: that
    // is one cancel, not a SIGTERM and then another, which would kill the attempt at once.
    let mut step = step(
        Setting::Flag,
        "",
        &["--kill-after", "30s"],
        CLEANS_UP_ON_TERM,
        true,
    );
    step.out.until("ready");
    let group = Pid::from_raw(step.bash.id() as i32);
    killpg(group, Signal::SIGTERM).expect("SIGTERM to the step's group");
    support::wait(&mut step.bash);
    // retry's stderr closes when it ends, once the attempt has.
    let log = step.err.rest();
    let written = std::fs::read_to_string(&step.log).unwrap_or_default();
    assert!(
        written.contains("cleaned"),
        "the attempt was not let clean up: {written:?} {log:#?}"
    );
    assert!(
        log.iter()
            .any(|l| l.contains("SIGTERM received during attempt 1/5"))
            && !log.iter().any(|l| l.contains("killed the command")),
        "{log:#?}"
    );
}

#[test]
fn an_attempt_ends_with_a_retry_killed_by_sigkill() {
    if !tied() {
        return;
    }
    let dir = TempDir::new().expect("temp dir");
    let log = dir.path().join("log");
    let (mut retry, out, _err) = retry()
        .args(["--stop-with-parent", "--", "sh", "-c", IGNORES_TERM, "sh"])
        .arg(&log)
        .start();
    out.until("ready");
    let attempt = attempt_pid(&log);
    retry.kill().expect("SIGKILL to retry");
    support::wait(&mut retry);
    assert_attempt_ends(attempt);
}
