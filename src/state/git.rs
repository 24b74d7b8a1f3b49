//! The git adapter: everything the tool asks of git goes through here (git2, no subprocess).
//!
//! Owns finding the work-tree root, reading the checked-out commit, and listing the files that
//! changed between earlier commits and the work tree. Answers `None` outside git instead of
//! failing: a store works without git, it just cannot anchor to commits.
//!
//! The repository is found as git finds it: from the directory asked about, or where `GIT_DIR`
//! points, with the work tree `GIT_WORK_TREE`, `core.worktree` or the `.git` file's directory
//! names (never the git directory's parent, which `--separate-git-dir` puts elsewhere).

use std::collections::BTreeMap;
use std::collections::BTreeSet;
use std::ffi::OsString;
use std::path::Path;
use std::path::PathBuf;
use std::sync::OnceLock;

use anyhow::Context;
use anyhow::Result;
use git2::Diff;
use git2::DiffFindOptions;
use git2::DiffOptions;
use git2::Oid;
use git2::Repository;
use git2::RepositoryOpenFlags;

use crate::state::ignores::IGNORE_FILE_LIMIT;
use crate::state::paths::slash_key;

/// Git's own variables that say where the repository is, as `ctx::Ctx` read them, resolved
/// against the directory the command runs in (as git resolves them after `-C`).
#[derive(Debug, Clone, Default)]
pub struct Environment {
    /// `GIT_DIR`: the git directory, used instead of a search from the directory asked about.
    pub git_dir: Option<PathBuf>,
    /// `GIT_WORK_TREE`: the top of the work tree.
    pub work_tree: Option<PathBuf>,
    /// The directory the command runs in: git takes it for the top of the work tree when
    /// `GIT_DIR` is set and neither `GIT_WORK_TREE` nor `core.worktree` names one.
    pub cwd: PathBuf,
}

/// The environment of this process: like the variables themselves, one for the whole process.
static ENVIRONMENT: OnceLock<Environment> = OnceLock::new();

/// Makes every later lookup honour `environment` (the first call wins).
pub fn use_environment(environment: Environment) {
    let _ = ENVIRONMENT.set(environment);
}

/// Opens the repository that contains `dir` the way git would. `Repository::discover` is not
/// used: it reopens the git directory it found, so a work tree whose `.git` is a file pointing
/// elsewhere (`--separate-git-dir`) would get the git directory's parent as its work tree.
fn open(dir: &Path) -> Result<Repository, git2::Error> {
    let environment = ENVIRONMENT.get();
    // `FROM_ENV` makes libgit2 honour the rest of git's variables (`GIT_INDEX_FILE`,
    // `GIT_OBJECT_DIRECTORY`, `GIT_COMMON_DIR`, ...); `GIT_DIR` it reads only when given no
    // path, and then relative to the process's directory, which `-C` does not change.
    let no_ceiling: [&Path; 0] = [];
    let Some(git_dir) = environment.and_then(|e| e.git_dir.as_deref()) else {
        let repo = Repository::open_ext(dir, RepositoryOpenFlags::FROM_ENV, no_ceiling)?;
        if let Some(work_tree) = environment.and_then(|e| e.work_tree.as_deref()) {
            repo.set_workdir(work_tree, false)?;
        }
        return Ok(repo);
    };
    let flags = RepositoryOpenFlags::FROM_ENV
        | RepositoryOpenFlags::NO_SEARCH
        | RepositoryOpenFlags::NO_DOTGIT;
    let repo = Repository::open_ext(git_dir, flags, no_ceiling)?;
    let configured = repo.config()?.get_path("core.worktree").is_ok();
    match environment.and_then(|e| e.work_tree.as_deref()) {
        Some(work_tree) => repo.set_workdir(work_tree, false)?,
        None if !configured && !repo.is_bare() => {
            repo.set_workdir(environment.map_or(dir, |e| e.cwd.as_path()), false)?
        }
        None => {}
    }
    Ok(repo)
}

/// The root of the git work tree that contains `dir`, if any (`git rev-parse --show-toplevel`).
pub fn work_tree_root(dir: &Path) -> Option<PathBuf> {
    let repo = open(dir).ok()?;
    // git2 reports the work tree with a trailing separator; normalise it away.
    repo.workdir().map(|dir| dir.components().collect())
}

/// The git directory of the repository that contains `dir` when that repository has no work
/// tree (it is bare).
pub fn bare_git_dir(dir: &Path) -> Option<PathBuf> {
    let repo = open(dir).ok()?;
    repo.workdir()
        .is_none()
        .then(|| repo.path().components().collect())
}

/// The commit checked out in the repository that contains `dir` (none when not in git or
/// before the first commit).
pub fn head_commit(dir: &Path) -> Option<String> {
    let repo = open(dir).ok()?;
    let head = repo.head().ok()?;
    head.target().map(|oid| oid.to_string())
}

/// How long the log of HEAD's moves (`logs/HEAD` in the git directory of the work tree that
/// contains `dir`) is: it grows whenever HEAD moves (a commit, a reset, a checkout, a rebase),
/// even back to a commit it was at before. `None` outside git or when git keeps no such log.
pub fn head_log_len(dir: &Path) -> Option<u64> {
    head_log_len_of(&open(dir).ok()?)
}

fn head_log_len_of(repo: &Repository) -> Option<u64> {
    let log = repo.path().join("logs").join("HEAD");
    std::fs::symlink_metadata(log).ok().map(|meta| meta.len())
}

/// Where a work tree stands while git is at rest: the commit checked out and how far the log
/// of HEAD's moves reaches. Two equal values mean nothing git did moved HEAD in between (not
/// even away and back), so files missing since then were not taken by a checkout.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Checkout {
    /// The commit checked out.
    pub commit: String,
    /// The length of `logs/HEAD` in the work tree's git directory.
    pub head_log: u64,
}

/// Where the work tree that contains `dir` stands, while no merge, rebase, cherry-pick, revert
/// or bisect is under way (one can be aborted, which takes back files the work tree holds now);
/// `None` otherwise, outside git, before the first commit and when git keeps no log of HEAD.
pub fn settled_checkout(dir: &Path) -> Option<Checkout> {
    let repo = open(dir).ok()?;
    if repo.state() != git2::RepositoryState::Clean {
        return None;
    }
    let commit = repo.head().ok()?.target()?.to_string();
    let head_log = head_log_len_of(&repo)?;
    Some(Checkout { commit, head_log })
}

/// What HEAD's commit holds in one directory: the id of its tree, and its files by name. Two
/// equal tree ids hold the same files.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct CommittedFiles {
    /// The id of the directory's tree in HEAD's commit.
    pub tree: String,
    /// Its files (blobs), by name.
    pub files: BTreeMap<String, CommittedFile>,
}

/// One file of a commit: its blob and the blob's size.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct CommittedFile {
    /// The id of its blob.
    pub blob: String,
    /// Its size in bytes.
    pub size: u64,
}

/// The files HEAD's commit holds in `dir` (a directory of the work tree of the repository that
/// contains it), by name, with their sizes. `None` outside git, before the first commit, or
/// when the commit holds no such directory. Reading a size costs an object lookup per file, so
/// what `known` measured before is not measured again: when HEAD's tree of `dir` is `known`'s,
/// `known` is the answer, and otherwise only the blobs `known` does not have are looked up
/// (a commit usually adds a segment or two).
pub fn committed_files(dir: &Path, known: Option<&CommittedFiles>) -> Option<CommittedFiles> {
    // From the parent: `dir` itself may be gone, which is what the caller asks about.
    let parent = dir.parent()?;
    let repo = open(parent).ok()?;
    let workdir = repo.workdir()?;
    let canonical = |path: &Path| path.canonicalize().unwrap_or_else(|_| path.to_path_buf());
    let relative = canonical(parent)
        .strip_prefix(canonical(workdir))
        .ok()?
        .join(dir.file_name()?);
    let tree = repo.head().ok()?.peel_to_tree().ok()?;
    let entry = tree.get_path(&relative).ok()?;
    let id = entry.id().to_string();
    if let Some(known) = known.filter(|known| known.tree == id) {
        return Some(known.clone());
    }
    let subtree = entry.to_object(&repo).ok()?;
    let subtree = subtree.as_tree()?;
    let odb = repo.odb().ok()?;
    let mut files = BTreeMap::new();
    for entry in subtree.iter() {
        if entry.kind() != Some(git2::ObjectType::Blob) {
            continue;
        }
        let Ok(name) = entry.name() else {
            continue;
        };
        let blob = entry.id().to_string();
        let size = match known.and_then(|known| known.files.get(name)) {
            Some(file) if file.blob == blob => file.size,
            _ => match odb.read_header(entry.id()) {
                Ok((size, _)) => size as u64,
                Err(_) => continue,
            },
        };
        files.insert(name.to_owned(), CommittedFile { blob, size });
    }
    Some(CommittedFiles { tree: id, files })
}

/// Where git looks for hook scripts in the repository that contains `dir` (honours
/// `core.hooksPath`), with `..` folded and, where it exists, links resolved: where the
/// scripts really are, however the setting spells it.
pub fn hooks_dir(dir: &Path) -> Result<PathBuf, git2::Error> {
    let repo = open(dir)?;
    let configured = repo.config()?.get_path("core.hooksPath").ok();
    let hooks = match configured {
        Some(path) if path.is_absolute() => path,
        Some(path) => repo.workdir().unwrap_or(repo.path()).join(path),
        // A linked worktree runs the common directory's hooks, not its own git directory's.
        None => repo.commondir().join("hooks"),
    };
    let mut folded = PathBuf::new();
    for part in hooks.components() {
        match part {
            std::path::Component::ParentDir => {
                folded.pop();
            }
            std::path::Component::CurDir => {}
            other => folded.push(other),
        }
    }
    Ok(folded.canonicalize().unwrap_or(folded))
}

/// The git directory every worktree of the repository containing `dir` shares (`.git`).
pub fn common_dir(dir: &Path) -> Result<PathBuf, git2::Error> {
    Ok(open(dir)?.commondir().to_path_buf())
}

/// The git directory of the repository that contains `dir` (a worktree's own one in a worktree).
pub fn git_dir(dir: &Path) -> Result<PathBuf, git2::Error> {
    Ok(open(dir)?.path().to_path_buf())
}

/// Whether git ignores `path` (relative to the work tree of the repository containing `dir`,
/// or absolute inside it); `false` where git's own files cannot be read safely
/// ([`unreadable_git_files`]).
pub fn is_ignored(dir: &Path, path: &Path) -> bool {
    let Ok(repo) = open(dir) else {
        return false;
    };
    if !unreadable_git_files(&repo).is_empty() {
        return false;
    }
    // libgit2 takes the path relative to the work tree.
    let canonical = |path: &Path| path.canonicalize().unwrap_or_else(|_| path.to_path_buf());
    let relative = match (path.is_absolute(), repo.workdir()) {
        (true, Some(workdir)) => match canonical(path).strip_prefix(canonical(workdir)) {
            Ok(relative) => relative.to_path_buf(),
            Err(_) => return false,
        },
        _ => path.to_path_buf(),
    };
    repo.is_path_ignored(relative).unwrap_or(false)
}

/// A value of the repository's local git config.
pub fn local_config(dir: &Path, key: &str) -> Result<Option<String>, git2::Error> {
    let repo = open(dir)?;
    let config = repo.config()?.open_level(git2::ConfigLevel::Local)?;
    Ok(config.get_string(key).ok())
}

/// Sets (`Some`) or removes (`None`) a key of the repository's local git config.
pub fn set_local_config(dir: &Path, key: &str, value: Option<&str>) -> Result<(), git2::Error> {
    let repo = open(dir)?;
    let mut config = repo.config()?.open_level(git2::ConfigLevel::Local)?;
    match value {
        Some(value) => config.set_str(key, value),
        None => match config.remove(key) {
            Err(err) if err.code() == git2::ErrorCode::NotFound => Ok(()),
            other => other,
        },
    }
}

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
/// those at the top and every one git tracks) that are there as something other than a
/// regular file of at most [`IGNORE_FILE_LIMIT`] bytes, `/`-separated. libgit2 follows a link
/// where git refuses to, so a committed link to a FIFO would block a comparison with git and a
/// link to `/dev/zero` would never end: where one is found, libgit2 is not asked to read the
/// work tree.
fn unreadable_git_files(repo: &Repository) -> Vec<String> {
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
    paths
        .into_iter()
        .filter(|path| match std::fs::symlink_metadata(workdir.join(path)) {
            Err(_) => false,
            Ok(meta) => !meta.is_file() || meta.len() > IGNORE_FILE_LIMIT,
        })
        .collect()
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

/// Where `scope` lies in `repo`'s work tree; `None` when it lies outside (or there is none).
fn scope_prefix(repo: &Repository, scope: &Path) -> Result<Option<PathBuf>> {
    let Some(workdir) = repo.workdir() else {
        return Ok(None);
    };
    let canonical = |path: &Path| {
        path.canonicalize()
            .with_context(|| format!("failed to resolve `{}`", path.display()))
    };
    Ok(canonical(scope)?
        .strip_prefix(canonical(workdir)?)
        .ok()
        .map(Path::to_path_buf))
}

/// Files as commits held them: for each `(commit, path)` of `wanted` (`path` relative to
/// `scope`, `/`-separated), the contents when the commit has a regular file there of at most
/// `limit` bytes. What git lacks, or what is not such a file, is left out.
pub fn files_at(
    scope: &Path,
    wanted: &BTreeSet<(String, String)>,
    limit: usize,
) -> BTreeMap<(String, String), Vec<u8>> {
    let Ok(repo) = open(scope) else {
        return BTreeMap::new();
    };
    let Ok(Some(prefix)) = scope_prefix(&repo, scope) else {
        return BTreeMap::new();
    };
    let Ok(odb) = repo.odb() else {
        return BTreeMap::new();
    };
    let read = |commit: &str, path: &str| -> Option<Vec<u8>> {
        let tree = repo
            .find_commit(Oid::from_str(commit).ok()?)
            .ok()?
            .tree()
            .ok()?;
        let entry = tree.get_path(&prefix.join(path)).ok()?;
        let regular = matches!(entry.filemode(), 0o100644 | 0o100755);
        let (size, _) = odb.read_header(entry.id()).ok()?;
        if !regular || size > limit {
            return None;
        }
        Some(repo.find_blob(entry.id()).ok()?.content().to_vec())
    };
    wanted
        .iter()
        .filter_map(|(commit, path)| Some(((commit.clone(), path.clone()), read(commit, path)?)))
        .collect()
}

/// Removes every entry under `dir` (a directory of the work tree) from git's index, as
/// `git rm -r --cached` does, leaving the files alone. Answers how many entries it removed
/// (none outside git, or when nothing there was tracked).
pub fn untrack(dir: &Path) -> Result<usize> {
    let Ok(repo) = open(dir) else {
        return Ok(0);
    };
    let Some(workdir) = repo.workdir() else {
        return Ok(0);
    };
    let canonical = |path: &Path| path.canonicalize().unwrap_or_else(|_| path.to_path_buf());
    let Ok(relative) = canonical(dir)
        .strip_prefix(canonical(workdir))
        .map(Path::to_path_buf)
    else {
        return Ok(0);
    };
    let context = || format!("failed to remove `{}` from git's index", dir.display());
    let mut index = repo.index().with_context(context)?;
    let before = index.len();
    index.remove_dir(&relative, 0).with_context(context)?;
    let removed = before - index.len();
    if removed > 0 {
        index.write().with_context(context)?;
    }
    Ok(removed)
}

/// Which of the files `names` of `dir` (a directory of the work tree) a merge brought onto the
/// branch checked out: walking back along HEAD's first-parent line, a file that a commit holds
/// and its first parent does not came with that commit, by a merge when the commit has more
/// than one parent. A file HEAD does not hold came with the merge under way when `MERGE_HEAD`
/// holds it, and is otherwise the work tree's own (not committed yet). Answers the names a
/// merge brought; `None` outside git or before the first commit.
pub fn merged_in(dir: &Path, names: &BTreeSet<String>) -> Option<BTreeSet<String>> {
    let repo = open(dir).ok()?;
    let prefix = scope_prefix(&repo, dir).ok()??;
    let path = |name: &String| prefix.join(name);
    let holds = |tree: &git2::Tree<'_>, name: &String| tree.get_path(&path(name)).is_ok();
    let mut commit = repo.head().ok()?.peel_to_commit().ok()?;
    let head_tree = commit.tree().ok()?;
    let (mut pending, uncommitted): (BTreeSet<&String>, BTreeSet<&String>) =
        names.iter().partition(|name| holds(&head_tree, name));
    let merging = (repo.find_reference("MERGE_HEAD").ok())
        .and_then(|merge_head| merge_head.peel_to_tree().ok());
    let mut merged: BTreeSet<String> = (uncommitted.into_iter())
        .filter(|name| merging.as_ref().is_some_and(|tree| holds(tree, name)))
        .cloned()
        .collect();
    while !pending.is_empty() {
        let parent = commit.parent(0).ok();
        let parent_tree = parent.as_ref().and_then(|parent| parent.tree().ok());
        let came = |name: &&String| !parent_tree.as_ref().is_some_and(|tree| holds(tree, name));
        let (arrived, before): (BTreeSet<&String>, BTreeSet<&String>) =
            pending.into_iter().partition(came);
        if commit.parent_count() > 1 {
            merged.extend(arrived.into_iter().cloned());
        }
        pending = before;
        match parent {
            Some(parent) => commit = parent,
            None => break,
        }
    }
    Some(merged)
}

/// Whether the repository around `dir` is a shallow clone (its history cut off).
pub fn is_shallow(dir: &Path) -> bool {
    open(dir).is_ok_and(|repo| repo.is_shallow())
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

/// The variables by which git (and libgit2, which reads them) is told where a repository, its
/// index and its objects are: git sets some of them for its hooks (`GIT_DIR` in a linked
/// worktree). A process run on another repository must not inherit them.
pub const LOCATING_VARIABLES: [&str; 7] = [
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_INDEX_FILE",
    "GIT_COMMON_DIR",
    "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_NAMESPACE",
];

/// Whether `commit` of the repository that contains `dir` holds `path` (relative to the top of
/// its work tree, `/`-separated); `None` when git cannot tell (no such repository or commit).
pub fn commit_holds(dir: &Path, commit: &str, path: &Path) -> Option<bool> {
    let repo = open(dir).ok()?;
    let tree = repo
        .find_commit(Oid::from_str(commit).ok()?)
        .ok()?
        .tree()
        .ok()?;
    Some(tree.get_path(path).is_ok())
}

/// Whether the work tree that contains `dir` is exactly HEAD's commit: nothing staged,
/// changed or untracked (ignored files aside). `false` when git cannot tell.
pub fn is_clean(dir: &Path) -> bool {
    let Ok(repo) = open(dir) else {
        return false;
    };
    let mut options = git2::StatusOptions::new();
    options.include_untracked(true).include_ignored(false);
    repo.statuses(Some(&mut options))
        .is_ok_and(|statuses| statuses.is_empty())
}

/// Makes `into` (an empty directory) a repository whose work tree is `commit` of the
/// repository that contains `dir`, checked out, as a fresh clone of it would have it: it
/// borrows that repository's objects (`objects/info/alternates`, as `git clone --shared`)
/// instead of copying them, and its shallow boundary. Neither repository is found through
/// git's variables: `into` is opened by its path alone.
pub fn check_out_at(dir: &Path, commit: &str, into: &Path) -> Result<()> {
    let context = || {
        format!(
            "failed to check out commit {commit} in `{}`",
            into.display()
        )
    };
    let source = open(dir).with_context(context)?;
    let common = source.commondir().to_path_buf();
    let objects = common
        .join("objects")
        .canonicalize()
        .with_context(context)?;
    let repo = Repository::init(into).with_context(context)?;
    let info = repo.path().join("objects").join("info");
    std::fs::create_dir_all(&info).with_context(context)?;
    std::fs::write(info.join("alternates"), format!("{}\n", objects.display()))
        .with_context(context)?;
    if source.is_shallow() {
        std::fs::copy(common.join("shallow"), repo.path().join("shallow")).with_context(context)?;
    }
    let repo = Repository::open(into).with_context(context)?;
    let oid = Oid::from_str(commit).with_context(context)?;
    let target = repo.find_commit(oid).with_context(context)?;
    let mut checkout = git2::build::CheckoutBuilder::new();
    checkout.force();
    repo.checkout_tree(target.as_object(), Some(&mut checkout))
        .with_context(context)?;
    repo.set_head_detached(oid).with_context(context)?;
    Ok(())
}
