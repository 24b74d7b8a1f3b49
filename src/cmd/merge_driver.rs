//! `epiphany merge-driver`: a three-way merge of `.epiphany/` files for repositories that still
//! route them to a custom driver (`merge=epiphany`, written by earlier versions).
//!
//! The store needs no driver: branches only ever add whole rollout segments and snapshots
//! named by their content, so git merges them as files it never has to combine. This driver
//! computes the same result as a set (of records, or of the identities in `rollout/identity`): a line is kept when both sides kept it or one side
//! added it, and dropped when a side removed it (a revert); our order first, then theirs' new
//! lines. Any other file keeps the side that changed it (ours when both did; for a snapshot
//! both are then the same bytes).

use std::collections::HashSet;
use std::path::PathBuf;

use anyhow::Result;

use crate::ctx::Ctx;
use crate::ctx::Status;
use crate::cmd::Tool;
use crate::state::fs;
use crate::state::identity::IDENTITY_FILE;

/// Merge two versions of a `.epiphany/` file (a git merge driver); never a conflict.
///
/// Called by git as `epiphany merge-driver %O %A %B %P` where a `merge=epiphany` attribute
/// and `merge.epiphany.driver` config route a file to it. The merged result is written over
/// OURS. Stores created by `epiphany init` do not need it: their files are only ever added or
/// removed.
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
    let read = |p: &PathBuf| fs::read(&ctx.cwd.join(p));
    let (base_bytes, ours_bytes, theirs_bytes) = (read(base)?, read(ours)?, read(theirs)?);
    let name = path.as_deref().unwrap_or(ours.as_path());
    let lines = name.extension().is_some_and(|ext| ext == "jsonl")
        || name.file_name().is_some_and(|file| file == IDENTITY_FILE);
    let merged = if lines {
        merge_lines(&base_bytes, &ours_bytes, &theirs_bytes)
    } else if ours_bytes == base_bytes {
        theirs_bytes
    } else {
        ours_bytes
    };
    fs::write_atomic(&ctx.cwd.join(ours), &merged)?;
    Ok(Status::Ok)
}

/// The three-way set merge of complete lines (see the module docs).
fn merge_lines(base: &[u8], ours: &[u8], theirs: &[u8]) -> Vec<u8> {
    let lines = |bytes: &'_ [u8]| -> Vec<Vec<u8>> {
        bytes
            .split_inclusive(|b| *b == b'\n')
            .filter(|line| line.ends_with(b"\n"))
            .map(<[u8]>::to_vec)
            .collect()
    };
    let (base, ours, theirs) = (lines(base), lines(ours), lines(theirs));
    let in_base: HashSet<&[u8]> = base.iter().map(Vec::as_slice).collect();
    let in_ours: HashSet<&[u8]> = ours.iter().map(Vec::as_slice).collect();
    let in_theirs: HashSet<&[u8]> = theirs.iter().map(Vec::as_slice).collect();
    let mut seen = HashSet::new();
    let mut merged = Vec::new();
    let ours_kept = ours
        .iter()
        .filter(|line| !in_base.contains(line.as_slice()) || in_theirs.contains(line.as_slice()));
    let theirs_new = theirs
        .iter()
        .filter(|line| !in_base.contains(line.as_slice()) && !in_ours.contains(line.as_slice()));
    for line in ours_kept.chain(theirs_new) {
        if seen.insert(line.as_slice()) {
            merged.extend_from_slice(line);
        }
    }
    merged
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_merge_as_a_set_in_our_order_then_theirs() {
        let base = b"a\nb\n";
        let ours = b"a\nb\nc\n";
        let theirs = b"a\nd\nb\nc\n";
        assert_eq!(merge_lines(base, ours, theirs), b"a\nb\nc\nd\n");
        let reverted = b"a\n";
        assert_eq!(merge_lines(base, ours, reverted), b"a\nc\n");
        assert_eq!(merge_lines(b"", b"x\ntorn", b"y\n"), b"x\ny\n");
    }
}
