//! The watcher (docs/freshness.md#watcher-inputs): maps the work tree's changes onto the graph
//! nodes and the investigation checkpoint, each against its own anchor. Must not decide
//! whether the whole is fresh: [`assess_freshness`](super::assess_freshness) does.

use std::collections::BTreeMap;
use std::collections::HashSet;

use crate::policy::code_ref::definition_unchanged;
use crate::policy::recheck::CitedFiles;
use crate::policy::text::fresh_key;
use crate::policy::text::uniq_append;
use crate::state::model::CodeRef;
use crate::state::model::State;
use crate::state::snapshot::Anchor;
use crate::state::snapshot::CHECKPOINT_ANCHOR;
use crate::state::snapshot::node_anchor_key;

use super::PathChange;
use super::WatcherFreshness;
use super::WatcherInput;
use super::WatcherStatus;
use super::WorkTreeChanges;

/// What one changed path hits, while the hits are collected.
#[derive(Default)]
struct Hits {
    node_ids: Vec<String>,
    checkpoint: bool,
}

/// Whether the graphs or the checkpoint cite code: what the watcher compares with git.
pub(super) fn maps_code(state: &State) -> bool {
    let graphs = state.graphs.each().into_iter();
    graphs
        .flat_map(|(_, graph)| &graph.nodes)
        .any(|node| !node.code_refs.is_empty())
        || (state.investigation_checkpoint.as_ref()).is_some_and(|c| !c.code_refs.is_empty())
}

/// Maps the work tree's changes onto the graph nodes and the checkpoint
/// (docs/freshness.md#watcher-inputs), each against its own anchor.
pub(super) fn watch(
    state: Option<&State>,
    anchors: &BTreeMap<String, Anchor>,
    input: &WatcherInput,
    cited: Option<&CitedFiles>,
) -> WatcherFreshness {
    let changes = match input {
        WatcherInput::Unavailable(reason) | WatcherInput::Unknown(reason) => {
            return unavailable(reason);
        }
        WatcherInput::Observed(changes) => changes,
    };
    let compared = Compared {
        changes,
        anchors,
        cited,
    };
    let found = find_hits(state, &compared);
    let changes_list = path_changes(
        found.hits,
        &changes.renames,
        &found.active_frontier_node_ids,
    );
    let changed_paths: Vec<String> = changes_list.iter().map(|c| c.path.clone()).collect();
    let checkpoint_changed_paths: Vec<String> = changes_list
        .iter()
        .filter(|c| c.cited_by_checkpoint)
        .map(|c| c.path.clone())
        .collect();
    let note = watcher_note(
        changed_paths.len(),
        found.graph_node_ids.len(),
        found.active_frontier_node_ids.len(),
        checkpoint_changed_paths.len(),
    );
    WatcherFreshness {
        status: if changed_paths.is_empty() {
            WatcherStatus::Clean
        } else {
            WatcherStatus::Changed
        },
        source: Some(changes.source),
        watched_root: Some(changes.watched_root.clone()),
        observed_at_unix_seconds: Some(changes.observed_at_unix_seconds),
        base_commit: changes.base_commit.clone(),
        since_revision: changes.since_revision,
        changed_path_count: changed_paths.len(),
        changed_paths,
        changes: changes_list,
        graph_node_ids: found.graph_node_ids,
        active_frontier_node_ids: found.active_frontier_node_ids,
        checkpoint_changed_paths,
        note,
    }
}

/// The watcher's report when the work tree's changes could not be observed: `reason` says why.
fn unavailable(reason: &str) -> WatcherFreshness {
    WatcherFreshness {
        status: WatcherStatus::Unavailable,
        source: None,
        watched_root: None,
        observed_at_unix_seconds: None,
        base_commit: None,
        since_revision: None,
        changed_path_count: 0,
        changed_paths: Vec::new(),
        changes: Vec::new(),
        graph_node_ids: Vec::new(),
        active_frontier_node_ids: Vec::new(),
        checkpoint_changed_paths: Vec::new(),
        note: reason.to_owned(),
    }
}

/// What a record's references are compared with: the observed changes, the anchors that say
/// which commit each record is compared with, and the cited files as the work tree has them.
struct Compared<'a> {
    changes: &'a WorkTreeChanges,
    anchors: &'a BTreeMap<String, Anchor>,
    cited: Option<&'a CitedFiles>,
}

impl Compared<'_> {
    /// Whether the definition `code_ref` cites is word for word what it was at `commit`: such
    /// a reference cites nothing changed.
    fn definition_kept(&self, code_ref: &CodeRef, commit: Option<&str>) -> bool {
        let then = commit.and_then(|commit| {
            let key = (commit.to_owned(), code_ref.path.clone());
            self.changes.cited_then.get(&key)
        });
        let now = (self.cited).and_then(|cited| cited.files.get(&code_ref.path));
        then.zip(now)
            .is_some_and(|(then, now)| definition_unchanged(code_ref, then, now))
    }

    /// The changed paths (as keys under the watched root) that `refs`, of the record anchored
    /// at `anchor_key`, cite, each once, in the order of the references.
    fn cited_changes(&self, refs: &[CodeRef], anchor_key: &str) -> Vec<String> {
        let root = Some(self.changes.watched_root.as_str());
        let (commit, changed) = self.changes.compared(self.anchors, anchor_key);
        let mut keys = Vec::new();
        uniq_append(
            &mut keys,
            refs.iter().filter_map(|r| {
                let key = fresh_key(&r.path, root);
                (changed.contains(&key) && !self.definition_kept(r, commit)).then_some(key)
            }),
        );
        keys
    }
}

/// What the changes hit: each changed path with its hits, the graph nodes hit (in graph
/// order), and the active frontier nodes among them.
struct Found {
    hits: BTreeMap<String, Hits>,
    graph_node_ids: Vec<String>,
    active_frontier_node_ids: Vec<String>,
}

/// Walks the graph nodes and the checkpoint for the changed paths their references cite,
/// each against its own anchor. Every path changed since the base is listed, hit or not.
fn find_hits(state: Option<&State>, compared: &Compared<'_>) -> Found {
    let changes = compared.changes;
    let mut found = Found {
        hits: (changes.since_base.iter())
            .map(|path| (path.clone(), Hits::default()))
            .collect(),
        graph_node_ids: Vec::new(),
        active_frontier_node_ids: Vec::new(),
    };
    // A clean tree since every anchor hits nothing: the map need not be walked.
    let anything_changed = !changes.since_base.is_empty()
        || changes.since_commit.values().any(|paths| !paths.is_empty());
    let Some(state) = state.filter(|_| anything_changed) else {
        return found;
    };
    let mut hit_nodes: HashSet<&str> = HashSet::new();
    for (kind, graph) in state.graphs.each() {
        for node in &graph.nodes {
            let paths = compared.cited_changes(&node.code_refs, &node_anchor_key(kind, &node.id));
            for path in &paths {
                let hit = found.hits.entry(path.clone()).or_default();
                uniq_append(&mut hit.node_ids, [node.id.clone()]);
            }
            if !paths.is_empty() && hit_nodes.insert(node.id.as_str()) {
                found.graph_node_ids.push(node.id.clone());
            }
        }
    }
    if let Some(checkpoint) = &state.investigation_checkpoint {
        for path in compared.cited_changes(&checkpoint.code_refs, CHECKPOINT_ANCHOR) {
            found.hits.entry(path).or_default().checkpoint = true;
        }
    }
    if let Some(frontier) = &state.graph_frontier {
        found.active_frontier_node_ids = frontier
            .active_node_ids
            .iter()
            .filter(|id| hit_nodes.contains(id.as_str()))
            .cloned()
            .collect();
    }
    found
}

/// Each changed path with what it hits, its rename, and the active frontier nodes among the
/// nodes it hits, in path order.
fn path_changes(
    hits: BTreeMap<String, Hits>,
    renames: &BTreeMap<String, String>,
    active_frontier_node_ids: &[String],
) -> Vec<PathChange> {
    hits.into_iter()
        .map(|(path, hit)| PathChange {
            renamed_to: renames.get(&path).cloned(),
            active_frontier_node_ids: active_frontier_node_ids
                .iter()
                .filter(|id| hit.node_ids.contains(id))
                .cloned()
                .collect(),
            graph_node_ids: hit.node_ids,
            cited_by_checkpoint: hit.checkpoint,
            path,
        })
        .collect()
}

/// The watcher's note: how many paths changed and what they hit.
fn watcher_note(changed: usize, nodes: usize, frontier: usize, checkpoint: usize) -> String {
    if changed == 0 {
        return "no changed files".to_owned();
    }
    let mut note = match (nodes, frontier) {
        (0, _) => format!("{changed} changed paths; no mapped node cites one since it was written"),
        (nodes, 0) => format!("{changed} changed paths hit {nodes} graph nodes"),
        (nodes, frontier) => format!(
            "{changed} changed paths hit {nodes} graph nodes, including {frontier} frontier nodes"
        ),
    };
    if checkpoint > 0 {
        note.push_str(&format!(
            "; {checkpoint} paths cited by the investigation checkpoint changed"
        ));
    }
    note
}
