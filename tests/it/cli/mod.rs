//! The command line against real processes, one module per area: every flag of the policy,
//! every exit status, argv and environment given to the child, the logs and `--explain`, and
//! usage errors. This module holds what they share: running retry
//! and reading its logs and its `--explain`.
//! Each test has its own temporary directory; delays are a few milliseconds at most, except
//! where the test is about a long delay not being slept.

use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStringExt;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::{Duration, Instant};

use assert_cmd::Command;
use predicates::prelude::*;
use serde_json::Value;
use tempfile::TempDir;

use crate::support;

mod attempts;
mod backoff;
mod child;
mod classification;
mod exit_status;
mod explain;
mod logs;
mod minfrin;
mod timeouts;
mod usage;

/// Only turns a hang into a failure; no test comes near it.
const PATIENCE: Duration = Duration::from_secs(60);

/// [`support::retry`], the built binary in an environment free of any retry that runs the
/// test suite itself and of the user's own config file, as an assert_cmd command that is
/// killed after `PATIENCE`.
fn retry() -> Command {
    let mut cmd = support::cmd();
    cmd.timeout(PATIENCE);
    cmd
}

/// One finished run of retry.
struct Run {
    out: Output,
    took: Duration,
}

impl Run {
    fn code(&self) -> Option<i32> {
        self.out.status.code()
    }

    fn stdout(&self) -> String {
        String::from_utf8_lossy(&self.out.stdout).into_owned()
    }

    fn stderr(&self) -> String {
        String::from_utf8_lossy(&self.out.stderr).into_owned()
    }

    /// retry's own text log lines on stderr, without the time that -v puts before them.
    fn log(&self) -> Vec<String> {
        self.stderr()
            .lines()
            .map(|l| match l.split_once(' ') {
                Some((time, rest)) if is_local_time(time) => rest,
                _ => l,
            })
            .filter(|l| l.starts_with("retry:"))
            .map(str::to_owned)
            .collect()
    }

    /// stdout, one entry per line.
    fn lines(&self) -> Vec<String> {
        self.stdout().lines().map(str::to_owned).collect()
    }

    /// Every stderr line parsed as JSON (for runs with `--log-format json`).
    fn json(&self) -> Vec<Value> {
        json_lines(&self.stderr())
    }

    /// The delay_ms of every failure that was followed by a retry.
    fn delays(&self) -> Vec<u64> {
        self.json()
            .iter()
            .filter(|v| v["event"] == "failure")
            .filter_map(|v| v["delay_ms"].as_u64())
            .collect()
    }

    /// How many attempts failed, from the JSON log.
    fn failures(&self) -> usize {
        self.json()
            .iter()
            .filter(|v| v["event"] == "failure")
            .count()
    }

    /// Everything, for assertion messages.
    fn show(&self) -> String {
        format!(
            "status {:?}, took {:?}\n--- stdout\n{}--- stderr\n{}",
            self.out.status,
            self.took,
            self.stdout(),
            self.stderr()
        )
    }
}

/// `2026-11-21T21:16:03.254+01:00`, as retry stamps a text log line.
fn is_local_time(word: &str) -> bool {
    let b = word.as_bytes();
    b.len() == "2026-11-21T21:16:03.254+01:00".len()
        && b[4] == b'-'
        && b[10] == b'T'
        && b[19] == b'.'
        && (b[23] == b'+' || b[23] == b'-')
}

fn json_lines(text: &str) -> Vec<Value> {
    text.lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not a JSON line ({e}): {l:?}")))
        .collect()
}

fn run_cmd(mut cmd: Command) -> Run {
    let start = Instant::now();
    let out = cmd.output().expect("run retry");
    Run {
        out,
        took: start.elapsed(),
    }
}

fn run<S: AsRef<OsStr>>(args: &[S]) -> Run {
    let mut cmd = retry();
    cmd.args(args);
    run_cmd(cmd)
}

/// `retry ARGS -- sh -c SCRIPT`.
fn run_sh(args: &[&str], script: &str) -> Run {
    let mut all: Vec<&str> = args.to_vec();
    all.extend(["--", "sh", "-c", script]);
    run(&all)
}

/// `retry ARGS --log-format json -- sh -c SCRIPT`.
fn run_json(args: &[&str], script: &str) -> Run {
    let mut all: Vec<&str> = args.to_vec();
    all.extend(["--log-format", "json"]);
    run_sh(&all, script)
}

fn explain(args: &[&str]) -> String {
    let mut all = vec!["--explain"];
    all.extend(args);
    let r = run(&all);
    assert_eq!(r.code(), Some(0), "{}", r.show());
    r.stdout()
}

/// The row of the policy `--explain` shows for a setting; empty when there is none.
fn row<'a>(text: &'a str, name: &str) -> &'a str {
    text.lines()
        .find(|l| l.trim_start().starts_with(&format!("{name} ")))
        .unwrap_or_default()
}

fn dur(s: &str) -> Duration {
    humantime::parse_duration(s).unwrap_or_else(|e| panic!("{s:?}: {e}"))
}

/// One row of the explained schedule: the retry, its min and max, and the exact delay.
#[derive(Debug)]
struct Row {
    min: Duration,
    max: Duration,
    exact: Option<Duration>,
}

/// The rows of the schedule table of `--explain` (all delays under a minute).
fn schedule(text: &str) -> Vec<Row> {
    let mut rows = Vec::new();
    let mut inside = false;
    for line in text.lines() {
        if line.starts_with("Schedule") {
            inside = true;
            continue;
        }
        if !inside {
            continue;
        }
        let words: Vec<&str> = line.split_whitespace().collect();
        let Some(k) = words.first().and_then(|w| w.parse::<usize>().ok()) else {
            if !rows.is_empty() {
                break;
            }
            continue;
        };
        assert_eq!(k, rows.len() + 1, "rows in order: {text}");
        rows.push(Row {
            min: dur(words[1]),
            max: dur(words[2]),
            exact: words.get(3).map(|w| dur(w)),
        });
    }
    assert!(!rows.is_empty(), "no schedule rows in:\n{text}");
    rows
}

/// The (min, max) of each row, in milliseconds.
fn bounds_ms(text: &str) -> Vec<(u128, u128)> {
    schedule(text)
        .iter()
        .map(|r| (r.min.as_millis(), r.max.as_millis()))
        .collect()
}

/// The lines of the Warnings section of `--explain`.
fn warnings(text: &str) -> Vec<String> {
    text.lines()
        .skip_while(|l| !l.starts_with("Warnings"))
        .skip(1)
        .take_while(|l| !l.trim().is_empty())
        .map(str::to_owned)
        .collect()
}

/// "at most X, expected about Y" from `--explain`.
fn totals(text: &str) -> (Duration, Duration) {
    let line = text
        .lines()
        .find(|l| l.contains("at most"))
        .unwrap_or_else(|| panic!("no totals in:\n{text}"));
    let rest = line.split("at most ").nth(1).expect("worst case");
    let (worst, expected) = rest
        .split_once(", expected about ")
        .expect("expected total");
    (dur(worst.trim()), dur(expected.trim()))
}

/// A command that would leave a mark in `dir` if it ran.
fn marker(dir: &TempDir) -> (PathBuf, Vec<String>) {
    let path = dir.path().join("ran");
    let cmd = vec!["touch".to_string(), path.display().to_string()];
    (path, cmd)
}

/// Runs retry with `args` and a command that would create a file; asserts a usage error that
/// names `needle`, with nothing run and nothing on stdout.
fn assert_usage_error(args: &[&str], needle: &str) {
    let dir = TempDir::new().expect("temp dir");
    let (mark, cmd) = marker(&dir);
    let mut all: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    all.push("--".into());
    all.extend(cmd);
    let r = run(&all);
    assert_eq!(r.code(), Some(125), "{args:?}: {}", r.show());
    assert!(
        r.stderr().contains(needle),
        "{args:?}: the message should name {needle:?}: {}",
        r.show()
    );
    assert!(r.out.stdout.is_empty(), "{args:?}: {}", r.show());
    assert!(!mark.exists(), "{args:?}: the command ran");
}

fn write_file(path: &Path, text: &str, mode: u32) {
    std::fs::write(path, text).expect("write file");
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).expect("chmod");
}
