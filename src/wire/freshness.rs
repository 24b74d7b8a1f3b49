//! `freshness --json`: whether the work tree still matches the map
//! ([`crate::policy::freshness::assess_freshness`]), and the staleness summary and reference
//! findings the other reports embed.

use serde::Serialize;

use crate::policy::code_ref::RefFindingKind;
use crate::policy::code_ref::RefOwner;
use crate::policy::freshness;
use crate::policy::freshness::CertificateStatus;
use crate::policy::freshness::ChangeSource;
use crate::policy::freshness::GraphFreshnessStatus;
use crate::policy::freshness::RetrievalFreshnessStatus;
use crate::policy::freshness::StaleReason;
use crate::policy::freshness::WatcherStatus;
use crate::policy::projection::StateStatus;
use crate::policy::recheck;
use crate::state::model::CodeRef;
use crate::state::model::IndexTally;

/// The freshness report.
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct Freshness {
    /// Whether a state exists.
    pub state_status: StateStatus,
    /// Its revision.
    #[serde(default, skip_serializing_if = "Option::is_none")]
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
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conflicts: Vec<String>,
    /// Every code reference re-checked against the work tree.
    pub references: ReferenceFreshness,
    /// The certificate of every graph node and the investigation checkpoint that cite code, in
    /// state order (docs/freshness.md#certificates).
    pub certificates: Vec<Certificate>,
}

moved!(freshness::Freshness => Freshness {
    state_status, state_revision, fresh, stale_reasons, retrieval: into, graph: into,
    watcher: into, conflicts, references: into, certificates: each,
});

/// What was checked of one graph node or the investigation checkpoint, and whether it still
/// holds (docs/freshness.md#certificates).
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct Certificate {
    /// The record.
    pub owner: RefOwner,
    /// Whether its cited code is unchanged since it was checked.
    pub status: CertificateStatus,
    /// The commit checked out when the record was last written or re-checked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checked_at: Option<String>,
    /// The revision of that write.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checked_revision: Option<u64>,
    /// Its references whose cited text changed since it was checked, as spelled on the
    /// command line.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub changed_refs: Vec<String>,
}

moved!(freshness::Certificate => Certificate {
    owner, status, checked_at, checked_revision, changed_refs,
});

/// Freshness of the retrieval index (docs/freshness.md#retrieval-freshness).
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct RetrievalFreshness {
    /// Index status.
    pub status: RetrievalFreshnessStatus,
    /// Whether chunk search is available.
    pub semantic_available: bool,
    /// When the index was written and what it holds.
    #[serde(flatten)]
    pub index: IndexTally,
    /// Files changed since indexing.
    pub dirty_paths: Vec<String>,
    /// What it means.
    pub note: String,
}

moved!(freshness::RetrievalFreshness => RetrievalFreshness {
    status, semantic_available, index, dirty_paths, note,
});

/// Freshness of the graph as the state itself records it (docs/freshness.md#graph-freshness).
#[derive(Debug, Serialize, schemars::JsonSchema)]
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
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checkpoint_id: Option<String>,
    /// `churn.graph_freshness`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub graph_freshness: Option<String>,
    /// What it means.
    pub note: String,
}

moved!(freshness::GraphFreshness => GraphFreshness {
    status, dirty_paths, dirty_path_count, open_question_count, open_gap_count, checkpoint_id,
    graph_freshness, note,
});

/// Work-tree changes mapped onto the graph and the checkpoint
/// (docs/freshness.md#watcher-inputs).
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct WatcherFreshness {
    /// Watcher status.
    pub status: WatcherStatus,
    /// git or the manifest.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<ChangeSource>,
    /// The directory the paths are relative to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub watched_root: Option<String>,
    /// When the changes were observed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_at_unix_seconds: Option<i64>,
    /// The commit compared against by default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_commit: Option<String>,
    /// The revision `--since` named.
    #[serde(default, skip_serializing_if = "Option::is_none")]
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

moved!(freshness::WatcherFreshness => WatcherFreshness {
    status, source, watched_root, observed_at_unix_seconds, base_commit, since_revision,
    changed_path_count, changed_paths, changes: each, graph_node_ids, active_frontier_node_ids,
    checkpoint_changed_paths, note,
});

/// One changed path and the mapped records that cite it.
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct PathChange {
    /// The path, relative to the watched root.
    pub path: String,
    /// Where it went, when it was renamed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub renamed_to: Option<String>,
    /// Graph nodes citing it that were written before it changed.
    pub graph_node_ids: Vec<String>,
    /// Those of them on the active frontier.
    pub active_frontier_node_ids: Vec<String>,
    /// Whether the investigation checkpoint cites it and was written before it changed.
    pub cited_by_checkpoint: bool,
}

moved!(freshness::PathChange => PathChange {
    path, renamed_to, graph_node_ids, active_frontier_node_ids, cited_by_checkpoint,
});

/// What every view says about staleness: one reading of [`Freshness`], so `scene`, `prompt`,
/// `reorient`, `freshness` and the session-start hook cannot disagree.
#[derive(Debug, Serialize, schemars::JsonSchema)]
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
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub outdated_record_refs: Vec<String>,
    /// The certificate of every graph node and the investigation checkpoint that cite code, in
    /// state order (docs/freshness.md#certificates).
    pub certificates: Vec<Certificate>,
    /// The whole verdict in a sentence.
    pub note: String,
}

moved!(freshness::Staleness => Staleness {
    fresh, stale_reasons, node_changed_paths, stale_node_ids, checkpoint_changed_paths,
    broken_refs, outdated_record_refs, certificates: each, note,
});

/// The references' re-check in the freshness report.
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct ReferenceFreshness {
    /// Whether the work tree was read at all.
    pub checked: bool,
    /// References re-checked.
    pub checked_ref_count: usize,
    /// Files read: the cited paths, and the paths git renamed them to.
    pub cited_file_count: usize,
    /// Every reference that no longer holds, in state order (graphs, checkpoint,
    /// observations, evidence).
    pub findings: Vec<RefFinding>,
    /// Findings that fail the check.
    pub blocking_count: usize,
    /// Findings `freshness --fix` can repair.
    pub fixable_count: usize,
    /// References citing a symbol in a file whose parse ran out of the command's time, as
    /// `record: ref`: not judged, so neither found broken nor certified (docs/safety.md).
    pub unjudged: Vec<String>,
    /// How many of them are on the graphs or the checkpoint: the state is then not fresh
    /// (`references_unjudged`).
    pub unjudged_blocking_count: usize,
    /// References citing a symbol in a file too large to parse, as `record: ref`: judged by
    /// the lines the symbol occurs on.
    pub judged_by_lines: Vec<String>,
    /// What it means.
    pub note: String,
}

moved!(recheck::ReferenceFreshness => ReferenceFreshness {
    checked, checked_ref_count, cited_file_count, findings: each, blocking_count, fixable_count,
    unjudged, unjudged_blocking_count, judged_by_lines, note,
});

/// One stored reference that no longer says what is true.
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct RefFinding {
    /// What is wrong.
    pub kind: RefFindingKind,
    /// The record that carries the reference.
    pub owner: RefOwner,
    /// The reference as stored.
    pub code_ref: CodeRef,
    /// Where git followed the file, for `renamed`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub renamed_to: Option<String>,
    /// Where the symbol occurs now, for `moved_lines` (where its definitions start, where the
    /// language is parsed).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub symbol_lines: Vec<u32>,
    /// The reference re-anchored mechanically, when that is possible.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reanchored: Option<CodeRef>,
    /// Whether it fails `freshness --check`: the record can be rewritten (graphs, the
    /// checkpoint) and the reference is not a plan.
    pub blocking: bool,
}

moved!(recheck::RefFinding => RefFinding {
    kind, owner, code_ref, renamed_to, symbol_lines, reanchored, blocking,
});
