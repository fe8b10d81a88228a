//! The environment contract: the variables retry gives each attempt and each hook, the ones it
//! reads, and the `{hints}` placeholder. Every other module names them from here.

use std::time::Duration;

/// The attempt's number, from 1.
pub const ATTEMPT: &str = "RETRY_ATTEMPT";
/// The attempt limit; empty without one. Read by a retry inside an attempt of another.
pub const MAX_ATTEMPTS: &str = "RETRY_MAX_ATTEMPTS";
/// The previous attempt's status; empty on the first.
pub const PREVIOUS_EXIT: &str = "RETRY_PREVIOUS_EXIT";
/// Milliseconds left before `--max-time`; empty without one.
pub const REMAINING_MS: &str = "RETRY_REMAINING_MS";
/// One value for every attempt of a run (and of the retries inside it).
pub const IDEMPOTENCY_KEY: &str = "RETRY_IDEMPOTENCY_KEY";
/// 1 for a top-level retry, 2 inside another's attempt, and so on.
pub const DEPTH: &str = "RETRY_DEPTH";
/// The attempt's hint file (`--hints`).
pub const HINT_FILE: &str = "RETRY_HINT_FILE";
/// A hook's: the status of the attempt that failed.
pub const STATUS: &str = "RETRY_STATUS";
/// `--on-retry`'s: the wait before the next attempt, in milliseconds.
pub const NEXT_DELAY_MS: &str = "RETRY_NEXT_DELAY_MS";
/// `--on-giveup`'s: why retry gives up.
pub const REASON: &str = "RETRY_REASON";
/// Read: the config file.
pub const CONFIG: &str = "RETRY_CONFIG";
/// Read: the state directory.
pub const STATE_DIR: &str = "RETRY_STATE_DIR";
/// Read: the fleet's store.
pub const STATE_URL: &str = "RETRY_STATE_URL";
/// Read: `--stop-with-parent` (1) or `--no-stop-with-parent` (0) when neither is given.
pub const STOP_WITH_PARENT: &str = "RETRY_STOP_WITH_PARENT";

/// In the command's arguments, replaced by the attempt's hint file.
pub const HINTS: &str = "{hints}";

/// The variables retry sets for each attempt; a retry above has set them too, so the
/// environment it passes on is cleared of them first.
pub const GIVEN: [&str; 7] = [
    ATTEMPT,
    MAX_ATTEMPTS,
    PREVIOUS_EXIT,
    REMAINING_MS,
    IDEMPOTENCY_KEY,
    DEPTH,
    HINT_FILE,
];

/// The attempt's own variables, which a hook must not inherit from a retry above this one.
pub const ATTEMPT_ONLY: [&str; 4] = [PREVIOUS_EXIT, REMAINING_MS, HINT_FILE, NEXT_DELAY_MS];

/// A variable and its value, as a hook is given it.
pub type Var = (String, String);

/// `--on-retry`'s own variables.
pub fn on_retry(status: i32, delay: Duration) -> Vec<Var> {
    vec![
        (STATUS.to_string(), status.to_string()),
        (NEXT_DELAY_MS.to_string(), delay.as_millis().to_string()),
    ]
}

/// `--on-giveup`'s own variables.
pub fn on_giveup(status: i32, why: &str) -> Vec<Var> {
    vec![
        (STATUS.to_string(), status.to_string()),
        (REASON.to_string(), why.to_string()),
    ]
}

/// What every hook is told of the attempt it follows.
pub fn attempt(attempt: u32, max: Option<u32>) -> [Var; 2] {
    [
        (ATTEMPT.to_string(), attempt.to_string()),
        (
            MAX_ATTEMPTS.to_string(),
            max.map(|n| n.to_string()).unwrap_or_default(),
        ),
    ]
}
