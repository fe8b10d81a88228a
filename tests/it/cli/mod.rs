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
use std::time::Duration;

use serde_json::Value;
use snapbox::str;
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
mod splay;
mod timeouts;
mod usage;

pub(crate) use crate::support::{
    Launch, Run, assert_output, is_local_time, json_lines, predicate, retry, run, run_sh,
};

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
    r.assert().code(0);
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

/// Runs retry with `args` and a command that would create a file; asserts a usage error whose
/// message is `expected`, whole, with nothing run and nothing on stdout.
#[track_caller]
fn assert_usage_error(args: &[&str], expected: impl snapbox::IntoData) {
    let r = usage_error(args);
    assert_output(r.stderr(), expected);
}

/// The same for a message that names `needle`, where a table lists many cases.
fn assert_usage_error_naming(args: &[&str], needle: &str) {
    let r = usage_error(args);
    assert!(
        r.stderr().contains(needle),
        "{args:?}: the message should name {needle:?}: {}",
        r.show()
    );
}

/// `retry ARGS -- touch MARK`, which must be a usage error (125) that runs nothing and prints
/// nothing on stdout.
fn usage_error(args: &[&str]) -> Run {
    let dir = TempDir::new().expect("temp dir");
    let (mark, cmd) = marker(&dir);
    let mut all: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    all.push("--".into());
    all.extend(cmd);
    let r = run(&all);
    assert_eq!(r.code(), Some(125), "{args:?}: {}", r.show());
    assert!(r.stdout.is_empty(), "{args:?}: {}", r.show());
    assert!(!mark.exists(), "{args:?}: the command ran");
    r
}

fn write_file(path: &Path, text: &str, mode: u32) {
    std::fs::write(path, text).expect("write file");
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).expect("chmod");
}
