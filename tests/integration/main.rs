//! The integration suite: one test binary, one module per command, all through the binary as
//! a user runs it.

mod common;

mod bench_views;

mod test_store;
mod test_views;
