//! A key's state in memory, on a clock its owner moves: for the loop's tests, and for the
//! simulator, where every simulated process holds a handle on one state. For the simulator, a
//! store may also answer at a rate ([`Line`]): one server that serves calls one after another,
//! as Redis runs every script of one key on one thread, and a run that waits past its
//! `--state-timeout` gets a timeout, as a real run's client does.

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::time::Duration;

use super::{Error, Local, Reply};
use crate::policy::shared::{KeyRules, KeyState};

/// A handle on one key's state; clones share it (and its [`Line`]), each with its own share
/// of the `--state-timeout`: a clone is a run's.
#[derive(Clone, Default)]
pub struct MemoryStore {
    state: Rc<RefCell<Option<KeyState>>>,
    /// The store's time, in milliseconds.
    pub now: Rc<Cell<u64>>,
    /// The server's queue, when the store answers at a rate.
    line: Option<Rc<Line>>,
    /// How long this handle's calls have waited, in nanoseconds.
    spent: u64,
}

impl MemoryStore {
    /// A store whose calls wait in `line`.
    pub fn queued(line: Line) -> MemoryStore {
        MemoryStore {
            line: Some(Rc::new(line)),
            ..MemoryStore::default()
        }
    }

    /// The state as it stands, if the key was ever used.
    pub fn state(&self) -> Option<KeyState> {
        self.state.borrow().clone()
    }

    /// The caller's time is `at` (nanoseconds): the store's clock follows, and the next call
    /// arrives in its line then.
    pub fn set_time(&self, at: u64) {
        self.now.set(at / 1_000_000);
        if let Some(line) = &self.line {
            line.arrive(at);
        }
    }

    /// The store's line, if its calls wait in one.
    pub fn line(&self) -> Option<&Line> {
        self.line.as_deref()
    }
}

/// One server answering a key's calls first come, first served, at a rate, in virtual time
/// (nanoseconds): a call that arrives at `t` is served at the later of `t` and one interval
/// after the call before it, and answered then. A caller waits at most what is left of its
/// timeout: past it, the call fails then, and the server still runs it when its turn comes,
/// as Redis runs a script whose client has gone.
pub struct Line {
    /// Between two calls served.
    interval: u64,
    /// How long a run waits for the store, all its calls together.
    timeout: u64,
    /// When the server is free for the next call.
    free_at: Cell<u64>,
    /// When the next call arrives: the caller's time.
    arrives: Cell<u64>,
    /// When the caller of the last call went on: answered, or timed out.
    went_on: Cell<u64>,
    /// The last call timed out.
    timed_out: Cell<bool>,
}

impl Line {
    /// A server answering `rate` calls a second, whose callers wait at most `timeout`.
    pub fn new(rate: u32, timeout: Duration) -> Line {
        Line {
            interval: 1_000_000_000 / u64::from(rate.max(1)),
            timeout: u64::try_from(timeout.as_nanos()).unwrap_or(u64::MAX),
            free_at: Cell::new(0),
            arrives: Cell::new(0),
            went_on: Cell::new(0),
            timed_out: Cell::new(false),
        }
    }

    /// The next call arrives at `at`; until it is made, its caller goes on then.
    fn arrive(&self, at: u64) {
        self.arrives.set(at);
        self.went_on.set(at);
        self.timed_out.set(false);
    }

    /// Serves the call that arrives now, from a caller that has waited `spent` so far: when
    /// the server runs it, and whether the caller had it in time (else it went on at its
    /// timeout's end). Adds the caller's wait to `spent`.
    pub fn serve(&self, spent: &mut u64) -> (u64, bool) {
        let at = self.arrives.get();
        let served = at.max(self.free_at.get());
        self.free_at.set(served.saturating_add(self.interval));
        let left = self.timeout.saturating_sub(*spent);
        let wait = served - at;
        let in_time = wait <= left;
        let waited = wait.min(left);
        *spent = spent.saturating_add(waited);
        self.went_on.set(at.saturating_add(waited));
        self.timed_out.set(!in_time);
        (served, in_time)
    }

    /// Whether a call arriving now from a caller that has not waited yet would wait past its
    /// timeout.
    pub fn too_late(&self) -> bool {
        let at = self.arrives.get();
        at.max(self.free_at.get()) - at > self.timeout
    }

    /// Whether a call arriving now would be served at once: the server is free.
    pub fn free(&self) -> bool {
        self.free_at.get() <= self.arrives.get()
    }

    /// When the caller of the calls made since [`MemoryStore::set_time`] went on.
    pub fn went_on(&self) -> u64 {
        self.went_on.get()
    }

    /// Whether the last call since [`MemoryStore::set_time`] timed out.
    pub fn timed_out(&self) -> bool {
        self.timed_out.get()
    }
}

impl Local for MemoryStore {
    fn update<T>(
        &mut self,
        s: &KeyRules,
        op: impl Fn(&mut KeyState, u64) -> T,
    ) -> Result<Reply<T>, Error> {
        // In a line, the operation runs at the time the server serves it, in the order of
        // arrival, whether its caller is still waiting or not.
        let (now, in_time) = match &self.line {
            Some(line) => {
                let (served, in_time) = line.serve(&mut self.spent);
                (served / 1_000_000, in_time)
            }
            None => (self.now.get(), true),
        };
        let mut slot = self.state.borrow_mut();
        let state = slot.get_or_insert_with(|| KeyState::new(s, now));
        state.clamp(s, now);
        let value = op(state, now);
        if !in_time {
            return Err(Error::Store {
                place: "the simulated store".into(),
                why: "no answer within --state-timeout".into(),
            });
        }
        Ok(Reply {
            value,
            now,
            view: state.view(s, now),
            warning: None,
        })
    }

    fn reset(&mut self) -> Result<(), Error> {
        *self.state.borrow_mut() = None;
        Ok(())
    }

    fn describe(&self) -> String {
        "memory".into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    /// A caller that arrives at `at`, has waited `spent`, and makes one call.
    fn call(line: &Line, at: u64, spent: &mut u64) -> (u64, bool, u64) {
        line.arrive(at);
        let (served, in_time) = line.serve(spent);
        assert_eq!(line.timed_out(), !in_time);
        (served, in_time, line.went_on())
    }

    #[test]
    fn calls_are_served_one_interval_apart_in_the_order_they_arrive() {
        // 1000 calls a second: one a millisecond.
        let line = Line::new(1000, Duration::from_millis(500));
        let mut spent = [0u64; 4];
        // Three at once: the first at once, the next a millisecond later each.
        assert_eq!(call(&line, 0, &mut spent[0]), (0, true, 0));
        assert_eq!(call(&line, 0, &mut spent[1]), (MS, true, MS));
        assert_eq!(call(&line, 0, &mut spent[2]), (2 * MS, true, 2 * MS));
        assert_eq!(spent[..3], [0, MS, 2 * MS]);
        // One after the server is idle again: served as it arrives.
        assert_eq!(
            call(&line, 10 * MS, &mut spent[3]),
            (10 * MS, true, 10 * MS)
        );
        assert_eq!(spent[3], 0);
    }

    #[test]
    fn a_call_that_would_wait_past_the_timeout_fails_at_the_timeouts_end_and_is_still_served() {
        // 10 calls a second, 250 ms to wait: the fourth of a herd waits 300 ms.
        let line = Line::new(10, Duration::from_millis(250));
        let mut spent = [0u64; 5];
        for (i, spent) in spent.iter_mut().take(3).enumerate() {
            let (_, in_time, _) = call(&line, 0, spent);
            assert!(in_time, "call {i}");
        }
        assert_eq!(call(&line, 0, &mut spent[3]), (300 * MS, false, 250 * MS));
        assert_eq!(spent[3], 250 * MS);
        // The server still took its turn: the next caller is served after it.
        assert_eq!(call(&line, 0, &mut spent[4]), (400 * MS, false, 250 * MS));
    }

    #[test]
    fn a_runs_calls_share_one_timeout() {
        // 100 calls a second; a run that waited 9 ms of its 10 has 1 ms left.
        let line = Line::new(100, Duration::from_millis(10));
        let mut run = 9 * MS;
        let mut other = 0;
        call(&line, 0, &mut other);
        // The server is busy until 10 ms: a 2 ms wait from 8 ms is past what is left.
        assert_eq!(call(&line, 8 * MS, &mut run), (10 * MS, false, 9 * MS));
        assert_eq!(run, 10 * MS);
        // Nothing left: even a call served at once... is, for a wait of nothing is in time.
        assert_eq!(call(&line, 50 * MS, &mut run), (50 * MS, true, 50 * MS));
    }

    #[test]
    fn a_store_in_a_line_runs_the_operation_at_the_servers_time_and_fails_a_late_caller() {
        let mut first = MemoryStore::queued(Line::new(2, Duration::from_millis(400)));
        let mut second = first.clone();
        let rules = KeyRules::default();
        first.set_time(1000 * MS);
        let reply = first.update(&rules, |_, now| now).expect("in time");
        assert_eq!((reply.value, reply.now), (1000, 1000));
        // Half a second later in the line: past the 400 ms the second caller waits.
        second.set_time(1000 * MS);
        let late = second.update(&rules, |state, now| {
            state.budget.at = now;
        });
        assert!(matches!(late, Err(Error::Store { .. })));
        assert_eq!(second.line().map(Line::went_on), Some(1400 * MS));
        // The server ran it at its turn.
        assert_eq!(first.state().map(|s| s.budget.at), Some(1500));
    }
}
