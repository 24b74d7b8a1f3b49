//! The sections of what the work found and how it goes: the investigation checkpoint, scratch,
//! recent observations and evidence, churn, mode. Must not decide whether a section is cut:
//! `sections` does.

use crate::policy::code_ref::RefOwner;
use crate::policy::freshness::Staleness;
use crate::policy::projection::current_observations;
use crate::policy::text::collapse;
use crate::state::model::ModeKind;
use crate::state::model::State;

use super::EVIDENCE_LIMIT;
use super::OBSERVATION_LIMIT;
use super::Section;
use super::backticked;
use super::checked_note;
use super::code_refs;
use super::inline_ids;
use super::map_contradicted;
use super::omission;
use super::record_line;
use super::ref_suffix;

pub(super) fn investigation_checkpoint(
    state: &State,
    staleness: Option<&Staleness>,
    detail: bool,
) -> Section {
    let mut section = Section::new("## Investigation Checkpoint");
    let Some(checkpoint) = &state.investigation_checkpoint else {
        return section;
    };
    let brief = &checkpoint.brief;
    section.line(format!("- Id: `{}`", brief.checkpoint_id));
    if let Some(staleness) = staleness.filter(|s| !s.checkpoint_changed_paths.is_empty()) {
        section.line(format!(
            "- Stale: the code it cites changed since it was checked: {}; re-gather before resuming",
            backticked(&staleness.checkpoint_changed_paths)
        ));
    }
    section.line(format!("- Kind: {}", collapse(&brief.kind)));
    section.line(format!("- Disposition: {}", brief.disposition.as_str()));
    section.line(format!("- Focus: {}", collapse(&brief.focus)));
    if let Some(summary) = &brief.summary {
        section.line(format!("- Summary: {}", collapse(summary)));
    }
    if let Some(next) = &brief.next_action {
        section.line(format!("- Next action: {}", collapse(next)));
    }
    if let Some(turn) = &brief.captured_at_turn_id {
        section.line(format!("- Captured at turn: `{turn}`"));
    }
    if detail && !checkpoint.open_questions.is_empty() {
        let questions: Vec<String> = checkpoint
            .open_questions
            .iter()
            .map(|q| collapse(q))
            .collect();
        section.line(format!("- Open questions: {}", questions.join(" | ")));
    }
    if detail && !checkpoint.evidence_ids.is_empty() {
        section.line(format!(
            "- Evidence ids: {}",
            inline_ids(&checkpoint.evidence_ids)
        ));
    }
    if !checkpoint.code_refs.is_empty() {
        section.line(format!("- Code refs: {}", code_refs(&checkpoint.code_refs)));
    }
    let owner = RefOwner::InvestigationCheckpoint {
        id: brief.checkpoint_id.clone(),
    };
    if let Some(certificate) = staleness.and_then(|s| s.certificate(&owner)) {
        section.line(format!("- Checked: {}", checked_note(certificate)));
    }
    section
}

pub(super) fn scratch(state: &State) -> Section {
    let mut section = Section::new("## Scratch");
    if let Some(scratch) = &state.scratch {
        for (label, value) in [
            ("Summary", &scratch.summary),
            ("Hypothesis", &scratch.hypothesis),
            ("Next probe", &scratch.next_probe),
        ] {
            if let Some(value) = value {
                section.line(format!("- {label}: {}", collapse(value)));
            }
        }
    }
    section
}

pub(super) fn observations(state: &State, staleness: Option<&Staleness>, total: usize) -> Section {
    let mut section = Section::new("## Recent Observations");
    if let Some(staleness) = staleness.filter(|s| !s.outdated_record_refs.is_empty()) {
        section.line(format!(
            "- Code refs that no longer hold: {} (kept as written; `epiphany recheck --observation ID` supersedes one with where the code is now)",
            backticked(&staleness.outdated_record_refs)
        ));
    }
    for o in current_observations(&state.observations).take(OBSERVATION_LIMIT) {
        section.line(format!(
            "- {}",
            record_line(
                &o.id,
                &format!("{} via {}", collapse(&o.status), collapse(&o.source_kind)),
                &collapse(&o.summary)
            )
        ));
        if !o.evidence_ids.is_empty() {
            section.line(format!("  evidence: {}", inline_ids(&o.evidence_ids)));
        }
        if !o.code_refs.is_empty() {
            section.line(format!("  code refs: {}", code_refs(&o.code_refs)));
        }
    }
    omission(&mut section, "", total, OBSERVATION_LIMIT, "observations");
    section
}

pub(super) fn evidence(state: &State, total: usize) -> Section {
    let mut section = Section::new("## Recent Evidence");
    for e in state.recent_evidence.iter().take(EVIDENCE_LIMIT) {
        section.line(format!(
            "- {}{}",
            record_line(
                &e.id,
                &format!("{} / {}", collapse(&e.kind), collapse(&e.status)),
                &collapse(&e.summary)
            ),
            ref_suffix(&e.code_refs)
        ));
    }
    omission(&mut section, "", total, EVIDENCE_LIMIT, "evidence records");
    section
}

pub(super) fn churn(state: &State, staleness: Option<&Staleness>) -> Section {
    let mut section = Section::new("## Churn");
    if let Some(churn) = &state.churn {
        section.line(format!(
            "- Understanding status: {}",
            collapse(&churn.understanding_status)
        ));
        section.line(format!(
            "- Diff pressure: {}",
            collapse(&churn.diff_pressure)
        ));
        if let Some(freshness) = &churn.graph_freshness {
            let contradicted = if map_contradicted(staleness).is_some() {
                " (as recorded; the work tree has moved since, see Graphs)"
            } else {
                ""
            };
            section.line(format!(
                "- Graph freshness: {}{contradicted}",
                collapse(freshness)
            ));
        }
        if let Some(warning) = &churn.warning {
            section.line(format!("- Warning: {}", collapse(warning)));
        }
        if let Some(writes) = churn.unexplained_writes {
            section.line(format!("- Unexplained writes: {writes}"));
        }
    }
    section
}

pub(super) fn mode(state: &State) -> Section {
    let mut section = Section::new("## Mode");
    if let Some(mode) = &state.mode {
        let kind = match mode.kind {
            Some(ModeKind::Plan) => " (Plan)",
            Some(ModeKind::Default) => " (Default)",
            None => "",
        };
        section.line(format!("- Name: {}{kind}", collapse(&mode.name)));
    }
    section
}
