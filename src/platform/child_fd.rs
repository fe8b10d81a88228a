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
    own(0)
}

/// retry's own stdout, without std's handle (`io::stdout()` makes a 1 KiB line buffer).
pub fn stdout() -> BorrowedFd<'static> {
    own(1)
}

/// retry's own stderr.
pub fn stderr() -> BorrowedFd<'static> {
    own(2)
}

fn own(fd: i32) -> BorrowedFd<'static> {
    // SAFETY: only 0, 1 and 2 come here, and these descriptors stay open, or stay closed, for
    // as long as retry runs: nothing in retry closes or replaces them. A closed one fails
    // every call with EBADF.
    unsafe { BorrowedFd::borrow_raw(fd) }
}
