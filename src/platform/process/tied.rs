//! With `--stop-with-parent` on Linux, an attempt is started by fork and exec instead of
//! posix_spawn, so that its first process can ask the kernel for SIGKILL when retry ends
//! (PR_SET_PDEATHSIG) before it execs: posix_spawn runs nothing of the caller's in the child.
//! The rest is what posix_spawn does for the attempt ([`super::spawn::spawn_attributes`]):
//! a process group of its own, the signal mask retry was started with, SIGPIPE at its
//! default, the standard streams in place, the command searched for on PATH; and the reason
//! it could not be started comes back as posix_spawn's does, an errno, through a pipe that
//! exec closes.

use std::ffi::{CStr, CString, OsStr, c_char};
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;

use nix::errno::Errno;
use nix::libc;
use nix::sys::signal::SigSet;
use nix::unistd::Pid;

use crate::platform::child_fd::ChildFd;

/// What is made once per run: where the command may be, in the order exec tries them.
pub(super) struct Tied {
    candidates: Vec<CString>,
}

impl Tied {
    /// The places `program` is looked for, as posix_spawnp and execvp look: the name itself
    /// when it holds a slash, else each folder of PATH (the C library's default when PATH is
    /// unset; an empty entry is the current folder).
    pub(super) fn new(program: &CStr) -> Tied {
        let name = program.to_bytes();
        let candidates = if name.contains(&b'/') {
            vec![program.to_owned()]
        } else if name.is_empty() {
            Vec::new()
        } else {
            let path = std::env::var_os("PATH");
            let path = path.as_deref().unwrap_or(OsStr::new("/bin:/usr/bin"));
            path.as_bytes()
                .split(|b| *b == b':')
                .filter_map(|dir| {
                    let mut full = dir.to_vec();
                    if !full.is_empty() {
                        full.push(b'/');
                    }
                    full.extend_from_slice(name);
                    CString::new(full).ok()
                })
                .collect()
        };
        Tied { candidates }
    }

    /// Starts the attempt, as `spawn::launch` does; returns once it has exec'd, or with the
    /// reason it could not.
    pub(super) fn launch(
        &self,
        mask: &SigSet,
        argv: &[CString],
        envp: &[CString],
        stdio: [io::Result<ChildFd>; 3],
    ) -> nix::Result<Pid> {
        let (plan, keep) = stdio_plan(stdio)?;
        let argv = null_terminated(argv);
        let envp = null_terminated(envp);
        let paths: Vec<*const c_char> = self.candidates.iter().map(|c| c.as_ptr()).collect();
        let (read, write) = crate::platform::pipe::pipe(false).map_err(errno)?;
        // Above the standard streams, so that putting them in place cannot close it.
        let write = above_stdio(write)?;
        let child = Child {
            paths: &paths,
            argv: argv.as_ptr(),
            envp: envp.as_ptr(),
            plan,
            mask: *mask.as_ref(),
            // SAFETY: getpid has no preconditions and cannot fail.
            retry: unsafe { libc::getpid() },
            report: write.as_raw_fd(),
            top: libc::SIGRTMAX(),
        };
        let forked = fork(&child);
        // The child has its copies (or there is no child): retry's ends are not needed.
        drop(write);
        drop(keep);
        started(forked?, &read)
    }
}

/// What each standard stream of the attempt is to be, and the pipe ends that retry keeps
/// open until the child has its own copies.
fn stdio_plan(stdio: [io::Result<ChildFd>; 3]) -> nix::Result<([Plan; 3], Vec<OwnedFd>)> {
    let mut plan = [Plan::Inherit; 3];
    let mut keep = Vec::new();
    for (slot, fd) in plan.iter_mut().zip(stdio) {
        match fd.map_err(errno)? {
            ChildFd::Inherit => {}
            ChildFd::Null => *slot = Plan::Null,
            ChildFd::Pipe(fd) => {
                *slot = Plan::Dup(fd.as_raw_fd());
                keep.push(fd);
            }
        }
    }
    Ok((plan, keep))
}

/// The pointers of `strings`, then a null pointer, as exec takes an argv or an envp.
fn null_terminated(strings: &[CString]) -> Vec<*const c_char> {
    strings
        .iter()
        .map(|s| s.as_ptr())
        .chain([std::ptr::null()])
        .collect()
}

/// Forks; the child becomes the attempt (`Child::exec`) and never returns. Returns the
/// child's pid, or why the fork failed.
fn fork(child: &Child<'_>) -> nix::Result<Pid> {
    // Every signal is blocked across the fork, so that none of retry's handlers runs in
    // the child before it has put the defaults back; retry's mask is restored at once.
    let mut before = SigSet::empty();
    nix::sys::signal::pthread_sigmask(
        nix::sys::signal::SigmaskHow::SIG_SETMASK,
        Some(&SigSet::all()),
        Some(&mut before),
    )?;
    // SAFETY: the child calls only async-signal-safe functions (`Child::exec`), on data
    // made before the fork, and ends in exec or _exit, so another thread's lock or
    // allocation left half-done in the copy (a name lookup's) is never touched.
    let forked = unsafe { libc::fork() };
    if forked == 0 {
        // SAFETY: see above; this is the child, which never returns.
        unsafe { child.exec() }
    }
    let fork_error = Errno::last();
    let _ = nix::sys::signal::pthread_sigmask(
        nix::sys::signal::SigmaskHow::SIG_SETMASK,
        Some(&before),
        None,
    );
    if forked < 0 {
        return Err(fork_error);
    }
    Ok(Pid::from_raw(forked))
}

/// Whether the child `pid` exec'd, as `read`, the other end of its report pipe, tells: the
/// pid when it did, else the errno it sent, the child reaped.
fn started(pid: Pid, read: &OwnedFd) -> nix::Result<Pid> {
    let mut got = [0u8; 4];
    let mut filled = 0;
    // Nothing comes when exec succeeds (the pipe closes with it); an errno when not.
    while filled < got.len() {
        match nix::unistd::read(read, &mut got[filled..]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(Errno::EINTR) => {}
            Err(_) => break,
        }
    }
    if filled < got.len() {
        return Ok(pid);
    }
    // The child has ended with _exit: reaped here, where its pid is known to be ours.
    loop {
        // SAFETY: waitpid on our own child, without a status pointer.
        let reaped = unsafe { libc::waitpid(pid.as_raw(), std::ptr::null_mut(), 0) };
        if reaped >= 0 || Errno::last() != Errno::EINTR {
            break;
        }
    }
    Err(Errno::from_raw(i32::from_ne_bytes(got)))
}

/// What one standard stream of the attempt is.
#[derive(Clone, Copy)]
enum Plan {
    Inherit,
    Null,
    Dup(libc::c_int),
}

/// Everything the child needs, made before the fork.
struct Child<'a> {
    paths: &'a [*const c_char],
    argv: *const *const c_char,
    envp: *const *const c_char,
    plan: [Plan; 3],
    mask: libc::sigset_t,
    retry: libc::pid_t,
    report: libc::c_int,
    top: libc::c_int,
}

impl Child<'_> {
    /// In the forked child: becomes the attempt, or tells why not and ends.
    ///
    /// # Safety
    /// Only in the child of a fork, with the pointers of `self` valid (they are the parent's,
    /// copied with it).
    unsafe fn exec(&self) -> ! {
        // SAFETY: each call is async-signal-safe and takes plain integers, pointers to the
        // zeroed or prepared structures here, or the null-terminated arrays made before the
        // fork.
        unsafe {
            // retry's handlers would run here until exec: back to the defaults (exec keeps
            // an ignored signal ignored, as posix_spawn does, and SIGPIPE is set back to its
            // default, which Rust programs ignore).
            for sig in 1..=self.top {
                let mut old = std::mem::zeroed::<libc::sigaction>();
                if libc::sigaction(sig, std::ptr::null(), &mut old) == 0
                    && old.sa_sigaction != libc::SIG_IGN
                    && old.sa_sigaction != libc::SIG_DFL
                {
                    let mut default = std::mem::zeroed::<libc::sigaction>();
                    default.sa_sigaction = libc::SIG_DFL;
                    libc::sigaction(sig, &default, std::ptr::null_mut());
                }
            }
            libc::signal(libc::SIGPIPE, libc::SIG_DFL);
            if libc::setpgid(0, 0) != 0 {
                self.fail(Errno::last_raw());
            }
            if libc::prctl(
                libc::PR_SET_PDEATHSIG,
                libc::SIGKILL as libc::c_ulong,
                0,
                0,
                0,
            ) != 0
            {
                self.fail(Errno::last_raw());
            }
            // retry ended before the kernel was asked: nothing would come.
            if libc::getppid() != self.retry {
                libc::_exit(127);
            }
            for (target, plan) in (0..).zip(self.plan) {
                let placed = match plan {
                    Plan::Inherit => 0,
                    // dup2 onto itself leaves close-on-exec set: cleared instead, as
                    // posix_spawn's dup2 action does.
                    Plan::Dup(fd) if fd == target => libc::fcntl(fd, libc::F_SETFD, 0),
                    Plan::Dup(fd) => libc::dup2(fd, target),
                    Plan::Null => {
                        let fd = libc::open(c"/dev/null".as_ptr(), libc::O_RDWR);
                        if fd >= 0 && fd != target {
                            let placed = libc::dup2(fd, target);
                            libc::close(fd);
                            placed
                        } else {
                            fd
                        }
                    }
                };
                if placed < 0 {
                    self.fail(Errno::last_raw());
                }
            }
            libc::sigprocmask(libc::SIG_SETMASK, &self.mask, std::ptr::null_mut());
            // As execvp: a place that does not hold the command is passed over, one that
            // refuses it is remembered, any other error ends the search.
            let mut why = libc::ENOENT;
            let mut denied = false;
            for path in self.paths {
                libc::execve(*path, self.argv, self.envp);
                match Errno::last_raw() {
                    libc::EACCES => denied = true,
                    libc::ENOENT
                    | libc::ENOTDIR
                    | libc::ESTALE
                    | libc::ENODEV
                    | libc::ETIMEDOUT => {}
                    other => {
                        why = other;
                        break;
                    }
                }
            }
            if why == libc::ENOENT && denied {
                why = libc::EACCES;
            }
            self.fail(why)
        }
    }

    /// Tells retry why the attempt could not start, and ends.
    ///
    /// # Safety
    /// As [`Child::exec`].
    unsafe fn fail(&self, errno: libc::c_int) -> ! {
        let bytes = errno.to_ne_bytes();
        // SAFETY: write and _exit are async-signal-safe; the buffer is on this stack.
        unsafe {
            libc::write(self.report, bytes.as_ptr().cast(), bytes.len());
            libc::_exit(127)
        }
    }
}

/// `fd`, moved above the standard streams if it is one of them (retry started with one
/// closed), still closed on exec.
fn above_stdio(fd: OwnedFd) -> nix::Result<OwnedFd> {
    if fd.as_raw_fd() > 2 {
        return Ok(fd);
    }
    let moved = nix::fcntl::fcntl(&fd, nix::fcntl::FcntlArg::F_DUPFD_CLOEXEC(3))?;
    // SAFETY: fcntl returned a new descriptor, which nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(moved) })
}

fn errno(e: io::Error) -> Errno {
    e.raw_os_error().map_or(Errno::EIO, Errno::from_raw)
}
