//! Finding candidate chunks: over the persistent index, with the files changed since it was
//! built masked out of it and searched as they are now in memory, statistics taken over the
//! live chunks of both ([`rank::LiveStatistics`]), and semantic search over the index's
//! vectors when asked; or, without a usable index, over the files in scope streamed at query
//! time ([`stream`]).
//!
//! Candidates only, one per file and list: ranking them into one answer and cutting excerpts
//! are done beside it (`fuse`, `hits`).

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use anyhow::Result;
use tantivy::query::BooleanQuery;

use super::Mode;
use super::Request;
use crate::search::READ_CANCELLED;
use crate::search::embed::TokenCache;
use crate::search::exact;
use crate::search::index;
use crate::search::index::Persistent;
use crate::search::manifest;
use crate::search::manifest::Fetched;
use crate::search::manifest::FileEntry;
use crate::search::manifest::Manifest;
use crate::search::rank;
use crate::search::semantic::Semantic;
use crate::search::stream;
use crate::search::syntax::Deadline;
use crate::search::tokenize::QueryTerm;
use crate::state::model::RetrievalState;
use crate::state::walk;
use crate::state::walk::FileStat;
use crate::state::walk::Listing;

/// A file's best chunk before its excerpt is cut.
#[derive(Debug, Clone)]
pub(super) struct Candidate {
    pub(super) path: String,
    pub(super) score: f32,
    pub(super) start_line: u32,
    pub(super) end_line: u32,
}

/// The two index queries of a request: chunk text (with paths and definitions), and
/// definitions alone.
pub(super) struct Queries {
    text: Option<BooleanQuery>,
    definitions: Option<BooleanQuery>,
    statistics_terms: Vec<tantivy::Term>,
}

impl Queries {
    pub(super) fn new(request: &Request, terms: &[QueryTerm], identifiers: &[String]) -> Queries {
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
pub(super) struct ChunkSearch {
    pub(super) candidates: Vec<Candidate>,
    pub(super) definitions: Vec<Candidate>,
    /// Files ranked by their best chunk's similarity to the query.
    pub(super) semantic: Vec<Candidate>,
    pub(super) texts: HashMap<String, String>,
    chunk_count: u64,
    /// Files a query-time scan looked at (matching or not).
    scanned_files: usize,
    /// Files whose definitions a query-time scan, or the parse of the files changed since the
    /// index, left out: parsing ran out of time.
    pub(super) left_out: Vec<String>,
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

/// Chunk search over the persistent index (lexical, and semantic when `semantic` is given),
/// with dirty files searched as they are now.
pub(super) fn search_index(
    root: &Path,
    persistent: &Persistent,
    listing: &Listing,
    request: &Request,
    queries: &Queries,
    semantic: Option<&Semantic>,
) -> Result<(Option<ChunkSearch>, RetrievalState)> {
    let manifest = &persistent.manifest;
    let changes = manifest::compare(manifest, &listing.files, root);
    let state = crate::search::freshness_summary(root, manifest, changes.dirty_paths());
    if !queries.wanted() && semantic.is_none() {
        return Ok((None, state));
    }
    let indexed = Indexed::new(manifest, &changes.unchanged, request);
    // Dirty files are searched as they are now, in memory; every file changed since the
    // index counts with its current text in the statistics, and only then.
    let fresh = Fresh::read(root, changes.modified, changes.added, request);
    let mut found = ChunkSearch::default();
    if let Some(semantic) = semantic {
        found.semantic = semantic_candidates(semantic, &request.query, &indexed, &fresh);
    }
    if queries.wanted() {
        let searcher = &persistent.searcher;
        search_lexical(
            &mut found,
            searcher,
            queries,
            &indexed,
            &fresh,
            request.deadline,
        )?;
    }
    found.texts = fresh.files.into_iter().collect();
    Ok((Some(found), state))
}

/// The persistent index's files by id: the weight of each one's chunks (its prior; zero out
/// of scope or without chunks), whether its indexed chunks are live (the file is unchanged),
/// and the paths of those searched.
struct Indexed<'m> {
    weights: Vec<f32>,
    live: Vec<bool>,
    paths: HashMap<u64, &'m str>,
}

impl<'m> Indexed<'m> {
    fn new(
        manifest: &Manifest,
        unchanged: &[(&'m FileEntry, &FileStat)],
        request: &Request,
    ) -> Indexed<'m> {
        let slots = usize::try_from(manifest.next_file_id).unwrap_or(0);
        let mut weights = vec![0.0; slots];
        let mut live = vec![false; slots];
        let mut paths = HashMap::new();
        for (entry, _) in unchanged {
            let Some(slot) = usize::try_from(entry.file_id).ok().filter(|&id| id < slots) else {
                continue;
            };
            live[slot] = true;
            if entry.chunk_count > 0 && exact::in_scope(&request.prefixes, &entry.path) {
                weights[slot] = rank::prior(&entry.path, request.tests_wanted);
                paths.insert(entry.file_id, entry.path.as_str());
            }
        }
        Indexed {
            weights,
            live,
            paths,
        }
    }

    fn path_of(&self, file_id: u64) -> Option<String> {
        self.paths.get(&file_id).map(|path| (*path).to_owned())
    }

    fn weight(&self, file_id: u64) -> f32 {
        usize::try_from(file_id)
            .ok()
            .and_then(|id| self.weights.get(id).copied())
            .unwrap_or(0.0)
    }

    fn is_live(&self, file_id: u64) -> bool {
        usize::try_from(file_id)
            .ok()
            .and_then(|id| self.live.get(id).copied())
            .unwrap_or(false)
    }
}

/// The files changed since the index was built, as they are now (path, text; a file's id is
/// its position), and the weight of each one's chunks.
struct Fresh {
    files: Vec<(String, String)>,
    weights: Arc<[f32]>,
}

impl Fresh {
    fn read(
        root: &Path,
        modified: Vec<(&FileEntry, &FileStat, Fetched)>,
        added: Vec<&FileStat>,
        request: &Request,
    ) -> Fresh {
        let mut files: Vec<(String, String)> = modified
            .into_iter()
            .filter_map(|(_, stat, fetched)| {
                fetched.text.ok().map(|text| (stat.path.clone(), text))
            })
            .collect();
        files.extend(added.into_iter().filter_map(|stat| {
            walk::read_text(root, stat)
                .ok()
                .map(|text| (stat.path.clone(), text))
        }));
        let weights = files
            .iter()
            .map(|(path, _)| {
                if exact::in_scope(&request.prefixes, path) {
                    rank::prior(path, request.tests_wanted)
                } else {
                    0.0
                }
            })
            .collect();
        Fresh { files, weights }
    }

    fn path_of(&self, file_id: u64) -> Option<String> {
        usize::try_from(file_id)
            .ok()
            .and_then(|id| self.files.get(id))
            .map(|(path, _)| path.clone())
    }
}

/// Files ranked by their best chunk's similarity to `query`: the indexed files by their
/// vectors in the index, the fresh files embedded now.
fn semantic_candidates(
    semantic: &Semantic,
    query: &str,
    indexed: &Indexed<'_>,
    fresh: &Fresh,
) -> Vec<Candidate> {
    let query = semantic.query(query);
    let weight = |file_id: u64| indexed.weight(file_id);
    let mut scored: Vec<(rank::FileScore, String)> = semantic
        .indexed(&query, &weight)
        .into_iter()
        .filter_map(|file| Some((file, indexed.path_of(file.file_id)?)))
        .collect();
    let mut cache = TokenCache::new();
    for ((id, (path, text)), &prior) in (0u64..).zip(&fresh.files).zip(fresh.weights.iter()) {
        if prior <= 0.0 {
            continue;
        }
        if let Some(mut file) = semantic.fresh(&query, id, path, text, &mut cache) {
            file.score *= prior;
            scored.push((file, path.clone()));
        }
    }
    scored
        .iter()
        .map(|(file, path)| candidate(path, file))
        .collect()
}

/// Both queries over the indexed chunks of unchanged files and over the fresh files indexed
/// in memory, scored with statistics over the live chunks of both. The fresh files are parsed
/// within the command's `deadline`: those it cuts short are searched as text alone and named in
/// [`ChunkSearch::left_out`].
fn search_lexical(
    found: &mut ChunkSearch,
    searcher: &tantivy::Searcher,
    queries: &Queries,
    indexed: &Indexed<'_>,
    fresh: &Fresh,
    deadline: Deadline,
) -> Result<()> {
    let (_, fields) = index::schema();
    let memory = if fresh.files.is_empty() {
        None
    } else {
        let memory = index::in_memory_by(&fresh.files, deadline)?;
        found.left_out.extend(memory.left_out.iter().cloned());
        let memory_searcher = index::searcher(&memory.index)?;
        Some((memory, memory_searcher))
    };
    let stat_fields = [fields.body, fields.path, fields.defs];
    let mut statistics = rank::LiveStatistics::default();
    let is_live = |file_id: u64| indexed.is_live(file_id);
    statistics.add(searcher, &is_live, &stat_fields, &queries.statistics_terms)?;
    if let Some((_, memory_searcher)) = &memory {
        statistics.add(
            memory_searcher,
            &|_| true,
            &stat_fields,
            &queries.statistics_terms,
        )?;
    }
    let weights: Arc<[f32]> = Arc::from(indexed.weights.as_slice());
    found.run(searcher, &statistics, queries, &weights, &|file_id| {
        indexed.path_of(file_id)
    })?;
    if let Some((memory, memory_searcher)) = memory {
        found.run(
            &memory_searcher,
            &statistics,
            queries,
            &fresh.weights,
            &|file_id| fresh.path_of(file_id),
        )?;
        found.chunk_count = memory.chunk_count;
    }
    Ok(())
}

/// Streams the files in scope and ranks what matched (no usable index; [`stream`]): a scan
/// costs about a `grep` of the tree plus the tokenizing of the lines that match. Fails with
/// [`READ_CANCELLED`] once `cancelled` says the caller gave up, before the next file.
pub(super) fn scan_if(
    root: &Path,
    listing: &Listing,
    request: &Request,
    queries: &Queries,
    terms: &[QueryTerm],
    identifiers: &[String],
    cancelled: &(dyn Fn() -> bool + Sync),
) -> Result<Option<ChunkSearch>> {
    if !queries.wanted() {
        return Ok(None);
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
            deadline: request.deadline,
        },
        cancelled,
    )
    .ok_or_else(|| anyhow::anyhow!(READ_CANCELLED))?;
    let path_of = |file: &rank::FileScore| {
        usize::try_from(file.file_id)
            .ok()
            .and_then(|index| in_scope.get(index))
            .map(|stat| candidate(&stat.path, file))
    };
    Ok(Some(ChunkSearch {
        candidates: streamed.text.iter().filter_map(path_of).collect(),
        definitions: streamed.definitions.iter().filter_map(path_of).collect(),
        chunk_count: streamed.chunk_count,
        scanned_files: streamed.scanned_files,
        left_out: streamed.left_out,
        ..ChunkSearch::default()
    }))
}

/// The summary of a query-time scan, or the baseline when no scan was needed.
pub(super) fn scan_summary(root: &Path, found: &Option<ChunkSearch>, now: i64) -> RetrievalState {
    match found {
        Some(found) => {
            crate::search::query_time_summary(root, found.scanned_files, found.chunk_count, now)
        }
        None => crate::search::baseline_summary(root),
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
