//! Excerpts: the few lines of a matched chunk worth showing.
//!
//! A chunk is long enough to rank well but too long to read in a result list, so a hit
//! reports the window of at most [`EXCERPT_LINES`] lines inside its chunk that holds the most
//! query-term occurrences, starting at its first matching line. `start_line`/`end_line` of
//! the hit are that window's, so the excerpt is always exactly those lines. Pure.

use std::collections::BTreeSet;
use std::collections::HashSet;
use std::ops::Range;

use tantivy::tokenizer::TextAnalyzer;

use crate::search::chunk;
use crate::search::tokenize;

/// The longest excerpt, in lines (the original design's chunk size).
pub const EXCERPT_LINES: usize = 24;

/// The lines of a hit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Excerpt {
    /// First line (1-based).
    pub start_line: u32,
    /// Last line (inclusive).
    pub end_line: u32,
    /// The lines, joined with `\n`.
    pub text: String,
    /// The distinct query terms found in all the lines it was cut from, sorted.
    pub terms: Vec<String>,
}

/// The best window of `text`'s lines `start_line..=end_line` for `terms` (analyzed terms).
pub fn focus(
    analyzer: &mut TextAnalyzer,
    text: &str,
    start_line: u32,
    end_line: u32,
    terms: &HashSet<&str>,
) -> Option<Excerpt> {
    let first = usize::try_from(start_line).ok()?.checked_sub(1)?;
    let last = usize::try_from(end_line).ok()?.checked_sub(1)?;
    // Only the chunk's lines are split out: a hit in a long file costs its chunk, not the file.
    let lines: Vec<Range<usize>> = chunk::line_ranges(text)
        .skip(first)
        .take(last.checked_sub(first)? + 1)
        .collect();
    if lines.is_empty() {
        return None;
    }
    let mut found = BTreeSet::new();
    let hits: Vec<usize> = lines
        .iter()
        .map(|range| {
            let tokens = tokenize::tokens(analyzer, &text[range.clone()]);
            let matched: Vec<String> = (tokens.into_iter())
                .filter(|token| terms.contains(token.as_str()))
                .collect();
            let count = matched.len();
            found.extend(matched);
            count
        })
        .collect();
    let width = EXCERPT_LINES.min(hits.len());
    let mut best = (0, 0);
    let mut sum: usize = hits[..width].iter().sum();
    best.1 = sum;
    for start in 1..=hits.len() - width {
        sum = sum + hits[start + width - 1] - hits[start - 1];
        if sum > best.1 {
            best = (start, sum);
        }
    }
    let window = best.0..best.0 + width;
    let is_blank = |offset: usize| text[lines[offset].clone()].trim().is_empty();
    let from = window
        .clone()
        .find(|&offset| hits[offset] > 0)
        .or_else(|| window.clone().find(|&offset| !is_blank(offset)))?;
    let mut to = (from + width - 1).min(hits.len() - 1);
    while to > from && is_blank(to) {
        to -= 1;
    }
    let text = lines[from..=to]
        .iter()
        .map(|range| &text[range.clone()])
        .collect::<Vec<_>>()
        .join("\n");
    Some(Excerpt {
        start_line: chunk::line_number(first + from),
        end_line: chunk::line_number(first + to),
        text,
        terms: found.into_iter().collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn excerpt(text: &str, start: u32, end: u32, terms: &[&str]) -> Option<Excerpt> {
        let terms: HashSet<&str> = terms.iter().copied().collect();
        focus(&mut tokenize::analyzer(), text, start, end, &terms)
    }

    #[test]
    fn picks_the_densest_window_from_its_first_match() {
        let mut text: String = (1..=60).map(|n| format!("filler {n}\n")).collect();
        text.push_str("fn validate_patch() {\n    check(patch);\n}\n");
        let found = excerpt(&text, 1, 63, &["valid", "patch"]).expect("excerpt");
        assert_eq!((found.start_line, found.end_line), (61, 63));
        assert!(
            found.text.starts_with("fn validate_patch"),
            "{}",
            found.text
        );
        assert_eq!(found.terms, ["patch", "valid"]);
    }

    #[test]
    fn without_matches_it_shows_the_first_non_blank_lines() {
        let text: String = std::iter::once("\n".to_owned())
            .chain((2..=40).map(|n| format!("line {n}\n")))
            .collect();
        let found = excerpt(&text, 1, 40, &["nothing"]).expect("excerpt");
        assert_eq!((found.start_line, found.end_line), (2, 25));
    }

    #[test]
    fn out_of_range_lines_give_nothing() {
        assert_eq!(excerpt("a\n", 5, 9, &["a"]), None);
        assert_eq!(excerpt("", 1, 1, &["a"]), None);
    }
}
