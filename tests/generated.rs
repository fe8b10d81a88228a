//! The completions and the man page are generated from the clap definition and checked in;
//! this test fails when they are stale. `RETRY_BLESS=1 cargo test --test generated` rewrites them.

use std::path::{Path, PathBuf};

use clap_complete::{Generator, Shell};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Every generated file: its path under the crate root and its rendered bytes.
fn rendered() -> Vec<(PathBuf, Vec<u8>)> {
    let mut files = Vec::new();
    for shell in [
        Shell::Bash,
        Shell::Zsh,
        Shell::Fish,
        Shell::Elvish,
        Shell::PowerShell,
    ] {
        let mut cmd = retry::cli::command();
        let mut bytes = Vec::new();
        clap_complete::generate(shell, &mut cmd, "retry", &mut bytes);
        let name = shell.file_name("retry");
        files.push((Path::new("completions").join(name), bytes));
    }
    let mut man = Vec::new();
    clap_mangen::Man::new(retry::cli::command())
        .render(&mut man)
        .expect("render the man page");
    files.push((Path::new("man").join("retry.1"), man));
    files
}

#[test]
fn completions_and_man_page_are_up_to_date() {
    let bless = std::env::var_os("RETRY_BLESS").is_some();
    let mut stale = Vec::new();
    for (path, bytes) in rendered() {
        let full = root().join(&path);
        if bless {
            std::fs::create_dir_all(full.parent().expect("a parent folder"))
                .expect("create folder");
            std::fs::write(&full, &bytes).expect("write generated file");
        } else if std::fs::read(&full).ok().as_deref() != Some(&bytes[..]) {
            stale.push(path.display().to_string());
        }
    }
    assert!(
        stale.is_empty(),
        "stale generated files: {stale:?}; run `RETRY_BLESS=1 cargo test --test generated`"
    );
}

#[test]
fn the_man_page_has_the_exit_status_and_environment() {
    let (_, man) = rendered().pop().expect("the man page is rendered last");
    let man = String::from_utf8(man).expect("UTF-8 roff");
    for needle in [
        "Exit status",
        "RETRY_IDEMPOTENCY_KEY",
        "\\-\\-max\\-time",
        "Examples",
    ] {
        assert!(man.contains(needle), "man page lacks {needle}");
    }
}
