//! The integration suite: one test binary, one module per command, all through the binary as
//! a user runs it.

mod common;

mod test_store;
mod test_views;
