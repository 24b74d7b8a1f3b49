//! `epiphany index`: build or update the persistent search index, or check its freshness.

use std::io::Write;
use std::path::PathBuf;
use std::time::Instant;

use anyhow::Result;
use serde::Serialize;

use crate::ctx::Ctx;
use crate::ctx::Status;
use crate::cmd::Tool;
use crate::cmd::schema_of;
use crate::search;
use crate::search::SkippedFile;
use crate::search::index::BuildMode;
use crate::search::index::SemanticSetting;
use crate::state::model::RetrievalStatus;
use crate::state::store::Store;
use crate::state::walk;
use crate::state::walk::Skip;
use crate::state::walk::SkipCounts;
use crate::ui::Report;

/// Build or update the search index under `.epiphany/cache/`.
///
/// Walks the work tree (honouring `.gitignore`, `.ignore` and `.epiphanyignore`; binary and
/// non-UTF-8 files, source files over 4 MiB and data files over 256 KiB are skipped and
/// listed, and skipped source files are warned about) and indexes overlapping chunks of
/// every text file with tantivy. Files of a parsed language are parsed for the code map; one
/// that needs more than its budget (CPU time: 0.1 s and 2 µs per byte; parser memory: 16 MiB
/// and 128 bytes per byte, at most 160 MiB) gets no definitions and is warned about.
/// Incremental by default: only files whose size, time and content changed are re-read, and
/// removed files are dropped.
/// An interrupted run leaves the previous index usable. A corrupt index, or one built by
/// another version, is rebuilt. It also reads the store's head once, so that a fold a merge
/// left to compute is remembered in `.epiphany/cache/snapshots/` (the `post-merge` hook runs
/// `index`) and the next command reads fast.
///
/// With `--model DIR` (or `EPIPHANY_MODEL=DIR`), every 10-line chunk also gets a vector from
/// that static embedding model (model2vec format: `model.safetensors` with an `embeddings`
/// matrix, and a WordPiece `tokenizer.json`), which `retrieve --mode semantic` searches. The
/// index records the model's path, so later runs and `retrieve` keep using it until
/// `--no-model`; only changed files are embedded again. No model is downloaded: distill or
/// copy one to a local directory.
///
/// `--check` writes nothing and exits 1 when the index is missing or stale, code outlines made
/// by another version of the parsers included (the next `index` rebuilds the index).
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Rebuild from scratch instead of updating changed files only
    #[arg(long, conflicts_with = "check")]
    pub full: bool,
    /// Compute chunk vectors with the model2vec model in this directory (default: the
    /// `EPIPHANY_MODEL` environment variable, else the model the index already uses)
    #[arg(long, value_name = "DIR", conflicts_with = "check")]
    pub model: Option<PathBuf>,
    /// Drop the chunk vectors and stop using the model
    #[arg(long, conflicts_with_all = ["model", "check"])]
    pub no_model: bool,
    /// Write nothing; exit 1 when the index is missing or stale
    #[arg(long)]
    pub check: bool,
}

/// How `mcp` offers this command as a tool and `schema` describes its report.
pub const TOOL: Tool = Tool::WRITER
    .arguments(&[("check", "Write nothing; say whether the index is missing or stale")])
    .about("Build or update the search index that `retrieve` and `map` use (incremental); call it after large changes to the code. `check` only says whether it is stale.").idempotent().report(schema_of::<IndexReport>);

/// The index after the command.
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct IndexReport {
    status: RetrievalStatus,
    indexed_file_count: Option<u32>,
    indexed_chunk_count: Option<u32>,
    index_revision: Option<String>,
    dirty_paths: Vec<String>,
    last_indexed_at_unix_seconds: Option<i64>,
    /// Whether the index holds chunk vectors for `retrieve --mode semantic`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    semantic_available: bool,
    /// What this run did (absent for `--check`).
    #[serde(flatten)]
    run: Option<IndexRun>,
    /// Why the index cannot be used, or why the next `index` rebuilds it (for `--check`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    problem: Option<String>,
}

/// What one `index` run did.
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct IndexRun {
    mode: BuildMode,
    reindexed_file_count: u32,
    removed_file_count: u32,
    skipped: SkipCounts,
    /// Every skipped file with its reason.
    skipped_files: Vec<SkippedFile>,
    rebuilt_because: Option<String>,
    /// Files of a parsed language that used up their parse budget (whole index): they have
    /// no definitions in the code map, and code refs into them are checked against their text.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    over_budget_files: Vec<String>,
    /// The chunk vectors of the index (absent without a model).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    vectors: Option<VectorsRun>,
    elapsed_ms: u64,
}

/// The chunk vectors after one `index` run.
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct VectorsRun {
    /// The model directory they were computed with.
    model: String,
    /// Chunk vectors in the index.
    vector_count: u64,
    /// Of those, the ones this run computed (the chunks of changed files, unless the model
    /// changed); the rest were kept from the previous index.
    embedded_count: u64,
}

impl Report for IndexReport {
    fn human(&self, out: &mut dyn Write) -> std::io::Result<()> {
        let files = self.indexed_file_count.unwrap_or(0);
        let chunks = self.indexed_chunk_count.unwrap_or(0);
        let size = format!("{files} files, {chunks} chunks");
        let Some(run) = &self.run else {
            return match (&self.problem, self.status) {
                // An index that has a revision can be searched; only `index` would redo it.
                (Some(problem), _) if self.index_revision.is_some() => {
                    writeln!(out, "index is stale: {problem}")
                }
                (Some(problem), _) => writeln!(out, "index unusable: {problem}"),
                (None, RetrievalStatus::Ready) => writeln!(out, "index is fresh ({size})"),
                (None, _) if self.index_revision.is_none() => writeln!(out, "no index yet"),
                (None, _) => {
                    writeln!(
                        out,
                        "index is stale: {} dirty path(s)",
                        self.dirty_paths.len()
                    )?;
                    for path in &self.dirty_paths {
                        writeln!(out, "  {path}")?;
                    }
                    Ok(())
                }
            };
        };
        let seconds = run.elapsed_ms as f64 / 1000.0;
        match run.mode {
            BuildMode::Full => writeln!(out, "indexed {size} in {seconds:.2}s")?,
            BuildMode::Incremental => writeln!(
                out,
                "updated {} file(s), removed {} in {seconds:.2}s ({size})",
                run.reindexed_file_count, run.removed_file_count
            )?,
            BuildMode::Unchanged => writeln!(out, "index is up to date ({size})")?,
        }
        if let Some(vectors) = &run.vectors {
            writeln!(
                out,
                "{} chunk vectors ({} computed now) from the model in `{}`",
                vectors.vector_count, vectors.embedded_count, vectors.model
            )?;
        }
        let skipped = run.skipped;
        if skipped.total() > 0 {
            writeln!(
                out,
                "skipped {} file(s): {} too large, {} binary, {} not UTF-8, {} unreadable",
                skipped.total(),
                skipped.too_large,
                skipped.binary,
                skipped.not_utf8,
                skipped.unreadable
            )?;
        }
        Ok(())
    }
}

/// Runs `index`.
pub fn run(ctx: &Ctx, args: &Args) -> Result<Status> {
    let Args {
        full,
        check,
        model,
        no_model,
    } = args;
    let semantic = semantic_setting(ctx, model.as_ref(), *no_model);
    let started = Instant::now();
    let store = ctx.store()?;
    if *check {
        return check_only(ctx, &store);
    }
    if let Err(err) = store.head_with_newest(0) {
        ctx.ui
            .warn(&format!("the store's head could not be read: {err:#}"));
    }
    let bar = ctx.ui.progress(0, "indexing");
    let mut report = |done: u64, total: u64| {
        bar.set_length(total);
        bar.set_position(done);
    };
    let cancel = &ctx.cancel;
    let progress = search::index::Progress {
        report: &mut report,
        cancelled: &|| cancel.is_set(),
    };
    let update = search::update_index(
        store.root(),
        &store.cache_dir(),
        *full,
        &semantic,
        ctx.now.as_second(),
        progress,
    )?;
    bar.finish_and_clear();
    warn_about_run(ctx, &update);
    ctx.ui.emit(&run_report(update, started))?;
    Ok(Status::Ok)
}

/// What to do about chunk vectors: none with `--no-model`, else compute them with the model
/// given (relative to the working directory) or configured, else keep what the index has.
fn semantic_setting(ctx: &Ctx, model: Option<&PathBuf>, no_model: bool) -> SemanticSetting {
    let model = model
        .map(|dir| ctx.cwd.join(dir))
        .or_else(|| ctx.model_dir.clone());
    match (model, no_model) {
        (_, true) => SemanticSetting::Off,
        (Some(dir), false) => SemanticSetting::Model(dir),
        (None, false) => SemanticSetting::Keep,
    }
}

/// `index --check`: reports whether the index is fresh without touching it; `no` when stale.
fn check_only(ctx: &Ctx, store: &Store) -> Result<Status> {
    let status = search::check(store.root(), &store.cache_dir());
    let stale = status.is_stale();
    let state = status.state;
    ctx.ui.emit(&IndexReport {
        status: if stale {
            RetrievalStatus::Stale
        } else {
            RetrievalStatus::Ready
        },
        indexed_file_count: state.index.indexed_file_count,
        indexed_chunk_count: state.index.indexed_chunk_count,
        index_revision: status.indexed.then_some(state.index_revision).flatten(),
        dirty_paths: state.dirty_paths,
        last_indexed_at_unix_seconds: state.index.last_indexed_at_unix_seconds,
        semantic_available: state.semantic_available,
        run: None,
        problem: status.problem,
    })?;
    if stale {
        ctx.ui
            .hint("run `epiphany index` to bring the index up to date");
    }
    Ok(if stale { Status::No } else { Status::Ok })
}

/// Warns about what a run did that the user may not expect: a rebuild from scratch, a model
/// problem, files not mapped because they took too long to parse, source files left out for
/// their size or because they could not be read.
fn warn_about_run(ctx: &Ctx, update: &search::IndexUpdate) {
    if let Some(reason) = &update.built.rebuilt_because {
        ctx.ui
            .warn(&format!("rebuilt the index from scratch: {reason}"));
    }
    if let Some(problem) = &update.built.semantic_problem {
        ctx.ui.warn(problem);
    }
    for path in &update.built.over_budget_files {
        ctx.ui.warn(&format!(
            "not mapped: `{path}` needed more time or memory to parse than its budget (deeply \
             nested or generated code?); it has no definitions in the map, and code refs into \
             it are checked against its text"
        ));
    }
    for file in &update.skipped_files {
        if file.reason == Skip::TooLarge && !walk::is_data_file(&file.path) {
            ctx.ui.warn(&format!(
                "not indexed: `{}` is {} KiB, over the {} KiB limit for source files",
                file.path,
                file.size_bytes / 1024,
                walk::MAX_FILE_BYTES / 1024
            ));
        }
        if file.reason == Skip::Unreadable {
            ctx.ui.warn(&format!(
                "not indexed: `{}` could not be read (a name that is not UTF-8, or no permission)",
                file.path
            ));
        }
    }
}

/// The report of a run that began at `started`.
fn run_report(update: search::IndexUpdate, started: Instant) -> IndexReport {
    let state = update.state;
    IndexReport {
        status: state.status,
        indexed_file_count: state.index.indexed_file_count,
        indexed_chunk_count: state.index.indexed_chunk_count,
        index_revision: state.index_revision,
        dirty_paths: state.dirty_paths,
        last_indexed_at_unix_seconds: state.index.last_indexed_at_unix_seconds,
        semantic_available: state.semantic_available,
        run: Some(IndexRun {
            mode: update.built.mode,
            reindexed_file_count: update.built.reindexed_files,
            removed_file_count: update.built.removed_files,
            skipped: update.skipped,
            skipped_files: update.skipped_files,
            rebuilt_because: update.built.rebuilt_because,
            over_budget_files: update.built.over_budget_files,
            vectors: update
                .built
                .manifest
                .semantic
                .as_ref()
                .map(|semantic| VectorsRun {
                    model: semantic.model.clone(),
                    vector_count: semantic.vector_count,
                    embedded_count: update.built.embedded_chunks,
                }),
            elapsed_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
        }),
        problem: None,
    }
}
