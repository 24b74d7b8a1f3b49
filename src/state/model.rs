//! The typed state: every record the store keeps, exactly as `behavior.md` §2 spells it.
//!
//! Owns the shape of the state and its serde rules (snake_case names, which fields are
//! required, which are omitted when empty). It holds no behaviour beyond emptiness tests the
//! omission rules need: validation and application live in `policy::update`, persistence in
//! `state::snapshot` and `state::rollout`.
//!
//! Decoding ignores unknown fields so that older binaries can read newer snapshots; patches
//! are decoded strictly elsewhere (`state::patch`).

use serde::Deserialize;
use serde::Serialize;

/// The root of the typed state of one repository.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct State {
    /// Bumped by exactly one on every successful write.
    pub revision: u64,
    /// What the work is for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub objective: Option<String>,
    /// The subgoal being worked on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub active_subgoal_id: Option<String>,
    /// The plan, as subgoals.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub subgoals: Vec<Subgoal>,
    /// Rules the work must keep.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub invariants: Vec<Invariant>,
    /// Architecture and dataflow graphs with their links.
    #[serde(default, skip_serializing_if = "Graphs::is_empty")]
    pub graphs: Graphs,
    /// What part of the graph is under active investigation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub graph_frontier: Option<GraphFrontier>,
    /// A named point in the graph work to return to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub graph_checkpoint: Option<GraphCheckpoint>,
    /// Retrieval summary; a view only, never written by updates.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retrieval: Option<RetrievalState>,
    /// Working notes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scratch: Option<ScratchPad>,
    /// Where an investigation stands, for resuming after a context loss.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub investigation_checkpoint: Option<InvestigationCheckpoint>,
    /// Jobs bound to this work (carried as data).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub job_bindings: Vec<JobBinding>,
    /// Acceptance receipts, newest first (carried as data).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub acceptance_receipts: Vec<AcceptanceReceipt>,
    /// Runtime links, newest first (carried as data).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub runtime_links: Vec<RuntimeLink>,
    /// Observations, newest first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub observations: Vec<Observation>,
    /// Evidence records, newest first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub recent_evidence: Vec<EvidenceRecord>,
    /// How well the change is understood relative to how much it churns.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub churn: Option<ChurnState>,
    /// The working mode.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<ModeState>,
    /// Planning records, kept apart from the active objective.
    #[serde(default, skip_serializing_if = "PlanningState::is_empty")]
    pub planning: PlanningState,
    /// The turn that made the last write, when the writer named one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_updated_turn_id: Option<String>,
    /// Concurrent writes (from branches merged by git) that changed the same field or record
    /// differently; the fold order chose a value, and a later write resolves each.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conflicts: Vec<Conflict>,
}

/// Answers whether the store holds an observation or evidence record with an id, without
/// needing the records themselves (a head read for a write decodes only their ids).
pub trait RecordIds {
    /// Whether an observation has this id.
    fn has_observation(&self, id: &str) -> bool;
    /// Whether an evidence record has this id.
    fn has_evidence(&self, id: &str) -> bool;
}

impl RecordIds for State {
    fn has_observation(&self, id: &str) -> bool {
        self.observations.iter().any(|o| o.id == id)
    }

    fn has_evidence(&self, id: &str) -> bool {
        self.recent_evidence.iter().any(|e| e.id == id)
    }
}

/// Concurrent records that wrote the same field or record with different values.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Conflict {
    /// The field (`objective`) or record (`architecture_nodes/lexer`) they wrote.
    pub key: String,
    /// The competing record ids, in fold order; the last one's value was kept.
    pub records: Vec<String>,
    /// The value kept (a note naming its size when it is large; `null` for a removal).
    pub chosen: serde_json::Value,
}

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

/// The two graphs and the links between them.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Graphs {
    /// Components and how they relate.
    #[serde(default, skip_serializing_if = "Graph::is_empty")]
    pub architecture: Graph,
    /// How data moves.
    #[serde(default, skip_serializing_if = "Graph::is_empty")]
    pub dataflow: Graph,
    /// Which dataflow node lives in which architecture node.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub links: Vec<GraphLink>,
}

impl Graphs {
    /// Both graphs empty and no links.
    pub fn is_empty(&self) -> bool {
        self.architecture.is_empty() && self.dataflow.is_empty() && self.links.is_empty()
    }

    /// The architecture graph then the dataflow graph, with their kinds.
    pub fn each(&self) -> [(GraphKind, &Graph); 2] {
        [
            (GraphKind::Architecture, &self.architecture),
            (GraphKind::Dataflow, &self.dataflow),
        ]
    }
}

/// Which of the two graphs a node or edge lives in.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Serialize,
    Deserialize,
    schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum GraphKind {
    /// The architecture graph.
    Architecture,
    /// The dataflow graph.
    Dataflow,
}

impl GraphKind {
    /// The snake_case name, as in JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            GraphKind::Architecture => "architecture",
            GraphKind::Dataflow => "dataflow",
        }
    }
}

/// Nodes and edges of one graph.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Graph {
    /// The nodes, in author order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub nodes: Vec<GraphNode>,
    /// The edges, in author order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub edges: Vec<GraphEdge>,
}

impl Graph {
    /// No nodes and no edges.
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty() && self.edges.is_empty()
    }
}

/// A component (architecture) or a stage (dataflow).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct GraphNode {
    /// Unique id within its graph.
    pub id: String,
    /// Short title.
    pub title: String,
    /// What it is for.
    pub purpose: String,
    /// How it works.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mechanism: Option<String>,
    /// An image that helps remember it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metaphor: Option<String>,
    /// Free-form status (`candidate`, `verified`, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    /// Where it lives in the code.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub code_refs: Vec<CodeRef>,
}

/// A relation between two nodes of the same graph.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct GraphEdge {
    /// Optional id (edges may be anonymous).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// Source node id.
    pub source_id: String,
    /// Target node id.
    pub target_id: String,
    /// Relation kind (`calls`, `feeds`, ...).
    pub kind: String,
    /// Short label.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    /// How the relation works.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mechanism: Option<String>,
    /// Where it lives in the code.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub code_refs: Vec<CodeRef>,
}

/// Ties a dataflow node to the architecture node that carries it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct GraphLink {
    /// The dataflow node.
    pub dataflow_node_id: String,
    /// The architecture node.
    pub architecture_node_id: String,
    /// How they relate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub relationship: Option<String>,
    /// Where it lives in the code.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub code_refs: Vec<CodeRef>,
}

/// A pointer into the code: a path, optionally a line range and a symbol.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
pub struct CodeRef {
    /// Path relative to the repository root.
    pub path: String,
    /// First line, 1-based.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_line: Option<u32>,
    /// Last line, inclusive.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub end_line: Option<u32>,
    /// Symbol at that place.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub symbol: Option<String>,
    /// Free note.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// The file did not exist when the reference was written (`--allow-missing-paths`, for
    /// plans about files still to be written). Set by the write path, not by hand.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub planned: bool,
}

impl CodeRef {
    /// A reference to a whole file.
    pub fn to_path(path: impl Into<String>) -> CodeRef {
        CodeRef {
            path: path.into(),
            start_line: None,
            end_line: None,
            symbol: None,
            note: None,
            planned: false,
        }
    }
}

/// The part of the graph under active investigation.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct GraphFrontier {
    /// Nodes in focus.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub active_node_ids: Vec<String>,
    /// Edges in focus.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub active_edge_ids: Vec<String>,
    /// Open questions.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub open_question_ids: Vec<String>,
    /// Known gaps in the map.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub open_gap_ids: Vec<String>,
    /// Paths whose changes the map has not absorbed yet.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub dirty_paths: Vec<String>,
}

/// A named point in the graph work.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct GraphCheckpoint {
    /// Unique id.
    pub checkpoint_id: String,
    /// The graph revision it was taken at.
    pub graph_revision: u64,
    /// What it records.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<String>,
    /// Frontier nodes at the checkpoint.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub frontier_node_ids: Vec<String>,
    /// Open questions at the checkpoint.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub open_question_ids: Vec<String>,
    /// Open gaps at the checkpoint.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub open_gap_ids: Vec<String>,
}

/// The retrieval index summary (§14.9); filled only in views.
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
    /// When the index was last written.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_indexed_at_unix_seconds: Option<i64>,
    /// Files in the index.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub indexed_file_count: Option<u32>,
    /// Chunks in the index.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub indexed_chunk_count: Option<u32>,
    /// Index shards (one, `workspace`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub shards: Vec<ShardSummary>,
    /// Files changed since indexing.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub dirty_paths: Vec<String>,
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

/// A job bound to this work (carried as data).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct JobBinding {
    /// Unique id.
    pub id: String,
    /// Job kind.
    pub kind: JobKind,
    /// What it covers.
    pub scope: String,
    /// Who owns it.
    pub owner_role: String,
    /// What it may touch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub authority_scope: Option<String>,
    /// Subgoals it serves.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub linked_subgoal_ids: Vec<String>,
    /// Graph nodes it serves.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub linked_graph_node_ids: Vec<String>,
    /// Why it is blocked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blocking_reason: Option<String>,
}

/// Kind of job.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum JobKind {
    /// Building the retrieval index.
    Indexing,
    /// Re-mapping the graphs.
    Remap,
    /// Verifying invariants.
    Verification,
    /// Specialist work.
    Specialist,
}

/// A receipt for an accepted job result (carried as data).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[allow(missing_docs)]
pub struct AcceptanceReceipt {
    pub id: String,
    pub result_id: String,
    pub job_id: String,
    pub binding_id: String,
    pub surface: String,
    pub role_id: String,
    pub status: String,
    pub accepted_at: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub accepted_observation_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub accepted_evidence_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<String>,
}

/// A link from a job binding to a runtime job (carried as data).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[allow(missing_docs)]
pub struct RuntimeLink {
    pub id: String,
    pub binding_id: String,
    pub surface: String,
    pub role_id: String,
    pub authority_scope: String,
    pub runtime_job_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runtime_result_id: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub linked_subgoal_ids: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub linked_graph_node_ids: Vec<String>,
}

/// Planning records, kept apart from the active objective.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct PlanningState {
    /// The planned workspace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workspace_root: Option<String>,
    /// Raw captured ideas and requests.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub captures: Vec<PlanningCapture>,
    /// Shaped backlog items.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub backlog_items: Vec<BacklogItem>,
    /// Roadmap streams over backlog items.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub roadmap_streams: Vec<RoadmapStream>,
    /// Objectives drafted but not adopted.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub objective_drafts: Vec<ObjectiveDraft>,
}

impl PlanningState {
    /// No workspace root and all four lists empty.
    pub fn is_empty(&self) -> bool {
        self.workspace_root.is_none()
            && self.captures.is_empty()
            && self.backlog_items.is_empty()
            && self.roadmap_streams.is_empty()
            && self.objective_drafts.is_empty()
    }
}

/// A raw captured idea or request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[allow(missing_docs)]
pub struct PlanningCapture {
    pub id: String,
    pub title: String,
    pub confidence: String,
    pub status: String,
    pub source: PlanningSourceRef,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub speaker: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_at: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub updated_at: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
}

/// Where a planning record came from.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[allow(missing_docs)]
pub struct PlanningSourceRef {
    pub kind: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uri: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub external_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repo: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub issue_number: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub database_id: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub is_pull_request: Option<bool>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub labels: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub assignees: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub milestone: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub author: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_at: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub updated_at: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub closed_at: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub imported_at: Option<String>,
}

/// A shaped backlog item.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[allow(missing_docs)]
pub struct BacklogItem {
    pub id: String,
    pub title: String,
    pub kind: String,
    pub summary: String,
    pub status: String,
    pub horizon: String,
    pub priority: PlanningPriority,
    pub confidence: String,
    pub product_area: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub lane_hints: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub dependencies: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub blockers: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub acceptance_sketch: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub evidence_refs: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub source_refs: Vec<PlanningSourceRef>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duplicate_of: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub updated_at: Option<String>,
}

/// Why a backlog item matters now.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[allow(missing_docs)]
pub struct PlanningPriority {
    pub value: String,
    pub rationale: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub impact: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub urgency: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confidence: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub effort: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unblocks: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub blocks: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// A roadmap stream over backlog items.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[allow(missing_docs)]
pub struct RoadmapStream {
    pub id: String,
    pub title: String,
    pub purpose: String,
    pub status: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub item_ids: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub near_term_focus: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub review_cadence: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub blocked_by: Vec<String>,
}

/// An objective drafted but not adopted.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[allow(missing_docs)]
pub struct ObjectiveDraft {
    pub id: String,
    pub title: String,
    pub summary: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub source_item_ids: Vec<String>,
    pub scope: ObjectiveDraftScope,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub acceptance_criteria: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub evidence_required: Vec<String>,
    pub lane_plan: ObjectiveDraftLanePlan,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub dependencies: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub risks: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub review_gates: Vec<String>,
    pub status: String,
}

/// What a drafted objective includes and excludes.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[allow(missing_docs)]
pub struct ObjectiveDraftScope {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub includes: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub excludes: Vec<String>,
}

/// Which lane does what for a drafted objective.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[allow(missing_docs)]
pub struct ObjectiveDraftLanePlan {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub imagination: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub eyes: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hands: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub soul: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub life: Option<String>,
}

fn is_false(value: &bool) -> bool {
    !*value
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_state_serializes_to_revision_only() {
        let json = serde_json::to_string(&State::default()).expect("serialize");
        assert_eq!(json, r#"{"revision":0}"#);
    }

    #[test]
    fn mode_kind_accepts_legacy_aliases() {
        for alias in ["code", "pair_programming", "execute", "custom", "default"] {
            let mode: ModeState =
                serde_json::from_str(&format!(r#"{{"name":"m","kind":"{alias}"}}"#))
                    .expect("decode");
            assert_eq!(mode.kind, Some(ModeKind::Default));
        }
    }

    #[test]
    fn messagepack_round_trip_keeps_every_field() {
        let state = State {
            revision: 3,
            objective: Some("ship".into()),
            graphs: Graphs {
                architecture: Graph {
                    nodes: vec![GraphNode {
                        id: "n".into(),
                        title: "t".into(),
                        purpose: "p".into(),
                        mechanism: None,
                        metaphor: Some("m".into()),
                        status: None,
                        code_refs: vec![CodeRef::to_path("src/lib.rs")],
                    }],
                    edges: vec![],
                },
                ..Graphs::default()
            },
            mode: Some(ModeState {
                name: "plan".into(),
                kind: Some(ModeKind::Plan),
            }),
            ..State::default()
        };
        let bytes = rmp_serde::to_vec_named(&state).expect("encode");
        let back: State = rmp_serde::from_slice(&bytes).expect("decode");
        assert_eq!(back, state);
    }
}
