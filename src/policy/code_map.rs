//! The ranked repository map: which files and definitions matter most, from the graph of
//! which file references names another file defines, personalised by what the state cites
//! and by a focus. Pure: the files' outlines come in, a ranked and budgeted map goes out.
//!
//! - Edges: file A → file B for every name A references that B defines, weighted by
//!   `1 / (number of files defining it)`; names defined in more than [`MAX_DEFINERS`] files
//!   (`new`, `run`) say nothing about structure and are left out. A macro call (`name!()`)
//!   means only a macro. A member call (`value.name()`) does not say whose `name` it calls,
//!   nor a plain call of a method: they count toward a file only once A references something
//!   there that can only mean that file's (a type, a function, a constructor), or every
//!   `.map()` in the repository would point at the one type that defines a `map` ([`links`]).
//! - Rank: PageRank with damping [`DAMPING`], teleporting to the seeds ([`Seeds`]) in
//!   proportion to their weights (uniformly when there are none); rank that reaches a file
//!   with no outgoing edge teleports the same way. Rank follows the edges, so it gathers in
//!   the files whose names the others use, and the state's citations pull it their way.
//! - A focus ([`Seeds::add_focus`]) asks what is related to a file rather than what matters
//!   most: rank then follows every edge both ways ([`both_ways`]), since what uses the focus
//!   (its callers, its tests) is as related as what it uses, and rank that followed the edges
//!   alone never reached those. The focused files lead the map.
//! - Definitions of a file are ordered by how many other files' references link to them, seeded
//!   symbols first, then by line.
//! - [`select`] keeps the best files, each with its key definitions' signature lines, within a
//!   character budget; [`render`] prints that selection as text.
//!
//! The map links files by names alone, which is enough to rank them. Where one reference must
//! be followed to the one definition it means (`propose`'s edges), [`uses`] resolves it through
//! the file's imports and scope.

use std::collections::BTreeMap;
use std::collections::BTreeSet;

use foldhash::HashMap;
use foldhash::HashSet;
use serde::Deserialize;
use serde::Serialize;

pub mod uses;

use crate::policy::peripheral;
use crate::policy::picture::Language;
use crate::policy::picture::Picture;
use crate::policy::text::for_agent;
use crate::state::model::State;

/// PageRank's damping factor.
pub const DAMPING: f64 = 0.85;
/// A name defined in more files than this makes no edges.
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
}

/// A file's edges: (target file, weight).
type Edges = Vec<Vec<(usize, f64)>>;

/// The file graph, and how many files' references count toward each definition.
struct Links<'a> {
    /// For each file, the files it references names of, with weights.
    edges: Edges,
    /// (defining file, name): how many other files' references count toward it.
    referrers: HashMap<(usize, &'a str), u32>,
}

/// The file graph: for each file, the files it references names of, with weights.
///
/// A reference opens a file when it can only mean something there: a plain reference to a
/// name the file defines other than as a method or macro, or a macro call of a macro it
/// defines. A member call, or a plain call of a name the file defines only as methods or
/// macros (Python's `str()` against a `def str(self)`, Java's call of an inherited method),
/// could mean another type's: it counts only toward a file the referencing file opened.
fn links<'a>(files: &[MapInput<'a>]) -> Links<'a> {
    let mut definers: HashMap<&str, Vec<usize>> = HashMap::default();
    let mut macro_definers: HashMap<&str, Vec<usize>> = HashMap::default();
    // (file, name) defined there only as methods or macros: a plain reference cannot open it.
    let mut closed: HashSet<(usize, &str)> = HashSet::default();
    for (at, file) in files.iter().enumerate() {
        let mut only_methods_or_macros: HashMap<&str, bool> = HashMap::default();
        for definition in &file.outline.definitions {
            let name = definition.name.as_str();
            let closed_kind = !Form::Plain.can_only_mean(&definition.kind);
            *only_methods_or_macros.entry(name).or_insert(true) &= closed_kind;
            if Form::Macro.can_only_mean(&definition.kind) {
                add_definer(&mut macro_definers, name, at);
            }
            add_definer(&mut definers, name, at);
        }
        closed.extend(
            (only_methods_or_macros.into_iter())
                .filter_map(|(name, only)| only.then_some((at, name))),
        );
    }
    let mut links = Links {
        edges: Vec::with_capacity(files.len()),
        referrers: HashMap::default(),
    };
    for (from, file) in files.iter().enumerate() {
        let outline = file.outline;
        let mut opening: Vec<(usize, &str, f64)> = Vec::new();
        let mut gated: Vec<(usize, &str, f64)> = Vec::new();
        for name in &outline.references {
            for (to, weight) in targets(&definers, name, from) {
                let list = if closed.contains(&(to, name.as_str())) {
                    &mut gated
                } else {
                    &mut opening
                };
                list.push((to, name, weight));
            }
        }
        for name in &outline.macro_references {
            opening.extend(
                targets(&macro_definers, name, from)
                    .map(|(to, weight)| (to, name.as_str(), weight)),
            );
        }
        for name in &outline.member_references {
            gated.extend(
                targets(&definers, name, from).map(|(to, weight)| (to, name.as_str(), weight)),
            );
        }
        let opened: HashSet<usize> = opening.iter().map(|(to, _, _)| *to).collect();
        gated.retain(|(to, _, _)| opened.contains(to));
        let mut out: BTreeMap<usize, f64> = BTreeMap::new();
        let mut counted: HashSet<(usize, &str)> = HashSet::default();
        for (to, name, weight) in opening.into_iter().chain(gated) {
            *out.entry(to).or_default() += weight;
            if counted.insert((to, name)) {
                *links.referrers.entry((to, name)).or_default() += 1;
            }
        }
        links.edges.push(out.into_iter().collect());
    }
    links
}

/// Records that the file at `at` defines `name`, once.
fn add_definer<'a>(definers: &mut HashMap<&'a str, Vec<usize>>, name: &'a str, at: usize) {
    let entry = definers.entry(name).or_default();
    if entry.last() != Some(&at) {
        entry.push(at);
    }
}

/// The files a reference to `name` from the file at `from` links to, each with its weight:
/// `1 / (number of files defining it)`, or none when more than [`MAX_DEFINERS`] files do.
fn targets<'d>(
    definers: &'d HashMap<&str, Vec<usize>>,
    name: &str,
    from: usize,
) -> impl Iterator<Item = (usize, f64)> + 'd {
    let targets = (definers.get(name))
        .filter(|targets| targets.len() <= MAX_DEFINERS)
        .map(Vec::as_slice)
        .unwrap_or_default();
    let weight = 1.0 / targets.len().max(1) as f64;
    (targets.iter())
        .filter(move |&&to| to != from)
        .map(move |&to| (to, weight))
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
        rank(files, &both_ways(&links.edges), seeds)
    };
    let mut map: Vec<MapFile> = (files.iter().enumerate())
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
                definitions,
                over_budget: file.outline.over_budget,
            }
        })
        .collect();
    let focused = |file: &MapFile| seeds.focus.contains(&file.path);
    map.sort_by(|a, b| {
        (focused(b).cmp(&focused(a)))
            .then(own(b).cmp(&own(a)))
            .then(b.rank.total_cmp(&a.rank))
            .then(a.path.cmp(&b.path))
    });
    map
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
    }
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
    format!("  {:>5}  {signature}\n", definition.start_line)
}

/// The best files of `map`, each with at most [`DEFINITIONS_PER_FILE`] definitions, as many
/// as fit in `max_chars` rendered ([`render`]); a file is shown only with at least its first
/// definition (or alone when it has none).
pub fn select(map: Vec<MapFile>, max_chars: usize) -> Vec<MapFile> {
    let mut used = 0;
    let mut kept = Vec::new();
    for mut file in map {
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
        let fits_alone = definitions.is_empty() && used + cost <= max_chars;
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
    let (first, rest) = (
        left_out.iter().take(LEFT_OUT_NAMED),
        left_out.len().saturating_sub(LEFT_OUT_NAMED),
    );
    let mut named: Vec<String> = first.map(|path| for_agent(path).into_owned()).collect();
    if named.is_empty() {
        return None;
    }
    if rest > 0 {
        named.push(format!("{rest} more"));
    }
    Some(format!(
        "{} file(s) left out, parsing ran out of time: {} (`epiphany index` maps them all)",
        left_out.len(),
        named.join(", ")
    ))
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
            ("a.rs", outline(&["run"], &["parse", "Store"])),
            ("b.rs", outline(&["serve"], &["parse"])),
            ("core.rs", outline(&["parse", "Store"], &[])),
            ("leaf.rs", outline(&["lonely"], &["serve"])),
        ]
    }

    fn inputs<'a>(files: &'a [(&'a str, Outline)]) -> Vec<MapInput<'a>> {
        (files.iter())
            .map(|(path, outline)| MapInput { path, outline })
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
        assert_eq!(core.definitions[0].name, "parse");
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
        assert_eq!(paths(&map), ["core.rs", "a.rs", "b.rs", "leaf.rs"]);
        assert!(map[3].rank > 0.0, "{map:?}");

        let mut cited = Seeds::default();
        cited.add_path("core.rs", FOCUS_WEIGHT);
        let map = ranked(&files, &cited);
        assert!(map[1..].iter().all(|file| file.rank == 0.0), "{map:?}");

        let mut focus = Seeds::default();
        focus.add_focus("leaf.rs");
        let map = ranked(&files, &focus);
        assert_eq!(paths(&map)[..2], ["leaf.rs", "b.rs"]);
        assert!(map[1].rank > map[0].rank, "{map:?}");
    }

    #[test]
    fn common_names_make_no_edges() {
        let definers: Vec<Outline> = (0..=MAX_DEFINERS).map(|_| outline(&["new"], &[])).collect();
        let caller = outline(&[], &["new"]);
        let mut files: Vec<MapInput<'_>> = definers
            .iter()
            .map(|outline| MapInput {
                path: "x.rs",
                outline,
            })
            .collect();
        files.push(MapInput {
            path: "caller.rs",
            outline: &caller,
        });
        assert!(links(&files).edges.iter().all(Vec::is_empty));
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
                path: "secret.rs",
                outline: &secret,
            },
            MapInput {
                path: "iterates.rs",
                outline: &iterates,
            },
            MapInput {
                path: "formats.rs",
                outline: &formats,
            },
            MapInput {
                path: "uses_secret.rs",
                outline: &uses_secret,
            },
        ];
        let links = links(&files);
        assert!(links.edges[1].is_empty(), "{:?}", links.edges[1]);
        assert_eq!(links.edges[2], [(0, 1.0)]);
        assert_eq!(links.edges[3], [(0, 3.0)]);
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

    #[test]
    fn selection_stays_within_the_budget() {
        let big = outline(&["a", "b", "c", "d"], &[]);
        let files = [
            MapInput {
                path: "one.rs",
                outline: &big,
            },
            MapInput {
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
                path: "lib.rs",
                outline: &callee,
            },
            MapInput {
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
