//! The ignore files a walk honours inside (and above) the work tree: `.gitignore`, `.ignore`
//! and `.epiphanyignore`, read here rather than by the walker's library, because they are
//! committed content: a committed `.gitignore` that is a link to `/dev/zero` would otherwise be
//! read without end (the library reads ignore files line by line, and that line never ends).
//!
//! Each file is read only when it is a regular file, not a link, of at most
//! [`IGNORE_FILE_LIMIT`] bytes; git itself does not follow a linked `.gitignore` either. A file
//! that is not read is as if it were absent, and is named in [`Ignores::refused`].
//!
//! The rules are the library's (and so ripgrep's): for each kind, the ignore file nearest to a
//! path that has a matching pattern decides (ignore or re-include), and `.epiphanyignore`
//! outranks `.ignore`, which outranks `.gitignore`. A `.gitignore` counts only inside a git
//! repository, and not above the repository a path is in. The walker still reads git's exclude
//! file and the global gitignore itself; a re-include here cannot override them.
//!
//! Rules are read once per directory and shared by every thread of a parallel walk. This module
//! never writes.

use std::borrow::Cow;
use std::collections::HashMap;
use std::path::Path;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::Mutex;

use ignore::gitignore::Gitignore;
use ignore::gitignore::GitignoreBuilder;

use crate::state::fs;

/// The most of one ignore file that is read (far larger than any real one; git stops at
/// 100 MiB).
pub const IGNORE_FILE_LIMIT: u64 = 1024 * 1024;

/// The custom ignore file only epiphany reads.
pub const EPIPHANY_IGNORE: &str = ".epiphanyignore";

/// The ignore files of one directory, strongest first.
const FILES: [&str; 3] = [EPIPHANY_IGNORE, ".ignore", ".gitignore"];

/// The rules of one directory, with those of the directories above it.
struct DirRules {
    parent: Option<Arc<DirRules>>,
    /// The directory, spelled as the walk spells paths below it (above the walk's root: as the
    /// file system has it).
    dir: PathBuf,
    /// Above the walk's root: the root relative to this directory, to match paths below it.
    root_below: Option<PathBuf>,
    /// One matcher per file of [`FILES`], in that order.
    matchers: [Gitignore; 3],
    /// The directory holds `.git`: the top of a repository.
    has_git: bool,
    /// This directory or one above it holds `.git`: `.gitignore` files count.
    in_git: bool,
}

impl DirRules {
    /// The path `path` (below the walk's `root`) as this directory's matchers read it.
    fn relative<'p>(&self, root: &Path, path: &'p Path) -> Option<Cow<'p, Path>> {
        match &self.root_below {
            Some(root_below) => Some(Cow::Owned(root_below.join(path.strip_prefix(root).ok()?))),
            None => path.strip_prefix(&self.dir).ok().map(Cow::Borrowed),
        }
    }

    fn is_empty(&self) -> bool {
        self.matchers.iter().all(Gitignore::is_empty)
    }
}

/// The ignore rules of a walk rooted at one directory.
pub struct Ignores {
    root: PathBuf,
    dirs: Mutex<HashMap<PathBuf, Arc<DirRules>>>,
    refused: Mutex<Vec<String>>,
}

impl Ignores {
    /// The rules of a walk of `root`: its own ignore files and those of every directory above
    /// it are read now; those of the directories below it as the walk reaches them.
    pub fn new(root: &Path) -> Ignores {
        let ignores = Ignores {
            root: root.to_path_buf(),
            dirs: Mutex::new(HashMap::new()),
            refused: Mutex::new(Vec::new()),
        };
        let real_root = root.canonicalize().unwrap_or_else(|_| root.to_path_buf());
        let mut above: Vec<&Path> = real_root.ancestors().skip(1).collect();
        above.reverse();
        let mut parent = None;
        for dir in above {
            let root_below = real_root.strip_prefix(dir).ok().map(Path::to_path_buf);
            parent = Some(Arc::new(ignores.read(parent, dir, root_below)));
        }
        let rules = Arc::new(ignores.read(parent, root, None));
        lock(&ignores.dirs).insert(root.to_path_buf(), rules);
        ignores
    }

    /// Whether the rules ignore `path` (below the root, as the walk spells it).
    pub fn is_ignored(&self, path: &Path, is_dir: bool) -> bool {
        let Some(parent) = path.parent().filter(|_| path != self.root) else {
            return false;
        };
        let rules = self.rules(parent);
        let any_git = rules.in_git;
        let mut decided: [Option<bool>; 3] = [None; 3];
        let mut saw_git = false;
        for rules in chain(&rules) {
            if !rules.is_empty()
                && let Some(relative) = rules.relative(&self.root, path)
            {
                for (kind, matcher) in rules.matchers.iter().enumerate() {
                    let counts = kind < 2 || (any_git && !saw_git);
                    if counts && decided[kind].is_none() {
                        let found = matcher.matched(&relative, is_dir);
                        if !found.is_none() {
                            decided[kind] = Some(found.is_ignore());
                        }
                    }
                }
            }
            saw_git |= rules.has_git;
        }
        decided.into_iter().flatten().next().unwrap_or(false)
    }

    /// The ignore files that were not read, relative to the root (or as the file system has
    /// them, above it).
    pub fn refused(&self) -> Vec<String> {
        lock(&self.refused).clone()
    }

    /// The rules of `dir` (the root or below it), read the first time they are asked for.
    fn rules(&self, dir: &Path) -> Arc<DirRules> {
        if let Some(rules) = lock(&self.dirs).get(dir) {
            return Arc::clone(rules);
        }
        let parent = dir
            .parent()
            .filter(|_| dir.starts_with(&self.root) && dir != self.root)
            .map(|parent| self.rules(parent));
        let rules = Arc::new(self.read(parent, dir, None));
        // Another thread may have read them meanwhile: keep the first.
        Arc::clone(lock(&self.dirs).entry(dir.to_path_buf()).or_insert(rules))
    }

    fn read(
        &self,
        parent: Option<Arc<DirRules>>,
        dir: &Path,
        root_below: Option<PathBuf>,
    ) -> DirRules {
        let matchers = FILES.map(|name| self.read_file(dir, name));
        let has_git = std::fs::symlink_metadata(dir.join(".git")).is_ok();
        DirRules {
            in_git: has_git || parent.as_ref().is_some_and(|parent| parent.in_git),
            parent,
            dir: dir.to_path_buf(),
            root_below,
            matchers,
            has_git,
        }
    }

    /// The matcher of the ignore file `name` in `dir`: empty when there is none, or when it is
    /// not read (then it is noted as refused).
    fn read_file(&self, dir: &Path, name: &str) -> Gitignore {
        let path = dir.join(name);
        let bytes = match fs::read_below(dir, &path, IGNORE_FILE_LIMIT) {
            Ok(Some(bytes)) => bytes,
            Ok(None) => return Gitignore::empty(),
            Err(_) => {
                let shown = path.strip_prefix(&self.root).unwrap_or(&path);
                lock(&self.refused).push(shown.to_string_lossy().into_owned());
                return Gitignore::empty();
            }
        };
        let mut builder = GitignoreBuilder::new(dir);
        let text = String::from_utf8_lossy(&bytes);
        // Git skips a byte order mark at the start of the file.
        let text = text.strip_prefix('\u{feff}').unwrap_or(&text);
        for line in text.lines() {
            // A pattern git cannot read either is skipped, as git skips it.
            let _ = builder.add_line(Some(path.clone()), line);
        }
        builder.build().unwrap_or_else(|_| Gitignore::empty())
    }
}

/// `rules` and the rules of every directory above it, nearest first.
fn chain(rules: &Arc<DirRules>) -> impl Iterator<Item = &DirRules> {
    std::iter::successors(Some(rules.as_ref()), |rules| rules.parent.as_deref())
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree(files: &[(&str, &str)]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::create_dir(dir.path().join(".git")).expect("git");
        for (path, text) in files {
            let path = dir.path().join(path);
            std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
            std::fs::write(path, text).expect("write");
        }
        dir
    }

    #[test]
    fn the_nearest_file_decides_and_custom_files_outrank_gitignore() {
        let dir = tree(&[
            (".gitignore", "*.log\nbuild/\n"),
            ("keep/.gitignore", "!kept.log\n"),
            (".epiphanyignore", "secret.txt\n"),
            (".ignore", "!build/\n"),
        ]);
        let root = dir.path();
        let ignores = Ignores::new(root);
        assert!(ignores.is_ignored(&root.join("a.log"), false));
        assert!(ignores.is_ignored(&root.join("keep/other.log"), false));
        assert!(!ignores.is_ignored(&root.join("keep/kept.log"), false));
        assert!(ignores.is_ignored(&root.join("secret.txt"), false));
        // `.ignore` re-includes what `.gitignore` ignores.
        assert!(!ignores.is_ignored(&root.join("build"), true));
        assert!(!ignores.is_ignored(&root.join("src/main.rs"), false));
        assert_eq!(ignores.refused(), Vec::<String>::new());
    }

    #[test]
    fn gitignore_counts_only_inside_a_repository() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(dir.path().join(".gitignore"), "*.log\n").expect("write");
        std::fs::write(dir.path().join(".ignore"), "*.tmp\n").expect("write");
        let ignores = Ignores::new(dir.path());
        assert!(!ignores.is_ignored(&dir.path().join("a.log"), false));
        assert!(ignores.is_ignored(&dir.path().join("a.tmp"), false));
    }

    #[test]
    fn a_nested_repository_ignores_the_outer_gitignore() {
        let dir = tree(&[(".gitignore", "*.log\n"), ("inner/.git/HEAD", "")]);
        let ignores = Ignores::new(dir.path());
        assert!(ignores.is_ignored(&dir.path().join("a.log"), false));
        assert!(!ignores.is_ignored(&dir.path().join("inner/a.log"), false));
    }

    #[test]
    fn links_devices_and_huge_files_are_not_read() {
        let dir = tree(&[("big/.gitignore", ""), ("real/.gitignore", "*.log\n")]);
        let root = dir.path();
        std::os::unix::fs::symlink("/dev/zero", root.join(".gitignore")).expect("link");
        std::os::unix::fs::symlink(root.join("real/.gitignore"), root.join(".ignore"))
            .expect("link");
        let big = std::fs::File::create(root.join("big/.gitignore")).expect("create");
        big.set_len(IGNORE_FILE_LIMIT + 1).expect("grow");
        let ignores = Ignores::new(root);
        assert!(!ignores.is_ignored(&root.join("a.log"), false));
        assert!(!ignores.is_ignored(&root.join("big/a.log"), false));
        assert!(ignores.is_ignored(&root.join("real/a.log"), false));
        let mut refused = ignores.refused();
        refused.sort();
        assert_eq!(refused, [".gitignore", ".ignore", "big/.gitignore"]);
    }
}
