//! Query-time search without an index (docs/retrieval.md#search-paths): the files in scope
//! are streamed through ripgrep's own searcher (`grep-searcher` with a `grep-regex` matcher of
//! the query's term stems), and only what matched is tokenized and ranked. No index is built.
//!
//! A file takes part when a line of it matches, or when its path holds a query term. Its
//! chunks are the index's windows ([`CHUNK_SHAPE`]); a window is scored from the lines that
//! matched in it, with the same BM25 clauses as the index query ([`rank::query`]: chunk text,
//! path with [`rank::PATH_BOOST`], definition names with [`rank::DEFINITION_BOOST`]) and
//! tantivy's own BM25 weights. Files score as in the index ([`rank::file_score`], times
//! [`rank::prior`]). The corpus is the windows of the files that took part, as the in-memory
//! index of earlier versions had it:
//!
//! - document count, and the document frequency of every term in text, paths and definition
//!   names, are exact: a window holding a term holds a line that matched;
//! - term frequencies are exact (matched lines are tokenized with the index's analyzer);
//! - a window's length in tokens is estimated from its length in bytes, with the tokens per
//!   byte of the file's lines that matched, drawn towards the corpus-wide figure when they
//!   are few ([`PRIOR_BYTES`]); definition-name fields count as average length.
//!
//! Lines are what the stems can match case-insensitively: a stem cut before a stemmer's `i`
//! (`happi` for "happy") is a prefix of the words it comes from. Definition names are looked
//! for on matched lines only (a name spelled from the query's words contains one of them).
//! Read-only; no output.

use std::io::Read;
use std::ops::Range;
use std::path::Path;
use std::sync::atomic::AtomicUsize;
use std::sync::atomic::Ordering;

use grep_regex::RegexMatcher;
use grep_regex::RegexMatcherBuilder;
use grep_searcher::BinaryDetection;
use grep_searcher::Searcher;
use grep_searcher::SearcherBuilder;
use grep_searcher::Sink;
use grep_searcher::SinkMatch;
use tantivy::fieldnorm::FieldNormReader;
use tantivy::query::Bm25Weight;
use tantivy::tokenizer::TextAnalyzer;
use tantivy::tokenizer::TokenStream;

use crate::search::CHUNK_SHAPE;
use crate::search::chunk;
use crate::search::rank;
use crate::search::rank::FileScore;
use crate::search::symbols;
use crate::search::symbols::LineDefinitions;
use crate::search::syntax::Deadline;
use crate::search::syntax::Late;
use crate::search::tokenize;
use crate::search::tokenize::QueryTerm;
use crate::state::walk;
use crate::state::walk::FileStat;

/// What to look for.
#[derive(Debug, Clone, Copy)]
pub struct Query<'a> {
    /// The analyzed query terms.
    pub terms: &'a [QueryTerm],
    /// The normalised identifiers the query may name.
    pub identifiers: &'a [String],
    /// Rank files by the lexical query (text, paths, definition names).
    pub text: bool,
    /// Rank files by their definitions named by `identifiers` alone.
    pub definitions: bool,
    /// Whether the query asks about tests ([`rank::prior`]).
    pub tests_wanted: bool,
    /// The command's deadline for its parses: a file whose definitions only the parser can
    /// settle, and that it has not parsed by then, is searched as text alone and named in
    /// [`Streamed::left_out`].
    pub deadline: Deadline,
}

/// The files a stream ranked; a [`FileScore`]'s `file_id` is the file's position in the
/// slice searched.
#[derive(Debug, Clone, Default)]
pub struct Streamed {
    /// Files by the lexical query, in no particular order.
    pub text: Vec<FileScore>,
    /// Files by their matching definitions, in no particular order.
    pub definitions: Vec<FileScore>,
    /// Files searched: read, and within the size cap.
    pub scanned_files: usize,
    /// Windows of the files that took part (the corpus).
    pub chunk_count: u64,
    /// Files whose definitions were left out, parsing ran out of time (searched as text),
    /// sorted.
    pub left_out: Vec<String>,
}

/// A window that holds a query term, a matching definition, or belongs to a file whose path
/// matches.
#[derive(Debug, Clone)]
struct Window {
    start_line: u32,
    end_line: u32,
    bytes: u32,
    /// Occurrences of each term.
    body: Vec<u32>,
    /// Definitions named by each identifier.
    defs: Vec<u32>,
}

/// A file that took part.
#[derive(Debug, Clone)]
struct FileMatch {
    file: usize,
    prior: f32,
    /// Occurrences of each term in the path, and the path's length in tokens.
    path: Vec<u32>,
    path_len: u32,
    windows: Vec<Window>,
    window_count: u64,
    window_bytes: u64,
    /// Tokens and bytes of the file's matched lines.
    sample: Sample,
}

/// Tokens and bytes of the lines tokenized, for the tokens-per-byte estimate.
#[derive(Debug, Clone, Copy, Default)]
struct Sample {
    tokens: u64,
    bytes: u64,
}

/// One matched line: its number and byte range (terminator included).
struct Lines(Vec<(u32, Range<usize>)>);

impl Sink for Lines {
    type Error = std::io::Error;

    fn matched(&mut self, _: &Searcher, found: &SinkMatch<'_>) -> Result<bool, std::io::Error> {
        let mut start = usize::try_from(found.absolute_byte_offset()).unwrap_or(usize::MAX);
        let first = found
            .line_number()
            .and_then(|line| u32::try_from(line).ok())
            .unwrap_or(0);
        for (number, line) in (first..).zip(found.lines()) {
            self.0.push((number, start..start + line.len()));
            start += line.len();
        }
        Ok(true)
    }
}

/// What every word that stems to `stem` starts with: `stem` cut before a final `i` (the
/// stemmer turns "happy" into `happi`).
fn stem_prefix(stem: &str) -> &str {
    stem.strip_suffix('i')
        .filter(|rest| !rest.is_empty())
        .unwrap_or(stem)
}

/// The matcher of every line a query term can occur on: any of the terms' parts (split at
/// `_`), cut before a stemmer's `i`, case-insensitively. `None` when there is nothing to match.
pub fn matcher(terms: &[QueryTerm]) -> Option<RegexMatcher> {
    let mut parts: Vec<String> = terms
        .iter()
        .flat_map(|term| term.text.split('_'))
        .filter(|part| !part.is_empty())
        .map(|part| regex::escape(stem_prefix(part)))
        .collect();
    parts.sort();
    parts.dedup();
    if parts.is_empty() {
        return None;
    }
    RegexMatcherBuilder::new()
        .case_insensitive(true)
        .line_terminator(Some(b'\n'))
        .build_literals(&parts)
        .ok()
}

/// Streams `files` (paths relative to `root`) and ranks the ones that match `query`.
/// `cancelled` is asked before each file (on any thread): once it says the caller gave up,
/// no further file is read and the search answers nothing.
pub fn search(
    root: &Path,
    files: &[&FileStat],
    query: Query<'_>,
    cancelled: &(dyn Fn() -> bool + Sync),
) -> Option<Streamed> {
    let mut streamed = Streamed::default();
    if !query.text && !query.definitions {
        return Some(streamed);
    }
    let matcher = matcher(query.terms);
    let terms = Positions(query.terms.iter().map(|term| term.text.as_str()).collect());
    let identifiers = Positions(query.identifiers.iter().map(String::as_str).collect());
    let context = Context {
        root,
        query,
        matcher: matcher.as_ref(),
        terms: &terms,
        prefixes: query
            .terms
            .iter()
            .map(|term| stem_prefix(&term.text).to_owned())
            .collect(),
        identifiers: &identifiers,
    };
    let threads = crate::parallel::cores().min(files.len().max(1));
    let next = AtomicUsize::new(0);
    let (matches, sample) = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..threads)
            .map(|_| {
                let (context, next) = (&context, &next);
                scope.spawn(move || {
                    let mut worker = Worker::new();
                    let mut found = Vec::new();
                    while !cancelled() {
                        let index = next.fetch_add(1, Ordering::Relaxed);
                        let Some(stat) = files.get(index) else { break };
                        if let Some(file) = worker.search_file(context, index, stat) {
                            found.push(file);
                        }
                    }
                    (found, worker.sample, worker.left_out, worker.scanned)
                })
            })
            .collect();
        let mut matches = Vec::new();
        let mut sample = Sample::default();
        for worker in workers {
            if let Ok((found, part, left_out, scanned)) = worker.join() {
                matches.extend(found);
                streamed.scanned_files += scanned;
                sample.tokens += part.tokens;
                sample.bytes += part.bytes;
                streamed.left_out.extend(left_out);
            }
        }
        (matches, sample)
    });
    if cancelled() {
        return None;
    }
    streamed.left_out.sort();
    let scores = Scores::new(&matches, sample, query);
    streamed.chunk_count = scores.docs;
    for file in &matches {
        let (text, definitions) = scores.file(file);
        streamed.text.extend(text);
        streamed.definitions.extend(definitions);
    }
    Some(streamed)
}

/// What every worker shares.
struct Context<'a> {
    root: &'a Path,
    query: Query<'a>,
    matcher: Option<&'a RegexMatcher>,
    terms: &'a Positions<'a>,
    /// What a token starts with to be able to stem to a term: each term, cut before a
    /// stemmer's `i`.
    prefixes: Vec<String>,
    identifiers: &'a Positions<'a>,
}

/// The query's terms or identifiers, by position: a query has a handful, and comparing them
/// costs less than hashing each token and name of every matched line.
struct Positions<'a>(Vec<&'a str>);

impl Positions<'_> {
    /// The position of `name`, the last when it is there twice.
    fn get(&self, name: &str) -> Option<usize> {
        self.0.iter().rposition(|known| *known == name)
    }
}

/// One searching thread's searcher, analyzers, read buffer and sample, the files whose
/// definitions it left out, and how many files it searched.
struct Worker {
    searcher: Searcher,
    tokens: TextAnalyzer,
    stemmer: TextAnalyzer,
    buffer: Vec<u8>,
    sample: Sample,
    left_out: Vec<String>,
    scanned: usize,
}

impl Worker {
    fn new() -> Worker {
        Worker {
            searcher: SearcherBuilder::new()
                .line_number(true)
                .binary_detection(BinaryDetection::quit(0))
                .build(),
            tokens: tokenize::unstemmed_analyzer(),
            stemmer: tokenize::stemmer(),
            buffer: Vec::new(),
            sample: Sample::default(),
            left_out: Vec::new(),
            scanned: 0,
        }
    }

    /// Counts the query terms among the analyzed tokens of `text`; returns how many tokens it
    /// had. Only tokens that start as a term does are stemmed (see the module docs).
    fn count_terms(&mut self, context: &Context<'_>, text: &str, counts: &mut [u32]) -> u64 {
        let mut tokens = 0;
        let stemmer = &mut self.stemmer;
        let mut stream = self.tokens.token_stream(text);
        while stream.advance() {
            tokens += 1;
            let token = stream.token().text.as_str();
            if !context
                .prefixes
                .iter()
                .any(|prefix| token.starts_with(prefix.as_str()))
            {
                continue;
            }
            let mut stemmed = stemmer.token_stream(token);
            while stemmed.advance() {
                if let Some(index) = context.terms.get(stemmed.token().text.as_str()) {
                    counts[index] += 1;
                }
            }
        }
        tokens
    }

    /// Reads the file at `path` into the buffer, unless it is over `limit` bytes: `None` then,
    /// or when it cannot be read. The open file's size is asked once (a listing of names has
    /// none), and the read stops one byte past `limit`, so a file that grew since is still seen
    /// to be too large. A file's own `read_to_end` would ask for its size again (an `fstat` and
    /// an `lseek` a file: with a `stat` a walked entry, half of a scan's system calls).
    fn read(&mut self, path: &Path, limit: u64) -> Option<()> {
        self.buffer.clear();
        let file = std::fs::File::open(path).ok()?;
        let size = file.metadata().ok()?.len();
        if size > limit {
            return None;
        }
        self.buffer.reserve(usize::try_from(size + 1).unwrap_or(0));
        file.take(limit + 1).read_to_end(&mut self.buffer).ok()?;
        (self.buffer.len() as u64 <= limit).then_some(())
    }

    fn search_file(
        &mut self,
        context: &Context<'_>,
        file: usize,
        stat: &FileStat,
    ) -> Option<FileMatch> {
        let limit = walk::max_bytes(&stat.path);
        if stat.size_bytes > limit {
            return None;
        }
        let term_count = context.query.terms.len();
        let mut path = vec![0; term_count];
        let path_len = u32::try_from(self.count_terms(context, &stat.path, &mut path)).ok()?;
        self.read(&context.root.join(&stat.path), limit)?;
        self.scanned += 1;
        let buffer = std::mem::take(&mut self.buffer);
        let found = self.search_text(context, file, stat, &buffer, path, path_len);
        self.buffer = buffer;
        found
    }

    fn search_text(
        &mut self,
        context: &Context<'_>,
        file: usize,
        stat: &FileStat,
        bytes: &[u8],
        path: Vec<u32>,
        path_len: u32,
    ) -> Option<FileMatch> {
        let path_matches = path.iter().any(|&count| count > 0);
        let mut lines = Lines(Vec::new());
        if let Some(matcher) = context.matcher {
            self.searcher
                .search_slice(matcher, bytes, &mut lines)
                .ok()?;
        }
        if lines.0.is_empty() && !path_matches {
            return None;
        }
        // Searchable text only, as the index has it ([`walk::text_of`]).
        if bytes.contains(&0) {
            return None;
        }
        let text = std::str::from_utf8(bytes).ok()?;
        let (hits, sample) = self.line_hits(context, stat, text, lines);
        // A file whose bytes matched but that holds no term as a token still counts in the
        // corpus, as it did in the in-memory index, though it cannot score.
        let mut found = FileMatch {
            file,
            prior: rank::prior(&stat.path, context.query.tests_wanted),
            path,
            path_len,
            windows: Vec::new(),
            window_count: 0,
            window_bytes: 0,
            sample,
        };
        self.sample.tokens += sample.tokens;
        self.sample.bytes += sample.bytes;
        found.add_windows(context, text, &hits, path_matches);
        Some(found)
    }

    /// The matched lines of `text` with a hit, in line order, and the tokens and bytes of all
    /// the matched lines.
    fn line_hits(
        &mut self,
        context: &Context<'_>,
        stat: &FileStat,
        text: &str,
        lines: Lines,
    ) -> (Vec<LineHit>, Sample) {
        let term_count = context.query.terms.len();
        let find_definitions = !context.identifiers.0.is_empty()
            && symbols::has_definitions(&stat.path)
            && (context.query.text || context.query.definitions);
        let mut hits = Vec::new();
        let mut sample = Sample::default();
        // The file's definitions, found once, when a matched line may define a query identifier
        // and only the parser (or the patterns) can say; none when the deadline passed first.
        let mut definitions: Option<Result<Vec<symbols::Definition>, Late>> = None;
        for (number, range) in lines.0 {
            let Some(line) = text.get(range.clone()) else {
                continue;
            };
            let line = line.trim_end_matches(['\n', '\r']);
            let line_range = range.start..range.start + line.len();
            let mut body = vec![0; term_count];
            let tokens = self.count_terms(context, line, &mut body);
            sample.tokens += tokens;
            sample.bytes += line.len() as u64;
            let mut defs = vec![0; context.identifiers.0.len()];
            if find_definitions {
                let path = stat.path.as_str();
                count_definitions(
                    context,
                    path,
                    text,
                    &mut definitions,
                    number,
                    line_range,
                    &mut defs,
                );
            }
            if body.iter().chain(&defs).any(|&count| count > 0) {
                hits.push((number, body, defs));
            }
        }
        if let Some(Err(Late)) = definitions {
            self.left_out.push(stat.path.clone());
        }
        (hits, sample)
    }
}

/// A matched line with a hit: its number, term counts and definition counts.
type LineHit = (u32, Vec<u32>, Vec<u32>);

/// Counts into `defs` the definitions of the query's identifiers on line `number` of the file
/// at `path` (the `line` of its `text`), finding the file's `definitions` (once) only when the
/// line and the lines after it cannot say.
fn count_definitions(
    context: &Context<'_>,
    path: &str,
    text: &str,
    definitions: &mut Option<Result<Vec<symbols::Definition>, Late>>,
    number: u32,
    line: Range<usize>,
    defs: &mut [u32],
) {
    let wanted = |name: &str| context.identifiers.get(name).is_some();
    match symbols::line_definitions(path, text, line, wanted) {
        LineDefinitions::None => {}
        LineDefinitions::Named(names) => {
            for name in names {
                if let Some(index) = context.identifiers.get(name.as_str()) {
                    defs[index] += 1;
                }
            }
        }
        LineDefinitions::Ask => {
            let definitions = definitions
                .get_or_insert_with(|| symbols::definitions_by(path, text, context.query.deadline));
            let found = definitions.as_deref().unwrap_or_default();
            for definition in found.iter().filter(|found| found.line == number) {
                let name = symbols::normalize(&definition.name);
                if let Some(index) = context.identifiers.get(name.as_str()) {
                    defs[index] += 1;
                }
            }
        }
    }
}

impl FileMatch {
    /// Counts the file's windows ([`CHUNK_SHAPE`]) into its corpus share and keeps those that
    /// hold a line hit (all of them when the path matches), with the hits' counts summed.
    fn add_windows(
        &mut self,
        context: &Context<'_>,
        text: &str,
        hits: &[LineHit],
        path_matches: bool,
    ) {
        let term_count = context.query.terms.len();
        for window in chunk::chunks(text, CHUNK_SHAPE) {
            let bytes = u32::try_from(window.text.len()).unwrap_or(u32::MAX);
            self.window_count += 1;
            self.window_bytes += u64::from(bytes);
            let first = hits.partition_point(|(line, _, _)| *line < window.start_line);
            let last = hits.partition_point(|(line, _, _)| *line <= window.end_line);
            if first == last && !path_matches {
                continue;
            }
            let mut body = vec![0; term_count];
            let mut defs = vec![0; context.identifiers.0.len()];
            for (_, line_body, line_defs) in &hits[first..last] {
                for (sum, count) in body.iter_mut().zip(line_body) {
                    *sum += count;
                }
                for (sum, count) in defs.iter_mut().zip(line_defs) {
                    *sum += count;
                }
            }
            self.windows.push(Window {
                start_line: window.start_line,
                end_line: window.end_line,
                bytes,
                body,
                defs,
            });
        }
    }
}

/// The BM25 weights of every clause, from the corpus statistics of the files that took part.
struct Scores {
    docs: u64,
    tokens_per_byte: f32,
    body: Vec<Bm25Weight>,
    path: Vec<Bm25Weight>,
    defs: Vec<Bm25Weight>,
    defs_exact: Vec<Bm25Weight>,
    query: (bool, bool),
}

/// Bytes of the corpus-wide tokens per byte that a file's own estimate starts from: a file
/// with few matched lines is estimated like the corpus, one with many like itself (prose and
/// code differ).
const PRIOR_BYTES: f32 = 400.0;

/// The estimated tokens per byte of a file's windows, from its matched lines and the
/// corpus-wide figure.
fn tokens_per_byte_of(file: &FileMatch, corpus: f32) -> f32 {
    (file.sample.tokens as f32 + PRIOR_BYTES * corpus) / (file.sample.bytes as f32 + PRIOR_BYTES)
}

/// Definition-name fields count as this long, and so does their average.
const DEFS_LENGTH: u32 = 1;

impl Scores {
    fn new(matches: &[FileMatch], sample: Sample, query: Query<'_>) -> Scores {
        let docs: u64 = matches.iter().map(|file| file.window_count).sum();
        let tokens_per_byte = if sample.bytes == 0 {
            0.0
        } else {
            sample.tokens as f32 / sample.bytes as f32
        };
        let total_docs = docs.max(1);
        let path_tokens: u64 = matches
            .iter()
            .map(|file| u64::from(file.path_len) * file.window_count)
            .sum();
        let body_tokens: f32 = matches
            .iter()
            .map(|file| tokens_per_byte_of(file, tokens_per_byte) * file.window_bytes as f32)
            .sum();
        let average_body = body_tokens / total_docs as f32;
        let average_path = path_tokens as f32 / total_docs as f32;
        let mut body_freq = vec![0u64; query.terms.len()];
        let mut path_freq = vec![0u64; query.terms.len()];
        let mut defs_freq = vec![0u64; query.identifiers.len()];
        for file in matches {
            for (freq, &count) in path_freq.iter_mut().zip(&file.path) {
                if count > 0 {
                    *freq += file.window_count;
                }
            }
            for window in &file.windows {
                for (freq, &count) in body_freq.iter_mut().zip(&window.body) {
                    *freq += u64::from(count > 0);
                }
                for (freq, &count) in defs_freq.iter_mut().zip(&window.defs) {
                    *freq += u64::from(count > 0);
                }
            }
        }
        let weights = |freqs: &[u64], average: f32, boosts: &mut dyn Iterator<Item = f32>| {
            freqs
                .iter()
                .zip(boosts)
                .map(|(&freq, boost)| {
                    Bm25Weight::for_one_term_without_explain(freq, total_docs, average)
                        .boost_by(boost)
                })
                .collect::<Vec<_>>()
        };
        let defs_average = DEFS_LENGTH as f32;
        Scores {
            docs,
            tokens_per_byte,
            body: weights(
                &body_freq,
                average_body,
                &mut query.terms.iter().map(|term| term.weight),
            ),
            path: weights(
                &path_freq,
                average_path,
                &mut query
                    .terms
                    .iter()
                    .map(|term| term.weight * rank::PATH_BOOST),
            ),
            defs: weights(
                &defs_freq,
                defs_average,
                &mut std::iter::repeat(rank::DEFINITION_BOOST),
            ),
            defs_exact: weights(&defs_freq, defs_average, &mut std::iter::repeat(1.0)),
            query: (query.text, query.definitions),
        }
    }

    /// A file's scores by the lexical and the definitions query.
    fn file(&self, file: &FileMatch) -> (Option<FileScore>, Option<FileScore>) {
        let id = |length: u32| FieldNormReader::fieldnorm_to_id(length);
        let path_id = id(file.path_len);
        let defs_id = id(DEFS_LENGTH);
        let clause = |weights: &[Bm25Weight], counts: &[u32], norm: u8| -> f32 {
            weights
                .iter()
                .zip(counts)
                .filter(|(_, count)| **count > 0)
                .map(|(weight, &count)| weight.score(norm, count))
                .sum()
        };
        let path_score = clause(&self.path, &file.path, path_id);
        let tokens_per_byte = tokens_per_byte_of(file, self.tokens_per_byte);
        let mut text = Vec::new();
        let mut definitions = Vec::new();
        for window in &file.windows {
            let score = |value: f32| FileScore {
                file_id: file.file as u64,
                score: value * file.prior,
                start_line: window.start_line,
                end_line: window.end_line,
            };
            if self.query.0 {
                let length = (tokens_per_byte * window.bytes as f32).round() as u32;
                let value = clause(&self.body, &window.body, id(length))
                    + path_score
                    + clause(&self.defs, &window.defs, defs_id);
                if value > 0.0 {
                    text.push(score(value));
                }
            }
            if self.query.1 {
                let value = clause(&self.defs_exact, &window.defs, defs_id);
                if value > 0.0 {
                    definitions.push(score(value));
                }
            }
        }
        (rank::file_score(text), rank::file_score(definitions))
    }
}
