//! The certificate is visible where the agent reads: `prompt`, `scene` and `context` say for each
//! node whether the code it cites is unchanged since it was checked, and `context` answers with
//! what was asked (and the cited code itself with `--code`).

use serde_json::json;

use crate::common::TestEnv;

const LEDGER: &str = "\
pub fn balance(entries: &[i64]) -> i64 {
    entries.iter().sum()
}

pub fn post(entries: &mut Vec<i64>, amount: i64) {
    entries.push(amount);
}
";

/// A ledger with one node per function, committed.
fn ledger() -> TestEnv {
    let env = TestEnv::new();
    env.write("src/ledger.rs", LEDGER);
    env.commit_all("code");
    for (id, symbol) in [("balance", "balance"), ("post", "post")] {
        let reference = format!("src/ledger.rs#{symbol}");
        env.ok(&[
            "node",
            "set",
            id,
            "--purpose",
            &format!("{symbol} of the ledger"),
            "--ref",
            &reference,
        ]);
    }
    env.commit_all("map");
    env
}

/// The prompt's lines about one node: its item and the lines indented under it.
fn node_lines(prompt: &str, id: &str) -> String {
    let indent = |line: &str| line.len() - line.trim_start().len();
    let heading = format!("node `{id}`");
    let lines: Vec<&str> = prompt.lines().collect();
    let start = (lines.iter())
        .position(|line| line.trim_start().starts_with("- ") && line.contains(&heading))
        .unwrap_or_else(|| panic!("no node {id} in:\n{prompt}"));
    let end = (lines[start + 1..].iter())
        .position(|line| indent(line) <= indent(lines[start]))
        .map_or(lines.len(), |n| start + 1 + n);
    lines[start..end].join("\n")
}

#[test]
fn prompt_certifies_each_node_until_the_code_it_cites_changes() {
    let env = ledger();
    let prompt = env.ok(&["prompt"]).stdout;
    assert!(prompt.contains("need not be read again"), "{prompt}");
    assert!(
        prompt.contains("- Code check: all 2 records that cite code (graph nodes, investigation checkpoint) are `unchanged since checked`"),
        "{prompt}"
    );
    for id in ["balance", "post"] {
        let lines = node_lines(&prompt, id);
        assert!(
            lines.contains("checked: `unchanged since checked` (at commit "),
            "{lines}"
        );
    }

    // An edit inside `balance` moves `post` down a line: `post` only moved.
    env.write(
        "src/ledger.rs",
        LEDGER.replace(
            "    entries.iter().sum()\n",
            "    let total = entries.iter().sum();\n    total * 10 - 1\n",
        ),
    );
    let prompt = env.ok(&["prompt"]).stdout;
    let balance = node_lines(&prompt, "balance");
    assert!(
        balance.contains("checked: `changed since checked`: `src/ledger.rs:1-3#balance`"),
        "{balance}"
    );
    let post = node_lines(&prompt, "post");
    assert!(post.contains("`unchanged since checked`"), "{post}");
    assert!(
        prompt.contains("`changed since checked`: `balance` (re-read, then `epiphany recheck`)"),
        "{prompt}"
    );
    let scene = env.ok(&["scene"]).stdout;
    assert!(
        scene.contains("checked: 1 of 2 records that cite code are unchanged since checked; changed since checked: architecture node \"balance\""),
        "{scene}"
    );

    // Re-reading certifies it again.
    env.ok(&["recheck", "balance"]);
    let prompt = env.ok(&["prompt"]).stdout;
    assert!(
        prompt.contains("- Code check: all 2 records that cite code (graph nodes, investigation checkpoint) are `unchanged since checked`"),
        "{prompt}"
    );
}

#[test]
fn context_answers_with_the_named_note_alone() {
    let env = ledger();
    env.ok(&["node", "set", "balance", "--status", "verified"]);
    env.update(&json!({"graph_frontier": {"active_node_ids": ["balance", "post"]}}));
    let note = env.json(&[
        "note",
        "balance sums every entry, refunds included",
        "--ref",
        "src/ledger.rs#balance",
    ]);
    let observation = note["written"][0]
        .as_str()
        .unwrap_or_else(|| panic!("no observation id in {note}"))
        .to_owned();

    let shard = env.json(&["context", "--observation", &observation]);
    let body = &shard["context"];
    assert_eq!(
        body["observations"][0]["id"],
        observation.as_str(),
        "{shard}"
    );
    assert!(body.get("frontier").is_none(), "{shard}");
    assert_eq!(body["evidence"], json!([]), "{shard}");
    assert_eq!(body["graph"]["architecture_nodes"], json!([]));
    let text = env.ok(&["context", "--observation", &observation]).stdout;
    assert_eq!(
        text.matches("balance sums every entry").count(),
        1,
        "{text}"
    );
    assert!(!text.contains("frontier"), "{text}");

    let with_frontier = env.json(&["context", "--observation", &observation, "--frontier"]);
    assert!(
        with_frontier["context"]["frontier"].is_object(),
        "{with_frontier}"
    );
    let nothing_named = env.json(&["context"]);
    assert!(
        nothing_named["context"]["frontier"].is_object(),
        "{nothing_named}"
    );
}

#[test]
fn context_code_prints_the_cited_lines_with_their_certificate() {
    let env = ledger();
    let text = env.ok(&["context", "--node", "post", "--code"]).stdout;
    assert!(
        text.contains("code src/ledger.rs:5-7#post (architecture node \"post\"):"),
        "{text}"
    );
    assert!(text.contains("     5  pub fn post("), "{text}");
    assert!(text.contains("     6      entries.push(amount);"), "{text}");
    assert!(!text.contains("entries.iter().sum()"), "{text}");
    assert!(
        text.contains("checked:\n  architecture node \"post\": unchanged since checked at commit "),
        "{text}"
    );

    let shard = env.json(&["context", "--node", "post", "--code"]);
    assert_eq!(shard["code"][0]["start_line"], 5, "{shard}");
    assert_eq!(shard["certificates"][0]["status"], "unchanged", "{shard}");
    let without = env.json(&["context", "--node", "post"]);
    assert!(without.get("code").is_none(), "{without}");
}
