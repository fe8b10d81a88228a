//! The bash, zsh and fish completions, written from the clap definition as those shells' own
//! completions for `sudo`, `nice` and `timeout` are written: retry's flags, with the values
//! each takes (a kind, a preset, a file; nothing for a number or a duration); and the command,
//! after `--` or at the first word that is neither a flag nor a flag's value, handed over to
//! its own completion (`retry -- git che<TAB>` and `retry git che<TAB>` complete as
//! `git che<TAB>` does). Flags hidden from the help (minfrin's, which are refused) are not
//! offered.

use clap::{Arg, ArgAction};

use super::cli;
use super::presets;

/// What a flag's value is completed with.
#[derive(Clone, Debug, PartialEq)]
enum Value {
    /// Nothing can be offered (a number, a duration, a list, a pattern, a name): nothing is,
    /// not even file names. The words say what to type.
    Typed(&'static str),
    /// One of these, each with a few words (empty when it has none).
    Choices(Vec<(String, String)>),
    Files,
    Directories,
    /// A built-in preset or a profile of the config file.
    Profiles,
}

/// One flag, as the completions offer it.
struct Flag {
    short: Option<char>,
    long: String,
    /// `None` for a flag that takes no value.
    value: Option<Value>,
    /// Given more than once (`-vv`, `--retry-if-output A --retry-if-output B`).
    repeats: bool,
    help: String,
}

/// Every flag the help shows, in the definition's order.
fn flags() -> Vec<Flag> {
    let mut cmd = cli::command();
    cmd.build();
    cmd.get_arguments()
        .filter(|a| !a.is_hide_set() && !a.is_positional())
        .filter_map(|a| {
            Some(Flag {
                short: a.get_short(),
                long: a.get_long()?.to_string(),
                value: a.get_action().takes_values().then(|| value(a)),
                repeats: matches!(a.get_action(), ArgAction::Count | ArgAction::Append),
                help: few_words(a),
            })
        })
        .collect()
}

fn value(arg: &Arg) -> Value {
    if arg.get_id() == "profile" {
        return Value::Profiles;
    }
    let choices: Vec<(String, String)> = arg
        .get_possible_values()
        .iter()
        .filter(|v| !v.is_hide_set())
        .map(|v| {
            let help = v.get_help().map(|h| h.to_string()).unwrap_or_default();
            (v.get_name().to_string(), help)
        })
        .collect();
    if !choices.is_empty() {
        return Value::Choices(choices);
    }
    let name = arg
        .get_value_names()
        .and_then(|names| names.first())
        .map_or("", |n| n.as_str());
    match name {
        "PATH" | "FILE" => Value::Files,
        "DIR" => Value::Directories,
        "DUR" => Value::Typed("a duration, as 250ms, 1.5s, 2m or 1h 30m"),
        "N" | "H" => Value::Typed("a whole number"),
        "F" => Value::Typed("a number"),
        "LIST" => Value::Typed("statuses and ranges, as 1,5-7,75"),
        "REGEX" => Value::Typed("a regular expression"),
        "CMD" => Value::Typed("a shell command"),
        "URL" => Value::Typed("a redis:// URL"),
        _ => Value::Typed("a name"),
    }
}

/// A flag's help in a few words: `-h`'s, or its first clause, within [`FEW`] characters.
fn few_words(arg: &Arg) -> String {
    if let Some(short) = cli::short_help(arg.get_id().as_str()) {
        return short.to_string();
    }
    let help = arg.get_help().map(|h| h.to_string()).unwrap_or_default();
    // The first sentence ("e.g. " does not end one), to its first semicolon or default.
    let mut end = help.len();
    for sep in [". ", "; ", " ["] {
        let mut from = 0;
        while let Some(at) = help[from..end].find(sep).map(|i| i + from) {
            if sep == ". " && help[..at].ends_with("e.g") {
                from = at + 1;
                continue;
            }
            end = at;
            break;
        }
    }
    let mut words = help[..end].trim_end_matches('.').to_string();
    while words.chars().count() > FEW {
        // Cut before what follows a colon, else before the last aside or word.
        let cut = match words.find(": ") {
            Some(at) if at >= 20 => at,
            _ => [" (", ", ", " "]
                .iter()
                .find_map(|sep| words.rfind(sep))
                .unwrap_or(FEW),
        };
        words.truncate(cut);
        // No little word left dangling at the end.
        while let Some((rest, last)) = words.rsplit_once(' ')
            && DANGLING.contains(&last)
        {
            words.truncate(rest.len());
        }
    }
    words
}

/// Words a description does not end with.
const DANGLING: [&str; 14] = [
    "a", "an", "and", "by", "for", "in", "its", "of", "or", "the", "to", "with", "within",
    "without",
];

/// The longest description a completion shows beside a flag.
const FEW: usize = 72;

/// The flags whose value is the next word, as they are typed: `-n`, `--attempts`.
fn valued(flags: &[Flag]) -> Vec<String> {
    let mut words = Vec::new();
    for flag in flags.iter().filter(|f| f.value.is_some()) {
        words.extend(flag.short.map(|s| format!("-{s}")));
        words.push(format!("--{}", flag.long));
    }
    words
}

fn presets() -> String {
    presets::names().join(" ")
}

/// The config file the profiles are read from, in a POSIX shell's words.
const CONFIG_SH: &str = "${RETRY_CONFIG:-${XDG_CONFIG_HOME:-$HOME/.config}/retry/config.toml}";

/// The sed script that prints the names of a config file's `[profiles.NAME]` tables.
const PROFILES_SED: &str = r"s/^[[:space:]]*\[profiles\.\([^]]*\)\].*/\1/p";

/// The `case` arm of a flag that takes a value: what completes the value.
fn bash_case(flag: &Flag) -> String {
    let names = match flag.short {
        Some(s) => format!("-{s}|--{}", flag.long),
        None => format!("--{}", flag.long),
    };
    let action = match flag.value.as_ref() {
        Some(Value::Choices(choices)) => {
            let words: Vec<&str> = choices.iter().map(|(n, _)| n.as_str()).collect();
            format!(
                "COMPREPLY=( $(compgen -W '{}' -- \"$cur\") )",
                words.join(" ")
            )
        }
        Some(Value::Files) => {
            "compopt -o filenames 2>/dev/null; COMPREPLY=( $(compgen -f -- \"$cur\") )".into()
        }
        Some(Value::Directories) => {
            "compopt -o filenames 2>/dev/null; COMPREPLY=( $(compgen -d -- \"$cur\") )".into()
        }
        Some(Value::Profiles) => format!(
            "COMPREPLY=( $(compgen -W \"{} $(_retry_profiles)\" -- \"$cur\") )",
            presets()
        ),
        // A number, a duration: nothing to offer, and no file names.
        Some(Value::Typed(_)) | None => "COMPREPLY=()".into(),
    };
    format!("        {names})\n            {action} ;;\n")
}

/// The bash script. With bash-completion (which a desktop has), the command's own completion
/// comes through its `_command_offset`; without it, command names, then file names.
pub fn bash() -> String {
    let flags = flags();
    let valued = valued(&flags);
    let mut all = Vec::new();
    for flag in &flags {
        all.extend(flag.short.map(|s| format!("-{s}")));
        all.push(format!("--{}", flag.long));
    }
    let cases: String = flags
        .iter()
        .filter(|f| f.value.is_some())
        .map(bash_case)
        .collect();
    format!(
        r#"# bash completion for retry                                -*- shell-script -*-
# Written by `retry --generate bash` from retry's flag definitions. retry's flags, and the
# values each takes; after `--`, or at the first word that is neither a flag nor a flag's
# value, the command and then its own completion, as for sudo and timeout.

_retry_profiles() {{
    local config="{CONFIG_SH}"
    [[ -r $config ]] && sed -n '{PROFILES_SED}' "$config" 2>/dev/null
}}

_retry() {{
    local cur=${{COMP_WORDS[COMP_CWORD]}} prev=${{COMP_WORDS[COMP_CWORD-1]}}
    local valued=' {valued} '
    local i=1 word start=
    COMPREPLY=()
    # Where the command begins: after --, or at the first word that is neither a flag nor a
    # flag's value. bash splits --flag=value into three words.
    while (( i < COMP_CWORD )); do
        word=${{COMP_WORDS[i]}}
        if [[ $word == -- ]]; then
            start=$(( i + 1 ))
            break
        elif [[ $word == --* && ${{COMP_WORDS[i+1]}} == = ]]; then
            (( i += 2 ))
        elif [[ $word == -* ]]; then
            [[ $valued == *" $word "* ]] && (( i++ ))
        else
            start=$i
            break
        fi
        (( i++ ))
    done
    local flag=
    if [[ -z $start ]]; then
        if [[ $cur == = && $prev == --* ]]; then
            flag=$prev cur=
        elif [[ $prev == = && ${{COMP_WORDS[COMP_CWORD-2]}} == --* ]]; then
            flag=${{COMP_WORDS[COMP_CWORD-2]}}
        elif [[ $valued == *" $prev "* ]]; then
            flag=$prev
        elif [[ $cur == -* ]]; then
            COMPREPLY=( $(compgen -W '{all}' -- "$cur") )
            return 0
        else
            start=$COMP_CWORD
        fi
    fi
    if [[ -n $start ]]; then
        if declare -F _command_offset >/dev/null; then
            _command_offset "$start"
        elif (( start == COMP_CWORD )); then
            COMPREPLY=( $(compgen -c -- "$cur") )
        else
            compopt -o filenames 2>/dev/null
            COMPREPLY=( $(compgen -f -- "$cur") )
        fi
        return 0
    fi
    case $flag in
{cases}    esac
    return 0
}}

complete -F _retry retry
"#,
        valued = valued.join(" "),
        all = all.join(" "),
    )
}

/// Text inside zsh's single quotes.
fn zsh_quoted(text: &str) -> String {
    text.replace('\'', r"'\''")
}

/// A value's description inside the double quotes of an `_arguments` `((value\:"..."))`
/// list, which zsh expands: nothing in it may be taken for an expansion, nor a colon for the
/// end of the spec.
fn zsh_double_quoted(text: &str) -> String {
    let mut out = String::new();
    for c in text.chars() {
        if matches!(c, '\\' | '"' | '`' | '$' | ':') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// An option's description inside `[...]` of an `_arguments` spec.
fn zsh_description(text: &str) -> String {
    let mut out = String::new();
    for c in text.chars() {
        if matches!(c, '[' | ']' | ':' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    zsh_quoted(&out)
}

/// A flag's `_arguments` specs, one a spelling (`-n` and `--attempts`): what it excludes,
/// its help, and what completes its value.
fn zsh_spec(flag: &Flag) -> String {
    let spellings: Vec<String> = flag
        .short
        .map(|s| format!("-{s}"))
        .into_iter()
        .chain([format!("--{}", flag.long)])
        .collect();
    let exclusion = if flag.repeats {
        "*".to_string()
    } else if flag.long == "help" || flag.long == "version" {
        "(- *)".to_string()
    } else {
        format!("({})", spellings.join(" "))
    };
    let action = flag.value.as_ref().map_or(String::new(), zsh_action);
    let mut specs = String::new();
    for spelling in &spellings {
        // -n3 and -n 3; --attempts=3 and --attempts 3.
        let takes = match (&flag.value, spelling.starts_with("--")) {
            (None, _) => "",
            (Some(_), true) => "=",
            (Some(_), false) => "+",
        };
        specs.push_str(&format!(
            "    '{exclusion}{spelling}{takes}[{}]{action}'\n",
            zsh_description(&flag.help)
        ));
    }
    specs
}

/// The part of a spec that completes a flag's value: its description and its action.
fn zsh_action(value: &Value) -> String {
    let (message, action) = match value {
        Value::Typed(what) => (*what, "( )".to_string()),
        Value::Choices(choices) if choices.iter().any(|(_, h)| !h.is_empty()) => {
            let items: Vec<String> = choices
                .iter()
                .map(|(n, h)| format!("{n}\\:\"{}\"", zsh_quoted(&zsh_double_quoted(h))))
                .collect();
            ("value", format!("(({}))", items.join(" ")))
        }
        Value::Choices(choices) => {
            let names: Vec<&str> = choices.iter().map(|(n, _)| n.as_str()).collect();
            ("value", format!("({})", names.join(" ")))
        }
        Value::Files => ("file", "_files".into()),
        Value::Directories => ("directory", "_files -/".into()),
        Value::Profiles => ("profile or preset", "_retry_profiles".into()),
    };
    format!(":{}:{action}", zsh_description(message))
}

/// The zsh script: one `_arguments` spec a spelling of a flag, then the command's name and
/// its own completion (`_normal`), as zsh's `_sudo` does.
pub fn zsh() -> String {
    let flags = flags();
    let valued = valued(&flags);
    let specs: String = flags.iter().map(zsh_spec).collect();
    format!(
        r#"#compdef retry
# zsh completion for retry, written by `retry --generate zsh` from retry's flag definitions.
# retry's flags, and the values each takes; after `--`, or at the first word that is neither
# a flag nor a flag's value, the command and then its own completion, as for sudo and nice.

(( $+functions[_retry_profiles] )) ||
_retry_profiles() {{
    local config="{CONFIG_SH}"
    local -a profiles
    profiles=( {presets} )
    [[ -r $config ]] && profiles+=( ${{(f)"$(sed -n '{PROFILES_SED}' "$config" 2>/dev/null)"}} )
    _describe -t profiles 'profile or preset' profiles
}}

_retry() {{
    local valued=' {valued} '
    local -i i=2 start=0
    # Where the command begins: after --, or at the first word that is neither a flag nor a
    # flag's value; from there on, the command's own completion (zsh's _nice does the same).
    while (( i < CURRENT )); do
        if [[ $words[i] == -- ]]; then
            start=$(( i + 1 ))
            break
        elif [[ $words[i] == -* ]]; then
            [[ $valued == *" $words[i] "* ]] && (( i++ ))
        else
            start=$i
            break
        fi
        (( i++ ))
    done
    if (( ! start )) && [[ $words[CURRENT] != -* && $valued != *" $words[CURRENT-1] "* ]]; then
        start=$CURRENT
    fi
    if (( start )); then
        shift $(( start - 1 )) words
        (( CURRENT -= start - 1 ))
        _normal
        return
    fi
    local -a args
    args=(
{specs}    )
    _arguments -s : "${{args[@]}}"
}}

if [[ $funcstack[1] == _retry ]]; then
    _retry "$@"
else
    compdef _retry retry
fi
"#,
        presets = presets(),
        valued = valued.join(" "),
    )
}

/// Text inside fish's single quotes.
fn fish_quoted(text: &str) -> String {
    text.replace('\\', r"\\").replace('\'', r"\'")
}

/// A flag's `complete` line: its spellings, what its value is, and its help.
fn fish_line(flag: &Flag) -> String {
    let mut line = String::from("complete -c retry -n 'not __retry_command_started'");
    if let Some(s) = flag.short {
        line.push_str(&format!(" -s {s}"));
    }
    line.push_str(&format!(" -l {}", flag.long));
    match &flag.value {
        None => {}
        Some(Value::Typed(_)) => line.push_str(" -x"),
        Some(Value::Choices(_)) => {
            line.push_str(&format!(" -x -a '(__retry_values {})'", flag.long));
        }
        Some(Value::Files) => line.push_str(" -r -F"),
        Some(Value::Directories) => line.push_str(" -x -a '(__fish_complete_directories)'"),
        Some(Value::Profiles) => line.push_str(" -x -a '(__retry_profiles)'"),
    }
    line.push_str(&format!(" -d '{}'\n", fish_quoted(&flag.help)));
    line
}

/// A flag's case of `__retry_values`, each choice with its help; nothing for a flag whose
/// value is not one of a list.
fn fish_values(flag: &Flag) -> String {
    let Some(Value::Choices(choices)) = &flag.value else {
        return String::new();
    };
    let mut values = format!("        case {}\n", flag.long);
    for (name, help) in choices {
        values.push_str(&format!(
            "            printf '%s\\t%s\\n' '{}' '{}'\n",
            fish_quoted(name),
            fish_quoted(help)
        ));
    }
    values
}

/// The fish script: each flag offered until the command begins, then the command's own
/// completion, as fish's `sudo` completion hands over.
pub fn fish() -> String {
    let flags = flags();
    let lines: String = flags.iter().map(fish_line).collect();
    let values: String = flags.iter().map(fish_values).collect();
    let valued = valued(&flags);
    format!(
        r#"# fish completion for retry, written by `retry --generate fish` from retry's flag
# definitions. retry's flags, and the values each takes; after `--`, or at the first word that
# is neither a flag nor a flag's value, the command and then its own completion, as for sudo.

# The command's words, from its name, when the command has begun before the word being
# completed: after --, or at the first word that is neither a flag nor a flag's value.
function __retry_command_words
    set -l tokens (commandline -opc)
    set -l valued {valued}
    set -l i 2
    while test $i -le (count $tokens)
        set -l token $tokens[$i]
        if test "$token" = --
            set i (math $i + 1)
            break
        else if string match -q -- '-*' $token
            contains -- $token $valued; and set i (math $i + 1)
        else
            break
        end
        set i (math $i + 1)
    end
    test $i -le (count $tokens); or return 1
    printf '%s\n' $tokens[$i..-1]
end

function __retry_command_started
    __retry_command_words >/dev/null
end

# The word being completed is the command's name: nothing before it has begun the command,
# it is not a flag, nor the value of the flag before it.
function __retry_at_command
    __retry_command_started; and return 1
    string match -q -- '-*' (commandline -ct); and return 1
    set -l before (commandline -opc)[-1]
    test "$before" = --; and return 0
    not contains -- $before {valued}
end

# The command's own completion of its words and of the word being completed.
function __retry_complete_command
    set -l words (__retry_command_words)
    set -l line (string escape -- $words) (commandline -ct)
    complete -C (string join ' ' -- $line)
end

function __retry_profiles
    set -l config $RETRY_CONFIG
    if test -z "$config"
        set -l home $XDG_CONFIG_HOME
        test -n "$home"; or set home $HOME/.config
        set config $home/retry/config.toml
    end
    printf '%s\tpreset\n' {presets}
    test -r "$config"; or return 0
    string replace -rf '^\s*\[profiles\.([^\]]+)\].*' '$1\tprofile' <$config
end

# The values a flag takes, each with a few words.
function __retry_values
    switch $argv[1]
{values}    end
end

complete -c retry -f
{lines}complete -c retry -n '__retry_command_started; or __retry_at_command' -x -a '(__retry_complete_command)'
"#,
        valued = valued.join(" "),
        presets = presets(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Counts and durations offer nothing (not file names); kinds their names; files files.
    #[test]
    fn each_flag_offers_what_its_value_can_be() {
        let flags = flags();
        let value = |long: &str| {
            flags
                .iter()
                .find(|f| f.long == long)
                .and_then(|f| f.value.clone())
                .unwrap_or_else(|| panic!("--{long} takes a value"))
        };
        for long in [
            "attempts", "times", "delay", "max-time", "factor", "retry-on", "key",
        ] {
            assert!(matches!(value(long), Value::Typed(_)), "--{long}");
        }
        for (long, choice) in [
            ("backoff", "fibonacci"),
            ("jitter", "decorrelated"),
            ("preset", "curl"),
            ("log-format", "json"),
            ("stdin", "replay"),
            ("stdout", "hold"),
            ("kill-signal", "SIGTERM"),
            ("state-fail", "closed"),
            ("match-stream", "stderr"),
            ("generate", "zsh"),
        ] {
            match value(long) {
                Value::Choices(c) => assert!(c.iter().any(|(n, _)| n == choice), "--{long}"),
                other => panic!("--{long}: {other:?}"),
            }
        }
        assert_eq!(value("log-file"), Value::Files);
        assert_eq!(value("state-dir"), Value::Directories);
        assert_eq!(value("profile"), Value::Profiles);
        assert!(
            flags
                .iter()
                .all(|f| !["until", "while", "message"].contains(&f.long.as_str()))
        );
        assert!(
            flags
                .iter()
                .all(|f| !f.help.is_empty() && f.help.chars().count() <= FEW),
            "{:?}",
            flags.iter().map(|f| &f.help).collect::<Vec<_>>()
        );
    }
}
