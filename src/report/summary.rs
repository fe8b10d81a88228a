//! What a run did, for monitoring: one JSON object (`--summary FILE`), and Prometheus text
//! metrics for node_exporter's textfile collector (`--metrics FILE`), each written atomically.

use std::collections::VecDeque;
use std::fs;
use std::io;
use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::Serialize;

use super::log::KeyFields;
use crate::platform::files::{self, LockError};
use crate::policy::breaker::State;

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
    /// retry's exit status as a shell's `$?` shows it (128+N when retry ends by signal N,
    /// which it re-raises).
    pub exit: i32,
    /// Attempts started, in all.
    pub attempt_count: u64,
    /// The last [`KEPT_ATTEMPTS`] attempts: a run kept going for days stays in constant space.
    pub attempts: VecDeque<AttemptSummary>,
    /// Time the attempts ran, in all.
    pub running_ms: u128,
    /// Time spent waiting between attempts.
    pub sleeping_ms: u128,
    /// The sums, exact: each attempt's milliseconds rounded down would add up to too little.
    #[serde(skip)]
    running: Duration,
    #[serde(skip)]
    sleeping: Duration,
    pub elapsed_ms: u128,
    /// When the run ended, written as RFC 3339 only when a report is: most runs write none.
    #[serde(serialize_with = "rfc3339_millis")]
    pub finished_at: Option<SystemTime>,
    /// The key's state as the run left it, with `--key`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub key: Option<KeySummary>,
    /// Where the key's state is kept, and the store's errors, with `--key`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub store: Option<StoreSummary>,
}

/// Where a run with `--key` keeps its state, and how often the store failed it.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct StoreSummary {
    pub key: String,
    /// `file`, or the `--state` URL without user or password.
    pub backend: String,
    /// Calls to the store that failed or timed out in this run.
    pub errors: u32,
}

/// What a run with `--key` reports of the key: its state as the run last saw it (the same
/// fields every log line carries), and whether the key stopped the run.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct KeySummary {
    #[serde(flatten)]
    pub seen: KeyFields,
    /// What stopped the run, if the key did.
    pub refused: Option<RefusedBy>,
}

/// What of the key stopped a run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RefusedBy {
    Breaker,
    Budget,
    /// The key's state could not be read in time: its lock stayed busy.
    Unknown,
}

impl RefusedBy {
    fn name(self) -> &'static str {
        match self {
            RefusedBy::Breaker => "breaker",
            RefusedBy::Budget => "budget",
            RefusedBy::Unknown => "unknown",
        }
    }
}

/// Attempts the summary lists, the last ones.
pub const KEPT_ATTEMPTS: usize = 100;

/// A time as RFC 3339 with milliseconds; none (a run not ended) as "".
fn rfc3339_millis<S: serde::Serializer>(t: &Option<SystemTime>, s: S) -> Result<S::Ok, S::Error> {
    match t {
        Some(t) => s.collect_str(&humantime::format_rfc3339_millis(*t)),
        None => s.serialize_str(""),
    }
}

impl Summary {
    pub fn new(name: &str) -> Summary {
        Summary {
            name: name.to_string(),
            ..Summary::default()
        }
    }

    /// Records an attempt that ran for `ran`.
    pub fn attempted(&mut self, attempt: AttemptSummary, ran: Duration) {
        if self.attempts.len() == KEPT_ATTEMPTS {
            self.attempts.pop_front();
        }
        self.attempts.push_back(attempt);
        self.attempt_count += 1;
        self.running += ran;
        self.running_ms = self.running.as_millis();
    }

    /// Records a wait between attempts.
    pub fn slept(&mut self, slept: Duration) {
        self.sleeping += slept;
        self.sleeping_ms = self.sleeping.as_millis();
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
        self.finished_at = Some(SystemTime::now());
    }

    /// The summary as one JSON object.
    pub fn to_json(&self) -> String {
        // A struct of plain fields always serializes.
        serde_json::to_string(self).unwrap_or_default()
    }

    /// Writes the JSON summary to `path` (see [`write`]); it takes no lock, and so waits for
    /// none.
    pub fn write_json(&self, path: &Path, _lock_wait: Duration) -> io::Result<()> {
        write(path, None, |_| format!("{}\n", self.to_json()))
    }

    /// Writes the metrics to `path` (see [`write`]), carrying the counters, the last success
    /// time and the other names' series of the file's previous version on, under a lock that
    /// it waits up to `lock_wait` for ([`lock_wait`]).
    pub fn write_metrics(&self, path: &Path, lock_wait: Duration) -> io::Result<()> {
        write(path, Some(lock_wait), |before| {
            self.metrics(before, SystemTime::now())
        })
    }

    /// The Prometheus text exposition, given the previous file's text.
    pub fn metrics(&self, before: &str, now: SystemTime) -> String {
        let label = format!("name=\"{}\"", escape(&self.name));
        let mut out = String::new();
        self.counters(&mut out, before, &label);
        self.last_run(&mut out, before, &label, now);
        if let Some(key) = &self.key {
            out.push_str(&key_metrics(key, before, &label));
        }
        if let Some(store) = &self.store {
            out.push_str(&store_metrics(store, before, &label));
        }
        let untouched = untouched(before, &out);
        out.push_str(&untouched);
        out
    }

    /// The counters over all runs of this name: the previous file's counts, this run's added.
    fn counters(&self, out: &mut String, before: &str, label: &str) {
        let previous = |metric: &str| value(before, metric, label).unwrap_or(0.0);
        // Every attempt failed but a successful run's last.
        let succeeded = usize::from(self.outcome == Outcome::Success);
        let failures = self.attempt_count.saturating_sub(succeeded as u64) as f64;
        let mut metric = |name: &str, kind: &str, help: &str, samples: &[(String, f64)]| {
            family(out, before, label, [name, kind, help], samples);
        };
        metric(
            "retry_runs_total",
            "counter",
            "Runs of retry, by how they ended.",
            &OUTCOMES.map(|o| {
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
                label.to_string(),
                previous("retry_attempts_total") + self.attempt_count as f64,
            )],
        );
        metric(
            "retry_failed_attempts_total",
            "counter",
            "Attempts that did not succeed, in all runs.",
            &[(
                label.to_string(),
                previous("retry_failed_attempts_total") + failures,
            )],
        );
    }

    /// The gauges of the last run: how it ended, its attempts, status and duration, when it
    /// ended, and when a run last succeeded (carried on from the previous file if not this one).
    fn last_run(&self, out: &mut String, before: &str, label: &str, now: SystemTime) {
        let now_secs = now
            .duration_since(UNIX_EPOCH)
            .map_or(0.0, |d| d.as_secs_f64());
        let last_success = if self.outcome == Outcome::Success {
            now_secs
        } else {
            value(before, "retry_last_success_timestamp_seconds", label).unwrap_or(0.0)
        };
        let mut metric = |name: &str, kind: &str, help: &str, samples: &[(String, f64)]| {
            family(out, before, label, [name, kind, help], samples);
        };
        metric(
            "retry_last_outcome",
            "gauge",
            "How the last run ended: 1 for the outcome it had, 0 for the others.",
            &OUTCOMES.map(|o| {
                let labels = format!("{label},outcome=\"{}\"", outcome_name(o));
                (labels, f64::from(u8::from(self.outcome == o)))
            }),
        );
        metric(
            "retry_last_attempts",
            "gauge",
            "Attempts in the last run.",
            &[(label.to_string(), self.attempt_count as f64)],
        );
        metric(
            "retry_last_exit_status",
            "gauge",
            "retry's exit status in the last run.",
            &[(label.to_string(), f64::from(self.exit))],
        );
        metric(
            "retry_last_duration_seconds",
            "gauge",
            "How long the last run took, waits included.",
            &[(label.to_string(), self.elapsed_ms as f64 / 1000.0)],
        );
        metric(
            "retry_last_run_timestamp_seconds",
            "gauge",
            "When the last run ended.",
            &[(label.to_string(), now_secs)],
        );
        metric(
            "retry_last_success_timestamp_seconds",
            "gauge",
            "When a run last succeeded (0: never, as far as this file knows).",
            &[(label.to_string(), last_success)],
        );
    }
}

/// The failed calls to the run's state store, counted over all runs, by key and store.
fn store_metrics(store: &StoreSummary, before: &str, name_label: &str) -> String {
    let labels = format!(
        "{name_label},key=\"{}\",backend=\"{}\"",
        escape(&store.key),
        escape(&store.backend)
    );
    let total =
        value(before, "retry_state_errors_total", &labels).unwrap_or(0.0) + f64::from(store.errors);
    format!(
        "# HELP retry_state_errors_total Calls to the key's state store that failed or timed out, by store.\n\
         # TYPE retry_state_errors_total counter\n\
         retry_state_errors_total{{{labels}}} {total}\n"
    )
}

/// Every way a run can end, as the metrics label them.
const OUTCOMES: [Outcome; 4] = [
    Outcome::Success,
    Outcome::Failure,
    Outcome::Cancelled,
    Outcome::Refused,
];

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
    let label = format!("{name_label},key=\"{}\"", escape(&key.seen.key));
    let open = f64::from(u8::from(key.seen.breaker != State::Closed));
    let refusals = [RefusedBy::Breaker, RefusedBy::Budget, RefusedBy::Unknown].map(|by| {
        let labels = format!("{label},reason=\"{}\"", by.name());
        let before = value(before, "retry_state_refusals_total", &labels).unwrap_or(0.0);
        let this = f64::from(u8::from(key.refused == Some(by)));
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
            vec![(label.clone(), key.seen.tokens)],
        ),
        (
            "retry_state_refusals_total",
            "counter",
            "Runs or retries the key refused: by an open breaker, for lack of budget, or with its state unknown.",
            refusals.to_vec(),
        ),
    ] {
        family(&mut out, before, &label, [name, kind, help], &samples);
    }
    out
}

/// One metric family: its help and type, the previous exposition's samples of other names
/// (or other keys), as they were, then this run's `samples`, whose labels begin with `own`.
fn family(
    out: &mut String,
    before: &str,
    own: &str,
    [name, kind, help]: [&str; 3],
    samples: &[(String, f64)],
) {
    out.push_str(&format!("# HELP {name} {help}\n# TYPE {name} {kind}\n"));
    let any = format!("{name}{{");
    let mine = format!("{name}{{{own}");
    for line in before.lines().filter(|l| l.starts_with(&any)) {
        let ours = line
            .strip_prefix(&mine)
            .is_some_and(|rest| rest.starts_with([',', '}']));
        if !ours {
            out.push_str(line);
            out.push('\n');
        }
    }
    for (labels, value) in samples {
        out.push_str(&format!("{name}{{{labels}}} {value}\n"));
    }
}

/// The families of the previous exposition that `now` does not have, whole: another run's
/// (a key's metrics, say) are not this run's to drop.
fn untouched(before: &str, now: &str) -> String {
    let family = |line: &str| -> String {
        match line
            .strip_prefix("# HELP ")
            .or_else(|| line.strip_prefix("# TYPE "))
        {
            Some(rest) => rest.split(' ').next().unwrap_or_default().to_string(),
            None => line
                .split(['{', ' '])
                .next()
                .unwrap_or_default()
                .to_string(),
        }
    };
    let written: std::collections::HashSet<String> = now.lines().map(family).collect();
    let mut out = String::new();
    for line in before
        .lines()
        .filter(|l| !l.is_empty() && !written.contains(&family(l)))
    {
        out.push_str(line);
        out.push('\n');
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

/// How long a run waits for another's lock on a metrics file before it gives up writing it.
const LOCK_WAIT: Duration = Duration::from_secs(10);

/// The least wait for that lock within `--max-time`: the report of a run that reached its
/// deadline still gets the moment another run's write takes (milliseconds), not a stuck
/// holder's time.
const LOCK_WAIT_PAST_DEADLINE: Duration = Duration::from_millis(250);

/// How long a run with `left` before its `--max-time` (`None`: no deadline) waits for the
/// metrics file's lock: [`LOCK_WAIT`], but no longer than the deadline leaves, and at least
/// [`LOCK_WAIT_PAST_DEADLINE`].
pub fn lock_wait(left: Option<Duration>) -> Duration {
    left.map_or(LOCK_WAIT, |left| {
        left.clamp(LOCK_WAIT_PAST_DEADLINE, LOCK_WAIT)
    })
}

/// Writes a report to `path`, symlinks followed: a regular file (or none yet) is replaced at
/// once by rename, so readers see the old file or the new, never a part, and with `locked` its
/// previous text is read and the new one written under a lock on a sidecar file `PATH.lock`
/// (waited for up to `locked`), so that runs that end together lose nothing of each other. Anything else, a device or a
/// FIFO, is never replaced: it is written in place, a FIFO only if a process reads it.
fn write(
    path: &Path,
    locked: Option<Duration>,
    contents: impl FnOnce(&str) -> String,
) -> io::Result<()> {
    // `/dev/stderr`, `/dev/fd/N`: retry's own open stream, written where it stands.
    if let Some(fd) = files::descriptor(path) {
        return files::write_to_descriptor(fd, contents("").as_bytes());
    }
    let (target, regular) = files::resolve(path)?;
    if !regular {
        return files::write_in_place(&target, contents("").as_bytes());
    }
    let _lock = match locked {
        Some(wait) => Some(lock(&target, wait)?),
        None => None,
    };
    let before = if locked.is_some() {
        previous(&target)?
    } else {
        String::new()
    };
    replace(&target, contents(&before).as_bytes())
}

/// The most of a previous metrics file that is read: retry's series take a few kilobytes, even
/// for hundreds of names.
const PREVIOUS_MAX: u64 = 16 << 20;

/// A metrics file's previous text, whose counters carry on; empty when there is none or it is
/// not text. One larger than [`PREVIOUS_MAX`] is no file of retry's: it is neither read whole
/// (its size would be retry's memory) nor replaced.
fn previous(path: &Path) -> io::Result<String> {
    use std::io::Read;
    let Ok(file) = fs::File::open(path) else {
        return Ok(String::new());
    };
    let mut bytes = Vec::new();
    // Its size says, unless it grows meanwhile: what is read stops past the bound all the same.
    let large = file.metadata().is_ok_and(|m| m.len() > PREVIOUS_MAX);
    if !large {
        file.take(PREVIOUS_MAX + 1).read_to_end(&mut bytes)?;
    }
    if large || bytes.len() as u64 > PREVIOUS_MAX {
        return Err(files::refusal(
            io::ErrorKind::Other,
            "it holds more than 16 MiB, which retry's metrics never do: neither read nor \
             replaced",
        ));
    }
    Ok(String::from_utf8(bytes).unwrap_or_default())
}

/// Takes the lock on `PATH.lock` beside `path`, waiting up to `wait` ([`lock_wait`]) for
/// another run to let it go, and not once the run is cancelled; it is let go when the file is
/// dropped. The sidecar stays: removing it would race with a run that opened it, and a
/// textfile collector reads only `*.prom`.
fn lock(path: &Path, wait: Duration) -> io::Result<fs::File> {
    let mut name = path.as_os_str().to_owned();
    name.push(".lock");
    files::lock(Path::new(&name), 0o644, wait).map_err(|e| match e {
        LockError::Busy => files::refusal(
            io::ErrorKind::TimedOut,
            format!(
                "another process held its lock, {}, for {}",
                crate::quote::shown(&name),
                crate::policy::duration::human(wait)
            ),
        ),
        LockError::Cancelled => files::refusal(
            io::ErrorKind::Interrupted,
            format!(
                "another process held its lock, {}, when the run was cancelled",
                crate::quote::shown(&name)
            ),
        ),
        LockError::Io(e) => e,
    })
}

/// Replaces `path` with `bytes` at once, readable like any file the user would have written
/// there (a collector may run as another user).
fn replace(path: &Path, bytes: &[u8]) -> io::Result<()> {
    files::replace(path, bytes, 0o644, true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lock_held_past_the_wait_is_an_error_that_names_it() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("odd\nname.prom");
        let held = lock(&path, LOCK_WAIT).expect("the first lock");
        let e = lock(&path, Duration::from_millis(20)).expect_err("held");
        assert_eq!(e.kind(), io::ErrorKind::TimedOut);
        let lock_name = format!("{}.lock", path.display());
        assert_eq!(
            e.to_string(),
            format!(
                "another process held its lock, {}, for 20ms",
                crate::quote::shown(&lock_name)
            )
        );
        assert!(!e.to_string().contains('\n'), "{e}");
        drop(held);
        assert!(lock(&path, Duration::from_millis(20)).is_ok(), "let go");
    }
}
