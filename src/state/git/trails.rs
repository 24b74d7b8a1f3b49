//! Where git still holds records the rollout lacks (`state::lineage`): which commit of the
//! checked-out history removed the segment that held one, which reflog entries left it
//! behind, and which branches hold it. Part of the git adapter (see the parent module).
//!
//! A record is found in a commit by searching the bytes of that commit's segments for
//! `"id":"<id>"` (each blob searched once, however many commits hold it). Only `verify` asks,
//! and only when a record names a parent the rollout does not hold.

use std::collections::BTreeMap;
use std::collections::BTreeSet;
use std::collections::HashMap;
use std::path::Path;
use std::path::PathBuf;

use git2::Oid;
use git2::Repository;

use super::open;
use super::scope_prefix;
use crate::state::lineage::Departure;
use crate::state::lineage::Removal;
use crate::state::lineage::Trail;
use crate::state::segments::SEGMENT_SUFFIX;

/// The most commits of the checked-out history searched for the removal of a segment.
const HISTORY_LIMIT: usize = 20_000;

/// The most entries of each reflog searched.
const REFLOG_LIMIT: usize = 1_000;

/// What git still shows of each of `ids`, records the rollout in `rollout_dir` lacks; empty
/// outside git.
pub fn trails(rollout_dir: &Path, ids: &BTreeSet<String>) -> BTreeMap<String, Trail> {
    let mut trails: BTreeMap<String, Trail> = BTreeMap::new();
    let Some(parent) = rollout_dir.parent() else {
        return trails;
    };
    let Ok(repo) = open(parent) else {
        return trails;
    };
    let Ok(Some(prefix)) = scope_prefix(&repo, parent) else {
        return trails;
    };
    let mut search = Search {
        repo: &repo,
        rollout: prefix.join(rollout_dir.file_name().unwrap_or_default()),
        ids,
        blobs: HashMap::new(),
    };
    for (id, removal) in search.removals() {
        trails.entry(id).or_default().removed = Some(removal);
    }
    for (id, departure) in search.departures() {
        trails.entry(id).or_default().departures.push(departure);
    }
    for (id, reference) in search.refs() {
        trails.entry(id).or_default().refs.push(reference);
    }
    trails
}

struct Search<'r> {
    repo: &'r Repository,
    /// `rollout/`, relative to the top of the work tree.
    rollout: PathBuf,
    ids: &'r BTreeSet<String>,
    /// Which of `ids` each blob searched holds.
    blobs: HashMap<Oid, BTreeSet<String>>,
}

impl Search<'_> {
    /// The segments of `commit`'s `rollout/`: name and blob.
    fn segments(&self, commit: &git2::Commit<'_>) -> BTreeMap<String, Oid> {
        let Some(tree) = (commit.tree().ok())
            .and_then(|tree| tree.get_path(&self.rollout).ok())
            .and_then(|entry| entry.to_object(self.repo).ok()?.into_tree().ok())
        else {
            return BTreeMap::new();
        };
        (tree.iter())
            .filter_map(|entry| {
                let name = entry.name().ok()?;
                (name.ends_with(SEGMENT_SUFFIX) && entry.kind() == Some(git2::ObjectType::Blob))
                    .then(|| (name.to_owned(), entry.id()))
            })
            .collect()
    }

    /// Which of the wanted ids a blob holds.
    fn held_by_blob(&mut self, blob: Oid) -> &BTreeSet<String> {
        let (repo, ids) = (self.repo, self.ids);
        self.blobs.entry(blob).or_insert_with(|| {
            let Ok(blob) = repo.find_blob(blob) else {
                return BTreeSet::new();
            };
            (ids.iter())
                .filter(|id| {
                    let needle = format!("\"id\":\"{id}\"");
                    memchr::memmem::find(blob.content(), needle.as_bytes()).is_some()
                })
                .cloned()
                .collect()
        })
    }

    /// Which of the wanted ids `commit` holds.
    fn held_by(&mut self, commit: Oid) -> BTreeSet<String> {
        let Ok(commit) = self.repo.find_commit(commit) else {
            return BTreeSet::new();
        };
        let blobs: Vec<Oid> = self.segments(&commit).into_values().collect();
        (blobs.into_iter())
            .flat_map(|blob| self.held_by_blob(blob).clone())
            .collect()
    }

    /// For each wanted id, the newest commit of HEAD's history that removed a segment holding
    /// it (a segment its parent holds and it does not).
    fn removals(&mut self) -> Vec<(String, Removal)> {
        let mut found: BTreeMap<String, Removal> = BTreeMap::new();
        let Ok(mut walk) = self.repo.revwalk() else {
            return Vec::new();
        };
        if walk.push_head().is_err() {
            return Vec::new();
        }
        for oid in walk.flatten().take(HISTORY_LIMIT) {
            let Ok(commit) = self.repo.find_commit(oid) else {
                continue;
            };
            let kept = self.segments(&commit);
            for parent in commit.parents() {
                for (name, blob) in self.segments(&parent) {
                    if kept.contains_key(&name) {
                        continue;
                    }
                    for id in self.held_by_blob(blob).clone() {
                        found.entry(id).or_insert_with(|| Removal {
                            commit: oid.to_string(),
                            message: commit.message().unwrap_or_default().to_owned(),
                            segment: name.clone(),
                        });
                    }
                }
            }
            if found.len() == self.ids.len() {
                break;
            }
        }
        found.into_iter().collect()
    }

    /// Reflog entries (HEAD's, every branch's and remote-tracking branch's) that moved from a
    /// commit holding a wanted id to one without it, newest first.
    fn departures(&mut self) -> Vec<(String, Departure)> {
        let mut names = vec!["HEAD".to_owned()];
        names.extend(self.reference_names());
        let mut found = Vec::new();
        for name in names {
            let Ok(log) = self.repo.reflog(&name) else {
                continue;
            };
            for entry in log.iter().take(REFLOG_LIMIT) {
                let (old, new) = (entry.id_old(), entry.id_new());
                if old.is_zero() {
                    continue;
                }
                let kept = self.held_by(new);
                for id in self.held_by(old).difference(&kept) {
                    found.push((
                        id.clone(),
                        Departure {
                            reference: name.clone(),
                            commit: old.to_string(),
                            message: entry
                                .message()
                                .ok()
                                .flatten()
                                .unwrap_or_default()
                                .to_owned(),
                        },
                    ));
                }
            }
        }
        found
    }

    /// The branches and tags (short names) whose commit holds a wanted id.
    fn refs(&mut self) -> Vec<(String, String)> {
        let mut found = Vec::new();
        for name in self.reference_names() {
            let Ok(reference) = self.repo.find_reference(&name) else {
                continue;
            };
            let Ok(commit) = reference.peel_to_commit() else {
                continue;
            };
            let short = reference.shorthand().unwrap_or(&name).to_owned();
            for id in self.held_by(commit.id()) {
                found.push((id, short.clone()));
            }
        }
        found
    }

    /// Every reference's full name but symbolic ones (`origin/HEAD`).
    fn reference_names(&self) -> Vec<String> {
        let Ok(references) = self.repo.references() else {
            return Vec::new();
        };
        (references.flatten())
            .filter(|reference| reference.kind() == Some(git2::ReferenceType::Direct))
            .filter_map(|reference| reference.name().ok().map(str::to_owned))
            .collect()
    }
}
