//! Pipes, and waiting for descriptors: pipe2 and ppoll on Linux, their POSIX equivalents
//! elsewhere and in the portable build.

use std::io;
use std::os::fd::OwnedFd;
use std::time::Duration;

use nix::poll::PollFd;

/// A pipe (read end, write end), both closed on exec; `nonblocking` makes both non-blocking.
#[cfg(all(target_os = "linux", not(retry_portable)))]
pub fn pipe(nonblocking: bool) -> io::Result<(OwnedFd, OwnedFd)> {
    use nix::fcntl::OFlag;
    let flags = if nonblocking {
        OFlag::O_CLOEXEC | OFlag::O_NONBLOCK
    } else {
        OFlag::O_CLOEXEC
    };
    Ok(nix::unistd::pipe2(flags)?)
}

/// A pipe (read end, write end), both closed on exec; `nonblocking` makes both non-blocking.
/// POSIX has no pipe2: the flags are set after. retry starts its processes with posix_spawn
/// from the one thread that makes pipes, so none can inherit a pipe in the moment between.
#[cfg(not(all(target_os = "linux", not(retry_portable))))]
pub fn pipe(nonblocking: bool) -> io::Result<(OwnedFd, OwnedFd)> {
    use nix::fcntl::{FcntlArg, FdFlag, OFlag, fcntl};
    let (read, write) = nix::unistd::pipe()?;
    for fd in [&read, &write] {
        fcntl(fd, FcntlArg::F_SETFD(FdFlag::FD_CLOEXEC))?;
        if nonblocking {
            fcntl(fd, FcntlArg::F_SETFL(OFlag::O_NONBLOCK))?;
        }
    }
    Ok((read, write))
}

/// Waits until one of `fds` is ready or `timeout` has passed (`None`: no limit); EINTR, a
/// signal arriving, is an error the caller takes as a wake-up.
#[cfg(all(target_os = "linux", not(retry_portable)))]
pub fn wait(fds: &mut [PollFd<'_>], timeout: Option<Duration>) -> io::Result<usize> {
    use nix::sys::time::TimeSpec;
    let n = nix::poll::ppoll(fds, timeout.map(TimeSpec::from_duration), None)?;
    Ok(usize::try_from(n).unwrap_or(0))
}

/// Waits until one of `fds` is ready or `timeout` has passed (`None`: no limit), with poll(2),
/// whose milliseconds are rounded up so that a wait never ends before its time.
#[cfg(not(all(target_os = "linux", not(retry_portable))))]
pub fn wait(fds: &mut [PollFd<'_>], timeout: Option<Duration>) -> io::Result<usize> {
    use nix::poll::PollTimeout;
    let timeout = match timeout {
        None => PollTimeout::NONE,
        Some(t) => {
            let ms = t.as_nanos().div_ceil(1_000_000);
            PollTimeout::try_from(i32::try_from(ms).unwrap_or(i32::MAX)).unwrap_or(PollTimeout::MAX)
        }
    };
    let n = nix::poll::poll(fds, timeout)?;
    Ok(usize::try_from(n).unwrap_or(0))
}

/// Asks for a pipe of `size` bytes and returns the size it has, where the system lets a pipe's
/// size be set (Linux); `None` elsewhere.
#[cfg(all(target_os = "linux", not(retry_portable)))]
pub fn resize(pipe: std::os::fd::BorrowedFd<'_>, size: usize) -> Option<usize> {
    use nix::fcntl::{FcntlArg, fcntl};
    let _ = fcntl(pipe, FcntlArg::F_SETPIPE_SZ(i32::try_from(size).ok()?));
    fcntl(pipe, FcntlArg::F_GETPIPE_SZ)
        .ok()
        .and_then(|n| usize::try_from(n).ok())
}

/// See the Linux version: a pipe's size cannot be set here.
#[cfg(not(all(target_os = "linux", not(retry_portable))))]
pub fn resize(_pipe: std::os::fd::BorrowedFd<'_>, _size: usize) -> Option<usize> {
    None
}

/// Copies up to `size` bytes from the pipe `from` into the pipe `to` without taking them from
/// `from` (tee(2), non-blocking); where there is no tee(2), ENOSYS, and the caller reads.
#[cfg(all(target_os = "linux", not(retry_portable)))]
pub fn peek_into(
    from: std::os::fd::BorrowedFd<'_>,
    to: std::os::fd::BorrowedFd<'_>,
    size: usize,
) -> nix::Result<usize> {
    nix::fcntl::tee(from, to, size, nix::fcntl::SpliceFFlags::SPLICE_F_NONBLOCK)
}

/// See the Linux version: no tee(2) here.
#[cfg(not(all(target_os = "linux", not(retry_portable))))]
pub fn peek_into(
    _from: std::os::fd::BorrowedFd<'_>,
    _to: std::os::fd::BorrowedFd<'_>,
    _size: usize,
) -> nix::Result<usize> {
    Err(nix::errno::Errno::ENOSYS)
}
