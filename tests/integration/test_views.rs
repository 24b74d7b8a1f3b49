//! The read-only projections: `scene`, `context`, `graph`, `planning`, `freshness`,
//! `pressure`, `reorient`, `prompt` — in temporary git repositories and outside git.

use serde_json::Value;
use serde_json::json;

use crate::common::TestEnv;
use crate::common::node_json;

fn graphs(a_purpose: &str) -> Value {
    json!({
        "architecture": {
            "nodes": [node_json("a", a_purpose, "src/a.rs"), node_json("b", "does b", "src/b.rs")],
            "edges": [{"id": "ab", "source_id": "a", "target_id": "b", "kind": "calls"}]
        }
    })
}

/// A committed repository with a mapped state: node `a` (on the frontier) cites `src/a.rs`,
/// node `b` cites `src/b.rs`, the checkpoint cites `src/c.rs`.
fn mapped() -> TestEnv {
    let env = TestEnv::new();
    // `init` minted a random identity, which every commit id below would hash: these snapshots
    // name them.
    env.write(".epiphany/rollout/identity", "0123456789abcdef\n");
    for file in ["src/a.rs", "src/b.rs", "src/c.rs", "README.md"] {
        env.write(file, format!("// {file}\n"));
    }
    env.commit_all("code");
    env.update(&json!({
        "objective": "keep the map fresh",
        "graphs": graphs("does a"),
        "graph_frontier": {"active_node_ids": ["a"]},
        "investigation_checkpoint": {
            "checkpoint_id": "ck", "kind": "debug", "disposition": "resume_ready",
            "focus": "the c seam", "next_action": "reread c",
            "code_refs": [{"path": "src/c.rs"}]
        }
    }));
    env.commit_all("map");
    env
}

fn code(env: &TestEnv, args: &[&str]) -> i32 {
    env.run(args).code
}

#[test]
fn freshness_and_reorient_follow_changes_to_cited_files() {
    let env = mapped();
    assert_eq!(code(&env, &["freshness", "--check"]), 0);
    assert_eq!(code(&env, &["reorient", "--check"]), 0);

    env.write("src/a.rs", "// a changed\n");
    env.commit_all("change a");
    // Node `a` and the frontier cite the changed file: both checks fail, naming it.
    let answers = json!({
        "freshness --check": env.json_answer(&["freshness", "--check"]),
        "reorient --check": env.json_answer(&["reorient", "--check"]),
    });
    insta::assert_snapshot!(serde_json::to_string_pretty(&answers).expect("json"));
    let stale = env.run(&["freshness", "--check"]);
    assert!(stale.stderr.contains("hint:"), "{stale}");

    // A write that does not touch node `a` does not make it fresh.
    env.update(&json!({"objective": "keep the map fresh, still"}));
    env.commit_all("unrelated write");
    assert_eq!(code(&env, &["freshness", "--check"]), 1);
    assert_eq!(code(&env, &["reorient", "--check"]), 1);

    // Writing the node again keeps what was checked of its references: still stale. Saying it
    // was re-read certifies the code as it is now.
    env.update(&json!({"graphs": graphs("does a, as changed")}));
    env.commit_all("remap a");
    assert_eq!(code(&env, &["freshness", "--check"]), 1);
    env.ok(&["recheck", "a"]);
    env.commit_all("re-read a");
    assert_eq!(code(&env, &["freshness", "--check"]), 0);
    let resume = env.json(&["reorient", "--check"]);
    assert_eq!(resume["action"], "resume");
    assert_eq!(resume["reasons"], json!(["checkpoint_ready"]));
    assert_eq!(resume["next_action"], "reread c");

    // `--since 1` compares every record with revision 1's commit instead.
    let since = env.run(&["--json", "freshness", "--since", "1", "--check"]);
    assert_eq!(since.code, 1, "{since}");
    assert_eq!(since.json()["watcher"]["since_revision"], 1);
    assert_eq!(since.json()["watcher"]["graph_node_ids"], json!(["a"]));
}

#[test]
fn uncommitted_untracked_and_renamed_files_count_and_the_store_does_not() {
    let env = mapped();
    env.write("src/c.rs", "// c edited, not committed\n");
    env.write("src/brand_new.rs", "// untracked\n");
    env.git(&["mv", "src/b.rs", "src/b_moved.rs"]);
    let report = env.run(&["--json", "freshness", "--check"]);
    assert_eq!(report.code, 1, "{report}");
    let watcher = &report.json()["watcher"];
    assert_eq!(
        watcher["changed_paths"],
        json!(["src/b.rs", "src/b_moved.rs", "src/brand_new.rs", "src/c.rs"])
    );
    // `b`'s file moved unchanged: what it cites is what was checked, but its reference broke.
    assert_eq!(watcher["graph_node_ids"], json!([]));
    assert_eq!(watcher["changes"][0]["renamed_to"], "src/b_moved.rs");
    let findings = &report.json()["references"]["findings"];
    assert_eq!(findings[0]["kind"], "renamed", "{findings}");
    assert_eq!(findings[0]["renamed_to"], "src/b_moved.rs", "{findings}");
    assert_eq!(watcher["checkpoint_changed_paths"], json!(["src/c.rs"]));
    let verdict = env.json(&["reorient"]);
    assert_eq!(verdict["reasons"], json!(["checkpoint_paths_changed"]));
    assert_eq!(verdict["checkpoint_changed_paths"], json!(["src/c.rs"]));
    // The store's own files changed (uncommitted write) but are never reported.
    env.update(&json!({"objective": "o"}));
    let changed = env.json(&["freshness"])["watcher"]["changed_paths"].clone();
    assert!(
        changed.as_array().is_some_and(|paths| paths
            .iter()
            .all(|p| !p.as_str().unwrap_or("").starts_with(".epiphany"))),
        "{changed}"
    );
}

#[test]
fn graph_staleness_fails_the_check_and_a_missing_index_is_the_ready_baseline() {
    let env = mapped();
    env.update(&json!({"graph_frontier": {"active_node_ids": ["a"], "open_question_ids": ["q1"]}}));
    let report = env.run(&["--json", "freshness", "--check"]);
    assert_eq!(report.code, 1, "{report}");
    let report = report.json();
    assert_eq!(report["stale_reasons"], json!(["graph_stale"]));
    assert_eq!(report["graph"]["open_question_count"], 1);
    // Without an index, retrieval answers from a query-time scan: the baseline is ready
    // (docs/retrieval.md#retrieval-summary).
    assert_eq!(report["retrieval"]["status"], "ready");
}

#[test]
fn missing_state_answers_with_missing_shapes() {
    let env = TestEnv::new();
    // Every projection of a store with no write yet, whole: missing shapes, nothing anchored
    // (so nothing changed under it), and the doors that need no state still offered.
    let views = json!({
        "scene": env.json_answer(&["scene"]),
        "context": env.json_answer(&["context", "--node", "n", "--observation", "o", "--node", "n"]),
        "graph": env.json_answer(&["graph", "--node", "n", "--edge", "e"]),
        "planning": env.json_answer(&["planning"]),
        "freshness --check": env.json_answer(&["freshness", "--check"]),
        "reorient --check": env.json_answer(&["reorient", "--check"]),
        "prompt": env.json_answer(&["prompt"]),
    });
    insta::assert_snapshot!(serde_json::to_string_pretty(&views).expect("json"));
    let prompt = env.run(&["prompt"]);
    assert_eq!((prompt.code, prompt.stdout.as_str()), (0, ""));
}

#[test]
fn a_store_outside_git_answers_everything_but_git_comparisons() {
    let env = TestEnv::plain();
    env.write("src/a.rs", "// a\n");
    env.write("src/b.rs", "// b\n");
    env.ok(&["init"]);
    env.update(&json!({"objective": "no git here", "graphs": graphs("does a")}));
    assert_eq!(env.json(&["scene"])["state_status"], "ready");
    assert_eq!(
        env.json(&["context", "--node", "a"])["context"]["graph"]["architecture_nodes"][0]["id"],
        "a"
    );
    assert_eq!(
        env.json(&["graph", "--node", "a"])["matched"]["node_ids"],
        json!(["a", "b"])
    );
    assert_eq!(env.json(&["planning"])["state_status"], "ready");
    assert!(
        env.ok(&["prompt"])
            .stdout
            .contains("- Objective: no git here")
    );
    let freshness = env.run(&["--json", "freshness", "--check"]);
    assert_eq!(freshness.code, 0, "{freshness}");
    let watcher = &freshness.json()["watcher"];
    assert_eq!(watcher["status"], "unavailable");
    assert!(
        watcher["note"]
            .as_str()
            .is_some_and(|n| n.contains("not in a git repository"))
    );
    let since = env.run(&["freshness", "--since", "1"]);
    assert_eq!(since.code, 2, "{since}");
    assert!(since.stderr.contains("not in a git repository"), "{since}");
    assert_eq!(
        env.json(&["reorient"])["reasons"],
        json!(["missing_checkpoint"])
    );
}

#[test]
fn prompt_respects_the_ceiling_with_hundreds_of_records() {
    let env = TestEnv::new();
    let long = "a finding worth keeping, described at length. ".repeat(8);
    let observations: Vec<Value> = (0..300)
        .map(|i| json!({"id": format!("obs-{i}"), "summary": long, "source_kind": "test", "status": "ok", "evidence_ids": [format!("ev-{i}")]}))
        .collect();
    let evidence: Vec<Value> = (0..300)
        .map(
            |i| json!({"id": format!("ev-{i}"), "kind": "test", "status": "pass", "summary": long}),
        )
        .collect();
    let subgoals: Vec<Value> = (0..40)
        .map(|i| json!({"id": format!("s{i}"), "title": long, "status": "open", "summary": long}))
        .collect();
    let invariants: Vec<Value> = (0..40)
        .map(|i| json!({"id": format!("i{i}"), "description": long, "status": "ok", "rationale": long}))
        .collect();
    env.update(&json!({
        "objective": "stay within the host's limit",
        "subgoals": subgoals,
        "invariants": invariants,
        "observations": observations,
        "evidence": evidence,
        "graph_frontier": {"active_node_ids": [], "open_question_ids": ["q1"]},
        "investigation_checkpoint": {
            "checkpoint_id": "ck", "kind": "debug", "disposition": "resume_ready",
            "focus": "the limit", "next_action": "measure again"
        }
    }));

    for max in [9000usize, 3000] {
        let max_text = max.to_string();
        let output = env.ok(&["prompt", "--max-chars", &max_text]);
        let text = output.stdout;
        assert!(
            text.chars().count() <= max,
            "{} > {max}",
            text.chars().count()
        );
        assert!(text.starts_with("<epiphany_state>") && text.ends_with("</epiphany_state>"));
        assert!(text.contains("- Objective: stay within the host's limit"));
        assert!(text.contains("## Operating Discipline"));
        assert!(text.contains("- Next action: measure again"));
        assert!(text.contains("- Open questions: `q1`"));
        let last = text
            .trim_end_matches("</epiphany_state>")
            .trim_end()
            .lines()
            .last()
            .unwrap_or_default()
            .to_owned();
        assert!(
            last.starts_with(&format!("Left out to stay within {max} characters: 300 evidence records (`epiphany context --evidence ID`)")),
            "{last}"
        );
        assert!(
            last.ends_with("The whole state: `epiphany show`."),
            "{last}"
        );
    }
    let report = env.json(&["prompt", "--max-chars", "3000"]);
    assert!(report["chars"].as_u64().is_some_and(|c| c <= 3000));
    assert_eq!(
        report["left_out"][0],
        json!({"part": "recent_evidence", "count": 300, "fetch": "epiphany context --evidence ID"})
    );
    assert_eq!(report["left_out"][1]["part"], "recent_observations");
    // Without a ceiling problem nothing is left out.
    let roomy = env.json(&["prompt", "--max-chars", "1000000"]);
    assert_eq!(roomy["left_out"], json!([]));
    assert!(
        roomy["text"]
            .as_str()
            .is_some_and(|t| t.contains("- ... 297 more observations not shown"))
    );
}

#[test]
fn bad_numbers_are_clamped_or_refused() {
    let env = mapped();
    assert_eq!(
        env.json(&["graph", "--node", "a", "--depth", "0"])["depth"],
        1
    );
    assert_eq!(
        env.json(&["graph", "--node", "a", "--depth", "9"])["depth"],
        3
    );
    for args in [
        &["graph", "--depth", "-1"][..],
        &["graph", "--depth", "x"],
        &["graph", "--direction", "sideways"],
        &["pressure", "--used", "-5"],
        &["pressure", "--used", "many"],
        // Past what the arithmetic holds: refused, not clamped.
        &["pressure", "--used", "18446744073709551615"],
        &[
            "pressure",
            "--used",
            "1",
            "--context-window",
            "9223372036854775808",
        ],
        &["reorient", "--used", "-1"],
        &["prompt", "--max-chars", "10"],
        &["freshness", "--since", "99"],
    ] {
        assert_eq!(code(&env, args), 2, "epiphany {args:?}");
    }
}

#[test]
fn context_and_graph_select_around_named_records() {
    let env = mapped();
    env.update(&json!({
        "observations": [{"id": "o1", "summary": "a calls b", "source_kind": "test", "status": "ok", "evidence_ids": ["e1"]}],
        "evidence": [{"id": "e1", "kind": "test", "status": "pass", "summary": "green"}]
    }));
    // What each selection brings in: the observation with the evidence it cites and the
    // checkpoint, a missing node named as missing; the nodes citing a path with the edges
    // into them; the frontier's outgoing edges.
    let selections = json!({
        "context --observation o1 --node ghost --no-frontier": env.json_answer(&[
            "context",
            "--observation",
            "o1",
            "--node",
            "ghost",
            "--no-frontier",
        ]),
        "graph --path b.rs --direction in":
            env.json_answer(&["graph", "--path", "b.rs", "--direction", "in"]),
        "graph --frontier --direction out":
            env.json_answer(&["graph", "--frontier", "--direction", "out"]),
    });
    insta::assert_snapshot!(serde_json::to_string_pretty(&selections).expect("json"));
}

#[test]
fn scene_and_pressure_read_well() {
    let env = mapped();
    insta::assert_snapshot!(env.run(&["scene"]), @r"
    revision 1
    objective: keep the map fresh
    graph: architecture 2 nodes / 1 edges, dataflow 0 nodes / 0 edges, 0 links
      frontier: `a`
    retrieval: ready, no persistent index (queries scan the work tree)
    freshness: fresh: the work tree matches the map
    checked: 3 of 3 records that cite code are unchanged since checked
    checkpoint `ck` (debug, resume_ready): the c seam
      next action: reread c
    next: index, retrieve, distill, context, planning, graph, freshness, pressure, reorient, update, propose, promote
    [exit status: 0]
    ");
    insta::assert_snapshot!(env.run(&["pressure", "--used", "82", "--auto-compact-limit", "100", "--context-window", "200"]), @r"
    pressure: high (prepare compaction)
    82 tokens used, 18 remaining, 82.0% of the 100-token auto-compact limit; save scratch, checkpoint and evidence now, before the host compacts
    [exit status: 0]
    ");
    let cumulative = env.json(&["pressure", "--used", "0", "--total", "310"]);
    assert_eq!(cumulative["status"], "unknown");
    assert!(cumulative.get("used_tokens").is_none());
}

#[test]
fn projections_never_write() {
    let env = mapped();
    let before = env.store_bytes();
    for args in [
        &["scene"][..],
        &["context", "--node", "a"],
        &["graph", "--frontier"],
        &["planning"],
        &["freshness"],
        &["pressure", "--used", "1", "--context-window", "10"],
        &["reorient"],
        &["prompt"],
    ] {
        env.ok(args);
    }
    assert_eq!(env.store_bytes(), before);
}

#[test]
fn a_stale_index_fails_the_freshness_check_and_shows_in_the_scene() {
    let env = mapped();
    env.ok(&["index"]);
    let fresh = env.json(&["freshness", "--check"]);
    assert_eq!(fresh["retrieval"]["status"], "ready", "{fresh}");
    assert_eq!(env.json(&["scene"])["retrieval"]["status"], "ready");

    env.write("README.md", "# uncited, but now newer than the index\n");
    let stale = env.run(&["--json", "freshness", "--check"]);
    assert_eq!(stale.code, 1, "{stale}");
    let report = stale.json();
    assert_eq!(report["stale_reasons"], json!(["index_stale"]));
    assert_eq!(report["retrieval"]["dirty_paths"], json!(["README.md"]));
    assert_eq!(env.json(&["scene"])["retrieval"]["status"], "stale");

    env.ok(&["index"]);
    assert_eq!(code(&env, &["freshness", "--check"]), 0);
}

#[test]
fn outside_git_the_index_manifest_stands_in_for_the_watcher() {
    let env = TestEnv::plain();
    env.write("src/a.rs", "// a\n");
    env.write("src/b.rs", "// b\n");
    env.ok(&["init"]);
    env.update(&json!({"objective": "no git here", "graphs": graphs("does a")}));
    env.ok(&["index"]);
    env.write("src/a.rs", "// a changed outside git\n");
    let stale = env.run(&["--json", "freshness", "--check"]);
    assert_eq!(stale.code, 1, "{stale}");
    let report = stale.json();
    assert_eq!(report["watcher"]["status"], "changed", "{report}");
    assert_eq!(
        report["watcher"]["graph_node_ids"],
        json!(["a"]),
        "{report}"
    );
}

/// The whole document each projection prints for one mapped state, human and JSON: a change
/// to any field, line or order shows up in review (field probes would miss most of them).
#[test]
fn projections_print_whole_documents() {
    let env = mapped();
    // The map shows a file only with a definition: one file has one.
    env.write("src/d.rs", "pub fn decide(a: u8) -> u8 {\n    a\n}\n");
    env.commit_all("a definition");
    env.update(&json!({
        "observations": [{"id": "o1", "summary": "a calls b", "source_kind": "test", "status": "ok",
                          "evidence_ids": ["e1"], "code_refs": [{"path": "src/a.rs", "start_line": 1}]}],
        "evidence": [{"id": "e1", "kind": "test", "status": "pass", "summary": "green"}]
    }));
    env.write("src/b.rs", "// b changed after the map\n");
    // Commit ids hash the tree, whose segment names differ from run to run, and a record
    // names the commit it was written at: both are replaced.
    let head = env.git(&["rev-parse", "HEAD"]).trim().to_owned();
    let mut volatile = vec![(head.clone(), "<HEAD>"), (head[..10].to_owned(), "<HEAD>")];
    for entry in env.json(&["log"])["entries"].as_array().expect("entries") {
        if entry["git_head"] == head.as_str() {
            let id = entry["id"].as_str().expect("id");
            volatile.push((id[..12].to_owned(), "<a record at HEAD>"));
        }
    }
    for (name, args) in [
        ("scene", &["scene"][..]),
        ("scene_json", &["--json", "scene"]),
        ("context_json", &["--json", "context", "--node", "a"]),
        ("graph", &["graph", "--node", "a", "--direction", "out"]),
        ("freshness_json", &["--json", "freshness"]),
        ("reorient", &["reorient"]),
        ("prompt", &["prompt"]),
        ("log", &["log"]),
    ] {
        let output = env.run(args);
        let text = match output.stdout.trim_start().starts_with('{') {
            true => format!("{:#}\n[exit status: {}]", output.json(), output.code),
            false => output.to_string(),
        };
        let text = (volatile.iter()).fold(text, |text, (from, to)| text.replace(from, to));
        insta::assert_snapshot!(format!("whole_{name}"), text);
    }
}
