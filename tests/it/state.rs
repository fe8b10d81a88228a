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
    assert!(
        stderr(&out).contains("could not be read"),
        "{}",
        stderr(&out)
    );
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
    assert_eq!(out.status.code(), Some(6));
    assert_eq!(s.ran(), 2, "the run went on without state");
    let log = stderr(&out);
    assert!(
        log.contains("warning: key 'api'") && log.contains("going on without"),
        "{log}"
    );
    assert_eq!(
        log.matches("warning").count(),
        1,
        "one warning, not one per attempt: {log}"
    );
    let ok = s.run(&["--key", "api", "-n", "1"], 0);
    assert_eq!(ok.status.code(), Some(0));
}

fn nix_is_root() -> bool {
    fs::metadata("/proc/self")
        .map(|m| std::os::unix::fs::MetadataExt::uid(&m) == 0)
        .unwrap_or(false)
}

#[test]
fn a_read_only_state_directory_is_a_warning_when_not_root() {
    if nix_is_root() {
        eprintln!("skipped: root can write to a read-only directory");
        return;
    }
    let s = Setup::file();
    fs::create_dir_all(s.state()).expect("state dir");
    fs::set_permissions(s.state(), fs::Permissions::from_mode(0o500)).expect("chmod");
    let out = s.run(&["--key", "api", "-n", "2", "-d", "1ms"], 6);
    assert_eq!(out.status.code(), Some(6));
    assert!(stderr(&out).contains("warning"), "{}", stderr(&out));
}

#[test]
fn a_key_never_reaches_outside_the_state_directory() {
    let s = Setup::file();
    let out = s.run(&["--key", "../../escape", "-n", "2", "-d", "1ms"], 1);
    assert_eq!(out.status.code(), Some(1));
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
fn a_lock_held_too_long_by_another_process_means_going_on_without_state() {
    let s = Setup::file();
    fs::create_dir_all(s.state()).expect("state dir");
    let lock = fs::File::create(s.state().join("api.lock")).expect("lock file");
    lock.lock().expect("held by the test");
    let started = Instant::now();
    let out = s.run(&["--key", "api", "-n", "3", "-d", "1ms"], 2);
    assert_eq!(out.status.code(), Some(2), "the outcome stands");
    assert_eq!(s.ran(), 3, "the run went on without state");
    assert!(
        stderr(&out).contains("stayed locked too long"),
        "{}",
        stderr(&out)
    );
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "it did not wait for the lock"
    );
    drop(lock);
    assert!(
        !s.file_of("api").exists(),
        "nothing was written without the lock"
    );
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
    assert_eq!(s.run(&keyed::breaker("1h"), 0).status.code(), Some(75));
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
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(s.ran(), 4);
    assert!(
        stderr(&out).contains("it is a symbolic link"),
        "{}",
        stderr(&out)
    );
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
    assert_eq!(out.status.code(), Some(3), "the outcome stands");
    assert_eq!(s.ran(), 2);
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
        assert_eq!(s.ran(), 2, "{name}");
        assert!(stderr(&out).contains("a FIFO"), "{name}: {}", stderr(&out));
    }
}

#[test]
fn a_directory_as_the_state_file_is_moved_aside_and_the_key_works_again() {
    let s = Setup::file();
    fs::create_dir_all(s.file_of("api")).expect("a directory in its place");
    let flags = with(&keyed::breaker("1h"), &["-n", "1"]);
    let out = s.run(&flags, 1);
    assert_eq!(out.status.code(), Some(1));
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
    assert_eq!(s.run(&flags, 0).status.code(), Some(75));
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
    assert!(!stderr(&out).contains("warning"), "{}", stderr(&out));
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
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(!s.state().exists(), "no directory made");
    fs::create_dir_all(s.state()).expect("state dir");
    fs::write(s.file_of("api"), b"{\"version\":1,\"state\":").expect("write");
    let out = explain();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
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
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("there was no state for key 'api'"),
        "{}",
        stderr(&out)
    );
    assert!(!s.state().exists());
    fs::create_dir_all(s.state()).expect("state dir");
    let out = reset();
    assert!(stderr(&out).contains("no state"), "{}", stderr(&out));
    assert_eq!(fs::read_dir(s.state()).expect("listed").count(), 0);
    // With state: forgotten, as before.
    s.run(&with(&keyed::breaker("1h"), &["-n", "1"]), 1);
    let out = reset();
    assert!(
        stderr(&out).contains("forgot the state of key 'api'"),
        "{}",
        stderr(&out)
    );
    assert!(!s.file_of("api").exists());
}

/// 200 runs of one key started at once, each wanting 4 retries, share 120 tokens: the lock
/// changes hands quickly, so none gives up waiting for it and retries without the budget.
#[test]
fn a_herd_of_runs_started_at_once_spends_no_more_than_the_budget() {
    let s = Setup::file();
    let flags = [
        "--key",
        "api",
        "--breaker-failures",
        "0",
        "--budget-burst",
        "120",
        // A token a hour comes back: none within the test.
        "--budget-refill",
        "1h",
        "-n",
        "5",
        "-d",
        "0",
    ];
    let children: Vec<_> = (0..200)
        .map(|_| {
            let mut c = s.retry(&flags);
            c.arg("--")
                .args(s.command(1))
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::piped());
            c.spawn().expect("retry starts")
        })
        .collect();
    let logs: Vec<String> = children
        .into_iter()
        .map(|c| stderr(&c.wait_with_output().expect("retry ends")))
        .collect();
    let lost: Vec<&String> = logs
        .iter()
        .filter(|l| l.contains("going on without"))
        .collect();
    let retries = s.ran() - 200;
    assert!(retries <= 120, "{retries} retries for 120 tokens; {lost:?}");
    assert!(lost.is_empty(), "{lost:?}");
}

/// A run waiting for the key's lock while it changes hands answers SIGTERM at once.
#[test]
fn a_run_waiting_for_the_lock_answers_sigterm_at_once() {
    let s = Setup::file();
    fs::create_dir_all(s.state()).expect("state dir");
    let path = s.state().join("api.lock");
    let lock = fs::File::options()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(&path)
        .expect("lock file");
    lock.lock().expect("held by the test");
    // The lock seems to change hands all the time: the run would wait its longest.
    let done = Arc::new(AtomicBool::new(false));
    let turning = {
        let (done, lock) = (Arc::clone(&done), lock.try_clone().expect("cloned"));
        thread::spawn(move || {
            let mut turn = 0u64;
            while !done.load(Ordering::SeqCst) {
                turn += 1;
                let _ = std::os::unix::fs::FileExt::write_at(&lock, &turn.to_le_bytes(), 0);
                thread::sleep(Duration::from_millis(20));
            }
        })
    };
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
    done.store(true, Ordering::SeqCst);
    turning.join().expect("joined");
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
