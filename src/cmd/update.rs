//! `epiphany update`: validate and apply one patch. Also home of [`commit_patch`], the single
//! path every patch takes into the store (`init --objective` and `promote` use it too).

use std::collections::BTreeMap;
use std::io::Write;
use std::path::PathBuf;

use anyhow::Result;
use schemars::Schema;
use serde::Serialize;

use crate::ctx::Ctx;
use crate::ctx::Status;
use crate::code_refs::Resolver;
use crate::code_refs::audit_patch_refs;
use crate::code_refs::warn_planned;
use crate::code_refs::with_ref_problems;
use crate::error::ErrorKind;
use crate::error::Failure;
use crate::cmd::PATCH_INPUT;
use crate::cmd::Tool;
use crate::cmd::schema_of;
use crate::policy::secrets::Redaction;
use crate::policy::secrets::redact_serialized;
use crate::policy::secrets::redact_text;
use crate::policy::secrets::redactions;
use crate::policy::update::UpdateRefusal;
use crate::policy::update::added_problems;
use crate::policy::update::check_update;
use crate::policy::update::node_upsert_problems;
use crate::policy::update::structure_problems;
use crate::render::DraftReport;
use crate::render::emit_draft;
use crate::state::fields::ChangedField;
use crate::state::model::RecordIds;
use crate::state::model::State;
use crate::state::patch::Patch;
use crate::state::problem::Problem;
use crate::state::rollout::Source;
use crate::state::store::Committed;
use crate::state::store::Draft;
use crate::state::store::Head;
use crate::state::store::Payload;
use crate::state::store::Store;
use crate::state::store::Transaction;
use crate::state::store::WriteScope;
use crate::ui::Report;

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
pub const TOOL: Tool = Tool::WRITER.input(PATCH_INPUT).report(write_outcome_schema);

/// The schema of what a write from the command line prints ([`WriteOutcome`]): an object,
/// one of two shapes.
pub fn write_outcome_schema() -> Schema {
    let mut schema = schema_of::<WriteOutcome>();
    schema.insert("type".to_owned(), serde_json::Value::from("object"));
    schema
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
}

/// What a write from the command line printed: the write, or (with `--dry-run`) the envelope
/// it would have applied.
#[derive(Debug, Serialize, schemars::JsonSchema)]
#[serde(untagged)]
pub enum WriteOutcome {
    /// The write.
    Written(WriteReport),
    /// The envelope `--dry-run` printed; nothing was written.
    Drafted(Box<DraftReport>),
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
        Ok(())
    }
}

/// Runs `update`.
pub fn run(ctx: &Ctx, args: &Args) -> Result<Status> {
    let Args { file, flags } = args;
    let envelope = crate::input::read_envelope(ctx, file.as_deref())?;
    let store = ctx.store()?;
    let flags = WriteFlags {
        expected_revision: flags.expected_revision.or(envelope.expected_revision),
        ..flags.clone()
    };
    write_patch(ctx, &store, envelope.patch, &flags, Vec::new(), false)
}

/// Writes a patch built from command-line flags (a one-line write) through the one write path;
/// see [`write_patch`]. Its code refs were typed, so they mean the current directory first.
pub fn write_from_flags(
    ctx: &Ctx,
    store: &Store,
    patch: Patch,
    flags: &WriteFlags,
    written: Vec<String>,
) -> Result<Status> {
    write_patch(ctx, store, patch, flags, written, true)
}

/// Writes a patch through the one write path and prints the report (or, with `--dry-run`, the
/// envelope it would apply). `written` names the records it adds or changes, for the report.
fn write_patch(
    ctx: &Ctx,
    store: &Store,
    patch: Patch,
    flags: &WriteFlags,
    written: Vec<String>,
    refs_from_cwd: bool,
) -> Result<Status> {
    let WriteFlags {
        expected_revision,
        turn_id,
        allow_missing_paths,
        dry_run,
    } = flags;
    let write = PatchWrite {
        source: Source::Update,
        changed_fields: patch.changed_fields(),
        patch,
        expected_revision: *expected_revision,
        turn_id: turn_id.clone(),
        allow_missing_paths: *allow_missing_paths,
        refs_from_cwd,
    };
    if *dry_run {
        let report = draft_patch(ctx, store, write)?;
        emit_draft(
            ctx,
            &report,
            "nothing was written; run the command again without `--dry-run` to write it",
        )?;
        return Ok(Status::Ok);
    }
    let committed = commit_patch(ctx, store, write)?;
    let report = WriteReport {
        written,
        ..committed.report()
    };
    ctx.ui.emit_landed(&report, &committed.committed.landed());
    Ok(Status::Ok)
}

/// A patch on its way into the store.
#[derive(Debug)]
pub struct PatchWrite {
    /// Which command writes.
    pub source: Source,
    /// The patch.
    pub patch: Patch,
    /// The fields to report as changed.
    pub changed_fields: Vec<ChangedField>,
    /// Refuse unless the store is at this revision.
    pub expected_revision: Option<u64>,
    /// The turn that writes.
    pub turn_id: Option<String>,
    /// Accept code refs to files that do not exist yet, marked `planned`.
    pub allow_missing_paths: bool,
    /// Read relative code-ref paths from the current directory first (they were typed on the
    /// command line), rather than from the repository root first (a patch document's).
    pub refs_from_cwd: bool,
}

/// A turn id as given: not blank, and without control characters (a newline in it would forge
/// lines in `log` and in the prompts that name it).
fn turn_id(text: &str) -> Result<String, String> {
    if text.trim().is_empty() {
        return Err("a turn id cannot be blank (leave the flag out to record none)".to_owned());
    }
    if text.chars().any(char::is_control) {
        return Err(
            "a turn id cannot hold control characters (newlines, tabs, escapes)".to_owned(),
        );
    }
    Ok(text.to_owned())
}

/// A patch that made it into the store.
#[derive(Debug)]
pub struct PatchCommitted {
    /// The write.
    pub committed: Committed,
    /// Secrets redacted from the patch before it was written.
    pub redactions: Vec<Redaction>,
}

impl PatchCommitted {
    /// The `update` report of this write.
    pub fn report(&self) -> WriteReport {
        WriteReport {
            redactions: self.redactions.clone(),
            ..WriteReport::of(&self.committed)
        }
    }
}

/// Redacts secrets from the patch, validates it against the head under the store lock, checks
/// that the state it produces has no problem the head did not have, and commits it. On any
/// refusal nothing is written and the error says why (exit 2, or 3 for a revision conflict).
pub fn commit_patch(ctx: &Ctx, store: &Store, write: PatchWrite) -> Result<PatchCommitted> {
    let staged = stage_patch(ctx, store, write, false)?;
    let committed = staged.tx.commit()?;
    warn_redactions(ctx, &staged.redactions);
    warn_planned(ctx, &staged.planned);
    for warning in &committed.warnings {
        ctx.ui.warn(warning);
    }
    Ok(PatchCommitted {
        committed,
        redactions: staged.redactions,
    })
}

/// Everything [`commit_patch`] does but the commit: the patch as it would be written (secrets
/// redacted, code refs resolved), with the revision it was checked against. Nothing is written.
pub fn draft_patch(ctx: &Ctx, store: &Store, write: PatchWrite) -> Result<DraftReport> {
    let staged = stage_patch(ctx, store, write, true)?;
    warn_redactions(ctx, &staged.redactions);
    warn_planned(ctx, &staged.planned);
    Ok(DraftReport {
        expected_revision: staged.revision,
        patch: staged.patch.unwrap_or_default(),
    })
}

/// A patch validated and folded under the lock, not yet committed.
struct Staged<'s> {
    tx: Transaction<'s>,
    redactions: Vec<Redaction>,
    planned: Vec<String>,
    /// The patch as staged, when asked to keep it.
    patch: Option<Patch>,
    /// The head revision it was checked against.
    revision: u64,
}

fn stage_patch<'s>(
    ctx: &Ctx,
    store: &'s Store,
    write: PatchWrite,
    keep_patch: bool,
) -> Result<Staged<'s>> {
    let PatchWrite {
        source,
        patch,
        changed_fields,
        expected_revision,
        turn_id,
        allow_missing_paths,
        refs_from_cwd,
    } = write;
    let mut found = BTreeMap::new();
    let mut patch = redact_serialized(patch, &mut found).map_err(redaction_failure)?;
    let turn_id = turn_id.map(|turn_id| redact_text(&turn_id, &mut found).unwrap_or(turn_id));
    let redactions = redactions(found);
    let resolver = Resolver::new(store.root(), &ctx.cwd, refs_from_cwd);
    // A patch that needs no stored graph is written without reading them, once its references
    // all stand on their own: a missing one might be a restated reference the state exempts,
    // which only the whole read can tell.
    let lean = match patch.needs_stored_graphs() {
        true => None,
        false => {
            let mut lean = patch.clone();
            let audit =
                audit_patch_refs(&resolver, &State::default(), &mut lean, allow_missing_paths);
            (audit.problems.is_empty() && audit.planned.is_empty()).then_some((lean, audit))
        }
    };
    let scope = match lean {
        Some(_) => WriteScope::Records,
        None => WriteScope::Whole,
    };
    let mut tx = ctx.begin(store, scope)?;
    let revision = tx.head().state.revision;
    let (patch, audit) = match lean {
        Some(audited) => audited,
        None => {
            let audit =
                audit_patch_refs(&resolver, &tx.head().state, &mut patch, allow_missing_paths);
            (patch, audit)
        }
    };
    with_ref_problems(
        check_update(&tx.head().state, tx.head(), &patch, expected_revision),
        audit.problems,
    )
    .map_err(refusal_error)?;
    let problems = |head: &Head| structure_problems(&head.state, &|id| head.has_evidence(id));
    let before = match scope {
        WriteScope::Whole => patch.has_state_replacements().then(|| problems(tx.head())),
        WriteScope::Records => {
            let added = node_upsert_problems(&patch);
            if !added.is_empty() {
                return Err(refusal_error(UpdateRefusal::Invalid(added)));
            }
            None
        }
    };
    let kept = keep_patch.then(|| patch.clone());
    tx.stage(
        Draft {
            source,
            turn_id,
            changed_fields,
            payload: Payload::Patch(Box::new(patch)),
        },
        ctx.stamp(store),
    );
    if let Some(before) = before {
        let added = added_problems(&before, problems(tx.head()));
        if !added.is_empty() {
            return Err(refusal_error(UpdateRefusal::Invalid(added)));
        }
    }
    Ok(Staged {
        tx,
        redactions,
        planned: audit.planned,
        patch: kept,
        revision,
    })
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

/// Tells stderr what was redacted: kinds and counts, never a value.
pub fn warn_redactions(ctx: &Ctx, redactions: &[Redaction]) {
    for redaction in redactions {
        ctx.ui.warn(&format!(
            "redacted {} {} secret(s) before writing",
            redaction.count, redaction.kind
        ));
    }
}

/// Redaction only rewrites text, so a patch that no longer decodes afterwards is a bug; it
/// is refused rather than stored unredacted.
pub fn redaction_failure(err: String) -> anyhow::Error {
    Failure::new(
        ErrorKind::Internal,
        format!("could not redact secrets from the input: {err}"),
    )
    .with_hint("nothing was written")
    .into()
}

fn refusal_error(refusal: UpdateRefusal) -> anyhow::Error {
    match refusal {
        UpdateRefusal::EmptyPatch => Failure::input(refusal.to_string())
            .with_hint("a patch needs at least one field; see `epiphany update --help`")
            .into(),
        UpdateRefusal::RevisionMismatch { .. } => Failure::conflict(refusal.to_string())
            .with_hint("the store moved on; re-read it (`epiphany show`) and draft the patch again")
            .into(),
        UpdateRefusal::Invalid(problems) => Failure::input("invalid epiphany update patch")
            .with_problems(problems)
            .with_hint("fix every problem listed; nothing was written")
            .into(),
    }
}
