//! What each side of an open conflict wrote (docs/store.md#conflicts): the value each competing
//! record left for the conflict's key, and which side of a git merge it came from. Nothing
//! here decides how a conflict is settled: that is `policy::conflicts`.

use std::collections::BTreeMap;
use std::collections::BTreeSet;

use anyhow::Result;
use serde_json::Value;

use crate::state::fold::values_after;
use crate::state::git;
use crate::state::model::Conflict;
use crate::state::model::OpenConflict;
use crate::state::model::Side;
use crate::state::model::SideWrite;

use super::Store;

impl Store {
    /// What each record of `conflicts` (the head's) wrote, and on which side: one replay of
    /// the history, and one walk along HEAD's first-parent line for the segments holding them.
    pub fn open_conflicts(&self, conflicts: &[Conflict]) -> Result<Vec<OpenConflict>> {
        if conflicts.is_empty() {
            return Ok(Vec::new());
        }
        let history = self.sound_history()?;
        let mut wanted: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for conflict in conflicts {
            for record in &conflict.records {
                (wanted.entry(record.clone()).or_default()).push(conflict.key.clone());
            }
        }
        let values = values_after(&history.records, &wanted);
        let segment_of = |record: &str| history.lines.get(record).map(|(segment, _)| segment);
        let segments: BTreeSet<String> = (wanted.keys())
            .filter_map(|record| segment_of(record).cloned())
            .collect();
        let merged = git::merged_in(&self.rollout_dir(), &segments).unwrap_or_default();
        let at: BTreeMap<&str, &str> = (history.records.iter())
            .filter(|record| wanted.contains_key(&record.id))
            .map(|record| (record.id.as_str(), record.at.as_str()))
            .collect();
        let write = |key: &str, record: &String| SideWrite {
            record: record.clone(),
            at: at
                .get(record.as_str())
                .copied()
                .unwrap_or_default()
                .to_owned(),
            side: match segment_of(record).is_some_and(|segment| merged.contains(segment)) {
                true => Side::Theirs,
                false => Side::Ours,
            },
            value: (values.get(record).and_then(|keys| keys.get(key)).cloned())
                .unwrap_or(Value::Null),
        };
        Ok(conflicts
            .iter()
            .map(|conflict| OpenConflict {
                key: conflict.key.clone(),
                writes: (conflict.records.iter())
                    .map(|record| write(&conflict.key, record))
                    .collect(),
            })
            .collect())
    }
}
