//! Who works on what: job bindings, the acceptance receipts that close them, and runtime
//! links to the processes doing the work.

use serde::Deserialize;
use serde::Serialize;

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
