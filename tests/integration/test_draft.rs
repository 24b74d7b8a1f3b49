//! `distill`, `propose`, `promote`: drafting writes nothing, promotion gates the one write
//! path, and the three compose in shell pipelines.

use serde_json::json;

use crate::common::Output;
use crate::common::PASSING_VERIFIER;
use crate::common::TestEnv;
use crate::common::distill_args;
use crate::common::unfingerprinted;

const PROMPT_REF: &str = "epiphany-state-model/src/prompt.rs:10-20#demo";
const PROMPT_NODE: &str = "arch-path-5b3f3c8187a8";

const CARGO_TEST_OUTPUT: &str = "   Compiling epiphany v0.1.0\n\
    running 36 tests\n\
    lots of harmless output\n\
    test result: ok. 36 passed; 0 failed; 0 ignored\n\
    \x20   Finished `test` profile\n";

/// Writes the file [`PROMPT_REF`] cites, with `demo` inside lines 10-20.
fn write_prompt_source(env: &TestEnv) {
    let mut source: String = (1..=11).map(|i| format!("// line {i}\n")).collect();
    source.push_str("pub fn demo() {}\n");
    source.push_str(
        &(13..=30)
            .map(|i| format!("// line {i}\n"))
            .collect::<String>(),
    );
    env.write("epiphany-state-model/src/prompt.rs", source);
}

/// `epiphany --json distill ARGS` with a verified smoke observation on the prompt code ref.
fn distill_verified(env: &TestEnv, text: &str) -> Output {
    write_prompt_source(env);
    env.ok(&distill_args(
        "smoke",
        &[
            "--json",
            "--subject",
            "thread/epiphany/update",
            "--code-ref",
            PROMPT_REF,
            "--text",
            text,
        ],
    ))
}

/// Records one verified observation on the prompt code ref; returns its id.
fn record_verified(env: &TestEnv) -> String {
    let draft = distill_verified(env, "live smoke returned revision 1");
    let applied = env.run_json_with_stdin(&["update"], draft.stdout.as_str());
    assert_eq!(applied.code, 0, "{applied}");
    draft.json()["patch"]["observations"][0]["id"]
        .as_str()
        .expect("id")
        .to_owned()
}

const STRONG_VERIFIER: [&str; 7] = [
    "promote",
    "--verifier-kind",
    "smoke-test",
    "--verifier-status",
    "pass",
    "--verifier-summary",
    "prompt smoke is green",
];

fn assert_unchanged(env: &TestEnv, before: &[(String, Vec<u8>)], output: &Output) {
    assert!(env.store_bytes() == before, "the store changed:\n{output}");
}

#[test]
fn distill_drafts_the_specified_ids_and_writes_nothing() {
    let env = TestEnv::new();
    let before = env.store_bytes();
    let draft = env.json(&distill_args(
        "smoke",
        &[
            "--subject",
            "thread/epiphany/update",
            "--text",
            "  live smoke returned revision 1  ",
        ],
    ));
    let summary = "thread/epiphany/update: live smoke returned revision 1";
    assert_eq!(
        draft,
        json!({
            "expected_revision": 0,
            "patch": {
                "observations": [{
                    "id": "obs-443e1ad007f7",
                    "summary": summary,
                    "source_kind": "smoke",
                    "status": "ok",
                    "evidence_ids": ["ev-443e1ad007f7"],
                }],
                "evidence": [{
                    "id": "ev-443e1ad007f7",
                    "kind": "verification",
                    "status": "ok",
                    "summary": summary,
                }],
            },
        })
    );
    assert!(env.store_bytes() == before);
    let tool = env.json(&distill_args("tool", &["--text", "hello world"]));
    assert_eq!(tool["patch"]["observations"][0]["id"], "obs-1562498e2366");
    assert_eq!(tool["patch"]["evidence"][0]["kind"], "tool-output");
    assert_eq!(tool["patch"]["evidence"][0]["summary"], "hello world");
}

#[test]
fn distill_reads_tool_output_on_stdin() {
    let env = TestEnv::new();
    let store_rs: String = (1..=50)
        .map(|i| match i {
            20 => "    pub fn commit(&self) {}\n".to_owned(),
            _ => format!("// line {i}\n"),
        })
        .collect();
    env.write("src/state/store.rs", store_rs);
    // stdout is a pipe here, so the envelope is JSON even without `--json`.
    let output = env.run_with_stdin(
        &distill_args(
            "shell-tool",
            &[
                "--subject",
                "cargo test",
                "--code-ref",
                "src/state/store.rs:10-42#Store::commit",
            ],
        ),
        CARGO_TEST_OUTPUT,
    );
    assert_eq!(output.code, 0, "{output}");
    assert_eq!(
        output.json()["patch"]["observations"][0]["summary"],
        "cargo test: test result: ok. 36 passed; 0 failed; 0 ignored | Finished `test` profile"
    );
    assert!(!output.stderr.contains("hint:"), "{output}");
    assert!(
        output
            .stderr
            .contains("note: the summary (85 characters) leaves out part of the text's"),
        "{output}"
    );
    let draft = output.json();
    assert_eq!(
        unfingerprinted(&draft["patch"]["observations"][0]["code_refs"]),
        json!([{"path": "src/state/store.rs", "start_line": 10, "end_line": 42, "symbol": "Store::commit"}])
    );
    assert_eq!(
        draft["patch"]["evidence"][0]["code_refs"],
        draft["patch"]["observations"][0]["code_refs"]
    );
}

/// A one-line message with one byte that is not UTF-8 (a Latin-1 letter) is text: it used to
/// be taken for a binary blob and drafted as a size and checksum, its words lost.
#[test]
fn distill_keeps_a_short_line_with_a_stray_byte() {
    let env = TestEnv::new();
    let output = env.run_with_stdin(&distill_args("tool", &[]), b"caf\xe9 build failed".to_vec());
    assert_eq!(output.code, 0, "{output}");
    assert_eq!(
        output.json()["patch"]["observations"][0]["summary"],
        "caf\u{fffd} build failed"
    );
    assert!(!output.stderr.contains("binary"), "{output}");
}

#[test]
fn distill_works_without_a_store() {
    let env = TestEnv::plain();
    let draft = env.json(&distill_args("note", &["--text", "no store here"]));
    assert_eq!(draft["expected_revision"], 0);
    assert!(!env.root().join(".epiphany").exists());
}

#[test]
fn distill_pipes_into_update_once() {
    let env = TestEnv::new();
    env.update(&json!({"objective": "map the prompt renderer"}));
    let draft = distill_verified(&env, "live smoke returned revision 1");
    assert_eq!(draft.json()["expected_revision"], 1);
    let applied = env.run_json_with_stdin(&["update"], draft.stdout.as_str());
    let mut report = applied.json();
    let id = report["id"].take();
    assert!(id.as_str().is_some_and(|id| id.len() == 64), "{report}");
    assert_eq!(
        report,
        json!({"revision": 2, "changed_fields": ["observations", "evidence"], "id": null, "source": "update"})
    );
    // The same input drafts the same ids, so recording it twice is refused.
    let before = env.store_bytes();
    let again = distill_verified(&env, "live smoke returned revision 1");
    assert_eq!(again.json()["expected_revision"], 2);
    let refused = env.run_with_stdin(&["update"], again.stdout.clone());
    assert_eq!(refused.code, 2, "{refused}");
    let id = again.json()["patch"]["evidence"][0]["id"].clone();
    assert!(
        refused.stderr.contains(&format!(
            "evidence id {id} already exists in Epiphany state"
        )),
        "{refused}"
    );
    assert_unchanged(&env, &before, &refused);
}

#[test]
fn distill_pipes_into_promote() {
    let env = TestEnv::new();
    // Spelled as typed: `cargo test 2>&1 | epiphany distill --json ... | epiphany promote`.
    let draft = env.run_with_stdin(
        &[
            "distill",
            "--json",
            "--source-kind",
            "test",
            "--status",
            "ok",
            "--subject",
            "cargo test",
        ],
        CARGO_TEST_OUTPUT,
    );
    let promoted = env.run_json_with_stdin(&PASSING_VERIFIER, draft.stdout.as_str());
    assert_eq!(
        promoted.json(),
        json!({"accepted": true, "reasons": [], "revision": 1, "changed_fields": ["observations", "evidence"]})
    );
    let state = env.json(&["show"]);
    let evidence: Vec<&str> = state["recent_evidence"]
        .as_array()
        .expect("evidence")
        .iter()
        .map(|e| e["id"].as_str().expect("id"))
        .collect();
    let drafted = draft.json()["patch"]["evidence"][0]["id"].clone();
    assert_eq!(evidence.len(), 2);
    assert_eq!(evidence[0], drafted);
    assert!(evidence[1].starts_with("ev-verifier-"), "{evidence:?}");
    let log = env.json(&["log"]);
    assert_eq!(log["entries"][0]["source"], "promote");
}

#[test]
fn propose_pipes_into_promote() {
    let env = TestEnv::new();
    let observation = record_verified(&env);
    let before = env.store_bytes();
    let proposal = env.ok(&["--json", "propose"]);
    assert_unchanged(&env, &before, &proposal);
    let draft = proposal.json();
    assert_eq!(draft["expected_revision"], 1);
    let patch = &draft["patch"];
    // Record by record: the node it creates, not a replacement of the whole map.
    assert_eq!(patch.get("graphs"), None, "{patch}");
    let upserted = &patch["upsert"]["architecture_nodes"];
    assert_eq!(upserted.as_array().map(Vec::len), Some(1), "{patch}");
    assert_eq!(upserted[0]["id"], PROMPT_NODE);
    // Titled after the definition it cites.
    assert_eq!(upserted[0]["title"], "demo");
    assert_eq!(
        patch["graph_frontier"],
        json!({"active_node_ids": [PROMPT_NODE], "dirty_paths": ["epiphany-state-model/src/prompt.rs"]})
    );
    assert_eq!(
        patch["churn"]["understanding_status"],
        "proposal_expands_map"
    );
    assert_eq!(patch["churn"]["diff_pressure"], "medium");
    assert_eq!(patch["churn"]["graph_freshness"], "proposal-expanded");
    // Naming the observation drafts the same patch.
    let named = env.json(&["propose", "--observation", &observation]);
    assert_eq!(named, draft);

    let promoted = env.run_json_with_stdin(&STRONG_VERIFIER, proposal.stdout.as_str());
    assert_eq!(
        promoted.json(),
        json!({
            "accepted": true,
            "reasons": [],
            "revision": 2,
            "changed_fields": ["graphs", "graph_frontier", "observations", "evidence", "churn"],
            "settled_dirty_paths": ["epiphany-state-model/src/prompt.rs"],
        })
    );
    let state = env.json(&["show"]);
    assert_eq!(
        state["graphs"]["architecture"]["nodes"][0]["id"],
        PROMPT_NODE
    );
    assert_eq!(state["churn"]["diff_pressure"], "medium");
    assert_eq!(
        state["observations"][0]["id"],
        patch["observations"][0]["id"]
    );
    assert_eq!(state["observations"][1]["id"], observation.as_str());
    let verify = env.run(&["verify"]);
    assert_eq!(verify.code, 0, "{verify}");
}

#[test]
fn a_rejected_promotion_exits_1_and_writes_nothing() {
    let env = TestEnv::new();
    record_verified(&env);
    let proposal = env.ok(&["--json", "propose"]);
    let before = env.store_bytes();
    let rejected = env.run_json_with_stdin(
        &[
            "promote",
            "--verifier-kind",
            "contest",
            "--verifier-status",
            "pass",
            "--verifier-summary",
            "looked fine",
        ],
        proposal.stdout.as_str(),
    );
    assert_eq!(rejected.code, 1, "{rejected}");
    assert_eq!(
        rejected.json(),
        json!({
            "accepted": false,
            "reasons": [
                "verifierEvidence.kind: medium/high churn promotions require a verification/test/smoke/review verifier, got \"contest\""
            ],
            "revision": null,
            "changed_fields": [],
        })
    );
    assert_unchanged(&env, &before, &rejected);
    let human = env.run_with_stdin(
        &[
            "promote",
            "--verifier-kind",
            " ",
            "--verifier-status",
            "failed",
            "--verifier-summary",
            "",
        ],
        proposal.stdout.clone(),
    );
    insta::assert_snapshot!(human, @r#"
    rejected:
      - verifierEvidence.kind: must not be empty
      - verifierEvidence.summary: must not be empty
      - verifierEvidence.status: must be accepting, got "failed"
      - verifierEvidence.kind: medium/high churn promotions require a verification/test/smoke/review verifier, got " "
    ------- stderr -------
    hint: nothing was written; address every reason and promote again
    [exit status: 1]
    "#);
    assert_unchanged(&env, &before, &human);
}

#[test]
fn promote_refuses_a_draft_the_store_moved_past() {
    let env = TestEnv::new();
    record_verified(&env);
    let proposal = env.ok(&["--json", "propose"]);
    env.update(&json!({"objective": "moved on"}));
    let before = env.store_bytes();
    let stale = env.run_with_stdin(&STRONG_VERIFIER, proposal.stdout.clone());
    assert_eq!(stale.code, 3, "{stale}");
    assert!(
        stale
            .stderr
            .contains("epiphany state revision mismatch: expected 1, found 2"),
        "{stale}"
    );
    assert_unchanged(&env, &before, &stale);
    // An explicit expected revision wins over the envelope's.
    let mut forced = STRONG_VERIFIER.to_vec();
    forced.extend(["--expected-revision", "2"]);
    let applied = env.run_with_stdin(&forced, proposal.stdout.clone());
    assert_eq!(applied.code, 0, "{applied}");
}

#[test]
fn promote_reads_a_verifier_file() {
    let env = TestEnv::new();
    let draft = distill_verified(&env, "live smoke returned revision 1");
    env.write("draft.json", &draft.stdout);
    env.write(
        "verifier.json",
        r#"{"id": "ev-ci-run-7", "kind": "ci smoke", "status": "passed", "summary": "ci run 7 green"}"#,
    );
    let promoted = env.json(&["promote", "draft.json", "--verifier-file", "verifier.json"]);
    assert_eq!(promoted["accepted"], true);
    let state = env.json(&["show"]);
    assert_eq!(state["recent_evidence"][1]["id"], "ev-ci-run-7");

    env.write("broken.json", r#"{"id": "ev-x", "kind": "test"}"#);
    let before = env.store_bytes();
    let broken = env.run(&["promote", "draft.json", "--verifier-file", "broken.json"]);
    assert_eq!(broken.code, 2, "{broken}");
    assert!(
        broken
            .stderr
            .contains("`broken.json` is not a valid evidence record: missing field `status`"),
        "{broken}"
    );
    let both_stdin = env.run_with_stdin(&["promote", "--verifier-file", "-"], "{}");
    assert_eq!(both_stdin.code, 2, "{both_stdin}");
    assert!(
        both_stdin.stderr.contains("cannot both come from stdin"),
        "{both_stdin}"
    );
    assert_unchanged(&env, &before, &both_stdin);
}

#[test]
fn distill_refuses_blank_input() {
    let env = TestEnv::new();
    let before = env.store_bytes();
    let cases: [(&[&str], &str, &str); 5] = [
        (
            &distill_args(" ", &["--text", "x"]),
            "",
            "error: failed to distill Epiphany observation: source_kind must not be empty\nhint: pass a non-blank `--source-kind`, e.g. `shell-tool`\n",
        ),
        (
            &[
                "distill",
                "--source-kind",
                "tool",
                "--status",
                "",
                "--text",
                "x",
            ],
            "",
            "error: failed to distill Epiphany observation: status must not be empty\nhint: pass a non-blank `--status`, e.g. `ok` or `failed`\n",
        ),
        (
            &distill_args("tool", &["--text", " \n "]),
            "",
            "error: failed to distill Epiphany observation: text must not be empty\nhint: pass a non-blank `--text`, or pipe non-blank text on stdin\n",
        ),
        (
            &distill_args("tool", &[]),
            "\n\r\n  \n",
            "error: failed to distill Epiphany observation: text must not be empty\nhint: pass a non-blank `--text`, or pipe non-blank text on stdin\n",
        ),
        (
            &distill_args("tool", &["--code-ref", "../outside.rs", "--text", "x"]),
            "",
            "error: invalid `--code-ref`; nothing was drafted\n  - --code-ref: `../outside.rs`: the path leaves the repository (`..` is not allowed)\nhint: a code ref is PATH[:START[-END]][#SYMBOL], e.g. `src/state/store.rs:10-42#Store::commit`, relative to the current directory; pass `--allow-missing-paths` for files still to be written\n",
        ),
    ];
    for (args, stdin, stderr) in cases {
        let output = env.run_with_stdin(args, stdin);
        assert_eq!(output.code, 2, "{output}");
        assert_eq!(output.stderr, stderr, "{output}");
        assert_eq!(output.stdout, "");
    }
    let json = env.run_json_with_stdin(&distill_args("tool", &[]), "");
    assert_eq!(json.code, 2);
    assert_eq!(json.json()["error"]["kind"], "usage");
    assert_unchanged(&env, &before, &json);
}

#[test]
fn propose_refuses_what_it_cannot_build_on() {
    let env = TestEnv::new();
    let empty = env.run(&["propose"]);
    assert_eq!(empty.code, 2, "{empty}");
    assert!(
        empty.stderr.contains("the store has no Epiphany state yet"),
        "{empty}"
    );

    let verified = record_verified(&env);
    env.write("src/a.rs", "// a\n");
    env.update(&json!({
        "observations": [
            {"id": "obs-failing", "summary": "s", "source_kind": "test", "status": "failed",
             "code_refs": [{"path": "src/a.rs"}], "evidence_ids": ["ev-failing"]},
            {"id": "obs-unbacked", "summary": "s", "source_kind": "test", "status": "ok",
             "code_refs": [{"path": "src/a.rs"}], "evidence_ids": ["ev-failing"]},
            {"id": "obs-no-refs", "summary": "s", "source_kind": "test", "status": "ok",
             "evidence_ids": ["ev-passing"]},
        ],
        "evidence": [
            {"id": "ev-failing", "kind": "test", "status": "failed", "summary": "red"},
            {"id": "ev-passing", "kind": "test", "status": "pass", "summary": "green"},
        ],
    }));
    let before = env.store_bytes();
    let cases: [(&[&str], &str); 4] = [
        (
            &[&verified, "obs-ghost"],
            "observation id \"obs-ghost\" not found in state",
        ),
        (
            &[&verified, "obs-failing"],
            "observation id \"obs-failing\" must have verified/accepted status, got \"failed\"",
        ),
        (
            &[&verified, "obs-unbacked"],
            "observation id \"obs-unbacked\" cites non-accepting evidence id \"ev-failing\" with \
             status \"failed\"",
        ),
        (
            &["obs-no-refs"],
            "map proposals require at least one code ref on the selected observations",
        ),
    ];
    for (ids, message) in cases {
        let mut args = vec!["propose"];
        for id in ids {
            args.extend(["--observation", id]);
        }
        let output = env.run(&args);
        assert_eq!(output.code, 2, "{output}");
        let expected = format!("error: failed to propose Epiphany map update: {message}\nhint: ");
        assert!(output.stderr.starts_with(&expected), "{output}");
        assert_unchanged(&env, &before, &output);
    }
}

#[test]
fn promote_refuses_malformed_and_empty_input() {
    let env = TestEnv::new();
    let before = env.store_bytes();
    let cases = [
        ("", "error: stdin is empty; expected a patch or an envelope"),
        (
            "{\"expected_revision\": 0, \"patch\": ",
            "error: stdin is not a valid patch",
        ),
        (
            "{\"expected_revision\": -1, \"patch\": {}, \"extra\": 1}",
            "extra: unknown field `extra` (known fields: patch, expected_revision)",
        ),
        (
            "{\"patch\": {\"observation\": []}}",
            "patch.observation: unknown field `observation`; did you mean `observations`?",
        ),
    ];
    for (stdin, message) in cases {
        let output = env.run_with_stdin(&STRONG_VERIFIER, stdin);
        assert_eq!(output.code, 2, "{output}");
        assert!(output.stderr.contains(message), "{output}");
        assert_unchanged(&env, &before, &output);
    }
    // A failed `--json` draft upstream is named as such.
    let failed = env.run_json_with_stdin(&distill_args("tool", &[]), "");
    assert_eq!(failed.code, 2);
    let piped = env.run_with_stdin(&STRONG_VERIFIER, failed.stdout.clone());
    assert_eq!(piped.code, 2, "{piped}");
    assert!(
        piped.stderr.starts_with(
            "error: stdin holds an error from the command before it, not a patch: failed to \
             distill Epiphany observation: text must not be empty\n"
        ),
        "{piped}"
    );
    assert_unchanged(&env, &before, &piped);
    let empty_patch = env.run_json_with_stdin(&STRONG_VERIFIER, "{\"patch\": {}}");
    assert_eq!(empty_patch.code, 1, "{empty_patch}");
    assert_eq!(
        empty_patch.json()["reasons"],
        json!(["promotion patch must contain at least one mutation"])
    );
    let no_store = TestEnv::plain().run_with_stdin(&STRONG_VERIFIER, "{\"patch\": {}}");
    assert_eq!(no_store.code, 2, "{no_store}");
    assert!(
        no_store.stderr.contains("no `.epiphany/` store"),
        "{no_store}"
    );
}

/// 200 MB of tool output streamed into `distill`: the last line is still found, the ids match
/// those of the text's first 4096 characters, and (on Linux) the process never holds more
/// than a small, fixed amount of memory.
#[test]
fn distill_streams_200_megabytes_in_bounded_memory() {
    use std::io::Write;
    use std::process::Stdio;

    const TOTAL: usize = 200 * 1024 * 1024;
    let env = TestEnv::new();
    let line = "building module with a fairly long line of harmless output text\n";
    let args = [
        "--json",
        "distill",
        "--source-kind",
        "shell-tool",
        "--status",
        "ok",
    ];
    let mut child = env
        .std_command(&args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let pid = child.id();
    let mut stdin = child.stdin.take().expect("stdin");
    let writer = std::thread::spawn(move || {
        let block = line.repeat(16 * 1024);
        let mut written = 0;
        while written < TOTAL {
            stdin.write_all(block.as_bytes()).expect("write");
            written += block.len();
        }
        stdin
            .write_all(b"test result: ok. 1 passed; 0 failed\n")
            .expect("write");
    });
    let mut peak_kib = 0;
    while !writer.is_finished() {
        peak_kib = peak_kib.max(resident_kib(pid).unwrap_or(0));
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    writer.join().expect("writer");
    let output = child.wait_with_output().expect("wait");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    if cfg!(target_os = "linux") {
        assert!(peak_kib > 0, "the resident size was never sampled");
        assert!(
            peak_kib < 64 * 1024,
            "distill held {peak_kib} KiB for a 200 MB input"
        );
    }
    let big: serde_json::Value = serde_json::from_slice(&output.stdout).expect("json");
    // The last line was seen: it is the only high-signal line.
    assert_eq!(
        big["patch"]["observations"][0]["summary"],
        "test result: ok. 1 passed; 0 failed"
    );
    // The ids hash only the first 4096 scalars of the collapsed text.
    let head = line.repeat(100);
    let small = env.json(&[&args[1..], &["--text", &head]].concat());
    assert_eq!(
        big["patch"]["observations"][0]["id"],
        small["patch"]["observations"][0]["id"]
    );
}

/// The resident set size of a running process, from `/proc` (Linux only).
fn resident_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|line| line.starts_with("VmRSS:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

#[test]
fn drafts_on_a_pipe_are_envelopes_as_written() {
    // See: issue 10. `epiphany propose | epiphany promote ...` and `epiphany distill ... |
    // epiphany update`, without `--json`: stdout is not a terminal, so the envelope is JSON.
    let env = TestEnv::new();
    record_verified(&env);
    let plain = env.run(&["propose"]);
    assert_eq!(plain.code, 0, "{plain}");
    assert_eq!(plain.json(), env.json(&["propose"]));
    assert!(!plain.stderr.contains("hint:"), "{plain}");
    let promoted = env.run_with_stdin(&STRONG_VERIFIER, plain.stdout.clone());
    assert_eq!(promoted.code, 0, "{promoted}");
    assert!(
        promoted.stdout.starts_with("accepted: revision 2"),
        "{promoted}"
    );

    let distilled = env.run(&distill_args("note", &["--text", "a plain pipeline"]));
    assert_eq!(distilled.code, 0, "{distilled}");
    let updated = env.run_with_stdin(&["update"], distilled.stdout.clone());
    assert_eq!(updated.code, 0, "{updated}");
    assert!(
        updated
            .stdout
            .starts_with("revision 3: observations, evidence (record "),
        "{updated}"
    );
}

#[test]
fn an_accepted_promotion_can_still_be_refused_by_the_write_path() {
    let env = TestEnv::new();
    record_verified(&env);
    let stored = env.json(&["show"])["recent_evidence"][0]["id"]
        .as_str()
        .expect("id")
        .to_owned();
    let draft = env.ok(&distill_args(
        "note",
        &["--json", "--text", "another finding"],
    ));
    let before = env.store_bytes();
    let mut args = STRONG_VERIFIER.to_vec();
    args.extend(["--verifier-id", &stored]);
    let refused = env.run_with_stdin(&args, draft.stdout.clone());
    assert_eq!(refused.code, 2, "{refused}");
    assert!(
        refused.stderr.contains(&format!(
            "evidence id \"{stored}\" already exists in Epiphany state"
        )),
        "{refused}"
    );
    assert_unchanged(&env, &before, &refused);
}

/// Records a verified observation `obs-<name>` citing `src/<name>.rs`, proposes from it and
/// promotes the proposal; returns the node the proposal created.
fn propose_and_promote(env: &TestEnv, name: &str) -> String {
    env.update(&json!({
        "observations": [{"id": format!("obs-{name}"), "summary": format!("{name} parses input"),
                          "source_kind": "test", "status": "verified",
                          "code_refs": [{"path": format!("src/{name}.rs")}],
                          "evidence_ids": [format!("ev-{name}")]}],
        "evidence": [{"id": format!("ev-{name}"), "kind": "test", "status": "ok",
                      "summary": format!("{name} tests pass")}]
    }));
    let proposal = env.ok(&["--json", "propose", "--observation", &format!("obs-{name}")]);
    let upserted = proposal.json()["patch"]["upsert"]["architecture_nodes"].clone();
    assert_eq!(upserted.as_array().map(Vec::len), Some(1), "{proposal}");
    let promoted = env.run_json_with_stdin(&STRONG_VERIFIER, proposal.stdout.as_str());
    assert_eq!(promoted.code, 0, "{promoted}");
    upserted[0]["id"].as_str().expect("id").to_owned()
}

#[test]
fn proposals_on_two_branches_merge_their_nodes_without_a_conflict() {
    let env = TestEnv::new();
    env.write("src/lexer.rs", "pub fn lex() {}\n");
    env.write("src/parser.rs", "pub fn parse() {}\n");
    env.update(&json!({"objective": "map the front end"}));
    env.commit_all("base");
    env.git(&["checkout", "-q", "-b", "feature"]);
    let lexer = propose_and_promote(&env, "lexer");
    env.commit_all("propose the lexer");
    env.git(&["checkout", "-q", "main"]);
    let parser = propose_and_promote(&env, "parser");
    env.commit_all("propose the parser");
    env.git(&["merge", "-q", "--no-edit", "feature"]);
    assert_eq!(env.json(&["verify"])["ok"], true);
    let state = env.json(&["show"]);
    let nodes: Vec<&str> = state["graphs"]["architecture"]["nodes"]
        .as_array()
        .expect("nodes")
        .iter()
        .map(|node| node["id"].as_str().expect("id"))
        .collect();
    assert!(
        nodes.contains(&lexer.as_str()) && nodes.contains(&parser.as_str()),
        "{nodes:?}"
    );
    let conflicts: Vec<&str> = state["conflicts"]
        .as_array()
        .map(|list| {
            list.iter()
                .map(|c| c["key"].as_str().expect("key"))
                .collect()
        })
        .unwrap_or_default();
    // The map's nodes merge record by record. The frontier and the churn judgment are whole
    // fields that both proposals replaced, so the merge keeps one of each and says so; the
    // next write that sets them settles both.
    assert_eq!(
        conflicts,
        ["churn", "graph_frontier"],
        "{}",
        state["conflicts"]
    );
    env.update(&json!({
        "graph_frontier": {"active_node_ids": [lexer, parser]},
        "churn": {"understanding_status": "merged", "diff_pressure": "low", "graph_freshness": "fresh"}
    }));
    let settled = env.json(&["show"]);
    assert!(
        settled["conflicts"].as_array().is_none_or(Vec::is_empty),
        "{}",
        settled["conflicts"]
    );
}
