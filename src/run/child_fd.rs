//! How an attempt's standard streams are given to it.

use std::os::fd::{BorrowedFd, OwnedFd};

/// What an attempt gets as one of its standard streams.
pub enum ChildFd {
    /// retry's own.
    Inherit,
    /// /dev/null.
    Null,
    /// This pipe end, which the parent then closes.
    Pipe(OwnedFd),
}

/// retry's own stdin, without std's handle: `io::stdin()` makes an 8 KiB buffer at its first
/// call, which retry never reads through (it reads and splices the descriptor itself).
pub fn stdin() -> BorrowedFd<'static> {
    // SAFETY: descriptor 0 stays open, or stays closed, for as long as retry runs: nothing in
    // retry closes or replaces it. A closed one fails every call with EBADF.
    unsafe { BorrowedFd::borrow_raw(0) }
}

/// retry's own stdout, without std's handle (`io::stdout()` makes a 1 KiB line buffer).
pub fn stdout() -> BorrowedFd<'static> {
    // SAFETY: as for stdin, descriptor 1.
    unsafe { BorrowedFd::borrow_raw(1) }
}
