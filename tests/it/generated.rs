//! The completions and the man page are generated from the clap definition, and the Redis
//! script's SHA1 from its text; all are checked in, and this test fails when they are stale.
//! `RETRY_BLESS=1 cargo test --test it generated` rewrites them.

use std::path::{Path, PathBuf};

use crate::support;
use crate::support::Launch;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Every generated file: its path under the crate root and its rendered bytes, as
/// `retry --generate KIND` writes it; the man page last.
fn rendered() -> Vec<(PathBuf, Vec<u8>)> {
    use retry::setup::generate::{Kind, file_name, render};
    let mut files = Vec::new();
    for kind in [
        Kind::Bash,
        Kind::Zsh,
        Kind::Fish,
        Kind::Elvish,
        Kind::Powershell,
    ] {
        files.push((PathBuf::from(file_name(kind)), render(kind)));
    }
    // The SHA1 that EVALSHA names the Redis script by, so that no run computes it.
    let sha1 = sha1_hex(retry::state::redis::SCRIPT.as_bytes()).into_bytes();
    files.push((Path::new("src/state").join("redis.lua.sha1"), sha1));
    // What each preset's tool was seen to print, and what the preset makes of it.
    files.push((
        Path::new("docs").join("presets.md"),
        retry::setup::presets::seen_page().into_bytes(),
    ));
    files.push((PathBuf::from(file_name(Kind::Man)), render(Kind::Man)));
    files
}

/// SHA-1 (FIPS 180-4) in lower-case hex, as Redis names a script: the tests' own, since
/// nothing else in the build computes one.
fn sha1_hex(data: &[u8]) -> String {
    let mut h: [u32; 5] = [0x67452301, 0xEFCDAB89, 0x98BADCFE, 0x10325476, 0xC3D2E1F0];
    let mut message = data.to_vec();
    message.push(0x80);
    while message.len() % 64 != 56 {
        message.push(0);
    }
    message.extend_from_slice(&(data.len() as u64 * 8).to_be_bytes());
    for block in message.chunks(64) {
        let mut w = [0u32; 80];
        for (i, word) in block.chunks(4).enumerate() {
            w[i] = u32::from_be_bytes([word[0], word[1], word[2], word[3]]);
        }
        for i in 16..80 {
            w[i] = (w[i - 3] ^ w[i - 8] ^ w[i - 14] ^ w[i - 16]).rotate_left(1);
        }
        let [mut a, mut b, mut c, mut d, mut e] = h;
        for (i, wi) in w.iter().enumerate() {
            let (f, k) = match i {
                0..=19 => ((b & c) | (!b & d), 0x5A827999),
                20..=39 => (b ^ c ^ d, 0x6ED9EBA1),
                40..=59 => ((b & c) | (b & d) | (c & d), 0x8F1BBCDC),
                _ => (b ^ c ^ d, 0xCA62C1D6),
            };
            let t = a
                .rotate_left(5)
                .wrapping_add(f)
                .wrapping_add(e)
                .wrapping_add(k)
                .wrapping_add(*wi);
            (e, d, c, b, a) = (d, c, b.rotate_left(30), a, t);
        }
        for (x, y) in h.iter_mut().zip([a, b, c, d, e]) {
            *x = x.wrapping_add(y);
        }
    }
    h.iter().map(|x| format!("{x:08x}")).collect()
}

#[test]
fn sha1_is_sha1() {
    assert_eq!(sha1_hex(b""), "da39a3ee5e6b4b0d3255bfef95601890afd80709");
    assert_eq!(
        sha1_hex(b"The quick brown fox jumps over the lazy dog"),
        "2fd4e1c67a2d28fced849ee1bb76e7391b93eb12"
    );
}

/// What `retry --generate KIND` prints is the checked-in file.
#[test]
fn generate_prints_the_checked_in_files() {
    use clap::ValueEnum;
    use retry::setup::generate::{Kind, file_name};
    for kind in Kind::value_variants() {
        let name = kind.to_possible_value().expect("a name");
        let out = support::retry().args(["--generate", name.get_name()]).run();
        assert_eq!(out.status.code(), Some(0), "{kind:?}");
        let path = file_name(*kind);
        let file = std::fs::read(root().join(&path)).expect("the checked-in file");
        assert!(
            out.stdout == file,
            "--generate {kind:?} differs from {path}"
        );
    }
    let out = support::retry().args(["--generate", "tcsh"]).run();
    assert_eq!(out.status.code(), Some(125));
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
        "stale generated files: {stale:?}; run `RETRY_BLESS=1 cargo test --test it generated`"
    );
}

#[test]
fn the_man_page_has_the_exit_status_and_environment() {
    let (_, man) = rendered().pop().expect("the man page is rendered last");
    let man = String::from_utf8(man).expect("UTF-8 roff");
    for needle in [
        ".SH \"CONFIGURATION FILE\"",
        ".SH \"SHARED STATE\"",
        ".SH \"LOG FORMAT\"",
        ".SH \"EXIT STATUS\"",
        ".SH ENVIRONMENT",
        ".SH FILES",
        ".SH EXAMPLES",
        "RETRY_IDEMPOTENCY_KEY",
        "\\-\\-max\\-time",
    ] {
        assert!(man.contains(needle), "man page lacks {needle}");
    }
}

/// Runs `program args`, failing with what it said if it fails; `None` (the test skips) when the
/// program is not installed, which `install` says how to mend.
fn run(program: &str, install: &str, args: &[&str]) -> Option<std::process::Output> {
    if !support::have(program, install) {
        return None;
    }
    let out = std::process::Command::new(program)
        .args(args)
        .current_dir(root())
        .run();
    assert!(out.status.success(), "{program} {args:?}: {}", out.stderr());
    Some(out.out)
}

#[test]
fn the_man_page_renders_without_warnings() {
    let Some(out) = run(
        "groff",
        "apt-get install groff-base",
        &["-ww", "-man", "-Tutf8", "-z", "man/retry.1"],
    ) else {
        return;
    };
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// mandoc's lint, which Debian's lintian runs too: no warning, and not even a remark on style
/// (a long line, a lower-case title, a missing date).
#[test]
fn mandoc_finds_nothing_to_say_about_the_man_page() {
    if !support::have("mandoc", "apt-get install mandoc") {
        return;
    }
    let out = std::process::Command::new("mandoc")
        .args(["-Tlint", "-W", "style", "man/retry.1"])
        .current_dir(root())
        .output()
        .expect("run mandoc");
    let said =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(said.trim().is_empty(), "{said}");
    assert!(out.status.success(), "{said}");
}

/// Each section and subsection of the man page has a title of its own, and the title line a
/// date that does not change from build to build.
#[test]
fn the_man_pages_sections_are_unique_and_it_has_a_fixed_date() {
    let (_, man) = rendered().pop().expect("the man page is rendered last");
    let man = String::from_utf8(man).expect("UTF-8 roff");
    let mut titles: Vec<String> = man
        .lines()
        .filter(|l| l.starts_with(".SH ") || l.starts_with(".SS "))
        .map(|l| l[4..].trim_matches('"').to_lowercase())
        .collect();
    let count = titles.len();
    titles.sort();
    titles.dedup();
    assert_eq!(titles.len(), count, "a title twice: {man}");
    let (version, date) = retry::setup::man::RELEASE;
    assert!(
        man.contains(&format!(".TH RETRY 1 {date} \"retry-wrapper {version}\"")),
        "{}",
        man.lines()
            .find(|l| l.starts_with(".TH"))
            .unwrap_or_default()
    );
    assert_eq!(
        render_again(),
        man,
        "the page differs from one rendering to the next"
    );
}

fn render_again() -> String {
    use retry::setup::generate::{Kind, render};
    String::from_utf8(render(Kind::Man)).expect("UTF-8 roff")
}

/// `retry -h` on an 80-column terminal, whole: the usage, durations, the exit statuses, the
/// presets and the defaults a first run needs (tests/it/snapshots/short-help.txt).
#[test]
fn the_short_help_answers_the_common_questions_on_its_first_screen() {
    let out = support::retry().arg("-h").env("COLUMNS", "80").run();
    out.assert().code(0);
    let help = out.stdout();
    support::assert_output(&help, snapbox::file!["snapshots/short-help.txt"]);
    // A preset added later is listed too.
    for preset in retry::setup::presets::ALL {
        assert!(help.contains(preset.name), "preset {}: {help}", preset.name);
    }
}

/// `retry -h` is a page of what a first run needs, as curl's `-h` is: at most 60 lines on an
/// 80-column terminal, ending with where the rest is; `--help` has every flag.
#[test]
fn the_short_help_fits_a_screen_and_points_to_the_full_one() {
    let help = |flag: &str| {
        let out = support::retry().arg(flag).env("COLUMNS", "80").run();
        assert_eq!(out.status.code(), Some(0), "{flag}");
        String::from_utf8(out.out.stdout).expect("UTF-8 help")
    };
    let short = help("-h");
    assert!(
        short.lines().count() <= 60,
        "{} lines:\n{short}",
        short.lines().count()
    );
    assert!(short.lines().all(|l| l.chars().count() <= 80), "{short}");
    assert!(short.contains("retry --help lists every flag"), "{short}");
    for flag in [
        "--attempts",
        "--times",
        "--max-time",
        "--delay",
        "--explain",
        "--key",
    ] {
        assert!(short.contains(flag), "{flag}: {short}");
    }
    let full = help("--help");
    assert!(full.lines().count() > 2 * short.lines().count());
    let mut cmd = retry::setup::cli::command();
    cmd.build();
    for arg in cmd.get_arguments().filter(|a| !a.is_hide_set()) {
        if let Some(long) = arg.get_long() {
            assert!(
                full.contains(&format!("--{long}")),
                "--{long} is not in --help"
            );
        }
    }
    // minfrin's -h is a help too.
    assert_eq!(help("-h"), short);
}

#[test]
fn the_man_page_has_the_synopsis_command_hint_files_and_see_also() {
    let (_, man) = rendered().pop().expect("the man page is rendered last");
    let man = String::from_utf8(man).expect("UTF-8 roff");
    let synopsis = &man[man.find(".SH SYNOPSIS").expect("a synopsis")..];
    let synopsis = &synopsis[..4 + synopsis[4..].find(".SH").expect("a section after it")];
    assert!(
        synopsis.contains("[\\fIOPTIONS\\fR] [\\fB\\-\\-\\fR] \\fICOMMAND\\fR [\\fIARG\\fR]..."),
        "{synopsis}"
    );
    for needle in [
        ".SS Command",
        "retry\\-after=30s",
        "stop",
        ".SH \"SEE ALSO\"",
        "timeout(1)",
        "curl(1)",
        "systemd.service(5)",
    ] {
        assert!(man.contains(needle), "man page lacks {needle}");
    }
}

#[test]
fn the_readmes_cron_lines_do_not_rely_on_crons_path() {
    // The README and every page of the guide.
    let mut readme = std::fs::read_to_string(root().join("README.md")).expect("README.md");
    for page in std::fs::read_dir(root().join("docs")).expect("docs/") {
        let path = page.expect("a page").path();
        if path.extension().is_some_and(|e| e == "md") {
            readme.push_str(&std::fs::read_to_string(&path).expect("a page"));
        }
    }
    let mut blocks = readme.split("```cron").skip(1).peekable();
    assert!(blocks.peek().is_some(), "the README has cron examples");
    for block in blocks {
        let block = &block[..block.find("```").expect("end of block")];
        // A variable setting (PATH=...) or a job: five time fields, then the command.
        let jobs = block
            .lines()
            .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
            .filter(|l| !l.split_whitespace().next().is_some_and(|w| w.contains('=')));
        for job in jobs {
            let command = job.split_whitespace().nth(5).unwrap_or_default();
            assert!(
                command.starts_with('/'),
                "cron's PATH is /usr/bin:/bin: name retry by its full path in {job:?}"
            );
        }
    }
}

/// The README stays short and points to the guide; the guide's pages exist and link back; no
/// link between them is broken.
#[test]
fn the_readme_is_short_with_contents_and_the_guide_is_whole() {
    let readme = std::fs::read_to_string(root().join("README.md")).expect("README.md");
    assert!(
        readme.len() <= 20 * 1024,
        "README.md is {} bytes",
        readme.len()
    );
    assert!(readme.contains("## Contents"), "a contents list");
    let mut guide = 0;
    let mut pages = vec![(root().join("README.md"), readme.clone())];
    for page in std::fs::read_dir(root().join("docs")).expect("docs/") {
        let path = page.expect("a page").path();
        if path.extension().is_some_and(|e| e == "md") {
            let text = std::fs::read_to_string(&path).expect("a page");
            guide += text.len();
            pages.push((path, text));
        }
    }
    assert!(guide > 10 * 1024, "the guide is {guide} bytes");
    for (path, text) in &pages {
        let dir = path.parent().expect("a folder");
        for link in text.split("](").skip(1) {
            let target = link.split(')').next().unwrap_or_default();
            let file = target.split('#').next().unwrap_or_default();
            if file.is_empty() || file.starts_with("http") {
                continue;
            }
            assert!(
                dir.join(file).exists(),
                "{}: a link to {target} that goes nowhere",
                path.display()
            );
        }
    }
}

/// The README's first command (its install line's) fails twice, then succeeds, and says so as
/// the README shows; its other examples are run by the `docs` tests.
#[test]
fn the_readmes_examples_are_what_retry_prints() {
    let readme = std::fs::read_to_string(root().join("README.md")).expect("README.md");
    // The first command: fails twice, then succeeds, and says so.
    let out = support::retry()
        .args(["-d", "1ms", "--", "sh", "-c"])
        .arg(r#"echo "attempt $RETRY_ATTEMPT"; [ "$RETRY_ATTEMPT" -ge 3 ]"#)
        .run();
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(out.stdout, b"attempt 1\nattempt 2\nattempt 3\n");
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(
        said.contains("retry: attempt 3/5 succeeded after 2 attempts failed"),
        "{said}"
    );
    assert!(readme.contains("retry: attempt 3/5 succeeded after 2 attempts failed"));
}
