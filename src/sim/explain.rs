//! `retry --explain --fleet N`: what N processes running this policy do to a service that is
//! down for a while, simulated with the policy's own code, beside the same policy without
//! jitter and without (or with) shared state: as a table with its assumptions above it, or
//! as JSON lines (`--log-format json`).

use std::fmt::Write as _;
use std::io::IsTerminal;
use std::num::NonZeroUsize;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::time::Duration;

use super::fleet::{Report, Sharing, StoreModel, World, simulate_counting};
use super::progress::Progress;
use crate::policy::backoff::Jitter;
use crate::policy::duration::human;
use crate::policy::key::FailMode;
use crate::policy::shared::KeyRules;
use crate::policy::{Fleet, LogFormat, Policy, UsageError, defaults};

/// Columns of the chart.
const WIDTH: usize = 60;
/// Rows of the chart.
const HEIGHT: usize = 4;

/// The most runs of the job one simulated variant may start: the time a simulation takes
/// grows with them (about a microsecond each, four variants), its memory does not.
pub const MOST_RUNS: u128 = 50_000_000;

/// Whether simulating `variants` takes at most [`MOST_STEPS`]; if not, why, with the limit.
fn within_steps(
    policy: &Policy,
    fleet: &Fleet,
    world: &World,
    variants: &[Variant],
) -> Result<(), UsageError> {
    let calls = super::fleet::calls(policy, world);
    let each: Vec<u128> = variants.iter().map(|v| steps(v, world, calls)).collect();
    let steps = each.iter().copied().fold(0u128, u128::saturating_add);
    let most = each.iter().copied().max().unwrap_or(0);
    if steps <= MOST_STEPS && most <= MOST_ROW_STEPS {
        return Ok(());
    }
    Err(UsageError(format!(
        "--fleet {} with --every {} through --outage {} is about {steps} steps to simulate, \
         {most} for its largest row (about {calls} calls without a key, each a step; with a \
         key, each run or call several, as it reads and writes the key's state); the most is \
         {MOST_STEPS}, {MOST_ROW_STEPS} for one row: give fewer processes, fewer attempts or \
         longer delays, a longer --every or a shorter --outage",
        fleet.processes,
        human(fleet.every),
        human(fleet.outage)
    )))
}

/// The most steps the variants of one explanation may take ([`steps`]): about a minute of
/// one core (measured: 30 to 35 ns a step, two variants at once on two cores), so that the
/// whole answer takes half of it on two.
pub const MOST_STEPS: u128 = 1_800_000_000;

/// The most steps one variant may take: it runs on one core, about 30 s.
pub const MOST_ROW_STEPS: u128 = 800_000_000;

/// About what simulating a variant costs, in steps of the time a call without a key takes
/// (measured: a run or a call with a key takes from 2 to 60 of them), given the `calls` the
/// fleet makes without a key. A breaker cuts the calls into an outage to a few, leaving the
/// runs; a budget leaves about one call a run; a key's outcomes kept for the adaptive delay
/// make each operation on the state dearer.
fn steps(v: &Variant, world: &World, calls: u128) -> u128 {
    let runs = super::fleet::runs(v.policy, v.state, world);
    let Some(s) = v.state.filter(|_| v.sharing != Sharing::None) else {
        return calls;
    };
    let history = s.history || v.policy.adaptive.is_some();
    // A store that answers at a rate: every run asks it, however little it keeps.
    let queued = v.sharing == Sharing::Fleet && world.store.is_some();
    match (s.breaker.enabled(), s.budget.enabled(), history) {
        (false, false, false) if queued => runs.saturating_mul(13).max(calls),
        // Nothing shared: stepped as without a key.
        (false, false, false) => calls,
        (true, _, false) => runs.saturating_mul(2),
        (true, _, true) => runs.saturating_mul(10),
        (false, true, false) => runs.saturating_mul(13),
        (false, true, true) => runs.saturating_mul(60),
        (false, false, true) => calls.saturating_mul(60),
    }
}

/// The `--state` store the fleet's rows with one state for the fleet use: the policy's, or
/// with no `--state`, one with the default timeout and fail mode; at `--store-rate`.
fn store_model(policy: &Policy, fleet: &Fleet) -> StoreModel {
    let remote = policy.state.as_ref().and_then(|s| s.store.as_ref());
    StoreModel {
        rate: fleet.store_rate,
        timeout: remote.map_or(defaults::STATE_TIMEOUT, |r| r.timeout),
        fail: remote.map_or(defaults::STATE_FAIL, |r| r.fail),
    }
}

/// The whole explanation, as printed (text, or JSON lines with `--log-format json`); or,
/// when the fleet would take too long to simulate, why, with the limit.
pub fn fleet(policy: &Policy, fleet: Fleet) -> Result<String, UsageError> {
    let world = World {
        processes: usize::try_from(fleet.processes).unwrap_or(usize::MAX),
        hosts: usize::try_from(fleet.hosts).unwrap_or(usize::MAX),
        every: fleet.every,
        splay: fleet.splay,
        repeat: true,
        outage: fleet.outage,
        call: fleet.call,
        seed: policy.seed.unwrap_or(1),
        store: Some(store_model(policy, &fleet)),
    };
    let state = policy.state.as_ref().map(|s| &s.rules);
    let keyed = KeyRules::default();
    let runs = super::fleet::runs(policy, state.or(Some(&keyed)), &world);
    if runs > MOST_RUNS {
        return Err(UsageError(format!(
            "--fleet {} with --every {} through --outage {} is {runs} runs of the job to \
             simulate; the most is {MOST_RUNS}: give fewer processes, a longer --every or a \
             shorter --outage",
            fleet.processes,
            human(fleet.every),
            human(fleet.outage)
        )));
    }
    // A key is one state for the fleet with --state, else a state per host.
    let sharing = match &policy.state {
        Some(s) if s.store.is_some() => Sharing::Fleet,
        Some(_) => Sharing::PerHost,
        None => Sharing::None,
    };
    let mut plain = policy.clone();
    plain.backoff.jitter = Jitter::None;
    let mut variants = vec![
        Variant::new("this policy", policy, sharing, state),
        Variant::new("without jitter", &plain, sharing, state),
    ];
    match state {
        // The adaptive delay needs a key: without one, its exponential fallback.
        Some(_) if policy.adaptive.is_some() => variants.push(Variant::new(
            "exponential, no --key",
            policy,
            Sharing::None,
            None,
        )),
        Some(_) => variants.push(Variant::new("without --key", policy, Sharing::None, None)),
        None => {
            // What a key would do, with the default breaker and budget.
            variants.push(Variant::new(
                "with --key (each host)",
                policy,
                Sharing::PerHost,
                Some(&keyed),
            ));
            variants.push(Variant::new(
                "with --key --state",
                policy,
                Sharing::Fleet,
                Some(&keyed),
            ));
        }
    }
    within_steps(policy, &fleet, &world, &variants)?;
    let total = variants
        .iter()
        .map(|v| super::fleet::runs(v.policy, v.state, &world))
        .sum::<u128>();
    let mut progress = Progress::on_stderr(
        u64::try_from(total).unwrap_or(u64::MAX),
        policy.log.level >= 1,
    );
    let reports = simulate_all(&variants, &world, &mut progress);
    progress.finish();
    let rows = variants.iter().map(|v| v.name).zip(reports).collect();
    let simulated = Simulated {
        policy,
        fleet,
        world,
        sharing,
        rows,
    };
    Ok(match policy.log.format {
        LogFormat::Json => json(&simulated),
        LogFormat::Text => text(&simulated),
    })
}

/// One variant of the policy, a row of the table.
pub struct Variant<'a> {
    pub name: &'static str,
    pub policy: &'a Policy,
    pub sharing: Sharing,
    pub state: Option<&'a KeyRules>,
}

impl<'a> Variant<'a> {
    pub fn new(
        name: &'static str,
        policy: &'a Policy,
        sharing: Sharing,
        state: Option<&'a KeyRules>,
    ) -> Variant<'a> {
        Variant {
            name,
            policy,
            sharing,
            state,
        }
    }
}

/// Simulates every variant, as many at once as there are cores, and ticks `progress` with the
/// runs of the job started meanwhile. Those without a key first: they make the most calls,
/// so the rest fill in beside them.
pub fn simulate_all(variants: &[Variant], world: &World, progress: &mut Progress) -> Vec<Report> {
    let started = AtomicU64::new(0);
    let mut order: Vec<usize> = (0..variants.len()).collect();
    order.sort_by_key(|&i| variants[i].sharing != Sharing::None);
    let next = AtomicUsize::new(0);
    let threads = std::thread::available_parallelism()
        .map_or(1, NonZeroUsize::get)
        .min(variants.len());
    let mut reports: Vec<Option<Report>> = vec![None; variants.len()];
    std::thread::scope(|scope| {
        let (done, finished) = mpsc::channel();
        for _ in 0..threads {
            let done = done.clone();
            let (order, next, started) = (&order, &next, &started);
            scope.spawn(move || {
                while let Some(&i) = order.get(next.fetch_add(1, Ordering::Relaxed)) {
                    let v = &variants[i];
                    let report = simulate_counting(v.policy, v.sharing, v.state, world, started);
                    if done.send((i, report)).is_err() {
                        return;
                    }
                }
            });
        }
        drop(done);
        let mut left = variants.len();
        while left > 0 {
            match finished.recv_timeout(TICK) {
                Ok((i, report)) => {
                    reports[i] = Some(report);
                    left -= 1;
                }
                Err(RecvTimeoutError::Timeout) => {}
                // A thread that panicked: the scope passes its panic on.
                Err(RecvTimeoutError::Disconnected) => break,
            }
            progress.tick(started.load(Ordering::Relaxed));
        }
    });
    reports.into_iter().map(Option::unwrap_or_default).collect()
}

/// How often the progress line is brought up to date.
const TICK: Duration = Duration::from_millis(100);

/// What was simulated, and what came of it: a row per variant of the policy.
struct Simulated<'a> {
    policy: &'a Policy,
    fleet: Fleet,
    world: World,
    sharing: Sharing,
    rows: Vec<(&'static str, Report)>,
}

/// Where the simulated processes keep the key's state, in words.
fn state_words(sharing: Sharing, fleet: &Fleet) -> String {
    match sharing {
        Sharing::None => "none (no --key)".into(),
        Sharing::Fleet => "--key with --state: one state for the fleet".into(),
        Sharing::PerHost if fleet.hosts == fleet.processes => {
            "--key without --state: each host its own state".into()
        }
        Sharing::PerHost => format!(
            "--key without --state: the {} processes on each host share its state",
            per_host(fleet)
        ),
    }
}

/// The `--state` store's rate, and what a run does that cannot wait for it, in words ending
/// a line; nothing when no row has one.
fn store_words(sharing: Sharing, fleet: &Fleet, store: &StoreModel) -> String {
    let whose = match sharing {
        Sharing::Fleet => "The store",
        Sharing::None => "In the row with --key --state, the store",
        Sharing::PerHost => return String::new(),
    };
    let fail = match store.fail {
        FailMode::Open => "goes on with its host's state (--state-fail open)",
        FailMode::Closed => "exits 75 without running (--state-fail closed)",
    };
    let said = format!(
        "{whose} answers {} script calls/s for the key (--store-rate); a run whose calls wait \
         longer than --state-timeout {} {fail}.",
        fleet.store_rate,
        human(store.timeout)
    );
    let mut out = String::new();
    let mut line = 0;
    for word in said.split(' ') {
        if line > 0 && line + 1 + word.len() > WRAP {
            out.push('\n');
            line = 0;
        } else if line > 0 {
            out.push(' ');
            line += 1;
        }
        out.push_str(word);
        line += word.len();
    }
    out.push('\n');
    out
}

/// The longest line of the assumptions a sentence is wrapped to.
const WRAP: usize = 95;

/// Processes a host, as a number or a range.
fn per_host(fleet: &Fleet) -> String {
    let (most, least) = (
        fleet.processes.div_ceil(fleet.hosts.max(1)),
        fleet.processes / fleet.hosts.max(1),
    );
    if most == least {
        most.to_string()
    } else {
        format!("{least} or {most}")
    }
}

/// The table as text: the assumptions simulated, a row for each policy compared, and the
/// chart of the first.
fn text(simulated: &Simulated) -> String {
    let Simulated {
        policy,
        fleet,
        rows,
        ..
    } = simulated;
    let mut out = String::new();
    assumptions(&mut out, simulated);
    table(&mut out, rows);
    let colour = crate::report::log::colour(policy.log.color, std::io::stdout().is_terminal());
    let _ = writeln!(
        out,
        "\nCalls per second over time, this policy (each column the mean over {})",
        human(rows[0].1.bucket)
    );
    chart(&mut out, &rows[0].1, fleet.outage, colour);
    out
}

/// The assumptions simulated: the fleet, its starts, the outage, where the key's state is
/// kept, and how it was simulated.
fn assumptions(out: &mut String, simulated: &Simulated) {
    let Simulated {
        policy,
        fleet,
        world,
        sharing,
        ..
    } = simulated;
    let starts = starts(fleet);
    let hosts = match fleet.hosts {
        h if h == fleet.processes => ", one a host".to_string(),
        1 => " on 1 host".to_string(),
        h => format!(" on {h} hosts"),
    };
    let _ = writeln!(
        out,
        "Fleet: {} processes{hosts}, each running the job every {}; a call takes {}.\n\
         {starts}.\n\
         The service is down for {}, then up.\n\
         State: {}.\n\
         {}\
         Simulated with retry's own {}, jitter, breaker and budget (seed {}).\n{}",
        fleet.processes,
        human(fleet.every),
        human(fleet.call),
        human(fleet.outage),
        state_words(*sharing, fleet),
        store_words(
            *sharing,
            fleet,
            &world.store.unwrap_or(store_model(policy, fleet))
        ),
        if policy.adaptive.is_some() {
            "adaptive delay"
        } else {
            "backoff"
        },
        world.seed,
        if super::fleet::in_groups(policy, world) {
            "Processes that share no state were stepped apart, in groups that draw their own \
             random numbers:\nevery run simulated, none sampled; other draws than one queue's, \
             from the same distribution.\n"
        } else {
            ""
        }
    );
}

/// When the processes start, in words. The splay is what the real runs do (--splay, 0 unless
/// given): the assumption a reader most needs to check, and the remedy when it is 0.
fn starts(fleet: &Fleet) -> String {
    if fleet.splay.is_zero() {
        "Every process starts at the same second, as cron does on every host; --splay DUR \
         spreads real runs"
            .to_string()
    } else if fleet.splay == fleet.every {
        format!(
            "First runs spread over the {} (--splay {})",
            human(fleet.splay),
            human(fleet.splay)
        )
    } else {
        format!(
            "Each process starts within {} of the tick (--splay {})",
            human(fleet.splay),
            human(fleet.splay)
        )
    }
}

/// The table: its two header lines, a row for each policy compared, and what its columns
/// mean.
fn table(out: &mut String, rows: &[(&'static str, Report)]) {
    for (a, b, c, d, e, l, f, g, h) in [
        (
            "calls in", "calls", "peak", "peak", "runs", "shared", "calls", "good-", "all back",
        ),
        (
            "outage",
            "after",
            "calls/s",
            "retries/s",
            "refused",
            "lost",
            "/job",
            "put",
            "after recovery",
        ),
    ] {
        let _ = writeln!(
            out,
            "  {:<24}{a:>10} {b:>10} {c:>9} {d:>9} {e:>8} {l:>7} {f:>6} {g:>6}  {h}",
            ""
        );
    }
    for (name, r) in rows {
        let back = r.last_success.map_or_else(|| "not yet".to_string(), human);
        let _ = writeln!(
            out,
            "  {name:<24}{:>10} {:>10} {:>9} {:>9} {:>8} {:>7} {:>6.2} {:>5.0}%  {back}",
            r.calls_during,
            r.calls_after,
            r.peak_per_second,
            r.peak_retries_per_second,
            r.refused,
            r.lost_store,
            r.amplification(),
            r.goodput() * 100.0,
        );
    }
    let _ = writeln!(
        out,
        "\n  shared lost: runs that lost the shared state, their calls to the store queued past\n  \
         --state-timeout; calls/job: calls per run of the job (refused runs make none); goodput:\n  \
         the share of calls that succeeded; all back: from the recovery until every process had\n  \
         succeeded once"
    );
}

/// One JSON object of assumptions, then one per row of the table.
fn json(simulated: &Simulated) -> String {
    let Simulated {
        policy,
        fleet,
        world,
        sharing,
        rows,
    } = simulated;
    let secs = |d: Duration| d.as_secs_f64();
    let mut out = String::new();
    let assumptions = serde_json::json!({
        "assumptions": {
            "processes": fleet.processes,
            "hosts": fleet.hosts,
            "every_s": secs(fleet.every),
            "splay_s": secs(fleet.splay),
            "outage_s": secs(fleet.outage),
            "call_time_s": secs(fleet.call),
            "state": match sharing {
                Sharing::None => "none",
                Sharing::PerHost => "per host",
                Sharing::Fleet => "fleet",
            },
            "delay": if policy.adaptive.is_some() { "adaptive" } else { "backoff" },
            "store_rate_per_s": fleet.store_rate,
            "state_timeout_s": world.store.map(|m| secs(m.timeout)),
            "state_fail": world.store.map(|m| match m.fail {
                FailMode::Open => "open",
                FailMode::Closed => "closed",
            }),
            "simulated_s": rows.first().map_or(0.0, |(_, r)| secs(r.horizon)),
            "seed": world.seed,
        }
    });
    let _ = writeln!(out, "{assumptions}");
    for (name, r) in rows {
        let row = serde_json::json!({
            "row": name,
            "calls_in_outage": r.calls_during,
            "calls_after": r.calls_after,
            "peak_calls_per_s": r.peak_per_second,
            "peak_retries_per_s": r.peak_retries_per_second,
            "runs_refused": r.refused,
            "runs_lost_store": r.lost_store,
            "all_back_s": r.last_success.map(secs),
            "amplification": r.amplification(),
            "goodput": r.goodput(),
            "jobs": r.jobs,
        });
        let _ = writeln!(out, "{row}");
    }
    out
}

/// A chart of calls per second, `HEIGHT` rows of block characters, the outage in red on a
/// terminal.
fn chart(out: &mut String, r: &Report, outage: Duration, colour: bool) {
    const BLOCKS: [char; 9] = [' ', '▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];
    let per_bucket = r.bucket.as_secs_f64();
    // The timeline has one bucket per 1/60 of the simulated time: a column each.
    let rates: Vec<f64> = r
        .timeline
        .iter()
        .take(WIDTH)
        .map(|&calls| calls as f64 / per_bucket)
        .collect();
    let top = rates
        .iter()
        .copied()
        .fold(0.0, f64::max)
        .max(f64::MIN_POSITIVE);
    let outage_end = (outage.as_secs_f64() / per_bucket) as usize;
    let label_width = 9;
    for row in (0..HEIGHT).rev() {
        let label = if row == HEIGHT - 1 {
            format!("{top:.0}/s")
        } else {
            String::new()
        };
        let blocks: Vec<usize> = rates
            .iter()
            .map(|rate| {
                let eighths = (rate / top * (HEIGHT * 8) as f64).round() as usize;
                match eighths.saturating_sub(row * 8).min(8) {
                    // A column with any calls shows at least a sliver.
                    0 if row == 0 && *rate > 0.0 => 1,
                    here => here,
                }
            })
            .collect();
        // No blanks at the end of a line.
        let shown = blocks.iter().rposition(|&b| b > 0).map_or(0, |i| i + 1);
        let _ = write!(out, "  {label:>label_width$}");
        if shown > 0 {
            out.push(' ');
        }
        let mut in_red = false;
        for (i, &here) in blocks[..shown].iter().enumerate() {
            if colour && (i < outage_end) != in_red {
                in_red = i < outage_end;
                out.push_str(if in_red { "\x1b[31m" } else { "\x1b[0m" });
            }
            out.push(BLOCKS[here]);
        }
        if in_red {
            out.push_str("\x1b[0m");
        }
        out.push('\n');
    }
    let _ = writeln!(out, "  {:>label_width$} {}", "", "─".repeat(rates.len()));
    let mut axis = vec![' '; rates.len()];
    if let Some(c) = axis.get_mut(outage_end) {
        *c = '^';
    }
    let _ = writeln!(
        out,
        "  {:>label_width$} {}",
        "",
        axis.iter().collect::<String>().trim_end()
    );
    let _ = writeln!(
        out,
        "  {:>label_width$} 0 .. {}; ^ the service is back",
        "",
        human(r.horizon)
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Whether the four variants of a policy without a key, on a fleet of 100,000 every 10s
    /// through an hour, fit the steps allowed.
    fn fits(flags: &[&str]) -> Result<(), String> {
        let policy = crate::setup::from_flags(flags)?;
        let fleet = Fleet {
            processes: 100_000,
            hosts: 100_000,
            outage: Duration::from_secs(3600),
            every: Duration::from_secs(10),
            splay: Duration::from_secs(10),
            call: super::super::fleet::CALL,
            store_rate: crate::policy::defaults::STORE_RATE,
        };
        let world = World {
            processes: 100_000,
            hosts: 100_000,
            every: fleet.every,
            splay: fleet.splay,
            repeat: true,
            outage: fleet.outage,
            call: fleet.call,
            seed: 1,
            store: None,
        };
        let keyed = KeyRules::default();
        let variants = [
            Variant::new("a", &policy, Sharing::None, None),
            Variant::new("b", &policy, Sharing::None, None),
            Variant::new("c", &policy, Sharing::PerHost, Some(&keyed)),
            Variant::new("d", &policy, Sharing::Fleet, Some(&keyed)),
        ];
        within_steps(&policy, &fleet, &world, &variants).map_err(|e| e.0)
    }

    #[test]
    fn the_largest_fleet_fits_with_bounded_attempts_and_not_retrying_forever() {
        assert_eq!(fits(&["-n", "5"]), Ok(()));
        assert_eq!(fits(&["-n", "20"]), Ok(()));
        let why = fits(&["--forever"]).expect_err("refused");
        assert!(why.contains("the most is 1800000000"), "{why}");
        // Each of the two rows without a key would take most of a minute on its core.
        let why = fits(&["-n", "40"]).expect_err("refused");
        assert!(why.contains("800000000 for one row"), "{why}");
        // Without delays, every run calls ten times a second until the outage ends.
        assert!(fits(&["-n", "1000", "-d", "0"]).is_err());
    }

    #[test]
    fn the_calls_without_a_key_are_about_what_the_fleet_makes() {
        let policy = crate::setup::from_flags(&["-n", "5", "--jitter", "none"]).expect("a policy");
        let world = World::cron(1000, Duration::from_secs(300), Duration::from_secs(1800), 1);
        let estimated = super::super::fleet::calls(&policy, &world) as f64;
        let made = super::super::fleet::simulate(&policy, Sharing::None, None, &world);
        let made = (made.calls_during + made.calls_after) as f64;
        assert!(
            (estimated / made - 1.0).abs() < 0.1,
            "{estimated} against {made}"
        );
    }
}
