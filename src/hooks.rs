//! Hooks: shell commands run before each wait (`--on-retry`) and after the last failure
//! (`--on-giveup`), time-limited, whose failure is logged and changes nothing else.

use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;

use crate::status::Status;

/// How often a running hook is looked at.
const POLL: Duration = Duration::from_millis(5);

/// Runs `command` through `sh -c` with `vars` added to the environment, stdout to retry's
/// stderr (stdout belongs to the command being retried), for at most `timeout`; then its
/// process group gets SIGTERM, and SIGKILL a second later.
pub fn run(command: &str, vars: &[(String, String)], timeout: Duration) -> Result<Status, String> {
    let mut child = Command::new("sh")
        .arg("-c")
        .arg(command)
        .envs(vars.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::null())
        .stdout(std::io::stderr())
        .process_group(0)
        .spawn()
        .map_err(|e| format!("cannot start sh: {e}"))?;
    let group = Pid::from_raw(child.id() as i32);
    let started = Instant::now();
    let mut killed = None;
    loop {
        match child.try_wait() {
            Ok(Some(status)) => {
                return match killed {
                    Some(_) => Err(format!("timed out after {}", crate::log::human(timeout))),
                    None => Ok(status.into()),
                };
            }
            Ok(None) => {}
            Err(e) => return Err(format!("cannot wait for it: {e}")),
        }
        let waited = started.elapsed();
        match killed {
            None if waited >= timeout => {
                let _ = killpg(group, Signal::SIGTERM);
                killed = Some(waited);
            }
            Some(at) if waited >= at + Duration::from_secs(1) => {
                let _ = killpg(group, Signal::SIGKILL);
            }
            _ => {}
        }
        thread::sleep(POLL);
    }
}
