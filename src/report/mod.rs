//! What retry tells: the log lines of a run (text or JSON), the summary and metrics files, and
//! `--explain`. Reads the policy and what happened; decides nothing.

pub mod error;
pub mod explain;
pub mod keys;
pub mod log;
pub mod reporter;
pub mod summary;
pub mod words;

use std::io::{self, Write};

use crate::exit::Exit;
pub use error::Error;

/// Writes what a flag that runs nothing prints (`--explain`, `--generate`, `--list-keys`) to
/// stdout: 0 once it is all written, else a write error (125).
pub fn to_stdout(bytes: &[u8]) -> Result<Exit, Error> {
    let mut out = io::stdout().lock();
    out.write_all(bytes)
        .and_then(|()| out.flush())
        .map_err(Error::Write)?;
    Ok(Exit::Code(0))
}

/// Prints clap's help or version on stdout, as clap makes it (styled for a terminal): 0 once
/// it is all written, else a write error (125).
pub fn help(page: &clap::Error) -> Result<Exit, Error> {
    page.print()
        .and_then(|()| io::stdout().flush())
        .map_err(Error::Write)?;
    Ok(Exit::Code(0))
}
