//! Ranking: the tantivy query for a list of analyzed terms, and the collector that turns
//! chunk scores into one score per file: its best chunk plus [`RUNNER_UP_WEIGHT`] of its best
//! chunk that does not overlap that one, times the file's weight.
//!
//! Every term is looked up in the chunk text and, with [`PATH_BOOST`], in the file path, as
//! BM25 clauses of one boolean query; tantivy does the scoring. The collector reads `file_id`,
//! `start_line` and `end_line` from fast fields only. A file's weight is 0 to exclude it (out
//! of scope, or stale in the index), or its prior ([`prior`]). No I/O besides the index.

use std::collections::HashMap;
use std::sync::Arc;

use anyhow::Result;
use tantivy::DocId;
use tantivy::DocSet;
use tantivy::Score;
use tantivy::Searcher;
use tantivy::SegmentOrdinal;
use tantivy::SegmentReader;
use tantivy::TERMINATED;
use tantivy::Term;
use tantivy::collector::Collector;
use tantivy::collector::SegmentCollector;
use tantivy::columnar::Column;
use tantivy::query::Bm25StatisticsProvider;
use tantivy::query::BooleanQuery;
use tantivy::query::BoostQuery;
use tantivy::query::Occur;
use tantivy::query::Query;
use tantivy::query::TermQuery;
use tantivy::schema::Field;
use tantivy::schema::IndexRecordOption;

use crate::policy::peripheral;
use crate::search::index::Fields;
use crate::search::tokenize::QueryTerm;

/// Weight of a path match relative to a chunk-text match. About 1 measured best: many query
/// words are also directory names, and a stronger boost floods the top with every file of
/// that directory (docs/retrieval.md#measured-choices).
pub const PATH_BOOST: f32 = 1.0;

/// Share of a file's best non-overlapping second chunk added to its best: a file that matches
/// the question in more than one place is more likely what it is about than a file with one
/// lucky chunk. MRR on three commit-derived query sets (ripgrep / nushell / cargo): 0 gives
/// 0.580 / 0.549 / 0.522; 0.3 gives 0.587 / 0.592 / 0.538; 0.5 gives 0.585 / 0.614 / 0.545;
/// 0.8 gives 0.586 / 0.601 / 0.528.
pub const RUNNER_UP_WEIGHT: f32 = 0.5;

/// Weight of files that are not source code: documentation, configuration, data, lock files,
/// licenses, templates. A question about code is answered by code first; these still rank,
/// just behind comparable source files, so long prose or generated data cannot crowd the top.
pub const NON_SOURCE_PRIOR: f32 = 0.5;

/// Extensions of documentation, data, configuration and markup files. Unknown extensions
/// count as source: they may belong to a language this list does not know.
const NON_SOURCE_EXTENSIONS: &[&str] = &[
    "adoc", "bazel", "bzl", "cfg", "conf", "csv", "htm", "html", "ini", "json", "jsonl", "lock",
    "markdown", "md", "rst", "snap", "svg", "toml", "tpl", "tsv", "txt", "xml", "yaml", "yml",
];

/// Weight of tests, test data, fixtures, snapshots and grammar query files,
/// unless the query is about tests ([`mentions_tests`]): they repeat the words of the code
/// they exercise, often more densely, and outranked the code itself in a quarter of the
/// misses on commit-derived queries. MRR / R@10 on ripgrep, httpx and hono commit queries:
/// 1.0 (none) 0.585 / 0.837, 0.619 / 0.795, 0.681 / 0.840; 0.5 gives 0.586 / 0.826,
/// 0.654 / 0.760, 0.717 / 0.792; 0.7 gives 0.586 / 0.837, 0.652 / 0.787, 0.716 / 0.804
/// (those sets count changed tests as relevant too, which favours a milder weight).
pub const TEST_PRIOR: f32 = 0.7;

/// Directory names whose files are tests or test data. Code the project does not own is
/// [`peripheral`].
const TEST_DIRS: &[&str] = &[
    "__fixtures__",
    "__mocks__",
    "__snapshots__",
    "__tests__",
    "e2e",
    "fixture",
    "fixtures",
    "mocks",
    "snapshots",
    "spec",
    "specs",
    "test",
    "test-data",
    "test_data",
    "testdata",
    "testing",
    "tests",
];

/// Query words that ask about tests.
const TEST_WORDS: &[&str] = &[
    "e2e",
    "fixture",
    "fixtures",
    "pytest",
    "snapshot",
    "snapshots",
    "spec",
    "specs",
    "test",
    "tested",
    "testing",
    "tests",
    "unittest",
];

/// Whether `path` is test code, test data, a snapshot or a grammar query.
pub fn is_test_like(path: &str) -> bool {
    let lower = path.to_ascii_lowercase();
    let mut parts: Vec<&str> = lower.split('/').collect();
    let name = parts.pop().unwrap_or_default();
    if parts.iter().any(|dir| TEST_DIRS.contains(dir)) {
        return true;
    }
    let (stem, extension) = name.rsplit_once('.').unwrap_or((name, ""));
    stem.starts_with("test_")
        || stem.ends_with("_test")
        || stem.ends_with("_tests")
        || stem.ends_with("_spec")
        || stem.ends_with(".test")
        || stem.ends_with(".spec")
        || stem == "tests"
        || stem == "conftest"
        || matches!(extension, "snap" | "scm")
}

/// Whether a query asks about tests (then tests get no [`TEST_PRIOR`]).
pub fn mentions_tests(query: &str) -> bool {
    query
        .split(|c: char| !c.is_alphanumeric())
        .any(|word| TEST_WORDS.contains(&word.to_lowercase().as_str()))
}

/// The prior weight of a file: [`NON_SOURCE_PRIOR`] for documentation, configuration and
/// data, times [`TEST_PRIOR`] for test-like files unless `tests_wanted`, times
/// [`peripheral::weight`] (vendored, stub, declaration, minified, generated, licence, patch
/// and lock files). Files without an extension are mostly licenses, build files and notes
/// (`LICENSE`, `Makefile`, `BUILD`).
pub fn prior(path: &str, tests_wanted: bool) -> f32 {
    let name = path.rsplit('/').next().unwrap_or(path);
    let non_source = match name.trim_start_matches('.').rsplit_once('.') {
        Some((_, extension)) => {
            NON_SOURCE_EXTENSIONS.contains(&extension.to_ascii_lowercase().as_str())
        }
        None => true,
    };
    let mut weight = if non_source { NON_SOURCE_PRIOR } else { 1.0 };
    if !tests_wanted && is_test_like(path) {
        weight *= TEST_PRIOR;
    }
    weight * peripheral::weight(path)
}

/// One boolean query: every term in the chunk text, and in the path with [`PATH_BOOST`], each
/// with the term's weight, and every identifier among the chunk's definition names with
/// [`DEFINITION_BOOST`].
pub fn query(fields: &Fields, terms: &[QueryTerm], identifiers: &[String]) -> BooleanQuery {
    let clause = |field, term: &QueryTerm, boost: f32| {
        let query = TermQuery::new(
            Term::from_field_text(field, &term.text),
            IndexRecordOption::WithFreqs,
        );
        let boosted: Box<dyn Query> = Box::new(BoostQuery::new(Box::new(query), boost));
        (Occur::Should, boosted)
    };
    let clauses = terms
        .iter()
        .flat_map(|term| {
            [
                clause(fields.body, term, term.weight),
                clause(fields.path, term, term.weight * PATH_BOOST),
            ]
        })
        .chain(definition_clauses(fields, identifiers, DEFINITION_BOOST))
        .collect();
    BooleanQuery::new(clauses)
}

/// A file's score and its best chunk.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FileScore {
    /// The file's id in the index.
    pub file_id: u64,
    /// The file's score (see the module docs); inside the collector, its best chunk's.
    pub score: f32,
    /// First line of the best chunk.
    pub start_line: u32,
    /// Last line of the best chunk.
    pub end_line: u32,
}

impl FileScore {
    fn beats(&self, other: &FileScore) -> bool {
        self.score > other.score
            || (self.score == other.score && self.start_line < other.start_line)
    }
}

/// The scored chunks of one file.
#[derive(Debug, Clone, Default)]
struct FileChunks {
    chunks: Vec<FileScore>,
}

impl FileChunks {
    /// The file's score: its best chunk plus [`RUNNER_UP_WEIGHT`] of the best chunk that does
    /// not overlap it (an overlapping neighbour repeats the same lines), with the best chunk's
    /// lines. Ties keep the earlier chunk.
    fn file_score(&self) -> Option<FileScore> {
        let best = self
            .chunks
            .iter()
            .copied()
            .reduce(|best, chunk| if chunk.beats(&best) { chunk } else { best })?;
        let runner_up = self
            .chunks
            .iter()
            .filter(|chunk| chunk.end_line < best.start_line || chunk.start_line > best.end_line)
            .map(|chunk| chunk.score)
            .fold(0.0, f32::max);
        Some(FileScore {
            score: best.score + RUNNER_UP_WEIGHT * runner_up,
            ..best
        })
    }
}

/// A file's score from its scored chunks (already times the file's weight): its best chunk
/// plus [`RUNNER_UP_WEIGHT`] of its best chunk that does not overlap that one, with the best
/// chunk's lines; `None` without chunks. The one aggregation of the index and of a
/// query-time stream ([`crate::search::stream`]).
pub fn file_score(chunks: Vec<FileScore>) -> Option<FileScore> {
    FileChunks { chunks }.file_score()
}

/// Every matching file with a positive weight, with its score and best chunk, in no
/// particular order.
/// `statistics` supplies the BM25 document frequencies (another index's, so that scores of a
/// small in-memory index compare with the persistent one's).
pub fn best_chunks(
    searcher: &Searcher,
    statistics: &dyn Bm25StatisticsProvider,
    query: &dyn Query,
    weights: Arc<[f32]>,
) -> Result<Vec<FileScore>> {
    let best = searcher.search_with_statistics_provider(
        query,
        &BestChunkPerFile { weights },
        statistics,
    )?;
    Ok(best.values().filter_map(FileChunks::file_score).collect())
}

struct BestChunkPerFile {
    weights: Arc<[f32]>,
}

struct SegmentBest {
    weights: Arc<[f32]>,
    file_ids: Column<u64>,
    start_lines: Column<u64>,
    end_lines: Column<u64>,
    best: HashMap<u64, FileChunks>,
}

fn line(column: &Column<u64>, doc: DocId) -> u32 {
    column
        .first(doc)
        .and_then(|line| u32::try_from(line).ok())
        .unwrap_or(0)
}

impl Collector for BestChunkPerFile {
    type Fruit = HashMap<u64, FileChunks>;
    type Child = SegmentBest;

    fn for_segment(
        &self,
        _segment: SegmentOrdinal,
        reader: &SegmentReader,
    ) -> tantivy::Result<SegmentBest> {
        let fast = reader.fast_fields();
        Ok(SegmentBest {
            weights: Arc::clone(&self.weights),
            file_ids: fast.u64("file_id")?,
            start_lines: fast.u64("start_line")?,
            end_lines: fast.u64("end_line")?,
            best: HashMap::new(),
        })
    }

    fn requires_scoring(&self) -> bool {
        true
    }

    fn merge_fruits(&self, fruits: Vec<HashMap<u64, FileChunks>>) -> tantivy::Result<Self::Fruit> {
        let mut merged: HashMap<u64, FileChunks> = HashMap::new();
        for fruit in fruits {
            for (file_id, chunks) in fruit {
                merged
                    .entry(file_id)
                    .or_default()
                    .chunks
                    .extend(chunks.chunks);
            }
        }
        Ok(merged)
    }
}

impl SegmentCollector for SegmentBest {
    type Fruit = HashMap<u64, FileChunks>;

    fn collect(&mut self, doc: DocId, score: Score) {
        let Some(file_id) = self.file_ids.first(doc) else {
            return;
        };
        let weight = usize::try_from(file_id)
            .ok()
            .and_then(|index| self.weights.get(index).copied())
            .unwrap_or(0.0);
        if weight <= 0.0 {
            return;
        }
        let chunk = FileScore {
            file_id,
            score: score * weight,
            start_line: line(&self.start_lines, doc),
            end_line: line(&self.end_lines, doc),
        };
        self.best.entry(file_id).or_default().chunks.push(chunk);
    }

    fn harvest(self) -> Self::Fruit {
        self.best
    }
}

/// BM25 statistics over live chunks only: chunks of files that are still current, in the
/// persistent index and in the in-memory index of dirty files alike. Tantivy's own statistics
/// count deleted documents until a merge drops them, so an incrementally updated index would
/// rank differently from a fresh build of the same tree; these do not. Document lengths are
/// the indexed field norms, the same numbers tantivy scores with.
#[derive(Debug, Clone, Default)]
pub struct LiveStatistics {
    docs: u64,
    tokens: HashMap<Field, u64>,
    doc_freqs: HashMap<Term, u64>,
}

impl LiveStatistics {
    /// Adds the live documents of `searcher`'s index: those not deleted whose file id
    /// `is_live` accepts. Counts document frequencies of `terms` only.
    pub fn add(
        &mut self,
        searcher: &Searcher,
        is_live: &dyn Fn(u64) -> bool,
        fields: &[Field],
        terms: &[Term],
    ) -> Result<()> {
        for segment in searcher.segment_readers() {
            let file_ids = segment.fast_fields().u64("file_id")?;
            let max_doc = segment.max_doc();
            let mut live = vec![false; max_doc as usize];
            for doc in 0..max_doc {
                live[doc as usize] =
                    !segment.is_deleted(doc) && file_ids.first(doc).is_some_and(is_live);
            }
            self.docs += live.iter().filter(|&&alive| alive).count() as u64;
            for &field in fields {
                let norms = segment.get_fieldnorms_reader(field)?;
                let total: u64 = (0..max_doc)
                    .filter(|&doc| live[doc as usize])
                    .map(|doc| u64::from(norms.fieldnorm(doc)))
                    .sum();
                *self.tokens.entry(field).or_default() += total;
            }
            for term in terms {
                let index = segment.inverted_index(term.field())?;
                let Some(mut postings) = index.read_postings(term, IndexRecordOption::Basic)?
                else {
                    continue;
                };
                let mut count = 0;
                let mut doc = postings.doc();
                while doc != TERMINATED {
                    if live[doc as usize] {
                        count += 1;
                    }
                    doc = postings.advance();
                }
                *self.doc_freqs.entry(term.clone()).or_default() += count;
            }
        }
        Ok(())
    }
}

impl Bm25StatisticsProvider for LiveStatistics {
    fn total_num_tokens(&self, field: Field) -> tantivy::Result<u64> {
        Ok(self.tokens.get(&field).copied().unwrap_or(0))
    }

    fn total_num_docs(&self) -> tantivy::Result<u64> {
        // BM25 divides by it; an empty corpus scores nothing anyway.
        Ok(self.docs.max(1))
    }

    fn doc_freq(&self, term: &Term) -> tantivy::Result<u64> {
        Ok(self.doc_freqs.get(term).copied().unwrap_or(0))
    }
}

/// The terms of a query built by [`query`], for [`LiveStatistics::add`].
pub fn query_terms(fields: &Fields, terms: &[QueryTerm], identifiers: &[String]) -> Vec<Term> {
    terms
        .iter()
        .flat_map(|term| {
            [
                Term::from_field_text(fields.body, &term.text),
                Term::from_field_text(fields.path, &term.text),
            ]
        })
        .chain(
            identifiers
                .iter()
                .map(|name| Term::from_field_text(fields.defs, name)),
        )
        .collect()
}
/// Weight of a definition-name match relative to a chunk-text match. MRR on ripgrep / httpx /
/// hono commit queries: 0 gives 0.586 / 0.652 / 0.716, 0.3 gives 0.584 / 0.664 / 0.716, 1
/// gives 0.576 / 0.665 / 0.688.
pub const DEFINITION_BOOST: f32 = 0.3;

/// Share added to a file's lexical score in hybrid mode when the file defines an identifier
/// of the query anywhere ([`definer_weighted`]), not only in the best chunk that the
/// definition clauses of [`query`] reward: a question often names the type or function whose
/// file it is about. MRR on ripgrep / httpx / hono / cargo commit queries: 0 gives 0.584 /
/// 0.735 / 0.680 / 0.537; 0.1 gives 0.590 / 0.741 / 0.692 / 0.539; 0.15 gives 0.592 / 0.746
/// / 0.689 / 0.538; 0.2 gives 0.586 / 0.746 / 0.702 / 0.539; 0.3 gives 0.571 / 0.736 / 0.701
/// / 0.523; R@10 unchanged (docs/retrieval.md#measured-choices).
pub const DEFINER_BOOST: f32 = 0.15;

/// A file's lexical score raised by [`DEFINER_BOOST`] when the file defines one of the
/// query's identifiers (`defines`: a definition of the file normalizes to one of them).
pub fn definer_weighted(score: f32, defines: bool) -> f32 {
    if defines {
        score * (1.0 + DEFINER_BOOST)
    } else {
        score
    }
}

/// The definition-name clauses of `identifiers` (normalised), each a BM25 term query on the
/// `defs` field.
fn definition_clauses(
    fields: &Fields,
    identifiers: &[String],
    boost: f32,
) -> Vec<(Occur, Box<dyn Query>)> {
    identifiers
        .iter()
        .map(|name| {
            let query = TermQuery::new(
                Term::from_field_text(fields.defs, name),
                IndexRecordOption::WithFreqs,
            );
            let boosted: Box<dyn Query> = Box::new(BoostQuery::new(Box::new(query), boost));
            (Occur::Should, boosted)
        })
        .collect()
}

/// The query of definitions only (exact lookup).
pub fn definitions_query(fields: &Fields, identifiers: &[String]) -> BooleanQuery {
    BooleanQuery::new(definition_clauses(fields, identifiers, 1.0))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::search::index;
    use crate::search::tokenize;

    #[test]
    fn prior_halves_docs_config_and_data() {
        let prior = |path| prior(path, false);
        assert_eq!(prior("src/main.rs"), 1.0);
        assert_eq!(prior("README.md"), NON_SOURCE_PRIOR);
        assert_eq!(prior("tools/BUILD"), NON_SOURCE_PRIOR);
        assert_eq!(prior("Makefile"), NON_SOURCE_PRIOR);
        assert_eq!(prior(".gitignore"), NON_SOURCE_PRIOR);
        assert_eq!(prior("scripts/build.nu"), 1.0);
        assert_eq!(prior("complete/rg.ZSH"), 1.0);
    }

    #[test]
    fn what_nobody_reads_weighs_its_peripheral_weight_more() {
        let prior = |path| prior(path, false);
        let out_of_the_way = peripheral::PERIPHERAL_WEIGHT;
        assert_eq!(prior("pkg/Cargo.LOCK"), NON_SOURCE_PRIOR * out_of_the_way);
        assert_eq!(prior("UNLICENSE"), NON_SOURCE_PRIOR * out_of_the_way);
        assert_eq!(prior("vendor/lib/x.c"), out_of_the_way);
        assert_eq!(prior("patches/fix.patch"), out_of_the_way);
        assert_eq!(prior("types/hot.d.ts"), out_of_the_way);
        assert_eq!(prior("tests/vendor/x.c"), TEST_PRIOR * out_of_the_way);
    }

    #[test]
    fn tests_weigh_less_unless_the_query_is_about_tests() {
        for path in [
            "tests/integration.rs",
            "crates/core/tests/util.rs",
            "src/__tests__/url.ts",
            "src/utils/url.test.ts",
            "src/app.spec.js",
            "pkg/server_test.go",
            "tests/test_client.py",
            "httpx/test_utils.py",
            "test-data/check-classes.test",
            "queries/highlights.scm",
            "src/snapshots/a.snap",
        ] {
            assert!(is_test_like(path), "{path}");
            assert_eq!(prior(path, true), prior(path, false) / TEST_PRIOR, "{path}");
        }
        for path in [
            "src/testing_utils_x/attest.rs",
            "src/contest.py",
            "src/latest.ts",
            "vendor/lib/x.c",
        ] {
            assert!(!is_test_like(path), "{path}");
        }
        assert_eq!(
            prior("tests/data.json", false),
            NON_SOURCE_PRIOR * TEST_PRIOR
        );
        assert!(mentions_tests("Add tests for the URL parser"));
        assert!(mentions_tests("fix(test): flaky"));
        assert!(!mentions_tests("latest protest attestation"));
    }

    #[test]
    fn files_defining_a_query_identifier_are_raised_by_the_definer_boost() {
        assert_eq!(definer_weighted(2.0, false), 2.0);
        assert_eq!(definer_weighted(2.0, true), 2.0 * (1.0 + DEFINER_BOOST));
        assert!(
            definer_weighted(0.95, true) > definer_weighted(1.0, false),
            "a definer within the boost of a better lexical match passes it"
        );
        assert_eq!(definer_weighted(0.0, true), 0.0);
    }

    #[test]
    fn a_file_scores_its_best_chunk_plus_part_of_a_separate_second() {
        let chunk = |start_line, end_line, score| FileScore {
            file_id: 7,
            score,
            start_line,
            end_line,
        };
        let file = FileChunks {
            chunks: vec![
                chunk(91, 210, 2.0),
                chunk(1, 120, 2.0),
                chunk(301, 400, 1.0),
            ],
        };
        let score = file.file_score().expect("score");
        assert_eq!((score.start_line, score.end_line), (1, 120));
        assert_eq!(score.score, 2.0 + RUNNER_UP_WEIGHT * 1.0);
        let alone = FileChunks {
            chunks: vec![chunk(1, 120, 2.0), chunk(91, 210, 1.5)],
        };
        assert_eq!(alone.file_score().expect("score").score, 2.0);
        assert_eq!(FileChunks::default().file_score(), None);
    }

    #[test]
    fn files_score_by_their_best_chunk_and_weights_exclude() {
        let long: String = (0..200).map(|n| format!("filler line {n}\n")).collect();
        let files = vec![
            (
                "src/a.rs".to_owned(),
                format!("{long}fn validate_patch() {{}}\n"),
            ),
            ("src/b.rs".to_owned(), "fn unrelated() {}\n".to_owned()),
            (
                "docs/patch.md".to_owned(),
                "validate the patch\n".to_owned(),
            ),
        ];
        let memory = index::in_memory(&files).expect("index");
        let searcher = index::searcher(&memory.index).expect("searcher");
        let (_, fields) = index::schema();
        let terms = tokenize::query_terms(&mut tokenize::analyzer(), "validate patches");
        let query = query(&fields, &terms, &[]);
        let weights: Arc<[f32]> = Arc::from(vec![1.0, 1.0, 1.0]);
        let mut found = best_chunks(&searcher, &searcher, &query, weights).expect("search");
        found.sort_by_key(|file| file.file_id);
        let ids: Vec<u64> = found.iter().map(|file| file.file_id).collect();
        assert_eq!(ids, [0, 2]);
        assert!(
            found[0].start_line > 1,
            "the best chunk is the one at the end"
        );
        assert_eq!(found[0].end_line, 201);
        let only_docs: Arc<[f32]> = Arc::from(vec![0.0, 1.0, 1.0]);
        let found = best_chunks(&searcher, &searcher, &query, only_docs).expect("search");
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].file_id, 2);
    }
}
