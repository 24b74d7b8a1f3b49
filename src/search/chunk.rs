//! Chunking: cutting a file into overlapping, line-anchored windows (docs/retrieval.md#chunking).
//!
//! A chunk is the unit the index scores; a file's score is its best chunk's. Lines are split
//! on `\n` with a trailing `\r` dropped, and a final newline does not make an empty last line.
//! Windows start every `lines - overlap` lines and the last one ends at the last line. Line
//! numbers are 1-based and inclusive. Pure functions over strings: no I/O here.

use std::ops::Range;

/// Window size and overlap, in lines.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChunkShape {
    /// Lines per window.
    pub lines: usize,
    /// Lines shared by consecutive windows.
    pub overlap: usize,
}

impl ChunkShape {
    /// The original design's windows (docs/retrieval.md#chunking): 24 lines, 8 overlapping.
    pub const BASELINE: ChunkShape = ChunkShape {
        lines: 24,
        overlap: 8,
    };

    fn step(self) -> usize {
        self.lines.saturating_sub(self.overlap).max(1)
    }
}

/// One window of a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Chunk<'a> {
    /// First line of the window (1-based).
    pub start_line: u32,
    /// Last line of the window (inclusive).
    pub end_line: u32,
    /// The window's text, trimmed.
    pub text: &'a str,
}

/// The byte range of every line of `text`, without its `\n` and trailing `\r`, in order.
pub fn line_ranges(text: &str) -> impl Iterator<Item = Range<usize>> + '_ {
    let mut start = 0;
    // One pass of memchr over the whole text: a search per line costs more than the search
    // itself on short lines (5 % of the CPU time of a scan of cargo).
    let mut ends = memchr::memchr_iter(b'\n', text.as_bytes());
    std::iter::from_fn(move || {
        if start >= text.len() {
            return None;
        }
        let end = ends.next().unwrap_or(text.len());
        let line = start..trim_cr(text, start, end);
        start = end + 1;
        Some(line)
    })
}

fn trim_cr(text: &str, start: usize, end: usize) -> usize {
    if end > start && text.as_bytes()[end - 1] == b'\r' {
        end - 1
    } else {
        end
    }
}

/// The windows of `text`; windows that are blank after trimming are left out.
pub fn chunks(text: &str, shape: ChunkShape) -> Vec<Chunk<'_>> {
    let lines: Vec<Range<usize>> = line_ranges(text).collect();
    let total = lines.len();
    let mut chunks = Vec::new();
    let mut start = 0;
    while start < total {
        let end = (start + shape.lines).min(total);
        let body = text[lines[start].start..lines[end - 1].end].trim();
        if !body.is_empty() {
            chunks.push(Chunk {
                start_line: line_number(start),
                end_line: line_number(end - 1),
                text: body,
            });
        }
        if end == total {
            break;
        }
        start += shape.step();
    }
    chunks
}

/// The 1-based number of the line at 0-based `index`.
pub fn line_number(index: usize) -> u32 {
    u32::try_from(index + 1).unwrap_or(u32::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn numbered(count: usize) -> String {
        (1..=count).map(|n| format!("line {n}\n")).collect()
    }

    fn ranges(text: &str, shape: ChunkShape) -> Vec<(u32, u32)> {
        chunks(text, shape)
            .iter()
            .map(|chunk| (chunk.start_line, chunk.end_line))
            .collect()
    }

    #[test]
    fn baseline_windows_match_the_spec_examples() {
        let shape = ChunkShape::BASELINE;
        assert_eq!(ranges(&numbered(24), shape), [(1, 24)]);
        assert_eq!(ranges(&numbered(25), shape), [(1, 24), (17, 25)]);
        assert_eq!(ranges(&numbered(40), shape), [(1, 24), (17, 40)]);
        assert_eq!(ranges(&numbered(41), shape), [(1, 24), (17, 40), (33, 41)]);
    }

    #[test]
    fn empty_and_blank_text_make_no_chunks() {
        assert!(chunks("", ChunkShape::BASELINE).is_empty());
        assert!(chunks("\n  \n\t\n", ChunkShape::BASELINE).is_empty());
    }

    #[test]
    fn chunk_text_is_trimmed_and_carriage_returns_dropped() {
        let text = "\r\nfirst\r\nsecond\r\n";
        let chunks = chunks(text, ChunkShape::BASELINE);
        assert_eq!(chunks.len(), 1);
        assert_eq!((chunks[0].start_line, chunks[0].end_line), (1, 3));
        assert_eq!(chunks[0].text, "first\r\nsecond");
        let lines: Vec<_> = line_ranges("a\r\nb\n\nc\n").collect();
        assert_eq!(lines, [0..1, 3..4, 5..5, 6..7]);
    }

    #[test]
    fn a_final_line_without_newline_counts() {
        assert_eq!(ranges("a\nb", ChunkShape::BASELINE), [(1, 2)]);
    }
}
