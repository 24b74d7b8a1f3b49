//! The `.epiphany/` store: finding it, reading its head and history, and the one locked,
//! crash-safe write.
//!
//! Layout: `rollout/` (segments of immutable records, one record a line: the only thing git
//! carries), `.gitattributes`, `.gitignore` (for `cache/`, the lock and temporary files), and
//! `cache/` (derived, per clone: `cache/snapshots/` holds cached folds). Stores written before
//! kept snapshots in a tracked `snapshots/`; the next write moves them into the cache.
//!
//! Git never has to merge the content of a file here: a writer appends only to the segment it
//! started itself while no commit can hold it (noted in `cache/open-segment.json`) and starts
//! a new segment, named uniquely, otherwise. So every merge, octopus, rebase, cherry-pick or
//! revert only adds or removes whole files, in any clone, with no set-up; should two versions
//! of a segment meet anyway, `merge=union` joins them, and a duplicate record (the same commit
//! reaching a branch twice) is the same line and counts once.
//!
//! Reading: take the newest snapshot whose records are still there (each segment at least as
//! long as the snapshot says, the line at its mark the record it names), parse only the lines
//! after the marks, and fold them on top when every one of them saw everything the snapshot
//! holds; otherwise try an older snapshot, down to replaying every segment. Any line a read
//! folds must hash to its id (without its line ending, `\n` or `\r\n`: see `state::rollout`).
//! A read that folded many records (a fresh clone, a merge) caches the fold. Records a cached
//! fold or the checked-out commit holds that the rollout lacks stop the read: they were lost.
//!
//! Writing (inside an exclusive lock on `.epiphany/lock`): read the head, let the caller decide,
//! seal one record whose parents are the current heads, fold it into the head, and make its
//! line durable (append and fsync, or create a new segment by writing a temporary file and
//! renaming it). A failed append is cut back off, and torn lines an interrupted write left are
//! cut off: a record is visible only once its complete line is durable. When the records past
//! the newest snapshot are many, cache a new snapshot (failure there is a warning: the record
//! is already safe) and thin out old ones.
//!
//! Nothing here decides whether a write is allowed: that is `policy`.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::collections::BTreeSet;
use std::fs::File;
use std::hash::BuildHasher;
use std::io::Read;
use std::io::Seek;
use std::io::SeekFrom;
use std::io::Write;
use std::path::Path;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;
use anyhow::Result;
use foldhash::HashMap;
use foldhash::HashMapExt;
use foldhash::HashSet;
use serde::Deserialize;
use serde::Serialize;

use crate::state::error::StoreError;
use crate::state::fields::ChangedField;
use crate::state::fields::changed_fields_between;
use crate::state::fold::Base;
use crate::state::fold::Fold;
use crate::state::fold::Folded;
use crate::state::fold::RecordMeta;
use crate::state::fold::placed;
use crate::state::fs;
use crate::state::fs::Durability;
use crate::state::fs::LockMode;
use crate::state::git;
use crate::state::merge;
use crate::state::model::RecordIds;
use crate::state::model::State;
use crate::state::order::topological;
use crate::state::patch::Patch;
use crate::state::rollout;
use crate::state::rollout::Body;
use crate::state::rollout::LineProblem;
use crate::state::rollout::Record;
use crate::state::rollout::RecordHead;
use crate::state::rollout::Restore;
use crate::state::rollout::Source;
pub use crate::state::segments::History;
use crate::state::segments::SEGMENT_SUFFIX;
use crate::state::segments::SegmentEnd;
pub use crate::state::segments::SegmentProblem;
pub use crate::state::segments::Segments;
use crate::state::segments::first_lines_naming;
use crate::state::segments::open_read;
use crate::state::snapshot;
use crate::state::snapshot::Anchor;
use crate::state::snapshot::Parts;
use crate::state::snapshot::RolloutMark;
use crate::state::snapshot::SnapshotFile;
use crate::state::snapshot::StoredIds;

/// The name of the store directory.
pub const STORE_DIR: &str = ".epiphany";
/// The directory of rollout segments.
pub const ROLLOUT_DIR: &str = "rollout";
/// The snapshot directory in `cache/` (and, in stores written before snapshots left git, in
/// the store itself).
pub const SNAPSHOT_DIR: &str = "snapshots";
/// The rollout of the first store format.
const LEGACY_ROLLOUT: &str = "rollout.jsonl";
/// The single snapshot of the first store format.
const LEGACY_SNAPSHOT: &str = "state.msgpack";
const LOCK_FILE: &str = "lock";
/// The writer's note of the segment it appends to, in `cache/`.
const OPEN_SEGMENT_NOTE: &str = "open-segment.json";
/// The name every temporary directory a store is assembled in starts with, beside the store;
/// [`Store::create`] removes those an interrupted `init` left.
pub const STAGING_PREFIX: &str = ".epiphany-init-";
/// The most of the open-segment note that is read: one segment name, a commit and a path.
const OPEN_SEGMENT_NOTE_LIMIT: u64 = 64 * 1024;
const CACHE_DIR: &str = "cache";
/// What git must not carry: everything but the records. `snapshots/` is listed for stores whose
/// snapshots were tracked before: once they leave the index, nothing brings them back.
const GITIGNORE: &str = "# Only rollout/ is tracked: the cache (snapshots, the search index), the lock and temporary\n# files are per clone.\ncache/\nsnapshots/\nlock\n.tmp-*\n";
/// Records are immutable lines, so the union of two versions of a segment is always right:
/// git's built-in `union` driver is the safety net for a segment two branches both changed.
const GITATTRIBUTES: &str = "# Records are immutable lines: the union of two versions of a segment is always right.\nrollout/** -text merge=union\n";

/// What a write reads of the head: everything but the observation and evidence records, whose
/// ids it checks new ones against.
const WRITE_PARTS: Parts = Parts {
    lists: Some(0),
    graphs: true,
    writers: false,
    ids: true,
};
/// Where a record's id starts in its line (after `{"id":"`).
const ID_OFFSET: usize = 7;
/// Records past the newest snapshot after which a write stores a new snapshot, by default.
pub const DEFAULT_SNAPSHOT_EVERY: usize = 128;
/// Rollout bytes past the newest snapshot after which a write stores a new snapshot.
const SNAPSHOT_AFTER_BYTES: u64 = 1 << 20;
/// Cached snapshots kept at most.
const SNAPSHOTS_KEPT: usize = 12;
/// How a record line names the commit it was written at (`Record::git_head`).
const GIT_HEAD_KEY: &[u8] = b"\"git_head\":\"";
/// A read that started from a snapshot caches its fold only when the lines it folded on top
/// are at least this share (1/N) of the snapshot's size: storing a fold costs about as much as
/// the snapshot is large, and a short tail over a large state costs later reads little.
const REMEMBER_TAIL_SHARE: u64 = 4;

/// A located store.
#[derive(Debug, Clone)]
pub struct Store {
    root: PathBuf,
    dir: PathBuf,
    /// Records past the newest snapshot after which a write stores a snapshot in
    /// `snapshots/`, and a read remembers its fold in `cache/snapshots/`.
    snapshot_every: usize,
}

/// The state at the head of the store, with what a write or a projection needs besides it.
#[derive(Debug, Clone)]
pub struct Head {
    /// The state.
    pub state: State,
    /// When each graph node and the investigation checkpoint was last written.
    pub anchors: BTreeMap<String, Anchor>,
    /// The records no other record names as a parent.
    pub tips: BTreeSet<String>,
    /// The commit checked out at the newest write, when in git.
    pub last_git_head: Option<String>,
    /// How many observations and evidence records the state holds (its lists may be cut to
    /// the newest when only those were asked for).
    pub totals: ListTotals,
    /// The live writers, when they were read.
    writers: Option<crate::state::fold::Writers>,
    /// When the lists were cut short: the ids of every observation and evidence record.
    ids: Option<KnownIds>,
    /// Where it was read from.
    read: HeadRead,
}

/// Where a head was read from: what the next write appends to and whether it is due a
/// snapshot.
#[derive(Debug, Clone)]
struct HeadRead {
    /// The snapshot the head was read from.
    base: Option<PathBuf>,
    /// The records folded on top of it, in fold order.
    tail_ids: Vec<String>,
    /// What a snapshot keeps of each of them.
    tail_metas: TailMetas,
    /// Bytes of those records.
    tail_bytes: u64,
    /// Every segment as read: where its complete part ends and its last line.
    segments: BTreeMap<String, SegmentEnd>,
    /// The store is in the first format and is upgraded by the next write.
    legacy: bool,
}

/// What a snapshot keeps of each record of a read's tail.
#[derive(Debug, Clone)]
enum TailMetas {
    /// As a fold collects them: parents named by id.
    Named(Vec<RecordMeta<String>>),
    /// Parents named by position in the fold order, for a read without a base that placed
    /// every record itself (a joined merge).
    Placed(Vec<RecordMeta<u32>>),
}

impl HeadRead {
    /// A read without a base that placed every record itself (a joined or grafted merge):
    /// `order` and `metas` from `state::merge`.
    fn joined(
        order: Vec<String>,
        metas: Vec<RecordMeta<u32>>,
        tail_bytes: u64,
        segments: BTreeMap<String, SegmentEnd>,
    ) -> HeadRead {
        HeadRead {
            base: None,
            tail_ids: order,
            tail_metas: TailMetas::Placed(metas),
            tail_bytes,
            segments,
            legacy: false,
        }
    }

    /// The records the head folds, as a snapshot of it keeps them: the base snapshot's, then
    /// the tail's (borrowed when there is no base).
    fn covered(&self) -> Result<Covered<'_>> {
        let Some(base) = &self.base else {
            let metas = match &self.tail_metas {
                TailMetas::Named(named) => Cow::Owned(placed(&self.tail_ids, named)),
                TailMetas::Placed(metas) => Cow::Borrowed(metas.as_slice()),
            };
            return Ok(Covered {
                metas: (metas.len() == self.tail_ids.len()).then_some(metas),
                order: Cow::Borrowed(&self.tail_ids),
            });
        };
        let file = SnapshotFile::open(base)?;
        let (mut order, base_metas) = (file.order()?, file.metas()?);
        let base_len = order.len();
        order.extend(self.tail_ids.iter().cloned());
        let metas = match (base_metas, &self.tail_metas) {
            (Some(mut metas), TailMetas::Named(named))
                if metas.len() == base_len && named.len() == self.tail_ids.len() =>
            {
                metas.extend(placed(&order, named));
                Some(Cow::Owned(metas))
            }
            // An old snapshot without metas (a tail on a base is always named).
            _ => None,
        };
        Ok(Covered {
            order: Cow::Owned(order),
            metas,
        })
    }
}

/// The records a fold covers, as a snapshot keeps them.
struct Covered<'a> {
    /// Their ids, in fold order.
    order: Cow<'a, [String]>,
    /// What a snapshot keeps of each, when it is known for every one.
    metas: Option<Cow<'a, [RecordMeta<u32>]>>,
}

pub use crate::state::model::ListTotals;

impl Head {
    /// Whether any write has happened yet.
    pub fn has_state(&self) -> bool {
        self.state.revision > 0
    }

    /// The fields whose value differs in `other` (both read as a write reads: the
    /// observation and evidence lists compared by their totals and ids, not their items).
    pub fn changed_fields_to(&self, other: &Head) -> Vec<ChangedField> {
        let mut changed = changed_fields_between(&self.state, &other.state);
        let ids = |head: &Head, evidence: bool| -> BTreeSet<String> {
            match &head.ids {
                Some(ids) => {
                    let (stored, added) = match evidence {
                        false => (&ids.stored.observations, &ids.observations),
                        true => (&ids.stored.evidence, &ids.evidence),
                    };
                    stored.iter().chain(added).cloned().collect()
                }
                None if evidence => head
                    .state
                    .recent_evidence
                    .iter()
                    .map(|e| e.id.clone())
                    .collect(),
                None => head
                    .state
                    .observations
                    .iter()
                    .map(|o| o.id.clone())
                    .collect(),
            }
        };
        for (field, evidence, totals) in [
            (
                ChangedField::Observations,
                false,
                (self.totals.observations, other.totals.observations),
            ),
            (
                ChangedField::Evidence,
                true,
                (self.totals.evidence, other.totals.evidence),
            ),
        ] {
            let differs = totals.0 != totals.1 || ids(self, evidence) != ids(other, evidence);
            if differs && !changed.contains(&field) {
                changed.push(field);
            }
        }
        changed.sort();
        changed
    }

    /// The fold this head is (what a rollback to it restores).
    pub fn into_folded(self) -> Folded {
        Folded {
            state: self.state,
            anchors: self.anchors,
            writers: self.writers,
            tips: self.tips,
            last_git_head: self.last_git_head,
            metas: Vec::new(),
        }
    }

    /// The head a fold ended in, its lists cut to the newest `lists` when asked.
    fn folded(
        folded: Folded,
        lists: Option<usize>,
        ids: Option<KnownIds>,
        totals: ListTotals,
        read: HeadRead,
    ) -> Head {
        Head {
            state: cut_lists(folded.state, lists),
            anchors: folded.anchors,
            tips: folded.tips,
            last_git_head: folded.last_git_head,
            totals,
            writers: folded.writers,
            ids,
            read,
        }
    }
}

/// What a snapshot can do for the records past its marks.
enum Past {
    /// Every one descends from it: they fold on top of it.
    Descends(SnapshotFile, PastSnapshot),
    /// Some fork from its history instead (a branch git merged in): they can only be placed
    /// among its records ([`Store::head_from_graft`]).
    Forks(SnapshotFile),
}

/// The records past a snapshot's marks.
struct PastSnapshot {
    /// In fold order.
    records: Vec<Record>,
    /// Bytes of their lines (duplicates included).
    bytes: u64,
}

/// Every observation and evidence id: the snapshot's, sorted, and those folded after it.
#[derive(Debug, Clone, Default)]
struct KnownIds {
    stored: StoredIds,
    observations: HashSet<String>,
    evidence: HashSet<String>,
}

impl KnownIds {
    /// The ids of a state whose lists are whole.
    fn whole(state: &State) -> KnownIds {
        KnownIds {
            stored: StoredIds::of(state).owned(),
            ..KnownIds::default()
        }
    }
}

/// Whether the sorted list `ids` holds `id`.
fn sorted_contains(ids: &[String], id: &str) -> bool {
    ids.binary_search_by(|probe| probe.as_str().cmp(id)).is_ok()
}

impl RecordIds for Head {
    fn has_observation(&self, id: &str) -> bool {
        match &self.ids {
            Some(ids) => {
                ids.observations.contains(id) || sorted_contains(&ids.stored.observations, id)
            }
            None => self.state.has_observation(id),
        }
    }

    fn has_evidence(&self, id: &str) -> bool {
        match &self.ids {
            Some(ids) => ids.evidence.contains(id) || sorted_contains(&ids.stored.evidence, id),
            None => self.state.has_evidence(id),
        }
    }
}

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

/// What a write changes, before it is sealed into a record.
#[derive(Debug, Clone)]
pub struct Draft {
    /// Which command writes.
    pub source: Source,
    /// The turn that writes, when named.
    pub turn_id: Option<String>,
    /// The fields it changes.
    pub changed_fields: Vec<ChangedField>,
    /// What it applies.
    pub payload: Payload,
}

/// The body of a write.
#[derive(Debug, Clone)]
pub enum Payload {
    /// A patch, applied to the head.
    Patch(Box<Patch>),
    /// An earlier state: what the rollback record says, and the fold it restores
    /// ([`Store::restored`]).
    Restore {
        /// The record's payload.
        restore: Box<Restore>,
        /// The fold it restores.
        target: Box<Head>,
    },
}

/// How a write behaves.
#[derive(Debug, Clone)]
pub struct WriteOptions {
    /// How long to wait for the lock.
    pub lock_timeout: Duration,
}

/// Where and when a write happens.
#[derive(Debug, Clone)]
pub struct WriteStamp {
    /// RFC 3339 UTC time of the write.
    pub at: String,
    /// The commit checked out, when in git.
    pub git_head: Option<String>,
}

/// A write that landed.
#[derive(Debug)]
pub struct Committed {
    /// The record written.
    pub record: Record,
    /// The revision it produced.
    pub revision: u64,
    /// Things that went wrong after the record was durable (a snapshot that was not written).
    pub warnings: Vec<String>,
}

impl Committed {
    /// What landed, in words: for a report that could not be printed.
    pub fn landed(&self) -> String {
        let id = self.record.id.get(..12).unwrap_or(&self.record.id);
        format!("revision {} is written (record {id})", self.revision)
    }
}

impl Store {
    /// Finds the store: `.epiphany/` in `start` or the nearest parent that has one, as git finds
    /// `.git`, never looking past the root of the repository `start` is in. A `.epiphany/`
    /// that is not a whole store is an error naming it, not a reason to look further up.
    pub fn discover(start: &Path) -> Result<Store> {
        // The work tree's top need not hold `.git` (`GIT_WORK_TREE`, `core.worktree`); git is
        // asked only when the walk has to go past a directory without either.
        let top = std::cell::OnceCell::new();
        for dir in start.ancestors() {
            let candidate = dir.join(STORE_DIR);
            if std::fs::symlink_metadata(&candidate).is_ok() {
                let store = Store {
                    root: dir.to_path_buf(),
                    dir: candidate,
                    snapshot_every: DEFAULT_SNAPSHOT_EVERY,
                };
                store.check_shape()?;
                return Ok(store);
            }
            let at_top = || top.get_or_init(|| git::work_tree_root(start)).as_deref() == Some(dir);
            if dir.join(".git").exists() || at_top() {
                break;
            }
        }
        Err(StoreError::NoStore {
            start: start.to_path_buf(),
        }
        .into())
    }

    fn check_shape(&self) -> Result<()> {
        fs::refuse_symlink(&self.dir)?;
        if !self.dir.is_dir() {
            return Err(StoreError::NotADirectory {
                path: self.dir.clone(),
            }
            .into());
        }
        let rollout = self.rollout_dir();
        for dir in [&rollout, &self.tracked_snapshot_dir()] {
            fs::refuse_symlink(dir)?;
            if !fs::is_dir_or_absent(dir) {
                return Err(StoreError::MisplacedFile { path: dir.clone() }.into());
            }
        }
        // A clone of a store without records has no `rollout/` (git keeps no empty directory),
        // but it has the tracked `.gitattributes`.
        let whole = rollout.is_dir() || self.dir.join(".gitattributes").is_file();
        if !whole && !self.is_legacy() {
            return Err(StoreError::Incomplete {
                dir: self.dir.clone(),
            }
            .into());
        }
        Ok(())
    }

    /// Creates a store in `root`, or opens the one already there. Answers whether it was
    /// created. Creation is atomic: the files are assembled in a temporary directory and
    /// renamed into place; leftovers of an interrupted creation are removed.
    pub fn create(root: &Path) -> Result<(Store, bool)> {
        let dir = root.join(STORE_DIR);
        let store = Store {
            root: root.to_path_buf(),
            dir: dir.clone(),
            snapshot_every: DEFAULT_SNAPSHOT_EVERY,
        };
        remove_stale_staging(root);
        if std::fs::symlink_metadata(&dir).is_ok() {
            store.check_shape()?;
            return Ok((store, false));
        }
        let staging = tempfile::Builder::new()
            .prefix(STAGING_PREFIX)
            .tempdir_in(root)
            .with_context(|| format!("failed to create a directory in `{}`", root.display()))?;
        let stage = staging.path();
        let write = |name: &str, text: &str| {
            std::fs::write(stage.join(name), text)
                .with_context(|| format!("failed to write `{}`", stage.join(name).display()))
        };
        std::fs::create_dir(stage.join(ROLLOUT_DIR))
            .with_context(|| format!("failed to create `{}`", stage.display()))?;
        write(".gitignore", GITIGNORE)?;
        write(".gitattributes", GITATTRIBUTES)?;
        let staged = staging.keep();
        if let Err(err) = std::fs::rename(&staged, &dir) {
            let _ = std::fs::remove_dir_all(&staged);
            if dir.join(ROLLOUT_DIR).is_dir() {
                return Ok((store, false));
            }
            return Err(err).with_context(|| format!("failed to create `{}`", dir.display()));
        }
        fs::sync_dir(root)?;
        Ok((store, true))
    }

    /// The store with another snapshot cadence: records past the newest snapshot after which a
    /// write stores a snapshot and a read remembers its fold.
    pub fn with_snapshot_every(self, snapshot_every: usize) -> Store {
        Store {
            snapshot_every,
            ..self
        }
    }

    /// The directory the store describes (its parent).
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The `.epiphany/` directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Where derived, untracked data lives.
    pub fn cache_dir(&self) -> PathBuf {
        self.dir.join(CACHE_DIR)
    }

    /// The directory of rollout segments.
    pub fn rollout_dir(&self) -> PathBuf {
        self.dir.join(ROLLOUT_DIR)
    }

    /// Where snapshots are cached: `cache/snapshots/`, per clone and never tracked.
    pub fn snapshot_dir(&self) -> PathBuf {
        self.cache_dir().join(SNAPSHOT_DIR)
    }

    /// Where stores written before snapshots left git kept them (tracked); the next write
    /// moves them into the cache.
    fn tracked_snapshot_dir(&self) -> PathBuf {
        self.dir.join(SNAPSHOT_DIR)
    }

    /// The directories whose snapshots reads may start from: `cache/snapshots/` unless
    /// something other than a directory stands on its way (a link: the store never reads,
    /// writes or removes snapshots through one; or a file someone created there: a cache that
    /// cannot be used is only slower), and the tracked `snapshots/` of a store not yet
    /// upgraded.
    pub fn snapshot_dirs(&self) -> Vec<PathBuf> {
        let cached = self.snapshot_dir();
        let usable = [self.cache_dir(), cached.clone()]
            .iter()
            .all(|dir| fs::is_dir_or_absent(dir));
        let tracked = self.tracked_snapshot_dir();
        let mut dirs: Vec<PathBuf> = usable.then_some(cached).into_iter().collect();
        dirs.extend(tracked.is_dir().then_some(tracked));
        dirs
    }

    fn is_legacy(&self) -> bool {
        self.dir.join(LEGACY_ROLLOUT).is_file()
    }

    /// The head, with every record.
    pub fn head(&self) -> Result<Head> {
        self.read_head(Parts::WHOLE, Remember::Fold)
    }

    /// The head with only the newest `count` observations and evidence records decoded (the
    /// totals still count them all): what projections that show a few of them need. Its
    /// [`RecordIds`] answers only for the records it holds.
    pub fn head_with_newest(&self, count: usize) -> Result<Head> {
        self.read_head(
            Parts {
                lists: Some(count),
                ..Parts::WHOLE
            },
            Remember::Fold,
        )
    }

    fn read_head(&self, parts: Parts, remember: Remember) -> Result<Head> {
        self.read_within(parts, remember, None)
    }

    /// The fold of the records `tips` name and every record before them (the state a
    /// rollback to them restores), with what a write needs of it: the core, the graphs and
    /// anchors, and the ids of every observation and evidence record.
    pub fn restored(&self, tips: &[String]) -> Result<Head> {
        self.read_within(WRITE_PARTS, Remember::Not, Some(tips))
    }

    /// The head, or with `within` the fold of the records it names and their ancestors only.
    fn read_within(
        &self,
        parts: Parts,
        remember: Remember,
        within: Option<&[String]>,
    ) -> Result<Head> {
        // A concurrent writer may remove a snapshot between listing and opening it: retry.
        let mut attempt = 0;
        loop {
            match self.try_read_head(parts, remember, within) {
                Err(err) if attempt < 3 && is_not_found(&err) => attempt += 1,
                other => return other,
            }
        }
    }

    fn try_read_head(
        &self,
        parts: Parts,
        remember: Remember,
        within: Option<&[String]>,
    ) -> Result<Head> {
        let legacy = self.is_legacy();
        let mut segments = self.segments()?;
        // An empty rollout reads as the empty state: never when the commit holds records.
        if !legacy && segments.lengths().is_empty() {
            self.check_committed(&segments)?;
        }
        if !legacy {
            let candidates = self.snapshot_candidates()?;
            // Right after a merge the two newest snapshots are the two branches': joining them
            // saves reading the newest one's tail, the whole other branch.
            let join = |segments: &mut Segments, search| match within {
                None => {
                    self.head_from_two_snapshots(segments, &candidates, search, parts, remember)
                }
                Some(_) => Ok(None),
            };
            if let Some(head) = join(&mut segments, 1)? {
                return Ok(head);
            }
            for (at, candidate) in candidates.iter().enumerate() {
                if let Some(head) =
                    self.head_from_snapshot(&mut segments, candidate, parts, remember, within)?
                {
                    return Ok(head);
                }
                // The newest snapshot cannot serve: the other branch's may be further down.
                if at == 0
                    && let Some(head) = join(&mut segments, candidates.len())?
                {
                    return Ok(head);
                }
            }
        }
        if !legacy {
            // Parsed up front so that the segment ends come from the parsed lines.
            for name in segments.lengths().keys().cloned().collect::<Vec<_>>() {
                segments.parse_from(&name, 0)?;
            }
        }
        let ends = segments.ends(&[])?;
        let tail_bytes = segments.lengths().values().sum();
        let history = match legacy {
            true => self.history()?,
            false => segments.into_history()?,
        };
        if let Some(problem) = history.problems.first() {
            return Err(self.corrupt_rollout(problem));
        }
        let records = match within {
            Some(tips) => restricted(history.records, tips),
            None => history.records,
        };
        let mut folded = crate::state::fold::fold_all(&records, true);
        let read = HeadRead {
            base: None,
            tail_ids: records.iter().map(|r| r.id.clone()).collect(),
            tail_metas: TailMetas::Named(std::mem::take(&mut folded.metas)),
            tail_bytes,
            segments: ends,
            legacy,
        };
        let remember = remember == Remember::Fold
            && within.is_none()
            && !legacy
            && read.tail_ids.len() >= self.snapshot_every;
        Ok(self.whole_head(folded, read, parts, remember))
    }

    /// The head of a fold of every record (`read` has no base), its lists cut as `parts` asks
    /// (it always has the graphs and the writers); remembered first when `remember` says so.
    fn whole_head(&self, mut folded: Folded, read: HeadRead, parts: Parts, remember: bool) -> Head {
        if remember && let Ok(covered) = read.covered() {
            self.remember(&mut folded, &covered, &read.segments);
        }
        let totals = ListTotals {
            observations: folded.state.observations.len(),
            evidence: folded.state.recent_evidence.len(),
        };
        let ids = (parts.lists)
            .filter(|_| parts.ids)
            .map(|_| KnownIds::whole(&folded.state));
        Head::folded(folded, parts.lists, ids, totals, read)
    }

    /// The rollout's segments, listed.
    fn segments(&self) -> Result<Segments> {
        Segments::list(&self.rollout_dir())
    }

    /// The snapshots a read may start from, tracked and remembered, newest (most records)
    /// first.
    fn snapshot_candidates(&self) -> Result<Vec<PathBuf>> {
        let mut found = Vec::new();
        for dir in self.snapshot_dirs() {
            found.extend(snapshot_files(&dir)?);
        }
        found.sort_by(|a, b| b.cmp(a));
        Ok(found.into_iter().map(|(_, path)| path).collect())
    }

    /// Caches the fold a read had to compute, so that the next read starts from it instead of
    /// folding the same records again (after a merge or in a fresh clone, every read would
    /// until the next write). Best effort: a cache that cannot be written (a read-only
    /// checkout) costs the next read time, nothing else.
    fn remember(
        &self,
        folded: &mut Folded,
        covered: &Covered,
        segments: &BTreeMap<String, SegmentEnd>,
    ) {
        let _ = self.cache_fold(folded, covered, segments);
    }

    /// Writes `folded`, the fold of the records `covered` names as read up to `segments`, as a
    /// snapshot in `cache/snapshots/` (created below the store, refusing links), then thins the
    /// cache; answers the file's name. A cache: a crash may lose the file or leave it damaged,
    /// and a damaged snapshot is never served, so it is not synced (on a slow disk, a sync can
    /// cost more than the fold).
    fn cache_fold(
        &self,
        folded: &mut Folded,
        covered: &Covered,
        segments: &BTreeMap<String, SegmentEnd>,
    ) -> Result<String> {
        let marks: Vec<RolloutMark> = segments
            .values()
            .filter_map(|end| end.mark.clone())
            .collect();
        let records = covered.order.len() as u64;
        let (name, bytes) = snapshot::encode(snapshot::Contents {
            folded,
            records,
            marks: &marks,
            order: &covered.order,
            metas: covered.metas.as_deref(),
            cached_at: git::settled_checkout(&self.root),
        })?;
        let dir = self.snapshot_dir();
        fs::create_dirs_below(&self.dir, &dir)?;
        fs::replace(&dir.join(&name), &bytes, Durability::Visible)?;
        self.thin_snapshots(&name, records);
        Ok(name)
    }

    /// One snapshot and what it can do for the records past its marks, or `None` when it
    /// cannot serve these segments (damaged, or records it holds are gone).
    fn past_snapshot(
        &self,
        segments: &mut Segments,
        path: &Path,
        within: Option<&[String]>,
    ) -> Result<Option<Past>> {
        let snapshot = match SnapshotFile::open(path) {
            Ok(snapshot) => snapshot,
            Err(err) if is_not_found(&err) => return Err(err),
            Err(_) => return Ok(None),
        };
        let marks: BTreeMap<&str, &RolloutMark> = snapshot
            .header
            .marks
            .iter()
            .map(|m| (m.segment.as_str(), m))
            .collect();
        // Every record the snapshot holds must still be where it says.
        let lengths = segments.lengths().clone();
        let absent = (marks.iter())
            .find(|(name, mark)| lengths.get(**name).is_none_or(|len| *len < mark.end));
        if let Some((name, _)) = absent {
            return self.unless_lost(&snapshot, path, name, segments);
        }
        let start = |name: &str| marks.get(name).map_or(0, |m| m.end);
        for (name, len) in &lengths {
            if *len == start(name) {
                continue;
            }
            if let Some(mark) = marks.get(name.as_str())
                && !segments.mark_holds(mark)?
            {
                return self.unless_lost(&snapshot, path, name, segments);
            }
            if !segments.parse_from(name, start(name))? {
                // Name the line by its number in the whole segment.
                let history = self.history()?;
                let problem = history.problems.first().cloned().unwrap_or(SegmentProblem {
                    segment: name.clone(),
                    problem: LineProblem {
                        line: 0,
                        message: "a line past the newest snapshot is damaged".to_owned(),
                    },
                });
                return Err(self.corrupt_rollout(&problem));
            }
        }
        let tips: BTreeSet<String> = snapshot.header.tips.iter().cloned().collect();
        let (tail, tail_bytes) = segments.records_past(start);
        let tail = match within {
            None => tail,
            Some(within) => match within_tail(tail, within, &tips) {
                Some(kept) => kept,
                None => return Ok(None),
            },
        };
        let in_tail: HashSet<&str> = tail.iter().map(|record| record.id.as_str()).collect();
        // Usable only if every tail record descends from everything the snapshot holds: each
        // tail record whose parents are outside the tail names all the snapshot's heads.
        let usable = tail.iter().all(|record| {
            let inside = record.parents.iter().any(|p| in_tail.contains(p.as_str()));
            inside || tips.iter().all(|tip| record.parents.contains(tip))
        });
        if tail.iter().any(|r| tips.contains(&r.id)) {
            return Ok(None);
        }
        if !usable {
            return Ok(Some(Past::Forks(snapshot)));
        }
        let records = topological(tail.into_iter().cloned().collect());
        Ok(Some(Past::Descends(
            snapshot,
            PastSnapshot {
                records,
                bytes: tail_bytes,
            },
        )))
    }

    /// Refuses a rollout that lacks records the checked-out commit holds: a segment the commit
    /// has that the work tree lacks or holds shorter (a deleted or emptied `rollout/`, a bad
    /// `git rm`, a truncated file). What the work tree adds is fine, and outside git there is
    /// nothing to compare with.
    pub fn check_committed(&self, segments: &Segments) -> Result<()> {
        let Some(committed) = git::committed_files(&self.rollout_dir()) else {
            return Ok(());
        };
        let lengths = segments.lengths();
        let short: Vec<&String> = (committed.iter())
            .filter(|(name, size)| lengths.get(*name).is_none_or(|len| len < size))
            .map(|(name, _)| name)
            .collect();
        let Some(first) = short.first() else {
            return Ok(());
        };
        Err(StoreError::LostRecords {
            rollout: self.rollout_dir(),
            evidence: format!(
                "{} segment(s) the checked-out commit holds are gone or shorter in the work tree (`{first}`{}); `git status .epiphany` shows them",
                short.len(),
                if short.len() > 1 { ", ..." } else { "" }
            ),
        }
        .into())
    }

    /// `None`: the snapshot at `path` cannot serve, because records it holds (up to its mark
    /// in segment `segment`) are not in the rollout. Checking out another commit does that (the
    /// cache belongs to the clone, not to a commit); but while the work tree stands where the
    /// fold was cached (the same commit, HEAD not moved since), nothing git did explains it:
    /// the records were lost (a deleted or truncated segment, dropped lines), and reading on
    /// would serve an older state as if it were the head, and the next write would build on
    /// it. Elsewhere the records the checked-out commit holds must still be there.
    fn unless_lost<T>(
        &self,
        snapshot: &SnapshotFile,
        path: &Path,
        segment: &str,
        segments: &Segments,
    ) -> Result<Option<T>> {
        let at_cached_checkout = snapshot.header.cached_at.is_some()
            && git::settled_checkout(&self.root) == snapshot.header.cached_at;
        if !at_cached_checkout {
            self.check_committed(segments)?;
            return Ok(None);
        }
        let name = path.file_name().unwrap_or_default().to_string_lossy();
        Err(StoreError::LostRecords {
            rollout: self.rollout_dir(),
            evidence: format!(
                "`{segment}` is gone or shorter than when this checkout folded its records (the cached fold `{name}` of {} records, cached where the work tree stands now, holds them)",
                snapshot.header.records
            ),
        }
        .into())
    }

    /// The head read from one snapshot and the lines past its marks, or `None` when the
    /// snapshot cannot serve these segments (damaged, records gone, or concurrent with records
    /// past it). When the records past it are many and not small beside the snapshot, the
    /// snapshot is loaded whole so that the fold can be remembered.
    fn head_from_snapshot(
        &self,
        segments: &mut Segments,
        path: &Path,
        parts: Parts,
        remember: Remember,
        within: Option<&[String]>,
    ) -> Result<Option<Head>> {
        let Parts {
            lists,
            writers,
            ids: want_ids,
            ..
        } = parts;
        let (snapshot, past) = match self.past_snapshot(segments, path, within)? {
            Some(Past::Descends(snapshot, past)) => (snapshot, past),
            Some(Past::Forks(snapshot)) if within.is_none() => {
                return self.head_from_graft(segments, snapshot, parts);
            }
            _ => return Ok(None),
        };
        let PastSnapshot {
            records: ordered,
            bytes: tail_bytes,
        } = past;
        let tips: BTreeSet<String> = snapshot.header.tips.iter().cloned().collect();
        let needs_writers = writers || !is_linear(&tips, &ordered);
        // A rollback restores lists the snapshot's newest items do not tell: the lists are
        // loaded whole, and the fold is remembered so that later reads start past it.
        let restoring = ordered.iter().any(|record| named_tips(record).is_some());
        // The snapshot's size is looked up only for a tail long enough to remember.
        let remembering = within.is_none()
            && (restoring
                || remember == Remember::Fold
                    && (ordered.len() >= self.snapshot_every
                        || tail_bytes >= SNAPSHOT_AFTER_BYTES)
                    && std::fs::metadata(path).is_ok_and(|snapshot| {
                        tail_bytes.saturating_mul(REMEMBER_TAIL_SHARE) >= snapshot.len()
                    }));
        let load = match remembering || restoring {
            true => Parts {
                writers: true,
                ..Parts::WHOLE
            },
            false => Parts {
                writers: needs_writers,
                ..parts
            },
        };
        let loaded = match snapshot.load(load) {
            Ok(loaded) => loaded,
            Err(err) if is_not_found(&err) => return Err(err),
            Err(_) => return Ok(None),
        };
        let (observations, evidence) = snapshot.list_counts()?;
        let before = (
            loaded.state.observations.len(),
            loaded.state.recent_evidence.len(),
        );
        let mut fold = Fold::new(Base {
            state: loaded.state,
            anchors: loaded.anchors,
            writers: loaded.writers,
            records: snapshot.header.records as usize,
            tips: loaded.tips,
            last_git_head: loaded.last_git_head,
        });
        for record in &ordered {
            if let Some(tips) = named_tips(record) {
                let target = self.read_within(Parts::WHOLE, Remember::Not, Some(tips))?;
                fold.provide_target(&record.id, target.into_folded());
            }
            fold.push(record);
        }
        let mut folded = fold.finish();
        let read = HeadRead {
            base: Some(path.to_path_buf()),
            tail_ids: ordered.iter().map(|r| r.id.clone()).collect(),
            tail_metas: TailMetas::Named(std::mem::take(&mut folded.metas)),
            tail_bytes,
            segments: segments.ends(&snapshot.header.marks)?,
            legacy: false,
        };
        if remembering && let Ok(covered) = read.covered() {
            self.remember(&mut folded, &covered, &read.segments);
        }
        let totals = match load.lists {
            // Loaded whole: the lists are the totals.
            None => ListTotals {
                observations: folded.state.observations.len(),
                evidence: folded.state.recent_evidence.len(),
            },
            Some(_) => ListTotals {
                observations: observations as usize + folded.state.observations.len() - before.0,
                evidence: evidence as usize + folded.state.recent_evidence.len() - before.1,
            },
        };
        let ids = match loaded.ids {
            // Loaded in part (so no rollback in the tail): the lists only grew, at the front.
            Some(stored) => Some(KnownIds {
                stored,
                observations: folded.state.observations
                    [..totals.observations - observations as usize]
                    .iter()
                    .map(|o| o.id.clone())
                    .collect(),
                evidence: folded.state.recent_evidence[..totals.evidence - evidence as usize]
                    .iter()
                    .map(|e| e.id.clone())
                    .collect(),
            }),
            // Loaded whole to be remembered: the state holds every id.
            None => lists
                .filter(|_| want_ids)
                .map(|_| KnownIds::whole(&folded.state)),
        };
        Ok(Some(Head::folded(folded, lists, ids, totals, read)))
    }

    /// The head joined from the newest snapshot (`candidates[0]`) and the newest of the next
    /// `search` that holds records it lacks (the other branch of a merge), with the records
    /// past both, or `None` when `state::merge` cannot join them (anything but appends past
    /// the history they share) or either cannot serve these segments. Saves replaying both
    /// branches.
    fn head_from_two_snapshots(
        &self,
        segments: &mut Segments,
        candidates: &[PathBuf],
        search: usize,
        parts: Parts,
        remember: Remember,
    ) -> Result<Option<Head>> {
        let open = |path: &PathBuf| SnapshotFile::open(path).ok();
        let Some(ours) = candidates.first().and_then(open) else {
            return Ok(None);
        };
        let reach: BTreeMap<&str, u64> = (ours.header.marks.iter())
            .map(|mark| (mark.segment.as_str(), mark.end))
            .collect();
        let beyond_ours = |file: &SnapshotFile| {
            (file.header.marks.iter()).any(|mark| {
                reach
                    .get(mark.segment.as_str())
                    .is_none_or(|end| *end < mark.end)
            })
        };
        let Some(theirs) = (candidates.iter().skip(1).take(search))
            .filter_map(open)
            .find(|file| beyond_ours(file))
        else {
            return Ok(None);
        };
        let marks: Vec<RolloutMark> = (ours.header.marks.iter())
            .chain(&theirs.header.marks)
            .cloned()
            .collect();
        for mark in &marks {
            if !segments.mark_holds(mark)? {
                return Ok(None);
            }
        }
        let (Ok(ours_order), Ok(theirs_order)) = (ours.order(), theirs.order()) else {
            return Ok(None);
        };
        let (Ok(Some(ours_metas)), Ok(Some(theirs_metas))) = (ours.metas(), theirs.metas()) else {
            return Ok(None);
        };
        let folded: HashSet<&str> = (ours_order.iter())
            .chain(&theirs_order)
            .map(String::as_str)
            .collect();
        let start = |name: &str| {
            (marks.iter())
                .filter(|mark| mark.segment == name)
                .map(|mark| mark.end)
                .max()
                .unwrap_or(0)
        };
        for (name, len) in &segments.lengths().clone() {
            if *len > start(name) && !segments.parse_from(name, start(name))? {
                // A damaged line: the replay names it.
                return Ok(None);
            }
        }
        let (mut tails, tail_bytes) = segments.records_past(start);
        tails.retain(|record| !folded.contains(record.id.as_str()));
        let whole = Parts {
            writers: true,
            ..Parts::WHOLE
        };
        let lists_only = Parts {
            graphs: false,
            ..Parts::WHOLE
        };
        let (Ok(ours_loaded), Ok(theirs_loaded)) = (ours.load(whole), theirs.load(lists_only))
        else {
            return Ok(None);
        };
        let side = |loaded: snapshot::Loaded, order: Vec<String>, metas| merge::Side {
            folded: loaded.into_folded(),
            order,
            metas,
        };
        let Some(joined) = merge::join(
            side(ours_loaded, ours_order, ours_metas),
            side(theirs_loaded, theirs_order, theirs_metas),
            &tails,
        ) else {
            return Ok(None);
        };
        let read = HeadRead::joined(
            joined.order,
            joined.metas,
            tail_bytes,
            segments.ends(&marks)?,
        );
        let remember = remember == Remember::Fold;
        Ok(Some(self.whole_head(joined.folded, read, parts, remember)))
    }

    /// The head read from the snapshot `ours` (its marks checked and the lines past them
    /// parsed) and the records past it, some of which fork from its history instead of
    /// descending from it: a branch git merged in, of which this clone has no snapshot.
    /// `state::merge::graft` places the branch's records among the snapshot's own, so the
    /// read costs what the merge brought in, and as for any read from a snapshot only the
    /// newest list items are decoded. `None` when they cannot be placed that way (anything but
    /// appends past the fork).
    fn head_from_graft(
        &self,
        segments: &mut Segments,
        ours: SnapshotFile,
        parts: Parts,
    ) -> Result<Option<Head>> {
        let marks = &ours.header.marks;
        let start = |name: &str| {
            (marks.iter())
                .find(|mark| mark.segment == name)
                .map_or(0, |mark| mark.end)
        };
        let (tails, tail_bytes) = segments.records_past(start);
        let (Ok(order), Ok(Some(metas))) = (ours.order(), ours.metas()) else {
            return Ok(None);
        };
        let Some(shared) = merge::fork(&order, &metas, &tails) else {
            return Ok(None);
        };
        let cut = parts.lists.is_some();
        let (Ok(mut loaded), Ok((observations, evidence))) = (ours.load(parts), ours.list_counts())
        else {
            return Ok(None);
        };
        let known = loaded.ids.take();
        // A tail appending an id ours holds folds as a repeat: left to the replay.
        let holds_any = |observations: &[&str], evidence: &[&str]| match &known {
            Some(known) => known.holds_any(observations, evidence),
            None => (ours.holds_any(observations, evidence)).unwrap_or(true),
        };
        let side = merge::Side {
            folded: loaded.into_folded(),
            order,
            metas,
        };
        let cut_lists = cut.then_some(&holds_any as &merge::HoldsAny);
        let Some(joined) = merge::graft(side, shared, &tails, cut_lists) else {
            return Ok(None);
        };
        let read = HeadRead::joined(
            joined.order,
            joined.metas,
            tail_bytes,
            segments.ends(marks)?,
        );
        if !cut {
            return Ok(Some(self.whole_head(joined.folded, read, parts, false)));
        }
        // The join refused repeated ids: the tails' items are new. Their ids are copied only
        // for a read that asked for every id (a write's).
        let patches = || tails.iter().filter_map(|record| record.patch.as_ref());
        let totals = ListTotals {
            observations: observations as usize
                + patches()
                    .map(|patch| patch.observations.len())
                    .sum::<usize>(),
            evidence: evidence as usize
                + patches().map(|patch| patch.evidence.len()).sum::<usize>(),
        };
        let ids = known.map(|stored| KnownIds {
            stored,
            observations: patches()
                .flat_map(|patch| patch.observations.iter().map(|o| o.id.clone()))
                .collect(),
            evidence: patches()
                .flat_map(|patch| patch.evidence.iter().map(|e| e.id.clone()))
                .collect(),
        });
        Ok(Some(Head::folded(
            joined.folded,
            parts.lists,
            ids,
            totals,
            read,
        )))
    }

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
    /// mark and stops once all are found.
    fn records_by_id(
        &self,
        marks: &[RolloutMark],
        ids: &[String],
    ) -> Result<Option<HashMap<String, RecordHead>>> {
        let mut wanted: HashSet<&str> = ids.iter().map(String::as_str).collect();
        let mut found = HashMap::new();
        for mark in marks {
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

    /// Takes the exclusive write lock, waiting as `options` say, and reads the head under it.
    pub fn begin(&self, options: &WriteOptions, scope: WriteScope) -> Result<Transaction<'_>> {
        let lock = self.lock(options.lock_timeout, LockMode::Exclusive)?;
        remove_stale_temporaries(&self.dir);
        remove_stale_temporaries(&self.rollout_dir());
        for dir in self.snapshot_dirs() {
            remove_stale_temporaries(&dir);
        }
        if self.is_legacy() {
            self.upgrade()?;
        } else {
            self.check_committed(&self.segments()?)?;
        }
        // A write checks new observation and evidence ids against the stored ids; it never
        // needs the records themselves.
        let head = self.read_head(
            Parts {
                graphs: scope == WriteScope::Whole,
                ..WRITE_PARTS
            },
            Remember::Not,
        )?;
        Ok(Transaction {
            store: self,
            _lock: lock,
            head,
            scope,
            staged: None,
        })
    }

    /// Replaces every snapshot with one folded from the records alone (under the write lock):
    /// what a damaged or forged snapshot needs. Answers the names of the files removed and
    /// the one written.
    pub fn rebuild_snapshots(
        &self,
        options: &WriteOptions,
    ) -> Result<(Vec<String>, Option<String>)> {
        let _lock = self.lock(options.lock_timeout, LockMode::Exclusive)?;
        // Checked before anything is removed: over a damaged line nothing can be rebuilt, and
        // the snapshots may hold the only other copy of what it said.
        let history = self.sound_history()?;
        let mut removed = Vec::new();
        for path in self.snapshot_candidates()? {
            std::fs::remove_file(&path)
                .with_context(|| format!("failed to remove `{}`", path.display()))?;
            removed.extend(path.file_name().and_then(|n| n.to_str()).map(str::to_owned));
        }
        let written = match history.records.is_empty() {
            true => None,
            false => Some(self.write_snapshot()?),
        };
        Ok((removed, written))
    }

    /// The records and cached snapshots as one consistent set, for a reader that compares
    /// them (`verify`): listed under the shared lock, so no write is half done, and read
    /// without it (each segment up to the length it was listed at), so a long check never
    /// blocks writers. A write that lands meanwhile is left to the next check.
    pub fn listing(&self, timeout: Duration) -> Result<Listing> {
        let lock = self.read_lock(timeout)?;
        let listing = Listing {
            segments: self.segments()?,
            snapshots: self.snapshot_candidates()?,
        };
        drop(lock);
        Ok(listing)
    }

    /// Every record of `listing` in fold order (a first-format store's, converted).
    pub fn history_of(&self, listing: Listing) -> Result<History> {
        match self.is_legacy() {
            true => self.history(),
            false => listing.segments.into_history(),
        }
    }

    /// Takes the lock shared: writers wait until it is released. For readers that compare
    /// several files (`verify`), so that no write lands in between. A store this process may
    /// not write (a read-only checkout or mount, another user's files) is still read: the lock
    /// is taken through a read-only handle, or, when the lock file was never created (no write
    /// has happened in this checkout), not at all.
    pub fn read_lock(&self, timeout: Duration) -> Result<Option<File>> {
        match self.lock(timeout, LockMode::Shared) {
            Err(err) if io_kind(&err).is_some_and(is_unwritable) => {}
            held => return held.map(Some),
        }
        let path = self.dir.join(LOCK_FILE);
        let file = match fs::open_no_follow_read(&path) {
            Err(err) if io_kind(&err) == Some(std::io::ErrorKind::NotFound) => return Ok(None),
            opened => opened?,
        };
        self.hold(file, path, LockMode::Shared, timeout).map(Some)
    }

    fn lock(&self, timeout: Duration, mode: LockMode) -> Result<File> {
        let path = self.dir.join(LOCK_FILE);
        fs::refuse_symlink(&self.dir)?;
        let file = fs::open_no_follow(&path, true)?;
        self.hold(file, path, mode, timeout)
    }

    /// Takes `file`'s lock (the lock file at `path`) in `mode`, waiting up to `timeout`.
    fn hold(&self, file: File, path: PathBuf, mode: LockMode, timeout: Duration) -> Result<File> {
        if fs::lock(&file, &path, mode, timeout)? {
            return Ok(file);
        }
        Err(StoreError::Locked {
            path,
            millis: timeout.as_millis(),
        }
        .into())
    }

    /// Upgrades a store of the first format (under the write lock): its records become one
    /// segment of this format, a snapshot is written, and `rollout.jsonl` and `state.msgpack`
    /// go.
    fn upgrade(&self) -> Result<()> {
        let legacy = self.dir.join(LEGACY_ROLLOUT);
        let (converted, problems) = rollout::convert_first_format(&fs::read(&legacy)?);
        if let Some(problem) = problems.into_iter().next() {
            return Err(self.corrupt_rollout(&SegmentProblem {
                segment: LEGACY_ROLLOUT.to_owned(),
                problem,
            }));
        }
        let dir = self.rollout_dir();
        fs::refuse_symlink(&dir)?;
        std::fs::create_dir_all(&dir)
            .with_context(|| format!("failed to create `{}`", dir.display()))?;
        if let Some((first, _)) = converted.first() {
            let text: String = converted.iter().map(|(_, line)| line.as_str()).collect();
            fs::write_atomic(&dir.join(segment_name(first)), text.as_bytes())?;
        }
        fs::write_atomic(&self.dir.join(".gitattributes"), GITATTRIBUTES.as_bytes())?;
        fs::write_atomic(&self.dir.join(".gitignore"), GITIGNORE.as_bytes())?;
        for old in [LEGACY_ROLLOUT, LEGACY_SNAPSHOT] {
            let path = self.dir.join(old);
            match std::fs::remove_file(&path) {
                Err(err) if err.kind() != std::io::ErrorKind::NotFound => {
                    return Err(err)
                        .with_context(|| format!("failed to remove `{}`", path.display()));
                }
                _ => {}
            }
        }
        if !converted.is_empty() {
            self.write_snapshot()?;
        }
        Ok(())
    }

    /// Brings a store an earlier version wrote to this layout, after a write (so a refused
    /// write changes nothing): this version's `.gitignore` and `.gitattributes`, and snapshots
    /// out of git, moved into the cache and removed from git's index (the user commits their
    /// removal with the record). Answers what went wrong: the record is durable already.
    fn upgrade_layout(&self) -> Vec<String> {
        let mut warnings = Vec::new();
        for (name, text) in [(".gitignore", GITIGNORE), (".gitattributes", GITATTRIBUTES)] {
            let path = self.dir.join(name);
            let current = fs::open_no_follow_read(&path).and_then(|file| {
                let mut bytes = Vec::new();
                (&file)
                    .take(text.len() as u64 + 1)
                    .read_to_end(&mut bytes)
                    .map_err(anyhow::Error::from)
                    .map(|_| bytes)
            });
            if current.ok().as_deref() != Some(text.as_bytes())
                && let Err(err) = fs::write_atomic(&path, text.as_bytes())
            {
                warnings.push(format!("the store's `{name}` was not updated: {err:#}"));
            }
        }
        let tracked = self.tracked_snapshot_dir();
        if fs::refuse_symlink(&tracked).is_err() || !tracked.is_dir() {
            return warnings;
        }
        let moved = fs::create_dirs_below(&self.dir, &self.snapshot_dir()).and_then(|()| {
            for (_, path) in snapshot_files(&tracked)? {
                let cached = self
                    .snapshot_dir()
                    .join(path.file_name().unwrap_or_default());
                if fs::refuse_symlink(&cached).is_ok() && !cached.exists() {
                    std::fs::rename(&path, &cached)
                        .with_context(|| format!("failed to move `{}`", path.display()))?;
                }
            }
            git::untrack(&tracked)?;
            std::fs::remove_dir_all(&tracked)
                .with_context(|| format!("failed to remove `{}`", tracked.display()))
        });
        if let Err(err) = moved {
            warnings.push(format!(
                "the snapshots in `{}` did not all leave git: {err:#}; remove them with `git rm -r --cached {}`",
                tracked.display(),
                tracked.display()
            ));
        }
        warnings
    }

    /// Caches the head as a new snapshot; answers its file name.
    fn write_snapshot(&self) -> Result<String> {
        let head = self.read_head(
            Parts {
                writers: true,
                ..Parts::WHOLE
            },
            Remember::Not,
        )?;
        let read = head.read.clone();
        let covered = read.covered()?;
        self.cache_fold(&mut head.into_folded(), &covered, &read.segments)
    }

    /// Thins the cached snapshots after `written` (of `records` records) was stored. Kept: that
    /// one; the two others written most recently that hold as many records or more (another
    /// branch's, checked out a moment ago); and of those that hold fewer, the one furthest
    /// back at each doubling distance, so that a merge with a branch that forked long ago
    /// still finds a fold from before the fork and folds only what came after it. At most
    /// [`SNAPSHOTS_KEPT`] in all, the nearest first. Best effort, like the cache itself.
    fn thin_snapshots(&self, written: &str, records: u64) {
        let dir = self.snapshot_dir();
        let Ok(found) = snapshot_files(&dir) else {
            return;
        };
        let modified = |path: &Path| {
            std::fs::symlink_metadata(path)
                .and_then(|meta| meta.modified())
                .unwrap_or(std::time::UNIX_EPOCH)
        };
        let (mut later, earlier): (Vec<_>, Vec<_>) = found
            .into_iter()
            .filter(|(_, path)| path.file_name().and_then(|n| n.to_str()) != Some(written))
            .partition(|(count, _)| *count >= records);
        later.sort_by_key(|(_, path)| std::cmp::Reverse(modified(path)));
        let mut removed: Vec<PathBuf> = (later.split_off(later.len().min(2)).into_iter())
            .map(|(_, path)| path)
            .collect();
        // `earlier` is sorted by record count, most first: the last of each bucket is the
        // furthest back.
        let mut kept_earlier: Vec<(u32, PathBuf)> = Vec::new();
        for (count, path) in earlier {
            let bucket = (records - count).ilog2();
            match kept_earlier.last_mut() {
                Some((last, kept)) if *last == bucket => {
                    removed.push(std::mem::replace(kept, path));
                }
                _ => kept_earlier.push((bucket, path)),
            }
        }
        let room = SNAPSHOTS_KEPT.saturating_sub(1 + later.len());
        removed.extend(kept_earlier.into_iter().skip(room).map(|(_, path)| path));
        for path in removed {
            let _ = std::fs::remove_file(path);
        }
    }

    fn corrupt_rollout(&self, problem: &SegmentProblem) -> anyhow::Error {
        StoreError::DamagedRollout {
            segment: self.rollout_dir().join(&problem.segment),
            problem: problem.problem.message.clone(),
        }
        .into()
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

/// Whether a read that folded many records past its snapshot stores the fold for the next
/// read (`cache/snapshots/`). Writes do not: the snapshot they are due is stored in
/// `snapshots/` for every clone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Remember {
    Fold,
    Not,
}

/// The snapshot files in `dir` with the record count their names give, most records first.
fn snapshot_files(dir: &Path) -> Result<Vec<(u64, PathBuf)>> {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(err) => {
            return Err(err).with_context(|| format!("failed to list `{}`", dir.display()));
        }
    };
    let mut found: Vec<(u64, PathBuf)> = entries
        .filter_map(|entry| entry.ok())
        .filter_map(|entry| {
            let name = entry.file_name();
            let count = snapshot::records_in_name(name.to_str()?)?;
            Some((count, entry.path()))
        })
        .collect();
    found.sort_by(|a, b| b.cmp(a));
    Ok(found)
}

/// What a write reads under its lock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WriteScope {
    /// The write may change anything: the head has the graphs and the anchors.
    Whole,
    /// The write adds observations and evidence and upserts graph nodes, which need no
    /// stored graph to be checked (`Patch::needs_stored_graphs`): the graphs and anchors are
    /// not decoded, and the head's graphs are empty.
    Records,
}

/// The one write: the lock, the head read under it, and the record being written.
#[must_use = "a transaction writes nothing until `commit` is called"]
pub struct Transaction<'a> {
    store: &'a Store,
    _lock: File,
    head: Head,
    scope: WriteScope,
    staged: Option<(Record, String)>,
}

impl Transaction<'_> {
    /// The head, read under the lock (after [`Transaction::stage`]: with the staged record).
    /// Its observation and evidence lists hold only what the staged record adds; their ids
    /// are all answered by [`RecordIds`].
    pub fn head(&self) -> &Head {
        &self.head
    }

    /// Seals `draft` on top of the head and folds it in; the head then shows the state the
    /// write would produce. Nothing is written until [`Transaction::commit`].
    pub fn stage(&mut self, draft: Draft, stamp: WriteStamp) {
        let records_only =
            matches!(&draft.payload, Payload::Patch(patch) if !patch.needs_stored_graphs());
        assert!(
            self.scope == WriteScope::Whole || records_only,
            "a write begun without the graphs staged a change that needs them"
        );
        let parents: Vec<String> = self.head.tips.iter().cloned().collect();
        let (patch, restore) = match &draft.payload {
            Payload::Patch(patch) => (Some(patch.as_ref()), None),
            Payload::Restore { restore, .. } => (None, Some(restore.as_ref())),
        };
        let (record, line) = Record::seal(&Body {
            parents: &parents,
            at: &stamp.at,
            source: draft.source,
            turn_id: draft.turn_id.as_deref(),
            git_head: stamp.git_head.as_deref(),
            changed_fields: &draft.changed_fields,
            patch,
            restore,
        });
        let head = &mut self.head;
        let records = head.state.revision as usize;
        let mut fold = Fold::new(Base {
            state: std::mem::take(&mut head.state),
            anchors: std::mem::take(&mut head.anchors),
            writers: None,
            records,
            tips: std::mem::take(&mut head.tips),
            last_git_head: head.last_git_head.take(),
        });
        if let Payload::Restore { target, .. } = draft.payload {
            let mut target = *target;
            head.totals = target.totals;
            head.ids = target.ids.take();
            fold.provide_target(&record.id, target.into_folded());
        }
        fold.push(&record);
        let folded = fold.finish();
        head.state = folded.state;
        head.anchors = folded.anchors;
        head.tips = folded.tips;
        head.last_git_head = folded.last_git_head;
        if let Some(ids) = &mut head.ids {
            ids.observations
                .extend(head.state.observations.iter().map(|o| o.id.clone()));
            ids.evidence
                .extend(head.state.recent_evidence.iter().map(|e| e.id.clone()));
        }
        self.staged = Some((record, line));
    }

    /// Makes the staged record durable, then writes a snapshot when one is due. Fails, leaving
    /// nothing behind, when the record could not be made durable.
    pub fn commit(mut self) -> Result<Committed> {
        let (record, line) = self
            .staged
            .take()
            .expect("commit is only called after stage; nothing was written");
        let store = self.store;
        let dir = store.rollout_dir();
        fs::refuse_symlink(&dir)?;
        let git_head = record.git_head.as_deref();
        let open = self.open_segment(git_head);
        cut_torn_tails(&dir, &self.head.read.segments)?;
        let mut warnings = Vec::new();
        let name = match open {
            Some((name, complete)) => {
                append_line(&dir.join(name), complete, &line)?;
                name.to_owned()
            }
            None => {
                std::fs::create_dir_all(&dir)
                    .with_context(|| format!("failed to create `{}`", dir.display()))?;
                let name = segment_name(&record);
                let path = dir.join(&name);
                if let Err(err) = fs::write_atomic(&path, line.as_bytes()) {
                    // The rename may have made the record visible before the directory sync
                    // failed: a refused write takes it back; one that cannot be taken back
                    // landed, and says so.
                    match std::fs::symlink_metadata(&path) {
                        Ok(_) if std::fs::remove_file(&path).is_err() => warnings.push(format!(
                            "the write is saved, but it may not survive a crash: {err:#}"
                        )),
                        _ => return Err(err),
                    }
                }
                name
            }
        };
        store.note_open_segment(&name, git_head);
        warnings.extend(store.upgrade_layout());
        let due = self.head.read.legacy
            || self.head.read.tail_ids.len() + 1 >= store.snapshot_every
            || self.head.read.tail_bytes + line.len() as u64 >= SNAPSHOT_AFTER_BYTES;
        if due && let Err(err) = store.write_snapshot() {
            warnings.push(format!(
                "the write is saved, but a new snapshot was not: {err:#}; readers replay the rollout until the next write stores one"
            ));
        }
        Ok(Committed {
            revision: self.head.state.revision,
            record,
            warnings,
        })
    }

    /// The segment this write may append to: the one this working copy last wrote, while no
    /// commit can hold it yet and the file is the one it wrote (git replaces a file it checks
    /// out, restores or merges). No commit holds it while the commit it was started at is
    /// still checked out and HEAD has not moved since (git logs every move in `logs/HEAD`, so
    /// a `commit` then `reset --soft` or `--mixed` back to that commit, or an `--amend`, is
    /// seen). Any other segment may exist elsewhere too: a committed one, or another branch's
    /// that `git merge --squash`, `cherry-pick -n` or `checkout <branch> -- .epiphany/` brought
    /// back; appending to it would make two versions of one file, which a later merge would
    /// have to join (the `union` attribute does, but no conflict is better).
    fn open_segment(&self, git_head: Option<&str>) -> Option<(&str, u64)> {
        let note = self.store.open_segment_note()?;
        let (name, end) = self.head.read.segments.get_key_value(&note.segment)?;
        let file = FileStamp::of(&self.store.rollout_dir().join(name))?;
        let unmoved = note.git_head.as_deref() == git_head
            && note.head_log == git::head_log_len(&self.store.root);
        (unmoved && file.continues(&note.file, end.complete))
            .then_some((name.as_str(), end.complete))
    }
}

/// The segment a working copy appends to, noted in `cache/` (never tracked): its name, the
/// commit checked out when it was started, and the file as the last write left it.
#[derive(Debug, Serialize, Deserialize)]
struct OpenSegmentNote {
    /// The segment's file name.
    segment: String,
    /// The commit checked out when the segment was started (none outside git or before the
    /// first commit).
    git_head: Option<String>,
    /// How long git's log of HEAD's moves was after the last write (none outside git).
    #[serde(default)]
    head_log: Option<u64>,
    /// The store directory the note was written in: a copied working copy does not append
    /// to the original's segment.
    store: PathBuf,
    /// The segment file after the last write.
    file: FileStamp,
}

/// What tells one file from another that replaced it under the same name: its inode, length
/// and modification time (the stat data git itself compares).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct FileStamp {
    inode: u64,
    len: u64,
    modified_ns: u128,
}

impl FileStamp {
    /// Whether this is the file `noted` stamped, as a write left it (ending at `complete`), or
    /// with a torn line after it (an interrupted write changes the length and time).
    fn continues(&self, noted: &FileStamp, complete: u64) -> bool {
        self.inode == noted.inode
            && noted.len == complete
            && (self.len > complete || self.modified_ns == noted.modified_ns)
    }

    /// The stamp of the file at `path`, when it can be read.
    fn of(path: &Path) -> Option<FileStamp> {
        let meta = std::fs::symlink_metadata(path).ok()?;
        #[cfg(unix)]
        let inode = std::os::unix::fs::MetadataExt::ino(&meta);
        #[cfg(not(unix))]
        let inode = 0;
        let modified_ns = meta
            .modified()
            .ok()?
            .duration_since(std::time::UNIX_EPOCH)
            .ok()?
            .as_nanos();
        Some(FileStamp {
            inode,
            len: meta.len(),
            modified_ns,
        })
    }
}

impl Store {
    /// The store directory with links and `..` resolved: the same however it was reached.
    fn canonical_dir(&self) -> PathBuf {
        self.dir.canonicalize().unwrap_or_else(|_| self.dir.clone())
    }

    /// Where the writer notes the segment it appends to.
    fn open_segment_path(&self) -> PathBuf {
        self.cache_dir().join(OPEN_SEGMENT_NOTE)
    }

    /// The open segment this working copy noted, when the note is its own.
    fn open_segment_note(&self) -> Option<OpenSegmentNote> {
        let bytes = fs::read_below(
            &self.dir,
            &self.open_segment_path(),
            OPEN_SEGMENT_NOTE_LIMIT,
        )
        .ok()??;
        let note: OpenSegmentNote = serde_json::from_slice(&bytes).ok()?;
        (note.store == self.canonical_dir()).then_some(note)
    }

    /// Notes that this working copy wrote segment `name`, started at commit `git_head`. Best
    /// effort: without the note the next write starts another segment, which costs a file,
    /// nothing else.
    fn note_open_segment(&self, name: &str, git_head: Option<&str>) {
        let Some(file) = FileStamp::of(&self.rollout_dir().join(name)) else {
            return;
        };
        let note = OpenSegmentNote {
            segment: name.to_owned(),
            git_head: git_head.map(str::to_owned),
            head_log: git::head_log_len(&self.root),
            store: self.canonical_dir(),
            file,
        };
        let Ok(bytes) = serde_json::to_vec(&note) else {
            return;
        };
        if fs::create_dirs_below(&self.dir, &self.cache_dir()).is_ok() {
            let _ = fs::replace(&self.open_segment_path(), &bytes, Durability::Visible);
        }
    }
}

/// The file name of a new segment that starts with `record`: its time, its id, then a random
/// part, so that names sort by when segments were started and two working copies that write
/// the same first record (the same patch on the same parents in the same second) still start
/// two files.
fn segment_name(record: &Record) -> String {
    let stamp: String = record
        .at
        .chars()
        .filter(|c| c.is_ascii_alphanumeric())
        .collect();
    // Each process seeds its hasher keys from the operating system's randomness.
    let writer = std::collections::hash_map::RandomState::new().hash_one(&record.id);
    format!(
        "{stamp}-{}-{:08x}{SEGMENT_SUFFIX}",
        &record.id[..16],
        writer as u32
    )
}

/// Cuts every segment back to its last complete line: a torn line is what an interrupted write
/// left, never a record, and every clone cuts the same bytes (so git merges the cuts).
fn cut_torn_tails(dir: &Path, segments: &BTreeMap<String, SegmentEnd>) -> Result<()> {
    for (name, end) in segments {
        let path = dir.join(name);
        let torn = std::fs::symlink_metadata(&path).is_ok_and(|meta| meta.len() > end.complete);
        if torn {
            let file = fs::open_no_follow(&path, false)?;
            file.set_len(end.complete)
                .and_then(|_| file.sync_data())
                .with_context(|| format!("failed to cut the torn line off `{}`", path.display()))?;
        }
    }
    Ok(())
}

/// Appends `line` to the segment at `path` whose complete lines end at `complete`, cutting off
/// a torn line an interrupted writer left; on failure the segment is cut back.
fn append_line(path: &Path, complete: u64, line: &str) -> Result<()> {
    let mut file = fs::open_no_follow(path, false)?;
    let context = || format!("failed to append to `{}`", path.display());
    file.set_len(complete).with_context(context)?;
    let appended = file
        .seek(SeekFrom::End(0))
        .and_then(|_| file.write_all(line.as_bytes()))
        .and_then(|_| file.sync_data());
    if let Err(err) = appended {
        // Leave no partial line for readers to trip on.
        let _ = file.set_len(complete);
        let _ = file.sync_data();
        return Err(err).with_context(context);
    }
    Ok(())
}

/// Removes temporary files (`.tmp-*`) a killed writer left in `dir`.
fn remove_stale_temporaries(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.filter_map(|e| e.ok()) {
        let stale = entry
            .file_name()
            .to_str()
            .is_some_and(|name| name.starts_with(".tmp-"));
        if stale {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

/// The heads of the records a rollback record restores, when it names them.
fn named_tips(record: &Record) -> Option<&[String]> {
    record
        .restore
        .as_ref()
        .and_then(|restore| restore.named_tips())
}

/// Of `tail` (the records past a snapshot whose heads are `snapshot_tips`), the ones `within`
/// names and their ancestors, in order; `None` when those do not include every record the
/// snapshot holds (a head of it is among them, or a parent of one of them: a head has no
/// descendant inside the snapshot, so a path from `within` to it leaves the tail right there).
fn within_tail<'r>(
    tail: Vec<&'r Record>,
    within: &[String],
    snapshot_tips: &BTreeSet<String>,
) -> Option<Vec<&'r Record>> {
    let by_id: HashMap<&str, &Record> = tail.iter().map(|r| (r.id.as_str(), *r)).collect();
    let mut kept: HashSet<&str> = HashSet::default();
    let mut reached: HashSet<&str> = HashSet::default();
    let mut stack: Vec<&str> = within.iter().map(String::as_str).collect();
    while let Some(id) = stack.pop() {
        match by_id.get(id) {
            Some(record) if kept.insert(id) => {
                stack.extend(record.parents.iter().map(String::as_str));
            }
            Some(_) => {}
            None => {
                reached.insert(id);
            }
        }
    }
    snapshot_tips
        .iter()
        .all(|tip| reached.contains(tip.as_str()))
        .then(|| {
            tail.into_iter()
                .filter(|r| kept.contains(r.id.as_str()))
                .collect()
        })
}

/// Of `records` (in fold order), the ones `tips` name and their ancestors, in order.
fn restricted(records: Vec<Record>, tips: &[String]) -> Vec<Record> {
    let by_id: HashMap<&str, &Record> = records.iter().map(|r| (r.id.as_str(), r)).collect();
    let mut kept: HashSet<String> = HashSet::default();
    let mut stack: Vec<&str> = tips.iter().map(String::as_str).collect();
    while let Some(id) = stack.pop() {
        if let Some(record) = by_id.get(id)
            && kept.insert(id.to_owned())
        {
            stack.extend(record.parents.iter().map(String::as_str));
        }
    }
    drop(by_id);
    records
        .into_iter()
        .filter(|r| kept.contains(&r.id))
        .collect()
}

/// Whether every record (in fold order) names all heads before it as parents.
fn is_linear(base_tips: &BTreeSet<String>, ordered: &[Record]) -> bool {
    let mut tips = base_tips.clone();
    for record in ordered {
        if !tips.iter().all(|tip| record.parents.contains(tip)) {
            return false;
        }
        for parent in &record.parents {
            tips.remove(parent);
        }
        tips.insert(record.id.clone());
    }
    true
}

/// Keeps only the newest `count` observations and evidence records, when asked to.
fn cut_lists(mut state: State, lists: Option<usize>) -> State {
    if let Some(count) = lists {
        state.observations.truncate(count);
        state.recent_evidence.truncate(count);
    }
    state
}

fn is_not_found(err: &anyhow::Error) -> bool {
    io_kind(err) == Some(std::io::ErrorKind::NotFound)
}

/// The kind of the I/O error behind `err`, if one is.
fn io_kind(err: &anyhow::Error) -> Option<std::io::ErrorKind> {
    err.chain()
        .find_map(|cause| cause.downcast_ref::<std::io::Error>())
        .map(std::io::Error::kind)
}

/// Whether an error opening a file for writing says this process may not write there.
fn is_unwritable(kind: std::io::ErrorKind) -> bool {
    matches!(
        kind,
        std::io::ErrorKind::PermissionDenied | std::io::ErrorKind::ReadOnlyFilesystem
    )
}

/// Removes `.epiphany-init-*` directories left by an interrupted `init`.
fn remove_stale_staging(root: &Path) {
    let Ok(entries) = std::fs::read_dir(root) else {
        return;
    };
    for entry in entries.filter_map(|e| e.ok()) {
        let name = entry.file_name();
        let stale = name.to_str().is_some_and(|n| n.starts_with(STAGING_PREFIX))
            && entry.file_type().is_ok_and(|t| t.is_dir());
        if stale {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
