//! What each attempt reads on stdin: the same bytes every time. A regular file is rewound to
//! where it stood when retry started; a pipe or socket is recorded as the attempts read it and
//! replayed to the next; a terminal or device is passed through.

use std::io::{self, Read};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::process::Stdio;

use clap::ValueEnum;
use nix::fcntl::{FcntlArg, OFlag, fcntl};
use nix::sys::stat::{SFlag, fstat};
use nix::unistd::{Whence, lseek, pipe2};

use crate::spool::Spool;

/// `--stdin`: how the attempts get their input.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum StdinMode {
    /// Rewind a regular file, replay a pipe or socket, pass a terminal or device through.
    Auto,
    /// Record what the attempts read and feed it again to the next one.
    Replay,
    /// Every attempt reads retry's own stdin directly; what one read, the next does not see.
    Pass,
    /// Attempts read from /dev/null.
    Null,
}

/// The first chunk is small, so that a command that never reads stdin takes little of it from
/// whatever else shares the pipe; once the command has read it, the pipe grows for speed.
const FIRST_CHUNK: usize = 4096;
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
    pub fn for_attempt(&mut self) -> io::Result<Stdio> {
        match self {
            Input::Pass => Ok(Stdio::inherit()),
            Input::Null => Ok(Stdio::null()),
            Input::Rewind(offset) => {
                lseek(io::stdin().as_fd(), *offset as i64, Whence::SeekSet)?;
                Ok(Stdio::inherit())
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
#[derive(Default)]
pub struct Replay {
    record: Spool,
    /// retry's stdin has ended (or failed: what was read is kept and replayed).
    eof: bool,
    feed: Option<Feed>,
}

/// The current attempt's stdin pipe.
struct Feed {
    pipe: OwnedFd,
    /// How much of the record this attempt was given.
    sent: u64,
    /// The pipe had room when last polled.
    room: bool,
    /// The attempt has read at least one chunk, so the pipe was made larger.
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

impl Replay {
    fn start(&mut self) -> io::Result<Stdio> {
        let (read, write) = pipe2(OFlag::O_CLOEXEC)?;
        fcntl(&write, FcntlArg::F_SETFL(OFlag::O_NONBLOCK))?;
        // Best effort: a pipe that cannot shrink only reads ahead more.
        let _ = fcntl(&write, FcntlArg::F_SETPIPE_SZ(FIRST_CHUNK as i32));
        self.feed = Some(Feed {
            pipe: write,
            sent: 0,
            room: false,
            grown: false,
        });
        self.settle();
        Ok(Stdio::from(read))
    }

    /// The attempt ended: its pipe is closed; what it did not read stays recorded.
    pub fn stop(&mut self) {
        self.feed = None;
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

    /// The attempt's pipe has room: send what is recorded and not yet sent.
    pub fn on_room(&mut self) {
        if let Some(feed) = &mut self.feed {
            if feed.sent > 0 && !feed.grown {
                // It read the first chunk: it reads stdin, so speed matters more now.
                let _ = fcntl(&feed.pipe, FcntlArg::F_SETPIPE_SZ(GROWN_PIPE));
                feed.grown = true;
            }
            feed.room = true;
        }
        self.send();
    }

    /// retry's stdin is readable: take one chunk, no more than the attempt's pipe can hold.
    pub fn on_input(&mut self) {
        let size = match &self.feed {
            Some(feed) if feed.grown => CHUNK,
            Some(_) => FIRST_CHUNK,
            None => return,
        };
        let mut buf = vec![0u8; size];
        match io::stdin().lock().read(&mut buf) {
            Ok(0) | Err(_) => self.eof = true,
            Ok(n) => {
                if self.record.append(&buf[..n]).is_err() {
                    // Nowhere to keep it: this attempt still gets it, later ones cannot.
                    self.eof = true;
                }
            }
        }
        self.send();
    }

    /// Sends recorded bytes until the pipe is full or all are sent; closes the pipe at the end.
    fn send(&mut self) {
        let Some(feed) = &mut self.feed else { return };
        let mut buf = vec![0u8; CHUNK];
        while feed.room && feed.sent < self.record.len() {
            let n = match self.record.read_at(feed.sent, &mut buf) {
                Ok(n) if n > 0 => n,
                _ => break,
            };
            match nix::unistd::write(&feed.pipe, &buf[..n]) {
                Ok(written) => {
                    feed.sent += written as u64;
                    // Ask the kernel again before the next write: a pipe that is full is
                    // polled until the attempt reads, so nothing is taken from stdin ahead of
                    // the attempt by more than what the pipe holds.
                    feed.room = false;
                }
                Err(nix::errno::Errno::EAGAIN) => feed.room = false,
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
                .is_some_and(|f| f.sent == self.record.len())
        {
            self.feed = None;
        }
    }
}
