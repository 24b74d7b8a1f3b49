//! The working records' one-line writes: `checkpoint set`, `subgoal add` / `subgoal done`,
//! `backlog add`, each made from the state it is applied to, and the observation
//! `recheck --observation` writes in place of an old one.

use crate::policy::code_ref::code_ref_key;
use crate::policy::one_line::Edit;
use crate::policy::one_line::given;
use crate::policy::one_line::slug_id;
use crate::policy::recheck::RefFinding;
use crate::policy::text::hex12;
use crate::state::model::BacklogItem;
use crate::state::model::CheckpointBrief;
use crate::state::model::CodeRef;
use crate::state::model::Disposition;
use crate::state::model::InvestigationCheckpoint;
use crate::state::model::Observation;
use crate::state::model::PlanningPriority;
use crate::state::model::State;
use crate::state::model::Subgoal;
use crate::state::patch::Patch;
use crate::state::problem::Problem;

/// The kind a new checkpoint gets when `--kind` is not given.
pub const CHECKPOINT_KIND: &str = "investigation";

/// What `checkpoint set` changes: each value given replaces the checkpoint's; `refs` and
/// `questions` replace its lists when given.
#[derive(Debug, Clone, Default)]
pub struct CheckpointChanges<'a> {
    /// `--focus`.
    pub focus: Option<&'a str>,
    /// `--next`.
    pub next_action: Option<&'a str>,
    /// `--summary`.
    pub summary: Option<&'a str>,
    /// `--kind`.
    pub kind: Option<&'a str>,
    /// `--disposition`.
    pub disposition: Option<Disposition>,
    /// `--ref`, when any was given.
    pub refs: Option<Vec<CodeRef>>,
    /// `--question`, when any was given.
    pub questions: Option<Vec<String>>,
}

/// What `checkpoint set` writes: the investigation checkpoint `state` holds with the changes,
/// so a concurrent change of another of its values stays, or a new one (see
/// [`set_checkpoint`]).
pub fn checkpoint_set(state: &State, changes: CheckpointChanges<'_>) -> Result<Edit, Vec<Problem>> {
    let checkpoint = set_checkpoint(state.investigation_checkpoint.as_ref(), changes)?;
    Ok(Edit::Write {
        written: vec![checkpoint.brief.checkpoint_id.clone()],
        patch: Box::new(Patch {
            investigation_checkpoint: Some(Box::new(checkpoint)),
            ..Patch::default()
        }),
        removed: Vec::new(),
    })
}

/// The checkpoint `checkpoint set` writes: `existing` with the changes, or a new one (it needs
/// a focus and a next action; its id is `ck-<hex12>` of the focus, its kind `investigation`,
/// its disposition `resume_ready`).
fn set_checkpoint(
    existing: Option<&InvestigationCheckpoint>,
    changes: CheckpointChanges<'_>,
) -> Result<InvestigationCheckpoint, Vec<Problem>> {
    let mut problems = Vec::new();
    let focus = given("--focus", changes.focus, &mut problems);
    let next_action = given("--next", changes.next_action, &mut problems);
    let summary = given("--summary", changes.summary, &mut problems);
    let kind = given("--kind", changes.kind, &mut problems);
    if existing.is_none() {
        for (flag, value, raw) in [
            ("--focus", &focus, changes.focus),
            ("--next", &next_action, changes.next_action),
        ] {
            if value.is_none() && raw.is_none() {
                problems.push(Problem::new(
                    flag,
                    "there is no checkpoint yet; a new one needs `--focus` and `--next`",
                ));
            }
        }
    }
    if !problems.is_empty() {
        return Err(problems);
    }
    let mut checkpoint = match existing {
        Some(existing) => existing.clone(),
        None => {
            let focus = focus.clone().unwrap_or_default();
            InvestigationCheckpoint {
                brief: CheckpointBrief {
                    checkpoint_id: format!("ck-{}", hex12(focus.as_bytes())),
                    kind: CHECKPOINT_KIND.to_owned(),
                    disposition: Disposition::ResumeReady,
                    focus,
                    summary: None,
                    next_action: None,
                    captured_at_turn_id: None,
                },
                open_questions: Vec::new(),
                code_refs: Vec::new(),
                evidence_ids: Vec::new(),
            }
        }
    };
    let brief = &mut checkpoint.brief;
    if let Some(focus) = focus {
        brief.focus = focus;
    }
    if let Some(kind) = kind {
        brief.kind = kind;
    }
    brief.next_action = next_action.or(brief.next_action.take());
    brief.summary = summary.or(brief.summary.take());
    if let Some(disposition) = changes.disposition {
        brief.disposition = disposition;
    }
    if let Some(refs) = changes.refs {
        checkpoint.code_refs = refs;
    }
    if let Some(questions) = changes.questions {
        checkpoint.open_questions = questions;
    }
    Ok(checkpoint)
}

/// A subgoal as `subgoal add` types it.
#[derive(Debug, Clone, Default)]
pub struct SubgoalInput<'a> {
    /// The title.
    pub title: &'a str,
    /// `--id`.
    pub id: Option<&'a str>,
    /// `--status`.
    pub status: Option<&'a str>,
    /// `--active`: make it the active subgoal.
    pub active: bool,
}

/// What `subgoal add` writes: the subgoal (see [`add_subgoal`]; its id is free in `state`),
/// and the active subgoal id when asked.
pub fn subgoal_add(state: &State, input: SubgoalInput<'_>) -> Result<Edit, Vec<Problem>> {
    let subgoal = add_subgoal(state, input.title, input.id, input.status)?;
    let mut patch = Patch {
        active_subgoal_id: input.active.then(|| subgoal.id.clone()),
        ..Patch::default()
    };
    patch.upsert.subgoals.push(subgoal);
    Ok(Edit::upserts(patch))
}

/// What `subgoal done` writes: the subgoal `id` as `state` holds it, with its new status.
pub fn subgoal_done(state: &State, id: &str, status: &str) -> Result<Edit, Vec<Problem>> {
    let subgoal = finish_subgoal(state, id, status).map_err(|problem| vec![problem])?;
    let mut patch = Patch::default();
    patch.upsert.subgoals.push(subgoal);
    Ok(Edit::upserts(patch))
}

/// The subgoal `subgoal add` writes: status `open` unless given, id `sg-<words of the title>`
/// unless given.
fn add_subgoal(
    state: &State,
    title: &str,
    id: Option<&str>,
    status: Option<&str>,
) -> Result<Subgoal, Vec<Problem>> {
    let mut problems = Vec::new();
    let title = given("TITLE", Some(title), &mut problems);
    let id = given("--id", id, &mut problems);
    let status = given("--status", status, &mut problems);
    if let Some(id) = &id
        && state.subgoals.iter().any(|s| s.id == *id)
    {
        problems.push(Problem::new(
            "--id",
            format!("subgoal \"{id}\" already exists; `epiphany subgoal done {id}` closes it"),
        ));
    }
    let Some(title) = title.filter(|_| problems.is_empty()) else {
        return Err(problems);
    };
    let taken = |candidate: &str| state.subgoals.iter().any(|s| s.id == candidate);
    Ok(Subgoal {
        id: id.unwrap_or_else(|| slug_id("sg-", &title, &taken)),
        title,
        status: status.unwrap_or_else(|| "open".to_owned()),
        summary: None,
    })
}

/// The subgoal `subgoal done` writes: the stored one with its new status.
fn finish_subgoal(state: &State, id: &str, status: &str) -> Result<Subgoal, Problem> {
    let Some(subgoal) = state.subgoals.iter().find(|s| s.id == id) else {
        let known: Vec<&str> = state.subgoals.iter().map(|s| s.id.as_str()).collect();
        let message = match known.is_empty() {
            true => format!("there is no subgoal \"{id}\" (there are none yet)"),
            false => format!(
                "there is no subgoal \"{id}\" (subgoals: {})",
                known.join(", ")
            ),
        };
        return Err(Problem::new("ID", message));
    };
    Ok(Subgoal {
        status: status.to_owned(),
        ..subgoal.clone()
    })
}

/// A backlog item as `backlog add` types it.
#[derive(Debug, Clone, Default)]
pub struct BacklogInput<'a> {
    /// The title.
    pub title: &'a str,
    /// `--summary` (default: the title).
    pub summary: Option<&'a str>,
    /// `--kind` (default `task`).
    pub kind: Option<&'a str>,
    /// `--priority` (default `medium`).
    pub priority: Option<&'a str>,
    /// `--horizon` (default `later`).
    pub horizon: Option<&'a str>,
}

/// What `backlog add` writes: the item (see [`add_backlog_item`]; its id is free in `state`).
pub fn backlog_add(state: &State, input: BacklogInput<'_>) -> Result<Edit, Vec<Problem>> {
    let item = add_backlog_item(state, input)?;
    let mut patch = Patch::default();
    patch.upsert.backlog.push(item);
    Ok(Edit::upserts(patch))
}

/// The backlog item `backlog add` writes, with defaults for every field the planning rules
/// require: id `bl-<words of the title>`, status `proposed`, confidence `medium`, product area
/// `general`, and a priority rationale saying it was not ranked yet.
fn add_backlog_item(state: &State, input: BacklogInput<'_>) -> Result<BacklogItem, Vec<Problem>> {
    let mut problems = Vec::new();
    let title = given("TITLE", Some(input.title), &mut problems);
    let summary = given("--summary", input.summary, &mut problems);
    let kind = given("--kind", input.kind, &mut problems);
    let priority = given("--priority", input.priority, &mut problems);
    let horizon = given("--horizon", input.horizon, &mut problems);
    let Some(title) = title.filter(|_| problems.is_empty()) else {
        return Err(problems);
    };
    let taken =
        |candidate: &str| (state.planning.backlog_items.iter()).any(|item| item.id == candidate);
    Ok(BacklogItem {
        id: slug_id("bl-", &title, &taken),
        summary: summary.unwrap_or_else(|| title.clone()),
        title,
        kind: kind.unwrap_or_else(|| "task".to_owned()),
        status: "proposed".to_owned(),
        horizon: horizon.unwrap_or_else(|| "later".to_owned()),
        priority: PlanningPriority {
            value: priority.unwrap_or_else(|| "medium".to_owned()),
            rationale: "added from the command line; not ranked yet".to_owned(),
            impact: None,
            urgency: None,
            confidence: None,
            effort: None,
            unblocks: Vec::new(),
            blocks: Vec::new(),
            reason: None,
        },
        confidence: "medium".to_owned(),
        product_area: "general".to_owned(),
        lane_hints: Vec::new(),
        dependencies: Vec::new(),
        blockers: Vec::new(),
        acceptance_sketch: Vec::new(),
        evidence_refs: Vec::new(),
        source_refs: Vec::new(),
        duplicate_of: None,
        updated_at: None,
    })
}

/// What re-checking an observation found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Superseded {
    /// The observation that replaces it: the same claim and evidence, its references where the
    /// code is now.
    pub observation: Observation,
    /// References repaired (renamed files, moved lines).
    pub repaired: Vec<CodeRef>,
    /// References dropped: they no longer hold and nothing says where they went.
    pub dropped: Vec<CodeRef>,
}

/// The observation that supersedes `old` once its references were read again, given the
/// re-check's findings for it: each repairable reference repaired, each other broken one
/// dropped. `None` when every reference still holds (nothing to supersede).
pub fn supersede(old: &Observation, findings: &[&RefFinding]) -> Option<Superseded> {
    if findings.is_empty() {
        return None;
    }
    let mut refs = Vec::new();
    let (mut repaired, mut dropped) = (Vec::new(), Vec::new());
    for code_ref in &old.code_refs {
        match findings.iter().find(|f| f.code_ref == *code_ref) {
            None => refs.push(code_ref.clone()),
            Some(finding) => match &finding.reanchored {
                Some(new) => {
                    repaired.push(new.clone());
                    refs.push(new.clone());
                }
                None => dropped.push(code_ref.clone()),
            },
        }
    }
    let mut parts = vec![old.id.clone(), "recheck".to_owned()];
    parts.extend(refs.iter().map(code_ref_key));
    let observation = Observation {
        id: format!("obs-{}", hex12(parts.join("\0").as_bytes())),
        code_refs: refs,
        supersedes: Some(old.id.clone()),
        ..old.clone()
    };
    Some(Superseded {
        observation,
        repaired,
        dropped,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::code_ref::RefFindingKind;
    use crate::policy::code_ref::RefOwner;
    use crate::policy::fixtures;

    #[test]
    fn a_new_checkpoint_needs_focus_and_next_and_gets_defaults() {
        let problems = set_checkpoint(None, CheckpointChanges::default()).expect_err("empty");
        let paths: Vec<&str> = problems.iter().map(|p| p.path.as_str()).collect();
        assert_eq!(paths, ["--focus", "--next"]);
        let new = set_checkpoint(
            None,
            CheckpointChanges {
                focus: Some("lexer retry"),
                next_action: Some("read the loop"),
                ..CheckpointChanges::default()
            },
        )
        .expect("new");
        assert!(new.brief.checkpoint_id.starts_with("ck-"));
        assert_eq!(new.brief.kind, CHECKPOINT_KIND);
        assert_eq!(new.brief.next_action.as_deref(), Some("read the loop"));
        let moved = set_checkpoint(
            Some(&new),
            CheckpointChanges {
                disposition: Some(Disposition::RegatherRequired),
                ..CheckpointChanges::default()
            },
        )
        .expect("set");
        assert_eq!(moved.brief.checkpoint_id, new.brief.checkpoint_id);
        assert_eq!(moved.brief.focus, "lexer retry");
        assert_eq!(moved.brief.disposition, Disposition::RegatherRequired);
    }

    #[test]
    fn subgoals_are_added_and_closed() {
        let mut state = State::default();
        let added = add_subgoal(&state, "Keep spans on retry", None, None).expect("add");
        assert_eq!(added.id, "sg-keep-spans-on-retry");
        assert_eq!(added.status, "open");
        state.subgoals.push(added.clone());
        let again = add_subgoal(&state, "Keep spans on retry", Some(&added.id), None);
        assert_eq!(again.expect_err("taken")[0].path, "--id");
        let done = finish_subgoal(&state, &added.id, "done").expect("done");
        assert_eq!(
            (done.title.as_str(), done.status.as_str()),
            ("Keep spans on retry", "done")
        );
        assert_eq!(
            finish_subgoal(&state, "sg-x", "done")
                .expect_err("missing")
                .message,
            "there is no subgoal \"sg-x\" (subgoals: sg-keep-spans-on-retry)"
        );
    }

    /// The patch and what it names, of an edit that writes.
    fn write(edit: Edit) -> (Patch, Vec<String>) {
        match edit {
            Edit::Write { patch, written, .. } => (*patch, written),
            Edit::Unchanged { hint } => panic!("unchanged: {hint}"),
        }
    }

    #[test]
    fn edits_read_what_they_depend_on_from_the_state_they_are_applied_to() {
        let mut state = State::default();
        state.subgoals.push(Subgoal {
            id: "sg-ship-it".into(),
            title: "Ship it, renamed by another writer".into(),
            status: "open".into(),
            summary: None,
        });
        let input = SubgoalInput {
            title: "Ship it",
            active: true,
            ..SubgoalInput::default()
        };
        let (patch, written) = write(subgoal_add(&state, input).expect("add"));
        assert_eq!(written, ["subgoals/sg-ship-it-2"]);
        assert_eq!(patch.active_subgoal_id.as_deref(), Some("sg-ship-it-2"));
        let (patch, written) = write(subgoal_done(&state, "sg-ship-it", "done").expect("done"));
        assert_eq!(written, ["subgoals/sg-ship-it"]);
        assert_eq!(
            patch.upsert.subgoals[0].title,
            "Ship it, renamed by another writer"
        );
        assert_eq!(patch.active_subgoal_id, None);
        state.planning.backlog_items.push(
            add_backlog_item(
                &state,
                BacklogInput {
                    title: "Ship it",
                    ..BacklogInput::default()
                },
            )
            .expect("item"),
        );
        let (_, written) = write(
            backlog_add(
                &state,
                BacklogInput {
                    title: "Ship it",
                    ..BacklogInput::default()
                },
            )
            .expect("add"),
        );
        assert_eq!(written, ["backlog/bl-ship-it-2"]);
        state.investigation_checkpoint = Some(
            set_checkpoint(
                None,
                CheckpointChanges {
                    focus: Some("f"),
                    next_action: Some("n"),
                    summary: Some("written by another"),
                    ..CheckpointChanges::default()
                },
            )
            .expect("checkpoint"),
        );
        let changes = CheckpointChanges {
            next_action: Some("read the loop"),
            ..CheckpointChanges::default()
        };
        let (patch, written) = write(checkpoint_set(&state, changes).expect("set"));
        let checkpoint = patch.investigation_checkpoint.expect("checkpoint");
        assert_eq!(
            written,
            std::slice::from_ref(&checkpoint.brief.checkpoint_id)
        );
        assert_eq!(
            checkpoint.brief.summary.as_deref(),
            Some("written by another")
        );
        assert_eq!(
            checkpoint.brief.next_action.as_deref(),
            Some("read the loop")
        );
    }

    #[test]
    fn a_backlog_item_needs_only_a_title() {
        let item = add_backlog_item(
            &State::default(),
            BacklogInput {
                title: "Index Go files",
                ..BacklogInput::default()
            },
        )
        .expect("item");
        assert_eq!(item.id, "bl-index-go-files");
        assert_eq!(item.summary, "Index Go files");
        assert_eq!(item.priority.value, "medium");
        let blank = add_backlog_item(&State::default(), BacklogInput::default());
        assert_eq!(blank.expect_err("blank")[0].path, "TITLE");
    }

    #[test]
    fn a_superseding_observation_repairs_what_it_can_and_drops_the_rest() {
        let mut old = fixtures::observation("obs-1", &["ev-1"]);
        let (moved, gone, kept) = (
            CodeRef::to_path("src/old.rs"),
            CodeRef::to_path("src/gone.rs"),
            CodeRef::to_path("src/kept.rs"),
        );
        old.code_refs = vec![moved.clone(), gone.clone(), kept.clone()];
        let finding = |code_ref: &CodeRef, reanchored: Option<CodeRef>| RefFinding {
            kind: RefFindingKind::Missing,
            owner: RefOwner::Observation { id: "obs-1".into() },
            code_ref: code_ref.clone(),
            renamed_to: None,
            symbol_lines: vec![],
            reanchored,
            blocking: false,
        };
        let renamed = finding(&moved, Some(CodeRef::to_path("src/new.rs")));
        let missing = finding(&gone, None);
        let superseded = supersede(&old, &[&renamed, &missing]).expect("superseded");
        assert_eq!(superseded.observation.supersedes.as_deref(), Some("obs-1"));
        assert_eq!(superseded.observation.evidence_ids, old.evidence_ids);
        assert_eq!(
            superseded.observation.code_refs,
            [CodeRef::to_path("src/new.rs"), kept]
        );
        assert_eq!(superseded.dropped, [gone]);
        assert_ne!(superseded.observation.id, old.id);
        assert_eq!(supersede(&old, &[]), None);
    }
}
