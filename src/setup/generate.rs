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
        Kind::Man => return super::man::page(),
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
