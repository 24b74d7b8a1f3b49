//! A replay: the fold of every record from the empty state, as a fresh clone's first read,
//! `verify` and a rollback's target need it. What its rollback records restore is planned
//! before it starts, so that each rollback is handed its target fold; [`Fold`] folds them.
//! The records may be held decoded or as their placed lines ([`Placement`]), decoded one at
//! a time as the replay reaches them.

use std::borrow::Cow;

use foldhash::HashMap;
use foldhash::HashSet;

use crate::state::order::Placed;
use crate::state::rollout::Placement;
use crate::state::rollout::Record;

use super::Fold;
use super::Folded;
use super::Writers;

/// A record as a replay holds it: decoded whole, or placed with its line and decoded when its
/// turn comes ([`Placement`]).
pub trait Replayed: Placed {
    /// See [`Record::restored_tips`].
    fn restored_tips(&self) -> Option<&[String]>;

    /// The whole record.
    fn record(&self) -> Cow<'_, Record>;
}

impl Replayed for Record {
    fn restored_tips(&self) -> Option<&[String]> {
        Record::restored_tips(self)
    }

    fn record(&self) -> Cow<'_, Record> {
        Cow::Borrowed(self)
    }
}

impl Replayed for Placement {
    fn restored_tips(&self) -> Option<&[String]> {
        self.restores.as_deref()
    }

    fn record(&self) -> Cow<'_, Record> {
        Cow::Owned(Placement::record(self))
    }
}

/// Folds `records` (in fold order) from the empty state.
pub fn fold_all<R: Replayed>(records: &[R], track_writers: bool) -> Folded {
    let mut replay = Replay::new(records, track_writers);
    for record in records {
        replay.push(&record.record());
    }
    replay.finish()
}

/// A fold from the empty state of records planned up front: each rollback among them is handed
/// its target when its turn comes. The records need not be held once it has started: a reader
/// of every record drops each as it is pushed.
#[derive(Debug)]
pub struct Replay {
    fold: Fold,
    restores: Restores,
    /// How many records were pushed.
    pushed: usize,
}

impl Replay {
    /// A replay of `records` (in fold order), keeping the live writers when asked.
    pub fn new<R: Replayed>(records: &[R], track_writers: bool) -> Replay {
        let base = Folded {
            writers: track_writers.then(Writers::new),
            ..Folded::default()
        };
        Replay {
            fold: Fold::new(base, 0),
            restores: Restores::plan(records, track_writers),
            pushed: 0,
        }
    }

    /// Folds the next record: the next of those the replay was planned for.
    pub fn push(&mut self, record: &Record) {
        self.restores.before(&mut self.fold, self.pushed);
        self.fold.push(record);
        self.pushed += 1;
    }

    /// The fold so far.
    pub fn fold(&mut self) -> &mut Fold {
        &mut self.fold
    }

    /// Ends the replay.
    pub fn finish(self) -> Folded {
        self.fold.finish()
    }
}

/// What the rollback records of a replay from the empty state restore. A rollback names the
/// heads of the records it restores; when those records are the first ones of the replay
/// (as they are when nothing was merged in since), their fold is copied as the replay passes
/// that point; otherwise it is a replay of those records alone.
#[derive(Debug, Default)]
struct Restores {
    /// Rollback ids whose fold is the replay's first N records, by N.
    copies: HashMap<usize, Vec<String>>,
    /// Rollbacks at the position they are folded at, with their fold when it was replayed
    /// on its own.
    replayed: HashMap<usize, (String, Folded)>,
}

impl Restores {
    /// Plans the restores of the rollbacks among `records` (in fold order).
    fn plan<R: Replayed>(records: &[R], track_writers: bool) -> Restores {
        let mut restores = Restores::default();
        let mut positions: Option<HashMap<&str, usize>> = None;
        for (at, record) in records.iter().enumerate() {
            let Some(tips) = record.restored_tips() else {
                continue;
            };
            let positions = positions.get_or_insert_with(|| {
                (records.iter().enumerate())
                    .map(|(at, record)| (record.id(), at))
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
                    .push(record.id().to_owned());
            } else {
                let alone: Vec<Record> = (restored.iter())
                    .map(|at| records[*at].record().into_owned())
                    .collect();
                let folded = fold_all(&alone, track_writers);
                restores
                    .replayed
                    .insert(at, (record.id().to_owned(), folded));
            }
        }
        restores
    }

    /// Gives `fold`, which has folded the first `at` records, what the record at `at`
    /// restores (and copies what later rollbacks restore from this point).
    fn before(&mut self, fold: &mut Fold, at: usize) {
        for id in self.copies.remove(&at).unwrap_or_default() {
            fold.provide_target(&id, fold.peek());
        }
        if let Some((id, folded)) = self.replayed.remove(&at) {
            fold.provide_target(&id, folded);
        }
    }
}

/// The positions (in `records`, sorted) of the records `tips` name and all their ancestors
/// among `records`; a parent that is not there (git removed it) is left out.
fn ancestry(
    records: &[impl Placed],
    positions: &HashMap<&str, usize>,
    tips: &[String],
) -> Vec<usize> {
    let mut seen: HashSet<usize> = HashSet::default();
    let mut stack: Vec<usize> = (tips.iter())
        .filter_map(|tip| positions.get(tip.as_str()).copied())
        .collect();
    while let Some(at) = stack.pop() {
        if seen.insert(at) {
            stack.extend(
                (records[at].parents()).filter_map(|parent| positions.get(parent).copied()),
            );
        }
    }
    let mut restored: Vec<usize> = seen.into_iter().collect();
    restored.sort_unstable();
    restored
}
