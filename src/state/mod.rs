//! State shared between runs (`--key`): where a key's circuit breaker and retry budget are
//! kept. One concept, in these places:
//!
//! - the rules, pure and shared with the simulator: `policy/shared.rs` (each operation on a
//!   key's state: admit, after an attempt, before a retry), over `policy/breaker.rs` and
//!   `policy/budget.rs` (and `policy/adaptive.rs`'s kept outcomes);
//! - the settings: `policy/key.rs` ([`KeySettings`]: the key, its rules, and where it is kept);
//! - the stores, here: a [`Store`] runs each rule as one atomic operation. `file.rs` (with
//!   `saved.rs`, the file's contents and name, and `clock.rs`) keeps a key in the state
//!   directory; `redis.rs` in Redis, through the script `redis.lua` (with `connect.rs`, which
//!   reaches the server within the run's deadline, `resp.rs`, which reads its replies within
//!   bounds, and `url.rs`, which parses `--state URL`); `memory.rs` in memory, for
//!   the simulator; `list.rs` lists every key for `--list-keys`;
//! - the run's handle on its key: [`Shared`] (`handle.rs`), which `run/gate.rs` calls.

mod clock;
mod connect;
mod file;
mod handle;
pub(crate) mod list;
pub mod memory;
pub mod redis;
mod resp;
mod saved;
pub mod url;
#[cfg(test)]
pub(crate) mod watched;

use std::fmt;
use std::io;
use std::path::PathBuf;
use std::time::Duration;

pub use self::handle::{Fallback, IDLE_GRACE, Shared};
use crate::policy::KeySettings;
use crate::policy::breaker::Attempt;
use crate::policy::duration::human;
pub use crate::policy::shared::Refused;
use crate::policy::shared::{Admit, After, KeyRules, KeyState, Refusal, Ticket, View};

/// A run's handle on the key its policy names: in the `--state` store, with the local state
/// directory to fall back on, or in the state directory alone. Nothing is connected yet.
/// No call to a store goes past the run's `--max-time`: the run's gate tells the handle what
/// is left before each operation (`Shared::wait_at_most`).
pub fn open(settings: &KeySettings) -> Shared {
    let local = Box::new(file::FileStore::new(settings.dir.clone(), &settings.key));
    let key = settings.key.clone();
    let mut shared = match &settings.store {
        None => Shared::new(key, settings.rules.clone(), local),
        Some(store) => {
            let remote = Box::new(redis::RedisStore::new(store, &settings.key));
            let mut shared = Shared::new(key, settings.rules.clone(), remote);
            shared.memo = Some(Box::new(file::FileMemo::new(
                settings.dir.clone(),
                &settings.key,
                store.url.redacted(),
            )));
            shared.fallback = Some(Fallback {
                fail: store.fail,
                local,
            });
            shared
        }
    };
    shared.skip_moot_successes = true;
    shared
}

/// What a store answers: the operation's result, and the key's state and time just after it.
#[derive(Clone, Debug)]
pub struct Reply<T> {
    pub value: T,
    /// The store's time, in the milliseconds its state is kept in.
    pub now: u64,
    pub view: View,
    /// Something the run should be told, though the operation went through (a corrupt state
    /// file moved aside).
    pub warning: Option<String>,
}

/// Where a key's state is kept. Each operation is one rule of [`KeyState`], run atomically
/// with respect to every other process that uses the key, at the store's own time.
pub trait Store {
    /// A run wants to start.
    fn admit(&mut self, s: &KeyRules) -> Result<Reply<Admit>, Error>;
    /// An attempt ended; the run may want a retry.
    fn after_attempt(
        &mut self,
        s: &KeyRules,
        ticket: Ticket,
        attempt: Attempt,
        wants_retry: bool,
        u: f64,
    ) -> Result<Reply<After>, Error>;
    /// A retry is about to start, after its wait.
    fn before_retry(
        &mut self,
        s: &KeyRules,
        ticket: Ticket,
    ) -> Result<Reply<(Option<Refusal>, Ticket)>, Error>;
    /// The key's state now, changing nothing.
    fn view(&mut self, s: &KeyRules) -> Result<Reply<()>, Error>;
    /// Forgets the key.
    fn reset(&mut self) -> Result<(), Error>;
    /// Forgets the key, and says whether there was anything to forget.
    fn forget(&mut self) -> Result<Forgot, Error> {
        self.reset().map(|()| Forgot::State)
    }
    /// Where the state is, for `--explain`.
    fn describe(&self) -> String;
    /// The run may not call again for a while: let go of what is held open (a connection).
    /// The next call opens it again.
    fn idle(&mut self) {}
    /// The next operations may wait for the key (its lock, a server) at most `most`: what is
    /// left before the run's `--max-time` deadline. `None`: no deadline.
    fn wait_at_most(&mut self, _most: Option<Duration>) {}
}

/// A store that runs the rules itself, on a [`KeyState`] it reads and writes whole (a file, or
/// memory): it needs only this one operation to be a [`Store`].
pub trait Local {
    /// Runs `op` on the key's state at the store's time, atomically, and keeps what it leaves.
    /// `op` is a pure function of the state and the time: a store may run it more than once
    /// (without its lock first, to find that it changes nothing and need not be written).
    fn update<T>(
        &mut self,
        s: &KeyRules,
        op: impl Fn(&mut KeyState, u64) -> T,
    ) -> Result<Reply<T>, Error>;
    fn reset(&mut self) -> Result<(), Error>;
    fn describe(&self) -> String;
    /// The key's state now, changing nothing: not even what `update` would write back (a
    /// clamped time, a corrupt file moved aside), which the reply's warning may tell instead.
    fn peek(&mut self, s: &KeyRules) -> Result<Reply<()>, Error> {
        self.update(s, |_, _| ())
    }
    /// Forgets the key, and says whether there was anything to forget.
    fn forget(&mut self) -> Result<Forgot, Error> {
        self.reset().map(|()| Forgot::State)
    }
    /// See [`Store::wait_at_most`].
    fn wait_at_most(&mut self, _most: Option<Duration>) {}
}

/// What `--reset-state` did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Forgot {
    /// The key's state is gone.
    State,
    /// The key had none.
    Nothing,
}

impl<L: Local> Store for L {
    fn admit(&mut self, s: &KeyRules) -> Result<Reply<Admit>, Error> {
        self.update(s, |state, now| state.admit(s, now))
    }

    fn after_attempt(
        &mut self,
        s: &KeyRules,
        ticket: Ticket,
        attempt: Attempt,
        wants_retry: bool,
        u: f64,
    ) -> Result<Reply<After>, Error> {
        self.update(s, |state, now| {
            state.after_attempt(s, now, ticket, attempt, wants_retry, u)
        })
    }

    fn before_retry(
        &mut self,
        s: &KeyRules,
        ticket: Ticket,
    ) -> Result<Reply<(Option<Refusal>, Ticket)>, Error> {
        self.update(s, |state, _| {
            let mut ticket = ticket;
            (state.before_retry(s, &mut ticket), ticket)
        })
    }

    fn view(&mut self, s: &KeyRules) -> Result<Reply<()>, Error> {
        self.peek(s)
    }

    fn reset(&mut self) -> Result<(), Error> {
        Local::reset(self)
    }

    fn forget(&mut self) -> Result<Forgot, Error> {
        Local::forget(self)
    }

    fn describe(&self) -> String {
        Local::describe(self)
    }

    fn wait_at_most(&mut self, most: Option<Duration>) {
        Local::wait_at_most(self, most);
    }
}

/// What this host remembers of its key's open breaker, as its `--state` store told it: so
/// that, until the breaker's open time is over, its runs are refused without a call.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Verdict {
    /// How long the breaker stays open from now, by this host's boot clock.
    pub left: Duration,
    /// The budget's tokens as the store last told them, for the log.
    pub tokens: f64,
}

/// Where a host keeps the [`Verdict`] a `--state` store gave it on a key (`file.rs`'s
/// `KEY.open`, in the state directory).
pub trait Memo {
    /// The verdict remembered, its time left as of now (zero once it is over); `None` when
    /// there is none this host can believe (none, another store's, one from another boot).
    fn recall(&mut self) -> Result<Option<Verdict>, Error>;
    /// Remembers `verdict`, in place of any other.
    fn remember(&mut self, verdict: Verdict) -> Result<(), Error>;
    /// Forgets the verdict; whether there was one.
    fn forget(&mut self) -> Result<bool, Error>;
}

/// A state problem: a warning, never a change to the command's outcome.
#[derive(Debug)]
pub enum Error {
    /// No state directory: none given, and neither `$XDG_STATE_HOME` nor `$HOME` is set.
    NoDirectory,
    /// The key's lock could not be had within the wait's bound: the run cannot know the key's
    /// state, and makes no retry its breaker or budget would have had to allow.
    Locked(Locked),
    /// The shared store (`--state`) did not answer in time, or failed.
    Store {
        /// Its URL, redacted.
        place: String,
        why: String,
    },
    /// The state cannot be used, for the reason given, which says what to do about it.
    Unusable(String),
    /// The state directory is one others can write, or another user's: refused, for what says
    /// how to fix it. The run goes on without the key, as without a directory.
    UnsafeDirectory(String),
    /// Reading or writing the state failed.
    Io {
        doing: &'static str,
        path: PathBuf,
        source: io::Error,
    },
}

/// Why a run did not get its key's lock, and how long it waited for it.
#[derive(Debug)]
pub struct Locked {
    /// The lock file.
    pub path: PathBuf,
    pub waited: Duration,
    pub why: LockWait,
}

/// What ended a wait for a key's lock.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LockWait {
    /// The lock changed hands this many times, never to this run: other runs of the key are
    /// using it at once.
    Contended { turns: u64 },
    /// One holder kept it and made no progress.
    Stuck,
    /// The `--max-time` deadline came first.
    Deadline,
}

impl Error {
    /// Whether the run no longer knows its key's state, rather than going on without it:
    /// every problem of a key's state but a directory there is none of, or none to trust. A
    /// run that cannot read or write its key's state (a lock not had in time, a file it cannot
    /// write under `ulimit -f`, a store that stopped answering mid-run) cannot know what its
    /// budget holds, and a crowd of such runs must not spend more than it: each makes its first
    /// attempt, and no retry the breaker or budget would have had to allow.
    pub fn leaves_state_unknown(&self) -> bool {
        !matches!(self, Error::NoDirectory | Error::UnsafeDirectory(_))
    }
}

impl fmt::Display for Locked {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let path = crate::quote::quoted(&self.path);
        let waited = human(self.waited);
        match self.why {
            LockWait::Contended { turns } => write!(
                f,
                "the lock {path} kept changing hands for {waited} ({turns} times), never to this run: other runs are using the key at once"
            ),
            LockWait::Stuck => write!(
                f,
                "the lock {path} was held for {waited} by one process that made no progress"
            ),
            LockWait::Deadline => write!(
                f,
                "the lock {path} was not free before the --max-time deadline (waited {waited})"
            ),
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::NoDirectory => f.write_str(
                "no state directory: set --state-dir, RETRY_STATE_DIR, XDG_STATE_HOME or HOME",
            ),
            Error::Store { place, why } => write!(f, "the store {place}: {why}"),
            Error::Locked(locked) => locked.fmt(f),
            Error::Unusable(why) | Error::UnsafeDirectory(why) => f.write_str(why),
            Error::Io {
                doing,
                path,
                source,
            } => write!(f, "cannot {doing} '{}': {source}", path.display()),
        }
    }
}

impl std::error::Error for Error {}
