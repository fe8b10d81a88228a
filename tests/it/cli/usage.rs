//! Usage errors: exit 125, the bad value named, nothing run, and one style for every message.

use super::*;
use crate::support::PredicateBooleanExt;

#[test]
fn the_adaptive_delay_without_a_key_or_with_decorrelated_jitter_is_a_usage_error() {
    assert_usage_error(
        &["--backoff", "adaptive"],
        str![[r#"
retry: error: --backoff adaptive needs --key: the delay is learned from the recent outcomes of the runs that share the key

"#]],
    );
    assert_usage_error(
        &[
            "--backoff",
            "adaptive",
            "--key",
            "k",
            "--jitter",
            "decorrelated",
        ],
        str![[r#"
retry: error: flags that exclude each other: --jitter decorrelated and --backoff adaptive; decorrelated jitter makes its own schedule, so choose another jitter

"#]],
    );
}

#[test]
fn a_bad_duration_is_a_usage_error() {
    assert_usage_error(
        &["-d", "5parsecs"],
        str![[r#"
retry: error: not a duration for --delay: 5parsecs; write 250ms, 1.5s, 2m or 1h 30m; a bare number means seconds

"#]],
    );
}

#[test]
fn a_negative_duration_is_a_usage_error() {
    assert_usage_error(
        &["--max-time=-1"],
        str![[r#"
retry: error: not a duration of zero or more for --max-time: -1; write 250ms, 1.5s, 2m or 1h 30m; a bare number means seconds

"#]],
    );
}

#[test]
fn a_bad_item_in_a_delays_list_is_a_usage_error() {
    assert_usage_error(
        &["--delays", "1s,xyz,3s"],
        str![[r#"
retry: error: not a duration for --delays: xyz; write 250ms, 1.5s, 2m or 1h 30m; a bare number means seconds

"#]],
    );
}

#[test]
fn a_bad_item_in_a_status_list_is_a_usage_error() {
    assert_usage_error(
        &["--retry-on", "1,abc"],
        str![[r#"
retry: error: neither an exit status nor a signal name for --retry-on: abc; give statuses (0-255), ranges and signals, as 1,5-7,SIGKILL

"#]],
    );
    assert_usage_error(
        &["--fatal-on", "SIGNOPE"],
        str![[r#"
retry: error: neither an exit status nor a signal name for --fatal-on: SIGNOPE; give statuses (0-255), ranges and signals, as 1,5-7,SIGKILL

"#]],
    );
    assert_usage_error(
        &["--success-on", "256"],
        str![[r#"
retry: error: not an exit status for --success-on: 256; exit statuses run from 0 to 255

"#]],
    );
}

#[test]
fn a_backwards_range_is_a_usage_error() {
    assert_usage_error(
        &["--retry-on", "7-5"],
        str![[r#"
retry: error: a range that runs backwards for --retry-on: 7-5; put the smaller status first, as 5-7

"#]],
    );
}

#[test]
fn a_bad_jitter_is_a_usage_error() {
    assert_usage_error(
        &["--jitter", "sideways"],
        str![[r#"
retry: error: not a kind of jitter for --jitter: sideways; use none, full, equal, decorrelated or a proportion as 20%

"#]],
    );
    assert_usage_error(
        &["--jitter", "150%"],
        str![[r#"
retry: error: a jitter proportion out of range for --jitter: 150%; use 0% to 100%

"#]],
    );
}

#[test]
fn a_bad_backoff_is_a_usage_error() {
    assert_usage_error(
        &["--backoff", "quadratic"],
        str![[r#"
retry: error: not a choice of --backoff: quadratic; use one of exponential, linear, constant, fibonacci, adaptive

"#]],
    );
}

#[test]
fn zero_attempts_is_a_usage_error() {
    assert_usage_error(
        &["--attempts", "0"],
        str![[r#"
retry: error: not a number of attempts for --attempts: 0; give a whole number of at least 1, or --forever for no limit

"#]],
    );
    assert_usage_error(
        &["--attempts", "0"],
        str![[r#"
retry: error: not a number of attempts for --attempts: 0; give a whole number of at least 1, or --forever for no limit

"#]],
    );
}

#[test]
fn attempts_and_retries_together_are_a_usage_error() {
    assert_usage_error(
        &["--attempts", "3", "--retries", "2"],
        str![[r#"
retry: error: flags that exclude each other: --attempts and --retries; keep one of them

"#]],
    );
}

#[test]
fn a_factor_below_one_is_a_usage_error() {
    assert_usage_error(
        &["--factor", "0.5"],
        str![[r#"
retry: error: not a backoff factor for --factor: 0.5; give a number of at least 1, as 2 or 1.5

"#]],
    );
}

/// A factor that would change nothing is refused, not ignored; a config file's may stand unused
/// under a backoff given here.
#[test]
fn a_factor_for_a_backoff_that_has_none_is_a_usage_error_unless_it_comes_from_the_config() {
    assert_usage_error(
        &["-b", "linear", "--factor", "3"],
        str![[r#"
retry: error: --factor is for -b exponential, and this run's backoff is linear: leave --factor out, or give -b exponential

"#]],
    );
    let dir = TempDir::new().expect("temp dir");
    let config = dir.path().join("config.toml");
    std::fs::write(&config, "factor = 3\n").expect("config");
    let r = support::retry()
        .env("RETRY_CONFIG", &config)
        .args(["-b", "linear", "--", "true"])
        .run();
    r.assert().code(0);
}

#[test]
fn a_non_numeric_factor_is_a_usage_error() {
    assert_usage_error(
        &["--factor", "twice"],
        str![[r#"
retry: error: not a backoff factor for --factor: twice; give a number of at least 1, as 2 or 1.5

"#]],
    );
}

#[test]
fn a_bad_seed_is_a_usage_error() {
    assert_usage_error(
        &["--seed", "lucky"],
        str![[r#"
retry: error: not a seed for --seed: lucky; give a whole number from 0 to 18446744073709551615

"#]],
    );
}

#[test]
fn a_bad_color_is_a_usage_error_naming_the_choices() {
    assert_usage_error(
        &["--color", "sometimes"],
        str![[r#"
retry: error: not a choice of --color: sometimes; use one of auto, always, never

"#]],
    );
}

#[test]
fn an_unknown_flag_is_a_usage_error() {
    assert_usage_error(
        &["--frobnicate"],
        str![[r#"
retry: error: unknown flag: --frobnicate; see retry --help; an argument meant for the command goes after --, as retry -n 3 -- COMMAND --its-flag

"#]],
    );
}

#[test]
fn a_missing_command_is_a_usage_error() {
    for args in [&["-n", "2"][..], &["-n", "2", "--"][..], &[][..]] {
        let r = run(args);
        assert_eq!(r.code(), Some(125), "{args:?}: {}", r.show());
        assert!(r.out.stdout.is_empty(), "{args:?}: {}", r.show());
        assert!(
            r.stderr().contains("COMMAND"),
            "{args:?}: the message says what is missing: {}",
            r.show()
        );
    }
}

// ---------------------------------------------------------------------------------------------
// Error messages: one style, `retry: error: <what>: <the bad value>; <how to fix>`

/// Asserts that `args` is a usage error of one line in the house style that names `bad` and
/// leaks none of `hidden`.
pub(super) fn assert_one_line_error(args: &[&str], bad: &str, hidden: &[&str]) -> String {
    let dir = TempDir::new().expect("temp dir");
    let (mark, cmd) = marker(&dir);
    let mut all: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    all.push("--".into());
    all.extend(cmd);
    let r = run(&all);
    assert_eq!(r.code(), Some(125), "{args:?}: {}", r.show());
    assert!(!mark.exists(), "{args:?}: the command ran");
    let err = r.stderr();
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 1, "{args:?}: one line: {err}");
    let line = lines[0];
    assert!(line.starts_with("retry: error: "), "{args:?}: {line}");
    assert!(
        line.contains(&format!(": {bad}; ")),
        "{args:?}: names {bad:?}: {line}"
    );
    for h in hidden {
        assert!(!line.contains(h), "{args:?}: leaks {h:?}: {line}");
    }
    line.to_string()
}

#[test]
fn parser_errors_have_the_prefix_name_the_value_and_leak_no_internals() {
    assert_usage_error(
        &["-n", "0"],
        str![[r#"
retry: error: not a number of attempts for --attempts: 0; give a whole number of at least 1, or --forever for no limit

"#]],
    );
    assert_usage_error(
        &["-d", "abc"],
        str![[r#"
retry: error: not a duration for --delay: abc; write 250ms, 1.5s, 2m or 1h 30m; a bare number means seconds

"#]],
    );
    assert_usage_error(
        &["-d", "5parsecs"],
        str![[r#"
retry: error: not a duration for --delay: 5parsecs; write 250ms, 1.5s, 2m or 1h 30m; a bare number means seconds

"#]],
    );
    assert_usage_error(
        &["--seed", "lucky"],
        str![[r#"
retry: error: not a seed for --seed: lucky; give a whole number from 0 to 18446744073709551615

"#]],
    );
    assert_usage_error(
        &["--factor", "twice"],
        str![[r#"
retry: error: not a backoff factor for --factor: twice; give a number of at least 1, as 2 or 1.5

"#]],
    );
    assert_usage_error(
        &["--backoff", "quadratic"],
        str![[r#"
retry: error: not a choice of --backoff: quadratic; use one of exponential, linear, constant, fibonacci, adaptive

"#]],
    );
    assert_usage_error(
        &["--retry-on", "1,abc"],
        str![[r#"
retry: error: neither an exit status nor a signal name for --retry-on: abc; give statuses (0-255), ranges and signals, as 1,5-7,SIGKILL

"#]],
    );
    assert_usage_error(
        &["--frobnicate"],
        str![[r#"
retry: error: unknown flag: --frobnicate; see retry --help; an argument meant for the command goes after --, as retry -n 3 -- COMMAND --its-flag

"#]],
    );
    assert_usage_error(
        &["--attempts", "3", "--retries", "2"],
        str![[r#"
retry: error: flags that exclude each other: --attempts and --retries; keep one of them

"#]],
    );
}

#[test]
fn flags_spelled_as_other_tools_spell_them_suggest_retrys_own() {
    assert_usage_error(
        &["--timeout", "5s"],
        str![[r#"
retry: error: unknown flag: --timeout; did you mean --attempt-timeout DUR (one attempt) or --max-time DUR (the whole run)?

"#]],
    );
    assert_usage_error(
        &["--retry", "2"],
        str![[r#"
retry: error: unknown flag: --retry; did you mean --retries N (as curl --retry N), or -n/--attempts N, the first attempt included?

"#]],
    );
}

/// Each flag here is one that clap's nearest spelling got wrong (`--min-delay` → `--max-delay`,
/// `--sleep` → `--seed`, `--max-tries` → `--max-time`) or had nothing for.
#[test]
fn delay_and_limit_flags_of_other_retry_tools_suggest_retrys_own_not_the_nearest_spelling() {
    let flags = [
        "--min-delay",
        "--initial-delay",
        "--initial-interval",
        "--sleep",
        "--retry-interval",
        "--backoff-max",
        "--max-backoff",
        "--delay-max",
        "--max-interval",
        "--max-wait",
        "--backoff-factor",
        "--multiplier",
        "--count",
        "--max-tries",
        "--retry-count",
        "--deadline",
        "--total-timeout",
        "--max-elapsed-time",
    ];
    let said: String = flags
        .iter()
        .map(|flag| usage_error(&[flag, "4"]).stderr())
        .collect();
    assert_output(
        said,
        str![[r#"
retry: error: unknown flag: --min-delay; did you mean --delay DUR (the first delay, which later ones grow from)?
retry: error: unknown flag: --initial-delay; did you mean --delay DUR (the first delay)?
retry: error: unknown flag: --initial-interval; did you mean --delay DUR (the first delay)?
retry: error: unknown flag: --sleep; did you mean --delay DUR?
retry: error: unknown flag: --retry-interval; did you mean --delay DUR?
retry: error: unknown flag: --backoff-max; did you mean --max-delay DUR?
retry: error: unknown flag: --max-backoff; did you mean --max-delay DUR?
retry: error: unknown flag: --delay-max; did you mean --max-delay DUR?
retry: error: unknown flag: --max-interval; did you mean --max-delay DUR?
retry: error: unknown flag: --max-wait; did you mean --max-delay DUR (the longest wait between attempts) or --max-time DUR (the whole run)?
retry: error: unknown flag: --backoff-factor; did you mean --factor F?
retry: error: unknown flag: --multiplier; did you mean --factor F?
retry: error: unknown flag: --count; did you mean --attempts N?
retry: error: unknown flag: --max-tries; did you mean --attempts N?
retry: error: unknown flag: --retry-count; did you mean --retries N?
retry: error: unknown flag: --deadline; did you mean --max-time DUR?
retry: error: unknown flag: --total-timeout; did you mean --max-time DUR?
retry: error: unknown flag: --max-elapsed-time; did you mean --max-time DUR?

"#]],
    );
}

#[test]
fn a_negative_value_is_named_with_its_flag_not_taken_for_an_unknown_flag() {
    for (args, needle) in [
        (
            &["-n", "-1"][..],
            "not a number of attempts for --attempts: -1",
        ),
        (&["-d", "-1s"], "not a duration for --delay: -1s"),
        (&["--factor", "-2"], "not a backoff factor for --factor: -2"),
        (&["--seed", "-5"], "not a seed for --seed: -5"),
    ] {
        assert_usage_error_naming(args, needle);
    }
    // A value that begins with a dash is a value: a pattern, say.
    let r = run(&["--retry-if-output", "-ERR", "-n", "1", "--", "true"]);
    r.assert().code(0);
}

#[test]
fn numeric_limits_are_stated_in_the_error_and_in_the_help() {
    assert_usage_error(
        &["--explain", "--fleet", "0"],
        str![[r#"
retry: error: not a number of processes for --fleet: 0; give a whole number from 1 to 100000

"#]],
    );
    assert_usage_error(
        &["--explain", "--fleet", "100001"],
        str![[r#"
retry: error: not a number of processes for --fleet: 100001; give a whole number from 1 to 100000

"#]],
    );
    assert_usage_error(
        &["--key", "k", "--budget-burst", "100001"],
        str![[r#"
retry: error: not a number of tokens for --budget-burst: 100001; give a whole number from 0 (no budget) to 100000

"#]],
    );
    let help = run(&["--help"]).stdout();
    let said = |flag: &str| {
        help.split(&format!("--{flag} <"))
            .nth(1)
            .and_then(|rest| rest.split("\n  -").next())
            .unwrap_or_default()
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
    };
    assert!(said("fleet").contains("(1 to 100000)"), "{}", said("fleet"));
    assert!(
        said("budget-burst").contains("(0 to 100000)"),
        "{}",
        said("budget-burst")
    );
    assert!(
        said("breaker-failures").contains("(0 to 1000)"),
        "{}",
        said("breaker-failures")
    );
}

#[test]
fn a_duration_over_a_year_is_refused_and_long_waits_read_plainly() {
    for (flag, value) in [
        ("-d", "10000000000000000000s"),
        ("--max-time", "2y"),
        ("--breaker-open-max", "400days"),
        ("--delays", "1s,366days"),
    ] {
        let line = assert_one_line_error(
            &["--key", "k", flag, value],
            value.rsplit(',').next().unwrap_or(value),
            &[],
        );
        assert!(
            line.contains("too long a duration") && line.contains("1y"),
            "{line}"
        );
    }
    // The longest allowed: every figure of the schedule is a sum that stays finite, and the
    // expected wait is below the worst case.
    let text = explain(&["-d", "1y", "--factor", "1e300", "-n", "1000", "--", "x"]);
    let (worst, expected) = totals(&text);
    assert!(expected < worst, "{text}");
    assert!(worst <= dur("1y") * 999, "{text}");
}

#[test]
fn a_short_flag_written_long_and_a_misspelled_profile_get_did_you_mean() {
    assert_usage_error(
        &["--n", "3"],
        str![[r#"
retry: error: unknown flag: --n; did you mean -n (or --attempts)?

"#]],
    );
    let dir = TempDir::new().expect("temp dir");
    let config = dir.path().join("config.toml");
    write_file(&config, "[profiles.ci]\nattempts = 2\n", 0o644);
    let config = config.display().to_string();
    assert_usage_error(
        &["--config", &config, "-p", "cii"],
        str![[r#"
retry: error: no such profile or preset: cii; did you mean ci?

"#]],
    );
    assert_usage_error(
        &["-p", "curll"],
        str![[r#"
retry: error: no such profile or preset: curll; did you mean curl?

"#]],
    );
}

#[test]
fn a_directory_named_as_the_config_file_is_said_to_be_one() {
    let dir = TempDir::new().expect("temp dir");
    let path = dir.path().display().to_string();
    let line = assert_one_line_error(&["--config", &path], &path, &[]);
    assert!(line.contains("a directory, not a config file"), "{line}");
}

#[test]
fn a_command_that_cannot_run_is_said_as_a_shell_says_it() {
    let dir = TempDir::new().expect("temp dir");
    let path = dir.path().display().to_string();
    let r = run(&["-n", "3", "--", &path]);
    r.assert().code(126);
    r.assert().stderr(predicate::str::contains(format!(
        "cannot run '{path}': Is a directory"
    )));
    let r = run(&["-n", "3", "--", "retry-test-no-such-command"]);
    r.assert().code(127);
    r.assert()
        .stderr(predicate::str::contains("command not found"));
}

#[test]
fn a_whole_command_in_one_argument_that_names_no_file_is_said_to_be_one_with_both_fixes() {
    let r = run(&[
        "-n",
        "3",
        "--",
        "retry-test-no-such-command -fsS http://127.0.0.1:9/",
    ]);
    r.assert().code(127);
    assert_output(
        r.stderr(),
        str![[r#"
retry: cannot run 'retry-test-no-such-command -fsS http://127.0.0.1:9/': No such file or directory; a whole command was given as one argument: give its words apart, as retry -- retry-test-no-such-command -fsS http://127.0.0.1:9/, or a shell line, as retry -- sh -c 'retry-test-no-such-command -fsS http://127.0.0.1:9/'
retry: attempt 1/3 failed: exit status 127 after [ELAPSED] (fatal: will not get better)
retry: giving up after 1 attempt in [ELAPSED]: status 127: command not found; command: 'retry-test-no-such-command -fsS http://127.0.0.1:9/'

"#]],
    );
    // A pipe is no word: the shell line alone.
    let r = run(&["-n", "3", "--", "retry-test-no-such-command | wc -l"]);
    r.assert().code(127);
    assert_output(
        r.stderr(),
        str![[r#"
retry: cannot run 'retry-test-no-such-command | wc -l': command not found (no such file on PATH); a shell line was given as one argument: give it to a shell, as retry -- sh -c 'retry-test-no-such-command | wc -l'
retry: attempt 1/3 failed: exit status 127 after [ELAPSED] (fatal: will not get better)
retry: giving up after 1 attempt in [ELAPSED]: status 127: command not found; command: 'retry-test-no-such-command | wc -l'

"#]],
    );
    // Spaces alone are no command in one argument: there are no words to give apart.
    let r = run(&["-n", "3", "--", " "]);
    r.assert().code(127);
    let said = r.stderr();
    assert!(
        said.contains("retry: cannot run ' ': command not found"),
        "{said}"
    );
    assert!(!said.contains("one argument"), "{said}");
}

#[test]
fn a_file_named_with_a_space_runs_and_one_whose_interpreter_is_missing_gets_no_such_advice() {
    let dir = TempDir::new().expect("temp dir");
    let job = dir.path().join("nightly job");
    write_file(&job, "#!/bin/sh\necho ran\n", 0o755);
    let r = run(&["-n", "3", "--", &job.display().to_string()]);
    r.assert().code(0);
    assert_eq!(r.lines(), ["ran"], "{}", r.show());
    // ENOENT from a missing interpreter: the file exists, and is no command line.
    let broken = dir.path().join("broken job");
    write_file(&broken, "#!/nonexistent/sh\necho ran\n", 0o755);
    let r = run(&["-n", "3", "--", &broken.display().to_string()]);
    r.assert().code(127);
    r.assert()
        .stderr(predicate::str::contains("one argument").not());
}

#[test]
fn flags_that_would_be_ignored_are_refused_naming_the_flag() {
    assert_usage_error(
        &["--outage", "1h"],
        str![[r#"
retry: error: a flag that only shapes a simulated fleet: --outage without --fleet; add --explain --fleet N to simulate one, or leave --outage out

"#]],
    );
    assert_usage_error(
        &["--every=10m"],
        str![[r#"
retry: error: a flag that only shapes a simulated fleet: --every without --fleet; add --explain --fleet N to simulate one, or leave --every out

"#]],
    );
    assert_usage_error(
        &["--fleet", "10"],
        str![[r#"
retry: error: --fleet simulates a fleet for --explain, and runs nothing: --fleet without --explain; add --explain to see the simulation; leave --fleet out to run the command

"#]],
    );
    assert_usage_error(
        &["-q", "-v"],
        str![[r#"
retry: error: flags that exclude each other: --quiet and --verbose; keep one of them

"#]],
    );
    // The same flags where they mean something.
    let r = run(&[
        "--explain",
        "--fleet",
        "3",
        "--outage",
        "1m",
        "--every",
        "1m",
    ]);
    r.assert().code(0);
}

#[test]
fn reset_state_with_a_command_says_the_command_is_not_run() {
    let dir = TempDir::new().expect("temp dir");
    let (mark, cmd) = marker(&dir);
    let state = dir.path().join("state").display().to_string();
    let mut args = vec!["--state-dir", &state, "--key", "k", "--reset-state", "--"];
    args.extend(cmd.iter().map(String::as_str));
    let r = run(&args);
    r.assert().code(0);
    assert!(!mark.exists(), "the command ran");
    r.assert().stderr(predicate::str::contains(
        "--reset-state runs nothing; the command was not run: touch",
    ));
}

/// humantime alone reads "5 10m" as 8h 30m and "1 30s" as 2m 10s: every duration flag, the
/// --delays list and a config file's durations refuse a number without a unit beside another.
#[test]
fn a_number_without_a_unit_in_a_duration_is_refused_for_every_duration_flag() {
    let mut cmd = retry::setup::cli::command();
    cmd.build();
    let mut flags: Vec<String> = cmd
        .get_arguments()
        .filter(|a| {
            a.get_value_names()
                .is_some_and(|v| v.iter().any(|n| n == "DUR"))
        })
        .filter_map(|a| a.get_long())
        .map(|long| format!("--{long}"))
        .collect();
    assert!(flags.len() >= 15, "{flags:?}");
    flags.push("--delays".into());
    for flag in &flags {
        for bad in ["5 10m", "1 30s"] {
            let line = assert_one_line_error(&[flag, bad], bad, &[]);
            assert!(
                line.contains(&format!(
                    "a number without a unit in a duration for {flag}: "
                )),
                "{line}"
            );
        }
    }
    assert_usage_error(
        &["--delays", "1s,5 10m"],
        str![[r#"
retry: error: a number without a unit in a duration for --delays: 5 10m; give 5 its unit, as in 1h 30m or 5m 10s (a bare number of seconds stands alone)

"#]],
    );
    // Well-formed durations are read as before.
    for (flag, value, shown) in [
        ("--max-time", "1h 30m", "1h 30m"),
        ("--max-time", "2m", "2m"),
        ("--delay", "250ms", "250ms"),
        ("--delay", "1.5", "1.5s"),
    ] {
        let text = explain(&[flag, value]);
        assert!(
            row(&text, &flag[2..]).contains(shown),
            "{flag} {value}: {text}"
        );
    }
    let dir = TempDir::new().expect("temp dir");
    let config = dir.path().join("config.toml");
    write_file(&config, "attempts = 2\ndelay = \"5 10m\"\n", 0o644);
    let path = config.display().to_string();
    let line = assert_one_line_error(&["--config", &path], "5 10m", &[]);
    assert!(line.contains(&format!("{path}:2: ")), "{line}");
    assert!(
        line.contains("a number without a unit in a duration for delay"),
        "{line}"
    );
}

#[test]
fn reset_state_without_a_key_says_it_needs_one() {
    assert_usage_error(
        &["--reset-state"],
        str![[r#"
retry: error: --reset-state forgets the state of one key, and needs --key: --reset-state without --key; give the key, as retry --reset-state --key api.example.com (retry --list-keys lists every key with state)

"#]],
    );
    let r = run(&["--reset-state"]);
    r.assert().code(125);
    r.assert().stderr(predicate::str::contains("needs --key"));
}

#[test]
fn a_unicode_class_in_an_output_pattern_is_a_usage_error_that_names_it() {
    // Patterns are compiled in ASCII mode: what would need the Unicode tables is refused,
    // with what a pattern may use.
    assert_usage_error(
        &["--retry-if-output", r"\p{L}+ failed"],
        str![[r#"
retry: error: not a regular expression for --retry-if-output: /p{L}+ failed; Unicode not allowed here (patterns are matched in ASCII mode: /w, /d, /s, [[:alpha:]] and (?i) are ASCII only, and other text is matched as written; no /p{..} or (?u)/w)

"#]],
    );
    assert_usage_error_naming(
        &["--fatal-if-output", r"(?u)\w"],
        r"not a regular expression for --fatal-if-output: (?u)\w",
    );
}
