//! Builders for the graph records the projection tests share. Test-only.

use crate::state::model::CodeRef;
use crate::state::model::Disposition;
use crate::state::model::GraphEdge;
use crate::state::model::GraphNode;
use crate::state::model::InvestigationCheckpoint;

/// A node titled by its id, citing each of `paths` as a whole file.
pub fn node(id: &str, paths: &[&str]) -> GraphNode {
    GraphNode {
        id: id.into(),
        title: id.into(),
        purpose: "p".into(),
        mechanism: None,
        metaphor: None,
        status: None,
        code_refs: paths.iter().map(|p| CodeRef::to_path(*p)).collect(),
    }
}

/// An edge `from -> to` of `kind`, with an optional id.
pub fn edge(id: Option<&str>, from: &str, to: &str, kind: &str) -> GraphEdge {
    GraphEdge {
        id: id.map(str::to_owned),
        source_id: from.into(),
        target_id: to.into(),
        kind: kind.into(),
        label: None,
        mechanism: None,
        code_refs: vec![],
    }
}

/// A checkpoint `ck` on "the seam" whose next action is "rerun the probe", citing `paths`.
pub fn checkpoint(disposition: Disposition, paths: &[&str]) -> InvestigationCheckpoint {
    InvestigationCheckpoint {
        checkpoint_id: "ck".into(),
        kind: "debug".into(),
        disposition,
        focus: "the seam".into(),
        summary: None,
        next_action: Some("rerun the probe".into()),
        captured_at_turn_id: None,
        open_questions: vec![],
        code_refs: paths.iter().map(|p| CodeRef::to_path(*p)).collect(),
        evidence_ids: vec![],
    }
}
