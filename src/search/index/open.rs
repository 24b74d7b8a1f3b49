//! Opening the published generation for reading: checking that everything in it is the
//! tool's own (no links, nothing tantivy would read whole that is large), that its manifest,
//! index revision, schema and commit agree, and retrying with a newer generation published
//! meanwhile.
//!
//! Read-only: this module never writes, and it reports an unusable index as a reason, not an
//! error.

use anyhow::Result;
use tantivy::Index;
use tantivy::ReloadPolicy;
use tantivy::Searcher;

use super::Layout;
use super::schema;
use super::with_analyzer;
use crate::search::INDEX_REVISION;
use crate::search::manifest::Loaded;
use crate::search::manifest::Manifest;
use crate::state::error::StoreError;
use crate::state::fs;

/// The largest `meta.json` or `.managed.json` tantivy is let read, whole, from a generation:
/// they list segments and files, a few kilobytes.
const TANTIVY_JSON_LIMIT: u64 = 16 * 1024 * 1024;
/// The files of tantivy's that it reads whole.
const TANTIVY_JSON_FILES: [&str; 2] = ["meta.json", ".managed.json"];

/// A usable persistent index with the manifest that describes it.
pub struct Persistent {
    /// What is indexed.
    pub manifest: Manifest,
    /// The tantivy index.
    pub index: Index,
    /// A reader's view of it, opened (so every segment was found and readable).
    pub searcher: Searcher,
}

/// The outcome of opening the persistent index.
pub enum Opened {
    /// Nothing was indexed yet.
    Missing,
    /// An index exists but cannot be used; the manifest when it could be read.
    Unusable {
        /// Why.
        reason: String,
        /// The manifest, when it decodes.
        manifest: Option<Manifest>,
    },
    /// Ready to search (it may still be stale).
    Ready(Persistent),
}

/// Opens the published generation of the persistent index, checking that its manifest,
/// configuration and commit agree. When a build publishes a newer generation while this
/// opens the old one and the old one fails, it opens the newer one.
pub fn open(layout: &Layout) -> Opened {
    let mut current = match layout.current() {
        Ok(current) => current,
        Err(err) => {
            return Opened::Unusable {
                reason: format!("{err:#}"),
                manifest: None,
            };
        }
    };
    loop {
        let Some(generation) = current else {
            return Opened::Missing;
        };
        let opened = open_generation(layout, generation);
        if matches!(opened, Opened::Ready(_)) {
            return opened;
        }
        match layout.current() {
            Ok(Some(newer)) if newer > generation => current = Some(newer),
            _ => return opened,
        }
    }
}

/// Checks that generation `generation` is entirely the tool's own before anything in it is
/// opened: every directory from the store down to its index a directory itself, every entry a
/// regular file (the index directory aside), and the files tantivy reads whole small. A cache
/// can be committed like anything else, links included, and tantivy follows them: it creates
/// `.tantivy-meta.lock` wherever that name leads at every read, and reads `meta.json` and
/// `.managed.json` to their end.
fn check_generation(layout: &Layout, generation: u64) -> Result<(), String> {
    let index_dir = layout.index_dir(generation);
    match fs::dirs_below(&layout.store_dir, &index_dir) {
        Ok(true) => {}
        Ok(false) => return Err(format!("generation {generation} has no index")),
        Err(err) => return Err(format!("{err:#}")),
    }
    for dir in [layout.generation_dir(generation), index_dir] {
        let entries = std::fs::read_dir(&dir)
            .map_err(|err| format!("cannot read `{}`: {err}", dir.display()))?;
        for entry in entries {
            let entry = entry.map_err(|err| format!("cannot read `{}`: {err}", dir.display()))?;
            let path = entry.path();
            let meta = std::fs::symlink_metadata(&path)
                .map_err(|err| format!("cannot read `{}`: {err}", path.display()))?;
            let name = entry.file_name();
            let problem = if meta.file_type().is_symlink() {
                Some(StoreError::Link { path })
            } else if meta.is_dir() && name == "index" {
                None
            } else if !meta.is_file() {
                Some(StoreError::NotAFile { path })
            } else if TANTIVY_JSON_FILES.iter().any(|file| name == *file)
                && meta.len() > TANTIVY_JSON_LIMIT
            {
                Some(StoreError::TooLarge {
                    path,
                    limit: TANTIVY_JSON_LIMIT,
                })
            } else {
                None
            };
            if let Some(problem) = problem {
                return Err(problem.to_string());
            }
        }
    }
    Ok(())
}

fn open_generation(layout: &Layout, generation: u64) -> Opened {
    if let Err(reason) = check_generation(layout, generation) {
        return Opened::Unusable {
            reason,
            manifest: None,
        };
    }
    let manifest = match Manifest::load(&layout.manifest_path(generation)) {
        Loaded::Missing => {
            return Opened::Unusable {
                reason: format!("generation {generation} has no manifest"),
                manifest: None,
            };
        }
        Loaded::Unusable(reason) => {
            return Opened::Unusable {
                reason,
                manifest: None,
            };
        }
        Loaded::Found(manifest) => manifest,
    };
    match open_index(layout, &manifest) {
        Ok((index, searcher)) => Opened::Ready(Persistent {
            manifest,
            index,
            searcher,
        }),
        Err(reason) => Opened::Unusable {
            reason,
            manifest: Some(manifest),
        },
    }
}

fn open_index(layout: &Layout, manifest: &Manifest) -> Result<(Index, Searcher), String> {
    if manifest.index_revision != INDEX_REVISION {
        return Err(format!(
            "the index was built by `{}`; this build uses `{INDEX_REVISION}`",
            manifest.index_revision
        ));
    }
    let index = Index::open_in_dir(layout.index_dir(manifest.generation))
        .map_err(|err| format!("the index does not open: {err}"))?;
    if index.schema() != schema().0 {
        return Err("the index has a different schema".to_owned());
    }
    let metas = index
        .load_metas()
        .map_err(|err| format!("the index metadata does not load: {err}"))?;
    if metas.payload != Some(manifest.generation.to_string()) {
        return Err("the index and its manifest are from different runs".to_owned());
    }
    let searcher = searcher(&index).map_err(|err| format!("the index does not load: {err}"))?;
    Ok((with_analyzer(index), searcher))
}

/// A reader's current view of an index.
pub fn searcher(index: &Index) -> Result<Searcher> {
    let reader = index
        .reader_builder()
        .reload_policy(ReloadPolicy::Manual)
        .try_into()?;
    Ok(reader.searcher())
}
