//! What nobody reads: files in a repository that are not the project's own code to read —
//! vendored copies, type stubs, declarations, minified bundles, generated code, licences,
//! patches and lock files (docs/retrieval.md#what-nobody-reads). They rank below the
//! project's own code: in `retrieve` by [`PERIPHERAL_WEIGHT`], in the code map after the
//! project's own files. They are never hidden, so a query that names one still finds it.
//!
//! This is the one list: every ranking that puts them out of the way asks [`peripheral`].
//! Pure: it judges a `/`-separated path relative to the root, nothing else.

/// Why a file is out of the way: each kind is one entry of the list, with its reason.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Peripheral {
    /// Under a directory that holds other projects' code: `vendor/`, `vendored/`,
    /// `third_party/`, `third-party/`, `thirdparty/`, `external/`, `externals/`,
    /// `node_modules/`, `bower_components/`. Copied in to build against, changed upstream:
    /// a question about this project is not answered there (mypy's `mypyc/external/`
    /// googletest took top-10 retrieval slots).
    Vendored,
    /// Python stubs (`*.pyi`) and type-stub trees (`typeshed/`, `stubs/`, a PEP 561
    /// `*-stubs/` package): signatures without behaviour, mostly of other libraries; mypy's
    /// bundled typeshed filled 15 of its map's top 20 files, its test stubs most of the rest.
    Stubs,
    /// TypeScript declarations (`*.d.ts`, `*.d.mts`, `*.d.cts`): typings written for code
    /// elsewhere (a dependency's, inlined; or emitted from the project's own `.ts`). They say
    /// what a module's types are, not what it does; vite's inlined typings took its map's top 5.
    Declarations,
    /// Minified bundles (`*.min.js`, `*.min.mjs`, `*.min.css`): built from a source
    /// elsewhere, one endless line with every word of that source.
    Minified,
    /// Generated code (`*_pb2.py`, `*_pb2_grpc.py`, `*.pb.go`, `*.pb.cc`, `*.pb.h`,
    /// `*.generated.*`): written by a tool from a source that is the thing to read and edit.
    Generated,
    /// Licence and notice files (`LICENSE*`, `LICENCE*`, `COPYING*`, `NOTICE*`,
    /// `UNLICENSE`, `*.license`): legal text that names every word a query might use
    /// (helix's `zenburn.license` pushed the changed file out of the top 10).
    Licence,
    /// Patches (`*.patch`, `*.diff`): changes to other code, quoting its lines.
    Patch,
    /// Lock files (`*.lock`, `package-lock.json`, `npm-shrinkwrap.json`, `pnpm-lock.yaml`,
    /// `go.sum`): resolved dependency versions, written by a package manager.
    Lock,
}

/// Weight of a peripheral file's score in `retrieve`: a quarter, so a peripheral file ranks
/// below a source file matching a query about as well, yet above files matching much worse,
/// and first when the query names it (docs/retrieval.md#what-nobody-reads has the
/// measurements).
pub const PERIPHERAL_WEIGHT: f32 = 0.25;

/// Directory names of other projects' code.
const VENDOR_DIRS: &[&str] = &[
    "bower_components",
    "external",
    "externals",
    "node_modules",
    "third-party",
    "third_party",
    "thirdparty",
    "vendor",
    "vendored",
];

/// Directory names of type-stub trees (besides `*-stubs`).
const STUB_DIRS: &[&str] = &["stubs", "typeshed"];

/// File names of lock files that do not end in `.lock`.
const LOCK_NAMES: &[&str] = &[
    "go.sum",
    "npm-shrinkwrap.json",
    "package-lock.json",
    "pnpm-lock.yaml",
];

/// Name prefixes of licence and notice files.
const LICENCE_STEMS: &[&str] = &["copying", "licence", "license", "notice", "unlicense"];

/// Whether `path` (relative, `/`-separated) is out of the way, and why; `None` for the
/// project's own code and documents. Directories decide first, then the file's name.
pub fn peripheral(path: &str) -> Option<Peripheral> {
    let lower = path.to_ascii_lowercase();
    let mut parts: Vec<&str> = lower.split('/').collect();
    let name = parts.pop().unwrap_or_default();
    let written = path.rsplit('/').next().unwrap_or(path);
    if parts.iter().any(|dir| VENDOR_DIRS.contains(dir)) {
        return Some(Peripheral::Vendored);
    }
    if parts
        .iter()
        .any(|dir| STUB_DIRS.contains(dir) || dir.ends_with("-stubs"))
    {
        return Some(Peripheral::Stubs);
    }
    file_kind(name, written)
}

/// The kind a file name alone says: `name` lowercased, `written` as the path has it.
fn file_kind(name: &str, written: &str) -> Option<Peripheral> {
    let ends = |suffixes: &[&str]| suffixes.iter().any(|suffix| name.ends_with(suffix));
    if ends(&[".pyi"]) {
        Some(Peripheral::Stubs)
    } else if ends(&[".d.ts", ".d.mts", ".d.cts"]) {
        Some(Peripheral::Declarations)
    } else if ends(&[".min.js", ".min.mjs", ".min.css"]) {
        Some(Peripheral::Minified)
    } else if ends(&["_pb2.py", "_pb2_grpc.py", ".pb.go", ".pb.cc", ".pb.h"])
        || name.contains(".generated.")
    {
        Some(Peripheral::Generated)
    } else if is_licence(name, written) {
        Some(Peripheral::Licence)
    } else if ends(&[".patch", ".diff"]) {
        Some(Peripheral::Patch)
    } else if ends(&[".lock"]) || LOCK_NAMES.contains(&name) {
        Some(Peripheral::Lock)
    } else {
        None
    }
}

/// A licence or notice file: its name before the first `.` is one of [`LICENCE_STEMS`], or
/// one followed by `-` or `_` and written in capitals (`LICENSE-MIT`, `COPYING_LESSER`, not
/// `license-policy.md`); or it ends in `.license` or `.licence`.
fn is_licence(name: &str, written: &str) -> bool {
    let base = name.split('.').next().unwrap_or(name);
    let shouting = !(written.split('.').next().unwrap_or(written))
        .chars()
        .any(|c| c.is_ascii_lowercase());
    LICENCE_STEMS.iter().any(|stem| {
        base == *stem
            || (shouting
                && base
                    .strip_prefix(stem)
                    .is_some_and(|rest| rest.starts_with(['-', '_'])))
    }) || name.ends_with(".license")
        || name.ends_with(".licence")
}

/// The weight of a file where files are ranked: [`PERIPHERAL_WEIGHT`] for a peripheral file,
/// 1 for the project's own.
pub fn weight(path: &str) -> f32 {
    match peripheral(path) {
        Some(_) => PERIPHERAL_WEIGHT,
        None => 1.0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_entry_of_the_list_is_recognised() {
        for (path, kind) in [
            (
                "mypyc/external/googletest/src/gtest.cc",
                Peripheral::Vendored,
            ),
            ("web/node_modules/react/index.js", Peripheral::Vendored),
            ("Vendor/lib.go", Peripheral::Vendored),
            ("third_party/zlib/inflate.c", Peripheral::Vendored),
            ("mypy/typeshed/stdlib/os/__init__.pyi", Peripheral::Stubs),
            ("types-requests/requests-stubs/api.py", Peripheral::Stubs),
            ("test-data/unit/lib-stub/typing.pyi", Peripheral::Stubs),
            (
                "packages/vite/src/types/chokidar.d.ts",
                Peripheral::Declarations,
            ),
            ("static/app.min.js", Peripheral::Minified),
            ("api/service_pb2.py", Peripheral::Generated),
            ("api/service.pb.go", Peripheral::Generated),
            ("src/schema.generated.ts", Peripheral::Generated),
            ("LICENSE-MIT", Peripheral::Licence),
            ("LICENSE_1_0.txt", Peripheral::Licence),
            ("COPYING", Peripheral::Licence),
            ("UNLICENSE", Peripheral::Licence),
            ("runtime/themes/zenburn.license", Peripheral::Licence),
            ("crates/core/NOTICE.txt", Peripheral::Licence),
            ("patches/chokidar@3.6.0.patch", Peripheral::Patch),
            ("fix.diff", Peripheral::Patch),
            ("Cargo.lock", Peripheral::Lock),
            ("pnpm-lock.yaml", Peripheral::Lock),
            ("go.sum", Peripheral::Lock),
        ] {
            assert_eq!(peripheral(path), Some(kind), "{path}");
            assert_eq!(weight(path), PERIPHERAL_WEIGHT, "{path}");
        }
    }

    #[test]
    fn the_projects_own_code_and_documents_are_not() {
        for path in [
            "src/main.rs",
            "src/externals.rs",
            "crates/vendor_tools.rs",
            "packages/vite/src/node/server/index.ts",
            "mypy/stubgen.py",
            "mypy/checker.py",
            "docs/license-policy.md",
            "README.md",
            "src/licensing.rs",
            "src/patch.rs",
            "src/lockfile.rs",
            "build.min.rs",
        ] {
            assert_eq!(peripheral(path), None, "{path}");
            assert_eq!(weight(path), 1.0, "{path}");
        }
    }
}
