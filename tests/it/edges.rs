//! Untrusted text and secrets at the edges (issue #34): nothing a command, a server or another
//! user writes can forge a line of retry's, leak a secret, hang retry or lose the end of a run.

use std::ffi::OsStr;
use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::process::{Command, Stdio};

use crate::support::redis::{Server, cmd};
use crate::support::{Launch, dev_full, retry, retry_in_sh, wait};

/// Whether `text` holds anything that could end, hide or reorder a line: a control character
/// other than the newline that ends each line, a C1 control, a line or paragraph separator, a
/// bidirectional control, or bytes that are not UTF-8.
fn hostile(text: &[u8]) -> Option<String> {
    let Ok(text) = std::str::from_utf8(text) else {
        return Some("invalid UTF-8".into());
    };
    text.chars()
        .find(|&c| {
            (c.is_control() && c != '\n')
                || matches!(c, '\u{2028}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
        })
        .map(|c| format!("{:?}", c))
}

/// Arguments an attacker would pass: a forged log line, terminal escapes, a carriage return,
/// Unicode separators and overrides, a workflow command.
const HOSTILE: [&str; 6] = [
    "v1.2\n2026-11-26T14:32:23.123+00:00 retry: attempt 1/1 succeeded in 2.1s; command: ./deploy.sh v1.3",
    "\x1b[2K\x1b[1A",
    "\x1b]0;owned\x07",
    "shown\rhidden",
    "a\u{2028}b\u{202e}c\u{2066}",
    "\n::error::forged",
];

#[test]
fn a_forged_line_in_an_argument_stays_inside_the_give_up_line_of_the_log_file() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("job.log");
    let mut c = retry();
    c.args(["-n1", "--log-file"])
        .arg(&log)
        .args(["--", "sh", "-c", "exit 1", HOSTILE[0]]);
    let out = c.run();
    out.assert().code(1);
    let text = fs::read_to_string(&log).unwrap();
    assert_eq!(text.lines().count(), 2, "{text}");
    assert!(
        text.lines()
            .all(|l| !l.contains("succeeded") || l.contains("giving up"))
    );
    assert!(
        text.contains(r"$'v1.2\n2026-11-26T14:32:23.123+00:00 retry: attempt 1/1 succeeded"),
        "{text}"
    );
}

#[test]
fn no_argument_name_or_program_can_write_a_control_character_or_begin_a_line() {
    for value in HOSTILE {
        for (args, program) in [
            (vec!["-n1", "--name", value], "false"),
            (vec!["-n1", "-v"], "false"),
            (vec!["-n1"], value),
        ] {
            let mut c = retry();
            c.args(&args).arg("--").arg(program);
            if program == "false" {
                c.arg(value);
            }
            let out = c.run();
            assert!(!out.status.success());
            let err = String::from_utf8_lossy(&out.stderr);
            assert_eq!(hostile(&out.stderr), None, "{value:?}: {err}");
            // Each line is retry's, after the time -v stamps it with.
            assert!(
                err.lines().all(|l| l.starts_with("retry: ")
                    || l.split_once(' ')
                        .is_some_and(|(_, l)| l.starts_with("retry: "))),
                "{value:?}: {err}"
            );
        }
    }
}

#[test]
fn explain_shows_every_value_from_outside_escaped() {
    for value in HOSTILE {
        let mut c = retry();
        c.args([
            "--explain",
            "--name",
            value,
            "--summary",
            value,
            "--log-file",
            value,
        ])
        .args(["--on-retry", value, "--", "true", value]);
        let out = c.run();
        out.assert().code(0);
        let text = String::from_utf8_lossy(&out.stdout);
        assert_eq!(hostile(&out.stdout), None, "{value:?}: {text}");
        assert!(!text.lines().any(|l| l.starts_with("::")), "{text}");
    }
}

#[test]
fn an_argument_that_is_not_utf8_is_shown_byte_by_byte_not_as_a_replacement() {
    let mut c = retry();
    c.args(["-n1", "--", "false"])
        .arg(OsStr::from_bytes(b"caf\xe9"));
    let out = c.run();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains(r"command: false $'caf\351'"), "{err}");
    assert!(!err.contains('\u{fffd}'), "{err}");
}

#[test]
fn a_name_that_is_not_utf8_is_a_usage_error_naming_the_option_and_the_value() {
    for args in [
        vec![OsStr::new("--name"), OsStr::from_bytes(b"\xff")],
        vec![OsStr::from_bytes(b"--name=\xff")],
    ] {
        let mut c = retry();
        c.args(&args).args(["--", "true"]);
        let out = c.run();
        out.assert().code(125);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.starts_with(r"retry: error: --name needs UTF-8: $'\377'"),
            "{err}"
        );
    }
}

/// A variable retry reads as text that is not UTF-8 is a usage error naming it, its value shown
/// escaped (a password not at all), and nothing runs: dropped, it would leave the run out of
/// its fleet's store, or without its config file, without a word.
#[test]
fn a_variable_read_as_text_that_is_not_utf8_is_a_usage_error_naming_it() {
    let dir = tempfile::TempDir::new().expect("temp dir");
    let marker = dir.path().join("ran");
    let keyed = ["--key", "k"];
    let cases: [(&str, &[u8], &[&str], &str); 3] = [
        (
            "RETRY_STATE_URL",
            b"redis://\xffhost:6379/",
            &keyed,
            "retry: error: $RETRY_STATE_URL needs UTF-8: $'redis://\\377host:6379/'; set it in \
             UTF-8 (percent-encode other bytes), or unset it\n",
        ),
        (
            "RETRY_CONFIG",
            b"/etc/retry\xff\n.toml",
            &[],
            "retry: error: $RETRY_CONFIG needs UTF-8: $'/etc/retry\\377\\n.toml'; set it in UTF-8, \
             or name the file with --config\n",
        ),
        (
            "REDISCLI_AUTH",
            b"hunter2\xff",
            &["--key", "k", "--state", "redis://127.0.0.1:1/"],
            "retry: error: $REDISCLI_AUTH needs UTF-8 (its value is not shown: it is a password); \
             set it in UTF-8, or unset it\n",
        ),
    ];
    for (name, value, args, expected) in cases {
        let out = retry()
            .env("RETRY_STATE_DIR", dir.path())
            .env(name, OsStr::from_bytes(value))
            .args(args)
            .args(["--", "touch"])
            .arg(&marker)
            .run();
        assert_eq!(out.code(), Some(125), "{name}: {}", out.stderr());
        assert!(!marker.exists(), "{name}: nothing runs");
        // Compared as they are: a snapshot would read the escapes' backslashes as paths'.
        assert_eq!(out.stderr(), expected, "{name}");
    }
}

/// Every part of a URL that its error quotes: the URL, a port, a host, a host in another
/// script.
#[test]
fn a_state_url_is_shown_escaped_in_its_usage_error() {
    for url in [
        "redis://h:99999\x1b[2K\n::error::x",
        "redis://h:9\x1b[2K\n::error::x",
        "redis://ca\x1b[2K\n::error::che/0",
        "redis://bü\u{202e}%25che/0",
        "redis-cluster://a,b\x1b[2K:1",
    ] {
        let mut from_env = retry();
        from_env
            .env("RETRY_STATE_URL", url)
            .args(["--key", "k", "--", "true"]);
        let mut from_flag = retry();
        from_flag.args(["--key", "k", "--state", url, "--", "true"]);
        for mut c in [from_env, from_flag] {
            let out = c.run();
            let said = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(125), "{url:?}: {said}");
            assert!(said.contains("not a store URL"), "{url:?}: {said}");
            assert_eq!(hostile(&out.stderr), None, "{url:?}: {said}");
            assert!(
                !said.lines().any(|l| l.starts_with("::error::")),
                "{url:?}: {said}"
            );
        }
    }
}

/// `--list-keys` lists names it did not check: a file planted in the state folder (its name
/// decoded from `%XX`), a key any client of a shared Redis wrote.
#[test]
fn list_keys_shows_hostile_key_names_escaped_from_a_state_folder_and_from_redis() {
    const KEY: &str = "evil\n  forged  closed  0  10.0  -\x1b[2K\x1b]0;t\x07";
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let list = |place: &[String]| {
        let mut c = retry();
        c.args(place).arg("--list-keys");
        let out = c.run();
        out.assert().code(0);
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        assert_eq!(hostile(&out.stdout), None, "{text}");
        // The heading, the column names, one row.
        assert_eq!(text.lines().count(), 3, "{text}");
        assert!(text.contains(r"$'evil\n  forged"), "{text}");
    };
    let place = vec!["--state-dir".to_string(), state.display().to_string()];
    let mut c = retry();
    c.args(&place).args(["--key", "k", "-n1", "--", "false"]);
    assert_eq!(c.run().status.code(), Some(1));
    let planted: String = KEY
        .bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect();
    fs::rename(state.join("k.json"), state.join(format!("{planted}.json"))).unwrap();
    list(&place);
    let Some(server) = Server::start() else {
        return;
    };
    let place = vec!["--state".to_string(), server.url()];
    let mut c = retry();
    c.args(&place).args(["--key", "k", "-n1", "--", "false"]);
    assert_eq!(c.run().status.code(), Some(1));
    let _: () = server.query(cmd("RENAME").arg("retry:k").arg(format!("retry:{KEY}")));
    list(&place);
}

#[test]
fn no_part_of_a_password_is_in_the_error_that_rejects_a_store_url() {
    for url in [
        "redis-sentinel://:pa/ss@h1,h2/0?sentinelMasterId=m&sentinelPassword=Yw5nTz3R",
        "redis-sentinel://h1,h2/0?sentinelMasterId=m&sentinelPassword=Yw5n&Tz3R",
        "redis-sentinel://h1:99999/0?sentinelMasterId=m&sentinelPassword=Yw5nTz3R",
        "redis-sentinel://u:Zq9xW7kP@h1,,h2/0?sentinelMasterId=m&sentinelPassword=Yw5nTz3R",
        "redis://u:Zq9x/W7kP@h/0",
        "redis://u:Zq9xW7kP@h:0",
        "redis+cluster://u:Zq9xW7kP@n1/3",
    ] {
        for how in ["flag", "env"] {
            let mut c = retry();
            if how == "flag" {
                c.args(["--state", url]);
            } else {
                c.env("RETRY_STATE_URL", url);
            }
            c.args(["--key", "k", "--", "true"]);
            let out = c.run();
            assert_eq!(out.status.code(), Some(125), "{url}");
            let err = String::from_utf8_lossy(&out.stderr);
            for part in [
                "Zq9", "q9x", "xW7", "W7k", "7kP", "Yw5", "w5n", "Tz3", "z3R",
            ] {
                assert!(!err.contains(part), "{url}: {err}");
            }
        }
    }
}

#[test]
fn the_hint_folder_is_private_whatever_the_umask() {
    for umask in ["000", "022"] {
        let out = retry_in_sh(&format!(
            "umask {umask}; exec \"$0\" --hints -n1 -- sh -c 'stat -c %a \"${{RETRY_HINT_FILE%/*}}\"'"
        ));
        out.assert().code(0);
        assert_eq!(
            String::from_utf8_lossy(&out.stdout).trim(),
            "700",
            "umask {umask}"
        );
    }
}

#[test]
fn a_fifo_or_a_link_as_the_hint_file_is_ignored_with_a_warning_and_never_hangs() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("root-owned");
    fs::write(&target, "keep\n").unwrap();
    for plant in [
        "mkfifo \"$RETRY_HINT_FILE\"".to_string(),
        format!("ln -s '{}' \"$RETRY_HINT_FILE\"", target.display()),
    ] {
        let mut c = retry();
        c.args(["--hints", "-n2", "-d", "10ms", "--max-time", "20s", "--"])
            .args(["sh", "-c", &format!("{plant}; exit 22")]);
        // A retry blocked in open() is killed by the wait, and the test fails.
        let (mut child, _out, err) = c.start();
        assert_eq!(wait(&mut child).code(), Some(22));
        let err = err.rest().join("\n");
        assert_eq!(err.matches("is ignored").count(), 2, "{err}");
        assert_eq!(fs::read_to_string(&target).unwrap(), "keep\n");
    }
}

#[test]
fn hints_without_a_usable_tmpdir_warn_and_run_the_command() {
    let mut c = retry();
    c.env("TMPDIR", "/nonexistent/retry-tests")
        .args(["--hints", "-n1", "--", "sh", "-c", "echo ran"]);
    let out = c.run();
    out.assert().code(0);
    assert_eq!(String::from_utf8_lossy(&out.stdout), "ran\n");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(
            "warning: --hints: cannot make a private folder in '/nonexistent/retry-tests'"
        ) && err.contains("going on without hints"),
        "{err}"
    );
}

#[test]
fn output_that_cannot_be_held_passes_through_and_the_end_of_the_run_is_never_lost() {
    // More than is held in memory, with no TMPDIR for the rest.
    let mut c = retry();
    c.env("TMPDIR", "/nonexistent/retry-tests").args([
        "--output-on-failure",
        "-n2",
        "-d",
        "0",
        "--",
        "sh",
        "-c",
        "head -c 1500000 /dev/zero; echo \"last error of $RETRY_ATTEMPT\" >&2; exit 1",
    ]);
    let out = c.run();
    out.assert().code(1);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("cannot hold more output"), "{err}");
    for line in [
        "last error of 1",
        "retry: attempt 1/2 failed",
        "--- output of attempt 2/2 ---",
        "last error of 2",
        "retry: giving up after 2 attempts",
    ] {
        assert!(err.contains(line), "{line}: {err}");
    }
    assert_eq!(out.stdout.len(), 3_000_000);
}

#[test]
fn held_output_is_bounded_and_the_printout_says_how_many_attempts_were_left_out() {
    let mut c = retry();
    c.args([
        "--output-on-failure",
        "-n24",
        "-d",
        "0",
        "--",
        "sh",
        "-c",
        "head -c 1048576 /dev/zero; echo \"end of $RETRY_ATTEMPT\" >&2; exit 1",
    ]);
    let out = c.run();
    out.assert().code(1);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.stdout.len() <= 16 << 20, "{}", out.stdout.len());
    assert!(out.stdout.len() >= 7 << 20, "{}", out.stdout.len());
    assert!(
        err.starts_with("retry: --output-on-failure: the earliest ")
            && err
                .lines()
                .next()
                .unwrap()
                .contains("bytes of output are left out (all of attempts 1-"),
        "{err}"
    );
    assert!(!err.contains("end of 1\n"), "{err}");
    assert!(err.contains("end of 24\n"), "{err}");
    assert!(
        err.trim_end()
            .lines()
            .last()
            .unwrap()
            .starts_with("retry: giving up after 24 attempts"),
        "{err}"
    );
}

#[test]
fn the_printout_ends_with_the_give_up_line_also_when_the_log_goes_to_a_file() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("job.log");
    let mut c = retry();
    c.args(["--output-on-failure", "-n2", "-d", "0", "--log-file"])
        .arg(&log)
        .args(["--", "sh", "-c", "echo oops >&2; exit 3"]);
    let out = c.run();
    out.assert().code(3);
    let err = String::from_utf8_lossy(&out.stderr);
    let last = err
        .trim_end()
        .lines()
        .last()
        .unwrap_or_default()
        .to_string();
    assert!(
        last.starts_with("retry: giving up after 2 attempts"),
        "{err}"
    );
    assert!(fs::read_to_string(&log).unwrap().contains("giving up"));
    // A run that succeeds prints nothing.
    let mut c = retry();
    c.args(["--output-on-failure", "--log-file"])
        .arg(&log)
        .args(["--", "true"]);
    let out = c.run();
    assert_eq!((out.stdout.len(), out.stderr.len()), (0, 0));
}

#[test]
fn a_summary_to_dev_stderr_is_written_into_a_pipe_and_appended_to_a_redirected_file() {
    // Into a pipe.
    let mut c = retry();
    c.args([
        "--summary",
        "/dev/stderr",
        "--metrics",
        "/dev/stdout",
        "-qq",
    ])
    .args(["--", "true"]);
    let out = c.run();
    out.assert().code(0);
    let err = String::from_utf8_lossy(&out.stderr);
    let summary: serde_json::Value = serde_json::from_str(err.trim()).expect("the summary");
    assert_eq!(summary["attempt_count"], 1, "{err}");
    assert!(String::from_utf8_lossy(&out.stdout).contains("retry_"));
    // Appended to a file opened for appending, which keeps what it held.
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("cron.log");
    fs::write(&log, "yesterday\n").unwrap();
    let out = retry_in_sh(&format!(
        "\"$0\" --summary /dev/stderr -qq -- true 2>> '{}'",
        log.display()
    ));
    out.assert().code(0);
    let text = fs::read_to_string(&log).unwrap();
    assert!(text.starts_with("yesterday\n{"), "{text}");
    // A regular file named as it is, is still replaced.
    let file = dir.path().join("summary.json");
    fs::write(&file, "old").unwrap();
    let mut c = retry();
    c.arg("--summary").arg(&file).args(["--", "true"]);
    assert_eq!(c.run().status.code(), Some(0));
    assert!(fs::read_to_string(&file).unwrap().starts_with('{'));
}

#[test]
fn a_breaker_saved_in_another_boot_under_a_clock_a_day_ahead_stays_open_no_longer_than_its_max() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    fs::create_dir(&state).unwrap();
    fs::set_permissions(&state, fs::Permissions::from_mode(0o700)).unwrap();
    let now_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64;
    let boot = 900_000_000u64;
    let saved = serde_json::json!({
        "version": 1,
        "boot_id": "00000000-0000-0000-0000-000000000000",
        "boot_ms": boot,
        "wall_ms": now_ms + 86_400_000,
        "state": {
            "generation": 1,
            "breaker": {"state": "open", "until": boot + 1_500, "open_for": 1_500},
            "budget": {"milli": 10_000, "at": boot}
        }
    });
    fs::write(state.join("k.json"), saved.to_string()).unwrap();
    let inner = |c: &mut Command| {
        c.arg("--state-dir")
            .arg(&state)
            .args([
                "--key",
                "k",
                "--breaker-open",
                "1s",
                "--breaker-open-max",
                "2s",
            ])
            .args(["-n1", "--", "true"]);
    };
    let mut c = retry();
    inner(&mut c);
    assert_eq!(c.run().status.code(), Some(75), "open at first");
    // An outer retry runs it again every 100ms while it is refused: it must be let through
    // well before the wall clock catches up a day.
    let started = std::time::Instant::now();
    let mut c = retry();
    c.args([
        "--retry-on",
        "75",
        "-d",
        "100ms",
        "-b",
        "constant",
        "-j",
        "none",
    ])
    .args(["--max-time", "20s", "--forever", "-qq", "--"])
    .arg(crate::support::bin());
    inner(&mut c);
    let out = c.run();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        started.elapsed().as_secs_f64() < 10.0,
        "{:?}",
        started.elapsed()
    );
}

#[test]
fn what_runs_nothing_reports_a_write_error_on_a_full_disk() {
    for args in [
        &["--help"][..],
        &["--version"],
        &["--explain", "--", "true"],
        &["--generate", "bash"],
        &["--list-keys", "--state-dir", "/nonexistent/retry-tests"],
    ] {
        let Some(full) = dev_full() else { return };
        let mut c = retry();
        let out = c
            .args(args)
            .stdin(Stdio::null())
            .stdout(full)
            .output()
            .expect("run retry");
        let err = String::from_utf8_lossy(&out.stderr);
        if args[0] == "--list-keys" && !err.contains("write error") {
            // No keys folder: an error of its own, still not 0.
            assert_eq!(out.status.code(), Some(125), "{args:?}: {err}");
            continue;
        }
        assert_eq!(out.status.code(), Some(125), "{args:?}: {err}");
        assert!(
            err.contains("retry: error: write error: No space left on device"),
            "{args:?}: {err}"
        );
    }
}
