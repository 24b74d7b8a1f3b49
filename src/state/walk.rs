//! The one workspace walker: which files and directories count as part of the repository.
//!
//! Every command that walks the work tree (`index`, `retrieve`, freshness) goes through
//! [`list`], so they cannot disagree about which files exist. Rules
//! (docs/retrieval.md#walking): `.gitignore` (only inside a git repository), `.ignore`, git's
//! exclude file, the global gitignore and parent ignore files are honoured, plus an optional
//! `.epiphanyignore` (the ignore files in and above the work tree are read by
//! [`crate::state::ignores`], bounded and never through a link); hidden files are included;
//! `.git/` and `.epiphany/` are never entered; symbolic links are not followed. Output is
//! sorted by path, so listings are deterministic.
//!
//! [`read_text`] decides whether a listed file is text the tool can search: at most
//! [`max_bytes`] for its kind, no NUL byte, valid UTF-8. Files that fail are skipped and counted by
//! the caller, never fatal. This module reads the work tree; it never writes to it.

use std::fs::Metadata;
use std::path::Path;
use std::sync::Arc;
use std::sync::Mutex;
use std::time::UNIX_EPOCH;

use ignore::WalkBuilder;
use ignore::WalkState;
use serde::Serialize;

use crate::state::ignores::EPIPHANY_IGNORE;
use crate::state::ignores::Ignores;
use crate::state::paths::native_key;

/// Source and text files larger than this are not searched (4 MiB): central modules of real
/// projects reach hundreds of kilobytes, and chunking keeps each document short.
pub const MAX_FILE_BYTES: u64 = 4 * 1024 * 1024;

/// Data files (JSON, CSV, lock files, SVG, source maps...) larger than this are not searched
/// (256 KiB): past that size they are generated data, not something an agent reads.
pub const MAX_DATA_FILE_BYTES: u64 = 256 * 1024;

/// Extensions of data files, capped at [`MAX_DATA_FILE_BYTES`].
const DATA_EXTENSIONS: &[&str] = &[
    "csv", "geojson", "ipynb", "json", "jsonl", "lock", "log", "map", "ndjson", "svg", "tsv", "xml",
];

/// Whether `path` names a data file rather than source or prose (see [`DATA_EXTENSIONS`];
/// minified scripts count as data).
pub fn is_data_file(path: &str) -> bool {
    let name = path.rsplit('/').next().unwrap_or(path).to_ascii_lowercase();
    name.ends_with(".min.js")
        || name
            .rsplit_once('.')
            .is_some_and(|(_, extension)| DATA_EXTENSIONS.contains(&extension))
}

/// The largest file at `path` that is searched.
pub fn max_bytes(path: &str) -> u64 {
    if is_data_file(path) {
        MAX_DATA_FILE_BYTES
    } else {
        MAX_FILE_BYTES
    }
}

/// The names of the ignore files a walk reads inside the work tree.
const IGNORE_FILES: [&str; 3] = [".gitignore", ".ignore", EPIPHANY_IGNORE];

/// Whether `path` (relative, `/`-separated) is an ignore file a walk reads.
pub fn is_ignore_file(path: &str) -> bool {
    let name = path.rsplit('/').next().unwrap_or(path);
    IGNORE_FILES.contains(&name)
}

/// Directory names that are never walked: git's and the store's.
const EXCLUDED_DIRS: [&str; 2] = [".git", ".epiphany"];

/// One regular file in the listing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileStat {
    /// Path relative to the root, `/`-separated.
    pub path: String,
    /// Size in bytes (0 in a listing of names, [`list_names`]).
    pub size_bytes: u64,
    /// Modification time, nanoseconds since the Unix epoch (0 when unknown, and in a listing of
    /// names).
    pub modified_unix_nanos: i64,
}

/// One directory in the listing.
#[derive(Debug, Clone, PartialEq, Eq, serde::Deserialize, Serialize, schemars::JsonSchema)]
pub struct DirStat {
    /// Path relative to the root, `/`-separated; empty for the root itself.
    pub path: String,
    /// Modification time, nanoseconds since the Unix epoch (0 when unknown, and in a listing of
    /// names). It changes whenever an entry is added to, removed from or renamed in the directory.
    pub modified_unix_nanos: i64,
}

/// The files and directories under a root, sorted by path.
#[derive(Debug, Clone, Default)]
pub struct Listing {
    /// Regular files.
    pub files: Vec<FileStat>,
    /// Directories, the root first (with an empty path).
    pub dirs: Vec<DirStat>,
    /// Entries that could not be read or whose names are not UTF-8, each named as well as it
    /// can be (a name that is not UTF-8 with U+FFFD for its bad bytes).
    pub unreadable: Vec<String>,
}

/// Why a file was not searched.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Skip {
    /// Larger than [`max_bytes`] allows for its kind.
    TooLarge,
    /// Contains a NUL byte.
    Binary,
    /// Not valid UTF-8.
    NotUtf8,
    /// Could not be read.
    Unreadable,
}

/// How many files were skipped, by reason.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct SkipCounts {
    /// Larger than [`max_bytes`] allows for its kind.
    pub too_large: u32,
    /// Contains a NUL byte.
    pub binary: u32,
    /// Not valid UTF-8.
    pub not_utf8: u32,
    /// Could not be read (including unreadable directories and non-UTF-8 names).
    pub unreadable: u32,
}

impl SkipCounts {
    /// Counts one skipped file.
    pub fn add(&mut self, skip: Skip) {
        match skip {
            Skip::TooLarge => self.too_large += 1,
            Skip::Binary => self.binary += 1,
            Skip::NotUtf8 => self.not_utf8 += 1,
            Skip::Unreadable => self.unreadable += 1,
        }
    }

    /// All skipped files.
    pub fn total(&self) -> u32 {
        self.too_large + self.binary + self.not_utf8 + self.unreadable
    }
}

/// The walker builder every walk starts from (see the module docs for the rules). The ignore
/// files inside the work tree are read by `ignores`, never by the walker's library.
fn builder(root: &Path, ignores: &Arc<Ignores>) -> WalkBuilder {
    let mut builder = WalkBuilder::new(root);
    let ignores = Arc::clone(ignores);
    builder
        .hidden(false)
        .follow_links(false)
        .git_ignore(false)
        .ignore(false)
        .filter_entry(move |entry| {
            let name = entry.file_name();
            let is_dir = entry.file_type().is_some_and(|kind| kind.is_dir());
            !EXCLUDED_DIRS.iter().any(|excluded| name == *excluded)
                && !ignores.is_ignored(entry.path(), is_dir)
        });
    builder
}

/// What a walk learns of each entry beyond its path and kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Detail {
    /// Its size and modification time: a `stat` an entry.
    Stats,
    /// Nothing more.
    Names,
}

/// Lists every file and directory under `root` (in parallel, then sorted by path), with their
/// sizes and modification times.
pub fn list(root: &Path) -> Listing {
    list_with(root, Detail::Stats)
}

/// [`list`] without the sizes and modification times: every one is 0. For a search that opens
/// each file anyway (and asks the open file its size): a `stat` an entry was a fifth of the
/// system calls of `retrieve` without an index on cargo.
pub fn list_names(root: &Path) -> Listing {
    list_with(root, Detail::Names)
}

fn list_with(root: &Path, detail: Detail) -> Listing {
    let collected = Mutex::new(Listing::default());
    let ignores = Arc::new(Ignores::new(root));
    builder(root, &ignores).build_parallel().run(|| {
        Box::new(|entry| {
            let entry = match entry {
                Ok(entry) => entry,
                Err(err) => {
                    lock(&collected).unreadable.push(err.to_string());
                    return WalkState::Continue;
                }
            };
            let Some(file_type) = entry.file_type() else {
                return WalkState::Continue;
            };
            let relative = entry.path().strip_prefix(root).ok().and_then(Path::to_str);
            let meta = match detail {
                Detail::Stats => entry.metadata().map(Some),
                Detail::Names => Ok(None),
            };
            let (Some(relative), Ok(meta)) = (relative.map(native_key), meta) else {
                let named = entry.path().strip_prefix(root).unwrap_or(entry.path());
                let named = named.to_string_lossy().into_owned();
                lock(&collected).unreadable.push(named);
                return WalkState::Continue;
            };
            let modified_unix_nanos = meta.as_ref().map_or(0, modified_nanos);
            if file_type.is_dir() {
                lock(&collected).dirs.push(DirStat {
                    path: relative,
                    modified_unix_nanos,
                });
            } else if file_type.is_file() {
                lock(&collected).files.push(FileStat {
                    path: relative,
                    size_bytes: meta.as_ref().map_or(0, Metadata::len),
                    modified_unix_nanos,
                });
            }
            WalkState::Continue
        })
    });
    let mut listing = collected
        .into_inner()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    listing.unreadable.extend(ignores.refused());
    listing.files.sort_unstable_by(|a, b| a.path.cmp(&b.path));
    listing.dirs.sort_unstable_by(|a, b| a.path.cmp(&b.path));
    listing
}

/// The files named one of `names` (git's own: `.gitignore`, `.gitattributes`) in every
/// directory a walk of `root` reaches, tracked or not, that are something other than a regular
/// file of at most `limit` bytes (a link, a FIFO, a device), `/`-separated and sorted: a
/// library that reads such a file itself (libgit2 comparing the work tree, untracked
/// directories included) could block on it or never finish. Nothing is opened: the walk reads
/// directories, and the ignore files it honours through [`Ignores`].
pub fn unsafe_files_named(root: &Path, names: &[&str], limit: u64) -> Vec<String> {
    let found = Mutex::new(Vec::new());
    let ignores = Arc::new(Ignores::new(root));
    builder(root, &ignores).build_parallel().run(|| {
        Box::new(|entry| {
            let Ok(entry) = entry else {
                return WalkState::Continue;
            };
            let named = (entry.file_name().to_str()).is_some_and(|name| names.contains(&name));
            let unsafe_kind = || {
                let regular = entry.file_type().is_some_and(|kind| kind.is_file());
                !regular || entry.metadata().map_or(true, |meta| meta.len() > limit)
            };
            if named && entry.depth() > 0 && unsafe_kind() {
                let relative = entry.path().strip_prefix(root).unwrap_or(entry.path());
                let relative = native_key(&relative.to_string_lossy());
                found
                    .lock()
                    .unwrap_or_else(|poisoned| poisoned.into_inner())
                    .push(relative);
            }
            WalkState::Continue
        })
    });
    let mut found = found
        .into_inner()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    found.sort();
    found
}

/// Reads a listed file as searchable text, or says why it is skipped.
pub fn read_text(root: &Path, file: &FileStat) -> Result<String, Skip> {
    if file.size_bytes > max_bytes(&file.path) {
        return Err(Skip::TooLarge);
    }
    let bytes = std::fs::read(root.join(&file.path)).map_err(|_| Skip::Unreadable)?;
    text_of(&file.path, bytes)
}

/// Classifies the contents of the file at `path` as searchable text.
pub fn text_of(path: &str, bytes: Vec<u8>) -> Result<String, Skip> {
    if bytes.len() as u64 > max_bytes(path) {
        return Err(Skip::TooLarge);
    }
    if bytes.contains(&0) {
        return Err(Skip::Binary);
    }
    String::from_utf8(bytes).map_err(|_| Skip::NotUtf8)
}

fn lock(listing: &Mutex<Listing>) -> std::sync::MutexGuard<'_, Listing> {
    listing
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// `lstat` of each path under `root`, in order, spread over the available cores: checking a
/// few thousand files against a manifest is all kernel path lookups, which parallelise well.
pub fn stat_all(root: &Path, paths: &[&str]) -> Vec<Option<Metadata>> {
    // At most four threads, each with at least 256 paths.
    let threads = paths.len().div_ceil(256).min(4);
    crate::parallel::map_chunks_on(paths, threads, |part| {
        // One path buffer per thread: allocating per file costs more than the lookup itself.
        let mut full = root.to_path_buf();
        (part.iter())
            .map(|path| {
                full.push(path);
                let stat = std::fs::symlink_metadata(&full).ok();
                let os = full.as_mut_os_string();
                os.clear();
                os.push(root);
                stat
            })
            .collect()
    })
}

/// The modification time in nanoseconds since the Unix epoch (0 when unknown).
pub fn modified_nanos(meta: &Metadata) -> i64 {
    meta.modified()
        .ok()
        .and_then(|time| time.duration_since(UNIX_EPOCH).ok())
        .and_then(|since| i64::try_from(since.as_nanos()).ok())
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree() -> tempfile::TempDir {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path();
        for (path, contents) in [
            ("src/lib.rs", "fn main() {}\n"),
            (".hidden/config", "x\n"),
            (".git/HEAD", "ref\n"),
            (".epiphany/state.msgpack", "x"),
            ("skip/me.txt", "x\n"),
            (".epiphanyignore", "skip/\n"),
        ] {
            let path = root.join(path);
            std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
            std::fs::write(path, contents).expect("write");
        }
        dir
    }

    #[test]
    fn lists_sorted_files_and_dirs_without_git_store_or_ignored() {
        let dir = tree();
        let listing = list(dir.path());
        let files: Vec<&str> = listing.files.iter().map(|f| f.path.as_str()).collect();
        assert_eq!(files, [".epiphanyignore", ".hidden/config", "src/lib.rs"]);
        let dirs: Vec<&str> = listing.dirs.iter().map(|d| d.path.as_str()).collect();
        assert_eq!(dirs, ["", ".hidden", "src"]);
        assert!(listing.dirs.iter().all(|dir| dir.modified_unix_nanos > 0));
        assert_eq!(listing.files[2].size_bytes, 13);
        assert!(listing.files[2].modified_unix_nanos > 0);
        // The same entries by name alone, nothing asked of each.
        let names = list_names(dir.path());
        let paths = |files: &[FileStat]| files.iter().map(|f| f.path.clone()).collect::<Vec<_>>();
        assert_eq!(paths(&names.files), paths(&listing.files));
        assert_eq!(names.dirs.len(), listing.dirs.len());
        assert!(
            names
                .files
                .iter()
                .all(|f| f.size_bytes == 0 && f.modified_unix_nanos == 0)
        );
        assert!(names.dirs.iter().all(|d| d.modified_unix_nanos == 0));
    }

    #[test]
    fn text_of_skips_binary_non_utf8_and_large() {
        assert_eq!(text_of("a.rs", b"ok\n".to_vec()), Ok("ok\n".to_owned()));
        assert_eq!(text_of("a.rs", b"a\0b".to_vec()), Err(Skip::Binary));
        assert_eq!(text_of("a.rs", vec![0xff, 0xfe, b'a']), Err(Skip::NotUtf8));
        let large = vec![b'a'; MAX_FILE_BYTES as usize + 1];
        assert_eq!(text_of("a.rs", large), Err(Skip::TooLarge));
        let data = vec![b'a'; MAX_DATA_FILE_BYTES as usize + 1];
        assert_eq!(text_of("big.json", data.clone()), Err(Skip::TooLarge));
        assert!(text_of("big.py", data).is_ok());
        assert!(is_data_file("dist/app.min.js") && !is_data_file("src/app.js"));
    }
}
