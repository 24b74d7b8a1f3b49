//! What the rollback records of a replay from the empty state restore, planned before the
//! replay so it can hand each rollback its target fold. Must not fold the rollbacks themselves:
//! [`Fold`] does, once given their targets.

use foldhash::HashMap;
use foldhash::HashSet;

use crate::state::rollout::Record;

use super::Fold;
use super::Folded;
use super::fold_all;

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
/// among `records`; a parent that is not there (git removed it) is left out.
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
