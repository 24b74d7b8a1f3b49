//! A file's references with their places, and its imports ([`FileUses`]): what `propose` reads
//! to draw an edge only where one node's cited code references a definition another node cites
//! (docs/drafting.md#reference-edges; resolution is [`crate::policy::code_map::uses`]).
//!
//! The references are the tags query's, as the map reads them ([`super::outline`]), each kept
//! with its line, its form and the names written before it (read from the bytes, as the form
//! is: `crate::ledger::balance`, `self.save`, `app.ledger.balance`). The imports are read from
//! the syntax tree: Rust `use` trees and `mod name;` declarations, Python `import` and
//! `from ... import`, JavaScript/TypeScript `import` and `require`, Go import specs, Java
//! imports. The definitions are the ones a code reference may cite ([`super::definitions`]).
//! Nothing here is stored: the index's outlines ([`super::PARSER_VERSION`]) are unchanged, and
//! a file is parsed for this when a proposal needs it.

use tree_sitter::Node;

use super::Grammar;
use super::Tags;
use super::definitions;
use super::grammar;
use super::line_numbers;
use super::parseable;
use super::tag_query;
use super::tags;
use crate::policy::code_map::uses::FileUses;
use crate::policy::code_map::uses::Import;
use crate::policy::code_map::uses::Scoping;
use crate::policy::code_map::uses::Use;

/// What `text`, a file at `path`, defines, references (each at its place) and imports; `None`
/// when its language is not parsed or it used up its budget.
pub fn uses(path: &str, text: &str) -> Option<FileUses> {
    let grammar = grammar(path)?;
    let definitions = definitions(path, text)?;
    let parsed = parseable(grammar, text);
    let query = tag_query(grammar, Tags::All);
    let budget = tags::budget(parsed.len());
    let _granted = super::memory::grant(budget.memory, budget.deadline)?;
    let (tagged, tree) = tags::tags_and_tree(query, parsed.as_bytes(), budget).ok()?;
    let source = text.as_bytes();
    let line_of = line_numbers(text);
    let mut uses: Vec<Use> = (tagged.tags.iter())
        .filter(|tag| tag.role == tags::Role::Reference)
        .filter_map(|tag| {
            let name = text.get(tag.name.clone())?;
            let names_only = name
                .split('.')
                .all(|part| !part.is_empty() && part.bytes().all(is_name_byte));
            names_only.then(|| Use {
                name: name.to_owned(),
                qualifier: qualifier(source, tag.name.start),
                line: line_of(tag.name.start),
                form: tag.form,
            })
        })
        .collect();
    uses.sort_by_key(|used| used.line);
    let scoping = scoping(grammar);
    Some(FileUses {
        text: text.to_owned(),
        scoping,
        definitions,
        uses,
        imports: imports(scoping, tree.root_node(), source),
    })
}

/// How a grammar's language scopes names.
pub(super) fn scoping(grammar: Grammar) -> Scoping {
    match grammar {
        Grammar::Rust => Scoping::Rust,
        Grammar::Python => Scoping::Python,
        Grammar::JavaScript | Grammar::TypeScript | Grammar::Tsx => Scoping::Script,
        Grammar::Go => Scoping::Go,
        Grammar::Java => Scoping::Java,
        Grammar::C | Grammar::Cpp => Scoping::C,
    }
}

fn is_name_byte(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || byte == b'_' || byte == b'$' || byte >= 0x80
}

/// The names written before the name at byte `start`, outermost first, each followed by `::`,
/// `.` or `?.` (white space allowed around them); `None` when something else comes before a
/// separator (`f().name`, `v[0].name`, `Vec::<u8>::new`, `::std::x`). A range or a spread
/// (`0..name`, `...name`) is no separator.
fn qualifier(source: &[u8], start: usize) -> Option<Vec<String>> {
    let mut names = Vec::new();
    let mut at = start;
    loop {
        let before = source[..at].trim_ascii_end();
        let separator = if before.ends_with(b"::") || before.ends_with(b"?.") {
            2
        } else if before.ends_with(b".") && !before.ends_with(b"..") {
            1
        } else {
            break;
        };
        let rest = before[..before.len() - separator].trim_ascii_end();
        let name_start = rest
            .iter()
            .rposition(|&byte| !is_name_byte(byte))
            .map_or(0, |at| at + 1);
        if name_start == rest.len() {
            return None;
        }
        names.push(String::from_utf8_lossy(&rest[name_start..]).into_owned());
        at = name_start;
    }
    names.reverse();
    Some(names)
}

/// Every import in the tree, in file order: a walk that reads each import and does not go
/// inside it.
pub(super) fn imports(scoping: Scoping, root: Node<'_>, source: &[u8]) -> Vec<Import> {
    let mut found = Vec::new();
    let mut cursor = root.walk();
    'walk: loop {
        let read = import_of(scoping, cursor.node(), source, &mut found);
        if !read && cursor.goto_first_child() {
            continue;
        }
        loop {
            if cursor.goto_next_sibling() {
                continue 'walk;
            }
            if !cursor.goto_parent() {
                break 'walk;
            }
        }
    }
    found
}

fn text<'a>(node: Node<'_>, source: &'a [u8]) -> &'a str {
    node.utf8_text(source).unwrap_or_default()
}

fn field<'a>(node: Node<'_>, name: &str, source: &'a [u8]) -> Option<&'a str> {
    node.child_by_field_name(name)
        .map(|child| text(child, source))
}

/// A string literal's contents.
fn unquoted(literal: &str) -> &str {
    let quotes: &[char] = &['"', '\'', '`'];
    literal.trim().trim_matches(quotes)
}

fn push(found: &mut Vec<Import>, local: &str, path: Vec<String>) {
    if !local.is_empty() && !path.is_empty() {
        found.push(Import {
            local: local.to_owned(),
            path,
            reexport: false,
        });
    }
}

/// Reads `node` as an import of its language into `found`; whether it was one (its inside is
/// then not walked).
fn import_of(scoping: Scoping, node: Node<'_>, source: &[u8], found: &mut Vec<Import>) -> bool {
    match (scoping, node.kind()) {
        (Scoping::Rust, "use_declaration") => {
            if let Some(argument) = node.child_by_field_name("argument") {
                rust_use(argument, &[], source, found);
            }
            true
        }
        // `mod name;`: a module in its own file. An inline module is walked into.
        (Scoping::Rust, "mod_item") if node.child_by_field_name("body").is_none() => {
            if let Some(name) = field(node, "name", source) {
                push(found, name, vec!["self".into(), name.into()]);
            }
            true
        }
        (Scoping::Python, "import_statement" | "import_from_statement") => {
            python_import(node, source, found);
            true
        }
        (Scoping::Script, "import_statement") => {
            script_import(node, source, found);
            true
        }
        (Scoping::Script, "export_statement") if node.child_by_field_name("source").is_some() => {
            script_reexport(node, source, found);
            true
        }
        (Scoping::Script, "variable_declarator") => {
            script_require(node, source, found);
            false
        }
        (Scoping::Go, "import_spec") => {
            go_import(node, source, found);
            true
        }
        (Scoping::Java, "import_declaration") => {
            let mut path: Vec<String> = Vec::new();
            let mut cursor = node.walk();
            for child in node.named_children(&mut cursor) {
                match child.kind() {
                    "identifier" | "scoped_identifier" => path.extend(
                        (text(child, source).split('.'))
                            .map(|part| part.trim().to_owned())
                            .filter(|part| !part.is_empty()),
                    ),
                    "asterisk" => path.push("*".into()),
                    _ => {}
                }
            }
            if let Some(local) = path.last().cloned() {
                push(found, &local, path);
            }
            true
        }
        _ => false,
    }
}

/// The names of a Rust path (`crate::ledger`), without white space.
fn rust_path(node: Node<'_>, source: &[u8]) -> Vec<String> {
    let spaced = text(node, source);
    let compact: String = spaced.chars().filter(|c| !c.is_whitespace()).collect();
    (compact.split("::"))
        .filter(|part| !part.is_empty())
        .map(str::to_owned)
        .collect()
}

/// One tree of a `use` declaration, below the names in `prefix`.
fn rust_use(node: Node<'_>, prefix: &[String], source: &[u8], found: &mut Vec<Import>) {
    let joined =
        |names: Vec<String>| -> Vec<String> { prefix.iter().cloned().chain(names).collect() };
    match node.kind() {
        "use_as_clause" => {
            let path = node.child_by_field_name("path");
            let alias = field(node, "alias", source);
            if let (Some(path), Some(alias)) = (path, alias)
                && alias != "_"
            {
                let mut path = joined(rust_path(path, source));
                // `use a::{self as b}` binds `a` as `b`.
                if path.last().is_some_and(|last| last == "self") && path.len() > 1 {
                    path.pop();
                }
                push(found, alias, path);
            }
        }
        "use_list" => {
            let mut cursor = node.walk();
            for child in node.named_children(&mut cursor) {
                rust_use(child, prefix, source, found);
            }
        }
        "scoped_use_list" => {
            let mut inner = prefix.to_vec();
            if let Some(path) = node.child_by_field_name("path") {
                inner.extend(rust_path(path, source));
            }
            if let Some(list) = node.child_by_field_name("list") {
                rust_use(list, &inner, source, found);
            }
        }
        "use_wildcard" => push(found, "*", joined(rust_path(node, source))),
        "identifier" | "scoped_identifier" | "self" | "crate" | "super" => {
            let mut path = joined(rust_path(node, source));
            // `use a::{self}` binds `a`.
            if path.last().is_some_and(|last| last == "self") && path.len() > 1 {
                path.pop();
            }
            let local = path.last().cloned().unwrap_or_default();
            if !matches!(local.as_str(), "crate" | "super" | "self") {
                push(found, &local, path);
            }
        }
        _ => {}
    }
}

/// The names of a Python dotted name.
fn dotted(node: Node<'_>, source: &[u8]) -> Vec<String> {
    (text(node, source).split('.'))
        .map(|part| part.trim().to_owned())
        .filter(|part| !part.is_empty())
        .collect()
}

/// `import a.b`, `import a.b as c`, `from m import n`, `from .m import n as o`, `from m import *`.
fn python_import(node: Node<'_>, source: &[u8], found: &mut Vec<Import>) {
    let module: Vec<String> = match node.child_by_field_name("module_name") {
        None => Vec::new(),
        Some(module) if module.kind() == "relative_import" => {
            let mut path = Vec::new();
            let mut cursor = module.walk();
            for part in module.named_children(&mut cursor) {
                match part.kind() {
                    "import_prefix" => path.push(text(part, source).trim().to_owned()),
                    _ => path.extend(dotted(part, source)),
                }
            }
            path
        }
        Some(module) => dotted(module, source),
    };
    let from = node.kind() == "import_from_statement";
    let mut cursor = node.walk();
    for name in node.children_by_field_name("name", &mut cursor) {
        let (local, names) = if name.kind() == "aliased_import" {
            let names = (name.child_by_field_name("name"))
                .map(|dotted_name| dotted(dotted_name, source))
                .unwrap_or_default();
            let alias = field(name, "alias", source).unwrap_or_default();
            (alias.to_owned(), names)
        } else if from {
            let names = dotted(name, source);
            (names.last().cloned().unwrap_or_default(), names)
        } else {
            // `import a.b` binds `a`, the package.
            let package = dotted(name, source).into_iter().next().unwrap_or_default();
            (package.clone(), vec![package])
        };
        push(found, &local, module.iter().cloned().chain(names).collect());
    }
    let mut cursor = node.walk();
    if node
        .named_children(&mut cursor)
        .any(|child| child.kind() == "wildcard_import")
    {
        push(
            found,
            "*",
            module.into_iter().chain(["*".to_owned()]).collect(),
        );
    }
}

/// `import d, { a, b as c } from './m'`, `import * as m from './m'`, TypeScript's
/// `import m = require('./m')`.
fn script_import(node: Node<'_>, source: &[u8], found: &mut Vec<Import>) {
    let specifier = field(node, "source", source).map(unquoted);
    let mut cursor = node.walk();
    for child in node.named_children(&mut cursor) {
        match child.kind() {
            "import_clause" => {
                let Some(specifier) = specifier else { continue };
                let mut inner = child.walk();
                for part in child.named_children(&mut inner) {
                    script_clause(part, specifier, source, found);
                }
            }
            "import_require_clause" => {
                let specifier = field(child, "source", source).map(unquoted);
                let mut inner = child.walk();
                let local = child
                    .named_children(&mut inner)
                    .find(|part| part.kind() == "identifier");
                if let (Some(specifier), Some(local)) = (specifier, local) {
                    push(found, text(local, source), vec![specifier.to_owned()]);
                }
            }
            _ => {}
        }
    }
}

/// `export * from './m'`, `export * as m from './m'`, `export { a, b as c } from './m'`: what a
/// module re-exports, bound as imports bind (all of `./m` as a glob), so that a name imported
/// from the module leads on to the file defining it.
fn script_reexport(node: Node<'_>, source: &[u8], found: &mut Vec<Import>) {
    let Some(specifier) = field(node, "source", source).map(unquoted) else {
        return;
    };
    let first = found.len();
    let mut cursor = node.walk();
    let clause = (node.named_children(&mut cursor))
        .find(|child| matches!(child.kind(), "export_clause" | "namespace_export"));
    match clause {
        None => push(found, "*", vec![specifier.to_owned()]),
        Some(namespace) if namespace.kind() == "namespace_export" => {
            let mut inner = namespace.walk();
            if let Some(local) = namespace.named_children(&mut inner).next() {
                push(
                    found,
                    unquoted(text(local, source)),
                    vec![specifier.to_owned()],
                );
            }
        }
        Some(clause) => {
            let mut inner = clause.walk();
            for exported in clause.named_children(&mut inner) {
                let Some(name) = field(exported, "name", source).map(unquoted) else {
                    continue;
                };
                let local = field(exported, "alias", source).map_or(name, unquoted);
                push(found, local, vec![specifier.to_owned(), name.to_owned()]);
            }
        }
    }
    for import in &mut found[first..] {
        import.reexport = true;
    }
}

/// One part of an import clause: a default import, a namespace import or named imports.
fn script_clause(part: Node<'_>, specifier: &str, source: &[u8], found: &mut Vec<Import>) {
    let from = |name: &str| vec![specifier.to_owned(), name.to_owned()];
    match part.kind() {
        "identifier" => push(found, text(part, source), from("default")),
        "namespace_import" => {
            let mut cursor = part.walk();
            if let Some(local) = part.named_children(&mut cursor).next() {
                push(found, text(local, source), vec![specifier.to_owned()]);
            }
        }
        "named_imports" => {
            let mut cursor = part.walk();
            for specifier_node in part.named_children(&mut cursor) {
                let Some(name) = field(specifier_node, "name", source).map(unquoted) else {
                    continue;
                };
                let local = field(specifier_node, "alias", source).unwrap_or(name);
                push(found, local, from(name));
            }
        }
        _ => {}
    }
}

/// `const m = require('./m')`, `const { a, b: c } = require('./m')`.
fn script_require(node: Node<'_>, source: &[u8], found: &mut Vec<Import>) {
    let Some(value) = node.child_by_field_name("value") else {
        return;
    };
    let is_require =
        value.kind() == "call_expression" && field(value, "function", source) == Some("require");
    let mut cursor = value.walk();
    let specifier = (value.child_by_field_name("arguments"))
        .and_then(|arguments| arguments.named_children(&mut cursor).next())
        .filter(|argument| argument.kind() == "string")
        .map(|argument| unquoted(text(argument, source)));
    let (Some(specifier), true, Some(name)) =
        (specifier, is_require, node.child_by_field_name("name"))
    else {
        return;
    };
    match name.kind() {
        "identifier" => push(found, text(name, source), vec![specifier.to_owned()]),
        "object_pattern" => {
            let mut cursor = name.walk();
            for property in name.named_children(&mut cursor) {
                let (key, local) = match property.kind() {
                    "shorthand_property_identifier_pattern" => {
                        (text(property, source), text(property, source))
                    }
                    "pair_pattern" => {
                        let key = field(property, "key", source).unwrap_or_default();
                        let value = property.child_by_field_name("value");
                        match value.filter(|value| value.kind() == "identifier") {
                            Some(value) => (key, text(value, source)),
                            None => continue,
                        }
                    }
                    _ => continue,
                };
                push(found, local, vec![specifier.to_owned(), key.to_owned()]);
            }
        }
        _ => {}
    }
}

/// `import "example.com/app/ledger"`, with a name, `.` (a glob) or `_` (nothing bound). Without
/// a name the package's name is the path's last part (the one before a `/v2` version suffix).
fn go_import(node: Node<'_>, source: &[u8], found: &mut Vec<Import>) {
    let Some(path) = field(node, "path", source).map(unquoted) else {
        return;
    };
    let local = match node.child_by_field_name("name") {
        Some(name) if name.kind() == "dot" => "*".to_owned(),
        Some(name) if name.kind() == "blank_identifier" => return,
        Some(name) => text(name, source).to_owned(),
        None => {
            let parts: Vec<&str> = path.split('/').collect();
            let is_version = |part: &str| {
                part.len() > 1
                    && part.starts_with('v')
                    && part[1..].bytes().all(|b| b.is_ascii_digit())
            };
            match parts.as_slice() {
                [.., package, version] if is_version(version) => (*package).to_owned(),
                [.., last] => (*last).to_owned(),
                [] => return,
            }
        }
    };
    push(found, &local, vec![path.to_owned()]);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::code_map::Form;

    fn imported(path: &str, text: &str) -> Vec<(String, String)> {
        (uses(path, text).expect("parsed").imports.into_iter())
            .map(|import| (import.local, import.path.join(" ")))
            .collect()
    }

    fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
        (list.iter())
            .map(|(local, path)| ((*local).to_owned(), (*path).to_owned()))
            .collect()
    }

    #[test]
    fn rust_use_trees_and_module_declarations() {
        let text = "mod ledger;\nmod inline {\n    use super::x;\n}\nuse crate::a::{b::{self, c}, d as e, f::*};\nuse super::g;\nuse std::io::{self as sio, _x as _};\n";
        assert_eq!(
            imported("src/lib.rs", text),
            pairs(&[
                ("ledger", "self ledger"),
                ("x", "super x"),
                ("b", "crate a b"),
                ("c", "crate a b c"),
                ("e", "crate a d"),
                ("*", "crate a f *"),
                ("g", "super g"),
                ("sio", "std io"),
            ])
        );
    }

    #[test]
    fn python_imports() {
        let text = "import os.path\nimport app.ledger as L\nfrom app.ledger import balance, post as p\nfrom . import util\nfrom ..core.x import y\nfrom z import *\n\ndef f():\n    import late\n";
        assert_eq!(
            imported("pkg/audit.py", text),
            pairs(&[
                ("os", "os"),
                ("L", "app ledger"),
                ("balance", "app ledger balance"),
                ("p", "app ledger post"),
                ("util", ". util"),
                ("y", ".. core x y"),
                ("*", "z *"),
                ("late", "late"),
            ])
        );
    }

    #[test]
    fn script_imports_and_requires() {
        let text = "import walk, { a, b as c } from './walk.js';\nimport * as ns from \"../ns\";\nimport 'side-effect';\nconst m = require('./m');\nconst { k, l: n } = require('./kl');\nconst other = compute('./x');\n";
        assert_eq!(
            imported("src/a.js", text),
            pairs(&[
                ("walk", "./walk.js default"),
                ("a", "./walk.js a"),
                ("c", "./walk.js b"),
                ("ns", "../ns"),
                ("m", "./m"),
                ("k", "./kl k"),
                ("n", "./kl l"),
            ])
        );
        let typescript = "import type { T } from './types';\nimport x = require('./x');\n";
        assert_eq!(
            imported("src/a.ts", typescript),
            pairs(&[("T", "./types T"), ("x", "./x")])
        );
    }

    /// A barrel's re-exports are imports the file passes on; its own exports are not imports.
    #[test]
    fn script_reexports_are_imports_passed_on() {
        let text = "export * from './core.js';\nexport * as util from \"./util.js\";\nexport { parse, check as verify } from './api';\nexport { local };\nexport function own() {}\nimport { used } from './used';\n";
        let imports = uses("src/index.ts", text).expect("parsed").imports;
        let passed: Vec<(&str, String, bool)> = (imports.iter())
            .map(|i| (i.local.as_str(), i.path.join(" "), i.reexport))
            .collect();
        assert_eq!(
            passed,
            [
                ("*", "./core.js".to_owned(), true),
                ("util", "./util.js".to_owned(), true),
                ("parse", "./api parse".to_owned(), true),
                ("verify", "./api check".to_owned(), true),
                ("used", "./used used".to_owned(), false),
            ]
        );
    }

    #[test]
    fn go_and_java_imports() {
        let go = "package a\n\nimport (\n\t\"fmt\"\n\tl \"example.com/app/ledger\"\n\t\"example.com/app/store/v2\"\n\t. \"example.com/dot\"\n\t_ \"example.com/blank\"\n)\n";
        assert_eq!(
            imported("a/a.go", go),
            pairs(&[
                ("fmt", "fmt"),
                ("l", "example.com/app/ledger"),
                ("store", "example.com/app/store/v2"),
                ("*", "example.com/dot"),
            ])
        );
        let java = "package com.shop;\nimport com.shop.Ledger;\nimport static com.shop.Ledger.balance;\nimport com.util.*;\nclass A {}\n";
        assert_eq!(
            imported("A.java", java),
            pairs(&[
                ("Ledger", "com shop Ledger"),
                ("balance", "com shop Ledger balance"),
                ("*", "com util *"),
            ])
        );
    }

    /// Each reference keeps its line, its form and the names before it.
    #[test]
    fn references_keep_their_places_and_qualifiers() {
        let shown = |path: &str, text: &str| -> Vec<(String, Option<String>, u32, Form)> {
            (uses(path, text).expect("parsed").uses.into_iter())
                .map(|used| {
                    let qualifier = used.qualifier.map(|names| names.join("/"));
                    (used.name, qualifier, used.line, used.form)
                })
                .collect()
        };
        let q = |text: &str| Some(text.to_owned());
        let rust = "fn a() {\n    crate::ledger::balance();\n    self.save();\n    make().go();\n    helper();\n    Vec::<u8>::new();\n}\n";
        assert_eq!(
            shown("src/a.rs", rust),
            [
                ("balance".to_owned(), q("crate/ledger"), 2, Form::Plain),
                ("save".to_owned(), q("self"), 3, Form::Member),
                ("make".to_owned(), q(""), 4, Form::Plain),
                ("go".to_owned(), None, 4, Form::Member),
                ("helper".to_owned(), q(""), 5, Form::Plain),
                ("Vec".to_owned(), q(""), 6, Form::Plain),
                ("new".to_owned(), None, 6, Form::Plain),
            ]
        );
        let python = "def f():\n    app.ledger.balance(1)\n";
        assert_eq!(
            shown("a.py", python),
            [("balance".to_owned(), q("app/ledger"), 2, Form::Member)]
        );
        let go = "package a\n\nfunc f() {\n\tledger.\n\t\tBalance()\n}\n";
        assert_eq!(
            shown("a.go", go),
            [("Balance".to_owned(), q("ledger"), 5, Form::Member)]
        );
        assert_eq!(qualifier(b"0..name", 3), Some(Vec::new()));
        assert_eq!(qualifier(b"...name", 3), Some(Vec::new()));
        assert_eq!(
            qualifier(b"a?.b.name", 5),
            Some(vec!["a".into(), "b".into()])
        );
        assert_eq!(qualifier(b"::std::x", 7), None);
    }

    #[test]
    fn definitions_are_the_citable_ones_and_other_files_give_none() {
        let found = uses("a.ts", "const LIMIT = 3;\nfunction f() {}\n").expect("parsed");
        let names: Vec<&str> = found.definitions.iter().map(|d| d.name.as_str()).collect();
        assert_eq!(names, ["LIMIT", "f"]);
        assert_eq!(found.scoping, Scoping::Script);
        assert!(uses("README.md", "# x").is_none());
    }
}
