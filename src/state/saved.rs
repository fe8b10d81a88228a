//! What a key's state file holds and what it is called: the JSON written, checked on reading
//! (every value one retry could have written), and the key made safe as a file name.

use serde::{Deserialize, Serialize};

use crate::policy::adaptive::KEPT;
use crate::policy::breaker::Breaker;
use crate::policy::shared::KeyState;

/// The format of the file's contents.
pub(super) const VERSION: u32 = 1;

/// A state file longer than this is not read (a real one is a few hundred bytes; a breaker
/// that counts 1000 failures and the longest history stay under 30 KiB).
pub(super) const MAX_BYTES: u64 = 256 * 1024;

/// The largest number any field of the file may hold: 2^53, what a double (Lua's, JSON's)
/// holds exactly; as milliseconds, 285,000 years.
const MAX_NUMBER: u64 = 1 << 53;

/// The file, as JSON: the state, and the moment it was written on both clocks, so that the
/// next reader can place its times on its own timeline.
#[derive(Serialize, Deserialize)]
pub(super) struct Saved {
    pub version: u32,
    pub boot_id: String,
    pub boot_ms: u64,
    pub wall_ms: u64,
    pub state: KeyState,
}

impl Saved {
    /// Whether every value is one retry could have written: `Err` with what is not.
    pub fn validate(&self) -> Result<(), String> {
        if self.version != VERSION {
            return Err(format!("it is of version {}", self.version));
        }
        let state = &self.state;
        let mut times = vec![
            self.boot_ms,
            self.wall_ms,
            state.budget.at,
            state.generation,
        ];
        match &state.breaker {
            Breaker::Closed { failures } => {
                // --breaker-failures is at most 1000, and no more are kept.
                if failures.len() > 1000 {
                    return Err(format!("it keeps {} failures", failures.len()));
                }
                times.extend(failures);
            }
            Breaker::Open {
                until,
                open_for,
                failures,
            }
            | Breaker::HalfOpen {
                lease_until: until,
                open_for,
                failures,
            } => {
                if failures.len() > 1000 {
                    return Err(format!("it keeps {} failures", failures.len()));
                }
                times.extend(failures);
                if *open_for == 0 {
                    return Err("its breaker is open for no time".into());
                }
                times.extend([*until, *open_for]);
            }
        }
        if state.history.outcomes().count() > KEPT {
            return Err(format!(
                "it keeps {} outcomes",
                state.history.outcomes().count()
            ));
        }
        times.extend(state.history.outcomes().map(|o| o.at));
        if let Some(t) = times.iter().find(|&&t| t > MAX_NUMBER) {
            return Err(format!("it holds {t}, out of range"));
        }
        // The most tokens any --budget-burst allows; fewer than that is clamped to the run's.
        if state.budget.milli > u64::from(u32::MAX) * crate::policy::budget::MILLI {
            return Err(format!("it holds {} tokens", state.budget.milli));
        }
        Ok(())
    }
}

/// The key a file name stands for: `file_name` undone (a long key's hashed name as it is).
pub(super) fn key_of(name: &str) -> String {
    if name.contains('~') {
        return name.to_string();
    }
    let bytes = name.as_bytes();
    let mut key = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match (bytes[i], hex) {
            (b'%', Some(b)) => {
                key.push(b);
                i += 3;
            }
            (b, _) => {
                key.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&key).into_owned()
}

/// The key as a file name: letters, digits, `-`, `_` and `.` as they are (but no leading dot),
/// anything else as `%XX`, so that no key reaches outside the state directory or collides
/// with another. A very long key keeps its start and gets a hash of the whole.
pub(super) fn file_name(key: &str) -> String {
    let mut name = String::with_capacity(key.len());
    for (i, b) in key.bytes().enumerate() {
        match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'-' | b'_' => name.push(char::from(b)),
            b'.' if i > 0 => name.push('.'),
            _ => name.push_str(&format!("%{b:02X}")),
        }
    }
    if name.len() > 150 {
        // FNV-1a: stable across versions and platforms, unlike std's hasher.
        let hash = key.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
            (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
        });
        let mut cut = 120;
        while !name.is_char_boundary(cut) {
            cut -= 1;
        }
        name = format!("{}~{hash:016x}", &name[..cut]);
    }
    name
}

/// The format of a remembered verdict's file.
pub(super) const VERDICT_VERSION: u32 = 1;

/// A verdict's file longer than this is not read (a real one is under 200 bytes and a URL).
pub(super) const VERDICT_MAX_BYTES: u64 = 16 * 1024;

/// `KEY.open`: an open breaker a `--state` store told this host of, as JSON, in a file of its
/// own beside the key's state file. That file is the key's local state, which runs fall back
/// on when the store cannot be reached, and `--list-keys` lists: a verdict kept in it would
/// be mixed with a state the store never ran, and make a key of every key a fleet uses.
#[derive(Serialize, Deserialize)]
pub(super) struct Remembered {
    pub version: u32,
    /// The store that told it (its URL, redacted): another store's verdict is not this one's.
    pub store: String,
    /// When it was told, on both clocks.
    pub boot_id: String,
    pub boot_ms: u64,
    pub wall_ms: u64,
    /// How long the breaker was open for from then, in ms.
    pub left_ms: u64,
    /// The budget's tokens then, for the log.
    pub tokens: f64,
}

impl Remembered {
    /// Whether every value is one retry could have written: `Err` with what is not.
    pub fn validate(&self) -> Result<(), String> {
        if self.version != VERDICT_VERSION {
            return Err(format!("it is of version {}", self.version));
        }
        if let Some(t) = [self.boot_ms, self.wall_ms, self.left_ms]
            .into_iter()
            .find(|&t| t > MAX_NUMBER)
        {
            return Err(format!("it holds {t}, out of range"));
        }
        let most = f64::from(crate::policy::defaults::MOST_TOKENS);
        if !(0.0..=most).contains(&self.tokens) {
            return Err(format!("it holds {} tokens", self.tokens));
        }
        Ok(())
    }
}
