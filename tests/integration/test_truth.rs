//! Issue 10, "the map never lies": code references are checked when written, claims are
//! re-checked mechanically, every view tells the same truth, promotion settles what it
//! verified, and the command line keeps its contract.
// See: issue 10 ("The map never lies")

use serde_json::json;

use crate::common::PASSING_VERIFIER;
use crate::common::TestEnv;
use crate::common::distill_args;
use crate::common::problem_lines;
use crate::common::unfingerprinted;

#[test]
fn regression_10_json_usage_errors_are_json_documents() {
    let env = TestEnv::new();
    for (args, needle) in [
        (&["--json", "scene", "--bogus"][..], "--bogus"),
        (
            &["--json", "distill", "--status", "ok", "--source-kind"],
            "--source-kind",
        ),
        // A value is never repeated (it may be a secret typed in the wrong place): the
        // flag is named, and the value's length.
        (&["--json", "pressure", "--used", "many"], "--used"),
        (
            &["--json", "graph", "--direction", "sideways"],
            "--direction",
        ),
        (&["--json", "distill", "--status", "ok"], "--source-kind"),
        (&["--json", "frobnicate"], "unrecognized subcommand"),
        (&["--json", "prompt", "--max-chars", "10"], "10"),
        (&["scene", "--json", "--depth", "2"], "--depth"),
    ] {
        let output = env.run(args);
        assert_eq!(output.code, 2, "{args:?}:\n{output}");
        let document = output.json();
        assert_eq!(document["error"]["kind"], "usage", "{args:?}:\n{output}");
        let message = document["error"]["message"].as_str().unwrap_or_default();
        assert!(message.contains(needle), "{args:?}: {message}");
        assert!(
            !["many", "sideways", "frobnicate"]
                .iter()
                .any(|value| message.contains(value)),
            "{message}"
        );
        assert!(!message.starts_with("error:"), "{message}");
        assert!(document["error"]["hint"].is_string(), "{document}");
        assert!(output.stderr.contains("error:"), "{output}");
    }
    // Help is not an error, with or without `--json`.
    let help = env.run(&["--json", "scene", "--help"]);
    assert_eq!(help.code, 0, "{help}");
    assert!(help.stdout.contains("Usage:"), "{help}");
    // Without `--json`, clap's own message.
    let plain = env.run(&["scene", "--bogus"]);
    assert_eq!((plain.code, plain.stdout.as_str()), (2, ""), "{plain}");
}

#[test]
fn regression_10_text_may_begin_with_a_dash() {
    let env = TestEnv::new();
    let draft = env.json(&distill_args("note", &["--text", "-5 apples, then --more"]));
    assert_eq!(
        draft["patch"]["observations"][0]["summary"],
        "-5 apples, then --more"
    );
}

#[test]
fn regression_10_diff_takes_head_style_names() {
    let env = TestEnv::new();
    for objective in ["one", "two", "three"] {
        env.update(&json!({"objective": objective}));
    }
    let numbered = env.json(&["diff", "1", "3"]);
    assert_eq!(env.json(&["diff", "HEAD~2", "HEAD"]), numbered);
    assert_eq!(env.json(&["diff", "HEAD^^", "@"]), numbered);
    let last = env.json(&["diff", "HEAD^"]);
    assert_eq!(
        (last["from"].clone(), last["to"].clone()),
        (json!(2), json!(3))
    );
    let bad = env.run(&["--json", "diff", "HEAD~9"]);
    assert_eq!(bad.code, 2, "{bad}");
    assert_eq!(bad.json()["error"]["kind"], "usage");
    assert!(
        bad.json()["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("the head is revision 3")),
        "{bad}"
    );
}

/// A committed repository holding `files`, with a store.
fn repo(files: &[(&str, &str)]) -> TestEnv {
    let env = TestEnv::new();
    for (path, contents) in files {
        env.write(path, contents);
    }
    env.commit_all("code");
    env
}

const LIB: &str = "// lib\npub fn alpha() {}\n// three\n// four\n// five\n// six\n// seven\n// eight\n// nine\n// ten\n";

fn observed_at(code_refs: serde_json::Value) -> serde_json::Value {
    json!({
        "observations": [{"id": "obs-r", "summary": "s", "source_kind": "test", "status": "ok",
                          "evidence_ids": ["ev-r"], "code_refs": code_refs}],
        "evidence": [{"id": "ev-r", "kind": "test", "status": "ok", "summary": "s"}]
    })
}

#[test]
fn regression_10_bad_references_are_refused_and_nothing_is_written() {
    let env = repo(&[("src/lib.rs", LIB)]);
    env.update(&json!({"objective": "map the lib"}));
    let before = env.store_bytes();
    let cases = [
        (
            json!({"path": "src/nope.rs"}),
            "observations/obs-r.code_refs: `src/nope.rs`: no such file in the work tree",
        ),
        (
            json!({"path": "src/lib.rs", "start_line": 50, "end_line": 10}),
            "start_line 50 is after end_line 10",
        ),
        (
            json!({"path": "src/lib.rs", "start_line": 0}),
            "start_line must be 1 or more",
        ),
        (
            json!({"path": "src/lib.rs", "start_line": 5, "end_line": 99}),
            "line 99 is past the end of the file (10 lines)",
        ),
        (
            json!({"path": "src/lib.rs", "symbol": "ghost"}),
            "symbol `ghost` does not occur in the file",
        ),
        (
            json!({"path": "src/lib.rs", "start_line": 6, "end_line": 8, "symbol": "alpha"}),
            "lines 6-8 are not the definition of `alpha`, a part of it or a window around it (it is at lines 2-2;",
        ),
        (
            json!({"path": "src/lib.rs", "symbol": "lib"}),
            "symbol `lib` has no definition in the file (a mention is not one; it occurs at line 1)",
        ),
        (
            json!({"path": "src/lib.rs", "end_line": 4}),
            "end_line is given without start_line",
        ),
        (json!({"path": "../../etc/passwd"}), "leaves the repository"),
    ];
    for (code_ref, message) in &cases {
        let output = env.run_with_stdin(&["update"], observed_at(json!([code_ref])).to_string());
        assert_eq!(output.code, 2, "{code_ref}:\n{output}");
        assert!(output.stderr.contains(message), "{code_ref}:\n{output}");
        assert!(output.stderr.contains("nothing was written"), "{output}");
        assert_eq!(env.store_bytes(), before, "{code_ref}");
    }
    // Every violation of one patch is listed, dirty paths included.
    let mut patch = observed_at(json!(
        cases.iter().map(|(r, _)| r.clone()).collect::<Vec<_>>()
    ));
    patch["graph_frontier"] =
        json!({"dirty_paths": ["../x", "/etc/passwd", "src/ghost.rs", "src/lib.rs"]});
    let all = env.run_with_stdin(&["--json", "update"], patch.to_string());
    assert_eq!(all.code, 2, "{all}");
    let problems = problem_lines(&all.json()["error"]);
    for (_, message) in &cases {
        assert!(
            problems.iter().any(|p| p.contains(message)),
            "{message}: {problems:?}"
        );
    }
    for message in [
        "graph_frontier.dirty_paths[0]: \"../x\" leaves the repository",
        "graph_frontier.dirty_paths[1]: \"/etc/passwd\" is absolute",
        "graph_frontier.dirty_paths[2]: \"src/ghost.rs\": no such file in the work tree",
    ] {
        assert!(
            problems.iter().any(|p| p.contains(message)),
            "{message}: {problems:?}"
        );
    }
    assert!(
        !problems.iter().any(|p| p.contains("\"src/lib.rs\"")),
        "{problems:?}"
    );
    assert_eq!(env.store_bytes(), before);

    // `distill --code-ref` refuses the same things, before drafting.
    for (typed, message) in [
        (
            "src/lib.rs:20-10",
            "the start line 20 is after the end line 10",
        ),
        ("src/nope.rs", "no such file in the work tree"),
        (
            "src/lib.rs:11",
            "line 11 is past the end of the file (10 lines)",
        ),
        (
            "src/lib.rs:1-3#ghost",
            "symbol `ghost` does not occur in the file",
        ),
    ] {
        let output = env.run(&distill_args("note", &["--code-ref", typed, "--text", "t"]));
        assert_eq!(output.code, 2, "{typed}:\n{output}");
        assert!(output.stderr.contains(message), "{typed}:\n{output}");
        assert_eq!(output.stdout, "", "{typed}");
    }
    // A good one passes, normalised.
    env.update(&observed_at(
        json!([{"path": "./src//lib.rs", "start_line": 1, "end_line": 3, "symbol": "alpha"}]),
    ));
    assert_eq!(
        unfingerprinted(&env.json(&["show"])["observations"][0]["code_refs"]),
        json!([{"path": "src/lib.rs", "start_line": 1, "end_line": 3, "symbol": "alpha"}])
    );
}

#[test]
fn regression_10_references_typed_in_a_subdirectory_are_stored_at_their_real_path() {
    let env = repo(&[(
        "src/line_buffer.rs",
        "pub struct LineBuffer;\nimpl LineBuffer {}\n",
    )]);
    let draft = env.run(&distill_args(
        "note",
        &[
            "-C",
            "src",
            "--code-ref",
            "line_buffer.rs:1#LineBuffer",
            "--text",
            "seen from src/",
        ],
    ));
    assert_eq!(draft.code, 0, "{draft}");
    assert_eq!(
        unfingerprinted(&draft.json()["patch"]["observations"][0]["code_refs"]),
        json!([{"path": "src/line_buffer.rs", "start_line": 1, "symbol": "LineBuffer"}])
    );
    env.ok_with(&["-C", "src", "update"], &[], draft.stdout.clone());
    // A patch written in the subdirectory: the root reading does not exist, the local one does.
    let local = observed_at(
        json!([{"path": "line_buffer.rs"}, {"path": "../src/line_buffer.rs", "start_line": 1}]),
    );
    let local = local
        .to_string()
        .replace("obs-r", "obs-local")
        .replace("ev-r", "ev-local");
    env.ok_with(&["-C", "src", "update"], &[], local);
    assert_eq!(
        unfingerprinted(&env.json(&["show"])["observations"][0]["code_refs"]),
        json!([{"path": "src/line_buffer.rs"}, {"path": "src/line_buffer.rs", "start_line": 1}])
    );
    // Going above the root from a subdirectory is refused.
    let escape = env.run(&distill_args(
        "note",
        &["-C", "src", "--code-ref", "../../x.rs", "--text", "t"],
    ));
    assert_eq!(escape.code, 2, "{escape}");
    assert!(escape.stderr.contains("leaves the repository"), "{escape}");
}

#[test]
fn regression_10_plans_may_cite_files_still_to_be_written() {
    let env = repo(&[("src/lib.rs", LIB)]);
    let plan = json!({
        "investigation_checkpoint": {"checkpoint_id": "ck", "kind": "plan", "disposition": "resume_ready",
            "focus": "the new module", "next_action": "write it", "code_refs": [{"path": "src/new_module.rs"}]},
        "graph_frontier": {"dirty_paths": ["src/new_module.rs"]}
    });
    let before = env.store_bytes();
    let refused = env.run_with_stdin(&["update"], plan.to_string());
    assert_eq!(refused.code, 2, "{refused}");
    assert_eq!(env.store_bytes(), before);
    assert!(
        refused.stderr.contains("--allow-missing-paths"),
        "{refused}"
    );
    let accepted = env.run_with_stdin(&["update", "--allow-missing-paths"], plan.to_string());
    assert_eq!(accepted.code, 0, "{accepted}");
    assert!(
        accepted.stderr.contains(
            "recorded as planned: src/new_module.rs (investigation_checkpoint.code_refs)"
        ),
        "{accepted}"
    );
    let state = env.json(&["show"]);
    assert_eq!(
        unfingerprinted(&state["investigation_checkpoint"]["code_refs"]),
        json!([{"path": "src/new_module.rs", "planned": true}])
    );
    // Freshness names the plan without failing on it.
    env.commit_all("plan");
    let freshness = env.json_allowing(&["freshness", "--check"], 1);
    let findings = &freshness["references"]["findings"];
    assert_eq!(findings[0]["kind"], "planned", "{freshness}");
    assert_eq!(findings[0]["blocking"], false);
    assert_eq!(
        freshness["stale_reasons"],
        json!(["graph_stale"]),
        "the dirty path, not the plan"
    );
    // Once the file exists, the plan is an ordinary reference.
    env.write("src/new_module.rs", "pub fn new() {}\n");
    let freshness = env.json_allowing(&["freshness"], 0);
    assert_eq!(
        freshness["references"]["findings"],
        json!([]),
        "{freshness}"
    );
}

/// Node `n` citing `code_ref`, written at the current commit.
fn mapped_at(files: &[(&str, &str)], code_ref: serde_json::Value) -> TestEnv {
    let env = repo(files);
    env.update(&json!({"graphs": {"architecture": {"nodes": [
        {"id": "n", "title": "N", "purpose": "p", "code_refs": [code_ref]}
    ]}}}));
    env.commit_all("map");
    env
}

const AB: &str = "// a\npub fn alpha() {}\npub fn beta() {}\n// end\n";

#[test]
fn regression_10_freshness_finds_what_git_changes_broke() {
    type Change = fn(&TestEnv);
    let cases: [(&str, serde_json::Value, Change, &str); 4] = [
        (
            "delete",
            json!({"path": "src/a.rs"}),
            |env| env.git(&["rm", "-q", "src/a.rs"]).truncate(0),
            "missing",
        ),
        (
            "git mv",
            json!({"path": "src/a.rs", "start_line": 2, "symbol": "alpha"}),
            |env| env.git(&["mv", "src/a.rs", "src/b.rs"]).truncate(0),
            "renamed",
        ),
        (
            "symbol removed",
            json!({"path": "src/a.rs", "start_line": 3, "symbol": "beta"}),
            |env| env.write("src/a.rs", "// a\npub fn alpha() {}\n// removed\n// end\n"),
            "symbol_missing",
        ),
        (
            "lines inserted above",
            json!({"path": "src/a.rs", "start_line": 2, "end_line": 2, "symbol": "alpha"}),
            |env| env.write("src/a.rs", format!("// new\n// lines\n{AB}")),
            "moved_lines",
        ),
    ];
    for (name, code_ref, change, kind) in cases {
        let env = mapped_at(&[("src/a.rs", AB)], code_ref);
        assert_eq!(
            env.run(&["freshness", "--check"]).code,
            0,
            "{name}: fresh before"
        );
        change(&env);
        env.commit_all(name);
        let output = env.run(&["--json", "freshness", "--check"]);
        assert_eq!(output.code, 1, "{name}:\n{output}");
        let report = output.json();
        let finding = &report["references"]["findings"][0];
        assert_eq!(finding["kind"], kind, "{name}: {report}");
        assert_eq!(
            finding["owner"],
            json!({"record": "node", "graph": "architecture", "id": "n"})
        );
        assert_eq!(finding["blocking"], true);
        assert!(
            report["stale_reasons"]
                .as_array()
                .is_some_and(|r| r.contains(&json!("references_broken"))),
            "{name}: {report}"
        );
        match kind {
            "renamed" => assert_eq!(finding["renamed_to"], "src/b.rs"),
            "moved_lines" => {
                assert_eq!(finding["symbol_lines"], json!([4]));
                assert_eq!(finding["reanchored"]["start_line"], 4);
                assert_eq!(finding["reanchored"]["end_line"], 4);
            }
            _ => assert!(finding.get("reanchored").is_none(), "{name}: {finding}"),
        }
        let human = env.run(&["freshness"]);
        assert!(
            human.stdout.contains(&format!("  {kind} src/a.rs")),
            "{name}:\n{human}"
        );
    }
}

#[test]
fn regression_10_fix_piped_into_update_re_anchors_renames_and_moved_lines() {
    let env = repo(&[
        ("src/a.rs", AB),
        ("src/old.rs", "pub fn kept() {}\n"),
        ("src/steady.rs", "// steady\n"),
    ]);
    env.update(&json!({
        "graphs": {"architecture": {"nodes": [
            {"id": "moved", "title": "M", "purpose": "p", "code_refs": [{"path": "src/a.rs", "start_line": 2, "end_line": 2, "symbol": "alpha"}]},
            {"id": "renamed", "title": "R", "purpose": "p", "code_refs": [{"path": "src/old.rs", "start_line": 1, "symbol": "kept"}]},
            {"id": "steady", "title": "S", "purpose": "p", "code_refs": [{"path": "src/steady.rs"}]}
        ]}},
        "investigation_checkpoint": {"checkpoint_id": "ck", "kind": "debug", "disposition": "resume_ready",
            "focus": "f", "next_action": "n", "code_refs": [{"path": "src/old.rs"}]}
    }));
    env.commit_all("map");
    env.write("src/a.rs", format!("// one\n// two\n// three\n{AB}"));
    env.git(&["mv", "src/old.rs", "src/new.rs"]);
    env.commit_all("move things");
    assert_eq!(env.run(&["freshness", "--check"]).code, 1);
    let before = env.store_bytes();
    let fix = env.run(&["freshness", "--fix"]);
    assert_eq!(fix.code, 0, "{fix}");
    assert_eq!(env.store_bytes(), before, "--fix writes nothing");
    let envelope = fix.json();
    assert_eq!(envelope["expected_revision"], 1);
    // Only the re-anchored nodes are written, not the whole map.
    assert!(envelope["patch"].get("graphs").is_none(), "{envelope}");
    let nodes = &envelope["patch"]["upsert"]["architecture_nodes"];
    assert_eq!(nodes.as_array().map(Vec::len), Some(2), "{envelope}");
    assert_eq!(
        (&nodes[0]["id"], &nodes[1]["id"]),
        (&json!("moved"), &json!("renamed"))
    );
    assert_eq!(
        unfingerprinted(&nodes[0]["code_refs"][0]),
        json!({"path": "src/a.rs", "start_line": 5, "end_line": 5, "symbol": "alpha"})
    );
    // The repair keeps what was checked of the reference: it certifies nothing new.
    let stored = &env.json(&["show"])["graphs"]["architecture"]["nodes"][0]["code_refs"][0];
    assert_eq!(
        nodes[0]["code_refs"][0]["fingerprint"],
        stored["fingerprint"]
    );
    assert_eq!(
        unfingerprinted(&nodes[1]["code_refs"][0]),
        json!({"path": "src/new.rs", "start_line": 1, "symbol": "kept"})
    );
    assert_eq!(
        unfingerprinted(&envelope["patch"]["investigation_checkpoint"]["code_refs"]),
        json!([{"path": "src/new.rs"}])
    );
    assert!(
        fix.stderr.contains("re-anchors 3 code reference(s)"),
        "{fix}"
    );
    let applied = env.run_with_stdin(&["update"], fix.stdout.clone());
    assert_eq!(applied.code, 0, "{applied}");
    let check = env.run(&["--json", "freshness", "--check"]);
    assert_eq!(check.code, 0, "{check}");
    assert_eq!(check.json()["references"]["findings"], json!([]));
    // Nothing left to fix: nothing printed, or for a script (and an MCP client) the envelope
    // with an empty patch.
    let again = env.run(&["freshness", "--fix"]);
    assert_eq!((again.code, again.stdout.as_str()), (0, ""), "{again}");
    let revision = env.json(&["show"])["revision"].clone();
    let again = env.json(&["freshness", "--fix"]);
    assert_eq!(again, json!({"expected_revision": revision, "patch": {}}));
}

#[test]
fn a_fix_merges_with_a_branch_that_mapped_something_else() {
    let env = repo(&[("src/a.rs", AB), ("src/b.rs", "pub fn other() {}\n")]);
    env.update(&json!({"graphs": {"architecture": {"nodes": [
        {"id": "moved", "title": "M", "purpose": "p", "code_refs": [{"path": "src/a.rs", "start_line": 2, "end_line": 2, "symbol": "alpha"}]}
    ]}}}));
    env.commit_all("map");
    env.git(&["checkout", "-q", "-b", "feature"]);
    env.update(&json!({"upsert": {"architecture_nodes": [
        {"id": "other", "title": "O", "purpose": "p", "code_refs": [{"path": "src/b.rs"}]}
    ]}}));
    env.commit_all("map b");
    env.git(&["checkout", "-q", "main"]);
    env.write("src/a.rs", format!("// one\n// two\n{AB}"));
    env.commit_all("move alpha");
    let fix = env.ok(&["freshness", "--fix"]);
    env.ok_with(&["update"], &[], fix.stdout.clone());
    env.commit_all("re-anchor");
    env.git(&["merge", "-q", "--no-edit", "feature"]);
    // The fix restated one node, not the map: both branches' nodes stand, nothing conflicts.
    let state = env.json(&["show"]);
    assert_eq!(state.get("conflicts"), None, "{state}");
    let nodes = &state["graphs"]["architecture"]["nodes"];
    assert_eq!(
        (&nodes[0]["id"], &nodes[0]["code_refs"][0]["start_line"]),
        (&json!("moved"), &json!(4))
    );
    assert_eq!(nodes[1]["id"], "other", "{state}");
    assert_eq!(env.run(&["freshness", "--check"]).code, 0);
}

#[test]
fn a_fix_keeps_the_refs_of_its_nodes_that_need_a_person() {
    // One node cites a file that was renamed (fixable) and one that was deleted (not): the
    // fix upserts the node with the rename applied and the deleted file still cited, and
    // `update` takes it, because that reference is one the state already holds.
    let env = repo(&[
        ("src/old.rs", "pub fn kept() {}\n"),
        ("src/gone.rs", "// gone\n"),
    ]);
    env.update(&json!({"graphs": {"architecture": {"nodes": [
        {"id": "both", "title": "B", "purpose": "p",
         "code_refs": [{"path": "src/old.rs", "symbol": "kept"}, {"path": "src/gone.rs"}]}
    ]}}}));
    env.commit_all("map");
    env.git(&["mv", "src/old.rs", "src/new.rs"]);
    env.git(&["rm", "-q", "src/gone.rs"]);
    env.commit_all("rename one, delete the other");
    let fix = env.ok(&["freshness", "--fix"]);
    assert!(fix.stderr.contains("needs a person"), "{fix}");
    let node = &fix.json()["patch"]["upsert"]["architecture_nodes"][0];
    assert_eq!(
        unfingerprinted(&node["code_refs"]),
        json!([{"path": "src/new.rs", "start_line": 1, "end_line": 1, "symbol": "kept"}, {"path": "src/gone.rs"}])
    );
    env.ok_with(&["update"], &[], fix.stdout.clone());
    let findings =
        env.json_allowing(&["freshness", "--check"], 1)["references"]["findings"].clone();
    assert_eq!(findings.as_array().map(Vec::len), Some(1), "{findings}");
    assert_eq!(findings[0]["code_ref"]["path"], "src/gone.rs", "{findings}");
}

#[test]
fn regression_10_every_view_tells_the_same_truth() {
    let env = repo(&[
        ("src/a.rs", "// a\n"),
        ("src/b.rs", "// b\n"),
        ("src/c.rs", "// c\n"),
    ]);
    env.update(&json!({
        "objective": "one truth",
        "graphs": {"architecture": {"nodes": [
            {"id": "a", "title": "A", "purpose": "p", "code_refs": [{"path": "src/a.rs"}]},
            {"id": "b", "title": "B", "purpose": "p", "code_refs": [{"path": "src/b.rs"}]}
        ]}},
        "graph_frontier": {"active_node_ids": ["a"]},
        "churn": {"understanding_status": "mapped", "diff_pressure": "low", "graph_freshness": "fresh"},
        "investigation_checkpoint": {"checkpoint_id": "ck", "kind": "debug", "disposition": "resume_ready",
            "focus": "c", "next_action": "reread c", "code_refs": [{"path": "src/c.rs"}]}
    }));
    env.commit_all("map");
    // Fresh: every view says so.
    assert_eq!(env.json(&["freshness"])["fresh"], true);
    assert_eq!(env.json(&["scene"])["staleness"]["fresh"], true);
    assert_eq!(env.json(&["reorient"])["action"], "resume");
    assert!(!env.ok(&["prompt"]).stdout.contains("- Stale:"));

    env.write("src/a.rs", "// a changed\n");
    env.write("src/c.rs", "// c changed\n");
    env.commit_all("change a and c");

    let freshness = env.json_allowing(&["freshness", "--check"], 1);
    assert_eq!(freshness["fresh"], false);
    assert_eq!(freshness["stale_reasons"], json!(["cited_files_changed"]));
    assert_eq!(freshness["watcher"]["graph_node_ids"], json!(["a"]));
    assert_eq!(
        freshness["watcher"]["checkpoint_changed_paths"],
        json!(["src/c.rs"])
    );

    let reorient = env.json_allowing(&["reorient", "--check"], 1);
    assert_eq!(reorient["action"], "regather");
    assert_eq!(reorient["state_revision"], 1);
    assert_eq!(reorient["checkpoint_changed_paths"], json!(["src/c.rs"]));
    assert_eq!(reorient["active_frontier_node_ids"], json!(["a"]));
    assert!(
        reorient["note"]
            .as_str()
            .is_some_and(|n| n.starts_with("Re-gather before editing: ")),
        "{reorient}"
    );

    let scene = env.json(&["scene"]);
    let staleness = &scene["staleness"];
    assert_eq!(staleness["fresh"], false, "{scene}");
    assert_eq!(staleness["node_changed_paths"], json!(["src/a.rs"]));
    assert_eq!(staleness["stale_node_ids"], json!(["a"]));
    assert_eq!(staleness["checkpoint_changed_paths"], json!(["src/c.rs"]));
    assert_eq!(scene["retrieval"]["status"], "ready");
    let board = env.ok(&["scene"]).stdout;
    assert!(
        board.contains(
            "freshness: stale: cited code changed since it was checked: src/a.rs, src/c.rs"
        ),
        "{board}"
    );
    assert!(
        board.contains("  stale: the code it cites changed since it was checked: src/c.rs"),
        "{board}"
    );
    assert!(
        board.contains("checked: 1 of 3 records that cite code are unchanged since checked; changed since checked: architecture node \"a\", investigation checkpoint \"ck\""),
        "{board}"
    );

    let prompt = env.ok(&["prompt"]).stdout;
    assert!(prompt.contains("- Stale: the code these nodes cite changed since it was checked: `src/a.rs` (nodes `a`)"), "{prompt}");
    assert!(
        prompt.contains("- Stale: the code it cites changed since it was checked: `src/c.rs`"),
        "{prompt}"
    );
    assert!(
        prompt.contains(
            "- Graph freshness: fresh (as recorded; the work tree has moved since, see Graphs)"
        ),
        "{prompt}"
    );

    let hook = env.run_with_stdin(&["hook", "session-start"], "{}");
    let context = hook.session_context();
    assert!(
        context.contains("Verdict: regather. Re-gather before editing: "),
        "{context}"
    );
    assert!(context.contains("`src/a.rs` (nodes `a`)"), "{context}");
    assert!(
        context.contains("changed since it was checked: `src/c.rs`"),
        "{context}"
    );
}

/// A verified observation on `src/parser.rs`, recorded and committed.
fn observed_parser(extra: &[(&str, &str)]) -> TestEnv {
    let mut files = vec![("src/parser.rs", "pub fn parse() {}\n")];
    files.extend_from_slice(extra);
    let env = repo(&files);
    let draft = env.run(&distill_args(
        "test",
        &[
            "--code-ref",
            "src/parser.rs:1#parse",
            "--text",
            "parser tests pass",
        ],
    ));
    assert_eq!(draft.code, 0, "{draft}");
    let applied = env.run_with_stdin(&["update"], draft.stdout);
    assert_eq!(applied.code, 0, "{applied}");
    env
}

#[test]
fn regression_10_propose_promote_settles_what_it_verified() {
    let env = observed_parser(&[]);
    env.commit_all("observed");
    let proposal = env.run(&["propose"]);
    assert_eq!(proposal.code, 0, "{proposal}");
    assert_eq!(
        proposal.json()["patch"]["graph_frontier"]["dirty_paths"],
        json!(["src/parser.rs"])
    );
    let mut args = vec!["--json"];
    args.extend(PASSING_VERIFIER);
    let promoted = env.run_with_stdin(&args, proposal.stdout);
    assert_eq!(promoted.code, 0, "{promoted}");
    assert_eq!(
        promoted.json()["settled_dirty_paths"],
        json!(["src/parser.rs"])
    );
    assert!(promoted.json().get("open_dirty_paths").is_none());
    let state = env.json(&["show"]);
    assert!(
        state["graph_frontier"].get("dirty_paths").is_none(),
        "{state}"
    );
    assert_eq!(state["churn"]["graph_freshness"], "fresh");
    let check = env.run(&["--json", "freshness", "--check"]);
    assert_eq!(check.code, 0, "{check}");
    assert_eq!(check.json()["graph"]["status"], "ready");
}

/// See: issue 28 (item 5). `propose | promote` yields nodes joined to each other and to the
/// existing map by edges the code draws: who calls whom, read by the parser.
#[test]
fn a_promoted_proposal_is_a_connected_piece_of_the_map() {
    let env = repo(&[
        (
            "src/lexer.rs",
            "pub struct Token;\npub fn lex() -> Token {\n    Token\n}\n",
        ),
        (
            "src/parser.rs",
            "pub fn parse() {\n    crate::lexer::lex();\n}\n",
        ),
        (
            "src/main.rs",
            "mod lexer;\nmod parser;\nfn main() {\n    parser::parse();\n}\n",
        ),
    ]);
    env.ok(&[
        "node",
        "set",
        "lexer",
        "--purpose",
        "turns text into tokens",
        "--ref",
        "src/lexer.rs#lex",
    ]);
    for (reference, text) in [
        ("src/parser.rs#parse", "parser tests pass"),
        ("src/main.rs#main", "the binary runs the parser"),
    ] {
        let draft = env.run(&distill_args(
            "test",
            &["--code-ref", reference, "--text", text],
        ));
        assert_eq!(draft.code, 0, "{draft}");
        env.ok_with(&["update"], &[], draft.stdout);
    }
    env.commit_all("observed");
    let observations: Vec<String> = (env.json(&["show"])["observations"].as_array())
        .expect("observations")
        .iter()
        .map(|o| o["id"].as_str().expect("id").to_owned())
        .collect();
    let mut propose = vec!["propose"];
    for id in &observations {
        propose.extend(["--observation", id]);
    }
    let proposal = env.json(&propose);
    let edges: Vec<(String, String, String)> = proposal["patch"]["upsert"]["architecture_edges"]
        .as_array()
        .expect("edges drawn")
        .iter()
        .map(|e| {
            let end = |key: &str| e[key].as_str().expect("end").to_owned();
            (end("source_id"), end("target_id"), end("kind"))
        })
        .collect();
    let node_of = |title: &str| {
        (proposal["patch"]["upsert"]["architecture_nodes"].as_array())
            .expect("nodes")
            .iter()
            .find(|n| n["title"] == title)
            .and_then(|n| n["id"].as_str())
            .unwrap_or_else(|| panic!("a node for {title}: {proposal}"))
    };
    let (parser, main) = (node_of("parse"), node_of("main"));
    let calls =
        |source: &str, target: &str| (source.to_owned(), target.to_owned(), "calls".to_owned());
    assert_eq!(
        edges,
        [calls(main, parser), calls(parser, "lexer")],
        "{proposal}"
    );

    let mut args = vec!["--json"];
    args.extend(PASSING_VERIFIER);
    let promoted = env.run_with_stdin(&args, proposal.to_string());
    assert_eq!(promoted.code, 0, "{promoted}");
    // One walk from the user's node reaches both proposed nodes.
    let walk = env.json(&["graph", "--node", "lexer", "--depth", "2"]);
    let mut reached: Vec<&str> = walk["graph"]["architecture_nodes"]
        .as_array()
        .expect("nodes")
        .iter()
        .map(|n| n["id"].as_str().expect("id"))
        .collect();
    reached.sort_unstable();
    let mut expected = vec!["lexer", parser, main];
    expected.sort_unstable();
    assert_eq!(reached, expected, "{walk}");
    assert_eq!(env.run(&["verify"]).code, 0);
    // Proposed again, nothing new is drawn: the ends are joined already.
    let again = env.json(&propose);
    assert!(
        again["patch"]["upsert"].get("architecture_edges").is_none(),
        "{again}"
    );
}

#[test]
fn regression_10_what_promotion_did_not_verify_stays_open_and_is_named() {
    let env = observed_parser(&[("src/other.rs", "// other\n")]);
    env.update(&json!({"graph_frontier": {"dirty_paths": ["src/other.rs"]}}));
    env.commit_all("observed");
    let proposal = env.run(&["propose"]);
    let promoted = env.run_with_stdin(&PASSING_VERIFIER, proposal.stdout);
    assert_eq!(promoted.code, 0, "{promoted}");
    assert!(
        promoted
            .stdout
            .contains("settled (verified): src/parser.rs"),
        "{promoted}"
    );
    assert!(
        promoted.stdout.contains("still dirty: src/other.rs"),
        "{promoted}"
    );
    let check = env.run(&["--json", "freshness", "--check"]);
    assert_eq!(check.code, 1, "{check}");
    let report = check.json();
    assert_eq!(report["graph"]["dirty_paths"], json!(["src/other.rs"]));
    assert!(
        report["graph"]["note"]
            .as_str()
            .is_some_and(|n| n.contains("(`src/other.rs`)")),
        "{report}"
    );
    assert_eq!(
        env.json(&["show"])["churn"]["graph_freshness"],
        "proposal-expanded",
        "still open"
    );
    assert!(check.stderr.contains("settle the frontier"), "{check}");
}

#[test]
fn restated_map_refs_pass_but_a_new_observation_cites_only_what_exists() {
    let env = repo(&[("src/lib.rs", LIB)]);
    let node = json!({"upsert": {"architecture_nodes": [{"id": "lib", "title": "Lib", "purpose": "p",
        "code_refs": [{"path": "src/lib.rs", "start_line": 1, "end_line": 2}]}]}});
    env.update(&node);
    std::fs::remove_file(env.root().join("src/lib.rs")).expect("remove");
    // The map restated as it is: what the write did not change is not checked again.
    env.update(&node);
    let before = env.store_bytes();
    let refused = env.run_with_stdin(
        &["update"],
        observed_at(json!([{"path": "src/lib.rs", "start_line": 1, "end_line": 2}])).to_string(),
    );
    assert_eq!(refused.code, 2, "{refused}");
    assert!(
        refused.stderr.contains("src/lib.rs") && refused.stderr.contains("no such file"),
        "{refused}"
    );
    assert_eq!(
        env.store_bytes(),
        before,
        "a refused write leaves the store as it was"
    );
    // A node upsert is judged by its own fields, without the stored map.
    let untitled =
        json!({"upsert": {"architecture_nodes": [{"id": "parser", "title": "", "purpose": "p"}]}});
    let refused = env.run_with_stdin(&["update"], untitled.to_string());
    assert_eq!(refused.code, 2, "{refused}");
    assert!(
        refused
            .stderr
            .contains("upsert.architecture_nodes[0].title: must not be empty"),
        "{refused}"
    );
    assert_eq!(env.store_bytes(), before);
}

/// See: issue 28 (item 4), issue 46. A ref that cites a symbol goes stale when its definition's
/// text changed since the record was written, not when the rest of its file did; a ref to lines
/// (a symbol where the language is not parsed) when those lines changed; a ref to the whole
/// file when the file did. Every view says the same.
#[test]
fn a_symbol_ref_goes_stale_with_its_definition_not_its_file() {
    const CODE: &str = "pub fn helper() {\n    one();\n}\n\npub fn other() {\n    three();\n}\n";
    const NOTES: &str = "helper: the entry point\nother: the rest\n";
    let env = repo(&[("src/a.rs", CODE), ("notes.txt", NOTES)]);
    for (id, reference) in [
        ("by-symbol", "src/a.rs#helper"),
        ("whole-file", "src/a.rs"),
        ("unparsed", "notes.txt:1#helper"),
    ] {
        env.ok(&["node", "set", id, "--purpose", "p", "--ref", reference]);
    }
    env.update(&json!({
        "graph_frontier": {"active_node_ids": ["by-symbol", "whole-file", "unparsed"]},
        "investigation_checkpoint": {"checkpoint_id": "ck", "kind": "debug",
            "disposition": "resume_ready", "focus": "helper", "next_action": "read helper",
            "code_refs": [{"path": "src/a.rs", "symbol": "helper"}]}
    }));
    env.commit_all("map");
    assert_eq!(env.run(&["freshness", "--check"]).code, 0);

    // An edit elsewhere in each file (same line count: nothing moves).
    env.write("src/a.rs", CODE.replace("three", "four"));
    env.write("notes.txt", NOTES.replace("the rest", "all else"));
    env.commit_all("edit elsewhere");
    let stale_nodes = |env: &TestEnv| {
        let report = env.json_allowing(&["freshness", "--check"], 1);
        assert_eq!(
            report["references"]["blocking_count"], 0,
            "no reference moved: {report}"
        );
        let scene = env.json(&["scene"]);
        assert_eq!(
            scene["staleness"]["stale_node_ids"], report["watcher"]["graph_node_ids"],
            "scene and freshness agree"
        );
        let reorient = env.json_allowing(&["reorient", "--check"], 1);
        assert_eq!(
            reorient["active_frontier_node_ids"], report["watcher"]["graph_node_ids"],
            "reorient and freshness agree"
        );
        assert_eq!(
            reorient["checkpoint_changed_paths"],
            report["watcher"]["checkpoint_changed_paths"]
        );
        (
            report["watcher"]["graph_node_ids"].clone(),
            report["watcher"]["checkpoint_changed_paths"].clone(),
        )
    };
    // The whole file changed; the line `unparsed` cites did not.
    assert_eq!(stale_nodes(&env), (json!(["whole-file"]), json!([])));
    let prompt = env.ok(&["prompt"]).stdout;
    assert!(
        prompt.contains("`src/a.rs` (nodes `whole-file`)"),
        "{prompt}"
    );

    // An edit inside the cited function, not yet committed.
    env.write(
        "src/a.rs",
        CODE.replace("three", "four").replace("one", "two"),
    );
    let code_stale = (json!(["by-symbol", "whole-file"]), json!(["src/a.rs"]));
    assert_eq!(stale_nodes(&env), code_stale);
    // An unrelated write changes nothing of it.
    env.ok(&["note", "unrelated"]);
    assert_eq!(stale_nodes(&env), code_stale);
    // The cited line of the file no parser reads.
    env.write(
        "notes.txt",
        NOTES.replace("the entry point", "where it starts"),
    );
    let all_stale = (
        json!(["by-symbol", "whole-file", "unparsed"]),
        json!(["src/a.rs"]),
    );
    assert_eq!(stale_nodes(&env), all_stale);
}

/// See: issue 28. Where the language is parsed, a ref's symbol means its definition: written
/// without lines it takes the definition's span; `freshness` follows the definition when lines
/// are inserted above it or it grows, calls it `symbol_missing` when only a comment still
/// names it, and `--fix | update` re-anchors to the definition, never to a mention.
#[test]
fn refs_to_a_symbol_follow_its_definition_through_git() {
    const CODE: &str =
        "// helper is documented below\npub fn helper() {\n    one();\n}\n\npub fn other() {}\n";
    type Change = fn(&TestEnv);
    type Span = Option<(u32, u32)>;
    let cases: [(&str, Change, &str, Span); 3] = [
        (
            "lines inserted above",
            |env| env.write("src/a.rs", format!("// 1\n// 2\n// 3\n// 4\n// 5\n{CODE}")),
            "moved_lines",
            Some((7, 9)),
        ),
        (
            "the function grew",
            |env| {
                env.write(
                    "src/a.rs",
                    CODE.replace("    one();\n", "    one();\n    two();\n"),
                )
            },
            "moved_lines",
            Some((2, 5)),
        ),
        (
            "deleted, named in a comment",
            |env| {
                env.write(
                    "src/a.rs",
                    "// helper is documented below\npub fn other() {}\n",
                )
            },
            "symbol_missing",
            None,
        ),
    ];
    for (name, change, kind, span) in cases {
        let env = repo(&[("src/a.rs", CODE)]);
        env.ok(&[
            "node",
            "set",
            "n",
            "--purpose",
            "helps",
            "--ref",
            "src/a.rs#helper",
        ]);
        let mut stored =
            env.json(&["show"])["graphs"]["architecture"]["nodes"][0]["code_refs"][0].clone();
        let fingerprint = stored["fingerprint"].take();
        assert!(
            fingerprint.as_str().is_some_and(|f| f.len() == 16),
            "{name}: {fingerprint}"
        );
        assert_eq!(
            unfingerprinted(&stored),
            json!({"path": "src/a.rs", "start_line": 2, "end_line": 4, "symbol": "helper"}),
            "{name}"
        );
        env.commit_all("map");
        assert_eq!(env.run(&["freshness", "--check"]).code, 0, "{name}");
        change(&env);
        env.commit_all(name);
        let report = env.json_allowing(&["freshness", "--check"], 1);
        let finding = &report["references"]["findings"][0];
        assert_eq!(finding["kind"], kind, "{name}: {report}");
        let Some((start, end)) = span else {
            assert!(finding.get("reanchored").is_none(), "{name}: {finding}");
            continue;
        };
        assert_eq!(
            finding["reanchored"]["start_line"], start,
            "{name}: {finding}"
        );
        assert_eq!(finding["reanchored"]["end_line"], end, "{name}: {finding}");
        let fix = env.ok(&["freshness", "--fix"]);
        env.ok_with(&["update"], &[], fix.stdout.clone());
        // A definition that only moved is fixed and stays certified; one whose text changed
        // is not certified by being found again: only a re-read does that.
        let changed = name == "the function grew";
        assert_eq!(
            env.run(&["freshness", "--check"]).code,
            i32::from(changed),
            "{name}"
        );
        if changed {
            env.ok(&["recheck", "n"]);
            assert_eq!(env.run(&["freshness", "--check"]).code, 0, "{name}");
        }
    }
    // A symbol only a comment names is refused where the language is parsed, and nothing is
    // written.
    let env = repo(&[("src/a.rs", CODE)]);
    env.update(&json!({"objective": "map"}));
    let before = env.store_bytes();
    let out = env.run(&[
        "node",
        "set",
        "m",
        "--purpose",
        "p",
        "--ref",
        "src/a.rs#documented",
    ]);
    assert_eq!(out.code, 2, "{out}");
    assert!(
        out.stderr
            .contains("symbol `documented` has no definition in the file"),
        "{out}"
    );
    assert_eq!(env.store_bytes(), before);
}
