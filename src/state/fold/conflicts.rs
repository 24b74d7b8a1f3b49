//! Live writers and conflicts: after a record's writes, which writers still stand and which
//! keys are in conflict (docs/store.md#conflicts), with the value the fold order chose. Must
//! not change the state's values: `apply` wrote them, and the fold order picked them.

use serde::Serialize;
use serde_json::Value;
use sha2::Digest;
use sha2::Sha256;

use std::collections::BTreeMap;

use crate::state::fields::ChangedField;
use crate::state::fields::Collection;
use crate::state::model::Conflict;
use crate::state::rollout::Record;

use super::Fold;
use super::Replay;
use super::Step;
use super::Writer;
use super::Writers;

impl Fold {
    /// Records this step's writes: conflicts where a live writer was not seen, resolutions
    /// where every one was.
    pub(super) fn settle(&mut self, step: &Step<'_>) {
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
                    value: value.expect("with writers tracked, every write is hashed"),
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
                        .expect("a field's writer is a record folded before this one");
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
                .map_or(Value::Null, |field| field.value_in(&self.state));
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
        collection.value_at(&self.state, at)
    }
}

/// Replays `records` (in fold order) from the empty state and answers, for each record id
/// `wanted` names, the value each of its keys held right after that record folded: for a
/// record that wrote the key, what it wrote (`null` for a removal). Keyed by record id, then key.
pub fn values_after(
    records: &[Record],
    wanted: &BTreeMap<String, Vec<String>>,
) -> BTreeMap<String, BTreeMap<String, Value>> {
    let mut replay = Replay::new(records, false);
    let mut found: BTreeMap<String, BTreeMap<String, Value>> = BTreeMap::new();
    for record in records {
        replay.push(record);
        for key in wanted.get(&record.id).into_iter().flatten() {
            let value = replay.fold().key_value(key);
            (found.entry(record.id.clone()).or_default()).insert(key.clone(), value);
        }
    }
    found
}

/// Whether `key` names an item of an append list (`observations/obs-1`).
pub fn is_append_key(key: &str) -> bool {
    key.split_once('/').is_some_and(|(list, _)| {
        ChangedField::ALL
            .iter()
            .any(|field| field.is_append() && field.as_str() == list)
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
pub(super) fn value_hash(value: &impl Serialize) -> u64 {
    let bytes = serde_json::to_vec(value).expect("state values always serialize to JSON");
    let digest = Sha256::digest(&bytes);
    let mut first = [0u8; 8];
    first.copy_from_slice(&digest[..8]);
    u64::from_le_bytes(first)
}

/// The value a conflict reports as chosen: the value itself, or a note when it is large.
pub fn chosen_value(value: &impl Serialize, record: &str) -> Value {
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
