//! Answering a query (docs/retrieval.md): lexical chunk search (BM25 over chunk text, paths and
//! definition names) and exact lookup (files and definitions named by the query's
//! identifiers), fused into one ranking by reciprocal rank in hybrid mode; or semantic search
//! over the index's chunk vectors ([`semantic`](crate::search::semantic)) in semantic mode.
//!
//! Chunk search uses the persistent index when there is a usable one. Files changed since it
//! was built are never answered from it: their indexed chunks are masked out, and their
//! current text is indexed in memory and scored with statistics over live chunks of both
//! ([`rank::LiveStatistics`]). Without a usable index, the files in scope are read and
//! indexed in memory for this one query. Either way the answer reflects the work tree as it
//! is now, and the summary says which files were dirty, or that the index is stale.
//!
//! Read-only: this module never writes, not even the cache.
//!
//! This file holds the request, the answer and the order of the steps; the steps live beside
//! it: `chunks` (candidate chunks from the index or a query-time scan), `fuse` (the files in
//! rank order) and `hits` (the hits with their excerpts).

use std::path::Path;

use anyhow::Result;

use crate::search::error::SearchError;
use crate::search::hit::Hit;
use crate::search::index;
use crate::search::index::Opened;
use crate::search::manifest::Manifest;
use crate::search::rank;
use crate::search::semantic::Semantic;
use crate::search::syntax::Deadline;
use crate::search::tokenize;
use crate::state::model::RetrievalState;
use crate::state::model::RetrievalStatus;
use crate::state::walk;

mod chunks;
mod fuse;
mod hits;

use chunks::ChunkSearch;
use chunks::Queries;
pub use fuse::names_identifier;

/// Results when no limit is given.
pub const DEFAULT_LIMIT: usize = 10;
/// The most results a query returns.
pub const MAX_LIMIT: usize = 50;
/// The most words (runs of non-blank characters) a query may hold: searching costs time and
/// memory for every term, and a question is a few words and identifiers.
pub const MAX_QUERY_WORDS: usize = 128;
/// The most bytes a query may hold.
pub const MAX_QUERY_BYTES: usize = 8 * 1024;

/// Which searches to run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Lexical chunk search and exact lookup, fused. Not semantic search: with MiniLM-L6
    /// distilled to a 256-dimension model2vec model, fusing the semantic ranking in helped on
    /// no commit-subject set (ripgrep / httpx / hono MRR 0.584 / 0.664 / 0.716 without it;
    /// reciprocal-rank weight 0.5: 0.552 / 0.667 / 0.713; weight 0.25: 0.574 / 0.672 / 0.721,
    /// every paired bootstrap interval spanning zero).
    Hybrid,
    /// Files and definitions named by the query's identifiers, and directories so named.
    Exact,
    /// Lexical chunk search alone (BM25).
    Lexical,
    /// Chunk vectors alone, by cosine similarity to the query's (needs an index built with a
    /// model).
    Semantic,
}

/// A validated query.
#[derive(Debug, Clone)]
pub struct Request {
    query: String,
    limit: usize,
    prefixes: Vec<String>,
    mode: Mode,
    tests_wanted: bool,
    cited: Vec<String>,
    /// The command's deadline for its parses ([`Request::with_deadline`]).
    deadline: Deadline,
}

impl Request {
    /// The most results to return.
    pub fn limit(&self) -> usize {
        self.limit
    }

    /// Files that records about the code cite for this query, best first (see
    /// [`CITED_WEIGHT`]); hybrid mode fuses them into its ranking.
    pub fn with_cited(mut self, paths: Vec<String>) -> Request {
        self.cited = paths;
        self
    }

    /// This request with the command's `deadline` for its parses (none by default): a file
    /// whose definitions the parser has not settled by then is searched as text alone and
    /// named in [`Answer::left_out`].
    pub fn with_deadline(mut self, deadline: Deadline) -> Request {
        self.deadline = deadline;
        self
    }

    /// Validates a query (docs/retrieval.md#request-validation): the trimmed query must not be
    /// empty nor longer than [`MAX_QUERY_WORDS`] words or [`MAX_QUERY_BYTES`] bytes, a given
    /// limit must not be zero and is clamped to 1–50. `prefixes` are already
    /// normalised ([`exact::normalize_prefixes`]).
    ///
    /// [`exact::normalize_prefixes`]: crate::search::exact::normalize_prefixes
    pub fn new(
        query: &str,
        limit: Option<usize>,
        prefixes: Vec<String>,
        mode: Mode,
    ) -> Result<Request> {
        let query = query.trim();
        if query.is_empty() {
            return Err(SearchError::EmptyQuery.into());
        }
        let words = query.split_whitespace().count();
        if words > MAX_QUERY_WORDS || query.len() > MAX_QUERY_BYTES {
            return Err(SearchError::QueryTooLong {
                words,
                bytes: query.len(),
                max_words: MAX_QUERY_WORDS,
                max_bytes: MAX_QUERY_BYTES,
            }
            .into());
        }
        if limit == Some(0) {
            return Err(SearchError::ZeroLimit.into());
        }
        Ok(Request {
            tests_wanted: rank::mentions_tests(query),
            query: query.to_owned(),
            limit: limit.unwrap_or(DEFAULT_LIMIT).clamp(1, MAX_LIMIT),
            prefixes,
            mode,
            cited: Vec::new(),
            deadline: Deadline::NONE,
        })
    }
}

/// How a query was answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum SearchPath {
    /// From the persistent index alone: nothing changed since it was built.
    Index,
    /// From the persistent index, with the files changed since searched as they are now.
    IndexOverlay,
    /// No usable index: the work tree was searched at query time.
    Scan,
}

/// The ranked answer to a query.
#[derive(Debug, Clone)]
pub struct Answer {
    /// The trimmed query.
    pub query: String,
    /// The state of the index that answered.
    pub index: RetrievalState,
    /// How it was answered.
    pub search: SearchPath,
    /// Why an index that exists was not used, when it was not.
    pub index_problem: Option<String>,
    /// Results in rank order.
    pub results: Vec<Hit>,
    /// What the walk of the work tree did not read, when it walked ([`walk::Listing::unreadable`]):
    /// ignore files it refused (their rules not applied) and entries it could not read.
    pub not_read: Vec<String>,
    /// Files whose definitions were left out because the request's deadline passed before the
    /// parser settled them (searched as text alone), sorted.
    pub left_out: Vec<String>,
}

/// Answers `request` over the work tree at `root`, using the persistent index in `cache_dir`
/// when there is a usable one. `now_unix_seconds` stamps a query-time scan. A scan asks
/// `cancelled` before each file and fails with [`crate::search::READ_CANCELLED`] once the
/// caller gave up.
pub fn retrieve(
    root: &Path,
    cache_dir: Option<&Path>,
    request: &Request,
    now_unix_seconds: i64,
    cancelled: &(dyn Fn() -> bool + Sync),
) -> Result<Answer> {
    let mut analyzer = tokenize::analyzer();
    let words = tokenize::query_words(&mut analyzer, &request.query);
    let terms = tokenize::query_terms(&mut analyzer, &request.query);
    let identifiers = tokenize::query_identifiers(&request.query);
    let queries = Queries::new(request, &terms, &identifiers);
    let layout = cache_dir.map(index::Layout::new);
    let opened = match &layout {
        Some(layout) => index::open(layout),
        None => Opened::Missing,
    };
    let semantic = match request.mode {
        Mode::Semantic => Some(open_semantic(layout.as_ref(), &opened)?),
        Mode::Hybrid | Mode::Exact | Mode::Lexical => None,
    };
    let listing = match &opened {
        Opened::Ready(persistent) => crate::search::current_listing(root, &persistent.manifest),
        // A scan opens every file in scope and asks it its size: the names are enough.
        Opened::Missing | Opened::Unusable { .. } => walk::list_names(root),
    };
    // Without a usable index, every file in scope is searched as it is now; the summary is
    // the manifest marked stale when there is one (docs/retrieval.md#retrieval-summary), the scan's
    // own otherwise.
    let scan = |manifest: Option<&Manifest>| -> Result<(Option<ChunkSearch>, RetrievalState)> {
        let found = chunks::scan_if(
            root,
            &listing,
            request,
            &queries,
            &terms,
            &identifiers,
            cancelled,
        )?;
        let state = match manifest {
            Some(manifest) => {
                crate::search::manifest_summary(root, manifest, RetrievalStatus::Stale, Vec::new())
            }
            None => chunks::scan_summary(root, &found, now_unix_seconds),
        };
        Ok((found, state))
    };
    let (found, state, search, index_problem) = match &opened {
        Opened::Ready(persistent) => {
            match chunks::search_index(
                root,
                persistent,
                &listing,
                request,
                &queries,
                semantic.as_ref(),
            ) {
                Ok((found, state)) => {
                    let search = if state.dirty_paths.is_empty() {
                        SearchPath::Index
                    } else {
                        SearchPath::IndexOverlay
                    };
                    (found, state, search, None)
                }
                Err(err) => {
                    let (found, state) = scan(Some(&persistent.manifest))?;
                    (found, state, SearchPath::Scan, Some(format!("{err:#}")))
                }
            }
        }
        Opened::Unusable { manifest, reason } => {
            let (found, state) = scan(manifest.as_ref())?;
            (found, state, SearchPath::Scan, Some(reason.clone()))
        }
        Opened::Missing => {
            let (found, state) = scan(None)?;
            (found, state, SearchPath::Scan, None)
        }
    };
    let found = found.unwrap_or_default();
    let ranked = fuse::rank_files(request, &listing, &identifiers, &found);
    let query = hits::Query {
        words: &words,
        terms: &terms,
        identifiers: &identifiers,
        names_identifier: names_identifier(&request.query),
        deadline: request.deadline,
    };
    let (results, late) = hits::results(root, request, &listing, &found, &ranked, &query);
    let mut left_out = [found.left_out, late].concat();
    left_out.sort();
    left_out.dedup();
    Ok(Answer {
        query: request.query.clone(),
        index: state,
        search,
        index_problem,
        results,
        not_read: listing.unreadable,
        left_out,
    })
}

/// The semantic side of the index, or a usage error saying why there is none: no index, an
/// index built without a model, or a model or vectors that no longer load.
fn open_semantic(layout: Option<&index::Layout>, opened: &Opened) -> Result<Semantic> {
    let reason = match (layout, opened) {
        (Some(layout), Opened::Ready(persistent)) => {
            match Semantic::open(layout, &persistent.manifest) {
                Ok(Some(semantic)) => return Ok(semantic),
                Ok(None) => "the index was built without an embedding model".to_owned(),
                Err(err) => format!("{err:#}"),
            }
        }
        (_, Opened::Unusable { reason, .. }) => format!("the index is unusable: {reason}"),
        _ => "there is no index".to_owned(),
    };
    Err(SearchError::SemanticUnavailable { reason }.into())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::search::hit::HitKind;

    #[test]
    fn requests_are_validated_and_limits_clamped() {
        let request = Request::new("  walk  ", None, vec![], Mode::Hybrid).expect("valid");
        assert_eq!(
            (request.query.as_str(), request.limit),
            ("walk", DEFAULT_LIMIT)
        );
        let request = Request::new("walk", Some(500), vec![], Mode::Hybrid).expect("valid");
        assert_eq!(request.limit, MAX_LIMIT);
        let empty = Request::new(" \t", None, vec![], Mode::Hybrid).expect_err("empty");
        assert_eq!(empty.to_string(), "query must not be empty");
        let zero = Request::new("walk", Some(0), vec![], Mode::Hybrid).expect_err("zero");
        assert!(zero.to_string().contains("greater than zero"));
        let most = vec!["word"; MAX_QUERY_WORDS].join(" ");
        assert!(Request::new(&most, None, vec![], Mode::Hybrid).is_ok());
        for long in [format!("{most} one"), "x".repeat(MAX_QUERY_BYTES + 1)] {
            let refused = Request::new(&long, None, vec![], Mode::Hybrid).expect_err("long");
            assert!(
                refused.to_string().starts_with("the query is too long"),
                "{refused}"
            );
        }
    }

    #[test]
    fn without_an_index_the_work_tree_is_searched_at_query_time() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path();
        std::fs::create_dir_all(root.join("src")).expect("mkdir");
        std::fs::write(
            root.join("src/engine.rs"),
            "fn check(p: &Patch) -> bool {\n    validate_patch(p)\n}\n",
        )
        .expect("write");
        std::fs::write(root.join("src/other.rs"), "fn unrelated() {}\n").expect("write");
        let request =
            Request::new("where are patches validated", None, vec![], Mode::Hybrid).expect("valid");
        let answer = retrieve(root, None, &request, 7, &|| false).expect("answer");
        assert_eq!(answer.results.len(), 1);
        let hit = &answer.results[0];
        assert_eq!(
            (hit.kind, hit.path.as_str()),
            (HitKind::Chunk, "src/engine.rs")
        );
        assert_eq!((hit.start_line, hit.end_line), (Some(1), Some(3)));
        assert_eq!(answer.index.index.indexed_file_count, Some(2));
        assert_eq!(answer.index.index.last_indexed_at_unix_seconds, Some(7));
    }

    #[test]
    fn a_cancelled_scan_stops_before_its_next_file() {
        use std::sync::atomic::AtomicUsize;
        use std::sync::atomic::Ordering;
        let dir = tempfile::tempdir().expect("tempdir");
        for n in 0..300 {
            let source = format!("fn validate_{n}(patch: &Patch) -> bool {{ true }}\n");
            std::fs::write(dir.path().join(format!("m{n}.rs")), source).expect("write");
        }
        let request = Request::new("validate patch", None, vec![], Mode::Hybrid).expect("valid");
        // The caller gives up once 20 files were asked about: each thread then stops at its
        // next question, and no file after it is read.
        let asked = AtomicUsize::new(0);
        let cancelled = || asked.fetch_add(1, Ordering::SeqCst) >= 20;
        let err = retrieve(dir.path(), None, &request, 7, &cancelled).expect_err("cancelled");
        assert_eq!(err.to_string(), crate::search::READ_CANCELLED);
        let threads = crate::parallel::cores();
        assert!(
            asked.load(Ordering::SeqCst) <= 20 + threads + 1,
            "files were read after the cancel: asked {} times",
            asked.load(Ordering::SeqCst)
        );
        // Not cancelled, the same scan answers.
        let answer = retrieve(dir.path(), None, &request, 7, &|| false).expect("answer");
        assert!(!answer.results.is_empty());
    }
}
