//! Pure decision logic. Functions here take the state plus explicit inputs (paths, token
//! counts, verifier records, times as values) and return decisions. They never touch the file
//! system, the clock, the environment, git, tantivy or stdout; `tests/integration.rs` checks
//! that mechanically.

pub mod context;
#[cfg(test)]
mod fixtures;
pub mod freshness;
pub mod graph_query;
pub mod planning;
pub mod pressure;
pub mod projection;
pub mod prompt;
pub mod reorient;
pub mod scene;
pub mod structure;
pub mod text;
pub mod update;
