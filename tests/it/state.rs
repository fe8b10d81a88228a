//! State shared between runs (`--key`) through the built binary, with real processes
//! and real files: the breaker opening across runs and refusing with 75 without running the
//! command, one probe among many runs started at once, a probe that dies, the budget across
//! runs, corrupt and unwritable state, `--reset-state` and `--explain`.
//!
//! Each test has its own state directory. Waits for a breaker's open time are real but short
//! (a few hundred milliseconds), and every assertion on them leaves a wide margin.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, mpsc};
use std::thread;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::support::keyed::{self, Setup, output, stderr, with};
use crate::support::{self, PredicateBooleanExt, predicate};

/// The scenarios every store runs (tests/it/support/keyed.rs), here on the state directory.
macro_rules! on_files {
    ($($name:ident),* $(,)?) => {
        $(
            #[test]
            fn $name() {
                keyed::$name(&Setup::file());
            }
        )*
    };
}

keyed::scenarios!(on_files);

#[test]
fn a_corrupt_state_file_is_moved_aside_and_the_run_goes_on_as_for_a_new_key() {
    let s = Setup::file();
    fs::create_dir_all(s.state()).expect("state dir");
    fs::write(s.file_of("api"), b"{\"version\":1,\"state\":").expect("write");
    let out = s.run(&["--key", "api", "-n", "2", "-d", "1ms"], 3);
    assert_eq!(out.status.code(), Some(3), "the outcome stands");
    assert_eq!(s.ran(), 2);
    out.assert()
        .stderr(predicate::str::contains("could not be read"));
    let aside = fs::read(s.state().join("api.json.corrupt")).expect("moved aside");
    assert_eq!(aside, b"{\"version\":1,\"state\":");
    let state: Value =
        serde_json::from_slice(&fs::read(s.file_of("api")).expect("new state")).expect("JSON");
    assert_eq!(
        state["state"]["breaker"]["failures"]
            .as_array()
            .map(Vec::len),
        Some(2)
    );
}

#[test]
fn an_unwritable_state_directory_is_a_warning_and_changes_no_outcome() {
    // A file where the directory should be: unwritable for root too.
    let s = Setup::file();
    fs::write(s.state(), b"a file where the directory should be").expect("write");
    let out = s.run(&["--key", "api", "-n", "2", "-d", "1ms"], 6);
    let log = made_no_retry_without_its_state(&s, &out);
    assert_eq!(
        log.matches("warning").count(),
        1,
        "one warning, not one per attempt: {log}"
    );
    let ok = s.run(&["--key", "api", "-n", "1"], 0);
    ok.assert().code(0);
}

fn is_root() -> bool {
    fs::metadata("/proc/self")
        .map(|m| std::os::unix::fs::MetadataExt::uid(&m) == 0)
        .unwrap_or(false)
}

/// `c` made as the user `nobody` (65534), for a test of what an ordinary user meets (root
/// writes into a read-only directory): from a copy of retry in the test's own directory, which
/// becomes nobody's, as the build's own path may not be open to it.
fn as_nobody(s: &Setup, c: &Command) -> Command {
    const NOBODY: u32 = 65534;
    let copy = s.dir.path().join("retry");
    fs::copy(crate::support::bin(), &copy).expect("copy of retry");
    // A process another test forks while the copy is being written holds it open for writing
    // until it execs: the copy cannot run before then (ETXTBSY).
    let runs = support::within(support::PATIENCE, || {
        !matches!(
            Command::new(&copy).arg("--version").output(),
            Err(e) if e.kind() == std::io::ErrorKind::ExecutableFileBusy
        )
    });
    assert!(runs, "the copy of retry stayed busy");
    for path in [s.dir.path().to_path_buf(), s.state(), copy.clone()] {
        std::os::unix::fs::chown(&path, Some(NOBODY), Some(NOBODY)).expect("chown to nobody");
    }
    let mut nobody = Command::new(copy);
    nobody.args(c.get_args());
    for (name, value) in c.get_envs() {
        match value {
            Some(value) => nobody.env(name, value),
            None => nobody.env_remove(name),
        };
    }
    // std drops root's supplementary groups as it changes the user.
    std::os::unix::process::CommandExt::uid(&mut nobody, NOBODY);
    std::os::unix::process::CommandExt::gid(&mut nobody, NOBODY);
    nobody
}

#[test]
fn a_read_only_state_directory_is_a_warning_and_changes_no_outcome() {
    let s = Setup::file();
    fs::create_dir_all(s.state()).expect("state dir");
    let mut c = s.retry(&["--key", "api", "-n", "2", "-d", "1ms"]);
    c.arg("--").args(s.command(6));
    if is_root() {
        c = as_nobody(&s, &c);
    }
    fs::set_permissions(s.state(), fs::Permissions::from_mode(0o500)).expect("chmod");
    let out = output(c);
    let log = made_no_retry_without_its_state(&s, &out);
    assert!(!s.file_of("api").exists(), "nothing was written: {log}");
}

/// The run of `s.command(6)` under the key `api`, which may make two attempts, could not keep
/// its key's state: with a warning, it made its first attempt and no retry its budget would
/// have paid for, since a crowd of such runs must not spend more than the budget holds; the
/// exit status is the command's. Its log.
fn made_no_retry_without_its_state(s: &Setup, out: &crate::support::Run) -> String {
    out.assert().code(6);
    assert_eq!(s.ran(), 1, "a first attempt, and no retry");
    let log = stderr(out);
    assert!(
        log.contains("warning: key 'api'")
            && log
                .contains("this run makes no retry its breaker or budget would have had to allow"),
        "{log}"
    );
    log
}

#[test]
fn a_key_never_reaches_outside_the_state_directory() {
    let s = Setup::file();
    let out = s.run(&["--key", "../../escape", "-n", "2", "-d", "1ms"], 1);
    out.assert().code(1);
    let names: Vec<String> = fs::read_dir(s.state())
        .expect("state dir")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    // One name with no slash in it: "../" became "%2E.%2F".
    assert!(
        names.contains(&"%2E.%2F..%2Fescape.json".to_string()),
        "{names:?}"
    );
    assert!(!s.dir.path().join("escape.json").exists());
    assert!(!Path::new(s.dir.path()).join("../escape.json").exists());
}

#[test]
fn a_lock_held_by_a_stuck_process_allows_the_first_attempt_and_no_retry() {
    let s = Setup::file();
    fs::create_dir_all(s.state()).expect("state dir");
    let lock = fs::File::create(s.state().join("api.lock")).expect("lock file");
    lock.lock().expect("held by the test");
    let started = Instant::now();
    let out = s.run(&["--key", "api", "-n", "3", "-d", "1ms"], 2);
    assert_eq!(out.status.code(), Some(2), "the outcome stands");
    let log = stderr(&out);
    assert_eq!(s.ran(), 1, "no retry without the budget: {log}");
    assert!(
        log.contains("api.lock' was held for 1")
            && log.contains("by one process that made no progress; this run makes no retry"),
        "{log}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(4),
        "a stuck holder ends the wait after a second: {log}"
    );
    drop(lock);
    assert!(
        !s.file_of("api").exists(),
        "nothing was written without the lock"
    );
}

/// The test holds the key's lock as retry does (flock, through std's `File::lock`) and counts
/// a turn in it every `every`, as runs passing it on do, until dropped.
struct Turning {
    done: Arc<AtomicBool>,
    thread: Option<thread::JoinHandle<()>>,
}

impl Turning {
    fn hold(path: &Path, every: Duration) -> Turning {
        let lock = fs::File::options()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)
            .expect("lock file");
        lock.lock().expect("held by the test");
        let done = Arc::new(AtomicBool::new(false));
        let thread = {
            let done = Arc::clone(&done);
            thread::spawn(move || {
                use std::os::unix::fs::FileExt;
                while !done.load(Ordering::SeqCst) {
                    let mut turn = [0u8; 8];
                    let _ = lock.read_at(&mut turn, 0);
                    let next = u64::from_le_bytes(turn).wrapping_add(1);
                    let _ = lock.write_at(&next.to_le_bytes(), 0);
                    thread::sleep(every);
                }
            })
        };
        Turning {
            done,
            thread: Some(thread),
        }
    }
}

impl Drop for Turning {
    fn drop(&mut self) {
        self.done.store(true, Ordering::SeqCst);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// A run whose key's lock keeps changing hands past the wait's bound (made 500 ms here, 5 s
/// otherwise) runs its first attempt and makes no retry: it cannot take a token for it.
#[test]
fn a_lock_that_keeps_changing_hands_past_the_wait_allows_the_first_attempt_only() {
    let s = Setup::file();
    fs::create_dir_all(s.state()).expect("state dir");
    let turning = Turning::hold(&s.state().join("api.lock"), Duration::from_millis(50));
    let mut c = s.retry(&["--key", "api", "-n", "3", "-d", "1ms"]);
    c.env("RETRY_TEST_LOCK_WAIT", "500")
        .arg("--")
        .args(s.command(2));
    let out = output_within(c, Duration::from_secs(30));
    drop(turning);
    let log = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "the outcome stands: {log}");
    assert_eq!(s.ran(), 1, "{log}");
    assert!(
        log.contains("api.lock' kept changing hands for ")
            && log.contains("never to this run: other runs are using the key at once"),
        "{log}"
    );
    assert!(
        log.contains(
            "the state of key 'api' is unknown to this run, and no retry is made without its breaker and budget"
        ),
        "{log}"
    );
    assert!(!log.contains("going on without"), "{log}");
}

/// Nothing retry waits on holds it past --max-time: not the key's lock either.
#[test]
fn the_wait_for_the_keys_lock_ends_at_max_time() {
    let s = Setup::file();
    fs::create_dir_all(s.state()).expect("state dir");
    // Changing hands, so that only the wait's bound (5 s) or the deadline ends it.
    let turning = Turning::hold(&s.state().join("api.lock"), Duration::from_millis(50));
    let mut c = s.retry(&["--key", "api", "-n", "3", "-d", "1ms", "--max-time", "1s"]);
    c.arg("--").args(s.command(2));
    let started = Instant::now();
    let out = output_within(c, Duration::from_secs(30));
    let took = started.elapsed();
    drop(turning);
    let log = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{log}");
    assert_eq!(s.ran(), 1, "{log}");
    assert!(
        log.contains("was not free before the --max-time deadline"),
        "{log}"
    );
    assert!(took < Duration::from_secs(4), "took {took:?}: {log}");
}

/// Runs `c` to its end, failing the test (and killing it) if it takes longer than `limit`: a
/// hang is a failure, not a stuck suite.
fn output_within(mut c: Command, limit: Duration) -> Output {
    let child = c
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("retry starts");
    let pid = nix::unistd::Pid::from_raw(i32::try_from(child.id()).expect("a pid"));
    let (tx, rx) = mpsc::channel();
    thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    match rx.recv_timeout(limit) {
        Ok(out) => out.expect("retry ends"),
        Err(_) => {
            let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGKILL);
            panic!("retry did not end within {limit:?}");
        }
    }
}

/// A valid state file of key `api` whose breaker is open for an hour, moved to `to`.
fn open_state_at(s: &Setup, to: &Path) {
    s.run(&with(&keyed::breaker("1h"), &["-n", "3"]), 1);
    s.run(&keyed::breaker("1h"), 0).assert().code(75);
    fs::rename(s.file_of("api"), to).expect("moved");
}

#[test]
fn a_link_planted_as_the_state_file_is_neither_followed_nor_written_through() {
    let s = Setup::file();
    let victim = s.dir.path().join("victim");
    open_state_at(&s, &victim);
    let before = fs::read(&victim).expect("victim");
    std::os::unix::fs::symlink(&victim, s.file_of("api")).expect("linked");
    // Followed, the victim's open breaker would refuse the run.
    let out = s.run(&with(&keyed::breaker("1h"), &["-n", "1"]), 0);
    out.assert().code(0);
    assert_eq!(s.ran(), 4);
    out.assert()
        .stderr(predicate::str::contains("it is a symbolic link"));
    assert_eq!(fs::read(&victim).expect("victim"), before, "untouched");
    let aside = fs::symlink_metadata(s.state().join("api.json.corrupt")).expect("aside");
    assert!(
        aside.file_type().is_symlink(),
        "the link itself moved aside"
    );
    // A failure is written: to a new file, not through a link.
    s.run(&with(&keyed::breaker("1h"), &["-n", "1"]), 1);
    let written = fs::symlink_metadata(s.file_of("api")).expect("state");
    assert!(written.is_file());
    assert_eq!(fs::read(&victim).expect("victim"), before, "untouched");
}

#[test]
fn a_link_planted_as_the_lock_creates_nothing_and_the_command_runs() {
    let s = Setup::file();
    fs::create_dir_all(s.state()).expect("state dir");
    let victim = s.state().join("victim");
    std::os::unix::fs::symlink(&victim, s.state().join("api.lock")).expect("linked");
    let out = s.run(&["--key", "api", "-n", "2", "-d", "1ms"], 3);
    assert_eq!(out.status.code(), Some(3), "the command's status");
    // No lock, no state: the first attempt, and no retry the budget would pay for.
    assert_eq!(s.ran(), 1);
    let log = stderr(&out);
    assert!(
        log.contains("is a symbolic link, not a regular file") && log.contains("rm -r"),
        "{log}"
    );
    assert_eq!(log.matches("warning").count(), 1, "{log}");
    assert!(!victim.exists(), "nothing was created through the link");
}

#[test]
fn a_fifo_as_the_state_file_or_the_lock_never_hangs_retry() {
    for name in ["api.json", "api.lock"] {
        let s = Setup::file();
        fs::create_dir_all(s.state()).expect("state dir");
        let fifo = s.state().join(name);
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o600)).expect("FIFO");
        let mut c = s.retry(&with(&keyed::breaker("1h"), &["-n", "2"]));
        c.arg("--").args(s.command(4));
        let out = output_within(c, Duration::from_secs(10));
        assert_eq!(out.status.code(), Some(4), "{name}: {}", stderr(&out));
        // A state file that is a FIFO is moved aside and the key starts afresh; a lock that is
        // one leaves the key's state unknown: no retry the budget would pay for.
        let runs = if name == "api.lock" { 1 } else { 2 };
        assert_eq!(s.ran(), runs, "{name}: {}", stderr(&out));
        assert!(stderr(&out).contains("a FIFO"), "{name}: {}", stderr(&out));
    }
}

#[test]
fn a_directory_as_the_state_file_is_moved_aside_and_the_key_works_again() {
    let s = Setup::file();
    fs::create_dir_all(s.file_of("api")).expect("a directory in its place");
    let flags = with(&keyed::breaker("1h"), &["-n", "1"]);
    let out = s.run(&flags, 1);
    out.assert().code(1);
    let log = stderr(&out);
    assert!(
        log.contains("it is a directory") && log.contains("api.json.corrupt"),
        "{log}"
    );
    assert_eq!(log.matches("warning").count(), 1, "{log}");
    assert!(s.state().join("api.json.corrupt").is_dir());
    // The key keeps its breaker again: two more failures open it.
    s.run(&flags, 1);
    s.run(&flags, 1);
    s.run(&flags, 0).assert().code(75);
    assert_eq!(s.ran(), 3);
}

#[test]
fn a_state_directory_others_can_write_is_refused_with_one_warning_saying_how_to_fix_it() {
    let s = Setup::file();
    fs::create_dir_all(s.state()).expect("state dir");
    fs::set_permissions(s.state(), fs::Permissions::from_mode(0o777)).expect("chmod");
    let out = s.run(&with(&keyed::breaker("1h"), &["-n", "2"]), 5);
    assert_eq!(out.status.code(), Some(5), "the outcome stands");
    assert_eq!(s.ran(), 2, "the run went on without state");
    let log = stderr(&out);
    let dir = s.state().display().to_string();
    assert!(
        log.contains(&format!(
            "the state directory '{dir}' can be written by other users"
        )) && log.contains(&format!("chmod go-w '{dir}'"))
            && log.contains("going on without"),
        "{log}"
    );
    assert_eq!(log.matches("warning").count(), 1, "{log}");
    assert_eq!(fs::read_dir(s.state()).expect("listed").count(), 0);
    // Sticky, and this user's: used.
    fs::set_permissions(s.state(), fs::Permissions::from_mode(0o1777)).expect("chmod");
    let out = s.run(&with(&keyed::breaker("1h"), &["-n", "1"]), 5);
    out.assert()
        .stderr(predicate::str::contains("warning").not());
    assert!(s.file_of("api").exists());
}

#[test]
fn a_state_directory_retry_makes_is_private() {
    let s = Setup::file();
    s.run(&with(&keyed::breaker("1h"), &["-n", "1"]), 1);
    let mode = fs::metadata(s.state()).expect("made").permissions().mode();
    assert_eq!(mode & 0o777, 0o700);
}

#[test]
fn explain_reads_a_corrupt_state_without_changing_anything_and_says_what_a_run_would_do() {
    let s = Setup::file();
    let explain = || output(s.retry(&with(&keyed::breaker("1h"), &["--explain"])));
    // No directory: none is made.
    let out = explain();
    out.assert().code(0);
    assert!(!s.state().exists(), "no directory made");
    fs::create_dir_all(s.state()).expect("state dir");
    fs::write(s.file_of("api"), b"{\"version\":1,\"state\":").expect("write");
    let out = explain();
    out.assert().code(0);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("cannot be read") && text.contains("the next run moves it aside"),
        "{text}"
    );
    let names: Vec<_> = fs::read_dir(s.state())
        .expect("listed")
        .map(|e| e.expect("entry").file_name())
        .collect();
    assert_eq!(names, ["api.json"], "no lock, nothing moved aside");
    assert_eq!(
        fs::read(s.file_of("api")).expect("kept"),
        b"{\"version\":1,\"state\":"
    );
    // A state directory that cannot be written (a file in its place).
    fs::remove_dir_all(s.state()).expect("removed");
    fs::write(s.state(), b"a file").expect("a file in its place");
    let text = String::from_utf8_lossy(&explain().stdout).into_owned();
    assert!(
        text.contains(&format!(
            "the state directory '{}' cannot be written",
            s.state().display()
        )) && text.contains("runs will go on without the key's state"),
        "{text}"
    );
}

#[test]
fn reset_state_of_a_key_with_no_state_says_so_and_makes_nothing() {
    let s = Setup::file();
    let reset = || output(s.retry(&["--key", "api", "--reset-state"]));
    let out = reset();
    out.assert().code(0);
    out.assert()
        .stderr(predicate::str::contains("there was no state for key 'api'"));
    assert!(!s.state().exists());
    fs::create_dir_all(s.state()).expect("state dir");
    let out = reset();
    out.assert().stderr(predicate::str::contains("no state"));
    assert_eq!(fs::read_dir(s.state()).expect("listed").count(), 0);
    // With state: forgotten, as before.
    s.run(&with(&keyed::breaker("1h"), &["-n", "1"]), 1);
    let out = reset();
    out.assert()
        .stderr(predicate::str::contains("forgot the state of key 'api'"));
    assert!(!s.file_of("api").exists());
}

/// 200 runs of one key whose first attempts end together (held at a FIFO the test opens),
/// each wanting 2 retries, share a budget of 10 tokens that does not refill: whatever the
/// lock's wait makes of them, the retries they all make are no more than the tokens. Every
/// failure is written (a breaker of 1000 failures is on, and never opens), so that each run
/// takes the lock.
#[test]
fn a_herd_of_runs_released_together_spends_no_more_than_the_budget() {
    const RUNS: usize = 200;
    let s = Setup::file();
    let fifo = s.dir.path().join("barrier");
    let (ready, go) = (s.dir.path().join("ready"), s.dir.path().join("go"));
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o600)).expect("FIFO");
    // Open for reading and writing: this never blocks, and a reader's read blocks until a line
    // is written, not until the test opens it.
    let mut barrier = fs::File::options()
        .read(true)
        .write(true)
        .open(&fifo)
        .expect("FIFO opened");
    let script = format!(
        "echo >> '{}'; [ -e '{}' ] || read _ < '{}'; echo ran >> '{}'; exit 1",
        ready.display(),
        go.display(),
        fifo.display(),
        s.marks().display()
    );
    let flags = [
        "--key",
        "api",
        "--breaker-failures",
        "1000",
        "--budget-burst",
        "10",
        "--budget-refill",
        "1h",
        "-n",
        "3",
        "-d",
        "1ms",
    ];
    let children: Vec<_> = (0..RUNS)
        .map(|_| {
            let mut c = s.retry(&flags);
            c.args(["--", "sh", "-c", &script])
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::piped());
            c.spawn().expect("retry starts")
        })
        .collect();
    let lines = |p: &Path| fs::read_to_string(p).map_or(0, |t| t.lines().count());
    let started = Instant::now();
    while lines(&ready) < RUNS && started.elapsed() < crate::support::PATIENCE {
        thread::sleep(Duration::from_millis(10));
    }
    // Released: a line each for the runs at the barrier; a later attempt passes it by.
    fs::write(&go, b"").expect("go");
    std::io::Write::write_all(&mut barrier, &[b'\n'; RUNS]).expect("released");
    let outs: Vec<Output> = children
        .into_iter()
        .map(|c| c.wait_with_output().expect("retry ends"))
        .collect();
    let logs: Vec<String> = outs.iter().map(stderr).collect();
    for (out, log) in outs.iter().zip(&logs) {
        assert_eq!(out.status.code(), Some(1), "the outcome stands: {log}");
        assert!(!log.contains("going on without"), "{log}");
    }
    let retries = s.ran() - RUNS;
    let unknown = logs.iter().filter(|l| l.contains("changing hands")).count();
    assert!(
        retries <= 10,
        "{retries} retries for 10 tokens ({unknown} runs did not get the lock in time)"
    );
    eprintln!("{retries} retries; {unknown} runs did not get the lock in time");
}

/// A run waiting for the key's lock while it changes hands answers SIGTERM at once.
#[test]
fn a_run_waiting_for_the_lock_answers_sigterm_at_once() {
    let s = Setup::file();
    fs::create_dir_all(s.state()).expect("state dir");
    let path = s.state().join("api.lock");
    // The lock seems to change hands all the time: the run would wait its longest.
    let turning = Turning::hold(&path, Duration::from_millis(20));
    let mut c = s.retry(&["--key", "api", "-n", "3", "-d", "1ms"]);
    c.arg("--")
        .args(s.command(2))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    let child = c.spawn().expect("retry starts");
    let pid = nix::unistd::Pid::from_raw(i32::try_from(child.id()).expect("a pid"));
    // Once it holds the lock file open, it is waiting for the lock.
    let fds = format!("/proc/{pid}/fd");
    let started = Instant::now();
    while !fs::read_dir(&fds).is_ok_and(|mut fds| {
        fds.any(|fd| fd.is_ok_and(|fd| fs::read_link(fd.path()).is_ok_and(|p| p == path)))
    }) {
        assert!(started.elapsed() < Duration::from_secs(10), "never waited");
        thread::yield_now();
    }
    let sent = Instant::now();
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM).expect("TERM");
    let out = child.wait_with_output().expect("retry ends");
    let took = sent.elapsed();
    drop(turning);
    let log = stderr(&out);
    assert!(took < Duration::from_secs(3), "took {took:?}: {log}");
    assert!(log.contains("cancelled by SIGTERM"), "{log}");
    // The first attempt ran before the key's lock was wanted; none starts after the cancel,
    // and retry ends by the signal, not as the command did.
    assert_eq!(s.ran(), 1, "{log}");
    assert!(!log.contains("retry ends by"), "{log}");
    assert_eq!(
        std::os::unix::process::ExitStatusExt::signal(&out.status),
        Some(15),
        "{log}"
    );
}
