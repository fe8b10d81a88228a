//! One wait of the attempt loop, in its steps: what is known without waiting, the one
//! `ppoll` over every descriptor that can wake it (or, while the signals are blocked for an
//! attempt that is all it waits for, one `sigtimedwait`), and what retry does for the
//! descriptors that woke it (stdin replayed, output passed on).

use std::os::fd::AsFd;
use std::time::Duration;

use nix::poll::{PollFd, PollFlags};
use nix::sys::signal::Signal;

use super::Process;
use crate::platform::child_fd;
use crate::platform::stdin::Need;
use crate::platform::watcher::Watcher;
use crate::platform::world::Event;

/// What one `ppoll` saw, copied out of its descriptors so that retry can act on it once they
/// are let go.
pub(super) struct Polled {
    /// The replay's need the wait was for.
    pub(super) need: Need,
    /// A signal cut the wait short.
    pub(super) interrupted: bool,
    /// The self-pipe woke it (or a signal cut it short).
    pub(super) woken: bool,
    /// The replay's descriptor (the attempt's pipe, or retry's stdin) is ready.
    pub(super) io: bool,
    /// One of the attempt's output streams is ready.
    pub(super) output: bool,
}

/// What a wait's descriptors are, in the order they sit in its array: the self-pipe first,
/// then the replay's, then these.
struct Slots {
    /// The first of the output streams'.
    output_at: usize,
    /// The watcher's, after the output streams'.
    watcher_at: usize,
    /// The process descriptor's, and after it retry's own stdout and stderr still watched.
    exit_at: usize,
    /// How many there are.
    n: usize,
}

impl Process {
    /// The event known without waiting, if any: a signal, a Ctrl-C the watcher saw, or the
    /// attempt's end.
    pub(super) fn ready(&mut self) -> Option<Event> {
        loop {
            // The self-pipe only wakes ppoll: it is emptied after each wake, not before each
            // look, so that a wait that need not block makes no system call for it. A byte
            // left from before makes one spurious turn, never a lost wake-up, because every
            // handler raises its count before it writes.
            if let Some(signal) = self.signals.take() {
                if signal == Signal::SIGTSTP as i32 {
                    return Some(Event::Suspend);
                }
                return Some(Event::Signal(signal));
            }
            let typed = self.watcher.as_mut().and_then(Watcher::typed);
            if let Some(signal) = self.typed.take().or(typed) {
                self.signals.cancelled_at_the_terminal();
                // The Ctrl-C reached the attempt's group alone; the script, make or npm whose
                // job retry is in would have had it too.
                if self.terminal.as_ref().is_some_and(|t| !t.leads())
                    && let Ok(signal) = Signal::try_from(signal)
                {
                    crate::platform::signals::to_the_rest_of_the_group(signal);
                }
                return Some(Event::Typed(signal));
            }
            if let Some(status) = self.exited.take() {
                return Some(Event::Exited(status));
            }
            self.reap_orphans();
            // With a process descriptor, the child is waited for once it is readable: no
            // wait4 finds nothing first.
            // While the signals are blocked for the attempt, SIGCHLD tells.
            let ended = (self.exit_fd.is_none() && !self.end_blocked())
                || self.exit_ready
                || self.child_end.is_some();
            let status = ended.then(|| self.reap()).flatten()?;
            if self.typed.is_some() {
                // What the watcher saw comes first: the attempt ended after it.
                self.exited = Some(status);
                continue;
            }
            if let Some(signal) = self.terminal_cancel(status) {
                self.signals.cancelled_at_the_terminal();
                self.exited = Some(status);
                return Some(Event::Interrupted(signal));
            }
            return Some(Event::Exited(status));
        }
    }

    /// Whether the attempt's end is told by SIGCHLD, blocked for it ([`Signals::block`]).
    ///
    /// [`Signals::block`]: crate::platform::signals::Signals::block
    fn end_blocked(&self) -> bool {
        #[cfg(all(target_os = "linux", not(retry_portable)))]
        return self.signals.blocked();
        #[cfg(not(all(target_os = "linux", not(retry_portable))))]
        false
    }

    /// Waits at most `timeout` in one `ppoll` for the self-pipe, the replay's descriptor, the
    /// attempt's output, the watcher and the attempt's end, and says what it saw; while the
    /// signals are blocked for the attempt, in one `sigtimedwait` for them and SIGCHLD.
    pub(super) fn poll(&mut self, timeout: Option<Duration>) -> Polled {
        #[cfg(all(target_os = "linux", not(retry_portable)))]
        if self.signals.blocked() {
            use crate::platform::signals::Waited;
            let waited = self.signals.wait_blocked(timeout);
            self.exit_ready = waited == Waited::Child;
            return Polled {
                need: Need::Nothing,
                interrupted: waited == Waited::Interrupted,
                woken: false,
                io: false,
                output: false,
            };
        }
        let stdin = child_fd::stdin();
        let (need, pipe) = match self.input.replay() {
            Some(replay) => replay.need(),
            None => (Need::Nothing, None),
        };
        let timeout = match need {
            Need::Drain(after) => Some(timeout.map_or(after, |t| t.min(after))),
            _ => timeout,
        };
        // At most eight: a fixed array, not an allocation at every wait.
        let wake = PollFd::new(self.signals.fd(), PollFlags::POLLIN);
        let mut fds: [PollFd; 8] = std::array::from_fn(|_| wake.clone());
        let mut n = 1;
        match (need, pipe) {
            (Need::Room, Some(pipe)) => {
                fds[n] = PollFd::new(pipe, PollFlags::POLLOUT);
                n += 1;
            }
            (Need::Input, _) => {
                fds[n] = PollFd::new(stdin, PollFlags::POLLIN);
                n += 1;
            }
            _ => {}
        }
        let output_at = n;
        // Each stream waits either for the attempt's output or, while what it read waits
        // to be passed on, for room downstream.
        for stream in [&self.stdout, &self.stderr] {
            if let Some(fd) = stream.fd() {
                fds[n] = PollFd::new(fd, PollFlags::POLLIN);
                n += 1;
            } else if let Some(fd) = stream.out_fd() {
                fds[n] = PollFd::new(fd, PollFlags::POLLOUT);
                n += 1;
            }
        }
        let watcher_at = n;
        if let Some(watcher) = &self.watcher {
            fds[n] = PollFd::new(watcher.fd(), PollFlags::POLLIN);
            n += 1;
        }
        let exit_at = n;
        // Beside the attempt's end, retry's own stdout and stderr, asked for no event: a
        // pipe whose reader went away reports POLLERR all the same, so the wait that
        // learns of the end learns with it whether anybody still reads the output, and
        // judging a failed attempt needs no poll of its own.
        if let Some(exit) = &self.exit_fd {
            fds[n] = PollFd::new(exit.as_fd(), PollFlags::POLLIN);
            n += 1;
            for (watched, fd) in self
                .output_watched
                .iter()
                .zip([child_fd::stdout(), child_fd::stderr()])
            {
                if *watched {
                    fds[n] = PollFd::new(fd, PollFlags::empty());
                    n += 1;
                }
            }
        }
        let slots = Slots {
            output_at,
            watcher_at,
            exit_at,
            n,
        };
        // EINTR is a signal arriving, which the next turn of the loop picks up.
        let interrupted = crate::platform::pipe::wait(&mut fds[..n], timeout).is_err();
        let (polled, exit, own) = seen(&fds, &slots, need, interrupted);
        if !interrupted && self.exit_fd.is_some() {
            self.note_end(exit, own);
        }
        polled
    }

    /// Notes what the process descriptor (`exit`: readable) and retry's own stdout and
    /// stderr still watched (`own`, in that order) reported.
    fn note_end(&mut self, exit: bool, own: [PollFlags; 2]) {
        self.exit_ready = exit;
        let mut gone = self.output_gone_at_end.unwrap_or(false);
        let mut dropped = false;
        for (seen, watched) in own
            .iter()
            .zip(self.output_watched.iter_mut().filter(|w| **w))
        {
            // A descriptor that reported anything is watched no more, or every wait
            // would return at once; POLLERR on a pipe stays.
            if !seen.is_empty() {
                *watched = false;
                gone |= seen.contains(PollFlags::POLLERR);
                dropped |= !seen.contains(PollFlags::POLLERR);
            }
        }
        // What a descriptor no longer watched would say now is not known: asked
        // again when needed.
        self.output_gone_at_end = match (self.exit_ready, gone, dropped) {
            (_, true, _) => Some(true),
            (true, false, false) if self.output_watched == self.output_can_go => Some(false),
            _ => None,
        };
    }

    /// Serves the descriptors a wait found ready: stdin replayed into the attempt, and its
    /// output passed on.
    pub(super) fn serve(&mut self, polled: &Polled) {
        if polled.io
            && let Some(replay) = self.input.replay()
        {
            match polled.need {
                Need::Room => replay.on_room(),
                Need::Input => replay.on_input(),
                Need::Nothing | Need::Drain(_) => {}
            }
        }
        if let Need::Drain(_) = polled.need
            && let Some(replay) = self.input.replay()
        {
            replay.on_drain();
        }
        if polled.output {
            // Each stream passes on what it can and reads until its pipe is empty, so
            // looking at both costs nothing.
            self.stdout.on_room(&self.rules);
            self.stderr.on_room(&self.rules);
        }
    }
}

/// What the descriptors in `fds` reported after a `ppoll`: the wait's figures, whether the
/// process descriptor is readable, and what retry's own stdout and stderr still watched
/// reported, in that order.
fn seen(
    fds: &[PollFd; 8],
    slots: &Slots,
    need: Need,
    interrupted: bool,
) -> (Polled, bool, [PollFlags; 2]) {
    let fds = &fds[..slots.n];
    let revents = |fd: &PollFd| fd.revents().unwrap_or(PollFlags::empty());
    let ready = |fd: &PollFd| !revents(fd).is_empty();
    let at = |i: usize| fds.get(i).map(revents).unwrap_or(PollFlags::empty());
    let polled = Polled {
        need,
        interrupted,
        // Emptied only when it woke the wait (or a signal cut it short): a wait that the
        // attempt's end or its output ended makes no read that finds nothing.
        woken: interrupted || fds.first().is_some_and(ready),
        io: fds
            .get(1)
            .is_some_and(|fd| ready(fd) && slots.output_at > 1),
        output: fds[slots.output_at..slots.watcher_at].iter().any(ready),
    };
    let exit = fds.get(slots.exit_at).is_some_and(ready);
    (polled, exit, [at(slots.exit_at + 1), at(slots.exit_at + 2)])
}
