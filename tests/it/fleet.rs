//! `retry --explain --fleet N` through the built binary: it simulates, runs
//! nothing, exits 0, and answers quickly for a thousand processes.

use std::time::Duration;

use snapbox::str;

use crate::support;
use crate::support::{Launch, Run};

fn explain(args: &[&str]) -> (Run, Duration) {
    let out = support::retry()
        .env_remove("RETRY_STATE_DIR")
        .args(["--explain"])
        .args(args)
        .run();
    let took = out.took;
    (out, took)
}

#[test]
fn a_fleet_of_a_thousand_is_simulated_without_running_anything() {
    let dir = tempfile::tempdir().expect("temporary directory");
    let marker = dir.path().join("ran");
    let touch = format!("touch '{}'", marker.display());
    // How long it takes is measured by benches/simulator.rs.
    let (out, _) = explain(&[
        "--fleet", "1000", "--outage", "10m", "-n", "5", "--", "sh", "-c", &touch,
    ]);
    out.assert().code(0);
    assert!(!marker.exists(), "nothing ran");
    let text = String::from_utf8_lossy(&out.stdout);
    // The table and the chart of seed 1, whole; a thousand is one group, stepped as one queue
    // as it always was, and there is no colour off a terminal.
    support::assert_output(text.as_ref(), snapbox::file!["snapshots/fleet-1000.txt"]);
    assert!(
        text.lines().all(|l| l == l.trim_end()),
        "no blanks at the end of a line: {text:?}"
    );
}

/// The calls a row of the table counts into the outage.
fn calls_in_outage(text: &str, row: &str) -> u64 {
    text.lines()
        .find(|l| l.trim_start().starts_with(row))
        .and_then(|l| {
            l[l.find(row).map_or(0, |i| i + row.len())..]
                .split_whitespace()
                .next()
        })
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no row {row:?} in {text}"))
}

#[test]
fn one_store_for_the_fleet_sends_far_fewer_calls_into_the_outage() {
    let (out, _) = explain(&["--fleet", "200", "--outage", "30m", "--key", "api"]);
    out.assert().code(0);
    let text = String::from_utf8_lossy(&out.stdout);
    let with = calls_in_outage(&text, "this policy");
    let without = calls_in_outage(&text, "without --key");
    assert!(with * 2 < without, "{with} against {without}: {text}");
}

#[test]
fn the_adaptive_delay_is_simulated_beside_its_exponential_fallback() {
    // No breaker or budget: the delays alone make the difference.
    let (out, _) = explain(&[
        "--fleet",
        "200",
        "--outage",
        "30m",
        "-n",
        "5",
        "--key",
        "api",
        "--breaker-failures",
        "0",
        "--budget-burst",
        "0",
        "--backoff",
        "adaptive",
        // Spread, as --splay spreads real runs: cron's runs at the same second would fail
        // together, and wait the same whatever the delay.
        "--splay",
        "5m",
    ]);
    out.assert().code(0);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("retry's own adaptive delay"), "{text}");
    // As the key's failures pile up, each host waits longer than exponential backoff would.
    let adaptive = calls_in_outage(&text, "this policy");
    let exponential = calls_in_outage(&text, "exponential, no --key");
    assert!(
        adaptive < exponential,
        "{adaptive} against {exponential}: {text}"
    );
}

#[test]
fn with_a_shared_store_the_fleet_has_one_breaker() {
    // Spread: at the same second, two hundred runs are all let in before any has failed.
    let spread = [
        "--fleet", "200", "--outage", "30m", "--key", "api", "--splay", "5m",
    ];
    let local = explain(&spread).0;
    let shared = explain(&[&spread[..], &["--state", "redis://127.0.0.1:1"]].concat()).0;
    assert_eq!(shared.status.code(), Some(0), "nothing is connected to");
    let (local, shared) = (
        String::from_utf8_lossy(&local.stdout),
        String::from_utf8_lossy(&shared.stdout),
    );
    assert!(
        calls_in_outage(&shared, "this policy") * 10 < calls_in_outage(&local, "this policy"),
        "{shared}\n{local}"
    );
}

#[test]
fn fleet_needs_explain_and_a_sane_interval() {
    let out = support::retry().args(["--fleet", "10", "--", "true"]).run();
    out.assert().code(125);
    let (out, _) = explain(&["--fleet", "10", "--every", "10ms"]);
    out.assert().code(125);
    assert!(String::from_utf8_lossy(&out.stderr).contains("--every"));
    let (out, _) = explain(&["--fleet", "0"]);
    out.assert().code(125);
}

#[test]
fn a_fleet_too_long_to_simulate_is_refused_at_once_naming_the_limit() {
    // 5,000 processes every 5 minutes through a year: 5e8 runs, which would never end.
    let mut c = support::retry();
    c.args([
        "--explain",
        "--fleet",
        "5000",
        "--outage",
        "1y",
        "--",
        "true",
    ]);
    // Refused before it simulates: a simulation would outlast the patience.
    let out = c.run();
    out.assert().code(125);
    support::assert_output(
        out.stderr(),
        str![[r#"
retry: error: --fleet 5000 with --every 5m through --outage 1year is 525995000 runs of the job to simulate; the most is 50000000: give fewer processes, a longer --every or a shorter --outage

"#]],
    );
    assert!(out.stdout.is_empty());
}

#[test]
fn a_fleet_stepped_in_groups_says_so_above_the_table_and_nothing_on_stderr() {
    let (out, _) = explain(&[
        "--fleet", "3000", "--hosts", "30", "--key", "api", "--", "true",
    ]);
    out.assert().code(0);
    let text = String::from_utf8_lossy(&out.stdout);
    let head: String = text.lines().take(8).collect::<Vec<_>>().join("\n");
    assert!(
        head.contains("stepped apart, in groups") && head.contains("none sampled"),
        "{head}"
    );
    // No progress line off a terminal.
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn a_fleet_whose_runs_would_retry_through_the_outage_is_refused_naming_the_limit() {
    // Within the runs allowed, but every run retries until the hour is over.
    let (out, took) = explain(&[
        "--fleet",
        "100000",
        "--outage",
        "1h",
        "--every",
        "10s",
        "--forever",
        "--",
        "true",
    ]);
    out.assert().code(125);
    support::assert_output(
        out.stderr(),
        str![[r#"
retry: error: --fleet 100000 with --every 10s through --outage 1h is about 4896600000 steps to simulate, 2357500000 for its largest row (about 2357500000 calls without a key, each a step; with a key, each run or call several, as it reads and writes the key's state); the most is 1800000000, 800000000 for one row: give fewer processes, fewer attempts or longer delays, a longer --every or a shorter --outage

"#]],
    );
    assert!(out.stdout.is_empty());
    assert!(took < support::PATIENCE, "{took:?}");
}

/// The JSON lines of `--explain --fleet --log-format json`: the assumptions, then the rows.
fn json_lines(args: &[&str]) -> Vec<serde_json::Value> {
    let (out, _) = explain(&[args, &["--log-format", "json", "--", "true"]].concat());
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

#[test]
fn the_fleet_in_json_is_its_assumptions_then_one_object_a_row() {
    let lines = json_lines(&[
        "--fleet",
        "60",
        "--hosts",
        "3",
        "--splay",
        "0",
        "--call-time",
        "2s",
        "-n",
        "3",
    ]);
    let a = &lines[0]["assumptions"];
    assert_eq!(
        (
            &a["processes"],
            &a["hosts"],
            &a["splay_s"],
            &a["call_time_s"]
        ),
        (&60.into(), &3.into(), &0.0.into(), &2.0.into()),
        "{a}"
    );
    let rows: Vec<&str> = lines[1..]
        .iter()
        .filter_map(|r| r["row"].as_str())
        .collect();
    assert_eq!(
        rows,
        [
            "this policy",
            "without jitter",
            "with --key (each host)",
            "with --key --state"
        ]
    );
    for row in &lines[1..] {
        for field in [
            "calls_in_outage",
            "calls_after",
            "peak_calls_per_s",
            "peak_retries_per_s",
            "runs_refused",
            "runs_lost_store",
            "all_back_s",
            "amplification",
            "goodput",
        ] {
            assert!(row.get(field).is_some(), "{field} in {row}");
        }
        // Calls over jobs, successes over calls: what the counts say.
        let calls = row["calls_in_outage"].as_f64().unwrap() + row["calls_after"].as_f64().unwrap();
        let amplification = row["amplification"].as_f64().unwrap();
        assert!(
            (amplification * row["jobs"].as_f64().unwrap() - calls).abs() < 1e-6,
            "{row}"
        );
        assert!(
            (0.0..=1.0).contains(&row["goodput"].as_f64().unwrap()),
            "{row}"
        );
    }
    // Cron fires the sixty processes at the same second: all sixty call in it.
    assert_eq!(lines[1]["peak_calls_per_s"], 60, "{}", lines[1]);
}

#[test]
fn processes_on_one_host_share_its_breaker() {
    let calls = |hosts: &str| {
        let lines = json_lines(&[
            "--fleet", "50", "--hosts", hosts, "--outage", "1h", "-n", "5", "--key", "api",
            "--splay", "5m",
        ]);
        lines[1]["calls_in_outage"].as_u64().expect("a count")
    };
    let (one, each) = (calls("1"), calls("50"));
    // One breaker for the fifty: a probe a half-open window; a breaker each: five calls
    // each before it opens, then their probes.
    assert!(one * 10 < each, "{one} against {each}");
}

#[test]
fn the_fleet_starts_as_real_runs_do_at_the_same_second_unless_splay_spreads_it() {
    let peak = |splay: &[&str], seconds: f64| {
        let lines = json_lines(&[&["--fleet", "300", "-n", "3"], splay].concat());
        assert_eq!(lines[0]["assumptions"]["splay_s"], seconds, "{}", lines[0]);
        lines[1]["peak_calls_per_s"].as_u64().expect("a count")
    };
    let (cron, spread) = (peak(&[], 0.0), peak(&["--splay", "5m"], 300.0));
    // All three hundred call in the first second, and most retry within it.
    assert!(cron >= 300, "{cron}");
    assert!(spread * 5 < cron, "{spread} against {cron}");
    assert_eq!(cron, peak(&["--splay", "0"], 0.0));
}

#[test]
fn a_splay_from_the_config_file_shapes_the_fleet_as_it_does_real_runs() {
    let dir = tempfile::tempdir().expect("temporary directory");
    let config = dir.path().join("config.toml");
    std::fs::write(&config, "splay = \"2m\"\n").expect("write the config");
    let config = config.display().to_string();
    let lines = json_lines(&["--config", &config, "--fleet", "10", "-n", "2"]);
    assert_eq!(lines[0]["assumptions"]["splay_s"], 120.0, "{}", lines[0]);
}

#[test]
fn bad_fleet_flags_are_named_with_their_values() {
    for (args, said) in [
        (&["--fleet", "10", "--hosts", "11"][..], "--hosts 11"),
        (&["--fleet", "10", "--splay", "6m"][..], "--splay 6m"),
        (&["--fleet", "10", "--call-time", "0"][..], "--call-time 0s"),
        (
            &["--fleet", "10", "--call-time", "10m"][..],
            "--call-time 10m",
        ),
        (&["--fleet", "10", "--hosts", "0"][..], "--hosts: 0"),
        (&["--hosts", "3"][..], "--hosts without --fleet"),
        (&["--fleet", "10", "--store-rate", "0"][..], "--store-rate"),
        (
            &["--fleet", "10", "--store-rate", "fast"][..],
            "--store-rate",
        ),
        (
            &["--key", "api", "--state", "redis://h", "--store-rate", "9"][..],
            "--store-rate without --fleet",
        ),
        // A key kept on each host: no store whose rate could matter.
        (
            &["--fleet", "10", "--key", "api", "--store-rate", "9"][..],
            "--store-rate 9 is the rate of a --state store",
        ),
    ] {
        let (out, _) = explain(&[args, &["--", "true"]].concat());
        assert_eq!(out.status.code(), Some(125), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(said), "{args:?}: {err}");
        assert!(out.stdout.is_empty());
    }
}

/// The row of "this policy" and the assumptions of a fleet of one key in a `--state` store.
fn shared_store(extra: &[&str]) -> (serde_json::Value, serde_json::Value) {
    let flags = [
        "--fleet",
        "2000",
        "--every",
        "5m",
        "--key",
        "api",
        "--state",
        "redis://127.0.0.1:1",
        "-n",
        "4",
        "-d",
        "1s",
    ];
    let lines = json_lines(&[&flags[..], extra].concat());
    (lines[0]["assumptions"].clone(), lines[1].clone())
}

#[test]
fn a_store_that_answers_at_its_rate_loses_the_fleets_runs_at_the_same_second() {
    // 2000 runs at once, 2000 calls a second, half a second to wait: half of them lose the
    // shared state at admission, and the rest their failures queued behind.
    let (assumed, row) = shared_store(&["--splay", "0", "--store-rate", "2000"]);
    assert_eq!(assumed["store_rate_per_s"], 2000, "{assumed}");
    assert_eq!(assumed["state_timeout_s"], 0.5, "{assumed}");
    assert_eq!(assumed["state_fail"], "open", "{assumed}");
    let lost = row["runs_lost_store"].as_u64().unwrap();
    assert!(lost >= 2000, "{row}");
    // Spread over the period, the store keeps up.
    let (_, spread) = shared_store(&["--splay", "5m", "--store-rate", "2000"]);
    assert_eq!(spread["runs_lost_store"], 0, "{spread}");
    // A wait as long as the queue: none lose it.
    let (_, patient) = shared_store(&[
        "--splay",
        "0",
        "--store-rate",
        "2000",
        "--state-timeout",
        "3s",
    ]);
    assert_eq!(patient["runs_lost_store"], 0, "{patient}");
    // The default rate: 2000 runs' admissions and failures take a third of a second of it.
    let (assumed, row) = shared_store(&["--splay", "0"]);
    assert_eq!(assumed["store_rate_per_s"], 14000, "{assumed}");
    assert_eq!(row["runs_lost_store"], 0, "{row}");
}

#[test]
fn with_state_fail_closed_the_runs_that_lose_the_store_do_not_run() {
    let (_, open) = shared_store(&["--splay", "0", "--store-rate", "2000"]);
    let (assumed, closed) = shared_store(&[
        "--splay",
        "0",
        "--store-rate",
        "2000",
        "--state-fail",
        "closed",
    ]);
    assert_eq!(assumed["state_fail"], "closed", "{assumed}");
    assert!(closed["runs_lost_store"].as_u64().unwrap() > 0, "{closed}");
    let calls = |row: &serde_json::Value| row["calls_in_outage"].as_u64().unwrap();
    assert!(calls(&closed) < calls(&open), "{closed}\n{open}");
}

#[test]
fn the_table_states_its_assumptions_above_it() {
    let (out, _) = explain(&[
        "--fleet",
        "200",
        "--hosts",
        "4",
        "--splay",
        "0",
        "--call-time",
        "2s",
        "--key",
        "api",
        "--",
        "true",
    ]);
    out.assert().code(0);
    let text = String::from_utf8_lossy(&out.stdout);
    let head: String = text.lines().take(5).collect::<Vec<_>>().join("\n");
    for said in [
        "200 processes on 4 hosts",
        "a call takes 2s",
        "at the same second, as cron does on every host; --splay DUR spreads real runs.",
        "the 50 processes on each host share its state",
    ] {
        assert!(head.contains(said), "{said}: {head}");
    }
    for column in ["calls", "/job", "good-", "put"] {
        assert!(text.contains(column), "{column}: {text}");
    }
}

/// On a terminal, a simulation past its due time (a second; here, under the tests' setting
/// for debug builds, at once) shows how many runs it has started, and clears the line before
/// the table.
#[test]
fn a_simulation_past_its_due_time_shows_its_progress_on_a_terminal_and_clears_it() {
    if !support::have("script", "apt-get install bsdutils") {
        return;
    }
    let line = format!(
        "{} --explain --fleet 2000 -- true",
        support::bin().display()
    );
    let mut script = std::process::Command::new("script");
    support::hermetic(&mut script);
    let out = script
        .env("RETRY_TEST_PROGRESS_DUE", "0")
        .args(["-qec", &line, "/dev/null"])
        .output()
        .expect("run script(1)");
    let screen = String::from_utf8_lossy(&out.stdout);
    let at = screen
        .find("\r\x1b[2Kretry: simulating the fleet: ")
        .unwrap_or_else(|| panic!("no progress: {screen:?}"));
    let table = screen.find("Fleet: 2000 processes").expect("the table");
    assert!(at < table, "{screen:?}");
    let shown = &screen[at..table];
    assert!(shown.contains(" runs of the job ("), "{screen:?}");
    // Cleared before the table: the last thing drawn is the erase-line code alone.
    let last = shown.rfind("\r\x1b[2K").expect("a clear");
    assert!(
        !shown[last..].contains("simulating"),
        "the line was not cleared: {screen:?}"
    );
}
