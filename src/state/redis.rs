//! A key's state in Redis, shared by every host that uses the store (`--state URL`):
//! one hash per key, each operation one server-side Lua script that runs the rules of
//! [`crate::policy::shared`] atomically, on the server's clock. The client connects on the
//! first call, and every call of a run together waits no longer than `--state-timeout`, nor
//! past the run's `--max-time`.

use std::time::{Duration, Instant};

use super::connect::{Addr, Connection, Failure, Login, ask_sentinels, connect, unexpected};
use super::resp::{Value, excerpt};
use super::{Error, Reply, Store};
use crate::policy::adaptive::History;
use crate::policy::breaker::{Attempt, Breaker, Change, ms};
use crate::policy::budget::Budget;
use crate::policy::duration::human;
use crate::policy::key::{Place, Remote};
use crate::policy::shared::{Admit, After, KeyRules, KeyState, Refusal, Ticket};

/// Where a key's hash is: `retry:KEY`.
pub const PREFIX: &str = "retry:";

/// A key unused for this long is forgotten (unless its settings need it kept longer).
const EXPIRY: Duration = Duration::from_secs(7 * 24 * 3600);

/// Every number given to a script stays below this, so that Lua's doubles hold it exactly.
const EXACT: u64 = 1 << 50;

/// The most keys `--list-keys` collects, and the most bytes of their names: a store that
/// holds more (or a server whose SCAN never ends) is a store problem, not a run that grows
/// without bound.
pub const MAX_KEYS: usize = 100_000;
const MAX_KEY_BYTES: usize = 16 << 20;

/// The script of every operation: one text, so one SHA, loaded once per server.
pub const SCRIPT: &str = include_str!("redis.lua");

/// The script's SHA1, as EVALSHA names it: generated, so that no run computes it
/// (tests/it/generated.rs checks it, and `RETRY_BLESS=1 cargo test --test it generated`
/// rewrites it).
pub const SCRIPT_SHA1: &str = include_str!("redis.lua.sha1");

/// A key's state in a Redis server.
pub struct RedisStore {
    settings: Remote,
    /// The key's hash.
    hash: String,
    /// Connected at the first call.
    con: Option<Connection>,
    /// Time spent waiting for the store in this run.
    spent: Duration,
    /// The run's `--max-time` deadline: no call goes past it.
    until: Option<Instant>,
    /// A time to run the scripts at instead of the server's clock: for tests that run the same
    /// operations through this store and another at the same times.
    clock: Option<u64>,
    /// A cluster's node that a MOVED or ASK answer named: the next connection goes there.
    node: Option<(String, u16)>,
    /// The last answer was ASK: the next command on the new connection follows ASKING.
    asking: bool,
}

impl RedisStore {
    /// The store for `key`; nothing is connected until the first call.
    pub fn new(settings: &Remote, key: &str) -> RedisStore {
        RedisStore {
            settings: settings.clone(),
            hash: format!("{PREFIX}{key}"),
            con: None,
            spent: Duration::ZERO,
            until: None,
            clock: None,
            node: None,
            asking: false,
        }
    }

    /// Every key with state in the store, by SCAN (never KEYS, which stops the server while
    /// it runs), sorted.
    pub fn keys(&mut self) -> Result<Vec<String>, Error> {
        // A cluster's keys are spread over its masters: each is scanned.
        let nodes = match &self.settings.url.place {
            Place::Cluster { .. } => self.masters()?.into_iter().map(Some).collect(),
            _ => vec![None],
        };
        let mut keys = Vec::new();
        let mut bytes = 0;
        for node in nodes {
            if node.is_some() {
                self.node = node;
                self.con = None;
            }
            self.scan(&mut keys, &mut bytes)?;
        }
        keys.sort();
        keys.dedup();
        Ok(keys)
    }

    /// A cluster's masters, as a node sees them (CLUSTER NODES), failed ones left out.
    fn masters(&mut self) -> Result<Vec<(String, u16)>, Error> {
        let table = self.call(|con| match con.call(&["CLUSTER", "NODES"])? {
            Value::Text(table) => Ok(String::from_utf8_lossy(&table).into_owned()),
            other => Err(Failure::Reply(format!(
                "CLUSTER NODES answered {}",
                unexpected(&other)
            ))),
        })?;
        Ok(table
            .lines()
            .filter_map(|line| {
                let fields: Vec<&str> = line.split_whitespace().collect();
                let flags = fields.get(2)?;
                if !flags.split(',').any(|f| f == "master") || flags.contains("fail") {
                    return None;
                }
                // ip:port@cport[,hostname]
                let addr = fields.get(1)?.split('@').next()?;
                let (host, port) = addr.rsplit_once(':')?;
                Some((host.to_string(), port.parse().ok()?))
            })
            .collect())
    }

    /// The keys with state on the connected server, by SCAN, added to `keys` (and their
    /// names' length to `bytes`). A SCAN takes as many rounds as the store needs, all within
    /// the run's one deadline, and stops at [`MAX_KEYS`].
    fn scan(&mut self, keys: &mut Vec<String>, bytes: &mut usize) -> Result<(), Error> {
        let pattern = format!("{PREFIX}*");
        let mut cursor = "0".to_string();
        loop {
            let (next, found) = self.call(|con| {
                let reply = con.call(&[
                    "SCAN", &cursor, "MATCH", &pattern, "COUNT", "1000", "TYPE", "hash",
                ])?;
                scanned(reply)
            })?;
            for key in found {
                // A name that is not UTF-8 is no key of retry's, which are all text.
                let Some(key) = String::from_utf8(key)
                    .ok()
                    .and_then(|k| k.strip_prefix(PREFIX).map(String::from))
                else {
                    continue;
                };
                *bytes += key.len();
                keys.push(key);
                if keys.len() > MAX_KEYS || *bytes > MAX_KEY_BYTES {
                    return Err(self.error(Failure::Reply(format!(
                        "it holds more than {MAX_KEYS} keys (or {} MiB of their names), the \
                         most --list-keys lists",
                        MAX_KEY_BYTES >> 20
                    ))));
                }
            }
            if next == "0" {
                return Ok(());
            }
            cursor = next;
        }
    }

    /// From now on, the store of `key`, on the same connection, within the same time limit.
    pub fn switch_to(&mut self, key: &str) {
        self.hash = format!("{PREFIX}{key}");
    }

    /// When a run last changed the key or started on it: the store pushes the key's expiry
    /// back then, so it is the expiry less the time left. `None` when the key has no expiry.
    pub fn last_used(&mut self, s: &KeyRules) -> Result<Option<u64>, Error> {
        let hash = self.hash.clone();
        let left = self.call(|con| int(con.call(&["PTTL", &hash])?))?;
        Ok(u64::try_from(left)
            .ok()
            .map(|left| expiry(s).saturating_sub(left)))
    }

    /// Runs every later operation at `now` (ms) instead of the server's time.
    pub fn at(&mut self, now: u64) {
        self.clock = Some(now);
    }

    /// The key's state as the scripts see it, changing nothing.
    pub fn read(&mut self, s: &KeyRules) -> Result<(KeyState, u64), Error> {
        let (now, _, state, _) = self.run("view", s, &[])?;
        Ok((state, now))
    }

    /// Connects to the store: its one server; the master the sentinels name; a cluster's
    /// node, the one a MOVED named if any, else the first of the URL's that answers.
    fn open(&mut self, deadline: Instant) -> Result<Connection, Failure> {
        let url = &self.settings.url;
        let login = Login {
            user: url.user.as_deref(),
            password: url.password.as_ref().map(|p| p.expose()),
            db: url.db,
        };
        let tcp = |host, port, tls| Addr::Tcp { host, port, tls };
        match &url.place {
            Place::Tcp { host, port, tls } => connect(&tcp(host, *port, *tls), login, deadline),
            Place::Unix(path) => connect(&Addr::Unix(path), login, deadline),
            Place::Sentinel {
                sentinels,
                master,
                tls,
                sentinel,
            } => {
                let (host, port) = ask_sentinels(sentinels, master, *tls, sentinel, deadline)?;
                connect(&tcp(&host, port, *tls), login, deadline)
            }
            Place::Cluster { nodes, tls } => {
                let mut last = None;
                for (host, port) in self.node.iter().chain(nodes) {
                    match connect(&tcp(host, *port, *tls), login, deadline) {
                        Ok(con) => return Ok(con),
                        Err(Failure::Timeout) => return Err(Failure::Timeout),
                        Err(e) => last = Some(e),
                    }
                }
                Err(last.unwrap_or(Failure::Reply("the cluster URL names no node".into())))
            }
        }
    }

    /// Runs `f` on the connection (made first, if need be) until the run's deadline: what is
    /// left of its `--state-timeout`, or its `--max-time` if that comes first; the time it
    /// takes is spent. A connection kept from an earlier call that turns out to be closed (the
    /// server's `timeout`, a proxy, or CLIENT KILL closed it while the run held it idle, during
    /// an attempt or a wait) is made again, once, within the same time: a closed idle
    /// connection never received the call.
    fn call<T>(&mut self, f: impl Fn(&mut Connection) -> Result<T, Failure>) -> Result<T, Error> {
        let started = Instant::now();
        let budget = self.settings.timeout.saturating_sub(self.spent);
        // A --state-timeout too long for the clock is as good as none.
        let own = started.checked_add(budget);
        let (deadline, by_max_time) = match (own, self.until) {
            (Some(own), Some(until)) if until < own => (until, true),
            (Some(own), _) => (own, false),
            (None, Some(until)) => (until, true),
            (None, None) => (started + Duration::from_secs(365 * 86_400), false),
        };
        let kept = self.con.is_some();
        let mut result = self.connected(deadline).and_then(&f);
        if kept && result.as_ref().is_err_and(Failure::dropped) {
            self.con = None;
            result = self.connected(deadline).and_then(&f);
        }
        // A cluster's node that does not hold the key names the one that does (MOVED), or the
        // one it is moving to (ASK): the call goes there, twice at most (a MOVED, then an ASK
        // while the slot migrates).
        for _ in 0..2 {
            let Some((host, port, ask)) = result.as_ref().err().and_then(Failure::redirect) else {
                break;
            };
            self.node = Some((host, port));
            self.asking = ask;
            self.con = None;
            result = self.connected(deadline).and_then(&f);
        }
        self.spent += started.elapsed();
        result.map_err(|failure| {
            // A call cut short may leave its answer on the way: never read it as the next's.
            self.con = None;
            match failure {
                Failure::Timeout if by_max_time => Error::Store {
                    place: self.settings.url.redacted(),
                    why: "no answer in the time the run's --max-time left it".into(),
                },
                failure => self.error(failure),
            }
        })
    }

    /// The connection, made if need be, its reads and writes ending at `deadline`.
    fn connected(&mut self, deadline: Instant) -> Result<&mut Connection, Failure> {
        if self.con.is_none() {
            let mut con = self.open(deadline)?;
            if std::mem::take(&mut self.asking) {
                con.call(&["ASKING"])?;
            }
            self.con = Some(con);
        }
        let con = self
            .con
            .as_mut()
            .ok_or_else(|| Failure::Reply("no connection".into()))?;
        con.until(deadline);
        Ok(con)
    }

    fn error(&self, failure: Failure) -> Error {
        let why = match failure {
            Failure::Timeout => format!(
                "no answer within --state-timeout {}",
                human(self.settings.timeout)
            ),
            f if self.settings.url.password.is_none() && f.unauthenticated() => {
                "the store requires a password: put it in the URL or in REDISCLI_AUTH".into()
            }
            f => f.words(),
        };
        Error::Store {
            place: self.settings.url.redacted(),
            why,
        }
    }

    /// Runs an operation of the script: EVALSHA, and EVAL when the server does not have it
    /// yet (which also keeps it for the next run). Returns the store's time, whether the hash
    /// had to be started afresh, the state after the operation, and its answer.
    fn run(
        &mut self,
        op: &str,
        s: &KeyRules,
        own: &[String],
    ) -> Result<(u64, bool, KeyState, Vec<String>), Error> {
        let mut args = self.settings_args(op, s);
        args.extend_from_slice(own);
        let hash = self.hash.clone();
        let command = |first: &'static str, script: &'static str| {
            let mut command = vec![first, script, "1", hash.as_str()];
            command.extend(args.iter().map(String::as_str));
            command
        };
        let fields = self.call(|con| {
            let reply = match con.call(&command("EVALSHA", SCRIPT_SHA1)) {
                Err(e) if e.code() == Some(b"NOSCRIPT") => con.call(&command("EVAL", SCRIPT))?,
                other => other?,
            };
            strings(reply)
        })?;
        decode(&fields).map_err(|why| self.error(Failure::Reply(why)))
    }

    /// The script's ARGV[1..11] for this store: the server's clock, unless a test gives the
    /// time (the store's own, `at`, or the tests' clock of a debug build).
    fn settings_args(&self, op: &str, s: &KeyRules) -> Vec<String> {
        settings_args(op, s, self.clock.or_else(crate::platform::clock::test_ms))
    }

    fn reply<T>(
        &self,
        s: &KeyRules,
        now: u64,
        corrupt: bool,
        state: &KeyState,
        value: T,
    ) -> Reply<T> {
        Reply {
            value,
            now,
            view: state.view(s, now),
            warning: corrupt.then(|| {
                format!(
                    "the state in {} ({}) could not be read; started the key afresh",
                    self.settings.url.redacted(),
                    self.hash
                )
            }),
        }
    }
}

/// The script's ARGV[1..11]: the operation, the time (`None`: empty, the server's), and the
/// settings as whole numbers, as a run sends them (the store bench sends them too).
pub fn settings_args(op: &str, s: &KeyRules, clock: Option<u64>) -> Vec<String> {
    let b = &s.breaker;
    let numbers = [
        u64::from(b.failures),
        ms(b.window),
        b.first_open(),
        ms(b.open_max),
        ms(s.lease),
        s.budget.burst_milli(),
        s.budget.ratio_milli(),
        ms(s.budget.refill).max(1),
        expiry(s),
    ];
    let mut args = Vec::with_capacity(16);
    args.push(op.to_string());
    args.push(clock.map_or(String::new(), |t| t.to_string()));
    args.extend(numbers.iter().map(|n| n.min(&EXACT).to_string()));
    args
}

/// How long a key's hash is kept after the last run that used it, in ms: long enough for
/// every time the state holds.
fn expiry(s: &KeyRules) -> u64 {
    let b = &s.breaker;
    ms(EXPIRY)
        .max(ms(b.window))
        .max(ms(b.open_max).saturating_add(ms(s.lease) + ms(s.lease) / 5))
}

/// The script's answer: the time, whether the hash was started afresh, the state, and the
/// operation's own answer.
fn decode(fields: &[String]) -> Result<(u64, bool, KeyState, Vec<String>), String> {
    let bad = || {
        format!(
            "the store's script answered {}",
            excerpt(format!("{fields:?}").as_bytes())
        )
    };
    let [now, corrupt, g, s, f, u, l, o, m, a, h, answer @ ..] = fields else {
        return Err(bad());
    };
    let n = |x: &String| x.parse::<u64>().map_err(|_| bad());
    // The failures' times: those counted while it is closed, those that opened it since.
    let failures: Vec<u64> = f
        .split(',')
        .filter(|t| !t.is_empty())
        .map(|t| t.parse::<u64>().map_err(|_| bad()))
        .collect::<Result<_, _>>()?;
    let breaker = match s.as_str() {
        "closed" => Breaker::Closed { failures },
        "open" => Breaker::Open {
            until: n(u)?,
            open_for: n(o)?,
            failures,
        },
        "half-open" => Breaker::HalfOpen {
            lease_until: n(l)?,
            open_for: n(o)?,
            failures,
        },
        _ => return Err(bad()),
    };
    let state = KeyState {
        generation: n(g)?,
        breaker,
        budget: Budget {
            milli: n(m)?,
            at: n(a)?,
        },
        history: history(h).ok_or_else(bad)?,
    };
    Ok((n(now)?, corrupt == "1", state, answer.to_vec()))
}

/// The outcomes as the scripts keep them: `time:1` for a success, `time:0` for a failure.
fn history(h: &str) -> Option<History> {
    let mut history = History::default();
    for outcome in h.split(',').filter(|o| !o.is_empty()) {
        let (at, ok) = outcome.split_once(':')?;
        let success = match ok {
            "1" => true,
            "0" => false,
            _ => return None,
        };
        history.record(at.parse().ok()?, success);
    }
    Some(history)
}

/// A refusal as the scripts name it.
fn refusal(why: &str, t: u64) -> Option<Refusal> {
    match why {
        "open" => Some(Refusal::Open { until: t }),
        "probing" => Some(Refusal::Probing { lease_until: t }),
        "budget" => Some(Refusal::Budget),
        _ => None,
    }
}

fn number(answer: &[String], i: usize) -> u64 {
    answer.get(i).and_then(|x| x.parse().ok()).unwrap_or(0)
}

fn text(answer: &[String], i: usize) -> &str {
    answer.get(i).map_or("", String::as_str)
}

/// A script's answer: an array of strings (a number stands for its digits).
fn strings(reply: Value) -> Result<Vec<String>, Failure> {
    let bad = |value: &Value| Failure::Reply(format!("the script answered {}", unexpected(value)));
    let Value::Array(items) = &reply else {
        return Err(bad(&reply));
    };
    items
        .iter()
        .map(|item| match item {
            Value::Text(t) => String::from_utf8(t.clone()).map_err(|_| bad(&reply)),
            Value::Int(n) => Ok(n.to_string()),
            _ => Err(bad(&reply)),
        })
        .collect()
}

fn int(reply: Value) -> Result<i64, Failure> {
    match reply {
        Value::Int(n) => Ok(n),
        other => Err(Failure::Reply(format!(
            "a number was expected, not {}",
            unexpected(&other)
        ))),
    }
}

/// A SCAN round's answer: the next cursor, and the keys found.
fn scanned(reply: Value) -> Result<(String, Vec<Vec<u8>>), Failure> {
    let bad = |value: &Value| Failure::Reply(format!("SCAN answered {}", unexpected(value)));
    let Value::Array(pair) = &reply else {
        return Err(bad(&reply));
    };
    let [Value::Text(cursor), Value::Array(found)] = pair.as_slice() else {
        return Err(bad(&reply));
    };
    let cursor = std::str::from_utf8(cursor)
        .ok()
        .filter(|c| !c.is_empty() && c.bytes().all(|b| b.is_ascii_digit()))
        .ok_or_else(|| bad(&reply))?
        .to_string();
    let keys = found
        .iter()
        .map(|key| match key {
            Value::Text(key) => Ok(key.clone()),
            _ => Err(bad(&reply)),
        })
        .collect::<Result<_, _>>()?;
    Ok((cursor, keys))
}

impl Store for RedisStore {
    fn admit(&mut self, s: &KeyRules) -> Result<Reply<Admit>, Error> {
        let (now, corrupt, state, answer) = self.run("admit", s, &[])?;
        let ticket = |probe| {
            Admit::Run(Ticket {
                generation: number(&answer, 1),
                probe,
            })
        };
        let t = number(&answer, 2);
        let value = match text(&answer, 0) {
            "probe" => ticket(true),
            "open" => Admit::Refused(Refusal::Open { until: t }),
            "probing" => Admit::Refused(Refusal::Probing { lease_until: t }),
            _ => ticket(false),
        };
        Ok(self.reply(s, now, corrupt, &state, value))
    }

    fn after_attempt(
        &mut self,
        s: &KeyRules,
        ticket: Ticket,
        attempt: Attempt,
        wants_retry: bool,
        u: f64,
    ) -> Result<Reply<After>, Error> {
        let attempt = match attempt {
            Attempt::Success => "success",
            Attempt::Failure => "failure",
            Attempt::Uncounted => "uncounted",
        };
        let own = [
            ticket.generation.to_string(),
            u8::from(ticket.probe).to_string(),
            attempt.to_string(),
            u8::from(wants_retry).to_string(),
            // Rust prints the shortest text that reads back as the same double.
            u.to_string(),
            u8::from(s.history).to_string(),
        ];
        let (now, corrupt, state, answer) = self.run("after", s, &own)?;
        let change = match (text(&answer, 2), &state.breaker) {
            ("opened", Breaker::Open { until, .. }) => Change::Opened { until: *until },
            ("closed", _) => Change::Closed,
            ("released", _) => Change::Released,
            _ => Change::None,
        };
        let value = After {
            ticket: Ticket {
                generation: number(&answer, 0),
                probe: number(&answer, 1) == 1,
            },
            change,
            refusal: refusal(text(&answer, 3), number(&answer, 4)),
        };
        Ok(self.reply(s, now, corrupt, &state, value))
    }

    fn before_retry(
        &mut self,
        s: &KeyRules,
        ticket: Ticket,
    ) -> Result<Reply<(Option<Refusal>, Ticket)>, Error> {
        let own = [
            ticket.generation.to_string(),
            u8::from(ticket.probe).to_string(),
        ];
        let (now, corrupt, state, answer) = self.run("before", s, &own)?;
        let value = (
            refusal(text(&answer, 0), number(&answer, 1)),
            Ticket {
                generation: number(&answer, 2),
                probe: number(&answer, 3) == 1,
            },
        );
        Ok(self.reply(s, now, corrupt, &state, value))
    }

    fn view(&mut self, s: &KeyRules) -> Result<Reply<()>, Error> {
        let (now, corrupt, state, _) = self.run("view", s, &[])?;
        Ok(self.reply(s, now, corrupt, &state, ()))
    }

    fn reset(&mut self) -> Result<(), Error> {
        let hash = self.hash.clone();
        self.call(|con| int(con.call(&["DEL", &hash])?)).map(|_| ())
    }

    fn describe(&self) -> String {
        format!("{}, hash {}", self.settings.url.redacted(), self.hash)
    }

    fn idle(&mut self) {
        self.con = None;
    }

    /// No call goes past what is left before the run's `--max-time`, whatever is left of
    /// `--state-timeout`.
    fn wait_at_most(&mut self, most: Option<Duration>) {
        self.until = most.and_then(|most| Instant::now().checked_add(most));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_script_keeps_as_many_outcomes_as_the_rules() {
        let kept = format!("local KEPT = {}\n", crate::policy::adaptive::KEPT);
        assert!(SCRIPT.contains(&kept), "redis.lua must say {kept:?}");
    }

    #[test]
    fn the_outcomes_read_back_as_the_script_writes_them() {
        let h = history("5:0,17:1").expect("a history");
        let read: Vec<(u64, bool)> = h.outcomes().map(|o| (o.at, o.success)).collect();
        assert_eq!(read, [(5, false), (17, true)]);
        assert!(history("").is_some_and(|h| h.is_empty()));
        for bad in ["5", "5:2", "x:1", "5:1,,:0"] {
            assert!(history(bad).is_none(), "{bad:?}");
        }
    }
}
