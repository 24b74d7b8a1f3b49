//! The map's one-line writes: `node set` / `node rm`, `edge add` / `edge rm`, and which graph
//! an id lives in (`recheck` asks too). Each edit is made from the state it is applied to.

use std::collections::HashSet;

use crate::policy::one_line::Edit;
use crate::policy::one_line::given;
use crate::policy::one_line::record_names;
use crate::state::fields::Keyed;
use crate::state::model::CodeRef;
use crate::state::model::Graph;
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
fn node_graph(
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
fn find_node<'s>(state: &'s State, kind: GraphKind, id: &str) -> Option<&'s GraphNode> {
    graph_of(state, kind)
        .nodes
        .iter()
        .find(|node| node.id == id)
}

fn graph_of(state: &State, kind: GraphKind) -> &Graph {
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

/// What `node set` writes: the node `id` as `state` holds it (in the graph named, else the one
/// that holds it; a new node goes to the architecture graph) with the changes, upserted; only
/// the values given change, so a concurrent edit of another of its values stays. Unchanged
/// when the node already says this.
pub fn node_set(
    state: &State,
    id: &str,
    graph: Option<GraphKind>,
    changes: NodeChanges<'_>,
) -> Result<Edit, Vec<Problem>> {
    let kind = node_graph(state, id, graph, "--graph").map_err(|problem| vec![problem])?;
    let existing = find_node(state, kind, id);
    let node = set_node(existing, id, changes)?;
    if existing == Some(&node) {
        return Ok(Edit::Unchanged {
            hint: format!(
                "node \"{id}\" already says this; nothing was written (to record that it still holds, run `epiphany recheck {id}`)"
            ),
        });
    }
    let mut patch = Patch::default();
    match kind {
        GraphKind::Architecture => patch.upsert.architecture_nodes.push(node),
        GraphKind::Dataflow => patch.upsert.dataflow_nodes.push(node),
    }
    Ok(Edit::upserts(patch))
}

/// `existing` with the changes, or a new node (its title defaults to its id; it needs a
/// purpose).
fn set_node(
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

/// What `node rm` writes: the node `id` (of the graph named, else the one that holds it), every
/// edge and link that names it, and, unless the other graph still has a node `id`, its place
/// on the frontier and the graph checkpoint, and its edges' ids on the frontier: nothing is
/// left naming what is gone.
pub fn node_rm(state: &State, id: &str, graph: Option<GraphKind>) -> Result<Edit, Vec<Problem>> {
    let kind = node_graph(state, id, graph, "--graph").map_err(|problem| vec![problem])?;
    if find_node(state, kind, id).is_none() {
        return Err(vec![Problem::new(
            "ID",
            format!("there is no {} node \"{id}\"", kind.as_str()),
        )]);
    }
    let mut patch = Patch::default();
    let edges: Vec<EdgeRef> = graph_of(state, kind)
        .edges
        .iter()
        .filter(|edge| edge.source_id == id || edge.target_id == id)
        .map(edge_ref)
        .collect();
    patch.remove.links = (state.graphs.links.iter())
        .filter(|link| match kind {
            GraphKind::Architecture => link.architecture_node_id == id,
            GraphKind::Dataflow => link.dataflow_node_id == id,
        })
        .map(|link| LinkRef {
            dataflow_node_id: link.dataflow_node_id.clone(),
            architecture_node_id: link.architecture_node_id.clone(),
        })
        .collect();
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
    Ok(removal(state, patch))
}

/// A removal patch with what it leaves the frontier and the graph checkpoint naming taken off
/// them, and what it removes, named.
fn removal(state: &State, mut patch: Patch) -> Edit {
    let mut removed = record_names(patch.remove.keys());
    removed.extend(prune_frontier(state, &mut patch));
    Edit::Write {
        patch: Box::new(patch),
        written: Vec::new(),
        removed,
    }
}

/// Takes the nodes and edge ids `patch` removes off the frontier and the graph checkpoint,
/// where no graph holds them once it is applied (a node id may live in both graphs, and so may
/// an edge id); ids that were missing before are left as they are. Answers what it took off,
/// as `field.list/id`.
fn prune_frontier(state: &State, patch: &mut Patch) -> Vec<String> {
    let (mut gone_nodes, mut left_nodes) = (HashSet::new(), HashSet::new());
    let (mut gone_edges, mut left_edges) = (HashSet::new(), HashSet::new());
    for (kind, graph) in state.graphs.each() {
        let (nodes, edges) = match kind {
            GraphKind::Architecture => (
                &patch.remove.architecture_nodes,
                &patch.remove.architecture_edges,
            ),
            GraphKind::Dataflow => (&patch.remove.dataflow_nodes, &patch.remove.dataflow_edges),
        };
        for node in &graph.nodes {
            match nodes.contains(&node.id) {
                true => gone_nodes.insert(node.id.as_str()),
                false => left_nodes.insert(node.id.as_str()),
            };
        }
        let edge_keys: HashSet<_> = edges.iter().map(Keyed::record_key).collect();
        for edge in &graph.edges {
            let Some(id) = edge.id.as_deref() else {
                continue;
            };
            match edge_keys.contains(&edge.record_key()) {
                true => gone_edges.insert(id),
                false => left_edges.insert(id),
            };
        }
    }
    let node_taken =
        |id: &String| gone_nodes.contains(id.as_str()) && !left_nodes.contains(id.as_str());
    let edge_taken =
        |id: &String| gone_edges.contains(id.as_str()) && !left_edges.contains(id.as_str());
    let mut removed = Vec::new();
    let mut take = |list: &[String], taken: &dyn Fn(&String) -> bool, name: &str| {
        let (out, kept): (Vec<&String>, Vec<&String>) = list.iter().partition(|id| taken(id));
        removed.extend(out.iter().map(|id| format!("{name}/{id}")));
        (!out.is_empty()).then(|| kept.into_iter().cloned().collect::<Vec<String>>())
    };
    if let Some(frontier) = &state.graph_frontier {
        let nodes = take(
            &frontier.active_node_ids,
            &node_taken,
            "graph_frontier.active_node_ids",
        );
        let edges = take(
            &frontier.active_edge_ids,
            &edge_taken,
            "graph_frontier.active_edge_ids",
        );
        if nodes.is_some() || edges.is_some() {
            patch.graph_frontier = Some(Box::new(GraphFrontier {
                active_node_ids: nodes.unwrap_or_else(|| frontier.active_node_ids.clone()),
                active_edge_ids: edges.unwrap_or_else(|| frontier.active_edge_ids.clone()),
                ..frontier.clone()
            }));
        }
    }
    if let Some(checkpoint) = &state.graph_checkpoint {
        let name = "graph_checkpoint.frontier_node_ids";
        if let Some(nodes) = take(&checkpoint.frontier_node_ids, &node_taken, name) {
            let mut checkpoint = checkpoint.clone();
            checkpoint.frontier_node_ids = nodes;
            patch.graph_checkpoint = Some(Box::new(checkpoint));
        }
    }
    removed
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
fn edge_graph(
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
    /// `--graph`: the graph named, else the one that holds both nodes.
    pub graph: Option<GraphKind>,
}

/// What `edge add` writes: the edge, upserted (it replaces an edge with the same id, or the
/// same ends and kind), in the graph named or the one that holds both its nodes.
pub fn edge_add(state: &State, input: EdgeInput<'_>) -> Result<Edit, Vec<Problem>> {
    let graph = edge_graph(state, input.source, input.target, input.graph)
        .map_err(|problem| vec![problem])?;
    let mut problems = Vec::new();
    let kind = given("--kind", Some(input.kind), &mut problems);
    let id = given("--id", input.id, &mut problems);
    let label = given("--label", input.label, &mut problems);
    let (Some(kind), true) = (kind, problems.is_empty()) else {
        return Err(problems);
    };
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
    Ok(Edit::upserts(patch))
}

/// What `edge rm` writes: the edge with `id`, or the one between `source` and `target` of
/// `kind`, found in `graph` or whichever graph holds it, and its id off the frontier.
pub fn edge_rm(
    state: &State,
    graph: Option<GraphKind>,
    named: &EdgeRef,
) -> Result<Edit, Vec<Problem>> {
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
        return Err(vec![Problem::new("EDGE", message)]);
    };
    let mut patch = Patch::default();
    match kind {
        GraphKind::Architecture => patch.remove.architecture_edges.push(edge.clone()),
        GraphKind::Dataflow => patch.remove.dataflow_edges.push(edge.clone()),
    }
    Ok(removal(state, patch))
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
    use crate::state::model::GraphCheckpoint;
    use crate::state::model::GraphLink;
    use crate::state::model::Graphs;

    /// Architecture: lexer -feeds-> parser (anonymous), lexer -calls-> parser (`e1`); dataflow:
    /// tokens and lexer, tokens -feeds-> lexer (`e1` too), linked tokens -> lexer; `parser`
    /// and `e1` on the frontier, `parser` and `lexer` on the graph checkpoint.
    fn state() -> State {
        State {
            graphs: Graphs {
                architecture: Graph {
                    nodes: vec![fixtures::node("lexer", &[]), fixtures::node("parser", &[])],
                    edges: vec![
                        fixtures::edge(None, "lexer", "parser", "feeds"),
                        fixtures::edge(Some("e1"), "lexer", "parser", "calls"),
                    ],
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
                active_edge_ids: vec!["e1".into()],
                dirty_paths: vec!["src/lexer.rs".into()],
                ..GraphFrontier::default()
            }),
            graph_checkpoint: Some(GraphCheckpoint {
                checkpoint_id: "gc-1".into(),
                graph_revision: 3,
                summary: None,
                frontier_node_ids: vec!["parser".into(), "lexer".into()],
                open_question_ids: vec![],
                open_gap_ids: vec![],
            }),
            ..State::default()
        }
    }

    /// The patch, the records written and what was removed, of an edit that writes.
    fn write(edit: Edit) -> (Patch, Vec<String>, Vec<String>) {
        match edit {
            Edit::Write {
                patch,
                written,
                removed,
            } => (*patch, written, removed),
            Edit::Unchanged { hint } => panic!("unchanged: {hint}"),
        }
    }

    #[test]
    fn node_set_changes_only_what_it_names_of_the_node_it_finds() {
        let mut state = state();
        state.graphs.architecture.nodes[0].mechanism = Some("written by another".into());
        let changes = NodeChanges {
            purpose: Some("turns bytes into tokens"),
            ..NodeChanges::default()
        };
        let (patch, written, removed) =
            write(node_set(&state, "lexer", Some(GraphKind::Architecture), changes).expect("set"));
        let node = &patch.upsert.architecture_nodes[0];
        assert_eq!(node.purpose, "turns bytes into tokens");
        assert_eq!(node.mechanism.as_deref(), Some("written by another"));
        assert_eq!(node.title, "lexer");
        assert_eq!(written, ["architecture_nodes/lexer"]);
        assert!(removed.is_empty());
        let same = NodeChanges {
            purpose: Some("p"),
            ..NodeChanges::default()
        };
        let unchanged = node_set(&state, "parser", None, same).expect("set");
        assert!(
            matches!(&unchanged, Edit::Unchanged { hint } if hint.contains("epiphany recheck parser")),
            "{unchanged:?}"
        );
        let problems = node_set(&state, "new", None, NodeChanges::default()).expect_err("purpose");
        assert_eq!(problems[0].path, "--purpose");
        let new = NodeChanges {
            purpose: Some("p"),
            ..NodeChanges::default()
        };
        let (patch, ..) = write(node_set(&state, "new", None, new).expect("new"));
        let node = &patch.upsert.architecture_nodes[0];
        assert_eq!((node.title.as_str(), node.purpose.as_str()), ("new", "p"));
        let both = node_set(&state, "lexer", None, NodeChanges::default()).expect_err("both");
        assert_eq!(both[0].path, "--graph");
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
    fn node_rm_takes_its_edges_links_and_frontier_places_along() {
        let state = state();
        let (patch, written, removed) = write(node_rm(&state, "parser", None).expect("rm parser"));
        assert!(written.is_empty());
        assert_eq!(patch.remove.architecture_nodes, ["parser"]);
        assert_eq!(patch.remove.architecture_edges.len(), 2);
        let frontier = patch.graph_frontier.expect("frontier");
        assert_eq!(frontier.active_node_ids, Vec::<String>::new());
        assert_eq!(frontier.active_edge_ids, Vec::<String>::new());
        assert_eq!(frontier.dirty_paths, ["src/lexer.rs"], "the rest stays");
        let checkpoint = patch.graph_checkpoint.expect("graph checkpoint");
        assert_eq!(checkpoint.frontier_node_ids, ["lexer"]);
        assert_eq!(checkpoint.checkpoint_id, "gc-1");
        assert_eq!(
            removed,
            [
                "architecture_nodes/parser",
                "architecture_edges/lexer->parser:feeds",
                "architecture_edges/e1",
                "graph_frontier.active_node_ids/parser",
                "graph_frontier.active_edge_ids/e1",
                "graph_checkpoint.frontier_node_ids/parser",
            ]
        );
        // The dataflow graph still has a `lexer`: its place on the frontier stays.
        let (patch, _, removed) =
            write(node_rm(&state, "lexer", Some(GraphKind::Architecture)).expect("rm lexer"));
        assert_eq!(patch.remove.links.len(), 1);
        assert!(patch.graph_checkpoint.is_none(), "{patch:?}");
        assert_eq!(
            patch.graph_frontier.expect("frontier").active_edge_ids,
            Vec::<String>::new()
        );
        assert!(
            removed.contains(&"links/tokens->lexer".to_owned()),
            "{removed:?}"
        );
        assert!(
            !removed.iter().any(|r| r.ends_with("_node_ids/lexer")),
            "{removed:?}"
        );
        let missing = node_rm(&state, "parser", Some(GraphKind::Dataflow)).expect_err("none");
        assert_eq!(
            (missing[0].path.as_str(), missing[0].message.as_str()),
            ("ID", "there is no dataflow node \"parser\"")
        );
    }

    #[test]
    fn a_removal_leaves_alone_frontier_ids_it_does_not_make_missing() {
        let mut state = state();
        // `e1` also lives in the dataflow graph, and `ghost` was missing before.
        state.graphs.dataflow.edges = vec![fixtures::edge(Some("e1"), "tokens", "lexer", "feeds")];
        if let Some(frontier) = &mut state.graph_frontier {
            frontier.active_node_ids.push("ghost".into());
        }
        let (patch, _, removed) = write(
            edge_rm(
                &state,
                Some(GraphKind::Architecture),
                &EdgeRef::Id("e1".into()),
            )
            .expect("rm"),
        );
        assert_eq!(removed, ["architecture_edges/e1"]);
        assert!(patch.graph_frontier.is_none(), "{patch:?}");
        let (patch, _, removed) = write(node_rm(&state, "parser", None).expect("rm"));
        let frontier = patch.graph_frontier.expect("frontier");
        assert_eq!(frontier.active_node_ids, ["ghost"]);
        assert_eq!(frontier.active_edge_ids, ["e1"]);
        assert!(!removed.iter().any(|r| r.contains("ghost")), "{removed:?}");
    }

    #[test]
    fn edges_are_added_and_removed_by_ends_or_id() {
        let state = state();
        let input = EdgeInput {
            source: "parser",
            target: "lexer",
            kind: "calls",
            id: None,
            label: None,
            refs: vec![],
            graph: None,
        };
        let (patch, written, _) = write(edge_add(&state, input.clone()).expect("edge"));
        assert_eq!(written, ["architecture_edges/parser->lexer:calls"]);
        assert_eq!(patch.upsert.architecture_edges.len(), 1);
        let blank = EdgeInput { kind: " ", ..input };
        assert_eq!(
            edge_add(&state, blank).expect_err("blank")[0].path,
            "--kind"
        );
        let named = EdgeRef::Ends {
            source_id: "lexer".into(),
            target_id: "parser".into(),
            kind: "feeds".into(),
        };
        let (patch, written, removed) = write(edge_rm(&state, None, &named).expect("rm"));
        assert_eq!(patch.remove.architecture_edges, [named]);
        assert!(
            patch.graph_frontier.is_none(),
            "an anonymous edge is on no frontier"
        );
        assert!(written.is_empty());
        assert_eq!(removed, ["architecture_edges/lexer->parser:feeds"]);
        let (patch, _, removed) =
            write(edge_rm(&state, None, &EdgeRef::Id("e1".into())).expect("rm"));
        assert_eq!(
            patch.graph_frontier.expect("frontier").active_edge_ids,
            Vec::<String>::new()
        );
        assert_eq!(
            removed,
            ["architecture_edges/e1", "graph_frontier.active_edge_ids/e1"]
        );
        let missing = edge_rm(&state, None, &EdgeRef::Id("e9".into())).expect_err("none");
        assert_eq!(missing[0].message, "there is no edge \"e9\"");
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
