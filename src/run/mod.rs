//! Running the attempts: the loop over a [`World`](attempt::World), and the real world it
//! runs in (process groups, signals, stdin replay, output, the terminal, hooks).

pub mod attempt;
#[cfg(test)]
mod attempt_tests;
#[cfg(test)]
mod fake;
mod gate;
#[cfg(test)]
mod keyed_tests;
mod supervise;

use std::time::Instant;

use crate::exit::Exit;
use crate::platform::files::Refusal;
use crate::platform::{process, signals, transcript};
use crate::policy::Policy;
use crate::report::Error;
use crate::report::log::{Entry, Event, Log};
use crate::report::summary::Summary;

/// Runs the command as the policy says, from `start` (when retry began), and writes the
/// reports the policy asks for; or says why it cannot run it.
pub fn run(policy: &Policy, start: Instant) -> Result<Exit, Error> {
    // --output-on-failure: the output and the log are held, and printed if the run fails.
    let transcript = policy
        .output_on_failure
        .then(transcript::Transcript::default);
    // A log line waits for room on a stderr nobody reads no longer than the run may last.
    if let Some(at) = policy.max_time.and_then(|max| start.checked_add(max)) {
        crate::platform::stderr::deadline(at);
    }
    let mut log = open_log(policy, transcript.as_ref())?;
    let own = |doing| move |cause| Error::Own { doing, cause };
    let signals = signals::Signals::install().map_err(own("cannot install signal handlers"))?;
    if policy.stop_with_parent {
        crate::platform::parent::watch()
            .map_err(own("--stop-with-parent: cannot watch retry's parent"))?;
    }
    let mut rng = crate::policy::backoff::jitter_rng(policy.seed);
    let mut world = process::Process::new(policy, signals, start, transcript.as_ref())
        .map_err(own("cannot prepare the command"))?;
    let mut summary = Summary::new(&policy.name);
    // The store's calls end with the run's --max-time, if not before: the gate tells it.
    let shared = policy.state.as_ref().map(crate::state::open);
    let exit = attempt::Attempts::new(policy, &mut world, &mut rng, &mut log, &mut summary)
        .with_state(shared)
        .run();
    write_reports(policy, &summary, &mut log, start);
    // A give-up never exits 0: a run that exits 0 succeeded, and prints nothing.
    if let Some(held) = transcript
        && exit != Exit::Code(0)
    {
        held.print();
    }
    Ok(exit)
}

/// The run's log: where the policy says, with a copy held for `--output-on-failure`.
fn open_log(policy: &Policy, transcript: Option<&transcript::Transcript>) -> Result<Log, Error> {
    let opened = match (transcript, &policy.log.file) {
        (Some(held), None) => Ok(Log::held(&policy.log, held.log())),
        // What is printed on failure carries retry's lines, also when the log is a file.
        (Some(held), Some(_)) => Log::open(&policy.log).map(|log| log.with_copy_to(held.log())),
        _ => Log::open(&policy.log),
    };
    let e = match opened {
        Ok(log) => return Ok(log),
        Err(e) => e,
    };
    // A log that cannot be opened must not stop the job (a cron job most of all), as a
    // --summary or --metrics file that cannot be written does not: the log goes to stderr,
    // which cron mails, and says why once.
    let path = crate::quote::quoted(
        policy
            .log
            .file
            .as_deref()
            .unwrap_or(std::path::Path::new("")),
    );
    eprintln!("retry: warning: cannot open --log-file {path}: {e}; logging to stderr instead");
    let to_stderr = crate::policy::LogSettings {
        file: None,
        ..policy.log.clone()
    };
    Log::open(&to_stderr).map_err(|cause| Error::Own {
        doing: "cannot log to stderr",
        cause,
    })
}

/// Writes `--summary` and `--metrics`. A report that cannot be written is logged, as the
/// give-up line is (under -q too, not under -qq, and in the --log-file); the run's outcome
/// stands.
fn write_reports(policy: &Policy, summary: &Summary, log: &mut Log, start: Instant) {
    let reports = [
        (
            &policy.summary,
            "--summary",
            Summary::write_json as fn(&_, &_, _) -> _,
        ),
        (&policy.metrics, "--metrics", Summary::write_metrics),
    ];
    // A lock on a report is something the run waits on: --max-time bounds it too.
    let left = policy
        .max_time
        .map(|max| max.saturating_sub(start.elapsed()));
    let lock_wait = crate::report::summary::lock_wait(left);
    for (path, flag, write) in reports {
        let Some(path) = path else { continue };
        let Err(e) = write(summary, path, lock_wait) else {
            continue;
        };
        let mut entry = Entry::new(
            Event::Report,
            u32::try_from(summary.attempt_count).unwrap_or(u32::MAX),
            policy.attempts,
            start.elapsed(),
        );
        // A stream (/dev/stderr) has no folder to blame; retry's own words (a FIFO that no
        // process reads, a lock held too long) say what to look at themselves.
        let (cause, check) = match cause(&e) {
            Cause::Own(words) => (words, ""),
            // Its folder is fine: the file would outgrow what retry may write.
            Cause::System(words) if e.kind() == std::io::ErrorKind::FileTooLarge => {
                (words, "; retry runs under a file size limit (ulimit -f)")
            }
            // Its folder is fine: there is no room (a full disk, /dev/full).
            Cause::System(words) if e.raw_os_error() == Some(nix::libc::ENOSPC) => {
                (words, "; the device it is on is full")
            }
            Cause::System(words) if crate::platform::files::descriptor(path).is_some() => {
                (words, "; check that it is open for writing")
            }
            Cause::System(words) => (words, "; check that its folder exists and is writable"),
        };
        entry.reason = Some(format!(
            "cannot write the {flag} file ({cause}): {}{check} (retry's exit status is the \
             command's all the same)",
            crate::quote::shown(path)
        ));
        log.write(&entry);
    }
}

/// What went wrong in writing a report.
enum Cause {
    /// The system's words: an operating-system error, or an error's kind.
    System(String),
    /// retry's own words for what is wrong with the file itself ([`Refusal`]).
    Own(String),
}

/// What went wrong: retry's own words ([`Refusal`]), else the system's (`No such file or
/// directory (os error 2)`, or the error's kind where it has no code).
fn cause(e: &std::io::Error) -> Cause {
    match e
        .get_ref()
        .and_then(|inner| inner.downcast_ref::<Refusal>())
    {
        Some(own) => Cause::Own(own.to_string()),
        None => Cause::System(e.to_string()),
    }
}
