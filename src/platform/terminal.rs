//! The controlling terminal, handed to each attempt's process group as a shell hands it to a
//! job, so that an interactive command can read it and Ctrl-C and Ctrl-Z reach it, and taken
//! back after.
//!
//! When retry stands alone in its job in the terminal's foreground, each attempt gets the
//! terminal as it starts. In a pipeline (`retry -- cmd | less`), the other commands of the job
//! share retry's process group and may need the terminal themselves, so an attempt gets it only
//! once it tries to read or set it (and stops on SIGTTIN or SIGTTOU). So it is when retry
//! shares its process group with whatever started it (a script's shell, make, npm, a loop's
//! bash: a shell without job control makes no job of its own for retry): a Ctrl-C typed during
//! an attempt must reach them too, so that a script or a make stops with retry, as it does when
//! one of its commands is cancelled, rather than going on without it. When retry's job is in
//! the background, an attempt that tries that stops the job with the same signal, so the shell
//! shows it Stopped, and gets the terminal when `fg` brings the job back.

use std::fs::File;
use std::os::fd::{AsFd, BorrowedFd};

use nix::sys::signal::{SigSet, SigmaskHow, Signal, killpg, sigprocmask};
use nix::sys::stat::{SFlag, fstat};
use nix::unistd::{Pid, getpgid, getppid, getsid, tcgetpgrp, tcsetpgrp};

/// retry's controlling terminal.
pub struct Terminal {
    tty: File,
    /// retry's own process group.
    own: Pid,
    /// retry leads its process group (a shell with job control made the job for it, or
    /// retry is the job's first process, after `exec`), neither its stdin nor its stdout is a
    /// pipe or socket (no other command of its job reads from or writes to it), and SIGINT
    /// was not ignored when it started (a non-interactive shell's `&` ignores it: such a job
    /// leaves the terminal to the shell).
    alone: bool,
    /// A Ctrl-C typed at the terminal would have reached retry: SIGINT was not ignored when
    /// it started.
    interruptible: bool,
    /// retry leads its process group: the job is its own, not that of a script, make or npm
    /// that started it.
    leads: bool,
}

impl Terminal {
    /// The terminal, if retry has one (not under cron, in CI, or after `setsid`), whether or
    /// not retry's job holds it now.
    pub fn detect() -> Option<Terminal> {
        let tty = File::options()
            .read(true)
            .write(true)
            .open("/dev/tty")
            .ok()?;
        let own = nix::unistd::getpgrp();
        // A background process that sets the foreground group gets SIGTTOU, which would stop
        // retry while it takes the terminal back. Blocked, not ignored: the block is not
        // inherited by the child (it gets the mask retry was started with), where an ignore
        // would be.
        let mut ttou = SigSet::empty();
        ttou.add(Signal::SIGTTOU);
        sigprocmask(SigmaskHow::SIG_BLOCK, Some(&ttou), None).ok()?;
        let piped = |fd: BorrowedFd<'_>| {
            fstat(fd).is_ok_and(|st| {
                let kind = SFlag::from_bits_truncate(st.st_mode) & SFlag::S_IFMT;
                kind == SFlag::S_IFIFO || kind == SFlag::S_IFSOCK
            })
        };
        let interruptible = !super::signals::ignored_at_start(Signal::SIGINT);
        let leads = own == nix::unistd::getpid();
        let alone = interruptible
            && leads
            && !piped(super::child_fd::stdin())
            && !piped(super::child_fd::stdout());
        Some(Terminal {
            tty,
            own,
            alone,
            interruptible,
            leads,
        })
    }

    /// Whether each attempt is given the terminal as it starts (when retry's job holds it).
    pub fn alone(&self) -> bool {
        self.alone
    }

    /// Whether a Ctrl-C typed at the terminal is retry's to watch for.
    pub fn interruptible(&self) -> bool {
        self.interruptible
    }

    /// Whether retry's process group is its own job (a shell with job control made it for
    /// retry), rather than that of whatever started it: a script's shell, make, npm.
    pub fn leads(&self) -> bool {
        self.leads
    }

    /// Whether retry's group holds the terminal now: its job is in the foreground.
    pub fn foreground(&self) -> bool {
        tcgetpgrp(self.tty.as_fd()).is_ok_and(|g| g == self.own)
    }

    /// Gives the terminal to an attempt's group, if it is retry's to give, and lets the group
    /// run: it may have stopped on SIGTTIN by reading before it had the terminal. Whether the
    /// group now holds the terminal.
    pub fn give(&self, group: Pid) -> bool {
        let given = self.foreground() && tcsetpgrp(self.tty.as_fd(), group).is_ok();
        let _ = killpg(group, Signal::SIGCONT);
        given
    }

    /// Takes the terminal back for retry's own group from the attempt's `group`, if that
    /// still holds it: after a `bg`, the shell holds it, and keeps it.
    pub fn take_back(&self, group: Pid) {
        if tcgetpgrp(self.tty.as_fd()).is_ok_and(|g| g == group) {
            let _ = tcsetpgrp(self.tty.as_fd(), self.own);
        }
    }

    /// Whether a stop of retry's job would be seen by a shell that can continue it. The
    /// kernel discards the terminal's stop signals for an orphaned process group (nobody of
    /// the session is left to continue it); retry's, with its parent gone (adopted by PID 1
    /// or a subreaper) or in another session, is taken to be one.
    pub fn job_can_stop(&self) -> bool {
        let parent = getppid();
        if parent.as_raw() <= 1 {
            return false;
        }
        match (getsid(Some(parent)), getsid(None), getpgid(Some(parent))) {
            (Ok(theirs), Ok(ours), Ok(_)) => theirs == ours,
            _ => false,
        }
    }
}
