//! The rollout: an append-only JSONL log, one record per accepted write, SHA-256 chained.
//!
//! Owns the record shape, its canonical hash, and parsing a rollout file into records with
//! line-numbered problems. It does not open files for writing or take locks (`state::store`).
//!
//! The hash of a record is the SHA-256 of its canonical JSON (the record serialized with
//! `hash` set to the empty string, fields in declaration order); `prev_hash` of the first record
//! is [`GENESIS_HASH`]. Replaying the records in order from the empty state reproduces the
//! snapshot.

use serde::Deserialize;
use serde::Serialize;
use sha2::Digest;
use sha2::Sha256;

use crate::state::model::State;
use crate::state::patch::ChangedField;
use crate::state::patch::Patch;

/// `prev_hash` of the first record.
pub const GENESIS_HASH: &str = "0000000000000000000000000000000000000000000000000000000000000000";

/// Which command wrote a record.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Source {
    /// `init --objective`.
    Init,
    /// `update`.
    Update,
    /// `promote`.
    Promote,
    /// `rollback`.
    Rollback,
    /// The git merge driver.
    Merge,
}

impl Source {
    /// The snake_case name, as in JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            Source::Init => "init",
            Source::Update => "update",
            Source::Promote => "promote",
            Source::Rollback => "rollback",
            Source::Merge => "merge",
        }
    }
}

/// A rollback's payload: the whole state of an earlier revision.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Restore {
    /// The revision whose state was restored.
    pub to_revision: u64,
    /// That state, as it was at that revision.
    pub state: State,
}

/// One accepted write.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Record {
    /// 1-based position in the rollout.
    pub seq: u64,
    /// The state revision after this write.
    pub revision: u64,
    /// When it was written (RFC 3339, UTC).
    pub at: String,
    /// Which command wrote it.
    pub source: Source,
    /// The turn that wrote it, when named.
    pub turn_id: Option<String>,
    /// The commit checked out at write time, when in git.
    pub git_head: Option<String>,
    /// The state fields it changed.
    pub changed_fields: Vec<ChangedField>,
    /// The applied patch (`null` for a rollback).
    pub patch: Option<Patch>,
    /// The restored state, for a rollback.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub restore: Option<Restore>,
    /// The hash of the previous record.
    pub prev_hash: String,
    /// SHA-256 of this record's canonical JSON.
    pub hash: String,
}

impl Record {
    /// The SHA-256 over this record's canonical JSON (with `hash` emptied).
    pub fn compute_hash(&self) -> String {
        let canonical = Record {
            hash: String::new(),
            ..self.clone()
        };
        let bytes = serde_json::to_vec(&canonical).unwrap_or_default();
        hex::encode(Sha256::digest(&bytes))
    }

    /// Fills in `hash` and returns the line to append, newline included.
    pub fn seal(mut self) -> (Record, String) {
        self.hash = self.compute_hash();
        let mut line = serde_json::to_string(&self).unwrap_or_default();
        line.push('\n');
        (self, line)
    }

    /// Applies this record to the state before it.
    pub fn replay(&self, state: State) -> State {
        match (&self.restore, &self.patch) {
            (Some(restore), _) => State {
                revision: self.revision,
                ..restore.state.clone()
            },
            (None, Some(patch)) => {
                crate::policy::update::apply_patch(state, patch.clone(), self.turn_id.clone())
            }
            (None, None) => state,
        }
    }
}

/// A problem found while reading a rollout, with its 1-based line number.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct LineProblem {
    /// 1-based line number in `rollout.jsonl`.
    pub line: u64,
    /// What is wrong.
    pub message: String,
}

/// The complete lines of a rollout, parsed, and where the complete part ends.
#[derive(Debug, Default)]
pub struct ParsedRollout {
    /// Records that parsed.
    pub records: Vec<ParsedLine>,
    /// Lines that did not parse.
    pub problems: Vec<LineProblem>,
    /// Bytes up to and including the last newline.
    pub complete_bytes: u64,
    /// A final line without its newline: a write that did not finish.
    pub torn_tail: Option<LineProblem>,
}

/// A record and where it sits in the file.
#[derive(Debug, Clone)]
pub struct ParsedLine {
    /// 1-based line number.
    pub line: u64,
    /// Length of the line, newline included.
    pub bytes: u64,
    /// The record.
    pub record: Record,
}

/// Parses the lines of `bytes`; `first_line` is the line number of its first line.
pub fn parse(bytes: &[u8], first_line: u64) -> ParsedRollout {
    let mut parsed = ParsedRollout::default();
    let complete = bytes
        .iter()
        .rposition(|b| *b == b'\n')
        .map_or(0, |at| at + 1);
    parsed.complete_bytes = complete as u64;
    let mut line_number = first_line;
    for line in bytes[..complete].split_inclusive(|b| *b == b'\n') {
        let bytes = line.len() as u64;
        match serde_json::from_slice::<Record>(&line[..line.len() - 1]) {
            Ok(record) => parsed.records.push(ParsedLine {
                line: line_number,
                bytes,
                record,
            }),
            Err(err) => parsed.problems.push(LineProblem {
                line: line_number,
                message: format!("line {line_number} is not a valid rollout record: {err}"),
            }),
        }
        line_number += 1;
    }
    if complete < bytes.len() {
        parsed.torn_tail = Some(LineProblem {
            line: line_number,
            message: format!(
                "line {line_number} is torn: {} bytes without a final newline (an interrupted write)",
                bytes.len() - complete
            ),
        });
    }
    parsed
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(seq: u64, prev_hash: &str) -> Record {
        Record {
            seq,
            revision: seq,
            at: "2026-01-01T00:00:00Z".into(),
            source: Source::Update,
            turn_id: None,
            git_head: None,
            changed_fields: vec![ChangedField::Objective],
            patch: Some(Patch {
                objective: Some(format!("o{seq}")),
                ..Patch::default()
            }),
            restore: None,
            prev_hash: prev_hash.into(),
            hash: String::new(),
        }
    }

    #[test]
    fn seal_chains_and_hash_verifies() {
        let (first, line) = record(1, GENESIS_HASH).seal();
        assert_eq!(first.hash, first.compute_hash());
        let parsed = parse(line.as_bytes(), 1);
        assert_eq!(parsed.records.len(), 1);
        assert_eq!(parsed.records[0].record, first);
        let mut edited = first.clone();
        edited.patch = Some(Patch {
            objective: Some("tampered".into()),
            ..Patch::default()
        });
        assert_ne!(edited.compute_hash(), first.hash);
    }

    #[test]
    fn torn_tail_and_bad_lines_are_numbered() {
        let (_, one) = record(1, GENESIS_HASH).seal();
        let text = format!("{one}not json\n{{\"seq\":");
        let parsed = parse(text.as_bytes(), 1);
        assert_eq!(parsed.records.len(), 1);
        assert_eq!(parsed.problems.len(), 1);
        assert_eq!(parsed.problems[0].line, 2);
        assert_eq!(parsed.torn_tail.as_ref().map(|t| t.line), Some(3));
        assert_eq!(
            parsed.complete_bytes as usize,
            one.len() + "not json\n".len()
        );
    }

    proptest::proptest! {
        #[test]
        fn arbitrary_lines_never_panic(bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..1024)) {
            let parsed = parse(&bytes, 1);
            proptest::prop_assert!(parsed.complete_bytes as usize <= bytes.len());
        }
    }
}
