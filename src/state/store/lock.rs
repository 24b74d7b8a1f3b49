//! The store's lock file: writers hold it exclusively, readers that need a consistent set of
//! records take it shared, each waiting at most a given time.

use std::fs::File;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::Result;

use crate::state::error::StoreError;
use crate::state::fs;
use crate::state::fs::LockMode;

use super::Store;
use super::io_kind;
use super::is_unwritable;

pub(super) const LOCK_FILE: &str = "lock";

impl Store {
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

    pub(super) fn lock(&self, timeout: Duration, mode: LockMode) -> Result<File> {
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
}
