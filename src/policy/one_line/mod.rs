//! One-line writes (docs/writes.md#one-line-writes): the records `note`, `node`, `edge`,
//! `checkpoint`, `subgoal`, `backlog` and `recheck` build from a few command-line values, with
//! defaults for everything else and deterministic ids.
//!
//! Each function takes the values as typed and, where a write depends on what is stored (the
//! record it edits or removes, an id it finds free), the state; it returns the patch to write
//! (an [`Edit`]), or the problems with the input, each at the flag or argument it concerns.
//! The write path calls them with the head it read under the store lock, so what an edit
//! depends on is what it is applied to, and no revision needs to be pinned. The write itself
//! is the one write path's: nothing here checks what validation checks (unique ids, references
//! that resolve, code refs that hold).
//!
//! [`map`] builds graph nodes and edges and finds which graph an id lives in; [`work`] the
//! investigation checkpoint, subgoals, backlog items and superseding observations.

pub mod map;
pub mod work;

use crate::policy::code_ref::code_ref_key;
use crate::policy::distill::SUMMARY_LIMIT;
use crate::policy::secrets::redacted;
use crate::policy::text::collapse;
use crate::policy::text::hex12;
use crate::policy::text::truncate;
use crate::state::fields::Collection;
use crate::state::model::CodeRef;
use crate::state::model::EvidenceRecord;
use crate::state::model::Observation;
use crate::state::patch::Patch;
use crate::state::problem::Problem;

/// The longest note text kept whole, in Unicode scalars (the observation's summary is derived
/// from it; the evidence record keeps all of it).
pub const NOTE_TEXT_LIMIT: usize = 8000;

/// The shortest first sentence a summary is cut after (a shorter one says too little).
const MIN_SENTENCE: usize = 16;

/// What a note is: its observation's `source_kind`.
pub const NOTE_KINDS: [&str; 4] = ["finding", "question", "decision", "result"];

/// What a one-line write makes of the state it is applied to.
#[derive(Debug, Clone, PartialEq)]
pub enum Edit {
    /// A patch to write, with what it writes and removes, for the report.
    Write {
        /// The patch.
        patch: Box<Patch>,
        /// The records it adds or changes (`subgoals/sg-x`, a checkpoint's id, ...).
        written: Vec<String>,
        /// What it takes away: records as `collection/key`, and the ids it takes off a list
        /// as `field.list/id` (`graph_frontier.active_edge_ids/e1`).
        removed: Vec<String>,
    },
    /// The state already says this: nothing is written.
    Unchanged {
        /// What to do instead.
        hint: String,
    },
}

impl Edit {
    /// A patch of record upserts (and fields set beside them), naming the records it upserts.
    pub fn upserts(patch: Patch) -> Edit {
        Edit::Write {
            written: record_names(patch.upsert.keys()),
            patch: Box::new(patch),
            removed: Vec::new(),
        }
    }
}

/// Records named as `collection/key`.
pub fn record_names(keys: Vec<(Collection, String)>) -> Vec<String> {
    (keys.into_iter())
        .map(|(collection, key)| format!("{}/{key}", collection.as_str()))
        .collect()
}

/// A note as typed.
#[derive(Debug, Clone)]
pub struct Note<'a> {
    /// The text, kept whole.
    pub text: &'a str,
    /// The code it concerns.
    pub refs: Vec<CodeRef>,
    /// One of [`NOTE_KINDS`].
    pub kind: &'a str,
    /// The status; `open` for a question and `ok` otherwise when absent.
    pub status: Option<&'a str>,
}

/// The observation and the evidence record a note writes, and their ids.
pub fn note_patch(note: Note<'_>) -> Result<(Patch, Vec<String>), Vec<Problem>> {
    let Note {
        text,
        refs,
        kind,
        status,
    } = note;
    let text = text.trim();
    let mut problems = Vec::new();
    if text.is_empty() {
        problems.push(Problem::new("TEXT", "must not be empty"));
    }
    let length = text.chars().count();
    if length > NOTE_TEXT_LIMIT {
        problems.push(Problem::new(
            "TEXT",
            format!(
                "is {length} characters; a note keeps at most {NOTE_TEXT_LIMIT} (keep the rest in a file and cite it with `--ref`)"
            ),
        ));
    }
    if !NOTE_KINDS.contains(&kind) {
        problems.push(Problem::new(
            "--kind",
            format!("must be one of {}", NOTE_KINDS.join(", ")),
        ));
    }
    let status = match status.map(collapse) {
        Some(status) if status.is_empty() => {
            problems.push(Problem::new("--status", "must not be empty"));
            status
        }
        Some(status) => status,
        None if kind == "question" => "open".to_owned(),
        None => "ok".to_owned(),
    };
    if !problems.is_empty() {
        return Err(problems);
    }
    let fingerprint = note_fingerprint(kind, &status, text, &refs);
    let evidence_id = format!("ev-{fingerprint}");
    let observation = Observation {
        id: format!("obs-{fingerprint}"),
        summary: summarize(text),
        source_kind: kind.to_owned(),
        status: status.clone(),
        code_refs: refs.clone(),
        evidence_ids: vec![evidence_id.clone()],
        supersedes: None,
    };
    let evidence = EvidenceRecord {
        id: evidence_id,
        kind: "note".to_owned(),
        status,
        summary: text.to_owned(),
        code_refs: refs,
    };
    let ids = vec![observation.id.clone(), evidence.id.clone()];
    let patch = Patch {
        observations: vec![observation],
        evidence: vec![evidence],
        ..Patch::default()
    };
    Ok((patch, ids))
}

/// The note's fingerprint: its kind, status, text and the keys of its references, so the same
/// text about two places gets two ids, and the order the refs were typed in does not matter.
fn note_fingerprint(kind: &str, status: &str, text: &str, refs: &[CodeRef]) -> String {
    let mut keys: Vec<String> = refs.iter().map(code_ref_key).collect();
    keys.sort();
    keys.dedup();
    let mut parts = vec!["note", kind, status, text];
    parts.extend(keys.iter().map(String::as_str));
    hex12(parts.join("\0").as_bytes())
}

/// The summary of a text: its first non-blank line, whitespace collapsed; when that is longer
/// than the summary limit, cut after its last sentence that fits (of at least 16 characters),
/// or at the limit.
pub fn summarize(text: &str) -> String {
    let first = text
        .lines()
        .map(collapse)
        .find(|line| !line.is_empty())
        .unwrap_or_default();
    if first.chars().count() <= SUMMARY_LIMIT {
        return first;
    }
    let window: String = first.chars().take(SUMMARY_LIMIT).collect();
    let sentence_end = window
        .match_indices(['.', '?', '!'])
        .map(|(at, _)| at + 1)
        .rfind(|end| window[*end..].starts_with(' '));
    match sentence_end {
        Some(end) if end >= MIN_SENTENCE => window[..end].to_owned(),
        _ => truncate(&first, SUMMARY_LIMIT),
    }
}

/// A readable id made from `text`: lowercase ASCII words joined by `-`, at most 40 characters,
/// after `prefix`; `-2`, `-3`, ... is added until `taken` says it is free. The words are those
/// of `text` with its secrets redacted: the write path redacts the id as it stands, and a
/// secret cut into slug words (`password-hunter2hunter2`) is no longer one any rule knows.
pub fn slug_id(prefix: &str, text: &str, taken: &dyn Fn(&str) -> bool) -> String {
    let text = &*redacted(text);
    let mut words = Vec::new();
    let mut length = 0;
    for word in text
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|word| !word.is_empty())
    {
        if length + word.len() > 40 && !words.is_empty() {
            break;
        }
        length += word.len() + 1;
        words.push(word.to_ascii_lowercase());
    }
    let stem = match words.is_empty() {
        true => format!("{prefix}{}", hex12(text.as_bytes())),
        false => format!("{prefix}{}", words.join("-")),
    };
    let mut id = stem.clone();
    let mut n = 2;
    while taken(&id) {
        id = format!("{stem}-{n}");
        n += 1;
    }
    id
}

/// A value given on the command line that must not be blank, collapsed; `None` when absent.
pub fn given(flag: &str, value: Option<&str>, problems: &mut Vec<Problem>) -> Option<String> {
    let value = collapse(value?);
    if value.is_empty() {
        problems.push(Problem::new(flag, "must not be empty"));
        return None;
    }
    Some(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn note(text: &str, refs: &[&str], kind: &str) -> Result<(Patch, Vec<String>), Vec<Problem>> {
        note_patch(Note {
            text,
            refs: refs.iter().map(|path| CodeRef::to_path(*path)).collect(),
            kind,
            status: None,
        })
    }

    #[test]
    fn a_note_keeps_its_whole_text_and_derives_its_summary() {
        let text = format!("Retry drops the span.\n\nDetails: {}", "x ".repeat(600));
        let (patch, ids) = note(&text, &["src/lexer.rs"], "finding").expect("note");
        let observation = &patch.observations[0];
        assert_eq!(observation.summary, "Retry drops the span.");
        assert_eq!(observation.source_kind, "finding");
        assert_eq!(observation.status, "ok");
        assert_eq!(patch.evidence[0].summary, text.trim());
        assert_eq!(patch.evidence[0].kind, "note");
        assert_eq!(ids, [observation.id.clone(), patch.evidence[0].id.clone()]);
        assert_eq!(observation.evidence_ids, [patch.evidence[0].id.clone()]);
        let (question, _) = note("why?", &[], "question").expect("question");
        assert_eq!(question.observations[0].status, "open");
    }

    #[test]
    fn note_ids_depend_on_the_text_and_the_refs_not_their_order() {
        let id =
            |text: &str, refs: &[&str]| note(text, refs, "finding").expect("note").1[0].clone();
        assert_eq!(id("same", &["a.rs", "b.rs"]), id("same", &["b.rs", "a.rs"]));
        assert_ne!(id("same", &["a.rs"]), id("same", &["b.rs"]));
        assert_ne!(id("same", &["a.rs"]), id("other", &["a.rs"]));
    }

    #[test]
    fn bad_notes_name_every_problem() {
        let long = "y".repeat(NOTE_TEXT_LIMIT + 1);
        let problems = note(&long, &[], "musing").expect_err("refused");
        let texts: Vec<String> = problems.iter().map(ToString::to_string).collect();
        assert_eq!(
            texts,
            [
                format!(
                    "TEXT: is {} characters; a note keeps at most {NOTE_TEXT_LIMIT} (keep the rest in a file and cite it with `--ref`)",
                    NOTE_TEXT_LIMIT + 1
                ),
                "--kind: must be one of finding, question, decision, result".to_owned(),
            ]
        );
        assert_eq!(
            note("  \n ", &[], "finding").expect_err("blank")[0].to_string(),
            "TEXT: must not be empty"
        );
    }

    #[test]
    fn long_first_lines_are_cut_at_a_sentence_or_the_limit() {
        let sentence = "The lexer forgets the span on retry. ";
        let text = sentence.repeat(20);
        let summary = summarize(&text);
        assert!(summary.ends_with("retry."), "{summary}");
        assert!(summary.chars().count() <= SUMMARY_LIMIT);
        let word = "w".repeat(SUMMARY_LIMIT * 2);
        assert_eq!(summarize(&word).chars().count(), SUMMARY_LIMIT);
        assert!(summarize(&word).ends_with("..."));
    }

    #[test]
    fn slug_ids_are_readable_and_free() {
        let taken = |id: &str| id == "sg-keep-spans-on-retry";
        assert_eq!(
            slug_id("sg-", "Keep spans on retry!", &taken),
            "sg-keep-spans-on-retry-2"
        );
        assert_eq!(slug_id("bl-", "Ship it", &|_| false), "bl-ship-it");
        assert!(slug_id("sg-", "???", &|_| false).starts_with("sg-"));
        // Issue 48: the words of a secret never make an id.
        for (title, id) in [
            (
                "rotate db password=hunter2hunter2 for",
                "sg-rotate-db-password-redacted-secret",
            ),
            (
                r#"fix {\"password\":\"hunter2hunter2\"}"#,
                "sg-fix-password-redacted-secret-assignment",
            ),
            (
                "AKIAIOSFODNN7EXAMPLE leaked",
                "sg-redacted-aws-access-key-leaked",
            ),
        ] {
            assert_eq!(slug_id("sg-", title, &|_| false), id, "{title}");
        }
    }
}
