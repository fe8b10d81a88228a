//! Helpers shared by the integration tests: the built binary and the one command builder every
//! test starts it with ([`retry`], then [`Launch`] to run or start it), a finished [`Run`], and
//! reading a child's output line by line, all under one time limit that turns a hang into a
//! failure.
//!
//! It stands on the assert-rs crates: assert_cmd finds the binary (`cargo_bin!`) and checks a
//! finished run ([`Launch::assert`], [`Run::assert`]: its status, and with predicates the part
//! of an output a test is about, `predicate::str::contains(..)`), and snapbox checks an output
//! that is the behaviour whole ([`assert_output`]). The builder stays a std `Command`, which
//! assert_cmd's own wraps without its `spawn`: the tests also start retry and talk to it as it
//! runs (signals, a terminal, readiness lines), and a run is bounded by [`PATIENCE`].

use std::ffi::OsStr;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::sync::Mutex;
use std::sync::mpsc::{self, Receiver};
use std::thread;
use std::time::{Duration, Instant};

use serde_json::Value;

pub use assert_cmd::assert::Assert;
pub use predicates::prelude::{PredicateBooleanExt, predicate};

/// The one time limit of the tests: long enough for a loaded machine; it only turns a hang
/// into a failure, and never synchronises anything.
pub const PATIENCE: Duration = Duration::from_secs(60);

/// The built binary's path, as assert_cmd finds it (the path Cargo gives the tests at build
/// time), for the builder and for a test that has another program start it.
pub fn bin() -> &'static Path {
    assert_cmd::cargo::cargo_bin!("retry")
}

/// Keeps `command`, retry or a program that starts it, away from the user's own config file
/// and from any retry that runs the test suite itself (its variables, the idempotency key
/// included, are not inherited), and starts it with the signals the tests send at their
/// defaults ([`default_signals`]).
pub fn hermetic(command: &mut Command) -> &mut Command {
    default_signals();
    command
        .env_remove("RETRY_CONFIG")
        .env_remove("RETRY_DEPTH")
        .env_remove("RETRY_MAX_ATTEMPTS")
        .env_remove("RETRY_ATTEMPT")
        .env_remove("RETRY_IDEMPOTENCY_KEY")
        .env_remove("RETRY_STOP_WITH_PARENT")
        // Colour is the tests' own choice: a CI runner's CLICOLOR_FORCE or a developer's
        // NO_COLOR would change every log the tests compare.
        .env_remove("NO_COLOR")
        .env_remove("CLICOLOR_FORCE")
        .env("XDG_CONFIG_HOME", "/nonexistent/retry-tests")
}

/// Sets the signals the tests send back to their defaults in the test process, once, and so
/// in every program it starts, whatever the suite itself was started with: a background job
/// of a script (`cargo test &`) has SIGINT and SIGQUIT ignored, and `nohup` SIGHUP. retry, as
/// a shell does, keeps a signal ignored at its start ignored (the tests of that ignore it
/// themselves), so a test of what a Ctrl-C or a hang-up does would wait for nothing. The
/// job-control signals are left as they are: a test binary in the background must still stop
/// when it touches the terminal.
fn default_signals() {
    use nix::sys::signal::{SigHandler, Signal, signal};
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        for sig in [
            Signal::SIGINT,
            Signal::SIGQUIT,
            Signal::SIGHUP,
            Signal::SIGTERM,
            Signal::SIGUSR1,
            Signal::SIGUSR2,
            Signal::SIGALRM,
        ] {
            // SAFETY: SIG_DFL installs no handler, and the test harness has none of its own
            // for these signals that this could replace.
            let _ = unsafe { signal(sig, SigHandler::SigDfl) };
        }
    });
}

/// The built binary, [`hermetic`]: the one builder of the tests. Add arguments and environment
/// as to any `Command`, then [`Launch::run`] or [`Launch::start`] it.
pub fn retry() -> Command {
    let mut c = Command::new(bin());
    hermetic(&mut c);
    c
}

/// Whether `tool` is on PATH, for a test that needs a program a fresh machine may lack. When it
/// is missing the test should return at once: this says so loudly on stderr, with how to
/// install it, and the run's end counts it ([`skipped`]). Under CI (`CI` set), where `.ci/run`
/// installs every tool, a missing tool fails the test instead.
pub fn have(tool: &str, install: &str) -> bool {
    let found = std::env::var_os("PATH").is_some_and(|path| {
        std::env::split_paths(&path).any(|dir| {
            std::fs::metadata(dir.join(tool)).is_ok_and(|m| {
                use std::os::unix::fs::PermissionsExt;
                m.is_file() && m.permissions().mode() & 0o111 != 0
            })
        })
    });
    if found {
        return true;
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "`{tool}` is not on PATH, and CI must run every test: `{install}` (.ci/run does it)"
    );
    skipped(&format!(
        "needs `{tool}`, which is not on PATH: install it (`{install}`) to run it; with CI set, \
         a missing tool fails the test"
    ));
    false
}

/// The tests of this run that returned early without testing what they are for, each with why.
static SKIPPED: Mutex<Vec<(String, String)>> = Mutex::new(Vec::new());

/// Tells that the calling test skips (all or part of what it tests) for `why`, as it returns:
/// at once on stderr, and again in a list at the end of the run, after libtest's own summary,
/// which counts it as passed since libtest has no status for a skip. The list is printed when
/// the test process exits (`atexit`): every integration test runs in this one process, so it
/// sees them all, whatever filter or number of threads the run was given, with plain `cargo
/// test` and nothing to install.
pub fn skipped(why: &str) {
    let test = thread::current().name().unwrap_or("a test").to_owned();
    // Straight to stderr: the test harness captures eprintln! of a passing test.
    let _ = writeln!(std::io::stderr(), "\n*** SKIPPED: {test} {why}. ***");
    let mut list = SKIPPED
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if list.is_empty() {
        static AT_EXIT: std::sync::Once = std::sync::Once::new();
        AT_EXIT.call_once(|| {
            // SAFETY: `tell_skipped` is an `extern "C" fn()` that neither unwinds (it catches
            // nothing, and what it calls does not panic) nor calls exit; registering it has no
            // other requirement.
            let _ = unsafe { nix::libc::atexit(tell_skipped) };
        });
    }
    list.push((test, why.to_owned()));
}

/// Prints the tests [`skipped`] in this run, grouped by why, once every test has ended.
extern "C" fn tell_skipped() {
    let list = SKIPPED
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let mut why: Vec<&str> = list.iter().map(|(_, why)| why.as_str()).collect();
    why.sort_unstable();
    why.dedup();
    let mut text = format!(
        "\n*** {} test{} of this run SKIPPED, and counted as passed above: ***\n",
        list.len(),
        if list.len() == 1 { "" } else { "s" }
    );
    for reason in why {
        let mut tests: Vec<&str> = list
            .iter()
            .filter(|(_, w)| w == reason)
            .map(|(test, _)| test.as_str())
            .collect();
        tests.sort_unstable();
        text.push_str(&format!("  {} {reason}:\n", tests.len()));
        for test in tests {
            text.push_str(&format!("    {test}\n"));
        }
    }
    let _ = std::io::stderr().write_all(text.as_bytes());
}

/// Lines of a stream, read on a thread of their own.
pub struct Lines(Receiver<String>);

impl Lines {
    pub fn of(stream: impl Read + Send + 'static) -> Lines {
        let (tx, rx) = mpsc::channel();
        thread::spawn(move || {
            for line in BufReader::new(stream).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Lines(rx)
    }

    /// Waits for a line containing `needle`; returns the lines up to it.
    pub fn until(&self, needle: &str) -> Vec<String> {
        let mut seen = Vec::new();
        loop {
            match self.0.recv_timeout(PATIENCE) {
                Ok(line) => {
                    let done = line.contains(needle);
                    seen.push(line);
                    if done {
                        return seen;
                    }
                }
                Err(_) => panic!("no line with {needle:?}; saw {seen:?}"),
            }
        }
    }

    /// Every remaining line, once the stream is closed.
    pub fn rest(&self) -> Vec<String> {
        let mut seen = Vec::new();
        while let Ok(line) = self.0.recv_timeout(PATIENCE) {
            seen.push(line);
        }
        seen
    }
}

/// What a test does with a retry command it has built (from [`retry`], a plain `Command`):
/// run it to the end, or start it and read its output as it comes, both within [`PATIENCE`].
/// These set stdin, stdout and stderr; a test that hands retry descriptors of its own (a file
/// as stdin, /dev/full as stdout) sets them and calls `output()` or `status()` instead.
pub trait Launch {
    /// Runs it to the end, stdin empty, its output kept.
    fn run(&mut self) -> Run;
    /// Runs it to the end with `input` on stdin.
    fn run_with_stdin(&mut self, input: impl Into<Vec<u8>>) -> Run;
    /// Starts it, stdin empty, its stdout and stderr read line by line.
    fn start(&mut self) -> (Started, Lines, Lines);
    /// Runs it to the end, stdin empty, and hands its output to assert_cmd's [`Assert`]: for a
    /// test that checks its status and parts of its output.
    fn assert(&mut self) -> Assert {
        self.run().assert()
    }
}

impl Launch for Command {
    fn run(&mut self) -> Run {
        self.stdin(Stdio::null());
        finish(self, None)
    }

    fn run_with_stdin(&mut self, input: impl Into<Vec<u8>>) -> Run {
        self.stdin(Stdio::piped());
        finish(self, Some(input.into()))
    }

    fn start(&mut self) -> (Started, Lines, Lines) {
        let mut child = self
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start retry");
        let out = Lines::of(child.stdout.take().expect("stdout"));
        let err = Lines::of(child.stderr.take().expect("stderr"));
        (Started(child), out, err)
    }
}

/// A started retry (or a program that runs it), used as the `Child` it holds. A test that
/// fails before it ends leaves nothing running: dropped while it still runs, it gets SIGTERM,
/// on which retry stops its attempt's whole group, and SIGKILL a few seconds later.
pub struct Started(pub Child);

impl std::ops::Deref for Started {
    type Target = Child;
    fn deref(&self) -> &Child {
        &self.0
    }
}

impl std::ops::DerefMut for Started {
    fn deref_mut(&mut self) -> &mut Child {
        &mut self.0
    }
}

impl Drop for Started {
    fn drop(&mut self) {
        use nix::sys::signal::{Signal, kill};
        use nix::unistd::Pid;
        if !matches!(self.0.try_wait(), Ok(None)) {
            return;
        }
        let pid = Pid::from_raw(self.0.id() as i32);
        let _ = kill(pid, Signal::SIGTERM);
        if !within(Duration::from_secs(3), || {
            !matches!(self.0.try_wait(), Ok(None))
        }) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
}

/// `retry ARGS`, run to the end.
pub fn run<S: AsRef<OsStr>>(args: &[S]) -> Run {
    retry().args(args).run()
}

/// `retry ARGS -- sh -c SCRIPT`, run to the end.
pub fn run_sh(args: &[&str], script: &str) -> Run {
    retry().args(args).args(["--", "sh", "-c", script]).run()
}

/// `retry ARGS`, started.
pub fn start(args: &[&str]) -> (Started, Lines, Lines) {
    retry().args(args).start()
}

/// Runs `command` to the end, reading its output on threads of their own so that a full pipe
/// cannot hold it; a run or an output still open after [`PATIENCE`] fails the test.
fn finish(command: &mut Command, input: Option<Vec<u8>>) -> Run {
    let started = Instant::now();
    let mut child = command
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start retry");
    if let (Some(input), Some(mut stdin)) = (input, child.stdin.take()) {
        // A command that stops reading early closes the pipe: not the test's failure.
        thread::spawn(move || {
            let _ = stdin.write_all(&input);
        });
    }
    let read_all = |mut stream: Box<dyn Read + Send>| {
        let (tx, rx) = mpsc::channel();
        thread::spawn(move || {
            let mut bytes = Vec::new();
            let _ = stream.read_to_end(&mut bytes);
            let _ = tx.send(bytes);
        });
        rx
    };
    let stdout = read_all(Box::new(child.stdout.take().expect("stdout")));
    let stderr = read_all(Box::new(child.stderr.take().expect("stderr")));
    let status = wait(&mut child);
    let left = PATIENCE.saturating_sub(started.elapsed());
    let collect = |rx: Receiver<Vec<u8>>, name: &str| {
        rx.recv_timeout(left)
            .unwrap_or_else(|_| panic!("retry's {name} still open {PATIENCE:?} after it started"))
    };
    let out = Output {
        status,
        stdout: collect(stdout, "stdout"),
        stderr: collect(stderr, "stderr"),
    };
    Run {
        out,
        took: started.elapsed(),
    }
}

/// One finished run of retry: its [`Output`] (which it derefs to), and how long it took.
#[derive(Debug)]
pub struct Run {
    pub out: Output,
    pub took: Duration,
}

impl std::ops::Deref for Run {
    type Target = Output;

    fn deref(&self) -> &Output {
        &self.out
    }
}

impl Run {
    /// The run's output, for assert_cmd's checks of its status and, with predicates, of parts
    /// of its output; a failed check shows the whole output and how long the run took.
    pub fn assert(&self) -> Assert {
        Assert::new(self.out.clone()).append_context("took", format!("{:?}", self.took))
    }

    pub fn code(&self) -> Option<i32> {
        self.out.status.code()
    }

    pub fn stdout(&self) -> String {
        String::from_utf8_lossy(&self.out.stdout).into_owned()
    }

    pub fn stderr(&self) -> String {
        String::from_utf8_lossy(&self.out.stderr).into_owned()
    }

    /// retry's own text log lines on stderr, without the time that -v puts before them.
    pub fn log(&self) -> Vec<String> {
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
    pub fn lines(&self) -> Vec<String> {
        self.stdout().lines().map(str::to_owned).collect()
    }

    /// Every stderr line parsed as JSON (for runs with `--log-format json`).
    pub fn json(&self) -> Vec<Value> {
        json_lines(&self.stderr())
    }

    /// The delay_ms of every failure that was followed by a retry.
    pub fn delays(&self) -> Vec<u64> {
        self.json()
            .iter()
            .filter(|v| v["event"] == "failure")
            .filter_map(|v| v["delay_ms"].as_u64())
            .collect()
    }

    /// How many attempts failed, from the JSON log.
    pub fn failures(&self) -> usize {
        self.json()
            .iter()
            .filter(|v| v["event"] == "failure")
            .count()
    }

    /// Everything, for assertion messages.
    pub fn show(&self) -> String {
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
pub fn is_local_time(word: &str) -> bool {
    let b = word.as_bytes();
    b.len() == "2026-11-21T21:16:03.254+01:00".len()
        && b[4] == b'-'
        && b[10] == b'T'
        && b[19] == b'.'
        && (b[23] == b'+' || b[23] == b'-')
}

/// Every line of `text` parsed as JSON.
pub fn json_lines(text: &str) -> Vec<Value> {
    text.lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not a JSON line ({e}): {l:?}")))
        .collect()
}

/// Asserts that `actual` is the `expected` text, whole: `[..]` stands for any text within a
/// line and `...` for any lines, once what differs from run to run is redacted (how long an
/// attempt or a run took as `[ELAPSED]`, the time of day `-v` puts first as `[TIME]`). With
/// `SNAPSHOTS=overwrite`, a failing `str![[...]]` in the test is rewritten to what was printed.
/// A test's temporary folder is `[TMP]`.
#[track_caller]
pub fn assert_output(actual: impl snapbox::IntoData, expected: impl snapbox::IntoData) {
    let mut redactions = snapbox::Redactions::new();
    // [0-9], not \d: the tests link retry's regex, built without the Unicode tables \d needs.
    let duration = r"[0-9]+(?:\.[0-9]+)?(?:ms|s|m|h)(?: [0-9]+(?:\.[0-9]+)?(?:ms|s|m))*";
    let temp = regex::escape(&std::env::temp_dir().display().to_string());
    let varying = [
        // A test's own folder: tempfile's `.tmpXXXXXX`.
        ("[TMP]", format!(r"{temp}/\.tmp[0-9A-Za-z]+")),
        (
            "[TIME]",
            r"[0-9]{4}-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]:[0-9][0-9]\.[0-9]{3}[+-][0-9][0-9]:[0-9][0-9]".to_string(),
        ),
        // `exit status 7 after 7ms (retryable)`, `after 2 attempts in 20ms`, `89ms in all`
        ("[ELAPSED]", format!(r"after (?<redacted>{duration}) \(")),
        (
            "[ELAPSED]",
            format!(r"attempts? in (?<redacted>{duration})"),
        ),
        ("[ELAPSED]", format!(r"(?<redacted>{duration}) in all")),
    ];
    for (placeholder, pattern) in varying {
        let pattern = regex::Regex::new(&pattern).expect("a pattern");
        redactions
            .insert(placeholder, pattern)
            .expect("a redaction");
    }
    snapbox::Assert::new()
        .action_env(snapbox::assert::DEFAULT_ACTION_ENV)
        .redact_with(redactions)
        .eq(actual, expected);
}

/// Waits for `path` to appear, as a test's command marks that it got somewhere; whether it did
/// within [`PATIENCE`].
pub fn appears(path: &Path) -> bool {
    within(PATIENCE, || path.exists())
}

/// Waits for the child to end, failing the test if it takes longer than `PATIENCE`.
pub fn wait(child: &mut Child) -> std::process::ExitStatus {
    let mut status = None;
    within(PATIENCE, || {
        status = child.try_wait().expect("wait for retry");
        status.is_some()
    });
    status.unwrap_or_else(|| {
        let _ = child.kill();
        panic!("retry did not end within {PATIENCE:?}");
    })
}

/// Whether `done` holds within `limit`, asked every few milliseconds: how the tests wait for
/// what nothing tells them of (a process gone, a file written).
pub fn within(limit: Duration, mut done: impl FnMut() -> bool) -> bool {
    let start = Instant::now();
    loop {
        if done() {
            return true;
        }
        if start.elapsed() > limit {
            return false;
        }
        thread::sleep(Duration::from_millis(5));
    }
}

/// A process as /proc/PID/stat gives it: its name, its state and its parent's pid.
pub struct Stat {
    pub name: String,
    pub state: String,
    pub ppid: u32,
}

impl Stat {
    pub fn of(pid: u32) -> Option<Stat> {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        // `pid (name) state ppid ...`: the name may hold spaces and parentheses.
        let (name, rest) = stat.split_once(" (")?.1.rsplit_once(')')?;
        let mut fields = rest.split_whitespace();
        Some(Stat {
            name: name.to_string(),
            state: fields.next()?.to_string(),
            ppid: fields.next()?.parse().ok()?,
        })
    }
}

/// Whether a process with this pid still runs (a zombie counts as gone).
pub fn running(pid: i32) -> bool {
    u32::try_from(pid)
        .ok()
        .and_then(Stat::of)
        .is_some_and(|s| !matches!(s.state.as_str(), "Z" | "X"))
}

pub mod http;
pub mod keyed;
pub mod redis;

/// /dev/full, opened for writing, or `None` (and a message) where there is none.
pub fn dev_full() -> Option<std::fs::File> {
    match std::fs::File::options().write(true).open("/dev/full") {
        Ok(f) => Some(f),
        Err(e) => {
            skipped(&format!(
                "needs /dev/full to write to, which this machine lacks ({e})"
            ));
            None
        }
    }
}

/// Runs `script` in `sh -c`, with the built retry as `$0`, to the end (within [`PATIENCE`]):
/// for a test that starts retry the way a shell does (closed or redirected descriptors).
pub fn retry_in_sh(script: &str) -> Run {
    let mut sh = Command::new("sh");
    hermetic(&mut sh);
    sh.args(["-c", script]).arg(bin()).run()
}

/// The built retry, started by `sh` under a file size limit of `blocks` blocks of 512 bytes
/// (`sh -c 'ulimit -f N; exec "$@"' sh RETRY`), as systemd's `LimitFSIZE=` or a hardened cron
/// job starts it: add retry's arguments, then run or start it. The test's own pipes are not
/// files, so only what retry and the command write to files meets the limit.
pub fn retry_under_file_limit(blocks: u32) -> Command {
    let mut sh = Command::new("sh");
    hermetic(&mut sh);
    sh.args(["-c", &format!("ulimit -f {blocks}; exec \"$@\""), "sh"])
        .arg(bin());
    sh
}
