//! `--summary` and `--metrics` through the built binary: the JSON summary parsed back, and the
//! Prometheus text metrics parsed back by a small parser of the text format, across runs. This
//! module holds what the areas share: running retry, and reading the reports back.

use std::collections::BTreeMap;
use std::fs::{self, File};
use std::io::Read;
use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use serde_json::Value;
use snapbox::str;
use tempfile::TempDir;

use crate::support::{
    Launch, Lines, Run, assert_output, dev_full, retry, run, run_sh, start, wait,
};

mod files;
mod metrics;
mod summary;

fn path_arg(p: &Path) -> String {
    p.to_str().expect("a UTF-8 temp path").to_string()
}

fn now_secs() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("after 1970")
        .as_secs_f64()
}

/// Names in `dir`, sorted.
fn listing(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(dir)
        .expect("read dir")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// The summary in `file`, parsed: one JSON object on one line.
fn read_summary(file: &Path) -> Value {
    let text = fs::read_to_string(file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    assert!(text.ends_with('\n'), "one line: {text:?}");
    assert_eq!(
        text.lines().count(),
        1,
        "one JSON object on one line: {text:?}"
    );
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{text:?}: {e}"))
}

/// One sample of the text format: `name{labels} value`.
#[derive(Debug)]
struct Sample {
    name: String,
    labels: BTreeMap<String, String>,
    value: f64,
}

/// A parsed exposition: the samples, and the `# TYPE` of each metric.
#[derive(Debug)]
struct Metrics {
    samples: Vec<Sample>,
    types: BTreeMap<String, String>,
    text: String,
}

impl Metrics {
    fn read(path: &Path) -> Metrics {
        let text = fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        Metrics::parse(&text)
    }

    fn parse(text: &str) -> Metrics {
        let mut samples = Vec::new();
        let mut types = BTreeMap::new();
        for line in text.lines() {
            if let Some(rest) = line.strip_prefix("# TYPE ") {
                let (name, kind) = rest.split_once(' ').expect("# TYPE name kind");
                types.insert(name.to_string(), kind.to_string());
                continue;
            }
            if line.starts_with('#') || line.trim().is_empty() {
                continue;
            }
            samples.push(sample(line));
        }
        for s in &samples {
            assert!(
                types.contains_key(&s.name),
                "{} has no # TYPE line:\n{text}",
                s.name
            );
        }
        Metrics {
            samples,
            types,
            text: text.to_string(),
        }
    }

    /// The value of `metric{name=job[,outcome=o]}`; fails the test when it is not there once.
    fn get(&self, metric: &str, job: &str, outcome: Option<&str>) -> f64 {
        let found: Vec<&Sample> = self
            .samples
            .iter()
            .filter(|s| {
                s.name == metric
                    && s.labels.get("name").map(String::as_str) == Some(job)
                    && s.labels.get("outcome").map(String::as_str) == outcome
            })
            .collect();
        assert_eq!(
            found.len(),
            1,
            "{metric} name={job:?} outcome={outcome:?} in:\n{}",
            self.text
        );
        found[0].value
    }
}

/// Parses `name{label="value",...} number`, with the text format's escapes in label values.
fn sample(line: &str) -> Sample {
    let open = line
        .find('{')
        .unwrap_or_else(|| panic!("no labels: {line:?}"));
    let name = line[..open].to_string();
    let mut labels = BTreeMap::new();
    let mut chars = line[open + 1..].chars();
    loop {
        let key: String = chars.by_ref().take_while(|c| *c != '=').collect();
        assert_eq!(chars.next(), Some('"'), "a quoted value in {line:?}");
        let mut value = String::new();
        loop {
            match chars.next() {
                Some('\\') => match chars.next() {
                    Some('\\') => value.push('\\'),
                    Some('"') => value.push('"'),
                    Some('n') => value.push('\n'),
                    other => panic!("bad escape {other:?} in {line:?}"),
                },
                Some('"') => break,
                Some(c) => value.push(c),
                None => panic!("unterminated value in {line:?}"),
            }
        }
        assert!(
            labels.insert(key, value).is_none(),
            "a label twice: {line:?}"
        );
        match chars.next() {
            Some(',') => continue,
            Some('}') => break,
            other => panic!("{other:?} after a label value in {line:?}"),
        }
    }
    let rest: String = chars.collect();
    let number = rest
        .strip_prefix(' ')
        .unwrap_or_else(|| panic!("one space before the value: {line:?}"));
    let value = number
        .parse()
        .unwrap_or_else(|e| panic!("value {number:?} in {line:?}: {e}"));
    Sample {
        name,
        labels,
        value,
    }
}
