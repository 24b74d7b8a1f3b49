//! `epiphany propose`: draft a graph / frontier / churn patch from verified observations.
//! Writes nothing; the draft goes through `promote`.
//!
//! Reads the head state and hands it to `policy::propose`, which makes every decision.

use std::time::Duration;

use anyhow::Result;

use crate::ctx::Ctx;
use crate::ctx::Status;
use crate::error::Failure;
use crate::cmd::Tool;
use crate::cmd::schema_of;
use crate::policy::propose::cited_paths;
use crate::policy::propose::complete_from_code;
use crate::policy::propose::propose;
use crate::render::DraftReport;
use crate::render::emit_draft;
use crate::search::cited::parse_cited;

/// How long parsing the files the map cites may take: the ones the proposal's own nodes cite
/// come first, and the first few on each core are parsed whatever the time.
const PARSE_BUDGET: Duration = Duration::from_millis(500);

/// Draft a map/frontier/churn patch from verified observations; writes nothing.
///
/// Takes the observations named with `--observation`, or, without any, picks up to four
/// proposal-ready ones (accepted status, accepting evidence, code refs) that share a path
/// with the strongest. Each code path is anchored on an existing architecture node (same code
/// ref, same path, path-derived id, or a unique semantic match on an unanchored node) or on a
/// new candidate node, titled after the definitions it cites; the frontier gains those nodes,
/// their linked nodes and their edges; the churn judgment says how much the map moved. Where
/// the cited files are parsed, edges from the code join the proposed nodes to each other and to
/// the map (`calls`, `imports`, `references`): from the node whose cited code uses a definition
/// to the node citing that definition, found through the file's imports and scope (never by a
/// name two files share), each citing the line of the use.
///
/// The output is the `{"expected_revision", "patch"}` envelope, printed as JSON when stdout
/// is not a terminal (even without `--json`), so `epiphany propose | epiphany promote ...`
/// works as written; `promote` demands verifier evidence.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// An observation to build on (repeatable); without any, observations are picked
    #[arg(long = "observation", value_name = "ID")]
    pub observations: Vec<String>,
}

/// How `mcp` offers this command as a tool and `schema` describes its report.
pub const TOOL: Tool = Tool::READER
    .about("Draft a patch adding what verified observations found to the architecture graph and the frontier; writes nothing. Pass it to `promote` with a verdict.").report(schema_of::<DraftReport>);

/// Runs `propose`.
pub fn run(ctx: &Ctx, args: &Args) -> Result<Status> {
    let Args { observations } = args;
    let store = ctx.store()?;
    let state = store.head()?.state;
    if state.revision == 0 {
        return Err(Failure::input(
            "failed to propose Epiphany map update: the store has no Epiphany state yet",
        )
        .with_hint(
            "record verified observations first: `epiphany --json distill ... | epiphany update`",
        )
        .into());
    }
    let mut patch = propose(&state, observations).map_err(|problem| {
        Failure::input(format!("failed to propose Epiphany map update: {problem}")).with_hint(
            "propose builds on observations with an accepted status (ok, accepted, verified, \
             pass, passed) that cite accepting evidence and carry code refs; see them with \
             `epiphany show`",
        )
    })?;
    let files = parse_cited(store.root(), &cited_paths(&state, &patch), PARSE_BUDGET);
    complete_from_code(&state, &mut patch, &files);
    let report = DraftReport {
        expected_revision: state.revision,
        patch,
    };
    emit_draft(
        ctx,
        &report,
        "to apply it, pipe it into `epiphany promote --verifier-kind K --verifier-status S \
         --verifier-summary T`",
    )?;
    Ok(Status::Ok)
}
