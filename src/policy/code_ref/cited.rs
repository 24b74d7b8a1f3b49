//! What a cited file answers for a reference: [`CitedFile`], built by scanning its bytes for
//! the symbols asked about ([`super::scan`]) and, where its language is parsed, by the spans of
//! their definitions ([`CitedFile::with_definitions`]). It keeps what the judge reads of the
//! file's text ([`Text`]): all of it, for a file held whole, or, for a file too large to keep,
//! only what [`Asked`] said its references may cite, taken as it streamed past. Either way the
//! fingerprint of a cited text ([`CitedFile::fingerprint`]) and its first lines
//! ([`CitedFile::excerpt`]) are the same. Must not read files: callers hand in the bytes.

use std::collections::BTreeMap;
use std::collections::BTreeSet;
use std::collections::HashMap;
use std::sync::Arc;

use crate::policy::context::CODE_BUDGET;
use crate::policy::context::CODE_LINES_PER_REF;
use crate::policy::text::is_blank;
use crate::state::model::CodeRef;

use super::Cited;
use super::fingerprint;
use super::ref_lines;

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
        /// What is kept of the file's text.
        text: Text,
    },
}

/// What a [`CitedFile`] keeps of the file's text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Text {
    /// All of it.
    Whole(Arc<[u8]>),
    /// What was asked of a file too large to keep, taken as it streamed past.
    Taken(Arc<Taken>),
}

/// What a scan took of a file it did not keep ([`super::Scan::taking`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Taken {
    /// The fingerprint of each text asked ([`Asked::texts`]), and of each text a repair of an
    /// [`Asked::follows`] reference may cite.
    pub fingerprints: HashMap<Cited, String>,
    /// When asked ([`Asked::excerpts`]): each text asked → its first lines, each with its
    /// newline, no more than [`HEAD_LINES`], and none that would take the bytes past
    /// [`HEAD_BYTES`].
    pub heads: HashMap<Cited, Vec<u8>>,
}

/// The most lines of a cited text an excerpt shows: those `context --code` shows of a reference.
pub const HEAD_LINES: usize = CODE_LINES_PER_REF;

/// The bytes of a cited text's first lines that a file not kept keeps for its excerpts: lines
/// past them hold more than [`CODE_BUDGET`] characters (a character is at most 4 bytes), more
/// than any excerpt shows.
pub const HEAD_BYTES: usize = 4 * (CODE_BUDGET + 1);

/// The first lines of a cited text, as `str::lines` gives them (invalid UTF-8 replaced).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Excerpt {
    /// No more than [`HEAD_LINES`], and fewer than the text has (up to that) only when the
    /// next would take them past [`CODE_BUDGET`] characters, more than any excerpt shows.
    pub lines: Vec<String>,
    /// The lines of the text.
    pub total: usize,
}

/// The first lines of `text`, which starts where a cited text does: at most `take` of them and
/// [`HEAD_LINES`], and none that would take their bytes (each with its newline) past
/// [`HEAD_BYTES`]; each as `str::lines` gives it (a newline ends a line, and a carriage return
/// before it is dropped), invalid UTF-8 replaced.
fn head_lines(text: &[u8], take: usize) -> Vec<String> {
    let mut lines = Vec::new();
    let (mut rest, mut used) = (text, 0);
    while !rest.is_empty() && lines.len() < take.min(HEAD_LINES) {
        let (raw, next, ended) = match memchr::memchr(b'\n', rest) {
            Some(at) => (&rest[..at], &rest[at + 1..], true),
            None => (rest, &rest[rest.len()..], false),
        };
        if used + raw.len() > HEAD_BYTES {
            break;
        }
        used += raw.len() + 1;
        let line = match ended {
            true => raw.strip_suffix(b"\r").unwrap_or(raw),
            false => raw,
        };
        lines.push(String::from_utf8_lossy(line).into_owned());
        rest = next;
    }
    lines
}

/// What a reader is asked of one cited file: the symbols to find and, for a file too large to
/// keep, what its references may cite, for the fingerprints and excerpts the judge will read
/// ([`Taken`]). Gathered from the references with [`Asked::cite`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Asked {
    /// The symbols cited.
    pub symbols: BTreeSet<String>,
    /// The texts the references cite where they hold: their lines, or the whole file (a file
    /// too large to parse has no definitions for a symbol to widen them to).
    pub texts: BTreeSet<Cited>,
    /// Symbol → the lines of the references citing it there: should it leave them, the text
    /// their repair cites is as many lines at its occurrence nearest them.
    pub follows: BTreeMap<String, BTreeSet<Span>>,
    /// Whether the first lines of the texts are wanted ([`CitedFile::excerpt`]).
    pub excerpts: bool,
}

impl Asked {
    /// Adds what `code_ref` asks of its file.
    pub fn cite(&mut self, code_ref: &CodeRef) {
        let lines = ref_lines(code_ref);
        self.texts.insert(lines.map_or(Cited::File, Cited::Lines));
        let Some(symbol) = &code_ref.symbol else {
            return;
        };
        if !self.symbols.contains(symbol) {
            self.symbols.insert(symbol.clone());
        }
        if let Some(lines) = lines.filter(|_| !is_blank(symbol)) {
            match self.follows.get_mut(symbol) {
                Some(spans) => _ = spans.insert(lines),
                None => _ = self.follows.insert(symbol.clone(), [lines].into()),
            }
        }
    }

    /// Adds what `other` asks.
    pub fn merge(&mut self, other: &Asked) {
        self.symbols.extend(other.symbols.iter().cloned());
        self.texts.extend(other.texts.iter().copied());
        for (symbol, spans) in &other.follows {
            let mine = self.follows.entry(symbol.clone()).or_default();
            mine.extend(spans.iter().copied());
        }
        self.excerpts |= other.excerpts;
    }
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

    /// The fingerprint of `cited`, a text of this file ([`fingerprint`]); `None` when this is
    /// not a file, or it is one not kept and the text was not asked of it.
    pub fn fingerprint(&self, cited: Cited) -> Option<String> {
        match self {
            CitedFile::File {
                text: Text::Whole(text),
                ..
            } => Some(fingerprint(text, cited)),
            CitedFile::File {
                text: Text::Taken(taken),
                ..
            } => taken.fingerprints.get(&cited).cloned(),
            _ => None,
        }
    }

    /// The first lines of `cited`, a text of this file ([`head_lines`]); `None` when this is
    /// not a file, or it is one not kept and the text's first lines were not asked of it.
    pub fn excerpt(&self, cited: Cited) -> Option<Excerpt> {
        let CitedFile::File {
            text, line_count, ..
        } = self
        else {
            return None;
        };
        let (first, last) = match cited {
            Cited::Lines(span) => span,
            Cited::File => (1, u32::MAX),
        };
        let skip = usize::try_from(first)
            .unwrap_or(usize::MAX)
            .saturating_sub(1);
        let take = usize::try_from((u64::from(last) + 1).saturating_sub(u64::from(first)))
            .unwrap_or(usize::MAX);
        let start: &[u8] = match text {
            Text::Whole(text) if skip == 0 => text,
            Text::Whole(text) => {
                (memchr::memchr_iter(b'\n', text).nth(skip - 1)).map_or(&[], |at| &text[at + 1..])
            }
            Text::Taken(taken) => taken.heads.get(&cited)?,
        };
        let total = usize::try_from(*line_count).unwrap_or(usize::MAX);
        Some(Excerpt {
            lines: head_lines(start, take),
            total: total.saturating_sub(skip).min(take),
        })
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
pub(super) fn symbol_needle(symbol: &str) -> (&str, bool) {
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
