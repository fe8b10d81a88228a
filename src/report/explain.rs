//! `--explain`: the resolved policy, the schedule it implies and warnings about risky settings,
//! computed by the same backoff code that sleeps.

use std::fmt::Write as _;
use std::time::Duration;

use crate::exit::Exit;
use crate::policy::adaptive::{self, Adaptive, Params};
use crate::policy::backoff::{Backoff, Jitter, Shape, seeded};
use crate::policy::breaker::BreakerSettings;
use crate::policy::budget::BudgetSettings;
use crate::policy::duration::human;
use crate::policy::key::{FailMode, Remote};
use crate::policy::rules::NEVER_BETTER;
use crate::policy::shared::View;
use crate::policy::status::signal_name;
use crate::policy::{KeySettings, LogFormat, Origin, Origins, Policy, StdoutMode, defaults};
use crate::quote;
use crate::report::words;

/// Rows of the schedule shown before the rest is summed up.
const ROWS: u32 = 12;
/// Schedules drawn to estimate the expected waiting time.
const SAMPLES: u64 = 2000;
/// Retries simulated per schedule; past this, the last one's mean stands for the rest.
const SIMULATED: u32 = 200;

/// A key's state as `--explain` shows it: where it is kept, and what it says now (or why it
/// cannot be read).
pub struct KeyReport {
    pub place: String,
    pub view: Result<View, String>,
    /// The store's time, to show how long the breaker stays open.
    pub now: u64,
    /// What a run would find wrong with the state (a corrupt file, a directory it cannot
    /// write), though it can be shown.
    pub note: Option<String>,
    /// With a `--state` store: the time left of an open breaker the store told this host of,
    /// which refuses its runs without a call until then.
    pub remembered: Option<Duration>,
}

/// The whole explanation, as printed.
pub fn explain(p: &Policy, origins: &Origins, key: Option<&KeyReport>) -> String {
    let mut out = String::new();
    let retries = p.attempts.map(|n| n.saturating_sub(1));
    // With a key, its state first: that is what a person asking about a key wants to see.
    if let (Some(state), Some(report)) = (&p.state, key) {
        shared_state(&mut out, state, report, p.adaptive, &p.backoff);
        out.push('\n');
    }
    policy(&mut out, p, origins);
    schedule(&mut out, p, origins, retries);
    let warnings = warnings(p, retries);
    if !warnings.is_empty() {
        out.push_str("\nWarnings\n");
        for w in warnings {
            let _ = writeln!(out, "  - {}", quote::clean(&w));
        }
    }
    out
}

/// The policy, a row for each setting, each with where its value came from.
fn policy(out: &mut String, p: &Policy, origins: &Origins) {
    let command = if p.command.is_empty() {
        "(none given)".to_string()
    } else {
        p.command_line()
    };
    let opt = |d: Option<Duration>| d.map_or("none".into(), human);
    let b = &p.backoff;
    let rows = [
        ("command", command),
        ("attempts", attempts(p)),
        ("reset-after", reset_after(p)),
        ("max-time", opt(p.max_time)),
        ("attempt-timeout", opt(p.attempt_timeout)),
        ("backoff", b.shape.to_string()),
        ("delay", human(b.delay)),
        ("max-delay", human(b.max_delay)),
        ("jitter", b.jitter.to_string()),
        ("seed", p.seed.map_or("random".into(), |s| s.to_string())),
        ("success-on", p.rules.success.to_string()),
        ("retry-on", retry_on(p)),
        ("fatal-on", words::fatal_list(p)),
        ("retry-if-output", patterns(&p.output_rules.retry)),
        ("fatal-if-output", patterns(&p.output_rules.fatal)),
        ("on timeout", on_timeout(p)),
        (
            "stop-with-parent",
            if p.stop_with_parent {
                "yes: the run ends when retry's parent does".into()
            } else {
                "no".into()
            },
        ),
        ("hints", hints(p)),
        ("retry-on-http", p.http.retry.to_string()),
        ("fatal-on-http", fatal_on_http(p)),
        ("retry-after-max", human(p.retry_after_max)),
        ("stdin", value_name(p.stdin)),
        ("stdout", value_name(p.stdout)),
        ("held output", held_output(p)),
        ("log", log(p)),
        ("on-retry", hook(p.hooks.on_retry.as_deref())),
        ("on-giveup", hook(p.hooks.on_giveup.as_deref())),
        ("hook-timeout", opt(p.hooks.timeout)),
        ("summary", file(p.summary.as_deref())),
        ("metrics", file(p.metrics.as_deref())),
        ("name", p.name.clone()),
    ];
    out.push_str("Policy (where each value came from in brackets)\n");
    for (name, value) in rows {
        let origin = origin(name, p, origins);
        // A value from outside (a file name, a hook, a pattern) cannot end or hide a line.
        let (value, origin) = (quote::clean(&value), quote::clean(&origin));
        let _ = writeln!(out, "  {name:<16} {value}{origin}");
    }
}

/// The attempts row: the limit, and the retries it allows.
fn attempts(p: &Policy) -> String {
    match p.attempts {
        Some(n) => format!(
            "{n} ({} {})",
            n - 1,
            if n == 2 { "retry" } else { "retries" }
        ),
        None => "unlimited (--forever)".into(),
    }
}

/// The reset-after row: how long an attempt must run to start the run afresh.
fn reset_after(p: &Policy) -> String {
    p.reset_after.map_or("none".into(), |d| {
        format!(
            "{}: a longer attempt starts the backoff and the limit afresh",
            human(d)
        )
    })
}

/// The retry-on row: the statuses retried, of the failures the other lists leave.
fn retry_on(p: &Policy) -> String {
    match &p.rules.retry_on {
        None => "every other failure".into(),
        Some(list) if list.is_empty() => "none but what the output rules retry".into(),
        Some(list) => list.to_string(),
    }
}

/// The on-timeout row: the signal an attempt stopped gets, and SIGKILL after --kill-after.
fn on_timeout(p: &Policy) -> String {
    format!(
        "{}, then SIGKILL after {}",
        signal_name(p.kill_signal),
        human(p.kill_after)
    )
}

/// The hints row: whether each attempt gets a hint file.
fn hints(p: &Policy) -> String {
    if p.hints {
        "a private hint file for each attempt (RETRY_HINT_FILE, {hints})".into()
    } else {
        "off: no HTTP status or Retry-After is known".into()
    }
}

/// The fatal-on-http row: the HTTP statuses not retried.
fn fatal_on_http(p: &Policy) -> String {
    p.http
        .fatal
        .as_ref()
        .map_or("every other 4xx".into(), ToString::to_string)
}

/// The held-output row: what of an attempt's output waits for the run's end.
fn held_output(p: &Policy) -> String {
    match (p.output_on_failure, p.stdout) {
        (true, _) => "all of it (--output-on-failure): every attempt's stdout and \
                      stderr and retry's log, printed only if the run fails"
            .into(),
        (false, StdoutMode::Hold) => "stdout (--stdout hold): only the attempt that ends \
                                      the run writes to stdout; retried attempts' goes to \
                                      stderr"
            .into(),
        (false, StdoutMode::Pass) => "none: the command's output passes as it comes".into(),
    }
}

/// The log row: its format, where it goes, how much it says, and whether each line has the
/// time.
fn log(p: &Policy) -> String {
    format!(
        "{} to {}, {}{}",
        value_name(p.log.format),
        p.log
            .file
            .as_ref()
            .map_or("stderr".into(), |f| f.display().to_string()),
        match p.log.level {
            2.. => "verbose (-v)",
            1 => "a line per failure",
            0 => "the give-up line only (-q)",
            _ => "nothing (-qq)",
        },
        if p.log.time && p.log.format == LogFormat::Text {
            ", each line with the time"
        } else {
            ""
        }
    )
}

/// The key's breaker and budget: the settings, and the state as it stands.
fn shared_state(
    out: &mut String,
    st: &KeySettings,
    report: &KeyReport,
    p_adaptive: Option<Params>,
    backoff: &Backoff,
) {
    let _ = writeln!(
        out,
        "Shared state (key {}, {})",
        quote::quoted(&st.key),
        quote::clean(&report.place)
    );
    let s = &st.rules;
    let _ = writeln!(out, "  breaker          {}", breaker_setting(&s.breaker));
    let _ = writeln!(out, "  budget           {}", budget_setting(&s.budget));
    if let Some(store) = &st.store {
        store_setting(out, store);
    }
    if let Some(left) = report.remembered {
        let _ = writeln!(
            out,
            "  this host        remembers the breaker open for another {}, as the store told it: its runs exit {} without calling the store until then",
            human(left),
            Exit::REFUSED.status()
        );
    }
    let v = match &report.view {
        Ok(v) => v,
        Err(e) => {
            let _ = writeln!(
                out,
                "  now              cannot be read: {}",
                quote::clean(e)
            );
            return;
        }
    };
    let _ = writeln!(out, "  breaker now      {}", breaker_now(v, report.now));
    let _ = writeln!(out, "  tokens now       {:.1}", v.tokens);
    if let Some(note) = &report.note {
        let _ = writeln!(out, "  note             {}", quote::clean(note));
    }
    if let Some(params) = p_adaptive {
        adaptive_now(out, params, backoff, v, report.now);
    }
}

/// The breaker's settings in words, or how it was turned off.
fn breaker_setting(b: &BreakerSettings) -> String {
    if !b.enabled() {
        return "off (--breaker-failures 0)".into();
    }
    format!(
        "opens after {} failures in a row within {}; open {} at first, doubling up to {}",
        b.failures,
        human(b.window),
        human(b.open.min(b.open_max)),
        human(b.open_max)
    )
}

/// The budget's settings in words, or how it was turned off.
fn budget_setting(b: &BudgetSettings) -> String {
    if !b.enabled() {
        return "off (--budget-burst 0)".into();
    }
    format!(
        "{} tokens at most; a retry costs 1, a success adds {}, 1 comes back every {}",
        b.burst,
        b.ratio,
        human(b.refill)
    )
}

/// The `--state` store's line: where it is (its password redacted), how long a run waits for
/// it, and what a run does without it.
fn store_setting(out: &mut String, store: &Remote) {
    let fail = match store.fail {
        FailMode::Open => "run with this host's local state (--state-fail open)".to_string(),
        FailMode::Closed => format!(
            "exit {} without running the command (--state-fail closed)",
            Exit::REFUSED.status()
        ),
    };
    let _ = writeln!(
        out,
        "  store            {}: waits at most {} a run; when it cannot be reached, {fail}",
        store.url.redacted(),
        human(store.timeout)
    );
}

/// The breaker as it stands at `now`: closed with its count, open or half-open and for how
/// long.
fn breaker_now(v: &View, now: u64) -> String {
    let left = |t: u64| human(Duration::from_millis(t.saturating_sub(now)));
    let opened_by = match v.opened_by {
        0 => String::new(),
        1 => "; 1 failure opened it".to_string(),
        n => format!("; {n} failures in a row opened it"),
    };
    match (v.open_until, v.lease_until) {
        (Some(until), _) if until > now => {
            format!(
                "open for another {}: runs exit {}{opened_by}",
                left(until),
                Exit::REFUSED.status()
            )
        }
        (Some(_), _) => "open, and its time is up: the next run probes".into(),
        (_, Some(lease)) if lease > now => {
            format!(
                "half-open: a run is probing (lease for another {})",
                left(lease)
            )
        }
        (_, Some(_)) => "half-open, and the probe's lease expired: the next run probes".into(),
        (None, None) => format!(
            "closed, {} counted towards opening it",
            if v.failures == 1 {
                "1 failure".to_string()
            } else {
                format!("{} failures", v.failures)
            }
        ),
    }
}

/// What the adaptive delay would make of the key's history now: the estimates, and the first
/// retry's delay if the next attempt fails.
fn adaptive_now(out: &mut String, params: Params, b: &Backoff, v: &View, now: u64) {
    let e = v.history.estimate_after_failure(now, b.delay);
    let delay = Adaptive::new(params, b).next(b, 1, &e);
    let (lo, hi) = b.spread(delay, Duration::ZERO);
    let seen = e.attempts.saturating_sub(1);
    let _ = writeln!(
        out,
        "  adaptive delay   {seen} outcome{} of the last {} kept: success rate {:.2}, {:.3} attempts/s",
        if seen == 1 { "" } else { "s" },
        human(adaptive::WINDOW),
        e.p_s,
        e.lambda
    );
    let _ = writeln!(
        out,
        "                   if the next attempt fails, the first retry waits {} ({} to {} with {} jitter)",
        human(delay),
        human(lo),
        human(hi),
        b.jitter
    );
}

/// Where a row's value came from: ` (flag)`, ` (profile ci)`, ` (preset curl)`,
/// ` (default)`; nothing for the command.
fn origin(row: &str, p: &Policy, origins: &Origins) -> String {
    let keys: &[&str] = match row {
        "command" => return String::new(),
        "attempts" => &["attempts", "times", "retries", "forever"],
        "backoff" => &["backoff", "delays", "factor"],
        "on timeout" => &["kill-signal", "kill-after"],
        "log" => &["log-format", "log-file", "verbose", "quiet", "log-time"],
        "held output" => &["output-on-failure", "stdout"],
        "stop-with-parent" => &["stop-with-parent", "no-stop-with-parent"],
        _ => std::slice::from_ref(&row),
    };
    let given = keys.iter().find_map(|k| origins.get(*k));
    // A CI job's variable, which the flags and the config file override.
    if given.is_none()
        && row == "stop-with-parent"
        && std::env::var_os(crate::env::STOP_WITH_PARENT).is_some()
    {
        return format!("  (${})", crate::env::STOP_WITH_PARENT);
    }
    let default = match row {
        "name" if p.command.is_empty() => "no command given: retry's own",
        "name" => "the command's name",
        // Raised to the longest delay asked for, never below it (docs/policy.md, How long to wait).
        "max-delay" if p.backoff.max_delay != defaults::MAX_DELAY => {
            "default, raised to the longest delay asked for"
        }
        _ => "default",
    };
    match given {
        Some(o) => format!("  ({})", words::came_from(o)),
        None => format!("  ({default})"),
    }
}

/// A value of a `ValueEnum` as it is given on the command line.
fn value_name(v: impl clap::ValueEnum) -> String {
    v.to_possible_value()
        .map_or(String::new(), |p| p.get_name().to_string())
}

/// A hook's command as it runs (`sh -c …`), what looks like a credential masked, or `none`.
fn hook(command: Option<&str>) -> String {
    command.map_or("none".into(), |c| {
        crate::secrets::shown_command(&["sh", "-c", c])
    })
}

/// A report file, or `none`.
fn file(path: Option<&std::path::Path>) -> String {
    path.map_or("none".into(), |f| f.display().to_string())
}

/// Output patterns, quoted, or `none`.
fn patterns(list: &[regex::bytes::Regex]) -> String {
    if list.is_empty() {
        return "none".into();
    }
    list.iter()
        .map(|re| format!("'{}'", re.as_str()))
        .collect::<Vec<_>>()
        .join(" ")
}

/// The wait before each retry: the splay, a table of the first retries' delays, and the
/// waiting in all.
fn schedule(out: &mut String, p: &Policy, origins: &Origins, retries: Option<u32>) {
    out.push_str("\nSchedule (the wait before each retry)\n");
    if !p.splay.is_zero() {
        splay(out, p, origins);
    }
    if p.adaptive.is_some() {
        out.push_str(
            "  adaptive (experimental): learned from the key's recent outcomes, capped and \
             jittered;\n  below, the exponential delay it falls back on without the key's state\n",
        );
    }
    if retries == Some(0) {
        if p.splay.is_zero() {
            out.push_str("  one attempt only: no retries, no waiting\n");
        } else {
            out.push_str("  one attempt only: no retries\n");
        }
        return;
    }
    delay_table(out, p, retries);
    waiting_in_all(out, p, retries);
    out.push_str("  the time the attempts themselves take comes on top\n");
}

/// The wait before the first attempt (`--splay`), and where it was set if not on the command
/// line.
fn splay(out: &mut String, p: &Policy, origins: &Origins) {
    let from = match origins.get("splay") {
        Some(o @ (Origin::Profile(_) | Origin::File(_))) => {
            format!(", from {}", words::came_from(o))
        }
        _ => String::new(),
    };
    let _ = writeln!(
        out,
        "  before the first attempt: 0 to {}, at random (--splay {}{from})",
        human(p.splay),
        human(p.splay)
    );
}

/// The first [`ROWS`] retries' shortest and longest delays (with `--seed`, the very delay
/// too), then a line for the rest.
fn delay_table(out: &mut String, p: &Policy, retries: Option<u32>) {
    let b = &p.backoff;
    let exact: Option<Vec<Duration>> = p.seed.map(|seed| {
        let mut rng = seeded(seed);
        let mut s = b.schedule();
        (0..retries.unwrap_or(ROWS).min(ROWS))
            .map(|_| s.next_delay(&mut rng))
            .collect()
    });
    // Two spaces at least between the columns: a long delay reads "3h 45m 36s".
    let _ = write!(out, "  {:<7}{:>10}  {:>10}", "retry", "min", "max");
    if let Some(seed) = p.seed {
        let _ = write!(out, "   delay with --seed {seed}");
    }
    out.push('\n');
    let shown = retries.unwrap_or(ROWS).min(ROWS);
    for k in 1..=shown {
        let (lo, hi) = b.envelope(k);
        let _ = write!(out, "  {k:<7}{:>10}  {:>10}", human(lo), human(hi));
        if let Some(d) = exact.as_ref().and_then(|e| e.get(k as usize - 1)) {
            let _ = write!(out, "   {}", human(*d));
        }
        out.push('\n');
    }
    match retries {
        Some(n) if n > shown => {
            let (lo, hi) = b.envelope(n);
            let _ = writeln!(
                out,
                "  … {} more, the last between {} and {}",
                n - shown,
                human(lo),
                human(hi)
            );
        }
        None => {
            let _ = writeln!(
                out,
                "  … and so on without end, each at most {}",
                human(b.max_delay)
            );
        }
        _ => {}
    }
}

/// The waiting over all the retries, at most and expected, or that it has no bound but
/// `--max-time`.
fn waiting_in_all(out: &mut String, p: &Policy, retries: Option<u32>) {
    match retries {
        Some(n) => {
            // The splay is a wait too: up to all of it, half of it on average.
            let _ = writeln!(
                out,
                "\n  waiting in all: at most {}, expected about {}{}",
                human(worst_case(p, n).saturating_add(p.splay)),
                human(expected(p, n).saturating_add(p.splay / 2)),
                if p.splay.is_zero() {
                    ""
                } else {
                    ", the splay included"
                }
            );
            if let Some(max) = p.max_time {
                let _ = writeln!(
                    out,
                    "  (--max-time {} ends the run sooner if it comes first)",
                    human(max)
                );
            }
        }
        None => {
            let _ = writeln!(
                out,
                "\n  waiting in all: unbounded{}",
                match p.max_time {
                    Some(max) => format!(" by attempts; --max-time {} ends the run", human(max)),
                    None => String::new(),
                }
            );
        }
    }
}

/// The longest total wait over `retries` retries.
pub fn worst_case(p: &Policy, retries: u32) -> Duration {
    let mut total = Duration::ZERO;
    let mut last = None;
    for k in 1..=retries {
        let hi = p.backoff.envelope(k).1;
        // Once the envelope stops growing it stays at the cap: the rest is a multiplication.
        if last == Some(hi) && hi == p.backoff.max_delay {
            return total.saturating_add(hi.saturating_mul(retries - k + 1));
        }
        total = total.saturating_add(hi);
        last = Some(hi);
    }
    total
}

/// The mean total wait over `retries` retries, from schedules drawn with fixed seeds.
pub fn expected(p: &Policy, retries: u32) -> Duration {
    let simulated = retries.min(SIMULATED);
    let (mut sum, mut tail) = (0f64, 0f64);
    for seed in 0..SAMPLES {
        let mut rng = seeded(seed);
        let mut s = p.backoff.schedule();
        let mut last = Duration::ZERO;
        for _ in 0..simulated {
            last = s.next_delay(&mut rng);
            sum += last.as_secs_f64();
        }
        tail += last.as_secs_f64();
    }
    let rest = f64::from(retries - simulated) * tail;
    Duration::try_from_secs_f64((sum + rest) / SAMPLES as f64).unwrap_or(Duration::MAX)
}

/// How many attempts can start before `max` when every wait, the splay's included, is as short
/// (or long) as it can be.
fn attempts_fitting(p: &Policy, max: Duration, retries: u32, longest: bool) -> u32 {
    let mut total = if longest { p.splay } else { Duration::ZERO };
    for k in 1..=retries.min(100_000) {
        let (lo, hi) = p.backoff.envelope(k);
        total = total.saturating_add(if longest { hi } else { lo });
        if total >= max {
            return k;
        }
    }
    retries + 1
}

fn warnings(p: &Policy, retries: Option<u32>) -> Vec<String> {
    let mut w = Vec::new();
    let b = &p.backoff;
    // Only an explicit cap can be below a delay asked for: a default one rises to it.
    let longest = match &b.shape {
        Shape::List(list) => list.iter().max().copied().unwrap_or(b.delay),
        _ => b.delay,
    };
    if longest > b.max_delay && retries != Some(0) {
        let which = match &b.shape {
            Shape::List(_) => format!("--delays {}", human(longest)),
            _ => format!("--delay {}", human(b.delay)),
        };
        w.push(format!(
            "--max-delay {} is shorter than {which}: the cap wins, and no wait is longer than {}",
            human(b.max_delay),
            human(b.max_delay)
        ));
    }
    let no_jitter = matches!(p.backoff.jitter, Jitter::None | Jitter::Proportional(0.0));
    if no_jitter && retries != Some(0) {
        w.push(
            "--jitter none: clients that failed together will retry together, in lockstep; \
             full jitter spreads them"
                .into(),
        );
    }
    w.extend(words::warnings(p));
    w.extend(words::store_warning(p));
    if !p.rules.success.contains(0) {
        w.push(format!(
            "--success-on {} leaves out 0: an attempt that exits 0 is a failure, and a run that \
             gives up on one exits 1",
            p.rules.success
        ));
    }
    if let Some(retried) = &p.rules.retry_on {
        let both = retried.both(&p.rules.fatal_on);
        if !both.is_empty() {
            w.push(format!(
                "{both} in both {} and {}: fatal wins, so never retried",
                p.rules.sources.retry_on, p.rules.sources.fatal_on
            ));
        }
    }
    if let Some(fatal) = &p.http.fatal {
        let both = p.http.retry.both(fatal);
        if !both.is_empty() {
            w.push(format!(
                "HTTP {both} in both --retry-on-http and --fatal-on-http: fatal wins, so never retried"
            ));
        }
    }
    if retries.is_none() && p.max_time.is_none() {
        w.push("--forever without --max-time: the run may never end".into());
    }
    if let Some(list) = &p.rules.retry_on {
        for status in NEVER_BETTER
            .iter()
            .filter(|s| list.names(**s) && !p.rules.fatal_on.contains(**s))
        {
            w.push(format!(
                "--retry-on names {status}: a command that cannot be found or executed will not get better"
            ));
        }
    }
    if let (Some(max), Some(n)) = (p.max_time, retries) {
        let shortest = attempts_fitting(p, max, n, false);
        let longest = attempts_fitting(p, max, n, true);
        if shortest <= n {
            w.push(format!(
                "the schedule cannot fit --max-time {}: even with the shortest waits, only {shortest} of {} attempts can start",
                human(max),
                n + 1
            ));
        } else if longest <= n {
            w.push(format!(
                "with the longest waits, only {longest} of {} attempts start before --max-time {}",
                n + 1,
                human(max)
            ));
        }
    }
    if let Some(timeout) = p.attempt_timeout
        && p.max_time.is_some_and(|max| timeout >= max)
    {
        w.push("--attempt-timeout is not shorter than --max-time: the deadline stops the first attempt first".into());
    }
    w
}
