//! The completions in the real shells, as a person at a prompt gets them: bash through its
//! completion function with COMP_WORDS and COMP_CWORD (and bash-completion loaded, as on a
//! desktop), zsh through its line editor under zsh/zpty (a TAB typed, the matches its
//! completion adds caught), fish through `complete --do-complete`.
//!
//! The wrapped command is `wrapped`, a script on PATH with a completion of its own in each
//! shell (subcommands `checkout` and `cherry-pick`, flags `--fail` and `--fail-early`), so that
//! what is handed over does not depend on what else the machine has.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use tempfile::TempDir;

use crate::support;
use crate::support::Launch;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// A place to complete in: `bin/wrapped` on PATH, `alpha.txt` in the working folder, a home
/// without a config file, and each shell's completion of `wrapped`.
struct Desk {
    dir: TempDir,
}

impl Desk {
    fn new() -> Desk {
        let dir = TempDir::new().expect("temp dir");
        let bin = dir.path().join("bin");
        std::fs::create_dir(&bin).expect("bin");
        let wrapped = bin.join("wrapped");
        std::fs::write(&wrapped, "#!/bin/sh\nexit 0\n").expect("wrapped");
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&wrapped, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        let work = dir.path().join("work");
        std::fs::create_dir(&work).expect("work");
        std::fs::write(work.join("alpha.txt"), "").expect("alpha.txt");
        std::fs::create_dir(dir.path().join("home")).expect("home");
        let zsh = dir.path().join("zsh");
        std::fs::create_dir(&zsh).expect("zsh functions");
        std::fs::write(
            zsh.join("_wrapped"),
            "#compdef wrapped\ncompadd -- checkout cherry-pick --fail --fail-early\n",
        )
        .expect("_wrapped");
        Desk { dir }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// A shell, in the desk's folder, with `wrapped` first on PATH and nothing of the user's.
    fn shell(&self, program: &str) -> Command {
        let path = std::env::var_os("PATH").unwrap_or_default();
        let mut dirs = vec![self.path("bin")];
        dirs.extend(std::env::split_paths(&path));
        let mut shell = Command::new(program);
        support::hermetic(&mut shell);
        shell
            .current_dir(self.path("work"))
            .env("PATH", std::env::join_paths(dirs).expect("PATH"))
            .env("HOME", self.path("home"))
            .env("XDG_CONFIG_HOME", self.path("home").join(".config"))
            .env_remove("RETRY_CONFIG")
            .stdin(Stdio::null());
        shell
    }
}

/// What each line completes to, by section: the output has `=== N` before the candidates of
/// line N, one a line, a description after a tab.
fn sections(out: &Output, lines: usize) -> Vec<BTreeSet<String>> {
    let text = String::from_utf8_lossy(&out.stdout);
    let mut found = vec![BTreeSet::new(); lines];
    let mut at = None;
    for line in text.lines() {
        if let Some(n) = line.strip_prefix("=== ") {
            at = n.trim().parse::<usize>().ok();
        } else if let Some(i) = at
            && !line.is_empty()
        {
            found[i].insert(line.split('\t').next().unwrap_or_default().to_string());
        }
    }
    found
}

/// bash's words for a line as a person types it, as bash splits them (`--delay=2` is three
/// words); a line that ends with a space completes a new, empty word.
fn bash_words(line: &str) -> Vec<String> {
    let mut words = Vec::new();
    for word in line.split_whitespace() {
        match word.split_once('=') {
            Some((flag, value)) if flag.starts_with("--") => {
                words.extend([flag.to_string(), "=".into(), value.to_string()]);
            }
            _ => words.push(word.to_string()),
        }
    }
    if line.ends_with(' ') {
        words.push(String::new());
    }
    words
}

/// What bash completes for each line, through `_retry` as bash calls it; `None` without bash
/// or bash-completion (the test then skips, said loudly).
fn bash(desk: &Desk, lines: &[&str]) -> Option<Vec<BTreeSet<String>>> {
    if !support::have("bash", "apt-get install bash") {
        return None;
    }
    let loader = Path::new("/usr/share/bash-completion/bash_completion");
    if !loader.exists() && !support::have("bash-completion", "apt-get install bash-completion") {
        return None;
    }
    let mut script = format!(
        ". {}\n. {}\n\
         _wrapped() {{ COMPREPLY=( $(compgen -W 'checkout cherry-pick --fail --fail-early' -- \"${{COMP_WORDS[COMP_CWORD]}}\") ); }}\n\
         complete -F _wrapped wrapped\n",
        loader.display(),
        root().join("completions/retry.bash").display()
    );
    for (i, line) in lines.iter().enumerate() {
        let words: Vec<String> = bash_words(line)
            .iter()
            .map(|w| format!("'{}'", w.replace('\'', r"'\''")))
            .collect();
        script.push_str(&format!(
            "COMP_WORDS=({words}); COMP_CWORD=$(( ${{#COMP_WORDS[@]}} - 1 )); \
             COMP_LINE=\"${{COMP_WORDS[*]}}\"; COMP_POINT=${{#COMP_LINE}}; COMPREPLY=(); \
             _retry retry \"${{COMP_WORDS[COMP_CWORD]}}\" \"${{COMP_WORDS[COMP_CWORD-1]}}\" 2>/dev/null; \
             echo '=== {i}'; printf '%s\\n' \"${{COMPREPLY[@]}}\"\n",
            words = words.join(" ")
        ));
    }
    let mut shell = desk.shell("bash");
    shell.args(["--norc", "--noprofile", "-c", &script]);
    let out = shell.run().out;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    Some(sections(&out, lines.len()))
}

/// The zsh that types each line and a TAB into an interactive zsh on a pseudo-terminal
/// (zsh/zpty), with compadd wrapped to write down every match the completion adds; a key of
/// its own then writes the line as it stands and a mark the script waits for. Ctrl-X begins
/// other bindings too: KEYTIMEOUT=1 has zle wait 10 ms, not 400, for a key that would follow.
const ZSH_TYPIST: &str = r#"
zmodload zsh/zpty || exit 3
compdir=$1 out=$2
shift 2
zpty z zsh -f -i
zpty -w z "PS1=''; RPS1=''; unsetopt auto_list auto_menu list_beep beep; KEYTIMEOUT=1"
zpty -w z "fpath=(${(@qs.:.)compdir} \$fpath); autoload -Uz compinit; compinit -u -d ${(q)out}.dump"
zpty -w z "compadd() { local -a m; builtin compadd -O m \"\$@\"; (( \$#m )) && print -rl -- \$m >> ${(q)out}; builtin compadd \"\$@\"; }"
zpty -w z "typed() { print -r -- \"=== line \$BUFFER\" >> ${(q)out}; BUFFER=''; zle -M __TY\"\"PED__; }; zle -N typed; bindkey '^X' typed"
zpty -w z "print __RE\"\"ADY__"
zpty -r z text '*__READY__*' || exit 4
integer i=0
for line in "$@"; do
  print -r -- "=== $i" >> $out
  zpty -w -n z "$line"$'\t\x18'
  zpty -r z text '*__TYPED__*' || exit 4
  (( i++ ))
done
zpty -d z
"#;

/// What zsh completes for each line, typed at its prompt; `None` without zsh.
fn zsh(desk: &Desk, lines: &[&str]) -> Option<Vec<BTreeSet<String>>> {
    if !support::have("zsh", "apt-get install zsh") {
        return None;
    }
    // completions/ first: the _retry being tested, not one installed on the machine.
    let functions = format!(
        "{}:{}",
        root().join("completions").display(),
        desk.path("zsh").display()
    );
    let out_file = desk.path("zsh-matches");
    let mut shell = desk.shell("zsh");
    shell
        .args(["-f", "-c", ZSH_TYPIST, "zsh"])
        .arg(&functions)
        .arg(&out_file)
        .args(lines);
    let out = shell.run().out;
    assert!(
        out.status.success(),
        "zsh under zpty: {:?} {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    let written = std::fs::read(&out_file).expect("the matches zsh wrote");
    let shown = Output {
        status: out.status,
        stdout: written,
        stderr: Vec::new(),
    };
    Some(sections(&shown, lines.len()))
}

/// The text zsh's editor holds after the TAB of each line (matches left out).
fn zsh_buffers(desk: &Desk) -> Vec<String> {
    std::fs::read_to_string(desk.path("zsh-matches"))
        .expect("zsh's record")
        .lines()
        .filter_map(|l| l.strip_prefix("=== line "))
        .map(str::to_owned)
        .collect()
}

/// What fish completes for each line, and what it said on stderr; `None` without fish.
fn fish(desk: &Desk, lines: &[&str]) -> Option<(Vec<BTreeSet<String>>, String)> {
    if !support::have("fish", "apt-get install fish") {
        return None;
    }
    // --no-config leaves fish's own completions out of its search path: put them back, as
    // an interactive fish has them, after retry's.
    let mut script = format!(
        "set -p fish_complete_path $__fish_data_dir/completions\n\
         set -p fish_function_path $__fish_data_dir/functions\n\
         source {}\n\
         complete -c wrapped -f -a 'checkout cherry-pick'\n\
         complete -c wrapped -l fail\ncomplete -c wrapped -l fail-early\n",
        root().join("completions/retry.fish").display()
    );
    for (i, line) in lines.iter().enumerate() {
        script.push_str(&format!(
            "echo '=== {i}'; complete --do-complete '{}'\n",
            line.replace('\\', r"\\").replace('\'', r"\'")
        ));
    }
    let mut shell = desk.shell("fish");
    shell.args(["--no-config", "-c", &script]);
    let out = shell.run().out;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let said = String::from_utf8_lossy(&out.stderr).into_owned();
    Some((sections(&out, lines.len()), said))
}

/// The lines every shell is asked about, and what each must (and must not) offer.
struct Case {
    line: &'static str,
    offers: &'static [&'static str],
    never: &'static [&'static str],
}

const fn case(
    line: &'static str,
    offers: &'static [&'static str],
    never: &'static [&'static str],
) -> Case {
    Case {
        line,
        offers,
        never,
    }
}

/// Nothing of retry's, nor a file name.
const NOT_RETRYS: &[&str] = &["--factor", "--fatal-on", "alpha.txt", "-n"];

/// The command's own completion, after `--` (directly after retry too) and without it, past
/// flags and their values: as `sudo` and `timeout` hand over.
const HANDED_OVER: [Case; 9] = [
    case(
        "retry -- wrapped che",
        &["checkout", "cherry-pick"],
        NOT_RETRYS,
    ),
    case(
        "retry -n 3 -- wrapped che",
        &["checkout", "cherry-pick"],
        NOT_RETRYS,
    ),
    case(
        "retry wrapped che",
        &["checkout", "cherry-pick"],
        NOT_RETRYS,
    ),
    case(
        "retry --key k -d 2s wrapped che",
        &["checkout", "cherry-pick"],
        NOT_RETRYS,
    ),
    case(
        "retry -- wrapped --fa",
        &["--fail", "--fail-early"],
        NOT_RETRYS,
    ),
    case(
        "retry -n 3 wrapped --fa",
        &["--fail", "--fail-early"],
        NOT_RETRYS,
    ),
    case("retry -- wrapp", &["wrapped"], &["alpha.txt"]),
    case("retry -n 3 wrapp", &["wrapped"], &["alpha.txt"]),
    case("retry -n 3 -- ls alp", &["alpha.txt"], &["--factor"]),
];

/// retry's own flags and their values: a kind, a preset, a file; nothing for a number, a
/// duration or a list (not even file names).
const RETRYS_OWN: [Case; 12] = [
    case("retry --max-d", &["--max-delay"], &["alpha.txt"]),
    case(
        "retry --backoff ",
        &["exponential", "fibonacci"],
        &["alpha.txt"],
    ),
    case("retry -b ", &["linear", "constant"], &["alpha.txt"]),
    case("retry --log-format ", &["json", "text"], &["alpha.txt"]),
    case(
        "retry --preset ",
        &["curl", "sysexits", "ssh", "git", "apt"],
        &["alpha.txt"],
    ),
    case("retry --stdin ", &["replay", "null"], &["alpha.txt"]),
    case("retry --log-file alp", &["alpha.txt"], &[]),
    case("retry -n ", &[], &["alpha.txt", "wrapped"]),
    case("retry --delay ", &[], &["alpha.txt", "wrapped"]),
    case("retry --max-time ", &[], &["alpha.txt", "wrapped"]),
    case("retry -t ", &[], &["alpha.txt", "wrapped"]),
    case("retry --retry-on ", &[], &["alpha.txt", "wrapped"]),
];

fn check(shell: &str, cases: &[Case], found: &[BTreeSet<String>]) {
    for (case, found) in cases.iter().zip(found) {
        for want in case.offers {
            assert!(
                found.contains(*want),
                "{shell}: `{}<TAB>` should offer {want}: {found:?}",
                case.line
            );
        }
        for never in case.never {
            assert!(
                !found.contains(*never),
                "{shell}: `{}<TAB>` offers {never}: {found:?}",
                case.line
            );
        }
        if case.offers.is_empty() {
            assert!(found.is_empty(), "{shell}: `{}<TAB>`: {found:?}", case.line);
        }
    }
}

fn lines(cases: &[Case]) -> Vec<&'static str> {
    cases.iter().map(|c| c.line).collect()
}

#[test]
fn bash_hands_the_command_to_its_own_completion() {
    let desk = Desk::new();
    let Some(found) = bash(&desk, &lines(&HANDED_OVER)) else {
        return;
    };
    check("bash", &HANDED_OVER, &found);
}

#[test]
fn bash_completes_retrys_flags_and_their_values() {
    let desk = Desk::new();
    let Some(found) = bash(&desk, &lines(&RETRYS_OWN)) else {
        return;
    };
    check("bash", &RETRYS_OWN, &found);
    let Some(found) = bash(&desk, &["retry --backoff=fib", "retry --delay="]) else {
        return;
    };
    assert_eq!(found[0], BTreeSet::from(["fibonacci".to_string()]));
    assert!(found[1].is_empty(), "{:?}", found[1]);
}

#[test]
fn zsh_hands_the_command_to_its_own_completion() {
    let desk = Desk::new();
    let Some(found) = zsh(&desk, &lines(&HANDED_OVER)) else {
        return;
    };
    check("zsh", &HANDED_OVER, &found);
}

#[test]
fn zsh_completes_retrys_flags_and_their_values() {
    let desk = Desk::new();
    let Some(found) = zsh(&desk, &lines(&RETRYS_OWN)) else {
        return;
    };
    check("zsh", &RETRYS_OWN, &found);
    // The TAB completed the one file name in place.
    let buffers = zsh_buffers(&desk);
    assert_eq!(buffers[6], "retry --log-file alpha.txt ", "{buffers:?}");
    assert_eq!(buffers[7], "retry -n ", "{buffers:?}");
}

#[test]
fn fish_hands_the_command_to_its_own_completion() {
    let desk = Desk::new();
    let Some((found, said)) = fish(&desk, &lines(&HANDED_OVER)) else {
        return;
    };
    check("fish", &HANDED_OVER, &found);
    assert!(said.is_empty(), "{said}");
}

#[test]
fn fish_completes_retrys_flags_and_their_values() {
    let desk = Desk::new();
    let Some((found, said)) = fish(&desk, &lines(&RETRYS_OWN)) else {
        return;
    };
    check("fish", &RETRYS_OWN, &found);
    assert!(said.is_empty(), "{said}");
}

/// fish offered the command's arguments as command names (`retry -n 3 -- ls /us` became
/// `ls ulimit`): what it offers for an argument is a path that begins as typed.
#[test]
fn fish_completes_a_commands_argument_as_its_command_does() {
    let desk = Desk::new();
    let typed = format!("{}/al", desk.path("work").display());
    let line = format!("retry -n 3 -- ls {typed}");
    let Some((found, _)) = fish(&desk, &[&line]) else {
        return;
    };
    let want = format!("{}/alpha.txt", desk.path("work").display());
    assert_eq!(found[0], BTreeSet::from([want]), "{line}");
}

/// `-p` offers the presets and the config file's profiles; without a config file, fish said
/// a redirection failed.
#[test]
fn every_shell_offers_presets_and_profiles_and_says_nothing_without_a_config() {
    let desk = Desk::new();
    let presets = ["curl", "sysexits", "ssh", "git", "apt"];
    if let Some((found, said)) = fish(&desk, &["retry -p "]) {
        assert!(presets.iter().all(|p| found[0].contains(*p)), "{found:?}");
        assert!(said.is_empty(), "fish said: {said}");
    }
    if let Some(found) = bash(&desk, &["retry -p "]) {
        assert!(presets.iter().all(|p| found[0].contains(*p)), "{found:?}");
    }
    if let Some(found) = zsh(&desk, &["retry -p "]) {
        assert!(presets.iter().all(|p| found[0].contains(*p)), "{found:?}");
    }
    let config = desk.path("home").join(".config/retry");
    std::fs::create_dir_all(&config).expect("config folder");
    std::fs::write(
        config.join("config.toml"),
        "attempts = 3\n\n[profiles.nightly]\ndelay = \"1s\"\n",
    )
    .expect("config");
    let line = ["retry --profile "];
    let found = [
        fish(&desk, &line).map(|(found, _)| found),
        bash(&desk, &line),
        zsh(&desk, &line),
    ];
    for found in found.into_iter().flatten() {
        assert!(found[0].contains("nightly"), "{found:?}");
        assert!(found[0].contains("curl"), "{found:?}");
    }
}
