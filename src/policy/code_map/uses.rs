//! Where a file's references lead. A parsed file says, for each reference it makes, on which line
//! and how it is written (the names that qualify it: `ledger::balance`, `self.save`,
//! `app.ledger.balance`), and which names its imports bind ([`FileUses`], made by
//! `search::syntax::uses`). [`Resolver::resolve`] finds the one definition a reference names,
//! through the file's imports and its own scope as its language has them, never by a name
//! another file happens to define too (docs/drafting.md#reference-edges):
//!
//! - Rust: `mod` declarations, `use` paths from `crate`, `self`, `super` or a declared module
//!   (lists, renames and globs), and paths written in the code (`ledger::balance()`,
//!   `Ledger::open()`);
//! - Python: `import` and `from ... import`, absolute (a module whose path ends with the dotted
//!   name) or relative to the package;
//! - JavaScript and TypeScript: `import` and `require` of a relative path (`./ledger` is
//!   `ledger.ts`, `ledger.js`, `ledger/index.ts`, ...; a default import is taken to be the
//!   definition of the name it binds), and the re-exports of a module (`export * from`,
//!   `export { a } from`), followed as Python's are; packages are not followed;
//! - Go: package imports (the package is the directory at the end of the import path), and one
//!   scope shared by the files of a directory;
//! - Java: imports of classes, of their static members and of packages, and the classes of the
//!   file's own package;
//! - C and C++: the file's own scope only (an `#include` is not followed).
//!
//! Everywhere, a name the file defines itself resolves there (`self`, `this` and `Self`
//! qualify the file's own names). A plain call of a bare name never means a method, except in
//! Java and C/C++, where a class's methods call each other so; a macro call means only a macro.
//! What cannot be told (a member of a local value, `f().name`, a name bound by nothing) is
//! left unresolved. Pure: the files come in parsed, keyed by their slash paths.

use std::collections::BTreeMap;
use std::collections::HashMap;
use std::collections::HashSet;

use serde::Deserialize;
use serde::Serialize;

use super::modules::Modules;
use super::modules::parent;
use crate::policy::code_map::Definition;
use crate::policy::code_map::Form;
use crate::policy::peripheral::peripheral;

/// How a language's files see each other's names. A name means something only within one
/// scoping: JavaScript and TypeScript are one, C and C++ are one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Scoping {
    /// Rust.
    Rust,
    /// Python.
    Python,
    /// JavaScript and TypeScript.
    Script,
    /// Go.
    Go,
    /// Java.
    Java,
    /// C and C++.
    C,
}

/// One reference a file makes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Use {
    /// The name referenced.
    pub name: String,
    /// The names written before it, outermost first, joined by `::` or `.` (`crate::ledger::`
    /// is `crate`, `ledger`): empty for a bare name, `None` when something other than names
    /// comes before it (`f().name`, `items[0].name`, `Vec::<u8>::new`).
    pub qualifier: Option<Vec<String>>,
    /// Its line (1-based).
    pub line: u32,
    /// How it is written.
    pub form: Form,
}

/// One name an import binds in a file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Import {
    /// The name bound: the imported name, its alias, the module's name, or `*` for a glob.
    pub local: String,
    /// What it names, as the language spells it, one segment each: Rust `crate`, `ledger`,
    /// `balance` (a `mod ledger;` declaration is `self`, `ledger`); Python `app`, `ledger`,
    /// `balance`, a relative module starting with its dots (`..`, `util`); JavaScript and
    /// TypeScript the module specifier as written (`./ledger`), then the imported name
    /// (`default` for a default import); Go the import path; Java `com`, `shop`, `Ledger`. A
    /// glob ends in `*`.
    pub path: Vec<String>,
    /// Whether the file only passes the name on (a script's `export { a } from './m'`): the
    /// name then leads on to its definer, but the file does not use it.
    #[serde(default)]
    pub reexport: bool,
}

/// What a parsed file defines, references and imports, and its text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileUses {
    /// Its text, which what a code ref cites in it is read from (`policy::code_ref::judge`).
    pub text: String,
    /// How its language scopes names.
    pub scoping: Scoping,
    /// Every definition a code reference may cite, in the order of their names.
    pub definitions: Vec<Definition>,
    /// Its references, in file order.
    pub uses: Vec<Use>,
    /// What its imports bind, in file order.
    pub imports: Vec<Import>,
}

impl FileUses {
    /// The innermost definition whose span holds `line`.
    pub fn enclosing(&self, line: u32) -> Option<&Definition> {
        (self.definitions.iter())
            .filter(|d| d.start_line <= line && line <= d.end_line)
            .min_by_key(|d| d.end_line - d.start_line)
    }

    /// What the resolver reads of it.
    pub fn scope(&self) -> Scope<'_> {
        Scope {
            scoping: self.scoping,
            definitions: &self.definitions,
            imports: &self.imports,
        }
    }
}

/// What [`Resolver`] reads of a file: how its language scopes names, what it defines and
/// what its imports bind.
#[derive(Debug, Clone, Copy)]
pub struct Scope<'a> {
    /// How its language scopes names.
    pub scoping: Scoping,
    /// Its definitions, in the order of their names.
    pub definitions: &'a [Definition],
    /// What its imports bind, in file order.
    pub imports: &'a [Import],
}

impl<'a> Scope<'a> {
    /// The names it defines outside every other definition (a module's own names, not a
    /// class's fields or methods). Of two definitions with one span, the first holds the other.
    fn top_names(&self) -> HashSet<&'a str> {
        let mut order: Vec<&Definition> = self.definitions.iter().collect();
        order.sort_by_key(|d| (d.start_line, std::cmp::Reverse(d.end_line)));
        let mut names = HashSet::new();
        let mut open_until = 0;
        for definition in order {
            if definition.start_line > open_until {
                names.insert(definition.name.as_str());
                open_until = definition.end_line;
            }
        }
        names
    }

    fn defines(&self, name: &str) -> bool {
        self.definitions.iter().any(|d| d.name == name)
    }
}

/// Where a name leads while a path is followed.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Place<'a> {
    /// A module, by the files that may hold it.
    Module(Module<'a>),
    /// The names of the file at this path, its own as well as its classes' (`self.save`,
    /// `Self::open`, `this.render`).
    Own(&'a str),
    /// The definition named `.1` in the file at `.0`.
    Item(&'a str, &'a str),
}

/// A module.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Module<'a> {
    /// These files: a script module, the file itself.
    Files(Vec<&'a str>),
    /// A module path as a path without its extension (`src/ledger`, `app/ledger`, a Java
    /// package's directory); `anywhere` when it may lie below any directory (absolute Python
    /// and Java names).
    Stem { stem: String, anywhere: bool },
    /// A Go package by its import path.
    Package(&'a str),
}

/// What a file's member references reach through the modules it imports whole
/// ([`Resolver::module_members`]).
#[derive(Debug, Default, PartialEq)]
pub struct Members<'a> {
    /// Each member name with the file and the definition it leads to.
    pub edges: Vec<(&'a str, &'a str, &'a str)>,
    /// The local names of whole-module imports whose members all lead past the module's own
    /// file (`import pytest` then only `pytest.raises`, `pytest.mark`, which `__init__.py`
    /// re-exports): the import uses what the members lead to, not the module's file.
    pub facades: HashSet<&'a str>,
}

/// How deep a Rust `use` path may lean on another import of the same file (`mod ledger;` then
/// `use ledger::balance;`).
const IMPORT_DEPTH: usize = 4;

/// Resolves references across the parsed files.
pub struct Resolver<'a> {
    files: HashMap<&'a str, Scope<'a>>,
    /// Per file, the names it defines at its top ([`Scope::top_names`]).
    top: HashMap<&'a str, HashSet<&'a str>>,
    /// The files each module stem may name ([`Modules`]).
    modules: Modules<'a>,
    /// The files nobody reads ([`peripheral`]), decided once per file.
    peripheral: HashSet<&'a str>,
    /// Per file, the files of each module its glob imports open, followed once per file.
    globs: HashMap<&'a str, Vec<Vec<&'a str>>>,
}

impl<'a> Resolver<'a> {
    /// Over `files`, keyed by slash path.
    pub fn new(files: &'a BTreeMap<String, FileUses>) -> Resolver<'a> {
        Resolver::over(
            files
                .iter()
                .map(|(path, file)| (path.as_str(), file.scope())),
        )
    }

    /// Over the scopes of files, each by its slash path.
    pub fn over(files: impl IntoIterator<Item = (&'a str, Scope<'a>)>) -> Resolver<'a> {
        let files: HashMap<&'a str, Scope<'a>> = files.into_iter().collect();
        let top = (files.iter())
            .map(|(path, file)| (*path, file.top_names()))
            .collect();
        let modules = Modules::of(&files);
        let peripheral = (files.keys().copied())
            .filter(|path| peripheral(path).is_some())
            .collect();
        let mut resolver = Resolver {
            files,
            top,
            modules,
            peripheral,
            globs: HashMap::default(),
        };
        resolver.globs = (resolver.files.iter())
            .map(|(&path, &file)| (path, resolver.glob_files(path, file)))
            .filter(|(_, opened)| !opened.is_empty())
            .collect();
        resolver
    }

    /// The files of each module the glob imports of the file at `path` open.
    fn glob_files(&self, path: &'a str, file: Scope<'a>) -> Vec<Vec<&'a str>> {
        (file.imports.iter().filter(|i| i.local == "*"))
            .filter_map(|glob| match self.import_place(path, file, glob, 0)? {
                Place::Module(module) => Some(self.module_files(path, file.scoping, &module)),
                Place::Item(..) | Place::Own(_) => None,
            })
            .collect()
    }

    /// The definition `used`, a reference made in the file at `path`, names: the path of the
    /// file defining it and its name; `None` when it cannot be told or is not among the files.
    pub fn resolve(&self, path: &'a str, used: &'a Use) -> Option<(&'a str, &'a str)> {
        let qualifier = used.qualifier.as_ref()?;
        self.resolve_written(path, qualifier, &used.name, used.form)
    }

    /// [`Resolver::resolve`] of `name` written after the names of `qualifier` in `form`.
    pub fn resolve_written(
        &self,
        path: &'a str,
        qualifier: &'a [String],
        name: &'a str,
        form: Form,
    ) -> Option<(&'a str, &'a str)> {
        let file = *self.files.get(path)?;
        let mut segments: Vec<&'a str> = qualifier.iter().map(String::as_str).collect();
        segments.extend(name.split('.'));
        let (head, rest) = segments.split_first()?;
        let mut place = self.head(path, file, head, rest.is_empty(), form)?;
        for segment in rest {
            place = self.step(path, file.scoping, place, segment, 0)?;
        }
        match place {
            Place::Item(path, name) => Some((path, name)),
            Place::Module(_) | Place::Own(_) => None,
        }
    }

    /// The file an import of the file at `path` binds: the one defining the item it names, or
    /// the module's file when one file holds it; `None` for a package outside the files
    /// (`std`, `os`, `react`) or one that cannot be told.
    ///
    /// An item the module's file does not define itself (a re-export, a module-level
    /// variable) leads to the module's file: the longest part of the path that leads to one.
    ///
    /// Java names a package whole: `java.util.List` is no `util` inside a directory that
    /// happens to be named `java` (`src/test/java`), so in Java only the class the import
    /// names or its package (all of a glob's path) can be what it leads to.
    pub fn imported_file(&self, path: &'a str, import: &'a Import) -> Option<&'a str> {
        let file = *self.files.get(path)?;
        let places = self.import_places(path, file, import, 0);
        // The fewest parts of the path a place must stand for.
        let least = match file.scoping {
            Scoping::Java => {
                let named = import.path.iter().filter(|segment| *segment != "*").count();
                let glob = import.path.last().is_some_and(|last| last == "*");
                named.saturating_sub(usize::from(!glob))
            }
            _ => 1,
        };
        let whole_enough = (places.into_iter().enumerate())
            .filter_map(|(at, place)| (at + 1 >= least).then_some(place));
        whole_enough.rev().find_map(|place| match place {
            Place::Item(path, _) | Place::Own(path) => Some(path),
            Place::Module(module) => match self.module_files(path, file.scoping, &module)[..] {
                [only] => Some(only),
                _ => None,
            },
        })
    }

    /// The names of `members`, member references of the file at `path`, that a module it
    /// imports whole defines or re-exports (`import flask` then `flask.Flask`, `from . import
    /// sessions` then `sessions.Session`, a script's `import * as core from './core/index.js'`
    /// then `core.parse`): each with the file and the definition it leads to. Python and
    /// scripts only, where another module's names are reached as its members; the file's
    /// references keep no qualifier, so a name leads to the first such module defining it.
    ///
    /// Also the local names of the imports through which members were reached that the
    /// module's own file defines none of ([`Members::facades`]).
    pub fn module_members(&self, path: &'a str, members: &'a [String]) -> Members<'a> {
        let mut found = Members::default();
        let Some(&file) = self.files.get(path) else {
            return found;
        };
        if !matches!(file.scoping, Scoping::Python | Scoping::Script) {
            return found;
        }
        let modules: Vec<(&'a str, Vec<&'a str>)> = (file.imports.iter())
            .filter(|import| import.local != "*")
            .filter_map(|import| match self.import_place(path, file, import, 0)? {
                Place::Module(module) => Some((
                    import.local.as_str(),
                    self.module_files(path, file.scoping, &module),
                )),
                Place::Item(..) | Place::Own(_) => None,
            })
            .filter(|(_, files)| !files.is_empty())
            .collect();
        // Per module: whether a member led through it, and whether one led to its own file.
        let mut through = vec![(false, false); modules.len()];
        for name in members {
            let reached = modules.iter().enumerate().find_map(|(at, (_, files))| {
                let found = (self.defined_at_top(files, name))
                    .or_else(|| self.reexported(file.scoping, files, name, 0))?;
                match found {
                    Place::Item(to, defined) => Some((at, to, defined)),
                    Place::Module(_) | Place::Own(_) => None,
                }
            });
            if let Some((at, to, defined)) = reached {
                through[at].0 = true;
                through[at].1 |= modules[at].1.contains(&to);
                found.edges.push((name.as_str(), to, defined));
            }
        }
        found.facades = (modules.iter().zip(through))
            .filter(|(_, (led, own))| *led && !own)
            .map(|((local, _), _)| *local)
            .collect();
        found
    }

    /// Where the first name of a reference leads, in the file's scope: the file itself, an
    /// import, a definition of its own, its package's, or a glob's.
    fn head(
        &self,
        from: &'a str,
        file: Scope<'a>,
        head: &'a str,
        alone: bool,
        form: Form,
    ) -> Option<Place<'a>> {
        let scoping = file.scoping;
        if !alone {
            match (scoping, head) {
                (Scoping::Rust, "crate" | "self" | "super") => {
                    let stem = rust_keyword_stem(from, head)?;
                    return Some(Place::Module(Module::Stem {
                        stem,
                        anywhere: false,
                    }));
                }
                (Scoping::Rust, "Self")
                | (Scoping::Python, "self" | "cls")
                | (Scoping::Script | Scoping::Java, "this") => return Some(Place::Own(from)),
                _ => {}
            }
        }
        if let Some(import) = file.imports.iter().rev().find(|i| i.local == head) {
            return self.import_place(from, file, import, 0);
        }
        let fits = |d: &Definition| {
            d.name == head
                && (form != Form::Macro || d.kind == "macro")
                && (form == Form::Macro || d.kind != "macro" || scoping == Scoping::C)
                && (!alone || d.kind != "method" || matches!(scoping, Scoping::Java | Scoping::C))
        };
        if file.definitions.iter().any(fits) {
            return Some(Place::Item(from, head));
        }
        if matches!(scoping, Scoping::Go | Scoping::Java) {
            let package = Module::Stem {
                stem: parent(from).to_owned(),
                anywhere: false,
            };
            if let Some(found) = self.find_in(from, scoping, &package, head) {
                return Some(found);
            }
        }
        if scoping == Scoping::Java
            && let Some(found) = self.package_elsewhere(from, head)
        {
            return Some(found);
        }
        let opened = self.globs.get(from).map(Vec::as_slice).unwrap_or_default();
        opened
            .iter()
            .find_map(|files| self.defined_at_top(files, head))
    }

    /// Where an import's whole path leads (a glob's: the module it opens).
    fn import_place(
        &self,
        from: &'a str,
        file: Scope<'a>,
        import: &'a Import,
        depth: usize,
    ) -> Option<Place<'a>> {
        let mut places = self.import_places(from, file, import, depth);
        let named = (import.path.iter())
            .filter(|segment| *segment != "*")
            .count();
        if places.len() < named {
            return None;
        }
        places.pop()
    }

    /// Where each leading part of an import's path leads, shortest first, as far as the path
    /// can be followed (a glob's `*` is no part): one walk along the path.
    fn import_places(
        &self,
        from: &'a str,
        file: Scope<'a>,
        import: &'a Import,
        depth: usize,
    ) -> Vec<Place<'a>> {
        let scoping = file.scoping;
        let path: Vec<&'a str> = (import.path.iter())
            .map(String::as_str)
            .filter(|segment| *segment != "*")
            .collect();
        let Some((first, rest)) = path.split_first() else {
            return Vec::new();
        };
        let Some(mut place) = self.import_root(from, file, import, first, depth) else {
            return Vec::new();
        };
        let mut places = Vec::with_capacity(path.len());
        for segment in rest {
            places.push(place.clone());
            // A default import stands for the definition of the name it binds.
            let segment = match (scoping, *segment) {
                (Scoping::Script, "default") => import.local.as_str(),
                _ => segment,
            };
            match self.step(from, scoping, place, segment, depth) {
                Some(next) => place = next,
                None => return places,
            }
        }
        places.push(place);
        places
    }

    /// Where the first name of an import's path leads.
    fn import_root(
        &self,
        from: &'a str,
        file: Scope<'a>,
        import: &'a Import,
        first: &'a str,
        depth: usize,
    ) -> Option<Place<'a>> {
        Some(match file.scoping {
            Scoping::Rust => match rust_keyword_stem(from, first) {
                Some(stem) => Place::Module(Module::Stem {
                    stem,
                    anywhere: false,
                }),
                // A module the file declares or imports (`mod ledger;` then `use ledger::x`),
                // else another crate of the repository (`use helix_view::Editor`).
                None if depth < IMPORT_DEPTH => {
                    let other = (file.imports.iter().rev())
                        .find(|i| i.local == first && !std::ptr::eq(*i, import));
                    match other {
                        Some(other) => self.import_place(from, file, other, depth + 1)?,
                        None => Place::Module(Module::Stem {
                            stem: self.modules.rust_crate(first)?.to_owned(),
                            anywhere: false,
                        }),
                    }
                }
                None => return None,
            },
            Scoping::Python if first.starts_with('.') => {
                let mut stem = parent(from);
                for _ in 1..first.len() {
                    stem = parent(stem);
                }
                Place::Module(Module::Stem {
                    stem: stem.to_owned(),
                    anywhere: false,
                })
            }
            Scoping::Python | Scoping::Java => Place::Module(Module::Stem {
                stem: first.to_owned(),
                anywhere: true,
            }),
            Scoping::Script => Place::Module(Module::Files(self.script_files(from, first))),
            Scoping::Go => Place::Module(Module::Package(first)),
            Scoping::C => return None,
        })
    }

    /// One name further along a path: a definition of the module (one the file defines at
    /// its top) or of the item's file, else what the module's file imports under that name
    /// ([`Resolver::reexported`]), else a module inside the module.
    fn step(
        &self,
        from: &'a str,
        scoping: Scoping,
        place: Place<'a>,
        segment: &'a str,
        depth: usize,
    ) -> Option<Place<'a>> {
        match place {
            Place::Item(path, _) | Place::Own(path) => {
                let file = self.files.get(path)?;
                file.defines(segment).then_some(Place::Item(path, segment))
            }
            Place::Module(module) => {
                let files = self.module_files(from, scoping, &module);
                if let Some(found) = self.defined_at_top(&files, segment) {
                    return Some(found);
                }
                if let Some(found) = self.reexported(scoping, &files, segment, depth) {
                    return Some(found);
                }
                match module {
                    Module::Stem { stem, anywhere } => Some(Place::Module(Module::Stem {
                        stem: join(&stem, segment),
                        anywhere,
                    })),
                    Module::Files(_) | Module::Package(_) => None,
                }
            }
        }
    }

    /// `name` as a definition at the top of one of the module's files.
    fn find_in(
        &self,
        from: &'a str,
        scoping: Scoping,
        module: &Module<'a>,
        name: &'a str,
    ) -> Option<Place<'a>> {
        self.defined_at_top(&self.module_files(from, scoping, module), name)
    }

    /// `name` as a Java file's package defines it under another source root: a package is
    /// the directories below the last `java/` (`src/main/java/com/x` and `src/test/java/com/x`
    /// are one package, and a test names its subject unimported), searched nearest first.
    fn package_elsewhere(&self, from: &'a str, name: &'a str) -> Option<Place<'a>> {
        let directory = parent(from);
        let package = match directory.rsplit_once("/java/") {
            Some((_, package)) => package,
            None => directory.strip_prefix("java/")?,
        };
        let mut found = self.modules.stem(Scoping::Java, package, true).to_vec();
        found.retain(|path| parent(path) != directory && !self.peripheral.contains(path));
        self.defined_at_top(&nearest_first(from, found), name)
    }

    /// `name` as the first of a module's `files` binds it by an import of its own, followed to
    /// what that import names: a Python package's `__init__.py` re-exporting `from .app import
    /// Flask` or `from .app import *`, a Rust module's `pub use self::shell::Shell`, a script's
    /// `export { Flask } from './app'` or `export * from './app'`. Not in Go, Java and C, where
    /// what a file imports is not visible through it; at most [`IMPORT_DEPTH`] modules deep.
    fn reexported(
        &self,
        scoping: Scoping,
        files: &[&'a str],
        name: &'a str,
        depth: usize,
    ) -> Option<Place<'a>> {
        let visible = matches!(scoping, Scoping::Python | Scoping::Rust | Scoping::Script);
        if !visible || depth >= IMPORT_DEPTH {
            return None;
        }
        files.iter().find_map(|&path| {
            let file = *self.files.get(path)?;
            match file.imports.iter().rev().find(|i| i.local == name) {
                Some(import) => self.import_place(path, file, import, depth + 1),
                None => (self.globs.get(path)?.iter())
                    .find_map(|opened| self.defined_at_top(opened, name)),
            }
        })
    }

    /// `name` as a definition at the top of the first of `files` defining it there.
    fn defined_at_top(&self, files: &[&'a str], name: &'a str) -> Option<Place<'a>> {
        let path = files
            .iter()
            .find(|path| (self.top.get(**path)).is_some_and(|names| names.contains(name)))?;
        Some(Place::Item(path, name))
    }

    /// The parsed files that may hold a module, nearest the file at `from` first. Of several
    /// places a module name may lie below, only the nearest holds it, except in Java, where a
    /// package is every directory of its name: a test's `import com.shop.Ledger` means
    /// `src/main`'s class, though the package's nearest directory is the test's own (gson's
    /// tests had all led to `TypeTokenTest.java` for `TypeToken`). A name that may lie below
    /// any directory names no peripheral file ([`peripheral`]: a vendored copy, a stub tree)
    /// from the project's own code: `from typing import List` in mypy means the standard
    /// library, not typeshed's `typing.pyi`, which every Python file would otherwise make the
    /// most referenced.
    fn module_files(&self, from: &'a str, scoping: Scoping, module: &Module<'a>) -> Vec<&'a str> {
        match module {
            Module::Files(files) => files.clone(),
            Module::Package(import) => self.modules.package(import),
            Module::Stem { stem, anywhere } => {
                let mut found = self.modules.stem(scoping, stem, *anywhere).to_vec();
                if *anywhere && !self.peripheral.contains(from) {
                    found.retain(|path| !self.peripheral.contains(path));
                }
                match scoping {
                    Scoping::Java => nearest_first(from, found),
                    _ => nearest(from, found),
                }
            }
        }
    }

    /// The parsed files a relative module specifier can name from the file at `from`: the path
    /// itself, with a script extension, as a directory's `index`, and a `.js` name as the
    /// TypeScript file it is compiled from. A package (not starting with `.`) is none.
    fn script_files(&self, from: &str, specifier: &str) -> Vec<&'a str> {
        if !specifier.starts_with('.') {
            return Vec::new();
        }
        let Some(base) = normalise(&join(parent(from), specifier)) else {
            return Vec::new();
        };
        const EXTENSIONS: [&str; 8] = ["ts", "tsx", "js", "jsx", "mjs", "cjs", "mts", "cts"];
        let mut candidates = vec![base.clone()];
        for extension in EXTENSIONS {
            candidates.push(format!("{base}.{extension}"));
            candidates.push(format!("{base}/index.{extension}"));
        }
        for (compiled, source) in [("js", "ts"), ("js", "tsx"), ("mjs", "mts"), ("cjs", "cts")] {
            if let Some(stem) = base.strip_suffix(&format!(".{compiled}")) {
                candidates.push(format!("{stem}.{source}"));
            }
        }
        candidates
            .iter()
            .filter_map(|candidate| self.files.get_key_value(candidate.as_str()))
            .map(|(key, _)| *key)
            .collect()
    }
}

/// The Rust module stem `crate`, `self` or `super` names from the file at `from`: the crate's
/// source directory (through the last `src`, else the file's directory), the file's own module,
/// its parent; `None` for another name.
fn rust_keyword_stem(from: &str, keyword: &str) -> Option<String> {
    let own = rust_own_stem(from);
    match keyword {
        "crate" => {
            let parts: Vec<&str> = from.split('/').collect();
            let dirs = &parts[..parts.len() - 1];
            Some(match dirs.iter().rposition(|part| *part == "src") {
                Some(at) => dirs[..=at].join("/"),
                None => parent(from).to_owned(),
            })
        }
        "self" => Some(own),
        "super" => Some(parent(&own).to_owned()),
        _ => None,
    }
}

/// The module stem of a Rust file: its directory for a crate root or a `mod.rs` (and for a file
/// outside any `src`, such as `tests/it.rs`, which is a crate root), else its path without
/// `.rs`.
fn rust_own_stem(path: &str) -> String {
    let name = path.rsplit('/').next().unwrap_or(path);
    let inside_src = parent(path).split('/').any(|part| part == "src");
    if matches!(name, "lib.rs" | "main.rs" | "mod.rs") || !inside_src {
        parent(path).to_owned()
    } else {
        path.strip_suffix(".rs").unwrap_or(path).to_owned()
    }
}

fn join(dir: &str, name: &str) -> String {
    if dir.is_empty() {
        name.to_owned()
    } else {
        format!("{dir}/{name}")
    }
}

/// A slash path with its `.` and `..` parts applied; `None` when it climbs above the root.
fn normalise(path: &str) -> Option<String> {
    let mut parts: Vec<&str> = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop()?;
            }
            part => parts.push(part),
        }
    }
    Some(parts.join("/"))
}

/// `paths` ordered by how many leading directory parts they share with `from`'s, most first
/// (in their order otherwise).
fn nearest_first<'a>(from: &str, mut paths: Vec<&'a str>) -> Vec<&'a str> {
    paths.sort_by_cached_key(|path| std::cmp::Reverse(shared_parts(from, path)));
    paths
}

/// Of `paths`, the ones whose directories share the most leading parts with `from`'s.
fn nearest<'a>(from: &str, mut paths: Vec<&'a str>) -> Vec<&'a str> {
    let most = paths.iter().map(|path| shared_parts(from, path)).max();
    paths.retain(|path| Some(shared_parts(from, path)) == most);
    paths
}

/// How many leading directory parts the directories of `from` and `path` share.
fn shared_parts(from: &str, path: &str) -> usize {
    (parent(path).split('/'))
        .zip(parent(from).split('/'))
        .take_while(|(a, b)| a == b)
        .count()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::fixtures::definition;

    fn functions(names: &[&str]) -> Vec<Definition> {
        (names.iter().zip(1..))
            .map(|(name, line)| definition(name, "function", line * 10, line * 10 + 5))
            .collect()
    }

    fn import(local: &str, path: &[&str]) -> Import {
        Import {
            local: local.into(),
            path: path.iter().map(|segment| (*segment).to_owned()).collect(),
            reexport: false,
        }
    }

    fn file(scoping: Scoping, defined: &[&str], imports: Vec<Import>) -> FileUses {
        FileUses {
            text: String::new(),
            scoping,
            definitions: functions(defined),
            uses: Vec::new(),
            imports,
        }
    }

    /// A reference written `qualified` (`a::b::name`, `a.b.name`), plain or as a macro.
    fn written(qualified: &str, form: Form) -> Use {
        let parts: Vec<String> = (qualified.split("::").flat_map(|part| part.split('.')))
            .map(str::to_owned)
            .collect();
        let (name, qualifier) = parts.split_last().expect("a name");
        Use {
            name: name.clone(),
            qualifier: Some(qualifier.to_vec()),
            line: 1,
            form,
        }
    }

    fn resolve<'a>(
        files: &'a BTreeMap<String, FileUses>,
        path: &'a str,
        used: &'a Use,
    ) -> Option<(&'a str, &'a str)> {
        Resolver::new(files).resolve(path, used)
    }

    /// The file each import of the file at `path` binds, in import order.
    fn imported_files<'a>(
        files: &'a BTreeMap<String, FileUses>,
        path: &'a str,
    ) -> Vec<Option<&'a str>> {
        let resolver = Resolver::new(files);
        (files[path].imports.iter())
            .map(|import| resolver.imported_file(path, import))
            .collect()
    }

    fn files(list: Vec<(&str, FileUses)>) -> BTreeMap<String, FileUses> {
        list.into_iter()
            .map(|(path, file)| (path.to_owned(), file))
            .collect()
    }

    #[test]
    fn rust_follows_use_paths_declared_modules_and_written_paths() {
        let files = files(vec![
            (
                "src/audit.rs",
                file(
                    Scoping::Rust,
                    &["audit", "helper"],
                    vec![
                        import("balance", &["crate", "ledger", "balance"]),
                        import("entry", &["super", "ledger", "post_entry"]),
                        import("store", &["crate", "store"]),
                    ],
                ),
            ),
            (
                "src/ledger.rs",
                file(Scoping::Rust, &["balance", "post_entry", "helper"], vec![]),
            ),
            ("src/store/mod.rs", file(Scoping::Rust, &["open"], vec![])),
            (
                "src/main.rs",
                file(
                    Scoping::Rust,
                    &["main"],
                    vec![import("ledger", &["self", "ledger"])],
                ),
            ),
            (
                "src/other.rs",
                file(Scoping::Rust, &["balance", "open"], vec![]),
            ),
        ]);
        let at = |path: &'static str, written_as: &str| {
            let used = written(written_as, Form::Plain);
            resolve(&files, path, &used).map(|(p, n)| (p.to_owned(), n.to_owned()))
        };
        let to = |path: &str, name: &str| Some((path.to_owned(), name.to_owned()));
        assert_eq!(
            at("src/audit.rs", "balance"),
            to("src/ledger.rs", "balance")
        );
        assert_eq!(
            at("src/audit.rs", "entry"),
            to("src/ledger.rs", "post_entry")
        );
        assert_eq!(
            at("src/audit.rs", "store::open"),
            to("src/store/mod.rs", "open")
        );
        assert_eq!(
            at("src/audit.rs", "crate::ledger::balance"),
            to("src/ledger.rs", "balance")
        );
        // Its own `helper`, not the ledger's; nothing binds `open` bare.
        assert_eq!(at("src/audit.rs", "helper"), to("src/audit.rs", "helper"));
        assert_eq!(at("src/audit.rs", "open"), None);
        assert_eq!(
            at("src/main.rs", "ledger::balance"),
            to("src/ledger.rs", "balance")
        );
        assert_eq!(at("src/main.rs", "balance"), None);
        // A path the file cannot read, or an external crate.
        let unreadable = Use {
            qualifier: None,
            ..written("balance", Form::Plain)
        };
        assert_eq!(resolve(&files, "src/audit.rs", &unreadable), None);
        assert_eq!(at("src/audit.rs", "serde::balance"), None);
    }

    #[test]
    fn rust_leans_on_a_declared_module_and_opens_globs() {
        let files = files(vec![
            (
                "src/lib.rs",
                file(
                    Scoping::Rust,
                    &[],
                    vec![
                        import("ledger", &["self", "ledger"]),
                        import("balance", &["ledger", "balance"]),
                        import("*", &["crate", "store", "*"]),
                    ],
                ),
            ),
            ("src/ledger.rs", file(Scoping::Rust, &["balance"], vec![])),
            ("src/store.rs", file(Scoping::Rust, &["open"], vec![])),
        ]);
        let balance = written("balance", Form::Plain);
        let open = written("open", Form::Plain);
        assert_eq!(
            resolve(&files, "src/lib.rs", &balance),
            Some(("src/ledger.rs", "balance"))
        );
        assert_eq!(
            resolve(&files, "src/lib.rs", &open),
            Some(("src/store.rs", "open"))
        );
    }

    #[test]
    fn bare_names_mean_no_method_and_macros_only_macros() {
        let mut own = file(Scoping::Rust, &[], vec![]);
        own.definitions = vec![
            definition("save", "method", 2, 4),
            definition("log", "macro", 6, 8),
            definition("Store", "class", 1, 1),
        ];
        let files = files(vec![("src/store.rs", own)]);
        let at = |written_as: &str, form| {
            let used = written(written_as, form);
            resolve(&files, "src/store.rs", &used).map(|(_, name)| name.to_owned())
        };
        assert_eq!(at("save", Form::Plain), None);
        assert_eq!(at("self.save", Form::Member), Some("save".to_owned()));
        assert_eq!(at("Self::save", Form::Plain), Some("save".to_owned()));
        assert_eq!(at("Store::save", Form::Plain), Some("save".to_owned()));
        assert_eq!(at("log", Form::Macro), Some("log".to_owned()));
        assert_eq!(at("log", Form::Plain), None);
        assert_eq!(at("Store", Form::Macro), None);
    }

    #[test]
    fn python_imports_absolute_relative_and_modules() {
        let files = files(vec![
            (
                "src/app/audit.py",
                file(
                    Scoping::Python,
                    &["audit"],
                    vec![
                        import("balance", &["app", "ledger", "balance"]),
                        import("post", &[".", "ledger", "post_entry"]),
                        import("ledger", &[".", "ledger"]),
                        import("app", &["app"]),
                        import("L", &["app", "ledger"]),
                    ],
                ),
            ),
            (
                "src/app/ledger.py",
                file(Scoping::Python, &["balance", "post_entry"], vec![]),
            ),
            (
                "src/app/other.py",
                file(Scoping::Python, &["balance"], vec![]),
            ),
        ]);
        let at = |written_as: &str| {
            let used = written(written_as, Form::Plain);
            resolve(&files, "src/app/audit.py", &used).map(|(p, n)| (p.to_owned(), n.to_owned()))
        };
        for written_as in [
            "balance",
            "ledger.balance",
            "app.ledger.balance",
            "L.balance",
        ] {
            assert_eq!(
                at(written_as),
                Some(("src/app/ledger.py".to_owned(), "balance".to_owned())),
                "{written_as}"
            );
        }
        assert_eq!(
            at("post"),
            Some(("src/app/ledger.py".to_owned(), "post_entry".to_owned()))
        );
        assert_eq!(at("other.balance"), None);
    }

    /// A module of a package is named from the package's root: `src/flask/typing.py` is
    /// `flask.typing`, and `import typing` means the standard library; a package below a
    /// source directory (`src/flask`) is found by its own name.
    #[test]
    fn a_python_module_inside_a_package_has_no_shorter_name() {
        let files = files(vec![
            (
                "src/flask/app.py",
                file(
                    Scoping::Python,
                    &["run"],
                    vec![
                        import("t", &["typing"]),
                        import("Flask", &["flask", "Flask"]),
                    ],
                ),
            ),
            (
                "src/flask/__init__.py",
                file(Scoping::Python, &["Flask"], vec![]),
            ),
            (
                "src/flask/typing.py",
                file(Scoping::Python, &["Any"], vec![]),
            ),
        ]);
        let at = |written_as: &str| {
            let used = written(written_as, Form::Plain);
            resolve(&files, "src/flask/app.py", &used).map(|(path, _)| path.to_owned())
        };
        assert_eq!(at("t.Any"), None);
        assert_eq!(at("Flask").as_deref(), Some("src/flask/__init__.py"));
    }

    /// A package's `__init__.py` re-exports what its modules define: `from flask import
    /// Flask` and `flask.Flask` lead to `app.py` (a named import or a glob), an import of a
    /// package outside the files leads to the package's own file, and a module's import of
    /// itself ends, not loops.
    #[test]
    fn python_follows_a_package_reexport_to_its_module() {
        let files = files(vec![
            (
                "tests/test_basic.py",
                file(
                    Scoping::Python,
                    &["test_run"],
                    vec![
                        import("Flask", &["flask", "Flask"]),
                        import("g", &["flask", "g"]),
                        import("redirect", &["flask", "redirect"]),
                        import("flask", &["flask"]),
                        import("loop", &["flask", "loop"]),
                    ],
                ),
            ),
            (
                "src/flask/__init__.py",
                file(
                    Scoping::Python,
                    &[],
                    vec![
                        import("Flask", &[".", "app", "Flask"]),
                        import("*", &[".", "globals", "*"]),
                        import("redirect", &["werkzeug", "utils", "redirect"]),
                        import("loop", &["flask", "loop"]),
                    ],
                ),
            ),
            (
                "src/flask/app.py",
                file(Scoping::Python, &["Flask"], vec![]),
            ),
            (
                "src/flask/globals.py",
                file(Scoping::Python, &["g"], vec![]),
            ),
        ]);
        assert_eq!(
            imported_files(&files, "tests/test_basic.py"),
            [
                Some("src/flask/app.py"),
                Some("src/flask/globals.py"),
                Some("src/flask/__init__.py"),
                Some("src/flask/__init__.py"),
                Some("src/flask/__init__.py"),
            ]
        );
        let at = |written_as: &str| {
            let used = written(written_as, Form::Plain);
            resolve(&files, "tests/test_basic.py", &used).map(|(p, n)| (p.to_owned(), n.to_owned()))
        };
        let to = |path: &str, name: &str| Some((path.to_owned(), name.to_owned()));
        assert_eq!(at("Flask"), to("src/flask/app.py", "Flask"));
        assert_eq!(at("flask.Flask"), to("src/flask/app.py", "Flask"));
        assert_eq!(at("g"), to("src/flask/globals.py", "g"));
        assert_eq!(at("redirect"), None);
        assert_eq!(at("loop"), None);
    }

    /// `import flask` then `flask.Flask(...)`: a member reference leads to what the imported
    /// module defines or re-exports under that name; a name no imported module binds (a
    /// method of some value) and a name imported as an item (not a module) lead nowhere.
    #[test]
    fn python_members_of_an_imported_module() {
        let rust = files(vec![
            (
                "src/main.rs",
                file(Scoping::Rust, &[], vec![import("app", &["crate", "app"])]),
            ),
            ("src/app.rs", file(Scoping::Rust, &["Flask"], vec![])),
        ]);
        let files = files(vec![
            (
                "tests/test_basic.py",
                file(
                    Scoping::Python,
                    &[],
                    vec![
                        import("flask", &["flask"]),
                        import("sessions", &["flask", "sessions"]),
                        import("Flask", &["flask", "Flask"]),
                    ],
                ),
            ),
            (
                "src/flask/__init__.py",
                file(
                    Scoping::Python,
                    &["escape"],
                    vec![import("Flask", &[".", "app", "Flask"])],
                ),
            ),
            (
                "src/flask/app.py",
                file(Scoping::Python, &["Flask", "route"], vec![]),
            ),
            (
                "src/flask/sessions.py",
                file(Scoping::Python, &["Session"], vec![]),
            ),
            ("lib/other.py", file(Scoping::Python, &["Session"], vec![])),
        ]);
        let members: Vec<String> = ["Flask", "escape", "Session", "append", "route"]
            .map(str::to_owned)
            .to_vec();
        let resolver = Resolver::new(&files);
        assert_eq!(
            resolver.module_members("tests/test_basic.py", &members),
            Members {
                edges: vec![
                    ("Flask", "src/flask/app.py", "Flask"),
                    ("escape", "src/flask/__init__.py", "escape"),
                    ("Session", "src/flask/sessions.py", "Session"),
                ],
                facades: HashSet::new(),
            }
        );
        assert_eq!(
            Resolver::new(&rust).module_members("src/main.rs", &members),
            Members::default()
        );
    }

    /// A Rust module's `pub use` re-exports: `use crate::core::Shell` leads to the file that
    /// defines `Shell`, not to `core/mod.rs`.
    #[test]
    fn rust_follows_a_pub_use_to_its_definition() {
        let files = files(vec![
            (
                "src/main.rs",
                file(
                    Scoping::Rust,
                    &["main"],
                    vec![import("Shell", &["crate", "core", "Shell"])],
                ),
            ),
            (
                "src/core/mod.rs",
                file(
                    Scoping::Rust,
                    &[],
                    vec![import("Shell", &["self", "shell", "Shell"])],
                ),
            ),
            ("src/core/shell.rs", file(Scoping::Rust, &["Shell"], vec![])),
        ]);
        let shell = &files["src/main.rs"].imports[0];
        assert_eq!(
            Resolver::new(&files).imported_file("src/main.rs", shell),
            Some("src/core/shell.rs")
        );
        let used = written("crate::core::Shell", Form::Plain);
        assert_eq!(
            resolve(&files, "src/main.rs", &used),
            Some(("src/core/shell.rs", "Shell"))
        );
    }

    /// mypy's own `from typing import List` means the standard library, not the typeshed stub
    /// below it; a stub importing another stub still reaches it.
    #[test]
    fn a_standard_module_name_names_no_vendored_stub() {
        let list = || vec![import("List", &["typing", "List"])];
        let files = files(vec![
            ("mypy/checker.py", file(Scoping::Python, &["check"], list())),
            (
                "mypy/typeshed/stdlib/typing.pyi",
                file(Scoping::Python, &["List"], vec![]),
            ),
            (
                "mypy/typeshed/stdlib/os/__init__.pyi",
                file(Scoping::Python, &["getcwd"], list()),
            ),
        ]);
        let at = |from: &str| {
            let used = written("List", Form::Plain);
            resolve(&files, from, &used).map(|(path, _)| path.to_owned())
        };
        assert_eq!(at("mypy/checker.py"), None);
        assert_eq!(
            at("mypy/typeshed/stdlib/os/__init__.pyi").as_deref(),
            Some("mypy/typeshed/stdlib/typing.pyi")
        );
    }

    #[test]
    fn scripts_import_relative_files_only() {
        let files = files(vec![
            (
                "web/src/audit.ts",
                file(
                    Scoping::Script,
                    &["audit"],
                    vec![
                        import("balance", &["./ledger", "balance"]),
                        import("ledger", &["./ledger"]),
                        import("walk", &["../lib/walk.js", "default"]),
                        import("lodash", &["lodash"]),
                    ],
                ),
            ),
            (
                "web/src/ledger.ts",
                file(Scoping::Script, &["balance"], vec![]),
            ),
            ("web/lib/walk.ts", file(Scoping::Script, &["walk"], vec![])),
            (
                "web/src/other.ts",
                file(Scoping::Script, &["balance"], vec![]),
            ),
        ]);
        let at = |written_as: &str| {
            let used = written(written_as, Form::Plain);
            resolve(&files, "web/src/audit.ts", &used).map(|(p, _)| p.to_owned())
        };
        assert_eq!(at("balance").as_deref(), Some("web/src/ledger.ts"));
        assert_eq!(at("ledger.balance").as_deref(), Some("web/src/ledger.ts"));
        assert_eq!(at("walk").as_deref(), Some("web/lib/walk.ts"));
        assert_eq!(at("lodash.balance"), None);
        assert_eq!(at("this.audit").as_deref(), Some("web/src/audit.ts"));
    }

    #[test]
    fn go_imports_packages_and_shares_a_directory() {
        let files = files(vec![
            (
                "cmd/audit/audit.go",
                file(
                    Scoping::Go,
                    &["Audit"],
                    vec![import("ledger", &["example.com/shop/internal/ledger"])],
                ),
            ),
            ("cmd/audit/util.go", file(Scoping::Go, &["helper"], vec![])),
            (
                "internal/ledger/ledger.go",
                file(Scoping::Go, &["Balance"], vec![]),
            ),
            (
                "other/ledger/ledger.go",
                file(Scoping::Go, &["Balance"], vec![]),
            ),
        ]);
        let at = |written_as: &str| {
            let used = written(written_as, Form::Member);
            resolve(&files, "cmd/audit/audit.go", &used).map(|(p, _)| p.to_owned())
        };
        assert_eq!(
            at("ledger.Balance").as_deref(),
            Some("internal/ledger/ledger.go")
        );
        assert_eq!(at("helper").as_deref(), Some("cmd/audit/util.go"));
        assert_eq!(at("Balance"), None);
    }

    #[test]
    fn java_imports_classes_static_members_and_packages() {
        let class = |name: &str, members: &[&str]| {
            let mut file = file(Scoping::Java, &[], vec![]);
            file.definitions.push(definition(name, "class", 1, 50));
            for (member, line) in members.iter().zip(2..) {
                file.definitions
                    .push(definition(member, "method", line, line));
            }
            file
        };
        let files = files(vec![
            (
                "src/main/java/com/shop/audit/Audit.java",
                FileUses {
                    imports: vec![
                        import("Ledger", &["com", "shop", "Ledger"]),
                        import("post", &["com", "shop", "Ledger", "post"]),
                        import("*", &["com", "shop", "util", "*"]),
                    ],
                    ..class("Audit", &["audit"])
                },
            ),
            (
                "src/main/java/com/shop/Ledger.java",
                class("Ledger", &["balance", "post"]),
            ),
            (
                "src/main/java/com/shop/util/Money.java",
                class("Money", &[]),
            ),
            (
                "src/main/java/com/shop/audit/Report.java",
                class("Report", &[]),
            ),
        ]);
        let at = |written_as: &str| {
            let used = written(written_as, Form::Plain);
            resolve(&files, "src/main/java/com/shop/audit/Audit.java", &used)
                .map(|(p, n)| format!("{}#{n}", p.rsplit('/').next().unwrap_or(p)))
        };
        assert_eq!(at("Ledger.balance").as_deref(), Some("Ledger.java#balance"));
        assert_eq!(at("post").as_deref(), Some("Ledger.java#post"));
        assert_eq!(at("Money").as_deref(), Some("Money.java#Money"));
        assert_eq!(at("Report").as_deref(), Some("Report.java#Report"));
        assert_eq!(at("audit").as_deref(), Some("Audit.java#audit"));
        assert_eq!(at("cart.balance"), None);
    }

    /// A test in `src/test/java/com/shop` names `Ledger` of `src/main/java/com/shop` without
    /// an import: one package under two source roots. A class of another package is not.
    #[test]
    fn a_java_package_spans_its_source_roots() {
        let class = |name: &str| {
            let mut file = file(Scoping::Java, &[], vec![]);
            file.definitions.push(definition(name, "class", 1, 50));
            file
        };
        let files = files(vec![
            (
                "src/test/java/com/shop/LedgerTest.java",
                class("LedgerTest"),
            ),
            ("src/main/java/com/shop/Ledger.java", class("Ledger")),
            ("src/main/java/com/shop/util/Money.java", class("Money")),
        ]);
        let at = |written_as: &str| {
            let used = written(written_as, Form::Plain);
            resolve(&files, "src/test/java/com/shop/LedgerTest.java", &used)
                .map(|(p, _)| p.to_owned())
        };
        assert_eq!(
            at("Ledger").as_deref(),
            Some("src/main/java/com/shop/Ledger.java")
        );
        assert_eq!(at("Money"), None);
    }

    /// A class in the default package lives in `src/test/java`: `import java.util.List` is not
    /// a `util` inside that directory, and leads nowhere, as imports of a package outside the
    /// files do.
    #[test]
    fn a_java_package_is_named_whole() {
        let mut test = file(
            Scoping::Java,
            &["NoPackageTest"],
            vec![import("Ledger", &["com", "shop", "Ledger"])],
        );
        test.definitions[0].kind = "class".to_owned();
        let files = files(vec![
            ("src/test/java/NoPackageTest.java", test),
            (
                "src/main/java/com/shop/audit/Audit.java",
                file(
                    Scoping::Java,
                    &["Audit"],
                    vec![
                        import("List", &["java", "util", "List"]),
                        import("*", &["java", "util", "*"]),
                        import("Ledger", &["com", "shop", "Ledger"]),
                    ],
                ),
            ),
            (
                "src/main/java/com/shop/Ledger.java",
                file(Scoping::Java, &["Ledger"], vec![]),
            ),
        ]);
        assert_eq!(
            imported_files(&files, "src/main/java/com/shop/audit/Audit.java"),
            [None, None, Some("src/main/java/com/shop/Ledger.java")]
        );
    }

    /// A test imports `com.shop.Ledger`; its package's test directory holds only
    /// `LedgerTest`: the import still means `src/main`'s `Ledger`, the class it names, not
    /// the only file of the package's nearest directory.
    #[test]
    fn a_java_import_names_its_class_under_any_source_root() {
        let class = |name: &str, imports| {
            let mut file = file(Scoping::Java, &[], imports);
            file.definitions.push(definition(name, "class", 1, 50));
            file
        };
        let importer = "src/test/java/com/shop/audit/AuditTest.java";
        let files = files(vec![
            (
                importer,
                class(
                    "AuditTest",
                    vec![import("Ledger", &["com", "shop", "Ledger"])],
                ),
            ),
            (
                "src/test/java/com/shop/LedgerTest.java",
                class("LedgerTest", vec![]),
            ),
            (
                "src/main/java/com/shop/Ledger.java",
                class("Ledger", vec![]),
            ),
        ]);
        assert_eq!(
            imported_files(&files, importer),
            [Some("src/main/java/com/shop/Ledger.java")]
        );
    }

    #[test]
    fn a_class_field_is_no_module_name() {
        let mut lib = file(
            Scoping::Rust,
            &[],
            vec![import("x", &["crate", "ledger", "x"])],
        );
        lib.definitions = vec![
            definition("State", "class", 1, 3),
            definition("ledger", "field", 2, 2),
        ];
        let files = files(vec![
            ("src/lib.rs", lib),
            ("src/ledger.rs", file(Scoping::Rust, &["x"], vec![])),
        ]);
        let used = written("x", Form::Plain);
        assert_eq!(
            resolve(&files, "src/lib.rs", &used),
            Some(("src/ledger.rs", "x"))
        );
    }

    /// `use helix_view::Editor` leads to the workspace crate `helix-view`; `use std::fmt`
    /// never to a crate directory named `std` (a test fixture standing in for the library).
    #[test]
    fn a_workspace_crate_is_named_but_never_the_standard_library() {
        let user = file(
            Scoping::Rust,
            &[],
            vec![
                import("Editor", &["helix_view", "Editor"]),
                import("custom_api", &["std", "custom_api"]),
            ],
        );
        let files = files(vec![
            ("helix-term/src/main.rs", user),
            (
                "helix-view/src/lib.rs",
                file(Scoping::Rust, &["Editor"], vec![]),
            ),
            (
                "tests/mock-std/library/std/src/lib.rs",
                file(Scoping::Rust, &["custom_api"], vec![]),
            ),
        ]);
        assert_eq!(
            imported_files(&files, "helix-term/src/main.rs"),
            [Some("helix-view/src/lib.rs"), None]
        );
    }
}
