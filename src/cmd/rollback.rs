//! `epiphany rollback`: a new revision whose state equals an earlier one. History is never
//! rewritten: the rolled-back records stay in the rollout, and replay never resurrects them.

use std::collections::BTreeMap;

use anyhow::Result;

use crate::ctx::Ctx;
use crate::ctx::Status;
use crate::cmd::update::WriteReport;
use crate::error::Failure;
use crate::cmd::Tool;
use crate::cmd::schema_of;
use crate::state::rollout::Restore;
use crate::state::rollout::Source;
use crate::state::store::Draft;
use crate::state::store::Payload;
use crate::state::store::Revision;
use crate::state::store::WriteScope;

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
pub const TOOL: Tool = Tool::WRITER.idempotent().report(schema_of::<WriteReport>);

/// Runs `rollback`.
pub fn run(ctx: &Ctx, args: &Args) -> Result<Status> {
    let Args {
        to_revision,
        expected_revision,
    } = args;
    let store = ctx.store()?;
    let tx = ctx.begin(&store, WriteScope::Whole)?;
    let head_revision = tx.head().state.revision;
    if let Some(expected) = expected_revision.filter(|e| *e != head_revision) {
        return Err(Failure::conflict(format!(
            "epiphany state revision mismatch: expected {expected}, found {head_revision}"
        ))
        .with_hint("the store moved on; check `epiphany log` before rolling back")
        .into());
    }
    let prefix = store.prefix(to_revision)?;
    let target = store.restored(&prefix.tips)?;
    let changed_fields = tx.head().changed_fields_to(&target);
    let count = prefix.count;
    if changed_fields.is_empty() {
        ctx.ui.status(&format!(
            "nothing changed: the head already equals revision {count}"
        ));
        ctx.ui
            .emit(&WriteReport::unchanged(head_revision, Source::Rollback))?;
        return Ok(Status::Ok);
    }
    let committed = tx
        .stage(
        Draft {
            source: Source::Rollback,
            turn_id: None,
            changed_fields,
            payload: Payload::Restore {
                restore: Box::new(Restore {
                    to_revision: count as u64,
                    to_record: prefix.record,
                    tips: Some(prefix.tips),
                    state: None,
                    anchors: BTreeMap::new(),
                }),
                target: Box::new(target),
            },
        },
        ctx.stamp(&store),
    )
        .commit()?;
    for warning in &committed.warnings {
        ctx.ui.warn(warning);
    }
    ctx.ui
        .emit_landed(&WriteReport::of(&committed), &committed.landed());
    Ok(Status::Ok)
}
