//! Compacting committed segments (docs/store.md#compaction): the segments HEAD's commit holds,
//! as committed, become one segment, their bytes end to end in name order, beside a manifest
//! that names them; the parts are removed, and the cached folds are moved onto the new segment
//! so no read folds anew. Nothing is committed: the user commits the change like any write.
//!
//! Why git merges it safely: a compaction only removes files no branch changes again (a
//! committed segment is never appended to) and adds files whose names no other compaction of
//! other parts takes. A branch that did not compact keeps its parts; merged, the records are
//! in both files, and a record twice is one record. Two clones that compact the same parts
//! write the same bytes under the same name, so git sees one file added twice. And no part
//! makes up more than 40 % of what it is joined into (`compaction::select_parts`), so git never
//! takes a compaction for a rename of one part, which a merge with another branch's
//! compaction of it would stop on.

use std::path::Path;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::Result;
use anyhow::bail;
use sha2::Digest;
use sha2::Sha256;

use crate::state::compaction::Compacted;
use crate::state::compaction::Part;
use crate::state::compaction::manifest_name;
use crate::state::compaction::remap_marks;
use crate::state::compaction::select_parts;
use crate::state::fs;
use crate::state::fs::Durability;
use crate::state::fs::LockMode;
use crate::state::git::CommittedFiles;
use crate::state::segments::SEGMENT_SUFFIX;
use crate::state::segments::Segments;
use crate::state::snapshot::RolloutMark;
use crate::state::snapshot::SnapshotFile;

use super::Store;

/// Why nothing is compacted where no commit holds the rollout.
const NO_COMMIT: &str = "no commit holds the rollout (outside git, before the first commit, or on a branch from before `init`): a compaction takes only committed segments";

/// Why nothing is compacted when too few segments could be.
const TOO_FEW: &str = "fewer than two committed segments can be compacted";

/// Why a segment that would make up too much of the compacted one is left out.
const OUTWEIGHS: &str = "it would make up more than 40 % of the compacted segment, which git would take for a rename of it";

/// The most one part may hold (git's own limit for a file it diffs is far below).
const PART_LIMIT: u64 = 1 << 30;

/// A committed segment a compaction may join, and its bytes.
struct Candidate {
    name: String,
    content: Vec<u8>,
}

/// Segments a compaction leaves as they are, each with why.
pub type Left = Vec<(String, &'static str)>;

/// What a compaction did, or would do.
#[derive(Debug, Clone)]
pub struct Compaction {
    /// The compacted segment and its parts; `None` when fewer than two committed segments
    /// could be compacted.
    pub compacted: Option<Compacted>,
    /// Why nothing was compacted, when nothing was.
    pub nothing: Option<&'static str>,
    /// Records (lines) it holds.
    pub records: u64,
    /// Committed segments left as they are, each with why.
    pub left: Left,
    /// Cached folds moved onto the compacted segment.
    pub snapshots_moved: usize,
    /// Cached folds removed: they held only part of what was compacted.
    pub snapshots_removed: usize,
}

impl Store {
    /// Compacts the committed segments (under the write lock); with `dry_run`, only says what
    /// it would do. Nothing is compacted outside git or before the first commit (no commit
    /// holds a segment); refused over a rollout that a read would refuse (records lost or
    /// damaged, or another store's).
    pub fn compact(&self, lock_timeout: Duration, dry_run: bool) -> Result<Compaction> {
        let _lock = self.lock(lock_timeout, LockMode::Exclusive)?;
        if self.is_legacy() {
            bail!(
                "this store is in the first format; any write brings it up to date, then compact it"
            );
        }
        let segments = self.listed_segments()?;
        self.check_committed_now(&segments)?;
        let mut compaction = Compaction {
            compacted: None,
            nothing: None,
            records: 0,
            left: Vec::new(),
            snapshots_moved: 0,
            snapshots_removed: 0,
        };
        let Some(committed) = self.committed_files() else {
            compaction.nothing = Some(NO_COMMIT);
            return Ok(compaction);
        };
        // Every line sound and the store's own: a compaction copies bytes, never damage.
        self.sound_history()?;
        let (candidates, mut left) = self.compactable(&committed, &segments)?;
        let sizes: Vec<u64> = (candidates.iter())
            .map(|candidate| candidate.content.len() as u64)
            .collect();
        let (kept, too_large) = select_parts(&sizes);
        left.extend(
            too_large
                .into_iter()
                .map(|at| (candidates[at].name.clone(), OUTWEIGHS)),
        );
        left.sort();
        compaction.left = left;
        if kept.len() < 2 {
            compaction.nothing = Some(TOO_FEW);
            return Ok(compaction);
        }
        let mut parts = Vec::new();
        let mut bytes = Vec::new();
        for at in kept {
            let Candidate { name, content } = &candidates[at];
            parts.push(Part {
                name: name.clone(),
                bytes: content.len() as u64,
            });
            bytes.extend_from_slice(content);
        }
        compaction.records = bytes.iter().filter(|byte| **byte == b'\n').count() as u64;
        let compacted = Compacted {
            segment: compacted_name(&parts[0].name, &bytes),
            parts,
        };
        if !dry_run {
            self.write_compacted(&compacted, &bytes, &mut compaction)?;
        }
        compaction.compacted = Some(compacted);
        Ok(compaction)
    }

    /// The committed segments a compaction may join, with their bytes, in name order, and those
    /// it must leave, each with why: a part is all of a committed segment, exactly as
    /// committed, ending in a newline.
    fn compactable(
        &self,
        committed: &CommittedFiles,
        segments: &Segments,
    ) -> Result<(Vec<Candidate>, Left)> {
        let dir = self.rollout_dir();
        let mut candidates = Vec::new();
        let mut left = Vec::new();
        for (name, file) in &committed.files {
            let Some(&len) = segments.lengths().get(name) else {
                continue; // compacted already, not committed yet (the manifest holds it)
            };
            if len != file.size {
                left.push((name.clone(), "it grew since the commit"));
                continue;
            }
            let Some(content) = fs::read_below(&dir, &dir.join(name), PART_LIMIT)? else {
                left.push((name.clone(), "it is too large"));
                continue;
            };
            if !content.ends_with(b"\n") {
                left.push((name.clone(), "its last line has no newline"));
            } else if blob_id(&content)? != file.blob {
                left.push((
                    name.clone(),
                    "the work tree's bytes differ from the commit's (an eol attribute?)",
                ));
            } else {
                candidates.push(Candidate {
                    name: name.clone(),
                    content,
                });
            }
        }
        Ok((candidates, left))
    }

    /// Writes the compacted segment and its manifest, removes the parts (and the manifests of
    /// parts that were compactions themselves), then moves the cached folds.
    fn write_compacted(
        &self,
        compacted: &Compacted,
        bytes: &[u8],
        compaction: &mut Compaction,
    ) -> Result<()> {
        let dir = self.rollout_dir();
        // Durable before any part goes: a crash in between leaves every record twice, which
        // reads take as once.
        fs::write_atomic(&dir.join(&compacted.segment), bytes)?;
        fs::write_atomic(
            &dir.join(compacted.manifest_name()),
            compacted.manifest().as_bytes(),
        )?;
        for part in &compacted.parts {
            fs::remove_file(&dir.join(&part.name))?;
            fs::remove_file(&dir.join(manifest_name(&part.name)))?;
        }
        fs::sync_dir(&dir)?;
        let segments = self.listed_segments()?;
        for path in self.snapshot_candidates()? {
            // A cache: a fold that cannot be moved or rewritten is dropped, never kept
            // naming segments that are gone (it would read as records lost).
            let moved = SnapshotFile::open(&path).ok().and_then(|snapshot| {
                let marks = remap_marks(
                    &snapshot.header.marks,
                    segments.lengths(),
                    std::slice::from_ref(compacted),
                )?;
                self.recache_moved(&path, &snapshot, marks)
            });
            match moved {
                Some(_) => compaction.snapshots_moved += 1,
                None if path.parent() == Some(self.snapshot_dir().as_path()) => {
                    let _ = fs::remove_file(&path);
                    compaction.snapshots_removed += 1;
                }
                // A tracked snapshot of an older layout: the next write moves it out of git.
                None => {}
            }
        }
        Ok(())
    }

    /// Caches the snapshot at `path` again with `marks` (moved by a compaction) in place of
    /// its own, and removes it: the path of the new file, or `None` when it could not be
    /// written (a read-only checkout, a tracked snapshot of an older layout, a damaged block).
    pub(super) fn recache_moved(
        &self,
        path: &Path,
        snapshot: &SnapshotFile,
        marks: Vec<RolloutMark>,
    ) -> Option<PathBuf> {
        let dir = self.snapshot_dir();
        if path.parent() != Some(dir.as_path()) {
            return None;
        }
        let (name, bytes) = snapshot.with_marks(marks).ok()?;
        let target = dir.join(name);
        fs::replace(&target, &bytes, Durability::Visible).ok()?;
        if target != path {
            let _ = fs::remove_file(path);
        }
        Some(target)
    }
}

/// The compacted segment's name: the first part's, time and first record id, with a hash of
/// the bytes in place of the random part, so that two clones compacting the same parts write
/// one file.
fn compacted_name(first: &str, bytes: &[u8]) -> String {
    let stem = first.strip_suffix(SEGMENT_SUFFIX).unwrap_or(first);
    let prefix = stem.rsplit_once('-').map_or(stem, |(prefix, _)| prefix);
    let digest = hex::encode(Sha256::digest(bytes));
    format!("{prefix}-{}{SEGMENT_SUFFIX}", &digest[..8])
}

/// The id git gives a blob of `bytes`.
fn blob_id(bytes: &[u8]) -> Result<String> {
    Ok(git2::Oid::hash_object(git2::ObjectType::Blob, bytes)?.to_string())
}
