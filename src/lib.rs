//! `retry` runs a command again and again, with backoff and jitter, until it succeeds, fails in
//! a way that will not get better, or a limit is reached.
//!
//! The data flows one way: [`setup`] turns the command line (and config files) into a
//! [`policy::Policy`]; [`run`] runs the attempts it allows; [`report`] tells what happened; and
//! [`exit`] ends the process as the last attempt did. See ARCHITECTURE.md.

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

/// Runs retry with these arguments (the first is the program name) and returns how to exit.
pub fn run<I, T>(args: I) -> Exit
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    let start = Instant::now();
    let setup = match setup::parse(args.into_iter().map(Into::into).collect()) {
        Ok(setup) => setup,
        Err(exit) => return exit,
    };
    let policy = &setup.policy;
    if setup.reset_state {
        return reset_state(policy);
    }
    if let Some(place) = &policy.list_keys {
        return list_keys(policy, place);
    }
    if let (true, Some(fleet)) = (setup.explain, setup.fleet) {
        let text = match sim::explain::fleet(policy, fleet) {
            Ok(text) => text,
            Err(why) => {
                eprintln!("retry: error: {}", quote::clean(&why));
                return Exit::FAILURE;
            }
        };
        return report::to_stdout(text.as_bytes());
    }
    if setup.explain {
        // The key's state, read without changing it.
        let key = policy.state.as_ref().map(|settings| {
            let mut shared = state::open(settings);
            let view = shared.view().map_err(|e| e.to_string());
            report::explain::KeyReport {
                place: shared.describe(),
                view,
                now: shared.now(),
                note: shared.warning.take(),
            }
        });
        let text = report::explain::explain(policy, &setup.origins, key.as_ref());
        return report::to_stdout(text.as_bytes());
    }
    run::run(policy, start)
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
