//! Keeping the store in shape: caching snapshots and thinning old ones, rebuilding them, and
//! upgrading older layouts (tracked snapshots, the first single-file format).

use std::io::Read;
use std::path::Path;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::Result;

use crate::state::fs;
use crate::state::fs::LockMode;
use crate::state::git;
use crate::state::rollout;
use crate::state::segments::SegmentProblem;
use crate::state::snapshot;
use crate::state::snapshot::Parts;

use super::GITATTRIBUTES;
use super::GITIGNORE;
use super::LEGACY_ROLLOUT;
use super::Store;
use super::read::Remember;
use super::write::segment_name;

/// Cached snapshots kept at most.
const SNAPSHOTS_KEPT: usize = 12;

/// The single snapshot of the first store format.
const LEGACY_SNAPSHOT: &str = "state.msgpack";

impl Store {
    /// Replaces every snapshot with one folded from the records alone (under the write lock):
    /// what a damaged or forged snapshot needs. Answers the names of the files removed and
    /// the one written.
    pub fn rebuild_snapshots(
        &self,
        lock_timeout: Duration,
    ) -> Result<(Vec<String>, Option<String>)> {
        let _lock = self.lock(lock_timeout, LockMode::Exclusive)?;
        // Checked before anything is removed: over a damaged line nothing can be rebuilt, and
        // the snapshots may hold the only other copy of what it said.
        let history = self.sound_history()?;
        let mut removed = Vec::new();
        for path in self.snapshot_candidates()? {
            fs::remove_file(&path)?;
            removed.extend(path.file_name().and_then(|n| n.to_str()).map(str::to_owned));
        }
        let written = match history.records.is_empty() {
            true => None,
            false => Some(self.write_snapshot()?),
        };
        Ok((removed, written))
    }

    /// Upgrades a store of the first format (under the write lock): its records become one
    /// segment of this format, a snapshot is written, and `rollout.jsonl` and `state.msgpack`
    /// go.
    pub(super) fn upgrade(&self) -> Result<()> {
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
        fs::create_dirs(&dir)?;
        if let Some((first, _)) = converted.first() {
            let text: String = converted.iter().map(|(_, line)| line.as_str()).collect();
            fs::write_atomic(&dir.join(segment_name(first)), text.as_bytes())?;
        }
        fs::write_atomic(&self.dir.join(".gitattributes"), GITATTRIBUTES.as_bytes())?;
        fs::write_atomic(&self.dir.join(".gitignore"), GITIGNORE.as_bytes())?;
        for old in [LEGACY_ROLLOUT, LEGACY_SNAPSHOT] {
            fs::remove_file(&self.dir.join(old))?;
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
    pub(super) fn upgrade_layout(&self) -> Vec<String> {
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
                    fs::rename(&path, &cached)?;
                }
            }
            git::untrack(&tracked)?;
            fs::remove_dir_all(&tracked)
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
    pub(super) fn write_snapshot(&self) -> Result<String> {
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
    pub(super) fn thin_snapshots(&self, written: &str, records: u64) {
        let dir = self.snapshot_dir();
        let Ok(found) = snapshot_files(&dir) else {
            return;
        };
        let modified = |path: &Path| {
            fs::metadata_no_follow(path)
                .and_then(|meta| meta.modified().ok())
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
            let _ = fs::remove_file(&path);
        }
    }
}

/// The snapshot files in `dir` with the record count their names give, most records first.
pub(super) fn snapshot_files(dir: &Path) -> Result<Vec<(u64, PathBuf)>> {
    let mut found: Vec<(u64, PathBuf)> = (fs::entries(dir)?.unwrap_or_default())
        .into_iter()
        .filter_map(|entry| {
            let name = entry.file_name();
            let count = snapshot::records_in_name(name.to_str()?)?;
            Some((count, entry.path()))
        })
        .collect();
    found.sort_by(|a, b| b.cmp(a));
    Ok(found)
}

/// Removes temporary files (`.tmp-*`) a killed writer left in `dir`.
pub(super) fn remove_stale_temporaries(dir: &Path) {
    for entry in fs::entries(dir).ok().flatten().unwrap_or_default() {
        let stale = entry
            .file_name()
            .to_str()
            .is_some_and(|name| name.starts_with(fs::TEMPORARY_PREFIX));
        if stale {
            let _ = fs::remove_file(&entry.path());
        }
    }
}
