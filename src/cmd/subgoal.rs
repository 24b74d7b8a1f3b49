//! `epiphany subgoal add|done`: add a step to the plan, or close one, in one line.

use anyhow::Result;

use crate::ctx::Ctx;
use crate::ctx::Status;
use crate::cmd::update::WriteFlags;
use crate::cmd::update::write_edit;
use crate::cmd::update::write_outcome_schema;
use crate::cmd::Tool;
use crate::policy::one_line::work::SubgoalInput;
use crate::policy::one_line::work::subgoal_add;
use crate::policy::one_line::work::subgoal_done;

/// Add a subgoal to the plan, or mark one done.
///
/// `subgoal add TITLE` adds an `open` subgoal whose id is `sg-` and the title's words
/// (`sg-keep-spans-on-retry`, or `sg-keep-spans-on-retry-2` when that is taken) unless `--id`
/// gives one; `--active` also makes it the active subgoal. `subgoal done ID` sets its status to
/// `done` (or `--status`). Ids are looked up when the write takes the store lock.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// What to do
    #[command(subcommand)]
    pub action: Action,
}

/// `subgoal` subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum Action {
    /// Add a subgoal
    Add(AddArgs),
    /// Close a subgoal
    Done(DoneArgs),
}

/// `subgoal add`.
#[derive(Debug, clap::Args)]
pub struct AddArgs {
    /// Its title
    #[arg(value_name = "TITLE")]
    pub title: String,
    /// Its id (default: `sg-` and the title's words)
    #[arg(long, value_name = "ID")]
    pub id: Option<String>,
    /// Its status (default `open`)
    #[arg(long, value_name = "STATUS")]
    pub status: Option<String>,
    /// Make it the active subgoal
    #[arg(long)]
    pub active: bool,
    #[allow(missing_docs)]
    #[command(flatten)]
    pub flags: WriteFlags,
}

/// `subgoal done`.
#[derive(Debug, clap::Args)]
pub struct DoneArgs {
    /// The subgoal's id
    pub id: String,
    /// The status to set
    #[arg(long, value_name = "STATUS", default_value = "done")]
    pub status: String,
    #[allow(missing_docs)]
    #[command(flatten)]
    pub flags: WriteFlags,
}

/// How `mcp` offers this command as a tool and `schema` describes its report.
pub const TOOL: Tool = Tool::WRITER
    .about("Subgoals break the objective into steps.").report(write_outcome_schema);

/// Runs `subgoal`.
pub fn run(ctx: &Ctx, args: &Args) -> Result<Status> {
    let store = ctx.store()?;
    match &args.action {
        Action::Add(AddArgs {
            title,
            id,
            status,
            active,
            flags,
        }) => {
            let input = SubgoalInput {
                title,
                id: id.as_deref(),
                status: status.as_deref(),
                active: *active,
            };
            write_edit(ctx, &store, flags, "the subgoal was not added", |state| {
                subgoal_add(state, input)
            })
        }
        Action::Done(DoneArgs { id, status, flags }) => {
            write_edit(ctx, &store, flags, "no subgoal was closed", |state| {
                subgoal_done(state, id, status)
            })
        }
    }
}
