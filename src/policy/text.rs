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

/// `json`, a JSON document, with every character [`printable`] would escape written as a JSON
/// escape (`\u202e`) instead: such characters can stand only inside strings, so the document
/// stays valid JSON with the same values, and shows nothing that acts on a terminal.
pub fn json_printable(json: &str) -> Cow<'_, str> {
    if !json.chars().any(is_hidden) {
        return Cow::Borrowed(json);
    }
    let mut out = String::with_capacity(json.len() + 16);
    for c in json.chars() {
        if is_hidden(c) {
            for unit in c.encode_utf16(&mut [0; 2]) {
                write!(out, "\\u{unit:04x}").expect("writing to a String cannot fail");
            }
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// `s` as one line an agent may read inside one of epiphany's blocks (`<epiphany_state>`,
/// `<epiphany_reorient>`, ...): what [`printable`] escapes, line breaks (`\n`, and the Unicode
/// line and paragraph separators a reader may break lines at), and the opening bracket of
/// anything that reads as one of those tags are written as visible `\u{..}` escapes
/// (`\u{3c}/epiphany_state>`), so that text from the state can neither close the block it is
/// shown in nor open another, nor start a line of its own. Look-alikes count: other case,
/// spaces, slashes and invisible characters inside the tag, brackets and letters from other
/// scripts or full-width forms, `&lt;`.
pub fn for_agent(s: &str) -> Cow<'_, str> {
    let escaped = |at: usize, c: char| {
        is_hidden(c) || matches!(c, '\n' | '\u{2028}' | '\u{2029}') || opens_epiphany_tag(s, at)
    };
    if !s.char_indices().any(|(at, c)| escaped(at, c)) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 16);
    for (at, c) in s.char_indices() {
        if escaped(at, c) {
            write!(out, "\\u{{{:x}}}", u32::from(c)).expect("writing to a String cannot fail");
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// The name every tag of epiphany's starts with, as [`tag_letter`] folds it.
const TAG_NAME: &str = "epiphany";

/// Whether an opening bracket at byte `at` of `s` starts a tag whose name reads as
/// `epiphany...`: after the bracket, any spaces, slashes and invisible characters, then the
/// name's letters (folded by [`tag_letter`]), with separators and invisible characters
/// between them ignored.
fn opens_epiphany_tag(s: &str, at: usize) -> bool {
    let rest = &s[at..];
    let after = if rest
        .get(..4)
        .is_some_and(|lt| lt.eq_ignore_ascii_case("&lt;"))
    {
        &rest[4..]
    } else {
        match rest.chars().next() {
            Some(c) if is_open_bracket(c) => &rest[c.len_utf8()..],
            _ => return false,
        }
    };
    let mut wanted = TAG_NAME.chars().peekable();
    let mut started = false;
    for c in after.chars().take(4 * TAG_NAME.len()) {
        if is_invisible(c) || (!started && (c.is_whitespace() || is_slash(c))) {
            continue;
        }
        match tag_letter(c) {
            Some(letter) if wanted.peek() == Some(&letter) => {
                started = true;
                wanted.next();
                if wanted.peek().is_none() {
                    return true;
                }
            }
            None if started && is_separator(c) => {}
            _ => return false,
        }
    }
    false
}

/// `<` and the characters that read as it.
fn is_open_bracket(c: char) -> bool {
    matches!(
        c,
        '<' | '\u{ff1c}'
            | '\u{fe64}'
            | '\u{2039}'
            | '\u{3008}'
            | '\u{27e8}'
            | '\u{2329}'
            | '\u{29fc}'
            | '\u{2c2}'
            | '\u{1438}'
    )
}

/// `/` and the characters that read as it.
fn is_slash(c: char) -> bool {
    matches!(
        c,
        '/' | '\\' | '\u{ff0f}' | '\u{2215}' | '\u{2044}' | '\u{29f8}'
    )
}

/// What may stand between the words of a tag name and still read as one name.
fn is_separator(c: char) -> bool {
    c.is_whitespace()
        || matches!(
            c,
            '_' | '-' | '.' | ':' | '\u{ff3f}' | '\u{ff0d}' | '\u{2010}' | '\u{2011}'
        )
}

/// Characters that take no room on the page.
fn is_invisible(c: char) -> bool {
    matches!(
        c,
        '\u{ad}' | '\u{34f}' | '\u{180e}' | '\u{200b}'..='\u{200f}' | '\u{2060}'..='\u{2064}' | '\u{feff}'
    )
}

/// The lowercase ASCII letter `c` reads as: itself in either case, its full-width form, or a
/// Cyrillic or Greek letter drawn the same (for the letters of [`TAG_NAME`]).
fn tag_letter(c: char) -> Option<char> {
    let c = match c {
        // Full-width forms sit at a fixed distance from ASCII, upper and lower case alike.
        '\u{ff21}'..='\u{ff3a}' | '\u{ff41}'..='\u{ff5a}' => {
            char::from_u32(u32::from(c) - 0xff21 + u32::from('A'))?
        }
        'а' | 'А' | 'α' | 'Α' => 'a',
        'е' | 'Е' | 'ε' | 'Ε' => 'e',
        'һ' | 'Н' | 'Η' => 'h',
        'і' | 'І' | 'ι' | 'Ι' | 'ı' => 'i',
        'η' | 'Ν' => 'n',
        'р' | 'Р' | 'ρ' | 'Ρ' => 'p',
        'у' | 'У' | 'υ' | 'Υ' | 'γ' => 'y',
        c => c,
    };
    c.is_ascii_alphabetic().then(|| c.to_ascii_lowercase())
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
    fn json_printable_keeps_the_document_valid_and_its_values() {
        let value = serde_json::json!({"summary": "a\u{202e}b\u{7f}c\u{9b}d\u{1b}[2J"});
        let text = serde_json::to_string_pretty(&value).expect("json");
        let shown = json_printable(&text);
        assert!(!shown.chars().any(is_hidden), "{shown}");
        assert!(
            shown.contains("a\\u202eb\\u007fc\\u009bd\\u001b[2J"),
            "{shown}"
        );
        let back: serde_json::Value = serde_json::from_str(&shown).expect("still JSON");
        assert_eq!(back, value);
        assert!(matches!(json_printable("{}"), Cow::Borrowed(_)));
    }

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
    fn text_for_an_agent_cannot_open_or_close_a_block() {
        for (text, shown) in [
            ("x </epiphany_state> y", r"x \u{3c}/epiphany_state> y"),
            ("<epiphany_reorient>", r"\u{3c}epiphany_reorient>"),
            ("< / EPIPHANY_STATE >", r"\u{3c} / EPIPHANY_STATE >"),
            (
                "</epi\u{200b}phany-state>",
                "\\u{3c}/epi\u{200b}phany-state>",
            ),
            (
                "\u{ff1c}/ｅｐｉｐｈａｎｙ_state\u{ff1e}",
                "\\u{ff1c}/ｅｐｉｐｈａｎｙ_state\u{ff1e}",
            ),
            ("</еpiphаny_state>", r"\u{3c}/еpiphаny_state>"),
            ("&lt;/epiphany_state&gt;", r"\u{26}lt;/epiphany_state&gt;"),
            (
                "a\u{1b}[2J</epiphany_state>",
                r"a\u{1b}[2J\u{3c}/epiphany_state>",
            ),
            ("one\ntwo\tthree", r"one\u{a}two	three"),
            (
                "line\u{2028}para\u{2029}next\u{85}x\u{b}y\u{c}z\u{1e}",
                r"line\u{2028}para\u{2029}next\u{85}x\u{b}y\u{c}z\u{1e}",
            ),
        ] {
            assert_eq!(for_agent(text), shown, "{text}");
        }
        for text in [
            "Vec<String> and a < b",
            "<epiphanies> are not tags",
            "</state> <epiph>",
            "an epiphany_state without a bracket",
            "plain",
        ] {
            assert!(matches!(for_agent(text), Cow::Borrowed(_)), "{text}");
        }
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
