//! The local time, for the text log.

use std::time::{SystemTime, UNIX_EPOCH};

use nix::libc;

/// `2026-11-21T21:16:03.254+01:00`: RFC 3339 in the local time zone, with its offset, as a
/// person reading a log file wants it. UTC where the local time cannot be known.
pub fn local_time(now: SystemTime) -> String {
    let since = now.duration_since(UNIX_EPOCH).unwrap_or_default();
    let Ok(secs) = libc::time_t::try_from(since.as_secs()) else {
        return humantime::format_rfc3339_millis(now).to_string();
    };
    let mut tm = std::mem::MaybeUninit::<libc::tm>::zeroed();
    // SAFETY: localtime_r writes only to the tm it is given, which lives on this stack, and
    // returns null on failure. glibc reads TZ (or /etc/localtime) on its first call.
    let tm = unsafe {
        if libc::localtime_r(&secs, tm.as_mut_ptr()).is_null() {
            return humantime::format_rfc3339_millis(now).to_string();
        }
        tm.assume_init()
    };
    let offset = tm.tm_gmtoff;
    let sign = if offset < 0 { '-' } else { '+' };
    let offset = offset.unsigned_abs() / 60;
    format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}{sign}{:02}:{:02}",
        i64::from(tm.tm_year) + 1900,
        tm.tm_mon + 1,
        tm.tm_mday,
        tm.tm_hour,
        tm.tm_min,
        tm.tm_sec,
        since.subsec_millis(),
        offset / 60,
        offset % 60
    )
}
