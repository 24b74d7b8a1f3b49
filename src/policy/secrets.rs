//! Secret scanning for text that enters the git-tracked state.
//!
//! Everything a write stores is scanned for common secret shapes (private key blocks, cloud and
//! forge access keys, bearer tokens, `password=`-style assignments). Matches are replaced by
//! `[REDACTED:<kind>]` before anything is written, and the findings (kind and count, never the
//! secret) are reported so nothing is silently stored or silently changed.

use std::collections::BTreeMap;
use std::sync::LazyLock;

use regex::Regex;
use serde::Serialize;
use serde_json::Value;

use crate::state::patch::Patch;

/// How many secrets of one kind were redacted.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct Redaction {
    /// The kind of secret (`private_key`, `aws_access_key`, ...).
    pub kind: &'static str,
    /// How many were found.
    pub count: usize,
}

struct Detector {
    kind: &'static str,
    pattern: Regex,
    /// Which capture group holds the secret (0 = the whole match).
    group: usize,
}

static DETECTORS: LazyLock<Vec<Detector>> = LazyLock::new(|| {
    let detector = |kind, pattern: &str, group| Detector {
        kind,
        pattern: Regex::new(pattern).expect("secret patterns are valid"),
        group,
    };
    vec![
        detector(
            "private_key",
            r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----(?s:.*?)(?:-----END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|\z)",
            0,
        ),
        detector(
            "aws_access_key",
            r"\b(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA)[0-9A-Z]{16}\b",
            0,
        ),
        detector(
            "github_token",
            r"\b(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{22,})\b",
            0,
        ),
        detector("slack_token", r"\bxox[abposr]-[A-Za-z0-9-]{10,}", 0),
        detector("google_api_key", r"\bAIza[0-9A-Za-z_-]{35}", 0),
        detector(
            "openai_api_key",
            r"\bsk-(?:proj-|ant-)?[A-Za-z0-9_-]{20,}",
            0,
        ),
        detector(
            "bearer_token",
            r"(?i)\bbearer\s+([A-Za-z0-9._~+/-]{16,}=*)",
            1,
        ),
        detector(
            "password_assignment",
            r#"(?i)\b(?:password|passwd|pwd|secret|api[_-]?key|access[_-]?token|auth[_-]?token|client[_-]?secret)\b\s*[:=]\s*["']?([^\s"',;]{4,})"#,
            1,
        ),
    ]
});

/// Replaces every secret in `text`; counts what was replaced into `found`.
pub fn redact_text(text: &str, found: &mut BTreeMap<&'static str, usize>) -> Option<String> {
    let mut current: Option<String> = None;
    for detector in DETECTORS.iter() {
        let source = current.as_deref().unwrap_or(text);
        let mut ranges = Vec::new();
        for captures in detector.pattern.captures_iter(source) {
            if let Some(secret) = captures.get(detector.group)
                && !secret.as_str().starts_with("[REDACTED:")
            {
                ranges.push(secret.range());
            }
        }
        if ranges.is_empty() {
            continue;
        }
        *found.entry(detector.kind).or_default() += ranges.len();
        let mut redacted = String::with_capacity(source.len());
        let mut last = 0;
        for range in ranges {
            redacted.push_str(&source[last..range.start]);
            redacted.push_str(&format!("[REDACTED:{}]", detector.kind));
            last = range.end;
        }
        redacted.push_str(&source[last..]);
        current = Some(redacted);
    }
    current
}

/// Redacts every string in the patch, returning the cleaned patch and what was found.
pub fn redact_patch(patch: Patch) -> (Patch, Vec<Redaction>) {
    let mut found = BTreeMap::new();
    let Ok(mut value) = serde_json::to_value(&patch) else {
        return (patch, Vec::new());
    };
    redact_value(&mut value, &mut found);
    if found.is_empty() {
        return (patch, Vec::new());
    }
    let cleaned = serde_json::from_value(value).unwrap_or(patch);
    let redactions = found
        .into_iter()
        .map(|(kind, count)| Redaction { kind, count })
        .collect();
    (cleaned, redactions)
}

fn redact_value(value: &mut Value, found: &mut BTreeMap<&'static str, usize>) {
    match value {
        Value::String(text) => {
            if let Some(clean) = redact_text(text, found) {
                *text = clean;
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|item| redact_value(item, found)),
        Value::Object(fields) => fields
            .values_mut()
            .for_each(|field| redact_value(field, found)),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn redact(text: &str) -> (String, BTreeMap<&'static str, usize>) {
        let mut found = BTreeMap::new();
        let clean = redact_text(text, &mut found).unwrap_or_else(|| text.to_owned());
        (clean, found)
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
                "Authorization: Bearer [REDACTED:bearer_token]",
                "bearer_token",
            ),
            (
                "db password=hunter2hunter2 ok",
                "db password=[REDACTED:password_assignment] ok",
                "password_assignment",
            ),
            (
                "API_KEY: \"s3cr3tvalue\"",
                "API_KEY: \"[REDACTED:password_assignment]\"",
                "password_assignment",
            ),
            (
                "token ghp_0123456789abcdefghijABCDEFGHIJ012345 end",
                "token [REDACTED:github_token] end",
                "github_token",
            ),
            (
                "-----BEGIN RSA PRIVATE KEY-----\nMIIEabc\n-----END RSA PRIVATE KEY-----\nafter",
                "[REDACTED:private_key]\nafter",
                "private_key",
            ),
        ];
        for (input, expected, kind) in cases {
            let (clean, found) = redact(input);
            assert_eq!(clean, expected, "{input}");
            assert_eq!(found.get(kind), Some(&1), "{input}");
        }
    }

    #[test]
    fn ordinary_text_is_left_alone() {
        for text in [
            "the password field is validated",
            "fn token_count() -> usize",
            "bearer of bad news",
            "AKIA is a prefix",
        ] {
            let (clean, found) = redact(text);
            assert_eq!(clean, text);
            assert!(found.is_empty(), "{text}: {found:?}");
        }
    }

    #[test]
    fn redacting_twice_finds_nothing_new() {
        let (once, _) = redact("password=abcdefgh and AKIAIOSFODNN7EXAMPLE");
        let (twice, found) = redact(&once);
        assert_eq!(twice, once);
        assert!(found.is_empty(), "{found:?}");
    }

    #[test]
    fn patches_are_redacted_everywhere_and_reported() {
        let patch: Patch = serde_json::from_value(serde_json::json!({
            "objective": "rotate AKIAIOSFODNN7EXAMPLE",
            "scratch": {"notes": ["password: correcthorse", "fine"]}
        }))
        .expect("patch");
        let (clean, redactions) = redact_patch(patch);
        assert_eq!(
            clean.objective.as_deref(),
            Some("rotate [REDACTED:aws_access_key]")
        );
        assert_eq!(
            clean.scratch.expect("scratch").notes[0],
            "password: [REDACTED:password_assignment]"
        );
        assert_eq!(
            redactions,
            vec![
                Redaction {
                    kind: "aws_access_key",
                    count: 1
                },
                Redaction {
                    kind: "password_assignment",
                    count: 1
                },
            ]
        );
    }
}
