//! Answering a query (§14.4): exact path matches plus chunk search, merged into one ranking.
//!
//! Chunk search uses the persistent index when there is a usable one. Files changed since it
//! was built are never answered from it: their indexed chunks are masked out, and their
//! current text is indexed in memory and scored with the persistent index's statistics, so
//! both sets of scores compare. Without a usable index, every file in scope is read and
//! indexed in memory for this one query, and so is everything when searching the persistent
//! index fails (§14.4). Either way the answer reflects the work tree as it is now, and the
//! summary says which files were dirty, or that the index is stale.
//!
//! Read-only: this module never writes, not even the cache.

use std::collections::HashMap;
use std::collections::HashSet;
use std::path::Path;
use std::sync::Arc;

use anyhow::Result;
use tantivy::query::BooleanQuery;
use tantivy::tokenizer::TextAnalyzer;

use crate::error::Failure;
use crate::search::exact;
use crate::search::excerpt;
use crate::search::hit;
use crate::search::hit::Hit;
use crate::search::hit::HitKind;
use crate::search::index;
use crate::search::index::Opened;
use crate::search::index::Persistent;
use crate::search::manifest;
use crate::search::manifest::Manifest;
use crate::search::rank;
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

/// Which searches to run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Path matches and chunk search.
    Hybrid,
    /// Path matches only.
    Exact,
    /// Chunk search only.
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
}

impl Request {
    /// Validates a query (§14.4): the trimmed query must not be empty, a given limit must not
    /// be zero and is clamped to 1–50. `prefixes` are already normalised
    /// ([`exact::normalize_prefixes`]).
    pub fn new(
        query: &str,
        limit: Option<usize>,
        prefixes: Vec<String>,
        mode: Mode,
    ) -> Result<Request> {
        let query = query.trim();
        if query.is_empty() {
            return Err(Failure::usage("query must not be empty")
                .with_hint("pass what to look for, e.g. `epiphany retrieve \"where are patches validated\"`")
                .into());
        }
        if limit == Some(0) {
            return Err(Failure::usage("`--limit` must be greater than zero")
                .with_hint(format!("use a limit between 1 and {MAX_LIMIT}"))
                .into());
        }
        Ok(Request {
            tests_wanted: rank::mentions_tests(query),
            query: query.to_owned(),
            limit: limit.unwrap_or(DEFAULT_LIMIT).clamp(1, MAX_LIMIT),
            prefixes,
            mode,
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
struct Candidate {
    path: String,
    score: f32,
    start_line: u32,
    end_line: u32,
}

/// Chunk candidates and the texts read (and chunks indexed) at query time to find them.
#[derive(Default)]
struct ChunkSearch {
    candidates: Vec<Candidate>,
    texts: HashMap<String, String>,
    chunk_count: u64,
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
    let chunks_wanted = request.mode != Mode::Exact && !terms.is_empty();
    let opened = match cache_dir {
        Some(dir) => index::open(&index::Layout::new(dir)),
        None => Opened::Missing,
    };
    let listing = match &opened {
        Opened::Ready(persistent) => super::current_listing(root, &persistent.manifest),
        Opened::Missing | Opened::Unusable { .. } => walk::list(root),
    };
    // Without a usable index, every file in scope is searched as it is now; the summary is
    // the manifest marked stale when there is one (§14.4), the scan's own otherwise.
    let scan = |manifest: Option<&Manifest>| -> Result<(Option<ChunkSearch>, RetrievalState)> {
        let found = scan_if(chunks_wanted, root, &listing, request, &terms)?;
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
            match search_index(root, persistent, &listing, request, &terms, chunks_wanted) {
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
    let mut results = match request.mode {
        Mode::Semantic => Vec::new(),
        Mode::Hybrid | Mode::Exact => {
            exact::search(&listing, &request.query, &request.prefixes, request.limit)
        }
    };
    results.extend(chunk_hits(root, found, &terms, request.limit));
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

/// Chunk search over the persistent index, with dirty files searched as they are now.
fn search_index(
    root: &Path,
    persistent: &Persistent,
    listing: &Listing,
    request: &Request,
    terms: &[QueryTerm],
    chunks_wanted: bool,
) -> Result<(Option<ChunkSearch>, RetrievalState)> {
    let manifest = &persistent.manifest;
    let changes = manifest::compare(manifest, &listing.files, root);
    let state = super::freshness_summary(root, manifest, changes.dirty_paths());
    if !chunks_wanted {
        return Ok((None, state));
    }
    let (_, fields) = index::schema();
    let query = rank::query(&fields, terms);
    let searcher = &persistent.searcher;
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
    let memory = if fresh.is_empty() {
        None
    } else {
        let memory = index::in_memory(&fresh)?;
        let memory_searcher = index::searcher(&memory.index)?;
        Some((memory, memory_searcher))
    };
    let stat_terms = rank::query_terms(&fields, terms);
    let stat_fields = [fields.body, fields.path];
    let mut statistics = rank::LiveStatistics::default();
    let is_live = |file_id: u64| {
        usize::try_from(file_id)
            .ok()
            .and_then(|id| live.get(id).copied())
            .unwrap_or(false)
    };
    statistics.add(searcher, &is_live, &stat_fields, &stat_terms)?;
    if let Some((_, memory_searcher)) = &memory {
        statistics.add(memory_searcher, &|_| true, &stat_fields, &stat_terms)?;
    }
    let mut found = ChunkSearch::default();
    for file in rank::best_chunks(searcher, &statistics, &query, Arc::from(weights))? {
        if let Some(path) = paths.get(&file.file_id) {
            found.candidates.push(candidate(path, &file));
        }
    }
    if let Some((memory, memory_searcher)) = memory {
        let weights: Arc<[f32]> = fresh
            .iter()
            .map(|(path, _)| {
                if exact::in_scope(&request.prefixes, path) {
                    rank::prior(path, request.tests_wanted)
                } else {
                    0.0
                }
            })
            .collect();
        for file in rank::best_chunks(&memory_searcher, &statistics, &query, weights)? {
            if let Some((path, _)) = usize::try_from(file.file_id)
                .ok()
                .and_then(|id| fresh.get(id))
            {
                found.candidates.push(candidate(path, &file));
            }
        }
        found.chunk_count = memory.chunk_count;
        found.texts = fresh.into_iter().collect();
    }
    Ok((Some(found), state))
}

/// Reads every file in scope and searches it in memory (no usable index).
fn scan_if(
    wanted: bool,
    root: &Path,
    listing: &Listing,
    request: &Request,
    terms: &[QueryTerm],
) -> Result<Option<ChunkSearch>> {
    if !wanted {
        return Ok(None);
    }
    let files: Vec<(String, String)> = listing
        .files
        .iter()
        .filter(|stat| exact::in_scope(&request.prefixes, &stat.path))
        .filter_map(|stat| {
            walk::read_text(root, stat)
                .ok()
                .map(|text| (stat.path.clone(), text))
        })
        .collect();
    let (_, fields) = index::schema();
    let query = rank::query(&fields, terms);
    search_in_memory(files, &query, request.tests_wanted).map(Some)
}

/// The summary of a query-time scan, or the baseline when no scan was needed.
fn scan_summary(root: &Path, found: &Option<ChunkSearch>, now: i64) -> RetrievalState {
    match found {
        Some(found) => {
            let files = found
                .texts
                .values()
                .filter(|text| !text.trim().is_empty())
                .count();
            super::query_time_summary(root, files, found.chunk_count, now)
        }
        None => super::baseline_summary(root),
    }
}

/// Indexes `files` in memory and searches them.
fn search_in_memory(
    files: Vec<(String, String)>,
    query: &BooleanQuery,
    tests_wanted: bool,
) -> Result<ChunkSearch> {
    let memory = index::in_memory(&files)?;
    let searcher = index::searcher(&memory.index)?;
    let weights: Arc<[f32]> = files
        .iter()
        .map(|(path, _)| rank::prior(path, tests_wanted))
        .collect();
    let candidates = rank::best_chunks(&searcher, &searcher, query, weights)?
        .iter()
        .filter_map(|file| {
            let (path, _) = files.get(usize::try_from(file.file_id).ok()?)?;
            Some(candidate(path, file))
        })
        .collect();
    Ok(ChunkSearch {
        candidates,
        texts: files.into_iter().collect(),
        chunk_count: memory.chunk_count,
    })
}

fn candidate(path: &str, file: &rank::FileScore) -> Candidate {
    Candidate {
        path: path.to_owned(),
        score: file.score,
        start_line: file.start_line,
        end_line: file.end_line,
    }
}

/// The best `limit` candidates as hits, each with the focused excerpt of its chunk.
fn chunk_hits(
    root: &Path,
    found: Option<ChunkSearch>,
    terms: &[QueryTerm],
    limit: usize,
) -> Vec<Hit> {
    let Some(mut found) = found else {
        return Vec::new();
    };
    found.candidates.sort_by(|a, b| {
        b.score
            .total_cmp(&a.score)
            .then_with(|| Path::new(&a.path).cmp(Path::new(&b.path)))
    });
    found.candidates.truncate(limit);
    let terms: HashSet<&str> = terms.iter().map(|term| term.text.as_str()).collect();
    // Reading each hit's file and finding its best window is independent per hit: spread the
    // hits over the cores.
    let threads = std::thread::available_parallelism().map_or(1, usize::from);
    let per_thread = found.candidates.len().div_ceil(threads).max(1);
    let (texts, terms) = (&found.texts, &terms);
    std::thread::scope(|scope| {
        let parts: Vec<_> = found
            .candidates
            .chunks(per_thread)
            .map(|part| {
                scope.spawn(move || {
                    let mut analyzer = tokenize::analyzer();
                    part.iter()
                        .map(|candidate| hit_of(root, texts, terms, &mut analyzer, candidate))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        parts
            .into_iter()
            .flat_map(|part| part.join().unwrap_or_default())
            .collect()
    })
}

/// The hit of one ranked chunk, with the window of its lines that best matches the query.
fn hit_of(
    root: &Path,
    texts: &HashMap<String, String>,
    terms: &HashSet<&str>,
    analyzer: &mut TextAnalyzer,
    candidate: &Candidate,
) -> Hit {
    let read;
    let text = match texts.get(&candidate.path) {
        Some(text) => Some(text.as_str()),
        None => {
            read = std::fs::read_to_string(root.join(&candidate.path)).ok();
            read.as_deref()
        }
    };
    let excerpt = text.and_then(|text| {
        excerpt::focus(
            analyzer,
            text,
            candidate.start_line,
            candidate.end_line,
            terms,
        )
    });
    Hit {
        kind: HitKind::SemanticChunk,
        path: candidate.path.clone(),
        score: candidate.score,
        start_line: Some(
            excerpt
                .as_ref()
                .map_or(candidate.start_line, |e| e.start_line),
        ),
        end_line: Some(excerpt.as_ref().map_or(candidate.end_line, |e| e.end_line)),
        excerpt: excerpt.map(|e| e.text),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
            (HitKind::SemanticChunk, "src/engine.rs")
        );
        assert_eq!((hit.start_line, hit.end_line), (Some(1), Some(3)));
        assert_eq!(answer.index.indexed_file_count, Some(2));
        assert_eq!(answer.index.last_indexed_at_unix_seconds, Some(7));
    }
}
