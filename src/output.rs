//! The command's stdout and stderr: passed straight through when nothing needs to see them;
//! otherwise read by retry, which copies them on as they arrive (or holds stdout, with
//! `--stdout hold`) and shows them to the output rules.

use std::io::{self, Write};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};

use clap::ValueEnum;
use nix::errno::Errno;
use nix::fcntl::{FcntlArg, OFlag, fcntl};
use nix::unistd::pipe2;

use crate::process::ChildFd;
use crate::spool::Spool;
use crate::watch::{Found, Rules, Scan};

/// `--stdout`: where each attempt's stdout goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum StdoutMode {
    /// The command writes straight to retry's stdout.
    Pass,
    /// Hold each attempt's stdout; only the attempt that ends the run writes to stdout, the
    /// held output of retried attempts goes to stderr.
    Hold,
}

/// One of the command's output streams.
pub struct Stream {
    /// stdout (else stderr).
    stdout: bool,
    hold: bool,
    scan: bool,
    current: Option<Capture>,
}

/// An attempt's stream, read through a pipe.
struct Capture {
    pipe: OwnedFd,
    open: bool,
    held: Spool,
    scan: Scan,
}

impl Stream {
    /// `hold` keeps the output until the attempt's fate is known; `scan` shows it to the rules.
    pub fn new(stdout: bool, hold: bool, scan: bool) -> Stream {
        Stream {
            stdout,
            hold,
            scan,
            current: None,
        }
    }

    /// The stream of the next attempt: retry's own when nothing needs to see it, else a pipe.
    pub fn for_attempt(&mut self) -> io::Result<ChildFd> {
        if !self.hold && !self.scan {
            return Ok(ChildFd::Inherit);
        }
        let (read, write) = pipe2(OFlag::O_CLOEXEC)?;
        fcntl(&read, FcntlArg::F_SETFL(OFlag::O_NONBLOCK))?;
        self.current = Some(Capture {
            pipe: read,
            open: true,
            held: Spool::default(),
            scan: Scan::default(),
        });
        Ok(ChildFd::Pipe(write))
    }

    /// The pipe to poll, while the attempt may still write to it.
    pub fn fd(&self) -> Option<BorrowedFd<'_>> {
        self.current
            .as_ref()
            .filter(|c| c.open)
            .map(|c| c.pipe.as_fd())
    }

    /// Takes what the attempt has written so far, until the pipe is empty or closed.
    pub fn on_output(&mut self, rules: &Rules) {
        let (stdout, hold, scan) = (self.stdout, self.hold, self.scan);
        let Some(capture) = self.current.as_mut().filter(|c| c.open) else {
            return;
        };
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            match nix::unistd::read(&capture.pipe, &mut buf) {
                Ok(0) => {
                    capture.open = false;
                    return;
                }
                Ok(n) => {
                    let bytes = &buf[..n];
                    if scan {
                        capture.scan.feed(rules, bytes);
                    }
                    // Held output that cannot be kept is let through rather than lost.
                    if !hold || capture.held.append(bytes).is_err() {
                        write_to(stdout, bytes);
                    }
                }
                Err(Errno::EINTR) => {}
                // EAGAIN: nothing more for now.
                Err(_) => return,
            }
        }
    }

    /// The attempt ended: reads what is left in the pipe, and returns what the rules found.
    pub fn finish(&mut self, rules: &Rules) -> Option<Found> {
        self.on_output(rules);
        self.current.as_mut().and_then(|c| c.scan.finish(rules))
    }

    /// The attempt's fate is known: its held stdout goes to stdout if it ends the run, else to
    /// stderr.
    pub fn release(&mut self, last: bool) {
        let Some(capture) = self.current.take() else {
            return;
        };
        if self.hold {
            // A closed stdout or stderr downstream is the reader's choice, not retry's failure.
            let _ = if last && self.stdout {
                capture.held.copy_to(&mut io::stdout().lock())
            } else {
                capture.held.copy_to(&mut io::stderr().lock())
            };
        }
    }
}

/// Copies output on to retry's own stdout or stderr, at once.
fn write_to(stdout: bool, bytes: &[u8]) {
    // A reader that went away downstream is not retry's failure: the bytes have nowhere to go.
    let _ = if stdout {
        let mut out = io::stdout().lock();
        out.write_all(bytes).and_then(|()| out.flush())
    } else {
        io::stderr().lock().write_all(bytes)
    };
}
