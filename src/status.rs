//! How one attempt ended: an exit code or a killing signal.

use std::fmt;
use std::process::ExitStatus;

use nix::sys::signal::Signal;

/// The way a child process ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    /// It exited with this code.
    Code(i32),
    /// It was killed by this signal number.
    Signal(i32),
}

impl Status {
    /// The number the outcome lists judge: the exit code, or 128+N for signal N, as a shell
    /// reports it in `$?`.
    pub fn number(self) -> i32 {
        match self {
            Status::Code(code) => code,
            Status::Signal(sig) => 128 + sig,
        }
    }

    /// The name of the killing signal, if any (`SIGKILL`).
    pub fn signal_name(self) -> Option<&'static str> {
        match self {
            Status::Code(_) => None,
            Status::Signal(sig) => Some(signal_name(sig)),
        }
    }
}

impl From<ExitStatus> for Status {
    fn from(status: ExitStatus) -> Self {
        use std::os::unix::process::ExitStatusExt;
        match (status.code(), status.signal()) {
            (Some(code), _) => Status::Code(code),
            (None, Some(sig)) => Status::Signal(sig),
            // Stopped or continued statuses are never reported by a plain wait.
            (None, None) => Status::Code(status.into_raw()),
        }
    }
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Status::Code(code) => write!(f, "exit status {code}"),
            Status::Signal(sig) => {
                write!(f, "killed by {} (status {})", signal_name(sig), 128 + sig)
            }
        }
    }
}

/// `SIGTERM` for 15; `signal 70` for a number this platform does not name.
pub fn signal_name(sig: i32) -> &'static str {
    Signal::try_from(sig).map_or("an unknown signal", Signal::as_str)
}
