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
//!
//! The fold lives in four parts: this module holds what a fold starts from, the fold in
//! progress and its result; `apply` what each record does to the state; `conflicts` the live
//! writers and conflicts; `replay` a fold of every record from the empty state, and what its
//! rollbacks restore.

mod apply;
mod conflicts;
mod replay;

pub use apply::append_lengths;
pub use apply::patch_append_lengths;
pub use conflicts::chosen_value;
pub use conflicts::is_append_key;
pub use conflicts::values_after;
pub use replay::Replay;
pub use replay::Replayed;
pub use replay::fold_all;

use std::collections::BTreeMap;
use std::collections::BTreeSet;

use foldhash::HashMap;
use foldhash::HashMapExt;
use serde::Deserialize;
use serde::Serialize;

use crate::state::fields::ChangedField;
use crate::state::fields::Collection;
use crate::state::model::Conflict;
use crate::state::model::State;
use crate::state::order::Lineage;
use crate::state::rollout::Record;
use crate::state::snapshot::Anchor;

use apply::reverse_append_lists;
use conflicts::value_hash;

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

/// The result of a fold, or what a fold starts from (the empty state, or a snapshot's fold).
#[derive(Debug, Clone, Default)]
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
    /// Starts a fold on top of `base`, the fold of `records` records (its metas are not
    /// kept: the new fold's are those of the records pushed onto it).
    pub fn new(base: Folded, records: usize) -> Fold {
        let Folded {
            mut state,
            anchors,
            writers,
            tips,
            last_git_head,
            ..
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

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::state::model::GraphKind;
    use crate::state::patch::Patch;
    use crate::state::rollout::Body;
    use crate::state::rollout::Source;
    use crate::state::snapshot::node_anchor_key;
    use serde_json::Value;

    fn record(at: u32, parents: &[&Record], patch: Value) -> Record {
        let patch: Patch = serde_json::from_value(patch).expect("patch");
        let parents: Vec<String> = parents.iter().map(|p| p.id.clone()).collect();
        let head = format!("c{at}");
        Record::seal(&Body {
            store: None,
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
