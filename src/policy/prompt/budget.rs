//! The character budget: which parts are left out, in [`CUT_ORDER`], until the fragment fits
//! the ceiling; then whole lines, longest first; and the final line that says what went and
//! which command fetches it.

use serde::Serialize;

use crate::policy::freshness::Staleness;
use crate::state::model::ListTotals;
use crate::state::model::State;

use super::sections::Section;
use super::sections::sections;

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
pub(super) const CUT_ORDER: [PromptPart; 10] = [
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
    pub(super) fn size(self, state: &State, totals: ListTotals) -> usize {
        let present = |yes: bool| usize::from(yes);
        match self {
            PromptPart::RecentEvidence => totals.evidence,
            PromptPart::RecentObservations => totals.observations,
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
    pub(super) fn label(self) -> &'static str {
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

    /// `<count> <label> (<fetch>)`, the fetch command in backticks, without the count for single
    /// records.
    pub(super) fn describe(self, count: usize) -> String {
        match self {
            PromptPart::Mode | PromptPart::Scratch | PromptPart::Churn => {
                format!("{} (`{}`)", self.label(), self.fetch())
            }
            _ => format!("{count} {} (`{}`)", self.label(), self.fetch()),
        }
    }

    /// The command that fetches it.
    pub(super) fn fetch(self) -> &'static str {
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

/// Renders the fragment within `max_chars` Unicode scalar values. Below
/// [`MIN_MAX_CHARS`](super::MIN_MAX_CHARS) even the fixed text may not fit; then the text is
/// empty rather than over the ceiling.
pub fn render(state: &State, staleness: Option<&Staleness>, max_chars: usize) -> Rendered {
    render_counted(state, ListTotals::of(state), staleness, max_chars)
}

/// [`render`] for a state whose observation and evidence lists may hold only the newest
/// records (at least as many as the fragment shows); `totals` counts them all.
pub fn render_counted(
    state: &State,
    totals: ListTotals,
    staleness: Option<&Staleness>,
    max_chars: usize,
) -> Rendered {
    let applicable: Vec<PromptPart> = CUT_ORDER
        .into_iter()
        .filter(|part| part.size(state, totals) > 0)
        .collect();
    for level in 0..=applicable.len() {
        let cuts = &applicable[..level];
        let text = assemble(
            &sections(state, totals, staleness, cuts),
            &left_out_line(state, totals, cuts, 0, max_chars),
        );
        if char_count(&text) <= max_chars {
            return finish(state, totals, text, cuts, 0, max_chars);
        }
    }
    // Last resort: the kept sections alone are too long (huge id lists or texts). Drop whole
    // lines, longest first, never a heading or the fixed text.
    let mut kept = sections(state, totals, staleness, &applicable);
    let mut dropped = 0;
    loop {
        let text = assemble(
            &kept,
            &left_out_line(state, totals, &applicable, dropped, max_chars),
        );
        if char_count(&text) <= max_chars {
            return finish(state, totals, text, &applicable, dropped, max_chars);
        }
        if !drop_longest_line(&mut kept) {
            return finish(
                state,
                totals,
                String::new(),
                &applicable,
                dropped,
                max_chars,
            );
        }
        dropped += 1;
    }
}

/// The heading of the code map section.
const CODE_MAP_HEADING: &str = "## Code map (most central files first; more: `epiphany map`)";

/// `rendered` with a code map section before its closing tag holding as many of `code_map`'s
/// file blocks (best first, each a path line and its definitions' lines) as fit in the room
/// its ceiling leaves. The map only takes room nothing else wanted: when anything was left
/// out, or not even one block fits, `rendered` stays as it is.
pub fn with_code_map(mut rendered: Rendered, code_map: &[String]) -> Rendered {
    if !rendered.left_out.is_empty() || rendered.text.is_empty() {
        return rendered;
    }
    let closing = "\n</epiphany_state>";
    let Some(body) = rendered.text.strip_suffix(closing) else {
        return rendered;
    };
    let mut section = format!("\n\n{CODE_MAP_HEADING}");
    let mut blocks = 0;
    for block in code_map {
        let grown = format!("{section}\n{}", block.trim_end());
        if rendered.chars + char_count(&grown) > rendered.max_chars {
            break;
        }
        section = grown;
        blocks += 1;
    }
    if blocks == 0 {
        return rendered;
    }
    rendered.text = format!("{body}{section}{closing}");
    rendered.chars = char_count(&rendered.text);
    rendered
}

fn finish(
    state: &State,
    totals: ListTotals,
    text: String,
    cuts: &[PromptPart],
    dropped_lines: usize,
    max_chars: usize,
) -> Rendered {
    let mut left_out: Vec<LeftOut> = cuts
        .iter()
        .map(|part| LeftOut {
            part: *part,
            count: part.size(state, totals),
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
fn left_out_line(
    state: &State,
    totals: ListTotals,
    cuts: &[PromptPart],
    dropped: usize,
    max_chars: usize,
) -> String {
    if cuts.is_empty() && dropped == 0 {
        return String::new();
    }
    let mut parts: Vec<String> = cuts
        .iter()
        .map(|part| part.describe(part.size(state, totals)))
        .collect();
    if dropped > 0 {
        parts.push(PromptPart::Lines.describe(dropped));
    }
    format!(
        "Left out to stay within {max_chars} characters: {}. The whole state: `epiphany show`.",
        parts.join("; ")
    )
}

/// Wraps the sections: joined by blank lines, the left-out line last, one trailing newline.
fn assemble(sections: &[Section], left_out: &str) -> String {
    let mut body: Vec<String> = sections.iter().map(|s| s.lines.join("\n")).collect();
    if !left_out.is_empty() {
        body.push(left_out.to_owned());
    }
    format!("<epiphany_state>{}\n</epiphany_state>", body.join("\n\n"))
}
