//! The command's stdout and stderr: passed straight through when nothing needs to see them;
//! otherwise read by retry, which copies them on as they arrive (or holds stdout, with
//! `--stdout hold`) and shows them to the output rules.
//!
//! Copying on never blocks the loop: what the reader downstream has no room for yet waits in
//! `Out`, retry reads no more from the attempt until it is taken (so a slow reader holds the
//! command back, as it would without retry), and meanwhile the loop goes on watching the
//! clock and signals. Once the attempt is over, what is left is written out in full, unless
//! the run is cancelled first.

use std::os::fd::{AsFd, BorrowedFd, OwnedFd};

use nix::errno::Errno;
use nix::fcntl::{FcntlArg, OFlag, fcntl};
use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
use nix::sys::stat::{SFlag, fstat};

use super::child_fd::{self, ChildFd};
use super::signals::Signals;
use super::spool::Spool;
use super::transcript::{To, Transcript};
use crate::policy::output_rules::{Rules, Scan, Seen};

/// How much is read from an attempt's pipe at a time.
const CHUNK: usize = 64 * 1024;

/// One of the command's output streams.
pub struct Stream {
    /// stdout (else stderr).
    stdout: bool,
    hold: bool,
    scan: bool,
    current: Option<Capture>,
    /// Where the stream goes on to: retry's own stdout or stderr.
    out: Out,
    /// `--output-on-failure`: the output goes to the run's transcript instead.
    record: Option<(Transcript, To)>,
}

/// An attempt's stream, read through a pipe.
struct Capture {
    /// Closed once the attempt closed its end, or once the reader downstream went away: then,
    /// as without retry, the command's next write fails with SIGPIPE.
    pipe: Option<OwnedFd>,
    held: Spool,
    /// Holding failed (no room for the temporary file): what is held is incomplete, and
    /// nothing of this attempt may reach stdout.
    unheld: Option<std::io::Error>,
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
            out: Out::new(Sink::own(stdout)),
            record: None,
        }
    }

    /// The stream's output goes to `transcript`, to be printed only if the run fails.
    pub fn recording(mut self, transcript: Option<&Transcript>) -> Stream {
        let to = if self.stdout { To::Stdout } else { To::Stderr };
        self.record = transcript.map(|t| (t.clone(), to));
        self
    }

    /// Whether retry's own stream (stdout or stderr) can lose its reader: a pipe, a socket or
    /// a terminal can; a file or /dev/null cannot.
    pub fn can_lose_its_reader(&self) -> bool {
        self.out.sink.can_lose_its_reader
    }

    /// Whether the attempts write to retry's own stream: nothing needs to see their output.
    pub fn passes_through(&self) -> bool {
        !self.hold && !self.scan && self.record.is_none()
    }

    /// The stream of the next attempt: retry's own when nothing needs to see it, else a pipe.
    pub fn for_attempt(&mut self) -> std::io::Result<ChildFd> {
        if self.passes_through() {
            return Ok(ChildFd::Inherit);
        }
        let (read, write) = super::pipe::pipe(false)?;
        fcntl(&read, FcntlArg::F_SETFL(OFlag::O_NONBLOCK))?;
        self.current = Some(Capture {
            pipe: Some(read),
            held: Spool::default(),
            unheld: None,
            scan: Scan::default(),
        });
        Ok(ChildFd::Pipe(write))
    }

    /// The attempt's pipe to poll for input: while the attempt may still write to it, and
    /// what was read before has been passed on.
    pub fn fd(&self) -> Option<BorrowedFd<'_>> {
        self.current
            .as_ref()
            .filter(|_| self.out.pending.is_empty())
            .and_then(|c| c.pipe.as_ref())
            .map(|p| p.as_fd())
    }

    /// retry's own stdout or stderr, to poll for room, while output waits to be passed on.
    pub fn out_fd(&self) -> Option<BorrowedFd<'static>> {
        (!self.out.pending.is_empty()).then(|| self.out.sink.fd())
    }

    /// Takes what the attempt has written so far, until the pipe is empty or closed, or the
    /// reader downstream has no room for more.
    pub fn on_output(&mut self, rules: &Rules) {
        let (hold, scan) = (self.hold, self.scan);
        let Some(capture) = self.current.as_mut() else {
            return;
        };
        let record = self.record.as_ref();
        let mut buf = vec![0u8; CHUNK];
        while self.out.pending.is_empty() {
            if self.out.gone && !hold {
                capture.pipe = None;
            }
            let Some(pipe) = &capture.pipe else {
                return;
            };
            match nix::unistd::read(pipe, &mut buf) {
                Ok(0) => {
                    capture.pipe = None;
                    return;
                }
                Ok(n) => {
                    let bytes = &buf[..n];
                    if scan {
                        capture.scan.feed(rules, bytes);
                    }
                    // Held output that cannot be kept is dropped, never let through: only the
                    // attempt that ends the run may write to stdout. The run then fails.
                    if let Some((transcript, to)) = record {
                        transcript.add(*to, bytes);
                    } else if !hold {
                        self.out.send(bytes);
                    } else if capture.unheld.is_none()
                        && let Err(e) = capture.held.append(bytes)
                    {
                        capture.unheld = Some(e);
                    }
                }
                Err(Errno::EINTR) => {}
                // EAGAIN: nothing more for now.
                Err(_) => return,
            }
        }
    }

    /// The reader downstream has room: passes on what waited, then reads on.
    pub fn on_room(&mut self, rules: &Rules) {
        self.out.flush_ready();
        self.on_output(rules);
    }

    /// The attempt ended: passes on the rest of its output, and returns what the rules found.
    /// A cancelled run drops what the reader downstream does not take.
    pub fn finish(&mut self, rules: &Rules, signals: &mut Signals) -> Seen {
        loop {
            self.on_output(rules);
            if self.out.pending.is_empty() {
                break;
            }
            self.out.flush_all(signals);
        }
        self.current
            .as_mut()
            .map(|c| c.scan.finish(rules))
            .unwrap_or_default()
    }

    /// The attempt's fate is known: its held stdout goes to stdout if it ends the run, else to
    /// stderr. Fails when the attempt's output could not be delivered: a write that failed
    /// (other than to a reader that went away), or held output that could not be held whole,
    /// which then goes to stderr and not to stdout.
    pub fn release(&mut self, last: bool, signals: &mut Signals) -> Result<(), String> {
        let name = if self.stdout { "stdout" } else { "stderr" };
        let failed = |e: Errno| format!("cannot write the command's {name}: {}", e.desc());
        if let Some(e) = self.out.failed.take() {
            return Err(failed(e));
        }
        let Some(capture) = self.current.take() else {
            return Ok(());
        };
        if !self.hold {
            return Ok(());
        }
        let whole = capture.unheld.is_none();
        let mut out = Out::new(Sink::own(last && self.stdout && whole));
        let mut buf = vec![0u8; CHUNK];
        let mut at = 0;
        // A spool that cannot be read back has nothing more to give.
        while let Ok(n) = capture.held.read_at(at, &mut buf)
            && n > 0
        {
            out.send(&buf[..n]);
            out.flush_all(signals);
            at += n as u64;
        }
        match (capture.unheld, out.failed) {
            (Some(e), _) => Err(format!(
                "cannot hold the command's {name} for --stdout hold ({e}); it went to stderr"
            )),
            (None, Some(e)) => Err(failed(e)),
            (None, None) => Ok(()),
        }
    }
}

/// Output on its way to retry's stdout or stderr, and what is waiting for room there.
struct Out {
    sink: Sink,
    pending: Vec<u8>,
    /// The reader downstream went away, or the run was cancelled while the reader took
    /// nothing: output is still read and shown to the rules, and dropped.
    gone: bool,
    /// A write failed for another reason (a full disk, an I/O error): output that could not be
    /// delivered, which fails the run.
    failed: Option<Errno>,
}

impl Out {
    fn new(sink: Sink) -> Out {
        Out {
            sink,
            pending: Vec::new(),
            gone: false,
            failed: None,
        }
    }

    /// Passes on what the sink takes now; the rest waits.
    fn send(&mut self, bytes: &[u8]) {
        if self.gone {
            return;
        }
        match self.sink.write_ready(bytes) {
            Ok(n) => self.pending.extend_from_slice(&bytes[n..]),
            Err(e) => self.fail(e),
        }
    }

    /// Passes on what waited, as far as the sink takes it now.
    fn flush_ready(&mut self) {
        match self.sink.write_ready(&self.pending) {
            Ok(n) => {
                self.pending.drain(..n);
            }
            Err(e) => {
                self.fail(e);
                self.drop_pending();
            }
        }
    }

    /// Passes on all that waited, however long the reader takes; once the run is cancelled,
    /// only what the reader takes at once.
    fn flush_all(&mut self, signals: &mut Signals) {
        loop {
            self.flush_ready();
            if self.pending.is_empty() {
                return;
            }
            if signals.cancelled() {
                self.drop_pending();
                return;
            }
            let mut fds = [
                PollFd::new(self.sink.fd(), PollFlags::POLLOUT),
                PollFd::new(signals.fd(), PollFlags::POLLIN),
            ];
            // EINTR is a signal arriving, which is looked at below.
            let _ = super::pipe::wait(&mut fds, None);
            signals.drain();
        }
    }

    /// A write failed: the output has nowhere to go. A reader that went away (EPIPE) or a
    /// closed descriptor (`>&-`, EBADF) is not retry's failure; anything else is.
    fn fail(&mut self, e: Errno) {
        self.gone = true;
        if !matches!(e, Errno::EPIPE | Errno::EBADF) {
            self.failed.get_or_insert(e);
        }
    }

    fn drop_pending(&mut self) {
        self.gone = true;
        self.pending = Vec::new();
    }
}

/// retry's own stdout or stderr, written to only as far as it has room.
struct Sink {
    fd: BorrowedFd<'static>,
    /// A regular file or a block device: a write to it never waits for a reader.
    always_ready: bool,
    /// A pipe, a socket or a terminal (or what cannot be looked at), whose reader can go
    /// away; not a file, a directory or a device that is no terminal (/dev/null).
    can_lose_its_reader: bool,
}

impl Sink {
    fn own(stdout: bool) -> Sink {
        let fd = if stdout {
            child_fd::stdout()
        } else {
            child_fd::stderr()
        };
        let kind = fstat(fd)
            .ok()
            .map(|st| SFlag::from_bits_truncate(st.st_mode) & SFlag::S_IFMT);
        let always_ready = kind.is_some_and(|k| k == SFlag::S_IFREG || k == SFlag::S_IFBLK);
        let can_lose_its_reader = match kind {
            Some(SFlag::S_IFREG | SFlag::S_IFDIR | SFlag::S_IFBLK) => false,
            Some(SFlag::S_IFCHR) => nix::unistd::isatty(fd).unwrap_or(true),
            _ => true,
        };
        Sink {
            fd,
            always_ready,
            can_lose_its_reader,
        }
    }

    fn fd(&self) -> BorrowedFd<'static> {
        self.fd
    }

    /// Writes what the sink has room for now, and returns how much that was; fails when the
    /// reader went away (or the descriptor is closed).
    ///
    /// The descriptor is shared with the shell and the command, so it cannot be made
    /// non-blocking. Instead a pipe, terminal or socket is written PIPE_BUF bytes at a time,
    /// each once poll says there is room: a pipe with room takes that much at once.
    fn write_ready(&self, bytes: &[u8]) -> Result<usize, Errno> {
        let mut done = 0;
        while done < bytes.len() {
            let rest = &bytes[done..];
            let chunk = if self.always_ready {
                rest
            } else {
                let mut fds = [PollFd::new(self.fd, PollFlags::POLLOUT)];
                match poll(&mut fds, PollTimeout::ZERO) {
                    Ok(0) => break,
                    Ok(_) => {}
                    Err(Errno::EINTR) => continue,
                    Err(e) => return Err(e),
                }
                &rest[..rest.len().min(nix::libc::PIPE_BUF)]
            };
            match nix::unistd::write(self.fd, chunk) {
                Ok(n) => done += n,
                Err(Errno::EINTR) => {}
                Err(Errno::EAGAIN) => break,
                Err(e) => return Err(e),
            }
        }
        Ok(done)
    }
}
