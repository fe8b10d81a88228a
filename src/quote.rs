//! The one way retry shows, in text, a value that comes from outside (an argument, `--name`, a
//! key, a URL, a file name, a header): control characters, invalid UTF-8, and the Unicode
//! separators and bidirectional controls that could end, hide or reorder a line are escaped as
//! bash's `$'…'` quoting writes them, as GNU `ls` and `timeout` show names. No value shown so can
//! start, end or hide a line. JSON keeps its own escaping.

use std::borrow::Cow;
use std::ffi::OsStr;
use std::fmt::Write as _;

/// A value as a shell word: as it is when it is plain (`deploy.sh`, `v1.2`), in single quotes
/// when it holds spaces or quotes (`'a b'`), as `$'…'` when it holds anything to escape.
pub fn shown<V: AsRef<OsStr> + ?Sized>(value: &V) -> String {
    let bytes = value.as_ref().as_encoded_bytes();
    let plain = !bytes.is_empty()
        && bytes[0] != b':'
        && bytes
            .iter()
            .all(|&b| b.is_ascii_alphanumeric() || b"-_./:=,@%+{}".contains(&b));
    if plain {
        // Only ASCII: the bytes are the text.
        String::from_utf8_lossy(bytes).into_owned()
    } else {
        quoted(value)
    }
}

/// A value always quoted, for a message that names it: `'deploy.sh'`, `$'v1.2\n…'`.
pub fn quoted<V: AsRef<OsStr> + ?Sized>(value: &V) -> String {
    quoted_bytes(value.as_ref().as_encoded_bytes())
}

/// [`quoted`], for bytes.
pub fn quoted_bytes(bytes: &[u8]) -> String {
    match escaped(bytes, true) {
        None => {
            let text = String::from_utf8_lossy(bytes);
            format!("'{}'", text.replace('\'', r"'\''"))
        }
        Some(inner) => format!("$'{inner}'"),
    }
}

/// Text that is not one value (a message that may hold some, a reason from the store or the
/// system) with only what could end, hide or reorder the line escaped, and no quotes added.
pub fn clean(text: &str) -> Cow<'_, str> {
    match escaped(text.as_bytes(), false) {
        None => Cow::Borrowed(text),
        Some(inner) => Cow::Owned(inner),
    }
}

/// The bytes with what must be escaped escaped, or `None` when nothing must be. Inside `$'…'`
/// (`quoting`), backslashes and single quotes are escaped too.
fn escaped(bytes: &[u8], quoting: bool) -> Option<String> {
    let mut out = String::new();
    let mut any = false;
    let mut rest = bytes;
    while !rest.is_empty() {
        let (valid, bad) = match std::str::from_utf8(rest) {
            Ok(text) => (text, &[][..]),
            Err(e) => {
                let (good, after) = rest.split_at(e.valid_up_to());
                // Only UTF-8 before valid_up_to.
                let good = std::str::from_utf8(good).unwrap_or_default();
                let n = e.error_len().unwrap_or(after.len());
                (good, &after[..n])
            }
        };
        for c in valid.chars() {
            match c {
                '\\' | '\'' if quoting => {
                    out.push('\\');
                    out.push(c);
                }
                '\x07' => named(&mut out, &mut any, 'a'),
                '\x08' => named(&mut out, &mut any, 'b'),
                '\t' => named(&mut out, &mut any, 't'),
                '\n' => named(&mut out, &mut any, 'n'),
                '\x0b' => named(&mut out, &mut any, 'v'),
                '\x0c' => named(&mut out, &mut any, 'f'),
                '\r' => named(&mut out, &mut any, 'r'),
                c if c.is_ascii_control() => {
                    any = true;
                    let _ = write!(out, "\\{:03o}", c as u32);
                }
                // C1 controls, the line and paragraph separators, the bidirectional
                // embeddings, overrides and isolates.
                '\u{80}'..='\u{9f}'
                | '\u{2028}'..='\u{2029}'
                | '\u{202a}'..='\u{202e}'
                | '\u{2066}'..='\u{2069}' => {
                    any = true;
                    let _ = write!(out, "\\u{:04X}", c as u32);
                }
                c => out.push(c),
            }
        }
        for b in bad {
            any = true;
            let _ = write!(out, "\\{b:03o}");
        }
        rest = &rest[valid.len() + bad.len()..];
    }
    any.then_some(out)
}

fn named(out: &mut String, any: &mut bool, letter: char) {
    *any = true;
    out.push('\\');
    out.push(letter);
}

#[cfg(test)]
mod tests {
    use std::os::unix::ffi::OsStrExt;

    use super::*;

    #[test]
    fn plain_words_stay_as_they_are() {
        assert_eq!(shown("deploy.sh"), "deploy.sh");
        assert_eq!(shown("http://x:1/a?b"), "'http://x:1/a?b'");
        assert_eq!(shown("a b"), "'a b'");
        assert_eq!(shown("it's"), r"'it'\''s'");
        assert_eq!(shown(""), "''");
        assert_eq!(quoted("job"), "'job'");
    }

    #[test]
    fn what_could_end_or_hide_a_line_is_escaped() {
        assert_eq!(shown("v1.2\n2026 retry: ok"), r"$'v1.2\n2026 retry: ok'");
        assert_eq!(shown("\x1b[2K\x1b[1A"), r"$'\033[2K\033[1A'");
        assert_eq!(shown("\x1b]0;t\x07"), r"$'\033]0;t\a'");
        assert_eq!(shown("a\rb\tc\x7f"), r"$'a\rb\tc\177'");
        assert_eq!(shown("\u{85}\u{2028}\u{2029}"), r"$'\u0085\u2028\u2029'");
        assert_eq!(shown("\u{202e}x\u{2066}"), r"$'\u202Ex\u2066'");
        assert_eq!(shown("it's\n"), r"$'it\'s\n'");
        assert_eq!(shown("a\\b\n"), r"$'a\\b\n'");
        assert_eq!(shown("::error::x"), "'::error::x'");
        assert_eq!(shown("café"), "'café'");
    }

    #[test]
    fn invalid_utf8_is_shown_byte_by_byte() {
        let arg = OsStr::from_bytes(b"a\xffb\xc3");
        assert_eq!(shown(arg), r"$'a\377b\303'");
        assert_eq!(quoted(OsStr::from_bytes(b"\xe2\x80")), r"$'\342\200'");
    }

    #[test]
    fn clean_escapes_without_quoting() {
        assert_eq!(clean("cannot read 'x': y"), "cannot read 'x': y");
        assert_eq!(clean("a\nb\x1b"), r"a\nb\033");
    }
}
