//! Checks of a whole stored state, shared by `update` (a write may not add a problem) and
//! `verify` (report every problem): the structural validator over the replaceable fields, the
//! planning rules, unique observation and evidence ids, and citations that resolve.

use std::collections::HashMap;
use std::collections::HashSet;

use crate::policy::structure::Reasons;
use crate::policy::structure::Replacements;
use crate::policy::structure::missing_evidence;
use crate::policy::structure::structural_errors;
use crate::policy::update::planning::check_planning;
use crate::state::model::Graph;
use crate::state::model::GraphNode;
use crate::state::model::Graphs;
use crate::state::model::State;
use crate::state::patch::Patch;
use crate::state::problem::Problem;
use crate::state::problem::item;

/// Problems of a whole stored state: [`structure_problems`], plus unique observation and
/// evidence ids and citations that resolve.
pub fn state_problems(state: &State) -> Vec<Problem> {
    let evidence: HashSet<&str> = state
        .recent_evidence
        .iter()
        .map(|e| e.id.as_str())
        .collect();
    let has_evidence = |id: &str| evidence.contains(id);
    let mut reasons = Reasons(structure_problems(state, &has_evidence));
    reasons.no_repeats(
        "recent_evidence",
        "evidence",
        state.recent_evidence.iter().map(|e| e.id.as_str()),
    );
    reasons.no_repeats(
        "observations",
        "observation",
        state.observations.iter().map(|o| o.id.as_str()),
    );
    for (index, observation) in state.observations.iter().enumerate() {
        for (cited_index, cited) in observation.evidence_ids.iter().enumerate() {
            if !evidence.contains(cited.as_str()) {
                reasons.at(
                    item(&format!("observations[{index}].evidence_ids"), cited_index),
                    missing_evidence(cited),
                );
            }
        }
    }
    reasons.0
}

/// Problems of the state's replaceable fields: the structural validator
/// (docs/writes.md#structural-validator) over subgoals, invariants, graphs, frontier and
/// checkpoints, and the planning rules. Cheap next to [`state_problems`]: it does not walk
/// observations or evidence; `has_evidence` answers whether an evidence id exists.
pub fn structure_problems(state: &State, has_evidence: &dyn Fn(&str) -> bool) -> Vec<Problem> {
    let mut reasons = Reasons(structural_errors(&Replacements {
        active_subgoal_id: state.active_subgoal_id.as_deref(),
        subgoals: Some(&state.subgoals),
        invariants: Some(&state.invariants),
        graphs: Some(&state.graphs),
        graph_frontier: state.graph_frontier.as_ref(),
        graph_checkpoint: state.graph_checkpoint.as_ref(),
        investigation_checkpoint: state.investigation_checkpoint.as_ref(),
        available_evidence_ids: Some(has_evidence),
        churn: state.churn.as_ref(),
    }));
    check_planning(&mut reasons, &state.planning);
    reasons.0
}

/// The problems a patch that only upserts graph nodes (besides new observations and evidence,
/// see `Patch::needs_stored_graphs`) brings: the nodes' own, found by the same checks run over
/// a state that holds only them, with their paths in the patch. Such a write cannot add any
/// other problem, so it is validated without the stored graphs.
pub fn node_upsert_problems(patch: &Patch) -> Vec<Problem> {
    let graph = |nodes: &[GraphNode]| Graph {
        nodes: nodes.to_vec(),
        ..Graph::default()
    };
    let state = State {
        graphs: Graphs {
            architecture: graph(&patch.upsert.architecture_nodes),
            dataflow: graph(&patch.upsert.dataflow_nodes),
            ..Graphs::default()
        },
        ..State::default()
    };
    let mut problems = structure_problems(&state, &|_| false);
    for problem in &mut problems {
        for kind in ["architecture", "dataflow"] {
            if let Some(rest) = problem.path.strip_prefix(&format!("graphs.{kind}.nodes")) {
                problem.path = format!("upsert.{kind}_nodes{rest}");
            }
        }
    }
    problems
}

/// The problems `after` has that `before` did not: a write may not add any. Problems are
/// compared apart from list positions ([`Problem::identity`]), and counted: a write that
/// inserts a record before a broken one moves it, and the problem is still the old one, while
/// a second record broken the same way is a new problem. (Problems that came in through a
/// merge of concurrent branches stay until a write fixes them, and do not block unrelated
/// writes.)
pub fn added_problems(before: &[Problem], after: Vec<Problem>) -> Vec<Problem> {
    let mut known: HashMap<(String, String), usize> = HashMap::new();
    for problem in before {
        *known.entry(problem.identity()).or_default() += 1;
    }
    let mut added = Vec::new();
    for problem in after {
        match known.get_mut(&problem.identity()) {
            Some(count) if *count > 0 => *count -= 1,
            _ => added.push(problem),
        }
    }
    added
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn added_problems_are_counted_apart_from_positions() {
        let blank = |at: usize| Problem::new(format!("subgoals[{at}].title"), "must not be empty");
        let before = [blank(0)];
        assert!(added_problems(&before, vec![blank(3)]).is_empty());
        assert_eq!(
            added_problems(&before, vec![blank(1), blank(2)]),
            [blank(2)]
        );
    }
}
