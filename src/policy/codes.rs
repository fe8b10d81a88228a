//! Sets of exit statuses, as the `--success-on`, `--retry-on` and `--fatal-on` lists give them.

use std::fmt;
use std::ops::RangeInclusive;
use std::str::FromStr;

use super::BadValue;
use super::status::signal_number;

/// A set of exit statuses: codes, inclusive ranges and signal names (`1,2,5-7,75,SIGKILL`).
/// A signal N stands for status 128+N, the number a shell reports for a child it killed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CodeSet {
    ranges: Vec<RangeInclusive<i32>>,
}

/// The largest status a process can report; 128+N for the highest signal fits below it.
const MAX_STATUS: i32 = 255;

impl CodeSet {
    /// A set of the given single statuses.
    pub fn of(codes: &[i32]) -> Self {
        CodeSet {
            ranges: codes.iter().map(|&c| c..=c).collect(),
        }
    }

    pub fn contains(&self, status: i32) -> bool {
        self.ranges.iter().any(|r| r.contains(&status))
    }

    /// This set and `other` together.
    pub fn union(&self, other: &CodeSet) -> CodeSet {
        let mut ranges = self.ranges.clone();
        ranges.extend(other.ranges.iter().cloned());
        CodeSet { ranges }
    }

    /// Whether `status` is in the list as an item of its own, not only inside a range.
    pub fn names(&self, status: i32) -> bool {
        self.ranges
            .iter()
            .any(|r| *r.start() == status && *r.end() == status)
    }

    pub fn is_empty(&self) -> bool {
        self.ranges.is_empty()
    }

    /// The statuses in both sets.
    pub fn both(&self, other: &CodeSet) -> CodeSet {
        let hi = self.ranges.iter().map(|r| *r.end()).max().unwrap_or(-1);
        CodeSet {
            ranges: (0..=hi)
                .filter(|s| self.contains(*s) && other.contains(*s))
                .map(|s| s..=s)
                .collect(),
        }
    }
}

impl FromStr for CodeSet {
    type Err = BadValue;

    /// Exit statuses, 0 to 255, and signal names.
    fn from_str(list: &str) -> Result<Self, Self::Err> {
        CodeSet::parse(list, status)
    }
}

impl CodeSet {
    /// HTTP status codes, 100 to 599.
    pub fn http(list: &str) -> Result<CodeSet, BadValue> {
        CodeSet::parse(list, |item| match item.trim().parse::<i32>() {
            Ok(n) if (100..=599).contains(&n) => Ok(n),
            _ => Err(BadValue::new(
                "not an HTTP status",
                item.trim(),
                "give statuses from 100 to 599 and ranges, as 429,500-504",
            )),
        })
    }

    /// A comma-separated list of items and inclusive ranges of them.
    fn parse(
        list: &str,
        item: impl Fn(&str) -> Result<i32, BadValue>,
    ) -> Result<CodeSet, BadValue> {
        let status = item;
        let mut ranges = Vec::new();
        for item in list.split(',').map(str::trim) {
            if item.is_empty() {
                return Err(BadValue::new(
                    "an empty item in the list",
                    list,
                    "separate items with one comma, as 1,5-7,75",
                ));
            }
            let range = match item.split_once('-') {
                Some((lo, hi)) => {
                    let (lo, hi) = (status(lo)?, status(hi)?);
                    if lo > hi {
                        return Err(BadValue::new(
                            "a range that runs backwards",
                            item,
                            "put the smaller status first, as 5-7",
                        ));
                    }
                    lo..=hi
                }
                None => {
                    let s = status(item)?;
                    s..=s
                }
            };
            ranges.push(range);
        }
        Ok(CodeSet { ranges })
    }
}

/// One status: a number from 0 to 255, or a signal name with or without `SIG` (128+N).
fn status(item: &str) -> Result<i32, BadValue> {
    let item = item.trim();
    if item.chars().all(|c| c.is_ascii_digit()) && !item.is_empty() {
        return match item.parse::<i32>() {
            Ok(n) if n <= MAX_STATUS => Ok(n),
            _ => Err(BadValue::new(
                "not an exit status",
                item,
                format!("exit statuses run from 0 to {MAX_STATUS}"),
            )),
        };
    }
    signal_number(item).map(|sig| 128 + sig).ok_or_else(|| {
        BadValue::new(
            "neither an exit status nor a signal name",
            item,
            format!("give statuses (0-{MAX_STATUS}), ranges and signals, as 1,5-7,SIGKILL"),
        )
    })
}

impl fmt::Display for CodeSet {
    /// Sorted, with neighbours joined into ranges: `1-4,9,126,127`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let hi = self.ranges.iter().map(|r| *r.end()).max().unwrap_or(0);
        let mut runs: Vec<(i32, i32)> = Vec::new();
        for s in (0..=hi).filter(|s| self.contains(*s)) {
            match runs.last_mut() {
                Some((_, end)) if *end + 1 == s => *end = s,
                _ => runs.push((s, s)),
            }
        }
        for (i, (lo, hi)) in runs.iter().enumerate() {
            let sep = if i == 0 { "" } else { "," };
            match hi - lo {
                0 => write!(f, "{sep}{lo}")?,
                1 => write!(f, "{sep}{lo},{hi}")?,
                _ => write!(f, "{sep}{lo}-{hi}")?,
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(s: &str) -> CodeSet {
        s.parse().expect("valid list")
    }

    #[test]
    fn codes_and_ranges_are_inclusive() {
        let s = set("1,2,5-7,75");
        for yes in [1, 2, 5, 6, 7, 75] {
            assert!(s.contains(yes), "{yes}");
        }
        for no in [0, 3, 4, 8, 74, 76] {
            assert!(!s.contains(no), "{no}");
        }
    }

    #[test]
    fn signal_names_stand_for_128_plus_n() {
        let s = set("SIGKILL,term, INT");
        assert!(s.contains(137));
        assert!(s.contains(143));
        assert!(s.contains(130));
        assert!(!s.contains(9));
    }

    #[test]
    fn bad_items_are_named_in_the_error() {
        for (bad, word) in [
            ("1,,2", "empty"),
            ("7-5", "7-5"),
            ("256", "256"),
            ("SIGNOPE", "SIGNOPE"),
            ("x-3", "x"),
            ("-1", "\"\""),
        ] {
            let err = bad.parse::<CodeSet>().expect_err(bad).to_string();
            assert!(err.contains(word), "{bad}: {err}");
        }
    }

    #[test]
    fn names_means_an_item_of_its_own_not_a_range() {
        let s = set("1,126,100-200");
        assert!(s.names(126) && s.names(1));
        assert!(!s.names(127) && s.contains(127));
    }
}
