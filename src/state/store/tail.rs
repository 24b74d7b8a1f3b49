//! The head from cached folds: the lines past one fold folded on top of it, two folds joined
//! when the lines past the newer one did not see all of it, and a merged-in branch grafted
//! onto the newest fold when both sides only appended.

use std::collections::BTreeMap;
use std::collections::BTreeSet;
use std::path::Path;
use std::path::PathBuf;

use anyhow::Result;
use foldhash::HashMap;
use foldhash::HashSet;

use crate::state::compaction::read_manifests;
use crate::state::compaction::remap_marks;
use crate::state::fold::Fold;
use crate::state::fs;
use crate::state::merge;
use crate::state::model::ListTotals;
use crate::state::model::State;
use crate::state::order::topological;
use crate::state::rollout::LineProblem;
use crate::state::rollout::Record;
use crate::state::segments::SegmentProblem;
use crate::state::segments::Segments;
use crate::state::snapshot;
use crate::state::snapshot::Parts;
use crate::state::snapshot::RolloutMark;
use crate::state::snapshot::SnapshotFile;
use crate::state::snapshot::StoredIds;

use super::SNAPSHOT_AFTER_BYTES;
use super::Store;
use super::is_not_found;
use super::read::Head;
use super::read::HeadRead;
use super::read::KnownIds;
use super::read::Remember;
use super::read::TailMetas;
use super::read::is_linear;
use super::read::within_tail;

/// A read that started from a snapshot caches its fold only when the lines it folded on top
/// are at least this share (1/N) of the snapshot's size: storing a fold costs about as much as
/// the snapshot is large, and a short tail over a large state costs later reads little.
const REMEMBER_TAIL_SHARE: u64 = 4;

/// What a snapshot can do for the records past its marks.
pub(super) enum Past {
    /// Every one descends from it: they fold on top of it.
    Descends(SnapshotFile, PastSnapshot),
    /// Some fork from its history instead (a branch git merged in): they can only be placed
    /// among its records ([`Store::head_from_graft`]).
    Forks(SnapshotFile),
}

/// The records past a snapshot's marks.
pub(super) struct PastSnapshot {
    /// In fold order.
    pub(super) records: Vec<Record>,
    /// Bytes of their lines (duplicates included).
    pub(super) bytes: u64,
}

/// Opens the snapshot at `path` for a read: `None` when it cannot serve (damaged), an error
/// when it is gone (a concurrent writer thinned it: the read lists again).
pub(super) fn open_candidate(path: &Path) -> Result<Option<SnapshotFile>> {
    match SnapshotFile::open(path) {
        Ok(snapshot) => Ok(Some(snapshot)),
        Err(err) if is_not_found(&err) => Err(err),
        Err(_) => Ok(None),
    }
}

impl Store {
    /// One snapshot and what it can do for the records past its marks, or `None` when it
    /// cannot serve these segments (damaged, or records it holds are gone).
    pub(super) fn past_snapshot(
        &self,
        segments: &mut Segments,
        path: &Path,
        within: Option<&[String]>,
    ) -> Result<Option<Past>> {
        match open_candidate(path)? {
            Some(snapshot) => self.past_opened(segments, snapshot, path, within),
            None => Ok(None),
        }
    }

    /// [`Store::past_snapshot`] of the snapshot at `path`, opened.
    fn past_opened(
        &self,
        segments: &mut Segments,
        mut snapshot: SnapshotFile,
        path: &Path,
        within: Option<&[String]>,
    ) -> Result<Option<Past>> {
        let marks: HashMap<&str, &RolloutMark> = snapshot
            .header
            .marks
            .iter()
            .map(|m| (m.segment.as_str(), m))
            .collect();
        // Every record the snapshot holds must still be where it says, or in the segment
        // a compaction moved it to (in this clone or another).
        let lengths = segments.lengths();
        let absent = (marks.iter())
            .find(|(name, mark)| lengths.get(**name).is_none_or(|len| *len < mark.end))
            .map(|(name, _)| (*name).to_owned());
        if let Some(name) = absent {
            let unlisted = (marks.keys()).any(|name| !lengths.contains_key(*name));
            let compacted = || read_manifests(&self.rollout_dir(), lengths);
            let moved = unlisted
                .then(|| remap_marks(&snapshot.header.marks, lengths, &compacted()))
                .flatten();
            drop(marks);
            if let Some(moved) = moved {
                // Cached with the marks moved, best effort: later reads read no manifest.
                if let Some(recached) = self.recache_moved(path, &snapshot, moved.clone()) {
                    return self.past_snapshot(segments, &recached, within);
                }
                snapshot.header.marks = moved;
                return self.past_opened(segments, snapshot, path, within);
            }
            return self.unless_lost(&snapshot, path, &name, segments);
        }
        let start = |name: &str| marks.get(name).map_or(0, |m| m.end);
        // Only the segments that grew past their marks (or have none) are read.
        let grown: Vec<String> = (lengths.iter())
            .filter(|(name, len)| **len != start(name))
            .map(|(name, _)| name.clone())
            .collect();
        for name in &grown {
            if let Some(mark) = marks.get(name.as_str())
                && !segments.mark_holds(mark)?
            {
                return self.unless_lost(&snapshot, path, name, segments);
            }
            if !segments.parse_from(name, start(name))? {
                // Name the line by its number in the whole segment.
                let history = self.history()?;
                let problem = history.problems.first().cloned().unwrap_or(SegmentProblem {
                    segment: name.clone(),
                    problem: LineProblem {
                        line: 0,
                        message: "a line past the newest snapshot is damaged".to_owned(),
                    },
                });
                return Err(self.corrupt_rollout(&problem));
            }
        }
        let tips: BTreeSet<String> = snapshot.header.tips.iter().cloned().collect();
        let (tail, tail_bytes) = segments.records_past(start);
        let tail = match within {
            None => tail,
            Some(within) => match within_tail(tail, within, &tips) {
                Some(kept) => kept,
                None => return Ok(None),
            },
        };
        let in_tail: HashSet<&str> = tail.iter().map(|record| record.id.as_str()).collect();
        // Usable only if every tail record descends from everything the snapshot holds: each
        // tail record whose parents are outside the tail names all the snapshot's heads.
        let usable = tail.iter().all(|record| {
            let inside = record.parents.iter().any(|p| in_tail.contains(p.as_str()));
            inside || tips.iter().all(|tip| record.parents.contains(tip))
        });
        if tail.iter().any(|r| tips.contains(&r.id)) {
            return Ok(None);
        }
        if !usable {
            return Ok(Some(Past::Forks(snapshot)));
        }
        let records = topological(tail.into_iter().cloned().collect());
        Ok(Some(Past::Descends(
            snapshot,
            PastSnapshot {
                records,
                bytes: tail_bytes,
            },
        )))
    }

    /// The head read from one snapshot and the lines past its marks, or `None` when the
    /// snapshot cannot serve these segments (damaged, records gone, or concurrent with records
    /// past it). When the records past it are many and not small beside the snapshot, the
    /// snapshot is loaded whole so that the fold can be remembered.
    /// `opened` is the snapshot at `path` when the caller opened it already.
    pub(super) fn head_from_snapshot(
        &self,
        segments: &mut Segments,
        path: &Path,
        opened: Option<SnapshotFile>,
        parts: Parts,
        remember: Remember,
        within: Option<&[String]>,
    ) -> Result<Option<Head>> {
        let Parts {
            lists,
            writers,
            ids: want_ids,
            ..
        } = parts;
        let Some(opened) = opened.map_or_else(|| open_candidate(path), |file| Ok(Some(file)))?
        else {
            return Ok(None);
        };
        let (snapshot, past) = match self.past_opened(segments, opened, path, within)? {
            Some(Past::Descends(snapshot, past)) => (snapshot, past),
            Some(Past::Forks(snapshot)) if within.is_none() => {
                return self.head_from_graft(segments, snapshot, parts);
            }
            _ => return Ok(None),
        };
        let PastSnapshot {
            records: ordered,
            bytes: tail_bytes,
        } = past;
        let tips: BTreeSet<String> = snapshot.header.tips.iter().cloned().collect();
        let needs_writers = writers || !is_linear(&tips, &ordered);
        // A rollback restores lists the snapshot's newest items do not tell: the lists are
        // loaded whole, and the fold is remembered so that later reads start past it.
        let restoring = ordered
            .iter()
            .any(|record| record.restored_tips().is_some());
        let remembering = within.is_none()
            && (restoring || self.worth_remembering(remember, path, ordered.len(), tail_bytes));
        let load = match remembering || restoring {
            true => Parts {
                writers: true,
                ..Parts::WHOLE
            },
            false => Parts {
                writers: needs_writers,
                ..parts
            },
        };
        let loaded = match snapshot.load(load) {
            Ok(loaded) => loaded,
            Err(err) if is_not_found(&err) => return Err(err),
            Err(_) => return Ok(None),
        };
        let (observations, evidence) = snapshot.list_counts()?;
        let stored_counts = StoredCounts {
            stored: (observations as usize, evidence as usize),
            loaded: (
                loaded.folded.state.observations.len(),
                loaded.folded.state.recent_evidence.len(),
            ),
        };
        let mut fold = Fold::new(loaded.folded, snapshot.header.records as usize);
        for record in &ordered {
            if let Some(tips) = record.restored_tips() {
                let target = self.read_within(Parts::WHOLE, Remember::Not, Some(tips))?;
                fold.provide_target(&record.id, target.into_folded());
            }
            fold.push(record);
        }
        let mut folded = fold.finish();
        let read = HeadRead {
            base: Some(path.to_path_buf()),
            tail_ids: ordered.iter().map(|r| r.id.clone()).collect(),
            tail_metas: TailMetas::Named(std::mem::take(&mut folded.metas)),
            tail_bytes,
            segments: segments.ends(&snapshot.header.marks)?,
            legacy: false,
        };
        if remembering && let Ok(covered) = read.covered() {
            self.remember(&mut folded, &covered, &read.segments);
        }
        let (totals, ids) = counted(
            &folded.state,
            load.lists.is_some(),
            stored_counts,
            loaded.ids,
        );
        let ids = ids.or_else(|| {
            lists
                .filter(|_| want_ids)
                .map(|_| KnownIds::whole(&folded.state))
        });
        Ok(Some(Head::folded(folded, lists, ids, totals, read)))
    }

    /// Whether a read that folded `records` (`bytes` of lines) on the snapshot at `path` should
    /// remember its fold: when asked to, the tail is long, and it is not small beside the
    /// snapshot (whose size is looked up only then).
    fn worth_remembering(
        &self,
        remember: Remember,
        path: &Path,
        records: usize,
        bytes: u64,
    ) -> bool {
        remember == Remember::Fold
            && (records >= self.snapshot_every || bytes >= SNAPSHOT_AFTER_BYTES)
            && fs::metadata_no_follow(path)
                .is_some_and(|snapshot| bytes.saturating_mul(REMEMBER_TAIL_SHARE) >= snapshot.len())
    }

    /// The head joined from the newest snapshot (`candidates[0]`) and the newest of the next
    /// `search` that holds records it lacks (the other branch of a merge), with the records
    /// past both, or `None` when `state::merge` cannot join them (anything but appends past
    /// the history they share) or either cannot serve these segments. Saves replaying both
    /// branches. `ours` is `candidates[0]`, opened.
    pub(super) fn head_from_two_snapshots(
        &self,
        segments: &mut Segments,
        candidates: &[PathBuf],
        ours: &SnapshotFile,
        search: usize,
        parts: Parts,
        remember: Remember,
    ) -> Result<Option<Head>> {
        let open = |path: &PathBuf| SnapshotFile::open(path).ok();
        let reach: BTreeMap<&str, u64> = (ours.header.marks.iter())
            .map(|mark| (mark.segment.as_str(), mark.end))
            .collect();
        let beyond_ours = |file: &SnapshotFile| {
            (file.header.marks.iter()).any(|mark| {
                reach
                    .get(mark.segment.as_str())
                    .is_none_or(|end| *end < mark.end)
            })
        };
        let Some(theirs) = (candidates.iter().skip(1).take(search))
            .filter_map(open)
            .find(|file| beyond_ours(file))
        else {
            return Ok(None);
        };
        let marks: Vec<RolloutMark> = (ours.header.marks.iter())
            .chain(&theirs.header.marks)
            .cloned()
            .collect();
        for mark in &marks {
            if !segments.mark_holds(mark)? {
                return Ok(None);
            }
        }
        let (Ok(ours_order), Ok(theirs_order)) = (ours.order(), theirs.order()) else {
            return Ok(None);
        };
        let (Ok(Some(ours_metas)), Ok(Some(theirs_metas))) = (ours.metas(), theirs.metas()) else {
            return Ok(None);
        };
        let folded: HashSet<&str> = (ours_order.iter())
            .chain(&theirs_order)
            .map(String::as_str)
            .collect();
        // Each segment is read from the furthest mark in it.
        let mut reached: HashMap<&str, u64> = HashMap::default();
        for mark in &marks {
            let end = reached.entry(mark.segment.as_str()).or_default();
            *end = (*end).max(mark.end);
        }
        let start = |name: &str| reached.get(name).copied().unwrap_or(0);
        let grown: Vec<(String, u64)> = (segments.lengths().iter())
            .filter(|(name, len)| **len > start(name))
            .map(|(name, _)| (name.clone(), start(name)))
            .collect();
        for (name, from) in grown {
            if !segments.parse_from(&name, from)? {
                // A damaged line: the replay names it.
                return Ok(None);
            }
        }
        let (mut tails, tail_bytes) = segments.records_past(start);
        tails.retain(|record| !folded.contains(record.id.as_str()));
        let whole = Parts {
            writers: true,
            ..Parts::WHOLE
        };
        let lists_only = Parts {
            graphs: false,
            ..Parts::WHOLE
        };
        let (Ok(ours_loaded), Ok(theirs_loaded)) = (ours.load(whole), theirs.load(lists_only))
        else {
            return Ok(None);
        };
        let side = |loaded: snapshot::Loaded, order: Vec<String>, metas| merge::Side {
            folded: loaded.folded,
            order,
            metas,
        };
        let Some(joined) = merge::join(
            side(ours_loaded, ours_order, ours_metas),
            side(theirs_loaded, theirs_order, theirs_metas),
            &tails,
        ) else {
            return Ok(None);
        };
        let read = HeadRead::joined(
            joined.order,
            joined.metas,
            tail_bytes,
            segments.ends(&marks)?,
        );
        let remember = remember == Remember::Fold;
        Ok(Some(self.whole_head(joined.folded, read, parts, remember)))
    }

    /// The head read from the snapshot `ours` (its marks checked and the lines past them
    /// parsed) and the records past it, some of which fork from its history instead of
    /// descending from it: a branch git merged in, of which this clone has no snapshot.
    /// `state::merge::graft` places the branch's records among the snapshot's own, so the
    /// read costs what the merge brought in, and as for any read from a snapshot only the
    /// newest list items are decoded. `None` when they cannot be placed that way (anything but
    /// appends past the fork).
    fn head_from_graft(
        &self,
        segments: &mut Segments,
        ours: SnapshotFile,
        parts: Parts,
    ) -> Result<Option<Head>> {
        let marks = &ours.header.marks;
        let reached: HashMap<&str, u64> = (marks.iter())
            .map(|mark| (mark.segment.as_str(), mark.end))
            .collect();
        let start = |name: &str| reached.get(name).copied().unwrap_or(0);
        let (tails, tail_bytes) = segments.records_past(start);
        let (Ok(order), Ok(Some(metas))) = (ours.order(), ours.metas()) else {
            return Ok(None);
        };
        let Some(shared) = merge::fork(&order, &metas, &tails) else {
            return Ok(None);
        };
        let cut = parts.lists.is_some();
        let (Ok(mut loaded), Ok((observations, evidence))) = (ours.load(parts), ours.list_counts())
        else {
            return Ok(None);
        };
        let known = loaded.ids.take();
        // A tail appending an id ours holds folds as a repeat: left to the replay.
        let holds_any = |observations: &[&str], evidence: &[&str]| match &known {
            Some(known) => known.holds_any(observations, evidence),
            None => (ours.holds_any(observations, evidence)).unwrap_or(true),
        };
        let side = merge::Side {
            folded: loaded.folded,
            order,
            metas,
        };
        let cut_lists = cut.then_some(&holds_any as &merge::HoldsAny);
        let Some(joined) = merge::graft(side, shared, &tails, cut_lists) else {
            return Ok(None);
        };
        let read = HeadRead::joined(
            joined.order,
            joined.metas,
            tail_bytes,
            segments.ends(marks)?,
        );
        if !cut {
            return Ok(Some(self.whole_head(joined.folded, read, parts, false)));
        }
        // The join refused repeated ids: the tails' items are new. Their ids are copied only
        // for a read that asked for every id (a write's).
        let patches = || tails.iter().filter_map(|record| record.patch.as_ref());
        let totals = ListTotals {
            observations: observations as usize
                + patches()
                    .map(|patch| patch.observations.len())
                    .sum::<usize>(),
            evidence: evidence as usize
                + patches().map(|patch| patch.evidence.len()).sum::<usize>(),
        };
        let ids = known.map(|stored| KnownIds {
            stored,
            observations: patches()
                .flat_map(|patch| patch.observations.iter().map(|o| o.id.clone()))
                .collect(),
            evidence: patches()
                .flat_map(|patch| patch.evidence.iter().map(|e| e.id.clone()))
                .collect(),
        });
        Ok(Some(Head::folded(
            joined.folded,
            parts.lists,
            ids,
            totals,
            read,
        )))
    }
}

/// How long the snapshot's lists were in full (`stored`, the counts its header keeps) and as
/// loaded (`loaded`, perhaps only their newest items), as (observations, evidence).
struct StoredCounts {
    stored: (usize, usize),
    loaded: (usize, usize),
}

/// The list totals of a state folded on a snapshot, and the ids it is known to hold when the
/// snapshot was loaded in part (`in_part`): the stored ids plus those the tail put at the
/// front of the lists (loaded in part means no rollback in the tail, so the lists only grew).
fn counted(
    state: &State,
    in_part: bool,
    counts: StoredCounts,
    stored: Option<StoredIds>,
) -> (ListTotals, Option<KnownIds>) {
    let StoredCounts {
        stored: (observations, evidence),
        loaded,
    } = counts;
    let totals = if in_part {
        ListTotals {
            observations: observations + state.observations.len() - loaded.0,
            evidence: evidence + state.recent_evidence.len() - loaded.1,
        }
    } else {
        // Loaded whole: the lists are the totals.
        ListTotals {
            observations: state.observations.len(),
            evidence: state.recent_evidence.len(),
        }
    };
    let ids = stored.map(|stored| KnownIds {
        stored,
        observations: state.observations[..totals.observations - observations]
            .iter()
            .map(|o| o.id.clone())
            .collect(),
        evidence: state.recent_evidence[..totals.evidence - evidence]
            .iter()
            .map(|e| e.id.clone())
            .collect(),
    });
    (totals, ids)
}
