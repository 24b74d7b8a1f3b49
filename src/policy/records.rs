//! The rules every observation and evidence record a write brings in must meet, written once
//! for `update` (the write path) and `promote` (the verifier gate in front of it).
//!
//! Each function checks one record and adds its reasons to a [`Reasons`]; the callers decide
//! the order and which ids a citation may name (`update`: this patch's evidence and the
//! store's; `promote`: this patch's evidence and the verifier). Uniqueness and "already
//! stored" checks stay with the callers, which know the id sets.

use crate::policy::structure::Reasons;
use crate::state::model::EvidenceRecord;
use crate::state::model::Observation;

/// An evidence record names its id, kind, status and summary.
pub fn require_evidence_fields(reasons: &mut Reasons, evidence: &EvidenceRecord) {
    reasons.require_fields(
        "patch.evidence",
        &[
            ("id", &evidence.id),
            ("kind", &evidence.kind),
            ("status", &evidence.status),
            ("summary", &evidence.summary),
        ],
    );
}

/// An observation names its id, summary, source kind and status.
pub fn require_observation_fields(reasons: &mut Reasons, observation: &Observation) {
    reasons.require_fields(
        "patch.observations",
        &[
            ("id", &observation.id),
            ("summary", &observation.summary),
            ("source_kind", &observation.source_kind),
            ("status", &observation.status),
        ],
    );
}

/// An observation cites at least one evidence id, and only ids `known_evidence` accepts.
pub fn check_citations(
    reasons: &mut Reasons,
    observation: &Observation,
    known_evidence: &dyn Fn(&str) -> bool,
) {
    let id = &observation.id;
    if observation.evidence_ids.is_empty() {
        reasons.push(format!(
            "observation \"{id}\" must cite at least one evidence id"
        ));
    }
    for cited in &observation.evidence_ids {
        if !known_evidence(cited) {
            reasons.push(format!(
                "observation \"{id}\" cites missing evidence id \"{cited}\""
            ));
        }
    }
}
