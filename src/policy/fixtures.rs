//! Builders for the records the policy tests share. Test-only.

use crate::policy::code_map::Definition;
use crate::state::model::CheckpointBrief;
use crate::state::model::CodeRef;
use crate::state::model::Disposition;
use crate::state::model::EvidenceRecord;
use crate::state::model::GraphEdge;
use crate::state::model::GraphNode;
use crate::state::model::InvestigationCheckpoint;
use crate::state::model::Observation;
use crate::state::model::State;
use crate::state::patch::Patch;
use crate::state::rollout::Body;
use crate::state::rollout::Record;
use crate::state::rollout::Source;

/// `state` with `patch` folded in, as the store would after one write.
pub fn applied(state: State, patch: Patch) -> State {
    let changed = patch.changed_fields();
    let (record, _) = Record::seal(&Body {
        store: None,
        parents: &[],
        at: "2026-01-01T00:00:00Z",
        source: Source::Update,
        turn_id: None,
        git_head: None,
        changed_fields: &changed,
        patch: Some(&patch),
        restore: None,
    });
    let records = state.revision as usize;
    let base = crate::state::fold::Folded {
        state,
        ..Default::default()
    };
    let mut fold = crate::state::fold::Fold::new(base, records);
    fold.push(&record);
    fold.finish().state
}

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
        brief: CheckpointBrief {
            checkpoint_id: "ck".into(),
            kind: "debug".into(),
            disposition,
            focus: "the seam".into(),
            summary: None,
            next_action: Some("rerun the probe".into()),
            captured_at_turn_id: None,
        },
        open_questions: vec![],
        code_refs: paths.iter().map(|p| CodeRef::to_path(*p)).collect(),
        evidence_ids: vec![],
    }
}

/// Passing tool-output evidence `id`.
pub fn evidence(id: &str) -> EvidenceRecord {
    EvidenceRecord {
        id: id.into(),
        kind: "tool-output".into(),
        status: "ok".into(),
        summary: "cargo test passed".into(),
        code_refs: vec![],
    }
}

/// An observation `id` from a shell tool, citing the evidence ids `cites`.
pub fn observation(id: &str, cites: &[&str]) -> Observation {
    Observation {
        id: id.into(),
        summary: "tests pass".into(),
        source_kind: "shell-tool".into(),
        status: "ok".into(),
        code_refs: vec![],
        evidence_ids: cites.iter().map(|c| c.to_string()).collect(),
        supersedes: None,
    }
}

/// A definition of `name`, a `kind`, over lines `start..=end`, its signature `kind name`.
pub fn definition(name: &str, kind: &str, start: u32, end: u32) -> Definition {
    Definition {
        name: name.into(),
        kind: kind.into(),
        line: start,
        start_line: start,
        end_line: end,
        signature: format!("{kind} {name}"),
    }
}
