//! `epiphany verify`: is the store whole? Checks the rollout's hash chain line by line,
//! replays it from the empty state and compares the result with the snapshot, and checks the
//! state's structure. Reports every problem and exits 1 when there is any.

use std::io::Write;

use anyhow::Result;
use serde::Serialize;

use crate::cli::Ctx;
use crate::cli::Status;
use crate::mcp::Tool;
use crate::mcp::schema_of;
use crate::policy::update::state_problems;
use crate::state::rollout::ParsedLine;
use crate::state::snapshot::Snapshot;
use crate::state::store::chain_problem;
use crate::ui::Report;

/// Check the hash chain, replay against the snapshot, and structural validity.
///
/// Every rollout line must parse, follow its predecessor (sequence, revision, `prev_hash`) and
/// hash to its `hash`; replaying all lines from the empty state must reproduce the snapshot
/// exactly; the state must pass the structural validator. An edited or torn line is reported
/// with its line number. Exits 1 when any problem is found.
#[derive(Debug, clap::Args)]
pub struct Args {}

/// How `mcp` offers this command as a tool and `schema` describes its report.
pub const TOOL: Tool = Tool::READER.report(schema_of::<VerifyReport>);

/// One problem.
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct Problem {
    /// The `rollout.jsonl` line it concerns, when it concerns one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    line: Option<u64>,
    /// What is wrong.
    message: String,
}

/// The verdict.
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct VerifyReport {
    ok: bool,
    problems: Vec<Problem>,
    /// Records that replayed cleanly.
    records: u64,
    /// The revision the replay reached.
    revision: u64,
}

impl Report for VerifyReport {
    fn human(&self, out: &mut dyn Write) -> std::io::Result<()> {
        if self.ok {
            return writeln!(
                out,
                "ok: {} records, revision {}, chain and snapshot agree",
                self.records, self.revision
            );
        }
        writeln!(out, "{} problem(s):", self.problems.len())?;
        for problem in &self.problems {
            match problem.line {
                Some(line) => writeln!(out, "  rollout.jsonl:{line}: {}", problem.message)?,
                None => writeln!(out, "  {}", problem.message)?,
            }
        }
        Ok(())
    }
}

/// Runs `verify`.
pub fn run(ctx: &Ctx, _args: &Args) -> Result<Status> {
    let store = ctx.store()?;
    let history = store.history()?;
    let mut problems: Vec<Problem> = history
        .problems
        .iter()
        .chain(&history.torn_tail)
        .map(|p| Problem {
            line: Some(p.line),
            message: p.message.clone(),
        })
        .collect();

    let mut replayed = Snapshot::default();
    let mut broken = false;
    for line in &history.records {
        if broken {
            break;
        }
        match chain_problem(&replayed, &line.record) {
            Some(problem) => {
                problems.push(Problem {
                    line: Some(line.line),
                    message: problem,
                });
                problems.push(Problem {
                    line: Some(line.line),
                    message: "replay stops here; later records cannot be trusted".to_owned(),
                });
                broken = true;
            }
            None => replayed.advance(&line.record, line.bytes),
        }
    }

    match store.read_snapshot() {
        Err(err) => problems.push(Problem {
            line: None,
            message: format!("{err:#}"),
        }),
        Ok(snapshot) if !broken => compare(snapshot, &replayed, &history.records, &mut problems),
        Ok(_) => {}
    }
    problems.extend(
        state_problems(&replayed.state)
            .into_iter()
            .map(|message| Problem {
                line: None,
                message: format!("state: {message}"),
            }),
    );

    let report = VerifyReport {
        ok: problems.is_empty(),
        problems,
        records: replayed.rollout_seq,
        revision: replayed.state.revision,
    };
    ctx.ui.emit(&report)?;
    if report.ok {
        Ok(Status::Ok)
    } else {
        ctx.ui.hint("restore damaged files from git (`git checkout -- .epiphany/`); a torn last line is removed by the next write");
        Ok(Status::No)
    }
}

/// Compares the snapshot with the replay. A snapshot that lags by whole records is an
/// interrupted write that every reader rolls forward, so it is rolled forward first.
fn compare(
    mut snapshot: Snapshot,
    replayed: &Snapshot,
    lines: &[ParsedLine],
    problems: &mut Vec<Problem>,
) {
    let folded = snapshot.rollout_seq;
    for line in lines.iter().filter(|line| line.record.seq > folded) {
        if chain_problem(&snapshot, &line.record).is_some() {
            break;
        }
        snapshot.advance(&line.record, line.bytes);
    }
    if snapshot == *replayed {
        return;
    }
    let mut what = Vec::new();
    if snapshot.rollout_seq != replayed.rollout_seq {
        what.push("record count");
    }
    if snapshot.state != replayed.state {
        what.push("state");
    }
    if snapshot.anchors != replayed.anchors {
        what.push("anchors");
    }
    if (snapshot.rollout_bytes, &snapshot.rollout_hash)
        != (replayed.rollout_bytes, &replayed.rollout_hash)
    {
        what.push("rollout position");
    }
    problems.push(Problem {
        line: None,
        message: format!(
            "replaying the rollout does not reproduce the snapshot ({} differ: snapshot at record {}, replay at record {})",
            what.join(", "),
            snapshot.rollout_seq,
            replayed.rollout_seq
        ),
    });
}
