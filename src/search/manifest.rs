//! The index manifest: what was indexed, from which file versions, and how to tell what has
//! changed since (docs/retrieval.md#manifest, docs/retrieval.md#dirty-paths).
//!
//! One entry per walked file, skipped files included (so a binary file does not look new on
//! every query), with its size, modification time, content hash, chunk count and the id its
//! chunks carry in the index. Comparing the manifest with a fresh listing is stat-only; a file
//! is read and hashed only when its size or time differs, so `touch` alone does not make a
//! file dirty. The manifest is MessagePack with named fields (every query reads it, and it
//! decodes several times faster than the same JSON); it is written atomically and last,
//! after the index commit it describes; `generation` ties it to that commit. This module never touches the index; it
//! reads work-tree files only to stat and hash them.

use std::collections::HashMap;
use std::io::ErrorKind;
use std::io::Read;
use std::path::Path;

use anyhow::Result;
use serde::Deserialize;
use serde::Serialize;
use sha2::Digest;
use sha2::Sha256;

use crate::search::index::MANIFEST_LIMIT;
use crate::state::fs;
use crate::state::walk;
use crate::state::walk::DirStat;
use crate::state::walk::FileStat;
use crate::state::walk::Listing;
use crate::state::walk::Skip;

/// Bump when the manifest layout changes.
pub const SCHEMA_VERSION: u32 = 1;

/// What was indexed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Manifest {
    /// Layout version ([`SCHEMA_VERSION`]).
    pub schema_version: u32,
    /// The index configuration that built it (tokenizer, chunking, fields).
    pub index_revision: String,
    /// Matches the payload of the index commit this manifest describes.
    pub generation: u64,
    /// When the index was last written.
    pub indexed_at_unix_seconds: i64,
    /// The next unused file id.
    pub next_file_id: u64,
    /// One entry per walked file, sorted by path.
    #[serde(default)]
    pub files: Vec<FileEntry>,
    /// Every walked directory (the root has an empty path) with its time when walked.
    #[serde(default)]
    pub dirs: Vec<DirStat>,
    /// The embedding model of the generation's chunk vectors, when it has them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub semantic: Option<SemanticIndex>,
    /// The manifest file's own modification time, read at load, not stored. A file or
    /// directory whose time is not older may have changed again within the file system's
    /// time resolution without its time moving, so it is never trusted by its stat alone.
    #[serde(skip)]
    pub written_unix_nanos: i64,
}

/// The model an index generation's chunk vectors were computed with.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SemanticIndex {
    /// The model directory (absolute).
    pub model: String,
    /// The model's fingerprint ([`crate::search::embed::Model::fingerprint`]) and the vector
    /// chunk shape (`:10x2`): vectors are reused only while both stay the same.
    pub fingerprint: String,
    /// Vector length.
    pub dim: u32,
    /// Chunk vectors stored.
    pub vector_count: u64,
}

/// One walked file as it was indexed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct FileEntry {
    /// Path relative to the root.
    pub path: String,
    /// Size in bytes.
    pub size_bytes: u64,
    /// Modification time, nanoseconds since the Unix epoch.
    pub modified_unix_nanos: i64,
    /// SHA-256 of the contents, hex (empty for files too large to read).
    pub content_hash: String,
    /// The id its chunks carry in the index.
    pub file_id: u64,
    /// Chunks in the index.
    pub chunk_count: u32,
    /// Why it is not in the index, when it is not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skipped: Option<Skip>,
}

impl FileEntry {
    /// Whether the listing's stat matches this entry.
    fn same_stat(&self, stat: &FileStat) -> bool {
        self.size_bytes == stat.size_bytes && self.modified_unix_nanos == stat.modified_unix_nanos
    }
}

/// The outcome of reading a manifest.
#[derive(Debug)]
pub enum Loaded {
    /// No manifest: nothing was indexed yet.
    Missing,
    /// A manifest that cannot be used, and why.
    Unusable(String),
    /// A manifest of the expected schema.
    Found(Manifest),
}

impl Manifest {
    /// Reads the manifest at `path`.
    pub fn load(path: &Path) -> Loaded {
        let (bytes, written) = match read_with_time(path) {
            Ok(Some(read)) => read,
            Ok(None) => return Loaded::Missing,
            Err(err) => return Loaded::Unusable(format!("cannot read the manifest: {err:#}")),
        };
        match rmp_serde::from_slice::<Manifest>(&bytes) {
            Ok(mut manifest) if manifest.schema_version == SCHEMA_VERSION => {
                manifest.written_unix_nanos = written;
                Loaded::Found(manifest)
            }
            Ok(manifest) => Loaded::Unusable(format!(
                "manifest schema version {} (this build reads {SCHEMA_VERSION})",
                manifest.schema_version
            )),
            Err(err) => Loaded::Unusable(format!("the manifest does not decode: {err}")),
        }
    }

    /// Writes the manifest atomically.
    pub fn save(&self, path: &Path) -> Result<()> {
        fs::write_atomic(path, &rmp_serde::to_vec_named(self)?)
    }

    /// Files with chunks in the index.
    pub fn indexed_file_count(&self) -> usize {
        self.files
            .iter()
            .filter(|file| file.chunk_count > 0)
            .count()
    }

    /// Chunks in the index.
    pub fn indexed_chunk_count(&self) -> u64 {
        self.files
            .iter()
            .map(|file| u64::from(file.chunk_count))
            .sum()
    }
}

/// The manifest's bytes and time (`None` when there is none), read without following a link
/// and only while it is a regular file of at most [`MANIFEST_LIMIT`] bytes.
fn read_with_time(path: &Path) -> Result<Option<(Vec<u8>, i64)>> {
    if std::fs::symlink_metadata(path).is_err_and(|err| err.kind() == ErrorKind::NotFound) {
        return Ok(None);
    }
    let file = fs::open_no_follow_read(path)?;
    let meta = file.metadata()?;
    if !meta.is_file() || meta.len() > MANIFEST_LIMIT {
        anyhow::bail!("it is not a regular file of at most {MANIFEST_LIMIT} bytes");
    }
    let mut bytes = Vec::new();
    file.take(MANIFEST_LIMIT).read_to_end(&mut bytes)?;
    Ok(Some((bytes, walk::modified_nanos(&meta))))
}

/// The listing of the work tree rebuilt from the manifest, when no directory has changed
/// since the manifest was written: one `stat` per directory and file, no directory reads and
/// no ignore matching. `None` when a directory changed (an entry was added, removed or
/// renamed), an ignore file changed, or a time is too recent to trust; then walk instead.
/// Ignore rules outside the work tree (the global gitignore, `.git/info/exclude`, parent
/// directories) are not watched: a change there shows at the next walk.
pub fn unchanged_listing(root: &Path, manifest: &Manifest) -> Option<Listing> {
    let trusted = |time: i64| time < manifest.written_unix_nanos;
    if manifest.dirs.is_empty() {
        return None;
    }
    let dir_paths: Vec<&str> = manifest.dirs.iter().map(|dir| dir.path.as_str()).collect();
    for (dir, meta) in manifest.dirs.iter().zip(walk::stat_all(root, &dir_paths)) {
        let meta = meta?;
        let time = walk::modified_nanos(&meta);
        if !meta.is_dir() || time != dir.modified_unix_nanos || !trusted(time) {
            return None;
        }
    }
    let file_paths: Vec<&str> = manifest
        .files
        .iter()
        .map(|file| file.path.as_str())
        .collect();
    let mut files = Vec::with_capacity(manifest.files.len());
    for (entry, meta) in manifest.files.iter().zip(walk::stat_all(root, &file_paths)) {
        let meta = meta?;
        if !meta.is_file() {
            return None;
        }
        let stat = FileStat {
            path: entry.path.clone(),
            size_bytes: meta.len(),
            modified_unix_nanos: walk::modified_nanos(&meta),
        };
        if walk::is_ignore_file(&entry.path) && !entry.same_stat(&stat) {
            return None;
        }
        files.push(stat);
    }
    Some(Listing {
        files,
        dirs: manifest.dirs.clone(),
        unreadable: Vec::new(),
    })
}

/// A file read now: its hash and, when it is text, its contents.
#[derive(Debug, Clone)]
pub struct Fetched {
    /// SHA-256 of the contents, hex (empty when too large or unreadable).
    pub content_hash: String,
    /// The text, or why it is skipped.
    pub text: Result<String, Skip>,
}

/// Reads and hashes a listed file.
pub fn fetch(root: &Path, file: &FileStat) -> Fetched {
    if file.size_bytes > walk::max_bytes(&file.path) {
        return Fetched {
            content_hash: String::new(),
            text: Err(Skip::TooLarge),
        };
    }
    match std::fs::read(root.join(&file.path)) {
        Ok(bytes) => Fetched {
            content_hash: hex::encode(Sha256::digest(&bytes)),
            text: walk::text_of(&file.path, bytes),
        },
        Err(_) => Fetched {
            content_hash: String::new(),
            text: Err(Skip::Unreadable),
        },
    }
}

/// How the work tree differs from a manifest.
#[derive(Debug, Default)]
pub struct Changes<'a> {
    /// Entries whose file is unchanged (stat equal, or stat changed but content equal); with
    /// the current stat.
    pub unchanged: Vec<(&'a FileEntry, &'a FileStat)>,
    /// Entries whose file changed, with the file as it is now.
    pub modified: Vec<(&'a FileEntry, &'a FileStat, Fetched)>,
    /// Listed files the manifest does not have.
    pub added: Vec<&'a FileStat>,
    /// Entries whose file is gone.
    pub removed: Vec<&'a FileEntry>,
    /// Whether some unchanged file had to be hashed to prove it (its stat changed or was too
    /// recent to trust): recording its stat again spares that next time.
    pub rehashed: bool,
}

impl Changes<'_> {
    /// The dirty paths (docs/retrieval.md#dirty-paths): modified, added and removed files, sorted.
    pub fn dirty_paths(&self) -> Vec<String> {
        let mut paths: Vec<String> = self
            .modified
            .iter()
            .map(|(entry, _, _)| entry.path.clone())
            .chain(self.added.iter().map(|file| file.path.clone()))
            .chain(self.removed.iter().map(|entry| entry.path.clone()))
            .collect();
        paths.sort();
        paths
    }

    /// Whether anything besides modification times differs.
    pub fn is_clean(&self) -> bool {
        self.modified.is_empty() && self.added.is_empty() && self.removed.is_empty()
    }
}

/// Compares the manifest with a listing of the work tree under `root`. Files whose stat
/// differs, or is too recent to trust, are read and hashed.
pub fn compare<'a>(manifest: &'a Manifest, files: &'a [FileStat], root: &Path) -> Changes<'a> {
    let listed: HashMap<&str, &FileStat> = files
        .iter()
        .map(|file| (file.path.as_str(), file))
        .collect();
    let mut changes = Changes::default();
    for entry in &manifest.files {
        let Some(&stat) = listed.get(entry.path.as_str()) else {
            changes.removed.push(entry);
            continue;
        };
        if entry.same_stat(stat) && entry.modified_unix_nanos < manifest.written_unix_nanos {
            changes.unchanged.push((entry, stat));
            continue;
        }
        let fetched = fetch(root, stat);
        if !fetched.content_hash.is_empty() && fetched.content_hash == entry.content_hash {
            changes.unchanged.push((entry, stat));
            changes.rehashed = true;
        } else {
            changes.modified.push((entry, stat, fetched));
        }
    }
    let known: HashMap<&str, ()> = manifest
        .files
        .iter()
        .map(|entry| (entry.path.as_str(), ()))
        .collect();
    changes.added = files
        .iter()
        .filter(|file| !known.contains_key(file.path.as_str()))
        .collect();
    changes
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(path: &str, size: u64, time: i64, hash: &str) -> FileEntry {
        FileEntry {
            path: path.to_owned(),
            size_bytes: size,
            modified_unix_nanos: time,
            content_hash: hash.to_owned(),
            file_id: 0,
            chunk_count: 1,
            skipped: None,
        }
    }

    fn stat(path: &str, size: u64, time: i64) -> FileStat {
        FileStat {
            path: path.to_owned(),
            size_bytes: size,
            modified_unix_nanos: time,
        }
    }

    #[test]
    fn compare_finds_modified_added_removed_and_ignores_touch() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(dir.path().join("same.rs"), "same").expect("write");
        std::fs::write(dir.path().join("touched.rs"), "touched").expect("write");
        std::fs::write(dir.path().join("edited.rs"), "edited").expect("write");
        let touched_hash = hex::encode(Sha256::digest(b"touched"));
        let manifest = Manifest {
            schema_version: SCHEMA_VERSION,
            index_revision: "test".to_owned(),
            generation: 1,
            indexed_at_unix_seconds: 0,
            next_file_id: 4,
            dirs: Vec::new(),
            semantic: None,
            written_unix_nanos: 10,
            files: vec![
                entry("edited.rs", 6, 1, "old"),
                entry("gone.rs", 1, 1, "x"),
                entry("same.rs", 4, 1, "irrelevant"),
                entry("touched.rs", 7, 1, &touched_hash),
            ],
        };
        let files = vec![
            stat("edited.rs", 6, 2),
            stat("new.rs", 3, 2),
            stat("same.rs", 4, 1),
            stat("touched.rs", 7, 2),
        ];
        let changes = compare(&manifest, &files, dir.path());
        assert_eq!(changes.dirty_paths(), ["edited.rs", "gone.rs", "new.rs"]);
        assert_eq!(changes.unchanged.len(), 2);
        assert!(changes.rehashed);
        assert!(!changes.is_clean());
        let (_, _, fetched) = &changes.modified[0];
        assert_eq!(fetched.text.as_deref(), Ok("edited"));
    }

    /// Sets the time of every file and directory under `root` to 2001.
    fn age(root: &Path) {
        let past = std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_000_000_000);
        let listing = walk::list(root);
        let files = listing.files.iter().map(|file| &file.path);
        for path in files.chain(listing.dirs.iter().map(|dir| &dir.path)) {
            std::fs::File::open(root.join(path))
                .and_then(|file| file.set_modified(past))
                .expect("set time");
        }
    }

    fn manifest_of(listing: &Listing) -> Manifest {
        Manifest {
            schema_version: SCHEMA_VERSION,
            index_revision: "test".to_owned(),
            generation: 1,
            indexed_at_unix_seconds: 0,
            next_file_id: listing.files.len() as u64,
            files: listing
                .files
                .iter()
                .map(|file| entry(&file.path, file.size_bytes, file.modified_unix_nanos, ""))
                .collect(),
            dirs: listing.dirs.clone(),
            semantic: None,
            written_unix_nanos: 2_000_000_000 * 1_000_000_000,
        }
    }

    #[test]
    fn unchanged_listing_stats_instead_of_walking_until_a_directory_changes() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path();
        std::fs::create_dir_all(root.join("src")).expect("mkdir");
        std::fs::write(root.join("src/a.rs"), "a").expect("write");
        std::fs::write(root.join(".gitignore"), "target/\n").expect("write");
        age(root);
        let listing = walk::list(root);
        let manifest = manifest_of(&listing);
        let relisted = unchanged_listing(root, &manifest).expect("nothing changed");
        assert_eq!(relisted.files, listing.files);
        assert_eq!(relisted.dirs, listing.dirs);

        std::fs::write(root.join("src/a.rs"), "edited in place").expect("write");
        let relisted = unchanged_listing(root, &manifest).expect("no directory changed");
        assert_eq!(relisted.files[1].size_bytes, 15);

        let too_recent = Manifest {
            written_unix_nanos: listing.dirs[0].modified_unix_nanos,
            ..manifest.clone()
        };
        assert!(unchanged_listing(root, &too_recent).is_none());

        std::fs::write(root.join(".gitignore"), "target/\nvendor/\n").expect("write");
        assert!(
            unchanged_listing(root, &manifest).is_none(),
            "ignore rules changed"
        );
        age(root);
        let manifest = manifest_of(&walk::list(root));
        assert!(unchanged_listing(root, &manifest).is_some());
        std::fs::write(root.join("src/b.rs"), "b").expect("write");
        assert!(unchanged_listing(root, &manifest).is_none(), "src/ changed");
    }

    #[test]
    fn load_reports_missing_corrupt_and_old_schema() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("manifest.msgpack");
        assert!(matches!(Manifest::load(&path), Loaded::Missing));
        std::fs::write(&path, b"\xc1 not msgpack").expect("write");
        assert!(matches!(Manifest::load(&path), Loaded::Unusable(_)));
        let old = serde_json::json!({"schema_version": 0, "index_revision": "x", "generation": 0,
            "indexed_at_unix_seconds": 0, "next_file_id": 0});
        std::fs::write(&path, rmp_serde::to_vec_named(&old).expect("encode")).expect("write");
        let Loaded::Unusable(reason) = Manifest::load(&path) else {
            panic!("an old schema must be unusable");
        };
        assert!(reason.contains("schema version 0"), "{reason}");
    }
}
