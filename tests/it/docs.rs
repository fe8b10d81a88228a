//! The examples of README.md and docs/ run as written, so that none goes stale: every fenced
//! block with `$ ` lines is run, a block at a time, each line through `sh` with the built
//! retry first on PATH, in a working folder and a home of the block's own (no config file, no
//! state), stdout and stderr together as a terminal shows them. What follows a `$` line is
//! what it prints, compared once what differs from run to run is set aside: durations, times
//! of day, long fractions, the home folder's path, curl's own wording (which its version
//! changes) and the width of aligned columns. A line `...` stands for any number of lines.
//!
//! A block's text is shown as written in the page; nothing here rewrites it. Each example is a
//! test of its own (`examples!`), and one test checks that every example has one.
//!
//! docs/migration.md says other tools' settings with this retry's flags, in tables: each
//! `retry` command there is run with `--explain`, and what it resolves to is checked against
//! what its row says (`migration`).

use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};

use regex::Regex;
use tempfile::TempDir;

use crate::support;

mod migration;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// One `$` line of a page and what it prints.
struct Step {
    command: String,
    shown: Vec<String>,
}

/// A fenced block with `$` lines: where it is, and its steps.
struct Example {
    page: String,
    line: usize,
    steps: Vec<Step>,
}

/// README.md and every page of the guide.
fn pages() -> Vec<PathBuf> {
    let mut pages = vec![root().join("README.md")];
    let mut guide: Vec<PathBuf> = std::fs::read_dir(root().join("docs"))
        .expect("docs/")
        .map(|e| e.expect("a page").path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    guide.sort();
    pages.extend(guide);
    pages
}

fn examples(page: &Path) -> Vec<Example> {
    let text = std::fs::read_to_string(page).expect("a page");
    let name = page
        .strip_prefix(root())
        .unwrap_or(page)
        .display()
        .to_string();
    let mut found = Vec::new();
    let mut block: Option<(usize, Vec<&str>)> = None;
    for (n, line) in text.lines().enumerate() {
        if line.starts_with("```") {
            match block.take() {
                None => block = Some((n + 2, Vec::new())),
                Some((start, lines)) => {
                    if let Some(example) = steps(&lines) {
                        found.push(Example {
                            page: name.clone(),
                            line: start,
                            steps: example,
                        });
                    }
                }
            }
        } else if let Some((_, lines)) = block.as_mut() {
            lines.push(line);
        }
    }
    found
}

/// A block's `$` lines and what follows each; `None` for a block without them.
fn steps(lines: &[&str]) -> Option<Vec<Step>> {
    if !lines.first().is_some_and(|l| l.starts_with("$ ")) {
        return None;
    }
    let mut steps: Vec<Step> = Vec::new();
    for line in lines {
        match line.strip_prefix("$ ") {
            Some(command) => steps.push(Step {
                command: command.to_string(),
                shown: Vec::new(),
            }),
            None => steps
                .last_mut()
                .expect("a step")
                .shown
                .push(line.to_string()),
        }
    }
    Some(steps)
}

/// What differs from run to run, set aside in both texts.
struct Aside {
    rules: Vec<(Regex, &'static str)>,
    home: String,
}

impl Aside {
    fn new(home: &Path) -> Aside {
        // [0-9] and (?-u:\b), not \d and \b: the tests link retry's regex, built without the
        // Unicode tables those need.
        let rule = |pattern: &str, with| (Regex::new(pattern).expect("a pattern"), with);
        Aside {
            rules: vec![
                // 2026-11-23T23:01:35Z, 2026-11-21T02:30:04.120+01:00
                rule(
                    r"[0-9]{4}-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]:[0-9][0-9](\.[0-9]+)?(Z|[+-][0-9][0-9]:[0-9][0-9])",
                    "<time>",
                ),
                // 47ms, 54.46s, 1m 30s, 2.5h: one or more parts.
                rule(
                    r"(?-u:\b)[0-9]+(\.[0-9]+)?(ms|s|m|h|days?)( [0-9]+(\.[0-9]+)?(ms|s|m|h))*(?-u:\b)",
                    "<duration>",
                ),
                // A duration, a timestamp or a mean in a report: 0.084, 1795292163.255202.
                rule(r"(?-u:\b)[0-9]+\.[0-9]{3,}(?-u:\b)", "<number>"),
                // A metric in seconds: a duration, which may end in a zero left out (0.16).
                rule(r"(_seconds\{[^}]*\}) [0-9]+(\.[0-9]+)?$", "$1 <number>"),
                // The JSON summary's milliseconds.
                rule(r#""([a-z_]*_ms)":[0-9]+"#, "\"$1\":<number>"),
                // curl's message after its exit status changes with its version.
                rule(r"^curl: \(([0-9]+)\) .*", "curl: ($1) <message>"),
                // The width of aligned columns.
                rule(r" {2,}", " "),
            ],
            home: home.display().to_string(),
        }
    }

    fn apply(&self, line: &str) -> String {
        let mut line = line.trim_end().replace(&self.home, "~");
        // A page shows a home as /home/NAME.
        line = Regex::new(r"/home/[a-z]+")
            .expect("a pattern")
            .replace_all(&line, "~")
            .into_owned();
        for (pattern, with) in &self.rules {
            line = pattern.replace_all(&line, *with).into_owned();
        }
        line
    }
}

/// Whether `printed` is what `shown` shows, `...` standing for any lines.
fn matches(shown: &[String], printed: &[String]) -> bool {
    match shown.split_first() {
        None => printed.is_empty(),
        Some((first, rest)) if first == "..." => {
            (0..=printed.len()).any(|skip| matches(rest, &printed[skip..]))
        }
        Some((first, rest)) => printed
            .split_first()
            .is_some_and(|(line, others)| line == first && matches(rest, others)),
    }
}

/// A working folder and a home of their own (no config file, no state), with the built retry
/// first on PATH: where a page's commands run, as a reader's shell would run them.
struct Place {
    _dir: TempDir,
    work: PathBuf,
    home: PathBuf,
    path: std::ffi::OsString,
}

impl Place {
    fn new() -> Place {
        let dir = TempDir::new().expect("temp dir");
        let (work, home) = (dir.path().join("work"), dir.path().join("home"));
        std::fs::create_dir(&work).expect("work");
        std::fs::create_dir(&home).expect("home");
        let bin = support::bin()
            .parent()
            .expect("the binary's folder")
            .to_path_buf();
        let path = std::env::var_os("PATH").unwrap_or_default();
        let path = std::env::join_paths(std::iter::once(bin).chain(std::env::split_paths(&path)))
            .expect("PATH");
        Place {
            _dir: dir,
            work,
            home,
            path,
        }
    }

    /// Runs `command` through `sh`: its status, and its stdout and stderr together, as a
    /// terminal shows them.
    fn sh(&self, command: &str) -> (ExitStatus, Vec<String>) {
        let mut sh = Command::new("sh");
        support::hermetic(&mut sh);
        sh.arg("-c")
            .arg(format!("exec 2>&1\n{command}"))
            .current_dir(&self.work)
            .env("PATH", &self.path)
            .env("HOME", &self.home)
            .env("XDG_CONFIG_HOME", self.home.join(".config"))
            .env_remove("XDG_STATE_HOME")
            .env_remove("RETRY_STATE_DIR")
            .env_remove("RETRY_STATE_URL")
            .env_remove("COLUMNS")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        let mut child = sh.spawn().expect("start sh");
        let out = support::Lines::of(child.stdout.take().expect("stdout"));
        let status = support::wait(&mut child);
        (status, out.rest())
    }
}

/// Runs a block's steps in a place of its own; `Err` says where and how one differs.
fn run(example: &Example) -> Result<(), String> {
    let place = Place::new();
    let aside = Aside::new(&place.home);
    for step in &example.steps {
        let (_, out) = place.sh(&step.command);
        let printed: Vec<String> = out.iter().map(|l| aside.apply(l)).collect();
        let shown: Vec<String> = step
            .shown
            .iter()
            .map(|l| {
                if l == "..." {
                    l.clone()
                } else {
                    aside.apply(l)
                }
            })
            .collect();
        if !matches(&shown, &printed) {
            return Err(format!(
                "{}:{}: `$ {}` prints, with what varies set aside:\n{}\n\nbut the page shows:\n{}",
                example.page,
                example.line,
                step.command,
                printed.join("\n"),
                shown.join("\n")
            ));
        }
    }
    Ok(())
}

/// One test per example, so that they run side by side and a stale one is named by its test:
/// `name: "page" n` is the page's example `n` (from 0, in the page's order).
macro_rules! examples {
    ($($name:ident: $page:literal $n:literal,)*) => {
        $(
            #[test]
            fn $name() {
                prints_what_it_shows($page, $n);
            }
        )*
        /// The examples that have a test.
        const TESTED: &[(&str, usize)] = &[$(($page, $n)),*];
    };
}

examples! {
    readme_a_breaker_opens_across_runs: "README.md" 0,
    readme_a_fleet_through_an_outage: "README.md" 1,
    hooks_and_metrics_the_metrics_file: "docs/hooks-and-metrics.md" 0,
    hooks_and_metrics_the_summary: "docs/hooks-and-metrics.md" 1,
    logs_output_on_failure: "docs/logs.md" 0,
    migration_explain_checks_a_translation: "docs/migration.md" 0,
    policy_reset_after: "docs/policy.md" 0,
    shared_state_the_breaker: "docs/shared-state.md" 0,
    shared_state_list_keys: "docs/shared-state.md" 1,
    shared_state_adaptive_backoff: "docs/shared-state.md" 2,
    simulator_the_table: "docs/simulator.md" 0,
    simulator_json_lines: "docs/simulator.md" 1,
    simulator_adaptive_backoff: "docs/simulator.md" 2,
}

/// Runs the example `n` of `page`, failing with where and how it differs.
fn prints_what_it_shows(page: &str, n: usize) {
    if !support::have("curl", "apt-get install curl") {
        return;
    }
    let example = examples(&root().join(page))
        .into_iter()
        .nth(n)
        .unwrap_or_else(|| panic!("{page} has no example {n}"));
    if let Err(stale) = run(&example) {
        panic!("{stale}");
    }
}

#[test]
fn every_example_in_the_readme_and_the_guide_has_a_test() {
    let found: Vec<(String, usize)> = pages()
        .iter()
        .flat_map(|p| examples(p).into_iter().enumerate())
        .map(|(n, e)| (e.page, n))
        .collect();
    let tested: Vec<(String, usize)> = TESTED.iter().map(|(p, n)| (p.to_string(), *n)).collect();
    assert_eq!(
        found, tested,
        "the pages' examples, and those `examples!` lists: give each its line there"
    );
}

#[test]
fn what_varies_is_set_aside_and_nothing_else() {
    let aside = Aside::new(Path::new("/tmp/home"));
    assert_eq!(
        aside.apply(
            "retry: attempt 1/3 failed: exit status 7 after 47ms (retryable); retrying in 1m 30s"
        ),
        "retry: attempt 1/3 failed: exit status 7 after <duration> (retryable); retrying in <duration>"
    );
    assert_eq!(
        aside.apply(
            "  api   open until 2026-11-23T22:48:07Z     0     6.0  /home/ops/x /tmp/home/y"
        ),
        " api open until <time> 0 6.0 ~/x ~/y"
    );
    assert_eq!(
        aside.apply("curl: (7) Failed to connect to 127.0.0.1 port 9 after 0 ms"),
        "curl: (7) <message>"
    );
    let lines = |l: &[&str]| l.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    assert!(matches(
        &lines(&["a", "...", "d"]),
        &lines(&["a", "b", "c", "d"])
    ));
    assert!(matches(&lines(&["a", "...", "d"]), &lines(&["a", "d"])));
    assert!(!matches(&lines(&["a", "...", "d"]), &lines(&["a", "b"])));
    assert!(!matches(&lines(&["a", "b"]), &lines(&["a", "c"])));
}
