//! The flags' value parsers: each parses one type (a number in its range, a duration, a list,
//! a signal, a preset) and says what is wrong with a bad value, and how to give a good one.

use std::time::Duration;

use crate::policy::backoff::Jitter;
use crate::policy::codes::CodeSet;
use crate::policy::status::signal_number;
use crate::policy::{BadValue, defaults, duration};
use crate::setup::minfrin;
use crate::setup::presets::{self, Preset};

/// A value parser that offers names to the shells' completions: retry's own parser `parse`,
/// and `names`, what a completion lists (a preset's name, a signal's).
#[derive(Clone)]
pub(super) struct Offered<T> {
    parse: fn(&str) -> Result<T, BadValue>,
    names: fn() -> Vec<&'static str>,
}

impl<T> Offered<T> {
    pub(super) fn new(
        parse: fn(&str) -> Result<T, BadValue>,
        names: fn() -> Vec<&'static str>,
    ) -> Self {
        Offered { parse, names }
    }
}

impl<T: Clone + Send + Sync + 'static> clap::builder::TypedValueParser for Offered<T> {
    type Value = T;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &std::ffi::OsStr,
    ) -> Result<T, clap::Error> {
        self.parse.parse_ref(cmd, arg, value)
    }

    fn possible_values(
        &self,
    ) -> Option<Box<dyn Iterator<Item = clap::builder::PossibleValue> + '_>> {
        Some(Box::new(
            (self.names)()
                .into_iter()
                .map(clap::builder::PossibleValue::new),
        ))
    }
}

/// A state key: a name of printable characters.
pub(super) fn key(s: &str) -> Result<String, BadValue> {
    if s.is_empty() || s.len() > 200 || s.chars().any(char::is_control) {
        return Err(BadValue::new(
            "not a key",
            s.escape_debug().to_string(),
            "use 1 to 200 printable characters, such as api.example.com",
        ));
    }
    Ok(s.to_string())
}

pub(super) fn preset(s: &str) -> Result<&'static Preset, BadValue> {
    presets::find(s).ok_or_else(|| {
        BadValue::new(
            "no such preset",
            s,
            format!("the presets are {}", presets::listed()),
        )
    })
}

pub(super) fn regex(s: &str) -> Result<regex::bytes::Regex, BadValue> {
    crate::policy::output_rules::compile(s).map_err(|e| {
        // The regex crate's message spans lines, with a caret under the fault; its last line
        // says what is wrong.
        let why = e.to_string();
        let why = why
            .lines()
            .last()
            .unwrap_or_default()
            .trim_start_matches("error: ");
        // Without the tables, the crate names the feature that would have them: a build
        // matter, not the user's.
        let why = why.split(" (make sure").next().unwrap_or(why);
        // Patterns are compiled in ASCII mode, without the Unicode tables: a Unicode class is
        // refused with what a pattern may use instead.
        let fix = if why.contains("Unicode") {
            "patterns are matched in ASCII mode: \\w, \\d, \\s, [[:alpha:]] and (?i) are ASCII \
             only, and other text is matched as written; no \\p{..} or (?u)\\w"
                .to_string()
        } else {
            "escape a literal ( [ . * + ? { with a backslash".to_string()
        };
        BadValue::new("not a regular expression", s, format!("{why} ({fix})"))
    })
}

pub(super) fn jitter(s: &str) -> Result<Jitter, BadValue> {
    s.parse().map_err(|mut bad: BadValue| {
        if let Some(hint) = minfrin::jitter_hint(s) {
            bad.fix = hint;
        }
        bad
    })
}

pub(super) fn code_list(s: &str) -> Result<CodeSet, BadValue> {
    s.parse()
}

pub(super) fn signal(s: &str) -> Result<i32, BadValue> {
    signal_number(s).ok_or_else(|| {
        BadValue::new(
            "not a signal",
            s,
            "give a name or a number, as TERM, SIGINT or 9",
        )
    })
}

pub(super) fn attempts(s: &str) -> Result<u32, BadValue> {
    match s.trim().parse::<u32>() {
        Ok(n) if n >= 1 => Ok(n),
        _ => Err(BadValue::new(
            "not a number of attempts",
            s,
            "give a whole number of at least 1, or --forever for no limit",
        )),
    }
}

pub(super) fn retries(s: &str) -> Result<u32, BadValue> {
    match s.trim().parse::<u32>() {
        Ok(n) if n < u32::MAX => Ok(n),
        _ => Err(BadValue::new(
            "not a number of retries",
            s,
            "give a whole number (0 for none), or --forever for no limit",
        )),
    }
}

pub(super) fn factor(s: &str) -> Result<f64, BadValue> {
    match s.trim().parse::<f64>() {
        Ok(f) if f.is_finite() && f >= 1.0 => Ok(f),
        _ => Err(BadValue::new(
            "not a backoff factor",
            s,
            "give a number of at least 1, as 2 or 1.5",
        )),
    }
}

pub(super) fn breaker_failures(s: &str) -> Result<u32, BadValue> {
    match s.trim().parse::<u32>() {
        Ok(n) if n <= 1000 => Ok(n),
        _ => Err(BadValue::new(
            "not a number of failures",
            s,
            "give a whole number from 0 (no breaker) to 1000",
        )),
    }
}

pub(super) fn tokens(s: &str) -> Result<u32, BadValue> {
    match s.trim().parse::<u32>() {
        Ok(n) if n <= defaults::MOST_TOKENS => Ok(n),
        _ => Err(BadValue::new(
            "not a number of tokens",
            s,
            format!(
                "give a whole number from 0 (no budget) to {}",
                defaults::MOST_TOKENS
            ),
        )),
    }
}

pub(super) fn processes(s: &str) -> Result<u32, BadValue> {
    match s.trim().parse::<u32>() {
        Ok(n) if (1..=defaults::MOST_PROCESSES).contains(&n) => Ok(n),
        _ => Err(BadValue::new(
            "not a number of processes",
            s,
            format!("give a whole number from 1 to {}", defaults::MOST_PROCESSES),
        )),
    }
}

pub(super) fn store_rate(s: &str) -> Result<u32, BadValue> {
    match s.trim().parse::<u32>() {
        Ok(n) if (1..=defaults::MOST_STORE_RATE).contains(&n) => Ok(n),
        _ => Err(BadValue::new(
            "not a rate of script calls a second",
            s,
            format!(
                "give a whole number from 1 to {}, as measured for one key",
                defaults::MOST_STORE_RATE
            ),
        )),
    }
}

pub(super) fn ratio(s: &str) -> Result<f64, BadValue> {
    match s.trim().parse::<f64>() {
        Ok(f) if f.is_finite() && f >= 0.0 => Ok(f),
        _ => Err(BadValue::new(
            "not a ratio",
            s,
            "give a number of 0 or more, as 0.1",
        )),
    }
}

/// A duration that must be longer than zero: a window or a period.
pub(super) fn span(s: &str) -> Result<Duration, BadValue> {
    match duration::parse(s)? {
        d if d.is_zero() => Err(BadValue::new(
            "not a length of time",
            s,
            "give a duration longer than 0, as 1m",
        )),
        d => Ok(d),
    }
}

pub(super) fn seed(s: &str) -> Result<u64, BadValue> {
    s.trim().parse().map_err(|_| {
        BadValue::new(
            "not a seed",
            s,
            format!("give a whole number from 0 to {}", u64::MAX),
        )
    })
}
