//! Folding records into the state: the one definition of what a record does, used by every
//! reader, by the writer (which folds its own new record before writing it), and by `verify`.
//!
//! A patch replaces whole fields, upserts or removes single records of keyed collections, and
//! places new observations, evidence, receipts and links before the existing ones. Besides the
//! state the fold keeps the anchors (the write, and its commit, that last changed each graph
//! node and the investigation checkpoint) and, when asked to, the live writers of every field
//! and record: the records whose value stands because no later record that saw them wrote
//! again. A record that writes a field or record whose live writer it did not see (a branch
//! merged by git) is a conflict: the fold order picks the value, and `state.conflicts` lists
//! it until a record that saw every competitor writes it again.
//!
//! Appended records are kept once per id: the same record from two branches is one record; two
//! different records with the same id keep the first and list a conflict, which the next write
//! that saw both resolves.

use std::collections::BTreeMap;
use std::collections::BTreeSet;
use std::collections::HashMap;

use serde::Deserialize;
use serde::Serialize;
use serde_json::Value;
use sha2::Digest;
use sha2::Sha256;

use crate::state::model::Conflict;
use crate::state::model::GraphEdge;
use crate::state::model::GraphKind;
use crate::state::model::GraphNode;
use crate::state::model::Graphs;
use crate::state::model::State;
use crate::state::order::Lineage;
use crate::state::patch::ChangedField;
use crate::state::patch::Collection;
use crate::state::patch::Patch;
use crate::state::patch::edge_key;
use crate::state::patch::link_key;
use crate::state::rollout::Record;
use crate::state::snapshot::Anchor;
use crate::state::snapshot::CHECKPOINT_ANCHOR;
use crate::state::snapshot::node_anchor_key;

/// A record whose value for a field or record still stands, and a hash of that value.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Writer {
    /// The record id.
    pub record: String,
    /// A hash of the value it wrote (equal values from two branches are no conflict).
    pub value: u64,
}

/// The live writers of every field (`objective`) and record (`architecture_nodes/lexer`).
pub type Writers = BTreeMap<String, Vec<Writer>>;

/// What a fold starts from: the empty state, or a snapshot.
#[derive(Debug, Clone, Default)]
pub struct Base {
    /// The state.
    pub state: State,
    /// Its anchors.
    pub anchors: BTreeMap<String, Anchor>,
    /// Its live writers, when conflicts must be tracked.
    pub writers: Option<Writers>,
    /// How many records it holds.
    pub records: usize,
    /// Its heads.
    pub tips: BTreeSet<String>,
    /// The commit checked out at its last record's write.
    pub last_git_head: Option<String>,
}

/// The result of a fold.
#[derive(Debug, Clone)]
pub struct Folded {
    /// The state.
    pub state: State,
    /// The anchors.
    pub anchors: BTreeMap<String, Anchor>,
    /// The live writers, when they were tracked.
    pub writers: Option<Writers>,
    /// The heads.
    pub tips: BTreeSet<String>,
    /// The commit checked out at the last record's write.
    pub last_git_head: Option<String>,
}

/// The append-only lists.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum AppendList {
    Receipts,
    RuntimeLinks,
    Observations,
    Evidence,
}

impl AppendList {
    fn as_str(self) -> &'static str {
        match self {
            AppendList::Receipts => "acceptance_receipts",
            AppendList::RuntimeLinks => "runtime_links",
            AppendList::Observations => "observations",
            AppendList::Evidence => "evidence",
        }
    }
}

/// A fold in progress.
#[derive(Debug)]
pub struct Fold {
    state: State,
    anchors: BTreeMap<String, Anchor>,
    writers: Option<Writers>,
    lineage: Lineage,
    /// Ids appended by this fold's records: where the item sits in the (reversed) list and
    /// which record appended it.
    appended: HashMap<(AppendList, String), (usize, String)>,
    /// Per keyed collection, record key to index in its list; rebuilt when stale.
    indexes: HashMap<Collection, HashMap<String, usize>>,
    conflicts: BTreeMap<String, Conflict>,
    last_git_head: Option<String>,
}

impl Fold {
    /// Starts a fold on top of `base`.
    pub fn new(base: Base) -> Fold {
        let Base {
            mut state,
            anchors,
            writers,
            records,
            tips,
            last_git_head,
        } = base;
        // The append lists are newest first; folding pushes onto their reversed form.
        state.acceptance_receipts.reverse();
        state.runtime_links.reverse();
        state.observations.reverse();
        state.recent_evidence.reverse();
        let conflicts = std::mem::take(&mut state.conflicts)
            .into_iter()
            .map(|c| (c.key.clone(), c))
            .collect();
        Fold {
            state,
            anchors,
            writers,
            lineage: Lineage::new(records, tips),
            appended: HashMap::new(),
            indexes: HashMap::new(),
            conflicts,
            last_git_head,
        }
    }

    /// Records folded so far, base included.
    pub fn len(&self) -> usize {
        self.lineage.len()
    }

    /// Whether nothing has been folded.
    pub fn is_empty(&self) -> bool {
        self.lineage.is_empty()
    }

    /// Whether this fold's records saw every record before them.
    pub fn is_linear(&self) -> bool {
        self.lineage.is_linear()
    }

    /// Whether `id` is one of this fold's records.
    pub fn contains(&self, id: &str) -> bool {
        self.lineage.contains(id)
    }

    /// Folds the next record (in fold order).
    pub fn push(&mut self, record: &Record) {
        let position = self.lineage.push(record);
        let mut step = Step {
            position,
            record,
            writes: Vec::new(),
        };
        match (&record.restore, &record.patch) {
            (Some(restore), _) => self.restore(&mut step, restore),
            (None, Some(patch)) => self.apply(&mut step, patch),
            (None, None) => {}
        }
        self.settle(&step);
        self.state.revision = position as u64 + 1;
        self.state.last_updated_turn_id.clone_from(&record.turn_id);
        self.last_git_head.clone_from(&record.git_head);
    }

    /// Ends the fold.
    pub fn finish(self) -> Folded {
        let Fold {
            mut state,
            anchors,
            writers,
            lineage,
            conflicts,
            last_git_head,
            ..
        } = self;
        state.acceptance_receipts.reverse();
        state.runtime_links.reverse();
        state.observations.reverse();
        state.recent_evidence.reverse();
        state.conflicts = conflicts.into_values().collect();
        Folded {
            state,
            anchors,
            writers,
            tips: lineage.tips().clone(),
            last_git_head,
        }
    }

    fn restore(&mut self, step: &mut Step<'_>, restore: &crate::state::rollout::Restore) {
        let before = std::mem::take(&mut self.state);
        let mut restored = restore.state.clone();
        restored.conflicts = Vec::new();
        restored.acceptance_receipts.reverse();
        restored.runtime_links.reverse();
        restored.observations.reverse();
        restored.recent_evidence.reverse();
        self.state = restored;
        self.indexes.clear();
        self.appended.clear();
        if restore.anchors.is_empty() {
            // A rollback of the first store format carried no anchors: the restored records
            // count as written now.
            let anchor = step.anchor();
            refresh_graph_anchors(
                &mut self.anchors,
                &before.graphs,
                &self.state.graphs,
                &anchor,
            );
            if before.investigation_checkpoint != self.state.investigation_checkpoint {
                self.anchor_checkpoint(&anchor);
            }
        } else {
            self.anchors.clone_from(&restore.anchors);
        }
        for field in &step.record.changed_fields {
            if self.writers.is_some() {
                let value = field_value(&self.state, *field);
                step.write(field.as_str().to_owned(), &value);
            } else {
                step.write_unhashed(field.as_str().to_owned());
            }
        }
    }

    fn apply(&mut self, step: &mut Step<'_>, patch: &Patch) {
        let track = self.writers.is_some();
        macro_rules! replace {
            ($field:ident, $changed:expr, $value:expr) => {
                if let Some(value) = &patch.$field {
                    if track {
                        step.write($changed.as_str().to_owned(), value);
                    } else {
                        step.write_unhashed($changed.as_str().to_owned());
                    }
                    #[allow(clippy::redundant_closure_call)]
                    ($value)(value.clone());
                }
            };
        }
        replace!(objective, ChangedField::Objective, |v| self
            .state
            .objective =
            Some(v));
        replace!(active_subgoal_id, ChangedField::ActiveSubgoalId, |v| {
            self.state.active_subgoal_id = Some(v)
        });
        replace!(subgoals, ChangedField::Subgoals, |v| {
            self.state.subgoals = v;
            self.indexes.remove(&Collection::Subgoals);
        });
        replace!(invariants, ChangedField::Invariants, |v| {
            self.state.invariants = v;
            self.indexes.remove(&Collection::Invariants);
        });
        if let Some(graphs) = &patch.graphs {
            if track {
                step.write(ChangedField::Graphs.as_str().to_owned(), graphs);
            } else {
                step.write_unhashed(ChangedField::Graphs.as_str().to_owned());
            }
            let anchor = step.anchor();
            refresh_graph_anchors(&mut self.anchors, &self.state.graphs, graphs, &anchor);
            self.state.graphs = graphs.clone();
            for collection in Collection::ALL {
                if collection.field() == ChangedField::Graphs {
                    self.indexes.remove(&collection);
                }
            }
        }
        replace!(graph_frontier, ChangedField::GraphFrontier, |v| {
            self.state.graph_frontier = Some(v)
        });
        replace!(graph_checkpoint, ChangedField::GraphCheckpoint, |v| {
            self.state.graph_checkpoint = Some(v)
        });
        replace!(scratch, ChangedField::Scratch, |v| self.state.scratch =
            Some(v));
        if let Some(checkpoint) = &patch.investigation_checkpoint {
            if track {
                step.write(
                    ChangedField::InvestigationCheckpoint.as_str().to_owned(),
                    checkpoint,
                );
            } else {
                step.write_unhashed(ChangedField::InvestigationCheckpoint.as_str().to_owned());
            }
            if self.state.investigation_checkpoint.as_ref() != Some(checkpoint) {
                self.state.investigation_checkpoint = Some(checkpoint.clone());
                let anchor = step.anchor();
                self.anchor_checkpoint(&anchor);
            }
        }
        replace!(job_bindings, ChangedField::JobBindings, |v| {
            self.state.job_bindings = v
        });
        replace!(churn, ChangedField::Churn, |v| self.state.churn = Some(v));
        replace!(mode, ChangedField::Mode, |v| self.state.mode = Some(v));
        replace!(planning, ChangedField::Planning, |v| {
            self.state.planning = v;
            for collection in Collection::ALL {
                if collection.field() == ChangedField::Planning {
                    self.indexes.remove(&collection);
                }
            }
        });
        for (collection, key) in patch.remove.keys() {
            self.remove_record(step, collection, &key);
        }
        self.upsert_records(step, patch);
        let receipts = &patch.acceptance_receipts;
        self.append(step, AppendList::Receipts, receipts, |s| {
            &mut s.acceptance_receipts
        });
        self.append(step, AppendList::RuntimeLinks, &patch.runtime_links, |s| {
            &mut s.runtime_links
        });
        self.append(step, AppendList::Observations, &patch.observations, |s| {
            &mut s.observations
        });
        self.append(step, AppendList::Evidence, &patch.evidence, |s| {
            &mut s.recent_evidence
        });
    }

    fn anchor_checkpoint(&mut self, anchor: &Anchor) {
        if self.state.investigation_checkpoint.is_some() {
            self.anchors
                .insert(CHECKPOINT_ANCHOR.to_owned(), anchor.clone());
        } else {
            self.anchors.remove(CHECKPOINT_ANCHOR);
        }
    }

    fn upsert_records(&mut self, step: &mut Step<'_>, patch: &Patch) {
        let upsert = &patch.upsert;
        for node in &upsert.architecture_nodes {
            self.upsert_node(step, GraphKind::Architecture, node);
        }
        for edge in &upsert.architecture_edges {
            self.upsert_edge(step, Collection::ArchitectureEdges, edge);
        }
        for node in &upsert.dataflow_nodes {
            self.upsert_node(step, GraphKind::Dataflow, node);
        }
        for edge in &upsert.dataflow_edges {
            self.upsert_edge(step, Collection::DataflowEdges, edge);
        }
        for link in &upsert.links {
            let key = link_key(&link.dataflow_node_id, &link.architecture_node_id);
            self.upsert(step, Collection::Links, key, link, |s| &mut s.graphs.links);
        }
        for subgoal in &upsert.subgoals {
            self.upsert(
                step,
                Collection::Subgoals,
                subgoal.id.clone(),
                subgoal,
                |s| &mut s.subgoals,
            );
        }
        for invariant in &upsert.invariants {
            self.upsert(
                step,
                Collection::Invariants,
                invariant.id.clone(),
                invariant,
                |s| &mut s.invariants,
            );
        }
        for capture in &upsert.planning_captures {
            self.upsert(
                step,
                Collection::PlanningCaptures,
                capture.id.clone(),
                capture,
                |s| &mut s.planning.captures,
            );
        }
        for item in &upsert.backlog {
            self.upsert(step, Collection::Backlog, item.id.clone(), item, |s| {
                &mut s.planning.backlog_items
            });
        }
        for stream in &upsert.roadmap_streams {
            self.upsert(
                step,
                Collection::RoadmapStreams,
                stream.id.clone(),
                stream,
                |s| &mut s.planning.roadmap_streams,
            );
        }
        for draft in &upsert.objective_drafts {
            self.upsert(
                step,
                Collection::ObjectiveDrafts,
                draft.id.clone(),
                draft,
                |s| &mut s.planning.objective_drafts,
            );
        }
    }

    fn upsert_node(&mut self, step: &mut Step<'_>, kind: GraphKind, node: &GraphNode) {
        let collection = match kind {
            GraphKind::Architecture => Collection::ArchitectureNodes,
            GraphKind::Dataflow => Collection::DataflowNodes,
        };
        let changed = self.upsert(
            step,
            collection,
            node.id.clone(),
            node,
            move |s| match kind {
                GraphKind::Architecture => &mut s.graphs.architecture.nodes,
                GraphKind::Dataflow => &mut s.graphs.dataflow.nodes,
            },
        );
        if changed {
            self.anchors
                .insert(node_anchor_key(kind, &node.id), step.anchor());
        }
    }

    fn upsert_edge(&mut self, step: &mut Step<'_>, collection: Collection, edge: &GraphEdge) {
        let key = edge_key(
            edge.id.as_deref(),
            &edge.source_id,
            &edge.target_id,
            &edge.kind,
        );
        self.upsert(step, collection, key, edge, move |s| match collection {
            Collection::ArchitectureEdges => &mut s.graphs.architecture.edges,
            _ => &mut s.graphs.dataflow.edges,
        });
    }

    /// Puts `item` in place of the record with `key`, or after the last one. Answers whether
    /// the collection changed.
    fn upsert<T: Clone + PartialEq + Serialize>(
        &mut self,
        step: &mut Step<'_>,
        collection: Collection,
        key: String,
        item: &T,
        list: impl Fn(&mut State) -> &mut Vec<T>,
    ) -> bool {
        let record_key = format!("{}/{key}", collection.as_str());
        if self.writers.is_some() {
            step.write(record_key, item);
        } else {
            step.write_unhashed(record_key);
        }
        let index = self.index(collection).get(&key).copied();
        let items = list(&mut self.state);
        match index {
            Some(at) if items[at] == *item => false,
            Some(at) => {
                items[at] = item.clone();
                true
            }
            None => {
                items.push(item.clone());
                let at = items.len() - 1;
                self.index(collection).insert(key, at);
                true
            }
        }
    }

    fn remove_record(&mut self, step: &mut Step<'_>, collection: Collection, key: &str) {
        let record_key = format!("{}/{key}", collection.as_str());
        if self.writers.is_some() {
            step.write(record_key, &Value::Null);
        } else {
            step.write_unhashed(record_key);
        }
        let Some(at) = self.index(collection).get(key).copied() else {
            return;
        };
        let state = &mut self.state;
        match collection {
            Collection::ArchitectureNodes => {
                state.graphs.architecture.nodes.remove(at);
                self.anchors
                    .remove(&node_anchor_key(GraphKind::Architecture, key));
            }
            Collection::DataflowNodes => {
                state.graphs.dataflow.nodes.remove(at);
                self.anchors
                    .remove(&node_anchor_key(GraphKind::Dataflow, key));
            }
            Collection::ArchitectureEdges => {
                state.graphs.architecture.edges.remove(at);
            }
            Collection::DataflowEdges => {
                state.graphs.dataflow.edges.remove(at);
            }
            Collection::Links => {
                state.graphs.links.remove(at);
            }
            Collection::Subgoals => {
                state.subgoals.remove(at);
            }
            Collection::Invariants => {
                state.invariants.remove(at);
            }
            Collection::PlanningCaptures => {
                state.planning.captures.remove(at);
            }
            Collection::Backlog => {
                state.planning.backlog_items.remove(at);
            }
            Collection::RoadmapStreams => {
                state.planning.roadmap_streams.remove(at);
            }
            Collection::ObjectiveDrafts => {
                state.planning.objective_drafts.remove(at);
            }
        }
        self.indexes.remove(&collection);
    }

    /// The key-to-index map of a collection, built on first use.
    fn index(&mut self, collection: Collection) -> &mut HashMap<String, usize> {
        let state = &self.state;
        self.indexes.entry(collection).or_insert_with(|| {
            let keys: Vec<String> = match collection {
                Collection::ArchitectureNodes => ids(&state.graphs.architecture.nodes, |n| &n.id),
                Collection::DataflowNodes => ids(&state.graphs.dataflow.nodes, |n| &n.id),
                Collection::ArchitectureEdges => edge_keys(&state.graphs.architecture.edges),
                Collection::DataflowEdges => edge_keys(&state.graphs.dataflow.edges),
                Collection::Links => state
                    .graphs
                    .links
                    .iter()
                    .map(|l| link_key(&l.dataflow_node_id, &l.architecture_node_id))
                    .collect(),
                Collection::Subgoals => ids(&state.subgoals, |s| &s.id),
                Collection::Invariants => ids(&state.invariants, |i| &i.id),
                Collection::PlanningCaptures => ids(&state.planning.captures, |c| &c.id),
                Collection::Backlog => ids(&state.planning.backlog_items, |b| &b.id),
                Collection::RoadmapStreams => ids(&state.planning.roadmap_streams, |r| &r.id),
                Collection::ObjectiveDrafts => ids(&state.planning.objective_drafts, |d| &d.id),
            };
            // With duplicate keys (never written by a valid patch) the first one is addressed.
            let mut index = HashMap::with_capacity(keys.len());
            for (at, key) in keys.into_iter().enumerate() {
                index.entry(key).or_insert(at);
            }
            index
        })
    }

    /// Adds new items (given newest first) to a reversed append list, once per id.
    fn append<T: Clone + PartialEq + Serialize + HasId>(
        &mut self,
        step: &mut Step<'_>,
        which: AppendList,
        items: &[T],
        list: impl Fn(&mut State) -> &mut Vec<T>,
    ) {
        for item in items.iter().rev() {
            let key = (which, item.id().to_owned());
            if let Some((at, first)) = self.appended.get(&key) {
                let existing = &list(&mut self.state)[*at];
                if existing != item {
                    let conflict_key = format!("{}/{}", which.as_str(), item.id());
                    let chosen = chosen_value(existing, first);
                    let records = vec![first.clone(), step.record.id.clone()];
                    self.conflicts.insert(
                        conflict_key.clone(),
                        Conflict {
                            key: conflict_key,
                            records,
                            chosen,
                        },
                    );
                }
                continue;
            }
            let items = list(&mut self.state);
            items.push(item.clone());
            self.appended
                .insert(key, (items.len() - 1, step.record.id.clone()));
        }
    }

    /// Records this step's writes: conflicts where a live writer was not seen, resolutions
    /// where every one was.
    fn settle(&mut self, step: &Step<'_>) {
        let position = step.position;
        // A conflict between appended records is resolved by the next record that saw them all.
        let lineage = &self.lineage;
        self.conflicts.retain(|key, conflict| {
            !is_append_key(key)
                || conflict.records.contains(&step.record.id)
                || !conflict
                    .records
                    .iter()
                    .all(|record| lineage.descends(position, record))
        });
        for (key, value) in &step.writes {
            let competitors = self.competitors(position, key, *value);
            if competitors.is_empty() {
                self.conflicts.remove(key);
                if !key.contains('/') {
                    let prefix_of = |k: &String| field_of_key(k) == Some(key.as_str());
                    self.conflicts.retain(|k, _| !prefix_of(k));
                }
            } else {
                let mut records = competitors;
                records.push(step.record.id.clone());
                let chosen = chosen_value(&self.key_value(key), &step.record.id);
                self.conflicts.insert(
                    key.clone(),
                    Conflict {
                        key: key.clone(),
                        records,
                        chosen,
                    },
                );
            }
            if let Some(writers) = &mut self.writers {
                let lineage = &self.lineage;
                for related in related_keys(writers, key) {
                    if let Some(list) = writers.get_mut(&related) {
                        list.retain(|w| !lineage.descends(position, &w.record));
                        if list.is_empty() {
                            writers.remove(&related);
                        }
                    }
                }
                let list = writers.entry(key.clone()).or_default();
                list.retain(|w| !lineage.descends(position, &w.record));
                list.push(Writer {
                    record: step.record.id.clone(),
                    value: value.unwrap_or_default(),
                });
            }
        }
    }

    /// The live writers of `key` and the keys it overlaps that this record did not see and
    /// that wrote something else, in fold order.
    fn competitors(&self, position: usize, key: &str, value: Option<u64>) -> Vec<String> {
        let Some(writers) = &self.writers else {
            // Without writers the fold is linear: every earlier record was seen.
            return Vec::new();
        };
        let mut found: Vec<(usize, String)> = Vec::new();
        for related in related_keys(writers, key) {
            for writer in writers.get(&related).into_iter().flatten() {
                let same_value = related == key && Some(writer.value) == value;
                if !same_value && !self.lineage.descends(position, &writer.record) {
                    let at = self
                        .lineage
                        .positions()
                        .get(&writer.record)
                        .copied()
                        .unwrap_or_default();
                    found.push((at, writer.record.clone()));
                }
            }
        }
        found.sort();
        found.dedup();
        found.into_iter().map(|(_, id)| id).collect()
    }

    /// The current value of a field or record key, as JSON.
    fn key_value(&mut self, key: &str) -> Value {
        let Some((collection_name, id)) = key.split_once('/') else {
            return ChangedField::ALL
                .iter()
                .find(|f| f.as_str() == key)
                .map_or(Value::Null, |field| field_value(&self.state, *field));
        };
        let Some(collection) = Collection::ALL
            .into_iter()
            .find(|c| c.as_str() == collection_name)
        else {
            return Value::Null;
        };
        let Some(at) = self.index(collection).get(id).copied() else {
            return Value::Null;
        };
        let state = &self.state;
        let value = match collection {
            Collection::ArchitectureNodes => {
                serde_json::to_value(&state.graphs.architecture.nodes[at])
            }
            Collection::DataflowNodes => serde_json::to_value(&state.graphs.dataflow.nodes[at]),
            Collection::ArchitectureEdges => {
                serde_json::to_value(&state.graphs.architecture.edges[at])
            }
            Collection::DataflowEdges => serde_json::to_value(&state.graphs.dataflow.edges[at]),
            Collection::Links => serde_json::to_value(&state.graphs.links[at]),
            Collection::Subgoals => serde_json::to_value(&state.subgoals[at]),
            Collection::Invariants => serde_json::to_value(&state.invariants[at]),
            Collection::PlanningCaptures => serde_json::to_value(&state.planning.captures[at]),
            Collection::Backlog => serde_json::to_value(&state.planning.backlog_items[at]),
            Collection::RoadmapStreams => serde_json::to_value(&state.planning.roadmap_streams[at]),
            Collection::ObjectiveDrafts => {
                serde_json::to_value(&state.planning.objective_drafts[at])
            }
        };
        value.unwrap_or(Value::Null)
    }
}

/// One record's fold step: where it sits and the keys it wrote, with their value hashes.
struct Step<'a> {
    position: usize,
    record: &'a Record,
    writes: Vec<(String, Option<u64>)>,
}

impl Step<'_> {
    fn write(&mut self, key: String, value: &impl Serialize) {
        self.writes.push((key, Some(value_hash(value))));
    }

    fn write_unhashed(&mut self, key: String) {
        self.writes.push((key, None));
    }

    fn anchor(&self) -> Anchor {
        Anchor {
            revision: self.position as u64 + 1,
            git_head: self.record.git_head.clone(),
            at: Some(self.record.at.clone()),
        }
    }
}

/// Items of the append lists have ids.
trait HasId {
    fn id(&self) -> &str;
}

macro_rules! has_id {
    ($($ty:ty),*) => {$(
        impl HasId for $ty {
            fn id(&self) -> &str {
                &self.id
            }
        }
    )*};
}

has_id!(
    crate::state::model::Observation,
    crate::state::model::EvidenceRecord,
    crate::state::model::AcceptanceReceipt,
    crate::state::model::RuntimeLink
);

fn ids<T>(items: &[T], id: impl Fn(&T) -> &String) -> Vec<String> {
    items.iter().map(|item| id(item).clone()).collect()
}

fn edge_keys(edges: &[GraphEdge]) -> Vec<String> {
    edges
        .iter()
        .map(|e| edge_key(e.id.as_deref(), &e.source_id, &e.target_id, &e.kind))
        .collect()
}

fn is_append_key(key: &str) -> bool {
    key.split_once('/').is_some_and(|(list, _)| {
        matches!(
            list,
            "acceptance_receipts" | "runtime_links" | "observations" | "evidence"
        )
    })
}

/// The field a record key lives in (`architecture_nodes/x` → `graphs`).
fn field_of_key(key: &str) -> Option<&'static str> {
    let (collection, _) = key.split_once('/')?;
    Collection::ALL
        .into_iter()
        .find(|c| c.as_str() == collection)
        .map(|c| c.field().as_str())
}

/// `key` itself, the field a record key lives in, and every record key a field key holds.
fn related_keys(writers: &Writers, key: &str) -> Vec<String> {
    let mut keys = vec![key.to_owned()];
    match field_of_key(key) {
        Some(field) => keys.push(field.to_owned()),
        None => {
            for collection in Collection::ALL {
                if collection.field().as_str() == key {
                    let prefix = format!("{}/", collection.as_str());
                    keys.extend(
                        writers
                            .range(prefix.clone()..)
                            .take_while(|(k, _)| k.starts_with(&prefix))
                            .map(|(k, _)| k.clone()),
                    );
                }
            }
        }
    }
    keys
}

/// A stable 64-bit hash of a value's JSON.
fn value_hash(value: &impl Serialize) -> u64 {
    let bytes = serde_json::to_vec(value).expect("state values always serialize to JSON");
    let digest = Sha256::digest(&bytes);
    let mut first = [0u8; 8];
    first.copy_from_slice(&digest[..8]);
    u64::from_le_bytes(first)
}

/// The value a conflict reports as chosen: the value itself, or a note when it is large.
fn chosen_value(value: &impl Serialize, record: &str) -> Value {
    const LARGEST: usize = 2048;
    let value = serde_json::to_value(value).unwrap_or(Value::Null);
    let size = value.to_string().len();
    if size <= LARGEST {
        value
    } else {
        Value::String(format!(
            "({size} bytes of JSON; `epiphany show` has it, written by record {record})"
        ))
    }
}

/// The value of one state field, as JSON (the state's own serialization, so names match).
pub fn field_value(state: &State, field: ChangedField) -> Value {
    let value = match field {
        ChangedField::Objective => serde_json::to_value(&state.objective),
        ChangedField::ActiveSubgoalId => serde_json::to_value(&state.active_subgoal_id),
        ChangedField::Subgoals => serde_json::to_value(&state.subgoals),
        ChangedField::Invariants => serde_json::to_value(&state.invariants),
        ChangedField::Graphs => serde_json::to_value(&state.graphs),
        ChangedField::GraphFrontier => serde_json::to_value(&state.graph_frontier),
        ChangedField::GraphCheckpoint => serde_json::to_value(&state.graph_checkpoint),
        ChangedField::Scratch => serde_json::to_value(&state.scratch),
        ChangedField::InvestigationCheckpoint => {
            serde_json::to_value(&state.investigation_checkpoint)
        }
        ChangedField::JobBindings => serde_json::to_value(&state.job_bindings),
        ChangedField::AcceptanceReceipts => serde_json::to_value(&state.acceptance_receipts),
        ChangedField::RuntimeLinks => serde_json::to_value(&state.runtime_links),
        ChangedField::Observations => serde_json::to_value(&state.observations),
        ChangedField::Evidence => serde_json::to_value(&state.recent_evidence),
        ChangedField::Churn => serde_json::to_value(&state.churn),
        ChangedField::Mode => serde_json::to_value(&state.mode),
        ChangedField::Planning => serde_json::to_value(&state.planning),
    };
    value.unwrap_or(Value::Null)
}

/// The fields whose values differ between two states, in `changed_fields` order.
pub fn changed_fields_between(before: &State, after: &State) -> Vec<ChangedField> {
    ChangedField::ALL
        .into_iter()
        .filter(|field| field_value(before, *field) != field_value(after, *field))
        .collect()
}

/// Moves the anchor of every graph node a wholesale replacement changed or added, and drops the
/// anchors of nodes it removed.
fn refresh_graph_anchors(
    anchors: &mut BTreeMap<String, Anchor>,
    before: &Graphs,
    after: &Graphs,
    anchor: &Anchor,
) {
    let mut live = BTreeSet::new();
    for ((kind, graph), (_, old_graph)) in after.each().into_iter().zip(before.each()) {
        let old: HashMap<&str, &GraphNode> =
            old_graph.nodes.iter().map(|n| (n.id.as_str(), n)).collect();
        for node in &graph.nodes {
            let key = node_anchor_key(kind, &node.id);
            let unchanged = old.get(node.id.as_str()).is_some_and(|old| *old == node);
            if !unchanged || !anchors.contains_key(&key) {
                anchors.insert(key.clone(), anchor.clone());
            }
            live.insert(key);
        }
    }
    anchors.retain(|key, _| key == CHECKPOINT_ANCHOR || live.contains(key));
}

/// Folds `records` (in fold order) from the empty state.
pub fn fold_all<'a>(records: impl IntoIterator<Item = &'a Record>, track_writers: bool) -> Folded {
    let mut fold = Fold::new(Base {
        writers: track_writers.then(Writers::new),
        ..Base::default()
    });
    for record in records {
        fold.push(record);
    }
    fold.finish()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::state::rollout::Body;
    use crate::state::rollout::Source;

    fn record(at: u32, parents: &[&Record], patch: Value) -> Record {
        let patch: Patch = serde_json::from_value(patch).expect("patch");
        let parents: Vec<String> = parents.iter().map(|p| p.id.clone()).collect();
        let head = format!("c{at}");
        Record::seal(&Body {
            parents: &parents,
            at: &format!("2026-01-01T00:00:{at:02}Z"),
            source: Source::Update,
            turn_id: None,
            git_head: Some(&head),
            changed_fields: &patch.changed_fields(),
            patch: Some(&patch),
            restore: None,
        })
        .0
    }

    fn node(id: &str, purpose: &str) -> Value {
        json!({"id": id, "title": id, "purpose": purpose})
    }

    fn observation(id: &str, summary: &str) -> Value {
        json!({"observations": [{"id": id, "summary": summary, "source_kind": "t", "status": "ok", "evidence_ids": ["e"]}]})
    }

    fn fold(records: &[&Record]) -> Folded {
        let ordered =
            crate::state::order::topological(records.iter().map(|r| (*r).clone()).collect());
        fold_all(&ordered, true)
    }

    #[test]
    fn appends_go_first_and_upserts_replace_in_place() {
        let a = record(
            0,
            &[],
            json!({"upsert": {"architecture_nodes": [node("lexer", "x"), node("parser", "y")]}}),
        );
        let b = record(
            1,
            &[&a],
            json!({"upsert": {"architecture_nodes": [node("lexer", "changed")]}}),
        );
        let c = record(2, &[&b], observation("o1", "first"));
        let d = record(3, &[&c], observation("o2", "second"));
        let folded = fold(&[&a, &b, &c, &d]);
        let nodes = &folded.state.graphs.architecture.nodes;
        assert_eq!(nodes.len(), 2);
        assert_eq!(
            (nodes[0].id.as_str(), nodes[0].purpose.as_str()),
            ("lexer", "changed")
        );
        let ids: Vec<&str> = folded
            .state
            .observations
            .iter()
            .map(|o| o.id.as_str())
            .collect();
        assert_eq!(ids, ["o2", "o1"]);
        assert_eq!(folded.state.revision, 4);
        let lexer = &folded.anchors[&node_anchor_key(GraphKind::Architecture, "lexer")];
        let parser = &folded.anchors[&node_anchor_key(GraphKind::Architecture, "parser")];
        assert_eq!((lexer.revision, parser.revision), (2, 1));
        assert!(folded.state.conflicts.is_empty());
    }

    #[test]
    fn concurrent_nodes_are_kept_and_the_same_node_is_a_conflict_until_rewritten() {
        let root = record(0, &[], json!({"objective": "o"}));
        let ours = record(
            1,
            &[&root],
            json!({"upsert": {"architecture_nodes": [node("a", "ours")]}}),
        );
        let theirs = record(
            2,
            &[&root],
            json!({"upsert": {"architecture_nodes": [node("b", "theirs")]}}),
        );
        let kept = fold(&[&root, &ours, &theirs]);
        assert_eq!(kept.state.graphs.architecture.nodes.len(), 2);
        assert!(kept.state.conflicts.is_empty());

        let clash = record(
            3,
            &[&root],
            json!({"upsert": {"architecture_nodes": [node("a", "clash")]}}),
        );
        let merged = fold(&[&root, &ours, &theirs, &clash]);
        assert_eq!(
            merged.state.conflicts.len(),
            1,
            "{:?}",
            merged.state.conflicts
        );
        let conflict = &merged.state.conflicts[0];
        assert_eq!(conflict.key, "architecture_nodes/a");
        assert_eq!(conflict.records, vec![ours.id.clone(), clash.id.clone()]);
        assert_eq!(conflict.chosen["purpose"], "clash");

        let resolved = record(
            4,
            &[&ours, &theirs, &clash],
            json!({"upsert": {"architecture_nodes": [node("a", "settled")]}}),
        );
        let settled = fold(&[&root, &ours, &theirs, &clash, &resolved]);
        assert!(
            settled.state.conflicts.is_empty(),
            "{:?}",
            settled.state.conflicts
        );
    }

    #[test]
    fn equal_concurrent_values_are_no_conflict_and_a_whole_field_overlaps_its_records() {
        let root = record(0, &[], json!({"objective": "o"}));
        let ours = record(1, &[&root], json!({"objective": "same"}));
        let theirs = record(2, &[&root], json!({"objective": "same"}));
        assert!(fold(&[&root, &ours, &theirs]).state.conflicts.is_empty());

        let whole = record(
            3,
            &[&root],
            json!({"graphs": {"architecture": {"nodes": [node("x", "x")]}}}),
        );
        let one = record(
            4,
            &[&root],
            json!({"upsert": {"architecture_nodes": [node("y", "y")]}}),
        );
        let merged = fold(&[&root, &whole, &one]);
        assert_eq!(merged.state.conflicts.len(), 1);
        assert_eq!(merged.state.conflicts[0].key, "architecture_nodes/y");
    }

    #[test]
    fn duplicate_appends_are_one_record_and_different_ones_a_conflict() {
        let root = record(0, &[], json!({"objective": "o"}));
        let ours = record(1, &[&root], observation("o1", "same"));
        let theirs = record(2, &[&root], observation("o1", "same"));
        let merged = fold(&[&root, &ours, &theirs]);
        assert_eq!(merged.state.observations.len(), 1);
        assert!(merged.state.conflicts.is_empty());

        let other = record(3, &[&root], observation("o1", "different"));
        let clashed = fold(&[&root, &ours, &other]);
        assert_eq!(clashed.state.observations.len(), 1);
        assert_eq!(clashed.state.observations[0].summary, "same");
        assert_eq!(clashed.state.conflicts[0].key, "observations/o1");
        let next = record(4, &[&ours, &other], json!({"objective": "p"}));
        assert!(
            fold(&[&root, &ours, &other, &next])
                .state
                .conflicts
                .is_empty()
        );
    }

    #[test]
    fn removes_drop_records_and_their_anchors() {
        let a = record(
            0,
            &[],
            json!({"upsert": {"architecture_nodes": [node("a", "x"), node("b", "y")],
                                                  "architecture_edges": [{"source_id": "a", "target_id": "b", "kind": "calls"}]}}),
        );
        let b = record(
            1,
            &[&a],
            json!({"remove": {"architecture_edges": [{"source_id": "a", "target_id": "b", "kind": "calls"}],
                                                    "architecture_nodes": ["b"]}}),
        );
        let folded = fold(&[&a, &b]);
        assert_eq!(folded.state.graphs.architecture.nodes.len(), 1);
        assert!(folded.state.graphs.architecture.edges.is_empty());
        assert!(
            !folded
                .anchors
                .contains_key(&node_anchor_key(GraphKind::Architecture, "b"))
        );
    }

    #[test]
    fn changed_fields_between_compares_values() {
        let before = State::default();
        let after = State {
            objective: Some("o".into()),
            ..State::default()
        };
        assert_eq!(
            changed_fields_between(&before, &after),
            vec![ChangedField::Objective]
        );
    }
}
