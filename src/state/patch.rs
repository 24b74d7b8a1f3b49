//! Patches: the only way the state changes, and the envelope that carries them.
//!
//! Owns the patch shape (docs/writes.md#patch-shape, snake_case; its fields and collections are
//! listed once, in `state::fields`) and which fields a patch changes
//! (docs/writes.md#changed-fields). Strict decoding from JSON is `state::decode`'s; meaning (ids,
//! references) is `policy::update`'s.

use std::borrow::Cow;

use serde::Deserialize;
use serde::Serialize;

use crate::state::fields::ChangedField;
use crate::state::fields::Collection;
use crate::state::fields::Keyed;
use crate::state::fields::edge_key;
use crate::state::fields::for_each_collection;
use crate::state::fields::for_each_patch_field;
use crate::state::fields::link_key;

/// How a patch carries a field: an `Option` replaces the state's field when present, a `Vec`
/// places its items first when not empty.
pub trait Carried {
    /// Whether the patch leaves the field alone.
    fn is_absent(&self) -> bool;
}

impl<T> Carried for Option<T> {
    fn is_absent(&self) -> bool {
        self.is_none()
    }
}

impl<T> Carried for Vec<T> {
    fn is_absent(&self) -> bool {
        self.is_empty()
    }
}

macro_rules! define_patch {
    ($(
        $(#[doc = $doc:literal])*
        $kind:ident $variant:ident $name:ident: $ty:ty => $($wrap:ident)?($slot:ident);
    )*) => {
        /// One typed change to the state. Replacement fields replace wholesale when present;
        /// the append lists are placed before the existing records (newest first).
        #[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
        pub struct Patch {
            $(
                $(#[doc = $doc])*
                #[serde(default, skip_serializing_if = "Carried::is_absent")]
                pub $name: $ty,
            )*
            /// Insert or replace single records of keyed collections, by id.
            #[serde(default, skip_serializing_if = "Upsert::is_empty")]
            pub upsert: Upsert,
            /// Remove single records of keyed collections, by id.
            #[serde(default, skip_serializing_if = "Remove::is_empty")]
            pub remove: Remove,
            /// Re-anchor records at this write's commit without changing them.
            #[serde(default, skip_serializing_if = "Recheck::is_empty")]
            pub recheck: Recheck,
        }

        /// The top-level patch field names: the state fields in `changed_fields` order, then
        /// the record-level writes. Tests hold other lists of the fields to it.
        #[cfg(test)]
        pub const PATCH_FIELDS: &[&str] =
            &[$(stringify!($name),)* "upsert", "remove", "recheck"];

        impl Patch {
            /// Whether the patch carries `field` as a whole: a replacement, or items to place
            /// first (record-level writes aside).
            pub fn carries(&self, field: ChangedField) -> bool {
                match field {
                    $(ChangedField::$variant => !Carried::is_absent(&self.$name),)*
                }
            }
        }
    };
}
for_each_patch_field!(define_patch);

macro_rules! define_record_writes {
    ($(
        $variant:ident $name:ident($record:ty, $by:ty) in $field:ident at $($path:ident).+,
        $upsert_doc:literal, $remove_doc:literal;
    )*) => {
        /// Full records to insert, or to put in place of the record with the same key.
        #[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
        pub struct Upsert {
            $(
                #[doc = $upsert_doc]
                #[serde(default, skip_serializing_if = "Vec::is_empty")]
                pub $name: Vec<$record>,
            )*
        }

        impl Upsert {
            /// Whether it upserts nothing.
            pub fn is_empty(&self) -> bool {
                true $(&& self.$name.is_empty())*
            }

            /// The key of every record it upserts, with its collection, in patch order.
            pub fn keys(&self) -> Vec<(Collection, String)> {
                let mut keys = Vec::new();
                $(
                    keys.extend(
                        self.$name.iter().map(|record| (Collection::$variant, record.record_key().into_owned())),
                    );
                )*
                keys
            }
        }

        /// Records to remove, by key.
        #[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
        pub struct Remove {
            $(
                #[doc = $remove_doc]
                #[serde(default, skip_serializing_if = "Vec::is_empty")]
                pub $name: Vec<$by>,
            )*
        }

        impl Remove {
            /// Whether it removes nothing.
            pub fn is_empty(&self) -> bool {
                true $(&& self.$name.is_empty())*
            }

            /// The key of every record it removes, with its collection, in patch order.
            pub fn keys(&self) -> Vec<(Collection, String)> {
                let mut keys = Vec::new();
                $(
                    keys.extend(
                        self.$name.iter().map(|named| (Collection::$variant, named.record_key().into_owned())),
                    );
                )*
                keys
            }
        }
    };
}
for_each_collection!(define_record_writes);

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

impl Keyed for EdgeRef {
    fn record_key(&self) -> Cow<'_, str> {
        match self {
            EdgeRef::Id(id) => Cow::Borrowed(id),
            EdgeRef::Ends {
                source_id,
                target_id,
                kind,
            } => edge_key(None, source_id, target_id, kind),
        }
    }
}

/// Records that were read again and still hold: the write moves their anchors
/// (docs/store.md#anchors) to its own commit without changing them, so the staleness of what
/// changed before is cleared.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Recheck {
    /// Architecture node ids.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub architecture_nodes: Vec<String>,
    /// Dataflow node ids.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub dataflow_nodes: Vec<String>,
    /// The investigation checkpoint.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub investigation_checkpoint: bool,
}

impl Recheck {
    /// Whether it re-checks nothing.
    pub fn is_empty(&self) -> bool {
        self.architecture_nodes.is_empty()
            && self.dataflow_nodes.is_empty()
            && !self.investigation_checkpoint
    }

    /// The fields whose records it re-anchors, in `changed_fields` order.
    pub fn fields(&self) -> Vec<ChangedField> {
        let mut fields = Vec::new();
        if !self.architecture_nodes.is_empty() || !self.dataflow_nodes.is_empty() {
            fields.push(ChangedField::Graphs);
        }
        if self.investigation_checkpoint {
            fields.push(ChangedField::InvestigationCheckpoint);
        }
        fields
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

impl Keyed for LinkRef {
    fn record_key(&self) -> Cow<'_, str> {
        link_key(&self.dataflow_node_id, &self.architecture_node_id)
    }
}

impl Patch {
    /// The fields this patch touches (presence, not value change), in `changed_fields` order.
    /// Append lists count only when non-empty; a record-level write or re-check counts as the
    /// field it lives in.
    pub fn changed_fields(&self) -> Vec<ChangedField> {
        let keyed: std::collections::BTreeSet<ChangedField> = self
            .upsert
            .keys()
            .into_iter()
            .chain(self.remove.keys())
            .map(|(collection, _)| collection.field())
            .chain(self.recheck.fields())
            .collect();
        ChangedField::ALL
            .into_iter()
            .filter(|field| self.carries(*field) || keyed.contains(field))
            .collect()
    }

    /// Whether the patch only places new items on the append lists: no field replaced, no
    /// record upserted or removed.
    pub fn only_appends(&self) -> bool {
        self.upsert.is_empty()
            && self.remove.is_empty()
            && self.recheck.is_empty()
            && ChangedField::ALL
                .into_iter()
                .all(|field| field.is_append() || !self.carries(field))
    }

    /// Whether the patch replaces `field` whole.
    pub fn replaces(&self, field: ChangedField) -> bool {
        !field.is_append() && self.carries(field)
    }

    /// Whether the patch changes anything at all.
    pub fn is_empty(&self) -> bool {
        self.changed_fields().is_empty()
    }

    /// Whether the patch changes anything besides observations and evidence, the records
    /// `promote` gates (acceptance receipts and runtime links count as state changes).
    pub fn has_state_replacements(&self) -> bool {
        self.changed_fields()
            .iter()
            .any(|field| !matches!(field, ChangedField::Observations | ChangedField::Evidence))
    }

    /// Whether writing the patch needs the stored graphs and anchors. It does not when the
    /// patch only adds observations and evidence and upserts graph nodes: an upserted node
    /// keeps its id, so nothing that names it can break, and its own checks need only it.
    pub fn needs_stored_graphs(&self) -> bool {
        let fields = self.changed_fields().into_iter().all(|field| {
            matches!(
                field,
                ChangedField::Observations | ChangedField::Evidence | ChangedField::Graphs
            )
        });
        let nodes_only = self.upsert.keys().into_iter().all(|(collection, _)| {
            matches!(
                collection,
                Collection::ArchitectureNodes | Collection::DataflowNodes
            )
        });
        !(fields
            && nodes_only
            && self.graphs.is_none()
            && self.remove.is_empty()
            && self.recheck.is_empty())
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::model::ChurnState;

    #[test]
    fn changed_fields_follow_the_fixed_order() {
        let patch = Patch {
            evidence: vec![],
            churn: Some(Box::new(ChurnState {
                understanding_status: "u".into(),
                diff_pressure: "low".into(),
                graph_freshness: None,
                warning: None,
                unexplained_writes: None,
            })),
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
}
