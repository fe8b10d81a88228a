//! Where a fleet's shared state lives (`--state URL`): the URL, parsed and checked,
//! and what to do when the store cannot be reached. A password is held where no `Debug` or
//! `Display` can show it; every message shows the URL redacted.

use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

use clap::ValueEnum;
use url::{Host, ParseError, Url};

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

/// Redis's port when the URL names none.
pub const DEFAULT_PORT: u16 = 6379;
/// A sentinel's port when the URL names none.
pub const SENTINEL_PORT: u16 = 26379;

const FORMS: &str = "use redis://[USER:PASSWORD@]HOST[:PORT][/DB], rediss://... for TLS, \
     redis+unix:///PATH, redis-sentinel://HOST[:PORT][,HOST...]/DB?sentinelMasterId=NAME or \
     redis+cluster://HOST[:PORT][,HOST...]";

const UNESCAPED: &str = "a '/', '?' or '#' in the user or password ends the host's part of a \
     URL early: write them %2F, %3F and %23";

impl StoreUrl {
    /// Parses a URL with the `url` crate (as redis-rs does); the error says what is wrong and
    /// never repeats any of the user's password, or of what may be one (the caller names the
    /// value with [`redact`]). Only the scheme and what follows the authority's last `@` are
    /// ever quoted, and only once the URL's `@` is known to end the authority.
    pub fn parse(text: &str) -> Result<StoreUrl, String> {
        let Some((scheme, rest)) = text.split_once("://") else {
            return Err(format!("it is not a Redis URL: {FORMS}"));
        };
        let (tls, unix) = match scheme.to_ascii_lowercase().as_str() {
            "redis" => (false, false),
            "rediss" => (true, false),
            "redis+unix" => (false, true),
            "redis-sentinel" => return StoreUrl::several(rest, false, true),
            "rediss-sentinel" => return StoreUrl::several(rest, true, true),
            "redis+cluster" => return StoreUrl::several(rest, false, false),
            "rediss+cluster" => return StoreUrl::several(rest, true, false),
            _ => return Err(format!("'{scheme}://' is not a Redis URL scheme: {FORMS}")),
        };
        // The authority ends at the first '/', '?' or '#', as in any URL. A user or password
        // holding one of them unescaped (a base64 password holds '/') ends it early, and then
        // the '@' after them is beyond it: a URL cannot say that, so it is an error, and what
        // stands before that '@' may be a password that no message may quote.
        let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
        let (authority, tail) = rest.split_at(end);
        let userinfo_done = authority.is_empty() || authority.ends_with('@');
        if tail.contains('@') && !(unix && userinfo_done) {
            return Err(UNESCAPED.into());
        }
        // Nothing of the userinfo is past its last '@'.
        let hostport = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
        if unix {
            if !userinfo_done {
                return Err(format!(
                    "redis+unix:// takes a path, not a host ('{hostport}'): write redis+unix:///PATH"
                ));
            }
            // The url crate wants a host after a user or password: a placeholder stands in.
            let url = Url::parse(&format!("redis+unix://{authority}localhost{tail}"))
                .map_err(|_| format!("it is not a Redis URL: {FORMS}"))?;
            if url.path().len() < 2 {
                return Err("redis+unix:// needs the socket's path: redis+unix:///PATH".into());
            }
            if url.fragment().is_some() {
                return Err("a fragment ('#') is not understood: only ?db=N is".into());
            }
            let db = match url.query() {
                None => 0,
                Some(q) => match q.strip_prefix("db=") {
                    Some(n) => db(n)?,
                    None => return Err(format!("'?{q}' is not understood: only ?db=N is")),
                },
            };
            let (user, password) = userinfo(&url)?;
            return Ok(StoreUrl {
                place: Place::Unix(PathBuf::from(decode(url.path())?)),
                user,
                password,
                db,
            });
        }
        let url = Url::parse(text).map_err(|e| match e {
            ParseError::InvalidPort => not_a_port(port_text(hostport)),
            ParseError::InvalidIpv6Address if !hostport.contains(']') => {
                format!("'{hostport}' opens a '[' it does not close")
            }
            _ => format!("'{hostport}' is not a host name: {FORMS}"),
        })?;
        if url.query().is_some() || url.fragment().is_some() {
            return Err(format!("a query or fragment is not understood: {FORMS}"));
        }
        let host = match url.host() {
            Some(Host::Ipv6(ip)) => ip.to_string(),
            Some(Host::Ipv4(ip)) => ip.to_string(),
            Some(Host::Domain(name)) if !name.is_empty() => name.to_string(),
            _ => return Err(format!("it names no host: {FORMS}")),
        };
        let port = match url.port() {
            Some(0) => return Err(not_a_port("0")),
            Some(port) => port,
            // The url crate reads "host:" as the default port; a port left out is written
            // without its ':'.
            None if hostport.ends_with(':') => return Err(not_a_port("")),
            None => DEFAULT_PORT,
        };
        let db = match url.path().trim_start_matches('/') {
            "" => 0,
            n => db(n)?,
        };
        let (user, password) = userinfo(&url)?;
        Ok(StoreUrl {
            place: Place::Tcp { host, port, tls },
            user,
            password,
            db,
        })
    }

    /// A URL that names several hosts: sentinels (`redis-sentinel://`, as Lettuce and Spring
    /// write it, with `?sentinelMasterId=NAME`) or a cluster's nodes (`redis+cluster://`).
    /// `rest` is what follows `://`.
    fn several(rest: &str, tls: bool, sentinel: bool) -> Result<StoreUrl, String> {
        let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
        let (authority, tail) = rest.split_at(end);
        if tail.contains('@') {
            return Err(UNESCAPED.into());
        }
        let (userinfo, hosts) = match authority.rsplit_once('@') {
            Some((u, h)) => (format!("{u}@"), h),
            None => (String::new(), authority),
        };
        let default_port = if sentinel {
            SENTINEL_PORT
        } else {
            DEFAULT_PORT
        };
        let mut places = Vec::new();
        for host in hosts.split(',') {
            if host.is_empty() {
                return Err(format!("it names no host: {FORMS}"));
            }
            let port_given = !port_text(host).is_empty() || host.ends_with(':');
            let one = StoreUrl::parse(&format!("redis://{host}"))?;
            match one.place {
                Place::Tcp { host, port, .. } => {
                    places.push((host, if port_given { port } else { default_port }));
                }
                _ => return Err(format!("'{host}' is not a host name: {FORMS}")),
            }
        }
        // The user, the password and the database, read as for one host.
        let (path, query) = tail.split_once('?').unwrap_or((tail, ""));
        let first = StoreUrl::parse(&format!("redis://{userinfo}{}{path}", places[0].0))?;
        let mut master = None;
        let mut sentinel_user = None;
        let mut sentinel_password = None;
        for pair in query.split('&').filter(|p| !p.is_empty()) {
            match pair.split_once('=') {
                Some(("sentinelMasterId", name)) if sentinel && !name.is_empty() => {
                    master = Some(decode(name)?);
                }
                Some(("sentinelUser", user)) if sentinel => sentinel_user = Some(decode(user)?),
                Some(("sentinelPassword", password)) if sentinel => {
                    sentinel_password = Some(Secret(decode(password)?));
                }
                _ if sentinel_password.is_some() => {
                    return Err(
                        "a parameter after sentinelPassword= is not understood: a '&' in a \
                         password is written %26"
                            .into(),
                    );
                }
                _ => {
                    let name = pair.split('=').next().unwrap_or_default();
                    return Err(format!(
                        "'?{name}=' is not understood: {}",
                        if sentinel {
                            "give ?sentinelMasterId=NAME, and sentinelUser= and sentinelPassword= when the sentinels have their own"
                        } else {
                            "a cluster URL takes no query"
                        }
                    ));
                }
            }
        }
        let place = if sentinel {
            let Some(master) = master else {
                return Err(
                    "a sentinel URL names the master: add ?sentinelMasterId=NAME, the name the \
                     sentinels monitor it by"
                        .into(),
                );
            };
            Place::Sentinel {
                sentinels: places,
                master,
                tls,
                sentinel: sentinel_password.map(|p| (sentinel_user, p)),
            }
        } else {
            if first.db != 0 {
                return Err(format!(
                    "a Redis Cluster has database 0 only, not {}: leave /{} out",
                    first.db, first.db
                ));
            }
            Place::Cluster { nodes: places, tls }
        };
        Ok(StoreUrl { place, ..first })
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

/// A URL as the user wrote it, for an error message, with every secret masked whether or not
/// it parses: whatever stands between `://` and the last `@` after the user name is replaced by
/// `***` (a user name that could not be one, holding a '/', '?' or '#', goes too; without `://`
/// everything before the last `@`), and so is the value of every query parameter that may hold
/// one ([`secret_parameter`]), up to the next parameter retry knows. The one function every
/// message that shows a URL from the user goes through.
pub fn redact(text: &str) -> String {
    let text = &redact_query(text);
    let Some(at) = text.rfind('@') else {
        return text.to_string();
    };
    let Some(start) = text[..at].find("://").map(|i| i + 3) else {
        return format!("***{}", &text[at..]);
    };
    let userinfo = &text[start..at];
    match userinfo.find(':') {
        Some(colon) if !userinfo[..colon].contains(['/', '?', '#']) => {
            format!("{}:***{}", &text[..start + colon], &text[at..])
        }
        Some(_) => format!("{}***{}", &text[..start], &text[at..]),
        None if userinfo.contains(['/', '?', '#']) => {
            format!("{}***{}", &text[..start], &text[at..])
        }
        None => text.to_string(),
    }
}

/// The parameters a store URL may hold besides secrets: a secret's value runs on to the next of
/// them, so that a password holding an unescaped '&' is masked whole.
const KNOWN_PARAMETERS: [&str; 3] = ["sentinelMasterId", "sentinelUser", "db"];

/// Whether a query parameter's value may be a secret: its name says so (`sentinelPassword`,
/// `password`, `auth`, `token`, `secret`, `pwd`, `key`).
fn secret_parameter(name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    ["pass", "auth", "token", "secret", "pwd", "key"]
        .iter()
        .any(|word| name.contains(word))
}

/// The query (from the first `?`) with each secret parameter's value masked.
fn redact_query(text: &str) -> String {
    let Some(q) = text.find('?') else {
        return text.to_string();
    };
    let (head, query) = text.split_at(q + 1);
    let mut out = head.to_string();
    let mut masking = false;
    for (i, pair) in query.split('&').enumerate() {
        let name = pair.split('=').next().unwrap_or_default();
        let known = KNOWN_PARAMETERS
            .iter()
            .any(|k| k.eq_ignore_ascii_case(name))
            || name.eq_ignore_ascii_case("sentinelPassword");
        if masking && !known {
            // Still the secret: a '&' in it.
            continue;
        }
        masking = false;
        if i > 0 {
            out.push('&');
        }
        match pair.split_once('=') {
            Some((name, _)) if secret_parameter(name) => {
                out.push_str(name);
                out.push_str("=***");
                masking = true;
            }
            _ => out.push_str(pair),
        }
    }
    out
}

/// The URL's user and password, decoded.
fn userinfo(url: &Url) -> Result<(Option<String>, Option<Secret>), String> {
    let user = Some(decode(url.username())?).filter(|u| !u.is_empty());
    let password = match url.password() {
        Some(p) => Some(Secret(decode(p)?)).filter(|p| !p.0.is_empty()),
        None => None,
    };
    Ok((user, password))
}

/// The port as written after `host:` or `[v6]:`.
fn port_text(hostport: &str) -> &str {
    let after_host = match hostport.strip_prefix('[') {
        Some(inner) => inner.split_once(']').map_or("", |(_, rest)| rest),
        None => hostport,
    };
    after_host.rsplit_once(':').map_or("", |(_, port)| port)
}

fn not_a_port(p: &str) -> String {
    format!("'{p}' is not a port number (1 to 65535)")
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
    fn sentinel_and_cluster_urls_name_several_hosts() {
        let u = StoreUrl::parse(
            "redis-sentinel://retry:pw@s1,s2:26380,[::1]/2?sentinelMasterId=mymaster&sentinelPassword=sp%40ss",
        )
        .expect("ok");
        let Place::Sentinel {
            sentinels,
            master,
            tls,
            sentinel,
        } = &u.place
        else {
            panic!("{u:?}");
        };
        assert_eq!(
            sentinels,
            &[
                ("s1".to_string(), 26379),
                ("s2".to_string(), 26380),
                ("::1".to_string(), 26379)
            ]
        );
        assert_eq!((master.as_str(), *tls, u.db), ("mymaster", false, 2));
        assert_eq!(sentinel.as_ref().map(|(_, p)| p.expose()), Some("sp@ss"));
        assert_eq!(u.password.as_ref().map(Secret::expose), Some("pw"));
        assert_eq!(
            u.redacted(),
            "redis-sentinel://retry:***@s1:26379,s2:26380,[::1]:26379/2?sentinelMasterId=mymaster&sentinelPassword=***"
        );
        let u = StoreUrl::parse("rediss+cluster://retry:pw@n1:7000,n2").expect("ok");
        assert_eq!(
            u.place,
            Place::Cluster {
                nodes: vec![("n1".into(), 7000), ("n2".into(), 6379)],
                tls: true
            }
        );
        assert_eq!(u.redacted(), "rediss+cluster://retry:***@n1:7000,n2:6379");
        for (text, word) in [
            ("redis-sentinel://s1", "sentinelMasterId"),
            (
                "redis-sentinel://s1?sentinelMasterId=m&x=1",
                "'?x=' is not understood",
            ),
            ("redis+cluster://n1/3", "database 0 only"),
            ("redis+cluster://n1,,n2", "names no host"),
            ("redis+cluster://n1:99999", "not a port"),
        ] {
            let e = StoreUrl::parse(text).expect_err(text);
            assert!(e.contains(word), "{text}: {e}");
        }
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
        assert_eq!(redact("redis:/u:hunter2@h"), "***@h");
        assert_eq!(redact("redis://hun/ter2:x@h"), "redis://***@h");
    }

    #[test]
    fn a_password_with_a_slash_is_written_escaped_and_never_quoted() {
        let u = StoreUrl::parse("redis://cron:Pw0rd%2FKx+7=@h/1").expect("ok");
        assert_eq!(u.password.as_ref().map(Secret::expose), Some("Pw0rd/Kx+7="));
        assert_eq!((u.user.as_deref(), u.db), (Some("cron"), 1));
        let u = StoreUrl::parse("redis+unix://cron:a%2Fb@/run/redis@main.sock?db=2").expect("ok");
        assert_eq!(u.place, Place::Unix("/run/redis@main.sock".into()));
        assert_eq!(u.password.as_ref().map(Secret::expose), Some("a/b"));
        assert_eq!((u.user.as_deref(), u.db), (Some("cron"), 2));
        for text in [
            "redis://cron:Pw0rd/Kx+7=@h/0",
            "redis://cron:Pw0rd?Kx@h:99999",
            "redis://cron:Pw0rd#Kx@h/x",
            "redis+unix://:Pw0rd/Kx@/run/redis.sock",
        ] {
            let e = StoreUrl::parse(text).expect_err(text);
            assert!(e.contains("%2F") && !e.contains("Pw0"), "{text}: {e}");
        }
    }
    /// Every form of SPEC §10, valid and malformed, with the master's and the sentinels'
    /// passwords in every place a password can stand: no message and no shown URL holds any
    /// three characters of either.
    #[test]
    fn no_part_of_any_password_is_in_any_message() {
        const MASTER: &str = "Zq9xW7kP";
        const SENTINEL: &str = "Yw5nTz3R";
        let forms = [
            "redis://u:Zq9xW7kP@h:6379/0",
            "redis://:Zq9xW7kP@h",
            "rediss://u:Zq9xW7kP@h:99999",
            "redis://u:Zq9xW7kP@h/x",
            "redis://u:Zq9/xW7kP@h/0",
            "redis://u:Zq9?xW7kP@h",
            "redis://u:Zq9#xW7kP@h",
            "redis://u:Zq9%zzxW7kP@h",
            "redis://u:Zq9xW7kP@",
            "redis://u:Zq9xW7kP@h?x=1",
            "redis:/u:Zq9xW7kP@h",
            "u:Zq9xW7kP@h",
            "redis+unix://u:Zq9xW7kP@/run/r.sock?db=x",
            "redis+unix://:Zq9xW7kP@h/sock",
            "redis+unix://:Zq9/xW7kP@/run/r.sock",
            "redis-sentinel://:Zq9xW7kP@h1,h2/0?sentinelMasterId=m&sentinelPassword=Yw5nTz3R",
            "redis-sentinel://:pa/ss@h1,h2/0?sentinelMasterId=m&sentinelPassword=Yw5nTz3R",
            "redis-sentinel://u:Zq9xW7kP@h1,h2:99999/0?sentinelMasterId=m&sentinelPassword=Yw5nTz3R",
            "redis-sentinel://h1/0?sentinelPassword=Yw5nTz3R",
            "redis-sentinel://h1/0?sentinelMasterId=m&sentinelUser=s&sentinelPassword=Yw5n&Tz3R",
            "redis-sentinel://h1/0?sentinelPassword=Yw5n%zzTz3R&sentinelMasterId=m",
            "redis-sentinel://h1/0?sentinelMasterId=m&sentinelPassword=Yw5n@Tz3R",
            "redis-sentinel://h1/0?sentinelMasterId=m&sentinelPassword=Yw5nTz3R&x=1",
            "rediss-sentinel://u:Zq9xW7kP@h1,,h2/0?sentinelMasterId=m&sentinelPassword=Yw5nTz3R",
            "redis+cluster://u:Zq9xW7kP@n1,n2/3",
            "rediss+cluster://u:Zq9xW7kP@n1:0,n2",
            "redis+cluster://u:Zq9xW7kP@n1?password=Yw5nTz3R",
            "http://u:Zq9xW7kP@h",
        ];
        let leaks = |shown: &str| {
            [MASTER, SENTINEL].iter().any(|secret| {
                let chars: Vec<char> = secret.chars().collect();
                chars.windows(3).any(|w| {
                    let part: String = w.iter().collect();
                    shown.contains(&part)
                })
            })
        };
        for form in forms {
            let redacted = redact(form);
            assert!(!leaks(&redacted), "{form}: {redacted}");
            match StoreUrl::parse(form) {
                Ok(url) => {
                    assert!(!leaks(&url.redacted()), "{form}: {}", url.redacted());
                    assert!(!leaks(&url.label()), "{form}: {}", url.label());
                    assert!(!leaks(&format!("{url:?}")), "{form}: {url:?}");
                }
                Err(why) => assert!(!leaks(&why), "{form}: {why}"),
            }
        }
    }
}
