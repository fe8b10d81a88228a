//! Each built-in preset, seen through what retry does with it: which failures it retries, by
//! exit status or by a line of output, and which it gives up on at once.

use crate::support;
use crate::support::Launch;
use crate::support::{PredicateBooleanExt, predicate};

/// Runs `sh -c script` under `retry --preset NAME -n 3 -d 0`; returns how many attempts ran.
fn attempts(preset: &str, script: &str) -> usize {
    let out = support::retry()
        .args(["--preset", preset, "-n", "3", "-d", "0", "--", "sh", "-c"])
        .arg(format!("echo attempt; {script}"))
        .run();
    out.stdout().lines().filter(|l| *l == "attempt").count()
}

#[test]
fn sysexits_retries_ex_tempfail_only() {
    assert_eq!(attempts("sysexits", "exit 75"), 3);
    assert_eq!(attempts("sysexits", "exit 65"), 1);
    assert_eq!(attempts("sysexits", "exit 78"), 1);
}

/// docs/http.md: the curl preset's retried statuses work as `--retry-on`: what curl does
/// not document is not retried, and what it documents as transient is.
#[test]
fn curl_retries_what_its_manual_calls_transient_and_nothing_it_does_not_document() {
    assert_eq!(attempts("curl", "exit 28"), 3);
    assert_eq!(attempts("curl", "exit 6"), 3);
    assert_eq!(attempts("curl", "exit 3"), 1);
    for undocumented in ["exit 20", "exit 101", "kill -9 $$"] {
        assert_eq!(attempts("curl", undocumented), 1, "{undocumented}");
    }
}

#[test]
fn ssh_retries_its_own_errors_but_not_a_refused_login_or_the_remote_commands_failure() {
    assert_eq!(
        attempts(
            "ssh",
            "echo 'ssh: connect to host h port 22: Connection refused' >&2; exit 255"
        ),
        3
    );
    assert_eq!(
        attempts(
            "ssh",
            "echo 'u@h: Permission denied (publickey).' >&2; exit 255"
        ),
        1
    );
    assert_eq!(attempts("ssh", "exit 1"), 1);
}

#[test]
fn git_retries_network_errors_and_lock_contention_only() {
    let lock = "echo \"fatal: Unable to create '/r/.git/index.lock': File exists.\" >&2; exit 128";
    assert_eq!(attempts("git", lock), 3);
    let dns =
        "echo \"fatal: unable to access 'https://h/r/': Could not resolve host: h\" >&2; exit 128";
    assert_eq!(attempts("git", dns), 3);
    assert_eq!(
        attempts("git", "echo 'remote: Repository not found.' >&2; exit 128"),
        1
    );
    assert_eq!(
        attempts(
            "git",
            "echo 'CONFLICT (content): Merge conflict in a' >&2; exit 1"
        ),
        1
    );
}

#[test]
fn apt_and_dpkg_retry_a_held_lock_only() {
    let lock = "echo 'E: Could not get lock /var/lib/dpkg/lock-frontend. It is held by process 7' >&2; exit 100";
    assert_eq!(attempts("apt", lock), 3);
    assert_eq!(attempts("dpkg", lock), 3);
    assert_eq!(
        attempts(
            "apt",
            "echo 'E: Unable to locate package nope' >&2; exit 100"
        ),
        1
    );
}

#[test]
fn a_preset_adds_to_the_users_own_rules() {
    // --fatal-on adds to the preset's fatal list; --retry-on replaces its retryable one.
    assert_eq!(attempts("sysexits", "exit 75"), 3);
    let out = support::run_sh(
        &[
            "--preset",
            "sysexits",
            "--fatal-on",
            "75",
            "-n",
            "3",
            "-d",
            "0",
        ],
        "exit 75",
    );
    assert!(out.stderr().contains("giving up after 1 attempt"));
    let out = support::run_sh(
        &[
            "--preset",
            "sysexits",
            "--retry-on",
            "65",
            "-n",
            "2",
            "-d",
            "0",
        ],
        "exit 65",
    );
    assert!(out.stderr().contains("giving up after 2 attempts"));
}

#[test]
fn an_unknown_preset_is_a_usage_error_naming_the_known_ones() {
    let out = support::retry()
        .args(["--preset", "nope", "--", "true"])
        .run();
    out.assert().code(125);
    let err = out.stderr();
    assert!(
        err.contains(": nope;") && err.contains("curl, sysexits, ssh, git, apt"),
        "{err}"
    );
}

#[test]
fn the_curl_preset_without_a_header_dump_says_the_http_status_is_unknown() {
    let warned = |args: &[&str]| {
        let out = support::retry().args(args).run();
        let said = out.stderr();
        (
            said.matches("--preset curl without a header dump").count(),
            said,
            out,
        )
    };
    let (n, said, out) = warned(&["--preset", "curl", "-n", "1", "--", "true"]);
    out.assert().code(0);
    assert_eq!(n, 1, "{said}");
    assert!(said.contains("-D {hints}"), "gives the fix: {said}");
    let (n, said, _) = warned(&["--preset", "curl", "-n", "1", "--", "true", "-D", "{hints}"]);
    assert_eq!(n, 0, "{said}");
    let (n, said, _) = warned(&["-n", "1", "--", "true"]);
    assert_eq!(n, 0, "{said}");
    // An HTTP list is as blind without a dump, and says so; with --hints, a script that writes
    // the dump to RETRY_HINT_FILE has one, and curl itself not without -D {hints}.
    for list in ["--retry-on-http", "--fatal-on-http"] {
        let out = support::retry()
            .args([list, "503", "-n", "1", "--", "true"])
            .run();
        let said = out.stderr();
        assert_eq!(out.code(), Some(0), "{said}");
        assert_eq!(
            said.matches(
                "an HTTP status list (--retry-on-http, --fatal-on-http) without a header dump"
            )
            .count(),
            1,
            "{said}"
        );
        let script = "curl -D \"$RETRY_HINT_FILE\" URL; true";
        let out = support::retry()
            .args([list, "503", "--hints", "-n", "1", "--", "sh", "-c", script])
            .run();
        out.assert()
            .stderr(predicate::str::contains("header dump").not());
        // Without --hints there is no file to write to.
        let out = support::retry()
            .args([list, "503", "-n", "1", "--", "sh", "-c", script])
            .run();
        out.assert().stderr(predicate::str::contains("header dump"));
        let out = support::retry()
            .args([
                list, "503", "--hints", "-n", "1", "--", "curl", "-fsS", "URL",
            ])
            .run();
        out.assert().stderr(predicate::str::contains("header dump"));
    }
    // --explain says it too, and runs nothing.
    let (_, _, out) = warned(&["--explain", "--preset", "curl", "--", "curl", "-fsS", "URL"]);
    let text = out.stdout();
    assert!(
        text.contains("--preset curl without a header dump"),
        "{text}"
    );
}

/// `retry --preset git -n 3 -d 0 -- git ARGS`, with git's own settings left out (no user or
/// system config); returns how the run ended.
fn git(args: &[&str], ssh: Option<&str>) -> support::Run {
    let home = tempfile::TempDir::new().expect("temp dir");
    let mut c = support::retry();
    c.args(["--preset", "git", "-n", "3", "-d", "0", "--", "git"])
        .args(args)
        .env("HOME", home.path())
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_TERMINAL_PROMPT", "0");
    if let Some(ssh) = ssh {
        c.env("GIT_SSH_COMMAND", ssh);
    }
    c.run()
}

/// Today's git, against servers of the test's own: over https, a 503 and a connection closed
/// without an answer are retried, a missing repository is not; over ssh, a server that closes
/// the connection at once (ssh says `kex_exchange_identification`, then git "Could not read from
/// remote repository", as it does for a missing repository) is retried.
#[test]
fn git_is_judged_by_what_todays_git_prints_over_https_and_ssh() {
    use crate::support::http::{Reply, Server};
    if !support::have("git", "apt-get install git") {
        return;
    }
    let unavailable = Server::start(vec![Reply::new(503)]);
    let out = git(&["ls-remote", &unavailable.url("/r.git")], None);
    assert_eq!(unavailable.requests(), 3, "{}", out.show());
    out.assert().code(128);

    let missing = Server::start(vec![Reply::new(404)]);
    let out = git(&["ls-remote", &missing.url("/r.git")], None);
    assert_eq!(missing.requests(), 1, "{}", out.show());
    out.assert().stderr(predicate::str::contains("not found"));

    if !support::have("ssh", "apt-get install openssh-client") {
        return;
    }
    // A listener that closes each connection before a word, as a server whose sshd is
    // overloaded (MaxStartups) or restarting does.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("listen");
    let port = listener.local_addr().expect("address").port();
    listener.set_nonblocking(true).expect("non-blocking");
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let accepted = std::thread::spawn({
        let done = done.clone();
        move || {
            let mut accepted = 0;
            while !done.load(std::sync::atomic::Ordering::SeqCst) {
                match listener.accept() {
                    // ssh's banner read, then the connection closed without one of the
                    // server's: nothing is left unread, so ssh sees it closed, not reset.
                    Ok((mut c, _)) => {
                        use std::io::Read;
                        let _ = c.set_nonblocking(false);
                        let _ = c.set_read_timeout(Some(std::time::Duration::from_secs(5)));
                        let mut banner = [0; 256];
                        let _ = c.read(&mut banner);
                        accepted += 1;
                    }
                    Err(_) => std::thread::sleep(std::time::Duration::from_millis(5)),
                }
            }
            accepted
        }
    });
    let ssh = format!(
        "ssh -o BatchMode=yes -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -p {port}"
    );
    let out = git(
        &["ls-remote", &format!("ssh://git@127.0.0.1:{port}/r.git")],
        Some(&ssh),
    );
    done.store(true, std::sync::atomic::Ordering::SeqCst);
    out.assert().stderr(predicate::str::contains(
        "kex_exchange_identification: Connection closed",
    ));
    out.assert().code(128);
    assert_eq!(accepted.join().expect("the listener"), 3, "{}", out.show());
}

/// Over git://, a missing repository is said in the daemon's words and not retried; and ssh
/// itself (the ssh preset), refused at a port nothing listens on, is retried as its own error.
#[test]
fn a_missing_repository_over_git_protocol_is_not_retried_and_a_refused_ssh_is() {
    if !support::have("git", "apt-get install git") {
        return;
    }
    let base = tempfile::TempDir::new().expect("temp dir");
    // A port that was just free, for the daemon to listen on.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let mut daemon = std::process::Command::new("git")
        .args([
            "daemon",
            "--reuseaddr",
            "--export-all",
            "--listen=127.0.0.1",
        ])
        .arg(format!("--port={port}"))
        .arg(format!("--base-path={}", base.path().display()))
        .arg(base.path())
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("git daemon starts");
    // Ready once it accepts a connection.
    let ready = support::within(support::PATIENCE, || {
        std::net::TcpStream::connect(("127.0.0.1", port)).is_ok()
    });
    let out = git(
        &["ls-remote", &format!("git://127.0.0.1:{port}/nope.git")],
        None,
    );
    let _ = daemon.kill();
    let _ = daemon.wait();
    assert!(ready, "git daemon listens");
    assert!(
        out.stderr()
            .contains("access denied or repository not exported"),
        "{}",
        out.show()
    );
    assert!(
        out.stderr().contains("giving up after 1 attempt"),
        "{}",
        out.show()
    );

    if !support::have("ssh", "apt-get install openssh-client") {
        return;
    }
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let out = support::retry()
        .args(["--preset", "ssh", "-n", "2", "-d", "0", "--", "ssh"])
        .args(["-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=no"])
        .args(["-p", &closed.to_string(), "127.0.0.1", "true"])
        .run();
    assert_eq!(out.code(), Some(255), "{}", out.show());
    assert!(
        out.stderr().contains("Connection refused"),
        "{}",
        out.show()
    );
    assert!(
        out.stderr().contains("attempt 2/2 failed: exit status 255"),
        "{}",
        out.show()
    );
}

/// A preset's output patterns tell why a failing command failed: a commit whose message says
/// "early EOF" succeeded, and is made once, not once per attempt.
#[test]
fn a_presets_output_patterns_do_not_judge_a_command_that_succeeded() {
    if !support::have("git", "apt-get install git") {
        return;
    }
    let repo = tempfile::TempDir::new().expect("temp dir");
    let dir = repo.path().to_str().expect("UTF-8 path");
    let commit = [
        "-C",
        dir,
        "-c",
        "user.name=a",
        "-c",
        "user.email=a@b",
        "commit",
        "-q",
    ];
    let init = git(&["init", "-q", dir], None);
    init.assert().code(0);
    let out = git(
        &[
            &commit[..],
            &["--allow-empty", "-m", "Fix early EOF handling"],
        ]
        .concat(),
        None,
    );
    out.assert().code(0);
    let log = git(&["-C", dir, "log", "--format=%s"], None);
    assert_eq!(log.stdout(), "Fix early EOF handling\n");
    // The same words from a git that failed are retried, as the preset says.
    let failed = support::retry()
        .args(["--preset", "git", "-n", "2", "-d", "0", "--", "sh", "-c"])
        .arg("echo attempt; echo 'fatal: early EOF' >&2; exit 128")
        .run();
    assert_eq!(failed.stdout(), "attempt\nattempt\n");
    // The user's own pattern still judges a success: that is what it is for.
    let own = support::retry()
        .args([
            "--preset",
            "git",
            "-n",
            "2",
            "-d",
            "0",
            "--retry-if-output",
            "early EOF",
        ])
        .args(["--", "echo", "early EOF"])
        .run();
    own.assert().code(1);
}

/// A Debian package of one empty file's worth, `retrylab` 1.0, built in `dir` by dpkg-deb;
/// returns its bytes and its index entry, as a flat repository's `Packages` gives it.
fn lab_package(dir: &std::path::Path) -> (Vec<u8>, String) {
    let root = dir.join("pkg");
    std::fs::create_dir_all(root.join("DEBIAN")).expect("package folder");
    std::fs::write(
        root.join("DEBIAN/control"),
        "Package: retrylab\nVersion: 1.0\nArchitecture: all\nMaintainer: lab <lab@example.com>\n\
         Description: lab\n",
    )
    .expect("control file");
    let deb = dir.join("retrylab.deb");
    let built = std::process::Command::new("dpkg-deb")
        .args(["-Zgzip", "-b"])
        .arg(&root)
        .arg(&deb)
        .output()
        .expect("run dpkg-deb");
    assert!(built.status.success(), "{built:?}");
    let bytes = std::fs::read(&deb).expect("the package");
    let sum = std::process::Command::new("sha256sum")
        .arg(&deb)
        .output()
        .expect("run sha256sum");
    let sha256 = String::from_utf8_lossy(&sum.stdout)
        .split_whitespace()
        .next()
        .expect("a sum")
        .to_string();
    let entry = format!(
        "Package: retrylab\nVersion: 1.0\nArchitecture: all\nMaintainer: lab <lab@example.com>\n\
         Filename: pkgs/retrylab_1.0_all.deb\nSize: {}\nSHA256: {sha256}\nDescription: lab\n",
        bytes.len()
    );
    (bytes, entry)
}

/// Today's apt against a mirror of the test's own: a 503 and a mirror caught mid-sync are
/// retried until the package comes, a 404 (an index out of date) is not.
#[test]
fn apt_retries_a_mirror_that_answers_503_or_is_mid_sync_but_not_a_404() {
    use crate::support::http::{Reply, Server};
    if !support::have("apt-get", "a Debian or Ubuntu machine")
        || !support::have("dpkg-deb", "apt-get install dpkg")
    {
        return;
    }
    let dir = tempfile::TempDir::new().expect("temp dir");
    let (deb, entry) = lab_package(dir.path());
    let cases: [(&str, Vec<Reply>, i32, usize); 3] = [
        (
            "503",
            vec![Reply::new(503), Reply::new(200).body(deb.clone())],
            0,
            2,
        ),
        (
            "a mirror mid-sync",
            vec![
                Reply::new(200).body(vec![b'x'; 999]),
                Reply::new(200).body(deb.clone()),
            ],
            0,
            2,
        ),
        ("404", vec![Reply::new(404)], 100, 1),
    ];
    for (case, replies, code, attempts) in cases {
        let work = tempfile::TempDir::new().expect("temp dir");
        let server = Server::routes(vec![
            ("/./Packages", vec![Reply::new(200).body(entry.clone())]),
            ("/pkgs/retrylab_1.0_all.deb", replies),
        ]);
        let sources = work.path().join("sources.list");
        std::fs::write(
            &sources,
            format!("deb [trusted=yes] {} ./\n", server.url("/")),
        )
        .expect("sources.list");
        for d in ["lists/partial", "cache/archives/partial"] {
            std::fs::create_dir_all(work.path().join(d)).expect("apt folders");
        }
        let set = |name: &str, value: &std::path::Path| format!("{name}={}", value.display());
        let apt: Vec<String> = vec![
            "apt-get".into(),
            "-q".into(),
            "-o".into(),
            set("Dir::Etc::SourceList", &sources),
            "-o".into(),
            "Dir::Etc::SourceParts=/dev/null".into(),
            "-o".into(),
            set("Dir::State::Lists", &work.path().join("lists")),
            "-o".into(),
            set("Dir::Cache", &work.path().join("cache")),
            "-o".into(),
            "Debug::NoLocking=1".into(),
            "-o".into(),
            "Acquire::Retries=0".into(),
            "-o".into(),
            "APT::Sandbox::User=root".into(),
        ];
        let update = std::process::Command::new(&apt[0])
            .args(&apt[1..])
            .arg("update")
            .output()
            .expect("run apt-get update");
        assert!(update.status.success(), "{case}: {update:?}");
        let out = support::retry()
            .current_dir(work.path())
            .args(["--preset", "apt", "-n", "3", "-d", "0", "--"])
            .args(&apt)
            .args(["download", "retrylab"])
            .run();
        assert_eq!(out.code(), Some(code), "{case}: {}", out.show());
        let asked = server
            .request_paths()
            .iter()
            .filter(|p| p.ends_with(".deb"))
            .count();
        assert_eq!(asked, attempts, "{case}: {}", out.show());
        let downloaded = work.path().join("retrylab_1.0_all.deb").exists();
        assert_eq!(downloaded, code == 0, "{case}: {}", out.show());
    }
}
