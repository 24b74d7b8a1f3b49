//! `epiphany freshness`: is the understanding still current? Maps the work tree's changes
//! since each record was written onto the graph nodes and the investigation checkpoint,
//! re-checks every code reference against the files as they are, and reports the graph's own
//! freshness and the retrieval index's. `--check` makes it a gate; `--fix` drafts the patch
//! that re-anchors what can be re-anchored mechanically.

use std::io::Write;

use anyhow::Result;
use schemars::Schema;

use crate::ctx::Ctx;
use crate::ctx::Status;
use crate::error::ErrorKind;
use crate::error::Failure;
use crate::cmd::Tool;
use crate::cmd::schema_of_either;
use crate::policy;
use crate::policy::freshness::CertificateStatus;
use crate::policy::freshness::ChangeSource;
use crate::policy::freshness::StaleReason;
use crate::policy::prompt::inline_ids;
use crate::policy::recheck::reanchor_patch;
use crate::render;
use crate::render::DraftReport;
use crate::render::describe_finding;
use crate::signals::Observed;
use crate::signals::observe;
use crate::state::git;
use crate::state::patch::Patch;
use crate::state::store::Head;
use crate::state::store::Store;
use crate::ui::Report;
use crate::wire::freshness::Freshness;
use crate::wire::freshness::RefFinding;

/// Check whether the recorded understanding still matches the code.
///
/// Inside git, each graph node and the investigation checkpoint is compared with the files
/// changed since the commit of the last write that changed it (committed, staged, unstaged and
/// untracked changes; `.epiphany/` excluded; renames followed). A record is stale when a file
/// it cites changed after it was written; a reference to a symbol where the language is parsed
/// goes stale only when the definition it cites changed (an edit elsewhere in its file does
/// not count); changing the record (`epiphany node set`, `checkpoint
/// set`, `update`) or, when it still holds, `epiphany recheck NODE` / `recheck --checkpoint`
/// makes it fresh again. Rewriting it unchanged or an unrelated write does not. Every changed path is listed with the nodes, frontier nodes and
/// checkpoint it hits. The graph's own freshness (dirty paths, open questions and gaps, the
/// churn freshness label) and the retrieval index's are reported too. Outside git, the index
/// manifest's dirty paths stand in for git.
///
/// Every code reference is re-checked against the work tree as it is now: `missing` (the file
/// is gone), `renamed` (git followed it; the new path is named), `symbol_missing` (the symbol
/// no longer occurs), `moved_lines` (the symbol occurs at other lines; they are named),
/// `lines_past_end` (the file shrank under the range), `planned` (recorded as a plan, file not
/// written yet). Findings on graph nodes, edges, links and the investigation checkpoint fail
/// the check; observations and evidence are kept as written, so theirs are reported only
/// (`epiphany recheck --observation ID` supersedes an observation with its refs repaired).
///
/// With `--check`, exits 1 when a cited file changed, a reference of the graphs or the
/// checkpoint no longer holds, the graph is stale, or an existing index is stale; without an
/// index, retrieval scans the work tree at query time and reads as ready. When a record's
/// commit is gone (a squash merge, a rebase), the commit where the records entered the branch
/// stands in; when git lacks both (a shallow clone), `--check` exits 2 rather than guess.
///
/// With `--fix`, prints (and writes nothing) the `{"expected_revision", "patch"}` envelope
/// that re-anchors what can be fixed mechanically — renamed paths, line ranges moved with
/// their symbol — by upserting the graph records and replacing the checkpoint that carry them:
/// `epiphany freshness --fix | epiphany update`. What needs a person is listed on stderr. When
/// nothing can be re-anchored it prints nothing, or with `--json` the envelope with an empty
/// patch.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Exit 1 when anything is stale
    #[arg(long)]
    pub check: bool,
    /// Print the patch that re-anchors renamed paths and moved lines; writes nothing
    #[arg(long, conflicts_with_all = ["check", "since"])]
    pub fix: bool,
    /// Compare every record with revision REV's commit instead of its own
    #[arg(long, value_name = "REV")]
    pub since: Option<u64>,
}

/// How `mcp` offers this command as a tool and `schema` describes its report.
pub const TOOL: Tool = Tool::READER
    .arguments(&[
        ("check", "Answer no (`exit_code` 1) when anything is stale"),
        ("fix", "Draft the patch re-anchoring renamed paths and moved lines; writes nothing"),
        ("since", "Compare every record with this revision's commit instead of its own"),
    ])
    .about("Whether the recorded understanding still matches the code: what changed, moved or deleted code made stale. `fix` drafts a patch re-anchoring moved code.").report(output_schema);

/// The schema of what `freshness --json` prints: the report, or with `--fix` the envelope.
fn output_schema() -> Schema {
    schema_of_either::<Freshness, DraftReport>(
        "What `freshness --json` prints: the report, or with `--fix` the envelope.",
        [
            "Without `--fix`.",
            "With `--fix`: the `{\"expected_revision\", \"patch\"}` envelope `update` reads.",
        ],
    )
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
        let references = &self.references;
        if references.checked {
            writeln!(out, "references: {}", references.note)?;
            for finding in &references.findings {
                writeln!(out, "  {}", describe_finding(finding))?;
            }
        }
        if !self.certificates.is_empty() {
            let unchanged = (self.certificates.iter())
                .filter(|c| c.status == CertificateStatus::Unchanged)
                .count();
            writeln!(
                out,
                "certificates: {unchanged} of {} records that cite code are unchanged since checked",
                self.certificates.len()
            )?;
            for certificate in &self.certificates {
                if certificate.status != CertificateStatus::Unchanged {
                    writeln!(out, "  {}", render::certificate(certificate))?;
                }
            }
        }
        if self.fresh {
            writeln!(out, "fresh")
        } else {
            let reasons: Vec<&str> = self.stale_reasons.iter().map(|r| r.describe()).collect();
            if !self.conflicts.is_empty() {
                writeln!(
                    out,
                    "conflicts (`epiphany conflicts` lists them; `epiphany conflicts settle --all --take ours|theirs` settles them): {}",
                    inline_ids(&self.conflicts)
                )?;
            }
            writeln!(out, "stale: {}", reasons.join(", "))
        }
    }
}

/// Runs `freshness`.
pub fn run(ctx: &Ctx, args: &Args) -> Result<Status> {
    let Args { check, fix, since } = args;
    let store = ctx.store()?;
    let head = store.head()?;
    let Observed {
        freshness,
        unknown_commits,
        ..
    } = observe(ctx, &store, &head, *since)?;
    if *fix {
        return print_fix(ctx, &head, &freshness);
    }
    if *check
        && freshness
            .stale_reasons
            .contains(&StaleReason::HistoryUnknown)
    {
        return Err(unknown_history(&store, &unknown_commits, &freshness.watcher.note).into());
    }
    let stale = (*check && !freshness.fresh).then(|| stale_hint(&freshness));
    ctx.ui.emit(&Freshness::from(freshness))?;
    if let Some(hint) = stale {
        ctx.ui.hint(&hint);
        return Ok(Status::No);
    }
    Ok(Status::Ok)
}

/// The check cannot pass or fail when git has no commit to compare the map with (the records
/// were written before the first commit, or at commits git lacks): what changed since is
/// unknown.
fn unknown_history(store: &Store, commits: &[String], note: &str) -> Failure {
    if commits.is_empty() {
        return Failure::new(
            ErrorKind::HistoryUnknown,
            format!("cannot tell whether the state is fresh: {note}"),
        )
        .with_hint("rewrite the graph nodes and the checkpoint (`epiphany update`) now that there is a commit to compare them with");
    }
    let failure = Failure::new(
        ErrorKind::HistoryUnknown,
        format!(
            "cannot tell whether the state is fresh: this repository lacks commit {} that records were written at, and where they entered this branch",
            commits.join(", ")
        ),
    );
    match git::is_shallow(store.root()) {
        true => failure.with_hint(
            "this is a shallow clone: fetch the history (`git fetch --unshallow`; in GitHub Actions, `actions/checkout` with `fetch-depth: 0`)",
        ),
        false => failure.with_hint(
            "fetch the branches the records were written on, or write the state again (`epiphany update`) so that its records name a commit this repository has",
        ),
    }
}

/// What to do about each reason the check failed.
fn stale_hint(freshness: &policy::freshness::Freshness) -> String {
    let mut steps = Vec::new();
    for reason in &freshness.stale_reasons {
        steps.push(match reason {
            StaleReason::CitedFilesChanged => {
                "re-read the code that changed since it was checked (`epiphany context --node ID --code` prints it); then rewrite what no longer holds (`epiphany node set`, `checkpoint set`, with `--ref`), or, where it still holds, say so with `epiphany recheck NODE...` / `recheck --checkpoint` (rewriting a record or `freshness --fix` keeps what was checked of it)"
            }
            StaleReason::ReferencesBroken if freshness.references.fixable_count > 0 => {
                "re-anchor renamed paths and moved lines with `epiphany freshness --fix | epiphany update`, and fix the rest by hand"
            }
            StaleReason::ReferencesBroken => {
                "rewrite the broken code references with `epiphany update` (`epiphany freshness` lists them)"
            }
            StaleReason::GraphStale => {
                "settle the frontier once verified: `epiphany update` with `graph_frontier` (no dirty paths, open questions or gaps) and `churn.graph_freshness` \"fresh\", or promote a proposal whose verifier covers its paths"
            }
            StaleReason::IndexStale => "refresh the index with `epiphany index`",
            StaleReason::ReferencesUnjudged => {
                "the files named take longer to parse than a command may spend on all its parses (hostile or generated code?): cite lines there without a symbol (`path:START-END`), which needs no parse, or cite the code elsewhere"
            }
            // `--check` stops with its own error before asking for steps.
            StaleReason::HistoryUnknown => continue,
            StaleReason::Conflicts => {
                "check each conflicting field or record that merged branches wrote differently (`epiphany show` lists them) and write it again with `epiphany update`"
            }
        });
    }
    steps.join("; ")
}

/// `--fix`: the envelope that re-anchors what can be fixed mechanically, on stdout; what is
/// left for a person, on stderr.
fn print_fix(ctx: &Ctx, head: &Head, freshness: &policy::freshness::Freshness) -> Result<Status> {
    let findings = &freshness.references.findings;
    for finding in findings.iter().filter(|f| f.blocking && !f.fixable()) {
        let reread = match finding.reanchored {
            // A repair that could not carry what was checked: written before fingerprints.
            Some(_) => " (written before fingerprints: re-read it, then `epiphany recheck`)",
            None => "",
        };
        let finding = RefFinding::from(finding.clone());
        ctx.ui.warn(&format!(
            "needs a person: {}{reread}",
            describe_finding(&finding)
        ));
    }
    let patch = head
        .has_state()
        .then(|| reanchor_patch(&head.state, findings))
        .flatten();
    let patch = match patch {
        Some(patch) => {
            ctx.ui.status(&format!(
                "re-anchors {} code reference(s); apply it with `epiphany update` (it moves them, it does not certify them: code that changed since it was checked stays so until `epiphany recheck`)",
                freshness.references.fixable_count
            ));
            patch
        }
        // A script, or an MCP client, gets a document either way.
        None if ctx.ui.json() => Patch::default(),
        None => {
            ctx.ui
                .status("nothing to re-anchor mechanically; nothing printed");
            return Ok(Status::Ok);
        }
    };
    let report = DraftReport {
        expected_revision: head.state.revision,
        patch,
    };
    ctx.ui
        .emit_text(&(serde_json::to_string(&report)? + "\n"))?;
    Ok(Status::Ok)
}
