//! The sections of the fragment, in order, with their item limits, line formats and omission
//! lines, and the fixed intro and operating-discipline text. Each builder renders one part of
//! the state; what to leave out is the budget's decision, passed in as `cuts`.

use std::borrow::Cow;

use crate::policy::code_ref::format_code_ref;
use crate::policy::freshness::StaleReason;
use crate::policy::freshness::Staleness;
use crate::policy::projection::current_observations;
use crate::policy::text::collapse;
use crate::policy::text::for_agent;
use crate::policy::text::uniq_append;
use crate::state::model::CodeRef;
use crate::state::model::Graph;
use crate::state::model::GraphKind;
use crate::state::model::ListTotals;
use crate::state::model::ModeKind;
use crate::state::model::State;
use crate::state::paths::slash_key;

use super::budget::PromptPart;

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
`epiphany update`, never by restating it in prose.";

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

pub(super) fn planning(state: &State) -> Section {
    let p = &state.planning;
    let mut section = Section::new("## Planning");
    section.line(format!(
        "- Counts: {} captures, {} backlog items, {} roadmap streams, {} objective drafts",
        p.captures.len(),
        p.backlog_items.len(),
        p.roadmap_streams.len(),
        p.objective_drafts.len()
    ));
    section.line(
        "- Planning records are not the active objective until a human explicitly adopts one."
            .to_owned(),
    );
    for draft in p.objective_drafts.iter().take(PLANNING_LIMIT) {
        section.line(format!(
            "- Objective draft {}",
            record_line(&draft.id, &collapse(&draft.status), &collapse(&draft.title))
        ));
        if !draft.acceptance_criteria.is_empty() {
            let criteria: Vec<String> = draft
                .acceptance_criteria
                .iter()
                .take(DRAFT_ACCEPTANCE_LIMIT)
                .map(|c| collapse(c))
                .collect();
            section.line(format!("  acceptance: {}", criteria.join(" | ")));
        }
    }
    omission(
        &mut section,
        "",
        p.objective_drafts.len(),
        PLANNING_LIMIT,
        "objective drafts",
    );
    for item in p.backlog_items.iter().take(PLANNING_LIMIT) {
        section.line(format!(
            "- Backlog {}",
            record_line(
                &item.id,
                &format!(
                    "{} / {} / {}",
                    collapse(&item.status),
                    collapse(&item.priority.value),
                    collapse(&item.horizon)
                ),
                &collapse(&item.title)
            )
        ));
    }
    omission(
        &mut section,
        "",
        p.backlog_items.len(),
        PLANNING_LIMIT,
        "backlog items",
    );
    for capture in p.captures.iter().take(PLANNING_LIMIT) {
        section.line(format!(
            "- Capture {}",
            record_line(
                &capture.id,
                &format!(
                    "{} via {}",
                    collapse(&capture.status),
                    collapse(&capture.source.kind)
                ),
                &collapse(&capture.title)
            )
        ));
    }
    omission(
        &mut section,
        "",
        p.captures.len(),
        PLANNING_LIMIT,
        "captures",
    );
    section
}

pub(super) fn subgoals(state: &State) -> Section {
    let mut section = Section::new("## Subgoals");
    for subgoal in state.subgoals.iter().take(SUBGOAL_LIMIT) {
        let active = if state.active_subgoal_id.as_deref() == Some(subgoal.id.as_str()) {
            "; active"
        } else {
            ""
        };
        section.line(format!(
            "- {}",
            record_line(
                &subgoal.id,
                &format!("{}{active}", collapse(&subgoal.status)),
                &collapse(&subgoal.title)
            )
        ));
        if let Some(summary) = &subgoal.summary {
            section.line(format!("  summary: {}", collapse(summary)));
        }
    }
    omission(
        &mut section,
        "",
        state.subgoals.len(),
        SUBGOAL_LIMIT,
        "subgoals",
    );
    section
}

pub(super) fn invariants(state: &State) -> Section {
    let mut section = Section::new("## Invariants");
    for invariant in state.invariants.iter().take(INVARIANT_LIMIT) {
        section.line(format!(
            "- {}",
            record_line(
                &invariant.id,
                &collapse(&invariant.status),
                &collapse(&invariant.description)
            )
        ));
        if let Some(rationale) = &invariant.rationale {
            section.line(format!("  rationale: {}", collapse(rationale)));
        }
    }
    omission(
        &mut section,
        "",
        state.invariants.len(),
        INVARIANT_LIMIT,
        "invariants",
    );
    section
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

fn graphs(state: &State, staleness: Option<&Staleness>, focus: &[String], detail: bool) -> Section {
    let mut section = Section::new("## Graphs");
    if let Some(staleness) = map_contradicted(staleness) {
        if !staleness.stale_node_ids.is_empty() {
            section.line(format!(
                "- Stale: files changed since the nodes citing them were written: {} (nodes {}); re-read them before trusting those nodes",
                backticked(&staleness.node_changed_paths),
                inline_ids(&staleness.stale_node_ids)
            ));
        }
        if !staleness.broken_refs.is_empty() {
            section.line(format!(
                "- Broken code refs: {} (`epiphany freshness` lists them; `epiphany freshness --fix` re-anchors renames and moved lines)",
                backticked(&staleness.broken_refs)
            ));
        }
    }
    if let Some(frontier) = &state.graph_frontier {
        for (label, list) in [
            ("Frontier active nodes", &frontier.active_node_ids),
            ("Frontier active edges", &frontier.active_edge_ids),
            ("Open questions", &frontier.open_question_ids),
            ("Open gaps", &frontier.open_gap_ids),
        ] {
            if !list.is_empty() {
                section.line(format!("- {label}: {}", inline_ids(list)));
            }
        }
        if !frontier.dirty_paths.is_empty() {
            let shown: Vec<String> = frontier
                .dirty_paths
                .iter()
                .take(DIRTY_PATH_LIMIT)
                .map(|p| format!("`{}`", slash_key(p)))
                .collect();
            let more = frontier.dirty_paths.len().saturating_sub(DIRTY_PATH_LIMIT);
            let suffix = if more > 0 {
                format!("; ... {more} more dirty paths not shown")
            } else {
                String::new()
            };
            section.line(format!("- Dirty paths: {}{suffix}", shown.join(", ")));
        }
    }
    if let Some(checkpoint) = &state.graph_checkpoint {
        section.line(format!(
            "- Checkpoint: `{}` (graph revision {})",
            checkpoint.checkpoint_id, checkpoint.graph_revision
        ));
        if let Some(summary) = &checkpoint.summary {
            section.line(format!("- Checkpoint summary: {}", collapse(summary)));
        }
        for (label, list) in [
            ("Checkpoint frontier nodes", &checkpoint.frontier_node_ids),
            ("Checkpoint open questions", &checkpoint.open_question_ids),
            ("Checkpoint open gaps", &checkpoint.open_gap_ids),
        ] {
            if !list.is_empty() {
                section.line(format!("- {label}: {}", inline_ids(list)));
            }
        }
    }
    for (kind, graph) in state.graphs.each() {
        if graph.is_empty() {
            continue;
        }
        let name = match kind {
            GraphKind::Architecture => "Architecture graph",
            GraphKind::Dataflow => "Dataflow graph",
        };
        section.line(format!(
            "- {name}: {} nodes, {} edges",
            graph.nodes.len(),
            graph.edges.len()
        ));
        if detail {
            graph_detail(&mut section, state, graph, focus);
        }
    }
    if detail && !state.graphs.links.is_empty() {
        let touches = |id: &String| focus.contains(id);
        let (near, far): (Vec<_>, Vec<_>) = state
            .graphs
            .links
            .iter()
            .partition(|l| touches(&l.dataflow_node_id) || touches(&l.architecture_node_id));
        for link in near.into_iter().chain(far).take(LINK_LIMIT) {
            let relationship = link
                .relationship
                .as_ref()
                .map_or(String::new(), |r| format!(" ({})", collapse(r)));
            section.line(format!(
                "- Link: `{}` -> `{}`{relationship}{}",
                link.dataflow_node_id,
                link.architecture_node_id,
                ref_suffix(&link.code_refs)
            ));
        }
        omission(
            &mut section,
            "",
            state.graphs.links.len(),
            LINK_LIMIT,
            "graph links",
        );
    }
    section
}

/// Up to three nodes (focus first, then fill in graph order) and the edges around them.
fn graph_detail(section: &mut Section, state: &State, graph: &Graph, focus: &[String]) {
    let mut selected: Vec<_> = graph
        .nodes
        .iter()
        .filter(|n| focus.contains(&n.id))
        .take(NODE_LIMIT)
        .collect();
    for node in &graph.nodes {
        if selected.len() >= NODE_LIMIT {
            break;
        }
        if !selected.iter().any(|s| std::ptr::eq(*s, node)) {
            selected.push(node);
        }
    }
    for node in &selected {
        let status = node
            .status
            .as_ref()
            .map_or(String::new(), |s| format!(" [{}]", collapse(s)));
        section.line(format!(
            "  - Focus node `{}`{status}: {}",
            node.id,
            collapse(&node.title)
        ));
        section.line(format!("    purpose: {}", collapse(&node.purpose)));
        for (label, value) in [("mechanism", &node.mechanism), ("metaphor", &node.metaphor)] {
            if let Some(value) = value {
                section.line(format!("    {label}: {}", collapse(value)));
            }
        }
        if !node.code_refs.is_empty() {
            section.line(format!("    code refs: {}", code_refs(&node.code_refs)));
        }
    }
    omission(
        section,
        "  ",
        graph.nodes.len(),
        selected.len(),
        "graph nodes",
    );

    let active_edges = state
        .graph_frontier
        .as_ref()
        .map_or(&[][..], |f| f.active_edge_ids.as_slice());
    let touches = |id: &str| selected.iter().any(|n| n.id == id);
    let edges: Vec<_> = graph
        .edges
        .iter()
        .filter(|e| {
            e.id.as_ref().is_some_and(|id| active_edges.contains(id))
                || touches(&e.source_id)
                || touches(&e.target_id)
        })
        .collect();
    for edge in edges.iter().take(EDGE_LIMIT) {
        let id = edge
            .id
            .as_ref()
            .map_or(String::new(), |id| format!(" `{id}`"));
        let label = edge
            .label
            .as_ref()
            .map_or(String::new(), |l| format!(" [{}]", collapse(l)));
        let mechanism = edge
            .mechanism
            .as_ref()
            .map_or(String::new(), |m| format!("; {}", collapse(m)));
        section.line(format!(
            "  - Edge{id}{label}: `{}` -> `{}` ({}){mechanism}{}",
            edge.source_id,
            edge.target_id,
            collapse(&edge.kind),
            ref_suffix(&edge.code_refs)
        ));
    }
    omission(
        section,
        "  ",
        edges.len(),
        EDGE_LIMIT,
        "focused graph edges",
    );
}

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
            "- Stale: files it cites changed since it was written: {}; re-gather before resuming",
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
