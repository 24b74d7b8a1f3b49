//! Joining the snapshots of two branches after git merged them, or one snapshot with the
//! records of a branch of which no snapshot exists ([`graft`]).
//!
//! The state of a merge is the fold of every record in the one deterministic order
//! (`state::order`), which interleaves the two branches' records; folding them again costs as
//! much as both branches wrote. This module computes the same state from the two branches'
//! snapshots (and the records past both) when that is provably the same: when every record
//! written after the history both snapshots share did nothing but place new items on the
//! append lists (observations, evidence, receipts, runtime links), and no item id appears
//! twice. Such records commute except for where their items sit, and the snapshots keep enough
//! of each record (`RecordMeta`: when it was written, its parents, how many items it placed)
//! to put every item where the fold would have. Anything else answers `None`, and the caller
//! replays the records.
//!
//! A branch known only by its records is a side whose records past the shared history are
//! all "past both snapshots": [`fork`] finds the shared history as the records of ours that
//! every incoming record descends from, which fold before all of them.
//!
//! Why the shared history comes first and each branch keeps its own order: a snapshot folds
//! every record its parents lead to, so the fold order restricted to one snapshot's records is
//! that snapshot's own order; when the records both share are the first of both orders, they
//! are the first of the merged order too, and the rest is the fold order of the records past
//! them (`order::topological`, which counts the shared ones as folded).

use std::collections::BTreeSet;

use foldhash::HashMap;
use foldhash::HashSet;
use foldhash::HashSetExt;

use crate::state::fields::Keyed;
use crate::state::fields::for_each_patch_field;
use crate::state::fold::Folded;
use crate::state::fold::RecordMeta;
use crate::state::fold::is_append_key;
use crate::state::fold::patch_append_lengths;
use crate::state::model::State;
use crate::state::order::Placed;
use crate::state::order::topological;
use crate::state::rollout::Record;

/// One branch's snapshot, loaded whole.
#[derive(Debug)]
pub struct Side {
    /// Its fold, every list whole.
    pub folded: Folded,
    /// Its records' ids, in fold order.
    pub order: Vec<String>,
    /// What it keeps of each record, in the same order.
    pub metas: Vec<RecordMeta<u32>>,
}

/// The state of the merge, with the records it folds.
#[derive(Debug)]
pub struct Joined {
    /// The fold of every record.
    pub folded: Folded,
    /// Their ids, in fold order.
    pub order: Vec<String>,
    /// What a snapshot keeps of each, in the same order (parents by position in it).
    pub metas: Vec<RecordMeta<u32>>,
}

/// Where a record past the shared history comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Origin {
    /// The `n`th record of ours past the shared history.
    Ours(usize),
    /// The `n`th record of theirs past the shared history.
    Theirs(usize),
    /// The `n`th record past both snapshots.
    Tail(usize),
}

/// A record past the shared history, as the fold order places it (borrowed from its side or
/// its line).
struct Pending<'a> {
    id: &'a str,
    at: &'a str,
    /// A side's record names its parents by position in its side's `order`.
    parent_positions: &'a [u32],
    order: &'a [String],
    /// A tail record names them by id.
    parent_ids: &'a [String],
    from: Origin,
}

impl Placed for Pending<'_> {
    fn id(&self) -> &str {
        self.id
    }

    fn at(&self) -> &str {
        self.at
    }

    fn parents(&self) -> impl Iterator<Item = &str> {
        (self.parent_positions.iter())
            .map(|at| self.order[*at as usize].as_str())
            .chain(self.parent_ids.iter().map(String::as_str))
    }
}

/// What joining the lists needs: how many items each record placed on each list, and the
/// order the records past the shared history fold in.
struct Plan<'a> {
    ours: Vec<&'a [u32]>,
    theirs: Vec<&'a [u32]>,
    tails: &'a [&'a Record],
    folded: Vec<Origin>,
    /// Ours' lists hold only their newest items.
    cut: bool,
}

/// The fold of `ours`, `theirs` and `tails` (the records past both snapshots, distinct and
/// in neither), or `None` when it cannot be had without replaying them. Both sides' ids and
/// metas move into the result; nothing of theirs is copied.
pub fn join(ours: Side, theirs: Side, tails: &[&Record]) -> Option<Joined> {
    if theirs.metas.len() != theirs.order.len() {
        return None;
    }
    let shared = (ours.order.iter())
        .zip(&theirs.order)
        .take_while(|(a, b)| a == b)
        .count();
    join_from(shared, ours, Some(theirs), tails, false)
}

/// Where `tails`, the records past the snapshot `ours` (its records' ids in fold order and
/// their metas), fork from its history when some do not descend from it (the first read after
/// git merged a branch this clone holds no snapshot of): the most of ours' first records that
/// every tail folds after, because it names the last of them (or a record past them, or a
/// tail that does). `None` when a tail names a record neither holds, starts a history of its
/// own, or ours holds a tail.
pub fn fork(order: &[String], metas: &[RecordMeta<u32>], tails: &[&Record]) -> Option<usize> {
    let tail_ids: HashSet<&str> = tails.iter().map(|record| record.id.as_str()).collect();
    let mut positions: HashMap<&str, usize> = (tails.iter())
        .flat_map(|record| record.parents.iter().map(String::as_str))
        .filter(|id| !tail_ids.contains(id))
        .map(|id| (id, usize::MAX))
        .collect();
    for (at, id) in order.iter().enumerate() {
        if tail_ids.contains(id.as_str()) {
            return None;
        }
        if let Some(position) = positions.get_mut(id.as_str()) {
            *position = at;
        }
    }
    if metas.len() != order.len() || positions.values().any(|at| *at == usize::MAX) {
        return None;
    }
    // A tail whose parents are all ours' folds after its newest parent at the earliest.
    (tails.iter())
        .filter(|record| {
            record
                .parents
                .iter()
                .all(|p| !tail_ids.contains(p.as_str()))
        })
        .map(|record| {
            (record.parents.iter())
                .map(|parent| positions[parent.as_str()] + 1)
                .max()
        })
        .min()?
}

/// Whether a side's whole lists hold any of some observation ids (first) or evidence ids.
pub type HoldsAny<'a> = dyn Fn(&[&str], &[&str]) -> bool + 'a;

/// The fold of `ours` and `tails`, records past ours that fork from its history after its
/// first `shared` records ([`fork`]): the join of ours with a branch of which only records
/// past any snapshot exist. With `cut`, ours' observation and evidence lists hold only their
/// newest items, and `cut` tells whether the whole lists hold any of some observation or
/// evidence ids; the result's lists are then as long as ours' loaded items make certain.
pub fn graft(
    ours: Side,
    shared: usize,
    tails: &[&Record],
    cut: Option<&HoldsAny<'_>>,
) -> Option<Joined> {
    if let Some(holds_any) = cut {
        let patches = tails.iter().filter_map(|record| record.patch.as_ref());
        let observations: Vec<&str> = (patches.clone())
            .flat_map(|patch| patch.observations.iter().map(|o| o.id.as_str()))
            .collect();
        let evidence: Vec<&str> = patches
            .flat_map(|patch| patch.evidence.iter().map(|e| e.id.as_str()))
            .collect();
        // Items past ours' cut are not in the joined list, so the join cannot see a repeat
        // among them: every appended id is checked here.
        let repeats = |ids: &[&str]| {
            let mut seen = HashSet::with_capacity(ids.len());
            !ids.iter().all(|id| seen.insert(*id))
        };
        if repeats(&observations) || repeats(&evidence) || holds_any(&observations, &evidence) {
            return None;
        }
    }
    join_from(shared, ours, None, tails, cut.is_some())
}

/// The join of the records past the first `shared` of `ours` with `theirs`'s (none when there
/// is no other snapshot) and `tails`; `cut` when ours' lists hold only their newest items.
fn join_from(
    shared: usize,
    ours: Side,
    theirs: Option<Side>,
    tails: &[&Record],
    cut: bool,
) -> Option<Joined> {
    if ours.metas.len() != ours.order.len() || shared > ours.order.len() {
        return None;
    }
    let tail_counts = (tails.iter())
        .map(|record| appended_counts(record))
        .collect::<Option<Vec<Vec<u32>>>>()?;
    let Placement {
        origins,
        tips,
        tail_parents,
    } = place(shared, &ours, theirs.as_ref(), tails)?;
    let Side {
        folded: mut joined,
        order: ours_order,
        metas: ours_metas,
    } = ours;
    let (mut theirs, theirs_order, theirs_metas) = match theirs {
        Some(side) => (Some(side.folded), side.order, side.metas),
        None => (None, Vec::new(), Vec::new()),
    };
    let plan = Plan {
        ours: appended_past(&ours_metas, shared),
        theirs: appended_past(&theirs_metas, shared),
        tails,
        folded: origins,
        cut,
    };
    if (joined.state.conflicts.iter()).any(|conflict| is_append_key(&conflict.key))
        || theirs
            .as_ref()
            .is_some_and(|theirs| theirs.state.conflicts != joined.state.conflicts)
    {
        return None;
    }
    join_lists(
        &mut joined.state,
        theirs.as_mut().map(|theirs| &mut theirs.state),
        &plan,
    )?;
    let origins = plan.folded;
    take_last_write(&mut joined, theirs.as_ref(), tails, origins.last()?)?;
    joined.state.revision = (shared + origins.len()) as u64;
    joined.tips = tips;
    let merged = merged_records(
        shared,
        &origins,
        Records {
            order: ours_order,
            metas: ours_metas,
        },
        Records {
            order: theirs_order,
            metas: theirs_metas,
        },
        Tails {
            records: tails,
            parents: tail_parents,
            appended: tail_counts,
        },
    );
    Some(Joined {
        folded: joined,
        order: merged.order,
        metas: merged.metas,
    })
}

/// What each record past the first `shared` of a side placed on each append list.
fn appended_past(metas: &[RecordMeta<u32>], shared: usize) -> Vec<&[u32]> {
    (metas.get(shared..).unwrap_or_default().iter())
        .map(|meta| meta.appended.as_deref().unwrap_or_default())
        .collect()
}

/// Gives the join the turn and the commit of the record that folds last (`last`, with
/// `theirs` the other snapshot's fold); `None` when that record is on a side that is missing.
fn take_last_write(
    joined: &mut Folded,
    theirs: Option<&Folded>,
    tails: &[&Record],
    last: &Origin,
) -> Option<()> {
    match last {
        Origin::Ours(_) => {}
        Origin::Theirs(_) => {
            let theirs = theirs?;
            joined
                .state
                .last_updated_turn_id
                .clone_from(&theirs.state.last_updated_turn_id);
            joined.last_git_head.clone_from(&theirs.last_git_head);
        }
        Origin::Tail(n) => {
            joined
                .state
                .last_updated_turn_id
                .clone_from(&tails[*n].turn_id);
            joined.last_git_head.clone_from(&tails[*n].git_head);
        }
    }
    Some(())
}

/// A side's fold order and what it keeps of each record, in the same order.
struct Records {
    order: Vec<String>,
    metas: Vec<RecordMeta<u32>>,
}

/// The records past both snapshots, with the positions their parents fold at and how many
/// items each placed on each append list.
struct Tails<'a> {
    records: &'a [&'a Record],
    parents: Vec<Vec<u32>>,
    appended: Vec<Vec<u32>>,
}

/// The merged fold order and metas: ours' first `shared`, then every record past them in the
/// order of `origins`.
fn merged_records(
    shared: usize,
    origins: &[Origin],
    ours: Records,
    theirs: Records,
    mut tails: Tails<'_>,
) -> Records {
    let Records {
        order: mut ours_order,
        metas: mut ours_metas,
    } = ours;
    let Records {
        order: mut theirs_order,
        metas: mut theirs_metas,
    } = theirs;
    // The records past the shared history move into the merged order. A side's record named
    // its parents past the shared history by their positions in its side: they become their
    // positions in the merge.
    let (mut ours_at, mut theirs_at) =
        (vec![0u32; ours_order.len()], vec![0u32; theirs_order.len()]);
    for (k, from) in origins.iter().enumerate() {
        match *from {
            Origin::Ours(n) => ours_at[shared + n] = (shared + k) as u32,
            Origin::Theirs(n) => theirs_at[shared + n] = (shared + k) as u32,
            Origin::Tail(_) => {}
        }
    }
    let moved =
        |order: &mut [String], metas: &mut [RecordMeta<u32>], merged_at: &[u32], n: usize| {
            let mut meta = std::mem::take(&mut metas[shared + n]);
            for parent in meta.parents.iter_mut().filter(|p| **p as usize >= shared) {
                *parent = merged_at[*parent as usize];
            }
            (std::mem::take(&mut order[shared + n]), meta)
        };
    let mut past_order = Vec::with_capacity(origins.len());
    let mut past_metas = Vec::with_capacity(origins.len());
    for from in origins {
        let (id, meta) = match *from {
            Origin::Ours(n) => moved(&mut ours_order, &mut ours_metas, &ours_at, n),
            Origin::Theirs(n) => moved(&mut theirs_order, &mut theirs_metas, &theirs_at, n),
            Origin::Tail(n) => (
                tails.records[n].id.clone(),
                RecordMeta {
                    at: tails.records[n].at.clone(),
                    parents: std::mem::take(&mut tails.parents[n]),
                    appended: Some(std::mem::take(&mut tails.appended[n])),
                },
            ),
        };
        past_order.push(id);
        past_metas.push(meta);
    }
    ours_order.truncate(shared);
    ours_order.append(&mut past_order);
    ours_metas.truncate(shared);
    ours_metas.append(&mut past_metas);
    Records {
        order: ours_order,
        metas: ours_metas,
    }
}

/// How many items a record past both snapshots placed on each append list, or `None` when it
/// did anything else.
fn appended_counts(record: &Record) -> Option<Vec<u32>> {
    let patch = record.patch.as_ref().filter(|p| p.only_appends())?;
    if record.restore.is_some() {
        return None;
    }
    (patch_append_lengths(patch).into_iter())
        .map(|n| u32::try_from(n).ok())
        .collect()
}

/// Where the records past the shared history fold, and what the merge needs of that.
struct Placement {
    /// Each record's origin, in fold order.
    origins: Vec<Origin>,
    /// The heads of the merge.
    tips: BTreeSet<String>,
    /// For each record past both snapshots, the positions its parents fold at (a parent in
    /// neither, brought away by a cherry-pick, is left out).
    tail_parents: Vec<Vec<u32>>,
}

/// The fold order of the records past the `shared` history, or `None` when the sides share
/// nothing past it to join (a side holds all, or a record on both), a side's record did more
/// than append, a record past both could fold among the shared ones, or the order would not
/// keep each side's own. Without `theirs`, the tails are the other branch.
fn place(
    shared: usize,
    ours: &Side,
    theirs: Option<&Side>,
    tails: &[&Record],
) -> Option<Placement> {
    let ours_past = &ours.order[shared..];
    let theirs_past = theirs.map_or(&[][..], |theirs| {
        theirs.order.get(shared..).unwrap_or_default()
    });
    let theirs_ids: HashSet<&str> = theirs_past.iter().map(String::as_str).collect();
    if theirs.is_some() && (ours_past.is_empty() || theirs_past.is_empty())
        || ours_past.iter().any(|id| theirs_ids.contains(id.as_str()))
    {
        return None;
    }
    let pending = pending_records(shared, ours, theirs, tails)?;
    // A record past both snapshots folds after every shared record when it names one past
    // them, or the last shared one and that one descends from all the others; otherwise it
    // could fold among them, which neither snapshot's order says anything about.
    let past: HashSet<&str> = pending.iter().map(|p| p.id).collect();
    let fork_tip = fork_tip(shared, ours, tails, &past);
    let tails_placed = (pending.iter())
        .filter(|p| matches!(p.from, Origin::Tail(_)))
        .all(|p| {
            p.parents()
                .any(|id| past.contains(id) || Some(id) == fork_tip)
        });
    if !tails_placed || past.len() != pending.len() {
        return None;
    }
    let count = pending.len();
    let pending = topological(pending);
    if pending.len() != count || !keeps_sides_order(&pending) {
        return None;
    }
    let named: HashSet<&str> = pending.iter().flat_map(|p| p.parents()).collect();
    let tips = (ours.folded.tips.iter())
        .chain(theirs.into_iter().flat_map(|theirs| &theirs.folded.tips))
        .map(String::as_str)
        .chain(tails.iter().map(|t| t.id.as_str()))
        .filter(|id| !named.contains(id))
        .map(str::to_owned)
        .collect();
    Some(Placement {
        tail_parents: tail_parents(shared, &ours.order[..shared], tails, &pending, fork_tip),
        origins: pending.iter().map(|p| p.from).collect(),
        tips,
    })
}

/// The records past the `shared` history to place: each side's (which must each have placed
/// only new items, and name parents inside their side), then the tails; `None` otherwise.
fn pending_records<'a>(
    shared: usize,
    ours: &'a Side,
    theirs: Option<&'a Side>,
    tails: &'a [&'a Record],
) -> Option<Vec<Pending<'a>>> {
    let theirs_past = theirs.map_or(0, |theirs| theirs.order.len().saturating_sub(shared));
    let mut pending = Vec::with_capacity(ours.order.len() - shared + theirs_past + tails.len());
    let sides = [Some(ours), theirs].into_iter().flatten();
    for (side, from) in sides.zip([Origin::Ours as fn(usize) -> Origin, Origin::Theirs]) {
        for (n, (id, meta)) in (side.order[shared..].iter())
            .zip(&side.metas[shared..])
            .enumerate()
        {
            meta.appended.as_ref()?;
            if (meta.parents.iter()).any(|at| *at as usize >= side.order.len()) {
                return None;
            }
            pending.push(Pending {
                id,
                at: &meta.at,
                parent_positions: &meta.parents,
                order: &side.order,
                parent_ids: &[],
                from: from(n),
            });
        }
    }
    for (n, record) in tails.iter().enumerate() {
        pending.push(Pending {
            id: &record.id,
            at: &record.at,
            parent_positions: &[],
            order: &[],
            parent_ids: &record.parents,
            from: Origin::Tail(n),
        });
    }
    Some(pending)
}

/// The last shared record, when a record past both snapshots names no record `past` the
/// shared history (so it can only follow that one) and that one descends from all the others.
fn fork_tip<'a>(
    shared: usize,
    ours: &'a Side,
    tails: &[&Record],
    past: &HashSet<&str>,
) -> Option<&'a str> {
    let fork_tip = (shared.checked_sub(1))
        .map(|last| (last, ours.order[last].as_str()))
        .filter(|_| {
            tails
                .iter()
                .any(|record| record.parents.iter().all(|p| !past.contains(p.as_str())))
        });
    fork_tip
        .filter(|(last, _)| descends_from_all_before(&ours.metas, *last))
        .map(|(_, id)| id)
}

/// For each tail, the positions its parents fold at in the merge: past the shared history by
/// `pending` (in fold order), the fork tip as the last shared record, else among `shared_ids`.
fn tail_parents(
    shared: usize,
    shared_ids: &[String],
    tails: &[&Record],
    pending: &[Pending<'_>],
    fork_tip: Option<&str>,
) -> Vec<Vec<u32>> {
    let position: HashMap<&str, u32> = (pending.iter().enumerate())
        .map(|(k, p)| (p.id, (shared + k) as u32))
        .collect();
    (tails.iter())
        .map(|record| {
            (record.parents.iter())
                .filter_map(|id| {
                    (position.get(id.as_str()).copied())
                        .or_else(|| (Some(id.as_str()) == fork_tip).then(|| shared as u32 - 1))
                        .or_else(|| (shared_ids.iter().position(|s| s == id)).map(|at| at as u32))
                })
                .collect()
        })
        .collect()
}

/// Whether every record before position `at` of a fold order is an ancestor of the record at
/// `at` (`metas` name parents by position, always earlier ones).
fn descends_from_all_before(metas: &[RecordMeta<u32>], at: usize) -> bool {
    let mut seen = vec![false; at + 1];
    seen[at] = true;
    let (mut stack, mut count) = (vec![at], 1);
    while let Some(record) = stack.pop() {
        for parent in &metas[record].parents {
            let parent = *parent as usize;
            if parent < record && !seen[parent] {
                seen[parent] = true;
                count += 1;
                stack.push(parent);
            }
        }
    }
    count == at + 1
}

/// Whether `pending`, in fold order, keeps each side's records in that side's order, as it
/// must (see the module docs): the lists are joined on it.
fn keeps_sides_order(pending: &[Pending]) -> bool {
    let (mut ours, mut theirs) = (0, 0);
    pending.iter().all(|p| {
        let (next, n) = match p.from {
            Origin::Ours(n) => (&mut ours, n),
            Origin::Theirs(n) => (&mut theirs, n),
            Origin::Tail(_) => return true,
        };
        *next += 1;
        n + 1 == *next
    })
}

/// One append list of the merge (newest first): the items of the records past the shared
/// history, each record's as it placed them, newest record first; then the shared items.
/// `None` when the counts do not fit the lists or an id would appear twice. The sides' items
/// are moved, not copied: each side's list starts with its records' items, newest record
/// first, and `plan.folded` keeps each side's order, so walking it newest first takes every
/// side's items in the order they lie.
fn join_list<'a, T: Clone + Keyed + 'a>(
    ours: Vec<T>,
    theirs: Option<Vec<T>>,
    plan: &Plan<'_>,
    list: usize,
    tail_items: impl Fn(usize) -> &'a [T],
) -> Option<Vec<T>> {
    let count = |counts: &[u32]| counts.get(list).map(|n| *n as usize);
    let placed = |counts: &[&[u32]]| counts.iter().map(|c| count(c)).sum::<Option<usize>>();
    let (ours_placed, theirs_placed) = (placed(&plan.ours)?, placed(&plan.theirs)?);
    // Both sides hold the same shared items; without theirs, ours may hold only the newest.
    let shared_fits = |theirs: &Vec<T>| {
        theirs_placed <= theirs.len() && ours.len() - ours_placed == theirs.len() - theirs_placed
    };
    if ours_placed > ours.len() && !plan.cut
        || theirs.as_ref().is_some_and(|theirs| !shared_fits(theirs))
    {
        return None;
    }
    let theirs = theirs.unwrap_or_default();
    let mut joined = Vec::with_capacity(ours.len() + theirs_placed);
    let (mut ours, mut theirs) = (ours.into_iter(), theirs.into_iter());
    for from in plan.folded.iter().rev() {
        match *from {
            Origin::Ours(n) => {
                let (wanted, before) = (count(plan.ours[n])?, joined.len());
                joined.extend(ours.by_ref().take(wanted));
                // Ours' cut list ends here: what the join would place next is not known.
                if joined.len() - before < wanted {
                    break;
                }
            }
            Origin::Theirs(n) => joined.extend(theirs.by_ref().take(count(plan.theirs[n])?)),
            Origin::Tail(n) => joined.extend_from_slice(tail_items(n)),
        }
    }
    let shared: Vec<T> = ours.collect();
    {
        let mut keys = HashSet::with_capacity(joined.len());
        if !joined.iter().all(|item| keys.insert(item.record_key()))
            || shared.iter().any(|item| keys.contains(&item.record_key()))
        {
            return None;
        }
    }
    joined.extend(shared);
    Some(joined)
}

// Joins every append list, derived from the one field list.
macro_rules! join_append_lists {
    (@one append $state:ident $theirs:ident $plan:ident $list:ident $name:ident $slot:ident) => {
        let ours = std::mem::take(&mut $state.$slot);
        let theirs = $theirs.as_mut().map(|theirs| std::mem::take(&mut theirs.$slot));
        $state.$slot = join_list(ours, theirs, $plan, $list, |n| {
            $plan.tails[n].patch.as_ref().map_or(&[][..], |patch| &patch.$name[..])
        })?;
        $list += 1;
    };
    (@one replace $($rest:tt)*) => {};
    ($(
        $(#[doc = $doc:literal])*
        $kind:ident $variant:ident $name:ident: $ty:ty => $($wrap:ident)?($slot:ident);
    )*) => {
        /// Joins each append list of `state` (ours) with `theirs`'s (taken), as `plan` places
        /// them.
        #[allow(unused_assignments)]
        fn join_lists(
            state: &mut State,
            mut theirs: Option<&mut State>,
            plan: &Plan<'_>,
        ) -> Option<()> {
            let mut list = 0;
            $(join_append_lists!(@one $kind state theirs plan list $name $slot);)*
            Some(())
        }
    };
}
for_each_patch_field!(join_append_lists);

#[cfg(test)]
mod tests {
    use serde_json::Value;
    use serde_json::json;

    use super::*;
    use crate::state::fold::fold_all;
    use crate::state::fold::placed;
    use crate::state::patch::Patch;
    use crate::state::rollout::Body;
    use crate::state::rollout::Source;

    /// A small deterministic generator (xorshift), so every case can be replayed.
    struct Rng(u64);

    impl Rng {
        fn below(&mut self, n: u64) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0 % n
        }
    }

    fn record(at: u64, parents: &[&Record], patch: Value) -> Record {
        let patch: Patch = serde_json::from_value(patch).expect("patch");
        let parents: Vec<String> = parents.iter().map(|p| p.id.clone()).collect();
        let (turn, head) = (format!("t{at}-{}", parents.len()), format!("c{at}"));
        Record::seal(&Body {
            store: None,
            parents: &parents,
            at: &format!("2026-01-01T00:00:{:02}Z", at % 60),
            source: Source::Update,
            turn_id: Some(&turn),
            git_head: Some(&head),
            changed_fields: &patch.changed_fields(),
            patch: Some(&patch),
            restore: None,
        })
        .0
    }

    /// A record appending `count` observations (and the evidence they cite) named after `tag`.
    fn appending(rng: &mut Rng, tag: &str, parents: &[&Record], count: u64) -> Record {
        let ids: Vec<String> = (0..count).map(|n| format!("{tag}-{n}")).collect();
        let patch = json!({
            "observations": ids.iter().map(|id| json!({"id": format!("obs-{id}"),
                "summary": id, "source_kind": "t", "status": "ok",
                "evidence_ids": [format!("ev-{id}")]})).collect::<Vec<_>>(),
            "evidence": ids.iter().map(|id| json!({"id": format!("ev-{id}"),
                "kind": "t", "status": "ok", "summary": id})).collect::<Vec<_>>(),
        });
        record(rng.below(6), parents, patch)
    }

    /// The records of `records` folded in fold order, as a snapshot of them would hold.
    fn side(records: &[Record]) -> Side {
        let ordered = topological(records.to_vec());
        let folded = fold_all(&ordered, true);
        let order: Vec<String> = ordered.iter().map(|r| r.id.clone()).collect();
        let metas = placed(&order, &folded.metas);
        Side {
            folded,
            order,
            metas,
        }
    }

    /// A history both branches share: a few writes of every kind.
    fn shared_history(rng: &mut Rng) -> Vec<Record> {
        let root = record(0, &[], json!({"objective": "o"}));
        let node = record(
            1,
            &[&root],
            json!({"upsert": {"architecture_nodes": [{"id": "n", "title": "n", "purpose": "p"}]}}),
        );
        let appended = appending(rng, "shared", &[&node], 2);
        vec![root, node, appended]
    }

    /// A branch of `length` appending records on top of `tip`, each on top of the last.
    fn branch(rng: &mut Rng, tag: &str, tip: &Record, length: usize) -> Vec<Record> {
        let mut records: Vec<Record> = Vec::new();
        for n in 0..length {
            let parent = records.last().unwrap_or(tip).clone();
            let count = 1 + rng.below(2);
            records.push(appending(rng, &format!("{tag}{n}"), &[&parent], count));
        }
        records
    }

    fn assert_same(joined: &Joined, all: &[Record]) {
        assert_same_newest(joined, all, false);
    }

    /// With `cut`, the joined lists may hold only the replay's newest items.
    fn assert_same_newest(joined: &Joined, all: &[Record], cut: bool) {
        let ordered = topological(all.to_vec());
        let mut replayed = fold_all(&ordered, true);
        if cut {
            let state = &mut replayed.state;
            state
                .observations
                .truncate(joined.folded.state.observations.len());
            state
                .recent_evidence
                .truncate(joined.folded.state.recent_evidence.len());
        }
        let order: Vec<String> = ordered.iter().map(|r| r.id.clone()).collect();
        assert_eq!(joined.order, order);
        assert_eq!(joined.folded.state, replayed.state);
        assert_eq!(joined.folded.anchors, replayed.anchors);
        assert_eq!(joined.folded.writers, replayed.writers);
        assert_eq!(joined.folded.tips, replayed.tips);
        assert_eq!(joined.folded.last_git_head, replayed.last_git_head);
        assert_eq!(joined.metas, placed(&order, &replayed.metas));
    }

    /// Two branches of appends, with records past both snapshots on either side, joined from
    /// the snapshots equal the replay of every record, whatever the times interleave.
    #[test]
    fn joining_two_branches_of_appends_equals_the_replay() {
        for seed in 1..=300u64 {
            let mut rng = Rng(seed * 0x9E37_79B9);
            let shared = shared_history(&mut rng);
            let tip = shared.last().expect("shared").clone();
            let (a_len, b_len) = (1 + rng.below(6) as usize, 1 + rng.below(6) as usize);
            let ours_branch = branch(&mut rng, "a", &tip, a_len);
            let theirs_branch = branch(&mut rng, "b", &tip, b_len);
            let cut_a = 1 + rng.below(a_len as u64) as usize;
            let cut_b = 1 + rng.below(b_len as u64) as usize;
            let ours: Vec<Record> = shared
                .iter()
                .chain(&ours_branch[..cut_a])
                .cloned()
                .collect();
            let theirs: Vec<Record> = (shared.iter().chain(&theirs_branch[..cut_b]))
                .cloned()
                .collect();
            // Half the cases end in a write on top of both branches, as after a merge.
            let on_both = (rng.below(2) == 0).then(|| {
                let tips = [ours_branch.last(), theirs_branch.last()].map(|r| r.expect("tip"));
                appending(&mut rng, "merged", &tips, 1)
            });
            let tails: Vec<&Record> = ours_branch[cut_a..]
                .iter()
                .chain(&theirs_branch[cut_b..])
                .chain(&on_both)
                .collect();
            let joined = join(side(&ours), side(&theirs), &tails)
                .unwrap_or_else(|| panic!("seed {seed}: appends must join"));
            let all: Vec<Record> = shared
                .iter()
                .chain(&ours_branch)
                .chain(&theirs_branch)
                .chain(&on_both)
                .cloned()
                .collect();
            assert_same(&joined, &all);
        }
    }

    /// Anything but appends past the shared history, or an id both branches appended, is left
    /// to the replay.
    #[test]
    fn other_writes_and_repeated_ids_are_left_to_the_replay() {
        let mut rng = Rng(7);
        let shared = shared_history(&mut rng);
        let tip = shared.last().expect("shared");
        let ours: Vec<Record> = shared
            .iter()
            .cloned()
            .chain([appending(&mut rng, "a", &[tip], 1)])
            .collect();
        let objective = record(3, &[tip], json!({"objective": "theirs"}));
        let theirs: Vec<Record> = shared.iter().cloned().chain([objective]).collect();
        assert!(join(side(&ours), side(&theirs), &[]).is_none());
        let same_id = appending(&mut rng, "a", &[tip], 1);
        let theirs: Vec<Record> = shared.iter().cloned().chain([same_id]).collect();
        assert!(join(side(&ours), side(&theirs), &[]).is_none());
        let tail = record(4, &[tip], json!({"objective": "late"}));
        let theirs: Vec<Record> = shared
            .iter()
            .cloned()
            .chain([appending(&mut rng, "b", &[tip], 1)])
            .collect();
        assert!(join(side(&ours), side(&theirs), &[&tail]).is_none());
        let joined = join(side(&ours), side(&theirs), &[]).expect("appends join");
        let all: Vec<Record> = ours
            .iter()
            .chain(&theirs[shared.len()..])
            .cloned()
            .collect();
        assert_same(&joined, &all);
    }

    /// A branch that forks from ours' history, of which only records exist (no snapshot),
    /// grafted onto ours' snapshot with ours' own records past it equals the replay of every
    /// record, whichever record it forks from; so does a graft onto lists holding only their
    /// newest items, up to those.
    #[test]
    fn grafting_a_branch_onto_a_snapshot_equals_the_replay() {
        for seed in 1..=300u64 {
            let mut rng = Rng(seed * 0x2545_F491);
            let shared = shared_history(&mut rng);
            let tip = shared.last().expect("shared");
            // The branch forks from the tip or from the record before it.
            let fork_from = &shared[shared.len() - 1 - rng.below(2) as usize];
            let (a_len, b_len) = (1 + rng.below(6) as usize, 1 + rng.below(6) as usize);
            let ours_branch = branch(&mut rng, "a", tip, a_len);
            let theirs_branch = branch(&mut rng, "b", fork_from, b_len);
            let held = rng.below(a_len as u64 + 1) as usize;
            let ours: Vec<Record> = shared.iter().chain(&ours_branch[..held]).cloned().collect();
            let on_both = (rng.below(2) == 0).then(|| {
                let tips = [ours_branch.last(), theirs_branch.last()].map(|r| r.expect("tip"));
                appending(&mut rng, "merged", &tips, 1)
            });
            let tails: Vec<&Record> = (ours_branch[held..].iter())
                .chain(&theirs_branch)
                .chain(&on_both)
                .collect();
            let mut side = side(&ours);
            let all_ids = crate::state::snapshot::StoredIds::of(&side.folded.state).owned();
            let holds_any = |o: &[&str], e: &[&str]| all_ids.holds_any(o, e);
            let cut = rng.below(2) == 0;
            let loaded = match cut {
                true => rng.below(2 * held as u64 + 4) as usize,
                false => usize::MAX,
            };
            side.folded.state.observations.truncate(loaded);
            side.folded.state.recent_evidence.truncate(loaded);
            let loaded = side.folded.state.observations.len();
            let shared_len = fork(&side.order, &side.metas, &tails)
                .unwrap_or_else(|| panic!("seed {seed}: the branch forks from ours"));
            let joined = graft(side, shared_len, &tails, cut.then_some(&holds_any))
                .unwrap_or_else(|| panic!("seed {seed}: appends must graft"));
            let all: Vec<Record> = (shared.iter())
                .chain(&ours_branch)
                .chain(&theirs_branch)
                .chain(&on_both)
                .cloned()
                .collect();
            // A cut join holds at least as many items as ours' loaded list.
            assert!(
                joined.folded.state.observations.len() >= loaded,
                "seed {seed}"
            );
            assert_same_newest(&joined, &all, cut);
        }
    }

    /// A branch naming a record ours lacks, or appending an id ours holds (among the items
    /// its cut lists left out too), is left to the replay.
    #[test]
    fn a_graft_that_cannot_be_placed_is_left_to_the_replay() {
        let mut rng = Rng(11);
        let shared = shared_history(&mut rng);
        let tip = shared.last().expect("shared");
        let ours_branch = branch(&mut rng, "a", tip, 2);
        let ours: Vec<Record> = shared.iter().chain(&ours_branch).cloned().collect();
        let side_of = || side(&ours);
        let stranger = record(9, &[], json!({"objective": "elsewhere"}));
        let orphan = appending(&mut rng, "b", &[&stranger], 1);
        assert_eq!(fork(&side_of().order, &side_of().metas, &[&orphan]), None);
        // `shared_history` appended `shared-0` and `shared-1`: a branch appends one again.
        let repeat = appending(&mut rng, "shared", &[&shared[1]], 1);
        let at = fork(&side_of().order, &side_of().metas, &[&repeat]).expect("forks");
        assert_eq!(at, 2);
        let all_ids = crate::state::snapshot::StoredIds::of(&side_of().folded.state).owned();
        let holds_any = |o: &[&str], e: &[&str]| all_ids.holds_any(o, e);
        assert!(graft(side_of(), at, &[&repeat], Some(&holds_any)).is_none());
        // With the lists whole the join itself sees the repeat.
        assert!(graft(side_of(), at, &[&repeat], None).is_none());
        // Two incoming records appending one id: with ours' lists cut to nothing, neither lies
        // in the joined list, and the repeat is still left to the replay.
        let twice = appending(&mut rng, "b", &[&shared[1]], 1);
        let again = appending(&mut rng, "b", &[&twice], 1);
        let at = fork(&side_of().order, &side_of().metas, &[&twice, &again]).expect("forks");
        let mut cut = side_of();
        cut.folded.state.observations.clear();
        cut.folded.state.recent_evidence.clear();
        let nothing_held = |_: &[&str], _: &[&str]| false;
        assert!(graft(cut, at, &[&twice, &again], Some(&nothing_held)).is_none());
        // A branch that rewrote the objective is not appends.
        let objective = record(4, &[tip], json!({"objective": "theirs"}));
        let at = fork(&side_of().order, &side_of().metas, &[&objective]).expect("forks");
        assert!(graft(side_of(), at, &[&objective], None).is_none());
    }
}
