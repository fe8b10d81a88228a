//! retry around real `curl` against a real HTTP server on 127.0.0.1: statuses from the header
//! dump in the hint file, `Retry-After`, redirect chains, and output rules on streamed output.

use std::time::{Duration, Instant};

use crate::support::http::{Reply, Server};
use crate::support::{Launch, Run, retry};

/// `retry ARGS -- curl -sS -D {hints} URL` with the given extra curl flags; returns the output.
fn curl(args: &[&str], curl_flags: &[&str], url: &str) -> Run {
    let mut c = retry();
    c.args(args)
        .args(["--hints", "--", "curl", "-sS", "-D", "{hints}"]);
    c.args(curl_flags).arg(url);
    c.run()
}

fn stderr(out: &Run) -> String {
    out.stderr()
}

fn gap(server: &Server, between: usize) -> Duration {
    let times = server.request_times();
    times[between] - times[between - 1]
}

#[test]
fn a_503_then_a_200_succeeds_on_the_second_attempt() {
    let server = Server::start(vec![Reply::new(503), Reply::new(200).body("ok\n")]);
    let out = curl(&["-d", "0"], &["-f"], &server.url("/"));
    assert_eq!(out.code(), Some(0), "{}", stderr(&out));
    assert_eq!(server.requests(), 2);
    assert_eq!(out.stdout, b"ok\n");
}

#[test]
fn a_404_stops_after_one_attempt() {
    let server = Server::start(vec![Reply::new(404)]);
    let out = curl(&["-d", "0"], &["-f"], &server.url("/"));
    out.assert().code(22);
    assert_eq!(server.requests(), 1);
    assert!(
        stderr(&out).contains("HTTP status 404 is fatal"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn without_fail_a_503_that_never_recovers_does_not_exit_0() {
    let server = Server::start(vec![Reply::new(503)]);
    let out = curl(&["-n", "2", "-d", "0"], &[], &server.url("/"));
    assert_eq!(server.requests(), 2);
    assert_eq!(out.code(), Some(22), "{}", stderr(&out));
    // curl exited 0: the give-up line says why retry's status is not the command's.
    assert!(
        stderr(&out)
            .contains("last exit status 0; retry exits 22: exit status 0 is not a success here;"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn retry_after_1_makes_the_next_attempt_wait_at_least_a_second() {
    let server = Server::start(vec![
        Reply::new(503).header("Retry-After", "1"),
        Reply::new(200),
    ]);
    let out = curl(&["-d", "0"], &["-f"], &server.url("/"));
    assert_eq!(out.code(), Some(0), "{}", stderr(&out));
    assert!(
        gap(&server, 1) >= Duration::from_secs(1),
        "{:?}",
        gap(&server, 1)
    );
    assert!(
        stderr(&out).contains("following Retry-After 1s"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn a_retry_after_date_in_the_past_means_no_wait() {
    let server = Server::start(vec![
        Reply::new(429).header("Retry-After", "Wed, 21 Oct 2015 07:28:00 GMT"),
        Reply::new(200),
    ]);
    let out = curl(&["-d", "0"], &["-f"], &server.url("/"));
    assert_eq!(out.code(), Some(0), "{}", stderr(&out));
    assert!(
        gap(&server, 1) < Duration::from_secs(1),
        "{:?}",
        gap(&server, 1)
    );
}

#[test]
fn a_retry_after_of_a_day_is_capped_by_retry_after_max() {
    let server = Server::start(vec![
        Reply::new(503).header("Retry-After", "86400"),
        Reply::new(200),
    ]);
    let out = curl(
        &["-d", "0", "--retry-after-max", "1s"],
        &["-f"],
        &server.url("/"),
    );
    assert_eq!(out.code(), Some(0), "{}", stderr(&out));
    let waited = gap(&server, 1);
    assert!(
        waited >= Duration::from_millis(800) && waited < Duration::from_secs(10),
        "{waited:?}"
    );
    assert!(
        stderr(&out).contains("capped by --retry-after-max"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn a_retry_after_past_max_time_stops_the_run_at_once() {
    let server = Server::start(vec![Reply::new(503).header("Retry-After", "120")]);
    let started = Instant::now();
    let out = curl(&["--max-time", "30s"], &["-f"], &server.url("/"));
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(server.requests(), 1);
    out.assert().code(22);
    let log = stderr(&out);
    assert!(
        log.contains("come back in 2m, after the --max-time deadline"),
        "{log}"
    );
}

#[test]
fn a_redirect_chain_is_judged_by_its_last_response() {
    let server = Server::routes(vec![
        ("/start", vec![Reply::new(302).header("Location", "/end")]),
        ("/end", vec![Reply::new(503), Reply::new(200).body("done")]),
    ]);
    let out = curl(&["-d", "0"], &["-f", "-L"], &server.url("/start"));
    assert_eq!(out.code(), Some(0), "{}", stderr(&out));
    assert_eq!(out.stdout, b"done");
    assert_eq!(server.request_paths(), ["/start", "/end", "/start", "/end"]);
    // A redirect to a 404 is fatal, though the first response was a 302.
    let server = Server::routes(vec![
        ("/start", vec![Reply::new(301).header("Location", "/gone")]),
        ("/gone", vec![Reply::new(404)]),
    ]);
    let out = curl(&["-d", "0"], &["-f", "-L"], &server.url("/start"));
    out.assert().code(22);
    assert_eq!(server.requests(), 2);
}

/// curl -D writes every response of a redirect chain, and of every URL of the command line;
/// past the first MiB of the dump, the last response still decides: redirect chains that end
/// in a 404 are fatal, not retried as the redirect the dump's first MiB ends with.
#[test]
fn a_404_at_the_end_of_a_header_dump_past_a_mib_is_fatal() {
    // curl refuses more than 300 KiB of headers in one transfer, redirects included, so the
    // dump is made of several: five URLs, each a chain of six redirects of 40 kB of headers,
    // 1.2 MB in all. The last chain ends in a 404, the others in a 200.
    const CHAINS: usize = 5;
    const HOPS: usize = 6;
    const PADS: usize = 5;
    const PAD: usize = 8_000;
    const _: () = assert!(CHAINS * HOPS * PADS * PAD > 1_100_000);
    let pad = "p".repeat(PAD);
    let path = |chain: usize, hop: usize| format!("/chain{chain}/hop{hop}");
    let paths: Vec<(usize, usize, String)> = (0..CHAINS)
        .flat_map(|c| (0..=HOPS).map(move |h| (c, h)))
        .map(|(c, h)| (c, h, path(c, h)))
        .collect();
    let routes = paths
        .iter()
        .map(|(chain, hop, path)| {
            let reply = match (*hop == HOPS, *chain == CHAINS - 1) {
                (true, true) => Reply::new(404),
                (true, false) => Reply::new(200),
                (false, _) => (0..PADS).fold(
                    Reply::new(302).header("Location", &format!("/chain{chain}/hop{}", hop + 1)),
                    |reply, h| reply.header(&format!("X-Pad-{h}"), &pad),
                ),
            };
            (path.as_str(), vec![reply])
        })
        .collect();
    let server = Server::routes(routes);
    let urls: Vec<String> = (0..CHAINS).map(|c| server.url(&path(c, 0))).collect();
    let out = retry()
        .args(["-n", "3", "-d", "0", "--hints", "--"])
        .args(["curl", "-sS", "-f", "-L", "-D", "{hints}"])
        .args(&urls)
        .run();
    assert_eq!(out.code(), Some(22), "{}", stderr(&out));
    assert_eq!(
        server.requests(),
        CHAINS * (HOPS + 1),
        "one attempt: {}",
        stderr(&out)
    );
    assert!(
        stderr(&out).contains("HTTP status 404 is fatal"),
        "{}",
        stderr(&out)
    );
}

/// A `Retry-After` of more seconds than u64 holds is as long a wait as any, and is capped at
/// --retry-after-max as `86400` is; it is not dropped for a retry at once.
#[test]
fn a_retry_after_past_u64_is_capped_by_retry_after_max() {
    let server = Server::start(vec![
        Reply::new(503).header("Retry-After", "99999999999999999999"),
        Reply::new(200),
    ]);
    let out = curl(
        &["-d", "0", "--retry-after-max", "300ms"],
        &["-f"],
        &server.url("/"),
    );
    assert_eq!(out.code(), Some(0), "{}", stderr(&out));
    let log = stderr(&out);
    assert!(log.contains("capped by --retry-after-max"), "{log}");
    // The cap less up to a tenth, so that clients told the same do not return together.
    let stated: u64 = log
        .split_once("retrying in ")
        .and_then(|(_, rest)| rest.split_once("ms"))
        .and_then(|(ms, _)| ms.parse().ok())
        .unwrap_or_else(|| panic!("a delay in ms: {log}"));
    assert!((270..=300).contains(&stated), "{stated}: {log}");
    assert!(gap(&server, 1) >= Duration::from_millis(270), "{log}");
}

#[test]
fn output_rules_match_a_line_written_slowly_in_pieces() {
    let body = "<html>\nTemporarily Unavailable, try later\n</html>\n";
    let server = Server::start(vec![
        Reply::new(200)
            .body(body)
            .in_pieces(5, Duration::from_millis(20)),
        Reply::new(200).body("fine\n"),
    ]);
    let out = retry()
        .args([
            "-d",
            "0",
            "--retry-if-output",
            "^Temporarily Unavailable",
            "--",
        ])
        .args(["curl", "-sS"])
        .arg(server.url("/"))
        .run();
    assert_eq!(out.code(), Some(0), "{}", stderr(&out));
    assert_eq!(server.requests(), 2);
    // The output still reached stdout, unchanged, from both attempts.
    assert_eq!(out.stdout(), format!("{body}fine\n"));
}

#[test]
fn the_commands_output_arrives_byte_exact_through_output_rules() {
    let body: Vec<u8> = (0..200_000u32).map(|i| (i * 31 % 256) as u8).collect();
    let server = Server::start(vec![Reply::new(200).body(body.clone())]);
    let out = retry()
        .args([
            "--fatal-if-output",
            "never matches this",
            "--",
            "curl",
            "-sS",
        ])
        .arg(server.url("/"))
        .run();
    out.assert().code(0);
    assert!(out.stdout == body, "stdout has {} bytes", out.stdout.len());
}

#[test]
fn a_fatal_output_rule_stops_a_retryable_http_status() {
    let server = Server::start(vec![Reply::new(503).body("account suspended\n")]);
    let out = retry()
        .args(["-d", "0", "--fatal-if-output", "suspended", "--hints", "--"])
        .args(["curl", "-sS", "-D", "{hints}"])
        .arg(server.url("/"))
        .run();
    assert_eq!(server.requests(), 1);
    assert_eq!(out.code(), Some(22), "{}", stderr(&out));
}

#[test]
fn a_hints_placeholder_turns_hints_on_without_the_flag() {
    let server = Server::start(vec![Reply::new(503), Reply::new(200)]);
    let dir = tempfile::TempDir::new().expect("temp dir");
    let out = retry()
        .current_dir(dir.path())
        .args([
            "-d",
            "0",
            "--",
            "curl",
            "-sS",
            "-o",
            "/dev/null",
            "-D",
            "{hints}",
        ])
        .arg(server.url("/"))
        .run();
    assert_eq!(server.requests(), 2, "the 503 is retried: {}", stderr(&out));
    assert_eq!(out.code(), Some(0), "{}", stderr(&out));
    assert!(
        !dir.path().join("{hints}").exists(),
        "no file named {{hints}} in the current folder"
    );
}

#[test]
fn the_curl_preset_retries_what_todays_curl_says_of_a_network_failure_and_not_a_malformed_url() {
    // A port that was just free: nothing listens there.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let out = retry()
        .args([
            "--preset", "curl", "-n", "2", "-d", "0", "--", "curl", "-sS",
        ])
        .arg(format!("http://127.0.0.1:{port}/"))
        .run();
    assert_eq!(out.code(), Some(7), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("attempt 2/2 failed: exit status 7"),
        "{}",
        stderr(&out)
    );
    // What today's curl says of a transfer cut short (18) and of one too slow (28): both
    // transient in the preset, each retried.
    let cut = Server::start(vec![
        Reply::new(200).header("Content-Length", "100").body("part"),
    ]);
    let slow = Server::start(vec![
        Reply::new(200)
            .body(vec![b'x'; 64])
            .in_pieces(1, Duration::from_millis(100)),
    ]);
    for (server, flags, status) in [(&cut, &[][..], 18), (&slow, &["--max-time", "0.3"], 28)] {
        let out = retry()
            .args([
                "--preset", "curl", "-n", "2", "-d", "0", "--", "curl", "-sS",
            ])
            .args(flags)
            .arg(server.url("/"))
            .run();
        assert_eq!(out.code(), Some(status), "{}", stderr(&out));
        assert_eq!(server.requests(), 2, "{}", stderr(&out));
    }
    let out = retry()
        .args([
            "--preset",
            "curl",
            "-d",
            "0",
            "--",
            "curl",
            "-sS",
            "http://[bad",
        ])
        .run();
    out.assert().code(3);
    assert!(
        stderr(&out).contains("giving up after 1 attempt"),
        "{}",
        stderr(&out)
    );
}
