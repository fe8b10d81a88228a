//! Replaying stdin: 256 MiB through a pipe into `retry --stdin replay` whose command reads all
//! of it and fails once, so the second attempt is fed the same bytes again from retry's record:
//! 512 MiB delivered. Against it, pair by pair, `cat` moving the same 512 MiB through a pipe. It
//! prints the median of the per-pair ratios of their times, retry's throughput and its peak
//! RSS, which must stay bounded (the record goes to a temporary file past 1 MiB); first on
//! the machine as it is, then with two threads spinning on its cores, as on a busy CI host.
//! Goal: 1 GB/s delivered or within 2x of cat, and a peak RSS of 16 MiB at most, both times.

// A benchmark that cannot set up its measurement fails at once, where it stands.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::Write;
use std::os::unix::process::ExitStatusExt;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::thread;
use std::time::{Duration, Instant};

const BLOCK: usize = 1 << 20;

/// A MiB of bytes that no compression or zero page can shortcut.
fn block() -> Vec<u8> {
    let mut x = 0x9e37_79b9_u32;
    (0..BLOCK)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            x as u8
        })
        .collect()
}

/// Runs `command` with `total` bytes on its stdin; returns its status, wall time and peak RSS.
// The child is reaped by wait4, which also reads its peak RSS; clippy cannot see that.
#[allow(clippy::zombie_processes)]
fn feed(mut command: Command, total: u64) -> (ExitStatus, Duration, u64) {
    let started = Instant::now();
    let mut child: Child = command
        .stdin(Stdio::piped())
        .spawn()
        .expect("start the command");
    let mut stdin = child.stdin.take().expect("a stdin pipe");
    let writer = thread::spawn(move || {
        let data = block();
        let mut left = total;
        while left > 0 {
            let n = left.min(BLOCK as u64) as usize;
            stdin.write_all(&data[..n]).expect("write stdin");
            left -= n as u64;
        }
    });
    let (status, rss) = wait4(&child);
    let elapsed = started.elapsed();
    writer.join().expect("the writer");
    (status, elapsed, rss)
}

/// Waits for `child` and reads its own peak RSS, in bytes (not its children's).
fn wait4(child: &Child) -> (ExitStatus, u64) {
    let mut raw = 0;
    // SAFETY: an all-zero rusage is a valid value for wait4 to fill in.
    let mut usage: nix::libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: wait4 on our own child, with valid pointers.
    let pid = unsafe { nix::libc::wait4(child.id() as i32, &mut raw, 0, &mut usage) };
    assert_eq!(pid, child.id() as i32, "wait4 failed");
    (ExitStatus::from_raw(raw), usage.ru_maxrss as u64 * 1024)
}

fn mib_per_s(bytes: u64, time: Duration) -> f64 {
    bytes as f64 / (1 << 20) as f64 / time.as_secs_f64()
}

const SIZE: u64 = 256 << 20;
/// Pairs of runs, each side alternating first.
const PAIRS: usize = 5;

fn median(mut samples: Vec<f64>) -> f64 {
    samples.sort_by(f64::total_cmp);
    let mid = samples.len() / 2;
    if samples.len() % 2 == 1 {
        samples[mid]
    } else {
        (samples[mid - 1] + samples[mid]) / 2.0
    }
}

fn cat() -> (Duration, u64) {
    let mut cat = Command::new("cat");
    cat.stdout(Stdio::null());
    let (status, time, rss) = feed(cat, 2 * SIZE);
    assert!(status.success(), "cat failed: {status:?}");
    (time, rss)
}

fn retry() -> (Duration, u64) {
    // Another build may be measured in the same conditions: RETRY_BENCH_BIN names it.
    let bin = std::env::var("RETRY_BENCH_BIN")
        .unwrap_or_else(|_| env!("CARGO_BIN_EXE_retry").to_string());
    let mut retry = Command::new(bin);
    retry.args([
        "-n",
        "2",
        "-d",
        "0",
        "-qq",
        "--stdin",
        "replay",
        "--",
        "sh",
        "-c",
        "cat >/dev/null; [ \"$RETRY_ATTEMPT\" = 2 ]",
    ]);
    let (status, time, rss) = feed(retry, SIZE);
    assert!(status.success(), "retry failed: {status:?}");
    (time, rss)
}

/// Threads that keep every core busy until dropped.
struct Busy {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    threads: Vec<thread::JoinHandle<()>>,
}

impl Busy {
    fn start() -> Busy {
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let cores = thread::available_parallelism().map_or(2, |n| n.get());
        let threads = (0..cores)
            .map(|_| {
                let stop = stop.clone();
                thread::spawn(move || {
                    let mut x = 1u64;
                    while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                        for _ in 0..10_000 {
                            x = std::hint::black_box(x.wrapping_mul(6_364_136_223_846_793_005) + 1);
                        }
                    }
                })
            })
            .collect();
        Busy { stop, threads }
    }
}

impl Drop for Busy {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

/// Runs the pairs; returns whether both goals were met.
fn compare(title: &str) -> bool {
    let mut ratios = Vec::new();
    let mut cat_times = Vec::new();
    let mut retry_times = Vec::new();
    let mut rss = 0;
    for i in 0..PAIRS {
        let ((c, _), (r, m)) = if i % 2 == 0 {
            let c = cat();
            (c, retry())
        } else {
            let r = retry();
            (cat(), r)
        };
        ratios.push(r.as_secs_f64() / c.as_secs_f64());
        cat_times.push(c.as_secs_f64());
        retry_times.push(r.as_secs_f64());
        rss = rss.max(m);
    }
    let delivered = 2 * SIZE;
    let cat_time = Duration::from_secs_f64(median(cat_times));
    let retry_time = Duration::from_secs_f64(median(retry_times));
    let ratio = median(ratios);
    let gb_per_s = delivered as f64 / 1e9 / retry_time.as_secs_f64();
    println!("{title}: 256 MiB through a pipe, read twice (512 MiB), {PAIRS} pairs, medians");
    println!(
        "  cat, the same 512 MiB:         {:>7.3} s  {:>7.0} MiB/s",
        cat_time.as_secs_f64(),
        mib_per_s(delivered, cat_time)
    );
    println!(
        "  retry, two attempts:           {:>7.3} s  {:>7.0} MiB/s  {gb_per_s:.2} GB/s",
        retry_time.as_secs_f64(),
        mib_per_s(delivered, retry_time)
    );
    let mib = rss as f64 / (1 << 20) as f64;
    println!("  median of per-pair ratios:     {ratio:>7.2}x cat's time");
    println!("  retry's peak RSS (largest):    {mib:>7.1} MiB");
    let fast = gb_per_s >= 1.0 || ratio <= 2.0;
    let small = rss <= 16 << 20;
    println!(
        "  goal 1 GB/s or within 2x cat:  {}",
        if fast { "met" } else { "MISSED" }
    );
    println!(
        "  peak RSS bound 16 MiB:         {}",
        if small { "met" } else { "MISSED" }
    );
    fast && small
}

fn main() {
    compare("quiet");
    println!();
    let busy = Busy::start();
    compare("busy (a spinning thread per core)");
    drop(busy);
}
