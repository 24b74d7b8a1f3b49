//! Text primitives shared by every policy: blank tests, whitespace collapsing, truncation by
//! Unicode scalars, visible control characters, path keys, the short SHA-1 fingerprints behind
//! deterministic ids, and the accepting status set (docs/state.md#accepting-statuses).

use std::borrow::Cow;
use std::fmt::Write as _;
use std::path::Path;

use sha1::Digest;
use sha1::Sha1;

use crate::state::paths::slash_key;

/// `s` is empty after trimming whitespace at both ends.
pub fn is_blank(s: &str) -> bool {
    s.trim().is_empty()
}

/// Runs of whitespace become one space; leading and trailing whitespace go.
pub fn collapse(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for word in s.split_whitespace() {
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(word);
    }
    out
}

/// `s` with every control character but newline and tab, and every bidirectional override,
/// written as a visible `\u{..}` escape. Text in the state may come from anyone who can
/// commit: shown as it is, an escape sequence could recolour, retitle or rewrite a terminal, a
/// carriage return could hide the start of a line, and a direction override could make text
/// read differently from what it says.
pub fn printable(s: &str) -> Cow<'_, str> {
    if !s.chars().any(is_hidden) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 16);
    for c in s.chars() {
        if is_hidden(c) {
            write!(out, "\\u{{{:x}}}", u32::from(c)).expect("writing to a String cannot fail");
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// A character that acts on a terminal or on the text's direction instead of showing.
fn is_hidden(c: char) -> bool {
    (c.is_control() && c != '\n' && c != '\t')
        || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// At most `limit` Unicode scalars; a longer text keeps `limit - 3` and gains `...`.
pub fn truncate(s: &str, limit: usize) -> String {
    match s.char_indices().nth(limit) {
        None => s.to_owned(),
        Some(_) => {
            let keep = limit.saturating_sub(3);
            let cut = s.char_indices().nth(keep).map_or(s.len(), |(at, _)| at);
            format!("{}...", &s[..cut])
        }
    }
}

/// The first 12 hex digits of the SHA-1 of `bytes`.
pub fn hex12(bytes: &[u8]) -> String {
    let digest = Sha1::digest(bytes);
    hex::encode(&digest[..6])
}

/// Appends each item not already present, keeping first-seen order.
pub fn uniq_append<T: PartialEq + Clone>(list: &mut Vec<T>, items: impl IntoIterator<Item = T>) {
    for item in items {
        if !list.contains(&item) {
            list.push(item);
        }
    }
}

/// Whether a status accepts: `ok`, `accepted`, `verified`, `pass` or `passed`, trimmed and
/// ASCII-case-insensitive. (Jobs use a different set.)
pub fn is_accepting_status(status: &str) -> bool {
    matches!(
        status.trim().to_ascii_lowercase().as_str(),
        "ok" | "accepted" | "verified" | "pass" | "passed"
    )
}

/// The key two paths are compared by when one side comes from the work tree (the fresh key,
/// docs/state.md#path-keys): relative to `root` when the path lies under it, slash-separated,
/// without leading `./`.
pub fn fresh_key(path: &str, root: Option<&str>) -> String {
    let relative = root
        .and_then(|root| Path::new(path).strip_prefix(root).ok())
        .map_or_else(
            || path.to_owned(),
            |rest| rest.to_string_lossy().into_owned(),
        );
    let mut key = slash_key(&relative);
    while let Some(rest) = key.strip_prefix("./") {
        key = rest.to_owned();
    }
    key
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn collapse_joins_words_with_single_spaces() {
        assert_eq!(
            collapse("  live  smoke\treturned\n revision 1  "),
            "live smoke returned revision 1"
        );
        assert_eq!(collapse(" \n\t "), "");
    }

    #[test]
    fn printable_shows_what_would_act_on_a_terminal() {
        assert!(matches!(printable("plain é\n\tok"), Cow::Borrowed(_)));
        assert_eq!(
            printable("a\u{1b}[31mred\u{7}\r\0\u{7f}\u{9b}b"),
            "a\\u{1b}[31mred\\u{7}\\u{d}\\u{0}\\u{7f}\\u{9b}b"
        );
        assert_eq!(printable("x\u{202e}txt.exe"), "x\\u{202e}txt.exe");
    }

    #[test]
    fn truncate_counts_scalars_and_marks_the_cut() {
        assert_eq!(truncate("abcdef", 6), "abcdef");
        assert_eq!(truncate("abcdefg", 6), "abc...");
        assert_eq!(truncate("ééééééé", 5), "éé...");
        assert_eq!(truncate("ab", 2), "ab");
    }

    #[test]
    fn hex12_is_a_short_sha1() {
        assert_eq!(hex12(b"abc"), "a9993e364706");
    }

    #[test]
    fn accepting_statuses_ignore_case_and_padding() {
        for status in ["ok", " OK ", "Accepted", "verified", "PASS", "passed"] {
            assert!(is_accepting_status(status), "{status}");
        }
        for status in ["", "candidate", "failed", "okay", "passing"] {
            assert!(!is_accepting_status(status), "{status}");
        }
    }

    #[test]
    fn fresh_key_strips_the_root_and_leading_dots() {
        assert_eq!(fresh_key("/ws/src/a.rs", Some("/ws")), "src/a.rs");
        assert_eq!(fresh_key("././src/a.rs", Some("/ws")), "src/a.rs");
        assert_eq!(fresh_key("src\\a.rs", None), "src/a.rs");
        assert_eq!(fresh_key("/elsewhere/a.rs", Some("/ws")), "/elsewhere/a.rs");
    }

    #[test]
    fn blank_trims_unicode_whitespace() {
        assert!(is_blank("\u{2003} \n"));
        assert!(!is_blank(" x "));
    }
}
