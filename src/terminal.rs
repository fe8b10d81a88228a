//! The controlling terminal, handed to each attempt's process group while it runs, so that an
//! interactive command can read it and Ctrl-C and Ctrl-Z reach it, and taken back after.

use std::fs::File;
use std::os::fd::AsFd;

use nix::sys::signal::{SigSet, SigmaskHow, Signal, killpg, sigprocmask};
use nix::unistd::{Pid, getpgrp, tcgetpgrp, tcsetpgrp};

/// retry's controlling terminal, when retry runs in its foreground.
pub struct Terminal {
    tty: File,
    /// retry's own process group.
    own: Pid,
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
        Some(Terminal { tty, own })
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
