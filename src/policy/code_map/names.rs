//! How much a name tells about which file it means, when nothing but the name says it: the
//! names a language or its standard library provides mean no file of the repository unless
//! the file imports them from one ([`provided`]), short, common and test-fixture names could
//! mean almost anything ([`telling`], [`is_fixture`]), and a test's own names are nobody
//! else's ([`Definer::Test`]). Only references the map matches by name alone are weighed so;
//! a reference followed through an import means its file.

use super::partners::is_named_test;
use super::uses::Scoping;

/// Names every Rust file has without importing them (the prelude's, and the variants and
/// types its code names qualified by a standard module: `Poll::Ready`, `io::Error`,
/// `fmt::Result`), which a repository's look-alikes (`type Err`, `struct Ready`) must not
/// draw.
const RUST: &[&str] = &[
    "Ok",
    "Err",
    "Some",
    "None",
    "Box",
    "Vec",
    "String",
    "Option",
    "Result",
    "Self",
    "Default",
    "Clone",
    "Copy",
    "Debug",
    "Display",
    "Send",
    "Sync",
    "Sized",
    "Unpin",
    "Iterator",
    "IntoIterator",
    "From",
    "Into",
    "TryFrom",
    "TryInto",
    "AsRef",
    "AsMut",
    "Drop",
    "Fn",
    "FnMut",
    "FnOnce",
    "ToString",
    "ToOwned",
    "PartialEq",
    "Eq",
    "PartialOrd",
    "Ord",
    "Hash",
    "Future",
    "IntoFuture",
    "Poll",
    "Ready",
    "Pending",
    "Pin",
    "Context",
    "Error",
    "Rc",
    "Arc",
    "Cell",
    "RefCell",
    "Mutex",
    "RwLock",
    "HashMap",
    "HashSet",
    "BTreeMap",
    "BTreeSet",
    "VecDeque",
    "Duration",
    "Instant",
    "Path",
    "PathBuf",
    "Ordering",
    "Formatter",
    "Cow",
    "PhantomData",
    "Output",
    "Item",
    "Target",
    "Deref",
    "DerefMut",
    "Borrow",
    "Extend",
    "FromIterator",
    "FromStr",
    "Write",
    "Read",
    "Any",
    "Waker",
    "Stream",
];

/// Python's builtins.
const PYTHON: &[&str] = &[
    "print",
    "len",
    "str",
    "int",
    "float",
    "bool",
    "bytes",
    "bytearray",
    "list",
    "dict",
    "set",
    "frozenset",
    "tuple",
    "object",
    "type",
    "isinstance",
    "issubclass",
    "range",
    "enumerate",
    "zip",
    "map",
    "filter",
    "sorted",
    "reversed",
    "min",
    "max",
    "sum",
    "any",
    "all",
    "open",
    "super",
    "property",
    "staticmethod",
    "classmethod",
    "getattr",
    "setattr",
    "hasattr",
    "delattr",
    "repr",
    "hash",
    "id",
    "iter",
    "next",
    "abs",
    "round",
    "format",
    "callable",
    "vars",
    "dir",
    "input",
    "divmod",
    "pow",
    "chr",
    "ord",
    "hex",
    "oct",
    "bin",
    "slice",
    "memoryview",
    "complex",
    "globals",
    "locals",
    "exec",
    "eval",
    "compile",
    "Exception",
    "BaseException",
    "ValueError",
    "TypeError",
    "KeyError",
    "IndexError",
    "RuntimeError",
    "AttributeError",
    "NotImplementedError",
    "NotImplemented",
    "StopIteration",
    "OSError",
    "IOError",
    "AssertionError",
    "ImportError",
    "LookupError",
    "NameError",
    "SyntaxError",
    "UnicodeError",
    "UnicodeDecodeError",
    "ZeroDivisionError",
    "FileNotFoundError",
    "PermissionError",
    "TimeoutError",
    "KeyboardInterrupt",
    "SystemExit",
    "Warning",
    "DeprecationWarning",
    "UserWarning",
    "RecursionError",
    "OverflowError",
    "Ellipsis",
];

/// JavaScript's and TypeScript's globals, their utility types and the test runners' globals.
const SCRIPT: &[&str] = &[
    "Array",
    "Object",
    "String",
    "Number",
    "Boolean",
    "Promise",
    "Map",
    "Set",
    "WeakMap",
    "WeakSet",
    "Error",
    "TypeError",
    "RangeError",
    "SyntaxError",
    "JSON",
    "Math",
    "Date",
    "RegExp",
    "Symbol",
    "BigInt",
    "Function",
    "Proxy",
    "Reflect",
    "Intl",
    "URL",
    "URLSearchParams",
    "console",
    "require",
    "parseInt",
    "parseFloat",
    "isNaN",
    "setTimeout",
    "clearTimeout",
    "setInterval",
    "clearInterval",
    "queueMicrotask",
    "fetch",
    "Buffer",
    "process",
    "globalThis",
    "window",
    "document",
    "Record",
    "Partial",
    "Readonly",
    "Pick",
    "Omit",
    "Required",
    "ReturnType",
    "Parameters",
    "Awaited",
    "Exclude",
    "Extract",
    "NonNullable",
    "InstanceType",
    "Uint8Array",
    "ArrayBuffer",
    "TextEncoder",
    "TextDecoder",
    "describe",
    "it",
    "test",
    "expect",
    "beforeEach",
    "afterEach",
    "beforeAll",
    "afterAll",
    "vi",
    "jest",
];

/// Go's predeclared names.
const GO: &[&str] = &[
    "append",
    "len",
    "cap",
    "make",
    "new",
    "panic",
    "recover",
    "print",
    "println",
    "copy",
    "delete",
    "close",
    "error",
    "string",
    "int",
    "int8",
    "int16",
    "int32",
    "int64",
    "uint",
    "uint8",
    "uint16",
    "uint32",
    "uint64",
    "uintptr",
    "float32",
    "float64",
    "byte",
    "rune",
    "bool",
    "any",
    "comparable",
    "complex",
    "real",
    "imag",
    "min",
    "max",
    "clear",
];

/// What every Java file has from `java.lang`.
const JAVA: &[&str] = &[
    "String",
    "Object",
    "Integer",
    "Long",
    "Boolean",
    "Double",
    "Float",
    "Character",
    "Byte",
    "Short",
    "Number",
    "Math",
    "System",
    "Thread",
    "Runnable",
    "Exception",
    "RuntimeException",
    "Error",
    "Throwable",
    "IllegalArgumentException",
    "IllegalStateException",
    "NullPointerException",
    "UnsupportedOperationException",
    "IndexOutOfBoundsException",
    "Override",
    "Deprecated",
    "SuppressWarnings",
    "FunctionalInterface",
    "SafeVarargs",
    "Iterable",
    "Comparable",
    "CharSequence",
    "StringBuilder",
    "Class",
    "Void",
    "Enum",
    "Record",
    "AutoCloseable",
    "Cloneable",
    "ClassCastException",
    "InterruptedException",
];

/// The C library's and C++ standard library's common names.
const C: &[&str] = &[
    "printf",
    "fprintf",
    "sprintf",
    "snprintf",
    "malloc",
    "calloc",
    "realloc",
    "free",
    "memcpy",
    "memmove",
    "memset",
    "memcmp",
    "strlen",
    "strcmp",
    "strncmp",
    "strcpy",
    "strncpy",
    "strcat",
    "strchr",
    "strdup",
    "assert",
    "exit",
    "abort",
    "size_t",
    "ssize_t",
    "uint8_t",
    "uint16_t",
    "uint32_t",
    "uint64_t",
    "int8_t",
    "int16_t",
    "int32_t",
    "int64_t",
    "FILE",
    "string",
    "vector",
    "map",
    "unordered_map",
    "set",
    "unique_ptr",
    "shared_ptr",
    "make_unique",
    "make_shared",
    "move",
    "forward",
    "pair",
    "optional",
    "function",
];

/// Whether the language of `scoping` provides `name` to every file without an import.
pub fn provided(scoping: Scoping, name: &str) -> bool {
    let names = match scoping {
        Scoping::Rust => RUST,
        Scoping::Python => PYTHON,
        Scoping::Script => SCRIPT,
        Scoping::Go => GO,
        Scoping::Java => JAVA,
        Scoping::C => C,
    };
    names.contains(&name)
}

/// Names that many unrelated definitions share: a file defining one says little about what
/// a reference to it means.
const COMMON: &[&str] = &[
    "test", "main", "run", "get", "set", "new", "init", "setup", "data", "value", "values", "name",
    "call", "apply", "next", "open", "close", "read", "write", "start", "stop", "update", "create",
    "make", "build", "parse", "load", "save", "handle", "process", "default", "config", "options",
    "helper", "wrapper", "func", "callback", "foo", "bar", "baz", "check", "execute", "render",
    "visit", "reset", "clear", "add", "remove", "insert", "push", "pop", "len", "size", "from",
    "into", "with", "format", "error", "done", "result",
];

/// How much a reference matched by its name alone tells: 1 for a distinctive name, less for
/// a short one (`f`, `cb`, `app`) and a common one (`test`, `run`, `parse`).
fn telling(name: &str) -> f64 {
    match name.chars().count() {
        0..=2 => 0.1,
        3 => 0.3,
        _ if COMMON.contains(&name) => 0.3,
        _ => 1.0,
    }
}

/// Whether a file is a test fixture (data a test reads, not code anything calls): under a
/// `fixtures`, `testdata` or `__mocks__` directory.
pub fn is_fixture(path: &str) -> bool {
    const DIRECTORIES: &[&str] = &[
        "fixtures",
        "fixture",
        "__fixtures__",
        "testdata",
        "test-data",
        "test_data",
        "__mocks__",
    ];
    let mut directories = path.split('/').rev().skip(1);
    directories.any(|directory| DIRECTORIES.contains(&directory))
}

/// How much a definition in a test fixture counts toward a reference matched by name.
const FIXTURE_WEIGHT: f64 = 0.1;

/// What kind of file defines a name, as far as a reference matched by the name alone goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Definer {
    /// The project's own code.
    Code,
    /// A test fixture ([`is_fixture`]): data a test reads, not code anything calls.
    Fixture,
    /// A test, named so by the test runners' conventions (`test_app.py`, `GsonTest.java`,
    /// `string.test.ts`): what it defines is its own, and another file using it imports it.
    /// zod's docs page component `Page` and its tests' `A`, `B` and `Category` had tied
    /// `recursive-types.test.ts` to files that only share the names.
    Test,
}

impl Definer {
    /// The kind of the file at `path`.
    pub fn of(path: &str) -> Definer {
        if is_fixture(path) {
            Definer::Fixture
        } else if is_named_test(path) {
            Definer::Test
        } else {
            Definer::Code
        }
    }
}

/// How much a reference matched by its name alone counts toward a file defining it
/// ([`telling`], times [`FIXTURE_WEIGHT`] in a test fixture); `None` toward a test, and for a
/// short or common name in a fixture, which every closure call `f(...)` or vitest `test(...)`
/// would otherwise link to (tokio's fixture `fn f` had 45 referrers).
pub fn by_name(name: &str, definer: Definer) -> Option<f64> {
    let told = telling(name);
    match definer {
        Definer::Code => Some(told),
        Definer::Fixture if told < 1.0 => None,
        Definer::Fixture => Some(told * FIXTURE_WEIGHT),
        Definer::Test => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn standard_names_are_provided_within_their_language() {
        assert!(provided(Scoping::Rust, "Err"));
        assert!(provided(Scoping::Rust, "Ready"));
        assert!(!provided(Scoping::Rust, "Engine"));
        assert!(provided(Scoping::Python, "len"));
        assert!(!provided(Scoping::Python, "Err"));
        assert!(provided(Scoping::Script, "test"));
    }

    #[test]
    fn short_common_and_fixture_names_tell_little() {
        assert!(telling("f") < telling("app"));
        assert!(telling("app") < telling("Engine"));
        assert_eq!(telling("test"), telling("run"));
        assert_eq!(telling("resolve_symlinks"), 1.0);
        assert!(is_fixture("tests/fixtures/basic/lib.rs"));
        assert!(is_fixture("pkg/testdata/x.go"));
        assert!(!is_fixture("src/fixtures.rs"));
        assert!(is_fixture("web/__fixtures__/spec.js"));
        assert_eq!(by_name("f", Definer::Code), Some(telling("f")));
        assert_eq!(by_name("f", Definer::Fixture), None);
        assert_eq!(by_name("test", Definer::Fixture), None);
        assert_eq!(
            by_name("resolve_symlinks", Definer::Fixture),
            Some(FIXTURE_WEIGHT)
        );
    }

    #[test]
    fn a_tests_own_names_are_matched_by_no_other_file() {
        assert_eq!(
            Definer::of("packages/zod/tests/recursive-types.test.ts"),
            Definer::Test
        );
        assert_eq!(Definer::of("tests/test_app.py"), Definer::Test);
        assert_eq!(
            Definer::of("src/test/java/com/x/GsonTest.java"),
            Definer::Test
        );
        assert_eq!(Definer::of("tests/fixtures/test_app.py"), Definer::Fixture);
        assert_eq!(
            Definer::of("src/test/java/com/x/TestTypes.java"),
            Definer::Code
        );
        assert_eq!(by_name("Category", Definer::Test), None);
    }
}
