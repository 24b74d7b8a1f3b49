//! What an agent host gets from its session hooks: at session start, the reorientation verdict
//! and the bounded `<epiphany_state>` block together under the host's own budget, and right
//! after a compaction a note that says it happened, how old the checkpoint was, and what to save
//! before the next one (docs/projections.md#session-hooks).
//!
//! Budgets are counted in each host's unit: Claude Code caps hook context at 10,000 characters;
//! Codex at 2,500 tokens, which it counts as UTF-8 bytes divided by 4 (so 10,000 bytes). A block
//! for an unknown host fits both.

use jiff::Timestamp;

use crate::policy::freshness::Staleness;
use crate::policy::hooks::Host;
use crate::policy::prompt::MIN_MAX_CHARS;
use crate::policy::prompt::render;
use crate::policy::prompt::with_code_map;
use crate::policy::reorient::ReorientAction;
use crate::policy::reorient::Reorientation;
use crate::policy::text::for_agent;
use crate::state::model::State;

/// Claude Code's cap on hook context, in characters.
pub const CLAUDE_CONTEXT_CHARS: usize = 10_000;
/// Codex's cap on hook output: 2,500 tokens of `ceil(bytes / 4)`, so 10,000 UTF-8 bytes.
pub const CODEX_CONTEXT_BYTES: usize = 2_500 * 4;

/// How much text a host takes, in its own units.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Budget {
    /// At most this many Unicode characters.
    pub chars: Option<usize>,
    /// At most this many UTF-8 bytes.
    pub bytes: Option<usize>,
}

impl Budget {
    /// The budget of `host`; without one, a budget that fits every host.
    pub fn for_host(host: Option<Host>) -> Budget {
        match host {
            Some(Host::Claude) => Budget {
                chars: Some(CLAUDE_CONTEXT_CHARS),
                bytes: None,
            },
            Some(Host::Codex) => Budget {
                chars: None,
                bytes: Some(CODEX_CONTEXT_BYTES),
            },
            None => Budget {
                chars: Some(CLAUDE_CONTEXT_CHARS),
                bytes: Some(CODEX_CONTEXT_BYTES),
            },
        }
    }

    /// The same, with at most `chars` characters as well.
    pub fn at_most_chars(self, chars: usize) -> Budget {
        Budget {
            chars: Some(self.chars.map_or(chars, |own| own.min(chars))),
            ..self
        }
    }

    /// Whether `text` fits.
    pub fn fits(&self, text: &str) -> bool {
        self.bytes.is_none_or(|bytes| text.len() <= bytes)
            && self.chars.is_none_or(|chars| text.chars().count() <= chars)
    }

    /// An upper bound, in characters, of any text that fits.
    fn char_ceiling(&self) -> usize {
        self.chars
            .unwrap_or(usize::MAX)
            .min(self.bytes.unwrap_or(usize::MAX))
    }
}

/// What is known about the compaction that preceded a `SessionStart` with source `compact`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Compaction {
    /// When the `PreCompact` hook recorded it, when it did.
    pub at: Option<Timestamp>,
    /// `manual` or `auto`, as the host said.
    pub trigger: Option<String>,
    /// When the investigation checkpoint was last written.
    pub checkpoint_saved_at: Option<Timestamp>,
}

/// The text to inject at session start: after a compaction the compaction note, then the
/// verdict (it says what to do now), then as much of the state block as the budget leaves,
/// with the blocks of `code_map` that fit in the room it leaves ([`with_code_map`]). Without a
/// state, the notes alone.
pub fn session_start_context(
    state: Option<&State>,
    verdict: &Reorientation,
    staleness: Option<&Staleness>,
    compaction: Option<(&Compaction, Timestamp)>,
    code_map: &[String],
    budget: Budget,
) -> String {
    let mut head = String::new();
    if let Some((compaction, now)) = compaction {
        head.push_str(&compaction_block(state, compaction, now));
    }
    head.push_str(&verdict_block(verdict));
    if !budget.fits(&head) {
        return truncate_lines(&head, budget);
    }
    let Some(state) = state else {
        return head;
    };
    let with_state = |room: usize| {
        let rendered = with_code_map(render(state, staleness, room), code_map);
        format!("{head}\n{}", rendered.text)
    };
    let ceiling = budget
        .char_ceiling()
        .saturating_sub(head.chars().count() + 1);
    if ceiling >= MIN_MAX_CHARS {
        let whole = with_state(ceiling);
        if budget.fits(&whole) {
            return whole;
        }
        // Wide characters: find the largest block that still fits, in the host's own unit.
        let (mut low, mut high, mut best) = (MIN_MAX_CHARS, ceiling, None);
        while low < high {
            let middle = low + (high - low) / 2;
            let text = with_state(middle);
            if budget.fits(&text) {
                best = Some(text);
                low = middle + 1;
            } else {
                high = middle;
            }
        }
        if let Some(text) = best {
            return text;
        }
    }
    let omitted = format!(
        "{head}The state block does not fit what this host accepts from a hook; `epiphany prompt` prints it.\n"
    );
    if budget.fits(&omitted) { omitted } else { head }
}

/// Says that a compaction happened, how old the checkpoint was then, and what to save before
/// the next one.
fn compaction_block(state: Option<&State>, compaction: &Compaction, now: Timestamp) -> String {
    let mut lines = vec!["<epiphany_compaction>".to_owned()];
    let trigger = compaction
        .trigger
        .as_deref()
        .map(|trigger| format!(" ({})", for_agent(trigger)))
        .unwrap_or_default();
    lines.push(match compaction.at {
        Some(at) => format!(
            "Your context was compacted{trigger} {} ago, at {at}: what was not saved in the store is gone from it.",
            duration(now.as_second() - at.as_second())
        ),
        None => format!(
            "Your context was just compacted{trigger}: what was not saved in the store is gone from it."
        ),
    });
    let checkpoint = state.and_then(|state| state.investigation_checkpoint.as_ref());
    let reference = compaction.at.unwrap_or(now);
    lines.push(match (checkpoint, compaction.checkpoint_saved_at) {
        (Some(checkpoint), Some(saved)) if saved <= reference => format!(
            "The investigation checkpoint `{}` was saved {} before the compaction; what you learned after that was not saved.",
            for_agent(&checkpoint.brief.checkpoint_id),
            duration(reference.as_second() - saved.as_second())
        ),
        (Some(checkpoint), _) => format!(
            "The investigation checkpoint `{}` is the latest saved context.",
            for_agent(&checkpoint.brief.checkpoint_id)
        ),
        (None, _) => "No investigation checkpoint was saved before it: re-gather before you edit.".to_owned(),
    });
    lines.push(format!("Before the next compaction, {SAVE_WHAT}"));
    lines.push("</epiphany_compaction>".to_owned());
    lines.join("\n") + "\n"
}

/// What to bank before a compaction, for the agent.
const SAVE_WHAT: &str = "save through `epiphany update` an `investigation_checkpoint` (focus, summary, next_action, code_refs, open_questions) and a `scratch` entry with the files and seams you looked at, the key findings, the unresolved questions and the next safe step.";

/// `seconds` as a person says it, rounded down.
fn duration(seconds: i64) -> String {
    let seconds = seconds.max(0);
    let (count, unit) = match seconds {
        0..60 => return "less than a minute".to_owned(),
        60..3600 => (seconds / 60, "minute"),
        3600..86_400 => (seconds / 3600, "hour"),
        _ => (seconds / 86_400, "day"),
    };
    format!("{count} {unit}{}", if count == 1 { "" } else { "s" })
}

fn verdict_block(verdict: &Reorientation) -> String {
    let action = match verdict.action {
        ReorientAction::Resume => "resume",
        ReorientAction::Regather => "regather",
    };
    let reasons: Vec<&str> = verdict.reasons.iter().map(|r| r.as_str()).collect();
    let mut lines = vec![
        "<epiphany_reorient>".to_owned(),
        format!("Verdict: {action}. {}", for_agent(&verdict.note)),
        format!("Next action: {}", for_agent(&verdict.next_action)),
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
            lines.push(format!("{label}: {}", for_agent(&paths.join(", "))));
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

/// Whole lines of `text` while they fit the budget.
fn truncate_lines(text: &str, budget: Budget) -> String {
    let mut out = String::new();
    for line in text.split_inclusive('\n') {
        out.push_str(line);
        if !budget.fits(&out) {
            out.truncate(out.len() - line.len());
            break;
        }
    }
    out
}

/// When `SessionStart` cannot load the store: the message the host shows its user
/// (`systemMessage`) and the context its model gets instead of the state.
pub fn session_start_problem(problem: &str) -> (String, String) {
    let problem = for_agent(problem);
    let user = format!(
        "epiphany: this session starts without the repository's recorded state, because {problem}. Run `epiphany verify` in the repository."
    );
    let model = format!(
        "<epiphany_unavailable>\nThe repository's epiphany state (.epiphany/) could not be loaded: {problem}.\nDo not assume nothing was recorded: tell the user, and run `epiphany verify` to see what is wrong.\n</epiphany_unavailable>\n"
    );
    (user, model)
}

/// When `PreCompact` cannot load the store: the message the host shows its user.
pub fn pre_compact_problem(problem: &str) -> String {
    format!(
        "epiphany: this compaction was not recorded, because {problem}. Run `epiphany verify` in the repository."
    )
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

    /// The session-start context for `state` with its own verdict and no staleness.
    fn start_with_state(
        state: &State,
        compaction: Option<(&Compaction, Timestamp)>,
        budget: Budget,
    ) -> String {
        session_start_context(
            Some(state),
            &verdict(Some(state)),
            None,
            compaction,
            &[],
            budget,
        )
    }

    #[test]
    fn without_state_only_the_verdict_is_injected() {
        let text = session_start_context(
            None,
            &verdict(None),
            None,
            None,
            &[],
            Budget::for_host(None),
        );
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

    fn state_of(summary: impl Fn(usize) -> String) -> State {
        let observations = (0..600)
            .map(|i| Observation {
                id: format!("obs-{i}"),
                summary: summary(i),
                source_kind: "test".into(),
                status: "ok".into(),
                code_refs: vec![],
                evidence_ids: vec![format!("ev-{i}")],
                supersedes: None,
            })
            .collect();
        State {
            revision: 3,
            objective: Some("keep spans".into()),
            observations,
            ..State::default()
        }
    }

    #[test]
    fn the_whole_context_respects_the_budget() {
        let state = state_of(|i| {
            format!("a fairly long observation summary number {i} about the parser's retry path")
        });
        for budget in [
            Budget::for_host(Some(Host::Claude)),
            Budget::for_host(Some(Host::Codex)),
            Budget::for_host(None).at_most_chars(4000),
        ] {
            let text = start_with_state(&state, None, budget);
            assert!(budget.fits(&text), "{budget:?}: {} bytes", text.len());
            assert!(text.contains("<epiphany_state>"), "{text}");
            assert!(text.contains("Objective: keep spans"), "{text}");
        }
        let tiny = Budget::for_host(None).at_most_chars(200);
        let text = start_with_state(&state, None, tiny);
        assert!(tiny.fits(&text), "{text}");
    }

    #[test]
    fn wide_scripts_are_budgeted_in_the_hosts_own_unit() {
        // Three UTF-8 bytes a character: 10,000 characters would be 30,000 bytes.
        let state = state_of(|i| {
            format!(
                "観測{i}：{}",
                "リトライ経路でスパンが保持されることを確認した。".repeat(40)
            )
        });
        let claude = Budget::for_host(Some(Host::Claude));
        let codex = Budget::for_host(Some(Host::Codex));
        let for_claude = start_with_state(&state, None, claude);
        let for_codex = start_with_state(&state, None, codex);
        assert!(for_claude.chars().count() <= CLAUDE_CONTEXT_CHARS);
        assert!(
            for_claude.len() > CODEX_CONTEXT_BYTES,
            "Claude Code counts characters, not bytes"
        );
        assert!(
            for_codex.len() <= CODEX_CONTEXT_BYTES,
            "{} bytes",
            for_codex.len()
        );
        // Codex's own count: ceil(bytes / 4) tokens, at most 2,500.
        assert!(for_codex.len().div_ceil(4) <= 2_500);
        for text in [&for_claude, &for_codex] {
            assert!(text.contains("<epiphany_state>"), "{text}");
            assert!(text.trim_end().ends_with("</epiphany_state>"), "{text}");
        }
    }

    #[test]
    fn after_a_compaction_the_note_says_when_and_what_to_save() {
        let now: Timestamp = "2026-01-01T12:00:00Z".parse().expect("time");
        let mut state = state_of(|i| format!("observation {i}"));
        let compaction = Compaction {
            at: Some("2026-01-01T11:57:00Z".parse().expect("time")),
            trigger: Some("auto".into()),
            checkpoint_saved_at: Some("2026-01-01T09:30:00Z".parse().expect("time")),
        };
        let budget = Budget::for_host(Some(Host::Claude));
        let text = start_with_state(&state, Some((&compaction, now)), budget);
        assert!(text.starts_with("<epiphany_compaction>\nYour context was compacted (auto) 3 minutes ago, at 2026-01-01T11:57:00Z"), "{text}");
        assert!(
            text.contains("No investigation checkpoint was saved before it"),
            "{text}"
        );
        assert!(text.contains("Before the next compaction, save through `epiphany update` an `investigation_checkpoint`"), "{text}");
        state.investigation_checkpoint = serde_json::from_value(serde_json::json!({
            "checkpoint_id": "ck-lexer", "kind": "debug", "disposition": "resume_ready", "focus": "lexer"
        }))
        .expect("a checkpoint");
        let text = start_with_state(&state, Some((&compaction, now)), budget);
        assert!(
            text.contains(
                "The investigation checkpoint `ck-lexer` was saved 2 hours before the compaction"
            ),
            "{text}"
        );
        let unrecorded = Compaction::default();
        let text = start_with_state(&state, Some((&unrecorded, now)), budget);
        assert!(
            text.contains("Your context was just compacted: what was not saved"),
            "{text}"
        );
        assert!(text.contains("<epiphany_reorient>"), "{text}");
    }

    #[test]
    fn durations_read_like_a_person_says_them() {
        assert_eq!(duration(5), "less than a minute");
        assert_eq!(duration(60), "1 minute");
        assert_eq!(duration(7300), "2 hours");
        assert_eq!(duration(3 * 86_400 + 5), "3 days");
        assert_eq!(duration(-4), "less than a minute");
    }
}
