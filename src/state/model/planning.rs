//! Planning records: captures, backlog items with their priorities, roadmap streams and
//! objective drafts, and where each came from.

use serde::Deserialize;
use serde::Serialize;

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
