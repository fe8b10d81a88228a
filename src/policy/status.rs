//! How one attempt ended: an exit code or a killing signal.

use std::borrow::Cow;
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
    pub fn signal_name(self) -> Option<Cow<'static, str>> {
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

/// `SIGTERM` for 15, `SIGRTMIN+1` for a real-time signal, `signal 70` for a number this
/// platform does not have.
pub fn signal_name(sig: i32) -> Cow<'static, str> {
    if let Ok(signal) = Signal::try_from(sig) {
        return Cow::Borrowed(signal.as_str());
    }
    let (min, max) = (nix::libc::SIGRTMIN(), nix::libc::SIGRTMAX());
    if (min..=max).contains(&sig) {
        Cow::Owned(format!("SIGRTMIN+{}", sig - min))
    } else {
        Cow::Owned(format!("signal {sig}"))
    }
}

/// Signals that stop the retrying when they reach retry; the others are only passed on.
pub fn cancels(signal: i32) -> bool {
    [
        Signal::SIGINT,
        Signal::SIGTERM,
        Signal::SIGHUP,
        Signal::SIGQUIT,
    ]
    .iter()
    .any(|s| *s as i32 == signal)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_signal_has_a_name() {
        assert_eq!(signal_name(15), "SIGTERM");
        let min = nix::libc::SIGRTMIN();
        assert_eq!(signal_name(min), "SIGRTMIN+0");
        assert_eq!(signal_name(min + 3), "SIGRTMIN+3");
        assert_eq!(signal_name(200), "signal 200");
        assert_eq!(
            Status::Signal(min + 1).to_string(),
            format!("killed by SIGRTMIN+1 (status {})", 128 + min + 1)
        );
    }
}
