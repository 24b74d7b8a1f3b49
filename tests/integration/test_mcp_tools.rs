//! `mcp`: the tool list a host puts into the model's context, the subset `--tools` serves, and
//! arguments as models send them.

use serde_json::Value;
use serde_json::json;

use crate::common::TestEnv;
use crate::test_mcp::Session;
use crate::test_mcp::result_text;

const NEWEST: &str = "2025-11-25";

/// The `tools/list` answer of a server started with `options`, as the line it sent.
fn tools_list(env: &TestEnv, options: &[&str]) -> (usize, Vec<Value>) {
    let mut session = Session::start_with(env, options);
    session.request(
        1,
        "initialize",
        json!({"protocolVersion": NEWEST, "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}),
    );
    let answer = session.request(2, "tools/list", json!({}));
    let tools = answer["result"]["tools"].as_array().expect("tools").clone();
    (answer.to_string().len(), tools)
}

fn names(tools: &[Value]) -> Vec<&str> {
    tools
        .iter()
        .map(|tool| tool["name"].as_str().expect("a name"))
        .collect()
}

/// See: issue 50. `tools/list` was 514 KB (about 12k tokens in every session of an agent);
/// the newest revision's list, with its output schemas, now fits in 64 KB, and the tools that
/// only read (`--tools read`) in 16 KB.
#[test]
fn regression_50_the_tool_list_stays_small() {
    let env = TestEnv::new();
    let (all_bytes, all) = tools_list(&env, &[]);
    assert!(all.len() >= 30, "{:?}", names(&all));
    assert!(all_bytes <= 64 * 1024, "tools/list is {all_bytes} bytes");
    let (read_bytes, read) = tools_list(&env, &["--tools", "read"]);
    assert!(
        read_bytes <= 16 * 1024,
        "tools/list --tools read is {read_bytes} bytes"
    );
    for tool in &read {
        assert_eq!(tool["annotations"]["readOnlyHint"], true, "{tool}");
    }
    let (_, write) = tools_list(&env, &["--tools", "write"]);
    assert_eq!(read.len() + write.len(), all.len());
    assert!(names(&write).contains(&"update"), "{:?}", names(&write));
}

#[test]
fn tools_serves_the_tools_named_and_refuses_an_unknown_name() {
    let env = TestEnv::new();
    let (_, tools) = tools_list(&env, &["--tools", "scene,retrieve"]);
    assert_eq!(names(&tools), ["scene", "retrieve"]);
    let mut session = Session::start_with(&env, &["--tools", "scene,retrieve"]);
    let refused = session.request(1, "tools/call", json!({"name": "update", "arguments": {}}));
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
    assert_eq!(
        refused["error"]["message"],
        "unknown tool `update`; the tools are: scene, retrieve"
    );
    let scene = session.call(2, "scene", json!({}));
    assert_eq!(scene["isError"], false, "{scene}");
    drop(session);

    let before = env.ok(&["--json", "log"]).stdout;
    let unknown = env.run(&["mcp", "--tools", "read,upate"]);
    assert_eq!(unknown.code, 2, "{unknown}");
    assert!(
        unknown.stderr.contains(
            "is no tool; give read, write, all, or tool names separated by commas: init, show,"
        ),
        "{unknown}"
    );
    assert!(unknown.stdout.is_empty(), "{unknown}");
    assert_eq!(env.ok(&["--json", "log"]).stdout, before);
}

/// Arguments each tool with an optional list argument needs besides it: enough for a call
/// that succeeds. Writers are asked for a dry run, so that every call sees the same store.
fn base_arguments(tool: &str) -> Option<Value> {
    Some(match tool {
        "distill" => json!({"source_kind": "test", "status": "ok", "text": "3 passed"}),
        "propose" | "context" | "map" => json!({}),
        "note" => json!({"text": "the lexer keeps spans", "dry_run": true}),
        "node_set" => json!({"id": "lexer", "purpose": "tokens", "dry_run": true}),
        "edge_add" => {
            json!({"source": "lexer", "target": "parser", "kind": "feeds", "dry_run": true})
        }
        "checkpoint_set" => json!({"focus": "lexer", "next_action": "reread", "dry_run": true}),
        "recheck" => json!({"checkpoint": true, "dry_run": true}),
        "graph" => json!({"frontier": true}),
        "retrieve" => json!({"query": "lexer spans"}),
        "conflicts_settle" => json!({"all": true, "take": "theirs", "dry_run": true}),
        _ => return None,
    })
}

/// What a call answered, without what differs between two runs of the same call.
fn answer_of(result: &Value) -> (Value, Value) {
    let mut structured = result["structuredContent"].clone();
    if let Some(object) = structured.as_object_mut() {
        // `retrieve` says how long it took.
        object.remove("elapsed_ms");
    }
    (result["_meta"]["exit_code"].clone(), structured)
}

/// See: issue 50. `note refs: []`, `retrieve path_prefixes: []` and `context nodes: []` were
/// refused ("the value given is not valid for `refs`"), though models send them. Every
/// optional list argument of every tool, given as `[]` or as `null`, is now the argument not
/// given, and so is every optional argument given as `null`.
#[test]
fn regression_50_empty_and_null_lists_are_arguments_not_given() {
    let env = TestEnv::new();
    env.write("src/lexer.rs", "pub fn lex() {}\n");
    env.write("src/parser.rs", "pub fn parse() {}\n");
    env.update(&json!({
        "graphs": {"architecture": {"nodes": [
            {"id": "lexer", "title": "Lexer", "purpose": "tokens", "code_refs": [{"path": "src/lexer.rs"}]},
            {"id": "parser", "title": "Parser", "purpose": "trees", "code_refs": [{"path": "src/parser.rs"}]}
        ]}},
        "graph_frontier": {"active_node_ids": ["lexer"]},
        "investigation_checkpoint": {"checkpoint_id": "ck", "kind": "debug", "disposition": "resume_ready",
            "focus": "lexer", "next_action": "reread", "code_refs": [{"path": "src/lexer.rs"}]}
    }));
    let (_, tools) = tools_list(&env, &[]);
    let mut session = Session::start(&env);
    let mut id = 10;
    let mut covered = Vec::new();
    for tool in &tools {
        let name = tool["name"].as_str().expect("a name");
        let schema = &tool["inputSchema"];
        let required: Vec<&Value> = schema["required"]
            .as_array()
            .into_iter()
            .flatten()
            .collect();
        let properties = schema["properties"].as_object().expect("properties");
        let optional = |(key, _): &(&String, &Value)| !required.contains(&&json!(key));
        let lists: Vec<&String> = (properties.iter())
            .filter(|(_, property)| property["type"] == "array")
            .filter(optional)
            .map(|(key, _)| key)
            .collect();
        if lists.is_empty() {
            continue;
        }
        let base = base_arguments(name).unwrap_or_else(|| {
            panic!("`{name}` takes a list: give it arguments in base_arguments")
        });
        id += 1;
        let plain = session.call(id, name, base.clone());
        // `propose` finds no proposal-ready observation in this store, and `conflicts_settle`
        // no open conflict: their answer is a refusal, which must still be the same whether
        // the lists are omitted, empty or null.
        if !["propose", "conflicts_settle"].contains(&name) {
            assert_eq!(plain["isError"], false, "{name} {base}: {plain}");
        }
        let mut variants: Vec<Value> = Vec::new();
        for list in &lists {
            for nothing in [json!([]), Value::Null] {
                let mut arguments = base.clone();
                arguments[list.as_str()] = nothing;
                variants.push(arguments);
            }
        }
        let mut all_null = base.clone();
        for (key, _) in properties.iter().filter(|pair| optional(pair)) {
            if base.get(key).is_none() {
                all_null[key.as_str()] = Value::Null;
            }
        }
        variants.push(all_null);
        for arguments in variants {
            id += 1;
            let result = session.call(id, name, arguments.clone());
            assert_eq!(
                answer_of(&result),
                answer_of(&plain),
                "{name} {arguments}: {result}"
            );
        }
        covered.push(name.to_owned());
    }
    for expected in [
        "note", "retrieve", "context", "graph", "map", "node_set", "recheck",
    ] {
        assert!(
            covered.contains(&expected.to_owned()),
            "{expected}: {covered:?}"
        );
    }
}

/// See: issue 50. A refusal says what was wrong and what the argument takes.
#[test]
fn regression_50_refusals_say_what_is_accepted() {
    let env = TestEnv::new();
    let mut session = Session::start(&env);
    let text = result_text;
    let cases = [
        (
            "retrieve",
            json!({"query": []}),
            "`retrieve` needs the argument `query` (a string or a list of them)",
        ),
        (
            "note",
            json!({"text": "t", "refs": [3]}),
            "argument `refs` must be a string or a list of them; item 1 is a number",
        ),
        (
            "pressure",
            json!({"used": "lots"}),
            "argument `used` must be an integer, not a string that is not a whole number (4 characters)",
        ),
        (
            "graph",
            json!({"direction": "up"}),
            "argument `direction` must be one of in, out, both (a string of 2 characters was given)",
        ),
    ];
    for (id, (name, arguments, expected)) in (1..).zip(cases) {
        let result = session.call(id, name, arguments);
        assert_eq!(result["isError"], true, "{result}");
        assert_eq!(text(&result), expected);
    }
}
