//! The planning view (docs/projections.md#planning): captures, backlog, roadmap streams and
//! objective drafts with their counts, kept visibly apart from the active objective.
//!
//! Never adopts a draft and never touches the objective; every status comparison is exact.

use crate::policy::projection::StateStatus;
use crate::state::model::PlanningState;
use crate::state::model::State;

/// Counts over the planning records.
#[derive(Debug, Clone, PartialEq, Eq)]
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
    pub active_objective: Option<String>,
    /// What it means.
    pub note: String,
}

/// The planning view.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlanningView {
    /// Whether a state exists.
    pub state_status: StateStatus,
    /// Its revision.
    pub state_revision: Option<u64>,
    /// Every planning record.
    pub planning: PlanningState,
    /// Counts.
    pub summary: PlanningSummary,
}

/// Builds the planning view.
pub fn planning_view(state: Option<&State>) -> PlanningView {
    let planning = state.map(|s| s.planning.clone()).unwrap_or_default();
    let note = match state {
        None => "no state yet, so no planning records",
        Some(_) if planning.is_empty() => "no planning records",
        Some(_) => "planning only: nothing here is the active objective until a human adopts it",
    };
    let summary = PlanningSummary {
        capture_count: planning.captures.len(),
        pending_capture_count: planning
            .captures
            .iter()
            .filter(|c| c.status == "new" || c.status == "inbox")
            .count(),
        github_issue_capture_count: planning
            .captures
            .iter()
            .filter(|c| c.source.kind == "github_issue")
            .count(),
        backlog_item_count: planning.backlog_items.len(),
        ready_backlog_item_count: planning
            .backlog_items
            .iter()
            .filter(|b| b.status == "ready")
            .count(),
        roadmap_stream_count: planning.roadmap_streams.len(),
        objective_draft_count: planning.objective_drafts.len(),
        draft_objective_count: planning
            .objective_drafts
            .iter()
            .filter(|d| d.status == "draft")
            .count(),
        active_objective: state.and_then(|s| s.objective.clone()),
        note: note.to_owned(),
    };
    PlanningView {
        state_status: StateStatus::of(state),
        state_revision: state.map(|s| s.revision),
        planning,
        summary,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::model::PlanningCapture;
    use crate::state::model::PlanningSourceRef;

    fn capture(id: &str, status: &str, kind: &str) -> PlanningCapture {
        PlanningCapture {
            id: id.into(),
            title: "t".into(),
            confidence: "high".into(),
            status: status.into(),
            source: PlanningSourceRef {
                kind: kind.into(),
                ..PlanningSourceRef::default()
            },
            body: None,
            speaker: None,
            created_at: None,
            updated_at: None,
            tags: vec![],
        }
    }

    #[test]
    fn counts_use_exact_statuses_and_keep_the_objective_apart() {
        let mut state = State {
            objective: Some("ship".into()),
            ..State::default()
        };
        state.planning.captures = vec![
            capture("a", "new", "github_issue"),
            capture("b", "inbox", "chat"),
            capture("c", "New", "chat"),
        ];
        let view = planning_view(Some(&state));
        assert_eq!(view.summary.capture_count, 3);
        assert_eq!(view.summary.pending_capture_count, 2);
        assert_eq!(view.summary.github_issue_capture_count, 1);
        assert_eq!(view.summary.active_objective.as_deref(), Some("ship"));
        assert!(view.summary.note.starts_with("planning only"));
    }

    #[test]
    fn missing_state_is_an_empty_view() {
        let view = planning_view(None);
        assert_eq!(view.state_status, StateStatus::Missing);
        assert!(view.planning.is_empty());
        assert_eq!(view.summary.capture_count, 0);
    }
}
