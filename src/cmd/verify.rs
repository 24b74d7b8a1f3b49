//! `epiphany verify`: is the store whole? Every rollout line must hash to its id, every parent
//! must be a record (a missing one is a note: a record cherry-picked alone), replaying the
//! records in their one order must reproduce every snapshot, and the state must be
//! structurally valid, and no record or snapshot may hold a secret. Reads under the shared lock, so a concurrent write never makes it cry
//! wolf. Reports every problem and exits 1 when there is any.
//!
//! Lines git checked out with `\r\n` endings (a user's attribute overriding the store's
//! `.gitattributes`) are sound records: a note counts them and names the attribute to remove.
//! A snapshot the same conversion damaged is a note too, not a problem: readers skip it.

use std::collections::BTreeMap;
use std::collections::HashSet;
use std::io::Write;

use anyhow::Result;
use serde::Serialize;

use crate::cli::Ctx;
use crate::cli::Status;
use crate::mcp::Tool;
use crate::mcp::schema_of;
use crate::policy::secrets::Located;
use crate::policy::secrets::locate_secrets;
use crate::policy::update::state_problems;
use crate::state::fold::Base;
use crate::state::fold::Fold;
use crate::state::fold::Folded;
use crate::state::fold::Writers;
use crate::state::snapshot::Parts;
use crate::state::snapshot::SnapshotFile;
use crate::state::store::History;
use crate::ui::Report;

/// Check record ids and parent links, snapshots against the replay, and structural validity.
///
/// Every rollout line must parse and its id must be the hash of its content (an edited or torn
/// line is reported with its line number); every parent a record names must be in the rollout
/// (a missing parent is a note, not a failure); replaying all records in their one order from
/// the empty state must reproduce every snapshot in `snapshots/` and every fold a read
/// remembered in `cache/snapshots/`; the state must pass the structural validator; no record
/// or snapshot may hold a secret (one written before redaction, by an older binary or by hand,
/// is named by its place and kind, never its value). Conflicts between merged branches are
/// listed but are not failures. Exits 1 when any problem is found.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// First replace every snapshot and remembered fold with one snapshot folded from the
    /// records alone (under the write lock): for a snapshot that is damaged or does not match
    /// its records. The rollout is never changed.
    #[arg(long)]
    pub repair: bool,
}

/// How `mcp` offers this command as a tool and `schema` describes its report.
pub const TOOL: Tool = Tool::READER.report(schema_of::<VerifyReport>);

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
        let (removed, written) = store.rebuild_snapshots(&ctx.write_options())?;
        ctx.ui.status(&format!(
            "repair: removed {} snapshot(s){}",
            removed.len(),
            written.map_or(String::new(), |name| format!(", wrote {name}"))
        ));
    }
    let _shared = store.read_lock(ctx.lock_timeout)?;
    let history = store.history()?;
    let mut problems: Vec<Problem> = history
        .problems
        .iter()
        .chain(&history.torn_tails)
        .map(|p| Problem {
            segment: Some(p.segment.clone()),
            line: Some(p.problem.line),
            message: p.problem.message.clone(),
        })
        .collect();
    let mut notes = parent_notes(&history);
    if history.crlf_lines > 0 {
        notes.push(format!(
            "{} rollout line(s) end in CRLF: a git attribute (such as `* text eol=crlf` in `.git/info/attributes`) overrides `.epiphany/.gitattributes`, so git converted them at checkout; they still read as the records they are, but to keep git from converting the store, remove the `eol`/`text` attribute for `.epiphany/` from `.git/info/attributes`",
            history.crlf_lines
        ));
    }
    if history.duplicates > 0 {
        notes.push(format!(
            "{} line(s) repeat an earlier record (the same commit reached this branch twice); each counts once",
            history.duplicates
        ));
    }

    problems.extend(record_secrets(&history));
    let snapshots = check_snapshots(&store, &history, &mut problems, &mut notes)?;
    let folded = crate::state::fold::fold_all(&history.records, true);
    problems.extend(
        state_problems(&folded.state)
            .into_iter()
            .map(|message| Problem {
                segment: None,
                line: None,
                message: format!("state: {message}"),
            }),
    );
    let conflicts = folded.state.conflicts.len() as u64;
    if conflicts > 0 {
        notes.push(format!(
            "{conflicts} conflict(s) between concurrent writes; `epiphany show` lists them, and a write that rewrites each resolves it"
        ));
    }
    let report = VerifyReport {
        ok: problems.is_empty(),
        problems,
        notes,
        records: history.records.len() as u64,
        revision: folded.state.revision,
        snapshots,
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

/// The words every secret problem carries.
const SECRET_PROBLEM: &str = "holds a secret";

/// How many places one problem names before it only counts the rest.
const SECRET_PLACES_SHOWN: usize = 10;

/// One problem per record that holds a secret (written before redaction, by an older binary
/// or by hand): where and what kind, never the value.
fn record_secrets(history: &History) -> Vec<Problem> {
    history
        .records
        .iter()
        .filter_map(|record| {
            let value = serde_json::to_value(record.body()).ok()?;
            let found = locate_secrets(&value, "");
            let places = describe_places(&found)?;
            let (segment, line) = history
                .lines
                .get(&record.id)
                .cloned()
                .expect("every record of a history was read from a line");
            Some(Problem {
                segment: Some(segment),
                line: Some(line),
                message: format!("record {} {SECRET_PROBLEM}: {places}", &record.id[..12]),
            })
        })
        .collect()
}

/// The problem of a snapshot whose state holds a secret.
fn state_secrets(state: &crate::state::model::State) -> Option<String> {
    let value = serde_json::to_value(state).ok()?;
    let places = describe_places(&locate_secrets(&value, "state"))?;
    Some(format!("{SECRET_PROBLEM}: {places}"))
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

/// Notes for parents that are not in the rollout (a record cherry-picked without them).
fn parent_notes(history: &History) -> Vec<String> {
    let ids: HashSet<&str> = history.records.iter().map(|r| r.id.as_str()).collect();
    history
        .records
        .iter()
        .filter(|record| record.parents.iter().any(|p| !ids.contains(p.as_str())))
        .map(|record| {
            let (segment, line) = history
                .lines
                .get(&record.id)
                .cloned()
                .expect("every record of a history was read from a line");
            format!(
                "record {} (rollout/{segment}:{line}) names a parent that is not in the rollout (it was cherry-picked without it); it applies on its own",
                &record.id[..12],
            )
        })
        .collect()
}

/// Checks every snapshot against a replay of the records it holds; answers how many were
/// checked. A remembered fold that does not open is a note, not a problem: it is a cache,
/// written without waiting for the disk, that an interrupted write may leave damaged. So is a
/// snapshot that git's conversion of line endings damaged along with the rollout's lines.
fn check_snapshots(
    store: &crate::state::store::Store,
    history: &History,
    problems: &mut Vec<Problem>,
    notes: &mut Vec<String>,
) -> Result<u64> {
    let by_id: BTreeMap<&str, &crate::state::rollout::Record> =
        history.records.iter().map(|r| (r.id.as_str(), r)).collect();
    let mut checked = 0;
    // The folds reads remembered are served like snapshots, so they are checked like them.
    let mut paths: Vec<_> = (store.snapshot_dirs().iter())
        .filter_map(|dir| std::fs::read_dir(dir).ok())
        .flatten()
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .collect();
    paths.sort();
    for path in paths {
        let name = path
            .strip_prefix(store.snapshot_dir())
            .or_else(|_| path.strip_prefix(store.dir()))
            .unwrap_or(&path)
            .display()
            .to_string();
        let mut problem = |message: String| {
            problems.push(Problem {
                segment: None,
                line: None,
                message: format!("snapshot {name}: {message}"),
            });
        };
        let loaded = SnapshotFile::open(&path).and_then(|file| {
            let order = file.order()?;
            let loaded = file.load(Parts {
                writers: true,
                ..Parts::WHOLE
            })?;
            Ok((file.header.records, order, loaded))
        });
        let (records, order, loaded) = match loaded {
            Ok(found) => found,
            Err(err) if path.starts_with(store.cache_dir()) => {
                notes.push(format!(
                    "the fold remembered in {name} is damaged ({err:#}); reads skip it, and the next read that folds the records again rewrites it"
                ));
                continue;
            }
            Err(err) if history.crlf_lines > 0 && holds_crlf(&path) => {
                notes.push(format!(
                    "snapshot {name} does not open: {err:#}; the git attribute that converted the rollout's line endings converted its bytes too, so reads skip it and fold the records, and `epiphany verify --repair` replaces it"
                ));
                continue;
            }
            Err(err) => {
                problem(format!("{err:#}"));
                continue;
            }
        };
        checked += 1;
        if let Some(message) = state_secrets(&loaded.state) {
            problem(message);
        }
        if order.len() as u64 != records {
            problem(format!(
                "says it holds {records} records but lists {}",
                order.len()
            ));
            continue;
        }
        let Some(held) = order
            .iter()
            .map(|id| by_id.get(id.as_str()).copied())
            .collect::<Option<Vec<_>>>()
        else {
            // A cherry-pick brings a snapshot without the branch's earlier records, and a revert
            // removes records a later snapshot holds: readers skip it, and the next snapshot
            // write removes it. It may also be the last trace of records that were lost.
            checked -= 1;
            let missing = order
                .iter()
                .filter(|id| !by_id.contains_key(id.as_str()))
                .count();
            notes.push(format!(
                "snapshot {name} holds {missing} record(s) the rollout does not have (a cherry-pick brought it without them, a revert removed them, or they were lost); reads skip it, and the next snapshot write removes it"
            ));
            continue;
        };
        let replay = replay(held.into_iter().cloned().collect());
        if replay.state != loaded.state
            || replay.anchors != loaded.anchors
            || replay.tips != loaded.tips
            || replay.writers.unwrap_or_default() != loaded.writers.unwrap_or_default()
        {
            problem("replaying its records does not reproduce it".to_owned());
        }
    }
    Ok(checked)
}

/// Whether the file at `path` holds a `\r\n`, as git's conversion of line endings leaves in
/// a binary file it takes for text.
fn holds_crlf(path: &std::path::Path) -> bool {
    std::fs::read(path).is_ok_and(|bytes| memchr::memmem::find(&bytes, b"\r\n").is_some())
}

/// Folds `records` in their own order.
fn replay(records: Vec<crate::state::rollout::Record>) -> Folded {
    let ordered = crate::state::order::topological(records);
    let mut fold = Fold::new(Base {
        writers: Some(Writers::new()),
        ..Base::default()
    });
    for record in &ordered {
        fold.push(record);
    }
    fold.finish()
}
