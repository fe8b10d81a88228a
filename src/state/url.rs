//! The `--state URL`, parsed and checked (with the `url` crate, as redis-rs parses it): six
//! schemes, one host or a list of them, a password percent-decoded into a
//! [`Secret`](crate::policy::key::Secret). What the URL says is plain data in
//! `policy/key.rs`; this is where text becomes it, and where a URL as the user wrote it is
//! redacted for a message.

use std::path::PathBuf;

use url::{Host, ParseError, Url};

use crate::policy::key::{Place, Secret, StoreUrl};

/// Redis's port when the URL names none.
pub const DEFAULT_PORT: u16 = 6379;
/// A sentinel's port when the URL names none.
pub const SENTINEL_PORT: u16 = 26379;

const FORMS: &str = "use redis://[USER:PASSWORD@]HOST[:PORT][/DB], rediss://... for TLS, \
     redis+unix:///PATH, redis-sentinel://HOST[:PORT][,HOST...]/DB?sentinelMasterId=NAME or \
     redis+cluster://HOST[:PORT][,HOST...]";

const UNESCAPED: &str = "a '/', '?' or '#' in the user or password ends the host's part of a \
     URL early: write them %2F, %3F and %23";

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
        "redis-sentinel" => return several(rest, false, true),
        "rediss-sentinel" => return several(rest, true, true),
        "redis+cluster" => return several(rest, false, false),
        "rediss+cluster" => return several(rest, true, false),
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
        return unix_socket(authority, tail);
    }
    tcp(text, hostport, tls)
}

/// A `redis+unix://` URL: `authority` is its user and password, if any (it names no host),
/// and `tail` the socket's path and the `?db=N` query.
fn unix_socket(authority: &str, tail: &str) -> Result<StoreUrl, String> {
    // The url crate wants a host after a user or password: a placeholder stands in.
    let url = Url::parse(&format!("redis+unix://{authority}localhost{tail}"))
        .map_err(|_| format!("it is not a Redis URL: {FORMS}"))?;
    if url.path().len() < 2 {
        return Err("redis+unix:// needs the socket's path: redis+unix:///PATH".into());
    }
    if url.fragment().is_some() {
        return Err("a fragment ('#') is not understood: only ?db=N is".into());
    }
    // A parameter is named, never quoted whole: its value may be a password.
    let mut db_n = 0;
    for pair in url
        .query()
        .unwrap_or_default()
        .split('&')
        .filter(|p| !p.is_empty())
    {
        match pair.split_once('=') {
            Some(("db", n)) => db_n = db(n)?,
            _ => {
                let name = pair.split('=').next().unwrap_or_default();
                return Err(format!("'?{name}=' is not understood: only ?db=N is"));
            }
        }
    }
    let db = db_n;
    let (user, password) = userinfo(&url)?;
    Ok(StoreUrl {
        place: Place::Unix(PathBuf::from(decode(url.path())?)),
        user,
        password,
        db,
    })
}

/// A `redis://` or `rediss://` URL, `text` whole: one host, its port and the database.
/// `hostport` is the authority past its user and password, what an error may quote.
fn tcp(text: &str, hostport: &str, tls: bool) -> Result<StoreUrl, String> {
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
        Some(Host::Domain(name)) if !name.is_empty() => looked_up(name)?,
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
        let one = parse(&format!("redis://{host}"))?;
        match one.place {
            Place::Tcp { host, port, .. } => {
                places.push((host, if port_given { port } else { default_port }));
            }
            _ => return Err(format!("'{host}' is not a host name: {FORMS}")),
        }
    }
    // The user, the password and the database, read as for one host.
    let (path, query) = tail.split_once('?').unwrap_or((tail, ""));
    let first = parse(&format!("redis://{userinfo}{}{path}", places[0].0))?;
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
                sentinel_password = Some(Secret::new(decode(password)?));
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
/// `password`, `auth`, `token`, `secret`, `pwd`, `key`), by the rule every command line retry
/// shows is masked by.
fn secret_parameter(name: &str) -> bool {
    crate::secrets::secret_name(name)
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
        Some(p) => Some(Secret::new(decode(p)?)).filter(|p| !p.expose().is_empty()),
        None => None,
    };
    Ok((user, password))
}

/// A host name as it is looked up. A `redis://` URL is not one of the web's, so the url crate
/// keeps its host as written, a name in another script percent-encoded; such a name
/// (`bücher.example`) is looked up in its ASCII form (`xn--bcher-kva.example`), as curl and
/// a browser look it up, by the rules of international domain names (UTS 46).
fn looked_up(name: &str) -> Result<String, String> {
    if !name.contains('%') {
        return Ok(name.to_string());
    }
    let written = decode(name).map_err(|e| format!("the host '{name}': {e}"))?;
    match Host::parse(&written) {
        Ok(Host::Domain(ascii)) => Ok(ascii),
        Ok(host) => Ok(host.to_string()),
        Err(_) => Err(format!("'{written}' is not a host name: {FORMS}")),
    }
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
#[path = "url_tests.rs"]
mod tests;
