//! Reaching the store: the password never shown, the URL from the environment or a profile, bad
//! store settings, and TLS (`rediss://`, with the `tls` feature).

use super::*;
use crate::support::{PredicateBooleanExt, predicate};

#[test]
fn no_output_ever_shows_the_password() {
    let Some(server) = Server::start() else {
        return;
    };
    let s = Setup::redis(&server);
    let dir = s.dir.path();
    let files = ["summary.json", "metrics.prom", "log.json"].map(|f| dir.join(f));
    let [summary, metrics, log] = files.clone().map(|p| p.display().to_string());
    let mut outputs = Vec::new();
    let reports = ["--summary", &summary, "--metrics", &metrics];
    for args in [
        with(&breaker("1h"), &["-n", "4", "-vv"]),
        with(
            &breaker("1h"),
            &["-n", "2", "--log-format", "json", "--log-file", &log],
        ),
        with(&breaker("1h"), &reports),
        with(&breaker("1h"), &["--explain"]),
        vec!["--key", "api", "--reset-state"],
    ] {
        outputs.push(s.run(&args, 1));
    }
    // The password from REDISCLI_AUTH, with a store that is down, a bad URL, and a bad port.
    let s = Setup::file();
    let down = format!("redis://retry@127.0.0.1:{}", free_port());
    for (url, args) in [
        (down.as_str(), vec!["--explain"]),
        (down.as_str(), vec!["-n", "2", "-d", "1ms", "-v"]),
        (down.as_str(), vec!["--reset-state"]),
    ] {
        let mut c = s.retry(&["--key", "api", "--state", url]);
        c.env("REDISCLI_AUTH", PASSWORD)
            .args(args)
            .args(["--", "false"]);
        outputs.push(output(c));
    }
    for bad in [
        format!("redis://retry:{PASSWORD}@127.0.0.1:99999"),
        format!("http://retry:{PASSWORD}@example.com"),
        format!("redis://retry:{PASSWORD}@h/x"),
    ] {
        let out = s.run(&["--key", "api", "--state", &bad], 0);
        assert_eq!(out.status.code(), Some(125), "{bad}");
        out.assert().stderr(predicate::str::contains("retry:***@"));
        outputs.push(out);
    }
    for out in &outputs {
        assert!(!said(out).contains(PASSWORD), "{}", said(out));
    }
    for file in files {
        let mut text = String::new();
        fs::File::open(&file)
            .and_then(|mut f| f.read_to_string(&mut text))
            .expect("report written");
        assert!(!text.contains(PASSWORD), "{}: {text}", file.display());
    }
    // The explain shows the store, redacted, and the key's state.
    let explain = said(&outputs[3]);
    assert!(
        explain.contains(&format!(
            "store            redis://retry:***@127.0.0.1:{}/0",
            server.port
        )),
        "{explain}"
    );
    assert!(explain.contains("breaker now      open"), "{explain}");
}

#[test]
fn the_url_can_come_from_the_environment_or_a_profile() {
    let Some(server) = Server::start() else {
        return;
    };
    let s = Setup::file();
    let flags = with(&breaker("1h"), &["-n", "3"]);
    let mut c = s.retry(&flags);
    c.env(
        "RETRY_STATE_URL",
        format!("redis://retry@127.0.0.1:{}", server.port),
    )
    .env("REDISCLI_AUTH", PASSWORD)
    .arg("--")
    .args(s.command(1));
    let out = output(c);
    out.assert().code(1);
    out.assert()
        .stderr(predicate::str::contains("warning").not());
    assert!(!s.file_of("api").exists(), "the state is in Redis");
    let state: String = server.query(cmd("HGET").arg("retry:api").arg("s"));
    assert_eq!(state, "open");
    let config = s.dir.path().join("config.toml");
    fs::write(
        &config,
        format!(
            "[profiles.fleet]\nkey = \"db\"\nstate = \"{}\"\nstate-timeout = \"2s\"\nbreaker-failures = 1\nattempts = 1\n",
            server.url()
        ),
    )
    .expect("config");
    let config_s = config.display().to_string();
    let profile = ["--config", config_s.as_str(), "-p", "fleet"];
    s.run(&profile, 1).assert().code(1);
    s.run(&profile, 0).assert().code(75);
    let exists: bool = server.query(cmd("EXISTS").arg("retry:db"));
    assert!(exists);
}

#[test]
fn bad_store_settings_are_usage_errors_naming_the_value() {
    let s = Setup::file();
    let mut cases = vec![
        (
            vec!["--state", "http://x"],
            "'http://' is not a Redis URL scheme",
        ),
        (vec!["--state", "redis://h:99999"], "'99999' is not a port"),
        (
            vec!["--state", "redis://h", "--state-timeout", "0"],
            "for --state-timeout: 0;",
        ),
        (vec!["--state-fail", "ajar"], "ajar"),
    ];
    if !cfg!(feature = "tls") {
        cases.push((vec!["--state", "rediss://h"], "built without TLS"));
    }
    for (args, word) in cases {
        let out = s.run(&with(&["--key", "api"], &args), 0);
        assert_eq!(out.status.code(), Some(125), "{args:?}");
        assert!(stderr(&out).contains(word), "{args:?}: {}", stderr(&out));
    }
    let mut c = s.retry(&["--key", "api"]);
    c.env("RETRY_STATE_URL", "redis://h:0")
        .arg("--")
        .args(s.command(0));
    let out = output(c);
    out.assert().code(125);
    out.assert().stderr(predicate::str::contains(
        "for $RETRY_STATE_URL: redis://h:0;",
    ));
    assert_eq!(s.ran(), 0);
}

#[test]
fn a_store_without_a_key_is_one_warning_and_the_run_goes_on() {
    let s = Setup::file();
    let url = format!("redis://127.0.0.1:{}", free_port());
    let out = s.run(&["--state", &url, "-n", "2", "-d", "1ms"], 3);
    out.assert().code(3);
    assert_eq!(s.ran(), 2);
    let log = stderr(&out);
    assert_eq!(log.matches("warning").count(), 1, "{log}");
    assert!(
        log.contains("retry: warning: --state is not used without --key: the state is per key; give --key NAME"),
        "{log}"
    );
    // --explain says so too.
    let out = s.run(&["--state", &url, "--explain"], 0);
    assert!(
        said(&out).contains("the state is per key"),
        "{}",
        said(&out)
    );
    // $RETRY_STATE_URL, set for a whole host, is read only with a key: nothing to say.
    let mut c = s.retry(&["-n", "1"]);
    c.env("RETRY_STATE_URL", &url).arg("--").args(s.command(0));
    let out = output(c);
    out.assert().code(0);
    out.assert()
        .stderr(predicate::str::contains("warning").not());
}

/// Every piece of three characters or more of `secret`.
fn pieces(secret: &str) -> Vec<String> {
    let chars: Vec<char> = secret.chars().collect();
    let mut out = Vec::new();
    for len in 3..=chars.len() {
        for w in chars.windows(len) {
            out.push(w.iter().collect());
        }
    }
    out
}

#[test]
fn no_piece_of_a_password_shows_in_the_usage_error_of_a_bad_url() {
    let s = Setup::file();
    // Passwords as generated secrets hold them: base64 with '/', '+' and '=', and '@', ':',
    // '?', '#' and a %-escape written as they are.
    for password in [
        "Pw0rd/Kx+7=",
        "Zq9+Vb/Lm==",
        "Hj4@Tn8:Wc",
        "Rf5%2FYu6",
        "Xk3?Bd7#Ne",
        "Qs2:Gw/8@Lp",
    ] {
        let mut urls = vec![
            format!("redis://cron:{password}@cache:99999"),
            format!("redis://cron:{password}@cache/x"),
            format!("redis://cron:{password}@cache:6379/0?db=1"),
            format!("redis://:{password}@[::1/0"),
            format!("redis://:{password}@ca che/0"),
            format!("rediss:/cron:{password}@cache"),
            format!("http://cron:{password}@cache"),
            format!("cron:{password}@cache"),
            format!("redis+unix://cron:{password}@cache/sock"),
            format!("redis+unix://cron:{password}@/sock?x=1"),
        ];
        // Written without %-escapes, a '/', '?' or '#' ends the authority early.
        if password.contains(['/', '?', '#']) {
            urls.push(format!("redis://cron:{password}@cache/0"));
            // Pasted where the user goes: what stands before its first ':' would be one.
            if !password.contains(':') {
                urls.push(format!("redis://{password}:cron@cache"));
            }
            urls.push(format!("redis+unix://:{password}@/run/redis.sock"));
        }
        let decoded = password.replace("%2F", "/");
        for url in urls {
            let out = s.run(&["--key", "api", "--state", &url], 0);
            assert_eq!(out.status.code(), Some(125), "{url}: {}", said(&out));
            let said = said(&out);
            assert!(said.contains("not a store URL"), "{url}: {said}");
            for piece in pieces(password).iter().chain(&pieces(&decoded)) {
                assert!(!said.contains(piece.as_str()), "{url}: {piece:?} in {said}");
            }
        }
    }
    assert_eq!(s.ran(), 0);
}

/// A CA and a certificate for localhost and 127.0.0.1 signed by it, made with openssl(1).
#[cfg(feature = "tls")]
fn certificates(dir: &std::path::Path) {
    let openssl = |args: &[&str]| {
        let status = std::process::Command::new("openssl")
            .args(args)
            .current_dir(dir)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .expect("openssl runs");
        assert!(status.success(), "openssl {args:?}");
    };
    openssl(
        &[
            "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key",
        ]
        .iter()
        .chain(&["-out", "ca.crt", "-days", "2", "-subj", "/CN=retry-test-ca"])
        .copied()
        .collect::<Vec<_>>(),
    );
    openssl(
        &[
            "req",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-keyout",
            "server.key",
            "-out",
        ]
        .iter()
        .chain(&["server.csr", "-subj", "/CN=localhost"])
        .copied()
        .collect::<Vec<_>>(),
    );
    fs::write(
        dir.join("ext"),
        "subjectAltName=DNS:localhost,IP:127.0.0.1\n",
    )
    .expect("ext");
    openssl(
        &[
            "x509",
            "-req",
            "-in",
            "server.csr",
            "-CA",
            "ca.crt",
            "-CAkey",
            "ca.key",
        ]
        .iter()
        .chain(&[
            "-CAcreateserial",
            "-out",
            "server.crt",
            "-days",
            "2",
            "-extfile",
            "ext",
        ])
        .copied()
        .collect::<Vec<_>>(),
    );
}

#[cfg(feature = "tls")]
#[test]
fn rediss_verifies_the_server_against_the_hosts_certificates() {
    if !support::have("openssl", "apt-get install openssl") {
        return;
    }
    let certs = tempfile::tempdir().expect("temporary directory");
    certificates(certs.path());
    let Some(server) = Server::start_tls(certs.path()) else {
        return;
    };
    for host in ["localhost", "127.0.0.1"] {
        let s = Setup::file();
        let url = format!("rediss://retry:{PASSWORD}@{host}:{}", server.port);
        // Not the default 500 ms: a debug build's handshake (ring unoptimised) on a starved
        // machine took longer, and a trusted server then looked like one that did not answer.
        let flags = [
            "--key",
            "api",
            "--state",
            url.as_str(),
            "--state-timeout",
            "30s",
            "-n",
            "1",
        ];
        let mut c = s.retry(&flags);
        c.env("SSL_CERT_FILE", certs.path().join("ca.crt"))
            .arg("--")
            .args(s.command(1));
        let out = output(c);
        out.assert().code(1);
        assert!(
            !stderr(&out).contains("warning"),
            "{host}: {}",
            stderr(&out)
        );
        assert!(
            !s.file_of("api").exists(),
            "the failure was counted in Redis"
        );
        // Without the CA, the server is not trusted: a warning, and the local state.
        let mut c = s.retry(&flags);
        c.env("SSL_CERT_FILE", "/nonexistent")
            .arg("--")
            .args(s.command(1));
        let out = output(c);
        out.assert().code(1);
        out.assert()
            .stderr(predicate::str::contains("warning: key 'api'"));
        assert!(s.file_of("api").exists());
    }
}
