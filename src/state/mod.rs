//! The typed state and everything that persists it: the model, patches, the snapshot, the
//! rollout, the store with its one locked write path, plus the file-system, walker and git
//! adapters the rest of the tool shares.

pub mod decode;
pub mod error;
pub mod fields;
pub mod fold;
pub mod fs;
pub mod git;
pub mod identity;
pub mod ignores;
pub mod lineage;
pub mod merge;
pub mod model;
pub mod order;
pub mod patch;
pub mod paths;
pub mod problem;
pub mod rollout;
pub mod segments;
pub mod snapshot;
pub mod store;
pub mod walk;
