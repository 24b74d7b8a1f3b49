//! The answer's hits: the best ranked files, each with the focused excerpt of its best chunk
//! or of its matching definition (files read on every core), topped up with the directories
//! exact lookup names, in hit order, each saying why it matched with its relevance as its
//! score.
//!
//! Reads the files it cuts excerpts from and nothing else; it does not rank.

use std::collections::HashSet;
use std::path::Path;

use tantivy::tokenizer::TextAnalyzer;

use super::Mode;
use super::Request;
use super::chunks::Candidate;
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
use crate::search::syntax::Deadline;
use crate::search::syntax::Late;
use crate::search::tokenize;
use crate::search::tokenize::QueryTerm;
use crate::search::tokenize::QueryWord;
use crate::search::why;
use crate::search::why::Defined;
use crate::search::why::Why;
use crate::state::walk::Listing;

/// The results of `request`: the best ranked files as hits, topped up in hybrid and exact
/// modes with the directories the query's identifiers name, at most `request.limit`, in hit
/// order; then each hit's score becomes its relevance and it says why it matched
/// ([`why::explain`]). And the files whose definitions the deadline left out, parsing them to
/// find the definition a hit names.
pub(super) fn results(
    root: &Path,
    request: &Request,
    listing: &Listing,
    found: &ChunkSearch,
    ranked: &[RankedFile<'_>],
    query: &Query<'_>,
) -> (Vec<Hit>, Vec<String>) {
    let chunk_ranking = match request.mode {
        Mode::Semantic => Ranking::Semantic,
        Mode::Hybrid | Mode::Exact | Mode::Lexical => Ranking::Lexical,
    };
    let (mut results, late): (Vec<_>, Vec<_>) =
        hits(root, found, ranked, query, request.limit, chunk_ranking)
            .into_iter()
            .unzip();
    if matches!(request.mode, Mode::Hybrid | Mode::Exact) && results.len() < request.limit {
        let mut analyzer = tokenize::analyzer();
        let directories = exact::directory_hits(listing, query.identifiers, &request.prefixes);
        results.extend(directories.into_iter().map(|hit| {
            let path = tokenize::tokens(&mut analyzer, &hit.path);
            let found = why::Found {
                path: path.iter().map(String::as_str).collect(),
                ..why::Found::default()
            };
            (hit, why::explain(query.words, &found))
        }));
    }
    // The ranking's scores order the hits; only then does each carry its relevance.
    results.sort_by(|a, b| hit::order(&a.0, &b.0));
    results.truncate(request.limit);
    let results = (results.into_iter())
        .map(|(mut hit, (why, relevance))| {
            hit.score = relevance;
            hit.why = why;
            hit
        })
        .collect();
    (results, late.into_iter().flatten().collect())
}

/// What a query asks for, as hits are explained: its words, their analyzed terms, and the
/// identifiers it names.
pub(super) struct Query<'a> {
    pub(super) words: &'a [QueryWord],
    pub(super) terms: &'a [QueryTerm],
    pub(super) identifiers: &'a [String],
    /// Whether the query is an identifier lookup ([`super::names_identifier`]): then a
    /// chunk hit names the definition its file holds too. Finding it parses the file, which
    /// cost a no-index search on vite as much as its scan saved by parsing less; for a
    /// question in prose the definition is a small part of the ranking.
    pub(super) names_identifier: bool,
    /// The command's deadline for parsing a hit's file to find the definition it names.
    pub(super) deadline: Deadline,
}

/// A hit, and why it matched with its relevance.
type Explained = (Hit, (Why, f32));

/// The best `limit` ranked files as hits, each with the focused excerpt of its chunk or
/// definition, and why it matched; and the path of each whose definitions were left out
/// because the deadline passed before its parse was done.
fn hits(
    root: &Path,
    found: &ChunkSearch,
    ranked: &[RankedFile<'_>],
    query: &Query<'_>,
    limit: usize,
    chunk_ranking: Ranking,
) -> Vec<(Explained, Option<String>)> {
    let ranked = &ranked[..ranked.len().min(limit)];
    let terms: HashSet<&str> = query.terms.iter().map(|term| term.text.as_str()).collect();
    // Reading each hit's file and finding its best window is independent per hit: spread the
    // hits over the cores.
    let (texts, terms) = (&found.texts, &terms);
    parallel::map_chunks(ranked, |part| {
        let mut analyzer = tokenize::analyzer();
        part.iter()
            .map(|file| {
                let hit = Hit {
                    kind: HitKind::File,
                    ranking: Ranking::Exact,
                    path: file.path.to_owned(),
                    score: file.score,
                    start_line: None,
                    end_line: None,
                    excerpt: None,
                    record: None,
                    why: Why::default(),
                };
                let read;
                let text = match (file.chunk, file.definition, texts.get(file.path)) {
                    (None, None, _) => "",
                    (_, _, Some(text)) => text.as_str(),
                    _ => {
                        read = std::fs::read_to_string(root.join(file.path)).unwrap_or_default();
                        read.as_str()
                    }
                };
                let wanted = file.chunk.is_none() || query.names_identifier;
                let (defined, late) = match file.definition.filter(|_| wanted) {
                    None => (None, false),
                    Some(definition) => match defined_in(file.path, text, definition, query) {
                        Ok(defined) => (defined, false),
                        Err(Late) => (None, true),
                    },
                };
                let mut shown = Shown {
                    hit,
                    text,
                    terms,
                    defined,
                    analyzer: &mut analyzer,
                };
                let lines = shown.cut(file, chunk_ranking);
                let explained = shown.explain(file, query.words, lines);
                (explained, late.then(|| file.path.to_owned()))
            })
            .collect()
    })
}

/// A hit being cut from its file's text.
struct Shown<'a, 'b> {
    hit: Hit,
    text: &'a str,
    terms: &'a HashSet<&'b str>,
    /// The definition of an identifier of the query it holds.
    defined: Option<Defined>,
    analyzer: &'a mut TextAnalyzer,
}

impl Shown<'_, '_> {
    /// Cuts the hit of one ranked file: its best chunk's best window (found by
    /// `chunk_ranking`), or the lines of its matching definition, or (a file-name match) no
    /// lines. Where an identifier lookup found the definition it names in the file and the
    /// chunk's window does not hold it, the hit shows the definition instead: the hit names
    /// it, and an agent reading the excerpt would not see it. Returns the query terms found in
    /// the lines it was cut from.
    fn cut(&mut self, file: &RankedFile<'_>, chunk_ranking: Ranking) -> Vec<String> {
        let defined = self.defined.as_ref().map(|defined| defined.line);
        let (start_line, end_line) = match (file.chunk, file.definition) {
            (Some(chunk), _) => {
                self.hit.kind = HitKind::Chunk;
                self.hit.ranking = chunk_ranking;
                (chunk.start_line, chunk.end_line)
            }
            (None, Some(definition)) => {
                self.hit.kind = HitKind::Definition;
                return self.show_definition(defined.unwrap_or(definition.start_line));
            }
            (None, None) => return Vec::new(),
        };
        let terms = self.show(start_line, end_line);
        let shown = self.hit.start_line.zip(self.hit.end_line);
        match defined {
            Some(line) if shown.is_none_or(|(start, end)| !(start..=end).contains(&line)) => {
                self.hit.kind = HitKind::Definition;
                self.hit.ranking = Ranking::Exact;
                self.show_definition(line)
            }
            _ => terms,
        }
    }

    /// Shows the lines from the definition at `line` on ([`Self::show`]).
    fn show_definition(&mut self, line: u32) -> Vec<String> {
        self.show(line, line + excerpt::EXCERPT_LINES as u32 - 1)
    }

    /// Shows the best window of the file's lines `start_line..=end_line` for the query's terms
    /// as the hit's lines and excerpt (the lines alone when they are not in the file), and
    /// returns the query terms found in them.
    fn show(&mut self, start_line: u32, end_line: u32) -> Vec<String> {
        let hit = &mut self.hit;
        hit.start_line = Some(start_line);
        hit.end_line = Some(end_line);
        hit.excerpt = None;
        let Some(excerpt) =
            excerpt::focus(self.analyzer, self.text, start_line, end_line, self.terms)
        else {
            return Vec::new();
        };
        hit.start_line = Some(excerpt.start_line);
        hit.end_line = Some(excerpt.end_line);
        hit.excerpt = Some(excerpt.text);
        excerpt.terms
    }

    /// The hit with why it matched and its relevance: the terms of the lines it was cut from,
    /// of its path, and of the definition of a query identifier it holds.
    fn explain(
        self,
        file: &RankedFile<'_>,
        words: &[QueryWord],
        lines: Vec<String>,
    ) -> (Hit, (Why, f32)) {
        let path = tokenize::tokens(self.analyzer, file.path);
        let definition = (self.defined).map(|defined| {
            let terms = tokenize::tokens(self.analyzer, &defined.name);
            (defined, terms)
        });
        let found = why::Found {
            lines: lines.iter().map(String::as_str).collect(),
            path: path.iter().map(String::as_str).collect(),
            definition,
        };
        (self.hit, why::explain(words, &found))
    }
}

/// The definition of an identifier of the query inside the definition candidate's lines;
/// [`Late`] when the query's deadline passed before the file was parsed.
fn defined_in(
    path: &str,
    text: &str,
    definition: &Candidate,
    query: &Query<'_>,
) -> Result<Option<Defined>, Late> {
    Ok(symbols::definitions_by(path, text, query.deadline)?
        .into_iter()
        .filter(|found| (definition.start_line..=definition.end_line).contains(&found.line))
        .find(|found| query.identifiers.contains(&symbols::normalize(&found.name)))
        .map(|found| Defined {
            name: found.name,
            line: found.line,
        }))
}
