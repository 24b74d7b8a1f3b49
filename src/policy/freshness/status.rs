//! The freshness of the retrieval index summary (docs/freshness.md#retrieval-freshness) and of
//! the graph (docs/freshness.md#graph-freshness), each from the state alone. Must not look at
//! the work tree's changes: that is `watch`.

use crate::state::model::IndexTally;
use crate::state::model::RetrievalState;
use crate::state::model::RetrievalStatus;
use crate::state::model::State;

use super::FRESH_GRAPH_LABELS;
use super::GraphFreshness;
use super::GraphFreshnessStatus;
use super::NAMED_LIMIT;
use super::RetrievalFreshness;
use super::RetrievalFreshnessStatus;

/// Freshness of the retrieval index summary (docs/freshness.md#retrieval-freshness).
pub fn retrieval_freshness(retrieval: Option<&RetrievalState>) -> RetrievalFreshness {
    let Some(retrieval) = retrieval else {
        return RetrievalFreshness {
            status: RetrievalFreshnessStatus::Missing,
            semantic_available: false,
            index: IndexTally::default(),
            dirty_paths: Vec::new(),
            note: "no retrieval freshness available".to_owned(),
        };
    };
    let dirty = retrieval.dirty_paths.len();
    let (status, note) = match retrieval.status {
        RetrievalStatus::Ready if retrieval.index.last_indexed_at_unix_seconds.is_none() => (
            RetrievalFreshnessStatus::Ready,
            "no persistent index: `retrieve` scans the work tree at query time (`epiphany index` builds one)".to_owned(),
        ),
        RetrievalStatus::Ready if dirty == 0 => (
            RetrievalFreshnessStatus::Ready,
            "retrieval catalog is ready".to_owned(),
        ),
        RetrievalStatus::Ready => (
            RetrievalFreshnessStatus::Ready,
            format!("retrieval catalog is ready; {dirty} dirty paths noted"),
        ),
        RetrievalStatus::Stale => (
            RetrievalFreshnessStatus::Stale,
            format!(
                "retrieval index is stale; {dirty} dirty paths to refresh with `epiphany index`"
            ),
        ),
        RetrievalStatus::Indexing => (
            RetrievalFreshnessStatus::Indexing,
            "retrieval index is being built".to_owned(),
        ),
        RetrievalStatus::Unavailable => (
            RetrievalFreshnessStatus::Unavailable,
            "retrieval is unavailable for this workspace".to_owned(),
        ),
    };
    RetrievalFreshness {
        status,
        semantic_available: retrieval.semantic_available,
        index: retrieval.index,
        dirty_paths: retrieval.dirty_paths.clone(),
        note,
    }
}

/// Freshness of the graph as the state records it (docs/freshness.md#graph-freshness).
pub fn graph_freshness(state: Option<&State>) -> GraphFreshness {
    let Some(state) = state else {
        return GraphFreshness {
            status: GraphFreshnessStatus::Missing,
            dirty_paths: Vec::new(),
            dirty_path_count: 0,
            open_question_count: 0,
            open_gap_count: 0,
            checkpoint_id: None,
            graph_freshness: None,
            note: "no state, so no graph".to_owned(),
        };
    };
    let frontier = state.graph_frontier.clone().unwrap_or_default();
    let label = state.churn.as_ref().and_then(|c| c.graph_freshness.clone());
    let (dirty, questions, gaps) = (
        frontier.dirty_paths.len(),
        frontier.open_question_ids.len(),
        frontier.open_gap_ids.len(),
    );
    let label_stale = label
        .as_deref()
        .is_some_and(|label| !FRESH_GRAPH_LABELS.contains(&label));
    let stale = dirty > 0 || questions > 0 || gaps > 0 || label_stale;
    let note = if stale {
        let mut note = format!(
            "graph is stale: {dirty} dirty paths, {questions} open questions, {gaps} open gaps"
        );
        let named: Vec<String> = frontier
            .dirty_paths
            .iter()
            .chain(&frontier.open_question_ids)
            .chain(&frontier.open_gap_ids)
            .take(NAMED_LIMIT)
            .map(|item| format!("`{item}`"))
            .collect();
        if !named.is_empty() {
            let more = (dirty + questions + gaps).saturating_sub(named.len());
            let more = if more > 0 {
                format!(", {more} more")
            } else {
                String::new()
            };
            note.push_str(&format!(" ({}{more})", named.join(", ")));
        }
        if let Some(label) = label.as_deref().filter(|_| label_stale) {
            note.push_str(&format!(", graph freshness `{label}`"));
        }
        note
    } else {
        "graph freshness is ready".to_owned()
    };
    GraphFreshness {
        status: if stale {
            GraphFreshnessStatus::Stale
        } else {
            GraphFreshnessStatus::Ready
        },
        dirty_path_count: dirty,
        dirty_paths: frontier.dirty_paths,
        open_question_count: questions,
        open_gap_count: gaps,
        checkpoint_id: state
            .graph_checkpoint
            .as_ref()
            .map(|c| c.checkpoint_id.clone()),
        graph_freshness: label,
        note,
    }
}
