//! `retrieve` hits an agent can act on (issue 47): what nobody reads stays out of the way, and
//! every hit says why it matched, with a relevance that means the same in every query.

use serde_json::Value;

use crate::common::TestEnv;

const INFLATE: &str = "\
/// Inflates a compressed stream through a sliding window.
pub fn inflate(window: &mut Window, input: &[u8]) -> Vec<u8> {
    window.slide(input)
}
";

/// Text that says `inflate` and `window` far more often than the source file does.
fn wordy(kind: &str) -> String {
    (0..40)
        .map(|n| format!("{kind} {n}: inflate window, inflate the window, window inflate\n"))
        .collect()
}

/// A source file beside licence files, a patch, a lock file, declarations and a vendored copy
/// of a library, all of them repeating the query's words.
fn beside_the_code(env: &TestEnv) {
    env.write("src/inflate.rs", INFLATE);
    env.write("src/main.rs", "fn main() {}\n");
    env.write("LICENSE-MIT", wordy("licence"));
    env.write("COPYING", wordy("copying"));
    env.write("themes/zenburn.license", wordy("licence"));
    env.write("patches/inflate-window.patch", wordy("+"));
    env.write("Cargo.lock", wordy("lock"));
    env.write("types/inflate.d.ts", wordy("//"));
    env.write(
        "vendor/miniz/miniz_tinfl.c",
        format!("/* miniz_tinfl */\n{}", wordy("//")),
    );
    env.write(
        "third_party/zlib/inflate.c",
        format!(
            "int inflate(z_window *window) {{ return 0; }}\n{}",
            wordy("//")
        ),
    );
}

fn paths(answer: &Value) -> Vec<&str> {
    answer["results"]
        .as_array()
        .expect("results")
        .iter()
        .map(|hit| hit["path"].as_str().expect("path"))
        .collect()
}

/// Licence files, a patch, a lock file, declarations and vendored copies never rank above the
/// source file that matches, with or without an index, in every mode that ranks chunks; a
/// vendored file is still found first by its exact name.
#[test]
fn what_nobody_reads_never_outranks_a_matching_source_file() {
    let env = TestEnv::new();
    beside_the_code(&env);
    for indexed in [false, true] {
        if indexed {
            env.ok(&["index"]);
        }
        for mode in ["hybrid", "lexical"] {
            for query in ["inflate window", "inflate"] {
                let answer = env.json(&["retrieve", "--mode", mode, "--limit", "20", query]);
                let found = paths(&answer);
                assert_eq!(found[0], "src/inflate.rs", "{mode} {query} {found:?}");
                assert!(found.len() > 5, "the others are still found: {found:?}");
            }
        }
        let named = env.json(&["retrieve", "miniz_tinfl"]);
        assert_eq!(paths(&named)[0], "vendor/miniz/miniz_tinfl.c", "{named}");
    }
}

/// Every hit says which of the query's words it matched, in its lines and in its path, and
/// which definition it holds; its score is the share of the query it matches, in [0, 1], not
/// its rank.
#[test]
fn hits_say_why_they_matched_with_a_relevance() {
    let env = TestEnv::plain();
    env.write("src/inflate.rs", INFLATE);
    env.write("src/window.rs", "pub struct Window;\n// sliding\n");
    env.write("src/other.rs", "// a window onto nothing else\n");
    let answer = env.json(&["retrieve", "inflate sliding window"]);
    let results = answer["results"].as_array().expect("results");
    let hit = |path: &str| {
        results
            .iter()
            .find(|hit| hit["path"] == path)
            .unwrap_or_else(|| panic!("{path} in {answer}"))
    };
    let inflate = hit("src/inflate.rs");
    assert_eq!(inflate["score"], 1.0);
    assert_eq!(
        inflate["why"]["terms"],
        serde_json::json!(["inflate", "sliding", "window"])
    );
    assert_eq!(inflate["why"]["path"], serde_json::json!(["inflate"]));
    let window = hit("src/window.rs");
    assert_eq!(
        (&window["why"]["terms"], &window["why"]["path"]),
        (
            &serde_json::json!(["sliding", "window"]),
            &serde_json::json!(["window"])
        )
    );
    let other = hit("src/other.rs");
    assert_eq!(other["why"]["terms"], serde_json::json!(["window"]));
    let score = |hit: &Value| hit["score"].as_f64().expect("score");
    assert!((score(other) - 1.0 / 3.0).abs() < 1e-6, "{other}");
    assert!(
        score(window) > score(other) && score(window) < 1.0,
        "{window}"
    );

    let named = env.json(&["retrieve", "Window"]);
    let definition = &named["results"][0];
    assert_eq!(definition["path"], "src/window.rs");
    assert_eq!(
        definition["why"]["definition"],
        serde_json::json!({"name": "Window", "line": 1})
    );
    assert_eq!(definition["score"], 1.0);
}

/// The text output shows each hit's relevance and why it matched, and up to twelve lines of
/// its excerpt, counting the rest.
#[test]
fn human_output_says_why_and_shows_the_excerpt_within_its_budget() {
    let env = TestEnv::plain();
    let body: String = (1..=20)
        .map(|n| format!("    window.slide({n});\n"))
        .collect();
    env.write(
        "src/inflate.rs",
        format!("pub fn inflate(window: &mut Window) {{\n{body}}}\n"),
    );
    let output = env.run(&["retrieve", "inflate window"]);
    insta::assert_snapshot!(output, @r"
    src/inflate.rs:1-22  (1.00)  matched inflate, window; path inflate
          1  pub fn inflate(window: &mut Window) {
          2      window.slide(1);
          3      window.slide(2);
          4      window.slide(3);
          5      window.slide(4);
          6      window.slide(5);
          7      window.slide(6);
          8      window.slide(7);
          9      window.slide(8);
         10      window.slide(9);
         11      window.slide(10);
         12      window.slide(11);
             (10 more lines)
    [exit status: 0]
    ");
}
