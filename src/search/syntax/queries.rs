//! The text of each grammar's tags queries: the grammar crate's own query with our patterns
//! around it ([`supplement`]), the declarations a code reference may cite ([`citable`]), cut to
//! the definitions for [`Tags::Definitions`], and without the doc-comment captures
//! ([`without_doc_captures`]). Text only: compiling and running a query is the parent module's.

use std::sync::LazyLock;

use regex::Regex;

use super::Grammar;
use super::Tags;

/// Our patterns for a grammar: definitions put before the crate's tags query (they win over
/// its patterns for the same name), references after it (they never take a name the crate's
/// query tags).
fn supplement(grammar: Grammar) -> (&'static [&'static str], &'static str) {
    const CPP_DEFINITIONS: &[&str] = &[
        r#"
(function_definition declarator: (function_declarator declarator: (field_identifier) @name)) @definition.function
(function_definition declarator: (function_declarator declarator: (qualified_identifier name: (identifier) @name))) @definition.method
(function_definition declarator: (reference_declarator (function_declarator declarator: (identifier) @name))) @definition.function
"#,
        C_DEFINITIONS[0],
    ];
    const C_DEFINITIONS: &[&str] = &[r#"
(function_definition declarator: (function_declarator declarator: (identifier) @name)) @definition.function
(function_definition declarator: (pointer_declarator declarator: (function_declarator declarator: (identifier) @name))) @definition.function
"#];
    const C_REFERENCES: &str = r#"
(call_expression function: (identifier) @name) @reference.call
(type_identifier) @name @reference.type
"#;
    match grammar {
        Grammar::Rust => (
            &[r#"
(const_item name: (identifier) @name) @definition.constant
(static_item name: (identifier) @name) @definition.constant
"#],
            r#"
(call_expression function: (scoped_identifier path: (identifier) @name)) @reference.type
(call_expression function: (scoped_identifier name: (identifier) @name)) @reference.call
(struct_expression name: (type_identifier) @name) @reference.type
(struct_expression name: (scoped_type_identifier name: (type_identifier) @name)) @reference.type
(type_identifier) @name @reference.type
"#,
        ),
        Grammar::C => (C_DEFINITIONS, C_REFERENCES),
        Grammar::Cpp => (CPP_DEFINITIONS, C_REFERENCES),
        Grammar::Python => (
            &[r#"
(class_definition body: (block (function_definition name: (identifier) @name) @definition.method))
(class_definition body: (block (decorated_definition definition: (function_definition name: (identifier) @name) @definition.method)))
"#],
            r#"
(call function: (attribute attribute: (identifier) @name)) @reference.call
(import_from_statement name: (dotted_name (identifier) @name)) @reference.import
(import_from_statement name: (aliased_import name: (dotted_name (identifier) @name))) @reference.import
(type (identifier) @name) @reference.type
(generic_type (identifier) @name) @reference.type
(class_definition superclasses: (argument_list (identifier) @name)) @reference.implementation
"#,
        ),
        Grammar::JavaScript => (
            &[],
            r#"
(import_specifier name: (identifier) @name) @reference.import
(class_heritage (identifier) @name) @reference.implementation
"#,
        ),
        Grammar::TypeScript | Grammar::Tsx => (
            &[],
            r#"
(import_specifier name: (identifier) @name) @reference.import
(extends_clause value: (identifier) @name) @reference.implementation
(type_identifier) @name @reference.type
"#,
        ),
        Grammar::Java => (&[], "(type_identifier) @name @reference.type\n"),
        Grammar::Go => (&[], ""),
    }
}

/// The declarations a code reference may cite besides the map's definitions (docs/freshness.md#reference-checks):
/// constants, variables, type aliases, enums and their members, fields and module-level
/// assignments. They come after every other pattern, so a name another pattern tags keeps that
/// tag (`const f = () => {}` stays a function). Only [`Tags::Definitions`] tags them as
/// definitions; [`Tags::All`] tags them as declarations, which the map leaves out: it ranks
/// files by what they define and use, and a file's every field and constant would crowd its
/// signature lines. Rust's `@nested` captures are the brace bodies of macro invocations among
/// items (`cfg_rt! { fn spawn_inner() {} }`), whose items are definitions too, or declarations
/// for [`Tags::All`] ([`tagged`]).
fn citable(grammar: Grammar) -> &'static [&'static str] {
    const MODULE_VARIABLES: &str = r#"
(program (lexical_declaration (variable_declarator name: (identifier) @name)) @definition.constant)
(program (variable_declaration (variable_declarator name: (identifier) @name)) @definition.variable)
(program (export_statement declaration: (lexical_declaration (variable_declarator name: (identifier) @name))) @definition.constant)
(program (export_statement declaration: (variable_declaration (variable_declarator name: (identifier) @name))) @definition.variable)
"#;
    const C_DECLARATIONS: &str = r#"
(preproc_def name: (identifier) @name) @definition.macro
(preproc_function_def name: (identifier) @name) @definition.macro
(enumerator name: (identifier) @name) @definition.constant
(field_declaration declarator: (field_identifier) @name) @definition.field
(translation_unit (declaration declarator: (identifier) @name) @definition.variable)
(translation_unit (declaration declarator: (init_declarator declarator: (identifier) @name)) @definition.variable)
(translation_unit (declaration declarator: (pointer_declarator declarator: (identifier) @name)) @definition.variable)
(translation_unit (declaration declarator: (init_declarator declarator: (pointer_declarator declarator: (identifier) @name))) @definition.variable)
"#;
    const JS_FIELDS: &str =
        "(field_definition property: (property_identifier) @name) @definition.field\n";
    const TS_DECLARATIONS: &str = r#"
(public_field_definition name: (property_identifier) @name) @definition.field
(type_alias_declaration name: (type_identifier) @name) @definition.type
(enum_declaration name: (identifier) @name) @definition.enum
(internal_module name: (identifier) @name) @definition.module
"#;
    const CPP_DECLARATIONS: &str = r#"
(alias_declaration name: (type_identifier) @name) @definition.type
(namespace_definition name: (namespace_identifier) @name) @definition.module
(namespace_definition body: (declaration_list (declaration declarator: (init_declarator declarator: (identifier) @name)) @definition.variable))
"#;
    match grammar {
        Grammar::Rust => &[r#"
(field_declaration name: (field_identifier) @name) @definition.field
(enum_variant name: (identifier) @name) @definition.field
(associated_type name: (type_identifier) @name) @definition.type
(source_file (macro_invocation (token_tree) @nested (#match? @nested "^\\{")))
(declaration_list (macro_invocation (token_tree) @nested (#match? @nested "^\\{")))
"#],
        Grammar::Python => &[r#"
(class_definition body: (block (expression_statement (assignment left: (identifier) @name) @definition.field)))
"#],
        Grammar::JavaScript => &[MODULE_VARIABLES, JS_FIELDS],
        Grammar::TypeScript | Grammar::Tsx => &[MODULE_VARIABLES, TS_DECLARATIONS],
        Grammar::Go => &[r#"
(const_spec name: (identifier) @name) @definition.constant
(source_file (var_declaration (var_spec name: (identifier) @name) @definition.variable))
(source_file (var_declaration (var_spec_list (var_spec name: (identifier) @name) @definition.variable)))
(field_declaration name: (field_identifier) @name) @definition.field
(type_alias name: (type_identifier) @name) @definition.type
"#],
        Grammar::Java => &[r#"
(field_declaration declarator: (variable_declarator name: (identifier) @name)) @definition.field
(constant_declaration declarator: (variable_declarator name: (identifier) @name)) @definition.constant
(enum_declaration name: (identifier) @name) @definition.enum
(enum_constant name: (identifier) @name) @definition.constant
(record_declaration name: (identifier) @name) @definition.class
(annotation_type_declaration name: (identifier) @name) @definition.interface
(constructor_declaration name: (identifier) @name) @definition.method
"#],
        Grammar::C => &[C_DECLARATIONS],
        Grammar::Cpp => &[C_DECLARATIONS, CPP_DECLARATIONS],
    }
}

/// The top-level patterns of `query` that tag a definition, each with what follows it up to
/// the next pattern (its captures and predicates): a pattern starts wherever a `(` or `[`
/// opens at depth 0, outside strings and `;` comments.
fn definition_patterns(query: &str) -> String {
    let mut starts = Vec::new();
    let (mut depth, mut in_string, mut escaped, mut in_comment) = (0usize, false, false, false);
    for (at, c) in query.char_indices() {
        match c {
            _ if in_comment => in_comment = c != '\n',
            _ if in_string => {
                in_string = escaped || c != '"';
                escaped = !escaped && c == '\\';
            }
            ';' => in_comment = true,
            '"' => in_string = true,
            '(' | '[' => {
                if depth == 0 {
                    starts.push(at);
                }
                depth += 1;
            }
            ')' | ']' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    starts.push(query.len());
    (starts.windows(2))
        .map(|pair| &query[pair[0]..pair[1]])
        .filter(|pattern| pattern.contains("@definition."))
        .collect::<Vec<&str>>()
        .join("\n")
}

/// The language of a grammar and its tags query: our definitions, the crate's query, our
/// references (TypeScript's query covers only what it adds to JavaScript, so the JavaScript
/// query comes with it); with [`Tags::Definitions`], only the patterns that tag definitions.
/// The declarations a code reference may cite ([`citable`]) come last in both, as definitions
/// for [`Tags::Definitions`] and as declarations for [`Tags::All`], so that retrieval with an
/// index and without one reads the same definitions from a file.
pub(super) fn query_source(grammar: Grammar, tags: Tags) -> (tree_sitter::Language, String) {
    let (language, queries): (tree_sitter::Language, &[&str]) = match grammar {
        Grammar::Rust => (
            tree_sitter_rust::LANGUAGE.into(),
            &[tree_sitter_rust::TAGS_QUERY],
        ),
        Grammar::Python => (
            tree_sitter_python::LANGUAGE.into(),
            &[tree_sitter_python::TAGS_QUERY],
        ),
        Grammar::JavaScript => (
            tree_sitter_javascript::LANGUAGE.into(),
            &[tree_sitter_javascript::TAGS_QUERY],
        ),
        Grammar::TypeScript => (
            tree_sitter_typescript::LANGUAGE_TYPESCRIPT.into(),
            &[
                tree_sitter_typescript::TAGS_QUERY,
                tree_sitter_javascript::TAGS_QUERY,
            ],
        ),
        Grammar::Tsx => (
            tree_sitter_typescript::LANGUAGE_TSX.into(),
            &[
                tree_sitter_typescript::TAGS_QUERY,
                tree_sitter_javascript::TAGS_QUERY,
            ],
        ),
        Grammar::Go => (
            tree_sitter_go::LANGUAGE.into(),
            &[tree_sitter_go::TAGS_QUERY],
        ),
        Grammar::Java => (
            tree_sitter_java::LANGUAGE.into(),
            &[tree_sitter_java::TAGS_QUERY],
        ),
        Grammar::C => (tree_sitter_c::LANGUAGE.into(), &[tree_sitter_c::TAGS_QUERY]),
        Grammar::Cpp => (
            tree_sitter_cpp::LANGUAGE.into(),
            &[tree_sitter_cpp::TAGS_QUERY],
        ),
    };
    let (before, after) = supplement(grammar);
    let mut query = before.concat();
    for part in queries {
        query.push('\n');
        query.push_str(&without_doc_captures(part));
    }
    query.push_str(after);
    if tags == Tags::Definitions {
        query = definition_patterns(&query);
    }
    for part in citable(grammar) {
        query.push('\n');
        match tags {
            Tags::Definitions => query.push_str(part),
            // Declared, not defined: the map leaves them out, retrieval reads them.
            Tags::All => query.push_str(&part.replace("@definition.", "@declaration.")),
        }
    }
    (language, query)
}

/// `query` without its doc-comment captures: the JavaScript and Go crates tag the comments
/// before a definition (`(comment)* @doc .`, with `#strip!` and `#select-adjacent!` predicates
/// on `@doc`), which nothing here reads. They are most of what compiling those queries costs:
/// without them the JavaScript and TypeScript definitions queries compile in 355 M
/// instructions instead of 592 M (callgrind), and a query walk does not try every run of
/// comments before each definition. The definitions tagged are the same.
fn without_doc_captures(query: &str) -> String {
    static DOC: LazyLock<Regex> = LazyLock::new(|| {
        // A fixed pattern, compiled by a unit test.
        #[allow(clippy::expect_used)]
        Regex::new(r"\(comment\)\*\s*@doc\s*\.|\(#[a-z-]+!\s+@doc\b[^)]*\)")
            .expect("the doc capture pattern compiles")
    });
    DOC.replace_all(query, "").into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn definition_patterns_keep_the_patterns_that_tag_definitions() {
        let query =
            "; c\n(a) @definition.x\n(b (#eq? @n \"(\")) @reference.y\n[(c) (d)] @definition.z";
        assert_eq!(
            definition_patterns(query),
            "(a) @definition.x\n\n[(c) (d)] @definition.z"
        );
    }

    #[test]
    fn doc_captures_and_their_predicates_are_cut() {
        let query = "(\n  (comment)* @doc\n  .\n  (function_declaration name: (identifier) @name) @definition.function\n  (#strip! @doc \"^//\\\\s*\")\n  (#set-adjacent! @doc @definition.function)\n  (#not-eq? @name \"x\")\n)";
        let cut = without_doc_captures(query);
        assert!(!cut.contains("@doc"), "{cut}");
        assert!(cut.contains("(#not-eq? @name \"x\")"), "{cut}");
        assert!(
            cut.contains("(function_declaration name: (identifier) @name) @definition.function")
        );
        // Every crate query still compiles without them, and none keeps a doc capture.
        for grammar in [
            Grammar::JavaScript,
            Grammar::TypeScript,
            Grammar::Tsx,
            Grammar::Go,
        ] {
            for tags in [Tags::All, Tags::Definitions] {
                let (language, query) = query_source(grammar, tags);
                assert!(!query.contains("@doc"), "{grammar:?}");
                tree_sitter::Query::new(&language, &query).expect("compiles");
            }
        }
    }
}
