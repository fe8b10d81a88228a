//! Runs that share nothing, stepped each to its end at once: without a key, or with a key
//! whose breaker and budget are off and whose outcomes are not kept, no run can change what
//! another does, so the order in which they are stepped changes nothing but which random
//! numbers each draws. A run is stepped from its start, attempt after attempt, with the same
//! pacing and judgements as [`super::group`]'s, without an event queue; one that would call past
//! the window under way waits for the next.

use std::time::Duration;

use super::Nanos;
use super::group::{Plan, Starts};
use super::tally::Tally;
use crate::policy::backoff::SeededRng;
use crate::policy::pacing::Pacing;

/// A run between two attempts.
struct Run<'a> {
    process: u32,
    attempt: u32,
    pacing: Pacing<'a>,
    /// When its next attempt calls, and how long after its start that is.
    next: Nanos,
    elapsed: Duration,
}

/// A block of processes whose runs share nothing.
pub struct Apart<'a> {
    plan: &'a Plan<'a>,
    starts: Starts,
    /// Runs whose next call falls in a later window.
    waiting: Vec<Run<'a>>,
    rng: SeededRng,
}

impl<'a> Apart<'a> {
    pub fn new(plan: &'a Plan<'a>, processes: Vec<u32>, rng: SeededRng) -> Apart<'a> {
        Apart {
            plan,
            starts: Starts::new(plan, processes),
            waiting: Vec::new(),
            rng,
        }
    }

    /// When the next call or start is.
    pub fn next_at(&mut self) -> Option<Nanos> {
        let start = self.starts.peek(self.plan).map(|(at, _)| at);
        let call = self.waiting.iter().map(|r| r.next).min();
        start.into_iter().chain(call).min()
    }

    /// Steps every run that calls before `until`, and every run that starts before it.
    pub fn advance(&mut self, until: Nanos, tally: &mut Tally) {
        for run in std::mem::take(&mut self.waiting) {
            self.step(run, until, tally);
        }
        while let Some((at, place)) = self.starts.peek(self.plan) {
            if at >= until {
                break;
            }
            let process = self.starts.process(place);
            self.starts.pop(self.plan);
            tally.report.jobs += 1;
            if at >= self.plan.outage {
                // Its first call succeeds.
                tally.call(at, false);
                tally.success(process, at.saturating_add(self.plan.call));
                continue;
            }
            let run = Run {
                process: u32::try_from(process).unwrap_or(u32::MAX),
                attempt: 0,
                // No key: nothing to learn from, as in a group.
                pacing: Pacing::of(self.plan.policy, false),
                next: at,
                elapsed: Duration::ZERO,
            };
            self.step(run, until, tally);
        }
        self.starts.report(self.plan);
    }

    /// Steps a run until it ends or its next call is at or past `until`.
    fn step(&mut self, mut run: Run<'a>, until: Nanos, tally: &mut Tally) {
        loop {
            let now = run.next;
            if now >= until {
                self.waiting.push(run);
                return;
            }
            run.attempt += 1;
            tally.call(now, run.attempt > 1);
            let ok = now >= self.plan.outage;
            let answered = now.saturating_add(self.plan.call);
            // The time since the start, kept as a duration: one made from nanoseconds at
            // each answer is a division.
            let elapsed = run.elapsed.saturating_add(self.plan.call_time);
            let judgement = Plan::judge(
                &mut run.pacing,
                ok,
                run.attempt,
                elapsed,
                None,
                &mut self.rng,
            );
            if ok {
                tally.success(run.process as usize, answered);
                return;
            }
            match judgement.delay() {
                Some(delay) => {
                    run.next = answered.saturating_add(super::nanos(delay));
                    run.elapsed = elapsed.saturating_add(delay);
                }
                None => {
                    tally.report.gave_up += 1;
                    return;
                }
            }
        }
    }
}
