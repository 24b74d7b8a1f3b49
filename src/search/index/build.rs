//! A build, step by step: take the lock, open the previous generation, choose the model, plan
//! the work (or only record new times when nothing changed), start the new generation's index
//! (forked from the previous one or empty), index the jobs, save the outlines, vectors and
//! manifest, publish the generation and remove old ones.
//!
//! The only writer of the persistent index; everything it writes goes into a generation that
//! no reader sees until [`Layout::publish`] names it.

use std::path::Path;
use std::path::PathBuf;

use anyhow::Context;
use anyhow::Result;
use tantivy::Index;
use tantivy::index::SegmentComponent;

use super::Layout;
use super::Opened;
use super::Persistent;
use super::embedding::Embedding;
use super::embedding::SemanticSetting;
use super::embedding::carry_vectors;
use super::embedding::resolve_model;
use super::embedding::vectors_fingerprint;
use super::open;
use super::plan::BuildMode;
use super::plan::Plan;
use super::plan::count;
use super::plan::with_stat;
use super::schema;
use super::with_analyzer;
use super::write::commit;
use super::write::write_jobs;
use super::write::writer_for;
use crate::search::INDEX_REVISION;
use crate::search::manifest;
use crate::search::manifest::FileEntry;
use crate::search::manifest::Manifest;
use crate::search::manifest::SemanticIndex;
use crate::search::outlines::FileOutline;
use crate::search::outlines::Outlines;
use crate::state::fs;
use crate::state::walk::Listing;

/// What a build did.
#[derive(Debug)]
pub struct Built {
    /// The manifest now on disk.
    pub manifest: Manifest,
    /// Full, incremental or nothing to do.
    pub mode: BuildMode,
    /// Why a full rebuild was needed, when the old index was unusable.
    pub rebuilt_because: Option<String>,
    /// Files read and indexed in this run.
    pub reindexed_files: u32,
    /// Files removed from the index.
    pub removed_files: u32,
    /// Why the model the previous generation used could not be used again (its vectors
    /// were dropped).
    pub semantic_problem: Option<String>,
    /// Chunk vectors this build computed (changed files only, unless the model changed).
    pub embedded_chunks: u64,
    /// Files of the index that used up their parse budget: they have no definitions.
    pub over_budget_files: Vec<String>,
}

/// How a build reports its progress and learns that its caller gave up on it.
pub struct Progress<'a> {
    /// Called after each file: files done, files to do.
    pub report: &'a mut dyn FnMut(u64, u64),
    /// Whether the caller gave up, asked before each file (on any thread): the build then
    /// stops with [`CANCELLED`] and leaves the index as it was.
    pub cancelled: &'a (dyn Fn() -> bool + Sync),
}

/// The error of a build its caller gave up on.
pub const CANCELLED: &str = "indexing was cancelled; the index is as it was";

/// The generation a build starts from, as it opened.
struct Previous {
    /// The usable index, when there is one.
    index: Option<Persistent>,
    /// Why the index there cannot be used, when it cannot.
    rebuilt_because: Option<String>,
    /// The embedding model it recorded, usable or not.
    recorded: Option<SemanticIndex>,
}

impl Previous {
    fn open(layout: &Layout) -> Previous {
        match open(layout) {
            Opened::Ready(persistent) => Previous {
                recorded: persistent.manifest.semantic.clone(),
                index: Some(persistent),
                rebuilt_because: None,
            },
            Opened::Missing => Previous {
                index: None,
                rebuilt_because: None,
                recorded: None,
            },
            Opened::Unusable { reason, manifest } => Previous {
                index: None,
                rebuilt_because: Some(reason),
                recorded: manifest.and_then(|manifest| manifest.semantic),
            },
        }
    }

    /// What the usable index's vectors depend on, when it has vectors.
    fn fingerprint(&self) -> Option<&str> {
        self.index
            .as_ref()
            .and_then(|persistent| persistent.manifest.semantic.as_ref())
            .map(|semantic| semantic.fingerprint.as_str())
    }
}

/// Brings the persistent index up to date with `listing` (the walker's listing of `root`):
/// incrementally when the existing index is usable, from scratch when `full` is set or it is
/// not.
pub fn build(
    root: &Path,
    layout: &Layout,
    listing: &Listing,
    full: bool,
    semantic: &SemanticSetting,
    now_unix_seconds: i64,
    progress: Progress<'_>,
) -> Result<Built> {
    fs::create_dirs_below(root, &layout.dir)?;
    let _lock = layout.lock()?;
    let mut previous = Previous::open(layout);
    // Outlines are reused by path and content hash, so a full rebuild parses only what
    // changed. An index without usable outlines (another version of the parsers made them)
    // is rebuilt whole, so that no file keeps an outline these parsers would not make.
    let previous_outlines = (previous.index.as_ref())
        .and_then(|persistent| layout.load_outlines(persistent.manifest.generation));
    let outlines_unusable = previous.index.is_some() && previous_outlines.is_none();
    if outlines_unusable && !full {
        previous.rebuilt_because = Some(crate::search::outlines::UNUSABLE.to_owned());
    }
    let full = full || outlines_unusable;
    let previous_outlines = previous_outlines.unwrap_or_default();
    let (model, semantic_problem) = resolve_model(semantic, previous.recorded.as_ref())?;
    let generation = layout.next_generation();
    let fingerprint = model.as_ref().map(vectors_fingerprint);
    let same_model = previous.fingerprint() == fingerprint.as_deref();
    let plan = match previous.index.as_ref().filter(|_| !full) {
        Some(persistent) => {
            let manifest = &persistent.manifest;
            let changes = manifest::compare(manifest, &listing.files, root);
            if changes.is_clean() && same_model {
                let mut built = finish_unchanged(layout, manifest, &changes, listing)?;
                built.semantic_problem = semantic_problem;
                built.over_budget_files = previous_outlines.over_budget_files();
                return Ok(built);
            }
            Plan::incremental(manifest, changes)
        }
        None => Plan::full(listing),
    };
    let forked = (previous.index.as_ref()).filter(|_| plan.mode == BuildMode::Incremental);
    let index = match forked {
        Some(persistent) => fork(layout, persistent, generation)?,
        None => create(layout, generation)?,
    };
    let in_dir = || {
        format!(
            "failed to update the index in `{}`",
            layout.index_dir(generation).display()
        )
    };
    let mut embedding = model.as_ref().map(Embedding::new);
    if let (Some(embedding), Some(forked)) = (embedding.as_mut(), forked) {
        let from = forked.manifest.generation;
        carry_vectors(root, layout, from, same_model, &plan.carried, embedding)?;
    }
    let writer = writer_for(&index, plan.jobs.len()).with_context(in_dir)?;
    let (entries, parsed) = write_jobs(
        root,
        &writer,
        &plan,
        &previous_outlines,
        embedding.as_mut(),
        progress,
    )
    .with_context(in_dir)?;
    let outlines = new_outlines(&plan.carried, &previous_outlines, parsed);
    outlines.save(&layout.outlines_path(generation))?;
    commit(writer, generation).with_context(in_dir)?;
    let semantic = (embedding.as_ref())
        .map(|embedding| embedding.save(layout, generation))
        .transpose()?;
    let built = Built {
        mode: plan.mode,
        rebuilt_because: previous.rebuilt_because,
        reindexed_files: count(plan.jobs.len()),
        removed_files: plan.removed_files,
        semantic_problem,
        embedded_chunks: embedding.as_ref().map_or(0, |embedding| embedding.embedded),
        over_budget_files: outlines.over_budget_files(),
        manifest: new_manifest(
            plan,
            entries,
            listing,
            semantic,
            generation,
            now_unix_seconds,
        ),
    };
    built.manifest.save(&layout.manifest_path(generation))?;
    layout.publish(generation)?;
    layout.remove_old(generation);
    Ok(built)
}

/// The new generation's outlines: the carried files' (taken from the previous generation's by
/// path and content hash) and those of the files just indexed, by path.
fn new_outlines(carried: &[FileEntry], previous: &Outlines, parsed: Vec<FileOutline>) -> Outlines {
    let mut outlines: Vec<FileOutline> = carried
        .iter()
        .filter_map(|entry| previous.find(&entry.path, &entry.content_hash))
        .cloned()
        .collect();
    outlines.extend(parsed);
    outlines.sort_by(|a, b| a.path.cmp(&b.path));
    Outlines::new(outlines)
}

/// The new generation's manifest: the carried files and those just indexed, by path.
fn new_manifest(
    plan: Plan<'_>,
    entries: Vec<FileEntry>,
    listing: &Listing,
    semantic: Option<SemanticIndex>,
    generation: u64,
    now_unix_seconds: i64,
) -> Manifest {
    let mut files = plan.carried;
    files.extend(entries);
    files.sort_by(|a, b| a.path.cmp(&b.path));
    Manifest {
        schema_version: manifest::SCHEMA_VERSION,
        index_revision: INDEX_REVISION.to_owned(),
        generation,
        indexed_at_unix_seconds: now_unix_seconds,
        next_file_id: plan.next_file_id,
        files,
        dirs: listing.dirs.clone(),
        semantic,
        written_unix_nanos: 0,
    }
}

/// Nothing to index: record new times of unchanged files and directories, if any, so later
/// stat-only checks trust them again.
fn finish_unchanged(
    layout: &Layout,
    manifest: &Manifest,
    changes: &manifest::Changes<'_>,
    listing: &Listing,
) -> Result<Built> {
    let mut manifest = manifest.clone();
    if changes.rehashed || manifest.dirs != listing.dirs {
        manifest.files = changes
            .unchanged
            .iter()
            .map(|(entry, stat)| with_stat(entry, stat))
            .collect();
        manifest.dirs = listing.dirs.clone();
        manifest.save(&layout.manifest_path(manifest.generation))?;
    }
    Ok(Built {
        manifest,
        mode: BuildMode::Unchanged,
        rebuilt_because: None,
        reindexed_files: 0,
        removed_files: 0,
        semantic_problem: None,
        embedded_chunks: 0,
        over_budget_files: Vec::new(),
    })
}

/// An empty index in a new generation directory (replacing a leftover of an interrupted run).
fn create(layout: &Layout, generation: u64) -> Result<Index> {
    let dir = fresh_index_dir(layout, generation)?;
    let index = Index::create_in_dir(&dir, schema().0)
        .with_context(|| format!("failed to create an index in `{}`", dir.display()))?;
    Ok(with_analyzer(index))
}

/// A new generation that starts as a copy of `previous`: hard links to the files its segments
/// use (tantivy never modifies a segment file in place) and a copy of its `meta.json`. Nothing
/// else is carried over, so a file an interrupted run left behind cannot collide with one this
/// run writes.
fn fork(layout: &Layout, previous: &Persistent, generation: u64) -> Result<Index> {
    let dir = fresh_index_dir(layout, generation)?;
    let source = layout.index_dir(previous.manifest.generation);
    let metas = previous
        .index
        .searchable_segment_metas()
        .with_context(|| format!("failed to read the index in `{}`", source.display()))?;
    // A segment's files are named after its id; of its deletion files only the one its meta
    // names is live.
    let is_used = |name: &str| {
        metas.iter().any(|meta| {
            name.strip_prefix(&meta.id().uuid_string())
                .is_some_and(|rest| rest.starts_with('.'))
                && (!name.ends_with(".del")
                    || (meta.has_deletes()
                        && Path::new(name) == meta.relative_path(SegmentComponent::Delete)))
        })
    };
    let entries = std::fs::read_dir(&source)
        .with_context(|| format!("failed to read `{}`", source.display()))?;
    for entry in entries {
        let entry = entry.with_context(|| format!("failed to read `{}`", source.display()))?;
        let name = entry.file_name();
        if !name.to_str().is_some_and(is_used) {
            continue;
        }
        let (from, to) = (entry.path(), dir.join(&name));
        if std::fs::hard_link(&from, &to).is_err() {
            std::fs::copy(&from, &to)
                .with_context(|| format!("failed to copy `{}`", from.display()))?;
        }
    }
    let meta = source.join("meta.json");
    std::fs::copy(&meta, dir.join("meta.json"))
        .with_context(|| format!("failed to copy `{}`", meta.display()))?;
    let index = Index::open_in_dir(&dir)
        .with_context(|| format!("failed to open the index in `{}`", dir.display()))?;
    Ok(with_analyzer(index))
}

fn fresh_index_dir(layout: &Layout, generation: u64) -> Result<PathBuf> {
    let generation_dir = layout.generation_dir(generation);
    let removed = match std::fs::symlink_metadata(&generation_dir) {
        Ok(meta) if meta.is_dir() => std::fs::remove_dir_all(&generation_dir),
        // A link or a file is removed itself, never what it points to.
        Ok(_) => std::fs::remove_file(&generation_dir),
        Err(_) => Ok(()),
    };
    removed.with_context(|| format!("failed to remove `{}`", generation_dir.display()))?;
    let dir = layout.index_dir(generation);
    fs::create_dirs_below(&layout.dir, &dir)?;
    Ok(dir)
}
