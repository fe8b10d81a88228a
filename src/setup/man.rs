//! The man page, in roff: the title, synopsis and description, every flag under its heading
//! (from the clap definition, as `--help` shows them), then the manual's sections and those
//! `--help` ends with. Text lines stay within 80 columns and no paragraph macro follows
//! another, so that `mandoc -Tlint` and `groff -ww` find nothing to say.

use clap::Arg;
use roff::{Inline, Roff, bold, italic, roman};

use super::cli;
use super::manual::MANUAL;

/// This version, and the day it was released: the date the man page shows. A constant, not
/// the day of the build, so that the page generated from one version is the same every day.
/// Set both together when the version changes (a test compares the version with Cargo's).
pub const RELEASE: (&str, &str) = ("0.1.0", "2026-11-26");

/// Text is wrapped to lines of at most this many characters, before roff's escapes.
const WIDTH: usize = 66;

/// The man page.
pub fn page() -> Vec<u8> {
    let mut cmd = cli::command();
    cmd.build();
    let (version, date) = RELEASE;
    let mut r = Roff::new();
    let source = format!("retry-wrapper {version}");
    r.control("TH", ["RETRY", "1", date, &source, "User Commands"]);
    r.control("SH", ["NAME"]);
    let about = cmd.get_about().map(|a| a.to_string()).unwrap_or_default();
    r.text([roman(format!("retry - {}", about.trim_end_matches('.')))]);
    synopsis(&mut r);
    r.control("SH", ["DESCRIPTION"]);
    let long = cmd
        .get_long_about()
        .map(|a| a.to_string())
        .unwrap_or_default();
    // The long description begins with the line NAME gives already.
    let paragraphs = long
        .split("\n\n")
        .filter(|p| p.trim().trim_end_matches('.') != about.trim_end_matches('.'));
    for (i, paragraph) in paragraphs.enumerate() {
        if i > 0 {
            r.control("PP", []);
        }
        r.text([roman(fill(paragraph))]);
    }
    options(&mut r, &cmd);
    for &(title, items) in MANUAL.iter().chain(&cli::SECTIONS) {
        r.control("SH", [title]);
        for (term, text) in items {
            r.control("TP", []);
            r.text([bold(*term)]);
            r.text([roman(fill(text))]);
        }
    }
    r.render().into_bytes()
}

/// The help's usage line: clap's own synopsis would list every flag.
fn synopsis(r: &mut Roff) {
    r.control("SH", ["SYNOPSIS"]);
    r.text([
        bold("retry"),
        roman(" ["),
        italic("OPTIONS"),
        roman("] ["),
        bold("--"),
        roman("] "),
        italic("COMMAND"),
        roman(" ["),
        italic("ARG"),
        roman("]..."),
    ]);
}

/// OPTIONS: the flags without a heading first, then one subsection a heading, in the order of
/// the definition.
fn options(r: &mut Roff, cmd: &clap::Command) {
    let shown: Vec<&Arg> = cmd.get_arguments().filter(|a| !a.is_hide_set()).collect();
    let mut headings: Vec<Option<&str>> = Vec::new();
    for arg in &shown {
        if !headings.contains(&arg.get_help_heading()) {
            headings.push(arg.get_help_heading());
        }
    }
    // The flags without a heading come first, under OPTIONS itself.
    headings.sort_by_key(Option::is_some);
    r.control("SH", ["OPTIONS"]);
    for heading in headings {
        if let Some(title) = heading {
            r.control("SS", [title]);
        }
        for arg in shown.iter().filter(|a| a.get_help_heading() == heading) {
            option(r, arg);
        }
    }
}

/// One flag: its names and value, then its help, its default and its values.
fn option(r: &mut Roff, arg: &Arg) {
    let mut header: Vec<Inline> = Vec::new();
    if arg.is_positional() {
        header.extend([italic("COMMAND"), roman(" ["), italic("ARG"), roman("]...")]);
    } else {
        let mut names = Vec::new();
        names.extend(arg.get_short().map(|s| format!("-{s}")));
        names.extend(arg.get_long().map(|l| format!("--{l}")));
        for (i, name) in names.into_iter().enumerate() {
            if i > 0 {
                header.push(roman(", "));
            }
            header.push(bold(name));
        }
        if arg.get_action().takes_values()
            && let Some(value) = arg.get_value_names().and_then(|v| v.first())
        {
            header.extend([roman(" "), italic(value.to_string())]);
        }
    }
    r.control("TP", []);
    r.text(header);
    let help = arg
        .get_long_help()
        .or_else(|| arg.get_help())
        .map(|h| h.to_string())
        .unwrap_or_default();
    let mut text = help.trim_end_matches('.').to_string();
    let defaults: Vec<String> = arg
        .get_default_values()
        .iter()
        .map(|v| v.to_string_lossy().into_owned())
        .collect();
    if arg.get_action().takes_values() && !defaults.is_empty() && !text.contains("[default:") {
        text.push_str(&format!(" [default: {}]", defaults.join(",")));
    }
    r.text([roman(fill(&format!("{text}.")))]);
    if arg.is_hide_possible_values_set() {
        return;
    }
    let values: Vec<_> = arg
        .get_possible_values()
        .into_iter()
        .filter(|v| !v.is_hide_set())
        .collect();
    if values.iter().any(|v| v.get_help().is_some()) {
        r.control("RS", []);
        for value in &values {
            r.control("TP", []);
            r.text([bold(value.get_name())]);
            let help = value.get_help().map(|h| h.to_string()).unwrap_or_default();
            r.text([roman(fill(&help))]);
        }
        r.control("RE", []);
    } else if !values.is_empty() {
        let names: Vec<&str> = values.iter().map(|v| v.get_name()).collect();
        r.text([roman(fill(&format!("One of: {}.", names.join(", "))))]);
    }
}

/// Text as lines of at most [`WIDTH`] characters, broken between words (roff fills them
/// again; the page's source stays readable, and within what mandoc's style check allows).
fn fill(text: &str) -> String {
    let mut out = String::new();
    let mut line = 0;
    for word in text.split_whitespace() {
        let width = word.chars().count();
        if line > 0 && line + 1 + width > WIDTH {
            out.push('\n');
            line = 0;
        } else if line > 0 {
            out.push(' ');
            line += 1;
        }
        out.push_str(word);
        line += width;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_release_date_is_set_with_the_version() {
        assert_eq!(
            RELEASE.0,
            env!("CARGO_PKG_VERSION"),
            "a new version needs its release date in RELEASE"
        );
    }

    #[test]
    fn text_is_filled_between_words() {
        let text = "word ".repeat(40);
        let filled = fill(&text);
        assert!(filled.lines().all(|l| l.chars().count() <= WIDTH));
        assert_eq!(filled.split_whitespace().count(), 40);
        assert_eq!(fill("a  b\nc"), "a b c");
    }

    /// Every flag that --help shows has a description in the man page.
    #[test]
    fn every_flag_is_described() {
        let page = String::from_utf8(page()).expect("UTF-8 roff");
        let mut cmd = cli::command();
        cmd.build();
        for arg in cmd.get_arguments().filter(|a| !a.is_hide_set()) {
            let Some(long) = arg.get_long() else { continue };
            let name = format!("\\fB\\-\\-{}\\fR", long.replace('-', "\\-"));
            let at = page
                .find(&name)
                .unwrap_or_else(|| panic!("--{long} is not in the page"));
            let next = page[at..].lines().nth(1).unwrap_or_default();
            assert!(
                !next.is_empty() && !next.starts_with('.'),
                "--{long} has no description: {next:?}"
            );
        }
    }
}
