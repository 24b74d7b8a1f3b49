//! The `.epiphany/` store: finding it, reading its head, reading its history, and the one
//! locked, crash-safe write.
//!
//! Write protocol (inside an exclusive lock on `.epiphany/lock`): read the head, let the caller
//! decide, append one sealed record to `rollout.jsonl` and fsync it, then replace
//! `state.msgpack` atomically. The rollout is the write-ahead log: a crash after the append
//! leaves a snapshot one record behind, and every reader rolls the complete tail forward. A
//! final line without its newline is an interrupted write; it is ignored by readers and cut
//! off by the next writer. Nothing here decides whether a write is allowed: that is `policy`.

use std::fs::File;
use std::fs::OpenOptions;
use std::io::Read;
use std::io::Seek;
use std::io::SeekFrom;
use std::io::Write;
use std::path::Path;
use std::path::PathBuf;
use std::time::Duration;
use std::time::Instant;

use anyhow::Context;
use anyhow::Result;

use crate::error::ErrorKind;
use crate::error::Failure;
use crate::state::fs;
use crate::state::model::State;
use crate::state::patch::ChangedField;
use crate::state::patch::Patch;
use crate::state::rollout;
use crate::state::rollout::ParsedRollout;
use crate::state::rollout::Record;
use crate::state::rollout::Restore;
use crate::state::rollout::Source;
use crate::state::snapshot::Snapshot;

/// The name of the store directory.
pub const STORE_DIR: &str = ".epiphany";
const SNAPSHOT_FILE: &str = "state.msgpack";
const ROLLOUT_FILE: &str = "rollout.jsonl";
const LOCK_FILE: &str = "lock";
const CACHE_DIR: &str = "cache";
const GITIGNORE: &str = "# derived data and lock files; state.msgpack and rollout.jsonl are tracked\ncache/\nlock\n.tmp-*\n";

/// A located store.
#[derive(Debug, Clone)]
pub struct Store {
    root: PathBuf,
    dir: PathBuf,
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
    Patch(Patch),
    /// The whole state of an earlier revision.
    Restore(Restore),
}

/// Where and when a write happens.
#[derive(Debug, Clone)]
pub struct WriteStamp {
    /// RFC 3339 UTC time of the write.
    pub at: String,
    /// The commit checked out, when in git.
    pub git_head: Option<String>,
}

impl Store {
    /// Finds the store in `start` or the nearest parent that has one, as git finds `.git`.
    pub fn discover(start: &Path) -> Result<Store> {
        for dir in start.ancestors() {
            let candidate = dir.join(STORE_DIR);
            if candidate.join(SNAPSHOT_FILE).is_file() {
                return Ok(Store {
                    root: dir.to_path_buf(),
                    dir: candidate,
                });
            }
        }
        Err(Failure::new(
            ErrorKind::NoStore,
            format!(
                "no `{STORE_DIR}/` store in `{}` or any parent",
                start.display()
            ),
        )
        .with_hint("run `epiphany init` to create one")
        .into())
    }

    /// Creates a store in `root`, or opens the one already there. Answers whether it was
    /// created. Creation is atomic: the files are assembled in a temporary directory and
    /// renamed into place.
    pub fn create(root: &Path) -> Result<(Store, bool)> {
        let dir = root.join(STORE_DIR);
        let store = Store {
            root: root.to_path_buf(),
            dir: dir.clone(),
        };
        if dir.join(SNAPSHOT_FILE).is_file() {
            return Ok((store, false));
        }
        if dir.exists() {
            return Err(Failure::corrupt(format!(
                "`{}` exists but holds no `{SNAPSHOT_FILE}`",
                dir.display()
            ))
            .with_hint(
                "move the directory aside, or restore it from git, then rerun `epiphany init`",
            )
            .into());
        }
        let staging = tempfile::Builder::new()
            .prefix(".epiphany-init-")
            .tempdir_in(root)
            .with_context(|| format!("failed to create a directory in `{}`", root.display()))?;
        let stage = staging.path();
        std::fs::write(stage.join(ROLLOUT_FILE), b"")
            .with_context(|| format!("failed to write `{}`", stage.display()))?;
        std::fs::write(stage.join(".gitignore"), GITIGNORE)
            .with_context(|| format!("failed to write `{}`", stage.display()))?;
        fs::write_atomic(&stage.join(SNAPSHOT_FILE), &Snapshot::default().encode()?)?;
        let staged = staging.keep();
        if let Err(err) = std::fs::rename(&staged, &dir) {
            let _ = std::fs::remove_dir_all(&staged);
            if dir.join(SNAPSHOT_FILE).is_file() {
                return Ok((store, false));
            }
            return Err(err).with_context(|| format!("failed to create `{}`", dir.display()));
        }
        fs::sync_dir(root)?;
        Ok((store, true))
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

    /// The snapshot file.
    pub fn snapshot_path(&self) -> PathBuf {
        self.dir.join(SNAPSHOT_FILE)
    }

    /// The rollout file.
    pub fn rollout_path(&self) -> PathBuf {
        self.dir.join(ROLLOUT_FILE)
    }

    /// The head: the snapshot with any complete rollout records it has not folded yet.
    pub fn head(&self) -> Result<Snapshot> {
        let mut snapshot = self.read_snapshot()?;
        let path = self.rollout_path();
        let mut file =
            File::open(&path).with_context(|| format!("failed to open `{}`", path.display()))?;
        let length = file
            .metadata()
            .with_context(|| format!("failed to stat `{}`", path.display()))?
            .len();
        if length < snapshot.rollout_bytes {
            return Err(Failure::corrupt(format!(
                "`{}` is {length} bytes but the snapshot has folded {} bytes of it",
                path.display(),
                snapshot.rollout_bytes
            ))
            .with_hint(
                "the rollout was truncated; restore it from git (`git checkout -- .epiphany/`)",
            )
            .into());
        }
        if length > snapshot.rollout_bytes {
            let mut tail = Vec::with_capacity((length - snapshot.rollout_bytes) as usize);
            file.seek(SeekFrom::Start(snapshot.rollout_bytes))
                .and_then(|_| file.read_to_end(&mut tail))
                .with_context(|| format!("failed to read `{}`", path.display()))?;
            let parsed = rollout::parse(&tail, snapshot.rollout_seq + 1);
            if let Some(problem) = parsed.problems.first() {
                return Err(self.corrupt_rollout(&problem.message));
            }
            for line in &parsed.records {
                if let Some(problem) = chain_problem(&snapshot, &line.record) {
                    return Err(self.corrupt_rollout(&format!("line {}: {problem}", line.line)));
                }
                snapshot.advance(&line.record, line.bytes);
            }
        }
        Ok(snapshot)
    }

    /// Every line of the rollout, parsed, with the problems found.
    pub fn history(&self) -> Result<ParsedRollout> {
        let bytes = fs::read(&self.rollout_path())?;
        Ok(rollout::parse(&bytes, 1))
    }

    /// The commit checked out at the newest complete write (the one that produced the head),
    /// if any. Reads the rollout backwards from its end, so only the last line is read.
    pub fn last_git_head(&self) -> Result<Option<String>> {
        #[derive(serde::Deserialize)]
        struct Stamp {
            git_head: Option<String>,
        }
        let path = self.rollout_path();
        let context = || format!("failed to read `{}`", path.display());
        let mut file = File::open(&path).with_context(context)?;
        let mut start = file.metadata().with_context(context)?.len();
        let mut tail: Vec<u8> = Vec::new();
        loop {
            if let Some(end) = tail.iter().rposition(|b| *b == b'\n') {
                let line_start = tail[..end].iter().rposition(|b| *b == b'\n');
                if line_start.is_some() || start == 0 {
                    let line = &tail[line_start.map_or(0, |at| at + 1)..end];
                    return serde_json::from_slice::<Stamp>(line)
                        .map(|stamp| stamp.git_head)
                        .map_err(|err| {
                            self.corrupt_rollout(&format!("the last line does not parse: {err}"))
                        });
                }
            } else if start == 0 {
                return Ok(None);
            }
            // Read the preceding chunk, doubling so a long line costs linear time.
            let step = start.min((tail.len() as u64).max(64 * 1024));
            start -= step;
            let mut chunk = vec![0; step as usize];
            file.seek(SeekFrom::Start(start))
                .and_then(|_| file.read_exact(&mut chunk))
                .with_context(context)?;
            chunk.extend_from_slice(&tail);
            tail = chunk;
        }
    }

    /// The record that produced `revision`.
    pub fn record_at(&self, revision: u64) -> Result<Record> {
        self.history()?
            .records
            .into_iter()
            .map(|line| line.record)
            .find(|record| record.revision == revision)
            .ok_or_else(|| {
                Failure::usage(format!("no write produced revision {revision}"))
                    .with_hint("list revisions with `epiphany log`")
                    .into()
            })
    }

    /// The state as of `revision`: the head, or a fold of the rollout up to that revision.
    pub fn state_at(&self, revision: u64) -> Result<State> {
        let head = self.head()?;
        if revision == head.state.revision {
            return Ok(head.state);
        }
        if revision > head.state.revision {
            return Err(Failure::usage(format!(
                "revision {revision} does not exist; the head is at revision {}",
                head.state.revision
            ))
            .with_hint("list revisions with `epiphany log`")
            .into());
        }
        let history = self.history()?;
        let mut snapshot = Snapshot::default();
        for line in &history.records {
            if snapshot.state.revision >= revision {
                break;
            }
            if let Some(problem) = chain_problem(&snapshot, &line.record) {
                return Err(self.corrupt_rollout(&format!("line {}: {problem}", line.line)));
            }
            snapshot.advance(&line.record, line.bytes);
        }
        Ok(snapshot.state)
    }

    /// The snapshot file as written, without rolling the rollout forward.
    pub fn read_snapshot(&self) -> Result<Snapshot> {
        let path = self.snapshot_path();
        let bytes = fs::read(&path)?;
        Snapshot::decode(&bytes).map_err(|err| {
            Failure::corrupt(format!("`{}` does not decode: {err}", path.display()))
                .with_hint(
                    "the file was left untouched; restore it from git (`git checkout -- .epiphany/state.msgpack`) or inspect it with `epiphany verify`",
                )
                .into()
        })
    }

    /// Takes the exclusive write lock, waiting up to `timeout`.
    pub fn lock(&self, timeout: Duration) -> Result<WriteLock<'_>> {
        let path = self.dir.join(LOCK_FILE);
        fs::refuse_symlink(&self.dir)?;
        fs::refuse_symlink(&path)?;
        let file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .with_context(|| format!("failed to open `{}`", path.display()))?;
        let started = Instant::now();
        let mut pause = Duration::from_millis(1);
        loop {
            match file.try_lock() {
                Ok(()) => {
                    return Ok(WriteLock {
                        store: self,
                        _file: file,
                    });
                }
                Err(std::fs::TryLockError::WouldBlock) if started.elapsed() < timeout => {
                    std::thread::sleep(pause);
                    pause = (pause * 2).min(Duration::from_millis(20));
                }
                Err(std::fs::TryLockError::WouldBlock) => {
                    return Err(Failure::new(
                        ErrorKind::Locked,
                        format!(
                            "another epiphany process held `{}` for more than {} ms",
                            path.display(),
                            timeout.as_millis()
                        ),
                    )
                    .with_hint("retry, or raise the wait with `EPIPHANY_LOCK_TIMEOUT_MS`")
                    .into());
                }
                Err(std::fs::TryLockError::Error(err)) => {
                    return Err(err)
                        .with_context(|| format!("failed to lock `{}`", path.display()));
                }
            }
        }
    }

    fn corrupt_rollout(&self, problem: &str) -> anyhow::Error {
        Failure::corrupt(format!(
            "`{}` is damaged: {problem}",
            self.rollout_path().display()
        ))
        .with_hint("run `epiphany verify` for every problem; restore the file from git to recover")
        .into()
    }
}

/// Why `record` cannot follow the records folded into `snapshot`, if it cannot.
pub fn chain_problem(snapshot: &Snapshot, record: &Record) -> Option<String> {
    if record.seq != snapshot.rollout_seq + 1 {
        return Some(format!(
            "seq {} follows seq {}",
            record.seq, snapshot.rollout_seq
        ));
    }
    if record.prev_hash != snapshot.rollout_hash {
        return Some("prev_hash does not match the hash of the previous record".to_owned());
    }
    if record.hash != record.compute_hash() {
        return Some("hash does not match the record's content (the line was edited)".to_owned());
    }
    if record.revision != snapshot.state.revision.saturating_add(1) {
        return Some(format!(
            "revision {} follows revision {}",
            record.revision, snapshot.state.revision
        ));
    }
    None
}

/// The exclusive write lock; released when dropped. The only way to write the store.
#[must_use = "a write lock does nothing until `commit` is called"]
pub struct WriteLock<'a> {
    store: &'a Store,
    _file: File,
}

impl WriteLock<'_> {
    /// The head, read under the lock.
    pub fn head(&self) -> Result<Snapshot> {
        self.store.head()
    }

    /// Seals `draft` on top of `head` (which must have been read under this lock), appends it
    /// to the rollout, fsyncs, and replaces the snapshot. Returns the new head and its record.
    pub fn commit(
        self,
        mut head: Snapshot,
        draft: Draft,
        stamp: WriteStamp,
    ) -> Result<(Snapshot, Record)> {
        let (patch, restore) = match draft.payload {
            Payload::Patch(patch) => (Some(patch), None),
            Payload::Restore(restore) => (None, Some(restore)),
        };
        let (record, line) = Record {
            seq: head.rollout_seq + 1,
            revision: head.state.revision.saturating_add(1),
            at: stamp.at,
            source: draft.source,
            turn_id: draft.turn_id,
            git_head: stamp.git_head,
            changed_fields: draft.changed_fields,
            patch,
            restore,
            prev_hash: head.rollout_hash.clone(),
            hash: String::new(),
        }
        .seal();

        let path = self.store.rollout_path();
        fs::refuse_symlink(&path)?;
        let context = || format!("failed to append to `{}`", path.display());
        let mut file = OpenOptions::new()
            .write(true)
            .open(&path)
            .with_context(context)?;
        // Anything past the head is a torn line from an interrupted writer: cut it off.
        file.set_len(head.rollout_bytes).with_context(context)?;
        file.seek(SeekFrom::End(0)).with_context(context)?;
        file.write_all(line.as_bytes()).with_context(context)?;
        file.sync_data().with_context(context)?;

        head.advance(&record, line.len() as u64);
        fs::write_atomic(&self.store.snapshot_path(), &head.encode()?)?;
        Ok((head, record))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn last_git_head_reads_the_last_complete_line_from_the_end() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (store, _) = Store::create(dir.path()).expect("create");
        assert_eq!(store.last_git_head().expect("read"), None);
        let long = "x".repeat(200_000);
        let rollout = format!(
            "{{\"git_head\":\"c1\"}}\n{{\"pad\":\"{long}\",\"git_head\":\"c2\"}}\n{{\"git_head\":\"torn"
        );
        std::fs::write(store.rollout_path(), &rollout).expect("write");
        assert_eq!(store.last_git_head().expect("read").as_deref(), Some("c2"));
        std::fs::write(store.rollout_path(), "{\"git_head\":null}\n").expect("write");
        assert_eq!(store.last_git_head().expect("read"), None);
    }
}
