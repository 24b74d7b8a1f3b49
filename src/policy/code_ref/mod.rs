//! Code references as people type them, as patches carry them, and as the work tree answers
//! for them.
//!
//! Owns the command-line spelling `PATH[:START[-END]][#SYMBOL]` (docs/cli.md#code-ref-spelling),
//! the code-ref key (docs/state.md#code-ref-key), and path resolution against the directory a
//! command runs in. The rest lives beside it: `owners` holds the one walk over every code
//! reference a patch or a state carries ([`patch_code_refs_mut`], [`visit_state_code_refs`]);
//! `cited` holds what a file answers for a reference ([`CitedFile`]) and what a reader is asked
//! of it ([`Asked`]); `scan` reads a file's bytes into a [`CitedFile`], held whole or streamed
//! in chunks ([`Scan`]); `judge` is the one verdict on whether a reference holds against its
//! file and which text it cites ([`judge()`], [`fingerprint`]), which the write path and
//! `freshness` both ask; `check` holds the rules a reference must keep on its own and words the
//! judge's verdict for a write.
//! Pure: callers read the files and hand in what they found as [`CitedFile`].

mod check;
mod cited;
mod judge;
mod owners;
mod scan;

pub(crate) use check::line_list;
pub(crate) use check::located_problems;
pub(crate) use check::ref_lines;
pub(crate) use check::shape_problems;
pub(crate) use check::span_list;
pub use cited::Asked;
pub(crate) use cited::CitedFile;
pub(crate) use cited::Span;
pub(crate) use cited::Text;
pub(crate) use cited::definition_name;
pub(crate) use judge::Cited;
pub(crate) use judge::RefFindingKind;
pub(crate) use judge::cited_text;
pub(crate) use judge::fingerprint;
pub(crate) use judge::fingerprint_in;
pub(crate) use judge::fingerprint_now;
pub(crate) use judge::is_fingerprint;
pub(crate) use judge::judge;
pub use owners::OwnerRef;
pub(crate) use owners::RefCarriers;
pub use owners::RefOwner;
pub(crate) use owners::graph_code_refs_mut;
pub(crate) use owners::patch_code_refs_mut;
pub(crate) use owners::visit_state_code_refs;
pub(crate) use scan::LineDigest;
pub(crate) use scan::Scan;
pub(crate) use scan::scan_bytes;
pub(crate) use scan::scan_text;

use crate::policy::text::is_blank;
use crate::state::model::CodeRef;
use crate::state::paths::segments;
use crate::state::paths::slash_key;
use crate::state::problem::Problem;

/// How a code reference is spelled on the command line.
pub const CODE_REF_SYNTAX: &str =
    "PATH[:START[-END]][#SYMBOL], e.g. `src/state/store.rs:10-42#Store::commit`";

/// The key of docs/state.md#code-ref-key: `slash-key(path):start:end:symbol`, absent numbers as
/// `0`; the note is not part of it.
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
/// path is normalised to `/` separators without empty or `.` components, but kept as typed
/// otherwise (`..`, a leading `/`): where it points depends on the directory the command runs
/// in, which [`join_relative`] settles. The error is a problem with the text as a whole,
/// which says what is wrong, for the caller to put next to the argument and its value.
pub fn parse_code_ref(text: &str) -> Result<CodeRef, Problem> {
    let (location, symbol) = match text.split_once('#') {
        Some((_, symbol)) if is_blank(symbol) => {
            return Err(Problem::whole(format!(
                "the symbol after `#` is empty (expected {CODE_REF_SYNTAX})"
            )));
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
        planned: false,
        fingerprint: None,
    })
}

/// Why a code-ref path leaves the repository (absolute, or climbing with `..`), if it does.
pub fn escape_reason(path: &str) -> Option<&'static str> {
    let drive = path.as_bytes().get(1) == Some(&b':') && path.as_bytes()[0].is_ascii_alphabetic();
    if path.starts_with(['/', '\\']) || drive {
        return Some("is absolute; give it relative to the repository root");
    }
    segments(path)
        .any(|part| part == "..")
        .then_some("leaves the repository (`..` is not allowed)")
}

/// Why a repository-relative code-ref path can name no file of the repository, if it cannot:
/// it holds a control character (a line break in a path would break every line that shows it,
/// and no source file is named so), it is blank or holds a blank name, it lies in `.git/`,
/// git's own directory, or in `.epiphany/`, the store itself.
pub fn path_refusal(path: &str) -> Option<&'static str> {
    if path.chars().any(char::is_control) {
        return Some("holds a control character (a line break, a tab, NUL, ...)");
    }
    if is_blank(path) || segments(path).any(|part| !part.is_empty() && is_blank(part)) {
        return Some("is blank, or holds a blank name");
    }
    if segments(path).any(|part| part.eq_ignore_ascii_case(".git")) {
        return Some("lies in `.git/`, git's own directory, not in the repository's files");
    }
    (segments(path).find(|part| !part.is_empty() && *part != "."))
        .is_some_and(|first| first.eq_ignore_ascii_case(".epiphany"))
        .then_some("lies in `.epiphany/`, the store itself, not in the repository's code")
}

fn normalise_path(path: &str) -> Result<String, Problem> {
    if is_blank(path) {
        return Err(Problem::whole(format!(
            "the path is empty (expected {CODE_REF_SYNTAX})"
        )));
    }
    let parts: Vec<&str> = segments(path)
        .filter(|part| !matches!(*part, "" | "."))
        .collect();
    if parts.is_empty() {
        return Err(Problem::whole(format!("the path `{path}` names no file")));
    }
    if path.ends_with(['/', '\\']) {
        return Err(Problem::whole(format!(
            "the path `{path}` ends with a separator: it names a directory, and a code ref names a file"
        )));
    }
    let lead = if path.starts_with(['/', '\\']) {
        "/"
    } else {
        ""
    };
    Ok(format!("{lead}{}", parts.join("/")))
}

/// Joins `path` (relative) onto `base` (a directory relative to the repository root, `""` for
/// the root itself), folding `.` and `..` lexically. `None` when the result leaves the root or
/// names the root itself.
pub fn join_relative(base: &str, path: &str) -> Option<String> {
    let mut parts: Vec<&str> = Vec::new();
    for part in segments(base).chain(segments(path)) {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop()?;
            }
            part => parts.push(part),
        }
    }
    (!parts.is_empty()).then(|| parts.join("/"))
}

/// The repository-relative paths a relative `path` may mean when typed in `cwd` (relative to
/// the root): joined onto `cwd`, and taken from the root. `cwd_first` orders them: a person
/// typing on the command line means the directory they are in; a patch document is written
/// relative to the root. Duplicates and spellings that leave the root are dropped.
pub fn path_candidates(path: &str, cwd: &str, cwd_first: bool) -> Vec<String> {
    let from_cwd = join_relative(cwd, path);
    let from_root = join_relative("", path);
    let ordered = if cwd_first {
        [from_cwd, from_root]
    } else {
        [from_root, from_cwd]
    };
    let mut candidates: Vec<String> = Vec::new();
    for candidate in ordered.into_iter().flatten() {
        if !candidates.contains(&candidate) {
            candidates.push(candidate);
        }
    }
    candidates
}

/// An absolute `path` made relative to the absolute `root`, lexically; `None` when it is not
/// under the root.
pub fn strip_root(path: &str, root: &str) -> Option<String> {
    let path = slash_key(path);
    let root = slash_key(root);
    let rest = path.strip_prefix(root.trim_end_matches('/'))?;
    let rest = rest.strip_prefix('/')?;
    join_relative("", rest)
}

/// Whether a path is absolute: it starts with a separator or a drive letter.
pub fn is_absolute(path: &str) -> bool {
    let bytes = path.as_bytes();
    path.starts_with(['/', '\\'])
        || (bytes.len() > 1 && bytes[1] == b':' && bytes[0].is_ascii_alphabetic())
}

fn parse_range(range: &str) -> Result<(Option<u32>, Option<u32>), Problem> {
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
        return Err(Problem::whole(format!(
            "the start line {start} is after the end line {end}"
        )));
    }
    Ok((Some(start), Some(end)))
}

fn parse_line(text: &str, which: &str) -> Result<u32, Problem> {
    match text.parse::<u32>() {
        Ok(0) => Err(Problem::whole(format!(
            "the {which} line must be 1 or more (lines count from 1)"
        ))),
        Ok(line) if text.bytes().all(|b| b.is_ascii_digit()) => Ok(line),
        _ => Err(Problem::whole(format!(
            "the {which} line `{text}` is not a line number (expected {CODE_REF_SYNTAX})"
        ))),
    }
}

/// What the unit tests of this module and its parts build their cases from.
#[cfg(test)]
mod fixtures {
    use std::collections::BTreeSet;

    use crate::state::model::CodeRef;

    /// A code ref to `path`, with its lines and symbol.
    pub fn code_ref(
        path: &str,
        start: Option<u32>,
        end: Option<u32>,
        symbol: Option<&str>,
    ) -> CodeRef {
        CodeRef {
            path: path.into(),
            start_line: start,
            end_line: end,
            symbol: symbol.map(Into::into),
            note: None,
            planned: false,
            fingerprint: None,
        }
    }

    /// The names in `list`, as a set.
    pub fn symbols(list: &[&str]) -> BTreeSet<String> {
        list.iter().map(|s| (*s).to_owned()).collect()
    }

    /// A source with a definition, a name that only starts like it, and a line of operators.
    pub const SOURCE: &str = "// header\nimpl Store {\n    fn commit(&self) {}\n}\nfn committed() {}\nlet x = a->b + foo.bar;\n";
}

#[cfg(test)]
mod tests {
    use super::fixtures::code_ref;
    use super::*;

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
            ("./.", "names no file"),
        ];
        for (text, expected) in cases {
            let err = parse_code_ref(text).expect_err(text);
            assert!(err.path.is_empty(), "{text}: {err}");
            assert!(err.message.contains(expected), "{text}: {err}");
        }
    }

    #[test]
    fn paths_keep_what_only_the_working_directory_can_settle() {
        for (text, path) in [
            ("../lib.rs:3", "../lib.rs"),
            ("/etc/passwd", "/etc/passwd"),
            ("\\share\\x", "/share/x"),
        ] {
            assert_eq!(parse_code_ref(text).map(|r| r.path), Ok(path.to_owned()));
        }
        assert_eq!(
            join_relative("src/cmd", "../lib.rs"),
            Some("src/lib.rs".into())
        );
        assert_eq!(join_relative("", "./a//b/./c.rs"), Some("a/b/c.rs".into()));
        assert_eq!(join_relative("src", "../../x.rs"), None);
        assert_eq!(join_relative("", "a/.."), None);
        assert_eq!(
            path_candidates("b.rs", "src", true),
            vec!["src/b.rs".to_owned(), "b.rs".to_owned()]
        );
        assert_eq!(
            path_candidates("b.rs", "src", false),
            vec!["b.rs".to_owned(), "src/b.rs".to_owned()]
        );
        assert_eq!(
            path_candidates("../b.rs", "src", false),
            vec!["b.rs".to_owned()]
        );
        assert_eq!(path_candidates("b.rs", "", true), vec!["b.rs".to_owned()]);
        assert_eq!(strip_root("/ws/src/a.rs", "/ws"), Some("src/a.rs".into()));
        assert_eq!(strip_root("/ws/src/a.rs", "/ws/"), Some("src/a.rs".into()));
        assert_eq!(strip_root("/wsx/a.rs", "/ws"), None);
        assert!(is_absolute("/x") && is_absolute("C:\\x") && !is_absolute("x/y"));
    }

    #[test]
    fn paths_with_control_characters_or_in_git_are_refused() {
        for path in ["src/a\nb.rs", "a\0.rs", "tab\there.rs", "src/\u{1b}[2J.rs"] {
            assert!(
                path_refusal(path)
                    .expect("refused")
                    .contains("control character"),
                "{path:?}"
            );
        }
        for path in [" ", "src/ /a.rs", "\u{3000}"] {
            assert!(
                path_refusal(path).expect("refused").contains("blank"),
                "{path:?}"
            );
        }
        for path in [
            ".git/config",
            "sub/.git/HEAD",
            ".GIT/hooks/pre-commit",
            ".git",
        ] {
            assert!(
                path_refusal(path).expect("refused").contains("`.git/`"),
                "{path}"
            );
        }
        for path in [
            ".epiphany/lock",
            ".Epiphany/rollout/x.jsonl",
            "./.epiphany/cache",
        ] {
            assert!(
                path_refusal(path)
                    .expect("refused")
                    .contains("`.epiphany/`"),
                "{path}"
            );
        }
        for path in [
            "src/lib.rs",
            ".github/workflows/ci.yml",
            "a.git/x",
            "docs/.gitignore",
            "docs/.epiphany/notes.md",
        ] {
            assert_eq!(path_refusal(path), None, "{path}");
        }
    }

    #[test]
    fn a_path_ending_in_a_separator_is_refused() {
        for text in ["src/", "src/lib.rs/", "src\\", "src/lib.rs/#main"] {
            let problem = parse_code_ref(text).expect_err(text);
            assert!(
                problem.message.contains("ends with a separator"),
                "{text}: {problem:?}"
            );
        }
        assert!(parse_code_ref("src/lib.rs#main").is_ok());
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
                proptest::prop_assert!(!parsed.path.is_empty());
                if let Some(joined) = join_relative("sub", &parsed.path) {
                    proptest::prop_assert!(escape_reason(&joined).is_none());
                }
            }
        }

        #[test]
        fn reference_shaped_text_never_panics(text in "[a-z./\\\\]{0,20}(:[0-9-]{0,12})?(#[A-Za-z:_]{0,10})?") {
            let _ = parse_code_ref(&text);
        }
    }
}
