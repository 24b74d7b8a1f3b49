//! The answer's hits: the best ranked files, each with the focused excerpt of its best chunk
//! or of its matching definition (files read on every core), topped up with the directories
//! exact lookup names, in hit order.
//!
//! Reads the files it cuts excerpts from and nothing else; it does not rank.

use std::collections::HashMap;
use std::collections::HashSet;
use std::path::Path;

use tantivy::tokenizer::TextAnalyzer;

use super::Mode;
use super::Request;
use super::chunks::ChunkSearch;
use super::fuse::RankedFile;
use crate::parallel;
use crate::search::exact;
use crate::search::excerpt;
use crate::search::hit;
use crate::search::hit::Hit;
use crate::search::hit::HitKind;
use crate::search::hit::Ranking;
use crate::search::symbols;
use crate::search::tokenize;
use crate::search::tokenize::QueryTerm;
use crate::state::walk::Listing;

/// The results of `request`: the best ranked files as hits, topped up in hybrid and exact
/// modes with the directories the query's identifiers name, at most `request.limit`, in hit
/// order.
pub(super) fn results(
    root: &Path,
    request: &Request,
    listing: &Listing,
    found: &ChunkSearch,
    ranked: &[RankedFile<'_>],
    terms: &[QueryTerm],
    identifiers: &[String],
) -> Vec<Hit> {
    let chunk_ranking = match request.mode {
        Mode::Semantic => Ranking::Semantic,
        Mode::Hybrid | Mode::Exact | Mode::Lexical => Ranking::Lexical,
    };
    let mut results = hits(
        root,
        found,
        ranked,
        terms,
        identifiers,
        request.limit,
        chunk_ranking,
    );
    if matches!(request.mode, Mode::Hybrid | Mode::Exact) && results.len() < request.limit {
        results.extend(exact::directory_hits(
            listing,
            identifiers,
            &request.prefixes,
        ));
    }
    hit::sort(&mut results);
    results.truncate(request.limit);
    results
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
    let (texts, terms) = (&found.texts, &terms);
    parallel::map_chunks(ranked, |part| {
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
            .collect()
    })
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
