//! On a terminal, a long wait is counted down on one line that is cleared before the next
//! attempt; never when stderr is not a terminal. The terminal is a real pseudo-terminal, made
//! by script(1).

use std::process::Command;

use crate::support;

/// script(1), which makes the pseudo-terminal, [`support::hermetic`] as retry under it must be;
/// `None` (the test skips) where it is missing.
fn script() -> Option<Command> {
    support::have("script", "apt-get install bsdutils").then(|| {
        let mut script = Command::new("script");
        support::hermetic(&mut script);
        script
    })
}

#[test]
fn a_long_wait_is_counted_down_on_a_terminal_and_cleared() {
    let retry = support::bin();
    let line = format!("{} -n 2 -d 2.2s --jitter none -- false", retry.display());
    let Some(mut script) = script() else { return };
    let out = script
        .args(["-qec", &line, "/dev/null"])
        .output()
        .expect("run script(1)");
    let screen = String::from_utf8_lossy(&out.stdout);
    // From the wait the log line gave, then whole seconds: the two agree.
    assert!(screen.contains("retrying in 2.2s"), "{screen:?}");
    for second in ["2.2s", "2s", "1s"] {
        let shown = format!("\rretry: next attempt in {second}\x1b[K");
        assert!(screen.contains(&shown), "no {shown:?} in {screen:?}");
    }
    assert!(!screen.contains("next attempt in 3s"), "{screen:?}");
    // Cleared before the next attempt's line, whose verdict is in colour.
    assert!(
        screen.contains("\r\x1b[Kretry: attempt 2/2 \x1b[31mfailed\x1b[0m"),
        "{screen:?}"
    );
}

#[test]
fn no_countdown_when_stderr_is_not_a_terminal() {
    let out = support::cmd()
        .args(["-n", "2", "-d", "2.1s", "--jitter", "none", "--", "false"])
        .output()
        .expect("run retry");
    let log = String::from_utf8_lossy(&out.stderr);
    assert!(
        !log.contains("next attempt in") && !log.contains('\r'),
        "{log:?}"
    );
    assert!(!log.contains('\x1b'), "no colour off a terminal: {log:?}");
    assert!(log.contains("retrying in 2.1s"), "{log}");
}

#[test]
fn no_color_turns_the_colour_off_but_keeps_the_countdown() {
    let retry = support::bin();
    let line = format!("{} -n 2 -d 2.5s --jitter none -- false", retry.display());
    let Some(mut script) = script() else { return };
    let out = script
        .args(["-qec", &line, "/dev/null"])
        .env("NO_COLOR", "1")
        .output()
        .expect("run script(1)");
    let screen = String::from_utf8_lossy(&out.stdout);
    assert!(screen.contains("retry: attempt 2/2 failed"), "{screen:?}");
    assert!(
        !screen.contains("\x1b[31m") && !screen.contains("\x1b[1;31m"),
        "{screen:?}"
    );
    assert!(screen.contains("next attempt in"), "{screen:?}");
}

/// Runs `retry ARGS` on a pseudo-terminal made by script(1), whose keyboard is the returned
/// stdin and whose screen is read line by line; `None` where script(1) is missing.
fn on_terminal(
    args: &str,
) -> Option<(
    std::process::Child,
    std::process::ChildStdin,
    support::Lines,
)> {
    let retry = support::bin();
    let mut child = script()?
        .args(["-qec", &format!("{} {args}", retry.display()), "/dev/null"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("run script(1)");
    let keyboard = child.stdin.take().expect("script's stdin");
    let screen = support::Lines::of(child.stdout.take().expect("script's stdout"));
    Some((child, keyboard, screen))
}

#[test]
fn ctrl_c_typed_at_the_terminal_cancels_the_run_and_is_not_retried() {
    use std::io::Write;
    // The shell reads the terminal itself: a Ctrl-C typed right after `ready` could otherwise
    // reach sh before it started `sleep`, and sh waits for its child before acting on SIGINT,
    // as it would without retry, so the test would wait out the sleep.
    let Some((mut child, mut keyboard, screen)) =
        on_terminal("-n 5 -d 0 -- sh -c 'echo ready; read line'")
    else {
        return;
    };
    screen.until("ready");
    keyboard.write_all(b"\x03").expect("type Ctrl-C");
    let status = support::wait(&mut child);
    let rest = screen.rest().join("\n");
    assert_eq!(status.code(), Some(130), "{rest}");
    assert!(rest.contains("cancelled by SIGINT"), "{rest}");
    // The give-up line names the command, whose text holds the word too.
    assert!(
        !rest.lines().any(|l| l.trim() == "ready"),
        "no second attempt: {rest}"
    );
    // One line says it all: how, which attempt, how the command ended.
    let said: Vec<&str> = rest.lines().filter(|l| l.contains("retry:")).collect();
    assert_eq!(said.len(), 1, "one line after a Ctrl-C: {rest}");
    // "Ctrl-C typed at the terminal during attempt 1/5", or "SIGINT received during attempt
    // 1/5" when it was typed before retry handed the terminal to the attempt.
    assert!(
        said[0].contains("during attempt 1/5")
            && said[0].contains("killed by SIGINT")
            && said[0].contains("no more attempts"),
        "{rest}"
    );
}

#[test]
fn an_interactive_command_reads_the_terminal_under_retry() {
    use std::io::Write;
    let Some((mut child, mut keyboard, screen)) =
        on_terminal("-n 2 -d 0 -- sh -c 'echo name?; read n; echo \"hello $n\"; exit 1'")
    else {
        return;
    };
    screen.until("name?");
    keyboard.write_all(b"ann\n").expect("type a name");
    screen.until("hello ann");
    screen.until("name?");
    keyboard.write_all(b"bob\n").expect("type a name");
    screen.until("hello bob");
    assert_eq!(support::wait(&mut child).code(), Some(1));
}

#[test]
fn a_reader_after_retry_in_a_pipeline_keeps_the_terminal() {
    use std::io::Write;
    // `less` reads its keys from the terminal; so does this reader, while the attempt runs.
    // Were the terminal handed to the attempt, the reader would be cut off from it.
    let Some((mut child, mut keyboard, screen)) = on_terminal(
        "-- sh -c 'echo from the command; sleep 2' | \
         sh -c 'read line; echo \"$line\"; echo key?; read k </dev/tty; echo \"key was $k\"'",
    ) else {
        return;
    };
    screen.until("from the command");
    screen.until("key?");
    keyboard.write_all(b"q\n").expect("type a key");
    screen.until("key was q");
    assert_eq!(support::wait(&mut child).code(), Some(0));
}

#[test]
fn a_command_in_a_pipeline_gets_the_terminal_when_it_reads_it() {
    use std::io::Write;
    let Some((mut child, mut keyboard, screen)) =
        on_terminal("-- sh -c 'echo name? >&2; read n </dev/tty; echo \"hello $n\"' | cat")
    else {
        return;
    };
    screen.until("name?");
    keyboard.write_all(b"ann\n").expect("type a name");
    screen.until("hello ann");
    assert_eq!(support::wait(&mut child).code(), Some(0));
}

#[test]
fn an_exit_130_at_the_terminal_is_said_to_be_taken_as_ctrl_c_not_a_signal_received() {
    let Some((mut child, _keyboard, screen)) = on_terminal("-n 3 -d 10ms -- sh -c 'exit 130'")
    else {
        return;
    };
    let status = support::wait(&mut child);
    let rest = screen.rest().join("\n");
    assert_eq!(status.code(), Some(130), "{rest}");
    assert!(
        !rest.contains("received"),
        "no signal reached retry: {rest}"
    );
    assert!(rest.contains("taken as a Ctrl-C"), "{rest}");
    assert!(!rest.contains("attempt 2"), "not retried: {rest}");
}

/// A shell's loop stops at a Ctrl-C typed while retry waits, as it does for `sleep` in the
/// same place: bash goes on with its loop unless its child died by SIGINT.
#[test]
fn ctrl_c_during_a_wait_stops_the_shell_loop_around_retry() {
    use std::io::Write;
    if !support::have("bash", "apt-get install bash") {
        return;
    }
    let retry = support::bin();
    let line = format!(
        "bash -c 'for i in 1 2 3; do {} -n 5 -d 5s --jitter none -- false; echo \"loop $i\"; done; \
         echo finished'",
        retry.display()
    );
    let Some(mut script) = script() else { return };
    let mut child = script
        .args(["-qec", &line, "/dev/null"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("run script(1)");
    let mut keyboard = child.stdin.take().expect("script's stdin");
    let screen = support::Lines::of(child.stdout.take().expect("script's stdout"));
    screen.until("retrying in 5s");
    keyboard.write_all(b"\x03").expect("type Ctrl-C");
    let status = support::wait(&mut child);
    let rest = screen.rest().join("\n");
    assert!(!rest.contains("loop 1"), "the loop went on: {rest}");
    assert!(!rest.contains("finished"), "the script went on: {rest}");
    assert!(rest.contains("cancelled by SIGINT"), "{rest}");
    assert_eq!(status.code(), Some(130), "{rest}");
}

/// A command that catches the Ctrl-C and exits with another status (Python's `except
/// KeyboardInterrupt: sys.exit(1)`, a shell's `trap 'exit 1' INT`) is not retried: the Ctrl-C
/// reached the attempt's group, not retry, and retry still learns of it.
#[test]
fn ctrl_c_caught_by_the_command_that_exits_1_is_not_retried() {
    use std::io::Write;
    let Some((mut child, mut keyboard, screen)) = on_terminal(
        "-n 3 -d 0 -- sh -c 'trap \"echo got-int; exit 1\" INT; echo ready; \
         while :; do sleep 0.1; done'",
    ) else {
        return;
    };
    screen.until("ready");
    keyboard.write_all(b"\x03").expect("type Ctrl-C");
    let status = support::wait(&mut child);
    let rest = screen.rest().join("\n");
    assert!(
        rest.contains("got-int"),
        "the command had the Ctrl-C: {rest}"
    );
    assert!(
        !rest.lines().any(|l| l.trim() == "ready"),
        "no second attempt: {rest}"
    );
    // "Ctrl-C typed at the terminal"; or, typed before retry handed the terminal over,
    // "SIGINT received": either way the run is cancelled.
    assert!(rest.contains("cancelled by SIGINT"), "{rest}");
    let said: Vec<&str> = rest.lines().filter(|l| l.contains("retry:")).collect();
    assert_eq!(said.len(), 1, "one line after a Ctrl-C: {rest}");
    assert!(said[0].contains("exit status 1"), "how it ended: {rest}");
    // retry ends by SIGINT, which script(1) reports as a shell does.
    assert_eq!(status.code(), Some(130), "{rest}");
}
