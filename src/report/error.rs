//! What stops retry before or instead of the command's run, as a value: made where it arises,
//! said once (`retry: error: …`, by [`say`], which `lib::run` alone calls), and ended with
//! the status its kind has. A state problem during a run is no error of these: it is a
//! warning, and the reporter tells it.

use std::fmt;
use std::io;

use crate::exit::Exit;
use crate::policy::{BadValue, UsageError};

/// Why retry stops before, or instead of, running the command.
#[derive(Debug)]
pub enum Error {
    /// The command line or the environment asks for what retry cannot do: nothing is run.
    Usage(UsageError),
    /// A config file or a profile cannot be used: nothing is run.
    Config(UsageError),
    /// retry cannot do its own part (handle signals, prepare the command): what it was
    /// doing, and the system's reason.
    Own {
        doing: &'static str,
        cause: io::Error,
    },
    /// `--list-keys` or `--reset-state` could not do what it was asked for: what, and the
    /// store's reason (a `state::Error`; boxed, as report sits below state).
    Store {
        doing: String,
        cause: Box<dyn std::error::Error>,
    },
    /// Standard output refused what a flag that runs nothing prints (a full disk, a closed
    /// pipe): said as coreutils say it, instead of exiting 0 having printed nothing.
    Write(io::Error),
}

impl Error {
    /// How retry ends for this error: 125, its own failure, for every kind; its statuses
    /// 124, 126 and 127 are the command's, and 1 and 2 collide with the child's own.
    pub fn exit(&self) -> Exit {
        match self {
            Error::Usage(_)
            | Error::Config(_)
            | Error::Own { .. }
            | Error::Store { .. }
            | Error::Write(_) => Exit::FAILURE,
        }
    }
}

impl From<UsageError> for Error {
    fn from(e: UsageError) -> Self {
        Error::Usage(e)
    }
}

impl From<BadValue> for Error {
    fn from(bad: BadValue) -> Self {
        Error::Usage(bad.into())
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Usage(e) | Error::Config(e) => e.fmt(f),
            Error::Own { doing, cause } => write!(f, "{doing}: {cause}"),
            Error::Store { doing, cause } => write!(f, "{doing}: {cause}"),
            Error::Write(e) => {
                let text = e.to_string();
                // "No space left on device (os error 28)": the words alone, as coreutils
                // print them.
                let words = text
                    .rfind(" (os error ")
                    .map_or(&text[..], |at| &text[..at]);
                write!(f, "write error: {words}")
            }
        }
    }
}

impl std::error::Error for Error {}

/// Says the error, the one place `retry: error: …` is written, with what came from outside
/// escaped; returns how retry ends.
pub fn say(e: &Error) -> Exit {
    eprintln!("retry: error: {}", crate::quote::clean(&e.to_string()));
    e.exit()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_write_error_is_said_in_the_systems_words_without_its_number() {
        let full = Error::Write(io::Error::from_raw_os_error(28));
        assert_eq!(full.to_string(), "write error: No space left on device");
        assert_eq!(full.exit(), Exit::FAILURE);
    }

    #[test]
    fn a_usage_error_is_said_as_its_value_says_it() {
        let bad = BadValue::new("not a duration", "5parsecs", "write 250ms or 1.5s");
        let e = Error::from(bad);
        assert_eq!(
            e.to_string(),
            "not a duration: 5parsecs; write 250ms or 1.5s"
        );
        assert_eq!(e.exit(), Exit::FAILURE);
    }
}
