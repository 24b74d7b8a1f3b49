//! The context shard (docs/projections.md#context): the part of the state around the records an
//! agent names — nodes with their edges and links, observations with the evidence they cite, the
//! frontier and the checkpoints — plus the ids that were asked for and not found.
//!
//! Unknown ids are answers (`missing`), never errors. Never changes the state. The shard's
//! code references that no longer hold are marked (`refs_not_holding`) from the cited files the
//! caller read ([`cited_paths`], [`mark_refs_not_holding`]).

use std::collections::BTreeMap;
use std::collections::HashSet;

use crate::policy::code_ref::Asked;
use crate::policy::code_ref::Cited;
use crate::policy::code_ref::CitedFile;
use crate::policy::code_ref::RefCarriers;
use crate::policy::code_ref::RefFindingKind;
use crate::policy::code_ref::RefOwner;
use crate::policy::code_ref::cited_text;
use crate::policy::code_ref::format_code_ref;
use crate::policy::freshness::Certificate;
use crate::policy::freshness::certify_by_fingerprints;
use crate::policy::projection::GraphSlice;
use crate::policy::projection::StateStatus;
use crate::policy::projection::not_found;
use crate::policy::recheck::CitedFiles;
use crate::policy::recheck::RefFinding;
use crate::policy::recheck::recheck_one;
use crate::policy::text::uniq_append;
use crate::state::model::EvidenceRecord;
use crate::state::model::GraphCheckpoint;
use crate::state::model::GraphFrontier;
use crate::state::model::GraphKind;
use crate::state::model::InvestigationCheckpoint;
use crate::state::model::Observation;
use crate::state::model::State;
use crate::state::snapshot::Anchor;
use crate::state::snapshot::CHECKPOINT_ANCHOR;
use crate::state::snapshot::node_anchor_key;

/// What to include.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContextRequest {
    /// Graph node ids.
    pub node_ids: Vec<String>,
    /// Graph edge ids.
    pub edge_ids: Vec<String>,
    /// Observation ids.
    pub observation_ids: Vec<String>,
    /// Evidence ids.
    pub evidence_ids: Vec<String>,
    /// Also include the active frontier's nodes and edges, and the frontier itself.
    pub include_active_frontier: bool,
    /// Also include the graph checkpoint and the investigation checkpoint.
    pub include_checkpoints: bool,
    /// Also include the evidence the selected observations cite (what it adds to them: an
    /// evidence record that only repeats its observation is named by its id there).
    pub include_linked_evidence: bool,
}

impl ContextRequest {
    /// Whether it names no record: then the shard is the active frontier and the checkpoints.
    pub fn names_nothing(&self) -> bool {
        self.node_ids.is_empty()
            && self.edge_ids.is_empty()
            && self.observation_ids.is_empty()
            && self.evidence_ids.is_empty()
    }
}

/// The selected records.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ContextBody {
    /// Nodes, edges and links.
    pub graph: GraphSlice,
    /// The graph frontier (unless left out).
    pub frontier: Option<GraphFrontier>,
    /// The graph checkpoint.
    pub checkpoint: Option<GraphCheckpoint>,
    /// The full investigation checkpoint.
    pub investigation_checkpoint: Option<InvestigationCheckpoint>,
    /// Observations, newest first.
    pub observations: Vec<Observation>,
    /// Evidence, newest first.
    pub evidence: Vec<EvidenceRecord>,
}

/// Ids asked for and not found, in request order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ContextMissing {
    /// Graph node ids.
    pub graph_node_ids: Vec<String>,
    /// Graph edge ids.
    pub graph_edge_ids: Vec<String>,
    /// Observation ids.
    pub observation_ids: Vec<String>,
    /// Evidence ids (linked ones included).
    pub evidence_ids: Vec<String>,
}

/// The context shard.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContextShard {
    /// Whether a state exists.
    pub state_status: StateStatus,
    /// Its revision.
    pub state_revision: Option<u64>,
    /// The selected records.
    pub context: ContextBody,
    /// Ids not found.
    pub missing: ContextMissing,
    /// The shown code references that no longer hold (of graph records, the checkpoint and
    /// observations; evidence is what was seen then and is never marked), in shard order.
    pub refs_not_holding: Vec<RefFinding>,
    /// The certificate of each shown graph node and of the investigation checkpoint, judged by
    /// the fingerprints of their references (docs/freshness.md#certificates).
    pub certificates: Vec<Certificate>,
    /// With `--code`: the text the shown references cite, within [`CODE_BUDGET`].
    pub code: Vec<CitedCode>,
}

/// The most characters of cited code a shard shows, and of one reference's text.
pub const CODE_BUDGET: usize = 16_000;

/// The most lines of one reference's cited text a shard shows.
pub const CODE_LINES_PER_REF: usize = 120;

/// The text one shown reference cites, as the work tree has it now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CitedCode {
    /// The record that carries the reference.
    pub owner: RefOwner,
    /// The reference, as spelled on the command line.
    pub code_ref: String,
    /// The line the text starts at (1-based).
    pub start_line: u32,
    /// The lines, as they are (invalid UTF-8 replaced).
    pub lines: Vec<String>,
    /// How many more lines it cites that the budget left out.
    pub lines_left_out: usize,
}

fn uniq(ids: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    uniq_append(&mut out, ids.iter().cloned());
    out
}

/// Cuts the shard out of the state.
pub fn context_shard(state: Option<&State>, request: &ContextRequest) -> ContextShard {
    let Some(state) = state else {
        return ContextShard {
            state_status: StateStatus::Missing,
            state_revision: None,
            context: ContextBody::default(),
            missing: ContextMissing {
                graph_node_ids: uniq(&request.node_ids),
                graph_edge_ids: uniq(&request.edge_ids),
                observation_ids: uniq(&request.observation_ids),
                evidence_ids: uniq(&request.evidence_ids),
            },
            refs_not_holding: Vec::new(),
            certificates: Vec::new(),
            code: Vec::new(),
        };
    };
    let frontier = state
        .graph_frontier
        .as_ref()
        .filter(|_| request.include_active_frontier);
    let mut node_ids = uniq(&request.node_ids);
    let mut edge_ids = uniq(&request.edge_ids);
    if let Some(frontier) = frontier {
        uniq_append(&mut node_ids, frontier.active_node_ids.iter().cloned());
        uniq_append(&mut edge_ids, frontier.active_edge_ids.iter().cloned());
    }
    let node_set: HashSet<&str> = node_ids.iter().map(String::as_str).collect();
    let edge_set: HashSet<&str> = edge_ids.iter().map(String::as_str).collect();
    let graph = GraphSlice::select(&state.graphs, &node_set, &edge_set);

    let observation_ids = uniq(&request.observation_ids);
    let observations: Vec<Observation> = state
        .observations
        .iter()
        .filter(|o| observation_ids.contains(&o.id))
        .cloned()
        .collect();
    let mut evidence_ids = uniq(&request.evidence_ids);
    if request.include_linked_evidence {
        for observation in &observations {
            uniq_append(&mut evidence_ids, observation.evidence_ids.iter().cloned());
        }
    }
    let asked: HashSet<&String> = request.evidence_ids.iter().collect();
    let repeats = |evidence: &EvidenceRecord| {
        !asked.contains(&evidence.id)
            && (observations.iter()).any(|o| repeats_its_observation(o, evidence))
    };
    let found: Vec<&EvidenceRecord> = (state.recent_evidence.iter())
        .filter(|e| evidence_ids.contains(&e.id))
        .collect();
    let missing_evidence = not_found(&evidence_ids, found.iter().map(|e| e.id.as_str()));
    let evidence: Vec<EvidenceRecord> = (found.into_iter())
        .filter(|e| !repeats(e))
        .cloned()
        .collect();

    let missing = ContextMissing {
        graph_node_ids: not_found(&node_ids, graph.node_ids()),
        graph_edge_ids: not_found(&edge_ids, graph.edge_ids()),
        observation_ids: not_found(&observation_ids, observations.iter().map(|o| o.id.as_str())),
        evidence_ids: missing_evidence,
    };
    let checkpoints = request.include_checkpoints;
    ContextShard {
        state_status: StateStatus::Ready,
        state_revision: Some(state.revision),
        context: ContextBody {
            frontier: frontier.cloned(),
            checkpoint: state.graph_checkpoint.clone().filter(|_| checkpoints),
            investigation_checkpoint: (state.investigation_checkpoint.clone())
                .filter(|_| checkpoints),
            graph,
            observations,
            evidence,
        },
        missing,
        refs_not_holding: Vec::new(),
        certificates: Vec::new(),
        code: Vec::new(),
    }
}

/// Whether `evidence` only repeats `observation`, which cites it: its summary says nothing the
/// observation's does not, and it cites no other code (as `note` and `distill` write them).
fn repeats_its_observation(observation: &Observation, evidence: &EvidenceRecord) -> bool {
    observation.evidence_ids.contains(&evidence.id)
        && evidence.summary.trim() == observation.summary.trim()
        && evidence
            .code_refs
            .iter()
            .all(|r| observation.code_refs.contains(r))
}

/// The shard's records whose code references can stop holding: evidence is what was seen then
/// and is never marked.
fn carriers(body: &ContextBody) -> RefCarriers<'_> {
    let graph = &body.graph;
    RefCarriers {
        graphs: [
            (
                GraphKind::Architecture,
                &graph.architecture_nodes,
                &graph.architecture_edges,
            ),
            (
                GraphKind::Dataflow,
                &graph.dataflow_nodes,
                &graph.dataflow_edges,
            ),
        ],
        links: &graph.links,
        checkpoint: body.investigation_checkpoint.as_ref(),
        observations: &body.observations,
        evidence: &[],
    }
}

/// The paths the shard's references cite, each with what they ask of it: what the caller reads
/// for [`mark_refs_not_holding`] and [`certify_shown`], and, with `excerpts`, for
/// [`show_cited_code`].
pub fn cited_paths(shard: &ContextShard, excerpts: bool) -> BTreeMap<String, Asked> {
    let mut wanted: BTreeMap<String, Asked> = BTreeMap::new();
    carriers(&shard.context).visit(|_, code_ref| {
        let asked = wanted.entry(code_ref.path.clone()).or_default();
        asked.cite(code_ref);
        asked.excerpts = excerpts;
    });
    wanted
}

/// Re-checks the shard's references against `cited` and lists those that no longer hold. A
/// reference to a planned file that does not exist yet is a plan, not a broken reference.
pub fn mark_refs_not_holding(shard: &mut ContextShard, cited: &CitedFiles) {
    let mut findings = Vec::new();
    carriers(&shard.context).visit(|owner, code_ref| {
        // A symbol in a file whose parse ran out of time is not judged: not called broken.
        if cited.is_unjudged(code_ref, &code_ref.path) {
            return;
        }
        let file = cited
            .files
            .get(&code_ref.path)
            .unwrap_or(&CitedFile::Missing);
        findings.extend(
            recheck_one(owner, code_ref, file, None, None)
                .filter(|finding| finding.kind != RefFindingKind::Planned),
        );
    });
    shard.refs_not_holding = findings;
}

/// Certifies the shard's graph nodes and investigation checkpoint from the cited files
/// (docs/freshness.md#certificates): their references are judged by their fingerprints, as
/// `freshness` judges them; `anchors` say when each was checked.
pub fn certify_shown(
    shard: &mut ContextShard,
    anchors: &BTreeMap<String, Anchor>,
    cited: &CitedFiles,
) {
    let body = &shard.context;
    let graph = &body.graph;
    let mut certificates = Vec::new();
    for (kind, nodes) in [
        (GraphKind::Architecture, &graph.architecture_nodes),
        (GraphKind::Dataflow, &graph.dataflow_nodes),
    ] {
        for node in nodes {
            let owner = RefOwner::Node {
                graph: kind,
                id: node.id.clone(),
            };
            let key = node_anchor_key(kind, &node.id);
            certificates.extend(certify_by_fingerprints(
                owner,
                &node.code_refs,
                &key,
                anchors,
                cited,
            ));
        }
    }
    if let Some(checkpoint) = &body.investigation_checkpoint {
        let owner = RefOwner::InvestigationCheckpoint {
            id: checkpoint.brief.checkpoint_id.clone(),
        };
        let refs = &checkpoint.code_refs;
        certificates.extend(certify_by_fingerprints(
            owner,
            refs,
            CHECKPOINT_ANCHOR,
            anchors,
            cited,
        ));
    }
    shard.certificates = certificates;
}

/// Adds the text each shown reference cites (of graph records, the checkpoint and observations)
/// to the shard, once per reference, in shard order: the lines [`cited_text`] says it cites
/// (its definition with its lines, its lines, or its file), at most [`CODE_LINES_PER_REF`] of
/// them and [`CODE_BUDGET`] characters in all. A reference that does not hold cites nothing.
pub fn show_cited_code(shard: &mut ContextShard, cited: &CitedFiles) {
    let mut code = Vec::new();
    let mut seen = HashSet::new();
    let mut room = CODE_BUDGET;
    carriers(&shard.context).visit(|owner, code_ref| {
        let Some(file) = cited.files.get(&code_ref.path) else {
            return;
        };
        let Some((cited, excerpt)) =
            (cited_text(code_ref, file)).and_then(|cited| Some((cited, file.excerpt(cited)?)))
        else {
            return;
        };
        if room == 0 || !seen.insert(format_code_ref(code_ref)) {
            return;
        }
        let first = match cited {
            Cited::Lines((first, _)) => first,
            Cited::File => 1,
        };
        let mut lines = Vec::new();
        for line in excerpt.lines.iter().take(CODE_LINES_PER_REF) {
            let cost = line.chars().count() + 1;
            if cost > room {
                break;
            }
            room -= cost;
            lines.push(line.clone());
        }
        // Fewer lines than the excerpt has, or than it could: the next one did not fit.
        if lines.len() < excerpt.total && lines.len() < CODE_LINES_PER_REF {
            room = 0;
        }
        code.push(CitedCode {
            owner: owner.to_owner(),
            code_ref: format_code_ref(code_ref),
            start_line: first,
            lines_left_out: excerpt.total - lines.len(),
            lines,
        });
    });
    shard.code = code;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::fixtures::edge;
    use crate::policy::fixtures::node;
    use crate::state::model::CodeRef;

    fn state() -> State {
        let mut state = State {
            revision: 9,
            ..State::default()
        };
        state.graphs.architecture.nodes = vec![node("a", &[]), node("b", &[]), node("c", &[])];
        state.graphs.architecture.edges = vec![
            edge(Some("ab"), "a", "b", "calls"),
            edge(Some("bc"), "b", "c", "calls"),
        ];
        state.graph_frontier = Some(GraphFrontier {
            active_node_ids: vec!["c".into()],
            ..GraphFrontier::default()
        });
        state.observations = vec![Observation {
            id: "o1".into(),
            summary: "s".into(),
            source_kind: "test".into(),
            status: "ok".into(),
            code_refs: vec![],
            evidence_ids: vec!["e1".into(), "e-gone".into()],
            supersedes: None,
        }];
        state.recent_evidence = vec![EvidenceRecord {
            id: "e1".into(),
            kind: "test".into(),
            status: "ok".into(),
            summary: "cargo test passed".into(),
            code_refs: vec![],
        }];
        state
    }

    fn request(nodes: &[&str], frontier: bool, linked: bool) -> ContextRequest {
        ContextRequest {
            node_ids: nodes.iter().map(|s| (*s).to_owned()).collect(),
            edge_ids: vec!["zz".into()],
            observation_ids: vec!["o1".into(), "o-gone".into(), "o1".into()],
            evidence_ids: vec![],
            include_active_frontier: frontier,
            include_checkpoints: frontier,
            include_linked_evidence: linked,
        }
    }

    #[test]
    fn frontier_and_linked_evidence_are_included_by_default() {
        let shard = context_shard(Some(&state()), &request(&["a", "ghost"], true, true));
        let ids: Vec<&str> = shard.context.graph.node_ids().collect();
        assert_eq!(ids, vec!["a", "c"]);
        let edges: Vec<&str> = shard.context.graph.edge_ids().collect();
        assert_eq!(edges, vec!["ab", "bc"]);
        assert_eq!(shard.context.evidence.len(), 1);
        assert!(shard.context.frontier.is_some());
        assert_eq!(shard.missing.graph_node_ids, vec!["ghost"]);
        assert_eq!(shard.missing.graph_edge_ids, vec!["zz"]);
        assert_eq!(shard.missing.observation_ids, vec!["o-gone"]);
        assert_eq!(shard.missing.evidence_ids, vec!["e-gone"]);
    }

    #[test]
    fn opting_out_of_frontier_and_linked_evidence() {
        let shard = context_shard(Some(&state()), &request(&["a"], false, false));
        let ids: Vec<&str> = shard.context.graph.node_ids().collect();
        assert_eq!(ids, vec!["a"]);
        assert!(shard.context.frontier.is_none());
        assert!(shard.context.evidence.is_empty());
        assert!(shard.missing.evidence_ids.is_empty());
    }

    #[test]
    fn shown_refs_that_no_longer_hold_are_marked_and_plans_are_not() {
        let mut state = state();
        state.graphs.architecture.nodes[0] = node("a", &["src/gone.rs", "src/here.rs"]);
        let mut planned = CodeRef::to_path("src/later.rs");
        planned.planned = true;
        state.observations[0].code_refs = vec![planned, CodeRef::to_path("src/here.rs")];
        let mut shard = context_shard(Some(&state), &request(&["a"], false, false));
        let wanted: Vec<String> = cited_paths(&shard, false).into_keys().collect();
        assert_eq!(wanted, ["src/gone.rs", "src/here.rs", "src/later.rs"]);
        let here = crate::policy::code_ref::scan_text("a\nb\nc\n", &Default::default());
        let cited = CitedFiles {
            files: [("src/here.rs".to_owned(), here)].into_iter().collect(),
            ..CitedFiles::default()
        };
        mark_refs_not_holding(&mut shard, &cited);
        let marked: Vec<(RefFindingKind, String, &str)> = (shard.refs_not_holding.iter())
            .map(|f| (f.kind, f.owner.to_string(), f.code_ref.path.as_str()))
            .collect();
        assert_eq!(
            marked,
            [(
                RefFindingKind::Missing,
                "architecture node \"a\"".to_owned(),
                "src/gone.rs"
            )]
        );
    }

    #[test]
    fn linked_evidence_that_repeats_its_observation_is_left_out() {
        let mut state = state();
        state.recent_evidence[0].summary = " s ".into();
        let shard = context_shard(Some(&state), &request(&["a"], false, true));
        assert!(shard.context.evidence.is_empty());
        assert_eq!(shard.missing.evidence_ids, vec!["e-gone"]);
    }

    #[test]
    fn naming_nothing_shows_the_frontier_and_checkpoints_only() {
        let request = ContextRequest {
            node_ids: vec![],
            edge_ids: vec![],
            observation_ids: vec![],
            evidence_ids: vec![],
            include_active_frontier: true,
            include_checkpoints: true,
            include_linked_evidence: true,
        };
        assert!(request.names_nothing());
        let shard = context_shard(Some(&state()), &request);
        let ids: Vec<&str> = shard.context.graph.node_ids().collect();
        assert_eq!(ids, vec!["c"]);
        assert!(shard.context.observations.is_empty());
    }

    #[test]
    fn missing_state_echoes_the_request() {
        let shard = context_shard(None, &request(&["a", "a"], true, true));
        assert_eq!(shard.state_status, StateStatus::Missing);
        assert_eq!(shard.missing.graph_node_ids, vec!["a"]);
        assert_eq!(shard.missing.observation_ids, vec!["o1", "o-gone"]);
    }
}
