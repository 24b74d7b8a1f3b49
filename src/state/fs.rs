//! File-system helpers that name the path in every error and write durably.
//!
//! Every read and write of the store goes through here so that an error always says which
//! file failed, and so that snapshot writes are atomic (temporary file, fsync, rename, fsync of
//! the directory). Writes refuse to go through a symbolic link.
//!
//! Whatever is inside a repository may have been committed by someone else, links included
//! (git checks them out as links). Reads of the files epiphany keeps for itself (its cache,
//! the agent hosts' settings, ignore files) go through [`read_below`]: no component between
//! the repository's own directory and the file may be a link, the file must be a regular file,
//! and it is read only up to a limit, so a link to `/dev/zero` or to a file outside is refused
//! before anything is opened through it.

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

/// Whether anything is at `path`, a link included (not followed).
pub fn is_present(path: &Path) -> bool {
    std::fs::symlink_metadata(path).is_ok()
}

/// The metadata of `path` itself (a link is not followed), when it can be read.
pub fn metadata_no_follow(path: &Path) -> Option<std::fs::Metadata> {
    std::fs::symlink_metadata(path).ok()
}

/// Creates the directory `path` and any missing parents.
pub fn create_dirs(path: &Path) -> Result<()> {
    std::fs::create_dir_all(path).with_context(|| format!("failed to create `{}`", path.display()))
}

/// Removes the file at `path`; nothing there is fine.
pub fn remove_file(path: &Path) -> Result<()> {
    match std::fs::remove_file(path) {
        Err(err) if err.kind() != std::io::ErrorKind::NotFound => {
            Err(err).with_context(|| format!("failed to remove `{}`", path.display()))
        }
        _ => Ok(()),
    }
}

/// Removes the directory at `path` with everything in it.
pub fn remove_dir_all(path: &Path) -> Result<()> {
    std::fs::remove_dir_all(path).with_context(|| format!("failed to remove `{}`", path.display()))
}

/// Moves `from` to `to` (one rename, on one file system).
pub fn rename(from: &Path, to: &Path) -> Result<()> {
    std::fs::rename(from, to).with_context(|| format!("failed to move `{}`", from.display()))
}

/// The entries of the directory `dir`, or `None` when there is no directory.
pub fn entries(dir: &Path) -> Result<Option<Vec<std::fs::DirEntry>>> {
    match std::fs::read_dir(dir) {
        Ok(entries) => Ok(Some(entries.filter_map(|entry| entry.ok()).collect())),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(err) => Err(err).with_context(|| format!("failed to list `{}`", dir.display())),
    }
}

/// Reads the file at `path` below `base` (which must contain it), or `None` when nothing is
/// there. Refused with a typed error: a symbolic link at any component below `base` (see
/// [`dirs_below`]), something other than a regular file, and a file larger than `limit` bytes.
/// The file is opened without following a link and checked again once open, so what is read
/// is what was checked.
pub fn read_below(base: &Path, path: &Path, limit: u64) -> Result<Option<Vec<u8>>> {
    use std::io::Read;
    let Some(parent) = path.parent() else {
        return Ok(None);
    };
    if !dirs_below(base, parent)? {
        return Ok(None);
    }
    match std::fs::symlink_metadata(path) {
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(err) => {
            return Err(err).with_context(|| format!("failed to read `{}`", path.display()));
        }
        Ok(meta) => check_readable(path, &meta, limit)?,
    }
    let file = match open_no_follow_read(path) {
        Ok(file) => file,
        // Removed since: as if it had never been there.
        Err(_) if std::fs::symlink_metadata(path).is_err() => return Ok(None),
        Err(err) => return Err(err),
    };
    let meta = file
        .metadata()
        .with_context(|| format!("failed to read `{}`", path.display()))?;
    check_readable(path, &meta, limit)?;
    let mut bytes = Vec::new();
    file.take(limit + 1)
        .read_to_end(&mut bytes)
        .with_context(|| format!("failed to read `{}`", path.display()))?;
    if bytes.len() as u64 > limit {
        return Err(StoreError::TooLarge {
            path: path.to_path_buf(),
            limit,
        }
        .into());
    }
    Ok(Some(bytes))
}

fn check_readable(path: &Path, meta: &std::fs::Metadata, limit: u64) -> Result<()> {
    let path = path.to_path_buf();
    if meta.file_type().is_symlink() {
        return Err(StoreError::Link { path }.into());
    }
    if !meta.is_file() {
        return Err(StoreError::NotAFile { path }.into());
    }
    if meta.len() > limit {
        return Err(StoreError::TooLarge { path, limit }.into());
    }
    Ok(())
}

/// Whether every directory from `base` (exclusive) down to `dir` (inclusive) is there, each a
/// directory itself: `false` when one is missing, an error when one is a symbolic link or not a
/// directory. `dir` must lie below `base` (or be it).
pub fn dirs_below(base: &Path, dir: &Path) -> Result<bool> {
    let below = dir
        .strip_prefix(base)
        .with_context(|| format!("`{}` is not inside `{}`", dir.display(), base.display()))?;
    let mut path = base.to_path_buf();
    for component in below.components() {
        path.push(component);
        match std::fs::symlink_metadata(&path) {
            Ok(meta) if meta.file_type().is_symlink() => {
                return Err(StoreError::Link { path }.into());
            }
            Ok(meta) if meta.is_dir() => {}
            Ok(_) => return Err(StoreError::MisplacedFile { path }.into()),
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(false),
            Err(err) => {
                return Err(err).with_context(|| format!("failed to read `{}`", path.display()));
            }
        }
    }
    Ok(true)
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

/// What the name of every temporary file [`replace`] writes starts with.
pub const TEMPORARY_PREFIX: &str = ".tmp-";

/// Replaces `path` with `bytes`: other processes see the old file or the new one, never a
/// part; with [`Durability::Disk`], so does a crash. A store file that is a link is refused;
/// a derived file ([`Durability::Visible`], always in the per-clone cache) that is one, as a
/// hostile commit may leave it, is replaced like any file: the rename replaces the link
/// itself and never reaches what it points to, so the cache works again.
pub fn replace(path: &Path, bytes: &[u8], durability: Durability) -> Result<()> {
    if durability == Durability::Disk {
        refuse_symlink(path)?;
    }
    let dir = path.parent().unwrap_or(Path::new("."));
    let context = || format!("failed to write `{}`", path.display());
    let mut builder = tempfile::Builder::new();
    builder.prefix(TEMPORARY_PREFIX);
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
