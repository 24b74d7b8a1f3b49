//! The Model Context Protocol server behind `epiphany mcp`: the commands as tools over stdio.
//!
//! One implementation, two doors. Every tool call is parsed by the same clap definitions and run
//! by the same `cmd::run` as the command line, in-process, with the JSON report captured and
//! standard input handed over as a string. What the protocol needs beyond clap (whether a
//! command is offered, whether it writes, the schema of its report) is declared next to each
//! command's `Args` as a [`Tool`], so a new command or flag shows up in both doors at once.
//!
//! - [`protocol`] frames JSON-RPC 2.0: one message or one batch per line, parse errors and
//!   invalid requests answered with the codes the specification names, notifications never
//!   answered, the protocol revision negotiated at `initialize`.
//! - [`tools`] lists the tools and runs a call: arguments checked against the input schema and
//!   named by their argument names in every error, then turned into a command line.
//!
//! Only protocol messages go to stdout; command status lines and warnings go to stderr.

use schemars::JsonSchema;
use schemars::Schema;

pub mod protocol;
pub mod tools;

/// How a command is offered as an MCP tool and what its `--json` report looks like, declared
/// next to the command's `Args` (`pub const TOOL: Tool = ...`).
#[derive(Debug, Clone, Copy)]
pub struct Tool {
    /// Offered to agents at all; plumbing for git and hosts is not.
    pub offered: bool,
    /// Writes nothing anywhere (neither the store nor the cache).
    pub read_only: bool,
    /// A second identical call changes nothing more than the first did.
    pub idempotent: bool,
    /// What the command reads on standard input, offered as the `input` argument.
    pub input: Option<&'static str>,
    /// The JSON Schema of the command's `--json` report (also printed by `epiphany schema`).
    pub report: Option<fn() -> Schema>,
}

impl Tool {
    /// A command that only reads: asking twice gives the same answer and changes nothing.
    pub const READER: Tool = Tool {
        offered: true,
        read_only: true,
        idempotent: true,
        input: None,
        report: None,
    };
    /// A command that writes the store or the cache.
    pub const WRITER: Tool = Tool {
        offered: true,
        read_only: false,
        idempotent: false,
        input: None,
        report: None,
    };
    /// Plumbing for git and agent hosts, not a tool for an agent.
    pub const PLUMBING: Tool = Tool {
        offered: false,
        read_only: false,
        idempotent: false,
        input: None,
        report: None,
    };

    /// The same, with the schema of its report.
    pub const fn report(mut self, schema: fn() -> Schema) -> Tool {
        self.report = Some(schema);
        self
    }

    /// The same, reading `what` on standard input.
    pub const fn input(mut self, what: &'static str) -> Tool {
        self.input = Some(what);
        self
    }

    /// The same, marked idempotent: repeating the call writes nothing new.
    pub const fn idempotent(mut self) -> Tool {
        self.idempotent = true;
        self
    }
}

/// The JSON Schema of `T`, for [`Tool::report`].
pub fn schema_of<T: JsonSchema>() -> Schema {
    schemars::schema_for!(T)
}

/// Text a writer of patches reads on standard input, for [`Tool::input`].
pub const PATCH_INPUT: &str = "The patch, or the `{\"expected_revision\", \"patch\"}` envelope that `distill` and `propose` print, as JSON text";
