//! Running the attempts: the loop over a [`World`](attempt::World), and the real world it
//! runs in (process groups, signals, stdin replay, output, the terminal, hooks).

pub mod attempt;
#[cfg(test)]
mod attempt_tests;
#[cfg(test)]
mod fake;
mod gate;
mod jitter_rng;
#[cfg(test)]
mod keyed_tests;
mod supervise;

use std::time::Instant;

use crate::exit::Exit;
use crate::platform::files::Refusal;
use crate::platform::{process, signals, transcript};
use crate::policy::Policy;
use crate::report::log::{Entry, Event, Log};
use crate::report::summary::Summary;

/// Runs the command as the policy says, from `start` (when retry began), and writes the
/// reports the policy asks for.
pub fn run(policy: &Policy, start: Instant) -> Exit {
    // --output-on-failure: the output and the log are held, and printed if the run fails.
    let transcript = policy
        .output_on_failure
        .then(transcript::Transcript::default);
    let opened = match (&transcript, &policy.log.file) {
        (Some(held), None) => Ok(Log::to(&policy.log, held.log())),
        // What is printed on failure carries retry's lines, also when the log is a file.
        (Some(held), Some(_)) => Log::open(&policy.log).map(|log| log.with_copy_to(held.log())),
        _ => Log::open(&policy.log),
    };
    let mut log = match opened {
        Ok(log) => log,
        Err(e) => {
            // A log that cannot be opened must not stop the job (a cron job most of all), as
            // a --summary or --metrics file that cannot be written does not: the log goes to
            // stderr, which cron mails, and says why once.
            let path = crate::quote::quoted(
                policy
                    .log
                    .file
                    .as_deref()
                    .unwrap_or(std::path::Path::new("")),
            );
            eprintln!(
                "retry: warning: cannot open --log-file {path}: {e}; logging to stderr instead"
            );
            let to_stderr = crate::policy::LogSettings {
                file: None,
                ..policy.log.clone()
            };
            match Log::open(&to_stderr) {
                Ok(log) => log,
                Err(_) => return Exit::FAILURE,
            }
        }
    };
    let signals = match signals::Signals::install() {
        Ok(s) => s,
        Err(e) => {
            eprintln!("retry: error: cannot install signal handlers: {e}");
            return Exit::FAILURE;
        }
    };
    if policy.stop_with_parent
        && let Err(e) = crate::platform::parent::watch()
    {
        eprintln!("retry: error: --stop-with-parent: cannot watch retry's parent: {e}");
        return Exit::FAILURE;
    }
    let mut rng = jitter_rng::JitterRng::new(policy.seed);
    let mut world = match process::Process::new(policy, signals, start, transcript.as_ref()) {
        Ok(world) => world,
        Err(e) => {
            eprintln!("retry: error: cannot prepare the command: {e}");
            return Exit::FAILURE;
        }
    };
    let mut summary = Summary::new(&policy.name);
    // The store's calls end with the run's --max-time, if not before: the gate tells it.
    let shared = policy.state.as_ref().map(crate::state::open);
    let exit = attempt::Attempts::new(policy, &mut world, &mut rng, &mut log, &mut summary)
        .with_state(shared)
        .run();
    // A report that cannot be written is logged, as the give-up line is (under -q too, not
    // under -qq, and in the --log-file); the run's outcome stands.
    let reports = [
        (
            &policy.summary,
            "--summary",
            Summary::write_json as fn(&_, &_) -> _,
        ),
        (&policy.metrics, "--metrics", Summary::write_metrics),
    ];
    for (path, flag, write) in reports {
        if let Some(path) = path
            && let Err(e) = write(&summary, path)
        {
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
    // A give-up never exits 0: a run that exits 0 succeeded, and prints nothing.
    if let Some(held) = transcript
        && exit != Exit::Code(0)
    {
        held.print();
    }
    exit
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
