//! Definitions and references from real parsers: each file of a parsed language (Rust,
//! Python, JavaScript, TypeScript/TSX, Go, Java, C, C++) is parsed with its tree-sitter
//! grammar and tagged with the grammar crate's own tags query ([`tags`]), giving
//! its [`Outline`]: the definitions (name, kind, line span, signature line) and the distinct
//! names it references (calls, types, implementations, imports), each with its form: plain,
//! after a `.` (`value.name()`, `server.Server`) or a macro call
//! ([`crate::policy::code_map::Form`]).
//!
//! A few patterns of our own are put before a crate's query where it misses what a code map
//! needs ([`queries`]): Rust constants and statics, Python methods (the crate tags them as
//! functions), and whole C/C++ function definitions (the crates tag the declarator line
//! only). Others come after it, for references the map needs to tell which file a member call
//! can mean: the types of Rust path calls (`Store::open()` references `Store`) and struct
//! literals, the names Python and JavaScript/TypeScript files import, Java's type names, and
//! calls in C and C++ (their queries have no references). Rust's `use` names are left out: they
//! made the map worse on cargo (`bench/map-quality.py`). A pattern put first wins over a
//! crate's pattern for the same name. References stop there (no variables, no fields), to keep
//! the parsing cost of a full index down.
//!
//! What a code reference may cite is wider than what the map outlines: the definitions query
//! ([`Tags::Definitions`], [`definitions`]) adds every declaration ([`queries`]: constants,
//! variables, type aliases, enums and their members, fields, module-level assignments) and the
//! items inside Rust macro bodies (`cfg_rt! { fn spawn_inner() {} }`). The outline keeps those
//! apart ([`Outline::declarations`]): the map leaves them out, retrieval's index reads them
//! with the definitions, so that it finds what a scan without an index finds.
//!
//! [`uses`] reads one file for `propose`'s edges: its references each with its line and the
//! names written before it, and what its imports bind, read from the syntax tree. It is not
//! stored.
//!
//! Other languages have no outline here; [`crate::search::symbols`] keeps their line
//! patterns. A file gets a budget of CPU time and memory to parse and tag ([`tags::budget`],
//! the memory counted by [`memory`]); one that uses it up (generated or hostile: 50,000 nested
//! calls) has an empty outline. Each parse is granted its budget's memory from what all the
//! process's parses share ([`memory::SHARED`]) before it starts, so parses on every core hold
//! no more together than that; one waiting for room past the deadline is [`Late`]. A command
//! that promises its time also passes its [`Deadline`], shared by all its parses: a file it
//! cuts short is [`Late`], and the caller names it as left out. Pure but for the clocks and
//! the memory count: no I/O. A parser and a query cursor are kept per thread.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::collections::BTreeSet;
use std::sync::LazyLock;

pub mod memory;
mod queries;
mod tags;
mod uses;

use crate::policy::code_map::Form;
use queries::query_source;
use tags::Role;
use tags::Stopped;
use tags::TagQuery;

pub use tags::Deadline;

pub use crate::policy::code_map::Declaration;
pub use crate::policy::code_map::Definition;
pub use crate::policy::code_map::Outline;
pub use uses::uses;

/// The version of what this module makes of a file. Outlines are reused for as long as a
/// file's contents stay the same ([`crate::search::outlines`]), so a change here that changes
/// any outline bumps this; outlines of another version are not used, and the next `index`
/// parses every file again.
/// 2: Rust macros named after a primitive type (`str![...]`) no longer fail the parse.
/// 3: references keep their form (plain, after a `.`, macro call); Python methods are
/// methods; Python and JavaScript/TypeScript imports, Rust struct literals and Java type names
/// are references.
/// 4: outlines keep what each file's imports bind; type names in every type position (Rust,
/// Python annotations, TypeScript, C, C++) and class bases are references.
/// 5: JavaScript and TypeScript re-exports (`export * from`, `export { a } from`) are imports.
/// 6: outlines keep what a file declares besides its definitions (fields, constants, enum
/// members, items inside macro bodies), so that the index's definitions are a scan's.
/// (The time budget did not bump it: an outline made before it is what the parsers make given
/// the time, and stays true.)
pub const PARSER_VERSION: u32 = 6;

/// The grammars this module parses with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Grammar {
    /// Rust.
    Rust,
    /// Python.
    Python,
    /// JavaScript (JSX included).
    JavaScript,
    /// TypeScript.
    TypeScript,
    /// TypeScript with JSX.
    Tsx,
    /// Go.
    Go,
    /// Java.
    Java,
    /// C.
    C,
    /// C++.
    Cpp,
}

/// How the language of a path scopes names; `None` for a language that is not parsed.
pub fn scoping(path: &str) -> Option<crate::policy::code_map::uses::Scoping> {
    grammar(path).map(uses::scoping)
}

/// The grammar of a path, by extension; `None` for a language that is not parsed.
pub fn grammar(path: &str) -> Option<Grammar> {
    let name = path.rsplit('/').next().unwrap_or(path);
    let extension = name.rsplit_once('.')?.1.to_ascii_lowercase();
    Some(match extension.as_str() {
        "rs" => Grammar::Rust,
        "py" | "pyi" => Grammar::Python,
        "js" | "jsx" | "mjs" | "cjs" => Grammar::JavaScript,
        "ts" | "mts" | "cts" => Grammar::TypeScript,
        "tsx" => Grammar::Tsx,
        "go" => Grammar::Go,
        "java" => Grammar::Java,
        "c" | "h" => Grammar::C,
        "cc" | "cpp" | "cxx" | "hpp" | "hh" | "hxx" => Grammar::Cpp,
        _ => return None,
    })
}

/// What a parse tags.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tags {
    /// Definitions and references: what the index and the map keep.
    All,
    /// Definitions only: what a code ref is checked against. Compiling a query costs about
    /// as much as its patterns (a quarter of the whole for Rust), and every command that
    /// checks refs compiles one.
    Definitions,
}

/// Compiles the `tags` queries of the grammars of `paths` on another thread, so that a command
/// that will parse such files soon (after reading its state and asking git) does not wait for
/// a query to compile when it does. Returns at once; a parse that comes first waits for the
/// compilation under way instead of repeating it.
pub fn warm_up<'a>(paths: impl IntoIterator<Item = &'a str>, tags: Tags) {
    let mut grammars: Vec<Grammar> = Vec::new();
    for grammar in paths.into_iter().filter_map(grammar) {
        if !grammars.contains(&grammar) {
            grammars.push(grammar);
        }
    }
    if !grammars.is_empty() {
        std::thread::spawn(move || {
            for grammar in grammars {
                tag_query(grammar, tags);
            }
        });
    }
}

/// A file the command's [`Deadline`] cut short: it has no outline or definitions this time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Late;

/// The outline of `text`, a file at `path`; `None` when its language is not parsed. A file
/// that uses up its budget has an empty outline marked [`Outline::over_budget`]: the index
/// keeps it, so that the file is not parsed again until it changes.
pub fn outline(path: &str, text: &str) -> Option<Outline> {
    outline_by(path, text, Deadline::NONE).map(|parsed| parsed.unwrap_or_default())
}

/// [`outline`] within the command's `deadline`: [`Late`] when it passed first.
pub fn outline_by(path: &str, text: &str, deadline: Deadline) -> Option<Result<Outline, Late>> {
    Some(match tagged(path, text, Tags::All, deadline)? {
        Ok(outline) => Ok(outline),
        Err(Stopped::OverBudget) => Ok(Outline {
            over_budget: true,
            ..Outline::default()
        }),
        Err(Stopped::Late) => Err(Late),
    })
}

/// The definitions in `text`, a file at `path`; `None` when its language is not parsed or the
/// file used up its budget (the caller then reads the text as in other languages).
pub fn definitions(path: &str, text: &str) -> Option<Vec<Definition>> {
    definitions_by(path, text, Deadline::NONE).unwrap_or_default()
}

/// [`definitions`] within the command's `deadline`: [`Late`] when it passed first.
pub fn definitions_by(
    path: &str,
    text: &str,
    deadline: Deadline,
) -> Result<Option<Vec<Definition>>, Late> {
    match tagged(path, text, Tags::Definitions, deadline) {
        None | Some(Err(Stopped::OverBudget)) => Ok(None),
        Some(Err(Stopped::Late)) => Err(Late),
        Some(Ok(outline)) => Ok(Some(outline.definitions)),
    }
}

/// `text` as its grammar can parse it. tree-sitter-rust lexes the primitive type names (`str`,
/// `u8`, `bool`, ...) as keywords, so an invocation of a macro with such a name (snapbox's
/// `str![...]`, in every snapshot test of cargo) is a syntax error. Recovering from it about
/// doubles the time such a file takes to parse and can tag what is not there (`mod a;` lines as
/// module definitions): in cargo 521 of 1,373 Rust files had errors and took 2.3 s to parse, with
/// this 45 and 1.2 s. Such a name becomes an identifier of the same length (its last byte `_`),
/// so every span holds; names are read from the original text.
fn parseable(grammar: Grammar, text: &str) -> Cow<'_, str> {
    const PRIMITIVES: &[&str] = &[
        "bool", "char", "str", "u8", "u16", "u32", "u64", "u128", "usize", "i8", "i16", "i32",
        "i64", "i128", "isize", "f32", "f64",
    ];
    if grammar != Grammar::Rust {
        return Cow::Borrowed(text);
    }
    let bytes = text.as_bytes();
    let is_identifier = |byte: u8| byte.is_ascii_alphanumeric() || byte == b'_';
    let renamed: Vec<usize> = memchr::memchr_iter(b'!', bytes)
        .filter(|&bang| {
            let opens = bytes[bang + 1..]
                .iter()
                .find(|byte| !byte.is_ascii_whitespace())
                .is_some_and(|byte| matches!(byte, b'(' | b'[' | b'{'));
            let start = bytes[..bang]
                .iter()
                .rposition(|&byte| !is_identifier(byte))
                .map_or(0, |at| at + 1);
            opens && PRIMITIVES.contains(&&text[start..bang])
        })
        .collect();
    if renamed.is_empty() {
        return Cow::Borrowed(text);
    }
    let mut bytes = bytes.to_vec();
    for bang in renamed {
        bytes[bang - 1] = b'_';
    }
    // Only ASCII bytes were replaced by an ASCII byte: the text is still UTF-8.
    String::from_utf8(bytes).map_or(Cow::Borrowed(text), Cow::Owned)
}

/// The compiled tags query of a grammar, compiled on first use.
fn tag_query(grammar: Grammar, tags: Tags) -> &'static TagQuery {
    macro_rules! configured {
        ($($variant:ident),*) => {
            match (grammar, tags) {
                $((Grammar::$variant, Tags::All) => {
                    static CONFIG: LazyLock<TagQuery> =
                        LazyLock::new(|| compile(Grammar::$variant, Tags::All));
                    &CONFIG
                })*
                $((Grammar::$variant, Tags::Definitions) => {
                    static CONFIG: LazyLock<TagQuery> =
                        LazyLock::new(|| compile(Grammar::$variant, Tags::Definitions));
                    &CONFIG
                })*
            }
        };
    }
    configured!(Rust, Python, JavaScript, TypeScript, Tsx, Go, Java, C, Cpp)
}

fn compile(grammar: Grammar, tags: Tags) -> TagQuery {
    let (language, query) = query_source(grammar, tags);
    // The queries ship with the crates and the supplement is ours: both are fixed at build
    // time, and a unit test compiles every grammar's query.
    #[allow(clippy::expect_used)]
    TagQuery::new(language, &query).expect("the tags queries compile")
}

/// How deep the items of a macro body inside a macro body are still tagged.
const NESTED_DEPTH: usize = 3;

/// The tags `query` finds in `source` and, where it captures `@nested` nodes (Rust macro
/// bodies among items), in their insides, each parsed again as a file of its own language: the
/// source with every byte outside those bodies blanked (line breaks kept), so that every byte
/// and line keeps its place. A body that does not parse as items yields what parses of it;
/// its names with syntax errors are not tagged. Nested bodies are followed [`NESTED_DEPTH`]
/// deep, each pass within the file's budget; a pass over budget ends the nesting, and the
/// tags found before it stand.
fn tags_with_nested<'q>(
    query: &'q TagQuery,
    source: &[u8],
    deadline: Deadline,
) -> Result<(Vec<tags::Tag<'q>>, tree_sitter::Tree), Stopped> {
    let budget = tags::Budget {
        deadline,
        ..tags::budget(source.len())
    };
    let (
        tags::Tagged {
            tags: mut found,
            mut nested,
        },
        tree,
    ) = tags::tags_and_tree(query, source, budget)?;
    for _ in 0..NESTED_DEPTH {
        if nested.is_empty() {
            break;
        }
        let mut inside: Vec<u8> = source
            .iter()
            .map(|&byte| if byte == b'\n' { b'\n' } else { b' ' })
            .collect();
        for body in &nested {
            // The body without its braces.
            let inner = body.start + 1..body.end.saturating_sub(1).max(body.start + 1);
            inside[inner.clone()].copy_from_slice(&source[inner]);
        }
        let Ok(deeper) = tags::tags(query, &inside, budget) else {
            break;
        };
        found.extend(nested_items(deeper.tags));
        nested = deeper.nested;
    }
    found.sort_by_key(|tag| (tag.name.end, tag.name.start));
    Ok((found, tree))
}

/// The tags of a macro body's items: what it defines, as declarations. The map has never read
/// inside macro bodies (their references and definitions are left out of its outline); what a
/// code reference or retrieval may find there is declared.
fn nested_items(tags: Vec<tags::Tag<'_>>) -> impl Iterator<Item = tags::Tag<'_>> {
    (tags.into_iter())
        .filter(|tag| tag.role != Role::Reference)
        .map(|tag| tags::Tag {
            role: Role::Declaration,
            ..tag
        })
}

/// The 1-based line of a byte offset of `text`.
fn line_numbers(text: &str) -> impl Fn(usize) -> u32 {
    let line_starts: Vec<usize> = std::iter::once(0)
        .chain(memchr::memchr_iter(b'\n', text.as_bytes()).map(|at| at + 1))
        .collect();
    move |byte| {
        u32::try_from(line_starts.partition_point(|&start| start <= byte)).unwrap_or(u32::MAX)
    }
}

/// What the tags query finds in `text`, a file at `path`, within its budget and `deadline`;
/// `None` when its language is not parsed.
fn tagged(
    path: &str,
    text: &str,
    tags: Tags,
    deadline: Deadline,
) -> Option<Result<Outline, Stopped>> {
    let grammar = grammar(path)?;
    // Held until the outline is made from the tree and the parser has shed what it grew.
    let Some(_granted) = memory::grant(tags::budget(text.len()).memory, deadline) else {
        return Some(Err(Stopped::Late));
    };
    let before = memory::held();
    let outline = outline_of(grammar, text, tags, deadline);
    tags::shed_tools(before);
    Some(outline)
}

/// What [`tagged`] finds, once its grant is held.
fn outline_of(
    grammar: Grammar,
    text: &str,
    tags: Tags,
    deadline: Deadline,
) -> Result<Outline, Stopped> {
    let query = tag_query(grammar, tags);
    let parsed = parseable(grammar, text);
    let (found, tree) = tags_with_nested(query, parsed.as_bytes(), deadline)?;
    let line_of = line_numbers(text);
    let mut outline = Outline::default();
    if tags == Tags::All {
        outline.imports = uses::imports(uses::scoping(grammar), tree.root_node(), text.as_bytes());
    }
    let mut references: BTreeMap<&str, BTreeSet<Form>> = BTreeMap::new();
    for tag in found {
        let Some(name) = text.get(tag.name.clone()) else {
            continue;
        };
        match tag.role {
            Role::Reference => {
                references.entry(name).or_default().insert(tag.form);
                continue;
            }
            Role::Declaration if tags == Tags::All => {
                outline.declarations.push(Declaration {
                    name: name.to_owned(),
                    line: line_of(tag.name.start),
                });
                continue;
            }
            Role::Declaration | Role::Definition => {}
        }
        let signature = text.get(tag.line.clone()).unwrap_or_default().trim();
        // `mod name;` declares a module defined elsewhere (its own file).
        if tag.kind == "module" && signature.ends_with(';') {
            continue;
        }
        let end = tag.range.end.saturating_sub(1).max(tag.range.start);
        outline.definitions.push(Definition {
            name: name.to_owned(),
            kind: tag.kind.to_owned(),
            line: line_of(tag.name.start),
            start_line: line_of(tag.range.start),
            end_line: line_of(end),
            signature: signature.to_owned(),
        });
    }
    for (name, forms) in references {
        // A name referenced plainly anywhere is a plain reference; the others keep their forms.
        let name = name.to_owned();
        if forms.contains(&Form::Plain) {
            outline.references.push(name);
            continue;
        }
        if forms.contains(&Form::Member) {
            outline.member_references.push(name.clone());
        }
        if forms.contains(&Form::Macro) {
            outline.macro_references.push(name);
        }
    }
    Ok(outline)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn defs(path: &str, text: &str) -> Vec<(String, String, u32, u32)> {
        outline(path, text)
            .expect("parsed")
            .definitions
            .into_iter()
            .map(|d| (d.name, d.kind, d.start_line, d.end_line))
            .collect()
    }

    fn def(name: &str, kind: &str, start: u32, end: u32) -> (String, String, u32, u32) {
        (name.to_owned(), kind.to_owned(), start, end)
    }

    #[test]
    fn every_grammar_configures() {
        for grammar in [
            Grammar::Rust,
            Grammar::Python,
            Grammar::JavaScript,
            Grammar::TypeScript,
            Grammar::Tsx,
            Grammar::Go,
            Grammar::Java,
            Grammar::C,
            Grammar::Cpp,
        ] {
            tag_query(grammar, Tags::All);
            tag_query(grammar, Tags::Definitions);
        }
        assert!(outline("README.md", "fn x() {}").is_none());
    }

    /// The definitions-only query finds what the whole one defines and declares, in every
    /// language (on the code-map fixtures), and no references: retrieval reads the same
    /// definitions from an index as without one.
    #[test]
    fn the_definitions_query_keeps_every_definition_pattern() {
        macro_rules! fixtures {
            ($($path:literal),*) => {
                [$(($path, include_str!(concat!("../../../tests/fixtures/code-map/", $path)))),*]
            };
        }
        let mut declared = 0;
        for (path, text) in fixtures!(
            "rust/src/store.rs",
            "python/app/models.py",
            "javascript/lib/router.js",
            "typescript/src/types.ts",
            "typescript/src/view.tsx",
            "go/server/server.go",
            "java/src/shop/Cart.java",
            "c/src/buffer.c",
            "cpp/src/shape.cpp"
        ) {
            let whole = outline(path, text).expect("parsed");
            assert!(!whole.definitions.is_empty(), "{path}");
            let citable = definitions(path, text).expect("parsed");
            for definition in &whole.definitions {
                assert!(citable.contains(definition), "{path}: {definition:?}");
            }
            // What the index reads from the outline.
            let indexed = crate::search::symbols::outlined(&whole);
            let mut named: Vec<(&str, u32)> = (indexed.iter())
                .map(|definition| (definition.name.as_str(), definition.line))
                .collect();
            let mut cited: Vec<(&str, u32)> = (citable.iter())
                .map(|definition| (definition.name.as_str(), definition.line))
                .collect();
            named.sort();
            cited.sort();
            assert_eq!(named, cited, "{path}");
            declared += whole.declarations.len();
            assert!(
                tagged(path, text, Tags::Definitions, Deadline::NONE)
                    .is_some_and(|outline| outline.is_ok_and(|o| o.references.is_empty())),
                "{path}"
            );
        }
        assert!(
            declared > 0,
            "fields, constants and enum members are declared"
        );
    }

    /// A field, a constant or a type alias is declared, not defined, in the whole query, even
    /// where a reference pattern tags its name too (a type alias's name is a type), and the
    /// definitions query finds it.
    #[test]
    fn what_a_file_declares_is_left_out_of_its_definitions_and_references() {
        for (path, text, name, line) in [
            ("a.ts", "type Props = { a: string };\n", "Props", 1),
            (
                "a.rs",
                "trait A {\n    type Error: Display;\n}\n",
                "Error",
                2,
            ),
            (
                "A.java",
                "class A {\n  static final int MAX = 1;\n}\n",
                "MAX",
                2,
            ),
            ("a.go", "package a\n\nconst Limit = 3\n", "Limit", 3),
        ] {
            let whole = outline(path, text).expect("parsed");
            let declared: Vec<(&str, u32)> = (whole.declarations.iter())
                .map(|declared| (declared.name.as_str(), declared.line))
                .collect();
            assert_eq!(declared, [(name, line)], "{path}");
            assert!(whole.definitions.iter().all(|d| d.name != name), "{path}");
            assert!(!whole.references.iter().any(|r| r == name), "{path}");
            let defined = definitions(path, text).expect("parsed");
            assert!(defined.iter().any(|d| d.name == name), "{path}");
        }
    }

    #[test]
    fn rust_definitions_span_their_items_and_references_are_names() {
        let text = "mod store;\n/// Adds.\npub fn add(a: u8) -> u8 {\n    helper(a)\n}\n\nconst MAX: u8 = 1;\nstruct Point {\n    x: Walk,\n}\nimpl Point {\n    fn norm(&self) -> u8 {\n        Vec::new(); self.x.go()\n    }\n}\n// fn ghost() {}\n";
        let outline = outline("src/a.rs", text).expect("parsed");
        let found: Vec<_> = outline
            .definitions
            .iter()
            .map(|d| (d.name.as_str(), d.kind.as_str(), d.start_line, d.end_line))
            .collect();
        assert_eq!(
            found,
            [
                ("add", "function", 3, 5),
                ("MAX", "constant", 7, 7),
                ("Point", "class", 8, 10),
                ("norm", "method", 12, 14)
            ]
        );
        assert_eq!(
            outline.definitions[0].signature,
            "pub fn add(a: u8) -> u8 {"
        );
        // A field's type is a reference (`x: Walk`), like a call or a path.
        assert_eq!(
            outline.references,
            ["Point", "Vec", "Walk", "helper", "new"]
        );
        assert_eq!(outline.member_references, ["go"]);
        assert!(!outline.references.iter().any(|r| r == "ghost"));
    }

    /// A reference keeps its form: plain (calls, paths, types, imports but Rust's), member
    /// (after `.` or `?.`, also across white space, a package's type too) or macro; a name
    /// used plainly anywhere is plain.
    #[test]
    fn references_keep_their_form() {
        let forms = |path: &str, text: &str| {
            let outline = outline(path, text).expect("parsed");
            (
                outline.references,
                outline.member_references,
                outline.macro_references,
            )
        };
        let rust = "use crate::a::{B, c::D};\nfn f(v: Vec<u8>) {\n    let p = store::Point { x: 1 };\n    v.iter()\n        .map(g);\n    format!(\"{}\", 1);\n    let r = 0..len();\n    h(); x.h();\n    y.\n    z();\n}\n";
        assert_eq!(
            forms("a.rs", rust),
            (
                ["Point", "Vec", "h", "len"].map(str::to_owned).to_vec(),
                vec!["iter".to_owned(), "map".to_owned(), "z".to_owned()],
                vec!["format".to_owned()]
            )
        );
        let python = "from store import Store, load as fetch\n\ndef f(p: Path):\n    Store().save()\n    p.exists()\n";
        let (plain, member, _) = forms("a.py", python);
        assert_eq!(plain, ["Path", "Store", "load"]);
        assert_eq!(member, ["exists", "save"]);
        let js = "import { render } from './view';\nrender(a?.b(), c.d());\n";
        let (plain, member, _) = forms("a.js", js);
        assert_eq!(plain, ["render"]);
        assert_eq!(member, ["b", "d"]);
        let java = "class A {\n    int pay(Cart cart) {\n        cart.add(3);\n        return 0;\n    }\n}\n";
        let (plain, member, _) = forms("A.java", java);
        assert_eq!(plain, ["Cart"]);
        assert_eq!(member, ["add"]);
        let go = "package a\n\nfunc f() {\n\ts := &pkg.Server{}\n\tpkg.Run()\n\tlocal()\n}\n";
        let (plain, member, _) = forms("a.go", go);
        assert_eq!(plain, ["local"]);
        assert_eq!(member, ["Run", "Server"]);
    }

    /// A macro named after a primitive type (snapbox's `str!`) is not a syntax error that
    /// hides what follows it; the name stays the original's, and only such invocations change.
    #[test]
    fn a_macro_named_after_a_primitive_type_parses() {
        let text = "mod lints;\nmod fix;\n\nfn a() {\n    check(str![[r#\"\n[OK]\n\"#]]);\n    u8!(1); core::str! {}\n}\nfn b() {}\n";
        assert_eq!(
            defs("t.rs", text),
            [def("a", "function", 4, 9), def("b", "function", 10, 10)]
        );
        let mut parser = tree_sitter::Parser::new();
        parser
            .set_language(&tree_sitter_rust::LANGUAGE.into())
            .expect("the grammar loads");
        let mut has_error = |text: &str| {
            parser
                .parse(text, None)
                .expect("parsed")
                .root_node()
                .has_error()
        };
        // The grammar's gap this works around: when this fails, `parseable` can go.
        assert!(has_error(text));
        assert!(!has_error(&parseable(Grammar::Rust, text)));
        let references = outline("t.rs", text).expect("parsed").references;
        assert!(references.iter().any(|r| r == "check"), "{references:?}");
        assert!(
            !references.iter().any(|r| r.ends_with('_')),
            "{references:?}"
        );
        let renamed = parseable(Grammar::Rust, text);
        assert_eq!(renamed.len(), text.len());
        assert_eq!(renamed.matches("st_!").count(), 2);
        assert!(renamed.contains("u_!(1)"));
        for untouched in [
            "let s: &str = x!(y);",
            "mystr![1]; a != b; str != c",
            "str!",
        ] {
            assert!(matches!(
                parseable(Grammar::Rust, untouched),
                Cow::Borrowed(_)
            ));
        }
        assert!(matches!(parseable(Grammar::Python, text), Cow::Borrowed(_)));
    }

    /// The names, kinds and spans a code ref may cite in `text` (the definitions query).
    fn citable_defs(path: &str, text: &str) -> Vec<(String, String, u32, u32)> {
        definitions(path, text)
            .expect("parsed")
            .into_iter()
            .map(|d| (d.name, d.kind, d.start_line, d.end_line))
            .collect()
    }

    /// Constants, variables, type aliases, enums and their members, fields and module-level
    /// assignments are definitions a code ref may cite, in every parsed language; the map's
    /// outline keeps to what it ranks.
    #[test]
    fn every_declaration_can_be_cited() {
        type Expected = &'static [(&'static str, &'static str, u32, u32)];
        let cases: [(&str, &str, Expected); 9] = [
            (
                "a.ts",
                "export const PATTERN = /^x$/;\ntype Id = string;\nlet count = 0;\nenum Mode {\n  A,\n}\nclass C {\n  size = 1;\n}\nconst run = () => {};\n",
                &[
                    ("PATTERN", "constant", 1, 1),
                    ("Id", "type", 2, 2),
                    ("count", "constant", 3, 3),
                    ("Mode", "enum", 4, 6),
                    ("C", "class", 7, 9),
                    ("size", "field", 8, 8),
                    ("run", "function", 10, 10),
                ],
            ),
            (
                "a.js",
                "var seen = new Set();\nexport const LIMIT = 3,\n  OTHER = 4;\nclass A {\n  n = 2;\n}\n",
                &[
                    ("seen", "variable", 1, 1),
                    ("LIMIT", "constant", 2, 3),
                    ("OTHER", "constant", 2, 3),
                    ("A", "class", 4, 6),
                    ("n", "field", 5, 5),
                ],
            ),
            (
                "a.py",
                "TIMEOUT = 5\nclass Config:\n    retries: int = 3\n    name = 'x'\n    def load(self):\n        local = 1\n",
                &[
                    ("TIMEOUT", "constant", 1, 1),
                    ("Config", "class", 2, 6),
                    ("retries", "field", 3, 3),
                    ("name", "field", 4, 4),
                    ("load", "method", 5, 6),
                ],
            ),
            (
                "a.rs",
                "const MAX: u8 = 1;\nstatic NAME: &str = \"x\";\ntype Id = u64;\nstruct P {\n    x: u8,\n}\nenum E {\n    One,\n}\ntrait T {\n    type Out;\n}\n",
                &[
                    ("MAX", "constant", 1, 1),
                    ("NAME", "constant", 2, 2),
                    ("Id", "class", 3, 3),
                    ("P", "class", 4, 6),
                    ("x", "field", 5, 5),
                    ("E", "class", 7, 9),
                    ("One", "field", 8, 8),
                    ("T", "interface", 10, 12),
                    ("Out", "type", 11, 11),
                ],
            ),
            (
                "a.go",
                "package a\n\nconst Limit = 3\nvar (\n\tcache = map[string]int{}\n)\ntype Alias = int\ntype S struct {\n\tName string\n}\n",
                &[
                    ("Limit", "constant", 3, 3),
                    ("cache", "variable", 5, 5),
                    ("Alias", "type", 7, 7),
                    ("S", "type", 8, 10),
                    ("Name", "field", 9, 9),
                ],
            ),
            (
                "A.java",
                "enum Color { RED }\nclass A {\n  static final int MAX = 3;\n  A() {}\n}\nrecord R(int x) {}\n",
                &[
                    ("Color", "enum", 1, 1),
                    ("RED", "constant", 1, 1),
                    ("A", "class", 2, 5),
                    ("MAX", "field", 3, 3),
                    ("A", "method", 4, 4),
                    ("R", "class", 6, 6),
                ],
            ),
            (
                "a.c",
                "#define SIZE 4\n#define MIN(a, b) ((a) < (b) ? (a) : (b))\ntypedef int id_t;\nint counter = 0;\nenum mode { FAST };\nstruct s { int field; };\n",
                &[
                    ("SIZE", "macro", 1, 1),
                    ("MIN", "macro", 2, 2),
                    ("id_t", "type", 3, 3),
                    ("counter", "variable", 4, 4),
                    ("mode", "type", 5, 5),
                    ("FAST", "constant", 5, 5),
                    ("s", "class", 6, 6),
                    ("field", "field", 6, 6),
                ],
            ),
            (
                "a.cpp",
                "namespace net {\nusing Port = int;\nint retries = 2;\n}\n",
                &[
                    ("net", "module", 1, 4),
                    ("Port", "type", 2, 2),
                    ("retries", "variable", 3, 3),
                ],
            ),
            (
                "a.tsx",
                "export const View = 1;\n",
                &[("View", "constant", 1, 1)],
            ),
        ];
        for (path, text, expected) in cases {
            let expected: Vec<(String, String, u32, u32)> = (expected.iter())
                .map(|(name, kind, start, end)| def(name, kind, *start, *end))
                .collect();
            assert_eq!(citable_defs(path, text), expected, "{path}");
        }
        // The map's outline keeps to what it ranks.
        assert!(
            !defs("a.ts", "type Id = string;\n")
                .iter()
                .any(|d| d.0 == "Id")
        );
    }

    /// Rust items inside a macro invocation's braces are definitions (tokio's `cfg_rt! { ... }`),
    /// nested ones too, on the lines where they are; a body that is not items yields nothing.
    #[test]
    fn items_inside_a_macro_body_can_be_cited() {
        let text = "cfg_rt! {\n    pub(crate) fn spawn_inner() {\n        go();\n    }\n    cfg_net! {\n        const PORT: u16 = 1;\n    }\n}\nimpl Handle {\n    cfg_rt! { pub fn spawn(&self) {} }\n}\nvec! { 1, 2 }\nfn after() {}\n";
        assert_eq!(
            citable_defs("a.rs", text),
            [
                def("spawn_inner", "function", 2, 4),
                def("PORT", "constant", 6, 6),
                def("spawn", "function", 10, 10),
                def("after", "function", 13, 13),
            ]
        );
    }

    #[test]
    fn each_language_yields_definitions_with_spans() {
        assert_eq!(
            defs(
                "a.py",
                "class Transport:\n    def send(self):\n        return 1\n\ndef main():\n    pass\n"
            ),
            [
                def("Transport", "class", 1, 3),
                def("send", "method", 2, 3),
                def("main", "function", 5, 6)
            ]
        );
        assert_eq!(
            defs(
                "a.js",
                "function go(x) {\n  return x;\n}\nclass A {\n  run() {}\n}\n"
            ),
            [
                def("go", "function", 1, 3),
                def("A", "class", 4, 6),
                def("run", "method", 5, 5)
            ]
        );
        assert_eq!(
            defs(
                "a.ts",
                "export interface Env {\n  a: string;\n}\nexport function serve(e: Env): void {\n}\n"
            ),
            [
                def("Env", "interface", 1, 3),
                def("serve", "function", 4, 5)
            ]
        );
        assert_eq!(
            defs("a.tsx", "function View() {\n  return <div/>;\n}\n"),
            [def("View", "function", 1, 3)]
        );
        assert_eq!(
            defs(
                "a.go",
                "package a\n\ntype Server struct{}\n\nfunc (s *Server) Serve() {\n}\n"
            ),
            [def("Server", "type", 3, 3), def("Serve", "method", 5, 6)]
        );
        assert_eq!(
            defs(
                "A.java",
                "class Token {\n  int parse(String s) {\n    return 1;\n  }\n}\n"
            ),
            [def("Token", "class", 1, 5), def("parse", "method", 2, 4)]
        );
        assert_eq!(
            defs(
                "a.c",
                "struct point { int x; };\nstatic int parse(const char *s)\n{\n  return 0;\n}\nchar *name(void) {\n  return 0;\n}\n"
            ),
            [
                def("point", "class", 1, 1),
                def("parse", "function", 2, 5),
                def("name", "function", 6, 8)
            ]
        );
        assert_eq!(
            defs(
                "a.cpp",
                "class Walker {\n  void step();\n};\nvoid Walker::step() {\n  go();\n}\n"
            ),
            [
                def("Walker", "class", 1, 3),
                def("step", "function", 2, 2),
                def("step", "method", 4, 6)
            ]
        );
    }
}
