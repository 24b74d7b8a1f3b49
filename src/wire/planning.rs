//! `planning --json`: the planning view ([`crate::policy::planning::planning_view`]).

use serde::Serialize;

use crate::policy::planning;
use crate::policy::projection::StateStatus;
use crate::state::model::PlanningState;

/// The planning view.
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct PlanningView {
    /// Whether a state exists.
    pub state_status: StateStatus,
    /// Its revision.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state_revision: Option<u64>,
    /// Every planning record.
    pub planning: PlanningState,
    /// Counts.
    pub summary: PlanningSummary,
}

moved!(planning::PlanningView => PlanningView {
    state_status, state_revision, planning, summary: into,
});

/// Counts over the planning records.
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct PlanningSummary {
    /// Captures.
    pub capture_count: usize,
    /// Captures with status `new` or `inbox`.
    pub pending_capture_count: usize,
    /// Captures imported from GitHub issues.
    pub github_issue_capture_count: usize,
    /// Backlog items.
    pub backlog_item_count: usize,
    /// Backlog items with status `ready`.
    pub ready_backlog_item_count: usize,
    /// Roadmap streams.
    pub roadmap_stream_count: usize,
    /// Objective drafts.
    pub objective_draft_count: usize,
    /// Objective drafts with status `draft`.
    pub draft_objective_count: usize,
    /// The active objective, which planning never changes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub active_objective: Option<String>,
    /// What it means.
    pub note: String,
}

moved!(planning::PlanningSummary => PlanningSummary {
    capture_count, pending_capture_count, github_issue_capture_count, backlog_item_count,
    ready_backlog_item_count, roadmap_stream_count, objective_draft_count,
    draft_objective_count, active_objective, note,
});
