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
use crate::policy::context::certify_shown;
use crate::policy::context::cited_paths;
use crate::policy::context::context_shard;
use crate::policy::context::mark_refs_not_holding;
use crate::policy::context::show_cited_code;
use crate::policy::projection::StateStatus;
use crate::policy::prompt::inline_ids;
use crate::policy::prompt::record_line;
use crate::policy::text::printable;
use crate::search::definitions::DefinitionCache;
use crate::render;
use crate::ui::Report;
use crate::wire::context::CitedCode;
use crate::wire::context::ContextBody;
use crate::wire::context::ContextShard;

/// Show the state around named nodes, edges, observations and evidence.
///
/// Returns the named graph nodes with every edge and link touching them, the named edges, the
/// named observations (newest first) with the evidence they cite (unless it only repeats the
/// observation), and the named evidence. Naming nothing shows the active frontier and the
/// checkpoints; `--frontier` adds them to named records. Ids that do not exist are listed under
/// `missing`; they are not an error. Code references of the shown records that no longer hold
/// (file gone, symbol gone, lines past the end) are listed under `refs_not_holding`, and each
/// shown node and checkpoint says under `certificates` whether the code it cites is unchanged
/// since it was checked. `--code` prints that code too.
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
    /// Also show the active frontier and the checkpoints (shown by default only when no record
    /// is named)
    #[arg(long, conflicts_with = "no_frontier")]
    pub frontier: bool,
    /// Leave out the active frontier and the checkpoints, even when no record is named
    #[arg(long)]
    pub no_frontier: bool,
    /// Leave out the evidence the selected observations cite
    #[arg(long)]
    pub no_linked_evidence: bool,
    /// Also print the code the shown references cite, as it is now (at most 120 lines a
    /// reference and 16,000 characters in all)
    #[arg(long)]
    pub code: bool,
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
pub const TOOL: Tool = Tool::READER
    .arguments(&[
        ("frontier", "Also show the frontier and checkpoints (the default when nothing is named)"),
        ("no_frontier", "Never show the frontier and checkpoints"),
        ("code", "Also show the cited code as it is now (at most 16,000 characters)"),
    ])
    .about("The state around named nodes, edges, observations and evidence: what they link to and whether their code still holds; the frontier and checkpoint when nothing is named.").report(schema_of::<ContextShard>);

impl Report for ContextShard {
    fn human(&self, out: &mut dyn Write) -> std::io::Result<()> {
        match (self.state_status, self.state_revision) {
            (StateStatus::Ready, Some(revision)) => writeln!(out, "revision {revision}")?,
            _ => writeln!(out, "no state yet")?,
        }
        let body = &self.context;
        render::graph_slice(out, &body.graph)?;
        frontier_and_checkpoints(out, body)?;
        records(out, body)?;
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
        if !self.certificates.is_empty() {
            writeln!(out, "checked:")?;
            for certificate in &self.certificates {
                writeln!(out, "  {}", render::certificate(certificate))?;
            }
        }
        cited_code(out, &self.code)
    }
}

fn frontier_and_checkpoints(out: &mut dyn Write, body: &ContextBody) -> std::io::Result<()> {
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
    let Some(c) = &body.investigation_checkpoint else {
        return Ok(());
    };
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
    Ok(())
}

fn records(out: &mut dyn Write, body: &ContextBody) -> std::io::Result<()> {
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
    Ok(())
}

/// The cited lines `--code` asked for, numbered, with what the budget left out.
fn cited_code(out: &mut dyn Write, code: &[CitedCode]) -> std::io::Result<()> {
    for cited in code {
        writeln!(out, "code {} ({}):", cited.code_ref, cited.owner)?;
        for (line, text) in (cited.start_line..).zip(&cited.lines) {
            writeln!(out, "{line:>6}  {}", printable(text))?;
        }
        if cited.lines_left_out > 0 {
            writeln!(out, "        ... {} more lines", cited.lines_left_out)?;
        }
    }
    Ok(())
}

/// Runs `context`.
pub fn run(ctx: &Ctx, args: &Args) -> Result<Status> {
    let Args {
        graph: GraphIds { nodes, edges },
        observations,
        evidence,
        frontier,
        no_frontier,
        no_linked_evidence,
        code,
    } = args;
    let mut request = ContextRequest {
        node_ids: nodes.clone(),
        edge_ids: edges.clone(),
        observation_ids: observations.clone(),
        evidence_ids: evidence.clone(),
        include_active_frontier: false,
        include_checkpoints: false,
        include_linked_evidence: !no_linked_evidence,
    };
    let around = *frontier || (request.names_nothing() && !no_frontier);
    request.include_active_frontier = around;
    request.include_checkpoints = around;
    // Observations and evidence are decoded only when some are asked for.
    let store = ctx.store()?;
    let head = if observations.is_empty() && evidence.is_empty() {
        store.head_with_newest(0)?
    } else {
        store.head()?
    };
    let state = head.has_state().then_some(&head.state);
    let mut shard = context_shard(state, &request);
    let cache = DefinitionCache::open(store.dir(), &store.cache_dir());
    let cited = read_cited_files(
        store.root(),
        &cited_paths(&shard, *code),
        Some(&cache),
        ctx.parse_deadline(),
    );
    cache.save();
    mark_refs_not_holding(&mut shard, &cited);
    certify_shown(&mut shard, &head.anchors, &cited);
    if *code {
        show_cited_code(&mut shard, &cited);
    }
    ctx.ui.emit(&ContextShard::from(shard))?;
    Ok(Status::Ok)
}
