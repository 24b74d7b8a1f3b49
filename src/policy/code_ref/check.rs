//! The rules a code reference must keep, on its own ([`shape_problems`]) and against its file
//! ([`located_problems`], which asks [`judge`]), and the wording of the lines they cite. Must not
//! read files or decide what a problem costs: callers decide whether it refuses a write or only
//! warns.

use crate::policy::text::is_blank;
use crate::state::model::CodeRef;
use crate::state::problem::Problem;

use super::CitedFile;
use super::Span;
use super::is_fingerprint;
use super::judge;

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
    if let Some(fingerprint) = code_ref
        .fingerprint
        .as_deref()
        .filter(|f| !is_fingerprint(f))
    {
        problems.push(Problem::whole(format!(
            "fingerprint `{fingerprint}` is not 16 lowercase hex digits (leave it out: the write path takes it from the code)"
        )));
    }
    problems
}

/// What is wrong with a reference against its file as the work tree has it: [`judge`]'s
/// breach, the one verdict `freshness` reaches on the same file. A missing file is one problem;
/// the caller decides whether a plan may cite it. Like [`shape_problems`], each problem is with
/// the reference as a whole.
pub fn located_problems(code_ref: &CodeRef, file: &CitedFile) -> Vec<Problem> {
    match judge(code_ref, file, None) {
        Ok(_) => Vec::new(),
        Err(breach) => vec![Problem::whole(breach.problem)],
    }
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
}
