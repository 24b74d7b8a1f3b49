//! The ranked repository map: which files and definitions matter most, from the graph of
//! which file references names another file defines, personalised by what the state cites
//! and by a focus. Pure: the files' outlines come in, a ranked and budgeted map goes out.
//!
//! - Edges ([`links`]): file A → file B where a reference of A, resolved in A's scope through
//!   its imports ([`uses`]), leads to B; a name nothing in scope binds leads by name to the
//!   files of A's language defining it, weighted by how much the name tells ([`names`]).
//! - Rank: PageRank with damping [`DAMPING`], teleporting to the seeds ([`Seeds`]) in
//!   proportion to their weights (uniformly when there are none); rank that reaches a file
//!   with no outgoing edge teleports the same way. Rank follows the edges, so it gathers in
//!   the files whose names the others use, and the state's citations pull it their way.
//! - A focus ([`Seeds::add_focus`]) asks what is related to a file rather than what matters
//!   most: rank then follows every edge both ways ([`both_ways`]), since what uses the focus
//!   (its callers, its tests) is as related as what it uses, and rank that followed the edges
//!   alone never reached those. Part of its seed weight goes to the files near it in the tree
//!   ([`LOCALITY`]) and to its tests or subject by name ([`partners`]). The focused files lead
//!   the map.
//! - Definitions of a file are ordered by how many other files' references link to them, seeded
//!   symbols first, then by line.
//! - [`select`] keeps the best files, each with its key definitions' signature lines, within a
//!   character budget; [`render`] prints that selection as text.
//!
//! [`uses`] resolves a reference through the file's imports and scope, for the map's edges and
//! for `propose`'s (where one reference must be followed to the one definition it means).

use std::collections::BTreeMap;
use std::collections::BTreeSet;

use foldhash::HashMap;
use foldhash::HashSet;
use serde::Deserialize;
use serde::Serialize;

pub mod first_pass;
mod links;
mod modules;
pub mod names;
mod partners;
pub mod uses;

use links::Edges;
use links::links;

use crate::policy::peripheral;
use crate::policy::picture::Language;
use crate::policy::picture::Picture;
use crate::policy::text::for_agent;
use crate::state::model::State;

/// PageRank's damping factor.
pub const DAMPING: f64 = 0.85;
/// A name defined in more files than this makes no edges by name.
pub const MAX_DEFINERS: usize = 8;
/// PageRank iterations at most (it stops earlier once it has converged).
const ITERATIONS: usize = 50;
/// Definitions shown per file at most.
pub const DEFINITIONS_PER_FILE: usize = 8;
/// Seed weight of a focus.
pub const FOCUS_WEIGHT: f64 = 10.0;
/// Seed weight of what the frontier and the investigation checkpoint cite.
pub const FRONTIER_WEIGHT: f64 = 4.0;
/// Seed weight of what any graph node cites.
pub const NODE_WEIGHT: f64 = 1.0;

/// One definition in a parsed file (found by `search::syntax`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Definition {
    /// The name as written.
    pub name: String,
    /// What the tags query calls it: `function`, `method`, `class`, `interface`, `module`,
    /// `macro`, `constant` or `type`.
    pub kind: String,
    /// The line of the name (1-based).
    pub line: u32,
    /// The first line of the definition.
    pub start_line: u32,
    /// The last line of the definition.
    pub end_line: u32,
    /// The line holding the name, trimmed (at most 180 bytes).
    pub signature: String,
}

/// A name a parsed file declares besides its definitions (a field, a constant, an enum member,
/// an item inside a macro body): retrieval and code references find it, the map leaves it out.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Declaration {
    /// The name as written.
    pub name: String,
    /// The line of the name (1-based).
    pub line: u32,
}

/// What a parsed file defines and references.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Outline {
    /// Definitions in the order of their names in the file.
    pub definitions: Vec<Definition>,
    /// The distinct names the file references plainly (a call `name()`, a path `Name::new()`,
    /// a type, an implementation), sorted.
    pub references: Vec<String>,
    /// The distinct names it references only after a `.` ([`Form::Member`]), sorted. (Always
    /// written: the index stores outlines as MessagePack arrays, where a skipped field would
    /// shift the ones after it.)
    #[serde(default)]
    pub member_references: Vec<String>,
    /// The distinct names it calls as macros (`name!()`) and does not reference plainly, sorted.
    #[serde(default)]
    pub macro_references: Vec<String>,
    /// What its imports bind, in file order: the map follows a reference through them to the
    /// file that defines what it names ([`uses::Resolver`]).
    #[serde(default)]
    pub imports: Vec<uses::Import>,
    /// What it declares besides its definitions, in the order of their names in the file.
    #[serde(default)]
    pub declarations: Vec<Declaration>,
    /// Whether the file used up its parse budget before it was parsed and tagged; its outline
    /// is empty then.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub over_budget: bool,
}

/// How a file names something it references.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Form {
    /// A call, path, type, import or implementation naming it.
    Plain,
    /// After a `.`: a member of a value (`value.name()`) or a name qualified by a package or
    /// module (`server.Server`, `os.path.join`), which may be another package's.
    Member,
    /// Only as a macro: `name!()`.
    Macro,
}

impl Form {
    /// Whether a reference in this form to a definition of `kind` can only mean that
    /// definition: a plain reference to anything but a method or a macro (a method could be
    /// another type's), a macro call of a macro. A member call never can.
    pub fn can_only_mean(self, kind: &str) -> bool {
        match self {
            Form::Plain => !matches!(kind, "method" | "macro"),
            Form::Macro => kind == "macro",
            Form::Member => false,
        }
    }
}

impl Outline {
    /// The definitions named `name`, outermost first.
    pub fn named<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a Definition> + 'a {
        self.definitions
            .iter()
            .filter(move |definition| definition.name == name)
    }
}

/// One file of the map's input.
#[derive(Debug, Clone, Copy)]
pub struct MapInput<'a> {
    /// Path relative to the root.
    pub path: &'a str,
    /// How its language scopes names.
    pub scoping: uses::Scoping,
    /// Its definitions and references.
    pub outline: &'a Outline,
}

/// What the ranking is personalised by: weights per path and symbols to put first.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Seeds {
    /// Weight per path (summed when a path is seeded twice).
    pub paths: BTreeMap<String, f64>,
    /// Symbols whose definitions come first in their files.
    pub symbols: HashSet<String>,
    /// The paths a focus named ([`Seeds::add_focus`]).
    pub focus: BTreeSet<String>,
}

impl Seeds {
    /// Focuses on `path`: seeds it with [`FOCUS_WEIGHT`], ranks by references in both
    /// directions, and puts it first.
    pub fn add_focus(&mut self, path: &str) {
        self.add_path(path, FOCUS_WEIGHT);
        self.focus.insert(path.to_owned());
    }

    /// Adds `weight` to `path`.
    pub fn add_path(&mut self, path: &str, weight: f64) {
        *self.paths.entry(path.to_owned()).or_default() += weight;
    }

    /// The seeds from what the state cites: every graph node's code references, and more
    /// heavily the frontier's (its active nodes' references and dirty paths) and the
    /// investigation checkpoint's.
    pub fn from_state(state: &State) -> Seeds {
        let mut seeds = Seeds::default();
        let frontier = state.graph_frontier.as_ref();
        let active: HashSet<&str> = frontier
            .map(|frontier| {
                frontier
                    .active_node_ids
                    .iter()
                    .map(String::as_str)
                    .collect()
            })
            .unwrap_or_default();
        for (_, graph) in state.graphs.each() {
            for node in &graph.nodes {
                let weight = if active.contains(node.id.as_str()) {
                    FRONTIER_WEIGHT
                } else {
                    NODE_WEIGHT
                };
                for code_ref in &node.code_refs {
                    seeds.add_path(&code_ref.path, weight);
                    seeds.symbols.extend(code_ref.symbol.clone());
                }
            }
        }
        for path in frontier.iter().flat_map(|frontier| &frontier.dirty_paths) {
            seeds.add_path(path, FRONTIER_WEIGHT);
        }
        for code_ref in state
            .investigation_checkpoint
            .iter()
            .flat_map(|checkpoint| &checkpoint.code_refs)
        {
            seeds.add_path(&code_ref.path, FRONTIER_WEIGHT);
            seeds.symbols.extend(code_ref.symbol.clone());
        }
        seeds
    }
}

/// A definition as the map shows it.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct MapDefinition {
    /// The name.
    pub name: String,
    /// Its kind (`function`, `class`, `method`, ...).
    pub kind: String,
    /// First line of the definition.
    pub start_line: u32,
    /// Last line of the definition.
    pub end_line: u32,
    /// The line holding its name.
    pub signature: String,
    /// Other files referencing its name.
    pub referenced_by: u32,
    /// How many more definitions of this name the file holds (overloads, one method in
    /// several implementations), folded into this one.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub more: u32,
}

fn is_zero(count: &u32) -> bool {
    *count == 0
}

/// A file as the map shows it.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct MapFile {
    /// Path relative to the root.
    pub path: String,
    /// Its rank (the ranks of all files sum to 1).
    pub rank: f64,
    /// Its key definitions, most referenced first.
    pub definitions: Vec<MapDefinition>,
    /// Whether it needed more time or memory to parse than its budget, and so shows no
    /// definitions.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub over_budget: bool,
    /// Whether a focus named it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub focused: bool,
}

/// The share of a focus's seed weight that goes to the files near it in the directory tree.
pub const LOCALITY: f64 = 0.3;
/// How many directory steps (up or down) a file may lie from a focus to be near it.
const NEAR_STEPS: usize = 2;

/// The seed weight of each file near a focus: halved with each directory step between the
/// two, [`LOCALITY`] of `focus_weight` (the focuses' seed weight) in all; nothing without a
/// focus.
fn near_focus(files: &[MapInput<'_>], seeds: &Seeds, focus_weight: f64) -> Vec<f64> {
    let dirs: BTreeSet<&str> = (seeds.focus.iter())
        .map(|path| path.rsplit_once('/').map_or("", |(dir, _)| dir))
        .collect();
    fn parts(dir: &str) -> Vec<&str> {
        dir.split('/').filter(|part| !part.is_empty()).collect()
    }
    let steps = |path: &str, dir: &str| {
        let here = parts(path.rsplit_once('/').map_or("", |(dir, _)| dir));
        let there = parts(dir);
        let shared = here.iter().zip(&there).take_while(|(a, b)| a == b).count();
        here.len() + there.len() - 2 * shared
    };
    let mut near: Vec<f64> = (files.iter())
        .map(|file| {
            if seeds.focus.contains(file.path) {
                return 0.0;
            }
            let nearest = dirs.iter().map(|dir| steps(file.path, dir)).min();
            match nearest {
                Some(steps) if steps <= NEAR_STEPS => 0.5_f64.powi(steps as i32),
                _ => 0.0,
            }
        })
        .collect();
    let total: f64 = near.iter().sum();
    if total > 0.0 {
        near.iter_mut()
            .for_each(|weight| *weight *= LOCALITY * focus_weight / total);
    }
    near
}

/// Personalised PageRank over the file graph `edges`; the ranks sum to 1.
fn rank(files: &[MapInput<'_>], edges: &Edges, seeds: &Seeds) -> Vec<f64> {
    let count = files.len();
    if count == 0 {
        return Vec::new();
    }
    let mut teleport: Vec<f64> = files
        .iter()
        .map(|file| seeds.paths.get(file.path).copied().unwrap_or(0.0))
        .collect();
    if !seeds.focus.is_empty() {
        let focus_weight: f64 = (seeds.focus.iter())
            .filter_map(|path| seeds.paths.get(path))
            .sum();
        let near = near_focus(files, seeds, focus_weight);
        let paths: Vec<&str> = files.iter().map(|file| file.path).collect();
        let focus: Vec<&str> = seeds.focus.iter().map(String::as_str).collect();
        let partners = partners::partner_weights(&paths, &focus, focus_weight);
        (teleport.iter_mut().zip(near).zip(partners))
            .for_each(|((weight, near), partner)| *weight += near + partner);
    }
    let total: f64 = teleport.iter().sum();
    if total > 0.0 {
        teleport.iter_mut().for_each(|weight| *weight /= total);
    } else {
        teleport.fill(1.0 / count as f64);
    }
    let out_weight: Vec<f64> = edges
        .iter()
        .map(|out| out.iter().map(|(_, weight)| weight).sum())
        .collect();
    let mut ranks = teleport.clone();
    for _ in 0..ITERATIONS {
        let mut next: Vec<f64> = vec![0.0; count];
        let mut dangling = 0.0;
        for (from, out) in edges.iter().enumerate() {
            if out.is_empty() {
                dangling += ranks[from];
                continue;
            }
            for &(to, weight) in out {
                next[to] += DAMPING * ranks[from] * weight / out_weight[from];
            }
        }
        let spread = 1.0 - DAMPING + DAMPING * dangling;
        for (value, share) in next.iter_mut().zip(&teleport) {
            *value += spread * share;
        }
        let change: f64 = next.iter().zip(&ranks).map(|(a, b)| (a - b).abs()).sum();
        ranks = next;
        if change < 1e-9 {
            break;
        }
    }
    ranks
}

/// `edges` with each edge into a file many files reference weighed down by
/// `1 / (1 + ln(referring files))`: a hub every file uses (`pytest.raises`, a shared util)
/// tells little about which files belong with the focus.
fn damp_hubs(edges: &Edges) -> Edges {
    let mut referring = vec![0u32; edges.len()];
    for out in edges {
        for &(to, _) in out {
            referring[to] += 1;
        }
    }
    let damping = |to: usize| 1.0 / (1.0 + f64::from(referring[to].max(1)).ln());
    (edges.iter())
        .map(|out| {
            out.iter()
                .map(|&(to, weight)| (to, weight * damping(to)))
                .collect()
        })
        .collect()
}

/// `edges` with each edge also drawn the other way, at the same weight.
fn both_ways(edges: &Edges) -> Edges {
    let mut both = edges.clone();
    for (from, out) in edges.iter().enumerate() {
        for &(to, weight) in out {
            both[to].push((from, weight));
        }
    }
    both
}

/// The ranked map: the focused files first, then the project's own files ([`own`]), then the
/// rest, each part by rank (then path), each file with its definitions in map order.
pub fn ranked(files: &[MapInput<'_>], seeds: &Seeds) -> Vec<MapFile> {
    let links = links(files);
    let ranks = if seeds.focus.is_empty() {
        rank(files, &links.edges, seeds)
    } else {
        rank(files, &both_ways(&damp_hubs(&links.edges)), seeds)
    };
    let map: Vec<MapFile> = (files.iter().enumerate())
        .zip(&ranks)
        .map(|((at, file), &rank)| {
            let mut definitions: Vec<MapDefinition> = (file.outline.definitions.iter())
                .map(|definition| {
                    let referenced_by = (links.referrers.get(&(at, definition.name.as_str())))
                        .copied()
                        .unwrap_or(0);
                    shown(definition, referenced_by)
                })
                .collect();
            definitions.sort_by(|a, b| {
                seeds
                    .symbols
                    .contains(&b.name)
                    .cmp(&seeds.symbols.contains(&a.name))
                    .then(b.referenced_by.cmp(&a.referenced_by))
                    .then(a.start_line.cmp(&b.start_line))
            });
            MapFile {
                path: file.path.to_owned(),
                rank,
                definitions: folded(definitions),
                over_budget: file.outline.over_budget,
                focused: seeds.focus.contains(file.path),
            }
        })
        .collect();
    let mut map: Vec<(bool, MapFile)> = map.into_iter().map(|file| (own(&file), file)).collect();
    map.sort_by(|(a_own, a), (b_own, b)| {
        (b.focused.cmp(&a.focused))
            .then(b_own.cmp(a_own))
            .then(b.rank.total_cmp(&a.rank))
            .then(a.path.cmp(&b.path))
    });
    map.into_iter().map(|(_, file)| file).collect()
}

/// Whether a file is the project's own, not one nobody reads ([`peripheral::peripheral`]:
/// vendored, stub, declaration, generated, ...): those stand after the project's own files
/// whatever their rank. A factor on the rank would not keep them out of the way: on mypy,
/// typeshed's `_typeshed/__init__.pyi` gathers 4.5 times the rank of mypy's best own file
/// (`nodes.py`), more than [`peripheral::PERIPHERAL_WEIGHT`] makes up.
fn own(file: &MapFile) -> bool {
    peripheral::peripheral(&file.path).is_none()
}

fn shown(definition: &Definition, referenced_by: u32) -> MapDefinition {
    MapDefinition {
        name: definition.name.clone(),
        kind: definition.kind.clone(),
        start_line: definition.start_line,
        end_line: definition.end_line,
        signature: definition.signature.clone(),
        referenced_by,
        more: 0,
    }
}

/// `definitions` with the later definitions of a name folded into its first
/// ([`MapDefinition::more`]): eight `type Future = ...` lines of eight implementations, or seven
/// overloads of `defineConfig`, are one line.
fn folded(definitions: Vec<MapDefinition>) -> Vec<MapDefinition> {
    let mut kept: Vec<MapDefinition> = Vec::with_capacity(definitions.len());
    let mut at: HashMap<String, usize> = HashMap::default();
    for definition in definitions {
        match at.get(&definition.name) {
            Some(&first) => kept[first].more += 1,
            None => {
                at.insert(definition.name.clone(), kept.len());
                kept.push(definition);
            }
        }
    }
    kept
}

/// The rendered line of a file.
fn file_line(file: &MapFile) -> String {
    let path = for_agent(&file.path);
    if file.over_budget {
        format!("{path} (not parsed: over its parse budget)\n")
    } else {
        format!("{path}\n")
    }
}

/// The rendered line of a definition. Paths and signatures are the repository's text, whoever
/// committed it, and go into an agent's context: each is one line that cannot close or open
/// one of epiphany's blocks ([`for_agent`]).
fn definition_line(definition: &MapDefinition) -> String {
    let signature = for_agent(&definition.signature);
    match definition.more {
        0 => format!("  {:>5}  {signature}\n", definition.start_line),
        more => format!(
            "  {:>5}  {signature}  (+{more} more)\n",
            definition.start_line
        ),
    }
}

/// The best files of `map`, each with at most [`DEFINITIONS_PER_FILE`] definitions, as many
/// as fit in `max_chars` rendered ([`render`]); a file is shown with at least its first
/// definition or not at all. A file with none to show is shown alone only when a focus named
/// it or it was not parsed (the map says so): a path without definitions tells nothing.
pub fn select(map: Vec<MapFile>, max_chars: usize) -> Vec<MapFile> {
    let mut used = 0;
    let mut kept = Vec::new();
    for mut file in map {
        let has_none = file.definitions.is_empty();
        if has_none && !file.focused && !file.over_budget {
            continue;
        }
        let mut cost = file_line(&file).len();
        let mut definitions = Vec::new();
        for definition in file.definitions.drain(..).take(DEFINITIONS_PER_FILE) {
            let line = definition_line(&definition).len();
            if used + cost + line > max_chars {
                break;
            }
            cost += line;
            definitions.push(definition);
        }
        let fits_alone = has_none && used + cost <= max_chars;
        if definitions.is_empty() && !fits_alone {
            break;
        }
        used += cost;
        file.definitions = definitions;
        kept.push(file);
    }
    kept
}

/// The selection as text: each file's path, then its definitions' first lines and signatures.
pub fn render(files: &[MapFile]) -> String {
    let mut out = String::new();
    for file in files {
        out.push_str(&file_line(file));
        for definition in &file.definitions {
            out.push_str(&definition_line(definition));
        }
    }
    out
}

/// How many left-out files [`left_out_line`] names.
const LEFT_OUT_NAMED: usize = 3;

/// The line that says which files of a parsed language the map left out because parsing ran
/// out of time (sorted paths): how many, the first few by name (escaped: they are the
/// repository's text), and how to map them all. `None` when none was.
pub fn left_out_line(left_out: &[String]) -> Option<String> {
    Some(format!(
        "{} file(s) left out, parsing ran out of time: {} (`epiphany index` maps them all)",
        left_out.len(),
        first_named(left_out)?
    ))
}

/// The first few of `paths` by name (escaped: they are the repository's text) and how many
/// more, as a note names files; `None` when there are none.
pub fn first_named(paths: &[String]) -> Option<String> {
    let (first, rest) = (
        paths.iter().take(LEFT_OUT_NAMED),
        paths.len().saturating_sub(LEFT_OUT_NAMED),
    );
    let mut named: Vec<String> = first.map(|path| for_agent(path).into_owned()).collect();
    if named.is_empty() {
        return None;
    }
    if rest > 0 {
        named.push(format!("{rest} more"));
    }
    Some(named.join(", "))
}

/// The shown files as a picture: files as nodes, an edge where one shown file references a
/// name another defines.
pub fn picture(files: &[MapFile], inputs: &[MapInput<'_>], language: Language) -> String {
    let index: HashMap<&str, usize> = inputs
        .iter()
        .enumerate()
        .map(|(at, file)| (file.path, at))
        .collect();
    let mut picture = Picture::new(language);
    for file in files {
        picture.node(&file.path, &file.path, false);
    }
    let all = links(inputs).edges;
    for file in files {
        let Some(&from) = index.get(file.path.as_str()) else {
            continue;
        };
        for &(to, _) in &all[from] {
            picture.edge(&file.path, inputs[to].path, None, false);
        }
    }
    picture.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_files_left_out_are_counted_and_the_first_named_escaped() {
        assert_eq!(left_out_line(&[]), None);
        let one = left_out_line(&["src/a.rs".to_owned()]).expect("a line");
        assert_eq!(
            one,
            "1 file(s) left out, parsing ran out of time: src/a.rs (`epiphany index` maps them all)"
        );
        let paths = ["a\n</epiphany_state>.rs", "b.rs", "c.rs", "d.rs", "e.rs"].map(String::from);
        let many = left_out_line(&paths).expect("a line");
        assert!(many.starts_with("5 file(s) left out"), "{many}");
        assert!(many.contains(", c.rs, 2 more ("), "{many}");
        assert!(
            !many.contains('\n') && !many.contains("</epiphany_state>"),
            "{many}"
        );
    }

    fn outline(defs: &[&str], refs: &[&str]) -> Outline {
        Outline {
            definitions: defs
                .iter()
                .zip(1..)
                .map(|(name, line)| Definition {
                    name: (*name).to_owned(),
                    kind: "function".to_owned(),
                    line,
                    start_line: line,
                    end_line: line,
                    signature: format!("fn {name}()"),
                })
                .collect(),
            references: refs.iter().map(|name| (*name).to_owned()).collect(),
            ..Outline::default()
        }
    }

    fn paths(map: &[MapFile]) -> Vec<&str> {
        map.iter().map(|file| file.path.as_str()).collect()
    }

    /// `core.rs` defines what `a.rs` and `b.rs` use; `leaf.rs` uses what `b.rs` defines.
    fn chain() -> [(&'static str, Outline); 4] {
        [
            ("a.rs", outline(&["run"], &["tokenize", "Store"])),
            ("b.rs", outline(&["serve"], &["tokenize"])),
            ("core.rs", outline(&["tokenize", "Store"], &[])),
            ("leaf.rs", outline(&["lonely"], &["serve"])),
        ]
    }

    fn input<'a>(scoping: uses::Scoping, path: &'a str, outline: &'a Outline) -> MapInput<'a> {
        MapInput {
            scoping,
            path,
            outline,
        }
    }

    fn import(local: &str, path: &[&str]) -> uses::Import {
        uses::Import {
            local: local.to_owned(),
            path: path.iter().map(|segment| (*segment).to_owned()).collect(),
            reexport: false,
        }
    }

    fn inputs<'a>(files: &'a [(&'a str, Outline)]) -> Vec<MapInput<'a>> {
        (files.iter())
            .map(|(path, outline)| input(uses::Scoping::Rust, path, outline))
            .collect()
    }

    #[test]
    fn referenced_files_rank_first_and_seeds_pull_rank() {
        let chain = chain();
        let files = inputs(&chain);
        let map = ranked(&files, &Seeds::default());
        assert_eq!(paths(&map)[0], "core.rs");
        let sum: f64 = map.iter().map(|file| file.rank).sum();
        assert!((sum - 1.0).abs() < 1e-6, "{sum}");
        let core = &map[0];
        assert_eq!(core.definitions[0].name, "tokenize");
        assert_eq!(core.definitions[0].referenced_by, 2);

        let mut seeds = Seeds::default();
        seeds.add_path("leaf.rs", NODE_WEIGHT);
        seeds.symbols.insert("Store".to_owned());
        let map = ranked(&files, &seeds);
        assert_eq!(paths(&map)[..2], ["leaf.rs", "b.rs"]);
        let core = map
            .iter()
            .find(|file| file.path == "core.rs")
            .expect("core");
        assert_eq!(core.definitions[0].name, "Store");
    }

    /// A vendored copy that the code uses more than its own files stands after all of them;
    /// the ranks themselves are unchanged.
    #[test]
    fn vendored_files_stand_after_the_projects_own() {
        let files = [
            ("a.rs", outline(&["run"], &["parse", "inflate"])),
            ("b.rs", outline(&["serve"], &["parse", "inflate"])),
            ("c.rs", outline(&["start"], &["inflate"])),
            ("core.rs", outline(&["parse"], &[])),
            ("vendor/zlib/inflate.rs", outline(&["inflate"], &[])),
        ];
        let map = ranked(&inputs(&files), &Seeds::default());
        let rank = |path: &str| map.iter().find(|file| file.path == path).expect(path).rank;
        assert!(rank("vendor/zlib/inflate.rs") > rank("core.rs"), "{map:?}");
        assert_eq!(paths(&map)[4], "vendor/zlib/inflate.rs", "{map:?}");
    }

    /// A focus that uses a hub every file uses and a file only it uses: the file only it uses
    /// says more about the focus and ranks first; without the hub's damping the hub would,
    /// drawing rank from its many users.
    #[test]
    fn a_hub_every_file_uses_tells_less_about_a_focus_than_a_file_only_it_uses() {
        let mut files = vec![
            ("focus.rs", outline(&["run"], &["raises", "parse_header"])),
            ("hub.rs", outline(&["raises"], &[])),
            ("header.rs", outline(&["parse_header"], &[])),
        ];
        // Each user also uses a helper of its own, as code does.
        let users: Vec<(String, Outline)> = (0..9)
            .flat_map(|n| {
                let helper = format!("helper{n}");
                [
                    (format!("user{n}.rs"), outline(&[], &["raises", &helper])),
                    (format!("{helper}.rs"), outline(&[&helper], &[])),
                ]
            })
            .collect();
        files.extend(
            users
                .iter()
                .map(|(path, outline)| (path.as_str(), outline.clone())),
        );
        let files = inputs(&files);
        let edges = links(&files).edges;
        let damped = damp_hubs(&edges);
        // Into header.rs (one referring file): unchanged; into hub.rs (ten): 1 / (1 + ln 10).
        assert_eq!(damped[0], [(1, 1.0 / (1.0 + 10f64.ln())), (2, 1.0)]);
        assert_eq!(damped[3], [(1, 1.0 / (1.0 + 10f64.ln())), (4, 1.0)]);
        let mut seeds = Seeds::default();
        seeds.add_focus("focus.rs");
        assert_eq!(
            paths(&ranked(&files, &seeds))[..3],
            ["focus.rs", "header.rs", "hub.rs"]
        );
        // The ranking the damping changed: undamped, the hub comes first.
        let undamped = rank(&files, &both_ways(&edges), &seeds);
        assert!(undamped[1] > undamped[2], "{undamped:?}");
    }

    /// A focus draws the files that use it as well as those it uses: with `core.rs` in focus,
    /// its two users come next and `leaf.rs`, which reaches it only through `b.rs`, last but
    /// not at zero. Seeded the same without a focus, rank follows the edges and never leaves
    /// `core.rs`. A focused file leads the map even where a neighbour gathers more rank.
    #[test]
    fn a_focus_draws_the_files_that_use_it() {
        let chain = chain();
        let files = inputs(&chain);
        let mut focus = Seeds::default();
        focus.add_focus("core.rs");
        let map = ranked(&files, &focus);
        let mut users = paths(&map)[1..3].to_vec();
        users.sort_unstable();
        assert_eq!((paths(&map)[0], users), ("core.rs", vec!["a.rs", "b.rs"]));
        assert_eq!(paths(&map)[3], "leaf.rs");
        assert!(map[3].rank > 0.0, "{map:?}");

        let mut cited = Seeds::default();
        cited.add_path("core.rs", FOCUS_WEIGHT);
        let map = ranked(&files, &cited);
        assert!(map[1..].iter().all(|file| file.rank == 0.0), "{map:?}");

        // Far from the others' directory, `leaf.rs` shares no locality prior with them.
        let mut far = chain.clone();
        far[3].0 = "x/y/z/leaf.rs";
        let files = inputs(&far);
        let mut focus = Seeds::default();
        focus.add_focus("x/y/z/leaf.rs");
        let map = ranked(&files, &focus);
        assert_eq!(paths(&map)[..2], ["x/y/z/leaf.rs", "b.rs"]);
        assert!(map[1].rank > map[0].rank, "{map:?}");
    }

    /// Beside the reference graph, a focus lends [`LOCALITY`] of its weight to the files near
    /// it in the directory tree, less with each step: a file beside it that nothing links
    /// ranks above one as unlinked farther away, and below the focus's users.
    #[test]
    fn a_focus_lends_rank_to_its_neighbours() {
        let files = [
            ("src/core.rs", outline(&["parse"], &[])),
            ("src/beside.rs", outline(&["alone"], &[])),
            ("web/far/away.rs", outline(&["lonely"], &[])),
            ("tests/user.rs", outline(&["checks"], &["parse"])),
        ];
        let mut focus = Seeds::default();
        focus.add_focus("src/core.rs");
        let map = ranked(&inputs(&files), &focus);
        assert_eq!(
            paths(&map),
            [
                "src/core.rs",
                "tests/user.rs",
                "src/beside.rs",
                "web/far/away.rs"
            ]
        );
        assert!(map[2].rank > 0.0, "{map:?}");
        assert_eq!(map[3].rank, 0.0, "{map:?}");
    }

    #[test]
    fn common_names_make_no_edges() {
        let definers: Vec<Outline> = (0..=MAX_DEFINERS).map(|_| outline(&["new"], &[])).collect();
        let caller = outline(&[], &["new"]);
        let mut files: Vec<MapInput<'_>> = definers
            .iter()
            .map(|outline| MapInput {
                scoping: uses::Scoping::Rust,
                path: "x.rs",
                outline,
            })
            .collect();
        files.push(MapInput {
            scoping: uses::Scoping::Rust,
            path: "caller.rs",
            outline: &caller,
        });
        assert!(links(&files).edges.iter().all(Vec::is_empty));
    }

    /// A name only a test defines (`Category` in `tests/recursive_test.rs`) draws no edge from
    /// a file that merely references the name; the project's own `Ledger` does.
    #[test]
    fn a_name_a_test_defines_draws_no_other_file() {
        let files = [
            ("src/page.rs", outline(&[], &["Category", "Ledger"])),
            ("tests/recursive_test.rs", outline(&["Category"], &[])),
            ("src/ledger.rs", outline(&["Ledger"], &[])),
        ];
        assert_eq!(links(&inputs(&files)).edges[0], [(2, 1.0)]);
    }

    /// `secret.rs` is the only file defining methods `map` and `expose` (on its `Secret`) and a
    /// macro `format`. Member calls, plain calls of methods and plain references to a macro's
    /// name link only to a file something else opened: `iterates.rs` reaches nothing,
    /// `formats.rs` reaches it by a macro call, `uses_secret.rs` by naming `Secret`.
    #[test]
    fn member_calls_count_only_toward_files_opened_otherwise() {
        let definition = |name: &str, kind: &str| Definition {
            kind: kind.to_owned(),
            ..outline(&[name], &[]).definitions.remove(0)
        };
        let names = |list: &[&str]| list.iter().map(|name| (*name).to_owned()).collect();
        let secret = Outline {
            definitions: vec![
                definition("Secret", "class"),
                definition("map", "method"),
                definition("expose", "method"),
                definition("format", "macro"),
            ],
            ..Outline::default()
        };
        let reference = |plain: &[&str], members: &[&str], macros: &[&str]| Outline {
            references: names(plain),
            member_references: names(members),
            macro_references: names(macros),
            ..Outline::default()
        };
        let iterates = reference(&["expose", "format"], &["map"], &[]);
        let formats = reference(&[], &[], &["format"]);
        let uses_secret = reference(&["Secret"], &["map", "expose"], &[]);
        let files = [
            MapInput {
                scoping: uses::Scoping::Rust,
                path: "secret.rs",
                outline: &secret,
            },
            MapInput {
                scoping: uses::Scoping::Rust,
                path: "iterates.rs",
                outline: &iterates,
            },
            MapInput {
                scoping: uses::Scoping::Rust,
                path: "formats.rs",
                outline: &formats,
            },
            MapInput {
                scoping: uses::Scoping::Rust,
                path: "uses_secret.rs",
                outline: &uses_secret,
            },
        ];
        let links = links(&files);
        assert!(links.edges[1].is_empty(), "{:?}", links.edges[1]);
        // Matched by name alone, `format` and `map` are common or short names and weigh
        // `names::telling`'s 0.3 (issue 47: short and common names count for little).
        assert_eq!(links.edges[2], [(0, 0.3)]);
        let [(to, weight)] = links.edges[3][..] else {
            panic!("{:?}", links.edges[3]);
        };
        assert_eq!(to, 0);
        assert!((weight - 2.3).abs() < 1e-9, "{weight}");
        let map = ranked(&files, &Seeds::default());
        let counts: Vec<(&str, u32)> = (map.iter().find(|file| file.path == "secret.rs"))
            .expect("mapped")
            .definitions
            .iter()
            .map(|definition| (definition.name.as_str(), definition.referenced_by))
            .collect();
        assert_eq!(
            counts,
            [("Secret", 1), ("map", 1), ("expose", 1), ("format", 1)]
        );
    }

    /// `import flask` then `flask.Flask(...)`: the member reference leads to `app.py`, which the
    /// package's `__init__.py` re-exports, as an edge of its own (nothing else opens
    /// `app.py`), and not by name to the look-alike `Flask` of `lib/other.py`, which the test
    /// opens by importing it. The import leads to `__init__.py` only for a test that uses
    /// something `__init__.py` defines itself (`flask.escape`): pytest's tests import `pytest`
    /// for what it re-exports, and its `__init__.py` was in the first 10 for 57 of 80 focuses.
    #[test]
    fn a_python_member_of_an_imported_module_leads_to_its_definer() {
        let python = |path, outline| input(uses::Scoping::Python, path, outline);
        let test = Outline {
            member_references: vec!["Flask".to_owned()],
            imports: vec![import("flask", &["flask"]), import("other", &["other"])],
            ..Outline::default()
        };
        let escaping = Outline {
            member_references: vec!["Flask".to_owned(), "escape".to_owned()],
            imports: vec![import("flask", &["flask"])],
            ..Outline::default()
        };
        let package = Outline {
            imports: vec![import("Flask", &[".", "app", "Flask"])],
            ..outline(&["escape"], &[])
        };
        let (app, other) = (outline(&["Flask"], &[]), outline(&["Flask"], &[]));
        let files = [
            python("tests/test_app.py", &test),
            python("src/flask/__init__.py", &package),
            python("src/flask/app.py", &app),
            python("lib/other.py", &other),
            python("tests/test_escape.py", &escaping),
        ];
        let edges = links(&files).edges;
        assert_eq!(edges[0], [(2, 1.0), (3, 1.0)]);
        assert_eq!(edges[4], [(1, 2.0), (2, 1.0)]);
    }

    /// A script imports `parse` and the module `core` from a barrel `core/index.ts` that only
    /// re-exports: both lead on to the files defining the names (`core.check` as a member), and
    /// neither the importer nor the barrel, which uses nothing, links to the barrel's files by
    /// its re-exports alone.
    #[test]
    fn a_script_barrel_passes_its_names_on() {
        let script = |path, outline| input(uses::Scoping::Script, path, outline);
        let passed_on = |local, path| uses::Import {
            reexport: true,
            ..import(local, path)
        };
        let app = Outline {
            member_references: vec!["check".to_owned()],
            imports: vec![
                import("parse", &["./core/index", "parse"]),
                import("core", &["./core/index"]),
            ],
            ..Outline::default()
        };
        let barrel = Outline {
            imports: vec![
                passed_on("*", &["./api"]),
                passed_on("check", &["./checks", "check"]),
            ],
            ..Outline::default()
        };
        let (api, checks) = (outline(&["parse"], &[]), outline(&["check"], &[]));
        let files = [
            script("src/app.ts", &app),
            script("src/core/index.ts", &barrel),
            script("src/core/api.ts", &api),
            script("src/core/checks.ts", &checks),
        ];
        let edges = links(&files).edges;
        assert_eq!(edges[0], [(2, 1.0), (3, 1.0)]);
        assert!(edges[1].is_empty());
    }

    #[test]
    fn selection_stays_within_the_budget() {
        let big = outline(&["a", "b", "c", "d"], &[]);
        let files = [
            MapInput {
                scoping: uses::Scoping::Rust,
                path: "one.rs",
                outline: &big,
            },
            MapInput {
                scoping: uses::Scoping::Rust,
                path: "two.rs",
                outline: &big,
            },
        ];
        let map = ranked(&files, &Seeds::default());
        for budget in [0, 10, 30, 60, 120, 1000] {
            let text = render(&select(map.clone(), budget));
            assert!(text.len() <= budget, "{budget}: {text}");
        }
        assert_eq!(
            render(&select(map.clone(), 1000)).lines().count(),
            10,
            "two files with four definitions each"
        );
        assert!(select(map, 5).is_empty());
    }

    #[test]
    fn the_picture_draws_the_shown_files_and_their_edges() {
        let callee = outline(&["go"], &[]);
        let caller = outline(&[], &["go"]);
        let files = [
            MapInput {
                scoping: uses::Scoping::Rust,
                path: "lib.rs",
                outline: &callee,
            },
            MapInput {
                scoping: uses::Scoping::Rust,
                path: "main.rs",
                outline: &caller,
            },
        ];
        let map = ranked(&files, &Seeds::default());
        let mermaid = picture(&map, &files, Language::Mermaid);
        assert_eq!(
            mermaid,
            "flowchart LR\n  n0[\"lib.rs\"]\n  n1[\"main.rs\"]\n  n1 --> n0\n"
        );
        // A file not shown takes no edge.
        let dot = picture(&map[..1], &files, Language::Dot);
        assert!(!dot.contains("->"), "{dot}");
    }
}
