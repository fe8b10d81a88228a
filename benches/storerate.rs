//! One key's rate in a `--state` store, and the fleet simulator's `--store-rate` checked
//! against real runs.
//!
//! 1. Against a redis-server of its own (skipped, loudly, without one): how many calls a
//!    second one key answers for each operation a run sends (an admission, an attempt's
//!    failure recorded, the check before a retry), and for the pair a run makes in an outage
//!    (an admission, then its failure), driven by several client connections at once, each
//!    sending EVALSHA with retry's own script and the arguments a real run sends. RESP is
//!    spoken by hand, so that the bench needs no Redis client.
//! 2. With `target/release/retry` built (or `RETRY_BENCH_BIN`): a herd of real runs of one key,
//!    released together, against that server behind a proxy of the bench's own that answers
//!    at most `RATE` script calls a second, first come, first served; the runs that fell back
//!    to their host's state (their warning "going on with this host's local state") counted,
//!    over a few repetitions, beside what the simulator predicts for the same numbers.
//!
//! `cargo bench --bench storerate`; `STORERATE_HERD=N`, `STORERATE_RATE=N` and
//! `STORERATE_ROUNDS=N` change the herd (2000 runs, 2000 calls a second, 3 rounds).

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

use retry::policy::breaker::ms;
use retry::policy::key::FailMode;
use retry::policy::shared::KeyRules;
use retry::sim::fleet::{Sharing, StoreModel, World, simulate};

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
    let s = KeyRules::default();
    let b = &s.breaker;
    let expiry = ms(Duration::from_secs(7 * 24 * 3600))
        .max(ms(b.window))
        .max(ms(b.open_max) + ms(s.lease));
    let mut args: Vec<String> = vec![op.into(), String::new()];
    args.extend(
        [
            u64::from(b.failures),
            ms(b.window),
            b.first_open(),
            ms(b.open_max),
            ms(s.lease),
            s.budget.burst_milli(),
            s.budget.ratio_milli(),
            ms(s.budget.refill).max(1),
            expiry,
        ]
        .map(|n| n.to_string()),
    );
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
}

/// A command waiting in the proxy, and where its answer goes.
struct Waiting {
    bytes: Vec<u8>,
    script: bool,
    to: TcpStream,
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
        let (q, st) = (queue.clone(), stop.clone());
        std::thread::spawn(move || {
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
            }
        });
        let firsts = Arc::new(Mutex::new(Vec::new()));
        let (q, st, f) = (queue, stop.clone(), firsts.clone());
        std::thread::spawn(move || {
            for client in listener.incoming() {
                if st.load(Ordering::Relaxed) {
                    return;
                }
                let Ok(client) = client else { continue };
                let (q, f) = (q.clone(), f.clone());
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
                        if script
                            && std::mem::take(&mut first)
                            && let Ok(mut f) = f.lock()
                        {
                            f.push(Instant::now());
                        }
                        let Ok(to) = client.try_clone() else { return };
                        let (lock, cv) = &*q;
                        let Ok(mut waiting) = lock.lock() else { return };
                        waiting.push_back(Waiting { bytes, script, to });
                        cv.notify_one();
                    }
                });
            }
        });
        Ok(Proxy { port, stop, firsts })
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

/// The herd of real runs through the proxy, beside the simulator's prediction.
fn herd(redis: &Redis) -> Outcome<()> {
    let bin = std::env::var("RETRY_BENCH_BIN").unwrap_or_else(|_| {
        concat!(env!("CARGO_MANIFEST_DIR"), "/target/release/retry").to_string()
    });
    if !std::path::Path::new(&bin).exists() {
        eprintln!("*** SKIPPED: the herd needs {bin} (cargo build --release)");
        return Ok(());
    }
    let (runs, rate, rounds) = (
        env_number("STORERATE_HERD", 2000),
        env_number("STORERATE_RATE", 2000),
        env_number("STORERATE_ROUNDS", 3),
    );
    let timeout = Duration::from_millis(500);
    println!(
        "\nA herd of {runs} runs of one key released together, the store answering {rate} \
         script calls/s, --state-timeout 500ms, -n 4 -d 1s, the command failing:"
    );
    let (mut real, mut spreads) = (Vec::new(), Vec::new());
    for round in 1..=rounds {
        let proxy = Proxy::start(redis.port, rate)?;
        let key = format!("herd-{}-{round}", std::process::id());
        let (fell_back, lost_later) = release(&bin, proxy.port, &key, runs)?;
        println!(
            "  round {round}: {fell_back} runs fell back to their host's state at their start, \
             {lost_later} lost the store later: {} in all",
            fell_back + lost_later
        );
        real.push(fell_back + lost_later);
        let firsts = proxy.firsts.lock().map_err(|_| "the arrivals")?.clone();
        let spread = match (firsts.iter().min(), firsts.iter().max()) {
            (Some(a), Some(b)) => *b - *a,
            _ => Duration::ZERO,
        };
        println!(
            "    their admissions arrived over {:.0} ms",
            spread.as_secs_f64() * 1000.0
        );
        spreads.push(spread);
    }
    let policy = retry::setup::from_flags(&["-n", "4", "-d", "1s", "--key", "api"])?;
    let rules = policy.state.as_ref().ok_or("a key")?.rules.clone();
    // The real runs' admissions came over a while (starting thousands of processes takes the
    // machine time): the simulated ones are spread over the same, evenly.
    let splay = spreads.iter().sum::<Duration>() / spreads.len().max(1) as u32;
    let mut predicted = Vec::new();
    for seed in 1..=5 {
        let world = World {
            processes: runs as usize,
            hosts: runs as usize,
            every: Duration::from_secs(3600),
            splay,
            repeat: false,
            outage: Duration::from_secs(3600),
            call: Duration::from_millis(2),
            seed,
            store: Some(StoreModel {
                rate,
                timeout,
                fail: FailMode::Open,
            }),
        };
        let r = simulate(&policy, Sharing::Fleet, Some(&rules), &world);
        predicted.push(r.lost_store);
    }
    println!(
        "  simulated (--fleet {runs} --splay {}ms --store-rate {rate} --call-time 2ms, seeds \
         1-5): {predicted:?} runs lost the shared state",
        splay.as_millis()
    );
    println!("  real: {real:?} runs lost the shared state");
    Ok(())
}

/// Releases `runs` real runs at once (each waits on a FIFO that opens for all of them
/// together); returns how many fell back to their host's state at their start, and how many
/// lost the store later ("going on without its breaker and budget").
fn release(bin: &str, port: u16, key: &str, runs: u32) -> Outcome<(u32, u32)> {
    let dir = std::env::temp_dir().join(format!("storerate-{}-{key}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let gate = dir.join("gate");
    let made = Command::new("mkfifo")
        .arg(&gate)
        .status()
        .map_err(|e| e.to_string())?;
    if !made.success() {
        return Err("mkfifo failed".into());
    }
    let url = format!("redis://127.0.0.1:{port}");
    let mut children = Vec::new();
    for i in 0..runs {
        let child = Command::new("sh")
            .args(["-c", "read _ < \"$0\"; exec \"$@\""])
            .arg(&gate)
            .arg(bin)
            .args(["--key", key, "--state", &url, "--state-timeout", "500ms"])
            .args(["--state-dir", &dir.join(format!("h{i}")).to_string_lossy()])
            .args(["-n", "4", "-d", "1s", "--jitter", "none", "--", "false"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("cannot start a run: {e}"))?;
        children.push(child);
    }
    // Every run is waiting to open the FIFO: opening it for writing, and closing it, lets
    // them all go at once.
    std::thread::sleep(Duration::from_millis(500));
    drop(
        std::fs::OpenOptions::new()
            .write(true)
            .open(&gate)
            .map_err(|e| e.to_string())?,
    );
    let (mut fell_back, mut lost_later) = (0, 0);
    for mut child in children {
        let mut err = String::new();
        if let Some(mut e) = child.stderr.take() {
            let _ = e.read_to_string(&mut err);
        }
        let _ = child.wait();
        if err.contains("going on with this host's local state") {
            fell_back += 1;
        } else if err.contains("going on without its breaker and budget") {
            lost_later += 1;
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    Ok((fell_back, lost_later))
}
