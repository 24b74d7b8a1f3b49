//! Scanning a cited file's bytes. [`Scan`] counts the lines and finds the lines each symbol
//! asked about occurs on, fed the bytes in chunks of any size and carrying across their edges
//! what a chunk left unfinished (an identifier, a line a text needle may straddle). A file held
//! whole is scanned as one chunk ([`scan_bytes`]); a file too large to keep is scanned as it
//! streams past ([`Scan::taking`]), and then the scan also takes on the way what the judge will
//! read of the text it does not keep: the fingerprint of every text its references may cite
//! (see [`Asked`]) and, when asked, their first lines. [`LineDigest`] is that fingerprint taken
//! line by line, a line in as many pieces as it comes in; [`super::fingerprint`] takes it the
//! same way from a text held whole. Must not read files: callers feed the bytes.

use std::collections::BTreeSet;
use std::collections::HashMap;
use std::sync::Arc;

use memchr::memmem::Finder;
use sha2::Digest;
use sha2::Sha256;

use super::Cited;
use super::cited::Asked;
use super::cited::CitedFile;
use super::cited::HEAD_BYTES;
use super::cited::HEAD_LINES;
use super::cited::Taken;
use super::cited::Text;
use super::cited::symbol_needle;

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

fn is_identifier_byte(byte: u8) -> bool {
    IDENTIFIER_BYTES[usize::from(byte)]
}

/// The pieces of `chunk` between its newlines, each with whether a newline ends it (the last
/// does not: it is the start of a line the next chunk goes on with, or empty).
fn pieces(chunk: &[u8]) -> impl Iterator<Item = (&[u8], bool)> {
    let ends = memchr::memchr_iter(b'\n', chunk).map(Some).chain([None]);
    let mut start = 0;
    ends.map(move |end| {
        let piece = &chunk[start..end.unwrap_or(chunk.len())];
        start = end.map_or(chunk.len(), |end| end + 1);
        (piece, end.is_some())
    })
}

/// Counts the lines of `text` and finds where each of `symbols` occurs; see [`scan_bytes`].
pub fn scan_text(text: &str, symbols: &BTreeSet<String>) -> CitedFile {
    scan_bytes(Arc::from(text.as_bytes()), symbols)
}

/// Counts the lines of a file (as `str::lines` would) and finds the lines where each of
/// `symbols` occurs, in one pass over the bytes ([`Scan`], fed them as one chunk). Bytes need
/// not be UTF-8. The file keeps `text` as it is handed in, never a copy.
pub fn scan_bytes(text: Arc<[u8]>, symbols: &BTreeSet<String>) -> CitedFile {
    let mut scan = Scan::new(symbols);
    scan.feed(&text);
    scan.finish_with(|_| Text::Whole(text))
}

/// The fingerprint of a text (see [`super::fingerprint`]) taken line by line: each line without
/// its leading and trailing white space, blank lines left out, the others joined by `\n`. A
/// line may come in pieces; white space at the end of a piece is held back (in a copy of the
/// hasher, never in a buffer) until the line goes on past it.
#[derive(Clone, Default)]
pub struct LineDigest {
    hasher: Sha256,
    /// Whether a line was taken yet (the next one is joined by `\n`).
    joined: bool,
    /// Whether the line being taken has shown anything but white space.
    started: bool,
    /// The hasher with the white space the last piece ended in: taken if the line goes on.
    held: Option<Sha256>,
}

impl LineDigest {
    /// Takes `piece`, the next part of the line being taken, which ends with it when `ends`.
    pub fn take(&mut self, piece: &[u8], ends: bool) {
        let mut piece = piece;
        if !self.started {
            piece = piece.trim_ascii_start();
            if piece.is_empty() {
                return;
            }
            if self.joined {
                self.hasher.update(b"\n");
            }
            self.joined = true;
            self.started = true;
        }
        let body = piece.trim_ascii_end();
        if !body.is_empty() {
            if let Some(held) = self.held.take() {
                self.hasher = held;
            }
            self.hasher.update(body);
        }
        if ends {
            self.started = false;
            self.held = None;
        } else if body.len() < piece.len() {
            let hasher = &self.hasher;
            (self.held.get_or_insert_with(|| hasher.clone())).update(&piece[body.len()..]);
        }
    }

    /// Takes every line of `chunk`, the next bytes of the text: fed a whole file's chunks in
    /// order, it gives the fingerprint of the whole file, as a scan asked for it does.
    pub fn take_chunk(&mut self, chunk: &[u8]) {
        for (piece, ends) in pieces(chunk) {
            self.take(piece, ends);
        }
    }

    /// The fingerprint: the first 16 hex digits of the SHA-256 (a line left unended ends here).
    pub fn finish(self) -> String {
        hex::encode(&self.hasher.finalize()[..8])
    }
}

/// The symbols a scan looks for, how, and the lines it found each on.
struct Symbols<'a> {
    names: Vec<&'a String>,
    /// Lines found per symbol, by its index in `names`, ascending.
    found: Vec<Vec<u32>>,
    /// Identifier needles → the symbols that look for them.
    by_identifier: HashMap<&'a [u8], Vec<usize>>,
    /// Other symbols' needles, searched as plain text line by line.
    by_text: Vec<(Finder<'a>, usize)>,
    /// The first bytes, and the shortest and longest of the identifier needles.
    first_bytes: [bool; 256],
    shortest: usize,
    longest: usize,
    /// The longest text needle.
    widest: usize,
}

impl<'a> Symbols<'a> {
    fn new(symbols: &'a BTreeSet<String>) -> Symbols<'a> {
        let names: Vec<&String> = symbols.iter().collect();
        let mut by_identifier: HashMap<&[u8], Vec<usize>> = HashMap::new();
        let mut by_text = Vec::new();
        for (index, symbol) in names.iter().enumerate() {
            match symbol_needle(symbol) {
                (needle, true) => by_identifier
                    .entry(needle.as_bytes())
                    .or_default()
                    .push(index),
                (needle, false) if !needle.is_empty() => by_text.push((Finder::new(needle), index)),
                (_, false) => {}
            }
        }
        let mut first_bytes = [false; 256];
        let (mut shortest, mut longest) = (usize::MAX, 0);
        for needle in by_identifier.keys() {
            first_bytes[usize::from(needle[0])] = true;
            shortest = shortest.min(needle.len());
            longest = longest.max(needle.len());
        }
        let widest = (by_text.iter())
            .map(|(needle, _)| needle.needle().len())
            .max();
        Symbols {
            found: vec![Vec::new(); names.len()],
            names,
            by_identifier,
            by_text,
            first_bytes,
            shortest,
            longest,
            widest: widest.unwrap_or(0),
        }
    }

    /// Records `line` for the symbols looking for the whole identifier `word`; only words whose
    /// length and first byte could match are looked up.
    fn identifier(&mut self, word: &[u8], line: u32) {
        if (self.shortest..=self.longest).contains(&word.len())
            && self.first_bytes[usize::from(word[0])]
            && let Some(owners) = self.by_identifier.get(word)
        {
            for &index in owners {
                record(&mut self.found[index], line);
            }
        }
    }

    /// Whether `symbol` occurs on `line`, asked line after line: `seen` keeps how far its
    /// lines were looked through.
    fn occurs(&self, symbol: usize, line: u32, seen: &mut usize) -> bool {
        let lines = &self.found[symbol];
        while lines.get(*seen).is_some_and(|found| *found < line) {
            *seen += 1;
        }
        lines.get(*seen) == Some(&line)
    }
}

/// Adds `line` to a symbol's lines, once.
fn record(lines: &mut Vec<u32>, line: u32) {
    if lines.last() != Some(&line) {
        lines.push(line);
    }
}

/// A scan of a file's bytes, fed in chunks of any size: see the module docs.
pub struct Scan<'a> {
    symbols: Symbols<'a>,
    /// The line the next byte is on (1-based).
    line: u32,
    /// The identifier the last chunk ended in, while it is short enough to be looked for, and
    /// whether it is.
    word: Vec<u8>,
    in_word: bool,
    word_fits: bool,
    /// The end of the line the last chunk ended in, as much of it as a text needle straddling
    /// the edge needs.
    tail: Vec<u8>,
    /// Whether the last byte fed ended a line (or none was fed).
    terminated: bool,
    /// What a file not kept is read for besides.
    taking: Option<Taking>,
}

impl<'a> Scan<'a> {
    /// A scan for the lines of `symbols`, taking nothing else.
    pub fn new(symbols: &'a BTreeSet<String>) -> Scan<'a> {
        Scan {
            symbols: Symbols::new(symbols),
            line: 1,
            word: Vec::new(),
            in_word: false,
            word_fits: false,
            tail: Vec::new(),
            terminated: true,
            taking: None,
        }
    }

    /// A scan for all `asked` asks of a file that is not kept: its symbols' lines, and the
    /// fingerprints (and first lines) of the texts its references may cite.
    pub fn taking(asked: &'a Asked) -> Scan<'a> {
        let mut scan = Scan::new(&asked.symbols);
        scan.taking = Some(Taking::new(asked, &scan.symbols));
        scan
    }

    /// Scans the next `chunk` of the file.
    pub fn feed(&mut self, chunk: &[u8]) {
        let Some(&last) = chunk.last() else {
            return;
        };
        let first_line = self.line;
        self.find_identifiers(chunk);
        self.find_texts(chunk, first_line);
        if let Some(taking) = self.taking.as_mut() {
            taking.feed(chunk, first_line, &self.symbols);
        }
        self.terminated = last == b'\n';
    }

    /// The file scanned: what a file that is not kept answers (see [`Scan::taking`]).
    pub fn finish(self) -> CitedFile {
        self.finish_with(|taken| Text::Taken(Arc::new(taken)))
    }

    fn finish_with(mut self, text: impl FnOnce(Taken) -> Text) -> CitedFile {
        if self.in_word {
            self.end_word(self.line);
        }
        // `line` is one past the newlines seen; a last line without a newline counts too.
        let line_count = if self.terminated {
            self.line - 1
        } else {
            self.line
        };
        let taken = (self.taking.take())
            .map(|taking| taking.finish(line_count, &self.symbols))
            .unwrap_or_default();
        let Symbols { names, found, .. } = self.symbols;
        CitedFile::File {
            line_count,
            symbol_lines: names.into_iter().cloned().zip(found).collect(),
            definitions: None,
            text: text(taken),
        }
    }

    /// Counts the chunk's lines and records the identifier needles it holds.
    fn find_identifiers(&mut self, chunk: &[u8]) {
        if self.symbols.by_identifier.is_empty() {
            // Only the line count is needed.
            let newlines = chunk.iter().filter(|b| **b == b'\n').count();
            let newlines = u32::try_from(newlines).unwrap_or(u32::MAX);
            self.line = self.line.saturating_add(newlines);
            return;
        }
        let mut at = 0;
        if self.in_word {
            // The identifier the last chunk ended in goes on here.
            let end = (chunk.iter().position(|b| !is_identifier_byte(*b))).unwrap_or(chunk.len());
            self.carry(&chunk[..end]);
            if end == chunk.len() {
                return;
            }
            self.end_word(self.line);
            at = end;
        }
        let mut line = self.line;
        while at < chunk.len() {
            let byte = chunk[at];
            if byte == b'\n' {
                line = line.saturating_add(1);
                at += 1;
                continue;
            }
            if !is_identifier_byte(byte) {
                at += 1;
                continue;
            }
            let start = at;
            while at < chunk.len() && is_identifier_byte(chunk[at]) {
                at += 1;
            }
            if at == chunk.len() {
                (self.in_word, self.word_fits) = (true, true);
                self.word.clear();
                self.carry(&chunk[start..]);
                break;
            }
            self.symbols.identifier(&chunk[start..at], line);
        }
        self.line = line;
    }

    /// Adds `piece` to the identifier carried over a chunk's edge, while it could be looked for.
    fn carry(&mut self, piece: &[u8]) {
        if self.word_fits && self.word.len() + piece.len() <= self.symbols.longest {
            self.word.extend_from_slice(piece);
        } else {
            self.word_fits = false;
            self.word.clear();
        }
    }

    /// Looks up the identifier carried over a chunk's edge, which ended on `line`.
    fn end_word(&mut self, line: u32) {
        self.in_word = false;
        if self.word_fits {
            let word = std::mem::take(&mut self.word);
            self.symbols.identifier(&word, line);
            self.word = word;
        }
    }

    /// Records the text needles found in the chunk's lines, the first of them `first_line`.
    fn find_texts(&mut self, chunk: &[u8], first_line: u32) {
        let Scan { symbols, tail, .. } = self;
        if symbols.by_text.is_empty() {
            return;
        }
        let keep = symbols.widest - 1;
        let mut line = first_line;
        for (piece, ends) in pieces(chunk) {
            for (needle, index) in &symbols.by_text {
                let width = needle.needle().len();
                let straddles = !tail.is_empty() && {
                    let mut joint = tail.clone();
                    joint.extend_from_slice(&piece[..piece.len().min(width - 1)]);
                    needle.find(&joint).is_some()
                };
                if straddles || needle.find(piece).is_some() {
                    record(&mut symbols.found[*index], line);
                }
            }
            if ends {
                tail.clear();
                line = line.saturating_add(1);
            } else {
                tail.extend_from_slice(piece);
                let excess = tail.len().saturating_sub(keep);
                tail.drain(..excess);
            }
        }
    }
}

/// What a scan takes from a file it does not keep, besides its lines and symbols.
struct Taking {
    /// Each text asked, in the order of its first line.
    texts: Vec<TextTaking>,
    /// How many of `texts` have begun.
    begun: usize,
    /// The texts the current line is in, by index.
    open: Vec<usize>,
    follows: Vec<Follow>,
    /// The current line from its start: the first line of a follower's window.
    line: LineDigest,
    /// Whether the current line has begun.
    in_line: bool,
}

/// An asked text being taken: lines `first` to `last`.
struct TextTaking {
    cited: Cited,
    first: u32,
    last: u32,
    digest: LineDigest,
    /// Its first lines, when asked for excerpts.
    head: Option<Head>,
}

/// The first lines of a text being taken, for its excerpts.
#[derive(Clone, Default)]
struct Head {
    /// The bytes of its complete lines, each with its newline.
    bytes: Vec<u8>,
    lines: usize,
    /// Whether more would pass [`HEAD_LINES`] or [`HEAD_BYTES`].
    full: bool,
}

impl TextTaking {
    fn take(&mut self, piece: &[u8], ends: bool) {
        self.digest.take(piece, ends);
        let Some(head) = self.head.as_mut().filter(|head| !head.full) else {
            return;
        };
        if head.bytes.len() + piece.len() > HEAD_BYTES {
            // The line this piece is part of would pass any budget of excerpts: left out.
            let complete = (head.bytes.iter().rposition(|b| *b == b'\n')).map_or(0, |at| at + 1);
            head.bytes.truncate(complete);
            head.full = true;
            return;
        }
        head.bytes.extend_from_slice(piece);
        if ends {
            head.bytes.push(b'\n');
            head.lines += 1;
            head.full = head.lines >= HEAD_LINES;
        }
    }
}

/// A reference citing a symbol on lines `from` to `from + length`: should the symbol leave
/// them, the judge moves it to the symbol's occurrence nearest `from` (the last at or before
/// it, or the first after it), and the text its repair cites is that many lines there.
struct Follow {
    symbol: usize,
    from: u32,
    length: u32,
    /// How far the symbol's lines were looked through.
    seen: usize,
    before: Option<Window>,
    after: Option<Window>,
}

/// The text a repair would cite: lines `first` to `last` (or the end of the file).
struct Window {
    first: u32,
    last: u32,
    digest: LineDigest,
}

impl Window {
    fn open(&self, line: u32) -> bool {
        line <= self.last
    }
}

impl Taking {
    fn new(asked: &Asked, symbols: &Symbols<'_>) -> Taking {
        let head = asked.excerpts.then(Head::default);
        let mut texts: Vec<TextTaking> = (asked.texts.iter())
            .map(|cited| {
                let (first, last) = match *cited {
                    Cited::File => (1, u32::MAX),
                    Cited::Lines((first, last)) => (first.max(1), last),
                };
                TextTaking {
                    cited: *cited,
                    first,
                    last,
                    digest: LineDigest::default(),
                    head: head.clone(),
                }
            })
            .collect();
        texts.sort_by_key(|text| text.first);
        let follows = (asked.follows.iter())
            .filter_map(|(symbol, spans)| {
                let index = symbols.names.iter().position(|name| *name == symbol)?;
                Some(spans.iter().map(move |&(from, last)| Follow {
                    symbol: index,
                    from,
                    length: last.wrapping_sub(from),
                    seen: 0,
                    before: None,
                    after: None,
                }))
            })
            .flatten()
            .collect();
        Taking {
            texts,
            begun: 0,
            open: Vec::new(),
            follows,
            line: LineDigest::default(),
            in_line: false,
        }
    }

    /// Takes from `chunk`, whose first line is `first_line`, what the texts asked need.
    fn feed(&mut self, chunk: &[u8], first_line: u32, symbols: &Symbols<'_>) {
        let mut line = first_line;
        for (piece, ends) in pieces(chunk) {
            if piece.is_empty() && !ends {
                break;
            }
            if !self.in_line {
                self.begin(line);
            }
            self.take(piece, ends, line);
            if ends {
                self.end(line, symbols);
                line = line.saturating_add(1);
            }
        }
    }

    fn begin(&mut self, line: u32) {
        self.in_line = true;
        while let Some(text) = self.texts.get(self.begun).filter(|text| text.first <= line) {
            if line <= text.last {
                self.open.push(self.begun);
            }
            self.begun += 1;
        }
        if !self.follows.is_empty() {
            self.line = LineDigest::default();
        }
    }

    fn take(&mut self, piece: &[u8], ends: bool, line: u32) {
        for &index in &self.open {
            self.texts[index].take(piece, ends);
        }
        if self.follows.is_empty() {
            return;
        }
        self.line.take(piece, ends);
        for follow in &mut self.follows {
            let windows = [follow.before.as_mut(), follow.after.as_mut()];
            for window in windows.into_iter().flatten() {
                if window.open(line) {
                    window.digest.take(piece, ends);
                }
            }
        }
    }

    /// Ends `line`: the texts that end with it close, and a reference whose symbol occurs on it
    /// may take a window here.
    fn end(&mut self, line: u32, symbols: &Symbols<'_>) {
        self.in_line = false;
        let texts = &self.texts;
        self.open.retain(|index| line < texts[*index].last);
        for follow in &mut self.follows {
            if !symbols.occurs(follow.symbol, line, &mut follow.seen) {
                continue;
            }
            let window = || Window {
                first: line,
                last: line.saturating_add(follow.length),
                digest: self.line.clone(),
            };
            if line <= follow.from {
                follow.before = Some(window());
            } else if follow.after.is_none() {
                follow.after = Some(window());
            }
        }
    }

    /// What was taken, from a file of `line_count` lines.
    fn finish(mut self, line_count: u32, symbols: &Symbols<'_>) -> Taken {
        if self.in_line {
            // The last line, without a newline.
            self.end(line_count, symbols);
        }
        let mut taken = Taken::default();
        for follow in self.follows {
            for window in [follow.before, follow.after].into_iter().flatten() {
                let last = window.last.min(line_count).max(window.first);
                (taken.fingerprints)
                    .entry(Cited::Lines((window.first, last)))
                    .or_insert_with(|| window.digest.finish());
            }
        }
        for text in self.texts {
            if let Some(head) = text.head {
                taken.heads.insert(text.cited, head.bytes);
            }
            (taken.fingerprints).insert(text.cited, text.digest.finish());
        }
        taken
    }
}

#[cfg(test)]
mod tests {
    use super::super::fixtures::SOURCE;
    use super::super::fixtures::code_ref;
    use super::super::fixtures::symbols;
    use super::super::judge::cited_text;
    use super::super::judge::fingerprint_now;
    use super::super::judge::judge;
    use super::*;
    use crate::state::model::CodeRef;

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

    /// `text` fed in chunks of `size` to a scan taking what `refs` ask, with excerpts.
    fn streamed(text: &[u8], refs: &[CodeRef], size: usize) -> CitedFile {
        let mut asked = Asked {
            excerpts: true,
            ..Asked::default()
        };
        refs.iter().for_each(|code_ref| asked.cite(code_ref));
        let mut scan = Scan::taking(&asked);
        text.chunks(size).for_each(|chunk| scan.feed(chunk));
        scan.finish()
    }

    /// Whether a file streamed answers every reference as the same bytes held whole do: its
    /// lines, where its symbols occur, the judge's verdict, the fingerprint of what it cites
    /// now (a repair's included) and the excerpt of it.
    fn same_answers(text: &[u8], refs: &[CodeRef], size: usize) -> Result<(), String> {
        let mut asked = Asked::default();
        refs.iter().for_each(|code_ref| asked.cite(code_ref));
        let whole = scan_bytes(Arc::from(text), &asked.symbols);
        let streamed = streamed(text, refs, size);
        let lines = |file: &CitedFile| match file {
            CitedFile::File {
                line_count,
                symbol_lines,
                ..
            } => Some((*line_count, symbol_lines.clone())),
            _ => None,
        };
        if lines(&whole) != lines(&streamed) {
            return Err(format!("lines: {whole:?} vs {streamed:?}"));
        }
        for code_ref in refs {
            let answers = |file: &CitedFile| {
                let cited = cited_text(code_ref, file);
                (
                    judge(code_ref, file, None),
                    fingerprint_now(code_ref, file, None),
                    cited.and_then(|cited| file.excerpt(cited)),
                )
            };
            let (expected, got) = (answers(&whole), answers(&streamed));
            if expected != got {
                return Err(format!("{code_ref:?}: {expected:?} vs {got:?}"));
            }
        }
        Ok(())
    }

    /// Lines and symbols straddling every chunk edge, CRLF, blank and white-space lines, bytes
    /// that are not UTF-8, no final newline, and a line too long for any excerpt.
    #[test]
    fn a_file_streamed_in_chunks_answers_as_the_file_held_whole() {
        let long = "x".repeat(HEAD_BYTES + 10);
        let text = format!(
            "fn alpha() {{}}\r\n  \t\n  beta alpha_beta a->b \r\n\n\u{e9}alpha\t \n{long}\nalpha\n\
             \x20 a->\n>b alpha  \nlast alpha"
        );
        let mut bytes = text.into_bytes();
        bytes.extend_from_slice(b"\n\xff\xfe alpha \xc3\n  end  ");
        let refs = [
            code_ref("f", None, None, None),
            code_ref("f", None, None, Some("alpha")),
            code_ref("f", Some(1), Some(3), None),
            code_ref("f", Some(2), Some(7), Some("alpha")),
            code_ref("f", Some(3), Some(4), Some("a->b")),
            code_ref("f", Some(4), Some(5), Some("alpha")),
            code_ref("f", Some(8), None, Some("alpha")),
            code_ref("f", Some(9), Some(10), Some("alpha")),
            code_ref("f", Some(11), Some(12), Some("end")),
            code_ref("f", Some(1), Some(2), Some("end")),
            code_ref("f", Some(12), Some(40), None),
            code_ref("f", Some(6), Some(6), Some("x")),
            code_ref("f", Some(2), Some(2), Some("ghost")),
        ];
        for size in [1, 2, 3, 5, 7, 16, 64, 1000, bytes.len()] {
            if let Err(problem) = same_answers(&bytes, &refs, size) {
                panic!("chunks of {size}: {problem}");
            }
        }
        // A reference whose symbol left its lines is repaired, and its repair's text taken.
        let moved = code_ref("f", Some(4), Some(5), Some("alpha"));
        assert!(
            fingerprint_now(
                &moved,
                &streamed(&bytes, std::slice::from_ref(&moved), 3),
                None
            )
            .is_some()
        );
        // The excerpt of the whole file stops before the long line, streamed or not.
        let file = streamed(&bytes, &refs, 7);
        let excerpt = file.excerpt(Cited::File).expect("asked");
        assert_eq!(excerpt.lines.len(), 5, "{excerpt:?}");
        assert_eq!(excerpt.lines[0], "fn alpha() {}", "no carriage return");
        assert_eq!(excerpt.total, 12);
        // What was not asked is not answered.
        assert_eq!(file.fingerprint(Cited::Lines((2, 3))), None);
    }

    /// What the files of the property are made of: the symbols it cites and pieces of them,
    /// white space, line ends, and bytes that are not UTF-8 or start a character.
    const TOKENS: [&[u8]; 14] = [
        b"ab",
        b"b",
        b"a->b",
        b"a-",
        b">b",
        b" ",
        b"\t",
        b"\r",
        b"\n",
        b"\r\n",
        b"\n\n",
        "\u{e9}".as_bytes(),
        b"\xff\xc3",
        b"x",
    ];

    proptest::proptest! {
        #[test]
        fn any_file_in_any_chunks_answers_as_the_file_held_whole(
            tokens in proptest::collection::vec(proptest::sample::select(&TOKENS[..]), 0..80),
            size in 1usize..40,
            refs in proptest::collection::vec(
                (0u32..30, proptest::option::of(0u32..6), 0usize..5), 0..8),
        ) {
            let names = [None, Some("ab"), Some("b"), Some("a->b"), Some("Store::ab")];
            let refs: Vec<CodeRef> = (refs.into_iter())
                .map(|(start, length, symbol)| {
                    let start = (start > 0).then_some(start);
                    let end = start.zip(length).map(|(start, length)| start + length);
                    code_ref("f", start, end, names[symbol])
                })
                .collect();
            let answers = same_answers(&tokens.concat(), &refs, size);
            proptest::prop_assert_eq!(answers, Ok(()));
        }
    }
}
