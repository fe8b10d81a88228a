//! What is left of an attempt's process group once its first process ended.

use nix::sys::signal::killpg;
use nix::unistd::Pid;

/// Whether any process of `group` is still running. `killpg(group, 0)` succeeds on a group of
/// zombies too: when an attempt's first process dies before the others, they are adopted by
/// PID 1 (or a subreaper), and one that reaps slowly or never, as in a container started
/// without an init, leaves them as zombies, which no signal can end. A group of zombies only
/// is gone. Where /proc cannot tell (not mounted, or it hides the group's processes, or on
/// another system than Linux, or in the portable build), a group that signals reach counts as
/// alive: its zombies are then waited for until `--kill-after` has passed.
pub fn group_alive(group: Pid) -> bool {
    if killpg(group, None).is_err() {
        return false;
    }
    not_only_zombies(group)
}

/// Whether /proc shows a process of `group` that is not a zombie, or cannot tell.
#[cfg(all(target_os = "linux", not(retry_portable)))]
fn not_only_zombies(group: Pid) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let Ok(proc) = std::fs::read_dir("/proc") else {
        return true;
    };
    let mut seen = false;
    for entry in proc.flatten() {
        let name = entry.file_name();
        if !name.as_bytes().iter().all(u8::is_ascii_digit) {
            continue;
        }
        let Ok(stat) = std::fs::read(entry.path().join("stat")) else {
            continue;
        };
        // `pid (comm) state ppid pgrp ...`; comm may hold spaces and parentheses.
        let Some(close) = stat.iter().rposition(|b| *b == b')') else {
            continue;
        };
        let mut fields = stat[close + 1..]
            .split(|b| *b == b' ')
            .filter(|f| !f.is_empty());
        let (Some(state), Some(_ppid), Some(pgrp)) = (fields.next(), fields.next(), fields.next())
        else {
            continue;
        };
        if std::str::from_utf8(pgrp).ok().and_then(|p| p.parse().ok()) != Some(group.as_raw()) {
            continue;
        }
        seen = true;
        if !matches!(state, b"Z" | b"X") {
            return true;
        }
    }
    !seen
}

/// Whether orphans are reparented to retry: it is PID 1 (a container's entry process) or, on
/// Linux, a child subreaper (PR_SET_CHILD_SUBREAPER, set by whoever started it). Such a retry
/// must reap them, as tini and dumb-init do, or they stay zombies.
pub fn reaps_orphans() -> bool {
    nix::unistd::getpid().as_raw() == 1 || subreaper()
}

#[cfg(all(target_os = "linux", not(retry_portable)))]
fn subreaper() -> bool {
    nix::sys::prctl::get_child_subreaper().unwrap_or(false)
}

/// Elsewhere (and in the portable build) only PID 1 is known to adopt orphans.
#[cfg(not(all(target_os = "linux", not(retry_portable))))]
fn subreaper() -> bool {
    false
}

/// Without /proc, a group that signals reach counts as alive.
#[cfg(not(all(target_os = "linux", not(retry_portable))))]
fn not_only_zombies(_group: Pid) -> bool {
    true
}
