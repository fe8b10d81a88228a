//! `retry` runs a command again and again, with backoff and jitter, until it succeeds, fails in
//! a way that will not get better, or a limit is reached.
//!
//! The pipeline: [`cli`] parses, [`policy`] validates, [`attempt`] runs the loop over a
//! [`attempt::World`] ([`process`] for real), and [`exit`] ends the process as the last attempt
//! did.

pub mod attempt;
pub mod backoff;
pub mod cli;
pub mod codes;
pub mod config;
pub mod exit;
pub mod explain;
pub mod hints;
pub mod hooks;
pub mod log;
pub mod outcome;
pub mod output;
pub mod policy;
pub mod presets;
pub mod process;
pub mod signals;
pub mod spool;
pub mod status;
pub mod stdin;
pub mod summary;
pub mod terminal;
pub mod watch;

use std::ffi::OsString;
use std::io::Write;
use std::time::Instant;

use clap::{FromArgMatches, Parser};
use rand::SeedableRng;
use rand::rngs::StdRng;

use crate::cli::Cli;
use crate::exit::Exit;
use crate::log::Log;
use crate::policy::Policy;

/// Prints a command-line error; --help and --version are not errors.
fn clap_error(e: clap::Error) -> Exit {
    let _ = e.print();
    if e.use_stderr() {
        Exit::FAILURE
    } else {
        Exit::Code(0)
    }
}

/// Runs retry with these arguments (the first is the program name) and returns how to exit.
pub fn run<I, T>(args: I) -> Exit
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    let start = Instant::now();
    let args: Vec<OsString> = args.into_iter().map(Into::into).collect();
    let parsed = cli::command()
        .try_get_matches_from(&args)
        .map_err(clap_error)
        .and_then(|matches| match config::resolve(args, &matches) {
            Ok(None) => {
                let cli = Cli::from_arg_matches(&matches).map_err(clap_error)?;
                // Where each value came from matters only to --explain.
                let origins = if cli.explain {
                    config::given(&matches)
                } else {
                    Default::default()
                };
                Ok((cli, origins))
            }
            Ok(Some(resolved)) => {
                let cli = Cli::try_parse_from(&resolved.args).map_err(clap_error)?;
                Ok((cli, resolved.origins))
            }
            Err(e) => {
                eprintln!("retry: error: {e}");
                Err(Exit::FAILURE)
            }
        });
    let (cli, origins) = match parsed {
        Ok(parsed) => parsed,
        Err(exit) => return exit,
    };
    let explain = cli.explain;
    let policy = match Policy::try_from(cli) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("retry: error: {e}");
            return Exit::FAILURE;
        }
    };
    if explain {
        let mut stdout = std::io::stdout().lock();
        return match stdout.write_all(explain::explain(&policy, &origins).as_bytes()) {
            Ok(()) => Exit::Code(0),
            Err(_) => Exit::FAILURE,
        };
    }
    let mut log = match Log::open(&policy.log) {
        Ok(log) => log,
        Err(e) => {
            let path = policy
                .log
                .file
                .as_deref()
                .unwrap_or(std::path::Path::new(""))
                .display();
            eprintln!("retry: error: cannot open --log-file '{path}': {e}");
            return Exit::FAILURE;
        }
    };
    let signals = match signals::Signals::install() {
        Ok(s) => s,
        Err(e) => {
            eprintln!("retry: error: cannot install signal handlers: {e}");
            return Exit::FAILURE;
        }
    };
    let mut rng = match policy.seed {
        Some(seed) => StdRng::seed_from_u64(seed),
        None => rand::make_rng(),
    };
    let mut world = match process::Process::new(&policy, signals, start) {
        Ok(world) => world,
        Err(e) => {
            eprintln!("retry: error: cannot prepare the command: {e}");
            return Exit::FAILURE;
        }
    };
    let mut summary = summary::Summary::new(&policy.name);
    let exit = attempt::run(&policy, &mut world, &mut rng, &mut log, &mut summary);
    // A report that cannot be written is logged; the run's outcome stands.
    let reports = [
        (
            &policy.summary,
            "--summary",
            summary::Summary::write_json as fn(&_, &_) -> _,
        ),
        (
            &policy.metrics,
            "--metrics",
            summary::Summary::write_metrics,
        ),
    ];
    for (path, flag, write) in reports {
        if let Some(path) = path
            && let Err(e) = write(&summary, path)
        {
            eprintln!("retry: cannot write {flag} file '{}': {e}", path.display());
        }
    }
    exit
}
