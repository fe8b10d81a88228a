//! How one attempt ended: an exit code or a killing signal; and the names of signals.
//!
//! The names are the platform's, written out (policy makes no system calls): Linux's common
//! numbering, with glibc's and musl's real-time range, and the BSDs' (macOS, FreeBSD). A test in
//! `platform::signals`, where nix may be used, checks every number and name against nix.

use std::borrow::Cow;
use std::fmt;

/// The signals by number, from 1, as nix's `Signal` names them.
#[cfg(not(any(
    target_os = "macos",
    target_os = "ios",
    target_os = "freebsd",
    target_os = "netbsd",
    target_os = "openbsd",
    target_os = "dragonfly"
)))]
pub const NAMES: &[&str] = &[
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
/// The signals by number, from 1, as the BSDs number them (macOS stops at SIGUSR2).
#[cfg(any(
    target_os = "macos",
    target_os = "ios",
    target_os = "freebsd",
    target_os = "netbsd",
    target_os = "openbsd",
    target_os = "dragonfly"
))]
pub const NAMES: &[&str] = &[
    "SIGHUP",
    "SIGINT",
    "SIGQUIT",
    "SIGILL",
    "SIGTRAP",
    "SIGABRT",
    "SIGEMT",
    "SIGFPE",
    "SIGKILL",
    "SIGBUS",
    "SIGSEGV",
    "SIGSYS",
    "SIGPIPE",
    "SIGALRM",
    "SIGTERM",
    "SIGURG",
    "SIGSTOP",
    "SIGTSTP",
    "SIGCONT",
    "SIGCHLD",
    "SIGTTIN",
    "SIGTTOU",
    "SIGIO",
    "SIGXCPU",
    "SIGXFSZ",
    "SIGVTALRM",
    "SIGPROF",
    "SIGWINCH",
    "SIGINFO",
    "SIGUSR1",
    "SIGUSR2",
];

/// The number of a signal named in [`NAMES`]; 0 for a name the platform lacks.
const fn number(name: &str) -> i32 {
    let mut i = 0;
    while i < NAMES.len() {
        if str_eq(NAMES[i], name) {
            return i as i32 + 1;
        }
        i += 1;
    }
    0
}

const fn str_eq(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

pub const SIGHUP: i32 = number("SIGHUP");
pub const SIGINT: i32 = number("SIGINT");
pub const SIGQUIT: i32 = number("SIGQUIT");
pub const SIGKILL: i32 = number("SIGKILL");
pub const SIGUSR1: i32 = number("SIGUSR1");
pub const SIGPIPE: i32 = number("SIGPIPE");
pub const SIGTERM: i32 = number("SIGTERM");

/// The first real-time signal a program may use: the C library keeps the ones below it.
#[cfg(all(target_os = "linux", target_env = "musl"))]
pub const SIGRTMIN: i32 = 35;
#[cfg(all(target_os = "linux", not(target_env = "musl")))]
pub const SIGRTMIN: i32 = 34;
/// The last real-time signal.
#[cfg(target_os = "linux")]
pub const SIGRTMAX: i32 = 64;
/// No real-time signals by these numbers here: an empty range.
#[cfg(not(target_os = "linux"))]
pub const SIGRTMIN: i32 = i32::MAX;
#[cfg(not(target_os = "linux"))]
pub const SIGRTMAX: i32 = 0;

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
