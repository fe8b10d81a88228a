//! `--list-keys`: the keys with state, as a table for a person or JSON lines for a script.

use std::fmt::Write as _;
use std::time::{Duration, SystemTime};

use serde::Serialize;

use crate::policy::breaker::State;
use crate::policy::shared::View;
use crate::quote;

/// One key, as listed.
pub struct Listed {
    pub key: String,
    /// The state now, or why it cannot be read.
    pub view: Result<View, String>,
    /// The store's time when it was read, in the milliseconds of the view's times.
    pub now: u64,
    /// When a run last changed the key: its file was written; in Redis, when a run last
    /// changed it or started on it.
    pub changed: Option<SystemTime>,
}

/// Where the keys are, and each key: what `state::list` finds, as plain data.
pub struct Listing {
    pub place: String,
    pub keys: Vec<Listed>,
}

/// The breaker of a key, in words and as JSON's fields.
struct Breaker {
    /// `closed`, `open`, `half-open`.
    state: &'static str,
    /// Until when it stays open, or the probe's lease runs.
    until: Option<SystemTime>,
    /// A run is probing it now.
    probing: bool,
}

fn breaker(v: &View, now: u64) -> Breaker {
    let at = |t: u64| SystemTime::now() + Duration::from_millis(t.saturating_sub(now));
    match v.breaker {
        State::Closed => Breaker {
            state: "closed",
            until: None,
            probing: false,
        },
        State::Open => Breaker {
            state: "open",
            until: v.open_until.filter(|t| *t > now).map(at),
            probing: false,
        },
        State::HalfOpen => {
            let lease = v.lease_until.filter(|t| *t > now);
            Breaker {
                state: "half-open",
                until: lease.map(at),
                probing: lease.is_some(),
            }
        }
    }
}

/// The failures a key's breaker counts: towards opening it while it is closed, those that
/// opened it while it is open or half-open.
fn failures(v: &View) -> usize {
    match v.breaker {
        State::Closed => v.failures,
        State::Open | State::HalfOpen => v.opened_by,
    }
}

fn time(t: SystemTime) -> String {
    humantime::format_rfc3339_seconds(t).to_string()
}

/// The table: a line for each key, under a heading that says where the keys are.
pub fn text(listing: &Listing) -> String {
    let mut out = format!("Keys in {}\n", quote::clean(&listing.place));
    if listing.keys.is_empty() {
        out.push_str("  (none)\n");
        return out;
    }
    // A key is any name a client of the store (or a file name in the state folder) gave: shown
    // escaped, it can neither forge a row nor reach the terminal.
    let names: Vec<String> = listing.keys.iter().map(|k| quote::shown(&k.key)).collect();
    let width = names
        .iter()
        .map(|k| k.chars().count())
        .max()
        .unwrap_or(0)
        .max(3);
    // The breaker's words, each key's, to size their column by.
    let said: Vec<Option<String>> = listing
        .keys
        .iter()
        .map(|k| {
            let v = k.view.as_ref().ok()?;
            let b = breaker(v, k.now);
            Some(match (b.state, b.until, b.probing) {
                ("open", Some(until), _) => format!("open until {}", time(until)),
                ("open", None, _) => "open; its time is up: the next run probes".into(),
                (_, Some(until), true) => format!("half-open, probing until {}", time(until)),
                ("half-open", _, _) => "half-open: the next run probes".into(),
                (state, _, _) => state.to_string(),
            })
        })
        .collect();
    let column = said
        .iter()
        .flatten()
        .map(|s| s.chars().count())
        .max()
        .unwrap_or(0)
        .max("BREAKER".len());
    let _ = writeln!(
        out,
        "  {:<width$}  {:<column$}  {:>8}  {:>6}  LAST CHANGE",
        "KEY", "BREAKER", "FAILURES", "TOKENS"
    );
    for ((k, name), said) in listing.keys.iter().zip(&names).zip(&said) {
        let row = match (&k.view, said) {
            (Ok(v), Some(said)) => format!(
                "{said:<column$}  {:>8}  {:>6.1}  {}",
                failures(v),
                v.tokens,
                k.changed.map_or("-".into(), time)
            ),
            (Err(e), _) => format!("cannot be read: {}", quote::clean(e)),
            (Ok(_), None) => String::new(),
        };
        let _ = writeln!(out, "  {name:<width$}  {}", row.trim_end());
    }
    out
}

#[derive(Serialize)]
struct Line<'a> {
    key: &'a str,
    breaker: Option<&'static str>,
    /// Open until, or probing until.
    until: Option<String>,
    probing: Option<bool>,
    failures: Option<usize>,
    tokens: Option<f64>,
    last_change: Option<String>,
    error: Option<&'a str>,
    store: &'a str,
}

/// One JSON object per key.
pub fn json(listing: &Listing) -> String {
    let mut out = String::new();
    for k in &listing.keys {
        let line = line(k, &listing.place);
        // A struct of plain fields always serializes.
        out.push_str(&serde_json::to_string(&line).unwrap_or_default());
        out.push('\n');
    }
    out
}

fn line<'a>(k: &'a Listed, store: &'a str) -> Line<'a> {
    let last_change = k.changed.map(time);
    match &k.view {
        Ok(v) => {
            let b = breaker(v, k.now);
            Line {
                key: &k.key,
                breaker: Some(b.state),
                until: b.until.map(time),
                probing: Some(b.probing),
                failures: Some(failures(v)),
                tokens: Some((v.tokens * 10.0).round() / 10.0),
                last_change,
                error: None,
                store,
            }
        }
        Err(e) => Line {
            key: &k.key,
            breaker: None,
            until: None,
            probing: None,
            failures: None,
            tokens: None,
            last_change,
            error: Some(e),
            store,
        },
    }
}
