complete -c retry -s n -l attempts -d 'Total attempts, the first included (at least 1) [default: 5]' -r
complete -c retry -l retries -d 'Retries after the first attempt: the same as --attempts N+1' -r
complete -c retry -s t -l times -d 'The same as --attempts N: minfrin\'s retry\'s spelling, kept for its scripts' -r
complete -c retry -l max-time -d 'Deadline for the whole run, attempts and waits together; 0 means none, as in timeout(1)' -r
complete -c retry -l reset-after -d 'An attempt that ran at least DUR before it failed starts afresh: the next delay is --delay again, and --attempts counts from it (a worker that ran well for an hour does not inherit the backoff of its last crash). Attempt numbers keep counting' -r
complete -c retry -l attempt-timeout -d 'Limit for one attempt; a timed-out attempt counts as status 124 (retryable). 0 means none' -r
complete -c retry -s d -l delay -d 'Base delay before the first retry' -r
complete -c retry -s b -l backoff -d 'How the delay grows from retry to retry' -r -f -a "exponential\t'delay * factor^(k-1)'
linear\t'delay * k'
constant\t'always delay'
fibonacci\t'delay * 1, 2, 3, 5, 8, ...'
adaptive\t'learned from the key\'s recent outcomes (needs --key; experimental)'"
complete -c retry -l factor -d 'Multiplier for exponential backoff (at least 1; fractions allowed)' -r
complete -c retry -l max-delay -d 'Cap on any single delay, jitter included [default: 1m, or the longest delay asked for by --delay or --delays]. A smaller cap than --delay caps it' -r
complete -c retry -l delays -d 'Explicit schedule, e.g. 1s,5s,30s; the last value repeats. Replaces --backoff' -r
complete -c retry -s j -l jitter -d 'Jitter: none, full, equal, decorrelated, or N% (+/-N% around the delay)' -r -f -a "none\t''
full\t''
equal\t''
decorrelated\t''
10%\t''"
complete -c retry -l seed -d 'Seed for the random source, for a reproducible schedule' -r
complete -c retry -l success-on -d 'Statuses that count as success, e.g. 0,3 (replaces the default 0)' -r
complete -c retry -l retry-on -d 'Retry only these failing statuses, e.g. 1,5-7,SIGKILL; all others are fatal' -r
complete -c retry -l fatal-on -d 'Never retry these statuses (added to 126 and 127; wins over --retry-on)' -r
complete -c retry -l preset -d 'Built-in lists of retryable and fatal statuses for a well-known command: curl, sysexits, ssh, git, apt. --retry-on replaces the preset\'s retryable list; --fatal-on adds to its fatal one' -r -f -a "curl\t''
sysexits\t''
ssh\t''
git\t''
apt\t''"
complete -c retry -l retry-if-output -d 'Retry when a line of output matches REGEX, even after exit status 0 (repeatable)' -r
complete -c retry -l fatal-if-output -d 'Never retry when a line of output matches REGEX; wins over every retry rule (repeatable)' -r
complete -c retry -l match-stream -d 'The output streams the output rules read' -r -f -a "both\t''
stdout\t''
stderr\t''"
complete -c retry -l retry-on-http -d 'HTTP statuses, from a header dump in the hint file, that are retried' -r
complete -c retry -l fatal-on-http -d 'HTTP statuses that are never retried; wins over --retry-on-http [default: every other 4xx]' -r
complete -c retry -l retry-after-max -d 'Longest wait a Retry-After header (or a retry-after= hint) can ask for' -r
complete -c retry -l kill-signal -d 'Signal sent to the attempt\'s process group when it times out' -r -f -a "SIGHUP\t''
SIGINT\t''
SIGQUIT\t''
SIGILL\t''
SIGTRAP\t''
SIGABRT\t''
SIGBUS\t''
SIGFPE\t''
SIGKILL\t''
SIGUSR1\t''
SIGSEGV\t''
SIGUSR2\t''
SIGPIPE\t''
SIGALRM\t''
SIGTERM\t''
SIGSTKFLT\t''
SIGCHLD\t''
SIGCONT\t''
SIGSTOP\t''
SIGTSTP\t''
SIGTTIN\t''
SIGTTOU\t''
SIGURG\t''
SIGXCPU\t''
SIGXFSZ\t''
SIGVTALRM\t''
SIGPROF\t''
SIGWINCH\t''
SIGIO\t''
SIGPWR\t''
SIGSYS\t''"
complete -c retry -l kill-after -d 'After --kill-signal, wait this long before sending SIGKILL' -r
complete -c retry -l stdin -d 'What each attempt reads: auto rewinds a regular file, replays a pipe or socket and passes a terminal through; replay, pass and null force a mode' -r -f -a "auto\t'Rewind a regular file, replay a pipe or socket, pass a terminal or device through'
replay\t'Record what the attempts read and feed it again to the next one'
pass\t'Every attempt reads retry\'s own stdin directly; what one read, the next does not see'
null\t'Attempts read from /dev/null'"
complete -c retry -l stdout -d 'pass streams each attempt\'s stdout; hold keeps it and writes only the attempt that ends the run to stdout (retried attempts\' output goes to stderr)' -r -f -a "pass\t'The command writes straight to retry\'s stdout'
hold\t'Hold each attempt\'s stdout; only the attempt that ends the run writes to stdout, the held output of retried attempts goes to stderr'"
complete -c retry -l log-format -d 'Log as text lines or as JSON lines' -r -f -a "text\t'One line per event, prefixed `retry:`'
json\t'One JSON object per line'"
complete -c retry -l log-file -d 'Write the log to this file (appending) instead of stderr' -r -F
complete -c retry -l on-retry -d 'Run CMD through `sh -c` before each wait, with the RETRY_* environment, RETRY_STATUS (the failed attempt\'s status) and RETRY_NEXT_DELAY_MS. Its failure is only logged' -r
complete -c retry -l on-giveup -d 'Run CMD through `sh -c` when retry gives up, with the RETRY_* environment, RETRY_STATUS and RETRY_REASON. Its failure is only logged' -r
complete -c retry -l hook-timeout -d 'Longest a hook may run before its process group is stopped' -r
complete -c retry -l summary -d 'Write a JSON summary of the run to FILE at the end (attempts, statuses, time running and waiting, outcome, reason)' -r -F
complete -c retry -l metrics -d 'Write Prometheus metrics to FILE at the end, atomically, for node_exporter\'s textfile collector; counters carry on from the file\'s previous version' -r -F
complete -c retry -l name -d 'The job\'s name in the summary and the metrics\' `name` label [default: the command\'s file name]' -r
complete -c retry -l key -d 'Share a circuit breaker and a retry budget with every run that uses this key: name the target (a host or an API), not "everything"' -r
complete -c retry -l state-dir -d 'Where the keys\' state lives [default: $RETRY_STATE_DIR, else $XDG_STATE_HOME/retry, else ~/.local/state/retry]' -r -F
complete -c retry -l breaker-failures -d 'Consecutive failed attempts (0 to 1000), of any runs on the key, that open the breaker; 0 turns it off' -r
complete -c retry -l breaker-window -d 'Failures older than this do not count towards opening the breaker' -r
complete -c retry -l breaker-open -d 'How long the breaker stays open the first time: runs exit 75 without running the command; then one run probes. Doubles after each failed probe' -r
complete -c retry -l breaker-open-max -d 'The longest the breaker stays open' -r
complete -c retry -l budget-burst -d 'Tokens in a full retry budget (0 to 100000); a retry costs one, a first attempt none; 0 turns the budget off' -r
complete -c retry -l budget-ratio -d 'Tokens a successful attempt adds to the budget' -r
complete -c retry -l budget-refill -d 'One token comes back to the budget every DUR, whatever happens' -r
complete -c retry -l state -d 'Keep the keys\' state in Redis, shared by every host that uses it: redis://[USER:PASSWORD@]HOST[:PORT][/DB], rediss://... for TLS, redis+unix:///PATH, redis-sentinel://S1[,S2...]/DB?sentinelMasterId=NAME, or redis+cluster://N1[,N2...] [default: $RETRY_STATE_URL, else the state directory]. A password may come from $REDISCLI_AUTH instead' -r
complete -c retry -l state-timeout -d 'The longest a run waits for the --state store, all its calls together' -r
complete -c retry -l state-fail -d 'When the --state store cannot be reached in time before the command starts: open runs with this host\'s local state and warns; closed exits 75 without running the command' -r -f -a "open\t'Run with this host\'s local state (the state directory), and warn'
closed\t'Exit 75 without running the command'"
complete -c retry -l config -d 'Read settings from this config file instead of $RETRY_CONFIG or ~/.config/retry/config.toml' -r -F
complete -c retry -s p -l profile -d 'Use this profile of the config file, or a built-in preset of that name' -r -f -a "curl\t''
sysexits\t''
ssh\t''
git\t''
apt\t''"
complete -c retry -l generate -d 'Print the man page or a shell\'s completion script, and exit (for packagers)' -r -f -a "man\t''
bash\t''
zsh\t''
fish\t''
elvish\t''
powershell\t''"
complete -c retry -l fleet -d 'With --explain: simulate N processes (1 to 100000) running this policy against one service that is down for --outage, and print what they do to it (calls, peaks, calls per job, goodput, time to recover) and what it assumed, beside the same policy without jitter and without shared state; with --log-format json, as one JSON object per line' -r
complete -c retry -l outage -d 'With --fleet: how long the service is down' -r
complete -c retry -l every -d 'With --fleet: how often each process runs the job (a cron interval)' -r
complete -c retry -l hosts -d 'With --fleet: the N processes are spread over H hosts; with --key and no --state, the processes on one host share that host\'s state [default: N, one process a host]' -r
complete -c retry -l splay -d 'With --fleet: each process runs at its own random offset within DUR of the cron tick; 0 starts every process at the same instant, as cron fires a fleet at the same second [default: --every, runs spread over it]' -r
complete -c retry -l call-time -d 'With --fleet: how long one call of the job takes, failed or not' -r
complete -c retry -s u -l until -d 'minfrin\'s retry\'s --until: refused, naming the --success-on that says it here' -r
complete -c retry -s w -l while -d 'minfrin\'s retry\'s --while: refused, naming the --retry-on that says it here' -r
complete -c retry -s m -l message -d 'minfrin\'s retry\'s --message: refused, naming --name' -r
complete -c retry -l forever -d 'No limit on attempts (--max-time and fatal statuses still end the run)'
complete -c retry -l hints -d 'Give each attempt a private hint file, its path in RETRY_HINT_FILE and in place of any `{hints}` in the arguments: `retry --hints -- curl -fsS -D {hints} URL`. A `{hints}` in the arguments turns this on by itself'
complete -c retry -l output-on-failure -d 'Hold every attempt\'s stdout and stderr and retry\'s own log, and print them, in order and marked by attempt, only if the run fails: a run that succeeds prints nothing (chronic\'s behaviour, for cron, which mails whatever a job prints)'
complete -c retry -s v -l verbose -d 'More log lines, each with the time: the resolved policy, each attempt\'s start, and a success at the first attempt (said only with -v, or in a --log-file)'
complete -c retry -s q -l quiet -d 'Fewer log lines: -q only the give-up line, -qq nothing'
complete -c retry -l log-time -d 'Begin each text log line with the local time, for CI logs that have none (always in a --log-file, and with -v)'
complete -c retry -l list-keys -d 'List every key with state in the state directory, or in the --state store: its breaker, failures counted, tokens left and last change. Changes nothing, runs nothing'
complete -c retry -l reset-state -d 'Forget the key\'s breaker and budget, run nothing, and exit'
complete -c retry -l no-config -d 'Read no config file at all, not even $RETRY_CONFIG: what a script that must not depend on a user\'s settings gives, and the way past a config file that is broken'
complete -c retry -l explain -d 'Print the resolved policy, where each value came from, and the schedule it implies; run nothing, and exit'
complete -c retry -s h -l help -d 'Print help (see more with \'--help\')'
complete -c retry -s V -l version -d 'Print version'

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
complete -c retry -s p -l profile -x -a 'curl sysexits ssh git apt (__retry_profiles)'
