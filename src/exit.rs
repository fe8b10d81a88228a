//! How retry itself ends: a status, or the same signal that killed the last attempt.

/// The end of a run, as the calling shell will see it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Exit {
    /// Exit with this status.
    Code(u8),
    /// End by this signal, as the last attempt did, so that a shell sees what it would have
    /// seen without retry.
    Signal(i32),
}

impl Exit {
    /// A usage error or a failure of retry itself: 125, like timeout(1), env(1) and nice(1),
    /// because 1 and 2 collide with the child's own statuses.
    pub const FAILURE: Exit = Exit::Code(125);
    /// `--attempt-timeout` or `--max-time` stopped the last attempt.
    pub const TIMED_OUT: Exit = Exit::Code(124);
    /// The command could not be found, as a shell says.
    pub const NOT_FOUND: Exit = Exit::Code(127);
    /// The command could not be executed, as a shell says.
    pub const CANNOT_EXECUTE: Exit = Exit::Code(126);
    /// The key's breaker or budget refused the run before it started (EX_TEMPFAIL in
    /// sysexits.h: try again later).
    pub const REFUSED: Exit = Exit::Code(75);
    /// The last attempt's status counts as success, but its HTTP status said it failed: 22,
    /// as `curl --fail` exits.
    pub const HTTP_FAILED: Exit = Exit::Code(22);
    /// The last attempt's status counts as success, but its output said it failed.
    pub const OUTPUT_FAILED: Exit = Exit::Code(1);

    /// The number a shell would report in `$?`.
    pub const fn status(self) -> i32 {
        match self {
            Exit::Code(code) => code as i32,
            Exit::Signal(sig) => 128 + sig,
        }
    }
}
