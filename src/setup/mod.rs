//! From the command line to a [`Policy`]: the clap definition, config files and profiles,
//! presets, and the checks of how flags relate.

pub mod cli;
pub mod config;
pub mod presets;
mod usage;
mod validate;

use std::ffi::OsString;

use clap::{FromArgMatches, Parser};

use self::cli::Cli;
use crate::exit::Exit;
use crate::policy::{Origins, Policy};

/// What the command line asks for.
pub struct Setup {
    pub policy: Policy,
    /// Where each setting came from; filled only for `--explain`.
    pub origins: Origins,
    /// Print the policy and run nothing.
    pub explain: bool,
    /// Forget the key's state and run nothing.
    pub reset_state: bool,
}

/// Parses the arguments (the first is the program name), with the config file's settings,
/// into a policy; or prints why it cannot and returns how to exit.
pub fn parse(args: Vec<OsString>) -> Result<Setup, Exit> {
    let matches = cli::command()
        .try_get_matches_from(&args)
        .map_err(clap_error)?;
    let (cli, origins) = match config::resolve(args, &matches) {
        Ok(None) => {
            let cli = Cli::from_arg_matches(&matches).map_err(clap_error)?;
            // Where each value came from matters only to --explain.
            let origins = if cli.explain {
                config::given(&matches)
            } else {
                Default::default()
            };
            (cli, origins)
        }
        Ok(Some(resolved)) => {
            let cli = Cli::try_parse_from(&resolved.args).map_err(clap_error)?;
            (cli, resolved.origins)
        }
        Err(e) => {
            eprintln!("retry: error: {e}");
            return Err(Exit::FAILURE);
        }
    };
    let (explain, reset_state) = (cli.explain, cli.reset_state);
    match Policy::try_from(cli) {
        Ok(policy) => Ok(Setup {
            policy,
            origins,
            explain,
            reset_state,
        }),
        Err(e) => {
            eprintln!("retry: error: {e}");
            Err(Exit::FAILURE)
        }
    }
}

/// Prints a command-line error in retry's style; --help and --version are not errors.
fn clap_error(e: clap::Error) -> Exit {
    if !e.use_stderr() {
        let _ = e.print();
        return Exit::Code(0);
    }
    eprintln!("retry: error: {}", usage::describe(&e, str::to_string));
    Exit::FAILURE
}
