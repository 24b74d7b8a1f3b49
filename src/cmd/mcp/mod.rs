//! `epiphany mcp`: serve the commands as Model Context Protocol tools over stdio.
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
//! - [`tools`] lists the tools (all, or the subset `--tools` names) and runs a call.
//! - [`schema`] makes the lean schemas a tool is listed with: its arguments, described for a
//!   model, and the outline of its report.
//! - [`arguments`] checks a call's arguments against the input schema, naming them as the tool
//!   does in every error, and turns them into a command line.
//!
//! Only protocol messages go to stdout; command status lines and warnings go to stderr.

use anyhow::Result;

use crate::cmd::Tool;
use crate::ctx::Ctx;
use crate::ctx::Status;
use protocol::Server;
use tools::Toolbox;

pub mod arguments;
pub mod frame;
pub mod protocol;
pub mod schema;
pub mod tools;

/// Serve the commands as Model Context Protocol tools over stdio.
///
/// Speaks JSON-RPC 2.0, one message (or one batch) per line, on stdin and stdout: `initialize`
/// (protocol revisions 2024-11-05 to 2025-11-25), `tools/list`, `tools/call` and `ping`, with
/// `ping` answered and `notifications/cancelled` heeded while a tool runs. Each
/// tool is a command; its arguments are the command's flags and positionals by their field
/// names (`expected_revision`, `path_prefixes`, `query`, ...), plus `input` for text the
/// command reads on stdin and `directory` to run elsewhere than the server's directory. Every tool declares whether it writes and the
/// schema of its report (`outputSchema`, the same as `epiphany schema` prints). Register it in
/// an MCP client as `epiphany mcp` (for example `claude mcp add epiphany -- epiphany mcp`).
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Serve only these tools: `read` (the tools that write nothing), `write`, `all` (the
    /// default), or tool names, separated by commas (`read,index`)
    #[arg(long, value_name = "SET", value_parser = Toolbox::parse)]
    pub tools: Option<Toolbox>,
}

/// Plumbing: the server itself is not a tool.
pub const TOOL: Tool = Tool::PLUMBING;

/// Runs `mcp`.
pub fn run(ctx: &Ctx, args: &Args) -> Result<Status> {
    // Read on a thread of its own while tools run: an unlocked, buffered stdin.
    let stdin = std::io::BufReader::new(std::io::stdin());
    let stdout = std::io::stdout();
    let toolbox = args.tools.clone().unwrap_or_default();
    Server::new(ctx, toolbox).serve(stdin, stdout.lock())?;
    Ok(Status::Ok)
}
