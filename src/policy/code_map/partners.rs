//! Tests and what they test, paired by name: `GsonTest.java` and `Gson.java`, `test_app.py`
//! and `app.py`, `parser_test.go` and `parser.go`, `button.spec.ts` and `button.ts`. The
//! conventions of the test runners name a test after its subject, wherever the two lie in the
//! tree (`src/main/java/com/x` and `src/test/java/com/x` are eight directory steps apart), and the
//! two change together more than any other pair: a focused map seeds the focus's partners
//! ([`PARTNER_SHARE`]). The two must lie in parallel directories, the same once the test and
//! source roots are left out ([`ROOT_DIRS`]), or one above the other: a name alone paired
//! zod's `v4/classic/tests/string.test.ts` with two benchmarks named `string.ts` elsewhere
//! (its MRR fell from 0.712 to 0.678). Pure: paths come in, weights go out.

/// The share of a focus's seed weight that goes to its partners by name.
pub const PARTNER_SHARE: f64 = 0.3;

/// Directory names that hold tests or sources rather than name a part of the project.
const ROOT_DIRS: &[&str] = &[
    "__tests__",
    "lib",
    "main",
    "spec",
    "specs",
    "src",
    "test",
    "testing",
    "tests",
];

/// The directories of `path` without the test and source roots ([`ROOT_DIRS`]).
fn parts(path: &str) -> Vec<&str> {
    let directory = path.rsplit_once('/').map_or("", |(directory, _)| directory);
    (directory.split('/'))
        .filter(|part| !part.is_empty() && !ROOT_DIRS.contains(part))
        .collect()
}

/// Whether two files lie in parallel directories, or one above the other.
fn parallel(a: &str, b: &str) -> bool {
    let (a, b) = (parts(a), parts(b));
    a.iter().zip(&b).all(|(a, b)| a == b)
}

/// What a file is named after: its subject (the file name without extension and without a
/// test runner's marker), whether a marker said it is a test, and its extension.
fn subject(path: &str) -> Option<(&str, bool, &str)> {
    let name = path.rsplit('/').next().unwrap_or(path);
    let (stem, extension) = name.rsplit_once('.')?;
    // `button.spec.ts`, `parser.test.js`
    if let Some((subject, marker)) = stem.rsplit_once('.')
        && matches!(marker, "test" | "tests" | "spec")
    {
        return Some((subject, true, extension));
    }
    let marked = (stem.strip_prefix("test_"))
        .or_else(|| {
            [
                "_test", "_tests", "_spec", "-test", "-spec", "Test", "Tests",
            ]
            .iter()
            .find_map(|marker| stem.strip_suffix(marker))
        })
        .filter(|subject| !subject.is_empty());
    Some(match marked {
        Some(subject) => (subject, true, extension),
        None => (stem, false, extension),
    })
}

/// Whether the test runners' conventions name the file at `path` a test (`test_app.py`,
/// `GsonTest.java`, `button.spec.ts`).
pub fn is_named_test(path: &str) -> bool {
    subject(path).is_some_and(|(_, test, _)| test)
}

/// Per file of `paths`, its seed weight as a partner by name of a file in `focus` (a test of
/// it, or what it tests, in the same language, in a parallel directory): [`PARTNER_SHARE`] of
/// `focus_weight` shared among all partners; nothing where there is none.
pub fn partner_weights(paths: &[&str], focus: &[&str], focus_weight: f64) -> Vec<f64> {
    let focused: Vec<(&str, &str, bool, &str)> = (focus.iter())
        .filter_map(|path| {
            subject(path).map(|(name, test, extension)| (*path, name, test, extension))
        })
        .collect();
    let is_partner = |path: &str| {
        let Some((name, test, extension)) = subject(path) else {
            return false;
        };
        !focus.contains(&path)
            && (focused.iter()).any(|&(focus_path, focus_name, focus_test, focus_extension)| {
                name == focus_name
                    && test != focus_test
                    && extension == focus_extension
                    && parallel(path, focus_path)
            })
    };
    let partners: Vec<bool> = paths.iter().map(|path| is_partner(path)).collect();
    let count = partners.iter().filter(|partner| **partner).count();
    (partners.iter())
        .map(|&partner| match partner {
            true => PARTNER_SHARE * focus_weight / count as f64,
            false => 0.0,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_test_is_named_after_its_subject() {
        for (path, expected) in [
            (
                "gson/src/test/java/GsonTest.java",
                Some(("Gson", true, "java")),
            ),
            ("tests/test_app.py", Some(("app", true, "py"))),
            ("parser_test.go", Some(("parser", true, "go"))),
            ("src/button.spec.ts", Some(("button", true, "ts"))),
            ("src/app.py", Some(("app", false, "py"))),
            ("Test.java", Some(("Test", false, "java"))),
            ("Makefile", None),
        ] {
            assert_eq!(subject(path), expected, "{path}");
        }
    }

    /// A focus's test and the subject of a focused test are its partners; a file of the same
    /// name in another language, another test of the same subject, or the focus is not.
    #[test]
    fn partners_share_the_focus_weight() {
        let paths = [
            "src/main/java/Gson.java",
            "src/test/java/GsonTest.java",
            "src/test/java/GsonBuilderTest.java",
            "scripts/Gson.py",
            "src/test/java/GsonTests.java",
        ];
        let weights = partner_weights(&paths, &["src/main/java/Gson.java"], 10.0);
        assert_eq!(weights, [0.0, 1.5, 0.0, 0.0, 1.5]);
        let weights = partner_weights(&paths, &["src/test/java/GsonTest.java"], 10.0);
        assert_eq!(weights, [3.0, 0.0, 0.0, 0.0, 0.0]);
        assert_eq!(partner_weights(&paths, &[], 10.0), [0.0; 5]);
    }

    /// A test pairs with a subject in a parallel directory, or one above or below its own;
    /// not with a file of the same name in another part of the project.
    #[test]
    fn partners_lie_in_parallel_directories() {
        for (test, subject, paired) in [
            (
                "gson/src/test/java/com/x/GsonTest.java",
                "gson/src/main/java/com/x/Gson.java",
                true,
            ),
            ("tests/test_app.py", "src/flask/app.py", true),
            ("src/__tests__/button.test.ts", "src/ui/button.ts", true),
            (
                "zod/v4/classic/tests/string.test.ts",
                "bench/string.ts",
                false,
            ),
            (
                "zod/v4/classic/tests/string.test.ts",
                "zod/v3/bench/string.ts",
                false,
            ),
        ] {
            let weights = partner_weights(&[subject], &[test], 10.0);
            assert_eq!(weights[0] > 0.0, paired, "{test} and {subject}");
        }
    }
}
