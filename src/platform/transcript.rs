//! `--output-on-failure`: everything a run would print, held in the order it happened (each
//! attempt's stdout and stderr, and retry's own log), and printed only if the run fails, as
//! chronic does for cron. Held in memory up to a bound, then in a private temporary file.

use std::cell::RefCell;
use std::io::{self, Write};
use std::os::fd::BorrowedFd;
use std::rc::Rc;

use nix::errno::Errno;

use super::child_fd;
use super::spool::Spool;

/// Where a piece of the transcript goes when it is printed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum To {
    Stdout,
    Stderr,
}

/// The run's transcript, shared by the two output streams and the log.
#[derive(Clone, Default)]
pub struct Transcript(Rc<RefCell<Held>>);

#[derive(Default)]
struct Held {
    /// Records: the stream (1 byte), the length (4 bytes, little-endian), the bytes.
    spool: Spool,
    /// Where each attempt still held begins in the spool, oldest first.
    attempts: Vec<u64>,
    /// How many of the earliest attempts were dropped to keep what is held bounded.
    dropped: u32,
    /// Something could not be held (no room for the temporary file): what was held has been
    /// printed, with a warning, and everything since passes through as it comes.
    passing: bool,
}

/// The most bytes of one record; longer pieces are cut into several.
const RECORD: usize = u32::MAX as usize;

/// The most that is held: past it, the earliest attempts are dropped, down to half of it (so
/// that copying what is kept is paid once per half of it), so that `--forever` cannot fill a
/// disk.
pub const LIMIT: u64 = 16 << 20;

impl Transcript {
    /// Adds `bytes` bound for `to`. When they cannot be held, what was held is printed, with a
    /// warning after it, and these bytes and all later ones pass straight through: the end of
    /// a run is never lost.
    pub fn add(&self, to: To, bytes: &[u8]) {
        let mut held = self.0.borrow_mut();
        if held.passing {
            write_all(fd(to), bytes);
            return;
        }
        for (i, piece) in bytes.chunks(RECORD).enumerate() {
            let whole = held.spool.len();
            let tag = [match to {
                To::Stdout => 1u8,
                To::Stderr => 2u8,
            }];
            let len = (piece.len() as u32).to_le_bytes();
            let kept = held
                .spool
                .append(&tag)
                .and_then(|()| held.spool.append(&len))
                .and_then(|()| held.spool.append(piece));
            if let Err(e) = kept {
                // The record cut short is left out: it follows whole, below.
                held.print(whole);
                let line = format!(
                    "retry: warning: --output-on-failure cannot hold more output ({}): what \
                     was held is above; the rest follows as it comes\n",
                    super::files::why(&e)
                );
                write_all(child_fd::stderr(), line.as_bytes());
                held.passing = true;
                held.spool = Spool::default();
                let rest = bytes
                    .chunks(RECORD)
                    .skip(i)
                    .flatten()
                    .copied()
                    .collect::<Vec<u8>>();
                write_all(fd(to), &rest);
                return;
            }
        }
        if held.spool.len() > LIMIT {
            held.bound();
        }
    }

    /// An attempt begins: `mark` says which, and output held from here on is that attempt's
    /// when the earliest attempts are dropped.
    pub fn attempt(&self, mark: &[u8]) {
        {
            let mut held = self.0.borrow_mut();
            if !held.passing {
                let at = held.spool.len();
                held.attempts.push(at);
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
        let mut held = self.0.borrow_mut();
        let end = held.spool.len();
        held.print(end);
    }
}

impl Held {
    /// Prints what is held, up to `end` (where the last whole record ends), and lets it go.
    fn print(&mut self, end: u64) {
        if self.dropped > 0 {
            let line = format!(
                "retry: --output-on-failure: the output of the {} earliest {} left out: \
                 at most {} MiB is held\n",
                self.dropped,
                if self.dropped == 1 {
                    "attempt is"
                } else {
                    "attempts are"
                },
                LIMIT >> 20
            );
            write_all(child_fd::stderr(), line.as_bytes());
        }
        let mut at = 0u64;
        let mut header = [0u8; 5];
        while at < end {
            if !read_exact(&self.spool, at, &mut header) {
                break;
            }
            at += header.len() as u64;
            let len = u64::from(u32::from_le_bytes([
                header[1], header[2], header[3], header[4],
            ]));
            let to = if header[0] == 1 {
                To::Stdout
            } else {
                To::Stderr
            };
            if !copy(&self.spool, at, len, fd(to)) {
                break;
            }
            at += len;
        }
        self.spool = Spool::default();
        self.attempts.clear();
        self.dropped = 0;
    }

    /// Drops the earliest attempts until what is held is at most half of [`LIMIT`]; the
    /// attempt running now is always kept.
    fn bound(&mut self) {
        let len = self.spool.len();
        let Some(keep) = self
            .attempts
            .iter()
            .position(|&at| len - at <= LIMIT / 2)
            .or(Some(self.attempts.len().saturating_sub(1)))
            .filter(|&i| i > 0 && i < self.attempts.len())
        else {
            return;
        };
        let from = self.attempts[keep];
        let mut kept = Spool::default();
        let mut buf = vec![0u8; 64 * 1024];
        let mut at = from;
        while at < len {
            let want = usize::try_from(len - at)
                .unwrap_or(usize::MAX)
                .min(buf.len());
            match self.spool.read_at(at, &mut buf[..want]) {
                Ok(n) if n > 0 => {
                    if kept.append(&buf[..n]).is_err() {
                        // Keep what is held as it is: the next bytes that cannot be held
                        // print it.
                        return;
                    }
                    at += n as u64;
                }
                _ => return,
            }
        }
        self.spool = kept;
        self.dropped += u32::try_from(keep).unwrap_or(u32::MAX);
        self.attempts = self.attempts[keep..].iter().map(|a| a - from).collect();
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

fn read_exact(spool: &Spool, at: u64, buf: &mut [u8]) -> bool {
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
fn copy(spool: &Spool, at: u64, len: u64, fd: BorrowedFd<'_>) -> bool {
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

    #[test]
    fn pieces_are_kept_in_order_with_their_streams() {
        let t = Transcript::default();
        t.add(To::Stdout, b"out 1\n");
        let mut log = t.log();
        log.write_all(b"retry: attempt 1 failed\n").expect("logged");
        t.add(To::Stderr, b"err 2\n");
        let held = t.0.borrow();
        let mut all = vec![0u8; usize::try_from(held.spool.len()).expect("small")];
        assert!(read_exact(&held.spool, 0, &mut all));
        let mut pieces = Vec::new();
        let mut rest = &all[..];
        while !rest.is_empty() {
            let len = u32::from_le_bytes([rest[1], rest[2], rest[3], rest[4]]) as usize;
            pieces.push((
                rest[0],
                String::from_utf8_lossy(&rest[5..5 + len]).into_owned(),
            ));
            rest = &rest[5 + len..];
        }
        assert_eq!(
            pieces,
            [
                (1, "out 1\n".to_string()),
                (2, "retry: attempt 1 failed\n".to_string()),
                (2, "err 2\n".to_string())
            ]
        );
    }

    #[test]
    fn past_the_limit_the_earliest_attempts_are_dropped_and_the_running_one_kept() {
        let t = Transcript::default();
        let piece = vec![b'x'; 1 << 20];
        for n in 1..=20 {
            t.attempt(format!("attempt {n}\n").as_bytes());
            for _ in 0..2 {
                t.add(To::Stdout, &piece);
            }
        }
        let held = t.0.borrow();
        assert!(held.spool.len() <= LIMIT, "{}", held.spool.len());
        assert!(held.dropped > 0);
        assert_eq!(held.attempts.len() as u32 + held.dropped, 20);
        // What is kept begins with an attempt's mark.
        let mut start = [0u8; 5 + 7];
        assert!(read_exact(&held.spool, 0, &mut start));
        assert_eq!(&start[5..], b"attempt");
    }
}
