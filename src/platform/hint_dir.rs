//! The private folder of hint files, one per attempt, that a command may write to
//! (`RETRY_HINT_FILE`, `{hints}`); what a hint file says is read by [`crate::policy::hints`].

use std::fs::File;
use std::io::{self, Read};
use std::path::PathBuf;

use crate::policy::hints::Hint;

/// The most of a hint file that is read; a header dump is far smaller.
const MAX_HINT: u64 = 1 << 20;

/// The private folder that holds the attempts' hint files; removed with it.
pub struct HintDir {
    dir: tempfile::TempDir,
}

impl HintDir {
    pub fn new() -> io::Result<HintDir> {
        // tempfile makes the folder mode 0700: no other user can read or plant a hint.
        let dir = tempfile::Builder::new().prefix("retry-").tempdir()?;
        Ok(HintDir { dir })
    }

    /// The hint file of an attempt; the command creates it, if it has anything to say.
    pub fn path(&self, attempt: u32) -> PathBuf {
        self.dir.path().join(format!("hints.{attempt}"))
    }

    /// What the attempt wrote, if anything; the file is removed.
    pub fn take(&self, attempt: u32) -> Option<Hint> {
        let path = self.path(attempt);
        let mut text = Vec::new();
        File::open(&path)
            .ok()?
            .take(MAX_HINT)
            .read_to_end(&mut text)
            .ok()?;
        let _ = std::fs::remove_file(&path);
        Some(Hint::parse(&String::from_utf8_lossy(&text)))
    }
}
