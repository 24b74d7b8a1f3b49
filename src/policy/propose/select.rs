//! Which observations a proposal builds on: explicit ids resolved, or the strongest coherent
//! path cluster auto-selected, and the quality judgment of the selection (its terms, scores and
//! summary).

use std::collections::HashSet;
use std::path::Path;

use crate::policy::text::is_accepting_status;
use crate::policy::text::is_blank;
use crate::policy::text::uniq_append;
use crate::state::model::CodeRef;
use crate::state::model::EvidenceRecord;
use crate::state::model::GraphFrontier;
use crate::state::model::Observation;
use crate::state::model::State;
use crate::state::paths::slash_key;
use crate::state::problem::Problem;

/// The most observations auto-selection picks.
pub const AUTO_OBSERVATION_SELECTION_LIMIT: usize = 4;

/// The score from which an observation counts as a strong signal.
const STRONG_SIGNAL_SCORE: usize = 8;

const STOP_WORDS: [&str; 17] = [
    "and", "are", "but", "can", "for", "from", "has", "into", "not", "now", "one", "out", "the",
    "this", "that", "through", "with",
];

/// How strongly a source or evidence kind signals verification (plain substrings,
/// docs/drafting.md#scores).
pub(super) fn signal_kind_weight(kind: &str) -> usize {
    let kind = kind.trim().to_ascii_lowercase();
    let has = |needles: &[&str]| needles.iter().any(|needle| kind.contains(needle));
    if has(&["verification", "verifier"]) {
        4
    } else if has(&["test", "smoke"]) {
        3
    } else if has(&["tool", "review"]) {
        2
    } else if has(&["observation"]) {
        1
    } else {
        0
    }
}

fn observation_priority(observation: &Observation) -> usize {
    signal_kind_weight(&observation.source_kind)
        + observation.code_refs.len().min(3)
        + usize::from(!is_blank(&observation.summary))
}

fn evidence_priority(evidence: &EvidenceRecord) -> usize {
    signal_kind_weight(&evidence.kind)
        + evidence.code_refs.len().min(2)
        + usize::from(!is_blank(&evidence.summary))
}

fn find_evidence<'a>(state: &'a State, id: &str) -> Option<&'a EvidenceRecord> {
    state.recent_evidence.iter().find(|e| e.id == id)
}

/// The code-ref paths the graph already pays attention to, as slash-keys: the focus score of
/// docs/drafting.md#scores.
#[derive(Debug, Default)]
struct Focus {
    pub(super) dirty: HashSet<String>,
    pub(super) active: HashSet<String>,
    pub(super) mapped: HashSet<String>,
}

impl Focus {
    pub(super) fn of(state: &State) -> Focus {
        let no_frontier = GraphFrontier::default();
        let frontier = state.graph_frontier.as_ref().unwrap_or(&no_frontier);
        let is_active = |id: &str| frontier.active_node_ids.iter().any(|a| a == id);
        let keys = |refs: &[CodeRef]| refs.iter().map(|r| slash_key(&r.path)).collect::<Vec<_>>();
        let mut focus = Focus {
            dirty: frontier.dirty_paths.iter().map(|p| slash_key(p)).collect(),
            ..Focus::default()
        };
        for (_, graph) in state.graphs.each() {
            for node in &graph.nodes {
                if is_active(&node.id) {
                    focus.active.extend(keys(&node.code_refs));
                }
                focus.mapped.extend(keys(&node.code_refs));
            }
        }
        for link in &state.graphs.links {
            if is_active(&link.architecture_node_id) || is_active(&link.dataflow_node_id) {
                focus.active.extend(keys(&link.code_refs));
            }
            focus.mapped.extend(keys(&link.code_refs));
        }
        focus
    }

    pub(super) fn score(&self, key: &str) -> usize {
        4 * usize::from(self.dirty.contains(key))
            + 3 * usize::from(self.active.contains(key))
            + 2 * usize::from(self.mapped.contains(key))
    }
}

/// An observation auto-selection could use.
pub(super) struct Candidate<'a> {
    pub(super) index: usize,
    pub(super) id: &'a str,
    pub(super) score: usize,
    pub(super) path_keys: Vec<String>,
}

/// Picks the strongest coherent path cluster (docs/drafting.md#auto-selection): at most
/// [`AUTO_OBSERVATION_SELECTION_LIMIT`] ids sharing a path with the best candidate, newest
/// first.
pub(super) fn auto_select(state: &State) -> Result<Vec<String>, Problem> {
    let focus = Focus::of(state);
    let mut candidates: Vec<Candidate<'_>> = state
        .observations
        .iter()
        .enumerate()
        .filter_map(|(index, observation)| {
            if !is_accepting_status(&observation.status)
                || observation.code_refs.is_empty()
                || observation.evidence_ids.is_empty()
            {
                return None;
            }
            let mut evidence_score = 0;
            for id in &observation.evidence_ids {
                let evidence =
                    find_evidence(state, id).filter(|e| is_accepting_status(&e.status))?;
                evidence_score += evidence_priority(evidence);
            }
            let mut path_keys = Vec::new();
            uniq_append(
                &mut path_keys,
                observation.code_refs.iter().map(|r| slash_key(&r.path)),
            );
            let focus_score: usize = path_keys.iter().map(|key| focus.score(key)).sum();
            Some(Candidate {
                index,
                id: &observation.id,
                score: observation_priority(observation) + evidence_score + focus_score,
                path_keys,
            })
        })
        .collect();
    candidates.sort_by(|a, b| {
        (b.score.cmp(&a.score))
            .then(a.index.cmp(&b.index))
            .then(a.id.cmp(b.id))
    });
    let Some(anchor) = candidates.first() else {
        return Err(Problem::whole(
            "`--observation` was omitted and no proposal-ready observations were found",
        ));
    };
    let mut cluster: Vec<&Candidate<'_>> = candidates
        .iter()
        .filter(|c| c.path_keys.iter().any(|key| anchor.path_keys.contains(key)))
        .take(AUTO_OBSERVATION_SELECTION_LIMIT)
        .collect();
    cluster.sort_by_key(|c| c.index);
    Ok(cluster.iter().map(|c| c.id.to_owned()).collect())
}

/// Looks the ids up, in order; each must exist and be accepted (docs/drafting.md#propose-steps,
/// step 2).
pub(super) fn resolve<'a>(
    state: &'a State,
    ids: &[String],
) -> Result<Vec<&'a Observation>, Problem> {
    ids.iter()
        .map(|id| {
            let observation = state
                .observations
                .iter()
                .find(|o| &o.id == id)
                .ok_or_else(|| {
                    Problem::whole(format!("observation id \"{id}\" not found in state"))
                })?;
            if !is_accepting_status(&observation.status) {
                return Err(Problem::whole(format!(
                    "observation id \"{id}\" must have verified/accepted status, got \"{}\"",
                    observation.status
                )));
            }
            Ok(observation)
        })
        .collect()
}

/// What the selected observations amount to (docs/drafting.md#selection-quality).
pub(super) struct Selection<'a> {
    pub(super) count: usize,
    pub(super) primary: &'a Observation,
    pub(super) terms: Vec<String>,
    pub(super) evidence_count: usize,
    pub(super) label: &'static str,
    pub(super) source_kinds: Vec<String>,
}

impl<'a> Selection<'a> {
    pub(super) fn assess(
        state: &State,
        observations: &[&'a Observation],
    ) -> Result<Selection<'a>, Problem> {
        let mut terms = Vec::new();
        let mut evidence_ids: Vec<&str> = Vec::new();
        let mut source_kinds = Vec::new();
        let mut strong = 0;
        let mut primary: Option<(&Observation, usize)> = None;
        for &observation in observations {
            let id = &observation.id;
            if observation.evidence_ids.is_empty() {
                return Err(Problem::whole(format!(
                    "observation id \"{id}\" must cite at least one evidence record"
                )));
            }
            let mut score = observation_priority(observation);
            add_terms(&mut terms, &observation.summary);
            add_terms(&mut terms, &observation.source_kind);
            add_code_ref_terms(&mut terms, &observation.code_refs);
            for cited in &observation.evidence_ids {
                let evidence = find_evidence(state, cited).ok_or_else(|| {
                    Problem::whole(format!(
                        "observation id \"{id}\" cites missing evidence id \"{cited}\""
                    ))
                })?;
                if !is_accepting_status(&evidence.status) {
                    return Err(Problem::whole(format!(
                        "observation id \"{id}\" cites non-accepting evidence id \"{cited}\" \
                         with status \"{}\"",
                        evidence.status
                    )));
                }
                score += evidence_priority(evidence);
                uniq_append(&mut evidence_ids, [cited.as_str()]);
                add_terms(&mut terms, &evidence.summary);
                add_terms(&mut terms, &evidence.kind);
                add_code_ref_terms(&mut terms, &evidence.code_refs);
            }
            let kind = observation.source_kind.trim();
            if !kind.is_empty() {
                uniq_append(&mut source_kinds, [kind.to_owned()]);
            }
            if score >= STRONG_SIGNAL_SCORE {
                strong += 1;
            }
            if primary.is_none_or(|(_, best)| score > best) {
                primary = Some((observation, score));
            }
        }
        let Some((primary, _)) = primary else {
            return Err(Problem::whole("no observations were selected"));
        };
        let label = if strong == observations.len() {
            "high-priority verified selection"
        } else if strong > 0 {
            "mixed-priority verified selection"
        } else {
            "low-priority accepted selection"
        };
        Ok(Selection {
            count: observations.len(),
            primary,
            terms,
            evidence_count: evidence_ids.len(),
            label,
            source_kinds,
        })
    }

    /// The selection summary (docs/drafting.md#selection-quality), given the number of unique
    /// code paths.
    pub(super) fn summary(&self, path_count: usize) -> String {
        let kinds = if self.source_kinds.is_empty() {
            "unknown sources".to_owned()
        } else {
            self.source_kinds.join("/")
        };
        format!(
            "{} evidence-backed observation(s), {} accepting evidence record(s), {path_count} \
             code path(s), {}, primary observation: {}, source kind(s): {kinds}",
            self.count, self.evidence_count, self.label, self.primary.id
        )
    }
}

/// Adds the semantic terms of `text` (docs/drafting.md#semantic-terms): ASCII-alphanumeric runs of
/// 3 bytes or more, lowercased, without stop-words, each once.
pub(super) fn add_terms(terms: &mut Vec<String>, text: &str) {
    uniq_append(
        terms,
        text.split(|c: char| !c.is_ascii_alphanumeric())
            .filter(|piece| piece.len() >= 3)
            .map(str::to_ascii_lowercase)
            .filter(|term| !STOP_WORDS.contains(&term.as_str())),
    );
}

/// Adds the terms of code refs: file stem, parent directory, symbol, note.
pub(super) fn add_code_ref_terms(terms: &mut Vec<String>, code_refs: &[CodeRef]) {
    for code_ref in code_refs {
        let path = Path::new(&code_ref.path);
        if let Some(stem) = path.file_stem() {
            add_terms(terms, &stem.to_string_lossy());
        }
        if let Some(parent) = path.parent() {
            add_terms(terms, &parent.to_string_lossy());
        }
        for text in [&code_ref.symbol, &code_ref.note].into_iter().flatten() {
            add_terms(terms, text);
        }
    }
}
