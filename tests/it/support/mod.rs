//! Helpers shared by the integration tests: the built binary and the one command builder every
//! test starts it with, and reading a child's output line by line with a generous time limit
//! that turns a hang into a failure.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::thread;
use std::time::Duration;

/// Long enough for a loaded machine; it only turns a hang into a failure.
pub const PATIENCE: Duration = Duration::from_secs(30);

/// The built binary's path, for a test that has another program start it.
pub fn bin() -> &'static Path {
    Path::new(assert_cmd::cargo::cargo_bin!("retry"))
}

/// Keeps `command`, retry or a program that starts it, away from the user's own config file
/// and from any retry that runs the test suite itself (its variables, the idempotency key
/// included, are not inherited).
pub fn hermetic(command: &mut Command) -> &mut Command {
    command
        .env_remove("RETRY_CONFIG")
        .env_remove("RETRY_DEPTH")
        .env_remove("RETRY_MAX_ATTEMPTS")
        .env_remove("RETRY_IDEMPOTENCY_KEY")
        .env("XDG_CONFIG_HOME", "/nonexistent/retry-tests")
}

/// The built binary, [`hermetic`]. Every other builder of the tests starts from this one.
pub fn retry() -> Command {
    let mut c = Command::new(bin());
    hermetic(&mut c);
    c
}

/// Whether `tool` is on PATH, for a test that needs a program a fresh machine may lack. When it
/// is missing the test should return at once: this says so loudly on stderr, with how to
/// install it. Under CI (`CI` set), where `.ci/run` installs every tool, a missing tool fails
/// the test instead.
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
    // Straight to stderr: the test harness captures eprintln! of a passing test.
    let _ = writeln!(
        std::io::stderr(),
        "\n*** SKIPPED: this test needs `{tool}`, which is not on PATH. Install it \
         (`{install}`) to run it; with CI set, a missing tool fails the test. ***"
    );
    false
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

/// Starts retry with piped stdout and stderr, read line by line.
pub fn start(args: &[&str]) -> (Child, Lines, Lines) {
    let mut command = retry();
    command.args(args);
    start_command(command)
}

/// Starts this retry command, stdin empty, its stdout and stderr read line by line.
pub fn start_command(mut command: Command) -> (Child, Lines, Lines) {
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start retry");
    let out = Lines::of(child.stdout.take().expect("stdout"));
    let err = Lines::of(child.stderr.take().expect("stderr"));
    (child, out, err)
}

/// Waits for the child to end, failing the test if it takes longer than `PATIENCE`.
pub fn wait(child: &mut Child) -> std::process::ExitStatus {
    let start = std::time::Instant::now();
    loop {
        if let Some(status) = child.try_wait().expect("wait for retry") {
            return status;
        }
        if start.elapsed() > PATIENCE {
            let _ = child.kill();
            panic!("retry did not end within {PATIENCE:?}");
        }
        thread::sleep(Duration::from_millis(5));
    }
}

/// [`retry`] as an assert_cmd command, for tests that hand it stdin whole.
pub fn cmd() -> assert_cmd::Command {
    assert_cmd::Command::from_std(retry())
}

pub mod http;
pub mod keyed;
pub mod redis;

/// /dev/full, opened for writing, or `None` (and a message) where there is none.
pub fn dev_full() -> Option<std::fs::File> {
    match std::fs::File::options().write(true).open("/dev/full") {
        Ok(f) => Some(f),
        Err(e) => {
            eprintln!("SKIPPED: no /dev/full to write to ({e})");
            None
        }
    }
}

/// Runs `script` in `sh -c`, with the built retry as `$0`, and waits for its output: for a
/// test that starts retry the way a shell does (closed or redirected descriptors).
pub fn retry_in_sh(script: &str) -> std::process::Output {
    let mut sh = Command::new("sh");
    hermetic(&mut sh);
    sh.args(["-c", script])
        .arg(bin())
        .stdin(Stdio::null())
        .output()
        .expect("sh runs")
}
