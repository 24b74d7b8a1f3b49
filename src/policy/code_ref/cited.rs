//! What a cited file answers for a reference: [`CitedFile`], built by scanning its bytes for
//! the symbols asked about ([`scan_bytes`]) and, where its language is parsed, by the spans of
//! their definitions ([`CitedFile::with_definitions`]). It keeps the file's text, which a
//! reference's fingerprint digests ([`super::fingerprint`]). Must not read files: callers hand
//! in the bytes.

use std::collections::BTreeMap;
use std::collections::BTreeSet;
use std::collections::HashMap;
use std::sync::Arc;

/// A cited path as the work tree (or a commit) has it, read by the caller.
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
        /// For a file of a parsed language: symbol → the spans of its definitions, in file
        /// order (`[]`: none, even if the name occurs). `None` where the language is not
        /// parsed, and occurrences are all there is.
        definitions: Option<BTreeMap<String, Vec<Span>>>,
        /// The file's bytes.
        text: Arc<[u8]>,
    },
}

/// A definition's first and last line.
pub type Span = (u32, u32);

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

    /// The spans of `symbol`'s definitions when the file's language is parsed; `None` when it
    /// is not (or this is not a file).
    pub fn definitions_of(&self, symbol: &str) -> Option<Vec<Span>> {
        match self {
            CitedFile::File {
                definitions: Some(definitions),
                ..
            } => Some(definitions.get(symbol).cloned().unwrap_or_default()),
            _ => None,
        }
    }

    /// The file's bytes; `None` when this is not a file.
    pub fn text(&self) -> Option<&[u8]> {
        match self {
            CitedFile::File { text, .. } => Some(text),
            _ => None,
        }
    }

    /// This file with the definitions of a parse of it: for each symbol asked about, the spans
    /// of the definitions named like it (its last segment: `Store::commit` → `commit`).
    pub fn with_definitions(self, definitions: &[crate::policy::code_map::Definition]) -> Self {
        let CitedFile::File {
            line_count,
            symbol_lines,
            text,
            ..
        } = self
        else {
            return self;
        };
        let found = symbol_lines
            .keys()
            .map(|symbol| {
                let (needle, _) = symbol_needle(symbol);
                let spans = definitions
                    .iter()
                    .filter(|definition| definition.name == needle)
                    .map(|definition| (definition.start_line, definition.end_line))
                    .collect();
                (symbol.clone(), spans)
            })
            .collect();
        CitedFile::File {
            line_count,
            symbol_lines,
            definitions: Some(found),
            text,
        }
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
    scan_bytes(Arc::from(text.as_bytes()), symbols)
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
/// other symbols are searched as plain text, line by line. Bytes need not be UTF-8. The file
/// keeps `text` as it is handed in, never a copy (a cited file may be hundreds of megabytes).
pub fn scan_bytes(text: Arc<[u8]>, symbols: &BTreeSet<String>) -> CitedFile {
    let bytes: &[u8] = &text;
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
        text,
    }
}

#[cfg(test)]
mod tests {
    use super::super::fixtures::SOURCE;
    use super::super::fixtures::symbols;
    use super::*;

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
        let bytes = scan_bytes(Arc::from(&b"\xff\xfe\nfn a() {}"[..]), &symbols(&["a"]));
        assert_eq!(bytes.lines_of("a"), &[2], "bytes need not be UTF-8");
        let CitedFile::File { line_count, .. } = scan_text("a\r\nb", &BTreeSet::new()) else {
            panic!("a file");
        };
        assert_eq!(line_count, 2);
    }
}
