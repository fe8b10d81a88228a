//! The man page's sections beyond the options and `--help`'s own: how the config file, the
//! shared state and the log are laid out, as a manual says it. Text only; the man page is
//! rendered from them, `SECTIONS` of `cli/sections.rs`, and the clap definition.

/// Each section: its title, and its entries as (term, text).
pub const MANUAL: [(&str, &[(&str, &str)]); 3] = [
    (
        "CONFIGURATION FILE",
        &[
            (
                "file",
                "--config PATH, else $RETRY_CONFIG, else $XDG_CONFIG_HOME/retry/config.toml (~/.config/retry/config.toml). --no-config reads none. A file named by --config or $RETRY_CONFIG must exist; the default one may not.",
            ),
            (
                "keys",
                "the long flag names without dashes: attempts = 5, max-time = \"2m\", retry-on = [5, 6, 7] or \"5-7\", verbose = true. Keys at the top are defaults for every run.",
            ),
            (
                "[profiles.NAME]",
                "a table of keys used with -p NAME; a built-in preset (curl, sysexits, ssh, git, apt) serves as a profile of its name. Flags win over the profile, which wins over the top of the file, which wins over the built-in defaults.",
            ),
            (
                "errors",
                "a bad value at the top of the file stops every run (exit 125, the file, the line and the key named); a bad profile stops only the runs that use it, and the others warn once.",
            ),
        ],
    ),
    (
        "SHARED STATE",
        &[
            (
                "--key NAME",
                "runs that give the same key share a circuit breaker and a retry budget. Name the target (a host, an API), not everything.",
            ),
            (
                "breaker",
                "opens after --breaker-failures consecutive retryable failures within --breaker-window; while open, a run exits 75 without running the command; after --breaker-open one run probes; a failed probe doubles the open time up to --breaker-open-max.",
            ),
            (
                "budget",
                "a token bucket of --budget-burst tokens: a retry costs one, a first attempt none, a success adds --budget-ratio, one comes back every --budget-refill. A spent budget ends the run with its last status.",
            ),
            (
                "where",
                "the state directory (--state-dir, $RETRY_STATE_DIR, $XDG_STATE_HOME/retry), one KEY.json and KEY.lock a key, or Redis with --state redis://... (rediss:// for TLS; redis-sentinel://S1,S2/DB?sentinelMasterId=NAME behind sentinels; redis+cluster://N1,N2 for a cluster), one hash retry:KEY, shared by a fleet. A store that fails before the command starts: local state and a warning (--state-fail open), or exit 75 (closed).",
            ),
            (
                "Redis ACL",
                "~retry:* resetchannels -@all +evalsha +eval +time +hgetall +hset +pexpire +del; +scan +pttl (and +cluster|nodes on a cluster) for --list-keys; +asking for a cluster whose slots migrate.",
            ),
            (
                "operators",
                "--explain --key K shows the key's state; --list-keys lists every key; --reset-state --key K forgets one. None of them runs the command.",
            ),
        ],
    ),
    (
        "LOG FORMAT",
        &[
            (
                "text",
                "one line per event on stderr (or --log-file), prefixed retry:, with the time first in a --log-file, with -v or with --log-time. A failure: the attempt, its status, how long it ran, the verdict, the next wait. The give-up and success lines end with the command, what looks like a credential in it shown as ***.",
            ),
            (
                "--log-format json",
                "one JSON object per event, with event, attempt, max_attempts, status, signal, duration_ms, delay_ms, reason, elapsed_ms, timestamp, level; command and name on give_up and success; exit on give_up when retry exits 22 or 1 for an attempt that exited 0; key, breaker, probe and tokens with --key.",
            ),
            (
                "events",
                "policy, splay and start (-v), failure, success, reset, signal, terminal_cancel, stop, not_started, hook, warning, give_up, state, refused, report.",
            ),
            (
                "levels",
                "-q keeps the give-up line only, -qq nothing; -v adds the policy, each start and a first-try success. A --log-file records every run, a first-try success included (not with -qq).",
            ),
        ],
    ),
];
