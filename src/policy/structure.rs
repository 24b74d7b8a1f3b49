//! The structural replacement validator (docs/writes.md#structural-validator), shared by `update`
//! and `promote`: required fields, unique ids, and references between subgoals, graphs, frontier,
//! checkpoints and evidence. Every check runs; the problems come back in a fixed order, each
//! with the path of the item it concerns (docs/writes.md#problems).

use std::collections::HashSet;

use crate::policy::text::is_blank;
use crate::state::model::ChurnState;
use crate::state::model::Graph;
use crate::state::model::GraphCheckpoint;
use crate::state::model::GraphFrontier;
use crate::state::model::Graphs;
use crate::state::model::Invariant;
use crate::state::model::InvestigationCheckpoint;
use crate::state::model::Subgoal;
use crate::state::problem::Problem;
use crate::state::problem::item;
use crate::state::problem::join;

/// The replacement fields to check. `None` means "not part of this write".
#[derive(Default, Clone, Copy)]
pub struct Replacements<'a> {
    /// The active subgoal id.
    pub active_subgoal_id: Option<&'a str>,
    /// The subgoal list.
    pub subgoals: Option<&'a [Subgoal]>,
    /// The invariant list.
    pub invariants: Option<&'a [Invariant]>,
    /// The graphs.
    pub graphs: Option<&'a Graphs>,
    /// The graph frontier.
    pub graph_frontier: Option<&'a GraphFrontier>,
    /// The graph checkpoint.
    pub graph_checkpoint: Option<&'a GraphCheckpoint>,
    /// The investigation checkpoint.
    pub investigation_checkpoint: Option<&'a InvestigationCheckpoint>,
    /// Whether a checkpoint may cite an evidence id; `None` skips that check.
    pub available_evidence_ids: Option<&'a dyn Fn(&str) -> bool>,
    /// The churn judgment.
    pub churn: Option<&'a ChurnState>,
}

/// Collects problems in order.
#[derive(Debug, Default)]
pub struct Reasons(pub Vec<Problem>);

impl Reasons {
    /// Reports `<path>: must not be empty` when `value` is blank.
    pub fn require(&mut self, path: &str, value: &str) {
        if is_blank(value) {
            self.at(path, "must not be empty");
        }
    }

    /// [`Reasons::require`] for each `(field, value)` of the record at `record`: `<record>.<field>:
    /// must not be empty` for every blank one, in the order given.
    pub fn require_fields<V: AsRef<str>>(&mut self, record: &str, fields: &[(&str, V)]) {
        for (field, value) in fields {
            // Formatted only for a problem: a map has tens of thousands of nodes.
            if is_blank(value.as_ref()) {
                self.at(join(record, field), "must not be empty");
            }
        }
    }

    /// Like [`Reasons::require`], for a value that may be absent.
    pub fn require_present(&mut self, path: &str, value: Option<&str>) {
        self.require(path, value.unwrap_or(""));
    }

    /// Reports a present-but-blank optional value.
    pub fn non_blank_if_present(&mut self, path: &str, value: Option<&str>) {
        if let Some(value) = value {
            self.require(path, value);
        }
    }

    /// Every entry of the list at `list` non-blank and unique.
    pub fn non_blank_unique(&mut self, list: &str, values: &[String]) {
        let mut seen = HashSet::new();
        for (index, value) in values.iter().enumerate() {
            self.require(&item(list, index), value);
            if !is_blank(value) && !seen.insert(value.as_str()) {
                self.at(item(list, index), format!("\"{value}\" is listed twice"));
            }
        }
    }

    /// For the records of the list at `list`, given their ids in list order: `duplicate <what>
    /// id "<id>"` at the `id` of each repeat (blank ids are skipped).
    pub fn no_repeats<'a>(
        &mut self,
        list: &str,
        what: &str,
        ids: impl IntoIterator<Item = &'a str>,
    ) {
        let mut seen = HashSet::new();
        for (index, id) in ids.into_iter().enumerate() {
            if !is_blank(id) && !seen.insert(id) {
                self.at(
                    join(&item(list, index), "id"),
                    format!("duplicate {what} id \"{id}\""),
                );
            }
        }
    }

    /// Adds a problem at `path`.
    pub fn at(&mut self, path: impl Into<String>, message: impl Into<String>) {
        self.0.push(Problem::new(path, message));
    }
}

/// Runs every structural check (docs/writes.md#structural-validator) and returns the problems,
/// empty when valid. Paths are the fields' own (`subgoals[0].title`), as in a patch or a state.
pub fn structural_errors(input: &Replacements<'_>) -> Vec<Problem> {
    let mut reasons = Reasons::default();
    if let Some(subgoals) = input.subgoals {
        check_subgoals(&mut reasons, subgoals, input.active_subgoal_id);
    }
    if let Some(active) = input.active_subgoal_id {
        reasons.require("active_subgoal_id", active);
    }
    if let Some(invariants) = input.invariants {
        for (index, invariant) in invariants.iter().enumerate() {
            reasons.require_fields(
                &item("invariants", index),
                &[
                    ("id", &invariant.id),
                    ("description", &invariant.description),
                    ("status", &invariant.status),
                ],
            );
        }
        reasons.no_repeats(
            "invariants",
            "invariant",
            invariants.iter().map(|i| i.id.as_str()),
        );
    }
    match input.graphs {
        Some(graphs) => check_graphs(&mut reasons, graphs, input),
        None => {
            if let Some(frontier) = input.graph_frontier {
                check_frontier_shape(&mut reasons, frontier);
            }
            if let Some(checkpoint) = input.graph_checkpoint {
                check_graph_checkpoint_shape(&mut reasons, checkpoint);
            }
        }
    }
    if let Some(checkpoint) = input.investigation_checkpoint {
        check_investigation_checkpoint(&mut reasons, checkpoint, input.available_evidence_ids);
    }
    if let Some(churn) = input.churn {
        reasons.require_fields(
            "churn",
            &[
                ("understanding_status", &churn.understanding_status),
                ("diff_pressure", &churn.diff_pressure),
            ],
        );
    }
    reasons.0
}

fn check_subgoals(reasons: &mut Reasons, subgoals: &[Subgoal], active: Option<&str>) {
    for (index, subgoal) in subgoals.iter().enumerate() {
        reasons.require_fields(
            &item("subgoals", index),
            &[
                ("id", &subgoal.id),
                ("title", &subgoal.title),
                ("status", &subgoal.status),
            ],
        );
    }
    reasons.no_repeats(
        "subgoals",
        "subgoal",
        subgoals.iter().map(|s| s.id.as_str()),
    );
    if let Some(active) = active.filter(|id| !is_blank(id))
        && !subgoals.iter().any(|s| s.id == active)
    {
        reasons.at(
            "active_subgoal_id",
            format!("\"{active}\" names no subgoal"),
        );
    }
}

fn check_graph(reasons: &mut Reasons, label: &str, graph: &Graph) {
    let (nodes, edges) = (format!("{label}.nodes"), format!("{label}.edges"));
    for (index, node) in graph.nodes.iter().enumerate() {
        reasons.require_fields(
            &item(&nodes, index),
            &[
                ("id", &node.id),
                ("title", &node.title),
                ("purpose", &node.purpose),
            ],
        );
    }
    reasons.no_repeats(&nodes, "node", graph.nodes.iter().map(|n| n.id.as_str()));
    let node_ids: HashSet<&str> = graph.nodes.iter().map(|n| n.id.as_str()).collect();
    for (index, edge) in graph.edges.iter().enumerate() {
        let at = item(&edges, index);
        reasons.require_fields(
            &at,
            &[
                ("source_id", &edge.source_id),
                ("target_id", &edge.target_id),
                ("kind", &edge.kind),
            ],
        );
        for (end, id) in [
            ("source_id", &edge.source_id),
            ("target_id", &edge.target_id),
        ] {
            if !is_blank(id) && !node_ids.contains(id.as_str()) {
                reasons.at(join(&at, end), format!("names missing node \"{id}\""));
            }
        }
    }
    reasons.no_repeats(
        &edges,
        "edge",
        graph.edges.iter().map(|e| e.id.as_deref().unwrap_or("")),
    );
}

fn check_graphs(reasons: &mut Reasons, graphs: &Graphs, input: &Replacements<'_>) {
    check_graph(reasons, "graphs.architecture", &graphs.architecture);
    check_graph(reasons, "graphs.dataflow", &graphs.dataflow);
    let architecture: HashSet<&str> = graphs
        .architecture
        .nodes
        .iter()
        .map(|n| n.id.as_str())
        .collect();
    let dataflow: HashSet<&str> = graphs
        .dataflow
        .nodes
        .iter()
        .map(|n| n.id.as_str())
        .collect();
    let mut pairs = HashSet::new();
    for (index, link) in graphs.links.iter().enumerate() {
        let at = item("graphs.links", index);
        reasons.require_fields(
            &at,
            &[
                ("dataflow_node_id", &link.dataflow_node_id),
                ("architecture_node_id", &link.architecture_node_id),
            ],
        );
        let (df, arch) = (&link.dataflow_node_id, &link.architecture_node_id);
        if !is_blank(df) && !dataflow.contains(df.as_str()) {
            reasons.at(
                join(&at, "dataflow_node_id"),
                format!("names missing dataflow node \"{df}\""),
            );
        }
        if !is_blank(arch) && !architecture.contains(arch.as_str()) {
            reasons.at(
                join(&at, "architecture_node_id"),
                format!("names missing architecture node \"{arch}\""),
            );
        }
        if !pairs.insert((df.as_str(), arch.as_str())) {
            reasons.at(at, format!("duplicate graph link \"{df}\" -> \"{arch}\""));
        }
    }
    let has_node = |id: &str| architecture.contains(id) || dataflow.contains(id);
    if let Some(frontier) = input.graph_frontier {
        check_frontier_shape(reasons, frontier);
        let edge_ids: HashSet<&str> = graphs
            .each()
            .into_iter()
            .flat_map(|(_, graph)| graph.edges.iter().filter_map(|e| e.id.as_deref()))
            .collect();
        for (index, id) in frontier.active_node_ids.iter().enumerate() {
            if !is_blank(id) && !has_node(id) {
                reasons.at(
                    item("graph_frontier.active_node_ids", index),
                    format!("names missing node \"{id}\""),
                );
            }
        }
        for (index, id) in frontier.active_edge_ids.iter().enumerate() {
            if !is_blank(id) && !edge_ids.contains(id.as_str()) {
                reasons.at(
                    item("graph_frontier.active_edge_ids", index),
                    format!("names missing edge \"{id}\""),
                );
            }
        }
    }
    if let Some(checkpoint) = input.graph_checkpoint {
        check_graph_checkpoint_shape(reasons, checkpoint);
        for (index, id) in checkpoint.frontier_node_ids.iter().enumerate() {
            if !is_blank(id) && !has_node(id) {
                reasons.at(
                    item("graph_checkpoint.frontier_node_ids", index),
                    format!("names missing node \"{id}\""),
                );
            }
        }
    }
}

fn check_frontier_shape(reasons: &mut Reasons, frontier: &GraphFrontier) {
    reasons.non_blank_unique("graph_frontier.active_node_ids", &frontier.active_node_ids);
    reasons.non_blank_unique("graph_frontier.active_edge_ids", &frontier.active_edge_ids);
    reasons.non_blank_unique(
        "graph_frontier.open_question_ids",
        &frontier.open_question_ids,
    );
    reasons.non_blank_unique("graph_frontier.open_gap_ids", &frontier.open_gap_ids);
}

fn check_graph_checkpoint_shape(reasons: &mut Reasons, checkpoint: &GraphCheckpoint) {
    reasons.require("graph_checkpoint.checkpoint_id", &checkpoint.checkpoint_id);
    reasons.non_blank_unique(
        "graph_checkpoint.frontier_node_ids",
        &checkpoint.frontier_node_ids,
    );
    reasons.non_blank_unique(
        "graph_checkpoint.open_question_ids",
        &checkpoint.open_question_ids,
    );
    reasons.non_blank_unique("graph_checkpoint.open_gap_ids", &checkpoint.open_gap_ids);
}

fn check_investigation_checkpoint(
    reasons: &mut Reasons,
    checkpoint: &InvestigationCheckpoint,
    available_evidence_ids: Option<&dyn Fn(&str) -> bool>,
) {
    let label = "investigation_checkpoint";
    reasons.require_fields(
        label,
        &[
            ("checkpoint_id", &checkpoint.brief.checkpoint_id),
            ("kind", &checkpoint.brief.kind),
            ("focus", &checkpoint.brief.focus),
        ],
    );
    reasons.non_blank_if_present(
        &format!("{label}.summary"),
        checkpoint.brief.summary.as_deref(),
    );
    reasons.require_present(
        &format!("{label}.next_action"),
        checkpoint.brief.next_action.as_deref(),
    );
    reasons.non_blank_if_present(
        &format!("{label}.captured_at_turn_id"),
        checkpoint.brief.captured_at_turn_id.as_deref(),
    );
    reasons.non_blank_unique(
        &format!("{label}.open_questions"),
        &checkpoint.open_questions,
    );
    reasons.non_blank_unique(&format!("{label}.evidence_ids"), &checkpoint.evidence_ids);
    if let Some(available) = available_evidence_ids {
        for (index, id) in checkpoint.evidence_ids.iter().enumerate() {
            if !is_blank(id) && !available(id) {
                reasons.at(
                    item(&format!("{label}.evidence_ids"), index),
                    missing_evidence(id),
                );
            }
        }
    }
}

/// What a citation of an evidence id that is neither in the patch nor stored says.
pub fn missing_evidence(id: &str) -> String {
    format!("cites missing evidence id \"{id}\"")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::fixtures;
    use crate::state::model::Disposition;
    use crate::state::model::GraphLink;

    fn texts(problems: Vec<Problem>) -> Vec<String> {
        problems.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn subgoal_rules_come_in_order() {
        let subgoals = vec![
            Subgoal {
                id: "a".into(),
                title: " ".into(),
                status: "open".into(),
                summary: None,
            },
            Subgoal {
                id: "a".into(),
                title: "t".into(),
                status: "".into(),
                summary: None,
            },
        ];
        let reasons = texts(structural_errors(&Replacements {
            subgoals: Some(&subgoals),
            active_subgoal_id: Some("b"),
            ..Replacements::default()
        }));
        assert_eq!(
            reasons,
            vec![
                "subgoals[0].title: must not be empty",
                "subgoals[1].status: must not be empty",
                "subgoals[1].id: duplicate subgoal id \"a\"",
                "active_subgoal_id: \"b\" names no subgoal",
            ]
        );
    }

    #[test]
    fn blank_active_subgoal_is_reported() {
        let reasons = texts(structural_errors(&Replacements {
            active_subgoal_id: Some("  "),
            ..Replacements::default()
        }));
        assert_eq!(reasons, vec!["active_subgoal_id: must not be empty"]);
    }

    #[test]
    fn graph_references_are_checked_per_graph() {
        let graphs = Graphs {
            architecture: Graph {
                nodes: vec![
                    fixtures::node("a", &[]),
                    fixtures::node("a", &[]),
                    fixtures::node("b", &[]),
                ],
                edges: vec![
                    fixtures::edge(Some("e"), "a", "zz", "calls"),
                    fixtures::edge(Some("e"), "b", "a", "calls"),
                ],
            },
            dataflow: Graph {
                nodes: vec![fixtures::node("a", &[])],
                edges: vec![fixtures::edge(None, "a", "b", "calls")],
            },
            links: vec![
                GraphLink {
                    dataflow_node_id: "a".into(),
                    architecture_node_id: "q".into(),
                    relationship: None,
                    code_refs: vec![],
                },
                GraphLink {
                    dataflow_node_id: "a".into(),
                    architecture_node_id: "q".into(),
                    relationship: None,
                    code_refs: vec![],
                },
            ],
        };
        let frontier = GraphFrontier {
            active_node_ids: vec!["a".into(), "ghost".into(), "a".into()],
            active_edge_ids: vec!["nope".into()],
            ..GraphFrontier::default()
        };
        let checkpoint = GraphCheckpoint {
            checkpoint_id: "c".into(),
            graph_revision: 1,
            summary: None,
            frontier_node_ids: vec!["ghost".into()],
            open_question_ids: vec![],
            open_gap_ids: vec![],
        };
        let reasons = texts(structural_errors(&Replacements {
            graphs: Some(&graphs),
            graph_frontier: Some(&frontier),
            graph_checkpoint: Some(&checkpoint),
            ..Replacements::default()
        }));
        assert_eq!(
            reasons,
            vec![
                "graphs.architecture.nodes[1].id: duplicate node id \"a\"",
                "graphs.architecture.edges[0].target_id: names missing node \"zz\"",
                "graphs.architecture.edges[1].id: duplicate edge id \"e\"",
                "graphs.dataflow.edges[0].target_id: names missing node \"b\"",
                "graphs.links[0].architecture_node_id: names missing architecture node \"q\"",
                "graphs.links[1].architecture_node_id: names missing architecture node \"q\"",
                "graphs.links[1]: duplicate graph link \"a\" -> \"q\"",
                "graph_frontier.active_node_ids[2]: \"a\" is listed twice",
                "graph_frontier.active_node_ids[1]: names missing node \"ghost\"",
                "graph_frontier.active_edge_ids[0]: names missing edge \"nope\"",
                "graph_checkpoint.frontier_node_ids[0]: names missing node \"ghost\"",
            ]
        );
    }

    #[test]
    fn frontier_without_graphs_gets_shape_checks_only() {
        let frontier = GraphFrontier {
            active_node_ids: vec!["ghost".into(), " ".into()],
            dirty_paths: vec!["".into()],
            ..GraphFrontier::default()
        };
        let reasons = texts(structural_errors(&Replacements {
            graph_frontier: Some(&frontier),
            ..Replacements::default()
        }));
        assert_eq!(
            reasons,
            vec!["graph_frontier.active_node_ids[1]: must not be empty"]
        );
    }

    #[test]
    fn investigation_checkpoint_needs_next_action_and_known_evidence() {
        let mut checkpoint = InvestigationCheckpoint {
            open_questions: vec!["q".into(), "q".into()],
            evidence_ids: vec!["ev-1".into(), "ev-2".into()],
            ..fixtures::checkpoint(Disposition::ResumeReady, &[])
        };
        checkpoint.brief.summary = Some(" ".into());
        checkpoint.brief.next_action = None;
        let available = |id: &str| id == "ev-1";
        let reasons = texts(structural_errors(&Replacements {
            investigation_checkpoint: Some(&checkpoint),
            available_evidence_ids: Some(&available),
            ..Replacements::default()
        }));
        assert_eq!(
            reasons,
            vec![
                "investigation_checkpoint.summary: must not be empty",
                "investigation_checkpoint.next_action: must not be empty",
                "investigation_checkpoint.open_questions[1]: \"q\" is listed twice",
                "investigation_checkpoint.evidence_ids[1]: cites missing evidence id \"ev-2\"",
            ]
        );
    }

    #[test]
    fn churn_needs_status_and_pressure() {
        let churn = ChurnState {
            understanding_status: "".into(),
            diff_pressure: " ".into(),
            graph_freshness: None,
            warning: None,
            unexplained_writes: None,
        };
        let reasons = texts(structural_errors(&Replacements {
            churn: Some(&churn),
            ..Replacements::default()
        }));
        assert_eq!(
            reasons,
            vec![
                "churn.understanding_status: must not be empty",
                "churn.diff_pressure: must not be empty",
            ]
        );
    }
}
