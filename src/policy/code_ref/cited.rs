//! What a cited file answers for a reference: [`CitedFile`], built by scanning its bytes for
//! the symbols asked about ([`scan_bytes`]) and, where its language is parsed, by the spans and
//! digests of their definitions ([`CitedFile::with_definitions`]); and the rules for matching a
//! range to a definition ([`range_holds`], [`anchor_span`], [`definition_unchanged`]). Must not
//! read files: callers hand in the bytes.

use std::collections::BTreeMap;
use std::collections::BTreeSet;
use std::collections::HashMap;
use std::hash::DefaultHasher;
use std::hash::Hasher;

use crate::state::model::CodeRef;

use super::ref_lines;

/// A cited path as the work tree has it, read by the caller.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CitedFile {
    /// Nothing at that path.
    Missing,
    /// A directory.
    Directory,
    /// A symbolic link that leads outside the repository, or something that is neither a file
    /// nor a directory (a device, a pipe): never read, so a committed link to `/dev/zero` or to
    /// a file outside cannot stall a read or answer questions about that file.
    Elsewhere,
    /// A file: how many lines it has, and the lines (1-based) where each symbol asked about
    /// occurs.
    File {
        /// Lines in the file (a final newline does not start another).
        line_count: u32,
        /// Symbol → the lines it occurs on, ascending; symbols that do not occur map to `[]`.
        symbol_lines: BTreeMap<String, Vec<u32>>,
        /// For a file of a parsed language: symbol → its definitions, in file order (`[]`:
        /// none, even if the name occurs). `None` where the language is not parsed, and
        /// occurrences are all there is.
        definitions: Option<BTreeMap<String, Vec<Defined>>>,
    },
}

/// A definition's first and last line.
pub type Span = (u32, u32);

/// One definition of a cited symbol: where it is, and a digest of its text, which tells
/// whether the definition itself changed between two versions of its file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Defined {
    /// Its first and last line.
    pub span: Span,
    /// A hash of its lines' text (comparable within one process only).
    pub digest: u64,
}

impl CitedFile {
    /// The lines `symbol` occurs on (empty when it does not, or when this is not a file).
    pub fn lines_of(&self, symbol: &str) -> &[u32] {
        match self {
            CitedFile::File { symbol_lines, .. } => {
                symbol_lines.get(symbol).map_or(&[][..], Vec::as_slice)
            }
            _ => &[],
        }
    }

    /// `symbol`'s definitions when the file's language is parsed; `None` when it is not (or
    /// this is not a file).
    pub fn defined(&self, symbol: &str) -> Option<&[Defined]> {
        match self {
            CitedFile::File {
                definitions: Some(definitions),
                ..
            } => Some(definitions.get(symbol).map_or(&[][..], Vec::as_slice)),
            _ => None,
        }
    }

    /// The spans of `symbol`'s definitions when the file's language is parsed; `None` when it
    /// is not (or this is not a file).
    pub fn definitions_of(&self, symbol: &str) -> Option<Vec<Span>> {
        let defined = self.defined(symbol)?;
        Some(defined.iter().map(|definition| definition.span).collect())
    }

    /// This file with the definitions of a parse of `text` (its contents): for each symbol
    /// asked about, the definitions named like it (its last segment: `Store::commit` →
    /// `commit`), each with the digest of its lines.
    pub fn with_definitions(
        self,
        definitions: &[crate::policy::code_map::Definition],
        text: &str,
    ) -> Self {
        let CitedFile::File {
            line_count,
            symbol_lines,
            ..
        } = self
        else {
            return self;
        };
        let line_starts: Vec<usize> = std::iter::once(0)
            .chain(text.match_indices('\n').map(|(at, _)| at + 1))
            .collect();
        let digest = |(first, last): Span| {
            let at = |line: u32| {
                let index = usize::try_from(line).unwrap_or(usize::MAX);
                line_starts.get(index).copied().unwrap_or(text.len())
            };
            let lines = text
                .get(at(first.saturating_sub(1))..at(last))
                .unwrap_or("");
            let mut hasher = DefaultHasher::new();
            hasher.write(lines.as_bytes());
            hasher.finish()
        };
        let found = symbol_lines
            .keys()
            .map(|symbol| {
                let (needle, _) = symbol_needle(symbol);
                let defined = definitions
                    .iter()
                    .filter(|definition| definition.name == needle)
                    .map(|definition| {
                        let span = (definition.start_line, definition.end_line);
                        Defined {
                            span,
                            digest: digest(span),
                        }
                    })
                    .collect();
                (symbol.clone(), defined)
            })
            .collect();
        CitedFile::File {
            line_count,
            symbol_lines,
            definitions: Some(found),
        }
    }
}

/// Whether a reference's lines hold against its symbol's definitions: they are a definition's
/// whole span, a part of one that starts after it does, or a window around one that starts
/// before it does. A range that starts where the definition starts but ends elsewhere cited
/// all of it before it grew or shrank, and no longer holds.
pub fn range_holds(start: u32, end: u32, spans: &[Span]) -> bool {
    spans.iter().any(|&(first, last)| {
        (start, end) == (first, last)
            || (first < start && end <= last)
            || (start < first && last <= end)
    })
}

/// Whether the definition `code_ref` cites is, word for word, still a definition of its
/// symbol: `then` is its file as it was when the reference was written, `now` as it is. The
/// cited definition is the one its lines fall in (all of the symbol's definitions when they
/// fall in none, or there are none). `false` whenever it cannot be told: no symbol, a
/// language not parsed, no definition then.
pub fn definition_unchanged(code_ref: &CodeRef, then: &CitedFile, now: &CitedFile) -> bool {
    let Some(symbol) = code_ref.symbol.as_deref() else {
        return false;
    };
    let (Some(before), Some(after)) = (then.defined(symbol), now.defined(symbol)) else {
        return false;
    };
    let within = |definition: &&Defined| {
        ref_lines(code_ref).is_some_and(|(start, end)| {
            let (first, last) = definition.span;
            start <= last && first <= end
        })
    };
    let cited: Vec<&Defined> = match before.iter().filter(within).collect::<Vec<_>>() {
        within if within.is_empty() => before.iter().collect(),
        within => within,
    };
    !cited.is_empty()
        && cited
            .iter()
            .all(|old| after.iter().any(|new| new.digest == old.digest))
}

/// The span a reference to `symbol` anchors to: of its definitions, the one nearest `near`
/// (the longest when there is nothing to be near: a body over a declaration).
pub fn anchor_span(spans: &[Span], near: Option<u32>) -> Option<Span> {
    match near {
        Some(line) => spans
            .iter()
            .copied()
            .min_by_key(|&(first, _)| first.abs_diff(line)),
        None => spans
            .iter()
            .copied()
            .max_by_key(|&(first, last)| (last - first, std::cmp::Reverse(first))),
    }
}

/// The name of the definitions a symbol means: its last segment (`Store::commit` → `commit`,
/// `a.b` → `b`), or the whole trimmed symbol when that is not an identifier.
pub fn definition_name(symbol: &str) -> &str {
    symbol_needle(symbol).0
}

/// What a symbol is searched for: its last segment (`Store::commit` → `commit`, `a.b` → `b`) as
/// a whole identifier when it is one, the whole trimmed symbol as plain text otherwise.
fn symbol_needle(symbol: &str) -> (&str, bool) {
    let symbol = symbol.trim();
    let last = symbol
        .rsplit("::")
        .next()
        .and_then(|tail| tail.rsplit('.').next())
        .map(str::trim)
        .unwrap_or(symbol);
    if !last.is_empty() && last.chars().all(is_identifier_char) {
        (last, true)
    } else {
        (symbol, false)
    }
}

fn is_identifier_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_' || c == '$'
}

/// Counts the lines of `text` and finds where each of `symbols` occurs; see [`scan_bytes`].
pub fn scan_text(text: &str, symbols: &BTreeSet<String>) -> CitedFile {
    scan_bytes(text.as_bytes(), symbols)
}

/// Whether a byte can be part of an identifier: ASCII letters, digits, `_`, `$`, and every
/// byte of a non-ASCII character (so `é` never splits a word).
const IDENTIFIER_BYTES: [bool; 256] = {
    let mut table = [false; 256];
    let mut byte = 0;
    while byte < 256 {
        let b = byte as u8;
        table[byte] = b.is_ascii_alphanumeric() || b == b'_' || b == b'$' || b >= 0x80;
        byte += 1;
    }
    table
};

/// Counts the lines of a file (as `str::lines` would) and finds the lines where each of
/// `symbols` occurs, in one pass over the bytes: identifier symbols are matched against whole
/// identifiers, and only identifiers whose length and first byte could match are looked up;
/// other symbols are searched as plain text, line by line. Bytes need not be UTF-8.
pub fn scan_bytes(bytes: &[u8], symbols: &BTreeSet<String>) -> CitedFile {
    let symbols: Vec<&String> = symbols.iter().collect();
    let needles: Vec<(&str, bool)> = symbols.iter().map(|s| symbol_needle(s)).collect();
    // Lines found per symbol, by its index in `symbols`.
    let mut found: Vec<Vec<u32>> = vec![Vec::new(); symbols.len()];
    let mut by_identifier: HashMap<&[u8], Vec<usize>> = HashMap::new();
    let mut by_text: Vec<(&[u8], usize)> = Vec::new();
    for (index, (needle, identifier)) in needles.iter().enumerate() {
        match identifier {
            true => by_identifier
                .entry(needle.as_bytes())
                .or_default()
                .push(index),
            false if !needle.is_empty() => by_text.push((needle.as_bytes(), index)),
            false => {}
        }
    }
    let mut first_bytes = [false; 256];
    let (mut shortest, mut longest) = (usize::MAX, 0);
    for needle in by_identifier.keys() {
        first_bytes[usize::from(needle[0])] = true;
        shortest = shortest.min(needle.len());
        longest = longest.max(needle.len());
    }
    let mut record = |index: usize, line: u32| {
        let lines = &mut found[index];
        if lines.last() != Some(&line) {
            lines.push(line);
        }
    };
    let mut line: u32 = 1;
    let mut at = 0;
    if by_identifier.is_empty() {
        // Only the line count is needed.
        line = line.saturating_add(
            u32::try_from(bytes.iter().filter(|b| **b == b'\n').count()).unwrap_or(u32::MAX),
        );
        at = bytes.len();
    }
    while at < bytes.len() {
        let byte = bytes[at];
        if byte == b'\n' {
            line = line.saturating_add(1);
            at += 1;
            continue;
        }
        if !IDENTIFIER_BYTES[usize::from(byte)] {
            at += 1;
            continue;
        }
        let start = at;
        while at < bytes.len() && IDENTIFIER_BYTES[usize::from(bytes[at])] {
            at += 1;
        }
        let word = &bytes[start..at];
        if (shortest..=longest).contains(&word.len())
            && first_bytes[usize::from(word[0])]
            && let Some(owners) = by_identifier.get(word)
        {
            for index in owners {
                record(*index, line);
            }
        }
    }
    if !by_text.is_empty() {
        for (index, text_line) in bytes.split(|b| *b == b'\n').enumerate() {
            let number = u32::try_from(index + 1).unwrap_or(u32::MAX);
            for (needle, index) in &by_text {
                if text_line
                    .windows(needle.len())
                    .any(|window| window == *needle)
                {
                    record(*index, number);
                }
            }
        }
    }
    // `line` is one past the newlines seen; a last line without a newline counts too.
    let terminated = bytes.last().is_none_or(|b| *b == b'\n');
    CitedFile::File {
        line_count: if terminated { line - 1 } else { line },
        symbol_lines: symbols.into_iter().cloned().zip(found).collect(),
        definitions: None,
    }
}

#[cfg(test)]
mod tests {
    use super::super::fixtures::SOURCE;
    use super::super::fixtures::code_ref;
    use super::super::fixtures::symbols;
    use super::super::located_problems;
    use super::*;
    use crate::state::problem::Problem;

    #[test]
    fn ranges_hold_as_the_span_a_part_or_a_window_and_anchor_to_the_nearest() {
        let spans = [(10, 20), (40, 41)];
        for (start, end, holds) in [
            (10, 20, true),  // the span
            (12, 15, true),  // a part, starting inside
            (8, 22, true),   // a window around it
            (10, 15, false), // started with it, now longer: it grew
            (10, 25, false), // started with it, now shorter: it shrank
            (5, 12, false),  // it moved down
            (30, 35, false), // elsewhere
        ] {
            assert_eq!(range_holds(start, end, &spans), holds, "{start}-{end}");
        }
        assert_eq!(anchor_span(&spans, Some(38)), Some((40, 41)));
        assert_eq!(anchor_span(&spans, None), Some((10, 20)));
        assert_eq!(anchor_span(&[], None), None);
        let file = scan_text("// helper\nfn helper() {}\n", &["helper".to_owned()].into());
        let parsed = file.clone().with_definitions(
            &[crate::policy::code_map::Definition {
                name: "helper".into(),
                kind: "function".into(),
                line: 2,
                start_line: 2,
                end_line: 2,
                signature: "fn helper() {}".into(),
            }],
            "// helper\nfn helper() {}\n",
        );
        assert_eq!(file.definitions_of("helper"), None);
        assert_eq!(parsed.definitions_of("helper"), Some(vec![(2, 2)]));
        let mention = code_ref("a.rs", Some(1), None, Some("helper"));
        assert!(located_problems(&mention, &file).is_empty());
        assert_eq!(
            located_problems(&mention, &parsed),
            [Problem::whole(
                "lines 1-1 are not the definition of `helper`, a part of it or a window around it (it is at lines 2-2; cite the symbol without lines to take its span)"
            )]
        );
    }

    #[test]
    fn a_cited_definition_is_unchanged_while_its_own_text_is() {
        const THEN: &str = "fn new() {\n    a();\n}\nfn new() {\n    b();\n}\n";
        let parsed = |text: &str| {
            let definition = |start_line: u32| crate::policy::code_map::Definition {
                name: "new".into(),
                kind: "function".into(),
                line: start_line,
                start_line,
                end_line: start_line + 2,
                signature: "fn new() {".into(),
            };
            scan_text(text, &["new".to_owned()].into())
                .with_definitions(&[definition(1), definition(4)], text)
        };
        let then = parsed(THEN);
        let second = code_ref("a.rs", Some(4), Some(6), Some("new"));
        let any = code_ref("a.rs", None, None, Some("new"));
        let first_changed = parsed(&THEN.replace("a()", "c()"));
        assert!(definition_unchanged(&second, &then, &first_changed));
        assert!(!definition_unchanged(&any, &then, &first_changed));
        let second_changed = parsed(&THEN.replace("b()", "c()"));
        assert!(!definition_unchanged(&second, &then, &second_changed));
        // The definitions swapped places: each is still there, word for word.
        let swapped = parsed("fn new() {\n    b();\n}\nfn new() {\n    a();\n}\n");
        assert!(definition_unchanged(&second, &then, &swapped));
        // Not parsed, or no symbol: it cannot be told.
        let unparsed = scan_text(THEN, &["new".to_owned()].into());
        assert!(!definition_unchanged(&second, &unparsed, &unparsed));
        let no_symbol = code_ref("a.rs", Some(1), Some(3), None);
        assert!(!definition_unchanged(&no_symbol, &then, &then));
    }

    #[test]
    fn scanning_counts_lines_and_finds_whole_identifiers() {
        let file = scan_text(
            SOURCE,
            &symbols(&["Store::commit", "Store", "missing", "a->b", "x.bar"]),
        );
        let CitedFile::File { line_count, .. } = &file else {
            panic!("{file:?}");
        };
        assert_eq!(*line_count, 6);
        assert_eq!(file.lines_of("Store::commit"), &[3], "not `committed`");
        assert_eq!(file.lines_of("Store"), &[2]);
        assert_eq!(file.lines_of("missing"), &[] as &[u32]);
        assert_eq!(file.lines_of("a->b"), &[6], "non-identifiers match as text");
        assert_eq!(file.lines_of("x.bar"), &[6], "last segment");
        assert_eq!(file.lines_of("never asked"), &[] as &[u32]);
        let CitedFile::File { line_count, .. } = scan_text("", &BTreeSet::new()) else {
            panic!("empty text is a file");
        };
        assert_eq!(line_count, 0);
        let bytes = scan_bytes(b"\xff\xfe\nfn a() {}", &symbols(&["a"]));
        assert_eq!(bytes.lines_of("a"), &[2], "bytes need not be UTF-8");
        let CitedFile::File { line_count, .. } = scan_text("a\r\nb", &BTreeSet::new()) else {
            panic!("a file");
        };
        assert_eq!(line_count, 2);
    }
}
