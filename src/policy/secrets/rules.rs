//! Our own detectors, for what a rule set written for source files misses in notes and
//! commands: secrets assigned to a secret-sounding name in `=`, `:` or JSON form, credentials
//! in URLs, `Authorization:` headers and bearer tokens, private key blocks cut short, and a few
//! prefix-shaped tokens at lengths the gitleaks rules do not accept.
//!
//! The assignment detector is where false alarms come from, so its value has to look like a
//! secret: at least six characters, no spaces (`password: see vault` is prose), not a number,
//! not a template or a mask (`${DB_PASSWORD}`, `<token>`, `****`), not a placeholder word, not
//! an identifier or a dotted path (`config.api_key`), and not of low entropy.

use std::ops::Range;
use std::sync::LazyLock;
use std::sync::OnceLock;

use regex::Regex;

use super::gitleaks::shannon_entropy;

/// A finding of one of our detectors.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuleMatch {
    /// The kind of secret.
    pub kind: &'static str,
    /// Where the secret is (char boundaries).
    pub range: Range<usize>,
    /// Whether it is the generic assignment detector (a weaker claim than a named shape).
    pub generic: bool,
}

/// The least entropy, in bits per character, of a value the assignment detector flags.
pub const ASSIGNMENT_ENTROPY: f64 = 2.3;
/// The shortest value the assignment detector flags, in characters.
pub const ASSIGNMENT_MIN_CHARS: usize = 6;

/// How a detector's candidate is judged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Check {
    /// A shape specific enough to trust as it is (templates and masks aside).
    Shape,
    /// A value after a secret-sounding name: the full set of value checks.
    Assignment,
    /// The credential of an `Authorization:` header: trusted after a scheme word, judged as an
    /// assignment without one.
    Header,
}

struct Detector {
    kind: &'static str,
    /// Lowercase words one of which the text must hold for the pattern to run.
    keywords: &'static [&'static str],
    pattern: &'static str,
    /// Compiled the first time a text holds one of the keywords: most texts hold none, and
    /// compiling every pattern would cost a write more than the rest of its checks.
    compiled: OnceLock<Regex>,
    check: Check,
}

impl Detector {
    fn regex(&self) -> &Regex {
        self.compiled
            .get_or_init(|| Regex::new(self.pattern).expect("secret patterns are valid"))
    }
}

static DETECTORS: LazyLock<Vec<Detector>> = LazyLock::new(|| {
    let detector = |kind, keywords, pattern, check| Detector {
        kind,
        keywords,
        pattern,
        compiled: OnceLock::new(),
        check,
    };
    vec![
        detector(
            "private_key",
            &["private key"],
            r"(?P<secret>-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----(?s:.*?)(?:-----END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|\z))",
            Check::Shape,
        ),
        detector(
            "url_credentials",
            &["://"],
            r#"(?i)\b[a-z][a-z0-9+.-]{1,30}://[^\s:@/?#"'<>]{0,256}:(?P<secret>[^\s@/?#"'<>]{1,256})@[^\s@]"#,
            Check::Shape,
        ),
        detector(
            "authorization_header",
            &["authorization"],
            r#"(?i)\b(?:proxy-)?authorization\b["']?[ \t]*[:=][ \t]*["']?[ \t]*(?:(?P<scheme>basic|bearer|token|digest|negotiate|ntlm|api-?key)[ \t]+)?(?P<secret>[A-Za-z0-9._~+/=:-]{6,})"#,
            Check::Header,
        ),
        detector(
            "bearer_token",
            &["bearer"],
            r"(?i)\bbearer[ \t]+(?P<secret>[A-Za-z0-9._~+/-]{16,}=*)",
            Check::Shape,
        ),
        detector(
            "secret_assignment",
            &[
                "passw",
                "passphrase",
                "pwd",
                "secret",
                "token",
                "credential",
                "key",
            ],
            r#"(?i)(?P<name>[A-Za-z0-9_.$-]*(?:passw(?:or)?d|passphrase|pwd|secret|token|credential|[_.-]key|apikey)[A-Za-z0-9_.-]*)["']?[ \t]*(?::=|=>|=|:)[ \t]*(?:"(?P<dq>[^"\r\n]{0,512})"|'(?P<sq>[^'\r\n]{0,512})'|(?P<bare>[^\s"'`,;()\[\]{}<>]{1,512}))"#,
            Check::Assignment,
        ),
        detector(
            "secret_assignment",
            &["--"],
            r#"(?i)--(?P<name>password|passwd|passphrase|token|secret|api-?key|auth-token|access-token|client-secret)(?:=|[ \t]+)(?:"(?P<dq>[^"\r\n]{0,512})"|'(?P<sq>[^'\r\n]{0,512})'|(?P<bare>[^\s"'`,;()\[\]{}<>]{1,512}))"#,
            Check::Assignment,
        ),
        detector(
            "aws_access_key",
            &[
                "akia", "asia", "agpa", "aida", "aroa", "anpa", "abia", "acca", "a3t",
            ],
            r"\b(?P<secret>(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA|ABIA|ACCA|A3T[A-Z0-9])[0-9A-Z]{16})\b",
            Check::Shape,
        ),
        detector(
            "github_token",
            &["gh", "github_pat_"],
            r"\b(?P<secret>gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{22,})\b",
            Check::Shape,
        ),
        detector(
            "slack_token",
            &["xox"],
            r"\b(?P<secret>xox[abposre]-[A-Za-z0-9-]{10,})",
            Check::Shape,
        ),
        detector(
            "google_api_key",
            &["aiza"],
            r"\b(?P<secret>AIza[0-9A-Za-z_-]{35})",
            Check::Shape,
        ),
        detector(
            "openai_api_key",
            &["sk-"],
            r"\b(?P<secret>sk-(?:proj-|ant-|svcacct-|admin-)?[A-Za-z0-9_-]{20,})",
            Check::Shape,
        ),
        detector(
            "stripe_access_token",
            &["_live_", "_test_", "_prod_"],
            r"\b(?P<secret>(?:sk|rk|pk)_(?:live|test|prod)_[A-Za-z0-9]{10,})",
            Check::Shape,
        ),
        detector(
            "npm_access_token",
            &["npm_"],
            r"\b(?P<secret>npm_[A-Za-z0-9]{30,})",
            Check::Shape,
        ),
        detector(
            "jwt",
            &["ey"],
            r"\b(?P<secret>eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*)",
            Check::Shape,
        ),
    ]
});

/// Names that carry a secret-sounding word but hold no secret (`token_count`, `public_key`,
/// `secret_name`, `max_tokens`).
static BENIGN_NAME: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?i)(?:public|pub[_.-]?key|[_.-](?:ids?|names?|types?|kind|urls?|uris?|endpoint|paths?|files?|dir|len|length|size|count|limit|ttl|expiry|expires(?:_at)?|hash|field|column|header|prefix|env|var|ref|version|format|algorithm|alg|policy|store|ring|board)$|^(?:max|min|num|n|total)[_.-])",
    )
    .expect("valid")
});

static TEMPLATE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"^(?:\$\{?[A-Za-z_][A-Za-z0-9_]*\}?|\$\(.*\)|\$?\{\{.*\}\}|<[^<>]+>|%[A-Za-z_]+%|@[A-Za-z_]+@|#\{.*\}|\[REDACTED:.*)$",
    )
    .expect("valid")
});

static IDENTIFIER: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"^(?:[A-Za-z_.$-]+|[A-Za-z_$][A-Za-z0-9_$]*(?:(?:\.|::|->)[A-Za-z_$][A-Za-z0-9_$]*)+)$",
    )
    .expect("valid")
});

static QUOTED_IDENTIFIER: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^[A-Za-z]+(?:[_.-][A-Za-z]+)+$").expect("valid"));

const PLACEHOLDER_PARTS: [&str; 14] = [
    "example",
    "placeholder",
    "changeme",
    "change_me",
    "change-me",
    "your_",
    "your-",
    "yourpass",
    "dummy",
    "redacted",
    "xxxx",
    "****",
    "notreal",
    "not_real",
];

const PLACEHOLDER_WORDS: [&str; 18] = [
    "password",
    "passwd",
    "secret",
    "token",
    "null",
    "none",
    "nil",
    "true",
    "false",
    "undefined",
    "empty",
    "hidden",
    "masked",
    "required",
    "optional",
    "string",
    "sample",
    "unknown",
];

/// A template (`${DB_PASSWORD}`, `{{ secrets.TOKEN }}`, `<token>`), a mask (`****`, `xxxxxx`),
/// or one of our own redaction markers.
fn is_template_or_mask(value: &str) -> bool {
    let value = value.trim();
    if value.is_empty() || TEMPLATE.is_match(value) {
        return true;
    }
    let mut chars = value.chars();
    let first = chars.next().unwrap_or_default();
    value.chars().all(|c| "*xX.•#_-".contains(c)) || chars.all(|c| c == first)
}

fn is_placeholder(value: &str) -> bool {
    let lower = value.to_lowercase();
    PLACEHOLDER_PARTS.iter().any(|part| lower.contains(part))
        || PLACEHOLDER_WORDS.iter().any(|word| lower == *word)
}

/// Whether the value after a secret-sounding name looks like a secret.
pub fn is_secret_value(value: &str, quoted: bool) -> bool {
    let value = value.trim();
    // `a::b` and `a == b` are code, not an assignment.
    !value.starts_with([':', '='])
        && value.chars().count() >= ASSIGNMENT_MIN_CHARS
        && !value.chars().any(char::is_whitespace)
        && !value
            .chars()
            .all(|c| c.is_ascii_digit() || ".,_+-:".contains(c))
        && !is_template_or_mask(value)
        && !is_placeholder(value)
        && !(if quoted {
            QUOTED_IDENTIFIER.is_match(value)
        } else {
            IDENTIFIER.is_match(value)
        })
        && !value.starts_with(['/', '~'])
        && !value.starts_with("./")
        && !value.to_ascii_lowercase().starts_with("http")
        && shannon_entropy(value) >= ASSIGNMENT_ENTROPY
}

/// Every secret our detectors find in `text`; `lowered` is `text` lowercased.
pub fn find(text: &str, lowered: &str) -> Vec<RuleMatch> {
    let mut found = Vec::new();
    for detector in DETECTORS.iter() {
        if !detector.keywords.iter().any(|word| lowered.contains(word)) {
            continue;
        }
        for captures in detector.regex().captures_iter(text) {
            let judged = match detector.check {
                Check::Shape => captures
                    .name("secret")
                    .filter(|secret| !is_template_or_mask(secret.as_str())),
                Check::Header => captures.name("secret").filter(|secret| {
                    if captures.name("scheme").is_some() {
                        !is_template_or_mask(secret.as_str())
                    } else {
                        is_secret_value(secret.as_str(), false)
                            && shannon_entropy(secret.as_str()) >= 3.0
                    }
                }),
                Check::Assignment => {
                    let benign_name = captures
                        .name("name")
                        .is_some_and(|name| BENIGN_NAME.is_match(name.as_str()));
                    let (value, quoted) = match (
                        captures.name("dq").or_else(|| captures.name("sq")),
                        captures.name("bare"),
                    ) {
                        (Some(value), _) => (Some(value), true),
                        (None, bare) => (bare, false),
                    };
                    value.filter(|value| !benign_name && is_secret_value(value.as_str(), quoted))
                }
            };
            if let Some(secret) = judged {
                found.push(RuleMatch {
                    kind: detector.kind,
                    range: secret.range(),
                    generic: detector.check == Check::Assignment,
                });
            }
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secrets(text: &str) -> Vec<(&'static str, &str)> {
        find(text, &text.to_lowercase())
            .into_iter()
            .map(|m| (m.kind, &text[m.range]))
            .collect()
    }

    #[test]
    fn every_detector_compiles() {
        for detector in DETECTORS.iter() {
            assert!(
                Regex::new(detector.pattern).is_ok(),
                "{} does not compile",
                detector.kind
            );
        }
    }

    #[test]
    fn assignments_in_every_form() {
        for (text, secret) in [
            ("DB_PASSWORD=Xk9mP2vL8qRz", "Xk9mP2vL8qRz"),
            (
                "aws_secret_access_key = wJalrXUtnFEMIK7MDENGbPxRfiCY",
                "wJalrXUtnFEMIK7MDENGbPxRfiCY",
            ),
            (r#"{"password": "hunter2hunter2"}"#, "hunter2hunter2"),
            ("api_key: 'q8W3eR5tY7uI'", "q8W3eR5tY7uI"),
            (
                "//registry.npmjs.org/:_authToken=a1b2c3d4e5f6g7h8",
                "a1b2c3d4e5f6g7h8",
            ),
            ("mysql --password=Tr0ub4dor3 db", "Tr0ub4dor3"),
            ("client_secret := \"9f8e7d6c5b4a\"", "9f8e7d6c5b4a"),
        ] {
            let found = secrets(text);
            assert!(found.iter().any(|(_, s)| *s == secret), "{text}: {found:?}");
        }
    }

    #[test]
    fn prose_identifiers_and_placeholders_are_not_secrets() {
        for text in [
            "password: see vault",
            "password: \"see the vault\"",
            "token_count: 12345678",
            "max_tokens = 4096",
            "let api_key = config.api_key;",
            "secret_key = os.environ[\"SECRET_KEY\"]",
            "token = get_token()",
            "DB_PASSWORD=${DB_PASSWORD}",
            "password: <your password>",
            "password = \"changeme\"",
            "password: ********",
            "public_key: ssh-ed25519 AAAAC3NzaC1lZDI1NTE5",
            "the tokenizer: wordpiece",
            "use crate::policy::secrets::redactions;",
            "if token == expected_token_value {",
            "Authorization: required",
            "bearer of bad news",
            "postgres://localhost:5432/db",
            "postgres://user:${PASS}@host/db",
        ] {
            assert!(secrets(text).is_empty(), "{text}: {:?}", secrets(text));
        }
    }

    #[test]
    fn urls_headers_and_bearers() {
        assert_eq!(
            secrets("postgres://user:pass@db.internal:5432/app"),
            vec![("url_credentials", "pass")]
        );
        assert_eq!(
            secrets("Authorization: Basic dXNlcjpwYXNzd29yZA=="),
            vec![("authorization_header", "dXNlcjpwYXNzd29yZA==")]
        );
        let bearer = secrets("-H 'Authorization: Bearer abcdefghijklmnop0123456789'");
        assert!(bearer.contains(&("authorization_header", "abcdefghijklmnop0123456789")));
        assert!(bearer.contains(&("bearer_token", "abcdefghijklmnop0123456789")));
    }
}
