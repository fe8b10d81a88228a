//! The clock a local store keeps time by: the boot-time clock, which neither a wall-clock
//! change nor a suspend can move back, tied to the boot it belongs to.

use std::time::{SystemTime, UNIX_EPOCH};

/// A moment, on both clocks.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Clock {
    /// The kernel's id of this boot; empty where it cannot be read.
    pub boot_id: String,
    /// Milliseconds since boot (CLOCK_BOOTTIME, which counts suspended time too).
    pub boot_ms: u64,
    /// Milliseconds since the Unix epoch.
    pub wall_ms: u64,
}

impl Clock {
    pub fn now() -> Clock {
        // The tests' clock (debug builds only): one timeline, which only the test moves.
        if let Some(ms) = crate::platform::clock::test_ms() {
            return Clock {
                boot_id: "test".into(),
                boot_ms: ms,
                wall_ms: ms,
            };
        }
        let wall_ms = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
        match crate::platform::clock::boot() {
            Some((boot_id, boot_ms)) => Clock {
                boot_id,
                boot_ms,
                wall_ms,
            },
            // Without a boot id (or a boot clock), the wall clock is the timeline; the clamps
            // on every time read back still bound what a clock change can do.
            None => Clock {
                boot_id: String::new(),
                boot_ms: wall_ms,
                wall_ms,
            },
        }
    }

    /// How to bring times saved under `then` onto this clock's timeline, as `(from, to)` for
    /// [`KeyState::shift`](crate::policy::shared::KeyState::shift): the moment `from` then is
    /// `to` now. Across a reboot the wall clock says how much time passed, all of it: a moment
    /// that fell before this boot is moved back by the whole time, not stopped at the boot, so
    /// that an open time which has passed by the wall clock is over.
    pub fn moved(&self, then: &Clock) -> (u64, u64) {
        let to = self.place(then);
        let same_boot = !self.boot_id.is_empty() && self.boot_id == then.boot_id;
        let passed = self.wall_ms.saturating_sub(then.wall_ms);
        if same_boot || passed <= self.boot_ms {
            (then.boot_ms, to)
        } else {
            (then.boot_ms.saturating_add(passed - self.boot_ms), 0)
        }
    }

    /// Whether times saved under `then` are not on this clock's timeline and were placed by a
    /// wall clock that cannot be trusted to age them: saved in another boot, or (without a boot
    /// id) under a wall clock ahead of this one. Such a state is written again on this clock.
    pub fn foreign(&self, then: &Clock) -> bool {
        let known = !self.boot_id.is_empty() && !then.boot_id.is_empty();
        if known {
            self.boot_id != then.boot_id
        } else {
            then.wall_ms > self.wall_ms
        }
    }

    /// Where a moment saved as `then` falls on this clock's timeline: exactly, by the boot
    /// clock, in the same boot; else by the wall clock, never before the saved moment.
    pub fn place(&self, then: &Clock) -> u64 {
        if !self.boot_id.is_empty() && self.boot_id == then.boot_id {
            then.boot_ms.min(self.boot_ms)
        } else {
            let passed = self.wall_ms.saturating_sub(then.wall_ms);
            self.boot_ms.saturating_sub(passed)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn clock(boot_id: &str, boot_ms: u64, wall_ms: u64) -> Clock {
        Clock {
            boot_id: boot_id.into(),
            boot_ms,
            wall_ms,
        }
    }

    #[test]
    fn in_the_same_boot_the_boot_clock_places_a_moment_whatever_the_wall_clock_did() {
        let now = clock("a", 50_000, 0);
        assert_eq!(now.place(&clock("a", 20_000, 99_999_999)), 20_000);
    }

    #[test]
    fn after_a_reboot_the_wall_clock_places_it_and_a_clock_set_back_counts_as_no_time() {
        let now = clock("b", 5_000, 1_000_000);
        assert_eq!(now.place(&clock("a", 80_000, 998_000)), 3_000);
        assert_eq!(now.place(&clock("a", 80_000, 2_000_000)), 5_000);
        assert_eq!(now.place(&clock("a", 80_000, 0)), 0);
    }

    #[test]
    fn after_a_reboot_time_before_the_boot_counts_in_full() {
        // Saved 4 days ago, 1 s into that boot; 10 s into this one.
        let day = 86_400_000;
        let now = clock("b", 10_000, 10 * day);
        let (from, to) = now.moved(&clock("a", 1_000, 6 * day));
        // A moment saved 3 days after `then` is a day before now: before this boot.
        assert_eq!(from - to, 1_000 + 4 * day - 10_000);
        assert!((1_000 + 3 * day).saturating_sub(from - to) < now.boot_ms);
        // Within the boot, or when less time passed than since this boot, as `place`.
        assert_eq!(now.moved(&clock("b", 4_000, 0)), (4_000, 4_000));
        assert_eq!(
            now.moved(&clock("a", 80_000, 10 * day - 2_000)),
            (80_000, 8_000)
        );
    }

    #[test]
    fn a_state_from_another_boot_or_under_a_clock_ahead_is_foreign() {
        let now = clock("b", 5_000, 1_000_000);
        assert!(!now.foreign(&clock("b", 4_000, 2_000_000)));
        assert!(now.foreign(&clock("a", 4_000, 900_000)));
        assert!(now.foreign(&clock("a", 4_000, 2_000_000)));
        // Without boot ids, the wall clock is the timeline: only a saved time ahead is.
        let now = clock("", 1_000_000, 1_000_000);
        assert!(!now.foreign(&clock("", 900_000, 900_000)));
        assert!(now.foreign(&clock("", 2_000_000, 2_000_000)));
    }

    #[test]
    fn the_clock_reads_this_boot() {
        let a = Clock::now();
        let b = Clock::now();
        assert_eq!(a.boot_id, b.boot_id);
        assert!(b.boot_ms >= a.boot_ms);
        assert_eq!(b.place(&a), a.boot_ms);
    }
}
