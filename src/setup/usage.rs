//! Usage errors in retry's one style, `retry: error: <what>: <the bad value>; <how to fix>`:
//! clap's errors are rewritten from their kind and context, without clap's usage text, its
//! internals ("0 is not in 1..=4294967295") or a suggestion that misleads.

use std::error::Error as _;

use clap::error::{ContextKind, ContextValue, ErrorKind};

use crate::policy::BadValue;

/// Flags that other tools spell so, which people type for retry's own; clap's nearest spelling
/// would mislead (`--timeout` → `--hook-timeout`, curl's `--retry` → `--on-retry`,
/// `--min-delay` → `--max-delay`, the opposite) or find nothing (`--initial-delay`).
const OTHER_TOOLS: &[(&str, &str)] = &[
    (
        "timeout",
        "attempt-timeout DUR (one attempt) or --max-time DUR (the whole run)",
    ),
    (
        "retry",
        "retries N (as curl --retry N), or -n/--attempts N, the first attempt included",
    ),
    ("max-retries", "retries N"),
    ("retry-count", "retries N"),
    ("tries", "attempts N"),
    ("max-tries", "attempts N"),
    ("max-attempts", "attempts N"),
    ("count", "attempts N"),
    ("interval", "delay DUR"),
    ("wait", "delay DUR"),
    ("sleep", "delay DUR"),
    ("retry-interval", "delay DUR"),
    ("retry-delay", "delay DUR (as curl --retry-delay)"),
    (
        "min-delay",
        "delay DUR (the first delay, which later ones grow from)",
    ),
    ("initial-delay", "delay DUR (the first delay)"),
    ("initial-interval", "delay DUR (the first delay)"),
    ("max-backoff", "max-delay DUR"),
    ("backoff-max", "max-delay DUR"),
    ("delay-max", "max-delay DUR"),
    ("max-interval", "max-delay DUR"),
    (
        "max-wait",
        "max-delay DUR (the longest wait between attempts) or --max-time DUR (the whole run)",
    ),
    ("backoff-factor", "factor F"),
    ("multiplier", "factor F"),
    ("retry-max-time", "max-time DUR (as curl --retry-max-time)"),
    ("deadline", "max-time DUR"),
    ("total-timeout", "max-time DUR"),
    ("max-elapsed-time", "max-time DUR"),
];

/// For an unknown flag: the flag of retry's meant instead, named by `setting`: the one another
/// retry tool spells so, else clap's suggestion.
pub fn instead(e: &clap::Error, setting: impl Fn(&str) -> String) -> Option<String> {
    if e.kind() != ErrorKind::UnknownArgument {
        return None;
    }
    let text = |kind| match e.get(kind) {
        Some(ContextValue::String(s)) => Some(s.clone()),
        _ => None,
    };
    let unknown = text(ContextKind::InvalidArg).unwrap_or_default();
    let name = unknown.trim_start_matches('-');
    let name = name.split('=').next().unwrap_or(name);
    // `--n 3`: a short flag written long.
    let mut letters = name.chars();
    if let (Some(letter), None) = (letters.next(), letters.next())
        && unknown.starts_with("--")
        && let Some(arg) = super::cli::parsing_command()
            .get_arguments()
            .find(|a| a.get_short() == Some(letter))
    {
        let short = format!("-{letter}");
        return Some(match arg.get_long().map(|l| setting(&format!("--{l}"))) {
            // A config file names its keys without dashes, and has no short ones.
            Some(long) if !long.starts_with("--") => long,
            Some(long) => format!("{short} (or {long})"),
            None => short,
        });
    }
    OTHER_TOOLS
        .iter()
        .find(|(other, _)| *other == name)
        .map(|(_, ours)| setting(&format!("--{ours}")))
        .or_else(|| {
            // "--delay <DUR>" → the flag's name alone.
            let suggested = text(ContextKind::SuggestedArg)?;
            Some(setting(
                suggested.split_whitespace().next().unwrap_or_default(),
            ))
        })
}

/// What is wrong with the command line, as [`BadValue`]. Flags are named as `--name`;
/// `setting` names them otherwise (a config file names its keys without dashes).
pub fn describe(e: &clap::Error, setting: impl Fn(&str) -> String) -> BadValue {
    let arg = context(e, ContextKind::InvalidArg)
        .map(|a| flag(&a, &setting))
        .unwrap_or_default();
    let value = context(e, ContextKind::InvalidValue).unwrap_or_default();
    match e.kind() {
        ErrorKind::ValueValidation => rejected(e, &arg, value),
        ErrorKind::InvalidValue if value.is_empty() => BadValue::new(
            format!("{arg} needs a value"),
            value,
            format!("give one, as {arg} VALUE or {arg}=VALUE"),
        ),
        ErrorKind::InvalidValue => BadValue::new(
            format!("not a choice of {arg}"),
            value,
            match context(e, ContextKind::ValidValue) {
                Some(choices) => format!("use one of {choices}"),
                None => "see retry --help".into(),
            },
        ),
        ErrorKind::UnknownArgument => unknown(e, &setting),
        ErrorKind::ArgumentConflict => conflict(e, &arg, &setting),
        ErrorKind::MissingRequiredArgument => missing(e),
        ErrorKind::InvalidUtf8 => BadValue::new(
            format!("{arg} needs UTF-8"),
            value,
            "give it in UTF-8 (only the command's own arguments may be any bytes)",
        ),
        _ => {
            // Kinds retry's definition does not produce; clap's own first line, then.
            let text = e.kind().as_str().unwrap_or("invalid command line");
            BadValue::new(text, arg, "see retry --help")
        }
    }
}

/// The error's `kind` of context, a list joined with commas.
fn context(e: &clap::Error, kind: ContextKind) -> Option<String> {
    match e.get(kind) {
        Some(ContextValue::String(s)) => Some(s.clone()),
        Some(ContextValue::Strings(list)) => Some(list.join(", ")),
        _ => None,
    }
}

/// A flag as clap shows it, named as `setting` names it: "--delay <DUR>" → the flag's name
/// alone; "--quiet..." (a count) too.
fn flag(arg: &str, setting: &impl Fn(&str) -> String) -> String {
    let name = arg
        .split_whitespace()
        .next()
        .unwrap_or_default()
        .trim_end_matches("...");
    setting(name)
}

/// A value of `arg` that its parser rejected: the parser's own words, told which flag they
/// are about unless they name it.
fn rejected(e: &clap::Error, arg: &str, value: String) -> BadValue {
    match e.source().and_then(|s| s.downcast_ref::<BadValue>()) {
        // A message that names the flag itself (minfrin's options) is not told it again.
        Some(bad)
            if bad
                .what
                .contains(&format!("--{}", arg.trim_start_matches('-'))) =>
        {
            bad.clone()
        }
        Some(bad) => BadValue::new(format!("{} for {arg}", bad.what), &bad.value, &bad.fix),
        None => BadValue::new(
            format!("invalid value for {arg}"),
            value,
            "see retry --help",
        ),
    }
}

/// A flag retry does not have: the one meant, if it is near one, or where the command's own
/// flags go.
fn unknown(e: &clap::Error, setting: &impl Fn(&str) -> String) -> BadValue {
    let unknown = context(e, ContextKind::InvalidArg).unwrap_or_default();
    let fix = match instead(e, setting) {
        // Other retry tools' --max is a number of retries, which clap's nearest flag is not.
        _ if unknown == "--max" => "did you mean --retries N (the most retries, as --max is in \
                                    other retry tools) or --max-time DUR (a deadline)?"
            .into(),
        Some(ours) => format!("did you mean {ours}?"),
        None => "see retry --help; an argument meant for the command goes after --, \
                 as retry -n 3 -- COMMAND --its-flag"
            .into(),
    };
    BadValue::new("unknown flag", setting(&unknown), fix)
}

/// `arg` given with the flags it excludes.
fn conflict(e: &clap::Error, arg: &str, setting: &impl Fn(&str) -> String) -> BadValue {
    let prior = context(e, ContextKind::PriorArg)
        .map(|p| p.split(", ").map(|a| flag(a, setting)).collect::<Vec<_>>())
        .unwrap_or_default()
        .join(", ");
    if prior == arg {
        return BadValue::new("a flag given twice", arg, "give it once");
    }
    BadValue::new(
        "flags that exclude each other",
        format!("{arg} and {prior}"),
        "keep one of them",
    )
}

/// What the command line lacks: the key of --reset-state, the --explain of --fleet, or the
/// command.
fn missing(e: &clap::Error) -> BadValue {
    let missing = match e.get(ContextKind::InvalidArg) {
        Some(ContextValue::Strings(list)) => list.clone(),
        _ => Vec::new(),
    };
    let names = |flag: &str| {
        missing
            .iter()
            .any(|m| m.split_whitespace().next() == Some(flag))
    };
    if names("--key") {
        BadValue::new(
            "--reset-state forgets the state of one key, and needs --key",
            "--reset-state without --key",
            "give the key, as retry --reset-state --key api.example.com \
             (retry --list-keys lists every key with state)",
        )
    } else if names("--explain") {
        BadValue::new(
            "--fleet simulates a fleet for --explain, and runs nothing",
            "--fleet without --explain",
            "add --explain to see the simulation; leave --fleet out to run the command",
        )
    } else {
        BadValue::new(
            "nothing to run",
            "no COMMAND given",
            "name it after the options, as retry -n 3 -- COMMAND [ARG]...",
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::setup::cli;

    fn error(args: &[&str]) -> String {
        let e = cli::command()
            .try_get_matches_from(["retry"].iter().chain(args))
            .expect_err("a usage error");
        describe(&e, str::to_string).to_string()
    }

    #[test]
    fn each_kind_of_error_names_the_flag_and_the_value() {
        assert_eq!(
            error(&["-n", "0", "--", "x"]),
            "not a number of attempts for --attempts: 0; give a whole number of at least 1, or --forever for no limit"
        );
        assert!(
            error(&["-b", "up", "--", "x"])
                .starts_with("not a choice of --backoff: up; use one of exponential")
        );
        assert!(error(&["--delay"]).starts_with("--delay needs a value: \"\";"));
        let conflict = error(&["-n", "2", "--forever", "--", "x"]);
        assert!(
            conflict.contains("--forever") && conflict.ends_with("; keep one of them"),
            "{conflict}"
        );
        assert_eq!(
            error(&["-n", "2", "-n", "3", "--", "x"]),
            "a flag given twice: --attempts; give it once"
        );
        assert!(
            error(&["--max", "10", "--", "x"])
                .contains("did you mean --retries N (the most retries")
        );
        assert!(error(&["--atempts", "2", "--", "x"]).ends_with("did you mean --attempts?"));
        assert!(
            error(&["--n", "3", "--", "x"]).ends_with("did you mean -n (or --attempts)?"),
            "{}",
            error(&["--n", "3", "--", "x"])
        );
        assert!(error(&[]).contains("no COMMAND given"));
        let e = error(&["--fleet", "3", "--", "true"]);
        assert!(e.contains("--fleet without --explain"), "{e}");
    }
}
