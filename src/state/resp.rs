//! RESP2, the protocol Redis speaks, for the store's few commands: a command written as an
//! array of bulk strings, and a reply read within fixed bounds, so that no server (a broken
//! one, or something else listening on the port) can make a run hold more than it should. What
//! a peer announces (an array's count, a string's length) is checked against what is left
//! before anything is read or allocated for it.

use std::io::{self, BufRead};
use std::mem::size_of;

/// The most one reply may take: its bytes, and the place in memory of each of its arrays'
/// items. The store's largest legitimate replies are a SCAN round (1,000 keys at most) and a
/// cluster's `CLUSTER NODES` table, both far below it.
pub const MAX_REPLY: usize = 1 << 20;

/// Arrays within arrays: SCAN's reply is two deep, and nothing the store reads is deeper.
pub const MAX_DEPTH: usize = 4;

/// What a warning quotes of text from outside (a server's error line, an answer it did not
/// expect), at most.
pub const EXCERPT: usize = 200;

/// A reply. Simple and bulk strings are both `Text`: no command the store sends tells them
/// apart.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Value {
    Nil,
    Int(i64),
    Text(Vec<u8>),
    Array(Vec<Value>),
    /// The server's error line, such as `NOSCRIPT No matching script`.
    Error(Vec<u8>),
}

/// Why a reply could not be read.
#[derive(Debug)]
pub enum Unread {
    /// The connection failed, or the deadline passed, on the way.
    Io(io::Error),
    /// What came is not a reply the store can take: malformed, or beyond a bound.
    Bad(String),
}

impl From<io::Error> for Unread {
    fn from(e: io::Error) -> Unread {
        Unread::Io(e)
    }
}

/// A command as the server reads it: `*N`, then each argument as a bulk string.
pub fn command(args: &[&str]) -> Vec<u8> {
    let mut out = Vec::with_capacity(16 + args.iter().map(|a| a.len() + 16).sum::<usize>());
    out.extend_from_slice(format!("*{}\r\n", args.len()).as_bytes());
    for arg in args {
        out.extend_from_slice(format!("${}\r\n", arg.len()).as_bytes());
        out.extend_from_slice(arg.as_bytes());
        out.extend_from_slice(b"\r\n");
    }
    out
}

/// Reads one reply, of at most [`MAX_REPLY`].
pub fn read(r: &mut impl BufRead) -> Result<Value, Unread> {
    let mut left = MAX_REPLY;
    value(r, &mut left, 0)
}

fn too_large() -> Unread {
    Unread::Bad(format!(
        "its answer is larger than {} KiB, the most retry reads",
        MAX_REPLY / 1024
    ))
}

fn value(r: &mut impl BufRead, left: &mut usize, depth: usize) -> Result<Value, Unread> {
    let line = line(r, left)?;
    let Some((&kind, rest)) = line.split_first() else {
        return Err(malformed(&line));
    };
    match kind {
        b'+' => Ok(Value::Text(rest.to_vec())),
        b'-' => Ok(Value::Error(rest.to_vec())),
        b':' => Ok(Value::Int(number(rest).ok_or_else(|| malformed(&line))?)),
        b'$' => {
            let Some(len) = count(rest).ok_or_else(|| malformed(&line))? else {
                return Ok(Value::Nil);
            };
            // The string and its \r\n, checked before a byte of it is read or held.
            let whole = len.checked_add(2).filter(|n| n <= left).ok_or_else(|| {
                Unread::Bad(format!(
                    "it announced a string of {len} bytes, more than its answer may hold ({} KiB)",
                    MAX_REPLY / 1024
                ))
            })?;
            *left -= whole;
            let mut bytes = vec![0; whole];
            r.read_exact(&mut bytes).map_err(eof)?;
            if !bytes.ends_with(b"\r\n") {
                return Err(Unread::Bad(
                    "it sent a string longer than it announced".into(),
                ));
            }
            bytes.truncate(len);
            Ok(Value::Text(bytes))
        }
        b'*' => {
            let Some(n) = count(rest).ok_or_else(|| malformed(&line))? else {
                return Ok(Value::Nil);
            };
            if depth + 1 > MAX_DEPTH {
                return Err(Unread::Bad(format!(
                    "its answer nests arrays deeper than {MAX_DEPTH}"
                )));
            }
            // Each item's place is counted before any is made.
            let room = n
                .checked_mul(size_of::<Value>())
                .filter(|n| n <= left)
                .ok_or_else(|| {
                    Unread::Bad(format!(
                        "it announced an array of {n} items, more than its answer may hold \
                         ({} KiB)",
                        MAX_REPLY / 1024
                    ))
                })?;
            *left -= room;
            let mut items = Vec::with_capacity(n);
            for _ in 0..n {
                items.push(value(r, left, depth + 1)?);
            }
            Ok(Value::Array(items))
        }
        _ => Err(malformed(&line)),
    }
}

/// A line, without its \r\n, charged to `left`.
fn line(r: &mut impl BufRead, left: &mut usize) -> Result<Vec<u8>, Unread> {
    let mut line = Vec::new();
    loop {
        let buf = match r.fill_buf() {
            Ok(buf) => buf,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(Unread::Io(e)),
        };
        if buf.is_empty() {
            return Err(eof(io::ErrorKind::UnexpectedEof.into()));
        }
        let (take, done) = match buf.iter().position(|&b| b == b'\n') {
            Some(i) => (i + 1, true),
            None => (buf.len(), false),
        };
        if take > *left {
            return Err(too_large());
        }
        *left -= take;
        line.extend_from_slice(&buf[..take]);
        r.consume(take);
        if done {
            break;
        }
    }
    match line.strip_suffix(b"\r\n") {
        Some(text) => Ok(text.to_vec()),
        None => Err(malformed(&line)),
    }
}

/// A connection closed in the middle of a reply is one closed: the caller's test for a dropped
/// connection sees it as such.
fn eof(e: io::Error) -> Unread {
    Unread::Io(e)
}

fn number(text: &[u8]) -> Option<i64> {
    std::str::from_utf8(text).ok()?.parse().ok()
}

/// An array's count or a string's length: `None` for -1 (nil), an error for anything else
/// that is not a count.
fn count(text: &[u8]) -> Option<Option<usize>> {
    match number(text)? {
        -1 => Some(None),
        n => usize::try_from(n).ok().map(Some),
    }
}

fn malformed(line: &[u8]) -> Unread {
    Unread::Bad(format!(
        "its answer is not Redis's protocol: {}",
        excerpt(line)
    ))
}

/// At most [`EXCERPT`] bytes of `bytes`, escaped and quoted, and how much was left out.
pub fn excerpt(bytes: &[u8]) -> String {
    if bytes.len() <= EXCERPT {
        return crate::quote::quoted_bytes(bytes);
    }
    // Not in the middle of a character of valid UTF-8, which would show as escaped bytes.
    let mut cut = EXCERPT;
    while cut > EXCERPT - 3 && bytes.get(cut).is_some_and(|b| b & 0xC0 == 0x80) {
        cut -= 1;
    }
    format!(
        "{}… ({} bytes more)",
        crate::quote::quoted_bytes(&bytes[..cut]),
        bytes.len() - cut
    )
}

#[cfg(test)]
mod tests {
    use std::io::{BufReader, Read};

    use super::*;

    /// A peer that sends `bytes` one at a time: every read is partial.
    struct Dribble<'a>(&'a [u8]);

    impl Read for Dribble<'_> {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            match (self.0.split_first(), buf.first_mut()) {
                (Some((&b, rest)), Some(slot)) => {
                    *slot = b;
                    self.0 = rest;
                    Ok(1)
                }
                _ => Ok(0),
            }
        }
    }

    /// A peer that sends `head`, then `tail` for ever, and counts what was read.
    struct Endless {
        head: Vec<u8>,
        tail: Vec<u8>,
        at: usize,
        read: usize,
    }

    impl Read for Endless {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            let mut n = 0;
            while n < buf.len() {
                buf[n] = match self.head.get(self.at) {
                    Some(&b) => b,
                    None => self.tail[(self.at - self.head.len()) % self.tail.len()],
                };
                n += 1;
                self.at += 1;
            }
            self.read += n;
            Ok(n)
        }
    }

    fn parse(bytes: &[u8]) -> Result<Value, Unread> {
        read(&mut BufReader::new(Dribble(bytes)))
    }

    fn bad(bytes: &[u8]) -> String {
        match parse(bytes) {
            Err(Unread::Bad(why)) => why,
            other => panic!("{bytes:?}: {other:?}"),
        }
    }

    fn text(s: &str) -> Value {
        Value::Text(s.as_bytes().to_vec())
    }

    #[test]
    fn a_command_is_an_array_of_bulk_strings() {
        assert_eq!(
            command(&["EVALSHA", "ab", ""]),
            b"*3\r\n$7\r\nEVALSHA\r\n$2\r\nab\r\n$0\r\n\r\n"
        );
    }

    #[test]
    fn every_kind_of_reply_reads_back_byte_by_byte() {
        assert_eq!(parse(b"+OK\r\n").ok(), Some(text("OK")));
        assert_eq!(parse(b":-42\r\n").ok(), Some(Value::Int(-42)));
        assert_eq!(parse(b"$-1\r\n").ok(), Some(Value::Nil));
        assert_eq!(parse(b"*-1\r\n").ok(), Some(Value::Nil));
        assert_eq!(parse(b"$0\r\n\r\n").ok(), Some(text("")));
        // A bulk string may hold \r\n itself.
        assert_eq!(parse(b"$4\r\na\r\nb\r\n").ok(), Some(text("a\r\nb")));
        assert_eq!(
            parse(b"-NOSCRIPT No matching script\r\n").ok(),
            Some(Value::Error(b"NOSCRIPT No matching script".to_vec()))
        );
        assert_eq!(
            parse(b"*2\r\n$1\r\n0\r\n*2\r\n$7\r\nretry:a\r\n$7\r\nretry:b\r\n").ok(),
            Some(Value::Array(vec![
                text("0"),
                Value::Array(vec![text("retry:a"), text("retry:b")])
            ]))
        );
    }

    #[test]
    fn a_reply_cut_short_is_a_closed_connection() {
        for cut in [&b""[..], b"+OK", b"$5\r\nab", b"*2\r\n:1\r\n"] {
            match parse(cut) {
                Err(Unread::Io(e)) => assert_eq!(e.kind(), io::ErrorKind::UnexpectedEof),
                other => panic!("{cut:?}: {other:?}"),
            }
        }
    }

    #[test]
    fn malformed_replies_are_refused_and_quoted_escaped() {
        for (reply, says) in [
            (&b"OK\r\n"[..], "'OK'"),
            (b":1x\r\n", "':1x'"),
            (b"$-2\r\n", "'$-2'"),
            (b"*x\r\n", "'*x'"),
            (b"+OK\n", r"$'+OK\n'"),
            (b"%1\r\n", "'%1'"),
            (b"$3\r\nabcd\r\n", "longer than it announced"),
            (b"\x1b[31m\r\n", r"$'\033[31m'"),
        ] {
            let why = bad(reply);
            assert!(why.contains(says), "{reply:?}: {why}");
            assert!(!why.contains('\x1b'), "{why}");
        }
    }

    #[test]
    fn a_count_or_length_beyond_the_limit_is_refused_before_anything_is_read_for_it() {
        let mut flood = Endless {
            head: b"*999999999999\r\n".to_vec(),
            tail: b":1\r\n".to_vec(),
            at: 0,
            read: 0,
        };
        let why = match read(&mut BufReader::with_capacity(16, &mut flood)) {
            Err(Unread::Bad(why)) => why,
            other => panic!("{other:?}"),
        };
        assert!(why.contains("array of 999999999999 items"), "{why}");
        assert!(flood.read <= 32, "{} bytes read", flood.read);
        let mut flood = Endless {
            head: b"$999999999999\r\n".to_vec(),
            tail: b"x".to_vec(),
            at: 0,
            read: 0,
        };
        let why = match read(&mut BufReader::with_capacity(16, &mut flood)) {
            Err(Unread::Bad(why)) => why,
            other => panic!("{other:?}"),
        };
        assert!(why.contains("string of 999999999999 bytes"), "{why}");
        assert!(flood.read <= 32);
        // Counts too large for a usize, or for the arithmetic, are refused alike.
        assert!(bad(b"*9223372036854775807\r\n").contains("array of"));
        assert!(bad(b"$18446744073709551615\r\n").contains("not Redis"));
    }

    #[test]
    fn a_reply_that_never_ends_stops_at_the_limit() {
        // Each item fits; together they do not.
        for (head, tail) in [
            (format!("*{}\r\n", MAX_REPLY / 32 - 1), &b":1\r\n"[..]),
            ("*2\r\n+".to_string(), b"x"),
            ("-ERR ".to_string(), b"x"),
        ] {
            let mut flood = Endless {
                head: head.into_bytes(),
                tail: tail.to_vec(),
                at: 0,
                read: 0,
            };
            match read(&mut BufReader::new(&mut flood)) {
                Err(Unread::Bad(why)) => assert!(why.contains("larger than 1024 KiB"), "{why}"),
                other => panic!("{other:?}"),
            }
            assert!(flood.read <= MAX_REPLY + 8192, "{}", flood.read);
        }
    }

    #[test]
    fn arrays_nest_no_deeper_than_the_limit() {
        let deep = |n: usize| {
            let mut reply = "*1\r\n".repeat(n);
            reply.push_str(":1\r\n");
            reply.into_bytes()
        };
        assert!(parse(&deep(MAX_DEPTH)).is_ok());
        assert!(bad(&deep(MAX_DEPTH + 1)).contains("deeper than 4"));
    }

    #[test]
    fn an_excerpt_is_short_escaped_and_says_how_much_is_left_out() {
        assert_eq!(excerpt(b"ERR x"), "'ERR x'");
        let long = [b'a'; 5000];
        let e = excerpt(&long);
        assert!(e.ends_with("… (4800 bytes more)"), "{e}");
        assert!(e.len() < 250);
        // Not cut inside a character.
        let mut text = vec![b'a'; EXCERPT - 1];
        text.extend_from_slice("é and more".as_bytes());
        let e = excerpt(&text);
        assert!(!e.contains("\\x"), "{e}");
        assert!(excerpt(b"\x1b]0;x\x07").starts_with("$'"));
    }
}
