//! A group of the fleet's processes stepped event by event, in virtual time: the processes of
//! one store (a shared breaker and budget), of a block of hosts each with its own store, or a
//! fleet small enough to be one group. Its events are the model of [`super::fleet`]: a
//! process's job starts a run; the run calls the service; the answer comes a call's time
//! later, and the run's own pacing, with its key's breaker and budget through the same
//! [`Shared`] handle a real run uses, decides what follows. Events at the same time run in the
//! order they were scheduled, as one queue for the whole fleet had them.
//!
//! A group is stepped a window at a time ([`Group::advance`]), so that the fleet's groups can
//! be stepped side by side and their calls counted per second in bounded memory.

use std::cell::{Cell, RefCell};
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::rc::Rc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use rand::RngExt;

use super::Nanos;
use super::tally::Tally;
use crate::policy::Policy;
use crate::policy::adaptive::Estimates;
use crate::policy::backoff::SeededRng;
use crate::policy::judgement::{Judgement, Retryable};
use crate::policy::key::FailMode;
use crate::policy::pacing::Pacing;
use crate::policy::rules::Reason;
use crate::policy::shared::{KeyRules, KeyState, Refusal};
use crate::state::memory::{Line, MemoryStore};
use crate::state::{Error, Fallback, Local, Reply, Shared, Store};

/// A `--state` store that answers one key's calls at a rate, and what a run does when it
/// cannot wait for it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StoreModel {
    /// Script calls a second (`--store-rate`).
    pub rate: u32,
    /// How long a run waits for the store, all its calls together (`--state-timeout`).
    pub timeout: Duration,
    /// What a run does when it did not wait long enough (`--state-fail`).
    pub fail: FailMode,
}

/// Runs started between two reports of progress.
const PROGRESS_EVERY: u64 = 4096;

/// What every group of one simulated variant shares: the policy, the key's rules, the world's
/// times, and every process's phase.
pub struct Plan<'a> {
    pub policy: &'a Policy,
    /// The key's rules; `None` without a key.
    pub state: Option<&'a KeyRules>,
    pub outage: Nanos,
    pub every: Nanos,
    pub call: Nanos,
    /// `call`, as a duration.
    pub call_time: Duration,
    pub horizon: Nanos,
    pub repeat: bool,
    /// Each process's first start.
    pub phases: &'a [Nanos],
    /// Runs started, counted for the progress line.
    pub started: &'a AtomicU64,
    /// The shared store's rate, when the fleet's one store answers at one.
    pub store: Option<StoreModel>,
    /// The fleet's hosts: a run that loses a shared store goes on with its host's state.
    pub hosts: usize,
}

impl Plan<'_> {
    /// A store of the key's state: in a line, when the fleet's store answers at a rate.
    pub fn new_store(&self) -> MemoryStore {
        match self.store {
            Some(m) => MemoryStore::queued(Line::new(m.rate, m.timeout)),
            None => MemoryStore::default(),
        }
    }

    /// A run's handle on `store`; in a line, as a real run's on a `--state` store: its moot
    /// successes left unrecorded (no call is made for them), and its host's state to go on
    /// with, from `local`, when the store does not answer in time.
    pub fn handle(
        &self,
        rules: &KeyRules,
        store: &MemoryStore,
        local: impl FnOnce() -> Box<dyn Store>,
    ) -> Shared {
        let mut handle = Shared::new(String::new(), rules.clone(), Box::new(store.clone()));
        if let Some(m) = self.store {
            handle.skip_moot_successes = true;
            handle.fallback = Some(Fallback {
                fail: m.fail,
                local: local(),
            });
        }
        handle
    }
}

/// The hosts' own states, by host, and until when (milliseconds) each host's state refuses
/// every run that starts, as its last refusal said; 0 once its state has moved since.
#[derive(Default)]
struct Hosts {
    states: Vec<Option<MemoryStore>>,
    refused_until: Vec<u64>,
}

/// A host's own state, for a run that falls back on it when it loses a shared store: looked
/// up, and made on its first use, only then. Runs that never lose the store never touch it;
/// looking up 100,000 hosts' states at every start made the largest fleet several times
/// slower.
struct HostState {
    locals: Rc<RefCell<Hosts>>,
    host: usize,
    /// The time of the call, as the group's clock says when it is made.
    now: Rc<Cell<Nanos>>,
}

impl HostState {
    /// The host's state, made if need be, on the clock of the call.
    fn store(&self) -> MemoryStore {
        let mut hosts = self.locals.borrow_mut();
        if hosts.states.len() <= self.host {
            hosts.states.resize(self.host + 1, None);
        }
        // Its state may move: what a refusal said of it holds no longer.
        if let Some(until) = hosts.refused_until.get_mut(self.host) {
            *until = 0;
        }
        let local = hosts.states[self.host].get_or_insert_with(MemoryStore::default);
        local.set_time(self.now.get());
        local.clone()
    }
}

impl Local for HostState {
    fn update<T>(
        &mut self,
        s: &KeyRules,
        op: impl Fn(&mut KeyState, u64) -> T,
    ) -> Result<Reply<T>, Error> {
        self.store().update(s, op)
    }

    fn reset(&mut self) -> Result<(), Error> {
        Local::reset(&mut self.store())
    }

    fn describe(&self) -> String {
        "this host's state".into()
    }
}

/// Until when (milliseconds) a state that gave `refusal` refuses every run that starts, as long
/// as it does not move; 0 when that is not known (a spent budget refills).
fn refuses_until(refusal: Refusal) -> u64 {
    match refusal {
        Refusal::Open { until } => until,
        Refusal::Probing { lease_until } => lease_until,
        Refusal::Budget | Refusal::Unknown | Refusal::Remembered => 0,
    }
}

/// Where a run is after calls to its key's store made from `now`: when it goes on, and
/// whether the store's line made it wait past its `--state-timeout`.
pub fn after_store(store: &MemoryStore, now: Nanos) -> (Nanos, bool) {
    store
        .line()
        .map_or((now, false), |l| (l.went_on(), l.timed_out()))
}

impl Plan<'_> {
    /// When start `period` of a process with `phase` is, if it is one: the first always is,
    /// the next ones while they fall within the simulated time.
    fn start(&self, phase: Nanos, period: u64) -> Option<Nanos> {
        if period == 0 {
            return Some(phase);
        }
        let at = phase.saturating_add(self.every.saturating_mul(period));
        (self.repeat && at < self.horizon).then_some(at)
    }

    /// The judgement of an attempt of `pacing`'s run that ended at `now`, `elapsed` into the
    /// run, as a real run's loop gives it: success, a retry after a delay, or the limit.
    pub fn judge(
        pacing: &mut Pacing,
        ok: bool,
        attempt: u32,
        elapsed: Duration,
        estimates: Option<&Estimates>,
        rng: &mut SeededRng,
    ) -> Judgement {
        if ok {
            return Judgement::Success;
        }
        // A failed call is a failure the policy retries.
        let because = Retryable::Status(Reason::AnyFailure);
        Judgement::paced(
            because,
            pacing.after_failure(attempt, elapsed, estimates, rng),
        )
    }
}

/// The starts of a group's runs, in time order: its processes by phase, once every period.
pub struct Starts {
    /// The processes, by phase, ties in the order of their numbers.
    order: Vec<u32>,
    /// Where in `order` the next start is, and in which period.
    cursor: usize,
    period: u64,
    /// Counted but not yet added to the progress.
    unreported: u64,
}

impl Starts {
    pub fn new(plan: &Plan, mut order: Vec<u32>) -> Starts {
        order.sort_by_key(|&p| (plan.phases[p as usize], p));
        Starts {
            order,
            cursor: 0,
            period: 0,
            unreported: 0,
        }
    }

    /// The next start, as its time and its place in `order`.
    pub fn peek(&mut self, plan: &Plan) -> Option<(Nanos, usize)> {
        loop {
            let at = self
                .order
                .get(self.cursor)
                .and_then(|&p| plan.start(plan.phases[p as usize], self.period));
            match at {
                Some(at) => return Some((at, self.cursor)),
                // A process whose start falls past the simulated time: so do the rest of the
                // period's; past the first process, so do every later period's.
                None if self.cursor == 0 => return None,
                None => (self.cursor, self.period) = (0, self.period + 1),
            }
        }
    }

    /// The process at a place in `order`.
    pub fn process(&self, place: usize) -> usize {
        self.order[place] as usize
    }

    /// Moves past the start [`Starts::peek`] gave.
    pub fn pop(&mut self, plan: &Plan) {
        self.cursor += 1;
        if self.cursor == self.order.len() {
            (self.cursor, self.period) = (0, self.period + 1);
        }
        self.unreported += 1;
        if self.unreported == PROGRESS_EVERY {
            self.report(plan);
        }
    }

    /// Adds the runs started since the last report to the progress.
    pub fn report(&mut self, plan: &Plan) {
        plan.started.fetch_add(self.unreported, Ordering::Relaxed);
        self.unreported = 0;
    }
}

/// One run of retry by one process.
struct Run<'a> {
    process: u32,
    /// The group's store it uses.
    store: u32,
    started: Nanos,
    attempt: u32,
    /// Its delays and limits, as a real run's; with `--backoff adaptive`, learning from the
    /// key's outcomes in `shared`'s store.
    pacing: Pacing<'a>,
    shared: Option<Shared>,
    /// It lost the shared state: its handle, if any, is on its host's.
    lost: bool,
}

/// What happens next in a group, besides its starts.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum What {
    /// A run's attempt is due: its key is asked first whether it may retry, then the
    /// attempt calls the service.
    Call,
    /// A run's attempt calls the service, its key asked already (the store's answer took
    /// time).
    Attempt,
    /// The call's answer arrives: success or not.
    Answer { ok: bool },
}

/// An event at its time, ties in the order scheduled.
#[derive(PartialEq, Eq, PartialOrd, Ord)]
struct Due {
    at: Nanos,
    seq: u64,
    run: u32,
    what: What,
}

/// A group of processes and their stores, stepped event by event.
pub struct Group<'a> {
    plan: &'a Plan<'a>,
    starts: Starts,
    /// The order each process's next start was scheduled in, by its place in `starts`.
    start_seqs: Vec<u64>,
    queue: BinaryHeap<Reverse<Due>>,
    /// Events scheduled so far.
    seq: u64,
    /// The runs under way: a run's place is taken again once it ended, so memory follows the
    /// group, not the simulated time.
    runs: Vec<Option<Run<'a>>>,
    free: Vec<usize>,
    /// The key's state: one store for the group, or one for each of its hosts.
    stores: Vec<MemoryStore>,
    /// Each host's own state, by host, for a run that loses a shared store that answers at a
    /// rate: made when a run on the host first falls back on it ([`HostState`]).
    locals: Rc<RefCell<Hosts>>,
    /// The time of the run that calls a store now: a host's own state takes it when used.
    local_now: Rc<Cell<Nanos>>,
    /// How a process finds its store: (process mod `hosts`) − `first_host`.
    hosts: usize,
    first_host: usize,
    /// For each store, until when (its milliseconds) its breaker refuses every run that
    /// starts, as the last refusal said; 0 when its state has moved since. Until then a
    /// start is refused without asking: a refused admission changes nothing.
    refused_until: Vec<u64>,
    /// For each store, whether its state is settled, as its last answer said: a success
    /// recorded would change nothing ([`crate::policy::shared::View::settled`]).
    settled: Vec<bool>,
    rng: SeededRng,
}

impl<'a> Group<'a> {
    /// The group of `processes`, with `stores` stores (none without a key) found as process
    /// mod `hosts` − `first_host`, drawing from `rng`.
    pub fn new(
        plan: &'a Plan<'a>,
        processes: Vec<u32>,
        stores: usize,
        hosts: usize,
        first_host: usize,
        rng: SeededRng,
    ) -> Group<'a> {
        let stores = if plan.state.is_some() { stores } else { 0 };
        // A single queue for the fleet scheduled every process's first start in the order of
        // their numbers, before anything else.
        let starts = Starts::new(plan, processes);
        let start_seqs = starts.order.iter().map(|&p| u64::from(p) + 1).collect();
        Group {
            plan,
            starts,
            start_seqs,
            queue: BinaryHeap::new(),
            seq: plan.phases.len() as u64,
            runs: Vec::new(),
            free: Vec::new(),
            stores: (0..stores).map(|_| plan.new_store()).collect(),
            locals: Rc::default(),
            local_now: Rc::default(),
            hosts: hosts.max(1),
            first_host,
            refused_until: vec![0; stores],
            settled: vec![false; stores],
            rng,
        }
    }

    /// When the group's next event is.
    pub fn next_at(&mut self) -> Option<Nanos> {
        let start = self.starts.peek(self.plan).map(|(at, _)| at);
        let event = self.queue.peek().map(|Reverse(d)| d.at);
        start.into_iter().chain(event).min()
    }

    fn schedule(&mut self, at: Nanos, run: usize, what: What) {
        self.seq += 1;
        self.queue.push(Reverse(Due {
            at,
            seq: self.seq,
            run: u32::try_from(run).unwrap_or(u32::MAX),
            what,
        }));
    }

    /// Steps every event before `until`.
    pub fn advance(&mut self, until: Nanos, tally: &mut Tally) {
        loop {
            let start = self.starts.peek(self.plan);
            let event = self.queue.peek().map(|Reverse(d)| (d.at, d.seq));
            let start_first = match (start, event) {
                (Some((at, place)), Some(e)) => (at, self.start_seqs[place]) < e,
                (Some(_), None) => true,
                (None, Some(_)) => false,
                (None, None) => break,
            };
            if start_first {
                let Some((at, place)) = start.filter(|&(at, _)| at < until) else {
                    break;
                };
                self.start(at, place, tally);
            } else {
                match self.queue.peek() {
                    Some(Reverse(d)) if d.at < until => {}
                    _ => break,
                }
                let Some(Reverse(due)) = self.queue.pop() else {
                    break;
                };
                match due.what {
                    What::Call => self.call(due.at, due.run as usize, tally),
                    What::Attempt => self.attempt(due.at, due.run as usize, tally),
                    What::Answer { ok } => self.answer(due.at, due.run as usize, ok, tally),
                }
            }
        }
        self.starts.report(self.plan);
    }

    /// A process's job starts a run at `now`.
    fn start(&mut self, now: Nanos, place: usize, tally: &mut Tally) {
        let process = self.starts.process(place);
        self.starts.pop(self.plan);
        // The next start is scheduled now, as the single queue did.
        if self.plan.repeat && now.saturating_add(self.plan.every) < self.plan.horizon {
            self.seq += 1;
            self.start_seqs[place] = self.seq;
        }
        tally.report.jobs += 1;
        let store = (process % self.hosts).wrapping_sub(self.first_host);
        let (shared, went_on, lost) = match self.plan.state {
            Some(s) => {
                let Some((handle, went_on, lost)) = self.admit(now, process, store, s, tally)
                else {
                    return;
                };
                (Some(handle), went_on, lost)
            }
            None => (None, now, false),
        };
        // Without a key the adaptive delay has nothing to learn from: the exponential
        // schedule it falls back on, as a real run does when its state is lost.
        let pacing = Pacing::of(self.plan.policy, shared.is_some());
        let run = Some(Run {
            process: u32::try_from(process).unwrap_or(u32::MAX),
            store: u32::try_from(store).unwrap_or(u32::MAX),
            started: now,
            attempt: 0,
            pacing,
            shared,
            lost,
        });
        let id = match self.free.pop() {
            Some(id) => {
                self.runs[id] = run;
                id
            }
            None => {
                self.runs.push(run);
                self.runs.len() - 1
            }
        };
        // Its call is scheduled after everything else at this time: when nothing else is,
        // it is the next event, and made at once.
        let next_start = self.starts.peek(self.plan).map(|(at, _)| at);
        let next_event = self.queue.peek().map(|Reverse(d)| d.at);
        if went_on == now
            && next_start.is_none_or(|at| at > now)
            && next_event.is_none_or(|at| at > now)
        {
            self.seq += 1;
            self.call(now, id, tally);
        } else {
            self.schedule(went_on, id, What::Call);
        }
    }

    /// Asks `store` to let in the run of `process` that starts at `now`, with the key's rules
    /// `s`: its handle, when it goes on and whether it lost the store, or `None` if it does
    /// not start (refused, or --state-fail closed) or was settled at once, its call and
    /// success counted.
    fn admit(
        &mut self,
        now: Nanos,
        process: usize,
        store: usize,
        s: &KeyRules,
        tally: &mut Tally,
    ) -> Option<(Shared, Nanos, bool)> {
        let (store_ms, until) = (ms(now), self.refused_until[store]);
        self.stores[store].set_time(now);
        // A store in a line is asked as the single queue asked it, unless it is free: then
        // the call is answered at once, and takes its turn.
        let line = self.stores[store].line();
        let free = line.is_none_or(Line::free);
        let take_turn = |line: Option<&Line>| {
            if let Some(line) = line {
                line.serve(&mut 0);
            }
        };
        if store_ms < until && free {
            take_turn(line);
            tally.report.refused += 1;
            return None;
        }
        // Every call from now on succeeds, and every answer to come is to one of them: a
        // store whose state is settled stays so, the run is let in as a run of a closed
        // breaker, and its one call's success changes nothing any later operation sees.
        // Nothing drawn at random matters any more either (only failures draw).
        if self.settled[store] && free && now >= self.plan.outage.saturating_add(self.plan.call) {
            take_turn(line);
            // Its call and its answer, scheduled as the single queue did.
            self.seq += 2;
            tally.call(now, false);
            tally.success(process, now.saturating_add(self.plan.call));
            return None;
        }
        let host = process % self.plan.hosts;
        if let (Some(model), Some(line)) = (self.plan.store, line)
            && line.too_late()
        {
            return self.lost_at_once(now, host, store, s, model.fail, tally);
        }
        let local = self.local(host, now);
        let mut handle = self.plan.handle(s, &self.stores[store], || Box::new(local));
        let admitted = handle.admit();
        let (went_on, lost) = after_store(&self.stores[store], now);
        if lost {
            // Its call still ran at the store: the key's state may have moved.
            tally.report.lost_store += 1;
            (self.refused_until[store], self.settled[store]) = (0, false);
        } else {
            self.settled[store] = settled(&handle);
        }
        let refused = match admitted {
            // --state-fail closed: the run does not start.
            Err(_) => return None,
            Ok(refused) => refused,
        };
        if let Some(refused) = refused {
            if lost {
                // Refused by its host's own state.
                tally.report.refused += 1;
                return None;
            }
            self.refused_until[store] = refuses_until(refused.refusal);
            tally.report.refused += 1;
            return None;
        }
        if !lost {
            self.refused_until[store] = 0;
        }
        tally.report.probes += u64::from(handle.probing());
        Some((handle, went_on, lost))
    }

    /// A start whose call to the shared store waits past its `--state-timeout`, as the line
    /// says before it is made: the call is made all the same (the store runs it in its turn),
    /// and the run goes on with its host's own state as its handle would have (`--state-fail
    /// open`), or does not start (`closed`). Stepped without a handle on the shared store, and
    /// a host whose own state refused a run refuses the next without asking it until its state
    /// moves: when a fleet starts all at once, most of its runs come here.
    fn lost_at_once(
        &mut self,
        now: Nanos,
        host: usize,
        store: usize,
        s: &KeyRules,
        fail: FailMode,
        tally: &mut Tally,
    ) -> Option<(Shared, Nanos, bool)> {
        let _ = Store::admit(&mut self.stores[store].clone(), s);
        let (went_on, _) = after_store(&self.stores[store], now);
        tally.report.lost_store += 1;
        (self.refused_until[store], self.settled[store]) = (0, false);
        if fail == FailMode::Closed {
            return None;
        }
        let until = self
            .locals
            .borrow()
            .refused_until
            .get(host)
            .copied()
            .unwrap_or(0);
        if ms(now) < until {
            tally.report.refused += 1;
            return None;
        }
        let local = self.local(host, now);
        let mut handle = Shared::new(String::new(), s.clone(), Box::new(local));
        handle.skip_moot_successes = true;
        match handle.admit() {
            Err(_) => None,
            Ok(Some(refused)) => {
                let until = refuses_until(refused.refusal);
                let mut hosts = self.locals.borrow_mut();
                if hosts.refused_until.len() <= host {
                    hosts.refused_until.resize(host + 1, 0);
                }
                hosts.refused_until[host] = until;
                tally.report.refused += 1;
                None
            }
            Ok(None) => {
                tally.report.probes += u64::from(handle.probing());
                Some((handle, went_on, true))
            }
        }
    }

    /// Host `host`'s own state at `now`, for a run that may lose a shared store that answers
    /// at a rate: found only if the run falls back on it.
    fn local(&mut self, host: usize, now: Nanos) -> HostState {
        self.local_now.set(now);
        HostState {
            locals: Rc::clone(&self.locals),
            host,
            now: Rc::clone(&self.local_now),
        }
    }

    /// Sets the clocks of the stores a run may call at `now`.
    fn clocks(&mut self, store: usize, _process: u32, now: Nanos) {
        self.stores[store].set_time(now);
        self.local_now.set(now);
    }

    /// A run's attempt is due at `now`: after its key's check, it calls the service.
    fn call(&mut self, now: Nanos, id: usize, tally: &mut Tally) {
        let Some((store, process, asks)) = self.runs[id].as_ref().map(|r| {
            (
                r.store as usize,
                r.process,
                r.attempt > 0 && r.shared.is_some(),
            )
        }) else {
            return;
        };
        if asks {
            self.clocks(store, process, now);
        }
        let Some(run) = self.runs[id].as_mut() else {
            return;
        };
        if run.attempt > 0
            && let Some(shared) = &mut run.shared
        {
            if !run.lost {
                self.refused_until[store] = 0;
            }
            let refused = shared.before_retry();
            let (went_on, timed_out) = after_store(&self.stores[store], now);
            if timed_out {
                // The run goes on without its key, as a real run whose store failed.
                (run.shared, run.lost) = (None, true);
                tally.report.lost_store += 1;
                self.settled[store] = false;
            } else if !run.lost {
                self.settled[store] = settled(shared);
            }
            if let Ok(Some(_)) = refused {
                tally.report.gave_up += 1;
                self.runs[id] = None;
                self.free.push(id);
                return;
            }
            if went_on > now {
                self.schedule(went_on, id, What::Attempt);
                return;
            }
        }
        self.attempt(now, id, tally);
    }

    /// A run's attempt calls the service at `now`.
    fn attempt(&mut self, now: Nanos, id: usize, tally: &mut Tally) {
        let Some(run) = self.runs[id].as_mut() else {
            return;
        };
        run.attempt += 1;
        tally.call(now, run.attempt > 1);
        let ok = now >= self.plan.outage;
        self.schedule(now.saturating_add(self.plan.call), id, What::Answer { ok });
    }

    /// The answer to a run's call arrives at `now`.
    fn answer(&mut self, now: Nanos, id: usize, ok: bool, tally: &mut Tally) {
        let Some(mut run) = self.runs[id].take() else {
            return;
        };
        // As a real run: the key's outcomes as the store told them at the attempt's start,
        // with this failure counted, at the store's time now.
        let view = run.shared.as_ref().and_then(|s| s.view.as_ref());
        let estimates = view.filter(|_| run.pacing.learns()).map(|v| {
            v.history
                .estimate_after_failure(ms(now), self.plan.policy.backoff.delay)
        });
        let judgement = Plan::judge(
            &mut run.pacing,
            ok,
            run.attempt,
            Duration::from_nanos(now.saturating_sub(run.started)),
            estimates.as_ref(),
            &mut self.rng,
        );
        let mut retry = judgement.delay();
        let mut went_on = now;
        if run.shared.is_some() {
            self.clocks(run.store as usize, run.process, now);
        }
        if let Some(shared) = &mut run.shared {
            let store = run.store as usize;
            if !run.lost {
                self.refused_until[store] = 0;
            }
            let u = self.rng.random::<f64>();
            let told = shared.after_attempt(judgement.counted(), retry.is_some(), u);
            let timed_out;
            (went_on, timed_out) = after_store(&self.stores[store], now);
            if timed_out {
                // The run goes on without its key, as a real run whose store failed.
                (run.shared, run.lost) = (None, true);
                tally.report.lost_store += 1;
                self.settled[store] = false;
            } else if !run.lost {
                self.settled[store] = settled(shared);
            }
            if let Ok((_, Some(_))) = told {
                retry = None;
            }
        }
        if retry.is_none() {
            // The run is over: its place is free for the next.
            self.free.push(id);
        }
        if ok {
            tally.success(run.process as usize, now);
            return;
        }
        match retry {
            Some(delay) => {
                self.runs[id] = Some(run);
                self.schedule(went_on.saturating_add(super::nanos(delay)), id, What::Call);
            }
            None => tally.report.gave_up += 1,
        }
    }
}

/// Whether the key's state is settled, as the handle's last answer said.
fn settled(shared: &Shared) -> bool {
    shared.view.as_ref().is_some_and(|v| v.settled)
}

/// The store's clock: milliseconds of virtual time.
fn ms(t: Nanos) -> u64 {
    t / 1_000_000
}
