//! The scene (docs/projections.md#scene): a compact wall board of the state — objective, subgoals,
//! invariant counts, graph counts and focus, retrieval status, checkpoint, latest observations
//! and evidence, churn — and the commands that make sense next.
//!
//! Derived fresh on every call from the state and the retrieval summary handed in; never
//! stored, never writes.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::policy::freshness::Staleness;
use crate::policy::projection::StateStatus;
use crate::policy::projection::current_observations;
use crate::state::model::CheckpointBrief;
use crate::state::model::ChurnState;
use crate::state::model::CodeRef;
use crate::state::model::ListTotals;
use crate::state::model::RetrievalState;
use crate::state::model::RetrievalStatus;
use crate::state::model::State;

/// How many of the newest observations and evidence records the scene shows.
pub const LATEST_LIMIT: usize = 5;

/// A subgoal on the board.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SceneSubgoal {
    /// Id.
    pub id: String,
    /// Title.
    pub title: String,
    /// Status.
    pub status: String,
    /// Detail.
    pub summary: Option<String>,
    /// Whether it is the active subgoal.
    pub active: bool,
}

/// How many invariants have one status.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StatusCount {
    /// The exact status string.
    pub status: String,
    /// How many invariants have it.
    pub count: usize,
}

/// Graph counts and focus.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SceneGraph {
    /// Architecture nodes.
    pub architecture_node_count: usize,
    /// Architecture edges.
    pub architecture_edge_count: usize,
    /// Dataflow nodes.
    pub dataflow_node_count: usize,
    /// Dataflow edges.
    pub dataflow_edge_count: usize,
    /// Links.
    pub link_count: usize,
    /// Frontier nodes.
    pub active_node_ids: Vec<String>,
    /// Frontier edges.
    pub active_edge_ids: Vec<String>,
    /// Open questions on the frontier.
    pub open_question_count: usize,
    /// Open gaps on the frontier.
    pub open_gap_count: usize,
    /// Frontier dirty paths.
    pub dirty_paths: Vec<String>,
    /// The graph checkpoint.
    pub checkpoint_id: Option<String>,
    /// What the graph checkpoint records.
    pub checkpoint_summary: Option<String>,
}

/// The retrieval index in brief.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SceneRetrieval {
    /// The indexed root.
    pub workspace_root: String,
    /// Index status.
    pub status: RetrievalStatus,
    /// Whether chunk search is available.
    pub semantic_available: bool,
    /// Which index.
    pub index_revision: Option<String>,
    /// Files indexed.
    pub indexed_file_count: Option<u32>,
    /// Chunks indexed.
    pub indexed_chunk_count: Option<u32>,
    /// Shards.
    pub shard_count: usize,
    /// Files changed since indexing.
    pub dirty_path_count: usize,
}

/// The investigation checkpoint in brief.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SceneCheckpoint {
    /// What it is and where it stands.
    pub brief: CheckpointBrief,
    /// Open questions.
    pub open_question_count: usize,
    /// Code references.
    pub code_ref_count: usize,
    /// Evidence cited.
    pub evidence_count: usize,
}

/// One of the newest records.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SceneRecord {
    /// Id.
    pub id: String,
    /// Source kind (observations) or kind (evidence).
    pub kind: String,
    /// Status.
    pub status: String,
    /// Summary.
    pub summary: String,
    /// Code references.
    pub code_ref_count: usize,
}

/// A newest-first collection in brief.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SceneRecords {
    /// How many records exist.
    pub total_count: usize,
    /// The newest few.
    pub latest: Vec<SceneRecord>,
}

/// A command that makes sense from here.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum SceneAction {
    /// `epiphany index`.
    Index,
    /// `epiphany retrieve`.
    Retrieve,
    /// `epiphany distill`.
    Distill,
    /// `epiphany context`.
    Context,
    /// `epiphany planning`.
    Planning,
    /// `epiphany graph`.
    Graph,
    /// `epiphany freshness`.
    Freshness,
    /// `epiphany pressure`.
    Pressure,
    /// `epiphany reorient`.
    Reorient,
    /// `epiphany update`.
    Update,
    /// `epiphany propose` (needs a state).
    Propose,
    /// `epiphany promote` (needs a state).
    Promote,
}

impl SceneAction {
    /// The snake_case name, as in JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            SceneAction::Index => "index",
            SceneAction::Retrieve => "retrieve",
            SceneAction::Distill => "distill",
            SceneAction::Context => "context",
            SceneAction::Planning => "planning",
            SceneAction::Graph => "graph",
            SceneAction::Freshness => "freshness",
            SceneAction::Pressure => "pressure",
            SceneAction::Reorient => "reorient",
            SceneAction::Update => "update",
            SceneAction::Propose => "propose",
            SceneAction::Promote => "promote",
        }
    }
}

/// The wall board.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Scene {
    /// Whether a state exists.
    pub state_status: StateStatus,
    /// Its revision.
    pub revision: Option<u64>,
    /// The objective.
    pub objective: Option<String>,
    /// The active subgoal, when its id resolves.
    pub active_subgoal: Option<SceneSubgoal>,
    /// Every subgoal.
    pub subgoals: Vec<SceneSubgoal>,
    /// Invariants grouped by status, statuses ascending.
    pub invariant_status_counts: Vec<StatusCount>,
    /// Graph counts and focus.
    pub graph: SceneGraph,
    /// The retrieval index.
    pub retrieval: Option<SceneRetrieval>,
    /// Whether the work tree still matches the map, as `freshness`, `reorient` and `prompt`
    /// say it (absent before the first write).
    pub staleness: Option<Staleness>,
    /// The investigation checkpoint.
    pub investigation_checkpoint: Option<SceneCheckpoint>,
    /// Observations.
    pub observations: SceneRecords,
    /// Evidence.
    pub evidence: SceneRecords,
    /// Churn, copied.
    pub churn: Option<ChurnState>,
    /// Fields and records that concurrent writes from merged branches set differently.
    pub conflicts: Vec<String>,
    /// Commands that make sense next.
    pub available_actions: Vec<SceneAction>,
}

/// Builds the scene. `totals` counts the observations and evidence records (the state's lists
/// need hold only the newest [`LATEST_LIMIT`]); `retrieval` is the index summary computed now
/// (the state keeps none); `staleness` is the one freshness reading every view shows.
pub fn scene(
    state: Option<&State>,
    totals: ListTotals,
    retrieval: Option<&RetrievalState>,
    staleness: Option<&Staleness>,
) -> Scene {
    let available_actions = available_actions(state.is_some());
    let Some(state) = state else {
        return Scene {
            state_status: StateStatus::Missing,
            revision: None,
            objective: None,
            active_subgoal: None,
            subgoals: Vec::new(),
            invariant_status_counts: Vec::new(),
            graph: SceneGraph::default(),
            retrieval: None,
            staleness: None,
            investigation_checkpoint: None,
            observations: SceneRecords::default(),
            evidence: SceneRecords::default(),
            churn: None,
            conflicts: Vec::new(),
            available_actions,
        };
    };
    let subgoals = scene_subgoals(state);
    Scene {
        state_status: StateStatus::Ready,
        revision: Some(state.revision),
        objective: state.objective.clone(),
        active_subgoal: subgoals.iter().find(|s| s.active).cloned(),
        subgoals,
        invariant_status_counts: invariant_counts(state),
        graph: scene_graph(state),
        retrieval: retrieval.map(scene_retrieval),
        staleness: staleness.cloned(),
        investigation_checkpoint: state.investigation_checkpoint.as_ref().map(|c| {
            SceneCheckpoint {
                brief: c.brief.clone(),
                open_question_count: c.open_questions.len(),
                code_ref_count: c.code_refs.len(),
                evidence_count: c.evidence_ids.len(),
            }
        }),
        observations: SceneRecords {
            total_count: totals.observations,
            latest: current_observations(&state.observations)
                .take(LATEST_LIMIT)
                .map(|o| scene_record(&o.id, &o.source_kind, &o.status, &o.summary, &o.code_refs))
                .collect(),
        },
        evidence: SceneRecords {
            total_count: totals.evidence,
            latest: (state.recent_evidence.iter())
                .take(LATEST_LIMIT)
                .map(|e| scene_record(&e.id, &e.kind, &e.status, &e.summary, &e.code_refs))
                .collect(),
        },
        churn: state.churn.clone(),
        conflicts: state.conflicts.iter().map(|c| c.key.clone()).collect(),
        available_actions,
    }
}

/// Every subgoal, in order, marked when it is the active one.
fn scene_subgoals(state: &State) -> Vec<SceneSubgoal> {
    state
        .subgoals
        .iter()
        .map(|subgoal| SceneSubgoal {
            id: subgoal.id.clone(),
            title: subgoal.title.clone(),
            status: subgoal.status.clone(),
            summary: subgoal.summary.clone(),
            active: state.active_subgoal_id.as_deref() == Some(subgoal.id.as_str()),
        })
        .collect()
}

/// How many invariants have each status, by status.
fn invariant_counts(state: &State) -> Vec<StatusCount> {
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    for invariant in &state.invariants {
        *counts.entry(invariant.status.as_str()).or_default() += 1;
    }
    counts
        .into_iter()
        .map(|(status, count)| StatusCount {
            status: status.to_owned(),
            count,
        })
        .collect()
}

/// The graphs' counts, the frontier and the graph checkpoint.
fn scene_graph(state: &State) -> SceneGraph {
    let frontier = state.graph_frontier.clone().unwrap_or_default();
    SceneGraph {
        architecture_node_count: state.graphs.architecture.nodes.len(),
        architecture_edge_count: state.graphs.architecture.edges.len(),
        dataflow_node_count: state.graphs.dataflow.nodes.len(),
        dataflow_edge_count: state.graphs.dataflow.edges.len(),
        link_count: state.graphs.links.len(),
        open_question_count: frontier.open_question_ids.len(),
        open_gap_count: frontier.open_gap_ids.len(),
        active_node_ids: frontier.active_node_ids,
        active_edge_ids: frontier.active_edge_ids,
        dirty_paths: frontier.dirty_paths,
        checkpoint_id: state
            .graph_checkpoint
            .as_ref()
            .map(|c| c.checkpoint_id.clone()),
        checkpoint_summary: state
            .graph_checkpoint
            .as_ref()
            .and_then(|c| c.summary.clone()),
    }
}

/// The retrieval summary as the scene shows it: counts instead of lists.
fn scene_retrieval(r: &RetrievalState) -> SceneRetrieval {
    SceneRetrieval {
        workspace_root: r.workspace_root.clone(),
        status: r.status,
        semantic_available: r.semantic_available,
        index_revision: r.index_revision.clone(),
        indexed_file_count: r.index.indexed_file_count,
        indexed_chunk_count: r.index.indexed_chunk_count,
        shard_count: r.shards.len(),
        dirty_path_count: r.dirty_paths.len(),
    }
}

/// One observation or evidence record as the scene lists it.
fn scene_record(
    id: &str,
    kind: &str,
    status: &str,
    summary: &str,
    refs: &[CodeRef],
) -> SceneRecord {
    SceneRecord {
        id: id.to_owned(),
        kind: kind.to_owned(),
        status: status.to_owned(),
        summary: summary.to_owned(),
        code_ref_count: refs.len(),
    }
}

/// The commands this CLI offers, in the original order; drafting from and gating into an
/// existing state only when there is one.
fn available_actions(has_state: bool) -> Vec<SceneAction> {
    let mut actions = vec![
        SceneAction::Index,
        SceneAction::Retrieve,
        SceneAction::Distill,
        SceneAction::Context,
        SceneAction::Planning,
        SceneAction::Graph,
        SceneAction::Freshness,
        SceneAction::Pressure,
        SceneAction::Reorient,
        SceneAction::Update,
    ];
    if has_state {
        actions.extend([SceneAction::Propose, SceneAction::Promote]);
    }
    actions
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::model::Invariant;
    use crate::state::model::Observation;
    use crate::state::model::Subgoal;

    #[test]
    fn missing_state_still_offers_actions_but_not_propose() {
        let scene = scene(None, ListTotals::default(), None, None);
        assert_eq!(scene.state_status, StateStatus::Missing);
        assert!(scene.available_actions.contains(&SceneAction::Context));
        assert!(!scene.available_actions.contains(&SceneAction::Propose));
        assert_eq!(scene.observations.total_count, 0);
    }

    #[test]
    fn ready_state_counts_and_latest_records() {
        let invariant = |id: &str, status: &str| Invariant {
            id: id.into(),
            description: "d".into(),
            status: status.into(),
            rationale: None,
        };
        let state = State {
            revision: 3,
            active_subgoal_id: Some("s2".into()),
            subgoals: vec![
                Subgoal {
                    id: "s1".into(),
                    title: "one".into(),
                    status: "done".into(),
                    summary: None,
                },
                Subgoal {
                    id: "s2".into(),
                    title: "two".into(),
                    status: "active".into(),
                    summary: None,
                },
            ],
            invariants: vec![
                invariant("i1", "ok"),
                invariant("i2", "at-risk"),
                invariant("i3", "ok"),
            ],
            observations: (0..7)
                .map(|i| Observation {
                    id: format!("o{i}"),
                    summary: "s".into(),
                    source_kind: "test".into(),
                    status: "ok".into(),
                    code_refs: vec![],
                    evidence_ids: vec![],
                    supersedes: None,
                })
                .collect(),
            ..State::default()
        };
        let scene = scene(Some(&state), ListTotals::of(&state), None, None);
        assert_eq!(scene.active_subgoal.map(|s| s.id), Some("s2".to_owned()));
        assert_eq!(
            scene.invariant_status_counts,
            vec![
                StatusCount {
                    status: "at-risk".into(),
                    count: 1
                },
                StatusCount {
                    status: "ok".into(),
                    count: 2
                },
            ]
        );
        assert_eq!(scene.observations.total_count, 7);
        assert_eq!(scene.observations.latest.len(), LATEST_LIMIT);
        assert_eq!(scene.observations.latest[0].id, "o0");
        assert!(scene.available_actions.ends_with(&[
            SceneAction::Update,
            SceneAction::Propose,
            SceneAction::Promote
        ]));
    }
}
