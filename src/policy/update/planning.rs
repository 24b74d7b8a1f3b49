//! The planning rules of a write (docs/writes.md#planning-rules): required fields of captures,
//! backlog items, roadmap streams and objective drafts, unique ids, and references that resolve
//! within the planning state.

use std::collections::HashSet;

use crate::policy::structure::Reasons;
use crate::policy::text::is_blank;
use crate::state::model::PlanningSourceRef;
use crate::state::model::PlanningState;

fn check_source_ref(reasons: &mut Reasons, label: &str, source: &PlanningSourceRef) {
    reasons.require(&format!("{label}.kind"), &source.kind);
    if source.kind == "github_issue" {
        if source.repo.as_deref().is_none_or(is_blank) {
            reasons.push(format!("{label}.repo is required for github_issue sources"));
        }
        if source.issue_number.is_none() {
            reasons.push(format!(
                "{label}.issue_number is required for github_issue sources"
            ));
        }
    }
}

/// Every reason `planning` breaks the planning rules, appended to `reasons`.
pub(super) fn check_planning(reasons: &mut Reasons, planning: &PlanningState) {
    for capture in &planning.captures {
        reasons.require_fields(
            "planning.captures",
            &[
                ("id", &capture.id),
                ("title", &capture.title),
                ("confidence", &capture.confidence),
                ("status", &capture.status),
            ],
        );
        check_source_ref(reasons, "planning.captures.source", &capture.source);
    }
    reasons.no_repeats(
        "duplicate planning capture id",
        planning.captures.iter().map(|c| c.id.as_str()),
    );

    for item in &planning.backlog_items {
        reasons.require_fields(
            "planning.backlog_items",
            &[
                ("id", &item.id),
                ("title", &item.title),
                ("kind", &item.kind),
                ("summary", &item.summary),
                ("status", &item.status),
                ("horizon", &item.horizon),
                ("priority.value", &item.priority.value),
                ("priority.rationale", &item.priority.rationale),
                ("confidence", &item.confidence),
                ("product_area", &item.product_area),
            ],
        );
        for (index, source) in item.source_refs.iter().enumerate() {
            check_source_ref(
                reasons,
                &format!("planning.backlog_items.source_refs[{index}]"),
                source,
            );
        }
    }
    reasons.no_repeats(
        "duplicate planning backlog item id",
        planning.backlog_items.iter().map(|b| b.id.as_str()),
    );

    let backlog: HashSet<&str> = planning
        .backlog_items
        .iter()
        .map(|b| b.id.as_str())
        .collect();
    for stream in &planning.roadmap_streams {
        reasons.require_fields(
            "planning.roadmap_streams",
            &[
                ("id", &stream.id),
                ("title", &stream.title),
                ("purpose", &stream.purpose),
                ("status", &stream.status),
            ],
        );
        for item in &stream.item_ids {
            if !backlog.contains(item.as_str()) {
                reasons.push(format!(
                    "roadmap stream \"{}\" references missing backlog item \"{item}\"",
                    stream.id
                ));
            }
        }
        if let Some(focus) = stream.near_term_focus.as_deref().filter(|f| !is_blank(f))
            && !backlog.contains(focus)
        {
            reasons.push(format!(
                "roadmap stream \"{}\" has missing near_term_focus \"{focus}\"",
                stream.id
            ));
        }
    }
    reasons.no_repeats(
        "duplicate planning roadmap stream id",
        planning.roadmap_streams.iter().map(|s| s.id.as_str()),
    );

    for draft in &planning.objective_drafts {
        reasons.require_fields(
            "planning.objective_drafts",
            &[
                ("id", &draft.id),
                ("title", &draft.title),
                ("summary", &draft.summary),
                ("status", &draft.status),
            ],
        );
        if draft.acceptance_criteria.is_empty() {
            reasons.push(format!(
                "objective draft \"{}\" must include at least one acceptance criterion",
                draft.id
            ));
        }
        for item in &draft.source_item_ids {
            if !backlog.contains(item.as_str()) {
                reasons.push(format!(
                    "objective draft \"{}\" references missing source backlog item \"{item}\"",
                    draft.id
                ));
            }
        }
    }
    reasons.no_repeats(
        "duplicate planning objective draft id",
        planning.objective_drafts.iter().map(|d| d.id.as_str()),
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
            reasons.0,
            vec![
                "planning.captures.source.repo is required for github_issue sources",
                "planning.captures.source.issue_number is required for github_issue sources",
                "planning.backlog_items.priority.rationale must not be empty",
                "planning.backlog_items.source_refs[0].kind must not be empty",
                "roadmap stream \"r1\" references missing backlog item \"b9\"",
                "roadmap stream \"r1\" has missing near_term_focus \"b8\"",
                "objective draft \"d1\" must include at least one acceptance criterion",
                "objective draft \"d1\" references missing source backlog item \"b7\"",
            ]
        );
    }
}
