//! `epiphany conflicts`: the open conflicts with what each side wrote, and `conflicts settle`,
//! which takes one side's value for each through the write path ([`write_edit`]): the settle
//! is an ordinary record, listed by `log` and undone by `rollback`.

use std::io::Write;

use anyhow::Result;
use serde::Serialize;
use serde_json::Value;

use crate::cmd::Tool;
use crate::cmd::schema_of;
use crate::cmd::update::WriteFlags;
use crate::cmd::update::write_outcome_schema;
use crate::cmd::update::write_edit;
use crate::ctx::Ctx;
use crate::ctx::Status;
use crate::error::Failure;
use crate::policy::conflicts::Selection;
use crate::policy::conflicts::Settlement;
use crate::policy::conflicts::settle;
use crate::policy::one_line::Edit;
use crate::policy::text::truncate;
use crate::state::fold::chosen_value;
use crate::state::model::OpenConflict;
use crate::state::model::Side;
use crate::state::problem::Problem;
use crate::ui::Report;

/// List the open conflicts, or settle them by taking one side.
///
/// Merged branches that wrote one field or record differently leave a conflict: the fold
/// order keeps one value, and `freshness --check` fails until a write that saw both sides
/// writes it again. `conflicts` lists each open conflict by its key (`objective`,
/// `architecture_nodes/lexer`) with what every competing record wrote and which side of a git
/// merge it came from: `ours` was committed on the branch checked out (or is not committed
/// yet), `theirs` came with a merge into it.
///
/// `conflicts settle KEY... --take ours|theirs` (or `--all`) writes again, in one record, the
/// value the last write of that side left for each: an ordinary write through `update`'s path
/// (its checks, `--dry-run`, `--expected-revision`), listed by `log` and undone by `rollback`.
/// Example: `epiphany conflicts settle --all --take theirs`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Settle conflicts instead of listing them
    #[command(subcommand)]
    pub action: Option<Action>,
}

/// `conflicts` subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum Action {
    /// Settle open conflicts by writing one side's value again
    Settle(SettleArgs),
}

/// `conflicts settle`.
#[derive(Debug, clap::Args)]
pub struct SettleArgs {
    /// The keys of the conflicts to settle, as `epiphany conflicts` lists them
    #[arg(value_name = "ID", required_unless_present = "all", conflicts_with = "all")]
    pub ids: Vec<String>,
    /// Settle every open conflict
    #[arg(long)]
    pub all: bool,
    /// Which side's value to keep: `ours` (the branch checked out) or `theirs` (merged in)
    #[arg(long, value_name = "SIDE", value_parser = side, required = true)]
    pub take: Side,
    #[allow(missing_docs)]
    #[command(flatten)]
    pub flags: WriteFlags,
}

/// How `mcp` offers this command and `schema` describes its report: `conflicts` lists, and
/// `conflicts_settle` writes.
pub const TOOL: Tool = Tool::READER
    .about("The open conflicts: fields and records that merged branches wrote differently, each by its key with what every side wrote (`ours`: the branch checked out; `theirs`: merged in). `freshness` reports the state stale until they are settled with `conflicts_settle`.")
    .report(schema_of::<ConflictsReport>)
    .subcommands(&[("settle", SETTLE_TOOL)]);

/// `conflicts settle` over MCP: a write.
const SETTLE_TOOL: Tool = Tool::WRITER
    .arguments(&[("ids", "The keys of the conflicts to settle, as the `conflicts` tool lists them")])
    .about("Merged branches that wrote one field or record differently leave conflicts, listed by the `conflicts` tool; this writes the value one side left for each again, as one ordinary record that `rollback` undoes.")
    .report(write_outcome_schema);

fn side(text: &str) -> Result<Side, Problem> {
    match text {
        "ours" => Ok(Side::Ours),
        "theirs" => Ok(Side::Theirs),
        _ => Err(Problem::whole(
            "a side is `ours` (the branch checked out) or `theirs` (merged in)",
        )),
    }
}

/// The open conflicts.
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct ConflictsReport {
    conflicts: Vec<ConflictEntry>,
}

/// One open conflict.
#[derive(Debug, Serialize, schemars::JsonSchema)]
struct ConflictEntry {
    /// The field or record (`architecture_nodes/lexer`): what `conflicts settle` takes.
    key: String,
    /// The record whose value the fold order kept.
    kept: String,
    /// Every competing record's write, in fold order.
    writes: Vec<WriteEntry>,
}

/// What one competing record wrote.
#[derive(Debug, Serialize, schemars::JsonSchema)]
struct WriteEntry {
    record: String,
    at: String,
    side: Side,
    /// The value it left (`null` for a removal; a note naming the size of a large one).
    value: Value,
}

impl ConflictsReport {
    fn of(open: Vec<OpenConflict>) -> ConflictsReport {
        let entry = |conflict: OpenConflict| ConflictEntry {
            key: conflict.key,
            kept: (conflict.writes.last()).map_or_else(String::new, |write| write.record.clone()),
            writes: (conflict.writes.into_iter())
                .map(|write| WriteEntry {
                    value: chosen_value(&write.value, &write.record),
                    record: write.record,
                    at: write.at,
                    side: write.side,
                })
                .collect(),
        };
        ConflictsReport {
            conflicts: open.into_iter().map(entry).collect(),
        }
    }
}

impl Report for ConflictsReport {
    fn human(&self, out: &mut dyn Write) -> std::io::Result<()> {
        if self.conflicts.is_empty() {
            return writeln!(out, "no open conflicts");
        }
        writeln!(
            out,
            "{} open conflict(s); settle with `epiphany conflicts settle [KEY...|--all] --take ours|theirs`",
            self.conflicts.len()
        )?;
        for conflict in &self.conflicts {
            writeln!(out, "{}", conflict.key)?;
            for write in &conflict.writes {
                let kept = if write.record == conflict.kept { "  (kept)" } else { "" };
                writeln!(
                    out,
                    "  {:<6} {} {}  {}{kept}",
                    write.side.as_str(),
                    &write.record[..write.record.len().min(12)],
                    write.at,
                    truncate(&write.value.to_string(), 100)
                )?;
            }
        }
        Ok(())
    }
}

/// Runs `conflicts`.
pub fn run(ctx: &Ctx, args: &Args) -> Result<Status> {
    let store = ctx.store()?;
    let head = store.head()?;
    let Some(Action::Settle(args)) = &args.action else {
        let open = store.open_conflicts(&head.state.conflicts)?;
        ctx.ui.emit(&ConflictsReport::of(open))?;
        return Ok(Status::Ok);
    };
    let SettleArgs {
        ids,
        all,
        take,
        flags,
    } = args;
    if head.state.conflicts.is_empty() {
        return Err(Failure::input("nothing to settle: the store has no open conflicts")
            .with_hint("nothing was written; `epiphany conflicts` lists the open ones")
            .into());
    }
    let open = store.open_conflicts(&head.state.conflicts)?;
    let selection = match all {
        true => Selection::All,
        false => Selection::Keys(ids),
    };
    write_edit(ctx, &store, flags, "the conflicts were not settled", |state| {
        if state.conflicts != head.state.conflicts {
            return Err(vec![Problem::whole(
                "the open conflicts changed while they were read (a write landed); run the command again",
            )]);
        }
        let Settlement { patch, settled } = settle(&open, state, selection, *take)?;
        Ok(Edit::Write {
            patch: Box::new(patch),
            written: settled,
            removed: Vec::new(),
        })
    })
}
