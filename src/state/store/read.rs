//! Reading the head: which cached fold to start from, the lines past it, and what a read
//! remembers. A fold is used only when every line it names is still in the rollout; records a
//! cached fold or the checked-out commit holds that the rollout lacks stop the read.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::collections::BTreeSet;
use std::path::Path;
use std::path::PathBuf;

use anyhow::Result;
use foldhash::HashMap;
use foldhash::HashSet;

use crate::state::error::StoreError;
use crate::state::fields::ChangedField;
use crate::state::fields::changed_fields_between;
use crate::state::fold::Folded;
use crate::state::fold::RecordMeta;
use crate::state::fold::Replay;
use crate::state::fold::Replayed;
use crate::state::fold::placed;
use crate::state::fs;
use crate::state::fs::Durability;
use crate::state::git;
use crate::state::model::ListTotals;
use crate::state::model::RecordIds;
use crate::state::model::State;
use crate::state::order::Placed;
use crate::state::rollout::Record;
use crate::state::segments::History;
use crate::state::segments::SegmentEnd;
use crate::state::segments::Segments;
use crate::state::snapshot;
use crate::state::snapshot::Anchor;
use crate::state::snapshot::Parts;
use crate::state::snapshot::RolloutMark;
use crate::state::snapshot::SnapshotFile;
use crate::state::snapshot::StoredIds;

use super::Store;
use super::WRITE_PARTS;
use super::is_not_found;
use super::tail::open_candidate;

/// The state at the head of the store, with what a write or a projection needs besides it.
#[derive(Debug, Clone)]
pub struct Head {
    /// The state.
    pub state: State,
    /// When each graph node and the investigation checkpoint was last written.
    pub anchors: BTreeMap<String, Anchor>,
    /// The records no other record names as a parent.
    pub tips: BTreeSet<String>,
    /// The commit checked out at the newest write, when in git.
    pub last_git_head: Option<String>,
    /// How many observations and evidence records the state holds (its lists may be cut to
    /// the newest when only those were asked for).
    pub totals: ListTotals,
    /// The live writers, when they were read.
    pub(super) writers: Option<crate::state::fold::Writers>,
    /// When the lists were cut short: the ids of every observation and evidence record.
    pub(super) ids: Option<KnownIds>,
    /// Where it was read from.
    pub(super) read: HeadRead,
}

/// Where a head was read from: what the next write appends to and whether it is due a
/// snapshot.
#[derive(Debug, Clone)]
pub(super) struct HeadRead {
    /// The snapshot the head was read from.
    pub(super) base: Option<PathBuf>,
    /// The records folded on top of it, in fold order.
    pub(super) tail_ids: Vec<String>,
    /// What a snapshot keeps of each of them.
    pub(super) tail_metas: TailMetas,
    /// Bytes of those records.
    pub(super) tail_bytes: u64,
    /// Every segment as read: where its complete part ends and its last line.
    pub(super) segments: BTreeMap<String, SegmentEnd>,
    /// The store is in the first format and is upgraded by the next write.
    pub(super) legacy: bool,
}

/// What a snapshot keeps of each record of a read's tail.
#[derive(Debug, Clone)]
pub(super) enum TailMetas {
    /// As a fold collects them: parents named by id.
    Named(Vec<RecordMeta<String>>),
    /// Parents named by position in the fold order, for a read without a base that placed
    /// every record itself (a joined merge).
    Placed(Vec<RecordMeta<u32>>),
}

impl HeadRead {
    /// A read without a base that placed every record itself (a joined or grafted merge):
    /// `order` and `metas` from `state::merge`.
    pub(super) fn joined(
        order: Vec<String>,
        metas: Vec<RecordMeta<u32>>,
        tail_bytes: u64,
        segments: BTreeMap<String, SegmentEnd>,
    ) -> HeadRead {
        HeadRead {
            base: None,
            tail_ids: order,
            tail_metas: TailMetas::Placed(metas),
            tail_bytes,
            segments,
            legacy: false,
        }
    }

    /// The records the head folds, as a snapshot of it keeps them: the base snapshot's, then
    /// the tail's (borrowed when there is no base).
    pub(super) fn covered(&self) -> Result<Covered<'_>> {
        let Some(base) = &self.base else {
            let metas = match &self.tail_metas {
                TailMetas::Named(named) => Cow::Owned(placed(&self.tail_ids, named)),
                TailMetas::Placed(metas) => Cow::Borrowed(metas.as_slice()),
            };
            return Ok(Covered {
                metas: (metas.len() == self.tail_ids.len()).then_some(metas),
                order: Cow::Borrowed(&self.tail_ids),
            });
        };
        let file = SnapshotFile::open(base)?;
        let (mut order, base_metas) = (file.order()?, file.metas()?);
        let base_len = order.len();
        order.extend(self.tail_ids.iter().cloned());
        let metas = match (base_metas, &self.tail_metas) {
            (Some(mut metas), TailMetas::Named(named))
                if metas.len() == base_len && named.len() == self.tail_ids.len() =>
            {
                metas.extend(placed(&order, named));
                Some(Cow::Owned(metas))
            }
            // An old snapshot without metas (a tail on a base is always named).
            _ => None,
        };
        Ok(Covered {
            order: Cow::Owned(order),
            metas,
        })
    }
}

/// The records a fold covers, as a snapshot keeps them.
pub(super) struct Covered<'a> {
    /// Their ids, in fold order.
    pub(super) order: Cow<'a, [String]>,
    /// What a snapshot keeps of each, when it is known for every one.
    pub(super) metas: Option<Cow<'a, [RecordMeta<u32>]>>,
}

impl Head {
    /// Whether any write has happened yet.
    pub fn has_state(&self) -> bool {
        self.state.revision > 0
    }

    /// The fields whose value differs in `other` (both read as a write reads: the
    /// observation and evidence lists compared by their totals and ids, not their items).
    pub fn changed_fields_to(&self, other: &Head) -> Vec<ChangedField> {
        let mut changed = changed_fields_between(&self.state, &other.state);
        let ids = |head: &Head, evidence: bool| -> BTreeSet<String> {
            match &head.ids {
                Some(ids) => {
                    let (stored, added) = match evidence {
                        false => (&ids.stored.observations, &ids.observations),
                        true => (&ids.stored.evidence, &ids.evidence),
                    };
                    stored.iter().chain(added).cloned().collect()
                }
                None if evidence => head
                    .state
                    .recent_evidence
                    .iter()
                    .map(|e| e.id.clone())
                    .collect(),
                None => head
                    .state
                    .observations
                    .iter()
                    .map(|o| o.id.clone())
                    .collect(),
            }
        };
        for (field, evidence, totals) in [
            (
                ChangedField::Observations,
                false,
                (self.totals.observations, other.totals.observations),
            ),
            (
                ChangedField::Evidence,
                true,
                (self.totals.evidence, other.totals.evidence),
            ),
        ] {
            let differs = totals.0 != totals.1 || ids(self, evidence) != ids(other, evidence);
            if differs && !changed.contains(&field) {
                changed.push(field);
            }
        }
        changed.sort();
        changed
    }

    /// The fold this head is (what a rollback to it restores).
    pub fn into_folded(self) -> Folded {
        Folded {
            state: self.state,
            anchors: self.anchors,
            writers: self.writers,
            tips: self.tips,
            last_git_head: self.last_git_head,
            metas: Vec::new(),
        }
    }

    /// The head a fold ended in, its lists cut to the newest `lists` when asked.
    pub(super) fn folded(
        folded: Folded,
        lists: Option<usize>,
        ids: Option<KnownIds>,
        totals: ListTotals,
        read: HeadRead,
    ) -> Head {
        Head {
            state: cut_lists(folded.state, lists),
            anchors: folded.anchors,
            tips: folded.tips,
            last_git_head: folded.last_git_head,
            totals,
            writers: folded.writers,
            ids,
            read,
        }
    }
}

/// Every observation and evidence id: the snapshot's, sorted, and those folded after it.
#[derive(Debug, Clone, Default)]
pub(super) struct KnownIds {
    pub(super) stored: StoredIds,
    pub(super) observations: HashSet<String>,
    pub(super) evidence: HashSet<String>,
}

impl KnownIds {
    /// The ids of a state whose lists are whole.
    pub(super) fn whole(state: &State) -> KnownIds {
        KnownIds {
            stored: StoredIds::of(state).owned(),
            ..KnownIds::default()
        }
    }
}

/// Whether the sorted list `ids` holds `id`.
fn sorted_contains(ids: &[String], id: &str) -> bool {
    ids.binary_search_by(|probe| probe.as_str().cmp(id)).is_ok()
}

impl RecordIds for Head {
    fn has_observation(&self, id: &str) -> bool {
        match &self.ids {
            Some(ids) => {
                ids.observations.contains(id) || sorted_contains(&ids.stored.observations, id)
            }
            None => self.state.has_observation(id),
        }
    }

    fn has_evidence(&self, id: &str) -> bool {
        match &self.ids {
            Some(ids) => ids.evidence.contains(id) || sorted_contains(&ids.stored.evidence, id),
            None => self.state.has_evidence(id),
        }
    }
}

impl Store {
    /// The head, with every record.
    pub fn head(&self) -> Result<Head> {
        self.read_head(Parts::WHOLE, Remember::Fold)
    }

    /// The head with only the newest `count` observations and evidence records decoded (the
    /// totals still count them all): what projections that show a few of them need. Its
    /// [`RecordIds`] answers only for the records it holds.
    pub fn head_with_newest(&self, count: usize) -> Result<Head> {
        self.read_head(
            Parts {
                lists: Some(count),
                ..Parts::WHOLE
            },
            Remember::Fold,
        )
    }

    pub(super) fn read_head(&self, parts: Parts, remember: Remember) -> Result<Head> {
        self.read_within(parts, remember, None)
    }

    /// The fold of the records `tips` name and every record before them (the state a
    /// rollback to them restores), with what a write needs of it: the core, the graphs and
    /// anchors, and the ids of every observation and evidence record.
    pub fn restored(&self, tips: &[String]) -> Result<Head> {
        self.read_within(WRITE_PARTS, Remember::Not, Some(tips))
    }

    /// The head, or with `within` the fold of the records it names and their ancestors only.
    pub(super) fn read_within(
        &self,
        parts: Parts,
        remember: Remember,
        within: Option<&[String]>,
    ) -> Result<Head> {
        self.read_listed(None, parts, remember, within)
    }

    /// [`Store::read_within`] over the segments `listed` (checked against what the commit
    /// holds, as [`Store::segments`] checks them) when given, listed here otherwise.
    pub(super) fn read_listed(
        &self,
        mut listed: Option<Segments>,
        parts: Parts,
        remember: Remember,
        within: Option<&[String]>,
    ) -> Result<Head> {
        // A concurrent writer may remove a snapshot between listing and opening it: retry,
        // listing again.
        let mut attempt = 0;
        loop {
            // Refused when the commit holds records the rollout lacks, so an empty or partial
            // rollout never reads as an empty or older state.
            let segments = match listed.take() {
                Some(segments) => segments,
                None => self.segments()?,
            };
            match self.try_read_head(segments, parts, remember, within) {
                Err(err) if attempt < 3 && is_not_found(&err) => attempt += 1,
                other => return other,
            }
        }
    }

    fn try_read_head(
        &self,
        mut segments: Segments,
        parts: Parts,
        remember: Remember,
        within: Option<&[String]>,
    ) -> Result<Head> {
        let legacy = self.is_legacy();
        if !legacy {
            let candidates = self.snapshot_candidates()?;
            // The newest is opened once for both ways of reading from it: its header holds a
            // mark per segment file, thousands of them after a year of commits.
            let mut newest = match candidates.first() {
                Some(path) => open_candidate(path)?,
                None => None,
            };
            // Right after a merge the two newest snapshots are the two branches': joining them
            // saves reading the newest one's tail, the whole other branch.
            let join =
                |segments: &mut Segments, ours: Option<&SnapshotFile>, search| match (within, ours)
                {
                    (None, Some(ours)) => self.head_from_two_snapshots(
                        segments,
                        &candidates,
                        ours,
                        search,
                        parts,
                        remember,
                    ),
                    _ => Ok(None),
                };
            if let Some(head) = join(&mut segments, newest.as_ref(), 1)? {
                return Ok(head);
            }
            for (at, candidate) in candidates.iter().enumerate() {
                let opened = newest.take().filter(|_| at == 0);
                if let Some(head) = self.head_from_snapshot(
                    &mut segments,
                    candidate,
                    opened,
                    parts,
                    remember,
                    within,
                )? {
                    return Ok(head);
                }
                // The newest snapshot cannot serve: the other branch's may be further down.
                if at == 0
                    && let Some(head) = join(
                        &mut segments,
                        SnapshotFile::open(candidate).ok().as_ref(),
                        candidates.len(),
                    )?
                {
                    return Ok(head);
                }
            }
        }
        let tail_bytes = segments.lengths().values().sum();
        let (ends, (mut folded, tail_ids)) = match legacy {
            true => (segments.ends(&[])?, self.replay(self.history()?, within)?),
            false => {
                // Every record is held until the replay reaches it: as its place and line,
                // decoded only for its turn (a fresh clone's first read holds 100,000).
                let mut segments = segments.placing();
                // Parsed up front so that the segment ends come from the parsed lines.
                for name in segments.lengths().keys().cloned().collect::<Vec<_>>() {
                    segments.parse_from(&name, 0)?;
                }
                let ends = segments.ends(&[])?;
                (ends, self.replay(segments.into_history()?, within)?)
            }
        };
        let read = HeadRead {
            base: None,
            tail_ids,
            tail_metas: TailMetas::Named(std::mem::take(&mut folded.metas)),
            tail_bytes,
            segments: ends,
            legacy,
        };
        let remember = remember == Remember::Fold
            && within.is_none()
            && !legacy
            && read.tail_ids.len() >= self.snapshot_every;
        Ok(self.whole_head(folded, read, parts, remember))
    }

    /// The fold of every record of `history` (of those `within` names and their ancestors,
    /// when given), with the ids it folded in order; refused when a line is damaged.
    fn replay<R: Replayed>(
        &self,
        mut history: History<R>,
        within: Option<&[String]>,
    ) -> Result<(Folded, Vec<String>)> {
        if let Some(problem) = history.problems.first() {
            return Err(self.corrupt_rollout(problem));
        }
        let records = std::mem::take(&mut history.records);
        drop(history);
        let records = match within {
            Some(tips) => restricted(records, tips),
            None => records,
        };
        let order = records.iter().map(|r| r.id().to_owned()).collect();
        let mut replay = Replay::new(&records, true);
        // Each record is dropped once folded: the state grows into the room it leaves.
        for record in records {
            replay.push(&record.record());
        }
        Ok((replay.finish(), order))
    }

    /// The head of a fold of every record (`read` has no base), its lists cut as `parts` asks
    /// (it always has the graphs and the writers); remembered first when `remember` says so.
    pub(super) fn whole_head(
        &self,
        mut folded: Folded,
        read: HeadRead,
        parts: Parts,
        remember: bool,
    ) -> Head {
        if remember && let Ok(covered) = read.covered() {
            self.remember(&mut folded, &covered, &read.segments);
        }
        let totals = ListTotals {
            observations: folded.state.observations.len(),
            evidence: folded.state.recent_evidence.len(),
        };
        let ids = (parts.lists)
            .filter(|_| parts.ids)
            .map(|_| KnownIds::whole(&folded.state));
        Head::folded(folded, parts.lists, ids, totals, read)
    }

    /// Caches the fold a read had to compute, so that the next read starts from it instead of
    /// folding the same records again (after a merge or in a fresh clone, every read would
    /// until the next write). Best effort: a cache that cannot be written (a read-only
    /// checkout) costs the next read time, nothing else.
    pub(super) fn remember(
        &self,
        folded: &mut Folded,
        covered: &Covered,
        segments: &BTreeMap<String, SegmentEnd>,
    ) {
        let _ = self.cache_fold(folded, covered, segments);
    }

    /// Writes `folded`, the fold of the records `covered` names as read up to `segments`, as a
    /// snapshot in `cache/snapshots/` (created below the store, refusing links), then thins the
    /// cache; answers the file's name. A cache: a crash may lose the file or leave it damaged,
    /// and a damaged snapshot is never served, so it is not synced (on a slow disk, a sync can
    /// cost more than the fold).
    pub(super) fn cache_fold(
        &self,
        folded: &mut Folded,
        covered: &Covered,
        segments: &BTreeMap<String, SegmentEnd>,
    ) -> Result<String> {
        let marks: Vec<RolloutMark> = segments
            .values()
            .filter_map(|end| end.mark.clone())
            .collect();
        let records = covered.order.len() as u64;
        let (name, bytes) = snapshot::encode(snapshot::Contents {
            folded,
            records,
            marks: &marks,
            order: &covered.order,
            metas: covered.metas.as_deref(),
            cached_at: git::settled_checkout(&self.root),
        })?;
        let dir = self.snapshot_dir();
        fs::create_dirs_below(&self.dir, &dir)?;
        fs::replace(&dir.join(&name), &bytes, Durability::Visible)?;
        self.thin_snapshots(&name, records);
        Ok(name)
    }

    /// `None`: the snapshot at `path` cannot serve, because records it holds (up to its mark
    /// in segment `segment`) are not in the rollout. Checking out another commit does that (the
    /// cache belongs to the clone, not to a commit); but while the work tree stands where the
    /// fold was cached (the same commit, HEAD not moved since), nothing git did explains it:
    /// the records were lost (a deleted or truncated segment, dropped lines), and reading on
    /// would serve an older state as if it were the head, and the next write would build on
    /// it. Elsewhere the records the checked-out commit holds must still be there.
    pub(super) fn unless_lost<T>(
        &self,
        snapshot: &SnapshotFile,
        path: &Path,
        segment: &str,
        segments: &Segments,
    ) -> Result<Option<T>> {
        let at_cached_checkout = snapshot.header.cached_at.is_some()
            && git::settled_checkout(&self.root) == snapshot.header.cached_at;
        if !at_cached_checkout {
            self.check_committed(segments)?;
            return Ok(None);
        }
        let name = path.file_name().unwrap_or_default().to_string_lossy();
        Err(StoreError::LostRecords {
            rollout: self.rollout_dir(),
            evidence: format!(
                "`{segment}` is gone or shorter than when this checkout folded its records (the cached fold `{name}` of {} records, cached where the work tree stands now, holds them)",
                snapshot.header.records
            ),
        }
        .into())
    }
}

/// Whether a read that folded many records past its snapshot stores the fold for the next
/// read (`cache/snapshots/`). Writes do not: the snapshot they are due is stored in
/// `snapshots/` for every clone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Remember {
    Fold,
    Not,
}

/// Of `tail` (the records past a snapshot whose heads are `snapshot_tips`), the ones `within`
/// names and their ancestors, in order; `None` when those do not include every record the
/// snapshot holds (a head of it is among them, or a parent of one of them: a head has no
/// descendant inside the snapshot, so a path from `within` to it leaves the tail right there).
pub(super) fn within_tail<'r>(
    tail: Vec<&'r Record>,
    within: &[String],
    snapshot_tips: &BTreeSet<String>,
) -> Option<Vec<&'r Record>> {
    let by_id: HashMap<&str, &Record> = tail.iter().map(|r| (r.id.as_str(), *r)).collect();
    let mut kept: HashSet<&str> = HashSet::default();
    let mut reached: HashSet<&str> = HashSet::default();
    let mut stack: Vec<&str> = within.iter().map(String::as_str).collect();
    while let Some(id) = stack.pop() {
        match by_id.get(id) {
            Some(record) if kept.insert(id) => {
                stack.extend(record.parents.iter().map(String::as_str));
            }
            Some(_) => {}
            None => {
                reached.insert(id);
            }
        }
    }
    snapshot_tips
        .iter()
        .all(|tip| reached.contains(tip.as_str()))
        .then(|| {
            tail.into_iter()
                .filter(|r| kept.contains(r.id.as_str()))
                .collect()
        })
}

/// Of `records` (in fold order), the ones `tips` name and their ancestors, in order.
fn restricted<R: Placed>(records: Vec<R>, tips: &[String]) -> Vec<R> {
    let by_id: HashMap<&str, &R> = records.iter().map(|r| (r.id(), r)).collect();
    let mut kept: HashSet<String> = HashSet::default();
    let mut stack: Vec<&str> = tips.iter().map(String::as_str).collect();
    while let Some(id) = stack.pop() {
        if let Some(record) = by_id.get(id)
            && kept.insert(id.to_owned())
        {
            stack.extend(record.parents());
        }
    }
    drop(by_id);
    records
        .into_iter()
        .filter(|r| kept.contains(r.id()))
        .collect()
}

/// Whether every record (in fold order) names all heads before it as parents.
pub(super) fn is_linear(base_tips: &BTreeSet<String>, ordered: &[Record]) -> bool {
    let mut tips = base_tips.clone();
    for record in ordered {
        if !tips.iter().all(|tip| record.parents.contains(tip)) {
            return false;
        }
        for parent in &record.parents {
            tips.remove(parent);
        }
        tips.insert(record.id.clone());
    }
    true
}

/// Keeps only the newest `count` observations and evidence records, when asked to.
pub(super) fn cut_lists(mut state: State, lists: Option<usize>) -> State {
    if let Some(count) = lists {
        state.observations.truncate(count);
        state.recent_evidence.truncate(count);
    }
    state
}
