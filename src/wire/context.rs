//! `context --json`: the context shard ([`crate::policy::context::context_shard`]).

use serde::Serialize;

use crate::policy::code_ref::RefOwner;
use crate::policy::context;
use crate::policy::projection::StateStatus;
use crate::state::model::EvidenceRecord;
use crate::state::model::GraphCheckpoint;
use crate::state::model::GraphFrontier;
use crate::state::model::InvestigationCheckpoint;
use crate::state::model::Observation;
use crate::wire::freshness::Certificate;
use crate::wire::freshness::RefFinding;
use crate::wire::graph::GraphSlice;

/// The context shard.
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct ContextShard {
    /// Whether a state exists.
    pub state_status: StateStatus,
    /// Its revision.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state_revision: Option<u64>,
    /// The selected records.
    pub context: ContextBody,
    /// Ids not found.
    pub missing: ContextMissing,
    /// The shown code references that no longer hold (of graph records, the checkpoint and
    /// observations; evidence is what was seen then and is never marked), in shard order.
    pub refs_not_holding: Vec<RefFinding>,
    /// The certificate of each shown graph node and of the investigation checkpoint, judged by
    /// the fingerprints of their references (docs/freshness.md#certificates).
    pub certificates: Vec<Certificate>,
    /// With `--code`: the text the shown references cite, within a budget.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub code: Vec<CitedCode>,
}

moved!(context::ContextShard => ContextShard {
    state_status, state_revision, context: into, missing: into, refs_not_holding: each,
    certificates: each, code: each,
});

/// The text one shown reference cites, as the work tree has it now.
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct CitedCode {
    /// The record that carries the reference.
    pub owner: RefOwner,
    /// The reference, as spelled on the command line.
    pub code_ref: String,
    /// The line the text starts at (1-based).
    pub start_line: u32,
    /// The lines, as they are (invalid UTF-8 replaced).
    pub lines: Vec<String>,
    /// How many more lines it cites that the budget left out.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub lines_left_out: usize,
}

moved!(context::CitedCode => CitedCode {
    owner, code_ref, start_line, lines, lines_left_out,
});

fn is_zero(count: &usize) -> bool {
    *count == 0
}

/// The selected records.
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct ContextBody {
    /// Nodes, edges and links.
    pub graph: GraphSlice,
    /// The graph frontier (unless left out).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub frontier: Option<GraphFrontier>,
    /// The graph checkpoint.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checkpoint: Option<GraphCheckpoint>,
    /// The full investigation checkpoint.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub investigation_checkpoint: Option<InvestigationCheckpoint>,
    /// Observations, newest first.
    pub observations: Vec<Observation>,
    /// Evidence, newest first.
    pub evidence: Vec<EvidenceRecord>,
}

moved!(context::ContextBody => ContextBody {
    graph: into, frontier, checkpoint, investigation_checkpoint, observations, evidence,
});

/// Ids asked for and not found, in request order.
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct ContextMissing {
    /// Graph node ids.
    pub graph_node_ids: Vec<String>,
    /// Graph edge ids.
    pub graph_edge_ids: Vec<String>,
    /// Observation ids.
    pub observation_ids: Vec<String>,
    /// Evidence ids (linked ones included).
    pub evidence_ids: Vec<String>,
}

moved!(context::ContextMissing => ContextMissing {
    graph_node_ids, graph_edge_ids, observation_ids, evidence_ids,
});
