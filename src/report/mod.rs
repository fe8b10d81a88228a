//! What retry tells: the log lines of a run (text or JSON), the summary and metrics files, and
//! `--explain`. Reads the policy and what happened; decides nothing.

pub mod explain;
pub mod keys;
pub mod log;
pub mod reporter;
pub mod summary;
pub mod words;

use std::io::{self, Write};

use crate::exit::Exit;

/// Writes what a flag that runs nothing prints (`--help`, `--explain`, `--generate`,
/// `--list-keys`) to stdout: 0 once it is all written, else `retry: error: write error: …` and
/// 125, as coreutils say a full disk or a closed pipe instead of exiting 0 having printed
/// nothing.
pub fn to_stdout(bytes: &[u8]) -> Exit {
    let mut out = io::stdout().lock();
    match out.write_all(bytes).and_then(|()| out.flush()) {
        Ok(()) => Exit::Code(0),
        Err(e) => write_error(&e),
    }
}

/// Says that stdout could not be written, and returns retry's own failure.
pub fn write_error(e: &io::Error) -> Exit {
    let text = e.to_string();
    // "No space left on device (os error 28)": the words alone, as coreutils print them.
    let words = match text.rfind(" (os error ") {
        Some(at) => &text[..at],
        None => &text,
    };
    eprintln!("retry: error: write error: {words}");
    Exit::FAILURE
}
