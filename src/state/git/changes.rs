//! What changed between commits and the work tree, as `freshness` and the watcher ask: the
//! paths each commit differs in, git's renames, and whether git's own files can be read safely
//! before libgit2 reads the work tree. Part of the git adapter (see the parent module).

use std::collections::BTreeMap;
use std::collections::BTreeSet;
use std::ffi::OsString;
use std::path::Path;
use std::path::PathBuf;

use anyhow::Context;
use anyhow::Result;
use git2::Diff;
use git2::DiffFindOptions;
use git2::DiffOptions;
use git2::Oid;
use git2::Repository;

use super::open;
use super::scope_prefix;
use crate::state::ignores::IGNORE_FILE_LIMIT;
use crate::state::paths::slash_key;
use crate::state::walk;

/// Files that differ between commits and the work tree.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WorkTreeChanges {
    /// For each requested commit this repository has: the paths changed between it and the
    /// work tree (committed since, staged, unstaged, untracked), relative to the scope,
    /// `/`-separated.
    pub since: BTreeMap<String, BTreeSet<String>>,
    /// Renames seen on the way: old path → new path (both are also listed as changed).
    pub renames: BTreeMap<String, String>,
    /// Requested commits the repository does not have, each with the commit that stood in for
    /// it: where the records written there entered this branch (rebased or squash-merged
    /// work). Their paths are listed under the requested commit.
    pub stand_ins: BTreeMap<String, String>,
    /// Requested commits the repository does not have and no commit could stand in for (the
    /// records' files are not committed, or a shallow clone ends before they entered).
    pub unknown_commits: Vec<String>,
}

/// For commits the repository does not have: per commit, the store files (paths relative to
/// the store's root) that hold records written there, each with the length it has once the
/// first of them is in it.
pub type WrittenAt = BTreeMap<String, Vec<(PathBuf, u64)>>;

/// Why the work tree could not be compared with git.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Uncompared {
    /// The store is not inside a git work tree.
    Outside,
    /// Files git reads for itself are not regular files it can read safely (see
    /// [`unreadable_git_files`]), work-tree paths `/`-separated.
    Unreadable(Vec<String>),
}

impl std::fmt::Display for Uncompared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Uncompared::Outside => write!(f, "the store is not inside its git work tree"),
            Uncompared::Unreadable(paths) => write!(
                f,
                "the work tree is not compared with git, because git's own {} not a regular file of at most 1 MiB (a link, a FIFO or a device: git refuses to read one, and reading it could block or never end); make each a regular file",
                paths
                    .iter()
                    .map(|path| format!("`{path}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
                    + if paths.len() == 1 { " is" } else { " are" },
            ),
        }
    }
}

/// The files git reads from the work tree for itself, wherever they are in it.
const FILES_GIT_READS: [&str; 3] = [".gitignore", ".gitattributes", ".gitmodules"];

/// The work-tree files git reads for itself (`.gitignore`, `.gitattributes`, `.gitmodules`:
/// those at the top, every one git tracks, and every one in a directory the walk reaches,
/// untracked directories included, where libgit2 reads them when it lists untracked files)
/// that are there as something other than a regular file of at most [`IGNORE_FILE_LIMIT`]
/// bytes, `/`-separated. libgit2 follows a link where git refuses to, so a committed link to a
/// FIFO would block a comparison with git, a link to `/dev/zero` would never end, and so would
/// a FIFO left in an untracked directory: where one is found, libgit2 is not asked to read the
/// work tree.
pub(super) fn unreadable_git_files(repo: &Repository) -> Vec<String> {
    let Some(workdir) = repo.workdir() else {
        return Vec::new();
    };
    let read_by_git = |path: &str| {
        let name = path.rsplit('/').next().unwrap_or(path);
        FILES_GIT_READS.contains(&name)
    };
    let mut paths: BTreeSet<String> = FILES_GIT_READS
        .iter()
        .map(|name| name.to_string())
        .collect();
    if let Ok(index) = repo.index() {
        paths.extend(
            (index.iter())
                .filter_map(|entry| String::from_utf8(entry.path).ok())
                .filter(|path| read_by_git(path)),
        );
    }
    let mut unsafe_paths: BTreeSet<String> = (paths.into_iter())
        .filter(|path| match std::fs::symlink_metadata(workdir.join(path)) {
            Err(_) => false,
            Ok(meta) => !meta.is_file() || meta.len() > IGNORE_FILE_LIMIT,
        })
        .collect();
    unsafe_paths.extend(walk::unsafe_files_named(
        workdir,
        &FILES_GIT_READS,
        IGNORE_FILE_LIMIT,
    ));
    unsafe_paths.into_iter().collect()
}

/// Lists, for each of `commits`, the files under `scope` that changed between that commit and
/// the work tree, leaving out `exclude` (a directory relative to `scope`) and ignored files.
/// [`Uncompared`] when `scope` is not inside a git work tree or git's own files there cannot
/// be read safely.
///
/// A commit the repository does not have (its branch was rebased or squash-merged, the clone
/// is shallow) is stood in for by the commit where the first of the records written there
/// entered HEAD's first-parent line: the records were true of the code as it was there at the
/// latest. `written_at` tells, for all such commits at once, where those records are: for
/// each commit, each store file (relative to `scope`) with the length it has once the first of
/// them is in it.
///
/// The work tree is compared with HEAD once; each commit adds only a tree-to-tree comparison
/// with HEAD, so many anchors cost little more than one.
pub fn work_tree_changes(
    scope: &Path,
    commits: &[String],
    exclude: &Path,
    written_at: &mut dyn FnMut(&[&str]) -> WrittenAt,
) -> Result<Result<WorkTreeChanges, Uncompared>> {
    let Ok(repo) = open(scope) else {
        return Ok(Err(Uncompared::Outside));
    };
    let Some(prefix) = scope_prefix(&repo, scope)? else {
        return Ok(Err(Uncompared::Outside));
    };
    let unreadable = unreadable_git_files(&repo);
    if !unreadable.is_empty() {
        return Ok(Err(Uncompared::Unreadable(unreadable)));
    }
    let context = || format!("failed to compare `{}` with git", scope.display());
    let head_tree = match repo.head() {
        Ok(head) => Some(head.peel_to_tree().with_context(context)?),
        Err(_) => None,
    };

    let mut changes = WorkTreeChanges::default();
    // Listed once: each commit's diff adds only its own tree's names.
    let names = entry_names(&repo, &prefix, &[head_tree.as_ref()]);
    let local = match diff_options(names.clone(), &prefix, exclude) {
        Some(mut options) => {
            options.include_untracked(true).recurse_untracked_dirs(true);
            let uncommitted = repo
                .diff_tree_to_workdir_with_index(head_tree.as_ref(), Some(&mut options))
                .with_context(context)?;
            changed_paths(uncommitted, &prefix, exclude, &mut changes.renames)?
        }
        None => BTreeSet::new(),
    };

    let looked_up: Vec<(&String, Option<git2::Commit<'_>>)> = (commits.iter())
        .map(|commit| {
            let found = Oid::from_str(commit).and_then(|oid| repo.find_commit(oid));
            (commit, found.ok())
        })
        .collect();
    let gone: Vec<&str> = (looked_up.iter())
        .filter(|(_, found)| found.is_none())
        .map(|(commit, _)| commit.as_str())
        .collect();
    // Every gone commit is looked for in one search of the rollout.
    let mut written = match gone.is_empty() {
        true => BTreeMap::new(),
        false => written_at(&gone),
    };
    for (commit, found) in looked_up {
        let tree = match found {
            Some(found) => found.tree(),
            None => {
                let files: Vec<(PathBuf, u64)> = (written.remove(commit).unwrap_or_default())
                    .into_iter()
                    .map(|(file, len)| (prefix.join(file), len))
                    .collect();
                match entered_at(&repo, &files) {
                    Some(stand_in) => {
                        changes
                            .stand_ins
                            .insert(commit.clone(), stand_in.id().to_string());
                        stand_in.tree()
                    }
                    None => {
                        changes.unknown_commits.push(commit.clone());
                        continue;
                    }
                }
            }
        };
        let tree = tree.with_context(context)?;
        let mut with_tree = names.clone();
        with_tree.extend(tree_names(&repo, &tree, &prefix));
        let mut paths = match diff_options(with_tree, &prefix, exclude) {
            Some(mut options) => {
                let committed = repo
                    .diff_tree_to_tree(Some(&tree), head_tree.as_ref(), Some(&mut options))
                    .with_context(context)?;
                changed_paths(committed, &prefix, exclude, &mut changes.renames)?
            }
            None => BTreeSet::new(),
        };
        paths.extend(local.iter().cloned());
        changes.since.insert(commit.clone(), paths);
    }
    Ok(Ok(changes))
}

/// The oldest commit on HEAD's first-parent line from which on one of `files` (relative to the
/// repository root; append-only) is committed at least as long as given: where the first
/// record they stand for entered the branch. `None` when none is committed at HEAD, or when a
/// shallow clone's history ends before it entered.
fn entered_at<'r>(repo: &'r Repository, files: &[(PathBuf, u64)]) -> Option<git2::Commit<'r>> {
    let odb = repo.odb().ok()?;
    let holds = |commit: &git2::Commit<'_>| {
        let Ok(tree) = commit.tree() else {
            return false;
        };
        files.iter().any(|(file, len)| {
            tree.get_path(file)
                .and_then(|entry| odb.read_header(entry.id()))
                .is_ok_and(|(size, _)| size as u64 >= *len)
        })
    };
    let mut commit = repo.head().ok()?.peel_to_commit().ok()?;
    if files.is_empty() || !holds(&commit) {
        return None;
    }
    loop {
        match commit.parent(0) {
            Ok(parent) if holds(&parent) => commit = parent,
            Ok(_) => return Some(commit),
            // A root: the files came with the first commit, unless history was cut short here.
            Err(_) => return (!repo.is_shallow()).then_some(commit),
        }
    }
}

/// The entries of `prefix` (the whole tree when empty) that `trees`, the index or the work
/// tree hold; `None` for a name that is no name of this system (not UTF-8 outside Unix).
fn entry_names(
    repo: &Repository,
    prefix: &Path,
    trees: &[Option<&git2::Tree<'_>>],
) -> BTreeSet<Option<OsString>> {
    let mut names: BTreeSet<Option<OsString>> = BTreeSet::new();
    if let Some(workdir) = repo.workdir()
        && let Ok(entries) = std::fs::read_dir(workdir.join(prefix))
    {
        names.extend(entries.filter_map(|entry| Some(Some(entry.ok()?.file_name()))));
    }
    if let Ok(index) = repo.index() {
        for entry in index.iter() {
            let Some(path) = os_name(&entry.path).map(PathBuf::from) else {
                names.insert(None);
                continue;
            };
            let first = (path.strip_prefix(prefix).ok()).and_then(|rest| rest.iter().next());
            names.extend(first.map(|first| Some(first.to_os_string())));
        }
    }
    for tree in trees.iter().flatten() {
        names.extend(tree_names(repo, tree, prefix));
    }
    names
}

/// The entries of `prefix` in `tree` (see [`entry_names`]).
fn tree_names(
    repo: &Repository,
    tree: &git2::Tree<'_>,
    prefix: &Path,
) -> BTreeSet<Option<OsString>> {
    let at_prefix = match prefix.as_os_str().is_empty() {
        true => Some(tree.clone()),
        false => (tree.get_path(prefix).ok())
            .and_then(|entry| entry.to_object(repo).ok()?.into_tree().ok()),
    };
    (at_prefix.iter())
        .flat_map(git2::Tree::iter)
        .map(|entry| os_name(entry.name_bytes()))
        .collect()
}

/// A diff of `prefix` (the whole tree when empty) without `exclude` (an entry of `prefix`):
/// the other `names` of `prefix` ([`entry_names`]) as literal paths, so that libgit2 never
/// walks into `exclude` (a pattern that excludes it still lists and stats every file below
/// it: a store's thousands of segments). `None` when nothing else is there. A name that is no
/// name of this system falls back to patterns: libgit2 takes the first that matches, and a
/// leading `!` excludes.
fn diff_options(
    mut names: BTreeSet<Option<OsString>>,
    prefix: &Path,
    exclude: &Path,
) -> Option<DiffOptions> {
    let mut options = DiffOptions::new();
    if names.remove(&None) {
        let mut excluded = OsString::from("!");
        excluded.push(prefix.join(exclude));
        options.pathspec(excluded);
        match prefix.as_os_str().is_empty() {
            true => options.pathspec("*"),
            false => options.pathspec(prefix),
        };
        return Some(options);
    }
    names.remove(&Some(exclude.as_os_str().to_os_string()));
    names.remove(&Some(OsString::from(".git")));
    if names.is_empty() {
        return None;
    }
    options.disable_pathspec_match(true);
    for name in names.into_iter().flatten() {
        options.pathspec(prefix.join(name));
    }
    Some(options)
}

/// A file name as git stores it (bytes), as a name of this system.
#[cfg(unix)]
fn os_name(bytes: &[u8]) -> Option<OsString> {
    use std::os::unix::ffi::OsStrExt;
    Some(std::ffi::OsStr::from_bytes(bytes).to_os_string())
}

/// A file name as git stores it (bytes), as a name of this system.
#[cfg(not(unix))]
fn os_name(bytes: &[u8]) -> Option<OsString> {
    std::str::from_utf8(bytes).ok().map(OsString::from)
}

/// The old and new path of every delta (renames detected), relative to `prefix`, skipping
/// anything under `exclude`.
fn changed_paths(
    mut diff: Diff<'_>,
    prefix: &Path,
    exclude: &Path,
    renames: &mut BTreeMap<String, String>,
) -> Result<BTreeSet<String>> {
    diff.find_similar(Some(
        DiffFindOptions::new().renames(true).for_untracked(true),
    ))
    .context("failed to detect renames")?;
    let key = |path: Option<&Path>| {
        let relative = path?.strip_prefix(prefix).ok()?;
        if relative.starts_with(exclude) {
            return None;
        }
        Some(slash_key(&relative.to_string_lossy()))
    };
    let mut paths = BTreeSet::new();
    for delta in diff.deltas() {
        let old = key(delta.old_file().path());
        let new = key(delta.new_file().path());
        if delta.status() == git2::Delta::Renamed
            && let (Some(old), Some(new)) = (&old, &new)
        {
            renames.insert(old.clone(), new.clone());
        }
        paths.extend(old);
        paths.extend(new);
    }
    Ok(paths)
}
