//! Answering a query (docs/retrieval.md): lexical chunk search (BM25 over chunk text, paths and
//! definition names) and exact lookup (files and definitions named by the query's
//! identifiers), fused into one ranking by reciprocal rank in hybrid mode; or semantic search
//! over the index's chunk vectors ([`semantic`]) in semantic mode.
//!
//! Chunk search uses the persistent index when there is a usable one. Files changed since it
//! was built are never answered from it: their indexed chunks are masked out, and their
//! current text is indexed in memory and scored with statistics over live chunks of both
//! ([`rank::LiveStatistics`]). Without a usable index, the files in scope are read and
//! indexed in memory for this one query. Either way the answer reflects the work tree as it
//! is now, and the summary says which files were dirty, or that the index is stale.
//!
//! Read-only: this module never writes, not even the cache.

use std::collections::HashMap;
use std::collections::HashSet;
use std::path::Path;
use std::sync::Arc;

use anyhow::Result;
use tantivy::query::BooleanQuery;
use tantivy::tokenizer::TextAnalyzer;

use crate::parallel;
use crate::search::embed::TokenCache;
use crate::search::error::SearchError;
use crate::search::exact;
use crate::search::excerpt;
use crate::search::hit;
use crate::search::hit::Hit;
use crate::search::hit::HitKind;
use crate::search::hit::Ranking;
use crate::search::index;
use crate::search::index::Opened;
use crate::search::index::Persistent;
use crate::search::manifest;
use crate::search::manifest::Manifest;
use crate::search::rank;
use crate::search::semantic::Semantic;
use crate::search::stream;
use crate::search::symbols;
use crate::search::tokenize;
use crate::search::tokenize::QueryTerm;
use crate::state::model::RetrievalState;
use crate::state::model::RetrievalStatus;
use crate::state::walk;
use crate::state::walk::Listing;

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

/// Reciprocal-rank fusion: a file at rank r (from 1) of a list adds `weight / (RRF_K + r)`.
pub const RRF_K: f32 = 10.0;

/// Weight of the exact list in hybrid fusion (the lexical list weighs 1) when the query is an
/// identifier lookup ([`names_identifier`]). For prose questions exact lookup only contributes
/// through the definition names in the lexical query: fusing the exact list into sentence
/// queries lowered MRR on every commit-subject set (ripgrep / httpx / hono: 0.584 / 0.664 /
/// 0.716 without it; weight 1, k 10: 0.502 / 0.631 / 0.640; weight 0.3, k 60: 0.550 / 0.651 /
/// 0.707; weight 1 for any query with a code span or identifier: 0.551 / 0.678 / 0.694).
pub const EXACT_WEIGHT: f32 = 1.0;

/// Weight of the cited list in hybrid fusion ([`Request::with_cited`]): files that the
/// records matching the query cite (the map's nodes and edges) join the ranking by reciprocal
/// rank at half the weight of the lexical list, so the first cited file ranks with the
/// lexical list's eleventh and a file cited and found lexically moves up; a question phrased
/// in the records' words finds the code they point at even when it shares no word with it.
pub const CITED_WEIGHT: f32 = 0.5;

/// Whether a query is an identifier lookup rather than a question in prose: one word, or a
/// code span alone, or two words of which one is spelled as code (`camelCase`,
/// `snake_case`, `Type::method`).
pub fn names_identifier(query: &str) -> bool {
    let trimmed = query.trim();
    let words: Vec<&str> = trimmed.split_whitespace().collect();
    let code_like = |word: &&str| {
        let inner = word.trim_matches(|c: char| !c.is_alphanumeric());
        inner.contains('_')
            || inner.contains("::")
            || inner
                .chars()
                .zip(inner.chars().skip(1))
                .any(|(a, b)| a.is_lowercase() && b.is_uppercase())
    };
    let code_span = trimmed.len() > 2
        && trimmed.starts_with('`')
        && trimmed.ends_with('`')
        && trimmed.matches('`').count() == 2;
    words.len() == 1 || code_span || (words.len() == 2 && words.iter().any(code_like))
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

    /// Validates a query (docs/retrieval.md#request-validation): the trimmed query must not be
    /// empty nor longer than [`MAX_QUERY_WORDS`] words or [`MAX_QUERY_BYTES`] bytes, a given
    /// limit must not be zero and is clamped to 1–50. `prefixes` are already
    /// normalised ([`exact::normalize_prefixes`]).
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
}

/// A file's best chunk before its excerpt is cut.
#[derive(Debug, Clone)]
struct Candidate {
    path: String,
    score: f32,
    start_line: u32,
    end_line: u32,
}

/// The two index queries of a request: chunk text (with paths and definitions), and
/// definitions alone.
struct Queries {
    text: Option<BooleanQuery>,
    definitions: Option<BooleanQuery>,
    statistics_terms: Vec<tantivy::Term>,
}

impl Queries {
    fn new(request: &Request, terms: &[QueryTerm], identifiers: &[String]) -> Queries {
        let (_, fields) = index::schema();
        let text = (matches!(request.mode, Mode::Hybrid | Mode::Lexical) && !terms.is_empty())
            .then(|| rank::query(&fields, terms, identifiers));
        let definitions = (matches!(request.mode, Mode::Hybrid | Mode::Exact)
            && !identifiers.is_empty())
        .then(|| rank::definitions_query(&fields, identifiers));
        Queries {
            text,
            definitions,
            statistics_terms: rank::query_terms(&fields, terms, identifiers),
        }
    }

    fn wanted(&self) -> bool {
        self.text.is_some() || self.definitions.is_some()
    }
}

/// Chunk and definition candidates, and the texts read (and chunks indexed) at query time
/// to find them.
#[derive(Default)]
struct ChunkSearch {
    candidates: Vec<Candidate>,
    definitions: Vec<Candidate>,
    /// Files ranked by their best chunk's similarity to the query.
    semantic: Vec<Candidate>,
    texts: HashMap<String, String>,
    chunk_count: u64,
    /// Files a query-time scan looked at (matching or not).
    scanned_files: usize,
}

impl ChunkSearch {
    /// Runs both queries over `searcher` with `weights`, naming files with `path_of`.
    fn run(
        &mut self,
        searcher: &tantivy::Searcher,
        statistics: &dyn tantivy::query::Bm25StatisticsProvider,
        queries: &Queries,
        weights: &Arc<[f32]>,
        path_of: &dyn Fn(u64) -> Option<String>,
    ) -> Result<()> {
        for (query, out) in [
            (&queries.text, &mut self.candidates),
            (&queries.definitions, &mut self.definitions),
        ] {
            let Some(query) = query else { continue };
            for file in rank::best_chunks(searcher, statistics, query, Arc::clone(weights))? {
                if let Some(path) = path_of(file.file_id) {
                    out.push(candidate(&path, &file));
                }
            }
        }
        Ok(())
    }
}

/// Answers `request` over the work tree at `root`, using the persistent index in `cache_dir`
/// when there is a usable one. `now_unix_seconds` stamps a query-time scan.
pub fn retrieve(
    root: &Path,
    cache_dir: Option<&Path>,
    request: &Request,
    now_unix_seconds: i64,
) -> Result<Answer> {
    let mut analyzer = tokenize::analyzer();
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
        Opened::Ready(persistent) => super::current_listing(root, &persistent.manifest),
        Opened::Missing | Opened::Unusable { .. } => walk::list(root),
    };
    // Without a usable index, every file in scope is searched as it is now; the summary is
    // the manifest marked stale when there is one (docs/retrieval.md#retrieval-summary), the scan's
    // own otherwise.
    let scan = |manifest: Option<&Manifest>| -> Result<(Option<ChunkSearch>, RetrievalState)> {
        let found = scan_if(root, &listing, request, &queries, &terms, &identifiers);
        let state = match manifest {
            Some(manifest) => {
                super::manifest_summary(root, manifest, RetrievalStatus::Stale, Vec::new())
            }
            None => scan_summary(root, &found, now_unix_seconds),
        };
        Ok((found, state))
    };
    let (found, state, search, index_problem) = match &opened {
        Opened::Ready(persistent) => {
            match search_index(
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
    let ranked = rank_files(request, &listing, &identifiers, &found);
    let chunk_ranking = match request.mode {
        Mode::Semantic => Ranking::Semantic,
        Mode::Hybrid | Mode::Exact | Mode::Lexical => Ranking::Lexical,
    };
    let mut results = hits(
        root,
        &found,
        &ranked,
        &terms,
        &identifiers,
        request.limit,
        chunk_ranking,
    );
    if matches!(request.mode, Mode::Hybrid | Mode::Exact) && results.len() < request.limit {
        results.extend(exact::directory_hits(
            &listing,
            &identifiers,
            &request.prefixes,
        ));
    }
    hit::sort(&mut results);
    results.truncate(request.limit);
    Ok(Answer {
        query: request.query.clone(),
        index: state,
        search,
        index_problem,
        results,
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

/// One ranked file: its score in the mode's ranking, its best chunk (when the lexical or,
/// in semantic mode, the semantic search found it) and its matching definition's chunk (when
/// exact lookup found one).
struct RankedFile<'a> {
    path: &'a str,
    score: f32,
    chunk: Option<&'a Candidate>,
    definition: Option<&'a Candidate>,
}

/// Candidates best first by `score`, one per file (they are already one per file).
fn by_score(candidates: &[Candidate], score: impl Fn(&Candidate) -> f32) -> Vec<&Candidate> {
    let mut sorted: Vec<&Candidate> = candidates.iter().collect();
    sorted.sort_by(|a, b| {
        score(b)
            .total_cmp(&score(a))
            .then_with(|| Path::new(&a.path).cmp(Path::new(&b.path)))
    });
    sorted
}

/// The files of the answer in order: the lexical ranking, the exact ranking (definition
/// matches plus [`exact::path_score`], times the file's prior), the semantic ranking, or
/// lexical and exact fused by reciprocal rank ([`RRF_K`], [`EXACT_WEIGHT`]; the exact list
/// only when the query names an identifier). Hybrid orders its lexical list with the files
/// that define an identifier of the query raised ([`rank::definer_weighted`]) and leaves
/// the semantic ranking out ([`Mode::Hybrid`]).
fn rank_files<'a>(
    request: &Request,
    listing: &'a Listing,
    identifiers: &[String],
    found: &'a ChunkSearch,
) -> Vec<RankedFile<'a>> {
    let definers: HashSet<&str> = found
        .definitions
        .iter()
        .map(|definition| definition.path.as_str())
        .collect();
    let lexical = by_score(&found.candidates, |candidate| match request.mode {
        Mode::Hybrid => {
            rank::definer_weighted(candidate.score, definers.contains(candidate.path.as_str()))
        }
        Mode::Exact | Mode::Lexical | Mode::Semantic => candidate.score,
    });
    let semantic = by_score(&found.semantic, |candidate| candidate.score);
    let mut exact: HashMap<&str, (f32, Option<&Candidate>)> = HashMap::new();
    for definition in &found.definitions {
        exact.insert(
            definition.path.as_str(),
            (definition.score, Some(definition)),
        );
    }
    if request.mode != Mode::Lexical && !identifiers.is_empty() {
        for file in &listing.files {
            if !exact::in_scope(&request.prefixes, &file.path) {
                continue;
            }
            let score = exact::path_score(identifiers, &file.path);
            if score > 0.0 {
                let weighted = score * rank::prior(&file.path, request.tests_wanted);
                exact.entry(file.path.as_str()).or_insert((0.0, None)).0 += weighted;
            }
        }
    }
    let mut exact: Vec<(&str, f32, Option<&Candidate>)> = exact
        .into_iter()
        .map(|(path, (score, definition))| (path, score, definition))
        .collect();
    exact.sort_by(|a, b| {
        b.1.total_cmp(&a.1)
            .then_with(|| Path::new(a.0).cmp(Path::new(b.0)))
    });
    let chunks: HashMap<&str, &Candidate> = match request.mode {
        Mode::Exact => HashMap::new(),
        Mode::Semantic => by_path(&semantic),
        Mode::Hybrid | Mode::Lexical => by_path(&lexical),
    };
    let definitions: HashMap<&str, Option<&Candidate>> = exact
        .iter()
        .map(|(path, _, definition)| (*path, *definition))
        .collect();
    let mut scores: Vec<(&str, f32)> = match request.mode {
        Mode::Lexical => lexical
            .iter()
            .map(|candidate| (candidate.path.as_str(), candidate.score))
            .collect(),
        Mode::Semantic => semantic
            .iter()
            .map(|candidate| (candidate.path.as_str(), candidate.score))
            .collect(),
        Mode::Exact => exact
            .iter()
            .map(|(path, score, _)| (*path, *score))
            .collect(),
        Mode::Hybrid => {
            let mut fused: HashMap<&str, f32> = HashMap::new();
            for (rank, candidate) in lexical.iter().enumerate() {
                *fused.entry(candidate.path.as_str()).or_default() += reciprocal(rank, 1.0);
            }
            if names_identifier(&request.query) {
                for (rank, (path, _, _)) in exact.iter().enumerate() {
                    *fused.entry(path).or_default() += reciprocal(rank, EXACT_WEIGHT);
                }
            }
            let cited = request
                .cited
                .iter()
                .filter(|path| exact::in_scope(&request.prefixes, path))
                .filter_map(|path| {
                    let at = listing
                        .files
                        .binary_search_by(|file| file.path.as_str().cmp(path))
                        .ok()?;
                    Some(listing.files[at].path.as_str())
                });
            for (rank, path) in cited.enumerate() {
                *fused.entry(path).or_default() += reciprocal(rank, CITED_WEIGHT);
            }
            fused.into_iter().collect()
        }
    };
    scores.sort_by(|a, b| {
        b.1.total_cmp(&a.1)
            .then_with(|| Path::new(a.0).cmp(Path::new(b.0)))
    });
    scores
        .into_iter()
        .map(|(path, score)| RankedFile {
            path,
            score,
            chunk: chunks.get(path).copied(),
            definition: definitions.get(path).copied().flatten(),
        })
        .collect()
}

fn by_path<'a>(candidates: &[&'a Candidate]) -> HashMap<&'a str, &'a Candidate> {
    candidates
        .iter()
        .map(|candidate| (candidate.path.as_str(), *candidate))
        .collect()
}

fn reciprocal(rank: usize, weight: f32) -> f32 {
    weight / (RRF_K + rank as f32 + 1.0)
}

/// Chunk search over the persistent index (lexical, and semantic when `semantic` is given),
/// with dirty files searched as they are now.
fn search_index(
    root: &Path,
    persistent: &Persistent,
    listing: &Listing,
    request: &Request,
    queries: &Queries,
    semantic: Option<&Semantic>,
) -> Result<(Option<ChunkSearch>, RetrievalState)> {
    let manifest = &persistent.manifest;
    let changes = manifest::compare(manifest, &listing.files, root);
    let state = super::freshness_summary(root, manifest, changes.dirty_paths());
    if !queries.wanted() && semantic.is_none() {
        return Ok((None, state));
    }
    let slots = usize::try_from(manifest.next_file_id).unwrap_or(0);
    let mut weights = vec![0.0; slots];
    let mut live = vec![false; slots];
    let mut paths = HashMap::new();
    for (entry, _) in &changes.unchanged {
        let Some(slot) = usize::try_from(entry.file_id).ok().filter(|&id| id < slots) else {
            continue;
        };
        live[slot] = true;
        if entry.chunk_count > 0 && exact::in_scope(&request.prefixes, &entry.path) {
            weights[slot] = rank::prior(&entry.path, request.tests_wanted);
            paths.insert(entry.file_id, entry.path.as_str());
        }
    }
    // Dirty files are searched as they are now, in memory; every file changed since the
    // index counts with its current text in the statistics, and only then.
    let mut fresh: Vec<(String, String)> = changes
        .modified
        .into_iter()
        .filter_map(|(_, stat, fetched)| fetched.text.ok().map(|text| (stat.path.clone(), text)))
        .collect();
    fresh.extend(changes.added.into_iter().filter_map(|stat| {
        walk::read_text(root, stat)
            .ok()
            .map(|text| (stat.path.clone(), text))
    }));
    let fresh_weights: Arc<[f32]> = fresh
        .iter()
        .map(|(path, _)| {
            if exact::in_scope(&request.prefixes, path) {
                rank::prior(path, request.tests_wanted)
            } else {
                0.0
            }
        })
        .collect();
    let mut found = ChunkSearch::default();
    let path_of = |file_id: u64| paths.get(&file_id).map(|path| (*path).to_owned());
    let fresh_path_of = |file_id: u64| {
        usize::try_from(file_id)
            .ok()
            .and_then(|id| fresh.get(id))
            .map(|(path, _)| path.clone())
    };
    if let Some(semantic) = semantic {
        let query = semantic.query(&request.query);
        let weight = |file_id: u64| {
            usize::try_from(file_id)
                .ok()
                .and_then(|id| weights.get(id).copied())
                .unwrap_or(0.0)
        };
        let mut scored: Vec<(rank::FileScore, String)> = semantic
            .indexed(&query, &weight)
            .into_iter()
            .filter_map(|file| Some((file, path_of(file.file_id)?)))
            .collect();
        let mut cache = TokenCache::new();
        for ((id, (path, text)), &prior) in (0u64..).zip(&fresh).zip(fresh_weights.iter()) {
            if prior <= 0.0 {
                continue;
            }
            if let Some(mut file) = semantic.fresh(&query, id, path, text, &mut cache) {
                file.score *= prior;
                scored.push((file, path.clone()));
            }
        }
        found.semantic = scored
            .iter()
            .map(|(file, path)| candidate(path, file))
            .collect();
    }
    if queries.wanted() {
        let (_, fields) = index::schema();
        let searcher = &persistent.searcher;
        let memory = if fresh.is_empty() {
            None
        } else {
            let memory = index::in_memory(&fresh)?;
            let memory_searcher = index::searcher(&memory.index)?;
            Some((memory, memory_searcher))
        };
        let stat_fields = [fields.body, fields.path, fields.defs];
        let mut statistics = rank::LiveStatistics::default();
        let is_live = |file_id: u64| {
            usize::try_from(file_id)
                .ok()
                .and_then(|id| live.get(id).copied())
                .unwrap_or(false)
        };
        statistics.add(searcher, &is_live, &stat_fields, &queries.statistics_terms)?;
        if let Some((_, memory_searcher)) = &memory {
            statistics.add(
                memory_searcher,
                &|_| true,
                &stat_fields,
                &queries.statistics_terms,
            )?;
        }
        found.run(
            searcher,
            &statistics,
            queries,
            &Arc::from(weights),
            &path_of,
        )?;
        if let Some((memory, memory_searcher)) = memory {
            found.run(
                &memory_searcher,
                &statistics,
                queries,
                &fresh_weights,
                &fresh_path_of,
            )?;
            found.chunk_count = memory.chunk_count;
        }
    }
    found.texts = fresh.into_iter().collect();
    Ok((Some(found), state))
}

/// Streams the files in scope and ranks what matched (no usable index; [`stream`]): a scan
/// costs about a `grep` of the tree plus the tokenizing of the lines that match.
fn scan_if(
    root: &Path,
    listing: &Listing,
    request: &Request,
    queries: &Queries,
    terms: &[QueryTerm],
    identifiers: &[String],
) -> Option<ChunkSearch> {
    if !queries.wanted() {
        return None;
    }
    let in_scope: Vec<&walk::FileStat> = listing
        .files
        .iter()
        .filter(|stat| exact::in_scope(&request.prefixes, &stat.path))
        .collect();
    let streamed = stream::search(
        root,
        &in_scope,
        stream::Query {
            terms,
            identifiers,
            text: queries.text.is_some(),
            definitions: queries.definitions.is_some(),
            tests_wanted: request.tests_wanted,
        },
    );
    let path_of = |file: &rank::FileScore| {
        usize::try_from(file.file_id)
            .ok()
            .and_then(|index| in_scope.get(index))
            .map(|stat| candidate(&stat.path, file))
    };
    Some(ChunkSearch {
        candidates: streamed.text.iter().filter_map(path_of).collect(),
        definitions: streamed.definitions.iter().filter_map(path_of).collect(),
        chunk_count: streamed.chunk_count,
        scanned_files: streamed.scanned_files,
        ..ChunkSearch::default()
    })
}

/// The summary of a query-time scan, or the baseline when no scan was needed.
fn scan_summary(root: &Path, found: &Option<ChunkSearch>, now: i64) -> RetrievalState {
    match found {
        Some(found) => super::query_time_summary(root, found.scanned_files, found.chunk_count, now),
        None => super::baseline_summary(root),
    }
}

fn candidate(path: &str, file: &rank::FileScore) -> Candidate {
    Candidate {
        path: path.to_owned(),
        score: file.score,
        start_line: file.start_line,
        end_line: file.end_line,
    }
}

/// The best `limit` ranked files as hits, each with the focused excerpt of its chunk or
/// definition.
fn hits(
    root: &Path,
    found: &ChunkSearch,
    ranked: &[RankedFile<'_>],
    terms: &[QueryTerm],
    identifiers: &[String],
    limit: usize,
    chunk_ranking: Ranking,
) -> Vec<Hit> {
    let ranked = &ranked[..ranked.len().min(limit)];
    let terms: HashSet<&str> = terms.iter().map(|term| term.text.as_str()).collect();
    // Reading each hit's file and finding its best window is independent per hit: spread the
    // hits over the cores.
    let threads = std::thread::available_parallelism().map_or(1, usize::from);
    let per_thread = ranked.len().div_ceil(threads).max(1);
    let (texts, terms) = (&found.texts, &terms);
    let parts: Vec<&[RankedFile<'_>]> = ranked.chunks(per_thread).collect();
    let parts = parallel::map_pieces(&parts, |part| {
        let mut analyzer = tokenize::analyzer();
        part.iter()
            .map(|file| {
                hit_of(
                    root,
                    texts,
                    terms,
                    identifiers,
                    &mut analyzer,
                    file,
                    chunk_ranking,
                )
            })
            .collect::<Vec<_>>()
    });
    parts.into_iter().flatten().collect()
}

/// The hit of one ranked file: its best chunk's best window (found by `chunk_ranking`), or
/// the lines of its matching definition, or (a file-name match) no lines.
fn hit_of(
    root: &Path,
    texts: &HashMap<String, String>,
    terms: &HashSet<&str>,
    identifiers: &[String],
    analyzer: &mut TextAnalyzer,
    file: &RankedFile<'_>,
    chunk_ranking: Ranking,
) -> Hit {
    let mut hit = Hit {
        kind: HitKind::File,
        ranking: Ranking::Exact,
        path: file.path.to_owned(),
        score: file.score,
        start_line: None,
        end_line: None,
        excerpt: None,
        record: None,
    };
    if file.chunk.is_none() && file.definition.is_none() {
        return hit;
    }
    let read;
    let text = match texts.get(file.path) {
        Some(text) => text.as_str(),
        None => {
            read = std::fs::read_to_string(root.join(file.path)).unwrap_or_default();
            read.as_str()
        }
    };
    let (start_line, end_line) = match (file.chunk, file.definition) {
        (Some(chunk), _) => {
            hit.kind = HitKind::Chunk;
            hit.ranking = chunk_ranking;
            (chunk.start_line, chunk.end_line)
        }
        (None, Some(definition)) => {
            hit.kind = HitKind::Definition;
            let line = symbols::definitions(file.path, text)
                .into_iter()
                .filter(|found| (definition.start_line..=definition.end_line).contains(&found.line))
                .find(|found| identifiers.contains(&symbols::normalize(&found.name)))
                .map_or(definition.start_line, |found| found.line);
            (line, line + excerpt::EXCERPT_LINES as u32 - 1)
        }
        (None, None) => return hit,
    };
    hit.start_line = Some(start_line);
    hit.end_line = Some(end_line);
    if let Some(excerpt) = excerpt::focus(analyzer, text, start_line, end_line, terms) {
        hit.start_line = Some(excerpt.start_line);
        hit.end_line = Some(excerpt.end_line);
        hit.excerpt = Some(excerpt.text);
    }
    hit
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identifier_queries_are_told_from_prose() {
        for query in ["SocketAddr", "walk", "`max depth`", "fix Store::commit"] {
            assert!(names_identifier(query), "{query}");
        }
        for query in [
            "where are patches validated",
            "where is `max_depth` read",
            "fix(context): use `isByteString` in `c.redirect`",
        ] {
            assert!(!names_identifier(query), "{query}");
        }
    }

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
        let answer = retrieve(root, None, &request, 7).expect("answer");
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
}
