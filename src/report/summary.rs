//! What a run did, for monitoring: one JSON object (`--summary FILE`), and Prometheus text
//! metrics for node_exporter's textfile collector (`--metrics FILE`), each written atomically.

use std::fs;
use std::io::{self, Write};
use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::Serialize;

/// How a run ended.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    Success,
    #[default]
    Failure,
    Cancelled,
    /// Refused without running the command: the key's breaker was open.
    Refused,
}

/// One attempt, as the summary reports it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct AttemptSummary {
    /// The status the rules judged: 128+N for signal N, 124 when it timed out.
    pub status: i32,
    pub signal: Option<std::borrow::Cow<'static, str>>,
    pub timed_out: bool,
    pub duration_ms: u128,
}

/// A run, as the loop saw it.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Summary {
    /// `--name`, the label of the metrics.
    pub name: String,
    pub outcome: Outcome,
    pub reason: String,
    /// retry's exit status (128+N when it ends by signal N).
    pub exit: i32,
    pub attempts: Vec<AttemptSummary>,
    /// Time the attempts ran, in all.
    pub running_ms: u128,
    /// Time spent waiting between attempts.
    pub sleeping_ms: u128,
    pub elapsed_ms: u128,
    /// When the run ended, RFC 3339.
    pub finished_at: String,
    /// The key's state as the run left it, with `--key`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub key: Option<KeySummary>,
}

/// What a run with `--key` reports of the key.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct KeySummary {
    pub key: String,
    /// closed, open or half-open, as the run last saw it.
    pub breaker: &'static str,
    /// The run probed the half-open breaker.
    pub probe: bool,
    /// Tokens left in the budget.
    pub tokens: f64,
    /// What stopped the run, if the key did: `breaker` or `budget`.
    pub refused: Option<&'static str>,
}

impl Summary {
    pub fn new(name: &str) -> Summary {
        Summary {
            name: name.to_string(),
            ..Summary::default()
        }
    }

    /// Records how the run ended.
    pub fn end(
        &mut self,
        outcome: Outcome,
        reason: impl Into<String>,
        exit: i32,
        elapsed: Duration,
    ) {
        self.outcome = outcome;
        self.reason = reason.into();
        self.exit = exit;
        self.elapsed_ms = elapsed.as_millis();
        self.finished_at = humantime::format_rfc3339_millis(SystemTime::now()).to_string();
    }

    /// The summary as one JSON object.
    pub fn to_json(&self) -> String {
        // A struct of plain fields always serializes.
        serde_json::to_string(self).unwrap_or_default()
    }

    /// Writes the JSON summary to `path`, atomically.
    pub fn write_json(&self, path: &Path) -> io::Result<()> {
        replace(path, format!("{}\n", self.to_json()).as_bytes())
    }

    /// Writes the metrics to `path`, atomically, carrying the counters and the last success
    /// time of the file's previous version on.
    pub fn write_metrics(&self, path: &Path) -> io::Result<()> {
        let before = fs::read_to_string(path).unwrap_or_default();
        replace(path, self.metrics(&before, SystemTime::now()).as_bytes())
    }

    /// The Prometheus text exposition, given the previous file's text.
    pub fn metrics(&self, before: &str, now: SystemTime) -> String {
        let name = escape(&self.name);
        let label = format!("name=\"{name}\"");
        let previous = |metric: &str| value(before, metric, &label).unwrap_or(0.0);
        let now_secs = now
            .duration_since(UNIX_EPOCH)
            .map_or(0.0, |d| d.as_secs_f64());
        let last_success = if self.outcome == Outcome::Success {
            now_secs
        } else {
            previous("retry_last_success_timestamp_seconds")
        };
        // Every attempt failed but a successful run's last.
        let succeeded = usize::from(self.outcome == Outcome::Success);
        let failures = self.attempts.len().saturating_sub(succeeded) as f64;
        let mut out = String::new();
        let mut metric = |name: &str, kind: &str, help: &str, samples: &[(String, f64)]| {
            out.push_str(&format!("# HELP {name} {help}\n# TYPE {name} {kind}\n"));
            for (labels, value) in samples {
                out.push_str(&format!("{name}{{{labels}}} {value}\n"));
            }
        };
        metric(
            "retry_runs_total",
            "counter",
            "Runs of retry, by how they ended.",
            &[
                Outcome::Success,
                Outcome::Failure,
                Outcome::Cancelled,
                Outcome::Refused,
            ]
            .map(|o| {
                let labels = format!("{label},outcome=\"{}\"", outcome_name(o));
                let this = f64::from(u8::from(self.outcome == o));
                let before = value(before, "retry_runs_total", &labels).unwrap_or(0.0);
                (labels, before + this)
            }),
        );
        metric(
            "retry_attempts_total",
            "counter",
            "Attempts started, in all runs.",
            &[(
                label.clone(),
                previous("retry_attempts_total") + self.attempts.len() as f64,
            )],
        );
        metric(
            "retry_failed_attempts_total",
            "counter",
            "Attempts that did not succeed, in all runs.",
            &[(
                label.clone(),
                previous("retry_failed_attempts_total") + failures,
            )],
        );
        metric(
            "retry_last_outcome",
            "gauge",
            "How the last run ended: 1 for the outcome it had, 0 for the others.",
            &[
                Outcome::Success,
                Outcome::Failure,
                Outcome::Cancelled,
                Outcome::Refused,
            ]
            .map(|o| {
                let labels = format!("{label},outcome=\"{}\"", outcome_name(o));
                (labels, f64::from(u8::from(self.outcome == o)))
            }),
        );
        metric(
            "retry_last_attempts",
            "gauge",
            "Attempts in the last run.",
            &[(label.clone(), self.attempts.len() as f64)],
        );
        metric(
            "retry_last_exit_status",
            "gauge",
            "retry's exit status in the last run.",
            &[(label.clone(), f64::from(self.exit))],
        );
        metric(
            "retry_last_duration_seconds",
            "gauge",
            "How long the last run took, waits included.",
            &[(label.clone(), self.elapsed_ms as f64 / 1000.0)],
        );
        metric(
            "retry_last_run_timestamp_seconds",
            "gauge",
            "When the last run ended.",
            &[(label.clone(), now_secs)],
        );
        metric(
            "retry_last_success_timestamp_seconds",
            "gauge",
            "When a run last succeeded (0: never, as far as this file knows).",
            &[(label.clone(), last_success)],
        );
        if let Some(key) = &self.key {
            out.push_str(&key_metrics(key, before, &label));
        }
        out
    }
}

fn outcome_name(o: Outcome) -> &'static str {
    match o {
        Outcome::Success => "success",
        Outcome::Failure => "failure",
        Outcome::Cancelled => "cancelled",
        Outcome::Refused => "refused",
    }
}

/// The metrics of a run's key: its breaker and budget, and the refusals counted.
fn key_metrics(key: &KeySummary, before: &str, name_label: &str) -> String {
    let label = format!("{name_label},key=\"{}\"", escape(&key.key));
    let open = f64::from(u8::from(key.breaker != "closed"));
    let refusals = ["breaker", "budget"].map(|reason| {
        let labels = format!("{label},reason=\"{reason}\"");
        let before = value(before, "retry_state_refusals_total", &labels).unwrap_or(0.0);
        let this = f64::from(u8::from(key.refused == Some(reason)));
        (labels, before + this)
    });
    let mut out = String::new();
    for (name, kind, help, samples) in [
        (
            "retry_breaker_open",
            "gauge",
            "1 while the key's breaker is open or half-open, as the last run saw it.",
            vec![(label.clone(), open)],
        ),
        (
            "retry_budget_tokens",
            "gauge",
            "Tokens left in the key's retry budget after the last run.",
            vec![(label.clone(), key.tokens)],
        ),
        (
            "retry_state_refusals_total",
            "counter",
            "Runs or retries the key refused: by an open breaker, or for lack of budget.",
            refusals.to_vec(),
        ),
    ] {
        out.push_str(&format!("# HELP {name} {help}\n# TYPE {name} {kind}\n"));
        for (labels, value) in samples {
            out.push_str(&format!("{name}{{{labels}}} {value}\n"));
        }
    }
    out
}

/// A label value with `\`, `"` and newlines escaped, as the text format asks.
fn escape(value: &str) -> String {
    value
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// The value of `metric{labels}` in a previous exposition, if it is there.
fn value(text: &str, metric: &str, labels: &str) -> Option<f64> {
    let key = format!("{metric}{{{labels}}} ");
    text.lines()
        .find_map(|line| line.strip_prefix(&key))
        .and_then(|v| v.trim().parse().ok())
}

/// Replaces `path` with `bytes` at once: readers see the old file or the new, never a part.
fn replace(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    let mut file = tempfile::Builder::new()
        .prefix(".retry-")
        .tempfile_in(dir)?;
    file.write_all(bytes)?;
    file.as_file().sync_all()?;
    // Readable like any file the user would have written there (a collector may run as
    // another user); the temporary file was made 0600.
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        fs::set_permissions(file.path(), fs::Permissions::from_mode(0o644))?;
    }
    file.persist(path).map_err(|e| e.error)?;
    Ok(())
}
