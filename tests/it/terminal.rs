//! On a terminal, a long wait is counted down on one line that is cleared before the next
//! attempt; never when stderr is not a terminal. The log's colour, by `--color`, NO_COLOR and
//! CLICOLOR_FORCE, on a terminal and off one. The terminal is a real pseudo-terminal, made by
//! script(1).

use std::process::Command;

use crate::support;
use crate::support::Launch;

/// script(1), which makes the pseudo-terminal, [`support::hermetic`] as retry under it must be;
/// `None` (the test skips) where it is missing.
fn script() -> Option<Command> {
    support::have("script", "apt-get install bsdutils").then(|| {
        let mut script = Command::new("script");
        // script(1) runs its line with `$SHELL -c`: the developer's own shell (bash execs a
        // lone command, dash does not) must not decide whether retry leads its process group.
        support::hermetic(&mut script).env("SHELL", "/bin/sh");
        script
    })
}

#[test]
fn a_long_wait_is_counted_down_on_a_terminal_and_cleared() {
    let retry = support::bin();
    let line = format!("{} -n 2 -d 2.2s --jitter none -- false", retry.display());
    let Some(mut script) = script() else { return };
    let out = script.args(["-qec", &line, "/dev/null"]).run();
    let screen = out.stdout();
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
    let out = support::retry()
        .args(["-n", "2", "-d", "2.1s", "--jitter", "none", "--", "false"])
        .run();
    let log = out.stderr();
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
    // A wait just long enough to be counted down (2 s or more left).
    let line = format!("{} -n 2 -d 2.2s --jitter none -- false", retry.display());
    let Some(mut script) = script() else { return };
    let out = script
        .args(["-qec", &line, "/dev/null"])
        .env("NO_COLOR", "1")
        .run();
    let screen = out.stdout();
    assert!(screen.contains("retry: attempt 2/2 failed"), "{screen:?}");
    assert!(
        !screen.contains("\x1b[31m") && !screen.contains("\x1b[1;31m"),
        "{screen:?}"
    );
    assert!(screen.contains("next attempt in"), "{screen:?}");
}

/// The log of `retry -n 2 ... -- false` with `flags`, run on a pseudo-terminal (what its screen
/// showed) with the environment `env`; `None` where script(1) is missing.
fn log_on_terminal(flags: &str, env: &[(&str, &str)]) -> Option<String> {
    let line = format!(
        "{} -n 2 -d 1ms --jitter none {flags} -- false",
        support::bin().display()
    );
    let mut script = script()?;
    script.args(["-qec", &line, "/dev/null"]);
    script.envs(env.iter().copied());
    Some(script.run().stdout())
}

/// The log of the same run with stderr a pipe.
fn log_off_terminal(flags: &[&str], env: &[(&str, &str)]) -> String {
    support::retry()
        .args(["-n", "2", "-d", "1ms", "--jitter", "none"])
        .args(flags)
        .args(["--", "false"])
        .envs(env.iter().copied())
        .run()
        .stderr()
}

const FAILED_IN_RED: &str = "retry: attempt 1/2 \x1b[31mfailed\x1b[0m";
const GIVING_UP_IN_RED: &str = "retry: \x1b[1;31mgiving up\x1b[0m after 2 attempts";

fn coloured(log: &str) -> bool {
    log.contains(FAILED_IN_RED) && log.contains(GIVING_UP_IN_RED)
}

fn plain(log: &str) -> bool {
    log.contains("retry: attempt 1/2 failed") && !log.contains('\x1b')
}

#[test]
fn color_auto_colours_a_terminal_and_an_empty_no_color_is_unset() {
    let Some(log) = log_on_terminal("", &[]) else {
        return;
    };
    assert!(coloured(&log), "{log:?}");
    let Some(log) = log_on_terminal("--color auto", &[("NO_COLOR", ""), ("CLICOLOR_FORCE", "0")])
    else {
        return;
    };
    assert!(coloured(&log), "{log:?}");
}

#[test]
fn color_never_keeps_a_terminal_plain_whatever_clicolor_force_says() {
    let Some(log) = log_on_terminal("--color never", &[("CLICOLOR_FORCE", "1")]) else {
        return;
    };
    assert!(plain(&log), "{log:?}");
}

#[test]
fn color_always_colours_a_terminal_though_no_color_is_set() {
    let Some(log) = log_on_terminal("--color always", &[("NO_COLOR", "1")]) else {
        return;
    };
    assert!(coloured(&log), "{log:?}");
}

#[test]
fn color_always_colours_a_pipe_and_never_wins_over_clicolor_force() {
    assert!(coloured(&log_off_terminal(&["--color", "always"], &[])));
    assert!(coloured(&log_off_terminal(
        &["--color=always"],
        &[("NO_COLOR", "1")]
    )));
    assert!(plain(&log_off_terminal(
        &["--color", "never"],
        &[("CLICOLOR_FORCE", "1")]
    )));
}

#[test]
fn clicolor_force_colours_a_pipe_unless_it_is_0_or_no_color_is_set() {
    assert!(coloured(&log_off_terminal(&[], &[("CLICOLOR_FORCE", "1")])));
    assert!(plain(&log_off_terminal(&[], &[("CLICOLOR_FORCE", "0")])));
    assert!(plain(&log_off_terminal(&[], &[("CLICOLOR_FORCE", "")])));
    assert!(plain(&log_off_terminal(
        &[],
        &[("CLICOLOR_FORCE", "1"), ("NO_COLOR", "1")]
    )));
    assert!(
        plain(&log_off_terminal(&[], &[])),
        "no colour off a terminal"
    );
}

#[test]
fn color_always_leaves_a_log_file_and_json_plain() {
    let dir = tempfile::TempDir::new().expect("temp dir");
    let file = dir.path().join("retry.log");
    let file = file.to_str().expect("a UTF-8 temp path");
    let out = log_off_terminal(&["--color", "always", "--log-file", file], &[]);
    assert!(out.is_empty(), "{out:?}");
    let log = std::fs::read_to_string(file).expect("the log file");
    assert!(
        log.contains("attempt 1/2 failed") && !log.contains('\x1b'),
        "{log:?}"
    );
    let json = log_off_terminal(&["--color", "always", "--log-format", "json"], &[]);
    assert!(
        json.contains("\"event\":\"failure\"") && !json.contains('\x1b'),
        "{json:?}"
    );
}

/// `--explain --fleet`'s chart paints the outage red by the same rule, on stdout: on a
/// terminal unless told never, and off one when told always.
#[test]
fn the_fleet_charts_colour_follows_color_on_stdout() {
    const RED: &str = "\x1b[31m";
    let chart = |flags: &[&str]| {
        support::retry()
            .args(["--explain", "--fleet", "50", "--outage", "10m"])
            .args(flags)
            .run()
            .stdout()
    };
    let piped = chart(&[]);
    assert!(piped.contains("Calls per second over time") && !piped.contains('\x1b'));
    assert!(chart(&["--color", "always"]).contains(RED));
    assert!(chart(&[]).len() < chart(&["--color", "always"]).len());
    let on_terminal = |flags: &str| {
        let line = format!(
            "{} --explain --fleet 50 --outage 10m {flags}",
            support::bin().display()
        );
        script().map(|mut s| s.args(["-qec", &line, "/dev/null"]).run().stdout())
    };
    let Some(auto) = on_terminal("") else { return };
    assert!(auto.contains(RED), "{auto:?}");
    let Some(never) = on_terminal("--color never") else {
        return;
    };
    assert!(
        never.contains("Calls per second over time") && !never.contains(RED),
        "{never:?}"
    );
}

/// Runs `retry ARGS` on a pseudo-terminal made by script(1), whose keyboard is the returned
/// stdin and whose screen is read line by line; `None` where script(1) is missing. retry is
/// its own job there, leading its process group, as when typed at an interactive shell.
fn on_terminal(
    args: &str,
) -> Option<(
    std::process::Child,
    std::process::ChildStdin,
    support::Lines,
)> {
    shell_line_on_terminal(&format!("exec {} {args}", support::bin().display()))
}

/// [`on_terminal`] for a whole shell line, run by script(1)'s `sh -c`.
fn shell_line_on_terminal(
    line: &str,
) -> Option<(
    std::process::Child,
    std::process::ChildStdin,
    support::Lines,
)> {
    let mut child = script()?
        .args(["-qec", line, "/dev/null"])
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
    // The Ctrl-C is said when it comes ("Ctrl-C typed at the terminal during attempt 1/5",
    // or "SIGINT received during attempt 1/5" when it was typed before retry handed the
    // terminal to the attempt), then the give-up line says how the command ended.
    let said: Vec<&str> = rest.lines().filter(|l| l.contains("retry:")).collect();
    assert!(said.len() <= 2, "{rest}");
    let (first, last) = (said[0], said[said.len() - 1]);
    assert!(first.contains("during attempt 1/5"), "{rest}");
    assert!(
        last.contains("attempt 1/5")
            && last.contains("killed by SIGINT")
            && last.contains("no more attempts"),
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
    // The attempt runs until the reader has had its key.
    let dir = tempfile::tempdir().unwrap();
    let go = dir.path().join("go");
    let Some((mut child, mut keyboard, screen)) = on_terminal(&format!(
        "-- sh -c 'echo from the command; while [ ! -e {} ]; do sleep 0.02; done' | \
         sh -c 'read line; echo \"$line\"; echo key?; read k </dev/tty; echo \"key was $k\"'",
        go.display()
    )) else {
        return;
    };
    screen.until("from the command");
    screen.until("key?");
    keyboard.write_all(b"q\n").expect("type a key");
    screen.until("key was q");
    std::fs::write(&go, "").unwrap();
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
    let Some((mut child, mut keyboard, screen)) = shell_line_on_terminal(&line) else {
        return;
    };
    screen.until("retrying in 5s");
    keyboard.write_all(b"\x03").expect("type Ctrl-C");
    let status = support::wait(&mut child);
    let rest = screen.rest().join("\n");
    assert!(!rest.contains("loop 1"), "the loop went on: {rest}");
    assert!(!rest.contains("finished"), "the script went on: {rest}");
    assert!(rest.contains("cancelled by SIGINT"), "{rest}");
    assert_eq!(status.code(), Some(130), "{rest}");
}

/// A Ctrl-C typed during an attempt stops the script that runs retry, as it stops a script
/// whose command it cancels: the script's shell, which made no job of its own for retry (no
/// job control), shares retry's process group, and the Ctrl-C must reach it too. retry hands
/// the terminal to an attempt up front only when it leads its own group.
#[test]
fn ctrl_c_during_an_attempt_stops_the_script_around_retry() {
    use std::io::Write;
    if !support::have("bash", "apt-get install bash") {
        return;
    }
    let retry = support::bin();
    let line = format!(
        "bash -c '{} -n 5 -d 0 -- sh -c \"echo ready; while :; do sleep 0.1; done\"; \
         echo \"the script went on\"'",
        retry.display()
    );
    let Some((mut child, mut keyboard, screen)) = shell_line_on_terminal(&line) else {
        return;
    };
    screen.until("ready");
    keyboard.write_all(b"\x03").expect("type Ctrl-C");
    let status = support::wait(&mut child);
    let rest = screen.rest().join("\n");
    assert!(!rest.contains("the script went on"), "{rest}");
    assert!(rest.contains("cancelled by SIGINT"), "{rest}");
    assert!(!rest.contains("attempt 2/5"), "not retried: {rest}");
    assert_eq!(status.code(), Some(130), "{rest}");
}

/// The same once the attempt has taken the terminal to read it: the Ctrl-C then reaches the
/// attempt's group alone, and retry passes it to the rest of its own group (the script's
/// shell), which the terminal would have sent it to without retry in between.
#[test]
fn ctrl_c_at_an_attempt_that_reads_the_terminal_stops_the_script_around_retry() {
    let Some(mut shell) = Shell::start() else {
        return;
    };
    shell.line(
        "bash -c 'for i in 1 2; do \"$RETRY\" -n 2 -d 0 -- sh -c \"echo name?; read n; exit 1\"; \
         echo \"loop $i\"; done; echo finished'",
    );
    shell.screen.until("name?");
    // The attempt stopped on reading, was given the terminal, and reads it.
    shell.waits_for_input("sh");
    shell.type_("\x03");
    shell.screen.until("cancelled by SIGINT");
    assert_eq!(shell.status(), "130");
    let screen = shell.exit();
    // (The command line typed holds the words, not the lines.)
    assert!(
        !screen.contains("loop 1") && !screen.lines().any(|l| l.trim() == "finished"),
        "the script went on: {screen}"
    );
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
    assert!(said.len() <= 2, "the Ctrl-C, then how it ended: {rest}");
    assert!(
        said[said.len() - 1].contains("exit status 1"),
        "how it ended: {rest}"
    );
    // retry ends by SIGINT, which script(1) reports as a shell does.
    assert_eq!(status.code(), Some(130), "{rest}");
}

/// What a pseudo-terminal shows, read on a thread of its own as bytes: a prompt that ends
/// without a newline (`pw: `) is seen as soon as it is written.
/// The bytes shown so far and whether the terminal closed, with a signal for each change.
type Shown = std::sync::Arc<(std::sync::Mutex<(Vec<u8>, bool)>, std::sync::Condvar)>;

struct Screen {
    shown: Shown,
    /// How far the test has read.
    at: usize,
}

impl Screen {
    fn of(mut stream: impl std::io::Read + Send + 'static) -> Screen {
        let shown: Shown = std::sync::Arc::new((
            std::sync::Mutex::new((Vec::new(), false)),
            std::sync::Condvar::new(),
        ));
        let writer = shown.clone();
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            loop {
                let n = stream.read(&mut buf).unwrap_or(0);
                let (lock, changed) = &*writer;
                let mut shown = lock.lock().unwrap_or_else(|e| e.into_inner());
                shown.0.extend_from_slice(&buf[..n]);
                shown.1 = n == 0;
                changed.notify_all();
                if n == 0 {
                    return;
                }
            }
        });
        Screen { shown, at: 0 }
    }

    /// Waits until `needle` is shown past what was read; returns what came before it, and
    /// reads past it.
    fn until(&mut self, needle: &str) -> String {
        let (lock, changed) = &*self.shown;
        let start = std::time::Instant::now();
        let mut shown = lock.lock().unwrap();
        loop {
            let text = String::from_utf8_lossy(&shown.0[self.at..]).into_owned();
            if let Some(i) = text.find(needle) {
                let before = text[..i].to_string();
                self.at += text[..i + needle.len()].len();
                return before;
            }
            let left = support::PATIENCE.saturating_sub(start.elapsed());
            assert!(
                !shown.1 && !left.is_zero(),
                "no {needle:?} on the screen; it shows {text:?}"
            );
            shown = changed.wait_timeout(shown, left).unwrap().0;
        }
    }

    /// Waits for a line with `needle` and reads past its end (bash's job lines go on with the
    /// job's command).
    fn line_with(&mut self, needle: &str) {
        self.until(needle);
        self.until("\n");
    }

    /// All that was shown.
    fn all(&self) -> String {
        String::from_utf8_lossy(&self.shown.0.lock().unwrap().0).into_owned()
    }
}

/// An interactive bash with job control on a pseudo-terminal made by script(1), as a person
/// uses it: the test types at its keyboard and reads its screen.
struct Shell {
    child: std::process::Child,
    keyboard: std::process::ChildStdin,
    screen: Screen,
}

impl Shell {
    /// `None` (the test skips) where script(1) or bash is missing.
    fn start() -> Option<Shell> {
        if !support::have("bash", "apt-get install bash") {
            return None;
        }
        let mut child = script()?
            .args(["-qfec", "bash --norc --noprofile -i", "/dev/null"])
            .env("PS1", "$ ")
            .env("TERM", "dumb")
            .env("NO_COLOR", "1")
            .env("HISTFILE", "/dev/null")
            .env("INPUTRC", "/dev/null")
            .env("RETRY", support::bin())
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("run script(1)");
        let keyboard = child.stdin.take().expect("script's stdin");
        let screen = Screen::of(child.stdout.take().expect("script's stdout"));
        let mut shell = Shell {
            child,
            keyboard,
            screen,
        };
        // Job changes said at once, not at the next prompt; the marker shows the shell read
        // the line (its echo shows `$((6*7))`, its output 42).
        shell.line("set -b; echo started-$((6*7))");
        shell.screen.until("started-42");
        Some(shell)
    }

    /// Types `text` at the keyboard.
    fn type_(&mut self, text: &str) {
        use std::io::Write;
        self.keyboard.write_all(text.as_bytes()).expect("type");
        self.keyboard.flush().expect("type");
    }

    /// Types a line.
    fn line(&mut self, text: &str) {
        self.type_(&format!("{text}\n"));
    }

    /// Types `$?` into a marker and waits for it: the status of the last command line.
    fn status(&mut self) -> String {
        self.line("echo status-$((1))-$?.");
        self.screen.until("status-1-");
        self.screen.until(".")
    }

    /// `jobs -l` says the job stopped reading the terminal from the background.
    fn job_waits_for_tty_input(&mut self) {
        self.line("jobs -l");
        self.screen.line_with("Stopped (tty input)");
    }

    /// Waits for retry to give up after `attempts`, checks that the command line's status is
    /// `status`, and leaves the shell; returns all that was shown, on which no line typed for
    /// an attempt reached the shell as a command.
    fn gives_up(mut self, attempts: &str, status: &str) -> String {
        self.screen
            .until(&format!("giving up after {attempts} attempts"));
        assert_eq!(self.status(), status);
        let screen = self.exit();
        assert!(!screen.contains("command not found"), "{screen}");
        screen
    }

    /// Waits until `program`, run under the shell, sleeps waiting for what is typed. A REPL
    /// shows its prompt a moment before it waits: a Ctrl-C typed in that moment is lost to it
    /// (Python's readline takes its signals only while it waits in `select`).
    fn waits_for_input(&self, program: &str) {
        let waits = || {
            descendants(self.child.id())
                .iter()
                .any(|pid| waits_in(*pid, program))
        };
        assert!(
            support::within(support::PATIENCE, waits),
            "{program} never waited for input: {}",
            self.screen.all()
        );
    }

    /// Leaves the shell, and returns all that was shown.
    fn exit(mut self) -> String {
        self.line("exit");
        support::wait(&mut self.child);
        self.screen.all()
    }
}

/// The processes under `root`, from each process's parent in /proc.
fn descendants(root: u32) -> Vec<u32> {
    let parents: Vec<(u32, u32)> = std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|entry| {
            let pid: u32 = entry.file_name().to_str()?.parse().ok()?;
            Some((pid, support::Stat::of(pid)?.ppid))
        })
        .collect();
    let mut found = vec![root];
    let mut i = 0;
    while i < found.len() {
        let parent = found[i];
        found.extend(parents.iter().filter(|p| p.1 == parent).map(|p| p.0));
        i += 1;
    }
    found
}

/// Whether `pid` is `program` asleep in a wait for input (`poll`, `select`, a terminal's
/// read); where the kernel does not say where a process sleeps, asleep is enough.
fn waits_in(pid: u32, program: &str) -> bool {
    if !support::Stat::of(pid).is_some_and(|s| s.name == program && s.state == "S") {
        return false;
    }
    match std::fs::read_to_string(format!("/proc/{pid}/wchan")) {
        Ok(wchan) if !wchan.is_empty() && wchan != "0" => {
            ["poll", "select", "tty_read", "wait_woken"]
                .iter()
                .any(|w| wchan.contains(w))
        }
        _ => true,
    }
}

/// A test that fails leaves nothing running: script(1) goes, its terminal hangs up, and the
/// shell passes the hang-up on to its jobs.
impl Drop for Shell {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A command that asks for a password on /dev/tty, in the issue's own pipeline: every attempt
/// reads its own answer, and no answer reaches the shell as a command (`two: command not
/// found`), whether retry's stdin or its stdout is the pipe.
#[test]
fn in_a_pipeline_every_attempt_reads_the_terminal_and_nothing_typed_reaches_the_shell() {
    // The status of a pipeline is its last command's: retry's, or cat's.
    for (before, after, status) in [("echo data | ", "", "1"), ("", " | cat", "0")] {
        let Some(mut shell) = Shell::start() else {
            return;
        };
        // What the attempt read is said on the terminal itself, so that it comes before
        // retry's next line; what it writes to stdout may go through cat, which can show it
        // after retry has given up.
        shell.line(&format!(
            "{before}\"$RETRY\" -n 3 -d 0.2s --jitter none -- sh -c 'printf \"pw$RETRY_ATTEMPT: \" \
             >/dev/tty; read pw </dev/tty; echo \"got-$pw\" >/dev/tty; echo \"out-$pw\"; \
             exit 1'{after}"
        ));
        for (n, answer) in [(1, "one"), (2, "two"), (3, "three")] {
            shell.screen.until(&format!("pw{n}: "));
            shell.line(answer);
            shell.screen.until(&format!("got-{answer}"));
        }
        let screen = shell.gives_up("3", status);
        assert!(!screen.contains("Stopped"), "{screen}");
        for answer in ["one", "two", "three"] {
            assert!(screen.contains(&format!("out-{answer}")), "{screen}");
        }
    }
}

/// `retry … &` whose attempt reads the terminal shows Stopped (tty input), as the command
/// alone would, and `fg` gives it the terminal.
#[test]
fn a_background_retry_whose_attempt_reads_the_terminal_shows_stopped_and_fg_resumes_it() {
    let Some(mut shell) = Shell::start() else {
        return;
    };
    shell.line(
        "\"$RETRY\" -n 2 -d 0 -- sh -c 'printf \"name? \"; read x; echo \"got-$x\"; exit 1' &",
    );
    shell.screen.until("name? ");
    // bash says "Stopped" as it happens, and why in `jobs -l`; the rest of each line names
    // the job's command.
    shell.screen.line_with("Stopped");
    shell.job_waits_for_tty_input();
    shell.line("fg");
    // The shell shows the job's command as it brings it back: it has read `fg`.
    shell.screen.until("got-$x");
    shell.line("ann");
    shell.screen.until("got-ann");
    shell.screen.until("name? ");
    shell.line("bob");
    shell.screen.until("got-bob");
    shell.gives_up("2", "1");
}

/// Ctrl-Z stops retry and the attempt together; `bg` lets them go on, and an attempt that then
/// reads the terminal stops the job again (tty input); `fg` resumes the whole run.
#[test]
fn ctrl_z_bg_and_fg_suspend_and_resume_the_whole_run() {
    let Some(mut shell) = Shell::start() else {
        return;
    };
    shell.line(
        "\"$RETRY\" -n 2 -d 0 -- sh -c 'echo \"ready-$RETRY_ATTEMPT\"; read x; echo \"got-$x\"; \
         exit 1'",
    );
    shell.screen.until("ready-1");
    shell.type_("\x1a");
    shell.screen.line_with("Stopped");
    shell.line("bg");
    shell.screen.line_with("Stopped");
    shell.job_waits_for_tty_input();
    shell.line("fg");
    shell.screen.until("got-$x");
    shell.line("one");
    shell.screen.until("got-one");
    shell.screen.until("ready-2");
    shell.line("two");
    shell.screen.until("got-two");
    shell.gives_up("2", "1");
}

/// Ctrl-Z during a wait: the countdown is cleared before the shell says Stopped, so no
/// `next attempt in 3s^Z` is left on the screen; `fg` brings the run back.
#[test]
fn ctrl_z_during_a_countdown_clears_it_before_the_shell_says_stopped() {
    let Some(mut shell) = Shell::start() else {
        return;
    };
    // Long enough to be counted down (2 s or more), with time to type the Ctrl-Z.
    shell.line("\"$RETRY\" -n 2 -d 2.5s --jitter none -- sh -c 'exit 3'");
    shell.screen.until("retrying in 2.5s");
    shell.screen.until("next attempt in");
    shell.type_("\x1a");
    let before = shell.screen.until("Stopped");
    assert!(
        before.contains("\r\x1b[K"),
        "the countdown was not cleared before Stopped: {before:?}"
    );
    shell.line("fg");
    shell.gives_up("2", "3");
}

/// The line that says a Ctrl-C was taken comes when it is typed, not when the command ends:
/// here the command ignores it and goes on until the test has seen the line.
#[test]
fn the_line_for_a_ctrl_c_comes_at_once_though_the_command_ignores_it() {
    use std::io::Write;
    let dir = tempfile::tempdir().unwrap();
    let go = dir.path().join("go");
    let Some((mut child, mut keyboard, screen)) = on_terminal(&format!(
        "-n 3 --kill-after 60s -- sh -c 'trap \"\" INT TERM; echo ready; \
         while [ ! -e {} ]; do sleep 0.02; done; exit 1'",
        go.display()
    )) else {
        return;
    };
    screen.until("ready");
    keyboard.write_all(b"\x03").expect("type Ctrl-C");
    // The command cannot end before `go` exists: the line came while it ran.
    screen.until("retry:");
    std::fs::write(&go, "").unwrap();
    let status = support::wait(&mut child);
    let rest = screen.rest().join("\n");
    assert!(rest.contains("cancelled by SIGINT"), "{rest}");
    assert_eq!(status.code(), Some(130), "{rest}");
}

/// A REPL that handles a Ctrl-C typed at the terminal and goes on for more than
/// `--kill-after` is not cancelled: its later exit status is judged as usual (docs/child.md).
#[test]
fn a_repl_that_handles_ctrl_c_keeps_its_later_exit_status() {
    if !support::have("python3", "apt-get install python3") {
        return;
    }
    let Some(mut shell) = Shell::start() else {
        return;
    };
    shell.line("\"$RETRY\" -n 2 -d 0 --kill-after 1s -- python3 -q");
    // The REPL has the terminal once it answers a line typed there: a Ctrl-C typed at its
    // first prompt could still reach retry instead, and the REPL never see it.
    shell.screen.until(">>> ");
    shell.line("print(6 * 7)");
    shell.screen.until("42");
    shell.screen.until(">>> ");
    shell.waits_for_input("python3");
    shell.type_("\x03");
    shell.screen.until("KeyboardInterrupt");
    shell.screen.until("it handled it");
    shell.line("raise SystemExit(3)");
    shell.screen.until("attempt 1/2 failed");
    shell.screen.until(">>> ");
    shell.line("raise SystemExit(4)");
    let screen = shell.gives_up("2", "4");
    assert!(!screen.contains("cancelled"), "{screen}");
}

/// `nohup retry -- job &` survives the hang-up of its terminal: bash passes SIGHUP on to its
/// jobs when it is hung up, and retry, which nohup started with SIGHUP ignored, keeps it so.
#[test]
fn nohup_retry_in_the_background_survives_the_hang_up() {
    let Some(mut shell) = Shell::start() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().display();
    shell.line(&format!(
        "nohup \"$RETRY\" -n 1 -- sh -c 'touch {d}/ready; while [ ! -e {d}/go ]; do sleep 0.02; \
         done; touch {d}/survived' >/dev/null 2>&1 &"
    ));
    shell.line("echo shell-$((2*3))-$$.");
    shell.screen.until("shell-6-");
    let bash: i32 = shell.screen.until(".").trim().parse().unwrap();
    let ready = dir.path().join("ready");
    assert!(support::appears(&ready), "the job never started");
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(bash),
        nix::sys::signal::Signal::SIGHUP,
    )
    .unwrap();
    support::wait(&mut shell.child);
    std::fs::write(dir.path().join("go"), "").unwrap();
    let survived = dir.path().join("survived");
    assert!(
        support::appears(&survived),
        "the job died with the shell: {}",
        shell.screen.all()
    );
}

/// In a script, `retry -- job &` is started with SIGINT ignored: a Ctrl-C typed at the
/// terminal ends the script, not the job, and the terminal stays the shell's.
#[test]
fn a_scripts_background_retry_survives_a_ctrl_c_typed_at_the_terminal() {
    let Some(mut shell) = Shell::start() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().display();
    shell.line(&format!(
        "sh -c '\"$RETRY\" -n 1 -- sh -c \"touch {d}/started; while [ ! -e {d}/go ]; do sleep \
         0.02; done; touch {d}/survived\" & echo script-$((2+2)); wait'"
    ));
    shell.screen.until("script-4");
    // The Ctrl-C goes once the attempt runs: before that, the script's background child may
    // not have set SIGINT ignored yet (a window of the shell's, not retry's).
    let started = dir.path().join("started");
    assert!(support::appears(&started), "the attempt never started");
    shell.type_("\x03");
    // The script is gone and the shell has the terminal back: it reads this line.
    shell.line("echo back-$((3*3))");
    shell.screen.until("back-9");
    std::fs::write(dir.path().join("go"), "").unwrap();
    let survived = dir.path().join("survived");
    assert!(
        support::appears(&survived),
        "the job was cancelled: {}",
        shell.screen.all()
    );
    let screen = shell.exit();
    assert!(!screen.contains("cancelled"), "{screen}");
}
