//! `epiphany merge-driver`: the git merge driver for `.epiphany/` files.
//!
//! For `rollout.jsonl`, our records stay as they are and theirs are replayed on top
//! (`policy::merge`). For `state.msgpack`, our snapshot is kept: it is a valid prefix of the
//! merged rollout, and every reader rolls the appended records forward (the next write stores
//! the regenerated snapshot). A real conflict leaves our file untouched, explains itself on
//! stderr, and exits 1 so git marks the path as conflicted.

use std::path::Path;
use std::path::PathBuf;

use anyhow::Result;

use crate::cli::Ctx;
use crate::cli::Status;
use crate::error::Failure;
use crate::mcp::Tool;
use crate::policy::merge::merge_rollouts;
use crate::state::fs;
use crate::state::rollout;
use crate::state::rollout::Record;

/// Merge two versions of a `.epiphany/` file (a git merge driver).
///
/// `epiphany hooks install --git` registers it in `.gitattributes` and the local git config as
/// `epiphany merge-driver %O %A %B %P`. The merged result is written over OURS; exit 1 means a
/// conflict that needs a person, with the reason on stderr.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The common ancestor's version (%O)
    pub base: PathBuf,
    /// Our version; receives the result (%A)
    pub ours: PathBuf,
    /// Their version (%B)
    pub theirs: PathBuf,
    /// The path being merged, relative to the repository root (%P)
    pub path: Option<PathBuf>,
}

/// Plumbing: not offered as an MCP tool.
pub const TOOL: Tool = Tool::PLUMBING;

/// Runs `merge-driver`.
pub fn run(ctx: &Ctx, args: &Args) -> Result<Status> {
    let Args {
        base,
        ours,
        theirs,
        path,
    } = args;
    let name = path.as_deref().unwrap_or(ours.as_path());
    let resolve = |p: &Path| ctx.cwd.join(p);
    if name.file_name().is_some_and(|n| n == "state.msgpack") {
        ctx.ui
            .status("epiphany: kept our state.msgpack; readers roll the merged rollout forward");
        return Ok(Status::Ok);
    }
    let (base_records, _) = read_records(&resolve(base))?;
    let (ours_records, ours_bytes) = read_records(&resolve(ours))?;
    let (theirs_records, _) = read_records(&resolve(theirs))?;
    match merge_rollouts(&base_records, &ours_records, &theirs_records) {
        Ok(appended) => {
            let mut merged = ours_bytes;
            for record in appended {
                merged.extend_from_slice(record.seal().1.as_bytes());
            }
            fs::write_atomic(&resolve(ours), &merged)?;
            Ok(Status::Ok)
        }
        Err(conflicts) => {
            ctx.ui.warn(&format!(
                "cannot merge `{}` automatically; our version was kept:\n  - {}",
                name.display(),
                conflicts.join("\n  - ")
            ));
            ctx.ui.hint("resolve by keeping one side (`git checkout --ours .epiphany/` or `--theirs`), then re-apply the other side's patches with `epiphany update`");
            Ok(Status::No)
        }
    }
}

/// The records of a rollout file and the bytes of its complete lines.
fn read_records(path: &Path) -> Result<(Vec<Record>, Vec<u8>)> {
    let mut bytes = fs::read(path)?;
    let parsed = rollout::parse(&bytes, 1);
    if let Some(problem) = parsed.problems.first() {
        return Err(Failure::corrupt(format!("`{}`: {}", path.display(), problem.message)).into());
    }
    bytes.truncate(parsed.complete_bytes as usize);
    Ok((
        parsed.records.into_iter().map(|line| line.record).collect(),
        bytes,
    ))
}
