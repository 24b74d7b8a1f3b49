//! The typed state and everything that persists it: the model, patches, the snapshot, the
//! rollout, the store with its one locked write path, plus the file-system, walker and git
//! adapters the rest of the tool shares.

pub(crate) mod compaction;
pub(crate) mod decode;
pub(crate) mod error;
pub(crate) mod fields;
pub(crate) mod fold;
pub(crate) mod fs;
pub(crate) mod git;
pub(crate) mod identity;
pub(crate) mod ignores;
pub(crate) mod lineage;
pub(crate) mod merge;
pub mod model;
pub(crate) mod order;
pub(crate) mod patch;
pub(crate) mod paths;
pub(crate) mod problem;
pub(crate) mod rollout;
pub(crate) mod segments;
pub(crate) mod snapshot;
pub(crate) mod store;
pub(crate) mod walk;
