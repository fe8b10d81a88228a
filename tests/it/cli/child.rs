//! What the command is given: its arguments byte for byte, the `RETRY_*` variables
//! beside its own environment, and what a retry inside a retry is told.

use super::*;

fn nul_separated(args: &[OsString]) -> Vec<u8> {
    let mut want = Vec::new();
    for a in args {
        want.extend_from_slice(a.as_encoded_bytes());
        want.push(0);
    }
    want
}

#[test]
fn arguments_reach_the_command_byte_for_byte() {
    let args: Vec<OsString> = vec![
        "two words".into(),
        "  padded  ".into(),
        "it's".into(),
        "\"double\"".into(),
        "".into(),
        "-x".into(),
        "--attempts".into(),
        "--".into(),
        "*".into(),
        "$HOME".into(),
        "line\nbreak".into(),
        "tab\there".into(),
        "é ✓".into(),
        OsString::from_vec(vec![0xff, 0xfe, b'a', 0x80]),
        "".into(),
    ];
    let mut cmd = retry();
    cmd.args(["-n", "1", "--", "printf", "%s\\0"]).args(&args);
    let r = cmd.run();
    r.assert().code(0);
    assert_eq!(r.out.stdout, nul_separated(&args), "{}", r.show());
}

#[test]
fn arguments_are_the_same_on_every_attempt() {
    let args: Vec<OsString> = vec![
        "a b".into(),
        "".into(),
        "-n".into(),
        OsString::from_vec(vec![0xc3, 0x28]),
    ];
    let mut cmd = retry();
    cmd.args([
        "-n",
        "2",
        "-d",
        "0",
        "--",
        "sh",
        "-c",
        r#"printf '%s\0' "$@"; exit 1"#,
        "sh",
    ])
    .args(&args);
    let r = cmd.run();
    let once = nul_separated(&args);
    assert_eq!(r.out.stdout, [once.clone(), once].concat(), "{}", r.show());
}

#[test]
fn flags_after_the_command_belong_to_the_command() {
    let r = run(&[
        "-n", "1", "printf", "%s\\n", "-n", "5", "-v", "--help", "--", "-d",
    ]);
    r.assert().code(0);
    assert_eq!(
        r.lines(),
        ["-n", "5", "-v", "--help", "--", "-d"],
        "{}",
        r.show()
    );
    assert!(r.log().is_empty(), "-v was not retry's: {}", r.show());
}

// ---------------------------------------------------------------------------------------------
// §4 The child's environment

#[test]
fn retry_attempt_counts_from_one_and_max_attempts_is_the_limit() {
    let r = run_sh(
        &["-n", "3", "-d", "0"],
        r#"echo "$RETRY_ATTEMPT/$RETRY_MAX_ATTEMPTS"; exit 1"#,
    );
    assert_eq!(r.lines(), ["1/3", "2/3", "3/3"], "{}", r.show());
}

#[test]
fn retry_max_attempts_is_empty_with_forever() {
    let r = run_sh(
        &["--forever", "-d", "0"],
        r#"echo "[${RETRY_MAX_ATTEMPTS-unset}] $RETRY_ATTEMPT"; [ "$RETRY_ATTEMPT" -ge 2 ]"#,
    );
    r.assert().code(0);
    assert_eq!(r.lines(), ["[] 1", "[] 2"], "{}", r.show());
}

#[test]
fn retry_previous_exit_is_empty_at_first_then_the_previous_status() {
    let r = run_sh(
        &["-n", "3", "-d", "0"],
        r#"echo "[${RETRY_PREVIOUS_EXIT-unset}]"; exit $((RETRY_ATTEMPT + 20))"#,
    );
    assert_eq!(r.lines(), ["[]", "[21]", "[22]"], "{}", r.show());
}

#[test]
fn retry_remaining_ms_is_empty_without_max_time() {
    let r = run_sh(
        &["-n", "2", "-d", "0"],
        r#"echo "[${RETRY_REMAINING_MS-unset}]"; exit 1"#,
    );
    assert_eq!(r.lines(), ["[]", "[]"], "{}", r.show());
}

#[test]
fn retry_remaining_ms_is_the_time_left_before_max_time() {
    let r = run_sh(
        &[
            "-n",
            "3",
            "-d",
            "50ms",
            "--jitter",
            "none",
            "--max-time",
            "10s",
        ],
        r#"echo "$RETRY_REMAINING_MS"; exit 1"#,
    );
    let left: Vec<u64> = r
        .lines()
        .iter()
        .map(|l| {
            l.parse()
                .unwrap_or_else(|_| panic!("a number: {}", r.show()))
        })
        .collect();
    assert_eq!(left.len(), 3, "{}", r.show());
    assert!(left.iter().all(|ms| *ms <= 10_000), "{left:?}");
    assert!(
        left[0] >= 5_000,
        "most of the time is left at first: {left:?}"
    );
    assert!(
        left.windows(2).all(|w| w[1] + 50 <= w[0]),
        "it counts down, the delays included: {left:?}"
    );
}

fn is_uuid(s: &str) -> bool {
    uuid::Uuid::parse_str(s).is_ok() && s.len() == 36
}

#[test]
fn the_idempotency_key_is_one_uuid_for_every_attempt_of_a_run() {
    let r = run_sh(
        &["-n", "3", "-d", "0"],
        r#"echo "$RETRY_IDEMPOTENCY_KEY"; exit 1"#,
    );
    let keys = r.lines();
    assert_eq!(keys.len(), 3, "{}", r.show());
    assert!(is_uuid(&keys[0]), "{}", r.show());
    assert!(keys.iter().all(|k| *k == keys[0]), "{keys:?}");
}

#[test]
fn the_idempotency_key_differs_between_runs() {
    let key = || {
        let r = run_sh(&["-n", "1"], r#"echo "$RETRY_IDEMPOTENCY_KEY""#);
        r.lines().first().cloned().unwrap_or_default()
    };
    let (a, b) = (key(), key());
    assert!(is_uuid(&a) && is_uuid(&b), "{a:?} {b:?}");
    assert_ne!(a, b);
}

#[test]
fn an_inherited_idempotency_key_is_kept() {
    let mut cmd = retry();
    cmd.env("RETRY_IDEMPOTENCY_KEY", "order-1234").args([
        "-n",
        "2",
        "-d",
        "0",
        "--",
        "sh",
        "-c",
        r#"echo "$RETRY_IDEMPOTENCY_KEY"; exit 1"#,
    ]);
    let r = cmd.run();
    assert_eq!(r.lines(), ["order-1234"; 2], "{}", r.show());
}

#[test]
fn an_inherited_idempotency_key_that_is_not_utf_8_reaches_the_command_and_hooks_unchanged() {
    // A key is the caller's bytes: one that is not UTF-8 is passed on as it is, not replaced.
    let key = OsString::from_vec(vec![b'k', 0xff, b'-', 0x80, b'1']);
    let dir = TempDir::new().expect("temp dir");
    let hook_out = dir.path().join("giveup");
    let mut cmd = retry();
    cmd.env("RETRY_IDEMPOTENCY_KEY", &key)
        .env("HOOK_OUT", &hook_out)
        .args([
            "-n",
            "2",
            "-d",
            "0",
            "--on-giveup",
            r#"printf '%s' "$RETRY_IDEMPOTENCY_KEY" > "$HOOK_OUT""#,
            "--",
            "sh",
            "-c",
            r#"printf '%s\0' "$RETRY_IDEMPOTENCY_KEY"; exit 1"#,
        ]);
    let r = cmd.run();
    r.assert().code(1);
    assert_eq!(
        r.out.stdout,
        nul_separated(&[key.clone(), key.clone()]),
        "{}",
        r.show()
    );
    assert_eq!(
        std::fs::read(&hook_out).expect("the hook wrote the key"),
        key.as_encoded_bytes()
    );
}

#[test]
fn retry_depth_is_1_and_2_inside_a_nested_retry() {
    let script = r#"echo "outer $RETRY_DEPTH $RETRY_IDEMPOTENCY_KEY"
        "$1" -n 1 -- sh -c 'echo "inner $RETRY_DEPTH $RETRY_IDEMPOTENCY_KEY"'"#;
    let r = run(&[
        OsStr::new("-n"),
        OsStr::new("1"),
        OsStr::new("--"),
        OsStr::new("sh"),
        OsStr::new("-c"),
        OsStr::new(script),
        OsStr::new("sh"),
        support::bin().as_os_str(),
    ]);
    r.assert().code(0);
    let lines = r.lines();
    assert_eq!(lines.len(), 2, "{}", r.show());
    let outer: Vec<&str> = lines[0].split(' ').collect();
    let inner: Vec<&str> = lines[1].split(' ').collect();
    assert_eq!(outer[..2], ["outer", "1"], "{}", r.show());
    assert_eq!(inner[..2], ["inner", "2"], "{}", r.show());
    assert_eq!(outer[2], inner[2], "the nested run keeps the key");
}

#[test]
fn the_childs_own_environment_is_passed_through() {
    let mut cmd = retry();
    cmd.env("RETRY_TEST_VALUE", "kept as is").args([
        "-n",
        "1",
        "--",
        "sh",
        "-c",
        r#"echo "$RETRY_TEST_VALUE""#,
    ]);
    let r = cmd.run();
    assert_eq!(r.lines(), ["kept as is"], "{}", r.show());
}

// ---------------------------------------------------------------------------------------------
// A retry inside a retry

/// retry as the command of an outer `retry -n OUTER` would start it.
fn nested(outer: &str, args: &[&str]) -> Run {
    let mut cmd = retry();
    cmd.env("RETRY_DEPTH", "1")
        .env("RETRY_MAX_ATTEMPTS", outer)
        .args(args);
    cmd.run()
}

#[test]
fn a_nested_retry_warns_once_that_attempts_multiply_and_says_its_level() {
    let r = nested("3", &["-n", "3", "-d", "0", "--", "false"]);
    r.assert().code(1);
    let log = r.log();
    let warned: Vec<&String> = log.iter().filter(|l| l.contains("multiply")).collect();
    assert_eq!(warned.len(), 1, "{}", r.show());
    assert!(warned[0].contains("3 there × 3 here = 9"), "{}", r.show());
    assert!(
        log.iter().all(|l| l.starts_with("retry: level 2: ")),
        "{}",
        r.show()
    );
    let quiet = nested("3", &["-q", "-n", "3", "-d", "0", "--", "false"]);
    assert!(
        quiet.log().iter().all(|l| !l.contains("multiply")),
        "{}",
        quiet.show()
    );
    let unlimited = nested("", &["-n", "2", "-d", "0", "--", "false"]);
    unlimited
        .assert()
        .stderr(predicate::str::contains("multiply"));
}

/// `retry -- retry -- cmd`, both real: the inner one runs in each of the outer's attempts, and
/// says once, not once an attempt, that their attempts multiply, naming each level once.
#[test]
fn a_retry_inside_a_retry_warns_once_naming_each_level_once() {
    let r = run(&[
        OsStr::new("-n"),
        OsStr::new("2"),
        OsStr::new("-d"),
        OsStr::new("0"),
        OsStr::new("--"),
        support::bin().as_os_str(),
        OsStr::new("-n"),
        OsStr::new("3"),
        OsStr::new("-d"),
        OsStr::new("0"),
        OsStr::new("--"),
        OsStr::new("false"),
    ]);
    r.assert().code(1);
    let inner = support::bin().display().to_string();
    assert_output(
        r.stderr().replace(&inner, "[RETRY]"),
        str![[r#"
retry: level 2: this retry runs inside each attempt of the retry at level 1: attempts multiply, 2 there × 3 here = 6 runs of the command at most; retry in one place only, or give this one -n 1
retry: level 2: attempt 1/3 failed: exit status 1 after [ELAPSED] (retryable); retrying in 0ms
retry: level 2: attempt 2/3 failed: exit status 1 after [ELAPSED] (retryable); retrying in 0ms
retry: level 2: attempt 3/3 failed: exit status 1 after [ELAPSED] (not retried: attempts used up)
retry: level 2: giving up after 3 attempts in [ELAPSED]: attempts used up; last exit status 1; command: false
retry: attempt 1/2 failed: exit status 1 after [ELAPSED] (retryable); retrying in 0ms
retry: level 2: attempt 1/3 failed: exit status 1 after [ELAPSED] (retryable); retrying in 0ms
retry: level 2: attempt 2/3 failed: exit status 1 after [ELAPSED] (retryable); retrying in 0ms
retry: level 2: attempt 3/3 failed: exit status 1 after [ELAPSED] (not retried: attempts used up)
retry: level 2: giving up after 3 attempts in [ELAPSED]: attempts used up; last exit status 1; command: false
retry: attempt 2/2 failed: exit status 1 after [ELAPSED] (not retried: attempts used up)
retry: giving up after 2 attempts in [ELAPSED]: attempts used up; last exit status 1; command: [RETRY] -n 3 -d 0 -- false

"#]],
    );
}

#[test]
fn explain_shows_that_a_nested_retry_multiplies_attempts() {
    let r = nested("4", &["--explain", "-n", "2"]);
    r.assert().code(0);
    let w = warnings(&r.stdout());
    assert!(
        w.iter().any(|l| l.contains("4 there × 2 here = 8")),
        "{}",
        r.show()
    );
}

#[test]
fn a_top_level_retry_does_not_warn_about_nesting() {
    let r = run_sh(&["-n", "2", "-d", "0"], "exit 1");
    assert!(
        r.log()
            .iter()
            .all(|l| !l.contains("multiply") && !l.contains("level")),
        "{}",
        r.show()
    );
}

/// retry started with its stdin closed (`0<&-`) must not hand one of its own pipes to the
/// command as stdin: descriptors 0, 1 and 2 are opened on /dev/null at start (std's runtime
/// does it), so the command reads an end of file, not retry's signal pipe or replay pipe.
#[test]
fn a_command_started_with_stdin_closed_reads_an_end_of_file_not_a_pipe_of_retrys() {
    let out = support::retry_in_sh(
        r#"exec "$0" -n 2 -d 0 -- sh -c 'wc -c; [ -p /dev/stdin ] && echo pipe || echo no-pipe' 0<&-"#,
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stdout)
            .split_whitespace()
            .collect::<Vec<_>>(),
        ["0", "no-pipe"],
        "{out:?}"
    );
    assert_eq!(out.status.code(), Some(0), "{out:?}");
}

/// retry started with its stdout and stderr closed (`1>&- 2>&-`, as some daemons and cron
/// setups start jobs) must not make a pipe or file of its own the command's output:
/// descriptors 0, 1 and 2 are opened on /dev/null before retry opens anything, so its log
/// file and its pipes get numbers of their own: the command's stderr is retry's /dev/null,
/// and what it prints on stdout (passed on by retry itself, `--stdout hold`) is lost, as
/// without retry, rather than written into retry's log.
#[test]
fn a_command_started_with_stdout_and_stderr_closed_writes_to_no_pipe_or_file_of_retrys() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let (log, seen) = (dir.path().join("retry.log"), dir.path().join("seen"));
    let out = support::retry_in_sh(&format!(
        r#"exec "$0" -n 2 -d 0 --stdout hold --log-file '{}' -- sh -c '
            [ -p /dev/fd/2 ] && echo "stderr: a pipe" >> "{}"
            echo OUT; echo ERR >&2; exit 1' 1>&- 2>&-"#,
        log.display(),
        seen.display()
    ));
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert_eq!(std::fs::read_to_string(&seen).unwrap_or_default(), "");
    let logged = std::fs::read_to_string(&log).expect("the log file");
    assert!(logged.contains("attempt 2/2 failed"), "{logged}");
    assert!(
        logged.lines().all(|l| l != "OUT" && l != "ERR"),
        "the command wrote into retry's log: {logged}"
    );
}

/// A write to a pipe whose reader has gone is an error retry reports (125), not a SIGPIPE
/// that kills it: SIGPIPE is ignored in retry (std's runtime), and set back to its default for
/// the command.
#[test]
fn a_closed_stdout_pipe_is_a_write_error_not_a_sigpipe() {
    let (reader, writer) = std::io::pipe().expect("a pipe");
    drop(reader);
    let out = support::retry()
        .args(["--explain", "--", "true"])
        .stdout(writer)
        .stderr(std::process::Stdio::piped())
        .output()
        .expect("retry runs");
    assert_eq!(out.status.signal(), None, "{out:?}");
    assert_eq!(out.status.code(), Some(125), "{out:?}");
    // The command gets SIGPIPE's default back: `yes` into a closed pipe ends by SIGPIPE.
    let (reader, writer) = std::io::pipe().expect("a pipe");
    drop(reader);
    let out = support::retry()
        .args(["-n", "1", "-qq", "--", "yes"])
        .stdout(writer)
        .output()
        .expect("retry runs");
    assert_eq!(out.status.signal(), Some(13), "{out:?}");
}
