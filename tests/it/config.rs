//! The config file and its profiles: where it is looked up, what wins over what, and how a bad
//! file is reported (its name, the line, the key) without running anything.

use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use snapbox::str;
use tempfile::TempDir;

use crate::support;
use crate::support::{Launch, assert_output, predicate};

/// [`support::retry`] with `XDG_CONFIG_HOME` in `home` (and no `RETRY_CONFIG`, as always).
fn retry_in(home: &Path) -> std::process::Command {
    let mut c = support::retry();
    c.env("XDG_CONFIG_HOME", home);
    c
}

fn write(dir: &TempDir, name: &str, text: &str) -> std::path::PathBuf {
    let path = dir.path().join(name);
    std::fs::create_dir_all(path.parent().expect("a folder")).expect("make folder");
    std::fs::write(&path, text).expect("write config");
    path
}

/// The `--explain` line of a policy row.
fn row(explain: &[u8], name: &str) -> String {
    String::from_utf8_lossy(explain)
        .lines()
        .find(|l| l.trim_start().starts_with(name))
        .unwrap_or_default()
        .to_string()
}

const CONFIG: &str = r#"
attempts = 4
delay = "500ms"
fatal-on = [3, 22]

[profiles.ci]
attempts = 7
retry-on = "5-7,28"
max-time = "2m"
"#;

#[test]
fn flags_win_over_the_profile_which_wins_over_the_file_defaults() {
    let dir = TempDir::new().expect("temp dir");
    let config = write(&dir, "c.toml", CONFIG);
    let explain = |args: &[&str]| {
        retry_in(dir.path())
            .arg("--config")
            .arg(&config)
            .args(args)
            .arg("--explain")
            .run()
            .out
            .stdout
    };
    let file = explain(&[]);
    assert!(
        row(&file, "attempts").contains("4 (3 retries)"),
        "{}",
        row(&file, "attempts")
    );
    assert!(row(&file, "delay").contains("500ms  (") && row(&file, "delay").contains("c.toml)"));
    assert!(row(&file, "max-time").contains("none"));
    let profile = explain(&["-p", "ci"]);
    assert!(row(&profile, "attempts").contains("7 (6 retries)  (profile ci)"));
    assert!(row(&profile, "max-time").contains("2m  (profile ci)"));
    assert!(
        row(&profile, "delay").contains("500ms"),
        "file defaults still apply"
    );
    assert!(row(&profile, "fatal-on").contains("3,22,126,127"));
    let flag = explain(&["-p", "ci", "-n", "2", "--delay", "1s"]);
    assert!(row(&flag, "attempts").contains("2 (1 retry)  (flag)"));
    assert!(row(&flag, "delay").contains("1s  (flag)"));
}

#[test]
fn a_flag_hides_the_files_settings_it_excludes() {
    let dir = TempDir::new().expect("temp dir");
    let config = write(&dir, "c.toml", "attempts = 4\nbackoff = \"linear\"\n");
    let out = retry_in(dir.path())
        .arg("--config")
        .arg(&config)
        .args([
            "--forever",
            "--max-time",
            "1s",
            "--delays",
            "1s,2s",
            "--explain",
        ])
        .run();
    out.assert().code(0);
    assert!(row(&out.stdout, "attempts").contains("unlimited"));
    assert!(row(&out.stdout, "backoff").contains("list 1s,2s"));
}

#[test]
fn the_settings_apply_to_a_real_run() {
    let dir = TempDir::new().expect("temp dir");
    let config = write(
        &dir,
        "c.toml",
        "attempts = 3\ndelay = 0\n[profiles.quick]\nattempts = 2\n",
    );
    let out = retry_in(dir.path())
        .arg("--config")
        .arg(&config)
        .args(["-p", "quick", "--", "sh", "-c", "echo run; exit 1"])
        .run();
    assert_eq!(out.stdout(), "run\nrun\n");
}

/// `color` is a setting like any flag: the file's colours a log off a terminal, and the
/// command line's wins over it.
#[test]
fn the_files_color_setting_applies_and_the_flag_wins() {
    let dir = TempDir::new().expect("temp dir");
    let config = write(
        &dir,
        "c.toml",
        "color = \"always\"\ndelay = 0\nattempts = 2\n",
    );
    let log = |flags: &[&str]| {
        retry_in(dir.path())
            .arg("--config")
            .arg(&config)
            .args(flags)
            .args(["--", "false"])
            .run()
            .stderr()
    };
    let coloured = log(&[]);
    assert!(
        coloured.contains("retry: attempt 1/2 \x1b[31mfailed\x1b[0m"),
        "{coloured:?}"
    );
    let plain = log(&["--color", "never"]);
    assert!(
        plain.contains("retry: attempt 1/2 failed") && !plain.contains('\x1b'),
        "{plain:?}"
    );
    let explained = retry_in(dir.path())
        .arg("--config")
        .arg(&config)
        .args(["--explain", "--", "true"])
        .run();
    assert_eq!(explained.code(), Some(0), "{}", explained.stderr());
}

#[test]
fn the_default_file_is_found_under_xdg_config_home_and_its_absence_is_fine() {
    let dir = TempDir::new().expect("temp dir");
    let out = retry_in(dir.path()).args(["--explain"]).run();
    out.assert().code(0);
    assert!(row(&out.stdout, "attempts").contains("5 (4 retries)"));
    write(&dir, "retry/config.toml", "attempts = 9\n");
    let out = retry_in(dir.path()).args(["--explain"]).run();
    assert!(
        row(&out.stdout, "attempts").contains("9 (8 retries)"),
        "{}",
        row(&out.stdout, "attempts")
    );
}

#[test]
fn retry_config_names_the_file_when_no_flag_does() {
    let dir = TempDir::new().expect("temp dir");
    let config = write(&dir, "elsewhere.toml", "attempts = 6\n");
    let out = retry_in(dir.path())
        .env("RETRY_CONFIG", &config)
        .args(["--explain"])
        .run();
    assert!(row(&out.stdout, "attempts").contains("6 (5 retries)"));
    retry_in(dir.path())
        .env("RETRY_CONFIG", dir.path().join("missing.toml"))
        .args(["--", "true"])
        .assert()
        .code(125)
        .stderr(predicate::str::contains("(from RETRY_CONFIG): "));
}

#[test]
fn a_built_in_preset_serves_as_a_profile() {
    let dir = TempDir::new().expect("temp dir");
    let out = retry_in(dir.path())
        .args(["-p", "sysexits", "--explain"])
        .run();
    assert!(
        row(&out.stdout, "retry-on").contains("75  (preset sysexits, by -p sysexits)"),
        "{}",
        row(&out.stdout, "retry-on")
    );
}

/// Runs retry with a config file holding `text` and `args`: a usage error whose whole message
/// is `expected`, with nothing run.
#[track_caller]
fn assert_bad_config(text: &str, args: &[&str], expected: impl snapbox::IntoData) {
    let (err, ran) = bad_config(text, args);
    assert!(!ran, "nothing runs for {text:?}");
    assert_output(err, expected);
}

/// Runs retry with a config file holding `text`; the command would create a file.
fn bad_config(text: &str, args: &[&str]) -> (String, bool) {
    let dir = TempDir::new().expect("temp dir");
    let config = write(&dir, "bad.toml", text);
    let marker = dir.path().join("ran");
    let out = retry_in(dir.path())
        .arg("--config")
        .arg(&config)
        .args(args)
        .args(["--", "touch"])
        .arg(&marker)
        .run();
    assert_eq!(out.code(), Some(125), "{text}");
    (out.stderr(), marker.exists())
}

#[test]
fn every_config_error_names_the_file_the_line_and_the_key_and_runs_nothing() {
    assert_bad_config(
        "attempts = 3\nattemps = 4\n",
        &[],
        str![[r#"
retry: error: [TMP]/bad.toml:2: not a setting: attemps; did you mean attempts? Keys are the long flag names

"#]],
    );
    assert_bad_config(
        "delay = \"fast\"\n",
        &[],
        str![[r#"
retry: error: [TMP]/bad.toml:1: not a duration for delay: fast; write 250ms, 1.5s, 2m or 1h 30m; a bare number means seconds

"#]],
    );
    assert_bad_config(
        "\n\nattempts = \n",
        &[],
        str![[r#"
retry: error: [TMP]/bad.toml:3: not valid TOML: attempts =; string values must be quoted, expected literal string

"#]],
    );
    assert_bad_config(
        "attempts = 0\n",
        &[],
        str![[r#"
retry: error: [TMP]/bad.toml:1: not a number of attempts for attempts: 0; give a whole number of at least 1, or --forever for no limit

"#]],
    );
    // A broken profile stops the runs that use it (only those: see below).
    assert_bad_config(
        "[profiles.ci]\nmax-time = []\nfatal-on = \"x\"\n",
        &["-p", "ci"],
        str![[r#"
retry: error: [TMP]/bad.toml:3: neither an exit status nor a signal name for fatal-on: x; give statuses (0-255), ranges and signals, as 1,5-7,SIGKILL

"#]],
    );
    assert_bad_config(
        "profiles = 3\n",
        &[],
        str![[r#"
retry: error: [TMP]/bad.toml:1: not a table of profiles: profiles; write [profiles.NAME] tables, as [profiles.ci]

"#]],
    );
    assert_bad_config(
        "attempts = 2\n",
        &["-p", "nope"],
        str![[r#"
retry: error: no such profile or preset: nope; add [profiles.nope] to [TMP]/bad.toml, or use a preset: curl, sysexits, ssh, git, apt (apt also as dpkg)

"#]],
    );
}

#[test]
fn a_missing_config_file_named_by_the_flag_is_a_usage_error() {
    let dir = TempDir::new().expect("temp dir");
    retry_in(dir.path())
        .args(["--config", "/nonexistent/retry.toml", "--", "true"])
        .assert()
        .code(125)
        .stderr(predicate::str::contains(
            "(from --config): /nonexistent/retry.toml;",
        ));
}

#[test]
fn explain_marks_the_values_given_as_flags_even_without_a_config_file() {
    let dir = TempDir::new().expect("temp dir");
    let out = retry_in(dir.path()).args(["-n", "3", "--explain"]).run();
    assert!(row(&out.stdout, "attempts").ends_with("(flag)"));
    assert!(
        row(&out.stdout, "delay").ends_with("1s  (default)"),
        "a default is marked so"
    );
}

#[test]
fn conflicting_settings_in_one_file_name_the_file_the_lines_and_the_keys() {
    assert_bad_config(
        "attempts = 4\nforever = true\n",
        &[],
        str![[r#"
retry: error: [TMP]/bad.toml:2: settings that exclude each other: forever and attempts (line 1); keep one of them

"#]],
    );
    assert_bad_config(
        "[profiles.ci]\nbackoff = \"linear\"\ndelays = \"1s\"\n",
        &["-p", "ci"],
        str![[r#"
retry: error: [TMP]/bad.toml:3: settings that exclude each other: delays and backoff (line 2); keep one of them

"#]],
    );
}

#[test]
fn a_misspelled_key_gets_did_you_mean_as_a_misspelled_flag_does() {
    assert_bad_config(
        "atempts = 3\n",
        &[],
        str![[r#"
retry: error: [TMP]/bad.toml:1: not a setting: atempts; did you mean attempts? Keys are the long flag names

"#]],
    );
    assert_bad_config(
        "[profiles.ci]\nmax-dealy = \"5s\"\n",
        &["-p", "ci"],
        str![[r#"
retry: error: [TMP]/bad.toml:2: not a setting: max-dealy; did you mean max-delay? Keys are the long flag names

"#]],
    );
}

#[test]
fn a_singular_profile_table_is_refused_with_the_spelling_to_use() {
    assert_bad_config(
        "[profile.ci]\nattempts = 2\n",
        &["-p", "ci"],
        str![[r#"
retry: error: [TMP]/bad.toml:1: not a setting: profile; profiles are [profiles.NAME] tables, as [profiles.ci]

"#]],
    );
}

fn readme_config() -> String {
    let readme =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/config.md"))
            .expect("docs/config.md");
    let start = readme
        .find("# ~/.config/retry/config.toml")
        .expect("the sample config");
    let block = &readme[start..];
    block[..block.find("```").expect("the block's end")].to_string()
}

#[test]
fn the_readmes_sample_config_keeps_its_fetch_profile_retrying_a_503() {
    let dir = TempDir::new().expect("temp dir");
    let config = write(&dir, "retry/config.toml", &readme_config());
    // As curl -f does: a 503 in the header dump, exit status 22.
    let script = r#"printf 'HTTP/1.1 503 Service Unavailable\r\n\r\n' > "$RETRY_HINT_FILE"; echo run; exit 22"#;
    let out = retry_in(dir.path())
        .arg("--config")
        .arg(&config)
        .args([
            "-p", "fetch", "-n", "2", "-d", "0", "--", "sh", "-c", script,
        ])
        .run();
    assert_eq!(out.stdout(), "run\nrun\n", "{}", out.stderr());
}

#[test]
fn a_status_list_from_the_file_is_named_in_the_give_up_line() {
    let dir = TempDir::new().expect("temp dir");
    let config = write(
        &dir,
        "c.toml",
        "fatal-on = [3]\n[profiles.p]\nretry-on = \"5\"\n",
    );
    let give_up = |args: &[&str], status: &str| {
        let out = retry_in(dir.path())
            .arg("--config")
            .arg(&config)
            .args(args)
            .args(["--", "sh", "-c", &format!("exit {status}")])
            .run();
        out.stderr()
    };
    let err = give_up(&[], "3");
    assert!(
        err.contains("in fatal-on from ") && err.contains("c.toml"),
        "{err}"
    );
    let err = give_up(&["-p", "p"], "4");
    assert!(err.contains("not in retry-on of profile p"), "{err}");
    let err = give_up(&["--fatal-on", "3"], "3");
    assert!(
        err.contains("in --fatal-on"),
        "a flag is named as a flag: {err}"
    );
}

#[test]
fn a_broken_profile_stops_only_the_runs_that_use_it() {
    let home = TempDir::new().expect("temp dir");
    write(
        &home,
        "retry/config.toml",
        "attempts = 2\n\n[profiles.ci]\ndelay = \"5x\"\n\n[profiles.fast]\ndelay = \"0\"\n",
    );
    // A run without the profile runs, and says once that the profile is broken.
    let out = retry_in(home.path()).args(["--", "echo", "hi"]).run();
    out.assert().code(0);
    assert_eq!(out.stdout, b"hi\n");
    let said = out.stderr();
    assert_eq!(said.matches("warning: profile ci").count(), 1, "{said}");
    assert!(said.contains("5x"), "names the bad value: {said}");
    // Another profile is used as it is.
    let out = retry_in(home.path())
        .args(["-p", "fast", "--", "echo", "hi"])
        .run();
    out.assert().code(0);
    // The run that uses it stops, naming the file, the line and the value, and runs nothing.
    let out = retry_in(home.path())
        .args(["-p", "ci", "--", "echo", "hi"])
        .run();
    out.assert().code(125);
    assert!(out.stdout.is_empty());
    let said = out.stderr();
    assert!(
        said.contains("config.toml:4") && said.contains("5x"),
        "{said}"
    );
}

/// A file of 40,000 profiles is read whole on every run (each profile is checked), so it must
/// take time in proportion to its size; the line of a late setting is still found exactly.
/// (How fast is for `cargo bench`-style measurement by hand, not a timed test: this run
/// finishing within the tests' patience is what a quadratic reading would fail.)
#[test]
fn a_late_profile_of_forty_thousand_is_found_at_its_line() {
    const PROFILES: usize = 40_000;
    let mut text = String::from("attempts = 3\n");
    for i in 0..PROFILES {
        // Four lines each: profile i's `delay` is on line 4 i + 5.
        let delay = if i == PROFILES - 2 { "fast" } else { "1s" };
        text.push_str(&format!(
            "\n[profiles.p{i}]\nattempts = {}\ndelay = \"{delay}\"\n",
            i % 9 + 1
        ));
    }
    let line = 4 * (PROFILES - 2) + 5;
    let (err, ran) = bad_config(&text, &["-p", &format!("p{}", PROFILES - 2)]);
    assert!(!ran);
    assert_output(
        err,
        format!(
            "retry: error: [TMP]/bad.toml:{line}: not a duration for delay: fast; write 250ms, \
             1.5s, 2m or 1h 30m; a bare number means seconds\n"
        ),
    );
}

/// A config file's name that is not UTF-8 is shown escaped, byte by byte, never as U+FFFD.
#[test]
fn a_missing_config_file_whose_name_is_not_utf8_is_shown_escaped() {
    use std::os::unix::ffi::OsStrExt;
    let dir = TempDir::new().expect("temp dir");
    let out = retry_in(dir.path())
        .arg("--config")
        .arg(
            dir.path()
                .join(std::ffi::OsStr::from_bytes(b"caf\xe9.toml")),
        )
        .args(["--", "true"])
        .run();
    out.assert().code(125);
    let err = out.stderr();
    assert!(
        err.starts_with("retry: error: no config file there (from --config): $'")
            && err.contains(r"/caf\351.toml'; check the path"),
        "{err}"
    );
}

#[test]
fn no_config_ignores_a_broken_config_file_and_retry_config() {
    let home = TempDir::new().expect("temp dir");
    let path = write(&home, "retry/config.toml", "delay = \"5x\"\n");
    let out = retry_in(home.path()).args(["--", "echo", "hi"]).run();
    assert_eq!(out.code(), Some(125), "a broken top level stops the run");
    for env in [false, true] {
        let mut c = retry_in(home.path());
        if env {
            c.env("RETRY_CONFIG", &path);
        }
        let out = c
            .args(["--no-config", "-n", "2", "-d", "0", "--", "echo", "hi"])
            .run();
        assert_eq!(out.code(), Some(0), "RETRY_CONFIG set: {env}");
        assert_eq!(out.stdout, b"hi\n");
    }
    let out = retry_in(home.path())
        .args([
            "--no-config",
            "--config",
            path.to_str().expect("UTF-8"),
            "--",
            "true",
        ])
        .run();
    assert_eq!(
        out.code(),
        Some(125),
        "--no-config with --config is a usage error"
    );
}

/// `verbose = true` is one -v, never the name of a command: a value the flag does not take
/// would otherwise stand first on the command line and be run in place of the command.
#[test]
fn a_count_set_to_true_is_one_and_a_flag_hides_the_files_opposite() {
    let home = TempDir::new().expect("temp dir");
    write(
        &home,
        "retry/config.toml",
        "quiet = true\n\n[profiles.loud]\nverbose = true\n",
    );
    let run = |args: &[&str]| {
        retry_in(home.path())
            .args(args)
            .args(["-n", "2", "-d", "0", "--", "sh", "-c", "echo ran; exit 3"])
            .run()
    };
    for args in [&["-p", "loud"][..], &["-v"][..]] {
        let out = run(args);
        assert_eq!(out.code(), Some(3), "{args:?}: the command ran, twice");
        assert_eq!(out.stdout, b"ran\nran\n", "{args:?}");
        let said = out.stderr();
        assert!(
            said.contains("attempt 2/2: starting"),
            "{args:?}: -v: {said}"
        );
    }
    // The file alone: quiet, only the give-up line.
    let said = String::from_utf8_lossy(&run(&[]).stderr).into_owned();
    assert_eq!(said.lines().count(), 1, "{said}");
    write(&home, "retry/config.toml", "verbose = \"yes\"\n");
    let out = run(&[]);
    out.assert().code(125);
    assert!(out.stdout.is_empty(), "nothing ran");
}

/// The README's warning, checked: a top-level `fatal-on = 22` with a curl profile makes
/// curl's HTTP errors fatal, and `--explain` says so.
#[test]
fn explain_warns_when_the_file_makes_fatal_a_status_the_profile_retries() {
    let home = TempDir::new().expect("temp dir");
    write(
        &home,
        "retry/config.toml",
        "fatal-on = [22]\n\n[profiles.fetch]\npreset = \"curl\"\nhints = true\n",
    );
    let out = retry_in(home.path())
        .args([
            "-p",
            "fetch",
            "--explain",
            "--",
            "curl",
            "-fsS",
            "-D",
            "{hints}",
            "u",
        ])
        .run();
    out.assert().code(0);
    let text = out.stdout();
    assert!(
        text.lines().any(
            |l| l.contains("- 22 in both the curl preset's retried statuses")
                && l.contains("fatal-on from")
                && l.contains("fatal wins")
        ),
        "{text}"
    );
}

/// A config error quotes a few hundred characters of its line at most, escaped, and names a
/// file whose path is not UTF-8 escaped, not with a replacement character.
#[test]
fn a_config_error_quotes_its_line_short_and_escaped_and_its_path_escaped() {
    let huge = format!(
        "retry-if-output = [{},,]\n",
        vec!["\"a\""; 200_000].join(",")
    );
    let (err, ran) = bad_config(&huge, &[]);
    assert!(!ran);
    assert!(err.len() < 1_000, "{} bytes: {}", err.len(), &err[..1_000]);
    assert!(err.contains("not valid TOML: retry-if-output = [\"a\",") && err.contains('…'));
    let (err, _) = bad_config("name = \"x\" \u{1b}[2J\n", &[]);
    assert!(!err.contains('\u{1b}'), "{err:?}");
    let home = TempDir::new().expect("temp dir");
    let odd = home.path().join(std::ffi::OsStr::from_bytes(b"x\xffcfg"));
    std::fs::create_dir_all(odd.join("retry")).expect("config folder");
    std::fs::write(odd.join("retry/config.toml"), "bogus =\n").expect("config");
    let out = retry_in(&odd).args(["--", "true"]).run();
    assert_eq!(out.code(), Some(125));
    let err = out.stderr();
    assert!(err.contains("x\\377cfg/retry/config.toml"), "{err}");
    assert!(!err.contains('\u{fffd}'), "{err}");
}
