//! What retry prints of a command line: every argument as given, except what looks like a
//! credential, which is shown as `***`. The command itself gets its arguments unchanged; only
//! the log's lines (text and JSON), the warnings and `--explain` show the masked form.
//!
//! Masked, in each argument and in each word of one that holds several (`sh -c '…'`):
//! - a URL's password (`https://user:***@host`) and the value of each query parameter whose
//!   name says it holds a secret (`?token=***`, `&X-Amz-Signature=***`);
//! - the password of `-u`/`--user`/`-U`/`--proxy-user USER:PASSWORD` (curl's, wget's), apart
//!   or attached (`--user=u:***`, `-uu:***`);
//! - the value of an option whose name says it holds a secret (`--password ***`,
//!   `--token=***`, `--oauth2-bearer ***`);
//! - a header whose name says so, as an argument or the value of `-H`/`--header`
//!   (`Authorization: ***`, `Cookie: ***`, `X-Api-Key: ***`);
//! - a variable given as `NAME=VALUE` whose name says so (`API_TOKEN=***`, `-e PASSWORD=***`);
//! - the fields whose name says so in a request's body (`-d 'user=a&password=***'`,
//!   `--json '{"token": "***"}'`).
//!
//! A name says it holds a secret when one of its words (split at `-`, `_`, `.` and a change
//! to upper case) is one of [`SECRET_WORDS`], or it contains `password`, `passwd`, `secret`,
//! `token`, `apikey` or `credential`. The rules mask more than they must rather than less: a
//! file named by `--key`, say, is masked too.

use std::borrow::Cow;
use std::ffi::{OsStr, OsString};

/// The words of a name that make it a secret's.
const SECRET_WORDS: [&str; 13] = [
    "pass",
    "pwd",
    "auth",
    "authorization",
    "cookie",
    "key",
    "sig",
    "signature",
    "session",
    "bearer",
    "jwt",
    "otp",
    "pin",
];

/// Parts of a name that make it a secret's wherever they are in it.
const SECRET_PARTS: [&str; 7] = [
    "password",
    "passwd",
    "passphrase",
    "secret",
    "token",
    "apikey",
    "credential",
];

/// Whether a name (of an option, a header, a variable, a query parameter) says that its value
/// is a secret.
pub fn secret_name(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    if SECRET_PARTS.iter().any(|part| lower.contains(part)) {
        return true;
    }
    words(name).any(|word| SECRET_WORDS.contains(&word.to_ascii_lowercase().as_str()))
}

/// A name's words: split at anything not a letter or digit, and before an upper-case letter
/// that follows a lower-case one (`sentinelPassword`: `sentinel`, `Password`).
fn words(name: &str) -> impl Iterator<Item = &str> {
    let mut cuts = vec![0];
    let bytes = name.as_bytes();
    for i in 1..bytes.len() {
        if bytes[i].is_ascii_uppercase() && bytes[i - 1].is_ascii_lowercase() {
            cuts.push(i);
        }
    }
    cuts.push(bytes.len());
    let parts: Vec<&str> = cuts.windows(2).map(|w| &name[w[0]..w[1]]).collect();
    parts
        .into_iter()
        .flat_map(|part| part.split(|c: char| !c.is_ascii_alphanumeric()))
        .filter(|word| !word.is_empty())
}

/// How an option's value is masked.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Value {
    /// `USER:PASSWORD`: the part after the first ':'.
    AfterColon,
    /// All of it.
    Whole,
    /// A header: its value, when its name says so.
    Header,
    /// `NAME=VALUE`: the value, when the name says so.
    Variable,
    /// A request's body: a form's fields (`a=1&password=…`) or a JSON object's string members
    /// (`{"token": "…"}`) named for a secret.
    Body,
}

impl Value {
    fn mask(self, value: &str) -> Option<String> {
        match self {
            Value::AfterColon => value
                .split_once(':')
                .filter(|(_, password)| !password.is_empty())
                .map(|(user, _)| format!("{user}:***")),
            Value::Whole => (!value.is_empty()).then(|| "***".to_string()),
            Value::Header => header(value),
            Value::Variable => variable(value),
            Value::Body => body(value),
        }
    }
}

/// The value an option takes, if it takes one that is, or may be, a secret.
fn secret_option(option: &str) -> Option<Value> {
    match option {
        "-u" | "--user" | "-U" | "--proxy-user" => Some(Value::AfterColon),
        "-H" | "--header" | "--proxy-header" => Some(Value::Header),
        "-e" | "--env" | "--build-arg" | "--set" | "--set-string" | "--extra-vars" => {
            Some(Value::Variable)
        }
        "-d" | "--data" | "--data-raw" | "--data-binary" | "--data-urlencode" | "--json" | "-F"
        | "--form" | "--form-string" | "--post-data" | "--body-data" => Some(Value::Body),
        // A flag, not an option with a value (`docker login --password-stdin`), or one whose
        // value was attached (`--token=…`): what follows is not its value.
        _ if option.ends_with("-stdin") || option.contains('=') => None,
        _ => option
            .strip_prefix("--")
            .filter(|name| secret_name(name))
            .map(|_| Value::Whole),
    }
}

/// `Name: value` (or `Name:value`) with the value masked, when the name says it is a secret's.
fn header(text: &str) -> Option<String> {
    let (name, value) = text.split_once(':')?;
    let plain_name = !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
    if !plain_name || value.trim().is_empty() || !secret_name(name) {
        return None;
    }
    let gap = if value.starts_with(' ') { " " } else { "" };
    Some(format!("{name}:{gap}***"))
}

/// `NAME=VALUE` with the value masked, when the name says it is a secret's.
fn variable(text: &str) -> Option<String> {
    let (name, value) = text.split_once('=')?;
    let plain_name = !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"_.-".contains(&b));
    (plain_name && !value.is_empty() && secret_name(name)).then(|| format!("{name}=***"))
}

/// A request's body with its secret fields masked: a JSON object's string members, or a form's
/// `name=value` fields.
fn body(text: &str) -> Option<String> {
    if text.trim_start().starts_with(['{', '[']) {
        return json(text);
    }
    let mut changed = false;
    let fields: Vec<String> = text
        .split('&')
        .map(|field| match variable(field) {
            Some(masked) => {
                changed = true;
                masked
            }
            None => field.to_string(),
        })
        .collect();
    changed.then(|| fields.join("&"))
}

/// A JSON text with the value of each string member named for a secret masked (`"***"`). Not
/// a parser: it reads strings as JSON writes them, and leaves what it cannot read as it is.
fn json(text: &str) -> Option<String> {
    /// The end (the closing quote's index) of the string that starts at `open`.
    fn string_end(bytes: &[u8], open: usize) -> Option<usize> {
        let mut i = open + 1;
        while i < bytes.len() {
            match bytes[i] {
                b'\\' => i += 2,
                b'"' => return Some(i),
                _ => i += 1,
            }
        }
        None
    }
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut changed = false;
    let mut copied = 0;
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] != b'"' {
            i += 1;
            continue;
        }
        let Some(end) = string_end(bytes, i) else {
            break;
        };
        let name = &text[i + 1..end];
        let mut j = end + 1;
        while j < bytes.len() && bytes[j].is_ascii_whitespace() {
            j += 1;
        }
        if j < bytes.len() && bytes[j] == b':' && secret_name(name) {
            j += 1;
            while j < bytes.len() && bytes[j].is_ascii_whitespace() {
                j += 1;
            }
            if j < bytes.len() && bytes[j] == b'"' {
                let Some(value_end) = string_end(bytes, j) else {
                    break;
                };
                if value_end > j + 1 {
                    out.push_str(&text[copied..=j]);
                    out.push_str("***");
                    copied = value_end;
                    changed = true;
                }
                i = value_end + 1;
                continue;
            }
        }
        i = end + 1;
    }
    out.push_str(&text[copied..]);
    changed.then_some(out)
}

/// A URL's password, and its secret query parameters' values, masked; `None` when the text is
/// no URL or holds no secret.
fn url(text: &str) -> Option<String> {
    let start = text.find("://")? + 3;
    let mut out = text.to_string();
    let end_of_authority = text[start..]
        .find(['/', '?', '#'])
        .map_or(text.len(), |i| start + i);
    let mut changed = false;
    if let Some(at) = text[start..end_of_authority].rfind('@') {
        let userinfo = &text[start..start + at];
        if let Some(colon) = userinfo.find(':') {
            out = format!("{}***{}", &text[..start + colon + 1], &text[start + at..]);
            changed = true;
        }
    }
    if let Some(q) = out.find('?') {
        let (head, rest) = out.split_at(q + 1);
        let (query, fragment) = match rest.find('#') {
            Some(h) => rest.split_at(h),
            None => (rest, ""),
        };
        let mut masked = Vec::new();
        for pair in query.split('&') {
            match pair.split_once('=') {
                Some((name, value)) if !value.is_empty() && secret_name(name) => {
                    masked.push(format!("{name}=***"));
                    changed = true;
                }
                _ => masked.push(pair.to_string()),
            }
        }
        out = format!("{head}{}{fragment}", masked.join("&"));
    }
    changed.then_some(out)
}

/// One word, given the one before it: masked, or `None` when it shows no secret.
fn word(before: Option<&str>, word: &str) -> Option<String> {
    if let Some(masked) = before
        .and_then(secret_option)
        .and_then(|value| value.mask(word))
    {
        return Some(masked);
    }
    if let Some((option, value)) = word.split_once('=').filter(|(o, _)| o.starts_with("--"))
        && let Some(kind) = secret_option(option)
    {
        return kind.mask(value).map(|v| format!("{option}={v}"));
    }
    for short in ["-u", "-U"] {
        if let Some(value) = word.strip_prefix(short).filter(|v| !v.is_empty())
            && let Some(v) = Value::AfterColon.mask(value)
        {
            return Some(format!("{short}{v}"));
        }
    }
    if word.contains("://") {
        return url(word);
    }
    if !word.starts_with('-') {
        return variable(word).or_else(|| header(word));
    }
    None
}

/// The quotes a word of a shell line may begin or end with.
const QUOTES: [char; 3] = ['\'', '"', '`'];

/// A shell line (an argument with several words: `sh -c '…'`) with each word masked, given the
/// one before it; a header's value that runs over several words (`-H 'Authorization: Bearer
/// x'`) is masked up to the word that closes its quote.
fn line(text: &str) -> Option<String> {
    let mut out = String::with_capacity(text.len());
    let mut changed = false;
    let mut before: Option<&str> = None;
    // Inside a header's value that is being masked, and whether its `***` is written yet.
    let mut masking = false;
    let mut written = false;
    let mut rest = text;
    while !rest.is_empty() {
        let gap = &rest[..rest.len() - rest.trim_start().len()];
        rest = &rest[gap.len()..];
        let len = rest.find(char::is_whitespace).unwrap_or(rest.len());
        let token = &rest[..len];
        rest = &rest[len..];
        let core = token.trim_start_matches(QUOTES);
        let lead = &token[..token.len() - core.len()];
        let bare = core.trim_end_matches(QUOTES);
        let trail = &core[bare.len()..];
        if masking {
            if !written {
                out.push_str(gap);
                out.push_str("***");
                written = true;
            }
            if !trail.is_empty() {
                out.push_str(trail);
                masking = false;
            }
            before = Some(bare);
            continue;
        }
        out.push_str(gap);
        match word(before, bare) {
            Some(masked) => {
                out.push_str(lead);
                out.push_str(&masked);
                out.push_str(trail);
                changed = true;
            }
            None => out.push_str(token),
        }
        // A quoted header whose value follows in the next words: `'Authorization: Bearer x'`.
        let opens_header = !lead.is_empty()
            && trail.is_empty()
            && bare
                .strip_suffix(':')
                .is_some_and(|name| header(&format!("{name}: x")).is_some());
        if opens_header && !rest.trim().is_empty() {
            masking = true;
            written = false;
            changed = true;
        }
        before = Some(bare);
    }
    changed.then_some(out)
}

/// A command as a shell would show it ([`crate::quote::shown`]), what looks like a credential
/// masked: the one way retry shows a command line, or a hook's.
pub fn shown_command<A: AsRef<OsStr>>(args: &[A]) -> String {
    masked(args)
        .iter()
        .map(crate::quote::shown)
        .collect::<Vec<_>>()
        .join(" ")
}

/// The arguments as retry shows them: each one that holds a secret masked, by the rules above.
pub fn masked<A: AsRef<OsStr>>(args: &[A]) -> Vec<Cow<'_, OsStr>> {
    let mut shown = Vec::with_capacity(args.len());
    for (i, arg) in args.iter().enumerate() {
        let arg = arg.as_ref();
        let before = i
            .checked_sub(1)
            .and_then(|b| args[b].as_ref().to_str())
            .filter(|b| !b.contains(char::is_whitespace));
        let masked = arg.to_str().and_then(|text| {
            if text.trim().contains(char::is_whitespace) && before.and_then(secret_option).is_none()
            {
                line(text).or_else(|| header(text))
            } else {
                word(before, text)
            }
        });
        shown.push(match masked {
            Some(m) => Cow::Owned(OsString::from(m)),
            None => Cow::Borrowed(arg),
        });
    }
    shown
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shown(args: &[&str]) -> Vec<String> {
        let args: Vec<OsString> = args.iter().map(OsString::from).collect();
        masked(&args)
            .iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect()
    }

    #[test]
    fn curls_credentials_are_masked_apart_and_attached() {
        assert_eq!(
            shown(&[
                "curl",
                "-u",
                "ann:hunter2",
                "--user=bob:pw",
                "-ucy:x",
                "https://h/"
            ]),
            [
                "curl",
                "-u",
                "ann:***",
                "--user=bob:***",
                "-ucy:***",
                "https://h/"
            ]
        );
        // A value the option's own rule leaves is still read by the others.
        assert_eq!(
            shown(&["docker", "run", "-e", "URL=https://ann:pw@db/"]),
            ["docker", "run", "-e", "URL=https://ann:***@db/"]
        );
        // A user without a password, and a flag that only looks like one, are shown.
        assert_eq!(
            shown(&["curl", "-u", "ann", "x"]),
            ["curl", "-u", "ann", "x"]
        );
        assert_eq!(
            shown(&["sort", "-u", "list.txt"]),
            ["sort", "-u", "list.txt"]
        );
    }

    #[test]
    fn headers_whose_name_says_secret_are_masked() {
        assert_eq!(
            shown(&[
                "curl",
                "-H",
                "Authorization: Bearer abc",
                "--header=X-Api-Key:k1",
                "-H",
                "Accept: text/plain",
                "Cookie:sid=1",
            ]),
            [
                "curl",
                "-H",
                "Authorization: ***",
                "--header=X-Api-Key:***",
                "-H",
                "Accept: text/plain",
                "Cookie:***"
            ]
        );
    }

    #[test]
    fn urls_lose_their_password_and_secret_parameters() {
        assert_eq!(
            shown(&[
                "curl",
                "https://ann:pw@example.com/a?page=2&access_token=t0k&sig=s#top",
                "https://example.com/plain?q=1",
                "ann@example.com",
            ]),
            [
                "curl",
                "https://ann:***@example.com/a?page=2&access_token=***&sig=***#top",
                "https://example.com/plain?q=1",
                "ann@example.com"
            ]
        );
        assert_eq!(
            shown(&[
                "x",
                "s3://b/k?X-Amz-Credential=AK&X-Amz-Signature=ff&X-Amz-Date=1"
            ]),
            [
                "x",
                "s3://b/k?X-Amz-Credential=***&X-Amz-Signature=***&X-Amz-Date=1"
            ]
        );
    }

    #[test]
    fn options_and_variables_named_for_a_secret_are_masked() {
        assert_eq!(
            shown(&[
                "tool",
                "--password",
                "pw",
                "--api-key=k",
                "--oauth2-bearer",
                "t",
                "-e",
                "DB_PASSWORD=pw",
                "GITHUB_TOKEN=ghp_x",
                "--name",
                "deploy",
                "PATH=/bin",
            ]),
            [
                "tool",
                "--password",
                "***",
                "--api-key=***",
                "--oauth2-bearer",
                "***",
                "-e",
                "DB_PASSWORD=***",
                "GITHUB_TOKEN=***",
                "--name",
                "deploy",
                "PATH=/bin"
            ]
        );
        // `--password-stdin` is a flag: what follows it is shown.
        assert_eq!(
            shown(&["docker", "login", "--password-stdin", "registry.example"]),
            ["docker", "login", "--password-stdin", "registry.example"]
        );
    }

    #[test]
    fn a_shell_lines_words_are_masked_as_arguments_are() {
        assert_eq!(
            shown(&[
                "sh",
                "-c",
                "curl -fsS -u ann:pw -H 'Authorization: Bearer abc def' https://h/?token=1 | jq .",
            ]),
            [
                "sh",
                "-c",
                "curl -fsS -u ann:*** -H 'Authorization: ***' https://h/?token=*** | jq ."
            ]
        );
        assert_eq!(
            shown(&["sh", "-c", "echo hello world; exit 1"]),
            ["sh", "-c", "echo hello world; exit 1"]
        );
    }

    #[test]
    fn a_request_bodys_secret_fields_are_masked() {
        assert_eq!(
            shown(&[
                "curl",
                "-d",
                "user=ann&password=pw&remember=1",
                "--json",
                r#"{"user": "ann", "api_token":"t", "note": "a \"quoted\" token"}"#,
                "-F",
                "file=@a.txt",
            ]),
            [
                "curl",
                "-d",
                "user=ann&password=***&remember=1",
                "--json",
                r#"{"user": "ann", "api_token":"***", "note": "a \"quoted\" token"}"#,
                "-F",
                "file=@a.txt"
            ]
        );
    }

    #[test]
    fn names_are_split_into_words() {
        assert!(secret_name("sentinelPassword"));
        assert!(secret_name("X-Api-Key"));
        assert!(secret_name("AWS_SECRET_ACCESS_KEY"));
        assert!(secret_name("Proxy-Authorization"));
        assert!(!secret_name("author"));
        assert!(!secret_name("Accept"));
        assert!(!secret_name("keyboard"));
        assert!(!secret_name("page"));
    }
}
