//! `schema`: every `--json` report validates against the schema `epiphany schema` prints.

use serde_json::Value;
use serde_json::json;

use crate::common::Output;
use crate::common::PASSING_VERIFIER;
use crate::common::TestEnv;
use crate::common::distill_args;

fn assert_valid(env: &TestEnv, command: &str, output: &Output) {
    let schema = env.json(&["schema", command]);
    let validator = jsonschema::validator_for(&schema).expect("a valid JSON Schema");
    let document = output.json();
    let errors: Vec<String> = validator
        .iter_errors(&document)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect();
    assert!(
        errors.is_empty(),
        "`{command}` output does not match its schema:\n{}\n{document}",
        errors.join("\n")
    );
}

fn check(env: &TestEnv, args: &[&str]) {
    check_with_stdin(env, args, "");
}

fn check_with_stdin(env: &TestEnv, args: &[&str], stdin: &str) -> Value {
    let mut full = vec!["--json"];
    full.extend_from_slice(args);
    let output = env.run_with_stdin(&full, stdin);
    assert!(output.code <= 1, "`{}` failed:\n{output}", args.join(" "));
    assert_valid(env, args[0], &output);
    output.json()
}

#[test]
fn every_report_matches_its_schema() {
    let env = TestEnv::new();
    // Missing-state shapes first.
    for args in [
        ["scene"].as_slice(),
        &["context", "--node", "x"],
        &["graph", "--node", "x"],
        &["planning"],
        &["reorient"],
        &["prompt"],
        &["freshness"],
    ] {
        check(&env, args);
    }
    env.write("src/lexer.rs", "pub fn retry_keeps_span() {}\n");
    env.commit_all("code");
    check(&env, &["init"]);
    let draft = check_with_stdin(
        &env,
        &distill_args(
            "test",
            &[
                "--subject",
                "cargo test",
                "--code-ref",
                "src/lexer.rs:1-1#retry_keeps_span",
            ],
        ),
        "test result: ok. 3 passed; 0 failed",
    );
    check_with_stdin(&env, &["update"], &draft.to_string());
    let proposal = check_with_stdin(&env, &["propose"], "");
    check_with_stdin(&env, &PASSING_VERIFIER, &proposal.to_string());
    let checkpoint = json!({"investigation_checkpoint": {"checkpoint_id": "ck", "kind": "debug", "disposition": "resume_ready",
        "focus": "lexer", "next_action": "reread", "code_refs": [{"path": "src/lexer.rs"}]}});
    check_with_stdin(&env, &["update"], &checkpoint.to_string());
    for args in [
        ["show"].as_slice(),
        &["show", "--revision", "1"],
        &["log"],
        &["diff"],
        &["verify"],
        &["scene"],
        &["context", "--node", "missing-node"],
        &["graph", "--frontier", "--depth", "2"],
        &["planning"],
        &["freshness"],
        &["pressure", "--used", "82", "--auto-compact-limit", "100"],
        &["reorient", "--used", "10", "--context-window", "100"],
        &["prompt"],
        &["index"],
        &["retrieve", "keeps span on retry"],
        &["retrieve", "lexer", "--mode", "exact"],
        &["hooks", "install", "--dry-run", "--claude"],
        &["rollback", "--to-revision", "1"],
    ] {
        check(&env, args);
    }
    let failure = env.run(&["--json", "show", "--revision", "99"]);
    assert_eq!(failure.code, 2);
    assert_valid(&env, "error", &failure);
}

#[test]
fn the_schema_command_lists_every_report() {
    let env = TestEnv::plain();
    let all = env.json(&["schema"]);
    let reports = all["reports"].as_object().expect("reports");
    for command in [
        "init", "show", "update", "promote", "scene", "retrieve", "index", "hooks",
    ] {
        assert!(reports.contains_key(command), "{command} missing");
    }
    assert!(all["error"].is_object());
    // See: issue 10. The input schemas, with the rules only validation enforces.
    let patch = env.json(&["schema", "patch"]);
    let observations = patch["properties"]["observations"]["description"]
        .as_str()
        .unwrap_or_default();
    assert!(
        observations.contains("must cite at least one evidence id"),
        "{observations}"
    );
    assert!(
        patch["$defs"]["CodeRef"]["description"]
            .as_str()
            .is_some_and(|d| d.contains("--allow-missing-paths")),
        "{patch}"
    );
    let envelope = env.json(&["schema", "envelope"]);
    assert!(envelope["properties"]["patch"].is_object(), "{envelope}");
    assert!(
        envelope["$defs"]["Patch"]["properties"]["evidence"]["description"]
            .as_str()
            .is_some_and(|d| d.contains("new: not stored")),
        "{envelope}"
    );
    assert_eq!(all["inputs"]["patch"], patch);
    // A drafted envelope validates against it.
    let validator = jsonschema::validator_for(&envelope).expect("a valid JSON Schema");
    let draft = env.json(&distill_args("note", &["--text", "checked"]));
    assert!(validator.is_valid(&draft), "{draft}");
    let unknown = env.run(&["schema", "mcp"]);
    assert_eq!(unknown.code, 2, "{unknown}");
}

/// An example of `node` of the patch schema: every property present (the non-null variant),
/// every string `x`, numbers 1, booleans false, enumerations their first value, arrays one
/// item. One string for every id makes every reference resolve: the subgoal the active id
/// names, the nodes an edge joins, the evidence an observation cites, the file `x` a code ref
/// cites (line 1, symbol `x`).
fn example(defs: &Value, node: &Value) -> Value {
    if let Some(reference) = node["$ref"].as_str() {
        let name = reference
            .rsplit('/')
            .next()
            .expect("a $ref names a definition");
        return example(defs, &defs[name]);
    }
    if let Some(variants) = node["anyOf"].as_array().or(node["oneOf"].as_array()) {
        let variant = variants
            .iter()
            .find(|v| v["type"] != "null")
            .expect("variant");
        return example(defs, variant);
    }
    if let Some(first) = node["enum"].as_array().and_then(|values| values.first()) {
        return first.clone();
    }
    if !node["const"].is_null() {
        return node["const"].clone();
    }
    let kind = match &node["type"] {
        Value::Array(kinds) => kinds.iter().find(|k| *k != "null").expect("a type"),
        kind => kind,
    };
    match kind.as_str().expect("a type name") {
        "object" => {
            let properties = node["properties"].as_object().cloned().unwrap_or_default();
            (properties.iter())
                .map(|(name, property)| (name.clone(), example(defs, property)))
                .collect::<serde_json::Map<_, _>>()
                .into()
        }
        "array" => json!([example(defs, &node["items"])]),
        "string" => json!("x"),
        "integer" | "number" => json!(1),
        "boolean" => json!(false),
        other => panic!("no example for type {other}"),
    }
}

/// See: issue 29. `schema patch` and `update` agree: the example the schema gives of every
/// field is accepted, in three writes (replacing every field; upserting every collection and
/// re-checking; removing from every collection).
#[test]
fn regression_29_every_example_the_patch_schema_gives_is_accepted() {
    let env = TestEnv::bare();
    env.write("x", "x\n");
    env.commit_all("the file every example cites");
    env.ok(&["init"]);
    let schema = env.json(&["schema", "patch"]);
    let defs = &schema["$defs"];
    let mut all = example(defs, &schema);
    let fields = all.as_object_mut().expect("patch example");
    let [upsert, remove, recheck] = ["upsert", "remove", "recheck"]
        .map(|field| fields.remove(field).expect("record-level field"));
    // An observation cannot supersede itself, and every id here is `x`.
    all["observations"][0]["supersedes"] = Value::Null;
    env.update(&all);
    env.update(&json!({"upsert": upsert, "recheck": recheck}));
    // Removing the active subgoal, or nodes the frontier names, would leave a problem.
    let mut remove = remove;
    remove.as_object_mut().expect("remove").remove("subgoals");
    let mut checkpoint = all["graph_checkpoint"].clone();
    checkpoint["frontier_node_ids"] = json!([]);
    env.update(&json!({"remove": remove, "graph_frontier": {}, "graph_checkpoint": checkpoint}));
    assert_eq!(env.json(&["verify"])["ok"], true);
    assert!(env.json(&["show"])["graphs"]["architecture"]["nodes"].is_null());
}
