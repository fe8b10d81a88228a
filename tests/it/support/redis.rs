//! A real `redis-server` for a test: on a free loopback port, in a temporary directory, with
//! nothing saved to disk, the default user off, and two users: `retry`, with exactly the ACL
//! the README documents, and `admin`, for the test to look at and spoil the keys. The server
//! is killed when the guard is dropped, a failing test's unwinding included.

use std::fs;
use std::net::TcpListener;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::RecvTimeoutError;

use tempfile::TempDir;

use super::{Lines, PATIENCE};

/// The user retry connects as.
pub const USER: &str = "retry";
/// Its password: no output of retry may ever contain it.
pub const PASSWORD: &str = "pw-7c1e9a-never-shown";
/// The least a user needs, as the README gives it: the two script commands, and the commands
/// the scripts call (Redis checks those against the user too), on keys under `retry:`; DEL for
/// `--reset-state`; SCAN and PTTL for `--list-keys`.
pub const ACL: &str =
    "~retry:* resetchannels -@all +evalsha +eval +time +hgetall +hset +pexpire +del +scan +pttl";

/// A running server, killed on drop.
pub struct Server {
    child: Child,
    pub port: u16,
    _dir: TempDir,
    /// The server's log, read until it ends so that the server never writes into a closed pipe.
    _log: Lines,
}

impl Server {
    /// Starts a server, or returns `None` (having said so loudly) when there is no
    /// `redis-server` and `CI` is not set.
    pub fn start() -> Option<Server> {
        Server::start_with(None, None)
    }

    /// Starts a server with `--requirepass password` and no ACL file: the default user, with
    /// that password, is the only one (`admin` and `retry` do not exist).
    pub fn start_requiring(password: &str) -> Option<Server> {
        Server::start_with(None, Some(password))
    }

    /// Starts a server that speaks only TLS, with the certificate and key in `certs`
    /// (`server.crt`, `server.key`, signed by `ca.crt`). Only the `tls` feature's test uses it.
    #[cfg(feature = "tls")]
    pub fn start_tls(certs: &Path) -> Option<Server> {
        Server::start_with(Some(certs), None)
    }

    fn start_with(tls: Option<&Path>, requirepass: Option<&str>) -> Option<Server> {
        if !super::have("redis-server", "apt-get install redis-server") {
            return None;
        }
        // Another process may take the free port before the server binds it: then try again.
        let mut last = String::new();
        for _ in 0..5 {
            match Server::try_start(tls, requirepass) {
                Ok(server) => return Some(server),
                Err(log) => last = log,
            }
        }
        panic!("redis-server did not start: {last}");
    }

    fn try_start(tls: Option<&Path>, requirepass: Option<&str>) -> Result<Server, String> {
        let dir = tempfile::tempdir().expect("temporary directory");
        let acl = dir.path().join("users.acl");
        fs::write(
            &acl,
            format!(
                "user default off\nuser {USER} on >{PASSWORD} {ACL}\nuser admin on >admin ~* &* +@all\n"
            ),
        )
        .expect("ACL file");
        let port = free_port();
        let mut command = Command::new("redis-server");
        match tls {
            None => command.args(["--port", &port.to_string()]),
            Some(certs) => command
                .args(["--port", "0", "--tls-port", &port.to_string()])
                .args(["--tls-auth-clients", "no", "--tls-cert-file"])
                .arg(certs.join("server.crt"))
                .arg("--tls-key-file")
                .arg(certs.join("server.key"))
                .arg("--tls-ca-cert-file")
                .arg(certs.join("ca.crt")),
        };
        match requirepass {
            None => command.arg("--aclfile").arg(&acl),
            Some(password) => command.args(["--requirepass", password]),
        };
        let mut child = command
            .args(["--bind", "127.0.0.1"])
            .args(["--save", "", "--appendonly", "no", "--loglevel", "notice"])
            .arg("--dir")
            .arg(dir.path())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("redis-server starts");
        let lines = Lines::of(child.stdout.take().expect("stdout"));
        let mut log = Vec::new();
        loop {
            match lines.0.recv_timeout(PATIENCE) {
                Ok(line) if line.contains("Ready to accept connections") => {
                    return Ok(Server {
                        child,
                        port,
                        _dir: dir,
                        _log: lines,
                    });
                }
                Ok(line) => log.push(line),
                // The server exited (its port was taken), or never got ready.
                Err(RecvTimeoutError::Disconnected | RecvTimeoutError::Timeout) => {
                    let _ = child.kill();
                    let _ = child.wait();
                    return Err(log.join("\n"));
                }
            }
        }
    }

    /// The server's process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The URL retry is given, with the `retry` user's password.
    pub fn url(&self) -> String {
        format!("redis://{USER}:{PASSWORD}@127.0.0.1:{}", self.port)
    }

    /// A connection as `admin`, for the test itself.
    pub fn admin(&self) -> ::redis::Connection {
        ::redis::Client::open(format!("redis://admin:admin@127.0.0.1:{}", self.port))
            .and_then(|c| c.get_connection())
            .expect("admin connection")
    }

    /// A command as `admin`.
    pub fn query<T: ::redis::FromRedisValue>(&self, cmd: &mut ::redis::Cmd) -> T {
        cmd.query(&mut self.admin()).expect("admin command")
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A port nothing listens on now.
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}
