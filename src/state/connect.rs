//! Reaching a Redis server for the store, and talking to it: TCP (TLS or not) or a Unix socket,
//! the master that sentinels name. Every step, from the name lookup to the last byte of a reply,
//! ends at one deadline that a peer cannot stretch: each read and write is a system call given
//! what is left of it, and fails once it has passed. Which server (a cluster's node, after a
//! MOVED) is `state/redis.rs`'s choice; what a reply may be, `state/resp.rs`'s.

use std::io::{self, BufReader, Read, Write};
use std::net::{IpAddr, SocketAddr, TcpStream, ToSocketAddrs};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use super::resp::{self, Unread, Value, excerpt};
use crate::policy::key::Secret;

/// Why a call failed, before it is told with the store's URL.
#[derive(Debug)]
pub(super) enum Failure {
    /// The deadline passed.
    Timeout,
    /// Connecting failed, or the connection did (refused, reset, closed, a TLS failure).
    Io(io::Error),
    /// The server answered with an error: its line.
    Server(Vec<u8>),
    /// An answer the store cannot take: not the protocol, beyond a bound, or not what the
    /// command answers.
    Reply(String),
}

impl From<io::Error> for Failure {
    fn from(e: io::Error) -> Failure {
        match e.kind() {
            io::ErrorKind::TimedOut | io::ErrorKind::WouldBlock => Failure::Timeout,
            _ => Failure::Io(e),
        }
    }
}

impl From<Unread> for Failure {
    fn from(e: Unread) -> Failure {
        match e {
            Unread::Io(e) => Failure::from(e),
            Unread::Bad(why) => Failure::Reply(why),
        }
    }
}

impl Failure {
    /// The connection was closed (by the server's `timeout`, a proxy, CLIENT KILL).
    pub(super) fn dropped(&self) -> bool {
        matches!(self, Failure::Io(e) if matches!(
            e.kind(),
            io::ErrorKind::UnexpectedEof
                | io::ErrorKind::ConnectionReset
                | io::ErrorKind::ConnectionAborted
                | io::ErrorKind::BrokenPipe
                | io::ErrorKind::NotConnected
        ))
    }

    /// The server's error code: the first word of its error line (`NOSCRIPT`, `MOVED`).
    pub(super) fn code(&self) -> Option<&[u8]> {
        match self {
            Failure::Server(line) => line.split(|&b| b == b' ').next(),
            _ => None,
        }
    }

    /// A cluster's node that does not hold the key names the one that does: `MOVED slot
    /// host:port`, or, while the slot migrates, `ASK slot host:port` (then `true`).
    pub(super) fn redirect(&self) -> Option<(String, u16, bool)> {
        let Failure::Server(line) = self else {
            return None;
        };
        let line = std::str::from_utf8(line).ok()?;
        let mut words = line.split(' ');
        let ask = match words.next()? {
            "MOVED" => false,
            "ASK" => true,
            _ => return None,
        };
        let (host, port) = words.nth(1)?.rsplit_once(':')?;
        let host = host.trim_start_matches('[').trim_end_matches(']');
        Some((host.to_string(), port.parse().ok()?, ask))
    }

    /// The server wants the client to authenticate first: NOAUTH, WRONGPASS, or, for a
    /// command as long as a script's, the protocol error it answers an unauthenticated client
    /// with before closing.
    pub(super) fn unauthenticated(&self) -> bool {
        let Failure::Server(line) = self else {
            return false;
        };
        matches!(self.code(), Some(b"NOAUTH" | b"WRONGPASS"))
            || line.windows(15).any(|w| w == b"unauthenticated")
    }

    /// What went wrong, in words; what the server said is quoted, escaped and cut short.
    pub(super) fn words(&self) -> String {
        match self {
            Failure::Timeout => "no answer in time".into(),
            Failure::Io(e) => e.to_string(),
            Failure::Server(line) => format!("it answered {}", excerpt(line)),
            Failure::Reply(why) => why.clone(),
        }
    }
}

/// Where a server is.
pub(super) enum Addr<'a> {
    Tcp { host: &'a str, port: u16, tls: bool },
    Unix(&'a Path),
}

/// Who the client is: a user and password to AUTH with, and the database to SELECT.
#[derive(Clone, Copy)]
pub(super) struct Login<'a> {
    pub user: Option<&'a str>,
    pub password: Option<&'a str>,
    pub db: u32,
}

/// A connection to a server, which reads and writes only within its deadline.
pub(super) struct Connection {
    io: BufReader<Transport>,
}

impl Connection {
    /// Every read and write from now on ends at `deadline`.
    pub(super) fn until(&mut self, deadline: Instant) {
        self.io.get_mut().until(deadline);
    }

    /// Sends a command and reads its reply; an error reply is a [`Failure::Server`].
    pub(super) fn call(&mut self, args: &[&str]) -> Result<Value, Failure> {
        let out = self.io.get_mut();
        out.write_all(&resp::command(args))?;
        out.flush()?;
        match resp::read(&mut self.io)? {
            Value::Error(line) => Err(Failure::Server(line)),
            value => Ok(value),
        }
    }
}

/// Connects to `addr` as `login` says, within the deadline: the name lookup, the TCP or Unix
/// connection, TLS's handshake, AUTH and SELECT.
pub(super) fn connect(addr: &Addr, login: Login, deadline: Instant) -> Result<Connection, Failure> {
    let transport = match addr {
        Addr::Tcp { host, port, tls } => {
            let tcp = tcp(host, *port, deadline)?;
            if *tls {
                tls::wrap(host, tcp, deadline)?
            } else {
                Transport::Tcp(Limited::new(tcp, deadline))
            }
        }
        Addr::Unix(path) => {
            // A listening socket whose backlog is full makes connect(2) wait, with no time
            // limit of its own.
            let path = path.to_path_buf();
            let unix = on_helper(deadline, move || UnixStream::connect(&path))?;
            Transport::Unix(Limited::new(unix, deadline))
        }
    };
    let mut con = Connection {
        io: BufReader::new(transport),
    };
    if let Some(password) = login.password {
        match login.user {
            Some(user) => con.call(&["AUTH", user, password])?,
            None => con.call(&["AUTH", password])?,
        };
    }
    if login.db != 0 {
        con.call(&["SELECT", &login.db.to_string()])?;
    }
    Ok(con)
}

/// A TCP connection to the first of the host's addresses that accepts one. An IP address needs
/// no lookup; a host name is looked up with getaddrinfo, which has no time limit of its own, on
/// a helper thread that is left behind if the deadline passes first.
fn tcp(host: &str, port: u16, deadline: Instant) -> Result<TcpStream, Failure> {
    let addrs: Vec<SocketAddr> = match host.parse::<IpAddr>() {
        Ok(ip) => vec![SocketAddr::new(ip, port)],
        Err(_) => {
            let host = host.to_string();
            on_helper(deadline, move || {
                (host.as_str(), port)
                    .to_socket_addrs()
                    .map(Iterator::collect)
            })?
        }
    };
    let mut last = Failure::Reply(format!("{} has no address", excerpt(host.as_bytes())));
    for addr in addrs {
        match tcp_connect(addr, deadline) {
            Ok(tcp) => {
                // A command is one write, its reply awaited: Nagle's delay would only add to it.
                let _ = tcp.set_nodelay(true);
                return Ok(tcp);
            }
            Err(e) => last = e,
        }
        if matches!(last, Failure::Timeout) {
            break;
        }
    }
    Err(last)
}

/// How often a wait that no signal interrupts (a connect, a helper thread) looks whether one
/// that cancels the run has arrived.
const CANCEL_POLL: Duration = Duration::from_millis(10);

/// How many signals that cancel the run have arrived: a store call that began with this many
/// ends as soon as another arrives, so that the run answers it rather than wait out
/// `--state-timeout` ([`cancelled_since`]).
fn cancels() -> usize {
    crate::platform::signals::cancels_so_far()
}

/// Whether a signal that cancels the run arrived since `since` ([`cancels`]).
fn cancelled_since(since: usize) -> bool {
    cancels() > since
}

/// The error of a call a cancel cut short; not of the kind `Interrupted`, which std's readers
/// take for a call to make again.
fn cancel() -> io::Error {
    io::Error::other("the run was cancelled")
}

/// A TCP connection to `addr`, made by the deadline, and given up at once on a cancel:
/// `TcpStream::connect_timeout` goes on through a signal.
fn tcp_connect(addr: SocketAddr, deadline: Instant) -> Result<TcpStream, Failure> {
    use nix::errno::Errno;
    use nix::fcntl::{FcntlArg, FdFlag, OFlag, fcntl};
    use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
    use nix::sys::socket::{AddressFamily, SockFlag, SockType, SockaddrStorage, socket, sockopt};
    use std::os::fd::AsFd;
    let since = cancels();
    let io = |e: Errno| Failure::Io(e.into());
    let family = match addr {
        SocketAddr::V4(_) => AddressFamily::Inet,
        SocketAddr::V6(_) => AddressFamily::Inet6,
    };
    let fd = socket(family, SockType::Stream, SockFlag::empty(), None).map_err(io)?;
    fcntl(&fd, FcntlArg::F_SETFD(FdFlag::FD_CLOEXEC)).map_err(io)?;
    fcntl(&fd, FcntlArg::F_SETFL(OFlag::O_NONBLOCK)).map_err(io)?;
    match nix::sys::socket::connect(
        std::os::fd::AsRawFd::as_raw_fd(&fd),
        &SockaddrStorage::from(addr),
    ) {
        Ok(()) => {}
        Err(Errno::EINPROGRESS | Errno::EINTR) => loop {
            let slice = left(deadline)?.min(CANCEL_POLL);
            let timeout = PollTimeout::try_from(slice).unwrap_or(PollTimeout::ZERO);
            let mut fds = [PollFd::new(fd.as_fd(), PollFlags::POLLOUT)];
            match poll(&mut fds, timeout) {
                Ok(0) | Err(Errno::EINTR) => {}
                Ok(_) => match nix::sys::socket::getsockopt(&fd, sockopt::SocketError) {
                    Ok(0) => break,
                    Ok(errno) => return Err(io::Error::from_raw_os_error(errno).into()),
                    Err(e) => return Err(io(e)),
                },
                Err(e) => return Err(io(e)),
            }
            if cancelled_since(since) {
                return Err(Failure::Io(cancel()));
            }
        },
        Err(e) => return Err(io(e)),
    }
    let tcp = TcpStream::from(fd);
    tcp.set_nonblocking(false).map_err(Failure::Io)?;
    Ok(tcp)
}

/// Runs `f` on a thread of its own, and waits for it until the deadline or a cancel; after
/// that, the thread is left behind, and ends when `f` does.
fn on_helper<T: Send + 'static>(
    deadline: Instant,
    f: impl FnOnce() -> io::Result<T> + Send + 'static,
) -> Result<T, Failure> {
    left(deadline)?;
    let since = cancels();
    let (tx, rx) = mpsc::channel();
    // Unnamed: naming a thread is a prctl on Linux, which the portable build makes none of.
    // With every signal blocked: a thread left behind must not take a signal meant for the
    // thread that waits for the run's attempts.
    let spawned = crate::platform::signals::without_signals(|| {
        thread::Builder::new().spawn(move || {
            let _ = tx.send(f());
        })
    });
    spawned
        .and_then(|spawned| spawned)
        .map_err(|e| Failure::Reply(format!("cannot start a thread to connect: {e}")))?;
    loop {
        match rx.recv_timeout(left(deadline)?.min(CANCEL_POLL)) {
            Ok(done) => return Ok(done?),
            Err(mpsc::RecvTimeoutError::Timeout) if cancelled_since(since) => {
                return Err(Failure::Io(cancel()));
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => return Err(Failure::Timeout),
        }
    }
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
    let login = Login {
        user: auth.as_ref().and_then(|(user, _)| user.as_deref()),
        password: auth.as_ref().map(|(_, password)| password.expose()),
        db: 0,
    };
    let mut last = Failure::Reply("the sentinel URL names no sentinel".into());
    for (host, port) in sentinels {
        let addr = Addr::Tcp {
            host,
            port: *port,
            tls,
        };
        let asked = connect(&addr, login, deadline)
            .and_then(|mut con| con.call(&["SENTINEL", "get-master-addr-by-name", master]));
        let named = |value: Value| match value {
            Value::Array(pair) => match pair.as_slice() {
                [Value::Text(host), Value::Text(port)] => {
                    let port = std::str::from_utf8(port).ok()?.parse().ok()?;
                    Some((String::from_utf8(host.clone()).ok()?, port))
                }
                _ => None,
            },
            _ => None,
        };
        match asked {
            Ok(Value::Nil) => {
                last = Failure::Reply(format!(
                    "the sentinel at {host}:{port} knows no master called {}",
                    excerpt(master.as_bytes())
                ));
            }
            Ok(value) => {
                let shown = unexpected(&value);
                return named(value).ok_or_else(|| {
                    Failure::Reply(format!(
                        "the sentinel at {host}:{port} named no master's address: {shown}"
                    ))
                });
            }
            Err(Failure::Timeout) => return Err(Failure::Timeout),
            Err(e) => last = e,
        }
    }
    Err(last)
}

/// A reply the store did not expect, for a message: quoted, escaped and cut short.
pub(super) fn unexpected(value: &Value) -> String {
    fn text(value: &Value, out: &mut Vec<u8>) {
        if out.len() > resp::EXCERPT {
            return;
        }
        match value {
            Value::Nil => out.extend_from_slice(b"(nil)"),
            Value::Int(n) => out.extend_from_slice(n.to_string().as_bytes()),
            Value::Text(t) | Value::Error(t) => out.extend_from_slice(t),
            Value::Array(items) => {
                out.push(b'[');
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        out.extend_from_slice(b", ");
                    }
                    text(item, out);
                    if out.len() > resp::EXCERPT {
                        break;
                    }
                }
                out.push(b']');
            }
        }
    }
    let mut out = Vec::new();
    text(value, &mut out);
    excerpt(&out)
}

/// The time left before the deadline; none left is a timeout.
pub(super) fn left(deadline: Instant) -> Result<Duration, Failure> {
    remaining(deadline).ok_or(Failure::Timeout)
}

fn remaining(deadline: Instant) -> Option<Duration> {
    deadline
        .checked_duration_since(Instant::now())
        .filter(|d| !d.is_zero())
}

/// A socket whose read and write time limits can be set.
trait Socket: Read + Write {
    fn read_limit(&self, left: Duration) -> io::Result<()>;
    fn write_limit(&self, left: Duration) -> io::Result<()>;
}

impl Socket for TcpStream {
    fn read_limit(&self, left: Duration) -> io::Result<()> {
        self.set_read_timeout(Some(left))
    }
    fn write_limit(&self, left: Duration) -> io::Result<()> {
        self.set_write_timeout(Some(left))
    }
}

impl Socket for UnixStream {
    fn read_limit(&self, left: Duration) -> io::Result<()> {
        self.set_read_timeout(Some(left))
    }
    fn write_limit(&self, left: Duration) -> io::Result<()> {
        self.set_write_timeout(Some(left))
    }
}

/// A socket that reads and writes only until its deadline: before each system call its time
/// limit is set to what is left, so that a peer that sends a byte just in time, again and
/// again, cannot make the whole take longer. TLS reads and writes through it too, so its
/// handshake is bounded as well.
/// A cancel that arrives during a call ends it too: the socket's calls are interrupted by the
/// signal, and none is made after it.
struct Limited<S> {
    socket: S,
    deadline: Instant,
    /// The cancels that had arrived when the call began ([`cancels`]).
    since: usize,
}

impl<S: Socket> Limited<S> {
    fn new(socket: S, deadline: Instant) -> Limited<S> {
        Limited {
            socket,
            deadline,
            since: cancels(),
        }
    }

    /// A call that ends at `deadline` begins.
    fn until(&mut self, deadline: Instant) {
        self.deadline = deadline;
        self.since = cancels();
    }

    fn left(&self) -> io::Result<Duration> {
        if cancelled_since(self.since) {
            return Err(cancel());
        }
        remaining(self.deadline).ok_or_else(|| io::ErrorKind::TimedOut.into())
    }
}

/// A read or write that ran out of time says so; one a signal interrupted is made again with
/// what is left (a socket with a time limit is not restarted after a signal handler, even one
/// installed with SA_RESTART), unless the signal cancels the run ([`Limited::left`] says so).
fn retried(mut io: impl FnMut() -> io::Result<usize>) -> io::Result<usize> {
    loop {
        match io() {
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                return Err(io::ErrorKind::TimedOut.into());
            }
            done => return done,
        }
    }
}

impl<S: Socket> Read for Limited<S> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        retried(|| {
            self.socket.read_limit(self.left()?)?;
            self.socket.read(buf)
        })
    }
}

impl<S: Socket> Write for Limited<S> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        retried(|| {
            self.socket.write_limit(self.left()?)?;
            self.socket.write(buf)
        })
    }

    fn flush(&mut self) -> io::Result<()> {
        self.socket.flush()
    }
}

/// The connection under the protocol.
enum Transport {
    Tcp(Limited<TcpStream>),
    Unix(Limited<UnixStream>),
    #[cfg(feature = "tls")]
    Tls(Box<rustls::StreamOwned<rustls::ClientConnection, Limited<TcpStream>>>),
}

impl Transport {
    fn until(&mut self, deadline: Instant) {
        match self {
            Transport::Tcp(s) => s.until(deadline),
            Transport::Unix(s) => s.until(deadline),
            #[cfg(feature = "tls")]
            Transport::Tls(s) => s.sock.until(deadline),
        }
    }
}

impl Read for Transport {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Transport::Tcp(s) => s.read(buf),
            Transport::Unix(s) => s.read(buf),
            #[cfg(feature = "tls")]
            Transport::Tls(s) => s.read(buf),
        }
    }
}

impl Write for Transport {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Transport::Tcp(s) => s.write(buf),
            Transport::Unix(s) => s.write(buf),
            #[cfg(feature = "tls")]
            Transport::Tls(s) => s.write(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self {
            Transport::Tcp(s) => s.flush(),
            Transport::Unix(s) => s.flush(),
            #[cfg(feature = "tls")]
            Transport::Tls(s) => s.flush(),
        }
    }
}

#[cfg(feature = "tls")]
mod tls {
    //! TLS with rustls (ring's cryptography), trusting the host's certificate store as
    //! rustls-native-certs finds it: `SSL_CERT_FILE` and `SSL_CERT_DIR` when set, else the
    //! system's.

    use std::net::TcpStream;
    use std::sync::{Arc, OnceLock};
    use std::time::Instant;

    use rustls::pki_types::ServerName;
    use rustls::{ClientConfig, ClientConnection, RootCertStore, StreamOwned};

    use super::{Failure, Limited, Transport, excerpt};

    /// The client's settings, made once: the certificates are read at the first connection
    /// (a sentinel's, then the master's, share them).
    fn config() -> Result<Arc<ClientConfig>, Failure> {
        static CONFIG: OnceLock<Result<Arc<ClientConfig>, String>> = OnceLock::new();
        CONFIG
            .get_or_init(|| {
                let found = rustls_native_certs::load_native_certs();
                // As redis-rs did: a certificate store that cannot all be read is an error,
                // rather than a server trusted or not depending on which file failed.
                if let Some(e) = found.errors.first() {
                    return Err(format!("cannot read the host's certificates: {e}"));
                }
                let mut roots = RootCertStore::empty();
                roots.add_parsable_certificates(found.certs);
                let provider = Arc::new(rustls::crypto::ring::default_provider());
                let config = ClientConfig::builder_with_provider(provider)
                    .with_safe_default_protocol_versions()
                    .map_err(|e| format!("cannot set up TLS: {e}"))?
                    .with_root_certificates(roots)
                    .with_no_client_auth();
                Ok(Arc::new(config))
            })
            .clone()
            .map_err(Failure::Reply)
    }

    /// TLS over `tcp`, to `host` (a name or an IP address its certificate must hold), the
    /// handshake done within the deadline.
    pub(super) fn wrap(
        host: &str,
        tcp: TcpStream,
        deadline: Instant,
    ) -> Result<Transport, Failure> {
        let name = ServerName::try_from(host.to_string()).map_err(|_| {
            Failure::Reply(format!(
                "{} is not a name a certificate can hold",
                excerpt(host.as_bytes())
            ))
        })?;
        let conn = ClientConnection::new(config()?, name)
            .map_err(|e| Failure::Io(std::io::Error::other(e)))?;
        let mut tls = StreamOwned::new(conn, Limited::new(tcp, deadline));
        while tls.conn.is_handshaking() {
            tls.conn.complete_io(&mut tls.sock)?;
        }
        Ok(Transport::Tls(Box::new(tls)))
    }
}

#[cfg(not(feature = "tls"))]
mod tls {
    use std::net::TcpStream;
    use std::time::Instant;

    use super::{Failure, Transport};

    /// Never called: the command line refuses a TLS URL in a build without TLS.
    pub(super) fn wrap(_: &str, _: TcpStream, _: Instant) -> Result<Transport, Failure> {
        Err(Failure::Reply("this build of retry has no TLS".into()))
    }
}
