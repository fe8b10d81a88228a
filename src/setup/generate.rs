//! `--generate KIND`: the man page or a shell's completion script, rendered from the clap
//! definition (ripgrep's convention), so that packagers and `cargo install` users get them
//! from the binary they have. The checked-in files in `man/` and `completions/` are these, and
//! a test keeps them so.

use std::io::{self, Write};

use clap_complete::Shell;

pub use super::cli::Generate as Kind;

/// The rendered file: the man page in roff, or the shell's script.
pub fn render(kind: Kind) -> Vec<u8> {
    let shell = match kind {
        Kind::Man => return man_page(),
        Kind::Bash => Shell::Bash,
        Kind::Zsh => Shell::Zsh,
        Kind::Fish => Shell::Fish,
        Kind::Elvish => Shell::Elvish,
        Kind::Powershell => Shell::PowerShell,
    };
    let mut cmd = super::cli::command();
    let mut bytes = Vec::new();
    clap_complete::generate(shell, &mut cmd, "retry", &mut bytes);
    let text = String::from_utf8_lossy(&bytes).into_owned();
    match shell {
        Shell::Bash => super::completions::bash(&text),
        Shell::Fish => super::completions::fish(&text),
        _ => text,
    }
    .into_bytes()
}

/// Where the checked-in copy of each kind lives, under the crate's root.
pub fn file_name(kind: Kind) -> String {
    match kind {
        Kind::Man => "man/retry.1".into(),
        Kind::Bash => "completions/retry.bash".into(),
        Kind::Zsh => "completions/_retry".into(),
        Kind::Fish => "completions/retry.fish".into(),
        Kind::Elvish => "completions/retry.elv".into(),
        Kind::Powershell => "completions/_retry.ps1".into(),
    }
}

/// Writes `kind` to stdout.
pub fn print(kind: Kind) -> io::Result<()> {
    io::stdout().lock().write_all(&render(kind))
}

/// The man page: clap's title, synopsis, description and options, then the manual's sections
/// and the exit status, environment, files and examples from the same source as `--help`.
fn man_page() -> Vec<u8> {
    let man = clap_mangen::Man::new(super::cli::command());
    let mut out = Vec::new();
    let render = |out: &mut Vec<u8>| -> io::Result<()> {
        man.render_title(out)?;
        man.render_name_section(out)?;
        // clap_mangen's synopsis lists every flag; the help's usage line reads better.
        let mut synopsis = roff::Roff::new();
        synopsis.control("SH", ["SYNOPSIS"]);
        synopsis.text([
            roff::bold("retry"),
            roff::roman(" ["),
            roff::italic("OPTIONS"),
            roff::roman("] ["),
            roff::bold("--"),
            roff::roman("] "),
            roff::italic("COMMAND"),
            roff::roman(" ["),
            roff::italic("ARG"),
            roff::roman("]..."),
        ]);
        synopsis.to_writer(out)?;
        man.render_description_section(out)?;
        man.render_options_section(out)?;
        let mut sections = roff::Roff::new();
        let manual = super::manual::MANUAL;
        for &(title, items) in manual.iter().chain(&super::cli::SECTIONS) {
            sections.control("SH", [title]);
            for (term, text) in items {
                sections.control("TP", []);
                sections.text([roff::bold(*term)]);
                sections.text([roff::roman(*text)]);
            }
        }
        sections.to_writer(out)?;
        man.render_version_section(out)
    };
    // Writing to a Vec cannot fail.
    let _ = render(&mut out);
    out
}
