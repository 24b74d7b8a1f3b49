//! The one list of patch fields and the one list of keyed collections.
//!
//! Every per-field table is derived from `for_each_patch_field!`: the [`Patch`] struct, the
//! [`ChangedField`] enum and its names, which fields a patch carries, the fold's replacements
//! and appends, and each field's value in a [`State`]. Every per-collection table is derived
//! from `for_each_collection!`: the [`Collection`] enum, the `upsert` and `remove` structs,
//! their keys, the fold's record writes and the record lookups in a [`State`]. A field or a
//! collection is added in one place, and the compiler points at every match that must learn
//! about it.
//!
//! [`Patch`]: crate::state::patch::Patch

use std::borrow::Cow;

use serde::Deserialize;
use serde::Serialize;
use serde_json::Value;

use crate::state::model::GraphKind;
use crate::state::model::State;

/// Calls `$callback!` with every patch field, in `changed_fields` order (the order a patch
/// serializes in). Each entry: its doc, how the patch carries it (`replace`: an `Option` that
/// replaces the state's field when present; `append`: a `Vec` whose items go before the
/// existing ones, newest first), the [`ChangedField`] variant, the patch field (also its JSON
/// name and its name in `changed_fields`) with its type, and the state field it writes,
/// wrapped in `Some` when the state keeps it optional. The replaced structs of 96 bytes or
/// more are boxed: most records leave them out, and a replay holds every record's patch
/// (boxing them took `Patch` from 1,744 bytes to 888).
macro_rules! for_each_patch_field {
    ($callback:ident) => {
        $callback! {
            /// Replace the objective.
            replace Objective objective: Option<String> => Some(objective);
            /// Replace the active subgoal id.
            replace ActiveSubgoalId active_subgoal_id: Option<String> => Some(active_subgoal_id);
            /// Replace the subgoal list.
            replace Subgoals subgoals: Option<Vec<$crate::state::model::Subgoal>> => (subgoals);
            /// Replace the invariant list.
            replace Invariants invariants: Option<Vec<$crate::state::model::Invariant>>
                => (invariants);
            /// Replace the graphs.
            replace Graphs graphs: Option<Box<$crate::state::model::Graphs>> => (graphs);
            /// Replace the graph frontier.
            replace GraphFrontier graph_frontier: Option<Box<$crate::state::model::GraphFrontier>>
                => Some(graph_frontier);
            /// Replace the graph checkpoint.
            replace GraphCheckpoint graph_checkpoint: Option<Box<$crate::state::model::GraphCheckpoint>>
                => Some(graph_checkpoint);
            /// Replace the scratch pad.
            replace Scratch scratch: Option<Box<$crate::state::model::ScratchPad>> => Some(scratch);
            /// Replace the investigation checkpoint.
            replace InvestigationCheckpoint
                investigation_checkpoint: Option<Box<$crate::state::model::InvestigationCheckpoint>>
                => Some(investigation_checkpoint);
            /// Replace the job bindings.
            replace JobBindings job_bindings: Option<Vec<$crate::state::model::JobBinding>>
                => (job_bindings);
            /// Prepend acceptance receipts.
            append AcceptanceReceipts
                acceptance_receipts: Vec<$crate::state::model::AcceptanceReceipt>
                => (acceptance_receipts);
            /// Prepend runtime links.
            append RuntimeLinks runtime_links: Vec<$crate::state::model::RuntimeLink>
                => (runtime_links);
            /// Prepend observations.
            append Observations observations: Vec<$crate::state::model::Observation>
                => (observations);
            /// Prepend evidence records.
            append Evidence evidence: Vec<$crate::state::model::EvidenceRecord>
                => (recent_evidence);
            /// Replace the churn judgment.
            replace Churn churn: Option<Box<$crate::state::model::ChurnState>> => Some(churn);
            /// Replace the mode.
            replace Mode mode: Option<$crate::state::model::ModeState> => Some(mode);
            /// Replace the planning records.
            replace Planning planning: Option<Box<$crate::state::model::PlanningState>> => (planning);
        }
    };
}
pub(crate) use for_each_patch_field;

/// Calls `$callback!` with every keyed collection that record-level writes (`upsert`,
/// `remove`) address, in patch order. Each entry: the [`Collection`] variant, its key under
/// `upsert` and `remove`, the record type and the type `remove` names a record by, the
/// [`ChangedField`] it lives in, where it lives in the [`State`], and the docs of its `upsert`
/// and `remove` lists.
macro_rules! for_each_collection {
    ($callback:ident) => {
        $callback! {
            ArchitectureNodes architecture_nodes($crate::state::model::GraphNode, String)
                in Graphs at graphs.architecture.nodes,
                "Architecture nodes.", "Architecture node ids.";
            ArchitectureEdges architecture_edges($crate::state::model::GraphEdge, EdgeRef)
                in Graphs at graphs.architecture.edges,
                "Architecture edges.", "Architecture edges.";
            DataflowNodes dataflow_nodes($crate::state::model::GraphNode, String)
                in Graphs at graphs.dataflow.nodes,
                "Dataflow nodes.", "Dataflow node ids.";
            DataflowEdges dataflow_edges($crate::state::model::GraphEdge, EdgeRef)
                in Graphs at graphs.dataflow.edges,
                "Dataflow edges.", "Dataflow edges.";
            Links links($crate::state::model::GraphLink, LinkRef)
                in Graphs at graphs.links,
                "Links between dataflow and architecture nodes.", "Links.";
            Subgoals subgoals($crate::state::model::Subgoal, String)
                in Subgoals at subgoals,
                "Subgoals.", "Subgoal ids.";
            Invariants invariants($crate::state::model::Invariant, String)
                in Invariants at invariants,
                "Invariants.", "Invariant ids.";
            PlanningCaptures planning_captures($crate::state::model::PlanningCapture, String)
                in Planning at planning.captures,
                "Planning captures.", "Planning capture ids.";
            Backlog backlog($crate::state::model::BacklogItem, String)
                in Planning at planning.backlog_items,
                "Backlog items.", "Backlog item ids.";
            RoadmapStreams roadmap_streams($crate::state::model::RoadmapStream, String)
                in Planning at planning.roadmap_streams,
                "Roadmap streams.", "Roadmap stream ids.";
            ObjectiveDrafts objective_drafts($crate::state::model::ObjectiveDraft, String)
                in Planning at planning.objective_drafts,
                "Objective drafts.", "Objective draft ids.";
        }
    };
}
pub(crate) use for_each_collection;

/// `ALL`, every variant in the list's order (`changed_fields` order for fields, patch order
/// for collections), and `as_str`, its snake_case name as in JSON (and as a key under `upsert`
/// and `remove`), for an enum generated from one of the lists above.
macro_rules! variant_names {
    ($enum:ident { $($variant:ident $name:ident),* }) => {
        impl $enum {
            /// Every variant, in the list's order.
            pub const ALL: [$enum; [$(stringify!($name)),*].len()] = [$($enum::$variant),*];

            /// The snake_case name, as in JSON.
            pub fn as_str(self) -> &'static str {
                match self {
                    $($enum::$variant => stringify!($name),)*
                }
            }
        }
    };
}

macro_rules! define_changed_field {
    (@append append) => { true };
    (@append replace) => { false };
    ($(
        $(#[doc = $doc:literal])*
        $kind:ident $variant:ident $name:ident: $ty:ty => $($wrap:ident)?($slot:ident);
    )*) => {
        /// A state field a write changed, in the fixed order of `changed_fields`.
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
            $($variant,)*
        }

        variant_names!(ChangedField { $($variant $name),* });

        impl ChangedField {
            /// Whether a patch places new items before the existing ones (newest first)
            /// instead of replacing the field.
            pub fn is_append(self) -> bool {
                match self {
                    $(ChangedField::$variant => define_changed_field!(@append $kind),)*
                }
            }

            /// The name of the [`State`] field the patch field writes.
            #[cfg(test)]
            pub fn state_field(self) -> &'static str {
                match self {
                    $(ChangedField::$variant => stringify!($slot),)*
                }
            }

            /// The field's value in `state`, as JSON (the state's own serialization, so names
            /// match).
            pub fn value_in(self, state: &State) -> Value {
                let value = match self {
                    $(ChangedField::$variant => serde_json::to_value(&state.$slot),)*
                };
                value.expect("state fields always serialize to JSON")
            }

            /// Whether the field's value differs between two states. Compared as typed values,
            /// which is comparing their JSON (no state field skips, rewrites or rounds what it
            /// serializes) without building it: for a list of 100,000 records that cost as
            /// much as a read.
            pub fn differs(self, before: &State, after: &State) -> bool {
                match self {
                    $(ChangedField::$variant => before.$slot != after.$slot,)*
                }
            }
        }
    };
}
for_each_patch_field!(define_changed_field);

/// The fields whose values differ between two states, in `changed_fields` order.
pub fn changed_fields_between(before: &State, after: &State) -> Vec<ChangedField> {
    ChangedField::ALL
        .into_iter()
        .filter(|field| field.differs(before, after))
        .collect()
}

macro_rules! define_collection {
    ($(
        $variant:ident $name:ident($record:ty, $by:ty) in $field:ident at $($path:ident).+,
        $upsert_doc:literal, $remove_doc:literal;
    )*) => {
        /// A keyed collection that record-level writes (`upsert`, `remove`) address.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub enum Collection {
            $(#[doc = $upsert_doc] $variant,)*
        }

        variant_names!(Collection { $($variant $name),* });

        impl Collection {
            /// The state field the collection lives in.
            pub fn field(self) -> ChangedField {
                match self {
                    $(Collection::$variant => ChangedField::$field,)*
                }
            }

            /// The key of every record of the collection in `state`, in order.
            pub fn keys_in(self, state: &State) -> Vec<String> {
                match self {
                    $(Collection::$variant => {
                        state.$($path).+.iter().map(|record| record.record_key().into_owned()).collect()
                    })*
                }
            }

            /// Whether `state` has a record with `key` in the collection.
            pub fn contains(self, state: &State, key: &str) -> bool {
                match self {
                    $(Collection::$variant => {
                        state.$($path).+.iter().any(|record| record.record_key() == key)
                    })*
                }
            }

            /// The record at `at` in `state`, as JSON.
            pub fn value_at(self, state: &State, at: usize) -> Value {
                let value = match self {
                    $(Collection::$variant => serde_json::to_value(&state.$($path).+[at]),)*
                };
                value.expect("state records always serialize to JSON")
            }

            /// Removes the record at `at` from `state`.
            pub fn remove_at(self, state: &mut State, at: usize) {
                match self {
                    $(Collection::$variant => {
                        state.$($path).+.remove(at);
                    })*
                }
            }
        }
    };
}
for_each_collection!(define_collection);

impl Collection {
    /// The graph whose nodes the collection holds, for the two node collections.
    pub fn node_kind(self) -> Option<GraphKind> {
        match self {
            Collection::ArchitectureNodes => Some(GraphKind::Architecture),
            Collection::DataflowNodes => Some(GraphKind::Dataflow),
            _ => None,
        }
    }
}

/// What names a record of a keyed collection or of an append list: the record itself, or the
/// reference `remove` gives.
pub trait Keyed {
    /// The key: an id; for an edge without one `source->target:kind` (see [`edge_key`]); for a
    /// link its node pair (see [`link_key`]). Borrowed where the record holds it.
    fn record_key(&self) -> Cow<'_, str>;
}

/// The key of an edge: its id, or `source->target:kind` for an edge without one.
pub fn edge_key<'a>(
    id: Option<&'a str>,
    source_id: &str,
    target_id: &str,
    kind: &str,
) -> Cow<'a, str> {
    match id.filter(|id| !id.trim().is_empty()) {
        Some(id) => Cow::Borrowed(id),
        None => Cow::Owned(format!("{source_id}->{target_id}:{kind}")),
    }
}

/// The key of a link: `dataflow_node_id->architecture_node_id`.
pub fn link_key(dataflow_node_id: &str, architecture_node_id: &str) -> Cow<'static, str> {
    Cow::Owned(format!("{dataflow_node_id}->{architecture_node_id}"))
}

macro_rules! keyed_by_id {
    ($($ty:ident),*) => {$(
        impl Keyed for crate::state::model::$ty {
            fn record_key(&self) -> Cow<'_, str> {
                Cow::Borrowed(&self.id)
            }
        }
    )*};
}

keyed_by_id!(
    GraphNode,
    Subgoal,
    Invariant,
    PlanningCapture,
    BacklogItem,
    RoadmapStream,
    ObjectiveDraft,
    Observation,
    EvidenceRecord,
    AcceptanceReceipt,
    RuntimeLink
);

impl Keyed for crate::state::model::GraphEdge {
    fn record_key(&self) -> Cow<'_, str> {
        edge_key(
            self.id.as_deref(),
            &self.source_id,
            &self.target_id,
            &self.kind,
        )
    }
}

impl Keyed for crate::state::model::GraphLink {
    fn record_key(&self) -> Cow<'_, str> {
        link_key(&self.dataflow_node_id, &self.architecture_node_id)
    }
}

/// An id names the record with that id.
impl Keyed for String {
    fn record_key(&self) -> Cow<'_, str> {
        Cow::Borrowed(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The [`State`] fields no patch writes, each for its reason: `revision`, `last_updated_turn_id`
    /// and `conflicts` are the fold's (the count of writes, the last record's turn, what concurrent
    /// writes disagreed on). Every other field is a patch field; a test holds the two lists to the
    /// struct.
    const STATE_FIELDS_NO_PATCH_WRITES: [&str; 3] =
        ["revision", "last_updated_turn_id", "conflicts"];

    #[test]
    fn every_state_field_is_a_patch_field_or_listed_as_one_no_patch_writes() {
        let schema = schemars::schema_for!(State).to_value();
        let in_struct: std::collections::BTreeSet<&str> = schema["properties"]
            .as_object()
            .expect("State is an object")
            .keys()
            .map(String::as_str)
            .collect();
        let patched: Vec<&str> = ChangedField::ALL.map(ChangedField::state_field).to_vec();
        let accounted: std::collections::BTreeSet<&str> = patched
            .iter()
            .copied()
            .chain(STATE_FIELDS_NO_PATCH_WRITES)
            .collect();
        assert_eq!(
            in_struct, accounted,
            "a State field must be writable by a patch (for_each_patch_field!) or listed in \
             STATE_FIELDS_NO_PATCH_WRITES with its reason"
        );
        assert_eq!(
            patched.len() + STATE_FIELDS_NO_PATCH_WRITES.len(),
            in_struct.len(),
            "a field is both patched and listed as written by no patch, or patched twice"
        );
    }

    #[test]
    fn field_names_are_their_json_names() {
        for field in ChangedField::ALL {
            assert_eq!(
                serde_json::to_value(field).expect("serializes"),
                Value::String(field.as_str().to_owned())
            );
        }
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

    #[test]
    fn typed_differences_are_json_differences() {
        let written: State = serde_json::from_value(serde_json::json!({
            "revision": 3,
            "objective": "o",
            "graphs": {"architecture": {"nodes": [{"id": "lexer", "title": "Lexer",
                "purpose": "p", "code_refs": [{"path": "src/lexer.rs", "start_line": 1}]}]}},
            "observations": [{"id": "obs-1", "summary": "s", "source_kind": "t", "status": "ok"}],
            "recent_evidence": [{"id": "ev-1", "kind": "t", "status": "ok", "summary": "s"}],
        }))
        .expect("a state");
        let mut emptied = written.clone();
        emptied.observations.clear();
        emptied.graphs.architecture.nodes[0].code_refs.clear();
        let states = [State::default(), written, emptied];
        for before in &states {
            for after in &states {
                for field in ChangedField::ALL {
                    assert_eq!(
                        field.differs(before, after),
                        field.value_in(before) != field.value_in(after),
                        "{field:?}"
                    );
                }
            }
        }
    }

    #[test]
    fn every_collection_lives_in_a_replaceable_field() {
        for collection in Collection::ALL {
            assert!(!collection.field().is_append(), "{collection:?}");
        }
    }
}
