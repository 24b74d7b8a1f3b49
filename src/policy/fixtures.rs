//! Builders for the graph records the projection tests share. Test-only.

use crate::state::model::CodeRef;
use crate::state::model::GraphEdge;
use crate::state::model::GraphNode;

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
