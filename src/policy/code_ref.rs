//! Code references as people type them, as patches carry them, and as the work tree answers
//! for them.
//!
//! Owns the command-line spelling `PATH[:START[-END]][#SYMBOL]` (docs/cli.md#code-ref-spelling),
//! the code-ref key (docs/state.md#code-ref-key), the one walk over every code reference a patch or
//! a state carries ([`patch_code_refs_mut`], [`visit_state_code_refs`]), path resolution against
//! the directory a command runs in, and the rules a reference must keep against its file: lines
//! count from 1, a range is ordered and inside the file, a symbol occurs in the file (inside the
//! range when there is one). Pure: callers read the files and hand in what they found as
//! [`CitedFile`].

use std::collections::BTreeMap;
use std::collections::BTreeSet;
use std::collections::HashMap;
use std::fmt;
use std::hash::DefaultHasher;
use std::hash::Hasher;

use serde::Serialize;

use crate::policy::text::is_blank;
use crate::state::model::CodeRef;
use crate::state::model::EvidenceRecord;
use crate::state::model::GraphEdge;
use crate::state::model::GraphKind;
use crate::state::model::GraphLink;
use crate::state::model::GraphNode;
use crate::state::model::Graphs;
use crate::state::model::InvestigationCheckpoint;
use crate::state::model::Observation;
use crate::state::model::State;
use crate::state::patch::Patch;
use crate::state::patch::Upsert;
use crate::state::paths::segments;
use crate::state::paths::slash_key;

/// How a code reference is spelled on the command line.
pub const CODE_REF_SYNTAX: &str =
    "PATH[:START[-END]][#SYMBOL], e.g. `src/state/store.rs:10-42#Store::commit`";

/// The key of docs/state.md#code-ref-key: `slash-key(path):start:end:symbol`, absent numbers as
/// `0`; the note is not part of it.
pub fn code_ref_key(code_ref: &CodeRef) -> String {
    format!(
        "{}:{}:{}:{}",
        slash_key(&code_ref.path),
        code_ref.start_line.unwrap_or(0),
        code_ref.end_line.unwrap_or(0),
        code_ref.symbol.as_deref().unwrap_or("")
    )
}

/// Spells a code reference the way [`parse_code_ref`] reads it (the note is left out).
pub fn format_code_ref(code_ref: &CodeRef) -> String {
    let mut text = code_ref.path.clone();
    if let Some(start) = code_ref.start_line {
        text.push_str(&format!(":{start}"));
        if let Some(end) = code_ref.end_line.filter(|end| *end != start) {
            text.push_str(&format!("-{end}"));
        }
    }
    if let Some(symbol) = &code_ref.symbol {
        text.push_str(&format!("#{symbol}"));
    }
    text
}

/// Parses `PATH[:START[-END]][#SYMBOL]`. The symbol is everything after the first `#`; the line
/// range is everything after the first `:` before it, so a path cannot contain `:` or `#`. The
/// path is normalised to `/` separators without empty or `.` components, but kept as typed
/// otherwise (`..`, a leading `/`): where it points depends on the directory the command runs
/// in, which [`join_relative`] settles. The error says what is wrong, for the caller to put
/// next to the argument and its value.
pub fn parse_code_ref(text: &str) -> Result<CodeRef, String> {
    let (location, symbol) = match text.split_once('#') {
        Some((_, symbol)) if is_blank(symbol) => {
            return Err(format!(
                "the symbol after `#` is empty (expected {CODE_REF_SYNTAX})"
            ));
        }
        Some((location, symbol)) => (location, Some(symbol.trim().to_owned())),
        None => (text, None),
    };
    let (path, range) = match location.split_once(':') {
        Some((path, range)) => (path, Some(range)),
        None => (location, None),
    };
    let path = normalise_path(path)?;
    let (start_line, end_line) = match range {
        None => (None, None),
        Some(range) => parse_range(range)?,
    };
    Ok(CodeRef {
        path,
        start_line,
        end_line,
        symbol,
        note: None,
        planned: false,
    })
}

/// Why a code-ref path leaves the repository (absolute, or climbing with `..`), if it does.
pub fn escape_reason(path: &str) -> Option<&'static str> {
    let drive = path.as_bytes().get(1) == Some(&b':') && path.as_bytes()[0].is_ascii_alphabetic();
    if path.starts_with(['/', '\\']) || drive {
        return Some("is absolute; give it relative to the repository root");
    }
    segments(path)
        .any(|part| part == "..")
        .then_some("leaves the repository (`..` is not allowed)")
}

/// Why a repository-relative code-ref path can name no file of the repository, if it cannot:
/// it holds a control character (a line break in a path would break every line that shows it,
/// and no source file is named so), it is blank or holds a blank name, or it lies in `.git/`,
/// git's own directory.
pub fn path_refusal(path: &str) -> Option<&'static str> {
    if path.chars().any(char::is_control) {
        return Some("holds a control character (a line break, a tab, NUL, ...)");
    }
    if is_blank(path) || segments(path).any(|part| !part.is_empty() && is_blank(part)) {
        return Some("is blank, or holds a blank name");
    }
    segments(path)
        .any(|part| part.eq_ignore_ascii_case(".git"))
        .then_some("lies in `.git/`, git's own directory, not in the repository's files")
}

fn normalise_path(path: &str) -> Result<String, String> {
    if is_blank(path) {
        return Err(format!("the path is empty (expected {CODE_REF_SYNTAX})"));
    }
    let parts: Vec<&str> = segments(path)
        .filter(|part| !matches!(*part, "" | "."))
        .collect();
    if parts.is_empty() {
        return Err(format!("the path `{path}` names no file"));
    }
    let lead = if path.starts_with(['/', '\\']) {
        "/"
    } else {
        ""
    };
    Ok(format!("{lead}{}", parts.join("/")))
}

/// Joins `path` (relative) onto `base` (a directory relative to the repository root, `""` for
/// the root itself), folding `.` and `..` lexically. `None` when the result leaves the root or
/// names the root itself.
pub fn join_relative(base: &str, path: &str) -> Option<String> {
    let mut parts: Vec<&str> = Vec::new();
    for part in segments(base).chain(segments(path)) {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop()?;
            }
            part => parts.push(part),
        }
    }
    (!parts.is_empty()).then(|| parts.join("/"))
}

/// The repository-relative paths a relative `path` may mean when typed in `cwd` (relative to
/// the root): joined onto `cwd`, and taken from the root. `cwd_first` orders them: a person
/// typing on the command line means the directory they are in; a patch document is written
/// relative to the root. Duplicates and spellings that leave the root are dropped.
pub fn path_candidates(path: &str, cwd: &str, cwd_first: bool) -> Vec<String> {
    let from_cwd = join_relative(cwd, path);
    let from_root = join_relative("", path);
    let ordered = if cwd_first {
        [from_cwd, from_root]
    } else {
        [from_root, from_cwd]
    };
    let mut candidates: Vec<String> = Vec::new();
    for candidate in ordered.into_iter().flatten() {
        if !candidates.contains(&candidate) {
            candidates.push(candidate);
        }
    }
    candidates
}

/// An absolute `path` made relative to the absolute `root`, lexically; `None` when it is not
/// under the root.
pub fn strip_root(path: &str, root: &str) -> Option<String> {
    let path = slash_key(path);
    let root = slash_key(root);
    let rest = path.strip_prefix(root.trim_end_matches('/'))?;
    let rest = rest.strip_prefix('/')?;
    join_relative("", rest)
}

/// Whether a path is absolute: it starts with a separator or a drive letter.
pub fn is_absolute(path: &str) -> bool {
    let bytes = path.as_bytes();
    path.starts_with(['/', '\\'])
        || (bytes.len() > 1 && bytes[1] == b':' && bytes[0].is_ascii_alphabetic())
}

/// The record that carries a code reference.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(tag = "record", rename_all = "snake_case")]
pub enum RefOwner {
    /// A graph node.
    Node {
        /// Which graph.
        graph: GraphKind,
        /// The node id.
        id: String,
    },
    /// A graph edge.
    Edge {
        /// Which graph.
        graph: GraphKind,
        /// The edge id, when it has one.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        id: Option<String>,
        /// Where it starts.
        source_id: String,
        /// Where it ends.
        target_id: String,
    },
    /// A link between a dataflow and an architecture node.
    Link {
        /// The dataflow node.
        dataflow_node_id: String,
        /// The architecture node.
        architecture_node_id: String,
    },
    /// An observation.
    Observation {
        /// Its id.
        id: String,
    },
    /// An evidence record.
    Evidence {
        /// Its id.
        id: String,
    },
    /// The investigation checkpoint.
    InvestigationCheckpoint {
        /// Its id.
        id: String,
    },
}

impl RefOwner {
    /// The record's key, as conflicts name records (docs/store.md#conflicts): where a problem
    /// with one of its references is reported (`observations/obs-1`).
    pub fn key(&self) -> String {
        match self {
            RefOwner::Node { graph, id } => format!("{}_nodes/{id}", graph.as_str()),
            RefOwner::Edge {
                graph,
                id: Some(id),
                ..
            } => format!("{}_edges/{id}", graph.as_str()),
            RefOwner::Edge {
                graph,
                id: None,
                source_id,
                target_id,
            } => format!("{}_edges/{source_id}->{target_id}", graph.as_str()),
            RefOwner::Link {
                dataflow_node_id,
                architecture_node_id,
            } => format!("links/{dataflow_node_id}->{architecture_node_id}"),
            RefOwner::Observation { id } => format!("observations/{id}"),
            RefOwner::Evidence { id } => format!("evidence/{id}"),
            RefOwner::InvestigationCheckpoint { .. } => "investigation_checkpoint".to_owned(),
        }
    }

    /// Whether a write can rewrite the record in place (graphs and the checkpoint are replaced
    /// wholesale); observations and evidence are appended once and kept as written.
    pub fn is_rewritable(&self) -> bool {
        !matches!(
            self,
            RefOwner::Observation { .. } | RefOwner::Evidence { .. }
        )
    }
}

impl fmt::Display for RefOwner {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RefOwner::Node { graph, id } => write!(f, "{} node \"{id}\"", graph.as_str()),
            RefOwner::Edge {
                graph,
                id: Some(id),
                ..
            } => write!(f, "{} edge \"{id}\"", graph.as_str()),
            RefOwner::Edge {
                graph,
                id: None,
                source_id,
                target_id,
            } => write!(
                f,
                "{} edge \"{source_id}\" -> \"{target_id}\"",
                graph.as_str()
            ),
            RefOwner::Link {
                dataflow_node_id,
                architecture_node_id,
            } => write!(
                f,
                "graph link \"{dataflow_node_id}\" -> \"{architecture_node_id}\""
            ),
            RefOwner::Observation { id } => write!(f, "observation \"{id}\""),
            RefOwner::Evidence { id } => write!(f, "evidence \"{id}\""),
            RefOwner::InvestigationCheckpoint { id } => {
                write!(f, "investigation checkpoint \"{id}\"")
            }
        }
    }
}

/// Every code reference of the graphs, mutably, with its owner: nodes, then edges, of the
/// architecture graph then the dataflow graph, then links.
pub fn graph_code_refs_mut(graphs: &mut Graphs) -> Vec<(RefOwner, &mut CodeRef)> {
    let mut out = Vec::new();
    let Graphs {
        architecture,
        dataflow,
        links,
    } = graphs;
    push_graph_refs(
        &mut out,
        GraphKind::Architecture,
        &mut architecture.nodes,
        &mut architecture.edges,
    );
    push_graph_refs(
        &mut out,
        GraphKind::Dataflow,
        &mut dataflow.nodes,
        &mut dataflow.edges,
    );
    push_link_refs(&mut out, links);
    out
}

/// Appends the code references of one graph's nodes, then its edges, with their owners.
fn push_graph_refs<'a>(
    out: &mut Vec<(RefOwner, &'a mut CodeRef)>,
    kind: GraphKind,
    nodes: &'a mut [GraphNode],
    edges: &'a mut [GraphEdge],
) {
    for node in nodes {
        let owner = RefOwner::Node {
            graph: kind,
            id: node.id.clone(),
        };
        out.extend(node.code_refs.iter_mut().map(|r| (owner.clone(), r)));
    }
    for edge in edges {
        let owner = RefOwner::Edge {
            graph: kind,
            id: edge.id.clone(),
            source_id: edge.source_id.clone(),
            target_id: edge.target_id.clone(),
        };
        out.extend(edge.code_refs.iter_mut().map(|r| (owner.clone(), r)));
    }
}

/// Appends the code references of links, with their owners.
fn push_link_refs<'a>(out: &mut Vec<(RefOwner, &'a mut CodeRef)>, links: &'a mut [GraphLink]) {
    for link in links {
        let owner = RefOwner::Link {
            dataflow_node_id: link.dataflow_node_id.clone(),
            architecture_node_id: link.architecture_node_id.clone(),
        };
        out.extend(link.code_refs.iter_mut().map(|r| (owner.clone(), r)));
    }
}

/// Every code reference a patch carries, mutably, with the record that carries it: the one
/// seam through which the write path checks and resolves references. A new kind of record
/// that carries code references joins the walk here.
pub fn patch_code_refs_mut(patch: &mut Patch) -> Vec<(RefOwner, &mut CodeRef)> {
    let Patch {
        graphs,
        investigation_checkpoint,
        observations,
        evidence,
        upsert,
        ..
    } = patch;
    let mut out = Vec::new();
    if let Some(graphs) = graphs {
        out.extend(graph_code_refs_mut(graphs));
    }
    let Upsert {
        architecture_nodes,
        architecture_edges,
        dataflow_nodes,
        dataflow_edges,
        links,
        ..
    } = upsert;
    push_graph_refs(
        &mut out,
        GraphKind::Architecture,
        architecture_nodes,
        architecture_edges,
    );
    push_graph_refs(
        &mut out,
        GraphKind::Dataflow,
        dataflow_nodes,
        dataflow_edges,
    );
    push_link_refs(&mut out, links);
    if let Some(checkpoint) = investigation_checkpoint {
        let owner = RefOwner::InvestigationCheckpoint {
            id: checkpoint.brief.checkpoint_id.clone(),
        };
        out.extend(checkpoint.code_refs.iter_mut().map(|r| (owner.clone(), r)));
    }
    for observation in observations {
        let owner = RefOwner::Observation {
            id: observation.id.clone(),
        };
        out.extend(observation.code_refs.iter_mut().map(|r| (owner.clone(), r)));
    }
    for record in evidence {
        let owner = RefOwner::Evidence {
            id: record.id.clone(),
        };
        out.extend(record.code_refs.iter_mut().map(|r| (owner.clone(), r)));
    }
    out
}

/// The record that carries a reference, borrowed from the state: [`RefOwner`] without the
/// copies, for walks over every reference where only a few owners are ever named.
#[derive(Debug, Clone, Copy)]
pub enum OwnerRef<'a> {
    /// A graph node.
    Node(GraphKind, &'a GraphNode),
    /// A graph edge.
    Edge(GraphKind, &'a GraphEdge),
    /// A graph link.
    Link(&'a GraphLink),
    /// The investigation checkpoint.
    InvestigationCheckpoint(&'a InvestigationCheckpoint),
    /// An observation.
    Observation(&'a Observation),
    /// An evidence record.
    Evidence(&'a EvidenceRecord),
}

impl OwnerRef<'_> {
    /// The owned owner, for a report.
    pub fn to_owner(self) -> RefOwner {
        match self {
            OwnerRef::Node(graph, node) => RefOwner::Node {
                graph,
                id: node.id.clone(),
            },
            OwnerRef::Edge(graph, edge) => RefOwner::Edge {
                graph,
                id: edge.id.clone(),
                source_id: edge.source_id.clone(),
                target_id: edge.target_id.clone(),
            },
            OwnerRef::Link(link) => RefOwner::Link {
                dataflow_node_id: link.dataflow_node_id.clone(),
                architecture_node_id: link.architecture_node_id.clone(),
            },
            OwnerRef::InvestigationCheckpoint(checkpoint) => RefOwner::InvestigationCheckpoint {
                id: checkpoint.brief.checkpoint_id.clone(),
            },
            OwnerRef::Observation(observation) => RefOwner::Observation {
                id: observation.id.clone(),
            },
            OwnerRef::Evidence(record) => RefOwner::Evidence {
                id: record.id.clone(),
            },
        }
    }

    /// See [`RefOwner::is_rewritable`].
    pub fn is_rewritable(self) -> bool {
        !matches!(self, OwnerRef::Observation(_) | OwnerRef::Evidence(_))
    }
}

/// Visits every code reference the state holds, with the record that carries it: graphs (as
/// in [`graph_code_refs_mut`]), the investigation checkpoint, observations, evidence. A visit,
/// not a list: a large state has tens of thousands of references.
pub fn visit_state_code_refs<'a>(state: &'a State, visit: impl FnMut(OwnerRef<'a>, &'a CodeRef)) {
    let [
        (architecture, architecture_graph),
        (dataflow, dataflow_graph),
    ] = state.graphs.each();
    RefCarriers {
        graphs: [
            (
                architecture,
                &architecture_graph.nodes,
                &architecture_graph.edges,
            ),
            (dataflow, &dataflow_graph.nodes, &dataflow_graph.edges),
        ],
        links: &state.graphs.links,
        checkpoint: state.investigation_checkpoint.as_ref(),
        observations: &state.observations,
        evidence: &state.recent_evidence,
    }
    .visit(visit);
}

/// The records a walk over code references visits: the whole state's, or the part of them a
/// projection shows.
pub struct RefCarriers<'a> {
    /// Each graph's nodes and edges.
    pub graphs: [(GraphKind, &'a [GraphNode], &'a [GraphEdge]); 2],
    /// Links between the graphs.
    pub links: &'a [GraphLink],
    /// The investigation checkpoint.
    pub checkpoint: Option<&'a InvestigationCheckpoint>,
    /// Observations.
    pub observations: &'a [Observation],
    /// Evidence records.
    pub evidence: &'a [EvidenceRecord],
}

impl<'a> RefCarriers<'a> {
    /// Visits every code reference of the records, in this order, with the record carrying it.
    pub fn visit(self, mut visit: impl FnMut(OwnerRef<'a>, &'a CodeRef)) {
        for (kind, nodes, edges) in self.graphs {
            for node in nodes {
                for code_ref in &node.code_refs {
                    visit(OwnerRef::Node(kind, node), code_ref);
                }
            }
            for edge in edges {
                for code_ref in &edge.code_refs {
                    visit(OwnerRef::Edge(kind, edge), code_ref);
                }
            }
        }
        for link in self.links {
            for code_ref in &link.code_refs {
                visit(OwnerRef::Link(link), code_ref);
            }
        }
        if let Some(checkpoint) = self.checkpoint {
            for code_ref in &checkpoint.code_refs {
                visit(OwnerRef::InvestigationCheckpoint(checkpoint), code_ref);
            }
        }
        for observation in self.observations {
            for code_ref in &observation.code_refs {
                visit(OwnerRef::Observation(observation), code_ref);
            }
        }
        for record in self.evidence {
            for code_ref in &record.code_refs {
                visit(OwnerRef::Evidence(record), code_ref);
            }
        }
    }
}

/// A cited path as the work tree has it, read by the caller.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CitedFile {
    /// Nothing at that path.
    Missing,
    /// A directory.
    Directory,
    /// A symbolic link that leads outside the repository, or something that is neither a file
    /// nor a directory (a device, a pipe): never read, so a committed link to `/dev/zero` or to
    /// a file outside cannot stall a read or answer questions about that file.
    Elsewhere,
    /// A file: how many lines it has, and the lines (1-based) where each symbol asked about
    /// occurs.
    File {
        /// Lines in the file (a final newline does not start another).
        line_count: u32,
        /// Symbol → the lines it occurs on, ascending; symbols that do not occur map to `[]`.
        symbol_lines: BTreeMap<String, Vec<u32>>,
        /// For a file of a parsed language: symbol → its definitions, in file order (`[]`:
        /// none, even if the name occurs). `None` where the language is not parsed, and
        /// occurrences are all there is.
        definitions: Option<BTreeMap<String, Vec<Defined>>>,
    },
}

/// A definition's first and last line.
pub type Span = (u32, u32);

/// One definition of a cited symbol: where it is, and a digest of its text, which tells
/// whether the definition itself changed between two versions of its file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Defined {
    /// Its first and last line.
    pub span: Span,
    /// A hash of its lines' text (comparable within one process only).
    pub digest: u64,
}

impl CitedFile {
    /// The lines `symbol` occurs on (empty when it does not, or when this is not a file).
    pub fn lines_of(&self, symbol: &str) -> &[u32] {
        match self {
            CitedFile::File { symbol_lines, .. } => {
                symbol_lines.get(symbol).map_or(&[][..], Vec::as_slice)
            }
            _ => &[],
        }
    }

    /// `symbol`'s definitions when the file's language is parsed; `None` when it is not (or
    /// this is not a file).
    pub fn defined(&self, symbol: &str) -> Option<&[Defined]> {
        match self {
            CitedFile::File {
                definitions: Some(definitions),
                ..
            } => Some(definitions.get(symbol).map_or(&[][..], Vec::as_slice)),
            _ => None,
        }
    }

    /// The spans of `symbol`'s definitions when the file's language is parsed; `None` when it
    /// is not (or this is not a file).
    pub fn definitions_of(&self, symbol: &str) -> Option<Vec<Span>> {
        let defined = self.defined(symbol)?;
        Some(defined.iter().map(|definition| definition.span).collect())
    }

    /// This file with the definitions of a parse of `text` (its contents): for each symbol
    /// asked about, the definitions named like it (its last segment: `Store::commit` →
    /// `commit`), each with the digest of its lines.
    pub fn with_definitions(
        self,
        definitions: &[crate::policy::code_map::Definition],
        text: &str,
    ) -> Self {
        let CitedFile::File {
            line_count,
            symbol_lines,
            ..
        } = self
        else {
            return self;
        };
        let line_starts: Vec<usize> = std::iter::once(0)
            .chain(text.match_indices('\n').map(|(at, _)| at + 1))
            .collect();
        let digest = |(first, last): Span| {
            let at = |line: u32| {
                let index = usize::try_from(line).unwrap_or(usize::MAX);
                line_starts.get(index).copied().unwrap_or(text.len())
            };
            let lines = text
                .get(at(first.saturating_sub(1))..at(last))
                .unwrap_or("");
            let mut hasher = DefaultHasher::new();
            hasher.write(lines.as_bytes());
            hasher.finish()
        };
        let found = symbol_lines
            .keys()
            .map(|symbol| {
                let (needle, _) = symbol_needle(symbol);
                let defined = definitions
                    .iter()
                    .filter(|definition| definition.name == needle)
                    .map(|definition| {
                        let span = (definition.start_line, definition.end_line);
                        Defined {
                            span,
                            digest: digest(span),
                        }
                    })
                    .collect();
                (symbol.clone(), defined)
            })
            .collect();
        CitedFile::File {
            line_count,
            symbol_lines,
            definitions: Some(found),
        }
    }
}

/// Whether a reference's lines hold against its symbol's definitions: they are a definition's
/// whole span, a part of one that starts after it does, or a window around one that starts
/// before it does. A range that starts where the definition starts but ends elsewhere cited
/// all of it before it grew or shrank, and no longer holds.
pub fn range_holds(start: u32, end: u32, spans: &[Span]) -> bool {
    spans.iter().any(|&(first, last)| {
        (start, end) == (first, last)
            || (first < start && end <= last)
            || (start < first && last <= end)
    })
}

/// Whether the definition `code_ref` cites is, word for word, still a definition of its
/// symbol: `then` is its file as it was when the reference was written, `now` as it is. The
/// cited definition is the one its lines fall in (all of the symbol's definitions when they
/// fall in none, or there are none). `false` whenever it cannot be told: no symbol, a
/// language not parsed, no definition then.
pub fn definition_unchanged(code_ref: &CodeRef, then: &CitedFile, now: &CitedFile) -> bool {
    let Some(symbol) = code_ref.symbol.as_deref() else {
        return false;
    };
    let (Some(before), Some(after)) = (then.defined(symbol), now.defined(symbol)) else {
        return false;
    };
    let within = |definition: &&Defined| {
        ref_lines(code_ref).is_some_and(|(start, end)| {
            let (first, last) = definition.span;
            start <= last && first <= end
        })
    };
    let cited: Vec<&Defined> = match before.iter().filter(within).collect::<Vec<_>>() {
        within if within.is_empty() => before.iter().collect(),
        within => within,
    };
    !cited.is_empty()
        && cited
            .iter()
            .all(|old| after.iter().any(|new| new.digest == old.digest))
}

/// The span a reference to `symbol` anchors to: of its definitions, the one nearest `near`
/// (the longest when there is nothing to be near: a body over a declaration).
pub fn anchor_span(spans: &[Span], near: Option<u32>) -> Option<Span> {
    match near {
        Some(line) => spans
            .iter()
            .copied()
            .min_by_key(|&(first, _)| first.abs_diff(line)),
        None => spans
            .iter()
            .copied()
            .max_by_key(|&(first, last)| (last - first, std::cmp::Reverse(first))),
    }
}

/// The name of the definitions a symbol means: its last segment (`Store::commit` → `commit`,
/// `a.b` → `b`), or the whole trimmed symbol when that is not an identifier.
pub fn definition_name(symbol: &str) -> &str {
    symbol_needle(symbol).0
}

/// What a symbol is searched for: its last segment (`Store::commit` → `commit`, `a.b` → `b`) as
/// a whole identifier when it is one, the whole trimmed symbol as plain text otherwise.
fn symbol_needle(symbol: &str) -> (&str, bool) {
    let symbol = symbol.trim();
    let last = symbol
        .rsplit("::")
        .next()
        .and_then(|tail| tail.rsplit('.').next())
        .map(str::trim)
        .unwrap_or(symbol);
    if !last.is_empty() && last.chars().all(is_identifier_char) {
        (last, true)
    } else {
        (symbol, false)
    }
}

fn is_identifier_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_' || c == '$'
}

/// Counts the lines of `text` and finds where each of `symbols` occurs; see [`scan_bytes`].
pub fn scan_text(text: &str, symbols: &BTreeSet<String>) -> CitedFile {
    scan_bytes(text.as_bytes(), symbols)
}

/// Whether a byte can be part of an identifier: ASCII letters, digits, `_`, `$`, and every
/// byte of a non-ASCII character (so `é` never splits a word).
const IDENTIFIER_BYTES: [bool; 256] = {
    let mut table = [false; 256];
    let mut byte = 0;
    while byte < 256 {
        let b = byte as u8;
        table[byte] = b.is_ascii_alphanumeric() || b == b'_' || b == b'$' || b >= 0x80;
        byte += 1;
    }
    table
};

/// Counts the lines of a file (as `str::lines` would) and finds the lines where each of
/// `symbols` occurs, in one pass over the bytes: identifier symbols are matched against whole
/// identifiers, and only identifiers whose length and first byte could match are looked up;
/// other symbols are searched as plain text, line by line. Bytes need not be UTF-8.
pub fn scan_bytes(bytes: &[u8], symbols: &BTreeSet<String>) -> CitedFile {
    let symbols: Vec<&String> = symbols.iter().collect();
    let needles: Vec<(&str, bool)> = symbols.iter().map(|s| symbol_needle(s)).collect();
    // Lines found per symbol, by its index in `symbols`.
    let mut found: Vec<Vec<u32>> = vec![Vec::new(); symbols.len()];
    let mut by_identifier: HashMap<&[u8], Vec<usize>> = HashMap::new();
    let mut by_text: Vec<(&[u8], usize)> = Vec::new();
    for (index, (needle, identifier)) in needles.iter().enumerate() {
        match identifier {
            true => by_identifier
                .entry(needle.as_bytes())
                .or_default()
                .push(index),
            false if !needle.is_empty() => by_text.push((needle.as_bytes(), index)),
            false => {}
        }
    }
    let mut first_bytes = [false; 256];
    let (mut shortest, mut longest) = (usize::MAX, 0);
    for needle in by_identifier.keys() {
        first_bytes[usize::from(needle[0])] = true;
        shortest = shortest.min(needle.len());
        longest = longest.max(needle.len());
    }
    let mut record = |index: usize, line: u32| {
        let lines = &mut found[index];
        if lines.last() != Some(&line) {
            lines.push(line);
        }
    };
    let mut line: u32 = 1;
    let mut at = 0;
    if by_identifier.is_empty() {
        // Only the line count is needed.
        line = line.saturating_add(
            u32::try_from(bytes.iter().filter(|b| **b == b'\n').count()).unwrap_or(u32::MAX),
        );
        at = bytes.len();
    }
    while at < bytes.len() {
        let byte = bytes[at];
        if byte == b'\n' {
            line = line.saturating_add(1);
            at += 1;
            continue;
        }
        if !IDENTIFIER_BYTES[usize::from(byte)] {
            at += 1;
            continue;
        }
        let start = at;
        while at < bytes.len() && IDENTIFIER_BYTES[usize::from(bytes[at])] {
            at += 1;
        }
        let word = &bytes[start..at];
        if (shortest..=longest).contains(&word.len())
            && first_bytes[usize::from(word[0])]
            && let Some(owners) = by_identifier.get(word)
        {
            for index in owners {
                record(*index, line);
            }
        }
    }
    if !by_text.is_empty() {
        for (index, text_line) in bytes.split(|b| *b == b'\n').enumerate() {
            let number = u32::try_from(index + 1).unwrap_or(u32::MAX);
            for (needle, index) in &by_text {
                if text_line
                    .windows(needle.len())
                    .any(|window| window == *needle)
                {
                    record(*index, number);
                }
            }
        }
    }
    // `line` is one past the newlines seen; a last line without a newline counts too.
    let terminated = bytes.last().is_none_or(|b| *b == b'\n');
    CitedFile::File {
        line_count: if terminated { line - 1 } else { line },
        symbol_lines: symbols.into_iter().cloned().zip(found).collect(),
        definitions: None,
    }
}

/// The line range a reference covers: `start..=end`, `start..=start` without an end.
pub fn ref_lines(code_ref: &CodeRef) -> Option<(u32, u32)> {
    let start = code_ref.start_line?;
    Some((start, code_ref.end_line.unwrap_or(start)))
}

/// What is wrong with a reference's lines and symbol on their own, without its file.
pub fn shape_problems(code_ref: &CodeRef) -> Vec<String> {
    let mut problems = Vec::new();
    if code_ref.start_line == Some(0) {
        problems.push("start_line must be 1 or more (lines count from 1)".to_owned());
    }
    if code_ref.end_line == Some(0) {
        problems.push("end_line must be 1 or more (lines count from 1)".to_owned());
    }
    match (code_ref.start_line, code_ref.end_line) {
        (None, Some(_)) => problems.push("end_line is given without start_line".to_owned()),
        (Some(start), Some(end)) if start > end => {
            problems.push(format!("start_line {start} is after end_line {end}"))
        }
        _ => {}
    }
    if code_ref.symbol.as_deref().is_some_and(is_blank) {
        problems.push("symbol is empty".to_owned());
    }
    problems
}

/// What is wrong with a reference against its file as the work tree has it: the file must
/// exist, the range must lie inside it, and the symbol must occur in it (inside the range when
/// there is one); where the language is parsed, the symbol must have a definition, and a
/// range must be its span or lie inside it ([`range_holds`]), as `freshness` will check. A missing file is one problem; the caller decides whether a plan may cite it.
pub fn located_problems(code_ref: &CodeRef, file: &CitedFile) -> Vec<String> {
    let (line_count, symbol) = match file {
        CitedFile::Missing => return vec!["no such file in the work tree".to_owned()],
        CitedFile::Elsewhere => {
            return vec![
                "leads outside the repository (a symbolic link) or to something that is not a file; cite the file itself".to_owned(),
            ];
        }
        CitedFile::Directory => {
            return vec!["is a directory; a code ref names a file".to_owned()];
        }
        CitedFile::File { line_count, .. } => (*line_count, code_ref.symbol.as_deref()),
    };
    let mut problems = Vec::new();
    let range = ref_lines(code_ref);
    if let Some((start, end)) = range {
        let last = start.max(end);
        if last > line_count {
            problems.push(format!(
                "line {last} is past the end of the file ({line_count} lines)"
            ));
        }
    }
    if let Some(symbol) = symbol.filter(|s| !is_blank(s)) {
        let lines = file.lines_of(symbol);
        if let Some(spans) = file.definitions_of(symbol) {
            match range {
                _ if spans.is_empty() && lines.is_empty() => {
                    problems.push(format!("symbol `{symbol}` does not occur in the file"));
                }
                _ if spans.is_empty() => problems.push(format!(
                    "symbol `{symbol}` has no definition in the file (a mention is not one; it occurs at {})",
                    line_list(lines)
                )),
                Some((start, end)) if !range_holds(start, end, &spans) => {
                    problems.push(format!(
                        "lines {start}-{end} are not the definition of `{symbol}`, a part of it or a window around it (it is at {}; cite the symbol without lines to take its span)",
                        span_list(&spans)
                    ));
                }
                _ => {}
            }
            return problems;
        }
        match range {
            _ if lines.is_empty() => {
                problems.push(format!("symbol `{symbol}` does not occur in the file"));
            }
            Some((start, end)) if !lines.iter().any(|l| (start..=end).contains(l)) => {
                problems.push(format!(
                    "symbol `{symbol}` does not occur in lines {start}-{end} (it does at {})",
                    line_list(lines)
                ));
            }
            _ => {}
        }
    }
    problems
}

/// `lines 5-9`, `lines 5-9, 20-31`.
pub fn span_list(spans: &[Span]) -> String {
    let shown: Vec<String> = spans
        .iter()
        .map(|(first, last)| format!("{first}-{last}"))
        .collect();
    format!("lines {}", shown.join(", "))
}

/// `5`, `5, 9`, or the first few and a count: `5, 9, 12, ... (7 in all)`.
pub fn line_list(lines: &[u32]) -> String {
    const SHOWN: usize = 5;
    let shown: Vec<String> = lines.iter().take(SHOWN).map(u32::to_string).collect();
    let word = if lines.len() == 1 { "line" } else { "lines" };
    if lines.len() > SHOWN {
        format!("{word} {}, ... ({} in all)", shown.join(", "), lines.len())
    } else {
        format!("{word} {}", shown.join(", "))
    }
}

/// The reference moved onto its symbol's definition nearest to where its range was, with the
/// definition's span, where the language is parsed; elsewhere onto the occurrence nearest to
/// where its range was, keeping the range's length inside the file. `None` when it has no
/// range or symbol, or the symbol is not defined (parsed) or does not occur.
pub fn follow_symbol(code_ref: &CodeRef, file: &CitedFile) -> Option<CodeRef> {
    let (start, end) = ref_lines(code_ref)?;
    let CitedFile::File { line_count, .. } = file else {
        return None;
    };
    let symbol = code_ref.symbol.as_deref()?;
    if let Some(spans) = file.definitions_of(symbol) {
        let (first, last) = anchor_span(&spans, Some(start))?;
        return Some(CodeRef {
            start_line: Some(first),
            end_line: Some(last),
            ..code_ref.clone()
        });
    }
    let lines = file.lines_of(symbol);
    let nearest = *lines.iter().min_by_key(|line| line.abs_diff(start))?;
    let span = end - start;
    let new_end = nearest.saturating_add(span).min(*line_count).max(nearest);
    Some(CodeRef {
        start_line: Some(nearest),
        end_line: code_ref.end_line.map(|_| new_end),
        ..code_ref.clone()
    })
}

fn parse_range(range: &str) -> Result<(Option<u32>, Option<u32>), String> {
    let (start, end) = match range.split_once('-') {
        Some((start, end)) => (start, Some(end)),
        None => (range, None),
    };
    let start = parse_line(start, "start")?;
    let Some(end) = end else {
        return Ok((Some(start), None));
    };
    let end = parse_line(end, "end")?;
    if start > end {
        return Err(format!(
            "the start line {start} is after the end line {end}"
        ));
    }
    Ok((Some(start), Some(end)))
}

fn parse_line(text: &str, which: &str) -> Result<u32, String> {
    match text.parse::<u32>() {
        Ok(0) => Err(format!(
            "the {which} line must be 1 or more (lines count from 1)"
        )),
        Ok(line) if text.bytes().all(|b| b.is_ascii_digit()) => Ok(line),
        _ => Err(format!(
            "the {which} line `{text}` is not a line number (expected {CODE_REF_SYNTAX})"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn code_ref(path: &str, start: Option<u32>, end: Option<u32>, symbol: Option<&str>) -> CodeRef {
        CodeRef {
            path: path.into(),
            start_line: start,
            end_line: end,
            symbol: symbol.map(Into::into),
            note: None,
            planned: false,
        }
    }

    #[test]
    fn ranges_hold_as_the_span_a_part_or_a_window_and_anchor_to_the_nearest() {
        let spans = [(10, 20), (40, 41)];
        for (start, end, holds) in [
            (10, 20, true),  // the span
            (12, 15, true),  // a part, starting inside
            (8, 22, true),   // a window around it
            (10, 15, false), // started with it, now longer: it grew
            (10, 25, false), // started with it, now shorter: it shrank
            (5, 12, false),  // it moved down
            (30, 35, false), // elsewhere
        ] {
            assert_eq!(range_holds(start, end, &spans), holds, "{start}-{end}");
        }
        assert_eq!(anchor_span(&spans, Some(38)), Some((40, 41)));
        assert_eq!(anchor_span(&spans, None), Some((10, 20)));
        assert_eq!(anchor_span(&[], None), None);
        let file = scan_text("// helper\nfn helper() {}\n", &["helper".to_owned()].into());
        let parsed = file.clone().with_definitions(
            &[crate::policy::code_map::Definition {
                name: "helper".into(),
                kind: "function".into(),
                line: 2,
                start_line: 2,
                end_line: 2,
                signature: "fn helper() {}".into(),
            }],
            "// helper\nfn helper() {}\n",
        );
        assert_eq!(file.definitions_of("helper"), None);
        assert_eq!(parsed.definitions_of("helper"), Some(vec![(2, 2)]));
        let mention = code_ref("a.rs", Some(1), None, Some("helper"));
        assert!(located_problems(&mention, &file).is_empty());
        assert_eq!(
            located_problems(&mention, &parsed),
            [
                "lines 1-1 are not the definition of `helper`, a part of it or a window around it (it is at lines 2-2; cite the symbol without lines to take its span)"
            ]
        );
    }

    #[test]
    fn a_cited_definition_is_unchanged_while_its_own_text_is() {
        const THEN: &str = "fn new() {\n    a();\n}\nfn new() {\n    b();\n}\n";
        let parsed = |text: &str| {
            let definition = |start_line: u32| crate::policy::code_map::Definition {
                name: "new".into(),
                kind: "function".into(),
                line: start_line,
                start_line,
                end_line: start_line + 2,
                signature: "fn new() {".into(),
            };
            scan_text(text, &["new".to_owned()].into())
                .with_definitions(&[definition(1), definition(4)], text)
        };
        let then = parsed(THEN);
        let second = code_ref("a.rs", Some(4), Some(6), Some("new"));
        let any = code_ref("a.rs", None, None, Some("new"));
        let first_changed = parsed(&THEN.replace("a()", "c()"));
        assert!(definition_unchanged(&second, &then, &first_changed));
        assert!(!definition_unchanged(&any, &then, &first_changed));
        let second_changed = parsed(&THEN.replace("b()", "c()"));
        assert!(!definition_unchanged(&second, &then, &second_changed));
        // The definitions swapped places: each is still there, word for word.
        let swapped = parsed("fn new() {\n    b();\n}\nfn new() {\n    a();\n}\n");
        assert!(definition_unchanged(&second, &then, &swapped));
        // Not parsed, or no symbol: it cannot be told.
        let unparsed = scan_text(THEN, &["new".to_owned()].into());
        assert!(!definition_unchanged(&second, &unparsed, &unparsed));
        let no_symbol = code_ref("a.rs", Some(1), Some(3), None);
        assert!(!definition_unchanged(&no_symbol, &then, &then));
    }

    #[test]
    fn parses_every_documented_form() {
        let cases = [
            ("src/lib.rs", code_ref("src/lib.rs", None, None, None)),
            ("src/lib.rs:7", code_ref("src/lib.rs", Some(7), None, None)),
            (
                "src/lib.rs:7-7",
                code_ref("src/lib.rs", Some(7), Some(7), None),
            ),
            (
                "src/state/store.rs:10-42#Store::commit",
                code_ref(
                    "src/state/store.rs",
                    Some(10),
                    Some(42),
                    Some("Store::commit"),
                ),
            ),
            (
                "src/lib.rs#main",
                code_ref("src/lib.rs", None, None, Some("main")),
            ),
            ("./src//x.rs", code_ref("src/x.rs", None, None, None)),
            ("src\\win.rs:3", code_ref("src/win.rs", Some(3), None, None)),
        ];
        for (text, expected) in cases {
            assert_eq!(parse_code_ref(text), Ok(expected), "{text}");
        }
    }

    #[test]
    fn refuses_what_cannot_be_a_reference() {
        let cases = [
            ("", "the path is empty"),
            (":10", "the path is empty"),
            ("src/x.rs:", "the start line `` is not a line number"),
            ("src/x.rs:ten", "the start line `ten` is not a line number"),
            ("src/x.rs:-4", "the start line `` is not a line number"),
            ("src/x.rs:4-", "the end line `` is not a line number"),
            ("src/x.rs:+4", "the start line `+4` is not a line number"),
            ("src/x.rs:0", "the start line must be 1 or more"),
            ("src/x.rs:99999999999", "is not a line number"),
            ("src/x.rs:9-3", "the start line 9 is after the end line 3"),
            ("src/x.rs#", "the symbol after `#` is empty"),
            ("./.", "names no file"),
        ];
        for (text, expected) in cases {
            let err = parse_code_ref(text).expect_err(text);
            assert!(err.contains(expected), "{text}: {err}");
        }
    }

    #[test]
    fn paths_keep_what_only_the_working_directory_can_settle() {
        for (text, path) in [
            ("../lib.rs:3", "../lib.rs"),
            ("/etc/passwd", "/etc/passwd"),
            ("\\share\\x", "/share/x"),
        ] {
            assert_eq!(parse_code_ref(text).map(|r| r.path), Ok(path.to_owned()));
        }
        assert_eq!(
            join_relative("src/cmd", "../lib.rs"),
            Some("src/lib.rs".into())
        );
        assert_eq!(join_relative("", "./a//b/./c.rs"), Some("a/b/c.rs".into()));
        assert_eq!(join_relative("src", "../../x.rs"), None);
        assert_eq!(join_relative("", "a/.."), None);
        assert_eq!(
            path_candidates("b.rs", "src", true),
            vec!["src/b.rs".to_owned(), "b.rs".to_owned()]
        );
        assert_eq!(
            path_candidates("b.rs", "src", false),
            vec!["b.rs".to_owned(), "src/b.rs".to_owned()]
        );
        assert_eq!(
            path_candidates("../b.rs", "src", false),
            vec!["b.rs".to_owned()]
        );
        assert_eq!(path_candidates("b.rs", "", true), vec!["b.rs".to_owned()]);
        assert_eq!(strip_root("/ws/src/a.rs", "/ws"), Some("src/a.rs".into()));
        assert_eq!(strip_root("/ws/src/a.rs", "/ws/"), Some("src/a.rs".into()));
        assert_eq!(strip_root("/wsx/a.rs", "/ws"), None);
        assert!(is_absolute("/x") && is_absolute("C:\\x") && !is_absolute("x/y"));
    }

    fn symbols(list: &[&str]) -> BTreeSet<String> {
        list.iter().map(|s| (*s).to_owned()).collect()
    }

    const SOURCE: &str = "// header\nimpl Store {\n    fn commit(&self) {}\n}\nfn committed() {}\nlet x = a->b + foo.bar;\n";

    #[test]
    fn scanning_counts_lines_and_finds_whole_identifiers() {
        let file = scan_text(
            SOURCE,
            &symbols(&["Store::commit", "Store", "missing", "a->b", "x.bar"]),
        );
        let CitedFile::File { line_count, .. } = &file else {
            panic!("{file:?}");
        };
        assert_eq!(*line_count, 6);
        assert_eq!(file.lines_of("Store::commit"), &[3], "not `committed`");
        assert_eq!(file.lines_of("Store"), &[2]);
        assert_eq!(file.lines_of("missing"), &[] as &[u32]);
        assert_eq!(file.lines_of("a->b"), &[6], "non-identifiers match as text");
        assert_eq!(file.lines_of("x.bar"), &[6], "last segment");
        assert_eq!(file.lines_of("never asked"), &[] as &[u32]);
        let CitedFile::File { line_count, .. } = scan_text("", &BTreeSet::new()) else {
            panic!("empty text is a file");
        };
        assert_eq!(line_count, 0);
        let bytes = scan_bytes(b"\xff\xfe\nfn a() {}", &symbols(&["a"]));
        assert_eq!(bytes.lines_of("a"), &[2], "bytes need not be UTF-8");
        let CitedFile::File { line_count, .. } = scan_text("a\r\nb", &BTreeSet::new()) else {
            panic!("a file");
        };
        assert_eq!(line_count, 2);
    }

    #[test]
    fn shape_and_location_rules() {
        let refs = |start, end, symbol| code_ref("src/x.rs", start, end, symbol);
        assert_eq!(
            shape_problems(&refs(Some(50), Some(10), None)),
            vec!["start_line 50 is after end_line 10"]
        );
        assert_eq!(
            shape_problems(&refs(Some(0), None, Some(" "))),
            vec![
                "start_line must be 1 or more (lines count from 1)",
                "symbol is empty"
            ]
        );
        assert_eq!(
            shape_problems(&refs(None, Some(4), None)),
            vec!["end_line is given without start_line"]
        );
        let file = scan_text(SOURCE, &symbols(&["commit", "nowhere"]));
        assert!(located_problems(&refs(Some(2), Some(4), Some("commit")), &file).is_empty());
        assert_eq!(
            located_problems(&refs(Some(5), Some(9), None), &file),
            vec!["line 9 is past the end of the file (6 lines)"]
        );
        assert_eq!(
            located_problems(&refs(Some(4), Some(6), Some("commit")), &file),
            vec!["symbol `commit` does not occur in lines 4-6 (it does at line 3)"]
        );
        assert_eq!(
            located_problems(&refs(Some(3), None, Some("nowhere")), &file),
            vec!["symbol `nowhere` does not occur in the file"]
        );
        assert_eq!(
            located_problems(&refs(None, None, None), &CitedFile::Missing),
            vec!["no such file in the work tree"]
        );
        // A directory is no file, with or without lines.
        for code_ref in [refs(None, None, None), refs(Some(1), None, None)] {
            assert_eq!(
                located_problems(&code_ref, &CitedFile::Directory),
                vec!["is a directory; a code ref names a file"]
            );
        }
        // Even a bare path may not lead elsewhere: the reference would claim a file that is not
        // the repository's.
        assert!(
            located_problems(&refs(None, None, None), &CitedFile::Elsewhere)[0]
                .starts_with("leads outside the repository")
        );
    }

    #[test]
    fn following_a_symbol_keeps_the_span_inside_the_file() {
        let file = scan_text(SOURCE, &symbols(&["commit", "nowhere"]));
        let moved = follow_symbol(&code_ref("x", Some(5), Some(6), Some("commit")), &file);
        assert_eq!(
            moved.map(|r| (r.start_line, r.end_line)),
            Some((Some(3), Some(4)))
        );
        let single = follow_symbol(&code_ref("x", Some(1), None, Some("commit")), &file);
        assert_eq!(
            single.map(|r| (r.start_line, r.end_line)),
            Some((Some(3), None))
        );
        let clamped = follow_symbol(&code_ref("x", Some(1), Some(9), Some("commit")), &file);
        assert_eq!(clamped.map(|r| r.end_line), Some(Some(6)));
        assert!(follow_symbol(&code_ref("x", Some(1), None, Some("nowhere")), &file).is_none());
        assert!(follow_symbol(&code_ref("x", None, None, Some("commit")), &file).is_none());
    }

    #[test]
    fn paths_with_control_characters_or_in_git_are_refused() {
        for path in ["src/a\nb.rs", "a\0.rs", "tab\there.rs", "src/\u{1b}[2J.rs"] {
            assert!(
                path_refusal(path)
                    .expect("refused")
                    .contains("control character"),
                "{path:?}"
            );
        }
        for path in [" ", "src/ /a.rs", "\u{3000}"] {
            assert!(
                path_refusal(path).expect("refused").contains("blank"),
                "{path:?}"
            );
        }
        for path in [
            ".git/config",
            "sub/.git/HEAD",
            ".GIT/hooks/pre-commit",
            ".git",
        ] {
            assert!(
                path_refusal(path).expect("refused").contains("`.git/`"),
                "{path}"
            );
        }
        for path in [
            "src/lib.rs",
            ".github/workflows/ci.yml",
            "a.git/x",
            "docs/.gitignore",
        ] {
            assert_eq!(path_refusal(path), None, "{path}");
        }
    }

    #[test]
    fn formatting_reads_back() {
        for text in [
            "src/lib.rs",
            "src/lib.rs:7",
            "src/lib.rs:7-9#f",
            "a/b.rs#Store::commit",
        ] {
            let parsed = parse_code_ref(text).expect(text);
            assert_eq!(format_code_ref(&parsed), text);
        }
        assert_eq!(
            format_code_ref(&code_ref("x.rs", Some(4), Some(4), None)),
            "x.rs:4"
        );
    }

    #[test]
    fn key_ignores_the_note_and_normalises_backslashes() {
        let mut with_note = code_ref("a\\b.rs", Some(10), Some(20), Some("demo"));
        with_note.note = Some("why".into());
        assert_eq!(code_ref_key(&with_note), "a/b.rs:10:20:demo");
        assert_eq!(code_ref_key(&CodeRef::to_path("a.rs")), "a.rs:0:0:");
    }

    proptest::proptest! {
        #[test]
        fn arbitrary_references_never_panic(text in "\\PC{0,80}") {
            if let Ok(parsed) = parse_code_ref(&text) {
                proptest::prop_assert!(!parsed.path.is_empty());
                if let Some(joined) = join_relative("sub", &parsed.path) {
                    proptest::prop_assert!(escape_reason(&joined).is_none());
                }
            }
        }

        #[test]
        fn reference_shaped_text_never_panics(text in "[a-z./\\\\]{0,20}(:[0-9-]{0,12})?(#[A-Za-z:_]{0,10})?") {
            let _ = parse_code_ref(&text);
        }
    }
}
