//! Pure decision logic. Functions here take the state plus explicit inputs (paths, token
//! counts, verifier records, times as values) and return decisions. They never touch the file
//! system, the clock, the environment, git, tantivy or stdout; `tests/integration/test_meta.rs`
//! checks that mechanically.

pub(crate) mod churn;
pub(crate) mod code_map;
pub mod code_ref;
pub(crate) mod conflicts;
pub(crate) mod context;
pub(crate) mod distill;
#[cfg(test)]
mod fixtures;
pub mod freshness;
pub(crate) mod graph_query;
pub(crate) mod hooks;
pub(crate) mod lineage;
pub(crate) mod one_line;
pub(crate) mod page;
pub(crate) mod peripheral;
pub(crate) mod picture;
pub(crate) mod planning;
pub(crate) mod pressure;
pub(crate) mod projection;
pub(crate) mod promote;
pub(crate) mod prompt;
pub(crate) mod propose;
pub mod recheck;
pub(crate) mod records;
pub(crate) mod reorient;
pub(crate) mod scene;
pub(crate) mod secrets;
pub(crate) mod session;
pub(crate) mod structure;
pub(crate) mod text;
pub(crate) mod update;
