//! The churn judgment a proposal carries: how much the map moved, from the match counts and
//! the selection, merged with the stored churn state.

use super::anchor::MatchCounts;
use crate::policy::churn::DiffPressure;
use crate::policy::churn::diff_pressure_rank;
use crate::state::model::ChurnState;

/// The churn judgment (docs/drafting.md#churn-judgment).
pub(super) fn judge_churn(
    existing: Option<&ChurnState>,
    counts: &MatchCounts,
    touched: usize,
    selected: usize,
    selection_summary: &str,
) -> ChurnState {
    let reused = counts.reused();
    let created = counts.created;
    let mixed = reused > 0 && created > 0;
    let broadening = counts.same_path > 0 || counts.semantic > 0;
    let unexplained = existing
        .and_then(|churn| churn.unexplained_writes)
        .is_some_and(|writes| writes > 0);
    let understanding_status = match (reused > 0, created > 0) {
        (true, false) => "proposal_refines_map",
        (false, true) => "proposal_expands_map",
        (true, true) => "proposal_updates_map",
        (false, false) => "proposal_ready",
    };
    let graph_freshness = if mixed {
        "proposal-updated"
    } else if created > 0 {
        "proposal-expanded"
    } else if counts.semantic > 0 {
        "proposal-semantically-anchored"
    } else if counts.same_path > 0 {
        "proposal-broadened"
    } else if reused > 0 {
        "proposal-refined"
    } else {
        "proposal"
    };
    let proposal_pressure = if created > 1 || mixed || touched > 2 || selected > 3 || unexplained {
        DiffPressure::High
    } else if created > 0 || broadening || touched > 1 || selected > 1 {
        DiffPressure::Medium
    } else {
        DiffPressure::Low
    };
    let existing_pressure = existing
        .map(|churn| churn.diff_pressure.trim())
        .filter(|pressure| !pressure.is_empty())
        .unwrap_or(DiffPressure::Low.as_str());
    let diff_pressure = if diff_pressure_rank(existing_pressure) >= proposal_pressure as u8 {
        existing_pressure
    } else {
        proposal_pressure.as_str()
    };
    let parts: Vec<String> = [
        (counts.exact, "exact-ref refinement(s)"),
        (counts.same_path, "same-path broadening reuse(s)"),
        (counts.deterministic, "deterministic-node reuse(s)"),
        (counts.semantic, "semantic unanchored-node reuse(s)"),
        (created, "new candidate node(s)"),
    ]
    .into_iter()
    .filter(|&(count, _)| count > 0)
    .map(|(count, what)| format!("{count} {what}"))
    .collect();
    let parts = if parts.is_empty() {
        "no graph node delta".to_owned()
    } else {
        parts.join(", ")
    };
    ChurnState {
        understanding_status: understanding_status.into(),
        diff_pressure: diff_pressure.into(),
        graph_freshness: Some(graph_freshness.into()),
        warning: Some(format!(
            "Map/churn proposal derived from {selection_summary}; delta judgment: {parts}; \
             {touched} touched path(s), {selected} selected observation(s); promote only after \
             verifier acceptance."
        )),
        unexplained_writes: existing.and_then(|churn| churn.unexplained_writes),
    }
}
