//! What a record does to the fold's state: a rollback's restore, a patch's replaced fields,
//! upserted and removed records and appended items, and the anchors they move. Each write is
//! noted on the step for `conflicts` to settle; this module must not decide conflicts itself,
//! nor read records other than the one it folds.

use std::collections::BTreeMap;
use std::collections::BTreeSet;

use foldhash::HashMap;
use foldhash::HashMapExt;
use serde::Serialize;
use serde_json::Value;

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
use crate::state::patch::Patch;
use crate::state::patch::Recheck;
use crate::state::patch::Upsert;
use crate::state::snapshot::Anchor;
use crate::state::snapshot::CHECKPOINT_ANCHOR;
use crate::state::snapshot::node_anchor_key;

use super::Fold;
use super::Step;
use super::conflicts::chosen_value;

impl Fold {
    /// Folds a rollback: the state becomes the one it restores (carried by the record, or the
    /// target fold provided for it) with its anchors, and every field it replaced is written.
    pub(super) fn restore(
        &mut self,
        step: &mut Step<'_>,
        restore: &crate::state::rollout::Restore,
    ) {
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
                if listed || field.differs(&before, &self.state) {
                    step.write(field.as_str().to_owned(), &field.value_in(&self.state));
                }
            } else if listed {
                step.write_unhashed(field.as_str().to_owned());
            }
        }
    }

    /// Folds a patch: its replaced fields, removed and upserted records, appended items and
    /// rechecks, in that order.
    pub(super) fn apply(&mut self, step: &mut Step<'_>, patch: &Patch) {
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
                    && self.state.investigation_checkpoint.as_ref()
                        != patch.investigation_checkpoint.as_deref() =>
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
    pub(super) fn index(&mut self, collection: Collection) -> &mut HashMap<String, usize> {
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
}

// The fold's per-field code, derived from the one field list. The `@replace`, `@append` and
// `@reverse` arms pick the fields of one kind: each expands to nothing for the other kind.
macro_rules! fold_fields {
    (@replace replace $fold:ident $step:ident $patch:ident
        $variant:ident $name:ident $($wrap:ident)? ($slot:ident)) => {
        if let Some(value) = &$patch.$name {
            $fold.replacing($step, ChangedField::$variant, value, $patch);
            $fold.state.$slot = $($wrap)?(owned(value));
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
        pub(super) fn reverse_append_lists(state: &mut State) {
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

/// A patch's value as the state keeps it: a patch boxes its large fields (a record's patch
/// leaves most of them out, and every parsed record holds one), the state does not.
fn owned<T: Clone>(value: &impl std::borrow::Borrow<T>) -> T {
    value.borrow().clone()
}
