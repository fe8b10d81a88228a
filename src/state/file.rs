//! A key's state in a small file of the state directory, one per key. Each change is a
//! read-modify-write under a lock on a sidecar file (never the state file, which is replaced by
//! rename), held only for that; a change that changes nothing is not written, and needs no lock.

use std::fs::{self, DirBuilder, File};
use std::io;
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::clock::Clock;
use super::{Error, Local, Reply};
use crate::files::{self, Links, LockError};
use crate::policy::shared::{KeyState, SharedSettings};

/// How long to wait for another process's lock before going on without state.
const LOCK_WAIT: Duration = Duration::from_millis(250);

/// The format of the file's contents.
const VERSION: u32 = 1;

/// The file, as JSON: the state, and the moment it was written on both clocks, so that the
/// next reader can place its times on its own timeline.
#[derive(Serialize, Deserialize)]
struct Saved {
    version: u32,
    boot_id: String,
    boot_ms: u64,
    wall_ms: u64,
    state: KeyState,
}

/// The files of one key.
pub struct FileStore {
    dir: Option<PathBuf>,
    /// The key, made safe as a file name.
    name: String,
}

impl FileStore {
    /// The store for `key` in `dir`; without a directory every operation fails with
    /// [`Error::NoDirectory`].
    pub fn new(dir: Option<PathBuf>, key: &str) -> FileStore {
        FileStore {
            dir,
            name: file_name(key),
        }
    }

    fn dir(&self) -> Result<&Path, Error> {
        self.dir.as_deref().ok_or(Error::NoDirectory)
    }

    fn path(&self, dir: &Path, ending: &str) -> PathBuf {
        dir.join(format!("{}.{ending}", self.name))
    }

    /// Reads the state, placed on the clock's timeline: `Ok(None)` for a key never written,
    /// `Err(())` for a file that cannot be understood.
    fn load(&self, dir: &Path, clock: &Clock) -> Result<Result<Option<KeyState>, ()>, Error> {
        let path = self.path(dir, "json");
        let bytes = match fs::read(&path) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Ok(None)),
            Err(source) => return Err(io_error("read", &path, source)),
        };
        match serde_json::from_slice::<Saved>(&bytes) {
            Ok(saved) if saved.version == VERSION => {
                let then = Clock {
                    boot_id: saved.boot_id,
                    boot_ms: saved.boot_ms,
                    wall_ms: saved.wall_ms,
                };
                let mut state = saved.state;
                let (from, to) = clock.moved(&then);
                state.shift(from, to);
                Ok(Ok(Some(state)))
            }
            _ => Ok(Err(())),
        }
    }

    /// Moves a file that cannot be understood aside (under the lock), and says so.
    fn move_aside(&self, dir: &Path) -> Result<String, Error> {
        let path = self.path(dir, "json");
        let aside = self.path(dir, "json.corrupt");
        fs::rename(&path, &aside).map_err(|source| io_error("move aside", &path, source))?;
        Ok(format!(
            "state file '{}' could not be read; moved it to '{}' and started the key afresh",
            path.display(),
            aside.display()
        ))
    }

    /// Writes the state: to a temporary file beside it, then renamed over it.
    fn save(&self, dir: &Path, clock: &Clock, state: &KeyState) -> Result<(), Error> {
        let saved = Saved {
            version: VERSION,
            boot_id: clock.boot_id.clone(),
            boot_ms: clock.boot_ms,
            wall_ms: clock.wall_ms,
            state: state.clone(),
        };
        // A struct of plain fields always serializes.
        let bytes = serde_json::to_vec(&saved).unwrap_or_default();
        let path = self.path(dir, "json");
        files::replace(&path, &bytes, 0o600, false)
            .map_err(|source| io_error("write", &path, source))
    }

    /// Takes the key's lock, waiting for it up to [`LOCK_WAIT`]; it is let go when the file is
    /// dropped.
    fn lock(&self, dir: &Path) -> Result<File, Error> {
        DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .map_err(|source| io_error("create", dir, source))?;
        let path = self.path(dir, "lock");
        // The lock is retry's own file: a link planted in its place is refused.
        match files::lock(&path, 0o600, Links::Refuse, LOCK_WAIT) {
            Ok(file) => Ok(file),
            Err(LockError::Busy) => Err(Error::Busy(path)),
            Err(LockError::Io(source)) => Err(io_error("lock", &path, source)),
        }
    }
}

impl Local for FileStore {
    fn update<T>(
        &mut self,
        s: &SharedSettings,
        op: impl Fn(&mut KeyState, u64) -> T,
    ) -> Result<Reply<T>, Error> {
        let dir = self.dir()?.to_path_buf();
        // First without the lock: most operations (a closed breaker, a full budget) change
        // nothing, and a state replaced by rename is always whole.
        let clock = Clock::now();
        if let Ok(loaded) = self.load(&dir, &clock)? {
            let now = clock.boot_ms;
            let read = loaded.unwrap_or_else(|| KeyState::new(s, now));
            let mut state = read.clone();
            state.clamp(s, now);
            let value = op(&mut state, now);
            // What the clamps change is written too: a breaker's open time cut to today's
            // --breaker-open-max is the one the next run honours, not only this one.
            if state == read {
                return Ok(Reply {
                    view: state.view(s, now),
                    value,
                    now,
                    warning: None,
                });
            }
        }
        let _lock = self.lock(&dir)?;
        let clock = Clock::now();
        let (loaded, warning) = match self.load(&dir, &clock)? {
            Ok(loaded) => (loaded, None),
            Err(()) => (None, Some(self.move_aside(&dir)?)),
        };
        let now = clock.boot_ms;
        let read = loaded.unwrap_or_else(|| KeyState::new(s, now));
        let mut state = read.clone();
        state.clamp(s, now);
        let value = op(&mut state, now);
        if state != read || warning.is_some() {
            self.save(&dir, &clock, &state)?;
        }
        Ok(Reply {
            view: state.view(s, now),
            value,
            now,
            warning,
        })
    }

    fn reset(&mut self) -> Result<(), Error> {
        let dir = self.dir()?.to_path_buf();
        let _lock = self.lock(&dir)?;
        let path = self.path(&dir, "json");
        match fs::remove_file(&path) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
            Err(source) => Err(io_error("remove", &path, source)),
        }
    }

    fn describe(&self) -> String {
        match &self.dir {
            Some(dir) => format!("file {}", self.path(dir, "json").display()),
            None => "no state directory".into(),
        }
    }
}

fn io_error(doing: &'static str, path: &Path, source: io::Error) -> Error {
    Error::Io {
        doing,
        path: path.to_path_buf(),
        source,
    }
}

/// The key as a file name: letters, digits, `-`, `_` and `.` as they are (but no leading dot),
/// anything else as `%XX`, so that no key reaches outside the state directory or collides
/// with another. A very long key keeps its start and gets a hash of the whole.
fn file_name(key: &str) -> String {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_names_stay_inside_the_state_directory() {
        assert_eq!(file_name("api.example.com"), "api.example.com");
        assert_eq!(file_name("../etc/passwd"), "%2E.%2Fetc%2Fpasswd");
        assert_eq!(file_name(".."), "%2E.");
        assert_eq!(file_name("a b/c"), "a%20b%2Fc");
        assert_eq!(file_name("ключ"), "%D0%BA%D0%BB%D1%8E%D1%87");
        assert_ne!(file_name("a/b"), file_name("a%2Fb"));
        let long = "x".repeat(400);
        let name = file_name(&long);
        assert!(name.len() < 160, "{}", name.len());
        assert_ne!(name, file_name(&"x".repeat(401)));
    }

    use crate::policy::breaker::Breaker;
    use crate::policy::shared::tests::settings;
    use crate::policy::shared::{Admit, Refusal};

    const HOUR: u64 = 3_600_000;
    const DAY: u64 = 24 * HOUR;

    /// A key whose file says its breaker is open until `until`, saved at `then`.
    fn saved(dir: &Path, then: &Clock, until: u64, open_for: u64) -> FileStore {
        let store = FileStore::new(Some(dir.to_path_buf()), "k");
        let mut state = KeyState::new(&settings(), then.boot_ms);
        state.breaker = Breaker::Open { until, open_for };
        let saved = Saved {
            version: VERSION,
            boot_id: then.boot_id.clone(),
            boot_ms: then.boot_ms,
            wall_ms: then.wall_ms,
            state,
        };
        let bytes = serde_json::to_vec(&saved).expect("serialized");
        fs::write(store.path(dir, "json"), bytes).expect("written");
        store
    }

    fn admit(store: &mut FileStore, s: &SharedSettings) -> Reply<Admit> {
        store
            .update(s, |state, now| state.admit(s, now))
            .expect("answered")
    }

    #[test]
    fn an_open_time_cut_to_the_open_max_is_kept_for_the_next_run() {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let now = Clock::now();
        let mut store = saved(dir.path(), &now, now.boot_ms + HOUR, HOUR);
        let mut s = settings();
        s.breaker.open_max = Duration::from_secs(1);
        let first = admit(&mut store, &s);
        let Admit::Refused(Refusal::Open { until }) = first.value else {
            panic!("still open: {:?}", first.value)
        };
        assert!(until <= first.now + 1_000, "cut to the open max");
        // The next run honours the open time this one announced, rather than a new one.
        let next = admit(&mut store, &s);
        match next.value {
            Admit::Refused(Refusal::Open { until: again }) => assert_eq!(again, until),
            Admit::Run(_) => assert!(next.now >= until, "let in only once it is over"),
            other => panic!("{other:?}"),
        }
        let kept: Saved =
            serde_json::from_slice(&fs::read(store.path(dir.path(), "json")).expect("read"))
                .expect("a state file");
        assert!(
            matches!(kept.state.breaker, Breaker::Open { until: u, .. } if u == until),
            "written as announced: {:?}",
            kept.state.breaker
        );
    }

    #[test]
    fn after_a_reboot_a_breaker_whose_time_passed_by_the_wall_clock_lets_the_run_in() {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let now = Clock::now();
        // Saved 4 days ago in another boot, open for 3 days from then.
        let then = Clock {
            boot_id: "another boot".into(),
            boot_ms: 1_000,
            wall_ms: now.wall_ms - 4 * DAY,
        };
        let mut store = saved(dir.path(), &then, 1_000 + 3 * DAY, 3 * DAY);
        let mut s = settings();
        s.breaker.open_max = Duration::from_secs(7 * 86_400);
        let reply = admit(&mut store, &s);
        assert!(
            matches!(reply.value, Admit::Run(t) if t.probe),
            "{:?}",
            reply.value
        );
    }
}
