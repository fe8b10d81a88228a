//! A fleet's shared state in Redis (`--state URL`, SPEC §10), against a real `redis-server`
//! that each test starts on its own free loopback port, with the ACL user the README documents
//! and a password that no output may show. Without `redis-server` the tests skip loudly, unless
//! `CI` is set.
//!
//! The scenarios of tests/state.rs run here too, through Redis; then what only a shared store
//! has: one probe among 200 "hosts", a store that is down or never answers, a wrong password,
//! `--state-fail closed`, and the rules run by the scripts compared step by step with the same
//! rules run in memory.

use std::fs;
use std::io::Read;
use std::net::{TcpListener, TcpStream};
use std::process::{Child, Output, Stdio};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};
use serde_json::Value;

use retry::policy::breaker::{Attempt, BreakerSettings};
use retry::policy::budget::BudgetSettings;
use retry::policy::shared::{Admit, KeyState, SharedSettings, Ticket};
use retry::policy::store::{FailMode, StoreSettings, StoreUrl};
use retry::state::Store;
use retry::state::memory::MemoryStore;
use retry::state::redis::RedisStore;

use crate::support;
use crate::support::keyed::{self, Setup, breaker, output, stderr, with};
use crate::support::redis::{PASSWORD, Server, free_port};

/// The scenarios every store runs (tests/it/support/keyed.rs), here through Redis.
macro_rules! on_redis {
    ($($name:ident),* $(,)?) => {
        $(
            #[test]
            fn $name() {
                let Some(server) = Server::start() else { return };
                keyed::$name(&Setup::redis(&server));
            }
        )*
    };
}

keyed::scenarios!(on_redis);

/// Everything a run said: its stderr and stdout.
fn said(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stderr),
        String::from_utf8_lossy(&o.stdout)
    )
}

/// Small settings, so that a scenario moves through every state in a few steps.
fn small() -> SharedSettings {
    SharedSettings {
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

fn store_settings(url: &str, timeout: Duration) -> StoreSettings {
    StoreSettings {
        url: StoreUrl::parse(url).expect("URL"),
        timeout,
        fail: FailMode::Open,
    }
}

/// A full bucket is full whenever it was last brought up to date: the local store keeps the
/// time of the key's first use, Redis (which writes only what changed) the time of the read.
fn canonical(mut k: KeyState, s: &SharedSettings) -> KeyState {
    if k.budget.milli >= s.budget.burst_milli() {
        k.budget.at = 0;
    }
    k
}

#[test]
fn the_scripts_leave_the_same_state_as_the_rules_run_in_memory_step_by_step() {
    no_sigchld_here();
    let Some(server) = Server::start() else {
        return;
    };
    for (seed, s) in [
        (1, small()),
        (2, small()),
        (3, {
            let mut s = small();
            s.breaker.failures = 0;
            s
        }),
        (4, {
            let mut s = small();
            s.budget.burst = 0;
            s
        }),
        // The adaptive delay's outcomes, kept and capped alike.
        (5, {
            let mut s = small();
            s.history = true;
            s
        }),
        // Times past 10^14 ms, where Lua's own tostring would print an exponent; outcomes
        // kept too, whose times are text.
        (6, {
            let mut s = small();
            s.history = true;
            s
        }),
    ] {
        let mut rng = StdRng::seed_from_u64(seed);
        let memory = MemoryStore::default();
        let mut mem: Box<dyn Store> = Box::new(memory.clone());
        let mut red = RedisStore::new(
            &store_settings(&server.url(), Duration::from_secs(10)),
            &format!("scenario-{seed}"),
        );
        // Three runs on the key; each holds a ticket while it runs.
        let mut runs: [Option<Ticket>; 3] = [None; 3];
        let mut now = if seed == 6 { 1 << 49 } else { 1_000_000u64 };
        let mut seen = [0usize; 4];
        for step in 0..600 {
            now += [0, 1, 40, 300, 900, 2500][rng.random_range(0..6)];
            memory.now.set(now);
            red.at(now);
            let slot = rng.random_range(0..runs.len());
            let what = format!("seed {seed}, step {step}, run {slot}, at {now}");
            match runs[slot] {
                None => {
                    let (a, b) = (
                        mem.admit(&s).expect("memory"),
                        red.admit(&s).expect("redis"),
                    );
                    assert_eq!(a.value, b.value, "{what}: admit");
                    assert_eq!((a.now, &a.view), (b.now, &b.view), "{what}");
                    if let Admit::Run(t) = a.value {
                        runs[slot] = Some(t);
                        seen[usize::from(t.probe)] += 1;
                    } else {
                        seen[2] += 1;
                    }
                }
                Some(ticket) if rng.random_bool(0.2) => {
                    let (a, b) = (
                        mem.before_retry(&s, ticket).expect("memory"),
                        red.before_retry(&s, ticket).expect("redis"),
                    );
                    assert_eq!(a.value, b.value, "{what}: before retry");
                    assert_eq!(a.view, b.view, "{what}");
                    runs[slot] = a.value.0.is_none().then_some(a.value.1);
                }
                Some(ticket) => {
                    let attempt = [
                        Attempt::Success,
                        Attempt::Failure,
                        Attempt::Failure,
                        Attempt::Uncounted,
                    ][rng.random_range(0..4)];
                    let wants = attempt != Attempt::Success && rng.random_bool(0.8);
                    let u: f64 = rng.random();
                    let (a, b) = (
                        mem.after_attempt(&s, ticket, attempt, wants, u)
                            .expect("memory"),
                        red.after_attempt(&s, ticket, attempt, wants, u)
                            .expect("redis"),
                    );
                    assert_eq!(
                        a.value, b.value,
                        "{what}: after {attempt:?}, retry {wants}, u {u}"
                    );
                    assert_eq!(a.view, b.view, "{what}");
                    if a.value.refusal.is_some() {
                        seen[3] += 1;
                    }
                    runs[slot] = (wants && a.value.refusal.is_none()).then_some(a.value.ticket);
                }
            }
            let (state, at) = red.read(&s).expect("redis state");
            assert_eq!(at, now);
            assert_eq!(
                canonical(state, &s),
                canonical(memory.state().expect("used"), &s),
                "{what}: the states"
            );
        }
        if s.history {
            let kept = memory.state().map(|k| k.history.outcomes().count());
            assert_eq!(kept, Some(retry::policy::adaptive::KEPT), "capped alike");
        }
        // The scenario went through the states it is meant to compare.
        if seed <= 2 {
            assert!(
                seen.iter().all(|&n| n > 0),
                "seed {seed}: run, probe, refused, retry refused: {seen:?}"
            );
        }
    }
}

#[test]
fn two_hundred_hosts_sharing_one_key_make_exactly_one_probe() {
    let Some(server) = Server::start() else {
        return;
    };
    let s = Setup::redis(&server);
    // A long store timeout and `closed`: a host starved of CPU must not fall back to its own
    // (empty) local state and run the command as if the breaker were closed.
    let flags = [
        "--key",
        "api",
        "--breaker-failures",
        "1",
        "--breaker-open",
        "200ms",
        "-n",
        "1",
        "--state-timeout",
        "60s",
        "--state-fail",
        "closed",
    ];
    assert_eq!(s.run(&flags, 1).status.code(), Some(1));
    assert_eq!(s.ran(), 1);
    thread::sleep(Duration::from_millis(300));
    // The probe holds its lease until the test lets it go, after every other host has been
    // refused.
    let release = s.dir.path().join("release");
    let command = format!(
        "echo ran >> '{}'; while ! [ -e '{}' ]; do sleep 0.01; done",
        s.marks().display(),
        release.display()
    );
    // The server holds every script until all 200 hosts have sent theirs, so that they ask
    // for the lease at the same moment (without this, spawning takes long enough for the
    // first host's answer to reach the server before most others ask).
    server.query::<()>(
        ::redis::cmd("CLIENT")
            .arg("PAUSE")
            .arg(120_000)
            .arg("WRITE"),
    );
    let hosts: Vec<Child> = (0..200)
        .map(|i| {
            // Each host has its own state directory.
            let mut c = support::retry();
            c.env_remove("RETRY_STATE_DIR")
                .arg("--state-dir")
                .arg(s.dir.path().join(format!("host-{i}")))
                .arg("--state")
                .arg(server.url())
                .args(flags)
                .args(["--", "sh", "-c", &command])
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::piped());
            c.spawn().expect("retry starts")
        })
        .collect();
    let waiting = Instant::now();
    loop {
        let clients: String = server.query(::redis::cmd("CLIENT").arg("LIST"));
        let asking = clients
            .lines()
            .filter(|l| l.contains("user=retry") && l.contains(" flags=b "))
            .count();
        if asking >= 200 || waiting.elapsed() > support::PATIENCE {
            break;
        }
        thread::sleep(Duration::from_millis(10));
    }
    server.query::<()>(::redis::cmd("CLIENT").arg("UNPAUSE"));
    let hosts = Arc::new(Mutex::new(hosts));
    let codes = Arc::new(Mutex::new(Vec::new()));
    let started = Instant::now();
    loop {
        {
            let mut hosts = hosts.lock().expect("hosts");
            let mut codes = codes.lock().expect("codes");
            hosts.retain_mut(|c| match c.try_wait().expect("wait") {
                Some(status) => {
                    codes.push(status.code());
                    false
                }
                None => true,
            });
            if codes.len() >= 199 || started.elapsed() > support::PATIENCE * 2 {
                break;
            }
        }
        thread::sleep(Duration::from_millis(10));
    }
    fs::write(&release, b"").expect("release the probe");
    for mut c in hosts.lock().expect("hosts").drain(..) {
        codes
            .lock()
            .expect("codes")
            .push(support::wait(&mut c).code());
    }
    let codes = codes.lock().expect("codes").clone();
    assert_eq!(s.ran(), 2, "one probe among 200 hosts: {codes:?}");
    assert_eq!(
        codes.iter().filter(|c| **c == Some(0)).count(),
        1,
        "{codes:?}"
    );
    assert_eq!(
        codes.iter().filter(|c| **c == Some(75)).count(),
        199,
        "{codes:?}"
    );
    // The probe succeeded: the breaker is closed for everyone.
    assert_eq!(s.run(&flags, 0).status.code(), Some(0));
}

#[test]
fn a_store_that_is_down_means_this_hosts_local_state_and_one_warning() {
    let s = Setup::file();
    let url = format!("redis://retry:{PASSWORD}@127.0.0.1:{}", free_port());
    let flags = ["--key", "api", "--state", &url, "-n", "3", "-d", "1ms"];
    let out = s.run(&flags, 4);
    assert_eq!(out.status.code(), Some(4), "the outcome stands");
    assert_eq!(s.ran(), 3);
    let log = stderr(&out);
    assert_eq!(log.matches("warning").count(), 1, "{log}");
    assert!(
        log.contains("going on with this host's local state (--state-fail open)"),
        "{log}"
    );
    assert!(log.contains("redis://retry:***@127.0.0.1:"), "{log}");
    assert!(!said(&out).contains(PASSWORD));
    // The local state counted the failures.
    assert!(s.file_of("api").exists());
}

/// A server that accepts connections and never answers; it holds them until dropped.
struct Silent {
    port: u16,
    _held: Arc<Mutex<Vec<TcpStream>>>,
}

impl Silent {
    fn start() -> Silent {
        let listener = TcpListener::bind("127.0.0.1:0").expect("listen");
        let port = listener.local_addr().expect("address").port();
        let held = Arc::new(Mutex::new(Vec::new()));
        let keep = Arc::clone(&held);
        thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                if let Ok(mut held) = keep.lock() {
                    held.push(stream);
                }
            }
        });
        Silent { port, _held: held }
    }

    fn url(&self) -> String {
        format!("redis://retry:{PASSWORD}@127.0.0.1:{}", self.port)
    }
}

#[test]
fn a_store_that_never_answers_costs_no_more_than_the_state_timeout() {
    let silent = Silent::start();
    let s = Setup::file();
    let url = silent.url();
    for (fail, code) in [("open", 0), ("closed", 75)] {
        let started = Instant::now();
        let out = s.run(
            &[
                "--key",
                "api",
                "--state",
                &url,
                "--state-timeout",
                "300ms",
                "--state-fail",
                fail,
            ],
            0,
        );
        let took = started.elapsed();
        assert_eq!(out.status.code(), Some(code), "{fail}: {}", stderr(&out));
        assert!(
            stderr(&out).contains("no answer within --state-timeout 300ms"),
            "{}",
            stderr(&out)
        );
        assert!(
            took >= Duration::from_millis(300) && took < Duration::from_millis(300 + 2000),
            "{fail}: {took:?}"
        );
    }
    assert_eq!(s.ran(), 1, "the closed run ran nothing");
}

#[test]
fn every_call_of_a_run_shares_one_state_timeout() {
    no_sigchld_here();
    let silent = Silent::start();
    let s = small();
    let mut store = RedisStore::new(
        &store_settings(&silent.url(), Duration::from_millis(300)),
        "api",
    );
    let started = Instant::now();
    let first = store.admit(&s).map(|_| ()).expect_err("no answer");
    assert!(first.to_string().contains("no answer"), "{first}");
    assert!(started.elapsed() >= Duration::from_millis(300));
    // Nothing is left for the next call: it fails at once, without waiting again.
    let again = Instant::now();
    let second = store.view(&s).map(|_| ()).expect_err("no time left");
    assert!(second.to_string().contains("no answer"), "{second}");
    assert!(
        again.elapsed() < Duration::from_millis(100),
        "{:?}",
        again.elapsed()
    );
}

#[test]
fn a_wrong_password_is_a_warning_that_never_shows_either_password() {
    let Some(server) = Server::start() else {
        return;
    };
    let s = Setup::file();
    let wrong = "wrong-5d0b77";
    let url = format!("redis://retry:{wrong}@127.0.0.1:{}", server.port);
    let out = s.run(
        &["--key", "api", "--state", &url, "-n", "2", "-d", "1ms"],
        3,
    );
    assert_eq!(out.status.code(), Some(3));
    assert_eq!(s.ran(), 2);
    let log = said(&out);
    assert!(
        log.contains("warning: key 'api': the store redis://retry:***@"),
        "{log}"
    );
    assert!(!log.contains(wrong) && !log.contains(PASSWORD), "{log}");
}

#[test]
fn state_fail_closed_exits_75_without_running_the_command() {
    let s = Setup::file();
    let url = format!("redis://127.0.0.1:{}", free_port());
    let metrics = s.dir.path().join("metrics.prom");
    let summary = s.dir.path().join("summary.json");
    let (metrics_s, summary_s) = (metrics.display().to_string(), summary.display().to_string());
    let flags = [
        "--key",
        "api",
        "--state",
        &url,
        "--state-fail",
        "closed",
        "--metrics",
        &metrics_s,
        "--summary",
        &summary_s,
    ];
    let out = s.run(&flags, 0);
    assert_eq!(out.status.code(), Some(75), "{}", stderr(&out));
    assert_eq!(s.ran(), 0);
    let log = stderr(&out);
    assert!(
        log.contains("not running: key 'api': the store redis://127.0.0.1:")
            && log.contains("--state-fail is closed"),
        "{log}"
    );
    assert!(!s.file_of("api").exists(), "no local state either");
    let sum: Value = serde_json::from_slice(&fs::read(&summary).expect("summary")).expect("JSON");
    assert_eq!(sum["outcome"], "refused");
    assert_eq!(sum["store"]["errors"], 1);
    let text = fs::read_to_string(&metrics).expect("metrics");
    let errors = format!(
        "retry_state_errors_total{{name=\"sh\",key=\"api\",backend=\"{}/0\"}} 1",
        url
    );
    assert!(text.contains(&errors), "{text}");
    s.run(&flags, 0);
    let text = fs::read_to_string(&metrics).expect("metrics");
    assert!(
        text.contains(&errors.replace("} 1", "} 2")),
        "counted on: {text}"
    );
}

#[test]
fn a_store_lost_mid_run_never_changes_the_commands_outcome() {
    let Some(server) = Server::start() else {
        return;
    };
    let s = Setup::redis(&server);
    // The first attempt takes the server down; the run's later calls to it fail.
    let pid = server.pid();
    let out = s.run(
        &[
            "--key",
            "api",
            "-n",
            "3",
            "-d",
            "1ms",
            "--",
            "sh",
            "-c",
            &format!(
                "echo ran >> '{}'; kill -9 {pid} 2>/dev/null; exit 3",
                s.marks().display()
            ),
        ],
        0,
    );
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    assert_eq!(s.ran(), 3, "{}", stderr(&out));
    let log = stderr(&out);
    assert_eq!(log.matches("warning").count(), 1, "{log}");
    assert!(
        log.contains("going on without its breaker and budget"),
        "{log}"
    );
}

#[test]
fn no_output_ever_shows_the_password() {
    let Some(server) = Server::start() else {
        return;
    };
    let s = Setup::redis(&server);
    let dir = s.dir.path();
    let files = ["summary.json", "metrics.prom", "log.json"].map(|f| dir.join(f));
    let [summary, metrics, log] = files.clone().map(|p| p.display().to_string());
    let mut outputs = Vec::new();
    let reports = ["--summary", &summary, "--metrics", &metrics];
    for args in [
        with(&breaker("1h"), &["-n", "4", "-vv"]),
        with(
            &breaker("1h"),
            &["-n", "2", "--log-format", "json", "--log-file", &log],
        ),
        with(&breaker("1h"), &reports),
        with(&breaker("1h"), &["--explain"]),
        vec!["--key", "api", "--reset-state"],
    ] {
        outputs.push(s.run(&args, 1));
    }
    // The password from REDISCLI_AUTH, with a store that is down, a bad URL, and a bad port.
    let s = Setup::file();
    let down = format!("redis://retry@127.0.0.1:{}", free_port());
    for (url, args) in [
        (down.as_str(), vec!["--explain"]),
        (down.as_str(), vec!["-n", "2", "-d", "1ms", "-v"]),
        (down.as_str(), vec!["--reset-state"]),
    ] {
        let mut c = s.retry(&["--key", "api", "--state", url]);
        c.env("REDISCLI_AUTH", PASSWORD)
            .args(args)
            .args(["--", "false"]);
        outputs.push(output(c));
    }
    for bad in [
        format!("redis://retry:{PASSWORD}@127.0.0.1:99999"),
        format!("http://retry:{PASSWORD}@example.com"),
        format!("redis://retry:{PASSWORD}@h/x"),
    ] {
        let out = s.run(&["--key", "api", "--state", &bad], 0);
        assert_eq!(out.status.code(), Some(125), "{bad}");
        assert!(stderr(&out).contains("retry:***@"), "{}", stderr(&out));
        outputs.push(out);
    }
    for out in &outputs {
        assert!(!said(out).contains(PASSWORD), "{}", said(out));
    }
    for file in files {
        let mut text = String::new();
        fs::File::open(&file)
            .and_then(|mut f| f.read_to_string(&mut text))
            .expect("report written");
        assert!(!text.contains(PASSWORD), "{}: {text}", file.display());
    }
    // The explain shows the store, redacted, and the key's state.
    let explain = said(&outputs[3]);
    assert!(
        explain.contains(&format!(
            "store            redis://retry:***@127.0.0.1:{}/0",
            server.port
        )),
        "{explain}"
    );
    assert!(explain.contains("breaker now      open"), "{explain}");
}

#[test]
fn a_hash_that_cannot_be_read_is_started_afresh_with_a_warning() {
    let Some(server) = Server::start() else {
        return;
    };
    let s = Setup::redis(&server);
    server.query::<i64>(
        ::redis::cmd("HSET")
            .arg("retry:api")
            .arg("s")
            .arg("ajar")
            .arg("g")
            .arg("x"),
    );
    let out = s.run(&["--key", "api", "-n", "2", "-d", "1ms"], 3);
    assert_eq!(out.status.code(), Some(3));
    assert_eq!(s.ran(), 2);
    assert!(
        stderr(&out).contains("could not be read; started the key afresh"),
        "{}",
        stderr(&out)
    );
    let state: String = server.query(::redis::cmd("HGET").arg("retry:api").arg("s"));
    assert_eq!(state, "closed");
}

/// The scripts the server has run (EVALSHA and EVAL; an EVALSHA of a script it did not have
/// yet is not one), and the connections it has accepted (this question's own included), from
/// its own counts.
fn server_counts(server: &Server) -> (u64, u64) {
    let info: String = server.query(::redis::cmd("INFO").arg("commandstats").arg("stats"));
    let count = |line: &str, field: &str| -> u64 {
        line.split([':', ','])
            .find_map(|f| f.strip_prefix(field)?.strip_prefix('='))
            .and_then(|n| n.parse().ok())
            .unwrap_or(0)
    };
    let scripts = info
        .lines()
        .filter(|l| l.starts_with("cmdstat_evalsha:") || l.starts_with("cmdstat_eval:"))
        .map(|l| count(l, "calls") - count(l, "failed_calls") - count(l, "rejected_calls"))
        .sum();
    let connections = info
        .lines()
        .find_map(|l| l.strip_prefix("total_connections_received:"))
        .and_then(|n| n.trim().parse().ok())
        .expect("total_connections_received");
    (scripts, connections)
}

#[test]
fn a_run_that_succeeds_at_once_on_a_settled_key_makes_one_call() {
    let Some(server) = Server::start() else {
        return;
    };
    let s = Setup::redis(&server);
    // A run's exit status, and the scripts it had the server run.
    let connections = std::cell::Cell::new(0);
    let run = |args: &[&str], code: i32| {
        let before = server_counts(&server);
        let out = s.run(args, code);
        assert!(!stderr(&out).contains("warning"), "{}", stderr(&out));
        let after = server_counts(&server);
        connections.set(after.1 - before.1 - 1);
        (out.status.code(), after.0 - before.0)
    };
    let hash =
        || -> Vec<(String, String)> { server.query(::redis::cmd("HGETALL").arg("retry:api")) };
    // A key never used: the admission alone, and nothing written.
    assert_eq!(run(&["--key", "api"], 0), (Some(0), 1));
    assert!(!s.stored("api"));
    // A failure is kept: the next success is recorded, and clears it. The run that failed
    // had let go of its connection while its command ran, and connected again to count it.
    assert_eq!(run(&["--key", "api", "-n", "1"], 1), (Some(1), 2));
    assert_eq!(connections.get(), 2);
    assert_eq!(run(&["--key", "api"], 0), (Some(0), 2));
    assert_eq!(connections.get(), 1);
    let f: String = server.query(::redis::cmd("HGET").arg("retry:api").arg("f"));
    assert_eq!(f, "");
    // Settled again: the admission alone, and the hash as it was.
    let settled = hash();
    assert_eq!(run(&["--key", "api"], 0), (Some(0), 1));
    assert_eq!(hash(), settled);
    // A retry took a token: the next success is recorded, and adds its tenth.
    let off = ["--key", "api", "--breaker-failures", "0", "-d", "1ms"];
    assert_eq!(run(&with(&off, &["-n", "2"]), 1).0, Some(1));
    let m = |_: ()| -> u64 { server.query(::redis::cmd("HGET").arg("retry:api").arg("m")) };
    assert_eq!(m(()), 9000);
    assert_eq!(run(&off, 0), (Some(0), 2));
    assert_eq!(m(()), 9100);
    // An open breaker whose time is up: the probe's success is recorded, and closes it.
    server.query::<i64>(
        ::redis::cmd("HSET")
            .arg("retry:api")
            .arg(&["s", "open", "u", "0", "o", "1000", "m", "10000"]),
    );
    assert_eq!(run(&["--key", "api"], 0), (Some(0), 2));
    let state: String = server.query(::redis::cmd("HGET").arg("retry:api").arg("s"));
    assert_eq!(state, "closed");
}

#[test]
fn a_key_expires_after_a_week_without_use() {
    let Some(server) = Server::start() else {
        return;
    };
    let s = Setup::redis(&server);
    s.run(&["--key", "api", "-n", "2", "-d", "1ms"], 3);
    let ttl: i64 = server.query(::redis::cmd("PTTL").arg("retry:api"));
    let week = 7 * 24 * 3600 * 1000;
    assert!(ttl > week - 60_000 && ttl <= week, "{ttl}");
}

#[test]
fn the_url_can_come_from_the_environment_or_a_profile() {
    let Some(server) = Server::start() else {
        return;
    };
    let s = Setup::file();
    let flags = with(&breaker("1h"), &["-n", "3"]);
    let mut c = s.retry(&flags);
    c.env(
        "RETRY_STATE_URL",
        format!("redis://retry@127.0.0.1:{}", server.port),
    )
    .env("REDISCLI_AUTH", PASSWORD)
    .arg("--")
    .args(s.command(1));
    let out = output(c);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(!stderr(&out).contains("warning"), "{}", stderr(&out));
    assert!(!s.file_of("api").exists(), "the state is in Redis");
    let state: String = server.query(::redis::cmd("HGET").arg("retry:api").arg("s"));
    assert_eq!(state, "open");
    let config = s.dir.path().join("config.toml");
    fs::write(
        &config,
        format!(
            "[profiles.fleet]\nkey = \"db\"\nstate = \"{}\"\nstate-timeout = \"2s\"\nbreaker-failures = 1\nattempts = 1\n",
            server.url()
        ),
    )
    .expect("config");
    let config_s = config.display().to_string();
    let profile = ["--config", config_s.as_str(), "-p", "fleet"];
    assert_eq!(s.run(&profile, 1).status.code(), Some(1));
    assert_eq!(s.run(&profile, 0).status.code(), Some(75));
    let exists: bool = server.query(::redis::cmd("EXISTS").arg("retry:db"));
    assert!(exists);
}

#[test]
fn bad_store_settings_are_usage_errors_naming_the_value() {
    let s = Setup::file();
    let mut cases = vec![
        (
            vec!["--state", "http://x"],
            "'http://' is not a Redis URL scheme",
        ),
        (vec!["--state", "redis://h:99999"], "'99999' is not a port"),
        (
            vec!["--state", "redis://h", "--state-timeout", "0"],
            "for --state-timeout: 0;",
        ),
        (vec!["--state-fail", "ajar"], "ajar"),
    ];
    if !cfg!(feature = "tls") {
        cases.push((vec!["--state", "rediss://h"], "built without TLS"));
    }
    for (args, word) in cases {
        let out = s.run(&with(&["--key", "api"], &args), 0);
        assert_eq!(out.status.code(), Some(125), "{args:?}");
        assert!(stderr(&out).contains(word), "{args:?}: {}", stderr(&out));
    }
    let mut c = s.retry(&["--key", "api"]);
    c.env("RETRY_STATE_URL", "redis://h:0")
        .arg("--")
        .args(s.command(0));
    let out = output(c);
    assert_eq!(out.status.code(), Some(125));
    assert!(
        stderr(&out).contains("for $RETRY_STATE_URL: redis://h:0;"),
        "{}",
        stderr(&out)
    );
    assert_eq!(s.ran(), 0);
}

/// A CA and a certificate for localhost and 127.0.0.1 signed by it, made with openssl(1).
#[cfg(feature = "tls")]
fn certificates(dir: &std::path::Path) {
    let openssl = |args: &[&str]| {
        let status = std::process::Command::new("openssl")
            .args(args)
            .current_dir(dir)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .expect("openssl runs");
        assert!(status.success(), "openssl {args:?}");
    };
    openssl(
        &[
            "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key",
        ]
        .iter()
        .chain(&["-out", "ca.crt", "-days", "2", "-subj", "/CN=retry-test-ca"])
        .copied()
        .collect::<Vec<_>>(),
    );
    openssl(
        &[
            "req",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-keyout",
            "server.key",
            "-out",
        ]
        .iter()
        .chain(&["server.csr", "-subj", "/CN=localhost"])
        .copied()
        .collect::<Vec<_>>(),
    );
    fs::write(
        dir.join("ext"),
        "subjectAltName=DNS:localhost,IP:127.0.0.1\n",
    )
    .expect("ext");
    openssl(
        &[
            "x509",
            "-req",
            "-in",
            "server.csr",
            "-CA",
            "ca.crt",
            "-CAkey",
            "ca.key",
        ]
        .iter()
        .chain(&[
            "-CAcreateserial",
            "-out",
            "server.crt",
            "-days",
            "2",
            "-extfile",
            "ext",
        ])
        .copied()
        .collect::<Vec<_>>(),
    );
}

#[cfg(feature = "tls")]
#[test]
fn rediss_verifies_the_server_against_the_hosts_certificates() {
    if !support::have("openssl", "apt-get install openssl") {
        return;
    }
    let certs = tempfile::tempdir().expect("temporary directory");
    certificates(certs.path());
    let Some(server) = Server::start_tls(certs.path()) else {
        return;
    };
    for host in ["localhost", "127.0.0.1"] {
        let s = Setup::file();
        let url = format!("rediss://retry:{PASSWORD}@{host}:{}", server.port);
        let flags = ["--key", "api", "--state", url.as_str(), "-n", "1"];
        let mut c = s.retry(&flags);
        c.env("SSL_CERT_FILE", certs.path().join("ca.crt"))
            .arg("--")
            .args(s.command(1));
        let out = output(c);
        assert_eq!(out.status.code(), Some(1));
        assert!(
            !stderr(&out).contains("warning"),
            "{host}: {}",
            stderr(&out)
        );
        assert!(
            !s.file_of("api").exists(),
            "the failure was counted in Redis"
        );
        // Without the CA, the server is not trusted: a warning, and the local state.
        let mut c = s.retry(&flags);
        c.env("SSL_CERT_FILE", "/nonexistent")
            .arg("--")
            .args(s.command(1));
        let out = output(c);
        assert_eq!(out.status.code(), Some(1));
        assert!(
            stderr(&out).contains("warning: key 'api'"),
            "{}",
            stderr(&out)
        );
        assert!(s.file_of("api").exists());
    }
}
