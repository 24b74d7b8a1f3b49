//! What the caller must look up before freshness can be assessed: the commits to compare the
//! work tree with, the changes an index manifest records outside git, and the earlier files
//! that tell whether a cited definition changed. Must not look anything up itself: it names
//! what to read, and the caller reads it.

use std::collections::BTreeMap;
use std::collections::BTreeSet;

use crate::policy::text::fresh_key;
use crate::state::model::CodeRef;
use crate::state::model::RetrievalState;
use crate::state::model::RetrievalStatus;
use crate::state::model::State;
use crate::state::snapshot::Anchor;
use crate::state::snapshot::CHECKPOINT_ANCHOR;
use crate::state::snapshot::node_anchor_key;

use super::ChangeSource;
use super::WatcherInput;
use super::WorkTreeChanges;

/// The commits the watcher compares the work tree with. The base commit (the `--since`
/// revision's, else the last write's) always; without `--since` also every anchored record's
/// own commit, so each record is judged against the code it was written on. With `--since`
/// every record is compared with that one commit. Sorted, each once.
pub fn commits_to_compare(
    base_commit: &str,
    since: Option<u64>,
    anchors: &BTreeMap<String, Anchor>,
) -> Vec<String> {
    let mut commits = BTreeSet::from([base_commit.to_owned()]);
    if since.is_none() {
        commits.extend(
            anchors
                .values()
                .filter_map(|anchor| anchor.git_head.clone()),
        );
    }
    commits.into_iter().collect()
}

/// Outside git, the index manifest's dirty paths are the only record of what changed. Only a
/// summary read from a manifest counts: it carries the time of indexing, which the baseline
/// summary of a workspace without an index (docs/retrieval.md#retrieval-summary) does not.
pub fn manifest_changes(
    retrieval: Option<&RetrievalState>,
    watched_root: String,
    observed_at_unix_seconds: i64,
) -> WatcherInput {
    match retrieval.filter(|r| {
        r.status != RetrievalStatus::Unavailable && r.index.last_indexed_at_unix_seconds.is_some()
    }) {
        None => WatcherInput::Unavailable(
            "not in a git repository, and no retrieval index manifest to compare with (`epiphany index` builds one)".to_owned(),
        ),
        Some(retrieval) => WatcherInput::Observed(WorkTreeChanges {
            source: ChangeSource::Manifest,
            since_base: retrieval
                .dirty_paths
                .iter()
                .map(|path| fresh_key(path, Some(&watched_root)))
                .collect(),
            watched_root,
            observed_at_unix_seconds,
            base_commit: None,
            since_revision: None,
            since_commit: Default::default(),
            renames: Default::default(),
            unknown_commits: Vec::new(),
            cited_then: BTreeMap::new(),
        }),
    }
}

/// The earlier files that tell whether a cited definition changed: for every reference of a
/// graph node or the checkpoint that cites a symbol in a file changed since its record was
/// written, (the commit the record is compared with, the cited path) → the symbols cited
/// there. The caller reads them into [`WorkTreeChanges::cited_then`].
pub fn definitions_to_compare(
    state: &State,
    anchors: &BTreeMap<String, Anchor>,
    changes: &WorkTreeChanges,
) -> BTreeMap<(String, String), BTreeSet<String>> {
    let root = Some(changes.watched_root.as_str());
    let mut wanted: BTreeMap<(String, String), BTreeSet<String>> = BTreeMap::new();
    let mut want = |refs: &[CodeRef], anchor_key: &str| {
        let (Some(commit), changed) = changes.compared(anchors, anchor_key) else {
            return;
        };
        for code_ref in refs {
            if let Some(symbol) = &code_ref.symbol
                && changed.contains(&fresh_key(&code_ref.path, root))
            {
                (wanted.entry((commit.to_owned(), code_ref.path.clone())))
                    .or_default()
                    .insert(symbol.clone());
            }
        }
    };
    for (kind, graph) in state.graphs.each() {
        for node in &graph.nodes {
            want(&node.code_refs, &node_anchor_key(kind, &node.id));
        }
    }
    if let Some(checkpoint) = &state.investigation_checkpoint {
        want(&checkpoint.code_refs, CHECKPOINT_ANCHOR);
    }
    wanted
}
