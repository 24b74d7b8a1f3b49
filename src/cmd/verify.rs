//! `epiphany verify`: is the store whole? Every rollout line must hash to its id and belong to
//! this store (a segment another store wrote is named, with the store its records claim),
//! every parent must be a record (a missing one is a note saying what git did with it: a
//! revert, a rebase, a force-push, a cherry-pick; `policy::lineage`), no record the
//! checked-out commit or a fold cached at it holds may be missing, replaying the records in
//! their one order must reproduce every cached snapshot, the state must be structurally valid,
//! and no record or snapshot may hold a secret (the records are scanned on every core; a
//! snapshot that is the fold of its records holds only what they hold, so it is scanned itself
//! only when it is not, or when a record holds one). The files are listed under the shared lock and
//! read without it, so a concurrent write never makes it cry wolf and never waits for it.
//! Reports every problem and exits 1 when there is any. The store checks itself
//! (`Store::verify`); this command brings what a secret is and what a valid state is, and
//! renders the verdict.
//!
//! Lines git checked out with `\r\n` endings (a user's attribute overriding the store's
//! `.gitattributes`) are sound records: a note counts them and names the attribute to remove.
//! A snapshot the same conversion damaged is a note too, not a problem: readers skip it.

use std::io::Write;

use anyhow::Result;
use serde::Serialize;

use crate::ctx::Ctx;
use crate::ctx::Status;
use crate::cmd::Tool;
use crate::cmd::schema_of;
use crate::policy::lineage::missing_parent;
use crate::policy::secrets::Located;
use crate::policy::secrets::locate_secrets;
use crate::policy::update::state_problems;
use crate::state::model::State;
use crate::state::rollout::Record;
use crate::state::store::SecretScan;
use crate::state::store::VerifyProblem;
use crate::ui::Report;

/// Check record ids and parent links, snapshots against the replay, and structural validity.
///
/// Every rollout line must parse and its id must be the hash of its content (an edited or torn
/// line is reported with its line number); no record may claim another store's identity (a
/// segment copied from another repository is named, with how many records and which store);
/// every parent a record names must be in the rollout (a missing parent is a note, not a
/// failure, saying what git did with it); no record may be missing that the checked-out
/// commit holds, or that a fold cached while it was checked out holds (a deleted or truncated
/// segment); replaying all records in their one order from the empty state must reproduce
/// every snapshot cached in `cache/snapshots/`, every byte of which must pass its checksum;
/// the state must pass the structural validator; no record or snapshot may hold a secret (one
/// written before redaction, by an older binary or by hand, is named by its place and kind,
/// never its value). Conflicts between merged branches are listed but are not failures. Never
/// makes a writer wait. Exits 1 when any problem is found.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// First replace every cached snapshot with one folded from the records alone (under the
    /// write lock): for a snapshot that is damaged or does not match its records, or to accept
    /// that records are lost. The rollout is never changed.
    #[arg(long)]
    pub repair: bool,
}

/// How `mcp` offers this command as a tool and `schema` describes its report.
pub const TOOL: Tool = Tool::READER
    .arguments(&[("repair", "First rebuild every cached snapshot from the records, which are never changed")])
    .about("Check the store's integrity: record ids, parent links, snapshots, structural rules, no stored secrets. Use when a tool reports a damaged store.").report(schema_of::<VerifyReport>);

/// One problem.
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct Problem {
    /// The rollout segment it concerns (a file in `.epiphany/rollout/`), when it concerns one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    segment: Option<String>,
    /// The 1-based line of that segment.
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
    /// Things worth knowing that are not failures.
    notes: Vec<String>,
    /// Distinct records replayed.
    records: u64,
    /// The revision the replay reached.
    revision: u64,
    /// Snapshots checked against the replay.
    snapshots: u64,
    /// Conflicts between concurrent writes that the state lists.
    conflicts: u64,
}

impl Report for VerifyReport {
    fn human(&self, out: &mut dyn Write) -> std::io::Result<()> {
        if self.ok {
            writeln!(
                out,
                "ok: {} records, revision {}, {} snapshot(s) agree with the replay",
                self.records, self.revision, self.snapshots
            )?;
        } else {
            writeln!(out, "{} problem(s):", self.problems.len())?;
            for problem in &self.problems {
                match (&problem.segment, problem.line) {
                    (Some(segment), Some(line)) => {
                        writeln!(out, "  rollout/{segment}:{line}: {}", problem.message)?;
                    }
                    _ => writeln!(out, "  {}", problem.message)?,
                }
            }
        }
        for note in &self.notes {
            writeln!(out, "note: {note}")?;
        }
        Ok(())
    }
}

/// Runs `verify`.
pub fn run(ctx: &Ctx, args: &Args) -> Result<Status> {
    let store = ctx.store()?;
    if args.repair {
        let (removed, written) = store.rebuild_snapshots(ctx.lock_timeout)?;
        ctx.ui.status(&format!(
            "repair: removed {} snapshot(s){}",
            removed.len(),
            written.map_or(String::new(), |name| format!(", wrote {name}"))
        ));
    }
    let verified = store.verify(ctx.lock_timeout, &Secrets)?;
    let state = &verified.folded.state;
    let mut problems: Vec<Problem> = verified.problems.into_iter().map(Problem::from).collect();
    problems.extend(state_problems(state).into_iter().map(|message| Problem {
        segment: None,
        line: None,
        message: format!("state: {message}"),
    }));
    let mut notes = verified.notes;
    notes.extend(verified.orphans.iter().map(|orphan| {
        format!(
            "record {} (rollout/{}:{}) names a parent that is not in the rollout: {}; the record applies on its own",
            &orphan.record[..12],
            orphan.segment,
            orphan.line,
            missing_parent(&orphan.trail)
        )
    }));
    let committed = store.committed_segment_count();
    if committed >= COMPACT_FROM {
        notes.push(format!(
            "the checked-out commit holds {committed} rollout segment files, and every command lists and compares them all: `epiphany compact` joins them into one (then commit the change)"
        ));
    }
    let conflicts = state.conflicts.len() as u64;
    if conflicts > 0 {
        notes.push(format!(
            "{conflicts} conflict(s) between concurrent writes; `epiphany show` lists them, and a write that rewrites each resolves it"
        ));
    }
    let report = VerifyReport {
        ok: problems.is_empty(),
        problems,
        notes,
        records: verified.history.records.len() as u64,
        revision: state.revision,
        snapshots: verified.snapshots,
        conflicts,
    };
    ctx.ui.emit(&report)?;
    if report.ok {
        Ok(Status::Ok)
    } else {
        if report
            .problems
            .iter()
            .any(|problem| problem.message.contains(SECRET_PROBLEM))
        {
            ctx.ui.hint("a record is immutable (its id is its hash), so a secret in one cannot be redacted in place: rotate the secret, then rewrite the field with `epiphany update`; the record stays in the rollout and in git history until that history is rewritten");
        }
        ctx.ui.hint("a torn last line is removed by the next write; an edited line must be restored as it was written (from git or a backup); a damaged snapshot is ignored by readers and replaced by the next snapshot write");
        Ok(Status::No)
    }
}

impl From<VerifyProblem> for Problem {
    fn from(problem: VerifyProblem) -> Problem {
        let (segment, line) = problem.line.unzip();
        Problem {
            segment,
            line,
            message: problem.message,
        }
    }
}

/// How many committed segment files make `verify` suggest `compact`: past a few hundred, listing
/// and comparing them costs a read more than its records do (docs/store.md#compaction).
const COMPACT_FROM: usize = 500;

/// The words every secret problem carries.
const SECRET_PROBLEM: &str = "holds a secret";

/// How many places one problem names before it only counts the rest.
const SECRET_PLACES_SHOWN: usize = 10;

/// Secrets as `policy::secrets` finds them, for the store's check.
struct Secrets;

impl SecretScan for Secrets {
    fn in_record(&self, record: &Record) -> Option<String> {
        let value = serde_json::to_value(record.body()).ok()?;
        let places = describe_places(&locate_secrets(&value, ""))?;
        Some(format!("{SECRET_PROBLEM}: {places}"))
    }

    fn in_state(&self, state: &State) -> Option<String> {
        let value = serde_json::to_value(state).ok()?;
        let places = describe_places(&locate_secrets(&value, "state"))?;
        Some(format!("{SECRET_PROBLEM}: {places}"))
    }
}

/// `github_pat at `patch.objective`, ...`, or `None` when nothing was found.
fn describe_places(found: &[Located]) -> Option<String> {
    if found.is_empty() {
        return None;
    }
    let mut places: Vec<String> = found
        .iter()
        .take(SECRET_PLACES_SHOWN)
        .map(|place| format!("{} at `{}`", place.kind, place.path))
        .collect();
    if found.len() > SECRET_PLACES_SHOWN {
        places.push(format!("and {} more", found.len() - SECRET_PLACES_SHOWN));
    }
    Some(places.join(", "))
}
