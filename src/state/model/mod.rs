//! The typed state: every record the store keeps (docs/state.md).
//!
//! Owns the shape of the state and its serde rules (snake_case names, which fields are
//! required, which are omitted when empty). It holds no behaviour beyond emptiness tests the
//! omission rules need: validation and application live in `policy::update`, persistence in
//! `state::snapshot` and `state::rollout`.
//!
//! Decoding ignores unknown fields so that older binaries can read newer snapshots; patches
//! are decoded strictly elsewhere (`state::patch`).
//!
//! This file holds the [`State`] itself and what spans it (record ids, conflicts); the record
//! types live by subject: `graph` (the map and its anchors), `records` (subgoals, invariants,
//! checkpoints, observations, evidence, churn, mode), `jobs` (bindings, receipts, runtime
//! links) and `planning`. All of them are re-exported here, so `state::model::X` names any.

mod graph;
mod jobs;
mod planning;
mod records;

pub use graph::*;
pub use jobs::*;
pub use planning::*;
pub use records::*;

use serde::Deserialize;
use serde::Serialize;

/// The root of the typed state of one repository.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct State {
    /// Bumped by exactly one on every successful write.
    pub revision: u64,
    /// What the work is for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub objective: Option<String>,
    /// The subgoal being worked on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub active_subgoal_id: Option<String>,
    /// The plan, as subgoals.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub subgoals: Vec<Subgoal>,
    /// Rules the work must keep.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub invariants: Vec<Invariant>,
    /// Architecture and dataflow graphs with their links.
    #[serde(default, skip_serializing_if = "Graphs::is_empty")]
    pub graphs: Graphs,
    /// What part of the graph is under active investigation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub graph_frontier: Option<GraphFrontier>,
    /// A named point in the graph work to return to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub graph_checkpoint: Option<GraphCheckpoint>,
    /// Working notes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scratch: Option<ScratchPad>,
    /// Where an investigation stands, for resuming after a context loss.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub investigation_checkpoint: Option<InvestigationCheckpoint>,
    /// Jobs bound to this work (carried as data).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub job_bindings: Vec<JobBinding>,
    /// Acceptance receipts, newest first (carried as data).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub acceptance_receipts: Vec<AcceptanceReceipt>,
    /// Runtime links, newest first (carried as data).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub runtime_links: Vec<RuntimeLink>,
    /// Observations, newest first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub observations: Vec<Observation>,
    /// Evidence records, newest first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub recent_evidence: Vec<EvidenceRecord>,
    /// How well the change is understood relative to how much it churns.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub churn: Option<ChurnState>,
    /// The working mode.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<ModeState>,
    /// Planning records, kept apart from the active objective.
    #[serde(default, skip_serializing_if = "PlanningState::is_empty")]
    pub planning: PlanningState,
    /// The turn that made the last write, when the writer named one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_updated_turn_id: Option<String>,
    /// Concurrent writes (from branches merged by git) that changed the same field or record
    /// differently; the fold order chose a value, and a later write resolves each.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conflicts: Vec<Conflict>,
}

/// Answers whether the store holds an observation or evidence record with an id, without
/// needing the records themselves (a head read for a write decodes only their ids).
pub trait RecordIds {
    /// Whether an observation has this id.
    fn has_observation(&self, id: &str) -> bool;
    /// Whether an evidence record has this id.
    fn has_evidence(&self, id: &str) -> bool;
}

impl RecordIds for State {
    fn has_observation(&self, id: &str) -> bool {
        self.observations.iter().any(|o| o.id == id)
    }

    fn has_evidence(&self, id: &str) -> bool {
        self.recent_evidence.iter().any(|e| e.id == id)
    }
}

/// The full sizes of the observation and evidence lists: what a projection counts when the
/// lists it was handed hold only the newest records.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ListTotals {
    /// Observations.
    pub observations: usize,
    /// Evidence records.
    pub evidence: usize,
}

impl ListTotals {
    /// The lengths of `state`'s lists (when they are whole).
    pub fn of(state: &State) -> ListTotals {
        ListTotals {
            observations: state.observations.len(),
            evidence: state.recent_evidence.len(),
        }
    }
}

/// Concurrent records that wrote the same field or record with different values.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Conflict {
    /// The field (`objective`) or record (`architecture_nodes/lexer`) they wrote.
    pub key: String,
    /// The competing record ids, in fold order; the last one's value was kept.
    pub records: Vec<String>,
    /// The value kept (a note naming its size when it is large; `null` for a removal).
    pub chosen: serde_json::Value,
}

/// Which side of a git merge a record came from, as git itself names them for the branch
/// checked out: `ours` was committed on it (by a commit on HEAD's first-parent line that is
/// no merge) or is not committed yet; `theirs` came with a merge into it (the merge commit
/// that first holds its segment, or the merge under way). Outside git every record is ours.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Side {
    /// Written on the branch checked out.
    Ours,
    /// Brought in by a merge.
    Theirs,
}

impl Side {
    /// The side as typed and printed.
    pub fn as_str(self) -> &'static str {
        match self {
            Side::Ours => "ours",
            Side::Theirs => "theirs",
        }
    }
}

/// What one competing record of a conflict wrote.
#[derive(Debug, Clone, PartialEq)]
pub struct SideWrite {
    /// The record.
    pub record: String,
    /// When it was written.
    pub at: String,
    /// Where it came from.
    pub side: Side,
    /// The key's value right after it folded (`null` for a removal or an emptied field).
    pub value: serde_json::Value,
}

/// An open conflict with what each side wrote.
#[derive(Debug, Clone, PartialEq)]
pub struct OpenConflict {
    /// The field (`objective`) or record (`architecture_nodes/lexer`).
    pub key: String,
    /// Its competing records' writes, in fold order: the last one's value is kept.
    pub writes: Vec<SideWrite>,
}

fn is_false(value: &bool) -> bool {
    !*value
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_state_serializes_to_revision_only() {
        let json = serde_json::to_string(&State::default()).expect("serialize");
        assert_eq!(json, r#"{"revision":0}"#);
    }

    #[test]
    fn mode_kind_accepts_legacy_aliases() {
        for alias in ["code", "pair_programming", "execute", "custom", "default"] {
            let mode: ModeState =
                serde_json::from_str(&format!(r#"{{"name":"m","kind":"{alias}"}}"#))
                    .expect("decode");
            assert_eq!(mode.kind, Some(ModeKind::Default));
        }
    }

    #[test]
    fn messagepack_round_trip_keeps_every_field() {
        let state = State {
            revision: 3,
            objective: Some("ship".into()),
            graphs: Graphs {
                architecture: Graph {
                    nodes: vec![GraphNode {
                        id: "n".into(),
                        title: "t".into(),
                        purpose: "p".into(),
                        mechanism: None,
                        metaphor: Some("m".into()),
                        status: None,
                        code_refs: vec![CodeRef::to_path("src/lib.rs")],
                    }],
                    edges: vec![],
                },
                ..Graphs::default()
            },
            mode: Some(ModeState {
                name: "plan".into(),
                kind: Some(ModeKind::Plan),
            }),
            ..State::default()
        };
        let bytes = rmp_serde::to_vec_named(&state).expect("encode");
        let back: State = rmp_serde::from_slice(&bytes).expect("decode");
        assert_eq!(back, state);
    }

    #[test]
    fn a_retrieval_summary_flattens_its_index_figures() {
        let summary = RetrievalState {
            workspace_root: "/ws".into(),
            index_revision: Some("r1".into()),
            status: RetrievalStatus::Stale,
            semantic_available: true,
            index: IndexTally {
                last_indexed_at_unix_seconds: Some(-5),
                indexed_file_count: Some(300),
                indexed_chunk_count: None,
            },
            shards: vec![],
            dirty_paths: vec!["src/a.rs".into()],
        };
        let json = serde_json::to_value(&summary).expect("encode");
        assert_eq!(json["indexed_file_count"], 300);
        assert_eq!(json["last_indexed_at_unix_seconds"], -5);
        let back: RetrievalState = serde_json::from_value(json).expect("decode");
        assert_eq!(back, summary);
    }

    #[test]
    fn a_retrieval_summary_in_an_old_state_is_ignored() {
        let json = r#"{"revision":2,"retrieval":{"workspace_root":"/ws","status":"ready"}}"#;
        let state: State = serde_json::from_str(json).expect("decode");
        assert_eq!(state.revision, 2);
        assert_eq!(
            serde_json::to_string(&state).expect("encode"),
            r#"{"revision":2}"#
        );
    }
}
