//! The command registry: one module per subcommand, one dispatch `match`.
//!
//! Every command module has the same shape: an `Args` struct whose doc comments are the help
//! text, a `run(ctx, args) -> Result<Status>`, and a report type that renders as text or JSON.
//! Commands stay thin: they read input, call `state`, `policy` or `search`, and emit a report.

use anyhow::Result;

use crate::cli::Ctx;
use crate::cli::Status;

pub mod diff;
pub mod distill;
pub mod draft;
pub mod init;
pub mod input;
pub mod log;
pub mod promote;
pub mod propose;
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
    /// Draft an observation and its evidence from text; writes nothing
    Distill(distill::Args),
    /// Draft a map/frontier/churn patch from verified observations; writes nothing
    Propose(propose::Args),
    /// Gate a drafted patch with verifier evidence; on acceptance apply it like `update`
    Promote(promote::Args),
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
        Command::Distill(args) => distill::run(ctx, args),
        Command::Propose(args) => propose::run(ctx, args),
        Command::Promote(args) => promote::run(ctx, args),
    }
}
