//! One-line writes (issue 29): `note`, `node`, `edge`, `checkpoint`, `subgoal`, `backlog` and
//! `recheck` write through the one write path; each refuses bad input with the argument named
//! and the store unchanged; `--dry-run` prints the envelope and writes nothing.

use serde_json::Value;
use serde_json::json;

use crate::common::PASSING_VERIFIER;
use crate::common::TestEnv;
use crate::common::unfingerprinted;

const LEXER: &str = "pub fn retry_keeps_span() {\n    // retry\n}\n\npub fn lex() {}\n";

/// A repository with a lexer and a parser committed, and a store.
fn repo() -> TestEnv {
    let env = TestEnv::bare();
    env.write("src/lexer.rs", LEXER);
    env.write("src/parser.rs", "pub fn parse() {}\n");
    env.commit_all("code");
    env.ok(&["init", "--objective", "keep spans on retry"]);
    env
}

/// Runs `args` expecting exit 2, and checks that the store did not change.
fn refused(env: &TestEnv, args: &[&str]) -> Value {
    let before = env.store_bytes();
    let mut full = vec!["--json"];
    full.extend_from_slice(args);
    let output = env.run(&full);
    assert_eq!(output.code, 2, "{output}");
    assert_eq!(env.store_bytes(), before, "`{}` wrote", args.join(" "));
    output.json()["error"].clone()
}

/// A whole investigation written with flags alone reads back in `show` as written.
#[test]
fn regression_29_an_investigation_written_with_flags_alone_reads_back_exactly() {
    // See: issue 29.
    let env = repo();
    let note = env.json(&[
        "note",
        "Retry drops the span.\nThe retry loop rebuilds the token without its start.",
        "--ref",
        "src/lexer.rs:1-3#retry_keeps_span",
    ]);
    let [observation, evidence] = [&note["written"][0], &note["written"][1]];
    env.ok(&[
        "node",
        "set",
        "lexer",
        "--purpose",
        "turns bytes into tokens",
        "--ref",
        "src/lexer.rs",
    ]);
    env.ok(&[
        "node",
        "set",
        "parser",
        "--title",
        "Parser",
        "--purpose",
        "builds trees",
        "--ref",
        "src/parser.rs",
    ]);
    env.ok(&["node", "set", "lexer", "--mechanism", "a loop over bytes"]);
    env.ok(&[
        "node",
        "set",
        "tokens",
        "--graph",
        "dataflow",
        "--purpose",
        "the token stream",
    ]);
    env.ok(&[
        "edge", "add", "lexer", "parser", "--kind", "feeds", "--label", "tokens",
    ]);
    env.ok(&[
        "checkpoint",
        "set",
        "--focus",
        "lexer retry",
        "--next",
        "read the retry loop",
        "--ref",
        "src/lexer.rs#retry_keeps_span",
    ]);
    env.ok(&[
        "checkpoint",
        "set",
        "--disposition",
        "regather_required",
        "--question",
        "who resets the start?",
    ]);
    env.ok(&["subgoal", "add", "Keep spans on retry", "--active"]);
    env.ok(&["subgoal", "add", "Write the regression test"]);
    env.ok(&["subgoal", "done", "sg-write-the-regression-test"]);
    env.ok(&["backlog", "add", "Index Go files", "--priority", "low"]);
    env.ok(&["recheck", "lexer", "--checkpoint"]);
    let state = env.json(&["show"]);
    let checkpoint_id = state["investigation_checkpoint"]["checkpoint_id"].clone();
    assert!(
        checkpoint_id
            .as_str()
            .is_some_and(|id| id.starts_with("ck-"))
    );
    let expected = json!({
        "revision": 14,
        "objective": "keep spans on retry",
        "active_subgoal_id": "sg-keep-spans-on-retry",
        "subgoals": [
            {"id": "sg-keep-spans-on-retry", "title": "Keep spans on retry", "status": "open"},
            {"id": "sg-write-the-regression-test", "title": "Write the regression test", "status": "done"}
        ],
        "graphs": {
            "architecture": {
                "nodes": [
                    {"id": "lexer", "title": "lexer", "purpose": "turns bytes into tokens",
                     "mechanism": "a loop over bytes", "code_refs": [{"path": "src/lexer.rs"}]},
                    {"id": "parser", "title": "Parser", "purpose": "builds trees",
                     "code_refs": [{"path": "src/parser.rs"}]}
                ],
                "edges": [{"source_id": "lexer", "target_id": "parser", "kind": "feeds", "label": "tokens"}]
            },
            "dataflow": {"nodes": [{"id": "tokens", "title": "tokens", "purpose": "the token stream"}]}
        },
        "investigation_checkpoint": {
            "checkpoint_id": checkpoint_id,
            "kind": "investigation",
            "disposition": "regather_required",
            "focus": "lexer retry",
            "next_action": "read the retry loop",
            "open_questions": ["who resets the start?"],
            "code_refs": [{"path": "src/lexer.rs", "start_line": 1, "end_line": 3, "symbol": "retry_keeps_span"}]
        },
        "observations": [{
            "id": observation,
            "summary": "Retry drops the span.",
            "source_kind": "finding",
            "status": "ok",
            "code_refs": [{"path": "src/lexer.rs", "start_line": 1, "end_line": 3, "symbol": "retry_keeps_span"}],
            "evidence_ids": [evidence]
        }],
        "recent_evidence": [{
            "id": evidence,
            "kind": "note",
            "status": "ok",
            "summary": "Retry drops the span.\nThe retry loop rebuilds the token without its start.",
            "code_refs": [{"path": "src/lexer.rs", "start_line": 1, "end_line": 3, "symbol": "retry_keeps_span"}]
        }],
        "planning": {"backlog_items": [{
            "id": "bl-index-go-files", "title": "Index Go files", "kind": "task",
            "summary": "Index Go files", "status": "proposed", "horizon": "later",
            "priority": {"value": "low", "rationale": "added from the command line; not ranked yet"},
            "confidence": "medium", "product_area": "general"
        }]}
    });
    assert_eq!(unfingerprinted(&state), expected);
    assert_eq!(env.json(&["verify"])["ok"], true);
    // Every write went through the one path: one record each, all `update`.
    let log = env.json(&["log"]);
    let sources: Vec<&Value> = log["entries"]
        .as_array()
        .expect("entries")
        .iter()
        .map(|e| &e["source"])
        .collect();
    assert_eq!(sources.len(), 14);
    assert!(sources[..13].iter().all(|s| *s == "update"), "{log}");
}

#[test]
fn note_ids_depend_on_text_and_refs_and_a_repeat_is_refused() {
    let env = repo();
    let first = env.json(&["note", "checked the lexer", "--ref", "src/lexer.rs"]);
    let other_place = env.json(&["note", "checked the lexer", "--ref", "src/parser.rs"]);
    assert_ne!(first["written"][0], other_place["written"][0]);
    assert_eq!(first["changed_fields"], json!(["observations", "evidence"]));
    let again = refused(
        &env,
        &["note", "checked the lexer", "--ref", "src/lexer.rs"],
    );
    assert_eq!(again["problems"][0]["path"], "evidence[0].id", "{again}");
    // The whole text is kept; the summary is its first sentence that fits.
    let long = format!("{} {}", "First sentence here.", "word ".repeat(400));
    let kept = env.json(&["note", &long, "--kind", "decision"]);
    let state = env.json(&["show"]);
    let evidence = &state["recent_evidence"][0];
    assert_eq!(evidence["id"], kept["written"][1]);
    assert_eq!(evidence["summary"], long.trim());
    assert_eq!(state["observations"][0]["summary"], "First sentence here.");
    assert_eq!(state["observations"][0]["source_kind"], "decision");
    // From stdin.
    let piped = env.run_with_stdin(
        &["--json", "note", "-", "--kind", "question"],
        "why does retry reset?\n",
    );
    assert_eq!(piped.code, 0, "{piped}");
    assert_eq!(env.json(&["show"])["observations"][0]["status"], "open");
}

#[test]
fn bad_one_line_writes_name_the_argument_and_write_nothing() {
    let env = repo();
    env.ok(&["node", "set", "lexer", "--purpose", "p"]);
    let cases: Vec<(Vec<&str>, &str, &str)> = vec![
        (vec!["note", "  "], "TEXT", "must not be empty"),
        (
            vec!["note", "x", "--ref", "src/ghost.rs"],
            "--ref",
            "no such file",
        ),
        (
            vec!["note", "x", "--ref", "src/lexer.rs#nothing_here"],
            "--ref",
            "does not occur",
        ),
        (
            vec!["node", "set", "ghost"],
            "--purpose",
            "a new node needs a purpose",
        ),
        (
            vec!["node", "set", "lexer", "--title", " "],
            "--title",
            "must not be empty",
        ),
        (
            vec!["node", "rm", "ghost"],
            "ID",
            "there is no architecture node \"ghost\"",
        ),
        (
            vec!["edge", "add", "lexer", "ghost", "--kind", "feeds"],
            "SOURCE",
            "no graph holds both",
        ),
        (
            vec!["edge", "rm", "--id", "e9"],
            "EDGE",
            "there is no edge \"e9\"",
        ),
        (
            vec!["checkpoint", "set", "--focus", "f"],
            "--next",
            "a new one needs `--focus` and `--next`",
        ),
        (
            vec!["subgoal", "done", "sg-none"],
            "ID",
            "there is no subgoal \"sg-none\"",
        ),
        (vec!["backlog", "add", ""], "TITLE", "must not be empty"),
        (
            vec!["recheck", "ghost"],
            "NODE",
            "there is no node \"ghost\"",
        ),
        (
            vec!["recheck", "--checkpoint"],
            "--checkpoint",
            "no investigation checkpoint",
        ),
        (
            vec!["recheck", "--observation", "obs-none"],
            "--observation",
            "there is no observation",
        ),
        (vec!["recheck"], "NODE", "name a node"),
    ];
    for (args, path, message) in cases {
        let error = refused(&env, &args);
        let problems = error["problems"].as_array().expect("problems");
        assert!(
            problems
                .iter()
                .any(|p| p["path"].as_str().is_some_and(|p| p.contains(path))
                    && p["message"].as_str().is_some_and(|m| m.contains(message))),
            "{args:?}: {error}"
        );
    }
    // A wrong value for a fixed choice is clap's usage error, exit 2 too.
    refused(&env, &["note", "x", "--kind", "musing"]);
    refused(
        &env,
        &["node", "set", "x", "--purpose", "p", "--graph", "flow"],
    );
    refused(&env, &["checkpoint", "set", "--disposition", "later"]);
    // A stale expected revision is a conflict (exit 3), and writes nothing.
    let before = env.store_bytes();
    let conflict = env.run(&["note", "x", "--expected-revision", "1"]);
    assert_eq!(conflict.code, 3, "{conflict}");
    assert_eq!(env.store_bytes(), before);
}

#[test]
fn dry_run_prints_the_envelope_update_would_apply_and_writes_nothing() {
    let env = repo();
    let before = env.store_bytes();
    let draft = env.json(&[
        "node",
        "set",
        "lexer",
        "--purpose",
        "p",
        "--ref",
        "./src/lexer.rs",
        "--dry-run",
    ]);
    assert_eq!(env.store_bytes(), before);
    assert_eq!(draft["expected_revision"], 1);
    assert_eq!(
        unfingerprinted(&draft["patch"]),
        json!({"upsert": {"architecture_nodes": [{"id": "lexer", "title": "lexer", "purpose": "p",
                                                  "code_refs": [{"path": "src/lexer.rs"}]}]}})
    );
    // It ran every check: a dry run of a bad write fails like the write.
    refused(&env, &["note", "x", "--ref", "src/ghost.rs", "--dry-run"]);
    // And the envelope is what `update` applies.
    let applied = env.run_with_stdin(&["--json", "update"], draft.to_string());
    assert_eq!(applied.code, 0, "{applied}");
    assert_eq!(
        env.json(&["show"])["graphs"]["architecture"]["nodes"][0]["purpose"],
        "p"
    );
    let update_dry = env.run_with_stdin(
        &["--json", "update", "--dry-run"],
        json!({"objective": "o2"}).to_string(),
    );
    assert_eq!(update_dry.code, 0, "{update_dry}");
    assert_eq!(update_dry.json()["patch"], json!({"objective": "o2"}));
    assert_eq!(env.json(&["show"])["objective"], "keep spans on retry");
}

#[test]
fn node_rm_removes_what_names_the_node_in_one_write() {
    let env = repo();
    env.ok(&["node", "set", "lexer", "--purpose", "p"]);
    env.ok(&["node", "set", "parser", "--purpose", "p"]);
    env.ok(&["edge", "add", "lexer", "parser", "--kind", "feeds"]);
    env.update(&json!({"graph_frontier": {"active_node_ids": ["parser"]}}));
    let removed = env.run(&["node", "rm", "parser"]);
    assert_eq!(removed.code, 0, "{removed}");
    assert!(
        removed.stdout.contains(
            "  removed architecture_nodes/parser, architecture_edges/lexer->parser:feeds, graph_frontier.active_node_ids/parser\n"
        ),
        "{removed}"
    );
    let state = env.json(&["show"]);
    assert_eq!(
        state["graphs"]["architecture"]["nodes"]
            .as_array()
            .map(Vec::len),
        Some(1)
    );
    assert!(
        state["graphs"]["architecture"]["edges"].is_null(),
        "{state}"
    );
    assert_eq!(state["graph_frontier"], json!({}));
    env.ok(&[
        "edge", "add", "lexer", "lexer", "--kind", "loops", "--id", "self",
    ]);
    env.ok(&["edge", "rm", "--id", "self"]);
    assert!(env.json(&["show"])["graphs"]["architecture"]["edges"].is_null());
}

/// After `propose | promote`, the frontier names the edges around what was proposed, and
/// `edge rm` and `node rm` refused to remove them (`graph_frontier.active_edge_ids[0]: names
/// missing edge`), with no one-line way out. They now take them off the frontier too, and say
/// so.
#[test]
fn regression_46_removals_after_propose_and_promote_clean_up_the_frontier() {
    // See: issue 46.
    let env = repo();
    env.ok(&[
        "node",
        "set",
        "lexer",
        "--purpose",
        "lexes",
        "--ref",
        "src/lexer.rs",
    ]);
    env.ok(&[
        "node",
        "set",
        "parser",
        "--purpose",
        "parses",
        "--ref",
        "src/parser.rs",
    ]);
    env.ok(&[
        "edge", "add", "lexer", "parser", "--kind", "feeds", "--id", "e1",
    ]);
    env.ok(&[
        "note",
        "the lexer drops the span",
        "--ref",
        "src/lexer.rs",
        "--kind",
        "result",
    ]);
    let proposal = env.ok(&["--json", "propose"]);
    let promoted = env.run_json_with_stdin(&PASSING_VERIFIER, proposal.stdout.as_str());
    assert_eq!(promoted.code, 0, "{promoted}");
    assert_eq!(promoted.json()["accepted"], true, "{promoted}");
    let frontier = env.json(&["show"])["graph_frontier"].clone();
    assert_eq!(frontier["active_node_ids"], json!(["lexer"]), "{frontier}");
    assert_eq!(frontier["active_edge_ids"], json!(["e1"]), "{frontier}");
    let edge_rm = env.json(&["edge", "rm", "--id", "e1"]);
    assert_eq!(
        edge_rm["removed"],
        json!(["architecture_edges/e1", "graph_frontier.active_edge_ids/e1"])
    );
    assert_eq!(
        edge_rm["changed_fields"],
        json!(["graphs", "graph_frontier"])
    );
    assert!(edge_rm.get("written").is_none(), "{edge_rm}");
    env.ok(&[
        "edge", "add", "lexer", "parser", "--kind", "feeds", "--id", "e1",
    ]);
    env.update(
        &json!({"graph_frontier": {"active_node_ids": ["lexer"], "active_edge_ids": ["e1"]}}),
    );
    let node_rm = env.run(&["node", "rm", "lexer"]);
    assert_eq!(node_rm.code, 0, "{node_rm}");
    assert!(
        node_rm.stdout.contains(
            "  removed architecture_nodes/lexer, architecture_edges/e1, graph_frontier.active_node_ids/lexer, graph_frontier.active_edge_ids/e1\n"
        ),
        "{node_rm}"
    );
    let state = env.json(&["show"]);
    assert_eq!(
        state["graph_frontier"]["active_node_ids"],
        Value::Null,
        "{state}"
    );
    assert_eq!(
        state["graph_frontier"]["active_edge_ids"],
        Value::Null,
        "{state}"
    );
    let nodes = state["graphs"]["architecture"]["nodes"].to_string();
    assert!(!nodes.contains("\"lexer\""), "{nodes}");
    assert_eq!(env.json(&["verify"])["ok"], true);
}

/// On a state built by hand, with both graphs, links, and ids on the frontier and the graph
/// checkpoint: removing a node takes away everything that would name it, and only that; an id
/// the other graph still holds stays.
#[test]
fn removals_take_away_what_would_dangle_on_a_hand_built_state() {
    let env = repo();
    let node = |id: &str| json!({"id": id, "title": id, "purpose": "p"});
    env.update(&json!({
        "graphs": {
            "architecture": {
                "nodes": [node("lexer"), node("parser"), node("emitter")],
                "edges": [
                    {"id": "e1", "source_id": "lexer", "target_id": "parser", "kind": "feeds"},
                    {"source_id": "parser", "target_id": "lexer", "kind": "calls"},
                    {"id": "e2", "source_id": "parser", "target_id": "emitter", "kind": "feeds"}
                ]
            },
            "dataflow": {
                "nodes": [node("tokens"), node("lexer")],
                "edges": [{"id": "e3", "source_id": "tokens", "target_id": "lexer", "kind": "flows"}]
            },
            "links": [
                {"dataflow_node_id": "tokens", "architecture_node_id": "lexer"},
                {"dataflow_node_id": "lexer", "architecture_node_id": "parser"}
            ]
        },
        "graph_frontier": {"active_node_ids": ["lexer", "parser", "tokens"],
                           "active_edge_ids": ["e1", "e2", "e3"], "dirty_paths": ["src/lexer.rs"]},
        "graph_checkpoint": {"checkpoint_id": "gc-1", "graph_revision": 1,
                             "frontier_node_ids": ["parser", "lexer"]}
    }));
    let removed = env.json(&["node", "rm", "parser"]);
    assert_eq!(
        removed["removed"],
        json!([
            "architecture_nodes/parser",
            "architecture_edges/e1",
            "architecture_edges/parser->lexer:calls",
            "architecture_edges/e2",
            "links/lexer->parser",
            "graph_frontier.active_node_ids/parser",
            "graph_frontier.active_edge_ids/e1",
            "graph_frontier.active_edge_ids/e2",
            "graph_checkpoint.frontier_node_ids/parser"
        ])
    );
    assert_eq!(
        removed["changed_fields"],
        json!(["graphs", "graph_frontier", "graph_checkpoint"])
    );
    // `lexer` lives in both graphs: removing the architecture one keeps its frontier place.
    let removed = env.json(&["node", "rm", "lexer", "--graph", "architecture"]);
    assert_eq!(
        removed["removed"],
        json!(["architecture_nodes/lexer", "links/tokens->lexer"])
    );
    let state = env.json(&["show"]);
    assert_eq!(
        state["graphs"]["architecture"],
        json!({"nodes": [node("emitter")]})
    );
    assert_eq!(state["graphs"]["links"], Value::Null, "{state}");
    assert_eq!(
        state["graph_frontier"],
        json!({"active_node_ids": ["lexer", "tokens"], "active_edge_ids": ["e3"],
               "dirty_paths": ["src/lexer.rs"]})
    );
    assert_eq!(
        state["graph_checkpoint"],
        json!({"checkpoint_id": "gc-1", "graph_revision": 1, "frontier_node_ids": ["lexer"]})
    );
    let removed = env.ok(&["edge", "rm", "tokens", "lexer", "--kind", "flows"]);
    let lines: Vec<&str> = removed.stdout.lines().collect();
    assert!(
        lines.len() == 2 && lines[0].starts_with("revision 5: graphs, graph_frontier (record "),
        "{removed}"
    );
    assert_eq!(
        lines[1],
        "  removed dataflow_edges/e3, graph_frontier.active_edge_ids/e3"
    );
    assert_eq!(env.json(&["verify"])["ok"], true);
}

/// Removing what is not there names it, and writes nothing.
#[test]
fn removing_an_unknown_id_says_so_and_changes_nothing() {
    let env = repo();
    env.ok(&["node", "set", "lexer", "--purpose", "p"]);
    env.ok(&[
        "edge", "add", "lexer", "lexer", "--kind", "loops", "--id", "self",
    ]);
    let cases: [(&[&str], &str, &str, &str); 4] = [
        (
            &["node", "rm", "ghost"],
            "the node was not removed",
            "ID",
            "there is no architecture node \"ghost\"",
        ),
        (
            &["node", "rm", "lexer", "--graph", "dataflow"],
            "the node was not removed",
            "ID",
            "there is no dataflow node \"lexer\"",
        ),
        (
            &["edge", "rm", "--id", "ghost"],
            "the edge was not removed",
            "EDGE",
            "there is no edge \"ghost\"",
        ),
        (
            &["edge", "rm", "lexer", "lexer", "--kind", "feeds"],
            "the edge was not removed",
            "EDGE",
            "there is no edge lexer -feeds-> lexer",
        ),
    ];
    for (args, message, path, problem) in cases {
        let error = refused(&env, args);
        assert_eq!(error["message"], message, "{args:?}: {error}");
        assert_eq!(
            error["problems"],
            json!([{"path": path, "message": problem}]),
            "{args:?}: {error}"
        );
        let text = env.run(args);
        assert!(
            text.stderr.contains(&format!("{path}: {problem}")),
            "{args:?}: {text}"
        );
    }
}

/// Rewriting a node unchanged does not clear its staleness (it writes nothing and says so);
/// `recheck` does, without changing the node.
#[test]
fn regression_29_recheck_clears_staleness_an_unchanged_rewrite_did_not() {
    // See: issue 29.
    let env = repo();
    env.ok(&[
        "node",
        "set",
        "lexer",
        "--purpose",
        "turns bytes into tokens",
        "--ref",
        "src/lexer.rs",
    ]);
    env.ok(&[
        "checkpoint",
        "set",
        "--focus",
        "lexer",
        "--next",
        "read it",
        "--ref",
        "src/lexer.rs",
    ]);
    env.commit_all("map");
    env.write("src/lexer.rs", format!("// a comment\n{LEXER}"));
    env.commit_all("the lexer changed");
    assert_eq!(env.run(&["freshness", "--check"]).code, 1);
    let node_before = env.json(&["show"])["graphs"].clone();
    let rewrite = env.run(&[
        "node",
        "set",
        "lexer",
        "--purpose",
        "turns bytes into tokens",
    ]);
    assert_eq!(rewrite.code, 0, "{rewrite}");
    assert!(
        rewrite.stderr.contains("epiphany recheck lexer"),
        "{rewrite}"
    );
    let still = env.run(&["--json", "freshness", "--check"]);
    assert_eq!(still.code, 1, "{still}");
    assert!(still.stdout.contains("cited_files_changed"), "{still}");
    let rechecked = env.json(&["recheck", "lexer"]);
    assert_eq!(rechecked["written"], json!(["architecture_nodes/lexer"]));
    // The checkpoint still cites the changed file.
    let partly = env.json_allowing(&["freshness", "--check"], 1);
    let change = &partly["watcher"]["changes"][0];
    assert_eq!(change["graph_node_ids"], json!([]), "{partly}");
    assert_eq!(change["cited_by_checkpoint"], true, "{partly}");
    env.ok(&["recheck", "--checkpoint"]);
    let fresh = env.run(&["freshness", "--check"]);
    assert_eq!(fresh.code, 0, "{fresh}");
    // Re-checking changes nothing of the node but what was checked of its references.
    let after = env.json(&["show"])["graphs"].clone();
    assert_eq!(
        unfingerprinted(&after),
        unfingerprinted(&node_before),
        "recheck changed the node"
    );
    let fingerprint =
        |graphs: &Value| graphs["architecture"]["nodes"][0]["code_refs"][0]["fingerprint"].clone();
    assert_ne!(fingerprint(&after), fingerprint(&node_before));
    // A later change counts again.
    env.write("src/lexer.rs", format!("// another\n{LEXER}"));
    assert_eq!(env.run(&["freshness", "--check"]).code, 1);
}

/// An observation whose file was renamed is superseded by one citing the new path; views show
/// the new one, and the re-check no longer reports the old one.
#[test]
fn recheck_supersedes_an_observation_whose_refs_moved() {
    let env = repo();
    let note = env.json(&[
        "note",
        "retry drops the span",
        "--ref",
        "src/lexer.rs#retry_keeps_span",
        "--ref",
        "src/parser.rs",
    ]);
    let old = note["written"][0].as_str().expect("id").to_owned();
    env.commit_all("note");
    env.git(&["mv", "src/lexer.rs", "src/lex.rs"]);
    std::fs::remove_file(env.root().join("src/parser.rs")).expect("rm");
    env.commit_all("rename the lexer, drop the parser");
    let unchanged = env.json(&["note", "unrelated"]);
    assert!(unchanged["written"].is_array());
    // Until then, its refs are marked wherever it is shown (the views follow renames since
    // the last write only, so this one reads as missing there).
    let marked = format!("{old}: src/lexer.rs (missing)");
    let prompt = env.ok(&["prompt"]).stdout;
    assert!(
        prompt.contains("Code refs that no longer hold") && prompt.contains(&marked),
        "{prompt}"
    );
    let scene = env.json(&["scene"]);
    let outdated = &scene["staleness"]["outdated_record_refs"];
    assert!(
        outdated.to_string().contains(&marked)
            && outdated.to_string().contains("src/parser.rs (missing)"),
        "{scene}"
    );
    let scene = env.ok(&["scene"]).stdout;
    assert!(
        scene.contains("code refs that no longer hold") && scene.contains(&marked),
        "{scene}"
    );
    let context = env.json(&["context", "--observation", &old]);
    let findings: Vec<(String, String, String)> = context["refs_not_holding"]
        .as_array()
        .expect("refs_not_holding")
        .iter()
        .map(|finding| {
            let text = |value: &Value| value.as_str().unwrap_or_default().to_owned();
            let owner = &finding["owner"];
            (
                text(&finding["kind"]),
                text(&owner["id"]),
                text(&finding["code_ref"]["path"]),
            )
        })
        .collect();
    let missing = |path: &str| ("missing".to_owned(), old.clone(), path.to_owned());
    assert_eq!(
        findings,
        [missing("src/lexer.rs"), missing("src/parser.rs")],
        "{context}"
    );
    let context = env.ok(&["context", "--observation", &old]).stdout;
    assert!(
        context.contains("code refs that no longer hold:")
            && context.contains("missing src/lexer.rs:1-3#retry_keeps_span on observation"),
        "{context}"
    );
    let output = env.run(&["--json", "recheck", "--observation", &old]);
    assert_eq!(output.code, 0, "{output}");
    assert!(
        output.stderr.contains("`src/parser.rs` no longer holds"),
        "{output}"
    );
    let new = output.json()["written"][0].as_str().expect("id").to_owned();
    let state = env.json(&["show"]);
    let superseding = state["observations"]
        .as_array()
        .expect("observations")
        .iter()
        .find(|o| o["id"] == new.as_str())
        .expect("new observation")
        .clone();
    assert_eq!(superseding["supersedes"], old.as_str());
    assert_eq!(superseding["summary"], "retry drops the span");
    assert_eq!(
        unfingerprinted(&superseding["code_refs"]),
        json!([{"path": "src/lex.rs", "start_line": 1, "end_line": 3, "symbol": "retry_keeps_span"}])
    );
    let prompt = env.ok(&["prompt"]).stdout;
    assert!(prompt.contains(&new) && !prompt.contains(&old), "{prompt}");
    assert!(
        !prompt.contains("Code refs that no longer hold"),
        "{prompt}"
    );
    let scene = env.json(&["scene"]);
    assert!(!scene.to_string().contains(&old), "{scene}");
    let context = env.json(&["context", "--observation", &new]);
    assert_eq!(context["refs_not_holding"], json!([]), "{context}");
    let references = &env.json_allowing(&["freshness"], 0)["references"];
    assert!(
        !references
            .to_string()
            .contains(&format!("\"id\":\"{old}\"")),
        "{references}"
    );
    // Re-checking the new one finds nothing to supersede.
    let again = env.run(&["--json", "recheck", "--observation", &new]);
    assert_eq!(again.code, 0, "{again}");
    assert_eq!(again.json()["changed_fields"], json!([]));
}

/// The checkpoint refused no unknown field; it now refuses them like every other object, with
/// the closest known field named, and a patch with several bad items lists all of them.
#[test]
fn regression_29_unknown_checkpoint_fields_and_every_bad_item_are_named() {
    // See: issue 29.
    let env = repo();
    let before = env.store_bytes();
    let checkpoint = json!({"investigation_checkpoint": {"checkpoint_id": "c", "kind": "bug",
        "disposition": "resume_ready", "focus": "f", "next_action": "n",
        "code_ref": [{"path": "src/lexer.rs"}], "sumary": "s", "open_question": ["q"]}});
    let output = env.run_with_stdin(&["--json", "update"], checkpoint.to_string());
    assert_eq!(output.code, 2, "{output}");
    assert_eq!(
        output.json()["error"]["problems"],
        json!([
            {"path": "investigation_checkpoint.code_ref", "message": "unknown field `code_ref`; did you mean `code_refs`?"},
            {"path": "investigation_checkpoint.sumary", "message": "unknown field `sumary`; did you mean `summary`?"},
            {"path": "investigation_checkpoint.open_question", "message": "unknown field `open_question`; did you mean `open_questions`?"}
        ])
    );
    let items = env.run_with_stdin(&["update"], r#"{"observations":[{"id":"o1"},{"id":"o2"}]}"#);
    assert_eq!(items.code, 2);
    for index in [0, 1] {
        for field in ["summary", "source_kind", "status", "evidence_ids"] {
            let line = format!("  - observations[{index}].{field}: is required");
            assert!(items.stderr.contains(&line), "{line}\n{items}");
        }
    }
    let validated = json!({"observations": [
        {"id": "o1", "summary": "s", "source_kind": "k", "status": "ok", "evidence_ids": ["ev-9"]},
        {"id": "o2", "summary": " ", "source_kind": "k", "status": "ok", "evidence_ids": ["ev-8"]}
    ]});
    let output = env.run_with_stdin(&["--json", "update"], validated.to_string());
    assert_eq!(
        output.json()["error"]["problems"],
        json!([
            {"path": "observations[1].summary", "message": "must not be empty"},
            {"path": "observations[0].evidence_ids[0]", "message": "cites missing evidence id \"ev-9\""},
            {"path": "observations[1].evidence_ids[0]", "message": "cites missing evidence id \"ev-8\""}
        ])
    );
    assert_eq!(env.store_bytes(), before);
}

/// Agents reach the one-line writes over MCP as one tool per subcommand.
#[test]
fn one_line_writes_are_mcp_tools() {
    let env = repo();
    let requests = [
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "node_set", "arguments": {"id": "lexer", "purpose": "tokens", "refs": ["src/lexer.rs"]}}}),
        json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "note", "arguments": {"text": "checked", "kind": "result"}}}),
    ];
    let input: String = requests.iter().map(|r| format!("{r}\n")).collect();
    let output = env.run_with_stdin(&["mcp"], input);
    let answers: Vec<Value> = output
        .stdout
        .lines()
        .map(|line| serde_json::from_str(line).expect("json"))
        .collect();
    for answer in &answers[1..] {
        assert_eq!(answer["result"]["isError"], false, "{answer}");
    }
    assert_eq!(
        answers[1]["result"]["structuredContent"]["written"],
        json!(["architecture_nodes/lexer"])
    );
    let state = env.json(&["show"]);
    assert_eq!(
        unfingerprinted(&state["graphs"]["architecture"]["nodes"][0]["code_refs"]),
        json!([{"path": "src/lexer.rs"}])
    );
    assert_eq!(state["observations"][0]["source_kind"], "result");
}

/// `distill` on real test-runner output keeps the totals and the failures (cargo test kept
/// `Finished ... in 0.64s` and dropped `test result: FAILED`), and the same text about two
/// places drafts two ids that can both be written.
#[test]
fn regression_29_distill_keeps_totals_and_failures_and_refs_change_ids() {
    // See: issue 29.
    let env = repo();
    let outputs = [
        (
            "cargo-test-failing.txt",
            [
                "test result: FAILED. 2 passed; 1 failed",
                "panicked at src/lib.rs:21:9",
            ],
        ),
        (
            "cargo-nextest-failing.txt",
            [
                "3 tests run: 2 passed, 1 failed",
                "FAIL [ 0.009s] (3/3) rs tests::carries_into_the_next_digit",
            ],
        ),
        (
            "pytest-failing.txt",
            [
                "1 failed, 2 passed in 0.07s",
                "FAILED test_calc.py::test_carries_into_the_next_digit",
            ],
        ),
        (
            "go-test-failing.txt",
            [
                "FAIL example.com/calc 0.005s",
                "calc_test.go:19: Add(5, 5) = 10, want 11",
            ],
        ),
        (
            "jest-failing.txt",
            [
                "Tests: 1 failed, 2 passed, 3 total",
                "● add › carries into the next digit",
            ],
        ),
        (
            "vitest-failing.txt",
            ["Tests 1 failed | 2 passed (3)", "❯ vt/calc.test.mjs:13:23"],
        ),
        (
            "cargo-build-error.txt",
            [
                "error[E0425]: cannot find value `c` in this scope",
                "--> src/lib.rs:2:13",
            ],
        ),
    ];
    for (file, kept) in outputs {
        let path = format!(
            "{}/tests/fixtures/tool_output/{file}",
            env!("CARGO_MANIFEST_DIR")
        );
        let text = std::fs::read_to_string(&path).expect("fixture");
        let output = env.run_with_stdin(
            &[
                "--json",
                "distill",
                "--source-kind",
                "test",
                "--status",
                "failed",
            ],
            text,
        );
        assert_eq!(output.code, 0, "{output}");
        let summary = output.json()["patch"]["observations"][0]["summary"].clone();
        let summary = summary.as_str().expect("summary");
        for part in kept {
            assert!(summary.contains(part), "{file}: {summary}");
        }
        assert!(!summary.contains("Finished"), "{file}: {summary}");
        assert!(
            output.stderr.contains("write it with `epiphany note`"),
            "{output}"
        );
    }
    let about = |code_ref: &str| {
        let args = ["distill", "--source-kind", "finding", "--status", "ok"];
        let mut args = args.to_vec();
        args.extend(["--text", "retry drops the span", "--code-ref", code_ref]);
        env.json(&args)
    };
    let mut ids = Vec::new();
    for code_ref in ["src/lexer.rs", "src/parser.rs"] {
        let draft = about(code_ref);
        ids.push(draft["patch"]["observations"][0]["id"].clone());
        let written = env.run_with_stdin(&["update"], draft.to_string());
        assert_eq!(written.code, 0, "{written}");
    }
    assert_ne!(ids[0], ids[1]);
}

/// A code ref is spelled one way in every output, the way `--ref` takes it: an agent can copy
/// it from `prompt`, `context` or `graph` into a write.
#[test]
fn regression_29_outputs_spell_code_refs_as_inputs_take_them() {
    // See: issue 29.
    let env = repo();
    let spelled = "src/lexer.rs:1-3#retry_keeps_span";
    let note = env.json(&["note", "retry drops the span", "--ref", spelled]);
    env.ok(&["node", "set", "lexer", "--purpose", "p", "--ref", spelled]);
    let observation = note["written"][0].as_str().expect("id");
    for args in [
        vec!["prompt"],
        vec!["context", "--observation", observation],
        vec!["graph", "--node", "lexer"],
    ] {
        let shown = env.ok(&args).stdout;
        assert!(shown.contains(&format!("`{spelled}`")), "{args:?}: {shown}");
        assert!(!shown.contains("(symbol:"), "{args:?}: {shown}");
    }
    // Copied back into a write, it is accepted as the same ref.
    env.ok(&[
        "checkpoint",
        "set",
        "--focus",
        "f",
        "--next",
        "n",
        "--ref",
        spelled,
    ]);
    assert_eq!(
        env.json(&["show"])["investigation_checkpoint"]["code_refs"],
        env.json(&["show"])["observations"][0]["code_refs"]
    );
}
