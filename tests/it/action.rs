//! The GitHub Action (action.yml, its scripts in action/), run as a runner runs it: each step's
//! script with the environment action.yml maps from the inputs (`INPUT_NAME`, the table below,
//! checked against action.yml's text), the variables a runner sets (GITHUB_OUTPUT, GITHUB_PATH,
//! RUNNER_OS, RUNNER_ARCH, RUNNER_TEMP) and the built retry on PATH through a symlink; the
//! download against an HTTP server of the test's own.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use crate::support::http::{Reply, Server};
use crate::support::{Launch, Run, bin, hermetic, running, within};
use crate::support::{PredicateBooleanExt, predicate};

/// action.yml's inputs and their defaults, as a runner fills an input that a workflow leaves
/// out; [`the_table_is_action_yml`] holds it to the file.
const INPUTS: &[(&str, Option<&str>)] = &[
    ("command", None),
    ("max_attempts", Some("3")),
    ("timeout_minutes", None),
    ("timeout_seconds", None),
    ("retry_wait_seconds", Some("10")),
    ("shell", Some("bash")),
    ("polling_interval_seconds", None),
    ("retry_on", Some("any")),
    ("retry_on_exit_code", None),
    ("on_retry_command", None),
    ("new_command_on_retry", None),
    ("warning_on_retry", Some("true")),
    ("continue_on_error", Some("false")),
    ("args", None),
    ("key", None),
    ("state", None),
    ("version", Some("latest")),
    (
        "download_url",
        Some("https://github.com/retry-wrapper/retry/releases"),
    ),
];

/// The inputs each step's script reads (the others are the other step's).
const INSTALL_INPUTS: &[&str] = &["version", "download_url"];

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn action_yml() -> String {
    std::fs::read_to_string(root().join("action.yml")).unwrap()
}

/// A runner's job: its temp folder, output files, and a PATH folder (`bin`) with the built
/// retry in it, or whatever `retry` a test puts there.
struct Job {
    dir: tempfile::TempDir,
}

impl Job {
    fn new() -> Job {
        let job = Job::bare();
        std::os::unix::fs::symlink(bin(), job.bin().join("retry")).unwrap();
        job
    }

    /// No retry on PATH.
    fn bare() -> Job {
        let dir = tempfile::tempdir().unwrap();
        for sub in ["bin", "temp", "work"] {
            std::fs::create_dir(dir.path().join(sub)).unwrap();
        }
        std::fs::write(dir.path().join("output"), "").unwrap();
        std::fs::write(dir.path().join("path"), "").unwrap();
        Job { dir }
    }

    fn bin(&self) -> PathBuf {
        self.dir.path().join("bin")
    }

    fn temp(&self) -> PathBuf {
        self.dir.path().join("temp")
    }

    /// A folder for the command's own files.
    fn work(&self) -> PathBuf {
        self.dir.path().join("work")
    }

    /// The step running action/SCRIPT, with `given` inputs and the defaults of the others, as
    /// action.yml maps them into its environment; the runner's variables for a Linux x64 job.
    fn step(&self, script: &str, given: &[(&str, &str)]) -> Command {
        let mut c = Command::new(root().join("action").join(script));
        hermetic(&mut c);
        for (name, _) in given {
            assert!(
                INPUTS.iter().any(|(n, _)| n == name),
                "no input {name} in action.yml"
            );
        }
        for (name, default) in INPUTS {
            if (script == "install") != INSTALL_INPUTS.contains(name) {
                continue;
            }
            let value = given
                .iter()
                .find(|(n, _)| n == name)
                .map(|(_, v)| *v)
                .or(*default)
                .unwrap_or("");
            c.env(format!("INPUT_{}", name.to_uppercase()), value);
        }
        c.env("PATH", format!("{}:/usr/bin:/bin", self.bin().display()))
            .env("GITHUB_OUTPUT", self.dir.path().join("output"))
            .env("GITHUB_PATH", self.dir.path().join("path"))
            .env("GITHUB_ACTION_PATH", root())
            .env("RUNNER_TEMP", self.temp())
            .env("RUNNER_OS", "Linux")
            .env("RUNNER_ARCH", "X64")
            .env_remove("GITHUB_ACTION_REF")
            .env_remove("RETRY_ACTION_REF")
            .current_dir(self.work());
        c
    }

    /// The run step, with the install step's retry (the built one).
    fn run(&self, given: &[(&str, &str)]) -> Run {
        self.step("run", given).env("RETRY_BIN", bin()).run()
    }

    /// The outputs the steps wrote, from GITHUB_OUTPUT's `NAME<<DELIMITER` blocks.
    fn outputs(&self) -> HashMap<String, String> {
        let text = std::fs::read_to_string(self.dir.path().join("output")).unwrap();
        let mut outputs = HashMap::new();
        let mut lines = text.lines();
        while let Some(line) = lines.next() {
            let (name, delimiter) = line
                .split_once("<<")
                .unwrap_or_else(|| panic!("not NAME<<DELIMITER: {line:?} in {text:?}"));
            let mut value = Vec::new();
            for line in lines.by_ref() {
                if line == delimiter {
                    break;
                }
                value.push(line);
            }
            outputs.insert(name.to_string(), value.join("\n"));
        }
        outputs
    }

    fn output(&self, name: &str) -> String {
        self.outputs()
            .remove(name)
            .unwrap_or_else(|| panic!("no output {name}: {:?}", self.outputs()))
    }
}

#[test]
fn the_table_is_action_yml() {
    let yml = action_yml();
    // The inputs: each `  name:` under `inputs:`, and its `    default:`.
    let section = yml
        .split_once("\ninputs:\n")
        .and_then(|(_, rest)| rest.split_once("\noutputs:\n"))
        .map(|(inputs, _)| inputs)
        .expect("an inputs: section before outputs:");
    let mut found: Vec<(String, Option<String>)> = Vec::new();
    for line in section.lines() {
        if let Some(name) = line.strip_prefix("  ").and_then(|l| l.strip_suffix(':'))
            && !name.starts_with(' ')
        {
            found.push((name.to_string(), None));
        } else if let Some(default) = line.strip_prefix("    default: ") {
            found.last_mut().expect("a default under an input").1 =
                Some(default.trim_matches('"').to_string());
        }
    }
    let table: Vec<(String, Option<String>)> = INPUTS
        .iter()
        .map(|(n, d)| (n.to_string(), d.map(str::to_string)))
        .collect();
    assert_eq!(found, table);
    // Each input reaches the scripts as INPUT_NAME, and only so.
    for (name, _) in INPUTS {
        let line = format!("INPUT_{}: ${{{{ inputs.{name} }}}}", name.to_uppercase());
        assert_eq!(yml.matches(&line).count(), 1, "{line:?} once in action.yml");
    }
    assert_eq!(yml.matches("${{ inputs.").count(), INPUTS.len());
    for output in ["total_attempts", "exit_code", "exit_error"] {
        let line = format!("value: ${{{{ steps.run.outputs.{output} }}}}");
        assert!(yml.contains(&line), "{line:?} in action.yml");
    }
    assert!(yml.contains("\n  using: composite\n"));
}

#[test]
fn no_expression_is_inside_a_run_script() {
    let yml = action_yml();
    let lines: Vec<&str> = yml.lines().collect();
    let mut scripts = 0;
    for (i, line) in lines.iter().enumerate() {
        let Some(value) = line.trim_start().strip_prefix("run:") else {
            continue;
        };
        scripts += 1;
        let indent = line.len() - line.trim_start().len();
        // `run: |` or `run: >`: the script is the lines indented further.
        let mut script = vec![value];
        script.extend(
            lines[i + 1..]
                .iter()
                .take_while(|l| l.trim().is_empty() || l.len() - l.trim_start().len() > indent),
        );
        for text in script {
            assert!(
                !text.contains("${{"),
                "an expression in a run script: {text:?}"
            );
        }
    }
    assert_eq!(scripts, 2, "the install and run steps");
}

#[test]
fn three_failures_fail_the_step_with_total_attempts_3_and_exit_code_1() {
    let job = Job::new();
    let run = job.run(&[
        ("command", "echo attempt; exit 1"),
        ("max_attempts", "3"),
        ("retry_wait_seconds", "0"),
    ]);
    run.assert().code(1);
    assert_eq!(run.lines().iter().filter(|l| *l == "attempt").count(), 3);
    assert_eq!(job.output("total_attempts"), "3");
    assert_eq!(job.output("exit_code"), "1");
    assert_eq!(
        job.output("exit_error"),
        "attempts used up; last exit status 1"
    );
    assert!(
        run.lines()
            .contains(&"::error::retry gave up: attempts used up; last exit status 1".into()),
        "{}",
        run.show()
    );
}

#[test]
fn a_failure_at_exit_0_says_which_status_the_step_exits_with_instead() {
    let job = Job::new();
    let run = job.run(&[
        ("command", "echo busy"),
        ("max_attempts", "2"),
        ("retry_wait_seconds", "0"),
        ("args", "--retry-if-output busy"),
    ]);
    run.assert().code(1);
    assert_eq!(job.output("exit_code"), "1");
    assert_eq!(
        job.output("exit_error"),
        "attempts used up; last exit status 0; retry exits 1"
    );
}

#[test]
fn a_success_at_the_second_attempt_passes_with_total_attempts_2() {
    let job = Job::new();
    let run = job.run(&[
        (
            "command",
            r#"n=$(cat count 2>/dev/null || echo 0); echo $((n + 1)) > count; [ "$n" -ge 1 ]"#,
        ),
        ("retry_wait_seconds", "0"),
    ]);
    run.assert().code(0);
    assert_eq!(job.output("total_attempts"), "2");
    assert_eq!(job.output("exit_code"), "0");
    assert_eq!(job.output("exit_error"), "");
}

#[test]
fn a_timeout_stops_the_command_and_its_children_within_seconds() {
    let job = Job::new();
    let run = job.run(&[
        (
            "command",
            "sh -c 'sleep 30 & echo $! > bg; sleep 30 & echo $! > fg; wait'",
        ),
        ("timeout_seconds", "1"),
        ("max_attempts", "1"),
    ]);
    run.assert().code(124);
    assert!(run.took < Duration::from_secs(8), "{}", run.show());
    for file in ["bg", "fg"] {
        let pid: i32 = std::fs::read_to_string(job.work().join(file))
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        assert!(
            within(Duration::from_secs(5), || !running(pid)),
            "the {file} sleep ({pid}) still runs"
        );
    }
    assert_eq!(job.output("total_attempts"), "1");
    assert_eq!(job.output("exit_code"), "124");
    assert_eq!(
        job.output("exit_error"),
        "attempts used up; last timed out (status 124)"
    );
}

#[test]
fn continue_on_error_passes_the_step_with_the_failure_in_the_outputs() {
    let job = Job::new();
    let run = job.run(&[
        ("command", "exit 3"),
        ("max_attempts", "2"),
        ("retry_wait_seconds", "0"),
        ("continue_on_error", "true"),
    ]);
    run.assert().code(0);
    assert_eq!(job.output("total_attempts"), "2");
    assert_eq!(job.output("exit_code"), "3");
    assert_eq!(
        job.output("exit_error"),
        "attempts used up; last exit status 3"
    );
    assert!(run.stdout().contains(
        "::warning::retry gave up: attempts used up; last exit status 3 (continue_on_error: the step passes)\n"
    ));
}

#[test]
fn warning_on_retry_writes_a_warning_line_for_each_retry_and_runs_the_hook() {
    let job = Job::new();
    let run = job.run(&[
        ("command", "exit 1"),
        ("max_attempts", "3"),
        ("retry_wait_seconds", "0.25"),
        ("on_retry_command", "echo cleaned >> hook"),
    ]);
    run.assert().code(1);
    // The hook's output is on retry's stderr, which the runner reads for commands too.
    let warnings: Vec<String> = run
        .stderr()
        .lines()
        .filter(|l| l.starts_with("::warning::"))
        .map(str::to_string)
        .collect();
    assert_eq!(
        warnings,
        [
            "::warning::Attempt 1 of 3 failed (exit status 1); retrying in 250ms",
            "::warning::Attempt 2 of 3 failed (exit status 1); retrying in 250ms",
        ]
    );
    assert_eq!(
        std::fs::read_to_string(job.work().join("hook")).unwrap(),
        "cleaned\ncleaned\n"
    );
    // Off, no warning; the hook still runs.
    let job = Job::new();
    let run = job.run(&[
        ("command", "exit 1"),
        ("max_attempts", "2"),
        ("retry_wait_seconds", "0"),
        ("warning_on_retry", "false"),
    ]);
    run.assert()
        .stderr(predicate::str::contains("::warning::").not());
}

#[test]
fn a_workflow_command_escapes_percent_and_line_ends() {
    let out = Command::new("bash")
        .args([
            "-c",
            r#". "$1/action/common.sh"; command_line warning "$2""#,
            "bash",
        ])
        .arg(root())
        .arg("100% done\r\n::error::forged")
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "::warning::100%25 done%0D%0A::error::forged\n"
    );
}

#[test]
fn new_command_on_retry_runs_from_the_second_attempt_on() {
    let job = Job::new();
    let run = job.run(&[
        ("command", "echo first; exit 1"),
        ("new_command_on_retry", "echo again; exit 0"),
        ("retry_wait_seconds", "0"),
    ]);
    run.assert().code(0);
    assert_eq!(run.lines(), ["first", "again"]);
    assert_eq!(job.output("total_attempts"), "2");
}

#[test]
fn retry_on_timeout_does_not_retry_an_error_nor_retry_on_error_a_timeout() {
    let job = Job::new();
    let run = job.run(&[
        ("command", "exit 1"),
        ("retry_on", "timeout"),
        ("retry_wait_seconds", "0"),
    ]);
    run.assert().code(1);
    assert_eq!(job.output("total_attempts"), "1");
    let job = Job::new();
    let run = job.run(&[
        ("command", "sleep 10"),
        ("timeout_seconds", "0.2"),
        ("retry_on", "error"),
        ("retry_wait_seconds", "0"),
    ]);
    run.assert().code(124);
    assert_eq!(job.output("total_attempts"), "1");
}

#[test]
fn bad_input_is_refused_naming_it_and_nothing_runs() {
    for (input, value, says) in [
        (
            "max_attempts",
            "three",
            "a whole number of attempts, at least 1 (got three)",
        ),
        (
            "retry_on",
            "sometimes",
            "any, timeout or error (got sometimes)",
        ),
        ("shell", "cmd", "cmd runs on Windows"),
        (
            "continue_on_error",
            "yes\nplease",
            "true or false (got $'yes\\nplease')",
        ),
    ] {
        let job = Job::new();
        let run = job.run(&[("command", "touch ran"), (input, value)]);
        assert_eq!(run.code(), Some(125), "{input}: {}", run.show());
        let first = run.lines().into_iter().next().unwrap_or_default();
        assert!(
            first.starts_with(&format!("::error::retry action: input {input}: "))
                && first.contains(says),
            "{input}: {}",
            run.show()
        );
        assert!(!job.work().join("ran").exists(), "{input}: the command ran");
    }
}

#[test]
fn args_reach_retry_as_flags() {
    let job = Job::new();
    let run = job.run(&[
        ("command", "exit 7"),
        ("max_attempts", ""),
        ("retry_wait_seconds", ""),
        (
            "args",
            "--attempts 2 --delay 0 --name 'my job' --fatal-on 7",
        ),
    ]);
    run.assert().code(7);
    assert_eq!(job.output("total_attempts"), "1");
    run.assert()
        .stderr(predicate::str::contains("job 'my job'"));
}

#[test]
fn a_cancel_stops_retry_and_the_command_and_writes_the_outputs() {
    use nix::sys::signal::{Signal, kill};
    use nix::unistd::Pid;
    let job = Job::new();
    let (mut step, _out, err) = job
        .step("run", &[("command", "echo $$ > pid; exec sleep 30")])
        .env("RETRY_BIN", bin())
        .start();
    // The file appears before its line is written: wait for the line.
    let mut pid = 0;
    assert!(within(crate::support::PATIENCE, || {
        let read = std::fs::read_to_string(job.work().join("pid")).unwrap_or_default();
        pid = read.trim().parse().unwrap_or(0);
        read.ends_with('\n') && pid > 0
    }));
    // The runner's cancel: SIGINT to the step's process, only it.
    kill(Pid::from_raw(step.id() as i32), Signal::SIGINT).unwrap();
    let status = crate::support::wait(&mut step);
    assert_eq!(status.code(), Some(143), "{:?}", err.rest());
    assert!(within(Duration::from_secs(5), || !running(pid)));
    assert_eq!(job.output("total_attempts"), "1");
    assert_eq!(job.output("exit_code"), "143");
}

/// A release of the built retry for a Linux x64 runner, as the release workflow makes it:
/// `retry-wrapper-X.Y.Z-x86_64-unknown-linux-musl.tar.gz` and its `.sha256`.
struct Release {
    version: &'static str,
    name: String,
    archive: Vec<u8>,
    sha256: String,
}

impl Release {
    fn of_the_build() -> Release {
        let version = env!("CARGO_PKG_VERSION");
        let name = format!("retry-wrapper-{version}-x86_64-unknown-linux-musl");
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join(&name)).unwrap();
        std::fs::copy(bin(), dir.path().join(&name).join("retry")).unwrap();
        let tar = Command::new("tar")
            .args(["czf", "archive.tar.gz", &name])
            .current_dir(dir.path())
            .status()
            .unwrap();
        assert!(tar.success());
        let archive = std::fs::read(dir.path().join("archive.tar.gz")).unwrap();
        let sum = Command::new("sha256sum")
            .arg("archive.tar.gz")
            .current_dir(dir.path())
            .output()
            .unwrap();
        let hash = String::from_utf8(sum.stdout).unwrap();
        let hash = hash.split_whitespace().next().unwrap();
        Release {
            version,
            sha256: format!("{hash}  {name}.tar.gz\n"),
            name,
            archive,
        }
    }

    /// Serves it as GitHub does under /releases: latest redirects to its tag's page.
    fn serve(&self) -> Server {
        let tag = format!("/releases/download/v{}/{}", self.version, self.name);
        let latest = format!("/releases/tag/v{}", self.version);
        Server::routes(vec![
            (
                "/releases/latest",
                vec![Reply::new(302).header("Location", &latest)],
            ),
            (
                &format!("{tag}.tar.gz"),
                vec![Reply::new(200).body(self.archive.clone())],
            ),
            (
                &format!("{tag}.tar.gz.sha256"),
                vec![Reply::new(200).body(self.sha256.clone())],
            ),
        ])
    }
}

#[test]
fn the_release_for_the_runner_is_downloaded_with_its_checksum_checked() {
    let release = Release::of_the_build();
    let server = release.serve();
    let job = Job::bare();
    let run = job
        .step("install", &[("download_url", &server.url("/releases"))])
        .run();
    run.assert().code(0);
    let installed = job.temp().join("retry-action").join(&release.name);
    assert_eq!(
        job.output("bin"),
        installed.join("retry").display().to_string()
    );
    assert_eq!(
        std::fs::read_to_string(job.dir.path().join("path")).unwrap(),
        format!("{}\n", installed.display())
    );
    let version = Command::new(installed.join("retry"))
        .arg("--version")
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&version.stdout),
        format!("retry {}\n", release.version)
    );
    let paths = server.request_paths();
    assert_eq!(paths[0], "/releases/latest");
    assert_eq!(paths.len(), 3, "{paths:?}");

    // At a version tag, that release, without asking for the latest.
    let server = release.serve();
    let job = Job::bare();
    let run = job
        .step("install", &[("download_url", &server.url("/releases"))])
        .env("RETRY_ACTION_REF", format!("v{}", release.version))
        .run();
    run.assert().code(0);
    assert!(!server.request_paths().iter().any(|p| p.ends_with("latest")));
}

#[test]
fn an_archive_that_does_not_match_its_checksum_is_refused() {
    let mut release = Release::of_the_build();
    release.sha256 = format!("{}  {}.tar.gz\n", "0".repeat(64), release.name);
    let server = release.serve();
    let job = Job::bare();
    let run = job
        .step("install", &[("download_url", &server.url("/releases"))])
        .run();
    run.assert().code(1);
    assert!(
        run.stdout().starts_with(&format!(
            "::error::retry action: {}.tar.gz does not match its checksum",
            release.name
        )),
        "{}",
        run.show()
    );
    assert!(job.outputs().is_empty());
    assert!(!job.temp().join("retry-action").join(&release.name).exists());
}

#[test]
fn this_retry_on_path_is_used_and_minfrins_is_not() {
    // This one: nothing downloaded (the URL leads nowhere).
    let job = Job::new();
    let run = job
        .step("install", &[("download_url", "http://127.0.0.1:9/none")])
        .run();
    run.assert().code(0);
    assert_eq!(
        job.output("bin"),
        job.bin().join("retry").display().to_string()
    );

    // minfrin's, as Debian ships it: `retry --version` says `retry 1.0.5` as this one's says
    // `retry X.Y.Z`; any option it does not know is a usage error, exit 1.
    let release = Release::of_the_build();
    let server = release.serve();
    let job = Job::bare();
    let minfrin = job.bin().join("retry");
    std::fs::write(
        &minfrin,
        "#!/bin/sh\ncase $1 in -v|--version) echo 'retry 1.0.5'; exit 0 ;; esac\n\
         echo \"retry: unrecognized option '$1'\" >&2; exit 1\n",
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&minfrin, std::fs::Permissions::from_mode(0o755)).unwrap();
    let run = job
        .step("install", &[("download_url", &server.url("/releases"))])
        .run();
    run.assert().code(0);
    assert_eq!(
        job.output("bin"),
        job.temp()
            .join("retry-action")
            .join(&release.name)
            .join("retry")
            .display()
            .to_string()
    );
}

#[test]
fn a_windows_runner_is_told_what_to_use_instead() {
    let job = Job::bare();
    let run = job.step("install", &[]).env("RUNNER_OS", "Windows").run();
    run.assert().code(1);
    assert!(
        run.stdout().starts_with("::error::retry action: retry runs on Linux and macOS runners, not on Windows: there, use nick-fields/retry"),
        "{}",
        run.show()
    );
}
