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

use foldhash::HashMap;
use foldhash::HashMapExt;
use foldhash::HashSet;
use serde::Deserialize;
use serde::Serialize;
use serde_json::Value;
use sha2::Digest;
use sha2::Sha256;

use crate::state::fields::ChangedField;
use crate::state::fields::Collection;
use crate::state::fields::Keyed;
use crate::state::fields::for_each_collection;
use crate::state::fields::for_each_patch_field;
use crate::state::model::Conflict;
use crate::state::model::GraphKind;
use crate::state::model::GraphNode;
use crate::state::model::Graphs;
use crate::state::model::State;
use crate::state::order::Lineage;
use crate::state::patch::Patch;
use crate::state::patch::Recheck;
use crate::state::patch::Upsert;
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

/// What a snapshot keeps of one folded record, so that a read after a merge can join the
/// snapshots of both branches instead of replaying them (see `state::merge`). `P` names a
/// parent: an id while folding, a position in the fold order in a snapshot.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RecordMeta<P> {
    /// When the record was written (its `at`).
    #[serde(rename = "t")]
    pub at: String,
    /// Its parents.
    #[serde(rename = "p")]
    pub parents: Vec<P>,
    /// When it did nothing but place new items on the append lists: how many it placed on
    /// each (in the order of [`append_lengths`]). `None` when it did anything else, or when
    /// an item it appended was already there.
    #[serde(rename = "a")]
    pub appended: Option<Vec<u32>>,
}

/// `metas` with each parent named by its position in `order` (a parent not in it, brought
/// away by a cherry-pick, is left out: the fold order counts it as folded already).
pub fn placed(order: &[String], metas: &[RecordMeta<String>]) -> Vec<RecordMeta<u32>> {
    let positions: HashMap<&str, u32> = order
        .iter()
        .enumerate()
        .map(|(at, id)| (id.as_str(), at as u32))
        .collect();
    metas
        .iter()
        .map(|meta| RecordMeta {
            at: meta.at.clone(),
            parents: (meta.parents.iter())
                .filter_map(|parent| positions.get(parent.as_str()).copied())
                .collect(),
            appended: meta.appended.clone(),
        })
        .collect()
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
    /// What a snapshot keeps of each record this fold folded (not of its base), in order.
    pub metas: Vec<RecordMeta<String>>,
}

/// A fold in progress.
#[derive(Debug)]
pub struct Fold {
    state: State,
    anchors: BTreeMap<String, Anchor>,
    writers: Option<Writers>,
    lineage: Lineage,
    /// Ids appended by this fold's records, by append list: where the item sits in the
    /// (reversed) list and which record appended it.
    appended: HashMap<(ChangedField, String), (usize, String)>,
    /// Per keyed collection, record key to index in its list; rebuilt when stale.
    indexes: HashMap<Collection, HashMap<String, usize>>,
    conflicts: BTreeMap<String, Conflict>,
    last_git_head: Option<String>,
    metas: Vec<RecordMeta<String>>,
    /// The folds the rollback records still to come restore, by rollback record id.
    targets: HashMap<String, Folded>,
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
        reverse_append_lists(&mut state);
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
            metas: Vec::new(),
            targets: HashMap::new(),
        }
    }

    /// Gives the fold of the records that the rollback `record_id` restores: a rollback names
    /// them, and the reader that folds it finds their fold (from the records, or from a cached
    /// snapshot of them) before it folds the rollback.
    pub fn provide_target(&mut self, record_id: &str, target: Folded) {
        self.targets.insert(record_id.to_owned(), target);
    }

    /// The fold so far, as [`Fold::finish`] would end it (a copy: the fold goes on).
    pub fn peek(&self) -> Folded {
        let mut state = self.state.clone();
        reverse_append_lists(&mut state);
        state.conflicts = self.conflicts.values().cloned().collect();
        Folded {
            state,
            anchors: self.anchors.clone(),
            writers: self.writers.clone(),
            tips: self.lineage.tips().clone(),
            last_git_head: self.last_git_head.clone(),
            metas: Vec::new(),
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
        let before = append_lengths(&self.state);
        match (&record.restore, &record.patch) {
            (Some(restore), _) => self.restore(&mut step, restore),
            (None, Some(patch)) => self.apply(&mut step, patch),
            (None, None) => {}
        }
        let appended = match (&record.restore, &record.patch) {
            (None, Some(patch)) if patch.only_appends() => {
                let placed: Vec<u32> = append_lengths(&self.state)
                    .iter()
                    .zip(&before)
                    .map(|(after, before)| (after - before) as u32)
                    .collect();
                let given = patch_append_lengths(patch);
                (placed.iter().zip(&given).all(|(p, g)| *p as usize == *g)).then_some(placed)
            }
            _ => None,
        };
        self.metas.push(RecordMeta {
            at: record.at.clone(),
            parents: record.parents.clone(),
            appended,
        });
        self.settle(&step);
        self.state.revision = position as u64 + 1;
        self.state.last_updated_turn_id.clone_from(&record.turn_id);
        self.last_git_head.clone_from(&record.git_head);
    }

    /// Whether the records folded so far give exactly `folded` (its state, anchors, heads and,
    /// when this fold tracks them, live writers): what `verify` asks of a cached snapshot
    /// without ending the fold or copying its state.
    pub fn matches(&mut self, folded: &Folded) -> bool {
        reverse_append_lists(&mut self.state);
        self.state.conflicts = self.conflicts.values().cloned().collect();
        let same = self.state == folded.state
            && self.anchors == folded.anchors
            && self.lineage.tips() == &folded.tips
            && self.writers.as_ref().unwrap_or(&Writers::new())
                == folded.writers.as_ref().unwrap_or(&Writers::new());
        self.state.conflicts = Vec::new();
        reverse_append_lists(&mut self.state);
        same
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
            metas,
            ..
        } = self;
        reverse_append_lists(&mut state);
        state.conflicts = conflicts.into_values().collect();
        Folded {
            state,
            anchors,
            writers,
            tips: lineage.tips().clone(),
            last_git_head,
            metas,
        }
    }

    fn restore(&mut self, step: &mut Step<'_>, restore: &crate::state::rollout::Restore) {
        let before = std::mem::take(&mut self.state);
        let carried = restore
            .state
            .as_ref()
            .map(|state| (state.clone(), &restore.anchors));
        let (mut restored, anchors) = match carried {
            Some((state, anchors)) => (state, Some(anchors.clone())),
            None => {
                let target = self.targets.remove(&step.record.id).expect(
                    "the fold of the records a rollback names is provided before it is folded",
                );
                (target.state, Some(target.anchors))
            }
        };
        restored.conflicts = Vec::new();
        reverse_append_lists(&mut restored);
        self.state = restored;
        self.indexes.clear();
        self.appended.clear();
        match anchors {
            // A rollback of the first store format carried no anchors: the restored records
            // count as written now.
            Some(anchors) if anchors.is_empty() && restore.state.is_some() => {
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
            }
            Some(anchors) => self.anchors = anchors,
            None => {}
        }
        for field in ChangedField::ALL {
            let listed = step.record.changed_fields.contains(&field);
            if self.writers.is_some() {
                // The rollback replaces every field, not only those it listed: a field another
                // branch wrote meanwhile (which the rollback never saw) is overwritten too, and
                // that is a conflict, not a silent loss.
                let value = field.value_in(&self.state);
                if listed || field.value_in(&before) != value {
                    step.write(field.as_str().to_owned(), &value);
                }
            } else if listed {
                step.write_unhashed(field.as_str().to_owned());
            }
        }
    }

    fn apply(&mut self, step: &mut Step<'_>, patch: &Patch) {
        self.replace_fields(step, patch);
        for (collection, key) in patch.remove.keys() {
            self.remove_record(step, collection, &key);
        }
        self.upsert_records(step, &patch.upsert);
        self.append_fields(step, patch);
        self.recheck(step, &patch.recheck);
    }

    /// Moves the anchors of the re-checked records to this record, leaving their values as
    /// they are (a record that is not there has no anchor to move). A re-check writes no value,
    /// so it is never a conflict.
    fn recheck(&mut self, step: &Step<'_>, recheck: &Recheck) {
        let anchor = step.anchor();
        for (collection, kind, ids) in [
            (
                Collection::ArchitectureNodes,
                GraphKind::Architecture,
                &recheck.architecture_nodes,
            ),
            (
                Collection::DataflowNodes,
                GraphKind::Dataflow,
                &recheck.dataflow_nodes,
            ),
        ] {
            for id in ids {
                if self.index(collection).contains_key(id) {
                    self.anchors
                        .insert(node_anchor_key(kind, id), anchor.clone());
                }
            }
        }
        if recheck.investigation_checkpoint && self.state.investigation_checkpoint.is_some() {
            self.anchors.insert(CHECKPOINT_ANCHOR.to_owned(), anchor);
        }
    }

    /// Notes a wholesale replacement of `field` (its value `value`) before it is made: the
    /// write, the anchors it moves, and the record indexes it makes stale.
    fn replacing(
        &mut self,
        step: &mut Step<'_>,
        field: ChangedField,
        value: &impl Serialize,
        patch: &Patch,
    ) {
        if self.writers.is_some() {
            step.write(field.as_str().to_owned(), value);
        } else {
            step.write_unhashed(field.as_str().to_owned());
        }
        match field {
            ChangedField::Graphs => {
                if let Some(graphs) = &patch.graphs {
                    let anchor = step.anchor();
                    refresh_graph_anchors(&mut self.anchors, &self.state.graphs, graphs, &anchor);
                }
            }
            // The checkpoint's anchor moves only when the checkpoint changes.
            ChangedField::InvestigationCheckpoint
                if patch.investigation_checkpoint.is_some()
                    && self.state.investigation_checkpoint != patch.investigation_checkpoint =>
            {
                self.anchors
                    .insert(CHECKPOINT_ANCHOR.to_owned(), step.anchor());
            }
            _ => {}
        }
        self.indexes
            .retain(|collection, _| collection.field() != field);
    }

    fn anchor_checkpoint(&mut self, anchor: &Anchor) {
        if self.state.investigation_checkpoint.is_some() {
            self.anchors
                .insert(CHECKPOINT_ANCHOR.to_owned(), anchor.clone());
        } else {
            self.anchors.remove(CHECKPOINT_ANCHOR);
        }
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
        collection.remove_at(&mut self.state, at);
        if let Some(kind) = collection.node_kind() {
            self.anchors.remove(&node_anchor_key(kind, key));
        }
        self.indexes.remove(&collection);
    }

    /// The key-to-index map of a collection, built on first use.
    fn index(&mut self, collection: Collection) -> &mut HashMap<String, usize> {
        let state = &self.state;
        self.indexes.entry(collection).or_insert_with(|| {
            let keys = collection.keys_in(state);
            // With duplicate keys (never written by a valid patch) the first one is addressed.
            let mut index = HashMap::with_capacity(keys.len());
            for (at, key) in keys.into_iter().enumerate() {
                index.entry(key).or_insert(at);
            }
            index
        })
    }

    /// Adds new items (given newest first) to a reversed append list, once per id.
    fn append<T: Clone + PartialEq + Serialize + Keyed>(
        &mut self,
        step: &mut Step<'_>,
        which: ChangedField,
        items: &[T],
        list: impl Fn(&mut State) -> &mut Vec<T>,
    ) {
        for item in items.iter().rev() {
            let key = (which, item.record_key().into_owned());
            if let Some((at, first)) = self.appended.get(&key) {
                let existing = &list(&mut self.state)[*at];
                if existing != item {
                    let conflict_key = format!("{}/{}", which.as_str(), key.1);
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

// The fold's per-field code, derived from the one field list. The `@replace`, `@append` and
// `@reverse` arms pick the fields of one kind: each expands to nothing for the other kind.
macro_rules! fold_fields {
    (@replace replace $fold:ident $step:ident $patch:ident
        $variant:ident $name:ident $($wrap:ident)? ($slot:ident)) => {
        if let Some(value) = &$patch.$name {
            $fold.replacing($step, ChangedField::$variant, value, $patch);
            $fold.state.$slot = $($wrap)?(value.clone());
        }
    };
    (@replace append $($rest:tt)*) => {};
    (@append append $fold:ident $step:ident $patch:ident $variant:ident $name:ident $slot:ident) => {
        $fold.append($step, ChangedField::$variant, &$patch.$name, |s| &mut s.$slot);
    };
    (@append replace $($rest:tt)*) => {};
    (@reverse append $state:ident $slot:ident) => {
        $state.$slot.reverse();
    };
    (@reverse replace $($rest:tt)*) => {};
    (@length append $lengths:ident $of:ident $field:ident) => {
        $lengths.push($of.$field.len());
    };
    (@length replace $($rest:tt)*) => {};
    ($(
        $(#[doc = $doc:literal])*
        $kind:ident $variant:ident $name:ident: $ty:ty => $($wrap:ident)?($slot:ident);
    )*) => {
        impl Fold {
            /// Replaces the fields the patch replaces, in `changed_fields` order.
            #[allow(unused_parens)]
            fn replace_fields(&mut self, step: &mut Step<'_>, patch: &Patch) {
                $(fold_fields!(@replace $kind self step patch $variant $name $($wrap)? ($slot));)*
            }

            /// Places the patch's new items before the existing ones, list by list.
            fn append_fields(&mut self, step: &mut Step<'_>, patch: &Patch) {
                $(fold_fields!(@append $kind self step patch $variant $name $slot);)*
            }
        }

        /// Reverses every append list (newest first, or oldest first while folding).
        fn reverse_append_lists(state: &mut State) {
            $(fold_fields!(@reverse $kind state $slot);)*
        }

        /// The length of each append list of `state`, in field order.
        // The pushes are one per append field, which the field list decides.
        #[allow(clippy::vec_init_then_push)]
        pub fn append_lengths(state: &State) -> Vec<usize> {
            let mut lengths = Vec::new();
            $(fold_fields!(@length $kind lengths state $slot);)*
            lengths
        }

        /// How many items `patch` places on each append list, in field order.
        #[allow(clippy::vec_init_then_push)]
        pub fn patch_append_lengths(patch: &Patch) -> Vec<usize> {
            let mut lengths = Vec::new();
            $(fold_fields!(@length $kind lengths patch $name);)*
            lengths
        }
    };
}
for_each_patch_field!(fold_fields);

// The fold's per-collection code, derived from the one collection list.
macro_rules! fold_record_writes {
    ($(
        $variant:ident $name:ident($record:ty, $by:ty) in $field:ident at $($path:ident).+,
        $upsert_doc:literal, $remove_doc:literal;
    )*) => {
        impl Fold {
            /// Upserts the patch's records, collection by collection.
            fn upsert_records(&mut self, step: &mut Step<'_>, upsert: &Upsert) {
                $(
                    for record in &upsert.$name {
                        let key = record.record_key().into_owned();
                        let changed = self.upsert(
                            step,
                            Collection::$variant,
                            key.clone(),
                            record,
                            |s| &mut s.$($path).+,
                        );
                        if changed && let Some(kind) = Collection::$variant.node_kind() {
                            self.anchors.insert(node_anchor_key(kind, &key), step.anchor());
                        }
                    }
                )*
            }
        }
    };
}
for_each_collection!(fold_record_writes);

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
pub fn fold_all(records: &[Record], track_writers: bool) -> Folded {
    let mut fold = Fold::new(Base {
        writers: track_writers.then(Writers::new),
        ..Base::default()
    });
    let mut restores = Restores::plan(records, track_writers);
    for (at, record) in records.iter().enumerate() {
        restores.before(&mut fold, at);
        fold.push(record);
    }
    fold.finish()
}

/// What the rollback records of a replay from the empty state restore. A rollback names the
/// heads of the records it restores; when those records are the first ones of the replay
/// (as they are when nothing was merged in since), their fold is copied as the replay passes
/// that point; otherwise it is a replay of those records alone.
#[derive(Debug, Default)]
pub struct Restores {
    /// Rollback ids whose fold is the replay's first N records, by N.
    copies: HashMap<usize, Vec<String>>,
    /// Rollbacks at the position they are folded at, with their fold when it was replayed
    /// on its own.
    replayed: HashMap<usize, (String, Folded)>,
}

impl Restores {
    /// Plans the restores of the rollbacks among `records` (in fold order).
    pub fn plan(records: &[Record], track_writers: bool) -> Restores {
        let mut restores = Restores::default();
        let mut positions: Option<HashMap<&str, usize>> = None;
        for (at, record) in records.iter().enumerate() {
            let Some(tips) = record.restore.as_ref().and_then(|r| r.named_tips()) else {
                continue;
            };
            let positions = positions.get_or_insert_with(|| {
                (records.iter().enumerate())
                    .map(|(at, record)| (record.id.as_str(), at))
                    .collect()
            });
            let restored = ancestry(records, positions, tips);
            let prefix = restored
                .last()
                .is_none_or(|last| *last + 1 == restored.len());
            if prefix {
                restores
                    .copies
                    .entry(restored.len())
                    .or_default()
                    .push(record.id.clone());
            } else {
                let alone: Vec<Record> = restored.iter().map(|at| records[*at].clone()).collect();
                let folded = fold_all(&alone, track_writers);
                restores.replayed.insert(at, (record.id.clone(), folded));
            }
        }
        restores
    }

    /// Gives `fold`, which has folded the first `at` records, what the record at `at`
    /// restores (and copies what later rollbacks restore from this point).
    pub fn before(&mut self, fold: &mut Fold, at: usize) {
        for id in self.copies.remove(&at).unwrap_or_default() {
            fold.provide_target(&id, fold.peek());
        }
        if let Some((id, folded)) = self.replayed.remove(&at) {
            fold.provide_target(&id, folded);
        }
    }
}

/// The positions (in `records`, sorted) of the records `tips` name and all their ancestors
/// among `records`; a parent that is not there (cherry-picked away) is left out.
fn ancestry(records: &[Record], positions: &HashMap<&str, usize>, tips: &[String]) -> Vec<usize> {
    let mut seen: HashSet<usize> = HashSet::default();
    let mut stack: Vec<usize> = (tips.iter())
        .filter_map(|tip| positions.get(tip.as_str()).copied())
        .collect();
    while let Some(at) = stack.pop() {
        if seen.insert(at) {
            stack.extend(
                (records[at].parents.iter())
                    .filter_map(|parent| positions.get(parent.as_str()).copied()),
            );
        }
    }
    let mut restored: Vec<usize> = seen.into_iter().collect();
    restored.sort_unstable();
    restored
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::state::model::GraphKind;
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
}
