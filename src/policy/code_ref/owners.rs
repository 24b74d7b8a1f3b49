//! The records that carry code references, and the one walk over them: [`RefOwner`] names a
//! record in reports, [`patch_code_refs_mut`] walks a patch for the write path,
//! [`visit_state_code_refs`] walks a state for the read path. A new kind of record that carries
//! code references joins the walks here. Must not judge a reference (that is `check`) or read
//! its file (that is the caller's).

use std::fmt;

use serde::Serialize;

use crate::state::model::CodeRef;
use crate::state::model::EvidenceRecord;
use crate::state::model::GraphEdge;
use crate::state::model::GraphKind;
use crate::state::model::GraphLink;
use crate::state::model::GraphNode;
use crate::state::model::Graphs;
use crate::state::model::InvestigationCheckpoint;
use crate::state::model::Observation;
use crate::state::model::State;
use crate::state::patch::Patch;
use crate::state::patch::Upsert;
use crate::state::snapshot::CHECKPOINT_ANCHOR;
use crate::state::snapshot::node_anchor_key;

/// The record that carries a code reference.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(tag = "record", rename_all = "snake_case")]
pub enum RefOwner {
    /// A graph node.
    Node {
        /// Which graph.
        graph: GraphKind,
        /// The node id.
        id: String,
    },
    /// A graph edge.
    Edge {
        /// Which graph.
        graph: GraphKind,
        /// The edge id, when it has one.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        id: Option<String>,
        /// Where it starts.
        source_id: String,
        /// Where it ends.
        target_id: String,
    },
    /// A link between a dataflow and an architecture node.
    Link {
        /// The dataflow node.
        dataflow_node_id: String,
        /// The architecture node.
        architecture_node_id: String,
    },
    /// An observation.
    Observation {
        /// Its id.
        id: String,
    },
    /// An evidence record.
    Evidence {
        /// Its id.
        id: String,
    },
    /// The investigation checkpoint.
    InvestigationCheckpoint {
        /// Its id.
        id: String,
    },
}

impl RefOwner {
    /// The record's key, as conflicts name records (docs/store.md#conflicts): where a problem
    /// with one of its references is reported (`observations/obs-1`).
    pub fn key(&self) -> String {
        match self {
            RefOwner::Node { graph, id } => format!("{}_nodes/{id}", graph.as_str()),
            RefOwner::Edge {
                graph,
                id: Some(id),
                ..
            } => format!("{}_edges/{id}", graph.as_str()),
            RefOwner::Edge {
                graph,
                id: None,
                source_id,
                target_id,
            } => format!("{}_edges/{source_id}->{target_id}", graph.as_str()),
            RefOwner::Link {
                dataflow_node_id,
                architecture_node_id,
            } => format!("links/{dataflow_node_id}->{architecture_node_id}"),
            RefOwner::Observation { id } => format!("observations/{id}"),
            RefOwner::Evidence { id } => format!("evidence/{id}"),
            RefOwner::InvestigationCheckpoint { .. } => "investigation_checkpoint".to_owned(),
        }
    }

    /// The key its anchor is kept under (docs/store.md#anchors): graph nodes and the
    /// investigation checkpoint have one.
    pub fn anchor_key(&self) -> Option<String> {
        match self {
            RefOwner::Node { graph, id } => Some(node_anchor_key(*graph, id)),
            RefOwner::InvestigationCheckpoint { .. } => Some(CHECKPOINT_ANCHOR.to_owned()),
            _ => None,
        }
    }

    /// Whether a write can rewrite the record in place (graphs and the checkpoint are replaced
    /// wholesale); observations and evidence are appended once and kept as written.
    pub fn is_rewritable(&self) -> bool {
        !matches!(
            self,
            RefOwner::Observation { .. } | RefOwner::Evidence { .. }
        )
    }
}

impl fmt::Display for RefOwner {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RefOwner::Node { graph, id } => write!(f, "{} node \"{id}\"", graph.as_str()),
            RefOwner::Edge {
                graph,
                id: Some(id),
                ..
            } => write!(f, "{} edge \"{id}\"", graph.as_str()),
            RefOwner::Edge {
                graph,
                id: None,
                source_id,
                target_id,
            } => write!(
                f,
                "{} edge \"{source_id}\" -> \"{target_id}\"",
                graph.as_str()
            ),
            RefOwner::Link {
                dataflow_node_id,
                architecture_node_id,
            } => write!(
                f,
                "graph link \"{dataflow_node_id}\" -> \"{architecture_node_id}\""
            ),
            RefOwner::Observation { id } => write!(f, "observation \"{id}\""),
            RefOwner::Evidence { id } => write!(f, "evidence \"{id}\""),
            RefOwner::InvestigationCheckpoint { id } => {
                write!(f, "investigation checkpoint \"{id}\"")
            }
        }
    }
}

/// Every code reference of the graphs, mutably, with its owner: nodes, then edges, of the
/// architecture graph then the dataflow graph, then links.
pub fn graph_code_refs_mut(graphs: &mut Graphs) -> Vec<(RefOwner, &mut CodeRef)> {
    let mut out = Vec::new();
    let Graphs {
        architecture,
        dataflow,
        links,
    } = graphs;
    push_graph_refs(
        &mut out,
        GraphKind::Architecture,
        &mut architecture.nodes,
        &mut architecture.edges,
    );
    push_graph_refs(
        &mut out,
        GraphKind::Dataflow,
        &mut dataflow.nodes,
        &mut dataflow.edges,
    );
    push_link_refs(&mut out, links);
    out
}

/// Appends the code references of one graph's nodes, then its edges, with their owners.
fn push_graph_refs<'a>(
    out: &mut Vec<(RefOwner, &'a mut CodeRef)>,
    kind: GraphKind,
    nodes: &'a mut [GraphNode],
    edges: &'a mut [GraphEdge],
) {
    for node in nodes {
        let owner = RefOwner::Node {
            graph: kind,
            id: node.id.clone(),
        };
        out.extend(node.code_refs.iter_mut().map(|r| (owner.clone(), r)));
    }
    for edge in edges {
        let owner = RefOwner::Edge {
            graph: kind,
            id: edge.id.clone(),
            source_id: edge.source_id.clone(),
            target_id: edge.target_id.clone(),
        };
        out.extend(edge.code_refs.iter_mut().map(|r| (owner.clone(), r)));
    }
}

/// Appends the code references of links, with their owners.
fn push_link_refs<'a>(out: &mut Vec<(RefOwner, &'a mut CodeRef)>, links: &'a mut [GraphLink]) {
    for link in links {
        let owner = RefOwner::Link {
            dataflow_node_id: link.dataflow_node_id.clone(),
            architecture_node_id: link.architecture_node_id.clone(),
        };
        out.extend(link.code_refs.iter_mut().map(|r| (owner.clone(), r)));
    }
}

/// Every code reference a patch carries, mutably, with the record that carries it: the one
/// seam through which the write path checks and resolves references. A new kind of record
/// that carries code references joins the walk here.
pub fn patch_code_refs_mut(patch: &mut Patch) -> Vec<(RefOwner, &mut CodeRef)> {
    let Patch {
        graphs,
        investigation_checkpoint,
        observations,
        evidence,
        upsert,
        ..
    } = patch;
    let mut out = Vec::new();
    if let Some(graphs) = graphs {
        out.extend(graph_code_refs_mut(graphs));
    }
    let Upsert {
        architecture_nodes,
        architecture_edges,
        dataflow_nodes,
        dataflow_edges,
        links,
        ..
    } = upsert;
    push_graph_refs(
        &mut out,
        GraphKind::Architecture,
        architecture_nodes,
        architecture_edges,
    );
    push_graph_refs(
        &mut out,
        GraphKind::Dataflow,
        dataflow_nodes,
        dataflow_edges,
    );
    push_link_refs(&mut out, links);
    if let Some(checkpoint) = investigation_checkpoint {
        let owner = RefOwner::InvestigationCheckpoint {
            id: checkpoint.brief.checkpoint_id.clone(),
        };
        out.extend(checkpoint.code_refs.iter_mut().map(|r| (owner.clone(), r)));
    }
    for observation in observations {
        let owner = RefOwner::Observation {
            id: observation.id.clone(),
        };
        out.extend(observation.code_refs.iter_mut().map(|r| (owner.clone(), r)));
    }
    for record in evidence {
        let owner = RefOwner::Evidence {
            id: record.id.clone(),
        };
        out.extend(record.code_refs.iter_mut().map(|r| (owner.clone(), r)));
    }
    out
}

/// The record that carries a reference, borrowed from the state: [`RefOwner`] without the
/// copies, for walks over every reference where only a few owners are ever named.
#[derive(Debug, Clone, Copy)]
pub enum OwnerRef<'a> {
    /// A graph node.
    Node(GraphKind, &'a GraphNode),
    /// A graph edge.
    Edge(GraphKind, &'a GraphEdge),
    /// A graph link.
    Link(&'a GraphLink),
    /// The investigation checkpoint.
    InvestigationCheckpoint(&'a InvestigationCheckpoint),
    /// An observation.
    Observation(&'a Observation),
    /// An evidence record.
    Evidence(&'a EvidenceRecord),
}

impl OwnerRef<'_> {
    /// The key its anchor is kept under (docs/store.md#anchors): graph nodes and the
    /// investigation checkpoint have one.
    pub fn anchor_key(self) -> Option<String> {
        match self {
            OwnerRef::Node(graph, node) => Some(node_anchor_key(graph, &node.id)),
            OwnerRef::InvestigationCheckpoint(_) => Some(CHECKPOINT_ANCHOR.to_owned()),
            _ => None,
        }
    }

    /// The owned owner, for a report.
    pub fn to_owner(self) -> RefOwner {
        match self {
            OwnerRef::Node(graph, node) => RefOwner::Node {
                graph,
                id: node.id.clone(),
            },
            OwnerRef::Edge(graph, edge) => RefOwner::Edge {
                graph,
                id: edge.id.clone(),
                source_id: edge.source_id.clone(),
                target_id: edge.target_id.clone(),
            },
            OwnerRef::Link(link) => RefOwner::Link {
                dataflow_node_id: link.dataflow_node_id.clone(),
                architecture_node_id: link.architecture_node_id.clone(),
            },
            OwnerRef::InvestigationCheckpoint(checkpoint) => RefOwner::InvestigationCheckpoint {
                id: checkpoint.brief.checkpoint_id.clone(),
            },
            OwnerRef::Observation(observation) => RefOwner::Observation {
                id: observation.id.clone(),
            },
            OwnerRef::Evidence(record) => RefOwner::Evidence {
                id: record.id.clone(),
            },
        }
    }
}

/// Visits every code reference the state holds, with the record that carries it: graphs (as
/// in [`graph_code_refs_mut`]), the investigation checkpoint, observations, evidence. A visit,
/// not a list: a large state has tens of thousands of references.
pub fn visit_state_code_refs<'a>(state: &'a State, visit: impl FnMut(OwnerRef<'a>, &'a CodeRef)) {
    let [
        (architecture, architecture_graph),
        (dataflow, dataflow_graph),
    ] = state.graphs.each();
    RefCarriers {
        graphs: [
            (
                architecture,
                &architecture_graph.nodes,
                &architecture_graph.edges,
            ),
            (dataflow, &dataflow_graph.nodes, &dataflow_graph.edges),
        ],
        links: &state.graphs.links,
        checkpoint: state.investigation_checkpoint.as_ref(),
        observations: &state.observations,
        evidence: &state.recent_evidence,
    }
    .visit(visit);
}

/// The records a walk over code references visits: the whole state's, or the part of them a
/// projection shows.
pub struct RefCarriers<'a> {
    /// Each graph's nodes and edges.
    pub graphs: [(GraphKind, &'a [GraphNode], &'a [GraphEdge]); 2],
    /// Links between the graphs.
    pub links: &'a [GraphLink],
    /// The investigation checkpoint.
    pub checkpoint: Option<&'a InvestigationCheckpoint>,
    /// Observations.
    pub observations: &'a [Observation],
    /// Evidence records.
    pub evidence: &'a [EvidenceRecord],
}

impl<'a> RefCarriers<'a> {
    /// Visits every code reference of the records, in this order, with the record carrying it.
    pub fn visit(self, mut visit: impl FnMut(OwnerRef<'a>, &'a CodeRef)) {
        for (kind, nodes, edges) in self.graphs {
            for node in nodes {
                for code_ref in &node.code_refs {
                    visit(OwnerRef::Node(kind, node), code_ref);
                }
            }
            for edge in edges {
                for code_ref in &edge.code_refs {
                    visit(OwnerRef::Edge(kind, edge), code_ref);
                }
            }
        }
        for link in self.links {
            for code_ref in &link.code_refs {
                visit(OwnerRef::Link(link), code_ref);
            }
        }
        if let Some(checkpoint) = self.checkpoint {
            for code_ref in &checkpoint.code_refs {
                visit(OwnerRef::InvestigationCheckpoint(checkpoint), code_ref);
            }
        }
        for observation in self.observations {
            for code_ref in &observation.code_refs {
                visit(OwnerRef::Observation(observation), code_ref);
            }
        }
        for record in self.evidence {
            for code_ref in &record.code_refs {
                visit(OwnerRef::Evidence(record), code_ref);
            }
        }
    }
}
