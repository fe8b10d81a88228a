//! Every form of minfrin's `retry` (its man page and README: `-t/--times`,
//! `-d/--delay` with seconds or a list, `-u/--until`, `-w/--while`, `-m/--message`, `-j`, `-v`,
//! `-h`) means the same here, or is refused with 125, nothing run, naming the way to say it
//! (README.md, Coming from minfrin's retry).

use super::usage::assert_one_line_error;
use super::*;

/// How many times `retry ARGS -- sh -c 'echo x; exit 1'` ran the command.
fn attempts_made(args: &[&str]) -> usize {
    let r = run_sh(args, "echo attempt; exit 1");
    assert_eq!(r.code(), Some(1), "{args:?}: {}", r.show());
    r.lines().iter().filter(|l| *l == "attempt").count()
}

#[test]
fn times_is_the_number_of_attempts_in_every_spelling() {
    for args in [
        &["-t", "3"][..],
        &["-t3"],
        &["--times", "3"],
        &["--times=3"],
    ] {
        let mut all = args.to_vec();
        all.extend(["-d", "0"]);
        assert_eq!(attempts_made(&all), 3, "{args:?}");
    }
    // What the issue saw: -t 5 -d 10 was a 5-second deadline; it is 5 attempts, and --explain
    // says so without running anything.
    let text = explain(&["-t", "5", "-d", "10", "-b", "constant", "-j", "none"]);
    assert!(row(&text, "attempts").starts_with("  attempts         5 (4 retries)"));
    assert!(row(&text, "max-time").contains("none"), "{text}");
}

#[test]
fn times_zero_is_refused_it_ran_nothing_in_minfrins_retry() {
    assert_usage_error(
        &["-t", "0"],
        str![[r#"
retry: error: not a number of attempts for --times: 0; -t 0 ran nothing in minfrin's retry; here every run makes at least one attempt: give 1 or more

"#]],
    );
    assert_usage_error(
        &["--times", "-1"],
        str![[r#"
retry: error: not a number of attempts for --times: -1; -t -1 was minfrin's retry's forever: give --forever

"#]],
    );
}

#[test]
fn max_time_has_no_short_form_and_t_with_a_duration_names_it() {
    assert_usage_error(
        &["-t", "5s"],
        str![[r#"
retry: error: not a number of attempts for --times: 5s; -t/--times is the number of attempts (as in minfrin's retry); for a deadline for the whole run, give --max-time 5s

"#]],
    );
    let text = explain(&["--max-time", "5s"]);
    assert!(row(&text, "max-time").contains("5s"), "{text}");
}

#[test]
fn times_excludes_the_other_limits_on_attempts() {
    for (other, named) in [
        (&["-n", "2"][..], "--attempts"),
        (&["--retries", "1"], "--retries"),
        (&["--forever"], "--forever"),
    ] {
        let mut args = vec!["-t", "3"];
        args.extend(other);
        let line = assert_one_line_error(&args, &format!("--times and {named}"), &[]);
        assert!(line.ends_with("keep one of them"), "{line}");
    }
}

#[test]
fn a_delay_in_seconds_means_seconds_as_there() {
    let text = explain(&["-d", "10"]);
    assert!(row(&text, "delay").contains("10s"), "{text}");
    let text = explain(&["--delay=2.5"]);
    assert!(row(&text, "delay").contains("2.5s"), "{text}");
}

/// minfrin's `-t 3 -d 5` waits 5 s before every retry; here a bare `-d 5` starts a growing,
/// jittered schedule. With `-t`, the mark of a script written for minfrin's retry, it is
/// refused, naming both ways to say it; each way, and `-d 0`, runs.
#[test]
fn times_with_a_bare_delay_is_refused_naming_a_fixed_wait() {
    for delay in ["5", "5s", "--delay=5"] {
        let args: Vec<&str> = if delay.starts_with("--") {
            vec!["-t", "3", delay]
        } else {
            vec!["-t", "3", "-d", delay]
        };
        assert_usage_error(
            &args,
            str![[r#"
retry: error: -t/--times with a bare -d/--delay, which in minfrin's retry waits 5s before every retry: -t 3 -d 5s; here -d is the first delay of a growing, jittered schedule: add -b constant -j none for a fixed 5s between attempts, or give -n 3 for this retry's schedule

"#]],
        );
    }
    // What the refusal names means what minfrin's meant: three waits of exactly 5 s.
    let (worst, expected) = totals(&explain(&[
        "-t", "4", "-d", "5", "-b", "constant", "-j", "none",
    ]));
    assert_eq!(
        (worst, expected),
        (Duration::from_secs(15), Duration::from_secs(15))
    );
    // Either half of it, or --delays, says the script was written for this retry.
    for shaped in [&["-j", "none"][..], &["-b", "linear"], &["--delays", "5s"]] {
        let mut args = vec!["-t", "3", "-d", "5"];
        args.extend(shaped);
        explain(&args);
    }
    // Given anywhere: a config file's defaults say it too.
    let dir = TempDir::new().expect("temp dir");
    let config = dir.path().join("config.toml");
    write_file(
        &config,
        "backoff = \"constant\"\njitter = \"none\"\n",
        0o644,
    );
    let path = config.display().to_string();
    let text = explain(&["--config", &path, "-t", "3", "-d", "5"]);
    assert!(row(&text, "backoff").contains("constant"), "{text}");
    let text = explain(&["-n", "3", "-d", "5"]);
    assert!(row(&text, "delay").contains("5s"), "{text}");
    assert_eq!(attempts_made(&["-t", "2", "-d", "0"]), 2);
}

#[test]
fn a_list_of_delays_is_refused_naming_the_schedule_here() {
    assert_usage_error(
        &["-d", "1,2,4,64"],
        str![[r#"
retry: error: not one duration for --delay: 1,2,4,64; -d/--delay is one delay; minfrin's list of seconds is a schedule here: give --delays 1s,2s,4s,64s (the last one repeats; add -j none for no jitter)

"#]],
    );
    assert_usage_error(
        &["--delay=1,2"],
        str![[r#"
retry: error: not one duration for --delay: 1,2; -d/--delay is one delay; minfrin's list of seconds is a schedule here: give --delays 1s,2s (the last one repeats; add -j none for no jitter)

"#]],
    );
    // What it names is taken as it is said.
    let text = explain(&["--delays", "1s,2s,4s,64s", "-j", "none", "--seed", "1"]);
    assert!(
        row(&text, "backoff").contains("list 1s,2s,4s,1m 4s"),
        "{text}"
    );
}

#[test]
fn until_is_refused_naming_the_success_on_that_says_it() {
    assert_usage_error(
        &["-u", "success"],
        str![[r#"
retry: error: --until is an option of minfrin's retry, not of this one: success; this retry stops at the first success by default: leave --until out (minfrin's retry tried forever, 10s apart; here that is --forever -d 10 -b constant -j none --stdout hold)

"#]],
    );
    assert_usage_error(
        &["--until=fail"],
        str![[r#"
retry: error: --until is an option of minfrin's retry, not of this one: fail; give --success-on 1-255: those statuses end the run, every other is retried

"#]],
    );
    assert_usage_error(
        &["--until", "3,5-7"],
        str![[r#"
retry: error: --until is an option of minfrin's retry, not of this one: 3,5-7; give --success-on 3,5-7: those statuses end the run, every other is retried

"#]],
    );
    // And what it names works: 3 ends the run, with its status.
    let r = run_sh(&["--success-on", "3,5-7", "-d", "0"], "exit 3");
    r.assert().code(3);
}

#[test]
fn while_is_refused_naming_the_retry_on_that_says_it() {
    assert_usage_error(
        &["-w", "1,75"],
        str![[r#"
retry: error: --while is an option of minfrin's retry, not of this one: 1,75; give --retry-on 1,75: those statuses are retried, every other ends the run

"#]],
    );
    assert_usage_error(
        &["--while=fail"],
        str![[r#"
retry: error: --while is an option of minfrin's retry, not of this one: fail; this retry retries every failure by default: leave --while out

"#]],
    );
    assert_usage_error(
        &["-w", "success"],
        str![[r#"
retry: error: --while is an option of minfrin's retry, not of this one: success; give --success-on 1-255: those statuses end the run, every other is retried

"#]],
    );
}

#[test]
fn message_is_refused_naming_name() {
    assert_usage_error(
        &["-m", "nightly backup"],
        str![[r#"
retry: error: --message is an option of minfrin's retry, not of this one: nightly backup; give --name NAME: the job's name on the line that ends the run, in the summary and in the metrics

"#]],
    );
}

#[test]
fn a_jitter_of_seconds_is_refused_naming_a_kind() {
    assert_usage_error(
        &["-j", "5"],
        str![[r#"
retry: error: not a kind of jitter for --jitter: 5; -j names a kind of jitter here: none, full, equal, decorrelated or N%; minfrin's -j 5 added up to 5s to each delay, which -j full (each wait drawn from 0 to the delay, the default) or -j 50% (the delay +/-50%) replaces; in a crontab, % must be written /%, as -j 5/%

"#]],
    );
}

/// cron ends a crontab's command at a `%` not written `\%`, and gives the rest as stdin:
/// `retry -j 20% -- job` there runs `retry -j 20`.
#[test]
fn a_jitter_cut_at_its_percent_by_cron_says_a_crontab_needs_it_escaped() {
    let r = run(&["-j", "20"]);
    r.assert().code(125);
    // The snapshot below reads a backslash as a path's separator, `/`.
    r.assert().stderr(predicate::str::contains(
        r"in a crontab, % must be written \%, as -j 20\%",
    ));
    assert_output(
        r.stderr(),
        str![[r#"
retry: error: not a kind of jitter for --jitter: 20; -j names a kind of jitter here: none, full, equal, decorrelated or N%; minfrin's -j 20 added up to 20s to each delay, which -j full (each wait drawn from 0 to the delay, the default) or -j 50% (the delay +/-50%) replaces; in a crontab, % must be written /%, as -j 20/%

"#]],
    );
}

#[test]
fn v_alone_says_what_it_is_here_and_names_version() {
    let r = run(&["-v"]);
    r.assert().code(125);
    r.assert().stdout("");
    let err = r.stderr();
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.starts_with("retry: error: -v is --verbose here, and there is nothing to run"),
        "{err}"
    );
    assert!(err.contains("give --version or -V"), "{err}");
    for flag in ["--version", "-V"] {
        let r = run(&[flag]);
        r.assert().code(0);
        assert!(r.stdout().starts_with("retry "), "{}", r.show());
    }
    // -v with a command is --verbose, as before.
    let r = run(&["-v", "--", "true"]);
    r.assert().code(0);
    r.assert().stderr(predicate::str::contains("succeeded"));
}

#[test]
fn h_is_the_help_as_there() {
    let r = run(&["-h"]);
    r.assert().code(0);
    r.assert().stdout(predicate::str::contains("Usage: retry"));
    r.assert()
        .stdout(predicate::str::contains("-t, --times <N>"));
}

#[test]
fn a_config_file_takes_times_and_refuses_minfrins_other_keys() {
    let dir = TempDir::new().expect("temp dir");
    let config = dir.path().join("config.toml");
    write_file(&config, "times = 3\n", 0o644);
    let path = config.display().to_string();
    let text = explain(&["--config", &path]);
    assert!(row(&text, "attempts").contains("3 (2 retries)"), "{text}");
    write_file(&config, "attempts = 2\ntimes = 3\n", 0o644);
    assert_usage_error(
        &["--config", &path],
        str![[r#"
retry: error: [TMP]/config.toml:2: settings that exclude each other: times and attempts (line 1); keep one of them

"#]],
    );
    write_file(&config, "until = \"success\"\n", 0o644);
    assert_usage_error(
        &["--config", &path],
        str![[r#"
retry: error: [TMP]/config.toml:1: --until is an option of minfrin's retry, not of this one: success; this retry stops at the first success by default: leave --until out (minfrin's retry tried forever, 10s apart; here that is --forever -d 10 -b constant -j none --stdout hold)

"#]],
    );
}

#[test]
fn did_you_mean_knows_times() {
    assert_usage_error(
        &["--time", "3"],
        str![[r#"
retry: error: unknown flag: --time; did you mean --times?

"#]],
    );
}

/// The README's "Coming from minfrin's retry" gives minfrin's bare form said here; it means
/// what minfrin's meant: no limit, 10 s apart, no growth and no jitter, stdout held.
#[test]
fn the_readmes_equivalent_of_minfrins_bare_form_means_it() {
    let readme = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md"))
        .expect("README.md");
    let section = readme
        .split("## Coming from minfrin's retry")
        .nth(1)
        .expect("the section");
    let line = section
        .lines()
        .find(|l| l.starts_with("retry --forever"))
        .expect("the equivalent");
    assert_eq!(
        line,
        "retry --forever -d 10 -b constant -j none --stdout hold -- COMMAND"
    );
    let args: Vec<&str> = line.split_whitespace().skip(1).collect();
    let text = explain(&args);
    for (name, value) in [
        ("attempts", "unlimited"),
        ("backoff", "constant"),
        ("delay", "10s"),
        ("jitter", "none"),
        ("stdout", "hold"),
    ] {
        assert!(row(&text, name).contains(value), "{name}: {text}");
    }
    let (worst, _) = totals(&explain(&[
        "-n", "4", "-d", "10", "-b", "constant", "-j", "none",
    ]));
    assert_eq!(worst, Duration::from_secs(30), "three waits of 10s");
}

/// README's table: minfrin's retry stops at once on a command killed by a signal; here it is
/// retried, and `--fatal-on 129-192` stops as minfrin's does.
#[test]
fn a_command_killed_by_a_signal_is_retried_unless_fatal_on_names_the_signals_range() {
    let crash = ["sh", "-c", "echo try; kill -SEGV $$"];
    let r = run(&[&["-t", "3", "-d", "0", "--"][..], &crash[..]].concat());
    assert_eq!(r.lines(), ["try"; 3], "{}", r.show());
    let r = run(&[
        &["-t", "3", "-d", "0", "--fatal-on", "129-192", "--"][..],
        &crash[..],
    ]
    .concat());
    assert_eq!(r.lines(), ["try"], "{}", r.show());
    assert_eq!(r.status.signal(), Some(11), "{}", r.show());
}
