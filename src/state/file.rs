//! A key's state in a small file of the state directory, one per key. Each change is a
//! read-modify-write under a lock on a sidecar file (never the state file, which is replaced by
//! rename), held only for that; a change that changes nothing is not written, and needs no lock.
//!
//! Retry often runs as root, in a directory that should be its own: one that other users can
//! write is refused; every entry is named relative to the directory once checked, none is
//! opened through a symbolic link or in a way that can block (a FIFO, a device), and what
//! cannot be read, or read but not believed, is moved aside.

use std::fs::{DirBuilder, File};
use std::io;
use std::os::unix::fs::{DirBuilderExt, FileExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::clock::Clock;
use super::saved::{
    MAX_BYTES, Remembered, Saved, VERDICT_MAX_BYTES, VERDICT_VERSION, VERSION, file_name, key_of,
};
use super::{Error, Forgot, Local, LockWait, Locked, Memo, Reply, Verdict};
use crate::platform::files::{Dir, Entry};
use crate::policy::shared::{KeyRules, KeyState};

/// How long a run waits for the key's lock while nobody makes progress with it: the holder is
/// then stuck (a holder keeps it for the microseconds of one change).
const LOCK_STALL: Duration = Duration::from_secs(1);

/// How long a run waits for the key's lock at most, however often it changes hands meanwhile:
/// runs of a herd wait their turn. A run that does not get it then makes no retry its breaker
/// or budget would have had to allow.
const LOCK_WAIT_MAX: Duration = Duration::from_secs(5);

/// The longest wait for the key's lock: [`LOCK_WAIT_MAX`], or what the tests set.
fn lock_wait_max() -> Duration {
    crate::platform::clock::test_lock_wait().unwrap_or(LOCK_WAIT_MAX)
}

/// The longest pause between two tries of the lock: what a signal may wait to be seen.
const LOCK_PAUSE: Duration = Duration::from_millis(4);

/// A wait for a key's lock ends as soon as a signal that stops the run arrives (once retry's
/// handlers are installed), so that the run can answer it at once.
fn stop_waiting() -> bool {
    crate::platform::signals::cancelling_arrived()
}

/// The key's state file, as read.
enum Loaded {
    /// The key was never written.
    New,
    /// The state, and whether it must be written again on this clock's timeline: it was
    /// saved in another boot, or under a wall clock ahead of this one's. Placed by a wall clock
    /// that says no time has passed, it would be placed afresh at every run and never age; once
    /// written on this boot's clock it ages by the boot clock.
    State(KeyState, bool),
    /// A file that cannot be read or believed, and why.
    Bad(String),
}

/// The files of one key.
pub struct FileStore {
    dir: Option<PathBuf>,
    /// The key, made safe as a file name.
    name: String,
    /// The longest a wait for the lock may last: what is left before the run's deadline.
    wait_most: Option<Duration>,
}

impl FileStore {
    /// The store for `key` in `dir`; without a directory every operation fails with
    /// [`Error::NoDirectory`].
    pub fn new(dir: Option<PathBuf>, key: &str) -> FileStore {
        FileStore {
            dir,
            name: file_name(key),
            wait_most: None,
        }
    }

    /// The keys with a state file in `dir`, each with its store and the time its file was
    /// last written; none when there is no such directory. A key too long for a file name
    /// is shown as its file's name (its start, `~` and a hash).
    pub fn all(dir: &Path) -> io::Result<Vec<(String, FileStore, Option<std::time::SystemTime>)>> {
        let entries = match std::fs::read_dir(dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(e),
        };
        let mut keys = Vec::new();
        for entry in entries {
            let entry = entry?;
            let file = entry.file_name();
            let Some(name) = file.to_str().and_then(|f| f.strip_suffix(".json")) else {
                continue;
            };
            // Only names retry makes: no lock, no file moved aside, nothing else.
            if name.is_empty()
                || name.starts_with('.')
                || !name
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"-_.%~".contains(&b))
            {
                continue;
            }
            let changed = entry.metadata().ok().and_then(|m| m.modified().ok());
            let store = FileStore {
                dir: Some(dir.to_path_buf()),
                name: name.to_string(),
                wait_most: None,
            };
            keys.push((key_of(name), store, changed));
        }
        keys.sort_by(|a, b| a.0.cmp(&b.0));
        Ok(keys)
    }

    fn dir(&self) -> Result<&Path, Error> {
        self.dir.as_deref().ok_or(Error::NoDirectory)
    }

    fn file(&self, ending: &str) -> String {
        format!("{}.{ending}", self.name)
    }

    fn path(&self, dir: &Path, ending: &str) -> PathBuf {
        dir.join(self.file(ending))
    }

    /// Opens the state directory, creating it (0700) first if `create`; `None` when it does
    /// not exist and is not to be created. One that other users can write is refused.
    fn open_dir(&self, path: &Path, create: bool) -> Result<Option<Dir>, Error> {
        if create {
            DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(path)
                .map_err(|source| io_error("create", path, source))?;
        }
        let dir = match Dir::open(path) {
            Ok(dir) => dir,
            Err(e) if e.kind() == io::ErrorKind::NotFound && !create => return Ok(None),
            Err(source) => return Err(io_error("open", path, source)),
        };
        let stat = dir
            .stat()
            .map_err(|source| io_error("open", path, source))?;
        unsafe_dir(path, stat.st_uid, stat.st_mode)
            .map_or(Ok(Some(dir)), |why| Err(Error::UnsafeDirectory(why)))
    }

    /// Reads the state file, placed on the clock's timeline.
    fn load(&self, dir: &Dir, clock: &Clock) -> Loaded {
        let name = self.file("json");
        let bytes = match dir.read(&name, MAX_BYTES) {
            Ok(Entry::Missing) => return Loaded::New,
            Ok(Entry::Special(kind)) => return Loaded::Bad(format!("it is {kind}")),
            Ok(Entry::Bytes { bytes, owner }) => {
                let me = crate::platform::files::euid();
                if owner != me && owner != 0 {
                    return Loaded::Bad(format!("it belongs to another user (uid {owner})"));
                }
                bytes
            }
            Err(e) => return Loaded::Bad(e.to_string()),
        };
        if bytes.len() as u64 > MAX_BYTES {
            return Loaded::Bad(format!("it is longer than {MAX_BYTES} bytes"));
        }
        let saved = match serde_json::from_slice::<Saved>(&bytes) {
            Ok(saved) => saved,
            Err(e) => return Loaded::Bad(format!("it is not a state file: {e}")),
        };
        if let Err(why) = saved.validate() {
            return Loaded::Bad(why);
        }
        let then = Clock {
            boot_id: saved.boot_id,
            boot_ms: saved.boot_ms,
            wall_ms: saved.wall_ms,
        };
        let mut state = saved.state;
        let (from, to) = clock.moved(&then);
        state.shift(from, to);
        Loaded::State(state, clock.foreign(&then))
    }

    /// Moves a file that cannot be read or believed aside (under the lock), and says so: to
    /// `KEY.json.corrupt`, or a numbered name when that exists. When it cannot be moved, the
    /// error says what to do.
    fn move_aside(&self, dir: &Dir, why: &str) -> Result<String, Error> {
        let name = self.file("json");
        let path = dir.join(&name);
        let mut failed = None;
        for n in 0..10 {
            let aside = match n {
                0 => self.file("json.corrupt"),
                n => self.file(&format!("json.corrupt.{n}")),
            };
            match dir.rename_new(&name, &aside) {
                Ok(()) => {
                    return Ok(format!(
                        "state file '{}' could not be read ({why}); moved it to '{}' and started the key afresh",
                        path.display(),
                        dir.join(&aside).display()
                    ));
                }
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
                Err(e) => {
                    failed = Some(e);
                    break;
                }
            }
        }
        let (how, sudo) = match &failed {
            Some(e) => (
                e.to_string(),
                matches!(
                    e.kind(),
                    io::ErrorKind::PermissionDenied | io::ErrorKind::ReadOnlyFilesystem
                ) && crate::platform::files::euid() != 0,
            ),
            None => (
                format!("'{}' to '.9' exist", self.file("json.corrupt")),
                false,
            ),
        };
        Err(Error::Unusable(format!(
            "state file '{}' could not be read ({why}) nor moved aside ({how}); to use the key again, remove it: {}rm -r '{}'",
            path.display(),
            if sudo { "sudo " } else { "" },
            path.display()
        )))
    }

    /// Writes the state: to a temporary file beside it, then renamed over it.
    fn save(&self, dir: &Dir, clock: &Clock, state: &KeyState) -> Result<(), Error> {
        let saved = Saved {
            version: VERSION,
            boot_id: clock.boot_id.clone(),
            boot_ms: clock.boot_ms,
            wall_ms: clock.wall_ms,
            state: state.clone(),
        };
        // A struct of plain fields always serializes.
        let bytes = serde_json::to_vec(&saved).unwrap_or_default();
        let name = self.file("json");
        dir.replace(&name, &bytes, 0o600)
            .map_err(|source| io_error("write", &dir.join(&name), source))
    }

    /// Takes the key's lock; it is let go when the file is dropped. The run waits while the
    /// lock changes hands, up to [`LOCK_WAIT_MAX`] and never past the run's deadline; a holder
    /// that makes no progress for [`LOCK_STALL`] ends the wait, and so does a signal that stops
    /// the run. Each holder counts its turn in the lock file, which is how the others see the
    /// lock change hands, and tell a herd from a stuck holder.
    fn lock(&self, dir: &Dir) -> Result<File, Error> {
        let name = self.file("lock");
        let path = dir.join(&name);
        let file = dir.lock_file(&name, 0o600).map_err(|e| {
            match dir.entry(&name) {
                Ok(Some(stat)) if crate::platform::files::kind(&stat) != "a regular file" => {
                    Error::Unusable(format!(
                        "the lock file '{}' is {}, not a regular file; to use the key again, remove it: rm -r '{}'",
                        path.display(),
                        crate::platform::files::kind(&stat),
                        path.display()
                    ))
                }
                _ => io_error("lock", &path, e),
            }
        })?;
        let most = lock_wait_max();
        let (limit, deadline) = match self.wait_most {
            Some(left) if left < most => (left, true),
            _ => (most, false),
        };
        let stall = LOCK_STALL.min(most);
        let start = Instant::now();
        let first = turns(&file);
        let mut seen = first;
        let mut progress = start;
        let mut pause = Duration::from_micros(50);
        loop {
            match file.try_lock() {
                Ok(()) => {
                    // What this holder does next is progress for the others.
                    let turn = turns(&file).wrapping_add(1);
                    let _ = file.write_at(&turn.to_le_bytes(), 0);
                    return Ok(file);
                }
                Err(std::fs::TryLockError::WouldBlock) => {}
                Err(std::fs::TryLockError::Error(e)) => return Err(io_error("lock", &path, e)),
            }
            if stop_waiting() {
                return Err(io_error("lock", &path, io::ErrorKind::Interrupted.into()));
            }
            let now = Instant::now();
            let turn = turns(&file);
            if turn != seen {
                seen = turn;
                progress = now;
            }
            let waited = now.duration_since(start);
            let why = if now.duration_since(progress) >= stall {
                Some(LockWait::Stuck)
            } else if waited >= limit && deadline {
                Some(LockWait::Deadline)
            } else if waited >= limit {
                Some(LockWait::Contended {
                    turns: seen.wrapping_sub(first),
                })
            } else {
                None
            };
            if let Some(why) = why {
                let waited = match why {
                    LockWait::Stuck => now.duration_since(progress),
                    _ => waited,
                };
                return Err(Error::Locked(Locked { path, waited, why }));
            }
            std::thread::sleep(pause.min(limit.saturating_sub(waited)));
            pause = (pause * 2).min(LOCK_PAUSE);
        }
    }
}

/// How many times the lock file's lock was taken, as its holders count.
fn turns(file: &File) -> u64 {
    let mut bytes = [0u8; 8];
    match file.read_at(&mut bytes, 0) {
        Ok(8) => u64::from_le_bytes(bytes),
        _ => 0,
    }
}

/// Why a state directory with this owner and mode cannot be trusted, if it cannot: other
/// users can write it (unless it is sticky and this user's), or it is another user's.
fn unsafe_dir(path: &Path, owner: u32, mode: u32) -> Option<String> {
    let me = crate::platform::files::euid();
    let sticky = mode & 0o1000 != 0;
    let others_write = mode & 0o022 != 0;
    let quoted = format!("'{}'", path.display());
    if owner != me && owner != 0 {
        Some(format!(
            "the state directory {quoted} belongs to another user (uid {owner}), who could change the key's state: give it to this user (chown {me} {quoted}) or choose another --state-dir"
        ))
    } else if others_write && !(sticky && owner == me) {
        Some(format!(
            "the state directory {quoted} can be written by other users (mode {:04o}), who could change the key's state: make it private (chmod go-w {quoted}) or choose another --state-dir",
            mode & 0o7777
        ))
    } else {
        None
    }
}

impl Local for FileStore {
    fn wait_at_most(&mut self, most: Option<Duration>) {
        self.wait_most = most;
    }

    fn update<T>(
        &mut self,
        s: &KeyRules,
        op: impl Fn(&mut KeyState, u64) -> T,
    ) -> Result<Reply<T>, Error> {
        let path = self.dir()?.to_path_buf();
        // First without the lock: most operations (a closed breaker, a full budget) change
        // nothing, and a state replaced by rename is always whole. A key never written, in a
        // directory not made yet, is a new key.
        let clock = Clock::now();
        let loaded = match self.open_dir(&path, false)? {
            Some(dir) => self.load(&dir, &clock),
            None => Loaded::New,
        };
        let read = match loaded {
            Loaded::New => Some(KeyState::new(s, clock.boot_ms)),
            Loaded::State(state, false) => Some(state),
            Loaded::State(_, true) | Loaded::Bad(_) => None,
        };
        if let Some(read) = read {
            let now = clock.boot_ms;
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
        let dir = self
            .open_dir(&path, true)?
            .ok_or_else(|| io_error("open", &path, io::ErrorKind::NotFound.into()))?;
        let _lock = self.lock(&dir)?;
        let clock = Clock::now();
        let (loaded, warning, foreign) = match self.load(&dir, &clock) {
            Loaded::New => (None, None, false),
            Loaded::State(state, foreign) => (Some(state), None, foreign),
            Loaded::Bad(why) => (None, Some(self.move_aside(&dir, &why)?), false),
        };
        let now = clock.boot_ms;
        let read = loaded.unwrap_or_else(|| KeyState::new(s, now));
        let mut state = read.clone();
        state.clamp(s, now);
        let value = op(&mut state, now);
        if state != read || warning.is_some() || foreign {
            self.save(&dir, &clock, &state)?;
        }
        Ok(Reply {
            view: state.view(s, now),
            value,
            now,
            warning,
        })
    }

    /// The key's state, changing nothing: no directory is made, no lock taken, nothing moved
    /// aside. What a run would find wrong is the reply's warning.
    fn peek(&mut self, s: &KeyRules) -> Result<Reply<()>, Error> {
        let path = self.dir()?.to_path_buf();
        let clock = Clock::now();
        let now = clock.boot_ms;
        let loaded = match self.open_dir(&path, false) {
            Ok(Some(dir)) => self.load(&dir, &clock),
            Ok(None) => Loaded::New,
            // A file on the way: the key has no state, and the note below says why.
            Err(Error::Io { source, .. }) if source.kind() == io::ErrorKind::NotADirectory => {
                Loaded::New
            }
            Err(e) => return Err(e),
        };
        let mut warnings = Vec::new();
        let state = match loaded {
            Loaded::New => KeyState::new(s, now),
            Loaded::State(mut state, _) => {
                state.clamp(s, now);
                state
            }
            Loaded::Bad(why) => {
                warnings.push(format!(
                    "the state file '{}' cannot be read ({why}): the next run moves it aside and starts the key afresh",
                    self.path(&path, "json").display()
                ));
                KeyState::new(s, now)
            }
        };
        if let Some(why) = unwritable(&path) {
            warnings.push(format!(
                "the state directory '{}' cannot be written ({why}): runs will go on without the key's state",
                path.display()
            ));
        }
        Ok(Reply {
            view: state.view(s, now),
            value: (),
            now,
            warning: (!warnings.is_empty()).then(|| warnings.join("; ")),
        })
    }

    fn forget(&mut self) -> Result<Forgot, Error> {
        let path = self.dir()?.to_path_buf();
        let Some(dir) = self.open_dir(&path, false)? else {
            return Ok(Forgot::Nothing);
        };
        let name = self.file("json");
        // Nothing to forget: nothing is made, not even the lock.
        if dir
            .entry(&name)
            .map_err(|source| io_error("read", &dir.join(&name), source))?
            .is_none()
        {
            return Ok(Forgot::Nothing);
        }
        let _lock = self.lock(&dir)?;
        match dir.remove(&name) {
            Ok(true) => Ok(Forgot::State),
            Ok(false) => Ok(Forgot::Nothing),
            Err(source) => Err(io_error("remove", &dir.join(&name), source)),
        }
    }

    fn reset(&mut self) -> Result<(), Error> {
        self.forget().map(|_| ())
    }

    fn describe(&self) -> String {
        match &self.dir {
            Some(dir) => format!("file {}", self.path(dir, "json").display()),
            None => "no state directory".into(),
        }
    }
}

/// What this host remembers of a key's open breaker, as a `--state` store told it: the file
/// `KEY.open` of the state directory, in the same directory as the key's local state and with
/// the same care (a directory other users can write is refused, nothing is opened through a
/// link or in a way that can block). It is written whole and renamed into place, without a
/// lock: each run that writes it writes what the store has just told it, and the last one
/// stands. What cannot be read or believed is not believed: the next run asks the store.
pub struct FileMemo {
    files: FileStore,
    /// The store's URL, redacted: a verdict is believed only from the store it came from.
    store: String,
}

impl FileMemo {
    pub fn new(dir: Option<PathBuf>, key: &str, store: String) -> FileMemo {
        FileMemo {
            files: FileStore::new(dir, key),
            store,
        }
    }

    /// The verdict in the file, its time placed on `clock`'s timeline: `None` when there is
    /// none, it cannot be believed, it is another store's, or it was told in another boot
    /// (a reboot forgets it: the next run asks the store, once).
    fn read(&self, dir: &Dir, clock: &Clock) -> Option<Verdict> {
        let bytes = match dir.read(&self.files.file("open"), VERDICT_MAX_BYTES) {
            Ok(Entry::Bytes { bytes, owner }) => {
                let me = crate::platform::files::euid();
                (owner == me || owner == 0).then_some(bytes)?
            }
            _ => return None,
        };
        let saved = serde_json::from_slice::<Remembered>(&bytes).ok()?;
        saved.validate().ok()?;
        if saved.store != self.store {
            return None;
        }
        let then = Clock {
            boot_id: saved.boot_id,
            boot_ms: saved.boot_ms,
            wall_ms: saved.wall_ms,
        };
        if !clock.boot_id.is_empty() && !then.boot_id.is_empty() && clock.boot_id != then.boot_id {
            return None;
        }
        // In this boot, exactly by the boot clock; without a boot id, by the wall clock, a
        // clock set back counting as no time passed (bounded by --breaker-open-max).
        let until = clock.place(&then).saturating_add(saved.left_ms);
        Some(Verdict {
            left: Duration::from_millis(until.saturating_sub(clock.boot_ms)),
            tokens: saved.tokens,
        })
    }
}

impl Memo for FileMemo {
    fn recall(&mut self) -> Result<Option<Verdict>, Error> {
        let path = self.files.dir()?.to_path_buf();
        let clock = Clock::now();
        Ok(match self.files.open_dir(&path, false) {
            Ok(Some(dir)) => self.read(&dir, &clock),
            Ok(None) => None,
            Err(Error::Io { source, .. }) if source.kind() == io::ErrorKind::NotADirectory => None,
            Err(e) => return Err(e),
        })
    }

    fn remember(&mut self, verdict: Verdict) -> Result<(), Error> {
        let path = self.files.dir()?.to_path_buf();
        let dir = self
            .files
            .open_dir(&path, true)?
            .ok_or_else(|| io_error("open", &path, io::ErrorKind::NotFound.into()))?;
        let clock = Clock::now();
        let saved = Remembered {
            version: VERDICT_VERSION,
            store: self.store.clone(),
            boot_id: clock.boot_id,
            boot_ms: clock.boot_ms,
            wall_ms: clock.wall_ms,
            left_ms: u64::try_from(verdict.left.as_millis()).unwrap_or(u64::MAX),
            tokens: verdict.tokens,
        };
        // A struct of plain fields always serializes.
        let bytes = serde_json::to_vec(&saved).unwrap_or_default();
        let name = self.files.file("open");
        dir.replace(&name, &bytes, 0o600)
            .map_err(|source| io_error("write", &dir.join(&name), source))
    }

    fn forget(&mut self) -> Result<bool, Error> {
        let path = self.files.dir()?.to_path_buf();
        let Some(dir) = self.files.open_dir(&path, false)? else {
            return Ok(false);
        };
        let name = self.files.file("open");
        dir.remove(&name)
            .map_err(|source| io_error("remove", &dir.join(&name), source))
    }
}

/// Why the state directory at `path` (or, while it does not exist, the directory it would be
/// made in) cannot be written, if it cannot.
fn unwritable(path: &Path) -> Option<String> {
    let mut at = path;
    loop {
        match std::fs::metadata(at) {
            Ok(m) if !m.is_dir() => {
                return Some(format!("'{}' is not a directory", at.display()));
            }
            Ok(_) => {
                return crate::platform::files::can_enter_and_write(at)
                    .err()
                    .map(|e| e.to_string());
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => match at.parent() {
                Some(parent) if !parent.as_os_str().is_empty() => at = parent,
                _ => return None,
            },
            Err(e) => return Some(e.to_string()),
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

#[cfg(test)]
#[path = "file_tests.rs"]
mod tests;
