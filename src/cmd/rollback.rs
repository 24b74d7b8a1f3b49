//! `epiphany rollback`: a new revision whose state equals an earlier one. History is never
//! rewritten: the rolled-back records stay in the rollout, and replay never resurrects them.
//! The write itself is [`crate::write::restore`]'s; this module reports it.

use anyhow::Result;

use crate::cmd::Tool;
use crate::cmd::schema_of;
use crate::cmd::update::WriteReport;
use crate::ctx::Ctx;
use crate::ctx::Status;
use crate::state::rollout::Source;
use crate::state::store::Revision;
use crate::write::Restored;
use crate::write::restore;

/// Write a new revision whose state equals an earlier revision's.
///
/// The rollout keeps every record; the rollback is one more record that names the records
/// whose state it restores (their heads), so `log` and `diff` show what happened, later
/// records of the old line never come back, and `freshness` still reports what was stale
/// then (the restored state keeps its anchors: when each graph node and the checkpoint was
/// last written). The record stays small however large the state is. Rolling back to a state
/// equal to the head writes nothing.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The revision to restore: a number, HEAD~N, or a record id (or a unique prefix of one)
    #[arg(long, value_name = "REV")]
    pub to_revision: Revision,
    /// Refuse with exit 3 unless the store is at this revision
    #[arg(long, value_name = "N")]
    pub expected_revision: Option<u64>,
}

/// How `mcp` offers this command as a tool and `schema` describes its report.
pub const TOOL: Tool = Tool::WRITER
    .about("Undo writes: record a new revision whose state equals the one at `to_revision` (a number, `HEAD~N` or a record id). Nothing is erased from the history.").idempotent().report(schema_of::<WriteReport>);

/// Runs `rollback`.
pub fn run(ctx: &Ctx, args: &Args) -> Result<Status> {
    let store = ctx.store()?;
    match restore(ctx, &store, &args.to_revision, args.expected_revision)? {
        Restored::Unchanged {
            revision,
            to_revision,
        } => {
            ctx.ui.status(&format!(
                "nothing changed: the head already equals revision {to_revision}"
            ));
            ctx.ui
                .emit(&WriteReport::unchanged(revision, Source::Rollback))?;
        }
        Restored::Committed(committed) => ctx
            .ui
            .emit_landed(&WriteReport::of(&committed), &committed.landed()),
    }
    Ok(Status::Ok)
}
