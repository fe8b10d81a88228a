//! On a terminal, a long wait is counted down on one line that is cleared before the next
//! attempt; never when stderr is not a terminal. The terminal is a real pseudo-terminal, made
//! by script(1).

mod common;

use std::process::Command;

#[test]
fn a_long_wait_is_counted_down_on_a_terminal_and_cleared() {
    let retry = assert_cmd::cargo::cargo_bin!("retry");
    let line = format!("{} -n 2 -d 2.2s --jitter none -- false", retry.display());
    let out = Command::new("script")
        .args(["-qec", &line, "/dev/null"])
        .output()
        .expect("run script(1)");
    let screen = String::from_utf8_lossy(&out.stdout);
    for second in ["3s", "2s", "1s"] {
        let shown = format!("\rretry: next attempt in {second}\x1b[K");
        assert!(screen.contains(&shown), "no {shown:?} in {screen:?}");
    }
    // Cleared before the next attempt's line, whose verdict is in colour.
    assert!(
        screen.contains("\r\x1b[Kretry: attempt 2/2 \x1b[31mfailed\x1b[0m"),
        "{screen:?}"
    );
}

#[test]
fn no_countdown_when_stderr_is_not_a_terminal() {
    let out = common::cmd()
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
    let retry = assert_cmd::cargo::cargo_bin!("retry");
    let line = format!("{} -n 2 -d 2.5s --jitter none -- false", retry.display());
    let out = Command::new("script")
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
