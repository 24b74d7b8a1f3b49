//! Human text shared by the projection reports: id lists, code refs and graph slices, written
//! the way the prompt writes them so a person and an agent read the same shapes.

use std::io::Write;

use crate::policy::projection::GraphSlice;
use crate::policy::prompt::code_ref;
use crate::policy::prompt::inline_ids;
use crate::state::model::CodeRef;
use crate::state::model::GraphEdge;
use crate::state::model::GraphNode;

/// Every code ref, joined by `, `.
pub fn refs(refs: &[CodeRef]) -> String {
    refs.iter().map(code_ref).collect::<Vec<_>>().join(", ")
}

/// `label: `a`, `b`` when the list is not empty.
pub fn id_line(out: &mut dyn Write, label: &str, list: &[String]) -> std::io::Result<()> {
    if list.is_empty() {
        return Ok(());
    }
    writeln!(out, "{label}: {}", inline_ids(list))
}

/// The nodes, edges and links of a slice, one per line.
pub fn graph_slice(out: &mut dyn Write, slice: &GraphSlice) -> std::io::Result<()> {
    nodes(out, "architecture nodes", &slice.architecture_nodes)?;
    edges(out, "architecture edges", &slice.architecture_edges)?;
    nodes(out, "dataflow nodes", &slice.dataflow_nodes)?;
    edges(out, "dataflow edges", &slice.dataflow_edges)?;
    if !slice.links.is_empty() {
        writeln!(out, "links:")?;
        for link in &slice.links {
            let relationship = link
                .relationship
                .as_ref()
                .map_or(String::new(), |r| format!(" ({r})"));
            writeln!(
                out,
                "  `{}` -> `{}`{relationship}",
                link.dataflow_node_id, link.architecture_node_id
            )?;
        }
    }
    Ok(())
}

fn nodes(out: &mut dyn Write, label: &str, nodes: &[GraphNode]) -> std::io::Result<()> {
    if nodes.is_empty() {
        return Ok(());
    }
    writeln!(out, "{label}:")?;
    for node in nodes {
        let status = node
            .status
            .as_ref()
            .map_or(String::new(), |s| format!(" [{s}]"));
        writeln!(out, "  `{}`{status}: {}", node.id, node.title)?;
        writeln!(out, "    purpose: {}", node.purpose)?;
        if !node.code_refs.is_empty() {
            writeln!(out, "    code refs: {}", refs(&node.code_refs))?;
        }
    }
    Ok(())
}

fn edges(out: &mut dyn Write, label: &str, edges: &[GraphEdge]) -> std::io::Result<()> {
    if edges.is_empty() {
        return Ok(());
    }
    writeln!(out, "{label}:")?;
    for edge in edges {
        let id = edge
            .id
            .as_ref()
            .map_or(String::new(), |id| format!(" `{id}`"));
        writeln!(
            out,
            "  `{}` -> `{}` ({}){id}",
            edge.source_id, edge.target_id, edge.kind
        )?;
    }
    Ok(())
}
