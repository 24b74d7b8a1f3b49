//! The report `distill` and `propose` print: the `{"expected_revision", "patch"}` envelope
//! that `update` and `promote` read back, rendered for a person as a short account of the
//! draft. Drafting commands never write; this module only presents what they drafted.

use std::io::IsTerminal;
use std::io::Write;

use anyhow::Result;
use serde::Serialize;

use crate::cli::Ctx;

use crate::policy::code_ref::format_code_ref;
use crate::state::patch::Patch;
use crate::ui::Report;

/// Prints a draft: the envelope as JSON when `--json` is given or stdout is not a terminal
/// (so `epiphany distill ... | epiphany update` and `epiphany propose | epiphany promote` work
/// as written), the human account and `next`, a hint, on a terminal.
pub fn emit_draft(ctx: &Ctx, report: &DraftReport, next: &str) -> Result<()> {
    if ctx.ui.json() {
        return ctx.ui.emit(report);
    }
    if !std::io::stdout().is_terminal() {
        return ctx.ui.emit_text(&(serde_json::to_string(report)? + "\n"));
    }
    ctx.ui.emit(report)?;
    ctx.ui.hint(next);
    Ok(())
}

/// A drafted patch and the revision it was drafted against.
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct DraftReport {
    /// The head revision the draft was made from (0 before the first write).
    pub expected_revision: u64,
    /// The drafted patch.
    pub patch: Patch,
}

impl Report for DraftReport {
    fn human(&self, out: &mut dyn Write) -> std::io::Result<()> {
        let patch = &self.patch;
        writeln!(
            out,
            "drafted against revision {} (nothing was written)",
            self.expected_revision
        )?;
        for observation in &patch.observations {
            writeln!(
                out,
                "observation {} [{}, {}]",
                observation.id, observation.source_kind, observation.status
            )?;
            writeln!(out, "  {}", observation.summary)?;
            for code_ref in &observation.code_refs {
                writeln!(out, "  code ref: {}", format_code_ref(code_ref))?;
            }
        }
        for evidence in &patch.evidence {
            writeln!(
                out,
                "evidence {} [{}, {}]",
                evidence.id, evidence.kind, evidence.status
            )?;
        }
        if let Some(graphs) = &patch.graphs {
            writeln!(
                out,
                "graphs: {} architecture node(s), {} dataflow node(s)",
                graphs.architecture.nodes.len(),
                graphs.dataflow.nodes.len()
            )?;
        }
        if let Some(frontier) = &patch.graph_frontier {
            writeln!(
                out,
                "frontier: nodes {}; edges {}",
                list(&frontier.active_node_ids),
                list(&frontier.active_edge_ids)
            )?;
        }
        if let Some(churn) = &patch.churn {
            writeln!(
                out,
                "churn: {}, pressure {}, freshness {}",
                churn.understanding_status,
                churn.diff_pressure,
                churn.graph_freshness.as_deref().unwrap_or("unset")
            )?;
            if let Some(warning) = &churn.warning {
                writeln!(out, "  {warning}")?;
            }
        }
        Ok(())
    }
}

fn list(ids: &[String]) -> String {
    if ids.is_empty() {
        "(none)".to_owned()
    } else {
        ids.join(", ")
    }
}
