//! The watcher (docs/freshness.md#watcher-inputs): maps the work tree's changes onto the graph
//! nodes and the investigation checkpoint, each against its own anchor, and writes each of
//! them its certificate (docs/freshness.md#certificates). Must not decide whether the whole is
//! fresh: [`assess_freshness`](super::assess_freshness) does.

use std::collections::BTreeMap;
use std::collections::HashSet;

use crate::policy::code_ref::CitedFile;
use crate::policy::code_ref::RefOwner;
use crate::policy::code_ref::fingerprint_in;
use crate::policy::code_ref::fingerprint_now;
use crate::policy::code_ref::format_code_ref;
use crate::policy::recheck::CitedFiles;
use crate::policy::text::fresh_key;
use crate::policy::text::uniq_append;
use crate::state::model::CodeRef;
use crate::state::model::State;
use crate::state::snapshot::Anchor;
use crate::state::snapshot::CHECKPOINT_ANCHOR;
use crate::state::snapshot::node_anchor_key;

use super::Certificate;
use super::CertificateStatus;
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

/// Whether the graphs or the checkpoint cite code that only git can judge: references written
/// before fingerprints, which are compared with the commit of their record.
pub(super) fn maps_unfingerprinted_code(state: &State) -> bool {
    let graphs = state.graphs.each().into_iter();
    let nodes = graphs.flat_map(|(_, graph)| &graph.nodes);
    let checkpoint = state.investigation_checkpoint.iter();
    (nodes.flat_map(|node| &node.code_refs))
        .chain(checkpoint.flat_map(|checkpoint| &checkpoint.code_refs))
        .any(|code_ref| !code_ref.planned && code_ref.fingerprint.is_none())
}

/// Maps the work tree's changes onto the graph nodes and the checkpoint
/// (docs/freshness.md#watcher-inputs), each against its own anchor, and certifies each of them
/// (docs/freshness.md#certificates): the watcher's report, and the certificates in state order. A reference with a fingerprint is judged by its cited text
/// alone, so it is certified even where git cannot say what changed; one written before
/// fingerprints is judged by git, against the commit of its record.
pub(super) fn watch(
    state: Option<&State>,
    anchors: &BTreeMap<String, Anchor>,
    input: &WatcherInput,
    cited: Option<&CitedFiles>,
) -> (WatcherFreshness, Vec<Certificate>) {
    let changes = match input {
        WatcherInput::Observed(changes) => Some(changes),
        WatcherInput::Unavailable(_) | WatcherInput::Unknown(_) => None,
    };
    let compared = Compared {
        changes,
        anchors,
        cited,
    };
    let found = find_hits(state, &compared);
    let changes_list = path_changes(
        found.hits,
        changes.map(|c| &c.renames),
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
    let (status, note) = match input {
        WatcherInput::Unavailable(reason) | WatcherInput::Unknown(reason)
            if changed_paths.is_empty() =>
        {
            (WatcherStatus::Unavailable, reason.clone())
        }
        WatcherInput::Unavailable(reason) | WatcherInput::Unknown(reason) => {
            (WatcherStatus::Unavailable, format!("{reason}; {note}"))
        }
        WatcherInput::Observed(_) if changed_paths.is_empty() => (WatcherStatus::Clean, note),
        WatcherInput::Observed(_) => (WatcherStatus::Changed, note),
    };
    let watcher = WatcherFreshness {
        status,
        source: changes.map(|c| c.source),
        watched_root: changes.map(|c| c.watched_root.clone()),
        observed_at_unix_seconds: changes.map(|c| c.observed_at_unix_seconds),
        base_commit: changes.and_then(|c| c.base_commit.clone()),
        since_revision: changes.and_then(|c| c.since_revision),
        changed_path_count: changed_paths.len(),
        changed_paths,
        changes: changes_list,
        graph_node_ids: found.graph_node_ids,
        active_frontier_node_ids: found.active_frontier_node_ids,
        checkpoint_changed_paths,
        note,
    };
    (watcher, found.certificates)
}

/// The certificate of the record `owner` (anchored under `anchor_key`) with `refs`, judged by
/// what its references checked alone, without git: references written before fingerprints are
/// not checkable here. For views that show a few records (`context`); `None` when it cites
/// nothing to check.
pub fn certify_by_fingerprints(
    owner: RefOwner,
    refs: &[CodeRef],
    anchor_key: &str,
    anchors: &BTreeMap<String, Anchor>,
    cited: &CitedFiles,
) -> Option<Certificate> {
    let compared = Compared {
        changes: None,
        anchors,
        cited: Some(cited),
    };
    Some(compared.certify(owner, refs, anchor_key)?.0)
}

/// What a record's references are compared with: the observed changes (none where git cannot
/// tell), the anchors that say which commit each record is compared with, and the cited files
/// as the work tree has them.
struct Compared<'a> {
    changes: Option<&'a WorkTreeChanges>,
    anchors: &'a BTreeMap<String, Anchor>,
    cited: Option<&'a CitedFiles>,
}

/// One reference's part in its record's certificate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum RefVerdict {
    /// What it cites is what was checked.
    Unchanged,
    /// What it cites changed since it was checked (or is gone).
    Changed,
    /// Nothing can tell.
    Unknown,
}

impl Compared<'_> {
    /// `code_ref` where its file is now: at the path git renamed it to when it is gone.
    fn followed(&self, code_ref: &CodeRef) -> Option<(CodeRef, &CitedFile)> {
        let files = &self.cited?.files;
        let file = files.get(&code_ref.path)?;
        if *file != CitedFile::Missing {
            return Some((code_ref.clone(), file));
        }
        let to = self.changes?.renames.get(&code_ref.path)?;
        let moved = CodeRef {
            path: to.clone(),
            ..code_ref.clone()
        };
        Some((moved, files.get(to)?))
    }

    /// Whether what `code_ref`, of the record under `anchor_key`, cites is still what was
    /// checked: with a fingerprint, its cited text now (wherever its definition moved) against
    /// the fingerprint; without one, or when `--since` names the commit to compare with, git's
    /// word that its file did not change since that commit, or that the definition it cites is
    /// word for word what it was then.
    /// A symbol in a file whose parse ran out of time is not judged: nothing can tell.
    fn verdict(&self, code_ref: &CodeRef, anchor_key: &str) -> RefVerdict {
        let unjudged = (self.followed(code_ref).zip(self.cited))
            .is_some_and(|((followed, _), cited)| cited.is_unjudged(&followed, &followed.path));
        if unjudged {
            return RefVerdict::Unknown;
        }
        let then = (self.changes)
            .and_then(|changes| changes.cited_then_at(self.anchors, anchor_key, &code_ref.path));
        let since = self.changes.is_some_and(|c| c.since_revision.is_some());
        if let Some(stored) = code_ref.fingerprint.as_ref().filter(|_| !since) {
            let Some((followed, now)) = self.followed(code_ref) else {
                return RefVerdict::Unknown;
            };
            return match fingerprint_now(&followed, now, then) {
                Some(current) if current == *stored => RefVerdict::Unchanged,
                _ => RefVerdict::Changed,
            };
        }
        let Some(changes) = self.changes else {
            return RefVerdict::Unknown;
        };
        let root = Some(changes.watched_root.as_str());
        let (_, changed) = changes.compared(self.anchors, anchor_key);
        if !changed.contains(&fresh_key(&code_ref.path, root)) {
            return RefVerdict::Unchanged;
        }
        let kept = code_ref.symbol.is_some()
            && (then.zip(self.followed(code_ref))).is_some_and(|(then, (followed, now))| {
                let was = fingerprint_in(code_ref, then);
                was.is_some() && was == fingerprint_now(&followed, now, Some(then))
            });
        if kept {
            RefVerdict::Unchanged
        } else {
            RefVerdict::Changed
        }
    }

    /// The certificate of the record `owner`, anchored under `anchor_key`, with `refs`, and the
    /// paths (as keys under the watched root) of its references whose cited code changed, each
    /// once, in the order of the references. `None` when it cites nothing to check (no
    /// references, or only plans).
    fn certify(
        &self,
        owner: RefOwner,
        refs: &[CodeRef],
        anchor_key: &str,
    ) -> Option<(Certificate, Vec<String>)> {
        let root = self.changes.map(|c| c.watched_root.as_str());
        let mut changed_paths = Vec::new();
        let mut changed_refs = Vec::new();
        let mut unknown = false;
        let mut checked_any = false;
        for code_ref in refs.iter().filter(|r| !r.planned) {
            checked_any = true;
            match self.verdict(code_ref, anchor_key) {
                RefVerdict::Unchanged => {}
                RefVerdict::Unknown => unknown = true,
                RefVerdict::Changed => {
                    uniq_append(&mut changed_paths, [fresh_key(&code_ref.path, root)]);
                    changed_refs.push(format_code_ref(code_ref));
                }
            }
        }
        if !checked_any {
            return None;
        }
        let status = if !changed_refs.is_empty() {
            CertificateStatus::ChangedSinceChecked
        } else if unknown {
            CertificateStatus::NotCheckable
        } else {
            CertificateStatus::Unchanged
        };
        let anchor = self.anchors.get(anchor_key);
        let certificate = Certificate {
            owner,
            status,
            checked_at: anchor.and_then(|a| a.git_head.clone()),
            checked_revision: anchor.map(|a| a.revision),
            changed_refs,
        };
        Some((certificate, changed_paths))
    }
}

/// What the changes hit: each changed path with its hits, the graph nodes hit (in graph
/// order), the active frontier nodes among them, and every record's certificate.
struct Found {
    hits: BTreeMap<String, Hits>,
    graph_node_ids: Vec<String>,
    active_frontier_node_ids: Vec<String>,
    certificates: Vec<Certificate>,
}

/// Walks the graph nodes and the checkpoint for what their references cite that changed since
/// it was checked, each against its own anchor. Every path changed since the base is listed,
/// hit or not.
fn find_hits(state: Option<&State>, compared: &Compared<'_>) -> Found {
    let mut found = Found {
        hits: (compared.changes.iter())
            .flat_map(|changes| &changes.since_base)
            .map(|path| (path.clone(), Hits::default()))
            .collect(),
        graph_node_ids: Vec::new(),
        active_frontier_node_ids: Vec::new(),
        certificates: Vec::new(),
    };
    let Some(state) = state else {
        return found;
    };
    let mut hit_nodes: HashSet<&str> = HashSet::new();
    for (kind, graph) in state.graphs.each() {
        for node in &graph.nodes {
            let owner = RefOwner::Node {
                graph: kind,
                id: node.id.clone(),
            };
            let key = node_anchor_key(kind, &node.id);
            let Some((certificate, paths)) = compared.certify(owner, &node.code_refs, &key) else {
                continue;
            };
            found.certificates.push(certificate);
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
        let owner = RefOwner::InvestigationCheckpoint {
            id: checkpoint.brief.checkpoint_id.clone(),
        };
        if let Some((certificate, paths)) =
            compared.certify(owner, &checkpoint.code_refs, CHECKPOINT_ANCHOR)
        {
            found.certificates.push(certificate);
            for path in paths {
                found.hits.entry(path).or_default().checkpoint = true;
            }
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
    renames: Option<&BTreeMap<String, String>>,
    active_frontier_node_ids: &[String],
) -> Vec<PathChange> {
    hits.into_iter()
        .map(|(path, hit)| PathChange {
            renamed_to: renames.and_then(|renames| renames.get(&path)).cloned(),
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
