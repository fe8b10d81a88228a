//! Untrusted text and secrets at the edges (issue #34): nothing a command, a server or another
//! user writes can forge a line of retry's, leak a secret, hang retry or lose the end of a run.

use std::ffi::OsStr;
use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::process::{Command, Output, Stdio};

use crate::support::redis::Server;
use crate::support::{dev_full, retry, retry_in_sh};

fn run(mut c: Command) -> Output {
    c.stdin(Stdio::null()).output().expect("retry runs")
}

/// Whether `text` holds anything that could end, hide or reorder a line: a control character
/// other than the newline that ends each line, a C1 control, a line or paragraph separator, a
/// bidirectional control, or bytes that are not UTF-8.
fn hostile(text: &[u8]) -> Option<String> {
    let Ok(text) = std::str::from_utf8(text) else {
        return Some("invalid UTF-8".into());
    };
    text.chars()
        .find(|&c| {
            (c.is_control() && c != '\n')
                || matches!(c, '\u{2028}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
        })
        .map(|c| format!("{:?}", c))
}

/// Arguments an attacker would pass: a forged log line, terminal escapes, a carriage return,
/// Unicode separators and overrides, a workflow command.
const HOSTILE: [&str; 6] = [
    "v1.2\n2026-11-26T14:32:23.123+00:00 retry: attempt 1/1 succeeded in 2.1s; command: ./deploy.sh v1.3",
    "\x1b[2K\x1b[1A",
    "\x1b]0;owned\x07",
    "shown\rhidden",
    "a\u{2028}b\u{202e}c\u{2066}",
    "\n::error::forged",
];

#[test]
fn no_part_of_a_password_is_in_the_error_that_rejects_a_store_url() {
    for url in [
        "redis-sentinel://:pa/ss@h1,h2/0?sentinelMasterId=m&sentinelPassword=Yw5nTz3R",
        "redis-sentinel://h1,h2/0?sentinelMasterId=m&sentinelPassword=Yw5n&Tz3R",
        "redis-sentinel://h1:99999/0?sentinelMasterId=m&sentinelPassword=Yw5nTz3R",
        "redis-sentinel://u:Zq9xW7kP@h1,,h2/0?sentinelMasterId=m&sentinelPassword=Yw5nTz3R",
        "redis://u:Zq9x/W7kP@h/0",
        "redis://u:Zq9xW7kP@h:0",
        "redis+cluster://u:Zq9xW7kP@n1/3",
    ] {
        for how in ["flag", "env"] {
            let mut c = retry();
            if how == "flag" {
                c.args(["--state", url]);
            } else {
                c.env("RETRY_STATE_URL", url);
            }
            c.args(["--key", "k", "--", "true"]);
            let out = run(c);
            assert_eq!(out.status.code(), Some(125), "{url}");
            let err = String::from_utf8_lossy(&out.stderr);
            for part in [
                "Zq9", "q9x", "xW7", "W7k", "7kP", "Yw5", "w5n", "Tz3", "z3R",
            ] {
                assert!(!err.contains(part), "{url}: {err}");
            }
        }
    }
}

#[test]
fn a_breaker_saved_in_another_boot_under_a_clock_a_day_ahead_stays_open_no_longer_than_its_max() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    fs::create_dir(&state).unwrap();
    fs::set_permissions(&state, fs::Permissions::from_mode(0o700)).unwrap();
    let now_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64;
    let boot = 900_000_000u64;
    let saved = serde_json::json!({
        "version": 1,
        "boot_id": "00000000-0000-0000-0000-000000000000",
        "boot_ms": boot,
        "wall_ms": now_ms + 86_400_000,
        "state": {
            "generation": 1,
            "breaker": {"state": "open", "until": boot + 1_500, "open_for": 1_500},
            "budget": {"milli": 10_000, "at": boot}
        }
    });
    fs::write(state.join("k.json"), saved.to_string()).unwrap();
    let inner = |c: &mut Command| {
        c.arg("--state-dir")
            .arg(&state)
            .args([
                "--key",
                "k",
                "--breaker-open",
                "1s",
                "--breaker-open-max",
                "2s",
            ])
            .args(["-n1", "--", "true"]);
    };
    let mut c = retry();
    inner(&mut c);
    assert_eq!(run(c).status.code(), Some(75), "open at first");
    // An outer retry runs it again every 100ms while it is refused: it must be let through
    // well before the wall clock catches up a day.
    let started = std::time::Instant::now();
    let mut c = retry();
    c.args([
        "--retry-on",
        "75",
        "-d",
        "100ms",
        "-b",
        "constant",
        "-j",
        "none",
    ])
    .args(["--max-time", "20s", "--forever", "-qq", "--"])
    .arg(crate::support::bin());
    inner(&mut c);
    let out = run(c);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        started.elapsed().as_secs_f64() < 10.0,
        "{:?}",
        started.elapsed()
    );
}
