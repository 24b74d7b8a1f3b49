//! `propose` (docs/drafting.md#propose): verified, evidence-backed observations with code refs
//! become a candidate graph / frontier / churn patch.
//!
//! This file assembles the draft: the proposal observation/evidence pair and the patch. The
//! steps live beside it, one job each: `select` picks and judges the observations (explicit
//! ids, or auto-selection of the strongest coherent path cluster), `anchor` places their
//! paths on the graph (the four node-matching rules, link closure, incident edges, the titles
//! of created nodes), `churn` judges how much the map moved, by match kind, and `edges` draws
//! the edges the cited code makes. [`propose`] reads the state alone; [`complete_from_code`]
//! then reads the cited files the command parsed. Nothing is written until the draft passes
//! `promote`.
//! Every failure is one of the errors of docs/drafting.md#propose-steps; the one that names the
//! request field (`observationIds was omitted ...`) names the `--observation` flag instead.

mod anchor;
mod churn;
mod edges;
mod select;

pub use edges::cited_paths;

use std::collections::BTreeMap;
use std::collections::HashMap;
use std::collections::HashSet;
use std::path::Path;

use crate::policy::code_map::uses::FileUses;
use crate::policy::code_ref::code_ref_key;
use crate::policy::secrets::redact_and_truncate;
use crate::policy::text::hex12;
use crate::policy::text::uniq_append;
use crate::state::model::CodeRef;
use crate::state::model::EvidenceRecord;
use crate::state::model::GraphNode;
use crate::state::model::Graphs;
use crate::state::model::Observation;
use crate::state::model::State;
use crate::state::patch::Patch;
use crate::state::patch::Upsert;
use crate::state::problem::Problem;

use anchor::MatchCounts;
use anchor::anchor_path;
use anchor::expand_frontier;
use anchor::title_created_nodes;
use churn::judge_churn;
use edges::add_reference_edges;
use select::Selection;
use select::auto_select;
use select::resolve;

/// The longest summary, purpose or warning fragment the proposal writes, in Unicode scalars.
pub const SUMMARY_LIMIT: usize = 220;

/// A summary or purpose the proposal writes, cut to [`SUMMARY_LIMIT`]. It quotes the state,
/// which is redacted when written; a store written before redaction existed may still hold a
/// secret, and a cut through it would keep a start no rule knows: the text is redacted first.
fn cut_summary(text: &str) -> String {
    redact_and_truncate(text, SUMMARY_LIMIT, &mut std::collections::BTreeMap::new())
}

/// Drafts a map/frontier/churn patch from the observations named by `observation_ids` (blank
/// and repeated ids ignored), or from auto-selected ones when none are named. A refusal is the
/// first error of docs/drafting.md#propose-steps, one problem with the request as a whole: its
/// message names the observation or evidence id at fault.
pub fn propose(state: &State, observation_ids: &[String]) -> Result<Patch, Problem> {
    let mut ids = Vec::new();
    uniq_append(
        &mut ids,
        observation_ids
            .iter()
            .map(|id| id.trim().to_owned())
            .filter(|id| !id.is_empty()),
    );
    if ids.is_empty() {
        ids = auto_select(state)?;
    }
    let observations = resolve(state, &ids)?;
    let selection = Selection::assess(state, &observations)?;

    let mut code_refs: Vec<CodeRef> = Vec::new();
    let mut keys = HashSet::new();
    for code_ref in observations.iter().flat_map(|o| &o.code_refs) {
        if keys.insert(code_ref_key(code_ref)) {
            code_refs.push(code_ref.clone());
        }
    }
    if code_refs.is_empty() {
        return Err(Problem::whole(
            "map proposals require at least one code ref on the selected observations",
        ));
    }
    let mut paths: Vec<String> = Vec::new();
    uniq_append(&mut paths, code_refs.iter().map(|r| r.path.clone()));
    let summary = selection.summary(paths.len());

    let mut graphs = state.graphs.clone();
    let mut counts = MatchCounts::default();
    let mut direct_ids = Vec::new();
    for path in &paths {
        let path_refs: Vec<CodeRef> = code_refs
            .iter()
            .filter(|r| Path::new(&r.path) == Path::new(path))
            .cloned()
            .collect();
        direct_ids.push(anchor_path(
            &mut graphs,
            path,
            path_refs,
            &selection,
            &ids,
            &mut counts,
        ));
    }
    let graph_frontier =
        expand_frontier(state.graph_frontier.as_ref(), &graphs, direct_ids, &paths);

    let fingerprint = proposal_fingerprint(state.revision, &ids, &code_refs);
    let evidence_id = format!("ev-map-proposal-{fingerprint}");
    let joined_ids = ids.join(", ");
    let observation = Observation {
        id: format!("obs-map-proposal-{fingerprint}"),
        summary: cut_summary(&format!("Map/churn proposal from {summary}: {joined_ids}")),
        source_kind: "epiphany-map-proposal".into(),
        status: "candidate".into(),
        code_refs: code_refs.clone(),
        evidence_ids: vec![evidence_id.clone()],
        supersedes: None,
    };
    let evidence = EvidenceRecord {
        id: evidence_id,
        kind: "proposal".into(),
        status: "candidate".into(),
        summary: cut_summary(&format!(
            "Proposed graph frontier and churn update from {summary}: {joined_ids}; reused {} \
                 existing node(s), {} by semantic graph signal, created {} new node(s)",
            counts.reused(),
            counts.semantic,
            counts.created
        )),
        code_refs,
    };
    let churn = judge_churn(
        state.churn.as_ref(),
        &counts,
        paths.len(),
        ids.len(),
        &summary,
    );
    Ok(Patch {
        observations: vec![observation],
        evidence: vec![evidence],
        upsert: Upsert {
            architecture_nodes: changed_nodes(&state.graphs, graphs),
            ..Upsert::default()
        },
        graph_frontier: Some(Box::new(graph_frontier)),
        churn: Some(Box::new(churn)),
        ..Patch::default()
    })
}

/// What the code says about a proposal `patch` drafted on `state`, from the cited `files`
/// (parsed, by slash path; [`cited_paths`] lists them): the nodes it creates are titled after
/// the definitions they cite (docs/drafting.md#node-matching), and edges join its nodes to each
/// other and to the map where one's cited code uses what another cites
/// (docs/drafting.md#reference-edges).
pub fn complete_from_code(state: &State, patch: &mut Patch, files: &BTreeMap<String, FileUses>) {
    title_created_nodes(&state.graphs, &mut patch.upsert.architecture_nodes, files);
    add_reference_edges(state, patch, files);
}

/// The architecture nodes of `proposed` that `before` does not hold as they are: the nodes a
/// proposal anchored refs on, and the ones it created, in graph order. The patch upserts only
/// these, so proposals on two branches that touch different nodes merge without a conflict.
fn changed_nodes(before: &Graphs, proposed: Graphs) -> Vec<GraphNode> {
    let before: HashMap<&str, &GraphNode> = before
        .architecture
        .nodes
        .iter()
        .map(|node| (node.id.as_str(), node))
        .collect();
    proposed
        .architecture
        .nodes
        .into_iter()
        .filter(|node| before.get(node.id.as_str()) != Some(&node))
        .collect()
}

/// The id of the architecture node a proposal creates for `path`: `arch-path-<hex12>` of the
/// raw path string.
pub fn path_node_id(path: &str) -> String {
    format!("arch-path-{}", hex12(path.as_bytes()))
}

/// The fingerprint behind the proposal ids (docs/drafting.md#proposal-records).
fn proposal_fingerprint(revision: u64, ids: &[String], code_refs: &[CodeRef]) -> String {
    let mut bytes = revision.to_string().into_bytes();
    for part in ids
        .iter()
        .cloned()
        .chain(code_refs.iter().map(code_ref_key))
    {
        bytes.push(0);
        bytes.extend_from_slice(part.as_bytes());
    }
    hex12(&bytes)
}

#[cfg(test)]
mod tests {
    use super::select::*;
    use super::*;
    use crate::policy::fixtures;
    use crate::state::model::ChurnState;
    use crate::state::model::Graph;
    use crate::state::model::GraphEdge;
    use crate::state::model::GraphFrontier;
    use crate::state::model::GraphLink;
    use crate::state::model::GraphNode;

    const PROMPT: &str = "epiphany-state-model/src/prompt.rs";

    fn code_ref(path: &str, start: u32, end: u32, symbol: &str) -> CodeRef {
        CodeRef {
            path: path.into(),
            start_line: Some(start),
            end_line: Some(end),
            symbol: Some(symbol.into()),
            note: None,
            planned: false,
            fingerprint: None,
        }
    }

    fn observation(
        id: &str,
        status: &str,
        code_refs: Vec<CodeRef>,
        evidence: &[&str],
    ) -> Observation {
        Observation {
            summary: format!("{id} rendered the prompt state"),
            source_kind: "smoke".into(),
            status: status.into(),
            code_refs,
            ..fixtures::observation(id, evidence)
        }
    }

    fn evidence(id: &str, status: &str) -> EvidenceRecord {
        EvidenceRecord {
            kind: "verification".into(),
            status: status.into(),
            summary: format!("{id} checked"),
            ..fixtures::evidence(id)
        }
    }

    fn node(id: &str, code_refs: Vec<CodeRef>) -> GraphNode {
        GraphNode {
            title: format!("{id} title"),
            purpose: "renders things".into(),
            status: Some("verified".into()),
            code_refs,
            ..fixtures::node(id, &[])
        }
    }

    fn edge(id: &str, source: &str, target: &str) -> GraphEdge {
        fixtures::edge(Some(id), source, target, "feeds")
    }

    fn churn(pressure: &str) -> ChurnState {
        ChurnState {
            understanding_status: "understood".into(),
            diff_pressure: pressure.into(),
            graph_freshness: None,
            warning: None,
            unexplained_writes: None,
        }
    }

    /// A state at revision 4 with one verified observation `obs-verified` on `refs`.
    fn verified_state(refs: Vec<CodeRef>) -> State {
        State {
            revision: 4,
            observations: vec![observation("obs-verified", "verified", refs, &["ev-ok"])],
            recent_evidence: vec![evidence("ev-ok", "ok")],
            ..State::default()
        }
    }

    fn with_nodes(mut state: State, nodes: Vec<GraphNode>) -> State {
        state.graphs.architecture.nodes = nodes;
        state
    }

    fn propose_all(state: &State) -> Patch {
        propose(state, &[]).expect("propose")
    }

    fn churn_of(patch: &Patch) -> &ChurnState {
        patch.churn.as_deref().expect("churn")
    }

    /// Asserts a proposal's churn: its graph freshness, its diff pressure, and a phrase of the
    /// delta judgment its warning gives.
    fn assert_churn(patch: &Patch, freshness: &str, pressure: &str, judgment: &str) {
        let churn = churn_of(patch);
        assert_eq!(
            (
                churn.graph_freshness.as_deref(),
                churn.diff_pressure.as_str()
            ),
            (Some(freshness), pressure)
        );
        let warning = churn.warning.as_deref().unwrap_or_default();
        assert!(warning.contains(judgment), "{warning}");
    }

    /// The architecture nodes after `patch` (upserts by id, in place or appended).
    fn nodes_of(state: &State, patch: &Patch) -> Vec<GraphNode> {
        assert!(
            patch.graphs.is_none(),
            "a proposal never replaces the graphs"
        );
        let mut nodes = state.graphs.architecture.nodes.clone();
        for node in &patch.upsert.architecture_nodes {
            match nodes.iter_mut().find(|n| n.id == node.id) {
                Some(slot) => *slot = node.clone(),
                None => nodes.push(node.clone()),
            }
        }
        nodes
    }

    fn ids(list: &[&str]) -> Vec<String> {
        list.iter().map(|id| id.to_string()).collect()
    }

    #[test]
    fn vectors_match_the_specification() {
        assert_eq!(path_node_id(PROMPT), "arch-path-5b3f3c8187a8");
        let patch = propose_all(&verified_state(vec![code_ref(PROMPT, 10, 20, "demo")]));
        assert_eq!(patch.observations[0].id, "obs-map-proposal-945cb66bdb6d");
        assert_eq!(patch.evidence[0].id, "ev-map-proposal-945cb66bdb6d");
        assert_eq!(
            patch.observations[0].evidence_ids,
            vec!["ev-map-proposal-945cb66bdb6d"]
        );
    }

    #[test]
    fn a_new_path_creates_a_candidate_node() {
        let mut state = verified_state(vec![code_ref(PROMPT, 10, 20, "demo")]);
        state.churn = Some(churn("medium"));
        let patch = propose_all(&state);
        let nodes = nodes_of(&state, &patch);
        assert_eq!(nodes.len(), 1);
        let created = &nodes[0];
        assert_eq!(created.id, "arch-path-5b3f3c8187a8");
        assert_eq!(created.title, "prompt.rs");
        assert_eq!(
            created.purpose,
            "Candidate implementation surface from verified observation: obs-verified rendered \
             the prompt state"
        );
        assert_eq!(
            created.mechanism.as_deref(),
            Some(
                "Proposed from prioritized observation \"obs-verified\" and selected observation \
                 ids: obs-verified"
            )
        );
        assert_eq!(created.status.as_deref(), Some("candidate"));
        assert_eq!(created.code_refs, vec![code_ref(PROMPT, 10, 20, "demo")]);
        let frontier = patch.graph_frontier.as_deref().expect("frontier");
        assert_eq!(frontier.active_node_ids, vec!["arch-path-5b3f3c8187a8"]);
        assert_eq!(frontier.dirty_paths, vec![PROMPT]);
        let churn = churn_of(&patch);
        assert_eq!(churn.understanding_status, "proposal_expands_map");
        assert_eq!(churn.diff_pressure, "medium");
        assert_eq!(churn.graph_freshness.as_deref(), Some("proposal-expanded"));
        assert_eq!(
            churn.warning.as_deref(),
            Some(
                "Map/churn proposal derived from 1 evidence-backed observation(s), 1 accepting \
                 evidence record(s), 1 code path(s), high-priority verified selection, primary \
                 observation: obs-verified, source kind(s): smoke; delta judgment: 1 new \
                 candidate node(s); 1 touched path(s), 1 selected observation(s); promote only \
                 after verifier acceptance."
            )
        );
    }

    /// A created node is titled after the definitions its refs name, first named first; one
    /// whose symbol its parsed file does not define, or whose file is not parsed, keeps its
    /// file's name; a reused node keeps its title.
    #[test]
    fn created_nodes_are_titled_after_the_definitions_they_cite() {
        let definition = |name: &str, start: u32, end: u32| crate::policy::code_map::Definition {
            name: name.into(),
            kind: "function".into(),
            line: start,
            start_line: start,
            end_line: end,
            signature: String::new(),
        };
        let parsed = |definitions| FileUses {
            text: "\n".repeat(10),
            scoping: crate::policy::code_map::uses::Scoping::Rust,
            definitions,
            uses: Vec::new(),
            imports: Vec::new(),
        };
        let files: BTreeMap<String, FileUses> = [
            (
                "src/ledger.rs",
                parsed(vec![
                    definition("post_entry", 1, 3),
                    definition("balance", 5, 7),
                ]),
            ),
            ("src/audit.rs", parsed(vec![definition("audit", 1, 3)])),
            ("src/kept.rs", parsed(vec![definition("kept", 1, 3)])),
        ]
        .into_iter()
        .map(|(path, file)| (path.to_owned(), file))
        .collect();
        let state = with_nodes(
            verified_state(vec![
                code_ref("src/ledger.rs", 5, 7, "balance"),
                code_ref("src/ledger.rs", 1, 3, "Ledger::post_entry"),
                code_ref("src/ledger.rs", 5, 7, "balance"),
                code_ref("src/audit.rs", 1, 1, "gone"),
                code_ref("src/unparsed.md", 1, 1, "heading"),
                code_ref("src/kept.rs", 1, 3, "kept"),
            ]),
            vec![node("kept", vec![code_ref("src/kept.rs", 1, 3, "kept")])],
        );
        let mut patch = propose_all(&state);
        complete_from_code(&state, &mut patch, &files);
        let titles: Vec<String> = (nodes_of(&state, &patch).into_iter())
            .map(|node| node.title)
            .collect();
        assert_eq!(
            titles,
            [
                "kept title",
                "balance, Ledger::post_entry",
                "audit.rs",
                "unparsed.md"
            ]
        );
    }

    #[test]
    fn proposal_records_summarise_the_selection() {
        let patch = propose_all(&verified_state(vec![code_ref(PROMPT, 10, 20, "demo")]));
        let observation = &patch.observations[0];
        assert_eq!(observation.source_kind, "epiphany-map-proposal");
        assert_eq!(observation.status, "candidate");
        assert_eq!(
            observation.code_refs,
            vec![code_ref(PROMPT, 10, 20, "demo")]
        );
        assert_eq!(
            observation.summary,
            "Map/churn proposal from 1 evidence-backed observation(s), 1 accepting evidence \
             record(s), 1 code path(s), high-priority verified selection, primary observation: \
             obs-verified, source kind(s): smoke: obs-verified"
        );
        let evidence = &patch.evidence[0];
        assert_eq!(evidence.kind, "proposal");
        assert_eq!(evidence.status, "candidate");
        assert!(evidence.summary.starts_with(
            "Proposed graph frontier and churn update from 1 evidence-backed observation(s)"
        ));
        // The counts fall past the limit here: the summary is cut, as the original cut it.
        assert_eq!(evidence.summary.chars().count(), SUMMARY_LIMIT);
        assert!(evidence.summary.ends_with("..."));
    }

    #[test]
    fn a_secret_left_in_an_old_store_is_redacted_before_the_cut() {
        let mut state = verified_state(vec![code_ref(PROMPT, 10, 20, "demo")]);
        // Cut first, the purpose kept `ghp_1234567890a`, which no rule knows as a token.
        state.observations[0].summary = format!(
            "{} ghp_1234567890abcdefghijklmnopqrstuvwxyzAB tail",
            "a".repeat(140)
        );
        let patch = propose_all(&state);
        let purpose = &nodes_of(&state, &patch)[0].purpose;
        assert!(
            !purpose.contains("ghp_") && !purpose.contains("1234567890"),
            "{purpose}"
        );
        assert!(purpose.chars().count() <= SUMMARY_LIMIT, "{purpose}");
        assert!(purpose.ends_with("a ..."), "{purpose}");
    }

    #[test]
    fn an_identical_ref_refines_the_existing_node() {
        let refs = vec![
            code_ref(PROMPT, 10, 20, "demo"),
            code_ref(PROMPT, 30, 40, "more"),
        ];
        let mut state = with_nodes(
            verified_state(refs),
            vec![node(
                "prompt-renderer",
                vec![code_ref(PROMPT, 10, 20, "demo")],
            )],
        );
        state.churn = Some(churn("low"));
        let patch = propose_all(&state);
        let nodes = nodes_of(&state, &patch);
        assert_eq!(nodes.len(), 1);
        assert_eq!(nodes[0].status.as_deref(), Some("verified"));
        assert_eq!(nodes[0].title, "prompt-renderer title");
        assert_eq!(nodes[0].code_refs.len(), 2);
        assert_eq!(
            churn_of(&patch).understanding_status,
            "proposal_refines_map"
        );
        assert_churn(
            &patch,
            "proposal-refined",
            "low",
            "delta judgment: 1 exact-ref refinement(s);",
        );
    }

    #[test]
    fn another_span_on_the_same_path_broadens_the_node() {
        let state = with_nodes(
            verified_state(vec![code_ref(PROMPT, 10, 20, "demo")]),
            vec![node(
                "prompt-renderer",
                vec![code_ref(PROMPT, 1, 5, "head")],
            )],
        );
        let patch = propose_all(&state);
        assert_eq!(nodes_of(&state, &patch)[0].code_refs.len(), 2);
        assert_eq!(
            churn_of(&patch).understanding_status,
            "proposal_refines_map"
        );
        assert_churn(
            &patch,
            "proposal-broadened",
            "medium",
            "delta judgment: 1 same-path broadening reuse(s);",
        );
    }

    #[test]
    fn the_deterministic_id_is_reused() {
        let state = with_nodes(
            verified_state(vec![code_ref(PROMPT, 10, 20, "demo")]),
            vec![
                node("unrelated", vec![]),
                node(&path_node_id(PROMPT), vec![]),
            ],
        );
        let patch = propose_all(&state);
        let nodes = nodes_of(&state, &patch);
        assert_eq!(nodes.len(), 2);
        assert_eq!(nodes[1].code_refs, vec![code_ref(PROMPT, 10, 20, "demo")]);
        assert_churn(
            &patch,
            "proposal-refined",
            "low",
            "1 deterministic-node reuse(s)",
        );
    }

    /// An unanchored node sharing the terms `prompt`, `rendered`, `state`, `epiphany`, `model`.
    fn semantic_node(id: &str) -> GraphNode {
        GraphNode {
            purpose: "the rendered prompt state of the epiphany model".into(),
            status: None,
            ..node(id, vec![])
        }
    }

    #[test]
    fn a_unique_semantic_match_anchors_an_unanchored_node() {
        let state = with_nodes(
            verified_state(vec![code_ref(PROMPT, 10, 20, "demo")]),
            vec![semantic_node("renderer"), node("weak", vec![])],
        );
        let patch = propose_all(&state);
        let nodes = nodes_of(&state, &patch);
        assert_eq!(nodes.len(), 2);
        assert_eq!(nodes[0].code_refs.len(), 1);
        assert_churn(
            &patch,
            "proposal-semantically-anchored",
            "medium",
            "delta judgment: 1 semantic unanchored-node reuse(s);",
        );
    }

    #[test]
    fn a_semantic_tie_creates_a_new_node() {
        let state = with_nodes(
            verified_state(vec![code_ref(PROMPT, 10, 20, "demo")]),
            vec![semantic_node("renderer-a"), semantic_node("renderer-b")],
        );
        let patch = propose_all(&state);
        let nodes = nodes_of(&state, &patch);
        assert_eq!(nodes.len(), 3);
        assert_eq!(nodes[2].id, path_node_id(PROMPT));
        assert!(nodes[0].code_refs.is_empty() && nodes[1].code_refs.is_empty());
        assert_eq!(
            churn_of(&patch).understanding_status,
            "proposal_expands_map"
        );
    }

    #[test]
    fn anchored_nodes_are_not_semantic_candidates() {
        let mut anchored = semantic_node("renderer");
        anchored.code_refs = vec![code_ref("elsewhere.rs", 1, 2, "x")];
        let state = with_nodes(
            verified_state(vec![code_ref(PROMPT, 10, 20, "demo")]),
            vec![anchored],
        );
        let patch = propose_all(&state);
        assert_eq!(nodes_of(&state, &patch).len(), 2);
    }

    #[test]
    fn the_patch_upserts_only_the_nodes_it_changes() {
        let refs = vec![
            code_ref(PROMPT, 10, 20, "demo"),
            code_ref("src/new.rs", 1, 9, "fresh"),
        ];
        let state = with_nodes(
            verified_state(refs),
            vec![
                node("untouched", vec![code_ref("src/other.rs", 1, 2, "x")]),
                node("prompt-renderer", vec![code_ref(PROMPT, 1, 5, "head")]),
            ],
        );
        let patch = propose_all(&state);
        assert_eq!(patch.graphs, None);
        let upserted: Vec<&str> = patch
            .upsert
            .architecture_nodes
            .iter()
            .map(|node| node.id.as_str())
            .collect();
        assert_eq!(
            upserted,
            vec!["prompt-renderer", path_node_id("src/new.rs").as_str()]
        );
        assert_eq!(patch.upsert.architecture_nodes[0].code_refs.len(), 2);
        assert!(patch.remove.is_empty());
    }

    #[test]
    fn reuse_and_creation_across_paths_updates_the_map() {
        let refs = vec![
            code_ref(PROMPT, 10, 20, "demo"),
            code_ref("src/new.rs", 1, 9, "fresh"),
        ];
        let state = with_nodes(
            verified_state(refs),
            vec![node(
                "prompt-renderer",
                vec![code_ref(PROMPT, 10, 20, "demo")],
            )],
        );
        let patch = propose_all(&state);
        assert_eq!(nodes_of(&state, &patch).len(), 2);
        assert_eq!(
            churn_of(&patch).understanding_status,
            "proposal_updates_map"
        );
        assert_churn(
            &patch,
            "proposal-updated",
            "high",
            "delta judgment: 1 exact-ref refinement(s), 1 new candidate node(s); 2 touched \
             path(s), 1 selected observation(s)",
        );
    }

    #[test]
    fn the_frontier_follows_links_and_incident_edges() {
        let mut state = with_nodes(
            verified_state(vec![code_ref(PROMPT, 10, 20, "demo")]),
            vec![
                node("prompt-renderer", vec![code_ref(PROMPT, 10, 20, "demo")]),
                node("state-store", vec![]),
                node("far-away", vec![]),
            ],
        );
        state.graphs.architecture.edges = vec![
            edge("far-edge", "state-store", "far-away"),
            edge("renderer-reads-store", "state-store", "prompt-renderer"),
            GraphEdge {
                id: Some("  ".into()),
                ..edge("x", "prompt-renderer", "far-away")
            },
        ];
        state.graphs.dataflow = Graph {
            nodes: vec![node("epiphany-state-fragment", vec![])],
            edges: vec![edge(
                "fragment-to-prompt",
                "epiphany-state-fragment",
                "epiphany-state-fragment",
            )],
        };
        state.graphs.links = vec![GraphLink {
            dataflow_node_id: "epiphany-state-fragment".into(),
            architecture_node_id: "prompt-renderer".into(),
            relationship: None,
            code_refs: vec![],
        }];
        state.graph_frontier = Some(GraphFrontier {
            active_node_ids: vec!["state-store".into()],
            open_question_ids: vec!["q-1".into()],
            dirty_paths: vec![PROMPT.into()],
            ..GraphFrontier::default()
        });
        let patch = propose_all(&state);
        let frontier = patch.graph_frontier.as_deref().expect("frontier");
        assert_eq!(
            frontier.active_node_ids,
            vec!["state-store", "prompt-renderer", "epiphany-state-fragment"]
        );
        assert_eq!(
            frontier.active_edge_ids,
            vec!["renderer-reads-store", "fragment-to-prompt"]
        );
        assert_eq!(frontier.open_question_ids, vec!["q-1"]);
        assert_eq!(frontier.dirty_paths, vec![PROMPT]);
    }

    #[test]
    fn pressure_keeps_the_stronger_value() {
        let refs = vec![code_ref(PROMPT, 10, 20, "demo")];
        let pressure_after = |existing: Option<ChurnState>| {
            let mut state = verified_state(refs.clone());
            state.churn = existing;
            churn_of(&propose_all(&state)).clone()
        };
        assert_eq!(pressure_after(None).diff_pressure, "medium");
        assert_eq!(pressure_after(Some(churn("  "))).diff_pressure, "medium");
        assert_eq!(
            pressure_after(Some(churn(" Medium "))).diff_pressure,
            "Medium"
        );
        assert_eq!(
            pressure_after(Some(churn("critical"))).diff_pressure,
            "critical"
        );
        assert_eq!(
            pressure_after(Some(churn("severe"))).diff_pressure,
            "medium"
        );
        let unexplained = pressure_after(Some(ChurnState {
            unexplained_writes: Some(2),
            ..churn("low")
        }));
        assert_eq!(unexplained.diff_pressure, "high");
        assert_eq!(unexplained.unexplained_writes, Some(2));
    }

    #[test]
    fn selection_quality_labels_and_primary() {
        // Score of `obs-verified`: smoke 3 + 1 ref + summary 1 + evidence (4 + 0 + 1) = 10.
        let strong = verified_state(vec![code_ref(PROMPT, 10, 20, "demo")]);
        assert!(
            propose_all(&strong).observations[0]
                .summary
                .contains("high-priority")
        );
        let mut weak = strong.clone();
        weak.observations[0].source_kind = "note".into();
        weak.recent_evidence[0].kind = "note".into();
        let summary = &propose_all(&weak).observations[0].summary;
        assert!(
            summary.contains("low-priority accepted selection"),
            "{summary}"
        );
        let mut mixed = strong.clone();
        mixed.observations.push(Observation {
            source_kind: " ".into(),
            ..observation(
                "obs-weak",
                "ok",
                vec![code_ref(PROMPT, 1, 2, "x")],
                &["ev-weak"],
            )
        });
        mixed.recent_evidence.push(EvidenceRecord {
            kind: "note".into(),
            ..evidence("ev-weak", "pass")
        });
        let patch = propose(&mixed, &ids(&["obs-weak", "obs-verified"])).expect("propose");
        let warning = churn_of(&patch).warning.clone().expect("warning");
        assert!(
            warning.contains(
                "2 evidence-backed observation(s), 2 accepting evidence record(s), 1 code path(s), \
             mixed-priority verified selection, primary observation: obs-verified, source \
             kind(s): smoke;"
            ),
            "{warning}"
        );
    }

    #[test]
    fn explicit_ids_are_trimmed_and_deduplicated() {
        let state = verified_state(vec![code_ref(PROMPT, 10, 20, "demo")]);
        let patch = propose(&state, &ids(&[" obs-verified ", "", "obs-verified"])).expect("ok");
        assert_eq!(patch, propose_all(&state));
    }

    #[test]
    fn every_error_of_the_step_order() {
        let refs = vec![code_ref(PROMPT, 10, 20, "demo")];
        let mut state = verified_state(refs.clone());
        state.observations.extend([
            observation("obs-candidate", "candidate", refs.clone(), &["ev-ok"]),
            observation("obs-bare", "ok", refs.clone(), &[]),
            observation("obs-ghost", "ok", refs.clone(), &["ev-ghost"]),
            observation("obs-failing", "ok", refs.clone(), &["ev-bad"]),
            observation("obs-no-refs", "ok", vec![], &["ev-ok"]),
        ]);
        state.recent_evidence.push(evidence("ev-bad", "failed"));
        let error =
            |list: &[&str]| (propose(&state, &ids(list)).expect_err("must fail")).to_string();
        assert_eq!(
            error(&["nope", "obs-candidate"]),
            "observation id \"nope\" not found in state"
        );
        assert_eq!(
            error(&["obs-candidate"]),
            "observation id \"obs-candidate\" must have verified/accepted status, got \"candidate\""
        );
        assert_eq!(
            error(&["obs-bare"]),
            "observation id \"obs-bare\" must cite at least one evidence record"
        );
        assert_eq!(
            error(&["obs-ghost"]),
            "observation id \"obs-ghost\" cites missing evidence id \"ev-ghost\""
        );
        assert_eq!(
            error(&["obs-failing"]),
            "observation id \"obs-failing\" cites non-accepting evidence id \"ev-bad\" with \
             status \"failed\""
        );
        assert_eq!(
            error(&["obs-no-refs"]),
            "map proposals require at least one code ref on the selected observations"
        );
        let mut empty = state.clone();
        empty.observations.retain(|o| o.id != "obs-verified");
        assert_eq!(
            propose(&empty, &[]).expect_err("nothing ready"),
            Problem::whole(
                "`--observation` was omitted and no proposal-ready observations were found"
            )
        );
        assert_eq!(
            propose(&empty, &[]).expect_err("nothing ready").to_string(),
            "`--observation` was omitted and no proposal-ready observations were found"
        );
    }

    #[test]
    fn auto_selection_takes_the_strongest_path_cluster_newest_first() {
        let shared = |start| code_ref("src/shared.rs", start, start + 1, "s");
        let mut state = State {
            revision: 9,
            recent_evidence: vec![evidence("ev-ok", "ok"), evidence("ev-weak", "candidate")],
            ..State::default()
        };
        state.observations = vec![
            // Index 0 (newest): on another path only.
            observation(
                "obs-other",
                "ok",
                vec![code_ref("src/other.rs", 1, 2, "o")],
                &["ev-ok"],
            ),
            // Index 1: cites non-accepting evidence, never a candidate.
            observation("obs-unproven", "ok", vec![shared(1)], &["ev-weak"]),
            observation("obs-a", "ok", vec![shared(1)], &["ev-ok"]),
            observation("obs-b", "ok", vec![shared(3)], &["ev-ok"]),
            observation("obs-c", "ok", vec![shared(5)], &["ev-ok"]),
            observation("obs-d", "ok", vec![shared(7)], &["ev-ok"]),
            // The anchor: strongest thanks to a second ref on the dirty path.
            observation(
                "obs-anchor",
                "ok",
                vec![shared(9), code_ref("src/dirty.rs", 1, 2, "d")],
                &["ev-ok"],
            ),
        ];
        state.graph_frontier = Some(GraphFrontier {
            dirty_paths: vec!["src\\dirty.rs".into()],
            ..GraphFrontier::default()
        });
        assert_eq!(
            auto_select(&state),
            Ok(ids(&["obs-a", "obs-b", "obs-c", "obs-anchor"]))
        );
    }

    /// A state whose observations (`id`, path) are `ok`, each citing lines 1-2 of its path and
    /// backed by the `ok` evidence `ev-ok`.
    fn backed_observations(cited: &[(&str, &str)]) -> State {
        State {
            observations: cited
                .iter()
                .map(|(id, path)| {
                    observation(id, "ok", vec![code_ref(path, 1, 2, "x")], &["ev-ok"])
                })
                .collect(),
            recent_evidence: vec![evidence("ev-ok", "ok")],
            ..State::default()
        }
    }

    #[test]
    fn auto_selection_breaks_ties_by_recency() {
        let mut state = backed_observations(&[("obs-new", "a.rs"), ("obs-old", "b.rs")]);
        assert_eq!(auto_select(&state), Ok(ids(&["obs-new"])));
        // Mapped paths pull an older observation ahead.
        state.graphs.links = vec![GraphLink {
            dataflow_node_id: "d".into(),
            architecture_node_id: "a".into(),
            relationship: None,
            code_refs: vec![CodeRef::to_path("b.rs")],
        }];
        assert_eq!(auto_select(&state), Ok(ids(&["obs-old"])));
    }

    #[test]
    fn active_nodes_pull_their_paths_into_focus() {
        let mut state = backed_observations(&[("obs-mapped", "a.rs"), ("obs-active", "b.rs")]);
        state.graphs.architecture.nodes = vec![
            node("mapped", vec![CodeRef::to_path("a.rs")]),
            node("active", vec![CodeRef::to_path("b.rs")]),
        ];
        state.graph_frontier = Some(GraphFrontier {
            active_node_ids: vec!["active".into()],
            ..GraphFrontier::default()
        });
        assert_eq!(auto_select(&state), Ok(ids(&["obs-active"])));
    }

    #[test]
    fn signal_weights_use_plain_substrings() {
        assert_eq!(signal_kind_weight(" Verifier "), 4);
        assert_eq!(signal_kind_weight("contest"), 3);
        assert_eq!(signal_kind_weight("code-review"), 2);
        assert_eq!(signal_kind_weight("observation"), 1);
        assert_eq!(signal_kind_weight("note"), 0);
    }

    #[test]
    fn terms_follow_the_semantic_rules() {
        let mut terms = Vec::new();
        add_terms(
            &mut terms,
            "The state_model has-an Epiphany, and the STATE again; ok",
        );
        assert_eq!(terms, vec!["state", "model", "epiphany", "again"]);
        add_code_ref_terms(
            &mut terms,
            &[CodeRef {
                note: Some("renderer note".into()),
                ..code_ref(PROMPT, 1, 2, "render_prompt")
            }],
        );
        assert_eq!(
            terms,
            vec![
                "state", "model", "epiphany", "again", "prompt", "src", "render", "renderer",
                "note"
            ]
        );
    }
}
