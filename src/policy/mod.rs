//! Pure decision logic. Functions here take the state plus explicit inputs (paths, token
//! counts, verifier records, times as values) and return decisions. They never touch the file
//! system, the clock, the environment, git, tantivy or stdout; `tests/integration/test_meta.rs`
//! checks that mechanically.

pub mod churn;
pub mod code_map;
pub mod code_ref;
pub mod conflicts;
pub mod context;
pub mod distill;
#[cfg(test)]
mod fixtures;
pub mod freshness;
pub mod graph_query;
pub mod hooks;
pub mod lineage;
pub mod one_line;
pub mod page;
pub mod peripheral;
pub mod picture;
pub mod planning;
pub mod pressure;
pub mod projection;
pub mod promote;
pub mod prompt;
pub mod propose;
pub mod recheck;
pub mod records;
pub mod reorient;
pub mod scene;
pub mod secrets;
pub mod session;
pub mod structure;
pub mod text;
pub mod update;
