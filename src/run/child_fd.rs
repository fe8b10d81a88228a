//! How an attempt's standard streams are given to it.

use std::os::fd::OwnedFd;

/// What an attempt gets as one of its standard streams.
pub enum ChildFd {
    /// retry's own.
    Inherit,
    /// /dev/null.
    Null,
    /// This pipe end, which the parent then closes.
    Pipe(OwnedFd),
}
