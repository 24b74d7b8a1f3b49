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
