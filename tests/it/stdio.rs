//! stdin and stdout across attempts: every attempt reads the same bytes, and `--stdout hold`
//! gives a pipeline exactly one attempt's output.

use std::fs::{self, File};
use std::io::{Seek, SeekFrom, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::thread;

use crate::support;
use crate::support::http::{Reply, Server};
use crate::support::{Launch, Run, assert_output, dev_full, predicate, retry, wait};
use snapbox::str;

/// Bytes of every value, in an order that no shift or truncation keeps intact.
fn binary(len: usize) -> Vec<u8> {
    let mut x = 0x2545_f491_u32;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            x as u8
        })
        .collect()
}

/// Runs a shell script with `$0` the retry binary and `$1` the given argument; its stdout.
fn shell(script: &str, arg: &std::ffi::OsStr) -> String {
    let out = support::hermetic(&mut std::process::Command::new("sh"))
        .arg("-c")
        .arg(script)
        .arg(support::bin())
        .arg(arg)
        .run();
    out.stdout()
}

#[test]
fn several_mib_of_binary_stdin_reach_every_attempt_byte_for_byte() {
    let dir = tempfile::tempdir().expect("temp dir");
    let data = binary(5 << 20);
    let mut command = quiet(3, "cat > \"$0/in.$RETRY_ATTEMPT\"; exit 1");
    command.arg(dir.path());
    assert_eq!(taking_all(command, &data).code(), Some(1));
    for attempt in 1..=3 {
        let got = std::fs::read(dir.path().join(format!("in.{attempt}"))).expect("attempt's copy");
        assert!(
            got == data,
            "attempt {attempt} read {} bytes, not the same",
            got.len()
        );
    }
}

/// Runs `command` with `data` on stdin, all of which it must take; its exit status.
fn taking_all(mut command: Command, data: &[u8]) -> std::process::ExitStatus {
    let mut child = command.stdin(Stdio::piped()).spawn().expect("start retry");
    let mut stdin = child.stdin.take().expect("stdin");
    let feed = data.to_vec();
    let writer = thread::spawn(move || stdin.write_all(&feed));
    let status = wait(&mut child);
    writer.join().expect("writer").expect("write stdin");
    status
}

/// `retry -n ATTEMPTS -d 0 -qq -- sh -c SCRIPT`: the command's output alone.
fn quiet(attempts: u32, script: &str) -> Command {
    let mut command = retry();
    command
        .args([
            "-n",
            &attempts.to_string(),
            "-d",
            "0",
            "-qq",
            "--",
            "sh",
            "-c",
        ])
        .arg(script);
    command
}

#[test]
fn every_attempt_that_reads_part_of_stdin_gets_the_same_first_bytes() {
    // Each attempt reads four bytes: the first is replayed, then reading goes on from the pipe.
    let out = quiet(3, "head -c 4; exit 1").run_with_stdin("abcdefgh");
    assert_eq!(out.stdout, b"abcdabcdabcd");
}

#[test]
fn a_command_that_closes_stdin_early_is_not_an_error() {
    let out = quiet(2, "head -c 10 >/dev/null; exit 1").run_with_stdin(binary(3 << 20));
    out.assert().code(1);
    assert!(out.stderr.is_empty(), "{}", out.stderr());
}

#[test]
fn a_command_that_never_reads_stdin_does_not_make_retry_hang() {
    // `yes` never ends: a retry that read all of stdin first would never start the command.
    let script = "yes | \"$0\" -n 3 -d 0 -qq -- sh -c 'exit 1'; echo \"status $?\"";
    assert_eq!(shell(script, std::ffi::OsStr::new("")), "status 1\n");
}

#[test]
fn a_regular_file_is_rewound_to_where_it_stood_for_each_attempt() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("input");
    std::fs::write(&path, "skip|the rest").expect("write input");
    let mut file = File::open(&path).expect("open input");
    file.seek(SeekFrom::Start(5)).expect("seek");
    let out = quiet(2, "cat; echo; exit 1")
        .stdin(file)
        .output()
        .expect("run retry");
    assert_eq!(out.stdout, b"the rest\nthe rest\n");
}

#[test]
fn while_read_loops_around_retry_keep_their_lines() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("lines");
    std::fs::write(&path, "one\ntwo\nthree\n").expect("write lines");
    assert_eq!(
        shell(
            "while read l; do \"$0\" -- true; echo \"got $l\"; done < \"$1\"",
            path.as_os_str()
        ),
        "got one\ngot two\ngot three\n"
    );
}

// Linux only: without tee(2) and a pipe whose size can be set (macOS, the BSDs, the portable
// build), retry cannot give an attempt stdin's bytes without taking them, and reads a page
// ahead of it (docs/child.md).
#[cfg(all(target_os = "linux", not(retry_portable)))]
#[test]
fn what_the_attempts_leave_unread_in_a_pipe_stays_for_the_next_reader() {
    assert_eq!(
        shell(
            "printf 'a\\nb\\nc\\n' | { \"$0\" -n 2 -d 0 -qq -- sh -c 'read x; echo \"child $x\"; exit 1'; cat; }",
            std::ffi::OsStr::new("")
        ),
        "child a\nchild a\nb\nc\n"
    );
}

// Linux only: without tee(2) and a pipe whose size can be set (macOS, the BSDs, the portable
// build), retry cannot give an attempt stdin's bytes without taking them, and reads a page
// ahead of it (docs/child.md).
#[cfg(all(target_os = "linux", not(retry_portable)))]
#[test]
fn while_read_loops_fed_by_a_pipe_keep_their_lines() {
    assert_eq!(
        shell(
            "printf 'one\\ntwo\\nthree\\n' | while read l; do \"$0\" -- true; echo \"got $l\"; done",
            std::ffi::OsStr::new("")
        ),
        "got one\ngot two\ngot three\n"
    );
}

#[test]
fn stdin_null_gives_the_command_nothing_and_pass_shares_one_stream() {
    let out = retry()
        .args([
            "--stdin",
            "null",
            "-n",
            "2",
            "-d",
            "0",
            "-qq",
            "--",
            "sh",
            "-c",
            "cat; exit 1",
        ])
        .run_with_stdin("data");
    assert!(out.stdout.is_empty());
    let out = retry()
        .args([
            "--stdin",
            "pass",
            "-n",
            "2",
            "-d",
            "0",
            "-qq",
            "--",
            "sh",
            "-c",
            "head -c 2; exit 1",
        ])
        .run_with_stdin("abcd");
    // No replay: the second attempt reads on where the first stopped.
    assert_eq!(out.stdout, b"abcd");
}

#[test]
fn stdout_hold_gives_a_pipeline_exactly_one_attempts_output() {
    let script = "echo \"output of attempt $RETRY_ATTEMPT\"; exit $((RETRY_ATTEMPT < 3))";
    let out = retry()
        .args([
            "--stdout", "hold", "-n", "5", "-d", "0", "--", "sh", "-c", script,
        ])
        .run();
    out.assert().code(0);
    assert_eq!(out.stdout(), "output of attempt 3\n");
    let err = out.stderr();
    assert!(
        err.contains("output of attempt 1") && err.contains("output of attempt 2"),
        "{err}"
    );
}

#[test]
fn stdout_hold_keeps_megabytes_of_output_intact_for_the_last_attempt() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("big");
    let data = binary(3 << 20);
    std::fs::write(&path, &data).expect("write data");
    let out = retry()
        .args([
            "--stdout", "hold", "-n", "2", "-d", "0", "-qq", "--", "sh", "-c",
        ])
        .arg("cat \"$0\"; [ \"$RETRY_ATTEMPT\" = 2 ] || exit 1")
        .arg(&path)
        .run();
    out.assert().code(0);
    assert!(out.stdout == data, "stdout has {} bytes", out.stdout.len());
    assert_eq!(
        out.stderr.len(),
        data.len(),
        "the retried attempt's output went to stderr"
    );
}

#[test]
fn output_read_by_the_rules_is_passed_on_without_waiting_for_the_attempt_to_end() {
    let (mut child, out, err) = support::start(&[
        "--retry-if-output",
        "nothing like this",
        "--",
        "sh",
        "-c",
        "echo first; echo 'on stderr' >&2; sleep 30",
    ]);
    out.until("first");
    err.until("on stderr");
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGTERM,
    )
    .expect("signal retry");
    assert_eq!(
        std::os::unix::process::ExitStatusExt::signal(&wait(&mut child)),
        Some(15)
    );
}

#[test]
fn output_read_by_the_rules_reaches_both_streams_intact() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (out_path, err_path) = (dir.path().join("out"), dir.path().join("err"));
    let (out_data, err_data) = (binary(3 << 20), binary((1 << 20) + 4097));
    std::fs::write(&out_path, &out_data).expect("write data");
    std::fs::write(&err_path, &err_data).expect("write data");
    let out = retry()
        .args([
            "--retry-if-output",
            "nothing like this",
            "-qq",
            "--",
            "sh",
            "-c",
            "cat \"$0\"; cat \"$1\" >&2",
        ])
        .arg(&out_path)
        .arg(&err_path)
        .run();
    out.assert().code(0);
    assert!(
        out.stdout == out_data,
        "stdout has {} bytes",
        out.stdout.len()
    );
    assert!(
        out.stderr == err_data,
        "stderr has {} bytes",
        out.stderr.len()
    );
}

/// retry with its stdout a pipe that nobody reads until the test says so, its stderr read
/// line by line; the command writes 4 MB, far more than a pipe holds, then waits.
fn start_with_a_stalled_reader(args: &[&str]) -> (std::process::Child, support::Lines) {
    let mut child = retry()
        .args(args)
        .args(["--retry-if-output", "nothing like this", "--"])
        .args([
            "sh",
            "-c",
            "echo ready >&2; head -c 4000000 /dev/zero; exec sleep 60",
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start retry");
    let err = support::Lines::of(child.stderr.take().expect("stderr"));
    err.until("ready");
    (child, err)
}

#[test]
fn a_reader_that_takes_nothing_does_not_hold_off_the_attempt_timeout() {
    let (mut child, err) = start_with_a_stalled_reader(&["-n", "1", "--attempt-timeout", "1s"]);
    // Nothing has read stdout, yet the timeout fires and the command is stopped.
    err.until("--attempt-timeout reached");
    let mut stdout = child.stdout.take().expect("stdout");
    let mut got = Vec::new();
    std::io::Read::read_to_end(&mut stdout, &mut got).expect("read stdout");
    assert_eq!(wait(&mut child).code(), Some(124));
    // What the command wrote before it was stopped arrives whole: zeroes, and fewer than it
    // meant to write, since it was held back by the reader.
    assert!(got.len() < 4_000_000, "{} bytes", got.len());
    assert!(got.iter().all(|&b| b == 0));
}

#[test]
fn sigterm_ends_the_run_while_the_reader_downstream_takes_nothing() {
    let (mut child, _err) = start_with_a_stalled_reader(&["-n", "1"]);
    // The pipe is full and retry is left holding output nobody takes.
    let stdout = child.stdout.as_ref().expect("stdout");
    let full = pipe_capacity(stdout);
    assert!(
        support::within(support::PATIENCE, || unread(stdout) >= full),
        "retry never filled its stdout: {} of {full} bytes",
        unread(stdout)
    );
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGTERM,
    )
    .expect("signal retry");
    // retry ends without its stdout ever being read.
    let status = wait(&mut child);
    assert_eq!(
        std::os::unix::process::ExitStatusExt::signal(&status),
        Some(15)
    );
}

/// How many bytes wait unread in the pipe `reader` reads (FIONREAD).
fn unread(reader: &impl std::os::fd::AsRawFd) -> usize {
    let mut n: nix::libc::c_int = 0;
    // SAFETY: FIONREAD writes one c_int through the pointer, into `n`, which outlives the call;
    // the descriptor is open for as long as `reader` is borrowed.
    let done = unsafe { nix::libc::ioctl(reader.as_raw_fd(), nix::libc::FIONREAD, &mut n) };
    assert_eq!(done, 0, "FIONREAD: {}", std::io::Error::last_os_error());
    usize::try_from(n).expect("a count")
}

/// How many bytes the pipe `reader` reads holds before its writer blocks: its size on Linux.
/// Elsewhere, a macOS pipe's first size, 16 KiB, which it may grow beyond: as many bytes unread
/// still mean that retry is writing what nobody takes.
fn pipe_capacity(reader: &impl std::os::fd::AsFd) -> usize {
    #[cfg(target_os = "linux")]
    {
        let size = nix::fcntl::fcntl(reader.as_fd(), nix::fcntl::FcntlArg::F_GETPIPE_SZ)
            .expect("the pipe's size");
        usize::try_from(size).expect("a size")
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = reader;
        16 * 1024
    }
}

/// Runs `retry ARGS -- yes`, reads one line of its stdout and closes it; returns how retry
/// ended and its log.
fn yes_until_the_reader_goes_away(args: &[&str]) -> (std::process::ExitStatus, String) {
    let mut child = retry()
        .args(args)
        .args(["--", "yes"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start retry");
    let err = support::Lines::of(child.stderr.take().expect("stderr"));
    let mut stdout = std::io::BufReader::new(child.stdout.take().expect("stdout"));
    let mut line = String::new();
    std::io::BufRead::read_line(&mut stdout, &mut line).expect("read a line");
    assert_eq!(line, "y\n");
    drop(stdout);
    let status = wait(&mut child);
    (status, err.rest().join("\n"))
}

#[test]
fn a_reader_that_goes_away_ends_the_command_with_sigpipe_as_without_retry() {
    // `yes` never ends by itself: only a broken pipe stops it.
    let (status, log) =
        yes_until_the_reader_goes_away(&["-n", "1", "--retry-if-output", "nothing like this"]);
    let signal = std::os::unix::process::ExitStatusExt::signal(&status);
    assert_eq!(signal, Some(13), "{status:?} {log}");
}

/// An attempt that fails without writing anything, once nobody reads retry's stdout: no
/// SIGPIPE tells, and retry asks whether its output still has a reader when it judges the
/// failure (stderr, still read, does not count): it gives up rather than retry for nobody.
#[test]
fn a_failed_attempt_is_not_retried_once_nobody_reads_the_output() {
    let mut child = retry()
        .args(["-n", "5", "-d", "0", "--", "sh", "-c"])
        .arg("echo ready >&2; read line; exit 1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start retry");
    let err = support::Lines::of(child.stderr.take().expect("stderr"));
    err.until("ready");
    drop(child.stdout.take());
    // The attempt goes on once its reader of retry's stdout is gone.
    drop(child.stdin.take());
    let status = wait(&mut child);
    let rest = err.rest();
    let log = rest.join("\n");
    assert_eq!(status.code(), Some(1), "{log}");
    assert!(log.contains("nothing reads its output any more"), "{log}");
    assert!(!rest.iter().any(|l| l == "ready"), "one attempt: {log}");
}

#[test]
fn an_attempt_whose_reader_went_away_is_not_retried() {
    let (status, log) = yes_until_the_reader_goes_away(&["-v", "-n", "5", "-d", "0"]);
    let signal = std::os::unix::process::ExitStatusExt::signal(&status);
    assert_eq!(signal, Some(13), "{status:?} {log}");
    assert!(log.contains("nothing reads its output any more"), "{log}");
    assert!(!log.contains("attempt 2/5"), "{log}");
}

/// `retry -- yes | head -1`: once the reader is done, the writer dies of SIGPIPE, and a shell
/// says nothing of it. retry says nothing either and ends by SIGPIPE as the command did; -v
/// says it in one line.
#[test]
fn a_pipelines_writer_killed_by_sigpipe_once_its_reader_is_done_is_not_reported() {
    let (status, log) = yes_until_the_reader_goes_away(&["-n", "5"]);
    let signal = std::os::unix::process::ExitStatusExt::signal(&status);
    assert_eq!(signal, Some(13), "{status:?} {log}");
    assert_output(log, str![""]);
    let (status, log) = yes_until_the_reader_goes_away(&["-v", "-n", "5"]);
    let signal = std::os::unix::process::ExitStatusExt::signal(&status);
    assert_eq!(signal, Some(13), "{status:?} {log}");
    // -v's own lines aside (the policy, each attempt's start), with their time stamps.
    let said: Vec<&str> = log
        .lines()
        .filter(|l| !l.contains("retry: policy:") && !l.ends_with(": starting"))
        .map(|l| l.split_once(" retry: ").map_or(l, |(_, rest)| rest))
        .collect();
    assert_output(
        said.join("\n"),
        str![
            "giving up after 1 attempt in [ELAPSED]: nothing reads its output any more: killed by SIGPIPE (status 141), as the writer of a pipeline is once its reader is done; command: yes"
        ],
    );
}

/// Runs retry with `input` on a pipe, TMPDIR pointing nowhere; returns its output.
fn without_tmpdir(args: &[&str], extra: &Path, input: Vec<u8>) -> Run {
    retry()
        .env("TMPDIR", "/nonexistent/retry-tests")
        .args(args)
        .arg(extra)
        .run_with_stdin(input)
}

#[test]
fn stdin_replay_that_cannot_spill_feeds_the_first_attempt_whole_and_starts_no_other() {
    let dir = tempfile::tempdir().expect("temp dir");
    let data = binary(8 << 20);
    let out = without_tmpdir(
        &[
            "-n",
            "3",
            "-d",
            "0",
            "--",
            "sh",
            "-c",
            "cat > \"$0/in.$RETRY_ATTEMPT\"; exit 1",
        ],
        dir.path(),
        data.clone(),
    );
    let stderr = out.stderr();
    out.assert().code(1);
    let first = fs::read(dir.path().join("in.1")).expect("the first attempt's copy");
    assert!(
        first == data,
        "the first attempt read {} bytes",
        first.len()
    );
    assert!(
        !dir.path().join("in.2").exists(),
        "a second attempt was started: {stderr}"
    );
    assert!(stderr.contains("stdin"), "the log says why: {stderr}");
}

#[test]
fn stdout_hold_that_cannot_hold_fails_loudly_and_lets_no_attempt_through() {
    let dir = tempfile::tempdir().expect("temp dir");
    let out = without_tmpdir(
        &[
            "-n",
            "2",
            "-d",
            "0",
            "--stdout",
            "hold",
            "--",
            "sh",
            "-c",
            "head -c 3000000 /dev/zero | tr '\\0' \"$RETRY_ATTEMPT\"; exit 1",
        ],
        dir.path(),
        Vec::new(),
    );
    out.assert()
        .code(125)
        .stdout("")
        .stderr(predicate::str::contains("--stdout hold"));
}

#[test]
fn output_that_retry_carries_and_cannot_write_is_a_failure() {
    let Some(_) = dev_full() else { return };
    for carried in [["--stdout", "hold"], ["--retry-if-output", "zzz"]] {
        let full = dev_full().expect("/dev/full, opened once already");
        let out = retry()
            .args(carried)
            .args(["--", "echo", "hi"])
            .stdout(full)
            .output()
            .expect("run retry");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(125), "{carried:?}: {stderr}");
        assert!(stderr.contains("No space left on device"), "{stderr}");
    }
}

/// What cron mails of a failed run with --output-on-failure carries retry's line for each
/// attempt, its reason (`HTTP status 503`) included, and ends with the give-up line: the same
/// whether the log is held with the output or goes to a --log-file, which has the lines too.
#[test]
fn output_on_failure_prints_each_attempts_reason_also_when_the_log_goes_to_a_file() {
    let server = Server::start(vec![Reply::new(503).body("busy\n")]);
    let dir = tempfile::tempdir().expect("temp dir");
    let log = dir.path().join("job.log");
    let run = |log: Option<&Path>| {
        let mut c = retry();
        c.args(["--output-on-failure", "--hints", "-n", "2", "-d", "0"]);
        if let Some(log) = log {
            c.arg("--log-file").arg(log);
        }
        c.args(["--", "curl", "-sS", "-D", "{hints}", &server.url("/")]);
        c.run()
    };
    // What is printed is the same whether the log goes to stderr or to a file.
    let printed = str![[r#"
retry: --- output of attempt 1/2 ---
retry: attempt 1/2 failed: exit status 0 after [ELAPSED] (retryable: HTTP status 503); retrying in 0ms
retry: --- output of attempt 2/2 ---
retry: attempt 2/2 failed: exit status 0 after [ELAPSED] (HTTP status 503; not retried: attempts used up)
retry: giving up after 2 attempts in [ELAPSED]: attempts used up; last exit status 0; retry exits 22: exit status 0 is not a success here; command: curl -sS -D {hints} http://127.0.0.1:[..]/

"#]];
    let held = run(None);
    assert_ne!(held.code(), Some(0), "{}", held.show());
    assert_eq!(held.lines(), ["busy", "busy"], "{}", held.show());
    assert_output(held.stderr(), printed.clone());
    let filed = run(Some(&log));
    assert_eq!(filed.code(), held.code(), "{}", filed.show());
    assert_eq!(filed.lines(), ["busy", "busy"], "{}", filed.show());
    assert_output(filed.stderr(), printed);
    let written = fs::read_to_string(&log).expect("the log file");
    assert_eq!(
        written.matches("(retryable: HTTP status 503)").count()
            + written.matches("(HTTP status 503; not retried").count(),
        2,
        "{written}"
    );
    assert!(
        written.contains("retry: giving up after 2 attempts"),
        "{written}"
    );
}

/// A cron-like run (`env -i`, stdout and stderr to files, as cron collects them for its mail)
/// with --output-on-failure: nothing at all when the job succeeds, even on a later attempt;
/// everything, in order, marked by attempt and byte for byte, when it fails.
#[test]
fn output_on_failure_prints_nothing_on_success_and_everything_on_failure() {
    let dir = tempfile::tempdir().expect("temp dir");
    // 3 MiB of binary output per attempt: past the memory bound, into the temporary file.
    let data = dir.path().join("data");
    fs::write(&data, binary(3 << 20)).expect("write data");
    let run = |succeed_at: u32| {
        let out_path = dir.path().join(format!("out{succeed_at}"));
        let err_path = dir.path().join(format!("err{succeed_at}"));
        let script = format!(
            "cat '{}'; echo \"note $RETRY_ATTEMPT\" >&2; [ \"$RETRY_ATTEMPT\" -ge {succeed_at} ]",
            data.display()
        );
        let status = std::process::Command::new("env")
            .args(["-i", "PATH=/usr/bin:/bin"])
            .arg(support::bin())
            .args([
                "--output-on-failure",
                "-n",
                "2",
                "-d",
                "0",
                "--",
                "sh",
                "-c",
                &script,
            ])
            .stdout(File::create(&out_path).expect("stdout file"))
            .stderr(File::create(&err_path).expect("stderr file"))
            .status()
            .expect("run retry");
        let out = fs::read(&out_path).expect("stdout");
        let err = String::from_utf8_lossy(&fs::read(&err_path).expect("stderr")).into_owned();
        (status, out, err)
    };
    // Fails once, then succeeds: cron mails nothing.
    let (status, out, err) = run(2);
    assert_eq!(status.code(), Some(0), "{err}");
    assert!(
        out.is_empty() && err.is_empty(),
        "{} bytes out, err: {err}",
        out.len()
    );
    // Never succeeds: every attempt's output, whole, and the log, in the order they came.
    let (status, out, err) = run(3);
    assert_eq!(status.code(), Some(1), "{err}");
    let mut twice = binary(3 << 20);
    twice.extend(binary(3 << 20));
    assert!(
        out == twice,
        "stdout: {} bytes of {}",
        out.len(),
        twice.len()
    );
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(
        lines,
        [
            "retry: --- output of attempt 1/2 ---",
            "note 1",
            lines.get(2).copied().unwrap_or_default(),
            "retry: --- output of attempt 2/2 ---",
            "note 2",
            lines.get(5).copied().unwrap_or_default(),
            lines.get(6).copied().unwrap_or_default(),
        ],
        "{err}"
    );
    assert!(lines[2].starts_with("retry: attempt 1/2 failed"), "{err}");
    assert!(lines[5].starts_with("retry: attempt 2/2 failed"), "{err}");
    assert!(
        lines[6].starts_with("retry: giving up after 2 attempts"),
        "{err}"
    );
}

#[test]
fn a_big_stdin_reaches_every_attempt_byte_for_byte_whatever_each_read_before() {
    // 24 MiB: past the first MiB an attempt that reads is streamed to, and a later attempt is
    // given the record, then the rest of the pipe. The first attempt stops halfway.
    let dir = tempfile::tempdir().expect("temp dir");
    let data = binary(24 << 20);
    let half = (12 << 20) + 12345;
    let mut command = quiet(
        3,
        "if [ \"$RETRY_ATTEMPT\" = 1 ]; then head -c \"$1\"; else cat; fi \
         > \"$0/in.$RETRY_ATTEMPT\"; exit 1",
    );
    command.arg(dir.path()).arg(half.to_string());
    assert_eq!(taking_all(command, &data).code(), Some(1));
    let first = fs::read(dir.path().join("in.1")).expect("the first attempt's copy");
    assert!(
        first[..] == data[..half],
        "attempt 1 read {} bytes, not the first {half}",
        first.len()
    );
    for attempt in 2..=3 {
        let got = fs::read(dir.path().join(format!("in.{attempt}"))).expect("attempt's copy");
        assert!(
            got == data,
            "attempt {attempt} read {} bytes, not the same",
            got.len()
        );
    }
}

// Linux only: without tee(2) and a pipe whose size can be set (macOS, the BSDs, the portable
// build), retry cannot give an attempt stdin's bytes without taking them, and reads a page
// ahead of it (docs/child.md).
#[cfg(all(target_os = "linux", not(retry_portable)))]
#[test]
fn an_attempt_that_reads_a_little_and_exits_takes_nothing_more_from_the_pipe() {
    // Each attempt reads 500,000 bytes of 3 MiB and exits: what follows is still in the pipe.
    assert_eq!(
        shell(
            "head -c 3145728 /dev/zero | { \"$0\" -n 2 -d 0 -qq -- sh -c 'head -c 500000 >/dev/null; exit 1'; wc -c; }",
            std::ffi::OsStr::new("")
        )
        .trim(),
        (3_145_728 - 500_000).to_string()
    );
}

#[test]
fn an_attempt_that_reads_a_lot_leaves_all_but_at_most_a_pipe_of_what_it_did_not_read() {
    // Past its first MiB an attempt is streamed to: retry takes stdin ahead of it, by what
    // the attempt's pipe holds (a MiB) at most.
    let left: usize = shell(
        "head -c 8388608 /dev/zero | { \"$0\" -qq -- sh -c 'head -c 2097152 >/dev/null'; wc -c; }",
        std::ffi::OsStr::new(""),
    )
    .trim()
    .parse()
    .expect("a count");
    assert!(
        (5 << 20..=6 << 20).contains(&left),
        "{left} bytes left of the 6 MiB not read"
    );
}

// Linux only: without tee(2) and a pipe whose size can be set (macOS, the BSDs, the portable
// build), retry cannot give an attempt stdin's bytes without taking them, and reads a page
// ahead of it (docs/child.md).
#[cfg(all(target_os = "linux", not(retry_portable)))]
#[test]
fn a_while_read_loop_whose_commands_each_read_a_line_keeps_every_line() {
    // The loop reads one line, the command the next: nothing is lost between them.
    let out = shell(
        "seq 1 60 | while read l; do \"$0\" -- sh -c 'read x; echo \"$x\"'; done",
        std::ffi::OsStr::new(""),
    );
    let expected: Vec<String> = (1..=30).map(|i| (2 * i).to_string()).collect();
    assert_eq!(out.lines().collect::<Vec<_>>(), expected);
}

/// The most `--output-on-failure` holds (src/platform/transcript.rs's LIMIT).
const HELD: u64 = 16 << 20;

/// Under a file size limit below what `--output-on-failure` spills to its temporary file, the
/// spool's write fails (retry does not die by SIGXFSZ): one warning, what was held is printed,
/// the rest passes through as it comes, every byte once, and the exit status is the command's.
#[test]
fn output_on_failure_past_a_file_size_limit_prints_everything_once_with_one_warning() {
    let out = support::retry_under_file_limit(1024)
        .args(["--output-on-failure", "-n2", "-d", "0", "--", "sh", "-c"])
        .arg("head -c 3000000 /dev/zero; echo LAST >&2; exit 1")
        .run();
    let stderr = out.stderr();
    assert_eq!(out.code(), Some(1), "{stderr}");
    assert_eq!(out.stdout.len(), 6_000_000);
    assert!(out.stdout.iter().all(|b| *b == 0));
    let warnings: Vec<&str> = stderr.lines().filter(|l| l.contains("warning")).collect();
    assert_eq!(
        warnings,
        [
            "retry: warning: --output-on-failure cannot hold more output (File too large): \
             what was held is above; the rest follows as it comes"
        ],
        "{stderr}"
    );
    assert_eq!(stderr.matches("LAST\n").count(), 2, "{stderr}");
    assert!(
        stderr
            .trim_end()
            .lines()
            .last()
            .is_some_and(|l| l.starts_with("retry: giving up after 2 attempts")),
        "{stderr}"
    );
}

/// How much of the file system retry's files in `dir` take: those it named there, and those
/// it holds open there without a name (its temporary files), seen through /proc/PID/fd.
fn taken_in(dir: &Path, pid: u32) -> u64 {
    use std::os::unix::fs::MetadataExt;
    let size = |m: fs::Metadata| m.len().max(m.blocks() * 512);
    let named: u64 = fs::read_dir(dir)
        .map(|d| {
            d.flatten()
                .filter_map(|e| e.metadata().ok())
                .map(size)
                .sum()
        })
        .unwrap_or(0);
    let open: u64 = fs::read_dir(format!("/proc/{pid}/fd"))
        .map(|d| {
            d.flatten()
                .filter(|e| fs::read_link(e.path()).is_ok_and(|to| to.starts_with(dir)))
                .filter_map(|e| fs::metadata(e.path()).ok())
                .map(size)
                .sum()
        })
        .unwrap_or(0);
    named + open
}

/// One attempt that prints three times what `--output-on-failure` holds: while it still runs
/// (paused on a FIFO once it printed), retry's temporary file never holds much more than the
/// bound; the printout ends with the attempt's last bytes, and its first line says how many
/// bytes were left out.
#[test]
fn one_long_attempt_under_output_on_failure_holds_no_more_than_the_bound_in_tmpdir() {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    let dir = tempfile::tempdir().expect("temp dir");
    let tmp = dir.path().join("tmp");
    fs::create_dir(&tmp).expect("TMPDIR");
    let fifo = dir.path().join("go");
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o600)).expect("mkfifo");
    let printed = 3 * HELD;
    let mut child = support::Started(
        retry()
            .env("TMPDIR", &tmp)
            .args(["--output-on-failure", "-n1", "--", "sh", "-c"])
            .arg(format!(
                "head -c {printed} /dev/zero; echo tail-marker; cat \"$1\" >/dev/null; exit 1"
            ))
            .arg("sh")
            .arg(&fifo)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start retry"),
    );
    let read_all = |mut stream: Box<dyn Read + Send>| {
        thread::spawn(move || {
            let mut bytes = Vec::new();
            let _ = stream.read_to_end(&mut bytes);
            bytes
        })
    };
    let stdout = read_all(Box::new(child.stdout.take().expect("stdout")));
    let stderr = read_all(Box::new(child.stderr.take().expect("stderr")));
    // The attempt has printed all once it waits on the FIFO: a writer can open it then.
    let mut most = 0;
    let mut writer = None;
    assert!(support::within(support::PATIENCE, || {
        most = most.max(taken_in(&tmp, child.id()));
        writer = fs::File::options()
            .write(true)
            .custom_flags(nix::libc::O_NONBLOCK)
            .open(&fifo)
            .ok();
        writer.is_some()
    }));
    // What retry has not read yet is in the pipe: let it take it all, then look once more.
    let mut last = u64::MAX;
    assert!(support::within(support::PATIENCE, || {
        let now = taken_in(&tmp, child.id());
        most = most.max(now);
        std::mem::replace(&mut last, now) == now
    }));
    let margin = 1 << 20;
    assert!(most <= HELD + margin, "{most} bytes in TMPDIR");
    assert!(most >= HELD / 2, "{most}: the spool was found");
    drop(writer);
    let status = wait(&mut child);
    let (stdout, stderr) = (
        stdout.join().expect("stdout"),
        stderr.join().expect("stderr"),
    );
    let stderr = String::from_utf8_lossy(&stderr);
    assert_eq!(status.code(), Some(1), "{stderr}");
    assert!(stdout.ends_with(b"\0\0\0tail-marker\n"));
    assert!(stdout.len() as u64 <= HELD, "{}", stdout.len());
    let first = stderr.lines().next().expect("a first line");
    let left_out: u64 = first
        .strip_prefix("retry: --output-on-failure: the earliest ")
        .and_then(|rest| rest.split_once(" bytes of output are left out (the beginning of attempt 1): at most 16 MiB is held"))
        .filter(|(_, after)| after.is_empty())
        .and_then(|(n, _)| n.parse().ok())
        .unwrap_or_else(|| panic!("{first}"));
    // All of it is printed or counted as left out: the mark, then the attempt's stdout.
    let mark = "retry: --- output of attempt 1/1 ---\n".len() as u64;
    assert_eq!(
        left_out + stdout.len() as u64,
        mark + printed + "tail-marker\n".len() as u64,
        "{first}"
    );
}

#[test]
fn an_output_rule_that_fails_an_exit_0_says_retry_exits_1_instead() {
    let out = support::retry()
        .args(["-n", "2", "-d", "0", "--retry-if-output", "busy", "--"])
        .args(["echo", "busy"])
        .run();
    out.assert().code(1);
    assert_eq!(out.stdout, b"busy\nbusy\n");
    let log = String::from_utf8_lossy(&out.stderr);
    assert!(
        log.contains("attempts used up; last exit status 0; retry exits 1: exit status 0 is not a success here;"),
        "{log}"
    );
}

/// What `--output-on-failure` prints always says why each attempt failed and ends with the
/// give-up line, under `-q` too, with the log on stderr or in a file; `-qq` prints the
/// command's output alone, without a line of retry's.
#[test]
fn output_on_failure_under_q_still_says_why_each_attempt_failed_and_qq_says_nothing() {
    let dir = tempfile::tempdir().expect("temp dir");
    let log = dir.path().join("retry.log");
    for file in [false, true] {
        let mut c = support::retry();
        c.args(["-q", "-n", "2", "-d", "0", "--output-on-failure"]);
        if file {
            c.arg("--log-file").arg(&log);
        }
        let out = c.args(["--", "sh", "-c", "echo out; exit 3"]).run();
        out.assert().code(3);
        let said = String::from_utf8_lossy(&out.stderr);
        for line in [
            "retry: --- output of attempt 1/2 ---",
            "retry: attempt 1/2 failed: exit status 3 after ",
            "retry: attempt 2/2 failed: exit status 3 after ",
            "retry: giving up after 2 attempts in ",
        ] {
            assert!(said.contains(line), "log file {file}: {line:?} in {said}");
        }
        assert!(
            said.trim_end()
                .lines()
                .last()
                .is_some_and(|l| l.contains("giving up"))
        );
    }
    let out = support::retry()
        .args(["-qq", "-n", "2", "-d", "0", "--output-on-failure"])
        .args(["--", "sh", "-c", "echo out; echo err >&2; exit 3"])
        .run();
    out.assert().code(3);
    assert_eq!(out.stdout, b"out\nout\n");
    assert_eq!(out.stderr, b"err\nerr\n");
}

/// A stderr that nobody reads (a pager whose screen is full, a stuck pipeline) fills, and
/// retry's log waits for room: no longer than `--max-time`, and not past a SIGTERM.
#[test]
fn a_stderr_nobody_reads_holds_retry_no_longer_than_max_time_or_a_sigterm() {
    use std::time::Duration;
    let start = |args: &[&str]| {
        let (unread, stderr) = nix::unistd::pipe().expect("a pipe");
        let child = support::retry()
            .args(args)
            .args([
                "--forever",
                "-d",
                "0",
                "-b",
                "constant",
                "-j",
                "none",
                "--",
                "false",
            ])
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::from(stderr))
            .spawn()
            .expect("start retry");
        (child, unread)
    };
    let (mut child, _unread) = start(&["--max-time", "1s"]);
    let started = std::time::Instant::now();
    let status = wait(&mut child);
    // The deadline comes during a wait (the last status, 1) or an attempt (124).
    assert!(matches!(status.code(), Some(1 | 124)), "{status:?}");
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
    let (mut child, _unread) = start(&[]);
    // Long enough for its log to fill the pipe: then it waits for room.
    std::thread::sleep(Duration::from_millis(500));
    let sent = std::time::Instant::now();
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGTERM,
    )
    .expect("SIGTERM");
    let status = wait(&mut child);
    assert_eq!(
        std::os::unix::process::ExitStatusExt::signal(&status),
        Some(15)
    );
    assert!(
        sent.elapsed() < Duration::from_secs(5),
        "{:?}",
        sent.elapsed()
    );
}
