//! The gitleaks default rule set, read from its own rule file (`gitleaks.toml` beside this
//! module, `config/gitleaks.toml` of gitleaks/gitleaks, MIT licensed: see `gitleaks.LICENSE`),
//! and matched the way gitleaks matches it.
//!
//! What is kept of gitleaks' detector: the keyword prefilter (a rule runs only when one of its
//! keywords occurs in the lowercased text; one Aho-Corasick pass finds them all), the secret
//! group (the rule's `secretGroup`, else the first non-empty capture group, else the match),
//! the Shannon entropy floor, and the global and per-rule allowlists (regexes on the secret,
//! the match or the line; stopwords in the secret; `AND` conditions). What is left out:
//! rules and allowlist entries that depend on a file path (the text scanned here has none, so
//! gitleaks itself would skip a path-bound rule), commit allowlists, and the base64 decoding
//! pass. What is changed: the end most named rules give a token (a quote, a space, `;` or the
//! end) also takes punctuation closing a sentence, a list or a bracket before one of those
//! ([`TOKEN_END_OR_PUNCTUATION`]), as a token is written in a note.
//!
//! The patterns are RE2 syntax, where `\w`, `\d`, `\s` and `\b` are ASCII. They are compiled as
//! byte patterns with Unicode classes off, which keeps that meaning; a match is then widened to
//! whole characters by the caller. Each pattern is compiled the first time its keywords are seen,
//! so a text that names no service costs one Aho-Corasick pass.

use std::collections::HashSet;
use std::ops::Range;
use std::sync::LazyLock;
use std::sync::OnceLock;

use aho_corasick::AhoCorasick;
use regex::bytes::Regex;
use regex::bytes::RegexBuilder;
use serde::Deserialize;

/// The rule file, verbatim.
const RULES_TOML: &str = include_str!("gitleaks.toml");

/// One match of a rule: where the secret is, and the rule's id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuleMatch {
    /// The rule's id, in snake_case (`github_pat`, `generic_api_key`).
    pub kind: &'static str,
    /// Where the secret is, in bytes of the scanned text (not always on a char boundary).
    pub range: Range<usize>,
    /// Whether the rule is one of gitleaks' generic ones (a weaker claim than a named service).
    pub generic: bool,
}

#[derive(Debug, Deserialize)]
struct RuleFile {
    #[serde(default)]
    allowlist: Option<AllowlistEntry>,
    #[serde(default)]
    rules: Vec<RuleEntry>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct RuleEntry {
    id: String,
    #[serde(default)]
    regex: Option<String>,
    #[serde(default)]
    secret_group: Option<usize>,
    #[serde(default)]
    entropy: Option<f64>,
    #[serde(default)]
    keywords: Vec<String>,
    #[serde(default)]
    path: Option<String>,
    #[serde(default)]
    allowlists: Vec<AllowlistEntry>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct AllowlistEntry {
    #[serde(default)]
    condition: Option<String>,
    #[serde(default)]
    regex_target: Option<String>,
    #[serde(default)]
    regexes: Vec<String>,
    #[serde(default)]
    stopwords: Vec<String>,
    #[serde(default)]
    paths: Vec<String>,
    #[serde(default)]
    commits: Vec<String>,
}

/// What an allowlist regex is matched against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Target {
    Secret,
    Match,
    Line,
}

struct Allowlist {
    target: Target,
    /// `AND`: every kind of check present must pass.
    all: bool,
    /// Has path or commit checks, which never pass here (there is no path or commit).
    has_location_checks: bool,
    regexes: Vec<String>,
    compiled: OnceLock<Option<Regex>>,
    /// Lowercased; built into a matcher the first time a finding is checked against them.
    stopwords: Vec<String>,
    stopword_matcher: OnceLock<AhoCorasick>,
}

struct Rule {
    kind: String,
    pattern: String,
    compiled: OnceLock<Option<Regex>>,
    secret_group: Option<usize>,
    entropy: Option<f64>,
    keywords: Vec<usize>,
    allowlists: Vec<Allowlist>,
    generic: bool,
}

struct RuleSet {
    rules: Vec<Rule>,
    global: Vec<Allowlist>,
    /// Every keyword of every rule, lowercased; a rule names its keywords by index.
    prefilter: AhoCorasick,
}

static RULE_SET: LazyLock<RuleSet> = LazyLock::new(|| load(RULES_TOML));

/// How most rules end a token: a quote, a space, `;`, an escaped newline or the end of the
/// text. A token followed by punctuation (`use sq0atp-....`, `(PMAK-...)`) is refused.
const TOKEN_END: &str = r#"(?:[\x60'"\s;]|\\[nr]|$)"#;

/// [`TOKEN_END`], or punctuation that closes a sentence, a clause or a bracket and then one of
/// those: how a token sits in a note. Punctuation before more text (`token.method()`) still
/// ends nothing. Generic rules keep their end: a name's value in prose ends with a full stop.
const TOKEN_END_OR_PUNCTUATION: &str =
    r#"(?:[\x60'"\s;]|\\[nr]|$|[.,:!?)\]}>]+(?:[\x60'"\s;]|\\[nr]|$))"#;

fn load(text: &str) -> RuleSet {
    // The file is part of the binary and a unit test parses it: a failure here is a build
    // that was never tested.
    let file: RuleFile = toml::from_str(text).expect("the embedded gitleaks rules parse");
    let mut keywords: Vec<String> = Vec::new();
    let mut rules = Vec::new();
    for entry in file.rules {
        // A path-bound rule never applies to text without a path; a rule without a pattern
        // matches file names only.
        let (Some(pattern), None) = (entry.regex, entry.path) else {
            continue;
        };
        let keyword_ids = entry
            .keywords
            .iter()
            .map(|keyword| {
                let keyword = keyword.to_lowercase();
                match keywords.iter().position(|known| *known == keyword) {
                    Some(at) => at,
                    None => {
                        keywords.push(keyword);
                        keywords.len() - 1
                    }
                }
            })
            .collect();
        let generic = entry.id.contains("generic");
        rules.push(Rule {
            generic,
            kind: entry.id.replace('-', "_"),
            pattern: match pattern.strip_suffix(TOKEN_END) {
                Some(token) if !generic => format!("{token}{TOKEN_END_OR_PUNCTUATION}"),
                _ => pattern,
            },
            compiled: OnceLock::new(),
            secret_group: entry.secret_group.filter(|group| *group > 0),
            entropy: entry.entropy.filter(|entropy| *entropy > 0.0),
            keywords: keyword_ids,
            allowlists: entry.allowlists.into_iter().map(allowlist).collect(),
        });
    }
    let prefilter = AhoCorasick::builder()
        .match_kind(aho_corasick::MatchKind::Standard)
        .build(&keywords)
        .expect("the keyword prefilter builds");
    RuleSet {
        rules,
        global: file.allowlist.into_iter().map(allowlist).collect(),
        prefilter,
    }
}

fn allowlist(entry: AllowlistEntry) -> Allowlist {
    Allowlist {
        target: match entry.regex_target.as_deref() {
            Some("match") => Target::Match,
            Some("line") => Target::Line,
            _ => Target::Secret,
        },
        all: entry
            .condition
            .is_some_and(|condition| condition.eq_ignore_ascii_case("and")),
        has_location_checks: !entry.paths.is_empty() || !entry.commits.is_empty(),
        regexes: entry.regexes,
        compiled: OnceLock::new(),
        stopwords: entry.stopwords.iter().map(|w| w.to_lowercase()).collect(),
        stopword_matcher: OnceLock::new(),
    }
}

/// Compiles an RE2 pattern with ASCII classes, as gitleaks' Go regexp reads it. A pattern the
/// Rust engine cannot read is skipped (a unit test proves every shipped pattern compiles).
fn compile(pattern: &str) -> Option<Regex> {
    RegexBuilder::new(&from_re2(pattern))
        .unicode(false)
        .size_limit(64 * 1024 * 1024)
        .dfa_size_limit(16 * 1024 * 1024)
        .build()
        .ok()
}

/// RE2 reads a `{` that starts no repetition (`{{ secrets.X }}`, `${VAR}`) as a literal; the
/// Rust engine refuses it, so such a brace is escaped. Everything else is the same syntax.
fn from_re2(pattern: &str) -> String {
    let chars: Vec<char> = pattern.chars().collect();
    let mut out = String::with_capacity(pattern.len() + 8);
    let mut in_class = false;
    let mut at = 0;
    while at < chars.len() {
        let c = chars[at];
        match c {
            '\\' => {
                out.push(c);
                if let Some(next) = chars.get(at + 1) {
                    out.push(*next);
                }
                at += 2;
                continue;
            }
            '[' if in_class && chars.get(at + 1) == Some(&':') => {
                // A POSIX class (`[:alnum:]`) inside a bracket: copy it whole.
                let end = (at + 2..chars.len().saturating_sub(1))
                    .find(|&i| chars[i] == ':' && chars[i + 1] == ']')
                    .map_or(at, |i| i + 1);
                out.extend(&chars[at..=end]);
                at = end + 1;
                continue;
            }
            '[' if !in_class => {
                in_class = true;
                out.push(c);
                at += 1;
                if chars.get(at) == Some(&'^') {
                    out.push('^');
                    at += 1;
                }
                if chars.get(at) == Some(&']') {
                    out.push_str("\\]");
                    at += 1;
                }
                continue;
            }
            ']' if in_class => {
                in_class = false;
                out.push(c);
            }
            '{' if !in_class && !starts_repetition(&chars[at + 1..]) => out.push_str("\\{"),
            _ => out.push(c),
        }
        at += 1;
    }
    out
}

/// Whether the text after a `{` is `n}`, `n,}` or `n,m}`.
fn starts_repetition(rest: &[char]) -> bool {
    let digits = |from: usize| {
        rest[from..]
            .iter()
            .take_while(|c| c.is_ascii_digit())
            .count()
    };
    let first = digits(0);
    if first == 0 {
        return false;
    }
    match rest.get(first) {
        Some('}') => true,
        Some(',') => {
            let second = digits(first + 1);
            rest.get(first + 1 + second) == Some(&'}')
        }
        _ => false,
    }
}

impl Rule {
    fn regex(&self) -> Option<&Regex> {
        self.compiled
            .get_or_init(|| compile(&self.pattern))
            .as_ref()
    }
}

impl Allowlist {
    /// Whether the secret holds a stopword (never, without stopwords).
    fn has_stopword(&self, secret: &[u8]) -> bool {
        if self.stopwords.is_empty() || secret.is_empty() {
            return false;
        }
        self.stopword_matcher
            .get_or_init(|| AhoCorasick::new(&self.stopwords).expect("stopwords build"))
            .is_match(&secret.to_ascii_lowercase())
    }

    fn regex(&self) -> Option<&Regex> {
        self.compiled
            .get_or_init(|| {
                if self.regexes.is_empty() {
                    return None;
                }
                let joined = self
                    .regexes
                    .iter()
                    .map(|pattern| format!("(?:{pattern})"))
                    .collect::<Vec<_>>()
                    .join("|");
                compile(&joined)
            })
            .as_ref()
    }

    /// Whether this allowlist lets the finding through as not-a-secret.
    fn allows(&self, secret: &[u8], matched: &[u8], line: &[u8]) -> bool {
        let target = match self.target {
            Target::Secret => secret,
            Target::Match => matched,
            Target::Line => line,
        };
        let regex_hit = !target.is_empty() && self.regex().is_some_and(|re| re.is_match(target));
        let stopword_hit = self.has_stopword(secret);
        if self.all {
            if self.has_location_checks {
                return false;
            }
            let regex_ok = self.regexes.is_empty() || regex_hit;
            let stopword_ok = self.stopwords.is_empty() || stopword_hit;
            return regex_ok && stopword_ok;
        }
        regex_hit || stopword_hit
    }
}

/// Shannon entropy of the text in bits per character, as gitleaks computes it (character
/// counts over the byte length).
pub fn shannon_entropy(text: &str) -> f64 {
    if text.is_empty() {
        return 0.0;
    }
    let mut counts: std::collections::HashMap<char, usize> = std::collections::HashMap::new();
    for c in text.chars() {
        *counts.entry(c).or_default() += 1;
    }
    let length = text.len() as f64;
    counts
        .values()
        .map(|count| {
            let frequency = *count as f64 / length;
            -frequency * frequency.log2()
        })
        .sum()
}

/// Every secret the gitleaks rules find in `text`; `lowered` is `text` lowercased (for the
/// keyword prefilter).
pub fn find(text: &str, lowered: &str) -> Vec<RuleMatch> {
    let set: &'static RuleSet = &RULE_SET;
    let seen: HashSet<usize> = set
        .prefilter
        .find_overlapping_iter(lowered)
        .map(|hit| hit.pattern().as_usize())
        .collect();
    if seen.is_empty() {
        return Vec::new();
    }
    let bytes = text.as_bytes();
    let mut found = Vec::new();
    for rule in &set.rules {
        if !rule.keywords.iter().any(|keyword| seen.contains(keyword)) {
            continue;
        }
        let Some(regex) = rule.regex() else {
            continue;
        };
        for captures in regex.captures_iter(bytes) {
            let Some(whole) = captures.get(0) else {
                continue;
            };
            let secret = match rule.secret_group {
                Some(group) => captures.get(group),
                None => (1..captures.len())
                    .filter_map(|group| captures.get(group))
                    .find(|group| !group.is_empty()),
            }
            .unwrap_or(whole);
            let secret_text = String::from_utf8_lossy(secret.as_bytes());
            if let Some(floor) = rule.entropy
                && shannon_entropy(&secret_text) <= floor
            {
                continue;
            }
            let line = line_around(bytes, whole.range());
            let allowed = set
                .global
                .iter()
                .chain(&rule.allowlists)
                .any(|list| list.allows(secret.as_bytes(), whole.as_bytes(), line));
            if allowed || secret.is_empty() {
                continue;
            }
            found.push(RuleMatch {
                kind: rule.kind.as_str(),
                range: secret.range(),
                generic: rule.generic,
            });
        }
    }
    found
}

/// The whole lines the range lies on.
fn line_around(bytes: &[u8], range: Range<usize>) -> &[u8] {
    let start = bytes[..range.start]
        .iter()
        .rposition(|b| *b == b'\n')
        .map_or(0, |at| at + 1);
    let end = bytes[range.end..]
        .iter()
        .position(|b| *b == b'\n')
        .map_or(bytes.len(), |at| range.end + at);
    &bytes[start..end]
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The license the rule file is distributed under.
    const LICENSE: &str = include_str!("gitleaks.LICENSE");

    /// How many rules apply to text (path-bound ones are left out), and the ids of any whose
    /// pattern does not compile.
    fn rule_health() -> (usize, Vec<String>) {
        let set = &*RULE_SET;
        let broken = set
            .rules
            .iter()
            .filter(|rule| rule.regex().is_none())
            .map(|rule| rule.kind.clone())
            .chain(
                set.global
                    .iter()
                    .chain(set.rules.iter().flat_map(|rule| &rule.allowlists))
                    .filter(|list| !list.regexes.is_empty() && list.regex().is_none())
                    .map(|_| "an allowlist".to_owned()),
            )
            .collect();
        (set.rules.len(), broken)
    }

    fn kinds(text: &str) -> Vec<&'static str> {
        find(text, &text.to_lowercase())
            .into_iter()
            .map(|m| m.kind)
            .collect()
    }

    #[test]
    fn every_shipped_rule_compiles() {
        let (count, broken) = rule_health();
        assert!(count > 200, "only {count} rules loaded");
        assert!(
            broken.is_empty(),
            "patterns that do not compile: {broken:?}"
        );
        assert!(LICENSE.contains("MIT License"));
    }

    #[test]
    fn named_services_are_found() {
        assert_eq!(
            kinds("token ghp_0123456789abcdefghijABCDEFGHIJ012345 end"),
            vec!["github_pat"]
        );
        assert!(kinds("key AKIAZ3MKQX7PLVN4WQ2R here").contains(&"aws_access_token"));
        assert!(kinds("sk_live_51Hx9YtLq2Wm8NvB3cRzK7pD").contains(&"stripe_access_token"));
    }

    /// Issue 48: a named service's token at the end of a sentence, in a list or in parentheses,
    /// but not before more text.
    #[test]
    fn named_tokens_before_punctuation_are_found() {
        for (token, kind) in [
            ("sq0atp-Xk4mQ9vL2pR7wT3nB8zY12", "square_access_token"),
            (
                "PMAK-4f8e2a9c1b7d3e5f6a0b9c8d-4f8e2a9c1b7d3e5f6a0b9c8d7e6f5a4b3c",
                "postman_api_token",
            ),
            (
                "pscale_tkn_Xk4mQ9vL2pR7wT3nB8zYXk4mQ9vL2pR7wT3nB8zY",
                "planetscale_api_token",
            ),
            (
                "dop_v1_4f8e2a9c1b7d3e5f6a0b9c8d7e6f5a4b3c2d1e0f9a8b7c6d5e4f3a2b1c0d9e8f",
                "digitalocean_pat",
            ),
        ] {
            for text in [
                format!("use {token}."),
                format!("({token})"),
                format!("{token}, then"),
                format!("{token}:\n"),
                format!("is it {token}?!"),
            ] {
                assert!(kinds(&text).contains(&kind), "{text}: {:?}", kinds(&text));
            }
            let method = format!("{token}.method()");
            assert!(!kinds(&method).contains(&kind), "{method}");
        }
    }

    #[test]
    fn allowlists_apply() {
        // AWS's documented example key is allowlisted by gitleaks itself.
        assert!(!kinds("AKIAIOSFODNN7EXAMPLE").contains(&"aws_access_token"));
        // Low entropy is not a secret.
        assert!(kinds("api_key = aaaaaaaaaaaaaaaa").is_empty());
    }

    #[test]
    fn literal_braces_are_escaped_like_re2_reads_them() {
        assert_eq!(from_re2(r"^\$(?:\d+|{\d+})$"), r"^\$(?:\d+|\{\d+})$");
        assert_eq!(from_re2(r"a{2,}b{1,3}c{3}"), r"a{2,}b{1,3}c{3}");
        assert_eq!(from_re2(r"[{}]{{x}}"), r"[{}]\{\{x}}");
        assert_eq!(from_re2(r"[[:alnum:]{]{2}"), r"[[:alnum:]{]{2}");
        assert_eq!(from_re2(r"[^]]+{"), r"[^\]]+\{");
    }

    #[test]
    fn entropy_matches_gitleaks() {
        assert_eq!(shannon_entropy(""), 0.0);
        assert_eq!(shannon_entropy("aaaa"), 0.0);
        assert!((shannon_entropy("ab") - 1.0).abs() < 1e-9);
    }
}
