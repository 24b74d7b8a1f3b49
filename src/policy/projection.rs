//! Vocabulary shared by the read-only projections: whether a state exists, the graph slice
//! that `context` (docs/projections.md#context) and `graph` (docs/projections.md#graph-query)
//! both return, and which observations are current (not superseded).
//!
//! Owns the one selection rule both use: nodes whose id was asked for, edges named by id or
//! touching an asked-for node, links touching one. Never changes the state.

use std::collections::HashSet;

use serde::Serialize;

use crate::state::model::GraphEdge;
use crate::state::model::GraphLink;
use crate::state::model::GraphNode;
use crate::state::model::Graphs;
use crate::state::model::Observation;

/// The observations of `newest_first` that no observation of the same list supersedes
/// (docs/state.md#observations-and-evidence), in order: what views list.
pub fn current_observations(newest_first: &[Observation]) -> impl Iterator<Item = &Observation> {
    let superseded: HashSet<&str> = newest_first
        .iter()
        .filter_map(|o| o.supersedes.as_deref())
        .collect();
    newest_first
        .iter()
        .filter(move |o| !superseded.contains(o.id.as_str()))
}

/// Whether the store holds a state yet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum StateStatus {
    /// No write has happened yet.
    Missing,
    /// A state exists.
    Ready,
}

impl StateStatus {
    /// `Ready` when there is a state.
    pub fn of<T>(state: Option<T>) -> StateStatus {
        match state {
            Some(_) => StateStatus::Ready,
            None => StateStatus::Missing,
        }
    }
}

/// The ids of `wanted` that are not among `found`, in `wanted` order.
pub fn not_found<'a>(wanted: &[String], found: impl IntoIterator<Item = &'a str>) -> Vec<String> {
    let found: HashSet<&str> = found.into_iter().collect();
    wanted
        .iter()
        .filter(|id| !found.contains(id.as_str()))
        .cloned()
        .collect()
}

/// Part of the graphs, in graph order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
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

impl GraphSlice {
    /// Nodes whose id is in `node_ids`; edges whose id is in `edge_ids` or that touch a node id
    /// (found or not); links touching a node id.
    pub fn select(graphs: &Graphs, node_ids: &HashSet<&str>, edge_ids: &HashSet<&str>) -> Self {
        let nodes = |nodes: &[GraphNode]| {
            nodes
                .iter()
                .filter(|node| node_ids.contains(node.id.as_str()))
                .cloned()
                .collect()
        };
        let edges = |edges: &[GraphEdge]| {
            edges
                .iter()
                .filter(|edge| {
                    edge.id.as_deref().is_some_and(|id| edge_ids.contains(id))
                        || node_ids.contains(edge.source_id.as_str())
                        || node_ids.contains(edge.target_id.as_str())
                })
                .cloned()
                .collect()
        };
        GraphSlice {
            architecture_nodes: nodes(&graphs.architecture.nodes),
            architecture_edges: edges(&graphs.architecture.edges),
            dataflow_nodes: nodes(&graphs.dataflow.nodes),
            dataflow_edges: edges(&graphs.dataflow.edges),
            links: graphs
                .links
                .iter()
                .filter(|link| {
                    node_ids.contains(link.dataflow_node_id.as_str())
                        || node_ids.contains(link.architecture_node_id.as_str())
                })
                .cloned()
                .collect(),
        }
    }

    /// Ids of the selected nodes: architecture then dataflow, graph order.
    pub fn node_ids(&self) -> impl Iterator<Item = &str> {
        self.architecture_nodes
            .iter()
            .chain(&self.dataflow_nodes)
            .map(|node| node.id.as_str())
    }

    /// Ids of the selected edges that have one: architecture then dataflow, graph order.
    pub fn edge_ids(&self) -> impl Iterator<Item = &str> {
        self.architecture_edges
            .iter()
            .chain(&self.dataflow_edges)
            .filter_map(|edge| edge.id.as_deref())
    }
}
