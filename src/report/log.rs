//! retry's own log: text lines prefixed `retry:` or JSON lines, on stderr or in a file.

use std::ffi::OsStr;
use std::fs::File;
use std::io::{self, IsTerminal, Write};
use std::time::{Duration, SystemTime};

use serde::Serialize;

use crate::exit::Exit;
use crate::policy::backoff::Shape;
use crate::policy::breaker::State;
use crate::policy::duration::human;
use crate::policy::status::Status;
use crate::policy::{ColorChoice, LogFormat, LogSettings, Policy};
use crate::quote;

/// What happened.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event {
    /// The resolved policy, before the first attempt (-v).
    Policy,
    /// The random wait before the first attempt begins (-v): `delay` is how long (`--splay`).
    Splay,
    /// An attempt starts (-v).
    Start,
    /// An attempt failed; `delay` is the wait before the next one, if any.
    Failure,
    /// An attempt after a failure succeeded.
    Success,
    /// An attempt ran at least `--reset-after`: the schedule and the limit start afresh.
    Reset,
    /// A signal reached retry and was passed on to the command.
    Signal,
    /// The attempt that held the terminal ended as a Ctrl-C ends a command; retry itself
    /// received no signal, and takes it as a cancel.
    TerminalCancel,
    /// retry stopped the command: its time ran out, or it outlived --kill-after.
    Stop,
    /// The command could not be started.
    NotStarted,
    /// A hook failed, exited non-zero or ran out of time.
    Hook,
    /// A setting that may not do what the user means (a retry inside another).
    Warning,
    /// The run ends without success.
    GiveUp,
    /// A key's breaker moved, or its state could not be used (`--key`).
    State,
    /// The run was refused without running the command: the key's breaker is open.
    Refused,
    /// A --summary or --metrics file could not be written.
    Report,
}

/// One log entry; fields that do not apply are `None`.
#[derive(Clone, Debug)]
pub struct Entry {
    pub event: Event,
    pub attempt: u32,
    pub max_attempts: Option<u32>,
    pub status: Option<Status>,
    /// The attempt was stopped by `--attempt-timeout` or `--max-time` (status 124).
    pub timed_out: bool,
    pub duration: Option<Duration>,
    pub delay: Option<Duration>,
    pub reason: Option<String>,
    /// Time since the run began.
    pub elapsed: Duration,
    /// The key's state, with `--key`.
    pub key: Option<KeyFields>,
    /// The command, for the give-up and success lines.
    pub command: Option<String>,
    /// The job's `--name`, when given: the text lines name the job by it.
    pub job: Option<String>,
    /// The give-up reason names the attempt's status already.
    pub names_status: bool,
    /// The resolved policy, for the policy line.
    pub policy: Option<PolicyFields>,
    /// On the give-up line of a cancelled run, in text: how it was cancelled, said there
    /// instead of on lines of its own.
    pub cancelled: Option<String>,
    /// On the give-up line: retry ends by the signal that killed the command.
    pub reraises: Option<i32>,
    /// On the give-up line: the status retry exits with instead of the last attempt's, which
    /// counted as success though the run failed (an HTTP status, an output rule,
    /// `--success-on` without 0).
    pub exits_instead: Option<i32>,
}

/// What every log entry of a run with `--key` tells of the key's state.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct KeyFields {
    pub key: String,
    pub breaker: State,
    /// This run probes the half-open breaker.
    pub probe: bool,
    /// Tokens left in the budget.
    pub tokens: f64,
}

impl Entry {
    pub fn new(event: Event, attempt: u32, max_attempts: Option<u32>, elapsed: Duration) -> Self {
        Entry {
            event,
            attempt,
            max_attempts,
            status: None,
            timed_out: false,
            duration: None,
            delay: None,
            reason: None,
            elapsed,
            key: None,
            command: None,
            job: None,
            names_status: false,
            policy: None,
            cancelled: None,
            reraises: None,
            exits_instead: None,
        }
    }

    /// `; command: CMD`, or `; job NAME: CMD` with `--name`: what ran, at the end of the
    /// give-up and success lines.
    fn job_text(&self) -> String {
        let job = self.job.as_deref().map(quote::shown);
        let command = self.command.as_deref().map(quote::clean);
        match (job, command) {
            (Some(job), Some(c)) => format!("; job {job}: {c}"),
            (None, Some(c)) => format!("; command: {c}"),
            (Some(job), None) => format!("; job {job}"),
            (None, None) => String::new(),
        }
    }

    /// The status the outcome lists judged: 124 for a timed-out attempt.
    fn status_number(&self) -> Option<i32> {
        match self.status {
            _ if self.timed_out => Some(Exit::TIMED_OUT.status()),
            Some(s) => Some(s.number()),
            None => None,
        }
    }

    /// How the attempt ended, in words: `exit status 1`, `timed out (status 124)`.
    fn what(&self) -> Option<String> {
        match self.status {
            _ if self.timed_out => Some(format!("timed out (status {})", Exit::TIMED_OUT.status())),
            Some(status) => Some(status.to_string()),
            None => None,
        }
    }
}

impl Event {
    /// The least verbose level at which entries of this event are shown.
    fn level(self) -> i8 {
        match self {
            Event::Policy | Event::Splay | Event::Start => 2,
            Event::Failure
            | Event::Reset
            | Event::Success
            | Event::Signal
            | Event::State
            | Event::TerminalCancel
            | Event::Stop
            | Event::NotStarted
            | Event::Hook
            | Event::Warning => 1,
            Event::GiveUp | Event::Refused | Event::Report => 0,
        }
    }

    /// The event's name in the JSON log.
    fn name(self) -> &'static str {
        match self {
            Event::Policy => "policy",
            Event::Splay => "splay",
            Event::Start => "start",
            Event::Failure => "failure",
            Event::Success => "success",
            Event::Reset => "reset",
            Event::Signal => "signal",
            Event::TerminalCancel => "terminal_cancel",
            Event::Stop => "stop",
            Event::NotStarted => "not_started",
            Event::Hook => "hook",
            Event::Warning => "warning",
            Event::GiveUp => "give_up",
            Event::State => "state",
            Event::Refused => "refused",
            Event::Report => "report",
        }
    }
}

/// The log of one run.
pub struct Log {
    level: i8,
    format: LogFormat,
    sink: Box<dyn Write>,
    /// Long waits show a live countdown: only in text, on stderr, and when it is a terminal.
    countdown: bool,
    /// A countdown line is on the screen and must be cleared before anything else.
    showing: bool,
    /// Failure and success words in colour: as `--color` and the environment say ([`colour`]),
    /// in text on stderr.
    colour: bool,
    /// Text lines begin with the local time: in a log file, which says neither when nor, else,
    /// what; with -v or --log-time, for CI logs that have no time of their own.
    stamped: bool,
    /// The nesting level each line names, when above 1.
    depth: u32,
    /// The log goes to a `--log-file`, which records every run.
    file: bool,
    /// The `--log-file`'s path while it takes what is written: once a write to it fails (a
    /// file size limit, a full disk), the log goes on elsewhere ([`Log::put`]).
    path: Option<std::path::PathBuf>,
    /// Where every line goes as well, in text: `--output-on-failure`'s held output, whose
    /// printout carries each attempt's line (its reason) and ends with the give-up line also
    /// when the log goes to `--log-file`.
    copy: Option<Box<dyn Write>>,
    /// The least verbose level of what goes to `copy`: each attempt's line too under `-q`.
    copy_level: i8,
}

impl Log {
    /// Opens the log file, if any, for appending; stderr otherwise.
    pub fn open(settings: &LogSettings) -> io::Result<Log> {
        let sink: Box<dyn Write> = match &settings.file {
            Some(path) => Box::new(open_append(path)?),
            None => Box::new(crate::platform::stderr::Stderr),
        };
        let mut log = Log::to(settings, sink);
        log.file = settings.file.is_some();
        log.path.clone_from(&settings.file);
        let text_on_stderr = settings.file.is_none() && settings.format == LogFormat::Text;
        let terminal = io::stderr().is_terminal();
        log.countdown = text_on_stderr && terminal && settings.level >= 1;
        log.colour = text_on_stderr && colour(settings.color, terminal);
        Ok(log)
    }

    /// A log that writes to `sink`: no countdown and no colour (a log held for later, with
    /// `--output-on-failure`, or a test's), text lines stamped as the settings say.
    pub fn to(settings: &LogSettings, sink: Box<dyn Write>) -> Log {
        Log {
            level: settings.level,
            format: settings.format,
            sink,
            countdown: false,
            showing: false,
            colour: false,
            stamped: settings.time && settings.format == LogFormat::Text,
            depth: settings.depth,
            file: false,
            path: None,
            copy: None,
            copy_level: settings.level,
        }
    }

    /// A log held for `--output-on-failure`'s printout, written to `sink`: [`Log::to`], with
    /// each attempt's line (its reason) under `-q` too, since a printout of a failure always
    /// says why each attempt failed; `-qq` still says nothing.
    pub fn held(settings: &LogSettings, sink: Box<dyn Write>) -> Log {
        let mut log = Log::to(settings, sink);
        log.level = printout_level(settings.level);
        log
    }

    /// Whether every run leaves a line: a `--log-file` answers "did the 14:36 run happen?",
    /// so a success at the first attempt is written there too (not with -qq, which asks for
    /// nothing at all).
    pub fn records_every_run(&self) -> bool {
        self.file && self.level >= 0
    }

    /// Every line goes to `copy` as well as to the log, in text.
    pub fn with_copy_to(mut self, copy: Box<dyn Write>) -> Log {
        self.copy = Some(copy);
        self.copy_level = printout_level(self.level);
        self
    }

    /// Whether waits are counted down on the terminal.
    pub fn counts_down(&self) -> bool {
        self.countdown
    }

    /// Shows (or updates) the one countdown line: first the wait as the log line gave it
    /// (`retrying in 2.5s`, then `next attempt in 2.5s`), then whole seconds.
    pub fn count_down(&mut self, left: Duration) {
        if self.countdown {
            let shown = if self.showing {
                Duration::from_secs_f64(left.as_secs_f64().ceil())
            } else {
                // To the hundredth that the log line shows, rounded up: a few milliseconds
                // spent since it was written do not turn 2.5s into 2.49s.
                Duration::from_millis(left.as_millis().div_ceil(10) as u64 * 10)
            };
            let line = format!("\rretry: next attempt in {}\x1b[K", human(shown));
            let _ = self.sink.write_all(line.as_bytes());
            let _ = self.sink.flush();
            self.showing = true;
        }
    }

    /// Clears the countdown line, if one is shown.
    pub fn clear_countdown(&mut self) {
        if std::mem::take(&mut self.showing) {
            let _ = self.sink.write_all(b"\r\x1b[K");
            let _ = self.sink.flush();
        }
    }

    /// Whether the log is text lines, for a person, rather than JSON lines.
    pub fn is_text(&self) -> bool {
        self.format == LogFormat::Text
    }

    /// Whether entries of this event would be written at all: to the log, or to the copy.
    pub fn shows(&self, event: Event) -> bool {
        self.logs(event) || self.copies(event)
    }

    /// Whether entries of this event go to the log itself.
    fn logs(&self, event: Event) -> bool {
        event.level() <= self.level || (event == Event::Success && self.records_every_run())
    }

    /// Whether entries of this event go to the copy.
    fn copies(&self, event: Event) -> bool {
        self.copy.is_some() && event.level() <= self.copy_level
    }

    pub fn write(&mut self, entry: &Entry) {
        let copied = self.copies(entry.event);
        if !self.logs(entry.event) {
            if copied {
                self.copy_line(entry);
            }
            return;
        }
        self.clear_countdown();
        let mut line = match self.format {
            LogFormat::Text => {
                let mut line = self.leveled(text(entry, self.colour));
                if self.stamped {
                    line.insert(0, ' ');
                    line.insert_str(0, &crate::platform::time::local_time(SystemTime::now()));
                }
                line
            }
            LogFormat::Json => json(entry, self.depth),
        };
        line.push('\n');
        self.put(line.as_bytes());
        if copied {
            self.copy_line(entry);
        }
    }

    /// The entry's text line, to the copy.
    fn copy_line(&mut self, entry: &Entry) {
        let text = format!("{}\n", self.leveled(text(entry, false)));
        if let Some(copy) = &mut self.copy {
            let _ = copy.write_all(text.as_bytes());
        }
    }

    /// A text line with the nesting level after `retry: `, when above 1.
    fn leveled(&self, mut line: String) -> String {
        if self.depth > 1 {
            line.insert_str("retry: ".len(), &format!("level {}: ", self.depth));
        }
        line
    }
}

impl Log {
    /// Writes one line, in one write, so that it is not split by the child's own stderr
    /// output. A log that cannot be written must not change the run's outcome: a `--log-file`
    /// that refuses a line (EFBIG under a file size limit, ENOSPC) is said once on stderr, and
    /// the log, this line included, goes on where it would without `--log-file`: stderr, or
    /// `--output-on-failure`'s held output (which had a copy of each line until then).
    fn put(&mut self, line: &[u8]) {
        let written = self.sink.write_all(line).and_then(|()| self.sink.flush());
        let (Err(e), Some(path)) = (written, &self.path) else {
            return;
        };
        let (sink, rest): (Box<dyn Write>, _) = match self.copy.take() {
            Some(held) => (held, "the rest of the log is held with the output"),
            None => (
                Box::new(crate::platform::stderr::Stderr),
                "logging to stderr instead",
            ),
        };
        eprintln!(
            "retry: warning: cannot write --log-file {}: {}; {rest}",
            quote::quoted(path),
            crate::platform::files::why(&e)
        );
        self.path = None;
        self.sink = sink;
        let _ = self.sink.write_all(line);
        let _ = self.sink.flush();
    }
}

fn open_append(path: &std::path::Path) -> io::Result<File> {
    crate::platform::files::open_append(path)
}

/// The level of `--output-on-failure`'s printout at log level `level`: at least each attempt's
/// line under `-q`; nothing under `-qq`.
fn printout_level(level: i8) -> i8 {
    if level == 0 { 1 } else { level }
}

/// Whether to write colour, by `--color` and the environment, to a stream that is a terminal
/// or not: the one rule of every writer that colours (the log, `--explain --fleet`'s chart).
pub fn colour(choice: ColorChoice, terminal: bool) -> bool {
    colour_in(
        choice,
        terminal,
        std::env::var_os("NO_COLOR").as_deref(),
        std::env::var_os("CLICOLOR_FORCE").as_deref(),
    )
}

/// [`colour`], given NO_COLOR's and CLICOLOR_FORCE's values. The flag wins over the
/// environment, and NO_COLOR over CLICOLOR_FORCE, as in cargo and ripgrep (anstream's order):
/// NO_COLOR is what a person sets once for every program, and an empty value is unset
/// (https://no-color.org); CLICOLOR_FORCE of 0 is unset (https://bixense.com/clicolors/).
fn colour_in(
    choice: ColorChoice,
    terminal: bool,
    no_color: Option<&OsStr>,
    force: Option<&OsStr>,
) -> bool {
    match choice {
        ColorChoice::Always => true,
        ColorChoice::Never => false,
        ColorChoice::Auto if no_color.is_some_and(|v| !v.is_empty()) => false,
        ColorChoice::Auto if force.is_some_and(|v| !v.is_empty() && v != "0") => true,
        ColorChoice::Auto => terminal,
    }
}

/// ANSI colours for the words that say how an attempt went.
const RED: &str = "\x1b[31m";
const GREEN: &str = "\x1b[32m";
const BOLD_RED: &str = "\x1b[1;31m";
const RESET: &str = "\x1b[0m";

fn text(e: &Entry, colour: bool) -> String {
    let paint = |word: &str, code: &str| {
        if colour {
            format!("{code}{word}{RESET}")
        } else {
            word.to_string()
        }
    };
    let attempt = attempt_label(e.attempt, e.max_attempts);
    // A reason may quote what the store, the system or a header said: nothing in it may end
    // or hide the line.
    let reason = &*quote::clean(e.reason.as_deref().unwrap_or(""));
    match e.event {
        Event::Policy => format!("retry: policy: {reason}"),
        Event::Splay => format!(
            "retry: waiting {} before the first attempt ({reason})",
            human(e.delay.unwrap_or_default())
        ),
        Event::Start => format!("retry: {attempt}: starting"),
        Event::Failure => {
            let what = e.what().unwrap_or_else(|| "failed".to_string());
            let ran = e
                .duration
                .map(|d| format!(" after {}", human(d)))
                .unwrap_or_default();
            let next = e
                .delay
                .map(|d| format!("; retrying in {}", human(d)))
                .unwrap_or_default();
            let failed = paint("failed", RED);
            format!("retry: {attempt} {failed}: {what}{ran} ({reason}){next}")
        }
        // The attempt's own time: the run's may hold a --splay and the store's answer too.
        Event::Success if e.attempt <= 1 => format!(
            "retry: {attempt} {} in {}{}",
            paint("succeeded", GREEN),
            human(e.duration.unwrap_or(e.elapsed)),
            e.job_text()
        ),
        Event::Success => format!(
            "retry: {attempt} {} after {} failed; {} in all{}",
            paint("succeeded", GREEN),
            plural(e.attempt - 1, "attempt"),
            human(e.elapsed),
            e.job_text()
        ),
        Event::Signal
        | Event::Reset
        | Event::State
        | Event::TerminalCancel
        | Event::Stop
        | Event::NotStarted
        | Event::Hook
        | Event::Warning => format!("retry: {reason}"),
        Event::Refused => format!("retry: {}: {reason}", paint("not running", BOLD_RED)),
        Event::Report => format!("retry: error: {reason}"),
        Event::GiveUp => {
            let command = e.job_text();
            if let Some(how) = e.cancelled.as_deref().map(quote::clean) {
                // A cancelled attempt is one line: how, which attempt, how it ended.
                return format!(
                    "retry: {}: {how}; no more attempts{command}",
                    paint(reason, BOLD_RED)
                );
            }
            let last = match e.what() {
                Some(what) if !e.names_status => format!("; last {what}"),
                _ => String::new(),
            };
            // The shell prints "Segmentation fault" after retry ends by the command's signal:
            // this says whose it is.
            let last = match e.reraises.and_then(|sig| Status::Signal(sig).signal_name()) {
                Some(name) => format!("{last}; retry ends by {name} too, as the command did"),
                None => last,
            };
            let last = match (e.exits_instead, e.status_number()) {
                (Some(exit), Some(status)) => format!(
                    "{last}; retry exits {exit}: exit status {status} is not a success here"
                ),
                _ => last,
            };
            format!(
                "retry: {} after {} in {}: {reason}{last}{command}",
                paint("giving up", BOLD_RED),
                plural(e.attempt, "attempt"),
                human(e.elapsed)
            )
        }
    }
}

/// The resolved policy as fields of the JSON log's `policy` event.
#[derive(Clone, Debug, Serialize)]
pub struct PolicyFields {
    attempts: Option<u32>,
    max_time_ms: Option<u128>,
    attempt_timeout_ms: Option<u128>,
    backoff: &'static str,
    factor: Option<f64>,
    delays_ms: Option<Vec<u128>>,
    delay_ms: u128,
    max_delay_ms: u128,
    jitter: String,
    seed: Option<u64>,
    success_on: String,
    retry_on: Option<String>,
    fatal_on: String,
    hints: bool,
}

impl PolicyFields {
    pub fn of(p: &Policy) -> PolicyFields {
        let b = &p.backoff;
        let (backoff, factor, delays) = match &b.shape {
            Shape::Exponential { factor } => ("exponential", Some(*factor), None),
            Shape::Linear => ("linear", None, None),
            Shape::Constant => ("constant", None, None),
            Shape::Fibonacci => ("fibonacci", None, None),
            Shape::List(list) => (
                "list",
                None,
                Some(list.iter().map(Duration::as_millis).collect()),
            ),
        };
        // The adaptive delay falls back on, and blends with, its exponential shape.
        let backoff = if p.adaptive.is_some() {
            "adaptive"
        } else {
            backoff
        };
        PolicyFields {
            attempts: p.attempts,
            max_time_ms: p.max_time.map(|d| d.as_millis()),
            attempt_timeout_ms: p.attempt_timeout.map(|d| d.as_millis()),
            backoff,
            factor,
            delays_ms: delays,
            delay_ms: b.delay.as_millis(),
            max_delay_ms: b.max_delay.as_millis(),
            jitter: b.jitter.to_string(),
            seed: p.seed,
            success_on: p.rules.success.to_string(),
            retry_on: p.rules.retry_on.as_ref().map(ToString::to_string),
            fatal_on: super::words::fatal_list(p),
            hints: p.hints,
        }
    }
}

#[derive(Serialize)]
struct Json<'a> {
    event: &'static str,
    attempt: u32,
    max_attempts: Option<u32>,
    status: Option<i32>,
    signal: Option<std::borrow::Cow<'static, str>>,
    duration_ms: Option<u128>,
    delay_ms: Option<u128>,
    reason: Option<&'a str>,
    /// The give-up's exit status, where it is not the command's.
    #[serde(skip_serializing_if = "Option::is_none")]
    exit: Option<i32>,
    elapsed_ms: u128,
    timestamp: String,
    level: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    command: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    name: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    policy: Option<&'a PolicyFields>,
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    key: Option<&'a KeyFields>,
}

fn json(e: &Entry, level: u32) -> String {
    let record = Json {
        event: e.event.name(),
        attempt: e.attempt,
        max_attempts: e.max_attempts,
        status: e.status_number(),
        signal: e.status.and_then(Status::signal_name),
        duration_ms: e.duration.map(|d| d.as_millis()),
        delay_ms: e.delay.map(|d| d.as_millis()),
        reason: e.reason.as_deref(),
        exit: e.exits_instead,
        elapsed_ms: e.elapsed.as_millis(),
        timestamp: humantime::format_rfc3339_millis(SystemTime::now()).to_string(),
        level,
        command: e.command.as_deref(),
        name: e.job.as_deref(),
        policy: e.policy.as_ref(),
        key: e.key.as_ref(),
    };
    // A struct of plain fields always serializes.
    serde_json::to_string(&record).unwrap_or_default()
}

/// `attempt 2/5`, or `attempt 2` without a limit.
pub fn attempt_label(attempt: u32, max: Option<u32>) -> String {
    match max {
        Some(max) => format!("attempt {attempt}/{max}"),
        None => format!("attempt {attempt}"),
    }
}

fn plural(n: u32, word: &str) -> String {
    if n == 1 {
        format!("{n} {word}")
    } else {
        format!("{n} {word}s")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failure_line_names_status_time_reason_and_delay() {
        let mut e = Entry::new(Event::Failure, 2, Some(5), Duration::from_secs(3));
        e.status = Some(Status::Signal(9));
        e.duration = Some(Duration::from_millis(40));
        e.delay = Some(Duration::from_millis(1500));
        e.reason = Some("retryable".into());
        assert_eq!(
            text(&e, false),
            "retry: attempt 2/5 failed: killed by SIGKILL (status 137) after 40ms (retryable); retrying in 1.5s"
        );
        let v: serde_json::Value = serde_json::from_str(&json(&e, 1)).expect("valid JSON");
        assert_eq!(v["event"], "failure");
        assert_eq!(v["status"], 137);
        assert_eq!(v["signal"], "SIGKILL");
        assert_eq!(v["delay_ms"], 1500);
        assert_eq!(v["max_attempts"], 5);
    }

    #[test]
    fn the_flag_wins_then_no_color_then_clicolor_force_then_the_terminal() {
        use ColorChoice::{Always, Auto, Never};
        let os = |s: &'static str| Some(OsStr::new(s));
        for terminal in [true, false] {
            for no_color in [None, os(""), os("1")] {
                for force in [None, os(""), os("0"), os("1")] {
                    assert!(colour_in(Always, terminal, no_color, force));
                    assert!(!colour_in(Never, terminal, no_color, force));
                }
            }
        }
        // auto: the terminal decides, when neither variable says anything.
        assert!(colour_in(Auto, true, None, None));
        assert!(!colour_in(Auto, false, None, None));
        assert!(colour_in(Auto, true, os(""), os("0")));
        // NO_COLOR set and not empty: none, even on a terminal, even with CLICOLOR_FORCE.
        assert!(!colour_in(Auto, true, os("1"), None));
        assert!(!colour_in(Auto, true, os("1"), os("1")));
        // CLICOLOR_FORCE set and not 0 (nor empty): colour without a terminal.
        assert!(colour_in(Auto, false, None, os("1")));
        assert!(colour_in(Auto, false, os(""), os("yes")));
        assert!(!colour_in(Auto, false, None, os("0")));
        assert!(!colour_in(Auto, false, None, os("")));
    }

    #[test]
    fn colour_paints_only_the_verdict_words() {
        let mut e = Entry::new(Event::GiveUp, 3, Some(3), Duration::from_secs(2));
        e.reason = Some("attempts used up".into());
        e.status = Some(Status::Code(1));
        assert_eq!(
            text(&e, true),
            "retry: \x1b[1;31mgiving up\x1b[0m after 3 attempts in 2s: attempts used up; last exit status 1"
        );
        assert!(!text(&e, false).contains('\x1b'));
    }
}
