//! The `<epiphany_state>` prompt fragment (docs/projections.md#prompt): the state projected into a
//! bounded block of text an agent host injects into the model's context.
//!
//! Owns the section order, the per-section item limits, the line formats, the omission lines,
//! the fixed intro and operating-discipline text, and the hard character ceiling. Agent hosts
//! silently cut injected text, so the ceiling is never exceeded: lower-priority parts are left
//! out first (newest evidence and observations, planning, mode, scratch, churn, invariants,
//! subgoals, graph detail, checkpoint detail), the objective, the checkpoint and the frontier
//! last, and a final line says what was left out and which command fetches it. Lines are never
//! cut in the middle. Pure: the same state and ceiling always give the same text.
//!
//! `budget` decides what fits and renders the result; `sections` builds each section.

mod budget;
mod sections;

pub use budget::Rendered;
pub use budget::render;
pub use budget::render_counted;
pub use budget::with_code_map;
pub use sections::RECORDS_SHOWN;
pub use sections::code_ref;
pub use sections::inline_ids;
pub use sections::record_line;

/// The ceiling `epiphany prompt` uses unless told otherwise (Claude Code cuts at 10,000).
pub const DEFAULT_MAX_CHARS: usize = 9000;

/// The smallest ceiling that always leaves room for the intro, the operating discipline and
/// the left-out line.
pub const MIN_MAX_CHARS: usize = 2500;

#[cfg(test)]
mod tests {
    use super::budget::*;
    use super::sections::*;
    use super::*;
    use crate::policy::fixtures;
    use crate::policy::freshness::StaleReason;
    use crate::policy::freshness::Staleness;
    use crate::state::model::ChurnState;
    use crate::state::model::CodeRef;
    use crate::state::model::Disposition;
    use crate::state::model::EvidenceRecord;
    use crate::state::model::GraphCheckpoint;
    use crate::state::model::GraphFrontier;
    use crate::state::model::GraphNode;
    use crate::state::model::Invariant;
    use crate::state::model::InvestigationCheckpoint;
    use crate::state::model::ModeKind;
    use crate::state::model::ModeState;
    use crate::state::model::Observation;
    use crate::state::model::State;
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
            supersedes: None,
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
    fn the_code_map_takes_only_the_room_left() {
        let blocks = vec![
            "src/core.rs\n      1  pub fn parse() {\n".to_owned(),
            "src/main.rs\n      3  fn main() {\n".to_owned(),
        ];
        let plain = render(&State::default(), None, DEFAULT_MAX_CHARS);
        let mapped = with_code_map(plain.clone(), &blocks);
        assert!(mapped.text.ends_with(
            "src/core.rs\n      1  pub fn parse() {\nsrc/main.rs\n      3  fn main() {\n</epiphany_state>"
        ));
        assert_eq!(mapped.chars, mapped.text.chars().count());
        // Room for the heading and the first block only.
        let room = mapped.chars - "src/main.rs\n      3  fn main() {\n".len();
        let tight = with_code_map(
            Rendered {
                max_chars: room,
                ..plain.clone()
            },
            &blocks,
        );
        assert!(tight.text.contains("src/core.rs") && !tight.text.contains("src/main.rs"));
        assert!(tight.chars <= room);
        // No room, or something left out: unchanged.
        let full = Rendered {
            max_chars: plain.chars,
            ..plain.clone()
        };
        assert_eq!(with_code_map(full.clone(), &blocks), full);
        let cut = Rendered {
            left_out: vec![LeftOut {
                part: PromptPart::Planning,
                count: 1,
                fetch: "epiphany planning".into(),
            }],
            ..plain
        };
        assert_eq!(with_code_map(cut.clone(), &blocks), cut);
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
            outdated_record_refs: vec![],
            certificates: vec![],
            note: "stale".into(),
        };
        let text = render(&state, Some(&staleness), 100_000).text;
        assert!(text.contains("- Stale: the code these nodes cite changed since it was checked: `src/a.rs` (nodes `a`)"), "{text}");
        assert!(
            text.contains("- Broken code refs: `src/gone.rs (missing)`"),
            "{text}"
        );
        assert!(
            text.contains("- Stale: the code it cites changed since it was checked: `src/c.rs`"),
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
            outdated_record_refs: vec![],
            certificates: vec![],
            ..staleness
        };
        assert_eq!(
            render(&state, Some(&fresh), 100_000).text,
            render(&state, None, 100_000).text
        );
    }

    #[test]
    fn unknown_history_is_said_in_the_overview() {
        let state = rich(1, "green");
        let unknown = Staleness {
            fresh: false,
            stale_reasons: vec![StaleReason::HistoryUnknown],
            node_changed_paths: vec![],
            stale_node_ids: vec![],
            checkpoint_changed_paths: vec![],
            broken_refs: vec![],
            outdated_record_refs: vec![],
            certificates: vec![],
            note: "stale".into(),
        };
        let text = render(&state, Some(&unknown), 100_000).text;
        assert!(
            text.contains("- History unknown: git lacks the commits"),
            "{text}"
        );
        assert!(
            !render(&state, None, 100_000)
                .text
                .contains("History unknown")
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
            "    code refs: `src/n0.rs:10-20#run`, `src/n0.rs:10-21#run`, ... 1 more refs",
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
