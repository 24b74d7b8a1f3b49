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
//!
//! This file finds and creates the store and names its paths; the rest lives beside it:
//! `read` (the head), `tail` (the head from cached folds: tail, join, graft), `history`
//! (revisions, past states, `log`), `conflicts` (what each side of an open conflict wrote),
//! `write` (the transaction and segments), `maintenance`
//! (snapshots, upgrades), `verify` (the whole check), `committed` (what the checked-out commit
//! holds of the rollout, which every read and write finds in it) and `lock`.

use std::path::Path;
use std::path::PathBuf;

use anyhow::Context;
use anyhow::Result;

use crate::state::error::StoreError;
use crate::state::fs;
use crate::state::git;
use crate::state::identity::Identities;
pub use crate::state::segments::SegmentProblem;
pub use crate::state::segments::Segments;
use crate::state::snapshot::Parts;

use maintenance::snapshot_files;

mod committed;
mod compact;
mod conflicts;
mod history;
mod lock;
mod maintenance;
mod read;
mod tail;
mod verify;
mod write;

pub use compact::Compaction;
pub use history::Revision;
pub use read::Head;
pub use verify::SecretScan;
pub use verify::VerifyProblem;
pub use write::Committed;
pub use write::Draft;
pub use write::Payload;
pub use write::Staged;
pub use write::Transaction;
pub use write::WriteScope;

/// The name of the store directory.
pub const STORE_DIR: &str = ".epiphany";

/// The directory of rollout segments.
pub const ROLLOUT_DIR: &str = "rollout";

/// The snapshot directory in `cache/` (and, in stores written before snapshots left git, in
/// the store itself).
pub const SNAPSHOT_DIR: &str = "snapshots";

/// The rollout of the first store format.
const LEGACY_ROLLOUT: &str = "rollout.jsonl";

/// The name every temporary directory a store is assembled in starts with, beside the store;
/// [`Store::create`] removes those an interrupted `init` left.
pub const STAGING_PREFIX: &str = ".epiphany-init-";

const CACHE_DIR: &str = "cache";

/// What git leaves of a store in `.epiphany/` on checking out a branch from before `init`: the
/// ignored files (temporary files aside, `.tmp-*`), and the `.gitignore` an interrupted `init`
/// may have written before the rest.
const LEFTOVERS: [&str; 4] = [CACHE_DIR, "lock", SNAPSHOT_DIR, ".gitignore"];

/// What stands at `.epiphany/`: a store, or only what git left of one on a branch that never
/// had it, which is no store.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Shape {
    Whole,
    Leftovers,
}

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

/// Records past the newest snapshot after which a write stores a new snapshot, by default.
pub const DEFAULT_SNAPSHOT_EVERY: usize = 128;

/// Rollout bytes past the newest snapshot after which a write stores a new snapshot.
const SNAPSHOT_AFTER_BYTES: u64 = 1 << 20;

/// A located store.
#[derive(Debug, Clone)]
pub struct Store {
    root: PathBuf,
    dir: PathBuf,
    /// Records past the newest snapshot after which a write stores a snapshot in
    /// `snapshots/`, and a read remembers its fold in `cache/snapshots/`.
    snapshot_every: usize,
    /// What the checked-out commit holds of the rollout, once looked up.
    committed: committed::CommittedMemo,
}

impl Store {
    /// Finds the store: `.epiphany/` in `start` or the nearest parent that has one, as git finds
    /// `.git`, never looking past the root of the repository `start` is in. A `.epiphany/`
    /// that is not a whole store is an error naming it, not a reason to look further up,
    /// unless it holds only what git leaves on a branch from before `init` (the ignored cache
    /// and lock, with no records committed there): that branch has no store.
    pub fn discover(start: &Path) -> Result<Store> {
        // The work tree's top need not hold `.git` (`GIT_WORK_TREE`, `core.worktree`); git is
        // asked only when the walk has to go past a directory without either.
        let top = std::cell::OnceCell::new();
        for dir in start.ancestors() {
            let candidate = dir.join(STORE_DIR);
            if fs::is_present(&candidate) {
                let store = Store {
                    root: dir.to_path_buf(),
                    dir: candidate,
                    snapshot_every: DEFAULT_SNAPSHOT_EVERY,
                    committed: Default::default(),
                };
                if store.check_shape()? == Shape::Whole {
                    return Ok(store);
                }
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

    fn check_shape(&self) -> Result<Shape> {
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
        if whole || self.is_legacy() {
            return Ok(Shape::Whole);
        }
        if self.is_leftovers() {
            return Ok(Shape::Leftovers);
        }
        Err(StoreError::Incomplete {
            dir: self.dir.clone(),
        }
        .into())
    }

    /// Whether the directory, holding no records, holds only what git leaves behind of a store
    /// on a branch from before `init` (the ignored cache, lock and temporary files, and the
    /// `.gitignore` an interrupted `init` may have written), while the commit checked out holds
    /// no records there: a branch without a store. Outside git, or where the commit holds
    /// records, the same directory is a store that lost them.
    fn is_leftovers(&self) -> bool {
        let Ok(Some(entries)) = fs::entries(&self.dir) else {
            return false;
        };
        let ignored = entries.iter().all(|entry| {
            let name = entry.file_name();
            let name = name.to_string_lossy();
            LEFTOVERS.contains(&name.as_ref()) || name.starts_with(".tmp-")
        });
        ignored
            && git::head_commit(&self.root).is_some()
            && git::committed_files(&self.rollout_dir(), None).is_none()
    }

    /// Moves aside what git left of a store on a branch from before `init` (see
    /// [`Store::discover`]), so that a store can be created there; anything else at
    /// `.epiphany/` is left alone. The cache is derived: the branch that has the store rebuilds
    /// it.
    pub fn set_aside_leftovers(root: &Path) -> Result<()> {
        let store = Store {
            root: root.to_path_buf(),
            dir: root.join(STORE_DIR),
            snapshot_every: DEFAULT_SNAPSHOT_EVERY,
            committed: Default::default(),
        };
        if !fs::is_present(&store.dir) || !matches!(store.check_shape(), Ok(Shape::Leftovers)) {
            return Ok(());
        }
        let aside = tempfile::Builder::new()
            .prefix(STAGING_PREFIX)
            .tempdir_in(root)
            .with_context(|| format!("failed to create a directory in `{}`", root.display()))?;
        fs::rename(&store.dir, &aside.path().join(STORE_DIR))?;
        // Dropping `aside` removes what was set aside; should that fail, the next `init`
        // removes it as a stale staging directory.
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
            committed: Default::default(),
        };
        remove_stale_staging(root);
        Store::set_aside_leftovers(root)?;
        if fs::is_present(&dir) {
            store.check_shape()?;
            return Ok((store, false));
        }
        let staging = tempfile::Builder::new()
            .prefix(STAGING_PREFIX)
            .tempdir_in(root)
            .with_context(|| format!("failed to create a directory in `{}`", root.display()))?;
        let stage = staging.path();
        fs::create_dirs(&stage.join(ROLLOUT_DIR))?;
        Identities::mint(&stage.join(ROLLOUT_DIR))?;
        fs::write_atomic(&stage.join(".gitignore"), GITIGNORE.as_bytes())?;
        fs::write_atomic(&stage.join(".gitattributes"), GITATTRIBUTES.as_bytes())?;
        let staged = staging.keep();
        if let Err(err) = fs::rename(&staged, &dir) {
            let _ = fs::remove_dir_all(&staged);
            if dir.join(ROLLOUT_DIR).is_dir() {
                return Ok((store, false));
            }
            return Err(err.context(format!("failed to create `{}`", dir.display())));
        }
        fs::sync_dir(root)?;
        Ok((store, true))
    }

    /// Gives a store created before identities its own (`state::identity`), under the write
    /// lock: answers whether it had none (a first-format store gets one when a write converts
    /// it). Records written before keep no claim and are accepted as they were.
    pub fn give_identity(&self, timeout: std::time::Duration) -> Result<bool> {
        if self.is_legacy() {
            return Ok(false);
        }
        let _lock = self.lock(timeout, fs::LockMode::Exclusive)?;
        let rollout = self.rollout_dir();
        if Identities::read(&rollout)?.exists() {
            return Ok(false);
        }
        fs::refuse_symlink(&rollout)?;
        fs::create_dirs(&rollout)?;
        Identities::mint(&rollout)?;
        Ok(true)
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

    /// The rollout's segments, listed for a read: refused when they lack records the
    /// checked-out commit holds ([`Store::check_committed`]), so no read serves a state with
    /// records missing.
    fn segments(&self) -> Result<Segments> {
        let segments = self.listed_segments()?;
        self.check_committed(&segments)?;
        Ok(segments)
    }

    /// The rollout's segments, listed, unchecked: for `verify`, which reports what is lacking
    /// among its problems, and writers, which check under their lock.
    fn listed_segments(&self) -> Result<Segments> {
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

    fn corrupt_rollout(&self, problem: &SegmentProblem) -> anyhow::Error {
        StoreError::DamagedRollout {
            segment: self.rollout_dir().join(&problem.segment),
            problem: problem.problem.message.clone(),
        }
        .into()
    }

    /// The store directory with links and `..` resolved: the same however it was reached.
    fn canonical_dir(&self) -> PathBuf {
        self.dir.canonicalize().unwrap_or_else(|_| self.dir.clone())
    }
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
    for entry in fs::entries(root).ok().flatten().unwrap_or_default() {
        let name = entry.file_name();
        let stale = name.to_str().is_some_and(|n| n.starts_with(STAGING_PREFIX))
            && entry.file_type().is_ok_and(|t| t.is_dir());
        if stale {
            let _ = fs::remove_dir_all(&entry.path());
        }
    }
}
