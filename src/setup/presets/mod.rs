//! Built-in presets: named sets of retryable and fatal statuses for well-known commands. The
//! types and look-ups are here; the statuses themselves, with where each list comes from, are
//! the data of `catalogue`.

mod catalogue;

use crate::policy::codes::CodeSet;

pub use self::catalogue::{APT, CURL, GIT, SSH, SYSEXITS};

/// One exit status of a preset, with where it comes from.
#[derive(Debug)]
pub struct Code {
    /// The exit status.
    pub status: i32,
    /// The command's own name for it (for curl, the `CURLE_*` constant).
    pub name: &'static str,
    /// Whether another attempt may succeed (`true`) or will fail the same way (`false`).
    pub transient: bool,
    /// What the status means and why it is sorted as it is, in a few words.
    pub why: &'static str,
}

/// A preset's statuses.
#[derive(Debug)]
pub struct Preset {
    /// The preset's name, as a user gives it.
    pub name: &'static str,
    /// Where the list of statuses comes from.
    pub source: &'static str,
    /// Every status the preset sorts, each once.
    pub codes: &'static [Code],
    /// Lines of output that make an attempt retryable whatever its status (regular
    /// expressions, as `--retry-if-output`).
    pub retry_if_output: &'static [&'static str],
    /// Lines of output that make an attempt fatal (as `--fatal-if-output`).
    pub fatal_if_output: &'static [&'static str],
    /// What the tool was seen to print, and what the preset makes of it.
    pub seen: &'static [Seen],
}

/// Output a tool was seen to print (copied from a real run: the tool, its version and the
/// failure are in `when`), and whether the preset retries it. The tests check each against the
/// preset's own rules, and docs/presets.md is made from them.
#[derive(Debug)]
pub struct Seen {
    /// Whether the preset retries it.
    pub transient: bool,
    /// Which tool printed it, and when.
    pub when: &'static str,
    /// What it printed, every line.
    pub output: &'static str,
}

/// Every built-in preset, in the order the help lists them.
pub const ALL: &[&Preset] = &[&CURL, &SYSEXITS, &SSH, &GIT, &APT];

/// docs/presets.md: for each preset with output rules, what its tool was seen to print and
/// whether the preset retries it (generated: `RETRY_BLESS=1 cargo test --test it generated`).
pub fn seen_page() -> String {
    let mut page = String::from(
        "# What the presets retry, seen in real output\n\n\
         Generated from the presets' own data (`src/setup/presets/catalogue.rs`); the tests \
         check\nevery example below against the preset's rules. A preset's rules match \
         line by line; a\nline that makes an attempt fatal wins over one that would retry it. \
         [Back to the configuration](config.md)\n",
    );
    for preset in ALL.iter().filter(|p| !p.seen.is_empty()) {
        page.push_str(&format!("\n## `{}`\n", preset.name));
        for (transient, heading) in [(true, "Retried"), (false, "Not retried")] {
            page.push_str(&format!("\n### {heading}\n"));
            for seen in preset.seen.iter().filter(|s| s.transient == transient) {
                page.push_str(&format!(
                    "\n{}:\n\n```text\n{}\n```\n",
                    seen.when, seen.output
                ));
            }
        }
    }
    page
}

/// The built-in presets' names, in the order the help lists them.
pub fn names() -> Vec<&'static str> {
    ALL.iter().map(|p| p.name).collect()
}

/// The presets as an error lists them: each name, and the other name apt answers to.
pub fn listed() -> String {
    format!("{} (apt also as dpkg)", names().join(", "))
}

/// The built-in preset of this name, if there is one.
pub fn find(name: &str) -> Option<&'static Preset> {
    // dpkg's lock is apt's lock.
    let name = if name == "dpkg" { "apt" } else { name };
    ALL.iter().copied().find(|p| p.name == name)
}

impl Preset {
    /// The statuses retried (for `--retry-on`).
    pub fn retry_on(&self) -> CodeSet {
        self.statuses(true)
    }

    /// The statuses never retried (for `--fatal-on`).
    pub fn fatal_on(&self) -> CodeSet {
        self.statuses(false)
    }

    /// The statuses never retried, less those the user's `--retry-on` names: the user's word
    /// on a status wins over the preset's.
    pub fn fatal_on_except(&self, retried: &CodeSet) -> CodeSet {
        let codes: Vec<i32> = self
            .codes
            .iter()
            .filter(|c| !c.transient && !retried.contains(c.status))
            .map(|c| c.status)
            .collect();
        CodeSet::of(&codes)
    }

    /// The preset's statuses that are transient, or that are fatal.
    fn statuses(&self, transient: bool) -> CodeSet {
        let codes: Vec<i32> = self
            .codes
            .iter()
            .filter(|c| c.transient == transient)
            .map(|c| c.status)
            .collect();
        CodeSet::of(&codes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn no_status_is_both_retried_and_fatal() {
        for preset in ALL {
            let (retry, fatal) = (preset.retry_on(), preset.fatal_on());
            for code in preset.codes {
                assert!(
                    !(retry.contains(code.status) && fatal.contains(code.status)),
                    "{} {} is in both lists",
                    preset.name,
                    code.status
                );
            }
        }
    }

    #[test]
    fn every_status_and_name_appears_once() {
        for preset in ALL {
            let mut statuses = HashSet::new();
            let mut names = HashSet::new();
            for code in preset.codes {
                assert!(statuses.insert(code.status), "status {} twice", code.status);
                assert!(names.insert(code.name), "name {} twice", code.name);
            }
        }
    }

    #[test]
    fn statuses_are_real_exit_statuses_and_never_126_or_127() {
        for preset in ALL {
            for code in preset.codes {
                let status = code.status;
                assert!((1..=255).contains(&status), "{status}");
                assert!(![126, 127].contains(&status), "{status}");
            }
        }
    }

    #[test]
    fn every_code_has_a_curl_name_and_a_reason() {
        for code in CURL.codes {
            assert!(code.name.starts_with("CURLE_"), "{}", code.name);
            assert!(!code.why.is_empty(), "{}", code.name);
        }
    }

    #[test]
    fn statuses_are_listed_in_order() {
        for preset in ALL {
            assert!(preset.codes.windows(2).all(|w| w[0].status < w[1].status));
        }
    }

    #[test]
    fn curl_network_failures_are_transient() {
        let retry = CURL.retry_on();
        let fatal = CURL.fatal_on();
        for status in [5, 6, 7, 12, 16, 18, 22, 28, 35, 52, 55, 56, 92, 95, 96] {
            assert!(retry.contains(status), "{status} should be retried");
            assert!(!fatal.contains(status), "{status} should not be fatal");
        }
    }

    #[test]
    fn curl_usage_and_build_failures_are_fatal() {
        let retry = CURL.retry_on();
        let fatal = CURL.fatal_on();
        for status in [1, 2, 3, 4, 27, 47, 48, 60, 61, 67] {
            assert!(fatal.contains(status), "{status} should be fatal");
            assert!(!retry.contains(status), "{status} should not be retried");
        }
    }

    #[test]
    fn undocumented_curl_statuses_are_in_neither_list() {
        let (retry, fatal) = (CURL.retry_on(), CURL.fatal_on());
        for status in [
            0, 20, 24, 29, 32, 40, 44, 46, 50, 51, 57, 62, 75, 76, 81, 101, 126, 127,
        ] {
            assert!(!retry.contains(status), "{status}");
            assert!(!fatal.contains(status), "{status}");
        }
    }

    #[test]
    fn the_two_lists_together_hold_every_code_of_the_preset() {
        let (retry, fatal) = (CURL.retry_on(), CURL.fatal_on());
        for code in CURL.codes {
            if code.transient {
                assert!(retry.contains(code.status), "{}", code.status);
            } else {
                assert!(fatal.contains(code.status), "{}", code.status);
            }
        }
    }

    #[test]
    fn each_list_names_its_statuses_one_by_one() {
        let retry = CURL.retry_on();
        assert!(retry.names(6));
        assert!(!retry.names(1));
        assert!(CURL.fatal_on().names(67));
    }

    #[test]
    fn curl_is_found_by_name_and_unknown_names_are_not() {
        let found = find("curl").map(|p| p.name);
        assert_eq!(found, Some("curl"));
        assert!(find("nope").is_none());
        assert!(find("CURL").is_none());
        assert!(find("").is_none());
    }

    #[test]
    fn every_preset_is_found_by_its_own_name() {
        for preset in ALL {
            let found = find(preset.name).map(|p| (p.name, p.codes.len()));
            assert_eq!(found, Some((preset.name, preset.codes.len())));
        }
    }

    #[test]
    fn every_preset_pattern_compiles_and_matches_its_kind_of_message() {
        use crate::policy::output_rules::compile;
        let matches = |patterns: &[&str], line: &str| {
            patterns
                .iter()
                .any(|p| compile(p).expect("compiles").is_match(line.as_bytes()))
        };
        for preset in ALL {
            for p in preset.retry_if_output.iter().chain(preset.fatal_if_output) {
                assert!(compile(p).is_ok(), "{}: {p}", preset.name);
            }
        }
        let lock = "fatal: Unable to create '/repo/.git/index.lock': File exists.";
        assert!(matches(GIT.retry_if_output, lock));
        assert!(matches(
            GIT.retry_if_output,
            "fatal: unable to access 'https://x/': Could not resolve host: x"
        ));
        assert!(matches(
            GIT.fatal_if_output,
            "remote: Repository not found."
        ));
        assert!(!matches(
            GIT.retry_if_output,
            "error: pathspec 'x' did not match any file(s) known to git"
        ));
        let apt = "E: Could not get lock /var/lib/dpkg/lock-frontend. It is held by process 4242 (apt-get)";
        assert!(matches(APT.retry_if_output, apt));
        assert!(matches(
            SSH.fatal_if_output,
            "user@host: Permission denied (publickey)."
        ));
    }

    /// Every output a preset's tool was seen to print is judged as the preset says: by the
    /// same line-by-line scan a run makes, fatal winning; with retry rules, an output none of
    /// them matches is not retried.
    #[test]
    fn every_seen_output_is_judged_as_its_preset_says() {
        use crate::policy::output_rules::{Found, MatchStream, Rules, Scan, compile};
        let compile = |patterns: &[&str]| {
            patterns
                .iter()
                .map(|p| compile(p).expect("compiles"))
                .collect()
        };
        let mut checked = 0;
        for preset in ALL {
            let rules = Rules {
                retry: compile(preset.retry_if_output),
                fatal: compile(preset.fatal_if_output),
                own: (0, 0),
                stream: MatchStream::Both,
            };
            for seen in preset.seen {
                let mut scan = Scan::default();
                scan.feed(&rules, seen.output.as_bytes());
                // Seen of a failing command: the preset's patterns judge it.
                let found = scan.finish(&rules).judging(true);
                let retried = matches!(found, Some(Found::Retry(_)));
                assert_eq!(retried, seen.transient, "{}: {}", preset.name, seen.when);
                checked += 1;
            }
        }
        assert!(checked >= 20, "{checked}");
    }

    #[test]
    fn sysexits_retries_only_tempfail_and_ssh_only_its_own_errors() {
        assert_eq!(SYSEXITS.retry_on().to_string(), "75");
        assert_eq!(SYSEXITS.fatal_on().to_string(), "64-74,76-78");
        assert_eq!(SSH.retry_on().to_string(), "255");
        assert!(GIT.retry_on().is_empty() && APT.retry_on().is_empty());
        assert_eq!(find("dpkg").map(|p| p.name), Some("apt"));
    }
}
