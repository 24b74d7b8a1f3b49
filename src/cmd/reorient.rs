//! `epiphany reorient`: after a context loss, resume from the investigation checkpoint or
//! re-gather first? `--check` makes it a gate (exit 1 on regather).

use std::io::Write;

use anyhow::Result;

use crate::ctx::Ctx;
use crate::ctx::Status;
use crate::cmd::pressure::TokenLimits;
use crate::cmd::pressure::tokens;
use crate::cmd::Tool;
use crate::cmd::schema_of;
use crate::policy;
use crate::policy::pressure::Telemetry;
use crate::policy::pressure::assess_pressure;
use crate::policy::prompt::inline_ids;
use crate::policy::reorient::ReorientAction;
use crate::policy::reorient::plan_reorientation;
use crate::signals::observe;
use crate::state::store::Head;
use crate::state::store::Store;
use crate::ui::Report;
use crate::wire::reorient::Reorientation;

/// Decide whether to resume from the investigation checkpoint or re-gather source context.
///
/// Regather when there is no state or no checkpoint, when the checkpoint asks for it, when a
/// file it cites is dirty in the index or on the frontier or changed in the work tree since it
/// was written, when an active frontier node cites a changed file, or when the checkpoint cites
/// no code while the state drifted. The freshness read is the one `freshness`, `scene` and
/// `prompt` make, so they agree. Otherwise resume. Token counts (`--used` and limits) only
/// add a compaction warning; they never change the verdict. With `--check`, exits 1 on
/// regather and 0 on resume.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Exit 1 when the verdict is regather
    #[arg(long)]
    pub check: bool,
    /// Tokens in the context now (the last turn's total)
    #[arg(long, value_name = "N", value_parser = tokens())]
    pub used: Option<i64>,
    /// Context window and compaction limits
    #[command(flatten)]
    pub limits: TokenLimits,
}

/// How `mcp` offers this command as a tool and `schema` describes its report.
pub const TOOL: Tool = Tool::READER
    .arguments(&[("check", "Answer no (`exit_code` 1) when the verdict is regather")])
    .about("Whether to resume from the saved checkpoint or re-read the code first: ask at the start of a session or after a compaction.").report(schema_of::<Reorientation>);

impl Report for Reorientation {
    fn human(&self, out: &mut dyn Write) -> std::io::Result<()> {
        let action = match self.action {
            ReorientAction::Resume => "resume",
            ReorientAction::Regather => "regather",
        };
        writeln!(out, "{action}: {}", self.note)?;
        writeln!(out, "next action: {}", self.next_action)?;
        if let Some(id) = &self.checkpoint_id {
            writeln!(out, "checkpoint: `{id}`")?;
        }
        let lists = [
            ("dirty checkpoint paths", &self.checkpoint_dirty_paths),
            ("changed checkpoint paths", &self.checkpoint_changed_paths),
            (
                "frontier nodes citing changed files",
                &self.active_frontier_node_ids,
            ),
        ];
        for (label, list) in lists {
            if !list.is_empty() {
                writeln!(out, "{label}: {}", inline_ids(list))?;
            }
        }
        let reasons: Vec<&str> = self.reasons.iter().map(|r| r.as_str()).collect();
        writeln!(out, "reasons: {}", reasons.join(", "))
    }
}

/// Runs `reorient`.
pub fn run(ctx: &Ctx, args: &Args) -> Result<Status> {
    let Args {
        check,
        used,
        limits,
    } = args;
    let store = ctx.store()?;
    let head = store.head()?;
    let verdict = reorientation(ctx, &store, &head, limits.telemetry(*used).as_ref())?;
    let regather = verdict.action == ReorientAction::Regather;
    ctx.ui.emit(&Reorientation::from(verdict))?;
    if *check && regather {
        return Ok(Status::No);
    }
    Ok(Status::Ok)
}

/// The resume-or-regather verdict for the store's head, from git freshness, the index and the
/// token telemetry when there is any.
pub fn reorientation(
    ctx: &Ctx,
    store: &Store,
    head: &Head,
    telemetry: Option<&Telemetry>,
) -> Result<policy::reorient::Reorientation> {
    let freshness = observe(ctx, store, head, None)?.freshness;
    let state = head.has_state().then_some(&head.state);
    Ok(plan_reorientation(
        state,
        &freshness,
        &assess_pressure(telemetry),
    ))
}
