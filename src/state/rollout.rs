//! The rollout: segment files under `rollout/`, one immutable record per line, one line per
//! accepted write.
//!
//! Owns the record shape, its content address, and parsing a rollout file into records with
//! line-numbered problems. It does not open files for writing or take locks (`state::store`),
//! and it does not decide the order records fold in (`state::order`).
//!
//! A record's id is the SHA-256 of its own line without the id: the line is written as
//! `{"id":"<64 hex>",` followed by the rest of the record's JSON, and the id hashes `{` plus
//! that rest. The record names the ids of the records it was written on top of (`parents`), so
//! the rollout is a Merkle DAG: a record is never renumbered or re-hashed, branches only ever
//! add whole segment files (so git merges any number of them without a conflict), and a
//! duplicate line is the same record.
//!
//! A line ends in `\n`, and one `\r` before it belongs to the line ending, not to the record:
//! git writes `\r\n` when an attribute of the user's (`* text eol=crlf` in
//! `.git/info/attributes`, say) overrides the store's own `.gitattributes`, and such a line is
//! the same record, at the same id. The writer always ends its lines in `\n`, so one segment may
//! mix both endings. A `\r` anywhere else is damage (JSON never writes one raw), also at the
//! end of a last line that lacks its `\n`.
//!
//! Stores written by the first format (a `seq`/`prev_hash` chain) are read by converting each
//! line into a record whose parent is the previous line's converted record.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde::Serialize;
use sha2::Digest;
use sha2::Sha256;

use crate::parallel;
use crate::state::fields::ChangedField;
use crate::state::model::State;
use crate::state::order::Placed;
use crate::state::patch::Patch;
use crate::state::snapshot::Anchor;

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
}

impl Source {
    /// The snake_case name, as in JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            Source::Init => "init",
            Source::Update => "update",
            Source::Promote => "promote",
            Source::Rollback => "rollback",
        }
    }
}

/// A rollback's payload: which earlier state it restores. A rollback names the records whose
/// fold it restores by their heads, and folding it restores that fold from the records
/// (`state::fold`), so the record stays small however large the state is. Rollbacks written
/// before carried the whole state and its anchors instead, and still fold from those.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Restore {
    /// The revision whose state was restored (its position when the rollback was written).
    pub to_revision: u64,
    /// The id of the record that produced that revision.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub to_record: Option<String>,
    /// The heads of the records that revision folded: the state restored is the fold of them
    /// and every record before them (none: the empty state).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tips: Option<Vec<String>>,
    /// The restored state itself, in rollbacks written before they named records.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<State>,
    /// The anchors of that state's graph nodes and checkpoint, with `state`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub anchors: BTreeMap<String, Anchor>,
}

impl Restore {
    /// The heads of the records whose fold this rollback restores, when it names them rather
    /// than carrying the state.
    pub fn named_tips(&self) -> Option<&[String]> {
        match self.state {
            Some(_) => None,
            None => Some(self.tips.as_deref().unwrap_or_default()),
        }
    }
}

/// One accepted write. Everything but `id` is the record's content; `id` is its hash.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Record {
    /// SHA-256 of the record's line without the id (see the module docs).
    pub id: String,
    /// The identity of the store that wrote it (`state::identity`); none in records written
    /// before stores had one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub store: Option<String>,
    /// The records this one was written on top of: the heads of the store at write time.
    pub parents: Vec<String>,
    /// When it was written (RFC 3339, UTC).
    pub at: String,
    /// Which command wrote it.
    pub source: Source,
    /// The turn that wrote it, when named.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn_id: Option<String>,
    /// The commit checked out at write time, when in git.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub git_head: Option<String>,
    /// The state fields it changes.
    pub changed_fields: Vec<ChangedField>,
    /// The patch, as given (absent for a rollback). Boxed, like `restore`, so that a record
    /// is a few words: a replay moves thousands of them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub patch: Option<Box<Patch>>,
    /// The restored state, for a rollback.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub restore: Option<Box<Restore>>,
}

/// What a record says about itself, without its patch or restored state: what `log` lists.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct RecordHead {
    /// See [`Record::id`].
    pub id: String,
    /// See [`Record::parents`].
    pub parents: Vec<String>,
    /// See [`Record::at`].
    pub at: String,
    /// See [`Record::source`].
    pub source: Source,
    /// See [`Record::turn_id`].
    #[serde(default)]
    pub turn_id: Option<String>,
    /// See [`Record::git_head`].
    #[serde(default)]
    pub git_head: Option<String>,
    /// See [`Record::changed_fields`].
    pub changed_fields: Vec<ChangedField>,
}

impl RecordHead {
    /// Parses one line (without its line ending: [`line_content`]) as far as its head, checking
    /// that its id is the hash of its whole content; the patch is skipped, not decoded.
    pub fn parse_line(line: &[u8]) -> Result<RecordHead, String> {
        parse_sealed(line, |head: &RecordHead| &head.id)
    }
}

impl From<Record> for RecordHead {
    fn from(record: Record) -> RecordHead {
        RecordHead {
            id: record.id,
            parents: record.parents,
            at: record.at,
            source: record.source,
            turn_id: record.turn_id,
            git_head: record.git_head,
            changed_fields: record.changed_fields,
        }
    }
}

/// A record's content before it is sealed with its id.
#[derive(Debug, Clone, Serialize)]
pub struct Body<'a> {
    /// See [`Record::store`].
    #[serde(skip_serializing_if = "Option::is_none")]
    pub store: Option<&'a str>,
    /// See [`Record::parents`].
    pub parents: &'a [String],
    /// See [`Record::at`].
    pub at: &'a str,
    /// See [`Record::source`].
    pub source: Source,
    /// See [`Record::turn_id`].
    #[serde(skip_serializing_if = "Option::is_none")]
    pub turn_id: Option<&'a str>,
    /// See [`Record::git_head`].
    #[serde(skip_serializing_if = "Option::is_none")]
    pub git_head: Option<&'a str>,
    /// See [`Record::changed_fields`].
    pub changed_fields: &'a [ChangedField],
    /// See [`Record::patch`].
    #[serde(skip_serializing_if = "Option::is_none")]
    pub patch: Option<&'a Patch>,
    /// See [`Record::restore`].
    #[serde(skip_serializing_if = "Option::is_none")]
    pub restore: Option<&'a Restore>,
}

/// The fixed start of every line: `{"id":"`.
const ID_PREFIX: &[u8] = b"{\"id\":\"";
/// Where the hex id ends and `",` follows.
const ID_END: usize = ID_PREFIX.len() + 64;

impl Record {
    /// Seals `body` into a record and the line to append (newline included).
    pub fn seal(body: &Body<'_>) -> (Record, String) {
        let json = serde_json::to_string(body).expect("a record body always serializes to JSON");
        let id = hex::encode(Sha256::digest(json.as_bytes()));
        let line = format!("{{\"id\":\"{id}\",{}\n", &json[1..]);
        let record = Record {
            id,
            store: body.store.map(str::to_owned),
            parents: body.parents.to_vec(),
            at: body.at.to_owned(),
            source: body.source,
            turn_id: body.turn_id.map(str::to_owned),
            git_head: body.git_head.map(str::to_owned),
            changed_fields: body.changed_fields.to_vec(),
            patch: body.patch.cloned().map(Box::new),
            restore: body.restore.cloned().map(Box::new),
        };
        (record, line)
    }

    /// This record's content, for sealing it again.
    pub fn body(&self) -> Body<'_> {
        Body {
            store: self.store.as_deref(),
            parents: &self.parents,
            at: &self.at,
            source: self.source,
            turn_id: self.turn_id.as_deref(),
            git_head: self.git_head.as_deref(),
            changed_fields: &self.changed_fields,
            patch: self.patch.as_deref(),
            restore: self.restore.as_deref(),
        }
    }

    /// For a rollback that names them, the heads of the records it restores
    /// ([`Restore::named_tips`]).
    pub fn restored_tips(&self) -> Option<&[String]> {
        (self.restore.as_ref()).and_then(|restore| restore.named_tips())
    }

    /// The id a line's content hashes to, or why the line is not shaped like a record.
    pub fn content_id(line: &[u8]) -> Result<String, String> {
        sealed_id(line).map(|hex| hex.iter().map(|digit| char::from(*digit)).collect())
    }

    /// Parses one line (without its line ending: [`line_content`]) and checks that its id is
    /// the hash of its content.
    pub fn parse_line(line: &[u8]) -> Result<Record, String> {
        parse_sealed(line, |record: &Record| &record.id)
    }
}

/// The hex digits of the id a line's content hashes to (kept on the stack: every line read is
/// checked), or why the line is not shaped like a record.
fn sealed_id(line: &[u8]) -> Result<[u8; 64], String> {
    let shaped = line.len() > ID_END + 2
        && line.starts_with(ID_PREFIX)
        && &line[ID_END..ID_END + 2] == b"\","
        && line[ID_PREFIX.len()..ID_END]
            .iter()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(b));
    if !shaped {
        return Err("does not start with `{\"id\":\"<64 hex digits>\",`".to_owned());
    }
    let mut hasher = Sha256::new();
    hasher.update(b"{");
    hasher.update(&line[ID_END + 2..]);
    let mut hex = [0u8; 64];
    hex::encode_to_slice(hasher.finalize(), &mut hex).expect("32 bytes are 64 hex digits");
    Ok(hex)
}

/// Parses one line (without its line ending) as a `T` whose `id` must be the hash of the
/// line's content. The line is checked to be UTF-8 once, as a whole, so that the parser takes
/// each string as it is instead of checking them one by one.
fn parse_sealed<T: serde::de::DeserializeOwned>(
    line: &[u8],
    id: impl Fn(&T) -> &str,
) -> Result<T, String> {
    let computed = sealed_id(line)?;
    let parsed = std::str::from_utf8(line)
        .map_err(|err| err.to_string())
        .and_then(|text| serde_json::from_str(text).map_err(|err| err.to_string()))
        .map_err(|err| format!("is not a record: {err}"))?;
    if id(&parsed).as_bytes() != computed {
        return Err("was edited or damaged: its id does not match its content".to_owned());
    }
    Ok(parsed)
}

/// A problem found while reading a rollout, with its 1-based line number.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct LineProblem {
    /// 1-based line number in its segment.
    pub line: u64,
    /// What is wrong.
    pub message: String,
}

/// What a rollout line is parsed into: the whole [`Record`], or only what places it in the
/// fold with the line to decode when its turn comes ([`Placement`]).
pub trait Line: Placed + Sized + Send {
    /// Parses one line (without its line ending: [`line_content`]) and checks that its id is
    /// the hash of its content.
    fn parse_line(line: &[u8]) -> Result<Self, String>;

    /// The identity of the store that wrote the record ([`Record::store`]).
    fn store(&self) -> Option<&str>;
}

impl Line for Record {
    fn parse_line(line: &[u8]) -> Result<Record, String> {
        Record::parse_line(line)
    }

    fn store(&self) -> Option<&str> {
        self.store.as_deref()
    }
}

/// A record as a replay of every record holds it until its turn to fold: what places it in
/// the fold order, and its line, decoded again when it is folded. Every record of a fresh
/// clone's first read is held at once: a decoded record takes several times its line, and
/// the replay decodes one at a time (docs/store.md#replaying-every-record).
#[derive(Debug, Clone)]
pub struct Placement {
    /// See [`Record::id`].
    pub id: String,
    /// See [`Record::store`].
    pub store: Option<String>,
    /// See [`Record::parents`].
    pub parents: Vec<String>,
    /// See [`Record::at`].
    pub at: String,
    /// See [`Record::restored_tips`].
    pub restores: Option<Vec<String>>,
    /// The line, checked against the id when it was placed.
    line: Box<[u8]>,
}

impl Placement {
    /// The whole record, decoded from its line.
    pub fn record(&self) -> Record {
        // The line decoded as a record when it was placed, and the parser is deterministic.
        serde_json::from_slice(&self.line).expect("a placed line decodes as it did when placed")
    }
}

impl Line for Placement {
    fn parse_line(line: &[u8]) -> Result<Placement, String> {
        // Decoded whole, so that a line is refused exactly as a reader of whole records
        // refuses it; only its place and its bytes are kept.
        let record = Record::parse_line(line)?;
        let restores = record.restored_tips().map(<[String]>::to_vec);
        let mut parents = record.parents;
        parents.shrink_to_fit();
        Ok(Placement {
            id: record.id,
            store: record.store,
            parents,
            at: record.at,
            restores,
            line: line.into(),
        })
    }

    fn store(&self) -> Option<&str> {
        self.store.as_deref()
    }
}

impl Placed for Placement {
    fn id(&self) -> &str {
        &self.id
    }

    fn at(&self) -> &str {
        &self.at
    }

    fn parents(&self) -> impl Iterator<Item = &str> {
        self.parents.iter().map(String::as_str)
    }
}

/// The complete lines of a rollout, parsed, and where the complete part ends.
#[derive(Debug)]
pub struct ParsedRollout<T = Record> {
    /// Records that parsed, in file order (duplicates included).
    pub records: Vec<ParsedLine<T>>,
    /// Lines that did not parse or whose id does not match.
    pub problems: Vec<LineProblem>,
    /// Bytes up to the end of the last whole line: its newline, or the end of the bytes when
    /// the last line is a record without one.
    pub complete_bytes: u64,
    /// A final line without its newline: a write that did not finish.
    pub torn_tail: Option<LineProblem>,
    /// Complete lines that end in `\r\n` (see the module docs).
    pub crlf_lines: u64,
}

// Not derived: a derived `Default` would ask `T: Default`.
impl<T> Default for ParsedRollout<T> {
    fn default() -> Self {
        ParsedRollout {
            records: Vec::new(),
            problems: Vec::new(),
            complete_bytes: 0,
            torn_tail: None,
            crlf_lines: 0,
        }
    }
}

/// A record and where it sits in the file.
#[derive(Debug, Clone)]
pub struct ParsedLine<T = Record> {
    /// 1-based line number.
    pub line: u64,
    /// Byte offset of the line's start.
    pub offset: u64,
    /// Length of the line, its line ending included.
    pub bytes: u64,
    /// The record.
    pub record: T,
}

/// The least a parse thread is given: shorter pieces do not win back a thread's start and the
/// fresh heap its records are allocated in (measured on the first read after a merge, whose
/// 0.5 MiB of incoming lines parse faster on one thread than on two).
const PARALLEL_PARSE_BYTES: usize = 1 << 20;

/// Parses the complete lines of `bytes`, which start at byte `offset`, line `first_line` (0
/// when unknown: line numbers are then 0 too). A long rollout is cut at line boundaries and
/// its pieces parsed on several threads (hashing and decoding dominate a replay).
pub fn parse<T: Line>(bytes: &[u8], offset: u64, first_line: u64) -> ParsedRollout<T> {
    let complete = bytes
        .iter()
        .rposition(|b| *b == b'\n')
        .map_or(0, |at| at + 1);
    // Asking for the cores reads the cgroup limits: only a rollout long enough to cut does.
    let pieces = match complete / PARALLEL_PARSE_BYTES {
        0 | 1 => 1,
        long => long.min(parallel::cores().min(4)),
    };
    let mut cuts = vec![0];
    for piece in 1..pieces {
        let target = complete * piece / pieces;
        let cut = bytes[target..complete]
            .iter()
            .position(|b| *b == b'\n')
            .map_or(complete, |at| target + at + 1);
        if cut > *cuts.last().expect("cuts start with 0") && cut < complete {
            cuts.push(cut);
        }
    }
    cuts.push(complete);
    let ranges: Vec<(usize, usize)> = cuts.windows(2).map(|w| (w[0], w[1])).collect();
    let mut parts = parallel::map_pieces(&ranges, |&(start, end)| {
        let number = match first_line {
            0 => 0,
            first => first + bytes[..start].iter().filter(|b| **b == b'\n').count() as u64,
        };
        parse_lines(&bytes[start..end], offset + start as u64, number)
    })
    .into_iter();
    let mut parsed = parts.next().expect("there is always one piece");
    for part in parts {
        parsed.records.extend(part.records);
        parsed.problems.extend(part.problems);
        parsed.crlf_lines += part.crlf_lines;
    }
    parsed.complete_bytes = complete as u64;
    // Every complete line is a record or a problem: a last line without its newline comes
    // after them all.
    let line_number = match first_line {
        0 => 0,
        first => first + (parsed.records.len() + parsed.problems.len()) as u64,
    };
    // A last line without its newline that is a whole record (someone's editor dropped the
    // newline) is kept: only a line that is no record is torn.
    let unterminated = &bytes[complete..];
    if !unterminated.is_empty()
        && let Ok(record) = T::parse_line(unterminated)
    {
        parsed.records.push(ParsedLine {
            line: line_number,
            offset: offset + complete as u64,
            bytes: unterminated.len() as u64,
            record,
        });
        parsed.complete_bytes = bytes.len() as u64;
    } else if complete < bytes.len() {
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

/// Parses `bytes`, whole lines each ending in a newline, starting at byte `offset`, line
/// `first_line` (0: unknown).
fn parse_lines<T: Line>(bytes: &[u8], offset: u64, first_line: u64) -> ParsedRollout<T> {
    let mut parsed = ParsedRollout {
        // Sized up front: growing a list of thousands of records moves every one of them.
        records: Vec::with_capacity(memchr::memchr_iter(b'\n', bytes).count()),
        ..ParsedRollout::default()
    };
    let mut line_number = first_line;
    let mut at = 0usize;
    for line in bytes.split_inclusive(|b| *b == b'\n') {
        let content = line_content(line);
        if content.len() + 2 == line.len() {
            parsed.crlf_lines += 1;
        }
        match T::parse_line(content) {
            Ok(record) => parsed.records.push(ParsedLine {
                line: line_number,
                offset: offset + at as u64,
                bytes: line.len() as u64,
                record,
            }),
            Err(problem) => parsed.problems.push(LineProblem {
                line: line_number,
                message: format!("line {line_number} {problem}"),
            }),
        }
        at += line.len();
        if first_line != 0 {
            line_number += 1;
        }
    }
    parsed
}

/// A line without its line ending: its final `\n` and one `\r` before it (see the module
/// docs). A line without a `\n` (a file's last) is its own content.
pub fn line_content(line: &[u8]) -> &[u8] {
    match line.strip_suffix(b"\n") {
        Some(content) => content.strip_suffix(b"\r").unwrap_or(content),
        None => line,
    }
}

/// The `prev_hash` of the first line of a first-format rollout.
const FIRST_FORMAT_GENESIS: &str =
    "0000000000000000000000000000000000000000000000000000000000000000";

/// The hash a first-format line was sealed with: the SHA-256 of the line with its `hash`
/// value emptied (`hash` was serialized last). `None` when the line does not end that way.
fn first_format_hash(line: &[u8]) -> Option<String> {
    const KEY: &[u8] = b",\"hash\":\"";
    let content = line_content(line);
    let body = content.strip_suffix(b"\"}")?;
    let start = memchr::memmem::rfind(body, KEY)? + KEY.len();
    let mut canonical = Vec::with_capacity(content.len());
    canonical.extend_from_slice(&body[..start]);
    canonical.extend_from_slice(b"\"}");
    Some(hex::encode(Sha256::digest(&canonical)))
}

/// Converts a rollout of the first format into records of this one, each the child of the
/// previous. Each line must be as it was written: its `hash` the SHA-256 of the line with the
/// hash emptied (how the first format sealed its lines, `hash` last), its `prev_hash` the
/// previous line's. A line that does not decode or does not hold is reported, and conversion
/// stops there: converting an edited line would seal the edit with a valid id.
pub fn convert_first_format(bytes: &[u8]) -> (Vec<(Record, String)>, Vec<LineProblem>) {
    #[derive(Deserialize)]
    struct FirstRecord {
        at: String,
        source: Source,
        turn_id: Option<String>,
        git_head: Option<String>,
        changed_fields: Vec<ChangedField>,
        patch: Option<Patch>,
        #[serde(default)]
        restore: Option<FirstRestore>,
        prev_hash: String,
        hash: String,
    }
    #[derive(Deserialize)]
    struct FirstRestore {
        to_revision: u64,
        state: State,
    }
    let mut converted: Vec<(Record, String)> = Vec::new();
    let mut problems = Vec::new();
    let mut previous_hash = FIRST_FORMAT_GENESIS.to_owned();
    for (index, line) in bytes.split(|b| *b == b'\n').enumerate() {
        if line.is_empty() {
            continue;
        }
        let number = index as u64 + 1;
        let first: FirstRecord = match serde_json::from_slice(line) {
            Ok(first) => first,
            Err(err) => {
                problems.push(LineProblem {
                    line: number,
                    message: format!("line {number} is not a first-format record: {err}"),
                });
                break;
            }
        };
        let unsound = if first.prev_hash != previous_hash {
            Some("does not follow the line before it (its `prev_hash` names another record)")
        } else if first_format_hash(line).as_deref() != Some(first.hash.as_str()) {
            Some("was changed after it was written (its `hash` does not match its content)")
        } else {
            None
        };
        if let Some(why) = unsound {
            problems.push(LineProblem {
                line: number,
                message: format!("line {number} {why}; restore it from git or a backup before the store is converted"),
            });
            break;
        }
        previous_hash = first.hash;
        let parents: Vec<String> = converted
            .last()
            .map(|(r, _)| r.id.clone())
            .into_iter()
            .collect();
        let restore = first.restore.map(|restore| Restore {
            to_revision: restore.to_revision,
            to_record: None,
            tips: None,
            state: Some(restore.state),
            anchors: BTreeMap::new(),
        });
        converted.push(Record::seal(&Body {
            store: None,
            parents: &parents,
            at: &first.at,
            source: first.source,
            turn_id: first.turn_id.as_deref(),
            git_head: first.git_head.as_deref(),
            changed_fields: &first.changed_fields,
            patch: first.patch.as_ref(),
            restore: restore.as_ref(),
        }));
    }
    (converted, problems)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn body_with<'a>(parents: &'a [String], patch: &'a Patch) -> Body<'a> {
        Body {
            store: None,
            parents,
            at: "2026-01-01T00:00:00Z",
            source: Source::Update,
            turn_id: None,
            git_head: None,
            changed_fields: &[ChangedField::Objective],
            patch: Some(patch),
            restore: None,
        }
    }

    fn objective(text: &str) -> Patch {
        Patch {
            objective: Some(text.into()),
            ..Patch::default()
        }
    }

    /// A first-format rollout converts only while its hash chain holds: an edited line, or
    /// lines out of order, stop the conversion at that line.
    #[test]
    fn first_format_lines_convert_only_as_they_were_written() {
        let fixture: &[u8] = include_bytes!("../../tests/fixtures/formats/v1/rollout.jsonl");
        assert!(
            fixture.starts_with(b"{\"seq\":"),
            "a `seq`-numbered hash chain"
        );
        let (converted, problems) = convert_first_format(fixture);
        assert_eq!((converted.len(), problems.len()), (2, 0), "{problems:?}");
        assert!(converted[0].0.parents.is_empty());
        assert_eq!(converted[1].0.parents, vec![converted[0].0.id.clone()]);
        let reparsed = Record::parse_line(converted[1].1.trim_end().as_bytes()).expect("parse");
        assert_eq!(reparsed, converted[1].0);

        let text = std::str::from_utf8(fixture).expect("utf-8");
        let edited = text.replacen("v1 fixture", "v1 fixturE", 1);
        let (converted, problems) = convert_first_format(edited.as_bytes());
        assert_eq!(converted.len(), 1);
        assert_eq!(problems.len(), 1);
        assert!(
            problems[0].message.starts_with("line 2 was changed"),
            "{problems:?}"
        );

        let lines: Vec<&str> = text.lines().collect();
        let swapped = format!("{}\n{}\n", lines[1], lines[0]);
        let (converted, problems) = convert_first_format(swapped.as_bytes());
        assert!(converted.is_empty());
        assert!(
            problems[0].message.contains("does not follow"),
            "{problems:?}"
        );
    }

    #[test]
    fn a_sealed_line_parses_back_and_its_id_is_its_content_hash() {
        let patch = objective("o");
        let (record, line) = Record::seal(&body_with(&[], &patch));
        assert!(line.starts_with(&format!("{{\"id\":\"{}\",\"parents\":[]", record.id)));
        let parsed = Record::parse_line(line.trim_end().as_bytes()).expect("parse");
        assert_eq!(parsed, record);
        let (again, line_again) = Record::seal(&record.body());
        assert_eq!((again.id, line_again), (record.id.clone(), line.clone()));
        let (child, _) = Record::seal(&body_with(std::slice::from_ref(&record.id), &patch));
        assert_ne!(child.id, record.id, "the parents are part of the content");
    }

    #[test]
    fn a_placed_line_keeps_what_places_it_and_decodes_to_its_record() {
        let (first, first_line) = Record::seal(&body_with(&[], &objective("o")));
        let restore = Restore {
            to_revision: 1,
            to_record: Some(first.id.clone()),
            tips: Some(vec![first.id.clone()]),
            state: None,
            anchors: BTreeMap::new(),
        };
        let parents = [first.id.clone()];
        let (rollback, rollback_line) = Record::seal(&Body {
            patch: None,
            restore: Some(&restore),
            ..body_with(&parents, &Patch::default())
        });
        // Sealed, so its id holds, but its patch is not a patch.
        let content = r#"{"parents":[],"at":"x","source":"update","changed_fields":[],"patch":{"objective":5}}"#;
        let id = hex::encode(Sha256::digest(content.as_bytes()));
        let not_a_patch = format!("{{\"id\":\"{id}\",{}\n", &content[1..]);
        let text = format!("{first_line}{rollback_line}{not_a_patch}");

        let whole = parse::<Record>(text.as_bytes(), 0, 1);
        let placed = parse::<Placement>(text.as_bytes(), 0, 1);
        assert_eq!(placed.problems, whole.problems);
        assert_eq!(placed.problems.len(), 1, "{:?}", placed.problems);
        let records: Vec<Record> = placed.records.iter().map(|l| l.record.record()).collect();
        assert_eq!(records, [first.clone(), rollback.clone()]);
        let place = &placed.records[1].record;
        assert_eq!(
            (place.id(), place.at()),
            (rollback.id.as_str(), rollback.at.as_str())
        );
        assert_eq!(place.parents().collect::<Vec<_>>(), [first.id.as_str()]);
        assert_eq!(place.restores.as_deref(), Some(&parents[..]));
        assert_eq!(placed.records[0].record.restores, None);
    }

    #[test]
    fn an_edited_line_is_refused() {
        let (_, line) = Record::seal(&body_with(&[], &objective("o")));
        let edited = line.trim_end().replace("\"o\"", "\"p\"");
        let problem = Record::parse_line(edited.as_bytes()).expect_err("edited");
        assert!(problem.contains("edited or damaged"), "{problem}");
        assert!(Record::parse_line(b"{\"seq\":1}").is_err());
    }

    #[test]
    fn a_long_rollout_parses_in_pieces_as_it_does_whole() {
        // Long enough to be cut in pieces, with a bad line as line 3003.
        let mut text = String::new();
        let mut lines = 0;
        while lines < 3010 || text.len() <= 3 * PARALLEL_PARSE_BYTES {
            let (_, line) = Record::seal(&body_with(&[], &objective(&format!("line {lines}"))));
            text.push_str(&line);
            lines += 1;
            if lines == 3002 {
                text.push_str("not json\n");
                lines += 1;
            }
        }
        text.push_str("{\"id\":");
        let whole = parse_lines(&text.as_bytes()[..text.len() - 6], 7, 1);
        let pieces = parse(text.as_bytes(), 7, 1);
        let shape = |parsed: &ParsedRollout| -> Vec<(u64, u64, u64, String)> {
            parsed
                .records
                .iter()
                .map(|l| (l.line, l.offset, l.bytes, l.record.id.clone()))
                .collect()
        };
        assert_eq!(shape(&pieces), shape(&whole));
        assert_eq!(pieces.problems, whole.problems);
        assert_eq!(pieces.problems[0].line, 3003);
        assert_eq!(pieces.torn_tail.as_ref().map(|t| t.line), Some(lines + 1));
        assert_eq!(pieces.complete_bytes as usize, text.len() - 6);
    }

    #[test]
    fn torn_tail_and_bad_lines_are_numbered_with_offsets() {
        let (_, one) = Record::seal(&body_with(&[], &objective("o")));
        let text = format!("{one}not json\n{{\"id\":");
        let parsed = parse::<Record>(text.as_bytes(), 100, 1);
        assert_eq!(parsed.records.len(), 1);
        assert_eq!(parsed.records[0].offset, 100);
        assert_eq!(parsed.problems.len(), 1);
        assert_eq!(parsed.problems[0].line, 2);
        assert_eq!(parsed.torn_tail.as_ref().map(|t| t.line), Some(3));
        assert_eq!(
            parsed.complete_bytes as usize,
            one.len() + "not json\n".len()
        );
    }

    #[test]
    fn a_line_ending_in_crlf_is_the_same_record() {
        let (one, one_line) = Record::seal(&body_with(&[], &objective("o")));
        let (two, two_line) = Record::seal(&body_with(&[], &objective("p")));
        let (three, three_line) = Record::seal(&body_with(&[], &objective("q")));
        let crlf = |line: &str| line.replace('\n', "\r\n");
        // As git checks a segment out under `eol=crlf`, then a line the writer appended after.
        let text = format!("{}{}{three_line}", crlf(&one_line), crlf(&two_line));
        let parsed = parse::<Record>(text.as_bytes(), 0, 1);
        assert!(parsed.problems.is_empty(), "{:?}", parsed.problems);
        let shape: Vec<(u64, u64, u64, &str)> = (parsed.records.iter())
            .map(|l| (l.line, l.offset, l.bytes, l.record.id.as_str()))
            .collect();
        let (first, second) = (one_line.len() as u64 + 1, two_line.len() as u64 + 1);
        assert_eq!(
            shape,
            [
                (1, 0, first, one.id.as_str()),
                (2, first, second, two.id.as_str()),
                (
                    3,
                    first + second,
                    three_line.len() as u64,
                    three.id.as_str()
                ),
            ]
        );
        assert_eq!(parsed.crlf_lines, 2);
        assert_eq!(parsed.complete_bytes as usize, text.len());
        assert!(parsed.torn_tail.is_none());
    }

    #[test]
    fn a_crlf_segment_whose_last_line_lacks_its_newline_keeps_that_record() {
        let (one, one_line) = Record::seal(&body_with(&[], &objective("o")));
        let (two, two_line) = Record::seal(&body_with(&[], &objective("p")));
        // What git checks out under `eol=crlf` when the last newline was dropped.
        let text = format!("{}{}", one_line.replace('\n', "\r\n"), two_line.trim_end());
        let parsed = parse::<Record>(text.as_bytes(), 0, 1);
        let ids: Vec<&str> = parsed
            .records
            .iter()
            .map(|l| l.record.id.as_str())
            .collect();
        assert_eq!(ids, [one.id.as_str(), two.id.as_str()]);
        assert_eq!(parsed.records[1].line, 2);
        assert_eq!(parsed.complete_bytes as usize, text.len());
        assert!(parsed.problems.is_empty() && parsed.torn_tail.is_none());
        // A `\r` with no `\n` after it ends no line: the last line is torn.
        let cut = format!("{}\r", text);
        let parsed = parse::<Record>(cut.as_bytes(), 0, 1);
        assert_eq!(parsed.records.len(), 1);
        assert_eq!(parsed.torn_tail.as_ref().map(|t| t.line), Some(2));
        assert_eq!(parsed.complete_bytes as usize, one_line.len() + 1);
    }

    #[test]
    fn a_carriage_return_inside_a_line_is_damage() {
        let (_, line) = Record::seal(&body_with(&[], &objective("o")));
        let content = line.trim_end();
        // Before the id's closing quote, inside the content, and twice before the newline.
        let damaged = [
            content.replacen("\",", "\r\",", 1),
            content.replacen(",", ",\r", 1),
            format!("{content}\r\r"),
        ];
        for bad in damaged {
            let text = format!("{bad}\n");
            let parsed = parse::<Record>(text.as_bytes(), 0, 1);
            assert!(parsed.records.is_empty(), "{bad:?} read as a record");
            assert_eq!(parsed.problems.len(), 1, "{bad:?}");
            assert_eq!(parsed.problems[0].line, 1);
        }
    }

    proptest::proptest! {
        #[test]
        fn arbitrary_lines_never_panic(bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..1024)) {
            let parsed = parse::<Record>(&bytes, 0, 1);
            proptest::prop_assert!(parsed.complete_bytes as usize <= bytes.len());
        }
    }
}
