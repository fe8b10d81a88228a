//! `--output-on-failure`: everything a run would print, held in the order it happened (each
//! attempt's stdout and stderr, and retry's own log), and printed only if the run fails, as
//! chronic does for cron. At most [`LIMIT`] is held, the attempt still running included: a
//! ring ([`Ring`]) in memory up to a bound, then in a private temporary file, whose earliest
//! bytes make room for the latest.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::io::{self, Write};
use std::os::fd::BorrowedFd;
use std::rc::Rc;

use nix::errno::Errno;

use super::child_fd;
use super::spool::{MEMORY_LIMIT, Ring};

/// Where a piece of the transcript goes when it is printed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum To {
    Stdout,
    Stderr,
}

/// The run's transcript, shared by the two output streams and the log.
#[derive(Clone)]
pub struct Transcript(Rc<RefCell<Held>>);

impl Default for Transcript {
    fn default() -> Transcript {
        Transcript::bounded(LIMIT, MEMORY_LIMIT)
    }
}

struct Held {
    /// Records: the stream (1 byte), the length (4 bytes, little-endian), the bytes. The
    /// earliest record kept may begin within a record that was cut ([`Held::make_room`]).
    ring: Ring,
    /// Where each attempt still held begins, and its number, oldest first.
    attempts: VecDeque<(u64, u32)>,
    /// What was dropped to keep what is held within [`LIMIT`].
    left_out: LeftOut,
    /// Something could not be held (no room for the temporary file, a file size limit): what
    /// was held has been printed, with a warning, and everything since passes through as it
    /// comes.
    passing: bool,
}

/// The output dropped, earliest first, to keep what is held bounded.
#[derive(Default)]
struct LeftOut {
    /// How many bytes of output (the streams' and the log's).
    bytes: u64,
    /// The first and last attempts none of whose output is held.
    whole: Option<(u32, u32)>,
}

/// The most that is held, the attempt still running included: past it, the earliest bytes are
/// dropped, whole attempts first and then the beginning of the earliest one kept, so that
/// `--forever` or a command that prints for days cannot fill a disk.
pub const LIMIT: u64 = 16 << 20;

/// The most bytes of one record; longer pieces are cut into several, each a small part of
/// what is held so that dropping the earliest bytes never drops much more than it must.
const RECORD: usize = 64 * 1024;

/// A record's stream and length, before its bytes.
const HEADER: u64 = 5;

impl Transcript {
    /// A transcript that holds at most `limit` bytes, in memory up to `memory_limit`.
    fn bounded(limit: u64, memory_limit: usize) -> Transcript {
        Transcript(Rc::new(RefCell::new(Held {
            ring: Ring::new(limit, memory_limit),
            attempts: VecDeque::new(),
            left_out: LeftOut::default(),
            passing: false,
        })))
    }

    /// Adds `bytes` bound for `to`. When they cannot be held, what was held is printed, with a
    /// warning after it, and these bytes and all later ones pass straight through: the end of
    /// a run is never lost.
    pub fn add(&self, to: To, bytes: &[u8]) {
        let mut held = self.0.borrow_mut();
        if held.passing {
            write_all(fd(to), bytes);
            return;
        }
        let record = (RECORD as u64).min(held.ring.capacity() / 4).max(1) as usize;
        for (i, piece) in bytes.chunks(record).enumerate() {
            let tag = [match to {
                To::Stdout => 1u8,
                To::Stderr => 2u8,
            }];
            let len = (piece.len() as u32).to_le_bytes();
            let kept = held
                .make_room(HEADER + piece.len() as u64)
                .and_then(|()| held.ring.push(&[&tag, &len, piece]));
            if let Err(e) = kept {
                // The record that could not be pushed is left out: it follows whole, below.
                held.print();
                let line = format!(
                    "retry: warning: --output-on-failure cannot hold more output ({}): what \
                     was held is above; the rest follows as it comes\n",
                    super::files::why(&e)
                );
                write_all(child_fd::stderr(), line.as_bytes());
                held.passing = true;
                held.ring.clear();
                let rest = bytes
                    .chunks(record)
                    .skip(i)
                    .flatten()
                    .copied()
                    .collect::<Vec<u8>>();
                write_all(fd(to), &rest);
                return;
            }
        }
    }

    /// Attempt `number` begins: `mark` says which, and output held from here on is that
    /// attempt's when the earliest bytes are dropped.
    pub fn attempt(&self, number: u32, mark: &[u8]) {
        {
            let mut held = self.0.borrow_mut();
            if !held.passing {
                let at = held.ring.end();
                held.attempts.push_back((at, number));
            }
        }
        self.add(To::Stderr, mark);
    }

    /// A writer for the log: what it is given goes to stderr, in turn.
    pub fn log(&self) -> Box<dyn Write> {
        Box::new(LogSink(self.clone()))
    }

    /// Prints what was held, in order, each piece to its stream. A reader that went away
    /// ends it quietly, as it would have ended the command's own writes.
    pub fn print(&self) {
        self.0.borrow_mut().print();
    }
}

impl Held {
    /// Drops the earliest bytes held until `need` more fit: whole records, and the beginning
    /// of the last one dropped into, whose header is written again where its kept bytes begin.
    fn make_room(&mut self, need: u64) -> io::Result<()> {
        let capacity = self.ring.capacity();
        let mut header = [0u8; HEADER as usize];
        while self.ring.len() + need > capacity {
            let excess = self.ring.len() + need - capacity;
            let at = self.ring.start();
            if !read_exact(&self.ring, at, &mut header) {
                return Err(io::ErrorKind::UnexpectedEof.into());
            }
            let len = u64::from(u32::from_le_bytes([
                header[1], header[2], header[3], header[4],
            ]));
            if excess >= len {
                self.ring.drop_front(HEADER + len);
                self.left_out.bytes += len;
            } else {
                // The record's first `excess` bytes go; its header moves up by as much.
                let kept = u32::try_from(len - excess)
                    .unwrap_or(u32::MAX)
                    .to_le_bytes();
                let moved = [header[0], kept[0], kept[1], kept[2], kept[3]];
                self.ring.write(at + excess, &moved)?;
                self.ring.drop_front(excess);
                self.left_out.bytes += excess;
            }
        }
        // An attempt none of whose bytes are held any more: the next one began where the
        // bytes kept begin, or before.
        let start = self.ring.start();
        while self.attempts.len() > 1 && self.attempts[1].0 <= start {
            if let Some((_, number)) = self.attempts.pop_front() {
                let (first, _) = self.left_out.whole.unwrap_or((number, number));
                self.left_out.whole = Some((first, number));
            }
        }
        Ok(())
    }

    /// The attempt whose beginning was dropped, if the bytes held begin within one.
    fn cut(&self) -> Option<u32> {
        self.attempts
            .front()
            .filter(|(at, _)| *at < self.ring.start())
            .map(|(_, number)| *number)
    }

    /// Prints what is held, and lets it go.
    fn print(&mut self) {
        if self.left_out.bytes > 0 {
            let line = format!(
                "retry: --output-on-failure: the earliest {} of output {} left out ({}): at \
                 most {} MiB is held\n",
                bytes(self.left_out.bytes),
                if self.left_out.bytes == 1 {
                    "is"
                } else {
                    "are"
                },
                parts(self.left_out.whole, self.cut()),
                LIMIT >> 20
            );
            write_all(child_fd::stderr(), line.as_bytes());
        }
        let mut at = self.ring.start();
        let end = self.ring.end();
        let mut header = [0u8; HEADER as usize];
        while at < end {
            if !read_exact(&self.ring, at, &mut header) {
                break;
            }
            at += HEADER;
            let len = u64::from(u32::from_le_bytes([
                header[1], header[2], header[3], header[4],
            ]));
            let to = if header[0] == 1 {
                To::Stdout
            } else {
                To::Stderr
            };
            if !copy(&self.ring, at, len, fd(to)) {
                break;
            }
            at += len;
        }
        self.ring.clear();
        self.attempts.clear();
        self.left_out = LeftOut::default();
    }
}

/// `1 byte`, `12345 bytes`.
fn bytes(n: u64) -> String {
    if n == 1 {
        "1 byte".into()
    } else {
        format!("{n} bytes")
    }
}

/// Which attempts' output was left out: `all of attempts 1-3 and the beginning of attempt 4`.
fn parts(whole: Option<(u32, u32)>, cut: Option<u32>) -> String {
    let whole = whole.map(|(first, last)| match first == last {
        true => format!("all of attempt {first}"),
        false => format!("all of attempts {first}-{last}"),
    });
    let cut = cut.map(|n| format!("the beginning of attempt {n}"));
    match (whole, cut) {
        (Some(whole), Some(cut)) => format!("{whole} and {cut}"),
        (Some(one), None) | (None, Some(one)) => one,
        (None, None) => "before the first attempt".into(),
    }
}

fn fd(to: To) -> BorrowedFd<'static> {
    match to {
        To::Stdout => child_fd::stdout(),
        To::Stderr => child_fd::stderr(),
    }
}

struct LogSink(Transcript);

impl Write for LogSink {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.add(To::Stderr, buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

fn read_exact(spool: &Ring, at: u64, buf: &mut [u8]) -> bool {
    let mut got = 0;
    while got < buf.len() {
        match spool.read_at(at + got as u64, &mut buf[got..]) {
            Ok(0) | Err(_) => return false,
            Ok(n) => got += n,
        }
    }
    true
}

/// Copies `len` bytes at `at` to descriptor `fd`; false once the reader went away.
fn copy(spool: &Ring, at: u64, len: u64, fd: BorrowedFd<'_>) -> bool {
    let mut buf = vec![0u8; 64 * 1024];
    let mut done = 0u64;
    while done < len {
        let want = usize::try_from(len - done)
            .unwrap_or(usize::MAX)
            .min(buf.len());
        match spool.read_at(at + done, &mut buf[..want]) {
            Ok(0) | Err(_) => return false,
            Ok(n) => {
                if !write_all(fd, &buf[..n]) {
                    return false;
                }
                done += n as u64;
            }
        }
    }
    true
}

/// Writes all of `bytes` to descriptor `fd`, waiting for a slow reader; false when the
/// reader went away or the descriptor is closed.
fn write_all(fd: BorrowedFd<'_>, mut bytes: &[u8]) -> bool {
    while !bytes.is_empty() {
        match nix::unistd::write(fd, bytes) {
            Ok(n) => bytes = &bytes[n..],
            Err(Errno::EINTR) => {}
            Err(Errno::EAGAIN) => {
                let mut fds = [nix::poll::PollFd::new(fd, nix::poll::PollFlags::POLLOUT)];
                let _ = nix::poll::poll(&mut fds, nix::poll::PollTimeout::NONE);
            }
            Err(_) => return false,
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The records held, oldest first: each one's stream tag and bytes.
    fn records(t: &Transcript) -> Vec<(u8, Vec<u8>)> {
        let held = t.0.borrow();
        let mut at = held.ring.start();
        let mut out = Vec::new();
        let mut header = [0u8; HEADER as usize];
        while at < held.ring.end() {
            assert!(read_exact(&held.ring, at, &mut header));
            let len = u32::from_le_bytes([header[1], header[2], header[3], header[4]]) as usize;
            let mut bytes = vec![0u8; len];
            assert!(read_exact(&held.ring, at + HEADER, &mut bytes));
            out.push((header[0], bytes));
            at += HEADER + len as u64;
        }
        assert_eq!(at, held.ring.end(), "records end where the ring does");
        out
    }

    #[test]
    fn pieces_are_kept_in_order_with_their_streams() {
        let t = Transcript::default();
        t.add(To::Stdout, b"out 1\n");
        let mut log = t.log();
        log.write_all(b"retry: attempt 1 failed\n").expect("logged");
        t.add(To::Stderr, b"err 2\n");
        assert_eq!(
            records(&t),
            [
                (1, b"out 1\n".to_vec()),
                (2, b"retry: attempt 1 failed\n".to_vec()),
                (2, b"err 2\n".to_vec())
            ]
        );
    }

    #[test]
    fn past_the_bound_the_earliest_attempts_go_first_then_the_beginning_of_the_next() {
        let t = Transcript::bounded(400, 4096);
        for n in 1..=6 {
            t.attempt(n, format!("attempt {n}\n").as_bytes());
            t.add(To::Stdout, &[b'0' + n as u8; 90]);
        }
        // Each attempt takes 110 bytes (10 and 90, a header of 5 before each): 660 in all,
        // of which at most 400 are held, so attempt 3 (bytes 220 to 330) is cut.
        let kept = records(&t);
        let held = t.0.borrow();
        assert!(held.ring.len() <= 400, "{}", held.ring.len());
        assert_eq!(held.left_out.whole, Some((1, 2)));
        assert_eq!(held.cut(), Some(3));
        let payload: usize = kept.iter().map(|(_, b)| b.len()).sum();
        assert_eq!(held.left_out.bytes + payload as u64, 6 * 100);
        assert_eq!(kept[0].0, 1, "the kept part of attempt 3's stdout");
        assert!(kept[0].1.iter().all(|b| *b == b'3'));
        assert_eq!(kept[1], (2, b"attempt 4\n".to_vec()));
    }

    #[test]
    fn the_running_attempt_is_bounded_too_and_keeps_its_last_bytes() {
        let t = Transcript::bounded(1000, 4096);
        t.attempt(1, b"attempt 1\n");
        let all: Vec<u8> = (0..3000u32).map(|i| (i % 251) as u8).collect();
        for piece in all.chunks(70) {
            t.add(To::Stdout, piece);
        }
        let kept: Vec<u8> = records(&t).into_iter().flat_map(|(_, b)| b).collect();
        let held = t.0.borrow();
        assert!(held.ring.len() <= 1000, "{}", held.ring.len());
        assert_eq!(held.cut(), Some(1));
        assert_eq!(held.left_out.whole, None);
        assert_eq!(held.left_out.bytes + kept.len() as u64, 10 + 3000);
        assert!(all.ends_with(&kept), "the last bytes are kept, in order");
        assert!(kept.len() > 900, "{}", kept.len());
    }

    #[test]
    fn a_ring_in_its_file_wraps_and_keeps_the_tail_whatever_the_pieces() {
        let t = Transcript::bounded(4096, 1024);
        let mut all = Vec::new();
        let mut seed = 12345u32;
        for n in 1..=40u32 {
            t.attempt(n, format!("attempt {n}\n").as_bytes());
            all.extend_from_slice(format!("attempt {n}\n").as_bytes());
            for _ in 0..5 {
                seed = seed.wrapping_mul(1_103_515_245).wrapping_add(12345);
                let len = (seed >> 16) as usize % 700;
                let piece: Vec<u8> = (0..len).map(|i| (i as u32 ^ seed) as u8).collect();
                t.add(To::Stdout, &piece);
                all.extend_from_slice(&piece);
            }
        }
        assert!(t.0.borrow().ring.in_file());
        let kept: Vec<u8> = records(&t).into_iter().flat_map(|(_, b)| b).collect();
        let held = t.0.borrow();
        assert!(held.ring.len() <= 4096);
        assert!(held.ring.start() > 4096 * 4, "it wrapped several times");
        assert_eq!(held.left_out.bytes + kept.len() as u64, all.len() as u64);
        assert!(all.ends_with(&kept));
        let (first, last) = held.left_out.whole.expect("whole attempts left out");
        assert_eq!(first, 1);
        assert_eq!(last + 1, held.attempts[0].1);
    }

    #[test]
    fn the_left_out_parts_are_named_by_attempt() {
        assert_eq!(parts(Some((1, 1)), None), "all of attempt 1");
        assert_eq!(
            parts(Some((1, 3)), Some(4)),
            "all of attempts 1-3 and the beginning of attempt 4"
        );
        assert_eq!(parts(None, Some(1)), "the beginning of attempt 1");
        assert_eq!(bytes(1), "1 byte");
    }
}
