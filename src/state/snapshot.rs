//! The head snapshot: the full state at the head revision plus the bookkeeping that ties it to
//! the rollout (position and hash of the last record) and to git (the commit at which each graph
//! node and the investigation checkpoint was last written).
//!
//! Owns the MessagePack encoding (named fields) and its `format_version`. Decoding never
//! substitutes an empty state for bytes it cannot read: it fails and says why.

use std::collections::BTreeMap;
use std::collections::BTreeSet;

use anyhow::Result;
use anyhow::bail;
use serde::Deserialize;
use serde::Serialize;

use crate::state::model::GraphKind;
use crate::state::model::Graphs;
use crate::state::model::InvestigationCheckpoint;
use crate::state::model::State;
use crate::state::rollout::GENESIS_HASH;
use crate::state::rollout::Record;

/// The snapshot format this binary writes.
pub const FORMAT_VERSION: u32 = 1;

/// When a record (a graph node or the investigation checkpoint) was last written.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Anchor {
    /// The revision of that write.
    pub revision: u64,
    /// The commit checked out at that write, when in git.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub git_head: Option<String>,
}

/// The anchor key of the investigation checkpoint.
pub const CHECKPOINT_ANCHOR: &str = "investigation_checkpoint";

/// The anchor key of a graph node.
pub fn node_anchor_key(graph: GraphKind, id: &str) -> String {
    format!("{}/{id}", graph.as_str())
}

/// The head snapshot.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Snapshot {
    /// Encoding version; older versions keep decoding.
    pub format_version: u32,
    /// Records folded into this snapshot.
    pub rollout_seq: u64,
    /// Bytes of `rollout.jsonl` those records occupy.
    pub rollout_bytes: u64,
    /// Hash of the last folded record.
    pub rollout_hash: String,
    /// Last write of each graph node and of the investigation checkpoint.
    #[serde(default)]
    pub anchors: BTreeMap<String, Anchor>,
    /// The state at the head revision.
    pub state: State,
}

impl Default for Snapshot {
    fn default() -> Self {
        Snapshot {
            format_version: FORMAT_VERSION,
            rollout_seq: 0,
            rollout_bytes: 0,
            rollout_hash: GENESIS_HASH.to_owned(),
            anchors: BTreeMap::new(),
            state: State::default(),
        }
    }
}

#[derive(Deserialize)]
struct VersionProbe {
    format_version: u32,
}

fn newer_format(version: u32) -> anyhow::Error {
    anyhow::anyhow!(
        "snapshot format {version} is newer than this binary understands (format {FORMAT_VERSION}); upgrade epiphany"
    )
}

impl Snapshot {
    /// Whether any write has happened yet (a fresh store has no state).
    pub fn has_state(&self) -> bool {
        self.rollout_seq > 0
    }

    /// MessagePack with named fields.
    pub fn encode(&self) -> Result<Vec<u8>> {
        Ok(rmp_serde::to_vec_named(self)?)
    }

    /// Decodes a snapshot of this or an older format version. The bytes are parsed once; only
    /// when they do not decode is the version looked at, to explain why.
    pub fn decode(bytes: &[u8]) -> Result<Snapshot> {
        if bytes.is_empty() {
            bail!("the file is empty");
        }
        let err = match rmp_serde::from_slice::<Snapshot>(bytes) {
            Ok(snapshot) if snapshot.format_version <= FORMAT_VERSION => return Ok(snapshot),
            Ok(snapshot) => return Err(newer_format(snapshot.format_version)),
            Err(err) => err,
        };
        match rmp_serde::from_slice::<VersionProbe>(bytes) {
            Ok(probe) if probe.format_version > FORMAT_VERSION => {
                Err(newer_format(probe.format_version))
            }
            Ok(probe) => bail!(
                "snapshot format {} does not decode: {err}",
                probe.format_version
            ),
            Err(_) => bail!("not an epiphany snapshot: {err}"),
        }
    }

    /// Folds one record in: state, rollout position and anchors move forward together.
    pub fn advance(&mut self, record: &Record, line_bytes: u64) {
        let rewrites_anchored = record.restore.is_some()
            || record.patch.as_ref().is_some_and(|patch| {
                patch.graphs.is_some() || patch.investigation_checkpoint.is_some()
            });
        let before = rewrites_anchored.then(|| {
            (
                self.state.graphs.clone(),
                self.state.investigation_checkpoint.clone(),
            )
        });
        self.state = record.replay(std::mem::take(&mut self.state));
        if let Some((graphs, checkpoint)) = before {
            let anchor = Anchor {
                revision: record.revision,
                git_head: record.git_head.clone(),
            };
            refresh_anchors(
                &mut self.anchors,
                (&graphs, &checkpoint),
                &self.state,
                anchor,
            );
        }
        self.rollout_seq = record.seq;
        self.rollout_bytes += line_bytes;
        self.rollout_hash.clone_from(&record.hash);
    }
}

/// Moves the anchor of every graph node and of the checkpoint that a write changed.
fn refresh_anchors(
    anchors: &mut BTreeMap<String, Anchor>,
    (graphs_before, checkpoint_before): (&Graphs, &Option<InvestigationCheckpoint>),
    after: &State,
    anchor: Anchor,
) {
    if *graphs_before != after.graphs {
        let mut live = BTreeSet::new();
        for ((kind, graph), (_, old_graph)) in
            after.graphs.each().into_iter().zip(graphs_before.each())
        {
            for node in &graph.nodes {
                let key = node_anchor_key(kind, &node.id);
                let unchanged = old_graph.nodes.iter().any(|old| old == node);
                if !unchanged || !anchors.contains_key(&key) {
                    anchors.insert(key.clone(), anchor.clone());
                }
                live.insert(key);
            }
        }
        anchors.retain(|key, _| key == CHECKPOINT_ANCHOR || live.contains(key));
    }
    if *checkpoint_before != after.investigation_checkpoint {
        match after.investigation_checkpoint {
            Some(_) => {
                anchors.insert(CHECKPOINT_ANCHOR.to_owned(), anchor);
            }
            None => {
                anchors.remove(CHECKPOINT_ANCHOR);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::model::Graph;
    use crate::state::model::GraphNode;
    use crate::state::patch::Patch;
    use crate::state::rollout::Source;

    fn node(id: &str, purpose: &str) -> GraphNode {
        GraphNode {
            id: id.into(),
            title: id.into(),
            purpose: purpose.into(),
            mechanism: None,
            metaphor: None,
            status: None,
            code_refs: vec![],
        }
    }

    fn graphs_record(seq: u64, head: &str, nodes: Vec<GraphNode>) -> Record {
        Record {
            seq,
            revision: seq,
            at: String::new(),
            source: Source::Update,
            turn_id: None,
            git_head: Some(head.into()),
            changed_fields: vec![],
            patch: Some(Patch {
                graphs: Some(Graphs {
                    architecture: Graph {
                        nodes,
                        edges: vec![],
                    },
                    ..Graphs::default()
                }),
                ..Patch::default()
            }),
            restore: None,
            prev_hash: String::new(),
            hash: format!("h{seq}"),
        }
    }

    #[test]
    fn only_rewritten_nodes_move_their_anchor() {
        let mut snapshot = Snapshot::default();
        snapshot.advance(
            &graphs_record(1, "c1", vec![node("a", "x"), node("b", "y")]),
            10,
        );
        snapshot.advance(
            &graphs_record(2, "c2", vec![node("a", "x"), node("b", "changed")]),
            10,
        );
        let a = &snapshot.anchors[&node_anchor_key(GraphKind::Architecture, "a")];
        let b = &snapshot.anchors[&node_anchor_key(GraphKind::Architecture, "b")];
        assert_eq!((a.revision, a.git_head.as_deref()), (1, Some("c1")));
        assert_eq!((b.revision, b.git_head.as_deref()), (2, Some("c2")));
        assert_eq!(snapshot.rollout_bytes, 20);
        assert_eq!(snapshot.rollout_hash, "h2");
        snapshot.advance(&graphs_record(3, "c3", vec![node("b", "changed")]), 10);
        assert_eq!(snapshot.anchors.len(), 1);
    }

    #[test]
    fn encode_decode_round_trip_and_newer_format_is_refused() {
        let snapshot = Snapshot::default();
        let bytes = snapshot.encode().expect("encode");
        assert_eq!(Snapshot::decode(&bytes).expect("decode"), snapshot);
        let newer = Snapshot {
            format_version: 99,
            ..Snapshot::default()
        };
        let err = Snapshot::decode(&newer.encode().expect("encode")).expect_err("newer");
        assert!(err.to_string().contains("format 99 is newer"), "{err}");
        assert!(Snapshot::decode(b"").is_err());
        assert!(Snapshot::decode(b"\xc1garbage").is_err());
    }

    proptest::proptest! {
        #[test]
        fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..512)) {
            let _ = Snapshot::decode(&bytes);
        }

        #[test]
        fn truncated_snapshots_are_errors(cut in 1usize..200) {
            let bytes = Snapshot::default().encode().expect("encode");
            let cut = cut.min(bytes.len() - 1);
            proptest::prop_assert!(Snapshot::decode(&bytes[..cut]).is_err());
        }
    }
}
