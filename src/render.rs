//! Rendering that several commands share.
//!
//! Human text for the projection reports: id lists, code refs and graph slices, written the
//! way the prompt writes them so a person and an agent read the same shapes. And the report
//! `distill` and `propose` print: the `{"expected_revision", "patch"}` envelope that `update`
//! and `promote` read back, rendered for a person as a short account of the draft. Drafting
//! commands never write; this module only presents what they drafted. And [`Document`], the
//! report that is a JSON document for a script and a person alike.

use std::io::IsTerminal;
use std::io::Write;

use anyhow::Result;
use serde::Serialize;

use crate::ctx::Ctx;
use crate::policy::code_ref::format_code_ref;
use crate::policy::code_ref::line_list;
use crate::policy::freshness::CertificateStatus;
use crate::policy::prompt::code_ref;
use crate::policy::prompt::inline_ids;
use crate::policy::text::json_printable;
use crate::state::model::CodeRef;
use crate::state::model::GraphEdge;
use crate::state::model::GraphNode;
use crate::state::patch::Patch;
use crate::ui::Report;
use crate::wire::freshness::Certificate;
use crate::wire::freshness::RefFinding;
use crate::wire::graph::GraphSlice;

/// A report that is one JSON document for a script and the same document pretty-printed for a
/// person (`show`'s state, `schema`'s schemas): valid JSON either way, so `show | jq` works
/// (characters that act on a terminal are written as JSON escapes).
pub struct Document<T>(pub T);

impl<T: Serialize> Serialize for Document<T> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(serializer)
    }
}

impl<T: Serialize> Report for Document<T> {
    fn human(&self, out: &mut dyn Write) -> std::io::Result<()> {
        let text = serde_json::to_string_pretty(&self.0)?;
        writeln!(out, "{}", json_printable(&text))
    }
}

/// A record's certificate as a line (docs/freshness.md#certificates): the record, and whether
/// the code it cites is unchanged since it was checked (and at which commit), changed since
/// (which references), or not checkable.
pub fn certificate(certificate: &Certificate) -> String {
    let status = match certificate.status {
        CertificateStatus::Unchanged => match &certificate.checked_at {
            Some(commit) => format!(
                "unchanged since checked at commit {}",
                &commit[..commit.len().min(12)]
            ),
            None => "unchanged since checked".to_owned(),
        },
        CertificateStatus::ChangedSinceChecked => format!(
            "changed since checked: {}",
            certificate.changed_refs.join(", ")
        ),
        CertificateStatus::NotCheckable => "not checkable".to_owned(),
    };
    format!("{}: {status}", certificate.owner)
}

/// A reference that no longer holds, as a line: what, where, and what a fix would do.
pub fn describe_finding(finding: &RefFinding) -> String {
    let mut line = format!(
        "{} {} on {}",
        finding.kind.as_str(),
        format_code_ref(&finding.code_ref),
        finding.owner
    );
    if let Some(to) = &finding.renamed_to {
        line.push_str(&format!(": now `{to}`"));
    }
    if !finding.symbol_lines.is_empty() {
        line.push_str(&format!(
            ": the symbol is at {}",
            line_list(&finding.symbol_lines)
        ));
    }
    if !finding.blocking {
        line.push_str(" (reported only)");
    } else if let Some(fixed) = &finding.reanchored {
        line.push_str(&format!(" -> fix: {}", format_code_ref(fixed)));
    }
    line
}

/// Every code ref, joined by `, `.
pub fn refs(refs: &[CodeRef]) -> String {
    refs.iter().map(code_ref).collect::<Vec<_>>().join(", ")
}

/// `label: `a`, `b`` when the list is not empty.
pub fn id_line(out: &mut dyn Write, label: &str, list: &[String]) -> std::io::Result<()> {
    if list.is_empty() {
        return Ok(());
    }
    writeln!(out, "{label}: {}", inline_ids(list))
}

/// The nodes, edges and links of a slice, one per line.
pub fn graph_slice(out: &mut dyn Write, slice: &GraphSlice) -> std::io::Result<()> {
    nodes(out, "architecture nodes", &slice.architecture_nodes)?;
    edges(out, "architecture edges", &slice.architecture_edges)?;
    nodes(out, "dataflow nodes", &slice.dataflow_nodes)?;
    edges(out, "dataflow edges", &slice.dataflow_edges)?;
    if !slice.links.is_empty() {
        writeln!(out, "links:")?;
        for link in &slice.links {
            let relationship = link
                .relationship
                .as_ref()
                .map_or(String::new(), |r| format!(" ({r})"));
            writeln!(
                out,
                "  `{}` -> `{}`{relationship}",
                link.dataflow_node_id, link.architecture_node_id
            )?;
        }
    }
    Ok(())
}

fn nodes(out: &mut dyn Write, label: &str, nodes: &[GraphNode]) -> std::io::Result<()> {
    if nodes.is_empty() {
        return Ok(());
    }
    writeln!(out, "{label}:")?;
    for node in nodes {
        let status = node
            .status
            .as_ref()
            .map_or(String::new(), |s| format!(" [{s}]"));
        writeln!(out, "  `{}`{status}: {}", node.id, node.title)?;
        writeln!(out, "    purpose: {}", node.purpose)?;
        if !node.code_refs.is_empty() {
            writeln!(out, "    code refs: {}", refs(&node.code_refs))?;
        }
    }
    Ok(())
}

fn edges(out: &mut dyn Write, label: &str, edges: &[GraphEdge]) -> std::io::Result<()> {
    if edges.is_empty() {
        return Ok(());
    }
    writeln!(out, "{label}:")?;
    for edge in edges {
        let id = edge
            .id
            .as_ref()
            .map_or(String::new(), |id| format!(" `{id}`"));
        writeln!(
            out,
            "  `{}` -> `{}` ({}){id}",
            edge.source_id, edge.target_id, edge.kind
        )?;
    }
    Ok(())
}

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
