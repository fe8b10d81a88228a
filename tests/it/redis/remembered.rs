//! A fleet's load on the store: a run's calls over one connection, and an open breaker that
//! each host remembers, refusing its runs without a call until the breaker's open time is
//! over. Counted by the server itself (INFO commandstats, INFO stats). Two hosts are two
//! state directories on one server, their test clocks moved together.

use super::*;
use crate::support::redis::Admin;
use crate::support::{PredicateBooleanExt, predicate};

/// What the server counted: the script calls made (EVALSHA and EVAL), and the connections
/// accepted (this admin connection, opened once, among them).
fn counts(admin: &mut Admin) -> (u64, u64) {
    let stats: String = cmd("INFO")
        .arg("commandstats")
        .query(admin)
        .expect("INFO commandstats");
    let calls = |name: &str| {
        let field = format!("cmdstat_{name}:calls=");
        stats
            .lines()
            .find_map(|l| l.strip_prefix(field.as_str()))
            .and_then(|rest| rest.split(',').next()?.parse::<u64>().ok())
            .unwrap_or(0)
    };
    let info: String = cmd("INFO").arg("stats").query(admin).expect("INFO stats");
    let connections = info
        .lines()
        .find_map(|l| l.strip_prefix("total_connections_received:"))
        .and_then(|n| n.trim().parse().ok())
        .expect("total_connections_received");
    (calls("evalsha") + calls("eval"), connections)
}

/// What a stretch of the test cost the server: script calls and connections.
fn cost(admin: &mut Admin, f: impl FnOnce()) -> (u64, u64) {
    let (calls, connections) = counts(admin);
    f();
    let (after, connected) = counts(admin);
    (after - calls, connected - connections)
}

/// Opens the breaker of `api` for `open`, from the host `s`: three failures.
fn open(s: &Setup, open: &str) {
    let out = s.run(&with(&breaker(open), &["-n", "3"]), 1);
    out.assert()
        .stderr(predicate::str::contains("the breaker opened for"));
}

/// A run of `api` on host `s`, refused from its memory: 75, the command not run, no call.
fn refused_from_memory(s: &Setup, flags: &[&str]) -> String {
    let ran = s.ran();
    let out = s.run(flags, 0);
    let log = stderr(&out);
    assert_eq!(out.status.code(), Some(75), "{log}");
    assert_eq!(s.ran(), ran, "nothing ran");
    assert!(
        log.contains("this host knows it from the store, and made no call to it"),
        "{log}"
    );
    log
}

/// Moves both hosts' clocks on.
fn advance(hosts: &[&Setup], ms: u64) {
    for s in hosts {
        s.advance(ms);
    }
}

#[test]
fn runs_of_a_host_that_knows_the_breaker_is_open_make_no_store_call_until_its_end() {
    let Some(server) = Server::start() else {
        return;
    };
    let s = Setup::redis(&server);
    let mut admin = server.admin();
    open(&s, "60s");
    let flags = breaker("60s");
    // The first run after it already knows: the run that opened it told its host.
    let log = refused_from_memory(&s, &flags);
    assert!(
        log.contains("the breaker for key 'api' is open for another"),
        "{log}"
    );
    let runs = 200;
    let (calls, connections) = cost(&mut admin, || {
        for _ in 0..runs {
            refused_from_memory(&s, &flags);
        }
    });
    assert_eq!((calls, connections), (0, 0), "{runs} runs refused");
    // --explain shows what the host remembers.
    let explain = said(&s.run(&with(&flags, &["--explain"]), 0));
    assert!(
        explain.contains("this host        remembers the breaker open for another")
            && explain.contains("as the store told it: its runs exit 75 without calling the store"),
        "{explain}"
    );
    // At its end, runs ask the store again, which lets one probe: it succeeds and closes it.
    s.advance(60_000);
    let (calls, _) = cost(&mut admin, || {
        let out = s.run(&flags, 0);
        out.assert().code(0);
        out.assert()
            .stderr(predicate::str::contains("the breaker closed"));
    });
    assert_eq!(calls, 2, "admitted as the probe, its success told");
    assert!(
        !s.state().join("api.open").exists(),
        "the verdict forgotten"
    );
}

#[test]
fn a_run_makes_its_calls_over_one_connection_unless_an_attempt_outlasts_the_grace() {
    let Some(server) = Server::start() else {
        return;
    };
    let s = Setup::redis(&server);
    let mut admin = server.admin();
    // The server has the script (a first run loads it, with a second call).
    assert!(
        output(s.retry(&["--key", "load", "--", "true"]))
            .status
            .success()
    );
    // Three failing attempts, 10 ms apart, on fresh keys: admit, after each attempt, and
    // before each retry, all over one connection.
    for n in 0..3 {
        let key = format!("fresh{n}");
        let flags = ["--key", &key, "-n", "3", "-d", "10ms", "--", "false"];
        let cost = cost(&mut admin, || {
            assert_eq!(output(s.retry(&flags)).status.code(), Some(1));
        });
        assert_eq!(cost, (6, 1), "{key}");
    }
    // A success on a settled key: its admission alone.
    let flags = ["--key", "fresh0-ok", "--", "true"];
    assert_eq!(
        cost(&mut admin, || assert!(
            output(s.retry(&flags)).status.success()
        )),
        (1, 1)
    );
    // An attempt that runs past the grace (2 s) lets the connection go meanwhile: the call
    // after it connects again.
    let flags = [
        "--key",
        "slow",
        "-n",
        "2",
        "-d",
        "10ms",
        "--",
        "sh",
        "-c",
        "sleep 2.5; exit 1",
    ];
    let cost = cost(&mut admin, || {
        assert_eq!(output(s.retry(&flags)).status.code(), Some(1));
    });
    assert_eq!(cost, (4, 3), "let go during each of its two attempts");
}

#[test]
fn a_reset_on_the_store_is_heard_at_the_remembered_end_and_reset_state_here_forgets_at_once() {
    let Some(server) = Server::start() else {
        return;
    };
    let (a, b) = (Setup::redis(&server), Setup::redis(&server));
    let mut admin = server.admin();
    // Open for 48 s to 60 s (the open time's jitter takes up to a fifth off).
    open(&a, "60s");
    let flags = breaker("60s");
    // Another host resets the store: its runs go on, this host keeps refusing, no call.
    let reset = b.run(&["--key", "api", "--reset-state"], 0);
    reset.assert().code(0);
    assert_eq!(b.run(&flags, 0).status.code(), Some(0));
    advance(&[&a, &b], 47_000);
    assert_eq!(
        cost(&mut admin, || drop(refused_from_memory(&a, &flags))).0,
        0
    );
    // At the end it asks, and runs.
    advance(&[&a, &b], 13_000);
    let out = a.run(&flags, 0);
    out.assert().code(0);
    // --reset-state on this host forgets its memory with the store's state.
    open(&a, "60s");
    refused_from_memory(&a, &flags);
    let reset = a.run(&["--key", "api", "--reset-state"], 0);
    reset.assert().code(0);
    assert!(!a.state().join("api.open").exists());
    let out = a.run(&flags, 0);
    out.assert().code(0);
}

#[test]
fn a_shorter_open_time_elsewhere_is_kept_to_the_remembered_end_and_a_longer_one_learned_then() {
    let Some(server) = Server::start() else {
        return;
    };
    let (a, b) = (Setup::redis(&server), Setup::redis(&server));
    // Open until 48 s to 60 s (the open time's jitter takes up to a fifth off).
    open(&a, "60s");
    let flags = breaker("60s");
    // Another host resets the breaker and reopens it for 10 s at most: by 30 s it is
    // half-open, and that host's probe closes it. This host keeps to its own end, no call.
    assert_eq!(
        b.run(&["--key", "api", "--reset-state"], 0).status.code(),
        Some(0)
    );
    open(&b, "10s");
    advance(&[&a, &b], 30_000);
    let probe = b.run(&breaker("10s"), 0);
    probe
        .assert()
        .stderr(predicate::str::contains("the breaker closed"));
    refused_from_memory(&a, &flags);
    // The other host opens it again, for 4 to 5 minutes: longer than this host remembers.
    open(&b, "5m");
    // At its end this host asks, and learns the store's verdict, which it then keeps to
    // without a call.
    advance(&[&a, &b], 30_000);
    let asked = a.run(&flags, 0);
    let log = stderr(&asked);
    assert_eq!(asked.status.code(), Some(75), "{log}");
    assert!(
        log.contains("is open for another 3m") || log.contains("is open for another 4m"),
        "{log}"
    );
    assert!(
        !log.contains("this host knows it"),
        "asked the store: {log}"
    );
    refused_from_memory(&a, &flags);
    // A run with a shorter --breaker-open-max does not believe it: it asks the store, which
    // cuts the open time to 1 s for the fleet; then it is remembered, and over in 1 s.
    let capped = with(&breaker("1s"), &["--breaker-open-max", "1s"]);
    let cut = a.run(&capped, 0);
    cut.assert().code(75);
    cut.assert()
        .stderr(predicate::str::contains("this host knows it").not());
    refused_from_memory(&a, &capped);
    advance(&[&a, &b], 1_000);
    let probe = a.run(&capped, 0);
    probe
        .assert()
        .stderr(predicate::str::contains("this run probes"));
}
