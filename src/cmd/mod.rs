//! The command registry: one module per subcommand, one dispatch `match`.
//!
//! Every command module has the same shape: an `Args` struct whose doc comments are the help
//! text, a `run(ctx, args) -> Result<Status>`, and a report type that renders as text or JSON.
//! Commands stay thin: they read input, call `state`, `policy` or `search`, and emit a report.

use anyhow::Result;

use crate::cli::Ctx;
use crate::cli::Status;

pub mod diff;
pub mod index;
pub mod init;
pub mod input;
pub mod log;
pub mod retrieve;
pub mod rollback;
pub mod show;
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
    /// Build or update the search index under `.epiphany/cache/`
    Index(index::Args),
    /// Find the files and lines that answer a question about the code
    Retrieve(retrieve::Args),
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
        Command::Index(args) => index::run(ctx, args),
        Command::Retrieve(args) => retrieve::run(ctx, args),
    }
}
