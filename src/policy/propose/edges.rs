//! The edges a proposal draws from the code, between each node it anchored or created and the
//! other architecture nodes (docs/drafting.md#reference-edges): an edge goes from a node whose
//! cited code references a definition another node cites, to that node, and only where the
//! reference resolves to that definition through its file's imports or its own scope
//! ([`Resolver`]), never by a name two files share. Each edge cites the lines that make it.
//! A promoted proposal is then a connected piece of the graph instead of a list of loose nodes.
//!
//! Works on files the caller parsed (`search::syntax::uses`); a node whose files are not parsed
//! takes no edges.

use std::collections::BTreeMap;
use std::collections::BTreeSet;
use std::collections::HashMap;
use std::collections::HashSet;

use crate::policy::code_map::Definition;
use crate::policy::code_map::uses::FileUses;
use crate::policy::code_map::uses::Resolver;
use crate::policy::code_ref::Cited;
use crate::policy::code_ref::CitedFile;
use crate::policy::code_ref::cited_text;
use crate::policy::code_ref::code_ref_key;
use crate::policy::code_ref::scan_text;
use crate::state::model::CodeRef;
use crate::state::model::GraphEdge;
use crate::state::model::GraphNode;
use crate::state::model::State;
use crate::state::patch::Patch;
use crate::state::paths::slash_key;

/// The most edges drawn from the code for one proposed node, the strongest first.
pub const MAX_EDGES_PER_NODE: usize = 4;

/// The most definitions an edge names, each with the line that uses it.
const NAMED: usize = 3;

/// A definition in a parsed file: its file's path and its name.
type Place<'a> = (&'a str, &'a str);

/// What a node's code refs cite in the parsed files.
#[derive(Default)]
struct CitedCode<'a> {
    /// The definitions whose lines lie inside the cited code.
    definitions: HashMap<Place<'a>, &'a Definition>,
    /// The code it cites: (path, first line, last line).
    code: Vec<(&'a str, u32, u32)>,
}

impl<'a> CitedCode<'a> {
    /// What `node`'s refs cite, as the write check reads them ([`cited_text`], on the files as
    /// `judged` has them): a symbol's definition with the ref's lines, its lines, or its whole
    /// file. A ref that does not hold in the file as it is now cites nothing.
    fn of(
        node: &GraphNode,
        files: &'a BTreeMap<String, FileUses>,
        judged: &HashMap<&str, CitedFile>,
    ) -> CitedCode<'a> {
        let mut cited = CitedCode::default();
        for code_ref in &node.code_refs {
            let key = slash_key(&code_ref.path);
            let (Some((path, file)), Some(judged)) =
                (files.get_key_value(&key), judged.get(key.as_str()))
            else {
                continue;
            };
            let (start, end) = match cited_text(code_ref, judged) {
                Some(Cited::Lines(span)) => span,
                Some(Cited::File) => (1, u32::MAX),
                None => continue,
            };
            cited.code.push((path, start, end));
            let inside = |d: &&Definition| start <= d.start_line && d.end_line <= end;
            for definition in file.definitions.iter().filter(inside) {
                cited
                    .definitions
                    .insert((path, &definition.name), definition);
            }
        }
        cited
    }
}

/// The parsed `files` as the judge of code refs reads them, each knowing the symbols the
/// `nodes` cite in it.
fn judged_files<'a>(
    nodes: &[GraphNode],
    files: &'a BTreeMap<String, FileUses>,
) -> HashMap<&'a str, CitedFile> {
    let mut symbols: HashMap<&str, BTreeSet<String>> = HashMap::new();
    for code_ref in nodes.iter().flat_map(|node| &node.code_refs) {
        if let Some((path, _)) = files.get_key_value(&slash_key(&code_ref.path)) {
            let cited = symbols.entry(path.as_str()).or_default();
            cited.extend(code_ref.symbol.clone());
        }
    }
    (symbols.into_iter())
        .map(|(path, symbols)| {
            let file = &files[path];
            let judged = scan_text(&file.text, &symbols).with_definitions(&file.definitions);
            (path, judged)
        })
        .collect()
}

/// A reference in a node's cited code that resolves to a definition.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Call<'a> {
    /// Where it is: path and line.
    path: &'a str,
    line: u32,
    /// The innermost definition around it, if any.
    caller: Option<&'a str>,
    /// The definition it resolves to.
    callee: Place<'a>,
}

/// The references inside `cited`'s code that resolve, in file and line order, each place once.
fn calls<'a>(
    cited: &CitedCode<'a>,
    files: &'a BTreeMap<String, FileUses>,
    resolver: &Resolver<'a>,
) -> Vec<Call<'a>> {
    let mut seen = HashSet::new();
    let mut found = Vec::new();
    for &(path, start, end) in &cited.code {
        let Some(file) = files.get(path) else {
            continue;
        };
        for used in (file.uses.iter()).filter(|used| start <= used.line && used.line <= end) {
            let Some(callee) = resolver.resolve(path, used) else {
                continue;
            };
            if seen.insert((path, used.line, callee)) {
                found.push(Call {
                    path,
                    line: used.line,
                    caller: file.enclosing(used.line).map(|d| d.name.as_str()),
                    callee,
                });
            }
        }
    }
    found.sort_by_key(|call| (call.path, call.line));
    found
}

/// The relation the used definitions make: `calls` when one is a function, method or macro,
/// `imports` when one is a module, `references` otherwise.
fn edge_kind(used: &[&Definition]) -> &'static str {
    let any = |kinds: &[&str]| used.iter().any(|d| kinds.contains(&d.kind.as_str()));
    if any(&["function", "method", "macro"]) {
        "calls"
    } else if any(&["module"]) {
        "imports"
    } else {
        "references"
    }
}

/// Whether a use of a definition of `kind` is a call.
fn is_called(kind: &str) -> bool {
    matches!(kind, "function" | "method" | "macro")
}

/// The edge from the node `source` to the node `target` (ids), from the calls of the source
/// node that reach definitions the target node cites and the source node does not: the first
/// call of each such definition, in line order. `None` when there is none.
fn edge_between(
    (source, target): (&str, &str),
    calls: &[Call<'_>],
    (own, theirs): (&CitedCode<'_>, &CitedCode<'_>),
) -> Option<(usize, GraphEdge)> {
    let mut reached: Vec<(&Call<'_>, &Definition)> = Vec::new();
    for call in calls {
        let Some(definition) = theirs.definitions.get(&call.callee) else {
            continue;
        };
        let known = (reached.iter()).any(|(first, _)| first.callee == call.callee);
        if !known && !own.definitions.contains_key(&call.callee) {
            reached.push((call, definition));
        }
    }
    if reached.is_empty() {
        return None;
    }
    let named = &reached[..reached.len().min(NAMED)];
    let mut sites: Vec<String> = (named.iter())
        .map(|(call, definition)| {
            let verb = if is_called(&definition.kind) {
                "calls"
            } else {
                "uses"
            };
            let caller = call.caller.unwrap_or(call.path);
            let at = format!("{}:{}", call.path, call.line);
            format!("`{caller}` {verb} `{}` at {at}", definition.name)
        })
        .collect();
    if reached.len() > NAMED {
        sites.push(format!("and {} more", reached.len() - NAMED));
    }
    let mut code_refs: Vec<CodeRef> = Vec::new();
    for (call, _) in named {
        let code_ref = CodeRef {
            start_line: Some(call.line),
            end_line: Some(call.line),
            symbol: call.caller.map(str::to_owned),
            ..CodeRef::to_path(call.path)
        };
        if !(code_refs.iter()).any(|known| code_ref_key(known) == code_ref_key(&code_ref)) {
            code_refs.push(code_ref);
        }
    }
    let definitions: Vec<&Definition> = reached.iter().map(|(_, d)| *d).collect();
    let edge = GraphEdge {
        id: None,
        source_id: source.to_owned(),
        target_id: target.to_owned(),
        kind: edge_kind(&definitions).to_owned(),
        label: None,
        mechanism: Some(sites.join("; ")),
        code_refs,
    };
    Some((reached.len(), edge))
}

/// Adds to a proposal `patch` drafted on `state` the edges the code draws between the
/// architecture nodes it upserts and every other architecture node ([`reference_edges`]).
pub fn add_reference_edges(state: &State, patch: &mut Patch, files: &BTreeMap<String, FileUses>) {
    let nodes = nodes_after(state, patch);
    let proposed: Vec<String> = (patch.upsert.architecture_nodes.iter())
        .map(|node| node.id.clone())
        .collect();
    let edges = reference_edges(&nodes, &state.graphs.architecture.edges, &proposed, files);
    patch.upsert.architecture_edges.extend(edges);
}

/// The architecture nodes as the proposal leaves them: the state's, with the upserted ones in
/// their places and the new ones after them.
fn nodes_after(state: &State, patch: &Patch) -> Vec<GraphNode> {
    let mut nodes: Vec<GraphNode> = state.graphs.architecture.nodes.clone();
    for node in &patch.upsert.architecture_nodes {
        match nodes.iter_mut().find(|n| n.id == node.id) {
            Some(slot) => *slot = node.clone(),
            None => nodes.push(node.clone()),
        }
    }
    nodes
}

/// The files a proposal's edges and titles are read from, as slash paths: those its upserted
/// nodes cite first, then those the other architecture nodes cite, each once.
pub fn cited_paths(state: &State, patch: &Patch) -> Vec<String> {
    let upserted = patch.upsert.architecture_nodes.iter();
    let others = state.graphs.architecture.nodes.iter();
    let mut seen = HashSet::new();
    (upserted.chain(others))
        .flat_map(|node| &node.code_refs)
        .map(|code_ref| slash_key(&code_ref.path))
        .filter(|path| seen.insert(path.clone()))
        .collect()
}

/// The edges to add between the `proposed` nodes (ids of `nodes`, the architecture graph after
/// the proposal) and every other node of `nodes`, from `files` (per slash path). `edges` are
/// the graph's edges: two nodes already joined in that direction get no other edge. Each
/// proposed node keeps its [`MAX_EDGES_PER_NODE`] strongest (most definitions used), in graph
/// order of the other node on ties; edges come out source-proposed first, in `proposed` order.
pub fn reference_edges(
    nodes: &[GraphNode],
    edges: &[GraphEdge],
    proposed: &[String],
    files: &BTreeMap<String, FileUses>,
) -> Vec<GraphEdge> {
    let resolver = Resolver::new(files);
    let judged = judged_files(nodes, files);
    let cited: Vec<CitedCode<'_>> = (nodes.iter())
        .map(|node| CitedCode::of(node, files, &judged))
        .collect();
    let calls: Vec<Vec<Call<'_>>> = (cited.iter())
        .map(|cited| calls(cited, files, &resolver))
        .collect();
    let joined: HashSet<(&str, &str)> = (edges.iter())
        .map(|edge| (edge.source_id.as_str(), edge.target_id.as_str()))
        .collect();
    let mut drawn: BTreeSet<(String, String)> = BTreeSet::new();
    let mut out = Vec::new();
    for id in proposed {
        let Some(at) = nodes.iter().position(|node| &node.id == id) else {
            continue;
        };
        let mut candidates: Vec<(usize, GraphEdge)> = Vec::new();
        for other in (0..nodes.len()).filter(|other| *other != at) {
            for (source, target) in [(at, other), (other, at)] {
                let ends = (nodes[source].id.as_str(), nodes[target].id.as_str());
                if joined.contains(&ends) {
                    continue;
                }
                let pair = (&cited[source], &cited[target]);
                candidates.extend(edge_between(ends, &calls[source], pair));
            }
        }
        // Stable: ties keep the other node's graph order.
        candidates.sort_by_key(|(strength, _)| std::cmp::Reverse(*strength));
        for (_, edge) in candidates.into_iter().take(MAX_EDGES_PER_NODE) {
            if drawn.insert((edge.source_id.clone(), edge.target_id.clone())) {
                out.push(edge);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::code_map::Form;
    use crate::policy::code_map::uses::Import;
    use crate::policy::code_map::uses::Scoping;
    use crate::policy::code_map::uses::Use;
    use crate::policy::fixtures;
    use crate::policy::fixtures::definition;

    /// A bare reference to `name` on `line`.
    fn call(name: &str, line: u32) -> Use {
        Use {
            name: name.into(),
            qualifier: Some(Vec::new()),
            line,
            form: Form::Plain,
        }
    }

    fn import(local: &str, path: &[&str]) -> Import {
        Import {
            local: local.into(),
            path: path.iter().map(|segment| (*segment).to_owned()).collect(),
            reexport: false,
        }
    }

    fn rust(definitions: Vec<Definition>, uses: Vec<Use>, imports: Vec<Import>) -> FileUses {
        FileUses {
            text: "\n".repeat(20),
            scoping: Scoping::Rust,
            definitions,
            uses,
            imports,
        }
    }

    /// A node citing `symbol` in `path`, without lines.
    fn citing(id: &str, path: &str, symbol: &str) -> GraphNode {
        let mut node = fixtures::node(id, &[]);
        node.code_refs.push(CodeRef {
            symbol: Some(symbol.into()),
            ..CodeRef::to_path(path)
        });
        node
    }

    /// `src/audit.rs`: `audit` (lines 3-6) calls the ledger's `balance` (imported) on line 4
    /// and its own `helper` on line 5. `src/ledger.rs`: `balance` (1-3), `helper` (5-7) and
    /// `report` (9-11), which calls `crate::audit::audit` on line 10.
    fn ledger_files() -> BTreeMap<String, FileUses> {
        let audit = rust(
            vec![
                definition("audit", "function", 3, 6),
                definition("helper", "function", 8, 9),
            ],
            vec![call("balance", 4), call("helper", 5)],
            vec![import("balance", &["crate", "ledger", "balance"])],
        );
        let ledger = rust(
            vec![
                definition("balance", "function", 1, 3),
                definition("helper", "function", 5, 7),
                definition("report", "function", 9, 11),
            ],
            vec![Use {
                qualifier: Some(vec!["crate".into(), "audit".into()]),
                ..call("audit", 10)
            }],
            Vec::new(),
        );
        [("src/audit.rs", audit), ("src/ledger.rs", ledger)]
            .into_iter()
            .map(|(path, file)| (path.to_owned(), file))
            .collect()
    }

    fn ends(edges: &[GraphEdge]) -> Vec<(&str, &str, &str)> {
        (edges.iter())
            .map(|e| (e.source_id.as_str(), e.target_id.as_str(), e.kind.as_str()))
            .collect()
    }

    #[test]
    fn an_edge_runs_from_the_caller_to_the_callee_and_cites_the_call() {
        let nodes = vec![
            citing("ledger", "src/ledger.rs", "balance"),
            citing("audit", "src/audit.rs", "audit"),
        ];
        for proposed in ["ledger", "audit"] {
            let edges = reference_edges(&nodes, &[], &[proposed.into()], &ledger_files());
            assert_eq!(ends(&edges), [("audit", "ledger", "calls")], "{proposed}");
            assert_eq!(
                edges[0].mechanism.as_deref(),
                Some("`audit` calls `balance` at src/audit.rs:4")
            );
            assert_eq!(
                edges[0].code_refs,
                [CodeRef {
                    start_line: Some(4),
                    end_line: Some(4),
                    symbol: Some("audit".into()),
                    ..CodeRef::to_path("src/audit.rs")
                }]
            );
        }
    }

    /// The ledger's uncited `report` calls `audit`, and both files define a `helper`: neither
    /// draws an edge. A node citing the whole ledger file does reach `audit`.
    #[test]
    fn uncited_code_and_shared_names_draw_nothing() {
        let nodes = vec![
            citing("ledger-helper", "src/ledger.rs", "helper"),
            citing("audit", "src/audit.rs", "audit"),
            citing("ledger", "src/ledger.rs", "balance"),
        ];
        let edges = reference_edges(&nodes, &[], &["audit".into()], &ledger_files());
        assert_eq!(ends(&edges), [("audit", "ledger", "calls")]);
        let whole = vec![
            fixtures::node("ledger", &["src/ledger.rs"]),
            citing("audit", "src/audit.rs", "audit"),
        ];
        let edges = reference_edges(&whole, &[], &["ledger".into()], &ledger_files());
        assert_eq!(
            ends(&edges),
            [("ledger", "audit", "calls"), ("audit", "ledger", "calls")]
        );
        assert_eq!(
            edges[0].mechanism.as_deref(),
            Some("`report` calls `audit` at src/ledger.rs:10")
        );
    }

    #[test]
    fn lines_cite_their_code_and_joined_ends_draw_nothing() {
        let mut lines = fixtures::node("audit-lines", &[]);
        lines.code_refs.push(CodeRef {
            start_line: Some(5),
            end_line: Some(5),
            ..CodeRef::to_path("src/audit.rs")
        });
        let nodes = vec![lines, citing("ledger", "src/ledger.rs", "balance")];
        // Line 5 calls only the audit's own helper.
        assert!(reference_edges(&nodes, &[], &["ledger".into()], &ledger_files()).is_empty());
        let nodes = vec![
            citing("audit", "src/audit.rs", "audit"),
            citing("ledger", "src/ledger.rs", "balance"),
        ];
        let joined = [fixtures::edge(None, "audit", "ledger", "feeds")];
        assert!(reference_edges(&nodes, &joined, &["audit".into()], &ledger_files()).is_empty());
    }

    /// A ref cites what the write check says it cites: `audit`'s first line alone cites all of
    /// it, and lines that are no longer `balance`'s cite nothing.
    #[test]
    fn refs_cite_what_the_judge_says() {
        let with_lines = |id: &str, path: &str, symbol: &str, (start, end): (u32, u32)| {
            let mut node = citing(id, path, symbol);
            node.code_refs[0].start_line = Some(start);
            node.code_refs[0].end_line = Some(end);
            node
        };
        let nodes = vec![
            with_lines("audit", "src/audit.rs", "audit", (3, 3)),
            citing("ledger", "src/ledger.rs", "balance"),
        ];
        let edges = reference_edges(&nodes, &[], &["audit".into()], &ledger_files());
        assert_eq!(ends(&edges), [("audit", "ledger", "calls")]);
        let moved = vec![
            citing("audit", "src/audit.rs", "audit"),
            with_lines("ledger", "src/ledger.rs", "balance", (9, 11)),
        ];
        assert!(reference_edges(&moved, &[], &["audit".into()], &ledger_files()).is_empty());
    }

    #[test]
    fn a_node_keeps_only_its_strongest_edges() {
        let mut nodes = vec![fixtures::node("hub", &["hub.rs"])];
        let mut files = BTreeMap::new();
        let mut uses = Vec::new();
        let mut imports = Vec::new();
        for index in 0..MAX_EDGES_PER_NODE + 2 {
            let module = format!("leaf{index}");
            let names: Vec<String> = (0..=index).map(|n| format!("f{index}_{n}")).collect();
            let definitions = (names.iter().zip(1..))
                .map(|(name, line)| definition(name, "function", line, line))
                .collect();
            files.insert(format!("{module}.rs"), rust(definitions, vec![], vec![]));
            for name in &names {
                uses.push(Use {
                    qualifier: Some(vec![module.clone()]),
                    ..call(name, 1)
                });
            }
            imports.push(import(&module, &["self", &module]));
            nodes.push(fixtures::node(&module, &[&format!("{module}.rs")]));
        }
        files.insert("hub.rs".into(), rust(vec![], uses, imports));
        let edges = reference_edges(&nodes, &[], &["hub".into()], &files);
        let targets: Vec<&str> = edges.iter().map(|e| e.target_id.as_str()).collect();
        assert_eq!(targets, ["leaf5", "leaf4", "leaf3", "leaf2"]);
        let mechanism = edges[0].mechanism.as_deref().unwrap_or_default();
        assert!(mechanism.ends_with("; and 3 more"), "{mechanism}");
        assert_eq!(
            edges[0].code_refs.len(),
            1,
            "one line, no definition around it"
        );
    }

    #[test]
    fn kinds_follow_what_is_used() {
        let used = |kinds: &[&str]| {
            let definitions: Vec<Definition> = (kinds.iter())
                .map(|kind| definition("x", kind, 1, 1))
                .collect();
            edge_kind(&definitions.iter().collect::<Vec<_>>())
        };
        assert_eq!(used(&["class", "method"]), "calls");
        assert_eq!(used(&["module"]), "imports");
        assert_eq!(used(&["class", "constant"]), "references");
    }

    #[test]
    fn the_files_to_read_are_the_proposals_first() {
        let mut state = State::default();
        state.graphs.architecture.nodes = vec![fixtures::node("old", &["b.rs", "a.rs"])];
        let patch = Patch {
            upsert: crate::state::patch::Upsert {
                architecture_nodes: vec![fixtures::node("new", &["c.rs", "a.rs"])],
                ..Default::default()
            },
            ..Patch::default()
        };
        assert_eq!(cited_paths(&state, &patch), ["c.rs", "a.rs", "b.rs"]);
    }
}
