//! A store that fails: down, never answering, lost mid-run, or refusing the password, with
//! `--state-fail open` (this host's local state, and one warning) and `closed`.

use super::*;
use crate::support::{Launch, predicate};

#[test]
fn a_store_that_is_down_means_this_hosts_local_state_and_one_warning() {
    let s = Setup::file();
    let url = format!("redis://retry:{PASSWORD}@127.0.0.1:{}", free_port());
    let flags = ["--key", "api", "--state", &url, "-n", "3", "-d", "1ms"];
    let out = s.run(&flags, 4);
    assert_eq!(out.status.code(), Some(4), "the outcome stands");
    assert_eq!(s.ran(), 3);
    let log = stderr(&out);
    assert_eq!(log.matches("warning").count(), 1, "{log}");
    assert!(
        log.contains("going on with this host's local state (--state-fail open)"),
        "{log}"
    );
    assert!(log.contains("redis://retry:***@127.0.0.1:"), "{log}");
    assert!(!said(&out).contains(PASSWORD));
    // The local state counted the failures.
    assert!(s.file_of("api").exists());
}

/// A server that accepts connections and never answers; it holds them until dropped.
struct Silent {
    port: u16,
    _held: Arc<Mutex<Vec<TcpStream>>>,
}

impl Silent {
    fn start() -> Silent {
        let listener = TcpListener::bind("127.0.0.1:0").expect("listen");
        let port = listener.local_addr().expect("address").port();
        let held = Arc::new(Mutex::new(Vec::new()));
        let keep = Arc::clone(&held);
        thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                if let Ok(mut held) = keep.lock() {
                    held.push(stream);
                }
            }
        });
        Silent { port, _held: held }
    }

    fn url(&self) -> String {
        format!("redis://retry:{PASSWORD}@127.0.0.1:{}", self.port)
    }
}

#[test]
fn a_store_that_never_answers_costs_no_more_than_the_state_timeout() {
    let silent = Silent::start();
    let s = Setup::file();
    let url = silent.url();
    for (fail, code) in [("open", 0), ("closed", 75)] {
        let started = Instant::now();
        let out = s.run(
            &[
                "--key",
                "api",
                "--state",
                &url,
                "--state-timeout",
                "300ms",
                "--state-fail",
                fail,
            ],
            0,
        );
        let took = started.elapsed();
        assert_eq!(out.status.code(), Some(code), "{fail}: {}", stderr(&out));
        out.assert().stderr(predicate::str::contains(
            "no answer within --state-timeout 300ms",
        ));
        assert!(
            took >= Duration::from_millis(300) && took < Duration::from_millis(300 + 2000),
            "{fail}: {took:?}"
        );
    }
    assert_eq!(s.ran(), 1, "the closed run ran nothing");
}

/// A store that does not answer takes at most half of what `--max-time` leaves before the
/// first attempt: the command still runs, rather than start at the deadline and be stopped.
#[test]
fn a_silent_store_leaves_the_command_half_of_a_short_max_time() {
    let silent = Silent::start();
    let s = Setup::file();
    let url = silent.url();
    let out = s.run(
        &[
            "--key",
            "api",
            "--state",
            &url,
            "--state-timeout",
            "30s",
            "--max-time",
            "1s",
        ],
        0,
    );
    let log = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{log}");
    assert_eq!(s.ran(), 1, "{log}");
    assert!(
        log.contains("no answer in the time the run's --max-time left it"),
        "{log}"
    );
}

/// A long `--state-timeout` is no reason to make a SIGTERM wait: the call ends at once and the
/// run ends by the signal, the command never started.
#[test]
fn a_sigterm_while_the_store_does_not_answer_ends_the_run_at_once() {
    let silent = Silent::start();
    let s = Setup::file();
    let url = silent.url();
    let mut c = s.retry(&["--key", "api", "--state", &url, "--state-timeout", "30s"]);
    c.arg("--").args(s.command(0));
    let (mut child, _out, err) = c.start();
    // Connected, and waiting for an answer that never comes.
    std::thread::sleep(Duration::from_millis(300));
    let sent = Instant::now();
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGTERM,
    )
    .expect("SIGTERM");
    let status = crate::support::wait(&mut child);
    let took = sent.elapsed();
    let log = err.rest().join("\n");
    assert_eq!(
        std::os::unix::process::ExitStatusExt::signal(&status),
        Some(15),
        "{log}"
    );
    assert!(took < Duration::from_secs(10), "{took:?}: {log}");
    assert_eq!(s.ran(), 0, "{log}");
}

#[test]
fn every_call_of_a_run_shares_one_state_timeout() {
    no_sigchld_here();
    let silent = Silent::start();
    let s = small();
    // A timeout long enough that "at once" can be told from "waited again" on a loaded
    // machine: the second call may take up to a second without waiting.
    let timeout = Duration::from_secs(2);
    let mut store = RedisStore::new(&store_settings(&silent.url(), timeout), "api");
    let started = Instant::now();
    let first = store.admit(&s).map(|_| ()).expect_err("no answer");
    assert!(first.to_string().contains("no answer"), "{first}");
    assert!(started.elapsed() >= timeout);
    // Nothing is left for the next call: it fails at once, without waiting again.
    let again = Instant::now();
    let second = store.view(&s).map(|_| ()).expect_err("no time left");
    assert!(second.to_string().contains("no answer"), "{second}");
    assert!(again.elapsed() < timeout / 2, "{:?}", again.elapsed());
}

#[test]
fn a_wrong_password_is_a_warning_that_never_shows_either_password() {
    let Some(server) = Server::start() else {
        return;
    };
    let s = Setup::file();
    let wrong = "wrong-5d0b77";
    let url = format!("redis://retry:{wrong}@127.0.0.1:{}", server.port);
    let out = s.run(
        &["--key", "api", "--state", &url, "-n", "2", "-d", "1ms"],
        3,
    );
    out.assert().code(3);
    assert_eq!(s.ran(), 2);
    let log = said(&out);
    assert!(
        log.contains("warning: key 'api': the store redis://retry:***@"),
        "{log}"
    );
    assert!(!log.contains(wrong) && !log.contains(PASSWORD), "{log}");
}

#[test]
fn state_fail_closed_exits_75_without_running_the_command() {
    let s = Setup::file();
    let url = format!("redis://127.0.0.1:{}", free_port());
    let metrics = s.dir.path().join("metrics.prom");
    let summary = s.dir.path().join("summary.json");
    let (metrics_s, summary_s) = (metrics.display().to_string(), summary.display().to_string());
    let flags = [
        "--key",
        "api",
        "--state",
        &url,
        "--state-fail",
        "closed",
        "--metrics",
        &metrics_s,
        "--summary",
        &summary_s,
    ];
    let out = s.run(&flags, 0);
    out.assert().code(75);
    assert_eq!(s.ran(), 0);
    let log = stderr(&out);
    assert!(
        log.contains("not running: key 'api': the store redis://127.0.0.1:")
            && log.contains("--state-fail is closed"),
        "{log}"
    );
    assert!(!s.file_of("api").exists(), "no local state either");
    let sum: Value = serde_json::from_slice(&fs::read(&summary).expect("summary")).expect("JSON");
    assert_eq!(sum["outcome"], "refused");
    assert_eq!(sum["store"]["errors"], 1);
    let text = fs::read_to_string(&metrics).expect("metrics");
    let errors = format!(
        "retry_state_errors_total{{name=\"sh\",key=\"api\",backend=\"{}/0\"}} 1",
        url
    );
    assert!(text.contains(&errors), "{text}");
    s.run(&flags, 0);
    let text = fs::read_to_string(&metrics).expect("metrics");
    assert!(
        text.contains(&errors.replace("} 1", "} 2")),
        "counted on: {text}"
    );
}

/// A run of `-n 3` under the key `api`, its store lost mid-run (its first attempt kills the
/// server, and exits 3), with `fail` as `--state-fail`: the setup, and the run's log.
fn lost_mid_run<'a>(server: &'a Server, fail: &str) -> (Setup<'a>, String) {
    let s = Setup::redis(server);
    let pid = server.pid();
    let out = s.run(
        &[
            "--key",
            "api",
            "--state-fail",
            fail,
            "-n",
            "3",
            "-d",
            "1ms",
            "--",
            "sh",
            "-c",
            &format!(
                "echo ran >> '{}'; kill -9 {pid} 2>/dev/null; exit 3",
                s.marks().display()
            ),
        ],
        0,
    );
    out.assert().code(3);
    (s, stderr(&out))
}

#[test]
fn a_store_lost_mid_run_never_changes_the_commands_outcome() {
    let Some(server) = Server::start() else {
        return;
    };
    let (s, log) = lost_mid_run(&server, "open");
    assert_eq!(s.ran(), 3, "{log}");
    assert_eq!(log.matches("warning").count(), 1, "{log}");
    // The store failed mid-run: the run goes on with this host's local state, as one whose
    // store failed at its start does (--state-fail open), and its budget allows the retries.
    assert!(
        log.contains("going on with this host's local state (--state-fail open)"),
        "{log}"
    );
    assert!(s.file_of("api").exists(), "counted in the local state");
}

/// With `--state-fail closed`, a store lost mid-run is not replaced by this host's state: the
/// run no longer knows its key's budget, and makes no retry it would have paid for.
#[test]
fn a_store_lost_mid_run_with_state_fail_closed_allows_no_retry_the_budget_would_pay_for() {
    let Some(server) = Server::start() else {
        return;
    };
    let (s, log) = lost_mid_run(&server, "closed");
    assert_eq!(s.ran(), 1, "{log}");
    assert!(
        log.contains("this run makes no retry its breaker or budget would have had to allow"),
        "{log}"
    );
    assert!(!s.file_of("api").exists(), "{log}");
}

/// A run whose connection to the store is closed while it holds it idle: the call that finds it
/// closed connects again, once, and the run goes on with the key as if nothing happened.
fn reconnects(server: &Server, flags: &[&str], command: &str) {
    let s = Setup::redis(server);
    let mut c = s.retry(&with(&["--key", "api", "-n", "2"], flags));
    c.args([
        "--",
        "sh",
        "-c",
        &format!("echo ran >> '{}'; {command}; exit 1", s.marks().display()),
    ]);
    let out = output(c);
    let log = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{flags:?}: {log}");
    assert_eq!(s.ran(), 2, "{flags:?}: {log}");
    assert!(!log.contains("retry: warning"), "{flags:?}: {log}");
    assert!(!s.file_of("api").exists(), "{flags:?}: no local state");
    let f: String = server.query(cmd("HGET").arg("retry:api").arg("f"));
    assert_eq!(
        f.split(',').count(),
        2,
        "{flags:?}: both failures counted: {f:?}"
    );
    server.query::<()>(cmd("DEL").arg("retry:api"));
}

#[test]
fn a_connection_the_server_closed_while_idle_is_opened_again() {
    let Some(server) = Server::start() else {
        return;
    };
    // The server closes a connection idle for a second: during the second attempt, which it
    // holds, and during the wait before the retry.
    server.query::<()>(cmd("CONFIG").arg("SET").arg("timeout").arg(1));
    reconnects(&server, &["-d", "0"], "sleep 2.5");
    reconnects(&server, &["-d", "2500ms", "--jitter", "none"], "true");
}

#[test]
fn a_connection_killed_while_idle_is_opened_again() {
    if !support::have("redis-cli", "apt-get install redis-tools") {
        return;
    }
    let Some(server) = Server::start() else {
        return;
    };
    // Each attempt kills the run's connection, as a proxy or an operator may.
    let kill = format!(
        "redis-cli --no-auth-warning -u redis://admin:admin@127.0.0.1:{} CLIENT KILL USER retry \
         >/dev/null",
        server.port
    );
    reconnects(&server, &["-d", "0"], &kill);
}

#[test]
fn a_store_that_asks_for_a_password_none_was_given_for_says_where_to_put_it() {
    let Some(server) = Server::start_requiring(PASSWORD) else {
        return;
    };
    let s = Setup::file();
    let told = "the store requires a password: put it in the URL or in REDISCLI_AUTH";
    for url in [
        format!("redis://127.0.0.1:{}", server.port),
        format!("redis://retry@127.0.0.1:{}", server.port),
    ] {
        for (args, code) in [
            (vec!["-n", "1"], 0),
            (vec!["--state-fail", "closed"], 75),
            (vec!["--explain"], 0),
            (vec!["--reset-state"], 125),
        ] {
            let out = s.run(&with(&["--key", "api", "--state", &url], &args), 0);
            assert_eq!(
                out.status.code(),
                Some(code),
                "{url} {args:?}: {}",
                said(&out)
            );
            assert!(said(&out).contains(told), "{url} {args:?}: {}", said(&out));
        }
    }
    // Given in REDISCLI_AUTH, it is used.
    let mut c = s.retry(&["--key", "api", "-n", "1"]);
    c.env(
        "RETRY_STATE_URL",
        format!("redis://127.0.0.1:{}", server.port),
    )
    .env("REDISCLI_AUTH", PASSWORD)
    .arg("--")
    .args(s.command(1));
    let out = output(c);
    out.assert().code(1);
    assert!(!said(&out).contains("warning"), "{}", said(&out));
    assert!(
        !s.file_of("api").exists(),
        "the failure was counted in Redis"
    );
}
