//! `epiphany rollback`: a new revision whose state equals an earlier one. History is never
//! rewritten: the rolled-back records stay in the rollout, and replay never resurrects them.

use anyhow::Result;

use crate::cli::Ctx;
use crate::cli::Status;
use crate::cmd::update::WriteReport;
use crate::error::Failure;
use crate::mcp::Tool;
use crate::mcp::schema_of;
use crate::policy::update::changed_fields_between;
use crate::state::model::State;
use crate::state::rollout::Restore;
use crate::state::rollout::Source;
use crate::state::store::Draft;
use crate::state::store::Payload;

/// Write a new revision whose state equals revision N's.
///
/// The rollout keeps every record; the rollback is one more record that carries the restored
/// state, so `log` and `diff` show what happened and later records of the old line never come
/// back. Rolling back to a state equal to the head writes nothing.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The revision whose state to restore
    #[arg(long, value_name = "N")]
    pub to_revision: u64,
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
    let target = store.state_at(*to_revision)?;
    let written = ctx.write(&store, |head| {
        if let Some(expected) = expected_revision.filter(|e| *e != head.state.revision) {
            return Err(Failure::conflict(format!(
                "epiphany state revision mismatch: expected {expected}, found {}",
                head.state.revision
            ))
            .with_hint("the store moved on; check `epiphany log` before rolling back")
            .into());
        }
        let restored = State {
            revision: head.state.revision,
            ..target.clone()
        };
        let changed_fields = changed_fields_between(&head.state, &restored);
        Ok((!changed_fields.is_empty()).then(|| Draft {
            source: Source::Rollback,
            turn_id: None,
            changed_fields,
            payload: Payload::Restore(Restore {
                to_revision: *to_revision,
                state: target.clone(),
            }),
        }))
    })?;
    match &written.record {
        Some(record) => ctx.ui.emit(&WriteReport::of(record))?,
        None => {
            ctx.ui.status(&format!(
                "nothing changed: the head already equals revision {to_revision}"
            ));
            ctx.ui
                .emit(&WriteReport::unchanged(&written.head, Source::Rollback))?;
        }
    }
    Ok(Status::Ok)
}
