//! `retry` runs a command again and again, with backoff and jitter, until it succeeds, fails in
//! a way that will not get better, or a limit is reached.
//!
//! The data flows one way: [`setup`] turns the command line (and config files) into a
//! [`setup::Mode`], what retry is asked to do, most often to run a [`policy::Policy`]; [`run`]
//! runs the attempts it allows; [`report`] tells what happened; and [`exit`] ends the process
//! as the last attempt did. See ARCHITECTURE.md.

pub mod env;
pub mod exit;
pub mod platform;
pub mod policy;
pub mod quote;
pub mod report;
pub mod run;
pub mod setup;
pub mod sim;
pub mod state;

use std::ffi::OsString;
use std::time::Instant;

use crate::exit::Exit;
use crate::setup::Mode;

/// Runs retry with these arguments (the first is the program name) and returns how to exit.
pub fn run<I, T>(args: I) -> Exit
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    let start = Instant::now();
    // Before anything is written: a file that reaches a size limit is a write error to
    // handle, not a death by SIGXFSZ.
    platform::signals::ignore_file_size_limit();
    // Before anything that takes time: a parent that ends after this is seen to end
    // (`--stop-with-parent`).
    platform::parent::remember();
    let mode = match setup::parse(args.into_iter().map(Into::into).collect()) {
        Ok(mode) => mode,
        Err(exit) => return exit,
    };
    match mode {
        Mode::Run(policy) => run::run(&policy, start),
        Mode::Explain { policy, origins } => explain(&policy, &origins),
        Mode::ExplainFleet { policy, fleet } => match sim::explain::fleet(&policy, fleet) {
            Ok(text) => report::to_stdout(text.as_bytes()),
            Err(why) => {
                eprintln!("retry: error: {}", quote::clean(&why));
                Exit::FAILURE
            }
        },
        Mode::ListKeys { policy, place } => list_keys(&policy, &place),
        Mode::ResetState(policy) => reset_state(&policy),
        Mode::Generate(kind) => report::to_stdout(&setup::generate::render(kind)),
    }
}

/// `--explain`: the policy, where each value came from, and the key's state, read without
/// changing it.
fn explain(policy: &policy::Policy, origins: &policy::Origins) -> Exit {
    let key = policy.state.as_ref().map(|settings| {
        let mut shared = state::open(settings);
        let view = shared.view().map_err(|e| e.to_string());
        let mut note = shared.warning.take();
        let remembered = shared.remembered().map(|verdict| verdict.left);
        if let Some(problem) = shared.warning.take() {
            note = Some(note.map_or(problem.clone(), |first| format!("{first}; {problem}")));
        }
        report::explain::KeyReport {
            place: shared.describe(),
            view,
            now: shared.now(),
            note,
            remembered,
        }
    });
    let text = report::explain::explain(policy, origins, key.as_ref());
    report::to_stdout(text.as_bytes())
}

/// A flag that runs nothing was given a command: says that it was not run.
fn not_run(policy: &policy::Policy, flag: &str) {
    if !policy.command.is_empty() {
        eprintln!(
            "retry: warning: {flag} runs nothing; the command was not run: {}",
            quote::clean(&policy.command_line())
        );
    }
}

/// `--list-keys`: every key with state, changing nothing.
fn list_keys(policy: &policy::Policy, place: &policy::KeySettings) -> Exit {
    not_run(policy, "--list-keys");
    match state::list::list(place) {
        Ok(listing) => {
            let text = match policy.log.format {
                policy::LogFormat::Json => report::keys::json(&listing),
                policy::LogFormat::Text => report::keys::text(&listing),
            };
            report::to_stdout(text.as_bytes())
        }
        Err(e) => {
            eprintln!(
                "retry: error: cannot list the keys: {}",
                quote::clean(&e.to_string())
            );
            Exit::FAILURE
        }
    }
}

/// `--reset-state`: forgets the key's breaker and budget.
fn reset_state(policy: &policy::Policy) -> Exit {
    let Some(settings) = &policy.state else {
        return Exit::FAILURE;
    };
    not_run(policy, "--reset-state");
    match state::open(settings).forget() {
        Ok(state::Forgot::State) => {
            eprintln!(
                "retry: forgot the state of key {}",
                quote::quoted(&settings.key)
            );
            Exit::Code(0)
        }
        Ok(state::Forgot::Nothing) => {
            eprintln!(
                "retry: there was no state for key {}: nothing to forget",
                quote::quoted(&settings.key)
            );
            Exit::Code(0)
        }
        Err(e) => {
            eprintln!(
                "retry: error: cannot forget key {}: {}",
                quote::quoted(&settings.key),
                quote::clean(&e.to_string())
            );
            Exit::FAILURE
        }
    }
}
