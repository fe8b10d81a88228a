//! The built-in defaults, each defined once and named after its flag: the help shows them
//! (`setup::cli`), the policy is built from them where a flag is not given
//! (`setup::validate`), and the simulator uses them (`--explain --fleet` beside a key). Pure
//! data.

use std::time::Duration;

use super::backoff::Jitter;
use super::breaker::BreakerSettings;
use super::budget::BudgetSettings;
use super::key::FailMode;
use super::output_rules::MatchStream;
use super::shared::KeyRules;
use super::status::SIGTERM;
use super::{ColorChoice, LogFormat};
use super::{StdinMode, StdoutMode};

/// `--attempts`: total attempts, the first included.
pub const ATTEMPTS: u32 = 5;
/// `--delay`: the base delay before the first retry.
pub const DELAY: Duration = Duration::from_secs(1);
/// `--factor`: the multiplier of exponential backoff.
pub const FACTOR: f64 = 2.0;
/// `--max-delay`: the cap on a delay, unless a longer `--delay` or `--delays` raises it.
pub const MAX_DELAY: Duration = Duration::from_secs(60);
/// `--jitter`.
pub const JITTER: Jitter = Jitter::Full;
/// `--match-stream`: the output streams the output rules read.
pub const MATCH_STREAM: MatchStream = MatchStream::Both;
/// `--retry-on-http`: the HTTP statuses that are retried.
pub const RETRY_ON_HTTP: [i32; 7] = [408, 425, 429, 500, 502, 503, 504];
/// `--retry-after-max`: the longest wait a Retry-After header can ask for.
pub const RETRY_AFTER_MAX: Duration = Duration::from_secs(5 * 60);
/// `--kill-signal`.
pub const KILL_SIGNAL: i32 = SIGTERM;
/// `--kill-after`: from `--kill-signal` to SIGKILL.
pub const KILL_AFTER: Duration = Duration::from_secs(10);
/// `--stdin`.
pub const STDIN: StdinMode = StdinMode::Auto;
/// `--stdout`.
pub const STDOUT: StdoutMode = StdoutMode::Pass;
/// `--log-format`.
pub const LOG_FORMAT: LogFormat = LogFormat::Text;
/// `--color`.
pub const COLOR: ColorChoice = ColorChoice::Auto;
/// `--hook-timeout`: the longest a hook may run.
pub const HOOK_TIMEOUT: Duration = Duration::from_secs(30);
/// `--breaker-failures`: consecutive failed attempts that open the breaker.
pub const BREAKER_FAILURES: u32 = 5;
/// `--breaker-window`: failures older than this do not count.
pub const BREAKER_WINDOW: Duration = Duration::from_secs(60 * 60);
/// `--breaker-open`: how long the breaker stays open the first time.
pub const BREAKER_OPEN: Duration = Duration::from_secs(60);
/// `--breaker-open-max`: the longest the breaker stays open.
pub const BREAKER_OPEN_MAX: Duration = Duration::from_secs(15 * 60);
/// `--budget-burst`: tokens in a full retry budget.
pub const BUDGET_BURST: u32 = 10;
/// The most tokens `--budget-burst` takes: more is no budget at all.
pub const MOST_TOKENS: u32 = 100_000;
/// The most processes `--fleet` simulates.
pub const MOST_PROCESSES: u32 = 100_000;
/// `--budget-ratio`: tokens a successful attempt adds.
pub const BUDGET_RATIO: f64 = 0.1;
/// `--budget-refill`: one token comes back every this long.
pub const BUDGET_REFILL: Duration = Duration::from_secs(60);
/// How long a probe holds the breaker's lease without `--attempt-timeout`.
pub const LEASE: Duration = Duration::from_secs(60);
/// `--state-timeout`: the longest a run waits for the `--state` store.
pub const STATE_TIMEOUT: Duration = Duration::from_millis(500);
/// `--state-fail`: what a run does when the `--state` store cannot be reached.
pub const STATE_FAIL: FailMode = FailMode::Open;
/// `--splay`: the longest random wait before the first attempt; none. The fleet
/// `--explain --fleet` simulates starts as real runs do, so its default is this one too.
pub const SPLAY: Duration = Duration::ZERO;
/// `--outage`: how long the service `--explain --fleet` simulates is down.
pub const OUTAGE: Duration = Duration::from_secs(5 * 60);
/// `--every`: how often each process `--explain --fleet` simulates runs the job.
pub const EVERY: Duration = Duration::from_secs(5 * 60);
/// `--call-time`: how long one call of the job `--explain --fleet` simulates takes.
pub const CALL_TIME: Duration = Duration::from_millis(100);
/// `--store-rate`: script calls a second one key's `--state` store answers, in the fleet
/// `--explain --fleet` simulates. Measured (`cargo bench --bench storerate`, docs/redis.md): a
/// run in an outage makes an admission and records a failure, the dearest pair; this is that
/// mix's rate on two cores, rounded down.
pub const STORE_RATE: u32 = 14_000;
/// The most `--store-rate` takes.
pub const MOST_STORE_RATE: u32 = 10_000_000;

impl Default for BreakerSettings {
    /// `--breaker-failures`, `--breaker-window`, `--breaker-open` and `--breaker-open-max`.
    fn default() -> Self {
        BreakerSettings {
            failures: BREAKER_FAILURES,
            window: BREAKER_WINDOW,
            open: BREAKER_OPEN,
            open_max: BREAKER_OPEN_MAX,
        }
    }
}

impl Default for BudgetSettings {
    /// `--budget-burst`, `--budget-ratio` and `--budget-refill`.
    fn default() -> Self {
        BudgetSettings {
            burst: BUDGET_BURST,
            ratio: BUDGET_RATIO,
            refill: BUDGET_REFILL,
        }
    }
}

impl Default for KeyRules {
    /// What `--key` turns on by default: the breaker and the budget, the lease without
    /// `--attempt-timeout`, and no history (which only `--backoff adaptive` keeps).
    fn default() -> Self {
        KeyRules {
            breaker: BreakerSettings::default(),
            budget: BudgetSettings::default(),
            lease: LEASE,
            history: false,
        }
    }
}
