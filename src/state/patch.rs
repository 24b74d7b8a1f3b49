//! Patches: the only way the state changes, and the envelope that carries them.
//!
//! Owns the patch shape (docs/writes.md#patch-shape, snake_case; its fields and collections are
//! listed once, in `state::fields`), which fields a patch changes (docs/writes.md#changed-fields),
//! and strict decoding from JSON: unknown fields and wrong types are reported all at once, each
//! with its path, instead of the first one only. It does not validate meaning (ids, references):
//! that is `policy::update`.

use std::borrow::Cow;

use serde::Deserialize;
use serde::Serialize;
use serde_json::Value;

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
        }

        /// The top-level patch field names: the state fields in `changed_fields` order, then
        /// the record-level writes.
        pub const PATCH_FIELDS: &[&str] = &[$(stringify!($name),)* "upsert", "remove"];

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
    /// Append lists count only when non-empty; a record-level write counts as the field it
    /// lives in.
    pub fn changed_fields(&self) -> Vec<ChangedField> {
        let keyed: std::collections::BTreeSet<ChangedField> = self
            .upsert
            .keys()
            .into_iter()
            .chain(self.remove.keys())
            .map(|(collection, _)| collection.field())
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
        !(fields && nodes_only && self.graphs.is_none() && self.remove.is_empty())
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

/// A JSON value's type as an error message names it (`a string`, `an object`, ...).
pub fn json_type_name(value: &Value) -> &'static str {
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
    use crate::state::model::ChurnState;

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
