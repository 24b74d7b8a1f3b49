//! The command registry: one module per subcommand, listed once in [`commands!`], which
//! declares the modules, the `Command` enum (in help order), the dispatch and the MCP tools.
//!
//! Every command module has the same shape: an `Args` struct whose doc comments are the help
//! text, a `run(ctx, args) -> Result<Status>`, and a report type that renders as text or JSON.
//! Commands stay thin: they read input, call `state`, `policy` or `search`, and emit a report.

use anyhow::Result;

use crate::cli::Ctx;
use crate::cli::Status;
use crate::mcp::Tool;

/// Declares, from one list of `module => Variant, "name";`, every command module, the
/// [`Command`] enum, [`run`] and [`tool`]. `name` is the subcommand as typed (clap's kebab
/// case of the variant; a test holds them equal).
macro_rules! commands {
    ($($module:ident => $variant:ident, $name:literal;)*) => {
        $(pub mod $module;)*

        /// Every subcommand. The help text of each comes from the doc comment of its `Args`.
        #[derive(Debug, clap::Subcommand)]
        #[allow(missing_docs)]
        pub enum Command {
            $($variant($module::Args),)*
        }

        /// Runs one command.
        pub fn run(ctx: &Ctx, command: &Command) -> Result<Status> {
            match command {
                $(Command::$variant(args) => $module::run(ctx, args),)*
            }
        }

        /// How the subcommand named `name` is offered over MCP and what its report looks
        /// like: the `TOOL` its module declares next to its `Args`.
        pub fn tool(name: &str) -> Option<Tool> {
            Some(match name {
                $($name => $module::TOOL,)*
                _ => return None,
            })
        }
    };
}

commands! {
    init => Init, "init";
    show => Show, "show";
    log => Log, "log";
    diff => Diff, "diff";
    rollback => Rollback, "rollback";
    verify => Verify, "verify";
    update => Update, "update";
    distill => Distill, "distill";
    propose => Propose, "propose";
    promote => Promote, "promote";
    note => Note, "note";
    node => Node, "node";
    edge => Edge, "edge";
    checkpoint => Checkpoint, "checkpoint";
    subgoal => Subgoal, "subgoal";
    backlog => Backlog, "backlog";
    recheck => Recheck, "recheck";
    scene => Scene, "scene";
    context => Context, "context";
    graph => Graph, "graph";
    map => Map, "map";
    planning => Planning, "planning";
    freshness => Freshness, "freshness";
    pressure => Pressure, "pressure";
    reorient => Reorient, "reorient";
    prompt => Prompt, "prompt";
    index => Index, "index";
    retrieve => Retrieve, "retrieve";
    hooks => Hooks, "hooks";
    hook => Hook, "hook";
    merge_driver => MergeDriver, "merge-driver";
    textconv => Textconv, "textconv";
    mcp => Mcp, "mcp";
    completions => Completions, "completions";
    schema => Schema, "schema";
}
