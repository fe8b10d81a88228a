//! docs/migration.md says what other retry tools' settings are with this retry's flags, in
//! tables. Each `retry` command on it is run with `--explain` and what it resolves to checked
//! against what its row says (`TRANSLATIONS`), so that no row claims a meaning its flags do
//! not have; and every such command on the page has its entry there.

use super::{Place, root};

/// The page of translations from other retry tools.
const MIGRATION: &str = "docs/migration.md";

/// The `retry` commands of docs/migration.md, in the page's order, and what `--explain` shows
/// for each: `(row, text)` is a row of the policy whose value (or source, as `preset curl`)
/// is that text; `waits`, the schedule's wait before each retry (`1s`, or `0ms-1s` when drawn
/// between the two), joined by commas; `retried` and `not retried`, statuses the status lists
/// retry or do not.
const TRANSLATIONS: &[(&str, &[(&str, &str)])] = &[
    // minfrin's retry
    (
        "retry -t 5 -d 2 -b constant -j none --stdout hold -- make",
        &[
            ("attempts", "5 (4 retries)"),
            ("waits", "2s,2s,2s,2s"),
            ("stdout", "hold"),
        ],
    ),
    (
        "retry -t 3 -d 10 -b constant -j none --stdout hold -- make",
        &[
            ("attempts", "3 (2 retries)"),
            ("waits", "10s,10s"),
            ("stdout", "hold"),
        ],
    ),
    (
        "retry --forever -d 10 -b constant -j none --stdout hold -- make",
        &[
            ("attempts", "unlimited (--forever)"),
            ("backoff", "constant"),
            ("delay", "10s"),
            ("jitter", "none"),
            ("stdout", "hold"),
        ],
    ),
    // curl --retry
    (
        "retry --retries 5 --preset curl --hints -- curl -fsS -D {hints} URL",
        &[
            ("attempts", "6 (5 retries)"),
            ("retry-on", "preset curl"),
            ("hints", "flag"),
        ],
    ),
    (
        "retry --preset curl --hints -- curl -fsS -D {hints} URL",
        &[
            ("retried", "5,6,7,12,28,35,52,55,56"),
            ("retry-on-http", "408,425,429,500,502-504"),
            ("fatal-on-http", "every other 4xx"),
        ],
    ),
    (
        "retry --retries 5 --max-delay 10m -j none --preset curl --hints -- curl -fsS -D {hints} URL",
        &[("waits", "1s,2s,4s,8s,16s"), ("max-delay", "10m")],
    ),
    (
        "retry --retry-after-max 2m --preset curl --hints -- curl -fsS -D {hints} URL",
        &[("retry-after-max", "2m")],
    ),
    (
        "retry -d 5 -b constant -j none --preset curl --hints -- curl -fsS -D {hints} URL",
        &[("waits", "5s,5s,5s,5s")],
    ),
    (
        "retry --max-time 2m --preset curl --hints -- curl -fsS -D {hints} URL",
        &[("max-time", "2m")],
    ),
    (
        "retry --preset curl --hints -- curl -fsS -D {hints} URL",
        &[("retried", "7")],
    ),
    (
        "retry --retries 5 -- curl -fsS URL",
        &[
            ("attempts", "6 (5 retries)"),
            ("retried", "1,2,3,6,7,22,28,60,78,255"),
            ("not retried", "126,127"),
        ],
    ),
    // The nick-fields/retry GitHub Action
    (
        "retry -n 3 --attempt-timeout 10m -d 10 -b constant -j none -- npm ci",
        &[
            ("attempts", "3 (2 retries)"),
            ("attempt-timeout", "10m"),
            ("waits", "10s,10s"),
        ],
    ),
    ("retry -n 3 -- COMMAND", &[("attempts", "3 (2 retries)")]),
    (
        "retry --attempt-timeout 10m -- COMMAND",
        &[
            ("attempt-timeout", "10m"),
            ("on timeout", "SIGTERM, then SIGKILL after 10s"),
        ],
    ),
    (
        "retry --attempt-timeout 15s -- COMMAND",
        &[("attempt-timeout", "15s")],
    ),
    (
        "retry -d 10 -b constant -j none -- COMMAND",
        &[("waits", "10s,10s,10s,10s")],
    ),
    (
        "retry --attempt-timeout 10m -- COMMAND",
        &[("retried", "1,124")],
    ),
    (
        "retry --attempt-timeout 10m --fatal-on 124 -- COMMAND",
        &[("retried", "1"), ("not retried", "124")],
    ),
    (
        "retry --attempt-timeout 10m --retry-on 124 -- COMMAND",
        &[("retried", "124"), ("not retried", "1,2")],
    ),
    (
        "retry --retry-on 2 -- COMMAND",
        &[("retried", "2"), ("not retried", "1,3")],
    ),
    (
        "retry --retry-on 2,75 -- COMMAND",
        &[("retried", "2,75"), ("not retried", "1")],
    ),
    ("retry -- npm ci", &[("command", "npm ci")]),
    (
        "retry -- bash -c 'npm ci && npm test'",
        &[("command", "bash -c 'npm ci && npm test'")],
    ),
    (
        "retry --on-retry ./cleanup.sh -- COMMAND",
        &[("on-retry", "sh -c ./cleanup.sh")],
    ),
    (
        r#"retry -- bash -c 'if [ "$RETRY_ATTEMPT" -eq 1 ]; then ./build.sh; else ./resume.sh; fi'"#,
        &[(
            "command",
            r#"bash -c 'if [ "$RETRY_ATTEMPT" -eq 1 ]; then ./build.sh; else ./resume.sh; fi'"#,
        )],
    ),
    (
        r#"retry --on-retry 'echo "::warning::attempt $RETRY_ATTEMPT failed: $RETRY_STATUS"' -- COMMAND"#,
        &[(
            "on-retry",
            r#"sh -c 'echo "::warning::attempt $RETRY_ATTEMPT failed: $RETRY_STATUS"'"#,
        )],
    ),
    (
        "retry --summary retry.json -- COMMAND",
        &[("summary", "retry.json")],
    ),
    // Python's tenacity
    ("retry -n 5 -- COMMAND", &[("attempts", "5 (4 retries)")]),
    (
        "retry --forever --max-time 60 -- COMMAND",
        &[("attempts", "unlimited (--forever)"), ("max-time", "1m")],
    ),
    (
        "retry -n 5 --max-time 60 -- COMMAND",
        &[("attempts", "5 (4 retries)"), ("max-time", "1m")],
    ),
    (
        "retry -d 2 -b constant -j none -- COMMAND",
        &[("waits", "2s,2s,2s,2s")],
    ),
    ("retry -d 0 -- COMMAND", &[("waits", "0ms,0ms,0ms,0ms")]),
    (
        "retry -n 6 -d 1 --max-delay 10 -j none -- COMMAND",
        &[("waits", "1s,2s,4s,8s,10s")],
    ),
    (
        "retry -n 7 --delays 4,4,4,8,10 -j none -- COMMAND",
        &[("waits", "4s,4s,4s,8s,10s,10s")],
    ),
    (
        "retry -d 1 --max-delay 60 -- COMMAND",
        &[
            ("jitter", "full"),
            ("max-delay", "1m"),
            ("waits", "0ms-1s,0ms-2s,0ms-4s,0ms-8s"),
        ],
    ),
    (
        "retry --retry-on 1,75 -- COMMAND",
        &[("retried", "1,75"), ("not retried", "2,3")],
    ),
    (
        "retry --retry-if-output 'not ready' -- COMMAND",
        &[("retry-if-output", "'not ready'")],
    ),
    (
        "retry --on-retry ./notify.sh -- COMMAND",
        &[("on-retry", "sh -c ./notify.sh")],
    ),
    (
        "retry --on-giveup ./report.sh -- COMMAND",
        &[("on-giveup", "sh -c ./report.sh")],
    ),
];

/// The cells of a table's row, `\|` being a `|` within one.
fn cells(line: &str) -> Vec<String> {
    let mut cells = vec![String::new()];
    let mut chars = line.trim().trim_matches('|').chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' if chars.peek() == Some(&'|') => {
                chars.next();
                cells.last_mut().expect("a cell").push('|');
            }
            '|' => cells.push(String::new()),
            _ => cells.last_mut().expect("a cell").push(c),
        }
    }
    cells.iter().map(|c| c.trim().to_string()).collect()
}

/// The code spans of a text that begin `retry `.
fn retry_commands(text: &str) -> Vec<String> {
    text.split('`')
        .skip(1)
        .step_by(2)
        .filter(|span| span.starts_with("retry "))
        .map(str::to_string)
        .collect()
}

/// Every `retry` command of a page outside its fenced blocks (which `examples!` runs): in a
/// table, those of the column headed `here` (the other columns hold the other tools' own),
/// and every one in its prose. A table without a `here` column, or a code span that a line
/// break cuts in two, fails: neither could be checked.
fn translations(page: &str) -> Vec<String> {
    let text = std::fs::read_to_string(root().join(page)).expect("the page");
    let mut found = Vec::new();
    let mut fenced = false;
    let mut here: Option<usize> = None;
    for (n, line) in text.lines().enumerate() {
        if line.starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        assert!(
            line.matches('`').count() % 2 == 0,
            "{page}:{}: a code span cut by a line break: {line}",
            n + 1
        );
        if !line.starts_with('|') {
            here = None;
            found.extend(retry_commands(line));
            continue;
        }
        let row = cells(line);
        match here {
            None => {
                here = Some(row.iter().position(|c| c == "here").unwrap_or_else(|| {
                    panic!("{page}:{}: a table without a `here` column", n + 1)
                }));
            }
            Some(column) => {
                if let Some(cell) = row.get(column) {
                    found.extend(retry_commands(cell));
                }
            }
        }
    }
    found
}

/// A row of the policy `--explain` shows: its value and where the value came from.
fn policy_row<'a>(text: &'a str, name: &str) -> Option<(&'a str, &'a str)> {
    let line = text.lines().find(|l| {
        l.strip_prefix("  ")
            .and_then(|l| l.strip_prefix(name))
            .is_some_and(|r| r.starts_with("  "))
    })?;
    let rest = line.trim_start().strip_prefix(name)?.trim();
    // The command's row has no source.
    Some(match rest.rsplit_once("  (") {
        Some((value, source)) => (value.trim(), source.trim_end_matches(')')),
        None => (rest, ""),
    })
}

/// The wait before each retry, from the schedule `--explain` shows: `4s` for a fixed one,
/// `0ms-4s` for one drawn between the two.
fn waits(text: &str) -> String {
    text.lines()
        .skip_while(|l| !l.starts_with("Schedule"))
        .filter_map(|l| {
            let words: Vec<&str> = l.split_whitespace().collect();
            match words[..] {
                [n, min, max] if n.parse::<u32>().is_ok() => Some(if min == max {
                    max.to_string()
                } else {
                    format!("{min}-{max}")
                }),
                _ => None,
            }
        })
        .collect::<Vec<_>>()
        .join(",")
}

/// Whether the status lists `--explain` shows retry a status: not fatal, and retryable.
fn retried(text: &str, status: u16) -> bool {
    let listed = |name: &str| {
        let (value, _) = policy_row(text, name).unwrap_or_else(|| panic!("no {name} in {text}"));
        value == "every other failure"
            || value.split(',').any(|part| match part.split_once('-') {
                Some((lo, hi)) => (lo.parse().expect("a status")..=hi.parse().expect("a status"))
                    .contains(&status),
                None => part.parse::<u16>().ok() == Some(status),
            })
    };
    listed("retry-on") && !listed("fatal-on")
}

/// What is wrong with what `--explain` shows for a command, against what its row says.
fn mistranslated(text: &str, expected: &[(&str, &str)]) -> Vec<String> {
    let mut wrong = Vec::new();
    for (what, says) in expected {
        let statuses = || says.split(',').map(|s| s.parse::<u16>().expect("a status"));
        match *what {
            "waits" => {
                let waits = waits(text);
                if waits != *says {
                    wrong.push(format!("waits {waits}, not {says}"));
                }
            }
            "retried" => {
                for s in statuses().filter(|s| !retried(text, *s)) {
                    wrong.push(format!("{s} is not retried"));
                }
            }
            "not retried" => {
                for s in statuses().filter(|s| retried(text, *s)) {
                    wrong.push(format!("{s} is retried"));
                }
            }
            name => match policy_row(text, name) {
                Some((value, source)) if value == *says || source == *says => {}
                shown => wrong.push(format!("{name} is {shown:?}, not {says}")),
            },
        }
    }
    wrong
}

#[test]
fn every_retry_command_of_the_migration_page_is_checked() {
    let listed: Vec<&str> = TRANSLATIONS.iter().map(|(c, _)| *c).collect();
    assert_eq!(
        translations(MIGRATION),
        listed,
        "the retry commands of {MIGRATION}, and those TRANSLATIONS lists: give each what its row says"
    );
}

#[test]
fn the_migration_page_translates_as_its_rows_say() {
    let place = Place::new();
    let mut wrong = Vec::new();
    for (command, expected) in TRANSLATIONS {
        let explain = command.replacen("retry ", "retry --explain ", 1);
        let (status, out) = place.sh(&explain);
        let text = out.join("\n");
        if !status.success() {
            wrong.push(format!("`{explain}` ended {status}:\n{text}"));
            continue;
        }
        let mistakes = mistranslated(&text, expected);
        if !mistakes.is_empty() {
            wrong.push(format!("`{explain}`: {}\n{text}", mistakes.join("; ")));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n\n"));
}
