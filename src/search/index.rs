//! The tantivy side of retrieval: the schema, the persistent index under
//! `.epiphany/cache/retrieval/` with its manifest, incremental and full builds, and the
//! throw-away in-memory index used when there is no usable persistent one.
//!
//! One document per chunk: `file_id` (indexed and fast, so a file's chunks are deleted by one
//! term and results are grouped per file without touching the doc store), `start_line` and
//! `end_line` (fast), and `body` and `path`, both analyzed with the code tokenizer, with
//! frequencies but no positions and no stored text (excerpts are read from the files).
//!
//! Generations: every build writes a complete index and its manifest into a directory of its
//! own, `gen-<N>/`, and then publishes it by replacing the one-line file `CURRENT` atomically.
//! An incremental build starts its directory from hard links to the previous generation's
//! segment files (tantivy never modifies a segment file; new deletes and segments are new
//! files), so it costs what the changed files cost. A reader reads `CURRENT` and opens that
//! generation: it always sees a complete index with the manifest that describes it, never a
//! half-written one, however a build is timed against it or interrupted. The previous
//! generation is kept until the next build, so a reader that read `CURRENT` just before a
//! switch still finds its files; one that loses that race anyway retries with the new
//! `CURRENT`. Builds take an exclusive lock on `retrieval/lock`; concurrent `index` runs fail
//! fast instead of interleaving.
//!
//! Chunk vectors: a build given an embedding model ([`SemanticSetting`]) also writes
//! `gen-<N>/vectors.bin` ([`vectors`]) and records the model in the manifest, so the next
//! build keeps using it. An incremental build copies the vectors of unchanged files from the
//! previous generation and embeds changed files only; a different model (or vector chunk
//! shape) embeds every file again.

use std::fs::File;
use std::path::Path;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;
use anyhow::Result;
use tantivy::Index;
use tantivy::IndexWriter;
use tantivy::ReloadPolicy;
use tantivy::Searcher;
use tantivy::TantivyDocument;
use tantivy::Term;
use tantivy::index::SegmentComponent;
use tantivy::schema::FAST;
use tantivy::schema::Field;
use tantivy::schema::INDEXED;
use tantivy::schema::IndexRecordOption;
use tantivy::schema::Schema;
use tantivy::schema::TextFieldIndexing;
use tantivy::schema::TextOptions;

use crate::search::CHUNK_SHAPE;
use crate::search::INDEX_REVISION;
use crate::search::VECTOR_CHUNK_SHAPE;
use crate::search::chunk;
use crate::search::embed::Model;
use crate::search::embed::TokenCache;
use crate::search::error::SearchError;
use crate::search::manifest;
use crate::search::manifest::Fetched;
use crate::search::manifest::FileEntry;
use crate::search::manifest::Loaded;
use crate::search::manifest::Manifest;
use crate::search::manifest::SemanticIndex;
use crate::search::outlines::FileOutline;
use crate::search::outlines::Outlines;
use crate::search::symbols;
use crate::search::syntax;
use crate::search::tokenize;
use crate::search::vectors;
use crate::state::error::StoreError;
use crate::state::fs;
use crate::state::fs::LockMode;
use crate::state::walk::FileStat;
use crate::state::walk::Listing;

/// Indexing memory per writer thread for full builds.
const FULL_BUILD_BYTES_PER_THREAD: usize = 64_000_000;
/// Indexing memory for small updates (tantivy's minimum).
const SMALL_BUILD_BYTES: usize = 15_000_000;

/// The fields of the chunk schema.
#[derive(Debug, Clone, Copy)]
pub struct Fields {
    /// The file's id in the manifest (or in an in-memory corpus).
    pub file_id: Field,
    /// First line of the chunk.
    pub start_line: Field,
    /// Last line of the chunk.
    pub end_line: Field,
    /// The chunk's text.
    pub body: Field,
    /// The file's path.
    pub path: Field,
    /// The normalised names ([`symbols::normalize`]) of the definitions in the chunk.
    pub defs: Field,
}

/// The chunk schema.
pub fn schema() -> (Schema, Fields) {
    let mut builder = Schema::builder();
    let analyzed = TextOptions::default().set_indexing_options(
        TextFieldIndexing::default()
            .set_tokenizer(tokenize::ANALYZER)
            .set_index_option(IndexRecordOption::WithFreqs),
    );
    let fields = Fields {
        file_id: builder.add_u64_field("file_id", INDEXED | FAST),
        start_line: builder.add_u64_field("start_line", FAST),
        end_line: builder.add_u64_field("end_line", FAST),
        body: builder.add_text_field("body", analyzed.clone()),
        path: builder.add_text_field("path", analyzed),
        defs: builder.add_text_field(
            "defs",
            TextOptions::default().set_indexing_options(
                TextFieldIndexing::default()
                    .set_tokenizer(tokenize::NAMES)
                    .set_index_option(IndexRecordOption::WithFreqs),
            ),
        ),
    };
    (builder.build(), fields)
}

fn with_analyzer(index: Index) -> Index {
    index
        .tokenizers()
        .register(tokenize::ANALYZER, tokenize::analyzer());
    index
        .tokenizers()
        .register(tokenize::NAMES, tokenize::names_analyzer());
    index
}

/// Where the persistent index lives inside the store's cache directory.
#[derive(Debug, Clone)]
pub struct Layout {
    /// The store directory holding the cache: nothing below it is read through a link.
    store_dir: PathBuf,
    dir: PathBuf,
}

/// The file naming the published generation.
const CURRENT: &str = "CURRENT";
/// The most of `CURRENT` that is read: one number.
const CURRENT_LIMIT: u64 = 64;
/// Generation directories are `gen-<N>`.
const GENERATION_PREFIX: &str = "gen-";
/// The most of a manifest that is read (256 MiB: about a million and a half files).
pub const MANIFEST_LIMIT: u64 = 256 * 1024 * 1024;
/// The largest `meta.json` or `.managed.json` tantivy is let read, whole, from a generation:
/// they list segments and files, a few kilobytes.
const TANTIVY_JSON_LIMIT: u64 = 16 * 1024 * 1024;
/// The files of tantivy's that it reads whole.
const TANTIVY_JSON_FILES: [&str; 2] = ["meta.json", ".managed.json"];

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

    fn index_dir(&self, generation: u64) -> PathBuf {
        self.generation_dir(generation).join("index")
    }

    fn lock_path(&self) -> PathBuf {
        self.dir.join("lock")
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
    fn publish(&self, generation: u64) -> Result<()> {
        fs::sync_dir(&self.index_dir(generation))?;
        fs::sync_dir(&self.generation_dir(generation))?;
        fs::write_atomic(
            &self.dir.join(CURRENT),
            format!("{generation}\n").as_bytes(),
        )
    }

    /// Removes every generation but `current` and the one before it, and what the
    /// single-directory layout of earlier versions left. Best effort: a leftover costs disk only.
    fn remove_old(&self, current: u64) {
        for generation in self.generations_on_disk() {
            if generation + 1 < current || generation > current {
                let _ = std::fs::remove_dir_all(self.generation_dir(generation));
            }
        }
        let _ = std::fs::remove_dir_all(self.dir.join("index"));
        let _ = std::fs::remove_file(self.dir.join("manifest.msgpack"));
    }
}

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

/// How a build went.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum BuildMode {
    /// Everything was indexed from scratch.
    Full,
    /// Only changed files were indexed.
    Incremental,
    /// Nothing had changed.
    Unchanged,
}

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
}

/// Which embedding model a build computes chunk vectors with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SemanticSetting {
    /// The model of the previous generation, if it had one and it still loads.
    Keep,
    /// The model in this directory.
    Model(PathBuf),
    /// None: the new generation has no vectors.
    Off,
}

/// The model a build uses (`recorded` is the one the previous index used, if any), and why
/// the previous one was dropped when it was.
fn resolve_model(
    setting: &SemanticSetting,
    recorded: Option<&SemanticIndex>,
) -> Result<(Option<Model>, Option<String>)> {
    match setting {
        SemanticSetting::Off => Ok((None, None)),
        SemanticSetting::Model(dir) => {
            let model = Model::load(dir).with_context(|| {
                format!("failed to load the embedding model `{}`", dir.display())
            })?;
            Ok((Some(model), None))
        }
        SemanticSetting::Keep => {
            let Some(semantic) = recorded else {
                return Ok((None, None));
            };
            // Builds record the model by its absolute path; a relative one came from elsewhere
            // (a committed cache) and would name something inside the repository.
            let recorded_model = Path::new(&semantic.model);
            let loaded = if recorded_model.is_absolute() {
                Model::load(recorded_model)
            } else {
                Err(anyhow::anyhow!("it is not an absolute path"))
            };
            match loaded {
                Ok(model) => Ok((Some(model), None)),
                Err(err) => Ok((
                    None,
                    Some(format!(
                        "the embedding model `{}` no longer loads ({err:#}); the index has no chunk vectors now (`epiphany index --model DIR` embeds again)",
                        semantic.model
                    )),
                )),
            }
        }
    }
}

/// Chunk vectors being computed for a new generation.
struct Embedding<'m> {
    model: &'m Model,
    cache: TokenCache,
    writer: vectors::Writer,
    /// Vectors in the new generation.
    count: u64,
    /// Of those, vectors computed by this build (the rest were carried over).
    embedded: u64,
}

impl<'m> Embedding<'m> {
    fn new(model: &'m Model) -> Embedding<'m> {
        Embedding {
            model,
            cache: TokenCache::new(),
            writer: vectors::Writer::new(model.dim()),
            count: 0,
            embedded: 0,
        }
    }

    /// Embeds the chunks of one file.
    fn add_file(&mut self, file_id: u64, path: &str, text: &str) {
        for chunk in self.model.chunk_vectors(path, text, &mut self.cache) {
            self.writer
                .push(file_id, chunk.start_line, chunk.end_line, &chunk.vector);
            self.count += 1;
            self.embedded += 1;
        }
    }
}

/// Reports indexing progress: files done, files to do. An error stops the build (its caller
/// gave up on it) and leaves the index as it was.
pub type Progress<'a> = &'a mut dyn FnMut(u64, u64) -> Result<()>;

/// One file to (re)index.
struct Job<'a> {
    stat: &'a FileStat,
    file_id: u64,
    fetched: Option<Fetched>,
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
    let _lock = lock(layout)?;
    let (previous, rebuilt_because, recorded) = match open(layout) {
        Opened::Ready(persistent) => {
            let recorded = persistent.manifest.semantic.clone();
            (Some(persistent), None, recorded)
        }
        Opened::Missing => (None, None, None),
        Opened::Unusable { reason, manifest } => (
            None,
            Some(reason),
            manifest.and_then(|manifest| manifest.semantic),
        ),
    };
    let (model, semantic_problem) = resolve_model(semantic, recorded.as_ref())?;
    // Generations only grow, so a manifest never matches an index committed after it, and a
    // new directory never reuses one a reader may still have open.
    let generation = layout
        .generations_on_disk()
        .into_iter()
        .chain(layout.current().ok().flatten())
        .max()
        .unwrap_or(0)
        + 1;
    let previous_fingerprint = previous
        .as_ref()
        .and_then(|persistent| persistent.manifest.semantic.as_ref())
        .map(|semantic| semantic.fingerprint.as_str());
    let fingerprint = model.as_ref().map(vectors_fingerprint);
    let same_model = previous_fingerprint == fingerprint.as_deref();
    let plan = match previous.as_ref().filter(|_| !full) {
        Some(persistent) => {
            let manifest = &persistent.manifest;
            let changes = manifest::compare(manifest, &listing.files, root);
            if changes.is_clean() && same_model {
                let mut built = finish_unchanged(layout, manifest, &changes, listing)?;
                built.semantic_problem = semantic_problem;
                return Ok(built);
            }
            Plan::incremental(manifest, changes)
        }
        None => Plan::full(listing),
    };
    let forked = previous
        .as_ref()
        .filter(|_| plan.mode == BuildMode::Incremental);
    let forked_from = forked.map(|persistent| persistent.manifest.generation);
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
    if let (Some(embedding), Some(from)) = (embedding.as_mut(), forked_from) {
        carry_vectors(root, layout, from, same_model, &plan.carried, embedding)?;
    }
    // Outlines are reused by path and content hash, so a full rebuild parses only what changed.
    let previous_outlines = previous
        .as_ref()
        .and_then(|persistent| layout.load_outlines(persistent.manifest.generation))
        .unwrap_or_default();
    let mut outlines: Vec<FileOutline> = plan
        .carried
        .iter()
        .filter_map(|entry| previous_outlines.find(&entry.path, &entry.content_hash))
        .cloned()
        .collect();
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
    outlines.extend(parsed);
    outlines.sort_by(|a, b| a.path.cmp(&b.path));
    Outlines { files: outlines }.save(&layout.outlines_path(generation))?;
    commit(writer, generation).with_context(in_dir)?;
    let semantic = match (&model, &embedding) {
        (Some(model), Some(embedding)) => {
            embedding.writer.save(&layout.vectors_path(generation))?;
            Some(SemanticIndex {
                model: model.dir.display().to_string(),
                fingerprint: vectors_fingerprint(model),
                dim: u32::try_from(model.dim()).unwrap_or(u32::MAX),
                vector_count: embedding.count,
            })
        }
        _ => None,
    };
    let mut all = plan.carried;
    all.extend(entries);
    all.sort_by(|a, b| a.path.cmp(&b.path));
    let manifest = Manifest {
        schema_version: manifest::SCHEMA_VERSION,
        index_revision: INDEX_REVISION.to_owned(),
        generation,
        indexed_at_unix_seconds: now_unix_seconds,
        next_file_id: plan.next_file_id,
        files: all,
        dirs: listing.dirs.clone(),
        semantic,
        written_unix_nanos: 0,
    };
    manifest.save(&layout.manifest_path(generation))?;
    layout.publish(generation)?;
    layout.remove_old(generation);
    Ok(Built {
        manifest,
        mode: plan.mode,
        rebuilt_because,
        reindexed_files: count(plan.jobs.len()),
        removed_files: plan.removed_files,
        semantic_problem,
        embedded_chunks: embedding.as_ref().map_or(0, |embedding| embedding.embedded),
    })
}

/// Names what a generation's vectors depend on: the model and the vector chunk shape.
pub fn vectors_fingerprint(model: &Model) -> String {
    format!(
        "{}:{}x{}",
        model.fingerprint, VECTOR_CHUNK_SHAPE.lines, VECTOR_CHUNK_SHAPE.overlap
    )
}

/// Gives the files an incremental build carries their vectors: those of generation `from`
/// when it was embedded by the same model, freshly computed otherwise.
fn carry_vectors(
    root: &Path,
    layout: &Layout,
    from: u64,
    same_model: bool,
    carried: &[FileEntry],
    embedding: &mut Embedding<'_>,
) -> Result<()> {
    let kept: std::collections::HashSet<u64> = carried
        .iter()
        .filter(|entry| entry.chunk_count > 0)
        .map(|entry| entry.file_id)
        .collect();
    if same_model && let Ok(old) = vectors::Vectors::open(&layout.vectors_path(from)) {
        embedding.count += embedding
            .writer
            .carry(&old, &|file_id| kept.contains(&file_id));
        return Ok(());
    }
    for entry in carried.iter().filter(|entry| entry.chunk_count > 0) {
        let stat = FileStat {
            path: entry.path.clone(),
            size_bytes: entry.size_bytes,
            modified_unix_nanos: entry.modified_unix_nanos,
        };
        if let Ok(text) = crate::state::walk::read_text(root, &stat) {
            embedding.add_file(entry.file_id, &entry.path, &text);
        }
    }
    Ok(())
}

/// What a build deletes from the index and (re)indexes.
struct Plan<'a> {
    mode: BuildMode,
    carried: Vec<FileEntry>,
    deleted: Vec<u64>,
    jobs: Vec<Job<'a>>,
    next_file_id: u64,
    removed_files: u32,
}

impl<'a> Plan<'a> {
    /// Every listed file, with fresh ids.
    fn full(listing: &'a Listing) -> Plan<'a> {
        Plan {
            mode: BuildMode::Full,
            carried: Vec::new(),
            deleted: Vec::new(),
            jobs: listing
                .files
                .iter()
                .zip(0..)
                .map(|(stat, file_id)| Job {
                    stat,
                    file_id,
                    fetched: None,
                })
                .collect(),
            next_file_id: listing.files.len() as u64,
            removed_files: 0,
        }
    }

    /// Unchanged files are carried; changed files keep their id and are reindexed; removed
    /// files are deleted; added files get new ids.
    fn incremental(manifest: &Manifest, changes: manifest::Changes<'a>) -> Plan<'a> {
        let deleted = changes
            .modified
            .iter()
            .map(|(entry, _, _)| entry.file_id)
            .chain(changes.removed.iter().map(|entry| entry.file_id))
            .collect();
        let mut jobs: Vec<Job<'a>> = changes
            .modified
            .into_iter()
            .map(|(entry, stat, fetched)| Job {
                stat,
                file_id: entry.file_id,
                fetched: Some(fetched),
            })
            .collect();
        let mut next_file_id = manifest.next_file_id;
        for stat in changes.added {
            jobs.push(Job {
                stat,
                file_id: next_file_id,
                fetched: None,
            });
            next_file_id += 1;
        }
        Plan {
            mode: BuildMode::Incremental,
            carried: changes
                .unchanged
                .iter()
                .map(|(entry, stat)| with_stat(entry, stat))
                .collect(),
            deleted,
            jobs,
            next_file_id,
            removed_files: count(changes.removed.len()),
        }
    }
}

fn count(len: usize) -> u32 {
    u32::try_from(len).unwrap_or(u32::MAX)
}

fn with_stat(entry: &FileEntry, stat: &FileStat) -> FileEntry {
    FileEntry {
        size_bytes: stat.size_bytes,
        modified_unix_nanos: stat.modified_unix_nanos,
        ..entry.clone()
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
    })
}

fn lock(layout: &Layout) -> Result<File> {
    let path = layout.lock_path();
    let file = fs::open_no_follow(&path, true)?;
    if fs::lock(&file, &path, LockMode::Exclusive, Duration::ZERO)? {
        return Ok(file);
    }
    Err(SearchError::IndexBusy { path }.into())
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

/// A writer sized for `jobs` files: worker threads pay off only for larger batches.
fn writer_for(index: &Index, jobs: usize) -> Result<IndexWriter> {
    let threads = if jobs > 64 {
        std::thread::available_parallelism().map_or(1, |n| n.get().min(4))
    } else {
        1
    };
    let budget = if threads > 1 {
        FULL_BUILD_BYTES_PER_THREAD * threads
    } else {
        SMALL_BUILD_BYTES
    };
    index
        .writer_with_num_threads(threads, budget)
        .context("failed to open the index for writing")
}

/// Files prepared at a time: enough to keep every thread busy, few enough to bound memory.
const BATCH_FILES: usize = 256;

/// One job's file, read, outlined and cut into documents.
struct Prepared {
    entry: FileEntry,
    docs: Vec<TantivyDocument>,
    outline: Option<FileOutline>,
    /// The text, kept only for embedding.
    text: Option<String>,
}

/// Deletes what the plan replaces and indexes every job; returns the new manifest entries and
/// the jobs' outlines. Files are read, parsed and cut into documents on every core, a batch
/// at a time, the largest first so that no core waits long for the last of a batch; the
/// documents go to the writer in job order.
fn write_jobs(
    root: &Path,
    writer: &IndexWriter,
    plan: &Plan<'_>,
    previous_outlines: &Outlines,
    mut embedding: Option<&mut Embedding<'_>>,
    progress: Progress<'_>,
) -> Result<(Vec<FileEntry>, Vec<FileOutline>)> {
    let (_, fields) = schema();
    if plan.mode == BuildMode::Full {
        writer.delete_all_documents()?;
    }
    for &file_id in &plan.deleted {
        writer.delete_term(Term::from_field_u64(fields.file_id, file_id));
    }
    let total = plan.jobs.len() as u64;
    let keep_text = embedding.is_some();
    let mut entries = Vec::with_capacity(plan.jobs.len());
    let mut outlines = Vec::new();
    for batch in plan.jobs.chunks(BATCH_FILES) {
        let prepared = crate::parallel::map_balanced(
            batch,
            |job| job.stat.size_bytes,
            |job| prepare(root, &fields, job, previous_outlines, keep_text),
        );
        for prepared in prepared {
            for doc in prepared.docs {
                writer.add_document(doc)?;
            }
            if let (Some(embedding), Some(text)) = (embedding.as_deref_mut(), &prepared.text) {
                embedding.add_file(prepared.entry.file_id, &prepared.entry.path, text);
            }
            outlines.extend(prepared.outline);
            entries.push(prepared.entry);
            progress(entries.len() as u64, total)?;
        }
    }
    Ok((entries, outlines))
}

/// Reads one job's file (unless the comparison already did), takes its outline from the
/// previous generation when its contents are the same or parses it, and cuts it into chunk
/// documents.
fn prepare(
    root: &Path,
    fields: &Fields,
    job: &Job<'_>,
    previous_outlines: &Outlines,
    keep_text: bool,
) -> Prepared {
    let fetched_now;
    let fetched = match &job.fetched {
        Some(fetched) => fetched,
        None => {
            fetched_now = manifest::fetch(root, job.stat);
            &fetched_now
        }
    };
    let path = &job.stat.path;
    let mut prepared = Prepared {
        entry: FileEntry {
            path: path.clone(),
            size_bytes: job.stat.size_bytes,
            modified_unix_nanos: job.stat.modified_unix_nanos,
            content_hash: fetched.content_hash.clone(),
            file_id: job.file_id,
            chunk_count: 0,
            skipped: None,
        },
        docs: Vec::new(),
        outline: None,
        text: None,
    };
    let text = match &fetched.text {
        Ok(text) => text,
        Err(skip) => {
            prepared.entry.skipped = Some(*skip);
            return prepared;
        }
    };
    let outline = match previous_outlines.find(path, &fetched.content_hash) {
        Some(found) => Some(found.outline.clone()),
        None => syntax::outline(path, text),
    };
    let definitions = match &outline {
        Some(outline) => symbols::outlined(outline),
        None => symbols::definitions(path, text),
    };
    prepared.docs = chunk_documents(fields, job.file_id, path, text, &definitions).collect();
    prepared.entry.chunk_count = count(prepared.docs.len());
    prepared.outline = outline.map(|outline| FileOutline {
        path: path.clone(),
        content_hash: fetched.content_hash.clone(),
        outline,
    });
    if keep_text {
        prepared.text = Some(text.clone());
    }
    prepared
}

/// The documents of one file's chunks.
pub fn chunk_documents<'a>(
    fields: &'a Fields,
    file_id: u64,
    path: &'a str,
    text: &'a str,
    definitions: &'a [symbols::Definition],
) -> impl Iterator<Item = TantivyDocument> + 'a {
    chunk::chunks(text, CHUNK_SHAPE)
        .into_iter()
        .map(move |chunk| {
            let mut doc = TantivyDocument::default();
            doc.add_u64(fields.file_id, file_id);
            doc.add_u64(fields.start_line, u64::from(chunk.start_line));
            doc.add_u64(fields.end_line, u64::from(chunk.end_line));
            doc.add_text(fields.body, chunk.text);
            doc.add_text(fields.path, path);
            let names: Vec<String> = definitions
                .iter()
                .filter(|definition| (chunk.start_line..=chunk.end_line).contains(&definition.line))
                .map(|definition| symbols::normalize(&definition.name))
                .collect();
            doc.add_text(fields.defs, names.join(" "));
            doc
        })
}

fn commit(mut writer: IndexWriter, generation: u64) -> Result<()> {
    let mut prepared = writer
        .prepare_commit()
        .context("failed to commit the index")?;
    prepared.set_payload(&generation.to_string());
    prepared.commit().context("failed to commit the index")?;
    writer
        .wait_merging_threads()
        .context("failed to finish merging index segments")
}

/// A throw-away index of some files, searched when the persistent one is missing, unusable, or
/// does not cover them (dirty files). File ids are positions in `paths`.
pub struct InMemory {
    /// The index.
    pub index: Index,
    /// Chunks indexed.
    pub chunk_count: u64,
}

/// Indexes `files` (path, text) in memory.
pub fn in_memory(files: &[(String, String)]) -> Result<InMemory> {
    let (schema, fields) = schema();
    let index = with_analyzer(Index::create_in_ram(schema));
    let mut writer = writer_for(&index, files.len())?;
    let mut chunk_count = 0;
    for ((path, text), file_id) in files.iter().zip(0..) {
        let definitions = symbols::definitions(path, text);
        for doc in chunk_documents(&fields, file_id, path, text, &definitions) {
            writer.add_document(doc)?;
            chunk_count += 1;
        }
    }
    writer
        .commit()
        .context("failed to build the query-time index")?;
    Ok(InMemory { index, chunk_count })
}
