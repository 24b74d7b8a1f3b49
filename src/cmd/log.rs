//! `epiphany log`: the rollout, newest first.

use std::io::Write;

use anyhow::Result;
use serde::Serialize;

use crate::ctx::Ctx;
use crate::ctx::Status;
use crate::cmd::Tool;
use crate::cmd::schema_of;
use crate::state::fields::ChangedField;
use crate::state::rollout::Source;
use crate::ui::Report;

/// List rollout entries, newest first.
///
/// Each entry is one accepted write: the revision it produced (its position in the one order
/// every clone folds records in; `seq` is the same number), its record id and parents, when and
/// by which command it was written, the turn that wrote it, the commit checked out at the time,
/// and the fields it changed. After git merges branches, revisions may shift; record ids never
/// change, and every command that takes a revision takes an id or a unique prefix of one.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Show at most N entries
    #[arg(long, short = 'n', value_name = "N")]
    pub limit: Option<usize>,
}

/// How `mcp` offers this command as a tool and `schema` describes its report.
pub const TOOL: Tool = Tool::READER
    .about("The history of writes, newest first: revision, record id, time, tool and changed fields. Use it to pick a revision for `show`, `diff` or `rollback`.").report(schema_of::<LogReport>);

/// One rollout entry.
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct LogEntry {
    seq: u64,
    revision: u64,
    id: String,
    parents: Vec<String>,
    at: String,
    source: Source,
    changed_fields: Vec<ChangedField>,
    turn_id: Option<String>,
    git_head: Option<String>,
}

/// The rollout, newest first.
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct LogReport {
    entries: Vec<LogEntry>,
}

impl Report for LogReport {
    fn human(&self, out: &mut dyn Write) -> std::io::Result<()> {
        if self.entries.is_empty() {
            return writeln!(out, "no writes yet");
        }
        for entry in &self.entries {
            let fields: Vec<&str> = entry.changed_fields.iter().map(|f| f.as_str()).collect();
            let head = entry
                .git_head
                .as_deref()
                .map_or(String::new(), |h| format!(" @{}", &h[..h.len().min(10)]));
            let turn = entry
                .turn_id
                .as_deref()
                .map_or(String::new(), |t| format!(" turn {t}"));
            writeln!(
                out,
                "r{:<4} {} {}  {:<8} {}{head}{turn}",
                entry.revision,
                &entry.id[..entry.id.len().min(12)],
                entry.at,
                entry.source.as_str(),
                fields.join(", ")
            )?;
        }
        Ok(())
    }
}

/// Runs `log`.
pub fn run(ctx: &Ctx, args: &Args) -> Result<Status> {
    let Args { limit } = args;
    let store = ctx.store()?;
    let entries = store
        .recent(limit.unwrap_or(usize::MAX))?
        .into_iter()
        .map(|(revision, record)| LogEntry {
            seq: revision,
            revision,
            id: record.id,
            parents: record.parents,
            at: record.at,
            source: record.source,
            changed_fields: record.changed_fields,
            turn_id: record.turn_id,
            git_head: record.git_head,
        })
        .collect();
    ctx.ui.emit(&LogReport { entries })?;
    Ok(Status::Ok)
}
