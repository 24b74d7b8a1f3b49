//! Recall over the state itself: the records an agent wrote (observations, evidence, graph
//! nodes and edges, the checkpoint, planning, subgoals, invariants), current and superseded,
//! as small documents ranked with the same BM25 and analyzer as code.
//!
//! The input is JSON, not the typed state: the head state and every rollout record's patch,
//! serialized by the caller. Records are found structurally (arrays of objects with an `id`;
//! single objects such as the checkpoint), so this keeps working whatever shape the store
//! gives its records. A record whose id is in a patch but not in the head, or whose text in
//! the patch differs from the head's, is listed as superseded, with the revision that wrote
//! it. Pure: no I/O.

use std::collections::HashMap;
use std::collections::HashSet;
use std::sync::Arc;

use anyhow::Result;
use serde::Serialize;
use serde_json::Value;

use crate::search::hit::Hit;
use crate::search::hit::HitKind;
use crate::search::hit::Ranking;
use crate::search::hit::RecordRef;
use crate::search::index;
use crate::search::rank;
use crate::search::tokenize;
use crate::search::why;

/// One searchable state record.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct StateDoc {
    /// The record's id (the field name for single records such as the checkpoint).
    pub id: String,
    /// What it is: the path of the collection it sits in (`observations`,
    /// `graphs.architecture.nodes`, `investigation_checkpoint`, ...).
    pub kind: String,
    /// The revision that wrote this version (the head's for current records).
    pub revision: u64,
    /// Whether this is the record as it is now (`current`) or an earlier version or a
    /// record no longer in the state (`superseded`).
    pub status: String,
    /// Its text: every string in it, one per line.
    pub text: String,
    /// Files it cites (`path` fields of its code references).
    pub paths: Vec<String>,
}

/// Top-level state fields that are not records.
const NOT_RECORDS: &[&str] = &["revision", "retrieval", "conflicts"];

/// The state's records: those of `head` (current) and those of `patches` (revision, patch)
/// that the head no longer has in that form (superseded), newest first.
pub fn state_docs(head: &Value, head_revision: u64, patches: &[(u64, Value)]) -> Vec<StateDoc> {
    let mut docs = Vec::new();
    collect(head, head_revision, "current", &mut docs);
    let current: HashMap<(String, String), String> = docs
        .iter()
        .map(|doc| ((doc.kind.clone(), doc.id.clone()), doc.text.clone()))
        .collect();
    let mut seen: HashSet<(String, String, String)> = HashSet::new();
    for (revision, patch) in patches.iter().rev() {
        let mut found = Vec::new();
        collect(patch, *revision, "superseded", &mut found);
        for doc in found {
            let key = (doc.kind.clone(), doc.id.clone());
            if current.get(&key) == Some(&doc.text) {
                continue;
            }
            if seen.insert((doc.kind.clone(), doc.id.clone(), doc.text.clone())) {
                docs.push(doc);
            }
        }
    }
    docs
}

fn collect(root: &Value, revision: u64, status: &str, out: &mut Vec<StateDoc>) {
    let Some(fields) = root.as_object() else {
        return;
    };
    for (name, value) in fields {
        if NOT_RECORDS.contains(&name.as_str()) {
            continue;
        }
        walk(name, name, value, revision, status, out);
    }
}

fn walk(kind: &str, id: &str, value: &Value, revision: u64, status: &str, out: &mut Vec<StateDoc>) {
    match value {
        Value::Array(items) if items.iter().any(|item| item.get("id").is_some()) => {
            for item in items {
                let id = item.get("id").and_then(Value::as_str).unwrap_or_default();
                if !id.is_empty() {
                    out.push(doc(kind, id, item, revision, status));
                }
            }
        }
        // The graphs and their node/edge/link lists: walk down to the records.
        Value::Object(fields)
            if kind == "graphs" || (kind.starts_with("graphs.") && fields.get("id").is_none()) =>
        {
            for (name, nested) in fields {
                walk(
                    &format!("{kind}.{name}"),
                    name,
                    nested,
                    revision,
                    status,
                    out,
                );
            }
        }
        Value::Null => {}
        Value::Array(items) if items.is_empty() => {}
        other => out.push(doc(kind, id, other, revision, status)),
    }
}

fn doc(kind: &str, id: &str, value: &Value, revision: u64, status: &str) -> StateDoc {
    let mut text = Vec::new();
    let mut paths = Vec::new();
    strings(value, None, &mut text, &mut paths);
    StateDoc {
        id: id.to_owned(),
        kind: kind.to_owned(),
        revision,
        status: status.to_owned(),
        text: text.join("\n"),
        paths,
    }
}

fn strings(value: &Value, key: Option<&str>, text: &mut Vec<String>, paths: &mut Vec<String>) {
    match value {
        Value::String(string) => {
            if key == Some("path") && !paths.contains(string) {
                paths.push(string.clone());
            }
            text.push(string.clone());
        }
        Value::Array(items) => {
            for item in items {
                strings(item, key, text, paths);
            }
        }
        Value::Object(fields) => {
            for (name, nested) in fields {
                strings(nested, Some(name), text, paths);
            }
        }
        _ => {}
    }
}

/// A state record that matched, with its score.
#[derive(Debug, Clone, PartialEq)]
pub struct StateHit {
    /// The record.
    pub doc: StateDoc,
    /// BM25 score (current records weigh 1, superseded ones [`SUPERSEDED_PRIOR`]).
    pub score: f32,
}

/// Weight of superseded versions: the current record answers first when both match.
pub const SUPERSEDED_PRIOR: f32 = 0.8;

/// Ranks `docs` for `query` with BM25 over their text and kind; best first.
pub fn search(docs: &[StateDoc], query: &str, limit: usize) -> Result<Vec<StateHit>> {
    let terms = tokenize::query_terms(&mut tokenize::analyzer(), query);
    if terms.is_empty() || docs.is_empty() {
        return Ok(Vec::new());
    }
    let files: Vec<(String, String)> = docs
        .iter()
        .map(|doc| (doc.kind.clone(), doc.text.clone()))
        .collect();
    let memory = index::in_memory(&files)?;
    let searcher = index::searcher(&memory.index)?;
    let (_, fields) = index::schema();
    let query = rank::query(&fields, &terms, &[]);
    let weights: Arc<[f32]> = docs
        .iter()
        .map(|doc| {
            if doc.status == "current" {
                1.0
            } else {
                SUPERSEDED_PRIOR
            }
        })
        .collect();
    let mut hits: Vec<StateHit> = rank::best_chunks(&searcher, &searcher, &query, weights)?
        .into_iter()
        .filter_map(|file| {
            let doc = docs.get(usize::try_from(file.file_id).ok()?)?;
            Some(StateHit {
                doc: doc.clone(),
                score: file.score,
            })
        })
        .collect();
    hits.sort_by(|a, b| {
        b.score
            .total_cmp(&a.score)
            .then_with(|| a.doc.id.cmp(&b.doc.id))
    });
    hits.truncate(limit);
    Ok(hits)
}

/// Map records (graph nodes, edges and links) consulted for [`map_citations`].
pub const MAP_RECORDS: usize = 10;

/// The files cited by the map's records as they are now (graph nodes, edges and links: kinds
/// under `graphs.`) that match `query`, best record first, each file once: what a question
/// phrased in the map's words points at.
pub fn map_citations(docs: &[StateDoc], query: &str) -> Result<Vec<String>> {
    let map: Vec<StateDoc> = docs
        .iter()
        .filter(|doc| doc.kind.starts_with("graphs.") && doc.status == "current")
        .cloned()
        .collect();
    let mut cited: Vec<String> = Vec::new();
    for found in search(&map, query, MAP_RECORDS)? {
        for path in found.doc.paths {
            if !cited.contains(&path) {
                cited.push(path);
            }
        }
    }
    Ok(cited)
}

/// Longest excerpt of a state record, in characters.
const EXCERPT_CHARS: usize = 400;

/// State hits as results: kind `state_record`, the first file each cites as its path (the
/// store's directory when it cites none), its text as the excerpt, and its relevance to
/// `query` as its score (the query's words in its text, [`why::explain`]).
pub fn hits(found: Vec<StateHit>, query: &str) -> Vec<Hit> {
    let mut analyzer = tokenize::analyzer();
    let words = tokenize::query_words(&mut analyzer, query);
    (found.into_iter())
        .map(|found| {
            let doc = found.doc;
            let excerpt: String = doc.text.chars().take(EXCERPT_CHARS).collect();
            let text = tokenize::tokens(&mut analyzer, &doc.text);
            let (why, relevance) = why::explain(
                &words,
                &why::Found {
                    lines: text.iter().map(String::as_str).collect(),
                    ..why::Found::default()
                },
            );
            Hit {
                kind: HitKind::StateRecord,
                ranking: Ranking::Lexical,
                path: doc
                    .paths
                    .first()
                    .cloned()
                    .unwrap_or_else(|| ".epiphany".to_owned()),
                score: relevance,
                start_line: None,
                end_line: None,
                excerpt: Some(excerpt),
                record: Some(RecordRef {
                    id: doc.id,
                    kind: doc.kind,
                    revision: doc.revision,
                    status: doc.status,
                }),
                why,
            }
        })
        .collect()
}

/// Code and state results in one ranking, by reciprocal rank (k 10) of each list's order;
/// each hit keeps its own score (its relevance).
pub fn fuse(code: Vec<Hit>, state: Vec<Hit>, limit: usize) -> Vec<Hit> {
    let mut fused: Vec<(f32, Hit)> = Vec::with_capacity(code.len() + state.len());
    for list in [code, state] {
        for (rank, hit) in list.into_iter().enumerate() {
            fused.push((1.0 / (10.0 + rank as f32 + 1.0), hit));
        }
    }
    fused.sort_by(|(a_rank, a), (b_rank, b)| crate::search::hit::order_by(a, *a_rank, b, *b_rank));
    fused.truncate(limit);
    fused.into_iter().map(|(_, hit)| hit).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn finds_current_and_superseded_records() {
        let head = json!({
            "revision": 3,
            "objective": "speed up the retry path",
            "observations": [
                {"id": "obs-2", "summary": "retries back off exponentially", "status": "ok",
                 "code_refs": [{"path": "src/retry.rs"}]}
            ],
            "graphs": {"architecture": {"nodes": [{"id": "node-a", "title": "Retry loop"}], "edges": []}},
            "investigation_checkpoint": {"summary": "looking at jitter"}
        });
        let patches = vec![
            (
                1,
                json!({"observations": [{"id": "obs-1", "summary": "retry storms saturate the pool"}]}),
            ),
            (
                3,
                json!({"observations": [{"id": "obs-2", "summary": "retries back off exponentially", "status": "ok",
                 "code_refs": [{"path": "src/retry.rs"}]}]}),
            ),
        ];
        let docs = state_docs(&head, 3, &patches);
        let kinds: Vec<(&str, &str, &str)> = docs
            .iter()
            .map(|doc| (doc.kind.as_str(), doc.id.as_str(), doc.status.as_str()))
            .collect();
        assert_eq!(
            kinds,
            [
                ("objective", "objective", "current"),
                ("observations", "obs-2", "current"),
                ("graphs.architecture.nodes", "node-a", "current"),
                (
                    "investigation_checkpoint",
                    "investigation_checkpoint",
                    "current"
                ),
                ("observations", "obs-1", "superseded"),
            ]
        );
        assert_eq!(docs[1].paths, ["src/retry.rs"]);
        let hits = search(&docs, "pool saturation by retry storms", 5).expect("search");
        assert_eq!(hits[0].doc.id, "obs-1");
        assert_eq!(hits[0].doc.revision, 1);
    }
}
