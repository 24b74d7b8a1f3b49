//! What a build does, decided before anything is written: a full build indexes every listed
//! file with fresh ids; an incremental one carries unchanged files, reindexes changed ones
//! under their ids, deletes removed ones and gives added ones new ids.
//!
//! Pure bookkeeping over the manifest and the listing: this module reads no file and writes
//! nothing.

use crate::search::manifest;
use crate::search::manifest::Fetched;
use crate::search::manifest::FileEntry;
use crate::search::manifest::Manifest;
use crate::state::walk::FileStat;
use crate::state::walk::Listing;

/// How a build went.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum BuildMode {
    /// Everything was indexed from scratch.
    Full,
    /// Only changed files were indexed.
    Incremental,
    /// Nothing had changed.
    Unchanged,
}

/// One file to (re)index.
pub(super) struct Job<'a> {
    /// The file as listed.
    pub(super) stat: &'a FileStat,
    /// Its id in the new manifest.
    pub(super) file_id: u64,
    /// Its contents, when comparing with the manifest already read them.
    pub(super) fetched: Option<Fetched>,
}

/// What a build deletes from the index and (re)indexes.
pub(super) struct Plan<'a> {
    /// Full or incremental.
    pub(super) mode: BuildMode,
    /// Entries kept as they are (with their current times).
    pub(super) carried: Vec<FileEntry>,
    /// Ids whose documents are deleted.
    pub(super) deleted: Vec<u64>,
    /// Files to (re)index.
    pub(super) jobs: Vec<Job<'a>>,
    /// The first id after those given.
    pub(super) next_file_id: u64,
    /// Files the index no longer holds.
    pub(super) removed_files: u32,
}

impl<'a> Plan<'a> {
    /// Every listed file, with fresh ids.
    pub(super) fn full(listing: &'a Listing) -> Plan<'a> {
        Plan {
            mode: BuildMode::Full,
            carried: Vec::new(),
            deleted: Vec::new(),
            jobs: listing
                .files
                .iter()
                .zip(0..)
                .map(|(stat, file_id)| Job {
                    stat,
                    file_id,
                    fetched: None,
                })
                .collect(),
            next_file_id: listing.files.len() as u64,
            removed_files: 0,
        }
    }

    /// Unchanged files are carried; changed files keep their id and are reindexed; removed
    /// files are deleted; added files get new ids.
    pub(super) fn incremental(manifest: &Manifest, changes: manifest::Changes<'a>) -> Plan<'a> {
        let deleted = changes
            .modified
            .iter()
            .map(|(entry, _, _)| entry.file_id)
            .chain(changes.removed.iter().map(|entry| entry.file_id))
            .collect();
        let mut jobs: Vec<Job<'a>> = changes
            .modified
            .into_iter()
            .map(|(entry, stat, fetched)| Job {
                stat,
                file_id: entry.file_id,
                fetched: Some(fetched),
            })
            .collect();
        let mut next_file_id = manifest.next_file_id;
        for stat in changes.added {
            jobs.push(Job {
                stat,
                file_id: next_file_id,
                fetched: None,
            });
            next_file_id += 1;
        }
        Plan {
            mode: BuildMode::Incremental,
            carried: changes
                .unchanged
                .iter()
                .map(|(entry, stat)| with_stat(entry, stat))
                .collect(),
            deleted,
            jobs,
            next_file_id,
            removed_files: count(changes.removed.len()),
        }
    }
}

/// A count of files, as the manifest and report hold it.
pub(super) fn count(len: usize) -> u32 {
    u32::try_from(len).unwrap_or(u32::MAX)
}

/// `entry` with the size and time `stat` found now.
pub(super) fn with_stat(entry: &FileEntry, stat: &FileStat) -> FileEntry {
    FileEntry {
        size_bytes: stat.size_bytes,
        modified_unix_nanos: stat.modified_unix_nanos,
        ..entry.clone()
    }
}
