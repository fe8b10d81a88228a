//! What each attempt reads on stdin: the same bytes every time. A regular file is rewound to
//! where it stood when retry started; a pipe or socket is recorded as the attempts read it and
//! replayed to the next; a terminal or device is passed through.

use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};

use nix::errno::Errno;
use nix::fcntl::{FcntlArg, OFlag, SpliceFFlags, fcntl, tee};
use nix::sys::stat::{SFlag, fstat};
use nix::unistd::{Whence, lseek, pipe2};

use super::process::ChildFd;
use super::spool::Spool;
use crate::policy::StdinMode;

/// One page: the attempt's pipe holds this much, so that "the pipe has room" means "the
/// attempt has read everything it was given", and nothing is taken from stdin ahead of it.
const PAGE: usize = 4096;
/// Reading in this size when replaying the record, or when stdin cannot be peeked at.
const CHUNK: usize = 64 * 1024;
const GROWN_PIPE: i32 = 256 * 1024;

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
                let stdin = io::stdin();
                let Ok(stat) = fstat(stdin.as_fd()) else {
                    // No stdin at all: the attempts get none either.
                    return Input::Pass;
                };
                let kind = SFlag::from_bits_truncate(stat.st_mode) & SFlag::S_IFMT;
                if kind == SFlag::S_IFREG {
                    match lseek(stdin.as_fd(), 0, Whence::SeekCur) {
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
                lseek(io::stdin().as_fd(), *offset as i64, Whence::SeekSet)?;
                Ok(ChildFd::Inherit)
            }
            Input::Replay(replay) => replay.start(),
        }
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
/// From a pipe, nothing is taken that no attempt read: each page is first copied to the
/// attempt with tee(2), which leaves it in retry's stdin, and taken from stdin into the record
/// only once the attempt has read it. So `cmd | while read l; do retry -- true; done` keeps its
/// lines. A socket cannot be peeked at that way; from one, retry reads at most a page ahead of
/// an attempt that has not shown it reads stdin.
#[derive(Default)]
pub struct Replay {
    record: Spool,
    /// retry's stdin has ended (or failed: what was read is kept and replayed).
    eof: bool,
    /// stdin cannot be peeked at with tee(2): read it instead.
    no_tee: bool,
    feed: Option<Feed>,
}

/// The current attempt's stdin pipe.
struct Feed {
    pipe: OwnedFd,
    /// The read end, kept to ask how much the attempt left unread when it ends.
    reader: OwnedFd,
    /// How much of the record this attempt was given.
    sent: u64,
    /// The pipe had room (was empty) when last polled.
    room: bool,
    /// Bytes peeked into the pipe from stdin and not yet taken from it.
    peeked: usize,
    /// The pipe was made larger, for speed, when peeking is not possible.
    grown: bool,
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
}

/// Reads retry's stdin with one read(2), unbuffered: std's buffered stdin would take more
/// from the pipe than asked for, and what it took would be lost to whoever reads stdin next.
fn read_stdin(buf: &mut [u8]) -> nix::Result<usize> {
    loop {
        match nix::unistd::read(io::stdin().as_fd(), buf) {
            Err(Errno::EINTR) => {}
            done => return done,
        }
    }
}

nix::ioctl_read_bad!(fionread, nix::libc::FIONREAD, nix::libc::c_int);

/// How many bytes wait unread in a pipe.
fn unread(pipe: &OwnedFd) -> usize {
    let mut n: nix::libc::c_int = 0;
    // SAFETY: FIONREAD writes one int through a valid pointer.
    match unsafe { fionread(pipe.as_raw_fd(), &mut n) } {
        Ok(_) => usize::try_from(n).unwrap_or(0),
        Err(_) => 0,
    }
}

impl Replay {
    fn start(&mut self) -> io::Result<ChildFd> {
        let (read, write) = pipe2(OFlag::O_CLOEXEC)?;
        fcntl(&write, FcntlArg::F_SETFL(OFlag::O_NONBLOCK))?;
        if fcntl(&write, FcntlArg::F_SETPIPE_SZ(PAGE as i32)).is_err() {
            // Without a one-page pipe, "room" no longer means "all read": do not peek.
            self.no_tee = true;
        }
        self.feed = Some(Feed {
            reader: read.try_clone()?,
            pipe: write,
            sent: 0,
            room: false,
            peeked: 0,
            grown: false,
        });
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

    /// What to poll for: the attempt's pipe (writable) or retry's stdin (readable).
    pub fn need(&self) -> (Need, Option<BorrowedFd<'_>>) {
        match &self.feed {
            None => (Need::Nothing, None),
            Some(feed) if feed.sent < self.record.len() || !feed.room => {
                (Need::Room, Some(feed.pipe.as_fd()))
            }
            Some(_) if !self.eof => (Need::Input, None),
            Some(_) => (Need::Nothing, None),
        }
    }

    /// The attempt's pipe has room: what was peeked is read, so take it from stdin; then send
    /// what is recorded and not yet sent.
    pub fn on_room(&mut self) {
        let Some(feed) = &mut self.feed else { return };
        feed.room = true;
        let peeked = std::mem::take(&mut feed.peeked);
        if peeked > 0 {
            self.take(peeked);
        } else if self.no_tee && feed.sent > 0 && !feed.grown {
            // It read the first page: it reads stdin, so speed matters more now.
            let _ = fcntl(&feed.pipe, FcntlArg::F_SETPIPE_SZ(GROWN_PIPE));
            feed.grown = true;
        }
        self.send();
    }

    /// retry's stdin is readable: give the attempt one page of it.
    pub fn on_input(&mut self) {
        let Some(feed) = &mut self.feed else { return };
        if !self.no_tee {
            match tee(
                io::stdin(),
                &feed.pipe,
                PAGE,
                SpliceFFlags::SPLICE_F_NONBLOCK,
            ) {
                Ok(0) => self.eof = true,
                Ok(n) => {
                    feed.peeked = n;
                    feed.room = false;
                }
                Err(Errno::EAGAIN | Errno::EINTR) => {}
                // The attempt closed its stdin: it wants no more.
                Err(Errno::EPIPE) => self.feed = None,
                // Not a pipe (a socket): read it instead.
                Err(_) => self.no_tee = true,
            }
            self.settle();
            return;
        }
        let size = if feed.grown { CHUNK } else { PAGE };
        let mut buf = vec![0u8; size];
        match read_stdin(&mut buf) {
            Ok(0) | Err(_) => self.eof = true,
            Ok(n) => self.keep(&buf[..n]),
        }
        self.send();
    }

    /// Takes `n` bytes that an attempt has read from stdin into the record.
    fn take(&mut self, mut n: usize) {
        let mut buf = vec![0u8; n.min(CHUNK)];
        while n > 0 {
            let want = n.min(buf.len());
            match read_stdin(&mut buf[..want]) {
                Ok(0) | Err(_) => {
                    self.eof = true;
                    break;
                }
                Ok(got) => {
                    self.keep(&buf[..got]);
                    if let Some(feed) = &mut self.feed {
                        feed.sent += got as u64;
                    }
                    n -= got;
                }
            }
        }
        self.settle();
    }

    fn keep(&mut self, bytes: &[u8]) {
        if self.record.append(bytes).is_err() {
            // Nowhere to keep it: this attempt still gets it, later ones cannot.
            self.eof = true;
        }
    }

    /// Sends recorded bytes until the pipe is full or all are sent.
    fn send(&mut self) {
        let Some(feed) = &mut self.feed else { return };
        // No more than the pipe can take: what does not fit would only be copied again.
        let mut buf = vec![0u8; if feed.grown { CHUNK } else { PAGE }];
        while feed.room && feed.sent < self.record.len() {
            let n = match self.record.read_at(feed.sent, &mut buf) {
                Ok(n) if n > 0 => n,
                _ => break,
            };
            match nix::unistd::write(&feed.pipe, &buf[..n]) {
                Ok(written) => {
                    feed.sent += written as u64;
                    // Ask the kernel again before the next write: a full pipe is polled until
                    // the attempt reads it.
                    feed.room = false;
                }
                Err(Errno::EAGAIN) => feed.room = false,
                // EPIPE: the attempt closed its stdin; it wants no more.
                Err(_) => {
                    self.feed = None;
                    return;
                }
            }
        }
        self.settle();
    }

    /// Closes the pipe once everything is sent and stdin has ended, so the attempt sees EOF.
    fn settle(&mut self) {
        if self.eof
            && self
                .feed
                .as_ref()
                .is_some_and(|f| f.sent == self.record.len() && f.peeked == 0)
        {
            self.feed = None;
        }
    }
}
