# fish completion for retry, written by `retry --generate fish` from retry's flag
# definitions. retry's flags, and the values each takes; after `--`, or at the first word that
# is neither a flag nor a flag's value, the command and then its own completion, as for sudo.

# The command's words, from its name, when the command has begun before the word being
# completed: after --, or at the first word that is neither a flag nor a flag's value.
function __retry_command_words
    set -l tokens (commandline -opc)
    set -l valued -n --attempts --retries -t --times --max-time --reset-after --attempt-timeout -d --delay -b --backoff --factor --max-delay --delays -j --jitter --splay --seed --success-on --retry-on --fatal-on --preset --retry-if-output --fatal-if-output --match-stream --retry-on-http --fatal-on-http --retry-after-max --kill-signal --kill-after --stdin --stdout --log-format --log-file --color --on-retry --on-giveup --hook-timeout --summary --metrics --name --key --state-dir --breaker-failures --breaker-window --breaker-open --breaker-open-max --budget-burst --budget-ratio --budget-refill --state --state-timeout --state-fail --config -p --profile --generate --fleet --outage --every --hosts --call-time --store-rate
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
    not contains -- $before -n --attempts --retries -t --times --max-time --reset-after --attempt-timeout -d --delay -b --backoff --factor --max-delay --delays -j --jitter --splay --seed --success-on --retry-on --fatal-on --preset --retry-if-output --fatal-if-output --match-stream --retry-on-http --fatal-on-http --retry-after-max --kill-signal --kill-after --stdin --stdout --log-format --log-file --color --on-retry --on-giveup --hook-timeout --summary --metrics --name --key --state-dir --breaker-failures --breaker-window --breaker-open --breaker-open-max --budget-burst --budget-ratio --budget-refill --state --state-timeout --state-fail --config -p --profile --generate --fleet --outage --every --hosts --call-time --store-rate
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
    printf '%s\tpreset\n' curl sysexits ssh git apt
    test -r "$config"; or return 0
    string replace -rf '^\s*\[profiles\.([^\]]+)\].*' '$1\tprofile' <$config
end

# The values a flag takes, each with a few words.
function __retry_values
    switch $argv[1]
        case backoff
            printf '%s\t%s\n' 'exponential' 'delay * factor^(k-1)'
            printf '%s\t%s\n' 'linear' 'delay * k'
            printf '%s\t%s\n' 'constant' 'always delay'
            printf '%s\t%s\n' 'fibonacci' 'delay * 1, 2, 3, 5, 8, ...'
            printf '%s\t%s\n' 'adaptive' 'learned from the key\'s recent outcomes (needs --key; experimental)'
        case jitter
            printf '%s\t%s\n' 'none' ''
            printf '%s\t%s\n' 'full' ''
            printf '%s\t%s\n' 'equal' ''
            printf '%s\t%s\n' 'decorrelated' ''
            printf '%s\t%s\n' '10%' ''
        case preset
            printf '%s\t%s\n' 'curl' ''
            printf '%s\t%s\n' 'sysexits' ''
            printf '%s\t%s\n' 'ssh' ''
            printf '%s\t%s\n' 'git' ''
            printf '%s\t%s\n' 'apt' ''
        case match-stream
            printf '%s\t%s\n' 'both' ''
            printf '%s\t%s\n' 'stdout' ''
            printf '%s\t%s\n' 'stderr' ''
        case kill-signal
            printf '%s\t%s\n' 'SIGHUP' ''
            printf '%s\t%s\n' 'SIGINT' ''
            printf '%s\t%s\n' 'SIGQUIT' ''
            printf '%s\t%s\n' 'SIGILL' ''
            printf '%s\t%s\n' 'SIGTRAP' ''
            printf '%s\t%s\n' 'SIGABRT' ''
            printf '%s\t%s\n' 'SIGBUS' ''
            printf '%s\t%s\n' 'SIGFPE' ''
            printf '%s\t%s\n' 'SIGKILL' ''
            printf '%s\t%s\n' 'SIGUSR1' ''
            printf '%s\t%s\n' 'SIGSEGV' ''
            printf '%s\t%s\n' 'SIGUSR2' ''
            printf '%s\t%s\n' 'SIGPIPE' ''
            printf '%s\t%s\n' 'SIGALRM' ''
            printf '%s\t%s\n' 'SIGTERM' ''
            printf '%s\t%s\n' 'SIGSTKFLT' ''
            printf '%s\t%s\n' 'SIGCHLD' ''
            printf '%s\t%s\n' 'SIGCONT' ''
            printf '%s\t%s\n' 'SIGSTOP' ''
            printf '%s\t%s\n' 'SIGTSTP' ''
            printf '%s\t%s\n' 'SIGTTIN' ''
            printf '%s\t%s\n' 'SIGTTOU' ''
            printf '%s\t%s\n' 'SIGURG' ''
            printf '%s\t%s\n' 'SIGXCPU' ''
            printf '%s\t%s\n' 'SIGXFSZ' ''
            printf '%s\t%s\n' 'SIGVTALRM' ''
            printf '%s\t%s\n' 'SIGPROF' ''
            printf '%s\t%s\n' 'SIGWINCH' ''
            printf '%s\t%s\n' 'SIGIO' ''
            printf '%s\t%s\n' 'SIGPWR' ''
            printf '%s\t%s\n' 'SIGSYS' ''
        case stdin
            printf '%s\t%s\n' 'auto' 'Rewind a regular file, replay a pipe or socket, pass a terminal or device through'
            printf '%s\t%s\n' 'replay' 'Record what the attempts read and feed it again to the next one'
            printf '%s\t%s\n' 'pass' 'Every attempt reads retry\'s own stdin directly; what one read, the next does not see'
            printf '%s\t%s\n' 'null' 'Attempts read from /dev/null'
        case stdout
            printf '%s\t%s\n' 'pass' 'The command writes straight to retry\'s stdout'
            printf '%s\t%s\n' 'hold' 'Hold each attempt\'s stdout; only the attempt that ends the run writes to stdout, the held output of retried attempts goes to stderr'
        case log-format
            printf '%s\t%s\n' 'text' 'One line per event, prefixed `retry:`'
            printf '%s\t%s\n' 'json' 'One JSON object per line'
        case color
            printf '%s\t%s\n' 'auto' 'On a terminal; NO_COLOR (not empty) turns it off, CLICOLOR_FORCE (not 0) on anywhere'
            printf '%s\t%s\n' 'always' 'Always, whatever the environment says'
            printf '%s\t%s\n' 'never' 'Never, whatever the environment says'
        case state-fail
            printf '%s\t%s\n' 'open' 'Run with this host\'s local state (the state directory), and warn'
            printf '%s\t%s\n' 'closed' 'Exit 75 without running the command'
        case generate
            printf '%s\t%s\n' 'man' ''
            printf '%s\t%s\n' 'bash' ''
            printf '%s\t%s\n' 'zsh' ''
            printf '%s\t%s\n' 'fish' ''
            printf '%s\t%s\n' 'elvish' ''
            printf '%s\t%s\n' 'powershell' ''
    end
end

complete -c retry -f
complete -c retry -n 'not __retry_command_started' -s n -l attempts -x -d 'Total attempts, the first included [default: 5]'
complete -c retry -n 'not __retry_command_started' -l retries -x -d 'Retries after the first attempt: the same as --attempts N+1'
complete -c retry -n 'not __retry_command_started' -l forever -d 'No limit on attempts'
complete -c retry -n 'not __retry_command_started' -s t -l times -x -d 'The same as --attempts (minfrin\'s retry\'s -t)'
complete -c retry -n 'not __retry_command_started' -l max-time -x -d 'Deadline for the whole run, attempts and waits together'
complete -c retry -n 'not __retry_command_started' -l reset-after -x -d 'An attempt that ran at least DUR before it failed starts afresh'
complete -c retry -n 'not __retry_command_started' -l attempt-timeout -x -d 'Limit for one attempt (status 124 when it passes)'
complete -c retry -n 'not __retry_command_started' -s d -l delay -x -d 'Base delay before the first retry [default: 1s]'
complete -c retry -n 'not __retry_command_started' -s b -l backoff -x -a '(__retry_values backoff)' -d 'How delays grow: exponential (default), linear, constant, fibonacci'
complete -c retry -n 'not __retry_command_started' -l factor -x -d 'Multiplier for exponential backoff (at least 1'
complete -c retry -n 'not __retry_command_started' -l max-delay -x -d 'Cap on any single delay, jitter included'
complete -c retry -n 'not __retry_command_started' -l delays -x -d 'Explicit schedule, e.g. 1s,5s,30s'
complete -c retry -n 'not __retry_command_started' -s j -l jitter -x -a '(__retry_values jitter)' -d 'Jitter: full (default), none, equal, decorrelated, or N%'
complete -c retry -n 'not __retry_command_started' -l splay -x -d 'Before the first attempt, wait a random time from 0 to DUR'
complete -c retry -n 'not __retry_command_started' -l seed -x -d 'Seed for the random source, for a reproducible schedule'
complete -c retry -n 'not __retry_command_started' -l success-on -x -d 'Statuses that count as success, e.g. 0,3 (replaces the default 0)'
complete -c retry -n 'not __retry_command_started' -l retry-on -x -d 'Retry only these failing statuses; others are fatal'
complete -c retry -n 'not __retry_command_started' -l fatal-on -x -d 'Never retry these statuses (added to 126 and 127)'
complete -c retry -n 'not __retry_command_started' -l preset -x -a '(__retry_values preset)' -d 'Status lists for curl, sysexits, ssh, git or apt'
complete -c retry -n 'not __retry_command_started' -l retry-if-output -x -d 'Retry when a line of output matches REGEX, even after exit status 0'
complete -c retry -n 'not __retry_command_started' -l fatal-if-output -x -d 'Never retry when a line of output matches REGEX'
complete -c retry -n 'not __retry_command_started' -l match-stream -x -a '(__retry_values match-stream)' -d 'The output streams the output rules read'
complete -c retry -n 'not __retry_command_started' -l retry-on-http -x -d 'HTTP statuses, from a header dump in the hint file, that are retried'
complete -c retry -n 'not __retry_command_started' -l fatal-on-http -x -d 'HTTP statuses that are never retried'
complete -c retry -n 'not __retry_command_started' -l retry-after-max -x -d 'Longest wait a Retry-After header (or a retry-after= hint) can ask for'
complete -c retry -n 'not __retry_command_started' -l hints -d 'Give each attempt a private hint file'
complete -c retry -n 'not __retry_command_started' -l kill-signal -x -a '(__retry_values kill-signal)' -d 'Signal sent to the attempt\'s process group when it times out'
complete -c retry -n 'not __retry_command_started' -l kill-after -x -d 'After --kill-signal, wait this long before sending SIGKILL'
complete -c retry -n 'not __retry_command_started' -l stdin -x -a '(__retry_values stdin)' -d 'What each attempt reads'
complete -c retry -n 'not __retry_command_started' -l stdout -x -a '(__retry_values stdout)' -d 'pass streams each attempt\'s stdout'
complete -c retry -n 'not __retry_command_started' -l output-on-failure -d 'Print output and log only if the run fails (cron)'
complete -c retry -n 'not __retry_command_started' -l stop-with-parent -d 'Stop when retry\'s parent ends, as on a SIGTERM'
complete -c retry -n 'not __retry_command_started' -l no-stop-with-parent -d 'Do not stop when retry\'s parent ends (the default)'
complete -c retry -n 'not __retry_command_started' -s v -l verbose -d 'More log lines: the policy, each start, a first-try success'
complete -c retry -n 'not __retry_command_started' -s q -l quiet -d 'Fewer log lines: -q only the give-up line, -qq nothing'
complete -c retry -n 'not __retry_command_started' -l log-format -x -a '(__retry_values log-format)' -d 'Log as text lines or as JSON lines'
complete -c retry -n 'not __retry_command_started' -l log-file -r -F -d 'Write the log to this file (appending), not stderr'
complete -c retry -n 'not __retry_command_started' -l log-time -d 'Begin each text log line with the local time, for CI logs that have none'
complete -c retry -n 'not __retry_command_started' -l color -x -a '(__retry_values color)' -d 'When the text log on stderr colours its verdict words'
complete -c retry -n 'not __retry_command_started' -l on-retry -x -d 'Run CMD through `sh -c` before each wait, with the RETRY_* environment'
complete -c retry -n 'not __retry_command_started' -l on-giveup -x -d 'Run CMD through `sh -c` when retry gives up'
complete -c retry -n 'not __retry_command_started' -l hook-timeout -x -d 'Longest a hook may run before its process group is stopped (0: no limit)'
complete -c retry -n 'not __retry_command_started' -l summary -r -F -d 'Write a JSON summary of the run to FILE at the end'
complete -c retry -n 'not __retry_command_started' -l metrics -r -F -d 'Write Prometheus metrics to FILE at the end, atomically'
complete -c retry -n 'not __retry_command_started' -l name -x -d 'The job\'s name in the summary and the metrics\' `name` label'
complete -c retry -n 'not __retry_command_started' -l key -x -d 'Share a breaker and a retry budget with every run on this key'
complete -c retry -n 'not __retry_command_started' -l state-dir -x -a '(__fish_complete_directories)' -d 'Where the keys\' state lives'
complete -c retry -n 'not __retry_command_started' -l breaker-failures -x -d 'Consecutive failed attempts'
complete -c retry -n 'not __retry_command_started' -l breaker-window -x -d 'Failures older than this do not count towards opening the breaker'
complete -c retry -n 'not __retry_command_started' -l breaker-open -x -d 'How long the breaker stays open the first time'
complete -c retry -n 'not __retry_command_started' -l breaker-open-max -x -d 'The longest the breaker stays open'
complete -c retry -n 'not __retry_command_started' -l budget-burst -x -d 'Tokens in a full retry budget (0 to 100000)'
complete -c retry -n 'not __retry_command_started' -l budget-ratio -x -d 'Tokens a successful attempt adds to the budget'
complete -c retry -n 'not __retry_command_started' -l budget-refill -x -d 'One token comes back to the budget every DUR, whatever happens'
complete -c retry -n 'not __retry_command_started' -l state -x -d 'Keep the keys\' state in Redis, shared by every host that uses it'
complete -c retry -n 'not __retry_command_started' -l state-timeout -x -d 'The longest a run waits for the --state store, all its calls together'
complete -c retry -n 'not __retry_command_started' -l state-fail -x -a '(__retry_values state-fail)' -d 'When the --state store cannot be reached in time before the command'
complete -c retry -n 'not __retry_command_started' -l list-keys -d 'List every key with state in the state directory'
complete -c retry -n 'not __retry_command_started' -l reset-state -d 'Forget the key\'s breaker and budget, run nothing, and exit'
complete -c retry -n 'not __retry_command_started' -l config -r -F -d 'Read settings from this config file instead of $RETRY_CONFIG'
complete -c retry -n 'not __retry_command_started' -l no-config -d 'Read no config file at all, not even $RETRY_CONFIG'
complete -c retry -n 'not __retry_command_started' -s p -l profile -x -a '(__retry_profiles)' -d 'Use this profile of the config file, or a built-in preset of that name'
complete -c retry -n 'not __retry_command_started' -l generate -x -a '(__retry_values generate)' -d 'Print the man page or a shell\'s completion script, and exit'
complete -c retry -n 'not __retry_command_started' -l explain -d 'Show the policy and its schedule; run nothing'
complete -c retry -n 'not __retry_command_started' -l fleet -x -d 'With --explain: simulate N processes'
complete -c retry -n 'not __retry_command_started' -l outage -x -d 'With --fleet: how long the service is down'
complete -c retry -n 'not __retry_command_started' -l every -x -d 'With --fleet: how often each process runs the job (a cron interval)'
complete -c retry -n 'not __retry_command_started' -l hosts -x -d 'With --fleet: the N processes are spread over H hosts'
complete -c retry -n 'not __retry_command_started' -l call-time -x -d 'With --fleet: how long one call of the job takes, failed or not'
complete -c retry -n 'not __retry_command_started' -l store-rate -x -d 'With --fleet and --state'
complete -c retry -n 'not __retry_command_started' -s h -l help -d 'Print this help (-h), or every flag (--help)'
complete -c retry -n 'not __retry_command_started' -s V -l version -d 'Print version'
complete -c retry -n '__retry_command_started; or __retry_at_command' -x -a '(__retry_complete_command)'
