//! What the benches share: waiting for a child with its own resource usage (peak RSS, page
//! faults), which `std::process` does not give. Included by `#[path]` from each bench.

use std::io;
use std::os::unix::process::ExitStatusExt;
use std::process::ExitStatus;

use nix::libc;

/// Waits for the child `pid` and returns its status and its own resource usage.
pub fn wait4(pid: u32) -> Result<(ExitStatus, libc::rusage), String> {
    let pid = libc::pid_t::try_from(pid).map_err(|_| format!("pid {pid} out of range"))?;
    let mut raw = 0;
    // SAFETY: rusage is plain integers, for which all zeroes is a valid value.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    loop {
        // SAFETY: wait4 on our own child, with valid pointers to an int and a rusage.
        let got = unsafe { libc::wait4(pid, &mut raw, 0, &mut usage) };
        if got == pid {
            return Ok((ExitStatus::from_raw(raw), usage));
        }
        let error = io::Error::last_os_error();
        if error.kind() != io::ErrorKind::Interrupted {
            return Err(format!("wait4 on pid {pid}: {error}"));
        }
    }
}
