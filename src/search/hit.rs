//! A ranked result and the one result order (docs/retrieval.md#result-order).
//!
//! Files rank before directories; among files (exact matches and chunks alike, whose scores
//! the ranking has already fused into one scale) and among directories: the ranking's score
//! descending (a hit's own `score` becomes its relevance once the order is settled), then
//! path ascending
//! (component-wise), then first line ascending. Sorting is total and deterministic: a NaN
//! score (never produced, but possible in principle) sorts after every number instead of
//! comparing equal to all of them, which would not be a total order.

use std::cmp::Ordering;
use std::path::Path;

use serde::Serialize;

use crate::search::why::Why;

/// What a result points at.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum HitKind {
    /// A file whose name is an identifier of the query (no lines).
    File,
    /// A directory whose name is an identifier of the query (no lines).
    Directory,
    /// The definition of an identifier of the query (its first lines).
    Definition,
    /// A range of lines whose text matches the query.
    Chunk,
    /// A record of the state (`retrieve --scope state|all`).
    StateRecord,
}

impl HitKind {
    fn priority(self) -> u8 {
        match self {
            HitKind::Directory => 1,
            HitKind::File | HitKind::Definition | HitKind::Chunk | HitKind::StateRecord => 2,
        }
    }
}

/// The ranking that found a result.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Ranking {
    /// A name or definition equal to an identifier of the query.
    Exact,
    /// BM25 over the words of the text.
    Lexical,
    /// Similarity of embedding vectors (`--mode semantic`).
    Semantic,
}

/// One ranked result.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct Hit {
    /// What it points at.
    pub kind: HitKind,
    /// The ranking that found it.
    pub ranking: Ranking,
    /// Path relative to the workspace root, `/`-separated.
    pub path: String,
    /// Its relevance, in [0, 1]: the weighted share of the query's words it matches in its
    /// lines, its path or the definition it holds (docs/retrieval.md#why-a-hit-matched), the
    /// same measure in every query. Not its rank: results come in rank order, which also
    /// weighs how often, how rarely and where the words occur.
    pub score: f32,
    /// First line of the excerpt (chunks and definitions; `null` for name matches).
    pub start_line: Option<u32>,
    /// Last line of the excerpt, inclusive (`null` for name matches).
    pub end_line: Option<u32>,
    /// The lines `start_line..=end_line` (`null` for name matches); a state record's text.
    pub excerpt: Option<String>,
    /// The state record, for `state_record` hits.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub record: Option<RecordRef>,
    /// Why it matched: the query's words in its lines and in its path, and the definition of
    /// a named identifier it holds (a definition hit's; any hit's when the query is an
    /// identifier lookup).
    pub why: Why,
}

/// Which state record a hit is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct RecordRef {
    /// The record's id.
    pub id: String,
    /// Its kind (the state collection it is in, e.g. `observations`).
    pub kind: String,
    /// The revision that wrote this version.
    pub revision: u64,
    /// `current`, or `superseded` (an earlier version, or no longer in the state).
    pub status: String,
}

/// The result order (see the module docs), by the hits' scores.
pub fn order(a: &Hit, b: &Hit) -> Ordering {
    order_by(a, a.score, b, b.score)
}

/// The result order with the ranking's score of each hit given beside it.
pub fn order_by(a: &Hit, a_score: f32, b: &Hit, b_score: f32) -> Ordering {
    b.kind
        .priority()
        .cmp(&a.kind.priority())
        .then_with(|| sortable(b_score).total_cmp(&sortable(a_score)))
        .then_with(|| Path::new(&a.path).cmp(Path::new(&b.path)))
        .then_with(|| {
            let line = |hit: &Hit| hit.start_line.unwrap_or(u32::MAX);
            line(a).cmp(&line(b))
        })
}

fn sortable(score: f32) -> f32 {
    if score.is_nan() {
        f32::NEG_INFINITY
    } else {
        score
    }
}

/// Sorts hits into the result order.
pub fn sort(hits: &mut [Hit]) {
    hits.sort_by(order);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hit(kind: HitKind, path: &str, score: f32, line: Option<u32>) -> Hit {
        Hit {
            kind,
            ranking: Ranking::Lexical,
            path: path.to_owned(),
            score,
            start_line: line,
            end_line: line,
            excerpt: None,
            record: None,
            why: Why::default(),
        }
    }

    #[test]
    fn files_then_score_then_path_then_line() {
        let mut hits = vec![
            hit(HitKind::Directory, "src", 500.0, None),
            hit(HitKind::Chunk, "b.rs", 2.0, Some(9)),
            hit(HitKind::Chunk, "b.rs", 2.0, None),
            hit(HitKind::Chunk, "b.rs", 2.0, Some(1)),
            hit(HitKind::Chunk, "a.rs", 2.0, Some(5)),
            hit(HitKind::Chunk, "z.rs", f32::NAN, Some(1)),
            hit(HitKind::Chunk, "c.rs", 7.0, Some(1)),
            hit(HitKind::File, "x/y.rs", 5.0, None),
        ];
        sort(&mut hits);
        let order: Vec<(&str, Option<u32>)> = hits
            .iter()
            .map(|hit| (hit.path.as_str(), hit.start_line))
            .collect();
        assert_eq!(
            order,
            [
                ("c.rs", Some(1)),
                ("x/y.rs", None),
                ("a.rs", Some(5)),
                ("b.rs", Some(1)),
                ("b.rs", Some(9)),
                ("b.rs", None),
                ("z.rs", Some(1)),
                ("src", None),
            ]
        );
    }

    #[test]
    fn paths_compare_by_component() {
        let a = hit(HitKind::File, "a/b", 1.0, None);
        let b = hit(HitKind::File, "a-b", 1.0, None);
        assert_eq!(order(&a, &b), Ordering::Less);
    }
}
