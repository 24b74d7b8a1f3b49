//! The rollout's segment files as one read sees them: their lengths, their lines parsed at
//! most once, and where each one's complete lines end.
//!
//! A read may try several snapshots before one serves (after a merge, the newest ones are
//! concurrent with records past them), and may fall back to every record; each needs the lines
//! past its own marks. [`Segments`] parses each segment once, from the earliest offset asked
//! for so far, and serves every later ask from what it parsed. It reads files and parses lines;
//! it does not choose a snapshot, fold, or write (`state::store`).

use std::collections::BTreeMap;
use std::collections::BTreeSet;
use std::collections::HashMap;
use std::fs::File;
use std::io::Read;
use std::io::Seek;
use std::io::SeekFrom;
use std::path::Path;
use std::path::PathBuf;

use anyhow::Context;
use anyhow::Result;

use crate::state::error::StoreError;
use crate::state::fs;
use crate::state::identity::Foreign;
use crate::state::identity::Identities;
use crate::state::order::topological;
use crate::state::rollout;
use crate::state::rollout::Line;
use crate::state::rollout::LineProblem;
use crate::state::rollout::ParsedLine;
use crate::state::rollout::Record;
use crate::state::snapshot::RolloutMark;

/// The file name suffix of a segment.
pub const SEGMENT_SUFFIX: &str = ".jsonl";

/// A problem with one line of one rollout segment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SegmentProblem {
    /// The segment's file name.
    pub segment: String,
    /// The problem, with its 1-based line number.
    pub problem: LineProblem,
}

/// Every record of the store in fold order, with what reading them found.
#[derive(Debug)]
pub struct History<T = Record> {
    /// The distinct records, in fold order.
    pub records: Vec<T>,
    /// Lines that did not parse or whose id did not match.
    pub problems: Vec<SegmentProblem>,
    /// Final lines without their newline (interrupted writes).
    pub torn_tails: Vec<SegmentProblem>,
    /// Lines that repeat an earlier record (a commit that reached a branch twice).
    pub duplicates: usize,
    /// Lines that end in `\r\n` (see [`rollout`]'s module docs): git converted them.
    pub crlf_lines: u64,
    /// Where each record was first found: segment and 1-based line.
    pub lines: BTreeMap<String, (String, u64)>,
    /// The records of each segment that another store wrote (`state::identity`): only
    /// `verify` sees them here, as every other reader refuses them.
    pub foreign: Vec<Foreign>,
}

// Not derived: a derived `Default` would ask `T: Default`.
impl<T> Default for History<T> {
    fn default() -> Self {
        History {
            records: Vec::new(),
            problems: Vec::new(),
            torn_tails: Vec::new(),
            duplicates: 0,
            crlf_lines: 0,
            lines: BTreeMap::new(),
            foreign: Vec::new(),
        }
    }
}

/// Where a segment's complete lines end, and its last line's mark.
#[derive(Debug, Clone)]
pub struct SegmentEnd {
    /// The segment's length as listed: past `complete`, a torn line.
    pub listed: u64,
    /// Bytes up to the end of the last whole line (see [`rollout::ParsedRollout::complete_bytes`]).
    pub complete: u64,
    /// The last complete line, when it is a record.
    pub mark: Option<RolloutMark>,
}

/// The segments of one rollout directory, listed once, their lines parsed on demand into
/// `T`: whole records, or their [`rollout::Placement`]s ([`Segments::placing`]).
#[derive(Debug)]
pub struct Segments<T = Record> {
    dir: PathBuf,
    lengths: BTreeMap<String, u64>,
    parsed: HashMap<String, Parsed<T>>,
    /// The temporary files (`.tmp-*`) listed beside the segments: what a killed writer left.
    temporaries: Vec<PathBuf>,
    /// The identities the store's records may claim.
    identities: Identities,
    /// Whether a segment that holds another store's records stops the read (all but `verify`).
    refuse_foreign: bool,
}

/// One segment's lines from `from` to its end.
#[derive(Debug)]
struct Parsed<T> {
    from: u64,
    lines: rollout::ParsedRollout<T>,
}

impl Segments {
    /// Lists the segments in `dir` (none when it does not exist). Refuses a symbolic link.
    pub fn list(dir: &Path) -> Result<Segments> {
        let mut lengths = BTreeMap::new();
        let mut temporaries = Vec::new();
        let entries = match std::fs::read_dir(dir) {
            Ok(entries) => Some(entries),
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => None,
            Err(err) => {
                return Err(err).with_context(|| format!("failed to list `{}`", dir.display()));
            }
        };
        for entry in entries.into_iter().flatten() {
            let entry = entry.with_context(|| format!("failed to list `{}`", dir.display()))?;
            let Some(name) = entry.file_name().to_str().map(str::to_owned) else {
                continue;
            };
            if name.starts_with(fs::TEMPORARY_PREFIX) {
                temporaries.push(entry.path());
            }
            if !name.ends_with(SEGMENT_SUFFIX) || name.starts_with('.') {
                continue;
            }
            let meta = entry
                .metadata()
                .with_context(|| format!("failed to stat `{}`", entry.path().display()))?;
            if meta.file_type().is_symlink() {
                fs::refuse_symlink(&entry.path())?;
            }
            if meta.is_file() {
                lengths.insert(name, meta.len());
            }
        }
        Ok(Segments {
            dir: dir.to_path_buf(),
            lengths,
            parsed: HashMap::new(),
            temporaries,
            identities: Identities::read(dir)?,
            refuse_foreign: true,
        })
    }

    /// These segments for `verify`, which lists the records another store wrote
    /// ([`History::foreign`]) instead of stopping at the first.
    pub fn listing_foreign(self) -> Segments {
        Segments {
            refuse_foreign: false,
            ..self
        }
    }

    /// These segments, their lines parsed into [`rollout::Placement`]s from now on (what was
    /// parsed whole is dropped), for a replay of every record that decodes each when its
    /// turn comes.
    pub fn placing(self) -> Segments<rollout::Placement> {
        Segments {
            dir: self.dir,
            lengths: self.lengths,
            parsed: HashMap::new(),
            temporaries: self.temporaries,
            identities: self.identities,
            refuse_foreign: self.refuse_foreign,
        }
    }
}

impl<T: Line> Segments<T> {
    /// The identities the store's records may claim, as listed.
    pub fn identities(&self) -> &Identities {
        &self.identities
    }

    /// Removes the temporary files a killed writer left among the segments (a writer does,
    /// under its lock). Best effort: one left is ignored by readers.
    pub fn remove_temporaries(&self) {
        for path in &self.temporaries {
            let _ = fs::remove_file(path);
        }
    }

    /// Each segment's file name and length, in name order.
    pub fn lengths(&self) -> &BTreeMap<String, u64> {
        &self.lengths
    }

    /// Parses segment `name` from byte `from` (a line start) on, unless an earlier ask already
    /// covered it; answers whether every complete line from there is a sound record. Refuses a
    /// segment whose records another store wrote (unless [`Segments::listing_foreign`]).
    pub fn parse_from(&mut self, name: &str, from: u64) -> Result<bool> {
        let covered = self.parsed.get(name).is_some_and(|p| p.from <= from);
        if !covered {
            let path = self.dir.join(name);
            let mut file = open_read(&path)?;
            // Up to the length it was listed at: a write that appends meanwhile is left to the
            // next read, so one read sees one consistent set of records.
            let wanted = (self.lengths.get(name)).map(|listed| listed.saturating_sub(from));
            // Sized up front: a buffer grown by doubling copies the bytes and touches twice
            // as much fresh memory.
            let mut bytes = Vec::with_capacity(wanted.unwrap_or(0) as usize);
            file.seek(SeekFrom::Start(from))
                .and_then(|_| {
                    (&mut file)
                        .take(wanted.unwrap_or(u64::MAX))
                        .read_to_end(&mut bytes)
                })
                .with_context(|| format!("failed to read `{}`", path.display()))?;
            // Line numbers are known only when the parse starts at the top.
            let first_line = u64::from(from == 0);
            let lines = rollout::parse::<T>(&bytes, from, first_line);
            if self.refuse_foreign {
                let records = lines.records.iter().map(|l| (l.line, l.record.store()));
                if let Some(foreign) = self.identities.foreign_in(name, records) {
                    return Err(StoreError::ForeignRecords {
                        segment: path,
                        what: foreign.describe(),
                    }
                    .into());
                }
            }
            self.parsed.insert(name.to_owned(), Parsed { from, lines });
        }
        Ok(self.parsed[name].lines.problems.is_empty())
    }

    /// The parsed lines of `name` that start at or after `from`; empty unless
    /// [`Segments::parse_from`] covered it.
    pub fn lines(&self, name: &str, from: u64) -> &[ParsedLine<T>] {
        let Some(parsed) = self.parsed.get(name) else {
            return &[];
        };
        let lines = &parsed.lines.records;
        &lines[lines.partition_point(|line| line.offset < from)..]
    }

    /// The records of the parsed lines from byte `start(segment)` on in every segment, each id
    /// once (its first line), with the bytes of all those lines.
    pub fn records_past(&self, start: impl Fn(&str) -> u64) -> (Vec<&T>, u64) {
        let mut seen = foldhash::HashSet::default();
        let mut records = Vec::new();
        let mut bytes = 0;
        for name in self.lengths.keys() {
            for line in self.lines(name, start(name)) {
                bytes += line.bytes;
                if seen.insert(line.record.id()) {
                    records.push(&line.record);
                }
            }
        }
        (records, bytes)
    }

    /// Whether the line that ends at `mark.end` is the record the mark names. A mark that
    /// does not fit its segment (a damaged or forged snapshot header) does not hold.
    pub fn mark_holds(&self, mark: &RolloutMark) -> Result<bool> {
        let fits = self
            .lengths
            .get(&mark.segment)
            .is_some_and(|len| mark.end <= *len);
        let Some(start) = mark.end.checked_sub(mark.line_bytes).filter(|_| fits) else {
            return Ok(false);
        };
        let parsed_there = self
            .parsed
            .get(&mark.segment)
            .is_some_and(|p| p.from <= start);
        if parsed_there && let Some(line) = self.lines(&mark.segment, start).first() {
            return Ok(line.offset == start && line.record.id() == mark.last_id);
        }
        let path = self.dir.join(&mark.segment);
        let mut line = vec![0u8; mark.line_bytes as usize];
        let mut file = open_read(&path)?;
        file.seek(SeekFrom::Start(start))
            .and_then(|_| file.read_exact(&mut line))
            .with_context(|| format!("failed to read `{}`", path.display()))?;
        // Only the file's last line may lack its newline (see `rollout::parse`).
        let at_end = self.lengths.get(&mark.segment) == Some(&mark.end);
        let content = (line.ends_with(b"\n") || at_end).then(|| rollout::line_content(&line));
        let id = content.and_then(|line| Record::content_id(line).ok());
        Ok(id.as_deref() == Some(mark.last_id.as_str()))
    }

    /// Where each segment's complete lines end and its last line: taken from a mark that ends
    /// where the segment does, from the parsed lines, or read backwards from the end.
    pub fn ends(&self, marks: &[RolloutMark]) -> Result<BTreeMap<String, SegmentEnd>> {
        // Looked up by segment and end: one lookup per segment, however many marks.
        let at_end: foldhash::HashMap<(&str, u64), &RolloutMark> = (marks.iter())
            .map(|mark| ((mark.segment.as_str(), mark.end), mark))
            .collect();
        self.lengths
            .iter()
            .map(|(name, len)| {
                let end = match self.known_end(name, *len, &at_end) {
                    Some(end) => end,
                    None => {
                        let path = self.dir.join(name);
                        let mut file = open_read(&path)?;
                        last_complete_line(&mut file, *len, name)
                            .with_context(|| format!("failed to read `{}`", path.display()))?
                    }
                };
                Ok((name.clone(), end))
            })
            .collect()
    }

    fn known_end(
        &self,
        name: &str,
        len: u64,
        at_end: &foldhash::HashMap<(&str, u64), &RolloutMark>,
    ) -> Option<SegmentEnd> {
        if let Some(mark) = at_end.get(&(name, len)) {
            return Some(SegmentEnd {
                listed: len,
                complete: len,
                mark: Some((*mark).clone()),
            });
        }
        let parsed = self.parsed.get(name)?;
        let complete = parsed.from + parsed.lines.complete_bytes;
        let last = parsed.lines.records.last();
        match last {
            Some(line) if line.offset + line.bytes == complete => Some(SegmentEnd {
                listed: len,
                complete,
                mark: Some(RolloutMark {
                    segment: name.to_owned(),
                    last_id: line.record.id().to_owned(),
                    end: complete,
                    line_bytes: line.bytes,
                }),
            }),
            // The last line is damaged (or nothing was parsed): read it.
            _ => None,
        }
    }

    /// Every record in fold order, with the problems, torn tails and duplicates found: parses
    /// whatever was not parsed from the top yet.
    pub fn into_history(mut self) -> Result<History<T>> {
        let names: Vec<String> = self.lengths.keys().cloned().collect();
        let mut history = History::default();
        let mut distinct = Vec::new();
        for name in names {
            self.parse_from(&name, 0)?;
            let parsed = self
                .parsed
                .remove(&name)
                .expect("parse_from just parsed it")
                .lines;
            let tag = |problem: LineProblem| SegmentProblem {
                segment: name.clone(),
                problem,
            };
            history
                .problems
                .extend(parsed.problems.into_iter().map(tag));
            history.torn_tails.extend(parsed.torn_tail.map(tag));
            history.crlf_lines += parsed.crlf_lines;
            let records = parsed.records.iter().map(|l| (l.line, l.record.store()));
            history
                .foreign
                .extend(self.identities.foreign_in(&name, records));
            for line in parsed.records {
                // Listed, never folded.
                if !self.identities.accepts(line.record.store()) {
                    continue;
                }
                if history.lines.contains_key(line.record.id()) {
                    history.duplicates += 1;
                    continue;
                }
                history
                    .lines
                    .insert(line.record.id().to_owned(), (name.clone(), line.line));
                distinct.push(line.record);
            }
        }
        history.records = topological(distinct);
        Ok(history)
    }
}

/// Where a file's complete lines end, and its last complete line's mark: reads backwards from
/// the end in growing steps, so a long segment costs no more than its last line.
fn last_complete_line(
    file: &mut File,
    file_len: u64,
    segment: &str,
) -> std::io::Result<SegmentEnd> {
    let mut window_start = file_len;
    let mut window: Vec<u8> = Vec::new();
    loop {
        if let Some(last) = window.iter().rposition(|b| *b == b'\n') {
            let before = window[..last].iter().rposition(|b| *b == b'\n');
            if before.is_some() || window_start == 0 {
                let line_start = before.map_or(0, |at| at + 1);
                let complete = window_start + last as u64 + 1;
                let mark = Record::content_id(rollout::line_content(&window[line_start..=last]))
                    .ok()
                    .map(|id| RolloutMark {
                        segment: segment.to_owned(),
                        last_id: id,
                        end: complete,
                        line_bytes: (last + 1 - line_start) as u64,
                    });
                return Ok(SegmentEnd {
                    listed: file_len,
                    complete,
                    mark,
                });
            }
        } else if window_start == 0 {
            return Ok(SegmentEnd {
                listed: file_len,
                complete: 0,
                mark: None,
            });
        }
        let step = window_start.min((window.len() as u64).max(64 * 1024));
        window_start -= step;
        let mut chunk = vec![0u8; step as usize];
        file.seek(SeekFrom::Start(window_start))?;
        file.read_exact(&mut chunk)?;
        chunk.extend_from_slice(&window);
        window = chunk;
    }
}

/// Opens a file for reading, naming it on failure.
pub fn open_read(path: &Path) -> Result<File> {
    File::open(path).with_context(|| format!("failed to open `{}`", path.display()))
}

/// For each of `wanted`, where the first complete line of `reader` in which `key` is followed
/// by that value (up to the next `"`) ends, just past its newline, in the file as git stores
/// it: a `\r\n` line ending counts as the `\n` git converts it back to (see [`rollout`]'s
/// module docs). Reads `chunk` bytes at a time. A search of the bytes, not a parse, and one
/// pass however many values are wanted, so that a segment of any size costs a copy and a scan.
pub fn first_lines_naming(
    reader: &mut impl Read,
    key: &[u8],
    wanted: &BTreeSet<&str>,
    chunk: usize,
) -> std::io::Result<BTreeMap<String, u64>> {
    let finder = memchr::memmem::Finder::new(key);
    let crlf = memchr::memmem::Finder::new(b"\r\n");
    let mut found: BTreeMap<String, u64> = BTreeMap::new();
    let mut buffer: Vec<u8> = Vec::with_capacity(chunk);
    // The offset of buffer[0] in the file as git stores it.
    let mut base = 0u64;
    while found.len() < wanted.len() {
        let filled = buffer.len();
        buffer.resize(filled + chunk, 0);
        let read = reader.read(&mut buffer[filled..])?;
        buffer.truncate(filled + read);
        // Only complete lines are searched; the rest waits for the next chunk.
        let Some(last_newline) = memchr::memrchr(b'\n', &buffer) else {
            if read == 0 {
                break;
            }
            continue;
        };
        let lines = &buffer[..=last_newline];
        // The `\r\n` endings of lines[..counted], which ends just past a newline.
        let (mut counted, mut crlf_endings) = (0, 0);
        for at in finder.find_iter(lines) {
            let value_start = at + key.len();
            let rest = &lines[value_start..];
            // A value holds no quote, so no other match starts inside it: the values are read
            // once. A line with many matches (a rollback's anchors) is not read to its end for
            // each of them: only a wanted value's first line is.
            let Some(value_len) = memchr::memchr(b'"', rest) else {
                continue;
            };
            let Ok(value) = std::str::from_utf8(&rest[..value_len]) else {
                continue;
            };
            if !wanted.contains(value) || found.contains_key(value) {
                continue;
            }
            let line_end = memchr::memchr(b'\n', rest).expect("the lines end in a newline");
            let end = value_start + line_end + 1;
            // Matches come in order, so their lines end in order too.
            crlf_endings += crlf.find_iter(&lines[counted..end]).count();
            counted = end;
            found.insert(value.to_owned(), base + (end - crlf_endings) as u64);
        }
        if read == 0 {
            break;
        }
        crlf_endings += crlf.find_iter(&lines[counted..]).count();
        buffer.drain(..=last_newline);
        base += (last_newline + 1 - crlf_endings) as u64;
    }
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::fields::ChangedField;
    use crate::state::patch::Patch;
    use crate::state::rollout::Body;
    use crate::state::rollout::Source;

    /// A segment of chained records in a fresh directory, one per line ending given (`\n` as
    /// the writer ends a line, `\r\n` as git may check it out), with each line's mark.
    fn segment(endings: &[&str]) -> (tempfile::TempDir, Vec<RolloutMark>) {
        let dir = tempfile::tempdir().expect("temporary directory");
        let (mut text, mut marks, mut parents) = (String::new(), Vec::new(), Vec::new());
        for (i, ending) in endings.iter().enumerate() {
            let patch = Patch {
                objective: Some(format!("objective {i}")),
                ..Patch::default()
            };
            let (record, line) = Record::seal(&Body {
                store: None,
                parents: &parents,
                at: "2026-01-01T00:00:00Z",
                source: Source::Update,
                turn_id: None,
                git_head: None,
                changed_fields: &[ChangedField::Objective],
                patch: Some(&patch),
                restore: None,
            });
            let line = line.replace('\n', ending);
            text.push_str(&line);
            marks.push(RolloutMark {
                segment: "s.jsonl".into(),
                last_id: record.id.clone(),
                end: text.len() as u64,
                line_bytes: line.len() as u64,
            });
            parents = vec![record.id];
        }
        std::fs::write(dir.path().join("s.jsonl"), text).expect("write the segment");
        (dir, marks)
    }

    #[test]
    fn the_first_line_naming_each_value_is_found_in_one_pass_across_chunk_ends() {
        let text = b"{\"a\":1}\n{\"git_head\":\"c1\"}\n{\"x\":{\"git_head\":\"c2\"},\"git_head\":\"c1\"}\n{\"git_head\":\"c3\"}";
        let find = |wanted: &[&str], chunk: usize| {
            let wanted: BTreeSet<&str> = wanted.iter().copied().collect();
            first_lines_naming(&mut &text[..], b"\"git_head\":\"", &wanted, chunk).expect("read")
        };
        for chunk in [1, 2, 3, 7, 64] {
            let found = find(&["c1", "c2", "c3", "c4"], chunk);
            // c1 on its first line only; c2 wherever the key occurs in a line; c3's line has
            // no newline (a torn tail): it is no line yet; c4 is nowhere.
            let expected = BTreeMap::from([("c1".to_owned(), 26), ("c2".to_owned(), 66)]);
            assert_eq!(found, expected, "chunk {chunk}");
            assert_eq!(
                find(&["c1"], chunk),
                BTreeMap::from([("c1".to_owned(), 26)])
            );
            assert!(find(&[], chunk).is_empty());
        }
    }

    #[test]
    fn lines_naming_a_value_end_where_git_stores_them_when_checked_out_with_crlf() {
        let lf =
            b"{\"git_head\":\"c1\"}\n{\"a\":1}\n{\"git_head\":\"c2\"}\n{\"git_head\":\"c3\"}\n";
        let crlf = String::from_utf8_lossy(lf).replace('\n', "\r\n");
        let wanted: BTreeSet<&str> = ["c1", "c2", "c3"].into_iter().collect();
        let expected = BTreeMap::from([
            ("c1".to_owned(), 18),
            ("c2".to_owned(), 44),
            ("c3".to_owned(), 62),
        ]);
        for chunk in [1, 2, 3, 7, 17, 64] {
            let find = |text: &[u8]| {
                first_lines_naming(&mut &text[..], b"\"git_head\":\"", &wanted, chunk)
                    .expect("read")
            };
            assert_eq!(find(lf), expected, "chunk {chunk}");
            assert_eq!(find(crlf.as_bytes()), expected, "chunk {chunk}");
        }
    }

    #[test]
    fn marks_hold_whatever_was_parsed_before() {
        let (dir, marks) = segment(&["\n"; 4]);
        let mut segments = Segments::list(dir.path()).expect("list");
        // A later candidate's tail is parsed first; an earlier mark is still checked.
        assert!(segments.parse_from("s.jsonl", marks[2].end).expect("parse"));
        assert_eq!(segments.lines("s.jsonl", marks[2].end).len(), 1);
        assert!(segments.mark_holds(&marks[1]).expect("read"));
        assert!(segments.mark_holds(&marks[3]).expect("read"));
        let forged = RolloutMark {
            last_id: marks[2].last_id.clone(),
            ..marks[1].clone()
        };
        assert!(!segments.mark_holds(&forged).expect("read"));
        // Lengths that do not fit the segment are no mark, whatever the header's checksum says.
        for (end, line_bytes) in [(marks[1].end, u64::MAX), (u64::MAX, marks[1].line_bytes)] {
            let misfit = RolloutMark {
                end,
                line_bytes,
                ..marks[1].clone()
            };
            assert!(!segments.mark_holds(&misfit).expect("no read"));
        }
        // Parsing from further back serves every ask after it.
        assert!(segments.parse_from("s.jsonl", 0).expect("parse"));
        assert_eq!(segments.lines("s.jsonl", marks[0].end).len(), 3);
        let ends = segments.ends(&[]).expect("ends");
        assert_eq!(ends["s.jsonl"].complete, marks[3].end);
        assert_eq!(ends["s.jsonl"].mark.as_ref(), Some(&marks[3]));
        let read_back = Segments::list(dir.path())
            .and_then(|fresh| fresh.ends(&[]))
            .expect("ends");
        assert_eq!(read_back["s.jsonl"].mark.as_ref(), Some(&marks[3]));
        let history = segments.into_history().expect("history");
        assert_eq!(history.records.len(), 4);
        assert_eq!(history.lines[&marks[3].last_id], ("s.jsonl".to_owned(), 4));
    }

    /// A segment whose length is where one of the marks ends takes its end from that mark,
    /// found among many marks of other segments and of its own earlier lines; without one the
    /// file is read.
    #[test]
    fn a_segment_ending_at_a_mark_takes_its_end_from_it_unread() {
        let (dir, marks) = segment(&["\n"; 3]);
        std::fs::write(dir.path().join(".tmp-left-behind"), "half").expect("write");
        let segments = Segments::list(dir.path()).expect("list");
        assert_eq!(
            segments.lengths().len(),
            1,
            "a temporary file is no segment"
        );
        std::fs::remove_file(dir.path().join("s.jsonl")).expect("remove");
        let mut all: Vec<RolloutMark> = (0..1000)
            .map(|n| RolloutMark {
                segment: format!("other-{n}.jsonl"),
                ..marks[2].clone()
            })
            .collect();
        all.extend(marks.iter().cloned());
        let ends = segments.ends(&all).expect("ends from the marks");
        let end = &ends["s.jsonl"];
        assert_eq!(end.mark.as_ref(), Some(&marks[2]));
        assert_eq!((end.listed, end.complete), (marks[2].end, marks[2].end));
        assert!(
            segments.ends(&marks[..2]).is_err(),
            "no mark at its end: the (removed) file is read"
        );
        segments.remove_temporaries();
        assert!(!dir.path().join(".tmp-left-behind").exists());
    }

    #[test]
    fn lines_checked_out_with_crlf_keep_their_marks() {
        // As git checks a segment out under `eol=crlf`, with a line the writer appended after.
        let (dir, marks) = segment(&["\r\n", "\r\n", "\n", "\r\n"]);
        let fresh = || Segments::list(dir.path()).expect("list");
        // Read from the file, then from the lines parsed.
        let mut segments = fresh();
        for mark in &marks {
            assert!(segments.mark_holds(mark).expect("read"), "{mark:?}");
        }
        let read_back = segments.ends(&[]).expect("ends");
        assert_eq!(read_back["s.jsonl"].mark.as_ref(), marks.last());
        assert!(segments.parse_from("s.jsonl", 0).expect("parse"));
        for mark in &marks {
            assert!(segments.mark_holds(mark).expect("parsed"), "{mark:?}");
        }
        assert_eq!(
            segments.ends(&[]).expect("ends")["s.jsonl"].mark.as_ref(),
            marks.last()
        );
        let history = fresh().into_history().expect("history");
        assert!(history.problems.is_empty(), "{:?}", history.problems);
        assert_eq!(history.records.len(), 4);
        assert_eq!(history.crlf_lines, 3);
        // A mark whose line ends in `\r` alone is no record's.
        let short = RolloutMark {
            end: marks[0].end - 1,
            line_bytes: marks[0].line_bytes - 1,
            ..marks[0].clone()
        };
        assert!(!fresh().mark_holds(&short).expect("read"));
    }
}
