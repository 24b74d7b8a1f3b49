//! `epiphany propose`: draft a graph / frontier / churn patch from verified observations.
//! Writes nothing; the draft goes through `promote`.
//!
//! Reads the head state and hands it to `policy::propose`, which makes every decision.

use std::collections::BTreeMap;
use std::collections::HashSet;
use std::time::Duration;

use anyhow::Result;

use crate::ctx::Ctx;
use crate::ctx::Status;
use crate::error::Failure;
use crate::cmd::Tool;
use crate::cmd::schema_of;
use crate::policy::code_map::Outline;
use crate::policy::propose::add_reference_edges;
use crate::policy::propose::propose;
use crate::render::DraftReport;
use crate::render::emit_draft;
use crate::search::outlines;
use crate::state::model::State;
use crate::state::paths::slash_key;
use crate::state::store::Store;

/// How long parsing the work tree for the files the map and the observations cite may take
/// when there is no index; the cited files are parsed first.
const PARSE_BUDGET: Duration = Duration::from_millis(500);

/// Draft a map/frontier/churn patch from verified observations; writes nothing.
///
/// Takes the observations named with `--observation`, or, without any, picks up to four
/// proposal-ready ones (accepted status, accepting evidence, code refs) that share a path
/// with the strongest. Each code path is anchored on an existing architecture node (same code
/// ref, same path, path-derived id, or a unique semantic match on an unanchored node) or on a
/// new candidate node; the frontier gains those nodes, their linked nodes and their edges; the
/// churn judgment says how much the map moved. Where the cited files are parsed, edges from the
/// code join the proposed nodes to each other and to the map (`calls`, `imports`,
/// `references`: the cited code of one uses a definition the other cites).
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
pub const TOOL: Tool = Tool::READER.report(schema_of::<DraftReport>);

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
    add_reference_edges(&state, &mut patch, &cited_outlines(&store, &state));
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

/// The outlines of the files the architecture nodes and the observations cite, by path: what
/// the edges a proposal draws from the code are read from.
fn cited_outlines(store: &Store, state: &State) -> BTreeMap<String, Outline> {
    let node_refs = state
        .graphs
        .architecture
        .nodes
        .iter()
        .flat_map(|n| &n.code_refs);
    let observation_refs = state.observations.iter().flat_map(|o| &o.code_refs);
    let cited: HashSet<String> = node_refs
        .chain(observation_refs)
        .map(|code_ref| slash_key(&code_ref.path))
        .collect();
    let wanted = |path: &str| cited.contains(path);
    let gathered = outlines::gather(
        store.root(),
        Some(&store.cache_dir()),
        &wanted,
        PARSE_BUDGET,
    );
    (gathered.files.into_iter())
        .filter(|(path, _)| cited.contains(path))
        .collect()
}
