//! The one judge of whether a code reference holds against its file: the write path checks a
//! reference with [`judge`] before it is stored, and `freshness` re-checks every stored one with
//! the same function on a file read and parsed the same way, so that a reference accepted at
//! write time is never reported broken on an unchanged tree (docs/freshness.md#reference-checks).
//!
//! A reference that holds cites a text: the lines of its symbol's definition together with its
//! own lines, its lines, or its whole file ([`Cited`]). [`fingerprint`] digests that text, which
//! is what a certificate compares (docs/freshness.md#certificates). A reference that does not
//! hold gets a [`Breach`]: what is wrong, worded for the write path, and the repair
//! `freshness --fix` may offer. Must not read files: callers hand in what they read.

use serde::Serialize;

use crate::policy::text::is_blank;
use crate::state::model::CodeRef;

use super::CitedFile;
use super::Span;
use super::line_list;
use super::ref_lines;
use super::scan::LineDigest;
use super::span_list;

/// What is wrong with a reference now.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RefFindingKind {
    /// The file is gone (or the path now leads outside the repository, or names a directory),
    /// and git saw no rename.
    Missing,
    /// git followed the file to another path (`renamed_to`).
    Renamed,
    /// The symbol no longer occurs in the file (where the language is parsed: no definition of
    /// it is left).
    SymbolMissing,
    /// The symbol occurs, but not in the cited lines (`symbol_lines` says where).
    MovedLines,
    /// The cited lines run past the end of the file.
    LinesPastEnd,
    /// The file is still to be written (the reference was recorded as a plan).
    Planned,
}

impl RefFindingKind {
    /// The snake_case name, as in JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            RefFindingKind::Missing => "missing",
            RefFindingKind::Renamed => "renamed",
            RefFindingKind::SymbolMissing => "symbol_missing",
            RefFindingKind::MovedLines => "moved_lines",
            RefFindingKind::LinesPastEnd => "lines_past_end",
            RefFindingKind::Planned => "planned",
        }
    }
}

/// The text a reference that holds cites.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Cited {
    /// These lines, first and last (1-based, inclusive).
    Lines(Span),
    /// The whole file.
    File,
}

/// Why a reference does not hold.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Breach {
    /// What is wrong.
    pub kind: RefFindingKind,
    /// How the write path words it.
    pub problem: String,
    /// Where the symbol is now, for `moved_lines`: the first lines of its definitions where the
    /// language is parsed, else the lines it occurs on.
    pub symbol_lines: Vec<u32>,
    /// The reference moved to where its symbol is now, or its lines cut at the end of the file,
    /// when that can be done mechanically. It keeps the fingerprint: a repair never certifies.
    pub repair: Option<CodeRef>,
}

impl Breach {
    fn new(kind: RefFindingKind, problem: String) -> Breach {
        Breach {
            kind,
            problem,
            symbol_lines: Vec::new(),
            repair: None,
        }
    }
}

/// Judges `code_ref` against `file` as the work tree has it. `earlier` is the file as it was
/// when the reference was last written, when known: a reference that cited a part of a
/// definition that moved is repaired to the same part of it.
///
/// With a symbol in a parsed language the reference means a definition of it: its lines hold
/// when they are all of a definition of the symbol, its first line alone, a part of it starting
/// after its first line, or a window around it starting before it; the text cited is then those
/// lines together with that definition's (the innermost, when definitions nest). A symbol without lines cites its longest definition. In
/// other languages the symbol must occur in the lines, which are the text cited; without lines
/// the whole file is. Without a symbol the reference cites its lines, or its whole file.
pub fn judge(
    code_ref: &CodeRef,
    file: &CitedFile,
    earlier: Option<&CitedFile>,
) -> Result<Cited, Box<Breach>> {
    let line_count = match file {
        CitedFile::Missing => {
            return Err(Box::new(Breach::new(
                RefFindingKind::Missing,
                "no such file in the work tree".to_owned(),
            )));
        }
        CitedFile::Elsewhere => {
            return Err(Box::new(Breach::new(
                RefFindingKind::Missing,
                "leads outside the repository (a symbolic link) or to something that is not a file; cite the file itself".to_owned(),
            )));
        }
        CitedFile::Directory => {
            return Err(Box::new(Breach::new(
                RefFindingKind::Missing,
                "is a directory; a code ref names a file".to_owned(),
            )));
        }
        CitedFile::File { line_count, .. } => *line_count,
    };
    let lines = ref_lines(code_ref);
    let Some(symbol) = code_ref.symbol.as_deref().filter(|s| !is_blank(s)) else {
        return match lines {
            None => Ok(Cited::File),
            Some(range) => {
                past_end(range, line_count).map_or(Ok(Cited::Lines(range)), |b| Err(Box::new(b)))
            }
        };
    };
    let occurs = file.lines_of(symbol);
    let Some(spans) = file.definitions_of(symbol) else {
        return judge_occurrence(code_ref, symbol, occurs, line_count);
    };
    if spans.is_empty() {
        return Err(Box::new(symbol_missing(symbol, occurs)));
    }
    let Some(range) = lines else {
        return Ok(Cited::Lines(longest(&spans)));
    };
    if let Some(definition) = held_definition(range, &spans) {
        return match cut_at_end(code_ref, range, line_count) {
            Some(breach) => Err(Box::new(breach)),
            None => Ok(Cited::Lines(union(range, definition))),
        };
    }
    Err(Box::new(Breach {
        symbol_lines: spans.iter().map(|&(first, _)| first).collect(),
        repair: Some(relocate(code_ref, range, &spans, file, earlier)),
        ..Breach::new(
            RefFindingKind::MovedLines,
            format!(
                "lines {}-{} are not the definition of `{symbol}`, a part of it or a window around it (it is at {}; cite the symbol without lines to take its span)",
                range.0,
                range.1,
                span_list(&spans)
            ),
        )
    }))
}

/// The text `code_ref` cites in `file`, when it holds there: [`judge`]'s verdict, for callers
/// that need no reason.
pub fn cited_text(code_ref: &CodeRef, file: &CitedFile) -> Option<Cited> {
    judge(code_ref, file, None).ok()
}

/// The fingerprint of what `code_ref` cites in `file` now (see [`fingerprint`]); `None` when it
/// does not hold there or `file` is not a file.
pub fn fingerprint_in(code_ref: &CodeRef, file: &CitedFile) -> Option<String> {
    file.fingerprint(cited_text(code_ref, file)?)
}

/// The fingerprint of what `code_ref` cites in `file` now, wherever its definition went: where
/// it holds, of its cited text; where its lines moved off its definition, of the text the repair
/// would cite (a definition that only moved keeps its fingerprint). `None` when there is nothing
/// left to cite: the file or the symbol is gone. `earlier` as for [`judge`].
pub fn fingerprint_now(
    code_ref: &CodeRef,
    file: &CitedFile,
    earlier: Option<&CitedFile>,
) -> Option<String> {
    match judge(code_ref, file, earlier) {
        Ok(cited) => file.fingerprint(cited),
        Err(breach) => match *breach {
            Breach {
                kind: RefFindingKind::MovedLines,
                repair: Some(repair),
                ..
            } => fingerprint_in(&repair, file),
            _ => None,
        },
    }
}

/// The fingerprint of a cited text: the first 16 hex digits of a SHA-256 over its lines, each
/// without its leading and trailing white space, blank lines left out, joined by `\n`. A
/// definition that only moved (or was indented anew) keeps its fingerprint; any other edit of
/// the cited text changes it.
pub fn fingerprint(text: &[u8], cited: Cited) -> String {
    let (skip, take) = match cited {
        Cited::File => (0, usize::MAX),
        Cited::Lines((first, last)) => {
            let first = usize::try_from(first).unwrap_or(usize::MAX).max(1);
            let last = usize::try_from(last).unwrap_or(usize::MAX);
            (first - 1, (last + 1).saturating_sub(first))
        }
    };
    let mut digest = LineDigest::default();
    for line in text.split(|byte| *byte == b'\n').skip(skip).take(take) {
        digest.take(line, true);
    }
    digest.finish()
}

/// Whether `value` is spelled as a fingerprint: 16 lowercase hex digits.
pub fn is_fingerprint(value: &str) -> bool {
    value.len() == 16
        && value
            .bytes()
            .all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// [`judge`] where the language is not parsed: the symbol must occur in the lines, which are the
/// text cited; without lines the whole file is.
fn judge_occurrence(
    code_ref: &CodeRef,
    symbol: &str,
    occurs: &[u32],
    line_count: u32,
) -> Result<Cited, Box<Breach>> {
    if occurs.is_empty() {
        return Err(Box::new(symbol_missing(symbol, occurs)));
    }
    let Some(range) = ref_lines(code_ref) else {
        return Ok(Cited::File);
    };
    if let Some(breach) = cut_at_end(code_ref, range, line_count) {
        return Err(Box::new(breach));
    }
    if occurs.iter().any(|line| (range.0..=range.1).contains(line)) {
        return Ok(Cited::Lines(range));
    }
    Err(Box::new(Breach {
        symbol_lines: occurs.to_vec(),
        repair: Some(follow_occurrence(code_ref, range, occurs, line_count)),
        ..Breach::new(
            RefFindingKind::MovedLines,
            format!(
                "symbol `{symbol}` does not occur in lines {}-{} (it does at {})",
                range.0,
                range.1,
                line_list(occurs)
            ),
        )
    }))
}

/// `lines_past_end`, when `range` runs past the end of a file of `line_count` lines.
fn past_end((start, end): Span, line_count: u32) -> Option<Breach> {
    let last = start.max(end);
    (last > line_count).then(|| {
        Breach::new(
            RefFindingKind::LinesPastEnd,
            format!("line {last} is past the end of the file ({line_count} lines)"),
        )
    })
}

/// [`past_end`] for a reference whose symbol is still where its lines are: cutting its range at
/// the end of the file is safe.
fn cut_at_end(code_ref: &CodeRef, range: Span, line_count: u32) -> Option<Breach> {
    let mut breach = past_end(range, line_count)?;
    breach.repair = Some(CodeRef {
        end_line: code_ref.end_line.map(|_| line_count),
        ..code_ref.clone()
    });
    Some(breach)
}

fn symbol_missing(symbol: &str, occurs: &[u32]) -> Breach {
    let problem = if occurs.is_empty() {
        format!("symbol `{symbol}` does not occur in the file")
    } else {
        format!(
            "symbol `{symbol}` has no definition in the file (a mention is not one; it occurs at {})",
            line_list(occurs)
        )
    };
    Breach::new(RefFindingKind::SymbolMissing, problem)
}

/// The definition `range` cites: the innermost of those it is all of, the first line of, or a
/// part of starting after its first line; else the largest of those it is a window around,
/// starting before it. A range that starts where a definition starts but ends elsewhere cited
/// all of it before it grew or shrank, and holds to none.
fn held_definition((start, end): Span, spans: &[Span]) -> Option<Span> {
    let inside = (spans.iter().copied())
        .filter(|&(first, last)| {
            (start, end) == (first, last)
                || (start, end) == (first, first)
                || (first < start && end <= last)
        })
        .min_by_key(|&(first, last)| (last - first, std::cmp::Reverse(first)));
    inside.or_else(|| {
        (spans.iter().copied())
            .filter(|&(first, last)| start < first && last <= end)
            .max_by_key(|&(first, last)| (last - first, std::cmp::Reverse(first)))
    })
}

/// The longest definition, the first of equals: what a symbol cited without lines means (a
/// body over a declaration).
fn longest(spans: &[Span]) -> Span {
    (spans.iter().copied())
        .max_by_key(|&(first, last)| (last - first, std::cmp::Reverse(first)))
        .unwrap_or((1, 1))
}

fn union((start, end): Span, (first, last): Span) -> Span {
    (start.min(first), end.max(last))
}

/// `code_ref`, whose `range` no longer holds, moved onto its symbol's definition: the one whose
/// text is still the fingerprinted one (it only moved), else the nearest. A range that was the
/// whole of a definition takes the new one's span; one that was a part of it (or a window
/// around it) in `earlier` stays the same part (or window) of it.
fn relocate(
    code_ref: &CodeRef,
    range: Span,
    spans: &[Span],
    file: &CitedFile,
    earlier: Option<&CitedFile>,
) -> CodeRef {
    let symbol = code_ref.symbol.as_deref().unwrap_or_default();
    let before = earlier
        .and_then(|earlier| earlier.definitions_of(symbol))
        .and_then(|spans| held_definition(range, &spans));
    let moved = |to: Span| {
        let (start, end) = match before {
            Some(was) if was != range => shift(range, was, to, file),
            _ => to,
        };
        CodeRef {
            start_line: Some(start),
            end_line: Some(end),
            ..code_ref.clone()
        }
    };
    let unchanged = code_ref.fingerprint.as_deref().and_then(|stored| {
        (spans.iter().copied())
            .map(moved)
            .find(|candidate| fingerprint_in(candidate, file).as_deref() == Some(stored))
    });
    unchanged.unwrap_or_else(|| {
        let nearest = (spans.iter().copied())
            .min_by_key(|&(first, _)| first.abs_diff(range.0))
            .unwrap_or(range);
        moved(nearest)
    })
}

/// `range`, which lay inside or around the definition `was`, moved with it to `to`: the same
/// lines of it, cut to the definition's new end (a part) or the file's (a window).
fn shift(range: Span, was: Span, to: Span, file: &CitedFile) -> Span {
    let line_count = match file {
        CitedFile::File { line_count, .. } => *line_count,
        _ => to.1,
    };
    let start = i64::from(range.0) + i64::from(to.0) - i64::from(was.0);
    let end = i64::from(range.1) + i64::from(to.1) - i64::from(was.1);
    let inside = was.0 <= range.0 && range.1 <= was.1;
    let (low, high) = if inside {
        (to.0, to.1)
    } else {
        (1, line_count.max(to.1))
    };
    let clamp =
        |line: i64| u32::try_from(line.clamp(i64::from(low), i64::from(high))).unwrap_or(low);
    let start = clamp(start);
    let end = if inside {
        // A part keeps its length, inside the definition.
        clamp(i64::from(start) + i64::from(range.1.saturating_sub(range.0)))
    } else {
        clamp(end)
    };
    (start, end.max(start))
}

/// `code_ref` moved onto the occurrence of its symbol nearest to where its range was, keeping
/// the range's length inside the file: a language that is not parsed.
fn follow_occurrence(code_ref: &CodeRef, range: Span, occurs: &[u32], line_count: u32) -> CodeRef {
    let nearest = (occurs.iter().copied())
        .min_by_key(|line| line.abs_diff(range.0))
        .unwrap_or(range.0);
    // A stored range may be inverted (a record written by hand): it keeps no length.
    let end = nearest
        .saturating_add(range.1.saturating_sub(range.0))
        .min(line_count)
        .max(nearest);
    CodeRef {
        start_line: Some(nearest),
        end_line: code_ref.end_line.map(|_| end),
        ..code_ref.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A committed record may carry a range whose end comes before its start: following its
    /// symbol moves it without overflowing.
    #[test]
    fn an_inverted_range_follows_its_symbol() {
        let code_ref = CodeRef {
            start_line: Some(9),
            end_line: Some(3),
            symbol: Some("x".to_owned()),
            ..CodeRef::to_path("a.txt")
        };
        let moved = follow_occurrence(&code_ref, (9, 3), &[20], 30);
        assert_eq!((moved.start_line, moved.end_line), (Some(20), Some(20)));
    }
}
