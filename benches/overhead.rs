//! What retry itself costs, beside what it runs. Three figures:
//!
//! 1. Per-attempt overhead at zero delay: `retry -n N -d 0 -qq -- /bin/false` (N failing
//!    attempts) against a loop in this process that spawns and waits for `/bin/false` N times
//!    with `std::process::Command`, the least any retry loop can do. Target: retry/loop ≤ 1.03.
//! 2. Start-up, one successful attempt: `retry -- /bin/true`, run from a copy of the build as
//!    `cargo install` makes it, and again with both read back from disk, against the least a
//!    wrapper can do, a static C program that posix_spawns its argument and waits for it
//!    (built here with `cc -static`), with the page faults of each (wait4's ru_minflt, the
//!    child's included);
//!    GNU `timeout 60 /bin/true` beside them for scale. Target: ≤ 1.40, for the ordinary build
//!    (a PIE, glibc linked dynamically).
//! 3. retry's own peak RSS, read with wait4 on its pid (RUSAGE_CHILDREN would mix in the
//!    attempts it ran), beside the C program's and GNU timeout's. Target: ≤ 3 MiB.
//! 4. What `--key` adds: `retry --key K -- /bin/true` against `retry -- /bin/true`, the median
//!    of per-pair differences. Target: ≤ 0.1 ms. Then 50 processes that update one key at once
//!    (three failing attempts each, so each takes two tokens: two writes under the key's lock),
//!    against the same 50 without a key.
//!
//! 5. (Printed as 6.) What `--state redis://127.0.0.1:PORT` adds to `retry --key K --
//!    /bin/true` against the local store, the median of per-pair differences, beside one bare round trip to the same
//!    server (PING on an open connection). Target: within 60 µs of the barest client's floor
//!    (below). Beside
//!    them, for scale, what a new connection's first round trip costs (connect, then PING, the
//!    server idle before it), which every run pays and no client can avoid; and what the
//!    barest client adds to a process for what a run asks: this bench run anew as a process
//!    that connects, sends the same admission script (written and read by hand over a
//!    `TcpStream`, no Redis library) and exits, against the same process exiting at once, pair
//!    by pair. That is the floor for any client that connects once per run. The bench starts
//!    its own `redis-server` (and says so and skips this when there is none).
//!
//! The cost of one bare spawn and wait of `/bin/true` is printed too, as the unit everything
//! else is made of.
//!
//! A busy machine makes every spawn slower for a while, so the two sides of a comparison are
//! run pair by pair, in turns (which one goes first alternates too), and the figure reported is
//! the median of the per-pair ratios: a burst of noise then slows both sides of the pairs it
//! falls on, rather than one side of the whole comparison. A miss is printed, not fatal; a
//! measured command that cannot be run or ends with an unexpected status ends the bench with
//! an error, so that it never reports figures for something that did not happen.

// A benchmark that cannot set up its measurement fails at once, where it stands.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "support/redis.rs"]
mod redis;
#[path = "support/wait4.rs"]
mod support;
use redis::Redis;
use support::wait4;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::{Command, ExitCode, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// The retry built: this build's, or another given in `RETRY_BENCH_BIN` (an older build, to
/// compare in the same conditions).
fn built_bin() -> String {
    std::env::var("RETRY_BENCH_BIN").unwrap_or_else(|_| env!("CARGO_BIN_EXE_retry").to_string())
}

/// The retry measured: the built one as `cargo install` (and dpkg) put it, a copy in the
/// bench's own directory, beside the C reference.
static INSTALLED: std::sync::OnceLock<String> = std::sync::OnceLock::new();

fn retry_bin() -> String {
    INSTALLED.get().cloned().unwrap_or_else(built_bin)
}

/// Copies the built retry into `dir`, as `cargo install` copies it into its bin directory (and
/// dpkg writes it), beside the C reference, which its linker has just written too. A file just
/// written is held in the page cache in large folios, which the kernel maps many pages at a
/// time; a file read back from disk (after the page cache let it go, or a reboot) is held, on
/// the kernels measured here, as single pages, and the same bytes start slower from it. Both
/// are states an installed retry is in, so section 2 and the summary give both: see
/// `read_back`.
fn install(dir: &std::path::Path) -> Outcome<String> {
    let to = dir.join("retry");
    std::fs::copy(built_bin(), &to).map_err(|e| format!("copy {} there: {e}", built_bin()))?;
    let to = to.display().to_string();
    INSTALLED
        .set(to.clone())
        .map_err(|_| "retry was installed twice".to_string())?;
    Ok(to)
}

/// Failing attempts per run in the per-attempt comparison.
const ATTEMPTS: u32 = 250;
/// Pairs of runs in the per-attempt comparison.
const ATTEMPT_PAIRS: usize = 41;
/// Pairs of runs in the start-up comparison.
const STARTUP_PAIRS: usize = 201;
/// Bare spawns timed for the reference figure.
const SPAWN_SAMPLES: usize = 301;
/// Runs whose largest peak RSS is reported.
const RSS_RUNS: usize = 5;

const ATTEMPT_TARGET: f64 = 1.03;
/// The ordinary build (a PIE, glibc linked dynamically) against the static C program.
const STARTUP_TARGET: f64 = 1.40;
const RSS_TARGET_MIB: f64 = 3.0;
/// Pairs of runs in the `--key` comparison.
const KEY_PAIRS: usize = 201;
const KEY_TARGET_MICROS: f64 = 100.0;
/// Pairs of runs in the `--state` comparison.
const STORE_PAIRS: usize = 201;
/// Round trips timed for the reference figure.
const PING_SAMPLES: usize = 1001;
/// New connections timed beside it.
const FRESH_SAMPLES: usize = 201;
/// How far above the barest client's floor `--state` may be.
const STORE_TARGET_MICROS: f64 = 60.0;
/// Processes started at once on one key.
const CROWD: usize = 50;
/// Times the crowd is started, each side.
const CROWD_ROUNDS: usize = 7;

/// A measured command could not be run, or ended other than expected.
type Outcome<T> = Result<T, String>;

/// One run of a child: how long it took, its own peak RSS, and the page faults of it and of
/// the children it waited for.
struct Run {
    wall: Duration,
    max_rss_mib: f64,
    faults: f64,
}

/// The smallest and the middle of a set of samples.
struct Spread {
    min: f64,
    median: f64,
}

/// Two commands timed pair by pair.
struct Compared {
    a: Vec<f64>,
    b: Vec<f64>,
}

impl Compared {
    /// The median of the per-pair ratios a/b.
    fn ratio(&self) -> f64 {
        median(self.a.iter().zip(&self.b).map(|(a, b)| a / b).collect())
    }

    /// The median of the per-pair differences a − b.
    fn difference(&self) -> f64 {
        median(self.a.iter().zip(&self.b).map(|(a, b)| a - b).collect())
    }
}

fn median(mut samples: Vec<f64>) -> f64 {
    samples.sort_by(f64::total_cmp);
    let mid = samples.len() / 2;
    if samples.len() % 2 == 1 {
        samples[mid]
    } else {
        (samples[mid - 1] + samples[mid]) / 2.0
    }
}

fn spread(samples: &[f64]) -> Spread {
    Spread {
        min: samples.iter().copied().fold(f64::INFINITY, f64::min),
        median: median(samples.to_vec()),
    }
}

fn micros(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

/// retry with these arguments, its stdin /dev/null: `--stdin auto` passes that through,
/// whatever the bench's own stdin is (a pipe there would be recorded and replayed).
fn retry(args: &[&str]) -> Command {
    retry_at(&retry_bin(), args)
}

/// [`retry`], run from the file at `path`.
fn retry_at(path: &str, args: &[&str]) -> Command {
    let mut command = Command::new(path);
    command.args(args).stdin(Stdio::null());
    command
}

/// GNU `timeout 60 /bin/true`, set up as `retry` is.
fn timeout_true() -> Command {
    let mut command = Command::new("timeout");
    command.args(["60", "/bin/true"]).stdin(Stdio::null());
    command
}

fn check(command: &Command, status: ExitStatus, expected: i32) -> Outcome<()> {
    if status.code() == Some(expected) {
        Ok(())
    } else {
        Err(format!(
            "{command:?} ended with {status}, not exit status {expected}"
        ))
    }
}

/// Runs `command` to its end, which must be exit status `expected`.
fn run(command: &mut Command, expected: i32) -> Outcome<Run> {
    let started = Instant::now();
    let child = command
        .spawn()
        .map_err(|e| format!("cannot run {command:?}: {e}"))?;
    let (status, usage) = wait4(child.id())?;
    let wall = started.elapsed();
    check(command, status, expected)?;
    Ok(Run {
        wall,
        // ru_maxrss is in KiB on Linux.
        max_rss_mib: usage.ru_maxrss as f64 / 1024.0,
        faults: usage.ru_minflt as f64 + usage.ru_majflt as f64,
    })
}

/// The baseline: spawns `program` `times` times, waiting for each, as a bare retry loop would.
fn spawn_loop(program: &str, times: u32, expected: i32) -> Outcome<Duration> {
    let started = Instant::now();
    for _ in 0..times {
        let mut command = Command::new(program);
        let status = command
            .status()
            .map_err(|e| format!("cannot run {program}: {e}"))?;
        check(&command, status, expected)?;
    }
    Ok(started.elapsed())
}

/// Times `a` and `b` in `count` pairs, the one that goes first alternating from pair to pair.
fn pairs(
    count: usize,
    mut a: impl FnMut() -> Outcome<f64>,
    mut b: impl FnMut() -> Outcome<f64>,
) -> Outcome<Compared> {
    // Once each first, for the page cache and the dynamic loader.
    a()?;
    b()?;
    let mut compared = Compared {
        a: Vec::with_capacity(count),
        b: Vec::with_capacity(count),
    };
    for i in 0..count {
        let (x, y) = if i % 2 == 0 {
            let x = a()?;
            (x, b()?)
        } else {
            let y = b()?;
            (a()?, y)
        };
        compared.a.push(x);
        compared.b.push(y);
    }
    Ok(compared)
}

/// One bare spawn and wait of /bin/true, in µs.
fn bare_spawn() -> Outcome<Spread> {
    spawn_loop("/bin/true", 1, 0)?;
    let samples = (0..SPAWN_SAMPLES)
        .map(|_| spawn_loop("/bin/true", 1, 0).map(micros))
        .collect::<Outcome<Vec<_>>>()?;
    Ok(spread(&samples))
}

/// Time per attempt, in µs: retry's N attempts against the bare loop's N spawns.
fn per_attempt() -> Outcome<Compared> {
    let n = ATTEMPTS.to_string();
    let per = |d: Duration| micros(d) / f64::from(ATTEMPTS);
    pairs(
        ATTEMPT_PAIRS,
        || {
            let mut command = retry(&["-n", &n, "-d", "0", "-qq", "--", "/bin/false"]);
            run(&mut command, 1).map(|r| per(r.wall))
        },
        || spawn_loop("/bin/false", ATTEMPTS, 1).map(per),
    )
}

/// The C program that spawns its arguments and waits, as little as a wrapper can do.
const SPAWN_C: &str = r#"
#include <spawn.h>
#include <sys/wait.h>
extern char **environ;
int main(int argc, char **argv) {
    pid_t pid;
    int status;
    if (argc < 2 || posix_spawn(&pid, argv[1], 0, 0, argv + 1, environ) != 0) return 127;
    while (waitpid(pid, &status, 0) < 0) {}
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}
"#;

/// Builds the C reference, linked statically as retry is, in `dir`; its path.
fn build_spawn_c(dir: &std::path::Path) -> Outcome<String> {
    let source = dir.join("spawn.c");
    let exe = dir.join("spawn");
    std::fs::write(&source, SPAWN_C).map_err(|e| format!("write spawn.c: {e}"))?;
    let status = Command::new("cc")
        .args(["-O2", "-static", "-o"])
        .arg(&exe)
        .arg(&source)
        .status()
        .map_err(|e| format!("cannot run cc for the C reference: {e}"))?;
    if !status.success() {
        return Err(format!(
            "cc -static could not build the C reference ({status}): it needs glibc's static \
             library (libc6-dev)"
        ));
    }
    Ok(exe.display().to_string())
}

/// The C reference spawning /bin/true, set up as `retry` is.
fn spawn_c_true(spawn_c: &str) -> Command {
    let mut command = Command::new(spawn_c);
    command.arg("/bin/true").stdin(Stdio::null());
    command
}

/// Time for one successful run, in µs: retry against the C reference; and the page faults of
/// each, pair by pair.
fn startup(spawn_c: &str) -> Outcome<(Compared, Compared)> {
    let mut faults = Compared {
        a: Vec::new(),
        b: Vec::new(),
    };
    let mut retry_faults = Vec::new();
    let mut c_faults = Vec::new();
    let times = pairs(
        STARTUP_PAIRS,
        || {
            let r = run(&mut retry(&["--", "/bin/true"]), 0)?;
            retry_faults.push(r.faults);
            Ok(micros(r.wall))
        },
        || {
            let r = run(&mut spawn_c_true(spawn_c), 0)?;
            c_faults.push(r.faults);
            Ok(micros(r.wall))
        },
    )?;
    faults.a = retry_faults;
    faults.b = c_faults;
    Ok((times, faults))
}

/// The largest peak RSS, in MiB, over a few runs of `command`.
fn peak_rss(mut command: Command, expected: i32) -> Outcome<f64> {
    (0..RSS_RUNS).try_fold(0.0, |peak: f64, _| {
        Ok(peak.max(run(&mut command, expected)?.max_rss_mib))
    })
}

fn verdict(met: bool) -> &'static str {
    if met { "met" } else { "MISSED" }
}

/// A table row: a label and the figures that go with it.
fn row(label: &str, figures: &str) {
    println!("  {label:<38}{figures}");
}

fn print_compared(labels: [&str; 2], compared: &Compared) {
    row("", &format!("{:>10} {:>10}", "min µs", "median µs"));
    for (label, samples) in labels.iter().zip([&compared.a, &compared.b]) {
        let s = spread(samples);
        row(label, &format!("{:>10.1} {:>10.1}", s.min, s.median));
    }
    let difference = compared.difference();
    row(
        "median of per-pair differences",
        &format!("{difference:>21.1}"),
    );
    let ratio = compared.ratio();
    row("median of per-pair ratios", &format!("{ratio:>21.3}"));
}

/// The figures, each against its target.
struct Figures {
    attempt_ratio: f64,
    startup_ratio: f64,
    /// The same, both read back from disk.
    startup_paged: f64,
    rss_mib: f64,
    key_micros: f64,
    /// What `--state` adds, one round trip, and what a bare client adds; `None` without
    /// redis-server.
    store: Option<(f64, f64, f64)>,
}

fn print_summary(f: &Figures) {
    println!("summary");
    row("", &format!("{:>10}   {:<12}", "measured", "target"));
    let line = |label: &str, measured: String, target: String, met: bool| {
        row(
            label,
            &format!("{measured:>10}   {target:<12} {}", verdict(met)),
        );
    };
    line(
        "per attempt, retry / loop",
        format!("{:.3}", f.attempt_ratio),
        format!("≤ {ATTEMPT_TARGET:.2}"),
        f.attempt_ratio <= ATTEMPT_TARGET,
    );
    line(
        "one run, as just installed / C",
        format!("{:.3}", f.startup_ratio),
        format!("≤ {STARTUP_TARGET:.2}"),
        f.startup_ratio <= STARTUP_TARGET,
    );
    line(
        "one run, read back from disk / C",
        format!("{:.3}", f.startup_paged),
        format!("≤ {STARTUP_TARGET:.2}"),
        f.startup_paged <= STARTUP_TARGET,
    );
    line(
        "retry's peak RSS",
        format!("{:.2} MiB", f.rss_mib),
        format!("≤ {RSS_TARGET_MIB:.2} MiB"),
        f.rss_mib <= RSS_TARGET_MIB,
    );
    line(
        "--key, added to one run",
        format!("{:.0} µs", f.key_micros),
        format!("≤ {KEY_TARGET_MICROS:.0} µs"),
        f.key_micros <= KEY_TARGET_MICROS,
    );
    if let Some((added, _rtt, floor)) = f.store {
        line(
            "--state redis, added to --key",
            format!("{added:.0} µs"),
            format!("≤ {:.0} µs", floor + STORE_TARGET_MICROS),
            added <= floor + STORE_TARGET_MICROS,
        );
        // For scale, no target: what the barest client, connecting anew, paid in this run.
        row(
            "  a bare client (new process) adds",
            &format!("{:>10}", format!("{floor:.0} µs")),
        );
    }
}

fn reference_section() -> Outcome<()> {
    let spawn = bare_spawn()?;
    println!("reference: one spawn+wait of /bin/true, {SPAWN_SAMPLES} samples");
    row("", &format!("{:>10} {:>10}", "min µs", "median µs"));
    row(
        "spawn+wait /bin/true",
        &format!("{:>10.1} {:>10.1}", spawn.min, spawn.median),
    );
    Ok(())
}

fn attempt_section() -> Outcome<f64> {
    let attempts = per_attempt()?;
    println!(
        "1. time per attempt at zero delay: {ATTEMPTS} failing attempts, {ATTEMPT_PAIRS} pairs"
    );
    let retry_label = format!("retry -n {ATTEMPTS} -d 0 -qq -- /bin/false");
    let loop_label = format!("loop of {ATTEMPTS} spawns of /bin/false");
    print_compared([&retry_label, &loop_label], &attempts);
    Ok(attempts.ratio())
}

/// A copy of `from` in `dir`, named `name`, that the page cache has let go of: its first run
/// reads it back from disk, as after a reboot.
fn read_back(from: &str, dir: &std::path::Path, name: &str) -> Outcome<String> {
    let to = dir.join(name);
    std::fs::copy(from, &to).map_err(|e| format!("copy {from}: {e}"))?;
    let file = std::fs::File::open(&to).map_err(|e| format!("open {}: {e}", to.display()))?;
    // Written back first: the page cache lets go only of clean pages.
    file.sync_all()
        .map_err(|e| format!("sync {}: {e}", to.display()))?;
    nix::fcntl::posix_fadvise(
        &file,
        0,
        0,
        nix::fcntl::PosixFadviseAdvice::POSIX_FADV_DONTNEED,
    )
    .map_err(|e| format!("posix_fadvise {}: {e}", to.display()))?;
    Ok(to.display().to_string())
}

fn startup_section(spawn_c: &str, disk: &(String, String)) -> Outcome<(f64, f64)> {
    let (start, faults) = startup(spawn_c)?;
    let timeout = pairs(
        STARTUP_PAIRS / 4,
        || run(&mut timeout_true(), 0).map(|r| micros(r.wall)),
        || run(&mut spawn_c_true(spawn_c), 0).map(|r| micros(r.wall)),
    )?;
    println!("2. time for one successful run, {STARTUP_PAIRS} pairs");
    let reference = "static C posix_spawn+wait /bin/true";
    print_compared(["retry -- /bin/true", reference], &start);
    row(
        "page faults (with /bin/true's), median",
        &format!(
            "{:>10.0} {:>10.0}",
            median(faults.a.clone()),
            median(faults.b.clone())
        ),
    );
    row(
        "for scale: timeout 60 /bin/true / C",
        &format!("{:>21.3}", timeout.ratio()),
    );
    // Both read back from disk (see `install` and `read_back`).
    let read = pairs(
        STARTUP_PAIRS,
        || run(&mut retry_at(&disk.0, &["--", "/bin/true"]), 0).map(|r| micros(r.wall)),
        || run(&mut spawn_c_true(&disk.1), 0).map(|r| micros(r.wall)),
    )?;
    row(
        "both read back from disk: retry / C",
        &format!("{:>21.3}", read.ratio()),
    );
    Ok((start.ratio(), read.ratio()))
}

/// Prints the peak RSS of both retry commands, of the C reference and of GNU timeout; returns
/// retry's larger one.
fn rss_section(spawn_c: &str, read_back: &str) -> Outcome<f64> {
    println!("3. peak RSS of the process itself (wait4 ru_maxrss, largest of {RSS_RUNS} runs)");
    let failing = ["-n", "3", "-d", "0", "-qq", "--", "/bin/false"];
    let attempts = rss_row("retry -n 3 -d 0 -qq -- /bin/false", retry(&failing), 1)?;
    let success = rss_row("retry -- /bin/true", retry(&["--", "/bin/true"]), 0)?;
    let read = retry_at(read_back, &["--", "/bin/true"]);
    let read = rss_row("the same, read back from disk", read, 0)?;
    rss_row("static C posix_spawn+wait", spawn_c_true(spawn_c), 0)?;
    rss_row("timeout 60 /bin/true", timeout_true(), 0)?;
    Ok(attempts.max(success).max(read))
}

fn rss_row(label: &str, command: Command, expected: i32) -> Outcome<f64> {
    let mib = peak_rss(command, expected)?;
    row(label, &format!("{mib:>10.2} MiB"));
    Ok(mib)
}

/// What `--key` adds to one successful run, in µs; the key's state in a fresh directory.
fn key_section(state: &str) -> Outcome<f64> {
    let key = ["--key", "bench", "--state-dir", state, "--", "/bin/true"];
    let compared = pairs(
        KEY_PAIRS,
        || run(&mut retry(&key), 0).map(|r| micros(r.wall)),
        || run(&mut retry(&["--", "/bin/true"]), 0).map(|r| micros(r.wall)),
    )?;
    println!("4. what --key adds to one successful run, {KEY_PAIRS} pairs");
    print_compared(
        ["retry --key bench -- /bin/true", "retry -- /bin/true"],
        &compared,
    );
    Ok(compared.difference())
}

/// Starts `CROWD` retry processes with `args` at once and waits for all; the time, in ms.
fn crowd(args: &[&str]) -> Outcome<f64> {
    let started = Instant::now();
    let children = (0..CROWD)
        .map(|_| {
            let mut command = retry(args);
            command
                .spawn()
                .map(|child| (command, child))
                .map_err(|e| format!("cannot run retry: {e}"))
        })
        .collect::<Outcome<Vec<_>>>()?;
    for (command, child) in children {
        let (status, _) = wait4(child.id())?;
        check(&command, status, 1)?;
    }
    Ok(started.elapsed().as_secs_f64() * 1e3)
}

/// 50 processes updating one key at once, against the same 50 without a key.
fn crowd_section(state: &str) -> Outcome<()> {
    let failing = ["-n", "3", "-d", "0", "-qq", "--", "/bin/false"];
    let keyed: Vec<&str> = [
        "--key",
        "crowd",
        "--state-dir",
        state,
        "--breaker-failures",
        "0",
        "--budget-burst",
        "1000",
    ]
    .into_iter()
    .chain(failing)
    .collect();
    let compared = pairs(CROWD_ROUNDS, || crowd(&keyed), || crowd(&failing))?;
    println!("5. {CROWD} processes at once, 3 failing attempts each, {CROWD_ROUNDS} rounds");
    row("", &format!("{:>10} {:>10}", "min ms", "median ms"));
    for (label, samples) in ["on one key (100 locked writes)", "without a key"]
        .iter()
        .zip([&compared.a, &compared.b])
    {
        let s = spread(samples);
        row(label, &format!("{:>10.1} {:>10.1}", s.min, s.median));
    }
    row(
        "median of per-round differences",
        &format!("{:>21.1}", compared.difference()),
    );
    Ok(())
}

impl Redis {
    /// One round trip: PING on an open connection, in µs.
    fn ping(&self) -> Outcome<Spread> {
        let mut con = TcpStream::connect(("127.0.0.1", self.port))
            .map_err(|e| format!("cannot connect to redis-server: {e}"))?;
        con.set_nodelay(true).map_err(|e| e.to_string())?;
        let mut answer = [0u8; 7];
        let mut once = || -> Outcome<f64> {
            let started = Instant::now();
            con.write_all(b"PING\r\n")
                .and_then(|()| con.read_exact(&mut answer))
                .map_err(|e| format!("PING: {e}"))?;
            if &answer != b"+PONG\r\n" {
                return Err(format!("PING answered {answer:?}"));
            }
            Ok(micros(started.elapsed()))
        };
        once()?;
        let samples = (0..PING_SAMPLES)
            .map(|_| once())
            .collect::<Outcome<Vec<_>>>()?;
        Ok(spread(&samples))
    }

    /// A new connection's first round trip, as each run makes it: connect, PING, the answer,
    /// each after a pause in which the server falls idle as it does between runs. Not the
    /// target's unit (that is [`Redis::ping`]): what no client that connects anew can go below
    /// on this machine.
    fn fresh(&self) -> Outcome<Spread> {
        let once = || -> Outcome<f64> {
            std::thread::sleep(Duration::from_millis(2));
            let started = Instant::now();
            let mut con = TcpStream::connect(("127.0.0.1", self.port))
                .map_err(|e| format!("cannot connect to redis-server: {e}"))?;
            let mut answer = [0u8; 7];
            con.write_all(b"PING\r\n")
                .and_then(|()| con.read_exact(&mut answer))
                .map_err(|e| format!("PING: {e}"))?;
            Ok(micros(started.elapsed()))
        };
        once()?;
        let samples = (0..FRESH_SAMPLES)
            .map(|_| once())
            .collect::<Outcome<Vec<_>>>()?;
        Ok(spread(&samples))
    }
}

/// The bench run as a bare client: with this variable set to a port, it connects to that
/// port, asks the admission script as a run does, reads the answer and exits; set empty, it
/// exits at once.
const BARE: &str = "RETRY_BENCH_BARE_ADMISSION";

/// What a run asks the store, done by the barest client: a new connection, the admission
/// script by EVALSHA with the arguments a run with the default settings sends for the key
/// `bench`, its whole answer read.
fn bare_admission(port: u16) -> Outcome<()> {
    let sha = include_str!("../src/state/redis.lua.sha1").trim();
    let args = [
        "EVALSHA",
        sha,
        "1",
        "retry:bench",
        "admit",
        "",
        "5",
        "3600000",
        "60000",
        "900000",
        "60000",
        "10000",
        "100",
        "60000",
        "604800000",
    ];
    let mut request = format!("*{}\r\n", args.len());
    for a in args {
        request.push_str(&format!("${}\r\n{a}\r\n", a.len()));
    }
    let mut con = TcpStream::connect(("127.0.0.1", port))
        .map_err(|e| format!("cannot connect to redis-server: {e}"))?;
    con.write_all(request.as_bytes())
        .map_err(|e| format!("EVALSHA: {e}"))?;
    let mut answer = Vec::with_capacity(256);
    let mut chunk = [0u8; 512];
    while !whole_reply(&answer)? {
        let n = con.read(&mut chunk).map_err(|e| format!("EVALSHA: {e}"))?;
        if n == 0 {
            return Err("redis-server closed the connection".into());
        }
        answer.extend_from_slice(&chunk[..n]);
    }
    Ok(())
}

/// This bench as a bare client of `port`, or doing nothing when `None`.
fn bare(port: Option<u16>) -> Outcome<Command> {
    let exe = std::env::current_exe().map_err(|e| format!("where is the bench? {e}"))?;
    let mut command = Command::new(exe);
    command
        .env(BARE, port.map_or(String::new(), |p| p.to_string()))
        .stdin(Stdio::null());
    Ok(command)
}

/// Whether `bytes` hold a whole RESP reply: an array of integers and bulk strings, as the
/// script answers. An error reply (a script the server does not have) is an error.
fn whole_reply(bytes: &[u8]) -> Outcome<bool> {
    let line = |at: usize| -> Option<(&[u8], usize)> {
        let end = bytes.get(at..)?.windows(2).position(|w| w == b"\r\n")?;
        Some((&bytes[at..at + end], at + end + 2))
    };
    let number = |text: &[u8]| -> Outcome<usize> {
        std::str::from_utf8(text)
            .ok()
            .and_then(|t| t.parse().ok())
            .ok_or_else(|| format!("redis-server answered {:?}", String::from_utf8_lossy(bytes)))
    };
    let Some((head, mut at)) = line(0) else {
        return Ok(false);
    };
    match head.first() {
        Some(b'*') => {}
        _ => {
            return Err(format!(
                "redis-server answered {:?}",
                String::from_utf8_lossy(bytes)
            ));
        }
    }
    for _ in 0..number(&head[1..])? {
        let Some((item, next)) = line(at) else {
            return Ok(false);
        };
        at = match item.first() {
            Some(b'$') => next + number(&item[1..])? + 2,
            _ => next,
        };
    }
    Ok(at <= bytes.len())
}

/// What `--state redis://…` adds to `--key` with the local store, in µs, and one round trip.
fn store_section(state: &str) -> Outcome<Option<(f64, f64, f64)>> {
    let Some(redis) = Redis::start(&[])? else {
        println!(
            "6. --state: skipped, redis-server is not installed (apt-get install redis-server)"
        );
        return Ok(None);
    };
    let url = format!("redis://127.0.0.1:{}", redis.port);
    let shared = ["--key", "bench", "--state", &url, "--", "/bin/true"];
    let local = ["--key", "bench", "--state-dir", state, "--", "/bin/true"];
    let compared = pairs(
        STORE_PAIRS,
        || run(&mut retry(&shared), 0).map(|r| micros(r.wall)),
        || run(&mut retry(&local), 0).map(|r| micros(r.wall)),
    )?;
    let ping = redis.ping()?;
    let fresh = redis.fresh()?;
    // The floor: a new process that connects and asks the same script, against one that
    // does nothing.
    let floor = pairs(
        STORE_PAIRS,
        || run(&mut bare(Some(redis.port))?, 0).map(|r| micros(r.wall)),
        || run(&mut bare(None)?, 0).map(|r| micros(r.wall)),
    )?;
    println!("6. what --state redis://127.0.0.1 adds to --key, {STORE_PAIRS} pairs");
    print_compared(
        [
            "retry --key bench --state redis://…",
            "retry --key bench (local store)",
        ],
        &compared,
    );
    row(
        "one round trip (PING)",
        &format!("{:>10.1} {:>10.1}", ping.min, ping.median),
    );
    row(
        "a new connection: connect, PING",
        &format!("{:>10.1} {:>10.1}", fresh.min, fresh.median),
    );
    row(
        "a bare client (new process) adds",
        &format!("{:>21.1}", floor.difference()),
    );
    Ok(Some((
        compared.difference(),
        ping.median,
        floor.difference(),
    )))
}

fn measure() -> Outcome<Figures> {
    let cpus = std::thread::available_parallelism().map_or(0, |n| n.get());
    // The bench is built with the same flags as retry, so this is how retry was linked too.
    let linked = if cfg!(target_feature = "crt-static") {
        "static"
    } else {
        "dynamic"
    };
    let scratch = tempfile::tempdir().map_err(|e| format!("temporary directory: {e}"))?;
    let installed = install(scratch.path())?;
    println!(
        "retry overhead, {cpus} CPUs, {} ({linked}), run as installed: {installed}\n",
        built_bin()
    );
    reference_section()?;
    println!();
    let attempt_ratio = attempt_section()?;
    println!();
    let spawn_c = build_spawn_c(scratch.path())?;
    let disk = (
        read_back(&installed, scratch.path(), "retry-read-back")?,
        read_back(&spawn_c, scratch.path(), "spawn-read-back")?,
    );
    let (startup_ratio, startup_paged) = startup_section(&spawn_c, &disk)?;
    println!();
    let rss_mib = rss_section(&spawn_c, &disk.0)?;
    println!();
    let state = tempfile::tempdir().map_err(|e| format!("temporary directory: {e}"))?;
    let state_dir = state.path().display().to_string();
    let key_micros = key_section(&state_dir)?;
    println!();
    crowd_section(&state_dir)?;
    println!();
    let store = store_section(&state_dir)?;
    println!();
    Ok(Figures {
        attempt_ratio,
        startup_ratio,
        startup_paged,
        rss_mib,
        key_micros,
        store,
    })
}

fn main() -> ExitCode {
    if let Some(port) = std::env::var_os(BARE) {
        let port = port.to_str().and_then(|p| p.parse().ok());
        return match port.map_or(Ok(()), bare_admission) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("overhead: {e}");
                ExitCode::FAILURE
            }
        };
    }
    match measure() {
        Ok(figures) => {
            print_summary(&figures);
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("overhead: {e}");
            ExitCode::FAILURE
        }
    }
}
