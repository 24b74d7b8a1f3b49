//! Which files a map without an index parses first, when its time bound will not let it parse
//! them all: a cheap pass reads each file's import lines (`use`, `import`, `from`, `require`,
//! `#include`, `mod`) for the words they name, and a file whose module name (its file name
//! without extension; its directory's for `mod.rs`, `lib.rs`, `__init__.py`, `index.ts`, ...)
//! the most other files name comes first. The files everything imports are what the map ranks
//! highest, so parsing them first shows a map like the whole tree's, where path order showed
//! the first directories. Files nobody reads ([`peripheral`]: stubs, vendored code, ...) come
//! after every file of the project's own, as the map shows them: on mypy, typeshed's stubs are
//! what every file imports, and parsed first they filled the map's first 20 files. Pure: the
//! texts come in, an order goes out.

use foldhash::HashMap;
use foldhash::HashSet;

use crate::policy::peripheral;

/// The words the import lines of `text` name: the parts of their paths and names
/// (`crate::engine::Engine` is `crate`, `engine`, `Engine`; `'./utils/path.js'` is `utils`,
/// `path`, `js`).
pub fn imported_words(text: &str) -> HashSet<&str> {
    const STARTS: &[&str] = &[
        "use ", "pub use ", "import ", "from ", "#include", "mod ", "export ",
    ];
    let mut words = HashSet::default();
    for line in text.lines() {
        let line = line.trim_start();
        let imports = STARTS.iter().any(|start| line.starts_with(start))
            || line.contains("require(")
            || line.contains("import(");
        if imports {
            words.extend(
                line.split(|c: char| !(c.is_alphanumeric() || c == '_' || c == '-'))
                    .filter(|word| !word.is_empty()),
            );
        }
    }
    words
}

/// The name other files import a file at `path` by: its file name without extension, or its
/// directory's name for a file that stands for its directory.
pub fn module_name(path: &str) -> &str {
    const STANDS_FOR_DIRECTORY: &[&str] = &["mod", "lib", "main", "__init__", "index"];
    let mut parts = path.rsplit('/');
    let name = parts.next().unwrap_or(path);
    let stem = name.split_once('.').map_or(name, |(stem, _)| stem);
    match parts.next() {
        Some(directory) if STANDS_FOR_DIRECTORY.contains(&stem) => directory,
        _ => stem,
    }
}

/// The order to parse `files` in: each is (path, the words its import lines name, or `None`
/// when the first pass did not read it); the project's own files before peripheral ones, and
/// among each, the files whose module name the most other files import first, then shallower
/// paths, then by path. Returns indexes into `files`.
pub fn order(files: &[(&str, Option<HashSet<&str>>)]) -> Vec<usize> {
    let mut named_by: HashMap<&str, usize> = HashMap::default();
    for words in files.iter().filter_map(|(_, words)| words.as_ref()) {
        for word in words {
            *named_by.entry(word).or_default() += 1;
        }
    }
    let score = |(path, words): &(&str, Option<HashSet<&str>>)| {
        let name = module_name(path);
        let own = words.as_ref().is_some_and(|words| words.contains(name));
        named_by.get(name).copied().unwrap_or(0) - usize::from(own)
    };
    let mut order: Vec<usize> = (0..files.len()).collect();
    order.sort_by_cached_key(|&at| {
        let path = files[at].0;
        (
            peripheral::peripheral(path).is_some(),
            std::cmp::Reverse(score(&files[at])),
            path.matches('/').count(),
            path,
        )
    });
    order
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn import_lines_name_their_words() {
        let text = "use crate::engine::Engine;\nfn f() { other::thing(); }\nfrom app.core import parse\nconst m = require('./utils/path-tools')\n";
        let words = imported_words(text);
        for word in [
            "crate",
            "engine",
            "Engine",
            "app",
            "core",
            "parse",
            "utils",
            "path-tools",
        ] {
            assert!(words.contains(word), "{word}: {words:?}");
        }
        for word in ["other", "thing", "f"] {
            assert!(!words.contains(word), "{word}: {words:?}");
        }
    }

    #[test]
    fn module_names_stand_for_directories() {
        assert_eq!(module_name("src/engine.rs"), "engine");
        assert_eq!(module_name("src/net/mod.rs"), "net");
        assert_eq!(module_name("app/core/__init__.py"), "core");
        assert_eq!(module_name("web/utils/index.ts"), "utils");
        assert_eq!(module_name("lib.rs"), "lib");
    }

    /// The file the others import comes first though its path sorts last; a file that only
    /// names itself gains nothing; files the pass did not read are ordered by depth and path.
    #[test]
    fn the_most_imported_file_comes_first() {
        let words = |list: &[&'static str]| Some(list.iter().copied().collect::<HashSet<&str>>());
        let files = [
            ("a.py", words(&["zz_core"])),
            ("b.py", words(&["zz_core", "b"])),
            ("deep/c.py", None),
            ("c.py", words(&["a"])),
            ("zz_core.py", words(&["zz_core"])),
        ];
        let ordered: Vec<&str> = order(&files).into_iter().map(|at| files[at].0).collect();
        assert_eq!(ordered, ["zz_core.py", "a.py", "b.py", "c.py", "deep/c.py"]);
    }

    /// A stub every file imports is parsed after the project's own files, however often it
    /// is named.
    #[test]
    fn peripheral_files_come_after_the_projects_own() {
        let words = |list: &[&'static str]| Some(list.iter().copied().collect::<HashSet<&str>>());
        let files = [
            ("typeshed/stdlib/typing.pyi", words(&[])),
            ("app.py", words(&["typing", "core"])),
            ("core.py", words(&["typing"])),
            ("tool.py", words(&["typing", "core"])),
        ];
        let ordered: Vec<&str> = order(&files).into_iter().map(|at| files[at].0).collect();
        assert_eq!(
            ordered,
            ["core.py", "app.py", "tool.py", "typeshed/stdlib/typing.pyi"]
        );
    }
}
