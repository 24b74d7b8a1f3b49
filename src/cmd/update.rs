//! `epiphany update`: validate and apply one patch. Also home of [`commit_patch`], the single
//! path every patch takes into the store (`init --objective` and `promote` use it too).

use std::io::Write;
use std::path::PathBuf;

use anyhow::Result;
use serde::Serialize;

use crate::cli::Ctx;
use crate::cli::Status;
use crate::cmd::code_refs::Resolver;
use crate::cmd::code_refs::audit_patch_refs;
use crate::cmd::code_refs::warn_planned;
use crate::cmd::code_refs::with_ref_problems;
use crate::error::Failure;
use crate::policy::secrets::Redaction;
use crate::policy::secrets::redact_patch;
use crate::policy::update::UpdateRefusal;
use crate::policy::update::check_update;
use crate::state::patch::ChangedField;
use crate::state::patch::Patch;
use crate::state::rollout::Record;
use crate::state::rollout::Source;
use crate::state::snapshot::Snapshot;
use crate::state::store::Draft;
use crate::state::store::Payload;
use crate::state::store::Store;
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
/// file, inside the range when there is one. References already in the state are not checked
/// again.
///
/// Patch fields (snake_case): replaced when present — objective, active_subgoal_id, subgoals,
/// invariants, graphs, graph_frontier, graph_checkpoint, scratch, investigation_checkpoint,
/// job_bindings, churn, mode, planning; placed first (newest first) — observations, evidence,
/// acceptance_receipts, runtime_links.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Patch or envelope file; `-` or absent reads stdin
    pub file: Option<PathBuf>,
    /// Refuse with exit 3 unless the store is at this revision (overrides the envelope's)
    #[arg(long, value_name = "N")]
    pub expected_revision: Option<u64>,
    /// Turn id to record as `last_updated_turn_id`
    #[arg(long, value_name = "ID")]
    pub turn_id: Option<String>,
    /// Accept code refs and dirty paths naming files that do not exist yet (plans); they are
    /// recorded as `planned` and reported
    #[arg(long)]
    pub allow_missing_paths: bool,
}

/// What a write did.
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct WriteReport {
    /// Secrets found in the patch and redacted before writing.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub redactions: Vec<Redaction>,
    /// The new revision.
    pub revision: u64,
    /// The fields the write changed.
    pub changed_fields: Vec<ChangedField>,
    /// The rollout sequence number of the write.
    pub seq: u64,
    /// Which command wrote.
    pub source: Source,
}

impl WriteReport {
    /// The report of a committed record.
    pub fn of(record: &Record) -> WriteReport {
        WriteReport {
            redactions: Vec::new(),
            revision: record.revision,
            changed_fields: record.changed_fields.clone(),
            seq: record.seq,
            source: record.source,
        }
    }

    /// The report of a write that found nothing to change.
    pub fn unchanged(head: &Snapshot, source: Source) -> WriteReport {
        WriteReport {
            redactions: Vec::new(),
            revision: head.state.revision,
            changed_fields: vec![],
            seq: head.rollout_seq,
            source,
        }
    }
}

impl Report for WriteReport {
    fn human(&self, out: &mut dyn Write) -> std::io::Result<()> {
        let fields: Vec<&str> = self.changed_fields.iter().map(|f| f.as_str()).collect();
        if fields.is_empty() {
            return writeln!(out, "revision {}: nothing changed", self.revision);
        }
        writeln!(out, "revision {}: {}", self.revision, fields.join(", "))
    }
}

/// Runs `update`.
pub fn run(ctx: &Ctx, args: &Args) -> Result<Status> {
    let Args {
        file,
        expected_revision,
        turn_id,
        allow_missing_paths,
    } = args;
    let envelope = crate::cmd::input::read_envelope(ctx, file.as_deref())?;
    let store = ctx.store()?;
    let write = PatchWrite {
        source: Source::Update,
        changed_fields: envelope.patch.changed_fields(),
        patch: envelope.patch,
        expected_revision: expected_revision.or(envelope.expected_revision),
        turn_id: turn_id.clone(),
        allow_missing_paths: *allow_missing_paths,
    };
    let committed = commit_patch(ctx, &store, write)?;
    ctx.ui.emit(&committed.report())?;
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
}

/// A patch that made it into the store.
#[derive(Debug)]
pub struct Committed {
    /// The rollout record written.
    pub record: Record,
    /// Secrets redacted from the patch before it was written.
    pub redactions: Vec<Redaction>,
}

impl Committed {
    /// The `update` report of this write.
    pub fn report(&self) -> WriteReport {
        WriteReport {
            redactions: self.redactions.clone(),
            ..WriteReport::of(&self.record)
        }
    }
}

/// Redacts secrets from the patch, validates it against the head under the store lock, and
/// commits it. On any refusal nothing is written and the error says why (exit 2, or 3 for a
/// revision conflict).
pub fn commit_patch(ctx: &Ctx, store: &Store, write: PatchWrite) -> Result<Committed> {
    let PatchWrite {
        source,
        patch,
        changed_fields,
        expected_revision,
        turn_id,
        allow_missing_paths,
    } = write;
    let (mut patch, redactions) = redact_patch(patch);
    for redaction in &redactions {
        ctx.ui.warn(&format!(
            "redacted {} {} secret(s) from the patch before writing",
            redaction.count, redaction.kind
        ));
    }
    let resolver = Resolver::new(store.root(), &ctx.cwd, false);
    let mut planned = Vec::new();
    let written = ctx.write(store, |head| {
        let audit = audit_patch_refs(&resolver, &head.state, &mut patch, allow_missing_paths);
        planned = audit.planned;
        with_ref_problems(
            check_update(&head.state, &patch, expected_revision),
            audit.problems,
        )
        .map_err(refusal_error)?;
        Ok(Some(Draft {
            source,
            turn_id,
            changed_fields,
            payload: Payload::Patch(patch),
        }))
    })?;
    let record = written
        .record
        .ok_or_else(|| anyhow::anyhow!("a validated patch was not written"))?;
    warn_planned(ctx, &planned);
    Ok(Committed { record, redactions })
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
