//! Job control for the attempt at a terminal: Ctrl-Z and SIGTTIN/SIGTTOU, handing the
//! terminal over to the attempt's group and taking it back, and the watcher that tells a Ctrl-C
//! typed at it.

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;

use super::Process;
use crate::platform::terminal::Terminal;
use crate::platform::watcher::Watcher;
use crate::policy::status::Status;

impl Process {
    /// The attempt's group stopped. One that read or set the terminal while retry's job holds
    /// it (a command in a pipeline, which does not get the terminal at once) gets it now.
    /// Otherwise it was stopped by Ctrl-Z, or it needs the terminal while retry's job is in
    /// the background: retry's whole job stops with the same signal, as the terminal would
    /// have stopped the command alone, so the shell shows it Stopped; when continued (`fg`,
    /// `bg`), the attempt goes on too, with the terminal if `fg` gave it to retry's job.
    pub(super) fn on_stop(&mut self, group: Pid, signal: i32) {
        let Some(terminal) = &self.terminal else {
            // No terminal: the child waits for a SIGCONT from whoever stopped it.
            return;
        };
        let asks = [Signal::SIGTTIN as i32, Signal::SIGTTOU as i32].contains(&signal);
        if asks && terminal.foreground() {
            self.hand_over(group);
            return;
        }
        if !terminal.job_can_stop() {
            // An orphaned job (retry leads its session, under script(1) or a terminal
            // emulator, or its shell is gone): no shell is left to show it Stopped or to
            // continue it, and the kernel discards a Ctrl-Z sent to such a job, which goes on.
            // So does the attempt. One that needs the terminal would have been told EIO
            // instead; retry cannot do that, and it stays stopped until a timeout ends it.
            if signal == Signal::SIGTSTP as i32 {
                let _ = killpg(group, Signal::SIGCONT);
            }
            return;
        }
        let wanted = asks || self.holds_terminal || terminal.alone();
        if std::mem::take(&mut self.holds_terminal) {
            terminal.take_back(group);
        }
        let Ok(signal) = Signal::try_from(signal) else {
            return;
        };
        crate::platform::signals::stop(signal, true);
        // Continued: by `fg` (the terminal is retry's job's again) or by `bg`.
        let foreground = self.terminal.as_ref().is_some_and(Terminal::foreground);
        if wanted && foreground {
            self.hand_over(group);
        } else {
            let _ = killpg(group, Signal::SIGCONT);
        }
    }

    /// Hands the terminal, which retry's job holds, to the attempt's `group` and lets it go
    /// on, with a watcher in the group first so that a Ctrl-C typed the moment after reaches
    /// it too; the watcher goes if the terminal could not be given.
    pub(super) fn hand_over(&mut self, group: Pid) {
        let Some(terminal) = &self.terminal else {
            return;
        };
        if self.watcher.is_none() && terminal.interruptible() {
            self.watcher = Watcher::start(group);
        }
        self.holds_terminal = terminal.give(group);
        if !self.holds_terminal {
            self.stop_watching(None);
        }
    }

    /// Ctrl-Z reached retry's own group (the attempt did not hold the terminal, or none ran):
    /// the attempt is stopped too, then retry, as the terminal would have stopped the command
    /// alone; when continued, the attempt goes on, with the terminal if it held it before and
    /// `fg` gave it back to retry's job.
    pub(super) fn stop_with_the_job(&mut self) {
        let group = self.child.and(self.group);
        if let Some(group) = group {
            let _ = killpg(group, Signal::SIGTSTP);
        }
        let held = std::mem::take(&mut self.holds_terminal);
        if let (true, Some(terminal), Some(group)) = (held, &self.terminal, group) {
            terminal.take_back(group);
        }
        // Only retry: the rest of its job had the terminal's SIGTSTP too.
        crate::platform::signals::stop(Signal::SIGTSTP, false);
        if let Some(group) = group {
            let foreground = self.terminal.as_ref().is_some_and(Terminal::foreground);
            if held && foreground {
                self.hand_over(group);
            } else {
                let _ = killpg(group, Signal::SIGCONT);
            }
        }
    }

    /// Ends the attempt's watcher, keeping what it saw.
    pub(super) fn stop_watching(&mut self, passing_on: Option<i32>) {
        if let Some(watcher) = self.watcher.take() {
            // The one Ctrl-C that reached retry too, as it can in the moment the attempt gets
            // the terminal, is not a second one: retry passes it on now.
            let seen = watcher.stop().filter(|sig| Some(*sig) != passing_on);
            self.typed = self.typed.or(seen);
        }
    }

    /// A Ctrl-C or Ctrl-\ typed at the terminal reaches only the attempt that holds it, not
    /// retry; an attempt that died of it (or exited 130 or 131 from a trap) is a cancellation.
    pub(super) fn terminal_cancel(&self, status: Status) -> Option<i32> {
        if !self.holds_terminal {
            return None;
        }
        let (int, quit) = (Signal::SIGINT as i32, Signal::SIGQUIT as i32);
        match status.number() - 128 {
            n if n == int || n == quit => Some(n),
            _ => None,
        }
    }
}
