//! A redis-server of a bench's own, on a free loopback port, killed when dropped. Included by
//! `#[path]` from the benches that speak to one (overhead, storerate).

use std::io::{self, BufRead, BufReader};
use std::net::TcpListener;
use std::process::{Child, Command, Stdio};

/// A running redis-server; `port` is where it listens on 127.0.0.1.
pub struct Redis {
    child: Child,
    pub port: u16,
}

impl Redis {
    /// Starts one with `extra` arguments beside the bench's defaults (no persistence, loopback
    /// only); `None` when there is no redis-server to run.
    pub fn start(extra: &[&str]) -> Result<Option<Redis>, String> {
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map_err(|e| format!("no free port: {e}"))?
            .port();
        let spawned = Command::new("redis-server")
            .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
            .args(["--save", "", "--appendonly", "no", "--dir", "/tmp"])
            .args(extra)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn();
        let mut child = match spawned {
            Ok(child) => child,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(format!("cannot run redis-server: {e}")),
        };
        let stdout = child.stdout.take().ok_or("no stdout")?;
        let redis = Redis { child, port };
        let mut lines = BufReader::new(stdout).lines();
        loop {
            match lines.next() {
                Some(Ok(line)) if line.contains("Ready to accept connections") => break,
                Some(Ok(_)) => {}
                _ => return Err("redis-server did not start".into()),
            }
        }
        // The rest of its log is read and dropped, so that it never writes into a full pipe.
        std::thread::spawn(move || lines.for_each(drop));
        Ok(Some(redis))
    }
}

impl Drop for Redis {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
