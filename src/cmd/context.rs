//! `epiphany context`: the bounded part of the state around named records, with the ids that
//! were not found and the shown code references that no longer hold (the cited files are read
//! from the work tree). Read-only; works with or without git.

use std::io::Write;

use anyhow::Result;

use crate::ctx::Ctx;
use crate::ctx::Status;
use crate::code_refs::read_cited_files;
use crate::cmd::Tool;
use crate::cmd::schema_of;
use crate::policy::context::ContextRequest;
use crate::policy::context::cited_paths;
use crate::policy::context::context_shard;
use crate::policy::context::mark_refs_not_holding;
use crate::policy::projection::StateStatus;
use crate::policy::prompt::inline_ids;
use crate::policy::prompt::record_line;
use crate::render;
use crate::ui::Report;
use crate::wire::context::ContextShard;

/// Show the state around named nodes, edges, observations and evidence.
///
/// Returns the named graph nodes with every edge and link touching them, the named edges, the
/// named observations (newest first) with the evidence they cite, and the named evidence. By
/// default the active frontier's nodes and edges are included too, and the frontier itself.
/// The graph and investigation checkpoints always come along. Ids that do not exist are
/// listed under `missing`; they are not an error. Code references of the shown records that no
/// longer hold (file gone, symbol gone, lines past the end) are listed under
/// `refs_not_holding`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The graph records to show
    #[command(flatten)]
    pub graph: GraphIds,
    /// An observation id (repeatable)
    #[arg(long = "observation", value_name = "ID")]
    pub observations: Vec<String>,
    /// An evidence id (repeatable)
    #[arg(long = "evidence", value_name = "ID")]
    pub evidence: Vec<String>,
    /// Leave out the active frontier
    #[arg(long)]
    pub no_frontier: bool,
    /// Leave out the evidence the selected observations cite
    #[arg(long)]
    pub no_linked_evidence: bool,
}

/// Graph records named by id, as `context` and `graph` take them.
#[derive(Debug, clap::Args)]
pub struct GraphIds {
    /// A graph node id (repeatable)
    #[arg(long = "node", value_name = "ID")]
    pub nodes: Vec<String>,
    /// A graph edge id (repeatable)
    #[arg(long = "edge", value_name = "ID")]
    pub edges: Vec<String>,
}

/// How `mcp` offers this command as a tool and `schema` describes its report.
pub const TOOL: Tool = Tool::READER.report(schema_of::<ContextShard>);

impl Report for ContextShard {
    fn human(&self, out: &mut dyn Write) -> std::io::Result<()> {
        match (self.state_status, self.state_revision) {
            (StateStatus::Ready, Some(revision)) => writeln!(out, "revision {revision}")?,
            _ => writeln!(out, "no state yet")?,
        }
        let body = &self.context;
        render::graph_slice(out, &body.graph)?;
        if let Some(frontier) = &body.frontier {
            render::id_line(out, "frontier nodes", &frontier.active_node_ids)?;
            render::id_line(out, "frontier edges", &frontier.active_edge_ids)?;
            render::id_line(out, "open questions", &frontier.open_question_ids)?;
            render::id_line(out, "open gaps", &frontier.open_gap_ids)?;
            render::id_line(out, "dirty paths", &frontier.dirty_paths)?;
        }
        if let Some(checkpoint) = &body.checkpoint {
            writeln!(
                out,
                "graph checkpoint `{}` (graph revision {})",
                checkpoint.checkpoint_id, checkpoint.graph_revision
            )?;
        }
        if let Some(c) = &body.investigation_checkpoint {
            let brief = &c.brief;
            writeln!(
                out,
                "investigation checkpoint `{}` ({}, {}): {}",
                brief.checkpoint_id,
                brief.kind,
                brief.disposition.as_str(),
                brief.focus
            )?;
            for (label, value) in [
                ("summary", &brief.summary),
                ("next action", &brief.next_action),
            ] {
                if let Some(value) = value {
                    writeln!(out, "  {label}: {value}")?;
                }
            }
            for question in &c.open_questions {
                writeln!(out, "  open question: {question}")?;
            }
            if !c.code_refs.is_empty() {
                writeln!(out, "  code refs: {}", render::refs(&c.code_refs))?;
            }
            if !c.evidence_ids.is_empty() {
                writeln!(out, "  evidence: {}", inline_ids(&c.evidence_ids))?;
            }
        }
        for o in &body.observations {
            writeln!(
                out,
                "observation {}",
                record_line(
                    &o.id,
                    &format!("{} via {}", o.status, o.source_kind),
                    &o.summary
                )
            )?;
            if !o.evidence_ids.is_empty() {
                writeln!(out, "  evidence: {}", inline_ids(&o.evidence_ids))?;
            }
            if !o.code_refs.is_empty() {
                writeln!(out, "  code refs: {}", render::refs(&o.code_refs))?;
            }
        }
        for e in &body.evidence {
            writeln!(
                out,
                "evidence {}",
                record_line(&e.id, &format!("{} / {}", e.kind, e.status), &e.summary)
            )?;
            if !e.code_refs.is_empty() {
                writeln!(out, "  code refs: {}", render::refs(&e.code_refs))?;
            }
        }
        let missing = &self.missing;
        render::id_line(out, "missing nodes", &missing.graph_node_ids)?;
        render::id_line(out, "missing edges", &missing.graph_edge_ids)?;
        render::id_line(out, "missing observations", &missing.observation_ids)?;
        render::id_line(out, "missing evidence", &missing.evidence_ids)?;
        if !self.refs_not_holding.is_empty() {
            writeln!(out, "code refs that no longer hold:")?;
            for finding in &self.refs_not_holding {
                writeln!(out, "  {}", render::describe_finding(finding))?;
            }
        }
        Ok(())
    }
}

/// Runs `context`.
pub fn run(ctx: &Ctx, args: &Args) -> Result<Status> {
    let Args {
        graph: GraphIds { nodes, edges },
        observations,
        evidence,
        no_frontier,
        no_linked_evidence,
    } = args;
    let request = ContextRequest {
        node_ids: nodes.clone(),
        edge_ids: edges.clone(),
        observation_ids: observations.clone(),
        evidence_ids: evidence.clone(),
        include_active_frontier: !no_frontier,
        include_linked_evidence: !no_linked_evidence,
    };
    // Observations and evidence are decoded only when some are asked for.
    let store = ctx.store()?;
    let head = if observations.is_empty() && evidence.is_empty() {
        store.head_with_newest(0)?
    } else {
        store.head()?
    };
    let state = head.has_state().then_some(&head.state);
    let mut shard = context_shard(state, &request);
    let cited = read_cited_files(store.root(), &cited_paths(&shard));
    mark_refs_not_holding(&mut shard, &cited);
    ctx.ui.emit(&ContextShard::from(shard))?;
    Ok(Status::Ok)
}
