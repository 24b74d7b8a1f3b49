//! Patches: the only way the state changes, and the envelope that carries them.
//!
//! Owns the patch shape (`behavior.md` §9.1, snake_case), the `changed_fields` enum (§9.5), and
//! strict decoding from JSON: unknown fields and wrong types are reported all at once, each with
//! its path, instead of the first one only. It does not validate meaning (ids, references):
//! that is `policy::update`.

use serde::Deserialize;
use serde::Serialize;
use serde_json::Value;

use crate::state::model::AcceptanceReceipt;
use crate::state::model::BacklogItem;
use crate::state::model::ChurnState;
use crate::state::model::EvidenceRecord;
use crate::state::model::GraphCheckpoint;
use crate::state::model::GraphEdge;
use crate::state::model::GraphFrontier;
use crate::state::model::GraphLink;
use crate::state::model::GraphNode;
use crate::state::model::Graphs;
use crate::state::model::Invariant;
use crate::state::model::InvestigationCheckpoint;
use crate::state::model::JobBinding;
use crate::state::model::ModeState;
use crate::state::model::ObjectiveDraft;
use crate::state::model::Observation;
use crate::state::model::PlanningCapture;
use crate::state::model::PlanningState;
use crate::state::model::RoadmapStream;
use crate::state::model::RuntimeLink;
use crate::state::model::ScratchPad;
use crate::state::model::Subgoal;

/// One typed change to the state. Replacement fields replace wholesale when present; the
/// append lists are placed before the existing records (newest first).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Patch {
    /// Replace the objective.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub objective: Option<String>,
    /// Replace the active subgoal id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub active_subgoal_id: Option<String>,
    /// Replace the subgoal list.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subgoals: Option<Vec<Subgoal>>,
    /// Replace the invariant list.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub invariants: Option<Vec<Invariant>>,
    /// Replace the graphs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub graphs: Option<Graphs>,
    /// Replace the graph frontier.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub graph_frontier: Option<GraphFrontier>,
    /// Replace the graph checkpoint.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub graph_checkpoint: Option<GraphCheckpoint>,
    /// Replace the scratch pad.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scratch: Option<ScratchPad>,
    /// Replace the investigation checkpoint.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub investigation_checkpoint: Option<InvestigationCheckpoint>,
    /// Replace the job bindings.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub job_bindings: Option<Vec<JobBinding>>,
    /// Prepend acceptance receipts.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub acceptance_receipts: Vec<AcceptanceReceipt>,
    /// Prepend runtime links.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub runtime_links: Vec<RuntimeLink>,
    /// Prepend observations.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub observations: Vec<Observation>,
    /// Prepend evidence records.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub evidence: Vec<EvidenceRecord>,
    /// Replace the churn judgment.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub churn: Option<ChurnState>,
    /// Replace the mode.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<ModeState>,
    /// Replace the planning records.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub planning: Option<PlanningState>,
    /// Insert or replace single records of keyed collections, by id.
    #[serde(default, skip_serializing_if = "Upsert::is_empty")]
    pub upsert: Upsert,
    /// Remove single records of keyed collections, by id.
    #[serde(default, skip_serializing_if = "Remove::is_empty")]
    pub remove: Remove,
}

/// A keyed collection that record-level writes (`upsert`, `remove`) address.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Collection {
    /// `graphs.architecture.nodes`, keyed by id.
    ArchitectureNodes,
    /// `graphs.architecture.edges`, keyed by id (or source, target and kind).
    ArchitectureEdges,
    /// `graphs.dataflow.nodes`, keyed by id.
    DataflowNodes,
    /// `graphs.dataflow.edges`, keyed by id (or source, target and kind).
    DataflowEdges,
    /// `graphs.links`, keyed by the node pair.
    Links,
    /// `subgoals`, keyed by id.
    Subgoals,
    /// `invariants`, keyed by id.
    Invariants,
    /// `planning.captures`, keyed by id.
    PlanningCaptures,
    /// `planning.backlog_items`, keyed by id.
    Backlog,
    /// `planning.roadmap_streams`, keyed by id.
    RoadmapStreams,
    /// `planning.objective_drafts`, keyed by id.
    ObjectiveDrafts,
}

impl Collection {
    /// Every collection, in patch order.
    pub const ALL: [Collection; 11] = [
        Collection::ArchitectureNodes,
        Collection::ArchitectureEdges,
        Collection::DataflowNodes,
        Collection::DataflowEdges,
        Collection::Links,
        Collection::Subgoals,
        Collection::Invariants,
        Collection::PlanningCaptures,
        Collection::Backlog,
        Collection::RoadmapStreams,
        Collection::ObjectiveDrafts,
    ];

    /// The key under `upsert` and `remove`.
    pub fn as_str(self) -> &'static str {
        match self {
            Collection::ArchitectureNodes => "architecture_nodes",
            Collection::ArchitectureEdges => "architecture_edges",
            Collection::DataflowNodes => "dataflow_nodes",
            Collection::DataflowEdges => "dataflow_edges",
            Collection::Links => "links",
            Collection::Subgoals => "subgoals",
            Collection::Invariants => "invariants",
            Collection::PlanningCaptures => "planning_captures",
            Collection::Backlog => "backlog",
            Collection::RoadmapStreams => "roadmap_streams",
            Collection::ObjectiveDrafts => "objective_drafts",
        }
    }

    /// The state field the collection lives in.
    pub fn field(self) -> ChangedField {
        match self {
            Collection::ArchitectureNodes
            | Collection::ArchitectureEdges
            | Collection::DataflowNodes
            | Collection::DataflowEdges
            | Collection::Links => ChangedField::Graphs,
            Collection::Subgoals => ChangedField::Subgoals,
            Collection::Invariants => ChangedField::Invariants,
            Collection::PlanningCaptures
            | Collection::Backlog
            | Collection::RoadmapStreams
            | Collection::ObjectiveDrafts => ChangedField::Planning,
        }
    }
}

/// The key of an edge: its id, or `source->target:kind` for an edge without one.
pub fn edge_key(id: Option<&str>, source_id: &str, target_id: &str, kind: &str) -> String {
    match id.filter(|id| !id.trim().is_empty()) {
        Some(id) => id.to_owned(),
        None => format!("{source_id}->{target_id}:{kind}"),
    }
}

/// The key of a link: `dataflow_node_id->architecture_node_id`.
pub fn link_key(dataflow_node_id: &str, architecture_node_id: &str) -> String {
    format!("{dataflow_node_id}->{architecture_node_id}")
}

/// Full records to insert, or to put in place of the record with the same key.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Upsert {
    /// Architecture nodes.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub architecture_nodes: Vec<GraphNode>,
    /// Architecture edges.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub architecture_edges: Vec<GraphEdge>,
    /// Dataflow nodes.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub dataflow_nodes: Vec<GraphNode>,
    /// Dataflow edges.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub dataflow_edges: Vec<GraphEdge>,
    /// Links between dataflow and architecture nodes.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub links: Vec<GraphLink>,
    /// Subgoals.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub subgoals: Vec<Subgoal>,
    /// Invariants.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub invariants: Vec<Invariant>,
    /// Planning captures.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub planning_captures: Vec<PlanningCapture>,
    /// Backlog items.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub backlog: Vec<BacklogItem>,
    /// Roadmap streams.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub roadmap_streams: Vec<RoadmapStream>,
    /// Objective drafts.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub objective_drafts: Vec<ObjectiveDraft>,
}

impl Upsert {
    /// Whether it upserts nothing.
    pub fn is_empty(&self) -> bool {
        self.keys().is_empty()
    }

    /// The key of every record it upserts, with its collection, in patch order.
    pub fn keys(&self) -> Vec<(Collection, String)> {
        let edges = |collection, edges: &[GraphEdge]| {
            edges
                .iter()
                .map(move |e| {
                    let key = edge_key(e.id.as_deref(), &e.source_id, &e.target_id, &e.kind);
                    (collection, key)
                })
                .collect::<Vec<_>>()
        };
        let ids = |collection, ids: Vec<&str>| {
            ids.into_iter()
                .map(move |id| (collection, id.to_owned()))
                .collect::<Vec<_>>()
        };
        let mut keys = Vec::new();
        keys.extend(ids(
            Collection::ArchitectureNodes,
            self.architecture_nodes
                .iter()
                .map(|n| n.id.as_str())
                .collect(),
        ));
        keys.extend(edges(
            Collection::ArchitectureEdges,
            &self.architecture_edges,
        ));
        keys.extend(ids(
            Collection::DataflowNodes,
            self.dataflow_nodes.iter().map(|n| n.id.as_str()).collect(),
        ));
        keys.extend(edges(Collection::DataflowEdges, &self.dataflow_edges));
        keys.extend(self.links.iter().map(|l| {
            (
                Collection::Links,
                link_key(&l.dataflow_node_id, &l.architecture_node_id),
            )
        }));
        keys.extend(ids(
            Collection::Subgoals,
            self.subgoals.iter().map(|s| s.id.as_str()).collect(),
        ));
        keys.extend(ids(
            Collection::Invariants,
            self.invariants.iter().map(|i| i.id.as_str()).collect(),
        ));
        keys.extend(ids(
            Collection::PlanningCaptures,
            self.planning_captures
                .iter()
                .map(|c| c.id.as_str())
                .collect(),
        ));
        keys.extend(ids(
            Collection::Backlog,
            self.backlog.iter().map(|b| b.id.as_str()).collect(),
        ));
        keys.extend(ids(
            Collection::RoadmapStreams,
            self.roadmap_streams.iter().map(|r| r.id.as_str()).collect(),
        ));
        keys.extend(ids(
            Collection::ObjectiveDrafts,
            self.objective_drafts
                .iter()
                .map(|d| d.id.as_str())
                .collect(),
        ));
        keys
    }
}

/// Names an edge to remove: its id, or its ends and kind when it has no id.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(untagged)]
pub enum EdgeRef {
    /// The edge's id.
    Id(String),
    /// An edge without an id.
    Ends {
        /// Source node id.
        source_id: String,
        /// Target node id.
        target_id: String,
        /// Relation kind.
        kind: String,
    },
}

impl EdgeRef {
    /// The key this names (see [`edge_key`]).
    pub fn key(&self) -> String {
        match self {
            EdgeRef::Id(id) => id.clone(),
            EdgeRef::Ends {
                source_id,
                target_id,
                kind,
            } => edge_key(None, source_id, target_id, kind),
        }
    }
}

/// Names a link to remove by its node pair.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct LinkRef {
    /// The dataflow node.
    pub dataflow_node_id: String,
    /// The architecture node.
    pub architecture_node_id: String,
}

/// Records to remove, by key.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Remove {
    /// Architecture node ids.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub architecture_nodes: Vec<String>,
    /// Architecture edges.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub architecture_edges: Vec<EdgeRef>,
    /// Dataflow node ids.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub dataflow_nodes: Vec<String>,
    /// Dataflow edges.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub dataflow_edges: Vec<EdgeRef>,
    /// Links.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub links: Vec<LinkRef>,
    /// Subgoal ids.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub subgoals: Vec<String>,
    /// Invariant ids.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub invariants: Vec<String>,
    /// Planning capture ids.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub planning_captures: Vec<String>,
    /// Backlog item ids.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub backlog: Vec<String>,
    /// Roadmap stream ids.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub roadmap_streams: Vec<String>,
    /// Objective draft ids.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub objective_drafts: Vec<String>,
}

impl Remove {
    /// Whether it removes nothing.
    pub fn is_empty(&self) -> bool {
        self.keys().is_empty()
    }

    /// The key of every record it removes, with its collection, in patch order.
    pub fn keys(&self) -> Vec<(Collection, String)> {
        let ids = |collection, ids: &[String]| {
            ids.iter()
                .map(move |id| (collection, id.clone()))
                .collect::<Vec<_>>()
        };
        let mut keys = Vec::new();
        keys.extend(ids(Collection::ArchitectureNodes, &self.architecture_nodes));
        keys.extend(
            self.architecture_edges
                .iter()
                .map(|e| (Collection::ArchitectureEdges, e.key())),
        );
        keys.extend(ids(Collection::DataflowNodes, &self.dataflow_nodes));
        keys.extend(
            self.dataflow_edges
                .iter()
                .map(|e| (Collection::DataflowEdges, e.key())),
        );
        keys.extend(self.links.iter().map(|l| {
            (
                Collection::Links,
                link_key(&l.dataflow_node_id, &l.architecture_node_id),
            )
        }));
        keys.extend(ids(Collection::Subgoals, &self.subgoals));
        keys.extend(ids(Collection::Invariants, &self.invariants));
        keys.extend(ids(Collection::PlanningCaptures, &self.planning_captures));
        keys.extend(ids(Collection::Backlog, &self.backlog));
        keys.extend(ids(Collection::RoadmapStreams, &self.roadmap_streams));
        keys.extend(ids(Collection::ObjectiveDrafts, &self.objective_drafts));
        keys
    }
}

/// The top-level patch field names: the state fields in `changed_fields` order, then the
/// record-level writes.
pub const PATCH_FIELDS: [&str; 19] = [
    "objective",
    "active_subgoal_id",
    "subgoals",
    "invariants",
    "graphs",
    "graph_frontier",
    "graph_checkpoint",
    "scratch",
    "investigation_checkpoint",
    "job_bindings",
    "acceptance_receipts",
    "runtime_links",
    "observations",
    "evidence",
    "churn",
    "mode",
    "planning",
    "upsert",
    "remove",
];

/// A state field a write changed, in the fixed order of §9.5.
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
#[allow(missing_docs)]
pub enum ChangedField {
    Objective,
    ActiveSubgoalId,
    Subgoals,
    Invariants,
    Graphs,
    GraphFrontier,
    GraphCheckpoint,
    Scratch,
    InvestigationCheckpoint,
    JobBindings,
    AcceptanceReceipts,
    RuntimeLinks,
    Observations,
    Evidence,
    Churn,
    Mode,
    Planning,
}

impl ChangedField {
    /// Every field, in `changed_fields` order.
    pub const ALL: [ChangedField; 17] = [
        ChangedField::Objective,
        ChangedField::ActiveSubgoalId,
        ChangedField::Subgoals,
        ChangedField::Invariants,
        ChangedField::Graphs,
        ChangedField::GraphFrontier,
        ChangedField::GraphCheckpoint,
        ChangedField::Scratch,
        ChangedField::InvestigationCheckpoint,
        ChangedField::JobBindings,
        ChangedField::AcceptanceReceipts,
        ChangedField::RuntimeLinks,
        ChangedField::Observations,
        ChangedField::Evidence,
        ChangedField::Churn,
        ChangedField::Mode,
        ChangedField::Planning,
    ];

    /// The snake_case name, as in JSON.
    pub fn as_str(self) -> &'static str {
        PATCH_FIELDS[self as usize]
    }
}

impl Patch {
    /// The fields this patch touches (presence, not value change), in §9.5 order. Append lists
    /// count only when non-empty; a record-level write counts as the field it lives in.
    pub fn changed_fields(&self) -> Vec<ChangedField> {
        use ChangedField as F;
        let keyed: std::collections::BTreeSet<ChangedField> = self
            .upsert
            .keys()
            .into_iter()
            .chain(self.remove.keys())
            .map(|(collection, _)| collection.field())
            .collect();
        let present = [
            (F::Objective, self.objective.is_some()),
            (F::ActiveSubgoalId, self.active_subgoal_id.is_some()),
            (
                F::Subgoals,
                self.subgoals.is_some() || keyed.contains(&F::Subgoals),
            ),
            (
                F::Invariants,
                self.invariants.is_some() || keyed.contains(&F::Invariants),
            ),
            (
                F::Graphs,
                self.graphs.is_some() || keyed.contains(&F::Graphs),
            ),
            (F::GraphFrontier, self.graph_frontier.is_some()),
            (F::GraphCheckpoint, self.graph_checkpoint.is_some()),
            (F::Scratch, self.scratch.is_some()),
            (
                F::InvestigationCheckpoint,
                self.investigation_checkpoint.is_some(),
            ),
            (F::JobBindings, self.job_bindings.is_some()),
            (F::AcceptanceReceipts, !self.acceptance_receipts.is_empty()),
            (F::RuntimeLinks, !self.runtime_links.is_empty()),
            (F::Observations, !self.observations.is_empty()),
            (F::Evidence, !self.evidence.is_empty()),
            (F::Churn, self.churn.is_some()),
            (F::Mode, self.mode.is_some()),
            (
                F::Planning,
                self.planning.is_some() || keyed.contains(&F::Planning),
            ),
        ];
        present
            .into_iter()
            .filter(|(_, on)| *on)
            .map(|(field, _)| field)
            .collect()
    }

    /// Whether the patch changes anything at all.
    pub fn is_empty(&self) -> bool {
        self.changed_fields().is_empty()
    }

    /// Whether the patch replaces any state field or record (observations and evidence alone
    /// do not).
    pub fn has_state_replacements(&self) -> bool {
        self.changed_fields()
            .iter()
            .any(|field| !matches!(field, ChangedField::Observations | ChangedField::Evidence))
    }
}

/// A patch with the revision it was drafted against, as `distill` and `propose` print it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Envelope {
    /// The revision the patch was drafted against.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expected_revision: Option<u64>,
    /// The patch.
    pub patch: Patch,
}

/// Decodes patch input: either a bare patch or an `{"expected_revision", "patch"}` envelope.
/// Every unknown field and every type error is reported, each with its JSON path.
pub fn decode_patch_input(text: &str) -> Result<Envelope, Vec<String>> {
    // A JSON object that names a key twice keeps the last value silently; input that says two
    // things is refused instead.
    let duplicates = duplicate_keys(text);
    if !duplicates.is_empty() {
        return Err(duplicates);
    }
    let value: Value = serde_json::from_str(text).map_err(|err| vec![format!("{err}")])?;
    let Value::Object(mut object) = value else {
        return Err(vec![format!(
            "expected a JSON object (a patch or an envelope), found {}",
            json_type_name(&value)
        )]);
    };
    if !object.contains_key("patch") {
        return decode_patch_object(Value::Object(object), "").map(|patch| Envelope {
            expected_revision: None,
            patch,
        });
    }
    let mut problems = Vec::new();
    for key in object.keys() {
        if key != "patch" && key != "expected_revision" {
            problems.push(format!("unknown envelope field `{key}`"));
        }
    }
    let expected_revision = match object.remove("expected_revision") {
        None | Some(Value::Null) => None,
        Some(value) => match value.as_u64() {
            Some(revision) => Some(revision),
            None => {
                problems.push(format!(
                    "`expected_revision` must be a non-negative integer, found {value}"
                ));
                None
            }
        },
    };
    let patch = object.remove("patch").unwrap_or(Value::Null);
    match decode_patch_object(patch, "patch.") {
        Ok(patch) if problems.is_empty() => Ok(Envelope {
            expected_revision,
            patch,
        }),
        Ok(_) => Err(problems),
        Err(more) => {
            problems.extend(more);
            Err(problems)
        }
    }
}

/// Decodes a patch object, failing on unknown fields. When decoding fails, each top-level
/// field is decoded on its own so every broken field is reported, not just the first.
fn decode_patch_object(value: Value, prefix: &str) -> Result<Patch, Vec<String>> {
    let Value::Object(object) = &value else {
        return Err(vec![format!(
            "`{}` must be a JSON object, found {}",
            prefix.trim_end_matches('.'),
            json_type_name(&value)
        )]);
    };
    let mut problems = Vec::new();
    for (key, field) in object {
        if !PATCH_FIELDS.contains(&key.as_str()) {
            problems.push(format!(
                "unknown patch field `{prefix}{key}` (patch fields: {})",
                PATCH_FIELDS.join(", ")
            ));
            continue;
        }
        let single = Value::Object([(key.clone(), field.clone())].into_iter().collect());
        if let Err(problem) = decode_with_paths(single, prefix) {
            problems.extend(problem);
        }
    }
    if !problems.is_empty() {
        return Err(problems);
    }
    decode_with_paths(value, prefix)
}

/// Decodes a patch, naming the JSON path of a type error and of every ignored field.
fn decode_with_paths(value: Value, prefix: &str) -> Result<Patch, Vec<String>> {
    let mut unknown = Vec::new();
    let decoded: Result<Patch, _> = {
        let mut note_unknown = |path: serde_ignored::Path| {
            unknown.push(format!("unknown field `{prefix}{}`", dotted(&path)));
        };
        let deserializer = serde_ignored::Deserializer::new(value, &mut note_unknown);
        serde_path_to_error::deserialize(deserializer)
    };
    match decoded {
        Ok(_) if !unknown.is_empty() => Err(unknown),
        Ok(patch) => Ok(patch),
        Err(err) => Err(vec![format!("`{prefix}{}`: {}", err.path(), err.inner())]),
    }
}

/// A field path as `a.b.0.c`, without the markers serde_ignored puts on optional values.
fn dotted(path: &serde_ignored::Path<'_>) -> String {
    use serde_ignored::Path;
    let join = |parent: &Path<'_>, segment: String| match dotted(parent) {
        prefix if prefix.is_empty() => segment,
        prefix => format!("{prefix}.{segment}"),
    };
    match path {
        Path::Root => String::new(),
        Path::Seq { parent, index } => join(parent, index.to_string()),
        Path::Map { parent, key } => join(parent, key.clone()),
        Path::Some { parent }
        | Path::NewtypeStruct { parent }
        | Path::NewtypeVariant { parent } => dotted(parent),
    }
}

/// Every key that appears more than once in the same object, as a problem naming the key and
/// the path of the object. Text that is not JSON has none (decoding it reports why).
pub fn duplicate_keys(text: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut deserializer = serde_json::Deserializer::from_str(text);
    let _ = serde::de::DeserializeSeed::deserialize(
        DuplicateScan {
            path: String::new(),
            found: &mut found,
        },
        &mut deserializer,
    );
    found
}

/// Walks a JSON document without keeping it, noting repeated keys.
struct DuplicateScan<'a> {
    path: String,
    found: &'a mut Vec<String>,
}

impl DuplicateScan<'_> {
    fn child(&self, segment: &str) -> String {
        if self.path.is_empty() {
            segment.to_owned()
        } else {
            format!("{}.{segment}", self.path)
        }
    }
}

impl<'de> serde::de::DeserializeSeed<'de> for DuplicateScan<'_> {
    type Value = ();

    fn deserialize<D: serde::Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> serde::de::Visitor<'de> for DuplicateScan<'_> {
    type Value = ();

    fn expecting(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str("any JSON value")
    }

    fn visit_bool<E>(self, _: bool) -> Result<(), E> {
        Ok(())
    }

    fn visit_i64<E>(self, _: i64) -> Result<(), E> {
        Ok(())
    }

    fn visit_u64<E>(self, _: u64) -> Result<(), E> {
        Ok(())
    }

    fn visit_f64<E>(self, _: f64) -> Result<(), E> {
        Ok(())
    }

    fn visit_str<E>(self, _: &str) -> Result<(), E> {
        Ok(())
    }

    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let mut index = 0usize;
        loop {
            let path = self.child(&index.to_string());
            let seed = DuplicateScan {
                path,
                found: &mut *self.found,
            };
            if seq.next_element_seed(seed)?.is_none() {
                return Ok(());
            }
            index += 1;
        }
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let mut seen = std::collections::HashSet::new();
        while let Some(key) = map.next_key::<String>()? {
            if !seen.insert(key.clone()) {
                let place = if self.path.is_empty() {
                    "the top-level object".to_owned()
                } else {
                    format!("`{}`", self.path)
                };
                self.found.push(format!("duplicate key `{key}` in {place}"));
            }
            let seed = DuplicateScan {
                path: self.child(&key),
                found: &mut *self.found,
            };
            map.next_value_seed(seed)?;
        }
        Ok(())
    }
}

fn json_type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bare_patch_and_envelope_decode_alike() {
        let bare = decode_patch_input(r#"{"objective":"x"}"#).expect("bare");
        assert_eq!(bare.expected_revision, None);
        assert_eq!(bare.patch.objective.as_deref(), Some("x"));
        let wrapped = decode_patch_input(r#"{"expected_revision":4,"patch":{"objective":"x"}}"#)
            .expect("env");
        assert_eq!(wrapped.expected_revision, Some(4));
        assert_eq!(wrapped.patch, bare.patch);
    }

    #[test]
    fn every_unknown_and_mistyped_field_is_reported() {
        let problems = decode_patch_input(
            r#"{"objectiv":"x","subgoals":"nope","observations":[{"id":"o","summary":"s","source_kind":"k","status":"ok","evidence_ids":["e"],"colour":1}]}"#,
        )
        .expect_err("invalid");
        assert_eq!(problems.len(), 3, "{problems:?}");
        assert!(
            problems[0].contains("unknown patch field `objectiv`"),
            "{problems:?}"
        );
        assert!(problems[1].contains("subgoals"), "{problems:?}");
        assert!(
            problems[2].contains("unknown field `observations.0.colour`"),
            "{problems:?}"
        );
    }

    #[test]
    fn duplicate_keys_are_refused_with_their_path() {
        let problems = decode_patch_input(
            r#"{"objective":"a","scratch":{"notes":[],"notes":["x"]},"objective":"b"}"#,
        )
        .expect_err("duplicates");
        assert_eq!(
            problems,
            vec![
                "duplicate key `notes` in `scratch`",
                "duplicate key `objective` in the top-level object"
            ]
        );
        let nested = duplicate_keys(r#"{"patch":{"observations":[{"id":"a","id":"b"}]}}"#);
        assert_eq!(nested, vec!["duplicate key `id` in `patch.observations.0`"]);
        assert!(duplicate_keys(r#"{"a":{"x":1},"b":{"x":1}}"#).is_empty());
        assert!(duplicate_keys("not json").is_empty());
    }

    #[test]
    fn changed_fields_follow_the_fixed_order() {
        let patch = Patch {
            evidence: vec![],
            churn: Some(ChurnState {
                understanding_status: "u".into(),
                diff_pressure: "low".into(),
                graph_freshness: None,
                warning: None,
                unexplained_writes: None,
            }),
            objective: Some("o".into()),
            ..Patch::default()
        };
        assert_eq!(
            patch.changed_fields(),
            vec![ChangedField::Objective, ChangedField::Churn]
        );
        assert!(patch.has_state_replacements());
        assert!(Patch::default().is_empty());
    }

    proptest::proptest! {
        #[test]
        fn arbitrary_text_never_panics(text in "\\PC{0,300}") {
            let _ = decode_patch_input(&text);
        }

        #[test]
        fn arbitrary_json_shapes_never_panic(text in "[{}\\[\\]\":,0-9a-z_ .-]{0,300}") {
            let _ = decode_patch_input(&text);
        }
    }
}
