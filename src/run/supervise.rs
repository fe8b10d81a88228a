//! Watching a running attempt until it ends: stopping it when its time is up, passing signals
//! on, and taking a Ctrl-C typed at the terminal it holds as a cancel. An attempt that retry
//! stopped or cancelled is over only when its whole process group is gone: whatever is left of
//! it when `--kill-after` has passed gets SIGKILL ([`Escalation`]).

use std::time::Duration;

use crate::policy::status::{SIGINT, SIGKILL, SIGTERM};

use super::gate::Gate;
use crate::platform::world::{Event, World};
use crate::policy::Policy;
use crate::policy::escalation::Escalation;
use crate::policy::judgement::{Ended, Stop};
use crate::policy::status::{Status, cancels};
use crate::report::reporter::{Reporter, Stopping};

/// Watches the attempt that started at `started` (time since the run began) until it ends.
/// Once it has run for the key's grace, the key's store lets go of its connection: a fast
/// attempt keeps it for the run's next call, a long one holds none meanwhile.
pub fn supervise<W: World>(
    p: &Policy,
    world: &mut W,
    rep: &mut Reporter,
    gate: &mut Gate,
    started: Duration,
) -> Ended {
    let (limit, why) = limit(p, started);
    let mut watch = Watch {
        p,
        world,
        rep,
        limit,
        why,
        stopped: None,
        cancelled: None,
        escalation: Escalation::default(),
        ended: None,
        typed: None,
    };
    let mut idle_at = gate.idle_at(started);
    loop {
        if let Some(status) = watch.ended
            && (!watch.escalation.pending() || !watch.world.group_alive())
        {
            return Ended {
                stopped: watch.stopped,
                cancelled: watch.cancelled,
                findings: watch.world.findings(),
                ..Ended::with(status)
            };
        }
        let now = watch.world.elapsed();
        let until = [
            watch.limit(),
            watch.escalation.wake(now, watch.ended.is_some()),
            watch.handled_at(),
            idle_at,
        ]
        .into_iter()
        .flatten()
        .min();
        let event = watch.world.wait(until);
        if idle_at.is_some_and(|at| watch.world.elapsed() >= at) {
            gate.idle();
            idle_at = None;
        }
        match event {
            Event::Exited(status) => watch.exited(status),
            Event::Timer => watch.timer(),
            Event::Suspend => watch.world.suspend(),
            Event::Signal(sig) if cancels(sig) => watch.cancel(sig),
            Event::Typed(sig) => watch.typed(sig),
            Event::Interrupted(sig) => watch.interrupted(sig),
            Event::Signal(sig) => watch.world.kill(sig),
        }
    }
}

/// When the attempt that started at `started` is stopped, and why: at its --timeout, or at
/// the run's --max-time if that comes first.
fn limit(p: &Policy, started: Duration) -> (Option<Duration>, Stop) {
    let timeout_at = p.attempt_timeout.map(|t| started.saturating_add(t));
    match (timeout_at, p.max_time) {
        (Some(t), Some(d)) if d < t => (Some(d), Stop::Deadline),
        (Some(t), _) => (Some(t), Stop::AttemptTimeout),
        (None, d) => (d, Stop::Deadline),
    }
}

/// A running attempt, watched: what retry did to it so far, and what it waits for.
struct Watch<'a, 'r, W: World> {
    p: &'a Policy,
    world: &'a mut W,
    rep: &'a mut Reporter<'r>,
    /// When the attempt is stopped, and why.
    limit: Option<Duration>,
    why: Stop,
    stopped: Option<Stop>,
    cancelled: Option<i32>,
    escalation: Escalation,
    /// The first process's status, once it ended.
    ended: Option<Status>,
    /// A Ctrl-C (or Ctrl-\) typed at the terminal the attempt holds, and when: the run ends
    /// with this attempt unless the attempt outlives it by `--kill-after` (docs/child.md: a
    /// REPL, psql or gdb handled it and went on; its later exit is judged by the usual rules).
    typed: Option<(i32, Duration)>,
}

impl<W: World> Watch<'_, '_, W> {
    /// When the attempt is stopped, unless it has been already.
    fn limit(&self) -> Option<Duration> {
        self.limit.filter(|_| self.stopped.is_none())
    }

    /// When a Ctrl-C typed at the terminal counts as handled, if the attempt is still
    /// running then.
    fn handled_at(&self) -> Option<Duration> {
        self.typed
            .map(|(_, at)| at.saturating_add(self.p.kill_after))
    }

    /// The attempt's first process ended; the group may live on.
    fn exited(&mut self, status: Status) {
        self.ended = Some(status);
        if self
            .handled_at()
            .is_some_and(|at| self.world.elapsed() > at)
        {
            self.went_on();
        }
    }

    /// A timer is due: SIGKILL after --kill-after, the stop at the limit, or a typed Ctrl-C
    /// handled.
    fn timer(&mut self) {
        // Each check reads the clock anew, as time goes on between them.
        if self.escalation.due(self.world.elapsed()) {
            self.world.kill(SIGKILL);
            self.escalation.killed();
            self.rep.stopping(self.world.elapsed(), Stopping::Killed);
        } else if self.limit().is_some_and(|at| self.world.elapsed() >= at) {
            self.stopped = Some(self.why);
            self.world.kill(self.p.kill_signal);
            self.escalation.ask(self.world.elapsed(), self.p.kill_after);
            self.rep
                .stopping(self.world.elapsed(), Stopping::TimeUp(self.why));
        } else if self
            .handled_at()
            .is_some_and(|at| self.world.elapsed() >= at)
        {
            self.went_on();
        }
    }

    /// retry received a signal that cancels the run: the attempt is asked to stop with it,
    /// or killed if it is SIGINT or SIGTERM again.
    fn cancel(&mut self, sig: i32) {
        let again = self.cancelled.filter(|_| [SIGINT, SIGTERM].contains(&sig));
        if let Some(first) = again {
            self.world.kill(SIGKILL);
            self.escalation.killed();
            self.rep.stopping(
                self.world.elapsed(),
                Stopping::CancelAgain { first, now: sig },
            );
        } else {
            self.world.kill(sig);
            self.escalation.ask(self.world.elapsed(), self.p.kill_after);
            self.rep
                .stopping(self.world.elapsed(), Stopping::Cancel(sig));
        }
        // A signal that reached retry itself is no Ctrl-C a REPL handles.
        self.typed = None;
        self.cancelled.get_or_insert(sig);
    }

    /// The terminal sent the attempt's group a Ctrl-C: the command has it already, and
    /// decides what to make of it; the run is over after this attempt unless it goes on past
    /// --kill-after. A second one before that is the user insisting: the group gets SIGKILL.
    fn typed(&mut self, sig: i32) {
        match self.cancelled {
            Some(first) if first == sig => {
                self.world.kill(SIGKILL);
                self.escalation.killed();
                self.typed = None;
                self.rep.stopping(
                    self.world.elapsed(),
                    Stopping::CancelAgain { first, now: sig },
                );
            }
            Some(_) => {}
            None => {
                self.rep
                    .stopping(self.world.elapsed(), Stopping::Typed(sig));
                self.cancelled = Some(sig);
                self.typed = Some((sig, self.world.elapsed()));
            }
        }
    }

    /// The attempt ended as a Ctrl-C at the terminal ends it, and retry received nothing: it
    /// infers the Ctrl-C, and says so. The rest of the group had the Ctrl-C from the
    /// terminal. A Ctrl-C that reached retry too (typed before the attempt had the terminal)
    /// was said already.
    fn interrupted(&mut self, sig: i32) {
        if self.cancelled.is_some() {
            return;
        }
        self.world.kill(sig);
        self.escalation.ask(self.world.elapsed(), self.p.kill_after);
        self.rep
            .stopping(self.world.elapsed(), Stopping::TerminalCancel(sig));
        self.typed = None;
        self.cancelled.get_or_insert(sig);
    }

    /// The attempt outlived the Ctrl-C typed at the terminal by `--kill-after`: it handled it
    /// and went on, and the run is not cancelled after all.
    fn went_on(&mut self) {
        if let Some((sig, _)) = self.typed.take() {
            self.cancelled = None;
            self.world.typed_handled();
            self.rep.went_on(self.world.elapsed(), sig);
        }
    }
}
