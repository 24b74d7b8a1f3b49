//! Checking the store whole, for `verify`: every rollout line hashes to its id and belongs to
//! this store (`state::identity`), every parent is a record (a missing one is no failure: what
//! git and the cache still show of it is gathered for the note), no record the checked-out
//! commit or a fold cached at it holds is missing, and replaying the records in their one
//! order reproduces every cached snapshot, every byte of which passes its checksum. The files
//! are listed under the shared lock and read without it, so a long check never blocks writers.
//!
//! What a secret is, and whether the state is valid, are not the store's to decide: the caller
//! hands in a [`SecretScan`] and judges the folded state itself.

use std::collections::BTreeMap;
use std::collections::BTreeSet;
use std::collections::HashSet;
use std::path::Path;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::Result;

use super::Store;
use crate::state::fold::Fold;
use crate::state::fold::Folded;
use crate::state::fold::Replay;
use crate::state::fold::fold_all;
use crate::state::fs;
use crate::state::git;
use crate::state::lineage::Trail;
use crate::state::model::State;
use crate::state::rollout::Record;
use crate::state::segments::History;
use crate::state::snapshot::Parts;
use crate::state::snapshot::SnapshotFile;

/// What `verify` asks of the layer that knows what a secret is: a description of the secrets
/// in a record or a state (their kinds and places, never their values), or `None`.
pub trait SecretScan: Sync {
    /// The secrets in a record's body.
    fn in_record(&self, record: &Record) -> Option<String>;
    /// The secrets in a state.
    fn in_state(&self, state: &State) -> Option<String>;
}

/// One problem the check found, and the rollout line it concerns when it concerns one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifyProblem {
    /// The segment (a file in `rollout/`) and its 1-based line.
    pub line: Option<(String, u64)>,
    /// What is wrong.
    pub message: String,
}

impl VerifyProblem {
    fn whole(message: String) -> VerifyProblem {
        VerifyProblem {
            line: None,
            message,
        }
    }
}

/// What [`Store::verify`] found.
#[derive(Debug)]
pub struct Verified {
    /// Failures.
    pub problems: Vec<VerifyProblem>,
    /// Things worth knowing that are not failures.
    pub notes: Vec<String>,
    /// Every record, in fold order.
    pub history: History,
    /// The fold of every record.
    pub folded: Folded,
    /// How many cached snapshots were compared with the replay.
    pub snapshots: u64,
    /// The records that name a parent the rollout does not hold (no failure: each applies on
    /// its own), with what is left of that parent.
    pub orphans: Vec<Orphan>,
}

/// A record that names a parent the rollout does not hold.
#[derive(Debug)]
pub struct Orphan {
    /// The record's id.
    pub record: String,
    /// Its segment.
    pub segment: String,
    /// Its 1-based line there.
    pub line: u64,
    /// What git and the cache still show of its (first) missing parent.
    pub trail: Trail,
}

impl Store {
    /// Checks every record and every cached snapshot (see the module docs), scanning records
    /// and snapshots with `secrets`. A snapshot that is the fold of its records holds only
    /// what they hold, so it is scanned itself only when it is not, or when a record holds a
    /// secret.
    pub fn verify(&self, timeout: Duration, secrets: &dyn SecretScan) -> Result<Verified> {
        let listing = self.listing(timeout)?;
        let lost = self.check_committed(&listing.segments).err();
        let snapshot_paths = listing.snapshots.clone();
        let history = self.history_of(listing)?;
        let mut problems: Vec<VerifyProblem> = (history.problems.iter())
            .chain(&history.torn_tails)
            .map(|p| VerifyProblem {
                line: Some((p.segment.clone(), p.problem.line)),
                message: p.problem.message.clone(),
            })
            .collect();
        problems.extend(history.foreign.iter().map(|foreign| VerifyProblem {
            line: Some((foreign.segment.clone(), foreign.first_line)),
            message: foreign.describe(),
        }));
        problems.extend(lost.map(|err| VerifyProblem::whole(format!("{err:#}"))));
        let missing = missing_parents(&history);
        let mut notes = Vec::new();
        if history.crlf_lines > 0 {
            notes.push(format!(
                "{} rollout line(s) end in CRLF: a git attribute (such as `* text eol=crlf` in `.git/info/attributes`) overrides `.epiphany/.gitattributes`, so git converted them at checkout; they still read as the records they are, but to keep git from converting the store, remove the `eol`/`text` attribute for `.epiphany/` from `.git/info/attributes`",
                history.crlf_lines
            ));
        }
        if history.duplicates > 0 {
            notes.push(format!(
                "{} line(s) repeat an earlier record (the same commit reached this branch twice, or two branches compacted the same segments); each counts once",
                history.duplicates
            ));
        }
        let in_records = record_secrets(&history, secrets);
        // A secret in the records may have been copied into any snapshot, replayed or not.
        let scan_every_snapshot = !in_records.is_empty();
        problems.extend(in_records);
        let mut snapshots = Snapshots::open(
            self,
            &snapshot_paths,
            &history,
            secrets,
            scan_every_snapshot,
        );
        let cached = snapshots.holding(&missing);
        let folded = snapshots.fold_and_compare(&history);
        problems.extend(snapshots.problems);
        notes.extend(snapshots.notes);
        let orphans = self.orphans(&history, &missing, &cached);
        Ok(Verified {
            problems,
            notes,
            orphans,
            history,
            folded,
            snapshots: snapshots.checked,
        })
    }

    /// The records that name a parent the rollout does not hold, with what git and the cache
    /// still show of the first such parent.
    fn orphans(
        &self,
        history: &History,
        missing: &BTreeSet<String>,
        cached: &BTreeSet<String>,
    ) -> Vec<Orphan> {
        if missing.is_empty() {
            return Vec::new();
        }
        let mut trails = git::trails(&self.rollout_dir(), missing);
        let damaged = self.named_by_damaged_lines(history, missing);
        (history.records.iter())
            .filter_map(|record| {
                let parent = record.parents.iter().find(|p| missing.contains(*p))?;
                let (segment, line) = line_of(history, record);
                let mut trail = trails.entry(parent.clone()).or_default().clone();
                trail.cached = cached.contains(parent);
                trail.damaged = damaged.contains(parent);
                Some(Orphan {
                    record: record.id.clone(),
                    segment,
                    line,
                    trail,
                })
            })
            .collect()
    }
}

/// One problem per record that holds a secret (written before redaction, by an older binary
/// or by hand): where and what kind, never the value. The records are scanned on every core.
fn record_secrets(history: &History, secrets: &dyn SecretScan) -> Vec<VerifyProblem> {
    crate::parallel::map_chunks(&history.records, |records| {
        records
            .iter()
            .filter_map(|record| {
                let found = secrets.in_record(record)?;
                Some(VerifyProblem {
                    line: Some(line_of(history, record)),
                    message: format!("record {} {found}", &record.id[..12]),
                })
            })
            .collect()
    })
}

/// Where `record` of `history` was read.
fn line_of(history: &History, record: &Record) -> (String, u64) {
    (history.lines.get(&record.id).cloned())
        .expect("every record of a history was read from a line")
}

impl Store {
    /// Which of `ids` the segments with lines that do not verify still name as a line's id.
    fn named_by_damaged_lines(
        &self,
        history: &History,
        ids: &BTreeSet<String>,
    ) -> BTreeSet<String> {
        let segments: BTreeSet<&str> = (history.problems.iter())
            .map(|p| p.segment.as_str())
            .collect();
        let mut named = BTreeSet::new();
        for segment in segments {
            let Ok(bytes) = fs::read(&self.rollout_dir().join(segment)) else {
                continue;
            };
            named.extend(
                ids.iter()
                    .filter(|id| {
                        let needle = format!("{{\"id\":\"{id}\"");
                        memchr::memmem::find(&bytes, needle.as_bytes()).is_some()
                    })
                    .cloned(),
            );
        }
        named
    }
}

/// The parents records name that are not in the rollout.
fn missing_parents(history: &History) -> BTreeSet<String> {
    let ids: HashSet<&str> = history.records.iter().map(|r| r.id.as_str()).collect();
    (history.records.iter())
        .flat_map(|record| &record.parents)
        .filter(|parent| !ids.contains(parent.as_str()))
        .cloned()
        .collect()
}

/// The cached snapshots under check. Each must be whole (every block of every section passes
/// its checksum), hold only records of the rollout, and equal the fold of the records it holds:
/// one that holds the first records of the fold order (what a read of the head can start from)
/// is compared with the one fold of every record as it passes that point; any other (one side
/// of a merge) is replayed on its own.
struct Snapshots<'s> {
    /// Opened and whole, with its name and its fold order, by record count.
    open: BTreeMap<usize, Vec<(String, SnapshotFile, Vec<String>)>>,
    problems: Vec<VerifyProblem>,
    notes: Vec<String>,
    checked: u64,
    /// Scan every snapshot for secrets, not only those that are not the fold of their records.
    scan_secrets: bool,
    /// The fold orders of the snapshots that hold records the rollout lacks.
    orders: Vec<Vec<String>>,
    secrets: &'s dyn SecretScan,
}

impl<'s> Snapshots<'s> {
    fn open(
        store: &Store,
        paths: &[PathBuf],
        history: &History,
        secrets: &'s dyn SecretScan,
        scan_secrets: bool,
    ) -> Snapshots<'s> {
        let mut snapshots = Snapshots {
            open: BTreeMap::new(),
            problems: Vec::new(),
            notes: Vec::new(),
            checked: 0,
            scan_secrets,
            orders: Vec::new(),
            secrets,
        };
        let settled_head = std::cell::OnceCell::new();
        for path in paths {
            let name = path
                .strip_prefix(store.dir())
                .unwrap_or(path)
                .display()
                .to_string();
            let opened = SnapshotFile::open(path).and_then(|file| {
                file.check_whole()?;
                let order = file.order()?;
                Ok((file, order))
            });
            let (file, order) = match opened {
                Ok(opened) => opened,
                // Thinned away by a write since it was listed.
                Err(_) if !path.exists() => continue,
                Err(err) if history.crlf_lines > 0 && holds_crlf(path) => {
                    snapshots.notes.push(format!(
                        "snapshot {name} does not open: {err:#}; the git attribute that converted the rollout's line endings converted its bytes too, so reads skip it and fold the records, and `epiphany verify --repair` replaces it"
                    ));
                    continue;
                }
                Err(err) => {
                    snapshots.problem(&name, format!("{err:#}"));
                    continue;
                }
            };
            if order.len() as u64 != file.header.records {
                let records = file.header.records;
                snapshots.problem(
                    &name,
                    format!("says it holds {records} records but lists {}", order.len()),
                );
                continue;
            }
            let missing = order
                .iter()
                .filter(|id| !history.lines.contains_key(id.as_str()))
                .count();
            if missing > 0 {
                snapshots.orders.push(order);
                let head = settled_head.get_or_init(|| git::settled_checkout(store.root()));
                if file.header.cached_at.is_some() && file.header.cached_at == *head {
                    snapshots.problem(&name, format!(
                        "holds {missing} record(s) the rollout lacks, and was cached at the commit checked out now: those records were lost (a deleted or truncated segment, dropped lines); restore the rollout files, or accept the loss with `epiphany verify --repair`"
                    ));
                } else {
                    snapshots.notes.push(format!(
                        "snapshot {name} holds {missing} record(s) the rollout does not have (it was cached on another commit or branch); reads skip it"
                    ));
                }
                continue;
            }
            (snapshots.open.entry(order.len()).or_default()).push((name, file, order));
        }
        snapshots
    }

    /// Which of `ids` a cached snapshot holds, served or not (one cached on a branch since
    /// rewritten still remembers).
    fn holding(&self, ids: &BTreeSet<String>) -> BTreeSet<String> {
        if ids.is_empty() {
            return BTreeSet::new();
        }
        (self.orders.iter().flatten())
            .filter(|id| ids.contains(*id))
            .cloned()
            .collect()
    }

    fn problem(&mut self, name: &str, message: String) {
        (self.problems).push(VerifyProblem::whole(format!("snapshot {name}: {message}")));
    }

    /// Folds every record once, comparing each snapshot that holds the first records of the
    /// fold order with the fold as it passes that point; answers the whole fold.
    fn fold_and_compare(&mut self, history: &History) -> Folded {
        let mut whole = Replay::new(&history.records, true);
        self.compare_at(whole.fold(), history, 0);
        for (at, record) in history.records.iter().enumerate() {
            whole.push(record);
            self.compare_at(whole.fold(), history, at + 1);
        }
        // Snapshots of other prefixes than the fold order's (one branch of a merge).
        let by_id: BTreeMap<&str, &Record> =
            history.records.iter().map(|r| (r.id.as_str(), r)).collect();
        for (name, file, order) in std::mem::take(&mut self.open).into_values().flatten() {
            let held: Vec<Record> = order.iter().map(|id| by_id[id.as_str()].clone()).collect();
            let replayed = replay(held);
            self.compare(&name, &file, |loaded| {
                replayed.state == loaded.state
                    && replayed.anchors == loaded.anchors
                    && replayed.tips == loaded.tips
                    && replayed.writers.clone().unwrap_or_default()
                        == loaded.writers.clone().unwrap_or_default()
            });
        }
        whole.finish()
    }

    /// Compares the snapshots of `count` records whose order is the fold's first `count`.
    fn compare_at(&mut self, fold: &mut Fold, history: &History, count: usize) {
        let Some(candidates) = self.open.remove(&count) else {
            return;
        };
        let (prefixes, others): (Vec<_>, Vec<_>) =
            candidates.into_iter().partition(|(_, _, order)| {
                order
                    .iter()
                    .zip(&history.records)
                    .all(|(id, record)| *id == record.id)
            });
        if !others.is_empty() {
            self.open.insert(count, others);
        }
        for (name, file, _) in prefixes {
            self.compare(&name, &file, |loaded| fold.matches(loaded));
        }
    }

    /// Loads the snapshot whole and asks `equals` whether it is the fold of its records.
    fn compare(&mut self, name: &str, file: &SnapshotFile, equals: impl FnOnce(&Folded) -> bool) {
        let loaded = file.load(Parts {
            writers: true,
            ..Parts::WHOLE
        });
        let loaded = match loaded {
            Ok(loaded) => loaded,
            Err(err) => return self.problem(name, format!("{err:#}")),
        };
        self.checked += 1;
        let folded = loaded.folded;
        let reproduced = equals(&folded);
        if !reproduced {
            self.problem(
                name,
                "replaying its records does not reproduce it".to_owned(),
            );
        }
        if (self.scan_secrets || !reproduced)
            && let Some(found) = self.secrets.in_state(&folded.state)
        {
            self.problem(name, found);
        }
    }
}

/// Whether the file at `path` holds a `\r\n`, as git's conversion of line endings leaves in
/// a binary file it takes for text.
fn holds_crlf(path: &Path) -> bool {
    fs::read(path).is_ok_and(|bytes| memchr::memmem::find(&bytes, b"\r\n").is_some())
}

/// Folds `records` in their own order.
fn replay(records: Vec<Record>) -> Folded {
    fold_all(&crate::state::order::topological(records), true)
}
