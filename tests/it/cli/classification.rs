//! Which results are retried: `--success-on`, `--retry-on`, `--fatal-on`, a signal
//! as 128+N, and a command that is missing or cannot be run.

use super::*;

#[test]
fn success_on_replaces_zero_as_success() {
    let r = run_sh(
        &["--success-on", "3", "-n", "3", "-d", "0"],
        "echo run; exit 3",
    );
    assert_eq!(r.lines(), ["run"], "{}", r.show());
    assert_eq!(r.code(), Some(3), "the last attempt's status: {}", r.show());
    let r = run_sh(
        &["--success-on", "3", "-n", "2", "-d", "0"],
        "echo run; exit 0",
    );
    assert_eq!(
        r.lines(),
        ["run"; 2],
        "0 is no longer success: {}",
        r.show()
    );
    assert_eq!(r.code(), Some(1), "a give-up never exits 0: {}", r.show());
}

#[test]
fn a_run_that_gives_up_never_exits_zero() {
    let dir = TempDir::new().expect("temp dir");
    let summary = dir.path().join("summary.json");
    let summary = summary.to_str().expect("UTF-8 path");
    let r = run(&[
        "--success-on",
        "3",
        "-n",
        "2",
        "-d",
        "0",
        "--summary",
        summary,
        "--",
        "true",
    ]);
    r.assert().code(1);
    let s: Value =
        serde_json::from_str(&std::fs::read_to_string(summary).expect("summary")).expect("JSON");
    assert_eq!(
        (&s["outcome"], &s["exit"]),
        (&"failure".into(), &1.into()),
        "{s}"
    );
    // A fatal 0 gives up at once, and still does not exit 0.
    let r = run(&["--success-on", "3", "--fatal-on", "0", "--", "true"]);
    r.assert().code(1);
    r.assert().stderr(predicate::str::contains(
        "retry exits 1: exit status 0 is not a success here",
    ));
    // The JSON log's give-up says the same with an `exit` field, there only.
    let r = run(&[
        "--success-on",
        "3",
        "-n",
        "1",
        "--log-format",
        "json",
        "--",
        "true",
    ]);
    r.assert().code(1);
    let events: Vec<Value> = r
        .stderr()
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect();
    let exits: Vec<_> = events
        .iter()
        .map(|e| (&e["event"], e.get("exit")))
        .collect();
    assert_eq!(
        exits,
        [
            (&"failure".into(), None),
            (&"give_up".into(), Some(&1.into()))
        ],
        "{events:?}"
    );
}

#[test]
fn explain_warns_when_zero_is_no_longer_a_success() {
    let w = warnings(&explain(&["--success-on", "3"]));
    assert!(
        w.iter()
            .any(|l| l.contains("--success-on") && l.contains("exits 1")),
        "{w:?}"
    );
    assert!(warnings(&explain(&["--success-on", "0,3"])).is_empty());
}

#[test]
fn success_on_accepts_lists_and_ranges() {
    for code in ["0", "2", "4", "9"] {
        let r = run_sh(
            &["--success-on", "0,2-4,9", "-n", "3", "-d", "0"],
            &format!("echo run; exit {code}"),
        );
        assert_eq!(r.lines(), ["run"], "exit {code}: {}", r.show());
    }
    let r = run_sh(
        &["--success-on", "0,2-4,9", "-n", "3", "-d", "0"],
        "echo run; exit 5",
    );
    assert_eq!(r.lines(), ["run"; 3], "{}", r.show());
}

#[test]
fn retry_on_retries_only_the_listed_statuses() {
    let r = run_sh(
        &["--retry-on", "75", "-n", "3", "-d", "0"],
        "echo run; exit 75",
    );
    assert_eq!(r.lines(), ["run"; 3], "{}", r.show());
    r.assert().code(75);
    let r = run_sh(
        &["--retry-on", "75", "-n", "3", "-d", "0"],
        "echo run; exit 1",
    );
    assert_eq!(r.lines(), ["run"], "not listed: fatal: {}", r.show());
    r.assert().code(1);
}

#[test]
fn retry_on_accepts_inclusive_ranges() {
    for (code, runs) in [(4, 1), (5, 3), (6, 3), (7, 3), (8, 1)] {
        let r = run_sh(
            &["--retry-on", "1,5-7", "-n", "3", "-d", "0"],
            &format!("echo run; exit {code}"),
        );
        assert_eq!(r.lines().len(), runs, "exit {code}: {}", r.show());
        assert_eq!(r.code(), Some(code));
    }
}

#[test]
fn retry_on_accepts_signal_names() {
    let r = run_sh(
        &["--retry-on", "SIGTERM", "-n", "3", "-d", "0"],
        "echo run; kill -TERM $$",
    );
    assert_eq!(r.lines(), ["run"; 3], "{}", r.show());
    assert_eq!(r.out.status.signal(), Some(15), "{}", r.show());
    let r = run_sh(
        &["--retry-on", "TERM", "-n", "3", "-d", "0"],
        "echo run; kill -KILL $$",
    );
    assert_eq!(r.lines(), ["run"], "SIGKILL is not listed: {}", r.show());
}

#[test]
fn fatal_status_is_not_retried() {
    let r = run_sh(
        &["--fatal-on", "2", "-n", "5", "-d", "0"],
        "echo run; exit 2",
    );
    assert_eq!(r.lines(), ["run"], "{}", r.show());
    r.assert().code(2);
    let log = r.log().join("\n");
    assert!(log.contains("--fatal-on"), "the reason: {}", r.show());
}

#[test]
fn fatal_on_accepts_lists_and_ranges() {
    for (code, runs) in [(2, 1), (3, 1), (5, 1), (6, 3), (9, 1)] {
        let r = run_sh(
            &["--fatal-on", "2,3-5,9", "-n", "3", "-d", "0"],
            &format!("echo run; exit {code}"),
        );
        assert_eq!(r.lines().len(), runs, "exit {code}: {}", r.show());
        assert_eq!(r.code(), Some(code));
    }
}

#[test]
fn fatal_on_wins_over_retry_on() {
    let r = run_sh(
        &[
            "--retry-on",
            "1-10",
            "--fatal-on",
            "5",
            "-n",
            "3",
            "-d",
            "0",
        ],
        "echo run; exit 5",
    );
    assert_eq!(r.lines(), ["run"], "{}", r.show());
    r.assert().code(5);
}

#[test]
fn success_wins_over_fatal_on() {
    let r = run_sh(
        &[
            "--success-on",
            "0,2",
            "--fatal-on",
            "2",
            "-n",
            "3",
            "-d",
            "0",
        ],
        "echo run; exit 2",
    );
    assert_eq!(r.lines(), ["run"], "{}", r.show());
    r.assert().code(2);
    assert!(
        r.log().is_empty(),
        "a success logs no give-up: {}",
        r.show()
    );
}

#[test]
fn fatal_on_names_signals_as_128_plus_n() {
    for list in ["SIGKILL", "KILL", "137", "kill"] {
        let r = run_sh(
            &["--fatal-on", list, "-n", "3", "-d", "0"],
            "echo run; kill -KILL $$",
        );
        assert_eq!(r.lines(), ["run"], "--fatal-on {list}: {}", r.show());
        assert_eq!(r.out.status.signal(), Some(9), "{list}: {}", r.show());
    }
}

#[test]
fn a_child_killed_by_a_signal_is_retried_by_default_and_seen_as_128_plus_n() {
    let r = run_sh(
        &["-n", "3", "-d", "0"],
        r#"echo "previous $RETRY_PREVIOUS_EXIT"; kill -KILL $$"#,
    );
    assert_eq!(
        r.lines(),
        ["previous ", "previous 137", "previous 137"],
        "{}",
        r.show()
    );
}

/// `retry ARGS -n 3 -d 0 --log-format json -- PATH`, PATH a command that does not exist.
fn run_missing(args: &[&str]) -> Run {
    let dir = TempDir::new().expect("temp dir");
    let missing = dir.path().join("no-such-command");
    let mut all: Vec<&OsStr> = args.iter().map(OsStr::new).collect();
    all.extend(["-n", "3", "-d", "0", "--log-format", "json", "--"].map(OsStr::new));
    all.push(missing.as_os_str());
    run(&all)
}

#[test]
fn a_missing_command_is_fatal_by_default() {
    let r = run_missing(&[]);
    r.assert().code(127);
    assert_eq!(r.failures(), 1, "not retried: {}", r.show());
}

#[test]
fn a_command_not_on_path_exits_127() {
    let r = run(&["-n", "3", "-d", "0", "--", "retry-test-no-such-command-zz9"]);
    r.assert().code(127);
    r.assert().stdout("");
    let log = r.log().join("\n");
    assert!(
        log.contains("retry-test-no-such-command-zz9"),
        "{}",
        r.show()
    );
    assert!(log.contains("1 attempt"), "{}", r.show());
}

#[test]
fn retry_on_127_retries_a_missing_command() {
    let r = run_missing(&["--retry-on", "127"]);
    r.assert().code(127);
    assert_eq!(r.failures(), 3, "{}", r.show());
}

#[test]
fn a_status_of_126_or_127_from_the_command_itself_is_fatal_by_default() {
    for code in [126, 127] {
        let r = run_sh(&["-n", "3", "-d", "0"], &format!("echo run; exit {code}"));
        assert_eq!(r.lines(), ["run"], "exit {code}: {}", r.show());
        assert_eq!(r.code(), Some(code));
        let r = run_sh(
            &["--retry-on", &code.to_string(), "-n", "3", "-d", "0"],
            &format!("echo run; exit {code}"),
        );
        assert_eq!(r.lines(), ["run"; 3], "--retry-on {code}: {}", r.show());
    }
}

#[test]
fn retry_on_naming_127_leaves_126_fatal() {
    let r = run_sh(
        &["--retry-on", "1,127", "-n", "3", "-d", "0"],
        "echo run; exit 126",
    );
    assert_eq!(r.lines(), ["run"], "{}", r.show());
}
