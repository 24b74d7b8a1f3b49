//! The git adapter: everything the tool asks of git goes through here (git2, no subprocess).
//!
//! Owns finding the work-tree root and reading the checked-out commit. Answers `None` outside
//! git instead of failing: a store works without git, it just cannot anchor to commits.

use std::path::Path;
use std::path::PathBuf;

use git2::Repository;

/// The root of the git work tree that contains `dir`, if any.
pub fn work_tree_root(dir: &Path) -> Option<PathBuf> {
    let repo = Repository::discover(dir).ok()?;
    // git2 reports the work tree with a trailing separator; normalise it away.
    repo.workdir().map(|dir| dir.components().collect())
}

/// The commit checked out in the repository that contains `dir` (none when not in git or
/// before the first commit).
pub fn head_commit(dir: &Path) -> Option<String> {
    let repo = Repository::discover(dir).ok()?;
    let head = repo.head().ok()?;
    head.target().map(|oid| oid.to_string())
}

/// Where git looks for hook scripts in the repository that contains `dir` (honours
/// `core.hooksPath`).
pub fn hooks_dir(dir: &Path) -> Result<PathBuf, git2::Error> {
    let repo = Repository::discover(dir)?;
    let configured = repo.config()?.get_path("core.hooksPath").ok();
    Ok(match configured {
        Some(path) if path.is_absolute() => path,
        Some(path) => repo.workdir().unwrap_or(repo.path()).join(path),
        None => repo.path().join("hooks"),
    })
}

/// A value of the repository's local git config.
pub fn local_config(dir: &Path, key: &str) -> Result<Option<String>, git2::Error> {
    let repo = Repository::discover(dir)?;
    let config = repo.config()?.open_level(git2::ConfigLevel::Local)?;
    Ok(config.get_string(key).ok())
}

/// Sets (`Some`) or removes (`None`) a key of the repository's local git config.
pub fn set_local_config(dir: &Path, key: &str, value: Option<&str>) -> Result<(), git2::Error> {
    let repo = Repository::discover(dir)?;
    let mut config = repo.config()?.open_level(git2::ConfigLevel::Local)?;
    match value {
        Some(value) => config.set_str(key, value),
        None => match config.remove(key) {
            Err(err) if err.code() == git2::ErrorCode::NotFound => Ok(()),
            other => other,
        },
    }
}
