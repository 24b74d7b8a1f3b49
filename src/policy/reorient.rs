//! The reorientation verdict (docs/projections.md#reorient): after a context loss, may the agent
//! resume from its investigation checkpoint, or must it re-gather source context first?
//!
//! Precedence: missing state > missing checkpoint > any drift reason (regather) > resume. The
//! retrieval, graph and watcher *statuses* never change the action, only the paths and ids
//! they carry do; pressure only changes the note. Takes the freshness and pressure readings as
//! inputs; computes neither.

use serde::Serialize;

use crate::policy::code_ref::RefOwner;
use crate::policy::freshness::CertificateStatus;
use crate::policy::freshness::Freshness;
use crate::policy::freshness::GraphFreshnessStatus;
use crate::policy::freshness::RetrievalFreshnessStatus;
use crate::policy::freshness::StaleReason;
use crate::policy::freshness::WatcherStatus;
use crate::policy::pressure::Pressure;
use crate::policy::pressure::PressureLevel;
use crate::policy::projection::StateStatus;
use crate::policy::text::fresh_key;
use crate::state::model::Disposition;
use crate::state::model::InvestigationCheckpoint;
use crate::state::model::State;

const GENERIC_REGATHER: &str = "re-gather source context before editing";
const DEFAULT_RESUME: &str =
    "resume from the checkpoint focus and verify the seam before broad edits";

/// What to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ReorientAction {
    /// Continue from the checkpoint.
    Resume,
    /// Re-gather source context first.
    Regather,
}

/// The checkpoint as the verdict sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum CheckpointStatus {
    /// No investigation checkpoint.
    Missing,
    /// It says it can be resumed.
    ResumeReady,
    /// It asks for a re-gather.
    RegatherRequired,
}

/// Why the verdict is what it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ReorientReason {
    /// No state exists.
    MissingState,
    /// No investigation checkpoint exists.
    MissingCheckpoint,
    /// The checkpoint agrees with every signal.
    CheckpointReady,
    /// The checkpoint's disposition is `regather_required`.
    CheckpointRequestedRegather,
    /// A checkpoint-cited path is dirty in the index or on the graph frontier.
    CheckpointPathsDirty,
    /// A checkpoint-cited path changed in the work tree since the checkpoint was written.
    CheckpointPathsChanged,
    /// An active frontier node cites a file that changed since the node was written.
    FrontierChanged,
    /// The checkpoint cites no code, and the state shows drift elsewhere.
    UnanchoredCheckpointWhileStateStale,
    /// Git lacks the commit the map was written at (a shallow clone): what changed since is
    /// unknown, so nothing can confirm the checkpoint.
    HistoryUnknown,
    /// The checkpoint cites a symbol in a file whose parse ran out of the command's time: its
    /// references were not judged, so nothing confirms it.
    CheckpointUnjudged,
}

impl ReorientReason {
    /// The snake_case name, as in JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            ReorientReason::MissingState => "missing_state",
            ReorientReason::MissingCheckpoint => "missing_checkpoint",
            ReorientReason::CheckpointReady => "checkpoint_ready",
            ReorientReason::CheckpointRequestedRegather => "checkpoint_requested_regather",
            ReorientReason::CheckpointPathsDirty => "checkpoint_paths_dirty",
            ReorientReason::CheckpointPathsChanged => "checkpoint_paths_changed",
            ReorientReason::FrontierChanged => "frontier_changed",
            ReorientReason::UnanchoredCheckpointWhileStateStale => {
                "unanchored_checkpoint_while_state_stale"
            }
            ReorientReason::HistoryUnknown => "history_unknown",
            ReorientReason::CheckpointUnjudged => "checkpoint_unjudged",
        }
    }
}

/// The verdict.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reorientation {
    /// Whether a state exists.
    pub state_status: StateStatus,
    /// The revision the verdict was reached on.
    pub state_revision: Option<u64>,
    /// Resume or regather.
    pub action: ReorientAction,
    /// The checkpoint's standing.
    pub checkpoint_status: CheckpointStatus,
    /// The checkpoint.
    pub checkpoint_id: Option<String>,
    /// Context pressure.
    pub pressure_level: PressureLevel,
    /// Time to checkpoint before compaction.
    pub should_prepare_compaction: bool,
    /// Retrieval freshness (`unavailable` reads as `missing`).
    pub retrieval_status: RetrievalFreshnessStatus,
    /// Graph freshness.
    pub graph_status: GraphFreshnessStatus,
    /// Work-tree changes.
    pub watcher_status: WatcherStatus,
    /// Why, in fixed order.
    pub reasons: Vec<ReorientReason>,
    /// Checkpoint-cited paths dirty in the index or on the frontier.
    pub checkpoint_dirty_paths: Vec<String>,
    /// Checkpoint-cited paths changed since the checkpoint was written.
    pub checkpoint_changed_paths: Vec<String>,
    /// Frontier nodes citing changed files.
    pub active_frontier_node_ids: Vec<String>,
    /// The next step.
    pub next_action: String,
    /// The verdict in a sentence.
    pub note: String,
}

/// Decides between resuming and re-gathering.
pub fn plan_reorientation(
    state: Option<&State>,
    freshness: &Freshness,
    pressure: &Pressure,
) -> Reorientation {
    let verdict = baseline(state, freshness, pressure);
    let Some(state) = state else {
        return Reorientation {
            reasons: vec![
                ReorientReason::MissingState,
                ReorientReason::MissingCheckpoint,
            ],
            note: with_pressure(
                "no Epiphany state yet: re-gather source context before editing".to_owned(),
                pressure,
            ),
            ..verdict
        };
    };
    let Some(checkpoint) = &state.investigation_checkpoint else {
        return Reorientation {
            reasons: vec![ReorientReason::MissingCheckpoint],
            note: with_pressure(
                "no investigation checkpoint: re-gather source context, then record one with `epiphany update`"
                    .to_owned(),
                pressure,
            ),
            ..verdict
        };
    };

    let watcher = &freshness.watcher;
    let checkpoint_dirty_paths = checkpoint_dirty_paths(checkpoint, freshness);
    let checkpoint_changed_paths = watcher.checkpoint_changed_paths.clone();
    let (reasons, fragments) = regather_reasons(checkpoint, freshness, &checkpoint_dirty_paths);

    let checkpoint_status = match checkpoint.brief.disposition {
        Disposition::ResumeReady => CheckpointStatus::ResumeReady,
        Disposition::RegatherRequired => CheckpointStatus::RegatherRequired,
    };
    let verdict = Reorientation {
        checkpoint_status,
        checkpoint_id: Some(checkpoint.brief.checkpoint_id.clone()),
        ..verdict
    };
    if reasons.is_empty() {
        return Reorientation {
            action: ReorientAction::Resume,
            reasons: vec![ReorientReason::CheckpointReady],
            next_action: checkpoint
                .brief
                .next_action
                .clone()
                .unwrap_or_else(|| DEFAULT_RESUME.to_owned()),
            note: with_pressure(
                "the checkpoint is aligned with current signals".to_owned(),
                pressure,
            ),
            ..verdict
        };
    }
    Reorientation {
        action: ReorientAction::Regather,
        reasons,
        checkpoint_dirty_paths,
        checkpoint_changed_paths,
        active_frontier_node_ids: watcher.active_frontier_node_ids.clone(),
        // The original keeps the checkpoint's own next step even on regather
        // (docs/projections.md#reorient).
        next_action: checkpoint
            .brief
            .next_action
            .clone()
            .unwrap_or_else(|| GENERIC_REGATHER.to_owned()),
        note: with_pressure(
            format!("Re-gather before editing: {}", fragments.join("; ")),
            pressure,
        ),
        ..verdict
    }
}

/// `note`, with a call to checkpoint before compaction when context pressure is high.
fn with_pressure(note: String, pressure: &Pressure) -> String {
    if pressure.level.is_high() {
        format!(
            "{note}; context pressure is {}: checkpoint before compaction",
            pressure.level.as_str()
        )
    } else {
        note
    }
}

/// The verdict before the checkpoint is looked at: re-gather, with the statuses the signals
/// report and nothing found yet.
fn baseline(state: Option<&State>, freshness: &Freshness, pressure: &Pressure) -> Reorientation {
    Reorientation {
        state_status: StateStatus::of(state),
        state_revision: state.map(|s| s.revision),
        action: ReorientAction::Regather,
        checkpoint_status: CheckpointStatus::Missing,
        checkpoint_id: None,
        pressure_level: pressure.level,
        should_prepare_compaction: pressure.should_prepare_compaction,
        retrieval_status: match freshness.retrieval.status {
            RetrievalFreshnessStatus::Unavailable => RetrievalFreshnessStatus::Missing,
            status => status,
        },
        graph_status: freshness.graph.status,
        watcher_status: freshness.watcher.status,
        reasons: Vec::new(),
        checkpoint_dirty_paths: Vec::new(),
        checkpoint_changed_paths: Vec::new(),
        active_frontier_node_ids: Vec::new(),
        next_action: GENERIC_REGATHER.to_owned(),
        note: String::new(),
    }
}

/// The paths the checkpoint cites that the index or the graph reports dirty, each once, as
/// the index and then the graph spell them.
fn checkpoint_dirty_paths(
    checkpoint: &InvestigationCheckpoint,
    freshness: &Freshness,
) -> Vec<String> {
    let root = freshness.watcher.watched_root.as_deref();
    let checkpoint_keys: Vec<String> = checkpoint
        .code_refs
        .iter()
        .map(|r| fresh_key(&r.path, root))
        .collect();
    let mut checkpoint_dirty_paths = Vec::new();
    let mut seen = Vec::new();
    for path in freshness
        .retrieval
        .dirty_paths
        .iter()
        .chain(&freshness.graph.dirty_paths)
    {
        let key = fresh_key(path, root);
        if checkpoint_keys.contains(&key) && !seen.contains(&key) {
            seen.push(key);
            checkpoint_dirty_paths.push(path.clone());
        }
    }
    checkpoint_dirty_paths
}

/// Why the checkpoint cannot be resumed, in fixed order, each with the fragment of the note
/// that says so; both empty when it can.
fn regather_reasons(
    checkpoint: &InvestigationCheckpoint,
    freshness: &Freshness,
    checkpoint_dirty_paths: &[String],
) -> (Vec<ReorientReason>, Vec<String>) {
    let watcher = &freshness.watcher;
    let checkpoint_changed_paths = &watcher.checkpoint_changed_paths;
    let frontier_changed = !watcher.active_frontier_node_ids.is_empty();
    let drift_elsewhere = !freshness.retrieval.dirty_paths.is_empty()
        || !freshness.graph.dirty_paths.is_empty()
        || !watcher.graph_node_ids.is_empty()
        || frontier_changed;
    let unanchored = checkpoint.code_refs.is_empty() && drift_elsewhere;

    let mut reasons = Vec::new();
    let mut fragments = Vec::new();
    if checkpoint.brief.disposition == Disposition::RegatherRequired {
        reasons.push(ReorientReason::CheckpointRequestedRegather);
        fragments.push("the checkpoint asks for a re-gather".to_owned());
    }
    if !checkpoint_dirty_paths.is_empty() {
        reasons.push(ReorientReason::CheckpointPathsDirty);
        fragments.push(format!(
            "{} dirty checkpoint paths",
            checkpoint_dirty_paths.len()
        ));
    }
    if !checkpoint_changed_paths.is_empty() {
        reasons.push(ReorientReason::CheckpointPathsChanged);
        fragments.push(format!(
            "{} checkpoint paths changed since it was written",
            checkpoint_changed_paths.len()
        ));
    }
    if frontier_changed {
        reasons.push(ReorientReason::FrontierChanged);
        fragments.push(format!(
            "{} frontier nodes cite changed files",
            watcher.active_frontier_node_ids.len()
        ));
    }
    if unanchored {
        reasons.push(ReorientReason::UnanchoredCheckpointWhileStateStale);
        fragments.push("the checkpoint cites no code while the state drifted".to_owned());
    }
    if freshness
        .stale_reasons
        .contains(&StaleReason::HistoryUnknown)
    {
        reasons.push(ReorientReason::HistoryUnknown);
        fragments.push(
            "git lacks the commit the map was written at (a shallow clone?), so what changed since is unknown"
                .to_owned(),
        );
    }
    let not_checkable = freshness.certificates.iter().any(|c| {
        matches!(c.owner, RefOwner::InvestigationCheckpoint { .. })
            && c.status == CertificateStatus::NotCheckable
    });
    if not_checkable && !freshness.references.unjudged.is_empty() {
        reasons.push(ReorientReason::CheckpointUnjudged);
        fragments.push(
            "the checkpoint cites code whose parse ran out of time, so nothing confirms it"
                .to_owned(),
        );
    }
    (reasons, fragments)
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::collections::BTreeSet;

    use super::*;
    use crate::policy::fixtures::checkpoint;
    use crate::policy::fixtures::node;
    use crate::policy::freshness::ChangeSource;
    use crate::policy::freshness::WatcherInput;
    use crate::policy::freshness::WorkTreeChanges;
    use crate::policy::freshness::assess_freshness;
    use crate::policy::pressure::Telemetry;
    use crate::policy::pressure::assess_pressure;
    use crate::state::model::GraphFrontier;
    use crate::state::model::InvestigationCheckpoint;

    fn state(checkpoint: Option<InvestigationCheckpoint>) -> State {
        let mut state = State {
            revision: 2,
            investigation_checkpoint: checkpoint,
            ..State::default()
        };
        state.graphs.architecture.nodes = vec![node("n", &["src/n.rs"])];
        state
    }

    fn watcher(changed: &[&str]) -> WatcherInput {
        WatcherInput::Observed(WorkTreeChanges {
            source: ChangeSource::Git,
            watched_root: "/ws".into(),
            observed_at_unix_seconds: 0,
            base_commit: Some("c".into()),
            since_revision: None,
            since_base: changed
                .iter()
                .map(|p| (*p).to_owned())
                .collect::<BTreeSet<_>>(),
            since_commit: BTreeMap::new(),
            renames: BTreeMap::new(),
            unknown_commits: Vec::new(),
            cited_then: BTreeMap::new(),
        })
    }

    fn verdict(state: Option<&State>, changed: &[&str]) -> Reorientation {
        let freshness = assess_freshness(state, &BTreeMap::new(), None, &watcher(changed), None);
        plan_reorientation(state, &freshness, &assess_pressure(None))
    }

    #[test]
    fn missing_state_then_missing_checkpoint() {
        let none = verdict(None, &[]);
        assert_eq!(none.action, ReorientAction::Regather);
        assert_eq!(none.state_status, StateStatus::Missing);
        assert_eq!(
            none.reasons,
            vec![
                ReorientReason::MissingState,
                ReorientReason::MissingCheckpoint
            ]
        );
        let no_checkpoint = verdict(Some(&state(None)), &["src/n.rs"]);
        assert_eq!(
            no_checkpoint.reasons,
            vec![ReorientReason::MissingCheckpoint]
        );
        assert_eq!(no_checkpoint.checkpoint_status, CheckpointStatus::Missing);
        assert_eq!(no_checkpoint.next_action, GENERIC_REGATHER);
    }

    #[test]
    fn aligned_checkpoint_resumes_with_its_next_action() {
        let state = state(Some(checkpoint(Disposition::ResumeReady, &["src/c.rs"])));
        let resume = verdict(Some(&state), &["README.md"]);
        assert_eq!(resume.action, ReorientAction::Resume);
        assert_eq!(resume.reasons, vec![ReorientReason::CheckpointReady]);
        assert_eq!(resume.next_action, "rerun the probe");
        assert_eq!(resume.checkpoint_status, CheckpointStatus::ResumeReady);
    }

    /// In a shallow clone git lacks the commit the map was written at: nothing can confirm the
    /// checkpoint, so the verdict never resumes on it, and the note says why.
    #[test]
    fn unknown_history_never_resumes() {
        let state = state(Some(checkpoint(Disposition::ResumeReady, &["src/c.rs"])));
        let mut shallow = watcher(&[]);
        if let WatcherInput::Observed(changes) = &mut shallow {
            changes.unknown_commits = vec!["c0".into()];
        }
        let freshness = assess_freshness(Some(&state), &BTreeMap::new(), None, &shallow, None);
        let unknown = plan_reorientation(Some(&state), &freshness, &assess_pressure(None));
        assert_eq!(unknown.action, ReorientAction::Regather);
        assert_eq!(unknown.reasons, vec![ReorientReason::HistoryUnknown]);
        assert!(unknown.note.contains("shallow clone"), "{}", unknown.note);
    }

    #[test]
    fn every_drift_reason_in_fixed_order() {
        let mut state = state(Some(checkpoint(
            Disposition::RegatherRequired,
            &["src/c.rs"],
        )));
        state.graph_frontier = Some(GraphFrontier {
            active_node_ids: vec!["n".into()],
            dirty_paths: vec!["./src/c.rs".into()],
            ..GraphFrontier::default()
        });
        let regather = verdict(Some(&state), &["src/c.rs", "src/n.rs"]);
        assert_eq!(regather.action, ReorientAction::Regather);
        assert_eq!(
            regather.reasons,
            vec![
                ReorientReason::CheckpointRequestedRegather,
                ReorientReason::CheckpointPathsDirty,
                ReorientReason::CheckpointPathsChanged,
                ReorientReason::FrontierChanged,
            ]
        );
        assert_eq!(regather.checkpoint_dirty_paths, vec!["./src/c.rs"]);
        assert_eq!(regather.checkpoint_changed_paths, vec!["src/c.rs"]);
        assert_eq!(regather.active_frontier_node_ids, vec!["n"]);
        assert_eq!(regather.next_action, "rerun the probe");
        assert!(regather.note.starts_with("Re-gather before editing: "));
        assert_eq!(regather.state_revision, Some(2));
    }

    #[test]
    fn unanchored_checkpoint_regathers_only_when_the_state_drifted() {
        let state = state(Some(checkpoint(Disposition::ResumeReady, &[])));
        assert_eq!(
            verdict(Some(&state), &["README.md"]).action,
            ReorientAction::Resume
        );
        let drifted = verdict(Some(&state), &["src/n.rs"]);
        assert_eq!(
            drifted.reasons,
            vec![ReorientReason::UnanchoredCheckpointWhileStateStale]
        );
    }

    #[test]
    fn pressure_changes_the_note_not_the_action() {
        let state = state(Some(checkpoint(Disposition::ResumeReady, &["src/c.rs"])));
        let freshness = assess_freshness(Some(&state), &BTreeMap::new(), None, &watcher(&[]), None);
        let pressure = assess_pressure(Some(&Telemetry {
            total_tokens: 0,
            last_turn_tokens: 96,
            model_context_window: None,
            model_auto_compact_token_limit: Some(100),
        }));
        let verdict = plan_reorientation(Some(&state), &freshness, &pressure);
        assert_eq!(verdict.action, ReorientAction::Resume);
        assert_eq!(verdict.pressure_level, PressureLevel::Critical);
        assert!(verdict.should_prepare_compaction);
        assert!(verdict.note.contains("checkpoint before compaction"));
    }
}
