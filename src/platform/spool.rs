//! Bytes kept for later: in memory up to a bound, then in a private temporary file.

use std::fs::File;
use std::io;
use std::os::fd::BorrowedFd;
use std::os::unix::fs::FileExt;

use nix::errno::Errno;

/// Bytes kept in memory before the rest goes to a temporary file.
pub const MEMORY_LIMIT: usize = 1 << 20;
/// At most this much is read at once from a pipe on its way to the file.
const PASSAGE: usize = 1 << 20;

/// Bytes taken from a pipe that could not be kept: the file failed.
pub struct Unkept {
    pub error: io::Error,
    /// How many were taken from the pipe all the same.
    pub taken: usize,
}

/// An append-only store of bytes that can be read back from any position.
#[derive(Default)]
pub struct Spool {
    memory: Vec<u8>,
    /// Everything past `memory`, once it outgrew the bound. The file has no name: it is
    /// created unlinked (mode 0600), so it vanishes when retry exits, however it exits.
    file: Option<File>,
    len: u64,
    /// What passes from a pipe to the file, on its way.
    passage: Vec<u8>,
}

impl Spool {
    pub fn len(&self) -> u64 {
        self.len
    }

    pub fn append(&mut self, bytes: &[u8]) -> io::Result<()> {
        let room = MEMORY_LIMIT
            .saturating_sub(self.memory.len())
            .min(bytes.len());
        let (now, rest) = if self.file.is_none() {
            bytes.split_at(room)
        } else {
            (&bytes[..0], bytes)
        };
        self.memory.extend_from_slice(now);
        if !rest.is_empty() {
            let file = match &mut self.file {
                Some(file) => file,
                None => self.file.insert(tempfile::tempfile()?),
            };
            let at = self.len + now.len() as u64 - self.memory.len() as u64;
            file.write_all_at(rest, at)?;
        }
        self.len += bytes.len() as u64;
        Ok(())
    }

    /// Takes up to `n` bytes from the pipe `from` and appends them: read into memory while it
    /// has room, then into the file. Returns how many (0 at the end of the pipe).
    ///
    /// The bytes for the file are read, then written, rather than spliced from the pipe to
    /// the file: splice(2) holds the pipe's lock while the file system writes, and the writer
    /// at the other end of the pipe, waiting for it, would go at the file system's pace.
    pub fn append_from(&mut self, from: BorrowedFd<'_>, n: usize) -> Result<usize, Unkept> {
        let unkept = |error: io::Error| Unkept { error, taken: 0 };
        let room = MEMORY_LIMIT.saturating_sub(self.memory.len()).min(n);
        let got = if self.file.is_none() && room > 0 {
            let old = self.memory.len();
            self.memory.resize(old + room, 0);
            let read = retrying(|| nix::unistd::read(from, &mut self.memory[old..]));
            self.memory.truncate(old + *read.as_ref().unwrap_or(&0));
            read.map_err(|e| unkept(e.into()))?
        } else {
            let file = match &mut self.file {
                Some(file) => file,
                None => self.file.insert(tempfile::tempfile().map_err(unkept)?),
            };
            let want = n.min(PASSAGE);
            if self.passage.len() < want {
                self.passage.resize(want, 0);
            }
            let passage = &mut self.passage[..want];
            let got =
                retrying(|| nix::unistd::read(from, passage)).map_err(|e| unkept(e.into()))?;
            let at = self.len - self.memory.len() as u64;
            if let Err(error) = file.write_all_at(&self.passage[..got], at) {
                return Err(Unkept { error, taken: got });
            }
            got
        };
        self.len += got as u64;
        Ok(got)
    }

    /// Writes what is kept from position `pos` on into the non-blocking pipe `to`, as much as
    /// it takes at once, up to `max` bytes; returns how many (0 at the end).
    pub fn write_to(&self, pos: u64, to: BorrowedFd<'_>, max: usize) -> nix::Result<usize> {
        let in_memory = self.memory.len() as u64;
        if pos < in_memory {
            let from = &self.memory[pos as usize..];
            return nix::unistd::write(to, &from[..from.len().min(max)]);
        }
        match &self.file {
            Some(file) if pos < self.len => {
                let at = pos - in_memory;
                let n = (self.len - pos).min(max as u64) as usize;
                file_to_pipe(file, at, to, n)
            }
            _ => Ok(0),
        }
    }

    /// Reads bytes from position `pos` into `buf`; returns how many (0 at the end).
    pub fn read_at(&self, pos: u64, buf: &mut [u8]) -> io::Result<usize> {
        let in_memory = self.memory.len() as u64;
        if pos < in_memory {
            let from = &self.memory[pos as usize..];
            let n = from.len().min(buf.len());
            buf[..n].copy_from_slice(&from[..n]);
            return Ok(n);
        }
        match &self.file {
            Some(file) if pos < self.len => {
                let n = (self.len - pos).min(buf.len() as u64) as usize;
                file.read_exact_at(&mut buf[..n], pos - in_memory)?;
                Ok(n)
            }
            _ => Ok(0),
        }
    }
}

/// The last bytes of a stream, at most `capacity` of them: a ring, in memory up to a bound,
/// then in a private temporary file that never grows past `capacity`. Positions are counted
/// from the stream's beginning; what is kept runs from [`Ring::start`] to [`Ring::end`], and
/// the owner drops the earliest bytes ([`Ring::drop_front`]) to make room before it pushes.
///
/// A ring rather than a spool that is copied to a new one to keep its tail: each byte is
/// written once, the file never holds more than `capacity`, and no copy of half of it stalls
/// the reading of the command's output.
pub struct Ring {
    capacity: u64,
    memory_limit: usize,
    /// The bytes while there is no file: position `p` is at `p % capacity`.
    memory: Vec<u8>,
    /// The bytes once they outgrew `memory_limit`, at `p % capacity`; created unlinked, as a
    /// [`Spool`]'s.
    file: Option<File>,
    start: u64,
    end: u64,
}

impl Ring {
    pub fn new(capacity: u64, memory_limit: usize) -> Ring {
        Ring {
            capacity,
            memory_limit,
            memory: Vec::new(),
            file: None,
            start: 0,
            end: 0,
        }
    }

    pub fn capacity(&self) -> u64 {
        self.capacity
    }

    pub fn start(&self) -> u64 {
        self.start
    }

    pub fn end(&self) -> u64 {
        self.end
    }

    pub fn len(&self) -> u64 {
        self.end - self.start
    }

    /// Appends `parts`, one after the other, or nothing: on an error, [`Ring::end`] stays where
    /// it was. The caller has made room for them.
    pub fn push(&mut self, parts: &[&[u8]]) -> io::Result<()> {
        let n: u64 = parts.iter().map(|p| p.len() as u64).sum();
        debug_assert!(self.len() + n <= self.capacity);
        if self.file.is_none()
            && self.capacity > self.memory_limit as u64
            && self.end + n > self.memory_limit as u64
        {
            // Below `memory_limit`, nothing has wrapped yet: memory holds [0, end) as it is.
            let file = tempfile::tempfile()?;
            file.write_all_at(&self.memory, 0)?;
            self.file = Some(file);
            self.memory = Vec::new();
        }
        let mut at = self.end;
        for part in parts {
            self.write(at, part)?;
            at += part.len() as u64;
        }
        self.end = at;
        Ok(())
    }

    /// Writes `bytes` at position `at` in place (within what is kept, or just past it).
    pub fn write(&mut self, at: u64, mut bytes: &[u8]) -> io::Result<()> {
        let mut at = at;
        while !bytes.is_empty() {
            let offset = at % self.capacity;
            let n = (self.capacity - offset).min(bytes.len() as u64) as usize;
            let (now, rest) = bytes.split_at(n);
            match &self.file {
                Some(file) => file.write_all_at(now, offset)?,
                None => {
                    let offset = offset as usize;
                    if self.memory.len() < offset + n {
                        self.memory.resize(offset + n, 0);
                    }
                    self.memory[offset..offset + n].copy_from_slice(now);
                }
            }
            at += n as u64;
            bytes = rest;
        }
        Ok(())
    }

    /// Lets the earliest `n` bytes go.
    pub fn drop_front(&mut self, n: u64) {
        self.start = (self.start + n).min(self.end);
    }

    /// Reads kept bytes from position `pos` into `buf`; returns how many (0 at the end).
    pub fn read_at(&self, pos: u64, buf: &mut [u8]) -> io::Result<usize> {
        if pos < self.start || pos >= self.end {
            return Ok(0);
        }
        let offset = pos % self.capacity;
        let n = (self.end - pos)
            .min(self.capacity - offset)
            .min(buf.len() as u64) as usize;
        match &self.file {
            Some(file) => file.read_exact_at(&mut buf[..n], offset)?,
            None => {
                let offset = offset as usize;
                buf[..n].copy_from_slice(&self.memory[offset..offset + n]);
            }
        }
        Ok(n)
    }

    /// Lets every byte go, and the file with them.
    pub fn clear(&mut self) {
        *self = Ring::new(self.capacity, self.memory_limit);
    }

    /// Whether the bytes are in a file (else in memory).
    #[cfg(test)]
    pub fn in_file(&self) -> bool {
        self.file.is_some()
    }
}

/// A system call, again while a signal interrupts it.
fn retrying<T>(mut call: impl FnMut() -> nix::Result<T>) -> nix::Result<T> {
    loop {
        match call() {
            Err(Errno::EINTR) => {}
            done => return done,
        }
    }
}

/// Writes up to `n` bytes of `file` from offset `at` into the non-blocking pipe `to`, as much
/// as it takes at once: spliced, without a copy through retry, on Linux.
#[cfg(all(target_os = "linux", not(retry_portable)))]
fn file_to_pipe(file: &File, at: u64, to: BorrowedFd<'_>, n: usize) -> nix::Result<usize> {
    use nix::fcntl::{SpliceFFlags, splice};
    let mut at = i64::try_from(at).map_err(|_| Errno::EFBIG)?;
    splice(
        file,
        Some(&mut at),
        to,
        None,
        n,
        SpliceFFlags::SPLICE_F_NONBLOCK,
    )
}

/// Writes up to `n` bytes of `file` from offset `at` into the non-blocking pipe `to`, as much
/// as it takes at once: read, then written (what the pipe did not take is read again next
/// time, from the file).
#[cfg(not(all(target_os = "linux", not(retry_portable))))]
fn file_to_pipe(file: &File, at: u64, to: BorrowedFd<'_>, n: usize) -> nix::Result<usize> {
    use std::os::unix::fs::FileExt;
    let mut buf = [0u8; 16 * 1024];
    let want = n.min(buf.len());
    let got = retrying(|| {
        file.read_at(&mut buf[..want], at)
            .map_err(|e| e.raw_os_error().map_or(Errno::EIO, Errno::from_raw))
    })?;
    if got == 0 {
        return Ok(0);
    }
    nix::unistd::write(to, &buf[..got])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_past_the_memory_bound_come_back_intact_from_the_file() {
        let data: Vec<u8> = (0..MEMORY_LIMIT * 2 + 12345)
            .map(|i| (i * 7 % 251) as u8)
            .collect();
        let mut spool = Spool::default();
        for chunk in data.chunks(100_000) {
            spool.append(chunk).expect("append");
        }
        assert!(spool.file.is_some(), "spilled to a file");
        assert!(spool.memory.len() <= MEMORY_LIMIT);
        assert_eq!(spool.len(), data.len() as u64);
        let mut back = Vec::new();
        let mut buf = vec![0u8; 70_000];
        loop {
            let n = spool.read_at(back.len() as u64, &mut buf).expect("read");
            if n == 0 {
                break;
            }
            back.extend_from_slice(&buf[..n]);
        }
        assert_eq!(back, data);
        let mut buf = [0u8; 10];
        let n = spool
            .read_at(MEMORY_LIMIT as u64 - 5, &mut buf)
            .expect("read");
        assert_eq!(&buf[..n], &data[MEMORY_LIMIT - 5..MEMORY_LIMIT]);
    }
}
