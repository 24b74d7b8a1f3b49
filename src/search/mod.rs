//! Retrieval: chunking, code-aware tokenization, the persistent tantivy index with its
//! manifest, and ranked hybrid queries over a workspace.
//!
//! Entry points: [`retrieve::retrieve`] answers a query (read-only, works with or without a
//! store or an index), [`update_index`] brings the persistent index up to date, and
//! [`status`] tells the rest of the tool how fresh the index is
//! (docs/retrieval.md#retrieval-summary) with a stat-only comparison. Files are listed by the one
//! walker in [`crate::state::walk`].
//!
//! This module never prints, never reads the clock or the environment (time comes in as an
//! argument) and never touches the typed state; its only writes are under the store's
//! `cache/retrieval/` directory, and only from [`update_index`].

use std::path::Path;

use anyhow::Result;

use crate::state::model::IndexTally;
use crate::state::model::RetrievalState;
use crate::state::model::RetrievalStatus;
use crate::state::model::ShardSummary;
use crate::state::walk;
use crate::state::walk::SkipCounts;

pub(crate) mod chunk;
pub(crate) mod cited;
pub(crate) mod definitions;
pub(crate) mod embed;
pub(crate) mod error;
pub(crate) mod exact;
pub(crate) mod excerpt;
pub(crate) mod hit;
pub(crate) mod index;
pub(crate) mod manifest;
pub(crate) mod outlines;
pub(crate) mod rank;
pub(crate) mod retrieve;
pub(crate) mod semantic;
pub(crate) mod state;
pub(crate) mod stream;
pub(crate) mod symbols;
pub mod syntax;
pub(crate) mod tokenize;
pub(crate) mod vectors;
pub(crate) mod why;

use chunk::ChunkShape;
use index::Opened;
use manifest::Manifest;

/// The chunks the index scores: 120 lines with 30 overlapping. Longer chunks than the original
/// 24 lines keep a function and its callers' context together, which measured better
/// (docs/retrieval.md#measured-choices: 120:30 ≥ 60:15 ≥ 30:5 ≥ whole files).
pub const CHUNK_SHAPE: ChunkShape = ChunkShape {
    lines: 120,
    overlap: 30,
};

/// The chunks the embedding model reads: 10 lines, 2 overlapping. A static model's vector is
/// the mean of its tokens' rows, so a long chunk blurs every topic in it into one direction;
/// semantic-alone MRR on the ripgrep / httpx / hono commit sets was 0.339 / 0.326 / 0.352 with
/// the 120-line lexical chunks, 0.386 / 0.371 / 0.466 with 20 lines, 0.410 / 0.398 / 0.509
/// with 10, and no better with 6 (0.427 / 0.409 / 0.500) for more vectors.
pub const VECTOR_CHUNK_SHAPE: ChunkShape = ChunkShape {
    lines: 10,
    overlap: 2,
};

/// Names the index configuration (schema, tokenizer, chunking, definition finder, outlines);
/// an index built by another configuration is rebuilt. Change it whenever any of them
/// changes.
pub const INDEX_REVISION: &str = "tantivy-bm25-v5:code-tokens:parsed-defs:outlines:chunks-120x30";

/// The revision reported when results come from a query-time scan.
pub const QUERY_TIME_REVISION: &str = "query-time-bm25-v1";

/// The error of a read of the work tree (a query-time `retrieve`, the parsing of `map`) whose
/// caller gave up on it, an MCP client's cancel: it stops before its next file.
pub const READ_CANCELLED: &str = "the read was cancelled; it stopped before its next file";

const SHARD_ID: &str = "workspace";
const SHARD_PREFIX: &str = ".";

/// How fresh the persistent index of a workspace is.
#[derive(Debug, Clone)]
pub struct IndexStatus {
    /// The retrieval summary (docs/retrieval.md#retrieval-summary).
    pub state: RetrievalState,
    /// Whether a usable persistent index exists.
    pub indexed: bool,
    /// Why an existing index cannot be used, or (from [`check`]) why the next `index`
    /// rebuilds it.
    pub problem: Option<String>,
}

impl IndexStatus {
    /// Whether `index` would change anything (outlines included when it came from [`check`]).
    pub fn is_stale(&self) -> bool {
        !self.indexed || self.state.status != RetrievalStatus::Ready
    }
}

/// The freshness of the index in `cache_dir` for the work tree at `root`, as the views show it.
/// Stat-only, except that files whose size or time changed are hashed.
pub fn status(root: &Path, cache_dir: &Path) -> IndexStatus {
    assess(root, cache_dir, false)
}

/// [`status`] for `index --check`: whether `index` would change anything. An index whose code
/// outlines these parsers cannot use is stale too, since the next `index` rebuilds it; telling
/// reads the outlines, which the views do not need.
pub fn check(root: &Path, cache_dir: &Path) -> IndexStatus {
    assess(root, cache_dir, true)
}

fn assess(root: &Path, cache_dir: &Path, with_outlines: bool) -> IndexStatus {
    if !root.is_dir() {
        return IndexStatus {
            state: unavailable_summary(root),
            indexed: false,
            problem: None,
        };
    }
    let layout = index::Layout::new(cache_dir);
    match index::open(&layout) {
        Opened::Missing => IndexStatus {
            state: baseline_summary(root),
            indexed: false,
            problem: None,
        },
        Opened::Unusable { reason, manifest } => IndexStatus {
            state: match manifest {
                Some(manifest) => {
                    manifest_summary(root, &manifest, RetrievalStatus::Stale, Vec::new())
                }
                None => baseline_summary(root),
            },
            indexed: false,
            problem: Some(reason),
        },
        Opened::Ready(persistent) => {
            let manifest = &persistent.manifest;
            let listing = current_listing(root, manifest);
            let dirty = manifest::compare(manifest, &listing.files, root).dirty_paths();
            let problem = (with_outlines && layout.load_outlines(manifest.generation).is_none())
                .then(|| outlines::UNUSABLE.to_owned());
            let state = match problem {
                Some(_) => manifest_summary(root, manifest, RetrievalStatus::Stale, dirty),
                None => freshness_summary(root, manifest, dirty),
            };
            IndexStatus {
                state,
                indexed: true,
                problem,
            }
        }
    }
}

/// The work tree's listing: from the manifest when no directory changed since it was written
/// (stat-only), from a walk otherwise.
fn current_listing(root: &Path, manifest: &Manifest) -> walk::Listing {
    manifest::unchanged_listing(root, manifest).unwrap_or_else(|| walk::list(root))
}

/// What `update_index` did.
#[derive(Debug)]
pub struct IndexUpdate {
    /// The build.
    pub built: index::Built,
    /// The summary after it (ready).
    pub state: RetrievalState,
    /// Files left out of the index, by reason (whole index, not just this run).
    pub skipped: SkipCounts,
    /// The same files, by path.
    pub skipped_files: Vec<SkippedFile>,
}

/// A file left out of the index.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
pub struct SkippedFile {
    /// Path relative to the root.
    pub path: String,
    /// Why.
    pub reason: walk::Skip,
    /// Its size in bytes.
    pub size_bytes: u64,
}

/// Brings the persistent index in `cache_dir` up to date with the work tree at `root`.
pub fn update_index(
    root: &Path,
    cache_dir: &Path,
    full: bool,
    semantic: &index::SemanticSetting,
    now_unix_seconds: i64,
    progress: index::Progress<'_>,
) -> Result<IndexUpdate> {
    let listing = walk::list(root);
    let layout = index::Layout::new(cache_dir);
    let built = index::build(
        root,
        &layout,
        &listing,
        full,
        semantic,
        now_unix_seconds,
        progress,
    )?;
    let mut skipped = SkipCounts::default();
    let mut skipped_files = Vec::new();
    for path in &listing.unreadable {
        skipped.add(walk::Skip::Unreadable);
        skipped_files.push(SkippedFile {
            path: path.clone(),
            reason: walk::Skip::Unreadable,
            size_bytes: 0,
        });
    }
    for file in &built.manifest.files {
        if let Some(reason) = file.skipped {
            skipped.add(reason);
            skipped_files.push(SkippedFile {
                path: file.path.clone(),
                reason,
                size_bytes: file.size_bytes,
            });
        }
    }
    let state = freshness_summary(root, &built.manifest, Vec::new());
    Ok(IndexUpdate {
        built,
        state,
        skipped,
        skipped_files,
    })
}

fn to_u32(count: u64) -> Option<u32> {
    u32::try_from(count).ok()
}

fn shard(
    status: RetrievalStatus,
    exact: bool,
    semantic: bool,
    counts: (Option<u32>, Option<u32>),
) -> ShardSummary {
    ShardSummary {
        shard_id: SHARD_ID.to_owned(),
        path_prefix: SHARD_PREFIX.to_owned(),
        indexed_file_count: counts.0,
        indexed_chunk_count: counts.1,
        status,
        exact_available: exact,
        semantic_available: semantic,
    }
}

fn root_string(root: &Path) -> String {
    root.display().to_string()
}

/// No workspace to search (docs/retrieval.md#retrieval-summary, step 1).
fn unavailable_summary(root: &Path) -> RetrievalState {
    RetrievalState {
        workspace_root: root_string(root),
        index_revision: Some(QUERY_TIME_REVISION.to_owned()),
        status: RetrievalStatus::Unavailable,
        semantic_available: false,
        index: IndexTally::default(),
        shards: vec![shard(
            RetrievalStatus::Unavailable,
            false,
            false,
            (None, None),
        )],
        dirty_paths: Vec::new(),
    }
}

/// No persistent index, but query-time search works (docs/retrieval.md#retrieval-summary, step 2).
fn baseline_summary(root: &Path) -> RetrievalState {
    RetrievalState {
        workspace_root: root_string(root),
        index_revision: Some(QUERY_TIME_REVISION.to_owned()),
        status: RetrievalStatus::Ready,
        semantic_available: false,
        index: IndexTally::default(),
        shards: vec![shard(RetrievalStatus::Ready, true, false, (None, None))],
        dirty_paths: Vec::new(),
    }
}

/// What a query-time scan searched (docs/retrieval.md#search-paths).
fn query_time_summary(root: &Path, files: usize, chunks: u64, now: i64) -> RetrievalState {
    let counts = (to_u32(files as u64), to_u32(chunks));
    RetrievalState {
        workspace_root: root_string(root),
        index_revision: Some(QUERY_TIME_REVISION.to_owned()),
        status: RetrievalStatus::Ready,
        semantic_available: false,
        index: IndexTally {
            last_indexed_at_unix_seconds: Some(now),
            indexed_file_count: counts.0,
            indexed_chunk_count: counts.1,
        },
        shards: vec![shard(RetrievalStatus::Ready, true, false, counts)],
        dirty_paths: Vec::new(),
    }
}

/// Ready when nothing is dirty, stale otherwise.
fn freshness_summary(root: &Path, manifest: &Manifest, dirty: Vec<String>) -> RetrievalState {
    let status = if dirty.is_empty() {
        RetrievalStatus::Ready
    } else {
        RetrievalStatus::Stale
    };
    manifest_summary(root, manifest, status, dirty)
}

fn manifest_summary(
    root: &Path,
    manifest: &Manifest,
    status: RetrievalStatus,
    dirty_paths: Vec<String>,
) -> RetrievalState {
    let chunks = manifest.indexed_chunk_count();
    let counts = (to_u32(manifest.indexed_file_count() as u64), to_u32(chunks));
    let semantic = manifest.semantic.is_some();
    RetrievalState {
        workspace_root: root_string(root),
        index_revision: Some(manifest.index_revision.clone()),
        status,
        semantic_available: semantic,
        index: IndexTally {
            last_indexed_at_unix_seconds: Some(manifest.indexed_at_unix_seconds),
            indexed_file_count: counts.0,
            indexed_chunk_count: counts.1,
        },
        shards: vec![shard(status, true, semantic, counts)],
        dirty_paths,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_revision_names_the_chunk_shape() {
        let shape = format!("{}x{}", CHUNK_SHAPE.lines, CHUNK_SHAPE.overlap);
        assert!(INDEX_REVISION.ends_with(&shape), "{INDEX_REVISION}");
    }

    #[test]
    fn a_cancelled_build_stops_before_its_next_file_and_keeps_the_index() {
        use std::sync::atomic::AtomicUsize;
        use std::sync::atomic::Ordering;
        let dir = tempfile::tempdir().expect("tempdir");
        for n in 0..300 {
            let source = format!("pub fn step_{n}() {{}}\n");
            std::fs::write(dir.path().join(format!("m{n}.rs")), source).expect("write");
        }
        let cache = dir.path().join("cache");
        // The caller gives up once 20 files were asked about: the rest of the first batch of
        // 256 is never started.
        let asked = AtomicUsize::new(0);
        let cancelled = || asked.fetch_add(1, Ordering::SeqCst) >= 20;
        let mut reported = 0;
        let progress = index::Progress {
            report: &mut |done, _| reported = done,
            cancelled: &cancelled,
        };
        let semantic = index::SemanticSetting::Off;
        let err =
            update_index(dir.path(), &cache, false, &semantic, 0, progress).expect_err("cancelled");
        assert_eq!(err.root_cause().to_string(), index::CANCELLED);
        assert_eq!(reported, 0, "no file of an unfinished batch is written");
        assert!(
            asked.load(Ordering::SeqCst) <= 256 + 2,
            "the second batch was never started"
        );
        assert!(!status(dir.path(), &cache).indexed, "nothing was committed");
    }

    #[test]
    fn a_cancelled_map_stops_parsing_before_its_next_file() {
        use std::sync::atomic::AtomicUsize;
        use std::sync::atomic::Ordering;
        let dir = tempfile::tempdir().expect("tempdir");
        for n in 0..300 {
            let source = format!("pub fn step_{n}() {{}}\n");
            std::fs::write(dir.path().join(format!("m{n}.rs")), source).expect("write");
        }
        let budget = std::time::Duration::from_secs(3600);
        // The caller gives up once 20 files were asked about: each thread then stops at its
        // next question, and no file after it is parsed.
        let asked = AtomicUsize::new(0);
        let cancelled = || asked.fetch_add(1, Ordering::SeqCst) >= 20;
        let none = syntax::Deadline::NONE;
        let err = outlines::gather(dir.path(), None, &|_| false, budget, none, &cancelled)
            .expect_err("cancelled");
        assert_eq!(err.to_string(), READ_CANCELLED);
        let threads = crate::parallel::cores();
        assert!(
            asked.load(Ordering::SeqCst) <= 20 + threads + 1,
            "files were parsed after the cancel: asked {} times",
            asked.load(Ordering::SeqCst)
        );
        // Not cancelled, every file is parsed.
        let gathered = outlines::gather(dir.path(), None, &|_| false, budget, none, &|| false);
        assert_eq!(gathered.expect("gathered").files.len(), 300);
    }

    #[test]
    fn status_without_an_index_is_the_query_time_baseline() {
        let dir = tempfile::tempdir().expect("tempdir");
        let status = status(dir.path(), &dir.path().join("cache"));
        assert!(!status.indexed);
        assert!(status.is_stale());
        assert_eq!(status.state.status, RetrievalStatus::Ready);
        assert_eq!(
            status.state.index_revision.as_deref(),
            Some(QUERY_TIME_REVISION)
        );
        let missing = dir.path().join("missing");
        assert_eq!(
            super::status(&missing, &missing).state.status,
            RetrievalStatus::Unavailable
        );
    }
}
