//! The working records beside the map: subgoals and invariants, the investigation
//! checkpoint, the scratch pad, observations and evidence, the churn and mode judgments, and
//! the retrieval summary.

use serde::Deserialize;
use serde::Serialize;

use super::graph::CodeRef;
use super::is_false;

/// A step of the plan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Subgoal {
    /// Unique id.
    pub id: String,
    /// Short title.
    pub title: String,
    /// Free-form status.
    pub status: String,
    /// Optional detail.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<String>,
}

/// A rule the work must keep.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Invariant {
    /// Unique id.
    pub id: String,
    /// What must hold.
    pub description: String,
    /// Free-form status (`ok`, `verified`, `at-risk`, ...).
    pub status: String,
    /// Why it matters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rationale: Option<String>,
}

/// The retrieval index summary (docs/retrieval.md#retrieval-summary); filled only in views.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct RetrievalState {
    /// The indexed root.
    pub workspace_root: String,
    /// Which index produced it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub index_revision: Option<String>,
    /// Index status.
    #[serde(default)]
    pub status: RetrievalStatus,
    /// Whether chunk search is available.
    #[serde(default, skip_serializing_if = "is_false")]
    pub semantic_available: bool,
    /// When it was written and what it holds.
    #[serde(flatten)]
    pub index: IndexTally,
    /// Index shards (one, `workspace`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub shards: Vec<ShardSummary>,
    /// Files changed since indexing.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub dirty_paths: Vec<String>,
}

/// When an index was last written and what it holds: the figures every summary of an index
/// repeats (the stored summary, `freshness`), flattened into them.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
pub struct IndexTally {
    /// When the index was last written.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_indexed_at_unix_seconds: Option<i64>,
    /// Files in the index.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub indexed_file_count: Option<u32>,
    /// Chunks in the index.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub indexed_chunk_count: Option<u32>,
}

/// Status of the retrieval index.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum RetrievalStatus {
    /// No index can be used.
    #[default]
    Unavailable,
    /// The index matches the work tree.
    Ready,
    /// Files changed since indexing.
    Stale,
    /// An index run is under way.
    Indexing,
}

/// One shard of the retrieval index.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ShardSummary {
    /// Shard id.
    pub shard_id: String,
    /// Path prefix the shard covers.
    pub path_prefix: String,
    /// Files in the shard.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub indexed_file_count: Option<u32>,
    /// Chunks in the shard.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub indexed_chunk_count: Option<u32>,
    /// Shard status.
    #[serde(default)]
    pub status: RetrievalStatus,
    /// Exact/path search works on it.
    #[serde(default, skip_serializing_if = "is_false")]
    pub exact_available: bool,
    /// Chunk search works on it.
    #[serde(default, skip_serializing_if = "is_false")]
    pub semantic_available: bool,
}

/// Working notes.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ScratchPad {
    /// Where things stand.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<String>,
    /// The current hypothesis.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hypothesis: Option<String>,
    /// The next probe to run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_probe: Option<String>,
    /// Loose notes.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

/// Where an investigation stands, so it can resume after the context is lost.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct InvestigationCheckpoint {
    /// What it is and where it stands.
    #[serde(flatten)]
    pub brief: CheckpointBrief,
    /// Questions still open.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub open_questions: Vec<String>,
    /// The code it concerns.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub code_refs: Vec<CodeRef>,
    /// Evidence it rests on.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub evidence_ids: Vec<String>,
}

/// An investigation checkpoint without its lists: what `scene` shows of it (with the lists
/// counted), flattened into the checkpoint.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct CheckpointBrief {
    /// Unique id.
    pub checkpoint_id: String,
    /// What kind of investigation.
    pub kind: String,
    /// Whether to resume or re-gather.
    pub disposition: Disposition,
    /// What is being looked at.
    pub focus: String,
    /// What was found.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<String>,
    /// The next safe step.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_action: Option<String>,
    /// The turn that captured it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub captured_at_turn_id: Option<String>,
}

/// Whether a checkpoint can be resumed as is.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Disposition {
    /// Resume from it.
    #[default]
    ResumeReady,
    /// Re-gather source context first.
    RegatherRequired,
}

impl Disposition {
    /// The snake_case name, as in JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            Disposition::ResumeReady => "resume_ready",
            Disposition::RegatherRequired => "regather_required",
        }
    }
}

/// Something seen, with the evidence behind it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Observation {
    /// Unique id.
    pub id: String,
    /// What was seen.
    pub summary: String,
    /// Where it came from (`shell-tool`, `test`, ...).
    pub source_kind: String,
    /// Its status (`ok`, `verified`, `candidate`, ...).
    pub status: String,
    /// The code it concerns.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub code_refs: Vec<CodeRef>,
    /// Evidence records it cites.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub evidence_ids: Vec<String>,
    /// The older observation this one replaces (re-checked with its references where the code
    /// is now); views show the newer one only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub supersedes: Option<String>,
}

/// A condensed, lasting finding.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct EvidenceRecord {
    /// Unique id.
    pub id: String,
    /// Kind (`verification`, `tool-output`, ...).
    pub kind: String,
    /// Status (`ok`, `pass`, `candidate`, ...).
    pub status: String,
    /// The finding.
    pub summary: String,
    /// The code it concerns.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub code_refs: Vec<CodeRef>,
}

/// Understanding versus churn.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ChurnState {
    /// How well the change is understood.
    pub understanding_status: String,
    /// How much the diff presses (`low` < `medium` < `high` < `critical`).
    pub diff_pressure: String,
    /// Whether the graph is fresh.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub graph_freshness: Option<String>,
    /// What to watch out for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warning: Option<String>,
    /// Writes nobody explained.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unexplained_writes: Option<u32>,
}

/// The working mode.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ModeState {
    /// Mode name.
    pub name: String,
    /// Mode kind.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<ModeKind>,
}

/// Planning or doing.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum ModeKind {
    /// Planning.
    Plan,
    /// Doing.
    #[default]
    #[serde(
        alias = "code",
        alias = "pair_programming",
        alias = "execute",
        alias = "custom"
    )]
    Default,
}
