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
    if let Some(first) = node["examples"]
        .as_array()
        .and_then(|values| values.first())
    {
        return first.clone();
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

/// A node of the architecture graph, as the rule cases write it.
fn node(id: &str) -> Value {
    json!({"id": id, "title": id, "purpose": "p"})
}

/// `patch` with `changes` merged into its one record at `/field/0` (or its object at `/field`).
fn with(mut patch: Value, pointer: &str, changes: Value) -> Value {
    let target = patch.pointer_mut(pointer).expect("pointer into the patch");
    for (key, value) in changes.as_object().expect("changes") {
        target[key] = value.clone();
    }
    patch
}

/// See: issue 29. Every rule `schema patch` states in a description is enforced: each case
/// breaks one clause of one field's rule (or of CodeRef's), against a stored state that has a
/// record of every kind the rules refer to, and `update` refuses it with a problem at that
/// item, writing nothing. A field whose description states a rule and has no case here fails
/// the test, so a rule added to the schema needs its case.
#[test]
fn regression_29_every_rule_the_patch_schema_states_is_enforced() {
    let env = TestEnv::bare();
    env.write("src/a.rs", "fn alpha() {}\nfn beta() {}\n");
    env.commit_all("code");
    env.ok(&["init"]);
    env.update(&json!({
        "objective": "o",
        "subgoals": [{"id": "s1", "title": "t", "status": "active"}],
        "active_subgoal_id": "s1",
        "graphs": {
            "architecture": {"nodes": [node("a"), node("b")],
                "edges": [{"id": "ab", "source_id": "a", "target_id": "b", "kind": "calls"}]},
            "dataflow": {"nodes": [node("d")]}, "links": []
        },
        "evidence": [{"id": "e1", "kind": "test", "status": "ok", "summary": "s"}],
        "observations": [{"id": "o1", "summary": "s", "source_kind": "k", "status": "ok", "evidence_ids": ["e1"]}]
    }));
    let graphs = |architecture: Value, links: Value| json!({"graphs": {"architecture": architecture, "dataflow": {"nodes": [node("d")]}, "links": links}});
    let observation = json!({"observations": [{"id": "o2", "summary": "s", "source_kind": "k", "status": "ok", "evidence_ids": ["e1"]}]});
    let evidence = json!({"evidence": [{"id": "e2", "kind": "k", "status": "ok", "summary": "s"}]});
    let checkpoint = json!({"investigation_checkpoint": {"checkpoint_id": "c", "kind": "k",
        "disposition": "resume_ready", "focus": "f", "next_action": "n"}});
    let binding =
        json!({"job_bindings": [{"id": "j1", "kind": "remap", "scope": "s", "owner_role": "r"}]});
    let receipt = json!({"id": "r", "result_id": "x", "job_id": "j", "binding_id": "b",
        "surface": "s", "role_id": "r", "status": "ok", "accepted_at": "t"});
    let link = json!({"id": "l", "binding_id": "b", "surface": "s", "role_id": "r",
        "authority_scope": "a", "runtime_job_id": "j"});
    let backlog = json!({"id": "b1", "title": "t", "kind": "k", "summary": "s", "status": "open",
        "horizon": "near", "priority": {"value": "p1", "rationale": "r"}, "confidence": "high",
        "product_area": "x"});
    let cited = |code_ref: Value| {
        with(
            observation.clone(),
            "/observations/0",
            json!({"code_refs": [code_ref]}),
        )
    };
    let observed = |changes: Value| with(observation.clone(), "/observations/0", changes);
    let seen = |changes: Value| with(evidence.clone(), "/evidence/0", changes);
    let checked = |changes: Value| with(checkpoint.clone(), "/investigation_checkpoint", changes);
    let bound = |changes: Value| with(binding.clone(), "/job_bindings/0", changes);
    let gone = json!([{"path": "src/gone.rs"}]);
    // (the field whose rule it breaks, the start of the problem it must give, the patch)
    let cases: Vec<(&str, &str, Value)> = vec![
        (
            "objective",
            "objective: must not be empty",
            json!({"objective": " "}),
        ),
        (
            "active_subgoal_id",
            "active_subgoal_id: must not be empty",
            json!({"active_subgoal_id": " "}),
        ),
        (
            "active_subgoal_id",
            "active_subgoal_id: \"nope\" names no subgoal",
            json!({"active_subgoal_id": "nope"}),
        ),
        (
            "subgoals",
            "subgoals[0].id: must not be empty",
            json!({"subgoals": [{"id": " ", "title": "t", "status": "s"}]}),
        ),
        (
            "subgoals",
            "subgoals[1].id: duplicate",
            json!({"subgoals": [{"id": "s1", "title": "t", "status": "s"}, {"id": "s1", "title": "t", "status": "s"}]}),
        ),
        (
            "subgoals",
            "subgoals[0].title: must not be empty",
            json!({"subgoals": [{"id": "s1", "title": " ", "status": "s"}]}),
        ),
        (
            "invariants",
            "invariants[0].description: must not be empty",
            json!({"invariants": [{"id": "i1", "description": "", "status": "s"}]}),
        ),
        (
            "invariants",
            "invariants[1].id: duplicate",
            json!({"invariants": [{"id": "i1", "description": "d", "status": "s"}, {"id": "i1", "description": "d", "status": "s"}]}),
        ),
        (
            "graphs",
            "graphs.architecture.nodes[0].id: must not be empty",
            graphs(json!({"nodes": [node(" ")]}), json!([])),
        ),
        (
            "graphs",
            "graphs.architecture.nodes[1].id: duplicate",
            graphs(json!({"nodes": [node("a"), node("a")]}), json!([])),
        ),
        (
            "graphs",
            "graphs.architecture.nodes[0].purpose: must not be empty",
            graphs(
                json!({"nodes": [{"id": "a", "title": "a", "purpose": ""}]}),
                json!([]),
            ),
        ),
        (
            "graphs",
            "graphs.architecture.edges[0].target_id: names missing node",
            graphs(
                json!({"nodes": [node("a")], "edges": [{"source_id": "a", "target_id": "zz", "kind": "k"}]}),
                json!([]),
            ),
        ),
        (
            "graphs",
            "graphs.architecture.edges[0].kind: must not be empty",
            graphs(
                json!({"nodes": [node("a")], "edges": [{"source_id": "a", "target_id": "a", "kind": " "}]}),
                json!([]),
            ),
        ),
        (
            "graphs",
            "graphs.architecture.edges[1].id: duplicate",
            graphs(
                json!({"nodes": [node("a")], "edges": [{"id": "e", "source_id": "a", "target_id": "a", "kind": "k"}, {"id": "e", "source_id": "a", "target_id": "a", "kind": "j"}]}),
                json!([]),
            ),
        ),
        (
            "graphs",
            "graphs.links[0].architecture_node_id: names missing",
            graphs(
                json!({"nodes": [node("a")]}),
                json!([{"dataflow_node_id": "d", "architecture_node_id": "zz"}]),
            ),
        ),
        (
            "graphs",
            "graphs.links[1]: duplicate",
            graphs(
                json!({"nodes": [node("a")]}),
                json!([{"dataflow_node_id": "d", "architecture_node_id": "a"}, {"dataflow_node_id": "d", "architecture_node_id": "a"}]),
            ),
        ),
        (
            "graphs",
            "architecture_nodes/a.code_refs: `src/gone.rs`: no such file",
            graphs(
                json!({"nodes": [with(node("a"), "", json!({"code_refs": gone}))]}),
                json!([]),
            ),
        ),
        (
            "graph_frontier",
            "graph_frontier.active_node_ids[0]: names missing node",
            json!({"graph_frontier": {"active_node_ids": ["zz"]}}),
        ),
        (
            "graph_frontier",
            "graph_frontier.active_edge_ids[0]: names missing edge",
            json!({"graph_frontier": {"active_edge_ids": ["zz"]}}),
        ),
        (
            "graph_frontier",
            "graph_frontier.open_question_ids[1]: must not be empty",
            json!({"graph_frontier": {"open_question_ids": ["q", " "]}}),
        ),
        (
            "graph_frontier",
            "graph_frontier.open_gap_ids[1]: \"g\" is listed twice",
            json!({"graph_frontier": {"open_gap_ids": ["g", "g"]}}),
        ),
        (
            "graph_frontier",
            "graph_frontier.dirty_paths[0]: \"src/gone.rs\": no such file",
            json!({"graph_frontier": {"dirty_paths": ["src/gone.rs"]}}),
        ),
        (
            "graph_checkpoint",
            "graph_checkpoint.checkpoint_id: must not be empty",
            json!({"graph_checkpoint": {"checkpoint_id": " ", "graph_revision": 1}}),
        ),
        (
            "graph_checkpoint",
            "graph_checkpoint.frontier_node_ids[0]: names missing node",
            json!({"graph_checkpoint": {"checkpoint_id": "g", "graph_revision": 1, "frontier_node_ids": ["zz"]}}),
        ),
        (
            "investigation_checkpoint",
            "investigation_checkpoint.checkpoint_id: must not be empty",
            checked(json!({"checkpoint_id": " "})),
        ),
        (
            "investigation_checkpoint",
            "investigation_checkpoint.kind: must not be empty",
            checked(json!({"kind": ""})),
        ),
        (
            "investigation_checkpoint",
            "investigation_checkpoint.focus: must not be empty",
            checked(json!({"focus": " "})),
        ),
        (
            "investigation_checkpoint",
            "investigation_checkpoint.next_action: must not be empty",
            checked(json!({"next_action": ""})),
        ),
        (
            "investigation_checkpoint",
            "investigation_checkpoint.evidence_ids[0]: cites missing evidence",
            checked(json!({"evidence_ids": ["e-none"]})),
        ),
        (
            "investigation_checkpoint",
            "investigation_checkpoint.code_refs: `src/gone.rs`: no such file",
            checked(json!({"code_refs": gone})),
        ),
        (
            "job_bindings",
            "job_bindings[0].id: must not be empty",
            bound(json!({"id": " "})),
        ),
        (
            "job_bindings",
            "job_bindings[1].id: duplicate",
            json!({"job_bindings": [binding["job_bindings"][0], binding["job_bindings"][0]]}),
        ),
        (
            "job_bindings",
            "job_bindings[0].scope: must not be empty",
            bound(json!({"scope": ""})),
        ),
        (
            "job_bindings",
            "job_bindings[0].owner_role: must not be empty",
            bound(json!({"owner_role": " "})),
        ),
        (
            "acceptance_receipts",
            "acceptance_receipts[0].accepted_evidence_id: cites missing evidence",
            json!({"acceptance_receipts": [with(receipt.clone(), "", json!({"accepted_evidence_id": "e-none"}))]}),
        ),
        (
            "acceptance_receipts",
            "acceptance_receipts[1].id: acceptance receipt id \"r\" is duplicated",
            json!({"acceptance_receipts": [receipt.clone(), with(receipt.clone(), "", json!({"result_id": "y"}))]}),
        ),
        (
            "runtime_links",
            "runtime_links[1].id: runtime link id \"l\" is duplicated",
            json!({"runtime_links": [link.clone(), link.clone()]}),
        ),
        (
            "observations",
            "observations[0].id: must not be empty",
            observed(json!({"id": " "})),
        ),
        (
            "observations",
            "observations[0].id: observation id \"o1\" already exists",
            observed(json!({"id": "o1"})),
        ),
        (
            "observations",
            "observations[0].summary: must not be empty",
            observed(json!({"summary": ""})),
        ),
        (
            "observations",
            "observations[0].source_kind: must not be empty",
            observed(json!({"source_kind": " "})),
        ),
        (
            "observations",
            "observations[0].status: must not be empty",
            observed(json!({"status": ""})),
        ),
        (
            "observations",
            "observations[0].evidence_ids: must hold at least 1",
            observed(json!({"evidence_ids": []})),
        ),
        (
            "observations",
            "observations[0].evidence_ids[0]: cites missing evidence",
            observed(json!({"evidence_ids": ["e-none"]})),
        ),
        (
            "observations",
            "observations[0].supersedes: names missing observation",
            observed(json!({"supersedes": "o-none"})),
        ),
        (
            "evidence",
            "evidence[0].id: must not be empty",
            seen(json!({"id": " "})),
        ),
        (
            "evidence",
            "evidence[0].id: evidence id \"e1\" already exists",
            seen(json!({"id": "e1"})),
        ),
        (
            "evidence",
            "evidence[0].kind: must not be empty",
            seen(json!({"kind": ""})),
        ),
        (
            "evidence",
            "evidence[0].status: must not be empty",
            seen(json!({"status": " "})),
        ),
        (
            "evidence",
            "evidence[0].summary: must not be empty",
            seen(json!({"summary": ""})),
        ),
        (
            "evidence",
            "evidence/e2.code_refs: `src/gone.rs`: no such file",
            seen(json!({"code_refs": gone})),
        ),
        (
            "CodeRef",
            "observations/o2.code_refs: `../outside.rs`: the path leaves the repository",
            cited(json!({"path": "../outside.rs"})),
        ),
        (
            "CodeRef",
            "observations/o2.code_refs: `/etc/passwd`: the path is absolute",
            cited(json!({"path": "/etc/passwd"})),
        ),
        (
            "CodeRef",
            "observations/o2.code_refs: `src/a.rs:0`: start_line must be 1 or more",
            cited(json!({"path": "src/a.rs", "start_line": 0})),
        ),
        (
            "CodeRef",
            "observations/o2.code_refs: `src/a.rs`: end_line is given without start_line",
            cited(json!({"path": "src/a.rs", "end_line": 2})),
        ),
        (
            "CodeRef",
            "observations/o2.code_refs: `src/a.rs:2-1`: start_line 2 is after end_line 1",
            cited(json!({"path": "src/a.rs", "start_line": 2, "end_line": 1})),
        ),
        (
            "CodeRef",
            "observations/o2.code_refs: `src/a.rs:1-9`: line 9 is past the end",
            cited(json!({"path": "src/a.rs", "start_line": 1, "end_line": 9})),
        ),
        (
            "CodeRef",
            "observations/o2.code_refs: `src/a.rs#gamma`: symbol `gamma` does not occur",
            cited(json!({"path": "src/a.rs", "symbol": "gamma"})),
        ),
        (
            "CodeRef",
            "observations/o2.code_refs: `src/a.rs:1#beta`: lines 1-1 are not the definition of `beta`",
            cited(json!({"path": "src/a.rs", "start_line": 1, "end_line": 1, "symbol": "beta"})),
        ),
        (
            "churn",
            "churn.understanding_status: must not be empty",
            json!({"churn": {"understanding_status": " ", "diff_pressure": "low"}}),
        ),
        (
            "churn",
            "churn.diff_pressure: must not be empty",
            json!({"churn": {"understanding_status": "ok", "diff_pressure": ""}}),
        ),
        (
            "mode",
            "mode.kind: unknown value \"other\"",
            json!({"mode": {"name": "m", "kind": "other"}}),
        ),
        (
            "planning",
            "planning.backlog_items[1].id: duplicate",
            json!({"planning": {"backlog_items": [backlog.clone(), backlog.clone()]}}),
        ),
        (
            "planning",
            "planning.roadmap_streams[0].item_ids[0]: names missing backlog item",
            json!({"planning": {"roadmap_streams": [{"id": "r", "title": "t", "purpose": "p", "status": "s", "item_ids": ["b-none"]}]}}),
        ),
        (
            "planning",
            "planning.objective_drafts[0].acceptance_criteria: must hold at least 1",
            json!({"planning": {"objective_drafts": [{"id": "d", "title": "t", "summary": "s", "scope": {}, "lane_plan": {}, "status": "s", "acceptance_criteria": []}]}}),
        ),
        (
            "planning",
            "planning.captures[0].source.repo: is required for github_issue",
            json!({"planning": {"captures": [{"id": "c", "title": "t", "confidence": "c", "status": "s", "source": {"kind": "github_issue"}}]}}),
        ),
        (
            "upsert",
            "upsert.architecture_nodes[0]: the patch also replaces `graphs` whole",
            json!({"upsert": {"architecture_nodes": [node("c")]}, "graphs": {"architecture": {"nodes": [node("a")]}}}),
        ),
        (
            "upsert",
            "graphs.architecture.edges[1].target_id: names missing node \"zz\"",
            json!({"upsert": {"architecture_edges": [{"source_id": "a", "target_id": "zz", "kind": "k"}]}}),
        ),
        (
            "remove",
            "remove.subgoals[0]: there is no record \"s-none\"",
            json!({"remove": {"subgoals": ["s-none"]}}),
        ),
        (
            "remove",
            "graphs.architecture.edges[0].target_id: names missing node \"b\"",
            json!({"remove": {"architecture_nodes": ["b"]}}),
        ),
        (
            "recheck",
            "recheck.architecture_nodes[0]: names missing node",
            json!({"recheck": {"architecture_nodes": ["zz"]}}),
        ),
    ];
    let schema = env.json(&["schema", "patch"]);
    let mut ruled: Vec<String> = schema["properties"]
        .as_object()
        .expect("patch properties")
        .iter()
        .filter(|(_, property)| {
            let description = property["description"].as_str().unwrap_or_default();
            !description.contains("never validated")
        })
        .map(|(field, _)| field.clone())
        .collect();
    assert!(
        schema["$defs"]["CodeRef"]["description"]
            .as_str()
            .is_some_and(|text| text.contains("Validated on write")),
        "CodeRef states its rule"
    );
    ruled.push("CodeRef".to_owned());
    for field in &ruled {
        assert!(
            cases.iter().any(|(covers, _, _)| covers == field),
            "`schema patch` states a rule for `{field}` that no case here breaks"
        );
    }
    let before = env.store_bytes();
    for (field, expected, patch) in &cases {
        let output = env.run_with_stdin(&["--json", "update"], patch.to_string());
        assert_eq!(output.code, 2, "{field}: {patch}\n{output}");
        let problems: Vec<String> = output.json()["error"]["problems"]
            .as_array()
            .expect("problems")
            .iter()
            .map(|problem| {
                format!(
                    "{}: {}",
                    problem["path"].as_str().unwrap_or_default(),
                    problem["message"].as_str().unwrap_or_default()
                )
            })
            .collect();
        assert!(
            problems.iter().any(|problem| problem.starts_with(expected)),
            "{field}: expected `{expected}...` for {patch}, got {problems:#?}"
        );
    }
    assert_eq!(env.store_bytes(), before, "a refused patch wrote something");
}

/// The `--json` contract in one reviewed place: what every report, the error document and the
/// input documents hold, as `Type.field: shape` lines, each named type once. The reports are
/// the wire twins of the policy's reports (`src/wire/`), the commands' own reports and the
/// state itself; this snapshot makes a change to any of them a deliberate, reviewed change
/// (`cargo insta review`) rather than a side effect of a refactor.
#[test]
fn the_json_contract_changes_only_on_purpose() {
    let env = TestEnv::plain();
    let all = env.json(&["schema"]);
    let mut contract = Contract::default();
    for (command, schema) in all["reports"].as_object().expect("reports") {
        contract.document(&format!("report {command}"), schema);
    }
    contract.document("error", &all["error"]);
    for (input, schema) in all["inputs"].as_object().expect("inputs") {
        contract.document(&format!("input {input}"), schema);
    }
    insta::assert_snapshot!(contract.render());
}

/// Documents and the named types they use, as lines.
#[derive(Default)]
struct Contract {
    documents: Vec<String>,
    /// Each named type's field lines (`.field: shape`); `None` while it is being listed.
    types: std::collections::BTreeMap<String, Option<Vec<String>>>,
}

impl Contract {
    fn document(&mut self, name: &str, schema: &Value) {
        let mut lines = Vec::new();
        self.fields(name, schema, &schema["$defs"], &mut lines);
        self.documents.extend(lines);
    }

    /// `owner.field: shape` for each property of `object` (`owner: shape` when it has none).
    fn fields(&mut self, owner: &str, object: &Value, defs: &Value, out: &mut Vec<String>) {
        let Some(properties) = object["properties"].as_object() else {
            out.push(format!("{owner}: {}", self.shape(object, defs)));
            return;
        };
        let required: Vec<&str> = (object["required"].as_array().into_iter().flatten())
            .filter_map(Value::as_str)
            .collect();
        for (field, property) in properties {
            let optional = if required.contains(&field.as_str()) {
                ""
            } else {
                "?"
            };
            out.push(format!(
                "{owner}.{field}{optional}: {}",
                self.shape(property, defs)
            ));
        }
    }

    /// The shape of one value: a named type (listed once on its own), a primitive, an array,
    /// a map, a constant, or a union of these.
    fn shape(&mut self, node: &Value, defs: &Value) -> String {
        if let Some(reference) = node["$ref"].as_str() {
            let name = reference
                .rsplit('/')
                .next()
                .expect("a $ref names a definition");
            return self.define(name, &defs[name], defs);
        }
        if let Some(variants) = node["anyOf"].as_array().or(node["oneOf"].as_array()) {
            let shapes: Vec<String> = variants.iter().map(|v| self.shape(v, defs)).collect();
            return shapes.join(" | ");
        }
        if let Some(values) = node["enum"].as_array() {
            return values
                .iter()
                .map(Value::to_string)
                .collect::<Vec<_>>()
                .join(" | ");
        }
        if !node["const"].is_null() {
            return node["const"].to_string();
        }
        let kinds: Vec<&str> = match &node["type"] {
            Value::Array(kinds) => kinds.iter().filter_map(Value::as_str).collect(),
            Value::String(kind) => vec![kind.as_str()],
            _ => vec!["any"],
        };
        let shapes: Vec<String> = (kinds.iter())
            .map(|kind| match *kind {
                "array" => format!("[{}]", self.shape(&node["items"], defs)),
                "object" if node["properties"].is_object() => {
                    let mut lines = Vec::new();
                    self.fields("", node, defs, &mut lines);
                    let fields: Vec<&str> = lines.iter().map(|l| &l[1..]).collect();
                    format!("{{{}}}", fields.join(", "))
                }
                "object" if node["additionalProperties"].is_object() => {
                    format!(
                        "{{string: {}}}",
                        self.shape(&node["additionalProperties"], defs)
                    )
                }
                kind => kind.to_owned(),
            })
            .collect();
        shapes.join(" | ")
    }

    /// Lists the named type once and answers the name it is listed under: a second type of
    /// the same name with other fields is listed as `Name#2`, so neither hides the other.
    fn define(&mut self, name: &str, definition: &Value, defs: &Value) -> String {
        match self.types.get(name) {
            // Being listed: a type that contains itself.
            Some(None) => return name.to_owned(),
            Some(Some(_)) => {}
            None => {
                self.types.insert(name.to_owned(), None);
            }
        }
        let mut fields = Vec::new();
        self.fields("", definition, defs, &mut fields);
        let mut number = 1;
        loop {
            let listed = match number {
                1 => name.to_owned(),
                n => format!("{name}#{n}"),
            };
            match self.types.get(&listed) {
                Some(Some(existing)) if *existing == fields => return listed,
                Some(Some(_)) => number += 1,
                _ => {
                    self.types.insert(listed.clone(), Some(fields));
                    return listed;
                }
            }
        }
    }

    fn render(&self) -> String {
        let mut text = self.documents.join("\n");
        for (name, fields) in &self.types {
            text.push('\n');
            for line in fields.iter().flatten() {
                text.push_str(&format!("\n{name}{line}"));
            }
        }
        text.push('\n');
        text
    }
}
