//! `--generate KIND`: the man page or a shell's completion script, rendered from the clap
//! definition (ripgrep's convention), so that packagers and `cargo install` users get them
//! from the binary they have. The checked-in files in `man/` and `completions/` are these, and
//! a test keeps them so.

use clap_complete::Shell;

pub use super::cli::Generate as Kind;

/// The rendered file: the man page in roff, or the shell's script.
pub fn render(kind: Kind) -> Vec<u8> {
    let shell = match kind {
        Kind::Man => return super::man::page(),
        Kind::Bash => return super::completions::bash().into_bytes(),
        Kind::Zsh => return super::completions::zsh().into_bytes(),
        Kind::Fish => return super::completions::fish().into_bytes(),
        Kind::Elvish => Shell::Elvish,
        Kind::Powershell => Shell::PowerShell,
    };
    let mut cmd = super::cli::command();
    let mut bytes = Vec::new();
    clap_complete::generate(shell, &mut cmd, "retry", &mut bytes);
    // clap_complete's elvish and PowerShell scripts offer hidden flags too: minfrin's, which
    // are refused. Each is a line with its help, quoted as both shells quote ('' for ').
    let hidden: Vec<String> = cmd
        .get_arguments()
        .filter(|a| a.is_hide_set())
        .filter_map(|a| a.get_help())
        .map(|h| h.to_string().replace('\'', "''"))
        .collect();
    let text = String::from_utf8_lossy(&bytes);
    let mut kept = String::new();
    for line in text.split_inclusive('\n') {
        if !hidden.iter().any(|h| line.contains(h.as_str())) {
            kept.push_str(line);
        }
    }
    kept.into_bytes()
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
