//! Durations as people write them and read them.

use std::time::Duration;

use super::BadValue;

/// How durations are written, for the help and for errors.
pub const SYNTAX: &str = "write 250ms, 1.5s, 2m or 1h 30m; a bare number means seconds";

/// The longest duration any flag takes: a year (humantime's `1y`, 365.25 days). Longer waits,
/// limits and outages are typing mistakes, and refusing them keeps every sum of durations far
/// from overflowing.
pub const LONGEST: Duration = Duration::from_secs(31_557_600);

/// A humantime duration (`250ms`, `1.5s`, `1h 30m`) or a bare number of seconds (`0.5`), at
/// most [`LONGEST`].
pub fn parse(s: &str) -> Result<Duration, BadValue> {
    match read(s)? {
        Some(d) if d <= LONGEST => Ok(d),
        _ => Err(too_long(s)),
    }
}

/// A duration asked for by someone else (a `retry-after=` hint), where a long one is capped
/// later rather than refused: as [`parse`], but any length, `Duration::MAX` for one beyond
/// what a `Duration` holds; `None` for what is not a duration.
pub fn parse_uncapped(s: &str) -> Option<Duration> {
    read(s).ok().map(|d| d.unwrap_or(Duration::MAX))
}

fn too_long(given: &str) -> BadValue {
    BadValue::new(
        "too long a duration",
        given,
        "the longest is 1y (365.25 days)",
    )
}

/// The duration `s` says, `None` for one longer than a `Duration` holds.
fn read(s: &str) -> Result<Option<Duration>, BadValue> {
    let given = s;
    let s = s.trim();
    // humantime reads "5 10m" as 510m and "1 30s" as 130s: it joins the digits of a number
    // that has no unit to the next one (humantime issue 69). Every number but a lone one
    // needs its unit.
    if let Some(bare) = unitless(s) {
        return Err(BadValue::new(
            "a number without a unit in a duration",
            given,
            format!(
                "give {bare} its unit, as in 1h 30m or 5m 10s (a bare number of seconds stands \
                 alone)"
            ),
        ));
    }
    match s.parse::<f64>() {
        Ok(secs) => match Duration::try_from_secs_f64(secs) {
            Ok(d) => Ok(Some(d)),
            Err(_) if secs.is_finite() && secs > 0.0 => Ok(None),
            Err(_) => Err(BadValue::new(
                "not a duration of zero or more",
                given,
                SYNTAX,
            )),
        },
        // humantime's own message lists every unit it knows: the syntax says more in less.
        Err(_) => match humantime::parse_duration(s) {
            Ok(d) => Ok(Some(d)),
            // Overflow is told before the units are read: only a duration whose numbers, made
            // small, read as one is too long; any other is no duration.
            Err(humantime::DurationError::NumberOverflow)
                if humantime::parse_duration(&small(s)).is_ok() =>
            {
                Ok(None)
            }
            Err(humantime::DurationError::NumberOverflow) => {
                Err(BadValue::new("not a duration", given, SYNTAX))
            }
            Err(_) => Err(BadValue::new("not a duration", given, SYNTAX)),
        },
    }
}

/// `s` with each run of digits made `1`: its units and shape, without its size.
fn small(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut in_digits = false;
    for c in s.chars() {
        if c.is_ascii_digit() {
            if !in_digits {
                out.push('1');
            }
            in_digits = true;
        } else {
            out.push(c);
            in_digits = false;
        }
    }
    out
}

/// The first number of `s` that is followed, after spaces, by another number: a number
/// without a unit in a duration of several parts.
fn unitless(s: &str) -> Option<&str> {
    let mut number: Option<usize> = None;
    let mut spaced = false;
    for (i, c) in s.char_indices() {
        if c.is_ascii_digit() || c == '.' {
            match number {
                Some(start) if spaced => return Some(s[start..i].trim_end()),
                Some(_) => {}
                None => number = Some(i),
            }
        } else if c.is_whitespace() {
            spaced = number.is_some();
        } else {
            (number, spaced) = (None, false);
        }
    }
    None
}

/// A duration as a person reads it: `12ms`, `1.23s`, `2m 5s`.
pub fn human(d: Duration) -> String {
    if d < Duration::from_secs(1) {
        format!("{}ms", d.as_millis())
    } else if d < Duration::from_secs(60) {
        let s = format!("{:.2}", d.as_secs_f64());
        format!("{}s", s.trim_end_matches('0').trim_end_matches('.'))
    } else if d < Duration::from_secs(86_400) {
        humantime::format_duration(Duration::from_secs(d.as_secs())).to_string()
    } else {
        // Days and more: the two largest units, as a person rounds them ("3days 4h",
        // "1year 11months"); seconds are noise there.
        let text = humantime::format_duration(Duration::from_secs(d.as_secs() / 3600 * 3600));
        text.to_string()
            .split(' ')
            .take(2)
            .collect::<Vec<_>>()
            .join(" ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_take_units_fractions_and_bare_seconds() {
        assert_eq!(parse("250ms"), Ok(Duration::from_millis(250)));
        assert_eq!(parse("1.5s"), Ok(Duration::from_millis(1500)));
        assert_eq!(parse("1h 30m"), Ok(Duration::from_secs(5400)));
        assert_eq!(parse("2"), Ok(Duration::from_secs(2)));
        assert_eq!(parse("0.25"), Ok(Duration::from_millis(250)));
        assert_eq!(parse("0"), Ok(Duration::ZERO));
        for bad in ["-1", "abc", "5 parsecs", "", "inf", "NaN"] {
            let err = parse(bad).expect_err(bad);
            assert_eq!(err.value, bad, "{err}");
        }
    }

    /// humantime alone would read "5 10m" as 8h 30m (510 minutes).
    #[test]
    fn a_number_without_a_unit_beside_another_is_refused() {
        for (bad, number) in [
            ("5 10m", "5"),
            ("1 30s", "1"),
            ("1h 2 30m", "2"),
            ("1.5 2s", "1.5"),
            ("1  2", "1"),
        ] {
            let err = parse(bad).expect_err(bad);
            assert_eq!(err.value, bad, "{err}");
            assert_eq!(err.what, "a number without a unit in a duration");
            assert!(
                err.fix.starts_with(&format!("give {number} its unit")),
                "{err}"
            );
        }
        assert_eq!(parse("1h 30m"), Ok(Duration::from_secs(5400)));
        assert_eq!(parse("1h30m"), Ok(Duration::from_secs(5400)));
        assert_eq!(parse(" 2m "), Ok(Duration::from_secs(120)));
        assert_eq!(parse("1.5"), Ok(Duration::from_millis(1500)));
    }

    #[test]
    fn a_year_is_the_longest_duration() {
        assert_eq!(parse("1y"), Ok(LONGEST));
        assert_eq!(parse("31557600"), Ok(LONGEST));
        for bad in [
            "1y 1s",
            "2y",
            "31557601",
            "10000000000000000000s",
            "1e30",
            "99999999999999999999999y",
        ] {
            let err = parse(bad).expect_err(bad);
            assert_eq!(err.what, "too long a duration", "{bad}: {err}");
            assert_eq!(err.value, bad, "{err}");
        }
        // A number too big for humantime with no unit it knows is no duration at all.
        for bad in ["99999999999999999999x", "99999999999999999999 fortnights"] {
            assert_eq!(parse(bad).expect_err(bad).what, "not a duration", "{bad}");
        }
    }

    #[test]
    fn human_durations_read_naturally() {
        assert_eq!(human(Duration::from_millis(12)), "12ms");
        assert_eq!(human(Duration::from_millis(1230)), "1.23s");
        assert_eq!(human(Duration::from_secs(2)), "2s");
        assert_eq!(human(Duration::from_secs(125)), "2m 5s");
        assert_eq!(
            human(Duration::from_secs(86_400 * 3 + 3600 * 4 + 59)),
            "3days 4h"
        );
        assert_eq!(
            human(LONGEST * 2 - Duration::from_secs(1)),
            "1year 11months"
        );
    }
}
