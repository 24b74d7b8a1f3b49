//! The edges a proposal draws from the code: between each node it anchored or created and the
//! other architecture nodes, wherever the code one node cites references a definition the
//! other covers (docs/drafting.md#reference-edges). A promoted proposal is then a connected
//! piece of the graph instead of a list of loose nodes.
//!
//! Works on outlines the caller parsed (`search::syntax`); a node whose files are not parsed
//! takes no edges. References are known per file, so a node citing part of a file is taken to
//! use what the whole file references.

use std::collections::BTreeMap;
use std::collections::BTreeSet;
use std::collections::HashMap;
use std::collections::HashSet;

use crate::policy::code_map::Definition;
use crate::policy::code_map::Form;
use crate::policy::code_map::Outline;
use crate::policy::code_ref::definition_name;
use crate::policy::code_ref::ref_lines;
use crate::state::model::GraphEdge;
use crate::state::model::GraphNode;
use crate::state::model::State;
use crate::state::patch::Patch;
use crate::state::paths::slash_key;

/// The most edges drawn from the code for one proposed node, the strongest first.
pub const MAX_EDGES_PER_NODE: usize = 4;

/// The most referenced names an edge's mechanism names.
const NAMED: usize = 3;

/// What a node's code refs cover: the definitions they cite and the names their files use,
/// by form ([`Outline`]).
struct Coverage<'a> {
    defined: HashMap<&'a str, &'a Definition>,
    plain: HashSet<&'a str>,
    members: HashSet<&'a str>,
    macros: HashSet<&'a str>,
}

impl<'a> Coverage<'a> {
    /// A ref to a symbol covers its definitions, a ref to lines the definitions named there, a
    /// ref to a whole file every definition in it.
    fn of(node: &GraphNode, outlines: &'a BTreeMap<String, Outline>) -> Coverage<'a> {
        let mut coverage = Coverage {
            defined: HashMap::new(),
            plain: HashSet::new(),
            members: HashSet::new(),
            macros: HashSet::new(),
        };
        for code_ref in &node.code_refs {
            let Some(outline) = outlines.get(&slash_key(&code_ref.path)) else {
                continue;
            };
            let names = |list: &'a [String]| list.iter().map(String::as_str);
            coverage.plain.extend(names(&outline.references));
            coverage.members.extend(names(&outline.member_references));
            coverage.macros.extend(names(&outline.macro_references));
            let symbol = code_ref.symbol.as_deref().map(definition_name);
            let covered = outline.definitions.iter().filter(|definition| {
                match (symbol, ref_lines(code_ref)) {
                    (Some(name), _) => definition.name == name,
                    (None, Some((start, end))) => (start..=end).contains(&definition.line),
                    (None, None) => true,
                }
            });
            for definition in covered {
                coverage
                    .defined
                    .entry(definition.name.as_str())
                    .or_insert(definition);
            }
        }
        coverage
    }

    /// The definitions of `other` this node's code uses, by name, as the map matches them
    /// (`policy::code_map`): a plain reference to a definition other than a method or macro,
    /// or a macro call of a macro, and once one of those is found, member calls and plain
    /// calls of methods. Names both define are left out (a name defined on both sides says
    /// nothing about which one is meant).
    fn uses<'b>(&self, other: &Coverage<'b>) -> Vec<&'b Definition> {
        let opens = |name: &str, definition: &Definition| {
            (self.plain.contains(name) && Form::Plain.can_only_mean(&definition.kind))
                || (self.macros.contains(name) && Form::Macro.can_only_mean(&definition.kind))
        };
        let joins = |name: &str| self.plain.contains(name) || self.members.contains(name);
        let candidates =
            || (other.defined.iter()).filter(|(name, _)| !self.defined.contains_key(*name));
        let mut used: Vec<&Definition> = candidates()
            .filter(|(name, definition)| opens(name, definition))
            .map(|(_, definition)| *definition)
            .collect();
        if !used.is_empty() {
            used.extend(
                candidates()
                    .filter(|(name, definition)| !opens(name, definition) && joins(name))
                    .map(|(_, definition)| *definition),
            );
        }
        used.sort_by(|a, b| a.name.cmp(&b.name));
        used
    }
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

/// Adds to a proposal `patch` drafted on `state` the edges the code draws between the
/// architecture nodes it upserts and every other architecture node ([`reference_edges`]).
pub fn add_reference_edges(state: &State, patch: &mut Patch, outlines: &BTreeMap<String, Outline>) {
    let upserted = &patch.upsert.architecture_nodes;
    let mut nodes: Vec<GraphNode> = state.graphs.architecture.nodes.clone();
    for node in upserted {
        match nodes.iter_mut().find(|n| n.id == node.id) {
            Some(slot) => *slot = node.clone(),
            None => nodes.push(node.clone()),
        }
    }
    let proposed: Vec<String> = upserted.iter().map(|node| node.id.clone()).collect();
    let edges = reference_edges(
        &nodes,
        &state.graphs.architecture.edges,
        &proposed,
        outlines,
    );
    patch.upsert.architecture_edges.extend(edges);
}

/// The edges to add between the `proposed` nodes (ids of `nodes`, the architecture graph after
/// the proposal) and every other node of `nodes`, from `outlines` (per path). `edges` are
/// the graph's edges: two nodes already joined in that direction get no other edge. Each
/// proposed node keeps its [`MAX_EDGES_PER_NODE`] strongest (most names used), in graph order
/// of the other node on ties; edges come out source-proposed first, in `proposed` order.
pub fn reference_edges(
    nodes: &[GraphNode],
    edges: &[GraphEdge],
    proposed: &[String],
    outlines: &BTreeMap<String, Outline>,
) -> Vec<GraphEdge> {
    let coverage: Vec<Coverage<'_>> = (nodes.iter())
        .map(|node| Coverage::of(node, outlines))
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
                let used = coverage[source].uses(&coverage[target]);
                let ends = (nodes[source].id.as_str(), nodes[target].id.as_str());
                if used.is_empty() || joined.contains(&ends) {
                    continue;
                }
                let names: Vec<String> = (used.iter().take(NAMED))
                    .map(|d| format!("`{}`", d.name))
                    .collect();
                let more = used.len().saturating_sub(NAMED);
                let tail = if more > 0 {
                    format!(" and {more} more")
                } else {
                    String::new()
                };
                candidates.push((
                    used.len(),
                    GraphEdge {
                        id: None,
                        source_id: ends.0.to_owned(),
                        target_id: ends.1.to_owned(),
                        kind: edge_kind(&used).to_owned(),
                        label: None,
                        mechanism: Some(format!(
                            "the code of `{}` uses {}{tail} of `{}` (found by the parser)",
                            ends.0,
                            names.join(", "),
                            ends.1,
                        )),
                        code_refs: Vec::new(),
                    },
                ));
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
    use crate::policy::fixtures;

    fn definition(name: &str, kind: &str, line: u32) -> Definition {
        Definition {
            name: name.into(),
            kind: kind.into(),
            line,
            start_line: line,
            end_line: line + 1,
            signature: format!("{kind} {name}"),
        }
    }

    fn outline(definitions: Vec<Definition>, references: &[&str]) -> Outline {
        Outline {
            definitions,
            references: references.iter().map(|r| (*r).to_owned()).collect(),
            ..Outline::default()
        }
    }

    /// `app.rs` uses `run` (a function of `engine.rs`), `config` (a module of `config.rs`)
    /// and `Token` (a type of `token.rs`); `engine.rs` uses `Token`.
    fn outlines() -> BTreeMap<String, Outline> {
        [
            (
                "app.rs",
                outline(
                    vec![definition("main", "function", 1)],
                    &["run", "config", "Token"],
                ),
            ),
            (
                "engine.rs",
                outline(
                    vec![
                        definition("run", "function", 1),
                        definition("stop", "function", 5),
                    ],
                    &["Token"],
                ),
            ),
            (
                "config.rs",
                outline(vec![definition("config", "module", 1)], &[]),
            ),
            (
                "token.rs",
                outline(vec![definition("Token", "class", 1)], &[]),
            ),
        ]
        .into_iter()
        .map(|(path, outline)| (path.to_owned(), outline))
        .collect()
    }

    fn ends(edges: &[GraphEdge]) -> Vec<(&str, &str, &str)> {
        (edges.iter())
            .map(|e| (e.source_id.as_str(), e.target_id.as_str(), e.kind.as_str()))
            .collect()
    }

    #[test]
    fn edges_follow_what_the_cited_code_uses_in_both_directions() {
        let nodes = vec![
            fixtures::node("token", &["token.rs"]),
            fixtures::node("engine", &["engine.rs"]),
            fixtures::node("config", &["config.rs"]),
            fixtures::node("app", &["app.rs"]),
        ];
        let edges = reference_edges(&nodes, &[], &["engine".into()], &outlines());
        assert_eq!(
            ends(&edges),
            [
                ("engine", "token", "references"),
                ("app", "engine", "calls")
            ]
        );
        assert_eq!(
            edges[1].mechanism.as_deref(),
            Some("the code of `app` uses `run` of `engine` (found by the parser)")
        );
        let from_app = reference_edges(&nodes, &[], &["app".into()], &outlines());
        assert_eq!(
            ends(&from_app),
            [
                ("app", "token", "references"),
                ("app", "engine", "calls"),
                ("app", "config", "imports"),
            ]
        );
    }

    #[test]
    fn joined_ends_shared_names_and_uncovered_lines_draw_nothing() {
        // `app` is joined to `engine` already, and cites `token.rs` itself: a `Token` both
        // it and `twin` define says nothing about which one it uses. (`engine` uses it.)
        let nodes = vec![
            fixtures::node("engine", &["engine.rs"]),
            fixtures::node("app", &["app.rs", "token.rs"]),
            fixtures::node("twin", &["token.rs"]),
        ];
        let joined = [fixtures::edge(None, "app", "engine", "feeds")];
        let edges = reference_edges(&nodes, &joined, &["app".into()], &outlines());
        assert_eq!(ends(&edges), [("engine", "app", "references")]);
        // A ref to lines covers only the definitions named there.
        let mut stop_only = fixtures::node("stop", &[]);
        stop_only
            .code_refs
            .push(CodeRefBuilder::lines("engine.rs", 5));
        let nodes = vec![stop_only, fixtures::node("app", &["app.rs"])];
        assert!(reference_edges(&nodes, &[], &["app".into()], &outlines()).is_empty());
    }

    /// `store.rs` defines `Store` and its method `save`; `sync.rs` only calls `.save()`, which
    /// could be any type's, and `app.rs` also names `Store`.
    #[test]
    fn member_calls_join_only_nodes_something_else_joins() {
        let mut outlines = outlines();
        let store = vec![
            definition("Store", "class", 1),
            definition("save", "method", 3),
        ];
        outlines.insert("store.rs".into(), outline(store, &[]));
        let calls = |plain: &[&str]| Outline {
            member_references: vec!["save".to_owned()],
            ..outline(Vec::new(), plain)
        };
        outlines.insert("sync.rs".into(), calls(&[]));
        outlines.insert("app.rs".into(), calls(&["Store"]));
        let nodes = vec![
            fixtures::node("store", &["store.rs"]),
            fixtures::node("sync", &["sync.rs"]),
            fixtures::node("app", &["app.rs"]),
        ];
        let edges = reference_edges(&nodes, &[], &["store".into()], &outlines);
        assert_eq!(ends(&edges), [("app", "store", "calls")]);
        assert_eq!(
            edges[0].mechanism.as_deref(),
            Some("the code of `app` uses `Store`, `save` of `store` (found by the parser)")
        );
    }

    #[test]
    fn a_node_keeps_only_its_strongest_edges() {
        let mut nodes = vec![fixtures::node("hub", &["hub.rs"])];
        let mut outlines = BTreeMap::new();
        let mut used = Vec::new();
        for index in 0..MAX_EDGES_PER_NODE + 2 {
            let path = format!("leaf{index}.rs");
            let names: Vec<String> = (0..=index).map(|n| format!("f{index}_{n}")).collect();
            let definitions = (names.iter())
                .map(|name| definition(name, "function", 1))
                .collect();
            outlines.insert(path.clone(), outline(definitions, &[]));
            used.extend(names);
            nodes.push(fixtures::node(&format!("leaf{index}"), &[&path]));
        }
        let used: Vec<&str> = used.iter().map(String::as_str).collect();
        outlines.insert("hub.rs".into(), outline(Vec::new(), &used));
        let edges = reference_edges(&nodes, &[], &["hub".into()], &outlines);
        let targets: Vec<&str> = edges.iter().map(|e| e.target_id.as_str()).collect();
        assert_eq!(targets, ["leaf5", "leaf4", "leaf3", "leaf2"]);
        assert!(
            edges[0]
                .mechanism
                .as_deref()
                .unwrap_or_default()
                .contains(" and 3 more")
        );
    }

    /// Code refs to lines.
    struct CodeRefBuilder;

    impl CodeRefBuilder {
        fn lines(path: &str, line: u32) -> crate::state::model::CodeRef {
            crate::state::model::CodeRef {
                start_line: Some(line),
                end_line: Some(line + 1),
                ..crate::state::model::CodeRef::to_path(path)
            }
        }
    }
}
