//! File-system helpers that name the path in every error and write durably.
//!
//! Every read and write of the store goes through here so that an error always says which
//! file failed, and so that snapshot writes are atomic (temporary file, fsync, rename, fsync of
//! the directory). Writes refuse to go through a symbolic link.

use std::fs::File;
use std::io::Write;
use std::path::Path;
use std::time::Duration;
use std::time::Instant;

use anyhow::Context;
use anyhow::Result;

use crate::state::error::StoreError;

/// Reads a whole file.
pub fn read(path: &Path) -> Result<Vec<u8>> {
    std::fs::read(path).with_context(|| format!("failed to read `{}`", path.display()))
}

/// Whether `path` can be one of the store's directories: it is a directory itself (not a
/// link to one), or nothing is there yet.
pub fn is_dir_or_absent(path: &Path) -> bool {
    match std::fs::symlink_metadata(path) {
        Ok(meta) => meta.is_dir(),
        Err(err) => err.kind() == std::io::ErrorKind::NotFound,
    }
}

/// Refuses to write through `path` when it is a symbolic link.
pub fn refuse_symlink(path: &Path) -> Result<()> {
    match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.file_type().is_symlink() => Err(StoreError::Link {
            path: path.to_path_buf(),
        }
        .into()),
        _ => Ok(()),
    }
}

/// Creates the directories of `path` below `root` (which must contain it), refusing any that is
/// a symbolic link: nothing the store writes inside them can land outside the repository,
/// whatever a commit placed there.
pub fn create_dirs_below(root: &Path, path: &Path) -> Result<()> {
    let below = path
        .strip_prefix(root)
        .with_context(|| format!("`{}` is not inside `{}`", path.display(), root.display()))?;
    let mut dir = root.to_path_buf();
    for component in below.components() {
        dir.push(component);
        refuse_symlink(&dir)?;
        match std::fs::create_dir(&dir) {
            Ok(()) => {}
            Err(err) if err.kind() == std::io::ErrorKind::AlreadyExists && dir.is_dir() => {
                // Raced with another process, or already there: check it again.
                refuse_symlink(&dir)?;
            }
            Err(err) if err.kind() == std::io::ErrorKind::AlreadyExists => {
                return Err(StoreError::MisplacedFile { path: dir }.into());
            }
            Err(err) => {
                return Err(err).with_context(|| format!("failed to create `{}`", dir.display()));
            }
        }
    }
    Ok(())
}

/// Opens `path` for reading and writing without following a symbolic link at its last
/// component (the caller checks the directories above it), creating it when asked.
pub fn open_no_follow(path: &Path, create: bool) -> Result<File> {
    let mut options = std::fs::OpenOptions::new();
    options
        .read(true)
        .write(true)
        .create(create)
        .truncate(false);
    open_with(path, options)
}

/// [`open_no_follow`] for reading only, never creating.
pub fn open_no_follow_read(path: &Path) -> Result<File> {
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    open_with(path, options)
}

fn open_with(path: &Path, mut options: std::fs::OpenOptions) -> Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    refuse_symlink(path)?;
    options
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(path)
        .with_context(|| format!("failed to open `{}`", path.display()))
}

/// How far a write must reach before it returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Durability {
    /// On disk: the file and its directory entry are synced. What the store's own files need.
    Disk,
    /// Visible to other processes, not yet on disk: for derived data whose every read is
    /// checked, which a crash may lose or leave damaged (and then the next read rebuilds it).
    Visible,
}

/// Replaces `path` with `bytes` atomically and durably: a crash leaves either the old or the
/// new file.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    replace(path, bytes, Durability::Disk)
}

/// Replaces `path` with `bytes`: other processes see the old file or the new one, never a
/// part; with [`Durability::Disk`], so does a crash.
pub fn replace(path: &Path, bytes: &[u8], durability: Durability) -> Result<()> {
    refuse_symlink(path)?;
    let dir = path.parent().unwrap_or(Path::new("."));
    let context = || format!("failed to write `{}`", path.display());
    let mut builder = tempfile::Builder::new();
    builder.prefix(".tmp-");
    #[cfg(unix)]
    {
        // Store files are shared through git like any source file, not private temp files.
        use std::os::unix::fs::PermissionsExt;
        builder.permissions(std::fs::Permissions::from_mode(0o644));
    }
    let mut temp = builder.tempfile_in(dir).with_context(context)?;
    temp.write_all(bytes).with_context(context)?;
    if durability == Durability::Disk {
        temp.as_file().sync_all().with_context(context)?;
    }
    temp.persist(path)
        .map_err(|err| err.error)
        .with_context(context)?;
    match durability {
        Durability::Disk => sync_dir(dir),
        Durability::Visible => Ok(()),
    }
}

/// How a [`lock`] is held: alone (writers), or beside other shared holders (readers).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LockMode {
    /// No other holder.
    Exclusive,
    /// Other shared holders allowed; excludes an exclusive one.
    Shared,
}

/// The one file lock: takes `file`'s advisory lock (`path` names it in errors), retrying with
/// a growing pause (1 ms doubling to 20 ms) for up to `wait`; `Duration::ZERO` tries once.
/// Answers `false` when another process held it the whole time; the caller says what that
/// means.
pub fn lock(file: &File, path: &Path, mode: LockMode, wait: Duration) -> Result<bool> {
    let started = Instant::now();
    let mut pause = Duration::from_millis(1);
    loop {
        let attempt = match mode {
            LockMode::Exclusive => file.try_lock(),
            LockMode::Shared => file.try_lock_shared(),
        };
        match attempt {
            Ok(()) => return Ok(true),
            Err(std::fs::TryLockError::WouldBlock) if started.elapsed() < wait => {
                std::thread::sleep(pause);
                pause = (pause * 2).min(Duration::from_millis(20));
            }
            Err(std::fs::TryLockError::WouldBlock) => return Ok(false),
            Err(std::fs::TryLockError::Error(err)) => {
                return Err(err).with_context(|| format!("failed to lock `{}`", path.display()));
            }
        }
    }
}

/// Flushes a directory entry change (a rename or a new file) to disk.
pub fn sync_dir(dir: &Path) -> Result<()> {
    File::open(dir)
        .and_then(|handle| handle.sync_all())
        .with_context(|| format!("failed to sync directory `{}`", dir.display()))
}
