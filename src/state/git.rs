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
