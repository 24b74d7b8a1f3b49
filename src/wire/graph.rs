//! `graph --json`: the graph query's result ([`crate::policy::graph_query::query_graph`]),
//! and the graph slice `context` embeds too.

use serde::Serialize;

use crate::policy::graph_query;
use crate::policy::graph_query::Direction;
use crate::policy::projection;
use crate::policy::projection::StateStatus;
use crate::state::model::GraphCheckpoint;
use crate::state::model::GraphEdge;
use crate::state::model::GraphFrontier;
use crate::state::model::GraphLink;
use crate::state::model::GraphNode;

/// The query's answer.
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct GraphQueryResult {
    /// Whether a state exists.
    pub state_status: StateStatus,
    /// Its revision.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state_revision: Option<u64>,
    /// The direction walked.
    pub direction: Direction,
    /// The depth walked, after clamping.
    pub depth: u64,
    /// Nodes, edges and links reached.
    pub graph: GraphSlice,
    /// The graph frontier.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub frontier: Option<GraphFrontier>,
    /// The graph checkpoint.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checkpoint: Option<GraphCheckpoint>,
    /// What matched.
    pub matched: Matched,
    /// What was not found.
    pub missing: Missing,
    /// The reached nodes, edges and links drawn (`--format mermaid|dot`), stale nodes marked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub picture: Option<String>,
}

moved!(graph_query::GraphQueryResult => GraphQueryResult {
    state_status, state_revision, direction, depth, graph: into, frontier, checkpoint,
    matched: into, missing: into, picture,
});

/// What the query found.
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct Matched {
    /// Nodes returned (architecture then dataflow, graph order).
    pub node_ids: Vec<String>,
    /// Ids of the edges returned.
    pub edge_ids: Vec<String>,
    /// Code-ref paths that matched `paths`.
    pub paths: Vec<String>,
    /// Symbols that matched `symbols`.
    pub symbols: Vec<String>,
    /// Edge kinds that matched.
    pub edge_kinds: Vec<String>,
}

moved!(graph_query::Matched => Matched {
    node_ids, edge_ids, paths, symbols, edge_kinds,
});

/// Ids the query reached that are not in the graphs.
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct Missing {
    /// Node ids (asked for, or dangling endpoints met on the way).
    pub node_ids: Vec<String>,
    /// Edge ids.
    pub edge_ids: Vec<String>,
}

moved!(graph_query::Missing => Missing {
    node_ids, edge_ids,
});

/// Part of the graphs, in graph order.
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct GraphSlice {
    /// Selected architecture nodes.
    pub architecture_nodes: Vec<GraphNode>,
    /// Selected architecture edges.
    pub architecture_edges: Vec<GraphEdge>,
    /// Selected dataflow nodes.
    pub dataflow_nodes: Vec<GraphNode>,
    /// Selected dataflow edges.
    pub dataflow_edges: Vec<GraphEdge>,
    /// Selected links.
    pub links: Vec<GraphLink>,
}

moved!(projection::GraphSlice => GraphSlice {
    architecture_nodes, architecture_edges, dataflow_nodes, dataflow_edges, links,
});
