//! The map: the architecture and dataflow graphs with their nodes, edges and links, the code
//! references that anchor them, and the frontier and checkpoint that say where work stands.

use schemars::JsonSchema;
use serde::Deserialize;
use serde::Serialize;

/// The two graphs and the links between them.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Graphs {
    /// Components and how they relate.
    #[serde(default, skip_serializing_if = "Graph::is_empty")]
    pub architecture: Graph,
    /// How data moves.
    #[serde(default, skip_serializing_if = "Graph::is_empty")]
    pub dataflow: Graph,
    /// Which dataflow node lives in which architecture node.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub links: Vec<GraphLink>,
}

impl Graphs {
    /// Both graphs empty and no links.
    pub fn is_empty(&self) -> bool {
        self.architecture.is_empty() && self.dataflow.is_empty() && self.links.is_empty()
    }

    /// The architecture graph then the dataflow graph, with their kinds.
    pub fn each(&self) -> [(GraphKind, &Graph); 2] {
        [
            (GraphKind::Architecture, &self.architecture),
            (GraphKind::Dataflow, &self.dataflow),
        ]
    }
}

/// Which of the two graphs a node or edge lives in.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum GraphKind {
    /// The architecture graph.
    Architecture,
    /// The dataflow graph.
    Dataflow,
}

impl GraphKind {
    /// The snake_case name, as in JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            GraphKind::Architecture => "architecture",
            GraphKind::Dataflow => "dataflow",
        }
    }
}

/// Nodes and edges of one graph.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Graph {
    /// The nodes, in author order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub nodes: Vec<GraphNode>,
    /// The edges, in author order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub edges: Vec<GraphEdge>,
}

impl Graph {
    /// No nodes and no edges.
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty() && self.edges.is_empty()
    }
}

/// A component (architecture) or a stage (dataflow).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct GraphNode {
    /// Unique id within its graph.
    pub id: String,
    /// Short title.
    pub title: String,
    /// What it is for.
    pub purpose: String,
    /// How it works.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mechanism: Option<String>,
    /// An image that helps remember it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metaphor: Option<String>,
    /// Free-form status (`candidate`, `verified`, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    /// Where it lives in the code.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub code_refs: Vec<CodeRef>,
}

/// A relation between two nodes of the same graph.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct GraphEdge {
    /// Optional id (edges may be anonymous).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// Source node id.
    pub source_id: String,
    /// Target node id.
    pub target_id: String,
    /// Relation kind (`calls`, `feeds`, ...).
    pub kind: String,
    /// Short label.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    /// How the relation works.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mechanism: Option<String>,
    /// Where it lives in the code.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub code_refs: Vec<CodeRef>,
}

/// Ties a dataflow node to the architecture node that carries it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct GraphLink {
    /// The dataflow node.
    pub dataflow_node_id: String,
    /// The architecture node.
    pub architecture_node_id: String,
    /// How they relate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub relationship: Option<String>,
    /// Where it lives in the code.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub code_refs: Vec<CodeRef>,
}

/// A pointer into the code: a path, optionally a line range and a symbol.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
pub struct CodeRef {
    /// Path relative to the repository root.
    pub path: String,
    /// First line, 1-based.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_line: Option<u32>,
    /// Last line, inclusive.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub end_line: Option<u32>,
    /// Symbol at that place.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub symbol: Option<String>,
    /// Free note.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// The file did not exist when the reference was written (`--allow-missing-paths`, for
    /// plans about files still to be written). Set by the write path, not by hand.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub planned: bool,
    /// What the cited text was when someone last checked it: the first 16 hex digits of a
    /// SHA-256 over the cited lines (the definition's, with a symbol; the range's; the whole
    /// file's), each trimmed, blank ones left out (docs/freshness.md#certificates). Set by the
    /// write path when a reference is cited or re-checked; a reference moved by `freshness
    /// --fix` keeps it, so changed code is never certified by being found again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(pattern(r"^[0-9a-f]{16}$"), example = "0123456789abcdef")]
    pub fingerprint: Option<String>,
}

impl CodeRef {
    /// A reference to a whole file.
    pub fn to_path(path: impl Into<String>) -> CodeRef {
        CodeRef {
            path: path.into(),
            start_line: None,
            end_line: None,
            symbol: None,
            note: None,
            planned: false,
            fingerprint: None,
        }
    }
}

/// The part of the graph under active investigation.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct GraphFrontier {
    /// Nodes in focus.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub active_node_ids: Vec<String>,
    /// Edges in focus.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub active_edge_ids: Vec<String>,
    /// Open questions.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub open_question_ids: Vec<String>,
    /// Known gaps in the map.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub open_gap_ids: Vec<String>,
    /// Paths whose changes the map has not absorbed yet.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub dirty_paths: Vec<String>,
}

/// A named point in the graph work.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct GraphCheckpoint {
    /// Unique id.
    pub checkpoint_id: String,
    /// The graph revision it was taken at.
    pub graph_revision: u64,
    /// What it records.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<String>,
    /// Frontier nodes at the checkpoint.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub frontier_node_ids: Vec<String>,
    /// Open questions at the checkpoint.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub open_question_ids: Vec<String>,
    /// Open gaps at the checkpoint.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub open_gap_ids: Vec<String>,
}
