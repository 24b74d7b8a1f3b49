//! `promote` (docs/writes.md#promote-gate): the verifier gate in front of the one write path.
//!
//! Owns every promotion rule, evaluated in order with all reasons collected, the token-aware
//! strong verifier kinds, the verifier record built from command-line fields, and what an
//! accepted promotion hands to `update`: the patch with the verifier appended last to its
//! evidence, and the changed fields to report. The gate sees only the patch and the verifier,
//! never the stored state, and it writes nothing: the caller applies an accepted promotion
//! through the same path as `update`, which may still refuse it (revision, stored ids).
//! Reasons keep the specification's wording, including its `verifierEvidence.<field>` labels.

use std::collections::HashSet;

use crate::policy::churn::DiffPressure;
use crate::policy::churn::diff_pressure_rank;
use crate::policy::records::check_citations;
use crate::policy::records::require_evidence_fields;
use crate::policy::records::require_observation_fields;
use crate::policy::structure::Reasons;
use crate::policy::structure::Replacements;
use crate::policy::structure::structural_errors;
use crate::policy::text::fresh_key;
use crate::policy::text::hex12;
use crate::policy::text::is_accepting_status;
use crate::policy::text::is_blank;
use crate::state::fields::ChangedField;
use crate::state::model::ChurnState;
use crate::state::model::EvidenceRecord;
use crate::state::patch::Patch;
use crate::state::problem::Problem;
use crate::state::problem::item;

/// Verifier-kind tokens strong enough to vouch for a risky churn delta.
pub const STRONG_VERIFIER_TOKENS: [&str; 6] = [
    "verification",
    "verifier",
    "test",
    "tests",
    "smoke",
    "review",
];

/// Freshness labels that make a churn delta risky whatever its pressure.
const RISKY_FRESHNESS: [&str; 4] = ["broadened", "expanded", "semantic", "updated"];

/// An accepted promotion, ready for the write path.
#[derive(Debug, Clone, PartialEq)]
pub struct Promotion {
    /// The patch with the verifier record appended at the end of its evidence, and the
    /// frontier dirty paths the verifier covered settled.
    pub patch: Patch,
    /// The original patch's changed fields, with `evidence` added at the end when missing.
    pub changed_fields: Vec<ChangedField>,
    /// The frontier dirty paths the verifier covered, cleared from the patch.
    pub settled_paths: Vec<String>,
}

/// The graph-freshness label a promotion writes when it settled every dirty path and nothing
/// else is open.
pub const SETTLED_FRESHNESS: &str = "fresh";

/// Promotion settles what it verified. The verifier covers the paths its own code refs cite;
/// a verifier that cites none vouches for the patch it accepts, so it covers the paths the
/// patch's observations cite. Those paths leave the patch's frontier `dirty_paths`; when that
/// settles something and leaves no dirty path, open question or gap, the patch's churn
/// `graph_freshness` becomes `fresh`. Dirty paths the verifier did not cover stay, and the
/// graph stays stale until they are settled. Returns the paths settled.
pub fn settle_verified(patch: &mut Patch, verifier: &EvidenceRecord) -> Vec<String> {
    let covered: HashSet<String> = if verifier.code_refs.is_empty() {
        patch
            .observations
            .iter()
            .flat_map(|o| &o.code_refs)
            .map(|r| fresh_key(&r.path, None))
            .collect()
    } else {
        verifier
            .code_refs
            .iter()
            .map(|r| fresh_key(&r.path, None))
            .collect()
    };
    let Some(frontier) = patch.graph_frontier.as_mut() else {
        return Vec::new();
    };
    let (settled, open): (Vec<String>, Vec<String>) = std::mem::take(&mut frontier.dirty_paths)
        .into_iter()
        .partition(|path| covered.contains(&fresh_key(path, None)));
    frontier.dirty_paths = open;
    let nothing_open = frontier.dirty_paths.is_empty()
        && frontier.open_question_ids.is_empty()
        && frontier.open_gap_ids.is_empty();
    if !settled.is_empty()
        && nothing_open
        && let Some(churn) = patch.churn.as_mut()
    {
        churn.graph_freshness = Some(SETTLED_FRESHNESS.to_owned());
    }
    settled
}

/// Gates `patch` with `verifier` (docs/writes.md#promote-gate) and settles what it verified
/// (docs/writes.md#settling-verified-paths): every reason it is refused, or the promotion to
/// apply.
pub fn promote(patch: Patch, verifier: EvidenceRecord) -> Result<Promotion, Vec<Problem>> {
    let reasons = evaluate_promotion(&patch, &verifier);
    if !reasons.is_empty() {
        return Err(reasons);
    }
    let mut changed_fields = patch.changed_fields();
    if !changed_fields.contains(&ChangedField::Evidence) {
        changed_fields.push(ChangedField::Evidence);
    }
    let mut patch = patch;
    let settled_paths = settle_verified(&mut patch, &verifier);
    patch.evidence.push(verifier);
    Ok(Promotion {
        patch,
        changed_fields,
        settled_paths,
    })
}

/// Every rule of the gate, in order (docs/writes.md#promote-gate); empty means accepted. Each
/// problem's path is in the patch, or under `verifierEvidence` for the verifier record.
pub fn evaluate_promotion(patch: &Patch, verifier: &EvidenceRecord) -> Vec<Problem> {
    let mut reasons = Reasons::default();
    let replaces = patch.has_state_replacements();
    if !replaces && patch.observations.is_empty() && patch.evidence.is_empty() {
        reasons.at("", "promotion patch must contain at least one mutation");
    }
    if replaces && patch.observations.is_empty() {
        reasons.at(
            "observations",
            "state replacement promotions must include at least one observation",
        );
    }
    if replaces && patch.evidence.is_empty() {
        reasons.at(
            "evidence",
            "state replacement promotions must include at least one patch evidence record",
        );
    }

    reasons.require_fields(
        "verifierEvidence",
        &[
            ("id", &verifier.id),
            ("kind", &verifier.kind),
            ("status", &verifier.status),
            ("summary", &verifier.summary),
        ],
    );
    if !is_accepting_status(&verifier.status) {
        reasons.at(
            "verifierEvidence.status",
            format!("must be accepting, got \"{}\"", verifier.status),
        );
    }

    let mut evidence_ids: HashSet<&str> = HashSet::from([verifier.id.as_str()]);
    for (index, evidence) in patch.evidence.iter().enumerate() {
        let at = item("evidence", index);
        require_evidence_fields(&mut reasons, &at, evidence);
        if !is_blank(&evidence.id) && !evidence_ids.insert(&evidence.id) {
            reasons.at(
                format!("{at}.id"),
                format!("duplicate evidence id \"{}\"", evidence.id),
            );
        }
    }

    let mut observation_ids = HashSet::new();
    for (index, observation) in patch.observations.iter().enumerate() {
        let at = item("observations", index);
        let id = &observation.id;
        require_observation_fields(&mut reasons, &at, observation);
        check_citations(&mut reasons, &at, observation, &|cited| {
            evidence_ids.contains(cited)
        });
        if !is_blank(id) && !observation_ids.insert(id.as_str()) {
            reasons.at(
                format!("{at}.id"),
                format!("duplicate observation id \"{id}\""),
            );
        }
    }

    let has_evidence = |id: &str| evidence_ids.contains(id);
    reasons.0.extend(structural_errors(&Replacements {
        active_subgoal_id: patch.active_subgoal_id.as_deref(),
        subgoals: patch.subgoals.as_deref(),
        invariants: patch.invariants.as_deref(),
        graphs: patch.graphs.as_deref(),
        graph_frontier: patch.graph_frontier.as_deref(),
        graph_checkpoint: patch.graph_checkpoint.as_deref(),
        investigation_checkpoint: patch.investigation_checkpoint.as_deref(),
        available_evidence_ids: Some(&has_evidence),
        churn: patch.churn.as_deref(),
    }));

    if let Some(churn) = patch.churn.as_deref().filter(|churn| is_risky(churn)) {
        if churn.warning.as_deref().is_none_or(is_blank) {
            reasons.at(
                "churn.warning",
                "medium/high churn promotions must include a warning explaining the delta",
            );
        }
        if !is_strong_verifier_kind(&verifier.kind) {
            reasons.at(
                "verifierEvidence.kind",
                format!(
                    "medium/high churn promotions require a verification/test/smoke/review \
                     verifier, got \"{}\"",
                    verifier.kind
                ),
            );
        }
    }
    reasons.0
}

/// A churn delta is risky when its pressure is medium or more, or its freshness label says the
/// map was broadened, expanded, semantically anchored or updated.
fn is_risky(churn: &ChurnState) -> bool {
    let freshness = churn
        .graph_freshness
        .as_deref()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    diff_pressure_rank(&churn.diff_pressure) >= DiffPressure::Medium as u8
        || RISKY_FRESHNESS
            .iter()
            .any(|label| freshness.contains(label))
}

/// Whether a verifier kind is strong: one of its whole tokens (split on anything not ASCII
/// alphanumeric, lowercased) is in [`STRONG_VERIFIER_TOKENS`]. `smoke-test` is strong,
/// `contest` is not.
pub fn is_strong_verifier_kind(kind: &str) -> bool {
    kind.split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|token| !token.is_empty())
        .any(|token| STRONG_VERIFIER_TOKENS.contains(&token.to_ascii_lowercase().as_str()))
}

/// The verifier record for command-line fields. Without an id, the id is
/// `ev-verifier-<hex12>` of kind, status, summary and the patch, so the same verdict on the
/// same patch always gets the same id.
pub fn verifier_record(
    kind: &str,
    status: &str,
    summary: &str,
    id: Option<&str>,
    patch: &Patch,
) -> EvidenceRecord {
    let id = id.map(str::to_owned).unwrap_or_else(|| {
        let mut bytes = [kind, status, summary].join("\0").into_bytes();
        bytes.push(0);
        // A patch of plain strings, numbers and lists always serializes.
        bytes.extend(serde_json::to_vec(patch).unwrap_or_default());
        format!("ev-verifier-{}", hex12(&bytes))
    });
    EvidenceRecord {
        id,
        kind: kind.to_owned(),
        status: status.to_owned(),
        summary: summary.to_owned(),
        code_refs: Vec::new(),
    }
}

#[cfg(test)]
mod settle_tests {
    use super::*;
    use crate::state::model::CodeRef;
    use crate::state::model::GraphFrontier;
    use crate::state::model::Observation;

    fn patch(dirty: &[&str], questions: &[&str]) -> Patch {
        Patch {
            graph_frontier: Some(Box::new(GraphFrontier {
                dirty_paths: dirty.iter().map(|p| (*p).to_owned()).collect(),
                open_question_ids: questions.iter().map(|q| (*q).to_owned()).collect(),
                ..GraphFrontier::default()
            })),
            observations: vec![Observation {
                id: "o".into(),
                summary: "s".into(),
                source_kind: "test".into(),
                status: "ok".into(),
                code_refs: vec![CodeRef::to_path("src/a.rs")],
                evidence_ids: vec!["e".into()],
                supersedes: None,
            }],
            churn: Some(Box::new(ChurnState {
                understanding_status: "proposal_expands_map".into(),
                diff_pressure: "medium".into(),
                graph_freshness: Some("proposal-expanded".into()),
                warning: Some("w".into()),
                unexplained_writes: None,
            })),
            ..Patch::default()
        }
    }

    fn verifier(paths: &[&str]) -> EvidenceRecord {
        EvidenceRecord {
            id: "v".into(),
            kind: "test".into(),
            status: "pass".into(),
            summary: "green".into(),
            code_refs: paths.iter().map(|p| CodeRef::to_path(*p)).collect(),
        }
    }

    fn label(patch: &Patch) -> Option<&str> {
        patch.churn.as_deref()?.graph_freshness.as_deref()
    }

    #[test]
    fn a_verifier_without_refs_settles_the_paths_the_patch_observed() {
        let mut all = patch(&["src/a.rs"], &[]);
        assert_eq!(settle_verified(&mut all, &verifier(&[])), vec!["src/a.rs"]);
        assert_eq!(
            all.graph_frontier.as_ref().map(|f| f.dirty_paths.len()),
            Some(0)
        );
        assert_eq!(label(&all), Some(SETTLED_FRESHNESS));
    }

    #[test]
    fn what_the_verifier_did_not_cover_stays_open() {
        let mut partly = patch(&["./src/a.rs", "src/b.rs"], &[]);
        assert_eq!(
            settle_verified(&mut partly, &verifier(&[])),
            vec!["./src/a.rs"]
        );
        assert_eq!(
            partly
                .graph_frontier
                .as_ref()
                .map(|f| f.dirty_paths.clone()),
            Some(vec!["src/b.rs".to_owned()])
        );
        assert_eq!(label(&partly), Some("proposal-expanded"));
        let mut questions = patch(&["src/a.rs"], &["q"]);
        settle_verified(&mut questions, &verifier(&[]));
        assert_eq!(label(&questions), Some("proposal-expanded"));
        let mut cited = patch(&["src/a.rs", "src/b.rs"], &[]);
        assert_eq!(
            settle_verified(&mut cited, &verifier(&["src/b.rs"])),
            vec!["src/b.rs"]
        );
        let mut nothing = Patch::default();
        assert!(settle_verified(&mut nothing, &verifier(&[])).is_empty());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::fixtures::evidence;
    use crate::policy::fixtures::observation;
    use crate::policy::propose::propose;
    use crate::state::model::CodeRef;
    use crate::state::model::GraphFrontier;
    use crate::state::model::Observation;
    use crate::state::model::State;

    /// The gate's problems as the report prints them.
    fn evaluated(patch: &Patch, verifier: &EvidenceRecord) -> Vec<String> {
        evaluate_promotion(patch, verifier)
            .iter()
            .map(ToString::to_string)
            .collect()
    }

    fn verifier(kind: &str) -> EvidenceRecord {
        EvidenceRecord {
            id: "ev-verifier".into(),
            kind: kind.into(),
            status: "pass".into(),
            summary: "suite green".into(),
            code_refs: vec![],
        }
    }

    fn churn(pressure: &str, freshness: Option<&str>, warning: Option<&str>) -> ChurnState {
        ChurnState {
            understanding_status: "proposal_refines_map".into(),
            diff_pressure: pressure.into(),
            graph_freshness: freshness.map(Into::into),
            warning: warning.map(Into::into),
            unexplained_writes: None,
        }
    }

    fn churn_patch(churn: ChurnState) -> Patch {
        Patch {
            observations: vec![observation("obs-1", &["ev-1"])],
            evidence: vec![evidence("ev-1")],
            churn: Some(Box::new(churn)),
            ..Patch::default()
        }
    }

    #[test]
    fn token_aware_strong_kinds() {
        for kind in [
            "verification",
            "Verifier",
            "test",
            "unit_tests",
            "smoke-test",
            "code-review",
            "ci/SMOKE",
        ] {
            assert!(is_strong_verifier_kind(kind), "{kind}");
        }
        for kind in ["contest", "testing", "reviewer", "observation", "", "--"] {
            assert!(!is_strong_verifier_kind(kind), "{kind}");
        }
    }

    #[test]
    fn an_observation_with_its_evidence_is_accepted() {
        let patch = Patch {
            observations: vec![observation("obs-1", &["ev-1", "ev-verifier"])],
            evidence: vec![evidence("ev-1")],
            ..Patch::default()
        };
        let promotion = promote(patch.clone(), verifier("observation")).expect("accepted");
        assert_eq!(
            promotion.changed_fields,
            vec![ChangedField::Observations, ChangedField::Evidence]
        );
        assert_eq!(
            promotion.patch.evidence,
            vec![evidence("ev-1"), verifier("observation")]
        );
        assert_eq!(promotion.patch.observations, patch.observations);
    }

    #[test]
    fn evidence_is_reported_last_when_the_patch_had_none() {
        let patch = Patch {
            objective: Some("ship".into()),
            observations: vec![observation("obs-1", &["ev-verifier"])],
            ..Patch::default()
        };
        let reasons = evaluated(&patch, &verifier("test"));
        assert_eq!(
            reasons,
            vec![
                "evidence: state replacement promotions must include at least one patch evidence record"
            ]
        );
        let observations_only = Patch {
            observations: vec![observation("obs-1", &["ev-verifier"])],
            churn: None,
            ..Patch::default()
        };
        let promotion = promote(observations_only, verifier("test")).expect("accepted");
        assert_eq!(
            promotion.changed_fields,
            vec![ChangedField::Observations, ChangedField::Evidence]
        );
        let with_churn = churn_patch(churn("low", None, None));
        let promotion = promote(with_churn, verifier("note")).expect("accepted");
        assert_eq!(
            promotion.changed_fields,
            vec![
                ChangedField::Observations,
                ChangedField::Evidence,
                ChangedField::Churn
            ]
        );
        let patch = Patch {
            churn: Some(Box::new(churn("low", None, None))),
            observations: vec![observation("obs-1", &["ev-verifier"])],
            evidence: vec![],
            ..Patch::default()
        };
        let reasons = evaluated(&patch, &verifier("test"));
        assert_eq!(reasons.len(), 1);
    }

    #[test]
    fn an_empty_patch_is_refused() {
        assert_eq!(
            evaluated(&Patch::default(), &verifier("test")),
            vec!["promotion patch must contain at least one mutation"]
        );
    }

    #[test]
    fn replacements_need_an_observation_and_evidence() {
        let patch = Patch {
            objective: Some("ship".into()),
            ..Patch::default()
        };
        assert_eq!(
            evaluated(&patch, &verifier("test")),
            vec![
                "observations: state replacement promotions must include at least one observation",
                "evidence: state replacement promotions must include at least one patch evidence record",
            ]
        );
    }

    #[test]
    fn a_blank_verifier_gets_every_reason() {
        let blank = EvidenceRecord {
            id: " ".into(),
            kind: "".into(),
            status: "".into(),
            summary: "\n".into(),
            code_refs: vec![],
        };
        let patch = Patch {
            observations: vec![observation("obs-1", &["ev-1"])],
            evidence: vec![evidence("ev-1")],
            ..Patch::default()
        };
        assert_eq!(
            evaluated(&patch, &blank),
            vec![
                "verifierEvidence.id: must not be empty",
                "verifierEvidence.kind: must not be empty",
                "verifierEvidence.status: must not be empty",
                "verifierEvidence.summary: must not be empty",
                "verifierEvidence.status: must be accepting, got \"\"",
            ]
        );
        assert_eq!(
            evaluate_promotion(&patch, &blank)[4],
            Problem::new("verifierEvidence.status", "must be accepting, got \"\"")
        );
        let failed = EvidenceRecord {
            status: "failed".into(),
            ..verifier("test")
        };
        assert_eq!(
            evaluated(&patch, &failed),
            vec!["verifierEvidence.status: must be accepting, got \"failed\""]
        );
    }

    #[test]
    fn patch_records_are_checked_against_the_patch_and_the_verifier_only() {
        let patch = Patch {
            observations: vec![
                observation("obs-1", &["ev-1", "ev-stored"]),
                Observation {
                    summary: " ".into(),
                    ..observation("obs-1", &[])
                },
            ],
            evidence: vec![
                evidence("ev-1"),
                EvidenceRecord {
                    kind: "".into(),
                    ..evidence("ev-1")
                },
                evidence("ev-verifier"),
            ],
            ..Patch::default()
        };
        assert_eq!(
            evaluated(&patch, &verifier("test")),
            vec![
                "evidence[1].kind: must not be empty",
                "evidence[1].id: duplicate evidence id \"ev-1\"",
                "evidence[2].id: duplicate evidence id \"ev-verifier\"",
                "observations[0].evidence_ids[1]: cites missing evidence id \"ev-stored\"",
                "observations[1].summary: must not be empty",
                "observations[1].evidence_ids: must cite at least one evidence id",
                "observations[1].id: duplicate observation id \"obs-1\"",
            ]
        );
    }

    #[test]
    fn structural_rules_see_the_patch_alone() {
        let patch = Patch {
            observations: vec![observation("obs-1", &["ev-1"])],
            evidence: vec![evidence("ev-1")],
            graph_frontier: Some(Box::new(GraphFrontier {
                active_node_ids: vec!["a".into(), "a".into()],
                ..GraphFrontier::default()
            })),
            active_subgoal_id: Some("sg-missing".into()),
            ..Patch::default()
        };
        assert_eq!(
            evaluated(&patch, &verifier("test")),
            vec!["graph_frontier.active_node_ids[1]: \"a\" is listed twice"]
        );
    }

    #[test]
    fn risky_churn_needs_a_warning_and_a_strong_verifier() {
        let contest = evaluated(
            &churn_patch(churn("medium", None, Some("why"))),
            &verifier("contest"),
        );
        assert_eq!(
            contest,
            vec![
                "verifierEvidence.kind: medium/high churn promotions require a \
                 verification/test/smoke/review verifier, got \"contest\""
            ]
        );
        let expanded_low = evaluated(
            &churn_patch(churn("low", Some("proposal-expanded"), None)),
            &verifier("smoke-test"),
        );
        assert_eq!(
            expanded_low,
            vec![
                "churn.warning: medium/high churn promotions must include a warning \
                 explaining the delta"
            ]
        );
        for freshness in [
            " Proposal-Broadened",
            "proposal-semantically-anchored",
            "proposal-updated",
        ] {
            let reasons = evaluated(
                &churn_patch(churn("low", Some(freshness), Some(" "))),
                &verifier("reviewer"),
            );
            assert_eq!(reasons.len(), 2, "{freshness}: {reasons:?}");
        }
        for safe in [
            churn("low", Some("proposal-refined"), None),
            churn(" LOW ", None, None),
            churn("unknown", Some("fresh"), None),
        ] {
            assert_eq!(
                evaluated(&churn_patch(safe), &verifier("observation")),
                Vec::<String>::new()
            );
        }
        assert!(
            evaluated(
                &churn_patch(churn("CRITICAL", None, Some("why"))),
                &verifier("unit_tests"),
            )
            .is_empty()
        );
    }

    #[test]
    fn every_reason_comes_back_at_once() {
        let patch = Patch {
            objective: Some("ship".into()),
            churn: Some(Box::new(churn("high", None, None))),
            ..Patch::default()
        };
        let reasons = evaluated(
            &patch,
            &EvidenceRecord {
                status: "nope".into(),
                ..verifier("contest")
            },
        );
        assert_eq!(reasons.len(), 5, "{reasons:?}");
    }

    #[test]
    fn a_fresh_proposal_passes_with_a_strong_verifier() {
        let code_ref = CodeRef {
            start_line: Some(10),
            end_line: Some(20),
            symbol: Some("demo".into()),
            ..CodeRef::to_path("epiphany-state-model/src/prompt.rs")
        };
        let state = State {
            revision: 4,
            observations: vec![Observation {
                code_refs: vec![code_ref],
                ..observation("obs-verified", &["ev-1"])
            }],
            recent_evidence: vec![evidence("ev-1")],
            ..State::default()
        };
        let patch = propose(&state, &[]).expect("proposal");
        let promotion = promote(patch.clone(), verifier("smoke-test")).expect("accepted");
        assert_eq!(
            promotion.changed_fields,
            vec![
                ChangedField::Graphs,
                ChangedField::GraphFrontier,
                ChangedField::Observations,
                ChangedField::Evidence,
                ChangedField::Churn,
            ]
        );
        let evidence_ids: Vec<&str> = promotion
            .patch
            .evidence
            .iter()
            .map(|e| e.id.as_str())
            .collect();
        assert_eq!(
            evidence_ids,
            vec!["ev-map-proposal-945cb66bdb6d", "ev-verifier"]
        );
        assert!(promote(patch, verifier("contest")).is_err());
    }

    #[test]
    fn derived_verifier_ids_are_stable_and_distinct() {
        let patch = churn_patch(churn("low", None, None));
        let first = verifier_record("test", "pass", "green", None, &patch);
        assert_eq!(
            first,
            verifier_record("test", "pass", "green", None, &patch)
        );
        assert!(
            first.id.starts_with("ev-verifier-") && first.id.len() == "ev-verifier-".len() + 12
        );
        assert_ne!(
            first.id,
            verifier_record("test", "pass", "red", None, &patch).id
        );
        assert_ne!(
            first.id,
            verifier_record("test", "pass", "green", None, &Patch::default()).id
        );
        let named = verifier_record("test", "pass", "green", Some("ev-mine"), &patch);
        assert_eq!(named.id, "ev-mine");
        assert_eq!(
            (
                named.kind.as_str(),
                named.status.as_str(),
                named.summary.as_str()
            ),
            ("test", "pass", "green")
        );
    }
}
