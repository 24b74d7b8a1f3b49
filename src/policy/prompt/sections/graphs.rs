//! The graphs section: counts, the frontier and graph checkpoint, and, when detail is kept, up
//! to three nodes around the focus with their edges and links. Must not decide whether its
//! detail is cut: `sections` passes that in.

use crate::policy::code_ref::RefOwner;
use crate::policy::freshness::Staleness;
use crate::policy::text::collapse;
use crate::state::model::GraphCheckpoint;
use crate::state::model::GraphFrontier;
use crate::state::model::GraphKind;
use crate::state::model::State;
use crate::state::paths::slash_key;

use super::DIRTY_PATH_LIMIT;
use super::EDGE_LIMIT;
use super::LINK_LIMIT;
use super::NODE_LIMIT;
use super::Section;
use super::backticked;
use super::checked_note;
use super::code_refs;
use super::inline_ids;
use super::map_contradicted;
use super::omission;
use super::ref_suffix;

/// The graphs section: what the work tree contradicts, the frontier, the graph checkpoint,
/// each graph's counts and, with `detail`, the nodes around the focus and the links.
pub(super) fn graphs(
    state: &State,
    staleness: Option<&Staleness>,
    focus: &[String],
    detail: bool,
) -> Section {
    let mut section = Section::new("## Graphs");
    if let Some(staleness) = map_contradicted(staleness) {
        if !staleness.stale_node_ids.is_empty() {
            section.line(format!(
                "- Stale: the code these nodes cite changed since it was checked: {} (nodes {}); re-read it before trusting those nodes",
                backticked(&staleness.node_changed_paths),
                inline_ids(&staleness.stale_node_ids)
            ));
        }
        if !staleness.broken_refs.is_empty() {
            section.line(format!(
                "- Broken code refs: {} (`epiphany freshness` lists them; `epiphany freshness --fix` re-anchors renames and moved lines)",
                backticked(&staleness.broken_refs)
            ));
        }
    }
    if let Some(frontier) = &state.graph_frontier {
        frontier_lines(&mut section, frontier);
    }
    if let Some(checkpoint) = &state.graph_checkpoint {
        checkpoint_lines(&mut section, checkpoint);
    }
    for (kind, graph) in state.graphs.each() {
        if graph.is_empty() {
            continue;
        }
        let name = match kind {
            GraphKind::Architecture => "Architecture graph",
            GraphKind::Dataflow => "Dataflow graph",
        };
        section.line(format!(
            "- {name}: {} nodes, {} edges",
            graph.nodes.len(),
            graph.edges.len()
        ));
        if detail {
            graph_detail(&mut section, state, kind, staleness, focus);
        }
    }
    if detail && !state.graphs.links.is_empty() {
        link_lines(&mut section, state, focus);
    }
    section
}

/// The frontier's id lists that are not empty, and its dirty paths up to their limit.
fn frontier_lines(section: &mut Section, frontier: &GraphFrontier) {
    for (label, list) in [
        ("Frontier active nodes", &frontier.active_node_ids),
        ("Frontier active edges", &frontier.active_edge_ids),
        ("Open questions", &frontier.open_question_ids),
        ("Open gaps", &frontier.open_gap_ids),
    ] {
        if !list.is_empty() {
            section.line(format!("- {label}: {}", inline_ids(list)));
        }
    }
    if !frontier.dirty_paths.is_empty() {
        let shown: Vec<String> = frontier
            .dirty_paths
            .iter()
            .take(DIRTY_PATH_LIMIT)
            .map(|p| format!("`{}`", slash_key(p)))
            .collect();
        let more = frontier.dirty_paths.len().saturating_sub(DIRTY_PATH_LIMIT);
        let suffix = if more > 0 {
            format!("; ... {more} more dirty paths not shown")
        } else {
            String::new()
        };
        section.line(format!("- Dirty paths: {}{suffix}", shown.join(", ")));
    }
}

/// The graph checkpoint: its id and revision, its summary, and its id lists that are not empty.
fn checkpoint_lines(section: &mut Section, checkpoint: &GraphCheckpoint) {
    section.line(format!(
        "- Checkpoint: `{}` (graph revision {})",
        checkpoint.checkpoint_id, checkpoint.graph_revision
    ));
    if let Some(summary) = &checkpoint.summary {
        section.line(format!("- Checkpoint summary: {}", collapse(summary)));
    }
    for (label, list) in [
        ("Checkpoint frontier nodes", &checkpoint.frontier_node_ids),
        ("Checkpoint open questions", &checkpoint.open_question_ids),
        ("Checkpoint open gaps", &checkpoint.open_gap_ids),
    ] {
        if !list.is_empty() {
            section.line(format!("- {label}: {}", inline_ids(list)));
        }
    }
}

/// Links up to their limit, those touching the focus first, then the omission line.
fn link_lines(section: &mut Section, state: &State, focus: &[String]) {
    let touches = |id: &String| focus.contains(id);
    let (near, far): (Vec<_>, Vec<_>) = state
        .graphs
        .links
        .iter()
        .partition(|l| touches(&l.dataflow_node_id) || touches(&l.architecture_node_id));
    for link in near.into_iter().chain(far).take(LINK_LIMIT) {
        let relationship = link
            .relationship
            .as_ref()
            .map_or(String::new(), |r| format!(" ({})", collapse(r)));
        section.line(format!(
            "- Link: `{}` -> `{}`{relationship}{}",
            link.dataflow_node_id,
            link.architecture_node_id,
            ref_suffix(&link.code_refs)
        ));
    }
    omission(
        section,
        "",
        state.graphs.links.len(),
        LINK_LIMIT,
        "graph links",
    );
}

/// Up to three nodes (focus first, then fill in graph order), each with its certificate, and
/// the edges around them.
fn graph_detail(
    section: &mut Section,
    state: &State,
    kind: GraphKind,
    staleness: Option<&Staleness>,
    focus: &[String],
) {
    let graph = state.graphs.each()[usize::from(kind == GraphKind::Dataflow)].1;
    let mut selected: Vec<_> = graph
        .nodes
        .iter()
        .filter(|n| focus.contains(&n.id))
        .take(NODE_LIMIT)
        .collect();
    for node in &graph.nodes {
        if selected.len() >= NODE_LIMIT {
            break;
        }
        if !selected.iter().any(|s| std::ptr::eq(*s, node)) {
            selected.push(node);
        }
    }
    for node in &selected {
        let status = node
            .status
            .as_ref()
            .map_or(String::new(), |s| format!(" [{}]", collapse(s)));
        section.line(format!(
            "  - Focus node `{}`{status}: {}",
            node.id,
            collapse(&node.title)
        ));
        section.line(format!("    purpose: {}", collapse(&node.purpose)));
        for (label, value) in [("mechanism", &node.mechanism), ("metaphor", &node.metaphor)] {
            if let Some(value) = value {
                section.line(format!("    {label}: {}", collapse(value)));
            }
        }
        if !node.code_refs.is_empty() {
            section.line(format!("    code refs: {}", code_refs(&node.code_refs)));
        }
        let owner = RefOwner::Node {
            graph: kind,
            id: node.id.clone(),
        };
        if let Some(certificate) = staleness.and_then(|s| s.certificate(&owner)) {
            section.line(format!("    checked: {}", checked_note(certificate)));
        }
    }
    omission(
        section,
        "  ",
        graph.nodes.len(),
        selected.len(),
        "graph nodes",
    );

    let active_edges = state
        .graph_frontier
        .as_ref()
        .map_or(&[][..], |f| f.active_edge_ids.as_slice());
    let touches = |id: &str| selected.iter().any(|n| n.id == id);
    let edges: Vec<_> = graph
        .edges
        .iter()
        .filter(|e| {
            e.id.as_ref().is_some_and(|id| active_edges.contains(id))
                || touches(&e.source_id)
                || touches(&e.target_id)
        })
        .collect();
    for edge in edges.iter().take(EDGE_LIMIT) {
        let id = edge
            .id
            .as_ref()
            .map_or(String::new(), |id| format!(" `{id}`"));
        let label = edge
            .label
            .as_ref()
            .map_or(String::new(), |l| format!(" [{}]", collapse(l)));
        let mechanism = edge
            .mechanism
            .as_ref()
            .map_or(String::new(), |m| format!("; {}", collapse(m)));
        section.line(format!(
            "  - Edge{id}{label}: `{}` -> `{}` ({}){mechanism}{}",
            edge.source_id,
            edge.target_id,
            collapse(&edge.kind),
            ref_suffix(&edge.code_refs)
        ));
    }
    omission(
        section,
        "  ",
        edges.len(),
        EDGE_LIMIT,
        "focused graph edges",
    );
}
