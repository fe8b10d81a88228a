//! What becomes of each attempt's stdout: streamed straight through, or held until the run
//! knows whether this attempt is the one that ends it.

use std::io::{self, Write};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::process::Stdio;

use clap::ValueEnum;
use nix::fcntl::{FcntlArg, OFlag, fcntl};
use nix::unistd::pipe2;

use crate::spool::Spool;

/// `--stdout`: where each attempt's stdout goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum StdoutMode {
    /// The command writes straight to retry's stdout.
    Pass,
    /// Hold each attempt's stdout; only the attempt that ends the run writes to stdout, the
    /// held output of retried attempts goes to stderr.
    Hold,
}

/// The current attempt's stdout, when it is held.
pub struct Held {
    pipe: OwnedFd,
    spool: Spool,
    open: bool,
}

/// The run's stdout, as the attempts see it.
pub struct Output {
    mode: StdoutMode,
    held: Option<Held>,
}

impl Output {
    pub fn new(mode: StdoutMode) -> Output {
        Output { mode, held: None }
    }

    /// The stdout of the next attempt.
    pub fn for_attempt(&mut self) -> io::Result<Stdio> {
        match self.mode {
            StdoutMode::Pass => Ok(Stdio::inherit()),
            StdoutMode::Hold => {
                let (read, write) = pipe2(OFlag::O_CLOEXEC)?;
                fcntl(&read, FcntlArg::F_SETFL(OFlag::O_NONBLOCK))?;
                self.held = Some(Held {
                    pipe: read,
                    spool: Spool::default(),
                    open: true,
                });
                Ok(Stdio::from(write))
            }
        }
    }

    /// The pipe to poll for output, while the attempt may still write.
    pub fn fd(&self) -> Option<BorrowedFd<'_>> {
        self.held
            .as_ref()
            .filter(|h| h.open)
            .map(|h| h.pipe.as_fd())
    }

    /// Takes what the attempt has written so far, until the pipe is empty or closed.
    pub fn on_output(&mut self) {
        let Some(held) = self.held.as_mut().filter(|h| h.open) else {
            return;
        };
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            match nix::unistd::read(&held.pipe, &mut buf) {
                Ok(0) => {
                    held.open = false;
                    return;
                }
                Ok(n) => {
                    if held.spool.append(&buf[..n]).is_err() {
                        // Nowhere to hold it: let it through rather than lose it.
                        let _ = io::stderr().write_all(&buf[..n]);
                    }
                }
                Err(nix::errno::Errno::EINTR) => {}
                // EAGAIN: nothing more for now.
                Err(_) => return,
            }
        }
    }

    /// The attempt ended: its held stdout goes to stdout if it ends the run, else to stderr.
    pub fn release(&mut self, last: bool) {
        // What it wrote just before it ended is still in the pipe.
        self.on_output();
        let Some(held) = self.held.take() else { return };
        // A closed stdout or stderr downstream is the reader's choice, not retry's failure.
        let _ = if last {
            held.spool.copy_to(&mut io::stdout().lock())
        } else {
            held.spool.copy_to(&mut io::stderr().lock())
        };
    }
}
