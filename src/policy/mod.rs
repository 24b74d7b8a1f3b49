//! Pure decision logic. Functions here take the state plus explicit inputs (paths, token
//! counts, verifier records, times as values) and return decisions. They never touch the file
//! system, the clock, the environment, git, tantivy or stdout; `tests/integration.rs` checks
//! that mechanically.

pub mod churn;
pub mod code_ref;
pub mod distill;
pub mod hooks;
pub mod merge;
pub mod promote;
pub mod propose;
pub mod secrets;
pub mod structure;
pub mod text;
pub mod update;
