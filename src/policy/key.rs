//! A key's settings (`--key`): its name, the rules its runs share (the breaker's and the
//! budget's, [`KeyRules`]), and where its state is kept: the state directory, or a fleet's
//! Redis store (`--state URL`) with the local directory to fall back on. Plain data: the URL is
//! parsed and redacted in `state/url.rs`, and the stores are in `state/`. A password is held
//! where no `Debug` or `Display` can show it; every message shows the URL redacted.

use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

use clap::ValueEnum;

pub use super::shared::KeyRules;

/// The key a run shares its breaker and budget under, their rules, and where they are kept.
#[derive(Clone, Debug, PartialEq)]
pub struct KeySettings {
    pub key: String,
    /// The rules of the breaker and the budget.
    pub rules: KeyRules,
    /// The state directory; `None` when none is set and there is no home to put one in.
    pub dir: Option<PathBuf>,
    /// The fleet's store (`--state URL`); `None` keeps the state in `dir`.
    pub store: Option<Remote>,
}

/// The shared store of `--state`, how long a run may wait for it, and what to do without it.
#[derive(Clone, Debug, PartialEq)]
pub struct Remote {
    pub url: StoreUrl,
    /// The longest a run waits for the store, all its calls together.
    pub timeout: Duration,
    pub fail: FailMode,
}

/// What a run does when the store does not answer in time, or errs, before it starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum FailMode {
    /// Run with this host's local state (the state directory), and warn.
    Open,
    /// Exit 75 without running the command.
    Closed,
}

/// A password: shown as `***` by `Debug`, read only through [`Secret::expose`].
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    pub fn new(password: impl Into<String>) -> Secret {
        Secret(password.into())
    }

    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("***")
    }
}

/// Where the server is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Place {
    /// `redis://` (`tls: false`) or `rediss://`.
    Tcp { host: String, port: u16, tls: bool },
    /// `redis+unix:///path`.
    Unix(PathBuf),
    /// `redis-sentinel://`: the sentinels to ask for the address of the master they call
    /// `master`; the URL's user and password are the master's, `sentinel` the sentinels' own.
    Sentinel {
        sentinels: Vec<(String, u16)>,
        master: String,
        tls: bool,
        sentinel: Option<(Option<String>, Secret)>,
    },
    /// `redis+cluster://`: nodes of a Redis Cluster; the node that holds a key is found by
    /// following its MOVED answer.
    Cluster {
        nodes: Vec<(String, u16)>,
        tls: bool,
    },
}

impl Place {
    /// Whether the connections are TLS.
    pub fn tls(&self) -> bool {
        match self {
            Place::Tcp { tls, .. } | Place::Sentinel { tls, .. } | Place::Cluster { tls, .. } => {
                *tls
            }
            Place::Unix(_) => false,
        }
    }
}

/// A Redis URL: `redis://[USER[:PASSWORD]@]HOST[:PORT][/DB]`, `rediss://` for TLS, or
/// `redis+unix://[USER[:PASSWORD]@]/PATH[?db=DB]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoreUrl {
    pub place: Place,
    pub user: Option<String>,
    pub password: Option<Secret>,
    pub db: u32,
}

impl StoreUrl {
    /// The URL as every message shows it: the password replaced by `***`.
    pub fn redacted(&self) -> String {
        let userinfo = match (&self.user, &self.password) {
            (None, None) => String::new(),
            (Some(u), None) => format!("{u}@"),
            (u, Some(_)) => format!("{}:***@", u.as_deref().unwrap_or("")),
        };
        self.shown(&userinfo)
    }

    /// The URL without its user or password: the metrics' `backend` label.
    pub fn label(&self) -> String {
        self.shown("")
    }

    fn shown(&self, userinfo: &str) -> String {
        match &self.place {
            Place::Tcp { host, port, tls } => {
                let scheme = if *tls { "rediss" } else { "redis" };
                let host = if host.contains(':') {
                    format!("[{host}]")
                } else {
                    host.clone()
                };
                format!("{scheme}://{userinfo}{host}:{port}/{}", self.db)
            }
            Place::Unix(path) => {
                let db = if self.db == 0 {
                    String::new()
                } else {
                    format!("?db={}", self.db)
                };
                format!("redis+unix://{userinfo}{}{db}", path.display())
            }
            Place::Sentinel {
                sentinels,
                master,
                tls,
                sentinel,
            } => {
                let scheme = if *tls {
                    "rediss-sentinel"
                } else {
                    "redis-sentinel"
                };
                let auth = match sentinel {
                    Some((Some(user), _)) => format!("&sentinelUser={user}&sentinelPassword=***"),
                    Some((None, _)) => "&sentinelPassword=***".into(),
                    None => String::new(),
                };
                format!(
                    "{scheme}://{userinfo}{}/{}?sentinelMasterId={master}{auth}",
                    hosts(sentinels),
                    self.db
                )
            }
            Place::Cluster { nodes, tls } => {
                let scheme = if *tls {
                    "rediss+cluster"
                } else {
                    "redis+cluster"
                };
                format!("{scheme}://{userinfo}{}", hosts(nodes))
            }
        }
    }
}

/// `host:port,host:port`, an IPv6 address in brackets.
fn hosts(list: &[(String, u16)]) -> String {
    list.iter()
        .map(|(host, port)| {
            if host.contains(':') {
                format!("[{host}]:{port}")
            } else {
                format!("{host}:{port}")
            }
        })
        .collect::<Vec<_>>()
        .join(",")
}
