//! The sections of the fragment, in order, with their item limits, line formats and omission
//! lines, and the fixed intro and operating-discipline text. Each builder renders one part of
//! the state; what to leave out is the budget's decision, passed in as `cuts`.
//!
//! This module holds the order, the limits, the shared line formats and the overview; `work`
//! builds the sections of what the work is for (planning, subgoals, invariants), `graphs` the
//! map, `records` what the work found and how it goes (the investigation checkpoint, scratch,
//! observations, evidence, churn, mode). A builder must not decide what is cut.

mod graphs;
mod records;
mod work;

use std::borrow::Cow;

use crate::policy::code_ref::RefOwner;
use crate::policy::code_ref::format_code_ref;
use crate::policy::freshness::Certificate;
use crate::policy::freshness::CertificateStatus;
use crate::policy::freshness::StaleReason;
use crate::policy::freshness::Staleness;
use crate::policy::text::collapse;
use crate::policy::text::for_agent;
use crate::policy::text::uniq_append;
use crate::state::model::CodeRef;
use crate::state::model::ListTotals;
use crate::state::model::State;
use crate::state::paths::slash_key;

use super::budget::PromptPart;
use graphs::graphs;
use records::churn;
use records::evidence;
use records::investigation_checkpoint;
use records::mode;
use records::observations;
use records::scratch;
use work::invariants;
use work::planning;
use work::subgoals;

const SUBGOAL_LIMIT: usize = 4;

const INVARIANT_LIMIT: usize = 4;

pub(super) const NODE_LIMIT: usize = 3;

const EDGE_LIMIT: usize = 2;

const LINK_LIMIT: usize = 3;

const OBSERVATION_LIMIT: usize = 3;

const EVIDENCE_LIMIT: usize = 3;

/// The most observations or evidence records the fragment shows: the newest this many are all
/// it reads of either list (their totals aside).
pub const RECORDS_SHOWN: usize = if OBSERVATION_LIMIT > EVIDENCE_LIMIT {
    OBSERVATION_LIMIT
} else {
    EVIDENCE_LIMIT
};

const PLANNING_LIMIT: usize = 3;

const CODE_REF_LIMIT: usize = 2;

const DIRTY_PATH_LIMIT: usize = 4;

const DRAFT_ACCEPTANCE_LIMIT: usize = 2;

const INTRO: &str = "\
## Epiphany State
This is the typed understanding of this repository that `epiphany` keeps in `.epiphany/`, \
projected here for orientation. Start from it instead of re-deriving the map. When the code \
disagrees with it or shows a gap, say so before making broad edits. Change it only through \
`epiphany update`, never by restating it in prose. A record marked `unchanged since checked` \
cites code that `epiphany` compared just now with the text checked when the record was written \
or re-checked: it is the same, so that part need not be read again to be trusted. Re-read \
what is marked `changed since checked` or `not checkable`.";

const DISCIPLINE: &str = "\
## Operating Discipline
- Test one regression or benchmark hypothesis at a time, with one real measurement, instead of \
stacking speculative fixes.
- If a fix leaves the regression in place or the benchmark where it was, take it back out \
before trying the next idea.
- When churn climbs while understanding falls, stop implementing: diagnose, map and simplify \
until the mechanism is explained.
- Keep map, scratch, evidence and checkpoint apart; ground the map in code refs; read the exact \
source before changing it.
- When context pressure rises, save checkpoint, scratch and evidence before compaction, then \
rehydrate from `epiphany prompt`.";

/// One section: a heading line and its lines. Fixed sections (intro, discipline) never lose a
/// line.
pub(super) struct Section {
    pub(super) lines: Vec<String>,
    pub(super) fixed: bool,
}

impl Section {
    pub(super) fn new(heading: &str) -> Section {
        Section {
            lines: vec![heading.to_owned()],
            fixed: false,
        }
    }

    pub(super) fn fixed(text: &str) -> Section {
        Section {
            lines: text.lines().map(str::to_owned).collect(),
            fixed: true,
        }
    }

    /// Adds a line, its control characters made visible and anything that reads as one of
    /// epiphany's tags escaped ([`for_agent`]): the prompt goes into an agent's context as it
    /// is, whoever wrote the state.
    pub(super) fn line(&mut self, line: String) {
        self.lines.push(match for_agent(&line) {
            Cow::Borrowed(_) => line,
            Cow::Owned(visible) => visible,
        });
    }
}

/// Every section present in `state`, in the order of docs/projections.md#prompt-sections,
/// without the parts in `cuts`.
pub(super) fn sections(
    state: &State,
    totals: ListTotals,
    staleness: Option<&Staleness>,
    cuts: &[PromptPart],
) -> Vec<Section> {
    let keep = |part| !cuts.contains(&part);
    let focus = focus_ids(state);
    let mut sections = vec![
        Section::fixed(INTRO),
        overview(state, staleness, &focus),
        Section::fixed(DISCIPLINE),
    ];
    if !state.conflicts.is_empty() {
        sections.push(conflicts(state));
    }
    if keep(PromptPart::Planning) && !state.planning.is_empty() {
        sections.push(planning(state));
    }
    if keep(PromptPart::Subgoals) && !state.subgoals.is_empty() {
        sections.push(subgoals(state));
    }
    if keep(PromptPart::Invariants) && !state.invariants.is_empty() {
        sections.push(invariants(state));
    }
    if !state.graphs.is_empty()
        || state.graph_frontier.is_some()
        || state.graph_checkpoint.is_some()
    {
        sections.push(graphs(
            state,
            staleness,
            &focus,
            keep(PromptPart::GraphDetail),
        ));
    }
    if state.investigation_checkpoint.is_some() {
        sections.push(investigation_checkpoint(
            state,
            staleness,
            keep(PromptPart::CheckpointDetail),
        ));
    }
    if keep(PromptPart::Scratch) && PromptPart::Scratch.size(state, totals) > 0 {
        sections.push(scratch(state));
    }
    if keep(PromptPart::RecentObservations) && totals.observations > 0 {
        sections.push(observations(state, staleness, totals.observations));
    }
    if keep(PromptPart::RecentEvidence) && totals.evidence > 0 {
        sections.push(evidence(state, totals.evidence));
    }
    if keep(PromptPart::Churn) && state.churn.is_some() {
        sections.push(churn(state, staleness));
    }
    if keep(PromptPart::Mode) && state.mode.is_some() {
        sections.push(mode(state));
    }
    sections
}

/// Concurrent writes from merged branches that disagree: never cut, since the agent must not
/// trust those values blindly.
fn conflicts(state: &State) -> Section {
    let mut section = Section::new("## Conflicts");
    section.fixed = true;
    section.line(
        "Branches merged by git wrote these differently; the value shown in the state is the one the fold order chose. Check it, then write it again with `epiphany update` to resolve.".to_owned(),
    );
    for conflict in &state.conflicts {
        section.line(format!(
            "- `{}`: {} competing writes",
            conflict.key,
            conflict.records.len()
        ));
    }
    section
}

/// Frontier active nodes, then the graph checkpoint's frontier nodes, de-duplicated.
fn focus_ids(state: &State) -> Vec<String> {
    let mut focus = Vec::new();
    if let Some(frontier) = &state.graph_frontier {
        uniq_append(&mut focus, frontier.active_node_ids.iter().cloned());
    }
    if let Some(checkpoint) = &state.graph_checkpoint {
        uniq_append(&mut focus, checkpoint.frontier_node_ids.iter().cloned());
    }
    focus
}

/// An inline id list (docs/projections.md#prompt-line-formats): each id in backticks, joined
/// by `, `.
pub fn inline_ids(ids: &[String]) -> String {
    ids.iter()
        .map(|id| format!("`{id}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// One record of a list as the prompt and the human reports write it
/// (docs/projections.md#prompt-line-formats): `` `id` [tags]: text ``.
pub fn record_line(id: &str, tags: &str, text: &str) -> String {
    format!("`{id}` [{tags}]: {text}")
}

/// A code ref as the prompt writes it (docs/projections.md#prompt-line-formats), spelled as
/// every input takes it: `` `path:start-end#symbol` (note) ``.
pub fn code_ref(r: &CodeRef) -> String {
    let spelled = CodeRef {
        path: slash_key(&r.path),
        symbol: r.symbol.as_deref().map(collapse),
        note: None,
        ..r.clone()
    };
    let mut out = format!("`{}`", format_code_ref(&spelled));
    if let Some(note) = &r.note {
        out.push_str(&format!(" ({})", collapse(note)));
    }
    out
}

/// At most two refs, then `... n more refs`.
pub(super) fn code_refs(refs: &[CodeRef]) -> String {
    let mut items: Vec<String> = refs.iter().take(CODE_REF_LIMIT).map(code_ref).collect();
    if refs.len() > CODE_REF_LIMIT {
        items.push(format!("... {} more refs", refs.len() - CODE_REF_LIMIT));
    }
    items.join(", ")
}

fn ref_suffix(refs: &[CodeRef]) -> String {
    if refs.is_empty() {
        String::new()
    } else {
        format!("; refs: {}", code_refs(refs))
    }
}

/// `<indent>- ... n more <label> not shown` when `total > shown`.
fn omission(section: &mut Section, indent: &str, total: usize, shown: usize, label: &str) {
    if total > shown {
        section.line(format!(
            "{indent}- ... {} more {label} not shown",
            total - shown
        ));
    }
}

fn overview(state: &State, staleness: Option<&Staleness>, focus: &[String]) -> Section {
    let mut section = Section::new("## Overview");
    section.line(format!("- Revision: {}", state.revision));
    let history_unknown =
        staleness.is_some_and(|s| s.stale_reasons.contains(&StaleReason::HistoryUnknown));
    if history_unknown {
        section.line(
            "- History unknown: git lacks the commits this map was written on (a shallow clone?), so nothing can tell what changed since; re-read what it cites before trusting or resuming from it (`git fetch --unshallow` brings the history)"
                .to_owned(),
        );
    }
    if let Some(line) = staleness.and_then(|s| code_check(&s.certificates)) {
        section.line(line);
    }
    if let Some(objective) = &state.objective {
        section.line(format!("- Objective: {}", collapse(objective)));
    }
    if let Some(id) = &state.active_subgoal_id {
        section.line(format!("- Active subgoal: `{id}`"));
    }
    if let Some(turn) = &state.last_updated_turn_id {
        section.line(format!("- Last updated turn: `{turn}`"));
    }
    if state.graph_frontier.is_some() && !focus.is_empty() {
        section.line(format!("- Frontier focus: {}", inline_ids(focus)));
    }
    section
}

/// The overview's line on what was checked of the map: how many of the records that cite
/// code cite it unchanged since it was checked, and which do not; `None` when none cites code.
fn code_check(certificates: &[Certificate]) -> Option<String> {
    if certificates.is_empty() {
        return None;
    }
    let named = |status: CertificateStatus| -> Vec<String> {
        (certificates.iter())
            .filter(|c| c.status == status)
            .map(|c| record_name(&c.owner))
            .collect()
    };
    let unchanged = named(CertificateStatus::Unchanged).len();
    let changed = named(CertificateStatus::ChangedSinceChecked);
    let unknown = named(CertificateStatus::NotCheckable);
    let total = certificates.len();
    if unchanged == total {
        return Some(format!(
            "- Code check: all {total} records that cite code (graph nodes, investigation checkpoint) are `unchanged since checked`: each cited definition, range and file was compared just now with the text checked when it was written or re-checked, and is the same"
        ));
    }
    let mut line = format!(
        "- Code check: {unchanged} of {total} records that cite code are `unchanged since checked`"
    );
    if !changed.is_empty() {
        line.push_str(&format!(
            "; `changed since checked`: {} (re-read, then `epiphany recheck`)",
            changed.join(", ")
        ));
    }
    if !unknown.is_empty() {
        line.push_str(&format!("; `not checkable`: {}", unknown.join(", ")));
    }
    Some(line)
}

/// How a record is named in a line: `` `id` `` for a node, `the checkpoint`.
fn record_name(owner: &RefOwner) -> String {
    match owner {
        RefOwner::Node { id, .. } => format!("`{id}`"),
        _ => "the investigation checkpoint".to_owned(),
    }
}

/// A record's certificate as its own line says it (docs/freshness.md#certificates).
fn checked_note(certificate: &Certificate) -> String {
    match certificate.status {
        CertificateStatus::Unchanged => match &certificate.checked_at {
            Some(commit) => format!(
                "`unchanged since checked` (at commit {})",
                &commit[..commit.len().min(12)]
            ),
            None => "`unchanged since checked`".to_owned(),
        },
        CertificateStatus::ChangedSinceChecked => format!(
            "`changed since checked`: {}; re-read it before trusting this record",
            backticked(&certificate.changed_refs)
        ),
        CertificateStatus::NotCheckable => {
            "`not checkable` (written before fingerprints, and git cannot tell); re-read what it cites".to_owned()
        }
    }
}

/// Whether the work tree contradicts the map: cited files changed under their records, or
/// references that no longer hold.
fn map_contradicted(staleness: Option<&Staleness>) -> Option<&Staleness> {
    staleness.filter(|s| {
        !s.node_changed_paths.is_empty()
            || !s.checkpoint_changed_paths.is_empty()
            || !s.broken_refs.is_empty()
    })
}

fn backticked(items: &[String]) -> String {
    items
        .iter()
        .map(|item| format!("`{item}`"))
        .collect::<Vec<_>>()
        .join(", ")
}
