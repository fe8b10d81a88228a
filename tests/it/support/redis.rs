//! A real `redis-server` for a test: on a free loopback port, in a temporary directory, with
//! nothing saved to disk, the default user off, and two users: `retry`, with exactly the ACL
//! the README documents, and `admin`, for the test to look at and spoil the keys. The server
//! is killed when the guard is dropped, a failing test's unwinding included.
//!
//! One Redis Cluster is shared by the scenarios that need one ([`Cluster::shared`]), each on
//! keys of its own: its servers die with the test process, however it ends.

use std::fs;
use std::net::TcpListener;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Mutex, OnceLock};
use std::thread;
use std::time::Duration;

use tempfile::TempDir;

use super::{Lines, PATIENCE};

/// The user retry connects as.
pub const USER: &str = "retry";
/// Its password: no output of retry may ever contain it.
pub const PASSWORD: &str = "pw-7c1e9a-never-shown";
/// The least a user needs, as the README gives it: the two script commands, and the commands
/// the scripts call (Redis checks those against the user too), on keys under `retry:`; DEL for
/// `--reset-state`; SCAN and PTTL for `--list-keys`, and CLUSTER NODES for it on a cluster;
/// ASKING for a cluster whose slots move.
pub const ACL: &str = "~retry:* resetchannels -@all +evalsha +eval +time +hgetall +hset +pexpire +del +scan +pttl +cluster|nodes +asking";

/// A running server, killed on drop.
pub struct Server {
    child: Child,
    pub port: u16,
    _dir: TempDir,
    /// The server's log, read until it ends so that the server never writes into a closed pipe.
    /// (In a mutex only so that a server can be shared by the tests' threads.)
    _log: Mutex<Lines>,
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

    /// Starts a server with these arguments added (a cluster node's, a replica's).
    pub fn start_with_args(extra: &[String]) -> Option<Server> {
        Server::start_full(None, None, extra, false)
    }

    fn start_with(tls: Option<&Path>, requirepass: Option<&str>) -> Option<Server> {
        Server::start_full(tls, requirepass, &[], false)
    }

    /// Starts a server; with `with_parent`, one that the kernel kills when the thread that
    /// starts it ends (on Linux): a thread that lives as long as the test process.
    fn start_full(
        tls: Option<&Path>,
        requirepass: Option<&str>,
        extra: &[String],
        with_parent: bool,
    ) -> Option<Server> {
        if !super::have("redis-server", "apt-get install redis-server") {
            return None;
        }
        // Another process may take the free port before the server binds it: then try again.
        let mut last = String::new();
        for _ in 0..5 {
            match Server::try_start(tls, requirepass, extra, with_parent) {
                Ok(server) => return Some(server),
                Err(log) => last = log,
            }
        }
        panic!("redis-server did not start: {last}");
    }

    fn try_start(
        tls: Option<&Path>,
        requirepass: Option<&str>,
        extra: &[String],
        with_parent: bool,
    ) -> Result<Server, String> {
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
        #[cfg(target_os = "linux")]
        if with_parent {
            use std::os::unix::process::CommandExt;
            // SAFETY: the closure runs in the child between fork and exec, and only makes
            // prctl(2), an async-signal-safe system call; it allocates nothing.
            unsafe {
                command.pre_exec(|| {
                    nix::sys::prctl::set_pdeathsig(nix::sys::signal::Signal::SIGKILL)
                        .map_err(std::io::Error::from)
                });
            }
        }
        #[cfg(not(target_os = "linux"))]
        let _ = with_parent;
        let mut child = command
            .args(extra)
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
                        _log: Mutex::new(lines),
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

    /// Kills the server at once, as a crash would.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
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
    pub fn admin(&self) -> Admin {
        Admin::open(self.port, Some(("admin", "admin"))).expect("admin connection")
    }

    /// A command as `admin`.
    pub fn query<T: FromReply>(&self, cmd: &mut Cmd) -> T {
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

/// A Redis Cluster of three masters (no replicas) on loopback ports, made by `redis-cli
/// --cluster create`, each node with the same users as a lone server.
pub struct Cluster {
    pub nodes: Vec<Server>,
}

/// The cluster of [`Cluster::shared`].
static SHARED: OnceLock<Option<Cluster>> = OnceLock::new();

impl Cluster {
    /// The cluster the scenarios share, started at the first call, once per test process:
    /// `None` (said loudly) without `redis-server` or `redis-cli`, unless `CI` is set. A
    /// scenario on it keeps to keys of its own. Its servers are started by a thread that
    /// lives as long as the process, and the kernel kills them when it ends (Linux's parent
    /// death signal), a crash or a SIGKILL of the tests included; at a normal exit they are
    /// killed, and their directories removed, at once. (A test that killed or failed over a
    /// node would need a cluster of its own: none does.)
    pub fn shared() -> Option<&'static Cluster> {
        // Asked here, on the test's own thread, so that each test that cannot run is told of
        // and counted as skipped, not only the one that first asked for the cluster.
        if !super::have("redis-server", "apt-get install redis-server")
            || !super::have("redis-cli", "apt-get install redis-tools")
        {
            return None;
        }
        SHARED
            .get_or_init(|| {
                let (tx, rx) = mpsc::channel();
                thread::spawn(move || {
                    let _ = tx.send(Cluster::start(true));
                    loop {
                        thread::park();
                    }
                });
                let cluster = rx.recv().expect("the shared cluster started");
                extern "C" fn stop() {
                    if let Some(Some(cluster)) = SHARED.get() {
                        for node in &cluster.nodes {
                            let pid = nix::unistd::Pid::from_raw(
                                i32::try_from(node.pid()).expect("a pid"),
                            );
                            let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGKILL);
                            let _ = nix::sys::wait::waitpid(pid, None);
                            let _ = fs::remove_dir_all(node._dir.path());
                        }
                    }
                }
                // SAFETY: atexit(3) only records the function, which takes nothing, returns
                // nothing and unwinds never (it ignores every error).
                unsafe { nix::libc::atexit(stop) };
                cluster
            })
            .as_ref()
    }

    /// Starts a cluster, or returns `None` (having said so loudly) without `redis-server` or
    /// `redis-cli`, unless `CI` is set; its servers die with the thread that starts them when
    /// `with_parent`.
    fn start(with_parent: bool) -> Option<Cluster> {
        if !super::have("redis-cli", "apt-get install redis-tools") {
            return None;
        }
        let args: Vec<String> = [
            "--cluster-enabled",
            "yes",
            "--cluster-config-file",
            "nodes.conf",
            "--cluster-node-timeout",
            "2000",
        ]
        .map(String::from)
        .to_vec();
        let mut nodes = Vec::new();
        for _ in 0..3 {
            nodes.push(Server::start_full(None, None, &args, with_parent)?);
        }
        let mut create = Command::new("redis-cli");
        create.args([
            "--user",
            "admin",
            "--pass",
            "admin",
            "--no-auth-warning",
            "--cluster",
            "create",
        ]);
        for node in &nodes {
            create.arg(format!("127.0.0.1:{}", node.port));
        }
        let out = create
            .args(["--cluster-replicas", "0", "--cluster-yes"])
            .output()
            .expect("redis-cli runs");
        assert!(
            out.status.success(),
            "redis-cli --cluster create: {}",
            String::from_utf8_lossy(&out.stdout)
        );
        let cluster = Cluster { nodes };
        // Every node knows every slot's master before the test starts.
        let started = std::time::Instant::now();
        while !cluster.nodes.iter().all(|n| {
            n.query::<String>(cmd("CLUSTER").arg("INFO"))
                .contains("cluster_state:ok")
        }) {
            assert!(started.elapsed() < PATIENCE, "the cluster never came up");
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        Some(cluster)
    }

    /// The URL retry is given: one node only, as the others are found from it.
    pub fn url(&self) -> String {
        format!(
            "redis+cluster://{USER}:{PASSWORD}@127.0.0.1:{}",
            self.nodes[0].port
        )
    }

    /// A command as `admin`, on the node that holds its key.
    pub fn query<T: FromReply>(&self, cmd: &mut Cmd) -> T {
        let mut last = None;
        for node in &self.nodes {
            match cmd.query::<T>(&mut node.admin()) {
                Ok(v) => return v,
                Err(e) if e.starts_with("MOVED ") || e.starts_with("ASK ") => last = Some(e),
                Err(e) => panic!("admin command: {e}"),
            }
        }
        panic!("no node holds the key: {last:?}")
    }

    /// The node that holds `hash`.
    pub fn holder(&self, hash: &str) -> &Server {
        let slot: u16 = self.nodes[0].query(cmd("CLUSTER").arg("KEYSLOT").arg(hash));
        self.nodes
            .iter()
            .find(|n| {
                let slots: Vec<(u16, u16)> = n
                    .query::<Vec<Value>>(cmd("CLUSTER").arg("SLOTS"))
                    .iter()
                    .filter_map(|range| match range {
                        Value::Array(items) => match (&items[0], &items[1], &items[2]) {
                            (Value::Int(lo), Value::Int(hi), Value::Array(master)) => {
                                let port = match master.get(1) {
                                    Some(Value::Int(p)) => *p as u16,
                                    _ => 0,
                                };
                                (port == n.port).then_some((*lo as u16, *hi as u16))
                            }
                            _ => None,
                        },
                        _ => None,
                    })
                    .collect();
                slots.iter().any(|(lo, hi)| (*lo..=*hi).contains(&slot))
            })
            .expect("a node holds every slot")
    }
}

/// A master, its replica and three sentinels that watch them as `mymaster`, with a short
/// down-after time (1 s) so that a failover takes two or three seconds. Not shorter: a sentinel
/// promotes no replica whose link to the master has been down for more than ten down-after
/// times (plus the time since it saw the master down), so with 500 ms a sentinel that stalled
/// for 5 s while the master died would never fail over.
pub struct Sentinels {
    pub master: Server,
    pub replica: Server,
    sentinels: Vec<(Child, u16, TempDir)>,
}

/// The name the sentinels know the master by.
pub const MASTER_NAME: &str = "mymaster";

impl Sentinels {
    pub fn start() -> Option<Sentinels> {
        if !super::have("redis-cli", "apt-get install redis-tools") {
            return None;
        }
        let master = Server::start()?;
        let replica = Server::start_with_args(
            &[
                "--replicaof",
                "127.0.0.1",
                &master.port.to_string(),
                "--masteruser",
                "admin",
                "--masterauth",
                "admin",
            ]
            .map(String::from),
        )?;
        let started = std::time::Instant::now();
        // The replica has synced and follows the master's writes.
        while !replica
            .query::<String>(cmd("INFO").arg("replication"))
            .contains("master_link_status:up")
        {
            assert!(started.elapsed() < PATIENCE, "the replica never connected");
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        let mut sentinels = Vec::new();
        for _ in 0..3 {
            let dir = tempfile::tempdir().expect("temporary directory");
            let port = free_port();
            let conf = dir.path().join("sentinel.conf");
            fs::write(
                &conf,
                format!(
                    "port {port}\nbind 127.0.0.1\ndir {}\nlogfile {}/sentinel.log\n\
                     sentinel monitor {MASTER_NAME} 127.0.0.1 {} 2\n\
                     sentinel down-after-milliseconds {MASTER_NAME} 1000\n\
                     sentinel failover-timeout {MASTER_NAME} 3000\n\
                     sentinel auth-user {MASTER_NAME} admin\n\
                     sentinel auth-pass {MASTER_NAME} admin\n",
                    dir.path().display(),
                    dir.path().display(),
                    master.port
                ),
            )
            .expect("sentinel.conf");
            let child = Command::new("redis-server")
                .arg(&conf)
                .arg("--sentinel")
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("redis-server --sentinel starts");
            sentinels.push((child, port, dir));
        }
        let set = Sentinels {
            master,
            replica,
            sentinels,
        };
        // Every sentinel knows the master and its replica, and the others.
        let started = std::time::Instant::now();
        while !set.ready() {
            assert!(
                started.elapsed() < PATIENCE,
                "the sentinels never got ready"
            );
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        // A sentinel whose timer ran late by 2 s (a loaded machine, a slow fsync of its
        // config) enters TILT and starts no failover for 30 s: a test that kills the master
        // then waits out its patience (seen beside two busy loops: three sentinels
        // stalled 2.6 s at once). Here only a stall of 10 s tilts, and only for a second.
        // Redis before 7.0 has no SENTINEL DEBUG; there a TILT takes its 30 s.
        for (_, port, _) in &set.sentinels {
            let tuned = sentinel(*port).and_then(|mut con| {
                cmd("SENTINEL")
                    .arg(&["DEBUG", "tilt-trigger", "10000", "tilt-period", "1000"])
                    .query::<()>(&mut con)
            });
            if let Err(e) = tuned {
                eprintln!("the sentinel on port {port} keeps its TILT times: {e}");
            }
        }
        Some(set)
    }

    fn ready(&self) -> bool {
        self.sentinels.iter().all(|(_, port, _)| {
            let Ok(mut con) = sentinel(*port) else {
                return false;
            };
            let replicas: Result<Vec<Value>, _> = cmd("SENTINEL")
                .arg("replicas")
                .arg(MASTER_NAME)
                .query(&mut con);
            let sentinels: Result<Vec<Value>, _> = cmd("SENTINEL")
                .arg("sentinels")
                .arg(MASTER_NAME)
                .query(&mut con);
            matches!((replicas, sentinels), (Ok(r), Ok(s)) if r.len() == 1 && s.len() == 2)
        })
    }

    /// What the sentinels logged, for a test's failure message.
    pub fn logs(&self) -> String {
        let mut logs = String::new();
        for (_, port, dir) in &self.sentinels {
            let log = fs::read_to_string(dir.path().join("sentinel.log")).unwrap_or_default();
            logs.push_str(&format!("--- the sentinel on port {port}:\n{log}"));
        }
        logs
    }

    /// The URL retry is given: the three sentinels and the master's name.
    pub fn url(&self) -> String {
        let hosts: Vec<String> = self
            .sentinels
            .iter()
            .map(|(_, port, _)| format!("127.0.0.1:{port}"))
            .collect();
        format!(
            "redis-sentinel://{USER}:{PASSWORD}@{}/0?sentinelMasterId={MASTER_NAME}",
            hosts.join(",")
        )
    }

    /// The master's port, as the first sentinel that answers says.
    pub fn master_port(&self) -> Option<u16> {
        self.sentinels.iter().find_map(|(_, port, _)| {
            let mut con = sentinel(*port).ok()?;
            cmd("SENTINEL")
                .arg("get-master-addr-by-name")
                .arg(MASTER_NAME)
                .query::<Option<(String, u16)>>(&mut con)
                .ok()
                .flatten()
                .map(|(_, port)| port)
        })
    }
}

/// A connection to the sentinel on `port`.
fn sentinel(port: u16) -> Result<Admin, String> {
    Admin::open(port, None)
}

impl Drop for Sentinels {
    fn drop(&mut self) {
        for (child, _, _) in &mut self.sentinels {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// A command for the test's own connections ([`Admin`]), built as redis-rs's `cmd` was:
/// `cmd("HGET").arg(hash).arg("s")`. The tests talk to the servers they start with this small
/// client of their own (retry has no Redis client crate to lend them), trusting the servers'
/// replies as they trust the servers.
#[derive(Clone, Debug)]
pub struct Cmd(Vec<Vec<u8>>);

pub fn cmd(name: &str) -> Cmd {
    Cmd(vec![name.as_bytes().to_vec()])
}

impl Cmd {
    pub fn arg(&mut self, arg: impl Args) -> &mut Cmd {
        arg.push_to(&mut self.0);
        self
    }

    /// Runs the command on `con`: its reply, or the server's error line.
    pub fn query<T: FromReply>(&self, con: &mut Admin) -> Result<T, String> {
        T::from_reply(con.call(self)?)
    }
}

/// What a command takes as arguments: text, numbers, and lists of them (one argument each).
pub trait Args {
    fn push_to(self, out: &mut Vec<Vec<u8>>);
}

macro_rules! args_by_display {
    ($($t:ty),*) => {$(
        impl Args for $t {
            fn push_to(self, out: &mut Vec<Vec<u8>>) {
                out.push(self.to_string().into_bytes());
            }
        }
    )*};
}
args_by_display!(&str, String, &String, i32, u32, u64, i64, usize, u16);

impl Args for &Vec<String> {
    fn push_to(self, out: &mut Vec<Vec<u8>>) {
        out.extend(self.iter().map(|a| a.as_bytes().to_vec()));
    }
}

impl<const N: usize> Args for &[&str; N] {
    fn push_to(self, out: &mut Vec<Vec<u8>>) {
        out.extend(self.iter().map(|a| a.as_bytes().to_vec()));
    }
}

/// A reply (an error reply is the `Err` of [`Cmd::query`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Value {
    Nil,
    Int(i64),
    Text(Vec<u8>),
    Array(Vec<Value>),
}

/// What a reply is read as.
pub trait FromReply: Sized {
    fn from_reply(v: Value) -> Result<Self, String>;
}

impl FromReply for Value {
    fn from_reply(v: Value) -> Result<Self, String> {
        Ok(v)
    }
}

impl FromReply for () {
    fn from_reply(_: Value) -> Result<Self, String> {
        Ok(())
    }
}

impl FromReply for String {
    fn from_reply(v: Value) -> Result<Self, String> {
        match v {
            Value::Text(t) => String::from_utf8(t).map_err(|e| e.to_string()),
            Value::Int(n) => Ok(n.to_string()),
            other => Err(format!("not text: {other:?}")),
        }
    }
}

macro_rules! numbers {
    ($($t:ty),*) => {$(
        impl FromReply for $t {
            fn from_reply(v: Value) -> Result<Self, String> {
                match v {
                    Value::Int(n) => <$t>::try_from(n).map_err(|e| e.to_string()),
                    Value::Text(t) => String::from_utf8_lossy(&t)
                        .parse()
                        .map_err(|_| format!("not a number: {t:?}")),
                    other => Err(format!("not a number: {other:?}")),
                }
            }
        }
    )*};
}
numbers!(u16, u64, i64);

impl FromReply for bool {
    fn from_reply(v: Value) -> Result<Self, String> {
        i64::from_reply(v).map(|n| n != 0)
    }
}

impl<T: FromReply> FromReply for Option<T> {
    fn from_reply(v: Value) -> Result<Self, String> {
        match v {
            Value::Nil => Ok(None),
            v => T::from_reply(v).map(Some),
        }
    }
}

impl FromReply for Vec<Value> {
    fn from_reply(v: Value) -> Result<Self, String> {
        match v {
            Value::Array(items) => Ok(items),
            other => Err(format!("not an array: {other:?}")),
        }
    }
}

/// Two items of an array, or (HGETALL) every two items of one.
fn pairs<A: FromReply, B: FromReply>(v: Value) -> Result<Vec<(A, B)>, String> {
    let Value::Array(items) = v else {
        return Err(format!("not an array: {v:?}"));
    };
    let mut items = items.into_iter();
    let mut out = Vec::new();
    while let Some(a) = items.next() {
        let b = items.next().ok_or("an odd number of items")?;
        out.push((A::from_reply(a)?, B::from_reply(b)?));
    }
    Ok(out)
}

impl<A: FromReply, B: FromReply> FromReply for (A, B) {
    fn from_reply(v: Value) -> Result<Self, String> {
        let mut all = pairs(v)?;
        match all.len() {
            1 => all.pop().ok_or_else(String::new),
            n => Err(format!("{n} pairs, not one")),
        }
    }
}

impl<A: FromReply, B: FromReply> FromReply for Vec<(A, B)> {
    fn from_reply(v: Value) -> Result<Self, String> {
        pairs(v)
    }
}

impl FromReply for std::collections::HashMap<String, String> {
    fn from_reply(v: Value) -> Result<Self, String> {
        pairs(v).map(|all| all.into_iter().collect())
    }
}

/// The test's own connection to a server.
pub struct Admin {
    io: std::io::BufReader<std::net::TcpStream>,
}

impl Admin {
    /// Connects to the server on `port`, as `user` with `password` if given.
    pub fn open(port: u16, login: Option<(&str, &str)>) -> Result<Admin, String> {
        let tcp = std::net::TcpStream::connect(("127.0.0.1", port)).map_err(|e| e.to_string())?;
        let mut con = Admin {
            io: std::io::BufReader::new(tcp),
        };
        if let Some((user, password)) = login {
            cmd("AUTH").arg(user).arg(password).query::<()>(&mut con)?;
        }
        Ok(con)
    }

    pub fn set_read_timeout(&self, limit: Option<Duration>) -> std::io::Result<()> {
        self.io.get_ref().set_read_timeout(limit)
    }

    pub fn set_write_timeout(&self, limit: Option<Duration>) -> std::io::Result<()> {
        self.io.get_ref().set_write_timeout(limit)
    }

    fn call(&mut self, cmd: &Cmd) -> Result<Value, String> {
        use std::io::Write;
        let mut out = format!("*{}\r\n", cmd.0.len()).into_bytes();
        for arg in &cmd.0 {
            out.extend_from_slice(format!("${}\r\n", arg.len()).as_bytes());
            out.extend_from_slice(arg);
            out.extend_from_slice(b"\r\n");
        }
        self.io
            .get_mut()
            .write_all(&out)
            .map_err(|e| e.to_string())?;
        self.reply()
    }

    fn reply(&mut self) -> Result<Value, String> {
        use std::io::{BufRead, Read};
        let mut line = Vec::new();
        self.io
            .read_until(b'\n', &mut line)
            .map_err(|e| e.to_string())?;
        let text = String::from_utf8_lossy(line.strip_suffix(b"\r\n").ok_or("connection closed")?)
            .into_owned();
        let (kind, rest) = text.split_at(1);
        let n = || rest.parse::<i64>().map_err(|e| e.to_string());
        match kind {
            "+" => Ok(Value::Text(rest.as_bytes().to_vec())),
            "-" => Err(rest.to_string()),
            ":" => Ok(Value::Int(n()?)),
            "$" | "*" if n()? < 0 => Ok(Value::Nil),
            "$" => {
                let mut bulk = vec![0; n()? as usize + 2];
                self.io.read_exact(&mut bulk).map_err(|e| e.to_string())?;
                bulk.truncate(bulk.len() - 2);
                Ok(Value::Text(bulk))
            }
            "*" => {
                let mut items = Vec::new();
                for _ in 0..n()? {
                    items.push(match self.reply() {
                        Ok(v) => v,
                        // An error inside an array is a value there.
                        Err(e) => Value::Text(e.into_bytes()),
                    });
                }
                Ok(Value::Array(items))
            }
            _ => Err(format!("not a reply: {text:?}")),
        }
    }
}
