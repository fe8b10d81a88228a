//! What the scripts do with a key: the rules they run compared step by step with the same rules
//! run in memory, one probe among 200 "hosts", a hash that cannot be read, how few calls a
//! run makes, and the key's expiry.

use super::*;
use crate::support::{PredicateBooleanExt, predicate};

/// A full bucket is full whenever it was last brought up to date: the local store keeps the
/// time of the key's first use, Redis (which writes only what changed) the time of the read.
fn canonical(mut k: KeyState, s: &KeyRules) -> KeyState {
    if k.budget.milli >= s.budget.burst_milli() {
        k.budget.at = 0;
    }
    k
}

#[test]
fn the_scripts_leave_the_same_state_as_the_rules_run_in_memory_step_by_step() {
    no_sigchld_here();
    let Some(server) = Server::start() else {
        return;
    };
    for (seed, s) in [
        (1, small()),
        (2, small()),
        (3, {
            let mut s = small();
            s.breaker.failures = 0;
            s
        }),
        (4, {
            let mut s = small();
            s.budget.burst = 0;
            s
        }),
        // The adaptive delay's outcomes, kept and capped alike.
        (5, {
            let mut s = small();
            s.history = true;
            s
        }),
        // Times past 10^14 ms, where Lua's own tostring would print an exponent; outcomes
        // kept too, whose times are text.
        (6, {
            let mut s = small();
            s.history = true;
            s
        }),
    ] {
        let mut rng = seeded(seed);
        let memory = MemoryStore::default();
        let mut mem: Box<dyn Store> = Box::new(memory.clone());
        // A store is one run's: all its calls together have its --state-timeout. Each step
        // has a store of its own, as each step is a run's call: 600 steps through one store
        // ran out of its 10 s on a starved machine (three copies of the suite at once).
        let store = || {
            RedisStore::new(
                &store_settings(&server.url(), Duration::from_secs(10)),
                &format!("scenario-{seed}"),
            )
        };
        // Three runs on the key; each holds a ticket while it runs.
        let mut runs: [Option<Ticket>; 3] = [None; 3];
        let mut now = if seed == 6 { 1 << 49 } else { 1_000_000u64 };
        let mut seen = [0usize; 4];
        for step in 0..600 {
            now += [0, 1, 40, 300, 900, 2500][rng.random_range(0..6)];
            memory.now.set(now);
            let mut red = store();
            red.at(now);
            let slot = rng.random_range(0..runs.len());
            let what = format!("seed {seed}, step {step}, run {slot}, at {now}");
            match runs[slot] {
                None => {
                    let (a, b) = (
                        mem.admit(&s).expect("memory"),
                        red.admit(&s).expect("redis"),
                    );
                    assert_eq!(a.value, b.value, "{what}: admit");
                    assert_eq!((a.now, &a.view), (b.now, &b.view), "{what}");
                    if let Admit::Run(t) = a.value {
                        runs[slot] = Some(t);
                        seen[usize::from(t.probe)] += 1;
                    } else {
                        seen[2] += 1;
                    }
                }
                Some(ticket) if rng.random_bool(0.2) => {
                    let (a, b) = (
                        mem.before_retry(&s, ticket).expect("memory"),
                        red.before_retry(&s, ticket).expect("redis"),
                    );
                    assert_eq!(a.value, b.value, "{what}: before retry");
                    assert_eq!(a.view, b.view, "{what}");
                    runs[slot] = a.value.0.is_none().then_some(a.value.1);
                }
                Some(ticket) => {
                    let attempt = [
                        Attempt::Success,
                        Attempt::Failure,
                        Attempt::Failure,
                        Attempt::Uncounted,
                    ][rng.random_range(0..4)];
                    let wants = attempt != Attempt::Success && rng.random_bool(0.8);
                    let u: f64 = rng.random();
                    let (a, b) = (
                        mem.after_attempt(&s, ticket, attempt, wants, u)
                            .expect("memory"),
                        red.after_attempt(&s, ticket, attempt, wants, u)
                            .expect("redis"),
                    );
                    assert_eq!(
                        a.value, b.value,
                        "{what}: after {attempt:?}, retry {wants}, u {u}"
                    );
                    assert_eq!(a.view, b.view, "{what}");
                    if a.value.refusal.is_some() {
                        seen[3] += 1;
                    }
                    runs[slot] = (wants && a.value.refusal.is_none()).then_some(a.value.ticket);
                }
            }
            let (state, at) = red.read(&s).expect("redis state");
            assert_eq!(at, now);
            assert_eq!(
                canonical(state, &s),
                canonical(memory.state().expect("used"), &s),
                "{what}: the states"
            );
        }
        if s.history {
            let kept = memory.state().map(|k| k.history.outcomes().count());
            assert_eq!(kept, Some(retry::policy::adaptive::KEPT), "capped alike");
        }
        // The scenario went through the states it is meant to compare.
        if seed <= 2 {
            assert!(
                seen.iter().all(|&n| n > 0),
                "seed {seed}: run, probe, refused, retry refused: {seen:?}"
            );
        }
    }
}

#[test]
fn two_hundred_hosts_sharing_one_key_make_exactly_one_probe() {
    let Some(server) = Server::start() else {
        return;
    };
    let s = Setup::redis(&server);
    // A long store timeout and `closed`: a host starved of CPU must not fall back to its own
    // (empty) local state and run the command as if the breaker were closed.
    let flags = [
        "--key",
        "api",
        "--breaker-failures",
        "1",
        "--breaker-open",
        "200ms",
        "-n",
        "1",
        "--state-timeout",
        "60s",
        "--state-fail",
        "closed",
    ];
    s.run(&flags, 1).assert().code(1);
    assert_eq!(s.ran(), 1);
    s.advance(300);
    // The probe holds its lease until the test lets it go, after every other host has been
    // refused.
    let release = s.dir.path().join("release");
    let command = format!(
        "echo ran >> '{}'; while ! [ -e '{}' ]; do sleep 0.01; done",
        s.marks().display(),
        release.display()
    );
    // The server holds every script until all 200 hosts have sent theirs, so that they ask
    // for the lease at the same moment (without this, spawning takes long enough for the
    // first host's answer to reach the server before most others ask).
    server.query::<()>(cmd("CLIENT").arg("PAUSE").arg(120_000).arg("WRITE"));
    let hosts: Vec<Child> = (0..200)
        .map(|i| {
            // Each host has its own state directory.
            let mut c = support::retry();
            c.env_remove("RETRY_STATE_DIR")
                .arg("--state-dir")
                .arg(s.dir.path().join(format!("host-{i}")))
                .arg("--state")
                .arg(server.url())
                .args(flags)
                .args(["--", "sh", "-c", &command])
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::piped());
            c.spawn().expect("retry starts")
        })
        .collect();
    let waiting = Instant::now();
    loop {
        let clients: String = server.query(cmd("CLIENT").arg("LIST"));
        let asking = clients
            .lines()
            .filter(|l| l.contains("user=retry") && l.contains(" flags=b "))
            .count();
        if asking >= 200 || waiting.elapsed() > support::PATIENCE {
            break;
        }
        thread::sleep(Duration::from_millis(10));
    }
    server.query::<()>(cmd("CLIENT").arg("UNPAUSE"));
    let hosts = Arc::new(Mutex::new(hosts));
    let codes = Arc::new(Mutex::new(Vec::new()));
    let started = Instant::now();
    loop {
        {
            let mut hosts = hosts.lock().expect("hosts");
            let mut codes = codes.lock().expect("codes");
            hosts.retain_mut(|c| match c.try_wait().expect("wait") {
                Some(status) => {
                    codes.push(status.code());
                    false
                }
                None => true,
            });
            if codes.len() >= 199 || started.elapsed() > support::PATIENCE * 2 {
                break;
            }
        }
        thread::sleep(Duration::from_millis(10));
    }
    fs::write(&release, b"").expect("release the probe");
    for mut c in hosts.lock().expect("hosts").drain(..) {
        codes
            .lock()
            .expect("codes")
            .push(support::wait(&mut c).code());
    }
    let codes = codes.lock().expect("codes").clone();
    assert_eq!(s.ran(), 2, "one probe among 200 hosts: {codes:?}");
    assert_eq!(
        codes.iter().filter(|c| **c == Some(0)).count(),
        1,
        "{codes:?}"
    );
    assert_eq!(
        codes.iter().filter(|c| **c == Some(75)).count(),
        199,
        "{codes:?}"
    );
    // The probe succeeded: the breaker is closed for everyone.
    s.run(&flags, 0).assert().code(0);
}

#[test]
fn a_hash_that_cannot_be_read_is_started_afresh_with_a_warning() {
    let Some(server) = Server::start() else {
        return;
    };
    let s = Setup::redis(&server);
    server.query::<i64>(
        cmd("HSET")
            .arg("retry:api")
            .arg("s")
            .arg("ajar")
            .arg("g")
            .arg("x"),
    );
    let out = s.run(&["--key", "api", "-n", "2", "-d", "1ms"], 3);
    out.assert().code(3);
    assert_eq!(s.ran(), 2);
    out.assert().stderr(predicate::str::contains(
        "could not be read; started the key afresh",
    ));
    let state: String = server.query(cmd("HGET").arg("retry:api").arg("s"));
    assert_eq!(state, "closed");
}

/// Whether the server answers PING within two seconds: a script that loops holds it (it answers
/// BUSY, or nothing, until the script is killed).
fn answers_promptly(server: &Server) -> bool {
    let mut con = server.admin();
    let limit = Some(Duration::from_secs(2));
    con.set_read_timeout(limit).expect("read timeout");
    con.set_write_timeout(limit).expect("write timeout");
    cmd("PING")
        .query::<String>(&mut con)
        .is_ok_and(|pong| pong == "PONG")
}

/// The key's hash, field by field.
fn fields(server: &Server, hash: &str) -> std::collections::HashMap<String, String> {
    server.query(cmd("HGETALL").arg(hash))
}

/// A key's hash as the script writes it, in the state in which the script reads `field`, with
/// `field` then set to `value`.
fn spoilt(now: u64, field: &str, value: &str) -> Vec<String> {
    let past = (now - 5000).to_string();
    let (state, u, l, o) = match field {
        "u" | "o" => ("open", now + 3_600_000, 0, 3_600_000),
        "l" => ("half-open", 0, now + 60_000, 1000),
        _ => ("closed", 0, 0, 0),
    };
    let f = if state == "closed" {
        past.clone()
    } else {
        String::new()
    };
    let mut pairs = vec![
        ("g", "4".to_string()),
        ("s", state.to_string()),
        ("f", f),
        ("u", u.to_string()),
        ("l", l.to_string()),
        ("o", o.to_string()),
        ("m", "7000".to_string()),
        ("a", past.clone()),
        ("h", format!("{past}:0")),
    ];
    for pair in &mut pairs {
        if pair.0 == field {
            pair.1 = value.to_string();
        }
    }
    pairs
        .into_iter()
        .flat_map(|(f, v)| [f.to_string(), v])
        .collect()
}

#[test]
fn a_stored_value_out_of_range_is_started_afresh_and_never_holds_the_server() {
    if !support::have("redis-cli", "apt-get install redis-tools") {
        return;
    }
    let Some(server) = Server::start() else {
        return;
    };
    let s = Setup::redis(&server);
    let flags = [
        "--key",
        "api",
        "--breaker-failures",
        "5",
        "--state-timeout",
        "1s",
        "-n",
        "2",
        "-d",
        "1ms",
    ];
    let huge = "9".repeat(400);
    let numbers = [
        "-1e309", "inf", "-inf", "nan", "-1", "1e300", "-1e300", "1.5", "0x10", " 7", &huge,
    ];
    let huge_time = format!("{huge}:1");
    let mut cases: Vec<(&str, &str)> = Vec::new();
    // `a` first: -1e309 there made the script loop for ever.
    for field in ["a", "m", "g", "u", "o", "l"] {
        cases.extend(numbers.iter().map(|v| (field, *v)));
    }
    cases.extend(["-1", "1e300", "inf", "nan", &huge, "5,,6", "x", "7,"].map(|v| ("f", v)));
    cases.extend(["-1:0", "inf:1", "5:2", "5", &huge_time].map(|v| ("h", v)));
    cases.extend(["ajar", ""].map(|v| ("s", v)));
    // The command spoils the hash in its first attempt, when its arguments say so: the
    // operations after the admission read it then.
    let admin = format!("redis://admin:admin@127.0.0.1:{}", server.port);
    let command = format!(
        "echo ran >> '{}'; if [ $# -gt 0 ] && [ \"$RETRY_ATTEMPT\" = 1 ]; then \
         redis-cli --no-auth-warning -u {admin} DEL retry:api >/dev/null && \
         redis-cli --no-auth-warning -u {admin} HSET retry:api \"$@\" >/dev/null || exit 99; fi; \
         exit 3",
        s.marks().display()
    );
    // Unspoilt, the hash each case starts from is read as it is (closed, open, half-open with
    // its lease held): only the spoilt field starts the key afresh.
    let now = s.now();
    for (field, value, code) in [
        ("a", now - 5000, 3),
        ("u", now + 3_600_000, 75),
        ("l", now + 60_000, 75),
    ] {
        server.query::<()>(cmd("DEL").arg("retry:api"));
        let pairs = spoilt(now, field, &value.to_string());
        server.query::<()>(cmd("HSET").arg("retry:api").arg(&pairs));
        let out = s.run(&flags, 3);
        assert_eq!(out.status.code(), Some(code), "{field}: {}", stderr(&out));
        assert!(
            !stderr(&out).contains("could not be read"),
            "{field}: {}",
            stderr(&out)
        );
    }
    for (field, value) in cases {
        for during in [false, true] {
            let what = format!("{field} = {value:?}, spoilt during the run: {during}");
            // Spoilt among times that are right for the store's clock.
            let pairs = spoilt(s.now(), field, value);
            server.query::<()>(cmd("DEL").arg("retry:api"));
            // Each case asks the store: this host forgets the open breaker the last one left.
            let _ = fs::remove_file(s.state().join("api.open"));
            if !during {
                server.query::<()>(cmd("HSET").arg("retry:api").arg(&pairs));
            }
            let ran = s.ran();
            let mut c = s.retry(&flags);
            c.args(["--", "sh", "-c", &command, "sh"]);
            if during {
                c.args(&pairs);
            }
            let out = output(c);
            let log = stderr(&out);
            assert!(
                answers_promptly(&server),
                "{what}: the server is held: {log}"
            );
            assert_eq!(out.status.code(), Some(3), "{what}: {log}");
            assert_eq!(s.ran(), ran + 2, "{what}: {log}");
            assert!(
                log.contains("could not be read; started the key afresh"),
                "{what}: {log}"
            );
            assert!(!log.contains("going on"), "{what}: {log}");
            // Afresh: the run's two failures, on a new state (when spoilt during the first
            // attempt, started afresh before that attempt is counted).
            let hash = fields(&server, "retry:api");
            let get = |f: &str| hash.get(f).map_or("", String::as_str);
            assert_eq!((get("g"), get("s")), ("0", "closed"), "{what}: {hash:?}");
            assert_eq!(get("f").split(',').count(), 2, "{what}: {hash:?}");
            for f in ["g", "u", "l", "o", "m", "a"] {
                assert!(
                    get(f).parse::<u64>().is_ok_and(|n| n < 1 << 53),
                    "{what}: {f} in {hash:?}"
                );
            }
        }
    }
}

#[test]
fn a_key_of_another_type_is_started_afresh_with_a_warning_even_with_state_fail_closed() {
    let Some(server) = Server::start() else {
        return;
    };
    let s = Setup::redis(&server);
    for fail in ["open", "closed"] {
        for spoil in [
            cmd("SET").arg("retry:api").arg("x").clone(),
            cmd("RPUSH").arg("retry:api").arg("a").arg("b").clone(),
        ] {
            server.query::<()>(cmd("DEL").arg("retry:api"));
            server.query::<()>(&mut spoil.clone());
            let ran = s.ran();
            let flags = ["--key", "api", "--state-fail", fail, "-n", "2", "-d", "1ms"];
            let out = s.run(&flags, 3);
            let log = stderr(&out);
            assert_eq!(out.status.code(), Some(3), "{fail}: {log}");
            assert_eq!(s.ran(), ran + 2, "{fail}: {log}");
            assert!(
                log.contains("could not be read; started the key afresh"),
                "{fail}: {log}"
            );
            assert!(!log.contains("going on"), "{fail}: {log}");
            let kind: String = server.query(cmd("TYPE").arg("retry:api"));
            assert_eq!(kind, "hash", "{fail}");
            let f: String = server.query(cmd("HGET").arg("retry:api").arg("f"));
            assert_eq!(f.split(',').count(), 2, "{fail}: both failures counted");
            assert!(!s.file_of("api").exists(), "{fail}: no local state");
        }
    }
}

#[test]
fn an_open_time_cut_to_the_open_max_is_written_so_a_later_run_probes() {
    let Some(server) = Server::start() else {
        return;
    };
    let s = Setup::redis(&server);
    let opens = [
        "--key",
        "api",
        "--breaker-failures",
        "1",
        "--breaker-open",
        "1h",
    ];
    s.run(&with(&opens, &["-n", "1"]), 1).assert().code(1);
    assert_eq!(
        s.open_for("api"),
        15 * 60 * 1000,
        "cut to the default open max"
    );
    let cut = [
        "--key",
        "api",
        "--breaker-failures",
        "1",
        "--breaker-open-max",
        "1s",
    ];
    let refused = s.run(&cut, 0);
    refused.assert().code(75);
    assert_eq!(s.open_for("api"), 1000, "the cut is written");
    // The open time it announced is over: the next run probes.
    s.advance(2000);
    let probe = s.run(&cut, 0);
    probe.assert().code(0);
    probe
        .assert()
        .stderr(predicate::str::contains("this run probes"));
    assert_eq!(s.ran(), 2);
}

/// The scripts the server has run (EVALSHA and EVAL; an EVALSHA of a script it did not have
/// yet is not one), and the connections it has accepted (this question's own included), from
/// its own counts.
fn server_counts(server: &Server) -> (u64, u64) {
    let info: String = server.query(cmd("INFO").arg("commandstats").arg("stats"));
    let count = |line: &str, field: &str| -> u64 {
        line.split([':', ','])
            .find_map(|f| f.strip_prefix(field)?.strip_prefix('='))
            .and_then(|n| n.parse().ok())
            .unwrap_or(0)
    };
    let scripts = info
        .lines()
        .filter(|l| l.starts_with("cmdstat_evalsha:") || l.starts_with("cmdstat_eval:"))
        .map(|l| count(l, "calls") - count(l, "failed_calls") - count(l, "rejected_calls"))
        .sum();
    let connections = info
        .lines()
        .find_map(|l| l.strip_prefix("total_connections_received:"))
        .and_then(|n| n.trim().parse().ok())
        .expect("total_connections_received");
    (scripts, connections)
}

/// The server's clock, in milliseconds, as the script reads it.
fn server_ms(server: &Server) -> u64 {
    let (secs, micros): (u64, u64) = server.query(&mut cmd("TIME"));
    secs * 1000 + micros / 1000
}

/// The default `--budget-refill` (a token a minute) gives back a thousandth every 60 ms.
const REFILL_MS: u64 = 60;

#[test]
fn a_run_that_succeeds_at_once_on_a_settled_key_makes_one_call() {
    let Some(server) = Server::start() else {
        return;
    };
    // On the server's clock, which the script reads when no test gives the time.
    let s = Setup::redis(&server).on_real_clock();
    // A run's exit status, and the scripts it had the server run.
    let connections = std::cell::Cell::new(0);
    let run = |args: &[&str], code: i32| {
        let before = server_counts(&server);
        let out = s.run(args, code);
        out.assert()
            .stderr(predicate::str::contains("warning").not());
        let after = server_counts(&server);
        connections.set(after.1 - before.1 - 1);
        (out.status.code(), after.0 - before.0)
    };
    let hash = || -> Vec<(String, String)> { server.query(cmd("HGETALL").arg("retry:api")) };
    // A key never used: the admission alone, and nothing written.
    assert_eq!(run(&["--key", "api"], 0), (Some(0), 1));
    assert!(!s.stored("api"));
    // A failure is kept: the next success is recorded, and clears it. The run that failed
    // kept its one connection while its command ran (shorter than the grace), to count it.
    assert_eq!(run(&["--key", "api", "-n", "1"], 1), (Some(1), 2));
    assert_eq!(connections.get(), 1);
    assert_eq!(run(&["--key", "api"], 0), (Some(0), 2));
    assert_eq!(connections.get(), 1);
    let f: String = server.query(cmd("HGET").arg("retry:api").arg("f"));
    assert_eq!(f, "");
    // Settled again: the admission alone, and the hash as it was.
    let settled = hash();
    assert_eq!(run(&["--key", "api"], 0), (Some(0), 1));
    assert_eq!(hash(), settled);
    // A retry took a token: the next success is recorded, and adds its tenth. The server's
    // clock runs on meanwhile, and gives back a thousandth of a token every `REFILL_MS` after
    // `a` (the default refill, a token a minute), as much as its clock allowed between before
    // and after the run: what came back is counted out of `m`, then `m` is exact.
    let off = ["--key", "api", "--breaker-failures", "0", "-d", "1ms"];
    let m = |_: ()| -> u64 { server.query(cmd("HGET").arg("retry:api").arg("m")) };
    let a = |_: ()| -> u64 { server.query(cmd("HGET").arg("retry:api").arg("a")) };
    let before = server_ms(&server);
    assert_eq!(run(&with(&off, &["-n", "2"]), 1).0, Some(1));
    let after = server_ms(&server);
    let (taken, taken_at) = (m(()), a(()));
    // The full bucket gave one token, at a time within the run, which `a` then was; whatever
    // came back since moved `a` on by REFILL_MS a thousandth.
    let back = taken.checked_sub(9000).expect("a token taken, no more");
    let took = taken_at - back * REFILL_MS;
    assert!(
        (before..=after).contains(&took),
        "m {taken} a {taken_at}: a token taken at {took}, not during the run ({before}..={after})"
    );
    let before = server_ms(&server);
    assert_eq!(run(&off, 0), (Some(0), 2));
    let after = server_ms(&server);
    let (now, now_at) = (m(()), a(()));
    let back = (now_at - taken_at) / REFILL_MS;
    assert_eq!(
        (now_at - taken_at) % REFILL_MS,
        0,
        "a {taken_at} then {now_at}"
    );
    assert!(
        (before.saturating_sub(taken_at) / REFILL_MS..=(after - taken_at) / REFILL_MS)
            .contains(&back),
        "{back} thousandths back from {taken_at}, not what {before}..={after} gives"
    );
    assert_eq!(
        now - back,
        taken + 100,
        "m {taken} then {now}, {back} of it come back"
    );
    // An open breaker whose time is up: the probe's success is recorded, and closes it.
    server.query::<i64>(
        cmd("HSET")
            .arg("retry:api")
            .arg(&["s", "open", "u", "0", "o", "1000", "m", "10000"]),
    );
    assert_eq!(run(&["--key", "api"], 0), (Some(0), 2));
    let state: String = server.query(cmd("HGET").arg("retry:api").arg("s"));
    assert_eq!(state, "closed");
}

#[test]
fn a_key_expires_after_a_week_without_use() {
    let Some(server) = Server::start() else {
        return;
    };
    let s = Setup::redis(&server);
    s.run(&["--key", "api", "-n", "2", "-d", "1ms"], 3);
    let ttl: i64 = server.query(cmd("PTTL").arg("retry:api"));
    let week = 7 * 24 * 3600 * 1000;
    assert!(ttl > week - 60_000 && ttl <= week, "{ttl}");
}
