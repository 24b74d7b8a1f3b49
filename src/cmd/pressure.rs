//! `epiphany pressure`: how full the agent's context is, from token counts on the command
//! line, and whether to checkpoint before the host compacts. Needs no store.

use std::io::Write;

use anyhow::Result;

use crate::ctx::Ctx;
use crate::ctx::Status;
use crate::cmd::Tool;
use crate::cmd::schema_of;
use crate::policy::pressure::Telemetry;
use crate::policy::pressure::assess_pressure;
use crate::ui::Report;
use crate::wire::pressure::Pressure;

/// Tell how full the agent's context is and whether to prepare for compaction.
///
/// The reading is the tokens in context now (`--used`, the last turn's size) against the
/// host's auto-compaction limit when given, else the model's context window. Levels: `low`
/// below 65 %, `elevated` from 65 %, `high` from 80 % (time to save a checkpoint), `critical`
/// from 95 %. Cumulative spend (`--total`) is never read as pressure on its own.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Tokens in the context now (the last turn's total)
    #[arg(long, value_name = "N", value_parser = tokens())]
    pub used: i64,
    /// Context window and compaction limits
    #[command(flatten)]
    pub limits: TokenLimits,
}

/// How `mcp` offers this command as a tool and `schema` describes its report.
pub const TOOL: Tool = Tool::READER
    .about("How full your context is, and whether to save a checkpoint before compaction.").report(schema_of::<Pressure>);

/// A token count: from 0 to the largest the arithmetic holds (a larger one is refused, not
/// clamped).
pub fn tokens() -> clap::builder::RangedI64ValueParser {
    clap::value_parser!(i64).range(0..)
}

/// The limits and cumulative count that go with a token reading.
#[derive(Debug, clap::Args)]
pub struct TokenLimits {
    /// The model's context window, in tokens
    #[arg(long, value_name = "N", value_parser = tokens())]
    pub context_window: Option<i64>,
    /// The host's auto-compaction threshold, in tokens (preferred over the window)
    #[arg(long, value_name = "N", value_parser = tokens())]
    pub auto_compact_limit: Option<i64>,
    /// Tokens spent over the whole session (cumulative)
    #[arg(long, value_name = "N", value_parser = tokens())]
    pub total: Option<i64>,
}

impl TokenLimits {
    /// The telemetry for `used` tokens in context; `None` when neither a current nor a
    /// cumulative count was given.
    pub fn telemetry(&self, used: Option<i64>) -> Option<Telemetry> {
        let TokenLimits {
            context_window,
            auto_compact_limit,
            total,
        } = *self;
        if used.is_none() && total.is_none() {
            return None;
        }
        Some(Telemetry {
            total_tokens: total.unwrap_or(0),
            last_turn_tokens: used.unwrap_or(0),
            model_context_window: context_window,
            model_auto_compact_token_limit: auto_compact_limit,
        })
    }
}

impl Report for Pressure {
    fn human(&self, out: &mut dyn Write) -> std::io::Result<()> {
        writeln!(
            out,
            "pressure: {}{}",
            self.level.as_str(),
            if self.should_prepare_compaction {
                " (prepare compaction)"
            } else {
                ""
            }
        )?;
        writeln!(out, "{}", self.note)
    }
}

/// Runs `pressure`.
pub fn run(ctx: &Ctx, args: &Args) -> Result<Status> {
    let Args { used, limits } = args;
    ctx.ui
        .emit(&Pressure::from(assess_pressure(
            limits.telemetry(Some(*used)).as_ref(),
        )))?;
    Ok(Status::Ok)
}
