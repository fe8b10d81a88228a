//! retry's own stderr, as its log writes it: a reader that stops reading (a pager whose screen
//! is full, a stuck pipeline) holds a line only until the run's `--max-time` or a signal that
//! cancels it, never for ever. Each write waits for room in slices, looking between them, and
//! never writes more than a pipe takes at once, so that it cannot block once begun.

use std::io::{self, Write};
use std::os::fd::AsFd;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use nix::errno::Errno;
use nix::poll::{PollFd, PollFlags};

/// The longest wait for room before retry looks whether the run is cancelled or past its
/// deadline.
const SLICE: Duration = Duration::from_millis(50);

/// What one write gives the kernel at most: a pipe with room for a write takes this much whole,
/// at once and unmixed with what others write to it.
const AT_ONCE: usize = nix::libc::PIPE_BUF;

/// The run's `--max-time` deadline, once known.
static DEADLINE: OnceLock<Instant> = OnceLock::new();

/// The run must be over by `at` (`--max-time`): a log line waits for room no longer.
pub fn deadline(at: Instant) {
    let _ = DEADLINE.set(at);
}

/// retry's stderr, bounded as the module says.
pub struct Stderr;

impl Write for Stderr {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let stderr = io::stderr();
        let fd = stderr.as_fd();
        loop {
            let mut fds = [PollFd::new(fd, PollFlags::POLLOUT)];
            match super::pipe::wait(&mut fds, Some(SLICE)) {
                // Room, or an end (no reader, an error) that the write itself reports.
                Ok(n) if n > 0 => {
                    let piece = &buf[..buf.len().min(AT_ONCE)];
                    match nix::unistd::write(fd, piece) {
                        Ok(written) => return Ok(written),
                        Err(Errno::EINTR | Errno::EAGAIN) => {}
                        Err(e) => return Err(e.into()),
                    }
                }
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
            let late = DEADLINE.get().is_some_and(|at| Instant::now() >= *at);
            if late || super::signals::cancelling_arrived() {
                return Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    "nothing reads retry's stderr",
                ));
            }
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}
