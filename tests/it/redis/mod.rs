//! A fleet's shared state in Redis (`--state URL`), against a real `redis-server`
//! that each test starts on its own free loopback port (the cluster scenarios share one
//! cluster, each on keys of its own), with the ACL user the README documents and a password
//! that no output may show. Without `redis-server` the tests skip loudly, unless
//! `CI` is set.
//!
//! The scenarios of the `state` module run here too, through Redis (`scenarios`); then what
//! only a shared store has: the rules run by the scripts compared step by step with the same
//! rules run in memory, and one probe among 200 "hosts" (`rules`), a store that is down or never
//! answers, a wrong password and `--state-fail closed` (`outages`), and how the store is reached
//! (`connection`). This module holds what they share. `cargo test --test it redis::` runs them
//! all (`.ci/run` does, with the `tls` feature).

use std::fs;
use std::io::Read;
use std::net::{TcpListener, TcpStream};
use std::process::{Child, Output, Stdio};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use rand::RngExt;
use serde_json::Value;

use retry::policy::backoff::seeded;
use retry::policy::breaker::{Attempt, BreakerSettings};
use retry::policy::budget::BudgetSettings;
use retry::policy::key::{FailMode, Remote};
use retry::policy::shared::{Admit, KeyRules, KeyState, Ticket};
use retry::state::Store;
use retry::state::memory::MemoryStore;
use retry::state::redis::RedisStore;

use crate::support;
use crate::support::keyed::{self, Setup, breaker, output, stderr, with};
use crate::support::redis::{PASSWORD, Server, cmd, free_port};

mod connection;
mod ha;
mod hostile;
mod outages;
mod remembered;
mod rules;
mod scenarios;

/// Everything a run said: its stderr and stdout.
fn said(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stderr),
        String::from_utf8_lossy(&o.stdout)
    )
}

/// Small settings, so that a scenario moves through every state in a few steps.
fn small() -> KeyRules {
    KeyRules {
        breaker: BreakerSettings {
            failures: 3,
            window: Duration::from_secs(10),
            open: Duration::from_secs(1),
            open_max: Duration::from_secs(8),
        },
        budget: BudgetSettings {
            burst: 3,
            ratio: 0.3,
            refill: Duration::from_millis(1700),
        },
        lease: Duration::from_millis(500),
        history: false,
    }
}

/// Keeps SIGCHLD off this test's thread, which talks to Redis itself. Other tests spawn
/// processes on other threads; a child's SIGCHLD, which the test process ignores, can still be
/// queued while its spawning thread has every signal blocked (as posix_spawn does), and wake
/// whichever thread the kernel picks: a read with a time limit on a socket, as the store's
/// are, then fails with EINTR instead of going on.
fn no_sigchld_here() {
    let mut set = nix::sys::signal::SigSet::empty();
    set.add(nix::sys::signal::Signal::SIGCHLD);
    set.thread_block().expect("block SIGCHLD");
}

fn store_settings(url: &str, timeout: Duration) -> Remote {
    Remote {
        url: retry::state::url::parse(url).expect("URL"),
        timeout,
        fail: FailMode::Open,
    }
}
