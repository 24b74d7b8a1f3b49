//! Secret scanning for text that enters the git-tracked state or the rollout.
//!
//! Every string a write stores (each patch field, the turn id, the verifier evidence, the
//! objective of `init`, distilled text) is scanned with two sets of rules:
//!
//! - the gitleaks default rules ([`gitleaks`]: its rule file embedded as data, under its MIT
//!   license), matched as gitleaks matches them: keyword prefilter, secret group, entropy
//!   floor, allowlists and stopwords;
//! - our own detectors ([`rules`]): keyword-anchored assignments (`*password*`, `*secret*`,
//!   `*token*`, `*_key` in `=`, `:` and JSON forms, the JSON escaped to any depth, with value
//!   checks ([`values`]) so `password: see vault` is not flagged), the AWS secret access key
//!   and Azure connection-string keys by name, credentials in URLs, `Authorization:` headers,
//!   bearer tokens, private key blocks, credential files and command lines (`~/.pgpass`,
//!   `.netrc`, htpasswd hashes, `mysql -p...`, `sshpass -p`), and service tokens even when
//!   glued to an identifier (`my_AKIA...`) or followed by punctuation.
//!
//! Findings that overlap are merged, and each merged span is replaced by `[REDACTED:<kind>]`
//! (the most specific kind: a named service before a generic rule). Callers report the kinds
//! and counts, never the secret; what they print or derive from text (an id of a title's
//! words, a name in a report) is [`redacted`] too. Redacting is idempotent: a marker is never
//! matched again. Text that is cut to a limit is redacted first ([`redact_and_truncate`]): a
//! credential cut in half is too short for any rule to know it.
//!
//! Pure: patterns are compiled once per process (each gitleaks pattern the first time one of
//! its keywords is seen), and nothing here touches the file system, the clock or the
//! environment.

pub mod gitleaks;
pub mod rules;
pub mod values;

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::ops::Range;
use std::sync::LazyLock;

use regex::Regex;
use serde::Serialize;
use serde_json::Value;

use crate::state::problem::Problem;

/// How many secrets of one kind were redacted.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct Redaction {
    /// The kind of secret (`private_key`, `aws_access_token`, `secret_assignment`, ...).
    pub kind: &'static str,
    /// How many were found.
    pub count: usize,
}

/// One secret in a text: its kind and where it is (on char boundaries).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    /// The kind of secret.
    pub kind: &'static str,
    /// Where the secret is.
    pub range: Range<usize>,
}

/// A secret found in a structured value: the JSON path of the string that holds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Located {
    /// Dotted path of the string (`patch.scratch.notes.0`).
    pub path: String,
    /// The kind of secret.
    pub kind: &'static str,
}

static MARKER: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"\[REDACTED:[a-z0-9_]*\]").expect("valid"));

/// Every secret in `text`, merged into non-overlapping spans in text order.
pub fn find_secrets(text: &str) -> Vec<Finding> {
    if text.len() < 6 {
        return Vec::new();
    }
    let lowered = text.to_lowercase();
    // (range, generic, order) of every finding of every rule.
    let mut raw: Vec<(Range<usize>, bool, &'static str)> = gitleaks::find(text, &lowered)
        .into_iter()
        .map(|m| (widen(text, m.range), m.generic, m.kind))
        .chain(
            rules::find(text, &lowered)
                .into_iter()
                .map(|m| (m.range, m.generic, m.kind)),
        )
        .filter(|(range, _, _)| !range.is_empty())
        .collect();
    if raw.is_empty() {
        return Vec::new();
    }
    let markers: Vec<Range<usize>> = MARKER.find_iter(text).map(|m| m.range()).collect();
    // A named shape knows where its secret ends; a generic value that starts with one and runs
    // on (`PRIVATE-TOKEN: glpat-...::parse`) would take the code after it along.
    let named: Vec<Range<usize>> = raw
        .iter()
        .filter(|(_, generic, _)| !generic)
        .map(|(range, _, _)| range.clone())
        .collect();
    raw.retain(|(range, generic, _)| {
        !markers
            .iter()
            .any(|marker| marker.start < range.end && range.start < marker.end)
            && (!*generic
                || !named
                    .iter()
                    .any(|shape| shape.start == range.start && shape.end < range.end))
    });
    raw.sort_by_key(|(range, _, _)| (range.start, std::cmp::Reverse(range.end)));
    let mut merged: Vec<(Range<usize>, bool, usize, &'static str)> = Vec::new();
    for (range, generic, kind) in raw {
        let width = range.len();
        match merged.last_mut() {
            Some((span, best_generic, best_width, best_kind)) if range.start < span.end => {
                span.end = span.end.max(range.end);
                // A named shape outranks a generic rule; then the wider finding wins.
                if (!generic && *best_generic) || (generic == *best_generic && width > *best_width)
                {
                    *best_generic = generic;
                    *best_width = width;
                    *best_kind = kind;
                }
            }
            _ => merged.push((range, generic, width, kind)),
        }
    }
    merged
        .into_iter()
        .map(|(range, _, _, kind)| Finding { kind, range })
        .collect()
}

/// Widens a byte range to whole characters.
fn widen(text: &str, range: Range<usize>) -> Range<usize> {
    let mut start = range.start.min(text.len());
    let mut end = range.end.min(text.len());
    while !text.is_char_boundary(start) {
        start -= 1;
    }
    while !text.is_char_boundary(end) {
        end += 1;
    }
    start..end
}

/// Replaces every secret in `text`; counts what was replaced into `found`. `None` when there
/// was nothing to replace.
pub fn redact_text(text: &str, found: &mut BTreeMap<&'static str, usize>) -> Option<String> {
    let findings = find_secrets(text);
    if findings.is_empty() {
        return None;
    }
    let mut redacted = String::with_capacity(text.len());
    let mut last = 0;
    for finding in findings {
        *found.entry(finding.kind).or_default() += 1;
        redacted.push_str(&text[last..finding.range.start]);
        redacted.push_str("[REDACTED:");
        redacted.push_str(finding.kind);
        redacted.push(']');
        last = finding.range.end;
    }
    redacted.push_str(&text[last..]);
    Some(redacted)
}

/// `text` with every secret replaced, uncounted: for text that is shown (a report, a message)
/// or made into something else (an id of a title's words) rather than stored as it is.
pub fn redacted(text: &str) -> Cow<'_, str> {
    match redact_text(text, &mut BTreeMap::new()) {
        Some(clean) => Cow::Owned(clean),
        None => Cow::Borrowed(text),
    }
}

/// The shortest value [`conceal_values`] replaces wherever it occurs, not only where it is
/// quoted: shorter ones (`0`, `no`) occur in ordinary words.
const CONCEALED_ANYWHERE: usize = 4;

/// `message` (an error about a command line) without the values that were typed: each
/// argument of `argv` that `is_name` does not accept (a flag's or a command's name), and the
/// value of each `--flag=value`, is replaced by `<N characters>` where the message quotes it
/// (`'value'`, `` `value` ``) and, from four characters on, wherever it occurs; then secrets
/// are redacted. A usage error must not repeat what was typed: it may be a secret put in the
/// wrong place (a token where a revision goes, a private key after a flag).
pub fn conceal_values<'a>(
    message: &str,
    argv: impl IntoIterator<Item = &'a str>,
    is_name: impl Fn(&str) -> bool,
) -> String {
    let mut values: Vec<&str> = Vec::new();
    for arg in argv {
        match arg.split_once('=') {
            Some((flag, value)) if flag.starts_with("--") && is_name(flag) => values.push(value),
            _ if is_name(arg) => {}
            _ => values.push(arg),
        }
    }
    values.retain(|value| !value.is_empty());
    // Longest first: a value inside a longer one must not leave the rest of that one shown.
    values.sort_by_key(|value| std::cmp::Reverse(value.len()));
    let mut text = message.to_owned();
    for value in &values {
        let count = value.chars().count();
        let shown = format!("<{count} character{}>", if count == 1 { "" } else { "s" });
        for quote in ['\'', '`'] {
            text = text.replace(
                &format!("{quote}{value}{quote}"),
                &format!("{quote}{shown}{quote}"),
            );
        }
        if count >= CONCEALED_ANYWHERE {
            text = text.replace(value, &shown);
        }
    }
    // A parser may quote a part of what was typed (``the start line `5432:...` is not a line
    // number``): a part of four characters or more is concealed too.
    let text = QUOTED.replace_all(&text, |quoted: &regex::Captures<'_>| {
        let part = quoted
            .get(1)
            .or_else(|| quoted.get(2))
            .map_or("", |part| part.as_str());
        let count = part.chars().count();
        match count >= CONCEALED_ANYWHERE && values.iter().any(|value| value.contains(part)) {
            true => {
                let quote = &quoted[0][..1];
                format!("{quote}<{count} characters>{quote}")
            }
            false => quoted[0].to_owned(),
        }
    });
    redacted(&text).into_owned()
}

/// A span a message quotes, in backticks or single quotes, on one line.
static QUOTED: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"`([^`\n]+)`|'([^'\n]+)'").expect("valid"));

/// A redacted text cut to at most `limit` Unicode scalars, `...` marking the cut (as
/// [`truncate`](crate::policy::text::truncate) does), without splitting a redaction marker: a
/// marker the cut would split goes whole. Redact first, then cut: cut first, a credential cut
/// in half is too short for any rule to know it, and its start would be stored.
pub fn truncate_redacted(text: &str, limit: usize) -> String {
    if text.char_indices().nth(limit).is_none() {
        return text.to_owned();
    }
    let keep = limit.saturating_sub(3);
    let mut cut = text
        .char_indices()
        .nth(keep)
        .map_or(text.len(), |(at, _)| at);
    if let Some(marker) = MARKER
        .find_iter(text)
        .find(|marker| marker.start() < cut && cut < marker.end())
    {
        cut = marker.start();
    }
    format!("{}...", &text[..cut])
}

/// `text` redacted (counted into `found`), then cut to at most `limit` scalars by
/// [`truncate_redacted`].
pub fn redact_and_truncate(
    text: &str,
    limit: usize,
    found: &mut BTreeMap<&'static str, usize>,
) -> String {
    let redacted = redact_text(text, found);
    truncate_redacted(redacted.as_deref().unwrap_or(text), limit)
}

/// The counts as a report list, kinds in name order.
pub fn redactions(found: BTreeMap<&'static str, usize>) -> Vec<Redaction> {
    found
        .into_iter()
        .map(|(kind, count)| Redaction { kind, count })
        .collect()
}

/// Redacts every string of any serializable record (a patch, an evidence record), counting
/// into `found`. Fails when the cleaned value no longer decodes as `T`: a problem with the
/// record as a whole (serde's message says where, when it knows).
pub fn redact_serialized<T>(
    record: T,
    found: &mut BTreeMap<&'static str, usize>,
) -> Result<T, Problem>
where
    T: Serialize + serde::de::DeserializeOwned,
{
    let whole = |err: serde_json::Error| Problem::whole(err.to_string());
    let mut value = serde_json::to_value(&record).map_err(whole)?;
    let before = found.values().sum::<usize>();
    redact_value(&mut value, found);
    if found.values().sum::<usize>() == before {
        return Ok(record);
    }
    serde_json::from_value(value).map_err(whole)
}

/// Redacts every string inside `value` (object keys included).
pub fn redact_value(value: &mut Value, found: &mut BTreeMap<&'static str, usize>) {
    match value {
        Value::String(text) => {
            if let Some(clean) = redact_text(text, found) {
                *text = clean;
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|item| redact_value(item, found)),
        Value::Object(fields) => {
            let keyed: Vec<(String, Value)> = std::mem::take(fields).into_iter().collect();
            for (key, mut field) in keyed {
                redact_value(&mut field, found);
                let key = redact_text(&key, found).unwrap_or(key);
                fields.insert(key, field);
            }
        }
        _ => {}
    }
}

/// Every secret inside `value`, with the path of the string that holds it, in document order.
pub fn locate_secrets(value: &Value, prefix: &str) -> Vec<Located> {
    let mut found = Vec::new();
    let mut path = Vec::new();
    if !prefix.is_empty() {
        path.push(Step::Key(Cow::Borrowed(prefix)));
    }
    locate(value, &mut path, &mut found);
    found
}

/// One step of a path into a JSON document: spelled out only for a secret found (a scan of
/// every record visits millions of strings and finds next to nothing).
enum Step<'v> {
    Key(Cow<'v, str>),
    Index(usize),
}

fn spelled(path: &[Step<'_>]) -> String {
    let steps: Vec<String> = (path.iter())
        .map(|step| match step {
            Step::Key(key) => key.to_string(),
            Step::Index(index) => index.to_string(),
        })
        .collect();
    steps.join(".")
}

fn locate<'v>(value: &'v Value, path: &mut Vec<Step<'v>>, found: &mut Vec<Located>) {
    match value {
        Value::String(text) => {
            found.extend(find_secrets(text).into_iter().map(|finding| Located {
                path: spelled(path),
                kind: finding.kind,
            }))
        }
        Value::Array(items) => {
            for (index, item) in items.iter().enumerate() {
                path.push(Step::Index(index));
                locate(item, path, found);
                path.pop();
            }
        }
        Value::Object(fields) => {
            for (key, field) in fields {
                // A path names where a secret is, never the secret: a key that holds one is
                // shown redacted.
                let mut key_secrets = BTreeMap::new();
                let shown = redact_text(key, &mut key_secrets)
                    .map_or(Cow::Borrowed(key.as_str()), Cow::Owned);
                path.push(Step::Key(shown));
                for (kind, count) in key_secrets {
                    let at = spelled(path);
                    found.extend(std::iter::repeat_n(Located { path: at, kind }, count));
                }
                locate(field, path, found);
                path.pop();
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::patch::Patch;

    /// Redacts every string in the patch, returning the cleaned patch and what was found.
    fn redact_patch(patch: Patch) -> Result<(Patch, Vec<Redaction>), Problem> {
        let mut found = BTreeMap::new();
        let patch = redact_serialized(patch, &mut found)?;
        Ok((patch, redactions(found)))
    }

    fn redact(text: &str) -> (String, BTreeMap<&'static str, usize>) {
        let mut found = BTreeMap::new();
        let clean = redact_text(text, &mut found).unwrap_or_else(|| text.to_owned());
        (clean, found)
    }

    /// Issue 31: real source lines from seven languages that name tokens, keys and passwords
    /// without holding one (tests/fixtures/ordinary-source/README.md says where from).
    #[test]
    fn ordinary_source_lines_hold_no_secret() {
        let sets = [
            (
                "rust",
                include_str!("../../../tests/fixtures/ordinary-source/rust.txt"),
            ),
            (
                "python",
                include_str!("../../../tests/fixtures/ordinary-source/python.txt"),
            ),
            (
                "javascript",
                include_str!("../../../tests/fixtures/ordinary-source/javascript.txt"),
            ),
            (
                "go",
                include_str!("../../../tests/fixtures/ordinary-source/go.txt"),
            ),
            (
                "perl",
                include_str!("../../../tests/fixtures/ordinary-source/perl.txt"),
            ),
            (
                "c",
                include_str!("../../../tests/fixtures/ordinary-source/c.txt"),
            ),
            (
                "shell",
                include_str!("../../../tests/fixtures/ordinary-source/shell.txt"),
            ),
        ];
        let mut lines = 0;
        let mut flagged = Vec::new();
        for (language, text) in sets {
            for line in text.lines() {
                lines += 1;
                for finding in find_secrets(line) {
                    flagged.push(format!(
                        "{language}: {line}\n    {} at `{}`",
                        finding.kind, &line[finding.range]
                    ));
                }
            }
        }
        assert!(lines > 1000, "{lines} lines");
        assert!(
            flagged.is_empty(),
            "{} false positives in {lines} lines:\n{}",
            flagged.len(),
            flagged.join("\n")
        );
    }

    /// Issue 31: shapes that were stored as written, and a redaction that took code along.
    #[test]
    fn issue_31_shapes_are_redacted_and_nothing_after_them() {
        for (text, redacted) in [
            (
                "deploy,,AKIAQX4BZNEK7WJR2PLM,Kq8vB3nX7mZ2pL9wR4tY6uI1oE5aS0dF3gH8jK2l",
                "deploy,,[REDACTED],[REDACTED]",
            ),
            (
                "curl -u admin:Pr0d!Adm1n#2024 https://ci.internal/api",
                "curl -u admin:[REDACTED] https://ci.internal/api",
            ),
            (
                r#"{"apiKey": "Zx7Qm2Lp9Vw4Kt8Rn3Bj6Hd1"}"#,
                r#"{"apiKey": "[REDACTED]"}"#,
            ),
            (
                r#"{"accessKey": "Zx7Qm2Lp9Vw4Kt8Rn3Bj6Hd1"}"#,
                r#"{"accessKey": "[REDACTED]"}"#,
            ),
        ] {
            // Which rule names it (ours or gitleaks') does not matter here.
            let (clean, _) = redact(text);
            assert_eq!(MARKER.replace_all(&clean, "[REDACTED]"), redacted, "{text}");
        }
        // A commit hash after an access key id is no secret key.
        let (clean, _) = redact("AKIAQX4BZNEK7WJR2PLM at 3f2a9c81d4e5b6a7980c1d2e3f4a5b6c7d8e9f0a");
        assert_eq!(
            MARKER.replace_all(&clean, "[REDACTED]"),
            "[REDACTED] at 3f2a9c81d4e5b6a7980c1d2e3f4a5b6c7d8e9f0a"
        );
        // A token in a query string takes none of the parameters after it.
        assert_eq!(
            redact("GET /cb?access_token=90d64460d14870c08c81352a05dedd3465940a7c&scope=user").0,
            "GET /cb?access_token=[REDACTED:secret_assignment]&scope=user"
        );
        let (clean, _) = redact("let t = PRIVATE-TOKEN: glpat-Xk4mQ9vL2pR7wT3nB8zY::parse(x)");
        assert!(clean.ends_with("]::parse(x)"), "{clean}");
        assert!(!clean.contains("glpat-Xk4m"), "{clean}");
        for text in [
            "fn pk_test_integration_suite() {",
            "let h_token = h_token?;",
            "docker run -u 1000:1000 image",
            "git push -u origin main",
            "curl -u \"$USER:$TOKEN\" https://x",
            "curl -u user: https://x",
            "cacheKey: user",
        ] {
            assert_eq!(redact(text).0, text, "{text}");
        }
    }

    #[test]
    fn usage_errors_are_told_without_their_values() {
        let names = |arg: &str| arg.starts_with("--") && !arg.contains('=') || arg == "update";
        let message = "error: invalid value 'ghp_1234567890abcdefghijklmnopqrstuvwxyzAB' for '--expected-revision <N>': invalid digit\n\ntip: pass '--expected-revision=ghp_1234567890abcdefghijklmnopqrstuvwxyzAB'";
        let shown = conceal_values(
            message,
            [
                "update",
                "--expected-revision=ghp_1234567890abcdefghijklmnopqrstuvwxyzAB",
            ],
            names,
        );
        assert_eq!(
            shown,
            "error: invalid value '<42 characters>' for '--expected-revision <N>': invalid digit\n\ntip: pass '--expected-revision=<42 characters>'"
        );
        // Short values only where they are quoted: `0` in `10` stays.
        let shown = conceal_values(
            "invalid value '0' for '--limit <N>' (1 to 10)",
            ["0"],
            names,
        );
        assert_eq!(
            shown,
            "invalid value '<1 character>' for '--limit <N>' (1 to 10)"
        );
        // Issue 48: a part of a value the parser quotes is concealed too; what it quotes of
        // its own is not.
        let shown = conceal_values(
            "invalid value 'db.example.com:5432:app:deploy:S3cr3tPassw0rd' for '--ref <REF>': the start line `5432:app:deploy:S3cr3tPassw0rd` is not a line number (e.g. `src/a.rs:10-42`)",
            ["--ref", "db.example.com:5432:app:deploy:S3cr3tPassw0rd"],
            names,
        );
        assert_eq!(
            shown,
            "invalid value '<45 characters>' for '--ref <REF>': the start line `<30 characters>` is not a line number (e.g. `src/a.rs:10-42`)"
        );
    }

    #[test]
    fn common_secret_shapes_are_redacted() {
        let cases = [
            (
                "key AKIAIOSFODNN7EXAMPLE in env",
                "key [REDACTED:aws_access_key] in env",
                "aws_access_key",
            ),
            (
                "Authorization: Bearer abcdef0123456789abcdef",
                "Authorization: Bearer [REDACTED:authorization_header]",
                "authorization_header",
            ),
            (
                "db password=hunter2hunter2 ok",
                "db password=[REDACTED:secret_assignment] ok",
                "secret_assignment",
            ),
            (
                "API_KEY: \"s3cr3tvalue\"",
                "API_KEY: \"[REDACTED:secret_assignment]\"",
                "secret_assignment",
            ),
            (
                "token ghp_0123456789abcdefghijABCDEFGHIJ012345 end",
                "token [REDACTED:github_pat] end",
                "github_pat",
            ),
            (
                "-----BEGIN RSA PRIVATE KEY-----\nMIIEabc\n-----END RSA PRIVATE KEY-----\nafter",
                "[REDACTED:private_key]\nafter",
                "private_key",
            ),
            (
                "db at postgres://app:s3cr3t@db.internal/app",
                "db at postgres://app:[REDACTED:url_credentials]@db.internal/app",
                "url_credentials",
            ),
        ];
        for (input, expected, kind) in cases {
            let (clean, found) = redact(input);
            assert_eq!(clean, expected, "{input}");
            assert_eq!(found.get(kind), Some(&1), "{input}: {found:?}");
        }
    }

    #[test]
    fn ordinary_text_is_left_alone() {
        for text in [
            "the password field is validated",
            "fn token_count() -> usize",
            "bearer of bad news",
            "AKIA is a prefix",
            "password: see vault",
            "record 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08 folded",
            "git_head 3b18e512dba79e4c8300dd08aeb37f8e728b8dad",
        ] {
            let (clean, found) = redact(text);
            assert_eq!(clean, text);
            assert!(found.is_empty(), "{text}: {found:?}");
        }
    }

    #[test]
    fn credentials_in_their_usual_places_are_redacted_whole() {
        for (input, expected) in [
            (
                "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
                "aws_secret_access_key = [REDACTED:aws_secret_access_key]",
            ),
            (
                "export AWS_SECRET_ACCESS_KEY=\"wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\"",
                "export AWS_SECRET_ACCESS_KEY=\"[REDACTED:aws_secret_access_key]\"",
            ),
            (
                "PASSWORD: \"correct horse battery staple\"",
                "PASSWORD: \"[REDACTED:secret_assignment]\"",
            ),
            (
                "AccountKey=abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZab==",
                "AccountKey=[REDACTED:azure_access_key]",
            ),
            (
                "hf_abcdefghijklmnopqrstuvwxyzABCDEFGH",
                "[REDACTED:huggingface_token]",
            ),
            (
                "SG.abcdefghijklmnopqrstuv.abcdefghijklmnopqrstuvwxyz0123456789ABCDEFG",
                "[REDACTED:sendgrid_api_key]",
            ),
            ("my_AKIAIOSFODNN7EXAMPLE", "my_[REDACTED:aws_access_key]"),
            (
                "AKIAIOSFODNN7EXAMPLE_suffix",
                "[REDACTED:aws_access_key]_suffix",
            ),
            (
                "id_ghp_1234567890abcdefghijklmnopqrstuvwxyzAB",
                "id_[REDACTED:github_token]",
            ),
            (
                "unknown patch field `my_AKIAIOSFODNN7EXAMPLE`",
                "unknown patch field `my_[REDACTED:aws_access_key]`",
            ),
        ] {
            assert_eq!(redact(input).0, expected, "{input}");
        }
        for text in [
            "BACKUP_AKIAIOSFODNN7EXAMPLEXYZ_FILE",
            "risk-assessment-for-the-quarterly-report",
            "run_pk_test_integration_suite",
            "from huggingface_hub import hf_hub_download",
            "password: \"stored in 1Password\"",
        ] {
            let (clean, found) = redact(text);
            assert_eq!(clean, text, "{found:?}");
        }
    }

    #[test]
    fn a_cut_comes_after_redaction_and_never_splits_a_marker() {
        let mut found = BTreeMap::new();
        let token = "ghp_1234567890abcdefghijklmnopqrstuvwxyzAB";
        // Cut first, 26 of the token's 42 characters would stay, and no rule knows them.
        let text = format!("{} {token} tail", "a".repeat(290));
        let cut = redact_and_truncate(&text, 320, &mut found);
        assert_eq!(
            cut,
            format!("{} [REDACTED:github_token] tail", "a".repeat(290))
        );
        assert_eq!(found.get("github_token"), Some(&1));
        // The marker is longer than the key: the result is cut again, outside the marker.
        let text = format!("{} AKIAIOSFODNN7EXAMPLE tail", "a".repeat(300));
        let cut = redact_and_truncate(&text, 320, &mut found);
        assert_eq!(cut, format!("{} ...", "a".repeat(300)));
        let text = format!("{} AKIAIOSFODNN7EXAMPLE tail", "a".repeat(290));
        let cut = redact_and_truncate(&text, 320, &mut found);
        assert_eq!(
            cut,
            format!("{} [REDACTED:aws_access_key] ...", "a".repeat(290))
        );
        assert!(cut.chars().count() <= 320);
        assert_eq!(truncate_redacted("short", 320), "short");
        assert_eq!(truncate_redacted("abcdefg", 6), "abc...");
    }

    #[test]
    fn redacting_twice_finds_nothing_new() {
        for text in [
            "password=abcdefgh1 and AKIAIOSFODNN7EXAMPLE",
            "postgres://u:p4ssw0rd@h/db Authorization: Basic dXNlcjpwYXNz",
            "token: 'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.sig'",
        ] {
            let (once, _) = redact(text);
            let (twice, found) = redact(&once);
            assert_eq!(twice, once);
            assert!(found.is_empty(), "{once}: {found:?}");
        }
    }

    #[test]
    fn overlapping_findings_become_one_redaction_of_the_most_specific_kind() {
        let (clean, found) =
            redact("AWS_SECRET_ACCESS_KEY=ghp_0123456789abcdefghijABCDEFGHIJ012345");
        assert_eq!(clean, "AWS_SECRET_ACCESS_KEY=[REDACTED:github_pat]");
        assert_eq!(found.values().sum::<usize>(), 1, "{found:?}");
    }

    #[test]
    fn located_secrets_name_the_path_never_the_value() {
        let value = serde_json::json!({
            "notes": ["fine", "password=hunter2hunter2"],
            "ids": {"ghp_0123456789abcdefghijABCDEFGHIJ012345": 1}
        });
        let found = locate_secrets(&value, "state");
        assert_eq!(
            found,
            vec![
                Located {
                    path: "state.notes.1".into(),
                    kind: "secret_assignment"
                },
                Located {
                    path: "state.ids.[REDACTED:github_pat]".into(),
                    kind: "github_pat"
                },
            ]
        );
    }

    #[test]
    fn patches_are_redacted_everywhere_and_reported() {
        let patch: Patch = serde_json::from_value(serde_json::json!({
            "objective": "rotate AKIAIOSFODNN7EXAMPLE",
            "scratch": {"notes": ["password: correcthorse9", "fine"]}
        }))
        .expect("patch");
        let (clean, redactions) = redact_patch(patch).expect("redact");
        assert_eq!(
            clean.objective.as_deref(),
            Some("rotate [REDACTED:aws_access_key]")
        );
        assert_eq!(
            clean.scratch.expect("scratch").notes[0],
            "password: [REDACTED:secret_assignment]"
        );
        assert_eq!(
            redactions,
            vec![
                Redaction {
                    kind: "aws_access_key",
                    count: 1
                },
                Redaction {
                    kind: "secret_assignment",
                    count: 1
                },
            ]
        );
    }
}
