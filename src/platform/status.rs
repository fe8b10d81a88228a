//! A child's [`ExitStatus`] from the operating system as retry's own [`Status`], which the
//! status lists class (`policy::rules`).

use std::os::unix::process::ExitStatusExt;
use std::process::ExitStatus;

use crate::policy::status::Status;

/// How a child ended, from what wait reported (stopped or continued statuses are never
/// reported by a plain wait).
pub fn status_of(status: ExitStatus) -> Status {
    match (status.code(), status.signal()) {
        (Some(code), _) => Status::Code(code),
        (None, Some(sig)) => Status::Signal(sig),
        (None, None) => Status::Code(status.into_raw()),
    }
}
