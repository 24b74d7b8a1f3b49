//! `epiphany backlog add`: put an item on the planning backlog from its title alone.

use anyhow::Result;

use crate::ctx::Ctx;
use crate::ctx::Status;
use crate::cmd::update::WriteFlags;
use crate::cmd::update::write_edit;
use crate::cmd::update::write_outcome_schema;
use crate::cmd::Tool;
use crate::policy::one_line::work::BacklogInput;
use crate::policy::one_line::work::backlog_add;

/// Put an item on the planning backlog, kept apart from the active objective.
///
/// `backlog add TITLE` needs nothing else: the id is `bl-` and the title's words, the summary
/// the title, the kind `task`, the priority `medium`, the horizon `later`, the status
/// `proposed`, the confidence `medium` and the product area `general`; the flags change the
/// common ones. `epiphany planning` shows the backlog; a patch (`update`) edits every field.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// What to do
    #[command(subcommand)]
    pub action: Action,
}

/// `backlog` subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum Action {
    /// Add a backlog item
    Add(AddArgs),
}

/// `backlog add`.
#[derive(Debug, clap::Args)]
pub struct AddArgs {
    /// Its title
    #[arg(value_name = "TITLE")]
    pub title: String,
    /// What it is about (default: the title)
    #[arg(long, value_name = "TEXT")]
    pub summary: Option<String>,
    /// Its kind (default `task`)
    #[arg(long, value_name = "KIND")]
    pub kind: Option<String>,
    /// Its priority (default `medium`)
    #[arg(long, value_name = "PRIORITY")]
    pub priority: Option<String>,
    /// When (default `later`)
    #[arg(long, value_name = "HORIZON")]
    pub horizon: Option<String>,
    #[allow(missing_docs)]
    #[command(flatten)]
    pub flags: WriteFlags,
}

/// How `mcp` offers this command as a tool and `schema` describes its report.
pub const TOOL: Tool = Tool::WRITER
    .about("The backlog holds work for later.").report(write_outcome_schema);

/// Runs `backlog`.
pub fn run(ctx: &Ctx, args: &Args) -> Result<Status> {
    let Action::Add(AddArgs {
        title,
        summary,
        kind,
        priority,
        horizon,
        flags,
    }) = &args.action;
    let store = ctx.store()?;
    let input = BacklogInput {
        title,
        summary: summary.as_deref(),
        kind: kind.as_deref(),
        priority: priority.as_deref(),
        horizon: horizon.as_deref(),
    };
    write_edit(ctx, &store, flags, "the backlog item was not added", |state| {
        backlog_add(state, input)
    })
}
