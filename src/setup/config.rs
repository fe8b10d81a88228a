//! The config file: defaults and named profiles whose keys are the long flag names. Each
//! setting becomes the flag it names, placed before the command line's own flags, so that one
//! parser checks everything and the precedence is flags, then profile, then file defaults,
//! then built-in defaults.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};

use clap::parser::ValueSource;
use clap::{ArgAction, ArgMatches};
use toml::de::{DeTable, DeValue};

use super::{cli, presets};
use crate::policy::{Origin, Origins, UsageError};

/// Flags that the file cannot set: they choose the file, or are not policy.
const NOT_SETTINGS: [&str; 6] = [
    "config",
    "profile",
    "explain",
    "reset-state",
    "help",
    "version",
];

/// Flags of which only one may be given; a setting of one hides the file's others below it.
const EXCLUSIVE: [&[&str]; 2] = [&["attempts", "retries", "forever"], &["backoff", "delays"]];

/// One setting of the file: the flag it names and the arguments that stand for it.
struct Setting {
    key: String,
    args: Vec<OsString>,
}

/// The command line with the config's settings put in, and where each setting came from.
pub struct Resolved {
    pub args: Vec<OsString>,
    pub origins: Origins,
}

/// Puts the config file's settings (and the chosen profile's) in front of the command line's.
/// `matches` is the command line parsed alone, to know what it sets itself. `None` when there
/// is no config file and no profile: the command line is all there is.
pub fn resolve(args: Vec<OsString>, matches: &ArgMatches) -> Result<Option<Resolved>, UsageError> {
    let profile = matches.get_one::<String>("profile").cloned();
    let file = locate(matches.get_one::<PathBuf>("config").cloned())?;
    if file.is_none() && profile.is_none() {
        return Ok(None);
    }
    let mut origins = given(matches);
    let (defaults, profiles) = match &file {
        Some(path) => read(path)?,
        None => (Vec::new(), BTreeMap::new()),
    };
    let chosen = match &profile {
        None => Vec::new(),
        Some(name) => match profiles.into_iter().find(|(n, _)| n == name) {
            Some((_, settings)) => settings,
            // A built-in preset serves as a profile of its name.
            None if presets::find(name).is_some() => vec![Setting {
                key: "preset".into(),
                args: vec!["--preset".into(), name.into()],
            }],
            None => {
                let names: Vec<&str> = presets::ALL.iter().map(|p| p.name).collect();
                let place = file.as_ref().map_or("there is no config file".into(), |f| {
                    format!("it is not in {}", f.display())
                });
                return Err(UsageError(format!(
                    "no profile '{name}': {place}, and no built-in preset has that name ({})",
                    names.join(", ")
                )));
            }
        },
    };
    let mut front = Vec::new();
    let layers = [
        (chosen, profile.map(Origin::Profile)),
        (defaults, file.map(Origin::File)),
    ];
    for (settings, origin) in layers {
        let Some(origin) = origin else { continue };
        let mut placed = Vec::new();
        for setting in settings {
            if hidden(&setting.key, &origins) {
                continue;
            }
            front.extend(setting.args);
            placed.push(setting.key);
        }
        for key in placed {
            origins.insert(key, origin.clone());
        }
    }
    let mut all = args.into_iter();
    let mut resolved: Vec<OsString> = all.next().into_iter().collect();
    resolved.extend(front);
    resolved.extend(all);
    Ok(Some(Resolved {
        args: resolved,
        origins,
    }))
}

/// The settings the command line gives itself.
pub fn given(matches: &ArgMatches) -> Origins {
    cli::command()
        .get_arguments()
        .map(|arg| arg.get_id().as_str())
        .filter(|id| matches.value_source(id) == Some(ValueSource::CommandLine))
        .map(|id| (id.replace('_', "-"), Origin::Flag))
        .collect()
}

/// Whether a setting is hidden by one above it: the same flag, or one it excludes.
fn hidden(key: &str, above: &Origins) -> bool {
    above.contains_key(key)
        || EXCLUSIVE
            .iter()
            .any(|group| group.contains(&key) && group.iter().any(|k| above.contains_key(*k)))
}

/// The config file to read: `--config`, else `$RETRY_CONFIG` (both must exist), else the
/// default one, if it exists.
fn locate(flag: Option<PathBuf>) -> Result<Option<PathBuf>, UsageError> {
    let named = flag
        .map(|p| ("--config", p))
        .or_else(|| std::env::var_os("RETRY_CONFIG").map(|p| ("RETRY_CONFIG", PathBuf::from(p))))
        .filter(|(_, p)| !p.as_os_str().is_empty());
    if let Some((by, path)) = named {
        return if path.is_file() {
            Ok(Some(path))
        } else {
            Err(UsageError(format!(
                "config file '{}' (from {by}) does not exist",
                path.display()
            )))
        };
    }
    let home = std::env::var_os("XDG_CONFIG_HOME")
        .filter(|d| !d.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".config")));
    Ok(home
        .map(|d| d.join("retry").join("config.toml"))
        .filter(|p| p.is_file()))
}

/// Defaults and profiles of a config file, each setting checked.
type Contents = (Vec<Setting>, BTreeMap<String, Vec<Setting>>);

fn read(path: &Path) -> Result<Contents, UsageError> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| UsageError(format!("cannot read config file '{}': {e}", path.display())))?;
    let at = |span: std::ops::Range<usize>| {
        let line = text[..span.start.min(text.len())].matches('\n').count() + 1;
        format!("{}:{line}", path.display())
    };
    let table = DeTable::parse(&text).map_err(|e| {
        let place = e.span().map_or(path.display().to_string(), &at);
        UsageError(format!("{place}: not valid TOML: {}", e.message()))
    })?;
    let mut defaults = Vec::new();
    let mut profiles = BTreeMap::new();
    for (key, value) in table.get_ref() {
        let name = key.get_ref().as_ref();
        if name == "profiles" || name == "profile" {
            let DeValue::Table(each) = value.get_ref() else {
                return Err(UsageError(format!(
                    "{}: '{name}' must be a table of profiles, as [profiles.ci]",
                    at(key.span())
                )));
            };
            for (profile, settings) in each {
                let DeValue::Table(settings) = settings.get_ref() else {
                    return Err(UsageError(format!(
                        "{}: profile '{}' must be a table",
                        at(profile.span()),
                        profile.get_ref()
                    )));
                };
                let checked = settings
                    .iter()
                    .map(|(k, v)| setting(k.get_ref(), v.get_ref(), &at(k.span())))
                    .collect::<Result<_, _>>()?;
                profiles.insert(profile.get_ref().to_string(), checked);
            }
        } else {
            defaults.push(setting(name, value.get_ref(), &at(key.span()))?);
        }
    }
    Ok((defaults, profiles))
}

/// The arguments a setting stands for, checked by the same parser as the command line.
fn setting(key: &str, value: &DeValue<'_>, place: &str) -> Result<Setting, UsageError> {
    let command = cli::command();
    let bad = |why: String| UsageError(format!("{place}: key '{key}': {why}"));
    let arg = command
        .get_arguments()
        .find(|a| a.get_long() == Some(key) && !NOT_SETTINGS.contains(&key))
        .ok_or_else(|| {
            bad("not a setting; keys are the long flag names, as attempts or max-time".into())
        })?;
    let flag = OsString::from(format!("--{key}"));
    let args = match (arg.get_action(), value) {
        (ArgAction::SetTrue, DeValue::Boolean(true)) => vec![flag],
        (ArgAction::SetTrue, DeValue::Boolean(false)) => Vec::new(),
        (ArgAction::SetTrue, _) => return Err(bad("must be true or false".into())),
        (ArgAction::Count, DeValue::Integer(n)) => {
            let n = n
                .as_str()
                .parse::<u8>()
                .map_err(|_| bad("must be a small count".into()))?;
            vec![flag; usize::from(n)]
        }
        (ArgAction::Append, DeValue::Array(items)) => {
            let mut args = Vec::new();
            for item in items {
                args.push(flag.clone());
                args.push(scalar(item.get_ref()).ok_or_else(|| bad("must hold strings".into()))?);
            }
            args
        }
        (_, DeValue::Array(items)) => {
            let parts = items
                .iter()
                .map(|i| scalar(i.get_ref()))
                .collect::<Option<Vec<_>>>()
                .ok_or_else(|| bad("must hold numbers or strings".into()))?;
            let joined = parts.join(std::ffi::OsStr::new(","));
            vec![flag, joined]
        }
        (_, value) => {
            let value = scalar(value).ok_or_else(|| bad("must be a number or a string".into()))?;
            vec![flag, value]
        }
    };
    // The same parser as the command line judges the value, so both say the same about it.
    let mut probe = vec![OsString::from("retry")];
    probe.extend(args.iter().cloned());
    probe.extend(["--".into(), "true".into()]);
    if let Err(e) = cli::command().try_get_matches_from(probe) {
        let why = e.to_string();
        let why = why
            .lines()
            .next()
            .unwrap_or_default()
            .trim_start_matches("error: ");
        return Err(bad(why.to_string()));
    }
    Ok(Setting {
        key: key.to_string(),
        args,
    })
}

/// A string, number or boolean as the text of an argument.
fn scalar(value: &DeValue<'_>) -> Option<OsString> {
    match value {
        DeValue::String(s) => Some(OsString::from(s.as_ref())),
        DeValue::Integer(n) => i64::from_str_radix(n.as_str(), n.radix())
            .ok()
            .map(|n| n.to_string().into()),
        DeValue::Float(f) => Some(OsString::from(f.as_str())),
        DeValue::Boolean(b) => Some(b.to_string().into()),
        _ => None,
    }
}
