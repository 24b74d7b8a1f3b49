//! `epiphany compact`: the committed rollout segments become one (`Store::compact`), so that
//! a year of commits does not leave every command reading thousands of files. This module
//! renders what it did and what the user commits next.

use std::io::Write;

use anyhow::Result;
use serde::Serialize;

use crate::cmd::Tool;
use crate::cmd::schema_of;
use crate::ctx::Ctx;
use crate::ctx::Status;
use crate::state::store::Compaction;
use crate::state::store::ROLLOUT_DIR;
use crate::state::store::STORE_DIR;
use crate::ui::Report;

/// Join the committed rollout segments into one, for git to commit.
///
/// Committing every few writes leaves a segment file per commit, and every command lists,
/// stats and compares them all (git's own index holds an entry for each). `compact` takes the
/// segments the checked-out commit holds, exactly as committed, writes their bytes end to end
/// into one new segment with a manifest naming them (`rollout/<name>.parts`), and removes them;
/// cached folds move onto the new segment, so no read starts over. Segments written since the
/// commit stay as they are. Commit the change as any other: `git add -A .epiphany/rollout`.
///
/// Git merges a compaction safely: a branch that did not compact keeps its copies of the
/// records, and a record twice is one record; clones that compact the same segments write the
/// same file. No segment may make up more than 40 % of a compacted one (git would take the
/// compaction for its rename, and a merge with another branch's compaction would conflict), so
/// a compacted segment is joined again only once what was written after it outweighs it.
/// Outside git and before the first commit there is nothing to compact; refused over a
/// damaged rollout.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Say what would be compacted; write nothing
    #[arg(long)]
    pub dry_run: bool,
}

/// How `mcp` offers this command as a tool and `schema` describes its report.
pub const TOOL: Tool = Tool::WRITER
    .about("Join the rollout segments the checked-out commit holds into one file, so reads stay fast after many commits; the user commits the change. Records are never changed.")
    .idempotent()
    .report(schema_of::<CompactReport>);

/// A committed segment left as it is.
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct Left {
    /// Its file name in `.epiphany/rollout/`.
    segment: String,
    /// Why it was not compacted.
    reason: String,
}

/// What `compact` did.
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct CompactReport {
    /// Whether segments were (or, with `--dry-run`, would be) compacted.
    compacted: bool,
    /// Nothing was written.
    dry_run: bool,
    /// Why nothing was compacted, when nothing was.
    reason: Option<String>,
    /// The new segment's file name in `.epiphany/rollout/`.
    segment: Option<String>,
    /// Its manifest's file name, beside it.
    manifest: Option<String>,
    /// The segments it holds, in order; they are removed.
    parts: Vec<String>,
    /// Records (lines) it holds.
    records: u64,
    /// Its length in bytes.
    bytes: u64,
    /// Committed segments left as they are.
    left: Vec<Left>,
    /// Cached folds moved onto the new segment.
    snapshots_moved: usize,
    /// Cached folds dropped (they held part of what was compacted).
    snapshots_removed: usize,
}

impl Report for CompactReport {
    fn human(&self, out: &mut dyn Write) -> std::io::Result<()> {
        match &self.segment {
            Some(segment) => writeln!(
                out,
                "{} {} committed segments ({} records, {} bytes) into {STORE_DIR}/{ROLLOUT_DIR}/{segment}",
                if self.dry_run { "would compact" } else { "compacted" },
                self.parts.len(),
                self.records,
                self.bytes
            )?,
            None => writeln!(
                out,
                "nothing to compact: {}",
                self.reason.as_deref().unwrap_or_default()
            )?,
        }
        for left in &self.left {
            writeln!(out, "  left {}: {}", left.segment, left.reason)?;
        }
        Ok(())
    }
}

impl From<Compaction> for CompactReport {
    fn from(compaction: Compaction) -> CompactReport {
        let compacted = compaction.compacted.as_ref();
        CompactReport {
            compacted: compacted.is_some(),
            dry_run: false,
            reason: compaction.nothing.map(str::to_owned),
            segment: compacted.map(|c| c.segment.clone()),
            manifest: compacted.map(|c| c.manifest_name()),
            parts: compacted.map_or_else(Vec::new, |c| {
                c.parts.iter().map(|part| part.name.clone()).collect()
            }),
            records: compaction.records,
            bytes: compacted.map_or(0, |c| c.bytes()),
            left: (compaction.left.into_iter())
                .map(|(segment, reason)| Left {
                    segment,
                    reason: reason.to_owned(),
                })
                .collect(),
            snapshots_moved: compaction.snapshots_moved,
            snapshots_removed: compaction.snapshots_removed,
        }
    }
}

/// Runs `compact`.
pub fn run(ctx: &Ctx, args: &Args) -> Result<Status> {
    let store = ctx.store()?;
    let compaction = store.compact(ctx.lock_timeout, args.dry_run)?;
    let report = CompactReport {
        dry_run: args.dry_run,
        ..CompactReport::from(compaction)
    };
    ctx.ui.emit(&report)?;
    if report.compacted && !args.dry_run {
        ctx.ui.hint(&format!(
            "commit the change like any write: git add -A {STORE_DIR}/{ROLLOUT_DIR} && git commit"
        ));
    }
    Ok(Status::Ok)
}
