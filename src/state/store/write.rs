//! The one locked, crash-safe write: a transaction reads the head, the caller stages one
//! draft, and commit seals the record and makes its line durable, appending only to a segment
//! no commit can hold yet (noted in `cache/open-segment.json`), else starting a new one.

use std::collections::BTreeMap;
use std::fs::File;
use std::hash::BuildHasher;
use std::io::Seek;
use std::io::SeekFrom;
use std::io::Write;
use std::path::Path;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;
use anyhow::Result;
use serde::Deserialize;
use serde::Serialize;

use crate::state::fields::ChangedField;
use crate::state::fold::Fold;
use crate::state::fold::Folded;
use crate::state::fs;
use crate::state::fs::Durability;
use crate::state::fs::LockMode;
use crate::state::git;
use crate::state::identity::Stamp;
use crate::state::patch::Patch;
use crate::state::rollout::Body;
use crate::state::rollout::Record;
use crate::state::rollout::Restore;
use crate::state::rollout::Source;
use crate::state::segments::SEGMENT_SUFFIX;
use crate::state::segments::SegmentEnd;
use crate::state::snapshot::Parts;

use super::SNAPSHOT_AFTER_BYTES;
use super::Store;
use super::WRITE_PARTS;
use super::maintenance::remove_stale_temporaries;
use super::read::Head;
use super::read::Remember;

/// The most of the open-segment note that is read: one segment name, a commit and a path.
const OPEN_SEGMENT_NOTE_LIMIT: u64 = 64 * 1024;

/// The writer's note of the segment it appends to, in `cache/`.
const OPEN_SEGMENT_NOTE: &str = "open-segment.json";

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
    /// RFC 3339 UTC time of the write.
    pub at: String,
    /// The commit checked out, when in git.
    pub git_head: Option<String>,
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
    /// Takes the exclusive write lock, waiting at most `lock_timeout`, and reads the head under
    /// it.
    pub fn begin(&self, lock_timeout: Duration, scope: WriteScope) -> Result<Transaction<'_>> {
        let lock = self.lock(lock_timeout, LockMode::Exclusive)?;
        remove_stale_temporaries(&self.dir);
        for dir in self.snapshot_dirs() {
            remove_stale_temporaries(&dir);
        }
        let listed = match self.is_legacy() {
            true => {
                self.upgrade()?;
                None
            }
            false => {
                let segments = self.listed_segments()?;
                segments.remove_temporaries();
                self.check_committed_now(&segments)?;
                Some(segments)
            }
        };
        let stamp = match &listed {
            Some(segments) => (segments.identities()).for_write(!segments.lengths().is_empty()),
            // Converted from the first format, which holds its records.
            None => Stamp::None,
        };
        // A write checks new observation and evidence ids against the stored ids; it never
        // needs the records themselves.
        let parts = Parts {
            graphs: scope == WriteScope::Whole,
            ..WRITE_PARTS
        };
        let head = self.read_listed(listed, parts, Remember::Not, None)?;
        Ok(Transaction {
            store: self,
            _lock: lock,
            head,
            scope,
            stamp,
        })
    }
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
    /// The identity the record claims.
    stamp: Stamp,
}

/// A transaction with its one record sealed and folded into the head, not yet durable.
#[must_use = "a staged record is written only by `commit`"]
pub struct Staged<'a> {
    tx: Transaction<'a>,
    record: Record,
    line: String,
}

impl<'a> Transaction<'a> {
    /// The head, read under the lock. Its observation and evidence lists hold only their
    /// newest items; their ids are all answered by [`RecordIds`].
    ///
    /// [`RecordIds`]: crate::state::model::RecordIds
    pub fn head(&self) -> &Head {
        &self.head
    }

    /// Seals `draft` on top of the head and folds it in: the staged head shows the state the
    /// write would produce. Nothing is written until [`Staged::commit`].
    pub fn stage(mut self, draft: Draft) -> Staged<'a> {
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
            store: self.stamp.claim(),
            parents: &parents,
            at: &draft.at,
            source: draft.source,
            turn_id: draft.turn_id.as_deref(),
            git_head: draft.git_head.as_deref(),
            changed_fields: &draft.changed_fields,
            patch,
            restore,
        });
        let head = &mut self.head;
        let records = head.state.revision as usize;
        let base = Folded {
            state: std::mem::take(&mut head.state),
            anchors: std::mem::take(&mut head.anchors),
            tips: std::mem::take(&mut head.tips),
            last_git_head: head.last_git_head.take(),
            ..Folded::default()
        };
        let mut fold = Fold::new(base, records);
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
        Staged {
            tx: self,
            record,
            line,
        }
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

impl Staged<'_> {
    /// The head with the staged record folded in. Its observation and evidence lists hold only
    /// what the staged record adds; their ids are all answered by [`RecordIds`].
    ///
    /// [`RecordIds`]: crate::state::model::RecordIds
    pub fn head(&self) -> &Head {
        &self.tx.head
    }

    /// Makes the staged record durable, then writes a snapshot when one is due. Fails, leaving
    /// nothing behind, when the record could not be made durable.
    pub fn commit(self) -> Result<Committed> {
        let Staged { tx, record, line } = self;
        let store = tx.store;
        let dir = store.rollout_dir();
        fs::refuse_symlink(&dir)?;
        let git_head = record.git_head.as_deref();
        let open = tx.open_segment(git_head);
        cut_torn_tails(&dir, &tx.head.read.segments)?;
        fs::create_dirs(&dir)?;
        tx.stamp.write_minted(&dir)?;
        let mut warnings = Vec::new();
        let name = match open {
            Some((name, complete)) => {
                append_line(&dir.join(name), complete, &line)?;
                name.to_owned()
            }
            None => {
                let name = segment_name(&record);
                let path = dir.join(&name);
                if let Err(err) = fs::write_atomic(&path, line.as_bytes()) {
                    // The rename may have made the record visible before the directory sync
                    // failed: a refused write takes it back; one that cannot be taken back
                    // landed, and says so.
                    match fs::is_present(&path) {
                        true if fs::remove_file(&path).is_err() => warnings.push(format!(
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
        let due = tx.head.read.legacy
            || tx.head.read.tail_ids.len() + 1 >= store.snapshot_every
            || tx.head.read.tail_bytes + line.len() as u64 >= SNAPSHOT_AFTER_BYTES;
        if due && let Err(err) = store.write_snapshot() {
            warnings.push(format!(
                "the write is saved, but a new snapshot was not: {err:#}; readers replay the rollout until the next write stores one"
            ));
        }
        Ok(Committed {
            revision: tx.head.state.revision,
            record,
            warnings,
        })
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
        let meta = fs::metadata_no_follow(path)?;
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
pub(super) fn segment_name(record: &Record) -> String {
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
/// left, never a record, and every clone cuts the same bytes (so git merges the cuts). The
/// segments were listed under the write lock: their listed lengths are their lengths.
fn cut_torn_tails(dir: &Path, segments: &BTreeMap<String, SegmentEnd>) -> Result<()> {
    for (name, end) in segments {
        if end.listed > end.complete {
            let path = dir.join(name);
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
