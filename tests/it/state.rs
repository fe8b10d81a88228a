//! State shared between runs (`--key`, SPEC §9) through the built binary, with real processes
//! and real files: the breaker opening across runs and refusing with 75 without running the
//! command, one probe among many runs started at once, a probe that dies, the budget across
//! runs, corrupt and unwritable state, `--reset-state` and `--explain`.
//!
//! Each test has its own state directory. Waits for a breaker's open time are real but short
//! (a few hundred milliseconds), and every assertion on them leaves a wide margin.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::support::keyed::{self, Setup, stderr};

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
