//! What can go wrong in the store, typed. The command layer (`crate::error`) decides the exit
//! code and the hint a user reads, so nothing here names a command, a flag or an environment
//! variable.

use std::path::PathBuf;

/// A store failure a user can act on. Everything else (I/O, decoding) stays an `anyhow` error
/// with its context.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// No store between the starting directory and its repository root.
    #[error("no `.epiphany/` store in `{}` or any parent up to its repository root", .start.display())]
    NoStore {
        /// Where the search started.
        start: PathBuf,
    },
    /// `.epiphany` exists but is not a directory.
    #[error("`{}` is not a directory", .path.display())]
    NotADirectory {
        /// The path.
        path: PathBuf,
    },
    /// Something other than a directory stands where the store keeps a directory (`rollout/`,
    /// `snapshots/`, `cache/`).
    #[error("`{}` is not a directory, but the store keeps a directory there", .path.display())]
    MisplacedFile {
        /// The path.
        path: PathBuf,
    },
    /// The store has neither records nor the tracked files a clone without records keeps.
    #[error("`{}` holds no `rollout/`: the store is incomplete", .dir.display())]
    Incomplete {
        /// The store directory.
        dir: PathBuf,
    },
    /// A path epiphany reads or writes (in the store, its cache, or a file it keeps in the work
    /// tree) is a symbolic link, which it never follows: a committed link could lead anywhere.
    #[error("`{}` is a symbolic link; epiphany never reads or writes through one", .path.display())]
    Link {
        /// The link.
        path: PathBuf,
    },
    /// Something other than a regular file stands where epiphany reads one.
    #[error("`{}` is not a regular file", .path.display())]
    NotAFile {
        /// The path.
        path: PathBuf,
    },
    /// A file is larger than anything epiphany writes there, so it is not read.
    #[error("`{}` is larger than {} bytes; refusing to read it", .path.display(), .limit)]
    TooLarge {
        /// The file.
        path: PathBuf,
        /// The most that is read there.
        limit: u64,
    },
    /// Another process held the store lock for longer than the wait.
    #[error("another epiphany process held `{}` for more than {millis} ms", .path.display())]
    Locked {
        /// The lock file.
        path: PathBuf,
        /// How long this process waited.
        millis: u128,
    },
    /// A record line does not verify.
    #[error("`{}` is damaged: {problem}", .segment.display())]
    DamagedRollout {
        /// The segment file.
        segment: PathBuf,
        /// What is wrong with it.
        problem: String,
    },
    /// A segment holds records another store wrote (`state::identity`).
    #[error("`{}` holds records of another store: {what}", .segment.display())]
    ForeignRecords {
        /// The segment file.
        segment: PathBuf,
        /// Which records, and which store they claim.
        what: String,
    },
    /// Records this checkout had are gone from the rollout.
    #[error("records are missing from `{}`: {evidence}", .rollout.display())]
    LostRecords {
        /// The rollout directory.
        rollout: PathBuf,
        /// What holds the missing records.
        evidence: String,
    },
    /// A revision number past the head.
    #[error("revision {asked} does not exist; the head is revision {head}")]
    NoSuchRevision {
        /// The revision asked for.
        asked: u64,
        /// The head revision.
        head: usize,
    },
    /// `HEAD~N` before the empty state.
    #[error("HEAD~{back} is {back} revisions before the head, but the head is revision {head}")]
    BeforeTheFirstRevision {
        /// How far back.
        back: u64,
        /// The head revision.
        head: usize,
    },
    /// No record id has this prefix.
    #[error("no record id starts with `{prefix}`")]
    UnknownRecordId {
        /// The prefix given.
        prefix: String,
    },
    /// Several record ids have this prefix.
    #[error("`{prefix}` is the start of {count} record ids; give more digits")]
    AmbiguousRecordId {
        /// The prefix given.
        prefix: String,
        /// How many ids start with it.
        count: usize,
    },
}
