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
use std::path::Path;
use std::path::PathBuf;
use std::sync::OnceLock;

use anyhow::Context;
use anyhow::Result;
use git2::Oid;
use git2::Repository;
use git2::RepositoryOpenFlags;

mod changes;
mod trails;

pub use changes::Uncompared;
pub use changes::WorkTreeChanges;
pub use changes::WrittenAt;
use changes::unreadable_git_files;
pub use changes::work_tree_changes;
pub use trails::trails;

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
    #[serde(with = "entries_in_order")]
    pub files: BTreeMap<String, CommittedFile>,
}

/// [`CommittedFiles::files`] as a sequence of `[name, blob, size]` in name order: a read after
/// a year of commits decodes thousands of them, and a map rebuilt from entries in order costs
/// no comparisons per entry, where one filled entry by entry costs a search each.
mod entries_in_order {
    use std::collections::BTreeMap;

    use serde::Deserialize;
    use serde::Deserializer;
    use serde::Serializer;

    use super::CommittedFile;

    pub fn serialize<S: Serializer>(
        files: &BTreeMap<String, CommittedFile>,
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(
            files
                .iter()
                .map(|(name, file)| (name, &file.blob, file.size)),
        )
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<BTreeMap<String, CommittedFile>, D::Error> {
        let entries = Vec::<(String, String, u64)>::deserialize(deserializer)?;
        Ok((entries.into_iter())
            .map(|(name, blob, size)| (name, CommittedFile { blob, size }))
            .collect())
    }
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
pub fn committed_files(dir: &Path, known: Option<CommittedFiles>) -> Option<CommittedFiles> {
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
    let known = match known {
        Some(known) if known.tree == id => return Some(known),
        known => known,
    };
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
        let size = match known.as_ref().and_then(|known| known.files.get(name)) {
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

/// Where `scope` lies in `repo`'s work tree; `None` when it lies outside (or there is none).
pub(super) fn scope_prefix(repo: &Repository, scope: &Path) -> Result<Option<PathBuf>> {
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
/// changed or untracked (ignored files aside). `false` when git cannot tell, or when its own
/// files cannot be read safely ([`unreadable_git_files`]).
pub fn is_clean(dir: &Path) -> bool {
    let Ok(repo) = open(dir) else {
        return false;
    };
    if !unreadable_git_files(&repo).is_empty() {
        return false;
    }
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
