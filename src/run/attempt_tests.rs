//! The loop's tests, in a world with a fake clock: no test sleeps.

use std::time::Duration;

use super::fake::*;
use crate::exit::Exit;
use crate::policy::status::SIGHUP;

use crate::platform::world::{Event, Findings, HookLimits, SpawnError};
use crate::policy::output_rules::{Found, Seen};
use crate::policy::status::Status;
use crate::report::summary::Outcome;

#[test]
fn retries_until_success_sleeping_the_backoff() {
    let r = run_with(
        &["--jitter", "none"],
        Fake::new([exits(1, 10), exits(1, 10), exits(0, 10)]),
    );
    assert_eq!(r.exit, Exit::Code(0));
    assert_eq!(r.world.slept, [ms(1000), ms(2000)]);
    assert!(r.log.contains("attempt 3/5 succeeded"), "{}", r.log);
}

#[test]
fn there_is_no_sleep_after_the_last_attempt() {
    let r = run_with(
        &["-n", "3", "--jitter", "none"],
        Fake::new([exits(4, 5); 3]),
    );
    assert_eq!(r.exit, Exit::Code(4));
    assert_eq!(r.world.slept, [ms(1000), ms(2000)]);
    assert_eq!(r.world.now, ms(3015));
    assert!(r.log.contains("giving up after 3 attempts"), "{}", r.log);
}

#[test]
fn a_give_up_on_a_status_0_that_is_not_a_success_exits_1() {
    let r = run_with(
        &["--success-on", "3", "-n", "2", "-d", "0"],
        Fake::new([exits(0, 5); 2]),
    );
    assert_eq!(r.exit, Exit::Code(1));
    assert_eq!((r.summary.outcome, r.summary.exit), (Outcome::Failure, 1));
    assert!(r.log.contains("retry exits 1"), "{}", r.log);
}

#[test]
fn a_fatal_status_stops_at_once() {
    let r = run_with(&["--fatal-on", "2"], Fake::new([exits(2, 5)]));
    assert_eq!(r.exit, Exit::Code(2));
    assert!(r.world.slept.is_empty());
    assert!(r.log.contains("in --fatal-on"), "{}", r.log);
}

#[test]
fn a_command_that_cannot_run_is_not_retried() {
    let mut world = Fake::new([]);
    world.spawn_error = Some(SpawnError {
        status: 127,
        why: crate::policy::judgement::Unstarted::NotFound,
        message: "cannot run 'x': No such file or directory".into(),
        one_string: None,
    });
    let r = run_with(&[], world);
    assert_eq!(r.exit, Exit::Code(127));
    assert_eq!(r.world.envs.len(), 1);
    assert!(r.log.contains("command not found"), "{}", r.log);
}

#[test]
fn a_child_killed_by_a_signal_is_judged_as_128_plus_n_and_reraised() {
    let killed = Script {
        status: Status::Signal(KILL),
        runs: ms(5),
        ignores_term: false,
    };
    let r = run_with(&["--fatal-on", "SIGKILL"], Fake::new([killed]));
    assert_eq!(r.exit, Exit::Signal(KILL));
    let r = run_with(&["-n", "2", "-d", "0"], Fake::new([killed, killed]));
    assert_eq!(r.world.envs[1].previous, Some(137));
    assert_eq!(r.exit, Exit::Signal(KILL));
}

#[test]
fn no_sleep_starts_that_would_end_past_max_time() {
    let r = run_with(
        &["--max-time", "2.5s", "--jitter", "none", "--forever"],
        Fake::new([exits(1, 100); 3]),
    );
    // 0.1 run, 1 s sleep, 0.1 run, then a 2 s sleep would end at 3.2 s > 2.5 s.
    assert_eq!(r.exit, Exit::Code(1));
    assert_eq!(r.world.slept, [ms(1000)]);
    assert_eq!(r.world.now, ms(1200));
    assert!(r.log.contains("--max-time deadline"), "{}", r.log);
}

#[test]
fn max_time_stops_a_running_attempt_with_124() {
    let r = run_with(&["--max-time", "1s"], Fake::new([exits(0, 5000)]));
    assert_eq!(r.exit, Exit::TIMED_OUT);
    assert_eq!(r.world.killed, [(ms(1000), TERM)]);
    assert!(r.log.contains("--max-time reached"), "{}", r.log);
}

#[test]
fn a_timed_out_attempt_counts_as_124_and_is_retried() {
    let r = run_with(
        &["--attempt-timeout", "1s", "-d", "0", "-n", "2"],
        Fake::new([exits(0, 5000), exits(0, 10)]),
    );
    assert_eq!(r.exit, Exit::Code(0));
    assert_eq!(r.world.killed, [(ms(1000), TERM)]);
    assert_eq!(r.world.envs[1].previous, Some(124));
    let r = run_with(
        &["--attempt-timeout", "1s", "-n", "1"],
        Fake::new([exits(0, 5000)]),
    );
    assert_eq!(r.exit, Exit::TIMED_OUT);
}

#[test]
fn a_child_that_ignores_the_kill_signal_gets_sigkill_after_kill_after() {
    let stubborn = Script {
        ignores_term: true,
        ..exits(0, 60_000)
    };
    let r = run_with(
        &["--attempt-timeout", "1s", "--kill-after", "3s", "-n", "1"],
        Fake::new([stubborn]),
    );
    assert_eq!(r.world.killed, [(ms(1000), TERM), (ms(4000), KILL)]);
    assert_eq!(r.exit, Exit::TIMED_OUT);
}

#[test]
fn processes_left_by_a_timed_out_attempt_get_sigkill_after_kill_after() {
    let mut world = Fake::new([exits(0, 60_000)]);
    world.stragglers = true;
    let r = run_with(
        &["--attempt-timeout", "1s", "--kill-after", "2s", "-n", "1"],
        world,
    );
    assert_eq!(r.world.killed, [(ms(1000), TERM), (ms(3000), KILL)]);
    assert!(!r.world.stragglers);
    assert_eq!(r.exit, Exit::TIMED_OUT);
}

#[test]
fn processes_left_by_an_attempt_that_ended_by_itself_are_left_alone() {
    let mut world = Fake::new([exits(0, 10)]);
    world.stragglers = true;
    let r = run_with(&[], world);
    assert!(r.world.killed.is_empty());
    assert_eq!(r.exit, Exit::Code(0));
}

#[test]
fn a_cancelled_attempt_that_ignores_the_signal_gets_sigkill_after_kill_after() {
    let stubborn = Script {
        ignores_term: true,
        ..exits(0, 60_000)
    };
    let world = Fake::new([stubborn]).signal_at(ms(100), TERM);
    let r = run_with(&["--kill-after", "1s"], world);
    assert_eq!(r.world.killed, [(ms(100), TERM), (ms(1100), KILL)]);
    // Cancelled: retry ends by the signal it got, not by the SIGKILL it had to send.
    assert_eq!(r.exit, Exit::Signal(TERM));
}

#[test]
fn kill_signal_is_what_a_timed_out_attempt_gets() {
    let r = run_with(
        &["--attempt-timeout", "1s", "--kill-signal", "INT", "-n", "1"],
        Fake::new([exits(0, 9000)]),
    );
    assert_eq!(r.world.killed, [(ms(1000), INT)]);
}

#[test]
fn a_cancelling_signal_is_passed_on_and_stops_the_retrying() {
    let world = Fake::new([exits(1, 5000), exits(0, 5)]).signal_at(ms(100), TERM);
    let r = run_with(&[], world);
    assert_eq!(r.world.killed, [(ms(100), TERM)]);
    assert_eq!(
        r.world.envs.len(),
        1,
        "no attempt after a cancelling signal"
    );
    assert_eq!(r.exit, Exit::Signal(TERM));
}

#[test]
fn a_child_that_traps_int_and_exits_130_is_not_retried() {
    let trapping = Script {
        ignores_term: true,
        ..exits(130, 5000)
    };
    let r = run_with(&[], Fake::new([trapping]).signal_at(ms(50), INT));
    assert_eq!(r.exit, Exit::Signal(INT));
    assert_eq!(r.world.envs.len(), 1);
    assert!(r.log.contains("cancelled by SIGINT"), "{}", r.log);
}

#[test]
fn a_child_that_traps_int_and_exits_1_ends_the_run_by_sigint() {
    let trapping = Script {
        ignores_term: true,
        ..exits(1, 5000)
    };
    let r = run_with(&["-n", "5"], Fake::new([trapping]).signal_at(ms(50), INT));
    assert_eq!(r.world.envs.len(), 1, "not retried");
    assert_eq!(r.exit, Exit::Signal(INT));
    assert_eq!(r.summary.outcome, Outcome::Cancelled);
}

#[test]
fn a_second_int_kills_the_group_at_once() {
    let trapping = Script {
        ignores_term: true,
        ..exits(1, 5000)
    };
    let world = Fake::new([trapping])
        .signal_at(ms(50), INT)
        .signal_at(ms(80), INT);
    let r = run_with(&[], world);
    assert_eq!(r.world.killed, [(ms(50), INT), (ms(80), KILL)]);
    assert_eq!(r.exit, Exit::Signal(INT));
}

#[test]
fn a_signal_during_a_sleep_ends_the_run_at_once_by_that_signal() {
    let world = Fake::new([exits(1, 10), exits(0, 10)]).signal_at(ms(300), SIGHUP);
    let r = run_with(&["--jitter", "none"], world);
    assert_eq!(r.exit, Exit::Signal(SIGHUP));
    assert_eq!(r.world.now, ms(300));
    assert_eq!(r.world.envs.len(), 1);
    assert!(r.world.killed.is_empty());
}

#[test]
fn usr1_is_passed_on_without_stopping_the_run() {
    let world = Fake::new([exits(1, 100), exits(0, 10)]).signal_at(ms(50), USR1);
    let r = run_with(&["-d", "0"], world);
    assert_eq!(r.world.killed, [(ms(50), USR1)]);
    assert_eq!(r.exit, Exit::Code(0));
    assert_eq!(r.world.envs.len(), 2);
}

#[test]
fn the_child_is_told_its_attempt_and_the_time_left() {
    let r = run_with(
        &[
            "-n",
            "3",
            "--max-time",
            "10s",
            "--jitter",
            "none",
            "-d",
            "1s",
        ],
        Fake::new([exits(3, 500), exits(3, 500), exits(0, 1)]),
    );
    let attempts: Vec<_> = r.world.envs.iter().map(|e| e.attempt).collect();
    assert_eq!(attempts, [1, 2, 3]);
    assert!(r.world.envs.iter().all(|e| e.max_attempts == Some(3)));
    assert_eq!(r.world.envs[0].previous, None);
    assert_eq!(r.world.envs[1].previous, Some(3));
    assert_eq!(r.world.envs[0].remaining, Some(ms(10_000)));
    // 0.5 s run + 1 s sleep.
    assert_eq!(r.world.envs[1].remaining, Some(ms(8_500)));
    let r = run_with(&["--forever", "-d", "0"], Fake::new([exits(0, 1)]));
    assert_eq!(r.world.envs[0].max_attempts, None);
    assert_eq!(r.world.envs[0].remaining, None);
}

#[test]
fn jittered_delays_stay_within_their_bounds_in_the_loop() {
    let r = run_with(
        &["-n", "6", "--max-delay", "5s"],
        Fake::new([exits(1, 1); 6]),
    );
    let caps = [1000, 2000, 4000, 5000, 5000].map(ms);
    assert_eq!(r.world.slept.len(), 5);
    for (slept, cap) in r.world.slept.iter().zip(caps) {
        assert!(*slept <= cap, "{slept:?} > {cap:?}");
    }
}

#[test]
fn quiet_levels_keep_only_the_give_up_line_or_nothing() {
    let r = run_with(&["-q", "-n", "2", "-d", "0"], Fake::new([exits(1, 1); 2]));
    assert_eq!(r.log.lines().count(), 1, "{}", r.log);
    assert!(r.log.starts_with("retry: giving up"), "{}", r.log);
    let r = run_with(&["-qq", "-n", "2", "-d", "0"], Fake::new([exits(1, 1); 2]));
    assert_eq!(r.log, "");
}

fn with_findings(mut world: Fake, findings: impl IntoIterator<Item = Findings>) -> Fake {
    world.findings = findings.into_iter().collect();
    world
}

fn http(code: u16) -> Findings {
    Findings {
        http_status: Some(code),
        ..Findings::default()
    }
}

#[test]
fn an_http_503_is_retried_even_after_status_0_and_gives_up_with_22() {
    let world = with_findings(Fake::new([exits(0, 5); 2]), [http(503), http(503)]);
    let r = run_with(&["-n", "2", "-d", "0"], world);
    assert_eq!(r.world.envs.len(), 2);
    assert_eq!(r.exit, Exit::Code(22));
    assert!(r.log.contains("HTTP status 503"), "{}", r.log);
}

#[test]
fn an_http_404_is_fatal_and_a_redirect_or_success_is_left_to_the_status() {
    let world = with_findings(Fake::new([exits(22, 5)]), [http(404)]);
    let r = run_with(&[], world);
    assert_eq!(r.world.envs.len(), 1);
    assert_eq!(r.exit, Exit::Code(22));
    let world = with_findings(Fake::new([exits(0, 5)]), [http(200)]);
    assert_eq!(run_with(&[], world).exit, Exit::Code(0));
}

#[test]
fn fatal_on_http_and_retry_on_http_change_the_lists() {
    let world = with_findings(Fake::new([exits(0, 5); 2]), [http(404), http(200)]);
    let r = run_with(&["--retry-on-http", "404", "-d", "0"], world);
    assert_eq!(r.world.envs.len(), 2);
    let world = with_findings(Fake::new([exits(22, 5)]), [http(503)]);
    let r = run_with(&["--fatal-on-http", "503"], world);
    assert_eq!(r.world.envs.len(), 1);
}

#[test]
fn retry_after_sets_a_wait_no_shorter_than_asked_and_spread_a_little() {
    let asked = Findings {
        retry_after: Some(ms(30_000)),
        ..http(503)
    };
    let world = with_findings(Fake::new([exits(22, 5), exits(0, 5)]), [asked]);
    let r = run_with(&["-d", "0"], world);
    let slept = r.world.slept[0];
    assert!(slept >= ms(30_000) && slept <= ms(33_000), "{slept:?}");
    assert!(r.log.contains("following Retry-After 30s"), "{}", r.log);
}

#[test]
fn retry_after_is_capped_by_retry_after_max() {
    let asked = Findings {
        retry_after: Some(ms(86_400_000)),
        ..http(503)
    };
    let world = with_findings(Fake::new([exits(22, 5), exits(0, 5)]), [asked]);
    let r = run_with(&["--retry-after-max", "10s"], world);
    let slept = r.world.slept[0];
    assert!(slept <= ms(10_000) && slept >= ms(9_000), "{slept:?}");
    assert!(r.log.contains("capped by --retry-after-max"), "{}", r.log);
}

#[test]
fn retry_after_past_the_deadline_stops_the_run_at_once() {
    let asked = Findings {
        retry_after: Some(ms(120_000)),
        ..http(503)
    };
    let world = with_findings(Fake::new([exits(22, 5); 2]), [asked]);
    let r = run_with(&["--max-time", "1m"], world);
    assert!(r.world.slept.is_empty());
    assert_eq!(r.world.envs.len(), 1);
    assert_eq!(r.exit, Exit::Code(22));
    assert!(r.log.contains("after the --max-time deadline"), "{}", r.log);
}

#[test]
fn a_retry_after_cut_to_retry_after_max_that_fits_the_deadline_is_followed() {
    let asked = Findings {
        retry_after: Some(ms(600_000)),
        ..http(429)
    };
    let world = with_findings(Fake::new([exits(22, 5), exits(0, 5)]), [asked]);
    let r = run_with(&["--retry-after-max", "2s", "--max-time", "10s"], world);
    assert_eq!(r.exit, Exit::Code(0), "{}", r.log);
    let slept = r.world.slept[0];
    assert!(slept <= ms(2_000) && slept >= ms(1_800), "{slept:?}");
    assert!(r.log.contains("capped by --retry-after-max"), "{}", r.log);
}

#[test]
fn a_fatal_output_match_wins_over_a_retryable_http_status() {
    let found = Findings {
        output: Seen {
            own: Some(Found::Fatal("denied".into())),
            preset: None,
        },
        ..http(503)
    };
    let world = with_findings(Fake::new([exits(1, 5)]), [found]);
    let r = run_with(&[], world);
    assert_eq!(r.world.envs.len(), 1);
    assert_eq!(r.exit, Exit::Code(1));
}

#[test]
fn a_retry_output_match_retries_a_status_that_retry_on_leaves_out_but_not_fatal_on() {
    let busy = || Findings {
        output: Seen {
            own: Some(Found::Retry("lock".into())),
            preset: None,
        },
        ..Findings::default()
    };
    let world = with_findings(Fake::new([exits(100, 5), exits(0, 5)]), [busy()]);
    let r = run_with(&["--retry-on", "75", "-d", "0"], world);
    assert_eq!(r.world.envs.len(), 2);
    let world = with_findings(Fake::new([exits(100, 5)]), [busy()]);
    let r = run_with(&["--fatal-on", "100", "-d", "0"], world);
    assert_eq!(r.world.envs.len(), 1);
}

#[test]
fn a_stop_hint_ends_the_run_with_the_attempts_status() {
    let stop = Findings {
        stop: true,
        ..Findings::default()
    };
    let world = with_findings(Fake::new([exits(75, 5)]), [stop]);
    let r = run_with(&[], world);
    assert_eq!(r.exit, Exit::Code(75));
    assert!(r.log.contains("asked not to be retried"), "{}", r.log);
}

#[test]
fn a_failure_whose_output_has_no_reader_is_not_retried_but_a_success_succeeds() {
    let gone = |script| Fake {
        output_gone: true,
        ..Fake::new(script)
    };
    let world = gone(vec![exits(141, 5), exits(0, 5)]);
    let r = run_with(&["-n", "5", "-d", "0"], world);
    assert_eq!(r.world.envs.len(), 1);
    assert_eq!(r.exit, Exit::Code(141));
    assert!(
        r.log.contains("nothing reads its output any more"),
        "{}",
        r.log
    );
    let world = gone(vec![exits(0, 5)]);
    let r = run_with(&["-n", "5", "-d", "0"], world);
    assert_eq!(r.exit, Exit::Code(0));
}

/// `retry -- yes | head -1`: the writer of a pipeline whose reader is done dies of SIGPIPE.
/// Not retried, whatever the limits, not reported but with -v, and the run ends by SIGPIPE.
#[test]
fn an_attempt_killed_by_sigpipe_with_no_reader_left_ends_the_run_quietly_by_sigpipe() {
    use crate::policy::status::SIGPIPE;
    let piped = Script {
        status: Status::Signal(SIGPIPE),
        runs: ms(5),
        ignores_term: false,
    };
    let gone = |script: Vec<Script>| Fake {
        output_gone: true,
        ..Fake::new(script)
    };
    for n in ["1", "5"] {
        let r = run_with(&["-n", n, "-d", "0"], gone(vec![piped, piped]));
        assert_eq!(r.world.envs.len(), 1, "-n {n}");
        assert_eq!(r.exit, Exit::Signal(SIGPIPE), "-n {n}");
        assert_eq!(r.log, "", "-n {n}");
    }
    let r = run_with(&["-v", "-d", "0"], gone(vec![piped]));
    let said: Vec<&str> = r.log.lines().filter(|l| l.contains("SIGPIPE")).collect();
    assert_eq!(said.len(), 1, "{}", r.log);
    assert!(said[0].contains("giving up after 1 attempt"), "{}", r.log);
    // Killed by SIGPIPE while retry's output is still read: a failure like any other.
    let r = run_with(&["-n", "2", "-d", "0"], Fake::new([piped, exits(0, 5)]));
    assert_eq!(r.exit, Exit::Code(0), "{}", r.log);
    assert!(r.log.contains("killed by SIGPIPE"), "{}", r.log);
}

#[test]
fn held_output_is_released_as_last_only_for_the_attempt_that_ends_the_run() {
    let r = run_with(
        &["-n", "3", "-d", "0"],
        Fake::new([exits(1, 5), exits(1, 5), exits(0, 5)]),
    );
    assert_eq!(r.world.finished, [false, false, true]);
}

fn var<'a>(hook: &'a HookRun, name: &str) -> Option<&'a str> {
    hook.2
        .iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.as_str())
}

#[test]
fn on_retry_runs_before_each_wait_within_it_and_on_giveup_once_at_the_end() {
    let args = [
        "-n",
        "3",
        "--jitter",
        "none",
        "--on-retry",
        "r",
        "--on-giveup",
        "g",
    ];
    let r = run_with(&args, Fake::new([exits(7, 10); 3]));
    let commands: Vec<_> = r.world.hooks.iter().map(|h| h.1.as_str()).collect();
    assert_eq!(commands, ["r", "r", "g"]);
    assert_eq!(var(&r.world.hooks[0], "RETRY_NEXT_DELAY_MS"), Some("1000"));
    assert_eq!(var(&r.world.hooks[1], "RETRY_ATTEMPT"), Some("2"));
    assert_eq!(var(&r.world.hooks[2], "RETRY_STATUS"), Some("7"));
    assert_eq!(
        var(&r.world.hooks[2], "RETRY_REASON"),
        Some("attempts used up")
    );
    // The 50 ms hook ran within the 1 s wait, not before it.
    assert_eq!(r.world.slept[0], ms(950));
}

#[test]
fn on_retry_is_stopped_by_max_time_as_the_wait_is_and_on_giveup_by_its_own_limit_alone() {
    let args = [
        "-n",
        "2",
        "-d",
        "1s",
        "--jitter",
        "none",
        "--max-time",
        "10s",
        "--hook-timeout",
        "3s",
        "--on-retry",
        "r",
        "--on-giveup",
        "g",
    ];
    let r = run_with(&args, Fake::new([exits(7, 400), exits(7, 400)]));
    let limits = |timeout, deadline| HookLimits { timeout, deadline };
    assert_eq!(
        r.world.hook_limits,
        [
            // Started 400 ms into the run: 9.6 s of --max-time left.
            limits(Some(ms(3000)), Some(ms(9600))),
            limits(Some(ms(3000)), None),
        ]
    );
    // --hook-timeout 0 is no limit, as every other 0 limit is.
    let r = run_with(
        &[
            "-n",
            "2",
            "-d",
            "0",
            "--hook-timeout",
            "0",
            "--on-retry",
            "r",
        ],
        Fake::new([exits(1, 5), exits(0, 5)]),
    );
    assert_eq!(r.world.hook_limits, [limits(None, None)]);
}

#[test]
fn a_failing_hook_is_logged_and_changes_nothing() {
    let r = run_with(
        &["-n", "2", "-d", "0", "--on-retry", "fail"],
        Fake::new([exits(1, 5), exits(0, 5)]),
    );
    assert_eq!(r.exit, Exit::Code(0));
    assert!(
        r.log.contains("--on-retry hook failed: exit status 1"),
        "{}",
        r.log
    );
}

#[test]
fn no_give_up_hook_on_success_or_cancellation() {
    let r = run_with(&["--on-giveup", "g"], Fake::new([exits(0, 5)]));
    assert!(r.world.hooks.is_empty());
    let world = Fake::new([exits(1, 5000)]).signal_at(ms(10), TERM);
    let r = run_with(&["--on-giveup", "g"], world);
    assert!(r.world.hooks.is_empty());
}

#[test]
fn the_summary_sums_short_attempts_before_rounding_to_milliseconds() {
    let quick = Script {
        runs: Duration::from_micros(700),
        ..exits(1, 0)
    };
    let r = run_with(&["-n", "300", "-d", "0"], Fake::new([quick; 300]));
    assert_eq!((r.summary.running_ms, r.summary.elapsed_ms), (210, 210));
}

#[test]
fn the_summary_counts_attempts_running_and_waiting() {
    let r = run_with(
        &["-n", "3", "--jitter", "none"],
        Fake::new([exits(2, 100), exits(2, 100), exits(0, 100)]),
    );
    let s = &r.summary;
    assert_eq!(s.outcome, Outcome::Success);
    assert_eq!(
        s.attempts.iter().map(|a| a.status).collect::<Vec<_>>(),
        [2, 2, 0]
    );
    assert_eq!(
        (s.running_ms, s.sleeping_ms, s.elapsed_ms),
        (300, 3000, 3300)
    );
    assert_eq!(s.exit, 0);
    // A hook's run within a wait (50 ms each) is not time slept.
    let r = run_with(
        &["-n", "3", "--jitter", "none", "--on-retry", "r"],
        Fake::new([exits(2, 100), exits(2, 100), exits(0, 100)]),
    );
    let s = &r.summary;
    assert_eq!(
        (s.running_ms, s.sleeping_ms, s.elapsed_ms),
        (300, 2900, 3300)
    );
    let r = run_with(
        &["--attempt-timeout", "1s", "-n", "1"],
        Fake::new([exits(0, 9000)]),
    );
    assert!(r.summary.attempts[0].timed_out);
    assert_eq!((r.summary.outcome, r.summary.exit), (Outcome::Failure, 124));
    let world = Fake::new([exits(1, 5), exits(0, 5)]).signal_at(ms(100), TERM);
    let r = run_with(&["--jitter", "none"], world);
    assert_eq!(
        (r.summary.outcome, r.summary.exit),
        (Outcome::Cancelled, 143)
    );
}

#[test]
fn a_cancel_that_comes_before_the_first_attempt_starts_none() {
    let r = run_with(&[], Fake::new([exits(0, 5)]).signal_at(ms(0), TERM));
    assert_eq!(r.exit, Exit::Signal(TERM));
    assert!(r.world.envs.is_empty(), "no attempt started");
    assert!(
        r.log
            .contains("cancelled by SIGTERM before the first attempt"),
        "{}",
        r.log
    );
}

#[test]
fn a_long_attempt_starts_the_backoff_and_the_limit_afresh() {
    // -n 2: without the reset, attempt 2 would be the last.
    let world = Fake::new([exits(1, 10), exits(1, 700_000), exits(1, 10), exits(0, 10)]);
    let r = run_with(
        &["-n", "2", "-d", "1s", "-j", "none", "--reset-after", "10m"],
        world,
    );
    assert_eq!(r.exit, Exit::Code(1), "{}", r.log);
    // Attempt 2 ran 11m40s: attempt 3 is the last of a new series of 2; the delay is 1s again.
    assert_eq!(r.world.envs.len(), 3, "{}", r.log);
    assert_eq!(r.world.slept, [ms(1000), ms(1000)], "{}", r.log);
    assert_eq!(
        r.world
            .envs
            .iter()
            .map(|e| e.max_attempts)
            .collect::<Vec<_>>(),
        [Some(2), Some(2), Some(3)]
    );
    assert!(
        r.log
            .contains("attempt 2 ran 11m 40s (--reset-after 10m): the backoff starts afresh"),
        "{}",
        r.log
    );
    assert!(r.log.contains("attempt 3/3 failed"), "{}", r.log);
}

/// A command that outlives a Ctrl-C typed at the terminal by more than --kill-after handled
/// it and went on (a REPL): its later exit is judged by the usual rules (docs/child.md).
#[test]
fn a_command_that_outlives_a_typed_ctrl_c_by_kill_after_is_judged_as_usual() {
    let world = Fake::new([exits(3, 20_000), exits(0, 10)]).event_at(ms(1000), Event::Typed(INT));
    let r = run_with(&["-n", "2", "-d", "0", "--kill-after", "4s"], world);
    assert_eq!(r.exit, Exit::Code(0), "{}", r.log);
    assert_eq!(r.world.envs.len(), 2, "retried: {}", r.log);
    assert_eq!(r.world.handled, [ms(5000)], "{}", r.log);
    assert!(
        r.world.killed.is_empty(),
        "nothing was sent to it: {:?}",
        r.world.killed
    );
    assert!(
        r.log
            .contains("Ctrl-C typed at the terminal (SIGINT received) during attempt 1/2"),
        "{}",
        r.log
    );
    assert!(r.log.contains("it handled it"), "{}", r.log);
    assert!(!r.log.contains("cancelled"), "{}", r.log);
}

#[test]
fn a_command_that_ends_within_kill_after_of_a_typed_ctrl_c_is_a_cancel() {
    let world = Fake::new([exits(1, 3000)]).event_at(ms(1000), Event::Typed(INT));
    let r = run_with(&["-n", "3", "-d", "0", "--kill-after", "4s"], world);
    assert_eq!(r.exit, Exit::Signal(INT), "{}", r.log);
    assert_eq!(r.world.envs.len(), 1, "not retried: {}", r.log);
    assert!(r.world.handled.is_empty());
    assert!(r.log.contains("cancelled by SIGINT"), "{}", r.log);
}

/// The line that says a signal was received is written when it arrives, before the attempt
/// ends, and the give-up line says how the attempt ended, without saying the signal again.
#[test]
fn the_received_line_comes_when_the_signal_does_and_the_give_up_line_after() {
    let slow = Script {
        status: Status::Code(0),
        runs: ms(60_000),
        ignores_term: true,
    };
    let world = Fake::new([slow]).signal_at(ms(1000), INT);
    let r = run_with(&["-n", "3", "--kill-after", "4s"], world);
    let lines: Vec<&str> = r.log.lines().collect();
    assert_eq!(lines.len(), 3, "{}", r.log);
    assert!(
        lines[0].contains("SIGINT received during attempt 1/3; passed on to the command"),
        "{}",
        r.log
    );
    assert!(lines[1].contains("outlived --kill-after"), "{}", r.log);
    assert!(lines[2].contains("cancelled by SIGINT"), "{}", r.log);
    assert!(!lines[2].contains("received"), "{}", r.log);
    assert_eq!(r.exit, Exit::Signal(INT));
}

#[test]
fn ctrl_z_during_a_wait_suspends_the_run_which_goes_on_after() {
    let world = Fake::new([exits(1, 10), exits(0, 10)]).event_at(ms(500), Event::Suspend);
    let r = run_with(&["-n", "2", "--jitter", "none", "-d", "3s"], world);
    assert_eq!(r.world.suspended, [ms(500)]);
    assert_eq!(r.exit, Exit::Code(0), "{}", r.log);
    assert_eq!(r.world.envs.len(), 2);
}

#[test]
fn ctrl_z_during_an_attempt_suspends_it_without_ending_it() {
    let world = Fake::new([exits(0, 1000)]).event_at(ms(500), Event::Suspend);
    let r = run_with(&["-n", "2"], world);
    assert_eq!(r.world.suspended, [ms(500)]);
    assert!(r.world.killed.is_empty());
    assert_eq!(r.exit, Exit::Code(0), "{}", r.log);
}

/// A spawn that fails for lack of resources is a retryable failure of the attempt, whatever
/// the lists say; 126 and 127 stay for a command that cannot run (docs/child.md, When an
/// attempt cannot be started).
#[test]
fn an_attempt_not_started_for_lack_of_resources_is_retried_and_ends_125() {
    let mut world = Fake::new([]);
    world.spawn_error = Some(SpawnError {
        status: 125,
        why: crate::policy::judgement::Unstarted::NoResources,
        message: "cannot start 'x' for lack of resources (too many processes: ...)".into(),
        one_string: None,
    });
    let r = run_with(&["-n", "3", "-d", "0", "--retry-on", "1"], world);
    assert_eq!(r.world.envs.len(), 3, "{}", r.log);
    assert_eq!(r.exit, Exit::Code(125), "{}", r.log);
    assert!(r.log.contains("lack of resources"), "{}", r.log);
    assert!(
        r.log
            .contains("retryable: the system lacked the resources to start it"),
        "{}",
        r.log
    );
    assert!(!r.log.contains("cannot execute"), "{}", r.log);
}

/// `--splay`: one wait before the first attempt, drawn from the run's jitter source in
/// [0, DUR), within --max-time (the command line keeps it shorter), in the summary's time
/// waiting, and said at -v.
#[test]
fn the_splay_waits_a_random_time_before_the_first_attempt_within_max_time() {
    let splay = ms(10_000);
    let r = run_with(
        &["-v", "--splay", "10s", "--max-time", "1m"],
        Fake::new([exits(0, 5)]),
    );
    assert_eq!(r.exit, Exit::Code(0), "{}", r.log);
    // The fake run's source is seeded with 7: the wait is its first draw.
    let drawn = crate::policy::pacing::splay(splay, &mut crate::policy::backoff::seeded(7));
    assert_eq!(r.world.slept, [drawn]);
    assert!(!drawn.is_zero() && drawn < splay, "{drawn:?}");
    // The attempt started after the wait, which the deadline counted.
    assert_eq!(r.world.envs.len(), 1);
    assert_eq!(r.world.envs[0].remaining, Some(ms(60_000) - drawn));
    assert_eq!(r.summary.sleeping_ms, drawn.as_millis());
    let line = format!(
        "retry: waiting {} before the first attempt (drawn at random from 0 to --splay 10s)\n",
        crate::policy::duration::human(drawn)
    );
    let starting = r.log.find("attempt 1/5: starting").expect("a start line");
    assert!(
        r.log.find(&line).is_some_and(|at| at < starting),
        "{}",
        r.log
    );
    // Said only at -v; and without --splay, no wait at all.
    let r = run_with(&["--splay", "10s"], Fake::new([exits(0, 5)]));
    assert_eq!(r.world.slept, [drawn]);
    assert!(r.log.is_empty(), "{}", r.log);
    let r = run_with(&["-v"], Fake::new([exits(0, 5)]));
    assert!(r.world.slept.is_empty());
    assert!(!r.log.contains("waiting"), "{}", r.log);
}

#[test]
fn a_signal_during_the_splay_ends_the_run_by_it_before_any_attempt() {
    let world = Fake::new([exits(0, 5)]).signal_at(ms(100), TERM);
    let r = run_with(&["--splay", "10s"], world);
    assert_eq!(r.exit, Exit::Signal(TERM));
    assert!(r.world.envs.is_empty(), "no attempt started");
    assert_eq!(r.world.now, ms(100), "at once");
    assert!(
        r.log
            .contains("cancelled by SIGTERM before the first attempt"),
        "{}",
        r.log
    );
    assert_eq!(
        (r.summary.outcome, r.summary.exit, r.summary.sleeping_ms),
        (Outcome::Cancelled, 143, 100)
    );
    // A signal that does not cancel (SIGUSR1) leaves the splay to run its course.
    let world = Fake::new([exits(0, 5)]).signal_at(ms(100), USR1);
    let r = run_with(&["--splay", "10s"], world);
    assert_eq!((r.exit, r.world.envs.len()), (Exit::Code(0), 1));
    assert!(r.world.now > ms(100), "{:?}", r.world.now);
}

/// Ctrl-Z during the splay suspends the run, which goes on waiting after.
#[test]
fn ctrl_z_during_the_splay_suspends_the_run_which_waits_on_after() {
    let world = Fake::new([exits(0, 5)]).event_at(ms(100), Event::Suspend);
    let r = run_with(&["--splay", "10s"], world);
    assert_eq!(r.exit, Exit::Code(0), "{}", r.log);
    assert_eq!(r.world.suspended, [ms(100)]);
    assert_eq!(r.world.envs.len(), 1);
}
