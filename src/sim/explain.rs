//! `retry --explain --fleet N`: what N processes running this policy do to a service that is
//! down for a while, simulated with the policy's own code, beside the same policy without
//! jitter and without (or with) shared state.

use std::fmt::Write as _;
use std::io::IsTerminal;
use std::time::Duration;

use super::fleet::{CALL, Report, Sharing, World, simulate};
use crate::policy::backoff::Jitter;
use crate::policy::duration::human;
use crate::policy::shared::SharedSettings;
use crate::policy::{Fleet, Policy};

/// Columns of the chart.
const WIDTH: usize = 60;
/// Rows of the chart.
const HEIGHT: usize = 4;

/// The most runs of the job one simulated variant may start: the time a simulation takes
/// grows with them (about a microsecond each, four variants), its memory does not.
pub const MOST_RUNS: u128 = 50_000_000;

/// The whole explanation, as printed; or, when the fleet would take too long to simulate,
/// why, with the limit.
pub fn fleet(policy: &Policy, fleet: Fleet) -> Result<String, String> {
    let world = World::cron(
        usize::try_from(fleet.hosts).unwrap_or(usize::MAX),
        fleet.every,
        fleet.outage,
        policy.seed.unwrap_or(1),
    );
    let state = policy.state.as_ref().map(|s| &s.shared);
    let keyed = SharedSettings::default();
    let runs = super::fleet::runs(policy, state.or(Some(&keyed)), &world);
    if runs > MOST_RUNS {
        return Err(format!(
            "--fleet {} with --every {} through --outage {} is {runs} runs of the job to \
             simulate; the most is {MOST_RUNS}: give fewer processes, a longer --every or a \
             shorter --outage",
            fleet.hosts,
            human(fleet.every),
            human(fleet.outage)
        ));
    }
    // A key is one state for the fleet with --state, else a state per host.
    let sharing = match &policy.state {
        Some(s) if s.store.is_some() => Sharing::Fleet,
        Some(_) => Sharing::PerHost,
        None => Sharing::None,
    };
    let mut plain = policy.clone();
    plain.backoff.jitter = Jitter::None;
    let mut rows = vec![
        ("this policy", simulate(policy, sharing, state, &world)),
        ("without jitter", simulate(&plain, sharing, state, &world)),
    ];
    match state {
        Some(_) => rows.push((
            // The adaptive delay needs a key: without one, its exponential fallback.
            if policy.adaptive.is_some() {
                "exponential, no --key"
            } else {
                "without --key"
            },
            simulate(policy, Sharing::None, None, &world),
        )),
        None => {
            // What a key would do, with the default breaker and budget.
            rows.push((
                "with --key (each host)",
                simulate(policy, Sharing::PerHost, Some(&keyed), &world),
            ));
            rows.push((
                "with --key --state",
                simulate(policy, Sharing::Fleet, Some(&keyed), &world),
            ));
        }
    }
    let mut out = String::new();
    let _ = writeln!(
        out,
        "Fleet: {} processes, each running the job every {} (first runs spread over it),\n\
         against one service that is down for {}, then up; a call takes {}.\n\
         Simulated with retry's own {}, jitter, breaker and budget (seed {}).\n",
        fleet.hosts,
        human(fleet.every),
        human(fleet.outage),
        human(CALL),
        if policy.adaptive.is_some() {
            "adaptive delay"
        } else {
            "backoff"
        },
        world.seed
    );
    for (a, b, c, d, e, f) in [
        ("calls in", "calls", "peak", "peak", "runs", "all back"),
        (
            "outage",
            "after",
            "calls/s",
            "retries/s",
            "refused",
            "after recovery",
        ),
    ] {
        let _ = writeln!(out, "  {:<24}{a:>10} {b:>10} {c:>9} {d:>9} {e:>8}  {f}", "");
    }
    for (name, r) in &rows {
        let back = r.last_success.map_or_else(|| "not yet".to_string(), human);
        let _ = writeln!(
            out,
            "  {name:<24}{:>10} {:>10} {:>9} {:>9} {:>8}  {back}",
            r.calls_during, r.calls_after, r.peak_per_second, r.peak_retries_per_second, r.refused
        );
    }
    let colour = std::io::stdout().is_terminal()
        && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty());
    let _ = writeln!(
        out,
        "\nCalls per second over time, this policy (each column the mean over {})",
        human(rows[0].1.bucket)
    );
    chart(&mut out, &rows[0].1, fleet.outage, colour);
    Ok(out)
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
