//! The one deterministic order records fold in, and who descends from whom.
//!
//! Every clone computes the same state from the same set of records because the order depends
//! on nothing but the records: parents before children, and among records that are ready at
//! the same time, the earlier `at` first, then the smaller id. A parent that is not in the set
//! (git removed it: a revert, a rebase, a cherry-pick of the child alone) counts as already
//! folded.
//!
//! [`Lineage`] answers "did record A see record B when it was written?" for the records of one
//! fold, which is what tells a conflict (concurrent writes) from an overwrite (a later write).
//! Records folded before the fold started (those a snapshot already holds) are ancestors of
//! every record of the fold: the store only starts a fold from a snapshot when that holds.

use std::cmp::Reverse;
use std::collections::BTreeSet;
use std::collections::BinaryHeap;

use foldhash::HashMap;

use crate::state::rollout::Record;

/// What places a record in the fold order: its id, when it was written, and its parents.
pub trait Placed {
    /// The record's id.
    fn id(&self) -> &str;
    /// When it was written (RFC 3339, UTC).
    fn at(&self) -> &str;
    /// The ids of the records it was written on top of.
    fn parents(&self) -> impl Iterator<Item = &str>;
}

impl Placed for Record {
    fn id(&self) -> &str {
        &self.id
    }

    fn at(&self) -> &str {
        &self.at
    }

    fn parents(&self) -> impl Iterator<Item = &str> {
        self.parents.iter().map(String::as_str)
    }
}

/// Orders `records` (distinct ids) parents first, then by `at`, then by id.
pub fn topological<T: Placed>(mut records: Vec<T>) -> Vec<T> {
    let index: HashMap<&str, usize> = records
        .iter()
        .enumerate()
        .map(|(at, record)| (record.id(), at))
        .collect();
    // Every (parent, child) link between the records, sorted: a parent's children lie together.
    let mut links: Vec<(usize, usize)> = (records.iter().enumerate())
        .flat_map(|(child, record)| {
            (record.parents())
                .filter_map(|parent| index.get(parent))
                .map(move |parent| (*parent, child))
        })
        .collect();
    links.sort_unstable();
    links.dedup();
    let mut waiting = vec![0usize; records.len()];
    let mut first_link = vec![0usize; records.len() + 1];
    for &(parent, child) in &links {
        waiting[child] += 1;
        first_link[parent + 1] += 1;
    }
    for at in 0..records.len() {
        first_link[at + 1] += first_link[at];
    }
    let key = |at: usize| Reverse((records[at].at(), records[at].id(), at));
    let mut ready: BinaryHeap<_> = (0..records.len())
        .filter(|at| waiting[*at] == 0)
        .map(key)
        .collect();
    let mut order = Vec::with_capacity(records.len());
    while let Some(Reverse((_, _, at))) = ready.pop() {
        order.push(at);
        for &(_, child) in &links[first_link[at]..first_link[at + 1]] {
            waiting[child] -= 1;
            if waiting[child] == 0 {
                ready.push(key(child));
            }
        }
    }
    // Ids are content hashes, so a cycle cannot be written; a forged one is left out here and
    // reported by `verify` as records that never became ready.
    let placed = order.len();
    let mut rank = vec![usize::MAX; records.len()];
    for (position, at) in order.into_iter().enumerate() {
        rank[at] = position;
    }
    let mut unplaced = placed..;
    for slot in rank.iter_mut().filter(|slot| **slot == usize::MAX) {
        *slot = unplaced.next().expect("an unbounded range");
    }
    // Every record moves to its rank, in place: a swap puts one record where it belongs.
    for at in 0..records.len() {
        while rank[at] != at {
            let to = rank[at];
            records.swap(at, to);
            rank.swap(at, to);
        }
    }
    records.truncate(placed);
    records
}

/// The ancestry of the records of one fold, in fold order.
#[derive(Debug, Clone, Default)]
pub struct Lineage {
    /// Records folded before this fold started.
    base_len: usize,
    /// The heads among them.
    base_tips: BTreeSet<String>,
    /// Fold records by id, to their global position.
    positions: HashMap<String, usize>,
    /// Per fold record: its parents that are fold records, as global positions.
    parents: Vec<Vec<usize>>,
    /// Per fold record: the latest position at or below which every record is its ancestor.
    floors: Vec<Option<usize>>,
    /// The heads after the records pushed so far.
    tips: BTreeSet<String>,
}

impl Lineage {
    /// A lineage continuing `base_len` folded records whose heads are `base_tips`.
    pub fn new(base_len: usize, base_tips: BTreeSet<String>) -> Lineage {
        Lineage {
            base_len,
            tips: base_tips.clone(),
            base_tips,
            ..Lineage::default()
        }
    }

    /// Records folded, base included.
    pub fn len(&self) -> usize {
        self.base_len + self.parents.len()
    }

    /// The heads: records no other folded record names as a parent, sorted.
    pub fn tips(&self) -> &BTreeSet<String> {
        &self.tips
    }

    /// Adds the next record in fold order and returns its global position.
    pub fn push(&mut self, record: &Record) -> usize {
        let position = self.len();
        let parents: Vec<usize> = record
            .parents
            .iter()
            .filter_map(|parent| self.positions.get(parent).copied())
            .collect();
        let sees_everything = self.tips.iter().all(|tip| record.parents.contains(tip));
        let floor = if sees_everything {
            Some(position)
        } else {
            let from_base = (self.base_len > 0
                && self
                    .base_tips
                    .iter()
                    .all(|tip| record.parents.contains(tip)))
            .then(|| self.base_len - 1);
            parents
                .iter()
                .filter_map(|parent| self.floors[parent - self.base_len])
                .chain(from_base)
                .max()
        };
        for parent in &record.parents {
            self.tips.remove(parent);
        }
        self.tips.insert(record.id.clone());
        self.positions.insert(record.id.clone(), position);
        self.parents.push(parents);
        self.floors.push(floor);
        position
    }

    /// Whether the record at `position` descends from the record `ancestor` (a record of the
    /// base always counts as an ancestor).
    pub fn descends(&self, position: usize, ancestor: &str) -> bool {
        let Some(&target) = self.positions.get(ancestor) else {
            return true;
        };
        if target >= position {
            return false;
        }
        let floor_of = |at: usize| {
            if at < self.base_len {
                Some(at)
            } else {
                self.floors[at - self.base_len]
            }
        };
        let mut stack = vec![position];
        let mut seen = BTreeSet::new();
        while let Some(at) = stack.pop() {
            if at == target || floor_of(at).is_some_and(|floor| floor >= target) {
                return true;
            }
            if at < self.base_len || !seen.insert(at) {
                continue;
            }
            stack.extend(
                self.parents[at - self.base_len]
                    .iter()
                    .copied()
                    .filter(|parent| *parent >= target),
            );
        }
        false
    }

    /// The fold records' positions, by id.
    pub fn positions(&self) -> &HashMap<String, usize> {
        &self.positions
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::rollout::Body;
    use crate::state::rollout::Source;

    fn record(at: &str, parents: &[&Record]) -> Record {
        let parents: Vec<String> = parents.iter().map(|p| p.id.clone()).collect();
        let at_text = format!("2026-01-01T00:00:{at}Z");
        Record::seal(&Body {
            store: None,
            parents: &parents,
            at: &at_text,
            source: Source::Update,
            turn_id: Some(at),
            git_head: None,
            changed_fields: &[],
            patch: None,
            restore: None,
        })
        .0
    }

    fn turns(records: &[Record]) -> Vec<&str> {
        records
            .iter()
            .map(|r| r.turn_id.as_deref().unwrap_or(""))
            .collect()
    }

    #[test]
    fn parents_come_first_then_time_then_id() {
        let root = record("00", &[]);
        let ours = record("05", &[&root]);
        let theirs = record("03", &[&root]);
        let child_of_ours = record("01", &[&ours]);
        let merge = record("09", &[&child_of_ours, &theirs]);
        let shuffled = vec![
            merge.clone(),
            child_of_ours.clone(),
            ours.clone(),
            theirs.clone(),
            root.clone(),
        ];
        assert_eq!(
            turns(&topological(shuffled)),
            ["00", "03", "05", "01", "09"]
        );
        let orphan = record("02", &[&ours]);
        let without_parent = vec![orphan, root];
        assert_eq!(turns(&topological(without_parent)), ["00", "02"]);
    }

    #[test]
    fn every_arrangement_folds_in_one_order_and_a_forged_cycle_is_left_out() {
        let root = record("00", &[]);
        let a = record("04", &[&root]);
        let b = record("02", &[&root]);
        let c = record("03", &[&a, &b]);
        let d = record("01", &[&b]);
        let mut looped = record("05", &[&root]);
        let mut looped_too = record("06", &[&looped]);
        looped.parents.push(looped_too.id.clone());
        looped_too.parents.push(looped.id.clone());
        let after_loop = record("07", &[&looped_too]);
        let mut records = vec![root, a, b, c, d, looped, looped_too, after_loop];
        // Every rotation and its reverse: the order depends on the records, never on where
        // they started.
        for shift in 0..records.len() {
            for reversed in [false, true] {
                let mut arranged = records.clone();
                arranged.rotate_left(shift);
                if reversed {
                    arranged.reverse();
                }
                assert_eq!(
                    turns(&topological(arranged)),
                    ["00", "02", "01", "04", "03"],
                    "rotated by {shift}, reversed: {reversed}"
                );
            }
        }
        records.truncate(1);
        assert_eq!(turns(&topological(records)), ["00"]);
        assert!(topological(Vec::<Record>::new()).is_empty());
    }

    #[test]
    fn lineage_tells_concurrent_records_from_descendants() {
        let root = record("00", &[]);
        let a1 = record("01", &[&root]);
        let b1 = record("02", &[&root]);
        let a2 = record("03", &[&a1]);
        let merge = record("04", &[&a2, &b1]);
        let mut lineage = Lineage::new(0, BTreeSet::new());
        for r in [&root, &a1, &b1, &a2, &merge] {
            lineage.push(r);
        }
        assert!(lineage.descends(3, &a1.id));
        assert!(!lineage.descends(3, &b1.id));
        assert!(lineage.descends(4, &b1.id));
        assert!(lineage.descends(4, &a1.id));
        assert!(!lineage.descends(2, &a1.id));
        assert_eq!(lineage.tips().iter().collect::<Vec<_>>(), vec![&merge.id]);
    }

    #[test]
    fn base_records_are_ancestors_of_the_fold() {
        let base_tip = record("00", &[]);
        let next = record("01", &[&base_tip]);
        let mut lineage = Lineage::new(5, BTreeSet::from([base_tip.id.clone()]));
        assert_eq!(lineage.push(&next), 5);
        assert!(lineage.descends(5, &base_tip.id));
        assert!(lineage.descends(5, "anything folded before"));
    }
}
