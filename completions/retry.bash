# bash completion for retry                                -*- shell-script -*-
# Written by `retry --generate bash` from retry's flag definitions. retry's flags, and the
# values each takes; after `--`, or at the first word that is neither a flag nor a flag's
# value, the command and then its own completion, as for sudo and timeout.

_retry_profiles() {
    local config="${RETRY_CONFIG:-${XDG_CONFIG_HOME:-$HOME/.config}/retry/config.toml}"
    [[ -r $config ]] && sed -n 's/^[[:space:]]*\[profiles\.\([^]]*\)\].*/\1/p' "$config" 2>/dev/null
}

_retry() {
    local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]}
    local valued=' -n --attempts --retries -t --times --max-time --reset-after --attempt-timeout -d --delay -b --backoff --factor --max-delay --delays -j --jitter --splay --seed --success-on --retry-on --fatal-on --preset --retry-if-output --fatal-if-output --match-stream --retry-on-http --fatal-on-http --retry-after-max --kill-signal --kill-after --stdin --stdout --log-format --log-file --color --on-retry --on-giveup --hook-timeout --summary --metrics --name --key --state-dir --breaker-failures --breaker-window --breaker-open --breaker-open-max --budget-burst --budget-ratio --budget-refill --state --state-timeout --state-fail --config -p --profile --generate --fleet --outage --every --hosts --call-time --store-rate '
    local i=1 word start=
    COMPREPLY=()
    # Where the command begins: after --, or at the first word that is neither a flag nor a
    # flag's value. bash splits --flag=value into three words.
    while (( i < COMP_CWORD )); do
        word=${COMP_WORDS[i]}
        if [[ $word == -- ]]; then
            start=$(( i + 1 ))
            break
        elif [[ $word == --* && ${COMP_WORDS[i+1]} == = ]]; then
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
        elif [[ $prev == = && ${COMP_WORDS[COMP_CWORD-2]} == --* ]]; then
            flag=${COMP_WORDS[COMP_CWORD-2]}
        elif [[ $valued == *" $prev "* ]]; then
            flag=$prev
        elif [[ $cur == -* ]]; then
            COMPREPLY=( $(compgen -W '-n --attempts --retries --forever -t --times --max-time --reset-after --attempt-timeout -d --delay -b --backoff --factor --max-delay --delays -j --jitter --splay --seed --success-on --retry-on --fatal-on --preset --retry-if-output --fatal-if-output --match-stream --retry-on-http --fatal-on-http --retry-after-max --hints --kill-signal --kill-after --stdin --stdout --output-on-failure --stop-with-parent --no-stop-with-parent -v --verbose -q --quiet --log-format --log-file --log-time --color --on-retry --on-giveup --hook-timeout --summary --metrics --name --key --state-dir --breaker-failures --breaker-window --breaker-open --breaker-open-max --budget-burst --budget-ratio --budget-refill --state --state-timeout --state-fail --list-keys --reset-state --config --no-config -p --profile --generate --explain --fleet --outage --every --hosts --call-time --store-rate -h --help -V --version' -- "$cur") )
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
        -n|--attempts)
            COMPREPLY=() ;;
        --retries)
            COMPREPLY=() ;;
        -t|--times)
            COMPREPLY=() ;;
        --max-time)
            COMPREPLY=() ;;
        --reset-after)
            COMPREPLY=() ;;
        --attempt-timeout)
            COMPREPLY=() ;;
        -d|--delay)
            COMPREPLY=() ;;
        -b|--backoff)
            COMPREPLY=( $(compgen -W 'exponential linear constant fibonacci adaptive' -- "$cur") ) ;;
        --factor)
            COMPREPLY=() ;;
        --max-delay)
            COMPREPLY=() ;;
        --delays)
            COMPREPLY=() ;;
        -j|--jitter)
            COMPREPLY=( $(compgen -W 'none full equal decorrelated 10%' -- "$cur") ) ;;
        --splay)
            COMPREPLY=() ;;
        --seed)
            COMPREPLY=() ;;
        --success-on)
            COMPREPLY=() ;;
        --retry-on)
            COMPREPLY=() ;;
        --fatal-on)
            COMPREPLY=() ;;
        --preset)
            COMPREPLY=( $(compgen -W 'curl sysexits ssh git apt' -- "$cur") ) ;;
        --retry-if-output)
            COMPREPLY=() ;;
        --fatal-if-output)
            COMPREPLY=() ;;
        --match-stream)
            COMPREPLY=( $(compgen -W 'both stdout stderr' -- "$cur") ) ;;
        --retry-on-http)
            COMPREPLY=() ;;
        --fatal-on-http)
            COMPREPLY=() ;;
        --retry-after-max)
            COMPREPLY=() ;;
        --kill-signal)
            COMPREPLY=( $(compgen -W 'SIGHUP SIGINT SIGQUIT SIGILL SIGTRAP SIGABRT SIGBUS SIGFPE SIGKILL SIGUSR1 SIGSEGV SIGUSR2 SIGPIPE SIGALRM SIGTERM SIGSTKFLT SIGCHLD SIGCONT SIGSTOP SIGTSTP SIGTTIN SIGTTOU SIGURG SIGXCPU SIGXFSZ SIGVTALRM SIGPROF SIGWINCH SIGIO SIGPWR SIGSYS' -- "$cur") ) ;;
        --kill-after)
            COMPREPLY=() ;;
        --stdin)
            COMPREPLY=( $(compgen -W 'auto replay pass null' -- "$cur") ) ;;
        --stdout)
            COMPREPLY=( $(compgen -W 'pass hold' -- "$cur") ) ;;
        --log-format)
            COMPREPLY=( $(compgen -W 'text json' -- "$cur") ) ;;
        --log-file)
            compopt -o filenames 2>/dev/null; COMPREPLY=( $(compgen -f -- "$cur") ) ;;
        --color)
            COMPREPLY=( $(compgen -W 'auto always never' -- "$cur") ) ;;
        --on-retry)
            COMPREPLY=() ;;
        --on-giveup)
            COMPREPLY=() ;;
        --hook-timeout)
            COMPREPLY=() ;;
        --summary)
            compopt -o filenames 2>/dev/null; COMPREPLY=( $(compgen -f -- "$cur") ) ;;
        --metrics)
            compopt -o filenames 2>/dev/null; COMPREPLY=( $(compgen -f -- "$cur") ) ;;
        --name)
            COMPREPLY=() ;;
        --key)
            COMPREPLY=() ;;
        --state-dir)
            compopt -o filenames 2>/dev/null; COMPREPLY=( $(compgen -d -- "$cur") ) ;;
        --breaker-failures)
            COMPREPLY=() ;;
        --breaker-window)
            COMPREPLY=() ;;
        --breaker-open)
            COMPREPLY=() ;;
        --breaker-open-max)
            COMPREPLY=() ;;
        --budget-burst)
            COMPREPLY=() ;;
        --budget-ratio)
            COMPREPLY=() ;;
        --budget-refill)
            COMPREPLY=() ;;
        --state)
            COMPREPLY=() ;;
        --state-timeout)
            COMPREPLY=() ;;
        --state-fail)
            COMPREPLY=( $(compgen -W 'open closed' -- "$cur") ) ;;
        --config)
            compopt -o filenames 2>/dev/null; COMPREPLY=( $(compgen -f -- "$cur") ) ;;
        -p|--profile)
            COMPREPLY=( $(compgen -W "curl sysexits ssh git apt $(_retry_profiles)" -- "$cur") ) ;;
        --generate)
            COMPREPLY=( $(compgen -W 'man bash zsh fish elvish powershell' -- "$cur") ) ;;
        --fleet)
            COMPREPLY=() ;;
        --outage)
            COMPREPLY=() ;;
        --every)
            COMPREPLY=() ;;
        --hosts)
            COMPREPLY=() ;;
        --call-time)
            COMPREPLY=() ;;
        --store-rate)
            COMPREPLY=() ;;
    esac
    return 0
}

complete -F _retry retry
