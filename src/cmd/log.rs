//! `epiphany log`: the rollout, newest first.

use std::io::Write;

use anyhow::Result;
use serde::Serialize;

use crate::cli::Ctx;
use crate::cli::Status;
use crate::mcp::Tool;
use crate::mcp::schema_of;
use crate::state::patch::ChangedField;
use crate::state::rollout::Source;
use crate::ui::Report;

/// List rollout entries, newest first.
///
/// Each entry is one accepted write: its sequence number, the revision it produced, when and
/// by which command it was written, the turn that wrote it, the commit checked out at the
/// time, and the fields it changed.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Show at most N entries
    #[arg(long, short = 'n', value_name = "N")]
    pub limit: Option<usize>,
}

/// How `mcp` offers this command as a tool and `schema` describes its report.
pub const TOOL: Tool = Tool::READER.report(schema_of::<LogReport>);

/// One rollout entry.
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct LogEntry {
    seq: u64,
    revision: u64,
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
                "r{:<4} {}  {:<8} {}{head}{turn}",
                entry.revision,
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
    let history = store.history()?;
    let entries = history
        .records
        .into_iter()
        .rev()
        .take(limit.unwrap_or(usize::MAX))
        .map(|line| LogEntry {
            seq: line.record.seq,
            revision: line.record.revision,
            at: line.record.at,
            source: line.record.source,
            changed_fields: line.record.changed_fields,
            turn_id: line.record.turn_id,
            git_head: line.record.git_head,
        })
        .collect();
    ctx.ui.emit(&LogReport { entries })?;
    Ok(Status::Ok)
}
