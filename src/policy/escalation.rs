//! Stopping a process group as timeout(1) does: a signal first, then SIGKILL once a grace has
//! passed if anything of the group is left, and looking for the processes it left behind
//! until none is. One piece for attempts (`--kill-signal`, `--kill-after`) and hooks.

use std::time::Duration;

/// How often to look for processes a group left behind once its first process ended; they are
/// not retry's children, so nothing wakes retry when they end.
pub const STRAGGLER_POLL: Duration = Duration::from_millis(20);

/// Where the stopping of one process group stands. Times are on one clock of the caller's.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Escalation {
    /// When SIGKILL goes to the group, once it was asked to stop.
    kill_at: Option<Duration>,
}

impl Escalation {
    /// The group was sent its stopping signal at `now`: SIGKILL follows `grace` later, unless
    /// an earlier request set an earlier time.
    pub fn ask(&mut self, now: Duration, grace: Duration) {
        self.kill_at.get_or_insert(now.saturating_add(grace));
    }

    /// SIGKILL went to the group: nothing more to send.
    pub fn killed(&mut self) {
        self.kill_at = None;
    }

    /// The group was asked to stop and SIGKILL has not been sent yet: the caller waits for
    /// the whole group, not only its first process.
    pub fn pending(&self) -> bool {
        self.kill_at.is_some()
    }

    /// Whether SIGKILL is due at `now`.
    pub fn due(&self, now: Duration) -> bool {
        self.kill_at.is_some_and(|at| now >= at)
    }

    /// When to look again: when SIGKILL is due, and soon when the first process has `ended`
    /// and the rest of the group may be gone.
    pub fn wake(&self, now: Duration, ended: bool) -> Option<Duration> {
        let poll = ended.then(|| now.saturating_add(STRAGGLER_POLL));
        [self.kill_at, poll].into_iter().flatten().min()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: Duration = Duration::from_secs(1);

    #[test]
    fn sigkill_is_due_a_grace_after_the_first_request_and_then_no_more() {
        let mut e = Escalation::default();
        assert!(!e.pending() && !e.due(100 * S));
        e.ask(S, 10 * S);
        e.ask(2 * S, S);
        assert!(e.pending());
        assert!(!e.due(10 * S));
        assert!(e.due(11 * S), "the first request sets the time");
        e.killed();
        assert!(!e.pending() && !e.due(100 * S));
    }

    #[test]
    fn an_ended_first_process_is_followed_by_polls_for_the_rest_of_its_group() {
        let mut e = Escalation::default();
        assert_eq!(e.wake(S, false), None);
        assert_eq!(e.wake(S, true), Some(S + STRAGGLER_POLL));
        e.ask(S, 5 * S);
        assert_eq!(e.wake(2 * S, false), Some(6 * S));
        assert_eq!(e.wake(2 * S, true), Some(2 * S + STRAGGLER_POLL));
    }
}
