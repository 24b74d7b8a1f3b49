//! `epiphany freshness`: is the understanding still current? Maps the work tree's changes
//! since each record was written onto the graph nodes and the investigation checkpoint, and
//! reports the graph's own freshness and the retrieval index's. `--check` makes it a gate.

use std::io::Write;

use anyhow::Result;

use crate::cli::Ctx;
use crate::cli::Status;
use crate::cmd::signals::retrieval_summary;
use crate::cmd::signals::watcher_input;
use crate::policy::freshness::ChangeSource;
use crate::policy::freshness::Freshness;
use crate::policy::freshness::StaleReason;
use crate::policy::freshness::assess_freshness;
use crate::policy::prompt::inline_ids;
use crate::ui::Report;

/// Check whether the recorded understanding still matches the code.
///
/// Inside git, each graph node and the investigation checkpoint is compared with the files
/// changed since the commit of the last write that changed it (committed, staged, unstaged and
/// untracked changes; `.epiphany/` excluded; renames followed). A record is stale when a file
/// it cites changed after it was written; rewriting the record makes it fresh again, and an
/// unrelated write does not. Every changed path is listed with the nodes, frontier nodes and
/// checkpoint it hits. The graph's own freshness (dirty paths, open questions and gaps, the
/// churn freshness label) and the retrieval index's are reported too. Outside git, the index
/// manifest's dirty paths stand in for git.
///
/// With `--check`, exits 1 when a cited file changed, the graph is stale, or an existing index
/// is stale; a missing index does not fail the check.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Exit 1 when anything is stale
    #[arg(long)]
    pub check: bool,
    /// Compare every record with revision REV's commit instead of its own
    #[arg(long, value_name = "REV")]
    pub since: Option<u64>,
}

impl Report for Freshness {
    fn human(&self, out: &mut dyn Write) -> std::io::Result<()> {
        match self.state_revision {
            Some(revision) => writeln!(out, "revision {revision}")?,
            None => writeln!(out, "no state yet")?,
        }
        writeln!(out, "retrieval: {}", self.retrieval.note)?;
        writeln!(out, "graph: {}", self.graph.note)?;
        let watcher = &self.watcher;
        let source = match (watcher.source, &watcher.base_commit) {
            (Some(ChangeSource::Git), Some(commit)) => {
                format!(" (git, since {})", &commit[..commit.len().min(12)])
            }
            (Some(ChangeSource::Manifest), _) => " (index manifest)".to_owned(),
            _ => String::new(),
        };
        writeln!(out, "changes{source}: {}", watcher.note)?;
        for change in &watcher.changes {
            let mut hits = Vec::new();
            if !change.graph_node_ids.is_empty() {
                hits.push(format!("nodes {}", inline_ids(&change.graph_node_ids)));
            }
            if !change.active_frontier_node_ids.is_empty() {
                hits.push(format!(
                    "frontier {}",
                    inline_ids(&change.active_frontier_node_ids)
                ));
            }
            if change.cited_by_checkpoint {
                hits.push("investigation checkpoint".to_owned());
            }
            let renamed = change
                .renamed_to
                .as_ref()
                .map_or(String::new(), |to| format!(" -> {to}"));
            let hits = if hits.is_empty() {
                String::new()
            } else {
                format!("  hits {}", hits.join(", "))
            };
            writeln!(out, "  {}{renamed}{hits}", change.path)?;
        }
        if self.fresh {
            writeln!(out, "fresh")
        } else {
            let reasons: Vec<&str> = self
                .stale_reasons
                .iter()
                .map(|reason| match reason {
                    StaleReason::CitedFilesChanged => "cited files changed",
                    StaleReason::GraphStale => "graph stale",
                    StaleReason::IndexStale => "index stale",
                })
                .collect();
            writeln!(out, "stale: {}", reasons.join(", "))
        }
    }
}

/// Runs `freshness`.
pub fn run(ctx: &Ctx, args: &Args) -> Result<Status> {
    let Args { check, since } = args;
    let store = ctx.store()?;
    let head = store.head()?;
    let retrieval = retrieval_summary(&store);
    let watcher = watcher_input(ctx, &store, &head, Some(&retrieval), *since)?;
    let state = head.has_state().then_some(&head.state);
    let freshness = assess_freshness(state, &head.anchors, Some(&retrieval), &watcher);
    ctx.ui.emit(&freshness)?;
    if *check && !freshness.fresh {
        ctx.ui.hint(
            "rewrite the records that cite changed files and settle the frontier with `epiphany update`; refresh the index with `epiphany index`",
        );
        return Ok(Status::No);
    }
    Ok(Status::Ok)
}
