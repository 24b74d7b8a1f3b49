//! `epiphany diff`: a readable line diff of the state between two revisions.

use std::io::Write;

use anyhow::Result;
use serde::Serialize;

use crate::ctx::Ctx;
use crate::ctx::Status;
use crate::cmd::Tool;
use crate::cmd::schema_of;
use crate::state::fields::ChangedField;
use crate::state::fields::changed_fields_between;
use crate::state::store::Revision;
use crate::ui::Report;

/// Show what changed in the state between two revisions.
///
/// With no revisions, compares the previous revision with the head; with one, compares it with
/// the head; with two, compares the first with the second. A revision is a number, a record id
/// (or a unique prefix of one), or a name relative to the head as in git: `HEAD` (also `@`),
/// `HEAD~N` N revisions before it, and each trailing `^` one more (`HEAD^`, `HEAD~2^`). The diff
/// is a unified line diff of the pretty-printed JSON state.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The older revision (default: the one before the newer)
    #[arg(value_name = "REV_A")]
    pub from: Option<Revision>,
    /// The newer revision (default: the head)
    #[arg(value_name = "REV_B")]
    pub to: Option<Revision>,
}

/// How `mcp` offers this command as a tool and `schema` describes its report.
pub const TOOL: Tool = Tool::READER
    .about("What changed between two revisions (a number, `HEAD~N` or a record id; by default the last write), as a line diff of the state's JSON.").report(schema_of::<DiffReport>);

/// The difference between two revisions.
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct DiffReport {
    from: u64,
    to: u64,
    changed_fields: Vec<ChangedField>,
    diff: String,
}

impl Report for DiffReport {
    fn human(&self, out: &mut dyn Write) -> std::io::Result<()> {
        if self.diff.is_empty() {
            return writeln!(
                out,
                "no differences between revision {} and revision {}",
                self.from, self.to
            );
        }
        out.write_all(self.diff.as_bytes())
    }
}

/// Runs `diff`.
pub fn run(ctx: &Ctx, args: &Args) -> Result<Status> {
    let Args { from, to } = args;
    let history = ctx.store()?.sound_history()?;
    let to = match to {
        Some(revision) => history.resolve(revision)?,
        None => history.records.len(),
    };
    let from = match from {
        Some(revision) => history.resolve(revision)?,
        None => to.saturating_sub(1),
    };
    let (before, after) = (history.fold_to(from).state, history.fold_to(to).state);
    let (from, to) = (from as u64, to as u64);
    let pretty = |state| serde_json::to_string_pretty(state).map(|text| text + "\n");
    let (old_text, new_text) = (pretty(&before)?, pretty(&after)?);
    let diff = similar::TextDiff::from_lines(&old_text, &new_text);
    let unified = if old_text == new_text {
        String::new()
    } else {
        diff.unified_diff()
            .context_radius(3)
            .header(&format!("revision {from}"), &format!("revision {to}"))
            .to_string()
    };
    let report = DiffReport {
        from,
        to,
        changed_fields: changed_fields_between(&before, &after),
        diff: unified,
    };
    ctx.ui.emit(&report)?;
    Ok(Status::Ok)
}
