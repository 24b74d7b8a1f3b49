//! Every problem of a patch at once (issue 46, item 8): a shape problem (a missing required
//! field, a wrong type, an unknown field or value) is one problem among the others of the same
//! patch, each at its path, not a parse failure that stops the check. The write is refused
//! whole (exit 2) and nothing is written; `update` and `promote` read patches alike.

use serde_json::Value;
use serde_json::json;

use crate::common::PASSING_VERIFIER;
use crate::common::TestEnv;
use crate::common::problem_lines;

/// A planning patch with five problems: an objective draft without `acceptance_criteria` (a
/// field the schema requires), a `github_issue` capture without repo or issue number, a blank
/// priority rationale, and two source items that name no backlog item.
fn planning_patch() -> Value {
    json!({"planning": {
        "captures": [{"id": "cap-1", "title": "retry drops spans", "confidence": "high",
                      "status": "new", "source": {"kind": "github_issue"}}],
        "backlog_items": [{"id": "bl-1", "title": "keep spans", "kind": "bug", "summary": "s",
                           "status": "open", "horizon": "now", "confidence": "high",
                           "product_area": "lexer",
                           "priority": {"value": "p1", "rationale": "  "}}],
        "objective_drafts": [{"id": "od-1", "title": "spans", "summary": "s", "status": "draft",
                              "source_item_ids": ["bl-1", "bl-9", "bl-8"],
                              "scope": {"includes": ["lexer"], "excludes": []},
                              "lane_plan": {"hands": "rewrite the retry loop"}}]
    }})
}

/// What the five problems of [`planning_patch`] are, each at its path under `prefix`.
fn planning_problems(prefix: &str) -> Value {
    let at = |path: &str| format!("{prefix}planning.{path}");
    json!([
        {"path": at("objective_drafts[0].acceptance_criteria"), "message": "is required"},
        {"path": at("captures[0].source.repo"), "message": "is required for github_issue sources"},
        {"path": at("captures[0].source.issue_number"), "message": "is required for github_issue sources"},
        {"path": at("backlog_items[0].priority.rationale"), "message": "must not be empty"},
        {"path": at("objective_drafts[0].source_item_ids[1]"), "message": "names missing backlog item \"bl-9\""},
        {"path": at("objective_drafts[0].source_item_ids[2]"), "message": "names missing backlog item \"bl-8\""},
    ])
}

/// Runs `--json ARGS` with `stdin`, expecting exit 2 and the store unchanged; answers the error.
fn refused(env: &TestEnv, args: &[&str], stdin: &str) -> Value {
    let before = env.store_bytes();
    let output = env.run_json_with_stdin(args, stdin);
    assert_eq!(output.code, 2, "{output}");
    assert_eq!(env.store_bytes(), before, "{output}");
    output.json()["error"].clone()
}

/// A missing required field used to stop the check at decoding: only it was reported, and the
/// other four problems of the patch were found one refusal at a time.
#[test]
fn regression_46_a_missing_field_is_listed_with_every_other_problem() {
    // See: issue 46, item 8.
    let env = TestEnv::new();
    let before = env.store_bytes();
    let state = env.json(&["show"]);
    let error = refused(&env, &["update"], &planning_patch().to_string());
    assert_eq!(error["kind"], "input", "{error}");
    assert_eq!(error["message"], "stdin is not a valid patch", "{error}");
    assert_eq!(error["problems"], planning_problems(""), "{error}");
    // The text lists them too, one a line, and says nothing was written.
    let output = env.run_with_stdin(&["update"], planning_patch().to_string());
    assert_eq!(output.code, 2, "{output}");
    assert!(
        output.stderr.contains(
            "  - planning.objective_drafts[0].acceptance_criteria: is required\n  - planning.captures[0].source.repo: is required for github_issue sources\n"
        ),
        "{output}"
    );
    assert_eq!(env.store_bytes(), before);
    assert_eq!(env.json(&["show"]), state);
    // In an envelope every path says where it is in the document, the patch's included; a
    // stale expected revision does not hide them (the input is wrong whatever the store holds).
    let envelope = json!({"expected_revision": 7, "patch": planning_patch()}).to_string();
    let error = refused(&env, &["update"], &envelope);
    assert_eq!(error["problems"], planning_problems("patch."), "{error}");
    // `--dry-run` checks the same way.
    let error = refused(
        &env,
        &["update", "--dry-run"],
        &planning_patch().to_string(),
    );
    assert_eq!(error["problems"], planning_problems(""), "{error}");
}

/// Wrong types and values outside an enumeration are listed beside the problems of what
/// decoded, and a problem a stand-in would restate (an empty value where a field was missing)
/// is listed once.
#[test]
fn wrong_types_and_values_join_the_validation_problems() {
    let env = TestEnv::new();
    env.write("src/lexer.rs", "pub fn lex() {}\n");
    let patch = json!({
        "mode": {"name": "m", "kind": "plans"},
        "observations": [
            {"id": "obs-1", "summary": "s", "source_kind": 5, "status": "ok",
             "evidence_ids": ["ev-missing"],
             "code_refs": [{"path": "src/lexer.rs", "start_line": "one"}, {"path": "src/gone.rs"}]},
            {"id": "obs-2", "status": "ok", "evidence_ids": []}
        ]
    });
    let error = refused(&env, &["update"], &patch.to_string());
    let problems = problem_lines(&error);
    assert_eq!(
        problems,
        [
            "mode.kind: unknown value \"plans\"; did you mean \"plan\"? (allowed: \"plan\", \"default\")",
            "observations[0].source_kind: expected a string, found the number 5",
            "observations[0].code_refs[0].start_line: expected an integer or null, found the string \"one\"",
            "observations[1].summary: is required",
            "observations[1].source_kind: is required",
            "observations[1].evidence_ids: must hold at least 1 item(s)",
            "observations[0].evidence_ids[0]: cites missing evidence id \"ev-missing\"",
            "observations/obs-1.code_refs: `src/gone.rs`: no such file in the work tree (for a file still to be written, pass `--allow-missing-paths`)",
        ],
        "{error}"
    );
}

/// Text that is not JSON has nothing to validate: it is one clear parse error.
#[test]
fn text_that_is_not_json_is_a_parse_error() {
    let env = TestEnv::new();
    for args in [&["update"][..], &PASSING_VERIFIER[..]] {
        let error = refused(&env, args, "observations: [oops");
        assert_eq!(error["message"], "stdin is not a valid patch", "{error}");
        assert_eq!(
            error["problems"],
            json!([{"path": "", "message": "expected value at line 1 column 1"}]),
            "{error}"
        );
        let output = env.run_with_stdin(args, "{\"objective\": \"x\",");
        assert_eq!(output.code, 2, "{output}");
        assert!(
            output
                .stderr
                .starts_with("error: stdin is not a valid patch\n  - EOF while parsing a value at line 1 column 18\n"),
            "{output}"
        );
    }
}

/// An unknown top-level field is named with the closest known one; the rest of the patch is
/// still checked, and a patch left with nothing else is refused for the field, not as empty.
#[test]
fn an_unknown_top_level_field_is_one_problem_among_the_others() {
    let env = TestEnv::new();
    let patch = json!({"objectiv": "keep spans", "observations": [
        {"id": "obs-1", "summary": "s", "source_kind": "k", "status": "ok", "evidence_ids": ["ev-9"]}
    ]});
    let error = refused(&env, &["update"], &patch.to_string());
    assert_eq!(
        error["problems"],
        json!([
            {"path": "objectiv", "message": "unknown field `objectiv`; did you mean `objective`?"},
            {"path": "observations[0].evidence_ids[0]", "message": "cites missing evidence id \"ev-9\""}
        ]),
        "{error}"
    );
    let error = refused(&env, &["update"], r#"{"objectiv": "keep spans"}"#);
    assert_eq!(
        error["problems"],
        json!([{"path": "objectiv", "message": "unknown field `objectiv`; did you mean `objective`?"}]),
        "{error}"
    );
}

/// `promote` reads patches as `update` does: a malformed patch is an input error (exit 2) with
/// the gate's problems and, past the gate, the write path's listed beside the shape's.
#[test]
fn promote_lists_every_problem_of_a_malformed_patch_too() {
    let env = TestEnv::new();
    let mut args = PASSING_VERIFIER.to_vec();
    args.extend(["--verifier-id", "ev-verifier"]);
    // The gate accepts what decoded (observations and evidence back the planning), so the
    // write path's problems are listed.
    let mut patch = planning_patch();
    patch["observations"] = json!([{"id": "obs-1", "summary": "s", "source_kind": "k",
                                    "status": "ok", "evidence_ids": ["ev-1"]}]);
    patch["evidence"] = json!([{"id": "ev-1", "kind": "test", "status": "ok", "summary": "s"}]);
    let envelope = json!({"expected_revision": 1, "patch": patch}).to_string();
    let error = refused(&env, &args, &envelope);
    assert_eq!(error["problems"], planning_problems("patch."), "{error}");
    // The gate refuses what decoded: its reasons join the shape's, the verifier's as they are.
    let rejected = json!({"patch": {"observations": [
        {"id": "obs-1", "summary": "s", "source_kind": "k", "status": 1, "evidence_ids": ["ev-9"]}
    ]}});
    let mut weak = args.clone();
    weak[4] = "failed";
    let error = refused(&env, &weak, &rejected.to_string());
    assert_eq!(
        error["problems"],
        json!([
            {"path": "patch.observations[0].status", "message": "expected a string, found the number 1"},
            {"path": "patch.observations[0].evidence_ids[0]", "message": "cites missing evidence id \"ev-9\""},
            {"path": "verifierEvidence.status", "message": "must be accepting, got \"failed\""}
        ]),
        "{error}"
    );
}
