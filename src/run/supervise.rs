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
    let timeout_at = p.attempt_timeout.map(|t| started.saturating_add(t));
    let (limit, why) = match (timeout_at, p.max_time) {
        (Some(t), Some(d)) if d < t => (Some(d), Stop::Deadline),
        (Some(t), _) => (Some(t), Stop::AttemptTimeout),
        (None, d) => (d, Stop::Deadline),
    };
    let mut stopped = None;
    let mut cancelled = None;
    let mut escalation = Escalation::default();
    // The first process's status, once it ended.
    let mut ended: Option<Status> = None;
    // A Ctrl-C (or Ctrl-\) typed at the terminal the attempt holds, and when: the run ends
    // with this attempt unless the attempt outlives it by `--kill-after` (docs/child.md: a
    // REPL, psql or gdb handled it and went on; its later exit is judged by the usual rules).
    let mut typed: Option<(i32, Duration)> = None;
    let mut idle_at = gate.idle_at(started);
    loop {
        if let Some(status) = ended
            && (!escalation.pending() || !world.group_alive())
        {
            return Ended {
                stopped,
                cancelled,
                findings: world.findings(),
                ..Ended::with(status)
            };
        }
        let now = world.elapsed();
        let limit = limit.filter(|_| stopped.is_none());
        let handled_at = typed.map(|(_, at)| at.saturating_add(p.kill_after));
        let until = [
            limit,
            escalation.wake(now, ended.is_some()),
            handled_at,
            idle_at,
        ]
        .into_iter()
        .flatten()
        .min();
        let event = world.wait(until);
        if idle_at.is_some_and(|at| world.elapsed() >= at) {
            gate.idle();
            idle_at = None;
        }
        match event {
            Event::Exited(status) => {
                ended = Some(status);
                if handled_at.is_some_and(|at| world.elapsed() > at) {
                    went_on(world, rep, &mut typed, &mut cancelled);
                }
            }
            Event::Timer if escalation.due(world.elapsed()) => {
                world.kill(SIGKILL);
                escalation.killed();
                rep.stopping(world.elapsed(), Stopping::Killed);
            }
            Event::Timer if limit.is_some_and(|at| world.elapsed() >= at) => {
                stopped = Some(why);
                world.kill(p.kill_signal);
                escalation.ask(world.elapsed(), p.kill_after);
                rep.stopping(world.elapsed(), Stopping::TimeUp(why));
            }
            Event::Timer if handled_at.is_some_and(|at| world.elapsed() >= at) => {
                went_on(world, rep, &mut typed, &mut cancelled);
            }
            Event::Timer => {}
            Event::Suspend => world.suspend(),
            Event::Signal(sig) if cancels(sig) => {
                let again = cancelled.filter(|_| [SIGINT, SIGTERM].contains(&sig));
                if let Some(first) = again {
                    world.kill(SIGKILL);
                    escalation.killed();
                    rep.stopping(world.elapsed(), Stopping::CancelAgain { first, now: sig });
                } else {
                    world.kill(sig);
                    escalation.ask(world.elapsed(), p.kill_after);
                    rep.stopping(world.elapsed(), Stopping::Cancel(sig));
                }
                // A signal that reached retry itself is no Ctrl-C a REPL handles.
                typed = None;
                cancelled.get_or_insert(sig);
            }
            // The terminal sent the attempt's group a Ctrl-C: the command has it already, and
            // decides what to make of it; the run is over after this attempt unless it goes
            // on past --kill-after. A second one before that is the user insisting: the group
            // gets SIGKILL.
            Event::Typed(sig) => match cancelled {
                Some(first) if first == sig => {
                    world.kill(SIGKILL);
                    escalation.killed();
                    typed = None;
                    rep.stopping(world.elapsed(), Stopping::CancelAgain { first, now: sig });
                }
                Some(_) => {}
                None => {
                    rep.stopping(world.elapsed(), Stopping::Typed(sig));
                    cancelled = Some(sig);
                    typed = Some((sig, world.elapsed()));
                }
            },
            // A Ctrl-C that reached retry too (typed before the attempt had the terminal) was
            // said already.
            Event::Interrupted(_) if cancelled.is_some() => {}
            Event::Interrupted(sig) => {
                // retry received nothing: it infers the Ctrl-C from how the attempt ended, and
                // says so. The rest of the group had the Ctrl-C from the terminal.
                world.kill(sig);
                escalation.ask(world.elapsed(), p.kill_after);
                rep.stopping(world.elapsed(), Stopping::TerminalCancel(sig));
                typed = None;
                cancelled.get_or_insert(sig);
            }
            Event::Signal(sig) => world.kill(sig),
        }
    }
}

/// The attempt outlived the Ctrl-C typed at the terminal by `--kill-after`: it handled it and
/// went on, and the run is not cancelled after all.
fn went_on<W: World>(
    world: &mut W,
    rep: &mut Reporter,
    typed: &mut Option<(i32, Duration)>,
    cancelled: &mut Option<i32>,
) {
    if let Some((sig, _)) = typed.take() {
        *cancelled = None;
        world.typed_handled();
        rep.went_on(world.elapsed(), sig);
    }
}
