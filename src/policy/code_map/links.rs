//! The map's file graph: which files each file's references lead to, and how strongly.
//!
//! A reference is resolved in scope first, as its language sees it ([`Resolver`]): a name a
//! file imports leads to the file defining what the import names (or to the module's file),
//! and nowhere when the import names a package outside the repository (`std`, `os`,
//! `vitest`); a name the file defines itself leads nowhere else; Go and Java names of the
//! file's own package, and names a glob import opens, lead to their files; in Python and the
//! scripts a member reference leads to what a module the file imports whole defines or
//! re-exports under that name (`import flask` then `flask.Flask`). Every import is a reference
//! of its own (`use crate::engine::Engine` uses `engine.rs`; `from flask import Flask` uses
//! `app.py`, which the package re-exports), except a script's re-export, which the file only
//! passes on, and an import of a whole module whose members all lead past its own file
//! (`import pytest` for `pytest.raises`). Such an edge weighs [`RESOLVED_WEIGHT`].
//!
//! A name nothing in scope binds is matched by name among the files of the same language
//! (JavaScript and TypeScript as one, C and C++ as one), unless the language provides it
//! (`Err`, `Ready`, `len`: [`names::provided`]): an edge to each of the files defining it,
//! weighted by `1 / (number of files defining it)` times how much the name tells toward the
//! file ([`names::by_name`]: less for a short or common name, less toward a test fixture,
//! nothing toward a fixture's short or common name, nothing toward a test); names defined in
//! more than [`MAX_DEFINERS`] files (`new`, `run`) make no such edge. A macro call (`name!()`)
//! means only a macro. A member call (`value.name()`) does not say whose `name` it calls, nor a
//! plain call of a method: they count toward a file only once the file references something
//! there that can only mean that file's (a type, a function, a constructor), or every
//! `.map()` in the repository would point at the one type that defines a `map`.

use std::collections::BTreeMap;

use foldhash::HashMap;
use foldhash::HashSet;

use super::Form;
use super::MAX_DEFINERS;
use super::MapInput;
use super::names;
use super::names::Definer;
use super::uses::Resolver;
use super::uses::Scope;
use super::uses::Scoping;

/// The weight of an edge a reference resolved in scope draws: as much as a name only one
/// file defines.
pub const RESOLVED_WEIGHT: f64 = 1.0;

/// A file's edges: (target file, weight).
pub type Edges = Vec<Vec<(usize, f64)>>;

/// The file graph, and how many files' references count toward each definition.
pub struct Links<'a> {
    /// For each file, the files it references names of, with weights.
    pub edges: Edges,
    /// (defining file, name): how many other files' references count toward it.
    pub referrers: HashMap<(usize, &'a str), u32>,
}

/// The files defining each name, per language.
#[derive(Default)]
struct Definers<'a> {
    any: HashMap<(Scoping, &'a str), Vec<usize>>,
    macros: HashMap<(Scoping, &'a str), Vec<usize>>,
    /// (file, name) defined there only as methods or macros: a plain reference cannot open it.
    closed: HashSet<(usize, &'a str)>,
}

impl<'a> Definers<'a> {
    fn of(files: &[MapInput<'a>]) -> Definers<'a> {
        let mut definers = Definers::default();
        for (at, file) in files.iter().enumerate() {
            let mut only_methods_or_macros: HashMap<&str, bool> = HashMap::default();
            for definition in &file.outline.definitions {
                let name = definition.name.as_str();
                let closed_kind = !Form::Plain.can_only_mean(&definition.kind);
                *only_methods_or_macros.entry(name).or_insert(true) &= closed_kind;
                if Form::Macro.can_only_mean(&definition.kind) {
                    add_definer(&mut definers.macros, (file.scoping, name), at);
                }
                add_definer(&mut definers.any, (file.scoping, name), at);
            }
            definers.closed.extend(
                (only_methods_or_macros.into_iter())
                    .filter_map(|(name, only)| only.then_some((at, name))),
            );
        }
        definers
    }
}

/// Records that the file at `at` defines `key`, once.
fn add_definer<'a>(
    definers: &mut HashMap<(Scoping, &'a str), Vec<usize>>,
    key: (Scoping, &'a str),
    at: usize,
) {
    let entry = definers.entry(key).or_default();
    if entry.last() != Some(&at) {
        entry.push(at);
    }
}

/// What one file's references lead to: edges that open a file, and edges that count only
/// toward a file something else opened.
#[derive(Default)]
struct Found<'a> {
    opening: Vec<(usize, &'a str, f64)>,
    gated: Vec<(usize, &'a str, f64)>,
    /// The names the file's imports bind, which mean what the imports name or nothing here.
    bound: HashSet<&'a str>,
    /// The member references that name what a module the file imports defines
    /// ([`Resolver::module_members`]): they mean that, not any other file's name.
    members: HashSet<&'a str>,
}

/// The file graph of `files`.
pub fn links<'a>(files: &[MapInput<'a>]) -> Links<'a> {
    let resolver = Resolver::over(files.iter().map(|file| {
        let scope = Scope {
            scoping: file.scoping,
            definitions: &file.outline.definitions,
            imports: &file.outline.imports,
        };
        (file.path, scope)
    }));
    let index: HashMap<&str, usize> = (files.iter().enumerate())
        .map(|(at, file)| (file.path, at))
        .collect();
    let definers = Definers::of(files);
    let kinds: Vec<Definer> = files.iter().map(|file| Definer::of(file.path)).collect();
    let mut links = Links {
        edges: Vec::with_capacity(files.len()),
        referrers: HashMap::default(),
    };
    for from in 0..files.len() {
        let mut found = in_scope(&resolver, &index, files, from);
        by_name(&definers, &kinds, files, from, &mut found);
        let opened: HashSet<usize> = found.opening.iter().map(|(to, _, _)| *to).collect();
        found.gated.retain(|(to, _, _)| opened.contains(to));
        let mut out: BTreeMap<usize, f64> = BTreeMap::new();
        let mut counted: HashSet<(usize, &str)> = HashSet::default();
        for (to, name, weight) in found.opening.into_iter().chain(found.gated) {
            *out.entry(to).or_default() += weight;
            if counted.insert((to, name)) {
                *links.referrers.entry((to, name)).or_default() += 1;
            }
        }
        links.edges.push(out.into_iter().collect());
    }
    links
}

/// What the file at `from` imports and the names it references plainly that its scope binds
/// ([`Resolver`]), as opening edges; the names it leaves to [`by_name`] are the others.
fn in_scope<'a>(
    resolver: &Resolver<'a>,
    index: &HashMap<&str, usize>,
    files: &[MapInput<'a>],
    from: usize,
) -> Found<'a> {
    let file = &files[from];
    let mut found = Found::default();
    let mut edge = |path: &str, name: &'a str| {
        if let Some(&to) = index.get(path)
            && to != from
        {
            found.opening.push((to, name, RESOLVED_WEIGHT));
        }
    };
    let members = resolver.module_members(file.path, &file.outline.member_references);
    let mut bound = HashSet::default();
    // Names only imports from crates outside the files bind: a bare one resolves nowhere.
    let mut outside = HashSet::default();
    for import in file.outline.imports.iter().filter(|i| i.local != "*") {
        match resolver.imported_file(file.path, import) {
            Some(_) if import.reexport || members.facades.contains(import.local.as_str()) => {}
            Some(path) => {
                let name = match import.path.last().map(String::as_str) {
                    Some("default") | None => import.local.as_str(),
                    Some(name) => name,
                };
                edge(path, name);
            }
            // A crate only its manifest names (the repository's own root crate, imported by
            // its tests and binaries) may be the repository's: its names are matched by name.
            None if file.scoping == Scoping::Rust && !is_standard_crate(&import.path) => {
                outside.insert(import.local.as_str());
                continue;
            }
            None => {}
        }
        bound.insert(import.local.as_str());
    }
    let unbound = (file.outline.references.iter())
        .map(String::as_str)
        .filter(|name| !bound.contains(name) && !outside.contains(name));
    for name in unbound {
        if let Some((path, name)) = resolver.resolve_written(file.path, &[], name, Form::Plain) {
            edge(path, name);
        }
    }
    let mut reached = HashSet::default();
    for (member, path, name) in members.edges {
        edge(path, name);
        reached.insert(member);
    }
    found.bound = bound;
    found.members = reached;
    found
}

/// Whether a Rust import path names the standard library.
fn is_standard_crate(path: &[String]) -> bool {
    path.first()
        .is_some_and(|first| matches!(first.as_str(), "std" | "core" | "alloc"))
}

/// The edges the file at `from` makes by names alone: its plain references that nothing in
/// its scope binds, nor its language provides, its macro calls and its member references,
/// each toward the files of its language defining the name.
fn by_name<'a>(
    definers: &Definers<'a>,
    kinds: &[Definer],
    files: &[MapInput<'a>],
    from: usize,
    found: &mut Found<'a>,
) {
    let file = &files[from];
    let scoping = file.scoping;
    let outline = file.outline;
    let resolved: HashSet<&str> = found.opening.iter().map(|(_, name, _)| *name).collect();
    let defined: HashSet<&str> = (outline.definitions.iter())
        .map(|definition| definition.name.as_str())
        .collect();
    let free = |name: &&str| {
        !names::provided(scoping, name) && !resolved.contains(name) && !defined.contains(name)
    };
    let weigh = |to: usize, name: &str, weight: f64| {
        names::by_name(name, kinds[to]).map(|told| told * weight)
    };
    let unbound = (outline.references.iter())
        .map(String::as_str)
        .filter(|name| !found.bound.contains(name));
    let unbound: Vec<&str> = unbound.filter(free).collect();
    for name in unbound {
        for (to, weight) in targets(&definers.any, (scoping, name), from) {
            let Some(weight) = weigh(to, name, weight) else {
                continue;
            };
            let list = if definers.closed.contains(&(to, name)) {
                &mut found.gated
            } else {
                &mut found.opening
            };
            list.push((to, name, weight));
        }
    }
    for name in outline.macro_references.iter().map(String::as_str) {
        if names::provided(scoping, name) {
            continue;
        }
        for (to, weight) in targets(&definers.macros, (scoping, name), from) {
            found
                .opening
                .extend(weigh(to, name, weight).map(|weight| (to, name, weight)));
        }
    }
    let members = (outline.member_references.iter())
        .map(String::as_str)
        .filter(|name| !found.members.contains(name));
    for name in members {
        for (to, weight) in targets(&definers.any, (scoping, name), from) {
            found
                .gated
                .extend(weigh(to, name, weight).map(|weight| (to, name, weight)));
        }
    }
}

/// The files a reference to `key` from the file at `from` links to by name, each with its
/// weight: `1 / (number of files defining it)`, or none when more than [`MAX_DEFINERS`] files
/// do.
fn targets<'d, 'n>(
    definers: &'d HashMap<(Scoping, &'n str), Vec<usize>>,
    key: (Scoping, &'n str),
    from: usize,
) -> impl Iterator<Item = (usize, f64)> + 'd {
    let targets = (definers.get(&key))
        .filter(|targets| targets.len() <= MAX_DEFINERS)
        .map(Vec::as_slice)
        .unwrap_or_default();
    let weight = 1.0 / targets.len().max(1) as f64;
    (targets.iter())
        .filter(move |&&to| to != from)
        .map(move |&to| (to, weight))
}
