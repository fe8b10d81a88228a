//! `--splay DUR` in a real run: a random wait before the first attempt, said at -v, within
//! --max-time, cancelled by a signal as any wait is, and settable from a config file.

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

use super::*;
use crate::support::wait;

/// The wait a -v log says it drew: `retry: waiting 57ms before the first attempt (...)`.
fn drawn(log: &str) -> Duration {
    let line = log
        .lines()
        .find(|l| l.contains(" before the first attempt (drawn at random from 0 to --splay "))
        .unwrap_or_else(|| panic!("no splay line in:\n{log}"));
    let waited = line
        .split("retry: waiting ")
        .nth(1)
        .and_then(|rest| rest.split(" before the first attempt").next())
        .unwrap_or_else(|| panic!("no wait in {line:?}"));
    dur(waited)
}

#[test]
fn a_run_with_a_splay_waits_it_says_so_at_v_and_succeeds() {
    // Seed 7 draws 157 ms of the 1 s: long beside `true`'s time.
    let r = run(&["-v", "--seed", "7", "--splay", "1s", "--", "true"]);
    r.assert().code(0);
    let log = r.stderr();
    let waited = drawn(&log);
    assert_eq!(waited, Duration::from_millis(157), "{log}");
    // A seed makes every run draw the same wait: said, for a fleet's settings.
    assert!(
        log.contains("--seed 7 draws the same --splay wait in every run that has it"),
        "{log}"
    );
    assert!(r.took >= waited, "{:?} < {waited:?}", r.took);
    assert!(
        log.contains("before the first attempt (drawn at random from 0 to --splay 1s)"),
        "{log}"
    );
    let (splay, start) = (
        log.find("before the first attempt")
            .expect("the splay line"),
        log.find("attempt 1/5: starting").expect("the start line"),
    );
    assert!(splay < start, "{log}");
    // The success line tells the attempt's time, not the splay's with it.
    let ran = log
        .split("attempt 1/5 succeeded in ")
        .nth(1)
        .and_then(|rest| rest.split(';').next())
        .map(dur)
        .unwrap_or_else(|| panic!("no success line in:\n{log}"));
    assert!(ran < Duration::from_millis(150), "{ran:?}: {log}");
    // Without -v the wait is silent.
    let r = run(&["--splay", "200ms", "--", "true"]);
    r.assert().code(0);
    assert!(r.stderr().is_empty(), "{}", r.show());
}

#[test]
fn sigterm_during_a_long_splay_ends_retry_by_it_at_once_and_runs_nothing() {
    let dir = TempDir::new().expect("temp dir");
    let (mark, cmd) = marker(&dir);
    // Seeded, so that the wait drawn from the hour is the same long one every time.
    let mut args = vec!["-v", "--seed", "3", "--splay", "1h", "--"];
    args.extend(cmd.iter().map(String::as_str));
    let (mut child, _out, err) = support::start(&args);
    let said = err.until("before the first attempt");
    let waited = drawn(&said.join("\n"));
    assert!(waited > Duration::from_secs(60), "{said:?}");
    let sent = std::time::Instant::now();
    kill(Pid::from_raw(child.id() as i32), Signal::SIGTERM).expect("signal retry");
    let status = wait(&mut child);
    assert!(
        sent.elapsed() < Duration::from_secs(5),
        "took {:?}",
        sent.elapsed()
    );
    assert_eq!(status.signal(), Some(Signal::SIGTERM as i32), "{status:?}");
    assert!(!mark.exists(), "the command ran");
    let log = err.rest().join("\n");
    assert!(
        log.contains("cancelled by SIGTERM before the first attempt"),
        "{log}"
    );
}

#[test]
fn a_splay_not_shorter_than_max_time_is_a_usage_error() {
    assert_usage_error(
        &["--splay", "1m", "--max-time", "30s"],
        str![[r#"
retry: error: --splay 1m is not shorter than --max-time 30s: the wait before the first attempt counts within --max-time and would leave the command no time; give a shorter --splay or a longer --max-time

"#]],
    );
    assert_usage_error_naming(
        &["--splay", "30s", "--max-time", "30s"],
        "--splay 30s is not shorter than --max-time 30s",
    );
    // --max-time 0 is no deadline.
    let r = run(&["--splay", "10ms", "--max-time", "0", "--", "true"]);
    r.assert().code(0);
}

#[test]
fn a_splay_from_the_config_file_is_waited_and_explained() {
    let dir = TempDir::new().expect("temp dir");
    let config = dir.path().join("config.toml");
    write_file(
        &config,
        "splay = \"100ms\"\n[profiles.spread]\nsplay = \"1h\"\n",
        0o644,
    );
    let path = config.display().to_string();
    let r = run(&["--config", &path, "-v", "--", "true"]);
    r.assert().code(0);
    assert!(
        drawn(&r.stderr()) < Duration::from_millis(100),
        "{}",
        r.show()
    );
    let text = explain(&["--config", &path, "-p", "spread", "--", "true"]);
    assert!(
        text.contains(
            "  before the first attempt: 0 to 1h, at random (--splay 1h, from profile spread)\n"
        ),
        "{text}"
    );
    let text = explain(&["--splay", "30s", "-n", "3", "--", "true"]);
    assert!(
        text.contains("  before the first attempt: 0 to 30s, at random (--splay 30s)\n"),
        "{text}"
    );
    // The splay is a wait like the others: in the total, half of it expected.
    assert!(
        text.contains("waiting in all: at most 33s, expected about"),
        "{text}"
    );
    let text = explain(&["-n", "3", "--", "true"]);
    assert!(!text.contains("before the first attempt"), "{text}");
}
