//! The sections of what the work is for: planning, subgoals, invariants, each to its item
//! limit with an omission line. Must not decide whether a section is cut: `sections` does.

use crate::policy::text::collapse;
use crate::state::model::State;

use super::DRAFT_ACCEPTANCE_LIMIT;
use super::INVARIANT_LIMIT;
use super::PLANNING_LIMIT;
use super::SUBGOAL_LIMIT;
use super::Section;
use super::omission;
use super::record_line;

pub(super) fn planning(state: &State) -> Section {
    let p = &state.planning;
    let mut section = Section::new("## Planning");
    section.line(format!(
        "- Counts: {} captures, {} backlog items, {} roadmap streams, {} objective drafts",
        p.captures.len(),
        p.backlog_items.len(),
        p.roadmap_streams.len(),
        p.objective_drafts.len()
    ));
    section.line(
        "- Planning records are not the active objective until a human explicitly adopts one."
            .to_owned(),
    );
    for draft in p.objective_drafts.iter().take(PLANNING_LIMIT) {
        section.line(format!(
            "- Objective draft {}",
            record_line(&draft.id, &collapse(&draft.status), &collapse(&draft.title))
        ));
        if !draft.acceptance_criteria.is_empty() {
            let criteria: Vec<String> = draft
                .acceptance_criteria
                .iter()
                .take(DRAFT_ACCEPTANCE_LIMIT)
                .map(|c| collapse(c))
                .collect();
            section.line(format!("  acceptance: {}", criteria.join(" | ")));
        }
    }
    omission(
        &mut section,
        "",
        p.objective_drafts.len(),
        PLANNING_LIMIT,
        "objective drafts",
    );
    for item in p.backlog_items.iter().take(PLANNING_LIMIT) {
        section.line(format!(
            "- Backlog {}",
            record_line(
                &item.id,
                &format!(
                    "{} / {} / {}",
                    collapse(&item.status),
                    collapse(&item.priority.value),
                    collapse(&item.horizon)
                ),
                &collapse(&item.title)
            )
        ));
    }
    omission(
        &mut section,
        "",
        p.backlog_items.len(),
        PLANNING_LIMIT,
        "backlog items",
    );
    for capture in p.captures.iter().take(PLANNING_LIMIT) {
        section.line(format!(
            "- Capture {}",
            record_line(
                &capture.id,
                &format!(
                    "{} via {}",
                    collapse(&capture.status),
                    collapse(&capture.source.kind)
                ),
                &collapse(&capture.title)
            )
        ));
    }
    omission(
        &mut section,
        "",
        p.captures.len(),
        PLANNING_LIMIT,
        "captures",
    );
    section
}

pub(super) fn subgoals(state: &State) -> Section {
    let mut section = Section::new("## Subgoals");
    for subgoal in state.subgoals.iter().take(SUBGOAL_LIMIT) {
        let active = if state.active_subgoal_id.as_deref() == Some(subgoal.id.as_str()) {
            "; active"
        } else {
            ""
        };
        section.line(format!(
            "- {}",
            record_line(
                &subgoal.id,
                &format!("{}{active}", collapse(&subgoal.status)),
                &collapse(&subgoal.title)
            )
        ));
        if let Some(summary) = &subgoal.summary {
            section.line(format!("  summary: {}", collapse(summary)));
        }
    }
    omission(
        &mut section,
        "",
        state.subgoals.len(),
        SUBGOAL_LIMIT,
        "subgoals",
    );
    section
}

pub(super) fn invariants(state: &State) -> Section {
    let mut section = Section::new("## Invariants");
    for invariant in state.invariants.iter().take(INVARIANT_LIMIT) {
        section.line(format!(
            "- {}",
            record_line(
                &invariant.id,
                &collapse(&invariant.status),
                &collapse(&invariant.description)
            )
        ));
        if let Some(rationale) = &invariant.rationale {
            section.line(format!("  rationale: {}", collapse(rationale)));
        }
    }
    omission(
        &mut section,
        "",
        state.invariants.len(),
        INVARIANT_LIMIT,
        "invariants",
    );
    section
}
