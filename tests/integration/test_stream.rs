//! `retrieve` without an index (issue 13, item 6): the work tree is streamed through ripgrep's
//! searcher and what matched is ranked. The answers must be the index's answers.

use serde_json::Value;

use crate::common::TestEnv;

/// A small tree: a validator, its caller, a connection pool used by a client, docs and tests.
fn fixture(env: &TestEnv) {
    env.write(
        "src/engine.rs",
        "/// Applies a change to the state after checking it.\n\
         pub fn apply(state: &mut State, change: Change) -> Result<(), Refusal> {\n    \
         validate_patch(&change.patch)?;\n    state.merge(change);\n    Ok(())\n}\n\n\
         /// Rejects a patch without fields before it is validated against the schema.\n\
         fn validate_patch(patch: &Patch) -> Result<(), Refusal> {\n    \
         if patch.fields.is_empty() {\n        return Err(Refusal::Empty);\n    }\n    Ok(())\n}\n",
    );
    env.write(
        "src/net.rs",
        "/// Keeps idle connections for reuse.\npub struct ConnectionPool {\n    idle: Vec<Connection>,\n}\n\n\
         impl ConnectionPool {\n    pub fn checkout(&mut self) -> Option<Connection> {\n        self.idle.pop()\n    }\n}\n",
    );
    env.write(
        "src/client.rs",
        "use crate::net::ConnectionPool;\n\npub struct Client {\n    pool: ConnectionPool,\n}\n\n\
         impl Client {\n    pub fn new(pool: ConnectionPool) -> Client {\n        Client { pool }\n    }\n\n    \
         pub fn send(&mut self, request: Request) -> Response {\n        \
         let connection = self.pool.checkout();\n        connection.send(request)\n    }\n}\n",
    );
    env.write(
        "src/render.rs",
        "pub fn render(frame: &Frame) -> String {\n    frame.lines.join(\"\\n\")\n}\n",
    );
    env.write(
        "tests/engine.rs",
        "#[test]\nfn empty_patch_is_refused() {\n    assert!(validate_patch(&Patch::default()).is_err());\n}\n",
    );
    env.write(
        "README.md",
        "# demo\n\nA demo project: it renders frames and validates patches.\n",
    );
}

fn paths(answer: &Value) -> Vec<String> {
    answer["results"]
        .as_array()
        .expect("results")
        .iter()
        .map(|hit| hit["path"].as_str().expect("path").to_owned())
        .collect()
}

#[test]
fn a_prose_query_finds_the_file_that_answers_it() {
    let env = TestEnv::bare();
    fixture(&env);
    let answer = env.json(&["retrieve", "where are patches validated"]);
    assert_eq!(answer["search"], "scan", "{answer}");
    assert_eq!(paths(&answer)[0], "src/engine.rs", "{answer}");
    let hit = &answer["results"][0];
    assert_eq!(hit["kind"], "chunk", "{answer}");
    assert!(
        hit["excerpt"]
            .as_str()
            .expect("excerpt")
            .contains("validate_patch"),
        "{answer}"
    );
    assert_eq!(answer["index"]["index_revision"], "query-time-bm25-v1");
    assert_eq!(answer["index"]["indexed_file_count"], 6, "{answer}");
    let found = paths(&answer);
    assert!(!found.contains(&"src/render.rs".to_owned()), "{answer}");
}

#[test]
fn an_identifier_query_finds_its_definition_first() {
    let env = TestEnv::bare();
    fixture(&env);
    let answer = env.json(&["retrieve", "ConnectionPool"]);
    assert_eq!(
        paths(&answer)[..2],
        ["src/net.rs", "src/client.rs"],
        "{answer}"
    );
    let exact = env.json(&["retrieve", "--mode", "exact", "ConnectionPool"]);
    assert_eq!(paths(&exact)[0], "src/net.rs", "{exact}");
    assert_eq!(exact["results"][0]["start_line"], 2, "{exact}");
}

#[test]
fn ignored_and_binary_files_are_not_searched() {
    let env = TestEnv::bare();
    fixture(&env);
    env.write(".gitignore", "target/\n");
    env.write(
        "target/debug/engine.rs",
        "fn validate_patch() {} // patches validated\n",
    );
    env.write(
        "assets/patches.bin",
        b"validate patches\0\x01\x02 validated patches\n".as_slice(),
    );
    let answer = env.json(&["retrieve", "--limit", "50", "where are patches validated"]);
    let found = paths(&answer);
    assert_eq!(found[0], "src/engine.rs", "{answer}");
    assert!(
        found
            .iter()
            .all(|path| !path.starts_with("target/") && path != "assets/patches.bin"),
        "{answer}"
    );
}

#[test]
fn no_index_and_the_index_agree_on_the_top_hit() {
    let env = TestEnv::bare();
    fixture(&env);
    let queries = [
        "where are patches validated",
        "ConnectionPool",
        "checkout an idle connection",
        "render frame lines",
        "test that an empty patch is refused",
        "demo project",
    ];
    let top = |env: &TestEnv| -> Vec<String> {
        queries
            .iter()
            .map(|query| paths(&env.json(&["retrieve", query]))[0].clone())
            .collect()
    };
    let scanned = top(&env);
    env.ok(&["init"]);
    env.ok(&["index"]);
    let indexed = top(&env);
    assert_eq!(scanned, indexed);
    assert_eq!(
        indexed,
        [
            "src/engine.rs",
            "src/net.rs",
            "src/net.rs",
            "src/render.rs",
            "tests/engine.rs",
            "README.md"
        ]
    );
}

#[test]
fn files_over_the_size_cap_are_neither_searched_nor_counted() {
    let env = TestEnv::bare();
    fixture(&env);
    let query = "where are patches validated";
    let searched = |answer: &Value| answer["index"]["indexed_file_count"].clone();
    let before = env.json(&["retrieve", query]);
    assert!(
        searched(&before).as_u64().is_some_and(|n| n > 0),
        "{before}"
    );
    // Past the caps (4 MiB for source, 256 KiB for data): the scan's read stops one byte past.
    let line = "// validated patches, validated again\n";
    env.write("src/huge.rs", line.repeat(4 * 1024 * 1024 / line.len() + 1));
    env.write(
        "data/patches.json",
        format!(
            "[{}1]",
            "\"validated patches\",".repeat(256 * 1024 / 20 + 1)
        ),
    );
    let after = env.json(&["retrieve", "--limit", "50", query]);
    assert_eq!(after["search"], "scan", "{after}");
    assert_eq!(searched(&after), searched(&before), "{after}");
    let found = paths(&after);
    assert_eq!(found[0], "src/engine.rs", "{after}");
    assert!(
        !found
            .iter()
            .any(|path| path == "src/huge.rs" || path == "data/patches.json"),
        "{after}"
    );
}
