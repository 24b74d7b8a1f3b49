//! What a line of test-runner or compiler output says (docs/drafting.md#salient-lines): the
//! run's totals, a failure (a failing test, a panic or an error with its location), or neither.
//!
//! Owns the shapes of `cargo test`, `cargo nextest`, `pytest`, `go test`, `jest`, `vitest`,
//! rustc and `go build` lines, checked against outputs captured from the tools
//! (tests/fixtures/tool_output/). It sees one collapsed line at a time and nothing else.

/// What one line of tool output is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LineClass {
    /// The run's totals: `test result: FAILED. 2 passed; 1 failed`, `Tests: 1 failed, 2 total`.
    Totals,
    /// What failed and where: a failing test, a panic, a compiler error or its location.
    Failure,
    /// Anything else.
    Other,
}

/// Classifies one line, whitespace already collapsed.
pub fn classify(line: &str) -> LineClass {
    let bare = strip_rules(line);
    let lower = bare.to_ascii_lowercase();
    if is_totals(&lower, line) {
        LineClass::Totals
    } else if is_failure(&lower) {
        LineClass::Failure
    } else {
        LineClass::Other
    }
}

/// `line` without the runs of `=`, `─` or `⎯` some runners draw around it.
pub fn strip_rules(line: &str) -> &str {
    let rule = |c: char| matches!(c, '=' | '─' | '⎯' | ' ');
    line.trim_matches(rule)
}

/// Lines that count a run's results.
fn is_totals(lower: &str, raw: &str) -> bool {
    // cargo test and nextest, jest, vitest.
    let counted = ["test result:", "summary [", "tests:", "test suites:"];
    if counted.iter().any(|start| lower.starts_with(start)) {
        return true;
    }
    if (lower.starts_with("tests ") || lower.starts_with("test files "))
        && has_count(lower, &["passed", "failed", "skipped"])
    {
        return true;
    }
    // pytest draws its totals inside a rule: `==== 1 failed, 2 passed in 0.07s ====`.
    if raw.starts_with('=')
        && lower.contains(" in ")
        && has_count(
            lower,
            &["passed", "failed", "error", "skipped", "no tests ran"],
        )
    {
        return true;
    }
    is_go_package_result(lower)
}

/// `go test`'s line per package: `ok  pkg  0.01s`, `FAIL  pkg  0.01s`, `FAIL pkg [build failed]`.
fn is_go_package_result(lower: &str) -> bool {
    let words: Vec<&str> = lower.split(' ').collect();
    let is_duration = |word: &str| {
        word.strip_suffix('s')
            .is_some_and(|n| n.parse::<f64>().is_ok())
    };
    match words.as_slice() {
        ["ok" | "fail", _, last] => is_duration(last) || *last == "(cached)",
        ["fail", _, "[build", "failed]"] | ["fail", _, "[setup", "failed]"] => true,
        _ => false,
    }
}

/// A word of `kinds` right after a number: `2 passed`, `1 failed`.
fn has_count(lower: &str, kinds: &[&str]) -> bool {
    let words: Vec<&str> = lower.split(' ').collect();
    let counted = words.windows(2).any(|pair| {
        pair[0]
            .trim_start_matches(['(', '|'])
            .parse::<u64>()
            .is_ok()
            && kinds.iter().any(|kind| pair[1].starts_with(kind))
    });
    counted || kinds.contains(&"no tests ran") && lower.contains("no tests ran")
}

/// Lines that say what failed, or where.
fn is_failure(lower: &str) -> bool {
    let starts = [
        "fail ",          // nextest `FAIL [ 0.01s] ...`, jest `FAIL ./x.test.js`, vitest
        "timeout [",      // nextest
        "--- fail:",      // go test
        "error[",         // rustc `error[E0425]: ...`
        "● ",             // jest, one per failing test
        "✕ ",             // jest
        "× ",             // vitest
        "panic: ",        // go
        "assertionerror", // vitest, pytest
    ];
    if starts.iter().any(|start| lower.starts_with(start)) {
        return !lower.starts_with("● console");
    }
    lower.ends_with(" ... failed")
        || lower.contains(" panicked at ")
        || is_pytest_failure(lower)
        || is_location(lower)
}

/// pytest's short summary: `FAILED tests/test_x.py::test_y - ...`, `ERROR tests/test_x.py`.
fn is_pytest_failure(lower: &str) -> bool {
    let mut words = lower.split(' ');
    let (Some("failed" | "error"), Some(test)) = (words.next(), words.next()) else {
        return false;
    };
    test.contains("::") || test.ends_with(".py")
}

/// Whether a totals line counts anything: a number above zero before a word (`3 passed`).
pub fn counts_something(totals: &str) -> bool {
    let words: Vec<&str> = totals.split(' ').collect();
    words.windows(2).any(|pair| {
        let count = pair[0].trim_start_matches(['(', '|']).parse::<u64>();
        count.is_ok_and(|count| count > 0) && pair[1].starts_with(char::is_alphabetic)
    })
}

/// Whether a totals line reports a failure: a failure or error count above zero
/// (`1 failed`), or a failure said as a status (`FAILED.`, `FAIL pkg`, `[build failed]`).
pub fn reports_failure(totals: &str) -> bool {
    let lower = totals.to_ascii_lowercase();
    let words: Vec<&str> = lower
        .split(' ')
        .map(|word| word.trim_matches(|c: char| !c.is_alphanumeric()))
        .collect();
    let failure_word =
        |word: &str| ["fail", "failed", "failures", "error", "errors"].contains(&word);
    words.iter().enumerate().any(|(at, word)| {
        if !failure_word(word) {
            return false;
        }
        let count = at
            .checked_sub(1)
            .and_then(|before| words[before].parse::<u64>().ok());
        count.is_none_or(|count| count > 0)
    })
}

/// A line that starts with a source location, `PATH:LINE[:COL]`, maybe behind rustc's `-->`
/// or vitest's `❯`: `--> src/lib.rs:2:13`, `./calc.go:4:17: undefined: c`,
/// `test_calc.py:14: AssertionError`. A stack frame (`at ...`) is not one.
fn is_location(lower: &str) -> bool {
    let rest = ["--> ", "❯ ", "> "]
        .iter()
        .find_map(|marker| lower.strip_prefix(marker))
        .unwrap_or(lower);
    let token = rest.split(' ').next().unwrap_or_default();
    let mut parts = token.trim_end_matches(':').split(':');
    let path = parts.next().unwrap_or_default();
    let Some(line) = parts.next() else {
        return false;
    };
    let file = path.rsplit('/').next().unwrap_or_default();
    let has_extension = file
        .rsplit_once('.')
        .is_some_and(|(stem, ext)| !stem.is_empty() && !ext.is_empty() && ext.len() <= 5);
    let path_chars = path
        .chars()
        .all(|c| c.is_alphanumeric() || matches!(c, '/' | '.' | '_' | '-'));
    has_extension && path_chars && !line.is_empty() && line.chars().all(|c| c.is_ascii_digit())
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::policy::text::collapse;

    fn class(line: &str) -> LineClass {
        classify(&collapse(line))
    }

    #[test]
    fn totals_of_each_runner() {
        for line in [
            "test result: FAILED. 2 passed; 1 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.19s",
            "     Summary [   0.019s] 3 tests run: 2 passed, 1 failed, 0 skipped",
            "========================= 1 failed, 2 passed in 0.07s ==========================",
            "FAIL\texample.com/calc\t0.005s",
            "ok  \texample.com/calc\t(cached)",
            "FAIL\texample.com/calc [build failed]",
            "Tests:       1 failed, 2 passed, 3 total",
            "Test Suites: 1 failed, 1 total",
            "      Tests  1 failed | 2 passed (3)",
            " Test Files  1 failed (1)",
        ] {
            assert_eq!(class(line), LineClass::Totals, "{line}");
        }
    }

    #[test]
    fn failures_of_each_runner_and_compiler() {
        for line in [
            "test tests::carries_into_the_next_digit ... FAILED",
            "thread 'tests::carries' (7021) panicked at src/lib.rs:21:9:",
            "        FAIL [   0.009s] (3/3) rs tests::carries_into_the_next_digit",
            "FAILED test_calc.py::test_carries - assert 10 == 11",
            "test_calc.py:14: AssertionError",
            "--- FAIL: TestCarriesIntoTheNextDigit (0.00s)",
            "ERROR tests/test_io.py",
            "    calc_test.go:19: Add(5, 5) = 10, want 11",
            "./calc.go:4:17: undefined: c",
            "error[E0425]: cannot find value `c` in this scope",
            " --> src/lib.rs:2:13",
            "  ● add › carries into the next digit",
            "FAIL ./calc.test.js",
            " FAIL  vt/calc.test.mjs > add > carries into the next digit",
            " ❯ vt/calc.test.mjs:13:23",
        ] {
            assert_eq!(class(line), LineClass::Failure, "{line}");
        }
    }

    #[test]
    fn totals_report_a_failure_by_count_or_status() {
        for failing in [
            "test result: FAILED. 2 passed; 1 failed; 0 ignored",
            "Summary [ 0.019s] 3 tests run: 2 passed, 1 failed, 0 skipped",
            "1 failed, 2 passed in 0.07s",
            "FAIL example.com/calc [build failed]",
            "Tests: 1 failed | 2 passed (3)",
            "1 passed, 2 errors in 0.1s",
        ] {
            assert!(reports_failure(failing), "{failing}");
        }
        for passing in [
            "test result: ok. 3 passed; 0 failed; 0 ignored",
            "ok example.com/calc 0.005s",
            "Tests: 3 passed, 3 total",
            "2 passed in 0.01s",
        ] {
            assert!(!reports_failure(passing), "{passing}");
        }
        assert!(counts_something("Tests: 3 passed, 3 total"));
        assert!(!counts_something(
            "test result: ok. 0 passed; 0 failed; finished in 0.01s"
        ));
    }

    #[test]
    fn progress_and_passing_lines_are_neither() {
        for line in [
            "    Finished `test` profile [unoptimized + debuginfo] target(s) in 0.66s",
            "   Compiling rs v0.1.0 (/tmp/cap29/rs)",
            "     Running unittests src/lib.rs (target/debug/deps/rs-a35a48c092d3f767)",
            "test tests::adds_zero ... ok",
            "        PASS [   0.008s] (1/3) rs tests::adds_zero",
            "--- PASS: TestAddsZero (0.00s)",
            "test_calc.py ..F                                                         [100%]",
            "FAIL",
            "             at ./src/lib.rs:21:9",
            "      at Object.toBe (calc.test.js:11:23)",
            "  ● Console",
            "running 3 tests",
            "Tests pass on Tuesdays",
            "see https://example.com:8080 for more",
            "failed five",
            "error one",
        ] {
            assert_eq!(class(line), LineClass::Other, "{line}");
        }
    }
}
