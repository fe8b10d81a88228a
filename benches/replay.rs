//! Replaying stdin: 1 GiB through a pipe into `retry --stdin replay` whose command reads all of
//! it and fails once, so the second attempt is fed the same GiB again from retry's record: 2 GiB
//! delivered. It prints retry's throughput beside `cat` moving the same 2 GiB in the same run,
//! and retry's peak RSS, which must stay bounded (the record goes to a temporary file past
//! 1 MiB). Goal: 1 GB/s delivered or within 4x of cat, and a peak RSS of 16 MiB at most.

// A benchmark that cannot set up its measurement fails at once, where it stands.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::Write;
use std::os::unix::process::ExitStatusExt;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::thread;
use std::time::{Duration, Instant};

const GIB: u64 = 1 << 30;
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

fn main() {
    let mut cat = Command::new("cat");
    cat.stdout(Stdio::null());
    let (status, cat_time, cat_rss) = feed(cat, 2 * GIB);
    assert!(status.success(), "cat failed: {status:?}");

    let mut retry = Command::new(env!("CARGO_BIN_EXE_retry"));
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
    let (status, retry_time, retry_rss) = feed(retry, GIB);
    assert!(status.success(), "retry failed: {status:?}");

    let mib = |b: u64| b as f64 / (1 << 20) as f64;
    println!("stdin replay, 1 GiB through a pipe, read twice");
    println!(
        "  cat, the same 2 GiB:           {:>7.2} s  {:>7.0} MiB/s  peak RSS {:.1} MiB",
        cat_time.as_secs_f64(),
        mib_per_s(2 * GIB, cat_time),
        mib(cat_rss)
    );
    println!(
        "  retry, two attempts (2 GiB):   {:>7.2} s  {:>7.0} MiB/s  peak RSS {:.1} MiB",
        retry_time.as_secs_f64(),
        mib_per_s(2 * GIB, retry_time),
        mib(retry_rss)
    );
    let gb_per_s = 2.0 * GIB as f64 / 1e9 / retry_time.as_secs_f64();
    let slower = retry_time.as_secs_f64() / cat_time.as_secs_f64();
    println!("  retry delivered:               {gb_per_s:>7.2} GB/s, {slower:.2}x cat's time");
    println!(
        "  goal 1 GB/s or within 4x cat:  {}",
        if gb_per_s >= 1.0 || slower <= 4.0 {
            "met"
        } else {
            "MISSED"
        }
    );
    let bound = 16 << 20;
    println!(
        "  peak RSS bound 16 MiB:         {}",
        if retry_rss <= bound { "met" } else { "MISSED" }
    );
}
