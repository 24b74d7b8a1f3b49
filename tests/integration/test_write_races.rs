//! One-line writes racing each other (issue 46): without `--expected-revision`, each applies to
//! whatever head it finds under the store lock, made from that head, so no write is refused
//! because another landed first and none undoes another; with it, each still refuses another
//! revision with exit 3.

use std::io::Read;
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;
use std::time::Instant;

use serde_json::Value;
use serde_json::json;

use crate::common::Output;
use crate::common::TestEnv;

/// How long a racing writer waits for the store lock: long enough that none times out (a
/// timeout is exit 3 too, and would hide what these tests count).
const PATIENT: (&str, &str) = ("EPIPHANY_LOCK_TIMEOUT_MS", "120000");

/// A repository with a lexer and a parser committed, and a store holding the node `lexer`,
/// the node `parser` and the investigation checkpoint.
fn repo() -> TestEnv {
    let env = TestEnv::bare();
    env.write("src/lexer.rs", "pub fn lex() {}\n");
    env.write("src/parser.rs", "pub fn parse() {}\n");
    env.commit_all("code");
    env.ok(&["init", "--objective", "keep spans on retry"]);
    env.ok(&[
        "node",
        "set",
        "lexer",
        "--purpose",
        "turns bytes into tokens",
    ]);
    env.ok(&["node", "set", "parser", "--purpose", "builds trees"]);
    env.ok(&["checkpoint", "set", "--focus", "lexer", "--next", "read it"]);
    env
}

/// Whether the process `pid` has `path` open.
fn holds_open(pid: u32, path: &Path) -> bool {
    let Ok(entries) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
        return false;
    };
    entries
        .filter_map(Result::ok)
        .any(|entry| std::fs::read_link(entry.path()).is_ok_and(|target| target == path))
}

/// Runs every one of `runs` at once against the store, as concurrent writers do, and makes
/// them meet at the lock: the test holds it until each writer has opened the lock file (or
/// ended), so each has read whatever it reads before the lock while no write could land, then
/// lets them all go. Answers their outputs, in order.
fn released_together(env: &TestEnv, runs: &[&[&str]]) -> Vec<Output> {
    let lock_path = env.root().join(".epiphany/lock");
    let lock = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&lock_path)
        .expect("open the lock file");
    lock.lock().expect("hold the lock");
    let mut children: Vec<_> = runs
        .iter()
        .map(|args| {
            let mut command = env.std_command(args);
            command
                .env(PATIENT.0, PATIENT.1)
                .stdout(Stdio::piped())
                .stderr(Stdio::piped());
            command.spawn().expect("spawn")
        })
        .collect();
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let waiting = children.iter_mut().all(|child| {
            holds_open(child.id(), &lock_path) || child.try_wait().is_ok_and(|s| s.is_some())
        });
        if waiting {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the writers never reached the lock"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    drop(lock);
    children
        .into_iter()
        .map(|mut child| {
            let (mut stdout, mut stderr) = (String::new(), String::new());
            let mut out = child.stdout.take().expect("stdout");
            let mut err = child.stderr.take().expect("stderr");
            out.read_to_string(&mut stdout).expect("read stdout");
            err.read_to_string(&mut stderr).expect("read stderr");
            let status = child.wait().expect("wait");
            Output {
                stdout,
                stderr,
                code: status.code().unwrap_or(-1),
            }
        })
        .collect()
}

/// Asserts every output exited 0.
fn all_landed(runs: &[&[&str]], outputs: &[Output]) {
    for (args, output) in runs.iter().zip(outputs) {
        assert_eq!(output.code, 0, "`epiphany {}`:\n{output}", args.join(" "));
    }
}

/// Two writers editing different values of one node (and of the checkpoint) at once, each
/// having read it before the other wrote: both edits land, and neither puts back the value the
/// other replaced. (Each used to pin the revision it had read, so the second exited 3; a write
/// made from what it had read would have undone the first.)
#[test]
fn regression_46_concurrent_edits_of_one_record_keep_both() {
    // See: issue 46.
    let env = repo();
    let before = env.json(&["show"])["revision"].as_u64().expect("revision");
    let runs: [&[&str]; 4] = [
        &[
            "node",
            "set",
            "lexer",
            "--purpose",
            "splits bytes into tokens",
        ],
        &["node", "set", "lexer", "--mechanism", "a loop over bytes"],
        &["checkpoint", "set", "--summary", "retry drops the span"],
        &["checkpoint", "set", "--next", "read the retry loop"],
    ];
    let outputs = released_together(&env, &runs);
    all_landed(&runs, &outputs);
    let state = env.json(&["show"]);
    let lexer = &state["graphs"]["architecture"]["nodes"][0];
    assert_eq!(lexer["id"], "lexer");
    assert_eq!(lexer["purpose"], "splits bytes into tokens", "{state}");
    assert_eq!(lexer["mechanism"], "a loop over bytes", "{state}");
    let checkpoint = &state["investigation_checkpoint"];
    assert_eq!(checkpoint["summary"], "retry drops the span", "{state}");
    assert_eq!(checkpoint["next_action"], "read the retry loop", "{state}");
    assert_eq!(checkpoint["focus"], "lexer", "{state}");
    assert_eq!(state["revision"].as_u64(), Some(before + 4));
}

/// Two writers adding a subgoal (and a backlog item) with the same title at once get two ids:
/// the id is found free in the head the write is applied to, not in the one it read first.
#[test]
fn regression_46_concurrent_adds_of_one_title_get_two_ids() {
    // See: issue 46.
    let env = repo();
    let runs: [&[&str]; 4] = [
        &["subgoal", "add", "Keep spans"],
        &["subgoal", "add", "Keep spans"],
        &["backlog", "add", "Index Go files"],
        &["backlog", "add", "Index Go files"],
    ];
    let outputs = released_together(&env, &runs);
    all_landed(&runs, &outputs);
    let state = env.json(&["show"]);
    let ids = |list: &Value| -> Vec<String> {
        let mut ids: Vec<String> = (list.as_array().expect("list").iter())
            .map(|record| record["id"].as_str().expect("id").to_owned())
            .collect();
        ids.sort();
        ids
    };
    assert_eq!(
        ids(&state["subgoals"]),
        ["sg-keep-spans", "sg-keep-spans-2"],
        "{state}"
    );
    assert_eq!(
        ids(&state["planning"]["backlog_items"]),
        ["bl-index-go-files", "bl-index-go-files-2"],
        "{state}"
    );
}

/// The writes writer `w` makes, in order: ten one-line writes of every kind, some of records of
/// its own, some of records every writer edits (one node and the checkpoint, each writer its
/// own value of them) and a subgoal title every writer adds.
fn writer_runs(w: usize) -> Vec<Vec<String>> {
    let node_value = ["--title", "--purpose", "--mechanism", "--status"][w];
    let checkpoint_value = ["--summary", "--next", "--kind", "--question"][w];
    let runs = [
        format!("note|writer {w} was here"),
        format!("node|set|n{w}|--purpose|node of writer {w}"),
        format!("edge|add|lexer|n{w}|--kind|feeds|--id|e{w}"),
        format!("checkpoint|set|{checkpoint_value}|first {w}"),
        format!("subgoal|add|goal of writer {w}"),
        "subgoal|add|shared goal".to_owned(),
        format!("backlog|add|item of writer {w}"),
        format!("node|set|lexer|{node_value}|value of writer {w}"),
        format!("subgoal|done|sg-goal-of-writer-{w}"),
        format!("checkpoint|set|{checkpoint_value}|last {w}"),
    ];
    runs.iter()
        .map(|run| run.split('|').map(str::to_owned).collect())
        .collect()
}

/// 4 writers × 10 one-line writes of every kind, run at once with no `--expected-revision`:
/// none exits 3 (21 to 24 of 40 did when each pinned the revision it read), and every write is
/// in the final state.
#[test]
fn regression_46_forty_concurrent_one_line_writes_all_land() {
    // See: issue 46.
    const WRITERS: usize = 4;
    let env = repo();
    let before = env.json(&["show"])["revision"].as_u64().expect("revision");
    let results: Vec<(Vec<String>, Output)> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..WRITERS)
            .map(|w| {
                let env = &env;
                scope.spawn(move || {
                    (writer_runs(w).into_iter())
                        .map(|args| {
                            let args_ref: Vec<&str> = args.iter().map(String::as_str).collect();
                            let mut command = env.command(&args_ref);
                            command.env(PATIENT.0, PATIENT.1);
                            let output = command.output().expect("run");
                            let output = Output {
                                stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
                                stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
                                code: output.status.code().unwrap_or(-1),
                            };
                            (args, output)
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        (handles.into_iter())
            .flat_map(|handle| handle.join().expect("writer"))
            .collect()
    });
    let conflicts = results.iter().filter(|(_, o)| o.code == 3).count();
    let failed: Vec<String> = (results.iter())
        .filter(|(_, output)| output.code != 0)
        .map(|(args, output)| format!("`epiphany {}`:\n{output}", args.join(" ")))
        .collect();
    assert_eq!(
        (conflicts, failed.len()),
        (0, 0),
        "{} of 40 failed:\n{}",
        failed.len(),
        failed.join("\n")
    );
    let state = env.json(&["show"]);
    assert_eq!(state["revision"].as_u64(), Some(before + 40));
    let text = state.to_string();
    let find = |list: &Value, id: &str| -> Value {
        (list.as_array().expect("list").iter())
            .find(|record| record["id"] == id)
            .cloned()
            .unwrap_or_else(|| panic!("no \"{id}\" in {list}"))
    };
    for w in 0..WRITERS {
        assert!(
            text.contains(&format!("writer {w} was here")),
            "note {w}: {state}"
        );
        let node = find(&state["graphs"]["architecture"]["nodes"], &format!("n{w}"));
        assert_eq!(node["purpose"], format!("node of writer {w}"));
        let edge = find(&state["graphs"]["architecture"]["edges"], &format!("e{w}"));
        assert_eq!(
            (&edge["source_id"], &edge["target_id"]),
            (&json!("lexer"), &json!(format!("n{w}")))
        );
        let goal = find(&state["subgoals"], &format!("sg-goal-of-writer-{w}"));
        assert_eq!(goal["status"], "done", "{goal}");
        find(
            &state["planning"]["backlog_items"],
            &format!("bl-item-of-writer-{w}"),
        );
    }
    let shared_goals = (state["subgoals"].as_array().expect("subgoals").iter())
        .filter(|subgoal| subgoal["title"] == "shared goal")
        .count();
    assert_eq!(shared_goals, WRITERS, "{state}");
    // Each writer's own value of the shared node and checkpoint is its last one.
    let lexer = find(&state["graphs"]["architecture"]["nodes"], "lexer");
    assert_eq!(
        [
            &lexer["title"],
            &lexer["purpose"],
            &lexer["mechanism"],
            &lexer["status"]
        ],
        [
            "value of writer 0",
            "value of writer 1",
            "value of writer 2",
            "value of writer 3"
        ],
        "{lexer}"
    );
    let checkpoint = &state["investigation_checkpoint"];
    assert_eq!(
        [
            &checkpoint["summary"],
            &checkpoint["next_action"],
            &checkpoint["kind"],
            &checkpoint["open_questions"][0]
        ],
        ["last 0", "last 1", "last 2", "last 3"],
        "{checkpoint}"
    );
    assert_eq!(env.json(&["verify"])["ok"], true);
}

/// `--expected-revision` still pins every one-line write: another revision is refused with exit
/// 3 (a conflict) and nothing is written; the head's own revision is accepted.
#[test]
fn regression_46_expected_revision_still_refuses_every_one_line_write() {
    // See: issue 46.
    let env = repo();
    let writes: [&[&str]; 11] = [
        &["note", "the lexer retries"],
        &["node", "set", "lexer", "--mechanism", "a loop"],
        &[
            "edge", "add", "lexer", "parser", "--kind", "feeds", "--id", "e1",
        ],
        &["edge", "rm", "--id", "e1"],
        &["checkpoint", "set", "--summary", "retry drops the span"],
        &["subgoal", "add", "Keep spans"],
        &["subgoal", "done", "sg-keep-spans"],
        &["backlog", "add", "Index Go files"],
        &["recheck", "lexer"],
        &["node", "set", "lexer", "--mechanism", "a loop"],
        &["node", "rm", "parser"],
    ];
    for args in writes {
        let revision = env.json(&["show"])["revision"].as_u64().expect("revision");
        let stale = (revision - 1).to_string();
        let mut pinned = vec!["--json"];
        pinned.extend_from_slice(args);
        pinned.extend(["--expected-revision", stale.as_str()]);
        let before = env.store_bytes();
        let refused = env.run(&pinned);
        assert_eq!(refused.code, 3, "`{}`:\n{refused}", pinned.join(" "));
        assert_eq!(refused.json()["error"]["kind"], "conflict", "{refused}");
        let message = format!("expected {stale}, found {revision}");
        assert!(refused.stdout.contains(&message), "{refused}");
        assert_eq!(env.store_bytes(), before, "`{}` wrote", pinned.join(" "));
        let current = revision.to_string();
        *pinned.last_mut().expect("value") = current.as_str();
        let accepted = env.run(&pinned);
        assert_eq!(accepted.code, 0, "`{}`:\n{accepted}", pinned.join(" "));
    }
}
