//! The rules a code reference must keep, on its own ([`shape_problems`]) and against its file
//! ([`located_problems`]), the wording of the lines they cite, and moving a reference onto its
//! symbol ([`follow_symbol`]). Must not read files or decide what a problem costs: callers
//! decide whether it refuses a write or only warns.

use crate::policy::text::is_blank;
use crate::state::model::CodeRef;
use crate::state::problem::Problem;

use super::CitedFile;
use super::Span;
use super::anchor_span;
use super::range_holds;

/// The line range a reference covers: `start..=end`, `start..=start` without an end.
pub fn ref_lines(code_ref: &CodeRef) -> Option<(u32, u32)> {
    let start = code_ref.start_line?;
    Some((start, code_ref.end_line.unwrap_or(start)))
}

/// What is wrong with a reference's lines and symbol on their own, without its file. Each is a
/// problem with the reference as a whole (its message names the field), for the caller to place
/// at wherever the reference sits.
pub fn shape_problems(code_ref: &CodeRef) -> Vec<Problem> {
    let mut problems = Vec::new();
    if code_ref.start_line == Some(0) {
        problems.push(Problem::whole(
            "start_line must be 1 or more (lines count from 1)",
        ));
    }
    if code_ref.end_line == Some(0) {
        problems.push(Problem::whole(
            "end_line must be 1 or more (lines count from 1)",
        ));
    }
    match (code_ref.start_line, code_ref.end_line) {
        (None, Some(_)) => problems.push(Problem::whole("end_line is given without start_line")),
        (Some(start), Some(end)) if start > end => problems.push(Problem::whole(format!(
            "start_line {start} is after end_line {end}"
        ))),
        _ => {}
    }
    if code_ref.symbol.as_deref().is_some_and(is_blank) {
        problems.push(Problem::whole("symbol is empty"));
    }
    problems
}

/// What is wrong with a reference against its file as the work tree has it: the file must
/// exist, the range must lie inside it, and the symbol must occur in it (inside the range when
/// there is one); where the language is parsed, the symbol must have a definition, and a
/// range must be its span or lie inside it ([`range_holds`]), as `freshness` will check. A missing file is one problem; the caller decides whether a plan may cite it.
/// Like [`shape_problems`], each problem is with the reference as a whole.
pub fn located_problems(code_ref: &CodeRef, file: &CitedFile) -> Vec<Problem> {
    let (line_count, symbol) = match file {
        CitedFile::Missing => return vec![Problem::whole("no such file in the work tree")],
        CitedFile::Elsewhere => {
            return vec![Problem::whole(
                "leads outside the repository (a symbolic link) or to something that is not a file; cite the file itself",
            )];
        }
        CitedFile::Directory => {
            return vec![Problem::whole("is a directory; a code ref names a file")];
        }
        CitedFile::File { line_count, .. } => (*line_count, code_ref.symbol.as_deref()),
    };
    let mut problems = Vec::new();
    let range = ref_lines(code_ref);
    if let Some((start, end)) = range {
        let last = start.max(end);
        if last > line_count {
            problems.push(Problem::whole(format!(
                "line {last} is past the end of the file ({line_count} lines)"
            )));
        }
    }
    if let Some(symbol) = symbol.filter(|s| !is_blank(s)) {
        let lines = file.lines_of(symbol);
        if let Some(spans) = file.definitions_of(symbol) {
            match range {
                _ if spans.is_empty() && lines.is_empty() => {
                    problems.push(Problem::whole(format!(
                        "symbol `{symbol}` does not occur in the file"
                    )));
                }
                _ if spans.is_empty() => problems.push(Problem::whole(format!(
                    "symbol `{symbol}` has no definition in the file (a mention is not one; it occurs at {})",
                    line_list(lines)
                ))),
                Some((start, end)) if !range_holds(start, end, &spans) => {
                    problems.push(Problem::whole(format!(
                        "lines {start}-{end} are not the definition of `{symbol}`, a part of it or a window around it (it is at {}; cite the symbol without lines to take its span)",
                        span_list(&spans)
                    )));
                }
                _ => {}
            }
            return problems;
        }
        match range {
            _ if lines.is_empty() => {
                problems.push(Problem::whole(format!(
                    "symbol `{symbol}` does not occur in the file"
                )));
            }
            Some((start, end)) if !lines.iter().any(|l| (start..=end).contains(l)) => {
                problems.push(Problem::whole(format!(
                    "symbol `{symbol}` does not occur in lines {start}-{end} (it does at {})",
                    line_list(lines)
                )));
            }
            _ => {}
        }
    }
    problems
}

/// `lines 5-9`, `lines 5-9, 20-31`.
pub fn span_list(spans: &[Span]) -> String {
    let shown: Vec<String> = spans
        .iter()
        .map(|(first, last)| format!("{first}-{last}"))
        .collect();
    format!("lines {}", shown.join(", "))
}

/// `5`, `5, 9`, or the first few and a count: `5, 9, 12, ... (7 in all)`.
pub fn line_list(lines: &[u32]) -> String {
    const SHOWN: usize = 5;
    let shown: Vec<String> = lines.iter().take(SHOWN).map(u32::to_string).collect();
    let word = if lines.len() == 1 { "line" } else { "lines" };
    if lines.len() > SHOWN {
        format!("{word} {}, ... ({} in all)", shown.join(", "), lines.len())
    } else {
        format!("{word} {}", shown.join(", "))
    }
}

/// The reference moved onto its symbol's definition nearest to where its range was, with the
/// definition's span, where the language is parsed; elsewhere onto the occurrence nearest to
/// where its range was, keeping the range's length inside the file. `None` when it has no
/// range or symbol, or the symbol is not defined (parsed) or does not occur.
pub fn follow_symbol(code_ref: &CodeRef, file: &CitedFile) -> Option<CodeRef> {
    let (start, end) = ref_lines(code_ref)?;
    let CitedFile::File { line_count, .. } = file else {
        return None;
    };
    let symbol = code_ref.symbol.as_deref()?;
    if let Some(spans) = file.definitions_of(symbol) {
        let (first, last) = anchor_span(&spans, Some(start))?;
        return Some(CodeRef {
            start_line: Some(first),
            end_line: Some(last),
            ..code_ref.clone()
        });
    }
    let lines = file.lines_of(symbol);
    let nearest = *lines.iter().min_by_key(|line| line.abs_diff(start))?;
    let span = end - start;
    let new_end = nearest.saturating_add(span).min(*line_count).max(nearest);
    Some(CodeRef {
        start_line: Some(nearest),
        end_line: code_ref.end_line.map(|_| new_end),
        ..code_ref.clone()
    })
}

#[cfg(test)]
mod tests {
    use super::super::fixtures::SOURCE;
    use super::super::fixtures::code_ref;
    use super::super::fixtures::symbols;
    use super::super::scan_text;
    use super::*;

    /// The problems as the write path quotes them.
    fn texts(problems: Vec<Problem>) -> Vec<String> {
        problems.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn shape_and_location_rules() {
        let refs = |start, end, symbol| code_ref("src/x.rs", start, end, symbol);
        let shape_problems = |code_ref: &CodeRef| texts(shape_problems(code_ref));
        let located_problems = |code_ref: &CodeRef, file: &CitedFile| {
            let problems = located_problems(code_ref, file);
            assert!(problems.iter().all(|p| p.path.is_empty()), "{problems:?}");
            texts(problems)
        };
        assert_eq!(
            shape_problems(&refs(Some(50), Some(10), None)),
            vec!["start_line 50 is after end_line 10"]
        );
        assert_eq!(
            shape_problems(&refs(Some(0), None, Some(" "))),
            vec![
                "start_line must be 1 or more (lines count from 1)",
                "symbol is empty"
            ]
        );
        assert_eq!(
            shape_problems(&refs(None, Some(4), None)),
            vec!["end_line is given without start_line"]
        );
        let file = scan_text(SOURCE, &symbols(&["commit", "nowhere"]));
        assert!(located_problems(&refs(Some(2), Some(4), Some("commit")), &file).is_empty());
        assert_eq!(
            located_problems(&refs(Some(5), Some(9), None), &file),
            vec!["line 9 is past the end of the file (6 lines)"]
        );
        assert_eq!(
            located_problems(&refs(Some(4), Some(6), Some("commit")), &file),
            vec!["symbol `commit` does not occur in lines 4-6 (it does at line 3)"]
        );
        assert_eq!(
            located_problems(&refs(Some(3), None, Some("nowhere")), &file),
            vec!["symbol `nowhere` does not occur in the file"]
        );
        assert_eq!(
            located_problems(&refs(None, None, None), &CitedFile::Missing),
            vec!["no such file in the work tree"]
        );
        // A directory is no file, with or without lines.
        for code_ref in [refs(None, None, None), refs(Some(1), None, None)] {
            assert_eq!(
                located_problems(&code_ref, &CitedFile::Directory),
                vec!["is a directory; a code ref names a file"]
            );
        }
        // Even a bare path may not lead elsewhere: the reference would claim a file that is not
        // the repository's.
        assert!(
            located_problems(&refs(None, None, None), &CitedFile::Elsewhere)[0]
                .starts_with("leads outside the repository")
        );
    }

    #[test]
    fn following_a_symbol_keeps_the_span_inside_the_file() {
        let file = scan_text(SOURCE, &symbols(&["commit", "nowhere"]));
        let moved = follow_symbol(&code_ref("x", Some(5), Some(6), Some("commit")), &file);
        assert_eq!(
            moved.map(|r| (r.start_line, r.end_line)),
            Some((Some(3), Some(4)))
        );
        let single = follow_symbol(&code_ref("x", Some(1), None, Some("commit")), &file);
        assert_eq!(
            single.map(|r| (r.start_line, r.end_line)),
            Some((Some(3), None))
        );
        let clamped = follow_symbol(&code_ref("x", Some(1), Some(9), Some("commit")), &file);
        assert_eq!(clamped.map(|r| r.end_line), Some(Some(6)));
        assert!(follow_symbol(&code_ref("x", Some(1), None, Some("nowhere")), &file).is_none());
        assert!(follow_symbol(&code_ref("x", None, None, Some("commit")), &file).is_none());
    }
}
