//! The planning rules of a write (docs/writes.md#planning-rules): required fields of captures,
//! backlog items, roadmap streams and objective drafts, unique ids, and references that resolve
//! within the planning state.

use std::collections::HashSet;

use crate::policy::structure::Reasons;
use crate::policy::text::is_blank;
use crate::state::model::BacklogItem;
use crate::state::model::ObjectiveDraft;
use crate::state::model::PlanningCapture;
use crate::state::model::PlanningSourceRef;
use crate::state::model::PlanningState;
use crate::state::model::RoadmapStream;
use crate::state::problem::item;
use crate::state::problem::join;

fn check_source_ref(reasons: &mut Reasons, at: &str, source: &PlanningSourceRef) {
    reasons.require(&join(at, "kind"), &source.kind);
    if source.kind == "github_issue" {
        if source.repo.as_deref().is_none_or(is_blank) {
            reasons.at(join(at, "repo"), "is required for github_issue sources");
        }
        if source.issue_number.is_none() {
            reasons.at(
                join(at, "issue_number"),
                "is required for github_issue sources",
            );
        }
    }
}

/// Every reason `planning` breaks the planning rules, appended to `reasons`.
pub(super) fn check_planning(reasons: &mut Reasons, planning: &PlanningState) {
    check_captures(reasons, &planning.captures);
    check_backlog_items(reasons, &planning.backlog_items);
    let backlog: HashSet<&str> = planning
        .backlog_items
        .iter()
        .map(|b| b.id.as_str())
        .collect();
    check_roadmap_streams(reasons, &planning.roadmap_streams, &backlog);
    check_objective_drafts(reasons, &planning.objective_drafts, &backlog);
}

/// Captures carry their fields and a well-formed source, and repeat no id.
fn check_captures(reasons: &mut Reasons, captures: &[PlanningCapture]) {
    for (index, capture) in captures.iter().enumerate() {
        let at = item("planning.captures", index);
        reasons.require_fields(
            &at,
            &[
                ("id", &capture.id),
                ("title", &capture.title),
                ("confidence", &capture.confidence),
                ("status", &capture.status),
            ],
        );
        check_source_ref(reasons, &join(&at, "source"), &capture.source);
    }
    reasons.no_repeats(
        "planning.captures",
        "planning capture",
        captures.iter().map(|c| c.id.as_str()),
    );
}

/// Backlog items carry their fields and well-formed sources, and repeat no id.
fn check_backlog_items(reasons: &mut Reasons, backlog_items: &[BacklogItem]) {
    for (index, backlog_item) in backlog_items.iter().enumerate() {
        let at = item("planning.backlog_items", index);
        reasons.require_fields(
            &at,
            &[
                ("id", &backlog_item.id),
                ("title", &backlog_item.title),
                ("kind", &backlog_item.kind),
                ("summary", &backlog_item.summary),
                ("status", &backlog_item.status),
                ("horizon", &backlog_item.horizon),
                ("priority.value", &backlog_item.priority.value),
                ("priority.rationale", &backlog_item.priority.rationale),
                ("confidence", &backlog_item.confidence),
                ("product_area", &backlog_item.product_area),
            ],
        );
        for (source_index, source) in backlog_item.source_refs.iter().enumerate() {
            check_source_ref(
                reasons,
                &item(&join(&at, "source_refs"), source_index),
                source,
            );
        }
    }
    reasons.no_repeats(
        "planning.backlog_items",
        "backlog item",
        backlog_items.iter().map(|b| b.id.as_str()),
    );
}

/// Roadmap streams carry their fields, name only items of the `backlog`, and repeat no id.
fn check_roadmap_streams(
    reasons: &mut Reasons,
    streams: &[RoadmapStream],
    backlog: &HashSet<&str>,
) {
    for (index, stream) in streams.iter().enumerate() {
        let at = item("planning.roadmap_streams", index);
        reasons.require_fields(
            &at,
            &[
                ("id", &stream.id),
                ("title", &stream.title),
                ("purpose", &stream.purpose),
                ("status", &stream.status),
            ],
        );
        for (item_index, named) in stream.item_ids.iter().enumerate() {
            if !backlog.contains(named.as_str()) {
                reasons.at(
                    item(&join(&at, "item_ids"), item_index),
                    format!("names missing backlog item \"{named}\""),
                );
            }
        }
        if let Some(focus) = stream.near_term_focus.as_deref().filter(|f| !is_blank(f))
            && !backlog.contains(focus)
        {
            reasons.at(
                join(&at, "near_term_focus"),
                format!("names missing backlog item \"{focus}\""),
            );
        }
    }
    reasons.no_repeats(
        "planning.roadmap_streams",
        "roadmap stream",
        streams.iter().map(|s| s.id.as_str()),
    );
}

/// Objective drafts carry their fields and an acceptance criterion, name only items of the
/// `backlog`, and repeat no id.
fn check_objective_drafts(
    reasons: &mut Reasons,
    drafts: &[ObjectiveDraft],
    backlog: &HashSet<&str>,
) {
    for (index, draft) in drafts.iter().enumerate() {
        let at = item("planning.objective_drafts", index);
        reasons.require_fields(
            &at,
            &[
                ("id", &draft.id),
                ("title", &draft.title),
                ("summary", &draft.summary),
                ("status", &draft.status),
            ],
        );
        if draft.acceptance_criteria.is_empty() {
            reasons.at(
                join(&at, "acceptance_criteria"),
                "must include at least one acceptance criterion",
            );
        }
        for (item_index, named) in draft.source_item_ids.iter().enumerate() {
            if !backlog.contains(named.as_str()) {
                reasons.at(
                    item(&join(&at, "source_item_ids"), item_index),
                    format!("names missing backlog item \"{named}\""),
                );
            }
        }
    }
    reasons.no_repeats(
        "planning.objective_drafts",
        "objective draft",
        drafts.iter().map(|d| d.id.as_str()),
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::model::BacklogItem;
    use crate::state::model::ObjectiveDraft;
    use crate::state::model::PlanningCapture;
    use crate::state::model::PlanningPriority;
    use crate::state::model::RoadmapStream;

    #[test]
    fn planning_rules() {
        let priority = PlanningPriority {
            value: "p1".into(),
            rationale: "".into(),
            impact: None,
            urgency: None,
            confidence: None,
            effort: None,
            unblocks: vec![],
            blocks: vec![],
            reason: None,
        };
        let planning = PlanningState {
            workspace_root: None,
            captures: vec![PlanningCapture {
                id: "c1".into(),
                title: "t".into(),
                confidence: "high".into(),
                status: "new".into(),
                source: PlanningSourceRef {
                    kind: "github_issue".into(),
                    ..Default::default()
                },
                body: None,
                speaker: None,
                created_at: None,
                updated_at: None,
                tags: vec![],
            }],
            backlog_items: vec![BacklogItem {
                id: "b1".into(),
                title: "t".into(),
                kind: "feature".into(),
                summary: "s".into(),
                status: "ready".into(),
                horizon: "now".into(),
                priority,
                confidence: "high".into(),
                product_area: "cli".into(),
                lane_hints: vec![],
                dependencies: vec![],
                blockers: vec![],
                acceptance_sketch: vec![],
                evidence_refs: vec![],
                source_refs: vec![PlanningSourceRef {
                    kind: "".into(),
                    ..Default::default()
                }],
                duplicate_of: None,
                updated_at: None,
            }],
            roadmap_streams: vec![RoadmapStream {
                id: "r1".into(),
                title: "t".into(),
                purpose: "p".into(),
                status: "active".into(),
                item_ids: vec!["b1".into(), "b9".into()],
                near_term_focus: Some("b8".into()),
                review_cadence: None,
                blocked_by: vec![],
            }],
            objective_drafts: vec![ObjectiveDraft {
                id: "d1".into(),
                title: "t".into(),
                summary: "s".into(),
                source_item_ids: vec!["b7".into()],
                scope: Default::default(),
                acceptance_criteria: vec![],
                evidence_required: vec![],
                lane_plan: Default::default(),
                dependencies: vec![],
                risks: vec![],
                review_gates: vec![],
                status: "draft".into(),
            }],
        };
        let mut reasons = Reasons(Vec::new());
        check_planning(&mut reasons, &planning);
        assert_eq!(
            reasons
                .0
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>(),
            vec![
                "planning.captures[0].source.repo: is required for github_issue sources",
                "planning.captures[0].source.issue_number: is required for github_issue sources",
                "planning.backlog_items[0].priority.rationale: must not be empty",
                "planning.backlog_items[0].source_refs[0].kind: must not be empty",
                "planning.roadmap_streams[0].item_ids[1]: names missing backlog item \"b9\"",
                "planning.roadmap_streams[0].near_term_focus: names missing backlog item \"b8\"",
                "planning.objective_drafts[0].acceptance_criteria: must include at least one acceptance criterion",
                "planning.objective_drafts[0].source_item_ids[0]: names missing backlog item \"b7\"",
            ]
        );
    }
}
