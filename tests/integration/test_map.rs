//! `map`: definitions from the parsers in every parsed language, the ranked map with and
//! without an index, its focus, budget and pictures.

use std::path::Path;

use serde_json::Value;
use serde_json::json;

use crate::common::TestEnv;

/// The parsed languages' fixture repositories under `tests/fixtures/code-map/`.
const LANGUAGES: [&str; 8] = [
    "rust",
    "python",
    "javascript",
    "typescript",
    "go",
    "java",
    "c",
    "cpp",
];

/// Copies the fixture repository of `language` into the work tree.
fn copy_fixture(env: &TestEnv, language: &str) {
    let base = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/code-map")
        .join(language);
    let mut stack = vec![base.clone()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).expect("fixture dir") {
            let path = entry.expect("entry").path();
            if path.is_dir() {
                stack.push(path);
            } else {
                let relative = path.strip_prefix(&base).expect("inside");
                let text = std::fs::read(&path).expect("fixture file");
                env.write(&relative.to_string_lossy(), text);
            }
        }
    }
}

/// Each shown file as `path` then `  kind name start-end`.
fn outline_text(map: &Value) -> String {
    let mut out = String::new();
    for file in map["files"].as_array().expect("files") {
        out.push_str(file["path"].as_str().expect("path"));
        out.push('\n');
        for definition in file["definitions"].as_array().expect("definitions") {
            out.push_str(&format!(
                "  {} {} {}-{} | {}\n",
                definition["kind"].as_str().expect("kind"),
                definition["name"].as_str().expect("name"),
                definition["start_line"],
                definition["end_line"],
                definition["signature"].as_str().expect("signature"),
            ));
        }
    }
    out
}

#[test]
fn map_finds_definitions_with_their_spans_in_every_parsed_language() {
    let mut all = String::new();
    for language in LANGUAGES {
        let env = TestEnv::bare();
        copy_fixture(&env, language);
        let map = env.json(&["map"]);
        assert_eq!(map["source"], "scan", "{language}");
        assert_eq!(map["left_out_files"], 0, "{language}");
        all.push_str(&format!("== {language}\n{}", outline_text(&map)));
    }
    insta::assert_snapshot!(all);
}

#[test]
fn the_index_stores_outlines_and_the_map_follows_edits() {
    let env = TestEnv::new();
    copy_fixture(&env, "rust");
    let scanned = env.json(&["map"]);
    env.ok(&["index"]);
    let indexed = env.json(&["map"]);
    assert_eq!(indexed["source"], "index");
    assert_eq!(indexed["files"], scanned["files"]);
    // An edit since the index is parsed now.
    env.write(
        "src/store.rs",
        "pub struct Store;\n\npub fn open_store() -> Store {\n    Store\n}\n",
    );
    let overlay = env.json(&["map"]);
    assert_eq!(overlay["source"], "index_overlay");
    let text = outline_text(&overlay);
    assert!(text.contains("function open_store 3-5"), "{text}");
    assert!(!text.contains("insert"), "{text}");
    // The incremental build parses the changed file only and keeps the rest.
    let built = env.json(&["index"]);
    assert_eq!(built["mode"], "incremental");
    let reindexed = env.json(&["map"]);
    assert_eq!(reindexed["source"], "index");
    assert_eq!(reindexed["files"], overlay["files"]);
    // A full rebuild gives the same outlines.
    env.ok(&["index", "--full"]);
    assert_eq!(env.json(&["map"])["files"], overlay["files"]);
}

/// Outlines are reused while a file's contents stay the same: those an older version of the
/// parsers made (a file without a parser version) must not outlive an upgrade, and
/// `index --check` says the index is stale until they are remade.
#[test]
fn outlines_from_other_parsers_are_parsed_again() {
    let env = TestEnv::new();
    copy_fixture(&env, "rust");
    env.ok(&["index"]);
    env.ok(&["index", "--check"]);
    let indexed = env.json(&["map"]);
    let path = format!(
        "{}/outlines.msgpack",
        crate::test_retrieve::generation_dir(&env)
    );
    let current: Value = rmp_serde::from_slice(&env.read(&path)).expect("outlines");
    assert_eq!(current[1], 6, "files, then the parser version");
    let mut files = current[0].clone();
    files[0][2] = serde_json::json!([[], []]);
    env.write(&path, rmp_serde::to_vec(&[files]).expect("encode"));
    let stale = env.json(&["map"]);
    assert_eq!(stale["source"], "scan", "{stale}");
    let checked = env.run(&["--json", "index", "--check"]);
    assert_eq!(checked.code, 1, "{checked}");
    assert_eq!(checked.json()["status"], "stale", "{checked}");
    let problem = checked.json()["problem"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(
        problem.contains("another version of the parsers"),
        "{checked}"
    );
    let told = env.run(&["index", "--check"]);
    assert!(
        told.stdout.starts_with("index is stale: its code outlines"),
        "{told}"
    );
    let rebuilt = env.json(&["index"]);
    assert_eq!(rebuilt["mode"], "full", "{rebuilt}");
    let reason = rebuilt["rebuilt_because"].as_str().unwrap_or_default();
    assert!(
        reason.contains("another version of the parsers"),
        "{rebuilt}"
    );
    let map = env.json(&["map"]);
    assert_eq!(map["source"], "index");
    assert_eq!(map["files"], indexed["files"]);
    assert_eq!(env.json(&["index"])["mode"], "unchanged");
    env.ok(&["index", "--check"]);
}

#[test]
fn focus_and_state_citations_rank_the_map() {
    let env = TestEnv::new();
    for (path, text) in [
        ("src/core.rs", "pub fn parse() {}\npub fn check() {}\n"),
        ("src/a.rs", "fn a() { parse(); check(); }\n"),
        ("src/b.rs", "fn b() { parse(); }\n"),
        ("src/leaf.rs", "pub fn leaf() { b(); }\n"),
    ] {
        env.write(path, text);
    }
    let first = |map: &Value| map["files"][0]["path"].as_str().expect("path").to_owned();
    assert_eq!(first(&env.json(&["map"])), "src/core.rs");
    assert_eq!(
        first(&env.json(&["map", "--focus", "src/leaf.rs"])),
        "src/leaf.rs"
    );
    assert_eq!(first(&env.json(&["map", "--focus", "leaf"])), "src/leaf.rs");
    let focused = env.json(&["map", "--focus", "check"]);
    assert_eq!(focused["files"][0]["definitions"][0]["name"], "check");
    // A graph node the state cites pulls its file up, and a focus on its id too.
    env.update(&serde_json::json!({"graphs": {"architecture": {"nodes": [
        crate::common::node_json("leafy", "the leaf", "src/leaf.rs")
    ]}}}));
    assert_eq!(first(&env.json(&["map"])), "src/leaf.rs");
    assert_eq!(
        first(&env.json(&["map", "--focus", "leafy"])),
        "src/leaf.rs"
    );
}

/// A focus asks what is related to a file: the files that use it come right after it, before
/// a file that has nothing to do with it (which comes first by path, where rank only followed
/// references from the focus and stopped there).
#[test]
fn a_focus_brings_the_files_that_use_it() {
    let env = TestEnv::new();
    for (path, text) in [
        ("src/core.rs", "pub fn parse() {}\npub fn check() {}\n"),
        ("src/a_unrelated.rs", "pub fn alone() {}\n"),
        ("src/user.rs", "fn user() { parse(); check(); }\n"),
        ("tests/core_test.rs", "fn parses() { parse(); }\n"),
    ] {
        env.write(path, text);
    }
    let map = env.json(&["map", "--focus", "src/core.rs"]);
    let files = map["files"].as_array().expect("files");
    let paths: Vec<&str> = (files.iter())
        .map(|file| file["path"].as_str().expect("path"))
        .collect();
    assert_eq!(
        paths,
        [
            "src/core.rs",
            "src/user.rs",
            "tests/core_test.rs",
            "src/a_unrelated.rs"
        ]
    );
    // Beside the focus, the unrelated file takes a share of the locality prior (issue 47
    // item 5), yet less rank than either file that uses the focus.
    let rank = |at: usize| files[at]["rank"].as_f64().expect("rank");
    assert!(rank(3) < rank(1).min(rank(2)), "{map:#}");
}

/// The one file defining methods named like the standard library's (`map`, `to_owned`) is
/// not made central by every `.map()` in the repository: a member call counts only toward a
/// file its caller names something of otherwise (cargo's `secret.rs` was second in its map).
#[test]
fn member_calls_do_not_make_a_hub_of_the_file_defining_their_name() {
    let env = TestEnv::new();
    for (path, text) in [
        (
            "src/secret.rs",
            "pub struct Secret(String);\nimpl Secret {\n    pub fn new(s: &str) -> Secret { Secret(s.to_owned()) }\n    pub fn map(self) -> Secret { self }\n    pub fn to_owned(&self) -> String { self.0.clone() }\n}\n",
        ),
        (
            "src/resolve.rs",
            "pub fn resolve(names: &[&str]) -> Vec<String> {\n    names.iter().map(|n| n.to_owned()).collect()\n}\n",
        ),
        (
            "src/graph.rs",
            "pub fn edges(v: &[u8]) -> Vec<u8> { v.iter().map(|b| b + 1).collect() }\n",
        ),
        (
            "src/main.rs",
            "fn main() {\n    let names = resolve(&[\"a\"]);\n    edges(&[1]);\n    names.iter().map(|n| n.to_owned());\n}\n",
        ),
        (
            "src/login.rs",
            "fn login() -> String {\n    Secret::new(\"k\").map().to_owned()\n}\n",
        ),
    ] {
        env.write(path, text);
    }
    env.ok(&["index"]);
    let map = env.json(&["map", "--focus", "src/main.rs"]);
    let files = map["files"].as_array().expect("files");
    let paths: Vec<&str> = (files.iter())
        .map(|file| file["path"].as_str().expect("path"))
        .collect();
    assert_eq!(
        paths[..3],
        ["src/main.rs", "src/graph.rs", "src/resolve.rs"],
        "{map}"
    );
    // Named by `login.rs` (`Secret::new`), its methods count for that file.
    let secret = (files.iter())
        .find(|file| file["path"] == "src/secret.rs")
        .expect("mapped");
    let referenced: Vec<(&str, u64)> = (secret["definitions"].as_array().expect("definitions"))
        .iter()
        .map(|d| {
            (
                d["name"].as_str().expect("name"),
                d["referenced_by"].as_u64().expect("count"),
            )
        })
        .collect();
    assert_eq!(
        referenced,
        [("Secret", 1), ("new", 1), ("map", 1), ("to_owned", 1)],
        "{secret}"
    );
}

#[test]
fn a_focus_naming_nothing_is_refused_and_nothing_is_written() {
    let env = TestEnv::new();
    copy_fixture(&env, "python");
    let before = env.store_bytes();
    for focus in ["nowhere.py", "NoSuchThing", ""] {
        let out = env.run(&["map", "--focus", focus]);
        assert_eq!(out.code, 2, "{out}");
        assert!(
            out.stderr
                .contains("names no parsed file, directory, graph node or definition"),
            "{out}"
        );
    }
    // A file that is there but that the map does not read says why.
    env.write("app/huge.py", "x = 1\n".repeat(800_000));
    env.write("NOTES.txt", "notes\n");
    for (focus, said) in [
        (
            "app/huge.py",
            "larger than the map reads (4194304 bytes): it has no outline",
        ),
        (
            "NOTES.txt",
            "is a file in a language the map does not parse",
        ),
    ] {
        let out = env.run(&["map", "--focus", focus]);
        assert_eq!(out.code, 2, "{out}");
        assert!(out.stderr.contains(said), "{out}");
    }
    assert_eq!(env.store_bytes(), before);
}

#[test]
fn the_map_keeps_to_its_budget() {
    let env = TestEnv::bare();
    for language in LANGUAGES {
        copy_fixture(&env, language);
    }
    for budget in [40, 200, 1000, 100000] {
        let text = env.ok(&["map", "--max-chars", &budget.to_string()]).stdout;
        assert!(text.len() <= budget, "{budget}: {text}");
    }
    let none = env.ok(&["map", "--max-chars", "0"]).stdout;
    assert_eq!(none, "no file fits in the budget (raise --max-chars)\n");
    let whole = env.json(&["map", "--max-chars", "100000"]);
    assert_eq!(whole["files"].as_array().expect("files").len(), 16);
    let small = env.json(&["map", "--max-chars", "200"]);
    assert!(small["files"].as_array().expect("files").len() < 16);
}

/// Checks Mermaid flowchart text by its structure: a `flowchart` header, then node
/// declarations `id["label"]` (no raw quote inside a label) and edges `a --> b` between
/// declared nodes.
pub fn assert_mermaid_flowchart(text: &str) {
    let mut lines = text.lines();
    assert!(
        lines
            .next()
            .is_some_and(|line| line.starts_with("flowchart ")),
        "{text}"
    );
    let mut declared = std::collections::HashSet::new();
    for line in lines {
        let line = line.trim();
        if let Some((id, edge_to)) = line.split_once(" --> ") {
            assert!(
                declared.contains(id) && declared.contains(edge_to),
                "{line}"
            );
        } else if let Some((id, label)) = line.split_once("[\"") {
            let label = label.strip_suffix("\"]").expect("a closed label");
            assert!(!label.contains('"'), "{line}");
            assert!(
                id.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'),
                "{line}"
            );
            declared.insert(id.to_owned());
        } else if !line.is_empty() && !line.starts_with("classDef") && !line.starts_with("class ") {
            panic!("not a Mermaid flowchart line: {line}\n{text}");
        }
    }
}

/// Checks the shape of DOT text: one digraph, closed.
fn assert_dot_shape(text: &str) {
    assert!(
        text.starts_with("digraph ") && text.trim_end().ends_with('}'),
        "{text}"
    );
}

/// Checks DOT text with Graphviz's own parser (`dot -Tsvg`).
fn assert_graphviz_parses(text: &str) {
    use std::io::Write;
    let mut child = std::process::Command::new("dot")
        .arg("-Tsvg")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("dot");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(text.as_bytes())
        .expect("write");
    let out = child.wait_with_output().expect("dot");
    assert!(
        out.status.success(),
        "{}\n{text}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("<svg"));
}

/// The map of a Java fixture with a file name that needs escaping, as DOT.
fn java_map_dot() -> (TestEnv, String) {
    let env = TestEnv::bare();
    copy_fixture(&env, "java");
    env.write(
        "src/shop/We\"ird.java",
        "class Weird { void go(Cart c) { c.add(1); } }\n",
    );
    let dot = env.ok(&["map", "--format", "dot"]).stdout;
    (env, dot)
}

#[test]
fn map_pictures_are_mermaid_and_dot_that_parse() {
    let (env, dot) = java_map_dot();
    let mermaid = env.ok(&["map", "--format", "mermaid"]).stdout;
    assert_mermaid_flowchart(&mermaid);
    assert!(mermaid.contains(" --> "), "{mermaid}");
    assert_dot_shape(&dot);
    assert!(dot.contains(" -> "), "{dot}");
    let json = env.json(&["map", "--format", "dot"]);
    assert_eq!(json["picture"].as_str(), Some(dot.as_str()));
}

#[test]
#[ignore = "needs Graphviz (apt-get install graphviz); .ci/run runs it"]
fn map_dot_parses_with_graphviz() {
    crate::common::require_tool("dot", &["-V"]);
    let (_env, dot) = java_map_dot();
    assert_graphviz_parses(&dot);
}

/// A file its parser cannot finish within the budget (here valid C, 150 KB, with 50,000 nested
/// calls, which took 17 s unbounded in a release build, against 0.4 s of budget) is mapped
/// without definitions; the rest of the repository is mapped as usual, with and without an
/// index.
#[test]
fn a_file_past_its_parse_budget_is_mapped_without_definitions() {
    let env = TestEnv::new();
    copy_fixture(&env, "c");
    let depth = 50_000;
    let deep = format!(
        "int deep(void) {{\n  return {}1{};\n}}\n",
        "g(".repeat(depth),
        ")".repeat(depth)
    );
    env.write("src/deep.c", deep);
    let scanned = env.json(&["map", "--max-chars", "100000"]);
    let text = outline_text(&scanned);
    assert!(text.contains("src/deep.c\n"), "{text}");
    assert!(!text.contains(" deep "), "{text}");
    assert!(text.contains("function buffer_append"), "{text}");
    let deep_file = (scanned["files"].as_array().expect("files").iter())
        .find(|file| file["path"] == "src/deep.c")
        .expect("listed");
    assert_eq!(deep_file["over_budget"], true, "{deep_file}");
    let human = env.ok(&["map", "--max-chars", "100000"]).stdout;
    assert!(
        human.contains("src/deep.c (not parsed: over its parse budget)\n"),
        "{human}"
    );
    // `index` says which file it could not map, in JSON and as a warning, on every run.
    let warning = "not mapped: `src/deep.c` needed more time or memory to parse than its budget";
    let built = env.ok(&["--json", "index"]);
    assert_eq!(
        built.json()["over_budget_files"],
        json!(["src/deep.c"]),
        "{}",
        built.stdout
    );
    assert!(built.stderr.contains(warning), "{}", built.stderr);
    let again = env.ok(&["index"]);
    assert!(again.stderr.contains(warning), "{}", again.stderr);
    let indexed = env.json(&["map", "--max-chars", "100000"]);
    assert_eq!(indexed["source"], "index");
    assert_eq!(indexed["files"], scanned["files"]);
    // Once it is plain code again, it is mapped and no longer warned about.
    env.write("src/deep.c", "int deep(void) {\n  return 1;\n}\n");
    let fixed = env.ok(&["--json", "index"]);
    assert!(
        fixed.json().get("over_budget_files").is_none(),
        "{}",
        fixed.stdout
    );
    assert!(!fixed.stderr.contains("not mapped"), "{}", fixed.stderr);
    let text = outline_text(&env.json(&["map", "--max-chars", "100000"]));
    assert!(text.contains("function deep 1-3"), "{text}");
}
