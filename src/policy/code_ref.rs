//! Code references as people type them and as policies compare them.
//!
//! Owns the command-line spelling `PATH[:START[-END]][#SYMBOL]` (`cli.md` §3) and the code-ref
//! key of `behavior.md` §3.2 that de-duplicates references and matches them exactly. Parsing
//! is pure text work: it never looks at the file system, so a reference may name a file that
//! does not exist (yet). Paths are kept relative to the repository root; a path that would
//! leave it (absolute, or with a `..` component) is refused.

use crate::policy::text::is_blank;
use crate::policy::text::slash_key;
use crate::state::model::CodeRef;

/// How a code reference is spelled on the command line.
pub const CODE_REF_SYNTAX: &str =
    "PATH[:START[-END]][#SYMBOL], e.g. `src/state/store.rs:10-42#Store::commit`";

/// The key of §3.2: `slash-key(path):start:end:symbol`, absent numbers as `0`; the note is not
/// part of it.
pub fn code_ref_key(code_ref: &CodeRef) -> String {
    format!(
        "{}:{}:{}:{}",
        slash_key(&code_ref.path),
        code_ref.start_line.unwrap_or(0),
        code_ref.end_line.unwrap_or(0),
        code_ref.symbol.as_deref().unwrap_or("")
    )
}

/// Spells a code reference the way [`parse_code_ref`] reads it (the note is left out).
pub fn format_code_ref(code_ref: &CodeRef) -> String {
    let mut text = code_ref.path.clone();
    if let Some(start) = code_ref.start_line {
        text.push_str(&format!(":{start}"));
        if let Some(end) = code_ref.end_line.filter(|end| *end != start) {
            text.push_str(&format!("-{end}"));
        }
    }
    if let Some(symbol) = &code_ref.symbol {
        text.push_str(&format!("#{symbol}"));
    }
    text
}

/// Parses `PATH[:START[-END]][#SYMBOL]`. The symbol is everything after the first `#`; the line
/// range is everything after the first `:` before it, so a path cannot contain `:` or `#`. The
/// path is normalised to `/` separators without empty or `.` components. The error says what is
/// wrong, for the caller to put next to the argument and its value.
pub fn parse_code_ref(text: &str) -> Result<CodeRef, String> {
    let (location, symbol) = match text.split_once('#') {
        Some((_, symbol)) if is_blank(symbol) => {
            return Err(format!(
                "the symbol after `#` is empty (expected {CODE_REF_SYNTAX})"
            ));
        }
        Some((location, symbol)) => (location, Some(symbol.trim().to_owned())),
        None => (text, None),
    };
    let (path, range) = match location.split_once(':') {
        Some((path, range)) => (path, Some(range)),
        None => (location, None),
    };
    let path = normalise_path(path)?;
    let (start_line, end_line) = match range {
        None => (None, None),
        Some(range) => parse_range(range)?,
    };
    Ok(CodeRef {
        path,
        start_line,
        end_line,
        symbol,
        note: None,
    })
}

/// Why a code-ref path leaves the repository (absolute, or climbing with `..`), if it does.
pub fn escape_reason(path: &str) -> Option<&'static str> {
    let drive = path.as_bytes().get(1) == Some(&b':') && path.as_bytes()[0].is_ascii_alphabetic();
    if path.starts_with(['/', '\\']) || drive {
        return Some("is absolute; give it relative to the repository root");
    }
    path.split(['/', '\\'])
        .any(|part| part == "..")
        .then_some("leaves the repository (`..` is not allowed)")
}

fn normalise_path(path: &str) -> Result<String, String> {
    if is_blank(path) {
        return Err(format!("the path is empty (expected {CODE_REF_SYNTAX})"));
    }
    if let Some(reason) = escape_reason(path) {
        return Err(format!("the path `{path}` {reason}"));
    }
    let parts: Vec<&str> = path
        .split(['/', '\\'])
        .filter(|part| !matches!(*part, "" | "."))
        .collect();
    if parts.is_empty() {
        return Err(format!("the path `{path}` names no file"));
    }
    Ok(parts.join("/"))
}

fn parse_range(range: &str) -> Result<(Option<u32>, Option<u32>), String> {
    let (start, end) = match range.split_once('-') {
        Some((start, end)) => (start, Some(end)),
        None => (range, None),
    };
    let start = parse_line(start, "start")?;
    let Some(end) = end else {
        return Ok((Some(start), None));
    };
    let end = parse_line(end, "end")?;
    if start > end {
        return Err(format!(
            "the start line {start} is after the end line {end}"
        ));
    }
    Ok((Some(start), Some(end)))
}

fn parse_line(text: &str, which: &str) -> Result<u32, String> {
    match text.parse::<u32>() {
        Ok(0) => Err(format!(
            "the {which} line must be 1 or more (lines count from 1)"
        )),
        Ok(line) if text.bytes().all(|b| b.is_ascii_digit()) => Ok(line),
        _ => Err(format!(
            "the {which} line `{text}` is not a line number (expected {CODE_REF_SYNTAX})"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn code_ref(path: &str, start: Option<u32>, end: Option<u32>, symbol: Option<&str>) -> CodeRef {
        CodeRef {
            path: path.into(),
            start_line: start,
            end_line: end,
            symbol: symbol.map(Into::into),
            note: None,
        }
    }

    #[test]
    fn parses_every_documented_form() {
        let cases = [
            ("src/lib.rs", code_ref("src/lib.rs", None, None, None)),
            ("src/lib.rs:7", code_ref("src/lib.rs", Some(7), None, None)),
            (
                "src/lib.rs:7-7",
                code_ref("src/lib.rs", Some(7), Some(7), None),
            ),
            (
                "src/state/store.rs:10-42#Store::commit",
                code_ref(
                    "src/state/store.rs",
                    Some(10),
                    Some(42),
                    Some("Store::commit"),
                ),
            ),
            (
                "src/lib.rs#main",
                code_ref("src/lib.rs", None, None, Some("main")),
            ),
            ("./src//x.rs", code_ref("src/x.rs", None, None, None)),
            ("src\\win.rs:3", code_ref("src/win.rs", Some(3), None, None)),
        ];
        for (text, expected) in cases {
            assert_eq!(parse_code_ref(text), Ok(expected), "{text}");
        }
    }

    #[test]
    fn refuses_what_cannot_be_a_reference() {
        let cases = [
            ("", "the path is empty"),
            (":10", "the path is empty"),
            ("src/x.rs:", "the start line `` is not a line number"),
            ("src/x.rs:ten", "the start line `ten` is not a line number"),
            ("src/x.rs:-4", "the start line `` is not a line number"),
            ("src/x.rs:4-", "the end line `` is not a line number"),
            ("src/x.rs:+4", "the start line `+4` is not a line number"),
            ("src/x.rs:0", "the start line must be 1 or more"),
            ("src/x.rs:99999999999", "is not a line number"),
            ("src/x.rs:9-3", "the start line 9 is after the end line 3"),
            ("src/x.rs#", "the symbol after `#` is empty"),
            ("/etc/passwd", "is absolute"),
            ("\\share\\x", "is absolute"),
            ("../secret.rs", "leaves the repository"),
            ("src/../../x.rs", "leaves the repository"),
            ("./.", "names no file"),
        ];
        for (text, expected) in cases {
            let err = parse_code_ref(text).expect_err(text);
            assert!(err.contains(expected), "{text}: {err}");
        }
    }

    #[test]
    fn formatting_reads_back() {
        for text in [
            "src/lib.rs",
            "src/lib.rs:7",
            "src/lib.rs:7-9#f",
            "a/b.rs#Store::commit",
        ] {
            let parsed = parse_code_ref(text).expect(text);
            assert_eq!(format_code_ref(&parsed), text);
        }
        assert_eq!(
            format_code_ref(&code_ref("x.rs", Some(4), Some(4), None)),
            "x.rs:4"
        );
    }

    #[test]
    fn key_ignores_the_note_and_normalises_backslashes() {
        let mut with_note = code_ref("a\\b.rs", Some(10), Some(20), Some("demo"));
        with_note.note = Some("why".into());
        assert_eq!(code_ref_key(&with_note), "a/b.rs:10:20:demo");
        assert_eq!(code_ref_key(&CodeRef::to_path("a.rs")), "a.rs:0:0:");
    }

    proptest::proptest! {
        #[test]
        fn arbitrary_references_never_panic(text in "\\PC{0,80}") {
            if let Ok(parsed) = parse_code_ref(&text) {
                proptest::prop_assert!(escape_reason(&parsed.path).is_none());
                proptest::prop_assert!(!parsed.path.is_empty());
            }
        }

        #[test]
        fn reference_shaped_text_never_panics(text in "[a-z./\\\\]{0,20}(:[0-9-]{0,12})?(#[A-Za-z:_]{0,10})?") {
            let _ = parse_code_ref(&text);
        }
    }
}
