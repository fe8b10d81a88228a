
use builtin;
use str;

set edit:completion:arg-completer[retry] = {|@words|
    fn spaces {|n|
        builtin:repeat $n ' ' | str:join ''
    }
    fn cand {|text desc|
        edit:complex-candidate $text &display=$text' '(spaces (- 14 (wcswidth $text)))$desc
    }
    var command = 'retry'
    for word $words[1..-1] {
        if (str:has-prefix $word '-') {
            break
        }
        set command = $command';'$word
    }
    var completions = [
        &'retry'= {
            cand -n 'Total attempts, the first included (at least 1) [default: 5]'
            cand --attempts 'Total attempts, the first included (at least 1) [default: 5]'
            cand --retries 'Retries after the first attempt: the same as --attempts N+1'
            cand -t 'The same as --attempts N: minfrin''s retry''s spelling, kept for its scripts'
            cand --times 'The same as --attempts N: minfrin''s retry''s spelling, kept for its scripts'
            cand --max-time 'Deadline for the whole run, attempts and waits together; 0 means none, as in timeout(1)'
            cand --reset-after 'An attempt that ran at least DUR before it failed starts afresh: the next delay is --delay again, and --attempts counts from it (a worker that ran well for an hour does not inherit the backoff of its last crash). Attempt numbers keep counting'
            cand --attempt-timeout 'Limit for one attempt; a timed-out attempt counts as status 124 (retryable). 0 means none'
            cand -d 'Base delay before the first retry'
            cand --delay 'Base delay before the first retry'
            cand -b 'How the delay grows from retry to retry'
            cand --backoff 'How the delay grows from retry to retry'
            cand --factor 'Multiplier for exponential backoff (at least 1; fractions allowed)'
            cand --max-delay 'Cap on any single delay, jitter included [default: 1m, or the longest delay asked for by --delay or --delays]. A smaller cap than --delay caps it'
            cand --delays 'Explicit schedule, e.g. 1s,5s,30s; the last value repeats. Replaces --backoff'
            cand -j 'Jitter: none, full, equal, decorrelated, or N% (+/-N% around the delay)'
            cand --jitter 'Jitter: none, full, equal, decorrelated, or N% (+/-N% around the delay)'
            cand --splay 'Before the first attempt, wait a random time from 0 to DUR, so that runs that start at the same second (cron on many hosts) spread their calls, and their --key store''s load, over DUR. The wait counts within --max-time, which must be longer; a signal during it cancels the run, as during any wait. --explain --fleet simulates processes that start as this says: all at the same second with 0'
            cand --seed 'Seed for the random source, for a reproducible schedule'
            cand --success-on 'Statuses that count as success, e.g. 0,3 (replaces the default 0)'
            cand --retry-on 'Retry only these failing statuses, e.g. 1,5-7,SIGKILL; all others are fatal'
            cand --fatal-on 'Never retry these statuses (added to 126 and 127; wins over --retry-on)'
            cand --preset 'Built-in lists of retryable and fatal statuses for a well-known command: curl, sysexits, ssh, git, apt. --retry-on replaces the preset''s retryable list; --fatal-on adds to its fatal one. A preset''s output patterns judge only an attempt whose status failed'
            cand --retry-if-output 'Retry when a line of output matches REGEX, even after exit status 0 (repeatable). Output is matched as bytes, in ASCII mode: \w, \d, \s, [[:alpha:]] and (?i) are ASCII only, other text matches as written, and a Unicode class (\p{L}, (?u)\w) is refused'
            cand --fatal-if-output 'Never retry when a line of output matches REGEX, and fail an attempt that exited 0 (the run then exits 1); wins over every retry rule (repeatable)'
            cand --match-stream 'The output streams the output rules read'
            cand --retry-on-http 'HTTP statuses, from a header dump in the hint file, that are retried'
            cand --fatal-on-http 'HTTP statuses that are never retried; wins over --retry-on-http [default: every other 4xx]'
            cand --retry-after-max 'Longest wait a Retry-After header (or a retry-after= hint) can ask for'
            cand --kill-signal 'Signal sent to the attempt''s process group when it times out'
            cand --kill-after 'After --kill-signal, wait this long before sending SIGKILL'
            cand --stdin 'What each attempt reads: auto rewinds a regular file, replays a pipe or socket and passes a terminal through; replay, pass and null force a mode'
            cand --stdout 'pass streams each attempt''s stdout; hold keeps it and writes only the attempt that ends the run to stdout (retried attempts'' output goes to stderr)'
            cand --log-format 'Log as text lines or as JSON lines'
            cand --log-file 'Write the log to this file (appending) instead of stderr'
            cand --color 'When the text log on stderr colours its verdict words, and --explain --fleet its chart on stdout. auto: NO_COLOR set and not empty means no colour, else CLICOLOR_FORCE set and not 0 means colour, else colour on a terminal. always and never win over both. A --log-file has none'
            cand --on-retry 'Run CMD through `sh -c` before each wait, with the RETRY_* environment, RETRY_STATUS (the failed attempt''s status) and RETRY_NEXT_DELAY_MS. Its failure is only logged'
            cand --on-giveup 'Run CMD through `sh -c` when retry gives up, with the RETRY_* environment, RETRY_STATUS and RETRY_REASON. Its failure is only logged'
            cand --hook-timeout 'Longest a hook may run before its process group is stopped (0: no limit). --on-retry is stopped at --max-time too, as the wait it runs in is'
            cand --summary 'Write a JSON summary of the run to FILE at the end (attempts, statuses, time running and waiting, outcome, reason)'
            cand --metrics 'Write Prometheus metrics to FILE at the end, atomically, for node_exporter''s textfile collector; counters carry on from the file''s previous version'
            cand --name 'The job''s name in the summary and the metrics'' `name` label [default: the command''s file name]'
            cand --key 'Share a circuit breaker and a retry budget with every run that uses this key: name the target (a host or an API), not "everything"'
            cand --state-dir 'Where the keys'' state lives [default: $RETRY_STATE_DIR, else $XDG_STATE_HOME/retry, else ~/.local/state/retry]'
            cand --breaker-failures 'Consecutive failed attempts (0 to 1000), of any runs on the key, that open the breaker; 0 turns it off'
            cand --breaker-window 'Failures older than this do not count towards opening the breaker'
            cand --breaker-open 'How long the breaker stays open the first time: runs exit 75 without running the command; then one run probes. Doubles after each failed probe'
            cand --breaker-open-max 'The longest the breaker stays open'
            cand --budget-burst 'Tokens in a full retry budget (0 to 100000); a retry costs one, a first attempt none; 0 turns the budget off'
            cand --budget-ratio 'Tokens a successful attempt adds to the budget'
            cand --budget-refill 'One token comes back to the budget every DUR, whatever happens'
            cand --state 'Keep the keys'' state in Redis, shared by every host that uses it: redis://[USER:PASSWORD@]HOST[:PORT][/DB], rediss://... for TLS, redis+unix:///PATH, redis-sentinel://S1[,S2...]/DB?sentinelMasterId=NAME, or redis+cluster://N1[,N2...] [default: $RETRY_STATE_URL, else the state directory]. A password may come from $REDISCLI_AUTH instead'
            cand --state-timeout 'The longest a run waits for the --state store, all its calls together'
            cand --state-fail 'When the --state store cannot be reached in time before the command starts: open runs with this host''s local state and warns; closed exits 75 without running the command'
            cand --config 'Read settings from this config file instead of $RETRY_CONFIG or ~/.config/retry/config.toml'
            cand -p 'Use this profile of the config file, or a built-in preset of that name'
            cand --profile 'Use this profile of the config file, or a built-in preset of that name'
            cand --generate 'Print the man page or a shell''s completion script, and exit (for packagers)'
            cand --fleet 'With --explain: simulate N processes (1 to 100000) running this policy against one service that is down for --outage, and print what they do to it (calls, peaks, calls per job, goodput, time to recover) and what it assumed, beside the same policy without jitter and without shared state; with --log-format json, as one JSON object per line'
            cand --outage 'With --fleet: how long the service is down'
            cand --every 'With --fleet: how often each process runs the job (a cron interval)'
            cand --hosts 'With --fleet: the N processes are spread over H hosts; with --key and no --state, the processes on one host share that host''s state [default: N, one process a host]'
            cand --call-time 'With --fleet: how long one call of the job takes, failed or not'
            cand --store-rate 'With --fleet and --state: script calls a second the store answers for one key (a key lives on one Redis thread). A simulated run whose calls would wait in its queue past --state-timeout loses the shared state, as a real one does: --state-fail open goes on with its host''s state, closed exits 75 without running. The default is the rate measured for an outage''s calls (docs/redis.md)'
            cand --forever 'No limit on attempts (--max-time and fatal statuses still end the run)'
            cand --hints 'Give each attempt a private hint file, its path in RETRY_HINT_FILE and in place of any `{hints}` in the arguments: `retry --hints -- curl -fsS -D {hints} URL`. A `{hints}` in the arguments turns this on by itself'
            cand --output-on-failure 'Hold every attempt''s stdout and stderr and retry''s own log, and print them, in order and marked by attempt, only if the run fails: a run that succeeds prints nothing (chronic''s behaviour, for cron, which mails whatever a job prints)'
            cand --stop-with-parent 'Stop when retry''s parent ends, as on a SIGTERM: the attempt''s group gets --kill-signal (SIGKILL after --kill-after), no attempt follows, and retry ends by SIGTERM. For a CI step that cannot `exec retry`: a runner''s cancel reaches the step''s shell, not retry. Where the system has a parent-death signal (Linux), the attempt''s first process also gets SIGKILL if retry itself is killed (kill -9). Off by default: `nohup retry ... &` and `setsid -f retry ...` lose their parent on purpose. Also RETRY_STOP_WITH_PARENT=1, or `stop-with-parent = true` in the config file'
            cand --no-stop-with-parent 'Do not stop when retry''s parent ends (the default): for one step of a job that sets --stop-with-parent for all, in the config file or by RETRY_STOP_WITH_PARENT=1'
            cand -v 'More log lines, each with the time: the resolved policy, each attempt''s start, and a success at the first attempt (said only with -v, or in a --log-file)'
            cand --verbose 'More log lines, each with the time: the resolved policy, each attempt''s start, and a success at the first attempt (said only with -v, or in a --log-file)'
            cand -q 'Fewer log lines: -q only the give-up line, -qq nothing'
            cand --quiet 'Fewer log lines: -q only the give-up line, -qq nothing'
            cand --log-time 'Begin each text log line with the local time, for CI logs that have none (always in a --log-file, and with -v)'
            cand --list-keys 'List every key with state in the state directory, or in the --state store: its breaker, failures counted, tokens left and last change. Changes nothing, runs nothing'
            cand --reset-state 'Forget the key''s breaker and budget, run nothing, and exit'
            cand --no-config 'Read no config file at all, not even $RETRY_CONFIG: what a script that must not depend on a user''s settings gives, and the way past a config file that is broken'
            cand --explain 'Print the resolved policy, where each value came from, and the schedule it implies; run nothing, and exit'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
            cand -V 'Print version'
            cand --version 'Print version'
        }
    ]
    $completions[$command]
}
