//! The long help's closing sections (exit statuses, environment, files, examples, see also),
//! written once for the end of `--help` and for the man page.

/// The end of `--help`, and the man page's sections after the options: one source for both.
pub const SECTIONS: [(&str, &[(&str, &str)]); 7] = [
    (
        "EXIT STATUS",
        &[
            (
                "the last attempt's status",
                "success, a fatal status, or attempts used up",
            ),
            (
                "124",
                "the last attempt was stopped by --attempt-timeout or --max-time",
            ),
            (
                "125",
                "usage error (nothing was run), or retry itself failed",
            ),
            (
                "126, 127",
                "the command could not be executed, or was not found",
            ),
            (
                "killed by signal N",
                "the last attempt was killed by N: retry ends by N too (without a core dump), so a shell sees what it would have seen without retry",
            ),
            (
                "cancelled by signal N",
                "retry was cancelled by INT (a Ctrl-C), TERM, HUP or QUIT, during an attempt or a wait: it ends by that signal, re-raised, so a script or a shell loop around it stops too",
            ),
            (
                "128+N",
                "a shell's $? for a run that ended by signal N; retry exits 128+N itself only where the signal cannot end it (as PID 1 in a container)",
            ),
            (
                "75",
                "the run was refused without running the command: the --key's breaker is open, or its --state store cannot be reached and --state-fail is closed",
            ),
            (
                "22, 1",
                "the HTTP status (22) or an output rule (1) failed an attempt that exited 0",
            ),
            (
                "1",
                "the run gave up on a status 0 that --success-on left out: a give-up never exits 0",
            ),
        ],
    ),
    (
        "ENVIRONMENT",
        &[
            ("RETRY_ATTEMPT", "given to each attempt: its number, from 1"),
            (
                "RETRY_MAX_ATTEMPTS",
                "given to each attempt: the limit; empty with --forever",
            ),
            (
                "RETRY_PREVIOUS_EXIT",
                "given to each attempt: the previous status; empty at first",
            ),
            (
                "RETRY_REMAINING_MS",
                "given to each attempt: time left before --max-time; empty without it",
            ),
            (
                "RETRY_IDEMPOTENCY_KEY",
                "given to each attempt: one UUID for the run; an inherited one is kept",
            ),
            (
                "RETRY_DEPTH",
                "given to each attempt: 1 under a top-level retry, 2 inside a nested one",
            ),
            (
                "RETRY_HINT_FILE",
                "given to each attempt with --hints: its private hint file",
            ),
            (
                "RETRY_STATUS, RETRY_NEXT_DELAY_MS, RETRY_REASON",
                "given to hooks",
            ),
            (
                "RETRY_CONFIG",
                "read: the config file, when --config is not given",
            ),
            ("XDG_CONFIG_HOME", "read: where the default config file is"),
            (
                "RETRY_STATE_DIR",
                "read: where --key keeps its state, when --state-dir is not given",
            ),
            (
                "XDG_STATE_HOME",
                "read: the state is in $XDG_STATE_HOME/retry otherwise",
            ),
            (
                "RETRY_STATE_URL",
                "read: the Redis store of --key's state, when --state is not given",
            ),
            (
                "RETRY_STOP_WITH_PARENT",
                "read: 1 is --stop-with-parent and 0 --no-stop-with-parent, when neither is given on the command line or in the config file",
            ),
            (
                "REDISCLI_AUTH",
                "read: the Redis password, when the --state URL has none",
            ),
            (
                "NO_COLOR",
                "read: when set and not empty, --color auto writes no colour",
            ),
            (
                "CLICOLOR_FORCE",
                "read: when set and not 0 (and NO_COLOR is not), --color auto writes colour off a terminal too",
            ),
        ],
    ),
    (
        "FILES",
        &[
            (
                "$XDG_CONFIG_HOME/retry/config.toml",
                "the default config file (else ~/.config/retry/config.toml): defaults, and [profiles.NAME] tables, keyed by long flag names",
            ),
            (
                "$XDG_STATE_HOME/retry/KEY.json",
                "the breaker and budget of --key KEY (else ~/.local/state/retry), beside KEY.lock",
            ),
        ],
    ),
    (
        "HINT FILES",
        &[
            (
                "HTTP/1.1 503 Service Unavailable ... Retry-After: 30",
                "a header dump, as curl -D {hints} writes it: the last response's status is judged by --retry-on-http and --fatal-on-http, and Retry-After sets the next wait (up to --retry-after-max)",
            ),
            (
                "retry-after=30s",
                "a line any command may write to $RETRY_HINT_FILE: wait this long before the next attempt",
            ),
            (
                "stop",
                "a line that asks not to be retried: the run ends with the attempt's status",
            ),
        ],
    ),
    (
        "MINFRIN'S RETRY",
        &[
            (
                "-t N, --times N",
                "the number of attempts, as in minfrin's retry: the same as --attempts N (a deadline is --max-time, which has no short form); -t 0 is refused, -t -1 names --forever",
            ),
            (
                "-d N",
                "N seconds, but the first delay of a growing, jittered schedule, where minfrin's waits N before every retry: with -t, a bare -d N is refused, naming -b constant -j none (a fixed N); minfrin's list -d 1,2,5 is refused, naming --delays 1s,2s,5s",
            ),
            (
                "-u, --until; -w, --while; -m, --message; -j SECONDS; -v alone",
                "refused with exit 125, each naming what says it here (--success-on, --retry-on, --name, -j full, --version)",
            ),
            (
                "retry COMMAND",
                "minfrin's bare form tries forever, 10s apart, holding stdout; here it makes 5 attempts with backoff and jitter, streaming stdout. minfrin's is retry --forever -d 10 -b constant -j none --stdout hold -- COMMAND",
            ),
        ],
    ),
    (
        "EXAMPLES",
        &[
            (
                "retry -- curl -fsS https://example.com/health",
                "up to 5 attempts, exponential backoff from 1s, full jitter",
            ),
            (
                "retry -n 10 -d 500ms --max-time 2m -- make test",
                "ten attempts, at most two minutes in all",
            ),
            (
                "retry --preset curl --hints -- curl -fsS -D {hints} URL",
                "judge by the HTTP status, follow Retry-After",
            ),
            (
                "retry -p ci -- ./deploy.sh",
                "the policy of the profile ci of the config file",
            ),
            (
                "retry --key api.example.com -- curl -fsS URL",
                "share a breaker and a retry budget with every run on the key",
            ),
            (
                "retry --explain -n 6 --seed 1",
                "show the schedule, run nothing",
            ),
        ],
    ),
    (
        "SEE ALSO",
        &[
            (
                "timeout(1)",
                "one attempt with a time limit; retry reads its exit statuses and 0 as it does",
            ),
            (
                "curl(1)",
                "--retry, and the exit statuses of the curl preset",
            ),
            (
                "systemd.service(5)",
                "Restart= and RestartSec= for services that systemd keeps running",
            ),
        ],
    ),
];

/// The sections, as text for the end of `--help`.
pub(super) fn after_long_help() -> String {
    let mut out = String::new();
    for (title, items) in SECTIONS {
        out.push_str(&format!(
            "{}:\n",
            title[..1].to_string() + &title[1..].to_lowercase()
        ));
        for (term, text) in items {
            out.push_str(&format!("  {term}\n      {text}\n"));
        }
        out.push('\n');
    }
    out.trim_end().to_string()
}
