//! The integration suite: one test binary, one module per area, all through the binary as a
//! user runs it.

mod common;

mod test_branches;
mod test_budget;
mod test_certificates;
mod test_compaction;
mod test_conflicts;
mod test_draft;
mod test_git;
mod test_hardening;
mod test_hardening_secrets;
mod test_help;
mod test_history;
mod test_hook_managers;
mod test_hooks;
mod test_hostile;
mod test_identity;
mod test_lost_records;
mod test_map;
mod test_map_scope;
mod test_mcp;
mod test_mcp_tools;
mod test_meta;
mod test_patch_problems;
mod test_propose;
mod test_ref_properties;
mod test_retrieve;
mod test_retrieve_hits;
mod test_schema;
mod test_store;
mod test_store_faults;
mod test_stream;
mod test_truth;
mod test_views;
mod test_write_races;
mod test_writes;
