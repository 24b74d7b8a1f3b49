//! Which store a record belongs to (docs/store.md#store-identity).
//!
//! `init` mints the store's identity, 16 random hex digits, into `rollout/identity`, a tracked
//! file git carries with the records; every record a writer seals carries it as `store`, which
//! its id covers. Clones and branches share the file, so merges, rebases and cherry-picks
//! between them keep every record theirs. Two stores begun apart (two clones that each ran
//! `init`, or an older store that `init` gave an identity in two clones) each add a line: the
//! `merge=union` attribute on `rollout/**` joins them, and a store accepts every identity its
//! file lists. A record that claims an identity the file does not list was written by another
//! store (a segment copied from another repository): readers refuse it, naming the segment,
//! and `verify` lists it. Records without a claim (written before stores had an identity, or
//! by an older binary) are accepted as before: nothing tells whose they are.
//!
//! This module owns the file, its name, minting, the claim a writer stamps and the test of a
//! segment's claims; the segments' layout (`state::segments`) only hands it their records.

use std::collections::BTreeSet;
use std::hash::BuildHasher;
use std::path::Path;

use anyhow::Result;

use crate::state::fs;

/// The file in `rollout/` that lists the store's identities, one a line.
pub const IDENTITY_FILE: &str = "identity";

/// The most of the identity file that is read: a line per store joined into this one.
const IDENTITY_LIMIT: u64 = 64 * 1024;

/// The identities a store's `rollout/identity` lists: what its records may claim.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Identities {
    /// In the file's order (the first is the one this clone's writers stamp); `None` when
    /// there is no file (a store from before identities).
    listed: Option<Vec<String>>,
}

impl Identities {
    /// Reads the identity file of `rollout_dir` (none: an older store). A link, or a file that
    /// is not one of ours, is refused as every file the store reads is.
    pub fn read(rollout_dir: &Path) -> Result<Identities> {
        let base = rollout_dir.parent().unwrap_or(rollout_dir);
        let bytes = fs::read_below(base, &rollout_dir.join(IDENTITY_FILE), IDENTITY_LIMIT)?;
        let listed = bytes.map(|bytes| {
            let mut seen = BTreeSet::new();
            String::from_utf8_lossy(&bytes)
                .lines()
                .map(str::trim)
                .filter(|line| !line.is_empty() && seen.insert(line.to_owned()))
                .map(str::to_owned)
                .collect()
        });
        Ok(Identities { listed })
    }

    /// Writes a new identity into `rollout_dir` (which must exist), for a store that has none.
    pub fn mint(rollout_dir: &Path) -> Result<Identities> {
        let identity = new_identity();
        write(rollout_dir, &identity)?;
        Ok(Identities {
            listed: Some(vec![identity]),
        })
    }

    /// Whether the store has an identity file.
    pub fn exists(&self) -> bool {
        self.listed.is_some()
    }

    /// The identity a writer stamps on its records: the file's first (none in an older store).
    pub fn stamp(&self) -> Option<&str> {
        self.listed.as_ref()?.first().map(String::as_str)
    }

    /// What a write stamps on its record: the store's identity; a new one (written with the
    /// record) when the store has none and `holds_records` is false (a store that `init`
    /// created before identities, with no record yet: no record can contradict it); none in
    /// an older store that holds records, which `init` gives an identity.
    pub fn for_write(&self, holds_records: bool) -> Stamp {
        match self.stamp() {
            Some(identity) => Stamp::Claim(identity.to_owned()),
            None if !self.exists() && !holds_records => Stamp::Mint(new_identity()),
            None => Stamp::None,
        }
    }

    /// Whether a record claiming `claim` belongs to this store.
    pub fn accepts(&self, claim: Option<&str>) -> bool {
        match claim {
            None => true,
            Some(claim) => (self.listed.iter().flatten()).any(|listed| listed == claim),
        }
    }

    /// The records of `segment` (read from it in file order, with their 1-based lines) that
    /// belong to another store, gathered; `None` when every one is this store's.
    pub fn foreign_in<'r>(
        &self,
        segment: &str,
        records: impl IntoIterator<Item = (u64, Option<&'r str>)>,
    ) -> Option<Foreign> {
        let mut foreign: Option<Foreign> = None;
        for (line, claim) in records {
            if self.accepts(claim) {
                continue;
            }
            let found = foreign.get_or_insert_with(|| Foreign {
                segment: segment.to_owned(),
                first_line: line,
                records: 0,
                claims: BTreeSet::new(),
                listed: self.listed.clone(),
            });
            found.records += 1;
            found.claims.extend(claim.map(str::to_owned));
        }
        foreign
    }
}

/// What a write stamps on its record ([`Identities::for_write`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Stamp {
    /// The store's identity.
    Claim(String),
    /// A new identity, to write into `rollout/identity` with the record.
    Mint(String),
    /// No claim: an older store without an identity.
    None,
}

impl Stamp {
    /// The identity the record claims.
    pub fn claim(&self) -> Option<&str> {
        match self {
            Stamp::Claim(identity) | Stamp::Mint(identity) => Some(identity),
            Stamp::None => None,
        }
    }

    /// Writes a minted identity into `rollout_dir` (which must exist), before the record.
    pub fn write_minted(&self, rollout_dir: &Path) -> Result<()> {
        match self {
            Stamp::Mint(identity) => write(rollout_dir, identity),
            Stamp::Claim(_) | Stamp::None => Ok(()),
        }
    }
}

/// 16 random hex digits: 64 bits tell any two stores apart that will ever meet.
fn new_identity() -> String {
    // Each process seeds its hasher keys from the operating system's randomness.
    let random = std::collections::hash_map::RandomState::new().hash_one(std::process::id());
    format!("{random:016x}")
}

/// Writes `identity` as the whole identity file of `rollout_dir`.
fn write(rollout_dir: &Path, identity: &str) -> Result<()> {
    fs::write_atomic(
        &rollout_dir.join(IDENTITY_FILE),
        format!("{identity}\n").as_bytes(),
    )
}

/// The records of one segment that belong to another store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Foreign {
    /// The segment's file name.
    pub segment: String,
    /// The first such record's 1-based line (0 when the segment was read from a mark on).
    pub first_line: u64,
    /// How many records.
    pub records: usize,
    /// The identities they claim.
    pub claims: BTreeSet<String>,
    /// What this store's identity file lists (`None`: it has none).
    listed: Option<Vec<String>>,
}

impl Foreign {
    /// What happened, in words: which records, which store they claim, and this store's.
    pub fn describe(&self) -> String {
        let claims: Vec<&str> = self.claims.iter().map(String::as_str).collect();
        let whose = match &self.listed {
            Some(listed) => format!(
                "this store is {}",
                listed
                    .iter()
                    .map(|id| format!("`{id}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            None => format!(
                "this store has no `rollout/{IDENTITY_FILE}`, so it wrote none of them, unless that file was deleted: then restore it with `git checkout HEAD -- .epiphany/rollout/{IDENTITY_FILE}`"
            ),
        };
        format!(
            "{} record(s) from line {} on were written by another store (they claim store `{}`; {whose}): the segment was copied from another repository, and its records are not folded",
            self.records,
            self.first_line,
            claims.join("`, `"),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::fields::ChangedField;
    use crate::state::rollout::Body;
    use crate::state::rollout::Record;
    use crate::state::rollout::Source;

    fn record(store: Option<&str>) -> Record {
        Record::seal(&Body {
            store,
            parents: &[],
            at: "2026-01-01T00:00:00Z",
            source: Source::Update,
            turn_id: None,
            git_head: None,
            changed_fields: &[ChangedField::Objective],
            patch: None,
            restore: None,
        })
        .0
    }

    #[test]
    fn a_store_accepts_what_its_file_lists_and_records_without_a_claim() {
        let dir = tempfile::tempdir().expect("dir");
        let older = Identities::read(dir.path()).expect("read");
        assert!(!older.exists() && older.stamp().is_none());
        assert!(older.accepts(None) && !older.accepts(Some("0123456789abcdef")));

        let minted = Identities::mint(dir.path()).expect("mint");
        let ours = minted.stamp().expect("stamp").to_owned();
        assert_eq!(ours.len(), 16);
        // A union merge with another clone's identity: both are this store's.
        std::fs::write(
            dir.path().join(IDENTITY_FILE),
            format!("{ours}\r\nfedcba9876543210\n\n{ours}\n"),
        )
        .expect("write");
        let joined = Identities::read(dir.path()).expect("read");
        assert_eq!(joined.stamp(), Some(ours.as_str()));
        assert!(joined.accepts(Some("fedcba9876543210")) && joined.accepts(None));

        let (a, b, c) = (
            &record(Some(&ours)),
            &record(Some("1111111111111111")),
            &record(None),
        );
        fn claim(record: &Record) -> Option<&str> {
            record.store.as_deref()
        }
        let lines = [(1, claim(a)), (2, claim(b)), (3, claim(c)), (4, claim(b))];
        let foreign = joined.foreign_in("s.jsonl", lines).expect("foreign");
        assert_eq!((foreign.first_line, foreign.records), (2, 2));
        assert!(
            foreign
                .describe()
                .contains("claim store `1111111111111111`")
        );
        let ours_only = [(1, claim(a)), (2, claim(c))];
        assert!(joined.foreign_in("s.jsonl", ours_only).is_none());
    }
}
