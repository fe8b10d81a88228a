//! `retry` runs a command again and again, with backoff and jitter, until it succeeds, fails in
//! a way that will not get better, or a limit is reached.
//!
//! This crate is the `retry` program's implementation, not a library: it has no API to rely
//! on beyond [`run`], and any release may change the rest.
//!
//! The data flows one way: [`setup`] turns the command line (and config files) into a
//! [`setup::Mode`], what retry is asked to do, most often to run a [`policy::Policy`]; [`run`]
//! runs the attempts it allows; [`report`] tells what happened; and [`exit`] ends the process
//! as the last attempt did. See ARCHITECTURE.md.

// retry is a program, not a library: the crate's one API is [`run`] (and the [`Exit`] it
// returns), which `main.rs` calls. The modules the integration tests and the benches reach
// into (the policy's types, the presets and generated files, the stores, the simulator) are
// public but hidden from the documentation, and no promise: they change with the program.
// The rest is private to the crate, so that the compiler finds what nothing uses.
mod env;
mod exit;
mod platform;
#[doc(hidden)]
pub mod policy;
mod quote;
mod report;
mod run;
mod secrets;
#[doc(hidden)]
pub mod setup;
#[doc(hidden)]
pub mod sim;
#[doc(hidden)]
pub mod state;

pub use crate::exit::Exit;
use std::ffi::OsString;
use std::time::Instant;

use crate::report::Error;
use crate::setup::Mode;

/// Runs retry with these arguments (the first is the program name) and returns how to exit.
pub fn run<I, T>(args: I) -> Exit
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    let start = Instant::now();
    // Before anything else: what std's runtime start does, which retry's entry point leaves
    // out (src/main.rs).
    platform::start::as_std_would();
    // Before anything is written: a file that reaches a size limit is a write error to
    // handle, not a death by SIGXFSZ.
    platform::signals::ignore_file_size_limit();
    // Before anything that takes time: a parent that ends after this is seen to end
    // (`--stop-with-parent`).
    platform::parent::remember();
    // The one place an error is said: every `retry: error: …` is printed here.
    match dispatch(args.into_iter().map(Into::into).collect(), start) {
        Ok(exit) => exit,
        Err(e) => report::error::say(&e),
    }
}

/// Does what the arguments ask for, from `start` (when retry began).
fn dispatch(args: Vec<OsString>, start: Instant) -> Result<Exit, Error> {
    match setup::parse(args)? {
        Mode::Run(policy) => run::run(&policy, start),
        Mode::Explain { policy, origins } => explain(&policy, &origins),
        Mode::ExplainFleet { policy, fleet } => {
            report::to_stdout(sim::explain::fleet(&policy, fleet)?.as_bytes())
        }
        Mode::ListKeys { policy, place } => list_keys(&policy, &place),
        Mode::ResetState(policy) => reset_state(&policy),
        Mode::Generate(kind) => report::to_stdout(&setup::generate::render(kind)),
        Mode::Help(page) => report::help(&page),
    }
}

/// `--explain`: the policy, where each value came from, and the key's state, read without
/// changing it.
fn explain(policy: &policy::Policy, origins: &policy::Origins) -> Result<Exit, Error> {
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
fn list_keys(policy: &policy::Policy, place: &policy::KeySettings) -> Result<Exit, Error> {
    not_run(policy, "--list-keys");
    let listing = state::list::list(place).map_err(|e| Error::Store {
        doing: "cannot list the keys".into(),
        cause: Box::new(e),
    })?;
    let text = match policy.log.format {
        policy::LogFormat::Json => report::keys::json(&listing),
        policy::LogFormat::Text => report::keys::text(&listing),
    };
    report::to_stdout(text.as_bytes())
}

/// `--reset-state`: forgets the key's breaker and budget.
fn reset_state(policy: &policy::Policy) -> Result<Exit, Error> {
    let Some(settings) = &policy.state else {
        // setup makes this mode only of a policy with a key.
        return Ok(Exit::FAILURE);
    };
    not_run(policy, "--reset-state");
    let key = quote::quoted(&settings.key);
    match state::open(settings).forget() {
        Ok(state::Forgot::State) => eprintln!("retry: forgot the state of key {key}"),
        Ok(state::Forgot::Nothing) => {
            eprintln!("retry: there was no state for key {key}: nothing to forget");
        }
        Err(e) => {
            return Err(Error::Store {
                doing: format!("cannot forget key {key}"),
                cause: Box::new(e),
            });
        }
    }
    Ok(Exit::Code(0))
}
