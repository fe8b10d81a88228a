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

use super::{cli, presets, usage};
use crate::env;
use crate::policy::{BadValue, Origin, Origins, UsageError};

/// Flags that the file cannot set: they choose the file, or are not policy.
const NOT_SETTINGS: [&str; 12] = [
    "config",
    "no-config",
    "profile",
    "explain",
    "reset-state",
    "fleet",
    "hosts",
    "outage",
    "every",
    "call-time",
    "help",
    "version",
];

/// Flags of which only one may be given; a setting of one hides the file's others below it.
const EXCLUSIVE: [&[&str]; 3] = [
    &["attempts", "times", "retries", "forever"],
    &["backoff", "delays"],
    &["verbose", "quiet"],
];

/// One setting of the file: the flag it names, the arguments that stand for it, and its line.
struct Setting {
    key: String,
    args: Vec<OsString>,
    line: usize,
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
    let file = if matches.get_flag("no_config") {
        None
    } else {
        locate(matches.get_one::<PathBuf>("config").cloned())?
    };
    if file.is_none() && profile.is_none() {
        return Ok(None);
    }
    let mut origins = given(matches);
    let (defaults, mut profiles) = match &file {
        Some(path) => read(path)?,
        None => (Vec::new(), BTreeMap::new()),
    };
    warn_broken(&profiles, profile.as_ref());
    let chosen = match &profile {
        None => Vec::new(),
        Some(name) => match profiles.remove(name) {
            Some(settings) => settings?,
            // A built-in preset serves as a profile of its name.
            None if presets::find(name).is_some() => vec![Setting {
                key: "preset".into(),
                args: vec!["--preset".into(), name.into()],
                line: 0,
            }],
            None => return Err(no_such_profile(name, &profiles, file.as_deref())),
        },
    };
    let front = in_front(chosen, profile, defaults, file, &mut origins);
    let mut all = args.into_iter();
    let mut resolved: Vec<OsString> = all.next().into_iter().collect();
    resolved.extend(front);
    resolved.extend(all);
    Ok(Some(Resolved {
        args: resolved,
        origins,
    }))
}

/// Warns of each broken profile of the file but the one chosen, which stops the run instead.
fn warn_broken(profiles: &Profiles, chosen: Option<&String>) {
    // A profile this run does not use does not stop it: one broken profile must not stop
    // every run on the host. It is said once, so that it gets mended.
    for (name, broken) in profiles.iter().filter(|(n, _)| Some(*n) != chosen) {
        if let Err(e) = broken {
            eprintln!(
                "retry: warning: profile {name} of the config file is not used by this run, \
                 and cannot be: {e}"
            );
        }
    }
}

/// The error for a profile that is neither the file's nor a preset: the nearest name, or
/// where to add it.
fn no_such_profile(name: &str, profiles: &Profiles, file: Option<&Path>) -> UsageError {
    let names = presets::names();
    let known = profiles
        .keys()
        .map(String::as_str)
        .chain(names.iter().copied());
    if let Some(near) = nearest(name, known) {
        return BadValue::new(
            "no such profile or preset",
            name,
            format!("did you mean {near}?"),
        )
        .into();
    }
    let place = file.map_or("there is no config file".into(), |f| {
        format!("add [profiles.{name}] to {}", crate::quote::shown(f))
    });
    BadValue::new(
        "no such profile or preset",
        name,
        format!("{place}, or use a preset: {}", presets::listed()),
    )
    .into()
}

/// The arguments the chosen profile's settings and then the file's stand for, each left out
/// when one above it hides it; `origins` is told where each setting put in came from.
fn in_front(
    chosen: Vec<Setting>,
    profile: Option<String>,
    defaults: Vec<Setting>,
    file: Option<PathBuf>,
    origins: &mut Origins,
) -> Vec<OsString> {
    let layers = [
        (chosen, profile.map(Origin::Profile)),
        (defaults, file.map(Origin::File)),
    ];
    let mut front = Vec::new();
    for (settings, origin) in layers {
        let Some(origin) = origin else { continue };
        let mut placed = Vec::new();
        for setting in settings {
            if hidden(&setting.key, origins) {
                continue;
            }
            front.extend(setting.args);
            placed.push(setting.key);
        }
        for key in placed {
            origins.insert(key, origin.clone());
        }
    }
    front
}

/// The settings the command line gives itself.
pub fn given(matches: &ArgMatches) -> Origins {
    cli::parsing_command()
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

/// The name among `known` that `name` is most likely a typing mistake for, as clap suggests
/// a flag: close enough by Jaro-Winkler similarity.
fn nearest<'a>(name: &str, known: impl Iterator<Item = &'a str>) -> Option<&'a str> {
    known
        .map(|k| (strsim::jaro_winkler(name, k), k))
        .filter(|(score, _)| *score > 0.8)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, k)| k)
}

/// The config file to read: `--config`, else `$RETRY_CONFIG` (both must exist), else the
/// default one, if it exists.
fn locate(flag: Option<PathBuf>) -> Result<Option<PathBuf>, UsageError> {
    let named = match flag {
        Some(path) => Some(("--config", path)),
        None => super::env_text(
            env::CONFIG,
            "set it in UTF-8, or name the file with --config",
        )?
        .map(|p| ("RETRY_CONFIG", PathBuf::from(p))),
    }
    .filter(|(_, p)| !p.as_os_str().is_empty());
    if let Some((by, path)) = named {
        return if path.is_file() {
            Ok(Some(path))
        } else if path.is_dir() {
            Err(BadValue::new(
                format!("a directory, not a config file (from {by})"),
                shown(&path),
                format!("name the file, as {}", shown(&path.join("config.toml"))),
            )
            .into())
        } else {
            Err(BadValue::new(
                format!("no config file there (from {by})"),
                shown(&path),
                "check the path, or leave it out for the default file",
            )
            .into())
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

/// A path as an error shows it: as it is, or escaped where it is not UTF-8 (a lossy `display`
/// would show U+FFFD for what is there).
fn shown(path: &Path) -> String {
    match path.to_str() {
        Some(text) => text.to_string(),
        None => crate::quote::quoted(path),
    }
}

/// Defaults and profiles of a config file, each setting checked: an error in the defaults
/// stops every run, an error in a profile only the runs that use it.
type Contents = (Vec<Setting>, Profiles);

/// A config file's profiles by name, each its settings or what is wrong with them.
type Profiles = BTreeMap<String, Result<Vec<Setting>, UsageError>>;

/// The most of a line of the file that an error quotes, in characters.
const SHOWN_LINE: usize = 200;

fn read(path: &Path) -> Result<Contents, UsageError> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        BadValue::new(
            format!("cannot read the config file ({e})"),
            crate::quote::shown(path),
            "make it readable, or name another with --config",
        )
    })?;
    // Where each line starts, found once: a line number is then a binary search, so that a
    // file of many profiles is read in time linear in its size, not quadratic.
    let starts: Vec<usize> = std::iter::once(0)
        .chain(text.match_indices('\n').map(|(i, _)| i + 1))
        .collect();
    let line_of = |span: std::ops::Range<usize>| starts.partition_point(|&s| s <= span.start);
    let at = |line: usize| format!("{}:{line}", crate::quote::shown(path));
    let table = DeTable::parse(&text).map_err(|e| {
        let line = e.span().map(&line_of);
        let place = line.map_or(crate::quote::shown(path), at);
        let shown = line
            .and_then(|n| text.lines().nth(n - 1))
            .unwrap_or_default()
            .trim();
        // A line of a few hundred characters at most, escaped: it may be megabytes of one
        // array, or hold what could end the message's line.
        let cut = shown
            .char_indices()
            .nth(SHOWN_LINE)
            .map_or(shown, |(at, _)| &shown[..at]);
        let more = if cut.len() < shown.len() { "…" } else { "" };
        let shown = format!("{}{more}", crate::quote::clean(cut));
        let why = crate::quote::clean(&e.message().trim().replace('\n', " ")).into_owned();
        UsageError(format!("{place}: not valid TOML: {shown}; {why}"))
    })?;
    // One parser for every setting: building clap's command costs far more than a parse,
    // and a file may hold thousands of settings.
    let mut command = cli::parsing_command();
    let mut defaults = Vec::new();
    let mut profiles = BTreeMap::new();
    for (key, value) in table.get_ref() {
        let name = key.get_ref().as_ref();
        let line = line_of(key.span());
        if name == "profile" {
            // One spelling, the documented one: a top-level `profile` would read as choosing
            // a profile, which only -p does.
            let example = match value.get_ref() {
                DeValue::Table(t) => t.iter().next().map(|(k, _)| k.get_ref().to_string()),
                _ => None,
            };
            let example = example.unwrap_or_else(|| "ci".into());
            return Err(UsageError(format!(
                "{}: {}",
                at(line),
                BadValue::new(
                    "not a setting",
                    "profile",
                    format!("profiles are [profiles.NAME] tables, as [profiles.{example}]")
                )
            )));
        }
        if name == "profiles" {
            let DeValue::Table(each) = value.get_ref() else {
                return Err(UsageError(format!(
                    "{}: not a table of profiles: profiles; write [profiles.NAME] tables, as [profiles.ci]",
                    at(line)
                )));
            };
            for (profile, settings) in each {
                let DeValue::Table(settings) = settings.get_ref() else {
                    return Err(UsageError(format!(
                        "{}: not a table: profile {}; write its settings under [profiles.{}]",
                        at(line_of(profile.span())),
                        profile.get_ref(),
                        profile.get_ref()
                    )));
                };
                let checked = settings
                    .iter()
                    .map(|(k, v)| {
                        let line = line_of(k.span());
                        setting(k.get_ref(), v.get_ref(), line, path, &mut command)
                    })
                    .collect::<Result<Vec<_>, _>>()
                    .and_then(|checked| exclusive(&checked, path).map(|()| checked));
                profiles.insert(profile.get_ref().to_string(), checked);
            }
        } else {
            defaults.push(setting(name, value.get_ref(), line, path, &mut command)?);
        }
    }
    exclusive(&defaults, path)?;
    Ok((defaults, profiles))
}

/// Refuses two settings of one table that exclude each other (`attempts` and `forever`): the
/// command line could not take both either.
fn exclusive(settings: &[Setting], path: &Path) -> Result<(), UsageError> {
    for (i, later) in settings.iter().enumerate() {
        let group = EXCLUSIVE.iter().find(|g| g.contains(&later.key.as_str()));
        let earlier = settings[..i]
            .iter()
            .find(|s| group.is_some_and(|g| g.contains(&s.key.as_str())));
        if let Some(earlier) = earlier {
            return Err(UsageError(format!(
                "{}:{}: settings that exclude each other: {} and {} (line {}); keep one of them",
                crate::quote::shown(path),
                later.line,
                later.key,
                earlier.key,
                earlier.line
            )));
        }
    }
    Ok(())
}

/// The arguments a setting stands for, checked by `command`, the same parser as the command
/// line's.
fn setting(
    key: &str,
    value: &DeValue<'_>,
    line: usize,
    path: &Path,
    command: &mut clap::Command,
) -> Result<Setting, UsageError> {
    let place = format!("{}:{line}", crate::quote::shown(path));
    let bad =
        |what: &str, fix: &str| UsageError(format!("{place}: {}", BadValue::new(what, key, fix)));
    // Keys are named as the file writes them, without dashes.
    let name = |flag: &str| flag.trim_start_matches('-').to_string();
    let Some(arg) = command
        .get_arguments()
        .find(|a| a.get_long() == Some(key) && !NOT_SETTINGS.contains(&key))
    else {
        return Err(not_a_setting(key, &bad, name));
    };
    let args = arguments(key, arg.get_action(), value, &bad)?;
    // The same parser as the command line judges the value, so both say the same about it.
    let mut probe = vec![OsString::from("retry")];
    probe.extend(args.iter().cloned());
    probe.extend(["--".into(), "true".into()]);
    if let Err(e) = command.try_get_matches_from_mut(probe) {
        return Err(UsageError(format!(
            "{place}: {}",
            usage::describe(&e, name)
        )));
    }
    Ok(Setting {
        key: key.to_string(),
        args,
        line,
    })
}

/// The error for a key that is no setting: one that is a flag of the command line alone, or
/// no flag at all, with clap's suggestion of the flag meant.
fn not_a_setting(
    key: &str,
    bad: &impl Fn(&str, &str) -> UsageError,
    name: impl Fn(&str) -> String,
) -> UsageError {
    if NOT_SETTINGS.contains(&key) {
        return bad(
            "not a setting of a config file",
            "it chooses the file or what retry does; give it on the command line",
        );
    }
    // clap's own suggestion, as for a misspelled flag.
    let suggestion = cli::parsing_command()
        .try_get_matches_from([
            "retry".to_string(),
            format!("--{key}"),
            "--".into(),
            "true".into(),
        ])
        .err()
        .and_then(|e| usage::instead(&e, name));
    let fix = match suggestion {
        Some(key) => format!("did you mean {key}? Keys are the long flag names"),
        None => "keys are the long flag names, as attempts or max-time".into(),
    };
    bad("not a setting", &fix)
}

/// The arguments a value of the file stands for, as the flag's `action` takes it: a switch's
/// `--flag` or nothing, a count's flag repeated, a list's items, or the flag and its value.
fn arguments(
    key: &str,
    action: &ArgAction,
    value: &DeValue<'_>,
    bad: &impl Fn(&str, &str) -> UsageError,
) -> Result<Vec<OsString>, UsageError> {
    let flag = OsString::from(format!("--{key}"));
    Ok(match (action, value) {
        (ArgAction::SetTrue, DeValue::Boolean(true)) => vec![flag],
        (ArgAction::SetTrue, DeValue::Boolean(false)) => Vec::new(),
        (ArgAction::SetTrue, _) => return Err(bad("not true or false", "write true or false")),
        (ArgAction::Count, DeValue::Integer(n)) => {
            let n = n
                .as_str()
                .parse::<u8>()
                .map_err(|_| bad("not a small count", "write 0, 1 or 2"))?;
            vec![flag; usize::from(n)]
        }
        // `verbose = true`: once. Any other value of a flag that takes none would become the
        // command's name on the command line.
        (ArgAction::Count, DeValue::Boolean(b)) => vec![flag; usize::from(*b)],
        (ArgAction::Count, _) => return Err(bad("not a count", "write 1 or 2, or true")),
        (ArgAction::Append, DeValue::Array(items)) => {
            let mut args = Vec::new();
            for item in items {
                args.push(flag.clone());
                args.push(
                    scalar(item.get_ref())
                        .ok_or_else(|| bad("not a list of strings", "write [\"a\", \"b\"]"))?,
                );
            }
            args
        }
        (_, DeValue::Array(items)) => {
            let parts = items
                .iter()
                .map(|i| scalar(i.get_ref()))
                .collect::<Option<Vec<_>>>()
                .ok_or_else(|| {
                    bad(
                        "not a list of numbers or strings",
                        "write [1, 2] or \"1,2\"",
                    )
                })?;
            let joined = parts.join(std::ffi::OsStr::new(","));
            vec![flag, joined]
        }
        (_, value) => {
            let value = scalar(value).ok_or_else(|| {
                bad(
                    "not a number or a string",
                    "write it as on the command line",
                )
            })?;
            vec![flag, value]
        }
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
