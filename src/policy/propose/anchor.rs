//! Where a proposal's paths land on the architecture graph: the four node-matching rules
//! (exact code ref, same path, deterministic id, semantic reuse), the node created when none
//! matches, link closure and incident edges into the frontier, and the match counts.

use std::collections::BTreeMap;
use std::collections::HashSet;
use std::path::Path;

use super::cut_summary;
use super::path_node_id;
use super::select::Selection;
use super::select::add_code_ref_terms;
use super::select::add_terms;
use crate::policy::code_map::uses::FileUses;
use crate::policy::code_ref::code_ref_key;
use crate::policy::code_ref::definition_name;
use crate::policy::text::is_blank;
use crate::policy::text::uniq_append;
use crate::state::model::CodeRef;
use crate::state::model::GraphFrontier;
use crate::state::model::GraphNode;
use crate::state::model::Graphs;
use crate::state::paths::slash_key;

/// The fewest shared terms for a semantic reuse of an unanchored node.
pub const SEMANTIC_REUSE_MIN_SCORE: usize = 4;

fn node_terms(node: &GraphNode) -> HashSet<String> {
    let mut terms = Vec::new();
    for text in [&node.id, &node.title, &node.purpose] {
        add_terms(&mut terms, text);
    }
    for text in [&node.mechanism, &node.metaphor, &node.status]
        .into_iter()
        .flatten()
    {
        add_terms(&mut terms, text);
    }
    add_code_ref_terms(&mut terms, &node.code_refs);
    terms.into_iter().collect()
}

/// How a path found its architecture node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum MatchKind {
    ExactCodeRef,
    SamePath,
    DeterministicId,
    Semantic,
}

/// How many paths each rule anchored, and how many nodes were created.
#[derive(Debug, Default, PartialEq, Eq)]
pub(super) struct MatchCounts {
    pub(super) exact: usize,
    pub(super) same_path: usize,
    pub(super) deterministic: usize,
    pub(super) semantic: usize,
    pub(super) created: usize,
}

impl MatchCounts {
    pub(super) fn reused(&self) -> usize {
        self.exact + self.same_path + self.deterministic + self.semantic
    }

    fn count(&mut self, kind: MatchKind) {
        match kind {
            MatchKind::ExactCodeRef => self.exact += 1,
            MatchKind::SamePath => self.same_path += 1,
            MatchKind::DeterministicId => self.deterministic += 1,
            MatchKind::Semantic => self.semantic += 1,
        }
    }
}

/// Finds the architecture node for `path` by the first rule that matches
/// (docs/drafting.md#node-matching).
fn match_node(
    nodes: &[GraphNode],
    path: &str,
    path_refs: &[CodeRef],
    terms: &[String],
) -> Option<(usize, MatchKind)> {
    let keys: HashSet<String> = path_refs.iter().map(code_ref_key).collect();
    let exact = nodes
        .iter()
        .position(|n| n.code_refs.iter().any(|r| keys.contains(&code_ref_key(r))));
    if let Some(index) = exact {
        return Some((index, MatchKind::ExactCodeRef));
    }
    let same_path = nodes.iter().position(|n| {
        n.code_refs
            .iter()
            .any(|r| Path::new(&r.path) == Path::new(path))
    });
    if let Some(index) = same_path {
        return Some((index, MatchKind::SamePath));
    }
    let deterministic_id = path_node_id(path);
    if let Some(index) = nodes.iter().position(|n| n.id == deterministic_id) {
        return Some((index, MatchKind::DeterministicId));
    }
    let scores: Vec<(usize, usize)> = nodes
        .iter()
        .enumerate()
        .filter(|(_, node)| node.code_refs.is_empty())
        .map(|(index, node)| {
            let node_terms = node_terms(node);
            let score = terms.iter().filter(|t| node_terms.contains(*t)).count();
            (index, score)
        })
        .filter(|&(_, score)| score >= SEMANTIC_REUSE_MIN_SCORE)
        .collect();
    let best = scores.iter().map(|&(_, score)| score).max()?;
    match scores
        .iter()
        .filter(|&&(_, score)| score == best)
        .collect::<Vec<_>>()[..]
    {
        [&(index, _)] => Some((index, MatchKind::Semantic)),
        _ => None,
    }
}

/// Anchors `path` on a matching architecture node (merging its refs) or a new candidate node,
/// and returns the node id.
pub(super) fn anchor_path(
    graphs: &mut Graphs,
    path: &str,
    path_refs: Vec<CodeRef>,
    selection: &Selection<'_>,
    ids: &[String],
    counts: &mut MatchCounts,
) -> String {
    let nodes = &mut graphs.architecture.nodes;
    if let Some((index, kind)) = match_node(nodes, path, &path_refs, &selection.terms) {
        counts.count(kind);
        let node = &mut nodes[index];
        let mut keys: HashSet<String> = node.code_refs.iter().map(code_ref_key).collect();
        for code_ref in path_refs {
            if keys.insert(code_ref_key(&code_ref)) {
                node.code_refs.push(code_ref);
            }
        }
        return node.id.clone();
    }
    counts.created += 1;
    let title = Path::new(path)
        .file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .filter(|name| !is_blank(name))
        .unwrap_or_else(|| path.to_owned());
    let node = GraphNode {
        id: path_node_id(path),
        title,
        purpose: cut_summary(&format!(
            "Candidate implementation surface from verified observation: {}",
            selection.primary.summary
        )),
        mechanism: Some(format!(
            "Proposed from prioritized observation {:?} and selected observation ids: {}",
            selection.primary.id,
            ids.join(", ")
        )),
        metaphor: None,
        status: Some("candidate".into()),
        code_refs: path_refs,
    };
    let id = node.id.clone();
    nodes.push(node);
    id
}

/// Titles each of `nodes` that `existing` does not hold (the nodes a proposal created) after
/// the definitions its refs' symbols name, first named first (`balance`, `balance, post_entry`),
/// where `files` parsed its files (docs/drafting.md#node-matching). A node whose symbols name no
/// definition there keeps its file's name.
pub(super) fn title_created_nodes(
    existing: &Graphs,
    nodes: &mut [GraphNode],
    files: &BTreeMap<String, FileUses>,
) {
    let known: HashSet<&str> = (existing.architecture.nodes.iter())
        .map(|node| node.id.as_str())
        .collect();
    for node in nodes
        .iter_mut()
        .filter(|node| !known.contains(node.id.as_str()))
    {
        let mut names: Vec<String> = Vec::new();
        for code_ref in &node.code_refs {
            let Some(symbol) = code_ref.symbol.as_deref().map(str::trim) else {
                continue;
            };
            let defined = (files.get(&slash_key(&code_ref.path))).is_some_and(|file| {
                let name = definition_name(symbol);
                file.definitions.iter().any(|d| d.name == name)
            });
            if defined {
                uniq_append(&mut names, [symbol.to_owned()]);
            }
        }
        if !names.is_empty() {
            node.title = cut_summary(&names.join(", "));
        }
    }
}

/// The new frontier (docs/drafting.md#frontier-expansion): the anchored nodes and everything
/// linked to them, the edges that touch them, and the proposal's paths as dirty.
pub(super) fn expand_frontier(
    existing: Option<&GraphFrontier>,
    graphs: &Graphs,
    direct_ids: Vec<String>,
    paths: &[String],
) -> GraphFrontier {
    let mut closure = Vec::new();
    uniq_append(&mut closure, direct_ids);
    loop {
        let before = closure.len();
        for link in &graphs.links {
            if closure.contains(&link.architecture_node_id) {
                uniq_append(&mut closure, [link.dataflow_node_id.clone()]);
            }
            if closure.contains(&link.dataflow_node_id) {
                uniq_append(&mut closure, [link.architecture_node_id.clone()]);
            }
        }
        if closure.len() == before {
            break;
        }
    }
    let mut edge_ids = Vec::new();
    for (_, graph) in graphs.each() {
        for edge in &graph.edges {
            let touches = closure.contains(&edge.source_id) || closure.contains(&edge.target_id);
            let id = edge
                .id
                .as_deref()
                .map(str::trim)
                .filter(|id| !id.is_empty());
            if let Some(id) = id.filter(|_| touches) {
                uniq_append(&mut edge_ids, [id.to_owned()]);
            }
        }
    }
    let mut frontier = existing.cloned().unwrap_or_default();
    uniq_append(&mut frontier.active_node_ids, closure);
    uniq_append(&mut frontier.active_edge_ids, edge_ids);
    uniq_append(&mut frontier.dirty_paths, paths.iter().cloned());
    frontier
}
