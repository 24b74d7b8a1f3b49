//! The integration suite: one test binary, one module per command, all through the binary as
//! a user runs it.

mod common;

mod test_retrieve;
mod test_store;
