//! Ordering the files of an answer: the lexical ranking, the exact ranking, the semantic
//! ranking, or (hybrid) lexical, exact and cited lists fused by reciprocal rank, with the
//! weights measured for each list.
//!
//! Works on the candidates chunk search found and the listing only: it reads no file and cuts
//! no excerpt.

use std::collections::HashMap;
use std::collections::HashSet;
use std::path::Path;

use super::Mode;
use super::Request;
use super::chunks::Candidate;
use super::chunks::ChunkSearch;
use crate::search::exact;
use crate::search::rank;
use crate::state::walk::Listing;

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

/// One ranked file: its score in the mode's ranking, its best chunk (when the lexical or,
/// in semantic mode, the semantic search found it) and its matching definition's chunk (when
/// exact lookup found one).
pub(super) struct RankedFile<'a> {
    pub(super) path: &'a str,
    pub(super) score: f32,
    pub(super) chunk: Option<&'a Candidate>,
    pub(super) definition: Option<&'a Candidate>,
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

/// A file of the exact ranking: its path, its score and its matching definition's chunk.
type ExactFile<'a> = (&'a str, f32, Option<&'a Candidate>);

/// The files of the answer in order: the lexical ranking, the exact ranking (definition
/// matches plus [`exact::path_score`], times the file's prior), the semantic ranking, or
/// lexical and exact fused by reciprocal rank ([`RRF_K`], [`EXACT_WEIGHT`]; the exact list
/// only when the query names an identifier). Hybrid orders its lexical list with the files
/// that define an identifier of the query raised ([`rank::definer_weighted`]) and leaves
/// the semantic ranking out ([`Mode::Hybrid`]).
pub(super) fn rank_files<'a>(
    request: &Request,
    listing: &'a Listing,
    identifiers: &[String],
    found: &'a ChunkSearch,
) -> Vec<RankedFile<'a>> {
    let lexical = lexical_order(request, found);
    let semantic = by_score(&found.semantic, |candidate| candidate.score);
    let exact = exact_order(request, listing, identifiers, found);
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
        Mode::Hybrid => fused(request, listing, &lexical, &exact),
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

/// The lexical candidates best first; in hybrid mode the files that define an identifier of
/// the query are raised ([`rank::definer_weighted`]).
fn lexical_order<'a>(request: &Request, found: &'a ChunkSearch) -> Vec<&'a Candidate> {
    let definers: HashSet<&str> = found
        .definitions
        .iter()
        .map(|definition| definition.path.as_str())
        .collect();
    by_score(&found.candidates, |candidate| match request.mode {
        Mode::Hybrid => {
            rank::definer_weighted(candidate.score, definers.contains(candidate.path.as_str()))
        }
        Mode::Exact | Mode::Lexical | Mode::Semantic => candidate.score,
    })
}

/// The exact ranking, best first: the files defining an identifier of the query, by their
/// definition's score, plus (except in lexical mode) [`exact::path_score`] times the file's
/// prior for every file in scope.
fn exact_order<'a>(
    request: &Request,
    listing: &'a Listing,
    identifiers: &[String],
    found: &'a ChunkSearch,
) -> Vec<ExactFile<'a>> {
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
    let mut exact: Vec<ExactFile<'a>> = exact
        .into_iter()
        .map(|(path, (score, definition))| (path, score, definition))
        .collect();
    exact.sort_by(|a, b| {
        b.1.total_cmp(&a.1)
            .then_with(|| Path::new(a.0).cmp(Path::new(b.0)))
    });
    exact
}

/// Hybrid scores: the lexical list, the exact list when the query names an identifier
/// ([`names_identifier`]), and the files the records cite that are listed and in scope,
/// fused by reciprocal rank.
fn fused<'a>(
    request: &Request,
    listing: &'a Listing,
    lexical: &[&'a Candidate],
    exact: &[ExactFile<'a>],
) -> Vec<(&'a str, f32)> {
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

fn by_path<'a>(candidates: &[&'a Candidate]) -> HashMap<&'a str, &'a Candidate> {
    candidates
        .iter()
        .map(|candidate| (candidate.path.as_str(), *candidate))
        .collect()
}

fn reciprocal(rank: usize, weight: f32) -> f32 {
    weight / (RRF_K + rank as f32 + 1.0)
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
}
