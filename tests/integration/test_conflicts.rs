//! `conflicts` and `conflicts settle` (issue 49 item 4): branches merged with git's own `merge`
//! leave standing conflicts; `conflicts` lists them with each side's write, and one
//! `conflicts settle` takes a side for all of them through the write path, as an ordinary
//! record `rollback` undoes. Every refusal leaves the rollout as it was.

use serde_json::Value;
use serde_json::json;

use crate::common::TestEnv;
use crate::common::node_json;
use crate::common::problem_lines;
use crate::test_git::git_clean;
use crate::test_git::repository;
use crate::test_mcp::Session;

/// The nodes every branch rewrites.
const NODES: [&str; 6] = ["lexer", "parser", "checker", "emitter", "linker", "loader"];

/// Every node and the checkpoint written as `branch` sees them, and committed.
fn write_everything(env: &TestEnv, branch: &str) {
    let nodes: Vec<Value> = (NODES.iter())
        .map(|id| node_json(id, &format!("{branch}'s {id}"), "src/lib.rs"))
        .collect();
    env.update(&json!({"upsert": {"architecture_nodes": nodes}}));
    let focus = format!("{branch}'s focus");
    let next = format!("{branch}'s next step");
    env.ok(&["checkpoint", "set", "--focus", &focus, "--next", &next]);
    env.commit_all(&format!("{branch} maps everything"));
}

/// Three branches (main, `second`, `third`) forked from one map, each rewriting every node and
/// the checkpoint, merged into main by git: seven standing conflicts of three writes each.
fn three_branches_merged() -> TestEnv {
    let env = repository();
    write_everything(&env, "base");
    for branch in ["second", "third"] {
        env.git(&["checkout", "-q", "-b", branch]);
        write_everything(&env, branch);
        env.git(&["checkout", "-q", "main"]);
    }
    write_everything(&env, "main");
    git_clean(&env, &["merge", "--no-edit", "second"]);
    git_clean(&env, &["merge", "--no-edit", "third"]);
    env
}

/// The branch whose value a node's purpose or the checkpoint's focus names.
fn branch_of(value: &Value) -> &str {
    let text = (value.get("purpose").or_else(|| value.get("focus")))
        .and_then(Value::as_str)
        .unwrap_or_else(|| panic!("no purpose or focus in {value}"));
    text.split('\'').next().expect("a branch")
}

/// Each open conflict's key with the branches of its writes, in fold order, by side.
fn listed(env: &TestEnv) -> Vec<(String, Vec<(String, String)>)> {
    let listing = env.json(&["conflicts"]);
    (listing["conflicts"].as_array().expect("conflicts").iter())
        .map(|conflict| {
            let writes = (conflict["writes"].as_array().expect("writes").iter())
                .map(|write| {
                    let side = write["side"].as_str().expect("side").to_owned();
                    (side, branch_of(&write["value"]).to_owned())
                })
                .collect();
            (conflict["key"].as_str().expect("key").to_owned(), writes)
        })
        .collect()
}

#[test]
fn three_merged_branches_list_their_conflicts_and_one_command_settles_them_all() {
    let env = three_branches_merged();
    let open = listed(&env);
    let mut keys: Vec<String> = NODES
        .iter()
        .map(|id| format!("architecture_nodes/{id}"))
        .collect();
    keys.push("investigation_checkpoint".to_owned());
    keys.sort();
    let mut listed_keys: Vec<String> = open.iter().map(|(key, _)| key.clone()).collect();
    listed_keys.sort();
    assert_eq!(listed_keys, keys);
    for (key, writes) in &open {
        let mut by_side: Vec<(String, String)> = writes.clone();
        by_side.sort();
        assert_eq!(
            by_side,
            [("ours", "main"), ("theirs", "second"), ("theirs", "third")]
                .map(|(side, branch)| (side.to_owned(), branch.to_owned())),
            "{key}"
        );
    }
    let text = env.ok(&["conflicts"]);
    assert!(text.stdout.contains("7 open conflict(s)"), "{text}");
    assert!(text.stdout.contains("architecture_nodes/lexer"), "{text}");
    let check = env.run(&["freshness", "--check"]);
    assert_eq!(check.code, 1, "{check}");
    assert!(
        format!("{check}").contains("epiphany conflicts settle --all --take ours|theirs"),
        "{check}"
    );

    let before_settle = env.json(&["show"]);
    let before = before_settle["revision"].as_u64().expect("revision");
    let settled = env.json(&["conflicts", "settle", "--all", "--take", "theirs"]);
    assert_eq!(settled["revision"], before + 1, "{settled}");
    assert_eq!(
        settled["written"].as_array().map(Vec::len),
        Some(7),
        "{settled}"
    );
    assert_eq!(listed(&env), []);
    let head = env.json(&["show"]);
    assert!(head.get("conflicts").is_none(), "{head}");
    // Each takes the last merged-in write in fold order.
    for (key, writes) in &open {
        let theirs = (writes.iter().rev())
            .find(|(side, _)| side == "theirs")
            .map(|(_, branch)| branch.clone())
            .expect("a write of theirs");
        let value = match key.strip_prefix("architecture_nodes/") {
            Some(id) => (head["graphs"]["architecture"]["nodes"]
                .as_array()
                .expect("nodes"))
            .iter()
            .find(|node| node["id"] == id)
            .cloned()
            .expect("the node"),
            None => head["investigation_checkpoint"].clone(),
        };
        assert_eq!(branch_of(&value), theirs, "{key}");
    }
    let freshness = env.json_allowing(&["freshness"], 0);
    assert!(
        !freshness["stale_reasons"]
            .as_array()
            .is_some_and(|reasons| reasons.contains(&json!("conflicts"))),
        "{freshness}"
    );
    assert_eq!(env.run(&["freshness", "--check"]).code, 0);
    assert_eq!(env.json(&["verify"])["ok"], true);

    // The settle is an ordinary record: the log lists it, and a rollback brings back the
    // values it replaced (as a write that saw every side, with no conflict left).
    let log = env.json(&["log", "--limit", "1"]);
    assert_eq!(log["entries"][0]["id"], settled["id"]);
    env.ok(&["rollback", "--to-revision", "HEAD~1"]);
    let restored = env.json(&["show"]);
    for field in ["graphs", "investigation_checkpoint"] {
        assert_eq!(restored[field], before_settle[field], "{field}");
    }
}

#[test]
fn a_settle_takes_only_the_conflicts_named() {
    let env = three_branches_merged();
    env.ok(&[
        "conflicts",
        "settle",
        "architecture_nodes/lexer",
        "investigation_checkpoint",
        "--take",
        "ours",
    ]);
    let open = listed(&env);
    assert_eq!(open.len(), 5, "{open:?}");
    assert!(
        open.iter()
            .all(|(key, _)| key != "architecture_nodes/lexer")
    );
    let head = env.json(&["show"]);
    let lexer = (head["graphs"]["architecture"]["nodes"]
        .as_array()
        .expect("nodes")
        .iter())
    .find(|node| node["id"] == "lexer")
    .cloned()
    .expect("lexer");
    assert_eq!(branch_of(&lexer), "main");
    assert_eq!(branch_of(&head["investigation_checkpoint"]), "main");
}

/// `conflicts settle ARGS` fails with exit 2 and leaves the rollout as it was; answers the
/// output.
fn refused(env: &TestEnv, args: &[&str]) -> crate::common::Output {
    let rollout = env.rollout_text();
    let head = env.json(&["show"]);
    let mut full = vec!["--json", "conflicts", "settle"];
    full.extend_from_slice(args);
    let output = env.run(&full);
    assert_eq!(output.code, 2, "{output}");
    assert_eq!(
        env.rollout_text(),
        rollout,
        "the rollout changed:\n{output}"
    );
    assert_eq!(env.json(&["show"]), head);
    output
}

#[test]
fn a_settle_with_bad_input_is_refused_and_writes_nothing() {
    let env = three_branches_merged();
    let unknown = refused(&env, &["architecture_nodes/nope", "--take", "theirs"]).json();
    let problems = problem_lines(&unknown["error"]);
    assert_eq!(problems.len(), 1, "{unknown}");
    assert!(
        problems[0].starts_with("ID[0]: `architecture_nodes/nope` is no open conflict"),
        "{unknown}"
    );
    assert!(
        problems[0].contains("architecture_nodes/lexer"),
        "{unknown}"
    );
    let missing_take = refused(&env, &["--all"]);
    assert!(missing_take.stderr.contains("--take"), "{missing_take}");
    let bad_side = refused(&env, &["--all", "--take", "both"]);
    assert!(bad_side.stderr.contains("`ours`"), "{bad_side}");
    let nothing_named = refused(&env, &["--take", "ours"]);
    assert!(nothing_named.stderr.contains("ID"), "{nothing_named}");
    let both = refused(
        &env,
        &["--all", "architecture_nodes/lexer", "--take", "ours"],
    );
    assert!(both.stderr.contains("--all"), "{both}");
    assert_eq!(listed(&env).len(), 7);

    env.ok(&["conflicts", "settle", "--all", "--take", "ours"]);
    let nothing = refused(&env, &["--all", "--take", "theirs"]).json();
    assert_eq!(
        nothing["error"]["message"], "nothing to settle: the store has no open conflicts",
        "{nothing}"
    );
}

#[test]
fn a_branch_merged_by_a_fast_forward_is_ours() {
    let env = repository();
    write_everything(&env, "base");
    env.git(&["checkout", "-q", "-b", "second"]);
    write_everything(&env, "second");
    env.git(&["checkout", "-q", "main"]);
    env.git(&["checkout", "-q", "-b", "third"]);
    write_everything(&env, "third");
    env.git(&["checkout", "-q", "main"]);
    // A fast-forward: `second`'s records are main's own now, and only `third` is merged in.
    git_clean(&env, &["merge", "--ff-only", "second"]);
    git_clean(&env, &["merge", "--no-edit", "third"]);
    for (key, writes) in listed(&env) {
        let mut sides: Vec<&str> = writes.iter().map(|(side, _)| side.as_str()).collect();
        sides.sort();
        assert_eq!(sides, ["ours", "theirs"], "{key}");
    }
    env.ok(&["conflicts", "settle", "--all", "--take", "theirs"]);
    let head = env.json(&["show"]);
    assert_eq!(branch_of(&head["investigation_checkpoint"]), "third");
}

#[test]
fn without_conflicts_the_listing_is_empty() {
    let env = repository();
    assert_eq!(env.json(&["conflicts"]), json!({"conflicts": []}));
    assert_eq!(env.ok(&["conflicts"]).stdout, "no open conflicts\n");
}

/// See: issue 49 item 4. Over MCP, the `conflicts` tool lists the open conflicts as the command
/// line does and only reads (it is served by `--tools read`), and `conflicts_settle` is the
/// write that settles them (served by `--tools write`), through the same parser and dispatch.
#[test]
fn conflicts_are_listed_and_settled_over_mcp() {
    let env = three_branches_merged();
    let listed = env.json(&["conflicts"]);
    assert_eq!(listed["conflicts"].as_array().expect("conflicts").len(), 7);
    let names = |options: &[&str]| {
        let mut session = Session::start_with(&env, options);
        let tools = session.request(1, "tools/list", json!({}))["result"]["tools"].clone();
        let names: Vec<String> = (tools.as_array().expect("tools").iter())
            .map(|tool| tool["name"].as_str().expect("a name").to_owned())
            .collect();
        names
    };
    let read = names(&["--tools", "read"]);
    assert!(read.contains(&"conflicts".to_owned()), "{read:?}");
    assert!(!read.contains(&"conflicts_settle".to_owned()), "{read:?}");
    assert!(names(&["--tools", "write"]).contains(&"conflicts_settle".to_owned()));

    let mut session = Session::start(&env);
    session.request(
        1,
        "initialize",
        json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}),
    );
    let list = session.call(2, "conflicts", json!({}));
    assert_eq!(list["isError"], false, "{list}");
    assert_eq!(list["structuredContent"], listed);
    let before = env.json(&["log"]);
    let refused = session.call(3, "conflicts_settle", json!({"take": "theirs"}));
    assert_eq!(refused["isError"], true, "{refused}");
    assert_eq!(env.json(&["log"]), before, "a refused settle wrote");
    let settled = session.call(
        4,
        "conflicts_settle",
        json!({"all": true, "take": "theirs"}),
    );
    assert_eq!(settled["isError"], false, "{settled}");
    assert!(
        settled["structuredContent"]["revision"].is_u64(),
        "{settled}"
    );
    let after = session.call(5, "conflicts", json!({}));
    assert_eq!(
        after["structuredContent"]["conflicts"],
        json!([]),
        "{after}"
    );
    session.close();
}
