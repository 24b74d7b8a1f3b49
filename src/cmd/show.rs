//! `epiphany show`: the full typed state, at the head or as of an earlier revision, whole or
//! a page of it at a time.

use anyhow::Result;
use serde::Serialize;

use crate::ctx::Ctx;
use crate::ctx::Status;
use crate::cmd::Tool;
use crate::cmd::schema_of;
use crate::policy::page::Page;
use crate::policy::page::page;
use crate::render::Document;
use crate::state::model::State;
use crate::state::store::Revision;

/// Print the full typed state as JSON.
///
/// Without `--revision`, prints the head. With it, rebuilds the state as of that revision by
/// replaying the rollout; a revision is a number, `HEAD~N`, or a record id (or a unique prefix
/// of one). The output is the state object itself (snake_case), pretty-printed for a person and
/// compact with `--json`.
///
/// With `--limit N`, every list of the state (graph nodes and edges, observations, evidence,
/// planning, ...) holds at most N items, from `--offset`; everything else comes whole, and a
/// `page` field says where the next page starts (`next_offset`, `null` on the last). As an MCP
/// tool it pages by 50 unless told otherwise: hosts cap what a tool may return.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Show the state as of this revision instead of the head
    #[arg(long, value_name = "REV")]
    pub revision: Option<Revision>,
    /// At most N items of each list
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub limit: Option<u32>,
    /// With `--limit`: the first item of each list to show
    #[arg(long, value_name = "N", requires = "limit", default_value_t = 0)]
    pub offset: u32,
}

/// How `mcp` offers this command as a tool and `schema` describes its report.
pub const TOOL: Tool = Tool::READER
    .about("The whole recorded state (objective, subgoals, graphs, observations, evidence, checkpoint, planning), now or at an earlier `revision`, its lists in pages. For less, use `scene` or `context`.")
    .report(schema_of::<Shown>)
    .default_argument("limit", 50);

/// The state, or a page of it.
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct Shown {
    /// The state (its lists cut to the page, with `--limit`).
    #[serde(flatten)]
    pub state: State,
    /// Where the page is, with `--limit`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub page: Option<Page>,
}

/// Runs `show`.
pub fn run(ctx: &Ctx, args: &Args) -> Result<Status> {
    let Args {
        revision,
        limit,
        offset,
    } = args;
    let store = ctx.store()?;
    let mut state = match revision {
        Some(revision) => {
            let history = store.sound_history()?;
            history.fold_to(history.resolve(revision)?).state
        }
        None => store.head()?.state,
    };
    let page = limit.map(|limit| page(&mut state, *offset as usize, limit as usize));
    ctx.ui.emit(&Document(Shown { state, page }))?;
    Ok(Status::Ok)
}
