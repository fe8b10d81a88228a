//! What retry itself costs, beside what it runs, and how far that is from what C and Rust
//! themselves cost. In one run:
//!
//! 1. Per-attempt overhead at zero delay: `retry -n N -d 0 -qq -- /bin/false` (N failing
//!    attempts) against a C program that posix_spawns `/bin/false` N times, waiting for each,
//!    the least any retry loop can do. Target: retry/loop ≤ 1.03.
//! 2. Start-up, one successful attempt: `retry -- /bin/true`, run from a copy of the build as
//!    `cargo install` makes it, round by round beside the references the bench builds itself:
//!    a C program that posix_spawns its argument and waits for it, linked statically (the least
//!    a wrapper can do) and dynamically (as an ordinary C program is), and a Rust program that
//!    does the same with `Command::status`, built with retry's release profile (what Rust itself
//!    costs); GNU `timeout 60 /bin/true` for scale. Each with its page faults (wait4's
//!    ru_minflt, the child's included). Then retry and the static C program again, both read
//!    back from disk. Target: ≤ 1.55 the static C program, for the ordinary build (a PIE,
//!    glibc linked dynamically).
//! 3. retry's own peak RSS, read with wait4 on its pid (RUSAGE_CHILDREN would mix in the
//!    attempts it ran), beside each reference's. Target: ≤ 3.5 MiB.
//! 4. What `--key` adds: `retry --key K -- /bin/true` against `retry -- /bin/true`, the median
//!    of per-pair differences. Target: ≤ 0.1 ms.
//! 5. 50 processes that update one key at once (three failing attempts each, so each takes two
//!    tokens: two writes under the key's lock), against the same 50 without a key.
//! 6. What `--state redis://127.0.0.1:PORT` adds to `retry --key K -- /bin/true` against the
//!    local store, the median of per-pair differences, beside one bare round trip to the same
//!    server (PING on an open connection). Target: within 60 µs of the barest client's floor
//!    (below). Beside them, for scale, what a new connection's first round trip costs
//!    (connect, then PING, the server idle before it), which every run pays and no client can
//!    avoid; and what the barest client adds to a process for what a run asks: this bench run
//!    anew as a process that connects, sends the same admission script (written and read by
//!    hand over a `TcpStream`, no Redis library) and exits, against the same process exiting
//!    at once, pair by pair. That is the floor for any client that connects once per run. The
//!    bench starts its own `redis-server` (benches/support/redis.rs; and says so and skips
//!    this when there is none).
//! 7. Stdin replayed: 64 MiB through a pipe into `retry --stdin replay` whose command reads it
//!    whole and fails once, against `cat` moving the same bytes twice. Target: ≤ 2× cat's
//!    time. (`cargo bench --bench replay` measures 256 MiB, and again with every core busy.)
//!
//! The cost of one bare spawn and wait of `/bin/true` is printed too, as the unit everything
//! else is made of.
//!
//! A busy machine makes every spawn slower for a while, so the sides of a comparison are run
//! round by round, in turns (which one goes first moves along too), and the figures reported
//! are the ratio of the minimums and the median of the per-round ratios: a burst of noise then
//! slows every side of the rounds it falls on, rather than one side of the whole comparison. A miss is printed, not fatal; a
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

use std::io::{self, Read, Write};
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
const STARTUP_TARGET: f64 = 1.55;
const RSS_TARGET_MIB: f64 = 3.5;
/// MiB of stdin replayed to two attempts.
const REPLAY_MIB: usize = 64;
/// Pairs of runs in the replay comparison.
const REPLAY_PAIRS: usize = 5;
/// Replay's time against cat moving the same bytes.
const REPLAY_TARGET: f64 = 2.0;
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

    /// The ratio of the minimums, a/b.
    fn min_ratio(&self) -> f64 {
        spread(&self.a).min / spread(&self.b).min
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

/// One way of running a measured command, its time in µs.
type Timed<'a> = Box<dyn FnMut() -> Outcome<f64> + 'a>;

/// Times each of `runs` once a round, `count` rounds, after one run each for the page cache
/// and the dynamic loader. The one that goes first moves along from round to round, so that
/// each meets a burst of load at every place in the round. The samples, run by run.
fn rounds(count: usize, runs: &mut [Timed<'_>]) -> Outcome<Vec<Vec<f64>>> {
    for run in runs.iter_mut() {
        run()?;
    }
    let n = runs.len();
    let mut samples = vec![Vec::with_capacity(count); n];
    for round in 0..count {
        for k in 0..n {
            let i = (round + k) % n;
            samples[i].push(runs[i]()?);
        }
    }
    Ok(samples)
}

/// Times `a` and `b` in `count` pairs, the one that goes first alternating from pair to pair.
fn pairs(
    count: usize,
    a: impl FnMut() -> Outcome<f64>,
    b: impl FnMut() -> Outcome<f64>,
) -> Outcome<Compared> {
    let mut samples = rounds(count, &mut [Box::new(a), Box::new(b)])?.into_iter();
    match (samples.next(), samples.next()) {
        (Some(a), Some(b)) => Ok(Compared { a, b }),
        _ => Err("a pair without two sides".into()),
    }
}

/// One bare spawn and wait of /bin/true, in µs.
fn bare_spawn() -> Outcome<Spread> {
    spawn_loop("/bin/true", 1, 0)?;
    let samples = (0..SPAWN_SAMPLES)
        .map(|_| spawn_loop("/bin/true", 1, 0).map(micros))
        .collect::<Outcome<Vec<_>>>()?;
    Ok(spread(&samples))
}

/// Time per attempt, in µs: retry's N attempts against the C loop's N spawns of the same child.
fn per_attempt(refs: &References) -> Outcome<Compared> {
    let n = ATTEMPTS.to_string();
    let per = |d: Duration| micros(d) / f64::from(ATTEMPTS);
    pairs(
        ATTEMPT_PAIRS,
        || {
            let mut command = retry(&["-n", &n, "-d", "0", "-qq", "--", "/bin/false"]);
            run(&mut command, 1).map(|r| per(r.wall))
        },
        || {
            let mut command = Command::new(&refs.spawn_loop);
            command.args([&n, "/bin/false"]).stdin(Stdio::null());
            run(&mut command, 1).map(|r| per(r.wall))
        },
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

/// The least a retry loop can do: `spawn-loop N COMMAND [ARG...]` posix_spawns the command N
/// times, waiting for each; its status is the last one's.
const SPAWN_LOOP_C: &str = r#"
#include <spawn.h>
#include <stdlib.h>
#include <sys/wait.h>
extern char **environ;
int main(int argc, char **argv) {
    pid_t pid;
    int status = 0;
    if (argc < 3) return 127;
    for (long i = atol(argv[1]); i > 0; i--) {
        if (posix_spawn(&pid, argv[2], 0, 0, argv + 2, environ) != 0) return 127;
        while (waitpid(pid, &status, 0) < 0) {}
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}
"#;

/// What Rust itself costs a wrapper: spawn the command with std and wait, nothing else. Built
/// with retry's release profile, so that retry's distance from it is retry's own.
const SPAWN_RS: &str = r#"
use std::process::{Command, ExitCode};
fn main() -> ExitCode {
    let mut args = std::env::args_os().skip(1);
    let Some(program) = args.next() else { return ExitCode::from(127) };
    match Command::new(program).args(args).status() {
        Ok(status) => ExitCode::from(status.code().map_or(128, |c| c as u8)),
        Err(_) => ExitCode::from(127),
    }
}
"#;

/// The references, built by the bench in its own directory.
struct References {
    /// [`SPAWN_C`] linked statically: the least any wrapper can cost.
    static_c: String,
    /// The same, linked as an ordinary C program is (a PIE, glibc dynamically), as retry is.
    dynamic_c: String,
    /// [`SPAWN_RS`] with retry's release profile.
    rust: String,
    /// [`SPAWN_LOOP_C`], linked dynamically.
    spawn_loop: String,
}

/// Runs a compiler; `what` says what for, in the error.
fn compile(command: &mut Command, what: &str) -> Outcome<()> {
    let status = command
        .status()
        .map_err(|e| format!("cannot run {command:?} for {what}: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("{command:?} could not build {what} ({status})"))
    }
}

/// Builds the references in `dir`.
fn build_references(dir: &std::path::Path) -> Outcome<References> {
    let path = |name: &str| dir.join(name).display().to_string();
    let write = |name: &str, text: &str| {
        std::fs::write(dir.join(name), text).map_err(|e| format!("write {name}: {e}"))
    };
    write("spawn.c", SPAWN_C)?;
    write("spawn-loop.c", SPAWN_LOOP_C)?;
    write("spawn.rs", SPAWN_RS)?;
    let refs = References {
        static_c: path("spawn-static"),
        dynamic_c: path("spawn-dynamic"),
        rust: path("spawn-rust"),
        spawn_loop: path("spawn-loop"),
    };
    let cc = |flags: &[&str], out: &str, source: &str| {
        let mut command = Command::new("cc");
        command
            .arg("-O2")
            .args(flags)
            .args(["-o", out, &path(source)]);
        command
    };
    compile(
        &mut cc(&["-static"], &refs.static_c, "spawn.c"),
        "the static C reference (cc -static needs glibc's static library, libc6-dev)",
    )?;
    compile(
        &mut cc(&[], &refs.dynamic_c, "spawn.c"),
        "the dynamic C reference",
    )?;
    compile(
        &mut cc(&[], &refs.spawn_loop, "spawn-loop.c"),
        "the C spawn loop",
    )?;
    // retry's [profile.release], as rustc flags.
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let mut rust = Command::new(rustc);
    rust.args(["--edition", "2024", "-C", "opt-level=3", "-C", "lto=fat"])
        .args([
            "-C",
            "codegen-units=1",
            "-C",
            "strip=symbols",
            "-C",
            "panic=abort",
        ])
        .args(["-o", &refs.rust, &path("spawn.rs")]);
    compile(&mut rust, "the Rust reference")?;
    Ok(refs)
}

/// A reference spawning /bin/true, set up as `retry` is.
fn reference_true(program: &str) -> Command {
    let mut command = Command::new(program);
    command.arg("/bin/true").stdin(Stdio::null());
    command
}

/// What the start-up section found: retry against each reference, each as (ratio of the
/// minimums, median of the per-round ratios).
struct Startup {
    static_c: (f64, f64),
    dynamic_c: (f64, f64),
    rust: (f64, f64),
    /// retry against the static C program, both read back from disk.
    read_back: (f64, f64),
}

/// `a` against `b`, round by round: the ratio of the minimums, the median of the ratios.
fn against(a: &[f64], b: &[f64]) -> (f64, f64) {
    let compared = Compared {
        a: a.to_vec(),
        b: b.to_vec(),
    };
    (compared.min_ratio(), compared.ratio())
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
    let min = compared.min_ratio();
    row("ratio of the minimums", &format!("{min:>21.3}"));
}

/// The figures, each against its target.
struct Figures {
    attempt_ratio: f64,
    startup: Startup,
    rss_mib: f64,
    key_micros: f64,
    /// What `--state` adds, one round trip, and what a bare client adds; `None` without
    /// redis-server.
    store: Option<(f64, f64, f64)>,
    /// Replay's time against cat's, median of pairs.
    replay_ratio: f64,
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
    let (min, med) = f.startup.static_c;
    line(
        "one run, as just installed / static C",
        format!("{med:.3}"),
        format!("≤ {STARTUP_TARGET:.2}"),
        med <= STARTUP_TARGET,
    );
    let (_, paged) = f.startup.read_back;
    line(
        "the same, both read back from disk",
        format!("{paged:.3}"),
        format!("≤ {STARTUP_TARGET:.2}"),
        paged <= STARTUP_TARGET,
    );
    // For scale, no target: how far retry is from what C and Rust themselves cost.
    let scale = |label: &str, (min, med): (f64, f64)| {
        row(label, &format!("{med:>10.3}   (minimums: {min:.3})"));
    };
    scale("  one run / static C", (min, med));
    scale("  one run / dynamic C", f.startup.dynamic_c);
    scale("  one run / Rust Command::status", f.startup.rust);
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
    line(
        "stdin replay, time / cat's",
        format!("{:.2}", f.replay_ratio),
        format!("≤ {REPLAY_TARGET:.2}"),
        f.replay_ratio <= REPLAY_TARGET,
    );
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

fn attempt_section(refs: &References) -> Outcome<f64> {
    let attempts = per_attempt(refs)?;
    println!(
        "1. time per attempt at zero delay: {ATTEMPTS} failing attempts, {ATTEMPT_PAIRS} pairs"
    );
    let retry_label = format!("retry -n {ATTEMPTS} -d 0 -qq -- /bin/false");
    let loop_label = format!("C loop of {ATTEMPTS} posix_spawns");
    print_compared([&retry_label, &loop_label], &attempts);
    Ok(attempts.ratio())
}

/// Runs `command` with `bytes` of data written to its stdin, to its end, which must be exit
/// status `expected`.
fn fed(command: &mut Command, bytes: usize, expected: i32) -> Outcome<Run> {
    // Bytes that no zero page or compression can shortcut.
    let mut x = 0x9e37_79b9_u32;
    let block: Vec<u8> = (0..1 << 20)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            x as u8
        })
        .collect();
    command.stdin(Stdio::piped()).stdout(Stdio::null());
    let started = Instant::now();
    let mut child = command
        .spawn()
        .map_err(|e| format!("cannot run {command:?}: {e}"))?;
    let mut stdin = child.stdin.take().ok_or("no stdin pipe")?;
    let writer = std::thread::spawn(move || -> io::Result<()> {
        let mut left = bytes;
        while left > 0 {
            let n = left.min(block.len());
            stdin.write_all(&block[..n])?;
            left -= n;
        }
        Ok(())
    });
    let (status, usage) = wait4(child.id())?;
    let wall = started.elapsed();
    writer
        .join()
        .map_err(|_| "the writer panicked".to_string())?
        .map_err(|e| format!("writing to {command:?}: {e}"))?;
    check(command, status, expected)?;
    Ok(Run {
        wall,
        max_rss_mib: usage.ru_maxrss as f64 / 1024.0,
        faults: 0.0,
    })
}

/// Stdin replayed: `REPLAY_MIB` through a pipe into two attempts that each read it whole,
/// against cat moving twice as many bytes; the median of the per-pair ratios of their times.
/// (`cargo bench --bench replay` measures 256 MiB, and again with every core busy.)
fn replay_section() -> Outcome<f64> {
    let bytes = REPLAY_MIB << 20;
    let mut rss: f64 = 0.0;
    let compared = pairs(
        REPLAY_PAIRS,
        || {
            let mut command = retry(&["-n", "2", "-d", "0", "-qq", "--stdin", "replay", "--"]);
            command.args(["sh", "-c", "cat >/dev/null; [ \"$RETRY_ATTEMPT\" = 2 ]"]);
            let r = fed(&mut command, bytes, 0)?;
            rss = rss.max(r.max_rss_mib);
            Ok(micros(r.wall) / 1e3)
        },
        || fed(&mut Command::new("cat"), 2 * bytes, 0).map(|r| micros(r.wall) / 1e3),
    )?;
    println!("7. stdin replay: {REPLAY_MIB} MiB read whole by two attempts, {REPLAY_PAIRS} pairs");
    row("", &format!("{:>10} {:>10}", "min ms", "median ms"));
    for (label, samples) in [
        "retry --stdin replay, 2 attempts",
        "cat, the same bytes twice",
    ]
    .iter()
    .zip([&compared.a, &compared.b])
    {
        let s = spread(samples);
        row(label, &format!("{:>10.1} {:>10.1}", s.min, s.median));
    }
    row(
        "median of per-pair ratios",
        &format!("{:>21.3}", compared.ratio()),
    );
    row(
        "ratio of the minimums",
        &format!("{:>21.3}", compared.min_ratio()),
    );
    row("retry's peak RSS", &format!("{rss:>10.2} MiB"));
    Ok(compared.ratio())
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

/// How one of the commands compared is made, afresh for each run.
type Maker<'a> = Box<dyn Fn() -> Command + 'a>;

fn startup_section(refs: &References, disk: &(String, String)) -> Outcome<Startup> {
    let subjects: [(&str, Maker<'_>); 5] = [
        (
            "retry -- /bin/true",
            Box::new(|| retry(&["--", "/bin/true"])),
        ),
        (
            "static C posix_spawn+wait",
            Box::new(|| reference_true(&refs.static_c)),
        ),
        (
            "dynamic C posix_spawn+wait",
            Box::new(|| reference_true(&refs.dynamic_c)),
        ),
        (
            "Rust Command::status, release profile",
            Box::new(|| reference_true(&refs.rust)),
        ),
        ("timeout 60 /bin/true", Box::new(timeout_true)),
    ];
    let mut faults = vec![Vec::new(); subjects.len()];
    let mut runs: Vec<Timed<'_>> = subjects
        .iter()
        .zip(faults.iter_mut())
        .map(|((_, make), faults)| {
            Box::new(move || {
                let r = run(&mut make(), 0)?;
                faults.push(r.faults);
                Ok(micros(r.wall))
            }) as Timed<'_>
        })
        .collect();
    let times = rounds(STARTUP_PAIRS, &mut runs)?;
    drop(runs);
    println!(
        "2. time for one successful run, {STARTUP_PAIRS} rounds, each running all {} in turn",
        subjects.len()
    );
    row(
        "",
        &format!(
            "{:>10} {:>10} {:>7}   {:>16}",
            "min µs", "median µs", "faults", "÷ static C: min, median of rounds"
        ),
    );
    for (i, (label, _)) in subjects.iter().enumerate() {
        let s = spread(&times[i]);
        // The warm-up run's faults (the first) are left out, as its time is.
        let f = median(faults[i][1..].to_vec());
        let (min, med) = against(&times[i], &times[1]);
        row(
            label,
            &format!(
                "{:>10.1} {:>10.1} {f:>7.0}   {min:>8.3} {med:>8.3}",
                s.min, s.median
            ),
        );
    }
    let rust = against(&times[0], &times[3]);
    row(
        "retry ÷ the Rust program: min, median",
        &format!("{:>10.3} {:>10.3}", rust.0, rust.1),
    );
    // Both read back from disk (see `install` and `read_back`).
    let read = pairs(
        STARTUP_PAIRS,
        || run(&mut retry_at(&disk.0, &["--", "/bin/true"]), 0).map(|r| micros(r.wall)),
        || run(&mut reference_true(&disk.1), 0).map(|r| micros(r.wall)),
    )?;
    row(
        "both read back from disk: retry ÷ static C",
        &format!("{:>10.3} {:>10.3}", read.min_ratio(), read.ratio()),
    );
    Ok(Startup {
        static_c: against(&times[0], &times[1]),
        dynamic_c: against(&times[0], &times[2]),
        rust,
        read_back: (read.min_ratio(), read.ratio()),
    })
}

/// Prints the peak RSS of the retry commands and of each reference; returns retry's largest.
fn rss_section(refs: &References, read_back: &str) -> Outcome<f64> {
    println!("3. peak RSS of the process itself (wait4 ru_maxrss, largest of {RSS_RUNS} runs)");
    // wait4's figure is the larger of the process's own and its waited-for children's.
    println!("   (a figure at /bin/true's own is the command's, not the wrapper's)");
    let failing = ["-n", "3", "-d", "0", "-qq", "--", "/bin/false"];
    let attempts = rss_row("retry -n 3 -d 0 -qq -- /bin/false", retry(&failing), 1)?;
    let success = rss_row("retry -- /bin/true", retry(&["--", "/bin/true"]), 0)?;
    let read = retry_at(read_back, &["--", "/bin/true"]);
    let read = rss_row("the same, read back from disk", read, 0)?;
    rss_row(
        "static C posix_spawn+wait",
        reference_true(&refs.static_c),
        0,
    )?;
    rss_row(
        "dynamic C posix_spawn+wait",
        reference_true(&refs.dynamic_c),
        0,
    )?;
    rss_row("Rust Command::status", reference_true(&refs.rust), 0)?;
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
    let refs = build_references(scratch.path())?;
    let attempt_ratio = attempt_section(&refs)?;
    println!();
    let disk = (
        read_back(&installed, scratch.path(), "retry-read-back")?,
        read_back(&refs.static_c, scratch.path(), "spawn-read-back")?,
    );
    let startup = startup_section(&refs, &disk)?;
    println!();
    let rss_mib = rss_section(&refs, &disk.0)?;
    println!();
    let state = tempfile::tempdir().map_err(|e| format!("temporary directory: {e}"))?;
    let state_dir = state.path().display().to_string();
    let key_micros = key_section(&state_dir)?;
    println!();
    crowd_section(&state_dir)?;
    println!();
    let store = store_section(&state_dir)?;
    println!();
    let replay_ratio = replay_section()?;
    println!();
    Ok(Figures {
        attempt_ratio,
        startup,
        rss_mib,
        key_micros,
        store,
        replay_ratio,
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
