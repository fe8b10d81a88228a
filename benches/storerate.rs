//! One key's rate in a `--state` store, and the fleet simulator's `--store-rate` checked
//! against real runs.
//!
//! 1. Against a redis-server of its own (skipped, loudly, without one): how many calls a
//!    second one key answers for each operation a run sends (an admission, an attempt's
//!    failure recorded, the check before a retry), and for the pair a run makes in an outage
//!    (an admission, then its failure), driven by several client connections at once, each
//!    sending EVALSHA with retry's own script and the arguments a real run sends. RESP is
//!    spoken by hand, so that the bench needs no Redis client.
//! 2. With `target/release/retry` built (or `RETRY_BENCH_BIN`): herds of real runs of one key,
//!    each spreading its first call with its own `--splay`, against that server behind a
//!    proxy of the bench's own that answers at most `RATE` script calls a second, first come,
//!    first served; the runs that lost the shared state (their warnings) counted over a few
//!    rounds, beside what the simulator predicts for the same runs, splay, rate, timeout and
//!    policy over a few seeds. A round against a store with no limit is the reference (no run
//!    may lose it, and a run's admission takes milliseconds), and each round says how late
//!    its runs started and at what interval the proxy answered while calls waited.
//!
//! `cargo bench --bench storerate`; `STORERATE_HERD=N`, `STORERATE_RATE=N` (the succeeding
//! herd's; the failing one's is twice it), `STORERATE_SPLAY_MS=N` and `STORERATE_ROUNDS=N`
//! change the herds (600 runs, 60 calls a second, 8000 ms, 3 rounds).

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

#[path = "support/redis.rs"]
mod redis;
use redis::Redis;

use rand::rngs::ChaCha8Rng;
use rand::{RngExt, SeedableRng};
use retry::policy::key::FailMode;
use retry::policy::shared::KeyRules;
use retry::sim::fleet::{Sharing, StoreModel, World, simulate};
use retry::state::memory::{Line, MemoryStore};

type Outcome<T> = Result<T, String>;

/// Client connections sending calls at once.
const CLIENTS: usize = 16;
/// How long each operation is driven.
const DRIVE: Duration = Duration::from_secs(3);

fn main() {
    if let Err(e) = run() {
        eprintln!("storerate: {e}");
        std::process::exit(1);
    }
}

fn run() -> Outcome<()> {
    let Some(redis) = Redis::start(&["--maxclients", "10000"])? else {
        eprintln!("*** SKIPPED: this bench needs redis-server (apt-get install redis-server)");
        return Ok(());
    };
    let sha = load_script(redis.port)?;
    println!("One key's rate, {CLIENTS} connections, each call EVALSHA of retry's script:");
    for (name, ops) in [
        ("admit", &["admit"][..]),
        ("after (a failure)", &["after"][..]),
        ("before (a retry)", &["before"][..]),
        (
            "admit, then after (a run in an outage)",
            &["admit", "after"][..],
        ),
    ] {
        let rate = drive(redis.port, &sha, ops)?;
        println!("  {name:<40} {rate:>8.0} calls/s");
    }
    herd(&redis)
}

/// A command as RESP: an array of bulk strings.
fn command(args: &[&str]) -> Vec<u8> {
    let mut out = format!("*{}\r\n", args.len()).into_bytes();
    for a in args {
        out.extend_from_slice(format!("${}\r\n{a}\r\n", a.len()).as_bytes());
    }
    out
}

/// Reads one RESP reply whole, as its bytes; an error reply is an error.
fn reply(r: &mut impl BufRead, out: &mut Vec<u8>) -> Outcome<()> {
    let start = out.len();
    r.read_until(b'\n', out).map_err(|e| e.to_string())?;
    let line = String::from_utf8_lossy(&out[start..])
        .trim_end()
        .to_string();
    let n = |s: &str| s.parse::<i64>().map_err(|_| format!("bad reply {line:?}"));
    match line.as_bytes().first() {
        Some(b'+' | b':') => Ok(()),
        Some(b'-') => Err(format!("the server answered {line}")),
        Some(b'$') => {
            let len = n(&line[1..])?;
            if len >= 0 {
                let mut body = vec![0; len as usize + 2];
                r.read_exact(&mut body).map_err(|e| e.to_string())?;
                out.extend_from_slice(&body);
            }
            Ok(())
        }
        Some(b'*') => {
            for _ in 0..n(&line[1..])?.max(0) {
                reply(r, out)?;
            }
            Ok(())
        }
        _ => Err(format!("bad reply {line:?}")),
    }
}

/// The bulk strings of a reply (one level deep).
fn strings(bytes: &[u8]) -> Vec<String> {
    let text = String::from_utf8_lossy(bytes);
    let lines: Vec<&str> = text.split("\r\n").collect();
    let mut out = Vec::new();
    let mut i = 1;
    while i + 1 < lines.len() {
        if lines[i].starts_with('$') {
            out.push(lines[i + 1].to_string());
            i += 2;
        } else {
            i += 1;
        }
    }
    out
}

/// Loads retry's script; its SHA1 must be the one runs send.
fn load_script(port: u16) -> Outcome<String> {
    let script = include_str!("../src/state/redis.lua");
    let sha = include_str!("../src/state/redis.lua.sha1")
        .trim()
        .to_string();
    let mut con = TcpStream::connect(("127.0.0.1", port)).map_err(|e| e.to_string())?;
    con.write_all(&command(&["SCRIPT", "LOAD", script]))
        .map_err(|e| e.to_string())?;
    let mut out = Vec::new();
    reply(&mut BufReader::new(&con), &mut out)?;
    let loaded = strings(&[b"*1\r\n", &out[..]].concat());
    if loaded.first() != Some(&sha) {
        return Err(format!("SCRIPT LOAD gave {loaded:?}, runs send {sha}"));
    }
    Ok(sha)
}

/// The script's arguments for `op` as a run with the default key rules sends them: the
/// operation, the time (empty: the server's), the settings, then the operation's own.
fn args(op: &str, generation: &str) -> Vec<String> {
    let mut args = retry::state::redis::settings_args(op, &KeyRules::default(), None);
    let own: &[&str] = match op {
        // ticket, probe, the attempt, a retry wanted, u, history
        "after" => &[generation, "0", "failure", "1", "0.5", "0"],
        "before" => &[generation, "0"],
        _ => &[],
    };
    args.extend(own.iter().map(|s| s.to_string()));
    args
}

/// Calls a second one key answers to `ops` sent in turn by each of [`CLIENTS`] connections.
fn drive(port: u16, sha: &str, ops: &[&str]) -> Outcome<f64> {
    let key = format!("retry:bench-{}", ops.join("-"));
    // The ticket of an admission, as a run's later calls carry it.
    let mut con = TcpStream::connect(("127.0.0.1", port)).map_err(|e| e.to_string())?;
    let admit = args("admit", "0");
    let mut call: Vec<&str> = vec!["EVALSHA", sha, "1", &key];
    call.extend(admit.iter().map(String::as_str));
    con.write_all(&command(&call)).map_err(|e| e.to_string())?;
    let mut out = Vec::new();
    reply(&mut BufReader::new(&con), &mut out)?;
    let generation = strings(&out).get(12).cloned().unwrap_or_else(|| "0".into());
    let commands: Vec<Vec<u8>> = ops
        .iter()
        .map(|op| {
            let a = args(op, &generation);
            let mut call: Vec<&str> = vec!["EVALSHA", sha, "1", &key];
            call.extend(a.iter().map(String::as_str));
            command(&call)
        })
        .collect();
    let done = AtomicU64::new(0);
    let started = Instant::now();
    std::thread::scope(|scope| -> Outcome<()> {
        let workers: Vec<_> = (0..CLIENTS)
            .map(|_| {
                scope.spawn(|| -> Outcome<()> {
                    let con = TcpStream::connect(("127.0.0.1", port)).map_err(|e| e.to_string())?;
                    con.set_nodelay(true).map_err(|e| e.to_string())?;
                    let mut w = con.try_clone().map_err(|e| e.to_string())?;
                    let mut r = BufReader::new(con);
                    let mut out = Vec::new();
                    while started.elapsed() < DRIVE {
                        for c in &commands {
                            w.write_all(c).map_err(|e| e.to_string())?;
                            out.clear();
                            reply(&mut r, &mut out)?;
                            done.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                    Ok(())
                })
            })
            .collect();
        for w in workers {
            w.join().map_err(|_| "a client panicked")??;
        }
        Ok(())
    })?;
    Ok(done.into_inner() as f64 / started.elapsed().as_secs_f64())
}

/// A proxy in front of `upstream` that forwards every command in the order it arrives and
/// answers at most `rate` script calls (EVALSHA, EVAL) a second: one key's thread at that
/// rate. A call whose client has gone is still forwarded, as Redis runs what it was sent.
struct Proxy {
    port: u16,
    stop: Arc<AtomicBool>,
    /// When each connection's first script call arrived: the runs' admissions.
    firsts: Arc<Mutex<Vec<Instant>>>,
    /// Script calls received, which wait their turn at the rate.
    scripts: Arc<AtomicU64>,
    /// Other commands received (a connection's set-up: AUTH, SELECT), forwarded in order
    /// without a turn of their own: the simulator counts none.
    others: Arc<AtomicU64>,
    /// Each script call's arrival and answer, in the order served: on a loaded machine the
    /// proxy's thread, and Redis's, wake late and answer slower than the rate.
    served: Arc<Mutex<Vec<(Instant, Instant)>>>,
}

/// A command waiting in the proxy, and where its answer goes.
struct Waiting {
    bytes: Vec<u8>,
    script: bool,
    to: TcpStream,
    arrived: Instant,
}

impl Proxy {
    fn start(upstream: u16, rate: u32) -> Outcome<Proxy> {
        let listener = TcpListener::bind("127.0.0.1:0").map_err(|e| e.to_string())?;
        let port = listener.local_addr().map_err(|e| e.to_string())?.port();
        let stop = Arc::new(AtomicBool::new(false));
        let queue = Arc::new((Mutex::new(VecDeque::<Waiting>::new()), Condvar::new()));
        let mut up = TcpStream::connect(("127.0.0.1", upstream)).map_err(|e| e.to_string())?;
        up.set_nodelay(true).map_err(|e| e.to_string())?;
        // The one server: first come, first served, a script call an interval at least after
        // the one before.
        let served = Arc::new(Mutex::new(Vec::new()));
        let (q, st, answered) = (queue.clone(), stop.clone(), served.clone());
        std::thread::spawn(move || {
            let served = answered;
            let interval = Duration::from_secs(1) / rate.max(1);
            let mut next = Instant::now();
            let Ok(clone) = up.try_clone() else { return };
            let mut r = BufReader::new(clone);
            let mut answer = Vec::new();
            while !st.load(Ordering::Relaxed) {
                let w = {
                    let (lock, cv) = &*q;
                    let Ok(mut waiting) = lock.lock() else { return };
                    while waiting.is_empty() && !st.load(Ordering::Relaxed) {
                        match cv.wait_timeout(waiting, Duration::from_millis(50)) {
                            Ok((w, _)) => waiting = w,
                            Err(_) => return,
                        }
                    }
                    match waiting.pop_front() {
                        Some(w) => w,
                        None => return,
                    }
                };
                let mut w = w;
                if w.script {
                    let now = Instant::now();
                    if next > now {
                        std::thread::sleep(next - now);
                    }
                    next = next.max(now) + interval;
                }
                answer.clear();
                if up.write_all(&w.bytes).is_err() {
                    return;
                }
                // An error reply is an answer too.
                let _ = reply(&mut r, &mut answer);
                let _ = w.to.write_all(&answer);
                if w.script
                    && let Ok(mut s) = served.lock()
                {
                    s.push((w.arrived, Instant::now()));
                }
            }
        });
        let firsts = Arc::new(Mutex::new(Vec::new()));
        let (scripts, others) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
        let (q, st, f) = (queue, stop.clone(), firsts.clone());
        let (sc, ot) = (scripts.clone(), others.clone());
        std::thread::spawn(move || {
            for client in listener.incoming() {
                if st.load(Ordering::Relaxed) {
                    return;
                }
                let Ok(client) = client else { continue };
                let (q, f, sc, ot) = (q.clone(), f.clone(), sc.clone(), ot.clone());
                std::thread::spawn(move || {
                    let mut first = true;
                    let _ = client.set_nodelay(true);
                    let Ok(clone) = client.try_clone() else {
                        return;
                    };
                    let mut r = BufReader::new(clone);
                    loop {
                        let mut bytes = Vec::new();
                        if reply(&mut r, &mut bytes).is_err() || bytes.is_empty() {
                            return;
                        }
                        let head = String::from_utf8_lossy(&bytes[..bytes.len().min(40)])
                            .to_ascii_uppercase();
                        let script = head.contains("EVALSHA") || head.contains("\r\nEVAL\r\n");
                        if script { &sc } else { &ot }.fetch_add(1, Ordering::Relaxed);
                        if script
                            && std::mem::take(&mut first)
                            && let Ok(mut f) = f.lock()
                        {
                            f.push(Instant::now());
                        }
                        let Ok(to) = client.try_clone() else { return };
                        let (lock, cv) = &*q;
                        let Ok(mut waiting) = lock.lock() else { return };
                        waiting.push_back(Waiting {
                            bytes,
                            script,
                            to,
                            arrived: Instant::now(),
                        });
                        cv.notify_one();
                    }
                });
            }
        });
        Ok(Proxy {
            port,
            stop,
            firsts,
            scripts,
            others,
            served,
        })
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        // Wakes the accepting thread.
        let _ = TcpStream::connect(("127.0.0.1", self.port));
    }
}

fn env_number(name: &str, default: u32) -> u32 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// The herd's settings, the same for the real runs and the simulator.
struct Herd {
    runs: u32,
    splay: Duration,
    rounds: u32,
    timeout: Duration,
}

/// One way the herd's runs go: their command and flags, the store's rate, and the outage the
/// simulator is told of (the whole time for a command that fails, none for one that succeeds).
struct Case {
    name: &'static str,
    flags: &'static [&'static str],
    command: &'static str,
    rate: u32,
    outage: Duration,
}

/// Seeds the simulator is run with, for its own spread.
const SEEDS: u64 = 5;

/// The herd of real runs through the proxy, beside the simulator's prediction for the same
/// runs, `--splay`, rate, timeout and policy.
///
/// The runs spread their own first calls with `--splay`, over a span long enough that starting
/// them on a small machine does not bunch them: each run's log (`-v`, JSON) says when it
/// started, against the moment the herd was released, and so how late its splay began; a
/// round against a store with no limit (no run may lose it then) is the reference. The proxy's
/// own record of each run's first call is also replayed through the simulator's store alone
/// ([`Line`]): that separates the store's queue from the arrivals the simulator draws.
fn herd(redis: &Redis) -> Outcome<()> {
    let bin = std::env::var("RETRY_BENCH_BIN").unwrap_or_else(|_| {
        concat!(env!("CARGO_MANIFEST_DIR"), "/target/release/retry").to_string()
    });
    if !std::path::Path::new(&bin).exists() {
        eprintln!("*** SKIPPED: the herd needs {bin} (cargo build --release)");
        return Ok(());
    }
    let herd = Herd {
        runs: env_number("STORERATE_HERD", 600),
        splay: Duration::from_millis(env_number("STORERATE_SPLAY_MS", 8000).into()),
        rounds: env_number("STORERATE_ROUNDS", 3),
        timeout: Duration::from_millis(500),
    };
    let rate = env_number("STORERATE_RATE", 60);
    // Succeeding runs make one call each (the admission; the success changes nothing and is
    // not sent); failing ones with the breaker off make two or more (the budget refuses most
    // retries): each at about 1.25 times the store's rate on average, so that it saturates
    // part of the time.
    let cases = [
        Case {
            name: "succeeding (-- true)",
            flags: &["-n", "4", "-d", "1s", "--jitter", "none"],
            command: "true",
            rate,
            outage: Duration::ZERO,
        },
        Case {
            name: "failing (-- false, --breaker-failures 0)",
            flags: &[
                "-n",
                "4",
                "-d",
                "1s",
                "--jitter",
                "none",
                "--breaker-failures",
                "0",
            ],
            command: "false",
            rate: rate.saturating_mul(2),
            outage: Duration::from_secs(3600),
        },
    ];
    println!(
        "\nHerds of {} real runs of one key, started one after another, each waiting its own \
         --splay {} before its first call; --state-timeout 500ms, --state-fail open, a state \
         directory each. Load now: {}",
        herd.runs,
        human_ms(herd.splay),
        load()
    );
    let reference = Case {
        name: "reference: a store with no limit",
        rate: 1_000_000,
        ..cases[0]
    };
    let round = real_round(&bin, redis, &herd, &reference, 0)?;
    println!("  {}:", reference.name);
    print_round(0, &round);
    let late = round
        .admissions
        .iter()
        .filter(|a| **a > Duration::from_millis(100))
        .count();
    println!(
        "    a run's admission, from the end of its splay to its first attempt: median {}, 99th \
         percentile {}, most {}; {late} of {} over 100 ms",
        human_ms(percentile(&round.admissions, 0.5)),
        human_ms(percentile(&round.admissions, 0.99)),
        human_ms(percentile(&round.admissions, 1.0)),
        round.admissions.len()
    );
    for case in &cases {
        compare(&bin, redis, &herd, case)?;
    }
    Ok(())
}

/// The real rounds of one case beside the simulator's seeds.
fn compare(bin: &str, redis: &Redis, herd: &Herd, case: &Case) -> Outcome<()> {
    println!(
        "  {}, the store answering {} script calls/s:",
        case.name, case.rate
    );
    let mut real = Vec::new();
    for round in 1..=herd.rounds {
        let r = real_round(bin, redis, herd, case, round)?;
        print_round(round, &r);
        if case.outage.is_zero() {
            // One call a run: the simulator's store alone is the simulator. Fed the calls as
            // they reached the proxy, it checks the queue; fed this round's starts, each with
            // a splay of its own drawn as the simulator draws them, the arrivals too, without
            // the second or so the bench takes to start the runs one after another, which
            // the simulator's common start has not.
            let drawn: Vec<u32> = (1..=SEEDS)
                .map(|seed| {
                    let mut rng = ChaCha8Rng::seed_from_u64(seed);
                    let arrivals: Vec<Duration> = r
                        .starts
                        .iter()
                        .map(|s| *s + herd.splay.mul_f64(rng.random::<f64>()))
                        .collect();
                    replay(&arrivals, case.rate, herd.timeout)
                })
                .collect();
            println!(
                "      the simulator's store fed the calls as they arrived: {} lost; fed these \
                 starts and splays drawn by seeds 1-{SEEDS}: {drawn:?}",
                replay(&r.arrivals, case.rate, herd.timeout)
            );
        }
        real.push(r.lost());
    }
    let mut flags = case.flags.to_vec();
    let splay = format!("{}ms", herd.splay.as_millis());
    flags.extend(["--key", "herd", "--splay", &splay]);
    let policy = retry::setup::from_flags(&flags)?;
    let rules = policy.state.as_ref().ok_or("a key")?.rules.clone();
    let simulated: Vec<u64> = (1..=SEEDS)
        .map(|seed| {
            let world = World {
                processes: herd.runs as usize,
                hosts: herd.runs as usize,
                every: Duration::from_secs(3600),
                splay: herd.splay,
                repeat: false,
                outage: case.outage,
                call: Duration::from_millis(2),
                seed,
                store: Some(StoreModel {
                    rate: case.rate,
                    timeout: herd.timeout,
                    fail: FailMode::Open,
                }),
            };
            simulate(&policy, Sharing::Fleet, Some(&rules), &world).lost_store
        })
        .collect();
    println!(
        "    lost the shared state: real {real:?} (rounds 1-{}), simulated {simulated:?} (--fleet \
         {runs} --hosts {runs} --splay {splay} --store-rate {} --call-time 2ms, seeds 1-{SEEDS})",
        herd.rounds,
        case.rate,
        runs = herd.runs,
    );
    Ok(())
}

/// What one round of real runs did.
#[derive(Default)]
struct Round {
    /// Runs that fell back to their host's state at their start.
    fell_back: u32,
    /// Runs that lost the store later ("going on without its breaker and budget").
    lost_later: u32,
    /// Script calls and other commands the proxy received.
    scripts: u64,
    others: u64,
    /// When each run's first script call reached the proxy, from the release.
    arrivals: Vec<Duration>,
    /// How late each run started (its first log line), from the release: its splay began
    /// then.
    starts: Vec<Duration>,
    /// Each run's time from the end of its splay to its first attempt: its admission.
    admissions: Vec<Duration>,
    /// The proxy's mean interval between two answers while calls were waiting (the model's
    /// is 1/rate).
    interval: Duration,
}

impl Round {
    fn lost(&self) -> u32 {
        self.fell_back + self.lost_later
    }
}

fn print_round(round: u32, r: &Round) {
    let first = r.arrivals.iter().min().copied().unwrap_or_default();
    let last = r.arrivals.iter().max().copied().unwrap_or_default();
    println!(
        "    round {round}: {} lost the shared state ({} at their start, {} later); {} script \
         calls, {} other commands, {:.1} ms between \
         answers in a backlog; first calls from {} to {} after the release, the runs started \
         (first log line) within {} of it",
        r.lost(),
        r.fell_back,
        r.lost_later,
        r.scripts,
        r.others,
        r.interval.as_secs_f64() * 1000.0,
        human_ms(first),
        human_ms(last),
        human_ms(percentile(&r.starts, 1.0)),
    );
}

/// How many of the calls arriving at `arrivals` wait past `timeout` in the simulator's store
/// answering `rate` calls a second.
fn replay(arrivals: &[Duration], rate: u32, timeout: Duration) -> u32 {
    let mut sorted = arrivals.to_vec();
    sorted.sort();
    let store = MemoryStore::queued(Line::new(rate, timeout));
    let mut lost = 0;
    for at in sorted {
        store.set_time(u64::try_from(at.as_nanos()).unwrap_or(u64::MAX));
        if let Some(line) = store.line() {
            let (_, in_time) = line.serve(&mut 0);
            lost += u32::from(!in_time);
        }
    }
    lost
}

/// The value below which a share `p` of `values` lies.
fn percentile(values: &[Duration], p: f64) -> Duration {
    let mut sorted = values.to_vec();
    sorted.sort();
    let i = ((sorted.len() as f64 - 1.0) * p).round().max(0.0) as usize;
    sorted.get(i).copied().unwrap_or_default()
}

fn human_ms(d: Duration) -> String {
    format!("{} ms", d.as_millis())
}

/// The machine's load averages, from /proc/loadavg where there is one.
fn load() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|| "unknown".into())
}

/// Releases `herd.runs` real runs at once (each waits on a FIFO that opens for all of them
/// together) against a proxy at `case.rate`, and reads what each run's log says.
fn real_round(bin: &str, redis: &Redis, herd: &Herd, case: &Case, round: u32) -> Outcome<Round> {
    let proxy = Proxy::start(redis.port, case.rate)?;
    let key = format!("herd-{}-{}-{round}", std::process::id(), case.rate);
    let dir = std::env::temp_dir().join(format!("storerate-{key}"));
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let url = format!("redis://127.0.0.1:{}", proxy.port);
    let splay = format!("{}ms", herd.splay.as_millis());
    let timeout = format!("{}ms", herd.timeout.as_millis());
    // The runs are started one after another, as fast as the bench can: each sleeps out its
    // splay as soon as it has started, so the machine runs one or two at a time. Released
    // together through a gate instead, hundreds start at once on two cores: those whose splay
    // ends within the second or two that takes are starved of the CPU and call together when
    // it is over, a burst that no fleet of separate hosts makes.
    let (released, released_at) = (Instant::now(), std::time::SystemTime::now());
    let mut children = Vec::new();
    for i in 0..herd.runs {
        let child = Command::new(bin)
            .args(["--key", &key, "--state", &url, "--state-timeout", &timeout])
            .args(["--state-dir", &dir.join(format!("h{i}")).to_string_lossy()])
            .args(["--splay", &splay, "-v", "--log-format", "json"])
            .args(case.flags)
            .args(["--", case.command])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("cannot start a run: {e}"))?;
        children.push(child);
    }
    let mut r = Round::default();
    for mut child in children {
        let mut err = String::new();
        if let Some(mut e) = child.stderr.take() {
            let _ = e.read_to_string(&mut err);
        }
        let _ = child.wait();
        if err.contains("going on with this host's local state") {
            r.fell_back += 1;
        } else if err.contains("going on without its breaker and budget") {
            r.lost_later += 1;
        }
        read_log(&err, released_at, &mut r);
    }
    let _ = std::fs::remove_dir_all(&dir);
    r.scripts = proxy.scripts.load(Ordering::Relaxed);
    let served = proxy.served.lock().map_err(|_| "the answers")?.clone();
    // Between answers in a backlog: the later call had arrived before the earlier's answer.
    let gaps: Vec<Duration> = served
        .windows(2)
        .filter(|w| w[1].0 < w[0].1)
        .map(|w| w[1].1.saturating_duration_since(w[0].1))
        .collect();
    r.interval = gaps.iter().sum::<Duration>() / gaps.len().max(1) as u32;
    r.others = proxy.others.load(Ordering::Relaxed);
    let firsts = proxy.firsts.lock().map_err(|_| "the arrivals")?.clone();
    r.arrivals = firsts
        .iter()
        .map(|t| t.saturating_duration_since(released))
        .collect();
    Ok(r)
}

/// A run's start (its first line's time, from `released`) and its admission (from the end of
/// its splay to its first attempt), from its JSON log.
fn read_log(log: &str, released: std::time::SystemTime, r: &mut Round) {
    let lines: Vec<serde_json::Value> = log
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let event = |name: &str| lines.iter().find(|l| l["event"] == name);
    let started = lines
        .first()
        .and_then(|l| l["timestamp"].as_str())
        .and_then(|t| humantime::parse_rfc3339(t).ok());
    if let Some(at) = started {
        r.starts
            .push(at.duration_since(released).unwrap_or(Duration::ZERO));
    }
    let splay = event("splay").and_then(|l| l["delay_ms"].as_u64());
    let first = event("start").and_then(|l| l["elapsed_ms"].as_u64());
    if let (Some(splay), Some(first)) = (splay, first) {
        r.admissions
            .push(Duration::from_millis(first.saturating_sub(splay)));
    }
}
