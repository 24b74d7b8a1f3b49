//! `epiphany recheck`: say that records were read again and still hold, so the staleness of
//! what changed before clears; an observation whose references moved is superseded by one
//! that cites where the code is now.

use std::collections::HashMap;

use anyhow::Result;

use crate::ctx::Ctx;
use crate::ctx::Status;
use crate::cmd::update::WriteFlags;
use crate::cmd::update::WriteReport;
use crate::cmd::update::input_failure;
use crate::cmd::update::write_from_flags;
use crate::cmd::update::write_outcome_schema;
use crate::cmd::Tool;
use crate::policy::code_ref::RefOwner;
use crate::policy::code_ref::format_code_ref;
use crate::policy::one_line::map::recheck_targets;
use crate::policy::one_line::work::supersede;
use crate::policy::recheck::reread_patch;
use crate::state::git;
use crate::state::model::Observation;
use crate::state::problem::Problem;
use crate::state::rollout::Source;
use crate::state::store::Store;

/// Say that graph nodes, the checkpoint or observations were read again and still hold.
///
/// Freshness reports a node (or the checkpoint) stale when the code it cites changed since it
/// was checked. After reading the code again and finding the node still right, `recheck NODE`
/// certifies the code it cites as it is now: each reference is fingerprinted anew (and moved to
/// where its definition went, when it moved), and its anchor moves to the commit checked out
/// now, so only later changes count; `--checkpoint` does the same for the investigation
/// checkpoint. Nothing else of the record changes. A reference whose file or symbol is gone
/// cannot be re-checked: cite where the code is now instead. (Rewriting a record does not
/// re-check it, and neither does `freshness --fix`: both keep what was checked.)
///
/// `--observation ID` re-reads an observation's code refs: when they all still hold, nothing
/// is written; otherwise a new observation supersedes it, with the same summary and evidence
/// and its refs where the code is now (renamed files followed, moved lines re-found); refs
/// that no longer hold anywhere are dropped and listed. Views show the new one only.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Graph nodes to re-anchor (in every graph that has the id)
    #[arg(value_name = "NODE")]
    pub nodes: Vec<String>,
    /// Re-anchor the investigation checkpoint
    #[arg(long)]
    pub checkpoint: bool,
    /// Observations to re-check and, when their refs moved, supersede (repeatable)
    #[arg(long = "observation", value_name = "ID")]
    pub observations: Vec<String>,
    #[allow(missing_docs)]
    #[command(flatten)]
    pub flags: WriteFlags,
}

/// How `mcp` offers this command as a tool and `schema` describes its report.
pub const TOOL: Tool = Tool::WRITER
    .about("Certify that graph nodes, the checkpoint or observations still hold after re-reading their code, so they stop being reported stale. Use after `freshness` names them and the code still matches.").report(write_outcome_schema);

/// Runs `recheck`.
pub fn run(ctx: &Ctx, args: &Args) -> Result<Status> {
    let Args {
        nodes,
        checkpoint,
        observations,
        flags,
    } = args;
    if nodes.is_empty() && !checkpoint && observations.is_empty() {
        let problem = Problem::new("NODE", "name a node, `--checkpoint` or `--observation ID`");
        return Err(input_failure("nothing to re-check", vec![problem]));
    }
    let store = ctx.store()?;
    let head = store.head()?;
    let state = &head.state;
    let refused = |problems| input_failure("nothing was re-checked", problems);
    let recheck = recheck_targets(state, nodes, *checkpoint).map_err(refused)?;
    let findings = match recheck.is_empty() {
        true => Vec::new(),
        false => crate::signals::observe(ctx, &store, &head, None)?.freshness.references.findings,
    };
    let mut written: Vec<String> = (recheck.architecture_nodes.iter())
        .map(|id| format!("architecture_nodes/{id}"))
        .chain(
            recheck
                .dataflow_nodes
                .iter()
                .map(|id| format!("dataflow_nodes/{id}")),
        )
        .collect();
    if *checkpoint {
        written.push("investigation_checkpoint".to_owned());
    }
    let mut patch = reread_patch(state, recheck, &findings).map_err(refused)?;
    let old = observed(state.observations.as_slice(), observations).map_err(refused)?;
    let written_at = revisions_writing(&store, &old)?;
    for observation in old {
        // The observation is read again: its references are checked anew, where they are now.
        // Its references are judged against the code it was written on: renames since that
        // commit are followed, whatever was written after it.
        let since = written_at.get(observation.id.as_str()).copied();
        let findings = crate::signals::observe(ctx, &store, &head, since)?
            .freshness
            .references
            .findings;
        let own: Vec<_> = (findings.iter())
            .filter(|f| matches!(&f.owner, RefOwner::Observation { id } if *id == observation.id))
            .collect();
        let Some(mut superseded) = supersede(observation, &own) else {
            ctx.ui.status(&format!(
                "observation \"{}\": every code ref still holds; nothing to supersede",
                observation.id
            ));
            continue;
        };
        for dropped in &superseded.dropped {
            ctx.ui.warn(&format!(
                "observation \"{}\": `{}` no longer holds and nothing says where it went; the new observation leaves it out",
                observation.id,
                format_code_ref(dropped)
            ));
        }
        for code_ref in &mut superseded.observation.code_refs {
            code_ref.fingerprint = None;
        }
        written.push(superseded.observation.id.clone());
        patch.observations.push(superseded.observation);
    }
    if patch.is_empty() {
        ctx.ui
            .emit(&WriteReport::unchanged(state.revision, Source::Update))?;
        return Ok(Status::Ok);
    }
    write_from_flags(ctx, &store, patch, flags, written)
}

/// The revision of the record that wrote each of `observations` (inside git, where a commit
/// stands behind every record; outside, none is needed).
fn revisions_writing(store: &Store, observations: &[&Observation]) -> Result<HashMap<String, u64>> {
    let mut found = HashMap::new();
    if observations.is_empty() || git::head_commit(store.root()).is_none() {
        return Ok(found);
    }
    let history = store.sound_history()?;
    for (at, record) in history.records.iter().enumerate() {
        let Some(patch) = &record.patch else {
            continue;
        };
        for written in &patch.observations {
            let wanted = observations.iter().any(|o| o.id == written.id);
            if wanted && record.git_head.is_some() {
                found.entry(written.id.clone()).or_insert(at as u64 + 1);
            }
        }
    }
    Ok(found)
}

/// The stored observations named, or a problem for each id that names none.
fn observed<'s>(
    stored: &'s [Observation],
    ids: &[String],
) -> Result<Vec<&'s Observation>, Vec<Problem>> {
    let mut found = Vec::new();
    let mut problems = Vec::new();
    for id in ids {
        match stored.iter().find(|o| o.id == *id) {
            Some(observation) => found.push(observation),
            None => problems.push(Problem::new(
                "--observation",
                format!("there is no observation \"{id}\""),
            )),
        }
    }
    match problems.is_empty() {
        true => Ok(found),
        false => Err(problems),
    }
}
