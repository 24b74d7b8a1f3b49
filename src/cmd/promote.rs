//! `epiphany promote`: the verifier gate in front of the one write path.
//!
//! Reads the drafted patch and the verifier evidence, lets `policy::promote` judge them, and
//! on acceptance applies the result through [`PatchWrite::commit`], the same writer `update` uses,
//! recorded as `source: promote`. A rejection is an answer, not an error: the report lists
//! every reason, nothing is written, and the exit code is 1.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;
use std::path::PathBuf;

use anyhow::Result;
use serde::Serialize;

use crate::ctx::Ctx;
use crate::ctx::Status;
use crate::error::Failure;
use crate::input::read_document;
use crate::input::PatchInput;
use crate::input::read_envelope;
use crate::cmd::PATCH_INPUT;
use crate::cmd::Tool;
use crate::cmd::schema_of;
use crate::policy::promote::promote;
use crate::policy::promote::verifier_record;
use crate::policy::secrets::Redaction;
use crate::policy::secrets::redact_serialized;
use crate::policy::secrets::redactions;
use crate::state::fields::ChangedField;
use crate::state::model::EvidenceRecord;
use crate::state::rollout::Source;
use crate::ui::Report;
use crate::write::PatchWrite;
use crate::write::redaction_failure;
use crate::write::warn_redactions;

/// Gate a drafted patch with verifier evidence; on acceptance apply it like `update`.
///
/// Reads a bare patch or the `{"expected_revision", "patch"}` envelope that `distill` and
/// `propose` print, from FILE or stdin. The verifier evidence comes from `--verifier-kind`,
/// `--verifier-status` and `--verifier-summary` (with `--verifier-id`, or a stable id derived
/// from the verdict and the patch), or from `--verifier-file`, a JSON evidence record.
///
/// Every promotion rule runs and every reason is listed. Rejected: exit 1, nothing written.
/// Accepted: the verifier record is appended to the patch evidence and the patch is applied
/// through the `update` path. The verifier status must be accepting (ok, accepted, verified,
/// pass, passed); medium/high churn needs a `churn.warning` and a verifier kind with a
/// verification, verifier, test(s), smoke or review token. When the store moved past the
/// expected revision (the envelope's, or `--expected-revision`), exit 3 and nothing is
/// written.
///
/// Promotion settles what it verified: the verifier covers the paths its own code refs cite
/// (`--verifier-file`), or, citing none, the paths the patch's observations cite. Those paths
/// leave the frontier's `dirty_paths` in the written patch, and when nothing else is open
/// (no dirty path, open question or gap) the churn's `graph_freshness` becomes `fresh`, so
/// `freshness --check` passes. Dirty paths the verifier did not cover stay open, and
/// `freshness` names them. The report lists what was settled and what is still dirty.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Patch or envelope file; `-` or absent reads stdin
    pub file: Option<PathBuf>,
    /// Verifier kind (`test`, `smoke-test`, `code-review`, `verification`, ...)
    #[arg(long, value_name = "KIND", required_unless_present = "verifier_file")]
    pub verifier_kind: Option<String>,
    /// Verifier status; must be accepting (`ok`, `pass`, `verified`, ...)
    #[arg(long, value_name = "STATUS", required_unless_present = "verifier_file")]
    pub verifier_status: Option<String>,
    /// What the verifier established
    #[arg(long, value_name = "TEXT", required_unless_present = "verifier_file")]
    pub verifier_summary: Option<String>,
    /// Id of the verifier evidence record (default: derived from the verdict and the patch)
    #[arg(long, value_name = "ID")]
    pub verifier_id: Option<String>,
    /// Read the verifier evidence record from this JSON file instead
    #[arg(
        long,
        value_name = "FILE",
        conflicts_with_all = ["verifier_kind", "verifier_status", "verifier_summary", "verifier_id"]
    )]
    pub verifier_file: Option<PathBuf>,
    /// Refuse with exit 3 unless the store is at this revision (overrides the envelope's)
    #[arg(long, value_name = "N")]
    pub expected_revision: Option<u64>,
    /// Accept code refs and dirty paths naming files that do not exist yet (recorded as
    /// `planned`), as `update --allow-missing-paths` does
    #[arg(long)]
    pub allow_missing_paths: bool,
}

/// How `mcp` offers this command as a tool and `schema` describes its report.
pub const TOOL: Tool = Tool::WRITER
    .arguments(&[("file", "A file holding the patch, instead of `input`")])
    .about("Write a drafted patch (`input`) only when a verifier (a test run, a review) accepts it, recording the verdict as evidence; a rejection writes nothing and lists the reasons.")
    .input(PATCH_INPUT)
    .report(schema_of::<PromoteReport>);

/// What a promotion decided, and what it wrote.
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct PromoteReport {
    /// Whether the gate accepted the patch.
    pub accepted: bool,
    /// Why it did not, every reason in rule order.
    pub reasons: Vec<String>,
    /// The revision written, when accepted.
    pub revision: Option<u64>,
    /// The fields the write changed (empty when rejected).
    pub changed_fields: Vec<ChangedField>,
    /// Secrets redacted from the patch before it was written.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub redactions: Vec<Redaction>,
    /// Frontier dirty paths the verifier covered, settled by this promotion.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub settled_dirty_paths: Vec<String>,
    /// Frontier dirty paths still open after it (`freshness` names them).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub open_dirty_paths: Vec<String>,
}

impl Report for PromoteReport {
    fn human(&self, out: &mut dyn Write) -> std::io::Result<()> {
        match self.revision {
            Some(revision) if self.accepted => {
                let fields: Vec<&str> = self.changed_fields.iter().map(|f| f.as_str()).collect();
                writeln!(out, "accepted: revision {revision}: {}", fields.join(", "))?;
                if !self.settled_dirty_paths.is_empty() {
                    writeln!(
                        out,
                        "settled (verified): {}",
                        self.settled_dirty_paths.join(", ")
                    )?;
                }
                if !self.open_dirty_paths.is_empty() {
                    writeln!(out, "still dirty: {}", self.open_dirty_paths.join(", "))?;
                }
                Ok(())
            }
            _ => {
                writeln!(out, "rejected:")?;
                for reason in &self.reasons {
                    writeln!(out, "  - {reason}")?;
                }
                Ok(())
            }
        }
    }
}

/// Runs `promote`.
pub fn run(ctx: &Ctx, args: &Args) -> Result<Status> {
    let Args {
        file,
        verifier_kind,
        verifier_status,
        verifier_summary,
        verifier_id,
        verifier_file,
        expected_revision,
        allow_missing_paths,
    } = args;
    let store = ctx.store()?;
    let PatchInput {
        mut envelope,
        malformed,
    } = read_envelope(ctx, file.as_deref())?;
    // Redacted before the gate reads them, so no reason it prints can quote a secret.
    let mut found = BTreeMap::new();
    envelope.patch = redact_serialized(envelope.patch, &mut found).map_err(redaction_failure)?;
    let verifier = match verifier_file {
        Some(path) => read_verifier(ctx, path, file.as_deref())?,
        // clap insists on the three flags when there is no file; absent would read as blank
        // and be refused by the gate.
        None => verifier_record(
            verifier_kind.as_deref().unwrap_or(""),
            verifier_status.as_deref().unwrap_or(""),
            verifier_summary.as_deref().unwrap_or(""),
            verifier_id.as_deref(),
            &envelope.patch,
        ),
    };
    let verifier = redact_serialized(verifier, &mut found).map_err(redaction_failure)?;
    // A malformed patch is input to fix, not a verdict to weigh: refused (exit 2) with every
    // problem the gate and, past it, the write path find in what decoded, as `update` does.
    // Decoded to nothing, it has nothing left for the gate to judge.
    if let Some(malformed) = &malformed
        && envelope.patch.is_empty()
    {
        return Err(malformed.refusal(Vec::new(), Vec::new()));
    }
    let promotion = match (promote(envelope.patch, verifier), &malformed) {
        (Ok(promotion), _) => promotion,
        (Err(problems), Some(malformed)) => {
            // The gate's problems lie in the patch, or under `verifierEvidence` for the
            // verifier record, which is not the document's.
            let (verifier, in_patch) = problems
                .into_iter()
                .partition(|problem| problem.path.starts_with("verifierEvidence"));
            return Err(malformed.refusal(in_patch, verifier));
        }
        (Err(problems), None) => {
            ctx.ui.emit(&PromoteReport {
                accepted: false,
                // The report's contract: each problem as `path: message` text.
                reasons: problems.iter().map(ToString::to_string).collect(),
                revision: None,
                changed_fields: Vec::new(),
                redactions: redactions(found),
                settled_dirty_paths: Vec::new(),
                open_dirty_paths: Vec::new(),
            })?;
            ctx.ui
                .hint("nothing was written; address every reason and promote again");
            return Ok(Status::No);
        }
    };
    let open_dirty_paths = promotion
        .patch
        .graph_frontier
        .as_ref()
        .map(|f| f.dirty_paths.clone())
        .unwrap_or_default();
    let committed = PatchWrite {
            source: Source::Promote,
            patch: promotion.patch,
            changed_fields: promotion.changed_fields,
            expected_revision: expected_revision.or(envelope.expected_revision),
            turn_id: None,
            allow_missing_paths: *allow_missing_paths,
            refs_from_cwd: false,
            malformed,
        }
    .commit(ctx, &store)?;
    // The patch reached the writer clean, so what the writer found came from nowhere else.
    for redaction in committed.redactions {
        *found.entry(redaction.kind).or_default() += redaction.count;
    }
    let redactions = redactions(found);
    warn_redactions(ctx, &redactions);
    let landed = committed.committed.landed();
    let report = PromoteReport {
        accepted: true,
        reasons: Vec::new(),
        revision: Some(committed.committed.revision),
        changed_fields: committed.committed.record.changed_fields,
        redactions,
        settled_dirty_paths: promotion.settled_paths,
        open_dirty_paths,
    };
    ctx.ui.emit_landed(&report, &landed);
    Ok(Status::Ok)
}

/// Reads a JSON evidence record. Stdin can carry the patch or the verifier, not both.
fn read_verifier(ctx: &Ctx, path: &Path, patch_file: Option<&Path>) -> Result<EvidenceRecord> {
    let is_stdin = |path: Option<&Path>| path.is_none_or(|p| p == Path::new("-"));
    if is_stdin(Some(path)) && is_stdin(patch_file) {
        return Err(Failure::usage(
            "`--verifier-file -` and the patch cannot both come from stdin",
        )
        .with_hint("pass the patch as a file argument, or the verifier record as a file")
        .into());
    }
    let (name, text) = read_document(ctx, Some(path))?;
    serde_json::from_str(&text).map_err(|err| {
        Failure::input(format!("{name} is not a valid evidence record: {err}"))
            .with_hint(
                r#"expected {"id": "...", "kind": "...", "status": "...", "summary": "..."}"#,
            )
            .into()
    })
}
