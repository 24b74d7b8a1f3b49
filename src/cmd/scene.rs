//! `epiphany scene`: the compact wall board of the state and the commands that make sense
//! next. Read-only; works with or without git.

use std::io::Write;

use anyhow::Result;

use crate::ctx::Ctx;
use crate::ctx::Status;
use crate::cmd::Tool;
use crate::cmd::schema_of;
use crate::policy::freshness::CertificateStatus;
use crate::policy::prompt::inline_ids;
use crate::policy::prompt::record_line;
use crate::policy::scene::LATEST_LIMIT;
use crate::policy::scene::scene;
use crate::signals::observe;
use crate::state::model::RetrievalStatus;
use crate::ui::Report;
use crate::wire::freshness::Certificate;
use crate::wire::scene::Scene;
use crate::wire::scene::SceneCheckpoint;
use crate::wire::scene::SceneRecords;

/// Show the wall board: objective, subgoals, invariants, graph focus, checkpoint, latest
/// records, churn, and what to do next.
///
/// A compact summary of the whole state: the objective and active subgoal, invariant counts by
/// status, graph counts with the frontier, the retrieval index status, the investigation
/// checkpoint, the five newest observations and evidence records, churn, and the commands
/// available from here. Before the first write it says so and still lists the commands. The
/// freshness line is the same reading `freshness`, `reorient` and `prompt` make: cited files
/// changed since written, broken code references, a stale graph or index.
#[derive(Debug, clap::Args)]
pub struct Args {}

/// How `mcp` offers this command as a tool and `schema` describes its report.
pub const TOOL: Tool = Tool::READER
    .about("A compact overview of the whole state: objective, subgoals, graph focus, checkpoint, newest findings, freshness and what to do next. Start here.").report(schema_of::<Scene>);

fn records(out: &mut dyn Write, label: &str, records: &SceneRecords) -> std::io::Result<()> {
    if records.total_count == 0 {
        return Ok(());
    }
    writeln!(out, "{label}: {} (newest first)", records.total_count)?;
    for record in &records.latest {
        writeln!(
            out,
            "  {}",
            record_line(
                &record.id,
                &format!("{} via {}", record.status, record.kind),
                &record.summary
            )
        )?;
    }
    Ok(())
}

impl Report for Scene {
    fn human(&self, out: &mut dyn Write) -> std::io::Result<()> {
        let Some(revision) = self.revision else {
            writeln!(
                out,
                "no state yet: `epiphany update` writes the first revision"
            )?;
            return actions(out, self);
        };
        writeln!(out, "revision {revision}")?;
        aims(out, self)?;
        graph(out, self)?;
        retrieval(out, self)?;
        if let Some(staleness) = &self.staleness {
            writeln!(out, "freshness: {}", staleness.note)?;
            certified(out, &staleness.certificates)?;
        }
        checkpoint(out, self)?;
        records(out, "observations", &self.observations)?;
        if let Some(staleness) = self
            .staleness
            .as_ref()
            .filter(|s| !s.outdated_record_refs.is_empty())
        {
            writeln!(
                out,
                "  code refs that no longer hold: {} (`epiphany recheck --observation ID` supersedes one)",
                staleness.outdated_record_refs.join(", ")
            )?;
        }
        records(out, "evidence", &self.evidence)?;
        churn(out, self)?;
        actions(out, self)
    }
}

/// What was checked of the records that cite code: how many are unchanged since checked, and
/// which are not (docs/freshness.md#certificates).
fn certified(out: &mut dyn Write, certificates: &[Certificate]) -> std::io::Result<()> {
    if certificates.is_empty() {
        return Ok(());
    }
    let named = |status: CertificateStatus| -> Vec<String> {
        (certificates.iter())
            .filter(|c| c.status == status)
            .map(|c| c.owner.to_string())
            .collect()
    };
    let unchanged = named(CertificateStatus::Unchanged).len();
    write!(
        out,
        "checked: {unchanged} of {} records that cite code are unchanged since checked",
        certificates.len()
    )?;
    for (status, label) in [
        (CertificateStatus::ChangedSinceChecked, "changed since checked"),
        (CertificateStatus::NotCheckable, "not checkable"),
    ] {
        let records = named(status);
        if !records.is_empty() {
            write!(out, "; {label}: {}", records.join(", "))?;
        }
    }
    writeln!(out)
}

/// The lines of what the work is for: conflicts to resolve, the objective, the subgoals and
/// the invariant counts.
fn aims(out: &mut dyn Write, scene: &Scene) -> std::io::Result<()> {
    if !scene.conflicts.is_empty() {
        writeln!(
            out,
            "conflicts between merged branches (`epiphany conflicts` lists and settles them): {}",
            inline_ids(&scene.conflicts)
        )?;
    }
    if let Some(objective) = &scene.objective {
        writeln!(out, "objective: {objective}")?;
    }
    for subgoal in &scene.subgoals {
        let active = if subgoal.active { "; active" } else { "" };
        writeln!(
            out,
            "subgoal {}",
            record_line(
                &subgoal.id,
                &format!("{}{active}", subgoal.status),
                &subgoal.title
            )
        )?;
    }
    if !scene.invariant_status_counts.is_empty() {
        let counts: Vec<String> = scene
            .invariant_status_counts
            .iter()
            .map(|c| format!("{} {}", c.count, c.status))
            .collect();
        writeln!(out, "invariants: {}", counts.join(", "))?;
    }
    Ok(())
}

/// The graph's counts, then its frontier, open items and checkpoint when it has them.
fn graph(out: &mut dyn Write, scene: &Scene) -> std::io::Result<()> {
    let g = &scene.graph;
    writeln!(
        out,
        "graph: architecture {} nodes / {} edges, dataflow {} nodes / {} edges, {} links",
        g.architecture_node_count,
        g.architecture_edge_count,
        g.dataflow_node_count,
        g.dataflow_edge_count,
        g.link_count
    )?;
    if !g.active_node_ids.is_empty() || !g.active_edge_ids.is_empty() {
        writeln!(
            out,
            "  frontier: {}",
            inline_ids(&[g.active_node_ids.clone(), g.active_edge_ids.clone()].concat())
        )?;
    }
    if g.open_question_count + g.open_gap_count + g.dirty_paths.len() > 0 {
        writeln!(
            out,
            "  {} open questions, {} open gaps, {} dirty paths",
            g.open_question_count,
            g.open_gap_count,
            g.dirty_paths.len()
        )?;
    }
    if let Some(id) = &g.checkpoint_id {
        let summary = g
            .checkpoint_summary
            .as_ref()
            .map_or(String::new(), |s| format!(": {s}"));
        writeln!(out, "  graph checkpoint `{id}`{summary}")?;
    }
    Ok(())
}

/// The retrieval index's status line, when the scene has one.
fn retrieval(out: &mut dyn Write, scene: &Scene) -> std::io::Result<()> {
    let Some(r) = &scene.retrieval else {
        return Ok(());
    };
    let status = match r.status {
        RetrievalStatus::Unavailable => "unavailable",
        RetrievalStatus::Ready => "ready",
        RetrievalStatus::Stale => "stale",
        RetrievalStatus::Indexing => "indexing",
    };
    if r.index_revision.as_deref() == Some(crate::search::QUERY_TIME_REVISION) {
        writeln!(
            out,
            "retrieval: {status}, no persistent index (queries scan the work tree)"
        )
    } else {
        writeln!(
            out,
            "retrieval: {status}, {} files, {} chunks, {} dirty paths",
            r.indexed_file_count.unwrap_or(0),
            r.indexed_chunk_count.unwrap_or(0),
            r.dirty_path_count
        )
    }
}

/// The investigation checkpoint, whether files it cites changed, and its next action.
fn checkpoint(out: &mut dyn Write, scene: &Scene) -> std::io::Result<()> {
    let Some(SceneCheckpoint { brief: c, .. }) = &scene.investigation_checkpoint else {
        return Ok(());
    };
    writeln!(
        out,
        "checkpoint `{}` ({}, {}): {}",
        c.checkpoint_id,
        c.kind,
        c.disposition.as_str(),
        c.focus
    )?;
    if let Some(staleness) = scene
        .staleness
        .as_ref()
        .filter(|s| !s.checkpoint_changed_paths.is_empty())
    {
        writeln!(
            out,
            "  stale: the code it cites changed since it was checked: {}; re-gather before resuming",
            staleness.checkpoint_changed_paths.join(", ")
        )?;
    }
    if let Some(next) = &c.next_action {
        writeln!(out, "  next action: {next}")?;
    }
    Ok(())
}

/// The churn line and its warning, when the scene has churn.
fn churn(out: &mut dyn Write, scene: &Scene) -> std::io::Result<()> {
    let Some(churn) = &scene.churn else {
        return Ok(());
    };
    writeln!(
        out,
        "churn: {}, diff pressure {}{}",
        churn.understanding_status,
        churn.diff_pressure,
        churn
            .graph_freshness
            .as_ref()
            .map_or(String::new(), |f| format!(", graph freshness {f}"))
    )?;
    if let Some(warning) = &churn.warning {
        writeln!(out, "  warning: {warning}")?;
    }
    Ok(())
}

fn actions(out: &mut dyn Write, scene: &Scene) -> std::io::Result<()> {
    let names: Vec<&str> = scene.available_actions.iter().map(|a| a.as_str()).collect();
    writeln!(out, "next: {}", names.join(", "))
}

/// Runs `scene`.
pub fn run(ctx: &Ctx, _args: &Args) -> Result<Status> {
    let store = ctx.store()?;
    // The scene shows the newest observations and evidence records and counts the rest; their
    // code refs never make the map stale, so only the shown ones are decoded.
    let head = store.head_with_newest(LATEST_LIMIT)?;
    let state = head.has_state().then_some(&head.state);
    let observed = observe(ctx, &store, &head, None)?;
    let staleness = state.map(|_| observed.freshness.staleness());
    ctx.ui.emit(&Scene::from(scene(
        state,
        head.totals,
        Some(&observed.retrieval),
        staleness.as_ref(),
    )))?;
    Ok(Status::Ok)
}
