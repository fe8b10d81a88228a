//! Reaching a Redis server for the store: TCP (TLS or not) or a Unix socket, the master that
//! sentinels name, each step within what is left of the run's `--state-timeout`. Which server
//! (a cluster's node, after a MOVED) is `state/redis.rs`'s choice.

use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use redis::{
    Client, Connection, ConnectionAddr, IntoConnectionInfo, RedisConnectionInfo, RedisError,
};

use crate::policy::key::Secret;

/// Why a call failed, before it is told with the store's URL.
pub(super) enum Failure {
    /// `--state-timeout` is used up.
    Timeout,
    Redis(RedisError),
    /// The script answered something this version does not understand.
    Reply(String),
}

impl From<RedisError> for Failure {
    fn from(e: RedisError) -> Failure {
        if e.is_timeout() {
            Failure::Timeout
        } else {
            Failure::Redis(e)
        }
    }
}

/// The address of a TCP server, with TLS or not.
pub(super) fn tcp(host: &str, port: u16, tls: bool) -> ConnectionAddr {
    if tls {
        ConnectionAddr::TcpTls {
            host: host.to_string(),
            port,
            insecure: false,
            tls_params: None,
        }
    } else {
        ConnectionAddr::Tcp(host.to_string(), port)
    }
}

/// How to reach a server as `user` with `password`, in database `db`.
pub(super) fn info(
    addr: ConnectionAddr,
    user: Option<&str>,
    password: Option<&str>,
    db: u32,
) -> Result<redis::ConnectionInfo, RedisError> {
    // No CLIENT SETINFO: one command less for the ACL to allow.
    let mut redis = RedisConnectionInfo::default()
        .set_db(i64::from(db))
        .set_skip_set_lib_name();
    if let Some(user) = user {
        redis = redis.set_username(user);
    }
    if let Some(password) = password {
        redis = redis.set_password(password);
    }
    Ok(addr.into_connection_info()?.set_redis_settings(redis))
}

/// Asks the sentinels, in turn, where the master they call `master` is now: the first that
/// answers names it. A failover moves it; the next run asks again.
pub(super) fn ask_sentinels(
    sentinels: &[(String, u16)],
    master: &str,
    tls: bool,
    auth: &Option<(Option<String>, Secret)>,
    deadline: Instant,
) -> Result<(String, u16), Failure> {
    let (user, password) = match auth {
        Some((user, password)) => (user.as_deref(), Some(password.expose())),
        None => (None, None),
    };
    let mut last = Failure::Reply("the sentinel URL names no sentinel".into());
    for (host, port) in sentinels {
        let asked = info(tcp(host, *port, tls), user, password, 0)
            .map_err(Failure::from)
            .and_then(|info| connect(info, deadline))
            .and_then(|mut con| {
                limit(&mut con, deadline)?;
                Ok(redis::cmd("SENTINEL")
                    .arg("get-master-addr-by-name")
                    .arg(master)
                    .query::<Option<(String, u16)>>(&mut con)?)
            });
        match asked {
            Ok(Some(addr)) => return Ok(addr),
            Ok(None) => {
                last = Failure::Reply(format!(
                    "the sentinel at {host}:{port} knows no master called '{master}'"
                ));
            }
            Err(Failure::Timeout) => return Err(Failure::Timeout),
            Err(e) => last = e,
        }
    }
    Err(last)
}

/// Connects within the deadline. A host name is looked up with getaddrinfo, which has no time
/// limit of its own: then the lookup, the TCP connection, TLS and AUTH run on a helper thread
/// that is left behind if the deadline passes first. An IP address needs no lookup, and
/// redis-rs limits the rest (connecting, then reading and writing) to the time it is given,
/// so it connects on this thread and saves the helper's cost (about 50 µs).
pub(super) fn connect(
    info: redis::ConnectionInfo,
    deadline: Instant,
) -> Result<Connection, Failure> {
    let left = left(deadline)?;
    // rustls needs a process-wide provider of its cryptography; installed once, and a second
    // installation is refused harmlessly.
    #[cfg(feature = "tls")]
    let _ = rustls::crypto::ring::default_provider().install_default();
    let literal = match info.addr() {
        ConnectionAddr::Tcp(host, _) | ConnectionAddr::TcpTls { host, .. } => {
            host.parse::<std::net::IpAddr>().is_ok()
        }
        _ => false,
    };
    if literal {
        return Ok(Client::open(info)?.get_connection_with_timeout(left)?);
    }
    let (tx, rx) = mpsc::channel();
    // Unnamed: naming a thread is a prctl on Linux, which the portable build makes none of.
    thread::Builder::new()
        .spawn(move || {
            let connected = Client::open(info).and_then(|c| c.get_connection_with_timeout(left));
            let _ = tx.send(connected);
        })
        .map_err(|e| Failure::Reply(format!("cannot start a thread to connect: {e}")))?;
    match rx.recv_timeout(left) {
        Ok(connected) => Ok(connected?),
        Err(_) => Err(Failure::Timeout),
    }
}

/// The server wants a client to authenticate first: NOAUTH, or, for a command as long as a
/// script's, the protocol error it answers an unauthenticated client with before closing.
pub(super) fn unauthenticated(e: &RedisError) -> bool {
    e.code() == Some("NOAUTH") || e.detail().is_some_and(|d| d.contains("unauthenticated"))
}

/// The time left before the deadline; none left is a timeout.
pub(super) fn left(deadline: Instant) -> Result<Duration, Failure> {
    deadline
        .checked_duration_since(Instant::now())
        .filter(|d| !d.is_zero())
        .ok_or(Failure::Timeout)
}

/// Sets the socket's read and write time limits to what is left. redis-rs clears them once
/// it has connected, so they are set again before every command.
pub(super) fn limit(con: &mut Connection, deadline: Instant) -> Result<(), Failure> {
    let left = left(deadline)?;
    con.set_read_timeout(Some(left))?;
    con.set_write_timeout(Some(left))?;
    Ok(())
}
