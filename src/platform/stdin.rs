//! What each attempt reads on stdin: the same bytes every time. A regular file is rewound to
//! where it stood when retry started; a pipe or socket is recorded as the attempts read it and
//! replayed to the next; a terminal or device is passed through.

use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::time::Duration;

use nix::errno::Errno;
use nix::fcntl::{FcntlArg, OFlag, fcntl};
use nix::sys::stat::{SFlag, fstat};
use nix::unistd::{Whence, lseek};

use super::child_fd::{self, ChildFd};
use super::spool::Spool;
use crate::policy::StdinMode;

/// One page: the attempt's pipe holds this much at first, so that "the pipe has room" means
/// "the attempt has read everything it was given", and nothing is taken from stdin ahead of it.
const PAGE: usize = 4096;
/// The attempt's pipe, and retry's stdin pipe, once the attempt has shown that it reads: the
/// largest an unprivileged process may ask for by default (`/proc/sys/fs/pipe-max-size`).
const BIG: usize = 1 << 20;
/// Reading in this size when stdin cannot be peeked at (a socket).
const CHUNK: usize = 64 * 1024;
/// Once an attempt has read this much of stdin, it streams: retry takes stdin as fast as the
/// attempt's pipe takes it, up to that pipe's size ahead of what the attempt has read, rather
/// than waiting for the attempt to have read everything before taking more.
const STREAM_AFTER: u64 = 1 << 20;
/// How soon, then how seldom at most, to look whether an attempt has read all it was given,
/// when its pipe is large: no poll event says "this pipe is empty".
const DRAIN_FIRST: Duration = Duration::from_micros(100);
const DRAIN_MAX: Duration = Duration::from_millis(50);

/// The run's stdin, as the attempts see it.
pub enum Input {
    Pass,
    Null,
    /// A regular file, rewound to this offset before each attempt.
    Rewind(u64),
    Replay(Replay),
}

impl Input {
    pub fn new(mode: StdinMode) -> Input {
        match mode {
            StdinMode::Pass => Input::Pass,
            StdinMode::Null => Input::Null,
            StdinMode::Replay => Input::Replay(Replay::default()),
            StdinMode::Auto => {
                let stdin = child_fd::stdin();
                let Ok(stat) = fstat(stdin) else {
                    // No stdin at all: the attempts get none either.
                    return Input::Pass;
                };
                let kind = SFlag::from_bits_truncate(stat.st_mode) & SFlag::S_IFMT;
                if kind == SFlag::S_IFREG {
                    match lseek(stdin, 0, Whence::SeekCur) {
                        Ok(offset) => Input::Rewind(offset as u64),
                        Err(_) => Input::Replay(Replay::default()),
                    }
                } else if kind == SFlag::S_IFIFO || kind == SFlag::S_IFSOCK {
                    Input::Replay(Replay::default())
                } else {
                    Input::Pass
                }
            }
        }
    }

    /// The stdin of the next attempt.
    pub fn for_attempt(&mut self) -> io::Result<ChildFd> {
        match self {
            Input::Pass => Ok(ChildFd::Inherit),
            Input::Null => Ok(ChildFd::Null),
            Input::Rewind(offset) => {
                lseek(child_fd::stdin(), *offset as i64, Whence::SeekSet)?;
                Ok(ChildFd::Inherit)
            }
            Input::Replay(replay) => replay.start(),
        }
    }

    /// Why a later attempt cannot be fed what the earlier ones read, if it cannot.
    pub fn unrepeatable(&self) -> Option<String> {
        match self {
            Input::Replay(Replay { lost: Some(e), .. }) => Some(format!(
                "stdin could not be kept for the next attempt ({e})"
            )),
            _ => None,
        }
    }

    /// Whether stdin is replayed.
    #[cfg(all(target_os = "linux", not(retry_portable)))]
    pub fn replays(&self) -> bool {
        matches!(self, Input::Replay(_))
    }

    /// The replay, when there is one.
    pub fn replay(&mut self) -> Option<&mut Replay> {
        match self {
            Input::Replay(replay) => Some(replay),
            _ => None,
        }
    }
}

/// A pipe or socket on stdin, recorded as the attempts read it.
///
/// From a pipe, until an attempt has read [`STREAM_AFTER`] bytes, nothing is taken that no
/// attempt read: bytes are first copied to the attempt with tee(2), which leaves them in
/// retry's stdin, and taken from stdin into the record only once the attempt has read them
/// all. So `cmd | while read l; do retry -- true; done` keeps its lines, and so does any
/// command that reads a little and exits. The attempt's pipe holds one page until the attempt
/// has read one; then it, and retry's stdin, grow to a MiB. Once the attempt has read
/// [`STREAM_AFTER`] bytes it streams: each tee(2) into its pipe is taken into the record at
/// once, so the bytes move as fast as the attempt reads them, retry waits only in poll(2), and
/// what it took and the attempt did not read is at most what the attempt's pipe holds (a MiB).
/// A later attempt is given the record first, through a pipe of a MiB from the start. A socket
/// cannot be peeked at that way; from one, retry reads at most a page ahead of an attempt that
/// has not shown it reads stdin.
#[derive(Default)]
pub struct Replay {
    record: Spool,
    /// retry's stdin has ended (or failed: what was read is kept and replayed).
    eof: bool,
    /// stdin cannot be peeked at with tee(2): read it instead.
    no_tee: bool,
    /// retry's own stdin pipe was asked to grow.
    stdin_grown: bool,
    /// The record could not be kept (no room for its temporary file): the attempt running
    /// still gets all of its input, and no later attempt is started.
    lost: Option<io::Error>,
    feed: Option<Feed>,
}

/// The current attempt's stdin pipe.
struct Feed {
    pipe: OwnedFd,
    /// The read end, kept to ask how much the attempt left unread.
    reader: OwnedFd,
    /// How much of the record this attempt was given.
    sent: u64,
    /// The pipe had room when last polled (with one page, room means empty).
    room: bool,
    /// Bytes peeked into the pipe from stdin and not yet taken from it.
    peeked: usize,
    /// Bytes read from a socket that could not be recorded, still to be given to the attempt.
    unkept: Vec<u8>,
    /// The pipe's size, once grown: then its room no longer means it is empty.
    big: Option<usize>,
    /// The next look for an empty pipe, when it is big.
    drain_in: Duration,
    /// The attempt has read [`STREAM_AFTER`] bytes: stdin is taken as the pipe takes it.
    streaming: bool,
}

/// What the replay waits for next.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Need {
    /// Nothing: no attempt is reading, or everything is sent.
    Nothing,
    /// Room in the attempt's pipe.
    Room,
    /// More bytes on retry's stdin.
    Input,
    /// The attempt to read what it was given: look again after this long.
    Drain(Duration),
}

/// Reads retry's stdin with one read(2), unbuffered: std's buffered stdin would take more
/// from the pipe than asked for, and what it took would be lost to whoever reads stdin next.
fn read_stdin(buf: &mut [u8]) -> nix::Result<usize> {
    loop {
        match nix::unistd::read(child_fd::stdin(), buf) {
            Err(Errno::EINTR) => {}
            done => return done,
        }
    }
}

nix::ioctl_read_bad!(fionread, nix::libc::FIONREAD, nix::libc::c_int);

/// How many bytes wait unread in a pipe.
fn unread(pipe: &impl AsFd) -> usize {
    let mut n: nix::libc::c_int = 0;
    // SAFETY: FIONREAD writes one int through a valid pointer.
    match unsafe { fionread(pipe.as_fd().as_raw_fd(), &mut n) } {
        Ok(_) => usize::try_from(n).unwrap_or(0),
        Err(_) => 0,
    }
}

/// Asks for a pipe of `size` bytes; returns the size it has, where it can be set.
fn grow(pipe: BorrowedFd<'_>, size: usize) -> Option<usize> {
    super::pipe::resize(pipe, size)
}

impl Replay {
    fn start(&mut self) -> io::Result<ChildFd> {
        let (read, write) = super::pipe::pipe(false)?;
        fcntl(&write, FcntlArg::F_SETFL(OFlag::O_NONBLOCK))?;
        if grow(write.as_fd(), PAGE) != Some(PAGE) {
            // Without a one-page pipe, "room" no longer means "all read": do not peek. (So
            // where a pipe's size cannot be set, macOS and the BSDs, stdin is read a page
            // ahead of an attempt, as from a socket.)
            self.no_tee = true;
        }
        self.feed = Some(Feed {
            reader: read.try_clone()?,
            pipe: write,
            sent: 0,
            room: false,
            peeked: 0,
            unkept: Vec::new(),
            big: None,
            drain_in: DRAIN_FIRST,
            streaming: false,
        });
        if self.record.len() > 0 {
            // The record is not taken from stdin: it may go as fast as the attempt reads it.
            self.grow();
        }
        self.settle();
        Ok(ChildFd::Pipe(read))
    }

    /// The attempt ended: its pipe is closed. What it read of the peeked bytes is taken from
    /// stdin into the record; what it did not read stays in stdin.
    pub fn stop(&mut self) {
        if let Some(feed) = self.feed.take()
            && feed.peeked > 0
        {
            let read = feed.peeked.saturating_sub(unread(&feed.reader));
            self.take(read);
        }
    }

    /// What to poll for: the attempt's pipe (writable), retry's stdin (readable), or the time
    /// to look whether the attempt has read what it was given.
    pub fn need(&self) -> (Need, Option<BorrowedFd<'_>>) {
        match &self.feed {
            None => (Need::Nothing, None),
            Some(feed) if feed.peeked > 0 && feed.big.is_some() => {
                (Need::Drain(feed.drain_in), None)
            }
            Some(feed)
                if feed.sent < self.record.len() || !feed.unkept.is_empty() || !feed.room =>
            {
                (Need::Room, Some(feed.pipe.as_fd()))
            }
            Some(_) if !self.eof => (Need::Input, None),
            Some(_) => (Need::Nothing, None),
        }
    }

    /// The attempt's pipe has room: with one page, what was peeked is read, so take it from
    /// stdin, and grow the pipe; then send what is recorded and not yet sent.
    pub fn on_room(&mut self) {
        let Some(feed) = &mut self.feed else { return };
        feed.room = true;
        let peeked = std::mem::take(&mut feed.peeked);
        if peeked > 0 || (self.no_tee && feed.sent > 0) {
            // It read what it was given: it reads stdin, so speed matters more now.
            self.grow();
        }
        if peeked > 0 {
            self.take(peeked);
        }
        self.send();
        self.stream();
    }

    /// The time to look has come: if the attempt has read all it was given, take it from
    /// stdin; else look again later, less often.
    pub fn on_drain(&mut self) {
        let Some(feed) = &mut self.feed else { return };
        if feed.peeked == 0 {
            return;
        }
        if unread(&feed.reader) > 0 {
            feed.drain_in = (feed.drain_in * 2).min(DRAIN_MAX);
            return;
        }
        feed.drain_in = DRAIN_FIRST;
        feed.room = true;
        let peeked = std::mem::take(&mut feed.peeked);
        // The attempt has read everything it was given.
        feed.streaming = feed.sent + peeked as u64 >= STREAM_AFTER;
        self.take(peeked);
        self.stream();
    }

    /// The attempt reads: its pipe, and retry's stdin pipe, grow, so that the bytes move a
    /// MiB at a time rather than a page.
    fn grow(&mut self) {
        let Some(feed) = &mut self.feed else { return };
        if feed.big.is_none() {
            feed.big = grow(feed.pipe.as_fd(), BIG).filter(|size| *size > PAGE);
        }
        if !self.stdin_grown {
            self.stdin_grown = true;
            // Not ours to keep small; a writer ahead of the attempts simply gets further.
            let _ = grow(child_fd::stdin(), BIG);
        }
    }

    /// retry's stdin is readable: give the attempt what it holds, as far as the pipe takes it.
    pub fn on_input(&mut self) {
        let Some(feed) = &mut self.feed else { return };
        if feed.streaming && !self.no_tee {
            self.stream();
            return;
        }
        if !self.no_tee {
            let size = feed.big.unwrap_or(PAGE);
            match super::pipe::peek_into(child_fd::stdin(), feed.pipe.as_fd(), size) {
                Ok(0) => self.eof = true,
                Ok(n) => {
                    feed.peeked = n;
                    feed.room = false;
                    feed.drain_in = DRAIN_FIRST;
                }
                // The attempt's pipe is full (stdin was readable).
                Err(Errno::EAGAIN) => feed.room = false,
                Err(Errno::EINTR) => {}
                // The attempt closed its stdin: it wants no more.
                Err(Errno::EPIPE) => self.feed = None,
                // Not a pipe (a socket): read it instead.
                Err(_) => self.no_tee = true,
            }
            self.settle();
            return;
        }
        let size = if feed.big.is_some() { CHUNK } else { PAGE };
        let mut buf = vec![0u8; size];
        match read_stdin(&mut buf) {
            Ok(0) | Err(_) => self.eof = true,
            Ok(n) => self.keep(&buf[..n]),
        }
        self.send();
    }

    /// An attempt that reads a lot, with the record all sent: copies stdin into its pipe and
    /// takes the same bytes into the record at once, until the pipe is full or stdin is empty.
    fn stream(&mut self) {
        loop {
            let Some(feed) = &mut self.feed else { return };
            if !feed.streaming
                || self.no_tee
                || self.eof
                || !feed.room
                || feed.peeked > 0
                || feed.sent < self.record.len()
                || !feed.unkept.is_empty()
            {
                return;
            }
            let size = feed.big.unwrap_or(PAGE);
            match super::pipe::peek_into(child_fd::stdin(), feed.pipe.as_fd(), size) {
                Ok(0) => self.eof = true,
                Ok(n) => self.take(n),
                // Either the attempt's pipe is full or stdin is empty: wait for the one that is.
                Err(Errno::EAGAIN) => {
                    if unread(&child_fd::stdin()) > 0 {
                        feed.room = false;
                    }
                    return;
                }
                Err(Errno::EINTR) => {}
                // The attempt closed its stdin: it wants no more.
                Err(Errno::EPIPE) => self.feed = None,
                Err(_) => self.no_tee = true,
            }
            self.settle();
        }
    }

    /// Takes `n` bytes that an attempt has read from stdin into the record.
    fn take(&mut self, mut n: usize) {
        let mut scratch = Vec::new();
        while n > 0 {
            let got = if self.lost.is_none() {
                match self.record.append_from(child_fd::stdin(), n) {
                    Ok(got) => {
                        if let Some(feed) = &mut self.feed {
                            feed.sent += got as u64;
                        }
                        Ok(got)
                    }
                    Err(unkept) => {
                        // What was taken reached the attempt (by tee) but not the record.
                        self.lost = Some(unkept.error);
                        n -= unkept.taken;
                        continue;
                    }
                }
            } else {
                // The attempt has these bytes already; later ones will not be started.
                scratch.resize(n.min(CHUNK), 0);
                read_stdin(&mut scratch)
            };
            match got {
                Ok(0) | Err(_) => {
                    self.eof = true;
                    break;
                }
                Ok(got) => n -= got,
            }
        }
        self.settle();
    }

    fn keep(&mut self, bytes: &[u8]) {
        if self.lost.is_none()
            && let Err(e) = self.record.append(bytes)
        {
            self.lost = Some(e);
        }
        if self.lost.is_some()
            && let Some(feed) = &mut self.feed
        {
            // Not in the record: this attempt still gets it from here.
            feed.unkept.extend_from_slice(bytes);
        }
    }

    /// Sends recorded bytes until the pipe is full or all are sent.
    fn send(&mut self) {
        let Some(feed) = &mut self.feed else { return };
        let size = feed.big.unwrap_or(PAGE);
        while feed.room && (feed.sent < self.record.len() || !feed.unkept.is_empty()) {
            let written = if feed.sent < self.record.len() {
                self.record.write_to(feed.sent, feed.pipe.as_fd(), size)
            } else {
                nix::unistd::write(&feed.pipe, &feed.unkept)
            };
            match written {
                Ok(0) => break,
                Ok(n) if feed.sent < self.record.len() => {
                    feed.sent += n as u64;
                    // With one page, ask the kernel again before the next write: a full pipe
                    // is polled until the attempt reads it.
                    feed.room = feed.big.is_some();
                }
                Ok(n) => {
                    feed.unkept.drain(..n);
                    feed.room = feed.big.is_some();
                }
                Err(Errno::EAGAIN) => feed.room = false,
                Err(Errno::EINTR) => {}
                // EPIPE: the attempt closed its stdin; it wants no more.
                Err(_) => {
                    self.feed = None;
                    return;
                }
            }
        }
        // All of the record is sent: if the attempt has read enough of it, it streams on.
        if !feed.streaming
            && feed.big.is_some()
            && feed.sent == self.record.len()
            && feed.peeked == 0
        {
            feed.streaming = feed.sent.saturating_sub(unread(&feed.reader) as u64) >= STREAM_AFTER;
        }
        self.settle();
    }

    /// Closes the pipe once everything is sent and stdin has ended, so the attempt sees EOF.
    fn settle(&mut self) {
        if self.eof
            && self.feed.as_ref().is_some_and(|f| {
                f.sent == self.record.len() && f.peeked == 0 && f.unkept.is_empty()
            })
        {
            self.feed = None;
        }
    }
}
