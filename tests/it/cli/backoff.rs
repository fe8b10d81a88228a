//! How long to wait: `--delay`, the backoff kinds and `--factor`, `--max-delay`,
//! `--delays`, the jitters and `--seed`, as `--explain` shows them and as the loop sleeps them.

use super::*;

#[test]
fn delay_is_the_wait_before_the_first_retry() {
    let r = run_json(&["-d", "200ms", "--jitter", "none", "-n", "2"], "exit 1");
    assert_eq!(r.delays(), [200], "{}", r.show());
    assert!(r.took >= Duration::from_millis(200), "{}", r.show());
    let r = run_json(
        &["--delay", "30ms", "--jitter", "none", "-n", "2"],
        "exit 1",
    );
    assert_eq!(r.delays(), [30], "{}", r.show());
}

#[test]
fn delay_accepts_bare_and_fractional_seconds() {
    let r = run_json(&["-d", "0.05", "--jitter", "none", "-n", "2"], "exit 1");
    assert_eq!(r.delays(), [50], "{}", r.show());
    let text = explain(&["-d", "1.5", "--jitter", "none", "-n", "2"]);
    assert_eq!(
        schedule(&text)[0].max,
        Duration::from_millis(1500),
        "{text}"
    );
}

#[test]
fn delay_zero_retries_at_once() {
    let r = run_json(&["-d", "0", "-n", "4"], "exit 1");
    assert_eq!(r.delays(), [0, 0, 0], "{}", r.show());
}

#[test]
fn each_backoff_kind_follows_its_formula_in_explain() {
    let secs = |v: &[u64]| -> Vec<(u128, u128)> {
        v.iter()
            .map(|s| (u128::from(*s) * 1000, u128::from(*s) * 1000))
            .collect()
    };
    for (kind, want) in [
        ("exponential", [1, 2, 4, 8, 16, 32]),
        ("linear", [1, 2, 3, 4, 5, 6]),
        ("constant", [1, 1, 1, 1, 1, 1]),
        ("fibonacci", [1, 2, 3, 5, 8, 13]),
    ] {
        let text = explain(&["-b", kind, "-d", "1s", "-n", "7", "--jitter", "none"]);
        assert_eq!(bounds_ms(&text), secs(&want), "{kind}: {text}");
    }
}

#[test]
fn the_default_backoff_is_exponential_with_factor_2() {
    let text = explain(&["-d", "1s", "-n", "5", "--jitter", "none"]);
    assert_eq!(
        bounds_ms(&text),
        [(1000, 1000), (2000, 2000), (4000, 4000), (8000, 8000)],
        "{text}"
    );
}

#[test]
fn each_backoff_kind_is_what_the_loop_sleeps() {
    for (kind, want) in [
        ("exponential", vec![10, 20, 40, 80]),
        ("linear", vec![10, 20, 30, 40]),
        ("constant", vec![10, 10, 10, 10]),
        ("fibonacci", vec![10, 20, 30, 50]),
    ] {
        let r = run_json(
            &[
                "--backoff",
                kind,
                "-d",
                "10ms",
                "--jitter",
                "none",
                "-n",
                "5",
            ],
            "exit 1",
        );
        assert_eq!(r.delays(), want, "{kind}: {}", r.show());
    }
}

#[test]
fn factor_multiplies_exponential_backoff_fractions_included() {
    let text = explain(&["--factor", "3", "-d", "1s", "-n", "5", "--jitter", "none"]);
    assert_eq!(
        bounds_ms(&text),
        [(1000, 1000), (3000, 3000), (9000, 9000), (27000, 27000)],
        "{text}"
    );
    let text = explain(&["--factor", "1.5", "-d", "2s", "-n", "5", "--jitter", "none"]);
    assert_eq!(
        bounds_ms(&text),
        [(2000, 2000), (3000, 3000), (4500, 4500), (6750, 6750)],
        "{text}"
    );
    let text = explain(&["--factor", "1", "-d", "2s", "-n", "4", "--jitter", "none"]);
    assert_eq!(
        bounds_ms(&text),
        [(2000, 2000), (2000, 2000), (2000, 2000)],
        "{text}"
    );
    let r = run_json(
        &[
            "--factor", "1.5", "-d", "20ms", "--jitter", "none", "-n", "4",
        ],
        "exit 1",
    );
    assert_eq!(r.delays(), [20, 30, 45], "{}", r.show());
}

#[test]
fn max_delay_caps_every_delay() {
    let text = explain(&[
        "-d",
        "1s",
        "--max-delay",
        "5s",
        "-n",
        "7",
        "--jitter",
        "none",
    ]);
    let want: Vec<(u128, u128)> = [1000, 2000, 4000, 5000, 5000, 5000]
        .iter()
        .map(|ms| (*ms, *ms))
        .collect();
    assert_eq!(bounds_ms(&text), want, "{text}");
    let r = run_json(
        &[
            "-d",
            "10ms",
            "--max-delay",
            "25ms",
            "--jitter",
            "none",
            "-n",
            "5",
        ],
        "exit 1",
    );
    assert_eq!(r.delays(), [10, 20, 25, 25], "{}", r.show());
}

#[test]
fn max_delay_caps_jittered_delays_too() {
    for jitter in ["full", "equal", "decorrelated", "50%"] {
        let text = explain(&[
            "-d",
            "1s",
            "--max-delay",
            "3s",
            "-n",
            "8",
            "--jitter",
            jitter,
        ]);
        for row in schedule(&text) {
            assert!(row.max <= Duration::from_secs(3), "{jitter}: {text}");
            assert!(row.min <= row.max, "{jitter}: {text}");
        }
        let r = run_json(
            &[
                "-d",
                "10ms",
                "--max-delay",
                "15ms",
                "-n",
                "6",
                "--jitter",
                jitter,
            ],
            "exit 1",
        );
        let delays = r.delays();
        assert_eq!(delays.len(), 5, "{jitter}: {}", r.show());
        assert!(delays.iter().all(|d| *d <= 15), "{jitter}: {delays:?}");
    }
}

#[test]
fn delays_list_replaces_backoff_and_its_last_value_repeats() {
    let r = run_json(
        &["--delays", "10ms,30ms", "--jitter", "none", "-n", "5"],
        "exit 1",
    );
    assert_eq!(r.delays(), [10, 30, 30, 30], "{}", r.show());
    let text = explain(&["--delays", "1s,5s,30s", "--jitter", "none", "-n", "6"]);
    assert_eq!(
        bounds_ms(&text),
        [
            (1000, 1000),
            (5000, 5000),
            (30000, 30000),
            (30000, 30000),
            (30000, 30000)
        ],
        "{text}"
    );
}

#[test]
fn delays_list_is_jittered_like_any_schedule() {
    let text = explain(&["--delays", "1s,4s", "--jitter", "full", "-n", "4"]);
    assert_eq!(
        bounds_ms(&text),
        [(0, 1000), (0, 4000), (0, 4000)],
        "{text}"
    );
}

/// Delays of one run with `-b constant -d 40ms` and this jitter, five retries.
fn constant_40ms(jitter: &str, extra: &[&str]) -> (Vec<u64>, Run) {
    let mut args = vec!["-b", "constant", "-d", "40ms", "-n", "6", "-j", jitter];
    args.extend(extra);
    let r = run_json(&args, "exit 1");
    let delays = r.delays();
    assert_eq!(delays.len(), 5, "{}", r.show());
    (delays, r)
}

#[test]
fn no_jitter_sleeps_the_exact_backoff() {
    let (delays, r) = constant_40ms("none", &[]);
    assert_eq!(delays, [40; 5], "{}", r.show());
}

#[test]
fn full_jitter_stays_between_zero_and_the_delay() {
    let (delays, r) = constant_40ms("full", &[]);
    assert!(delays.iter().all(|d| *d <= 40), "{delays:?} {}", r.show());
    let (delays, _) = constant_40ms("full", &["--seed", "5"]);
    assert!(
        delays.iter().any(|d| *d != delays[0]),
        "full jitter spreads: {delays:?}"
    );
}

#[test]
fn the_default_jitter_is_full() {
    let text = explain(&["-d", "1s", "-n", "4"]);
    assert_eq!(
        bounds_ms(&text),
        [(0, 1000), (0, 2000), (0, 4000)],
        "{text}"
    );
}

#[test]
fn equal_jitter_stays_between_half_the_delay_and_the_delay() {
    let (delays, r) = constant_40ms("equal", &[]);
    assert!(
        delays.iter().all(|d| (20..=40).contains(d)),
        "{delays:?} {}",
        r.show()
    );
    let text = explain(&["-d", "1s", "-n", "4", "--jitter", "equal"]);
    assert_eq!(
        bounds_ms(&text),
        [(500, 1000), (1000, 2000), (2000, 4000)],
        "{text}"
    );
}

#[test]
fn proportional_jitter_stays_within_n_percent_of_the_delay() {
    let (delays, r) = constant_40ms("25%", &[]);
    assert!(
        delays.iter().all(|d| (30..=50).contains(d)),
        "{delays:?} {}",
        r.show()
    );
    let text = explain(&["-d", "1s", "-n", "3", "--jitter", "20%"]);
    assert_eq!(bounds_ms(&text), [(800, 1200), (1600, 2400)], "{text}");
}

#[test]
fn proportional_jitter_at_the_cap_stays_below_it_and_spread() {
    let (delays, r) = constant_40ms("20%", &["--max-delay", "40ms", "--seed", "3"]);
    assert!(delays.iter().all(|d| *d <= 40), "{delays:?} {}", r.show());
    assert!(
        delays.iter().any(|d| *d != delays[0]),
        "delays at the cap stay spread: {delays:?}"
    );
}

#[test]
fn decorrelated_jitter_grows_from_the_previous_delay_within_the_cap() {
    let r = run_json(
        &[
            "-d",
            "10ms",
            "--max-delay",
            "60ms",
            "-n",
            "7",
            "--jitter",
            "decorrelated",
        ],
        "exit 1",
    );
    let delays = r.delays();
    assert_eq!(delays.len(), 6, "{}", r.show());
    let mut prev = 10u64;
    for d in &delays {
        assert!(*d >= 10, "at least --delay: {delays:?}");
        assert!(*d <= 60, "at most --max-delay: {delays:?}");
        // prev was floored to whole milliseconds: allow for it.
        assert!(*d <= prev * 3 + 3, "at most 3 × the previous: {delays:?}");
        prev = *d;
    }
}

#[test]
fn decorrelated_jitter_in_explain_starts_at_delay_and_grows_by_three() {
    let text = explain(&["-d", "1s", "-n", "4", "--jitter", "decorrelated"]);
    let rows = bounds_ms(&text);
    assert_eq!(rows[0], (1000, 3000), "{text}");
    assert!(rows.iter().all(|(lo, _)| *lo == 1000), "{text}");
    assert!(rows.windows(2).all(|w| w[1].1 >= w[0].1), "{text}");
}

#[test]
fn the_same_seed_gives_the_same_delays() {
    let args = ["-d", "30ms", "-n", "5", "--seed", "42"];
    let a = run_json(&args, "exit 1").delays();
    let b = run_json(&args, "exit 1").delays();
    assert_eq!(a.len(), 4);
    assert_eq!(a, b, "the same seed, the same delays");
    let c = run_json(&["-d", "30ms", "-n", "5", "--seed", "43"], "exit 1").delays();
    assert_ne!(a, c, "another seed, other delays");
}

/// A seeded run sleeps the same delays in every release of retry (issue 48): these are the
/// first draws of `--seed 42`'s generator, as --explain shows them too.
#[test]
fn a_seeded_run_sleeps_the_same_delays_in_every_release() {
    let args = ["-d", "30ms", "-n", "5", "--seed", "42"];
    let r = run_json(&args, "exit 1");
    assert_eq!(r.delays(), [20, 57, 51, 150], "{}", r.show());
}

#[test]
fn the_same_seed_gives_the_same_decorrelated_delays() {
    let args = [
        "-d",
        "5ms",
        "-n",
        "5",
        "--seed",
        "7",
        "--jitter",
        "decorrelated",
    ];
    let a = run_json(&args, "exit 1").delays();
    let b = run_json(&args, "exit 1").delays();
    assert_eq!(a, b);
}

#[test]
fn explain_with_a_seed_shows_the_delays_the_run_sleeps() {
    let args = [
        "-d", "40ms", "-n", "5", "--seed", "1234", "--jitter", "equal",
    ];
    let text = explain(&args);
    let shown: Vec<u64> = schedule(&text)
        .iter()
        .map(|r| r.exact.expect("an exact delay with --seed").as_millis() as u64)
        .collect();
    let r = run_json(&args, "exit 1");
    assert_eq!(shown, r.delays(), "{text}\n{}", r.show());
}

#[test]
fn the_default_cap_rises_to_the_longest_delay_asked_for() {
    let text = explain(&["-d", "2m", "-n", "3"]);
    assert_eq!(bounds_ms(&text), [(0, 120_000), (0, 120_000)], "{text}");
    assert!(warnings(&text).is_empty(), "{text}");
    let text = explain(&["--delays", "1s,5s,2m", "-n", "5", "--jitter", "none"]);
    let rows = bounds_ms(&text);
    assert_eq!(rows.last(), Some(&(120_000, 120_000)), "{text}");
    let r = run(&["-d", "2m", "-n", "1", "--", "true"]);
    assert_eq!(r.code(), Some(0), "one attempt, no wait: {}", r.show());
}

#[test]
fn an_explicit_max_delay_caps_a_longer_delay_and_explain_warns() {
    let text = explain(&[
        "-d",
        "10s",
        "--max-delay",
        "5s",
        "--jitter",
        "none",
        "-n",
        "2",
    ]);
    assert_eq!(bounds_ms(&text), [(5000, 5000)], "{text}");
    let w = warnings(&text);
    assert!(
        w.iter()
            .any(|l| l.contains("--max-delay 5s") && l.contains("--delay 10s")),
        "{w:?}"
    );
    let r = run_json(
        &[
            "-d",
            "300ms",
            "--max-delay",
            "20ms",
            "--jitter",
            "none",
            "-n",
            "2",
        ],
        "exit 1",
    );
    assert_eq!(r.delays(), [20], "{}", r.show());
}
