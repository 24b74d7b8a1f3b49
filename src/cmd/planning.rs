//! `epiphany planning`: every planning record with its counts, kept apart from the active
//! objective. Read-only; works with or without git.

use std::io::Write;

use anyhow::Result;

use crate::ctx::Ctx;
use crate::ctx::Status;
use crate::cmd::Tool;
use crate::cmd::schema_of;
use crate::policy::planning::planning_view;
use crate::policy::prompt::record_line;
use crate::ui::Report;
use crate::wire::planning::PlanningView;

/// Show captures, backlog, roadmap streams and objective drafts.
///
/// Planning records are never the active objective: a draft becomes the objective only when a
/// person adopts it with `epiphany update`. The view lists every record with its status and
/// the counts an agent checks first (pending captures, ready backlog items, drafts).
#[derive(Debug, clap::Args)]
pub struct Args {}

/// How `mcp` offers this command as a tool and `schema` describes its report.
pub const TOOL: Tool = Tool::READER
    .about("The planning records: captures, backlog, roadmap streams and objective drafts, with their status.").report(schema_of::<PlanningView>);

impl Report for PlanningView {
    fn human(&self, out: &mut dyn Write) -> std::io::Result<()> {
        let s = &self.summary;
        if let Some(objective) = &s.active_objective {
            writeln!(out, "active objective: {objective}")?;
        }
        writeln!(
            out,
            "{} captures ({} pending, {} from GitHub issues), {} backlog items ({} ready), {} roadmap streams, {} objective drafts ({} draft)",
            s.capture_count,
            s.pending_capture_count,
            s.github_issue_capture_count,
            s.backlog_item_count,
            s.ready_backlog_item_count,
            s.roadmap_stream_count,
            s.objective_draft_count,
            s.draft_objective_count
        )?;
        let p = &self.planning;
        for draft in &p.objective_drafts {
            writeln!(
                out,
                "objective draft {}",
                record_line(&draft.id, &draft.status, &draft.title)
            )?;
            for criterion in &draft.acceptance_criteria {
                writeln!(out, "  acceptance: {criterion}")?;
            }
        }
        for stream in &p.roadmap_streams {
            writeln!(
                out,
                "roadmap stream {}",
                record_line(&stream.id, &stream.status, &stream.title)
            )?;
        }
        for item in &p.backlog_items {
            writeln!(
                out,
                "backlog {}",
                record_line(
                    &item.id,
                    &format!(
                        "{} / {} / {}",
                        item.status, item.priority.value, item.horizon
                    ),
                    &item.title
                )
            )?;
        }
        for capture in &p.captures {
            writeln!(
                out,
                "capture {}",
                record_line(
                    &capture.id,
                    &format!("{} via {}", capture.status, capture.source.kind),
                    &capture.title
                )
            )?;
        }
        writeln!(out, "{}", s.note)
    }
}

/// Runs `planning`.
pub fn run(ctx: &Ctx, _args: &Args) -> Result<Status> {
    let head = ctx.store()?.head()?;
    let state = head.has_state().then_some(&head.state);
    ctx.ui.emit(&PlanningView::from(planning_view(state)))?;
    Ok(Status::Ok)
}
