//! `epiphany verify`: is the store whole? Every rollout line must hash to its id, every parent
//! must be a record (a missing one is a note: a record cherry-picked alone), no record the
//! checked-out commit or a fold cached at it holds may be missing, replaying the records in
//! their one order must reproduce every cached snapshot, the state must be structurally valid,
//! and no record or snapshot may hold a secret (the records are scanned on every core; a
//! snapshot that is the fold of its records holds only what they hold, so it is scanned itself
//! only when it is not, or when a record holds one). The files are listed under the shared lock and
//! read without it, so a concurrent write never makes it cry wolf and never waits for it.
//! Reports every problem and exits 1 when there is any.
//!
//! Lines git checked out with `\r\n` endings (a user's attribute overriding the store's
//! `.gitattributes`) are sound records: a note counts them and names the attribute to remove.
//! A snapshot the same conversion damaged is a note too, not a problem: readers skip it.

use std::collections::BTreeMap;
use std::collections::HashSet;
use std::io::Write;

use anyhow::Result;
use serde::Serialize;

use crate::ctx::Ctx;
use crate::ctx::Status;
use crate::cmd::Tool;
use crate::cmd::schema_of;
use crate::policy::secrets::Located;
use crate::policy::secrets::locate_secrets;
use crate::policy::update::state_problems;
use crate::state::fold::Base;
use crate::state::fold::Fold;
use crate::state::fold::Folded;
use crate::state::fold::Restores;
use crate::state::fold::Writers;
use crate::state::fold::fold_all;
use crate::state::git;
use crate::state::rollout::Record;
use crate::state::snapshot::Parts;
use crate::state::snapshot::SnapshotFile;
use crate::state::store::History;
use crate::state::store::Store;
use crate::ui::Report;

/// Check record ids and parent links, snapshots against the replay, and structural validity.
///
/// Every rollout line must parse and its id must be the hash of its content (an edited or torn
/// line is reported with its line number); every parent a record names must be in the rollout
/// (a missing parent is a note, not a failure); no record may be missing that the checked-out
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
    let listing = store.listing(ctx.lock_timeout)?;
    let lost = store.check_committed(&listing.segments).err();
    let snapshot_paths = listing.snapshots.clone();
    let history = store.history_of(listing)?;
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
    problems.extend(lost.map(|err| Problem {
        segment: None,
        line: None,
        message: format!("{err:#}"),
    }));
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

    let secrets = record_secrets(&history);
    // A snapshot that is the fold of its records holds only what they hold: it is scanned when
    // a record holds a secret, or when it is not their fold.
    let scan_snapshots = !secrets.is_empty();
    problems.extend(secrets);
    let mut snapshots = Snapshots::open(&store, &snapshot_paths, &history, scan_snapshots);
    let folded = snapshots.fold_and_compare(&history);
    let checked = snapshots.finish(&mut problems, &mut notes);
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
        snapshots: checked,
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
/// or by hand): where and what kind, never the value. The records are scanned on every core.
fn record_secrets(history: &History) -> Vec<Problem> {
    let threads = std::thread::available_parallelism().map_or(1, usize::from);
    let per_thread = history.records.len().div_ceil(threads).max(1);
    let pieces: Vec<&[Record]> = history.records.chunks(per_thread).collect();
    crate::parallel::map_pieces(&pieces, |records| records_secrets(history, records))
        .into_iter()
        .flatten()
        .collect()
}

/// [`record_secrets`] of some of the records of `history`.
fn records_secrets(history: &History, records: &[Record]) -> Vec<Problem> {
    records
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

/// The cached snapshots under check. Each must be whole (every block of every section passes
/// its checksum), hold only records of the rollout, and equal the fold of the records it holds:
/// one that holds the first records of the fold order (what a read of the head can start from)
/// is compared with the one fold of every record as it passes that point; any other (one side
/// of a merge) is replayed on its own.
struct Snapshots {
    /// Opened and whole, with its name and its fold order, by record count.
    open: BTreeMap<usize, Vec<(String, SnapshotFile, Vec<String>)>>,
    problems: Vec<Problem>,
    notes: Vec<String>,
    checked: u64,
    /// Scan every snapshot for secrets, not only those that are not the fold of their records.
    scan_secrets: bool,
}

impl Snapshots {
    fn open(
        store: &Store,
        paths: &[std::path::PathBuf],
        history: &History,
        scan_secrets: bool,
    ) -> Snapshots {
        let mut snapshots = Snapshots {
            open: BTreeMap::new(),
            problems: Vec::new(),
            notes: Vec::new(),
            checked: 0,
            scan_secrets,
        };
        let settled_head = std::cell::OnceCell::new();
        for path in paths {
            let name = path
                .strip_prefix(store.dir())
                .unwrap_or(path)
                .display()
                .to_string();
            let opened = SnapshotFile::open(path).and_then(|file| {
                file.check_whole()?;
                let order = file.order()?;
                Ok((file, order))
            });
            let (file, order) = match opened {
                Ok(opened) => opened,
                // Thinned away by a write since it was listed.
                Err(_) if !path.exists() => continue,
                Err(err) if history.crlf_lines > 0 && holds_crlf(path) => {
                    snapshots.notes.push(format!(
                        "snapshot {name} does not open: {err:#}; the git attribute that converted the rollout's line endings converted its bytes too, so reads skip it and fold the records, and `epiphany verify --repair` replaces it"
                    ));
                    continue;
                }
                Err(err) => {
                    snapshots.problem(&name, format!("{err:#}"));
                    continue;
                }
            };
            if order.len() as u64 != file.header.records {
                let records = file.header.records;
                snapshots.problem(
                    &name,
                    format!("says it holds {records} records but lists {}", order.len()),
                );
                continue;
            }
            let missing = order
                .iter()
                .filter(|id| !history.lines.contains_key(id.as_str()))
                .count();
            if missing > 0 {
                let head = settled_head.get_or_init(|| git::settled_checkout(store.root()));
                if file.header.cached_at.is_some() && file.header.cached_at == *head {
                    snapshots.problem(&name, format!(
                        "holds {missing} record(s) the rollout lacks, and was cached at the commit checked out now: those records were lost (a deleted or truncated segment, dropped lines); restore the rollout files, or accept the loss with `epiphany verify --repair`"
                    ));
                } else {
                    snapshots.notes.push(format!(
                        "snapshot {name} holds {missing} record(s) the rollout does not have (it was cached on another commit or branch); reads skip it"
                    ));
                }
                continue;
            }
            (snapshots.open.entry(order.len()).or_default()).push((name, file, order));
        }
        snapshots
    }

    fn problem(&mut self, name: &str, message: String) {
        self.problems.push(Problem {
            segment: None,
            line: None,
            message: format!("snapshot {name}: {message}"),
        });
    }

    /// Folds every record once, comparing each snapshot that holds the first records of the
    /// fold order with the fold as it passes that point; answers the whole fold.
    fn fold_and_compare(&mut self, history: &History) -> Folded {
        let mut fold = Fold::new(Base {
            writers: Some(Writers::new()),
            ..Base::default()
        });
        let mut restores = Restores::plan(&history.records, true);
        self.compare_at(&mut fold, history, 0);
        for (at, record) in history.records.iter().enumerate() {
            restores.before(&mut fold, at);
            fold.push(record);
            self.compare_at(&mut fold, history, at + 1);
        }
        // Snapshots of other prefixes than the fold order's (one branch of a merge).
        let by_id: BTreeMap<&str, &Record> =
            history.records.iter().map(|r| (r.id.as_str(), r)).collect();
        for (name, file, order) in std::mem::take(&mut self.open).into_values().flatten() {
            let held: Vec<Record> = order.iter().map(|id| by_id[id.as_str()].clone()).collect();
            let replayed = replay(held);
            self.compare(&name, &file, |loaded| {
                replayed.state == loaded.state
                    && replayed.anchors == loaded.anchors
                    && replayed.tips == loaded.tips
                    && replayed.writers.clone().unwrap_or_default()
                        == loaded.writers.clone().unwrap_or_default()
            });
        }
        fold.finish()
    }

    /// Compares the snapshots of `count` records whose order is the fold's first `count`.
    fn compare_at(&mut self, fold: &mut Fold, history: &History, count: usize) {
        let Some(candidates) = self.open.remove(&count) else {
            return;
        };
        let (prefixes, others): (Vec<_>, Vec<_>) =
            candidates.into_iter().partition(|(_, _, order)| {
                order
                    .iter()
                    .zip(&history.records)
                    .all(|(id, record)| *id == record.id)
            });
        if !others.is_empty() {
            self.open.insert(count, others);
        }
        for (name, file, _) in prefixes {
            self.compare(&name, &file, |loaded| fold.matches(loaded));
        }
    }

    /// Loads the snapshot whole and asks `equals` whether it is the fold of its records.
    fn compare(&mut self, name: &str, file: &SnapshotFile, equals: impl FnOnce(&Folded) -> bool) {
        let loaded = file.load(Parts {
            writers: true,
            ..Parts::WHOLE
        });
        let loaded = match loaded {
            Ok(loaded) => loaded,
            Err(err) => return self.problem(name, format!("{err:#}")),
        };
        self.checked += 1;
        let folded = loaded.into_folded();
        let reproduced = equals(&folded);
        if !reproduced {
            self.problem(
                name,
                "replaying its records does not reproduce it".to_owned(),
            );
        }
        if (self.scan_secrets || !reproduced)
            && let Some(message) = state_secrets(&folded.state)
        {
            self.problem(name, message);
        }
    }

    /// Hands the problems and notes over; answers how many snapshots were compared.
    fn finish(self, problems: &mut Vec<Problem>, notes: &mut Vec<String>) -> u64 {
        problems.extend(self.problems);
        notes.extend(self.notes);
        self.checked
    }
}

/// Whether the file at `path` holds a `\r\n`, as git's conversion of line endings leaves in
/// a binary file it takes for text.
fn holds_crlf(path: &std::path::Path) -> bool {
    std::fs::read(path).is_ok_and(|bytes| memchr::memmem::find(&bytes, b"\r\n").is_some())
}

/// Folds `records` in their own order.
fn replay(records: Vec<Record>) -> Folded {
    fold_all(&crate::state::order::topological(records), true)
}
