//! Output rules: regular expressions matched on the command's output, line by line, as it
//! streams through, in bounded memory (`--retry-if-output`, `--fatal-if-output`).

use clap::ValueEnum;
use regex::bytes::{Regex, RegexBuilder};

/// A line longer than this is matched in pieces of this size.
pub const MAX_LINE: usize = 64 * 1024;

/// Compiles an output pattern as every rule is compiled, the user's and the presets': on
/// bytes (output need not be UTF-8), in ASCII mode. `\w`, `\d`, `\s`, `\b`, `[[:alpha:]]` and
/// `(?i)` mean their ASCII selves, and text of any other script is matched as its UTF-8 bytes,
/// as written. Unicode classes (`\p{L}`, `(?u)\w`) are refused: the build carries none of
/// regex's Unicode tables, which the loader would otherwise relocate at every start.
pub fn compile(pattern: &str) -> Result<Regex, regex::Error> {
    RegexBuilder::new(pattern).unicode(false).build()
}

/// Which of the command's output streams the rules read.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum MatchStream {
    Both,
    Stdout,
    Stderr,
}

/// The output rules of a run.
#[derive(Clone, Debug)]
pub struct Rules {
    /// `--retry-if-output`'s patterns, then the preset's.
    pub retry: Vec<Regex>,
    /// `--fatal-if-output`'s patterns, then the preset's.
    pub fatal: Vec<Regex>,
    /// How many of `retry` and of `fatal` are the user's own; the rest are a preset's, which
    /// judge only an attempt whose status failed: `git commit -m "Fix early EOF"` that exits 0
    /// is no failed fetch.
    pub own: (usize, usize),
    pub stream: MatchStream,
}

/// What the rules found in an attempt's output: by the user's own patterns, which judge any
/// attempt, and by a preset's, which judge only one whose status failed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Seen {
    pub own: Option<Found>,
    pub preset: Option<Found>,
}

impl Seen {
    /// What this and `other` saw together: of each kind, this one's finding, unless only
    /// the other's is fatal.
    pub fn or(self, other: Seen) -> Seen {
        let stronger = |a: Option<Found>, b: Option<Found>| match a {
            Some(a) => Some(a.or(b)),
            None => b,
        };
        Seen {
            own: stronger(self.own, other.own),
            preset: stronger(self.preset, other.preset),
        }
    }

    /// The finding that judges an attempt: the user's, and the preset's too when the status
    /// `failed`; fatal wins over retry.
    pub fn judging(&self, failed: bool) -> Option<Found> {
        match (self.own.clone(), self.preset.clone().filter(|_| failed)) {
            (Some(own), preset) => Some(own.or(preset)),
            (None, preset) => preset,
        }
    }
}

/// What a rule found in an attempt's output.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Found {
    /// A `--fatal-if-output` pattern matched.
    Fatal(String),
    /// A `--retry-if-output` pattern matched.
    Retry(String),
}

impl Found {
    /// The stronger of two findings: fatal wins over retry.
    pub fn or(self, other: Option<Found>) -> Found {
        match (self, other) {
            (Found::Retry(_), Some(fatal @ Found::Fatal(_))) => fatal,
            (found, _) => found,
        }
    }
}

impl Rules {
    pub fn is_empty(&self) -> bool {
        self.retry.is_empty() && self.fatal.is_empty()
    }

    /// Whether the rules read this stream.
    pub fn reads(&self, stdout: bool) -> bool {
        !self.is_empty()
            && match self.stream {
                MatchStream::Both => true,
                MatchStream::Stdout => stdout,
                MatchStream::Stderr => !stdout,
            }
    }

    /// What a line says, by the user's patterns and by the preset's.
    fn judge(&self, line: &[u8]) -> Seen {
        let (own_retry, own_fatal) = self.own;
        let matching = |patterns: &[Regex]| {
            patterns
                .iter()
                .find(|re| re.is_match(line))
                .map(|re| re.as_str().to_string())
        };
        let one = |retry: &[Regex], fatal: &[Regex]| {
            matching(fatal)
                .map(Found::Fatal)
                .or_else(|| matching(retry).map(Found::Retry))
        };
        let (retry, preset_retry) = self.retry.split_at(own_retry.min(self.retry.len()));
        let (fatal, preset_fatal) = self.fatal.split_at(own_fatal.min(self.fatal.len()));
        Seen {
            own: one(retry, fatal),
            preset: one(preset_retry, preset_fatal),
        }
    }
}

/// One stream of one attempt, cut into lines as it arrives.
#[derive(Default)]
pub struct Scan {
    line: Vec<u8>,
    found: Seen,
}

impl Scan {
    /// Takes the next bytes of output, in whatever pieces they come.
    pub fn feed(&mut self, rules: &Rules, mut bytes: &[u8]) {
        while !bytes.is_empty() {
            if matches!(self.found.own, Some(Found::Fatal(_))) {
                // Nothing can outrank a fatal match of the user's own: stop reading.
                return;
            }
            let room = MAX_LINE - self.line.len();
            let (piece, rest, ends) = match bytes.iter().position(|b| *b == b'\n') {
                Some(i) if i < room => (&bytes[..i], &bytes[i + 1..], true),
                _ if bytes.len() < room => (bytes, &bytes[bytes.len()..], false),
                _ => (&bytes[..room], &bytes[room..], true),
            };
            self.line.extend_from_slice(piece);
            bytes = rest;
            if ends {
                self.end_line(rules);
            }
        }
    }

    /// The stream ended: a last line without a newline counts too. Returns what was found.
    pub fn finish(&mut self, rules: &Rules) -> Seen {
        if !self.line.is_empty() {
            self.end_line(rules);
        }
        std::mem::take(&mut self.found)
    }

    fn end_line(&mut self, rules: &Rules) {
        let line = self.line.strip_suffix(b"\r").unwrap_or(&self.line);
        let seen = rules.judge(line);
        self.found = seen.or(std::mem::take(&mut self.found));
        self.line.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules(retry: &[&str], fatal: &[&str]) -> Rules {
        let re = |p: &&str| compile(p).expect("valid regex");
        Rules {
            retry: retry.iter().map(re).collect(),
            fatal: fatal.iter().map(re).collect(),
            own: (retry.len(), fatal.len()),
            stream: MatchStream::Both,
        }
    }

    #[test]
    fn a_line_written_in_pieces_is_matched_whole() {
        let r = rules(&["^Service Unavailable$"], &[]);
        let mut scan = Scan::default();
        for piece in ["Serv", "ice Unav", "ailable", "\nnext\n"] {
            scan.feed(&r, piece.as_bytes());
        }
        assert_eq!(
            scan.finish(&r).own,
            Some(Found::Retry("^Service Unavailable$".into()))
        );
    }

    #[test]
    fn a_presets_patterns_judge_only_a_failure_and_the_users_any_attempt() {
        let re = |p: &str| compile(p).expect("valid regex");
        // The user's "busy" and "denied", then the preset's "early EOF" and "fatal: x".
        let r = Rules {
            retry: vec![re("busy"), re("early EOF")],
            fatal: vec![re("denied"), re("fatal: x")],
            own: (1, 1),
            stream: MatchStream::Both,
        };
        let seen = |text: &str| {
            let mut scan = Scan::default();
            scan.feed(&r, text.as_bytes());
            scan.finish(&r)
        };
        let retry = |p: &str| Some(Found::Retry(p.into()));
        let fatal = |p: &str| Some(Found::Fatal(p.into()));
        assert_eq!(seen("early EOF\n").judging(false), None);
        assert_eq!(seen("early EOF\n").judging(true), retry("early EOF"));
        assert_eq!(seen("busy\n").judging(false), retry("busy"));
        // Fatal wins across the two: the preset's on a failure, the user's always.
        assert_eq!(seen("busy\nfatal: x\n").judging(true), fatal("fatal: x"));
        assert_eq!(seen("busy\nfatal: x\n").judging(false), retry("busy"));
        assert_eq!(seen("early EOF\ndenied\n").judging(false), fatal("denied"));
    }

    #[test]
    fn a_pattern_does_not_match_across_lines() {
        let r = rules(&["a b"], &[]);
        let mut scan = Scan::default();
        scan.feed(&r, b"a\nb\n");
        assert_eq!(scan.finish(&r).own, None);
    }

    #[test]
    fn fatal_wins_over_retry_in_either_order() {
        let r = rules(&["busy"], &["denied"]);
        for text in ["busy\ndenied\n", "denied\nbusy\n"] {
            let mut scan = Scan::default();
            scan.feed(&r, text.as_bytes());
            assert_eq!(
                scan.finish(&r).own,
                Some(Found::Fatal("denied".into())),
                "{text}"
            );
        }
    }

    #[test]
    fn the_last_line_without_a_newline_counts() {
        let r = rules(&[], &["^fatal"]);
        let mut scan = Scan::default();
        scan.feed(&r, b"ok\nfatal: no");
        assert_eq!(scan.finish(&r).own, Some(Found::Fatal("^fatal".into())));
    }

    #[test]
    fn a_long_line_is_matched_in_bounded_pieces() {
        let r = rules(&["needle"], &[]);
        let mut scan = Scan::default();
        let mut long = vec![b'x'; MAX_LINE * 3];
        long.extend_from_slice(b"needle\n");
        scan.feed(&r, &long);
        assert!(scan.line.capacity() <= MAX_LINE * 2);
        assert_eq!(scan.finish(&r).own, Some(Found::Retry("needle".into())));
    }

    #[test]
    fn non_utf8_output_is_matched_as_bytes() {
        let r = rules(&["\\xff\\xfe"], &[]);
        let mut scan = Scan::default();
        scan.feed(&r, b"\x00\xff\xfe\n");
        assert!(scan.finish(&r).own.is_some());
    }

    fn matches(pattern: &str, line: &str) -> bool {
        compile(pattern)
            .expect("compiles")
            .is_match(line.as_bytes())
    }

    #[test]
    fn classes_and_case_folding_are_ascii() {
        assert!(matches(r"^\w+ \d+$", "abc_9 42"));
        assert!(!matches(r"^\w$", "é"));
        assert!(!matches(r"^\d$", "٣"));
        assert!(matches(r"(?i)could NOT resolve", "Could not resolve host"));
        // Non-ASCII text is matched as written, its bytes, not folded.
        assert!(matches("échec", "l'échec de la connexion"));
        assert!(matches("(?i)ÉCHEC", "ÉCHEC"));
        assert!(!matches("(?i)ÉCHEC", "échec"));
        assert!(matches("сбой", "сбой сети"));
        // `.` is any byte but a newline, so one character of two bytes is two dots.
        assert!(matches("^..$", "é"));
    }

    #[test]
    fn unicode_classes_are_refused() {
        for pattern in [r"\p{L}", r"\pL", r"(?u)\w", r"\P{Greek}", r"[\p{Lu}]"] {
            assert!(compile(pattern).is_err(), "{pattern}");
        }
    }
}
