//! The private folder of hint files, one per attempt, that a command may write to
//! (`RETRY_HINT_FILE`, `{hints}`); what a hint file says is read by [`crate::policy::hints`].

use std::fs::{File, Permissions};
use std::io::{self, BufRead, BufReader, Read};
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;

use nix::errno::Errno;
use nix::fcntl::OFlag;
use nix::sys::stat::{Mode, SFlag};

use crate::policy::hints::{Hint, Reading};
use crate::quote;

/// The most of one line of a hint file that is kept; the rest of a longer line is passed over.
/// A header is far shorter (curl refuses one over 100 KiB), and the status line that starts
/// a response is known by its first bytes, so no response is missed for it.
const MAX_LINE: usize = 64 * 1024;

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
        let stat = nix::sys::stat::fstat(&fd);
        let _ = std::fs::remove_file(&path);
        match stat {
            Ok(st) if st.st_mode & SFlag::S_IFMT.bits() == SFlag::S_IFREG.bits() => {
                // Read to the size it has now: a process the command left behind that goes
                // on writing to it cannot keep retry reading.
                let size = u64::try_from(st.st_size).unwrap_or(0);
                taken.hint = read(File::from(fd).take(size)).ok();
            }
            Ok(_) => taken.warning = Some(ignored(&path, "it is not a regular file")),
            Err(e) => taken.warning = Some(ignored(&path, &e.desc().to_lowercase())),
        }
        taken
    }
}

/// What a hint file says, read to its end a line at a time: a header dump is judged by its
/// last response whatever its size, in the memory of one line.
fn read(file: impl Read) -> io::Result<Hint> {
    let mut input = BufReader::with_capacity(MAX_LINE, file);
    let mut reading = Reading::default();
    let mut line = Vec::new();
    loop {
        let buf = input.fill_buf()?;
        if buf.is_empty() {
            break;
        }
        let newline = buf.iter().position(|&b| b == b'\n');
        let piece = &buf[..newline.unwrap_or(buf.len())];
        let room = MAX_LINE.saturating_sub(line.len());
        line.extend_from_slice(&piece[..piece.len().min(room)]);
        let used = newline.map_or(buf.len(), |i| i + 1);
        input.consume(used);
        if newline.is_some() {
            reading.line(&String::from_utf8_lossy(&line));
            line.clear();
        }
    }
    if !line.is_empty() {
        reading.line(&String::from_utf8_lossy(&line));
    }
    Ok(reading.finish())
}

fn ignored(path: &std::path::Path, why: &str) -> String {
    format!(
        "warning: the hint file {} is ignored: {why}",
        quote::quoted(path)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A source that gives at most `n` bytes a read, as a pipe or a slow disk may: lines
    /// cross the reader's buffer anywhere.
    struct Trickle<'a>(&'a [u8], usize);

    impl Read for Trickle<'_> {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            let n = self.0.len().min(self.1).min(buf.len());
            buf[..n].copy_from_slice(&self.0[..n]);
            self.0 = &self.0[n..];
            Ok(n)
        }
    }

    fn dump(responses: usize) -> Vec<u8> {
        let mut dump = Vec::new();
        for i in 0..responses {
            dump.extend_from_slice(b"HTTP/1.1 302 Found\r\nLocation: /next\r\n");
            dump.extend_from_slice(format!("X-Pad: {}\r\n\r\n", "p".repeat(i % 300)).as_bytes());
        }
        dump.extend_from_slice(b"HTTP/1.1 404 Not Found\r\nRetry-After: 5\r\n\r\n");
        dump
    }

    #[test]
    fn a_dump_of_many_mib_is_judged_by_its_last_response() {
        let dump = dump(20_000);
        assert!(dump.len() > 3 << 20, "{}", dump.len());
        for n in [1 << 20, 4096, 7] {
            let hint = read(Trickle(&dump, n)).expect("read");
            assert_eq!(hint.http_status, Some(404), "reads of {n}");
            assert_eq!(
                hint.retry_after,
                Some(crate::policy::hints::RetryAfter::Delay(
                    std::time::Duration::from_secs(5)
                ))
            );
        }
    }

    #[test]
    fn a_line_longer_than_is_kept_is_passed_over_whole_not_split_into_lines() {
        // Past MAX_LINE, a header holds what would read as a status line if the rest of the
        // line were taken for a line of its own.
        let mut dump = b"HTTP/1.1 503 Service Unavailable\r\nX-Long: ".to_vec();
        dump.extend(std::iter::repeat_n(b'x', MAX_LINE * 3));
        dump.extend_from_slice(b"HTTP/1.1 200 OK\r\nRetry-After: 2\r\n\r\n");
        let hint = read(Trickle(&dump, 10_000)).expect("read");
        assert_eq!(hint.http_status, Some(503));
        assert_eq!(
            hint.retry_after,
            Some(crate::policy::hints::RetryAfter::Delay(
                std::time::Duration::from_secs(2)
            ))
        );
    }

    #[test]
    fn simple_lines_without_a_last_newline_are_read() {
        let hint = read(&b"retry-after=3s\nstop"[..]).expect("read");
        assert!(hint.stop);
    }
}
