//! Symbol definitions: the names a file defines (functions, methods, types, traits, classes,
//! interfaces, constants, macros) as retrieval uses them, and identifier normalisation, so
//! that `SocketAddr`, `socket_addr`, `socket-addr` and `socketaddr` are one name.
//!
//! Files of a parsed language ([`crate::search::syntax`]) take their definitions from the
//! parser. The other languages of [`PatternLanguage`] (Kotlin, C#, Scala, Objective-C) keep
//! line patterns: a definition is a line that starts (after indentation, visibility and
//! modifiers) with a definition keyword and a name, or for C-like languages a line-start
//! signature that opens a body; a miss only costs the exact boost. Pure: no I/O.

use std::ops::Range;
use std::sync::LazyLock;

use regex::Regex;

use crate::search::syntax;
use crate::search::syntax::Deadline;
use crate::search::syntax::Grammar;
use crate::search::syntax::Late;
use crate::search::syntax::Outline;

/// One definition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Definition {
    /// The name as written.
    pub name: String,
    /// Its line (1-based).
    pub line: u32,
}

/// Language families that are not parsed and have definition patterns of their own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum PatternLanguage {
    /// Kotlin, C#, Scala.
    Jvm,
    /// Objective-C.
    ObjectiveC,
}

/// Whether definitions are found in files at `path` (parsed or by pattern).
pub fn has_definitions(path: &str) -> bool {
    syntax::grammar(path).is_some() || pattern_language(path).is_some()
}

/// The pattern language of a path, by extension.
fn pattern_language(path: &str) -> Option<PatternLanguage> {
    let name = path.rsplit('/').next().unwrap_or(path);
    let extension = name.rsplit_once('.')?.1.to_ascii_lowercase();
    Some(match extension.as_str() {
        "kt" | "kts" | "cs" | "scala" => PatternLanguage::Jvm,
        "m" | "mm" => PatternLanguage::ObjectiveC,
        _ => return None,
    })
}

fn patterns(language: PatternLanguage) -> &'static [Regex] {
    static JVM: LazyLock<Vec<Regex>> = LazyLock::new(|| {
        compile(&[
            r"^\s*(?:(?:public|private|protected|internal|static|final|abstract|sealed|open|data|partial|override|readonly)\s+)*(?:class|interface|enum|record|struct|object|fun|trait|@interface)\s+([A-Za-z_][A-Za-z0-9_]*)",
            r"^\s*(?:(?:public|private|protected|internal|static|final|abstract|synchronized|native|override|virtual|async)\s+)+[A-Za-z_][A-Za-z0-9_<>\[\],.? ]*\s+([A-Za-z_][A-Za-z0-9_]*)\s*\(",
        ])
    });
    static C: LazyLock<Vec<Regex>> = LazyLock::new(|| {
        compile(&[
            r"^\s*(?:typedef\s+)?(?:struct|class|union|enum(?:\s+class)?|namespace)\s+([A-Za-z_][A-Za-z0-9_]*)\s*(?:[:{]|$)",
            r"^#\s*define\s+([A-Za-z_][A-Za-z0-9_]*)",
            r"^(?:[A-Za-z_][A-Za-z0-9_:<>,*&]*\s+)+[*&]*(?:[A-Za-z_][A-Za-z0-9_]*::)*~?([A-Za-z_][A-Za-z0-9_]*)\s*\([^;]*$",
        ])
    });
    match language {
        PatternLanguage::Jvm => &JVM,
        PatternLanguage::ObjectiveC => &C,
    }
}

fn compile(patterns: &[&str]) -> Vec<Regex> {
    patterns
        .iter()
        .filter_map(|pattern| Regex::new(pattern).ok())
        .collect()
}

/// Keywords that C-like signatures can start with but that never name a definition.
const NOT_NAMES: &[&str] = &[
    "if", "for", "while", "switch", "return", "else", "do", "catch", "sizeof", "new", "delete",
];

/// The definitions in `text`, a file at `path`: the parser's for a parsed language, the
/// patterns' otherwise.
pub fn definitions(path: &str, text: &str) -> Vec<Definition> {
    definitions_by(path, text, Deadline::NONE).unwrap_or_default()
}

/// [`definitions`] within the command's `deadline`: [`Late`] when it passed before the
/// parser was done with the file.
pub fn definitions_by(path: &str, text: &str, deadline: Deadline) -> Result<Vec<Definition>, Late> {
    Ok(match syntax::definitions_by(path, text, deadline)? {
        Some(found) => (found.into_iter())
            .map(|definition| Definition {
                name: definition.name,
                line: definition.line,
            })
            .collect(),
        None => pattern_definitions(path, text),
    })
}

/// Words after which a name may be defined in C, C++, JavaScript and TypeScript: a line of
/// theirs that names one is asked about unless the word settles it ([`script_defines`]).
const DEFINING_WORDS: &[&str] = &[
    "fn",
    "struct",
    "enum",
    "union",
    "trait",
    "type",
    "mod",
    "const",
    "static",
    "macro_rules",
    "class",
    "interface",
    "def",
    "function",
    "func",
    "var",
    "let",
    "record",
    "namespace",
    "typedef",
    "object",
];

/// What a scan learns from one line about the definitions of the names it wants.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LineDefinitions {
    /// The line defines none of them.
    None,
    /// The line defines these (normalised), by the keyword before each.
    Named(Vec<String>),
    /// The line may define one: the file's definitions must be found (parsed, or by pattern).
    Ask,
}

/// What the `line` of `text` (its byte range, without its terminator), a file at `path`, defines
/// among the names `wanted` accepts (given it normalised), for a scan without an index, where
/// parsing every file that mentions a query word would cost more than the whole search.
///
/// - In Rust, Python and Go a definition starts with a keyword of the language
///   ([`defining_word`]: `fn`, `struct`, `def`, `class`, `func`, ...; in Go a method's receiver
///   comes between `func` and its name), so the line itself says ([`LineDefinitions::Named`]).
/// - So do a script's `function`, `class`, `interface` and `enum`, which the parser tags
///   wherever they stand, its `const`, `let` and `var` at the top of the program (not
///   indented), and a script line that heads a method (modifiers, the name, its parameters and
///   the `{` of its body). A script's parameter list or arguments may close on a later line
///   (`resolve({` ... `})`, a call; `const resolve = async (` ... `) => {`, a function): what
///   follows the closing parenthesis settles it as on one line ([`LOOKAHEAD_LINES`]).
/// - So do Java's `class`, `interface`, `enum` and `record`, and a Java line whose parameters
///   close and open a body ([`java_signature`]).
/// - Otherwise in C, C++, Java, JavaScript and TypeScript, whose functions and methods need no
///   keyword, a name after a defining word or followed by `(` (not reached through `.` or `->`,
///   a method call) may be defined there, and the parser settles it ([`LineDefinitions::Ask`]);
///   lines of the pattern languages that name one are asked about too (the patterns cost
///   little), and so is a line that may lie inside a comment or a string ([`may_be_inside_text`]).
///
/// A comment line, a name inside quotes, a local variable (an indented `const`, `let` or `var`
/// of a script, a Rust `let`) define nothing the parser would tag: on vite such lines sent 30 of
/// the 40 files a four-word query parsed to the parser. An index holds the parser's definitions
/// for every parsed file.
pub fn line_definitions(
    path: &str,
    text: &str,
    line: Range<usize>,
    wanted: impl Fn(&str) -> bool,
) -> LineDefinitions {
    let from = line.start;
    let line = &text[line];
    let grammar = syntax::grammar(path);
    let keyword_free = match grammar {
        None if pattern_language(path).is_some() && names_any(line, &wanted) => {
            return LineDefinitions::Ask;
        }
        None => return LineDefinitions::None,
        Some(Grammar::Rust | Grammar::Python | Grammar::Go) => false,
        Some(_) => true,
    };
    let code = line.trim_start();
    if is_comment(code, grammar) {
        return LineDefinitions::None;
    }
    let indented = code.len() < line.len();
    let go_func = grammar == Some(Grammar::Go) && code.starts_with("func ");
    let script = matches!(
        grammar,
        Some(Grammar::JavaScript | Grammar::TypeScript | Grammar::Tsx)
    );
    let mut named = Vec::new();
    let mut ask = false;
    let mut name = String::new();
    // Found once a wanted name is: most matched lines hold none.
    let mut quoted = None;
    each_identifier(line, |start, end| {
        normalize_into(&line[start..end], &mut name);
        if !wanted(&name) {
            return;
        }
        let quoted = quoted.get_or_insert_with(|| quoted_spans(line, grammar));
        if quoted.iter().any(|span| span.contains(&start)) {
            return;
        }
        let before = line[..start].trim_end().trim_end_matches('!');
        // A word after `'` is a lifetime (`&'static str`), not a keyword.
        let previous = Some(last_word(before))
            .filter(|word| !before[..before.len() - word.len()].ends_with('\''))
            .unwrap_or_default();
        let java = grammar == Some(Grammar::Java);
        // In a script a name after `>` is compared or an arrow function's body, not defined;
        // in Java after `.<T>` it is a generic method called with its type arguments.
        let called = before.ends_with('.')
            || before.ends_with("->")
            || (script && before.ends_with('>'))
            || (java && before.ends_with('>') && before.contains(".<"))
            || only_calls(before);
        let opens_call = line[end..].trim_start().starts_with('(');
        // What follows the name, where a parenthesis it opens may close.
        let rest = if script {
            within_reach(&text[from + end..])
        } else {
            &line[end..]
        };
        // A Rust `let` is never a definition, nor a keyword of a language that reserves it
        // (`const fn`, Go's receiver); a script's variables are at the top of the program, or
        // anywhere when they hold a function.
        let reserved = !keyword_free && defining_word(grammar, &line[start..end], false);
        if reserved || (grammar == Some(Grammar::Rust) && previous == "let") {
            return;
        }
        let verdict = if script && indented && matches!(previous, "const" | "let" | "var") {
            held(rest)
        } else if defining_word(grammar, previous, indented) || (go_func && opens_call && !called) {
            if keyword_free && !java && !(script && script_defines(previous, indented)) {
                Verdict::Unsure
            } else {
                Verdict::Defines
            }
        } else if keyword_free && !called && opens_call {
            parenthesised(grammar, script, &line[start..end], before, rest)
        } else if !called && declares_field(grammar, before, rest) {
            Verdict::Defines
        } else {
            Verdict::Not
        };
        match verdict {
            Verdict::Defines => push_once(&mut named, &name),
            Verdict::Not => {}
            Verdict::Unsure => ask = true,
        }
    });
    match (ask, named.is_empty()) {
        (true, _) => LineDefinitions::Ask,
        (false, false) if may_be_inside_text(&text[..from], grammar) => LineDefinitions::Ask,
        (false, false) => LineDefinitions::Named(named),
        (false, true) => LineDefinitions::None,
    }
}

/// Whether a line after `before` (the file's text up to it) may be inside a block comment
/// (a `/*` the text does not close) or inside a string that spans lines: a Python docstring's
/// example `def resolve():`, a Go raw string, a Java text block. What it seems to define, only
/// the parser can tell. The quotes are counted, not matched: a `/*` or a quote inside another
/// string (`"src/**/*.rs"`) may make a line seem inside text, which only costs a parse. Rust's
/// strings are not counted (its `"`, `'"'` and raw strings would need more than a count, and
/// cargo's tests hold whole programs in strings), nor is anything of the scripts (their globs,
/// `'**/*.ts'`, and template literals are everywhere): asking about those lines made cargo's
/// scan a fifth slower and vite's half again as slow.
fn may_be_inside_text(before: &str, grammar: Option<Grammar>) -> bool {
    let bytes = before.as_bytes();
    let odd = |quotes: &[u8]| memchr::memmem::find_iter(bytes, quotes).count() % 2 == 1;
    let inside_string = match grammar {
        Some(Grammar::Python) => return odd(br#"""""#) || odd(b"'''"),
        Some(Grammar::JavaScript | Grammar::TypeScript | Grammar::Tsx) => return false,
        Some(Grammar::Go) => odd(b"`"),
        Some(Grammar::Java) => odd(br#"""""#),
        _ => false,
    };
    let opened = memchr::memmem::rfind(bytes, b"/*");
    inside_string
        || opened.is_some_and(|open| memchr::memmem::rfind(&bytes[open..], b"*/").is_none())
}

/// What a line says about a name on it: it defines the name, it does not, or only the parser
/// can tell.
enum Verdict {
    /// It defines the name.
    Defines,
    /// It does not.
    Not,
    /// Only the parser can tell.
    Unsure,
}

/// Whether `word` before a name defines it in `grammar`, as the language's own keywords say:
/// Python's `for func in` or a Go function's local `var obj` defines nothing the parser tags
/// (Go's `var` does at the top of the file, a line that is not `indented`). The other languages
/// take any of [`DEFINING_WORDS`].
fn defining_word(grammar: Option<Grammar>, word: &str, indented: bool) -> bool {
    match grammar {
        Some(Grammar::Rust) => matches!(
            word,
            "fn" | "struct"
                | "enum"
                | "union"
                | "trait"
                | "type"
                | "mod"
                | "const"
                | "static"
                | "macro_rules"
        ),
        Some(Grammar::Python) => matches!(word, "def" | "class"),
        Some(Grammar::Go) => {
            matches!(word, "func" | "type" | "const") || (word == "var" && !indented)
        }
        Some(Grammar::Java) => matches!(word, "class" | "interface" | "enum" | "record"),
        _ => DEFINING_WORDS.contains(&word),
    }
}

/// Whether a name between `before` and `rest` is a field the parser tags: in Java a name
/// declared after an access modifier or `static` (a method's locals take neither), before `=`
/// or `;`; in Rust a struct's field, after `pub` (`pub(crate)`) and before `:`.
/// Fields without those words (package-private in Java, private in Rust) are not told apart
/// from locals and parameters by a line, and are not named.
fn declares_field(grammar: Option<Grammar>, before: &str, rest: &str) -> bool {
    let rest = rest.trim_start();
    let before = before.trim_start();
    match grammar {
        Some(Grammar::Java) => {
            let declared =
                rest.starts_with(';') || (rest.starts_with('=') && !rest.starts_with("=="));
            let modifier = (before.split(|c: char| !c.is_ascii_alphanumeric() && c != '_'))
                .any(|word| matches!(word, "private" | "public" | "protected" | "static"));
            declared && modifier && !before.contains(['(', '=', ';', '{'])
        }
        Some(Grammar::Rust) => {
            let public = before == "pub"
                || (before.strip_prefix("pub(")).is_some_and(|inside| {
                    inside.ends_with(')') && !inside[..inside.len() - 1].contains([')', ' '])
                });
            public && rest.starts_with(':') && !rest.starts_with("::")
        }
        _ => false,
    }
}

/// What a `written` name of C, C++, Java or a `script` says, followed by `(`, where nothing
/// `before` it says it is only called, and `rest` follows it: a call when its arguments end a
/// call ([`ends_a_call`]); in a script a definition when it heads a method
/// ([`is_method_head`]), in Java when its parameters close on the line and its body follows
/// ([`java_signature`]); else only the parser can tell. A line-start `catch (err) {` heads a
/// block, or a method of that name, and `function (` an anonymous function; the parser tags a
/// script class's constructor in a declaration file only.
fn parenthesised(
    grammar: Option<Grammar>,
    script: bool,
    written: &str,
    before: &str,
    rest: &str,
) -> Verdict {
    if ends_a_call(before, rest, script) {
        return Verdict::Not;
    }
    const BLOCK_WORDS: &[&str] = &[
        "if",
        "for",
        "while",
        "switch",
        "catch",
        "with",
        "function",
        "constructor",
        "synchronized",
        "try",
    ];
    let java = grammar == Some(Grammar::Java);
    let keyword = BLOCK_WORDS.contains(&written);
    if !keyword && ((script && is_method_head(before, rest)) || (java && java_signature(rest))) {
        Verdict::Defines
    } else {
        Verdict::Unsure
    }
}

/// Adds `name` to `named` unless it is there already (a line may name a definition twice).
fn push_once(named: &mut Vec<String>, name: &str) {
    if !named.iter().any(|known| known == name) {
        named.push(name.to_owned());
    }
}

/// Whether a script's name that `before` precedes (the line up to it) and `rest` follows (its
/// line and the lines after) heads a method: only modifiers come before it, and there is one at
/// least (`async resolve(`, a call never follows one), or its parameters close and are followed
/// on their line by a return type (an interface's `resolve(id: string): string`) or by the `{`
/// of its body (`css() {`; a call is never followed by a block on its line), not by an arrow.
fn is_method_head(before: &str, rest: &str) -> bool {
    const MODIFIERS: &[&str] = &[
        "static",
        "async",
        "get",
        "set",
        "public",
        "private",
        "protected",
        "readonly",
        "override",
        "abstract",
        "*",
    ];
    let mut words = before.split_whitespace().peekable();
    let modified = words.peek().is_some();
    if !words.all(|word| word == "*" || MODIFIERS.contains(&word.trim_start_matches('*'))) {
        return false;
    }
    let Some(inside) = rest.trim_start().strip_prefix('(') else {
        return false;
    };
    let Some(after) = after_closing(inside).map(str::trim) else {
        return modified;
    };
    // `async (id) => {`: the parameters of an arrow function, not a method's.
    !after.contains("=>") && (modified || after.ends_with('{') || after.starts_with(':'))
}

/// Whether `rest`, what follows a Java name followed by `(` on its line, heads the body of a
/// method or a constructor: its parameters close on the line, and the `{` of its body follows
/// them, perhaps after a `throws` clause. Java never follows a call with a block (an anonymous
/// class's `new Type() {` is a call after `new`, which [`only_calls`] settles): such a line
/// defines the name as the parser would tag it, without parsing the file. A declaration
/// without a body (`Id resolve(String name);`) is asked about: the parser tags an interface's
/// method, not an annotation type's element.
fn java_signature(rest: &str) -> bool {
    let Some(after) = (rest.trim_start().strip_prefix('(')).and_then(after_closing) else {
        return false;
    };
    let after = after.trim_start();
    let after = match after.strip_prefix("throws ") {
        Some(thrown) => thrown.trim_start_matches(|c: char| c != '{'),
        None => after,
    };
    after.starts_with('{')
}

/// Whether a script's name after `word` is a definition the parser tags wherever it stands (a
/// function, class, interface, enum or namespace), or a variable at the top of the program (a
/// line that is not `indented`).
fn script_defines(word: &str, indented: bool) -> bool {
    matches!(
        word,
        "function" | "class" | "interface" | "enum" | "namespace"
    ) || (!indented && matches!(word, "const" | "let" | "var"))
}

/// What `rest`, what follows a declared variable's name in a script (its line, and the lines
/// after it), gives it: a function, which the parser tags as a definition wherever the
/// variable is declared, when its value starts with `function` or `async function`, or is an
/// arrow function (`async` and a parameter list, or one parameter, then `=>`, perhaps after a
/// return type); unsure when its parameter list does not close within reach.
fn held(rest: &str) -> Verdict {
    let line = first_line(rest);
    let value = line.find('=').map_or("", |at| rest[at + 1..].trim_start());
    let value = value.strip_prefix("async").map_or(value, str::trim_start);
    if value.starts_with("function") {
        return Verdict::Defines;
    }
    let after_parameters = match value.strip_prefix('(') {
        Some(inside) => match after_closing(inside) {
            Some(after) => after,
            None => return Verdict::Unsure,
        },
        None => first_line(value.trim_start_matches(is_identifier_char)),
    };
    let after = after_parameters.trim_start();
    if after.starts_with("=>") || (after.starts_with(':') && after.contains("=>")) {
        Verdict::Defines
    } else {
        Verdict::Not
    }
}

/// How many lines after its own a script line's parenthesis may close for the line to be
/// settled without the parser. A call's arguments spread over lines (`resolve({` in each of
/// vite's fourteen test servers) sent a file to the parser for every query naming the call.
const LOOKAHEAD_LINES: usize = 40;

/// `text` up to the end of the [`LOOKAHEAD_LINES`]th line after its first.
fn within_reach(text: &str) -> &str {
    memchr::memchr_iter(b'\n', text.as_bytes())
        .nth(LOOKAHEAD_LINES)
        .map_or(text, |at| &text[..at])
}

/// The rest of the line after the parenthesis that closes the one `inside` follows (the text
/// after an opening parenthesis). Quoted strings and comments are skipped. `None` when it does
/// not close within `inside`, or when a template literal or a `/` that may start a regular
/// expression could hide a parenthesis: then only the parser can tell.
fn after_closing(inside: &str) -> Option<&str> {
    let bytes = inside.as_bytes();
    let mut depth = 1_usize;
    let mut at = 0;
    while let Some(&byte) = bytes.get(at) {
        match byte {
            b'(' => depth += 1,
            b')' => {
                depth -= 1;
                if depth == 0 {
                    return Some(first_line(&inside[at + 1..]));
                }
            }
            b'"' | b'\'' => at = string_end(bytes, at)?,
            b'/' if bytes.get(at + 1) == Some(&b'/') => {
                at += memchr::memchr(b'\n', &bytes[at..])?;
            }
            b'/' if bytes.get(at + 1) == Some(&b'*') => {
                at += 2 + memchr::memmem::find(&bytes[at + 2..], b"*/")? + 1;
            }
            b'/' if !divides(&bytes[..at]) => return None,
            b'`' => return None,
            _ => {}
        }
        at += 1;
    }
    None
}

/// `text` up to its first line end.
fn first_line(text: &str) -> &str {
    text.split('\n').next().unwrap_or(text)
}

/// The offset of the quote that closes the string opened at `open` in `bytes`, with backslash
/// escapes; `None` when the line ends first.
fn string_end(bytes: &[u8], open: usize) -> Option<usize> {
    let quote = bytes[open];
    let mut at = open + 1;
    while let Some(&byte) = bytes.get(at) {
        match byte {
            b'\\' => at += 1,
            b'\n' => return None,
            _ if byte == quote => return Some(at),
            _ => {}
        }
        at += 1;
    }
    None
}

/// Whether a `/` after `before` divides: it follows an operand (a name, a number, or a closing
/// bracket). Anywhere else it starts a regular expression in a script.
fn divides(before: &[u8]) -> bool {
    before
        .iter()
        .rev()
        .find(|byte| !byte.is_ascii_whitespace())
        .is_some_and(|&byte| byte.is_ascii_alphanumeric() || b"_$)]".contains(&byte))
}

/// Whether `code` (a line, trimmed at the start) is a comment in `grammar`: a line comment, or
/// in the C family and the scripts the start or a continuation (`* ...`) of a block comment.
fn is_comment(code: &str, grammar: Option<Grammar>) -> bool {
    match grammar {
        Some(Grammar::Python) => code.starts_with('#'),
        _ => {
            code.starts_with("//")
                || code.starts_with("/*")
                || code == "*"
                || code.starts_with("* ")
                || code.starts_with("*\t")
        }
    }
}

/// Words after which a name followed by `(` is called, never defined.
const CALLING_WORDS: &[&str] = &[
    "assert",
    "await",
    "case",
    "delete",
    "do",
    "else",
    "if",
    "in",
    "instanceof",
    "new",
    "of",
    "return",
    "throw",
    "typeof",
    "while",
    "yield",
];

/// Whether a name that `before` (the line up to it, trimmed) precedes can only be called or
/// read there, not defined: after an operator, an opening bracket, a separator, or a word such
/// as `return` or `await`. A definition's name follows the start of the line, a type, a
/// modifier, a defining word, `*`, `&`, `>` or `::` (`char *name(`, `Map<K, V> name(`,
/// `Type::name(`). It is what keeps `x = resolve(id)` and `return resolve(id)` from sending a
/// file to the parser in a scan: on vite, such calls sent most TypeScript files that mention a
/// query word there.
fn only_calls(before: &str) -> bool {
    if before.ends_with("::") {
        return false;
    }
    let last = before.chars().next_back();
    if last.is_some_and(|c| "=(,!?:+-/%|^~[{;".contains(c)) {
        return true;
    }
    let word = last_word(before);
    CALLING_WORDS.contains(&word)
}

/// Whether `rest`, what follows a name followed by `(` (its line, and in a script the lines
/// after it), shows the name called: its arguments close and what follows them on their line
/// is `.`, `)` or `,` (`load().then(...)`), or `;` (`resolve(id);`), or, in JavaScript and
/// TypeScript, nothing (`resolve()` as a statement: a method definition goes on with `{` or a
/// return type). A C definition may put its `{` on the next line, so there nothing after the
/// arguments settles nothing. Nor does a `;` in C, C++ and Java once something stands
/// `before` the name (the line up to it, which [`only_calls`] let through: a type): that is a
/// declaration without a body, a C prototype (`int resolve(int id);`) or an interface's method
/// (`Id resolve(String name);`), which the parser tags as a definition.
fn ends_a_call(before: &str, rest: &str, script: bool) -> bool {
    let Some(inside) = rest.trim_start().strip_prefix('(') else {
        return false;
    };
    after_closing(inside).is_some_and(|after| {
        let after = after.trim_start();
        let statement = after.starts_with(';') && (script || before.is_empty());
        statement || after.starts_with(['.', ')', ',']) || (script && after.is_empty())
    })
}

/// The byte ranges of `line` inside string quotes (`"`, a backquote, and `'` but in Rust, where
/// it opens a lifetime), with backslash escapes: a name there is text, not defined. A quote
/// left open runs to the line's end.
fn quoted_spans(line: &str, grammar: Option<Grammar>) -> Vec<Range<usize>> {
    let single = grammar != Some(Grammar::Rust);
    let bytes = line.as_bytes();
    let mut spans = Vec::new();
    let mut at = 0;
    while let Some(&byte) = bytes.get(at) {
        if matches!(byte, b'"' | b'`') || (single && byte == b'\'') {
            let Some(end) = string_end(bytes, at) else {
                spans.push(at + 1..line.len());
                break;
            };
            spans.push(at + 1..end);
            at = end;
        }
        at += 1;
    }
    spans
}

/// Whether any identifier of `line` is one `wanted` accepts (normalised).
fn names_any(line: &str, wanted: &impl Fn(&str) -> bool) -> bool {
    let mut found = false;
    each_identifier(line, |start, end| {
        found |= wanted(&normalize(&line[start..end]))
    });
    found
}

/// Whether `c` may be part of an identifier in the languages here (`$` for the scripts).
fn is_identifier_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_' || c == '$'
}

/// The identifier `before` ends with, or nothing when it ends with another character.
fn last_word(before: &str) -> &str {
    before
        .rsplit(|c| !is_identifier_char(c))
        .next()
        .unwrap_or_default()
}

/// Calls `visit` with the byte range of every identifier of `line`.
fn each_identifier(line: &str, mut visit: impl FnMut(usize, usize)) {
    let mut at = 0;
    while let Some(start) = line[at..].find(is_identifier_char).map(|found| at + found) {
        let end = line[start..]
            .find(|c| !is_identifier_char(c))
            .map_or(line.len(), |len| start + len);
        visit(start, end);
        at = end;
    }
}

/// The definitions of a parsed file's outline and what it declares besides, in line order:
/// what [`definitions`] finds in the same file.
pub fn outlined(outline: &Outline) -> Vec<Definition> {
    let defined =
        (outline.definitions.iter()).map(|definition| (&definition.name, definition.line));
    let declared = (outline.declarations.iter()).map(|declared| (&declared.name, declared.line));
    let mut found: Vec<Definition> = defined
        .chain(declared)
        .map(|(name, line)| Definition {
            name: name.clone(),
            line,
        })
        .collect();
    found.sort_by_key(|definition| definition.line);
    found
}

/// The definitions the line patterns find in `text`, in line order.
fn pattern_definitions(path: &str, text: &str) -> Vec<Definition> {
    let Some(language) = pattern_language(path) else {
        return Vec::new();
    };
    let patterns = patterns(language);
    let mut found = Vec::new();
    for (index, line) in text.lines().enumerate() {
        if line.len() > 400 {
            continue;
        }
        for pattern in patterns {
            if let Some(name) = pattern.captures(line).and_then(|captures| captures.get(1)) {
                let name = name.as_str();
                if !NOT_NAMES.contains(&name) {
                    found.push(Definition {
                        name: name.to_owned(),
                        line: crate::search::chunk::line_number(index),
                    });
                }
                break;
            }
        }
    }
    found
}

/// An identifier in one spelling whatever its convention: lowercase letters and digits only
/// (`SocketAddr`, `socket_addr`, `socket-addr` → `socketaddr`).
pub fn normalize(identifier: &str) -> String {
    let mut normalized = String::new();
    normalize_into(identifier, &mut normalized);
    normalized
}

/// [`normalize`] into `normalized`, replacing what it held: a scan normalises every name of
/// every matched line, and reusing one string spares an allocation each.
fn normalize_into(identifier: &str, normalized: &mut String) {
    normalized.clear();
    if identifier.is_ascii() {
        normalized.extend(ascii_normalized(identifier).map(char::from));
    } else {
        let kept = identifier.chars().filter(|c| c.is_alphanumeric());
        normalized.extend(kept.flat_map(char::to_lowercase));
    }
}

/// Whether `raw` normalizes to `normalized` (see [`normalize`]), without building the string.
pub fn normalizes_to(raw: &str, normalized: &str) -> bool {
    if raw.is_ascii() {
        return ascii_normalized(raw).eq(normalized.bytes());
    }
    normalize(raw) == normalized
}

/// [`normalize`] of an ASCII identifier, byte by byte: the common case, without the
/// per-character Unicode case mapping.
fn ascii_normalized(identifier: &str) -> impl Iterator<Item = u8> + '_ {
    identifier
        .bytes()
        .filter(u8::is_ascii_alphanumeric)
        .map(|b| b.to_ascii_lowercase())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_says_what_it_defines_where_a_keyword_tells() {
        let wanted = |name: &str| ["package", "socketaddr"].contains(&name);
        let named = |names: &[&str]| {
            LineDefinitions::Named(names.iter().map(|name| (*name).to_owned()).collect())
        };
        for (path, line, expected) in [
            (
                "a.rs",
                "pub fn package(&self) -> &Package {",
                named(&["package"]),
            ),
            ("a.rs", "pub struct SocketAddr {", named(&["socketaddr"])),
            ("a.rs", "macro_rules! package {", named(&["package"])),
            ("a.py", "def package(self):", named(&["package"])),
            (
                "a.go",
                "func (s *Server) Package(name string) {",
                named(&["package"]),
            ),
            ("a.c", "static int package(void) {", LineDefinitions::Ask),
            (
                "A.java",
                "    public Package package (String name) {",
                named(&["package"]),
            ),
            (
                "A.java",
                "  public <T> T package(Reader in) throws IOException, Bad {",
                named(&["package"]),
            ),
            (
                "A.java",
                "  Package(int id) { this.id = id; }",
                named(&["package"]),
            ),
            (
                "A.java",
                "  Package package(int id) throws",
                LineDefinitions::Ask,
            ),
            ("a.js", "  package(name) {", named(&["package"])),
            (
                "a.ts",
                "  async package(name: string): Promise<void> {",
                named(&["package"]),
            ),
            (
                "a.cc",
                "Package Registry::package(int id) {",
                LineDefinitions::Ask,
            ),
            ("a.c", "char *package(void)", LineDefinitions::Ask),
            // A declaration without a body: a prototype, an interface's or abstract method.
            ("a.h", "int package(int id);", LineDefinitions::Ask),
            (
                "A.java",
                "    Package package(String name);",
                LineDefinitions::Ask,
            ),
            (
                "A.java",
                "  abstract Map<String, Package> package() throws IOException;",
                LineDefinitions::Ask,
            ),
            (
                "A.java",
                "public final class Package<T> {",
                named(&["package"]),
            ),
            (
                "A.java",
                "  record Package(String name) {",
                named(&["package"]),
            ),
            ("a.c", "package (int id)", LineDefinitions::Ask),
            ("a.ts", "  package({ id }: Options) {", named(&["package"])),
            ("a.ts", "  package({", LineDefinitions::Ask),
            (
                "A.java",
                "  Map<String, Package> package(String name) {",
                named(&["package"]),
            ),
            ("A.java", "  Package package(", LineDefinitions::Ask),
            (
                "a.ts",
                "const socket_addr = () => {",
                named(&["socketaddr"]),
            ),
            ("A.kt", "val x = package", LineDefinitions::Ask),
            ("a.ts", "export const package = load()", named(&["package"])),
            (
                "a.js",
                "  export async function package(id) {",
                named(&["package"]),
            ),
            (
                "a.tsx",
                "    class Package extends Base {",
                named(&["package"]),
            ),
            ("a.ts", "  const package = async (", LineDefinitions::Ask),
            (
                "a.js",
                "    let package = function () {",
                named(&["package"]),
            ),
            (
                "a.ts",
                "  const package: Load = (id) => load(id)",
                named(&["package"]),
            ),
            (
                "a.ts",
                "  const package = (p: string) => path.resolve(root, p)",
                named(&["package"]),
            ),
            (
                "a.ts",
                "  package(specifier: string, parent?: string): string",
                named(&["package"]),
            ),
            ("a.ts", "  async package(", named(&["package"])),
            ("a.ts", "  get package() {", named(&["package"])),
            (
                "a.ts",
                "  static async *package(id: Id): Promise<void> {",
                named(&["package"]),
            ),
            ("a.js", "  package(id) { return id }", LineDefinitions::Ask),
            ("a.ts", "declare namespace Package {", named(&["package"])),
            (
                "a.rs",
                "impl<'a> Registry<'a> { fn package() {} }",
                named(&["package"]),
            ),
            // Fields the line tells from locals and parameters.
            (
                "A.java",
                "  private static final Package package = load();",
                named(&["package"]),
            ),
            (
                "A.java",
                "  protected Package package;",
                named(&["package"]),
            ),
            (
                "A.java",
                "  public final Map<String, Package> package;",
                named(&["package"]),
            ),
            ("a.rs", "    pub package: Package,", named(&["package"])),
            (
                "a.rs",
                "    pub(crate) package: Package,",
                named(&["package"]),
            ),
        ] {
            assert_eq!(
                defined_on_first_line(path, line, wanted),
                expected,
                "{path}: {line}"
            );
        }
        for (path, line) in [
            ("a.rs", "let id = self.package.id();"),
            ("a.rs", "    let name = package(ws);"),
            ("a.rs", "use std::net::SocketAddr;"),
            ("a.rs", "pub fn packages() {}"),
            ("a.rs", "fn resolve(package: &Package) {"),
            // Fields and locals a line does not tell apart, and what only uses a name.
            ("A.java", "    final Package package = load();"),
            ("A.java", "  Package package;"),
            ("A.java", "  private static final int x = package;"),
            ("A.java", "  private Package other = package == null;"),
            ("a.rs", "    package: Package,"),
            ("a.rs", "    pub package::Item,"),
            ("a.rs", "pub(crate) use package::Item;"),
            ("a.go", "    x := Package(name)"),
            ("a.c", "ptr->package(x);"),
            ("a.js", "    ws.package().name()"),
            ("a.ts", "  const found = package(id)"),
            ("a.ts", "  return await package(id, { ssr })"),
            ("a.ts", "  if (!package(id)) {"),
            ("a.js", "  foo(bar, package(id));"),
            ("A.java", "    return new Package(name);"),
            ("A.java", "    Runnable r = new Package(name) {"),
            ("A.java", "    List<T> all = Lists.<T>package(a);"),
            ("A.java", "    Lists.<T>package(a);"),
            ("A.java", "    assert package(a);"),
            ("a.py", "    for def_ in package:"),
            ("a.go", "\tvar package Package"),
            ("a.rs", "pub fn native() -> &'static package {"),
            (
                "A.java",
                "  private static SocketAddr resolve(String host) {",
            ),
            ("A.java", "    var package = resolve(host);"),
            ("a.c", "  x = cond ? package(a) : 0;"),
            ("a.ts", "        package()"),
            ("a.c", "    package(a, (b));"),
            ("a.js", "  package(id).then(done)"),
            ("a.c", "// the package is resolved here"),
            ("notes.txt", "fn package() {}"),
            ("a.ts", "    const package = load()"),
            ("a.js", "\tlet package"),
            ("a.rs", "    let package = 1;"),
            ("a.ts", "test('static package', () => {"),
            ("a.c", "  puts(\"struct package(\");"),
            ("a.rs", "    // fn package() {}"),
            ("a.py", "# def package(self):"),
            ("a.ts", "  const package = (await load()).map((x) => x)"),
            ("a.ts", "   * package (the package) is resolved"),
            ("a.ts", "  await expect.poll(() => package('.x'))"),
            ("a.js", "  foo(bar).package(id) {"),
        ] {
            assert_eq!(
                defined_on_first_line(path, line, wanted),
                LineDefinitions::None,
                "{path}: {line}"
            );
        }
        // A line-start `catch (err) {` heads a block, or a method of that name: the parser says.
        assert_eq!(
            defined_on_first_line("a.js", "  catch (err) {", |name| name == "catch"),
            LineDefinitions::Ask
        );
        // What a line inside a block comment or a docstring seems to define, the parser says.
        for (path, text) in [
            (
                "A.java",
                "/* return new Reader() {\n  public int package() {\n",
            ),
            ("a.rs", "/*\nfn package() {}\n*/\n"),
            ("a.py", "def f():\n    \"\"\"\n    def package():\n"),
            ("a.go", "const fixture = `\nfunc package() {}\n`\n"),
            ("A.java", "String fixture = \"\"\"\n  void package() {\n"),
        ] {
            // The line that seems to define `package`.
            let at = text.find("package(").expect("a definition");
            let start = text[..at].rfind('\n').map_or(0, |end| end + 1);
            let line = start..start + first_line(&text[start..]).len();
            let found = line_definitions(path, text, line, |name| name == "package");
            assert_eq!(found, LineDefinitions::Ask, "{path}");
        }
        let closed = "/* a */ let q = '\"';\nfn package() {}\n";
        assert_eq!(
            line_definitions("a.rs", closed, 21..36, |name| name == "package"),
            LineDefinitions::Named(vec!["package".to_owned()])
        );
        // Nor does a keyword define itself: Go's receiver, a script's anonymous function.
        let keywords = |name: &str| matches!(name, "func" | "function");
        assert_eq!(
            defined_on_first_line("a.go", "func (s *Server) Run() {", keywords),
            LineDefinitions::None
        );
        assert_eq!(
            defined_on_first_line("a.ts", "  function (issue: Issue) {", keywords),
            LineDefinitions::Ask
        );
        // Nor is a Java block a body: `synchronized (lock) {` defines no `synchronized`.
        let synchronized = |name: &str| name == "synchronized";
        assert_eq!(
            defined_on_first_line("A.java", "    synchronized (lock) {", synchronized),
            LineDefinitions::Ask
        );
    }

    /// What the first line of `text` defines.
    fn defined_on_first_line(
        path: &str,
        text: &str,
        wanted: impl Fn(&str) -> bool,
    ) -> LineDefinitions {
        line_definitions(path, text, 0..first_line(text).len(), wanted)
    }

    #[test]
    fn a_script_line_is_settled_by_where_its_parenthesis_closes_lines_later() {
        let wanted = |name: &str| ["resolve", "async"].contains(&name);
        let far = format!("  resolve(\n{})\n", "    a,\n".repeat(LOOKAHEAD_LINES));
        for (text, expected) in [
            ("  resolve({\n    root,\n  })\n", LineDefinitions::None),
            (
                "  resolve({\n    root,\n  }).then(done)\n",
                LineDefinitions::None,
            ),
            (
                "  resolve(\n    /* ) */ id, // )\n  );\n",
                LineDefinitions::None,
            ),
            ("  resolve({\n    find: '(',\n  })\n", LineDefinitions::None),
            ("  resolve(\n    width / 2,\n  )\n", LineDefinitions::None),
            (
                "  const resolve = (\n    a + b\n  )\n",
                LineDefinitions::None,
            ),
            (
                "  resolve(\n    id: string,\n  ): string {\n",
                LineDefinitions::Named(vec!["resolve".to_owned()]),
            ),
            (
                "  resolve(\n    id,\n  ) {\n",
                LineDefinitions::Named(vec!["resolve".to_owned()]),
            ),
            (
                "  const resolve = async (\n    id: string,\n  ) => {\n",
                LineDefinitions::Named(vec!["resolve".to_owned()]),
            ),
            // A parenthesis may hide in a regular expression or a template literal.
            (
                "  resolve({\n    find: /\\(/,\n  })\n",
                LineDefinitions::Ask,
            ),
            ("  resolve({\n    id: `${(`,\n  })\n", LineDefinitions::Ask),
            ("  resolve({\n    id: 'open,\n  })\n", LineDefinitions::Ask),
            (far.as_str(), LineDefinitions::Ask),
            ("  resolve({\n    root,\n", LineDefinitions::Ask),
            ("  async (\n    root,\n  ) => {\n", LineDefinitions::Ask),
        ] {
            assert_eq!(
                defined_on_first_line("a.ts", text, wanted),
                expected,
                "{text}"
            );
        }
        // Only scripts look past the line: a C definition may put its `{` on the next line.
        assert_eq!(
            defined_on_first_line("a.c", "  resolve(\n    id\n  );\n", wanted),
            LineDefinitions::Ask
        );
    }

    #[test]
    fn spellings_normalize_alike_with_or_without_building_the_string() {
        for (raw, normalized) in [
            ("SocketAddr", "socketaddr"),
            ("socket_addr", "socketaddr"),
            ("socket-addr.rs", "socketaddrrs"),
            ("Ünïcode_Name", "ünïcodename"),
            ("ΣΊΣΥΦΟΣ", "σίσυφοσ"),
        ] {
            assert_eq!(normalize(raw), normalized, "{raw}");
            assert!(normalizes_to(raw, normalized), "{raw}");
            assert!(!normalizes_to(raw, "socket"), "{raw}");
        }
    }

    fn names(path: &str, text: &str) -> Vec<String> {
        definitions(path, text)
            .into_iter()
            .map(|definition| definition.name)
            .collect()
    }

    #[test]
    fn unparsed_languages_keep_their_patterns_and_parsed_ones_parse() {
        assert_eq!(
            names(
                "A.kt",
                "data class CancellationToken(val a: Int)\n    public static int parseCount(String s) {\n    return x(1);\n"
            ),
            ["CancellationToken", "parseCount"]
        );
        assert_eq!(
            names(
                "a.m",
                "struct socket_addr {\n#define MAX_LEN 4\nstatic int parse_header(const char *s)\n    if (x) {\nint x;\n"
            ),
            ["socket_addr", "MAX_LEN", "parse_header"]
        );
        // A definition in a comment is no definition once the file is parsed.
        assert_eq!(
            names(
                "a.rs",
                "// fn ghost() {}\npub(crate) async fn run_it() {}\n"
            ),
            ["run_it"]
        );
        assert!(names("a.md", "fn x() {}").is_empty());
        // What a line without a body asks the parser about, the parser tags.
        assert_eq!(names("a.h", "int resolve(int id);\n"), ["resolve"]);
        assert_eq!(
            names("A.java", "interface A {\n  Id resolve(String name);\n}\n"),
            ["A", "resolve"]
        );
        assert!(has_definitions("a.rs") && has_definitions("a.scala") && !has_definitions("a.md"));
    }

    #[test]
    fn identifiers_normalize_across_conventions() {
        for spelling in [
            "SocketAddr",
            "socket_addr",
            "socket-addr",
            "SOCKET_ADDR",
            "socketaddr",
        ] {
            assert_eq!(normalize(spelling), "socketaddr");
        }
    }

    /// What a scan says a line defines, without the parser, the parser tags on that line: the
    /// scan may ask, never name what the parser would not.
    #[test]
    fn what_a_line_names_the_parser_tags() {
        let files = [
            (
                "A.java",
                "public final class Store<T> {\n  private static final Map<String, T> cache = new HashMap<>();\n  /* public int draft() {\n  } */\n  @Override public T load(Reader in) throws IOException {\n    return read(in);\n  }\n  Store(int id) { this.id = id; }\n}\n",
            ),
            (
                "a.go",
                "package a\n\nvar Cache = 1\n\nfunc (s *Server) Run() {\n\tvar local int\n\tdoc := `\nfunc Fake() {}\n`\n}\n",
            ),
            (
                "a.py",
                "class Server:\n    \"\"\"\n    def fake(self):\n    \"\"\"\n    def run(self):\n        for func in self.funcs:\n            pass\n",
            ),
            (
                "a.rs",
                "pub const fn native() -> &'static str {\n    \"x\"\n}\n/*\nfn ghost() {}\n*/\npub struct Point {\n    pub(crate) x: u8,\n}\n",
            ),
            (
                "a.ts",
                "export function load(id: string) {\n  return function (x) { return x }\n}\n",
            ),
        ];
        for (path, text) in files {
            let parsed = definitions(path, text);
            let mut start = 0;
            for (at, line) in text.split('\n').enumerate() {
                let range = start..start + line.len();
                start = range.end + 1;
                let LineDefinitions::Named(names) = line_definitions(path, text, range, |_| true)
                else {
                    continue;
                };
                let number = u32::try_from(at + 1).expect("a short file");
                for name in names {
                    assert!(
                        (parsed.iter())
                            .any(|found| found.line == number && normalize(&found.name) == name),
                        "{path}:{number} `{line}` names {name}, which the parser does not tag"
                    );
                }
            }
        }
    }
}
