//! A small HTTP/1.1 server for driving real `curl` through `retry` in tests.
//!
//! It listens on 127.0.0.1 at a port the system picks, answers each request with the next
//! reply of a scripted sequence (one connection per request: every response says
//! `Connection: close`), handles each connection on a thread of its own, and stops when the
//! `Server` is dropped.

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

/// How long a connection may take to send its request head before it is dropped.
const READ_PATIENCE: Duration = Duration::from_secs(10);
/// The largest request head accepted.
const MAX_HEAD: usize = 64 * 1024;
/// The largest request body read (and thrown away) before answering.
const MAX_BODY: u64 = 16 * 1024 * 1024;

/// One scripted response.
#[derive(Clone, Debug)]
pub struct Reply {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    /// The body is written in pieces of this size with this pause between them (for tests of
    /// output that arrives slowly).
    pub pieces: Option<(usize, Duration)>,
}

impl Reply {
    pub fn new(status: u16) -> Reply {
        Reply {
            status,
            headers: Vec::new(),
            body: Vec::new(),
            pieces: None,
        }
    }

    /// Adds a header. `Content-Length` and `Connection` are added by the server; giving either
    /// here replaces the server's own (a `Content-Length` larger than the body makes a truncated
    /// response, which curl reports as exit status 18).
    pub fn header(mut self, name: &str, value: &str) -> Reply {
        self.headers.push((name.to_owned(), value.to_owned()));
        self
    }

    pub fn body(mut self, body: impl Into<Vec<u8>>) -> Reply {
        self.body = body.into();
        self
    }

    /// Writes the body `size` bytes at a time, pausing `pause` between pieces. The status line
    /// and headers go out at once, together with the first piece.
    pub fn in_pieces(mut self, size: usize, pause: Duration) -> Reply {
        self.pieces = Some((size.max(1), pause));
        self
    }

    fn has_header(&self, name: &str) -> bool {
        self.headers
            .iter()
            .any(|(n, _)| n.eq_ignore_ascii_case(name))
    }

    /// The status line and headers, ending with the blank line.
    fn head(&self) -> Vec<u8> {
        let mut head = format!("HTTP/1.1 {} {}\r\n", self.status, reason(self.status));
        for (name, value) in &self.headers {
            head.push_str(&format!("{name}: {value}\r\n"));
        }
        if !self.has_header("content-length") {
            head.push_str(&format!("Content-Length: {}\r\n", self.body.len()));
        }
        if !self.has_header("connection") {
            head.push_str("Connection: close\r\n");
        }
        head.push_str("\r\n");
        head.into_bytes()
    }
}

/// The reason phrase for a status code.
fn reason(status: u16) -> &'static str {
    match status {
        100 => "Continue",
        200 => "OK",
        201 => "Created",
        202 => "Accepted",
        204 => "No Content",
        206 => "Partial Content",
        301 => "Moved Permanently",
        302 => "Found",
        303 => "See Other",
        304 => "Not Modified",
        307 => "Temporary Redirect",
        308 => "Permanent Redirect",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        408 => "Request Timeout",
        409 => "Conflict",
        410 => "Gone",
        413 => "Content Too Large",
        418 => "I'm a teapot",
        422 => "Unprocessable Content",
        425 => "Too Early",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        501 => "Not Implemented",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        _ => "Unknown",
    }
}

/// A scripted sequence and how many of its replies were used.
struct Sequence {
    replies: Vec<Reply>,
    served: usize,
}

impl Sequence {
    fn new(replies: Vec<Reply>, what: &str) -> Sequence {
        assert!(
            !replies.is_empty(),
            "http test server: no replies for {what}"
        );
        Sequence { replies, served: 0 }
    }

    /// The next reply; after the last one, the last one again.
    fn next(&mut self) -> Reply {
        let i = self.served.min(self.replies.len() - 1);
        self.served += 1;
        self.replies[i].clone()
    }
}

enum Script {
    /// One sequence for every path.
    Any(Sequence),
    /// A sequence per path (without the query string); other paths get 404.
    Routes(HashMap<String, Sequence>),
}

struct State {
    script: Script,
    times: Vec<Instant>,
    paths: Vec<String>,
}

struct Shared {
    state: Mutex<State>,
    stop: AtomicBool,
}

impl Shared {
    /// The state, even if some thread panicked while holding it.
    fn state(&self) -> MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn stopping(&self) -> bool {
        self.stop.load(Ordering::SeqCst)
    }

    /// Records a request and picks its reply.
    fn reply_for(&self, target: &str) -> Reply {
        let path = target.split(['?', '#']).next().unwrap_or(target);
        let mut state = self.state();
        state.times.push(Instant::now());
        state.paths.push(target.to_owned());
        match &mut state.script {
            Script::Any(sequence) => sequence.next(),
            Script::Routes(routes) => match routes.get_mut(path) {
                Some(sequence) => sequence.next(),
                None => Reply::new(404).body(format!("no route for {path}\n")),
            },
        }
    }
}

/// A running test server; dropping it stops it.
pub struct Server {
    addr: SocketAddr,
    shared: Arc<Shared>,
    acceptor: Option<JoinHandle<()>>,
}

impl Server {
    /// Serves `replies` in order, one per request, whatever the path; after the last one,
    /// repeats the last.
    pub fn start(replies: Vec<Reply>) -> Server {
        Server::with_script(Script::Any(Sequence::new(replies, "the server")))
    }

    /// Routes by request path (the query string is ignored): each path has its own sequence,
    /// which repeats its last reply when used up. Paths without a route get 404.
    pub fn routes(routes: Vec<(&str, Vec<Reply>)>) -> Server {
        let mut table = HashMap::new();
        for (path, replies) in routes {
            let path = if path.starts_with('/') {
                path.to_owned()
            } else {
                format!("/{path}")
            };
            let sequence = Sequence::new(replies, &path);
            assert!(
                table.insert(path.clone(), sequence).is_none(),
                "http test server: route {path} given twice"
            );
        }
        Server::with_script(Script::Routes(table))
    }

    fn with_script(script: Script) -> Server {
        let listener =
            TcpListener::bind("127.0.0.1:0").expect("http test server: bind 127.0.0.1:0");
        let addr = listener
            .local_addr()
            .expect("http test server: local address of the listener");
        let shared = Arc::new(Shared {
            state: Mutex::new(State {
                script,
                times: Vec::new(),
                paths: Vec::new(),
            }),
            stop: AtomicBool::new(false),
        });
        let for_acceptor = Arc::clone(&shared);
        let acceptor = thread::Builder::new()
            .name(format!("http-test-server-{}", addr.port()))
            .spawn(move || accept_loop(&listener, &for_acceptor))
            .expect("http test server: spawn the accept thread");
        Server {
            addr,
            shared,
            acceptor: Some(acceptor),
        }
    }

    /// `http://127.0.0.1:PORT/path` (a missing leading `/` is added).
    pub fn url(&self, path: &str) -> String {
        let slash = if path.starts_with('/') { "" } else { "/" };
        format!("http://{}{slash}{path}", self.addr)
    }

    /// How many requests have been received so far (counted once the request head is read,
    /// before the reply is written; a connection that sends no complete head does not count).
    pub fn requests(&self) -> usize {
        self.shared.state().times.len()
    }

    /// When each request arrived (its head was read), in order.
    pub fn request_times(&self) -> Vec<Instant> {
        self.shared.state().times.clone()
    }

    /// The request target of each request (path and query), in order.
    pub fn request_paths(&self) -> Vec<String> {
        self.shared.state().paths.clone()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        // Wake the accept loop; it sees the flag and returns. If the wake-up connection cannot
        // be made, leave the thread behind rather than hang here.
        let woke = TcpStream::connect_timeout(&self.addr, Duration::from_secs(2)).is_ok();
        if let Some(acceptor) = self.acceptor.take()
            && woke
        {
            let _ = acceptor.join();
        }
    }
}

fn accept_loop(listener: &TcpListener, shared: &Arc<Shared>) {
    loop {
        let accepted = listener.accept();
        if shared.stopping() {
            return;
        }
        match accepted {
            Ok((stream, _)) => {
                let shared = Arc::clone(shared);
                // If no thread can be had, the connection is dropped and the client sees an
                // error, which is better than stopping the server.
                let _ = thread::Builder::new()
                    .name("http-test-connection".to_owned())
                    .spawn(move || serve(stream, &shared));
            }
            // Transient errors (a client that went away before accept, EMFILE): go on.
            Err(_) => thread::sleep(Duration::from_millis(5)),
        }
    }
}

/// Serves one connection: reads one request, writes one reply, closes. Every I/O error
/// (a client that gave up) just ends the connection.
fn serve(mut stream: TcpStream, shared: &Shared) {
    let _ = stream.set_read_timeout(Some(READ_PATIENCE));
    let _ = stream.set_write_timeout(Some(READ_PATIENCE));
    let _ = stream.set_nodelay(true);
    let Some(request) = read_request(&mut stream) else {
        return;
    };
    let reply = shared.reply_for(&request.target);
    let head_only = request.method.eq_ignore_ascii_case("HEAD");
    if write_reply(&mut stream, &reply, head_only, shared).is_err() {
        return;
    }
    let _ = stream.flush();
    // Close gently: shut our side, then wait briefly for the client to close its side, so
    // that the kernel does not answer leftover input with a reset that loses the response.
    let _ = stream.shutdown(Shutdown::Write);
    let _ = stream.set_read_timeout(Some(Duration::from_secs(2)));
    let mut sink = [0u8; 4096];
    while let Ok(n) = stream.read(&mut sink) {
        if n == 0 {
            break;
        }
    }
}

struct Request {
    method: String,
    target: String,
}

/// Reads the request head up to the blank line, and throws away a body announced by
/// `Content-Length`. `None` if the client went away or sent something unreadable.
fn read_request(stream: &mut TcpStream) -> Option<Request> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    let head_end = loop {
        if let Some(i) = find(&buf, b"\r\n\r\n") {
            break i + 4;
        }
        if buf.len() > MAX_HEAD {
            return None;
        }
        match stream.read(&mut chunk) {
            Ok(0) | Err(_) => return None,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
    let mut lines = head.split("\r\n");
    let mut words = lines.next()?.split_whitespace();
    let method = words.next()?.to_owned();
    let mut target = words.next()?.to_owned();
    // Absolute form (`http://host:port/path`), as sent to a proxy: keep the path.
    if let Some(rest) = target.strip_prefix("http://") {
        target = match rest.find('/') {
            Some(i) => rest[i..].to_owned(),
            None => "/".to_owned(),
        };
    }
    let body_len = lines
        .filter_map(|line| line.split_once(':'))
        .find(|(name, _)| name.trim().eq_ignore_ascii_case("content-length"))
        .and_then(|(_, value)| value.trim().parse::<u64>().ok())
        .unwrap_or(0);
    let already = (buf.len() - head_end) as u64;
    if body_len > already {
        let rest = (body_len - already).min(MAX_BODY);
        let _ = std::io::copy(&mut stream.take(rest), &mut std::io::sink());
    }
    Some(Request { method, target })
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

fn write_reply(
    stream: &mut TcpStream,
    reply: &Reply,
    head_only: bool,
    shared: &Shared,
) -> std::io::Result<()> {
    let mut out = reply.head();
    let body: &[u8] = if head_only { &[] } else { &reply.body };
    match reply.pieces {
        None => {
            out.extend_from_slice(body);
            stream.write_all(&out)
        }
        Some((size, pause)) => {
            let mut pieces = body.chunks(size.max(1));
            if let Some(first) = pieces.next() {
                out.extend_from_slice(first);
            }
            stream.write_all(&out)?;
            stream.flush()?;
            for piece in pieces {
                pause_unless_stopped(pause, shared)?;
                stream.write_all(piece)?;
                stream.flush()?;
            }
            Ok(())
        }
    }
}

/// Sleeps for `pause`, but gives up (with an error, to end the connection) as soon as the
/// server is dropped, so that a slow reply does not outlive its test by much.
fn pause_unless_stopped(pause: Duration, shared: &Shared) -> std::io::Result<()> {
    let until = Instant::now() + pause;
    loop {
        if shared.stopping() {
            return Err(std::io::Error::other("http test server stopped"));
        }
        let now = Instant::now();
        if now >= until {
            return Ok(());
        }
        thread::sleep((until - now).min(Duration::from_millis(20)));
    }
}
