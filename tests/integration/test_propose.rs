//! `propose` drafts only what the code shows (issue 46, item 4): an edge where a reference in
//! one node's cited code resolves, through its file's imports or its own scope, to a definition
//! another node cites, from caller to callee, citing the line of the call; nodes titled after
//! the definitions they cite, one per path.

use std::collections::BTreeMap;

use serde_json::Value;
use serde_json::json;

use crate::common::PASSING_VERIFIER;
use crate::common::TestEnv;
use crate::common::distill_args;
use crate::common::unfingerprinted;

/// A repository with `files`, committed, and one verified observation citing `refs`, then the
/// proposal drafted from it.
fn proposed(files: &[(&str, &str)], refs: &[&str]) -> (TestEnv, Value) {
    let env = TestEnv::new();
    for (path, contents) in files {
        env.write(path, contents);
    }
    env.commit_all("code");
    let mut args = vec!["--text", "the audit tests pass"];
    for code_ref in refs {
        args.extend(["--code-ref", code_ref]);
    }
    let draft = env.run(&distill_args("test", &args));
    assert_eq!(draft.code, 0, "{draft}");
    env.ok_with(&["update"], &[], draft.stdout);
    env.commit_all("observed");
    let proposal = env.json(&["propose"]);
    (env, proposal)
}

/// The proposal's node ids by title.
fn nodes_by_title(proposal: &Value) -> BTreeMap<String, String> {
    (proposal["patch"]["upsert"]["architecture_nodes"].as_array())
        .expect("nodes")
        .iter()
        .map(|node| {
            let text = |key: &str| node[key].as_str().expect("text").to_owned();
            (text("title"), text("id"))
        })
        .collect()
}

/// The proposal's edges, without fingerprints; `[]` when it draws none.
fn edges_of(proposal: &Value) -> Value {
    match &proposal["patch"]["upsert"]["architecture_edges"] {
        Value::Null => json!([]),
        edges => unfingerprinted(edges),
    }
}

/// The one edge a call at `path:line` from `caller` to `callee` draws between their nodes.
fn call_edge(proposal: &Value, (caller, callee): (&str, &str), (path, line): (&str, u32)) -> Value {
    let nodes = nodes_by_title(proposal);
    json!([{
        "source_id": nodes[caller],
        "target_id": nodes[callee],
        "kind": "calls",
        "mechanism": format!("`{caller}` calls `{callee}` at {path}:{line}"),
        "code_refs": [{"path": path, "start_line": line, "end_line": line, "symbol": caller}],
    }])
}

const LEDGER_RS: &str = "/// The sum of the entries.\npub fn balance(entries: &[i64]) -> i64 {\n    entries.iter().sum()\n}\n";

const AUDIT_RS: &str = "use crate::ledger::balance;\n\npub fn audit(entries: &[i64]) -> bool {\n    balance(entries) == 0\n}\n";

#[test]
fn propose_draws_the_call_the_code_makes_from_caller_to_callee() {
    let (env, proposal) = proposed(
        &[
            ("src/lib.rs", "pub mod audit;\npub mod ledger;\n"),
            ("src/ledger.rs", LEDGER_RS),
            ("src/audit.rs", AUDIT_RS),
        ],
        &["src/audit.rs#audit", "src/ledger.rs#balance"],
    );
    // One node per path, each titled after the definition it cites (ids still by path).
    assert_eq!(
        nodes_by_title(&proposal),
        BTreeMap::from([
            ("audit".to_owned(), "arch-path-e2920b8d447a".to_owned()),
            ("balance".to_owned(), "arch-path-063024cd3e8a".to_owned()),
        ]),
        "{proposal}"
    );
    assert_eq!(
        edges_of(&proposal),
        json!([{
            "source_id": "arch-path-e2920b8d447a",
            "target_id": "arch-path-063024cd3e8a",
            "kind": "calls",
            "mechanism": "`audit` calls `balance` at src/audit.rs:4",
            "code_refs": [{"path": "src/audit.rs", "start_line": 4, "end_line": 4, "symbol": "audit"}],
        }]),
        "{proposal}"
    );

    // The edge and its evidence pass the write path and hold on the tree.
    let promoted = env.run_with_stdin(&PASSING_VERIFIER, proposal.to_string());
    assert_eq!(promoted.code, 0, "{promoted}");
    let edges = &env.json(&["show"])["graphs"]["architecture"]["edges"];
    assert_eq!(unfingerprinted(edges), edges_of(&proposal), "{edges}");
    let check = env.run(&["--json", "freshness", "--check"]);
    assert_eq!(check.code, 0, "{check}");
}

/// Each file defines its own `helper` and calls it: a name two files share joins nothing.
#[test]
fn propose_draws_no_edge_between_namesakes() {
    let own_helper = |caller: &str| {
        format!("fn helper() -> u8 {{\n    1\n}}\n\npub fn {caller}() -> u8 {{\n    helper()\n}}\n")
    };
    let (_env, proposal) = proposed(
        &[
            ("src/lib.rs", "pub mod a;\npub mod b;\n"),
            ("src/a.rs", &own_helper("run_a")),
            ("src/b.rs", &own_helper("run_b")),
        ],
        &["src/a.rs#run_a", "src/b.rs#helper"],
    );
    let titles: Vec<String> = nodes_by_title(&proposal).into_keys().collect();
    assert_eq!(titles, ["helper", "run_a"], "{proposal}");
    assert_eq!(edges_of(&proposal), json!([]), "{proposal}");
}

/// Python's `from ... import` and TypeScript's `import { ... as ... }` lead to the imported
/// file's definition, not to another file defining the same name.
#[test]
fn propose_follows_python_and_typescript_imports() {
    let (_env, proposal) = proposed(
        &[
            ("app/__init__.py", ""),
            (
                "app/ledger.py",
                "def balance(entries):\n    return sum(entries)\n",
            ),
            ("app/other.py", "def balance(entries):\n    return 0\n"),
            (
                "app/audit.py",
                "from app.ledger import balance\n\n\ndef audit(entries):\n    return balance(entries) == 0\n",
            ),
        ],
        &[
            "app/audit.py#audit",
            "app/other.py#balance",
            "app/ledger.py#balance",
        ],
    );
    let mut expected = call_edge(&proposal, ("audit", "balance"), ("app/audit.py", 5));
    // Both balance nodes carry the title `balance`: the edge must lead to the ledger's.
    let ledger = (proposal["patch"]["upsert"]["architecture_nodes"].as_array())
        .expect("nodes")
        .iter()
        .find(|node| node["code_refs"][0]["path"] == "app/ledger.py")
        .map(|node| node["id"].clone())
        .expect("a node for the ledger");
    expected[0]["target_id"] = ledger;
    assert_eq!(edges_of(&proposal), expected, "{proposal}");

    let (_env, proposal) = proposed(
        &[
            (
                "web/ledger.ts",
                "export function balance(entries: number[]): number {\n  return entries.reduce((a, b) => a + b, 0);\n}\n",
            ),
            (
                "web/audit.ts",
                "import { balance as total } from './ledger';\n\nexport function audit(entries: number[]): boolean {\n  return total(entries) === 0;\n}\n",
            ),
        ],
        &["web/ledger.ts#balance", "web/audit.ts#audit"],
    );
    assert_eq!(
        edges_of(&proposal),
        call_edge(&proposal, ("audit", "balance"), ("web/audit.ts", 4)),
        "{proposal}"
    );
}
