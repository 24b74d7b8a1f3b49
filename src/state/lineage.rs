//! What is left of a record the rollout lacks, for `verify` to say what happened to the parent
//! a record names (`policy::lineage` words it): what git still shows of it (`git::trails`)
//! and whether a fold cached in this clone held it. Facts only; nothing here decides.

/// Where a record the rollout lacks can still be seen.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Trail {
    /// A commit of the checked-out history removed a segment that held it.
    pub removed: Option<Removal>,
    /// Reflog entries that moved a branch, a remote-tracking branch or HEAD from a commit
    /// holding it to one without it, newest first.
    pub departures: Vec<Departure>,
    /// Branches and tags (short names) whose commit holds it.
    pub refs: Vec<String>,
    /// A fold cached in this clone held it.
    pub cached: bool,
    /// A rollout line that does not verify (edited or damaged) names it.
    pub damaged: bool,
}

/// The commit that removed a segment from the checked-out history.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Removal {
    /// The commit's id.
    pub commit: String,
    /// Its whole message.
    pub message: String,
    /// The segment it removed.
    pub segment: String,
}

/// One reflog entry that left the record behind.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Departure {
    /// The reference whose log it is (`HEAD`, `refs/heads/main`, `refs/remotes/origin/main`).
    pub reference: String,
    /// The commit it moved from, which holds the record.
    pub commit: String,
    /// The entry's message (`rebase (finish): ...`, `fetch: forced-update`, `reset: ...`).
    pub message: String,
}
