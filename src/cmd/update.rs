//! `epiphany update`: validate and apply one patch through the one write path
//! ([`crate::write`]). Also home of what the one-line writes share with it: the write flags,
//! the write report, [`write_from_flags`] and [`write_edit`].

use std::io::Write;
use std::path::PathBuf;

use anyhow::Result;
use schemars::Schema;
use serde::Serialize;

use crate::ctx::Ctx;
use crate::ctx::Status;
use crate::error::Failure;
use crate::input::Malformed;
use crate::input::PatchInput;
use crate::input::read_envelope;
use crate::cmd::PATCH_INPUT;
use crate::cmd::Tool;
use crate::cmd::schema_of_either;
use crate::policy::one_line::Edit;
use crate::policy::one_line::record_names;
use crate::policy::secrets::Redaction;
use crate::policy::secrets::redacted;
use crate::render::DraftReport;
use crate::render::emit_draft;
use crate::state::fields::ChangedField;
use crate::state::model::State;
use crate::state::patch::Patch;
use crate::state::problem::Problem;
use crate::state::rollout::Source;
use crate::state::store::Committed;
use crate::state::store::Store;
use crate::ui::Report;
use crate::write::Lock;
use crate::write::Locked;
use crate::write::PatchCommitted;
use crate::write::PatchWrite;

/// Validate and apply one patch: the one write path.
///
/// Reads a bare patch (`{"objective": "...", "observations": [...]}`) or the
/// `{"expected_revision": N, "patch": {...}}` envelope that `distill` and `propose` print, from
/// FILE or stdin. Every validation rule runs and every problem is listed; on any problem
/// nothing is written (exit 2). When the store is not at the expected revision, exit 3.
///
/// Every code reference the patch brings in (graphs, checkpoint, observations, evidence) and
/// every new frontier dirty path is checked against the work tree: a relative path is read
/// from the repository root (or, failing that, from the current directory) and stored
/// relative to the root; the file must exist (unless `--allow-missing-paths`); lines count
/// from 1, `start_line` ≤ `end_line` ≤ the file's line count; a `symbol` must occur in the
/// file, inside the range when there is one. A graph or checkpoint reference the state already
/// holds is not checked again when a patch restates it; new observations and evidence are new
/// claims, so their references are always checked.
///
/// Patch fields (snake_case): replaced when present — objective, active_subgoal_id, subgoals,
/// invariants, graphs, graph_frontier, graph_checkpoint, scratch, investigation_checkpoint,
/// job_bindings, churn, mode, planning; placed first (newest first) — observations, evidence,
/// acceptance_receipts, runtime_links.
///
/// Record by record: `upsert` and `remove` objects with the keys architecture_nodes,
/// architecture_edges, dataflow_nodes, dataflow_edges, links, subgoals, invariants,
/// planning_captures, backlog, roadmap_streams, objective_drafts. An upserted record replaces
/// the one with the same id (edges without an id: same source, target and kind; links: same
/// node pair) or is added; `remove` lists ids (edges without an id: `{"source_id",
/// "target_id", "kind"}`; links: `{"dataflow_node_id", "architecture_node_id"}`). Example:
/// `{"upsert": {"architecture_nodes": [{"id": "lexer", "title": "Lexer", "purpose": "..."}]}}`.
///
/// The state a write produces is validated whole: a write may not leave a problem the state
/// did not have before (an edge to a removed node, a frontier naming a missing node).
///
/// `epiphany schema patch` prints the JSON Schema of every patch this accepts (unknown fields
/// are refused, naming the closest known one). For one record at a time, the one-line writes
/// need no JSON: `note`, `node set|rm`, `edge add|rm`, `checkpoint set`, `subgoal add|done`,
/// `backlog add`, `recheck`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Patch or envelope file; `-` or absent reads stdin
    pub file: Option<PathBuf>,
    #[allow(missing_docs)]
    #[command(flatten)]
    pub flags: WriteFlags,
}

/// What every write from the command line takes besides its own input: `update`'s flags,
/// shared by the one-line writes (`note`, `node`, `edge`, `checkpoint`, `subgoal`, `backlog`,
/// `recheck`).
#[derive(Debug, Clone, Default, clap::Args)]
pub struct WriteFlags {
    /// Refuse with exit 3 unless the store is at this revision (overrides an envelope's)
    #[arg(long, value_name = "N")]
    pub expected_revision: Option<u64>,
    /// Turn id to record as `last_updated_turn_id`
    #[arg(long, value_name = "ID", value_parser = turn_id)]
    pub turn_id: Option<String>,
    /// Accept code refs and dirty paths naming files that do not exist yet (plans); they are
    /// recorded as `planned` and reported
    #[arg(long)]
    pub allow_missing_paths: bool,
    /// Run every check, then print the `{"expected_revision", "patch"}` envelope that would be
    /// written (code refs resolved, secrets redacted) instead of writing it
    #[arg(long)]
    pub dry_run: bool,
}

/// How `mcp` offers this command as a tool and `schema` describes its report.
pub const TOOL: Tool = Tool::WRITER
    .arguments(&[("file", "A file holding the patch, instead of `input`")])
    .about("The general write: apply a JSON patch (`input`) to the state (objective, subgoals, invariants, graphs, observations, evidence, checkpoint, planning), or an envelope from `distill` or `propose`. Every rule is checked; on any problem nothing is written. The `schema` tool with `patch` gives every field. For one record, `note`, `node_set`, `edge_add` and `checkpoint_set` are simpler.").input(PATCH_INPUT).report(write_outcome_schema);

/// The schema of what a write from the command line prints: the write, or (with `--dry-run`)
/// the envelope it would have applied.
pub fn write_outcome_schema() -> Schema {
    schema_of_either::<WriteReport, DraftReport>(
        "What a write from the command line printed: the write, or (with `--dry-run`) the envelope it would have applied.",
        ["The write.", "The envelope `--dry-run` printed; nothing was written."],
    )
}

/// What a write did.
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct WriteReport {
    /// Secrets found in the patch and redacted before writing.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub redactions: Vec<Redaction>,
    /// The new revision (the number of records in the store).
    pub revision: u64,
    /// The fields the write changed.
    pub changed_fields: Vec<ChangedField>,
    /// The id of the record written (absent when nothing was written).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// Which command wrote.
    pub source: Source,
    /// The ids of the records the write added or changed, when a one-line write names them
    /// (`obs-…` and `ev-…` for a note, the node, the edge, the subgoal, ...).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub written: Vec<String>,
    /// What a one-line removal took away: records as `collection/key`
    /// (`architecture_nodes/lexer`), and ids taken off a list as `field.list/id`
    /// (`graph_frontier.active_node_ids/lexer`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub removed: Vec<String>,
}

impl WriteReport {
    /// The report of a committed write.
    pub fn of(committed: &Committed) -> WriteReport {
        WriteReport {
            redactions: Vec::new(),
            revision: committed.revision,
            changed_fields: committed.record.changed_fields.clone(),
            id: Some(committed.record.id.clone()),
            source: committed.record.source,
            written: Vec::new(),
            removed: Vec::new(),
        }
    }

    /// The report of a write that found nothing to change.
    pub fn unchanged(revision: u64, source: Source) -> WriteReport {
        WriteReport {
            redactions: Vec::new(),
            revision,
            changed_fields: vec![],
            id: None,
            source,
            written: Vec::new(),
            removed: Vec::new(),
        }
    }
}

impl Report for WriteReport {
    fn human(&self, out: &mut dyn Write) -> std::io::Result<()> {
        let fields: Vec<&str> = self.changed_fields.iter().map(|f| f.as_str()).collect();
        if fields.is_empty() {
            return writeln!(out, "revision {}: nothing changed", self.revision);
        }
        let id = self.id.as_deref().map_or(String::new(), |id| {
            format!(" (record {})", &id[..id.len().min(12)])
        });
        writeln!(out, "revision {}: {}{id}", self.revision, fields.join(", "))?;
        if !self.written.is_empty() {
            writeln!(out, "  wrote {}", self.written.join(", "))?;
        }
        if !self.removed.is_empty() {
            writeln!(out, "  removed {}", self.removed.join(", "))?;
        }
        Ok(())
    }
}

/// Runs `update`.
pub fn run(ctx: &Ctx, args: &Args) -> Result<Status> {
    let Args { file, flags } = args;
    let PatchInput {
        envelope,
        malformed,
    } = read_envelope(ctx, file.as_deref())?;
    let store = match (ctx.store(), &malformed) {
        (Ok(store), _) => store,
        // Without a store there is nothing to check the rest against; the shape's problems
        // are still the input's.
        (Err(_), Some(malformed)) => return Err(malformed.refusal(Vec::new(), Vec::new())),
        (Err(err), None) => return Err(err),
    };
    let flags = WriteFlags {
        expected_revision: flags.expected_revision.or(envelope.expected_revision),
        ..flags.clone()
    };
    let write = CommandWrite {
        patch: envelope.patch,
        written: Vec::new(),
        removed: Vec::new(),
        refs_from_cwd: false,
        malformed,
    };
    write_patch(ctx, Lock::Take(&store), write, &flags)
}

/// Writes a patch built from command-line flags alone (a one-line write that depends on
/// nothing stored: a note) through the one write path; see [`write_patch`]. Its code refs were
/// typed, so they mean the current directory first.
pub fn write_from_flags(
    ctx: &Ctx,
    store: &Store,
    patch: Patch,
    flags: &WriteFlags,
    written: Vec<String>,
) -> Result<Status> {
    let write = CommandWrite {
        patch,
        written,
        removed: Vec::new(),
        refs_from_cwd: true,
        malformed: None,
    };
    write_patch(ctx, Lock::Take(store), write, flags)
}

/// Writes a one-line write that depends on what is stored (the node it edits, the edge it
/// removes, an id it finds free): takes the store lock, lets `edit` make the patch from the
/// head it read there, and writes it under the same lock, so the patch is applied to the state
/// it was made from. Without `--expected-revision`, any head will do; with it, another one is
/// refused (exit 3). A problem `edit` finds is refused with `refused` as the message (exit 2).
pub fn write_edit(
    ctx: &Ctx,
    store: &Store,
    flags: &WriteFlags,
    refused: &str,
    edit: impl FnOnce(&State) -> Result<Edit, Vec<Problem>>,
) -> Result<Status> {
    let locked = Locked::begin(ctx, store, flags.expected_revision)?;
    let revision = locked.state().revision;
    match edit(locked.state()).map_err(|problems| input_failure(refused, problems))? {
        Edit::Unchanged { hint } => {
            drop(locked);
            ctx.ui
                .emit(&WriteReport::unchanged(revision, Source::Update))?;
            ctx.ui.hint(&hint);
            Ok(Status::Ok)
        }
        Edit::Write {
            patch,
            written,
            removed,
        } => {
            let write = CommandWrite {
                patch: *patch,
                written,
                removed,
                refs_from_cwd: true,
                malformed: None,
            };
            write_patch(ctx, locked.into_lock(), write, flags)
        }
    }
}

/// A patch on its way from the command line, with what the report names.
struct CommandWrite {
    patch: Patch,
    written: Vec<String>,
    removed: Vec<String>,
    refs_from_cwd: bool,
    /// What was wrong with the shape of the document the patch came from.
    malformed: Option<Malformed>,
}

/// Writes a patch through the one write path and prints the report (or, with `--dry-run`, the
/// envelope it would apply), naming what it writes and removes.
fn write_patch(ctx: &Ctx, lock: Lock<'_>, write: CommandWrite, flags: &WriteFlags) -> Result<Status> {
    let CommandWrite {
        patch,
        written,
        removed,
        refs_from_cwd,
        malformed,
    } = write;
    let WriteFlags {
        expected_revision,
        turn_id,
        allow_missing_paths,
        dry_run,
    } = flags;
    // The records a one-line write names are named as the store holds them.
    let typed = match written.is_empty() {
        true => Vec::new(),
        false => record_names(patch.upsert.keys()),
    };
    let write = PatchWrite {
        source: Source::Update,
        changed_fields: patch.changed_fields(),
        patch,
        expected_revision: *expected_revision,
        turn_id: turn_id.clone(),
        allow_missing_paths: *allow_missing_paths,
        refs_from_cwd,
        malformed,
    };
    if *dry_run {
        let report = write.draft(ctx, lock)?;
        emit_draft(
            ctx,
            &report,
            "nothing was written; run the command again without `--dry-run` to write it",
        )?;
        return Ok(Status::Ok);
    }
    let committed = write.commit_with(ctx, lock)?;
    let stored = (committed.committed.record.patch.as_deref())
        .map_or_else(Vec::new, |patch| record_names(patch.upsert.keys()));
    let report = WriteReport {
        written: as_stored(written, &typed, &stored),
        removed: as_stored(removed, &[], &[]),
        ..report_of(&committed)
    };
    ctx.ui.emit_landed(&report, &committed.committed.landed());
    Ok(Status::Ok)
}

/// The names a report gives the records a write named: a record it upserted (`typed`, the
/// names of the patch as made) by the name the store holds it under (`stored`, the names of
/// the patch as written, in the same order), so an id made of typed values (`--id`, an edge's
/// ends and kind) is shown as redacted as it is stored; any other name redacted as it stands.
fn as_stored(names: Vec<String>, typed: &[String], stored: &[String]) -> Vec<String> {
    (names.into_iter())
        .map(|name| {
            let at = typed.iter().position(|made| *made == name);
            match at.and_then(|at| stored.get(at)) {
                Some(stored) => stored.clone(),
                None => redacted(&name).into_owned(),
            }
        })
        .collect()
}

/// A turn id as given: not blank, and without control characters (a newline in it would forge
/// lines in `log` and in the prompts that name it).
fn turn_id(text: &str) -> Result<String, Problem> {
    if text.trim().is_empty() {
        return Err(Problem::whole(
            "a turn id cannot be blank (leave the flag out to record none)",
        ));
    }
    if text.chars().any(char::is_control) {
        return Err(Problem::whole(
            "a turn id cannot hold control characters (newlines, tabs, escapes)",
        ));
    }
    Ok(text.to_owned())
}

/// What a refused one-line write says happened.
pub const WROTE_NOTHING: &str = "nothing was written";

/// The failure of a one-line write whose values do not make a record: every problem, at the
/// argument it concerns.
pub fn input_failure(message: &str, problems: Vec<Problem>) -> anyhow::Error {
    Failure::usage(message)
        .with_problems(problems)
        .with_hint("fix every problem listed; nothing was written (see `--help`)")
        .into()
}

/// The `update` report of a patch write.
fn report_of(written: &PatchCommitted) -> WriteReport {
    WriteReport {
        redactions: written.redactions.clone(),
        ..WriteReport::of(&written.committed)
    }
}
