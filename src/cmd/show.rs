//! `epiphany show`: the full typed state, at the head or as of an earlier revision.

use anyhow::Result;

use crate::cli::Ctx;
use crate::cli::Status;
use crate::mcp::Tool;
use crate::mcp::schema_of;
use crate::render::Document;
use crate::state::model::State;
use crate::state::store::Revision;

/// Print the full typed state as JSON.
///
/// Without `--revision`, prints the head. With it, rebuilds the state as of that revision by
/// replaying the rollout; a revision is a number, `HEAD~N`, or a record id (or a unique prefix
/// of one). The output is the state object itself (snake_case), pretty-printed for a person and
/// compact with `--json`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Show the state as of this revision instead of the head
    #[arg(long, value_name = "REV")]
    pub revision: Option<Revision>,
}

/// How `mcp` offers this command as a tool and `schema` describes its report.
pub const TOOL: Tool = Tool::READER.report(schema_of::<State>);

/// Runs `show`.
pub fn run(ctx: &Ctx, args: &Args) -> Result<Status> {
    let Args { revision } = args;
    let store = ctx.store()?;
    let state = match revision {
        Some(revision) => {
            let history = store.sound_history()?;
            history.fold_to(history.resolve(revision)?).state
        }
        None => store.head()?.state,
    };
    ctx.ui.emit(&Document(state))?;
    Ok(Status::Ok)
}
