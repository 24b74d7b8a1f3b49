//! The Model Context Protocol server behind `epiphany mcp`: the commands as tools over stdio.
//!
//! One implementation, two doors. Every tool call is parsed by the same clap definitions and run
//! by the same `cmd::run` as the command line, in-process, with the JSON report captured and
//! standard input handed over as a string. What the protocol needs beyond clap (whether a
//! command is offered, whether it writes, the schema of its report) is declared next to each
//! command's `Args` as a [`crate::cmd::Tool`], so a new command or flag shows up in both doors
//! at once.
//!
//! - [`protocol`] frames JSON-RPC 2.0: one message or one batch per line, parse errors and
//!   invalid requests answered with the codes the specification names, notifications never
//!   answered, the protocol revision negotiated at `initialize`.
//! - [`tools`] lists the tools and runs a call: arguments checked against the input schema and
//!   named by their argument names in every error, then turned into a command line.
//!
//! Only protocol messages go to stdout; command status lines and warnings go to stderr.

pub mod protocol;
pub mod tools;
