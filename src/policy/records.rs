//! The rules every observation and evidence record a write brings in must meet, written once
//! for `update` (the write path) and `promote` (the verifier gate in front of it).
//!
//! Each function checks one record, found at `at` (`observations[2]`), and adds its problems to
//! a [`Reasons`]; the callers decide the order and which ids a citation may name (`update`:
//! this patch's evidence and the store's; `promote`: this patch's evidence and the verifier).
//! Uniqueness and "already stored" checks stay with the callers, which know the id sets.

use crate::policy::structure::Reasons;
use crate::policy::structure::missing_evidence;
use crate::state::model::EvidenceRecord;
use crate::state::model::Observation;
use crate::state::problem::item;
use crate::state::problem::join;

/// An evidence record names its id, kind, status and summary.
pub fn require_evidence_fields(reasons: &mut Reasons, at: &str, evidence: &EvidenceRecord) {
    reasons.require_fields(
        at,
        &[
            ("id", &evidence.id),
            ("kind", &evidence.kind),
            ("status", &evidence.status),
            ("summary", &evidence.summary),
        ],
    );
}

/// An observation names its id, summary, source kind and status.
pub fn require_observation_fields(reasons: &mut Reasons, at: &str, observation: &Observation) {
    reasons.require_fields(
        at,
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
    at: &str,
    observation: &Observation,
    known_evidence: &dyn Fn(&str) -> bool,
) {
    let cited = join(at, "evidence_ids");
    if observation.evidence_ids.is_empty() {
        reasons.at(&cited, "must cite at least one evidence id");
    }
    for (index, id) in observation.evidence_ids.iter().enumerate() {
        if !known_evidence(id) {
            reasons.at(item(&cited, index), missing_evidence(id));
        }
    }
}
