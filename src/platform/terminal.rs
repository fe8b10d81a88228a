//! The controlling terminal, handed to each attempt's process group while it runs, so that an
//! interactive command can read it and Ctrl-C and Ctrl-Z reach it, and taken back after.
//!
//! Only when retry stands alone in its job: in a pipeline (`retry -- cmd | less`), the other
//! commands of the job share retry's process group and may need the terminal themselves, so an
//! attempt gets it only if it stops trying to read or set it.

use std::fs::File;
use std::os::fd::{AsFd, BorrowedFd};

use nix::sys::signal::{SigSet, SigmaskHow, Signal, killpg, sigprocmask};
use nix::sys::stat::{SFlag, fstat};
use nix::unistd::{Pid, getpgrp, tcgetpgrp, tcsetpgrp};

/// retry's controlling terminal, when retry runs in its foreground.
pub struct Terminal {
    tty: File,
    /// retry's own process group.
    own: Pid,
    /// Neither retry's stdin nor its stdout is a pipe or socket: no other command of its job
    /// reads from or writes to it.
    alone: bool,
}

impl Terminal {
    /// The terminal, if retry has one and is in its foreground; `None` in a pipeline's
    /// background, under cron, in CI.
    pub fn detect() -> Option<Terminal> {
        let tty = File::options()
            .read(true)
            .write(true)
            .open("/dev/tty")
            .ok()?;
        let own = getpgrp();
        if tcgetpgrp(tty.as_fd()).ok()? != own {
            return None;
        }
        // A background process that sets the foreground group gets SIGTTOU, which would stop
        // retry while it takes the terminal back. Blocked, not ignored: the block is not
        // inherited by the child (std clears the mask), where an ignore would be.
        let mut ttou = SigSet::empty();
        ttou.add(Signal::SIGTTOU);
        sigprocmask(SigmaskHow::SIG_BLOCK, Some(&ttou), None).ok()?;
        let piped = |fd: BorrowedFd<'_>| {
            fstat(fd).is_ok_and(|st| {
                let kind = SFlag::from_bits_truncate(st.st_mode) & SFlag::S_IFMT;
                kind == SFlag::S_IFIFO || kind == SFlag::S_IFSOCK
            })
        };
        let alone = !piped(super::child_fd::stdin()) && !piped(super::child_fd::stdout());
        Some(Terminal { tty, own, alone })
    }

    /// Whether each attempt is given the terminal as it starts.
    pub fn alone(&self) -> bool {
        self.alone
    }

    /// Whether retry's group holds the terminal now (not after `bg`).
    pub fn ours(&self) -> bool {
        tcgetpgrp(self.tty.as_fd()).is_ok_and(|g| g == self.own)
    }

    /// Gives the terminal to an attempt's group, if it is retry's to give, and lets the group
    /// run: it may have stopped on SIGTTIN by reading before it had the terminal.
    pub fn give(&self, group: Pid) -> bool {
        let given = self.ours() && tcsetpgrp(self.tty.as_fd(), group).is_ok();
        let _ = killpg(group, Signal::SIGCONT);
        given
    }

    /// Takes the terminal back for retry's own group.
    pub fn take_back(&self) {
        let _ = tcsetpgrp(self.tty.as_fd(), self.own);
    }
}
