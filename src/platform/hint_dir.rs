//! The private folder of hint files, one per attempt, that a command may write to
//! (`RETRY_HINT_FILE`, `{hints}`); what a hint file says is read by [`crate::policy::hints`].

use std::fs::{File, Permissions};
use std::io::{self, Read};
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;

use nix::errno::Errno;
use nix::fcntl::OFlag;
use nix::sys::stat::{Mode, SFlag};

use crate::policy::hints::Hint;
use crate::quote;

/// The most of a hint file that is read; a header dump is far smaller.
const MAX_HINT: u64 = 1 << 20;

/// The private folder that holds the attempts' hint files; removed with it.
pub struct HintDir {
    dir: tempfile::TempDir,
}

/// What an attempt's hint file gave: the hint, and a warning when something other than a
/// regular file was found there.
pub struct Taken {
    pub hint: Option<Hint>,
    pub warning: Option<String>,
}

impl HintDir {
    /// A new folder in TMPDIR, readable by its owner alone whatever the umask: mkdir makes it
    /// 0700 less the umask (never wider), and chmod makes it 0700 exactly, so that no other user
    /// reads a header dump or plants a file (a link, a FIFO) in it.
    pub fn new() -> io::Result<HintDir> {
        let dir = tempfile::Builder::new()
            .prefix("retry-")
            .permissions(Permissions::from_mode(0o700))
            .tempdir()?;
        std::fs::set_permissions(dir.path(), Permissions::from_mode(0o700))?;
        Ok(HintDir { dir })
    }

    /// The hint file of an attempt; the command creates it, if it has anything to say.
    pub fn path(&self, attempt: u32) -> PathBuf {
        self.dir.path().join(format!("hints.{attempt}"))
    }

    /// What the attempt wrote, if anything; the file is removed. It is opened without following
    /// a link and without blocking (a FIFO has no writer), and read only if it is a regular
    /// file: anything else gives a warning and no hint.
    pub fn take(&self, attempt: u32) -> Taken {
        let path = self.path(attempt);
        let flags = OFlag::O_RDONLY | OFlag::O_NOFOLLOW | OFlag::O_NONBLOCK | OFlag::O_CLOEXEC;
        let opened = nix::fcntl::open(&path, flags, Mode::empty());
        let mut taken = Taken {
            hint: None,
            warning: None,
        };
        let fd = match opened {
            Ok(fd) => fd,
            Err(Errno::ENOENT) => return taken,
            Err(e) => {
                let why = match e {
                    Errno::ELOOP => "it is a symbolic link".to_string(),
                    e => e.desc().to_lowercase(),
                };
                taken.warning = Some(ignored(&path, &why));
                let _ = std::fs::remove_file(&path);
                return taken;
            }
        };
        let regular = nix::sys::stat::fstat(&fd)
            .map(|st| st.st_mode & SFlag::S_IFMT.bits() == SFlag::S_IFREG.bits());
        let _ = std::fs::remove_file(&path);
        match regular {
            Ok(true) => {
                let mut text = Vec::new();
                if File::from(fd).take(MAX_HINT).read_to_end(&mut text).is_ok() {
                    taken.hint = Some(Hint::parse(&String::from_utf8_lossy(&text)));
                }
            }
            Ok(false) => taken.warning = Some(ignored(&path, "it is not a regular file")),
            Err(e) => taken.warning = Some(ignored(&path, &e.desc().to_lowercase())),
        }
        taken
    }
}

fn ignored(path: &std::path::Path, why: &str) -> String {
    format!(
        "warning: the hint file {} is ignored: {why}",
        quote::quoted(path)
    )
}
