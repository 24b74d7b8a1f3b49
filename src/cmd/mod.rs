//! The command registry: one module per subcommand, one dispatch `match`.
//!
//! Every command module has the same shape: an `Args` struct whose doc comments are the help
//! text, a `run(ctx, args) -> Result<Status>`, and a report type that renders as text or JSON.
//! Commands stay thin: they read input, call `state`, `policy` or `search`, and emit a report.

use anyhow::Result;

use crate::cli::Ctx;
use crate::cli::Status;

pub mod context;
pub mod diff;
pub mod freshness;
pub mod graph;
pub mod init;
pub mod input;
pub mod log;
pub mod planning;
pub mod pressure;
pub mod prompt;
pub mod render;
pub mod reorient;
pub mod rollback;
pub mod scene;
pub mod show;
pub mod signals;
pub mod update;
pub mod verify;

/// Every subcommand.
#[derive(Debug, clap::Subcommand)]
pub enum Command {
    /// Create the `.epiphany/` store at the root of the git work tree
    Init(init::Args),
    /// Print the full typed state (head, or as of a revision)
    Show(show::Args),
    /// List rollout entries, newest first
    Log(log::Args),
    /// Show a readable diff of the state between two revisions
    Diff(diff::Args),
    /// Write a new revision whose state equals an earlier one
    Rollback(rollback::Args),
    /// Check the hash chain, replay against the snapshot, and structural validity
    Verify(verify::Args),
    /// Validate and apply one patch: the one write path
    Update(update::Args),
    /// Show the wall board: objective, subgoals, graph focus, checkpoint, latest records
    Scene(scene::Args),
    /// Show the state around named nodes, edges, observations and evidence
    Context(context::Args),
    /// Walk the graphs from named nodes, edges, paths, symbols, edge kinds or the frontier
    Graph(graph::Args),
    /// Show captures, backlog, roadmap streams and objective drafts
    Planning(planning::Args),
    /// Check whether the recorded understanding still matches the code
    Freshness(freshness::Args),
    /// Tell how full the agent's context is and whether to prepare for compaction
    Pressure(pressure::Args),
    /// Decide whether to resume from the checkpoint or re-gather source context
    Reorient(reorient::Args),
    /// Print the bounded `<epiphany_state>` block for an agent's context
    Prompt(prompt::Args),
}

/// Runs one command.
pub fn run(ctx: &Ctx, command: &Command) -> Result<Status> {
    match command {
        Command::Init(args) => init::run(ctx, args),
        Command::Show(args) => show::run(ctx, args),
        Command::Log(args) => log::run(ctx, args),
        Command::Diff(args) => diff::run(ctx, args),
        Command::Rollback(args) => rollback::run(ctx, args),
        Command::Verify(args) => verify::run(ctx, args),
        Command::Update(args) => update::run(ctx, args),
        Command::Scene(args) => scene::run(ctx, args),
        Command::Context(args) => context::run(ctx, args),
        Command::Graph(args) => graph::run(ctx, args),
        Command::Planning(args) => planning::run(ctx, args),
        Command::Freshness(args) => freshness::run(ctx, args),
        Command::Pressure(args) => pressure::run(ctx, args),
        Command::Reorient(args) => reorient::run(ctx, args),
        Command::Prompt(args) => prompt::run(ctx, args),
    }
}
