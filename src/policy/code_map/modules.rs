//! Which files each module name may mean, read once from the parsed files' paths and
//! languages ([`Modules`]); [`super::uses::Resolver`] follows imports and paths through them.
//! Pure: paths in, files out.

use std::collections::HashMap;
use std::collections::HashSet;

use super::uses::Scope;
use super::uses::Scoping;

/// The crates Rust provides itself: `use std::...` means the standard library even where the
/// repository holds a crate directory of that name (cargo's test fixture `mock-std/library/
/// std` was in the first 10 files of its map for all 80 focuses).
const SYSROOT_CRATES: &[&str] = &["alloc", "core", "proc_macro", "std", "test"];

/// The files each module stem may name, read once from the paths: a Rust file under its path
/// without `.rs` (a `mod.rs`, `lib.rs` or `main.rs` under its directory too), a Python file
/// under its path without `.py`/`.pyi` (an `__init__.py` under its directory too), a Java or
/// Go file under its directory; each by its language, exactly and by every tail of the stem
/// after a `/` (absolute Python and Java names may lie below any directory).
pub(super) struct Modules<'a> {
    exact: HashMap<Scoping, HashMap<&'a str, Vec<&'a str>>>,
    tails: HashMap<Scoping, HashMap<&'a str, Vec<&'a str>>>,
    /// Go files by their directory.
    go: HashMap<&'a str, Vec<&'a str>>,
    /// The source directory of each Rust crate of the repository (`helix-view/src`), by the
    /// name code uses for it (`helix_view`): a directory holding `src/lib.rs`, named as its
    /// directory is with `-` read as `_`. Of two crates one name could mean, the shallower.
    crates: HashMap<String, &'a str>,
}

impl<'a> Modules<'a> {
    pub(super) fn of(files: &HashMap<&'a str, Scope<'a>>) -> Modules<'a> {
        let mut modules = Modules {
            exact: HashMap::new(),
            tails: HashMap::new(),
            go: HashMap::new(),
            crates: HashMap::new(),
        };
        let mut paths: Vec<(&'a str, Scoping)> = (files.iter())
            .map(|(path, file)| (*path, file.scoping))
            .collect();
        paths.sort_unstable();
        let packages: HashSet<&str> = (paths.iter())
            .filter(|(path, _)| path.ends_with("/__init__.py") || path.ends_with("/__init__.pyi"))
            .map(|(path, _)| parent(path))
            .collect();
        for (path, scoping) in paths {
            for stem in module_stems(path, scoping) {
                modules.add(scoping, stem, path, &packages);
            }
            if scoping == Scoping::Go && path.ends_with(".go") {
                modules.go.entry(parent(path)).or_default().push(path);
            }
            if let Some(source) = path.strip_suffix("/lib.rs")
                && let Some(krate) = source.strip_suffix("/src")
            {
                let name = krate.rsplit('/').next().unwrap_or(krate).replace('-', "_");
                let shallower = |known: &&str| known.len() <= source.len();
                let named = !name.is_empty() && !SYSROOT_CRATES.contains(&name.as_str());
                if named && !modules.crates.get(&name).is_some_and(shallower) {
                    modules.crates.insert(name, source);
                }
            }
        }
        modules
    }

    /// The source directory of the Rust crate code names `name`.
    pub(super) fn rust_crate(&self, name: &str) -> Option<&'a str> {
        self.crates.get(name).copied()
    }

    /// Adds the file at `path` under `stem` and under each tail of it that may be a module's
    /// whole name: a Python module's name starts below a directory that is no package (holds
    /// no `__init__.py`, one of `packages`): `src/flask/typing.py` is `flask.typing`, never
    /// the standard library's `typing`.
    fn add(&mut self, scoping: Scoping, stem: &'a str, path: &'a str, packages: &HashSet<&str>) {
        (self.exact.entry(scoping).or_default())
            .entry(stem)
            .or_default()
            .push(path);
        let tails = std::iter::once(stem).chain(
            (stem.match_indices('/'))
                .filter(|(at, _)| scoping != Scoping::Python || !packages.contains(&stem[..*at]))
                .map(|(at, _)| &stem[at + 1..])
                .filter(|tail| !tail.is_empty()),
        );
        let by_tail = self.tails.entry(scoping).or_default();
        for tail in tails {
            by_tail.entry(tail).or_default().push(path);
        }
    }

    /// The files of a module stem, in path order.
    pub(super) fn stem(&self, scoping: Scoping, stem: &str, anywhere: bool) -> &[&'a str] {
        let map = if anywhere { &self.tails } else { &self.exact };
        let empty_matches = matches!(scoping, Scoping::Go) || !anywhere;
        if stem.is_empty() && !empty_matches {
            return &[];
        }
        (map.get(&scoping).and_then(|stems| stems.get(stem))).map_or(&[], Vec::as_slice)
    }

    /// The Go files of the package an import path names: the deepest directory the path
    /// ends with.
    pub(super) fn package(&self, import: &str) -> Vec<&'a str> {
        let tails = std::iter::once(import)
            .chain((import.match_indices('/')).map(|(at, _)| &import[at + 1..]));
        (tails.filter(|dir| !dir.is_empty()))
            .find_map(|dir| self.go.get(dir))
            .cloned()
            .unwrap_or_default()
    }
}

/// The module stems a file at `path` of `scoping` may be named by ([`Modules`]).
fn module_stems(path: &str, scoping: Scoping) -> Vec<&str> {
    let name = path.rsplit('/').next().unwrap_or(path);
    let without = |extensions: &[&str]| {
        (extensions.iter()).find_map(|extension| path.strip_suffix(extension))
    };
    match scoping {
        Scoping::Rust => {
            let mut stems: Vec<&str> = without(&[".rs"]).into_iter().collect();
            if matches!(name, "mod.rs" | "lib.rs" | "main.rs") {
                stems.push(parent(path));
            }
            stems
        }
        Scoping::Python => {
            let mut stems: Vec<&str> = without(&[".pyi", ".py"]).into_iter().collect();
            if name == "__init__.py" {
                stems.push(parent(path));
            }
            stems
        }
        Scoping::Java if path.ends_with(".java") && !parent(path).is_empty() => vec![parent(path)],
        Scoping::Go if path.ends_with(".go") => vec![parent(path)],
        Scoping::Java | Scoping::Go | Scoping::Script | Scoping::C => Vec::new(),
    }
}

/// The directory of a slash path (`""` at the root).
pub(super) fn parent(path: &str) -> &str {
    path.rsplit_once('/').map_or("", |(dir, _)| dir)
}
