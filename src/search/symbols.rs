//! Symbol definitions: the names a file defines (functions, methods, types, traits, classes,
//! interfaces, constants, macros), found line by line with one pattern set per language
//! family, and identifier normalisation, so that `SocketAddr`, `socket_addr`, `socket-addr`
//! and `socketaddr` are one name.
//!
//! Patterns, not parsers: a definition is a line that starts (after indentation, visibility
//! and modifiers) with a definition keyword and a name, or for C-like languages a line-start
//! signature that opens a body. Good enough to answer "where is X defined" in the languages
//! listed in [`language`]; a miss only costs the exact boost. Pure: no I/O.

use std::sync::LazyLock;

use regex::Regex;

/// One definition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Definition {
    /// The name as written.
    pub name: String,
    /// Its line (1-based).
    pub line: u32,
}

/// Language families with their own definition patterns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Language {
    /// Rust.
    Rust,
    /// Python.
    Python,
    /// JavaScript and TypeScript.
    Script,
    /// Go.
    Go,
    /// Java, Kotlin, C#, Scala.
    Jvm,
    /// C and C++.
    C,
}

/// The language of a path, by extension.
pub fn language(path: &str) -> Option<Language> {
    let name = path.rsplit('/').next().unwrap_or(path);
    let extension = name.rsplit_once('.')?.1.to_ascii_lowercase();
    Some(match extension.as_str() {
        "rs" => Language::Rust,
        "py" | "pyi" => Language::Python,
        "js" | "jsx" | "mjs" | "cjs" | "ts" | "tsx" | "mts" | "cts" => Language::Script,
        "go" => Language::Go,
        "java" | "kt" | "kts" | "cs" | "scala" => Language::Jvm,
        "c" | "h" | "cc" | "cpp" | "cxx" | "hpp" | "hh" | "hxx" | "m" | "mm" => Language::C,
        _ => return None,
    })
}

fn patterns(language: Language) -> &'static [Regex] {
    static RUST: LazyLock<Vec<Regex>> = LazyLock::new(|| {
        compile(&[
            r"^\s*(?:pub(?:\([^)]*\))?\s+)?(?:(?:async|const|unsafe|extern(?:\s+\x22[^\x22]*\x22)?|default)\s+)*(?:fn|struct|enum|trait|type|mod|union|static|const)\s+(?:mut\s+)?([A-Za-z_][A-Za-z0-9_]*)",
            r"^\s*macro_rules!\s*([A-Za-z_][A-Za-z0-9_]*)",
        ])
    });
    static PYTHON: LazyLock<Vec<Regex>> = LazyLock::new(|| {
        compile(&[
            r"^\s*(?:async\s+)?(?:def|class)\s+([A-Za-z_][A-Za-z0-9_]*)",
            r"^([A-Z][A-Z0-9_]+)\s*(?::[^=]*)?=",
        ])
    });
    static SCRIPT: LazyLock<Vec<Regex>> = LazyLock::new(|| {
        compile(&[
            r"^\s*(?:export\s+)?(?:default\s+)?(?:declare\s+)?(?:abstract\s+)?(?:async\s+)?(?:function\*?|class|interface|type|enum|namespace|const|let|var)\s+([A-Za-z_$][A-Za-z0-9_$]*)",
            r"^\s+(?:(?:public|private|protected|static|readonly|async|override|get|set)\s+)*([A-Za-z_$][A-Za-z0-9_$]*)\s*(?:<[^>]*>)?\([^)]*\)\s*(?::\s*[^={;]+)?\{\s*$",
        ])
    });
    static GO: LazyLock<Vec<Regex>> = LazyLock::new(|| {
        compile(&[
            r"^func\s+(?:\([^)]*\)\s*)?([A-Za-z_][A-Za-z0-9_]*)",
            r"^\s*(?:type|const|var)\s+([A-Za-z_][A-Za-z0-9_]*)",
        ])
    });
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
        Language::Rust => &RUST,
        Language::Python => &PYTHON,
        Language::Script => &SCRIPT,
        Language::Go => &GO,
        Language::Jvm => &JVM,
        Language::C => &C,
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

/// The definitions in `text`, a file at `path`, in line order.
pub fn definitions(path: &str, text: &str) -> Vec<Definition> {
    let Some(language) = language(path) else {
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
    if identifier.is_ascii() {
        return ascii_normalized(identifier).map(char::from).collect();
    }
    identifier
        .chars()
        .filter(|c| c.is_alphanumeric())
        .flat_map(char::to_lowercase)
        .collect()
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
    fn finds_definitions_in_each_language() {
        assert_eq!(
            names(
                "a.rs",
                "pub(crate) async fn run_it() {}\nstruct SocketAddr;\n  pub trait Walk {}\nconst MAX: u8 = 1;\nmacro_rules! hello {\nlet x = 1;\n"
            ),
            ["run_it", "SocketAddr", "Walk", "MAX", "hello"]
        );
        assert_eq!(
            names(
                "a.py",
                "class HTTPTransport:\n    async def handle_request(self):\nDEFAULT_TIMEOUT = 5\nx = 1\n"
            ),
            ["HTTPTransport", "handle_request", "DEFAULT_TIMEOUT"]
        );
        assert_eq!(
            names(
                "a.ts",
                "export const safeEncodeURI = () => {}\nexport default class Hono {\n  async fetch(request: Request): Promise<Response> {\nexport interface Env {}\nif (x) {\n"
            ),
            ["safeEncodeURI", "Hono", "fetch", "Env"]
        );
        assert_eq!(
            names(
                "a.go",
                "func (s *Server) ServeHTTP(w W, r *R) {\nfunc main() {\ntype Handler interface {\n"
            ),
            ["ServeHTTP", "main", "Handler"]
        );
        assert_eq!(
            names(
                "A.java",
                "public final class CancellationToken {\n    public static int parseCount(String s) {\n    return x(1);\n"
            ),
            ["CancellationToken", "parseCount"]
        );
        assert_eq!(
            names(
                "a.c",
                "struct socket_addr {\n#define MAX_LEN 4\nstatic int parse_header(const char *s)\n    if (x) {\nint x;\n"
            ),
            ["socket_addr", "MAX_LEN", "parse_header"]
        );
        assert!(names("a.md", "fn x() {}").is_empty());
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
}
