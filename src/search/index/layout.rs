//! Where the persistent index lives: `retrieval/CURRENT` naming the published generation, the
//! generation directories `retrieval/gen-<N>/` and the files in them, and the build lock
//! `retrieval/lock`; choosing a new generation's number, publishing it and removing old ones.
//!
//! Paths and small files only: this module never opens a tantivy index nor decides what a
//! generation holds.

use std::fs::File;
use std::path::Path;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::Result;

use crate::search::error::SearchError;
use crate::search::outlines::Outlines;
use crate::search::vectors;
use crate::state::fs;
use crate::state::fs::LockMode;

/// Where the persistent index lives inside the store's cache directory.
#[derive(Debug, Clone)]
pub struct Layout {
    /// The store directory holding the cache: nothing below it is read through a link.
    pub(super) store_dir: PathBuf,
    /// `cache/retrieval`.
    pub(super) dir: PathBuf,
}

/// The file naming the published generation.
const CURRENT: &str = "CURRENT";
/// The most of `CURRENT` that is read: one number.
const CURRENT_LIMIT: u64 = 64;
/// Generation directories are `gen-<N>`.
const GENERATION_PREFIX: &str = "gen-";
/// The most of a manifest that is read (256 MiB: about a million and a half files).
pub const MANIFEST_LIMIT: u64 = 256 * 1024 * 1024;

impl Layout {
    /// The layout under a store's cache directory (`.epiphany/cache`).
    pub fn new(cache_dir: &Path) -> Layout {
        Layout {
            store_dir: cache_dir.parent().unwrap_or(cache_dir).to_path_buf(),
            dir: cache_dir.join("retrieval"),
        }
    }

    /// The published generation, when there is one; an error says why `CURRENT` is not read.
    pub fn current(&self) -> Result<Option<u64>> {
        let Some(bytes) = fs::read_below(&self.store_dir, &self.dir.join(CURRENT), CURRENT_LIMIT)?
        else {
            return Ok(None);
        };
        Ok(std::str::from_utf8(&bytes)
            .ok()
            .and_then(|text| text.trim().parse().ok()))
    }

    /// The directory of generation `generation`.
    pub fn generation_dir(&self, generation: u64) -> PathBuf {
        self.dir.join(format!("{GENERATION_PREFIX}{generation}"))
    }

    /// The manifest file of a generation.
    pub fn manifest_path(&self, generation: u64) -> PathBuf {
        self.generation_dir(generation).join("manifest.msgpack")
    }

    /// The outlines of a generation's parsed files.
    pub fn outlines_path(&self, generation: u64) -> PathBuf {
        self.generation_dir(generation)
            .join(crate::search::outlines::FILE_NAME)
    }

    /// The outlines of generation `generation`; `None` when they cannot be read.
    pub fn load_outlines(&self, generation: u64) -> Option<Outlines> {
        Outlines::load(&self.store_dir, &self.outlines_path(generation))
    }

    /// The chunk vectors of a generation.
    pub fn vectors_path(&self, generation: u64) -> PathBuf {
        self.generation_dir(generation).join(vectors::FILE_NAME)
    }

    /// The tantivy index of a generation.
    pub(super) fn index_dir(&self, generation: u64) -> PathBuf {
        self.generation_dir(generation).join("index")
    }

    /// Takes the build lock, or fails at once when another build holds it.
    pub(super) fn lock(&self) -> Result<File> {
        let path = self.dir.join("lock");
        let file = fs::open_no_follow(&path, true)?;
        if fs::lock(&file, &path, LockMode::Exclusive, Duration::ZERO)? {
            return Ok(file);
        }
        Err(SearchError::IndexBusy { path }.into())
    }

    /// The number of a new generation: above every one on disk or published. Generations only
    /// grow, so a manifest never matches an index committed after it, and a new directory
    /// never reuses one a reader may still have open.
    pub(super) fn next_generation(&self) -> u64 {
        self.generations_on_disk()
            .into_iter()
            .chain(self.current().ok().flatten())
            .max()
            .unwrap_or(0)
            + 1
    }

    /// The generations present on disk, published or not.
    fn generations_on_disk(&self) -> Vec<u64> {
        let Ok(entries) = std::fs::read_dir(&self.dir) else {
            return Vec::new();
        };
        entries
            .flatten()
            .filter_map(|entry| {
                entry
                    .file_name()
                    .to_str()?
                    .strip_prefix(GENERATION_PREFIX)?
                    .parse()
                    .ok()
            })
            .collect()
    }

    /// Makes `generation` the one readers open; its manifest and index are complete and
    /// synced before `CURRENT` names them.
    pub(super) fn publish(&self, generation: u64) -> Result<()> {
        fs::sync_dir(&self.index_dir(generation))?;
        fs::sync_dir(&self.generation_dir(generation))?;
        fs::write_atomic(
            &self.dir.join(CURRENT),
            format!("{generation}\n").as_bytes(),
        )
    }

    /// Removes every generation but `current` and the one before it, and what the
    /// single-directory layout of earlier versions left. Best effort: a leftover costs disk only.
    pub(super) fn remove_old(&self, current: u64) {
        for generation in self.generations_on_disk() {
            if generation + 1 < current || generation > current {
                let _ = std::fs::remove_dir_all(self.generation_dir(generation));
            }
        }
        let _ = std::fs::remove_dir_all(self.dir.join("index"));
        let _ = std::fs::remove_file(self.dir.join("manifest.msgpack"));
    }
}
