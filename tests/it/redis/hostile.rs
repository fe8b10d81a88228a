//! A store that is not a good Redis: fake servers of the tests' own, scripted to send a reply a
//! byte at a time, to flood an array or a string that never ends, to send an error line of
//! 12 MB, or to answer SCAN with a cursor that never comes back to 0; as the one server
//! (`redis://`), as the sentinel and as the master it names (`redis-sentinel://`), as a
//! cluster's node (`redis+cluster://`), and to `--list-keys`. Against each, the run ends
//! within `--state-timeout` and a margin, holds little memory, says so in one short line with
//! what the peer sent escaped, and the command runs (`--state-fail open`).

use std::io::{BufRead, BufReader, Write};

use super::*;

/// What the fake server does with a command it is sent.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Peer {
    /// Starts a reply, then sends one more byte of it every 50 ms, for ever.
    Dribble,
    /// `*999999999999`, then `:1` for ever.
    ArrayFlood,
    /// `$999999999999`, then bytes for ever.
    BulkFlood,
    /// An error line of 12 × 1 MB, escape sequences in it.
    LongError,
    /// SCAN rounds of 1,000 new keys each whose cursor is never 0 (any other command is
    /// dribbled to).
    EndlessScan,
}

/// A fake server on its own port; its threads serve each connection until the client goes.
struct Fake {
    port: u16,
}

impl Fake {
    /// A server that answers every command as `peer` says; with `master`, it answers a
    /// sentinel's question with that port, as a real sentinel would.
    fn start(peer: Peer, master: Option<u16>) -> Fake {
        let listener = TcpListener::bind("127.0.0.1:0").expect("listen");
        let port = listener.local_addr().expect("address").port();
        thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                thread::spawn(move || {
                    // The client closing the connection ends it: not the test's failure.
                    let _ = serve(stream, peer, port, master);
                });
            }
        });
        Fake { port }
    }
}

/// One command: an array of bulk strings, as retry writes it.
fn command(r: &mut impl BufRead) -> std::io::Result<Vec<String>> {
    let mut line = String::new();
    let mut header = |r: &mut dyn BufRead| -> std::io::Result<usize> {
        line.clear();
        if r.read_line(&mut line)? == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        line[1..]
            .trim_end()
            .parse()
            .map_err(|_| std::io::ErrorKind::InvalidData.into())
    };
    let n = header(r)?;
    let mut args = Vec::new();
    for _ in 0..n {
        let len = header(r)?;
        let mut arg = vec![0; len + 2];
        r.read_exact(&mut arg)?;
        arg.truncate(len);
        args.push(String::from_utf8_lossy(&arg).into_owned());
    }
    Ok(args)
}

fn serve(stream: TcpStream, peer: Peer, port: u16, master: Option<u16>) -> std::io::Result<()> {
    let mut r = BufReader::new(stream.try_clone()?);
    let mut w = stream;
    let mut round = 0u64;
    loop {
        let args = command(&mut r)?;
        let name = args.first().map(|a| a.to_ascii_uppercase());
        match (name.as_deref(), peer, master) {
            (Some("SENTINEL"), _, Some(master)) => {
                let port = master.to_string();
                write!(w, "*2\r\n$9\r\n127.0.0.1\r\n${}\r\n{port}\r\n", port.len())?;
            }
            (Some("CLUSTER"), _, _) => {
                let table = format!(
                    "07c37dfeb235213a872192d90877d0cd55635b91 127.0.0.1:{port}@1{port} \
                     myself,master - 0 0 1 connected 0-16383\n"
                );
                write!(w, "${}\r\n{table}\r\n", table.len())?;
            }
            (Some("SCAN"), Peer::EndlessScan, _) => {
                round += 1;
                let mut reply = b"*2\r\n$1\r\n7\r\n*1000\r\n".to_vec();
                for i in 0..1000 {
                    let key = format!("retry:k{round}-{i}");
                    reply.extend_from_slice(format!("${}\r\n{key}\r\n", key.len()).as_bytes());
                }
                w.write_all(&reply)?;
            }
            (_, Peer::Dribble | Peer::EndlessScan, _) => {
                w.write_all(b"+")?;
                loop {
                    // The scripted peer's pace: one byte, then 50 ms.
                    w.write_all(b"a")?;
                    thread::sleep(Duration::from_millis(50));
                }
            }
            (_, Peer::ArrayFlood, _) => {
                w.write_all(b"*999999999999\r\n")?;
                let chunk = b":1\r\n".repeat(16 * 1024);
                loop {
                    w.write_all(&chunk)?;
                }
            }
            (_, Peer::BulkFlood, _) => {
                w.write_all(b"$999999999999\r\n")?;
                let chunk = vec![b'x'; 64 * 1024];
                loop {
                    w.write_all(&chunk)?;
                }
            }
            (_, Peer::LongError, _) => {
                w.write_all(b"-ERR \x1b[31mred\x1b[0m ")?;
                let mb = vec![b'x'; 1 << 20];
                for _ in 0..12 {
                    w.write_all(&mb)?;
                }
                w.write_all(b"\r\n")?;
            }
        }
    }
}

/// How a run against a fake ended.
struct Ended {
    code: Option<i32>,
    stderr: String,
    took: Duration,
    /// Its peak resident memory, in KiB, as last read before it ended (VmHWM).
    peak_kib: u64,
}

/// The longest the test waits for a run: the old client hung for ever, or grew by 1.5 GB in
/// 10 s, and the test must fail, not hang or fill the machine.
const LIMIT: Duration = Duration::from_secs(15);

/// Runs retry with `args` (and `--state-timeout 1s` unless they say), killed if it still runs
/// after [`LIMIT`].
fn against(s: &Setup, args: &[&str]) -> Ended {
    let timeout: &[&str] = if args.contains(&"--state-timeout") {
        &[]
    } else {
        &["--state-timeout", "1s"]
    };
    let mut c = s.retry(&with(args, timeout));
    c.arg("--").args(s.command(0));
    let started = Instant::now();
    let mut child = c
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("retry starts");
    let mut err = child.stderr.take().expect("stderr");
    let reader = thread::spawn(move || {
        let mut bytes = Vec::new();
        let _ = err.read_to_end(&mut bytes);
        bytes
    });
    let pid = child.id();
    let (mut status, mut peak_kib) = (None, 0);
    support::within(LIMIT, || {
        // Its peak so far, read while it runs: at its exit, its memory is gone. (wait4's
        // ru_maxrss would count the test process's own, which the child shared until exec.)
        peak_kib = peak_kib.max(vm_hwm(pid).unwrap_or(0));
        status = child.try_wait().expect("wait for retry");
        status.is_some()
    });
    let Some(status) = status else {
        let _ = child.kill();
        let _ = child.wait();
        panic!("{args:?}: retry still ran after {LIMIT:?} (peak RSS {peak_kib} KiB)");
    };
    let took = started.elapsed();
    let stderr = String::from_utf8_lossy(&reader.join().expect("stderr read")).into_owned();
    let code = status.code();
    eprintln!("{args:?}: {took:?}, peak RSS {peak_kib} KiB");
    Ended {
        code,
        stderr,
        took,
        peak_kib,
    }
}

/// The process's peak resident memory so far, in KiB, where there is a /proc.
fn vm_hwm(pid: u32) -> Option<u64> {
    let status = fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// The run ended in time, ran the command on the local state, held little memory, and said why
/// in one short line, the peer's bytes escaped.
fn survived(s: &Setup, args: &[&str], why: &str) {
    let ran = s.ran();
    let e = against(s, args);
    let said = format!("{args:?}: {}", e.stderr);
    assert_eq!(e.code, Some(0), "{said}");
    assert_eq!(s.ran(), ran + 1, "the command ran: {said}");
    assert!(e.took < Duration::from_secs(10), "{:?}: {said}", e.took);
    assert!(e.peak_kib < 64 * 1024, "{} KiB: {said}", e.peak_kib);
    assert!(
        e.stderr.contains("going on with this host's local state"),
        "{said}"
    );
    assert!(e.stderr.contains(why), "{said}");
    assert_eq!(e.stderr.lines().count(), 1, "{said}");
    assert!(e.stderr.len() < 600, "{} bytes: {said}", e.stderr.len());
    assert!(!e.stderr.contains('\x1b'), "{said}");
}

#[test]
fn a_store_that_dribbles_floods_or_rambles_costs_a_run_no_more_than_its_state_timeout() {
    let s = Setup::file();
    // Time bounds the dribble; size bounds the others, so their deadline is generous: on a
    // loaded machine a second could pass before the peer's first bytes, and the run would be
    // right to give up on time instead.
    for (peer, timeout, why) in [
        (Peer::Dribble, "1s", "no answer within --state-timeout 1s"),
        (Peer::ArrayFlood, "20s", "array of 999999999999 items"),
        (Peer::BulkFlood, "20s", "string of 999999999999 bytes"),
        (Peer::LongError, "20s", "larger than 1024 KiB"),
    ] {
        let fake = Fake::start(peer, None);
        let one = format!("redis://127.0.0.1:{}", fake.port);
        let cluster = format!("redis+cluster://127.0.0.1:{}", fake.port);
        // The fake as the sentinel, and as the master a real sentinel's answer names.
        let sentinel = format!(
            "redis-sentinel://127.0.0.1:{}/0?sentinelMasterId=mymaster",
            fake.port
        );
        let named = Fake::start(Peer::Dribble, Some(fake.port));
        let master = format!(
            "redis-sentinel://127.0.0.1:{}/0?sentinelMasterId=mymaster",
            named.port
        );
        for url in [&one, &cluster, &sentinel, &master] {
            let args = [
                "--key",
                "api",
                "--state",
                url,
                "--state-timeout",
                timeout,
                "-n",
                "1",
            ];
            survived(&s, &args, why);
        }
    }
}

#[test]
fn an_error_line_is_quoted_short_and_escaped() {
    // A short one, whole; the long one of the test above, cut.
    let s = Setup::file();
    let listener = TcpListener::bind("127.0.0.1:0").expect("listen");
    let port = listener.local_addr().expect("address").port();
    thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let _ = (|| -> std::io::Result<()> {
                let mut r = BufReader::new(stream.try_clone()?);
                let mut w = stream;
                command(&mut r)?;
                let mut line = b"-ERR \x1b]0;owned\x07 ".to_vec();
                line.extend_from_slice(&[b'y'; 500]);
                line.extend_from_slice(b"\r\n");
                w.write_all(&line)
            })();
        }
    });
    let url = format!("redis://127.0.0.1:{port}");
    let e = against(&s, &["--key", "api", "--state", &url, "-n", "1"]);
    assert_eq!(e.code, Some(0), "{}", e.stderr);
    assert!(
        e.stderr.contains(r"it answered $'ERR \033]0;owned\a yyy"),
        "{}",
        e.stderr
    );
    assert!(e.stderr.contains("… (315 bytes more)"), "{}", e.stderr);
    assert!(!e.stderr.contains('\x1b') && !e.stderr.contains('\x07'));
}

#[test]
fn list_keys_against_a_scan_that_never_ends_stops_at_its_bounds() {
    let s = Setup::file();
    for (peer, timeout, why) in [
        // New keys every round: the cap on keys stops it.
        (Peer::EndlessScan, "30s", "more than 100000 keys"),
        (Peer::Dribble, "1s", "no answer within --state-timeout 1s"),
        (Peer::ArrayFlood, "20s", "array of 999999999999 items"),
        (Peer::BulkFlood, "20s", "string of 999999999999 bytes"),
    ] {
        let fake = Fake::start(peer, None);
        for url in [
            format!("redis://127.0.0.1:{}", fake.port),
            format!("redis+cluster://127.0.0.1:{}", fake.port),
        ] {
            let e = against(
                &s,
                &["--list-keys", "--state", &url, "--state-timeout", timeout],
            );
            let said = format!("{peer:?} {url}: {}", e.stderr);
            assert_eq!(e.code, Some(125), "{said}");
            assert!(e.took < Duration::from_secs(10), "{:?}: {said}", e.took);
            assert!(e.peak_kib < 64 * 1024, "{} KiB: {said}", e.peak_kib);
            assert!(e.stderr.contains("cannot list the keys"), "{said}");
            assert!(e.stderr.contains(why), "{said}");
        }
    }
}

#[test]
fn a_runs_store_calls_end_at_its_max_time() {
    let s = Setup::file();
    let fake = Fake::start(Peer::Dribble, None);
    let url = format!("redis://127.0.0.1:{}", fake.port);
    let args = [
        "--key",
        "api",
        "--state",
        &url,
        "--state-timeout",
        "30s",
        "--max-time",
        "1s",
        "-n",
        "1",
    ];
    let e = against(&s, &args);
    assert!(
        e.took < Duration::from_secs(10),
        "{:?}: {}",
        e.took,
        e.stderr
    );
    assert!(
        e.stderr
            .contains("no answer in the time the run's --max-time left it"),
        "{}",
        e.stderr
    );
}
