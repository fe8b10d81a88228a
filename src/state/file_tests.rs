//! The file store's tests, each in a temporary directory of its own.

use std::fs;
use std::os::unix::fs::PermissionsExt;

use serde_json::{Value, json};

use super::*;
use crate::policy::breaker::Breaker;

#[test]
fn key_names_stay_inside_the_state_directory() {
    assert_eq!(file_name("api.example.com"), "api.example.com");
    assert_eq!(file_name("../etc/passwd"), "%2E.%2Fetc%2Fpasswd");
    assert_eq!(file_name(".."), "%2E.");
    assert_eq!(file_name("a b/c"), "a%20b%2Fc");
    assert_eq!(file_name("ключ"), "%D0%BA%D0%BB%D1%8E%D1%87");
    assert_ne!(file_name("a/b"), file_name("a%2Fb"));
    let long = "x".repeat(400);
    let name = file_name(&long);
    assert!(name.len() < 160, "{}", name.len());
    assert_ne!(name, file_name(&"x".repeat(401)));
}

#[test]
fn a_file_name_gives_back_its_key() {
    for key in [
        "api.example.com",
        "../etc/passwd",
        "..",
        "a b/c",
        "ключ",
        "a%2Fb",
        "100%",
    ] {
        assert_eq!(key_of(&file_name(key)), key);
    }
}

use crate::policy::breaker::Attempt;
use crate::policy::shared::tests::settings;
use crate::policy::shared::{Admit, Refusal, Ticket};

const HOUR: u64 = 3_600_000;
const DAY: u64 = 24 * HOUR;

/// A key whose file says its breaker is open until `until`, saved at `then`.
fn saved(dir: &Path, then: &Clock, until: u64, open_for: u64) -> FileStore {
    let store = FileStore::new(Some(dir.to_path_buf()), "k");
    let mut state = KeyState::new(&settings(), then.boot_ms);
    state.breaker = Breaker::Open {
        until,
        open_for,
        failures: Vec::new(),
    };
    let saved = Saved {
        version: VERSION,
        boot_id: then.boot_id.clone(),
        boot_ms: then.boot_ms,
        wall_ms: then.wall_ms,
        state,
    };
    let bytes = serde_json::to_vec(&saved).expect("serialized");
    fs::write(store.path(dir, "json"), bytes).expect("written");
    store
}

fn admit(store: &mut FileStore, s: &KeyRules) -> Reply<Admit> {
    store
        .update(s, |state, now| state.admit(s, now))
        .expect("answered")
}

#[test]
fn an_open_time_cut_to_the_open_max_is_kept_for_the_next_run() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let now = Clock::now();
    let mut store = saved(dir.path(), &now, now.boot_ms + HOUR, HOUR);
    let mut s = settings();
    s.breaker.open_max = Duration::from_secs(1);
    let first = admit(&mut store, &s);
    let Admit::Refused(Refusal::Open { until }) = first.value else {
        panic!("still open: {:?}", first.value)
    };
    assert!(until <= first.now + 1_000, "cut to the open max");
    // The next run honours the open time this one announced, rather than a new one.
    let next = admit(&mut store, &s);
    match next.value {
        Admit::Refused(Refusal::Open { until: again }) => assert_eq!(again, until),
        Admit::Run(_) => assert!(next.now >= until, "let in only once it is over"),
        other => panic!("{other:?}"),
    }
    let kept: Saved =
        serde_json::from_slice(&fs::read(store.path(dir.path(), "json")).expect("read"))
            .expect("a state file");
    assert!(
        matches!(kept.state.breaker, Breaker::Open { until: u, .. } if u == until),
        "written as announced: {:?}",
        kept.state.breaker
    );
}

#[test]
fn after_a_reboot_a_breaker_whose_time_passed_by_the_wall_clock_lets_the_run_in() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let now = Clock::now();
    // Saved 4 days ago in another boot, open for 3 days from then.
    let then = Clock {
        boot_id: "another boot".into(),
        boot_ms: 1_000,
        wall_ms: now.wall_ms - 4 * DAY,
    };
    let mut store = saved(dir.path(), &then, 1_000 + 3 * DAY, 3 * DAY);
    let mut s = settings();
    s.breaker.open_max = Duration::from_secs(7 * 86_400);
    let reply = admit(&mut store, &s);
    assert!(
        matches!(reply.value, Admit::Run(t) if t.probe),
        "{:?}",
        reply.value
    );
}

/// Records a failure, which is written.
fn fail(store: &mut FileStore) {
    let s = settings();
    let ticket = crate::policy::shared::Ticket {
        generation: 0,
        probe: false,
    };
    store
        .update(&s, |state, now| {
            state.after_attempt(&s, now, ticket, Attempt::Failure, true, 0.0)
        })
        .expect("written");
}

/// A key's state file as a valid one, changed by `edit`.
fn planted(dir: &Path, edit: impl FnOnce(&mut Value)) -> (FileStore, Vec<u8>) {
    let store = saved(dir, &Clock::now(), 0, 1);
    let path = store.path(dir, "json");
    let mut value: Value = serde_json::from_slice(&fs::read(&path).expect("read")).expect("JSON");
    value["state"]["breaker"] = json!({"state": "closed", "failures": []});
    edit(&mut value);
    let bytes = serde_json::to_vec(&value).expect("serialized");
    fs::write(&path, &bytes).expect("written");
    (store, bytes)
}

fn names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(dir)
        .expect("listed")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn values_out_of_range_are_corrupt_state_moved_aside() {
    type Edit = (&'static str, fn(&mut Value));
    let edits: [Edit; 7] = [
        ("a generation past 2^53", |v| {
            v["state"]["generation"] = json!(u64::MAX)
        }),
        ("tokens no burst allows", |v| {
            v["state"]["budget"]["milli"] = json!(u64::MAX)
        }),
        ("a time past 2^53", |v| {
            v["state"]["budget"]["at"] = json!(1u64 << 60)
        }),
        ("a saved moment past 2^53", |v| {
            v["wall_ms"] = json!(u64::MAX)
        }),
        ("5000 failures", |v| {
            v["state"]["breaker"]["failures"] = json!(vec![1u64; 5000]);
        }),
        ("an open time of 0", |v| {
            v["state"]["breaker"] = json!({"state": "open", "until": 5, "open_for": 0});
        }),
        ("100 outcomes kept", |v| {
            v["state"]["history"] = json!(vec![json!({"at": 1, "success": true}); 100]);
        }),
    ];
    for (what, edit) in edits {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let (mut store, bytes) = planted(dir.path(), edit);
        let reply = admit(&mut store, &settings());
        let warning = reply.warning.unwrap_or_default();
        assert!(warning.contains("moved it to"), "{what}: {warning:?}");
        let aside = fs::read(store.path(dir.path(), "json.corrupt")).expect("moved aside");
        assert_eq!(aside, bytes, "{what}");
        assert!(matches!(reply.value, Admit::Run(_)), "{what}");
    }
    // The largest values retry writes are not.
    let dir = tempfile::tempdir().expect("a temporary directory");
    let (mut store, _) = planted(dir.path(), |v| {
        v["state"]["generation"] = json!(1u64 << 53);
        v["state"]["breaker"]["failures"] = json!(vec![1u64; 1000]);
    });
    assert_eq!(admit(&mut store, &settings()).warning, None);
}

#[test]
fn a_directory_or_a_fifo_as_the_state_file_is_moved_aside_under_a_free_name() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let mut store = FileStore::new(Some(dir.path().to_path_buf()), "k");
    fs::create_dir(dir.path().join("k.json")).expect("a directory");
    fs::write(dir.path().join("k.json.corrupt"), b"kept").expect("an older one");
    let reply = admit(&mut store, &settings());
    let warning = reply.warning.unwrap_or_default();
    assert!(
        warning.contains("it is a directory") && warning.contains("k.json.corrupt.1"),
        "{warning}"
    );
    assert!(dir.path().join("k.json.corrupt.1").is_dir());
    assert_eq!(
        fs::read(dir.path().join("k.json.corrupt")).expect("kept"),
        b"kept"
    );
    assert!(dir.path().join("k.json").is_file(), "the key starts afresh");
    // A FIFO: never opened, so never waited on.
    fs::remove_file(dir.path().join("k.json")).expect("removed");
    crate::platform::files::make_fifo(&dir.path().join("k.json")).expect("fifo made");
    let warning = admit(&mut store, &settings()).warning.unwrap_or_default();
    assert!(warning.contains("it is a FIFO"), "{warning}");
    assert!(dir.path().join("k.json").is_file());
}

#[test]
fn an_unreadable_state_file_that_cannot_be_moved_aside_says_what_to_do() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let mut store = FileStore::new(Some(dir.path().to_path_buf()), "k");
    fs::create_dir(dir.path().join("k.json")).expect("a directory");
    // Every name it could be moved to is taken.
    fs::write(dir.path().join("k.json.corrupt"), b"").expect("taken");
    for n in 1..10 {
        fs::write(dir.path().join(format!("k.json.corrupt.{n}")), b"").expect("taken");
    }
    let Err(e) = store.update(&settings(), |state, now| state.admit(&settings(), now)) else {
        panic!("it cannot be used")
    };
    let path = dir.path().join("k.json");
    let said = e.to_string();
    assert!(
        said.contains("nor moved aside") && said.contains(&format!("rm -r '{}'", path.display())),
        "{said}"
    );
    assert!(path.is_dir(), "left as it was");
}

#[test]
fn a_state_file_this_user_cannot_read_is_moved_aside() {
    if crate::platform::files::euid() == 0 {
        eprintln!(
            "SKIPPED a_state_file_this_user_cannot_read_is_moved_aside: root reads a file of mode 000"
        );
        return;
    }
    let dir = tempfile::tempdir().expect("a temporary directory");
    let (mut store, _) = planted(dir.path(), |_| {});
    let path = store.path(dir.path(), "json");
    fs::set_permissions(&path, fs::Permissions::from_mode(0o000)).expect("chmod");
    let warning = admit(&mut store, &settings()).warning.unwrap_or_default();
    assert!(warning.contains("moved it to"), "{warning}");
    assert!(store.path(dir.path(), "json.corrupt").exists());
}

#[test]
fn a_state_directory_others_can_write_is_refused_unless_sticky_and_ours() {
    let me = crate::platform::files::euid();
    let path = Path::new("/some/state");
    for mode in [0o700, 0o755, 0o1777] {
        assert_eq!(unsafe_dir(path, me, mode), None, "{mode:o}");
    }
    for mode in [0o777, 0o770, 0o702, 0o2775] {
        let why = unsafe_dir(path, me, mode).expect("refused");
        assert!(
            why.contains("can be written by other users")
                && why.contains("chmod go-w '/some/state'"),
            "{mode:o}: {why}"
        );
    }
    let other = if me == 4242 { 4243 } else { 4242 };
    let why = unsafe_dir(path, other, 0o700).expect("refused");
    assert!(why.contains("belongs to another user (uid"), "{why}");
    assert!(unsafe_dir(path, other, 0o1777).is_some());
    // A real one: refused before anything in it is read or made.
    let dir = tempfile::tempdir().expect("a temporary directory");
    fs::set_permissions(dir.path(), fs::Permissions::from_mode(0o777)).expect("chmod");
    let mut store = FileStore::new(Some(dir.path().to_path_buf()), "k");
    let result = store.update(&settings(), |state, now| state.admit(&settings(), now));
    assert!(
        matches!(result, Err(Error::UnsafeDirectory(_))),
        "{:?}",
        result.err()
    );
    assert!(names(dir.path()).is_empty());
    fs::set_permissions(dir.path(), fs::Permissions::from_mode(0o1777)).expect("chmod");
    fail(&mut store);
    assert_eq!(names(dir.path()), ["k.json", "k.lock"]);
}

#[test]
fn peeking_changes_nothing_and_tells_what_a_run_would_find() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let mut store = FileStore::new(Some(dir.path().join("state")), "k");
    let reply = store.peek(&settings()).expect("a view");
    assert_eq!(reply.warning, None);
    assert!(!dir.path().join("state").exists(), "no directory is made");
    fs::create_dir(dir.path().join("state")).expect("state dir");
    let path = dir.path().join("state/k.json");
    fs::write(&path, b"{").expect("corrupt");
    let reply = store.peek(&settings()).expect("a view");
    let warning = reply.warning.unwrap_or_default();
    assert!(
        warning.contains("cannot be read") && warning.contains("moves it aside"),
        "{warning}"
    );
    assert_eq!(names(&dir.path().join("state")), ["k.json"]);
    assert_eq!(fs::read(&path).expect("kept"), b"{");
    // A directory that cannot be written: a file in its place.
    let mut store = FileStore::new(Some(path.join("state")), "k");
    let warning = store
        .peek(&settings())
        .expect("a view")
        .warning
        .unwrap_or_default();
    assert!(
        warning.contains("cannot be written")
            && warning.contains("runs will go on without the key's state"),
        "{warning}"
    );
}

#[test]
fn forgetting_a_key_with_no_state_makes_nothing() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let mut store = FileStore::new(Some(dir.path().join("state")), "k");
    assert_eq!(store.forget().expect("forgot"), Forgot::Nothing);
    assert!(!dir.path().join("state").exists());
    fs::create_dir(dir.path().join("state")).expect("state dir");
    assert_eq!(store.forget().expect("forgot"), Forgot::Nothing);
    assert!(names(&dir.path().join("state")).is_empty());
    fail(&mut store);
    assert_eq!(store.forget().expect("forgot"), Forgot::State);
    assert_eq!(names(&dir.path().join("state")), ["k.lock"]);
}

#[test]
fn a_planted_link_is_neither_read_through_nor_written_through() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    // The victim holds a valid state whose breaker is open: followed, it would refuse.
    let victim = dir.path().join("victim");
    let now = Clock::now();
    let _ = saved(dir.path(), &now, now.boot_ms + HOUR, HOUR);
    fs::rename(dir.path().join("k.json"), &victim).expect("moved");
    let before = fs::read(&victim).expect("victim");
    std::os::unix::fs::symlink(&victim, dir.path().join("k.json")).expect("linked");
    std::os::unix::fs::symlink(&victim, dir.path().join("k.json.corrupt")).expect("linked");
    let mut store = FileStore::new(Some(dir.path().to_path_buf()), "k");
    let reply = admit(&mut store, &settings());
    assert!(matches!(reply.value, Admit::Run(_)), "{:?}", reply.value);
    let warning = reply.warning.unwrap_or_default();
    assert!(warning.contains("it is a symbolic link"), "{warning}");
    assert_eq!(fs::read(&victim).expect("victim"), before, "untouched");
    for aside in ["k.json.corrupt", "k.json.corrupt.1"] {
        let link = fs::symlink_metadata(dir.path().join(aside)).expect("aside");
        assert!(
            link.file_type().is_symlink(),
            "{aside} is the link, moved as it is"
        );
    }
    assert!(
        fs::symlink_metadata(dir.path().join("k.json"))
            .expect("state")
            .is_file()
    );
}

#[test]
fn a_wait_for_a_stuck_lock_ends_at_the_deadline_or_after_a_second_and_says_which() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let held = fs::File::create(dir.path().join("k.lock")).expect("lock file");
    held.lock().expect("held by the test");
    let mut store = FileStore::new(Some(dir.path().to_path_buf()), "k");
    const FIRST: Ticket = Ticket {
        generation: 0,
        probe: false,
    };
    // What is left before the run's deadline bounds the wait.
    store.wait_at_most(Some(Duration::from_millis(100)));
    let started = Instant::now();
    let waited = match store.update(&settings(), |state, now| {
        state.after_attempt(&settings(), now, FIRST, Attempt::Failure, true, 0.0)
    }) {
        Err(Error::Locked(Locked {
            why: LockWait::Deadline,
            waited,
            ..
        })) => waited,
        other => panic!("{:?}", other.err()),
    };
    assert!(waited >= Duration::from_millis(100), "{waited:?}");
    assert!(started.elapsed() < LOCK_STALL, "{:?}", started.elapsed());
    // Without one, a holder that makes no progress for a second is stuck.
    store.wait_at_most(None);
    let e = store
        .update(&settings(), |state, now| {
            state.after_attempt(&settings(), now, FIRST, Attempt::Failure, true, 0.0)
        })
        .err();
    assert!(
        matches!(
            e,
            Some(Error::Locked(Locked {
                why: LockWait::Stuck,
                ..
            }))
        ),
        "{e:?}"
    );
    let words = e.map(|e| e.to_string()).unwrap_or_default();
    assert!(
        words.contains("k.lock' was held for 1")
            && words.ends_with("s by one process that made no progress"),
        "{words}"
    );
    assert!(!dir.path().join("k.json").exists(), "nothing written");
}

/// A verdict remembered in `dir`, told at `then` with `left_ms` to go, from `store`.
fn remembered(dir: &Path, then: &Clock, left_ms: u64, store: &str) -> FileMemo {
    let memo = FileMemo::new(Some(dir.to_path_buf()), "k", "redis://a".into());
    let saved = Remembered {
        version: VERDICT_VERSION,
        store: store.into(),
        boot_id: then.boot_id.clone(),
        boot_ms: then.boot_ms,
        wall_ms: then.wall_ms,
        left_ms,
        tokens: 2.0,
    };
    let bytes = serde_json::to_vec(&saved).expect("json");
    fs::write(dir.join("k.open"), bytes).expect("written");
    memo
}

fn recalled(memo: &FileMemo, dir: &Path, now: &Clock) -> Option<u64> {
    let dir = Dir::open(dir).expect("dir");
    memo.read(&dir, now)
        .map(|v| u64::try_from(v.left.as_millis()).expect("ms"))
}

#[test]
fn a_remembered_verdict_ages_by_the_boot_clock_and_a_reboot_forgets_it() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let then = Clock {
        boot_id: "a".into(),
        boot_ms: 10_000,
        wall_ms: DAY,
    };
    let memo = remembered(tmp.path(), &then, 60_000, "redis://a");
    // In the same boot: by the boot clock, whatever the wall clock says.
    let later = |boot_id: &str, boot_ms, wall_ms| Clock {
        boot_id: boot_id.into(),
        boot_ms,
        wall_ms,
    };
    assert_eq!(
        recalled(&memo, tmp.path(), &later("a", 25_000, 0)),
        Some(45_000)
    );
    assert_eq!(
        recalled(&memo, tmp.path(), &later("a", 90_000, DAY)),
        Some(0)
    );
    // Another boot: forgotten, the next run asks the store.
    assert_eq!(recalled(&memo, tmp.path(), &later("b", 1_000, DAY)), None);
    // Without a boot id: by the wall clock, a clock set back counting as no time.
    let wall = |ms| later("", ms, ms);
    let memo = remembered(tmp.path(), &wall(DAY), 60_000, "redis://a");
    assert_eq!(
        recalled(&memo, tmp.path(), &wall(DAY + 20_000)),
        Some(40_000)
    );
    assert_eq!(recalled(&memo, tmp.path(), &wall(DAY - HOUR)), Some(60_000));
    // Another store's verdict is not this store's.
    let memo = remembered(tmp.path(), &then, 60_000, "redis://b");
    assert_eq!(recalled(&memo, tmp.path(), &later("a", 20_000, 0)), None);
}

#[test]
fn a_remembered_verdict_that_cannot_be_believed_is_not() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let now = Clock::now();
    let memo = remembered(tmp.path(), &now, 60_000, "redis://a");
    assert!(recalled(&memo, tmp.path(), &now).is_some());
    for bad in [
        json!({"version": 2}).to_string(),
        "not json".to_string(),
        json!({"version": 1, "store": "redis://a", "boot_id": now.boot_id, "boot_ms": 1,
               "wall_ms": 1, "left_ms": 1u64 << 60, "tokens": 1.0})
        .to_string(),
        json!({"version": 1, "store": "redis://a", "boot_id": now.boot_id, "boot_ms": 1,
               "wall_ms": 1, "left_ms": 1, "tokens": -1.0})
        .to_string(),
    ] {
        fs::write(tmp.path().join("k.open"), &bad).expect("written");
        assert_eq!(recalled(&memo, tmp.path(), &now), None, "{bad}");
    }
    // Remembered, then forgotten; a key's verdict is no key of --list-keys.
    let mut memo = memo;
    memo.remember(Verdict {
        left: Duration::from_secs(5),
        tokens: 1.5,
    })
    .expect("remembered");
    assert!(FileStore::all(tmp.path()).expect("listed").is_empty());
    assert!(memo.recall().expect("recalled").is_some());
    assert!(memo.forget().expect("forgot"));
    assert!(!memo.forget().expect("forgot"));
    assert_eq!(memo.recall().expect("recalled"), None);
}
