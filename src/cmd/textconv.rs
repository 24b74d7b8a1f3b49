//! `epiphany textconv`: readable text for `.epiphany/` files, so `git diff` and `git log -p`
//! show what changed in the state instead of "binary files differ".

use std::fmt::Write as _;
use std::path::PathBuf;

use anyhow::Result;

use crate::ctx::Ctx;
use crate::ctx::Status;
use crate::cmd::Tool;
use crate::state::fs;
use crate::state::rollout;
use crate::state::snapshot::Parts;
use crate::state::snapshot::SnapshotFile;

/// Print a `.epiphany/` file as readable text (a git textconv filter).
///
/// A snapshot prints as pretty JSON of the state it holds, after a line naming how many
/// records it folded; a rollout segment (`rollout/*.jsonl`) prints one header line per record
/// followed by its patch. `epiphany hooks install --git` sets `diff.epiphany.textconv`; a file
/// is shown through it once a `.gitattributes` marks it `diff=epiphany` (snapshots are a
/// per-clone cache that git never diffs).
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The file to convert
    pub file: PathBuf,
}

/// Plumbing: not offered as an MCP tool.
pub const TOOL: Tool = Tool::PLUMBING;

/// Runs `textconv`.
pub fn run(ctx: &Ctx, args: &Args) -> Result<Status> {
    let Args { file } = args;
    let path = ctx.cwd.join(file);
    let text = match SnapshotFile::open(&path).and_then(|file| {
        let loaded = file.load(Parts::WHOLE)?;
        Ok((file.header.records, loaded.folded.state))
    }) {
        Ok((records, state)) => format!(
            "# snapshot of {records} records\n{}\n",
            serde_json::to_string_pretty(&state)?
        ),
        Err(_) => rollout_text(&fs::read(&path)?)?,
    };
    ctx.ui.emit_text(&text)?;
    Ok(Status::Ok)
}

fn rollout_text(bytes: &[u8]) -> Result<String> {
    let parsed = rollout::parse::<rollout::Record>(bytes, 0, 1);
    let mut text = String::new();
    for line in &parsed.records {
        let record = &line.record;
        let fields: Vec<&str> = record.changed_fields.iter().map(|f| f.as_str()).collect();
        writeln!(
            text,
            "# record {} ({}) at {}{}: {}",
            &record.id[..12],
            record.source.as_str(),
            record.at,
            record
                .git_head
                .as_deref()
                .map_or(String::new(), |head| format!(" on {head}")),
            fields.join(", ")
        )?;
        let body = match (&record.patch, &record.restore) {
            (_, Some(restore)) => serde_json::to_string_pretty(restore)?,
            (Some(patch), None) => serde_json::to_string_pretty(patch)?,
            (None, None) => "null".to_owned(),
        };
        writeln!(text, "{body}")?;
    }
    for problem in parsed.problems.iter().chain(&parsed.torn_tail) {
        writeln!(text, "# {}", problem.message)?;
    }
    Ok(text)
}
