//! What an agent host gets from its session hooks: at session start, the reorientation verdict
//! and the bounded `<epiphany_state>` block together under the host's injection cap; before
//! compaction, the checkpoint directive (`behavior.md` §11.6, in our own words).

use crate::policy::freshness::Staleness;
use crate::policy::prompt::MIN_MAX_CHARS;
use crate::policy::prompt::render;
use crate::policy::reorient::ReorientAction;
use crate::policy::reorient::Reorientation;
use crate::state::model::State;

/// Claude Code cuts hook context at 10,000 characters.
pub const HOST_INJECTION_CAP: usize = 10_000;

/// The text to inject at session start: the verdict first (it says what to do now), then the
/// state block, all within `cap` Unicode characters. Without a state, the verdict alone.
pub fn session_start_context(
    state: Option<&State>,
    verdict: &Reorientation,
    staleness: Option<&Staleness>,
    cap: usize,
) -> String {
    let verdict_block = verdict_block(verdict);
    let used = verdict_block.chars().count();
    let Some(state) = state else {
        return truncate_lines(&verdict_block, cap);
    };
    let room = cap.saturating_sub(used + 1);
    if room < MIN_MAX_CHARS {
        return truncate_lines(&verdict_block, cap);
    }
    let rendered = render(state, staleness, room);
    format!("{verdict_block}\n{}", rendered.text)
}

fn verdict_block(verdict: &Reorientation) -> String {
    let action = match verdict.action {
        ReorientAction::Resume => "resume",
        ReorientAction::Regather => "regather",
    };
    let reasons: Vec<&str> = verdict.reasons.iter().map(|r| r.as_str()).collect();
    let mut lines = vec![
        "<epiphany_reorient>".to_owned(),
        format!("Verdict: {action}. {}", verdict.note),
        format!("Next action: {}", verdict.next_action),
        format!("Reasons: {}", reasons.join(", ")),
    ];
    for (label, paths) in [
        (
            "Checkpoint files changed since it was written",
            &verdict.checkpoint_changed_paths,
        ),
        (
            "Checkpoint files dirty in the index or frontier",
            &verdict.checkpoint_dirty_paths,
        ),
        (
            "Frontier nodes citing changed files",
            &verdict.active_frontier_node_ids,
        ),
    ] {
        if !paths.is_empty() {
            lines.push(format!("{label}: {}", paths.join(", ")));
        }
    }
    if action == "regather" {
        lines.push(
            "Re-read the cited code before editing; `epiphany freshness` lists what changed and `epiphany context` fetches the records.".to_owned(),
        );
    }
    lines.push("</epiphany_reorient>".to_owned());
    lines.join("\n") + "\n"
}

/// Whole lines of `text` up to `cap` characters.
fn truncate_lines(text: &str, cap: usize) -> String {
    let mut out = String::new();
    let mut used = 0;
    for line in text.split_inclusive('\n') {
        let length = line.chars().count();
        if used + length > cap {
            break;
        }
        out.push_str(line);
        used += length;
    }
    out
}

/// The directive to give the agent before its context is compacted.
pub fn pre_compact_directive() -> String {
    "\
<epiphany_checkpoint_directive>
Context compaction is about to happen; what is not saved in the store now is lost to the next context.
1. Stop wide-ranging implementation here.
2. Save a bounded checkpoint through `epiphany update`: an `investigation_checkpoint` (focus, summary, next_action, code_refs, open_questions) and a `scratch` entry with the current objective, the files and seams you looked at, the key findings, the unresolved questions and the next safe step. Add distilled evidence only where it would change what a later reader believes.
3. Say that the checkpoint is saved, then stop: after compaction, `epiphany reorient` decides whether to resume or re-gather. Do not push on past unresolved drift.
</epiphany_checkpoint_directive>
"
    .to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::freshness::WatcherInput;
    use crate::policy::freshness::assess_freshness;
    use crate::policy::pressure::assess_pressure;
    use crate::policy::reorient::plan_reorientation;
    use crate::state::model::Observation;

    fn verdict(state: Option<&State>) -> Reorientation {
        let watcher = WatcherInput::Unavailable("test".into());
        let freshness = assess_freshness(state, &Default::default(), None, &watcher, None);
        plan_reorientation(state, &freshness, &assess_pressure(None))
    }

    #[test]
    fn without_state_only_the_verdict_is_injected() {
        let text = session_start_context(None, &verdict(None), None, HOST_INJECTION_CAP);
        assert!(
            text.starts_with("<epiphany_reorient>\nVerdict: regather."),
            "{text}"
        );
        assert!(
            text.contains("Reasons: missing_state, missing_checkpoint"),
            "{text}"
        );
        assert!(!text.contains("<epiphany_state>"), "{text}");
    }

    #[test]
    fn the_whole_context_respects_the_cap() {
        let observations = (0..600)
            .map(|i| Observation {
                id: format!("obs-{i}"),
                summary: format!(
                    "a fairly long observation summary number {i} about the parser's retry path"
                ),
                source_kind: "test".into(),
                status: "ok".into(),
                code_refs: vec![],
                evidence_ids: vec![format!("ev-{i}")],
            })
            .collect();
        let state = State {
            revision: 3,
            objective: Some("keep spans".into()),
            observations,
            ..State::default()
        };
        for cap in [HOST_INJECTION_CAP, 4000] {
            let text = session_start_context(Some(&state), &verdict(Some(&state)), None, cap);
            assert!(
                text.chars().count() <= cap,
                "{} > {cap}",
                text.chars().count()
            );
            assert!(text.contains("<epiphany_state>"), "{text}");
            assert!(text.contains("Objective: keep spans"), "{text}");
        }
        let tiny = session_start_context(Some(&state), &verdict(Some(&state)), None, 200);
        assert!(tiny.chars().count() <= 200, "{tiny}");
    }

    #[test]
    fn the_directive_asks_for_a_checkpoint_and_a_halt() {
        let directive = pre_compact_directive();
        assert!(directive.contains("investigation_checkpoint"));
        assert!(directive.contains("epiphany update"));
        assert!(directive.contains("stop"));
    }
}
