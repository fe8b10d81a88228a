//! The behaviour of `--key` that every store must show, as scenarios that take
//! a [`Setup`]: the `state` module runs them with the local state directory, `redis` with a
//! Redis server, a cluster and sentinels. Each runs the built binary with real processes.
//!
//! The stores keep time by a test clock ([`Setup::advance`]): a file whose number of ms every
//! run of the scenario reads (`RETRY_TEST_CLOCK`, honoured by debug builds only), so that an
//! open time or a lease passes when the test says, without sleeping, and not before, however
//! loaded the machine. Retry's own waits (backoff, timeouts) stay real.

use std::fs;
use std::path::PathBuf;
use std::process::{Child, Command, Output, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use serde_json::Value;
use tempfile::TempDir;

use super::redis::{Cluster, Cmd, FromReply, Sentinels, Server, cmd};
use super::{Launch, Run};

/// Calls `$run!` with the name of every scenario below: each store's test module runs them all.
macro_rules! scenarios {
    ($run:ident) => {
        $run!(
            the_breaker_opens_across_runs_and_refuses_with_75_without_running_the_command,
            a_run_going_on_stops_at_its_next_retry_with_its_last_status,
            fatal_statuses_do_not_open_the_breaker,
            after_the_open_time_exactly_one_of_30_runs_started_at_once_probes,
            with_attempt_timeout_0_the_probe_still_holds_a_lease,
            a_failed_probe_reopens_the_breaker_for_longer,
            a_probe_killed_with_sigkill_leaves_a_lease_that_expires,
            the_budget_is_shared_by_runs_and_a_spent_budget_ends_a_run_with_its_status,
            reset_state_forgets_the_key_and_runs_nothing,
            explain_shows_the_keys_state_without_changing_it,
            the_json_log_summary_and_metrics_carry_the_key,
            a_profile_in_the_config_file_sets_the_key,
            bad_state_flags_are_usage_errors_naming_the_value,
            adaptive_runs_keep_the_keys_outcomes_and_explain_shows_the_delay_they_give,
            list_keys_shows_every_key_and_changes_nothing,
        );
    };
}
pub(crate) use scenarios;

/// Where the keys' state is kept in a test.
pub enum Backend<'a> {
    /// The state directory alone.
    File,
    /// A Redis server, given with `--state` (and the state directory to fall back on).
    Redis(&'a Server),
    /// A Redis Cluster, given by one node's URL.
    Cluster(&'a Cluster),
    /// A master and its replica behind sentinels, given by the sentinels' URL.
    Sentinel(&'a Sentinels),
}

/// A state directory (and maybe a Redis server), the stores' clock, and a place for the
/// commands' marks.
pub struct Setup<'a> {
    pub dir: TempDir,
    pub backend: Backend<'a>,
    /// Put before every key the scenario names: on a store other scenarios share (the one
    /// cluster), each scenario's keys are its own.
    prefix: String,
    /// The stores keep time by the test clock (else by their own: the file store's boot
    /// clock, the Redis server's).
    test_clock: bool,
}

/// The stores' time when a scenario starts (ms): any time will do, as the file store keeps
/// no other for a key.
const START_MS: u64 = 1_000_000_000;

impl<'a> Setup<'a> {
    fn new(backend: Backend<'a>, prefix: String) -> Setup<'a> {
        let dir = tempfile::tempdir().expect("temporary directory");
        fs::write(dir.path().join("clock"), START_MS.to_string()).expect("clock file");
        Setup {
            dir,
            backend,
            prefix,
            test_clock: true,
        }
    }

    /// The same, with the stores on their own clocks: for a test of the time they keep.
    pub fn on_real_clock(mut self) -> Setup<'a> {
        self.test_clock = false;
        self
    }

    /// The local store: a state directory.
    pub fn file() -> Setup<'static> {
        Setup::new(Backend::File, String::new())
    }

    /// The Redis store, on `server`.
    pub fn redis(server: &'a Server) -> Setup<'a> {
        Setup::new(Backend::Redis(server), String::new())
    }

    /// The Redis store, on a cluster that other scenarios share: this one's keys get a
    /// prefix of their own.
    pub fn cluster(cluster: &'a Cluster) -> Setup<'a> {
        static SCENARIOS: AtomicUsize = AtomicUsize::new(0);
        let n = SCENARIOS.fetch_add(1, Ordering::Relaxed);
        Setup::new(Backend::Cluster(cluster), format!("s{n}-"))
    }

    /// The Redis store, behind sentinels.
    pub fn sentinel(sentinels: &'a Sentinels) -> Setup<'a> {
        Setup::new(Backend::Sentinel(sentinels), String::new())
    }

    /// The name the store knows the scenario's key `name` by.
    pub fn key(&self, name: &str) -> String {
        format!("{}{name}", self.prefix)
    }

    /// The file that holds the stores' time, in ms.
    pub fn clock(&self) -> PathBuf {
        self.dir.path().join("clock")
    }

    /// The stores' time (ms), by the test clock.
    pub fn now(&self) -> u64 {
        fs::read_to_string(self.clock())
            .expect("clock file")
            .trim()
            .parse()
            .expect("a time")
    }

    /// Moves the stores' clock on by `ms`: what a sleep of that long would do to every key's
    /// state, at once.
    pub fn advance(&self, ms: u64) {
        fs::write(self.clock(), (self.now() + ms).to_string()).expect("clock file");
    }

    /// A command as `admin` on the store's server that holds its key.
    fn query<T: FromReply>(&self, cmd: &mut Cmd) -> T {
        match self.backend {
            Backend::File => panic!("no Redis here"),
            Backend::Redis(server) => server.query(cmd),
            Backend::Cluster(cluster) => cluster.query(cmd),
            Backend::Sentinel(set) => {
                let port = set.master_port();
                let master = if port == Some(set.replica.port) {
                    &set.replica
                } else {
                    &set.master
                };
                master.query(cmd)
            }
        }
    }

    pub fn state(&self) -> PathBuf {
        self.dir.path().join("state")
    }

    /// A file each run of the command appends a line to: how many times it ran.
    pub fn marks(&self) -> PathBuf {
        self.dir.path().join("marks")
    }

    pub fn ran(&self) -> usize {
        fs::read_to_string(self.marks())
            .map(|s| s.lines().count())
            .unwrap_or(0)
    }

    /// [`super::retry`] with this state directory (and store), the stores' clock, and `args`,
    /// before `--` (each `--key`'s value the scenario's own, [`Setup::key`]), and none of the
    /// store variables.
    pub fn retry(&self, args: &[&str]) -> Command {
        let mut c = super::retry();
        c.env_remove("RETRY_STATE_DIR")
            .env_remove("RETRY_STATE_URL")
            .env_remove("REDISCLI_AUTH")
            .env_remove("RETRY_TEST_CLOCK")
            .arg("--state-dir")
            .arg(self.state());
        match self.backend {
            Backend::File => {}
            Backend::Redis(server) => {
                c.arg("--state").arg(server.url());
            }
            // A store that fails must fail the test, not pass it on the local state.
            Backend::Cluster(cluster) => {
                c.arg("--state").arg(cluster.url());
                c.args(["--state-fail", "closed"]);
            }
            Backend::Sentinel(set) => {
                c.arg("--state").arg(set.url());
                c.args(["--state-fail", "closed"]);
            }
        }
        // The scenarios are about the rules, not the store's speed: a loaded machine may take
        // longer than the default 500 ms to start a run and hear from the server, and the run
        // would then be right to go on without it.
        if !matches!(self.backend, Backend::File) && !args.contains(&"--state-timeout") {
            c.args(["--state-timeout", "10s"]);
        }
        if self.test_clock {
            c.env("RETRY_TEST_CLOCK", self.clock());
        }
        let mut after_key = false;
        for arg in args {
            // An empty key stays one: the usage error it is.
            if after_key && !arg.is_empty() {
                c.arg(self.key(arg));
            } else {
                c.arg(arg);
            }
            after_key = *arg == "--key";
        }
        c
    }

    /// A command that marks that it ran, then exits with `code`.
    pub fn command(&self, code: i32) -> Vec<String> {
        vec![
            "sh".into(),
            "-c".into(),
            format!("echo ran >> '{}'; exit {code}", self.marks().display()),
        ]
    }

    pub fn run(&self, args: &[&str], code: i32) -> Run {
        let mut c = self.retry(args);
        c.arg("--").args(self.command(code));
        output(c)
    }

    /// The key's file in the state directory.
    pub fn file_of(&self, key: &str) -> PathBuf {
        self.state().join(format!("{}.json", self.key(key)))
    }

    /// Whether the store holds anything for the key.
    pub fn stored(&self, key: &str) -> bool {
        match self.backend {
            Backend::File => self.file_of(key).exists(),
            _ => self.query::<bool>(cmd("EXISTS").arg(format!("retry:{}", self.key(key)))),
        }
    }

    /// The breaker's open time as stored, before its random cut (ms).
    pub fn open_for(&self, key: &str) -> u64 {
        match self.backend {
            Backend::File => {
                let state: Value =
                    serde_json::from_slice(&fs::read(self.file_of(key)).expect("state file"))
                        .expect("JSON");
                assert_eq!(state["state"]["breaker"]["state"], "open");
                state["state"]["breaker"]["open_for"]
                    .as_u64()
                    .expect("open_for")
            }
            _ => {
                let hash = format!("retry:{}", self.key(key));
                let state: String = self.query(cmd("HGET").arg(&hash).arg("s"));
                assert_eq!(state, "open");
                self.query(cmd("HGET").arg(&hash).arg("o"))
            }
        }
    }

    /// Everything the store holds of the key, to compare before and after.
    pub fn snapshot(&self, key: &str) -> String {
        match self.backend {
            Backend::File => {
                let path = self.file_of(key);
                let modified = fs::metadata(&path).and_then(|m| m.modified()).ok();
                format!(
                    "{} {modified:?}",
                    String::from_utf8_lossy(&fs::read(&path).expect("state"))
                )
            }
            _ => {
                let mut fields: Vec<(String, String)> =
                    self.query(cmd("HGETALL").arg(format!("retry:{}", self.key(key))));
                fields.sort();
                format!("{fields:?}")
            }
        }
    }
}

/// Runs `c` to the end, stdin empty, within the tests' patience ([`Launch::run`]).
pub fn output(mut c: Command) -> Run {
    c.run()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Flags that open the breaker after 3 failures and keep it open for `open`.
pub fn breaker(open: &str) -> Vec<&str> {
    vec![
        "--key",
        "api",
        "--breaker-failures",
        "3",
        "--breaker-open",
        open,
        "-d",
        "1ms",
    ]
}

pub fn with<'a>(base: &[&'a str], more: &[&'a str]) -> Vec<&'a str> {
    base.iter().chain(more).copied().collect()
}

pub fn the_breaker_opens_across_runs_and_refuses_with_75_without_running_the_command(s: &Setup) {
    let flags = with(&breaker("1h"), &["-n", "1"]);
    for _ in 0..2 {
        assert_eq!(s.run(&flags, 7).status.code(), Some(7));
    }
    assert_eq!(s.ran(), 2);
    let third = s.run(&flags, 7);
    assert_eq!(
        third.status.code(),
        Some(7),
        "the run that opens it keeps its status"
    );
    assert!(
        stderr(&third).contains("the breaker opened for"),
        "{}",
        stderr(&third)
    );
    let refused = s.run(&flags, 0);
    assert_eq!(refused.status.code(), Some(75), "{}", stderr(&refused));
    assert_eq!(s.ran(), 3, "the refused run ran nothing");
    let log = stderr(&refused);
    assert!(
        log.contains("not running")
            && log.contains(&format!("key '{}' is open for another", s.key("api"))),
        "{log}"
    );
    // Another key is another failure domain.
    let other = s.run(&["--key", "db", "-n", "1"], 0);
    assert_eq!(other.status.code(), Some(0));
    assert_eq!(s.ran(), 4);
}

pub fn a_run_going_on_stops_at_its_next_retry_with_its_last_status(s: &Setup) {
    let out = s.run(&with(&breaker("1h"), &["-n", "10"]), 4);
    assert_eq!(out.status.code(), Some(4));
    assert_eq!(s.ran(), 3, "{}", stderr(&out));
    let said = format!(
        "not retried: the breaker for key '{}' is open",
        s.key("api")
    );
    assert!(stderr(&out).contains(&said), "{}", stderr(&out));
}

pub fn fatal_statuses_do_not_open_the_breaker(s: &Setup) {
    for _ in 0..4 {
        let out = s.run(&with(&breaker("1h"), &["-n", "2", "--fatal-on", "9"]), 9);
        assert_eq!(out.status.code(), Some(9));
    }
    assert_eq!(s.ran(), 4);
    assert_eq!(s.run(&breaker("1h"), 0).status.code(), Some(0));
}

pub fn after_the_open_time_exactly_one_of_30_runs_started_at_once_probes(s: &Setup) {
    let flags = with(&breaker("300ms"), &["-n", "3"]);
    assert_eq!(s.run(&flags, 1).status.code(), Some(1));
    assert_eq!(s.ran(), 3);
    // Open until its time has passed by the store's clock...
    s.advance(200);
    assert_eq!(s.run(&flags, 0).status.code(), Some(75));
    s.advance(200);
    // ...and then one of many runs started at once probes. The probe runs until the test says
    // so: every other run ends while it demonstrably still holds the lease.
    let go = s.dir.path().join("go");
    let mut probe = vec!["sh".to_string(), "-c".to_string()];
    probe.push(until_go(s, &go));
    let mut children: Vec<_> = (0..30)
        .map(|_| {
            let mut c = s.retry(&flags);
            c.arg("--")
                .args(&probe)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::piped());
            c.spawn().expect("retry starts")
        })
        .collect();
    let running = until_one_runs(&mut children);
    fs::write(&go, "").expect("go");
    let outputs: Vec<Output> = children
        .into_iter()
        .map(|c| c.wait_with_output().expect("retry ends"))
        .collect();
    let codes: Vec<Option<i32>> = outputs.iter().map(|o| o.status.code()).collect();
    assert_eq!(running, 1, "one probe still running: {codes:?}");
    assert_eq!(s.ran(), 4, "one probe among 30: {codes:?}");
    assert_eq!(
        codes.iter().filter(|c| **c == Some(0)).count(),
        1,
        "{codes:?}"
    );
    assert_eq!(
        codes.iter().filter(|c| **c == Some(75)).count(),
        29,
        "{codes:?}"
    );
    let probing = outputs
        .iter()
        .filter(|o| stderr(o).contains("this run probes"))
        .count();
    assert_eq!(probing, 1);
    // The probe succeeded: the breaker is closed for everyone.
    assert_eq!(s.run(&flags, 0).status.code(), Some(0));
}

/// A probe's command: it marks that it ran, then runs until the test creates `go`.
fn until_go(s: &Setup, go: &std::path::Path) -> String {
    format!(
        "echo ran >> '{}'; while [ ! -e '{}' ]; do sleep 0.01; done; exit 0",
        s.marks().display(),
        go.display()
    )
}

/// Waits until all of `children` but one have ended (or the test's patience runs out), and
/// returns how many still run.
fn until_one_runs(children: &mut [Child]) -> usize {
    let started = Instant::now();
    loop {
        let mut running = 0;
        for child in children.iter_mut() {
            if child.try_wait().expect("try_wait").is_none() {
                running += 1;
            }
        }
        if running <= 1 || started.elapsed() > super::PATIENCE {
            return running;
        }
        thread::sleep(Duration::from_millis(10));
    }
}

/// `--attempt-timeout 0` means no timeout: the probe's lease is then the default, not 0 ms,
/// which would let every run that starts meanwhile probe too.
pub fn with_attempt_timeout_0_the_probe_still_holds_a_lease(s: &Setup) {
    let flags = with(&breaker("300ms"), &["-n", "3", "--attempt-timeout", "0"]);
    assert_eq!(s.run(&flags, 1).status.code(), Some(1));
    assert_eq!(s.ran(), 3);
    s.advance(400);
    let go = s.dir.path().join("go");
    let probe = until_go(s, &go);
    let mut children: Vec<_> = (0..10)
        .map(|_| {
            let mut c = s.retry(&flags);
            c.args(["--", "sh", "-c", &probe])
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null());
            c.spawn().expect("retry starts")
        })
        .collect();
    let running = until_one_runs(&mut children);
    fs::write(&go, "").expect("go");
    let codes: Vec<Option<i32>> = children
        .into_iter()
        .map(|c| c.wait_with_output().expect("retry ends").status.code())
        .collect();
    assert_eq!(running, 1, "one probe still running: {codes:?}");
    assert_eq!(s.ran(), 4, "one probe among 10: {codes:?}");
    assert_eq!(
        codes.iter().filter(|c| **c == Some(75)).count(),
        9,
        "{codes:?}"
    );
}

pub fn a_failed_probe_reopens_the_breaker_for_longer(s: &Setup) {
    let flags = with(&breaker("1s"), &["-n", "3"]);
    s.run(&flags, 1);
    s.advance(1100);
    let probe = s.run(&flags, 1);
    assert_eq!(probe.status.code(), Some(1));
    assert_eq!(s.ran(), 4, "the probe is one attempt: {}", stderr(&probe));
    assert!(
        stderr(&probe).contains("the probe failed"),
        "{}",
        stderr(&probe)
    );
    assert_eq!(s.open_for("api"), 2000, "doubled");
    // 1 s after the probe the first open time would be over, the doubled one is not: less its
    // random cut of up to a fifth, it lasts at least 1.6 s.
    s.advance(1000);
    assert_eq!(s.run(&flags, 0).status.code(), Some(75));
    assert_eq!(s.ran(), 4);
    // 2 s after it, whatever the cut, the next run probes, and its success closes it.
    s.advance(1000);
    let next = s.run(&flags, 0);
    assert_eq!(next.status.code(), Some(0), "{}", stderr(&next));
    assert!(
        stderr(&next).contains("this run probes"),
        "{}",
        stderr(&next)
    );
    assert_eq!(s.ran(), 5);
}

pub fn a_probe_killed_with_sigkill_leaves_a_lease_that_expires(s: &Setup) {
    // The lease is the attempt timeout: 1s.
    let flags = with(&breaker("200ms"), &["-n", "3", "--attempt-timeout", "1s"]);
    s.run(&flags, 1);
    s.advance(300);
    let mut c = s.retry(&flags);
    c.arg("--")
        .args([
            "sh",
            "-c",
            &format!(
                "echo ran >> '{}'; echo ready $$; exec sleep 30",
                s.marks().display()
            ),
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    let mut probe = c.spawn().expect("retry starts");
    let lines = super::Lines::of(probe.stdout.take().expect("stdout"));
    let ready = lines.until("ready");
    probe.kill().expect("SIGKILL");
    probe.wait().expect("reaped");
    // The attempt, in its own process group, outlives retry: end it too.
    let group = ready
        .last()
        .and_then(|l| l.strip_prefix("ready "))
        .and_then(|pid| pid.trim().parse::<i32>().ok())
        .expect("the attempt's pid");
    let _ = nix::sys::signal::killpg(
        nix::unistd::Pid::from_raw(group),
        nix::sys::signal::Signal::SIGKILL,
    );
    // Its lease holds: the others are refused while it lasts, to its last moment...
    for step in [0, 900] {
        s.advance(step);
        let during = s.run(&flags, 0);
        assert_eq!(during.status.code(), Some(75), "{}", stderr(&during));
        assert!(stderr(&during).contains("probing"), "{}", stderr(&during));
    }
    assert_eq!(s.ran(), 4, "the refused runs ran nothing");
    // ...and once it expires, the next run probes, and its success closes the breaker.
    s.advance(200);
    let after = s.run(&flags, 0);
    assert_eq!(after.status.code(), Some(0), "{}", stderr(&after));
    assert!(
        stderr(&after).contains("this run probes"),
        "{}",
        stderr(&after)
    );
    assert!(stderr(&after).contains("closed"), "{}", stderr(&after));
}

pub fn the_budget_is_shared_by_runs_and_a_spent_budget_ends_a_run_with_its_status(s: &Setup) {
    let flags = [
        "--key",
        "api",
        "--breaker-failures",
        "0",
        "--budget-burst",
        "4",
        "-n",
        "3",
        "-d",
        "1ms",
    ];
    // Two retries each: the first two runs spend all four tokens.
    for _ in 0..2 {
        assert_eq!(s.run(&flags, 5).status.code(), Some(5));
    }
    assert_eq!(s.ran(), 6);
    let third = s.run(&flags, 5);
    assert_eq!(third.status.code(), Some(5), "its last attempt's status");
    assert_eq!(
        s.ran(),
        7,
        "a first attempt is always allowed, a retry is not"
    );
    let said = format!("the retry budget for key '{}' is spent", s.key("api"));
    assert!(stderr(&third).contains(&said), "{}", stderr(&third));
    // A token comes back every --budget-refill (a minute): then one run may retry once.
    s.advance(60_000);
    let fourth = s.run(&flags, 5);
    assert_eq!(fourth.status.code(), Some(5));
    assert_eq!(s.ran(), 9, "{}", stderr(&fourth));
}

pub fn reset_state_forgets_the_key_and_runs_nothing(s: &Setup) {
    s.run(&with(&breaker("1h"), &["-n", "3"]), 1);
    assert_eq!(s.run(&breaker("1h"), 0).status.code(), Some(75));
    let mut c = s.retry(&["--key", "api", "--reset-state", "--", "sh", "-c", "exit 9"]);
    c.env("MARKS", s.marks());
    let reset = output(c);
    assert_eq!(reset.status.code(), Some(0), "{}", stderr(&reset));
    assert!(!s.stored("api"));
    assert_eq!(s.ran(), 3, "nothing ran");
    assert_eq!(s.run(&breaker("1h"), 0).status.code(), Some(0));
    // Without a command too; and it needs a key.
    assert_eq!(
        output(s.retry(&["--key", "api", "--reset-state"]))
            .status
            .code(),
        Some(0)
    );
    assert_eq!(output(s.retry(&["--reset-state"])).status.code(), Some(125));
}

pub fn explain_shows_the_keys_state_without_changing_it(s: &Setup) {
    s.run(&with(&breaker("1h"), &["-n", "2"]), 1);
    let before = s.snapshot("api");
    let out = output(s.retry(&with(&breaker("1h"), &["--explain"])));
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8_lossy(&out.stdout);
    let shared = format!("Shared state (key '{}'", s.key("api"));
    assert!(text.contains(&shared), "{text}");
    assert!(text.contains("closed, 2 failures counted"), "{text}");
    assert!(text.contains("tokens now       9."), "{text}");
    assert_eq!(s.snapshot("api"), before);
    // Opened, it says what opened it.
    s.run(&with(&breaker("1h"), &["-n", "1"]), 1);
    let out = output(s.retry(&with(&breaker("1h"), &["--explain"])));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains(": runs exit 75; 3 failures in a row opened it"),
        "{text}"
    );
}

pub fn the_json_log_summary_and_metrics_carry_the_key(s: &Setup) {
    let summary = s.dir.path().join("summary.json");
    let metrics = s.dir.path().join("metrics.prom");
    let mut flags = with(&breaker("1h"), &["-n", "4", "--log-format", "json"]);
    let (summary_s, metrics_s) = (summary.display().to_string(), metrics.display().to_string());
    flags.extend(["--summary", &summary_s, "--metrics", &metrics_s]);
    let out = s.run(&flags, 1);
    assert_eq!(out.status.code(), Some(1));
    let lines: Vec<Value> = stderr(&out)
        .lines()
        .map(|l| serde_json::from_str(l).expect("JSON line"))
        .collect();
    let state = lines
        .iter()
        .find(|l| l["event"] == "state")
        .expect("a state event");
    let api = s.key("api");
    assert_eq!(state["key"], api.as_str());
    assert_eq!(state["breaker"], "open");
    assert_eq!(state["probe"], false);
    assert!(lines.iter().all(|l| l["key"] == api.as_str()), "{lines:?}");
    let sum: Value = serde_json::from_slice(&fs::read(&summary).expect("summary")).expect("JSON");
    assert_eq!(sum["key"]["key"], api.as_str());
    assert_eq!(sum["key"]["breaker"], "open");
    assert_eq!(sum["key"]["refused"], "breaker");
    // Two tokens taken from ten, and none back yet by the store's clock.
    let tokens = sum["key"]["tokens"].as_f64().expect("tokens");
    assert!((tokens - 8.0).abs() < 1e-9, "{tokens}");
    let text = fs::read_to_string(&metrics).expect("metrics");
    assert!(
        text.contains(&format!(
            "retry_breaker_open{{name=\"sh\",key=\"{api}\"}} 1"
        )),
        "{text}"
    );
    assert!(
        text.contains(&format!(
            "retry_budget_tokens{{name=\"sh\",key=\"{api}\"}} 8\n"
        )),
        "{text}"
    );
    assert!(
        text.contains(&format!(
            "retry_state_refusals_total{{name=\"sh\",key=\"{api}\",reason=\"breaker\"}} 1"
        )),
        "{text}"
    );
    // A refused run is counted as such.
    let refused = s.run(&flags, 0);
    assert_eq!(refused.status.code(), Some(75));
    let text = fs::read_to_string(&metrics).expect("metrics");
    assert!(
        text.contains("retry_runs_total{name=\"sh\",outcome=\"refused\"} 1"),
        "{text}"
    );
    assert!(
        text.contains(&format!(
            "retry_state_refusals_total{{name=\"sh\",key=\"{api}\",reason=\"breaker\"}} 2"
        )),
        "{text}"
    );
}

pub fn a_profile_in_the_config_file_sets_the_key(s: &Setup) {
    let config = s.dir.path().join("config.toml");
    fs::write(
        &config,
        format!(
            "[profiles.api]\nkey = \"{}\"\nbreaker-failures = 2\nattempts = 2\ndelay = \"1ms\"\n",
            s.key("api.example.com")
        ),
    )
    .expect("config");
    let config_s = config.display().to_string();
    let flags = ["--config", &config_s, "-p", "api"];
    assert_eq!(s.run(&flags, 1).status.code(), Some(1));
    assert_eq!(s.run(&flags, 0).status.code(), Some(75));
    assert!(s.stored("api.example.com"));
}

pub fn bad_state_flags_are_usage_errors_naming_the_value(s: &Setup) {
    for (args, word) in [
        (vec!["--key", ""], "not a key for --key: \"\";"),
        (
            vec!["--key", "a", "--budget-ratio=-1"],
            "not a ratio for --budget-ratio: -1;",
        ),
        (
            vec!["--key", "a", "--breaker-open", "0"],
            "for --breaker-open: 0;",
        ),
        (
            vec!["--key", "a", "--breaker-failures", "5000"],
            "for --breaker-failures: 5000;",
        ),
    ] {
        let mut c = s.retry(&args);
        c.args([
            "--",
            "sh",
            "-c",
            &format!("echo ran >> '{}'", s.marks().display()),
        ]);
        let out = output(c);
        assert_eq!(out.status.code(), Some(125), "{args:?}");
        assert!(stderr(&out).contains(word), "{args:?}: {}", stderr(&out));
    }
    assert_eq!(s.ran(), 0);
}

pub fn adaptive_runs_keep_the_keys_outcomes_and_explain_shows_the_delay_they_give(s: &Setup) {
    let adaptive = [
        "--key",
        "api",
        "--backoff",
        "adaptive",
        "--breaker-failures",
        "0",
        "--budget-burst",
        "0",
        "-n",
        "3",
        "-d",
        "1ms",
        "--max-delay",
        "10ms",
    ];
    let out = s.run(&adaptive, 3);
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    assert_eq!(s.ran(), 3);
    s.run(&adaptive, 0);
    // A run without the adaptive delay keeps no outcomes.
    let plain = [
        "--key",
        "api",
        "--breaker-failures",
        "0",
        "--budget-burst",
        "0",
    ];
    s.run(&with(&plain, &["-n", "2", "-d", "1ms"]), 1);
    assert_eq!(s.ran(), 6);
    let out = output(s.retry(&with(&adaptive, &["--explain"])));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    // Three failures and a success, and the failure the estimate supposes: (1 + 1) / (5 + 2).
    assert!(
        text.contains("adaptive delay   4 outcomes of the last 10m kept: success rate 0.29"),
        "{text}"
    );
    assert!(
        text.contains("the first retry waits 10ms (0ms to 10ms with full jitter)"),
        "capped by --max-delay: {text}"
    );
}

/// `--list-keys`: every key with state, its breaker, failures and tokens, as a table and as
/// JSON lines; nothing changes, nothing runs.
pub fn list_keys_shows_every_key_and_changes_nothing(s: &Setup) {
    s.run(&with(&breaker("1h"), &["-n", "3"]), 1);
    s.run(&["--key", "db/main", "-n", "1"], 1);
    s.run(&["--key", "ok", "-n", "1"], 1);
    s.run(&["--key", "ok", "-n", "1"], 0);
    let before = (s.snapshot("api"), s.ran());
    let out = output(s.retry(&["--list-keys"]));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let row = |key: &str| {
        let key = s.key(key);
        text.lines()
            .find(|l| l.split_whitespace().next() == Some(key.as_str()))
            .unwrap_or_else(|| panic!("no {key} in\n{text}"))
            .to_string()
    };
    // The failures that opened the breaker (3 in a row), not the 0 a closed one counts.
    let api = row("api");
    assert!(api.contains("open until "), "{text}");
    assert_eq!(api.split_whitespace().nth(4), Some("3"), "{text}");
    let db = row("db/main");
    assert!(
        db.contains("closed") && db.split_whitespace().nth(2) == Some("1"),
        "{text}"
    );
    assert!(row("ok").contains("closed"), "{text}");
    // Each column lines up under its heading, whatever the breaker's words are.
    let heading = text.lines().nth(1).unwrap_or_default();
    let failures_end = heading.find("FAILURES").map(|at| at + "FAILURES".len());
    for key in ["api", "db/main", "ok"] {
        // Less the last two fields, the last change and the tokens: up to the failures' end.
        let mut row = row(key);
        for _ in 0..2 {
            let cut = row.trim_end().rfind(' ').unwrap_or(0);
            row.truncate(cut);
        }
        assert_eq!(Some(row.trim_end().len()), failures_end, "{key}:\n{text}");
    }
    let out = output(s.retry(&["--list-keys", "--log-format", "json"]));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    // Every key of the store, those of other scenarios on a shared store left out.
    let lines: Vec<Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).expect("a JSON line"))
        .filter(|l| l["key"].as_str().is_some_and(|k| k.starts_with(&s.key(""))))
        .collect();
    let keys: Vec<&str> = lines.iter().filter_map(|l| l["key"].as_str()).collect();
    assert_eq!(keys, [s.key("api"), s.key("db/main"), s.key("ok")]);
    assert_eq!(lines[0]["breaker"], "open");
    assert_eq!(lines[0]["failures"], 3, "{lines:?}");
    assert!(lines[0]["until"].is_string(), "{lines:?}");
    assert_eq!(lines[1]["breaker"], "closed");
    assert_eq!(lines[1]["failures"], 1);
    assert!(
        lines[2]["tokens"].as_f64().is_some_and(|t| t > 9.0),
        "{lines:?}"
    );
    assert!(
        lines.iter().all(|l| l["last_change"].is_string()),
        "{lines:?}"
    );
    assert_eq!(
        (s.snapshot("api"), s.ran()),
        before,
        "nothing changed, nothing ran"
    );
    // It lists; it does not run a command, and says so.
    let mut c = s.retry(&["--list-keys", "--"]);
    c.args(s.command(0));
    let out = output(c);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stderr(&out).contains("--list-keys runs nothing; the command was not run"));
    assert_eq!(s.ran(), before.1);
}
