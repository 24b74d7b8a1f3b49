//! The map's one-line writes: `node set` / `node rm`, `edge add` / `edge rm`, and which graph
//! an id lives in (`recheck` asks too).

use crate::policy::one_line::given;
use crate::state::model::CodeRef;
use crate::state::model::GraphEdge;
use crate::state::model::GraphFrontier;
use crate::state::model::GraphKind;
use crate::state::model::GraphNode;
use crate::state::model::State;
use crate::state::patch::EdgeRef;
use crate::state::patch::LinkRef;
use crate::state::patch::Patch;
use crate::state::patch::Recheck;
use crate::state::problem::Problem;

/// The graphs that hold a node with `id`.
fn graphs_with(state: &State, id: &str) -> Vec<GraphKind> {
    state
        .graphs
        .each()
        .into_iter()
        .filter(|(_, graph)| graph.nodes.iter().any(|node| node.id == id))
        .map(|(kind, _)| kind)
        .collect()
}

/// The graph a node is addressed in: the one named, else the one that holds it; a new node
/// goes to the architecture graph. `flag` is where a problem is reported.
pub fn node_graph(
    state: &State,
    id: &str,
    named: Option<GraphKind>,
    flag: &str,
) -> Result<GraphKind, Problem> {
    if let Some(kind) = named {
        return Ok(kind);
    }
    match graphs_with(state, id).as_slice() {
        [] => Ok(GraphKind::Architecture),
        [only] => Ok(*only),
        _ => Err(Problem::new(
            flag,
            format!(
                "node \"{id}\" is in both graphs; say which with `--graph architecture` or `--graph dataflow`"
            ),
        )),
    }
}

/// The node `id` of graph `kind`, if there is one.
pub fn find_node<'s>(state: &'s State, kind: GraphKind, id: &str) -> Option<&'s GraphNode> {
    graph_of(state, kind)
        .nodes
        .iter()
        .find(|node| node.id == id)
}

fn graph_of(state: &State, kind: GraphKind) -> &crate::state::model::Graph {
    match kind {
        GraphKind::Architecture => &state.graphs.architecture,
        GraphKind::Dataflow => &state.graphs.dataflow,
    }
}

/// What `node set` changes: each value given replaces the node's, `refs` replaces its code
/// refs when given.
#[derive(Debug, Clone, Default)]
pub struct NodeChanges<'a> {
    /// `--title`.
    pub title: Option<&'a str>,
    /// `--purpose`.
    pub purpose: Option<&'a str>,
    /// `--mechanism`.
    pub mechanism: Option<&'a str>,
    /// `--status`.
    pub status: Option<&'a str>,
    /// `--ref`, when any was given.
    pub refs: Option<Vec<CodeRef>>,
}

/// The node `node set` writes: `existing` with the changes, or a new node (its title defaults
/// to its id; it needs a purpose).
pub fn set_node(
    existing: Option<&GraphNode>,
    id: &str,
    changes: NodeChanges<'_>,
) -> Result<GraphNode, Vec<Problem>> {
    let mut problems = Vec::new();
    let title = given("--title", changes.title, &mut problems);
    let purpose = given("--purpose", changes.purpose, &mut problems);
    let mechanism = given("--mechanism", changes.mechanism, &mut problems);
    let status = given("--status", changes.status, &mut problems);
    if existing.is_none() && purpose.is_none() && changes.purpose.is_none() {
        problems.push(Problem::new(
            "--purpose",
            format!("node \"{id}\" is new; a new node needs a purpose"),
        ));
    }
    if !problems.is_empty() {
        return Err(problems);
    }
    let mut node = existing.cloned().unwrap_or_else(|| GraphNode {
        id: id.to_owned(),
        title: id.to_owned(),
        purpose: String::new(),
        mechanism: None,
        metaphor: None,
        status: None,
        code_refs: Vec::new(),
    });
    if let Some(title) = title {
        node.title = title;
    }
    if let Some(purpose) = purpose {
        node.purpose = purpose;
    }
    node.mechanism = mechanism.or(node.mechanism);
    node.status = status.or(node.status);
    if let Some(refs) = changes.refs {
        node.code_refs = refs;
    }
    Ok(node)
}

/// The patch `node set` writes.
pub fn node_upsert(kind: GraphKind, node: GraphNode) -> Patch {
    let mut patch = Patch::default();
    match kind {
        GraphKind::Architecture => patch.upsert.architecture_nodes.push(node),
        GraphKind::Dataflow => patch.upsert.dataflow_nodes.push(node),
    }
    patch
}

/// The patch `node rm` writes: the node, every edge and link that names it, and its entries on
/// the frontier and the graph checkpoint (which would otherwise name a missing node); with
/// what else goes, as `kind id` lines for the report.
pub fn node_removal(
    state: &State,
    kind: GraphKind,
    id: &str,
) -> Result<(Patch, Vec<String>), Problem> {
    if find_node(state, kind, id).is_none() {
        return Err(Problem::new(
            "ID",
            format!("there is no {} node \"{id}\"", kind.as_str()),
        ));
    }
    let mut patch = Patch::default();
    let mut also = Vec::new();
    let edges: Vec<EdgeRef> = graph_of(state, kind)
        .edges
        .iter()
        .filter(|edge| edge.source_id == id || edge.target_id == id)
        .map(edge_ref)
        .collect();
    also.extend(
        edges
            .iter()
            .map(|edge| format!("edge {}", describe_edge(edge))),
    );
    let links: Vec<LinkRef> = state
        .graphs
        .links
        .iter()
        .filter(|link| match kind {
            GraphKind::Architecture => link.architecture_node_id == id,
            GraphKind::Dataflow => link.dataflow_node_id == id,
        })
        .map(|link| LinkRef {
            dataflow_node_id: link.dataflow_node_id.clone(),
            architecture_node_id: link.architecture_node_id.clone(),
        })
        .collect();
    also.extend(links.iter().map(|link| {
        format!(
            "link {} -> {}",
            link.dataflow_node_id, link.architecture_node_id
        )
    }));
    match kind {
        GraphKind::Architecture => {
            patch.remove.architecture_nodes.push(id.to_owned());
            patch.remove.architecture_edges = edges;
        }
        GraphKind::Dataflow => {
            patch.remove.dataflow_nodes.push(id.to_owned());
            patch.remove.dataflow_edges = edges;
        }
    }
    patch.remove.links = links;
    // The id stays on the frontier and checkpoint while the other graph still has it.
    let still_named = graphs_with(state, id).len() > 1;
    if !still_named {
        drop_from_frontier(state, id, &mut patch, &mut also);
    }
    Ok((patch, also))
}

fn drop_from_frontier(state: &State, id: &str, patch: &mut Patch, also: &mut Vec<String>) {
    if let Some(frontier) = &state.graph_frontier
        && frontier.active_node_ids.iter().any(|n| n == id)
    {
        patch.graph_frontier = Some(Box::new(GraphFrontier {
            active_node_ids: (frontier.active_node_ids.iter())
                .filter(|n| *n != id)
                .cloned()
                .collect(),
            ..frontier.clone()
        }));
        also.push("its place on the frontier".to_owned());
    }
    if let Some(checkpoint) = &state.graph_checkpoint
        && checkpoint.frontier_node_ids.iter().any(|n| n == id)
    {
        let mut checkpoint = checkpoint.clone();
        checkpoint.frontier_node_ids.retain(|n| n != id);
        patch.graph_checkpoint = Some(Box::new(checkpoint));
        also.push("its place on the graph checkpoint".to_owned());
    }
}

fn edge_ref(edge: &GraphEdge) -> EdgeRef {
    match &edge.id {
        Some(id) => EdgeRef::Id(id.clone()),
        None => EdgeRef::Ends {
            source_id: edge.source_id.clone(),
            target_id: edge.target_id.clone(),
            kind: edge.kind.clone(),
        },
    }
}

fn describe_edge(edge: &EdgeRef) -> String {
    match edge {
        EdgeRef::Id(id) => format!("\"{id}\""),
        EdgeRef::Ends {
            source_id,
            target_id,
            kind,
        } => format!("{source_id} -{kind}-> {target_id}"),
    }
}

/// The graph an edge between `source` and `target` lives in: the one named, else the one that
/// holds both nodes.
pub fn edge_graph(
    state: &State,
    source: &str,
    target: &str,
    named: Option<GraphKind>,
) -> Result<GraphKind, Problem> {
    let holds_both = |kind: GraphKind| {
        find_node(state, kind, source).is_some() && find_node(state, kind, target).is_some()
    };
    if let Some(kind) = named {
        return Ok(kind);
    }
    let both: Vec<GraphKind> = [GraphKind::Architecture, GraphKind::Dataflow]
        .into_iter()
        .filter(|kind| holds_both(*kind))
        .collect();
    match both.as_slice() {
        [only] => Ok(*only),
        [] => Err(Problem::new(
            "SOURCE",
            format!(
                "no graph holds both \"{source}\" and \"{target}\"; add the missing node first (`epiphany node set ID --purpose P`)"
            ),
        )),
        _ => Err(Problem::new(
            "--graph",
            "both graphs hold these nodes; say which with `--graph architecture` or `--graph dataflow`",
        )),
    }
}

/// An edge as `edge add` types it.
#[derive(Debug, Clone)]
pub struct EdgeInput<'a> {
    /// The source node.
    pub source: &'a str,
    /// The target node.
    pub target: &'a str,
    /// `--kind`.
    pub kind: &'a str,
    /// `--id`.
    pub id: Option<&'a str>,
    /// `--label`.
    pub label: Option<&'a str>,
    /// `--ref`.
    pub refs: Vec<CodeRef>,
}

/// The patch `edge add` writes (an edge with the same id, or the same ends and kind, is
/// replaced), and the edge's key.
pub fn edge_upsert(
    graph: GraphKind,
    input: EdgeInput<'_>,
) -> Result<(Patch, String), Vec<Problem>> {
    let mut problems = Vec::new();
    let kind = given("--kind", Some(input.kind), &mut problems);
    let id = given("--id", input.id, &mut problems);
    let label = given("--label", input.label, &mut problems);
    let (Some(kind), true) = (kind, problems.is_empty()) else {
        return Err(problems);
    };
    let key = id
        .clone()
        .unwrap_or_else(|| format!("{}->{}:{kind}", input.source, input.target));
    let edge = GraphEdge {
        id,
        source_id: input.source.to_owned(),
        target_id: input.target.to_owned(),
        kind,
        label,
        mechanism: None,
        code_refs: input.refs,
    };
    let mut patch = Patch::default();
    match graph {
        GraphKind::Architecture => patch.upsert.architecture_edges.push(edge),
        GraphKind::Dataflow => patch.upsert.dataflow_edges.push(edge),
    }
    Ok((patch, key))
}

/// The patch `edge rm` writes: the edge with `id`, or the one between `source` and `target` of
/// `kind`, found in `graph` or whichever graph holds it.
pub fn edge_removal(
    state: &State,
    graph: Option<GraphKind>,
    named: &EdgeRef,
) -> Result<Patch, Problem> {
    let matches = |edge: &GraphEdge| match named {
        EdgeRef::Id(id) => edge.id.as_deref() == Some(id.as_str()),
        EdgeRef::Ends {
            source_id,
            target_id,
            kind,
        } => edge.source_id == *source_id && edge.target_id == *target_id && edge.kind == *kind,
    };
    let found: Vec<(GraphKind, EdgeRef)> = state
        .graphs
        .each()
        .into_iter()
        .filter(|(kind, _)| graph.is_none_or(|named| named == *kind))
        .flat_map(|(kind, g)| {
            g.edges
                .iter()
                .filter(|e| matches(e))
                .map(move |e| (kind, edge_ref(e)))
        })
        .collect();
    let [(kind, edge)] = found.as_slice() else {
        let message = match found.len() {
            0 => format!("there is no edge {}", describe_edge(named)),
            _ => format!(
                "both graphs have the edge {}; say which with `--graph`",
                describe_edge(named)
            ),
        };
        return Err(Problem::new("EDGE", message));
    };
    let mut patch = Patch::default();
    match kind {
        GraphKind::Architecture => patch.remove.architecture_edges.push(edge.clone()),
        GraphKind::Dataflow => patch.remove.dataflow_edges.push(edge.clone()),
    }
    Ok(patch)
}

/// What `recheck` re-anchors: each named node in every graph that holds it, and the
/// checkpoint.
pub fn recheck_targets(
    state: &State,
    nodes: &[String],
    checkpoint: bool,
) -> Result<Recheck, Vec<Problem>> {
    let mut recheck = Recheck {
        investigation_checkpoint: checkpoint,
        ..Recheck::default()
    };
    let mut problems = Vec::new();
    for id in nodes {
        let graphs = graphs_with(state, id);
        if graphs.is_empty() {
            problems.push(Problem::new("NODE", format!("there is no node \"{id}\"")));
        }
        for kind in graphs {
            let list = match kind {
                GraphKind::Architecture => &mut recheck.architecture_nodes,
                GraphKind::Dataflow => &mut recheck.dataflow_nodes,
            };
            if !list.contains(id) {
                list.push(id.clone());
            }
        }
    }
    if checkpoint && state.investigation_checkpoint.is_none() {
        problems.push(Problem::new(
            "--checkpoint",
            "there is no investigation checkpoint to re-check",
        ));
    }
    match problems.is_empty() {
        true => Ok(recheck),
        false => Err(problems),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::fixtures;
    use crate::state::model::Graph;
    use crate::state::model::GraphLink;
    use crate::state::model::Graphs;

    fn state() -> State {
        State {
            graphs: Graphs {
                architecture: Graph {
                    nodes: vec![fixtures::node("lexer", &[]), fixtures::node("parser", &[])],
                    edges: vec![fixtures::edge(None, "lexer", "parser", "feeds")],
                },
                dataflow: Graph {
                    nodes: vec![fixtures::node("tokens", &[]), fixtures::node("lexer", &[])],
                    edges: vec![],
                },
                links: vec![GraphLink {
                    dataflow_node_id: "tokens".into(),
                    architecture_node_id: "lexer".into(),
                    relationship: None,
                    code_refs: vec![],
                }],
            },
            graph_frontier: Some(GraphFrontier {
                active_node_ids: vec!["parser".into()],
                ..GraphFrontier::default()
            }),
            ..State::default()
        }
    }

    #[test]
    fn node_set_keeps_what_it_does_not_name() {
        let state = state();
        let existing = find_node(&state, GraphKind::Architecture, "lexer");
        let changes = NodeChanges {
            mechanism: Some("a loop over bytes"),
            ..NodeChanges::default()
        };
        let node = set_node(existing, "lexer", changes).expect("set");
        assert_eq!(node.title, existing.expect("node").title);
        assert_eq!(node.mechanism.as_deref(), Some("a loop over bytes"));
        let problems = set_node(None, "new", NodeChanges::default()).expect_err("no purpose");
        assert_eq!(problems[0].path, "--purpose");
        let new = set_node(
            None,
            "new",
            NodeChanges {
                purpose: Some("p"),
                ..NodeChanges::default()
            },
        )
        .expect("new");
        assert_eq!((new.title.as_str(), new.purpose.as_str()), ("new", "p"));
    }

    #[test]
    fn nodes_and_edges_find_their_graph() {
        let state = state();
        assert_eq!(
            node_graph(&state, "parser", None, "--graph"),
            Ok(GraphKind::Architecture)
        );
        assert_eq!(
            node_graph(&state, "tokens", None, "--graph"),
            Ok(GraphKind::Dataflow)
        );
        assert_eq!(
            node_graph(&state, "lexer", None, "--graph").map_err(|p| p.path),
            Err("--graph".to_owned())
        );
        assert_eq!(
            edge_graph(&state, "lexer", "parser", None),
            Ok(GraphKind::Architecture)
        );
        assert!(edge_graph(&state, "tokens", "parser", None).is_err());
    }

    #[test]
    fn node_rm_takes_its_edges_links_and_frontier_place_along() {
        let state = state();
        let (patch, also) = node_removal(&state, GraphKind::Architecture, "parser").expect("rm");
        assert_eq!(patch.remove.architecture_nodes, ["parser"]);
        assert_eq!(patch.remove.architecture_edges.len(), 1);
        assert_eq!(
            patch.graph_frontier.expect("frontier").active_node_ids,
            Vec::<String>::new()
        );
        assert_eq!(
            also,
            ["edge lexer -feeds-> parser", "its place on the frontier"]
        );
        let (patch, also) = node_removal(&state, GraphKind::Architecture, "lexer").expect("rm");
        assert_eq!(patch.remove.links.len(), 1);
        assert_eq!(also.len(), 2, "{also:?}");
        assert!(node_removal(&state, GraphKind::Dataflow, "parser").is_err());
    }

    #[test]
    fn edges_are_added_and_removed_by_ends_or_id() {
        let state = state();
        let (patch, key) = edge_upsert(
            GraphKind::Architecture,
            EdgeInput {
                source: "parser",
                target: "lexer",
                kind: "calls",
                id: None,
                label: None,
                refs: vec![],
            },
        )
        .expect("edge");
        assert_eq!(key, "parser->lexer:calls");
        assert_eq!(patch.upsert.architecture_edges.len(), 1);
        let named = EdgeRef::Ends {
            source_id: "lexer".into(),
            target_id: "parser".into(),
            kind: "feeds".into(),
        };
        let removal = edge_removal(&state, None, &named).expect("rm");
        assert_eq!(removal.remove.architecture_edges, [named]);
        let missing = edge_removal(&state, None, &EdgeRef::Id("e9".into())).expect_err("none");
        assert_eq!(missing.message, "there is no edge \"e9\"");
    }

    #[test]
    fn recheck_finds_every_graph_of_a_node() {
        let state = state();
        let recheck = recheck_targets(&state, &["lexer".into()], false).expect("targets");
        assert_eq!(recheck.architecture_nodes, ["lexer"]);
        assert_eq!(recheck.dataflow_nodes, ["lexer"]);
        let problems = recheck_targets(&state, &["ghost".into()], true).expect_err("missing");
        assert_eq!(problems.len(), 2);
    }
}
