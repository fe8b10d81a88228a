//! The options of minfrin's `retry` (Debian's, Ubuntu's and Homebrew's `/usr/bin/retry`), which
//! scripts written for it give this one (README.md, Coming from minfrin's retry): each means
//! here what it meant there, or is refused with the way to say it here. None may silently
//! change meaning.
//!
//! `-t/--times N` is `--attempts N`; `-d N`, one number, is N seconds. `-d 1,2,5`, `-u/--until`,
//! `-w/--while`, `-m/--message`, `-j SECONDS` and `-v` alone are refused, each with its
//! equivalent: they come from scripts whose bare form (forever, 10 s apart, stdout held) means
//! something else here, and accepting them would let such a script run on with a changed
//! meaning.

use std::time::Duration;

use crate::policy::codes::CodeSet;
use crate::policy::{BadValue, duration};

/// The largest exit status, the last of minfrin's `fail`.
const LAST_STATUS: u16 = 255;

/// `-t/--times N`: the number of attempts, the first included, as minfrin's "times".
pub fn times(s: &str) -> Result<u32, BadValue> {
    let t = s.trim();
    if let Ok(n) = t.parse::<u32>()
        && n >= 1
    {
        return Ok(n);
    }
    let fix = match t.parse::<i64>() {
        Ok(0) => "-t 0 ran nothing in minfrin's retry; here every run makes at least one \
                  attempt: give 1 or more"
            .to_string(),
        Ok(-1) => "-t -1 was minfrin's retry's forever: give --forever".into(),
        _ if duration::parse(t).is_ok() => format!(
            "-t/--times is the number of attempts (as in minfrin's retry); for a deadline for the \
             whole run, give --max-time {t}"
        ),
        _ => "give a whole number of at least 1, or --forever for no limit".into(),
    };
    Err(BadValue::new("not a number of attempts", s, fix))
}

/// `-d/--delay DUR`: one duration, a bare number of seconds as in minfrin's retry. minfrin's
/// comma-separated schedule is `--delays` here.
pub fn delay(s: &str) -> Result<Duration, BadValue> {
    if !s.contains(',') {
        return duration::parse(s);
    }
    let seconds: Option<Vec<u64>> = s.split(',').map(|n| n.trim().parse().ok()).collect();
    let fix = match seconds {
        Some(list) => format!(
            "-d/--delay is one delay; minfrin's list of seconds is a schedule here: give --delays {} \
             (the last one repeats; add -j none for no jitter)",
            list.iter()
                .map(|n| format!("{n}s"))
                .collect::<Vec<_>>()
                .join(",")
        ),
        None => {
            "-d/--delay is one delay; for a schedule, give --delays, as --delays 1s,5s,30s".into()
        }
    };
    Err(BadValue::new("not one duration", s, fix))
}

/// `-t N` with a bare `-d D` (D > 0, and no `--backoff`, `--jitter` or `--delays` anywhere):
/// `-t` marks a script written for minfrin's retry, where `-d D` waited D before every retry;
/// here `-d` is the first delay of a growing, jittered schedule, so the pair would run on with
/// another meaning. The refusal names both ways to say what was meant.
pub fn times_with_a_bare_delay(
    times: Option<u32>,
    delay: Option<Duration>,
    shaped: bool,
) -> Option<String> {
    let (Some(times), Some(delay)) = (times, delay) else {
        return None;
    };
    if delay.is_zero() || shaped {
        return None;
    }
    let d = duration::human(delay);
    Some(format!(
        "-t/--times with a bare -d/--delay, which in minfrin's retry waits {d} before every \
         retry: -t {times} -d {d}; here -d is the first delay of a growing, jittered schedule: \
         add -b constant -j none for a fixed {d} between attempts, or give -n {times} for \
         this retry's schedule"
    ))
}

/// `-j/--jitter`: a kind of jitter here. minfrin's `-j SECONDS` added up to that many seconds
/// to each delay; a bare number is refused with what comes closest. A bare number is also what
/// a crontab makes of `-j 20%`: cron ends the command at a `%` not written `\%` (crontab(5))
/// and gives the rest as stdin, so the hint names that too.
pub fn jitter_hint(s: &str) -> Option<String> {
    s.trim().parse::<u64>().ok().map(|n| {
        if n == 0 {
            // minfrin's no jitter at all: none here, not a percentage of none.
            return "-j names a kind of jitter here: none, full, equal, decorrelated or N%; \
                    minfrin's -j 0 added no jitter, which is -j none"
                .to_string();
        }
        format!(
            "-j names a kind of jitter here: none, full, equal, decorrelated or N%; minfrin's -j {n} \
             added up to {n}s to each delay, which -j full (each wait drawn from 0 to the delay, \
             the default) or -j 50% (the delay +/-50%) replaces; in a crontab, % must be written \\%, \
             as -j {n}\\%"
        )
    })
}

/// A criteria list of minfrin's `--until` and `--while` (`success`, `true`, `fail`, `false`,
/// statuses and ranges), as the statuses it names; `None` when it is not one.
fn criteria(s: &str) -> Option<Vec<bool>> {
    let mut set = vec![false; usize::from(LAST_STATUS) + 1];
    for item in s.split(',').map(str::trim) {
        let (lo, hi) = match item {
            "success" | "true" => (0, 0),
            "fail" | "false" => (1, LAST_STATUS),
            _ => match item.split_once('-') {
                Some((lo, hi)) => (lo.parse().ok()?, hi.parse().ok()?),
                None => {
                    let n = item.parse().ok()?;
                    (n, n)
                }
            },
        };
        if lo > hi || hi > LAST_STATUS {
            return None;
        }
        set[usize::from(lo)..=usize::from(hi)].fill(true);
    }
    Some(set)
}

/// Statuses as a list retry reads, with neighbours joined into ranges (`0,3,5-7`).
fn list(set: &[bool]) -> String {
    let text = (0..set.len())
        .filter(|&s| set[s])
        .map(|s| s.to_string())
        .collect::<Vec<_>>()
        .join(",");
    // CodeSet writes it in its own short form.
    text.parse::<CodeSet>()
        .map_or(text, |codes| codes.to_string())
}

/// What the refusal of one of minfrin's options says it is.
fn refused(flag: &str) -> String {
    format!("{flag} is an option of minfrin's retry, not of this one")
}

/// `-u/--until CRITERIA`: refused, with the `--success-on` that says it here.
pub fn until(s: &str) -> Result<String, BadValue> {
    let fix = match criteria(s) {
        Some(set) if set == success_only() => {
            "this retry stops at the first success by default: leave --until out (minfrin's \
             retry tried forever, 10s apart; here that is --forever -d 10 -b constant -j none \
             --stdout hold)"
                .to_string()
        }
        Some(set) => format!(
            "give --success-on {}: those statuses end the run, every other is retried",
            list(&set)
        ),
        None => "give --success-on LIST, the statuses that end the run, as 0,3,5-7".into(),
    };
    Err(BadValue::new(refused("--until"), s, fix))
}

/// `-w/--while CRITERIA`: refused, with the `--retry-on` or `--success-on` that says it here.
pub fn while_(s: &str) -> Result<String, BadValue> {
    let fix = match criteria(s) {
        Some(set) if set.iter().skip(1).all(|&b| b) && !set[0] => {
            "this retry retries every failure by default: leave --while out".to_string()
        }
        Some(set) if set.iter().all(|&b| b) => {
            "every status is retried: give --forever --success-on with the statuses that \
             end the run"
                .into()
        }
        // Status 0 is a success here unless --success-on leaves it out.
        Some(set) if !set[0] => format!(
            "give --retry-on {}: those statuses are retried, every other ends the run",
            list(&set)
        ),
        Some(set) => {
            let ends: Vec<bool> = set.iter().map(|b| !b).collect();
            format!(
                "give --success-on {}: those statuses end the run, every other is retried",
                list(&ends)
            )
        }
        None => "give --retry-on LIST, the statuses that are retried, as 1,75".into(),
    };
    Err(BadValue::new(refused("--while"), s, fix))
}

/// `-m/--message TEXT`: refused, with `--name`.
pub fn message(s: &str) -> Result<String, BadValue> {
    Err(BadValue::new(
        refused("--message"),
        s,
        "give --name NAME: the job's name on the line that ends the run, in the summary and \
         in the metrics",
    ))
}

fn success_only() -> Vec<bool> {
    let mut set = vec![false; usize::from(LAST_STATUS) + 1];
    set[0] = true;
    set
}

/// What `retry -v` alone, minfrin's way to ask for the version, is told here.
pub fn verbose_alone() -> BadValue {
    BadValue::new(
        "-v is --verbose here, and there is nothing to run",
        "-v",
        "for the version, give --version or -V (minfrin's retry printed it for -v); to run a \
         command with more log lines, give retry -v -- COMMAND",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_is_the_number_of_attempts_and_zero_or_minus_one_name_the_way_here() {
        assert_eq!(times("3"), Ok(3));
        assert_eq!(times(" 1"), Ok(1));
        assert!(times("0").expect_err("0").fix.contains("at least one"));
        assert!(times("-1").expect_err("-1").fix.contains("--forever"));
        assert!(times("5s").expect_err("5s").fix.contains("--max-time 5s"));
        assert!(times("5m").expect_err("5m").fix.contains("--max-time 5m"));
        assert!(
            times("lots")
                .expect_err("lots")
                .fix
                .contains("whole number")
        );
    }

    #[test]
    fn a_list_of_delays_names_the_schedule_that_says_it_here() {
        assert_eq!(delay("10"), Ok(Duration::from_secs(10)));
        assert_eq!(delay("1h 30m"), Ok(Duration::from_secs(5400)));
        let e = delay("1,2,4,64").expect_err("a list");
        assert!(e.fix.contains("--delays 1s,2s,4s,64s"), "{e}");
        let e = delay("1s,5s").expect_err("a list");
        assert!(e.fix.contains("--delays"), "{e}");
    }

    #[test]
    fn until_and_while_name_the_status_lists_that_say_them_here() {
        let fix = |r: Result<String, BadValue>| r.expect_err("refused").fix;
        assert!(fix(until("success")).contains("leave --until out"));
        assert!(fix(until("true")).contains("leave --until out"));
        assert!(fix(until("fail")).contains("--success-on 1-255"));
        assert!(fix(until("3,5-7")).contains("--success-on 3,5-7"));
        assert!(fix(until("success,3")).contains("--success-on 0,3"));
        assert!(fix(while_("fail")).contains("leave --while out"));
        assert!(fix(while_("1,75")).contains("--retry-on 1,75"));
        assert!(fix(while_("success")).contains("--success-on 1-255"));
        assert!(fix(while_("0,1")).contains("--success-on 2-255"));
        assert!(fix(until("sometimes")).contains("--success-on LIST"));
        assert!(fix(until("7-5")).contains("--success-on LIST"));
        assert!(fix(message("backup")).contains("--name"));
    }

    #[test]
    fn a_bare_number_of_jitter_is_minfrins_seconds() {
        assert!(jitter_hint("5").is_some_and(|h| h.contains("minfrin")));
        assert!(jitter_hint("0").is_some_and(|h| h.ends_with("which is -j none")));
        assert!(jitter_hint("full").is_none());
        assert!(jitter_hint("5%").is_none());
    }
}
