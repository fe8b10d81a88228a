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
    pub retry: Vec<Regex>,
    pub fatal: Vec<Regex>,
    pub stream: MatchStream,
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

    fn judge(&self, line: &[u8]) -> Option<Found> {
        if let Some(re) = self.fatal.iter().find(|re| re.is_match(line)) {
            return Some(Found::Fatal(re.as_str().to_string()));
        }
        self.retry
            .iter()
            .find(|re| re.is_match(line))
            .map(|re| Found::Retry(re.as_str().to_string()))
    }
}

/// One stream of one attempt, cut into lines as it arrives.
#[derive(Default)]
pub struct Scan {
    line: Vec<u8>,
    found: Option<Found>,
}

impl Scan {
    /// Takes the next bytes of output, in whatever pieces they come.
    pub fn feed(&mut self, rules: &Rules, mut bytes: &[u8]) {
        while !bytes.is_empty() {
            if matches!(self.found, Some(Found::Fatal(_))) {
                // Nothing can outrank a fatal match: stop reading.
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
    pub fn finish(&mut self, rules: &Rules) -> Option<Found> {
        if !self.line.is_empty() {
            self.end_line(rules);
        }
        self.found.take()
    }

    fn end_line(&mut self, rules: &Rules) {
        let line = self.line.strip_suffix(b"\r").unwrap_or(&self.line);
        if let Some(found) = rules.judge(line) {
            self.found = Some(found.or(self.found.take()));
        }
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
            scan.finish(&r),
            Some(Found::Retry("^Service Unavailable$".into()))
        );
    }

    #[test]
    fn a_pattern_does_not_match_across_lines() {
        let r = rules(&["a b"], &[]);
        let mut scan = Scan::default();
        scan.feed(&r, b"a\nb\n");
        assert_eq!(scan.finish(&r), None);
    }

    #[test]
    fn fatal_wins_over_retry_in_either_order() {
        let r = rules(&["busy"], &["denied"]);
        for text in ["busy\ndenied\n", "denied\nbusy\n"] {
            let mut scan = Scan::default();
            scan.feed(&r, text.as_bytes());
            assert_eq!(
                scan.finish(&r),
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
        assert_eq!(scan.finish(&r), Some(Found::Fatal("^fatal".into())));
    }

    #[test]
    fn a_long_line_is_matched_in_bounded_pieces() {
        let r = rules(&["needle"], &[]);
        let mut scan = Scan::default();
        let mut long = vec![b'x'; MAX_LINE * 3];
        long.extend_from_slice(b"needle\n");
        scan.feed(&r, &long);
        assert!(scan.line.capacity() <= MAX_LINE * 2);
        assert_eq!(scan.finish(&r), Some(Found::Retry("needle".into())));
    }

    #[test]
    fn non_utf8_output_is_matched_as_bytes() {
        let r = rules(&["\\xff\\xfe"], &[]);
        let mut scan = Scan::default();
        scan.feed(&r, b"\x00\xff\xfe\n");
        assert!(scan.finish(&r).is_some());
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
