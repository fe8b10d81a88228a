//! What the shells' completions need beyond what clap_complete writes from the definition:
//! after `--`, the wrapped command (a name on PATH, then that command's own completion, as
//! `sudo`, `timeout` and `nohup` do), and the config file's profiles after `-p`.

use super::presets;

/// The bash script: clap_complete's, with a function in front that hands over to the
/// command's completion after `--` and lists the profiles after `-p`. `_command_offset` comes
/// with bash-completion; without it, command names from PATH, then file names.
pub fn bash(generated: &str) -> String {
    // clap_complete registers `_retry`; the function below, which calls it, takes its place.
    let generated = generated.replace("complete -F _retry ", "complete -F _retry_command ");
    let presets = preset_names();
    // The function is defined before clap_complete's `complete` lines name it.
    let (functions, registration) = generated
        .rsplit_once("\nif [[ \"${BASH_VERSINFO[0]}\"")
        .map_or((generated.as_str(), String::new()), |(f, r)| {
            (f, format!("if [[ \"${{BASH_VERSINFO[0]}}\"{r}"))
        });
    format!(
        r#"{functions}

# After `--`: the command, and then its own completion, as for sudo and timeout.
_retry_command() {{
    local i cur="${{COMP_WORDS[COMP_CWORD]}}"
    for (( i = 1; i < COMP_CWORD; i++ )); do
        if [[ ${{COMP_WORDS[i]}} == -- ]]; then
            if declare -F _command_offset >/dev/null; then
                _command_offset $(( i + 1 ))
            elif (( COMP_CWORD == i + 1 )); then
                COMPREPLY=( $(compgen -c -- "$cur") )
            else
                COMPREPLY=( $(compgen -f -- "$cur") )
            fi
            return 0
        fi
    done
    case "${{COMP_WORDS[COMP_CWORD-1]}}" in
        -p|--profile)
            local config="${{RETRY_CONFIG:-${{XDG_CONFIG_HOME:-$HOME/.config}}/retry/config.toml}}"
            local profiles
            profiles=$(sed -n 's/^[[:space:]]*\[profiles\.\([^]]*\)\].*/\1/p' "$config" 2>/dev/null)
            COMPREPLY=( $(compgen -W "{presets} $profiles" -- "$cur") )
            return 0
            ;;
    esac
    _retry "$@"
}}

{registration}"#
    )
}

/// The fish script: clap_complete's, and after `--` the command with its own completion.
pub fn fish(generated: &str) -> String {
    let presets = preset_names();
    format!(
        r#"{generated}
# After `--`: the command, and then its own completion, as for sudo and timeout.
function __retry_after_dashdash
    set -l tokens (commandline -opc)
    set -l at (contains -i -- -- $tokens)
    and __fish_complete_subcommand --fcs-skip=$at
end
complete -c retry -n 'contains -- -- (commandline -opc)' -f -a '(__retry_after_dashdash)'
# The config file's profiles, beside the presets.
function __retry_profiles
    set -l config $RETRY_CONFIG
    test -n "$config"; or set config (set -q XDG_CONFIG_HOME; and echo $XDG_CONFIG_HOME; or echo $HOME/.config)/retry/config.toml
    string replace -rf '^\s*\[profiles\.([^\]]+)\].*' '$1' <$config 2>/dev/null
end
complete -c retry -s p -l profile -x -a '{presets} (__retry_profiles)'
"#
    )
}

fn preset_names() -> String {
    presets::names().join(" ")
}
