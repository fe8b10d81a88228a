//! From the command line to a [`Policy`]: the clap definition, config files and profiles,
//! presets, and the checks of how flags relate.

pub mod cli;
mod completions;
mod config;
pub mod generate;
pub mod man;
mod manual;
mod minfrin;
pub mod presets;
mod usage;
mod validate;

use std::ffi::OsString;
use std::time::Duration;

use clap::FromArgMatches;
use clap::parser::ValueSource;

use self::cli::Cli;
use crate::policy::rules::Sources;
use crate::policy::{Fleet, KeySettings, Origin, Origins, Policy, UsageError};
use crate::report::Error;

/// The flags that shape the fleet `--fleet` simulates, and mean nothing without it.
const FLEET_SHAPE: [&str; 5] = ["outage", "every", "hosts", "call_time", "store_rate"];

/// What retry is asked to do: one mode, chosen by the command line, with what it needs.
/// `lib.rs` dispatches on it with one `match`.
#[derive(Debug)]
// Made once and matched once: boxing the policy would only add an allocation to every run.
#[allow(clippy::large_enum_variant)]
pub(crate) enum Mode {
    /// Run the command until it succeeds or the policy gives up (the usual case).
    Run(Policy),
    /// `--explain`: print the resolved policy, where each value came from, and its schedule.
    Explain { policy: Policy, origins: Origins },
    /// `--explain --fleet N`: simulate a fleet running the policy.
    ExplainFleet { policy: Policy, fleet: Fleet },
    /// `--list-keys`: every key with state in `place`, changing nothing.
    ListKeys { policy: Policy, place: KeySettings },
    /// `--reset-state`: forget the key's breaker and budget (the policy has a key).
    ResetState(Policy),
    /// `--generate KIND`: print the man page or a shell's completion script.
    Generate(generate::Kind),
    /// `-h`, `--help`, `-V`, `--version`: the page clap made, to print on stdout.
    Help(clap::Error),
}

/// Parses the arguments (the first is the program name), with the config file's settings,
/// into what retry is to do, or why it cannot.
pub(crate) fn parse(args: Vec<OsString>) -> Result<Mode, Error> {
    let mut command = cli::parsing_command();
    let mut matches = match command.try_get_matches_from_mut(&args) {
        Ok(matches) => matches,
        Err(e) => return refused(e, &args),
    };
    drop(command);
    // --generate stands alone, as --help does: nothing else is read.
    if let Some(kind) = matches.get_one::<generate::Kind>("generate") {
        return Ok(Mode::Generate(*kind));
    }
    // A flag that would be ignored is refused: a fleet's shape without a fleet.
    if matches.get_one::<u32>("fleet").is_none()
        && let Some(flag) = FLEET_SHAPE
            .iter()
            .find(|id| matches.value_source(id) == Some(ValueSource::CommandLine))
            .map(|id| id.replace('_', "-"))
    {
        return Err(usage(format!(
            "a flag that only shapes a simulated fleet: --{flag} without --fleet; add \
             --explain --fleet N to simulate one, or leave --{flag} out"
        )));
    }
    // --factor given here must shape the backoff: a config file's may stand unused.
    let factor_given = matches.value_source("factor") == Some(ValueSource::CommandLine);
    let (cli, origins) = match config::resolve(args, &matches).map_err(Error::Config)? {
        None => {
            // Where each value came from matters only to --explain; taking the values out
            // of the matches (rather than copying them all) forgets it.
            let origins = if matches.get_flag("explain") {
                config::given(&matches)
            } else {
                Default::default()
            };
            let cli = Cli::from_arg_matches_mut(&mut matches).map_err(clap_error)?;
            (cli, origins)
        }
        Some(resolved) => {
            let matches = match cli::parsing_command().try_get_matches_from(&resolved.args) {
                Ok(matches) => matches,
                Err(e) => return clap_refusal(e),
            };
            let cli = Cli::from_arg_matches(&matches).map_err(clap_error)?;
            (cli, resolved.origins)
        }
    };
    drop(matches);
    mode(cli, origins, factor_given)
}

/// What clap's refusal of the arguments means: the help or the version asked for, or a usage
/// error in retry's words.
fn refused(e: clap::Error, args: &[OsString]) -> Result<Mode, Error> {
    match e.kind() {
        // The help is made again with the text that only it shows: -h a page of what a first
        // run needs, --help every flag.
        clap::error::ErrorKind::DisplayHelp => {
            let ours = args.iter().skip(1).take_while(|a| *a != "--");
            let page = if ours.into_iter().any(|a| a == "--help") {
                cli::command()
            } else {
                cli::short_help_command()
            };
            let help = page.try_get_matches_from(args).err();
            clap_refusal(help.unwrap_or(e))
        }
        // minfrin's retry printed its version for -v: say what -v is here.
        clap::error::ErrorKind::MissingRequiredArgument
            if args.get(1..).is_some_and(|rest| rest == ["-v"]) =>
        {
            Err(minfrin::verbose_alone().into())
        }
        clap::error::ErrorKind::InvalidUtf8 => Err(not_utf8(args)),
        _ => clap_refusal(e),
    }
}

/// What retry is to do with these flags: the policy they make, checked, and the mode.
fn mode(cli: Cli, origins: Origins, factor_given: bool) -> Result<Mode, Error> {
    let (explain, reset_state) = (cli.explain, cli.shared.reset_state);
    let store_rate = cli.simulated.store_rate;
    let fleet = cli
        .simulated
        .fleet
        .map(|processes| fleet(&cli, processes))
        .transpose()?;
    let sources = sources(&cli, &origins);
    let origins = if explain {
        explained(origins, &cli)
    } else {
        origins
    };
    let (mut policy, listed) = validate::build(cli)?;
    policy.rules.sources = sources;
    // A flag that would be ignored is refused: a factor for a backoff that has none.
    if factor_given
        && !matches!(
            policy.backoff.shape,
            crate::policy::backoff::Shape::Exponential { .. }
        )
    {
        let delays = match &policy.backoff.shape {
            crate::policy::backoff::Shape::List(_) => "delays are the --delays list".to_string(),
            shape => format!("backoff is {shape}"),
        };
        return Err(usage(format!(
            "--factor is for -b exponential, and this run's {delays}: leave --factor out, or \
             give -b exponential"
        )));
    }
    // The rate of a shared store, for a fleet whose key is kept on each host: it would be
    // ignored. (Without --key, the table's row with --key --state uses it.)
    if let (Some(rate), Some(state)) = (store_rate, &policy.state)
        && state.store.is_none()
    {
        return Err(usage(format!(
            "--store-rate {rate} is the rate of a --state store, and this --key keeps its \
             state on each host: give --state URL, or leave --store-rate out"
        )));
    }
    // In this order: `--reset-state` wins over an `--explain` beside it.
    Ok(match (listed, fleet) {
        _ if reset_state => Mode::ResetState(policy),
        (Some(place), _) => Mode::ListKeys { policy, place },
        (None, Some(fleet)) => Mode::ExplainFleet { policy, fleet },
        (None, None) if explain => Mode::Explain { policy, origins },
        (None, None) => Mode::Run(policy),
    })
}

/// A usage error in these words.
fn usage(words: String) -> Error {
    Error::Usage(UsageError(words))
}

/// The fleet `--explain --fleet N` simulates, its flags checked against each other.
fn fleet(cli: &Cli, processes: u32) -> Result<Fleet, UsageError> {
    let human = |d: Duration| humantime::format_duration(d).to_string();
    let set = cli.with_defaults();
    let every = set.every;
    let call = set.call_time;
    if every < Duration::from_secs(1) {
        return Err(UsageError(format!(
            "--every is too short for a job's interval: {}; give 1s or more",
            human(every)
        )));
    }
    let hosts = cli.simulated.hosts.unwrap_or(processes);
    if hosts > processes {
        return Err(UsageError(format!(
            "--hosts {hosts} is more than the --fleet of {processes} processes: give at most \
             {processes} hosts"
        )));
    }
    // The processes start as real runs of this command line would: at the tick, unless
    // --splay spreads them.
    let splay = set.splay;
    if splay > every {
        return Err(UsageError(format!(
            "--splay {} is longer than --every {}: a process runs once a tick, so give at most \
             --every",
            human(splay),
            human(every)
        )));
    }
    if call.is_zero() || call > every {
        return Err(UsageError(format!(
            "--call-time {} is not a call's time: give more than 0 and at most --every ({})",
            human(call),
            human(every)
        )));
    }
    Ok(Fleet {
        processes,
        hosts,
        outage: set.outage,
        every,
        splay,
        call,
        store_rate: set.store_rate,
    })
}

/// Where the status lists came from, for the log: a flag, a profile, a file, or a preset.
fn sources(cli: &Cli, origins: &Origins) -> Sources {
    let own = |key: &str| match origins.get(key) {
        Some(Origin::Profile(name)) => format!("{key} of profile {name}"),
        Some(Origin::File(path)) => format!("{key} from {}", home_relative(path)),
        _ => format!("--{key}"),
    };
    let preset = cli.results.preset.map(|p| p.name);
    Sources {
        retry_on: match (&cli.results.retry_on, preset) {
            (None, Some(name)) => format!("the {name} preset's retried statuses"),
            _ => own("retry-on"),
        },
        fatal_on: match (&cli.results.fatal_on, preset) {
            (None, Some(name)) => format!("the {name} preset's fatal statuses"),
            (Some(_), Some(name)) => {
                format!("{} or the {name} preset's fatal statuses", own("fatal-on"))
            }
            (_, None) => own("fatal-on"),
        },
    }
}

/// Where `--explain`'s rows came from beyond the flags and settings given: the lists a preset
/// fills (alone, or joined to the user's own), and the `{hints}` that turns hints on.
fn explained(mut origins: Origins, cli: &Cli) -> Origins {
    if let Some(preset) = cli.results.preset {
        let by = Box::new(origins.get("preset").cloned().unwrap_or(Origin::Flag));
        let mut filled = vec!["fatal-on"];
        // --retry-on replaces the preset's retried statuses; the other lists join.
        if cli.results.retry_on.is_none() {
            filled.push("retry-on");
        }
        if !preset.retry_if_output.is_empty() {
            filled.push("retry-if-output");
        }
        if !preset.fatal_if_output.is_empty() {
            filled.push("fatal-if-output");
        }
        for key in filled {
            let own = origins.remove(key).map(Box::new);
            let origin = Origin::Preset {
                name: preset.name,
                by: by.clone(),
                own,
            };
            origins.insert(key.to_string(), origin);
        }
    }
    let placeholder = cli
        .command
        .iter()
        .any(|a| a.to_string_lossy().contains(crate::env::HINTS));
    if !origins.contains_key("hints") && placeholder {
        origins.insert("hints".into(), Origin::HintsInCommand);
    }
    origins
}

/// A path with the home folder written `~`, as people write it.
fn home_relative(path: &std::path::Path) -> String {
    let home = std::env::var_os("HOME").map(std::path::PathBuf::from);
    match home.as_deref().and_then(|h| path.strip_prefix(h).ok()) {
        Some(rest) if !rest.as_os_str().is_empty() => format!("~/{}", rest.display()),
        _ => path.display().to_string(),
    }
}

/// A flag's value that is not UTF-8: clap names neither the flag nor the value, so they are
/// found here (the first such argument before the command), and the value is shown escaped.
fn not_utf8(args: &[OsString]) -> Error {
    let mut previous: Option<&str> = None;
    let mut said = None;
    for arg in args.iter().skip(1) {
        match arg.to_str() {
            Some("--") => break,
            Some(text) => previous = Some(text),
            None => {
                let bytes = arg.as_encoded_bytes();
                let (flag, value) = match bytes.iter().position(|&b| b == b'=') {
                    Some(eq) if bytes.starts_with(b"--") => (
                        String::from_utf8_lossy(&bytes[..eq]).into_owned(),
                        crate::quote::quoted_bytes(&bytes[eq + 1..]),
                    ),
                    _ => (
                        previous
                            .filter(|p| p.starts_with('-'))
                            .unwrap_or("an option")
                            .to_string(),
                        crate::quote::quoted(arg),
                    ),
                };
                said = Some((flag, value));
                break;
            }
        }
    }
    let (flag, value) = said.unwrap_or_else(|| ("an option".into(), "\"\"".into()));
    usage(format!(
        "{} needs UTF-8: {value}; give it in UTF-8 (only the command's own arguments may be \
         any bytes)",
        crate::quote::clean(&flag)
    ))
}

/// An environment variable retry reads as text, `None` when it is unset. A value that is not
/// UTF-8 is a usage error naming the variable, with the value shown escaped: dropped, it would
/// leave the run without the setting and without a word (a host out of its fleet's store).
fn env_text(name: &str, fix: &str) -> Result<Option<String>, UsageError> {
    match std::env::var_os(name) {
        None => Ok(None),
        Some(value) => value.into_string().map(Some).map_err(|value| {
            UsageError(format!(
                "${name} needs UTF-8: {}; {fix}",
                crate::quote::quoted(&value)
            ))
        }),
    }
}

/// What clap said instead of parsing: the help or the version (`--help`, `-V`), which are no
/// errors, or a usage error.
fn clap_refusal(e: clap::Error) -> Result<Mode, Error> {
    if e.use_stderr() {
        Err(clap_error(e))
    } else {
        Ok(Mode::Help(e))
    }
}

/// A command-line error in retry's words.
fn clap_error(e: clap::Error) -> Error {
    usage::describe(&e, str::to_string).into()
}

/// The policy these flags give, without a config file or a command (`--` and a placeholder
/// are added): for the simulator, its benchmarks and tests, whose errors are text (no user
/// sees them).
pub fn from_flags(flags: &[&str]) -> Result<Policy, String> {
    let args = ["retry"].iter().chain(flags).chain(&["--", "job"]);
    let matches = cli::parsing_command()
        .try_get_matches_from(args)
        .map_err(|e| clap_error(e).to_string())?;
    let cli = Cli::from_arg_matches(&matches).map_err(|e| clap_error(e).to_string())?;
    Policy::try_from(cli).map_err(|e| e.to_string())
}
