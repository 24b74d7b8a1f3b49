//! The `<epiphany_state>` prompt fragment (`behavior.md` §5): the state projected into a bounded
//! block of text an agent host injects into the model's context.
//!
//! Owns the section order, the per-section item limits, the line formats, the omission lines,
//! the fixed intro and operating-discipline text, and the hard character ceiling. Agent hosts
//! silently cut injected text, so the ceiling is never exceeded: lower-priority parts are left
//! out first (newest evidence and observations, planning, mode, scratch, churn, invariants,
//! subgoals, graph detail, checkpoint detail), the objective, the checkpoint and the frontier
//! last, and a final line says what was left out and which command fetches it. Lines are never
//! cut in the middle. Pure: the same state and ceiling always give the same text.

use serde::Serialize;

use crate::policy::freshness::Staleness;
use crate::policy::text::collapse;
use crate::policy::text::uniq_append;
use crate::state::model::CodeRef;
use crate::state::model::Graph;
use crate::state::model::GraphKind;
use crate::state::model::ModeKind;
use crate::state::model::State;
use crate::state::paths::slash_key;

/// The ceiling `epiphany prompt` uses unless told otherwise (Claude Code cuts at 10,000).
pub const DEFAULT_MAX_CHARS: usize = 9000;
/// The smallest ceiling that always leaves room for the intro, the operating discipline and
/// the left-out line.
pub const MIN_MAX_CHARS: usize = 2500;

const SUBGOAL_LIMIT: usize = 4;
const INVARIANT_LIMIT: usize = 4;
const NODE_LIMIT: usize = 3;
const EDGE_LIMIT: usize = 2;
const LINK_LIMIT: usize = 3;
const OBSERVATION_LIMIT: usize = 3;
const EVIDENCE_LIMIT: usize = 3;
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

/// A part of the fragment that can be left out to respect the ceiling, in the order they go.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum PromptPart {
    /// The recent evidence section.
    RecentEvidence,
    /// The recent observations section.
    RecentObservations,
    /// The planning section.
    Planning,
    /// The mode section.
    Mode,
    /// The scratch section.
    Scratch,
    /// The churn section.
    Churn,
    /// The invariants section.
    Invariants,
    /// The subgoals section.
    Subgoals,
    /// Graph nodes, edges and links (frontier and graph checkpoint lines stay).
    GraphDetail,
    /// The investigation checkpoint's open questions and evidence ids.
    CheckpointDetail,
    /// Whole lines of what remained, longest first.
    Lines,
}

/// Parts left out, lowest priority first. `Lines` is the last resort, not a section.
const CUT_ORDER: [PromptPart; 10] = [
    PromptPart::RecentEvidence,
    PromptPart::RecentObservations,
    PromptPart::Planning,
    PromptPart::Mode,
    PromptPart::Scratch,
    PromptPart::Churn,
    PromptPart::Invariants,
    PromptPart::Subgoals,
    PromptPart::GraphDetail,
    PromptPart::CheckpointDetail,
];

impl PromptPart {
    /// How many records the part holds in `state` (0: leaving it out changes nothing).
    fn size(self, state: &State) -> usize {
        let present = |yes: bool| usize::from(yes);
        match self {
            PromptPart::RecentEvidence => state.recent_evidence.len(),
            PromptPart::RecentObservations => state.observations.len(),
            PromptPart::Planning => {
                let p = &state.planning;
                p.captures.len()
                    + p.backlog_items.len()
                    + p.roadmap_streams.len()
                    + p.objective_drafts.len()
                    + present(p.workspace_root.is_some())
            }
            PromptPart::Mode => present(state.mode.is_some()),
            PromptPart::Scratch => present(state.scratch.as_ref().is_some_and(|s| {
                s.summary.is_some() || s.hypothesis.is_some() || s.next_probe.is_some()
            })),
            PromptPart::Churn => present(state.churn.is_some()),
            PromptPart::Invariants => state.invariants.len(),
            PromptPart::Subgoals => state.subgoals.len(),
            PromptPart::GraphDetail => {
                let g = &state.graphs;
                g.architecture.nodes.len()
                    + g.architecture.edges.len()
                    + g.dataflow.nodes.len()
                    + g.dataflow.edges.len()
                    + g.links.len()
            }
            PromptPart::CheckpointDetail => state
                .investigation_checkpoint
                .as_ref()
                .map_or(0, |c| c.open_questions.len() + c.evidence_ids.len()),
            PromptPart::Lines => 0,
        }
    }

    /// What the left-out line calls it.
    fn label(self) -> &'static str {
        match self {
            PromptPart::RecentEvidence => "evidence records",
            PromptPart::RecentObservations => "observations",
            PromptPart::Planning => "planning records",
            PromptPart::Mode => "mode",
            PromptPart::Scratch => "scratch",
            PromptPart::Churn => "churn",
            PromptPart::Invariants => "invariants",
            PromptPart::Subgoals => "subgoals",
            PromptPart::GraphDetail => "graph nodes, edges and links",
            PromptPart::CheckpointDetail => "checkpoint open questions and evidence ids",
            PromptPart::Lines => "more lines",
        }
    }

    /// `<count> <label> (`<fetch>`)`, without the count for single records.
    fn describe(self, count: usize) -> String {
        match self {
            PromptPart::Mode | PromptPart::Scratch | PromptPart::Churn => {
                format!("{} (`{}`)", self.label(), self.fetch())
            }
            _ => format!("{count} {} (`{}`)", self.label(), self.fetch()),
        }
    }

    /// The command that fetches it.
    fn fetch(self) -> &'static str {
        match self {
            PromptPart::RecentEvidence => "epiphany context --evidence ID",
            PromptPart::RecentObservations => "epiphany context --observation ID",
            PromptPart::Planning => "epiphany planning",
            PromptPart::Mode | PromptPart::Scratch | PromptPart::Invariants => "epiphany show",
            PromptPart::Churn | PromptPart::Subgoals => "epiphany scene",
            PromptPart::GraphDetail => "epiphany graph --frontier",
            PromptPart::CheckpointDetail => "epiphany context",
            PromptPart::Lines => "epiphany show",
        }
    }
}

/// One part that was left out.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct LeftOut {
    /// Which part.
    pub part: PromptPart,
    /// How many records (or lines, for `lines`) it held.
    pub count: usize,
    /// The command that fetches it.
    pub fetch: String,
}

/// The rendered fragment.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct Rendered {
    /// The `<epiphany_state>…</epiphany_state>` text.
    pub text: String,
    /// Its length in Unicode scalar values.
    pub chars: usize,
    /// The ceiling it respects.
    pub max_chars: usize,
    /// What was left out to respect it, in the order it went.
    pub left_out: Vec<LeftOut>,
}

/// Renders the fragment within `max_chars` Unicode scalar values. Below [`MIN_MAX_CHARS`]
/// even the fixed text may not fit; then the text is empty rather than over the ceiling.
pub fn render(state: &State, staleness: Option<&Staleness>, max_chars: usize) -> Rendered {
    let applicable: Vec<PromptPart> = CUT_ORDER
        .into_iter()
        .filter(|part| part.size(state) > 0)
        .collect();
    for level in 0..=applicable.len() {
        let cuts = &applicable[..level];
        let text = assemble(
            &sections(state, staleness, cuts),
            &left_out_line(state, cuts, 0, max_chars),
        );
        if char_count(&text) <= max_chars {
            return finish(state, text, cuts, 0, max_chars);
        }
    }
    // Last resort: the kept sections alone are too long (huge id lists or texts). Drop whole
    // lines, longest first, never a heading or the fixed text.
    let mut kept = sections(state, staleness, &applicable);
    let mut dropped = 0;
    loop {
        let text = assemble(
            &kept,
            &left_out_line(state, &applicable, dropped, max_chars),
        );
        if char_count(&text) <= max_chars {
            return finish(state, text, &applicable, dropped, max_chars);
        }
        if !drop_longest_line(&mut kept) {
            return finish(state, String::new(), &applicable, dropped, max_chars);
        }
        dropped += 1;
    }
}

fn finish(
    state: &State,
    text: String,
    cuts: &[PromptPart],
    dropped_lines: usize,
    max_chars: usize,
) -> Rendered {
    let mut left_out: Vec<LeftOut> = cuts
        .iter()
        .map(|part| LeftOut {
            part: *part,
            count: part.size(state),
            fetch: part.fetch().to_owned(),
        })
        .collect();
    if dropped_lines > 0 {
        left_out.push(LeftOut {
            part: PromptPart::Lines,
            count: dropped_lines,
            fetch: PromptPart::Lines.fetch().to_owned(),
        });
    }
    Rendered {
        chars: char_count(&text),
        text,
        max_chars,
        left_out,
    }
}

fn char_count(text: &str) -> usize {
    text.chars().count()
}

/// Removes the longest non-heading line of the non-fixed sections (the last of equals);
/// `false` when there is none left.
fn drop_longest_line(sections: &mut [Section]) -> bool {
    let mut best: Option<(usize, usize, usize)> = None;
    for (s, section) in sections.iter().enumerate().filter(|(_, s)| !s.fixed) {
        for (l, line) in section.lines.iter().enumerate().skip(1) {
            let length = line.chars().count();
            if best.is_none_or(|(longest, _, _)| length >= longest) {
                best = Some((length, s, l));
            }
        }
    }
    let Some((_, s, l)) = best else {
        return false;
    };
    sections[s].lines.remove(l);
    true
}

/// The final line naming what was left out, or nothing when nothing was.
fn left_out_line(state: &State, cuts: &[PromptPart], dropped: usize, max_chars: usize) -> String {
    if cuts.is_empty() && dropped == 0 {
        return String::new();
    }
    let mut parts: Vec<String> = cuts
        .iter()
        .map(|part| part.describe(part.size(state)))
        .collect();
    if dropped > 0 {
        parts.push(PromptPart::Lines.describe(dropped));
    }
    format!(
        "Left out to stay within {max_chars} characters: {}. The whole state: `epiphany show`.",
        parts.join("; ")
    )
}

/// One section: a heading line and its lines. Fixed sections (intro, discipline) never lose a
/// line.
struct Section {
    lines: Vec<String>,
    fixed: bool,
}

impl Section {
    fn new(heading: &str) -> Section {
        Section {
            lines: vec![heading.to_owned()],
            fixed: false,
        }
    }

    fn fixed(text: &str) -> Section {
        Section {
            lines: text.lines().map(str::to_owned).collect(),
            fixed: true,
        }
    }

    fn line(&mut self, line: String) {
        self.lines.push(line);
    }
}

/// Wraps the sections: joined by blank lines, the left-out line last, one trailing newline.
fn assemble(sections: &[Section], left_out: &str) -> String {
    let mut body: Vec<String> = sections.iter().map(|s| s.lines.join("\n")).collect();
    if !left_out.is_empty() {
        body.push(left_out.to_owned());
    }
    format!("<epiphany_state>{}\n</epiphany_state>", body.join("\n\n"))
}

/// Every section present in `state`, in §5.2 order, without the parts in `cuts`.
fn sections(state: &State, staleness: Option<&Staleness>, cuts: &[PromptPart]) -> Vec<Section> {
    let keep = |part| !cuts.contains(&part);
    let focus = focus_ids(state);
    let mut sections = vec![
        Section::fixed(INTRO),
        overview(state, &focus),
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
    if keep(PromptPart::Scratch) && PromptPart::Scratch.size(state) > 0 {
        sections.push(scratch(state));
    }
    if keep(PromptPart::RecentObservations) && !state.observations.is_empty() {
        sections.push(observations(state));
    }
    if keep(PromptPart::RecentEvidence) && !state.recent_evidence.is_empty() {
        sections.push(evidence(state));
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

/// An inline id list (§5.5): each id in backticks, joined by `, `.
pub fn inline_ids(ids: &[String]) -> String {
    ids.iter()
        .map(|id| format!("`{id}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// A code ref as the prompt writes it (§5.5): `` `path:start-end` (symbol: s; note) ``.
pub fn code_ref(r: &CodeRef) -> String {
    let mut out = format!("`{}", slash_key(&r.path));
    match (r.start_line, r.end_line) {
        (Some(start), Some(end)) if start != end => out.push_str(&format!(":{start}-{end}")),
        (Some(start), _) => out.push_str(&format!(":{start}")),
        (None, _) => {}
    }
    out.push('`');
    let mut extras = Vec::new();
    if let Some(symbol) = &r.symbol {
        extras.push(format!("symbol: {}", collapse(symbol)));
    }
    if let Some(note) = &r.note {
        extras.push(collapse(note));
    }
    if !extras.is_empty() {
        out.push_str(&format!(" ({})", extras.join("; ")));
    }
    out
}

/// At most two refs, then `... n more refs`.
fn code_refs(refs: &[CodeRef]) -> String {
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

fn overview(state: &State, focus: &[String]) -> Section {
    let mut section = Section::new("## Overview");
    section.line(format!("- Revision: {}", state.revision));
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

fn planning(state: &State) -> Section {
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
            "- Objective draft `{}` [{}]: {}",
            draft.id,
            collapse(&draft.status),
            collapse(&draft.title)
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
            "- Backlog `{}` [{} / {} / {}]: {}",
            item.id,
            collapse(&item.status),
            collapse(&item.priority.value),
            collapse(&item.horizon),
            collapse(&item.title)
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
            "- Capture `{}` [{} via {}]: {}",
            capture.id,
            collapse(&capture.status),
            collapse(&capture.source.kind),
            collapse(&capture.title)
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

fn subgoals(state: &State) -> Section {
    let mut section = Section::new("## Subgoals");
    for subgoal in state.subgoals.iter().take(SUBGOAL_LIMIT) {
        let active = if state.active_subgoal_id.as_deref() == Some(subgoal.id.as_str()) {
            "; active"
        } else {
            ""
        };
        section.line(format!(
            "- `{}` [{}{active}]: {}",
            subgoal.id,
            collapse(&subgoal.status),
            collapse(&subgoal.title)
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

fn invariants(state: &State) -> Section {
    let mut section = Section::new("## Invariants");
    for invariant in state.invariants.iter().take(INVARIANT_LIMIT) {
        section.line(format!(
            "- `{}` [{}]: {}",
            invariant.id,
            collapse(&invariant.status),
            collapse(&invariant.description)
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

fn investigation_checkpoint(state: &State, staleness: Option<&Staleness>, detail: bool) -> Section {
    let mut section = Section::new("## Investigation Checkpoint");
    let Some(checkpoint) = &state.investigation_checkpoint else {
        return section;
    };
    section.line(format!("- Id: `{}`", checkpoint.checkpoint_id));
    if let Some(staleness) = staleness.filter(|s| !s.checkpoint_changed_paths.is_empty()) {
        section.line(format!(
            "- Stale: files it cites changed since it was written: {}; re-gather before resuming",
            backticked(&staleness.checkpoint_changed_paths)
        ));
    }
    section.line(format!("- Kind: {}", collapse(&checkpoint.kind)));
    section.line(format!(
        "- Disposition: {}",
        checkpoint.disposition.as_str()
    ));
    section.line(format!("- Focus: {}", collapse(&checkpoint.focus)));
    if let Some(summary) = &checkpoint.summary {
        section.line(format!("- Summary: {}", collapse(summary)));
    }
    if let Some(next) = &checkpoint.next_action {
        section.line(format!("- Next action: {}", collapse(next)));
    }
    if let Some(turn) = &checkpoint.captured_at_turn_id {
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

fn scratch(state: &State) -> Section {
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

fn observations(state: &State) -> Section {
    let mut section = Section::new("## Recent Observations");
    for o in state.observations.iter().take(OBSERVATION_LIMIT) {
        section.line(format!(
            "- `{}` [{} via {}]: {}",
            o.id,
            collapse(&o.status),
            collapse(&o.source_kind),
            collapse(&o.summary)
        ));
        if !o.evidence_ids.is_empty() {
            section.line(format!("  evidence: {}", inline_ids(&o.evidence_ids)));
        }
        if !o.code_refs.is_empty() {
            section.line(format!("  code refs: {}", code_refs(&o.code_refs)));
        }
    }
    omission(
        &mut section,
        "",
        state.observations.len(),
        OBSERVATION_LIMIT,
        "observations",
    );
    section
}

fn evidence(state: &State) -> Section {
    let mut section = Section::new("## Recent Evidence");
    for e in state.recent_evidence.iter().take(EVIDENCE_LIMIT) {
        section.line(format!(
            "- `{}` [{} / {}]: {}{}",
            e.id,
            collapse(&e.kind),
            collapse(&e.status),
            collapse(&e.summary),
            ref_suffix(&e.code_refs)
        ));
    }
    omission(
        &mut section,
        "",
        state.recent_evidence.len(),
        EVIDENCE_LIMIT,
        "evidence records",
    );
    section
}

fn churn(state: &State, staleness: Option<&Staleness>) -> Section {
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

fn mode(state: &State) -> Section {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::fixtures;
    use crate::state::model::ChurnState;
    use crate::state::model::Disposition;
    use crate::state::model::EvidenceRecord;
    use crate::state::model::GraphCheckpoint;
    use crate::state::model::GraphFrontier;
    use crate::state::model::GraphNode;
    use crate::state::model::Invariant;
    use crate::state::model::InvestigationCheckpoint;
    use crate::state::model::ModeState;
    use crate::state::model::Observation;
    use crate::state::model::Subgoal;

    fn node(id: &str, refs: usize) -> GraphNode {
        GraphNode {
            title: format!("{id}  title"),
            purpose: "does\tthings".into(),
            status: Some("verified".into()),
            code_refs: (0..refs)
                .map(|i| CodeRef {
                    start_line: Some(10),
                    end_line: Some(20 + i as u32),
                    symbol: Some("run".into()),
                    ..CodeRef::to_path(format!("src\\{id}.rs"))
                })
                .collect(),
            ..fixtures::node(id, &[])
        }
    }

    fn observation(i: usize, summary: &str) -> Observation {
        Observation {
            id: format!("obs-{i}"),
            summary: summary.into(),
            source_kind: "test".into(),
            status: "ok".into(),
            code_refs: vec![],
            evidence_ids: vec![format!("ev-{i}")],
        }
    }

    fn checkpoint(questions: usize) -> InvestigationCheckpoint {
        InvestigationCheckpoint {
            open_questions: (0..questions).map(|i| format!("question {i}?")).collect(),
            evidence_ids: vec!["ev-0".into()],
            ..fixtures::checkpoint(Disposition::RegatherRequired, &["src/store.rs"])
        }
    }

    /// A state with more of everything than the prompt shows.
    fn rich(records: usize, text: &str) -> State {
        let mut state = State {
            revision: 12,
            objective: Some("ship   the  store".into()),
            active_subgoal_id: Some("s1".into()),
            subgoals: (0..6)
                .map(|i| Subgoal {
                    id: format!("s{i}"),
                    title: format!("subgoal {i}"),
                    status: "open".into(),
                    summary: None,
                })
                .collect(),
            invariants: (0..5)
                .map(|i| Invariant {
                    id: format!("i{i}"),
                    description: format!("invariant {i}"),
                    status: "ok".into(),
                    rationale: None,
                })
                .collect(),
            investigation_checkpoint: Some(checkpoint(2)),
            observations: (0..records).map(|i| observation(i, text)).collect(),
            recent_evidence: (0..records)
                .map(|i| EvidenceRecord {
                    id: format!("ev-{i}"),
                    kind: "test".into(),
                    status: "pass".into(),
                    summary: text.into(),
                    code_refs: vec![],
                })
                .collect(),
            churn: Some(ChurnState {
                understanding_status: "mapped".into(),
                diff_pressure: "low".into(),
                graph_freshness: None,
                warning: None,
                unexplained_writes: Some(0),
            }),
            mode: Some(ModeState {
                name: "build".into(),
                kind: Some(ModeKind::Plan),
            }),
            ..State::default()
        };
        state.graphs.architecture.nodes = (0..5).map(|i| node(&format!("n{i}"), 3)).collect();
        state.graphs.architecture.edges = (1..5)
            .map(|i| fixtures::edge(Some(&format!("e{i}")), "n0", &format!("n{i}"), "calls"))
            .collect();
        state.graph_frontier = Some(GraphFrontier {
            active_node_ids: vec!["n4".into()],
            dirty_paths: (0..6).map(|i| format!("src/d{i}.rs")).collect(),
            ..GraphFrontier::default()
        });
        state.graph_checkpoint = Some(GraphCheckpoint {
            checkpoint_id: "g1".into(),
            graph_revision: 3,
            summary: None,
            frontier_node_ids: vec!["n0".into(), "n4".into()],
            open_question_ids: vec![],
            open_gap_ids: vec![],
        });
        state
    }

    fn has_line(text: &str, line: &str) -> bool {
        text.lines().any(|l| l == line)
    }

    #[test]
    fn staleness_shows_in_the_graph_checkpoint_and_churn_sections() {
        let mut state = rich(1, "green");
        state.investigation_checkpoint = Some(checkpoint(0));
        state.churn = Some(ChurnState {
            understanding_status: "mapped".into(),
            diff_pressure: "low".into(),
            graph_freshness: Some("fresh".into()),
            warning: None,
            unexplained_writes: None,
        });
        let staleness = Staleness {
            fresh: false,
            stale_reasons: vec![],
            node_changed_paths: vec!["src/a.rs".into()],
            stale_node_ids: vec!["a".into()],
            checkpoint_changed_paths: vec!["src/c.rs".into()],
            broken_refs: vec!["src/gone.rs (missing)".into()],
            note: "stale".into(),
        };
        let text = render(&state, Some(&staleness), 100_000).text;
        assert!(text.contains("- Stale: files changed since the nodes citing them were written: `src/a.rs` (nodes `a`)"), "{text}");
        assert!(
            text.contains("- Broken code refs: `src/gone.rs (missing)`"),
            "{text}"
        );
        assert!(
            text.contains("- Stale: files it cites changed since it was written: `src/c.rs`"),
            "{text}"
        );
        assert!(
            text.contains("- Graph freshness: fresh (as recorded; the work tree has moved since"),
            "{text}"
        );
        let fresh = Staleness {
            node_changed_paths: vec![],
            stale_node_ids: vec![],
            checkpoint_changed_paths: vec![],
            broken_refs: vec![],
            ..staleness
        };
        assert_eq!(
            render(&state, Some(&fresh), 100_000).text,
            render(&state, None, 100_000).text
        );
    }

    #[test]
    fn minimal_state_wraps_intro_overview_and_discipline() {
        let rendered = render(&State::default(), None, DEFAULT_MAX_CHARS);
        let text = &rendered.text;
        assert!(text.starts_with("<epiphany_state>## Epiphany State\n"));
        assert!(text.ends_with("rehydrate from `epiphany prompt`.\n</epiphany_state>"));
        assert!(text.contains("\n\n## Overview\n- Revision: 0\n\n## Operating Discipline\n"));
        assert!(rendered.left_out.is_empty());
        assert_eq!(rendered.chars, text.chars().count());
    }

    #[test]
    fn limits_omission_lines_and_line_formats() {
        let text = render(&rich(5, "all  green"), None, 100_000).text;
        for line in [
            "- Objective: ship the store",
            "- Active subgoal: `s1`",
            "- Frontier focus: `n4`, `n0`",
            "- `s1` [open; active]: subgoal 1",
            "- ... 2 more subgoals not shown",
            "- ... 1 more invariants not shown",
            "- Dirty paths: `src/d0.rs`, `src/d1.rs`, `src/d2.rs`, `src/d3.rs`; ... 2 more dirty paths not shown",
            "- Checkpoint: `g1` (graph revision 3)",
            "- Architecture graph: 5 nodes, 4 edges",
            "  - Focus node `n0` [verified]: n0 title",
            "    purpose: does things",
            "    code refs: `src/n0.rs:10-20` (symbol: run), `src/n0.rs:10-21` (symbol: run), ... 1 more refs",
            "  - ... 2 more graph nodes not shown",
            "  - Edge `e1`: `n0` -> `n1` (calls)",
            "  - ... 2 more focused graph edges not shown",
            "- Disposition: regather_required",
            "- Open questions: question 0? | question 1?",
            "- Evidence ids: `ev-0`",
            "- Code refs: `src/store.rs`",
            "- `obs-0` [ok via test]: all green",
            "  evidence: `ev-0`",
            "- ... 2 more observations not shown",
            "- `ev-0` [test / pass]: all green",
            "- ... 2 more evidence records not shown",
            "- Unexplained writes: 0",
            "- Name: build (Plan)",
        ] {
            assert!(has_line(&text, line), "missing {line:?} in\n{text}");
        }
        // Focus nodes come first (n4 then n0 in graph order), then fill-ins.
        let focus: Vec<&str> = text
            .lines()
            .filter(|l| l.starts_with("  - Focus node"))
            .collect();
        assert_eq!(focus.len(), NODE_LIMIT);
        assert!(focus[0].contains("`n0`") && focus[1].contains("`n4`"));
        let order: Vec<usize> = [
            "## Subgoals",
            "## Invariants",
            "## Graphs",
            "## Investigation Checkpoint",
            "## Recent Observations",
            "## Recent Evidence",
            "## Churn",
            "## Mode",
        ]
        .iter()
        .map(|heading| text.find(heading).expect(heading))
        .collect();
        assert!(order.windows(2).all(|w| w[0] < w[1]), "section order");
    }

    #[test]
    fn ceiling_drops_low_priority_parts_and_says_so() {
        let long = "a long finding ".repeat(100);
        let state = rich(300, &long);
        let full = render(&state, None, usize::MAX);
        assert!(
            full.chars > DEFAULT_MAX_CHARS,
            "the test state must overflow"
        );
        let rendered = render(&state, None, 3000);
        assert!(rendered.chars <= 3000, "{} chars", rendered.chars);
        let text = &rendered.text;
        assert!(text.contains("- Objective: ship the store"));
        assert!(text.contains("## Operating Discipline"));
        assert!(text.contains("- Frontier active nodes: `n4`"));
        assert!(text.contains("- Next action: rerun the probe"));
        assert!(!text.contains("## Recent Evidence"));
        let last = text
            .trim_end_matches("\n</epiphany_state>")
            .lines()
            .last()
            .expect("a last line");
        assert!(last.starts_with("Left out to stay within 3000 characters: 300 evidence records (`epiphany context --evidence ID`); 300 observations (`epiphany context --observation ID`)"), "{last}");
        assert_eq!(rendered.left_out[0].part, PromptPart::RecentEvidence);
        // Nothing is cut mid-line: every line is a line of the full rendering or the last one.
        for line in text.lines().filter(|l| *l != last) {
            assert!(full.text.lines().any(|f| f == line), "{line:?} was cut");
        }
    }

    #[test]
    fn parts_absent_from_the_state_are_not_reported() {
        let mut state = rich(300, &"x".repeat(2000));
        state.mode = None;
        let rendered = render(&state, None, DEFAULT_MAX_CHARS);
        assert!(rendered.chars <= DEFAULT_MAX_CHARS);
        assert!(rendered.left_out.iter().all(|l| l.part != PromptPart::Mode));
    }

    #[test]
    fn oversized_lines_go_longest_first_and_tiny_ceilings_give_nothing() {
        let mut state = rich(1, "short");
        state.investigation_checkpoint = Some(checkpoint(0));
        if let Some(frontier) = state.graph_frontier.as_mut() {
            frontier.open_gap_ids = (0..2000).map(|i| format!("gap-{i}")).collect();
        }
        let rendered = render(&state, None, MIN_MAX_CHARS);
        assert!(rendered.chars <= MIN_MAX_CHARS);
        assert!(!rendered.text.contains("gap-1999"));
        assert!(rendered.text.contains("- Next action: rerun the probe"));
        assert_eq!(
            rendered.left_out.last().map(|l| l.part),
            Some(PromptPart::Lines)
        );
        assert!(rendered.text.contains("more lines (`epiphany show`)"));
        let tiny = render(&state, None, 100);
        assert_eq!(tiny.text, "");
        assert_eq!(tiny.chars, 0);
    }

    #[test]
    fn worst_case_still_fits_the_minimum_ceiling() {
        let mut state = rich(10_000, "y");
        state.scratch = Some(crate::state::model::ScratchPad {
            summary: Some("z".repeat(5000)),
            ..Default::default()
        });
        state.objective = Some("o".repeat(5000));
        state.planning.workspace_root = Some("/ws".into());
        state.invariants = (0..10_000)
            .map(|i| Invariant {
                id: format!("i{i}"),
                description: "d".into(),
                status: "ok".into(),
                rationale: None,
            })
            .collect();
        if let Some(checkpoint) = state.investigation_checkpoint.as_mut() {
            checkpoint.open_questions = (0..10_000).map(|i| format!("q{i}")).collect();
        }
        let rendered = render(&state, None, MIN_MAX_CHARS);
        assert!(!rendered.text.is_empty());
        assert!(rendered.chars <= MIN_MAX_CHARS);
        assert!(rendered.text.contains("## Operating Discipline"));
        let every_part = render(&state, None, 0);
        assert_eq!(every_part.text, "");
        assert_eq!(every_part.left_out.len(), CUT_ORDER.len() + 1);
    }
}
