//! Where a fleet's shared state lives (`--state URL`): the URL, parsed and checked,
//! and what to do when the store cannot be reached. A password is held where no `Debug` or
//! `Display` can show it; every message shows the URL redacted.

use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

use clap::ValueEnum;

/// The shared store of `--state`, how long a run may wait for it, and what to do without it.
#[derive(Clone, Debug, PartialEq)]
pub struct StoreSettings {
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

/// Redis's port when the URL names none.
pub const DEFAULT_PORT: u16 = 6379;

const FORMS: &str =
    "use redis://[USER:PASSWORD@]HOST[:PORT][/DB], rediss://... for TLS, or redis+unix:///PATH";

impl StoreUrl {
    /// Parses a URL; the error says what is wrong and never repeats the password (the caller
    /// names the value with [`redact`]).
    pub fn parse(text: &str) -> Result<StoreUrl, String> {
        let Some((scheme, rest)) = text.split_once("://") else {
            return Err(format!("it is not a Redis URL: {FORMS}"));
        };
        let (tls, unix) = match scheme.to_ascii_lowercase().as_str() {
            "redis" => (false, false),
            "rediss" => (true, false),
            "redis+unix" => (false, true),
            _ => return Err(format!("'{scheme}://' is not a Redis URL scheme: {FORMS}")),
        };
        // The authority ends at the first '/', as in any URL; a '/' in a password must be
        // written %2F.
        let (authority, path) = match rest.find('/') {
            Some(i) => rest.split_at(i),
            None => (rest, ""),
        };
        let (userinfo, host) = match authority.rfind('@') {
            Some(i) => (Some(&authority[..i]), &authority[i + 1..]),
            None => (None, authority),
        };
        let (user, password) = match userinfo {
            None => (None, None),
            Some(info) => {
                let (user, password) = match info.split_once(':') {
                    Some((u, p)) => (u, Some(p)),
                    None => (info, None),
                };
                let user = Some(decode(user)?).filter(|u| !u.is_empty());
                let password = match password {
                    Some(p) => Some(Secret(decode(p)?)).filter(|p| !p.0.is_empty()),
                    None => None,
                };
                (user, password)
            }
        };
        if unix {
            if !host.is_empty() {
                return Err(format!(
                    "redis+unix:// takes a path, not a host ('{host}'): write redis+unix:///PATH"
                ));
            }
            let (path, query) = match path.split_once('?') {
                Some((p, q)) => (p, Some(q)),
                None => (path, None),
            };
            if path.len() < 2 {
                return Err("redis+unix:// needs the socket's path: redis+unix:///PATH".into());
            }
            let db = match query {
                None => 0,
                Some(q) => match q.strip_prefix("db=") {
                    Some(n) => db(n)?,
                    None => return Err(format!("'?{q}' is not understood: only ?db=N is")),
                },
            };
            return Ok(StoreUrl {
                place: Place::Unix(PathBuf::from(decode(path)?)),
                user,
                password,
                db,
            });
        }
        if path.contains(['?', '#']) || host.contains(['?', '#']) {
            return Err(format!("a query or fragment is not understood: {FORMS}"));
        }
        let (host, port) = split_port(host)?;
        if host.is_empty() {
            return Err(format!("it names no host: {FORMS}"));
        }
        let db = match path.trim_start_matches('/') {
            "" => 0,
            n => db(n)?,
        };
        Ok(StoreUrl {
            place: Place::Tcp {
                host: host.to_string(),
                port,
                tls,
            },
            user,
            password,
            db,
        })
    }

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
        }
    }
}

/// A URL as the user wrote it, for an error message: whatever stands between `://` and the
/// last `@` after the user name is replaced by `***`, whether or not the rest parses.
pub fn redact(text: &str) -> String {
    let Some(start) = text.find("://").map(|i| i + 3) else {
        return text.to_string();
    };
    let Some(at) = text[start..].rfind('@').map(|i| start + i) else {
        return text.to_string();
    };
    match text[start..at].find(':') {
        Some(colon) => format!("{}:***{}", &text[..start + colon], &text[at..]),
        None => text.to_string(),
    }
}

/// `host`, `host:port`, `[v6]` or `[v6]:port`.
fn split_port(authority: &str) -> Result<(&str, u16), String> {
    let (host, port) = if let Some(inner) = authority.strip_prefix('[') {
        match inner.split_once(']') {
            Some((host, "")) => (host, None),
            Some((host, rest)) => match rest.strip_prefix(':') {
                Some(port) => (host, Some(port)),
                None => return Err(format!("'{authority}' is not a host and port")),
            },
            None => return Err(format!("'{authority}' opens a '[' it does not close")),
        }
    } else {
        match authority.rsplit_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (authority, None),
        }
    };
    let port = match port {
        None => DEFAULT_PORT,
        Some(p) => match p.parse::<u16>() {
            Ok(n) if n > 0 => n,
            _ => return Err(format!("'{p}' is not a port number (1 to 65535)")),
        },
    };
    Ok((host, port))
}

fn db(n: &str) -> Result<u32, String> {
    n.parse()
        .map_err(|_| format!("'{n}' is not a database number (0, 1, ...)"))
}

/// Percent-decoding, as URLs encode a user, a password or a path.
fn decode(s: &str) -> Result<String, String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = s
                .get(i + 1..i + 3)
                .and_then(|h| u8::from_str_radix(h, 16).ok());
            match hex {
                Some(b) => {
                    out.push(b);
                    i += 3;
                    continue;
                }
                None => return Err("a '%' in it is not followed by two hex digits".into()),
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8(out).map_err(|_| "a %-escape in it is not UTF-8".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tcp(host: &str, port: u16, tls: bool) -> Place {
        Place::Tcp {
            host: host.into(),
            port,
            tls,
        }
    }

    #[test]
    fn the_three_forms_parse() {
        let u = StoreUrl::parse("redis://retry:s%40cret@cache.example.com:6380/2").expect("ok");
        assert_eq!(u.place, tcp("cache.example.com", 6380, false));
        assert_eq!(u.user.as_deref(), Some("retry"));
        assert_eq!(u.password.as_ref().map(Secret::expose), Some("s@cret"));
        assert_eq!(u.db, 2);
        let u = StoreUrl::parse("rediss://h").expect("ok");
        assert_eq!((u.place, u.db, u.user), (tcp("h", 6379, true), 0, None));
        let u = StoreUrl::parse("redis://:pw@[::1]:7000").expect("ok");
        assert_eq!(u.place, tcp("::1", 7000, false));
        assert_eq!(u.user, None);
        let u = StoreUrl::parse("redis+unix:///run/redis/redis.sock?db=3").expect("ok");
        assert_eq!(u.place, Place::Unix("/run/redis/redis.sock".into()));
        assert_eq!(u.db, 3);
    }

    #[test]
    fn bad_urls_say_what_is_wrong() {
        for (text, word) in [
            ("http://x", "'http://' is not a Redis URL scheme"),
            ("localhost:6379", "not a Redis URL"),
            ("redis://h:99999", "'99999' is not a port"),
            ("redis://h:0", "'0' is not a port"),
            ("redis://h:x", "'x' is not a port"),
            ("redis://h/x", "'x' is not a database"),
            ("redis://", "names no host"),
            ("redis://h?protocol=resp3", "query"),
            ("redis+unix://h/sock", "takes a path"),
            ("redis+unix://", "needs the socket's path"),
            ("redis://u:%zz@h", "hex digits"),
        ] {
            let e = StoreUrl::parse(text).expect_err(text);
            assert!(e.contains(word), "{text}: {e}");
        }
    }

    #[test]
    fn no_message_shows_the_password() {
        let u = StoreUrl::parse("redis://retry:hunter2@h:1/0").expect("ok");
        assert_eq!(u.redacted(), "redis://retry:***@h:1/0");
        assert_eq!(u.label(), "redis://h:1/0");
        assert!(!format!("{u:?}").contains("hunter2"));
        let u = StoreUrl::parse("redis+unix://:hunter2@/s").expect("ok");
        assert_eq!(u.redacted(), "redis+unix://:***@/s");
        assert_eq!(redact("redis://u:hunter2@h:99999"), "redis://u:***@h:99999");
        assert_eq!(redact("redis://u:a@b@h"), "redis://u:***@h");
        assert_eq!(redact("redis://h:1"), "redis://h:1");
        assert_eq!(redact("nonsense"), "nonsense");
    }
}
