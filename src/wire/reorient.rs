//! `reorient --json`: the resume-or-regather verdict
//! ([`crate::policy::reorient::plan_reorientation`]).

use serde::Serialize;

use crate::policy::freshness::GraphFreshnessStatus;
use crate::policy::freshness::RetrievalFreshnessStatus;
use crate::policy::freshness::WatcherStatus;
use crate::policy::pressure::PressureLevel;
use crate::policy::projection::StateStatus;
use crate::policy::reorient;
use crate::policy::reorient::CheckpointStatus;
use crate::policy::reorient::ReorientAction;
use crate::policy::reorient::ReorientReason;

/// The verdict.
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct Reorientation {
    /// Whether a state exists.
    pub state_status: StateStatus,
    /// The revision the verdict was reached on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state_revision: Option<u64>,
    /// Resume or regather.
    pub action: ReorientAction,
    /// The checkpoint's standing.
    pub checkpoint_status: CheckpointStatus,
    /// The checkpoint.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checkpoint_id: Option<String>,
    /// Context pressure.
    pub pressure_level: PressureLevel,
    /// Time to checkpoint before compaction.
    pub should_prepare_compaction: bool,
    /// Retrieval freshness (`unavailable` reads as `missing`).
    pub retrieval_status: RetrievalFreshnessStatus,
    /// Graph freshness.
    pub graph_status: GraphFreshnessStatus,
    /// Work-tree changes.
    pub watcher_status: WatcherStatus,
    /// Why, in fixed order.
    pub reasons: Vec<ReorientReason>,
    /// Checkpoint-cited paths dirty in the index or on the frontier.
    pub checkpoint_dirty_paths: Vec<String>,
    /// Checkpoint-cited paths changed since the checkpoint was written.
    pub checkpoint_changed_paths: Vec<String>,
    /// Frontier nodes citing changed files.
    pub active_frontier_node_ids: Vec<String>,
    /// The next step.
    pub next_action: String,
    /// The verdict in a sentence.
    pub note: String,
}

moved!(reorient::Reorientation => Reorientation {
    state_status, state_revision, action, checkpoint_status, checkpoint_id, pressure_level,
    should_prepare_compaction, retrieval_status, graph_status, watcher_status, reasons,
    checkpoint_dirty_paths, checkpoint_changed_paths, active_frontier_node_ids, next_action,
    note,
});
