//! `retry` runs a command again and again, with backoff and jitter, until it succeeds, fails in
//! a way that will not get better, or a limit is reached.
//!
//! The data flows one way: [`setup`] turns the command line (and config files) into a
//! [`policy::Policy`]; [`run`] runs the attempts it allows; [`report`] tells what happened; and
//! [`exit`] ends the process as the last attempt did. See ARCHITECTURE.md.

pub mod exit;
pub mod policy;
pub mod report;
pub mod run;
pub mod setup;

use std::ffi::OsString;
use std::io::Write;
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
    if setup.explain {
        let text = report::explain::explain(&setup.policy, &setup.origins);
        return match std::io::stdout().lock().write_all(text.as_bytes()) {
            Ok(()) => Exit::Code(0),
            Err(_) => Exit::FAILURE,
        };
    }
    run::run(&setup.policy, start)
}
