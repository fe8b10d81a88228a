_retry() {
    local i cur prev opts cmd
    COMPREPLY=()
    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
        cur="$2"
    else
        cur="${COMP_WORDS[COMP_CWORD]}"
    fi
    prev="$3"
    cmd=""
    opts=""

    for i in "${COMP_WORDS[@]:0:COMP_CWORD}"
    do
        case "${cmd},${i}" in
            ",$1")
                cmd="retry"
                ;;
            *)
                ;;
        esac
    done

    case "${cmd}" in
        retry)
            opts="-n -t -d -b -j -v -q -p -u -w -m -h -V --attempts --retries --forever --times --max-time --reset-after --attempt-timeout --delay --backoff --factor --max-delay --delays --jitter --seed --success-on --retry-on --fatal-on --preset --retry-if-output --fatal-if-output --match-stream --retry-on-http --fatal-on-http --retry-after-max --hints --kill-signal --kill-after --stdin --stdout --output-on-failure --verbose --quiet --log-format --log-file --log-time --on-retry --on-giveup --hook-timeout --summary --metrics --name --key --state-dir --breaker-failures --breaker-window --breaker-open --breaker-open-max --budget-burst --budget-ratio --budget-refill --state --state-timeout --state-fail --list-keys --reset-state --config --no-config --profile --generate --explain --fleet --outage --every --hosts --splay --call-time --until --while --message --help --version"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 1 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --attempts)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -n)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --retries)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --times)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -t)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --max-time)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --reset-after)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --attempt-timeout)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --delay)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -d)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --backoff)
                    COMPREPLY=($(compgen -W "exponential linear constant fibonacci adaptive" -- "${cur}"))
                    return 0
                    ;;
                -b)
                    COMPREPLY=($(compgen -W "exponential linear constant fibonacci adaptive" -- "${cur}"))
                    return 0
                    ;;
                --factor)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --max-delay)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --delays)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --jitter)
                    COMPREPLY=($(compgen -W "none full equal decorrelated 10%" -- "${cur}"))
                    return 0
                    ;;
                -j)
                    COMPREPLY=($(compgen -W "none full equal decorrelated 10%" -- "${cur}"))
                    return 0
                    ;;
                --seed)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --success-on)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --retry-on)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --fatal-on)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --preset)
                    COMPREPLY=($(compgen -W "curl sysexits ssh git apt" -- "${cur}"))
                    return 0
                    ;;
                --retry-if-output)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --fatal-if-output)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --match-stream)
                    COMPREPLY=($(compgen -W "both stdout stderr" -- "${cur}"))
                    return 0
                    ;;
                --retry-on-http)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --fatal-on-http)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --retry-after-max)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --kill-signal)
                    COMPREPLY=($(compgen -W "SIGHUP SIGINT SIGQUIT SIGILL SIGTRAP SIGABRT SIGBUS SIGFPE SIGKILL SIGUSR1 SIGSEGV SIGUSR2 SIGPIPE SIGALRM SIGTERM SIGSTKFLT SIGCHLD SIGCONT SIGSTOP SIGTSTP SIGTTIN SIGTTOU SIGURG SIGXCPU SIGXFSZ SIGVTALRM SIGPROF SIGWINCH SIGIO SIGPWR SIGSYS" -- "${cur}"))
                    return 0
                    ;;
                --kill-after)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --stdin)
                    COMPREPLY=($(compgen -W "auto replay pass null" -- "${cur}"))
                    return 0
                    ;;
                --stdout)
                    COMPREPLY=($(compgen -W "pass hold" -- "${cur}"))
                    return 0
                    ;;
                --log-format)
                    COMPREPLY=($(compgen -W "text json" -- "${cur}"))
                    return 0
                    ;;
                --log-file)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --on-retry)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --on-giveup)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --hook-timeout)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --summary)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --metrics)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --name)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --key)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --state-dir)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --breaker-failures)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --breaker-window)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --breaker-open)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --breaker-open-max)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --budget-burst)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --budget-ratio)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --budget-refill)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --state)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --state-timeout)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --state-fail)
                    COMPREPLY=($(compgen -W "open closed" -- "${cur}"))
                    return 0
                    ;;
                --config)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --profile)
                    COMPREPLY=($(compgen -W "curl sysexits ssh git apt" -- "${cur}"))
                    return 0
                    ;;
                -p)
                    COMPREPLY=($(compgen -W "curl sysexits ssh git apt" -- "${cur}"))
                    return 0
                    ;;
                --generate)
                    COMPREPLY=($(compgen -W "man bash zsh fish elvish powershell" -- "${cur}"))
                    return 0
                    ;;
                --fleet)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --outage)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --every)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --hosts)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --splay)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --call-time)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --until)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -u)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --while)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -w)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --message)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -m)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
    esac
}


# After `--`: the command, and then its own completion, as for sudo and timeout.
_retry_command() {
    local i cur="${COMP_WORDS[COMP_CWORD]}"
    for (( i = 1; i < COMP_CWORD; i++ )); do
        if [[ ${COMP_WORDS[i]} == -- ]]; then
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
    case "${COMP_WORDS[COMP_CWORD-1]}" in
        -p|--profile)
            local config="${RETRY_CONFIG:-${XDG_CONFIG_HOME:-$HOME/.config}/retry/config.toml}"
            local profiles
            profiles=$(sed -n 's/^[[:space:]]*\[profiles\.\([^]]*\)\].*/\1/p' "$config" 2>/dev/null)
            COMPREPLY=( $(compgen -W "curl sysexits ssh git apt $profiles" -- "$cur") )
            return 0
            ;;
    esac
    _retry "$@"
}

if [[ "${BASH_VERSINFO[0]}" -eq 4 && "${BASH_VERSINFO[1]}" -ge 4 || "${BASH_VERSINFO[0]}" -gt 4 ]]; then
    complete -F _retry_command -o nosort -o bashdefault -o default retry
else
    complete -F _retry_command -o bashdefault -o default retry
fi
