//! The boot-time clock, which neither a wall-clock change nor a suspend can move back, and the
//! id of the boot it counts from.

/// This boot's id and the milliseconds since it began (suspended time included), where the
/// system can tell both: Linux (`/proc/sys/kernel/random/boot_id` and CLOCK_BOOTTIME). `None`
/// elsewhere, and in the portable build: the caller then keeps time by the wall clock.
#[cfg(all(target_os = "linux", not(retry_portable)))]
pub fn boot() -> Option<(String, u64)> {
    use std::sync::OnceLock;

    use nix::time::{ClockId, clock_gettime};

    // The boot does not change while retry runs: read its id once.
    static BOOT_ID: OnceLock<String> = OnceLock::new();
    let id = BOOT_ID.get_or_init(|| {
        std::fs::read_to_string("/proc/sys/kernel/random/boot_id")
            .map(|s| s.trim().to_string())
            .unwrap_or_default()
    });
    if id.is_empty() {
        return None;
    }
    let t = clock_gettime(ClockId::CLOCK_BOOTTIME).ok()?;
    let ms = i128::from(t.tv_sec()) * 1000 + i128::from(t.tv_nsec()) / 1_000_000;
    Some((id.clone(), u64::try_from(ms).ok()?))
}

/// See the Linux version: no boot clock tied to a boot id here.
#[cfg(not(all(target_os = "linux", not(retry_portable))))]
pub fn boot() -> Option<(String, u64)> {
    None
}

/// The variable that names the tests' clock file: see [`test_ms`].
pub const TEST_CLOCK: &str = "RETRY_TEST_CLOCK";

/// The time the tests set, in ms: the number in the file that `$RETRY_TEST_CLOCK` names, read
/// at each call, which a test moves on instead of sleeping. Only the stores keep time by it
/// (the file store's clock, and the time given to the Redis script); the run's own waits
/// (backoff, timeouts) stay real. Read only in builds with debug assertions, which the
/// integration tests run: a release build never honours it, so no environment can move a
/// fleet's breakers in time. `None` without the variable, or when the file holds no number.
pub fn test_ms() -> Option<u64> {
    let path = test_var(TEST_CLOCK)?;
    std::fs::read_to_string(path).ok()?.trim().parse().ok()
}

/// The variable that sets, in ms, how long a fleet simulation runs before its progress line
/// shows: see [`test_progress_due`].
pub const TEST_PROGRESS_DUE: &str = "RETRY_TEST_PROGRESS_DUE";

/// How long a fleet simulation runs before its progress line shows, as the tests set it with
/// `$RETRY_TEST_PROGRESS_DUE` (ms), so that a small fleet shows the line at once on a machine
/// of any speed. Read only in builds with debug assertions, as [`test_ms`] is. `None` without
/// the variable, or when it holds no number.
pub fn test_progress_due() -> Option<std::time::Duration> {
    let ms = test_var(TEST_PROGRESS_DUE)?.to_str()?.trim().parse().ok()?;
    Some(std::time::Duration::from_millis(ms))
}

/// The variable that sets, in ms, the longest a run waits for its key's lock: see
/// [`test_lock_wait`].
pub const TEST_LOCK_WAIT: &str = "RETRY_TEST_LOCK_WAIT";

/// The longest a run waits for its key's lock, as the tests set it with
/// `$RETRY_TEST_LOCK_WAIT` (ms), so that a test of a lock that keeps changing hands waits a
/// fraction of a second rather than the 5 s a run waits. Read only in builds with debug
/// assertions, as [`test_ms`] is. `None` without the variable, or when it holds no number.
pub fn test_lock_wait() -> Option<std::time::Duration> {
    let ms = test_var(TEST_LOCK_WAIT)?.to_str()?.trim().parse().ok()?;
    Some(std::time::Duration::from_millis(ms))
}

/// A variable of the tests', in builds with debug assertions; a release build reads none.
fn test_var(name: &str) -> Option<std::ffi::OsString> {
    if cfg!(debug_assertions) {
        std::env::var_os(name)
    } else {
        None
    }
}
