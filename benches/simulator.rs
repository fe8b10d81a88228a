//! The fleet simulator's time and memory, each figure beside a reference measured in the same
//! run (issue #37):
//!
//! 1. The largest, densest fleet `--explain --fleet` allows (docs/simulator.md): `retry
//!    --explain --fleet 100000 --outage 1h --every 10s -- true`, the built binary run as a
//!    process: its wall time, its CPU time and its peak RSS (wait4 on its pid). Targets: ≤ 10 s
//!    and ≤ 256 MiB on a two-core machine.
//! 2. What it was: the four variants of the same explanation at 5,000 processes (a twentieth
//!    of its runs of the job), simulated by `retry::sim::exact` (the single queue the
//!    simulator was, one variant after another, as `--explain --fleet` ran them) and by
//!    `retry::sim::fleet::simulate` (also one variant after another, on one thread: the
//!    simulation's own speed-up, without the second core), each in a process of its own so
//!    that its peak RSS is its own; then the same fleet through `retry --explain` (the
//!    variants side by side on the machine's cores). The figures of the four rows both ways
//!    are printed beside each other: at 5,000 processes each variant is stepped in groups,
//!    so they differ as two seeds would.
//! 3. With `RETRY_BENCH_BIN` naming another build of retry (an older one), case 1 through it
//!    too, in the same conditions; the version before this simulator took 488 s.
//!
//! `cargo bench --bench simulator`; `cargo bench --bench simulator -- quick` compares the
//! two simulators at 1,000 processes instead of 5,000.

// A benchmark that cannot set up its measurement fails at once, where it stands.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "support/wait4.rs"]
mod support;
use support::wait4;

use std::io;
use std::process::{Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

use nix::libc;
use retry::policy::Policy;
use retry::policy::backoff::Jitter;
use retry::policy::shared::KeyRules;
use retry::sim::fleet::{Report, Sharing, World};

/// The fleet of case 1, as flags.
const LARGEST: [&str; 6] = ["--fleet", "100000", "--outage", "1h", "--every", "10s"];

/// A process measured: how long it took, its CPU time, and its own peak RSS.
struct Measured {
    wall: Duration,
    cpu: Duration,
    max_rss_mib: f64,
    stdout: String,
}

/// Runs `command` to its end, which must be a success, measuring it.
fn measure(command: &mut Command) -> Result<Measured, String> {
    let started = Instant::now();
    let mut child = command
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .map_err(|e| format!("cannot run {command:?}: {e}"))?;
    // The output is a table or a line: far less than a pipe holds.
    let stdout = child.stdout.take();
    let (status, usage) = wait4(child.id())?;
    let wall = started.elapsed();
    if !status.success() {
        return Err(format!("{command:?} ended with {status}"));
    }
    let mut out = String::new();
    if let Some(mut pipe) = stdout {
        io::Read::read_to_string(&mut pipe, &mut out).map_err(|e| e.to_string())?;
    }
    let time = |t: libc::timeval| {
        Duration::from_secs(t.tv_sec.unsigned_abs())
            + Duration::from_micros(t.tv_usec.unsigned_abs())
    };
    Ok(Measured {
        wall,
        cpu: time(usage.ru_utime) + time(usage.ru_stime),
        // ru_maxrss is in KiB on Linux.
        max_rss_mib: usage.ru_maxrss as f64 / 1024.0,
        stdout: out,
    })
}

/// The retry built, or another given in `RETRY_BENCH_BIN`.
fn bin(other: bool) -> Option<String> {
    if other {
        std::env::var("RETRY_BENCH_BIN")
            .ok()
            .filter(|b| !b.is_empty())
    } else {
        Some(env!("CARGO_BIN_EXE_retry").to_string())
    }
}

/// `retry --explain` with these fleet flags, measured.
fn explain(bin: &str, fleet: &[&str]) -> Result<Measured, String> {
    measure(Command::new(bin).arg("--explain").args(fleet).args([
        "--log-format",
        "json",
        "--",
        "true",
    ]))
}

/// The variants `--explain --fleet` simulates of a policy without a key.
fn variants(policy: &Policy) -> Vec<(&'static str, Policy, Sharing, Option<KeyRules>)> {
    let mut plain = policy.clone();
    plain.backoff.jitter = Jitter::None;
    let keyed = KeyRules::default();
    vec![
        ("this policy", policy.clone(), Sharing::None, None),
        ("without jitter", plain, Sharing::None, None),
        (
            "with --key (each host)",
            policy.clone(),
            Sharing::PerHost,
            Some(keyed.clone()),
        ),
        (
            "with --key --state",
            policy.clone(),
            Sharing::Fleet,
            Some(keyed),
        ),
    ]
}

/// The world of `--explain --fleet N --outage 1h --every 10s`.
fn world(processes: usize) -> World {
    World {
        processes,
        hosts: processes,
        every: Duration::from_secs(10),
        splay: Duration::from_secs(10),
        repeat: true,
        outage: Duration::from_secs(3600),
        call: retry::sim::fleet::CALL,
        seed: 1,
        store: None,
    }
}

/// In a child process: simulates the four variants one after another, `exact` or not, and
/// prints each row's figures on a line.
fn child(exact: bool, processes: usize) -> Result<(), String> {
    let policy = retry::setup::from_flags(&[])?;
    let world = world(processes);
    for (name, policy, sharing, state) in variants(&policy) {
        let r: Report = if exact {
            retry::sim::exact::simulate(&policy, sharing, state.as_ref(), &world)
        } else {
            retry::sim::fleet::simulate(&policy, sharing, state.as_ref(), &world)
        };
        println!(
            "{name:<24}{:>11} {:>10} {:>9} {:>10}",
            r.calls_during, r.calls_after, r.peak_per_second, r.refused
        );
    }
    Ok(())
}

fn mib(m: &Measured) -> String {
    format!("{:.1} MiB", m.max_rss_mib)
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    if let Some(i) = args.iter().position(|a| a == "child") {
        let exact = args.get(i + 1).is_some_and(|a| a == "exact");
        let processes = args.get(i + 2).and_then(|n| n.parse().ok()).unwrap_or(1000);
        return match child(exact, processes) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("simulator: {e}");
                ExitCode::FAILURE
            }
        };
    }
    match bench(args.iter().any(|a| a == "quick")) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("simulator: {e}");
            ExitCode::FAILURE
        }
    }
}

fn bench(quick: bool) -> Result<(), String> {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    println!("The fleet simulator, on {cores} cores\n");
    let built = bin(false).unwrap_or_default();
    let largest = explain(&built, &LARGEST)?;
    println!(
        "1. retry --explain {} -- true: {:.2} s ({:.2} s of CPU), {} peak RSS \
         (targets: 10 s, 256 MiB)",
        LARGEST.join(" "),
        largest.wall.as_secs_f64(),
        largest.cpu.as_secs_f64(),
        mib(&largest)
    );
    let processes = if quick { 1000 } else { 5000 };
    let me = std::env::current_exe().map_err(|e| e.to_string())?;
    let run = |exact: bool| {
        measure(
            Command::new(&me)
                .args(["child", if exact { "exact" } else { "fast" }])
                .arg(processes.to_string()),
        )
    };
    let (single, grouped) = (run(true)?, run(false)?);
    let fleet = processes.to_string();
    let flags = ["--fleet", &fleet, "--outage", "1h", "--every", "10s"];
    let threaded = explain(&built, &flags)?;
    println!(
        "\n2. The four variants of --explain {}, one after another:\n\
         \x20  the single queue (sim::exact, as it was):  {:>7.2} s, {}\n\
         \x20  in groups (sim::fleet::simulate):         {:>7.2} s, {}  (x{:.1} faster)\n\
         \x20  retry --explain, the variants side by side: {:.2} s ({:.2} s of CPU), {}",
        flags.join(" "),
        single.wall.as_secs_f64(),
        mib(&single),
        grouped.wall.as_secs_f64(),
        mib(&grouped),
        single.wall.as_secs_f64() / grouped.wall.as_secs_f64().max(1e-9),
        threaded.wall.as_secs_f64(),
        threaded.cpu.as_secs_f64(),
        mib(&threaded),
    );
    println!(
        "\n   {:<24}{:>11} {:>10} {:>9} {:>10}",
        "", "in outage", "after", "peak/s", "refused"
    );
    for (a, b) in single.stdout.lines().zip(grouped.stdout.lines()) {
        println!("   one queue  {a}\n   in groups  {b}");
    }
    if let Some(other) = bin(true) {
        let then = explain(&other, &LARGEST)?;
        println!(
            "\n3. {other} --explain {} -- true: {:.2} s ({:.2} s of CPU), {} (this build: \
             x{:.1} faster)",
            LARGEST.join(" "),
            then.wall.as_secs_f64(),
            then.cpu.as_secs_f64(),
            mib(&then),
            then.wall.as_secs_f64() / largest.wall.as_secs_f64().max(1e-9)
        );
    }
    Ok(())
}
