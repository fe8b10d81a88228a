//! How one attempt ended: an exit code or a killing signal; and the names of signals.
//!
//! The names are Linux's, written out (retry runs on Linux only): what nix's `Signal` gives on
//! the architectures with the common numbering, and glibc's and musl's real-time range. A test
//! in `run::signals`, where nix may be used, checks every number and name against nix.

use std::borrow::Cow;
use std::fmt;

#[cfg(not(target_os = "linux"))]
compile_error!("policy::status names signals as Linux numbers them");
#[cfg(any(
    target_arch = "mips",
    target_arch = "mips32r6",
    target_arch = "mips64",
    target_arch = "mips64r6",
    target_arch = "sparc",
    target_arch = "sparc64"
))]
compile_error!("policy::status names signals by Linux's common numbering, not this architecture's");

/// Linux's signals by number, from 1, as nix's `Signal` names them.
pub const NAMES: [&str; 31] = [
    "SIGHUP",
    "SIGINT",
    "SIGQUIT",
    "SIGILL",
    "SIGTRAP",
    "SIGABRT",
    "SIGBUS",
    "SIGFPE",
    "SIGKILL",
    "SIGUSR1",
    "SIGSEGV",
    "SIGUSR2",
    "SIGPIPE",
    "SIGALRM",
    "SIGTERM",
    "SIGSTKFLT",
    "SIGCHLD",
    "SIGCONT",
    "SIGSTOP",
    "SIGTSTP",
    "SIGTTIN",
    "SIGTTOU",
    "SIGURG",
    "SIGXCPU",
    "SIGXFSZ",
    "SIGVTALRM",
    "SIGPROF",
    "SIGWINCH",
    "SIGIO",
    "SIGPWR",
    "SIGSYS",
];

pub const SIGHUP: i32 = 1;
pub const SIGINT: i32 = 2;
pub const SIGQUIT: i32 = 3;
pub const SIGTERM: i32 = 15;

/// The first real-time signal a program may use: the C library keeps the ones below it.
#[cfg(target_env = "musl")]
pub const SIGRTMIN: i32 = 35;
#[cfg(not(target_env = "musl"))]
pub const SIGRTMIN: i32 = 34;
/// The last real-time signal.
pub const SIGRTMAX: i32 = 64;

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
    if let Some(name) = named(sig) {
        return Cow::Borrowed(name);
    }
    if (SIGRTMIN..=SIGRTMAX).contains(&sig) {
        Cow::Owned(format!("SIGRTMIN+{}", sig - SIGRTMIN))
    } else {
        Cow::Owned(format!("signal {sig}"))
    }
}

/// The name of a signal that has one (not a real-time signal).
fn named(sig: i32) -> Option<&'static str> {
    let i = usize::try_from(sig.checked_sub(1)?).ok()?;
    NAMES.get(i).copied()
}

/// A signal by name (`TERM`, `SIGTERM`, `term`) or number (`15`): one that has a name.
pub fn signal_number(name: &str) -> Option<i32> {
    if let Ok(n) = name.parse::<i32>() {
        return named(n).map(|_| n);
    }
    let upper = name.to_ascii_uppercase();
    let full = if upper.starts_with("SIG") {
        upper
    } else {
        format!("SIG{upper}")
    };
    let i = NAMES.iter().position(|n| *n == full)?;
    i32::try_from(i + 1).ok()
}

/// Signals that stop the retrying when they reach retry; the others are only passed on.
pub fn cancels(signal: i32) -> bool {
    [SIGINT, SIGTERM, SIGHUP, SIGQUIT].contains(&signal)
}
