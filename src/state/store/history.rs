//! The store's history: revision names (`HEAD~2`, a number, an id prefix), the full record
//! list in fold order, the state at a past revision, and the newest records for `log`.

use std::collections::BTreeSet;
use std::io::Read;
use std::io::Seek;
use std::io::SeekFrom;
use std::path::Path;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;
use anyhow::Result;
use foldhash::HashMap;
use foldhash::HashMapExt;
use foldhash::HashSet;

use crate::state::error::StoreError;
use crate::state::fold::Folded;
use crate::state::fs;
use crate::state::git;
use crate::state::rollout;
use crate::state::rollout::Record;
use crate::state::rollout::RecordHead;
use crate::state::segments::History;
use crate::state::segments::SegmentProblem;
use crate::state::segments::Segments;
use crate::state::segments::first_lines_naming;
use crate::state::segments::open_read;
use crate::state::snapshot::RolloutMark;
use crate::state::snapshot::SnapshotFile;

use super::LEGACY_ROLLOUT;
use super::ROLLOUT_DIR;
use super::STORE_DIR;
use super::Store;
use super::tail::Past;

/// How a record line names the commit it was written at (`Record::git_head`).
const GIT_HEAD_KEY: &[u8] = b"\"git_head\":\"";

/// Where a record's id starts in its line (after `{"id":"`).
const ID_OFFSET: usize = 7;

/// Names a revision: a number (a position in the fold order), `HEAD`, `HEAD~N`, or a record
/// id or a unique prefix of one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Revision {
    /// The state after this many records.
    Number(u64),
    /// `HEAD~N`: N records before the head.
    HeadMinus(u64),
    /// A record id or a prefix of one.
    Id(String),
}

impl std::str::FromStr for Revision {
    type Err = String;

    fn from_str(text: &str) -> Result<Revision, String> {
        let text = text.trim();
        if let Some(steps) = text.strip_prefix("HEAD").or_else(|| text.strip_prefix('@')) {
            return steps_back(text, steps).map(Revision::HeadMinus);
        }
        // A revision number has no leading zero; a record id may start with one.
        let id_like = text.len() >= 4 && text.starts_with('0');
        if !text.is_empty() && !id_like && text.bytes().all(|b| b.is_ascii_digit()) {
            return text
                .parse()
                .map(Revision::Number)
                .map_err(|_| format!("`{text}` is too large a revision"));
        }
        if text.len() >= 4 && text.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Ok(Revision::Id(text.to_ascii_lowercase()));
        }
        Err(format!(
            "`{text}` is not a revision: give a number, HEAD, HEAD~N, HEAD^, or a record id (at least 4 hex digits)"
        ))
    }
}

/// How many revisions back the steps after `HEAD` go: any mix of `~N`, `~` and `^`.
fn steps_back(name: &str, steps: &str) -> Result<u64, String> {
    let mut back: u64 = 0;
    let mut rest = steps;
    while let Some(first) = rest.chars().next() {
        rest = &rest[first.len_utf8()..];
        let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
        rest = &rest[digits.len()..];
        let count = match (first, digits.as_str()) {
            ('~' | '^', "") => 1,
            ('~', digits) => digits
                .parse::<u64>()
                .map_err(|_| format!("`{name}`: `~{digits}` is too far back"))?,
            // `^N` picks the N-th parent in git; counting back along the fold there is one.
            ('^', "1") => 1,
            ('^', other) => {
                return Err(format!(
                    "`{name}`: revisions count back along one line, so `^{other}` names nothing"
                ));
            }
            (other, _) => {
                return Err(format!(
                    "`{name}`: unexpected `{other}` (expected `~N` or `^` after `HEAD`)"
                ));
            }
        };
        back = back.saturating_add(count);
    }
    Ok(back)
}

impl std::fmt::Display for Revision {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Revision::Number(n) => write!(f, "{n}"),
            Revision::HeadMinus(0) => f.write_str("HEAD"),
            Revision::HeadMinus(n) => write!(f, "HEAD~{n}"),
            Revision::Id(id) => f.write_str(id),
        }
    }
}

impl History {
    /// The revision `revision` names: how many records its state folds (0: the empty state).
    pub fn resolve(&self, revision: &Revision) -> Result<usize> {
        let head = self.records.len();
        match revision {
            Revision::Number(n) if *n as usize <= head => Ok(*n as usize),
            // Past the head, a number of 4 digits or more may be a record id prefix made only
            // of digits.
            Revision::Number(n) => match self.resolve(&Revision::Id(n.to_string())) {
                Ok(count) if n.to_string().len() >= 4 => Ok(count),
                _ => Err(StoreError::NoSuchRevision { asked: *n, head }.into()),
            },
            Revision::HeadMinus(back) if *back as usize <= head => Ok(head - *back as usize),
            Revision::HeadMinus(back) => {
                Err(StoreError::BeforeTheFirstRevision { back: *back, head }.into())
            }
            Revision::Id(prefix) => {
                let matches: Vec<usize> = self
                    .records
                    .iter()
                    .enumerate()
                    .filter(|(_, r)| r.id.starts_with(prefix.as_str()))
                    .map(|(at, _)| at + 1)
                    .collect();
                match matches.as_slice() {
                    [one] => Ok(*one),
                    [] => Err(StoreError::UnknownRecordId {
                        prefix: prefix.clone(),
                    }
                    .into()),
                    _ => Err(StoreError::AmbiguousRecordId {
                        prefix: prefix.clone(),
                        count: matches.len(),
                    }
                    .into()),
                }
            }
        }
    }

    /// The state and anchors after the first `count` records.
    pub fn fold_to(&self, count: usize) -> Folded {
        crate::state::fold::fold_all(&self.records[..count], false)
    }
}

impl Store {
    /// Every record of the store in fold order, read from every segment.
    pub fn history(&self) -> Result<History> {
        if self.is_legacy() {
            let path = self.dir.join(LEGACY_ROLLOUT);
            let (converted, problems) = rollout::convert_first_format(&fs::read(&path)?);
            let lines = converted
                .iter()
                .enumerate()
                .map(|(at, (r, _))| (r.id.clone(), (LEGACY_ROLLOUT.to_owned(), at as u64 + 1)))
                .collect();
            return Ok(History {
                records: converted.into_iter().map(|(record, _)| record).collect(),
                problems: problems
                    .into_iter()
                    .map(|problem| SegmentProblem {
                        segment: LEGACY_ROLLOUT.to_owned(),
                        problem,
                    })
                    .collect(),
                lines,
                ..History::default()
            });
        }
        self.segments()?.into_history()
    }

    /// [`Store::history`] for the commands that fold it: a line that is not a sound record
    /// stops them, naming its segment and line, as it stops a read of the head (folding
    /// around it would renumber every revision after it). Only `verify` lists every problem.
    pub fn sound_history(&self) -> Result<History> {
        let history = self.history()?;
        match history.problems.first() {
            Some(problem) => Err(self.corrupt_rollout(problem)),
            None => Ok(history),
        }
    }

    /// Where the first record written at each of `commits` is: for each commit, each rollout
    /// segment naming it as a record's `git_head` (relative to [`Store::root`]), with its
    /// length up to the end of the first such line. What lets git tell where records entered a
    /// branch when the commit they were written at is gone. One search of each segment's bytes
    /// for all the commits, not a parse: it runs on reads of stores of any size.
    pub fn first_lines_written_at(&self, commits: &[&str]) -> Result<git::WrittenAt> {
        let mut found = git::WrittenAt::new();
        if self.is_legacy() || commits.is_empty() {
            return Ok(found);
        }
        let wanted: BTreeSet<&str> = commits.iter().copied().collect();
        let relative = Path::new(STORE_DIR).join(ROLLOUT_DIR);
        for name in self.segments()?.lengths().keys() {
            let path = self.rollout_dir().join(name);
            let ends = first_lines_naming(&mut open_read(&path)?, GIT_HEAD_KEY, &wanted, 1 << 20)
                .with_context(|| format!("failed to read `{}`", path.display()))?;
            for (commit, end) in ends {
                found
                    .entry(commit)
                    .or_default()
                    .push((relative.join(name), end));
            }
        }
        Ok(found)
    }

    /// Where revision `revision` ends: how many records it folds, their heads, and the record
    /// that produced it. Found from the newest snapshot that holds no more records than that
    /// revision and the lines past it; from every segment when none does.
    pub fn prefix(&self, revision: &Revision) -> Result<Prefix> {
        if !self.is_legacy() {
            let mut segments = self.segments()?;
            for candidate in self.snapshot_candidates()? {
                let Some(Past::Descends(snapshot, past)) =
                    self.past_snapshot(&mut segments, &candidate, None)?
                else {
                    continue;
                };
                if let Some(prefix) = Prefix::past(&snapshot, &past.records, revision)? {
                    return Ok(prefix);
                }
            }
        }
        let history = self.sound_history()?;
        let count = history.resolve(revision)?;
        Ok(Prefix::of(&history.records[..count]))
    }

    /// The newest `limit` records in fold order (newest first) with their revisions. Served
    /// from the newest usable snapshot's fold order and the records past it, parsing only the
    /// lines it answers with; from every segment when no snapshot serves.
    pub fn recent(&self, limit: usize) -> Result<Vec<(u64, RecordHead)>> {
        if !self.is_legacy() {
            let mut segments = self.segments()?;
            for candidate in self.snapshot_candidates()? {
                if let Some(recent) = self.recent_from_snapshot(&mut segments, &candidate, limit)? {
                    return Ok(recent);
                }
            }
        }
        let history = self.sound_history()?;
        Ok(history
            .records
            .into_iter()
            .enumerate()
            .rev()
            .take(limit)
            .map(|(at, record)| (at as u64 + 1, record.into()))
            .collect())
    }

    /// [`Store::recent`] from one snapshot: the records past it, then as many of its own as
    /// are still wanted, found by id in the segments (read backwards from each mark); `None`
    /// when the snapshot cannot serve.
    fn recent_from_snapshot(
        &self,
        segments: &mut Segments,
        path: &Path,
        limit: usize,
    ) -> Result<Option<Vec<(u64, RecordHead)>>> {
        let Some(Past::Descends(snapshot, past)) = self.past_snapshot(segments, path, None)? else {
            return Ok(None);
        };
        let before = snapshot.header.records;
        let mut recent: Vec<(u64, RecordHead)> = past
            .records
            .into_iter()
            .enumerate()
            .rev()
            .take(limit)
            .map(|(at, record)| (before + at as u64 + 1, record.into()))
            .collect();
        let wanted = (limit - recent.len()).min(before as usize);
        if wanted == 0 {
            return Ok(Some(recent));
        }
        let Ok((first, ids)) = snapshot.order_tail(wanted) else {
            return Ok(None);
        };
        let Some(mut found) = self.records_by_id(&snapshot.header.marks, &ids)? else {
            return Ok(None);
        };
        for (at, id) in ids.iter().enumerate().rev() {
            let Some(record) = found.remove(id) else {
                return Ok(None);
            };
            recent.push((first + at as u64 + 1, record));
        }
        Ok(Some(recent))
    }

    /// The heads of the records with these ids among the lines before `marks`, each line
    /// checked against its id (`None` when one fails); reads each segment backwards from its
    /// mark, the newest segment first (the marks are in name order, the order segments were
    /// started in: the newest records are in the last), and stops once all are found.
    fn records_by_id(
        &self,
        marks: &[RolloutMark],
        ids: &[String],
    ) -> Result<Option<HashMap<String, RecordHead>>> {
        let mut wanted: HashSet<&str> = ids.iter().map(String::as_str).collect();
        let mut found = HashMap::new();
        for mark in marks.iter().rev() {
            if wanted.is_empty() {
                break;
            }
            let path = self.rollout_dir().join(&mark.segment);
            let mut file = open_read(&path)?;
            let context = || format!("failed to read `{}`", path.display());
            let mut end = mark.end;
            let mut window: Vec<u8> = Vec::new();
            let mut window_start = end;
            while end > 0 && !wanted.is_empty() {
                // The line ending at `end` (its newline at `end - 1`) starts after the newline
                // before it; widen the window backwards until that newline or the file's start
                // is in it.
                let line_start = loop {
                    if window_start < end {
                        let local_end = (end - 1 - window_start) as usize;
                        if let Some(at) = window[..local_end].iter().rposition(|b| *b == b'\n') {
                            break window_start + at as u64 + 1;
                        }
                        if window_start == 0 {
                            break 0;
                        }
                    }
                    let step = window_start.min((window.len() as u64).max(64 * 1024));
                    window_start -= step;
                    let mut chunk = vec![0u8; step as usize];
                    file.seek(SeekFrom::Start(window_start))
                        .and_then(|_| file.read_exact(&mut chunk))
                        .with_context(context)?;
                    chunk.extend_from_slice(&window);
                    window = chunk;
                };
                let line = rollout::line_content(
                    &window[(line_start - window_start) as usize..(end - window_start) as usize],
                );
                let id = line
                    .get(ID_OFFSET..ID_OFFSET + 64)
                    .and_then(|id| std::str::from_utf8(id).ok());
                if let Some(id) = id.filter(|id| wanted.contains(id)) {
                    // A damaged line is left to the full read, which names it.
                    let Ok(record) = RecordHead::parse_line(line) else {
                        return Ok(None);
                    };
                    wanted.remove(id);
                    found.insert(record.id.clone(), record);
                }
                // Keep the window to what is still ahead of us.
                window.truncate((line_start - window_start) as usize);
                end = line_start;
            }
        }
        Ok(Some(found))
    }

    /// The records and cached snapshots as one consistent set, for a reader that compares
    /// them (`verify`): listed under the shared lock, so no write is half done, and read
    /// without it (each segment up to the length it was listed at), so a long check never
    /// blocks writers. A write that lands meanwhile is left to the next check.
    pub fn listing(&self, timeout: Duration) -> Result<Listing> {
        let lock = self.read_lock(timeout)?;
        let listing = Listing {
            segments: self.listed_segments()?,
            snapshots: self.snapshot_candidates()?,
        };
        drop(lock);
        Ok(listing)
    }

    /// Every record of `listing` in fold order (a first-format store's, converted), with the
    /// records another store wrote listed apart ([`History::foreign`]) instead of refused.
    pub fn history_of(&self, listing: Listing) -> Result<History> {
        match self.is_legacy() {
            true => self.history(),
            false => listing.segments.listing_foreign().into_history(),
        }
    }
}

/// The first records of the fold order, as far as a revision reaches ([`Store::prefix`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Prefix {
    /// How many records (the revision's number).
    pub count: usize,
    /// Their heads: the records none of the others names as a parent.
    pub tips: Vec<String>,
    /// The last of them, the record that produced the revision.
    pub record: Option<String>,
}

impl Prefix {
    /// The prefix that is all of `records` (in fold order).
    fn of(records: &[Record]) -> Prefix {
        Prefix::after(BTreeSet::new(), records, records.len())
    }

    /// The prefix of `tips` (heads of the records before) followed by `records`.
    fn after(mut tips: BTreeSet<String>, records: &[Record], count: usize) -> Prefix {
        for record in records {
            for parent in &record.parents {
                tips.remove(parent);
            }
            tips.insert(record.id.clone());
        }
        Prefix {
            count,
            tips: tips.into_iter().collect(),
            record: records.last().map(|record| record.id.clone()),
        }
    }

    /// The prefix `revision` names when it is `snapshot`'s records and some of `tail` (the
    /// records past it, in fold order); `None` when it is fewer records, or when the name
    /// needs every record to be resolved (an id outside the tail, a number past the head).
    fn past(
        snapshot: &SnapshotFile,
        tail: &[Record],
        revision: &Revision,
    ) -> Result<Option<Prefix>> {
        let base = snapshot.header.records as usize;
        let head = base + tail.len();
        let count = match revision {
            Revision::Number(n) if *n as usize <= head => *n as usize,
            Revision::HeadMinus(back) if *back as usize <= head => head - *back as usize,
            Revision::Id(prefix) => {
                let mut found = (tail.iter().enumerate())
                    .filter(|(_, record)| record.id.starts_with(prefix.as_str()));
                let unique = match (found.next(), found.next()) {
                    (Some((at, _)), None) => base + at + 1,
                    _ => return Ok(None),
                };
                // The snapshot's records may share the prefix: then it names nothing alone.
                if (snapshot.order()?.iter()).any(|id| id.starts_with(prefix.as_str())) {
                    return Ok(None);
                }
                unique
            }
            _ => return Ok(None),
        };
        if count < base {
            return Ok(None);
        }
        let tips = snapshot.header.tips.iter().cloned().collect();
        let mut prefix = Prefix::after(tips, &tail[..count - base], count);
        if count == base && base > 0 {
            prefix.record = snapshot.order_tail(1)?.1.pop();
        }
        Ok(Some(prefix))
    }
}

/// The segments and cached snapshots of a store as listed at one moment
/// ([`Store::listing`]).
#[derive(Debug)]
pub struct Listing {
    /// The rollout's segments, at the lengths they were listed at.
    pub segments: Segments,
    /// The snapshot files, most records first.
    pub snapshots: Vec<PathBuf>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::rollout::Source;

    #[test]
    fn revisions_parse_like_git() {
        for (name, expected) in [
            ("3", Revision::Number(3)),
            ("HEAD", Revision::HeadMinus(0)),
            ("@", Revision::HeadMinus(0)),
            ("HEAD~", Revision::HeadMinus(1)),
            ("HEAD^", Revision::HeadMinus(1)),
            ("HEAD^^", Revision::HeadMinus(2)),
            ("HEAD~3", Revision::HeadMinus(3)),
            ("HEAD~2^", Revision::HeadMinus(3)),
            ("@~7", Revision::HeadMinus(7)),
            (" HEAD~1 ", Revision::HeadMinus(1)),
            ("AbCd12", Revision::Id("abcd12".into())),
            ("0123", Revision::Id("0123".into())),
        ] {
            assert_eq!(name.parse(), Ok(expected), "{name}");
        }
        for (name, why) in [
            ("HEAD^2", "one line"),
            ("HEAD:x", "unexpected `:`"),
            ("HEADé", "unexpected `é`"),
            ("main", "is not a revision"),
            ("-1", "is not a revision"),
            ("abc", "is not a revision"),
        ] {
            let err = name.parse::<Revision>().expect_err(name);
            assert!(err.contains(why), "{name}: {err}");
        }
    }

    /// A number past the head may be a record id prefix made only of digits (git reads such a
    /// name as an object name too); a short one stays a revision number.
    #[test]
    fn a_number_past_the_head_may_be_a_record_id_prefix() {
        let record = |id: &str| Record {
            id: id.to_owned(),
            store: None,
            parents: Vec::new(),
            at: "2026-01-01T00:00:00Z".to_owned(),
            source: Source::Update,
            turn_id: None,
            git_head: None,
            changed_fields: Vec::new(),
            patch: None,
            restore: None,
        };
        let history = History {
            records: vec![record("aa11"), record("117914abcd"), record("9999ab")],
            ..History::default()
        };
        let resolve = |name: &str| history.resolve(&name.parse().expect("a revision"));
        assert_eq!(resolve("2").expect("a number"), 2);
        assert_eq!(resolve("117914").expect("a prefix"), 2);
        assert_eq!(resolve("9999").expect("a prefix"), 3);
        assert!(resolve("4").is_err());
        assert!(resolve("12345").is_err());
    }
}
