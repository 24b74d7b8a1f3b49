//! The write path, whichever command writes: a patch ([`PatchWrite`]: `update` and the
//! one-line writes, `init --objective`, `promote`) or a rollback ([`restore`]). A patch has its
//! secrets redacted and its code refs audited against the work tree, is validated against the
//! head under the store lock, and the state it produces is checked for problems the head did
//! not have; it is staged into a `StagedPatch` and committed into a [`PatchCommitted`]. On any
//! refusal nothing is written and the error says why (exit 2, or 3 for a revision conflict).
//! How a command reports the write is the command's.
//!
//! A patch is applied to whatever head the lock finds, unless `expected_revision` pins one. A
//! write whose patch depends on what is stored (a one-line write editing a node) makes it
//! under the lock instead: [`Locked`] takes the lock and hands out the head, and the patch
//! made from it is committed under it ([`PatchWrite::commit_with`]), so what the patch was made
//! from is what it is applied to.

use std::collections::BTreeMap;

use anyhow::Result;

use crate::code_refs::RefAudit;
use crate::code_refs::Resolver;
use crate::code_refs::audit_patch_refs;
use crate::code_refs::restates_unfingerprinted;
use crate::code_refs::warn_ref_notes;
use crate::code_refs::with_ref_problems;
use crate::ctx::Ctx;
use crate::error::ErrorKind;
use crate::error::Failure;
use crate::input::Malformed;
use crate::policy::secrets::Redaction;
use crate::policy::secrets::redact_serialized;
use crate::policy::secrets::redact_text;
use crate::policy::secrets::redactions;
use crate::policy::update::UpdateRefusal;
use crate::policy::update::added_problems;
use crate::policy::update::check_revision;
use crate::policy::update::check_update;
use crate::policy::update::node_upsert_problems;
use crate::policy::update::structure_problems;
use crate::policy::update::update_validation_errors;
use crate::render::DraftReport;
use crate::state::fields::ChangedField;
use crate::state::git;
use crate::state::model::RecordIds;
use crate::state::model::State;
use crate::state::patch::Patch;
use crate::state::problem::Problem;
use crate::state::rollout::Restore;
use crate::state::rollout::Source;
use crate::state::store::Committed;
use crate::state::store::Draft;
use crate::state::store::Head;
use crate::state::store::Payload;
use crate::state::store::Revision;
use crate::state::store::Staged;
use crate::state::store::Store;
use crate::state::store::Transaction;
use crate::state::store::WriteScope;

/// A patch on its way into the store.
#[derive(Debug)]
pub struct PatchWrite {
    /// Which command writes.
    pub source: Source,
    /// The patch.
    pub patch: Patch,
    /// The fields to report as changed.
    pub changed_fields: Vec<ChangedField>,
    /// Refuse unless the store is at this revision.
    pub expected_revision: Option<u64>,
    /// The turn that writes.
    pub turn_id: Option<String>,
    /// Accept code refs to files that do not exist yet, marked `planned`.
    pub allow_missing_paths: bool,
    /// Read relative code-ref paths from the current directory first (they were typed on the
    /// command line), rather than from the repository root first (a patch document's).
    pub refs_from_cwd: bool,
    /// What was wrong with the shape of the document the patch was read from, if anything:
    /// the patch (stand-ins where the shape is wrong) is checked as usual, every problem is
    /// listed, and nothing is written.
    pub malformed: Option<Malformed>,
}

/// A patch that made it into the store.
#[derive(Debug)]
pub struct PatchCommitted {
    /// The write.
    pub committed: Committed,
    /// Secrets redacted from the patch before it was written.
    pub redactions: Vec<Redaction>,
}

/// Where a write's lock comes from.
pub enum Lock<'s> {
    /// Take it for the write, on this store.
    Take(&'s Store),
    /// Held already, with the whole head read.
    Held(Box<Locked<'s>>),
}

/// A patch validated and folded under the lock, not yet committed.
#[must_use = "a staged patch is written only by `commit`"]
struct StagedPatch<'s> {
    staged: Staged<'s>,
    redactions: Vec<Redaction>,
    /// What the reference checks have to say: references planned or judged by their lines.
    refs: RefAudit,
    /// The patch as staged, when asked to keep it.
    patch: Option<Patch>,
    /// The head revision it was checked against.
    revision: u64,
}

/// The store lock, taken for a patch that is made from the head it is applied to (a one-line
/// write): nothing can land between reading the head and writing the patch made from it.
#[must_use = "the lock is held for a write; commit or draft a patch with it"]
pub struct Locked<'s> {
    store: &'s Store,
    tx: Transaction<'s>,
}

impl<'s> Locked<'s> {
    /// Takes the store lock and reads the whole head; refuses (exit 3) when `expected_revision`
    /// is given and the head is at another revision.
    pub fn begin(ctx: &Ctx, store: &'s Store, expected_revision: Option<u64>) -> Result<Self> {
        let tx = ctx.begin(store, WriteScope::Whole)?;
        check_revision(expected_revision, tx.head().state.revision).map_err(refusal_error)?;
        Ok(Locked { store, tx })
    }

    /// The head, read under the lock. Its observation and evidence lists hold only their
    /// newest items.
    pub fn state(&self) -> &State {
        &self.tx.head().state
    }

    /// Writes under this lock: the write's [`Lock`].
    pub fn into_lock(self) -> Lock<'s> {
        Lock::Held(Box::new(self))
    }
}

impl PatchWrite {
    /// Redacts, audits, validates and commits the write (see the module docs).
    pub fn commit(self, ctx: &Ctx, store: &Store) -> Result<PatchCommitted> {
        self.commit_with(ctx, Lock::Take(store))
    }

    /// [`PatchWrite::commit`], taking the lock or, when it is held, against the head it read.
    pub fn commit_with(self, ctx: &Ctx, lock: Lock<'_>) -> Result<PatchCommitted> {
        self.stage(ctx, lock, false)?.commit(ctx)
    }

    /// Everything [`PatchWrite::commit_with`] does but the commit: the patch as it would be
    /// written (secrets redacted, code refs resolved), with the revision it was checked
    /// against. Nothing is written.
    pub fn draft(self, ctx: &Ctx, lock: Lock<'_>) -> Result<DraftReport> {
        let staged = self.stage(ctx, lock, true)?;
        warn_redactions(ctx, &staged.redactions);
        warn_ref_notes(ctx, &staged.refs);
        Ok(DraftReport {
            expected_revision: staged.revision,
            patch: staged.patch.unwrap_or_default(),
        })
    }

    /// Redacts and audits the patch, takes the lock (unless it is held), validates the patch
    /// against the head and stages it, refusing a state with problems the head did not have.
    /// `keep_patch` keeps a copy of the patch as staged, for a draft.
    fn stage<'s>(self, ctx: &Ctx, lock: Lock<'s>, keep_patch: bool) -> Result<StagedPatch<'s>> {
        let PatchWrite {
            source,
            patch,
            changed_fields,
            expected_revision,
            turn_id,
            allow_missing_paths,
            refs_from_cwd,
            malformed,
        } = self;
        let mut found = BTreeMap::new();
        let mut patch = redact_serialized(patch, &mut found).map_err(redaction_failure)?;
        let turn_id = turn_id.map(|turn_id| redact_text(&turn_id, &mut found).unwrap_or(turn_id));
        let redactions = redactions(found);
        let store = match &lock {
            Lock::Take(store) => *store,
            Lock::Held(locked) => locked.store,
        };
        let resolver = Resolver::new(store.root(), &ctx.cwd, refs_from_cwd);
        // A patch that needs no stored graph is written without reading them, once its references
        // all stand on their own: a missing one might be a restated reference the state exempts,
        // which only the whole read can tell. A held lock has read them already. A restated
        // graph reference without its fingerprint takes the stored one, which only the whole
        // read has.
        let needs_stored = patch.needs_stored_graphs() || restates_unfingerprinted(&mut patch);
        let lean = match (&lock, needs_stored) {
            (Lock::Held(_), _) | (_, true) => None,
            (Lock::Take(_), false) => {
                let mut lean = patch.clone();
                let audit =
                    audit_patch_refs(&resolver, &State::default(), &mut lean, allow_missing_paths);
                (audit.problems.is_empty() && audit.planned.is_empty()).then_some((lean, audit))
            }
        };
        let scope = match lean {
            Some(_) => WriteScope::Records,
            None => WriteScope::Whole,
        };
        let tx = match lock {
            Lock::Take(store) => ctx.begin(store, scope)?,
            Lock::Held(locked) => locked.tx,
        };
        let revision = tx.head().state.revision;
        let (patch, mut audit) = match lean {
            Some(audited) => audited,
            None => {
                let audit =
                    audit_patch_refs(&resolver, &tx.head().state, &mut patch, allow_missing_paths);
                (patch, audit)
            }
        };
        if let Some(malformed) = malformed {
            // A malformed patch is refused whatever else holds (an empty patch or another
            // revision included), with every problem the update checks find beside the
            // shape's. The state it would produce is not judged: its stand-ins are not what
            // was written.
            let mut found = update_validation_errors(&tx.head().state, tx.head(), &patch);
            found.extend(audit.problems);
            if matches!(scope, WriteScope::Records) {
                found.extend(node_upsert_problems(&patch));
            }
            return Err(malformed.refusal(found, Vec::new()));
        }
        with_ref_problems(
            check_update(&tx.head().state, tx.head(), &patch, expected_revision),
            std::mem::take(&mut audit.problems),
        )
        .map_err(refusal_error)?;
        let problems = |head: &Head| structure_problems(&head.state, &|id| head.has_evidence(id));
        let before = match scope {
            WriteScope::Whole => patch.has_state_replacements().then(|| problems(tx.head())),
            WriteScope::Records => {
                let added = node_upsert_problems(&patch);
                if !added.is_empty() {
                    return Err(refusal_error(UpdateRefusal::Invalid(added)));
                }
                None
            }
        };
        let kept = keep_patch.then(|| patch.clone());
        let staged = tx.stage(draft_now(
            ctx,
            store,
            source,
            turn_id,
            changed_fields,
            Payload::Patch(Box::new(patch)),
        ));
        if let Some(before) = before {
            let added = added_problems(&before, problems(staged.head()));
            if !added.is_empty() {
                return Err(refusal_error(UpdateRefusal::Invalid(added)));
            }
        }
        Ok(StagedPatch {
            staged,
            redactions,
            refs: audit,
            patch: kept,
            revision,
        })
    }
}

impl StagedPatch<'_> {
    /// Makes the staged record durable and tells stderr what was redacted, what the reference
    /// checks noted and what the store warned about.
    fn commit(self, ctx: &Ctx) -> Result<PatchCommitted> {
        let committed = self.staged.commit()?;
        warn_redactions(ctx, &self.redactions);
        warn_ref_notes(ctx, &self.refs);
        warn_store(ctx, &committed);
        Ok(PatchCommitted {
            committed,
            redactions: self.redactions,
        })
    }
}

/// What a rollback did.
#[derive(Debug)]
pub enum Restored {
    /// The head already equals the restored state: nothing was written.
    Unchanged {
        /// The head's revision.
        revision: u64,
        /// The revision it equals.
        to_revision: usize,
    },
    /// The rollback record landed.
    Committed(Box<Committed>),
}

/// Rolls back: one more record, naming the records whose state it restores, so the new head
/// equals `to_revision`'s state (history is never rewritten). Checks `expected_revision` under
/// the lock; writes nothing when the head already equals that state.
pub fn restore(
    ctx: &Ctx,
    store: &Store,
    to_revision: &Revision,
    expected_revision: Option<u64>,
) -> Result<Restored> {
    let tx = ctx.begin(store, WriteScope::Whole)?;
    let revision = tx.head().state.revision;
    check_revision(expected_revision, revision).map_err(|refusal| {
        Failure::conflict(refusal.to_string())
            .with_hint("the store moved on; check `epiphany log` before rolling back")
    })?;
    let prefix = store.prefix(to_revision)?;
    let target = store.restored(&prefix.tips)?;
    let changed_fields = tx.head().changed_fields_to(&target);
    if changed_fields.is_empty() {
        return Ok(Restored::Unchanged {
            revision,
            to_revision: prefix.count,
        });
    }
    let restore = Restore {
        to_revision: prefix.count as u64,
        to_record: prefix.record,
        tips: Some(prefix.tips),
        state: None,
        anchors: BTreeMap::new(),
    };
    let payload = Payload::Restore {
        restore: Box::new(restore),
        target: Box::new(target),
    };
    let draft = draft_now(ctx, store, Source::Rollback, None, changed_fields, payload);
    let committed = tx.stage(draft).commit()?;
    warn_store(ctx, &committed);
    Ok(Restored::Committed(Box::new(committed)))
}

/// A draft by `source` (and the turn, when named), written now on the commit checked out.
fn draft_now(
    ctx: &Ctx,
    store: &Store,
    source: Source,
    turn_id: Option<String>,
    changed_fields: Vec<ChangedField>,
    payload: Payload,
) -> Draft {
    Draft {
        source,
        turn_id,
        changed_fields,
        payload,
        at: ctx.now_rfc3339(),
        git_head: git::head_commit(store.root()),
    }
}

/// Tells stderr what the store warned about after the record was durable.
fn warn_store(ctx: &Ctx, committed: &Committed) {
    for warning in &committed.warnings {
        ctx.ui.warn(warning);
    }
}

/// Tells stderr what was redacted: kinds and counts, never a value.
pub fn warn_redactions(ctx: &Ctx, redactions: &[Redaction]) {
    for redaction in redactions {
        ctx.ui.warn(&format!(
            "redacted {} {} secret(s) before writing",
            redaction.count, redaction.kind
        ));
    }
}

/// Redaction only rewrites text, so a patch that no longer decodes afterwards is a bug; it
/// is refused rather than stored unredacted.
pub fn redaction_failure(problem: Problem) -> anyhow::Error {
    Failure::new(
        ErrorKind::Internal,
        format!("could not redact secrets from the input: {problem}"),
    )
    .with_hint("nothing was written")
    .into()
}

fn refusal_error(refusal: UpdateRefusal) -> anyhow::Error {
    match refusal {
        UpdateRefusal::EmptyPatch => Failure::input(refusal.to_string())
            .with_hint("a patch needs at least one field; see `epiphany update --help`")
            .into(),
        UpdateRefusal::RevisionMismatch { .. } => Failure::conflict(refusal.to_string())
            .with_hint("the store moved on; re-read it (`epiphany show`) and draft the patch again")
            .into(),
        UpdateRefusal::Invalid(problems) => Failure::input("invalid epiphany update patch")
            .with_problems(problems)
            .with_hint("fix every problem listed; nothing was written")
            .into(),
    }
}
