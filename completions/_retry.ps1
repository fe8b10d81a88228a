
using namespace System.Management.Automation
using namespace System.Management.Automation.Language

Register-ArgumentCompleter -Native -CommandName 'retry' -ScriptBlock {
    param($wordToComplete, $commandAst, $cursorPosition)

    $commandElements = $commandAst.CommandElements
    $command = @(
        'retry'
        for ($i = 1; $i -lt $commandElements.Count; $i++) {
            $element = $commandElements[$i]
            if ($element -isnot [StringConstantExpressionAst] -or
                $element.StringConstantType -ne [StringConstantType]::BareWord -or
                $element.Value.StartsWith('-') -or
                $element.Value -eq $wordToComplete) {
                break
        }
        $element.Value
    }) -join ';'

    $completions = @(switch ($command) {
        'retry' {
            [CompletionResult]::new('-n', '-n', [CompletionResultType]::ParameterName, 'Total attempts, the first included (at least 1) [default: 5]')
            [CompletionResult]::new('--attempts', '--attempts', [CompletionResultType]::ParameterName, 'Total attempts, the first included (at least 1) [default: 5]')
            [CompletionResult]::new('--retries', '--retries', [CompletionResultType]::ParameterName, 'Retries after the first attempt: the same as --attempts N+1')
            [CompletionResult]::new('-t', '-t', [CompletionResultType]::ParameterName, 'The same as --attempts N: minfrin''s retry''s spelling, kept for its scripts')
            [CompletionResult]::new('--times', '--times', [CompletionResultType]::ParameterName, 'The same as --attempts N: minfrin''s retry''s spelling, kept for its scripts')
            [CompletionResult]::new('--max-time', '--max-time', [CompletionResultType]::ParameterName, 'Deadline for the whole run, attempts and waits together; 0 means none, as in timeout(1)')
            [CompletionResult]::new('--reset-after', '--reset-after', [CompletionResultType]::ParameterName, 'An attempt that ran at least DUR before it failed starts afresh: the next delay is --delay again, and --attempts counts from it (a worker that ran well for an hour does not inherit the backoff of its last crash). Attempt numbers keep counting')
            [CompletionResult]::new('--attempt-timeout', '--attempt-timeout', [CompletionResultType]::ParameterName, 'Limit for one attempt; a timed-out attempt counts as status 124 (retryable). 0 means none')
            [CompletionResult]::new('-d', '-d', [CompletionResultType]::ParameterName, 'Base delay before the first retry')
            [CompletionResult]::new('--delay', '--delay', [CompletionResultType]::ParameterName, 'Base delay before the first retry')
            [CompletionResult]::new('-b', '-b', [CompletionResultType]::ParameterName, 'How the delay grows from retry to retry')
            [CompletionResult]::new('--backoff', '--backoff', [CompletionResultType]::ParameterName, 'How the delay grows from retry to retry')
            [CompletionResult]::new('--factor', '--factor', [CompletionResultType]::ParameterName, 'Multiplier for exponential backoff (at least 1; fractions allowed)')
            [CompletionResult]::new('--max-delay', '--max-delay', [CompletionResultType]::ParameterName, 'Cap on any single delay, jitter included [default: 1m, or the longest delay asked for by --delay or --delays]. A smaller cap than --delay caps it')
            [CompletionResult]::new('--delays', '--delays', [CompletionResultType]::ParameterName, 'Explicit schedule, e.g. 1s,5s,30s; the last value repeats. Replaces --backoff')
            [CompletionResult]::new('-j', '-j', [CompletionResultType]::ParameterName, 'Jitter: none, full, equal, decorrelated, or N% (+/-N% around the delay)')
            [CompletionResult]::new('--jitter', '--jitter', [CompletionResultType]::ParameterName, 'Jitter: none, full, equal, decorrelated, or N% (+/-N% around the delay)')
            [CompletionResult]::new('--splay', '--splay', [CompletionResultType]::ParameterName, 'Before the first attempt, wait a random time from 0 to DUR, so that runs that start at the same second (cron on many hosts) spread their calls, and their --key store''s load, over DUR. The wait counts within --max-time, which must be longer; a signal during it cancels the run, as during any wait. --explain --fleet simulates processes that start as this says: all at the same second with 0')
            [CompletionResult]::new('--seed', '--seed', [CompletionResultType]::ParameterName, 'Seed for the random source, for a reproducible schedule')
            [CompletionResult]::new('--success-on', '--success-on', [CompletionResultType]::ParameterName, 'Statuses that count as success, e.g. 0,3 (replaces the default 0)')
            [CompletionResult]::new('--retry-on', '--retry-on', [CompletionResultType]::ParameterName, 'Retry only these failing statuses, e.g. 1,5-7,SIGKILL; all others are fatal')
            [CompletionResult]::new('--fatal-on', '--fatal-on', [CompletionResultType]::ParameterName, 'Never retry these statuses (added to 126 and 127; wins over --retry-on)')
            [CompletionResult]::new('--preset', '--preset', [CompletionResultType]::ParameterName, 'Built-in lists of retryable and fatal statuses for a well-known command: curl, sysexits, ssh, git, apt. --retry-on replaces the preset''s retryable list; --fatal-on adds to its fatal one. A preset''s output patterns judge only an attempt whose status failed')
            [CompletionResult]::new('--retry-if-output', '--retry-if-output', [CompletionResultType]::ParameterName, 'Retry when a line of output matches REGEX, even after exit status 0 (repeatable). Output is matched as bytes, in ASCII mode: \w, \d, \s, [[:alpha:]] and (?i) are ASCII only, other text matches as written, and a Unicode class (\p{L}, (?u)\w) is refused')
            [CompletionResult]::new('--fatal-if-output', '--fatal-if-output', [CompletionResultType]::ParameterName, 'Never retry when a line of output matches REGEX, and fail an attempt that exited 0 (the run then exits 1); wins over every retry rule (repeatable)')
            [CompletionResult]::new('--match-stream', '--match-stream', [CompletionResultType]::ParameterName, 'The output streams the output rules read')
            [CompletionResult]::new('--retry-on-http', '--retry-on-http', [CompletionResultType]::ParameterName, 'HTTP statuses, from a header dump in the hint file, that are retried')
            [CompletionResult]::new('--fatal-on-http', '--fatal-on-http', [CompletionResultType]::ParameterName, 'HTTP statuses that are never retried; wins over --retry-on-http [default: every other 4xx]')
            [CompletionResult]::new('--retry-after-max', '--retry-after-max', [CompletionResultType]::ParameterName, 'Longest wait a Retry-After header (or a retry-after= hint) can ask for')
            [CompletionResult]::new('--kill-signal', '--kill-signal', [CompletionResultType]::ParameterName, 'Signal sent to the attempt''s process group when it times out')
            [CompletionResult]::new('--kill-after', '--kill-after', [CompletionResultType]::ParameterName, 'After --kill-signal, wait this long before sending SIGKILL')
            [CompletionResult]::new('--stdin', '--stdin', [CompletionResultType]::ParameterName, 'What each attempt reads: auto rewinds a regular file, replays a pipe or socket and passes a terminal through; replay, pass and null force a mode')
            [CompletionResult]::new('--stdout', '--stdout', [CompletionResultType]::ParameterName, 'pass streams each attempt''s stdout; hold keeps it and writes only the attempt that ends the run to stdout (retried attempts'' output goes to stderr)')
            [CompletionResult]::new('--log-format', '--log-format', [CompletionResultType]::ParameterName, 'Log as text lines or as JSON lines')
            [CompletionResult]::new('--log-file', '--log-file', [CompletionResultType]::ParameterName, 'Write the log to this file (appending) instead of stderr')
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When the text log on stderr colours its verdict words, and --explain --fleet its chart on stdout. auto: NO_COLOR set and not empty means no colour, else CLICOLOR_FORCE set and not 0 means colour, else colour on a terminal. always and never win over both. A --log-file has none')
            [CompletionResult]::new('--on-retry', '--on-retry', [CompletionResultType]::ParameterName, 'Run CMD through `sh -c` before each wait, with the RETRY_* environment, RETRY_STATUS (the failed attempt''s status) and RETRY_NEXT_DELAY_MS. Its failure is only logged')
            [CompletionResult]::new('--on-giveup', '--on-giveup', [CompletionResultType]::ParameterName, 'Run CMD through `sh -c` when retry gives up, with the RETRY_* environment, RETRY_STATUS and RETRY_REASON. Its failure is only logged')
            [CompletionResult]::new('--hook-timeout', '--hook-timeout', [CompletionResultType]::ParameterName, 'Longest a hook may run before its process group is stopped (0: no limit). --on-retry is stopped at --max-time too, as the wait it runs in is')
            [CompletionResult]::new('--summary', '--summary', [CompletionResultType]::ParameterName, 'Write a JSON summary of the run to FILE at the end (attempts, statuses, time running and waiting, outcome, reason)')
            [CompletionResult]::new('--metrics', '--metrics', [CompletionResultType]::ParameterName, 'Write Prometheus metrics to FILE at the end, atomically, for node_exporter''s textfile collector; counters carry on from the file''s previous version')
            [CompletionResult]::new('--name', '--name', [CompletionResultType]::ParameterName, 'The job''s name in the summary and the metrics'' `name` label [default: the command''s file name]')
            [CompletionResult]::new('--key', '--key', [CompletionResultType]::ParameterName, 'Share a circuit breaker and a retry budget with every run that uses this key: name the target (a host or an API), not "everything"')
            [CompletionResult]::new('--state-dir', '--state-dir', [CompletionResultType]::ParameterName, 'Where the keys'' state lives [default: $RETRY_STATE_DIR, else $XDG_STATE_HOME/retry, else ~/.local/state/retry]')
            [CompletionResult]::new('--breaker-failures', '--breaker-failures', [CompletionResultType]::ParameterName, 'Consecutive failed attempts (0 to 1000), of any runs on the key, that open the breaker; 0 turns it off')
            [CompletionResult]::new('--breaker-window', '--breaker-window', [CompletionResultType]::ParameterName, 'Failures older than this do not count towards opening the breaker')
            [CompletionResult]::new('--breaker-open', '--breaker-open', [CompletionResultType]::ParameterName, 'How long the breaker stays open the first time: runs exit 75 without running the command; then one run probes. Doubles after each failed probe')
            [CompletionResult]::new('--breaker-open-max', '--breaker-open-max', [CompletionResultType]::ParameterName, 'The longest the breaker stays open')
            [CompletionResult]::new('--budget-burst', '--budget-burst', [CompletionResultType]::ParameterName, 'Tokens in a full retry budget (0 to 100000); a retry costs one, a first attempt none; 0 turns the budget off')
            [CompletionResult]::new('--budget-ratio', '--budget-ratio', [CompletionResultType]::ParameterName, 'Tokens a successful attempt adds to the budget')
            [CompletionResult]::new('--budget-refill', '--budget-refill', [CompletionResultType]::ParameterName, 'One token comes back to the budget every DUR, whatever happens')
            [CompletionResult]::new('--state', '--state', [CompletionResultType]::ParameterName, 'Keep the keys'' state in Redis, shared by every host that uses it: redis://[USER:PASSWORD@]HOST[:PORT][/DB], rediss://... for TLS, redis+unix:///PATH, redis-sentinel://S1[,S2...]/DB?sentinelMasterId=NAME, or redis+cluster://N1[,N2...] [default: $RETRY_STATE_URL, else the state directory]. A password may come from $REDISCLI_AUTH instead')
            [CompletionResult]::new('--state-timeout', '--state-timeout', [CompletionResultType]::ParameterName, 'The longest a run waits for the --state store, all its calls together')
            [CompletionResult]::new('--state-fail', '--state-fail', [CompletionResultType]::ParameterName, 'When the --state store cannot be reached in time before the command starts: open runs with this host''s local state and warns; closed exits 75 without running the command')
            [CompletionResult]::new('--config', '--config', [CompletionResultType]::ParameterName, 'Read settings from this config file instead of $RETRY_CONFIG or ~/.config/retry/config.toml')
            [CompletionResult]::new('-p', '-p', [CompletionResultType]::ParameterName, 'Use this profile of the config file, or a built-in preset of that name')
            [CompletionResult]::new('--profile', '--profile', [CompletionResultType]::ParameterName, 'Use this profile of the config file, or a built-in preset of that name')
            [CompletionResult]::new('--generate', '--generate', [CompletionResultType]::ParameterName, 'Print the man page or a shell''s completion script, and exit (for packagers)')
            [CompletionResult]::new('--fleet', '--fleet', [CompletionResultType]::ParameterName, 'With --explain: simulate N processes (1 to 100000) running this policy against one service that is down for --outage, and print what they do to it (calls, peaks, calls per job, goodput, time to recover) and what it assumed, beside the same policy without jitter and without shared state; with --log-format json, as one JSON object per line')
            [CompletionResult]::new('--outage', '--outage', [CompletionResultType]::ParameterName, 'With --fleet: how long the service is down')
            [CompletionResult]::new('--every', '--every', [CompletionResultType]::ParameterName, 'With --fleet: how often each process runs the job (a cron interval)')
            [CompletionResult]::new('--hosts', '--hosts', [CompletionResultType]::ParameterName, 'With --fleet: the N processes are spread over H hosts; with --key and no --state, the processes on one host share that host''s state [default: N, one process a host]')
            [CompletionResult]::new('--call-time', '--call-time', [CompletionResultType]::ParameterName, 'With --fleet: how long one call of the job takes, failed or not')
            [CompletionResult]::new('--store-rate', '--store-rate', [CompletionResultType]::ParameterName, 'With --fleet and --state: script calls a second the store answers for one key (a key lives on one Redis thread). A simulated run whose calls would wait in its queue past --state-timeout loses the shared state, as a real one does: --state-fail open goes on with its host''s state, closed exits 75 without running. The default is the rate measured for an outage''s calls (docs/redis.md)')
            [CompletionResult]::new('--forever', '--forever', [CompletionResultType]::ParameterName, 'No limit on attempts (--max-time and fatal statuses still end the run)')
            [CompletionResult]::new('--hints', '--hints', [CompletionResultType]::ParameterName, 'Give each attempt a private hint file, its path in RETRY_HINT_FILE and in place of any `{hints}` in the arguments: `retry --hints -- curl -fsS -D {hints} URL`. A `{hints}` in the arguments turns this on by itself')
            [CompletionResult]::new('--output-on-failure', '--output-on-failure', [CompletionResultType]::ParameterName, 'Hold every attempt''s stdout and stderr and retry''s own log, and print them, in order and marked by attempt, only if the run fails: a run that succeeds prints nothing (chronic''s behaviour, for cron, which mails whatever a job prints)')
            [CompletionResult]::new('--stop-with-parent', '--stop-with-parent', [CompletionResultType]::ParameterName, 'Stop when retry''s parent ends, as on a SIGTERM: the attempt''s group gets --kill-signal (SIGKILL after --kill-after), no attempt follows, and retry ends by SIGTERM. For a CI step that cannot `exec retry`: a runner''s cancel reaches the step''s shell, not retry. Where the system has a parent-death signal (Linux), the attempt''s first process also gets SIGKILL if retry itself is killed (kill -9). Off by default: `nohup retry ... &` and `setsid -f retry ...` lose their parent on purpose. Also RETRY_STOP_WITH_PARENT=1, or `stop-with-parent = true` in the config file')
            [CompletionResult]::new('--no-stop-with-parent', '--no-stop-with-parent', [CompletionResultType]::ParameterName, 'Do not stop when retry''s parent ends (the default): for one step of a job that sets --stop-with-parent for all, in the config file or by RETRY_STOP_WITH_PARENT=1')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'More log lines, each with the time: the resolved policy, each attempt''s start, and a success at the first attempt (said only with -v, or in a --log-file)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'More log lines, each with the time: the resolved policy, each attempt''s start, and a success at the first attempt (said only with -v, or in a --log-file)')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'Fewer log lines: -q only the give-up line, -qq nothing')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'Fewer log lines: -q only the give-up line, -qq nothing')
            [CompletionResult]::new('--log-time', '--log-time', [CompletionResultType]::ParameterName, 'Begin each text log line with the local time, for CI logs that have none (always in a --log-file, and with -v)')
            [CompletionResult]::new('--list-keys', '--list-keys', [CompletionResultType]::ParameterName, 'List every key with state in the state directory, or in the --state store: its breaker, failures counted, tokens left and last change. Changes nothing, runs nothing')
            [CompletionResult]::new('--reset-state', '--reset-state', [CompletionResultType]::ParameterName, 'Forget the key''s breaker and budget, run nothing, and exit')
            [CompletionResult]::new('--no-config', '--no-config', [CompletionResultType]::ParameterName, 'Read no config file at all, not even $RETRY_CONFIG: what a script that must not depend on a user''s settings gives, and the way past a config file that is broken')
            [CompletionResult]::new('--explain', '--explain', [CompletionResultType]::ParameterName, 'Print the resolved policy, where each value came from, and the schedule it implies; run nothing, and exit')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
    })

    $completions.Where{ $_.CompletionText -like "$wordToComplete*" } |
        Sort-Object -Property ListItemText
}
