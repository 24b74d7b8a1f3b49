//! Freshness (docs/freshness.md): is the retrieval index current, is the graph settled,
//! and which mapped records cite files that changed in the work tree since they were written.
//!
//! The watcher of the original becomes the work tree's changes, which the caller observes
//! (from git, or from the index manifest outside git) and passes in as [`WorkTreeChanges`].
//! Each graph node and the investigation checkpoint is compared with the changes since *its
//! own* anchor commit (the last write that changed it), so an unrelated later write never
//! makes a stale record look fresh. Reads no files and asks no git itself.
//!
//! This module holds the report's types and [`assess_freshness`], which puts it together;
//! `compare` names what the caller must read first, `status` judges the retrieval index and
//! the graph, `watch` maps the work tree's changes onto the records.

mod compare;
mod status;
mod watch;

pub(crate) use compare::commits_to_compare;
pub(crate) use compare::definitions_to_compare;
pub(crate) use compare::manifest_changes;
pub(crate) use status::graph_freshness;
pub(crate) use status::retrieval_freshness;

use std::collections::BTreeMap;
use std::collections::BTreeSet;

use serde::Serialize;

use crate::policy::code_ref::CitedFile;
use crate::policy::code_ref::RefFindingKind;
use crate::policy::code_ref::RefOwner;
use crate::policy::projection::StateStatus;
use crate::policy::recheck::CitedFiles;
use crate::policy::recheck::ReferenceFreshness;
use crate::policy::recheck::recheck_references;
use crate::policy::text::uniq_append;
use crate::state::model::IndexTally;
use crate::state::model::RetrievalState;
use crate::state::model::State;
use crate::state::snapshot::Anchor;

pub use watch::certify_by_fingerprints;
use watch::maps_unfingerprinted_code;
use watch::watch;

/// `churn.graph_freshness` values that read as fresh (exact, case-sensitive).
pub const FRESH_GRAPH_LABELS: [&str; 4] = ["fresh", "ready", "current", "ok"];

/// How many dirty paths and open items a note names.
const NAMED_LIMIT: usize = 4;

/// Retrieval index status as freshness reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RetrievalFreshnessStatus {
    /// No retrieval summary at all.
    Missing,
    /// The index matches the work tree.
    Ready,
    /// Files changed since indexing.
    Stale,
    /// An index run is under way.
    Indexing,
    /// Retrieval cannot work here.
    Unavailable,
}

/// Freshness of the retrieval index (docs/freshness.md#retrieval-freshness).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RetrievalFreshness {
    /// Index status.
    pub status: RetrievalFreshnessStatus,
    /// Whether chunk search is available.
    pub semantic_available: bool,
    /// When the index was written and what it holds.
    pub index: IndexTally,
    /// Files changed since indexing.
    pub dirty_paths: Vec<String>,
    /// What it means.
    pub note: String,
}

/// Graph status as freshness reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum GraphFreshnessStatus {
    /// No state.
    Missing,
    /// Nothing dirty, nothing open, freshness label fresh.
    Ready,
    /// Dirty paths, open questions or gaps, or a non-fresh label.
    Stale,
}

/// Freshness of the graph as the state itself records it (docs/freshness.md#graph-freshness).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GraphFreshness {
    /// Graph status.
    pub status: GraphFreshnessStatus,
    /// Frontier dirty paths.
    pub dirty_paths: Vec<String>,
    /// How many.
    pub dirty_path_count: usize,
    /// Open questions on the frontier.
    pub open_question_count: usize,
    /// Open gaps on the frontier.
    pub open_gap_count: usize,
    /// The graph checkpoint.
    pub checkpoint_id: Option<String>,
    /// `churn.graph_freshness`.
    pub graph_freshness: Option<String>,
    /// What it means.
    pub note: String,
}

/// Where the changed paths came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ChangeSource {
    /// git: committed, staged, unstaged and untracked changes.
    Git,
    /// The retrieval index manifest (outside git).
    Manifest,
}

/// The work tree's changes, as observed by the caller. Paths are keys: relative to the watched
/// root, `/`-separated, without a leading `./`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkTreeChanges {
    /// git or the manifest.
    pub source: ChangeSource,
    /// The directory the paths are relative to.
    pub watched_root: String,
    /// When the changes were observed.
    pub observed_at_unix_seconds: i64,
    /// The commit compared against by default: the last write's, or `--since`'s.
    pub base_commit: Option<String>,
    /// The revision `--since` named.
    pub since_revision: Option<u64>,
    /// Paths changed since the base.
    pub since_base: BTreeSet<String>,
    /// Paths changed since each anchor commit; records anchored at a commit not listed here
    /// (or at none) are compared with the base.
    pub since_commit: BTreeMap<String, BTreeSet<String>>,
    /// Renamed paths: old → new.
    pub renames: BTreeMap<String, String>,
    /// Commits records were written at that git lacks, with nothing to stand in for them (a
    /// shallow clone cut off before the records entered): what changed since them is unknown.
    pub unknown_commits: Vec<String>,
    /// Files cited by symbol as they were at the commit their records are compared with:
    /// (commit, cited path) → the file then, read for [`definitions_to_compare`]. A reference
    /// to a definition whose text is unchanged does not make its record stale.
    pub cited_then: BTreeMap<(String, String), CitedFile>,
}

impl WorkTreeChanges {
    /// The commit the record under `anchor_key` is compared with (its own when git had it,
    /// else the base; `None` outside git) and the paths changed since.
    fn compared(
        &self,
        anchors: &BTreeMap<String, Anchor>,
        anchor_key: &str,
    ) -> (Option<&str>, &BTreeSet<String>) {
        let own = anchors
            .get(anchor_key)
            .and_then(|anchor| anchor.git_head.as_deref())
            .and_then(|commit| self.since_commit.get_key_value(commit));
        match own {
            Some((commit, changed)) => (Some(commit.as_str()), changed),
            None => (self.base_commit.as_deref(), &self.since_base),
        }
    }
}

impl WorkTreeChanges {
    /// The file at `path` as the commit the record under `anchor_key` is compared with had it,
    /// where it was read.
    fn cited_then_at(
        &self,
        anchors: &BTreeMap<String, Anchor>,
        anchor_key: &str,
        path: &str,
    ) -> Option<&CitedFile> {
        let (commit, _) = self.compared(anchors, anchor_key);
        (self.cited_then).get(&(commit?.to_owned(), path.to_owned()))
    }
}

/// The watcher input: observed changes, or why there are none.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WatcherInput {
    /// No changes can be observed (outside git, without an index to compare with); the reason.
    Unavailable(String),
    /// Inside git, but there is no commit to compare the records with (they were written
    /// before the first commit, or at one git lacks); the reason.
    Unknown(String),
    /// Observed changes.
    Observed(WorkTreeChanges),
}

impl WatcherInput {
    /// Whether what changed since some records were written cannot be known.
    fn history_unknown(&self) -> bool {
        match self {
            WatcherInput::Unavailable(_) => false,
            WatcherInput::Unknown(_) => true,
            WatcherInput::Observed(changes) => !changes.unknown_commits.is_empty(),
        }
    }
}

/// Watcher status.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum WatcherStatus {
    /// Changes cannot be observed.
    Unavailable,
    /// Nothing changed.
    Clean,
    /// Something changed.
    Changed,
}

/// One changed path and the mapped records that cite it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PathChange {
    /// The path, relative to the watched root.
    pub path: String,
    /// Where it went, when it was renamed.
    pub renamed_to: Option<String>,
    /// Graph nodes citing it that were written before it changed.
    pub graph_node_ids: Vec<String>,
    /// Those of them on the active frontier.
    pub active_frontier_node_ids: Vec<String>,
    /// Whether the investigation checkpoint cites it and was written before it changed.
    pub cited_by_checkpoint: bool,
}

/// Work-tree changes mapped onto the graph and the checkpoint
/// (docs/freshness.md#watcher-inputs).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WatcherFreshness {
    /// Watcher status.
    pub status: WatcherStatus,
    /// git or the manifest.
    pub source: Option<ChangeSource>,
    /// The directory the paths are relative to.
    pub watched_root: Option<String>,
    /// When the changes were observed.
    pub observed_at_unix_seconds: Option<i64>,
    /// The commit compared against by default.
    pub base_commit: Option<String>,
    /// The revision `--since` named.
    pub since_revision: Option<u64>,
    /// How many paths changed.
    pub changed_path_count: usize,
    /// Paths changed since the base, plus cited paths changed since their record's anchor.
    pub changed_paths: Vec<String>,
    /// Each changed path with the records it hits.
    pub changes: Vec<PathChange>,
    /// Graph nodes citing a changed file (architecture then dataflow, graph order).
    pub graph_node_ids: Vec<String>,
    /// Those on the active frontier (frontier order).
    pub active_frontier_node_ids: Vec<String>,
    /// Checkpoint-cited paths that changed since the checkpoint was written.
    pub checkpoint_changed_paths: Vec<String>,
    /// What it means.
    pub note: String,
}

/// Whether a record's cited code is still what was checked (docs/freshness.md#certificates).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum CertificateStatus {
    /// Every text its references cite is the text last checked: it need not be read again.
    Unchanged,
    /// Some cited text changed since it was checked, or is gone: read it again, then
    /// `epiphany recheck` (or rewrite the record).
    ChangedSinceChecked,
    /// Nothing can tell: references written before fingerprints where git cannot say what
    /// changed, whose file cannot be read, or citing a symbol in a file whose parse ran out of
    /// the command's time.
    NotCheckable,
}

/// What was checked of one graph node or the investigation checkpoint, and whether it still
/// holds: its certificate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Certificate {
    /// The record.
    pub owner: RefOwner,
    /// Whether its cited code is unchanged since it was checked.
    pub status: CertificateStatus,
    /// The commit checked out when the record was last written or re-checked.
    pub checked_at: Option<String>,
    /// The revision of that write.
    pub checked_revision: Option<u64>,
    /// Its references whose cited text changed since it was checked, as spelled on the
    /// command line.
    pub changed_refs: Vec<String>,
}

impl WatcherFreshness {
    /// Whether any mapped record cites a file that changed after it was written.
    pub fn cited_files_changed(&self) -> bool {
        !self.graph_node_ids.is_empty() || !self.checkpoint_changed_paths.is_empty()
    }
}

/// Why a freshness check fails.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum StaleReason {
    /// A graph node or the checkpoint cites a file that changed after it was written.
    CitedFilesChanged,
    /// A code reference of the graphs or the checkpoint no longer holds: its file is gone or
    /// renamed, its symbol gone or moved, its lines past the end.
    ReferencesBroken,
    /// The graph itself records dirt, open questions or gaps, or a non-fresh label.
    GraphStale,
    /// The retrieval index is behind the work tree.
    IndexStale,
    /// Branches merged by git wrote a field or record differently.
    Conflicts,
    /// The graphs or the checkpoint cite code, but git has no commit to compare them with
    /// (written before the first commit, or a shallow clone cut off before they entered).
    HistoryUnknown,
    /// A code reference of the graphs or the checkpoint cites a symbol in a file whose parse
    /// ran out of the command's time: it was not judged, so the state is not called fresh.
    ReferencesUnjudged,
}

/// The freshness report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Freshness {
    /// Whether a state exists.
    pub state_status: StateStatus,
    /// Its revision.
    pub state_revision: Option<u64>,
    /// No reason to be stale.
    pub fresh: bool,
    /// Why not.
    pub stale_reasons: Vec<StaleReason>,
    /// The retrieval index.
    pub retrieval: RetrievalFreshness,
    /// The graph.
    pub graph: GraphFreshness,
    /// The work tree's changes against the mapped records.
    pub watcher: WatcherFreshness,
    /// Fields and records that concurrent writes from merged branches set differently.
    pub conflicts: Vec<String>,
    /// Every code reference re-checked against the work tree.
    pub references: ReferenceFreshness,
    /// The certificate of every graph node and the investigation checkpoint that cite code, in
    /// state order.
    pub certificates: Vec<Certificate>,
}

impl StaleReason {
    /// How a person reads it.
    pub fn describe(self) -> &'static str {
        match self {
            StaleReason::CitedFilesChanged => "cited code changed since checked",
            StaleReason::ReferencesBroken => "code references broken",
            StaleReason::GraphStale => "graph stale",
            StaleReason::IndexStale => "index stale",
            StaleReason::Conflicts => "conflicts between merged branches",
            StaleReason::HistoryUnknown => "what changed since the map was written is unknown",
            StaleReason::ReferencesUnjudged => "code references not judged in time",
        }
    }
}

/// What every view says about staleness: one reading of [`Freshness`], so `scene`, `prompt`,
/// `reorient`, `freshness` and the session-start hook cannot disagree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Staleness {
    /// No reason to be stale.
    pub fresh: bool,
    /// Why not.
    pub stale_reasons: Vec<StaleReason>,
    /// Files that changed after the graph nodes citing them were written.
    pub node_changed_paths: Vec<String>,
    /// Those graph nodes.
    pub stale_node_ids: Vec<String>,
    /// Files that changed after the investigation checkpoint citing them was written.
    pub checkpoint_changed_paths: Vec<String>,
    /// Code references of the graphs and the checkpoint that no longer hold, as
    /// `path (finding)`.
    pub broken_refs: Vec<String>,
    /// Code references of current observations that no longer hold, as `id: path (finding)`:
    /// never stale on their own (observations are kept as written), but marked wherever they
    /// are shown; `epiphany recheck --observation ID` supersedes one with an observation citing
    /// where the code is now. (Evidence records are what was seen then, and are not marked.)
    pub outdated_record_refs: Vec<String>,
    /// The certificate of every graph node and the investigation checkpoint that cite code, in
    /// state order.
    pub certificates: Vec<Certificate>,
    /// The whole verdict in a sentence.
    pub note: String,
}

impl Staleness {
    /// The certificate of the record `owner` names, when it cites code.
    pub fn certificate(&self, owner: &RefOwner) -> Option<&Certificate> {
        self.certificates.iter().find(|c| c.owner == *owner)
    }
}

/// What a `pre-push` check makes of a freshness reading (docs/freshness.md#before-a-push).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PushVerdict {
    /// Nothing in the map is stale: the push goes ahead.
    Pass,
    /// The map is stale: the verdict in a sentence.
    Stale(String),
    /// Nothing is stale that git can see, but git cannot say what changed since the map was
    /// written (a shallow clone), or a reference was not judged in time: why.
    Unknown(String),
}

impl Freshness {
    /// The verdict of `freshness --check` without the retrieval index, which never blocks a
    /// push: it is rebuilt in the background after every commit and the map cites none of it.
    pub fn push_verdict(&self) -> PushVerdict {
        let mut map = self.clone();
        map.stale_reasons
            .retain(|reason| *reason != StaleReason::IndexStale);
        map.fresh = map.stale_reasons.is_empty();
        let unknown = |reason: &StaleReason| {
            matches!(
                reason,
                StaleReason::HistoryUnknown | StaleReason::ReferencesUnjudged
            )
        };
        match map.stale_reasons.as_slice() {
            [] => PushVerdict::Pass,
            reasons if reasons.iter().all(unknown) => PushVerdict::Unknown(map.staleness().note),
            _ => PushVerdict::Stale(map.staleness().note),
        }
    }

    /// The staleness every view shows.
    pub fn staleness(&self) -> Staleness {
        let node_changed_paths: Vec<String> = self
            .watcher
            .changes
            .iter()
            .filter(|c| !c.graph_node_ids.is_empty())
            .map(|c| c.path.clone())
            .collect();
        let mut changed_cited_paths = node_changed_paths.clone();
        uniq_append(
            &mut changed_cited_paths,
            self.watcher.checkpoint_changed_paths.iter().cloned(),
        );
        let mut broken_refs = Vec::new();
        let mut outdated_record_refs = Vec::new();
        for finding in &self.references.findings {
            let line = match &finding.renamed_to {
                Some(to) => format!("{} (renamed to {to})", finding.code_ref.path),
                None => format!("{} ({})", finding.code_ref.path, finding.kind.as_str()),
            };
            match &finding.owner {
                _ if finding.blocking => uniq_append(&mut broken_refs, [line]),
                _ if finding.kind == RefFindingKind::Planned => {}
                RefOwner::Observation { id } => {
                    uniq_append(&mut outdated_record_refs, [format!("{id}: {line}")]);
                }
                _ => {}
            }
        }
        let note = if self.stale_reasons.is_empty() {
            "fresh: the work tree matches the map".to_owned()
        } else {
            let mut parts = Vec::new();
            for reason in &self.stale_reasons {
                parts.push(match reason {
                    StaleReason::CitedFilesChanged => format!(
                        "cited code changed since it was checked: {}",
                        changed_cited_paths.join(", ")
                    ),
                    StaleReason::ReferencesBroken => {
                        format!("code references broken: {}", broken_refs.join(", "))
                    }
                    StaleReason::GraphStale => self.graph.note.clone(),
                    StaleReason::IndexStale => self.retrieval.note.clone(),
                    StaleReason::Conflicts => format!(
                        "conflicts between merged branches (settle them with `epiphany conflicts settle --all --take ours|theirs`): {}",
                        self.conflicts.join(", ")
                    ),
                    StaleReason::HistoryUnknown => format!(
                        "cannot tell what changed since the map was written: {}",
                        self.watcher.note
                    ),
                    StaleReason::ReferencesUnjudged => format!(
                        "code references not judged, parsing their files ran out of time: {}",
                        self.references.unjudged.join(", ")
                    ),
                });
            }
            format!("stale: {}", parts.join("; "))
        };
        Staleness {
            fresh: self.fresh,
            stale_reasons: self.stale_reasons.clone(),
            node_changed_paths,
            stale_node_ids: self.watcher.graph_node_ids.clone(),
            checkpoint_changed_paths: self.watcher.checkpoint_changed_paths.clone(),
            broken_refs,
            outdated_record_refs,
            certificates: self.certificates.clone(),
            note,
        }
    }
}

/// Assesses freshness. `retrieval` is the index summary computed now (the state keeps none).
/// `cited` is what the work tree holds at every cited path (`None`: the references are not
/// re-checked).
pub fn assess_freshness(
    state: Option<&State>,
    anchors: &BTreeMap<String, Anchor>,
    retrieval: Option<&RetrievalState>,
    watcher: &WatcherInput,
    cited: Option<&CitedFiles>,
) -> Freshness {
    let retrieval = retrieval_freshness(retrieval);
    let graph = graph_freshness(state);
    let no_renames = BTreeMap::new();
    let renames = match watcher {
        WatcherInput::Observed(changes) => &changes.renames,
        WatcherInput::Unavailable(_) | WatcherInput::Unknown(_) => &no_renames,
    };
    let history_unknown = watcher.history_unknown() && state.is_some_and(maps_unfingerprinted_code);
    let changes = match watcher {
        WatcherInput::Observed(changes) => Some(changes),
        WatcherInput::Unavailable(_) | WatcherInput::Unknown(_) => None,
    };
    let earlier = |anchor_key: &str, path: &str| changes?.cited_then_at(anchors, anchor_key, path);
    let references = recheck_references(state, cited, renames, &earlier);
    let (watcher, certificates) = watch(state, anchors, watcher, cited);
    let mut stale_reasons = Vec::new();
    if watcher.cited_files_changed() {
        stale_reasons.push(StaleReason::CitedFilesChanged);
    }
    if references.blocking_count > 0 {
        stale_reasons.push(StaleReason::ReferencesBroken);
    }
    if references.unjudged_blocking_count > 0 {
        stale_reasons.push(StaleReason::ReferencesUnjudged);
    }
    if graph.status == GraphFreshnessStatus::Stale {
        stale_reasons.push(StaleReason::GraphStale);
    }
    if retrieval.status == RetrievalFreshnessStatus::Stale {
        stale_reasons.push(StaleReason::IndexStale);
    }
    let conflicts: Vec<String> = state
        .map(|s| s.conflicts.iter().map(|c| c.key.clone()).collect())
        .unwrap_or_default();
    if !conflicts.is_empty() {
        stale_reasons.push(StaleReason::Conflicts);
    }
    if history_unknown {
        stale_reasons.push(StaleReason::HistoryUnknown);
    }
    Freshness {
        state_status: StateStatus::of(state),
        state_revision: state.map(|s| s.revision),
        fresh: stale_reasons.is_empty(),
        stale_reasons,
        retrieval,
        graph,
        watcher,
        conflicts,
        references,
        certificates,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::fixtures::checkpoint;
    use crate::policy::fixtures::node;
    use crate::state::model::ChurnState;
    use crate::state::model::Disposition;
    use crate::state::model::GraphFrontier;
    use crate::state::model::GraphKind;
    use crate::state::model::RetrievalStatus;
    use crate::state::snapshot::CHECKPOINT_ANCHOR;
    use crate::state::snapshot::node_anchor_key;

    fn state() -> State {
        let mut state = State {
            revision: 4,
            ..State::default()
        };
        state.graphs.architecture.nodes =
            vec![node("a", &["src/a.rs"]), node("b", &["./src/b.rs"])];
        state.graphs.dataflow.nodes = vec![node("flow", &["src/a.rs"])];
        state.graph_frontier = Some(GraphFrontier {
            active_node_ids: vec!["b".into(), "a".into()],
            ..GraphFrontier::default()
        });
        state.investigation_checkpoint =
            Some(checkpoint(Disposition::ResumeReady, &["/ws/src/b.rs"]));
        state
    }

    fn anchor(commit: &str) -> Anchor {
        Anchor {
            revision: 1,
            git_head: Some(commit.into()),
            at: None,
        }
    }

    fn changes(base: &[&str], since: &[(&str, &[&str])]) -> WatcherInput {
        let set = |paths: &[&str]| paths.iter().map(|p| (*p).to_owned()).collect();
        WatcherInput::Observed(WorkTreeChanges {
            source: ChangeSource::Git,
            watched_root: "/ws".into(),
            observed_at_unix_seconds: 7,
            base_commit: Some("c2".into()),
            since_revision: None,
            since_base: set(base),
            since_commit: since
                .iter()
                .map(|(commit, paths)| ((*commit).to_owned(), set(paths)))
                .collect(),
            renames: BTreeMap::new(),
            unknown_commits: Vec::new(),
            cited_then: BTreeMap::new(),
        })
    }

    #[test]
    fn each_record_is_compared_with_its_own_anchor() {
        let state = state();
        let anchors: BTreeMap<String, Anchor> = [
            (node_anchor_key(GraphKind::Architecture, "a"), anchor("c1")),
            (node_anchor_key(GraphKind::Architecture, "b"), anchor("c2")),
            (node_anchor_key(GraphKind::Dataflow, "flow"), anchor("c2")),
            (CHECKPOINT_ANCHOR.to_owned(), anchor("c1")),
        ]
        .into();
        // src/a.rs changed between c1 and c2 only: `a` (written at c1) is stale, `flow`
        // (written again at c2) is not.
        let input = changes(&["README.md"], &[("c1", &["src/a.rs", "README.md"])]);
        let freshness = assess_freshness(Some(&state), &anchors, None, &input, None);
        let watcher = &freshness.watcher;
        assert_eq!(watcher.status, WatcherStatus::Changed);
        assert_eq!(watcher.graph_node_ids, vec!["a"]);
        assert_eq!(watcher.active_frontier_node_ids, vec!["a"]);
        assert_eq!(watcher.changed_paths, vec!["README.md", "src/a.rs"]);
        assert!(watcher.checkpoint_changed_paths.is_empty());
        assert_eq!(watcher.changes[1].graph_node_ids, vec!["a"]);
        assert!(watcher.changes[0].graph_node_ids.is_empty());
        assert_eq!(
            freshness.stale_reasons,
            vec![StaleReason::CitedFilesChanged]
        );
        assert!(!freshness.fresh);
    }

    #[test]
    fn a_symbol_ref_is_stale_only_when_its_definition_changed() {
        let mut state = state();
        let mut by_symbol = node("s", &["src/s.rs"]);
        by_symbol.code_refs[0].symbol = Some("helper".into());
        state.graphs.architecture.nodes.push(by_symbol);
        let anchors: BTreeMap<String, Anchor> =
            [(node_anchor_key(GraphKind::Architecture, "s"), anchor("c1"))].into();
        let mut input = changes(&[], &[("c1", &["src/s.rs"])]);
        let WatcherInput::Observed(observed) = &input else {
            unreachable!()
        };
        let wanted = definitions_to_compare(&state, &anchors, observed);
        let symbols = BTreeSet::from(["helper".to_owned()]);
        assert_eq!(
            wanted,
            BTreeMap::from([(("c1".to_owned(), "src/s.rs".to_owned()), symbols.clone())])
        );
        let parsed = |text: &str| {
            let definition = crate::policy::code_map::Definition {
                name: "helper".into(),
                kind: "function".into(),
                line: 2,
                start_line: 2,
                end_line: 3,
                signature: "fn helper() {".into(),
            };
            crate::policy::code_ref::scan_text(text, &symbols).with_definitions(&[definition])
        };
        let then = parsed("// one\nfn helper() {\n}\n");
        let stale_with = |now: CitedFile, input: &WatcherInput| {
            let cited = CitedFiles {
                files: [("src/s.rs".to_owned(), now)].into(),
                ..CitedFiles::default()
            };
            assess_freshness(Some(&state), &anchors, None, input, Some(&cited))
                .watcher
                .graph_node_ids
        };
        // Without the file as it was, the file rule holds.
        assert_eq!(stale_with(then.clone(), &input), vec!["s"]);
        if let WatcherInput::Observed(observed) = &mut input {
            observed.cited_then = [(("c1".to_owned(), "src/s.rs".to_owned()), then)].into();
        }
        let elsewhere = parsed("// two\nfn helper() {\n}\n");
        assert!(stale_with(elsewhere, &input).is_empty());
        let inside = parsed("// one\nfn helper() { two(); \n}\n");
        assert_eq!(stale_with(inside, &input), vec!["s"]);
    }

    #[test]
    fn unanchored_records_use_the_base_and_root_prefixes_are_stripped() {
        let state = state();
        let input = changes(&["src/b.rs"], &[]);
        let freshness = assess_freshness(Some(&state), &BTreeMap::new(), None, &input, None);
        assert_eq!(freshness.watcher.graph_node_ids, vec!["b"]);
        assert_eq!(freshness.watcher.checkpoint_changed_paths, vec!["src/b.rs"]);
        assert!(freshness.watcher.changes[0].cited_by_checkpoint);
        assert!(freshness.watcher.note.contains("including 1 frontier"));
    }

    #[test]
    fn clean_and_unavailable_watchers() {
        let state = state();
        let clean = assess_freshness(
            Some(&state),
            &BTreeMap::new(),
            None,
            &changes(&[], &[]),
            None,
        );
        assert_eq!(clean.watcher.status, WatcherStatus::Clean);
        assert!(clean.fresh);
        let unavailable = assess_freshness(
            Some(&state),
            &BTreeMap::new(),
            None,
            &WatcherInput::Unavailable("not in git".into()),
            None,
        );
        assert_eq!(unavailable.watcher.status, WatcherStatus::Unavailable);
        assert_eq!(unavailable.watcher.note, "not in git");
        assert!(unavailable.fresh);
    }

    /// In git without a commit to compare with, a map that cites code is not called fresh;
    /// a state that cites no code has nothing the history could make stale.
    #[test]
    fn unknown_history_is_never_fresh_when_code_is_mapped() {
        let mapped = state();
        let mut shallow = changes(&[], &[]);
        if let WatcherInput::Observed(changes) = &mut shallow {
            changes.unknown_commits = vec!["c0".into()];
        }
        let no_commit = WatcherInput::Unknown("no commit".into());
        for input in [&shallow, &no_commit] {
            let unknown = assess_freshness(Some(&mapped), &BTreeMap::new(), None, input, None);
            assert!(!unknown.fresh, "{input:?}");
            assert_eq!(unknown.stale_reasons, vec![StaleReason::HistoryUnknown]);
            assert!(unknown.staleness().note.starts_with("stale: cannot tell"));
            let unmapped = State::default();
            let nothing = assess_freshness(Some(&unmapped), &BTreeMap::new(), None, input, None);
            assert!(nothing.fresh, "{input:?}");
        }
    }

    #[test]
    fn graph_staleness_rules() {
        assert_eq!(graph_freshness(None).status, GraphFreshnessStatus::Missing);
        let mut state = State::default();
        assert_eq!(
            graph_freshness(Some(&state)).status,
            GraphFreshnessStatus::Ready
        );
        state.churn = Some(ChurnState {
            understanding_status: "u".into(),
            diff_pressure: "low".into(),
            graph_freshness: Some("ok".into()),
            warning: None,
            unexplained_writes: None,
        });
        assert_eq!(
            graph_freshness(Some(&state)).status,
            GraphFreshnessStatus::Ready
        );
        if let Some(churn) = state.churn.as_mut() {
            churn.graph_freshness = Some("proposal-expanded".into());
        }
        assert_eq!(
            graph_freshness(Some(&state)).status,
            GraphFreshnessStatus::Stale
        );
        if let Some(churn) = state.churn.as_mut() {
            churn.graph_freshness = Some("OK".into());
        }
        assert_eq!(
            graph_freshness(Some(&state)).status,
            GraphFreshnessStatus::Stale,
            "labels are case-sensitive"
        );
        state.churn = None;
        state.graph_frontier = Some(GraphFrontier {
            open_gap_ids: vec!["gap".into()],
            ..GraphFrontier::default()
        });
        let graph = graph_freshness(Some(&state));
        assert_eq!(graph.status, GraphFreshnessStatus::Stale);
        assert_eq!(graph.open_gap_count, 1);
    }

    #[test]
    fn retrieval_status_mapping_and_index_staleness() {
        assert_eq!(
            retrieval_freshness(None).status,
            RetrievalFreshnessStatus::Missing
        );
        let summary = RetrievalState {
            workspace_root: "/ws".into(),
            index_revision: None,
            status: RetrievalStatus::Stale,
            semantic_available: true,
            index: IndexTally {
                last_indexed_at_unix_seconds: Some(5),
                indexed_file_count: Some(2),
                indexed_chunk_count: Some(3),
            },
            shards: vec![],
            dirty_paths: vec!["src/a.rs".into()],
        };
        let freshness = assess_freshness(
            None,
            &BTreeMap::new(),
            Some(&summary),
            &WatcherInput::Unavailable("no state".into()),
            None,
        );
        assert_eq!(freshness.retrieval.status, RetrievalFreshnessStatus::Stale);
        assert_eq!(freshness.stale_reasons, vec![StaleReason::IndexStale]);
        assert_eq!(freshness.state_status, StateStatus::Missing);
        assert_eq!(freshness.graph.status, GraphFreshnessStatus::Missing);
        // A stale index never holds up a push.
        assert_eq!(freshness.push_verdict(), PushVerdict::Pass);
    }

    #[test]
    fn a_push_is_refused_for_a_stale_map_and_unknown_history_is_not_a_verdict() {
        let mut freshness = assess_freshness(
            None,
            &BTreeMap::new(),
            None,
            &WatcherInput::Unavailable("no state".into()),
            None,
        );
        freshness.watcher.checkpoint_changed_paths = vec!["src/a.rs".into()];
        freshness.stale_reasons = vec![
            StaleReason::CitedFilesChanged,
            StaleReason::IndexStale,
            StaleReason::HistoryUnknown,
        ];
        let PushVerdict::Stale(note) = freshness.push_verdict() else {
            panic!("stale");
        };
        assert!(
            note.starts_with("stale: cited code changed since it was checked: src/a.rs"),
            "{note}"
        );
        assert!(!note.contains("index"), "{note}");
        freshness.stale_reasons = vec![StaleReason::IndexStale, StaleReason::HistoryUnknown];
        assert!(
            matches!(freshness.push_verdict(), PushVerdict::Unknown(note) if note.contains("cannot tell"))
        );
    }

    #[test]
    fn each_record_is_compared_with_its_own_commit_unless_since_names_one() {
        let anchor = |commit: Option<&str>| Anchor {
            revision: 1,
            git_head: commit.map(str::to_owned),
            at: None,
        };
        let anchors = BTreeMap::from([
            ("node:a".to_owned(), anchor(Some("c2"))),
            ("node:b".to_owned(), anchor(Some("c1"))),
            ("node:c".to_owned(), anchor(None)),
            ("node:d".to_owned(), anchor(Some("c2"))),
        ]);
        assert_eq!(commits_to_compare("c3", None, &anchors), ["c1", "c2", "c3"]);
        assert_eq!(commits_to_compare("c1", Some(4), &anchors), ["c1"]);
    }

    #[test]
    fn outside_git_only_a_real_manifest_tells_what_changed() {
        let indexed = RetrievalState {
            workspace_root: "/r".into(),
            index_revision: None,
            status: RetrievalStatus::Stale,
            semantic_available: true,
            index: IndexTally {
                last_indexed_at_unix_seconds: Some(10),
                indexed_file_count: Some(2),
                indexed_chunk_count: Some(2),
            },
            shards: vec![],
            dirty_paths: vec!["src/a.rs".to_owned()],
        };
        let WatcherInput::Observed(changes) = manifest_changes(Some(&indexed), "/r".into(), 20)
        else {
            panic!("a manifest with an indexing time is a record of changes");
        };
        assert_eq!(changes.source, ChangeSource::Manifest);
        assert_eq!(changes.since_base.len(), 1);
        let baseline = RetrievalState {
            status: RetrievalStatus::Ready,
            index: IndexTally::default(),
            ..indexed
        };
        assert!(matches!(
            manifest_changes(Some(&baseline), "/r".into(), 20),
            WatcherInput::Unavailable(_)
        ));
        assert!(matches!(
            manifest_changes(None, "/r".into(), 20),
            WatcherInput::Unavailable(_)
        ));
    }
}
