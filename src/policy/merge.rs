//! Merging two rollouts that grew apart from a common ancestor (the git merge driver's logic).
//!
//! The result is the common history, then our records unchanged, then their records replayed on
//! top: re-validated against the state our side produced, re-chained and renumbered. A real
//! conflict — both sides replacing the same field with different values, a rollback on one side
//! while the other side wrote, or a record of theirs that no longer validates — is reported with
//! a readable explanation instead of producing a store that would not verify.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::policy::text::truncate;
use crate::policy::update::check_update;
use crate::policy::update::state_problems;
use crate::state::model::State;
use crate::state::patch::ChangedField;
use crate::state::patch::Patch;
use crate::state::rollout::Record;
use crate::state::snapshot::Snapshot;

/// The records to append to our side, or why the sides cannot be merged.
pub type MergeResult = Result<Vec<Record>, Vec<String>>;

/// Merges `theirs` into `ours`, given the `base` they share. Returns their records, rewritten
/// to follow ours; appending them to our rollout gives the merged rollout.
pub fn merge_rollouts(base: &[Record], ours: &[Record], theirs: &[Record]) -> MergeResult {
    for (side, records) in [("our", ours), ("their", theirs)] {
        let shares_base =
            records.len() >= base.len() && base.iter().zip(records).all(|(a, b)| a.hash == b.hash);
        if !shares_base {
            return Err(vec![format!(
                "{side} rollout does not start with the common ancestor's records (its history was rewritten)"
            )]);
        }
    }
    let (ours_extra, theirs_extra) = (&ours[base.len()..], &theirs[base.len()..]);
    if ours_extra.is_empty() || theirs_extra.is_empty() {
        return Ok(theirs_extra.to_vec());
    }

    let mut conflicts = Vec::new();
    for (side, extra, other) in [
        ("our", ours_extra, theirs_extra),
        ("their", theirs_extra, ours_extra),
    ] {
        if let Some(rollback) = extra.iter().find(|r| r.restore.is_some()) {
            conflicts.push(format!(
                "{side} side rolled back (revision {}) while the other side wrote {} record(s); merge by hand: keep one side's `.epiphany/` and re-apply the other's patches with `epiphany update`",
                rollback.revision,
                other.len()
            ));
        }
    }
    if !conflicts.is_empty() {
        return Err(conflicts);
    }
    let (ours_state, theirs_state) = (fold(ours), fold(theirs));
    let ours_fields = replaced_fields(ours_extra);
    for field in replaced_fields(theirs_extra).intersection(&ours_fields) {
        let (mine, yours) = (
            field_value(&ours_state.state, *field),
            field_value(&theirs_state.state, *field),
        );
        if mine != yours {
            conflicts.push(format!(
                "both sides replaced `{}`: ours is {}, theirs is {}",
                field.as_str(),
                short_json(&mine),
                short_json(&yours)
            ));
        }
    }
    if !conflicts.is_empty() {
        return Err(conflicts);
    }

    let mut merged = ours_state;
    let mut appended = Vec::new();
    for record in theirs_extra {
        let Some(patch) = record
            .patch
            .clone()
            .map(|patch| without_duplicates(patch, &merged.state))
        else {
            continue;
        };
        if patch.is_empty() {
            continue;
        }
        if let Err(refusal) = check_update(&merged.state, &patch, None) {
            conflicts.push(format!(
                "their revision {} ({} at {}) no longer applies on top of ours: {refusal}",
                record.revision,
                record.source.as_str(),
                record.at
            ));
            continue;
        }
        let (sealed, line) = Record {
            seq: merged.rollout_seq + 1,
            revision: merged.state.revision.saturating_add(1),
            changed_fields: patch.changed_fields(),
            patch: Some(patch),
            restore: None,
            prev_hash: merged.rollout_hash.clone(),
            hash: String::new(),
            ..record.clone()
        }
        .seal();
        merged.advance(&sealed, line.len() as u64);
        appended.push(sealed);
    }
    conflicts.extend(
        state_problems(&merged.state)
            .into_iter()
            .map(|problem| format!("the merged state would be invalid: {problem}")),
    );
    if conflicts.is_empty() {
        Ok(appended)
    } else {
        Err(conflicts)
    }
}

fn fold(records: &[Record]) -> Snapshot {
    let mut snapshot = Snapshot::default();
    for record in records {
        let bytes = serde_json::to_string(record).map_or(0, |line| line.len() as u64 + 1);
        snapshot.advance(record, bytes);
    }
    snapshot
}

/// The replacement fields (not the append lists) the records wrote.
fn replaced_fields(records: &[Record]) -> std::collections::BTreeSet<ChangedField> {
    records
        .iter()
        .filter_map(|record| record.patch.as_ref())
        .flat_map(Patch::changed_fields)
        .filter(|field| !is_append_list(*field))
        .collect()
}

fn is_append_list(field: ChangedField) -> bool {
    matches!(
        field,
        ChangedField::Observations
            | ChangedField::Evidence
            | ChangedField::AcceptanceReceipts
            | ChangedField::RuntimeLinks
    )
}

/// The value of one state field, as JSON (the state's own serialization, so field names match).
fn field_value(state: &State, field: ChangedField) -> Value {
    let name = match field {
        ChangedField::Evidence => "recent_evidence",
        other => other.as_str(),
    };
    let mut all: BTreeMap<String, Value> = serde_json::to_value(state)
        .ok()
        .and_then(|value| serde_json::from_value(value).ok())
        .unwrap_or_default();
    all.remove(name).unwrap_or(Value::Null)
}

fn short_json(value: &Value) -> String {
    truncate(&value.to_string(), 120)
}

/// Drops observations and evidence that our side already recorded identically (both sides
/// distilled the same output, so the deterministic ids and contents agree).
fn without_duplicates(mut patch: Patch, state: &State) -> Patch {
    patch
        .observations
        .retain(|new| !state.observations.contains(new));
    patch
        .evidence
        .retain(|new| !state.recent_evidence.contains(new));
    patch
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::state::rollout::GENESIS_HASH;
    use crate::state::rollout::Source;

    /// Seals patches into a chain that continues `after`.
    fn chain(after: &[Record], patches: &[Value]) -> Vec<Record> {
        let mut snapshot = fold(after);
        let mut records = Vec::new();
        for patch in patches {
            let patch: Patch = serde_json::from_value(patch.clone()).expect("patch");
            let (record, line) = Record {
                seq: snapshot.rollout_seq + 1,
                revision: snapshot.state.revision + 1,
                at: "2026-01-01T00:00:00Z".into(),
                source: Source::Update,
                turn_id: None,
                git_head: None,
                changed_fields: patch.changed_fields(),
                patch: Some(patch),
                restore: None,
                prev_hash: snapshot.rollout_hash.clone(),
                hash: String::new(),
            }
            .seal();
            snapshot.advance(&record, line.len() as u64);
            records.push(record);
        }
        records
    }

    fn observation(id: &str) -> Value {
        json!({"observations": [{"id": format!("obs-{id}"), "summary": id, "source_kind": "test", "status": "ok", "evidence_ids": [format!("ev-{id}")]}],
               "evidence": [{"id": format!("ev-{id}"), "kind": "test", "status": "ok", "summary": id}]})
    }

    fn joined(a: &[Record], b: &[Record]) -> Vec<Record> {
        a.iter().chain(b).cloned().collect()
    }

    #[test]
    fn appends_from_both_sides_merge_and_rechain() {
        let base = chain(&[], &[json!({"objective": "o"})]);
        let ours = joined(&base, &chain(&base, &[observation("a")]));
        let theirs = joined(
            &base,
            &chain(
                &base,
                &[observation("b"), json!({"scratch": {"summary": "s"}})],
            ),
        );
        let appended = merge_rollouts(&base, &ours, &theirs).expect("merge");
        assert_eq!(appended.len(), 2);
        assert_eq!(appended[0].seq, 3);
        assert_eq!(appended[0].revision, 3);
        assert_eq!(appended[0].prev_hash, ours[1].hash);
        assert_eq!(appended[1].prev_hash, appended[0].hash);
        let merged = fold(&joined(&ours, &appended));
        let ids: Vec<&str> = merged
            .state
            .observations
            .iter()
            .map(|o| o.id.as_str())
            .collect();
        assert_eq!(ids, ["obs-b", "obs-a"]);
        assert_eq!(merged.state.revision, 4);
    }

    #[test]
    fn one_sided_histories_merge_trivially() {
        let base = chain(&[], &[json!({"objective": "o"})]);
        let theirs = joined(&base, &chain(&base, &[observation("b")]));
        assert_eq!(
            merge_rollouts(&base, &base, &theirs).expect("merge"),
            theirs[1..].to_vec()
        );
        assert!(
            merge_rollouts(&base, &theirs, &base)
                .expect("merge")
                .is_empty()
        );
        assert_eq!(base[0].prev_hash, GENESIS_HASH);
    }

    #[test]
    fn the_same_field_replaced_differently_is_a_conflict() {
        let base = chain(&[], &[json!({"objective": "o"})]);
        let ours = joined(&base, &chain(&base, &[json!({"objective": "ours"})]));
        let theirs = joined(&base, &chain(&base, &[json!({"objective": "theirs"})]));
        let conflicts = merge_rollouts(&base, &ours, &theirs).expect_err("conflict");
        assert_eq!(
            conflicts,
            vec!["both sides replaced `objective`: ours is \"ours\", theirs is \"theirs\""]
        );
        let same = joined(&base, &chain(&base, &[json!({"objective": "ours"})]));
        assert!(merge_rollouts(&base, &ours, &same).is_ok());
    }

    #[test]
    fn identical_distilled_records_are_not_duplicated() {
        let base = chain(&[], &[json!({"objective": "o"})]);
        let ours = joined(&base, &chain(&base, &[observation("same")]));
        let theirs = joined(&base, &chain(&base, &[observation("same")]));
        assert!(
            merge_rollouts(&base, &ours, &theirs)
                .expect("merge")
                .is_empty()
        );
    }

    #[test]
    fn a_record_that_no_longer_validates_is_a_conflict() {
        let base = chain(&[], &[json!({"objective": "o"})]);
        let ours = joined(&base, &chain(&base, &[observation("x")]));
        let mut clash = observation("x");
        clash["observations"][0]["summary"] = json!("different");
        clash["evidence"][0]["summary"] = json!("different");
        let theirs = joined(&base, &chain(&base, &[clash]));
        let conflicts = merge_rollouts(&base, &ours, &theirs).expect_err("conflict");
        assert!(
            conflicts[0]
                .starts_with("their revision 2 (update at 2026-01-01T00:00:00Z) no longer applies"),
            "{conflicts:?}"
        );
        assert!(conflicts[0].contains("already exists"), "{conflicts:?}");
    }

    #[test]
    fn rewritten_history_is_refused() {
        let base = chain(&[], &[json!({"objective": "o"})]);
        let other = chain(&[], &[json!({"objective": "p"})]);
        let conflicts = merge_rollouts(&base, &base, &other).expect_err("conflict");
        assert!(
            conflicts[0].contains("their rollout does not start with"),
            "{conflicts:?}"
        );
    }
}
