//! `epiphany prompt`: the bounded `<epiphany_state>` block an agent host injects into the
//! model's context. The raw block goes to stdout, with nothing around it.

use std::io::Write;

use anyhow::Result;
use serde::Serialize;

use crate::ctx::Ctx;
use crate::ctx::Status;
use crate::cmd::map;
use crate::cmd::Tool;
use crate::cmd::schema_of;
use crate::policy::projection::StateStatus;
use crate::policy::prompt::DEFAULT_MAX_CHARS;
use crate::policy::prompt::MIN_MAX_CHARS;
use crate::policy::prompt::RECORDS_SHOWN;
use crate::policy::prompt::Rendered;
use crate::policy::prompt::render_counted;
use crate::policy::prompt::with_code_map;
use crate::signals::observe;
use crate::state::problem::Problem;
use crate::ui::Report;

/// Print the `<epiphany_state>` block for an agent's context.
///
/// The block holds the objective, subgoals, invariants, graph focus, investigation checkpoint,
/// scratch, the newest observations and evidence, churn and mode, each bounded to a few items,
/// plus a fixed operating-discipline section. Hosts silently cut injected text (Claude Code at
/// 10,000 characters), so `--max-chars` is a hard ceiling counted in Unicode characters: when
/// the block does not fit, lower-priority parts are left out first (evidence, observations,
/// planning, mode, scratch, churn, invariants, subgoals, graph detail), the objective,
/// checkpoint and frontier last, and the block ends with a line naming what was left out and
/// the command that fetches it. Lines are never cut. Prints nothing before the first write.
///
/// When room is left, a code map section follows: the most central files with their key
/// definitions (`epiphany map`, ranked around the frontier and the checkpoint), at most
/// 1,500 characters, never at the expense of anything else.
///
/// When the work tree contradicts the map — a cited file changed since the node or checkpoint
/// citing it was written, or a code reference no longer holds — the graph and checkpoint
/// sections say so with the paths, from the same reading `freshness` and `reorient` make.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The most characters to print (at least 2500)
    #[arg(long, value_name = "N", default_value_t = DEFAULT_MAX_CHARS, value_parser = parse_max_chars)]
    pub max_chars: usize,
}

/// How `mcp` offers this command as a tool and `schema` describes its report.
pub const TOOL: Tool = Tool::READER
    .about("The state as an `<epiphany_state>` block of at most `max_chars` characters, for a model's context.").report(schema_of::<PromptReport>);

fn parse_max_chars(text: &str) -> Result<usize, Problem> {
    let value: usize = text
        .parse()
        .map_err(|_| Problem::whole(format!("`{text}` is not a number of characters")))?;
    if value < MIN_MAX_CHARS {
        return Err(Problem::whole(format!(
            "{value} is too small: the fixed text alone needs up to {MIN_MAX_CHARS} characters"
        )));
    }
    Ok(value)
}

/// The block and what was left out of it.
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct PromptReport {
    state_status: StateStatus,
    #[serde(flatten)]
    rendered: Rendered,
}

impl Report for PromptReport {
    fn human(&self, out: &mut dyn Write) -> std::io::Result<()> {
        out.write_all(self.rendered.text.as_bytes())
    }
}

/// Runs `prompt`.
pub fn run(ctx: &Ctx, args: &Args) -> Result<Status> {
    let Args { max_chars } = args;
    let store = ctx.store()?;
    // Only the newest observations and evidence records are shown (their code refs never make
    // the map stale), so only those are decoded; the totals count the rest.
    let head = store.head_with_newest(RECORDS_SHOWN)?;
    let report = if head.has_state() {
        let observed = observe(ctx, &store, &head, None)?;
        let staleness = observed.freshness.staleness();
        let rendered = render_counted(&head.state, head.totals, Some(&staleness), *max_chars);
        PromptReport {
            state_status: StateStatus::Ready,
            rendered: with_code_map(rendered, &map::compact_blocks(ctx, &store, &head.state)),
        }
    } else {
        ctx.ui.status(
            "no state yet: nothing to inject (`epiphany update` writes the first revision)",
        );
        PromptReport {
            state_status: StateStatus::Missing,
            rendered: Rendered {
                text: String::new(),
                chars: 0,
                max_chars: *max_chars,
                left_out: Vec::new(),
            },
        }
    };
    ctx.ui.emit(&report)?;
    Ok(Status::Ok)
}
