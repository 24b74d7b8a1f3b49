//! What a value found where a secret goes has to look like to be taken for one, and which
//! names hold none: the judgments the detectors of [`rules`](super::rules) share.
//!
//! The assignment detector is where false alarms come from, so its value has to look like a
//! secret: at least six characters, no spaces (`password: see vault` is prose), not a number,
//! not a template or a mask (`${DB_PASSWORD}`, `<token>`, `****`), not a placeholder word, not
//! an identifier or a dotted path (`config.api_key`), and not of low entropy. One exception
//! to "no spaces": a quoted value after a password's name that reads as a passphrase, not as
//! prose (`"correct horse battery staple"`, not `"see the vault"`). A shape whose random part
//! must look random asks less of it ([`is_random`]).

use std::sync::LazyLock;

use regex::Regex;

use super::gitleaks::shannon_entropy;

/// The least entropy, in bits per character, of a value the assignment detector flags.
pub const ASSIGNMENT_ENTROPY: f64 = 2.3;
/// The shortest value the assignment detector flags, in characters.
pub const ASSIGNMENT_MIN_CHARS: usize = 6;

/// Names that carry a secret-sounding word but hold no secret (`token_count`, `public_key`,
/// `secret_name`, `max_tokens`, `tokenUrl`, `credentialSource`).
pub static BENIGN_NAME: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?i)(?:public|pub[_.-]?key|[_.-](?:ids?|names?|types?|kind|urls?|uris?|endpoint|paths?|files?|dir|len|length|size|count|limit|ttl|expiry|expires(?:_at)?|hash|field|column|header|prefix|env|var|ref|version|format|algorithm|alg|policy|store|ring|board)$|(?-i:[a-z0-9](?:Ids?|Names?|Types?|Kind|Urls?|Uris?|URL|Endpoint|Paths?|Files?|Dir|Len|Length|Size|Count|Limit|Hash|Field|Header|Prefix|Env|Var|Ref|Version|Format|Source|Policy|Store))$|^(?:max|min|num|n|total)[_.-])",
    )
    .expect("valid")
});

static TEMPLATE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"^(?:\$\{?[A-Za-z_][A-Za-z0-9_]*\}?|\$\(.*\)|\$?\{\{.*\}\}|\{[A-Za-z0-9_.:]*\}|<[^<>]+>|%[A-Za-z_]+%|%[-+ #0-9.]*[A-Za-z](?:[^A-Za-z0-9].*)?|@[A-Za-z_]+@|#\{.*\}|\[REDACTED:.*)$",
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
pub fn is_template_or_mask(value: &str) -> bool {
    let value = value.trim();
    if value.is_empty() || TEMPLATE.is_match(value) {
        return true;
    }
    let mut chars = value.chars();
    let first = chars.next().unwrap_or_default();
    value.chars().all(|c| "*xX.•#_-".contains(c)) || chars.all(|c| c == first)
}

/// A placeholder: a value holding `example`, `changeme`, `your_`, `xxxx` and the like, or one
/// of the words that stand for a value (`password`, `null`, `required`, ...).
pub fn is_placeholder(value: &str) -> bool {
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
            // Code, not a password: `&token`, `*token`, `!!key.emit` (a reference, a
            // dereference, a negation) and Rust's `token?`.
            let name = value.trim_start_matches(['&', '*', '!']);
            IDENTIFIER.is_match(name.strip_suffix('?').unwrap_or(name))
        })
        && !value.starts_with(['/', '~'])
        && !value.starts_with("./")
        && !value.to_ascii_lowercase().starts_with("http")
        && !value.to_ascii_lowercase().starts_with("urn:")
        && shannon_entropy(value) >= ASSIGNMENT_ENTROPY
}

/// Whether `value` looks drawn at random: two of digits, lowercase and uppercase letters, and
/// not only hex digits. An identifier (`pk_test_integrationsuite`) or a commit hash in a
/// secret's place is not one.
pub fn is_random(value: &str) -> bool {
    let classes = [
        value.chars().any(|c| c.is_ascii_digit()),
        value.chars().any(|c| c.is_ascii_lowercase()),
        value.chars().any(|c| c.is_ascii_uppercase()),
    ];
    classes.iter().filter(|has| **has).count() >= 2 && !value.chars().all(|c| c.is_ascii_hexdigit())
}

/// Words that make a quoted value with spaces read as prose (`"see the vault"`, `"stored in
/// 1Password"`, `"not set"`) rather than as a passphrase.
const PROSE_WORDS: [&str; 44] = [
    "a",
    "an",
    "the",
    "see",
    "ask",
    "in",
    "on",
    "at",
    "of",
    "to",
    "from",
    "for",
    "with",
    "via",
    "by",
    "is",
    "are",
    "was",
    "be",
    "not",
    "no",
    "set",
    "unset",
    "use",
    "used",
    "stored",
    "vault",
    "env",
    "environment",
    "manager",
    "file",
    "config",
    "same",
    "as",
    "above",
    "below",
    "here",
    "there",
    "your",
    "our",
    "their",
    "this",
    "that",
    "it",
];

/// Whether a quoted value with spaces after a password's name is a passphrase
/// (`"correct horse battery staple"`): two to eight words, none of them prose, and otherwise
/// what [`is_secret_value`] asks of a value.
pub fn is_passphrase(value: &str) -> bool {
    let value = value.trim();
    let words: Vec<String> = value
        .split_whitespace()
        .map(|word| {
            word.trim_matches(|c: char| !c.is_alphanumeric())
                .to_lowercase()
        })
        .collect();
    (2..=8).contains(&words.len())
        && value.chars().count() >= 2 * ASSIGNMENT_MIN_CHARS
        && !words
            .iter()
            .any(|word| PROSE_WORDS.contains(&word.as_str()))
        && !is_template_or_mask(value)
        && !is_placeholder(value)
        && shannon_entropy(value) >= ASSIGNMENT_ENTROPY
}
