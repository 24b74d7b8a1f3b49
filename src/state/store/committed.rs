//! Records the checked-out commit holds must be in the rollout (docs/store.md#lost-records):
//! every segment HEAD's commit has, the work tree must hold at least as long. What the work
//! tree adds (records not yet committed, a merge's union) is fine, and outside git, on a
//! branch from before `init` or before the first commit there is nothing to compare with.
//!
//! Every read and every write checks it, so it must cost next to nothing. What the commit
//! holds is found once per [`Store`]: the id of HEAD's `rollout/` tree (a few object reads),
//! and, only when that tree is not the one last measured, which `cache/committed-rollout.msgpack`
//! remembers, the sizes of the segments whose blobs it did not measure (a size costs an object
//! lookup; a commit adds a segment or two). Comparing them with the lengths a read lists
//! anyway is free. A committed segment that a listed compacted segment holds whole
//! (`state::compaction`) is no loss: the compaction is not committed yet.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::PoisonError;

use anyhow::Result;

use crate::state::compaction::read_manifests;
use crate::state::error::StoreError;
use crate::state::fs;
use crate::state::fs::Durability;
use crate::state::git;
use crate::state::git::CommittedFiles;
use crate::state::segments::SEGMENT_SUFFIX;
use crate::state::segments::Segments;

use super::ROLLOUT_DIR;
use super::STORE_DIR;
use super::Store;

/// The note of what HEAD's `rollout/` tree was last found to hold, in `cache/`: MessagePack,
/// which a read decodes in a fraction of the time JSON took (a name, a blob id and a size per
/// committed segment, thousands after a year of commits).
const COMMITTED_NOTE: &str = "committed-rollout.msgpack";

/// The most of the note that is read: a name and a size per committed segment.
const COMMITTED_NOTE_LIMIT: u64 = 16 * 1024 * 1024;

/// How many of the segments it lacks a refusal names.
const NAMED: usize = 3;

/// What HEAD's commit holds in `rollout/`, once looked up: `None` until then, `Some(None)`
/// when there is nothing to compare with. Clones of a store share it.
#[derive(Debug, Clone, Default)]
pub(super) struct CommittedMemo(Arc<Mutex<Option<Option<Arc<CommittedFiles>>>>>);

impl CommittedMemo {
    fn get_or(&self, look: impl FnOnce() -> Option<CommittedFiles>) -> Option<Arc<CommittedFiles>> {
        let mut memo = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        memo.get_or_insert_with(|| look().map(Arc::new)).clone()
    }

    fn set(&self, committed: Option<Arc<CommittedFiles>>) {
        *self.0.lock().unwrap_or_else(PoisonError::into_inner) = Some(committed);
    }
}

impl Store {
    /// Refuses a rollout that lacks records the checked-out commit holds (see the module docs):
    /// what `segments` lists against what HEAD's commit holds, looked up once per store.
    pub fn check_committed(&self, segments: &Segments) -> Result<()> {
        match self.committed.get_or(|| self.committed_segments()) {
            Some(committed) => self.compare_committed(&committed, segments),
            None => Ok(()),
        }
    }

    /// [`Store::check_committed`] looked up again, as a writer does under its lock: the commit
    /// checked out may have moved since this store first asked. Later checks compare with
    /// this answer.
    pub(super) fn check_committed_now(&self, segments: &Segments) -> Result<()> {
        let committed = self.committed_segments().map(Arc::new);
        self.committed.set(committed.clone());
        match committed {
            Some(committed) => self.compare_committed(&committed, segments),
            None => Ok(()),
        }
    }

    /// What HEAD's commit holds in `rollout/`, with the sizes from the note in `cache/` when
    /// its tree is the one noted; a new measure is noted, best effort (a read-only checkout
    /// measures again next time).
    fn committed_segments(&self) -> Option<CommittedFiles> {
        let path = self.cache_dir().join(COMMITTED_NOTE);
        let noted: Option<CommittedFiles> = fs::read_below(&self.dir, &path, COMMITTED_NOTE_LIMIT)
            .ok()
            .flatten()
            .and_then(|bytes| rmp_serde::from_slice(&bytes).ok());
        let noted_tree = noted.as_ref().map(|noted| noted.tree.clone());
        let mut committed = git::committed_files(&self.rollout_dir(), noted)?;
        // The segments, not the identity file beside them (`state::identity`).
        (committed.files).retain(|name, _| name.ends_with(SEGMENT_SUFFIX));
        if noted_tree.is_none_or(|tree| tree != committed.tree)
            && let Ok(bytes) = rmp_serde::to_vec_named(&committed)
        {
            let _ = fs::create_dirs_below(&self.dir, &self.cache_dir())
                .and_then(|()| fs::replace(&path, &bytes, Durability::Visible));
        }
        Some(committed)
    }

    /// How many segment files HEAD's commit holds (0 outside git and before the first commit).
    pub fn committed_segment_count(&self) -> usize {
        self.committed_files()
            .map_or(0, |committed| committed.files.len())
    }

    /// What HEAD's commit holds in `rollout/`, as last looked up (`None` outside git, before
    /// the first commit, or on a branch from before `init`).
    pub(super) fn committed_files(&self) -> Option<Arc<CommittedFiles>> {
        self.committed.get_or(|| self.committed_segments())
    }

    fn compare_committed(&self, committed: &CommittedFiles, segments: &Segments) -> Result<()> {
        let lengths = segments.lengths();
        let mut lacking: Vec<(&String, String)> = (committed.files.iter())
            .filter_map(|(name, file)| match lengths.get(name) {
                None => Some((name, format!("`{name}` is gone"))),
                Some(len) if *len < file.size => Some((
                    name,
                    format!("`{name}` holds {len} of its {} committed bytes", file.size),
                )),
                Some(_) => None,
            })
            .collect();
        if lacking.is_empty() {
            return Ok(());
        }
        // A segment compacted since the commit is no loss: a listed compacted segment holds
        // all of it (read only now, when something is lacking).
        let compacted: BTreeMap<String, u64> = read_manifests(&self.rollout_dir(), lengths)
            .into_iter()
            .flat_map(|compacted| compacted.parts)
            .map(|part| (part.name, part.bytes))
            .collect();
        lacking.retain(|(name, _)| {
            lengths.contains_key(*name)
                || compacted.get(*name).copied() != committed.files.get(*name).map(|f| f.size)
        });
        if lacking.is_empty() {
            return Ok(());
        }
        let rollout = format!("{STORE_DIR}/{ROLLOUT_DIR}");
        let mut named = (lacking.iter().take(NAMED))
            .map(|(_, what)| what.as_str())
            .collect::<Vec<_>>()
            .join(", ");
        let restore = match lacking.len() > NAMED {
            true => {
                named.push_str(&format!(", and {} more", lacking.len() - NAMED));
                rollout
            }
            false => (lacking.iter())
                .map(|(name, _)| format!("{rollout}/{name}"))
                .collect::<Vec<_>>()
                .join(" "),
        };
        Err(StoreError::LostRecords {
            rollout: self.rollout_dir(),
            evidence: format!(
                "the checked-out commit holds records the work tree lacks: {named}; from the top of the work tree, `git checkout HEAD -- {restore}` restores them"
            ),
        }
        .into())
    }
}
