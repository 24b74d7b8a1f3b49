//! `scene --json`: the wall board ([`crate::policy::scene::scene`]).

use serde::Serialize;

use crate::policy::projection::StateStatus;
use crate::policy::scene;
use crate::policy::scene::SceneAction;
use crate::state::model::CheckpointBrief;
use crate::state::model::ChurnState;
use crate::state::model::RetrievalStatus;
use crate::wire::freshness::Staleness;

/// The wall board.
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct Scene {
    /// Whether a state exists.
    pub state_status: StateStatus,
    /// Its revision.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revision: Option<u64>,
    /// The objective.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub objective: Option<String>,
    /// The active subgoal, when its id resolves.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub active_subgoal: Option<SceneSubgoal>,
    /// Every subgoal.
    pub subgoals: Vec<SceneSubgoal>,
    /// Invariants grouped by status, statuses ascending.
    pub invariant_status_counts: Vec<StatusCount>,
    /// Graph counts and focus.
    pub graph: SceneGraph,
    /// The retrieval index.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retrieval: Option<SceneRetrieval>,
    /// Whether the work tree still matches the map, as `freshness`, `reorient` and `prompt`
    /// say it (absent before the first write).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub staleness: Option<Staleness>,
    /// The investigation checkpoint.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub investigation_checkpoint: Option<SceneCheckpoint>,
    /// Observations.
    pub observations: SceneRecords,
    /// Evidence.
    pub evidence: SceneRecords,
    /// Churn, copied.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub churn: Option<ChurnState>,
    /// Fields and records that concurrent writes from merged branches set differently.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conflicts: Vec<String>,
    /// Commands that make sense next.
    pub available_actions: Vec<SceneAction>,
}

moved!(scene::Scene => Scene {
    state_status, revision, objective, active_subgoal: map, subgoals: each,
    invariant_status_counts: each, graph: into, retrieval: map, staleness: map,
    investigation_checkpoint: map, observations: into, evidence: into, churn, conflicts,
    available_actions,
});

/// A subgoal on the board.
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct SceneSubgoal {
    /// Id.
    pub id: String,
    /// Title.
    pub title: String,
    /// Status.
    pub status: String,
    /// Detail.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<String>,
    /// Whether it is the active subgoal.
    pub active: bool,
}

moved!(scene::SceneSubgoal => SceneSubgoal {
    id, title, status, summary, active,
});

/// How many invariants have one status.
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct StatusCount {
    /// The exact status string.
    pub status: String,
    /// How many invariants have it.
    pub count: usize,
}

moved!(scene::StatusCount => StatusCount {
    status, count,
});

/// Graph counts and focus.
#[derive(Debug, Serialize, schemars::JsonSchema)]
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
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checkpoint_id: Option<String>,
    /// What the graph checkpoint records.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checkpoint_summary: Option<String>,
}

moved!(scene::SceneGraph => SceneGraph {
    architecture_node_count, architecture_edge_count, dataflow_node_count, dataflow_edge_count,
    link_count, active_node_ids, active_edge_ids, open_question_count, open_gap_count,
    dirty_paths, checkpoint_id, checkpoint_summary,
});

/// The retrieval index in brief.
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct SceneRetrieval {
    /// The indexed root.
    pub workspace_root: String,
    /// Index status.
    pub status: RetrievalStatus,
    /// Whether chunk search is available.
    pub semantic_available: bool,
    /// Which index.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub index_revision: Option<String>,
    /// Files indexed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub indexed_file_count: Option<u32>,
    /// Chunks indexed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub indexed_chunk_count: Option<u32>,
    /// Shards.
    pub shard_count: usize,
    /// Files changed since indexing.
    pub dirty_path_count: usize,
}

moved!(scene::SceneRetrieval => SceneRetrieval {
    workspace_root, status, semantic_available, index_revision, indexed_file_count,
    indexed_chunk_count, shard_count, dirty_path_count,
});

/// The investigation checkpoint in brief.
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct SceneCheckpoint {
    /// What it is and where it stands.
    #[serde(flatten)]
    pub brief: CheckpointBrief,
    /// Open questions.
    pub open_question_count: usize,
    /// Code references.
    pub code_ref_count: usize,
    /// Evidence cited.
    pub evidence_count: usize,
}

moved!(scene::SceneCheckpoint => SceneCheckpoint {
    brief, open_question_count, code_ref_count, evidence_count,
});

/// A newest-first collection in brief.
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct SceneRecords {
    /// How many records exist.
    pub total_count: usize,
    /// The newest few.
    pub latest: Vec<SceneRecord>,
}

moved!(scene::SceneRecords => SceneRecords {
    total_count, latest: each,
});

/// One of the newest records.
#[derive(Debug, Serialize, schemars::JsonSchema)]
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

moved!(scene::SceneRecord => SceneRecord {
    id, kind, status, summary, code_ref_count,
});
