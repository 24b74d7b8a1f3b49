//! The graph query (docs/projections.md#graph-query): a bounded traversal that starts from named
//! nodes and edges, records whose code refs match a path or symbol, edges of a kind and
//! (optionally) the active frontier, then walks `depth` hops in a direction and follows
//! architecture/dataflow links one step.
//!
//! Depth is clamped to 1–3. Ids that lead nowhere — asked for, or dangling edge endpoints met
//! on the way — come back in `missing`, never as errors. Never changes the state.

use std::collections::HashSet;
use std::path::Path;

use serde::Serialize;

use crate::policy::picture::Language;
use crate::policy::picture::Picture;
use crate::policy::projection::GraphSlice;
use crate::policy::projection::StateStatus;
use crate::policy::projection::not_found;
use crate::policy::text::uniq_append;
use crate::state::model::CodeRef;
use crate::state::model::GraphCheckpoint;
use crate::state::model::GraphEdge;
use crate::state::model::GraphFrontier;
use crate::state::model::Graphs;
use crate::state::model::State;

/// The smallest traversal depth.
pub const MIN_DEPTH: u64 = 1;
/// The largest traversal depth.
pub const MAX_DEPTH: u64 = 3;

/// Which way edges are followed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Direction {
    /// From an edge's target to its source.
    Incoming,
    /// From an edge's source to its target.
    Outgoing,
    /// Both ways.
    #[default]
    Both,
}

/// Where to start and how far to walk.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GraphQuery {
    /// Start nodes.
    pub node_ids: Vec<String>,
    /// Start edges (their endpoints become start nodes).
    pub edge_ids: Vec<String>,
    /// Records citing one of these paths (suffix match, by path component).
    pub paths: Vec<String>,
    /// Records citing one of these symbols (exact).
    pub symbols: Vec<String>,
    /// Edges of these kinds (exact), with their endpoints.
    pub edge_kinds: Vec<String>,
    /// Start from the active frontier too.
    pub frontier: bool,
    /// Which way to walk.
    pub direction: Direction,
    /// How many hops; clamped to 1–3.
    pub depth: u64,
}

/// What the query found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
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

/// Ids the query reached that are not in the graphs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Missing {
    /// Node ids (asked for, or dangling endpoints met on the way).
    pub node_ids: Vec<String>,
    /// Edge ids.
    pub edge_ids: Vec<String>,
}

/// The query's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GraphQueryResult {
    /// Whether a state exists.
    pub state_status: StateStatus,
    /// Its revision.
    pub state_revision: Option<u64>,
    /// The direction walked.
    pub direction: Direction,
    /// The depth walked, after clamping.
    pub depth: u64,
    /// Nodes, edges and links reached.
    pub graph: GraphSlice,
    /// The graph frontier.
    pub frontier: Option<GraphFrontier>,
    /// The graph checkpoint.
    pub checkpoint: Option<GraphCheckpoint>,
    /// What matched.
    pub matched: Matched,
    /// What was not found.
    pub missing: Missing,
    /// The reached nodes, edges and links drawn (`--format mermaid|dot`), stale nodes marked.
    pub picture: Option<String>,
}

/// `depth` clamped to 1–3 (0 reads as 1).
pub fn clamp_depth(depth: u64) -> u64 {
    depth.clamp(MIN_DEPTH, MAX_DEPTH)
}

/// An ordered id list with constant-time membership.
#[derive(Default)]
struct Ids {
    order: Vec<String>,
    seen: HashSet<String>,
}

impl Ids {
    fn add(&mut self, id: &str) {
        if self.seen.insert(id.to_owned()) {
            self.order.push(id.to_owned());
        }
    }

    fn contains(&self, id: &str) -> bool {
        self.seen.contains(id)
    }

    fn set(&self) -> HashSet<&str> {
        self.order.iter().map(String::as_str).collect()
    }
}

/// Runs the query.
pub fn query_graph(state: Option<&State>, query: &GraphQuery) -> GraphQueryResult {
    let depth = clamp_depth(query.depth);
    let mut nodes = Ids::default();
    let mut edges = Ids::default();
    query.node_ids.iter().for_each(|id| nodes.add(id));
    query.edge_ids.iter().for_each(|id| edges.add(id));
    let Some(state) = state else {
        return GraphQueryResult {
            state_status: StateStatus::Missing,
            state_revision: None,
            direction: query.direction,
            depth,
            graph: GraphSlice::default(),
            frontier: None,
            checkpoint: None,
            matched: Matched::default(),
            missing: Missing {
                node_ids: nodes.order,
                edge_ids: edges.order,
            },
            picture: None,
        };
    };
    let graphs = &state.graphs;
    let mut matched = Matched::default();

    if query.frontier
        && let Some(frontier) = &state.graph_frontier
    {
        frontier.active_node_ids.iter().for_each(|id| nodes.add(id));
        frontier.active_edge_ids.iter().for_each(|id| edges.add(id));
    }
    if !query.paths.is_empty() || !query.symbols.is_empty() {
        start_from_refs(graphs, query, &mut matched, &mut nodes, &mut edges);
    }
    for edge in all_edges(graphs) {
        if query.edge_kinds.contains(&edge.kind) {
            uniq_append(&mut matched.edge_kinds, [edge.kind.clone()]);
            add_edge(edge, &mut nodes, &mut edges);
        }
    }
    // Starting from an edge means starting from its endpoints.
    for edge in all_edges(graphs) {
        if edge.id.as_deref().is_some_and(|id| edges.contains(id)) {
            nodes.add(&edge.source_id);
            nodes.add(&edge.target_id);
        }
    }
    walk(graphs, query.direction, depth, &mut nodes, &mut edges);

    let graph = GraphSlice::select(graphs, &nodes.set(), &edges.set());
    matched.node_ids = graph.node_ids().map(str::to_owned).collect();
    matched.edge_ids = graph.edge_ids().map(str::to_owned).collect();
    let missing = Missing {
        node_ids: not_found(&nodes.order, graph.node_ids()),
        edge_ids: not_found(&edges.order, graph.edge_ids()),
    };
    GraphQueryResult {
        state_status: StateStatus::Ready,
        state_revision: Some(state.revision),
        direction: query.direction,
        depth,
        frontier: state.graph_frontier.clone(),
        checkpoint: state.graph_checkpoint.clone(),
        graph,
        matched,
        missing,
        picture: None,
    }
}

/// Every edge, the architecture graph's then the dataflow graph's.
fn all_edges(graphs: &Graphs) -> impl Iterator<Item = &GraphEdge> {
    graphs
        .architecture
        .edges
        .iter()
        .chain(&graphs.dataflow.edges)
}

/// Starts from the nodes, edges and links with a code reference the query's paths or symbols
/// match (an edge adds its endpoints, a link both its nodes), noting in `matched` the paths
/// and symbols of the first matching reference of each.
fn start_from_refs(
    graphs: &Graphs,
    query: &GraphQuery,
    matched: &mut Matched,
    nodes: &mut Ids,
    edges: &mut Ids,
) {
    let mut first_match = |refs: &[CodeRef]| {
        let found = refs.iter().find(|r| ref_matches(r, query)).cloned();
        if let Some(r) = &found {
            if !query.paths.is_empty() {
                uniq_append(&mut matched.paths, [r.path.clone()]);
            }
            if let Some(symbol) = r.symbol.as_ref().filter(|_| !query.symbols.is_empty()) {
                uniq_append(&mut matched.symbols, [symbol.clone()]);
            }
        }
        found.is_some()
    };
    for node in graphs
        .architecture
        .nodes
        .iter()
        .chain(&graphs.dataflow.nodes)
    {
        if first_match(&node.code_refs) {
            nodes.add(&node.id);
        }
    }
    for edge in all_edges(graphs) {
        if first_match(&edge.code_refs) {
            add_edge(edge, nodes, edges);
        }
    }
    for link in &graphs.links {
        if first_match(&link.code_refs) {
            nodes.add(&link.dataflow_node_id);
            nodes.add(&link.architecture_node_id);
        }
    }
}

/// Follows edges from the reached nodes `depth` times in `direction` (stopping early when a
/// round reaches nothing new), then adds the other end of every link from a reached node.
fn walk(graphs: &Graphs, direction: Direction, depth: u64, nodes: &mut Ids, edges: &mut Ids) {
    for _ in 0..depth {
        let reached: HashSet<String> = nodes.seen.clone();
        let before = nodes.order.len();
        for edge in all_edges(graphs) {
            let outgoing = direction != Direction::Incoming && reached.contains(&edge.source_id);
            let incoming = direction != Direction::Outgoing && reached.contains(&edge.target_id);
            if (outgoing || incoming)
                && let Some(id) = &edge.id
            {
                edges.add(id);
            }
            if outgoing {
                nodes.add(&edge.target_id);
            }
            if incoming {
                nodes.add(&edge.source_id);
            }
        }
        if nodes.order.len() == before {
            break;
        }
    }
    for link in &graphs.links {
        if nodes.contains(&link.dataflow_node_id) {
            nodes.add(&link.architecture_node_id);
        } else if nodes.contains(&link.architecture_node_id) {
            nodes.add(&link.dataflow_node_id);
        }
    }
}

/// A slice of the graphs drawn: architecture and dataflow nodes (dataflow labels marked),
/// edges labelled with their kind, links dashed; the nodes in `stale` marked.
pub fn draw(slice: &GraphSlice, stale: &HashSet<&str>, language: Language) -> String {
    let mut picture = Picture::new(language);
    for (kind, nodes) in [
        ("architecture", &slice.architecture_nodes),
        ("dataflow", &slice.dataflow_nodes),
    ] {
        for node in nodes {
            let label = if kind == "dataflow" {
                format!("{} (dataflow)", node.title)
            } else {
                node.title.clone()
            };
            picture.node(
                &format!("{kind}:{}", node.id),
                &label,
                stale.contains(node.id.as_str()),
            );
        }
    }
    for (kind, edges) in [
        ("architecture", &slice.architecture_edges),
        ("dataflow", &slice.dataflow_edges),
    ] {
        for edge in edges {
            picture.edge(
                &format!("{kind}:{}", edge.source_id),
                &format!("{kind}:{}", edge.target_id),
                Some(&edge.kind),
                false,
            );
        }
    }
    for link in &slice.links {
        picture.edge(
            &format!("dataflow:{}", link.dataflow_node_id),
            &format!("architecture:{}", link.architecture_node_id),
            link.relationship.as_deref(),
            true,
        );
    }
    picture.finish()
}

fn add_edge(edge: &GraphEdge, nodes: &mut Ids, edges: &mut Ids) {
    if let Some(id) = &edge.id {
        edges.add(id);
    }
    nodes.add(&edge.source_id);
    nodes.add(&edge.target_id);
}

/// Whether a code ref satisfies both the path and the symbol filters. Paths match when equal
/// or when either ends with the other, compared by component (`prompt.rs` matches
/// `src/prompt.rs`; `rompt.rs` does not).
fn ref_matches(code_ref: &CodeRef, query: &GraphQuery) -> bool {
    let path = Path::new(&code_ref.path);
    let path_ok = query.paths.is_empty()
        || query.paths.iter().any(|wanted| {
            let wanted = Path::new(wanted);
            path.ends_with(wanted) || wanted.ends_with(path)
        });
    let symbol_ok = query.symbols.is_empty()
        || code_ref
            .symbol
            .as_ref()
            .is_some_and(|symbol| query.symbols.contains(symbol));
    path_ok && symbol_ok
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::fixtures::edge;
    use crate::policy::fixtures::node;
    use crate::state::model::GraphLink;

    /// a -> b -> c -> d (architecture), plus an anonymous b -> ghost, and dataflow x linked to c.
    fn state() -> State {
        let mut state = State::default();
        state.graphs.architecture.nodes = vec![
            node("a", &["src/a.rs"]),
            node("b", &[]),
            node("c", &[]),
            node("d", &[]),
        ];
        state.graphs.architecture.edges = vec![
            edge(Some("ab"), "a", "b", "calls"),
            edge(Some("bc"), "b", "c", "calls"),
            edge(Some("cd"), "c", "d", "feeds"),
            edge(None, "b", "ghost", "calls"),
        ];
        state.graphs.dataflow.nodes = vec![node("x", &[])];
        state.graphs.links = vec![GraphLink {
            dataflow_node_id: "x".into(),
            architecture_node_id: "c".into(),
            relationship: None,
            code_refs: vec![CodeRef {
                symbol: Some("render".into()),
                ..CodeRef::to_path("src/render.rs")
            }],
        }];
        state.graph_frontier = Some(GraphFrontier {
            active_node_ids: vec!["d".into()],
            ..GraphFrontier::default()
        });
        state
    }

    fn run(query: GraphQuery) -> GraphQueryResult {
        query_graph(Some(&state()), &query)
    }

    fn from(node: &str, direction: Direction, depth: u64) -> GraphQuery {
        GraphQuery {
            node_ids: vec![node.into()],
            direction,
            depth,
            ..GraphQuery::default()
        }
    }

    #[test]
    fn depth_is_clamped() {
        assert_eq!(clamp_depth(0), 1);
        assert_eq!(clamp_depth(2), 2);
        assert_eq!(clamp_depth(99), 3);
        assert_eq!(run(from("a", Direction::Outgoing, 0)).depth, 1);
    }

    #[test]
    fn outgoing_walks_forward_by_depth() {
        let one = run(from("a", Direction::Outgoing, 1));
        assert_eq!(one.matched.node_ids, vec!["a", "b"]);
        let two = run(from("a", Direction::Outgoing, 2));
        assert_eq!(two.matched.node_ids, vec!["a", "b", "c", "x"]);
        // The anonymous edge to a node that does not exist is reported as a missing node.
        assert_eq!(two.missing.node_ids, vec!["ghost"]);
        let three = run(from("a", Direction::Outgoing, 3));
        assert!(three.matched.node_ids.contains(&"d".to_owned()));
    }

    #[test]
    fn incoming_and_both() {
        let incoming = run(from("c", Direction::Incoming, 1));
        assert_eq!(incoming.matched.node_ids, vec!["b", "c", "x"]);
        let both = run(from("c", Direction::Both, 1));
        assert_eq!(both.matched.node_ids, vec!["b", "c", "d", "x"]);
        assert_eq!(both.matched.edge_ids, vec!["ab", "bc", "cd"]);
    }

    #[test]
    fn paths_symbols_kinds_frontier_and_edges_seed_the_walk() {
        let by_path = run(GraphQuery {
            paths: vec!["a.rs".into()],
            direction: Direction::Outgoing,
            ..GraphQuery::default()
        });
        assert_eq!(by_path.matched.paths, vec!["src/a.rs"]);
        assert_eq!(by_path.matched.node_ids, vec!["a", "b"]);
        let no_partial = run(GraphQuery {
            paths: vec!["rc/a.rs".into()],
            ..GraphQuery::default()
        });
        assert!(no_partial.matched.node_ids.is_empty());
        let by_symbol = run(GraphQuery {
            symbols: vec!["render".into()],
            direction: Direction::Outgoing,
            ..GraphQuery::default()
        });
        assert_eq!(by_symbol.matched.symbols, vec!["render"]);
        assert!(by_symbol.matched.node_ids.contains(&"x".to_owned()));
        let by_kind = run(GraphQuery {
            edge_kinds: vec!["feeds".into()],
            direction: Direction::Outgoing,
            ..GraphQuery::default()
        });
        assert_eq!(by_kind.matched.edge_kinds, vec!["feeds"]);
        assert!(by_kind.matched.node_ids.contains(&"c".to_owned()));
        let frontier = run(GraphQuery {
            frontier: true,
            direction: Direction::Incoming,
            ..GraphQuery::default()
        });
        // d's incoming edge reaches c, and c's link reaches dataflow x.
        assert_eq!(frontier.matched.node_ids, vec!["c", "d", "x"]);
        let by_edge = run(GraphQuery {
            edge_ids: vec!["bc".into(), "nope".into()],
            direction: Direction::Outgoing,
            ..GraphQuery::default()
        });
        assert!(by_edge.matched.node_ids.contains(&"d".to_owned()));
        assert_eq!(by_edge.missing.edge_ids, vec!["nope"]);
    }

    #[test]
    fn missing_state_echoes_ids() {
        let result = query_graph(
            None,
            &GraphQuery {
                node_ids: vec!["a".into(), "a".into()],
                edge_ids: vec!["e".into()],
                ..GraphQuery::default()
            },
        );
        assert_eq!(result.state_status, StateStatus::Missing);
        assert_eq!(result.missing.node_ids, vec!["a"]);
        assert_eq!(result.missing.edge_ids, vec!["e"]);
    }
}
